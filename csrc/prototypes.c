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

/* Updates between two polls of the Ctrl-C flag (a power of two minus one:
 * the poll is t & ML_PROTO_POLL_MASK == 0; 4096 updates take well under a
 * millisecond at small d). */
#define ML_PROTO_POLL_MASK 4095

/* The prototypes nearest to one sample: overall (b1, then b2) and the nearest
 * of the sample's class (bs) and of the other classes (bo), with their
 * squared distances; -1 where there is none. */
typedef struct {
    ptrdiff_t b1, b2, bs, bo;
    double d1, d2, ds, dother;
} lvq_nearest;

static lvq_nearest find_nearest(const double *x, int64_t cls, const double *protos,
                                const int64_t *proto_labels, ptrdiff_t P, ptrdiff_t d) {
    lvq_nearest q = {-1, -1, -1, -1, INFINITY, INFINITY, INFINITY, INFINITY};
    for (ptrdiff_t p = 0; p < P; ++p) {
        double dist = sqdist(x, protos + p * d, d);
        if (dist < q.d1) { q.d2 = q.d1; q.b2 = q.b1; q.d1 = dist; q.b1 = p; }
        else if (dist < q.d2) { q.d2 = dist; q.b2 = p; }
        if (proto_labels[p] == cls) { if (dist < q.ds) { q.ds = dist; q.bs = p; } }
        else if (dist < q.dother) { q.dother = dist; q.bo = p; }
    }
    return q;
}

/* One LVQ update of `variant` for sample x of class cls at rate alpha
 * (window test s); returns 1 if it moved a prototype. */
static int lvq_update(int variant, const double *x, int64_t cls, const lvq_nearest *q,
                      double *protos, const int64_t *proto_labels, ptrdiff_t d,
                      double alpha, double alpha0, double s, double epsilon,
                      double *rates) {
    switch (variant) {
    case ML_LVQ1:
        move(protos + q->b1 * d, x, d, proto_labels[q->b1] == cls ? alpha : -alpha);
        return 1;
    case ML_OLVQ1: {
        int right = proto_labels[q->b1] == cls;
        double a = rates[q->b1];
        move(protos + q->b1 * d, x, d, right ? a : -a);
        a = a / (1.0 + (right ? a : -a));
        rates[q->b1] = a > alpha0 ? alpha0 : a;
        return 1;
    }
    case ML_LVQ21:
        /* the nearest prototype of x's class moves towards x, the nearest
         * of another class away from it, when x lies in the window */
        if (q->bs < 0 || q->bo < 0 || !in_window(q->ds, q->dother, s)) return 0;
        move(protos + q->bs * d, x, d, alpha);
        move(protos + q->bo * d, x, d, -alpha);
        return 1;
    default: {  /* ML_LVQ3 */
        if (q->b2 < 0) return 0;
        int r1 = proto_labels[q->b1] == cls, r2 = proto_labels[q->b2] == cls;
        if (r1 && r2) {
            move(protos + q->b1 * d, x, d, epsilon * alpha);
            move(protos + q->b2 * d, x, d, epsilon * alpha);
            return 1;
        }
        if (!((r1 || r2) && in_window(q->d1, q->d2, s))) return 0;
        move(protos + q->b1 * d, x, d, r1 ? alpha : -alpha);
        move(protos + q->b2 * d, x, d, r2 ? alpha : -alpha);
        return 1;
    }
    }
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
        if ((t & ML_PROTO_POLL_MASK) == 0 && ml_interrupted()) return ML_ERR_INTERRUPTED;
        const double *x = X + order[t] * d;
        int64_t cls = y[order[t]];
        double alpha = alpha0 * (1.0 - (double)t / (double)T);
        lvq_nearest q = find_nearest(x, cls, protos, proto_labels, P, d);
        moves += lvq_update(variant, x, cls, &q, protos, proto_labels, d, alpha, alpha0,
                            s, epsilon, rates);
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
        if ((t & ML_PROTO_POLL_MASK) == 0 && ml_interrupted()) return ML_ERR_INTERRUPTED;
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
