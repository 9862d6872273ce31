/* Gaussian-mixture EM kernels: the E-step (Mahalanobis distances through each
 * component's precision Cholesky factor, log-sum-exp, responsibilities) and
 * the M-step's weighted moments, one pass over the rows each.
 *
 * Layout: X is n x d row-major float64, means K x d, resp n x K.
 * Covariance types (`cov_type`):
 *   ML_GMM_FULL: prec is K x d x d, each an upper-triangular U_k with
 *                Sigma_k^{-1} = U_k U_k^T (scikit-learn's precisions_cholesky_),
 *                y = (x - mu_k)^T U_k, only entries i <= j are read;
 *                cov (M-step output) is K x d x d;
 *   ML_GMM_DIAG: prec is K x d (y_j = (x_j - mu_kj) prec_kj); cov is K x d,
 *                the per-feature variances (spherical: the caller averages).
 *
 * Determinism: rows are cut into blocks of ML_GMM_BLOCK rows and blocks into
 * ml_gmm_segments(n) segments (a function of n only); each segment is summed
 * by one thread in row order and segments are added in order, so results are
 * bitwise identical for any thread count. Every function returns ML_OK or a
 * negative ML_ERR_* code. */
#ifndef METRICLUST_MIXTURE_H
#define METRICLUST_MIXTURE_H
#include "common.h"
#include "thresholds.h"  /* ML_GMM_PAR_MIN_WORK */

#define ML_GMM_FULL 0
#define ML_GMM_DIAG 1
/* Rows per block (the unit of the fixed segmentation) and at most 64
 * segments: enough for dynamic balance over 16+ threads, few partials to add. */
#define ML_GMM_BLOCK 512
#define ML_GMM_MAX_SEGMENTS 64

/* log p_k(x_i) = log_norm[k] - ||y_ik||^2 / 2, with log_norm[k] = log w_k +
 * log det U_k - d/2 log(2 pi) supplied by the caller;
 * sample_ll[i] = logsumexp_k log p_k(x_i) (may be NULL);
 * resp[i, k] = exp(log p_k(x_i) - sample_ll[i]) (may be NULL);
 * *total_ll = sum_i sample_ll[i] (may be NULL). */
int ml_gmm_estep(const double *X, ptrdiff_t n, ptrdiff_t d, ptrdiff_t K,
                 const double *means, const double *prec, int cov_type,
                 const double *log_norm, double *resp, double *sample_ll,
                 double *total_ll, int n_threads);

/* nk[k] = sum_i resp[i, k] + 10 eps (scikit-learn's guard for an empty
 * component), means[k] = sum_i resp[i, k] x_i / nk[k], and
 * cov[k] = sum_i resp[i, k] (x_i - mean_k)(x_i - mean_k)^T / nk[k] (full) or
 * its diagonal (diag), computed from the differences (two passes). */
int ml_gmm_mstep(const double *X, ptrdiff_t n, ptrdiff_t d, ptrdiff_t K,
                 const double *resp, int cov_type, double *nk, double *means,
                 double *cov, int n_threads);
#endif
