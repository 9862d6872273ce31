/* The one k-means core (SPEC 0.1): Lloyd, MacQueen's online update,
 * nearest-center assignment and the k-means++ seeding step.
 *
 * Data layout: X is n x d row-major (C order), centers K x d row-major,
 * optional sample weights w (n, same type as X; NULL means all ones).
 * Labels are int64 on output (int32 inside the iteration loop: half the
 * memory traffic at small d).
 *
 * Determinism: rows are split into chunks of ML_KM_CHUNK rows, and chunks
 * into a number of segments that depends on (n, d, K) only.  Each segment is
 * processed by one thread in row order into its own float64 partial sums;
 * segments are then added in segment order.  The results are therefore
 * bitwise identical for any thread count.
 *
 * Precision: distances are computed in the input type, per-cluster sums and
 * weights are accumulated in float64 for float32 input too (scikit-learn
 * accumulates in the input type), and centers are rounded to the input type
 * once per iteration.  Inertia is computed from the differences x - c (not
 * the expanded form) in float64.
 *
 * Distance paths (`method`): ML_KM_DIRECT works on a transposed chunk and is
 * vectorized over points, with loops specialised for d = 1..8 and runtime
 * dispatch (AVX2 or baseline x86-64); ML_KM_GEMM forms -2 X C^T per chunk
 * with the caller's BLAS gemm (hold BLAS to one thread around the call);
 * ML_KM_AUTO picks DIRECT for d <= ML_KM_DIRECT_MAX_D or when no gemm is
 * given.  Every function returns ML_OK or a negative ML_ERR_* code. */
#ifndef METRICLUST_KMEANS_H
#define METRICLUST_KMEANS_H
#include "common.h"

#define ML_KM_AUTO 0
#define ML_KM_DIRECT 1
#define ML_KM_GEMM 2

#define ML_KM_CHUNK 256
#define ML_KM_DIRECT_MAX_D 8
/* GEMM path: below this many centers, distances row-major (BLAS packs C). */
#define ML_KM_GEMM_ROWWISE_K 16
/* Below these sizes a kernel runs on one thread (same results either way). */
#define ML_KM_PAR_MIN_WORK 1e6
#define ML_KM_PAR_MIN_ROWS 16384

/* Batch k-means (Lloyd): iterate assignment + weighted means from `centers`
 * (in: initial centers, out: final centers) until the labels stop changing
 * (strict convergence) or the squared center shift sum_k ||c_k' - c_k||^2 is
 * <= tol (tol is absolute), or max_iter iterations.  Empty clusters are
 * relocated to the points farthest from their centers (largest distance
 * first, ties to the lowest index, never emptying another cluster); a cluster
 * that cannot be refilled keeps its center.  On return: labels of the final
 * centers, their weighted inertia, the number of iterations run and whether
 * the run converged strictly (labels unchanged). */
int ml_kmeans_lloyd_f64(const double *X, const double *w, ptrdiff_t n,
                        ptrdiff_t d, ptrdiff_t K, double *centers,
                        int max_iter, double tol, int64_t *labels,
                        double *inertia, int *n_iter, int *strict,
                        ml_dgemm_fn gemm, int method, int n_threads);
int ml_kmeans_lloyd_f32(const float *X, const float *w, ptrdiff_t n,
                        ptrdiff_t d, ptrdiff_t K, float *centers,
                        int max_iter, double tol, int64_t *labels,
                        double *inertia, int *n_iter, int *strict,
                        ml_sgemm_fn gemm, int method, int n_threads);

/* Online k-means (MacQueen 1967): passes over the rows in data order; each
 * row moves its nearest center c_k += (w_i / W_k) (x_i - c_k) right away,
 * W_k the total weight the center has received so far (kept across passes,
 * so the first row to reach a center replaces the initial value).  Stops
 * when a pass changes no label or moves the centers by <= tol (squared,
 * absolute), or after max_iter passes; then labels and inertia are those of
 * the final centers, as for Lloyd.  Sequential by nature (one thread),
 * except for the final assignment. */
int ml_kmeans_online_f64(const double *X, const double *w, ptrdiff_t n,
                         ptrdiff_t d, ptrdiff_t K, double *centers,
                         int max_iter, double tol, int64_t *labels,
                         double *inertia, int *n_iter, int *strict,
                         ml_dgemm_fn gemm, int method, int n_threads);
int ml_kmeans_online_f32(const float *X, const float *w, ptrdiff_t n,
                         ptrdiff_t d, ptrdiff_t K, float *centers,
                         int max_iter, double tol, int64_t *labels,
                         double *inertia, int *n_iter, int *strict,
                         ml_sgemm_fn gemm, int method, int n_threads);

/* Nearest center of every row (ties to the lowest index) and, if dist is not
 * NULL, the squared distance to it computed from x - c (never negative). */
int ml_kmeans_assign_f64(const double *X, ptrdiff_t n, ptrdiff_t d,
                         const double *centers, ptrdiff_t K, int64_t *labels,
                         double *dist, ml_dgemm_fn gemm, int method,
                         int n_threads);
int ml_kmeans_assign_f32(const float *X, ptrdiff_t n, ptrdiff_t d,
                         const float *centers, ptrdiff_t K, int64_t *labels,
                         float *dist, ml_sgemm_fn gemm, int method,
                         int n_threads);

/* One k-means++ step.  closest[i] (float64, in/out) is the squared distance
 * of row i to its nearest chosen center (+inf before the first).  For each of
 * the T candidate rows cand[t], the potential sum_i w_i min(closest_i,
 * ||x_i - x_cand[t]||^2) is computed (fixed-order block reduction); the
 * candidate with the lowest potential (first on ties) is returned in *best
 * (an index into cand), its potential in *pot, and closest is updated. */
int ml_kmeans_pp_step_f64(const double *X, const double *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          int n_threads);
int ml_kmeans_pp_step_f32(const float *X, const float *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          int n_threads);
#endif
