/* Per-cluster sums and the contingency table. */
#ifndef METRICLUST_SUMS_H
#define METRICLUST_SUMS_H
#include "common.h"

/* out[k, :] = sum over i with labels[i] == k of X[i, :]  (out is K x p, zeroed here).
 * labels must lie in [0, K); returns ML_ERR_ARG on the first label outside.
 * Per-thread partial sums over fixed row blocks, reduced in block order:
 * the result does not depend on the thread count. */
int ml_cluster_sums_f64(const double *X, ptrdiff_t n, ptrdiff_t p,
                        const int64_t *labels, ptrdiff_t K, double *out,
                        int n_threads);
int ml_cluster_sums_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                        const int64_t *labels, ptrdiff_t K, double *out,
                        int n_threads);

/* The smallest and largest of the n values of x (*lo, *hi) and whether any
 * is NaN (*nan; lo and hi then skip the NaNs): one pass over fixed blocks,
 * on up to n_threads threads (the result does not depend on them).  For
 * input validation: one read of a large array instead of numpy's max and
 * min, two. */
int ml_value_range_f64(const double *x, ptrdiff_t n, double *lo, double *hi,
                       int *nan, int n_threads);
int ml_value_range_f32(const float *x, ptrdiff_t n, double *lo, double *hi,
                       int *nan, int n_threads);

/* The column moments of X a block of block_rows rows at a time (the last
 * block shorter): out[b, j] (out is nb x p, nb = ceil(n / block_rows)) sums,
 * from 0.0 and in row order, x[i, j] over block b's rows (center NULL) or
 * (x[i, j] - center[j])^2, each term rounded in float64 before it is added
 * (no contraction).  The chain of additions of each column is numpy's for
 * block.sum(axis=0) on a C-ordered float64 block of two or more columns, and
 * for (block - center)**2 the same, so the fit's centering keeps its bits.
 * Blocks run on up to n_threads threads, each block on one: the result does
 * not depend on the thread count. */
int ml_column_block_sums_f64(const double *X, ptrdiff_t n, ptrdiff_t p,
                             ptrdiff_t block_rows, const double *center,
                             double *out, int n_threads);
int ml_column_block_sums_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                             ptrdiff_t block_rows, const double *center,
                             double *out, int n_threads);

/* table[a[i], b[i]] += 1 for i < n; table is ka x kb (zeroed here).
 * Codes must lie in [0, ka) and [0, kb). */
int ml_contingency(const int64_t *a, const int64_t *b, ptrdiff_t n,
                   ptrdiff_t ka, ptrdiff_t kb, int64_t *table);
#endif
