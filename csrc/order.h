/* A stable sort order of non-negative float64 keys (k-means seeding's row
 * order, _core.kmeans.value_order). */
#ifndef METRICLUST_ORDER_H
#define METRICLUST_ORDER_H
#include "common.h"

/* perm = the permutation that sorts key[0..n) ascending, ties in index order:
 * what numpy's argsort(kind="stable") returns.  Keys must be +0.0, positive
 * or +inf (squared distances): ML_ERR_ARG on a negative key, -0.0 or NaN,
 * before perm is written.  The order is unique, so it does not depend on the
 * thread count.  ML_ERR_ALLOC when the 32 n bytes of scratch are not there. */
int ml_stable_order_nonneg(const double *key, ptrdiff_t n, int64_t *perm,
                           int n_threads);
#endif
