/* The k-means core: see kmeans.h.  The kernels are written once
 * in kmeans_impl.h and instantiated here for float64 and float32. */
#include "kmeans.h"

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
    const int small_ok = (d <= ML_KM_SMALL_MAX_D && K <= ML_KM_SMALL_MAX_K &&
                          (d < ML_KM_SMALL_MAX_D || K <= ML_KM_SMALL_MAX_K_AT_MAX_D)) ||
                         (d == ML_KM_SMALL_EXTRA_D && K <= ML_KM_SMALL_MAX_K_AT_EXTRA_D &&
                          itemsize == ML_KM_SMALL_EXTRA_ITEMSIZE);
    const int small_built = d <= ML_KM_SMALL_KERNEL_D || d == ML_KM_SMALL_EXTRA_D;
    switch (method) {
    case ML_KM_TILE: return ML_KM_KERNEL_TILE;
    case ML_KM_SMALL:
        return small_built ? ML_KM_KERNEL_SMALL : ML_KM_KERNEL_TILE;
    case ML_KM_LANES: return ML_KM_KERNEL_LANES;
    default:
        return small_ok ? ML_KM_KERNEL_SMALL : ML_KM_KERNEL_LANES;
    }
}

int ml_kmeans_prefers_pruning(ptrdiff_t d, ptrdiff_t K)
{
    return K >= ML_KM_PRUNE_MIN_K && d >= ML_KM_PRUNE_MIN_D;
}

int ml_kmeans_simd_level(void) { return ml_simd_level(); }

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
