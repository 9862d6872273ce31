/* Pairwise-constraint sums for MMC; see pairwise.h. */
#include "pairwise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ML_CHUNK 1024         /* pairs gathered per BLAS call */
#define ML_PAIR_BLOCK 4096    /* pairs per deterministic partial sum */
#define ML_MAX_PARTIAL_BYTES ((size_t)1 << 27)
#define ML_SMALL_P 12         /* below: direct loops beat a BLAS call */
#define ML_TILE 256           /* row tile of the all-pairs kernel */

/* Number of fixed blocks for m items: ML_PAIR_BLOCK each, but never more
 * partial p x p matrices than ML_MAX_PARTIAL_BYTES holds. */
static ptrdiff_t n_blocks_for(ptrdiff_t m, ptrdiff_t p, ptrdiff_t *block) {
    ptrdiff_t nb = (m + ML_PAIR_BLOCK - 1) / ML_PAIR_BLOCK;
    ptrdiff_t cap = (ptrdiff_t)(ML_MAX_PARTIAL_BYTES / ((size_t)(p * p + 1) * sizeof(double)));
    if (cap < 1) cap = 1;
    if (nb > cap) nb = cap;
    if (nb < 1) nb = 1;
    *block = (m + nb - 1) / nb;
    if (*block < 1) *block = 1;
    return nb;
}

/* acc (p x p, upper triangle in column-major = lower in row-major) += Z^T Z,
 * Z row-major (c x p). */
static void syrk_acc(double *acc, const double *Z, ptrdiff_t c, ptrdiff_t p,
                     ml_dsyrk_fn dsyrk) {
    if (c == 0) return;
    if (p < ML_SMALL_P || dsyrk == NULL) {
        for (ptrdiff_t k = 0; k < c; ++k) {
            const double *z = Z + k * p;
            for (ptrdiff_t a = 0; a < p; ++a) {
                double za = z[a];
                double *row = acc + a * p;
                for (ptrdiff_t b = 0; b <= a; ++b) row[b] += za * z[b];
            }
        }
        return;
    }
    char uplo = 'U', trans = 'N';
    int pn = (int)p, kk = (int)c, lda = (int)p, ldc = (int)p;
    double one = 1.0;
    dsyrk(&uplo, &trans, &pn, &kk, &one, (double *)Z, &lda, &one, acc, &ldc);
}

/* Fill the upper (row-major) triangle from the lower one. */
static void symmetrize_lower(double *G, ptrdiff_t p) {
    for (ptrdiff_t a = 0; a < p; ++a)
        for (ptrdiff_t b = a + 1; b < p; ++b) G[a * p + b] = G[b * p + a];
}

static int check_pairs_range(const int64_t *pairs, ptrdiff_t m, ptrdiff_t n) {
    for (ptrdiff_t k = 0; k < 2 * m; ++k)
        if (pairs[k] < 0 || pairs[k] >= n) return ML_ERR_ARG;
    return ML_OK;
}

