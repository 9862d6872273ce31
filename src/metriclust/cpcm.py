"""CPCM: Clustering Predictions of Cluster Membership (Gupta, Foster & Ungar 2008).

Unsupervised metric learning: find a partition ``c`` and a linear map ``beta``
(metric ``A = beta beta^T``) with a low *blur ratio* ``SSC / SST`` in the
mapped space, by alternating (Algorithm 1)

1. prediction: regress the one-hot memberships ``Z`` on ``X`` -> ``Zhat``;
2. clustering: k-means of ``Zhat``, started from the current cluster means,

accepting a new partition only when the blur ratio drops (Property 2).
The predictors live in :mod:`metriclust._core.predictors`, the starting
partitions in :mod:`metriclust._core.starts`.

Public classes and functions:

.. autosummary::

   CPCM  -- the estimator: labels, blur ratio, the learned map ``beta``
"""

import numbers
import warnings

import numpy as np

from ._core.base import (BaseEstimator, ClusterMixin, Interval, Options, TransformerMixin,
                         check_is_fitted)
from ._core.gram import median_pairwise_distance
from ._core.kmeans import assign_labels
from ._core import partition, predictors, starts, streaming
from ._core.blockwise import check_out_of_core
from ._core.ondisk import is_out_of_core
from ._core.engine import BlockSource, source
from ._core.threads import single_blas_thread
from ._core.validation import (InputError, check_array, check_fit_input, check_n_clusters,
                               check_n_features, check_random_state, is_dask_array)

__all__ = ["CPCM"]

_PREDICTORS = ("linear", "kernel", "stepwise", "lda")
_INITS = ("auto", "random", "kmeans", "features", "components", "directions")
_DEFAULT_ALPHA = {"linear": 0.0, "stepwise": 0.0, "kernel": 1e-2, "lda": 1e-6}
# Exact kernel path up to this many points; Nystrom (this many landmarks) above.
_KERNEL_EXACT_MAX_N = 2000
_KERNEL_AUTO_COMPONENTS = 300
# Above this many points the search over starts runs on a random subsample of
# this size, and the _N_POLISH best fixed points are iterated on all the data.
_SEARCH_MAX_N = 20000
_N_POLISH = 2
# A cluster whose within scatter in prediction space is below this share of
# the total scatter counts as perfectly predicted.
_PERFECT = 1e-9
#: stop of the clustering stage's Lloyd iterations (the k-means core's default)
_LLOYD_TOL = 1e-4


