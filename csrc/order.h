/* k-means seeding's row order (_core.kmeans.value_order) and the running
 * sums its draws search. */
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

/* cum[i] = sum over r <= i, in order, of w[r] * v[order[r]] (w NULL: of
 * v[order[r]]), one multiplication and one addition per term and no
 * contraction: what np.cumsum(w * v[order]) returns, bit for bit, without its
 * temporaries.  ML_ERR_ARG if an order entry is outside [0, n). */
int ml_ordered_cumsum(const double *v, const double *w, const int64_t *order,
                      ptrdiff_t n, double *cum);
#endif
