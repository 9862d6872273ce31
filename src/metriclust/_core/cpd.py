"""Closed-form Psi-step of CPD-UML, dense and low-rank.

Public classes and functions:

.. autosummary::

   DensePsiSolver       -- exact Psi-step (Cholesky of G^2 + lam I, rank-K Woodbury updates)
   LowRankPsiSolver     -- Psi-step on a Nystrom factor of G
   KernelPCA            -- RBF kernel-PCA coordinates (dense or Nystrom)
   indicator_products   -- Y^T A for a partition without forming Y
   objective            -- eq. (11) of a partition and moved points
   low_rank_coef        -- the m x m solve of the low-rank Psi-step
   cross_gram_matmat    -- g(A, B) V without storing the Gram matrix

Row form (one point a row): ``X`` is ``N x p``, ``G`` the ``N x N`` Gaussian Gram,
``Psi`` the ``N x p`` kernel weights, ``X1 = X + G Psi`` (paper eq. 3) and, for a
partition with normalized indicator ``Y`` (eq. 9) and projector ``P = I - Y Y^T``,

    J(Psi) = ||P X1||_F^2 + lam ||Psi||_F^2                              (eq. 11)

whose unique minimizer solves (row form of eq. 19/20)

    (G P G + lam I) Psi = -G P X.                                        (*)

Everything a partition contributes is ``K``-dimensional: ``Y Y^T X`` replaces each
row by its cluster mean, and ``Y^T A`` / ``A^T Y`` are per-cluster row sums of
``A`` divided by ``sqrt(n_k)`` -- one pass of the shared ``cluster_sums`` kernel,
never a dense ``Y``.

Solvers (each ``solve(labels, n_clusters) -> PsiStep``):

``DensePsiSolver``
    Exact. ``G P G + lam I = A - U U^T`` with ``A = G^2 + lam I`` (independent of
    the partition) and ``U = G Y`` (``N x K``). ``A`` is formed once (one SYRK)
    and Cholesky-factored in place; each iteration is then a rank-``K`` Woodbury
    correction, ``O(N^2 (p + K))`` instead of the ``O(N^3)`` solve per iteration
    of the paper's Algorithm 1.
``LowRankPsiSolver``
    ``G ~= Q diag(s) Q^T`` with ``Q`` orthonormal (``N x m``): ``Psi = Q C`` with
    ``C = -(S M S + lam I_m)^{-1} S Q^T R``, ``M = I - B B^T``, ``B = Q^T Y``,
    ``R = P X``; ``O(N m (p + K) + m^3)`` per iteration and no ``N x N`` array.
    A Nystrom factor ``G ~= U U^T`` is brought to this form once by
    ``orthonormalize_factor`` (``O(N m^2)``).
"""

from collections import namedtuple

import numpy as np

from .._kernels._sums import cluster_sums
from .gram import (Nystrom, centered_factor_eigenpairs, centered_gram_eigenpairs,
                   gram_matmat, orthonormalize_factor)
from .partition import within_ss
from .threads import blas_threads, effective_n_threads, single_blas_thread

__all__ = ["PsiStep", "DensePsiSolver", "LowRankPsiSolver", "low_rank_coef",
           "orthonormalize_factor",
           "indicator_products", "objective", "cross_gram_matmat",
           "KernelPCA"]

#: Result of one Psi-step: the weights, the moved points and ``||Psi||_F^2``.
PsiStep = namedtuple("PsiStep", ["psi", "X1", "psi_sq_norm"])


def _cholesky(A):
    """In-place lower Cholesky factor of the Fortran-ordered SPD ``A`` (for cho_solve).

    BLAS is held to one thread: OpenBLAS's threaded ``potrf`` was measured 30 to
    10^4 times slower than the serial one on this (shared, oversubscribed)
    2-core machine -- 8.4 s against 0.26 s at n = 2000, 0.8 s against 0.2 ms at
    n = 200 -- while serial ``potrf`` costs only ``n^3/3`` flops. (Tall-skinny
    products suffer too: ``U^T U`` for U of 10^6 x 100 took 19 s threaded
    against 1.4 s serial, so ``CPDUML.fit`` runs with serial BLAS throughout
    and only the large square SYRK below asks for threads.)
    """
    from scipy.linalg import cho_factor   # scipy.linalg on first fit, not on import
    with single_blas_thread():
        return cho_factor(A, lower=True, overwrite_a=True, check_finite=False)


def _syrk_lower(G):
    """Lower triangle of ``G^T G`` (Fortran order), with BLAS threads: the one
    large square product (``N^3`` flops), which does scale with threads."""
    from scipy.linalg.blas import dsyrk
    with blas_threads(effective_n_threads()):
        return dsyrk(1.0, G.T, lower=1)