int ml_pairs_full(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m,
                  const double *Lt, ptrdiff_t r,
                  double *h, double *G, double *dist,
                  double *G_zero, double *n_zero,
                  ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0 || m < 0 || r <= 0) return ML_ERR_ARG;
    if (G_zero && !n_zero) return ML_ERR_ARG;
    if (check_pairs_range(pairs, m, n) != ML_OK) return ML_ERR_ARG;
    ptrdiff_t block;
    ptrdiff_t nb = n_blocks_for(m, G ? (G_zero ? 2 * p : p) : 0, &block);
    double *hpart = calloc((size_t)nb, sizeof(double));
    double *gpart = G ? calloc((size_t)(nb * p * p), sizeof(double)) : NULL;
    /* per block: sum of D_k D_k^T / 2 over zero-distance pairs (lower triangle), count */
    double *zpart = G_zero ? calloc((size_t)(nb * (p * p + 1)), sizeof(double)) : NULL;
    if (!hpart || (G && !gpart) || (G_zero && !zpart)) {
        free(hpart); free(gpart); free(zpart);
        return ML_ERR_ALLOC;
    }
    int status = ML_OK;
    const int use_gemm = (dgemm != NULL) && (p * r >= ML_SMALL_P * ML_SMALL_P);

    const double work = (double)m * (double)p * (double)(r + (G ? p : 0));
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *D = malloc((size_t)(ML_CHUNK * p) * sizeof(double));
        double *Yb = malloc((size_t)(ML_CHUNK * r) * sizeof(double));
        if (!D || !Yb) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b) {
            if (!D || !Yb || ml_interrupted()) continue;
            ptrdiff_t start = b * block, end = start + block < m ? start + block : m;
            double hacc = 0.0;
            double *acc = G ? gpart + b * p * p : NULL;
            for (ptrdiff_t c0 = start; c0 < end; c0 += ML_CHUNK) {
                ptrdiff_t c = end - c0 < ML_CHUNK ? end - c0 : ML_CHUNK;
                for (ptrdiff_t k = 0; k < c; ++k) {
                    const double *xi = X + pairs[2 * (c0 + k)] * p;
                    const double *xj = X + pairs[2 * (c0 + k) + 1] * p;
                    double *dk = D + k * p;
                    for (ptrdiff_t t = 0; t < p; ++t) dk[t] = xi[t] - xj[t];
                }
                if (use_gemm) {  /* Yb^T (r x c) = Lt^T (r x p) . D^T (p x c) */
                    char nn = 'N';
                    int ri = (int)r, ci = (int)c, pi = (int)p;
                    double one = 1.0, zero = 0.0;
                    dgemm(&nn, &nn, &ri, &ci, &pi, &one, (double *)Lt, &ri, D,
                          &pi, &zero, Yb, &ri);
                } else {
                    for (ptrdiff_t k = 0; k < c; ++k) {
                        double *yk = Yb + k * r;
                        for (ptrdiff_t s = 0; s < r; ++s) yk[s] = 0.0;
                        for (ptrdiff_t t = 0; t < p; ++t) {
                            double dt = D[k * p + t];
                            const double *lrow = Lt + t * r;
                            for (ptrdiff_t s = 0; s < r; ++s) yk[s] += dt * lrow[s];
                        }
                    }
                }
                for (ptrdiff_t k = 0; k < c; ++k) {
                    double q = 0.0;
                    const double *yk = Yb + k * r;
                    for (ptrdiff_t s = 0; s < r; ++s) q += yk[s] * yk[s];
                    double d = sqrt(q);
                    hacc += d;
                    if (dist) dist[c0 + k] = d;
                    if (zpart && d == 0.0) {  /* a non-smooth point of h; see pairwise.h */
                        const double *dk = D + k * p;
                        double *zacc = zpart + b * (p * p + 1);
                        int differs = 0;
                        for (ptrdiff_t t = 0; t < p; ++t) differs |= dk[t] != 0.0;
                        if (differs) {
                            zacc[p * p] += 1.0;
                            for (ptrdiff_t a = 0; a < p; ++a)
                                for (ptrdiff_t t = 0; t <= a; ++t)
                                    zacc[a * p + t] += 0.5 * dk[a] * dk[t];
                        }
                    }
                    if (acc) {  /* scale the row by sqrt(w) = (2 d)^(-1/2) */
                        double sw = d > 0.0 ? 1.0 / sqrt(2.0 * d) : 0.0;
                        double *dk = D + k * p;
                        for (ptrdiff_t t = 0; t < p; ++t) dk[t] *= sw;
                    }
                }
                if (acc) syrk_acc(acc, D, c, p, dsyrk);
            }
            hpart[b] = hacc;
        }
        free(D);
        free(Yb);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) {
        double hs = 0.0;
        for (ptrdiff_t b = 0; b < nb; ++b) hs += hpart[b];
        *h = hs;
        if (G) {
            memset(G, 0, (size_t)(p * p) * sizeof(double));
            for (ptrdiff_t b = 0; b < nb; ++b) {
                const double *acc = gpart + b * p * p;
                for (ptrdiff_t t = 0; t < p * p; ++t) G[t] += acc[t];
            }
            /* syrk 'U' column-major == lower triangle row-major */
            symmetrize_lower(G, p);
        }
        if (G_zero) {
            memset(G_zero, 0, (size_t)(p * p) * sizeof(double));
            *n_zero = 0.0;
            for (ptrdiff_t b = 0; b < nb; ++b) {
                const double *zacc = zpart + b * (p * p + 1);
                for (ptrdiff_t t = 0; t < p * p; ++t) G_zero[t] += zacc[t];
                *n_zero += zacc[p * p];
            }
            symmetrize_lower(G_zero, p);
        }
        if (!isfinite(hs)) status = ML_ERR_NUMERIC;
    }
    free(hpart);
    free(gpart);
    free(zpart);
    return status;
}

