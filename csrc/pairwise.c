/* Pairwise-constraint sums for MMC; see pairwise.h. */
#include "pairwise.h"

#include "gram.h"  /* the shared squared-distance tile */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Pairs gathered into one buffer per BLAS call (1024 rows of differences:
 * 8 MB at p = 1024, enough rows for BLAS to reach its rate). */
#define ML_CHUNK 1024
/* Pairs per deterministic partial sum (a block never depends on the thread
 * count; thousands of pairs amortize the partial's reduction). */
#define ML_PAIR_BLOCK 4096
/* Memory for the per-block partial sums (p x p each): at most 128 MB; past
 * it, fewer and larger blocks. */
#define ML_MAX_PARTIAL_BYTES ((size_t)1 << 27)
/* Rows per block of the implicit diagonal kernel's direct path (row i pairs
 * with every later row, so 32 rows are ~32 n pairs). */
#define ML_DIAG_ROW_BLOCK 32
/* A pair is "close" when ||z_i||^2 + ||z_j||^2 >= ML_CLOSE_RATIO ||z_i - z_j||^2
 * (centred coordinates): the GEMM form's squared distance has then lost
 * about log2(64) = 6 of its 53 bits, and the Laplacian form's cancelling
 * terms are as large; the all-pairs diagonal kernel recomputes such pairs
 * (and every pair at distance 0) by differences.  The same ratio as
 * _core/pairsums.py's _CLOSE for the explicit-pair Laplacian form. */
#define ML_CLOSE_RATIO 64.0

static ptrdiff_t min_p(ptrdiff_t a, ptrdiff_t b) { return a < b ? a : b; }

/* Number of fixed blocks for m items: ML_PAIR_BLOCK each, but never more
 * partials of `len` doubles than ML_MAX_PARTIAL_BYTES holds. */
