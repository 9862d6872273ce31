/* The k-means core: see kmeans.h.  The kernels are written once
 * in kmeans_impl.h and instantiated here for float64 and float32. */
#include "kmeans.h"
#include "kmeans_q16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"

#include <float.h>

int ml_kmeans_uses_gemm(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm)
{
    if (method == ML_KM_GEMM) return 1;
    if (method != ML_KM_AUTO || !have_gemm) return 0;
    return d > ML_KM_TILE_MAX_D || K > ML_KM_TILE_MAX_K;
}

int ml_kmeans_kernel(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm,
                     int itemsize)
{
    if (ml_kmeans_uses_gemm(d, K, method, have_gemm)) return ML_KM_KERNEL_GEMM;
    int small_ok = (d <= ML_KM_SMALL_MAX_D && K <= ML_KM_SMALL_MAX_K &&
                    (d < ML_KM_SMALL_MAX_D || K <= ML_KM_SMALL_MAX_K_AT_MAX_D)) ||
                   (d == ML_KM_SMALL_EXTRA_D && K <= ML_KM_SMALL_MAX_K_AT_EXTRA_D &&
                    itemsize == ML_KM_SMALL_EXTRA_ITEMSIZE);
    /* The lanes kernel in 512-bit vectors takes the larger K (kmeans.h). */
    if (small_ok && method == ML_KM_AUTO && K > ML_KM_SMALL_WIDE_MAX_K &&
        d >= (itemsize == 8 ? ML_KM_SMALL_WIDE_MIN_D_F64 : ML_KM_SMALL_WIDE_MIN_D_F32) &&
        ml_kmeans_wide_lanes())
        small_ok = 0;
    const int small_built = d <= ML_KM_SMALL_KERNEL_D || d == ML_KM_SMALL_EXTRA_D;
    switch (method) {
    case ML_KM_TILE: return ML_KM_KERNEL_TILE;
    case ML_KM_SMALL:
        return small_built ? ML_KM_KERNEL_SMALL : ML_KM_KERNEL_TILE;
    case ML_KM_LANES: return ML_KM_KERNEL_LANES;
    case ML_KM_SCREEN: return ML_KM_KERNEL_LANES;
    default:
        return small_ok ? ML_KM_KERNEL_SMALL : ML_KM_KERNEL_LANES;
    }
}

int ml_kmeans_screens(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm,
                      int itemsize)
{
    if (d >= ((ptrdiff_t)1 << 20) ||
        ml_kmeans_kernel(d, K, method, have_gemm, itemsize) != ML_KM_KERNEL_LANES)
        return 0;
    if (itemsize == 4) {
        if (!ml_q16_available()) return 0;
        if (method == ML_KM_SCREEN) return 1;
        return (method == ML_KM_AUTO || method == ML_KM_DIRECT) &&
               d >= ML_KM_Q16_MIN_D && K >= ML_KM_Q16_MIN_K;
    }
    if (method == ML_KM_SCREEN) return 1;
    if (method != ML_KM_AUTO && method != ML_KM_DIRECT) return 0;
#if !(ML_HAVE_VECTOR_EXT && (defined(__clang__) || __GNUC__ >= 9))
    /* The plain C kernels (no vector extensions): float32 gains nothing
     * there and the screen only adds work (harness, -DML_NO_VECTOR_EXT,
     * d = 33, K = 17: 9.3 against 5.4 ms per iteration). */
    return 0;
#endif
    return (d >= ML_KM_SCREEN_MIN_D && K >= ML_KM_SCREEN_MIN_K) ||
           (d >= 16 && K >= ML_KM_SCREEN_MIN_K_LOW_D);
}

int ml_kmeans_prefers_pruning(ptrdiff_t d, ptrdiff_t K)
{
    return K >= ML_KM_PRUNE_MIN_K && d >= ML_KM_PRUNE_MIN_D;
}

int ml_kmeans_pp_keeps_scores(ptrdiff_t d, ptrdiff_t T, int itemsize)
{
    return ML_KM_PP_KEEP_SCORES * T * (ptrdiff_t)sizeof(double) <= d * itemsize;
}

int ml_kmeans_simd_level(void) { return ml_simd_level(); }

int ml_kmeans_wide_lanes(void) { return ml_simd_level() >= 4 && ml_wide_vectors(); }

/* The float32 screen of the float64 passes (ml_kmeans_screens): the float32
 * lanes kernel that keeps each row's best and second-best score, compiled
 * with the float32 instance below (KM_LANES2) and called by the float64 one
 * (KM_SCREEN). */
typedef void (*km_screen_fn)(const double *X, const double *t, ptrdiff_t m,
                             ptrdiff_t d, const float *ct, ptrdiff_t nb,
                             float *x32, int32_t *lab, float *best,
                             float *second, double *xn);
static km_screen_fn lanes2_for_f32(ptrdiff_t K, ptrdiff_t *W, ptrdiff_t *nb);

#define KM_SCREEN 1
#define REAL double
#define SFX f64
#define GEMM_T ml_dgemm_fn
#define REAL_EPS DBL_EPSILON
#define REAL_INT int64_t  /* the integer as wide as REAL (vector labels) */
#include "kmeans_impl.h"
#undef REAL
#undef SFX
#undef GEMM_T
#undef REAL_EPS
#undef REAL_INT
#undef KM_SCREEN

#define KM_SCREEN 1
#define KM_SCREEN_Q16 1
#define KM_LANES2 1
#define REAL float
#define SFX f32
#define GEMM_T ml_sgemm_fn
#define REAL_EPS FLT_EPSILON
#define REAL_INT int32_t
#include "kmeans_impl.h"
#undef REAL
#undef SFX
#undef GEMM_T
#undef REAL_EPS
#undef REAL_INT
#undef KM_SCREEN
#undef KM_SCREEN_Q16
#undef KM_LANES2

#ifdef ML_KM_SCREEN_STATS
/* The screen's counters (C harness builds only; see screen_rows). */
void ml_kmeans_screen_stats(long long out[5], int reset)
{
    for (int i = 0; i < 5; ++i) {
        out[i] = km_screen_stats[i];
        if (reset) km_screen_stats[i] = 0;
    }
}
#endif