/* One chunk of diagonal-metric pairs: rows v = (x_i - x_j)^2 go to V, scaled by
 * sqrt(1 / (4 d^3)) when the Hessian is wanted. */
static void diag_chunk(const double *X, ptrdiff_t p, const int64_t *pi,
                       const int64_t *pj, ptrdiff_t stride, ptrdiff_t c,
                       const double *a, double *V, double *hacc,
                       double *gacc, int want_H, double *zacc, double *nzero) {
    for (ptrdiff_t k = 0; k < c; ++k) {
        const double *xi = X + pi[k * stride] * p;
        const double *xj = X + pj[k * stride] * p;
        double *v = V + k * p;
        double q = 0.0;
        for (ptrdiff_t t = 0; t < p; ++t) {
            double dt = xi[t] - xj[t];
            v[t] = dt * dt;
            q += a[t] * v[t];
        }
        double d = sqrt(q);
        *hacc += d;
        if (d > 0.0) {
            if (gacc) {
                double w = 0.5 / d;
                for (ptrdiff_t t = 0; t < p; ++t) gacc[t] += w * v[t];
            }
            if (want_H) {
                double sw = 1.0 / (2.0 * d * sqrt(d));  /* sqrt(1/(4 d^3)) */
                for (ptrdiff_t t = 0; t < p; ++t) v[t] *= sw;
            }
        } else {
            if (zacc) {  /* a zero-distance pair that differs somewhere (see pairwise.h) */
                int differs = 0;
                for (ptrdiff_t t = 0; t < p; ++t) differs |= v[t] > 0.0;
                if (differs) {
                    *nzero += 1.0;
                    for (ptrdiff_t t = 0; t < p; ++t) zacc[t] += 0.5 * v[t];
                }
            }
            if (want_H)
                for (ptrdiff_t t = 0; t < p; ++t) v[t] = 0.0;
        }
    }
}