static ptrdiff_t n_blocks_for(ptrdiff_t m, ptrdiff_t len, ptrdiff_t *block) {
    ptrdiff_t nb = (m + ML_PAIR_BLOCK - 1) / ML_PAIR_BLOCK;
    ptrdiff_t cap = (ptrdiff_t)(ML_MAX_PARTIAL_BYTES / ((size_t)(len + 1) * sizeof(double)));
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
    if (p < ML_PAIRS_SYRK_MIN_P || dsyrk == NULL) {
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

/* The rows of X as the caller stores them: float64 (f64), or float32 (f32;
 * each value widened to float64 as it is read, every difference and sum in
 * float64, so the sums are those of X.astype(float64)). One is NULL. */
typedef struct {
    const double *f64;
    const float *f32;
} xrows;


/* D (c x p, row stride ld) = x_i - x_j for the c pairs (pi[k * stride],
 * pj[k * stride]), or its elementwise square when sq; in float64. */
#define ML_PAIR_DIFFS(NAME, T)                                                   \
static void NAME(const T *X, ptrdiff_t p, ptrdiff_t ld, const int64_t *pi,       \
                 const int64_t *pj, ptrdiff_t stride, ptrdiff_t c, int sq,       \
                 double *D) {                                                    \
    for (ptrdiff_t k = 0; k < c; ++k) {                                          \
        const T *xi = X + pi[k * stride] * p, *xj = X + pj[k * stride] * p;      \
        double *dk = D + k * ld;                                                 \
        if (sq) {                                                                \
            for (ptrdiff_t t = 0; t < p; ++t) {                                  \
                double e = (double)xi[t] - (double)xj[t];                        \
                dk[t] = e * e;                                                   \
            }                                                                    \
        } else {                                                                 \
            for (ptrdiff_t t = 0; t < p; ++t) dk[t] = (double)xi[t] - (double)xj[t]; \
        }                                                                        \
    }                                                                            \
}
ML_PAIR_DIFFS(pair_diffs_f64, double)
ML_PAIR_DIFFS(pair_diffs_f32, float)
#undef ML_PAIR_DIFFS

static void pair_diffs(xrows X, ptrdiff_t p, ptrdiff_t ld, const int64_t *pi,
                       const int64_t *pj, ptrdiff_t stride, ptrdiff_t c, int sq,
                       double *D) {
    if (X.f32) pair_diffs_f32(X.f32, p, ld, pi, pj, stride, c, sq, D);
    else pair_diffs_f64(X.f64, p, ld, pi, pj, stride, c, sq, D);
}

/* out[0:len] = sum over the nb partials (partial b at parts + b * stride),
 * added in block order: the fixed-order reduction of every kernel here. */
static void add_partials(double *out, const double *parts, ptrdiff_t nb,
                         ptrdiff_t len, ptrdiff_t stride) {
    memset(out, 0, (size_t)len * sizeof(double));
    for (ptrdiff_t b = 0; b < nb; ++b)
        for (ptrdiff_t t = 0; t < len; ++t) out[t] += parts[b * stride + t];
}

/* ------------------------------------------------------------------------ */
/* Explicit pairs, full metric. */

/* Yb (c x r) = D (c x p) Lt (p x r). */
static void project_chunk(const double *D, ptrdiff_t c, ptrdiff_t p,
                          const double *Lt, ptrdiff_t r, double *Yb,
                          ml_dgemm_fn dgemm) {
    if (dgemm) {  /* Yb^T (r x c) = Lt^T (r x p) . D^T (p x c) */
        char nn = 'N';
        int ri = (int)r, ci = (int)c, pi = (int)p;
        double one = 1.0, zero = 0.0;
        dgemm(&nn, &nn, &ri, &ci, &pi, &one, (double *)Lt, &ri, (double *)D,
              &pi, &zero, Yb, &ri);
        return;
    }
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

/* A pair at distance 0 (a non-smooth point of h; see pairwise.h): if its
 * difference dk is not 0, zacc (lower triangle p x p, then a count) +=
 * dk dk^T / 2. */
static void add_zero_pair_full(double *zacc, const double *dk, ptrdiff_t p) {
    int differs = 0;
    for (ptrdiff_t t = 0; t < p; ++t) differs |= dk[t] != 0.0;
    if (!differs) return;
    zacc[p * p] += 1.0;
    for (ptrdiff_t a = 0; a < p; ++a)
        for (ptrdiff_t t = 0; t <= a; ++t) zacc[a * p + t] += 0.5 * dk[a] * dk[t];
}

/* The c pairs at `pairs`: differences into D, distances (h, dist, zero
 * pairs), then, if `scale`, each row of D times sqrt(w) = (2 d)^(-1/2). */
static void full_chunk(xrows X, ptrdiff_t p, const int64_t *pairs,
                       ptrdiff_t c, const double *Lt, ptrdiff_t r,
                       ml_dgemm_fn dgemm, double *D, double *Yb, double *dist,
                       double *hacc, double *zacc, int scale) {
    pair_diffs(X, p, p, pairs, pairs + 1, 2, c, 0, D);
    project_chunk(D, c, p, Lt, r, Yb, dgemm);
    for (ptrdiff_t k = 0; k < c; ++k) {
        double q = 0.0;
        const double *yk = Yb + k * r;
        for (ptrdiff_t s = 0; s < r; ++s) q += yk[s] * yk[s];
        double d = sqrt(q);
        *hacc += d;
        if (dist) dist[k] = d;
        if (zacc && d == 0.0) add_zero_pair_full(zacc, D + k * p, p);
        if (scale) {
            double sw = d > 0.0 ? 1.0 / sqrt(2.0 * d) : 0.0;
            double *dk = D + k * p;
            for (ptrdiff_t t = 0; t < p; ++t) dk[t] *= sw;
        }
    }
}

/* Operands and per-block partials of ml_pairs_full. */
typedef struct {
    xrows X;
    const double *Lt;
    const int64_t *pairs;
    ptrdiff_t m, p, r, block;
    double *hpart, *gpart, *zpart, *dist;
    ml_dgemm_fn dgemm;
    ml_dsyrk_fn dsyrk;
} full_job;

static void full_block(const full_job *job, ptrdiff_t b, double *D, double *Yb) {
    const ptrdiff_t p = job->p, start = b * job->block;
    const ptrdiff_t end = min_p(start + job->block, job->m);
    double hacc = 0.0;
    double *acc = job->gpart ? job->gpart + b * p * p : NULL;
    double *zacc = job->zpart ? job->zpart + b * (p * p + 1) : NULL;
    for (ptrdiff_t c0 = start; c0 < end; c0 += ML_CHUNK) {
        ptrdiff_t c = min_p(end - c0, ML_CHUNK);
        full_chunk(job->X, p, job->pairs + 2 * c0, c, job->Lt, job->r, job->dgemm,
                   D, Yb, job->dist ? job->dist + c0 : NULL, &hacc, zacc, acc != NULL);
        if (acc) syrk_acc(acc, D, c, p, job->dsyrk);
    }
    job->hpart[b] = hacc;
}

static int pairs_full(xrows X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m,
                      const double *Lt, ptrdiff_t r,
                      double *h, double *G, double *dist,
                      double *G_zero, double *n_zero,
                      ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0 || m < 0 || r <= 0) return ML_ERR_ARG;
    if (G_zero && (!n_zero || !G)) return ML_ERR_ARG;
    if (check_pairs_range(pairs, m, n) != ML_OK) return ML_ERR_ARG;
    full_job job = {X, Lt, pairs, m, p, r, 0, NULL, NULL, NULL, dist,
                    p * r >= ML_PAIRS_GEMM_MIN_WORK ? dgemm : NULL, dsyrk};
    const ptrdiff_t nb = n_blocks_for(m, G ? (G_zero ? 4 * p * p : p * p) : 0, &job.block);
    job.hpart = calloc((size_t)nb, sizeof(double));
    job.gpart = G ? calloc((size_t)(nb * p * p), sizeof(double)) : NULL;
    job.zpart = G_zero ? calloc((size_t)(nb * (p * p + 1)), sizeof(double)) : NULL;
    int status = ML_OK;
    if (!job.hpart || (G && !job.gpart) || (G_zero && !job.zpart)) status = ML_ERR_ALLOC;
    const double work = (double)m * (double)p * (double)(r + (G ? p : 0));
    if (status == ML_OK)
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *D = malloc((size_t)(ML_CHUNK * p) * sizeof(double));
        double *Yb = malloc((size_t)(ML_CHUNK * r) * sizeof(double));
        if (!D || !Yb) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b)
            if (D && Yb && !ml_interrupted()) full_block(&job, b, D, Yb);
        free(D);
        free(Yb);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) {
        add_partials(h, job.hpart, nb, 1, 1);
        if (G) {  /* syrk 'U' column-major == lower triangle row-major */
            add_partials(G, job.gpart, nb, p * p, p * p);
            symmetrize_lower(G, p);
        }
        if (G_zero) {
            add_partials(G_zero, job.zpart, nb, p * p, p * p + 1);
            add_partials(n_zero, job.zpart + p * p, nb, 1, p * p + 1);
            symmetrize_lower(G_zero, p);
        }
        if (!isfinite(*h)) status = ML_ERR_NUMERIC;
    }
    free(job.hpart);
    free(job.gpart);
    free(job.zpart);
    return status;
}

int ml_pairs_full(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m,
                  const double *Lt, ptrdiff_t r,
                  double *h, double *G, double *dist,
                  double *G_zero, double *n_zero,
                  ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    xrows rows = {X, NULL};
    return pairs_full(rows, n, p, pairs, m, Lt, r, h, G, dist, G_zero, n_zero,
                      dgemm, dsyrk, n_threads);
}

int ml_pairs_full_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m,
                      const double *Lt, ptrdiff_t r,
                      double *h, double *G, double *dist,
                      double *G_zero, double *n_zero,
                      ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    xrows rows = {NULL, X};
    return pairs_full(rows, n, p, pairs, m, Lt, r, h, G, dist, G_zero, n_zero,
                      dgemm, dsyrk, n_threads);
}

/* ------------------------------------------------------------------------ */
/* Diagonal metric. */

/* Pairs per batch of diag_chunk's three sweeps (their rows, 8 p bytes each,
 * stay in the first-level cache between the sweeps). */
