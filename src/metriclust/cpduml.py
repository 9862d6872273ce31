"""CPD-UML: unsupervised nonlinear metric learning by Coherent Point Drift.

Public class:

.. autosummary::

   CPDUML  -- unsupervised metric learning by Coherent Point Drift

The estimator is the paper's Algorithm 1; the linear algebra of the Psi-step
(dense and low-rank) lives in :mod:`metriclust._core.cpd`.
"""

import numbers

import numpy as np

from ._core.base import (BaseEstimator, ClusterMixin, Interval, Options, TransformerMixin,
                         check_is_fitted)
from ._core.cpd import DensePsiSolver, KernelPCA, LowRankPsiSolver, cross_gram_matmat, objective
from ._core.kmeans import assign_labels, kmeans
from ._core.partition import cluster_means, lloyd_from_partition, same_partition
from ._core.threads import single_blas_thread
from ._core.validation import (check_array, check_fit_input, check_n_features,
                               is_dask_array)
from ._core.gram import (Nystrom, drop_null_eigenpairs, gaussian_gram, median_pairwise_distance,
                         orthonormalize_factor, top_eigenpairs)

__all__ = ["CPDUML"]

#: ``approximation="auto"`` solves exactly (dense Gram) up to this many points.
DENSE_MAX_SAMPLES = 4000

#: ``sigma="auto"`` / ``lam="auto"``: the candidates (relative units, see CPDUML).
SIGMA_GRID = (0.4, 0.8, 1.6)
LAM_GRID = (0.0025, 0.01, 0.1, 1.0)
#: the selection runs on at most this many points (a random subset; dense solver),
#: with a kNN graph of this many neighbours.
SELECT_MAX_SAMPLES = 1000
SELECT_NEIGHBORS = 10
#: a deforming candidate must cut at least this fraction fewer edges than k-means, in
#: both graphs (on Breast the best one cut 1.8% fewer edges and was no better; on the
#: moons 69%)
SELECT_MARGIN = 0.1


