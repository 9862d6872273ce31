"""Bridge to csrc/pairwise.c: the pairwise-constraint sums of MMC (Xing et al. 2003, Sec. 2).

Public classes and functions:

.. autosummary::

   pairs_full       -- explicit pairs, full metric ``A = L^T L``: h, G, distances
   pairs_laplacian  -- explicit pairs, full metric, through the pair graph's Laplacian
   pairs_diag       -- explicit or all pairs, diagonal metric: h, gradient, Hessian
   allpairs_full    -- all pairs i < j of one block, full metric, Laplacian form
   crosspairs_full  -- every pair across two blocks, full metric, Laplacian form

Every function takes float64 C-contiguous arrays; ``pairs_full`` and
``pairs_diag`` take a float32 X as well (read and widened as it is read: the
sums, in float64, are those of ``X.astype(np.float64)``, without the copy). Each
checks shapes and index ranges before any pointer is touched, releases the GIL
and returns new arrays. BLAS comes from scipy as function pointers; callers
hold BLAS to one thread (``single_blas_thread``) because the kernels call it
from inside their OpenMP region.
"""

import numpy as np

from cython cimport floating
from libc.stdint cimport int64_t
from metriclust._kernels._blas cimport dgemm, dsyrk
from metriclust._kernels._common cimport ml_dgemm_fn
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status

cdef extern from "pairwise.h" nogil:
    double ML_MIN_PARALLEL_WORK
    int ML_PAIRS_DIAG_GEMM_MIN_P
    int ML_GRAM_DIRECT_MAX_D
    int ML_PAIRS_AUTO
    int ML_PAIRS_DIRECT
    int ML_PAIRS_GEMM
    ctypedef void (*ml_dsyrk_fn)(char *, char *, int *, int *, double *, double *,
                                 int *, double *, double *, int *)
    int ml_pairs_full(const double *X, Py_ssize_t n, Py_ssize_t p,
                      const int64_t *pairs, Py_ssize_t m,
                      const double *Lt, Py_ssize_t r,
                      double *h, double *G, double *dist,
                      double *G_zero, double *n_zero,
                      ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)
    int ml_pairs_full_f32(const float *X, Py_ssize_t n, Py_ssize_t p,
                          const int64_t *pairs, Py_ssize_t m,
                          const double *Lt, Py_ssize_t r,
                          double *h, double *G, double *dist,
                          double *G_zero, double *n_zero,
                          ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)
    int ml_pairs_laplacian(const double *X, const double *Y, Py_ssize_t n, Py_ssize_t p,
                           Py_ssize_t r, const int64_t *pairs, Py_ssize_t m,
                           double *h, double *dist, double *wdeg, double *T,
                           double *G_zero, double *n_zero)
    int ml_pairs_diag(const double *X, Py_ssize_t n, Py_ssize_t p,
                      const int64_t *pairs, Py_ssize_t m, const double *a,
                      double *h, double *grad, double *H,
                      double *grad_zero, double *n_zero,
                      int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)
    int ml_pairs_diag_f32(const float *X, Py_ssize_t n, Py_ssize_t p,
                          const int64_t *pairs, Py_ssize_t m, const double *a,
                          double *h, double *grad, double *H,
                          double *grad_zero, double *n_zero,
                          int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)
    int ml_allpairs_full(const double *X, const double *Y, Py_ssize_t n,
                         Py_ssize_t p, Py_ssize_t r, double *h, double *G,
                         ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)
    int ml_crosspairs_full(const double *XI, const double *YI, Py_ssize_t nI,
                           const double *XJ, const double *YJ, Py_ssize_t nJ,
                           Py_ssize_t p, Py_ssize_t r, double *h, double *G,
                           ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads)


# Work (flops) below which every kernel here runs on one thread.
MIN_PARALLEL_WORK = ML_MIN_PARALLEL_WORK
# Features from which the all-pairs diagonal sums take the GEMM form.
DIAG_GEMM_MIN_P = ML_PAIRS_DIAG_GEMM_MIN_P
GRAM_DIRECT_MAX_D = ML_GRAM_DIRECT_MAX_D
_DIAG_METHODS = {"auto": ML_PAIRS_AUTO, "direct": ML_PAIRS_DIRECT, "gemm": ML_PAIRS_GEMM}


