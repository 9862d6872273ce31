/* Batched 1-D k-means: Lloyd's iteration on many columns of a matrix, one
 * call for all of them (CPCM's feature starts and their ranking run one 1-D
 * k-means per feature: 20,000 Python-level calls on 20,000 features).
 *
 * Each column is solved exactly as ml_kmeans_lloyd would solve it as an
 * n x 1 matrix from the given initial centers: the column is centered on its
 * mean, rows go to the nearest center (ties to the lowest center index),
 * empty clusters take the rows farthest from their centers (largest distance
 * first, ties to the lowest row, never emptying another cluster, a row equal
 * to one already moved skipped), and a run stops when no label changes or the
 * squared center shift is <= tol times the column's variance, or after
 * max_iter iterations.  Rows are compared with kmeans.c's score in its
 * floating-point form (see k1_pass), so labels agree with the core's even for
 * rows half-way between centers; the centers can differ from the core's in
 * the last bits where its cluster sums are split over blocks (n > 4096).
 * The gain is the call: one for all columns instead of one Python-level
 * k-means per column.  Columns are independent: they are spread over threads
 * and the results do not depend on the thread count.
 *
 * X is n x p row-major; cols (m entries, each in [0, p)) names the columns;
 * init and centers are m x K (row c for column cols[c], in X's units);
 * means and vars (m) are the columns' float64 mean and variance as kmeans()
 * computes them (its centering and tolerance: passed in so that they agree
 * to the last bit with numpy's sums);
 * inertia (m) is the within-cluster sum of squares, n_iter (m) the
 * iterations run; labels (m x n, may be NULL) the final labels. */
#ifndef METRICLUST_KMEANS1D_H
#define METRICLUST_KMEANS1D_H
#include "common.h"

int ml_kmeans1d_columns_f64(const double *X, ptrdiff_t n, ptrdiff_t p,
                            const int64_t *cols, ptrdiff_t m, ptrdiff_t K,
                            const double *init, const double *means,
                            const double *vars, int max_iter, double tol,
                            double *centers, double *inertia, int32_t *n_iter,
                            int64_t *labels, int n_threads);
int ml_kmeans1d_columns_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                            const int64_t *cols, ptrdiff_t m, ptrdiff_t K,
                            const float *init, const double *means,
                            const double *vars, int max_iter, double tol,
                            float *centers, double *inertia, int32_t *n_iter,
                            int64_t *labels, int n_threads);
#endif
