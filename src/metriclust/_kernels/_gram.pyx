"""Bridge to csrc/gram.c: the Gaussian Gram matrix, G @ V without storing G,
and the kernel's vectorized exp. Shapes and sigma are checked here before any
pointer is touched; the Python layer (metriclust.kernels) validates values and
holds BLAS to one thread around the calls that use it."""

import numpy as np

from metriclust._kernels._blas cimport dgemm, sgemm
from metriclust._kernels._common cimport ml_dgemm_fn, ml_sgemm_fn
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave

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


cdef _check(Py_ssize_t nx, Py_ssize_t ny, Py_ssize_t dx, Py_ssize_t dy, double sigma):
    if dx != dy:
        raise ValueError(f"Y has {dy} features, but X has {dx} features.")
    if dx < 1:
        raise ValueError("X must have at least one feature.")
    if nx > INT_MAX or ny > INT_MAX or dx > INT_MAX:
        raise ValueError("gaussian_gram: more than 2**31 - 1 rows or features.")
    if not (sigma > 0.0 and sigma < float("inf")):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}.")


cdef _raise(int status, str where):
    if status == -1:
        raise MemoryError(f"{where}: allocation failed")
    if status != 0:
        raise ValueError(f"{where}: invalid arguments (status {status})")


cdef _output(out, Py_ssize_t nx, Py_ssize_t ny, dtype):
    if out is None:
        return np.empty((nx, ny), dtype=dtype)
    if (not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != (nx, ny)
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"out must be a writeable C-contiguous {np.dtype(dtype).name} "
                         f"array of shape {(nx, ny)}.")
    return out


def gaussian_gram(X, Y, double sigma, int n_threads=0, bint use_blas=True, out=None):
    """G = exp(-||x_i - y_j||^2 / (2 sigma^2)); Y None means Y = X (symmetric
    path). X and Y: C-contiguous 2-D arrays of one float dtype; the output has
    that dtype (written into out if given: C-contiguous, that dtype and shape).
    use_blas=False forces the direct-difference path."""
    cdef const double[:, ::1] Xd, Yd
    cdef const float[:, ::1] Xf, Yf
    cdef double[:, ::1] Gd
    cdef float[:, ::1] Gf
    cdef const double *yd = NULL
    cdef const float *yf = NULL
    _array(X, "X", 2)
    if Y is not None:
        _array(Y, "Y", 2)
    cdef Py_ssize_t nx = X.shape[0], d = X.shape[1], ny = nx
    cdef int status
    if Y is not None:
        if Y.dtype != X.dtype:
            raise TypeError("X and Y must have the same dtype")
        ny = Y.shape[0]
        _check(nx, ny, d, Y.shape[1], sigma)
    else:
        _check(nx, ny, d, d, sigma)
    if X.dtype == np.float64:
        Xd = X
        G = _output(out, nx, ny, np.float64)
        if nx == 0 or ny == 0:
            return G
        Gd = G
        if Y is not None:
            Yd = Y
            yd = &Yd[0, 0]
        entered = interrupt_enter()
        with nogil:
            status = ml_gaussian_gram_f64(&Xd[0, 0], nx, yd, ny, d, sigma, &Gd[0, 0],
                                          <ml_dgemm_fn>dgemm if use_blas else NULL,
                                          n_threads)
    elif X.dtype == np.float32:
        Xf = X
        G = _output(out, nx, ny, np.float32)
        if nx == 0 or ny == 0:
            return G
        Gf = G
        if Y is not None:
            Yf = Y
            yf = &Yf[0, 0]
        entered = interrupt_enter()
        with nogil:
            status = ml_gaussian_gram_f32(&Xf[0, 0], nx, yf, ny, d, sigma, &Gf[0, 0],
                                          <ml_sgemm_fn>sgemm if use_blas else NULL,
                                          n_threads)
    else:
        raise TypeError(f"gaussian_gram: unsupported dtype {X.dtype}")
    interrupt_leave(entered, status)
    _raise(status, "gaussian_gram")
    return G


def gram_matmat(X, Y, V, double sigma, int n_threads=0):
    """G(X, Y) @ V without storing G. Y None means Y = X. All arrays C-contiguous
    and of one float dtype; V has Y's row count."""
    cdef const double[:, ::1] Xd, Yd, Vd
    cdef const float[:, ::1] Xf, Yf, Vf
    cdef double[:, ::1] Od
    cdef float[:, ::1] Of
    cdef const double *yd = NULL
    cdef const float *yf = NULL
    _array(X, "X", 2)
    if Y is not None:
        _array(Y, "Y", 2)
    _array(V, "V", 2)
    cdef Py_ssize_t nx = X.shape[0], d = X.shape[1], ny = nx, k = V.shape[1]
    cdef int status
    if Y is not None:
        if Y.dtype != X.dtype:
            raise TypeError("X and Y must have the same dtype")
        ny = Y.shape[0]
        _check(nx, ny, d, Y.shape[1], sigma)
    else:
        _check(nx, ny, d, d, sigma)
    if V.dtype != X.dtype:
        raise TypeError("X and V must have the same dtype")
    if V.shape[0] != ny:
        raise ValueError(f"V has {V.shape[0]} rows, expected {ny} (the rows of Y).")
    if k > INT_MAX:
        raise ValueError("gram_matmat: V has more than 2**31 - 1 columns.")
    if X.dtype == np.float64:
        Xd = X
        Vd = V
        out = np.zeros((nx, k), dtype=np.float64)
        if nx == 0 or ny == 0 or k == 0:
            return out
        Od = out
        if Y is not None:
            Yd = Y
            yd = &Yd[0, 0]
        entered = interrupt_enter()
        with nogil:
            status = ml_gram_matmat_f64(&Xd[0, 0], nx, yd, ny, d, sigma, &Vd[0, 0], k,
                                        &Od[0, 0], <ml_dgemm_fn>dgemm, n_threads)
    elif X.dtype == np.float32:
        Xf = X
        Vf = V
        out = np.zeros((nx, k), dtype=np.float32)
        if nx == 0 or ny == 0 or k == 0:
            return out
        Of = out
        if Y is not None:
            Yf = Y
            yf = &Yf[0, 0]
        entered = interrupt_enter()
        with nogil:
            status = ml_gram_matmat_f32(&Xf[0, 0], nx, yf, ny, d, sigma, &Vf[0, 0], k,
                                        &Of[0, 0], <ml_sgemm_fn>sgemm, n_threads)
    else:
        raise TypeError(f"gram_matmat: unsupported dtype {X.dtype}")
    interrupt_leave(entered, status)
    _raise(status, "gram_matmat")
    return out


def expneg(x, out=None):
    """exp(x) for x <= 0 by the kernel's vectorized exp (1-D contiguous input;
    out, if given, a contiguous array of the same dtype and length)."""
    cdef const double[::1] xd
    cdef const float[::1] xf
    cdef double[::1] od
    cdef float[::1] of
    _array(x, "x", 1)
    if out is not None:
        _array(out, "out", 1)
    cdef Py_ssize_t n = x.shape[0]
    if out is None:
        out = np.empty_like(x)
    elif out.dtype != x.dtype or out.shape[0] != n:
        raise ValueError("expneg: out must match x in dtype and length")
    if n == 0:
        return out
    if x.dtype == np.float64:
        xd = x
        od = out
        with nogil:
            ml_expneg_f64(&xd[0], &od[0], n)
    elif x.dtype == np.float32:
        xf = x
        of = out
        with nogil:
            ml_expneg_f32(&xf[0], &of[0], n)
    else:
        raise TypeError(f"expneg: unsupported dtype {x.dtype}")
    return out