class CPCM(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""Clustering Predictions of Cluster Membership (CPCM).

    Learns a partition and a metric ``A = beta beta^T`` that minimize the
    blur ratio (Gupta, Foster & Ungar 2008, Sec. 2)

    .. math:: BR(A, c) = \frac{SSC}{SST} = \frac{\sum_i \|x_i\beta - \theta_{c(i)}\|^2}
                                              {\sum_i \|x_i\beta - \bar x\beta\|^2},

    by alternating a prediction of the one-hot membership matrix ``Z`` from
    ``X`` (``Zhat = X beta``, the prediction space) and k-means of ``Zhat``
    started from the current cluster means ``theta_k`` (Algorithm 1). A new
    partition is accepted only if its blur ratio, in its own prediction space,
    is lower by more than ``tol``, so the blur ratio decreases monotonically and
    the loop ends at a fixed point (Property 2). With the linear predictor the
    fixed points are invariant to invertible affine maps of ``X`` (Property 1).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters ``K``.
    predictor : {"linear", "kernel", "stepwise", "lda"}, default="linear"
        How membership is predicted:

        - ``"linear"``: least squares with an intercept (CPCM-LSR). ``Zhat = H Z``
          with the hat matrix of ``[1, X]`` from one rank-revealing thin QR;
          constant and collinear features are cut by the rank decision.
          When the centred data have rank ``>= N - 1`` (``p >= N - 1``, e.g.
          gene expression) the hat matrix is the identity: every partition has
          blur ratio 0, so the fit warns once and stops after the first start
          (the same holds for ``"lda"``). Use ``"kernel"`` or ``"stepwise"``
          there, or reduce the dimension first.
        - ``"kernel"``: kernel ridge regression with a Gaussian kernel and an
          intercept (CPCM-RKHS, Sec. 3.3); hat matrix
          ``J + G_c (G_c + N alpha I)^{-1}``.
        - ``"stepwise"``: forward stepwise least squares shared by the K
          responses, stopped by ``criterion`` (CPCM-LSRstep, Sec. 5.1).
        - ``"lda"``: the K-1 LDA directions of the partition (CPCM-LDA,
          Sec. 4.1, the same fixed points as Ding & Li's LDA-km); the
          prediction space has K-1 dimensions.
    alpha : float or None, default=None
        Regularization. ``"kernel"``: ridge per sample (the penalty is
        ``N * alpha``, so one value means the same smoothness for any N),
        default 1e-2. As ``alpha -> 0`` the kernel can predict *any* partition
        and the blur ratio stops telling partitions apart: on 300 points of
        three circles (``sigma`` = median distance), random partitions have
        blur ratio 0.980 / 0.971 / 0.958 / 0.940 / 0.903 and the effective
        degrees of freedom ``effective_dof_`` are 2 / 6 / 10 / 15 / 25 for
        ``alpha`` = 1e-1 / 1e-2 / 1e-3 / 1e-4 / 1e-6, while the true partition
        stays near 0.02. Choose ``alpha`` so that ``effective_dof_`` stays a
        few times K (not a fraction of N); raise it for smoother boundaries,
        lower it only if the clusters need more wiggly ones. ``"lda"``: ridge
        on the total scatter relative to its mean eigenvalue, default 1e-6.
        Ignored by ``"linear"`` and ``"stepwise"`` (a ridge would break the
        affine invariance).
    sigma : "auto" or float, default="auto"
        Gaussian kernel width for ``"kernel"``. ``"auto"`` is the median
        pairwise distance (:func:`metriclust.kernels.median_pairwise_distance`,
        on at most 2000 sampled points): with ``alpha = 1e-2`` this found the
        paper's three lines and three circles (Fig. 1(d-f)) on every seed we
        tried, with about 5 effective degrees of freedom. A much smaller
        ``sigma`` spreads the circles' radial function over many kernel-PCA
        coordinates and the search misses it. Standardize features first when
        their units differ.
    n_components : int or None, default=None
        ``"kernel"`` only. ``None``: exact eigendecomposition of the N x N
        centered Gram matrix when N <= 2000, a Nystrom factor with 300
        landmarks above. An int ``m``: always Nystrom with ``m`` landmarks
        (``O(N m^2)`` once, ``O(N m K)`` per iteration).
    criterion : {"ric", "bic", "aic"}, default="ric"
        ``"stepwise"`` only: a feature enters while its partial F statistic
        exceeds the penalty per coefficient: ``2 log p`` (risk inflation
        criterion, Foster & George 1994), ``log N`` or 2.
    max_features : int or None, default=None
        ``"stepwise"`` only: at most this many features (at least one always).
    init : {"auto", "random", "features", "components", "kmeans", "directions"} or array of shape (n_samples,), default="auto"
        Starting partitions. ``"random"``: ``n_init`` balanced random
        partitions, the paper's protocol. ``"features"``: 1-D k-means of each
        feature (when ``n_features > n_samples``: of the ``min(n_samples,
        10 * n_init)`` features whose 1-D k-means leaves the smallest share of
        their variance within clusters, so that the search does not grow like
        ``p^2``).
        ``"components"``: 1-D k-means of each leading principal
        component (``n_init`` of them; kernel: every kernel-PCA coordinate
        with shrinkage above 1%, at most ``10 * n_init`` - on concentric
        circles one of them is the radial function). ``"kmeans"``: ``n_init`` k-means++ runs on the
        whitened data (kernel: on the K leading kernel-PCA coordinates).
        ``"directions"``: 1-D k-means along each fourth-moment (FOBI)
        direction of the whitened data, most non-Gaussian first (at most
        ``10 * n_init``), and along the first ``n_init`` of them refined to a
        kurtosis extremum (FastICA's fixed point)
        (:func:`metriclust._core.starts.kurtosis_directions`).
        ``"auto"``: for ``"linear"`` and ``"lda"``, random, directions and
        whitened k-means -- starts that do not depend on the basis of the
        features, so the whole search keeps the paper's Property 1 (the same
        partition for ``X`` and ``X A + b``, ``A`` invertible; exactly for
        ``"linear"``, up to the ridge for ``"lda"``). The other predictors are
        not affine-invariant, and their starts keep exactly the invariances the
        predictor has: ``"kernel"`` (rotations, translations and, with
        ``sigma="auto"``, a common scale): random, directions of the input,
        kernel-PCA components and k-means; ``"stepwise"`` (rescaling and
        shifting single features): random, features, directions and whitened
        k-means. The lowest blur ratio wins, ``best_start_``
        says which. Random starts alone often miss the structure (on the
        paper's Sec. 5.1 data 20 random starts reach ARI 0.02 while the true
        partition has a lower blur ratio). Duplicate starting partitions are
        run once. An array: one given partition (labels 0..K-1).
    n_init : int, default=10
        Number of random partitions, of leading principal components (1-D
        k-means starts) and of whitened k-means starts. Above 20,000 points
        the starts are run on a random subsample of 20,000 points and the two
        best fixed points are then iterated on all the data, starting from
        their predicted labels (``search_size_``); a given ``init`` array
        always runs on all the data.
    max_iter : int, default=100
        Maximum number of prediction/clustering iterations per start.
    tol : float, default=1e-6
        A new partition is accepted only if the blur ratio drops by more than this.
    min_cluster_size : int or "auto", default="auto"
        Partitions with a smaller cluster are neither started from nor
        accepted. ``"auto"`` is ``max(2, ceil(0.01 N))``: the criterion's
        minima include tiny clusters of outlying points (on glass a singleton
        cluster has blur ratio 0.093). Capped at ``N // K``.
    random_state : int, Generator or None, default=None
        Seeds the random partitions and the k-means starts.
    verbose : int, default=0
        Print one line per start.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of each training point.
    blur_ratio_ : float
        Blur ratio of ``labels_`` in its prediction space.
    centers_ : ndarray of shape (n_clusters, d)
        ``theta_k``, the cluster means in prediction space (``d = K``, or K-1 for lda).
    coef_ : ndarray of shape (d, n_features)
        ``beta^T`` (linear, stepwise, lda): ``transform(X) = X coef_^T + intercept_``.
    intercept_ : ndarray of shape (d,)
    metric_ : ndarray of shape (n_features, n_features)
        ``A = beta beta^T`` (linear, stepwise, lda); formed on first access
        (``p^2`` floats: 3.2 GB at p = 20000).
    selected_features_ : ndarray of int
        Features chosen by the final stepwise fit (``"stepwise"`` only).
    effective_dof_ : float
        ``sum_j l_j / (l_j + N alpha)`` (``"kernel"`` only).
    sigma_ : float
        Kernel width used (``"kernel"`` only).
    n_iter_ : int
        Iterations of the winning start.
    history_ : ndarray
        Blur ratio of the winning start's starting partition and after each
        accepted iteration (non-increasing).
    start_kinds_ : dict
        Number of starts of each kind (``random``, ``feature``, ``direction``,
        ``component``, ``kmeans``, ``given``).
    best_start_ : str
        The winning start, e.g. ``"feature 2"``, ``"random 5"``, ``"kmeans 0"``.
    search_ : dict of arrays
        One entry per start: ``kind``, ``index``, ``blur_ratio``, ``n_iter``
        (on the search subsample when ``search_size_ < n_samples``).
    search_size_ : int
        Number of points the search over starts ran on.
    n_features_in_ : int

    See Also
    --------
    metriclust.metrics.blur_ratio : the criterion for any partition and map.

    Notes
    -----
    Data larger than memory: an ``np.memmap`` or a row-sliceable array, and a
    ``dask.array.Array``, are read by row blocks through the block engine
    (:mod:`metriclust._core.engine`; one Dask task per chunk). Above 20,000
    rows the search over starts runs in memory on the same random sample as
    for in-memory X; the best fixed points are then iterated on all of X with
    every stage a pass over the blocks
    (:func:`metriclust._core.streaming.cpcm_run`): the linear predictor's
    R factor by TSQR in one pass, ``X^T Z`` from per-cluster sums, and the
    clustering stage's k-means in prediction space with ``Zhat`` computed per
    block, never stored; the Nystrom kernel predictor (``"kernel"``, always
    Nystrom there) computes its features per block and reduces the ``m x m``
    products in block order. Labels equal those of the in-memory fit from the
    same ``random_state`` (the tests hold the blur ratio to 1e-9 relative in
    float64, 1e-5 in float32). ``labels_`` is then int32 (a lazy dask array for
    Dask); ``transform``/``predict`` of such X also run by blocks. Peak extra
    memory (out-of-core X): ``12 N`` bytes of int32 labels (current,
    candidate and the best run's), the 20,000-row search sample and its
    predictor, and one block with its transforms: about
    ``block_rows * 8 * (2 p + 3 d)`` bytes (``d = K`` linear, ``m + K`` kernel),
    plus ``n_blocks * p^2 * 8`` bytes of per-block R factors (linear).

    Cost per iteration with the linear predictor: one pass of per-cluster
    row sums over ``X`` (``Z^T X``, a C kernel), one ``N x p x K`` GEMM and
    a warm-started k-means in K dimensions; the QR is computed once and the
    hat matrix is never formed.

    The criterion has degenerate minima: a cluster defined by a binary feature
    is predicted perfectly (blur ratio 0; on ionosphere a 313/38 split by its
    first feature), and tiny clusters of outliers are predicted well. A wide
    search finds them because they *are* minima. ``min_cluster_size`` guards
    against the second; a warning flags the first (drop such features or use
    ``init="random"`` as in the paper).

    References
    ----------
    A. A. Gupta, D. P. Foster and L. H. Ungar. Unsupervised distance metric
    learning using predictability. Technical Report MS-CIS-08-23, University of
    Pennsylvania, 2008.

    Examples
    --------
    >>> from metriclust import CPCM
    >>> from metriclust.datasets import make_parallel_lines
    >>> from metriclust.metrics import rand_index
    >>> X, y = make_parallel_lines(300, random_state=0)   # Fig. 1(a): two long lines
    >>> est = CPCM(n_clusters=2, random_state=0).fit(X)
    >>> round(rand_index(y, est.labels_), 2)
    1.0
    >>> est.transform(X).shape
    (300, 2)
    """

    def __init__(self, n_clusters=8, *, predictor="linear", alpha=None, sigma="auto",
                 n_components=None, criterion="ric", max_features=None, init="auto",
                 n_init=10, max_iter=100, tol=1e-6, min_cluster_size="auto",
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.predictor = predictor
        self.alpha = alpha
        self.sigma = sigma
        self.n_components = n_components
        self.criterion = criterion
        self.max_features = max_features
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.min_cluster_size = min_cluster_size
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, block_rows=None):
        """Learn the partition and the metric from X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            An ``np.memmap`` (a ``.npy`` opened with ``mmap_mode="r"``), a
            row-sliceable array (h5py, zarr) or a ``dask.array.Array`` is never
            loaded whole (predictor ``"linear"`` or ``"kernel"``): see
            "Data larger than memory" in the Notes.
        y : ignored
        block_rows : int, default=None
            Rows per block for out-of-core X (default: 64 MiB of input a
            block); ignored otherwise (a dask array's chunks are its blocks).

        Returns
        -------
        self
        """
        if is_dask_array(X) or is_out_of_core(X):
            X = self._check_blocks(X, block_rows)   # in memory, or a BlockSource
            K = check_n_clusters(self.n_clusters, X.shape[0])
            rng = check_random_state(self.random_state)
        else:
            X, K, rng = check_fit_input(X, self.n_clusters, self.random_state,
                                        ensure_min_samples=2)
        n, p = X.shape
        self._check_params()
        # BLAS on one thread: the hot loops are OpenMP kernels, and the many small
        # p x p factorizations are far slower multi-threaded (measured 500x on a
        # loaded 2-core machine).
        with single_blas_thread():
            return self._search(X, n, p, K, rng)

    def _check_blocks(self, X, block_rows=None):
        """A dask array or out-of-core X (an np.memmap, a row-sliceable array): searched
        on a sample, polished by passes over row blocks (see _search).

        Up to the sample size the search covers all of X, so X is read whole (and
        so it is for the predictors without a block path, "stepwise" and "lda").
        Returns an in-memory array or a :class:`metriclust._core.engine.BlockSource`.
        """
        blockable = self.predictor in ("linear", "kernel") and isinstance(self.init, str)
        if is_dask_array(X):
            from . import _dask
            X = _dask.check_dask_array(X, ensure_min_samples=2)
            if not blockable:
                raise InputError("A dask array X takes predictor='linear' or 'kernel' and a "
                                 f"named init (got predictor={self.predictor!r}); gather X "
                                 "first for the others.")
        else:
            check_out_of_core(X, ensure_min_samples=2)
            if not blockable:    # the other predictors read X into memory
                return check_array(X, name="X", ensure_min_samples=2)
        if X.shape[0] <= _SEARCH_MAX_N:
            return check_array(np.array(X), name="X", ensure_min_samples=2)
        return source(X, block_rows=block_rows)

    def _search(self, X, n, p, K, rng):
        self.n_features_in_ = p
        self._warned_perfect = False
        self.start_kinds_ = {}
        records = []
        many = isinstance(self.init, str)
        blocks = isinstance(X, BlockSource)
        if not many or n <= _SEARCH_MAX_N:
            model = self._make_predictor(X, K, rng)
            min_size = self._min_size(n, K)
            runs = self._run_starts(X, K, model, rng, min_size, records)
            best = runs[0]
            self.search_size_ = n
        else:
            # Large N: search on a subsample, then iterate the best fixed points on all
            # of X from their predicted labels (each converges in a few iterations).
            idx = np.sort(rng.choice(n, _SEARCH_MAX_N, replace=False))
            Xs = X.take_rows(idx) if blocks else np.ascontiguousarray(X[idx])
            sub = self._make_predictor(Xs, K, rng)
            runs = self._run_starts(Xs, K, sub, rng, self._min_size(len(idx), K), records)
            del Xs
            # memmap or dask: the same polish, every pass over X's row blocks
            model = self._block_predictor(X, K, rng) if blocks else \
                self._make_predictor(X, K, rng)
            min_size = self._min_size(n, K)
            best = None
            for run in sorted(runs, key=lambda r: r["blur_ratio"])[:_N_POLISH]:
                theta = partition.cluster_means(run["fit"].Zhat, run["labels"], K)[0]
                seed = int(rng.integers(2**31))
                if blocks:
                    labels0 = streaming.start_labels(
                        X, streaming.prediction_transform(sub, run["fit"], X.n_threads), theta)
                    full = streaming.cpcm_run(X, model, labels0, K, self.max_iter, self.tol,
                                              min_size)
                else:
                    Z = sub.transform(X, run["fit"])
                    labels0 = assign_labels(Z, theta.astype(Z.dtype))[0]
                    del Z
                    full = _cpcm(model, labels0, K, self.max_iter, self.tol, min_size, seed)
                full["start"] = run["start"]
                if best is None or full["blur_ratio"] < best["blur_ratio"]:
                    best = full
            self.search_size_ = len(idx)
        self._store(model, best, K, records)
        return self

    def _run_starts(self, X, K, model, rng, min_size, records):
        """Algorithm 1 from every starting partition; the ``_N_POLISH`` best runs, best first.

        When every partition has blur ratio 0 (:meth:`_every_partition_perfect`)
        the search stops after the first start: no start can do better.
        """
        best = []
        degenerate = self._every_partition_perfect(model, X.shape[0])
        # Starts are made lazily and the duplicates dropped, so verbose output
        # gives a bound on their number, then why fewer ran.
        if isinstance(self.init, str):
            n, p = X.shape
            # kernel-PCA component starts are capped at 10 * n_init, principal ones at n_init
            at_most = starts.max_starts(
                starts.start_kinds(self.init, self.predictor), n, p,
                getattr(model, "rank", p), self.n_init,
                10 * self.n_init if self.predictor == "kernel" else self.n_init)
        else:
            at_most = 1
        n_run = 0
        for kind, index, labels0 in self._starts(X, K, model, rng, min_size):
            self.start_kinds_[kind] = self.start_kinds_.get(kind, 0) + 1
            run = _cpcm(model, labels0, K, self.max_iter, self.tol, min_size,
                        int(rng.integers(2**31)))
            run["start"] = f"{kind} {index}"
            records.append((kind, index, run["blur_ratio"], run["n_iter"]))
            n_run += 1
            if self.verbose:
                print(f"CPCM start {n_run} of at most {at_most} ({kind} {index}): blur ratio "
                      f"{run['blur_ratio']:.6f} after {run['n_iter']} iterations", flush=True)
            # keep the fitted predictions of the few best runs only (memory); a stable
            # insertion keeps the earlier start on ties, as a stable sort of all runs would
            best.insert(sum(r["blur_ratio"] <= run["blur_ratio"] for r in best), run)
            del best[_N_POLISH:]
            if degenerate:
                break
        if self.verbose and n_run < at_most:
            why = ("every partition has blur ratio 0, no start can do better" if degenerate
                   else "the others repeat a partition already tried or leave a cluster "
                   "under min_cluster_size")
            print(f"CPCM: {n_run} of at most {at_most} starts run: {why}", flush=True)
        return best

    def _every_partition_perfect(self, model, n):
        """True (and one warning) when least squares / LDA predict every partition exactly.

        With the centered data of rank ``r >= N - 1`` (always when ``p >= N - 1``
        in general position) the hat matrix of ``[1, X]`` is the identity, so
        ``Zhat = Z`` and every partition has blur ratio 0 (LDA: ``K - 1``
        directions with ``S_c b = 0`` exist for every partition).
        """
        if self.predictor not in ("linear", "lda") or model.rank < n - 1:
            return False
        if not getattr(self, "_warned_perfect", False):
            warnings.warn(
                f"The centered data have rank {model.rank} >= n_samples - 1 = {n - 1}: "
                f"predictor={self.predictor!r} predicts every partition perfectly (blur "
                "ratio 0), so the blur ratio cannot tell partitions apart and the search "
                "stops after the first start. Use predictor='kernel' or 'stepwise' "
                "(regularised: they still rank partitions when p >= n_samples), or "
                "reduce the dimension first (e.g. the leading principal components).",
                UserWarning, stacklevel=5)
            self._warned_perfect = True
        return True

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "predictor": [Options(*_PREDICTORS)],
        "alpha": [None, Interval(numbers.Real, 0, None, finite=True)],
        "sigma": [Options("auto"), Interval(numbers.Real, 0, None, closed="neither",
                                            finite=True)],
        "n_components": [None, Interval(numbers.Integral, 1, None)],
        "criterion": [Options("ric", "bic", "aic")],
        "max_features": [None, Interval(numbers.Integral, 1, None)],
        "init": [Options(*_INITS), "array-like"],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "min_cluster_size": [Options("auto"), Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None)],
    }

    def _check_params(self):
        # each parameter alone is checked on entry to fit (_parameter_constraints)
        if self.predictor == "kernel" and self.alpha == 0:
            raise InputError("alpha must be > 0 for predictor='kernel' (with alpha = 0 "
                             "every partition is predicted perfectly).")

    def _min_size(self, n, K):
        if isinstance(self.min_cluster_size, str) and self.min_cluster_size == "auto":
            size = max(2, int(np.ceil(0.01 * n)))
        else:
            size = self.min_cluster_size
        return max(1, min(int(size), n // K))

    def _make_predictor(self, X, K, rng):
        kind = self.predictor
        alpha = _DEFAULT_ALPHA[kind] if self.alpha is None else float(self.alpha)
        if kind == "linear":
            return predictors.Linear(X)
        if kind == "stepwise":
            return predictors.Stepwise(X, criterion=self.criterion,
                                       max_features=self.max_features)
        if kind == "lda":
            return predictors.LDA(X, alpha=alpha)

        if isinstance(self.sigma, str):
            med = median_pairwise_distance(X, random_state=int(rng.integers(2**31))) \
                if X.shape[0] > 1 else 0.0
            sigma = med if med > 0 else 1.0
        else:
            sigma = float(self.sigma)
        m = self.n_components
        if m is None and X.shape[0] > _KERNEL_EXACT_MAX_N:
            m = _KERNEL_AUTO_COMPONENTS
        return predictors.Kernel(X, sigma=sigma, alpha=alpha, n_components=m,
                                 random_state=int(rng.integers(2**31)))

    def _block_predictor(self, src, K, rng):
        """:meth:`_make_predictor` for X read by row blocks (drawing the same random
        numbers, so that it makes the same predictor as on X in memory)."""
        if self.predictor == "linear":
            return streaming.BlockLinear(src)
        alpha = _DEFAULT_ALPHA["kernel"] if self.alpha is None else float(self.alpha)
        n = src.n_rows
        if isinstance(self.sigma, str):
            # median_pairwise_distance on X: the same 2000 rows, read from their blocks
            sample = check_random_state(int(rng.integers(2**31))).choice(n, 2000,
                                                                       replace=False)
            med = median_pairwise_distance(src.take_rows(np.sort(sample)))
            sigma = med if med > 0 else 1.0
        else:
            sigma = float(self.sigma)
        m = self.n_components if self.n_components is not None else _KERNEL_AUTO_COMPONENTS
        return streaming.BlockKernel(src, sigma=sigma, alpha=alpha, n_components=m,
                                     random_state=int(rng.integers(2**31)))

    # --------------------------------------------------------------- starts
    def _starts(self, X, K, model, rng, min_size):
        """Yield (kind, index, labels) for every admissible starting partition."""
        n = X.shape[0]
        if not isinstance(self.init, str):
            labels = np.asarray(self.init)
            if labels.shape != (n,):
                raise InputError(f"init as labels must have shape ({n},), got {labels.shape}.")
            if labels.dtype.kind not in "iu" or labels.min() < 0 or labels.max() >= K:
                raise InputError(f"init as labels must hold integers in [0, {K}).")
            yield "given", 0, np.ascontiguousarray(labels, dtype=np.int64)
            return
        kinds = starts.start_kinds(self.init, self.predictor)
        seen = set()
        count = 0

        def admissible(labels):
            key = partition.canonical(labels).tobytes()
            ok = key not in seen and partition.cluster_sizes(labels, K).min() >= min_size
            seen.add(key)
            return ok

        def column_starts(kind, F, quantiles=None):
            """The admissible 1-D k-means partitions of F's columns: column j from
            ``init`` for each (j, init) of ``quantiles``; None: every column from
            its own quantiles."""
            nonlocal count
            if quantiles is None:
                quantiles = ((j, None) for j in range(F.shape[1]))
            for j, init in quantiles:
                labels = starts.feature_partition(np.ascontiguousarray(F[:, j:j + 1]), K,
                                                  seed=int(rng.integers(2**31)), init=init)
                if admissible(labels):
                    count += 1
                    yield kind, j, labels

        if "random" in kinds:
            for i in range(self.n_init):
                count += 1
                yield "random", i, starts.random_partition(n, K, rng)
        if "feature" in kinds:
            # wide data: p feature starts at O(N p) each would cost O(N p^2); keep a few
            columns = None
            if X.shape[1] > n:
                columns = starts.strongest_split_features(
                    X, K, starts.n_feature_starts(n, X.shape[1], self.n_init))
            yield from column_starts("feature", X, starts.feature_quantiles(X, K, columns))
        if "direction" in kinds:
            # the kernel predictor's whitened() is kernel PCA: directions of the input
            Q = predictors.whitened_input(X) if model.name == "kernel" else model.whitened()
            # most non-Gaussian first; wide data would give up to N - 1 of them
            F = starts.kurtosis_directions(Q, starts.WIDE_FEATURE_STARTS * self.n_init,
                                           n_refined=self.n_init)
            del Q
            yield from column_starts("direction", F)
            del F
        if "component" in kinds:
            F = model.components(self.n_init)
            yield from column_starts("component", F)
            del F
        if "kmeans" in kinds:
            F = model.kmeans_coordinates(K)
            for i in range(self.n_init if F.shape[1] else 0):
                labels = starts.kmeans_partition(F, K, seed=int(rng.integers(2**31)))
                if admissible(labels):
                    count += 1
                    yield "kmeans", i, labels
            del F
        if count == 0:
            # every structured start was degenerate: fall back on the paper's protocol
            for i in range(self.n_init):
                yield "random", i, starts.random_partition(n, K, rng)

    # ---------------------------------------------------------------- store
    def _store(self, model, best, K, records):
        fit = best["fit"]
        self.labels_ = best["labels"]
        self.blur_ratio_ = float(best["blur_ratio"])
        self.history_ = np.asarray(best["history"])
        self.n_iter_ = int(best["n_iter"])
        self.best_start_ = best["start"]
        self.search_ = {
            "kind": np.array([r[0] for r in records]),
            "index": np.array([r[1] for r in records], dtype=np.int64),
            "blur_ratio": np.array([r[2] for r in records]),
            "n_iter": np.array([r[3] for r in records], dtype=np.int64),
        }
        self.centers_ = (best["theta"] if "theta" in best
                         else partition.cluster_means(fit.Zhat, self.labels_, K)[0])
        if model.name == "kernel":
            self.__dict__.pop("_metric", None)
            self.sigma_ = model.sigma
            self.effective_dof_ = model.effective_dof
            model.release()
        else:
            self.coef_ = np.ascontiguousarray(fit.coef.T)
            self.intercept_ = np.asarray(fit.intercept, dtype=np.float64)
            self._metric = None             # metric_: formed on first access
            if "selected" in fit.extra:
                self.selected_features_ = fit.extra["selected"]
        fit.Zhat = None
        model.X = None
        self._model, self._pfit = model, fit
        if not self._warned_perfect:                 # said once already otherwise
            _warn_perfect(best["within"], self.blur_ratio_)

    @property
    def metric_(self):
        # formed on first access: p^2 floats (3.2 GB at p = 20000) that fit never needs
        if "_metric" not in self.__dict__:
            raise AttributeError("'CPCM' object has no attribute 'metric_' (it exists for "
                                 "the linear, stepwise and lda predictors after fit)")
        if self._metric is None:
            self._metric = self.coef_.T @ self.coef_
        return self._metric

    # ------------------------------------------------------------ transform
    @property
    def _n_features_out(self):
        # columns of ``transform``: the prediction space
        return self.centers_.shape[1]

    def transform(self, X):
        """Map X into the prediction space (``n_samples x K``; K-1 for lda)."""
        check_is_fitted(self, "labels_")
        src = self._block_source(X)
        if src is not None:     # per block: lazy with X's row chunks for a dask array
            T = streaming.prediction_transform(self._model, self._pfit, src.n_threads)
            return streaming.transform_rows(src, T)
        X = check_array(X, name="X")
        check_n_features(self, X)
        return self._model.transform(X, self._pfit)

    def predict(self, X):
        """Nearest ``theta_k`` (``centers_``) in the prediction space.

        A dask array gives a lazy dask array with X's row chunks.
        """
        src = self._block_source(X)
        if src is not None:
            T = streaming.prediction_transform(self._model, self._pfit, src.n_threads)
            return streaming.predict_labels(src, self.centers_, transform=T)
        Zhat = self.transform(X)
        return assign_labels(np.ascontiguousarray(Zhat),
                             self.centers_.astype(Zhat.dtype, copy=False))[0]

    def _block_source(self, X):
        """A BlockSource for a dask array or out-of-core X (checked), else None."""
        check_is_fitted(self, "labels_")
        if is_dask_array(X):
            from . import _dask
            X = _dask.check_dask_array(X)
        elif not is_out_of_core(X):
            return None
        else:
            check_out_of_core(X)
        check_n_features(self, X)
        return source(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


def _cpcm(model, labels, K, max_iter, tol, min_size, seed):
    """Algorithm 1 from one starting partition; returns the fixed point reached."""
    fit = model.fit(labels, K)                                   # prediction stage
    br = partition.blur_ratio(fit.Zhat, labels, K)
    history = [br]
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        # clustering stage: k-means of Zhat from theta_k = current cluster means
        new = partition.lloyd_from_partition(fit.Zhat, labels, K, tol=_LLOYD_TOL)
        if np.array_equal(new, labels):
            break
        if partition.cluster_sizes(new, K).min() < min_size:
            break
        new_fit = model.fit(new, K)                              # prediction stage
        new_br = partition.blur_ratio(new_fit.Zhat, new, K)
        if not new_br < br - tol:                               # Property 2: monotone
            break
        labels, fit, br = new, new_fit, new_br
        history.append(br)
    within = partition.within_shares(fit.Zhat, labels, K)
    return {"labels": labels, "fit": fit, "blur_ratio": br, "history": history,
            "n_iter": n_iter, "within": within}


def _warn_perfect(within, br):
    perfect = np.flatnonzero(within <= _PERFECT)
    if perfect.size:
        warnings.warn(
            f"Cluster(s) {perfect.tolist()} are predicted perfectly (no within-cluster "
            f"scatter in prediction space; blur ratio {br:.3g}). Such a partition is "
            "usually defined by a discrete feature (e.g. a binary column); consider "
            "dropping it, or init='random' for the paper's protocol.",
            UserWarning, stacklevel=3)
