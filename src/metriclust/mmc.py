"""MMC: Mahalanobis metric learning from side information (Xing, Ng, Jordan & Russell 2003).

Public classes:

.. autosummary::

   MMC  -- learn a diagonal or full Mahalanobis metric from similar / dissimilar pairs,
           then cluster in it (k-means or constrained k-means)

The paper's problem (Xing, Ng, Jordan & Russell 2003, eq. (2)-(4))::

    min_A  sum_S ||x_i - x_j||_A^2   s.t.  sum_D ||x_i - x_j||_A >= 1,  A >= 0

is solved in its equivalent scale-free form: maximize

    J(A) = sum_D ||x_i - x_j||_A / sqrt(sum_S ||x_i - x_j||_A^2).

Full A (the paper's Fig. 1, "gradient ascent + iterative projection", done
properly). Whiten by the similar-pair scatter ``M_S = sum_S d d^T``:
``E = X W`` with ``W = M_S^{-1/2}`` (eigenbasis form), ``A = W B W^T``. The
constraint set C1 ∩ C2 = {<A, M_S> <= 1, A >= 0} becomes the spectraplex
``{B >= 0, tr B <= 1}``, whose Euclidean projection is exact and costs one
eigendecomposition (eigenvalues projected onto the capped simplex). The ascent
itself is a spectral projected gradient (Barzilai-Borwein step, non-monotone
Armijo search; Birgin, Martinez & Raydan 2000) on ``h(B) = sum_D ||e||_B`` with
the gradient of the paper's Fig. 1, ``grad g = sum_D e e^T / (2 ||e||_B)``.
Stopping is certified: for any B, weak duality gives
``h* <= lambda_max(grad h(B)) + h(B) / 2`` (from ``sqrt(q) = min_t q/(2t) + t/2``),
so the relative gap bounds the distance of J to its optimum. Where a
dissimilar pair has distance 0 but differs (its difference lies in the null
space of B) h is not differentiable and its gradient is +inf along that
difference; the bound then takes ``t = eps`` for those pairs and is minimized
over eps (``_full_upper_bound``, ``_diagonal_gap``; the solvers live in
:mod:`metriclust._core.mahalanobis`), and the solvers step towards them.
Near the optimum, Newton on faces of the spectraplex (``_face_solve``: the
range of B plus the top eigenvectors of its gradient, Newton on the factor of
C in ``B = V C V^T``, so that a tiny eigenvalue of a rank-deficient optimum is
no boundary to run into) finishes in a few steps what SPG creeps towards. Both loops run in
compiled code without the GIL; Python sets up the
whitened problem and handles the rare events. Many explicit pairs
on few points (``m > 4 n``) are summed through the weighted pair graph's
Laplacian (``PairSums``): O(n p^2) per iteration instead of O(m p^2).

Diagonal A (the paper's Sec. 2.1, eq. (6)): Newton-Raphson on
``g(a) = sum_S ||.||_a^2 - log(sum_D ||.||_a)``, ``a >= 0``, in the factor
``a = b * b`` (no bound to run into), with an Armijo search along ``b + t d``.

References
----------
E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning, with
application to clustering with side-information. NIPS 15, 2003.
"""

import contextlib
import numbers
import warnings

import numpy as np

from ._core.base import (BaseEstimator, ConvergenceWarning, Interval, Options, TransformerMixin,
                         _with_sklearn_twin, check_is_fitted)
from ._core.ondisk import is_out_of_core
from ._core.pairsums import PairSums, distances_of_pairs, min_parallel_work, scatter_of_pairs
from ._core.mahalanobis import (newton_diagonal, projected_gradient_diagonal,
                                projected_gradient_full, scatter_diagonal)
from ._core.threads import single_blas_thread
from ._core.psd import eigh_robust, psd_factor
from ._core.sidepairs import pairs_from_labels
from ._core.validation import check_array, check_n_features, check_pairs, is_dask_array
from ._core.validation import InputError

__all__ = ["MMC"]

# Tikhonov term: the constraint is <A, M_S + lambda I> <= 1 with
# lambda = _RIDGE * tr(M_S) / p. A singular M_S (fewer similar pairs than
# features, constant features) makes the paper's problem unbounded along its
# null space; this keeps it bounded and changes J by ~1e-9 relative otherwise.
_RIDGE = 1e-9
# Labelled pairs used as they are up to this count; beyond it, sampled.
_MAX_LABEL_PAIRS = 200_000


