"""Bridge to csrc/sums.c: per-cluster row sums and the contingency table.

Public classes and functions:

.. autosummary::

   cluster_sums  -- per-cluster row sums (float64)
   value_range   -- the smallest and largest value and whether any is NaN, in one pass
   column_block_sums -- column sums (or squared deviations) per block of rows, in row order
   contingency   -- the contingency table of two labelings
   MIN_PARALLEL  -- entries (n p) below which the sums run on one thread
"""

import numpy as np

from libc.stdint cimport int64_t
from metriclust._kernels._common cimport real
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status

cdef extern from "thresholds.h" nogil:
    int ML_SUM_MIN_PARALLEL

# Entries (n p) below which the cluster sums run on one thread (thresholds.h).
MIN_PARALLEL = ML_SUM_MIN_PARALLEL

cdef extern from "sums.h" nogil:
    int ml_cluster_sums_f64(const double *X, Py_ssize_t n, Py_ssize_t p,
                            const int64_t *labels, Py_ssize_t K, double *out,
                            int n_threads)
    int ml_cluster_sums_f32(const float *X, Py_ssize_t n, Py_ssize_t p,
                            const int64_t *labels, Py_ssize_t K, double *out,
                            int n_threads)
    int ml_contingency(const int64_t *a, const int64_t *b, Py_ssize_t n,
                       Py_ssize_t ka, Py_ssize_t kb, int64_t *table)
    int ml_column_block_sums_f64(const double *X, Py_ssize_t n, Py_ssize_t p,
                                 Py_ssize_t block_rows, const double *center,
                                 double *out, int n_threads)
    int ml_column_block_sums_f32(const float *X, Py_ssize_t n, Py_ssize_t p,
                                 Py_ssize_t block_rows, const double *center,
                                 double *out, int n_threads)
    int ml_value_range_f64(const double *x, Py_ssize_t n, double *lo, double *hi,
                           int *nan, int n_threads)
    int ml_value_range_f32(const float *x, Py_ssize_t n, double *lo, double *hi,
                           int *nan, int n_threads)


def cluster_sums(const real[:, ::1] X, const int64_t[::1] labels, Py_ssize_t n_clusters,
                 int n_threads=0):
    """Return the (n_clusters, p) float64 array of per-cluster row sums of X."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1]
    if labels.shape[0] != n:
        raise ValueError(f"labels has {labels.shape[0]} entries, X has {n} rows")
    if n_clusters <= 0:
        raise ValueError(f"n_clusters must be positive, got {n_clusters}")
    out = np.zeros((n_clusters, p), dtype=np.float64)
    cdef double[:, ::1] out_v = out
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_cluster_sums_f64(&X[0, 0] if n * p > 0 else NULL, n, p,
                                         &labels[0] if n > 0 else NULL,
                                         n_clusters, &out_v[0, 0] if p > 0 else NULL,
                                         n_threads)
        else:
            status = ml_cluster_sums_f32(&X[0, 0] if n * p > 0 else NULL, n, p,
                                         &labels[0] if n > 0 else NULL,
                                         n_clusters, &out_v[0, 0] if p > 0 else NULL,
                                         n_threads)
    interrupt_leave(entered, status)
    check_status(status, "cluster_sums", f"labels must lie in [0, {n_clusters})")
    return out


def contingency(const int64_t[::1] a, const int64_t[::1] b, Py_ssize_t ka, Py_ssize_t kb):
    """Return the (ka, kb) int64 contingency table of integer codes a and b."""
    cdef Py_ssize_t n = a.shape[0]
    if b.shape[0] != n:
        raise ValueError(f"label arrays differ in length: {n} and {b.shape[0]}")
    if ka <= 0 or kb <= 0:
        raise ValueError("contingency needs at least one code on each side")
    table = np.zeros((ka, kb), dtype=np.int64)
    cdef int64_t[:, ::1] t = table
    cdef int status
    with nogil:
        status = ml_contingency(&a[0] if n > 0 else NULL, &b[0] if n > 0 else NULL,
                                n, ka, kb, &t[0, 0])
    check_status(status, "contingency", "codes out of range")
    return table


def value_range(const real[::1] x, int n_threads=0):
    """``(min, max, has_nan)`` of the values of x in one pass (min and max as
    float64, over the values that are not NaN; on n_threads threads, the same
    result on any number)."""
    cdef Py_ssize_t n = x.shape[0]
    if n == 0:
        raise ValueError("x must not be empty")
    cdef double lo = 0, hi = 0
    cdef int nan = 0
    cdef int status
    with nogil:
        if real is double:
            status = ml_value_range_f64(&x[0], n, &lo, &hi, &nan, n_threads)
        else:
            status = ml_value_range_f32(&x[0], n, &lo, &hi, &nan, n_threads)
    check_status(status, "value_range")
    return lo, hi, bool(nan)


def column_block_sums(const real[:, ::1] X, Py_ssize_t block_rows, center=None,
                      int n_threads=0):
    """The (n_blocks, p) float64 column sums of X per block of ``block_rows`` rows
    (the last one shorter), each summed from 0 in row order; with ``center``
    (float64, p), the sums of ``(x - center) ** 2``. Blocks run on threads, the
    same bits on any number (csrc/sums.h)."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1]
    if p < 1:
        raise ValueError(f"X must have at least one column, got shape ({n}, {p})")
    if block_rows < 1:
        raise ValueError(f"block_rows must be positive, got {block_rows}")
    cdef const double[::1] c
    cdef const double *cp = NULL
    if center is not None:
        c = np.ascontiguousarray(center, dtype=np.float64)
        if c.shape[0] != p:
            raise ValueError(f"center has {c.shape[0]} entries, X has {p} columns")
        cp = &c[0]
    out = np.empty((n // block_rows + (n % block_rows != 0), p))
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_column_block_sums_f64(&X[0, 0], n, p, block_rows, cp, &ov[0, 0],
                                              n_threads)
        else:
            status = ml_column_block_sums_f32(&X[0, 0], n, p, block_rows, cp, &ov[0, 0],
                                              n_threads)
    interrupt_leave(entered, status)
    check_status(status, "column_block_sums")
    return out