int ml_pairs_diag(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m, const double *a,
                  double *h, double *grad, double *H,
                  double *grad_zero, double *n_zero,
                  ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0) return ML_ERR_ARG;
    if (grad_zero && !n_zero) return ML_ERR_ARG;
    const int implicit = pairs == NULL;
    if (!implicit && (m < 0 || check_pairs_range(pairs, m, n) != ML_OK)) return ML_ERR_ARG;
    /* Blocks: explicit -> fixed ranges of pairs; implicit -> fixed row tiles
     * (row i pairs with every j > i). */
    ptrdiff_t block, nb;
    if (implicit) {
        block = 32;
        nb = n > 1 ? (n - 1 + block - 1) / block : 1;
        ptrdiff_t cap = (ptrdiff_t)(ML_MAX_PARTIAL_BYTES / ((size_t)(p * p + p + 1) * sizeof(double)));
        if (cap < 1) cap = 1;
        if (nb > cap) { nb = cap; block = (n - 1 + nb - 1) / nb; }
    } else {
        nb = n_blocks_for(m, H ? p + 1 : 1, &block);
    }
    double *hpart = calloc((size_t)nb, sizeof(double));
    double *gpart = grad ? calloc((size_t)(nb * p), sizeof(double)) : NULL;
    double *Hpart = H ? calloc((size_t)(nb * p * p), sizeof(double)) : NULL;
    /* per block: p sums of v / 2 over zero-distance pairs, then their count */
    double *zpart = grad_zero ? calloc((size_t)(nb * (p + 1)), sizeof(double)) : NULL;
    if (!hpart || (grad && !gpart) || (H && !Hpart) || (grad_zero && !zpart)) {
        free(hpart); free(gpart); free(Hpart); free(zpart);
        return ML_ERR_ALLOC;
    }
    int status = ML_OK;
    const double n_pairs = implicit ? 0.5 * (double)n * (double)(n - 1) : (double)m;
    const double work = n_pairs * (double)p * (double)(H ? p : 1);
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *V = malloc((size_t)(ML_CHUNK * p) * sizeof(double));
        int64_t *idx = malloc((size_t)(2 * ML_CHUNK) * sizeof(int64_t));
        if (!V || !idx) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b) {
            if (!V || !idx || ml_interrupted()) continue;
            double hacc = 0.0;
            double *gacc = grad ? gpart + b * p : NULL;
            double *Hacc = H ? Hpart + b * p * p : NULL;
            double *zacc = grad_zero ? zpart + b * (p + 1) : NULL;
            double *nz = grad_zero ? zacc + p : NULL;
            if (!implicit) {
                ptrdiff_t start = b * block, end = start + block < m ? start + block : m;
                for (ptrdiff_t c0 = start; c0 < end; c0 += ML_CHUNK) {
                    ptrdiff_t c = end - c0 < ML_CHUNK ? end - c0 : ML_CHUNK;
                    diag_chunk(X, p, pairs + 2 * c0, pairs + 2 * c0 + 1, 2, c, a,
                               V, &hacc, gacc, H != NULL, zacc, nz);
                    if (Hacc) syrk_acc(Hacc, V, c, p, dsyrk);
                }
            } else {
                ptrdiff_t i0 = b * block, i1 = i0 + block < n - 1 ? i0 + block : n - 1;
                ptrdiff_t c = 0;
                for (ptrdiff_t i = i0; i < i1; ++i) {
                    for (ptrdiff_t j = i + 1; j < n; ++j) {
                        idx[2 * c] = i;
                        idx[2 * c + 1] = j;
                        if (++c == ML_CHUNK) {
                            diag_chunk(X, p, idx, idx + 1, 2, c, a, V, &hacc, gacc,
                                       H != NULL, zacc, nz);
                            if (Hacc) syrk_acc(Hacc, V, c, p, dsyrk);
                            c = 0;
                        }
                    }
                }
                if (c > 0) {
                    diag_chunk(X, p, idx, idx + 1, 2, c, a, V, &hacc, gacc, H != NULL,
                               zacc, nz);
                    if (Hacc) syrk_acc(Hacc, V, c, p, dsyrk);
                }
            }
            hpart[b] = hacc;
        }
        free(V);
        free(idx);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) {
        double hs = 0.0;
        for (ptrdiff_t b = 0; b < nb; ++b) hs += hpart[b];
        *h = hs;
        if (grad) {
            memset(grad, 0, (size_t)p * sizeof(double));
            for (ptrdiff_t b = 0; b < nb; ++b)
                for (ptrdiff_t t = 0; t < p; ++t) grad[t] += gpart[b * p + t];
        }
        if (H) {
            memset(H, 0, (size_t)(p * p) * sizeof(double));
            for (ptrdiff_t b = 0; b < nb; ++b) {
                const double *acc = Hpart + b * p * p;
                for (ptrdiff_t t = 0; t < p * p; ++t) H[t] += acc[t];
            }
            symmetrize_lower(H, p);
        }
        if (grad_zero) {
            memset(grad_zero, 0, (size_t)p * sizeof(double));
            *n_zero = 0.0;
            for (ptrdiff_t b = 0; b < nb; ++b) {
                for (ptrdiff_t t = 0; t < p; ++t) grad_zero[t] += zpart[b * (p + 1) + t];
                *n_zero += zpart[b * (p + 1) + p];
            }
        }
        if (!isfinite(hs)) status = ML_ERR_NUMERIC;
    }
    free(hpart);
    free(gpart);
    free(Hpart);
    free(zpart);
    return status;
}

/* acc (lower triangle, row-major) += sum_a c_a x_a x_a^T over the rows of Xr
 * (t x p), c >= 0: rows scaled by sqrt(c) into buf, then syrk_acc. */
static void weighted_gram_acc(double *acc, const double *Xr, const double *c,
                              ptrdiff_t t, ptrdiff_t p, double *buf,
                              ml_dsyrk_fn dsyrk) {
    for (ptrdiff_t a = 0; a < t; ++a) {
        double s = c[a] > 0.0 ? sqrt(c[a]) : 0.0;
        for (ptrdiff_t k = 0; k < p; ++k) buf[a * p + k] = s * Xr[a * p + k];
    }
    syrk_acc(acc, buf, t, p, dsyrk);
}