#define ML_DIAG_BATCH 64

/* q_k = a . v_k for the c rows of V, four pairs at a time: each q_k is
 * summed over t in order (the rounding of a pair-by-pair loop), but four
 * independent sums overlap where one sum is a chain of p dependent adds. */
static void diag_quad(const double *V, ptrdiff_t p, ptrdiff_t ld, ptrdiff_t c,
                      const double *a, double *q) {
    ptrdiff_t k = 0;
    for (; k + 4 <= c; k += 4) {
        const double *v0 = V + k * ld, *v1 = v0 + ld, *v2 = v1 + ld, *v3 = v2 + ld;
        double q0 = 0.0, q1 = 0.0, q2 = 0.0, q3 = 0.0;
        for (ptrdiff_t t = 0; t < p; ++t) {
            q0 += a[t] * v0[t];
            q1 += a[t] * v1[t];
            q2 += a[t] * v2[t];
            q3 += a[t] * v3[t];
        }
        q[k] = q0;
        q[k + 1] = q1;
        q[k + 2] = q2;
        q[k + 3] = q3;
    }
    for (; k < c; ++k) {
        double qk = 0.0;
        for (ptrdiff_t t = 0; t < p; ++t) qk += a[t] * V[k * ld + t];
        q[k] = qk;
    }
}

/* Sweep 1 of diag_chunk: rows v = (x_i - x_j)^2 into V (row stride ld >= p)
 * and q_k = a . v_k. */
static void diag_gather(xrows X, ptrdiff_t p, ptrdiff_t ld, const int64_t *pi,
                        const int64_t *pj, ptrdiff_t stride, ptrdiff_t c,
                        const double *a, double *V, double *q) {
    pair_diffs(X, p, ld, pi, pj, stride, c, 1, V);
    diag_quad(V, p, ld, c, a, q);
}

/* A pair at distance 0 that differs somewhere (see pairwise.h): v / 2 into
 * zacc and one more into *nzero. */
static void diag_zero_pair(const double *v, ptrdiff_t p, double *zacc, double *nzero) {
    int differs = 0;
    for (ptrdiff_t t = 0; t < p; ++t) differs |= v[t] > 0.0;
    if (!differs) return;
    *nzero += 1.0;
    for (ptrdiff_t t = 0; t < p; ++t) zacc[t] += 0.5 * v[t];
}

/* The rows of one batch, pair by pair (the sums' order): h, zero pairs, and
 * either the gradient (gacc) or, for the Hessian, the rows scaled by
 * sw = sqrt(1 / (4 d^3)) with sqrt(d) in column p (ld = p + 1; zero-distance
 * rows all 0), so that one syrk of the rows gives H and, in its last row,
 * sum_k sqrt(d_k) sw_k v_k = sum_k v_k / (2 d_k) = the gradient. */
static double diag_weigh(double *Vb, ptrdiff_t p, ptrdiff_t ld, ptrdiff_t nk,
                         const double *d, double hs, double *gacc, int want_H,
                         double *zacc, double *nzero) {
    double w[ML_DIAG_BATCH];
    for (ptrdiff_t k = 0; k < nk; ++k)  /* independent divisions, which overlap */
        w[k] = want_H ? 1.0 / (2.0 * d[k] * sqrt(d[k])) : 0.5 / d[k];
    for (ptrdiff_t k = 0; k < nk; ++k) {
        double *v = Vb + k * ld;
        hs += d[k];
        if (d[k] > 0.0) {
            if (want_H) {
                for (ptrdiff_t t = 0; t < p; ++t) v[t] *= w[k];
                v[p] = sqrt(d[k]);
            } else if (gacc) {
                for (ptrdiff_t t = 0; t < p; ++t) gacc[t] += w[k] * v[t];
            }
            continue;
        }
        if (zacc) diag_zero_pair(v, p, zacc, nzero);
        if (want_H) memset(v, 0, (size_t)ld * sizeof(double));
    }
    return hs;
}

/* One chunk of diagonal-metric pairs (pair k = (pi[k * stride], pj[k * stride])):
 * rows v = (x_i - x_j)^2 go to V (row stride p, or p + 1 with want_H: see
 * diag_weigh; gacc is then not used). In batches of ML_DIAG_BATCH pairs, whose
 * rows stay in the first-level cache: the rows and q; every distance of the
 * batch in one loop (independent square roots, which overlap; pair by pair
 * they were a chain of long latencies); then diag_weigh. */
static void diag_chunk(xrows X, ptrdiff_t p, const int64_t *pi,
                       const int64_t *pj, ptrdiff_t stride, ptrdiff_t c,
                       const double *a, double *V, double *hacc,
                       double *gacc, int want_H, double *zacc, double *nzero) {
    const ptrdiff_t ld = want_H ? p + 1 : p;
    double d[ML_DIAG_BATCH];
    double hs = *hacc;
    for (ptrdiff_t k0 = 0; k0 < c; k0 += ML_DIAG_BATCH) {
        const ptrdiff_t nk = min_p(c - k0, ML_DIAG_BATCH);
        double *Vb = V + k0 * ld;
        diag_gather(X, p, ld, pi + k0 * stride, pj + k0 * stride, stride, nk, a, Vb, d);
        for (ptrdiff_t k = 0; k < nk; ++k) d[k] = sqrt(d[k]);
        hs = diag_weigh(Vb, p, ld, nk, d, hs, gacc, want_H, zacc, nzero);
    }
    *hacc = hs;
}

/* Operands and per-block partials of the diagonal kernels: block b holds
 * h (hpart[b]), the gradient (gpart + b p; without the Hessian), the Hessian
 * with the gradient in its last row (Hpart + b (p + 1)^2, see diag_weigh) and
 * the zero pairs' sum and count (zpart + b (p + 1)). */
typedef struct {
    xrows X;
    const double *a;
    const int64_t *pairs;  /* NULL: all pairs i < j */
    ptrdiff_t n, m, p, block;
    double *hpart, *gpart, *Hpart, *zpart;
    ml_dsyrk_fn dsyrk;
} diag_job;