class CPDUML(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""Unsupervised metric learning by Coherent Point Drift (CPD-UML).

    Points move by a smooth Gaussian displacement field,
    :math:`x \mapsto x^1 = x + \sum_j \psi_j g(x, x_j)` with
    :math:`g(x, y) = \exp(-\|x - y\|^2 / 2\sigma^2)` (paper eq. 1, 3), and the
    field and a K-means partition are learned together by minimizing (eq. 11)

    .. math::

        J(Y, \Psi) = \operatorname{tr}(X_1^T X_1) - \operatorname{tr}(Y^T X_1 X_1^T Y)
                     + \lambda \operatorname{tr}(\Psi^T \Psi), \qquad X_1 = X + G \Psi,

    with :math:`Y` the normalized cluster indicator (eq. 9). The first two terms
    are the within-cluster sum of squares of the moved points. Algorithm 1
    alternates

    * Y-step (eq. 12): the partition. The first one is the spectral relaxation
      (top-K left singular vectors of the centered data from its thin SVD, then
      k-means there); later ones run Lloyd on :math:`X_1` warm-started from the
      current partition, which never increases :math:`J`.
    * Psi-step (eq. 19, 20): the closed form
      :math:`(G (I - YY^T) G + \lambda I) \Psi = G (YY^T - I) X` for the
      *discrete* indicator of the current labels.

    until the partition stops changing or :math:`J` changes by less than ``tol``
    (relative); the iterate with the lowest :math:`J` is kept.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters K.
    sigma : float or "auto", default="auto"
        Width of the CPD Gaussian, **relative to the median pairwise distance**
        of the data (of its kernel-PCA coordinates when ``kernel="rbf"``). The
        raw width is ``sigma_``. Results depend on the data only through
        ``sigma_ / scale(X)``. ``"auto"``: chosen without labels, see Notes.
    lam : float or "auto", default="auto"
        Smoothness regularization, **relative to N^2** (N = number of training
        points): the data terms of ``J`` grow like ``N^2`` relative to
        ``tr(Psi^T Psi)``, so one relative value transfers across sample sizes.
        The raw value used in eq. 11 is ``lam_ = lam * N**2``. The paper gives no
        value (it searched lambda over 10^0-10^10 and sigma over 2^0-2^10 per data
        set, Sec. 3.2). ``"auto"``: chosen without labels, see Notes.
    kernel : {None, "rbf"}, default=None
        ``"rbf"``: the kernel version (paper section 2.4) -- project onto an RBF
        kernel-PCA space first, then run the same algorithm there.
    kernel_sigma : float, default=4.0
        Width of the kernel-PCA RBF kernel, relative to the median pairwise
        distance of ``X`` (raw value ``kernel_sigma_``). Wide kernels are where
        the CPD step helps: on the two-moon data with widths 4 to 32 data units
        (the widths of the paper's Fig. 2, whose units the paper does not state;
        3.3 to 26 median distances here) kernel k-means gets 0.69 and kernel
        CPD-UML 0.995 with the default ``sigma`` and ``lam``.
    n_kernel_components : int, default=50
        Dimension of the kernel-PCA space (at most N).
    approximation : {"auto", "dense", "nystrom", "eig"}, default="auto"
        ``"dense"``: exact, ``O(N^3)`` once then ``O(N^2 (p + K))`` per iteration
        and two ``N x N`` arrays. ``"eig"``: top ``n_components`` eigenpairs of
        the Gram matrix. ``"nystrom"``: rank-``n_components`` Nystrom factor,
        ``O(N m (p + K) + m^3)`` per iteration, no ``N x N`` array; also used
        for the kernel PCA. ``"auto"``: dense up to 4000 points, else nystrom.
    n_components : int, default=100
        Rank m of the low-rank approximations.
    max_iter : int, default=50
        Maximum number of Psi-steps.
    tol : float, default=1e-6
        Stop when ``J`` decreases by less than ``tol * J``.
    n_init : int, default=10
        k-means++ restarts of the initial spectral partition (lowest inertia kept).
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the initial partition, the median-distance subsample (N > 2000)
        and Nystrom landmarks.
    verbose : int, default=0
        Print ``J`` per iteration when positive.

    Attributes
    ----------
    labels_ : ndarray of shape (N,)
        Cluster of each training point.
    weights_ : ndarray of shape (N, q)
        :math:`\Psi` (row form of the paper's :math:`d \times n` matrix), ``q``
        the dimension of the space the points move in (``p``, or the
        kernel-PCA dimension). With a low-rank approximation ``Psi`` lies in the
        span of the factor, ``Psi = Q C``.
    embedding_ : ndarray of shape (N, q)
        The moved training points :math:`X_1 = X + G\Psi` (eq. 3).
    cluster_centers_ : ndarray of shape (n_clusters, q)
        Cluster means of ``embedding_``.
    objective_ : float
        ``J`` (eq. 11) of the returned iterate.
    history_ : ndarray
        ``J`` after each Psi-step; non-increasing.
    n_iter_ : int
        Number of Psi-steps run.
    sigma_, lam_ : float
        Raw CPD width and regularization used.
    selection_ : list of tuple or None
        With ``sigma`` or ``lam`` ``"auto"``: one ``(sigma, lam, start, score)`` per
        candidate (relative units; ``start`` is ``"spectral"`` or ``"kmeans"``;
        ``score`` the worse of its two normalized kNN cuts relative to k-means',
        1 for k-means, lowest chosen). ``None`` otherwise.
    kernel_sigma_ : float or None
        Raw kernel-PCA width (``kernel="rbf"``).
    approximation_ : str
        The approximation used (``"auto"`` resolved).
    n_features_in_ : int

    See Also
    --------
    metriclust.CPCM : linear unsupervised metric learning by predictability.

    Notes
    -----
    Dense Psi-step: :math:`G(I - YY^T)G + \lambda I = (G^2 + \lambda I) - (GY)(GY)^T`.
    :math:`G^2 + \lambda I` does not depend on the partition: it is formed once
    (one SYRK) and Cholesky-factored in place; each iteration is a rank-K
    Woodbury correction. Low-rank: with :math:`G \approx Q S Q^T` the system
    reduces to :math:`m \times m`. Y is never formed: products with it
    are per-cluster sums.

    **Choosing sigma and lam without labels** (``"auto"``). ``J`` cannot choose
    them: it falls as ``lam`` falls, and a small ``lam`` lets the field pull any
    partition tight (on Breast, ``sigma=0.8, lam=0.0025`` -- right for the two
    moons -- gives 87% accuracy where k-means gets 96%). The default therefore fits
    every candidate of the grid ``sigma`` in {0.4, 0.8, 1.6} x ``lam`` in {0.0025,
    0.01, 0.1, 1}, plus k-means itself (the ``Psi -> 0`` limit), on at most 1000
    points, and keeps the one whose partition cuts the fewest edges of the
    10-nearest-neighbour graph of the *input* data (normalized cut, Shi & Malik
    2000), relative to k-means' cut, in two graphs: the input in its own units and
    with every feature standardized; a candidate's score is the worse of its two
    ratios, so that no single wide-range feature decides the cut. The score does
    not depend on where a candidate moved the points. A deforming candidate must
    score at most 0.9 (cut 10% fewer edges than k-means in both graphs), else
    k-means is kept. All candidates share the spectral start and, per width, the
    Gram matrix. This is our rule, not the paper's (the paper picked both per data
    set on the evaluation labels). Fitting costs about ten plain fits; give both
    ``sigma`` and ``lam`` to skip it. Measured against k-means
    (``benchmarks/RESULTS.md``), under the paper's 3-fold protocol: within one
    point of it on Breast, WDBC, iris, wine and glass, and 96.9 against 70.0 on
    the moons. With labels for part of the data, tune
    ``sigma`` and ``lam`` by scikit-learn's ``GridSearchCV`` instead (README).

    The paper's per-iteration Y-step (k-means on the top-K eigenvectors of
    :math:`X_1 X_1^T`) does not decrease :math:`J` monotonically; with the
    continuous eigenvectors in the Psi-step nothing is learned (for
    :math:`K \ge p`, :math:`I - YY^T` annihilates :math:`X_1`). Hence the
    discrete indicator and the warm-started Lloyd step.

    References
    ----------
    Unsupervised metric learning via nonlinear feature space transformations
    (CPD-UML), anonymous ICLR submission; Myronenko & Song, "Point set
    registration: Coherent Point Drift", IEEE TPAMI 32(12), 2010; Zha et al.,
    "Spectral relaxation for k-means clustering", NIPS 2001; Shi & Malik,
    "Normalized cuts and image segmentation", IEEE TPAMI 22(8), 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import CPDUML
    >>> t = np.linspace(0, np.pi, 100)
    >>> X = np.r_[np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)]]
    >>> model = CPDUML(n_clusters=2, random_state=0).fit(X)
    >>> model.labels_.shape, model.embedding_.shape
    ((200,), (200, 2))
    >>> bool(np.all(np.diff(model.history_) <= 1e-9 * model.history_[0]))
    True
    """

    def __init__(self, n_clusters=8, *, sigma="auto", lam="auto", kernel=None, kernel_sigma=4.0,
                 n_kernel_components=50, approximation="auto", n_components=100,
                 max_iter=50, tol=1e-6, n_init=10, random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.sigma = sigma
        self.lam = lam
        self.kernel = kernel
        self.kernel_sigma = kernel_sigma
        self.n_kernel_components = n_kernel_components
        self.approximation = approximation
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None):
        """Learn the displacement field and the partition of ``X``.

        Parameters
        ----------
        X : array-like of shape (N, p)
        y : ignored

        Returns
        -------
        self
        """
        # Serial BLAS except the dense path's SYRK (see metriclust._core.cpd._cholesky):
        # threaded OpenBLAS on tall-skinny products and potrf was measured 3-10^4
        # times slower on the shared 2-core machine; the C kernels use OpenMP.
        with single_blas_thread():
            return self._fit(X)

    def _fit(self, X):
        if is_dask_array(X):
            raise TypeError("CPDUML.fit does not take a dask array yet (transform and "
                            "predict do); fit on X.compute() or a sample of its rows.")
        X, K, rng = check_fit_input(X, self.n_clusters, self.random_state, dtype=np.float64)
        n = X.shape[0]
        # independent streams: the initial partition does not depend on the
        # approximation (which draws landmarks / starting blocks) or the kernel
        rng_init, rng_scale, rng_factor = rng.spawn(3)
        self.n_features_in_ = X.shape[1]
        self.approximation_ = self.approximation
        if self.approximation == "auto":
            self.approximation_ = "dense" if n <= DENSE_MAX_SAMPLES else "nystrom"

        # Section 2.4: the kernel version works in kernel-PCA coordinates.
        Z, self.kernel_sigma_, self._kpca = X, None, None
        if self.kernel == "rbf":
            self.kernel_sigma_ = self.kernel_sigma * _scale(X, rng_scale)
            self._kpca = KernelPCA(
                self.n_kernel_components, sigma=self.kernel_sigma_, random_state=rng_factor,
                landmarks=None if self.approximation_ == "dense" else self.n_components)
            Z = self._kpca.fit_transform(X)
            if Z.shape[1] == 0:     # else an error about an internal 0-column array
                raise ValueError("kernel='rbf' finds no kernel-PCA coordinate: the centered "
                                 "Gram matrix is zero, so the points of X are all identical "
                                 "and there is nothing to cluster.")
        scale = _scale(Z, rng_scale)
        # Algorithm 1 starts from the spectral relaxation (eq. 12 with Psi = 0); it
        # does not depend on sigma or lam, so every candidate below shares it.
        start = _spectral_partition(Z, K, self.n_init, rng_init)
        self.selection_ = None
        if self.sigma == "auto" or self.lam == "auto":
            sigma, lam, start = self._select(X, Z, K, scale, start, rng_init, rng_factor)
        else:
            sigma, lam = float(self.sigma), float(self.lam)
        self.sigma_ = sigma * scale
        self.lam_ = lam * float(n) ** 2
        solver = self._psi_solver(Z, rng_factor)
        best, history = _alternate(solver, start, K, self.lam_, self.max_iter, self.tol,
                                   self.verbose)
        self.objective_, self.labels_, step = best
        self.history_ = np.asarray(history)
        self.n_iter_ = len(history)
        self.embedding_ = step.X1
        self.cluster_centers_, _ = cluster_means(step.X1, self.labels_, K)
        self._set_weights(step.psi)
        return self

    @property
    def _n_features_out(self):
        # columns of ``transform`` (for ``get_feature_names_out``)
        return self.embedding_.shape[1]

    def transform(self, X):
        """Move new points by the learned field: ``x + sum_j psi_j g(x, x_j)``.

        With ``kernel="rbf"`` the points are first projected by the fitted
        kernel PCA; with ``approximation="nystrom"`` the field is evaluated
        through the same Nystrom factor as in training (``O(m)`` per point).

        Parameters
        ----------
        X : array-like of shape (n, p)

        Returns
        -------
        ndarray of shape (n, q)
        """
        check_is_fitted(self, "embedding_")
        if is_dask_array(X):    # lazy, row chunk by row chunk, with X's chunks
            from . import _dask
            X = _dask.check_dask_array(X)
            check_n_features(self, X)
            return _dask.rowwise(X, self, "transform", self.embedding_.shape[1])
        X = check_array(X, name="X", dtype=np.float64)
        check_n_features(self, X)
        Z = X if self._kpca is None else self._kpca.transform(X)
        # v(z) = sum_j a_j g(z, c_j): c = training points and a = Psi (exact
        # cross Gram), or c = Nystrom landmarks and a = their coefficients.
        return Z + cross_gram_matmat(Z, self._field_centers, self._field_coef, sigma=self.sigma_)

    def predict(self, X):
        """Nearest cluster mean in the transformed space.

        Parameters
        ----------
        X : array-like of shape (n, p)

        Returns
        -------
        ndarray of shape (n,), int64
        """
        if is_dask_array(X):
            from . import _dask
            check_is_fitted(self, "embedding_")
            X = _dask.check_dask_array(X)
            check_n_features(self, X)
            return _dask.rowwise(X, self, "predict", dtype=np.int64)
        return assign_labels(self.transform(X), self.cluster_centers_)[0]

    # -- label-free choice of sigma and lam -----------------------------------

    def _select(self, X, Z, K, scale, start, rng_init, rng_factor):
        """Pick (sigma, lam) by the normalized cut of the kNN graph of ``X``.

        Every candidate -- the grid ``SIGMA_GRID x LAM_GRID`` (or the given value
        where one is fixed), all from the shared spectral start, plus k-means
        itself (the ``Psi -> 0`` limit, from a k-means partition of ``Z``) -- is
        fitted on at most ``SELECT_MAX_SAMPLES`` points. Its partition is scored by
        how many edges of the 10-nearest-neighbour graph *of the input data* it
        cuts (Shi & Malik's normalized cut), relative to k-means' partition, in
        the input's units and standardized, the worse of the two: a criterion that
        does not depend on the space the candidate moved the points to (so small
        ``lam`` cannot win by collapsing its own clusters) nor on one feature's
        range. A deforming candidate must score at most ``1 - SELECT_MARGIN``. Returns
        ``(sigma, lam, start)`` for the full fit.
        """
        n = X.shape[0]
        sub = None
        if n > SELECT_MAX_SAMPLES:
            sub = np.sort(rng_init.choice(n, SELECT_MAX_SAMPLES, replace=False))
        Xs, Zs = (X, Z) if sub is None else (X[sub], Z[sub])
        # the input's kNN graph in its own units and with every feature standardized:
        # a partition must cut fewer edges in both, so that no single wide-range
        # feature decides (WDBC's features span five orders of magnitude)
        graphs = (_knn_graph(Xs, SELECT_NEIGHBORS),
                  _knn_graph(_standardized(Xs), SELECT_NEIGHBORS))
        sigmas = SIGMA_GRID if self.sigma == "auto" else (float(self.sigma),)
        lams = LAM_GRID if self.lam == "auto" else (float(self.lam),)
        km_labels = kmeans(Z, K, n_init=self.n_init, random_state=rng_init).labels
        spectral = start if sub is None else _spectral_partition(Zs, K, self.n_init, rng_init)
        km_start = km_labels if sub is None else km_labels[sub]
        # k-means first: the largest lam from the k-means partition (Psi ~ 0)
        candidates = [(sigmas[len(sigmas) // 2], max(lams), True)]
        candidates += [(sg, lm, False) for sg in sigmas for lm in lams]
        n_sel = float(Xs.shape[0]) ** 2
        records, best, grams = [], None, {}
        for sg, lm, from_kmeans in candidates:
            if sg not in grams:         # one Gram per width, shared by every lam
                grams[sg] = gaussian_gram(Zs, sigma=sg * scale)
            solver = DensePsiSolver(grams[sg], Zs, lm * n_sel)
            (_, labels, _), _ = _alternate(solver, km_start if from_kmeans else spectral, K,
                                           lm * n_sel, self.max_iter, self.tol, 0)
            cuts = [_normalized_cut(g, labels, K) for g in graphs]
            if from_kmeans:
                km_cuts = cuts
            # the worse of the two cuts relative to k-means' (k-means itself: 1)
            # (k-means cutting no edge: nothing can cut clearly fewer)
            score = max(c / k if k > 0 else (1.0 if c == 0 else np.inf)
                        for c, k in zip(cuts, km_cuts))
            records.append((sg, lm, "kmeans" if from_kmeans else "spectral", score))
            if best is None or score < best[0]:
                best = (score, sg, lm, from_kmeans)
        del grams
        self.selection_ = records
        _, sigma, lam, from_kmeans = best
        if not from_kmeans and best[0] > 1.0 - SELECT_MARGIN:
            # not clearly better than k-means: keep k-means (Psi ~ 0)
            sigma, lam, from_kmeans = records[0][0], records[0][1], True
        return sigma, lam, (km_labels if from_kmeans else start)

    # -- helpers -------------------------------------------------------------

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "sigma": [Options("auto"), Interval(numbers.Real, 0, None, closed="neither",
                                            finite=True)],
        "lam": [Options("auto"), Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "kernel": [None, Options("rbf")],
        "kernel_sigma": [Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "n_kernel_components": [Interval(numbers.Integral, 1, None)],
        "approximation": [Options("auto", "dense", "nystrom", "eig")],
        "n_components": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None)],
    }

    def _psi_solver(self, Z, rng):
        """The Psi-step solver for the chosen approximation of G (eq. 5)."""
        self._field_centers, self._factor, self._landmark_map = Z, None, None
        m = min(self.n_components, Z.shape[0])
        if self.approximation_ == "dense":
            G = gaussian_gram(Z, sigma=self.sigma_)
            return DensePsiSolver(G, Z, self.lam_)
        if self.approximation_ == "eig":
            s, Q = top_eigenpairs(Z, m, sigma=self.sigma_, random_state=rng)
            self._factor = Q = np.ascontiguousarray(Q, dtype=np.float64)
            return LowRankPsiSolver(Q, np.maximum(s, 0.0), Z, self.lam_)
        # Nystrom, G ~= U U^T with U = g(Z, L) N_L (L the landmarks), brought to
        # Q diag(s) Q^T in U's own memory. New points go through the same factor:
        # v(z) = g(z, X) Psi ~= u(z) U^T Psi = g(z, L) (N_L U^T Psi).
        nys = Nystrom(m, sigma=self.sigma_, random_state=rng).fit(Z)
        Q, s, T = orthonormalize_factor(nys.factor_)
        self._factor, self._field_centers = Q, nys.landmarks_
        self._landmark_map = nys.normalization_ @ (T * s)   # N_L U^T U T, U^T U T = T S
        return LowRankPsiSolver(Q, s, Z, self.lam_)

    def _set_weights(self, psi):
        """weights_ = Psi (N x q); the field's coefficients for transform."""
        if self._factor is None:
            self.weights_ = self._field_coef = psi
        else:                                   # low rank: Psi = Q C
            self.weights_ = self._field_coef = self._factor @ psi
        if self._landmark_map is not None:      # Nystrom: coefficients of the landmarks
            self._field_coef = self._landmark_map @ psi
        self._factor = self._landmark_map = None


def _scale(X, rng):
    """Median pairwise distance (the unit of the relative widths); 1 if it is 0."""
    if X.shape[0] < 2:
        return 1.0
    d = median_pairwise_distance(X, random_state=rng)
    return d if d > 0 else 1.0


def _standardized(X):
    """Columns centered and scaled to unit variance (constant columns left at 0)."""
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _spectral_partition(Z, n_clusters, n_init, rng):
    """Initial Y (eq. 12 with Psi = 0, Ky Fan): k-means on the top-K left singular
    vectors of the centered data, from the smaller of its two Gram matrices:
    ``Zc^T Zc`` (p x p; left vectors ``Zc v / sqrt(ev)``) when p <= N, else
    ``Zc Zc^T`` (N x N, whose eigenvectors are the left vectors): ``O(N p
    min(N, p))`` either way, never ``O(p^3)``. The eigenvalues are the same, so
    is the rank cut; the vectors agree up to sign, which k-means ignores."""
    Zc = Z - Z.mean(axis=0)
    n, p = Zc.shape
    wide = p > n
    ev, V = drop_null_eigenpairs(*np.linalg.eigh(Zc @ Zc.T if wide else Zc.T @ Zc))
    ev, V = ev[:n_clusters], V[:, :n_clusters]
    if not ev.size:                             # all points identical
        return np.arange(Z.shape[0], dtype=np.int64) % n_clusters
    E = V if wide else Zc @ (V / np.sqrt(ev))
    return kmeans(np.ascontiguousarray(E), n_clusters, n_init=n_init, random_state=rng).labels


def _alternate(solver, labels, n_clusters, lam, max_iter, tol, verbose):
    """Algorithm 1 from the partition ``labels``: Psi-step (eq. 20), J (eq. 11),
    warm Lloyd Y-step (eq. 12), until the partition or J stops changing.

    Returns ``(best, history)`` with ``best = (J, labels, PsiStep)`` the iterate of
    lowest J."""
    history, best = [], None
    for it in range(max_iter):
        step = solver.solve(labels, n_clusters)                              # eq. 20
        J = objective(step.X1, labels, n_clusters, step.psi_sq_norm, lam)    # eq. 11
        history.append(J)
        if verbose:
            print(f"CPDUML iteration {it}: J = {J:.10g}")
        if best is None or J <= best[0]:
            best = (J, labels, step)
        if it > 0 and history[-2] - J <= tol * abs(history[-2]):
            break
        new_labels = lloyd_from_partition(step.X1, labels, n_clusters)       # eq. 12
        if same_partition(new_labels, labels, n_clusters):
            break
        labels = new_labels
    return best, history


def _knn_graph(X, n_neighbors):
    """Symmetrized k-nearest-neighbour graph of ``X``: the edges ``(rows, cols)`` of
    ``A + A^T`` (``A`` the directed kNN graph), a mutual pair counted twice."""
    from scipy.spatial import cKDTree

    n = X.shape[0]
    k = min(n_neighbors, n - 1)
    _, idx = cKDTree(X).query(X, k + 1)
    idx = np.asarray(idx, dtype=np.int64).reshape(n, k + 1)
    rows, cols = np.repeat(np.arange(n, dtype=np.int64), k + 1), idx.ravel()
    # the first neighbour is the point itself except among duplicates: drop self-edges
    # wherever they are, and keep k per point
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    first_k = np.ones(rows.size, dtype=bool)
    extra = np.flatnonzero(np.bincount(rows, minlength=n) > k)   # no self-edge found
    for i in extra:
        first_k[np.flatnonzero(rows == i)[k:]] = False
    rows, cols = rows[first_k], cols[first_k]
    return np.concatenate([rows, cols]), np.concatenate([cols, rows])


def _normalized_cut(graph, labels, n_clusters):
    """Shi & Malik's normalized cut of ``labels`` on ``graph``:
    ``sum_k cut(C_k, rest) / vol(C_k)``, edges counted with multiplicity."""
    rows, cols = graph
    vol = np.bincount(labels[rows], minlength=n_clusters).astype(np.float64)
    split = labels[rows] != labels[cols]
    cut = np.bincount(labels[rows[split]], minlength=n_clusters).astype(np.float64)
    return float(np.sum(cut / np.maximum(vol, 1.0)))
