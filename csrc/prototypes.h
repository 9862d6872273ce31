/* Sequential prototype learning: Kohonen's learning vector quantisation
 * (LVQ1, LVQ2.1, LVQ3, OLVQ1) and the online self-organising map.
 *
 * Both are online algorithms: every sample moves prototypes before the next
 * sample is seen, so the loop is sequential by nature (one thread) and its
 * result is fixed by the visiting order `order` (T row indices, drawn by the
 * caller from its random_state). Layout: X is n x d row-major float64,
 * prototypes P x d row-major (updated in place). Squared Euclidean distances
 * from the differences; ties go to the lowest prototype index.
 * Every function returns ML_OK or a negative ML_ERR_* code. */
#ifndef METRICLUST_PROTOTYPES_H
#define METRICLUST_PROTOTYPES_H
#include "common.h"

#define ML_LVQ1 0
#define ML_LVQ21 1
#define ML_LVQ3 2
#define ML_OLVQ1 3

/* One run of T updates. Learning rate alpha(t) = alpha0 (1 - t / T) (linear
 * decay) for LVQ1, LVQ2.1 and LVQ3; for OLVQ1 each prototype keeps its own
 * rate rates[p] (in/out), updated after each move of prototype p by
 * rates[p] <- rates[p] / (1 + s rates[p]) (s = +1 right class, -1 wrong),
 * capped at alpha0. `window` is the relative window width w (LVQ2.1, LVQ3),
 * `epsilon` LVQ3's factor. *n_moves counts the samples that moved a
 * prototype. */
int ml_lvq_train(const double *X, const int64_t *y, ptrdiff_t n, ptrdiff_t d,
                 double *protos, const int64_t *proto_labels, ptrdiff_t P,
                 const int64_t *order, ptrdiff_t T, int variant, double alpha0,
                 double window, double epsilon, double *rates,
                 int64_t *n_moves);

/* Online SOM: for t = 0..T-1, x = X[order[t]], BMU b = nearest unit,
 * alpha(t) = alpha0 (alpha1 / alpha0)^(t / T), sigma(t) = sigma0 (sigma1 /
 * sigma0)^(t / T), and every unit j moves by alpha(t) h_j (x - w_j) with the
 * Gaussian neighbourhood h_j = exp(-||g_j - g_b||^2 / (2 sigma(t)^2)) on the
 * grid coordinates grid (P x 2). */
int ml_som_train(const double *X, ptrdiff_t n, ptrdiff_t d, double *W,
                 const double *grid, ptrdiff_t P, const int64_t *order,
                 ptrdiff_t T, double alpha0, double alpha1, double sigma0,
                 double sigma1);
#endif