/* Block b of the direct diagonal kernel: a range of explicit pairs, or the
 * pairs (i, j > i) of a range of rows, gathered ML_CHUNK at a time into idx. */
static void diag_block(const diag_job *job, ptrdiff_t b, double *V, int64_t *idx) {
    const ptrdiff_t p = job->p, n = job->n;
    double hacc = 0.0;
    double *gacc = job->gpart ? job->gpart + b * p : NULL;
    double *Hacc = job->Hpart ? job->Hpart + b * (p + 1) * (p + 1) : NULL;
    double *zacc = job->zpart ? job->zpart + b * (p + 1) : NULL;
    double *nz = zacc ? zacc + p : NULL;
    const ptrdiff_t start = b * job->block;
    if (job->pairs) {
        const ptrdiff_t end = min_p(start + job->block, job->m);
        for (ptrdiff_t c0 = start; c0 < end; c0 += ML_CHUNK) {
            ptrdiff_t c = min_p(end - c0, ML_CHUNK);
            const int64_t *pr = job->pairs + 2 * c0;
            diag_chunk(job->X, p, pr, pr + 1, 2, c, job->a, V, &hacc, gacc,
                       Hacc != NULL, zacc, nz);
            if (Hacc) syrk_acc(Hacc, V, c, p + 1, job->dsyrk);
        }
    } else {
        const ptrdiff_t i1 = min_p(start + job->block, n - 1);
        ptrdiff_t c = 0;
        for (ptrdiff_t i = start; i < i1; ++i) {
            for (ptrdiff_t j = i + 1; j < n; ++j) {
                idx[2 * c] = i;
                idx[2 * c + 1] = j;
                if (++c < ML_CHUNK && !(i == i1 - 1 && j == n - 1)) continue;
                diag_chunk(job->X, p, idx, idx + 1, 2, c, job->a, V, &hacc, gacc,
                           Hacc != NULL, zacc, nz);
                if (Hacc) syrk_acc(Hacc, V, c, p + 1, job->dsyrk);
                c = 0;
            }
        }
    }
    job->hpart[b] = hacc;
}

/* The partials of job into the outputs (h, grad, H, grad_zero, n_zero). */
static int diag_reduce(const diag_job *job, ptrdiff_t nb, double *h, double *grad,
                       double *H, double *grad_zero, double *n_zero) {
    const ptrdiff_t p = job->p, q = p + 1;
    add_partials(h, job->hpart, nb, 1, 1);
    if (H) {  /* H and, in the last row, the gradient (diag_weigh) */
        double *HG = malloc((size_t)(q * q) * sizeof(double));
        if (!HG) return ML_ERR_ALLOC;
        add_partials(HG, job->Hpart, nb, q * q, q * q);
        for (ptrdiff_t r = 0; r < p; ++r)
            memcpy(H + r * p, HG + r * q, (size_t)(r + 1) * sizeof(double));
        symmetrize_lower(H, p);
        if (grad) memcpy(grad, HG + p * q, (size_t)p * sizeof(double));
        free(HG);
    } else if (grad) {
        add_partials(grad, job->gpart, nb, p, p);
    }
    if (grad_zero) {
        add_partials(grad_zero, job->zpart, nb, p, p + 1);
        add_partials(n_zero, job->zpart + p, nb, 1, p + 1);
    }
    return isfinite(*h) ? ML_OK : ML_ERR_NUMERIC;
}

static int diag_alloc(diag_job *job, ptrdiff_t nb, int grad, int H, int zero) {
    const ptrdiff_t p = job->p;
    job->hpart = calloc((size_t)nb, sizeof(double));
    job->gpart = grad && !H ? calloc((size_t)(nb * p), sizeof(double)) : NULL;
    job->Hpart = H ? calloc((size_t)(nb * (p + 1) * (p + 1)), sizeof(double)) : NULL;
    job->zpart = zero ? calloc((size_t)(nb * (p + 1)), sizeof(double)) : NULL;
    if (!job->hpart || (grad && !H && !job->gpart) || (H && !job->Hpart) ||
        (zero && !job->zpart))
        return ML_ERR_ALLOC;
    return ML_OK;
}

static void diag_free(diag_job *job) {
    free(job->hpart);
    free(job->gpart);
    free(job->Hpart);
    free(job->zpart);
}

static int allpairs_diag_gemm(xrows X, ptrdiff_t n, ptrdiff_t p,
                              const double *a, double *h, double *grad,
                              double *grad_zero, double *n_zero,
                              ml_dgemm_fn dgemm, int n_threads);

/* Fixed blocks of the direct diagonal kernel (never dependent on the thread
 * count): explicit pairs as n_blocks_for, or ML_DIAG_ROW_BLOCK rows each,
 * capped like them; job->block set. */
static ptrdiff_t diag_blocks(diag_job *job, int hessian) {
    const ptrdiff_t p = job->p, n = job->n;
    if (job->pairs) return n_blocks_for(job->m, hessian ? (p + 1) * (p + 1) : 1, &job->block);
    job->block = ML_DIAG_ROW_BLOCK;
    ptrdiff_t nb = n > 1 ? (n - 1 + job->block - 1) / job->block : 1;
    ptrdiff_t cap = (ptrdiff_t)(ML_MAX_PARTIAL_BYTES /
                                ((size_t)((p + 1) * (p + 1) + p + 1) * sizeof(double)));
    if (cap < 1) cap = 1;
    if (nb > cap) {
        nb = cap;
        job->block = (n - 1 + nb - 1) / nb;
    }
    return nb;
}

/* The nb blocks of job over the threads (one when the work, in flops, is
 * below ML_MIN_PARALLEL_WORK), each with its own row and index buffers. */
static int diag_run(const diag_job *job, ptrdiff_t nb, double work, int n_threads) {
    int status = ML_OK;
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *V = malloc((size_t)(ML_CHUNK * (job->p + 1)) * sizeof(double));
        int64_t *idx = malloc((size_t)(2 * ML_CHUNK) * sizeof(int64_t));
        if (!V || !idx) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b)
            if (V && idx && !ml_interrupted()) diag_block(job, b, V, idx);
        free(V);
        free(idx);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    return status;
}

