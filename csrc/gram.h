/* The squared-distance tile shared by every kernel that needs the distances
 * of a block of row pairs (the Gram kernels here, the all-pairs sums of
 * pairwise.c), the Gaussian Gram matrix
 * G[i, j] = exp(-||x_i - y_j||^2 / (2 sigma^2)) and the fused product G @ V
 * that never stores G.
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
 * fused into the tile's last pass (a vectorizable exp with < 1e-15 relative
 * error, see gram.c), then copies it into G by contiguous rows. The symmetric case
 * computes the upper triangle of tiles and writes each also transposed, so G
 * is exactly symmetric with an exact unit diagonal.
 * Every entry is computed by the same code whatever thread computes it: results
 * are bitwise identical for any thread count. */
#ifndef METRICLUST_GRAM_H
#define METRICLUST_GRAM_H
#include "common.h"
#include "thresholds.h"  /* ML_GRAM_DIRECT_MAX_D */


/* Rows per side of a tile (a 128 x 128 float64 tile, 128 KB, stays in L2
 * between the gemm that forms it and the pass that reads it). */
#define ML_GRAM_TILE 128

/* Prepared operands of the squared-distance tile of X (nx x d) against Y
 * (ny x d; Y == NULL: Y = X). direct: by differences, with Y transposed (YT);
 * otherwise the GEMM form on copies centered by X's column mean (Xc, Yc; Yc
 * == Xc when symmetric) with their squared row norms (nxc, nyc). */
#define ML_SQDIST_TYPE(SUF, REAL, GEMM_FN)                                   \
    typedef struct {                                                         \
        int direct;                                                          \
        ptrdiff_t nx, ny, d;                                                 \
        const REAL *X;                                                       \
        REAL *YT, *Xc, *Yc, *nxc, *nyc;                                      \
        GEMM_FN gemm;                                                        \
    } ml_sqdist_##SUF;
ML_SQDIST_TYPE(f64, double, ml_dgemm_fn)
ML_SQDIST_TYPE(f32, float, ml_sgemm_fn)
#undef ML_SQDIST_TYPE

/* Prepare (gemm == NULL or d <= ML_GRAM_DIRECT_MAX_D: direct differences).
 * ML_ERR_ARG for negative sizes, d < 1 or a size past INT_MAX; on any status
 * the operands must still be freed with ml_sqdist_free. */
int ml_sqdist_init_f64(ml_sqdist_f64 *op, const double *X, ptrdiff_t nx,
                       const double *Y, ptrdiff_t ny, ptrdiff_t d, ml_dgemm_fn gemm);
int ml_sqdist_init_f32(ml_sqdist_f32 *op, const float *X, ptrdiff_t nx,
                       const float *Y, ptrdiff_t ny, ptrdiff_t d, ml_sgemm_fn gemm);
void ml_sqdist_free_f64(ml_sqdist_f64 *op);
void ml_sqdist_free_f32(ml_sqdist_f32 *op);

/* dst[ii * ldd + jj] = ||x_{i0+ii} - y_{j0+jj}||^2 (never negative) for
 * ii < ni, jj < nj (both <= ML_GRAM_TILE), or exp(scale * that) when with_exp.
 * buf: ML_GRAM_TILE^2 scratch (may be dst when ldd == ML_GRAM_TILE); acc: one
 * row of ML_GRAM_TILE. Calls the gemm (GEMM form): hold BLAS to one thread. */
void ml_sqdist_tile_f64(const ml_sqdist_f64 *op, ptrdiff_t i0, ptrdiff_t ni,
                        ptrdiff_t j0, ptrdiff_t nj, int with_exp, double scale,
                        double *dst, ptrdiff_t ldd, double *buf, double *acc);
void ml_sqdist_tile_f32(const ml_sqdist_f32 *op, ptrdiff_t i0, ptrdiff_t ni,
                        ptrdiff_t j0, ptrdiff_t nj, int with_exp, float scale,
                        float *dst, ptrdiff_t ldd, float *buf, float *acc);

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
