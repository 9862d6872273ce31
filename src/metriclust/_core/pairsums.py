"""The pairwise-constraint sums of MMC over a dissimilar set D (Xing et al. 2003, Sec. 2).

Public classes and functions:

.. autosummary::

   PairSums            -- sums over pairs of h, its gradient and Hessian
   all_but_similar     -- full-metric sums over all pairs not in S: all pairs' less S's
   unique_pairs        -- unordered pairs without duplicates
   scatter_of_pairs    -- scatter of pair differences through the pair graph's Laplacian
   distances_of_pairs  -- ``||(x_i - x_j) L^T||`` for each pair (the full pair kernel)
   min_parallel_work   -- work (flops) under which the pair kernels stay on one thread

``PairSums`` hides whether D is an explicit list of pairs or *all pairs not in
S*: the latter uses the Laplacian form ``X^T (diag(W 1) - W) X`` (row tiles,
no N x N storage) and subtracts S's own terms. Explicit pairs read float32 data
as they are (the kernels widen each value as they read it and sum in float64:
the sums of ``E.astype(np.float64)`` without the copy); the Laplacian forms and
the full-A solver work on a float64 copy. The kernels call BLAS from inside their OpenMP
region: callers hold BLAS to one thread around a solve (``single_blas_thread``),
once, not per call (threadpoolctl costs milliseconds per entry).
"""

import numpy as np

from .._kernels import _mmc, _pairwise
from .threads import effective_n_threads

__all__ = ["PairSums", "distances_of_pairs", "min_parallel_work", "scatter_of_pairs",
           "unique_pairs"]


def unique_pairs(pairs):
    """Unordered pairs without duplicates, as (min, max) rows sorted."""
    if len(pairs) == 0:
        return np.empty((0, 2), dtype=np.int64)
    p = np.sort(pairs, axis=1)
    return np.ascontiguousarray(np.unique(p, axis=0), dtype=np.int64)


def scatter_of_pairs(X, pairs):
    """``M = sum_k (x_i - x_j)(x_i - x_j)^T`` through the pair graph's Laplacian.

    ``M = X^T (diag(deg) - Adj) X`` with the (multi)graph of the pairs, so the
    pair differences are never materialized: O(m p + N p^2). ``Adj X`` is
    summed column by column with ``np.bincount`` (no scipy.sparse import in a
    fresh process; ``np.add.at`` is 50x slower).
    """
    n, p = X.shape
    if len(pairs) == 0:
        return np.zeros((p, p))
    ends = np.concatenate([pairs[:, 0], pairs[:, 1]])
    others = np.concatenate([pairs[:, 1], pairs[:, 0]])
    deg = np.bincount(ends, minlength=n)
    XT = np.ascontiguousarray(X.T)
    adj_xt = np.empty_like(XT)
    for c in range(p):
        adj_xt[c] = np.bincount(ends, weights=XT[c, others], minlength=n)
    M = (deg * XT - adj_xt) @ X
    return 0.5 * (M + M.T)


def distances_of_pairs(X, pairs, Lt):
    """``||(x_i - x_j) L^T||`` for each row ``(i, j)`` of ``pairs`` (float64 X, ``Lt = L^T``).

    The full pair kernel's distances only (no sums, no gradient); a row
    ``(i, i)`` gives 0.
    """
    _, _, dist = _pairwise.pairs_full(X, pairs, Lt, gradient=False, distances=True)
    return dist


def min_parallel_work():
    """Work (``2 m p^2`` flops for m pairs) up to which the pair kernels run on one
    thread: callers skip limiting BLAS's threads (``single_blas_thread``) there."""
    return _pairwise.MIN_PARALLEL_WORK


# A pair is "close" when |x_i|^2 + |x_j|^2 > _CLOSE |x_i - x_j|^2 (centred data).
_CLOSE = 64.0


def _close_pairs(E, pairs, chunk=8192):
    """Mask of the close pairs (see ``_CLOSE``), in chunks of ``chunk`` pairs."""
    norms = np.einsum("ij,ij->i", E, E)
    close = np.empty(len(pairs), dtype=bool)
    for k in range(0, len(pairs), chunk):
        i, j = pairs[k:k + chunk, 0], pairs[k:k + chunk, 1]
        diff = E[i] - E[j]
        close[k:k + chunk] = norms[i] + norms[j] > _CLOSE * np.einsum("ij,ij->i", diff, diff)
    return close


def all_but_similar(h, G, E, similar, Lt, gradient, zero_pairs, n_threads):
    """``full``'s return for D = all pairs not in S: the all-pairs sums ``(h, G)``
    less those of the similar pairs (rows of E). No zero pairs are searched for
    over all pairs: ``(G_zero, n_zero) = (None, 0)`` with ``zero_pairs``."""
    hs, Gs, _ = _pairwise.pairs_full(E, similar, Lt, gradient, n_threads=n_threads)
    if zero_pairs:
        return h - hs, G - Gs, None, 0
    return h - hs, (G - Gs if gradient else None)