def indicator_products(A, labels, n_clusters):
    """``Y^T A`` for the normalized indicator ``Y`` of ``labels`` (eq. 9).

    Returns ``(YtA, counts)`` where ``YtA`` has one row per *non-empty*
    cluster (an empty cluster has no column in ``Y``).
    """
    counts = np.bincount(labels, minlength=n_clusters)
    sums = cluster_sums(A, labels, n_clusters)
    keep = counts > 0
    return sums[keep] / np.sqrt(counts[keep])[:, None], counts


def objective(X1, labels, n_clusters, psi_sq_norm, lam):
    """J of eq. 11: within-cluster sum of squares of ``X1`` plus ``lam ||Psi||^2``.

    ``tr(X1^T X1) - tr(Y^T X1 X1^T Y) = ||X1||^2 - ||Y^T X1||^2`` for orthonormal
    ``Y``; evaluated as the sum of squared deviations from the cluster means
    (:func:`~metriclust._core.partition.within_ss`), which does not cancel.
    """
    return within_ss(X1, labels, n_clusters) + lam * float(psi_sq_norm)


class DensePsiSolver:
    """Exact Psi-step with a dense Gram: Cholesky of ``G^2 + lam I`` once.

    Parameters
    ----------
    G : ndarray (N, N), float64, C-contiguous, symmetric
        The Gaussian Gram matrix. Kept by reference (not copied).
    X : ndarray (N, p), float64
    lam : float
        Raw regularization (``> 0``).

    Notes
    -----
    ``A = G^2 + lam I`` is the only other ``N x N`` array: SYRK writes its lower
    triangle (``G`` is symmetric, so its transpose view is Fortran-ordered and
    BLAS reads it without a copy) and ``potrf`` factors it in place. Per
    partition, with ``U = G Y`` and ``b = -G R`` (``R = X - Y Y^T X``;
    ``G R = G X - U (Y^T X)`` with ``G X`` precomputed)::

        (A - U U^T)^{-1} b = A^{-1} b + A^{-1} U (I_K - U^T A^{-1} U)^{-1} U^T A^{-1} b

    The capacitance ``I_K - U^T A^{-1} U`` is SPD because ``A - U U^T >= lam I``.
    """

    def __init__(self, G, X, lam):
        n = G.shape[0]
        self.G, self.X, self.lam = G, X, float(lam)
        A = _syrk_lower(G)  # G^T G = G^2 (G symmetric): lower triangle, Fortran order
        A[np.diag_indices(n)] += self.lam
        try:
            self._chol = _cholesky(A)
        except np.linalg.LinAlgError:
            raise ValueError(
                f"G^2 + lam I is not numerically positive definite (raw lam={lam:.3g}); "
                "increase lam."
            ) from None
        self._GX = G @ X

    def solve(self, labels, n_clusters):
        """Psi minimizing eq. 13 for the partition ``labels`` (row form of eq. 20)."""
        G, X, p = self.G, self.X, self.X.shape[1]
        # U = G Y: G is symmetric, so column sums by cluster are row sums.
        UT, counts = indicator_products(G, labels, n_clusters)  # (K', N)
        YtX, _ = indicator_products(X, labels, n_clusters)      # (K', p)
        rhs = np.empty((G.shape[0], p + UT.shape[0]), order="F")
        rhs[:, :p] = UT.T @ YtX - self._GX                      # b = -G R
        rhs[:, p:] = UT.T
        from scipy.linalg import cho_solve
        Z = cho_solve(self._chol, rhs, overwrite_b=True, check_finite=False)
        Zb, ZU = Z[:, :p], Z[:, p:]
        cap = np.eye(UT.shape[0]) - UT @ ZU
        psi = Zb + ZU @ np.linalg.solve(cap, UT @ Zb)
        X1 = X + G @ psi
        return PsiStep(psi, X1, float(np.einsum("ij,ij->", psi, psi)))


