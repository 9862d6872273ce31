"""MMC: Mahalanobis metric learning from side information (Xing, Ng, Jordan & Russell 2003).

The paper's problem (SPEC 1, the paper's eq. (2)-(4))::

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
so the relative gap bounds the distance of J to its optimum.

Diagonal A (the paper's Sec. 2.1, eq. (6)): Newton-Raphson on
``g(a) = sum_S ||.||_a^2 - log(sum_D ||.||_a)``, ``a >= 0``, as a projected
Newton method (Bertsekas 1982): variables at the bound with a positive gradient
are held, a Newton step on the rest, and an Armijo search along the projection
arc ``max(a + t d, 0)``.

References
----------
E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning, with
application to clustering with side-information. NIPS 15, 2003.
"""

import numbers
import warnings

import numpy as np

from ._core.base import BaseEstimator, TransformerMixin, check_is_fitted
from ._core.pairsums import PairSums, scatter_of_pairs
from ._core.threads import single_blas_thread
from ._core.psd import eigh_robust, project_capped_simplex, project_spectraplex, psd_factor
from ._core.validation import (check_array, check_n_features, check_pairs, check_random_state,
                                check_scalar)

__all__ = ["MMC"]

# Tikhonov term: the constraint is <A, M_S + lambda I> <= 1 with
# lambda = _RIDGE * tr(M_S) / p. A singular M_S (fewer similar pairs than
# features, constant features) makes the paper's problem unbounded along its
# null space; this keeps it bounded and changes J by ~1e-9 relative otherwise.
_RIDGE = 1e-9
# Labelled pairs used as they are up to this count; beyond it, sampled.
_MAX_LABEL_PAIRS = 200_000
# Iterations over which the objective-change stopping rule looks back.
_WINDOW = 20


