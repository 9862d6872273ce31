"""Bridge to csrc/kmeans.c: Lloyd (plain or pruned), online (sequential), assignment,
one block of Lloyd (assign_accumulate), k-means++ step.

Public functions:

.. autosummary::

   lloyd              -- Lloyd iterations from given centers
   hamerly            -- the same with Hamerly's bounds (same labels, centers, n_iter)
   online             -- sequential k-means (a moved point leaves its old centroid)
   assign             -- nearest center of each row (and its squared distance)
   assign_accumulate  -- one Lloyd block: labels, cluster sums and weights, inertia
   pp_step            -- one k-means++ step over candidate rows
   pp_keeps_scores    -- whether a k-means++ step should be given its scores workspace
   sq_dist_to         -- squared distances of every row to one point (the value order's key)
   center_rows        -- X - shift, and the squared norms of its rows, in one pass
   stable_order       -- argsort(kind="stable") of non-negative float64 keys (radix)
   ordered_cumsum     -- np.cumsum(w * v[order]) without its temporaries
   kernel, uses_gemm, prefers_pruning, simd_level, wide_vectors
                      -- which path the C table picks, the CPU's SIMD level, and
                         whether the lanes kernels run 512-bit vectors

Every size is checked here, before the C core touches a pointer. BLAS comes
from scipy.linalg.cython_blas as a function pointer (the C core links none);
callers hold BLAS to one thread around the GEMM path.
"""

import numpy as np

from libc.stdint cimport int64_t
from metriclust._kernels._blas cimport dgemm, sgemm
from metriclust._kernels._common cimport ml_dgemm_fn, ml_sgemm_fn, real
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status as _raise

cdef extern from "kmeans.h" nogil:
    int ml_kmeans_prefers_pruning(Py_ssize_t d, Py_ssize_t K)
    int ml_kmeans_uses_gemm(Py_ssize_t d, Py_ssize_t K, int method, int have_gemm)
    int ml_kmeans_kernel(Py_ssize_t d, Py_ssize_t K, int method, int have_gemm, int itemsize)
    int ml_kmeans_screens(Py_ssize_t d, Py_ssize_t K, int method, int have_gemm, int itemsize)
    int ml_kmeans_screen_probe_f64(const double *X, Py_ssize_t n, Py_ssize_t d,
                                   const double *centers, Py_ssize_t K, int64_t *labels,
                                   unsigned char *settled, double *margin)
    int ml_kmeans_screen_probe_f32(const float *X, Py_ssize_t n, Py_ssize_t d,
                                   const float *centers, Py_ssize_t K, int64_t *labels,
                                   unsigned char *settled, double *margin)
    int ml_kmeans_simd_level()
    int ml_kmeans_wide_lanes()
    int ml_kmeans_pp_keeps_scores(Py_ssize_t d, Py_ssize_t T, int itemsize)
    int ml_kmeans_sq_dist_to_f64(const double *X, Py_ssize_t n, Py_ssize_t d,
                                 const double *c, double *out, int n_threads)
    int ml_kmeans_center_rows_f64(const double *X, Py_ssize_t n, Py_ssize_t d,
                                  const double *shift, double *out, double *key,
                                  int n_threads)
    int ml_kmeans_center_rows_f32(const float *X, Py_ssize_t n, Py_ssize_t d,
                                  const float *shift, float *out, double *key,
                                  int n_threads)
    int ml_kmeans_sq_dist_to_f32(const float *X, Py_ssize_t n, Py_ssize_t d,
                                 const double *c, double *out, int n_threads)