class PairSums:
    """h, gradient and Hessian sums over D for a full or diagonal metric.

    Parameters
    ----------
    E : ndarray (n, p), float64
        The data (in whatever coordinates the solver works in).
    dissimilar : ndarray (m, 2) or None
        Explicit D, or None for all pairs not in ``similar``.
    similar : ndarray (k, 2)
        S; used only when ``dissimilar`` is None.
    """

    def __init__(self, E, dissimilar, similar, n_threads=None):
        self.implicit = dissimilar is None
        self.n_threads = effective_n_threads(n_threads)
        if E.dtype != np.float32 or self.implicit:
            E = np.asarray(E, dtype=np.float64)
        if self.implicit:
            # Centre: the Laplacian form is translation invariant, GEMM distances are not.
            self.E = np.ascontiguousarray(E - E.mean(axis=0))
            self.S = unique_pairs(similar)
        else:
            D = np.ascontiguousarray(dissimilar, dtype=np.int64)
            self.D = D
            n, p = E.shape
            self.laplacian = p >= 8 and len(D) > 4 * n
            if self.laplacian:
                E = np.asarray(E, dtype=np.float64)
                # Many pairs on few points: G = X^T L_w X through the weighted pair
                # graph's Laplacian, O(n p^2) instead of O(m p^2) per pass. Its
                # rounding error grows with |x_i|^2 / |x_i - x_j|^2 (the terms
                # w x_i x_i^T cancel), so close pairs (ratio > _CLOSE) stay with the
                # direct kernel and the rest have errors within _CLOSE of it.
                E = E - E.mean(axis=0)
                close = _close_pairs(E, D)
                self.D_far = np.ascontiguousarray(D[~close])
                self.D_close = np.ascontiguousarray(D[close])
            self.E = np.ascontiguousarray(E)

    def full(self, Lt, gradient=True, zero_pairs=False):
        """``h = sum_D ||d L^T||`` and ``G = sum_D d d^T / (2 ||d L^T||)``.

        Pairs at distance 0 are left out of G; with ``zero_pairs`` the result
        also holds ``(G_zero, n_zero)``, the sum of ``d d^T / 2`` and the count
        over D's pairs with ``d L^T = 0`` but ``d != 0``. For D = all pairs not
        in S they are not searched for (N^2 / 2 pairs): ``(None, 0)``.
        """
        Lt = np.ascontiguousarray(Lt, dtype=np.float64)
        if not self.implicit and not self.laplacian:
            out = _pairwise.pairs_full(self.E, self.D, Lt, gradient,
                                       n_threads=self.n_threads, zero_pairs=zero_pairs)
            return (out[0], out[1], out[3], out[4]) if zero_pairs else out[:2]
        if not self.implicit:
            E = self.E
            h, wdeg, T, _, Gz, n_zero = _pairwise.pairs_laplacian(
                E, np.ascontiguousarray(E @ Lt), self.D_far, zero_pairs=zero_pairs)
            out = _pairwise.pairs_full(E, self.D_close, Lt, gradient,
                                       n_threads=self.n_threads, zero_pairs=zero_pairs)
            G = None
            if gradient:
                G = (E * wdeg[:, None]).T @ E - E.T @ T
                G = 0.5 * (G + G.T) + out[1]
            if zero_pairs:
                return h + out[0], G, Gz + out[3], n_zero + out[4]
            return h + out[0], G
        Y = np.ascontiguousarray(self.E @ Lt)
        h, G = _pairwise.allpairs_full(self.E, Y, n_threads=self.n_threads)
        return all_but_similar(h, G, self.E, self.S, Lt, gradient, zero_pairs, self.n_threads)

    def full_solver(self, **settings):
        """MMC's full-A projected-gradient loop in C over these pairs.

        A :class:`metriclust._kernels._mmc.FullSPG` in the form ``full`` uses
        (direct kernel, Laplacian form, or all pairs not in S); ``settings``
        are its keyword arguments (``max_iter``, ``tol``, ...).
        """
        if self.E.dtype != np.float64:     # the solver works on float64 (direct form)
            self.E = np.ascontiguousarray(self.E, dtype=np.float64)
        if self.implicit:
            return _mmc.FullSPG(self.E, "allpairs", self.S, n_threads=self.n_threads,
                                **settings)
        if self.laplacian:
            return _mmc.FullSPG(self.E, "laplacian", self.D_far, self.D_close,
                                n_threads=self.n_threads, **settings)
        return _mmc.FullSPG(self.E, "direct", self.D, n_threads=self.n_threads, **settings)

    def diag(self, a, gradient=True, hessian=True, zero_pairs=False):
        """``h = sum_D sqrt(a . v)``, ``grad h``, and ``H = -hess h`` (Xing et al. 2003, Sec. 2.1).

        Pairs at distance 0 are left out of ``grad`` and ``H``; with
        ``zero_pairs`` the result also holds ``(grad_zero, n_zero)``, the sum of
        ``v / 2`` and the count over D's pairs with ``a . v = 0`` but ``v != 0``.
        """
        a = np.ascontiguousarray(a, dtype=np.float64)
        if not self.implicit:
            return _pairwise.pairs_diag(self.E, self.D, a, gradient, hessian,
                                        n_threads=self.n_threads, zero_pairs=zero_pairs)
        out = _pairwise.pairs_diag(self.E, None, a, gradient, hessian,
                                   n_threads=self.n_threads, zero_pairs=zero_pairs)
        out_s = _pairwise.pairs_diag(self.E, self.S, a, gradient, hessian,
                                     n_threads=self.n_threads, zero_pairs=zero_pairs)
        return tuple(None if x is None else x - xs for x, xs in zip(out, out_s))
