#include "mixture.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ptrdiff_t ml_gmm_segments(ptrdiff_t n) {
    ptrdiff_t blocks = (n + ML_GMM_BLOCK - 1) / ML_GMM_BLOCK;
    return blocks < ML_GMM_MAX_SEGMENTS ? blocks : ML_GMM_MAX_SEGMENTS;
}

/* Rows [lo, hi) of segment s out of S: whole blocks, in order. */
static void ml_gmm_segment_rows(ptrdiff_t n, ptrdiff_t S, ptrdiff_t s,
                                ptrdiff_t *lo, ptrdiff_t *hi) {
    ptrdiff_t blocks = (n + ML_GMM_BLOCK - 1) / ML_GMM_BLOCK;
    ptrdiff_t b0 = blocks * s / S, b1 = blocks * (s + 1) / S;
    *lo = b0 * ML_GMM_BLOCK;
    *hi = b1 * ML_GMM_BLOCK < n ? b1 * ML_GMM_BLOCK : n;
}

/* Squared norm of y = (x - mu)^T U, U upper triangular (d x d row-major). */
static inline double maha_full(const double *ML_RESTRICT x,
                               const double *ML_RESTRICT mu,
                               const double *ML_RESTRICT U, ptrdiff_t d,
                               double *ML_RESTRICT diff) {
    for (ptrdiff_t i = 0; i < d; ++i) diff[i] = x[i] - mu[i];
    double s = 0.0;
    for (ptrdiff_t j = 0; j < d; ++j) {
        double y = 0.0;
        for (ptrdiff_t i = 0; i <= j; ++i) y += diff[i] * U[i * d + j];
        s += y * y;
    }
    return s;
}

static inline double maha_diag(const double *ML_RESTRICT x,
                               const double *ML_RESTRICT mu,
                               const double *ML_RESTRICT p, ptrdiff_t d) {
    double s = 0.0;
    for (ptrdiff_t j = 0; j < d; ++j) {
        double y = (x[j] - mu[j]) * p[j];
        s += y * y;
    }
    return s;
}

/* One row's log-likelihood: lp[k] = log_norm[k] - ||y_k||^2 / 2 turned into
 * e_k = exp(lp_k - max) (one exp per component), resp = e / sum e; returns
 * max + log(sum e), or a non-finite value when every lp_k is -inf/NaN. */
static double estep_row(const double *x, ptrdiff_t d, ptrdiff_t K, const double *means,
                        const double *prec, int cov_type, const double *log_norm,
                        double *lp, double *diff, double *resp_row) {
    double mx = -INFINITY;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double m2 = cov_type == ML_GMM_FULL
            ? maha_full(x, means + k * d, prec + k * d * d, d, diff)
            : maha_diag(x, means + k * d, prec + k * d, d);
        lp[k] = log_norm[k] - 0.5 * m2;
        if (lp[k] > mx) mx = lp[k];
    }
    if (!isfinite(mx)) return mx;
    double se = 0.0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        lp[k] = exp(lp[k] - mx);
        se += lp[k];
    }
    if (resp_row) {
        double inv = 1.0 / se;
        for (ptrdiff_t k = 0; k < K; ++k) resp_row[k] = lp[k] * inv;
    }
    return mx + log(se);
}

int ml_gmm_estep(const double *X, ptrdiff_t n, ptrdiff_t d, ptrdiff_t K,
                 const double *means, const double *prec, int cov_type,
                 const double *log_norm, double *resp, double *sample_ll,
                 double *total_ll, int n_threads) {
    if (n < 0 || d < 1 || K < 1) return ML_ERR_ARG;
    if (cov_type != ML_GMM_FULL && cov_type != ML_GMM_DIAG) return ML_ERR_ARG;
    if (total_ll) *total_ll = 0.0;
    if (n == 0) return ML_OK;
    ptrdiff_t S = ml_gmm_segments(n);
    double *partial = calloc((size_t)S, sizeof(double));
    /* per-thread scratch: K log-probabilities and a d-vector */
    int nt = ml_threads(n_threads);
    double work = (double)n * (double)K * (double)(cov_type == ML_GMM_FULL ? d * d : d);
    if (work < ML_GMM_PAR_MIN_WORK) nt = 1;
    double *scratch = malloc((size_t)nt * (size_t)(K + d) * sizeof(double));
    if (!partial || !scratch) { free(partial); free(scratch); return ML_ERR_ALLOC; }
    int bad = 0;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(|:bad)
    for (ptrdiff_t s = 0; s < S; ++s) {
        double *lp = scratch + (ptrdiff_t)ml_thread_id() * (K + d);
        ptrdiff_t lo, hi;
        ml_gmm_segment_rows(n, S, s, &lo, &hi);
        double acc = 0.0;
        for (ptrdiff_t i = lo; i < hi; ++i) {
            double ll = estep_row(X + i * d, d, K, means, prec, cov_type, log_norm, lp,
                                  lp + K, resp ? resp + i * K : NULL);
            if (!isfinite(ll)) { bad = 1; continue; }
            acc += ll;
            if (sample_ll) sample_ll[i] = ll;
        }
        partial[s] = acc;
    }
    if (total_ll) {
        double t = 0.0;
        for (ptrdiff_t s = 0; s < S; ++s) t += partial[s];
        *total_ll = t;
    }
    free(partial);
    free(scratch);
    return bad ? ML_ERR_NUMERIC : ML_OK;
}

/* Added to every nk: scikit-learn's guard (10 machine epsilons) so that an
 * empty component divides by a positive number. */
#define ML_GMM_NK_FLOOR (10.0 * DBL_EPSILON)