class LowRankPsiSolver:
    """Psi-step with ``G ~= Q diag(s) Q^T`` (``Q`` orthonormal ``N x m``).

    Parameters
    ----------
    Q : ndarray (N, m), float64, C-contiguous, orthonormal columns
    s : ndarray (m,), nonnegative eigenvalues
    X : ndarray (N, p), float64
    lam : float
        Raw regularization (``> 0``).

    Notes
    -----
    With ``B = Q^T Y`` (``m x K``, per-cluster sums of ``Q``'s rows) and
    ``Q^T R = Q^T X - B (Y^T X)`` (``Q^T X`` precomputed), the system (*)
    restricted to ``span(Q)`` is the ``m x m`` SPD system
    ``(S (I - B B^T) S + lam I) C = -S Q^T R``; then ``Psi = Q C``,
    ``X1 = X + Q (S C)`` and ``||Psi||^2 = ||C||^2``. ``Psi`` itself is only
    formed on request (``psi=Q C``, ``O(N m p)``).
    """

    def __init__(self, Q, s, X, lam):
        self.Q, self.s, self.X, self.lam = Q, np.asarray(s, dtype=np.float64), X, float(lam)
        self._QtX = Q.T @ X

    def solve_coef(self, labels, n_clusters):
        """The ``m x p`` coefficients ``C`` (``Psi = Q C``) for ``labels``."""
        BT, _ = indicator_products(self.Q, labels, n_clusters)   # (K', m)
        YtX, _ = indicator_products(self.X, labels, n_clusters)
        return low_rank_coef(self.s, self._QtX, BT, YtX, self.lam)

    def solve(self, labels, n_clusters):
        """``PsiStep`` for ``labels``; ``psi`` is the coefficient matrix ``C``."""
        C = self.solve_coef(labels, n_clusters)
        X1 = self.X + self.Q @ (self.s[:, None] * C)
        return PsiStep(C, X1, float(np.einsum("ij,ij->", C, C)))


def low_rank_coef(s, QtX, BT, YtX, lam):
    """``C = -(S (I - B B^T) S + lam I)^{-1} S Q^T R`` from the small products alone.

    ``s`` (m,), ``QtX = Q^T X`` (m x p), ``BT = Y^T Q`` (K' x m), ``YtX = Y^T X``
    (K' x p): the whole low-rank Psi-step once the ``N``-long sums are reduced
    (in memory by :class:`LowRankPsiSolver`, block by block by
    :mod:`metriclust._core.cpd_blockwise`).
    """
    QtR = QtX - BT.T @ YtX
    H = np.eye(len(s)) - BT.T @ BT
    H *= s[:, None]
    H *= s[None, :]
    H[np.diag_indices(len(s))] += lam
    from scipy.linalg import cho_solve
    return -cho_solve(_cholesky(H), s[:, None] * QtR, overwrite_b=True, check_finite=False)


def cross_gram_matmat(A, B, V, *, sigma):
    """``g(A, B) @ V`` (Gaussian cross Gram) by the shared ``gram_matmat``:
    ``g(A, B)`` is never stored whole."""
    return gram_matmat(A, V, sigma=sigma, Y=B)


class KernelPCA:
    """RBF kernel PCA for the kernel version of CPD-UML (paper section 2.4).

    Exact (``landmarks=None``: eigenpairs of the doubly centered ``N x N`` Gram)
    or Nystrom (``landmarks=m``: PCA of the centered rank-``m`` Nystrom features,
    ``O(N m^2)``). ``transform`` maps new points through the same projection.
    """

    def __init__(self, n_components, *, sigma, landmarks=None, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.landmarks = landmarks
        self.random_state = random_state

    def fit_transform(self, X):
        n = X.shape[0]
        if self.landmarks is None:
            vals, vecs, self.col_mean_, self.all_mean_ = centered_gram_eigenpairs(
                X, sigma=self.sigma, n_components=self.n_components)
            self.X_fit_ = X
            self.projection_ = vecs / np.sqrt(vals)
            return np.ascontiguousarray(vecs * np.sqrt(vals))
        nys = Nystrom(min(self.landmarks, n), sigma=self.sigma,
                      random_state=self.random_state).fit(X)
        U = nys.factor_
        mean, vals, vecs = centered_factor_eigenpairs(U)
        k = min(self.n_components, vals.size)
        # z(x) = (u(x) - mean) V_k with u(x) = g(x, L) N_L: one cross-Gram product
        self.landmarks_ = nys.landmarks_
        self.projection_ = nys.normalization_ @ vecs[:, :k]
        self.offset_ = mean @ vecs[:, :k]
        return np.ascontiguousarray(U @ vecs[:, :k])

    def transform(self, X):
        if self.landmarks is None:
            P, n = self.projection_, self.X_fit_.shape[0]
            # centered cross kernel k(x, X) - col_mean - mean_j k(x, x_j) + all_mean,
            # times P; the row mean rides along as one extra column (one Gram pass).
            KP = cross_gram_matmat(X, self.X_fit_, np.hstack([P, np.full((n, 1), 1.0 / n)]),
                                   sigma=self.sigma)
            Kx, row_mean = KP[:, :-1], KP[:, -1:]
            colsum = P.sum(axis=0)
            Kx -= (self.col_mean_ @ P)[None, :]
            Kx -= row_mean * colsum[None, :]
            Kx += self.all_mean_ * colsum[None, :]
            return Kx
        return cross_gram_matmat(X, self.landmarks_, self.projection_,
                                 sigma=self.sigma) - self.offset_