cdef void _check_pairs(const int64_t[:, ::1] pairs, Py_ssize_t n) except *:
    if pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (m, 2), got ({pairs.shape[0]}, {pairs.shape[1]})")
    cdef Py_ssize_t k
    for k in range(pairs.shape[0]):
        if pairs[k, 0] < 0 or pairs[k, 0] >= n or pairs[k, 1] < 0 or pairs[k, 1] >= n:
            raise ValueError(f"pairs[{k}] = ({pairs[k, 0]}, {pairs[k, 1]}) is out of range "
                             f"for {n} samples")


cdef void _check_operands(Py_ssize_t n, Py_ssize_t p, const int64_t[:, ::1] pairs,
                          str name, Py_ssize_t rows, Py_ssize_t want, str what,
                          Py_ssize_t r) except *:
    """The checks of :func:`pairs_full` and :func:`pairs_laplacian`: ``name``
    (``Lt`` or ``Y``, ``r`` columns) has ``want`` rows (X's ``what``), X and it
    have columns, and the pairs index X's ``n`` rows."""
    if rows != want:
        raise ValueError(f"{name} has {rows} rows, X has {want}{what}")
    if p == 0 or r == 0:
        raise ValueError(f"X and {name} need at least one column")
    _check_pairs(pairs, n)


cdef object _zeros_out(bint wanted, shape, double **data):
    """A new float64 array of zeros and its data pointer in ``*data``; None and
    NULL when not ``wanted`` (or when it has no entries: NULL). The pointer
    stays valid while the returned array lives."""
    data[0] = NULL
    if not wanted:
        return None
    out = np.zeros(shape)
    cdef double[::1] flat = out.reshape(-1)
    if flat.shape[0] > 0:
        data[0] = &flat[0]
    return out


def pairs_full(const floating[:, ::1] X, const int64_t[:, ::1] pairs,
               const double[:, ::1] Lt, bint gradient=True, bint distances=False,
               int n_threads=0, *, bint zero_pairs=False):
    """Explicit pairs, full metric ``A = L^T L`` with ``Lt = L^T`` (p x r).

    Returns ``(h, G, dist)``: ``h = sum_k d_k`` with ``d_k = ||(x_i - x_j) L^T||``,
    ``G = sum_k (x_i - x_j)(x_i - x_j)^T / (2 d_k)`` over ``d_k > 0`` (None
    unless ``gradient``), ``dist`` the d_k (None unless ``distances``). With
    ``zero_pairs`` (needs ``gradient``), also ``(G_zero, n_zero)``: the sum of
    ``(x_i - x_j)(x_i - x_j)^T / 2`` and the count over pairs with ``d_k = 0``
    and ``x_i != x_j`` (non-smooth points of h).
    """
    if zero_pairs and not gradient:
        raise ValueError("zero_pairs needs gradient=True")
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], m = pairs.shape[0], r = Lt.shape[1]
    _check_operands(n, p, pairs, "Lt", Lt.shape[0], p, " columns", r)
    cdef double *Gp, *dp, *Gzp
    G = _zeros_out(gradient, (p, p), &Gp)
    dist = _zeros_out(distances, m, &dp)
    Gz = _zeros_out(zero_pairs, (p, p), &Gzp)
    cdef double h = 0.0, n_zero = 0.0
    cdef int status
    entered = interrupt_enter()
    with nogil:
        if floating is float:
            status = ml_pairs_full_f32(&X[0, 0] if n > 0 else NULL, n, p,
                                       &pairs[0, 0] if m > 0 else NULL, m,
                                       &Lt[0, 0], r, &h, Gp, dp, Gzp, &n_zero,
                                       dgemm, dsyrk, n_threads)
        else:
            status = ml_pairs_full(&X[0, 0] if n > 0 else NULL, n, p,
                                   &pairs[0, 0] if m > 0 else NULL, m,
                                   &Lt[0, 0], r, &h, Gp, dp, Gzp, &n_zero,
                                   dgemm, dsyrk, n_threads)
    interrupt_leave(entered, status)
    check_status(status, "pairs_full", "a pair index is out of range")
    if zero_pairs:
        return h, G, dist, Gz, int(n_zero)
    return h, G, dist


