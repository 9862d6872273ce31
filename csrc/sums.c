#include "sums.h"
#include "thresholds.h"  /* ML_SUM_MIN_PARALLEL */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows per block: the unit of work of one thread and of the interrupt check. */
#define ML_SUM_BLOCK 4096
/* Scratch bound: at most ML_SUM_MAX_PARTIALS partial K x p sums, and at most
 * ML_SUM_SCRATCH_BYTES of them (one partial is `out` itself, so a K x p too
 * large for two gets no scratch and one thread). */
#define ML_SUM_MAX_PARTIALS 64
#define ML_SUM_SCRATCH_BYTES ((double)(32 << 20))

/* Number of partial sums: a function of (n, K, p) only, never of the thread
 * count, so the float result is the same on any number of threads. */
static ptrdiff_t n_partials_for(ptrdiff_t n_blocks, ptrdiff_t K, ptrdiff_t p) {
    double fit = ML_SUM_SCRATCH_BYTES / ((double)K * (double)p * sizeof(double));
    ptrdiff_t P = n_blocks < ML_SUM_MAX_PARTIALS ? n_blocks : ML_SUM_MAX_PARTIALS;
    if ((double)(P - 1) > fit) P = (ptrdiff_t)fit + 1;
    return P < 1 ? 1 : P;
}

/* Partial s covers the contiguous blocks [s*nb/P, (s+1)*nb/P) in row order;
 * partials are then added pairwise (0+1, 2+3, ..., then 0+2, ...), a fixed
 * tree; `out` is partial 0. */