cdef extern from "dispatch.h" nogil:
    double ml_wide_vectors_ratio()
    int ml_kmeans_hamerly_f64(const double *X, const double *w, Py_ssize_t n,
                              Py_ssize_t d, Py_ssize_t K, double *centers,
                              int max_iter, double tol, int64_t *labels,
                              double *inertia, int *n_iter, int *strict,
                              ml_dgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_hamerly_f32(const float *X, const float *w, Py_ssize_t n,
                              Py_ssize_t d, Py_ssize_t K, float *centers,
                              int max_iter, double tol, int64_t *labels,
                              double *inertia, int *n_iter, int *strict,
                              ml_sgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_lloyd_f64(const double *X, const double *w, Py_ssize_t n,
                            Py_ssize_t d, Py_ssize_t K, double *centers,
                            int max_iter, double tol, int64_t *labels,
                            double *inertia, int *n_iter, int *strict,
                            ml_dgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_lloyd_f32(const float *X, const float *w, Py_ssize_t n,
                            Py_ssize_t d, Py_ssize_t K, float *centers,
                            int max_iter, double tol, int64_t *labels,
                            double *inertia, int *n_iter, int *strict,
                            ml_sgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_online_f64(const double *X, const double *w, Py_ssize_t n,
                             Py_ssize_t d, Py_ssize_t K, double *centers,
                             int max_iter, double tol, int64_t *labels,
                             double *inertia, int *n_iter, int *strict,
                             ml_dgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_online_f32(const float *X, const float *w, Py_ssize_t n,
                             Py_ssize_t d, Py_ssize_t K, float *centers,
                             int max_iter, double tol, int64_t *labels,
                             double *inertia, int *n_iter, int *strict,
                             ml_sgemm_fn gemm, int method, int n_threads)
    int ml_kmeans_assign_f64(const double *X, const double *shift, Py_ssize_t n,
                             Py_ssize_t d, const double *centers, Py_ssize_t K,
                             int64_t *labels, double *dist, ml_dgemm_fn gemm,
                             int method, int n_threads)
    int ml_kmeans_assign_f32(const float *X, const float *shift, Py_ssize_t n,
                             Py_ssize_t d, const float *centers, Py_ssize_t K,
                             int64_t *labels, float *dist, ml_sgemm_fn gemm,
                             int method, int n_threads)
    int ml_kmeans_assign_accumulate_f64(const double *X, const double *w, Py_ssize_t n,
                                        Py_ssize_t d, const double *centers, Py_ssize_t K,
                                        double *sums, double *wsum, int64_t *labels,
                                        double *inertia, ml_dgemm_fn gemm, int method,
                                        int n_threads)
    int ml_kmeans_assign_accumulate_f32(const float *X, const float *w, Py_ssize_t n,
                                        Py_ssize_t d, const float *centers, Py_ssize_t K,
                                        double *sums, double *wsum, int64_t *labels,
                                        double *inertia, ml_sgemm_fn gemm, int method,
                                        int n_threads)
    int ml_kmeans_pp_step_f64(const double *X, const double *w, Py_ssize_t n,
                              Py_ssize_t d, const int64_t *cand, Py_ssize_t T,
                              double *closest, Py_ssize_t *best, double *pot,
                              double *scores, int n_threads)
    int ml_kmeans_pp_step_f32(const float *X, const float *w, Py_ssize_t n,
                              Py_ssize_t d, const int64_t *cand, Py_ssize_t T,
                              double *closest, Py_ssize_t *best, double *pot,
                              double *scores, int n_threads)

cdef extern from "order.h" nogil:
    int ml_stable_order_nonneg(const double *key, Py_ssize_t n, int64_t *perm,
                               int n_threads)
    int ml_ordered_cumsum(const double *v, const double *w, const int64_t *order,
                          Py_ssize_t n, double *cum)

# The signature of the Lloyd, Hamerly and online drivers.
ctypedef int (*run_f64_fn)(const double *, const double *, Py_ssize_t, Py_ssize_t,
                           Py_ssize_t, double *, int, double, int64_t *, double *, int *,
                           int *, ml_dgemm_fn, int, int) noexcept nogil
ctypedef int (*run_f32_fn)(const float *, const float *, Py_ssize_t, Py_ssize_t,
                           Py_ssize_t, float *, int, double, int64_t *, double *, int *,
                           int *, ml_sgemm_fn, int, int) noexcept nogil

# "auto": the table in csrc/kmeans.h; "direct": the same without BLAS; "gemm":
# BLAS; "tile", "small", "lanes": force one no-BLAS kernel (tests, crossover
# benchmarks; "small" serves d <= 8 only, the tile above; "lanes" is never
# screened); "screen": the lanes kernel behind the screen at any shape (the
# same labels): float32 for float64 data, int16 for float32 data where the
# CPU has AVX-512 VNNI (else "lanes").
_METHODS = {"auto": 0, "direct": 1, "gemm": 2, "tile": 3, "small": 4, "lanes": 5,
            "screen": 6}
_KERNELS = ("tile", "small", "lanes", "gemm")


cdef int _method_code(method) except -1:
    try:
        return _METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}") from None


cdef int _itemsize(dtype) except -1:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    return dt.itemsize


def uses_gemm(Py_ssize_t n_features, method="auto", Py_ssize_t n_clusters=1):
    """Whether the assignment of rows with n_features columns to n_clusters
    centers calls BLAS (the crossover table in csrc/kmeans.h decides)."""
    code = _method_code(method)
    return bool(ml_kmeans_uses_gemm(n_features, n_clusters, code, 1))


def kernel(Py_ssize_t n_features, Py_ssize_t n_clusters, method="auto", dtype=np.float64):
    """The kernel that serves Lloyd's unpruned passes for this shape and dtype
    (float64 or float32): "small" (small-d), "lanes" (centers across the
    vector lanes), "tile" or "gemm" (the table in csrc/kmeans.h decides)."""
    code = _method_code(method)
    return _KERNELS[ml_kmeans_kernel(n_features, n_clusters, code, 1, _itemsize(dtype))]


def screens(Py_ssize_t n_features, Py_ssize_t n_clusters, method="auto", dtype=np.float64):
    """Whether Lloyd's passes for this shape and dtype run behind a screen
    (the lanes kernel; the table in csrc/kmeans.h): float64 data scored in
    float32, float32 data in int16 (CPUs with AVX-512 VNNI); the same labels,
    most rows never scored in the full precision."""
    code = _method_code(method)
    return bool(ml_kmeans_screens(n_features, n_clusters, code, 1, _itemsize(dtype)))


def prefers_pruning(Py_ssize_t n_features, Py_ssize_t n_clusters):
    """Whether algorithm="auto" prunes for this shape (the table in csrc/kmeans.h)."""
    return bool(ml_kmeans_prefers_pruning(n_features, n_clusters))


def simd_level():
    """ISA clone the kernels run: 4 (x86-64-v4), 3 (x86-64-v3), 1 (baseline), 0 (none built)."""
    return ml_kmeans_simd_level()


def wide_vectors():
    """(used, probe): whether the lanes kernels run 64-byte vectors here (the
    AVX-512 level on a CPU whose 512-bit FMAs run at full rate; csrc/dispatch.h,
    ml_wide_vectors), and the probe's zmm / ymm time ratio (-1: not timed, e.g.
    no AVX-512, or METRICLUST_WIDE_VECTORS set). Only speed depends on it."""
    return ml_kmeans_wide_lanes() != 0, float(ml_wide_vectors_ratio())



cdef object _check_weights(object sample_weight, const real[:, ::1] X, const real **data):
    """sample_weight: None, or a C-contiguous 1-D array of X's dtype with one entry
    per row of X (callers have checked that X has rows). Sets ``*data`` to its
    first entry (NULL for None) and returns the array: the caller keeps it while
    the C core reads ``*data`` (np.asarray may have made it here, from a list)."""
    data[0] = NULL
    if sample_weight is None:
        return None
    dtype = np.float64 if real is double else np.float32
    w = np.asarray(sample_weight)
    if w.dtype != dtype or w.ndim != 1 or not w.flags.c_contiguous:
        raise ValueError(f"sample_weight must be a C-contiguous 1-D {np.dtype(dtype)} array")
    if w.shape[0] != X.shape[0]:
        raise ValueError(f"sample_weight has {w.shape[0]} entries, X has {X.shape[0]} rows")
    cdef const real[::1] wv = w
    data[0] = &wv[0]
    return w


cdef enum:
    _LLOYD = 0
    _ONLINE = 1
    _HAMERLY = 2


cdef int _check_rows_centers(Py_ssize_t n, Py_ssize_t d, Py_ssize_t center_d,
                             Py_ssize_t K) except -1:
    """Non-empty X, centers with X's features, at least one center."""
    if n < 1 or d < 1:
        raise ValueError(f"X must be non-empty, got shape ({n}, {d})")
    if center_d != d:
        raise ValueError(f"centers have {center_d} features, X has {d}")
    if K < 1:
        raise ValueError("at least one center is required")
    return 0


def _run(int algo, const real[:, ::1] X, object sample_weight, real[:, ::1] centers,
         int max_iter, double tol, method, int n_threads):
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = centers.shape[0]
    cdef int code = _method_code(method)
    if n < 1 or d < 1:
        raise ValueError(f"X must be non-empty, got shape ({n}, {d})")
    if centers.shape[1] != d:
        raise ValueError(f"centers have {centers.shape[1]} features, X has {d}")
    if K < 1 or K > n:
        raise ValueError(f"n_samples={n} should be >= n_clusters={K} >= 1")
    if real is float and K > 16777216:
        raise ValueError("float32 k-means supports at most 2**24 clusters")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    cdef const real *wp = NULL
    w = _check_weights(sample_weight, X, &wp)
    labels = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] lv = labels
    cdef double inertia = 0
    cdef int n_iter = 0, strict = 0, status
    # One call per dtype: the three drivers share their signature.
    cdef run_f64_fn run_f64 = (ml_kmeans_online_f64 if algo == _ONLINE else
                               ml_kmeans_hamerly_f64 if algo == _HAMERLY else
                               ml_kmeans_lloyd_f64)
    cdef run_f32_fn run_f32 = (ml_kmeans_online_f32 if algo == _ONLINE else
                               ml_kmeans_hamerly_f32 if algo == _HAMERLY else
                               ml_kmeans_lloyd_f32)
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = run_f64(&X[0, 0], wp, n, d, K, &centers[0, 0], max_iter, tol, &lv[0],
                             &inertia, &n_iter, &strict, <ml_dgemm_fn>dgemm, code, n_threads)
        else:
            status = run_f32(&X[0, 0], wp, n, d, K, &centers[0, 0], max_iter, tol, &lv[0],
                             &inertia, &n_iter, &strict, <ml_sgemm_fn>sgemm, code, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "kmeans")
    return labels, inertia, n_iter, bool(strict)


def lloyd(const real[:, ::1] X, object sample_weight, real[:, ::1] centers, int max_iter,
          double tol, method="auto", int n_threads=0):
    """Batch k-means from ``centers`` (updated in place).

    Returns ``(labels int64, inertia, n_iter, strict_convergence)``. ``tol`` is
    absolute (squared center shift). ``sample_weight`` is None or a 1-D array
    of X's dtype.
    """
    return _run(_LLOYD, X, sample_weight, centers, max_iter, tol, method, n_threads)


def hamerly(const real[:, ::1] X, object sample_weight, real[:, ::1] centers, int max_iter,
            double tol, method="auto", int n_threads=0):
    """Lloyd with exact pruning by Hamerly's bounds: the same result as ``lloyd``
    (labels, centers, inertia, n_iter), fewer distance computations."""
    return _run(_HAMERLY, X, sample_weight, centers, max_iter, tol, method, n_threads)


def online(const real[:, ::1] X, object sample_weight, real[:, ::1] centers, int max_iter,
           double tol, method="auto", int n_threads=0):
    """Sequential (online) k-means from ``centers`` (updated in place); as ``lloyd``."""
    return _run(_ONLINE, X, sample_weight, centers, max_iter, tol, method, n_threads)


def assign(const real[:, ::1] X, const real[:, ::1] centers, method="auto",
           int n_threads=0, bint return_distances=True, shift=None):
    """Nearest center of each row: ``(labels int64, squared distances or None)``.

    With ``shift`` (n_features values, cast to X's dtype) the rows are
    ``X - shift``, subtracted chunk by chunk in the pass (the same bits as
    numpy's ``X - shift``, no shifted copy of X); ``centers`` are in that
    shifted space."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = centers.shape[0]
    cdef int code = _method_code(method)
    if d < 1:
        raise ValueError("X must have at least one feature")
    if centers.shape[1] != d:
        raise ValueError(f"centers have {centers.shape[1]} features, X has {d}")
    if K < 1:
        raise ValueError("at least one center is required")
    if real is float and K > 16777216:
        raise ValueError("float32 k-means supports at most 2**24 clusters")
    dtype = np.float64 if real is double else np.float32
    cdef const real[::1] sv
    cdef const real *sp = NULL
    if shift is not None:
        sv = np.ascontiguousarray(shift, dtype=dtype).reshape(-1)
        if sv.shape[0] != d:
            raise ValueError(f"shift has {sv.shape[0]} values, X has {d} features")
        sp = &sv[0]
    labels = np.empty(n, dtype=np.int64)
    dist = np.empty(n, dtype=dtype) if return_distances else None
    if n == 0:
        return labels, dist
    cdef int64_t[::1] lv = labels
    cdef real[::1] dv
    cdef real *dp = NULL
    if return_distances:
        dv = dist
        dp = &dv[0]
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_kmeans_assign_f64(&X[0, 0], sp, n, d, &centers[0, 0], K, &lv[0], dp,
                                          <ml_dgemm_fn>dgemm, code, n_threads)
        else:
            status = ml_kmeans_assign_f32(&X[0, 0], sp, n, d, &centers[0, 0], K, &lv[0], dp,
                                          <ml_sgemm_fn>sgemm, code, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "assign")
    return labels, dist


def screen_probe(const real[:, ::1] X, const real[:, ::1] centers, bint with_margin=True):
    """Tests only: the screen of one assignment at any shape (float64 rows in
    float32; float32 rows in int16, ValueError where the CPU lacks AVX-512
    VNNI). Returns ``(labels int64, settled bool, margin float64)``: the
    screen's label of each row (-1 where the centers are out of its range),
    whether the screen's bound proves it is the full-precision kernel's (else
    the row is re-scored) and, for a settled row, the lower bound the pruned
    pass keeps on its squared distance to the second nearest center less that
    to the nearest (within a relative 2^-50; -inf where not settled).
    ``with_margin=False`` asks for no margin (returned as -inf), as Lloyd's
    unpruned passes do: the int16 screen then settles rows by its threshold
    test instead (one block of centers, K <= 64)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = centers.shape[0]
    _check_rows_centers(n, d, centers.shape[1], K)
    labels = np.empty(n, dtype=np.int64)
    settled = np.empty(n, dtype=np.uint8)
    margin = np.empty(n, dtype=np.float64)
    cdef int64_t[::1] lv = labels
    cdef unsigned char[::1] sv = settled
    margin[:] = -np.inf
    cdef double[::1] mv = margin
    cdef double *mp = &mv[0] if with_margin else NULL
    cdef int status
    with nogil:
        if real is double:
            status = ml_kmeans_screen_probe_f64(&X[0, 0], n, d, &centers[0, 0], K, &lv[0],
                                                &sv[0], mp)
        else:
            status = ml_kmeans_screen_probe_f32(&X[0, 0], n, d, &centers[0, 0], K, &lv[0],
                                                &sv[0], mp)
    _raise(status, "screen_probe")
    return labels, settled.astype(bool), margin


def assign_accumulate(const real[:, ::1] X, object sample_weight, const real[:, ::1] centers,
                      double[:, ::1] sums_out, double[::1] counts_out, int64_t[::1] labels_out,
                      method="auto", int n_threads=0, bint with_inertia=True):
    """One block of a Lloyd iteration: labels, per-cluster sums and weights, inertia.

    Fills ``labels_out`` (int64, n) with each row's nearest center (ties to
    the lowest index), ``sums_out`` (float64, K x d) with the weighted sum of
    the rows of each cluster and ``counts_out`` (float64, K) with their total
    weight (both overwritten, not added to), and returns the block's inertia
    (weighted squared distances to the assigned centers, float64). These are
    the labels and sums of one pass of ``lloyd``, bit for bit, whatever
    ``n_threads``; reduce several blocks' outputs in a fixed order to keep
    that property. ``with_inertia=False`` skips the inertia (a second read
    of the block) and returns NaN. ``labels_out=None``: the sums only (no
    label output; the same sums and inertia).
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = centers.shape[0]
    cdef int code = _method_code(method)
    _check_rows_centers(n, d, centers.shape[1], K)
    if real is float and K > 16777216:
        raise ValueError("float32 k-means supports at most 2**24 clusters")
    if sums_out.shape[0] != K or sums_out.shape[1] != d:
        raise ValueError(f"sums_out must have shape ({K}, {d}), got "
                         f"({sums_out.shape[0]}, {sums_out.shape[1]})")
    if counts_out.shape[0] != K:
        raise ValueError(f"counts_out must have {K} entries, got {counts_out.shape[0]}")
    cdef int64_t *lp = NULL
    if labels_out is not None:
        if labels_out.shape[0] != n:
            raise ValueError(f"labels_out must have {n} entries, got {labels_out.shape[0]}")
        lp = &labels_out[0]
    cdef const real *wp = NULL
    w = _check_weights(sample_weight, X, &wp)
    cdef double inertia = 0
    cdef double *inertia_out = &inertia if with_inertia else NULL
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_kmeans_assign_accumulate_f64(
                &X[0, 0], wp, n, d, &centers[0, 0], K, &sums_out[0, 0], &counts_out[0],
                lp, inertia_out, <ml_dgemm_fn>dgemm, code, n_threads)
        else:
            status = ml_kmeans_assign_accumulate_f32(
                &X[0, 0], wp, n, d, &centers[0, 0], K, &sums_out[0, 0], &counts_out[0],
                lp, inertia_out, <ml_sgemm_fn>sgemm, code, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "assign_accumulate")
    return inertia if with_inertia else float("nan")


def pp_step(const real[:, ::1] X, object sample_weight, const int64_t[::1] candidates,
            double[::1] closest, int n_threads=0, double[::1] scores=None):
    """One k-means++ step: ``(index into candidates of the best, its potential)``.

    ``closest`` (float64, in/out) holds each row's squared distance to the
    nearest chosen center (+inf before the first) and is updated. ``scores``:
    None, or a float64 workspace of at least ``n * len(candidates)`` entries
    (worth giving where ``pp_keeps_scores`` says so, the same one for every step):
    the update then takes the best candidate's distances from the scoring pass
    instead of reading X again. The results are the same either way.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], T = candidates.shape[0]
    if n < 1 or d < 1:
        raise ValueError(f"X must be non-empty, got shape ({n}, {d})")
    if closest.shape[0] != n:
        raise ValueError(f"closest has {closest.shape[0]} entries, X has {n} rows")
    if T < 1:
        raise ValueError("at least one candidate is required")
    for t in range(T):
        if candidates[t] < 0 or candidates[t] >= n:
            raise ValueError(f"candidate {candidates[t]} out of range for {n} rows")
    cdef double *sp = NULL
    if scores is not None:
        if scores.shape[0] // T < n:
            raise ValueError(f"scores has {scores.shape[0]} entries, {n} rows and {T} "
                             f"candidates need {n * T}")
        sp = &scores[0]
    cdef const real *wp = NULL
    w = _check_weights(sample_weight, X, &wp)
    cdef Py_ssize_t best = 0
    cdef double pot = 0
    cdef int status
    cdef bint entered = interrupt_enter()
    with nogil:
        if real is double:
            status = ml_kmeans_pp_step_f64(&X[0, 0], wp, n, d, &candidates[0], T,
                                           &closest[0], &best, &pot, sp, n_threads)
        else:
            status = ml_kmeans_pp_step_f32(&X[0, 0], wp, n, d, &candidates[0], T,
                                           &closest[0], &best, &pot, sp, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "kmeans++")
    return int(best), pot


def sq_dist_to(const real[:, ::1] X, const double[::1] point, int n_threads=0):
    """Squared distances (float64) of every row of X to ``point`` (float64), summed
    in coordinate order as k-means++ sums them (the value order's key)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    if d < 1:
        raise ValueError(f"X must have at least one column, got shape ({n}, {d})")
    if point.shape[0] != d:
        raise ValueError(f"point has {point.shape[0]} entries, X has {d} columns")
    out = np.empty(n)
    if n == 0:
        return out
    cdef double[::1] ov = out
    cdef int status
    with nogil:
        if real is double:
            status = ml_kmeans_sq_dist_to_f64(&X[0, 0], n, d, &point[0], &ov[0], n_threads)
        else:
            status = ml_kmeans_sq_dist_to_f32(&X[0, 0], n, d, &point[0], &ov[0], n_threads)
    _raise(status, "sq_dist_to")
    return out


def center_rows(const real[:, ::1] X, const real[::1] shift, bint with_key=False,
                int n_threads=0, real[:, ::1] out=None):
    """``(X - shift, key)``: the rows of X less ``shift`` (X's dtype, numpy's
    arithmetic, on threads; into ``out`` if given, which is X itself, centered
    in place, or an array of X's shape that does not overlap it) and, with
    ``with_key``, their squared norms as ``sq_dist_to(X - shift, 0)`` computes
    them (float64), else None."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    if d < 1:
        raise ValueError(f"X must have at least one column, got shape ({n}, {d})")
    if shift.shape[0] != d:
        raise ValueError(f"shift has {shift.shape[0]} entries, X has {d} columns")
    if out is None:
        result = np.empty((n, d), dtype=np.float64 if real is double else np.float32)
    else:
        if out.shape[0] != n or out.shape[1] != d:
            raise ValueError(f"out has shape ({out.shape[0]}, {out.shape[1]}), X ({n}, {d})")
        result = out.base
        if n > 0 and <const void *>&out[0, 0] != <const void *>&X[0, 0] and \
                np.may_share_memory(np.asarray(out), np.asarray(X)):
            raise ValueError("out must be X itself or not overlap it")
    key = np.empty(n) if with_key else None
    if n == 0:
        return result, key
    cdef real[:, ::1] ov = result if out is None else out
    cdef double[::1] kv
    cdef double *kp = NULL
    if with_key:
        kv = key
        kp = &kv[0]
    cdef int status
    with nogil:
        if real is double:
            status = ml_kmeans_center_rows_f64(&X[0, 0], n, d, &shift[0], &ov[0, 0], kp,
                                               n_threads)
        else:
            status = ml_kmeans_center_rows_f32(&X[0, 0], n, d, &shift[0], &ov[0, 0], kp,
                                               n_threads)
    _raise(status, "center_rows")
    return result, key


def pp_keeps_scores(Py_ssize_t n_features, Py_ssize_t n_candidates, dtype):
    """Whether k-means++ steps with these many candidates should be given the
    ``scores`` workspace of ``pp_step`` (csrc/kmeans.h, ML_KM_PP_KEEP_SCORES)."""
    return bool(ml_kmeans_pp_keeps_scores(n_features, n_candidates,
                                          np.dtype(dtype).itemsize))


def stable_order(const double[::1] key, int n_threads=0):
    """``np.argsort(key, kind="stable")`` (int64) for keys that are +0.0,
    positive or +inf, by a radix sort of their bits: the same permutation,
    ~10x faster at 1e6 keys. ValueError on a negative key, -0.0 or NaN."""
    cdef Py_ssize_t n = key.shape[0]
    perm = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] pv = perm
    cdef int status = 0
    if n:
        with nogil:
            status = ml_stable_order_nonneg(&key[0], n, &pv[0], n_threads)
    _raise(status, "stable_order", "key must hold non-negative numbers (not -0.0, not NaN)")
    return perm


def ordered_cumsum(const double[::1] values, const int64_t[::1] order, object weights=None):
    """``np.cumsum(weights * values[order])`` (``weights`` None: of
    ``values[order]``), the same bits, in one pass (k-means++'s draws)."""
    cdef Py_ssize_t n = values.shape[0]
    if order.shape[0] != n:
        raise ValueError(f"order has {order.shape[0]} entries, values has {n}")
    cdef const double[::1] wv
    cdef const double *wp = NULL
    if weights is not None:
        wv = np.ascontiguousarray(weights, dtype=np.float64)
        if wv.shape[0] != n:
            raise ValueError(f"weights has {wv.shape[0]} entries, values has {n}")
        if n:
            wp = &wv[0]
    cum = np.empty(n)
    cdef double[::1] cv = cum
    cdef int status = 0
    if n:
        with nogil:
            status = ml_ordered_cumsum(&values[0], wp, &order[0], n, &cv[0])
    _raise(status, "ordered_cumsum", "order must hold row indices in [0, n)")
    return cum