def pairs_laplacian(const double[:, ::1] X, const double[:, ::1] Y,
                    const int64_t[:, ::1] pairs, bint distances=False, bint zero_pairs=False):
    """Explicit pairs, full metric, Laplacian form; distances from ``Y = X L^T``.

    Returns ``(h, wdeg, T, dist, G_zero, n_zero)`` with ``h = sum_k d_k``,
    ``d_k = ||y_i - y_j||``, ``w_k = 1 / (2 d_k)`` (0 where ``d_k = 0``), ``wdeg``
    the per-point sums of ``w_k`` and ``T = W X`` the weighted neighbour sums, so
    that ``X^T diag(wdeg) X - X^T T = sum_k w_k (x_i - x_j)(x_i - x_j)^T``.
    ``dist`` (None unless ``distances``) the d_k; ``G_zero, n_zero`` (None, 0
    unless ``zero_pairs``) as in :func:`pairs_full`. One thread.
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], m = pairs.shape[0], r = Y.shape[1]
    _check_operands(n, p, pairs, "Y", Y.shape[0], n, "", r)
    cdef double *wp, *Tp, *dp, *Gzp
    wdeg = _zeros_out(True, n, &wp)
    T = _zeros_out(True, (n, p), &Tp)
    dist = _zeros_out(distances, m, &dp)
    Gz = _zeros_out(zero_pairs, (p, p), &Gzp)
    cdef double h = 0.0, n_zero = 0.0
    cdef int status = 0
    if n > 0:
        with nogil:
            status = ml_pairs_laplacian(&X[0, 0], &Y[0, 0], n, p, r,
                                        &pairs[0, 0] if m > 0 else NULL, m,
                                        &h, dp, wp, Tp, Gzp, &n_zero)
    check_status(status, "pairs_laplacian", "a pair index is out of range")
    return h, wdeg, T, dist, Gz, int(n_zero)


def pairs_diag(const floating[:, ::1] X, pairs, const double[::1] a,
               bint gradient=True, bint hessian=True, int n_threads=0, *,
               bint zero_pairs=False, str method="auto"):
    """Diagonal metric ``diag(a)``; ``pairs=None`` means all pairs i < j.

    Returns ``(h, grad, H)`` with ``h = sum d``, ``grad = sum v / (2 d)``,
    ``H = sum v v^T / (4 d^3)``, ``v = (x_i - x_j)**2``, ``d = sqrt(a . v)``;
    pairs with ``d = 0`` are left out of ``grad`` and ``H``. With
    ``zero_pairs``, also ``(grad_zero, n_zero)``: ``sum v / 2`` and the count
    over the pairs with ``d = 0`` and ``v != 0`` (non-smooth points of ``h``).
    ``method``: "direct" (the pair loop), "gemm" (all pairs without the
    Hessian and more than ``GRAM_DIRECT_MAX_D`` features only: squared
    distances from the shared tile, ``W X`` as a GEMM) or "auto" (the GEMM
    form where allowed from ``DIAG_GEMM_MIN_P`` features). Same sums to rounding.
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], m = 0
    if method not in _DIAG_METHODS:
        raise ValueError(f"method must be one of {sorted(_DIAG_METHODS)}, got {method!r}")
    cdef int code = _DIAG_METHODS[method]
    if code == ML_PAIRS_GEMM and (pairs is not None or hessian or p <= ML_GRAM_DIRECT_MAX_D):
        raise ValueError("method='gemm' needs pairs=None, hessian=False and more than "
                         f"{ML_GRAM_DIRECT_MAX_D} features")
    if a.shape[0] != p:
        raise ValueError(f"a has {a.shape[0]} entries, X has {p} columns")
    if p == 0:
        raise ValueError("X needs at least one column")
    cdef const int64_t[:, ::1] pv
    cdef const int64_t *pp = NULL
    if pairs is not None:
        pv = pairs
        _check_pairs(pv, n)
        m = pv.shape[0]
        if m > 0:
            pp = &pv[0, 0]
    cdef double *gp, *Hp, *zp
    grad = _zeros_out(gradient, p, &gp)
    H = _zeros_out(hessian, (p, p), &Hp)
    gzero = _zeros_out(zero_pairs, p, &zp)
    cdef double h = 0.0, n_zero = 0.0
    cdef int status
    cdef bint explicit = pairs is not None
    entered = interrupt_enter()
    with nogil:
        if explicit and m == 0:
            status = 0
        elif floating is float:
            status = ml_pairs_diag_f32(&X[0, 0] if n > 0 else NULL, n, p, pp, m, &a[0],
                                       &h, gp, Hp, zp, &n_zero,
                                       code, <ml_dgemm_fn>dgemm, dsyrk, n_threads)
        else:
            status = ml_pairs_diag(&X[0, 0] if n > 0 else NULL, n, p, pp, m, &a[0],
                                   &h, gp, Hp, zp, &n_zero,
                                   code, <ml_dgemm_fn>dgemm, dsyrk, n_threads)
    interrupt_leave(entered, status)
    check_status(status, "pairs_diag", "a pair index is out of range")
    if zero_pairs:
        return h, grad, H, gzero, int(n_zero)
    return h, grad, H