#define DEFINE_CLUSTER_SUMS(SUFFIX, REAL)                                       \
int ml_cluster_sums_##SUFFIX(const REAL *X, ptrdiff_t n, ptrdiff_t p,          \
                             const int64_t *labels, ptrdiff_t K, double *out,  \
                             int n_threads) {                                  \
    if (n < 0 || p < 0 || K <= 0) return ML_ERR_ARG;                           \
    for (ptrdiff_t i = 0; i < n; ++i)                                          \
        if (labels[i] < 0 || labels[i] >= K) return ML_ERR_ARG;                \
    if (p == 0) return ML_OK;  /* nothing to sum (out may be NULL) */          \
    const ptrdiff_t Kp = K * p;                                                \
    memset(out, 0, (size_t)Kp * sizeof(double));                               \
    const ptrdiff_t nb = (n + ML_SUM_BLOCK - 1) / ML_SUM_BLOCK;                \
    if (nb == 0) return ML_OK;                                                 \
    const ptrdiff_t P = n_partials_for(nb, K, p);                              \
    double *scratch = NULL;                                                    \
    if (P > 1) {                                                               \
        scratch = calloc((size_t)((P - 1) * Kp), sizeof(double));              \
        if (!scratch) return ML_ERR_ALLOC;                                     \
    }                                                                          \
    _Pragma("omp parallel for schedule(dynamic, 1) if(P > 1 && n * p >= ML_SUM_MIN_PARALLEL) num_threads(ml_threads(n_threads))") \
    for (ptrdiff_t s = 0; s < P; ++s) {                                        \
        double *acc = s == 0 ? out : scratch + (s - 1) * Kp;                   \
        for (ptrdiff_t b = s * nb / P; b < (s + 1) * nb / P; ++b) {            \
            if (ml_interrupted()) break;                                       \
            const ptrdiff_t end = (b + 1) * ML_SUM_BLOCK < n ? (b + 1) * ML_SUM_BLOCK : n; \
            for (ptrdiff_t i = b * ML_SUM_BLOCK; i < end; ++i) {               \
                const REAL *x = X + i * p;                                     \
                double *row = acc + labels[i] * p;                             \
                for (ptrdiff_t j = 0; j < p; ++j) row[j] += (double)x[j];      \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    for (ptrdiff_t step = 1; step < P; step *= 2)                              \
        for (ptrdiff_t s = 0; s + step < P; s += 2 * step) {                   \
            double *dst = s == 0 ? out : scratch + (s - 1) * Kp;               \
            const double *src = scratch + (s + step - 1) * Kp;                 \
            for (ptrdiff_t t = 0; t < Kp; ++t) dst[t] += src[t];               \
        }                                                                      \
    free(scratch);                                                             \
    return ml_interrupted() ? ML_ERR_INTERRUPTED : ML_OK;                      \
}

DEFINE_CLUSTER_SUMS(f64, double)
DEFINE_CLUSTER_SUMS(f32, float)

/* Clang contracts a * b + c inside one expression unless told not to. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#define DEFINE_COLUMN_BLOCK_SUMS(SUFFIX, REAL)                                  \
int ml_column_block_sums_##SUFFIX(const REAL *X, ptrdiff_t n, ptrdiff_t p,      \
                                  ptrdiff_t block_rows, const double *center,   \
                                  double *out, int n_threads) {                 \
    if (n < 0 || p < 1 || block_rows < 1) return ML_ERR_ARG;                   \
    const ptrdiff_t nb = n / block_rows + (n % block_rows != 0);               \
    _Pragma("omp parallel for schedule(dynamic, 1) if(nb > 1 && n * p >= ML_SUM_MIN_PARALLEL) num_threads(ml_threads(n_threads))") \
    for (ptrdiff_t b = 0; b < nb; ++b) {                                       \
        double *ML_RESTRICT acc = out + b * p;                                 \
        const ptrdiff_t end = n - b * block_rows < block_rows ? n : (b + 1) * block_rows; \
        for (ptrdiff_t j = 0; j < p; ++j) acc[j] = 0.0;                        \
        if (ml_interrupted()) continue;                                        \
        for (ptrdiff_t i = b * block_rows; i < end; ++i) {                     \
            const REAL *ML_RESTRICT x = X + i * p;                             \
            if (center) {                                                      \
                for (ptrdiff_t j = 0; j < p; ++j) {                            \
                    const double u = (double)x[j] - center[j];                 \
                    const double q = u * u;                                    \
                    acc[j] += q;                                               \
                }                                                              \
            } else {                                                           \
                for (ptrdiff_t j = 0; j < p; ++j) acc[j] += (double)x[j];      \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    return ml_interrupted() ? ML_ERR_INTERRUPTED : ML_OK;                      \
}

DEFINE_COLUMN_BLOCK_SUMS(f64, double)
DEFINE_COLUMN_BLOCK_SUMS(f32, float)

int ml_contingency(const int64_t *a, const int64_t *b, ptrdiff_t n,
                   ptrdiff_t ka, ptrdiff_t kb, int64_t *table) {
    if (n < 0 || ka <= 0 || kb <= 0) return ML_ERR_ARG;
    memset(table, 0, (size_t)(ka * kb) * sizeof(int64_t));
    for (ptrdiff_t i = 0; i < n; ++i) {
        if (a[i] < 0 || a[i] >= ka || b[i] < 0 || b[i] >= kb) return ML_ERR_ARG;
        table[a[i] * kb + b[i]] += 1;
    }
    return ML_OK;
}

/* ml_value_range: per block a running minimum and maximum in independent
 * lanes (a NaN compares false and leaves them) and a NaN flag; the blocks
 * are combined in any order (min and max are exact).  On x86 the lanes are
 * SSE2 minpd/maxpd (minps/maxps), whose result is the second operand when
 * one is NaN: GCC's code for the plain comparisons below depends on its
 * flags (with -fno-trapping-math it branches, 2x slower on random data). */
#define VR_BLOCK (ML_SUM_BLOCK * 16)
#if defined(__SSE2__)
#include <emmintrin.h>
#define VR_VEC(SUFFIX, VT, W, SET1, LOAD, MIN, MAX, UNORD, OR, MASK)            \
static ptrdiff_t value_range_vec_##SUFFIX(const void *xv, ptrdiff_t m,          \
                                          double *lo, double *hi, int *nan) {   \
    const ptrdiff_t m4 = m / (4 * W) * (4 * W);                                 \
    VT l[4], h[4], u[4];                                                        \
    for (int t = 0; t < 4; ++t) {                                               \
        l[t] = SET1(INFINITY);                                                  \
        h[t] = SET1(-INFINITY);                                                 \
        u[t] = SET1(0);                                                         \
    }                                                                           \
    for (ptrdiff_t i = 0; i < m4; i += 4 * W)                                   \
        for (int t = 0; t < 4; ++t) {                                           \
            const VT v = LOAD(xv, i + t * W);                                   \
            l[t] = MIN(v, l[t]);                                                \
            h[t] = MAX(v, h[t]);                                                \
            u[t] = OR(u[t], UNORD(v, v));                                       \
        }                                                                       \
    for (int t = 0; t < 4; ++t) {                                               \
        for (int k = 0; k < W; ++k) {                                           \
            const double a = (double)l[t][k], b = (double)h[t][k];              \
            *lo = a < *lo ? a : *lo;                                            \
            *hi = b > *hi ? b : *hi;                                            \
        }                                                                       \
        *nan |= MASK(u[t]) != 0;                                                \
    }                                                                           \
    return m4;                                                                  \
}
#define VR_LOAD_PD(x, i) _mm_loadu_pd((const double *)(x) + (i))
#define VR_LOAD_PS(x, i) _mm_loadu_ps((const float *)(x) + (i))
VR_VEC(f64, __m128d, 2, _mm_set1_pd, VR_LOAD_PD, _mm_min_pd, _mm_max_pd, _mm_cmpunord_pd, _mm_or_pd, _mm_movemask_pd)
VR_VEC(f32, __m128, 4, _mm_set1_ps, VR_LOAD_PS, _mm_min_ps, _mm_max_ps, _mm_cmpunord_ps, _mm_or_ps, _mm_movemask_ps)
#else
#define value_range_vec_f64(x, m, lo, hi, nan) ((ptrdiff_t)0)
#define value_range_vec_f32(x, m, lo, hi, nan) ((ptrdiff_t)0)
#endif

#define DEFINE_VALUE_RANGE(SUFFIX, REAL)                                        \
int ml_value_range_##SUFFIX(const REAL *x, ptrdiff_t n, double *lo, double *hi, \
                            int *nan, int n_threads) {                          \
    if (n < 1) return ML_ERR_ARG;                                               \
    const ptrdiff_t nb = (n + VR_BLOCK - 1) / VR_BLOCK;                         \
    double glo = INFINITY, ghi = -INFINITY;                                     \
    int gnan = 0;                                                               \
    _Pragma("omp parallel for schedule(static) reduction(min: glo) reduction(max: ghi) reduction(|: gnan) if(n >= ML_SUM_MIN_PARALLEL) num_threads(ml_threads(n_threads))") \
    for (ptrdiff_t b = 0; b < nb; ++b) {                                        \
        const REAL *xb = x + b * VR_BLOCK;                                      \
        const ptrdiff_t m = n - b * VR_BLOCK < VR_BLOCK ? n - b * VR_BLOCK : VR_BLOCK; \
        double bl = INFINITY, bh = -INFINITY;                                   \
        int bn = 0;                                                             \
        for (ptrdiff_t i = value_range_vec_##SUFFIX(xb, m, &bl, &bh, &bn); i < m; ++i) { \
            const double v = (double)xb[i];                                     \
            bl = v < bl ? v : bl;                                               \
            bh = v > bh ? v : bh;                                               \
            bn |= v != v;                                                       \
        }                                                                       \
        glo = bl < glo ? bl : glo;                                              \
        ghi = bh > ghi ? bh : ghi;                                              \
        gnan |= bn;                                                             \
    }                                                                           \
    *lo = glo;                                                                  \
    *hi = ghi;                                                                  \
    *nan = gnan;                                                                \
    return ML_OK;                                                               \
}
DEFINE_VALUE_RANGE(f64, double)
DEFINE_VALUE_RANGE(f32, float)