class ConvergenceWarning(UserWarning):
    """MMC stopped at ``max_iter`` before its stopping rule was met."""


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
        or (full A) when J rose by less than ``tol / 10`` (relative) over the last
        20 iterations: at non-smooth optima (rank-deficient A with dissimilar
        pairs at distance ~0) the bound stays loose while J creeps (e.g. iris with
        little side information: bound 4e-6 after 30 iterations, J changing by
        1e-10 per iteration).
    init : {"identity", "covariance"} or ndarray, default="identity"
        Starting metric: the identity, the inverse covariance of ``X``, or a
        ``(p, p)`` PSD matrix (``(p,)`` vector of weights allowed when diagonal).
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
    converged_ : bool
    n_features_in_ : int
    similar_, dissimilar_ : ndarray (m, 2)
        The pairs used; ``dissimilar_`` is None for "all pairs not in S".

    Notes
    -----
    Side information: ``fit(X, similar=S)`` uses all pairs not in S as D (never
    materialized: the Laplacian form of SPEC 1.3); ``fit(X, similar=S,
    dissimilar=D)`` uses both lists. ``fit(X, y)`` with class labels (-1 =
    unlabelled) builds the pairs among labelled points: every same-class pair is
    similar and every different-class pair dissimilar when there are at most
    200,000 labelled pairs; otherwise 50,000 of each are drawn at random
    (:func:`metriclust.constraints.pairs_from_labels`). ``fit(X)`` without any
    side information raises ``ValueError``.

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

    def __init__(self, diagonal=False, max_iter=1000, tol=1e-6, init="identity",
                 random_state=None, verbose=0):
        self.diagonal = diagonal
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, similar=None, dissimilar=None):
        """Learn ``A`` from pairs (``similar``/``dissimilar``) or class labels ``y``."""
        check_scalar(self.max_iter, "max_iter", numbers.Integral, min_val=1)
        check_scalar(self.tol, "tol", numbers.Real, min_val=0)
        check_scalar(self.verbose, "verbose", (numbers.Integral, bool))
        check_random_state(self.random_state)  # fail on a bad value even if no draw is made
        X = check_array(X, ensure_min_samples=2)
        p = X.shape[1]
        self.n_features_in_ = p
        X64 = X.astype(np.float64, copy=False)
        S, D = self._side_information(X64, y, similar, dissimilar)
        with single_blas_thread():     # the OpenMP kernels call BLAS themselves
            if p > X64.shape[0]:        # wide data: nothing p x p
                (self._fit_diagonal_wide if self.diagonal else self._fit_in_span)(X64, S, D)
            else:
                self._fit(X64, S, D)
        return self

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
        :func:`_projected_gradient_diagonal` (``O(|D| p)`` a step, no Hessian). Same
        whitening (``diag M_S`` with the same ridge), start, certificate and
        scaling. ``components_`` keeps the rows of the positive weights only.
        """
        n, p = X64.shape
        with np.errstate(over="ignore", invalid="ignore"):
            m = np.zeros(p)
            for a in range(0, len(S), 4096):              # diag(M_S) = sum_S (x_i - x_j)^2
                d = X64[S[a:a + 4096, 0]] - X64[S[a:a + 4096, 1]]
                m += np.einsum("ij,ij->j", d, d)
        if not np.all(np.isfinite(m)):
            raise ValueError("X is too large: squared differences of similar pairs "
                             "overflow float64. Rescale X (MMC is scale invariant).")
        if not m.sum() > 0:
            raise ValueError("The similar pairs have zero scatter (all pairs join "
                             "identical points); MMC's problem is unbounded.")
        m += _RIDGE * m.sum() / p
        sums = PairSums(X64 / np.sqrt(m), D, S)
        a0 = np.maximum(m * self._initial_weights(X64), 0.0)     # diag(W^-1 A0 W^-T)
        b, self.n_iter_, self.converged_ = _projected_gradient_diagonal(
            sums, a0, self.max_iter, self.tol, self.verbose)
        if not self.converged_:
            warnings.warn(f"MMC did not reach tol={self.tol} in max_iter={self.max_iter} "
                          "iterations; increase max_iter.", ConvergenceWarning)
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

    def _fit(self, X64, S, D, ridge_features=None):
        p = X64.shape[1]
        # lambda's p: the caller's, when X64 holds coordinates in a subspace
        ridge_p = p if ridge_features is None else ridge_features
        with np.errstate(over="ignore", invalid="ignore"):
            M_S = scatter_of_pairs(X64, S)
        if not np.all(np.isfinite(M_S)):
            raise ValueError("X is too large: squared differences of similar pairs "
                             "overflow float64. Rescale X (MMC is scale invariant).")
        if not np.trace(M_S) > 0:
            raise ValueError("The similar pairs have zero scatter (all pairs join "
                             "identical points); MMC's problem is unbounded.")
        M_S = M_S + (_RIDGE * np.trace(M_S) / ridge_p) * np.eye(p)

        # Whiten by M_S: <A, M_S> <= 1 becomes tr B <= 1 (full) or sum a <= 1 (diagonal).
        if self.diagonal:
            m = np.diag(M_S).copy()
        else:
            m, U = eigh_robust(M_S)
            m = np.maximum(m, 0.5 * _RIDGE * np.trace(M_S) / ridge_p)   # rounding guard
        W = np.diag(1.0 / np.sqrt(m)) if self.diagonal else U / np.sqrt(m)
        W_inv = np.diag(np.sqrt(m)) if self.diagonal else np.sqrt(m)[:, None] * U.T
        sums = PairSums(X64 @ W, D, S)
        B0 = W_inv @ self._initial_metric(X64) @ W_inv.T

        if self.diagonal:
            a0 = np.maximum(np.diag(B0), 0.0)
            b, self.n_iter_, self.converged_ = _newton_diagonal(
                sums, a0, self.max_iter, self.tol, self.verbose)
            Lt = np.diag(np.sqrt(b))
        else:
            B, self.n_iter_, self.converged_ = _projected_gradient_full(
                sums, B0, self.max_iter, self.tol, self.verbose)
            lam, V = eigh_robust(B)
            Lt = psd_factor(lam, V)
        if not self.converged_:
            warnings.warn(f"MMC did not reach tol={self.tol} in max_iter={self.max_iter} "
                          "iterations; increase max_iter.", ConvergenceWarning)

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
        self.objective_ = float(self._sum_d(X64, S, D))
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
                C = np.atleast_2d(np.cov(X, rowvar=False))
                return np.linalg.pinv(C, hermitian=True)
            raise ValueError(f"init must be 'identity', 'covariance' or an array, got {init!r}.")
        A0 = check_array(init, name="init", ensure_2d=False, ensure_min_samples=p)
        if A0.ndim == 1 and self.diagonal and A0.shape == (p,):
            A0 = np.diag(A0)
        if A0.shape != (p, p):
            raise ValueError(f"init must have shape ({p}, {p}), got {A0.shape}.")
        A0 = 0.5 * (A0 + A0.T).astype(np.float64)
        if np.linalg.eigvalsh(A0)[-1] <= 0:
            raise ValueError("init must be positive semi-definite and non-zero.")
        return A0

    def _sum_d(self, X, S, D):
        Lt = np.ascontiguousarray(self.components_.T)
        return PairSums(X, D, S).full(Lt, gradient=False)[0]

    # -- the learned space ------------------------------------------------------
    def transform(self, X):
        """Map ``X`` into the learned space: ``X L^T`` (Euclidean there = ``d_A``)."""
        check_is_fitted(self, "components_")
        X = check_array(X)
        check_n_features(self, X)
        return X @ self.components_.T.astype(X.dtype)

    def pair_distances(self, X, pairs):
        """``d_A(x_i, x_j)`` for each row ``(i, j)`` of ``pairs`` (indices into X)."""
        check_is_fitted(self, "components_")
        X = check_array(X)
        check_n_features(self, X)
        pairs = check_pairs(pairs, X.shape[0])
        from ._kernels._pairwise import pairs_full
        _, _, dist = pairs_full(X.astype(np.float64, copy=False), pairs,
                                np.ascontiguousarray(self.components_.T),
                                gradient=False, distances=True)
        return dist

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True   # side information is needed
        return tags


def _pairs_from_y(y, n, random_state):
    """All labelled pairs split by class (or a sample when there are too many)."""
    from .constraints import pairs_from_labels

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


def _duality_gap(lam_max, h):
    """Relative gap: ``h* <= lam_max(grad h) + h/2`` on ``{tr B <= 1}`` (module docstring)."""
    return (lam_max + 0.5 * h - h) / h


def _projected_gradient_full(sums, B0, max_iter, tol, verbose, memory=10):
    """Maximize ``h(B) = sum_D ||e||_B`` over ``{B >= 0, tr B <= 1}`` (SPG)."""
    B, lam, V = project_spectraplex(B0 / max(np.trace(B0), np.finfo(float).tiny))
    h, G = sums.full(psd_factor(lam, V))
    if not h > 0:                       # no dissimilar pair has positive length
        return B, 0, True
    step = 1.0 / np.linalg.norm(G)
    history = [h]
    best = (h, B)                       # the search is non-monotone: keep the best
    upper = np.inf
    for it in range(1, max_iter + 1):
        upper = min(upper, np.linalg.eigvalsh(G)[-1] + 0.5 * h)   # weak duality
        gap = (upper - best[0]) / best[0]
        if verbose:
            print(f"MMC iter {it:4d}  sum_D = {h:.10g}  rel. gap <= {gap:.3e}")
        if gap <= tol:
            return best[1], it - 1, True
        # Objective-change rule: at a non-smooth optimum (D pairs at distance ~0 under
        # a rank-deficient A) the bound above stays loose while J has converged.
        if (len(history) > _WINDOW
                and max(history) - max(history[:-_WINDOW]) <= 0.1 * tol * max(history)):
            return best[1], it - 1, True
        # Projection of the gradient step onto C1 ∩ C2 (exact; one eigendecomposition).
        P, lamP, VP = project_spectraplex(B + step * G)
        direction = P - B
        slope = np.sum(G * direction)
        if not slope > 1e-15 * h:       # no ascent direction left at machine precision
            return best[1], it, True
        ref, t = min(history[-memory:]), 1.0
        while True:                     # non-monotone Armijo search along B + t (P - B)
            if t == 1.0:
                Bn, Lt = P, psd_factor(lamP, VP)
            else:
                Bn = B + t * direction
                Lt = psd_factor(*eigh_robust(Bn))
            hn, Gn = sums.full(Lt)
            if hn >= ref + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s, g_diff = Bn - B, Gn - G
        curvature = -np.sum(s * g_diff)     # h is concave: curvature >= 0
        step = np.sum(s * s) / curvature if curvature > 0 else 10.0 * step
        step = min(max(step, 1e-12 / np.linalg.norm(Gn)), 1e12 / np.linalg.norm(Gn))
        if hn - h <= 1e-15 * abs(h) and t < 1e-12:
            return best[1], it, False    # stalled: the search found no increase
        B, h, G = Bn, hn, Gn
        history.append(h)
        if h > best[0]:
            best = (h, B)
    return best[1], max_iter, False


def _projected_gradient_diagonal(sums, a0, max_iter, tol, verbose, memory=10):
    """Maximize ``h(a) = sum_D sqrt(a . v)`` over ``{a >= 0, sum a <= 1}`` (wide data).

    The diagonal problem of :func:`_newton_diagonal` in the form the full
    solver uses (:func:`_projected_gradient_full`, with the capped simplex in
    place of the spectraplex): spectral projected gradient, gradients only,
    ``O(|D| p + p log p)`` a step and no ``p x p`` array. Newton forms and
    factors the ``p x p`` Hessian every step (80 s a step at 96 x 4026 on the
    shared 2-core machine). Certified stop: ``h* <= max(grad h) + h / 2``
    (weak duality, as for the full metric), so the relative gap bounds
    ``(J* - J) / J``; or the full solver's objective-change rule.
    """
    a = project_capped_simplex(a0 / max(a0.sum(), np.finfo(float).tiny))
    h, g = sums.diag(a, gradient=True, hessian=False)[:2]
    if not h > 0:
        return a, 0, True
    step = 1.0 / np.linalg.norm(g)
    history = [h]
    best = (h, a)
    upper = np.inf
    for it in range(1, max_iter + 1):
        upper = min(upper, np.max(g) + 0.5 * h)                     # weak duality
        gap = (upper - best[0]) / best[0]
        if verbose:
            print(f"MMC-diag iter {it:4d}  sum_D = {h:.10g}  rel. gap <= {gap:.3e}")
        if gap <= tol:
            return best[1], it - 1, True
        if (len(history) > _WINDOW
                and max(history) - max(history[:-_WINDOW]) <= 0.1 * tol * max(history)):
            return best[1], it - 1, True
        direction = project_capped_simplex(a + step * g) - a
        slope = float(g @ direction)
        if not slope > 1e-15 * h:
            return best[1], it, True
        ref, t = min(history[-memory:]), 1.0
        while True:                     # non-monotone Armijo search along a + t d
            an = a + t * direction
            hn, gn = sums.diag(an, gradient=True, hessian=False)[:2]
            if hn >= ref + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s_, y_ = an - a, gn - g
        curvature = -float(s_ @ y_)     # h is concave
        step = float(s_ @ s_) / curvature if curvature > 0 else 10.0 * step
        step = min(max(step, 1e-12 / np.linalg.norm(gn)), 1e12 / np.linalg.norm(gn))
        if hn - h <= 1e-15 * abs(h) and t < 1e-12:
            return best[1], it, False
        a, h, g = an, hn, gn
        history.append(h)
        if h > best[0]:
            best = (h, a)
    return best[1], max_iter, False


def _newton_diagonal(sums, a0, max_iter, tol, verbose):
    """Minimize ``g(a) = sum(a) - log h(a)``, ``a >= 0`` (whitened: ``s = 1``)."""
    p = a0.size
    a = a0 / a0.sum() if a0.sum() > 0 else np.full(p, 1.0 / p)

    def g_of(a):
        h = sums.diag(a, gradient=False, hessian=False)[0]
        return a.sum() - np.log(h) if h > 0 else np.inf

    h, gh, H = sums.diag(a)
    if not h > 0:
        return a, 0, True
    for it in range(1, max_iter + 1):
        # Certificate at the normalized point a / sum(a) (h is 1/2-homogeneous).
        c = a.sum()
        gap = (np.max(gh) * np.sqrt(c) - 0.5 * h / np.sqrt(c)) / (h / np.sqrt(c))
        grad = 1.0 - gh / h                                  # grad g  (SPEC 1.1)
        hess = H / h + np.outer(gh, gh) / h**2               # hess g
        if verbose:
            print(f"MMC-diag iter {it:4d}  g = {c - np.log(h):.12g}  rel. gap <= {gap:.3e}")
        if gap <= tol:
            return a, it - 1, True
        # Bertsekas' projected Newton: hold bound variables pushed outward.
        eps = min(1e-12 * a.max() + 0.0, np.linalg.norm(a - np.maximum(a - grad, 0)))
        held = (a <= eps) & (grad > 0)
        free = ~held
        d = np.zeros(p)
        lam, V = eigh_robust(hess[np.ix_(free, free)])
        lam = np.maximum(lam, 1e-12 * max(lam.max(), np.finfo(float).tiny))
        d[free] = -V @ ((V.T @ grad[free]) / lam)
        d[held] = -grad[held]
        g0, t = c - np.log(h), 1.0
        noise = 8 * np.finfo(float).eps * (abs(g0) + 1)   # rounding level of g
        while True:                       # Armijo along the projection arc
            an = np.maximum(a + t * d, 0.0)
            gn = g_of(an)
            if gn <= g0 + 1e-4 * grad @ (an - a) + noise or t < 1e-14:
                break
            t *= 0.5
        if gn > g0 + noise:               # no decrease even for tiny steps
            return a, it, gap <= 10 * tol
        a = an
        h, gh, H = sums.diag(a)
    return a, max_iter, False