def allpairs_full(const double[:, ::1] X, const double[:, ::1] Y, int n_threads=0):
    """All pairs i < j by the Laplacian form; distances from ``Y`` (n x r).

    Returns ``(h, G)``: ``h = sum_{i<j} d_ij`` and
    ``G = sum_{i<j} (x_i - x_j)(x_i - x_j)^T / (2 d_ij) = X^T (diag(W 1) - W) X``
    with ``d_ij = ||y_i - y_j||``; no n x n array is formed.
    """
    return _laplacian_sums(X, Y, X, Y, True, n_threads)


def crosspairs_full(const double[:, ::1] XI, const double[:, ::1] YI,
                    const double[:, ::1] XJ, const double[:, ::1] YJ, int n_threads=0):
    """Every pair (i, j) with i a row of ``XI`` and j a row of ``XJ``, Laplacian form.

    The cross-block term of :func:`allpairs_full` (same tile code): distances
    from ``YI`` / ``YJ`` (``X Lt``, rows centred with one common shift).
    Returns ``(h, G)``: ``h = sum_ij d_ij`` and
    ``G = sum_ij (x_i - x_j)(x_i - x_j)^T / (2 d_ij)``; no nI x nJ array.
    """
    return _laplacian_sums(XI, YI, XJ, YJ, False, n_threads)


cdef tuple _laplacian_sums(const double[:, ::1] XI, const double[:, ::1] YI,
                           const double[:, ::1] XJ, const double[:, ::1] YJ,
                           bint within, int n_threads):
    """The checks, output and call shared by :func:`allpairs_full` (``within``:
    the pairs i < j of one block, ``XJ`` is ``XI``) and :func:`crosspairs_full`
    (every pair across two blocks); both run csrc's ``full_pairs``."""
    cdef Py_ssize_t nI = XI.shape[0], nJ = XJ.shape[0], p = XI.shape[1], r = YI.shape[1]
    names = ("X", "Y") if within else ("XI", "YI")
    if YI.shape[0] != nI:
        raise ValueError(f"{names[1]} has {YI.shape[0]} rows, {names[0]} has {nI}")
    if YJ.shape[0] != nJ:
        raise ValueError(f"YJ has {YJ.shape[0]} rows, XJ has {nJ}")
    if XJ.shape[1] != p or YJ.shape[1] != r:
        raise ValueError(f"XJ has {XJ.shape[1]} columns and YJ {YJ.shape[1]}; expected "
                         f"{p} and {r}")
    if p == 0 or r == 0:
        raise ValueError(f"{names[0]} and {names[1]} need at least one column")
    cdef double *Gp
    G = _zeros_out(True, (p, p), &Gp)
    if (nI < 2) if within else (nI == 0 or nJ == 0):
        return 0.0, G
    cdef double h = 0.0
    cdef int status
    entered = interrupt_enter()
    with nogil:
        if within:
            status = ml_allpairs_full(&XI[0, 0], &YI[0, 0], nI, p, r, &h, Gp,
                                      dgemm, dsyrk, n_threads)
        else:
            status = ml_crosspairs_full(&XI[0, 0], &YI[0, 0], nI, &XJ[0, 0], &YJ[0, 0], nJ,
                                        p, r, &h, Gp, dgemm, dsyrk, n_threads)
    interrupt_leave(entered, status)
    check_status(status, "allpairs_full" if within else "crosspairs_full",
                 "a size is out of range")
    return h, G
