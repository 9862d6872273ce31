"""Bridge to csrc/gram.c: the Gaussian Gram matrix, G @ V without storing G,
and the kernel's vectorized exp. Shapes and sigma are checked here before any
pointer is touched; the Python layer (metriclust.kernels) validates values and
holds BLAS to one thread around the calls that use it. Each function is
written once over the fused type ``real`` (float32 or float64) and dispatched
on the input's dtype.

Public classes and functions:

.. autosummary::

   gaussian_gram  -- the Gaussian Gram matrix (float32 or float64)
   gram_matmat    -- ``G(X, Y) V`` without storing G
   expneg         -- the kernels' vectorized ``exp(x)`` for ``x <= 0``
   DIRECT_MAX_D   -- features up to which the tile is computed directly, not by GEMM
"""

import numpy as np

from metriclust._kernels._blas cimport dgemm, sgemm
from metriclust._kernels._common cimport ml_dgemm_fn, ml_sgemm_fn, real
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status

cdef extern from "gram.h" nogil:
    int ML_GRAM_DIRECT_MAX_D
    int ml_gaussian_gram_f64(const double *X, Py_ssize_t nx, const double *Y,
                             Py_ssize_t ny, Py_ssize_t d, double sigma, double *G,
                             ml_dgemm_fn gemm, int n_threads)
    int ml_gaussian_gram_f32(const float *X, Py_ssize_t nx, const float *Y,
                             Py_ssize_t ny, Py_ssize_t d, double sigma, float *G,
                             ml_sgemm_fn gemm, int n_threads)
    int ml_gram_matmat_f64(const double *X, Py_ssize_t nx, const double *Y,
                           Py_ssize_t ny, Py_ssize_t d, double sigma,
                           const double *V, Py_ssize_t k, double *out,
                           ml_dgemm_fn gemm, int n_threads)
    int ml_gram_matmat_f32(const float *X, Py_ssize_t nx, const float *Y,
                           Py_ssize_t ny, Py_ssize_t d, double sigma,
                           const float *V, Py_ssize_t k, float *out,
                           ml_sgemm_fn gemm, int n_threads)
    void ml_expneg_f64(const double *x, double *out, Py_ssize_t n)
    void ml_expneg_f32(const float *x, float *out, Py_ssize_t n)

DIRECT_MAX_D = ML_GRAM_DIRECT_MAX_D
cdef Py_ssize_t INT_MAX = 2147483647


cdef _array(A, str name, int ndim):
    # The extension is compiled with boundscheck=False, so A.shape[k] on an
    # array of fewer dimensions would read past the shape tuple: check first.
    if not isinstance(A, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(A).__name__}.")
    if A.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got {A.ndim}-D.")


cdef tuple _operands(X, Y, double sigma):
    """Check X and Y (None: Y = X) and sigma, the Gram kernels' common
    operands; returns (nx, ny, d)."""
    _array(X, "X", 2)
    if Y is not None:
        _array(Y, "Y", 2)
        if Y.dtype != X.dtype:
            raise TypeError("X and Y must have the same dtype")
    cdef Py_ssize_t nx = X.shape[0], dx = X.shape[1]
    cdef Py_ssize_t ny = nx if Y is None else Y.shape[0]
    cdef Py_ssize_t dy = dx if Y is None else Y.shape[1]
    if dx != dy:
        raise ValueError(f"Y has {dy} features, but X has {dx} features.")
    if dx < 1:
        raise ValueError("X must have at least one feature.")
    if nx > INT_MAX or ny > INT_MAX or dx > INT_MAX:
        raise ValueError("gaussian_gram: more than 2**31 - 1 rows or features.")
    if not (sigma > 0.0 and sigma < float("inf")):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}.")
    return nx, ny, dx


cdef _output(out, Py_ssize_t nx, Py_ssize_t ny, dtype):
    if out is None:
        return np.empty((nx, ny), dtype=dtype)
    if (not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != (nx, ny)
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"out must be a writeable C-contiguous {np.dtype(dtype).name} "
                         f"array of shape {(nx, ny)}.")
    return out


cdef _float_dtype(A, str where):
    if A.dtype != np.float64 and A.dtype != np.float32:
        raise TypeError(f"{where}: unsupported dtype {A.dtype}")
    return A.dtype


