/* Gaussian Gram matrix G[i, j] = exp(-||x_i - y_j||^2 / (2 sigma^2)) (SPEC 0.2)
 * and the fused product G @ V that never stores G.
 *
 * Layout: every matrix is row-major and C-contiguous. X is nx x d, Y is ny x d
 * (Y == NULL: the symmetric case Y = X), G is nx x ny, V is ny x k, out is nx x k.
 * Sizes must be checked by the caller; nx, ny, d, k must fit in an int (the
 * BLAS interface) and ML_ERR_ARG is returned otherwise.
 *
 * Two ways to get the squared distances of a tile:
 *   d <= ML_GRAM_DIRECT_MAX_D (or gemm == NULL): direct differences
 *       sum_k (x_ik - y_jk)^2, vectorized over j (Y is transposed once);
 *       exact up to rounding, no cancellation, centering not needed;
 *   otherwise: the GEMM form ||x||^2 - 2 x.y + ||y||^2 on data centered by X's
 *       column mean (which limits the cancellation), clamped at 0; one BLAS
 *       gemm call per tile. The caller must hold BLAS to one thread.
 * Each thread computes a 128 x 128 tile in its own buffer (L2), with the exp
 * fused into the tile loop (a vectorizable exp with < 1e-15 relative error,
 * see gram.c), then copies it into G by contiguous rows. The symmetric case
 * computes the upper triangle of tiles and writes each also transposed, so G
 * is exactly symmetric with an exact unit diagonal.
 * Every entry is computed by the same code whatever thread computes it: results
 * are bitwise identical for any thread count. */
#ifndef METRICLUST_GRAM_H
#define METRICLUST_GRAM_H
#include "common.h"

/* Crossover measured on AVX-512 (N = 4000, one thread, output buffer reused):
 * direct 140 vs GEMM 135 ms at d = 8, 169 vs 148 at d = 12, 189 vs 161 at 16;
 * direct differences are also the more accurate, so they keep the tie. */
#define ML_GRAM_DIRECT_MAX_D 8

int ml_gaussian_gram_f64(const double *X, ptrdiff_t nx, const double *Y,
                         ptrdiff_t ny, ptrdiff_t d, double sigma, double *G,
                         ml_dgemm_fn gemm, int n_threads);
int ml_gaussian_gram_f32(const float *X, ptrdiff_t nx, const float *Y,
                         ptrdiff_t ny, ptrdiff_t d, double sigma, float *G,
                         ml_sgemm_fn gemm, int n_threads);

/* out = G(X, Y) @ V without storing G: row blocks of X in parallel, each row
 * block accumulates its column tiles in a fixed order (bitwise identical for
 * any thread count). gemm is required (used for the tile x V products). */
int ml_gram_matmat_f64(const double *X, ptrdiff_t nx, const double *Y,
                       ptrdiff_t ny, ptrdiff_t d, double sigma, const double *V,
                       ptrdiff_t k, double *out, ml_dgemm_fn gemm, int n_threads);
int ml_gram_matmat_f32(const float *X, ptrdiff_t nx, const float *Y,
                       ptrdiff_t ny, ptrdiff_t d, double sigma, const float *V,
                       ptrdiff_t k, float *out, ml_sgemm_fn gemm, int n_threads);

/* out[i] = exp(x[i]) for x[i] <= 0 (the kernel's exp; exposed for tests and
 * the benchmark's exp-rate measurement). */
void ml_expneg_f64(const double *x, double *out, ptrdiff_t n);
void ml_expneg_f32(const float *x, float *out, ptrdiff_t n);
#endif
