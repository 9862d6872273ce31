#include "sums.h"
#include "thresholds.h"  /* ML_SUM_MIN_PARALLEL */

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
