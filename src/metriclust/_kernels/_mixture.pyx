"""Bridge to csrc/mixture.c: the Gaussian-mixture E-step and M-step moments.

Public classes and functions:

.. autosummary::

   estep  -- responsibilities and log-likelihoods (full, diagonal or spherical)
   mstep  -- the M-step moments: weights, means, covariances or variances

Every size is checked here before the C core touches a pointer. float64 only
(the estimator converts).
"""

import numpy as np

from metriclust._kernels._status cimport check_status

cdef extern from "mixture.h" nogil:
    int ML_GMM_FULL
    int ML_GMM_DIAG
    int ml_gmm_estep(const double *X, Py_ssize_t n, Py_ssize_t d, Py_ssize_t K,
                     const double *means, const double *prec, int cov_type,
                     const double *log_norm, double *resp, double *sample_ll,
                     double *total_ll, int n_threads)
    int ml_gmm_mstep(const double *X, Py_ssize_t n, Py_ssize_t d, Py_ssize_t K,
                     const double *resp, int cov_type, double *nk, double *means,
                     double *cov, int n_threads)


cdef int _cov_code(prec, Py_ssize_t K, Py_ssize_t d) except -1:
    if prec.shape == (K, d, d):
        return ML_GMM_FULL
    if prec.shape == (K, d):
        return ML_GMM_DIAG
    raise ValueError(f"precision factors must have shape ({K}, {d}, {d}) or ({K}, {d}), "
                     f"got {prec.shape}")


def estep(const double[:, ::1] X, const double[:, ::1] means, prec,
          const double[::1] log_norm, bint want_resp=True, bint want_sample_ll=False,
          int n_threads=0):
    """E-step: ``(resp or None, sample log-likelihoods or None, total log-likelihood)``.

    ``prec`` is (K, d, d) upper-triangular precision Cholesky factors (full) or
    (K, d) per-feature precision square roots (diagonal / spherical).
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = means.shape[0]
    if d < 1 or K < 1:
        raise ValueError(f"X must have features and means rows, got {X.shape[1]}, {K}")
    if means.shape[1] != d:
        raise ValueError(f"means have {means.shape[1]} features, X has {d}")
    if log_norm.shape[0] != K:
        raise ValueError(f"log_norm has {log_norm.shape[0]} entries, expected {K}")
    prec = np.ascontiguousarray(prec, dtype=np.float64)
    cdef int code = _cov_code(prec, K, d)
    cdef const double[::1] pv = prec.reshape(-1)
    resp = np.empty((n, K), dtype=np.float64) if want_resp else None
    sll = np.empty(n, dtype=np.float64) if want_sample_ll else None
    cdef double[:, ::1] rv
    cdef double[::1] sv
    cdef double *rp = NULL
    cdef double *sp = NULL
    if want_resp and n > 0:
        rv = resp
        rp = &rv[0, 0]
    if want_sample_ll and n > 0:
        sv = sll
        sp = &sv[0]
    cdef double total = 0
    cdef int status
    cdef const double *xp = &X[0, 0] if n > 0 else NULL
    with nogil:
        status = ml_gmm_estep(xp, n, d, K, &means[0, 0], &pv[0], code, &log_norm[0],
                              rp, sp, &total, n_threads)
    check_status(status, "Gaussian mixture E-step", "invalid sizes")
    return resp, sll, total


def mstep(const double[:, ::1] X, const double[:, ::1] resp, bint full, int n_threads=0):
    """M-step moments: ``(nk, means, covariances)``; covariances (K, d, d) if
    ``full`` else (K, d) per-feature variances."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = resp.shape[1]
    if n < 1 or d < 1 or K < 1:
        raise ValueError(f"X and resp must be non-empty, got {X.shape[0]}x{d}, K={K}")
    if resp.shape[0] != n:
        raise ValueError(f"resp has {resp.shape[0]} rows, X has {n}")
    nk = np.empty(K, dtype=np.float64)
    means = np.empty((K, d), dtype=np.float64)
    if full:
        cov = np.empty((K, d, d), dtype=np.float64)
    else:
        cov = np.empty((K, d), dtype=np.float64)
    cdef double[::1] nv = nk
    cdef double[:, ::1] mv = means
    cdef double[::1] cv = cov.reshape(-1)
    cdef int status
    cdef int code = ML_GMM_FULL if full else ML_GMM_DIAG
    with nogil:
        status = ml_gmm_mstep(&X[0, 0], n, d, K, &resp[0, 0], code, &nv[0], &mv[0, 0],
                              &cv[0], n_threads)
    check_status(status, "Gaussian mixture M-step", "invalid sizes")
    return nk, means, cov
