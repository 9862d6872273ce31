#include "prototypes.h"

#include <math.h>

static inline double sqdist(const double *ML_RESTRICT a,
                            const double *ML_RESTRICT b, ptrdiff_t d) {
    double s = 0.0;
    for (ptrdiff_t j = 0; j < d; ++j) {
        double t = a[j] - b[j];
        s += t * t;
    }
    return s;
}

/* m += step (x - m) */
static inline void move(double *ML_RESTRICT m, const double *ML_RESTRICT x,
                        ptrdiff_t d, double step) {
    for (ptrdiff_t j = 0; j < d; ++j) m[j] += step * (x[j] - m[j]);
}

/* Window test of LVQ2.1/LVQ3: min(d1/d2, d2/d1) > (1 - w)/(1 + w), on
 * squared distances. A point at distance 0 from one prototype is outside. */
static inline int in_window(double d1sq, double d2sq, double s) {
    double a = sqrt(d1sq), b = sqrt(d2sq);
    double lo = a < b ? a : b, hi = a < b ? b : a;
    return hi > 0.0 && lo / hi > s;
}

int ml_lvq_train(const double *X, const int64_t *y, ptrdiff_t n, ptrdiff_t d,
                 double *protos, const int64_t *proto_labels, ptrdiff_t P,
                 const int64_t *order, ptrdiff_t T, int variant, double alpha0,
                 double window, double epsilon, double *rates,
                 int64_t *n_moves) {
    if (n < 1 || d < 1 || P < 1 || T < 0) return ML_ERR_ARG;
    if (variant < ML_LVQ1 || variant > ML_OLVQ1) return ML_ERR_ARG;
    if (variant == ML_OLVQ1 && !rates) return ML_ERR_ARG;
    for (ptrdiff_t t = 0; t < T; ++t)
        if (order[t] < 0 || order[t] >= n) return ML_ERR_ARG;
    double s = (1.0 - window) / (1.0 + window);
    int64_t moves = 0;
    for (ptrdiff_t t = 0; t < T; ++t) {
        if ((t & 4095) == 0 && ml_interrupted()) return ML_ERR_INTERRUPTED;  /* Ctrl-C */
        const double *x = X + order[t] * d;
        int64_t cls = y[order[t]];
        double alpha = alpha0 * (1.0 - (double)t / (double)T);
        /* nearest and second nearest overall; nearest of x's class and of the others */
        ptrdiff_t b1 = -1, b2 = -1, bs = -1, bo = -1;
        double d1 = INFINITY, d2 = INFINITY, ds = INFINITY, dother = INFINITY;
        for (ptrdiff_t p = 0; p < P; ++p) {
            double dist = sqdist(x, protos + p * d, d);
            if (dist < d1) { d2 = d1; b2 = b1; d1 = dist; b1 = p; }
            else if (dist < d2) { d2 = dist; b2 = p; }
            if (proto_labels[p] == cls) { if (dist < ds) { ds = dist; bs = p; } }
            else if (dist < dother) { dother = dist; bo = p; }
        }
        switch (variant) {
        case ML_LVQ1:
            move(protos + b1 * d, x, d, proto_labels[b1] == cls ? alpha : -alpha);
            ++moves;
            break;
        case ML_OLVQ1: {
            int right = proto_labels[b1] == cls;
            double a = rates[b1];
            move(protos + b1 * d, x, d, right ? a : -a);
            a = a / (1.0 + (right ? a : -a));
            rates[b1] = a > alpha0 ? alpha0 : a;
            ++moves;
            break;
        }
        case ML_LVQ21:
            /* the nearest prototype of x's class moves towards x, the nearest
             * of another class away from it, when x lies in the window */
            if (bs >= 0 && bo >= 0 && in_window(ds, dother, s)) {
                move(protos + bs * d, x, d, alpha);
                move(protos + bo * d, x, d, -alpha);
                ++moves;
            }
            break;
        case ML_LVQ3:
            if (b2 < 0) break;
            {
                int r1 = proto_labels[b1] == cls, r2 = proto_labels[b2] == cls;
                if (r1 && r2) {
                    move(protos + b1 * d, x, d, epsilon * alpha);
                    move(protos + b2 * d, x, d, epsilon * alpha);
                    ++moves;
                } else if ((r1 || r2) && in_window(d1, d2, s)) {
                    move(protos + b1 * d, x, d, r1 ? alpha : -alpha);
                    move(protos + b2 * d, x, d, r2 ? alpha : -alpha);
                    ++moves;
                }
            }
            break;
        }
    }
    if (n_moves) *n_moves = moves;
    return ML_OK;
}

int ml_som_train(const double *X, ptrdiff_t n, ptrdiff_t d, double *W,
                 const double *grid, ptrdiff_t P, const int64_t *order,
                 ptrdiff_t T, double alpha0, double alpha1, double sigma0,
                 double sigma1) {
    if (n < 1 || d < 1 || P < 1 || T < 0) return ML_ERR_ARG;
    if (!(alpha0 > 0 && alpha1 > 0 && sigma0 > 0 && sigma1 > 0)) return ML_ERR_ARG;
    for (ptrdiff_t t = 0; t < T; ++t)
        if (order[t] < 0 || order[t] >= n) return ML_ERR_ARG;
    double la = log(alpha1 / alpha0), ls = log(sigma1 / sigma0);
    for (ptrdiff_t t = 0; t < T; ++t) {
        if ((t & 4095) == 0 && ml_interrupted()) return ML_ERR_INTERRUPTED;  /* Ctrl-C */
        const double *x = X + order[t] * d;
        double frac = T > 1 ? (double)t / (double)T : 0.0;
        double alpha = alpha0 * exp(la * frac), sigma = sigma0 * exp(ls * frac);
        double inv2s2 = 1.0 / (2.0 * sigma * sigma);
        ptrdiff_t b = 0;
        double best = INFINITY;
        for (ptrdiff_t p = 0; p < P; ++p) {
            double dist = sqdist(x, W + p * d, d);
            if (dist < best) { best = dist; b = p; }
        }
        const double *gb = grid + 2 * b;
        for (ptrdiff_t p = 0; p < P; ++p) {
            double g0 = grid[2 * p] - gb[0], g1 = grid[2 * p + 1] - gb[1];
            double h = exp(-(g0 * g0 + g1 * g1) * inv2s2);
            move(W + p * d, x, d, alpha * h);
        }
    }
    return ML_OK;
}
