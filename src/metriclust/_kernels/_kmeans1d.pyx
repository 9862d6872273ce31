"""Bridge to csrc/kmeans1d.c: 1-D k-means of many columns in one call.

Public classes and functions:

.. autosummary::

   kmeans1d_columns  -- Lloyd's 1-D k-means of many columns in one call

Shapes, column indices and parameters are checked here before the C core
touches a pointer.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t
from metriclust._kernels._common cimport real
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave

cdef extern from "kmeans1d.h" nogil:
    int ml_kmeans1d_columns_f64(const double *X, Py_ssize_t n, Py_ssize_t p,
                                const int64_t *cols, Py_ssize_t m, Py_ssize_t K,
                                const double *init, const double *means,
                                const double *variances, int max_iter, double tol,
                                double *centers, double *inertia, int32_t *n_iter,
                                int64_t *labels, int n_threads)
    int ml_kmeans1d_columns_f32(const float *X, Py_ssize_t n, Py_ssize_t p,
                                const int64_t *cols, Py_ssize_t m, Py_ssize_t K,
                                const float *init, const double *means,
                                const double *variances, int max_iter, double tol,
                                float *centers, double *inertia, int32_t *n_iter,
                                int64_t *labels, int n_threads)


def kmeans1d_columns(const real[:, ::1] X, const int64_t[::1] columns, const real[:, ::1] init,
                     const double[::1] means, const double[::1] variances, int max_iter,
                     double tol, bint return_labels=False, int n_threads=0):
    """Lloyd's 1-D k-means of each column ``X[:, columns[c]]`` from the centers
    ``init[c]``, centered on ``means[c]``, ``tol`` relative to ``variances[c]``
    (as kmeans() centers and scales it).

    Returns ``(centers (m, K) in X's dtype, inertia (m,) float64, n_iter (m,)
    int32, labels (m, n) int64 or None)``.
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], m = columns.shape[0], K = init.shape[1]
    cdef Py_ssize_t c
    if n < 1 or p < 1:
        raise ValueError(f"X must be non-empty, got shape ({n}, {p})")
    if init.shape[0] != m:
        raise ValueError(f"init has {init.shape[0]} rows, expected one per column ({m})")
    if means.shape[0] != m or variances.shape[0] != m:
        raise ValueError(f"means and variances need {m} entries, got {means.shape[0]} "
                         f"and {variances.shape[0]}")
    if K < 1 or K > n:
        raise ValueError(f"n_samples={n} should be >= n_clusters={K} >= 1")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    for c in range(m):
        if columns[c] < 0 or columns[c] >= p:
            raise ValueError(f"columns[{c}] = {columns[c]} out of range for {p} columns")
    dtype = np.float64 if real is double else np.float32
    centers = np.empty((m, K), dtype=dtype)
    inertia = np.empty(m, dtype=np.float64)
    n_iter = np.empty(m, dtype=np.int32)
    labels = np.empty((m, n), dtype=np.int64) if return_labels else None
    if m == 0:
        return centers, inertia, n_iter, labels
    cdef real[:, ::1] cv = centers
    cdef double[::1] iv = inertia
    cdef int32_t[::1] nv = n_iter
    cdef int64_t[:, ::1] lv
    cdef int64_t *lp = NULL
    if return_labels:
        lv = labels
        lp = &lv[0, 0]
    cdef int status
    entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_kmeans1d_columns_f64(&X[0, 0], n, p, &columns[0], m, K, &init[0, 0],
                                             &means[0], &variances[0], max_iter, tol,
                                             &cv[0, 0], &iv[0], &nv[0], lp, n_threads)
        else:
            status = ml_kmeans1d_columns_f32(&X[0, 0], n, p, &columns[0], m, K, &init[0, 0],
                                             &means[0], &variances[0], max_iter, tol,
                                             &cv[0, 0], &iv[0], &nv[0], lp, n_threads)
    interrupt_leave(entered, status)
    if status == -1:
        raise MemoryError("kmeans1d_columns: out of memory")
    if status != 0:
        raise ValueError(f"kmeans1d_columns: invalid arguments (status {status})")
    return centers, inertia, n_iter, labels