/* Rows [lo, hi): w[k] += sum r_ik, sx[k] += sum r_ik x_i. */
static void mstep_sums(const double *X, const double *resp, ptrdiff_t d, ptrdiff_t K,
                       ptrdiff_t lo, ptrdiff_t hi, double *w, double *sx) {
    for (ptrdiff_t i = lo; i < hi; ++i) {
        const double *x = X + i * d, *r = resp + i * K;
        for (ptrdiff_t k = 0; k < K; ++k) {
            double rk = r[k];
            w[k] += rk;
            double *row = sx + k * d;
            for (ptrdiff_t j = 0; j < d; ++j) row[j] += rk * x[j];
        }
    }
}

/* Rows [lo, hi): c[k] += sum r_ik (x_i - mu_k)(x_i - mu_k)^T (lower triangle;
 * full) or its diagonal (diag); diff is a d-vector of scratch. */
static void mstep_scatter(const double *X, const double *resp, const double *means,
                          ptrdiff_t d, ptrdiff_t K, int cov_type, ptrdiff_t lo,
                          ptrdiff_t hi, double *c, double *diff) {
    const ptrdiff_t cs = cov_type == ML_GMM_FULL ? d * d : d;
    for (ptrdiff_t i = lo; i < hi; ++i) {
        const double *x = X + i * d, *r = resp + i * K;
        for (ptrdiff_t k = 0; k < K; ++k) {
            double rk = r[k];
            const double *mu = means + k * d;
            double *ck = c + k * cs;
            if (cov_type == ML_GMM_FULL) {
                for (ptrdiff_t j = 0; j < d; ++j) diff[j] = x[j] - mu[j];
                for (ptrdiff_t a = 0; a < d; ++a) {
                    double ra = rk * diff[a];
                    for (ptrdiff_t b = 0; b <= a; ++b) ck[a * d + b] += ra * diff[b];
                }
            } else {
                for (ptrdiff_t j = 0; j < d; ++j) {
                    double t = x[j] - mu[j];
                    ck[j] += rk * t * t;
                }
            }
        }
    }
}

/* cov[k] /= nk[k], the full matrices mirrored from their lower triangle. */
static void mstep_normalize(double *cov, const double *nk, ptrdiff_t d, ptrdiff_t K,
                            int cov_type) {
    const ptrdiff_t cs = cov_type == ML_GMM_FULL ? d * d : d;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double *ck = cov + k * cs;
        if (cov_type != ML_GMM_FULL) {
            for (ptrdiff_t j = 0; j < d; ++j) ck[j] /= nk[k];
            continue;
        }
        for (ptrdiff_t a = 0; a < d; ++a)
            for (ptrdiff_t b = 0; b <= a; ++b) {
                double v = ck[a * d + b] / nk[k];
                ck[a * d + b] = v;
                ck[b * d + a] = v;
            }
    }
}

int ml_gmm_mstep(const double *X, ptrdiff_t n, ptrdiff_t d, ptrdiff_t K,
                 const double *resp, int cov_type, double *nk, double *means,
                 double *cov, int n_threads) {
    if (n < 1 || d < 1 || K < 1) return ML_ERR_ARG;
    if (cov_type != ML_GMM_FULL && cov_type != ML_GMM_DIAG) return ML_ERR_ARG;
    ptrdiff_t S = ml_gmm_segments(n);
    ptrdiff_t cs = cov_type == ML_GMM_FULL ? d * d : d;     /* cov entries per k */
    ptrdiff_t per = K + K * d + K * cs;                      /* partial size */
    double *partial = calloc((size_t)(S * per), sizeof(double));
    int nt = ml_threads(n_threads);
    if ((double)n * (double)K * (double)cs < ML_GMM_PAR_MIN_WORK) nt = 1;
    double *scratch = malloc((size_t)nt * (size_t)d * sizeof(double));
    if (!partial || !scratch) { free(partial); free(scratch); return ML_ERR_ALLOC; }
    /* pass 1: weights and weighted sums */
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (ptrdiff_t s = 0; s < S; ++s) {
        ptrdiff_t lo, hi;
        ml_gmm_segment_rows(n, S, s, &lo, &hi);
        mstep_sums(X, resp, d, K, lo, hi, partial + s * per, partial + s * per + K);
    }
    memset(nk, 0, (size_t)K * sizeof(double));
    memset(means, 0, (size_t)(K * d) * sizeof(double));
    for (ptrdiff_t s = 0; s < S; ++s) {
        const double *w = partial + s * per, *sx = w + K;
        for (ptrdiff_t k = 0; k < K; ++k) nk[k] += w[k];
        for (ptrdiff_t t = 0; t < K * d; ++t) means[t] += sx[t];
    }
    for (ptrdiff_t k = 0; k < K; ++k) {
        nk[k] += ML_GMM_NK_FLOOR;
        for (ptrdiff_t j = 0; j < d; ++j) means[k * d + j] /= nk[k];
    }
    /* pass 2: scatter around the new means */
    memset(partial, 0, (size_t)(S * per) * sizeof(double));
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (ptrdiff_t s = 0; s < S; ++s) {
        ptrdiff_t lo, hi;
        ml_gmm_segment_rows(n, S, s, &lo, &hi);
        mstep_scatter(X, resp, means, d, K, cov_type, lo, hi, partial + s * per + K + K * d,
                      scratch + (ptrdiff_t)ml_thread_id() * d);
    }
    memset(cov, 0, (size_t)(K * cs) * sizeof(double));
    for (ptrdiff_t s = 0; s < S; ++s) {
        const double *c = partial + s * per + K + K * d;
        for (ptrdiff_t t = 0; t < K * cs; ++t) cov[t] += c[t];
    }
    mstep_normalize(cov, nk, d, K, cov_type);
    free(scratch);
    free(partial);
    return ML_OK;
}