int ml_allpairs_full(const double *X, const double *Y, ptrdiff_t n,
                     ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                     ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0 || r <= 0) return ML_ERR_ARG;
    ptrdiff_t nt = (n + ML_TILE - 1) / ML_TILE;
    if (nt < 1) nt = 1;
    double *ny = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    double *hpart = calloc((size_t)nt, sizeof(double));
    double *gpart = calloc((size_t)(nt * p * p), sizeof(double));
    if (!ny || !hpart || !gpart) { free(ny); free(hpart); free(gpart); return ML_ERR_ALLOC; }
    for (ptrdiff_t i = 0; i < n; ++i) {
        double q = 0.0;
        for (ptrdiff_t s = 0; s < r; ++s) q += Y[i * r + s] * Y[i * r + s];
        ny[i] = q;
    }
    const int use_gemm = dgemm != NULL && r > 8;
    const int use_gemm_z = dgemm != NULL && p >= 4;
    const double work = 0.5 * (double)n * (double)n * (double)(r + p);
    int status = ML_OK;
    /* Task I owns row tile I and the tiles J >= I of its row (the upper triangle
     * of pairs, each unordered pair once). With W the weights of those pairs:
     *   G_I = X_I^T diag(W 1) X_I + sum_J X_J^T diag(W^T 1) X_J - (C_I + C_I^T),
     *   C_I = X_I^T T_I,  T_I = sum_J W_IJ X_J,
     * and G = sum_I G_I, added in task order. */
    #pragma omp parallel if(nt > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *Wb = malloc((size_t)(ML_TILE * ML_TILE) * sizeof(double));
        double *T = malloc((size_t)(ML_TILE * p) * sizeof(double));
        double *buf = malloc((size_t)(ML_TILE * p) * sizeof(double));
        double *rs = malloc((size_t)ML_TILE * sizeof(double));
        double *cs = malloc((size_t)ML_TILE * sizeof(double));
        if (!Wb || !T || !buf || !rs || !cs) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t I = 0; I < nt; ++I) {
            if (!Wb || !T || !buf || !rs || !cs || ml_interrupted()) continue;
            ptrdiff_t i0 = I * ML_TILE, ti = n - i0 < ML_TILE ? n - i0 : ML_TILE;
            double *acc = gpart + I * p * p;
            double hacc = 0.0;
            memset(T, 0, (size_t)(ti * p) * sizeof(double));
            memset(rs, 0, (size_t)ti * sizeof(double));
            for (ptrdiff_t J = I; J < nt; ++J) {
                ptrdiff_t j0 = J * ML_TILE, tj = n - j0 < ML_TILE ? n - j0 : ML_TILE;
                if (use_gemm) {  /* Wb (ti x tj) = Y_I Y_J^T */
                    char tt = 'T', nn = 'N';
                    int m_ = (int)tj, n_ = (int)ti, k_ = (int)r, ld = (int)r, ldc = (int)tj;
                    double one = 1.0, zero = 0.0;
                    dgemm(&tt, &nn, &m_, &n_, &k_, &one, (double *)(Y + j0 * r), &ld,
                          (double *)(Y + i0 * r), &ld, &zero, Wb, &ldc);
                    for (ptrdiff_t a = 0; a < ti; ++a)
                        for (ptrdiff_t b2 = 0; b2 < tj; ++b2) {
                            double q = ny[i0 + a] + ny[j0 + b2] - 2.0 * Wb[a * tj + b2];
                            Wb[a * tj + b2] = q > 0.0 ? q : 0.0;
                        }
                } else {
                    for (ptrdiff_t a = 0; a < ti; ++a) {
                        const double *ya = Y + (i0 + a) * r;
                        for (ptrdiff_t b2 = 0; b2 < tj; ++b2) {
                            const double *yb = Y + (j0 + b2) * r;
                            double q = 0.0;
                            for (ptrdiff_t s = 0; s < r; ++s) {
                                double e = ya[s] - yb[s];
                                q += e * e;
                            }
                            Wb[a * tj + b2] = q;
                        }
                    }
                }
                for (ptrdiff_t b2 = 0; b2 < tj; ++b2) cs[b2] = 0.0;
                for (ptrdiff_t a = 0; a < ti; ++a) {
                    double rsum = 0.0;
                    for (ptrdiff_t b2 = 0; b2 < tj; ++b2) {
                        double w = 0.0;
                        if (J > I || b2 > a) {          /* each unordered pair once */
                            double d = sqrt(Wb[a * tj + b2]);
                            if (d > 0.0) {
                                hacc += d;
                                w = 0.5 / d;
                            }
                        }
                        Wb[a * tj + b2] = w;
                        rsum += w;
                        cs[b2] += w;
                    }
                    rs[a] += rsum;
                }
                /* column role: X_J^T diag(W^T 1) X_J */
                weighted_gram_acc(acc, X + j0 * p, cs, tj, p, buf, dsyrk);
                if (use_gemm_z) {  /* T^T (p x ti) += X_J^T (p x tj) . Wb^T (tj x ti) */
                    char nn = 'N';
                    int m_ = (int)p, n_ = (int)ti, k_ = (int)tj, lda = (int)p, ldb = (int)tj;
                    double one = 1.0;
                    dgemm(&nn, &nn, &m_, &n_, &k_, &one, (double *)(X + j0 * p), &lda,
                          Wb, &ldb, &one, T, &lda);
                } else {
                    for (ptrdiff_t a = 0; a < ti; ++a) {
                        double *ta = T + a * p;
                        for (ptrdiff_t b2 = 0; b2 < tj; ++b2) {
                            double w = Wb[a * tj + b2];
                            const double *xb = X + (j0 + b2) * p;
                            for (ptrdiff_t t = 0; t < p; ++t) ta[t] += w * xb[t];
                        }
                    }
                }
            }
            /* row role: X_I^T diag(W 1) X_I */
            weighted_gram_acc(acc, X + i0 * p, rs, ti, p, buf, dsyrk);
            /* minus (C + C^T), C = X_I^T T, lower triangle */
            for (ptrdiff_t a = 0; a < ti; ++a) {
                const double *xa = X + (i0 + a) * p, *ta = T + a * p;
                for (ptrdiff_t k = 0; k < p; ++k)
                    for (ptrdiff_t l = 0; l <= k; ++l)
                        acc[k * p + l] -= xa[k] * ta[l] + ta[k] * xa[l];
            }
            hpart[I] = hacc;
        }
        free(Wb);
        free(T);
        free(buf);
        free(rs);
        free(cs);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) {
        double hs = 0.0;
        memset(G, 0, (size_t)(p * p) * sizeof(double));
        for (ptrdiff_t I = 0; I < nt; ++I) {
            hs += hpart[I];
            const double *acc = gpart + I * p * p;
            for (ptrdiff_t t = 0; t < p * p; ++t) G[t] += acc[t];
        }
        symmetrize_lower(G, p);
        *h = hs;
        if (!isfinite(hs)) status = ML_ERR_NUMERIC;
    }
    free(ny);
    free(hpart);
    free(gpart);
    return status;
}