static int pairs_diag(xrows X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m, const double *a,
                      double *h, double *grad, double *H,
                      double *grad_zero, double *n_zero,
                      int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0) return ML_ERR_ARG;
    if (grad_zero && !n_zero) return ML_ERR_ARG;
    if (pairs && (m < 0 || check_pairs_range(pairs, m, n) != ML_OK)) return ML_ERR_ARG;
    const int gemm_ok = !pairs && !H && dgemm && p > ML_GRAM_DIRECT_MAX_D;
    if (method == ML_PAIRS_GEMM && !gemm_ok) return ML_ERR_ARG;
    if (method != ML_PAIRS_AUTO && method != ML_PAIRS_DIRECT && method != ML_PAIRS_GEMM)
        return ML_ERR_ARG;
    if (method == ML_PAIRS_GEMM || (method == ML_PAIRS_AUTO && gemm_ok &&
                                    p >= ML_PAIRS_DIAG_GEMM_MIN_P))
        return allpairs_diag_gemm(X, n, p, a, h, grad, grad_zero, n_zero, dgemm, n_threads);
    diag_job job = {X, a, pairs, n, m, p, 0, NULL, NULL, NULL, NULL, dsyrk};
    const ptrdiff_t nb = diag_blocks(&job, H != NULL);
    int status = diag_alloc(&job, nb, grad != NULL, H != NULL, grad_zero != NULL);
    const double n_pairs = pairs ? (double)m : 0.5 * (double)n * (double)(n - 1);
    if (status == ML_OK)
        status = diag_run(&job, nb, n_pairs * (double)p * (double)(H ? p : 1), n_threads);
    if (status == ML_OK) status = diag_reduce(&job, nb, h, grad, H, grad_zero, n_zero);
    diag_free(&job);
    return status;
}

int ml_pairs_diag(const double *X, ptrdiff_t n, ptrdiff_t p,
                  const int64_t *pairs, ptrdiff_t m, const double *a,
                  double *h, double *grad, double *H,
                  double *grad_zero, double *n_zero,
                  int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    xrows rows = {X, NULL};
    return pairs_diag(rows, n, p, pairs, m, a, h, grad, H, grad_zero, n_zero,
                      method, dgemm, dsyrk, n_threads);
}

int ml_pairs_diag_f32(const float *X, ptrdiff_t n, ptrdiff_t p,
                      const int64_t *pairs, ptrdiff_t m, const double *a,
                      double *h, double *grad, double *H,
                      double *grad_zero, double *n_zero,
                      int method, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    xrows rows = {NULL, X};
    return pairs_diag(rows, n, p, pairs, m, a, h, grad, H, grad_zero, n_zero,
                      method, dgemm, dsyrk, n_threads);
}

/* ------------------------------------------------------------------------ */
/* All pairs i < j by tiles: the shared squared-distance tile gives the
 * distances of tile (I, J), J >= I, which become weights W_IJ; each task
 * owns a fixed range of row tiles and their partial sums. */

/* Per-thread scratch of the all-pairs kernels. */
typedef struct {
    double *W;    /* ML_GRAM_TILE^2: distances, then weights, of one tile */
    double *buf;  /* ML_GRAM_TILE^2: the tile's gemm output */
    double *acc;  /* ML_GRAM_TILE: the direct tile's row */
    double *rs, *cs;  /* ML_GRAM_TILE: row and column sums of W over J */
    double *T;    /* ML_GRAM_TILE x p: sum_J W_IJ X_J */
    double *rows; /* ML_GRAM_TILE x p: scaled rows (syrk input, or one v) */
    int64_t idx[2];
} tile_ws;

static void tile_ws_free(tile_ws *ws) {
    free(ws->W); free(ws->buf); free(ws->acc); free(ws->rs); free(ws->cs);
    free(ws->T); free(ws->rows);
}

static int tile_ws_alloc(tile_ws *ws, ptrdiff_t p) {
    const size_t T = ML_GRAM_TILE;
    ws->W = malloc(T * T * sizeof(double));
    ws->buf = malloc(T * T * sizeof(double));
    ws->acc = malloc(T * sizeof(double));
    ws->rs = malloc(T * sizeof(double));
    ws->cs = malloc(T * sizeof(double));
    ws->T = malloc(T * (size_t)p * sizeof(double));
    ws->rows = malloc(T * (size_t)p * sizeof(double));
    return ws->W && ws->buf && ws->acc && ws->rs && ws->cs && ws->T && ws->rows;
}

/* Tasks over nt row tiles: at most cap (the partials' memory), each a
 * contiguous range [task_first(k), task_first(k + 1)); depends on n and p only. */
static ptrdiff_t n_tasks_for(ptrdiff_t nt, ptrdiff_t len) {
    ptrdiff_t cap = (ptrdiff_t)(ML_MAX_PARTIAL_BYTES / ((size_t)(len + 1) * sizeof(double)));
    if (cap < 1) cap = 1;
    return nt < cap ? nt : cap;
}

static ptrdiff_t task_first(ptrdiff_t k, ptrdiff_t nt, ptrdiff_t ntask) {
    return k * nt / ntask;
}

/* Distances of tile (i0, j0) -> weights 1 / (2 d), 0 where d = 0 and below
 * the diagonal of a diagonal tile (each unordered pair once); h += d; rs,
 * cs += the row and column sums (cs is reset here, rs by the caller). */
static void weights_full(double *W, ptrdiff_t ti, ptrdiff_t tj, int diagonal_tile,
                         double *rs, double *cs, double *hacc) {
    for (ptrdiff_t b = 0; b < tj; ++b) cs[b] = 0.0;
    for (ptrdiff_t a = 0; a < ti; ++a) {
        double rsum = 0.0;
        for (ptrdiff_t b = 0; b < tj; ++b) {
            double w = 0.0;
            if (!diagonal_tile || b > a) {
                double d = sqrt(W[a * tj + b]);
                if (d > 0.0) {
                    *hacc += d;
                    w = 0.5 / d;
                }
            }
            W[a * tj + b] = w;
            rsum += w;
            cs[b] += w;
        }
        rs[a] += rsum;
    }
}