class MMC(TransformerMixin, BaseEstimator):
    """Mahalanobis metric for clustering with side information (Xing et al. 2003).

    Parameters
    ----------
    diagonal : bool, default=False
        Learn a diagonal ``A`` (Newton-Raphson, paper Sec. 2.1) instead of a full one.
    max_iter : int, default=1000
        Maximum number of ascent / Newton iterations.
    tol : float, default=1e-6
        Stop when the certified relative duality gap (a bound on ``(J* - J) / J``)
        is below ``tol``, so that ``objective_`` is within ``tol`` of the optimum;
        or (full A, with the bound within ``100 tol``) when J rose by less than
        ``tol / 10`` (relative) over the last 20 iterations: at non-smooth optima
        (rank-deficient A with dissimilar pairs at distance ~0) the bound stays
        loose while J creeps (e.g. iris with little side information: bound 4e-6
        after 30 iterations, J changing by 1e-10 per iteration).
    init : {"identity", "covariance"} or ndarray, default="identity"
        Starting metric: the identity, the inverse covariance of ``X``, or a
        ``(p, p)`` PSD matrix (``(p,)`` vector of weights allowed when diagonal);
        an indefinite one raises ``ValueError`` naming its smallest eigenvalue.
        The problem is convex: the optimum ``J`` does not depend on it.
    random_state : None, int or Generator
        Used only to sample pairs from ``y`` when there are very many.
    verbose : int, default=0
        Print the objective and gap every iteration when positive.

    Attributes
    ----------
    metric_ : ndarray (p, p)
        The learned ``A``, symmetric PSD, scaled so that the constraint is
        active: ``sum_S ||.||_A^2 + lambda tr(A) = 1`` with the tiny ridge
        ``lambda = 1e-9 tr(M_S) / p`` (see Notes). When ``p > n_samples`` it
        is formed from ``components_`` on first access (``p^2`` floats).
    components_ : ndarray (p, p)
        ``L`` with ``A = L^T L``; rows by decreasing eigenvalue of the whitened
        problem, rows of zeros where ``A`` is rank deficient. Wide data
        (``p > n_samples``): ``(r, p)``, without the zero rows -- full ``A``:
        ``r <= n_samples - 1``, the rank of the centred data (``A`` is zero off
        their span, see Notes); diagonal ``A``: one row per positive weight.
    objective_ : float
        ``J(A) = sum_D ||x_i - x_j||_A`` at that scale (the scale-free objective).
    n_iter_ : int
        Iterations: projected-gradient steps and face Newton steps (full A), or
        Newton steps (diagonal A).
    converged_ : bool
    n_features_in_ : int
    similar_, dissimilar_ : ndarray (m, 2)
        The pairs used; ``dissimilar_`` is None for "all pairs not in S".

    Notes
    -----
    Side information: ``fit(X, similar=S)`` uses all pairs not in S as D (never
    materialized: the Laplacian form of the all-pairs sum); ``fit(X, similar=S,
    dissimilar=D)`` uses both lists. ``fit(X, y)`` with class labels (-1 =
    unlabelled) builds the pairs among labelled points: every same-class pair is
    similar and every different-class pair dissimilar when there are at most
    200,000 labelled pairs; otherwise 50,000 of each are drawn at random
    (:func:`metriclust.constraints.pairs_from_labels`). ``fit(X)`` without any
    side information raises ``ValueError``.

    Data larger than memory (an ``np.memmap`` or a row-sliceable array such as
    an h5py dataset) with explicit ``similar`` and ``dissimilar`` pairs: only
    the rows the pairs touch are read (peak extra memory: those rows, as
    float64, and the pairs), unless ``init="covariance"`` (which needs all of
    X). ``similar_`` and ``dissimilar_`` keep X's row numbers. With the
    implicit all-pairs D (``fit(X, similar=S)``, also on a Dask array) the
    objective and gradient are summed block pair by block pair (``O(N^2 p)``
    per evaluation, as in memory; peak extra memory two blocks with their
    whitened and projected copies and the kernel's centred copies, about
    ``8 b p`` float64 for ``b = block_rows``, plus the rows S touches and
    ``O(p^2)``); see ``_fit_all_pairs``. With class labels, X is
    read whole.

    A singular ``M_S`` (fewer similar pairs than features, features constant
    within every similar pair) makes the paper's problem unbounded; the ridge
    ``lambda`` above keeps it bounded (the metric then grows large, not
    infinite, along those directions) and changes ``J`` by about 1e-9 otherwise.

    Wide data (``p > n_samples``), full ``A``: every pair difference lies in
    the span of the centred data, so objective and constraint see ``A`` only
    through its restriction to that span, and any part of ``A`` off the span
    only adds ``lambda tr(A)`` to the constraint. The optimum is therefore
    ``A = V B V^T`` with ``V`` an orthonormal basis of the span (``r <= N - 1``
    columns) and ``B`` the optimum for the data ``(X - mean) V``: solved at
    ``O(N^2 p)`` for the basis plus the cost of an ``r``-feature problem, with
    ``A v = 0`` for ``v`` orthogonal to the span (also the minimal-norm
    choice when ``lambda`` is 0, as the complement then does not enter the
    problem at all). Diagonal ``A`` does not reduce (it weighs coordinates);
    it is solved by projected gradient, ``O(|D| p)`` a step, with no ``p x p``
    array (``metric_`` is formed on first access).

    The result is scale invariant: multiplying ``X`` by any ``c > 0`` leaves
    ``transform(X)`` (hence any clustering of it) and ``objective_`` unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import MMC
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> X = np.c_[y + 0.1 * rng.normal(size=100), 10 * rng.normal(size=100)]
    >>> mmc = MMC().fit(X, y)
    >>> bool(abs(mmc.metric_[0, 0]) > 100 * abs(mmc.metric_[1, 1]))
    True
    """

    # checked on entry to fit; "boolean": the string "false" would be truthy, and a bad
    # random_state fails even when no draw is made
    _parameter_constraints = {
        "diagonal": ["boolean"],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "init": [Options("identity", "covariance"), "array-like"],
        "random_state": ["random_state"],
        "verbose": ["boolean", Interval(numbers.Integral, None, None)],
    }

    def __init__(self, diagonal=False, max_iter=1000, tol=1e-6, init="identity",
                 random_state=None, verbose=0):
        self.diagonal = diagonal
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, similar=None, dissimilar=None, block_rows=None):
        """Learn ``A`` from pairs (``similar``/``dissimilar``) or class labels ``y``.

        ``block_rows``: rows per block when X is read block by block (an
        out-of-core X with D = all pairs not in S); None: ``64 MiB / (64 p)``
        rows (two blocks and their copies then take about 64 MiB).
        """
        if is_dask_array(X):
            from . import _dask   # lazy: Dask inputs only, ~35 ms of import
            X = _dask.check_dask_array(X, ensure_min_samples=2)
            if X.shape[1] <= X.shape[0]:
                return self._fit_dask(_dask, X, y, similar, dissimilar)
            X = np.asarray(X)   # wide: fewer rows than features, gathered
        if (is_out_of_core(X) and y is None and similar is not None and dissimilar is None
                and X.shape[1] <= X.shape[0]):
            from ._core.pairs_blockwise import AllPairsSource   # lazy: ~30 ms of import
            return self._fit_all_pairs(X, similar, AllPairsSource(X, block_rows))
        rows = None
        if (is_out_of_core(X) and similar is not None and dissimilar is not None
                and not (isinstance(self.init, str) and self.init == "covariance")):
            # Data past memory: the metric depends on X only through the rows
            # the pairs touch; read those, renumber the pairs, map them back below.
            # (The out-of-core helpers, and the k-means core under them, are
            # imported here: an in-memory fit needs neither, ~20 ms of import.)
            from ._core.streaming import gather_pair_rows
            X, similar, dissimilar, rows = gather_pair_rows(X, similar, dissimilar)
        X = check_array(X, ensure_min_samples=2)
        p = X.shape[1]
        self.n_features_in_ = p
        wide = p > X.shape[0]
        # Diagonal A reads float32 X as it is (the similar-pair scatter widens each
        # value as it reads it) until the whitened float64 copy; the full solver
        # and the wide paths work on float64.
        Xw = X if self.diagonal and not wide else X.astype(np.float64, copy=False)
        S, D = self._side_information(Xw, y, similar, dissimilar)
        # The OpenMP kernels call BLAS themselves: hold BLAS to one thread when
        # they may run in parallel. Below that size the kernels stay on one
        # thread and the limit (a threadpoolctl scan in a fresh process) is skipped.
        serial = D is not None and 2.0 * (len(S) + len(D)) * p * p <= min_parallel_work()
        with contextlib.nullcontext() if serial else single_blas_thread():
            if wide:                    # wide data: nothing p x p
                (self._fit_diagonal_wide if self.diagonal else self._fit_in_span)(Xw, S, D)
            else:
                self._fit(Xw, S, D)
        if rows is not None:
            self.similar_, self.dissimilar_ = rows[self.similar_], rows[self.dissimilar_]
        return self

    def _fit_dask(self, _dask, X, y, similar, dissimilar):
        """A dask array X with explicit pairs: the problem on the rows the pairs touch.

        With explicit S and D, Xing et al.'s problem (eq. (2)-(3)) reads X only
        through the differences of the pairs' rows, so those rows (at most
        ``2 (|S| + |D|)``, read from the chunks that hold them) stand for X;
        the solver's passes over the pairs then cost ``O(|D| p^2)`` a step,
        independent of N, with no Dask round trip per step. ``init="covariance"``
        uses the covariance of all of X (block moments). D = all pairs not in S
        (no ``dissimilar`` and no ``y``) would need every row: refused.
        """
        if y is not None and is_dask_array(y):
            y = np.asarray(y)
        S, D = self._side_information(X, y, similar, dissimilar)
        if D is None:       # all pairs not in S: block-pair tasks at every step
            from ._core.pairs_blockwise import AllPairsSource   # lazy: ~30 ms of import
            return self._fit_all_pairs(X, S, AllPairsSource(X))
        E, (S_e, D_e) = _dask.pair_rows(X, [S, D])
        init = self.init
        if isinstance(init, str) and init == "covariance":
            init = np.linalg.pinv(np.atleast_2d(_dask.covariance(X)), hermitian=True)
        elif not isinstance(init, str):
            init = self._initial_metric(E)          # checked against p as in memory
        reduced = MMC(diagonal=self.diagonal, max_iter=self.max_iter, tol=self.tol,
                      init=init, random_state=self.random_state, verbose=self.verbose)
        serial = 2.0 * (len(S) + len(D)) * X.shape[1] ** 2 <= min_parallel_work()
        with contextlib.nullcontext() if serial else single_blas_thread():
            reduced._fit(E, S_e, D_e)
        for name in ("n_iter_", "converged_", "objective_", "components_"):
            setattr(self, name, getattr(reduced, name))
        self.metric_ = None                                 # formed on access
        self.n_features_in_ = X.shape[1]
        self.similar_, self.dissimilar_ = S, D
        return self

    def _fit_all_pairs(self, X, similar, source):
        """D = all pairs not in S with X read block by block (memmap, h5py, Dask).

        The problem of :meth:`_fit` with its pair sums over all ``N (N - 1) / 2``
        pairs taken block pair by block pair (row block I x row block J, I <= J,
        in that fixed order; :mod:`metriclust._core.pairs_blockwise`), minus the
        similar pairs' own terms from their gathered rows. Everything else
        (whitening by ``M_S``, the solver, the scaling) is :meth:`_fit`'s on the
        rows S touches. Equal to the in-memory fit up to the order of the sums.

        Cost: every evaluation of the objective and gradient visits all pairs,
        ``O(N^2 p)`` flops (``p^2`` more per pair with the diagonal metric's
        Hessian) and ``nb (nb + 1) / 2`` block reads; a solve takes tens to
        hundreds of evaluations. Measured (``_pairwise.allpairs_full``, N = 2e4,
        p = 8 and 20, on the shared 2-core machine at load average 22):
        1.5-1.6e7 pairs a second on one thread, 2-2.7e7 on two, so one
        evaluation at N = 1e5 (5e9 pairs) takes minutes and a fit hours there;
        N of a few 1e4 is practical on such a machine (a few 1e5 on many idle
        cores or a Dask cluster: the block pairs are independent tasks), and past
        that D should be an explicit sample of dissimilar pairs. Peak extra
        memory: two blocks with their whitened and projected copies and the
        kernel's centred copies (about ``8 b p`` float64 for ``b`` rows a
        block), the rows S touches, ``O(p^2)`` partials.

        ``source``: ``gather(S) -> (rows, S renumbered)``, ``mean_cov(want_cov)
        -> (column mean, covariance or None)``, ``pair_map(mean)`` (the block-pair
        driver on the block engine): :class:`metriclust._core.pairs_blockwise.AllPairsSource`.
        """
        n, p = X.shape
        S = check_pairs(similar, n, name="similar", allow_empty=False)
        XS, S_loc = source.gather(S)                    # the rows S touches, float64
        mean, cov = source.mean_cov(self._wants_cov())
        pair_map = source.pair_map(mean)
        from ._core.pairs_blockwise import BlockAllPairSums, whiten   # lazy: ~30 ms of import
        init = self.init
        if self._wants_cov():
            init = np.linalg.pinv(np.atleast_2d(cov), hermitian=True)
        reduced = MMC(diagonal=self.diagonal, max_iter=self.max_iter, tol=self.tol,
                      init=init, random_state=self.random_state, verbose=self.verbose)

        def pair_sums(W):
            return BlockAllPairSums(pair_map, W, whiten(XS, mean, W), S_loc)

        with single_blas_thread():
            reduced._fit(XS, S_loc, None, pair_sums=pair_sums)
        for name in ("n_iter_", "converged_", "objective_", "components_", "metric_"):
            setattr(self, name, getattr(reduced, name))
        self.n_features_in_ = p
        self.similar_, self.dissimilar_ = S, None
        return self

    def _wants_cov(self):
        return isinstance(self.init, str) and self.init == "covariance"

    def _fit_in_span(self, X64, S, D):
        r"""Full ``A`` for wide data (``p > N``), solved in the span of the centred data.

        Why the optimum lies there. Let ``V`` (p x r, ``r <= N - 1``) be an
        orthonormal basis of the span of the centred rows ``x_i - mean`` and
        ``P = V V^T``. Every pair difference ``d = x_i - x_j`` lies in that
        span (``d = P d``), so ``||d||_A^2 = d^T (P A P) d`` for every pair in S
        and D: the objective ``sum_D ||d||_A`` and ``sum_S ||d||_A^2 =
        <A, M_S>`` (eq. (2)-(3) of Xing et al. 2003) depend on ``A`` only
        through ``P A P``. The constraint used here, ``<A, M_S + lambda I> <= 1``
        (the ridge of the Notes), adds ``lambda tr(A) = lambda tr(P A P) +
        lambda tr(P' A P')`` with ``P' = I - P``; a positive part of ``A`` on
        the complement only uses up the constraint, so at the optimum
        ``P' A P' = 0``, and ``A >= 0`` then forces ``A P' = 0``. Hence
        ``A = V B V^T`` with ``B`` (r x r) the optimum of the same problem for
        the data ``(X - mean) V``, the same ``M_S`` (``V^T M_S V``) and the same
        ``lambda`` (``1e-9 tr(M_S) / p`` with the original ``p``: ``tr(M_S)``
        is unchanged). Without the ridge (the paper's exact problem) the
        complement does not enter objective or constraint at all, and zero is
        the choice of minimal norm: ``||A||_F^2 = ||P A P||_F^2 + 2 ||P A P'||_F^2
        + ||P' A P'||_F^2``.

        What is returned. ``A v = 0`` and ``transform`` maps ``v`` to 0 for
        every ``v`` orthogonal to the span; ``components_`` has ``r`` rows
        (each in the span) instead of ``p``, and nothing ``p x p`` is formed
        (``metric_`` on first access). Cost: the thin SVD of the ``N x p`` centred data,
        ``O(N^2 p)``, then the solver on ``r <= N - 1`` features.
        """
        n, p = X64.shape
        mean = X64.mean(axis=0)
        _, sv, Vt = np.linalg.svd(X64 - mean, full_matrices=False)
        rank = int(np.count_nonzero(sv > sv[0] * max(n, p) * np.finfo(float).eps)) \
            if sv.size and sv[0] > 0 else 1
        V = Vt[:rank].T                                     # p x r orthonormal
        init = self.init
        if not isinstance(init, str):                       # a p x p metric: its P A P
            A0 = self._initial_metric(X64)
            init = V.T @ A0 @ V
        reduced = MMC(diagonal=False, max_iter=self.max_iter, tol=self.tol, init=init,
                      random_state=self.random_state, verbose=self.verbose)
        reduced._fit((X64 - mean) @ V, S, D, ridge_features=p)
        for name in ("n_iter_", "converged_", "objective_", "similar_", "dissimilar_"):
            setattr(self, name, getattr(reduced, name))
        L = reduced.components_ @ V.T                       # r x p, rows in the span
        # the sign rule of _fit (largest entry of each row positive), on the mapped rows
        big = np.abs(L).argmax(axis=1)
        L *= np.where(L[np.arange(L.shape[0]), big] < 0, -1.0, 1.0)[:, None]
        self.components_ = L
        self.metric_ = None                                 # p x p: formed on access

    def _fit_diagonal_wide(self, X64, S, D):
        """Diagonal ``A`` for wide data (``p > N``): ``_fit``'s problem with vectors only.

        A diagonal metric weighs coordinates, so there is no reduction to the
        span of the data; instead every ``p x p`` array of ``_fit`` is diagonal
        here and kept as a vector (``_fit`` forms them densely: five ``p^3``
        products, 3.2 GB each at p = 20000), and the solver is
        :func:`metriclust._core.mahalanobis.projected_gradient_diagonal`
        (``O(|D| p)`` a step, no Hessian). Same whitening (``diag M_S`` with the same
        ridge), start, certificate and scaling. ``components_`` keeps the rows of
        the positive weights only.
        """
        n, p = X64.shape
        with np.errstate(over="ignore", invalid="ignore"):
            m = scatter_diagonal(X64, S)
        if not np.all(np.isfinite(m)):
            raise InputError("X is too large: squared differences of similar pairs "
                             "overflow float64. Rescale X (MMC is scale invariant).")
        if not m.sum() > 0:
            raise InputError("The similar pairs have zero scatter (all pairs join "
                             "identical points); MMC's problem is unbounded.")
        m += _RIDGE * m.sum() / p
        sums = PairSums(X64 / np.sqrt(m), D, S)
        a0 = np.maximum(m * self._initial_weights(X64), 0.0)     # diag(W^-1 A0 W^-T)
        b, self.n_iter_, self.converged_ = projected_gradient_diagonal(
            sums, a0, self.max_iter, self.tol, self.verbose)
        if not self.converged_:
            warnings.warn(f"MMC did not reach tol={self.tol} in max_iter={self.max_iter} "
                          "iterations; increase max_iter.",
                          _with_sklearn_twin(ConvergenceWarning))
        w = np.sqrt(b / m)                                  # A = diag(w^2)
        w /= np.sqrt(max(np.sum(w * w * m), np.finfo(float).tiny))   # sum_S ||.||_A^2 = 1
        keep = np.flatnonzero(w > 0)
        self.components_ = np.zeros((keep.size, p))
        self.components_[np.arange(keep.size), keep] = w[keep]
        self.metric_ = None                                 # p x p: formed on access
        self.objective_ = float(PairSums(X64, D, S).diag(w * w, gradient=False,
                                                          hessian=False)[0])
        self.similar_, self.dissimilar_ = S, D

    def _initial_weights(self, X):
        """Diagonal of the starting metric without forming it (wide diagonal path)."""
        init, p = self.init, X.shape[1]
        if isinstance(init, str):
            if init == "identity":
                return np.ones(p)
            if init == "covariance":                        # diag of pinv(cov), thin SVD
                _, sv, Vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
                keep = sv > sv[0] * max(X.shape) * np.finfo(float).eps if sv.size else sv > 0
                return (X.shape[0] - 1) * np.einsum("kj,k->j", Vt[keep] ** 2,
                                                    1.0 / sv[keep] ** 2)
        return np.diag(self._initial_metric(X)).copy()

    def _fit(self, X, S, D, ridge_features=None, pair_sums=None):
        # X: float64, or float32 for diagonal A (whitened into float64 below)
        p = X.shape[1]
        # lambda's p: the caller's, when X holds coordinates in a subspace
        ridge_p = p if ridge_features is None else ridge_features
        with np.errstate(over="ignore", invalid="ignore"):
            # Diagonal A needs only diag(M_S) (whitening, ridge, scaling): O(|S| p), not p^2.
            M_S = np.diag(scatter_diagonal(X, S)) if self.diagonal else \
                scatter_of_pairs(X, S)
        if not np.all(np.isfinite(M_S)):
            raise InputError("X is too large: squared differences of similar pairs "
                             "overflow float64. Rescale X (MMC is scale invariant).")
        if not np.trace(M_S) > 0:
            raise InputError("The similar pairs have zero scatter (all pairs join "
                             "identical points); MMC's problem is unbounded.")
        M_S = M_S + (_RIDGE * np.trace(M_S) / ridge_p) * np.eye(p)

        # Whiten by M_S: <A, M_S> <= 1 becomes tr B <= 1 (full) or sum a <= 1 (diagonal).
        if self.diagonal:
            m = np.diag(M_S).copy()
        else:
            m, U = eigh_robust(M_S)
            m = np.maximum(m, 0.5 * _RIDGE * np.trace(M_S) / ridge_p)   # rounding guard
        W = np.diag(1.0 / np.sqrt(m)) if self.diagonal else U / np.sqrt(m)
        # pair_sums(W): the sums for data read block by block (_fit_all_pairs)
        if self.diagonal:   # W diagonal: scale the columns (float32 X: the one float64 copy)
            sums = (PairSums(X * (1.0 / np.sqrt(m)), D, S) if pair_sums is None
                    else pair_sums(W))
        else:
            W_inv = np.sqrt(m)[:, None] * U.T
            sums = PairSums(X @ W, D, S) if pair_sums is None else pair_sums(W)
            B0 = W_inv @ self._initial_metric(X) @ W_inv.T

        if self.diagonal:
            a0 = np.maximum(m * np.diag(self._initial_metric(X)), 0.0)   # diag(W^-1 A0 W^-T)
            b, self.n_iter_, self.converged_, h_b = newton_diagonal(
                sums, a0, self.max_iter, self.tol, self.verbose)
            Lt = np.diag(np.sqrt(b))
        else:
            B, self.n_iter_, self.converged_ = projected_gradient_full(
                sums, B0, self.max_iter, self.tol, self.verbose)
            lam, V = eigh_robust(B)
            Lt = psd_factor(lam, V)
        if not self.converged_:
            warnings.warn(f"MMC did not reach tol={self.tol} in max_iter={self.max_iter} "
                          "iterations; increase max_iter.",
                          _with_sklearn_twin(ConvergenceWarning))

        L = Lt.T @ W.T                                  # A = W B W^T = L^T L
        scale = np.sqrt(max(np.sum((L @ M_S) * L), np.finfo(float).tiny))
        L = L / scale                                   # sum_S ||.||_A^2 = 1
        # Deterministic signs (eigenvectors are defined up to sign): each row's
        # largest entry in absolute value is positive.
        big = np.abs(L).argmax(axis=1)
        L = L * np.where(L[np.arange(L.shape[0]), big] < 0, -1.0, 1.0)[:, None]
        self.components_ = np.zeros((p, p))
        self.components_[: L.shape[0]] = L
        self.metric_ = self.components_.T @ self.components_
        if self.diagonal:
            # h is 1/2-homogeneous and sum_D ||.||_A = h(b) / scale in the whitened
            # coordinates: the solver's last pass, not another one.
            self.objective_ = float(h_b / scale)
        else:
            self.objective_ = float(self._sum_d(X, S, D, pair_sums))
        self.similar_, self.dissimilar_ = S, D

    @property
    def metric_(self):
        # Wide data: A = L^T L is formed on first access only (p^2 floats: 3.2 GB and
        # an O(r p^2) product at p = 20000; transform and distances use components_).
        if "_metric" not in self.__dict__:
            raise AttributeError("'MMC' object has no attribute 'metric_'")
        if self._metric is None:
            self._metric = self.components_.T @ self.components_
        return self._metric

    @metric_.setter
    def metric_(self, value):
        self._metric = value

    # -- side information and initialization ------------------------------------
    def _side_information(self, X, y, similar, dissimilar):
        n = X.shape[0]
        if similar is None and dissimilar is None:
            if y is None:
                raise ValueError(
                    "MMC requires y to be passed, but the target y is None: give class "
                    "labels y or pairs similar=/dissimilar=.")
            return _pairs_from_y(y, n, self.random_state)
        if similar is None:
            raise ValueError("dissimilar pairs were given without similar pairs; "
                             "MMC needs similar (and optionally dissimilar) pairs.")
        S = check_pairs(similar, n, name="similar", allow_empty=False)
        D = None if dissimilar is None else check_pairs(dissimilar, n, name="dissimilar")
        return S, D

    def _initial_metric(self, X):
        p = X.shape[1]
        init = self.init
        if isinstance(init, str):
            if init == "identity":
                return np.eye(p)
            if init == "covariance":
                C = np.atleast_2d(np.cov(X, rowvar=False, dtype=np.float64))
                return np.linalg.pinv(C, hermitian=True)
            raise ValueError(f"init must be 'identity', 'covariance' or an array, got {init!r}.")
        A0 = check_array(init, name="init", ensure_2d=False, ensure_min_samples=p)
        if A0.ndim == 1 and self.diagonal and A0.shape == (p,):
            A0 = np.diag(A0)
        if A0.shape != (p, p):
            raise ValueError(f"init must have shape ({p}, {p}), got {A0.shape}.")
        A0 = 0.5 * (A0 + A0.T).astype(np.float64)
        lam = np.linalg.eigvalsh(A0)
        # Rounding of a PSD matrix gives eigenvalues down to ~-p eps |lam|_max.
        if lam[0] < -1e-10 * max(abs(lam[0]), abs(lam[-1])):
            raise ValueError("init must be positive semi-definite; its smallest "
                             f"eigenvalue is {lam[0]:.6g}.")
        if lam[-1] <= 0:
            raise ValueError("init must be positive semi-definite and non-zero.")
        return A0

    def _sum_d(self, X, S, D, pair_sums=None):
        sums = PairSums(X, D, S) if pair_sums is None else pair_sums(None)
        if self.diagonal:               # A = diag(a): the diagonal pass, no p x p product
            a = np.einsum("ij,ij->j", self.components_, self.components_)
            return sums.diag(a, gradient=False, hessian=False)[0]
        Lt = np.ascontiguousarray(self.components_.T)
        return sums.full(Lt, gradient=False)[0]

    # -- the learned space ------------------------------------------------------
    @property
    def _n_features_out(self):
        # columns of ``transform`` (for ``get_feature_names_out``)
        return self.components_.shape[0]

    def transform(self, X):
        """Map ``X`` into the learned space: ``X L^T`` (Euclidean there = ``d_A``)."""
        check_is_fitted(self, "components_")
        if is_dask_array(X):            # lazy, with X's row chunks
            from . import _dask   # lazy: Dask inputs only, ~35 ms of import
            X = _dask.check_dask_array(X)
            check_n_features(self, X)
            L = self.components_
            return _dask.affine_map(X, L.T, np.zeros(L.shape[0]))
        X = check_array(X)
        check_n_features(self, X)
        return X @ self.components_.T.astype(X.dtype)

    def pair_distances(self, X, pairs):
        """``d_A(x_i, x_j)`` for each row ``(i, j)`` of ``pairs`` (indices into X).

        A row ``(i, i)`` is a valid query; its distance is 0.
        """
        check_is_fitted(self, "components_")
        if is_dask_array(X):            # the rows of the pairs only
            from . import _dask   # lazy: Dask inputs only, ~35 ms of import
            X = _dask.check_dask_array(X)
            check_n_features(self, X)
            pairs = check_pairs(pairs, X.shape[0], allow_self=True)
            X, (pairs,) = _dask.pair_rows(X, [pairs])
        X = check_array(X)
        check_n_features(self, X)
        pairs = check_pairs(pairs, X.shape[0], allow_self=True)   # d_A(x_i, x_i) = 0
        return distances_of_pairs(X.astype(np.float64, copy=False), pairs,
                                  np.ascontiguousarray(self.components_.T))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True   # side information is needed
        return tags


def _pairs_from_y(y, n, random_state):
    """All labelled pairs split by class (or a sample when there are too many)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with {n} entries, got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    labelled = np.flatnonzero(y != -1)
    n_l = labelled.size
    if n_l * (n_l - 1) // 2 <= _MAX_LABEL_PAIRS:
        i, j = np.triu_indices(n_l, 1)
        i, j = labelled[i], labelled[j]
        same = y[i] == y[j]
        S = np.c_[i[same], j[same]].astype(np.int64)
        D = np.c_[i[~same], j[~same]].astype(np.int64)
    else:
        S, D = pairs_from_labels(y, 50_000, 50_000, random_state=random_state)
    if len(S) == 0:
        raise ValueError("y gives no similar pairs (no class has two labelled points).")
    return np.ascontiguousarray(S), np.ascontiguousarray(D)