cdef int _gram(const real[:, ::1] X, const real[:, ::1] Y, bint sym, double sigma,
               real[:, ::1] G, bint use_blas, int n_threads) except -1:
    cdef Py_ssize_t nx = X.shape[0], ny = Y.shape[0], d = X.shape[1]
    cdef const real *yp = NULL if sym else &Y[0, 0]
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_gaussian_gram_f64(&X[0, 0], nx, yp, ny, d, sigma, &G[0, 0],
                                          <ml_dgemm_fn>dgemm if use_blas else NULL,
                                          n_threads)
        else:
            status = ml_gaussian_gram_f32(&X[0, 0], nx, yp, ny, d, sigma, &G[0, 0],
                                          <ml_sgemm_fn>sgemm if use_blas else NULL,
                                          n_threads)
    interrupt_leave(entered, status)
    return check_status(status, "gaussian_gram", "invalid arguments")


def gaussian_gram(X, Y, double sigma, int n_threads=0, bint use_blas=True, out=None):
    """G = exp(-||x_i - y_j||^2 / (2 sigma^2)); Y None means Y = X (symmetric
    path). X and Y: C-contiguous 2-D arrays of one float dtype; the output has
    that dtype (written into out if given: C-contiguous, that dtype and shape).
    use_blas=False forces the direct-difference path."""
    cdef Py_ssize_t nx, ny, d
    nx, ny, d = _operands(X, Y, sigma)
    dtype = _float_dtype(X, "gaussian_gram")
    G = _output(out, nx, ny, dtype)
    if nx == 0 or ny == 0:
        return G
    Yv = X if Y is None else Y
    if dtype == np.float64:
        _gram[double](X, Yv, Y is None, sigma, G, use_blas, n_threads)
    else:
        _gram[float](X, Yv, Y is None, sigma, G, use_blas, n_threads)
    return G


cdef int _matmat(const real[:, ::1] X, const real[:, ::1] Y, bint sym, double sigma,
                 const real[:, ::1] V, real[:, ::1] out, int n_threads) except -1:
    cdef Py_ssize_t nx = X.shape[0], ny = Y.shape[0], d = X.shape[1], k = V.shape[1]
    cdef const real *yp = NULL if sym else &Y[0, 0]
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_gram_matmat_f64(&X[0, 0], nx, yp, ny, d, sigma, &V[0, 0], k,
                                        &out[0, 0], <ml_dgemm_fn>dgemm, n_threads)
        else:
            status = ml_gram_matmat_f32(&X[0, 0], nx, yp, ny, d, sigma, &V[0, 0], k,
                                        &out[0, 0], <ml_sgemm_fn>sgemm, n_threads)
    interrupt_leave(entered, status)
    return check_status(status, "gram_matmat", "invalid arguments")


def gram_matmat(X, Y, V, double sigma, int n_threads=0):
    """G(X, Y) @ V without storing G. Y None means Y = X. All arrays C-contiguous
    and of one float dtype; V has Y's row count."""
    cdef Py_ssize_t nx, ny, d
    nx, ny, d = _operands(X, Y, sigma)
    _array(V, "V", 2)
    cdef Py_ssize_t k = V.shape[1]
    if V.dtype != X.dtype:
        raise TypeError("X and V must have the same dtype")
    if V.shape[0] != ny:
        raise ValueError(f"V has {V.shape[0]} rows, expected {ny} (the rows of Y).")
    if k > INT_MAX:
        raise ValueError("gram_matmat: V has more than 2**31 - 1 columns.")
    dtype = _float_dtype(X, "gram_matmat")
    out = np.zeros((nx, k), dtype=dtype)
    if nx == 0 or ny == 0 or k == 0:
        return out
    Yv = X if Y is None else Y
    if dtype == np.float64:
        _matmat[double](X, Yv, Y is None, sigma, V, out, n_threads)
    else:
        _matmat[float](X, Yv, Y is None, sigma, V, out, n_threads)
    return out


cdef void _expneg(const real[::1] x, real[::1] out) noexcept:
    with nogil:
        if real is double:
            ml_expneg_f64(&x[0], &out[0], x.shape[0])
        else:
            ml_expneg_f32(&x[0], &out[0], x.shape[0])


def expneg(x, out=None):
    """exp(x) for x <= 0 by the kernel's vectorized exp (1-D contiguous input;
    out, if given, a contiguous array of the same dtype and length)."""
    _array(x, "x", 1)
    if out is not None:
        _array(out, "out", 1)
    cdef Py_ssize_t n = x.shape[0]
    if out is None:
        out = np.empty_like(x)
    elif out.dtype != x.dtype or out.shape[0] != n:
        raise ValueError("expneg: out must match x in dtype and length")
    dtype = _float_dtype(x, "expneg")
    if n == 0:
        return out
    if dtype == np.float64:
        _expneg[double](x, out)
    else:
        _expneg[float](x, out)
    return out