/* T (ti x p) += W (ti x tj) Xj (tj x p). */
static void add_weighted_rows(double *T, const double *W, const double *Xj,
                              ptrdiff_t ti, ptrdiff_t tj, ptrdiff_t p,
                              ml_dgemm_fn dgemm) {
    if (dgemm && p >= ML_PAIRS_T_GEMM_MIN_P) {  /* T^T (p x ti) += Xj^T (p x tj) . W^T */
        char nn = 'N';
        int m_ = (int)p, n_ = (int)ti, k_ = (int)tj, lda = (int)p, ldb = (int)tj;
        double one = 1.0;
        dgemm(&nn, &nn, &m_, &n_, &k_, &one, (double *)Xj, &lda, (double *)W, &ldb,
              &one, T, &lda);
        return;
    }
    for (ptrdiff_t a = 0; a < ti; ++a) {
        double *ta = T + a * p;
        for (ptrdiff_t b = 0; b < tj; ++b) {
            double w = W[a * tj + b];
            const double *xb = Xj + b * p;
            for (ptrdiff_t t = 0; t < p; ++t) ta[t] += w * xb[t];
        }
    }
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

/* Operands of the two all-pairs kernels. */
typedef struct {
    const ml_sqdist_f64 *dist;  /* squared distances of the rows */
    const double *X;   /* the rows the sums weigh (centred), n x p */
    xrows Xraw;  /* diagonal kernel: the caller's rows */
    const double *a;  /* diagonal kernel: the weights */
    ptrdiff_t n, p;
    ml_dgemm_fn dgemm;
    ml_dsyrk_fn dsyrk;
    /* ml_crosspairs_full: the column rows (nJ x p), distinct from X's rows;
     * NULL for the pairs i < j within X */
    const double *XJ;
    ptrdiff_t nJ;
} allpairs_job;

/* Row tile I of ml_allpairs_full into acc (lower triangle p x p) and *hacc. */
static void full_rowtile(const allpairs_job *job, ptrdiff_t I, tile_ws *ws,
                         double *acc, double *hacc) {
    const ptrdiff_t T = ML_GRAM_TILE, n = job->n, p = job->p;
    const ptrdiff_t i0 = I * T, ti = min_p(T, n - i0);
    /* columns: the rows j > i of X itself, or all rows of XJ (cross pairs) */
    const int cross = job->XJ != NULL;
    const double *Xcol = cross ? job->XJ : job->X;
    const ptrdiff_t ncol = cross ? job->nJ : n;
    memset(ws->T, 0, (size_t)(ti * p) * sizeof(double));
    memset(ws->rs, 0, (size_t)ti * sizeof(double));
    for (ptrdiff_t j0 = cross ? 0 : i0; j0 < ncol && !ml_interrupted(); j0 += T) {
        const ptrdiff_t tj = min_p(T, ncol - j0);
        ml_sqdist_tile_f64(job->dist, i0, ti, j0, tj, 0, 0.0, ws->W, tj, ws->buf, ws->acc);
        weights_full(ws->W, ti, tj, !cross && j0 == i0, ws->rs, ws->cs, hacc);
        /* column role: X_J^T diag(W^T 1) X_J */
        weighted_gram_acc(acc, Xcol + j0 * p, ws->cs, tj, p, ws->rows, job->dsyrk);
        add_weighted_rows(ws->T, ws->W, Xcol + j0 * p, ti, tj, p, job->dgemm);
    }
    /* row role: X_I^T diag(W 1) X_I, then minus (C + C^T), C = X_I^T T */
    weighted_gram_acc(acc, job->X + i0 * p, ws->rs, ti, p, ws->rows, job->dsyrk);
    for (ptrdiff_t a = 0; a < ti; ++a) {
        const double *xa = job->X + (i0 + a) * p, *ta = ws->T + a * p;
        for (ptrdiff_t k = 0; k < p; ++k)
            for (ptrdiff_t l = 0; l <= k; ++l) acc[k * p + l] -= xa[k] * ta[l] + ta[k] * xa[l];
    }
}

/* Distances of tile (i0, j0) of the diagonal kernel -> weights, as
 * weights_full, except that a close pair (see ML_CLOSE_RATIO) is recomputed
 * by differences of the raw rows, its terms added to h, gacc and the zero
 * pairs directly, and its weight left 0 (out of the Laplacian form). */
static void weights_diag(const allpairs_job *job, ptrdiff_t i0, ptrdiff_t ti,
                         ptrdiff_t j0, ptrdiff_t tj, tile_ws *ws, double *hacc,
                         double *gacc, double *zacc) {
    const double *norms = job->dist->nxc;
    double *W = ws->W;
    for (ptrdiff_t b = 0; b < tj; ++b) ws->cs[b] = 0.0;
    for (ptrdiff_t a = 0; a < ti; ++a) {
        double rsum = 0.0;
        for (ptrdiff_t b = 0; b < tj; ++b) {
            double w = 0.0, d2 = W[a * tj + b];
            if (j0 > i0 || b > a) {
                if (d2 * ML_CLOSE_RATIO <= norms[i0 + a] + norms[j0 + b]) {
                    ws->idx[0] = i0 + a;
                    ws->idx[1] = j0 + b;
                    diag_chunk(job->Xraw, job->p, ws->idx, ws->idx + 1, 2, 1, job->a,
                               ws->rows, hacc, gacc, 0, zacc, zacc ? zacc + job->p : NULL);
                } else {
                    double d = sqrt(d2);
                    *hacc += d;
                    w = 0.5 / d;
                }
            }
            W[a * tj + b] = w;
            rsum += w;
            ws->cs[b] += w;
        }
        ws->rs[a] += rsum;
    }
}

/* g[t] += sum_a c_a x_at^2 over the t rows of Xr. */
static void add_weighted_squares(double *g, const double *Xr, const double *c,
                                 ptrdiff_t rows, ptrdiff_t p) {
    for (ptrdiff_t a = 0; a < rows; ++a) {
        const double *x = Xr + a * p;
        for (ptrdiff_t t = 0; t < p; ++t) g[t] += c[a] * x[t] * x[t];
    }
}

/* Row tile I of the all-pairs diagonal kernel: h, the gradient (NULL: h
 * only) by the Laplacian form sum_ab w_ab (x_a - x_b)^2 =
 * sum_a rs_a x_a^2 + sum_b cs_b x_b^2 - 2 sum_a x_a * (W X)_a, zero pairs. */
static void diag_rowtile(const allpairs_job *job, ptrdiff_t I, tile_ws *ws,
                         double *hacc, double *gacc, double *zacc) {
    const ptrdiff_t T = ML_GRAM_TILE, n = job->n, p = job->p;
    const ptrdiff_t i0 = I * T, ti = min_p(T, n - i0);
    memset(ws->T, 0, (size_t)(ti * p) * sizeof(double));
    memset(ws->rs, 0, (size_t)ti * sizeof(double));
    for (ptrdiff_t j0 = i0; j0 < n && !ml_interrupted(); j0 += T) {
        const ptrdiff_t tj = min_p(T, n - j0);
        ml_sqdist_tile_f64(job->dist, i0, ti, j0, tj, 0, 0.0, ws->W, tj, ws->buf, ws->acc);
        weights_diag(job, i0, ti, j0, tj, ws, hacc, gacc, zacc);
        if (!gacc) continue;
        add_weighted_squares(gacc, job->X + j0 * p, ws->cs, tj, p);
        add_weighted_rows(ws->T, ws->W, job->X + j0 * p, ti, tj, p, job->dgemm);
    }
    if (!gacc) return;
    add_weighted_squares(gacc, job->X + i0 * p, ws->rs, ti, p);
    for (ptrdiff_t a = 0; a < ti; ++a) {
        const double *xa = job->X + (i0 + a) * p, *ta = ws->T + a * p;
        for (ptrdiff_t t = 0; t < p; ++t) gacc[t] -= 2.0 * xa[t] * ta[t];
    }
}

/* Run the row tiles of job over ntask tasks; task k's partials: h at
 * hpart[k], the rest at part + k * len (full: G's lower triangle; diagonal:
 * gradient, then zero pairs' sum and count when zero). */
static int allpairs_run(const allpairs_job *job, int diagonal, int grad, int zero,
                        ptrdiff_t ntask, ptrdiff_t len, double *hpart,
                        double *part, int n_threads) {
    const ptrdiff_t nt = (job->n + ML_GRAM_TILE - 1) / ML_GRAM_TILE, p = job->p;
    const double work = (job->XJ ? (double)job->nJ : 0.5 * (double)job->n)
                        * (double)job->n * (double)(2 * p);
    int status = ML_OK;
    #pragma omp parallel if(ntask > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        tile_ws ws;
        const int ws_ok = tile_ws_alloc(&ws, p);
        if (!ws_ok) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t k = 0; k < ntask; ++k) {
            if (!ws_ok || ml_interrupted()) continue;
            double hacc = 0.0, *pk = part + k * len;
            for (ptrdiff_t I = task_first(k, nt, ntask); I < task_first(k + 1, nt, ntask); ++I) {
                if (!diagonal) full_rowtile(job, I, &ws, pk, &hacc);
                else diag_rowtile(job, I, &ws, &hacc, grad ? pk : NULL,
                                  zero ? pk + (grad ? p : 0) : NULL);
            }
            hpart[k] = hacc;
        }
        tile_ws_free(&ws);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    return status;
}

