/* Pairwise-constraint sums for MMC (Xing et al. 2003).
 *
 * Sums are float64. X is float64, or float32 for the explicit-pair kernels
 * ml_pairs_full_f32 and ml_pairs_diag_f32 (and the all-pairs diagonal sums):
 * each value is widened as it is read, so their sums are those of the float64
 * kernels on X.astype(float64), with no float64 copy of X. The Laplacian forms
 * hand X to BLAS and take float64 only. Matrices are row-major.
 * A "pair" is a row (i, j) of an int64 (m, 2) array of indices into X.
 *
 * Determinism: pairs are cut into fixed blocks (a block never depends on the
 * thread count), each block's partial sum is computed by one thread, and the
 * partials are added in block order. */
#ifndef METRICLUST_PAIRWISE_H
#define METRICLUST_PAIRWISE_H
#include "common.h"
#include "thresholds.h"  /* ML_MIN_PARALLEL_WORK, crossovers */


/* Fortran dsyrk (scipy.linalg.cython_blas.dsyrk). */
typedef void (*ml_dsyrk_fn)(char *uplo, char *trans, int *n, int *k,
                            double *alpha, double *a, int *lda, double *beta,
                            double *c, int *ldc);

/* Explicit pairs, full metric A = L^T L, Lt = L^T (p x r):
 *   d_k = ||(x_i - x_j) Lt||,  *h = sum_k d_k,  dist[k] = d_k (dist may be NULL),
 *   G = sum_k w_k D_k D_k^T with D_k = x_i - x_j and w_k = 1/(2 d_k) (0 where
 *   d_k = 0); G (p x p) may be NULL (objective only). Pairs with d_k = 0 but
 *   D_k != 0 (h is not differentiable there) are reported when G_zero is not
 *   NULL (needs G): G_zero = sum of D_k D_k^T / 2 over them, *n_zero = count. */
int ml_pairs_full(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m,
                  const double *Lt, ptrdiff_t r,
                  double *h, double *G, double *dist,
                  double *G_zero, double *n_zero,
                  ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);
int ml_pairs_full_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m,
                      const double *Lt, ptrdiff_t r,
                      double *h, double *G, double *dist,
                      double *G_zero, double *n_zero,
                      ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);

/* Explicit pairs, full metric, Laplacian form (for many pairs on few points).
 * Y = X Lt (n x r). With d_k = ||y_i - y_j|| and w_k = 1/(2 d_k) (0 where
 * d_k = 0):  *h = sum_k d_k, dist[k] = d_k (may be NULL), wdeg[i] = sum of w_k
 * over the pairs at i, T = W X (T[i] = sum of w_k x_j over the pairs (i, j)),
 * so that G = sum_k w_k D_k D_k^T = X^T diag(wdeg) X - X^T T (the caller's
 * two products, O(n p^2) instead of O(m p^2)). G_zero / n_zero as in
 * ml_pairs_full (G_zero may be NULL). One thread; pairs in order. */
int ml_pairs_laplacian(const double *X, const double *Y, ptrdiff_t n, ptrdiff_t p,
                       ptrdiff_t r, const int64_t *pairs, ptrdiff_t m,
                       double *h, double *dist, double *wdeg, double *T,
                       double *G_zero, double *n_zero);

/* Diagonal metric a >= 0 (Xing et al. 2003, Sec. 2.1). v_k = (x_i - x_j)^2 elementwise,
 * d_k = sqrt(a . v_k):  *h = sum d_k;  grad = sum v_k / (2 d_k);
 * H = sum v_k v_k^T / (4 d_k^3)  (so hess h = -H). grad and H may be NULL;
 * pairs with d_k = 0 are left out of both (their gradient is +inf along the
 * features where v_k > 0). Those pairs are reported instead when grad_zero is
 * not NULL: grad_zero = sum_{d_k = 0, v_k != 0} v_k / 2 and *n_zero = their
 * count (the solver's certificate needs them; n_zero required with grad_zero).
 * pairs == NULL means ALL pairs i < j of the n rows (m ignored). method
 * ML_PAIRS_DIRECT: the pair loop; ML_PAIRS_GEMM (all pairs, no Hessian, dgemm
 * given and p > ML_GRAM_DIRECT_MAX_D, else ML_ERR_ARG): the GEMM form;
 * ML_PAIRS_AUTO: the GEMM form where it is allowed and
 * p >= ML_PAIRS_DIAG_GEMM_MIN_P (measured, thresholds.h). The GEMM form: squared distances from the shared tile (gram.h) on
 * Z = X diag(sqrt a) centred, W_ij = 1 / (2 d_ij), and
 * grad = sum_i deg_i x_i^2 - sum_i x_i * (W X)_i (deg = W 1, x centred), with
 * every pair whose squared distance the GEMM form cannot resolve (see
 * ML_CLOSE_RATIO in pairwise.c) recomputed by differences. dgemm may be NULL.
 * Both forms call BLAS inside their OpenMP region: hold BLAS to one thread. */
#define ML_PAIRS_AUTO 0
#define ML_PAIRS_DIRECT 1
#define ML_PAIRS_GEMM 2
int ml_pairs_diag(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m, const double *a,
                  double *h, double *grad, double *H,
                  double *grad_zero, double *n_zero,
                  int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);
int ml_pairs_diag_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m, const double *a,
                      double *h, double *grad, double *H,
                      double *grad_zero, double *n_zero,
                      int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);

/* All pairs i < j, Laplacian form. Y = X Lt (n x r, rows centred by the
 * caller), X (n x p). With d_ij = ||y_i - y_j|| and W_ij = 1/(2 d_ij)
 * (0 where d_ij = 0):  *h = sum_{i<j} d_ij  and
 *   G = sum_{i<j} W_ij (x_i - x_j)(x_i - x_j)^T = X^T (diag(W 1) - W) X,
 * computed over the upper triangle of ML_GRAM_TILE-row tiles (each pair once;
 * no n x n storage; distances from the shared squared-distance tile, gram.h):
 * per row tile I, X_I^T diag(W 1) X_I + sum_J X_J^T diag(W^T 1) X_J
 * - (C_I + C_I^T) with C_I = X_I^T sum_J W_IJ X_J; partials added in order. */
int ml_allpairs_full(const double *X, const double *Y, ptrdiff_t n,
                     ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                     ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);

/* Cross pairs (i, j), i a row of XI (nI x p), j a row of XJ (nJ x p): every
 * one of the nI nJ pairs once, as ml_allpairs_full (its tile code, with XJ's
 * rows in the column role). YI = XI Lt, YJ = XJ Lt (rows centred by the
 * caller with one common shift). *h = sum_ij d_ij and
 *   G = sum_ij W_ij (x_i - x_j)(x_i - x_j)^T
 *     = XI^T diag(W 1) XI + XJ^T diag(W^T 1) XJ - (C + C^T), C = XI^T W XJ,
 * with W_ij = 1/(2 d_ij) (0 where d_ij = 0); row tiles of XI in fixed tasks,
 * partials added in order. The block-pair term of the all-pairs sums of
 * data read block by block (metriclust._core.pairs_blockwise). */
int ml_crosspairs_full(const double *XI, const double *YI, ptrdiff_t nI,
                       const double *XJ, const double *YJ, ptrdiff_t nJ,
                       ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                       ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads);
#endif