int ml_pairs_laplacian(const double *X, const double *Y, ptrdiff_t n, ptrdiff_t p,
                       ptrdiff_t r, const int64_t *pairs, ptrdiff_t m,
                       double *h, double *dist, double *wdeg, double *T,
                       double *G_zero, double *n_zero) {
    if (n < 0 || p <= 0 || r <= 0 || m < 0) return ML_ERR_ARG;
    if (G_zero && !n_zero) return ML_ERR_ARG;
    if (check_pairs_range(pairs, m, n) != ML_OK) return ML_ERR_ARG;
    memset(wdeg, 0, (size_t)n * sizeof(double));
    memset(T, 0, (size_t)(n * p) * sizeof(double));
    if (G_zero) {
        memset(G_zero, 0, (size_t)(p * p) * sizeof(double));
        *n_zero = 0.0;
    }
    /* One thread, pairs in order: the scatter into T would race, and this
     * O(m (r + 2 p)) pass is small next to the O(n p^2) products the caller
     * does with BLAS. */
    double hs = 0.0;
    for (ptrdiff_t k = 0; k < m; ++k) {
        const int64_t i = pairs[2 * k], j = pairs[2 * k + 1];
        const double *yi = Y + i * r, *yj = Y + j * r;
        double q = 0.0;
        for (ptrdiff_t s = 0; s < r; ++s) {
            double e = yi[s] - yj[s];
            q += e * e;
        }
        double d = sqrt(q);
        hs += d;
        if (dist) dist[k] = d;
        const double *xi = X + i * p, *xj = X + j * p;
        if (d > 0.0) {
            double w = 0.5 / d;
            wdeg[i] += w;
            wdeg[j] += w;
            double *ti = T + i * p, *tj = T + j * p;
            for (ptrdiff_t t = 0; t < p; ++t) {
                ti[t] += w * xj[t];
                tj[t] += w * xi[t];
            }
        } else if (G_zero) {  /* a non-smooth point of h; see pairwise.h */
            int differs = 0;
            for (ptrdiff_t t = 0; t < p; ++t) differs |= xi[t] != xj[t];
            if (differs) {
                *n_zero += 1.0;
                for (ptrdiff_t a = 0; a < p; ++a) {
                    double da = xi[a] - xj[a];
                    for (ptrdiff_t t = 0; t <= a; ++t)
                        G_zero[a * p + t] += 0.5 * da * (xi[t] - xj[t]);
                }
            }
        }
    }
    if (G_zero) symmetrize_lower(G_zero, p);
    *h = hs;
    return isfinite(hs) ? ML_OK : ML_ERR_NUMERIC;
}