/* Every pair of rows of X (XJ NULL: i < j) or of X x XJ, Laplacian form: the
 * tile tasks, then their partials added in task order. */
static int full_pairs(const double *X, const double *Y, ptrdiff_t n,
                      const double *XJ, const double *YJ, ptrdiff_t nJ,
                      ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                      ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    ml_sqdist_f64 dist;
    int status = ml_sqdist_init_f64(&dist, Y, n, YJ, XJ ? nJ : n, r, dgemm);
    const ptrdiff_t nt = (n + ML_GRAM_TILE - 1) / ML_GRAM_TILE;
    const ptrdiff_t ntask = n_tasks_for(nt > 0 ? nt : 1, p * p);
    double *hpart = calloc((size_t)ntask, sizeof(double));
    double *gpart = calloc((size_t)(ntask * p * p), sizeof(double));
    if (status == ML_OK && (!hpart || !gpart)) status = ML_ERR_ALLOC;
    if (status == ML_OK && nt > 0) {
        allpairs_job job = {&dist, X, {NULL, NULL}, NULL, n, p, dgemm, dsyrk, XJ, XJ ? nJ : 0};
        status = allpairs_run(&job, 0, 1, 0, ntask, p * p, hpart, gpart, n_threads);
    }
    if (status == ML_OK) {
        add_partials(h, hpart, ntask, 1, 1);
        add_partials(G, gpart, ntask, p * p, p * p);
        symmetrize_lower(G, p);
        if (!isfinite(*h)) status = ML_ERR_NUMERIC;
    }
    ml_sqdist_free_f64(&dist);
    free(hpart);
    free(gpart);
    return status;
}

int ml_allpairs_full(const double *X, const double *Y, ptrdiff_t n,
                     ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                     ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (n < 0 || p <= 0 || r <= 0) return ML_ERR_ARG;
    return full_pairs(X, Y, n, NULL, NULL, 0, p, r, h, G, dgemm, dsyrk, n_threads);
}

int ml_crosspairs_full(const double *XI, const double *YI, ptrdiff_t nI,
                       const double *XJ, const double *YJ, ptrdiff_t nJ,
                       ptrdiff_t p, ptrdiff_t r, double *h, double *G,
                       ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, int n_threads) {
    if (nI < 0 || nJ < 0 || p <= 0 || r <= 0) return ML_ERR_ARG;
    memset(G, 0, (size_t)(p * p) * sizeof(double));
    *h = 0.0;
    if (nI == 0 || nJ == 0) return ML_OK;
    return full_pairs(XI, YI, nI, XJ, YJ, nJ, p, r, h, G, dgemm, dsyrk, n_threads);
}

/* mean += the rows of X (n x p), in row order; Xc = X - mean, Z = Xc diag(s). */
#define ML_CENTRE_ROWS(NAME, T)                                                  \
static void NAME(const T *X, ptrdiff_t n, ptrdiff_t p, double *mean, int sum,    \
                 const double *s, double *Xc, double *Z) {                      \
    if (sum) {                                                                   \
        for (ptrdiff_t i = 0; i < n; ++i)                                        \
            for (ptrdiff_t t = 0; t < p; ++t) mean[t] += (double)X[i * p + t];   \
        return;                                                                  \
    }                                                                            \
    for (ptrdiff_t i = 0; i < n; ++i)                                            \
        for (ptrdiff_t t = 0; t < p; ++t) {                                      \
            double v = (double)X[i * p + t] - mean[t];                           \
            Xc[i * p + t] = v;                                                   \
            Z[i * p + t] = v * s[t];                                             \
        }                                                                        \
}
ML_CENTRE_ROWS(centre_rows_f64, double)
ML_CENTRE_ROWS(centre_rows_f32, float)
#undef ML_CENTRE_ROWS

/* Xc = X - column mean (summed in row order); Z = Xc diag(sqrt a). */
static int centre_and_scale(xrows X, ptrdiff_t n, ptrdiff_t p, const double *a,
                            double **Xc, double **Z) {
    double *mean = calloc((size_t)(2 * p), sizeof(double)), *s = mean + p;
    *Xc = malloc((size_t)(n * p) * sizeof(double));
    *Z = malloc((size_t)(n * p) * sizeof(double));
    if (!mean || !*Xc || !*Z) {
        free(mean);
        return ML_ERR_ALLOC;
    }
    if (X.f32) centre_rows_f32(X.f32, n, p, mean, 1, s, *Xc, *Z);  /* the sums */
    else centre_rows_f64(X.f64, n, p, mean, 1, s, *Xc, *Z);
    for (ptrdiff_t t = 0; t < p; ++t) {
        mean[t] /= (double)n;
        s[t] = sqrt(a[t] > 0.0 ? a[t] : 0.0);
    }
    if (X.f32) centre_rows_f32(X.f32, n, p, mean, 0, s, *Xc, *Z);  /* the rows */
    else centre_rows_f64(X.f64, n, p, mean, 0, s, *Xc, *Z);
    free(mean);
    return ML_OK;
}

static int allpairs_diag_gemm(xrows X, ptrdiff_t n, ptrdiff_t p,
                              const double *a, double *h, double *grad,
                              double *grad_zero, double *n_zero,
                              ml_dgemm_fn dgemm, int n_threads) {
    if (n < 2) {  /* no pairs */
        *h = 0.0;
        if (grad) memset(grad, 0, (size_t)p * sizeof(double));
        if (grad_zero) memset(grad_zero, 0, (size_t)p * sizeof(double));
        if (grad_zero) *n_zero = 0.0;
        return ML_OK;
    }
    double *Xc = NULL, *Z = NULL;
    ml_sqdist_f64 dist;
    memset(&dist, 0, sizeof dist);
    int status = centre_and_scale(X, n, p, a, &Xc, &Z);
    if (status == ML_OK) status = ml_sqdist_init_f64(&dist, Z, n, NULL, n, p, dgemm);
    free(Z);  /* the tile keeps its own centred copy */
    if (status == ML_OK && dist.direct) status = ML_ERR_ARG;  /* p above the crossover */
    const ptrdiff_t nt = (n + ML_GRAM_TILE - 1) / ML_GRAM_TILE;
    const ptrdiff_t len = (grad ? p : 0) + (grad_zero ? p + 1 : 0);
    const ptrdiff_t ntask = n_tasks_for(nt, len);
    double *hpart = calloc((size_t)ntask, sizeof(double));
    double *part = calloc((size_t)(ntask * len + 1), sizeof(double));
    if (status == ML_OK && (!hpart || !part)) status = ML_ERR_ALLOC;
    if (status == ML_OK) {
        allpairs_job job = {&dist, Xc, X, a, n, p, dgemm, NULL};
        status = allpairs_run(&job, 1, grad != NULL, grad_zero != NULL, ntask, len,
                              hpart, part, n_threads);
    }
    if (status == ML_OK) {
        const ptrdiff_t zoff = grad ? p : 0;
        add_partials(h, hpart, ntask, 1, 1);
        if (grad) add_partials(grad, part, ntask, p, len);
        if (grad_zero) {
            add_partials(grad_zero, part + zoff, ntask, p, len);
            add_partials(n_zero, part + zoff + p, ntask, 1, len);
        }
        if (!isfinite(*h)) status = ML_ERR_NUMERIC;
    }
    ml_sqdist_free_f64(&dist);
    free(Xc);
    free(hpart);
    free(part);
    return status;
}

/* ------------------------------------------------------------------------ */
/* Explicit pairs, full metric, Laplacian form. */

/* One pair of ml_pairs_laplacian at distance d: its weight into wdeg and T,
 * or, at d = 0, its zero-pair term. */
static void laplacian_pair(const double *X, ptrdiff_t p, int64_t i, int64_t j,
                           double d, double *wdeg, double *T, double *G_zero,
                           double *n_zero) {
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
        return;
    }
    if (!G_zero) return;
    int differs = 0;  /* a non-smooth point of h; see pairwise.h */
    for (ptrdiff_t t = 0; t < p; ++t) differs |= xi[t] != xj[t];
    if (!differs) return;
    *n_zero += 1.0;
    for (ptrdiff_t a = 0; a < p; ++a) {
        double da = xi[a] - xj[a];
        for (ptrdiff_t t = 0; t <= a; ++t) G_zero[a * p + t] += 0.5 * da * (xi[t] - xj[t]);
    }
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
        laplacian_pair(X, p, i, j, d, wdeg, T, G_zero, n_zero);
    }
    if (G_zero) symmetrize_lower(G_zero, p);
    *h = hs;
    return isfinite(hs) ? ML_OK : ML_ERR_NUMERIC;
}
