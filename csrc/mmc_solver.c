/* MMC's full-A solver loop; see mmc_solver.h and metriclust/mmc.py. */
#include "mmc_solver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ML_FACE_BLOCK 2048   /* pairs per deterministic partial sum (face Newton) */
#define ML_FACE_CHUNK 256    /* rows gathered per dsyrk call */

struct ml_mmc_spg {
    ml_mmc_problem pb;
    ml_mmc_settings set;
    ptrdiff_t p;
    /* current and best points */
    double *B, *G, *Gz, h, nz;
    double *best_B, *best_G, best_h;
    double step, upper, gap;
    /* h since the last reset: a ring of the last ring_len values (ring_len >
     * window, memory) and the maxima the objective-change rule needs; sizes do
     * not grow with max_iter */
    double *hist, hist_max, hist_max_old;
    ptrdiff_t n_hist, ring_len;
    double *log;             /* (it, h, gap) per iteration run here, when verbose */
    ptrdiff_t n_log, log_cap;
    ptrdiff_t it, n_iter, next_face;
    ptrdiff_t n_eval;        /* pair-sum passes (evaluations) so far */
    int resume_projection;   /* a FACE event left this iteration before its projection */
    /* scratch, p x p unless noted */
    double *S, *lam, *V, *F, *Lt, *P, *dir, *Bn, *Gn, *Gzn, *lam2, *V2, *G2, *Gz2;
    double *work;
    int *iwork, lwork, liwork;
    /* LAPLACIAN / ALLPAIRS: n x p, n x p, n, n x p */
    double *Y, *T, *wdeg, *EW;
};

/* ---- small dense helpers ------------------------------------------------ */

static double frob_dot(const double *A, const double *B, ptrdiff_t len) {
    double s = 0.0;
    for (ptrdiff_t t = 0; t < len; ++t) s += A[t] * B[t];
    return s;
}

/* C (a x c) = A (a x b) B (b x c), all row-major. */
static void gemm_rm(ml_dgemm_fn dgemm, const double *A, const double *B, double *C,
                    ptrdiff_t a, ptrdiff_t b, ptrdiff_t c) {
    char nn = 'N';
    int ai = (int)a, bi = (int)b, ci = (int)c;
    double one = 1.0, zero = 0.0;
    dgemm(&nn, &nn, &ci, &ai, &bi, &one, (double *)B, &ci, (double *)A, &bi, &zero, C, &ci);
}

/* Symmetric part of A into out; ML_ERR_NUMERIC if not finite. */
static int symmetric_part(const double *A, double *out, ptrdiff_t p) {
    for (ptrdiff_t a = 0; a < p; ++a)
        for (ptrdiff_t b = 0; b < p; ++b) {
            double v = 0.5 * (A[a * p + b] + A[b * p + a]);
            if (!isfinite(v)) return ML_ERR_NUMERIC;
            out[a * p + b] = v;
        }
    return ML_OK;
}

/* LAPACK workspace sizes for an n x n symmetric eigendecomposition (dsyevd
 * with vectors, or dsyevr); iwork needs liwork + 2 n ints (dsyevr's isuppz). */
static void eigh_workspace(ptrdiff_t n, int *lwork, int *liwork) {
    ptrdiff_t lw = 1 + 6 * n + 2 * n * n;
    *lwork = (int)(lw > 26 * n ? lw : 26 * n);
    *liwork = (int)(10 * n + 3);
}

/* Eigenvalues ascending (lam) and eigenvectors as rows of Vr (Vr[j n + i] =
 * component i of vector j) of the symmetric part of A (n x n). LAPACK's
 * dsyevd first (numpy's eigh), dsyevr if it does not converge (metric-learn
 * issue #306). S: n x n scratch. */
static int eigh_ws(ml_dsyevd_fn dsyevd, ml_dsyevr_fn dsyevr, const double *A, ptrdiff_t p,
                   double *lam, double *Vr, double *S, double *work, int lwork, int *iwork,
                   int liwork) {
    int st = symmetric_part(A, Vr, p);
    if (st != ML_OK) return st;
    char jobz = 'V', uplo = 'L', range = 'A';
    int n = (int)p, lda = (int)p, info = 0;
    dsyevd(&jobz, &uplo, &n, Vr, &lda, lam, work, &lwork, iwork, &liwork, &info);
    if (info == 0) return ML_OK;
    st = symmetric_part(A, S, p);
    if (st != ML_OK) return st;
    double vl = 0.0, vu = 0.0, abstol = 0.0;
    int il = 1, iu = n, found = 0;
    int *isuppz = iwork + liwork;     /* 2 p ints past the LAPACK workspace */
    dsyevr(&jobz, &range, &uplo, &n, S, &lda, &vl, &vu, &il, &iu, &abstol, &found, lam, Vr,
           &lda, isuppz, work, &lwork, iwork, &liwork, &info);
    return info == 0 && found == n ? ML_OK : ML_ERR_EIGEN;
}

static int eigh_sym(ml_mmc_spg *s, const double *A, double *lam, double *Vr) {
    return eigh_ws(s->pb.dsyevd, s->pb.dsyevr, A, s->p, lam, Vr, s->S, s->work, s->lwork,
                   s->iwork, s->liwork);
}

/* Largest eigenvalue of the symmetric matrix A (dsyevr, one eigenvalue). */
static int top_eigenvalue(ml_mmc_spg *s, const double *A, double *top) {
    ptrdiff_t p = s->p;
    int st = symmetric_part(A, s->S, p);
    if (st != ML_OK) return st;
    char jobz = 'N', range = 'I', uplo = 'L';
    int n = (int)p, lda = (int)p, ldz = 1, il = n, iu = n, found = 0, info = 0;
    double vl = 0.0, vu = 0.0, abstol = 0.0, z = 0.0;
    int *isuppz = s->iwork + s->liwork;
    s->pb.dsyevr(&jobz, &range, &uplo, &n, s->S, &lda, &vl, &vu, &il, &iu, &abstol,
                 &found, s->lam2, &z, &ldz, isuppz, s->work, &s->lwork, s->iwork,
                 &s->liwork, &info);
    if (info == 0 && found == 1) {
        *top = s->lam2[0];
        return ML_OK;
    }
    st = eigh_sym(s, A, s->lam2, s->V2);
    if (st == ML_OK) *top = s->lam2[p - 1];
    return st;
}

/* F (p x r, row-major) with F F^T = sum over kept j of lam_j v_j v_j^T;
 * lam ascending (as eigh_sym and the capped-simplex projection leave it),
 * columns by decreasing eigenvalue, kept: lam_j > rtol * top, at least one
 * (mmc.py's psd_factor). Returns r. */
static ptrdiff_t psd_factor(const double *lam, const double *Vr, ptrdiff_t p, double rtol,
                            double *F) {
    double top = lam[p - 1] > 0.0 ? lam[p - 1] : 0.0;
    ptrdiff_t r = 0;
    if (top > 0.0)
        while (r < p && lam[p - 1 - r] > rtol * top) ++r;
    if (r == 0) r = 1;
    for (ptrdiff_t c = 0; c < r; ++c) {
        ptrdiff_t j = p - 1 - c;
        double sq = lam[j] > 0.0 ? sqrt(lam[j]) : 0.0;
        const double *v = Vr + j * p;
        for (ptrdiff_t i = 0; i < p; ++i) F[i * r + c] = v[i] * sq;
    }
    return r;
}

/* Projection of ascending lam onto {x >= 0, sum x <= 1} (Duchi et al. 2008). */
static void project_capped_simplex(const double *lam, double *out, ptrdiff_t p) {
    double pos = 0.0;
    for (ptrdiff_t j = 0; j < p; ++j) pos += lam[j] > 0.0 ? lam[j] : 0.0;
    if (pos <= 1.0) {
        for (ptrdiff_t j = 0; j < p; ++j) out[j] = lam[j] > 0.0 ? lam[j] : 0.0;
        return;
    }
    double css = -1.0, tau = 0.0;
    for (ptrdiff_t k = 0; k < p; ++k) {        /* descending: lam[p - 1 - k] */
        double u = lam[p - 1 - k];
        css += u;
        if (u - css / (double)(k + 1) > 0.0) tau = css / (double)(k + 1);
    }
    for (ptrdiff_t j = 0; j < p; ++j) out[j] = lam[j] - tau > 0.0 ? lam[j] - tau : 0.0;
}

/* ---- the pair sums in the problem's form --------------------------------- */

static int eval_factor(ml_mmc_spg *s, const double *Lt, ptrdiff_t r, double *h, double *G,
                       double *Gz, double *nz) {
    const ml_mmc_problem *pb = &s->pb;
    ptrdiff_t n = pb->n, p = pb->p, pp = p * p;
    int st;
    s->n_eval += 1;
    if (pb->form == ML_MMC_CALLBACK) {
        memset(Gz, 0, (size_t)pp * sizeof(double));
        *nz = 0.0;
        st = pb->eval(pb->eval_ctx, Lt, p, r, h, G);
        if (st == ML_OK && !isfinite(*h)) st = ML_ERR_NUMERIC;
        return st;
    }
    if (pb->form == ML_MMC_DIRECT)
        return ml_pairs_full(pb->E, n, p, pb->pairs, pb->m, Lt, r, h, G, NULL, Gz, nz,
                             pb->dgemm, pb->dsyrk, pb->n_threads);
    gemm_rm(pb->dgemm, pb->E, Lt, s->Y, n, p, r);               /* Y = E Lt */
    if (pb->form == ML_MMC_LAPLACIAN) {
        double h1 = 0.0, h2 = 0.0, nz1 = 0.0, nz2 = 0.0;
        st = ml_pairs_laplacian(pb->E, s->Y, n, p, r, pb->pairs, pb->m, &h1, NULL,
                                s->wdeg, s->T, Gz, &nz1);
        if (st != ML_OK) return st;
        st = ml_pairs_full(pb->E, n, p, pb->close, pb->m_close, Lt, r, &h2, s->G2, NULL,
                           s->Gz2, &nz2, pb->dgemm, pb->dsyrk, pb->n_threads);
        if (st != ML_OK) return st;
        /* G = E^T diag(wdeg) E - E^T T, symmetrized, plus the close pairs' sum */
        for (ptrdiff_t i = 0; i < n; ++i)
            for (ptrdiff_t t = 0; t < p; ++t) s->EW[i * p + t] = pb->E[i * p + t] * s->wdeg[i];
        char nc = 'N', tc = 'T';
        int pi = (int)p, ni = (int)n;
        double one = 1.0, mone = -1.0, zero = 0.0;
        pb->dgemm(&nc, &tc, &pi, &pi, &ni, &one, s->EW, &pi, (double *)pb->E, &pi, &zero,
                  s->S, &pi);
        pb->dgemm(&nc, &tc, &pi, &pi, &ni, &mone, (double *)pb->E, &pi, s->T, &pi, &one,
                  s->S, &pi);
        for (ptrdiff_t a = 0; a < p; ++a)
            for (ptrdiff_t b = 0; b < p; ++b)
                G[a * p + b] = 0.5 * (s->S[a * p + b] + s->S[b * p + a]) + s->G2[a * p + b];
        for (ptrdiff_t t = 0; t < pp; ++t) Gz[t] += s->Gz2[t];
        *h = h1 + h2;
        *nz = nz1 + nz2;
        return ML_OK;
    }
    /* ALLPAIRS: all pairs i < j, minus S's own terms */
    double h1 = 0.0, hs = 0.0;
    if (n >= 2) {
        st = ml_allpairs_full(pb->E, s->Y, n, p, r, &h1, G, pb->dgemm, pb->dsyrk,
                              pb->n_threads);
        if (st != ML_OK) return st;
    } else {
        memset(G, 0, (size_t)pp * sizeof(double));
    }
    st = ml_pairs_full(pb->E, n, p, pb->pairs, pb->m, Lt, r, &hs, s->G2, NULL, NULL, NULL,
                       pb->dgemm, pb->dsyrk, pb->n_threads);
    if (st != ML_OK) return st;
    for (ptrdiff_t t = 0; t < pp; ++t) G[t] -= s->G2[t];
    memset(Gz, 0, (size_t)pp * sizeof(double));
    *h = h1 - hs;
    *nz = 0.0;
    return ML_OK;
}

int ml_mmc_spg_evaluate(ml_mmc_spg *s, const double *B, double *h, double *G,
                        double *G_zero, double *n_zero) {
    int st = eigh_sym(s, B, s->lam2, s->V2);
    if (st != ML_OK) return st;
    ptrdiff_t r = psd_factor(s->lam2, s->V2, s->p, 1e-13, s->Lt);
    return eval_factor(s, s->Lt, r, h, G, G_zero, n_zero);
}

/* ---- life cycle and state ------------------------------------------------ */

void ml_mmc_spg_free(ml_mmc_spg *s) {
    if (!s) return;
    double *bufs[] = {s->B, s->G, s->Gz, s->best_B, s->best_G, s->hist, s->log,
                      s->S, s->lam, s->V, s->F, s->Lt, s->P, s->dir, s->Bn, s->Gn, s->Gzn,
                      s->lam2, s->V2, s->G2, s->Gz2, s->work, s->Y, s->T, s->wdeg, s->EW};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; ++k) free(bufs[k]);
    free(s->iwork);
    free(s);
}

ml_mmc_spg *ml_mmc_spg_new(const ml_mmc_problem *pb, const ml_mmc_settings *set) {
    ptrdiff_t p = pb->p, n = pb->n;
    /* LAPACK takes int sizes: 2 p^2 + 6 p + 1 must fit */
    if (p <= 0 || p > 20000 || n < 0 || pb->m < 0 || set->max_iter < 1 || set->memory < 1
        || set->window < 1 || pb->form < ML_MMC_DIRECT || pb->form > ML_MMC_CALLBACK
        || (pb->form == ML_MMC_CALLBACK && !pb->eval)
        || !pb->dgemm || !pb->dsyrk || !pb->dsyevd || !pb->dsyevr)
        return NULL;
    if (pb->form == ML_MMC_LAPLACIAN && pb->m_close < 0) return NULL;
    ml_mmc_spg *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->pb = *pb;
    s->set = *set;
    s->p = p;
    size_t pp = (size_t)(p * p), sz = sizeof(double);
    s->ring_len = (set->window > set->memory ? set->window : set->memory) + 1;
    s->log_cap = set->verbose ? 1024 : 0;
    eigh_workspace(p, &s->lwork, &s->liwork);
    double **mats[] = {&s->B, &s->G, &s->Gz, &s->best_B, &s->best_G, &s->S, &s->V, &s->F,
                       &s->Lt, &s->P, &s->dir, &s->Bn, &s->Gn, &s->Gzn, &s->V2, &s->G2,
                       &s->Gz2};
    int ok = 1;
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; ++k)
        ok &= (*mats[k] = calloc(pp, sz)) != NULL;
    ok &= (s->lam = calloc((size_t)p, sz)) != NULL;
    ok &= (s->lam2 = calloc((size_t)p, sz)) != NULL;
    ok &= (s->hist = calloc((size_t)s->ring_len, sz)) != NULL;
    ok &= (s->log = calloc((size_t)(3 * s->log_cap + 1), sz)) != NULL;
    ok &= (s->work = calloc((size_t)s->lwork, sz)) != NULL;
    ok &= (s->iwork = calloc((size_t)(s->liwork + 2 * p), sizeof(int))) != NULL;
    if (ok && pb->form != ML_MMC_DIRECT && pb->form != ML_MMC_CALLBACK) {
        size_t np = (size_t)(n * p) + 1;
        ok &= (s->Y = calloc(np, sz)) != NULL;
        ok &= (s->T = calloc(np, sz)) != NULL;
        ok &= (s->EW = calloc(np, sz)) != NULL;
        ok &= (s->wdeg = calloc((size_t)n + 1, sz)) != NULL;
    }
    if (!ok) {
        ml_mmc_spg_free(s);
        return NULL;
    }
    s->upper = INFINITY;
    s->gap = INFINITY;
    return s;
}

/* Append h to the history (ring + running maxima). */
static void history_push(ml_mmc_spg *s, double h) {
    ptrdiff_t k = s->n_hist, window = s->set.window;
    if (k >= window) {        /* entry k - window leaves the window (still in the ring) */
        double out = s->hist[(k - window) % s->ring_len];
        if (k == window || out > s->hist_max_old) s->hist_max_old = out;
    }
    s->hist[k % s->ring_len] = h;
    if (k == 0 || h > s->hist_max) s->hist_max = h;
    s->n_hist = k + 1;
}

static double inv_frob(const double *G, ptrdiff_t len) {
    double nrm = sqrt(frob_dot(G, G, len));
    return nrm > 0.0 ? 1.0 / nrm : 1.0 / 2.2250738585072014e-308;
}

int ml_mmc_spg_set_point(ml_mmc_spg *s, const double *B, double h, const double *G,
                         const double *G_zero, double n_zero, int reset) {
    size_t bytes = (size_t)(s->p * s->p) * sizeof(double);
    memcpy(s->B, B, bytes);
    memcpy(s->G, G, bytes);
    memcpy(s->Gz, G_zero, bytes);
    s->h = h;
    s->nz = n_zero;
    s->step = inv_frob(G, s->p * s->p);
    s->resume_projection = 0;
    if (reset) {
        s->n_hist = 0;
        s->upper = INFINITY;
        s->next_face = s->it + 3;
    }
    history_push(s, h);
    if (reset || s->n_hist == 1 || h > s->best_h) {
        s->best_h = h;
        memcpy(s->best_B, B, bytes);
        memcpy(s->best_G, G, bytes);
    }
    return ML_OK;
}

void ml_mmc_spg_get_info(const ml_mmc_spg *s, ml_mmc_spg_info *info) {
    info->it = s->it;
    info->n_iter = s->n_iter;
    info->next_face = s->next_face;
    info->h = s->h;
    info->n_zero = s->nz;
    info->best_h = s->best_h;
    info->upper = s->upper;
    info->gap = s->gap;
    info->n_log = s->n_log;
    info->n_eval = s->n_eval;
}

void ml_mmc_spg_set_counters(ml_mmc_spg *s, ptrdiff_t it, ptrdiff_t next_face, double upper) {
    s->it = it;
    s->next_face = next_face;
    s->upper = upper;
}

const double *ml_mmc_spg_current(const ml_mmc_spg *s, int which) {
    switch (which) {
    case 0: return s->B;
    case 1: return s->G;
    case 2: return s->Gz;
    case 3: return s->best_B;
    default: return s->best_G;
    }
}

const double *ml_mmc_spg_log(const ml_mmc_spg *s) { return s->log; }

void ml_mmc_spg_clear_log(ml_mmc_spg *s) { s->n_log = 0; }

/* ---- the iteration --------------------------------------------------------- */

/* The iteration's bound: s->it advances, the upper bound from G's top
 * eigenvalue (weak duality), the relative gap and, when verbose, the log. */
static int spg_bound(ml_mmc_spg *s) {
    s->it += 1;
    double top;
    int st = top_eigenvalue(s, s->G, &top);              /* weak duality */
    if (st != ML_OK) return st;
    if (top + 0.5 * s->h < s->upper) s->upper = top + 0.5 * s->h;
    double gap = s->best_h > 0.0 ? (s->upper - s->best_h) / s->best_h : INFINITY;
    s->gap = gap;
    if (s->n_log < s->log_cap) {
        double *e = s->log + 3 * s->n_log++;
        e[0] = (double)s->it;
        e[1] = s->h;
        e[2] = gap;
    }
    return ML_OK;
}

/* The stopping rules and the face schedule after spg_bound: 1 with *event
 * set (return it to the caller), 0 to go on to the projection. */
static int spg_event(ml_mmc_spg *s, int *event) {
    const ml_mmc_settings *set = &s->set;
    double gap = s->gap;
    if (gap <= set->tol) {
        s->n_iter = s->it - 1;
        *event = ML_MMC_CONVERGED;
        return 1;
    }
    /* objective-change rule (mmc.py): near the bound, J flat over the window */
    if (gap <= set->stall_gap * set->tol && s->n_hist > set->window) {
        double all = s->hist_max, old = s->hist_max_old;
        if (all - old <= 0.1 * set->tol * all) {
            s->n_iter = s->it - 1;
            *event = ML_MMC_CONVERGED;
            return 1;
        }
    }
    /* the face solve (mmc.py's _face_solve): on the caller's schedule */
    if (set->newton_ok && gap < set->face_gap && s->it >= s->next_face) {
        s->resume_projection = 1;
        *event = ML_MMC_FACE;
        return 1;
    }
    return 0;
}

/* Projection of the gradient step onto {B >= 0, tr B <= 1}: P, its factor F
 * (psd_factor, *r0 columns), the projected eigenvalues in lam, dir = P - B. */
static int spg_project(ml_mmc_spg *s, ptrdiff_t *r0) {
    ptrdiff_t p = s->p, pp = p * p;
    for (ptrdiff_t t = 0; t < pp; ++t) s->P[t] = s->B[t] + s->step * s->G[t];
    int st = eigh_sym(s, s->P, s->lam, s->V);
    if (st != ML_OK) return st;
    project_capped_simplex(s->lam, s->lam, p);
    *r0 = psd_factor(s->lam, s->V, p, 0.0, s->F);
    {   /* P = F F^T */
        char tc = 'T', nc = 'N';
        int pi = (int)p, ri = (int)*r0;
        double one = 1.0, zero = 0.0;
        s->pb.dgemm(&tc, &nc, &pi, &pi, &ri, &one, s->F, &ri, s->F, &ri, &zero, s->P, &pi);
    }
    for (ptrdiff_t t = 0; t < pp; ++t) s->dir[t] = s->P[t] - s->B[t];
    return ML_OK;
}

/* The non-monotone reference: the least h of the last `memory` iterations. */
static double spg_reference(const ml_mmc_spg *s) {
    ptrdiff_t first = s->n_hist > s->set.memory ? s->n_hist - s->set.memory : 0;
    double ref = s->hist[first % s->ring_len];
    for (ptrdiff_t k = first + 1; k < s->n_hist; ++k)
        ref = s->hist[k % s->ring_len] < ref ? s->hist[k % s->ring_len] : ref;
    return ref;
}

/* The trial point B + t (P - B) into Bn and its factor into Lt (*r columns). */
static int spg_trial(ml_mmc_spg *s, double t, ptrdiff_t r0, ptrdiff_t *r) {
    ptrdiff_t p = s->p, pp = p * p;
    if (t == 1.0) {
        memcpy(s->Bn, s->P, (size_t)pp * sizeof(double));
        /* the factor of P without its eigenvalues below 1e-13 of the top */
        double top = s->lam[p - 1];
        *r = 0;
        while (*r < r0 && s->lam[p - 1 - *r] > 1e-13 * top) ++*r;
        if (*r == 0) *r = 1;
        for (ptrdiff_t i = 0; i < p; ++i)
            for (ptrdiff_t c = 0; c < *r; ++c) s->Lt[i * *r + c] = s->F[i * r0 + c];
        return ML_OK;
    }
    for (ptrdiff_t k = 0; k < pp; ++k) s->Bn[k] = s->B[k] + t * s->dir[k];
    int st = eigh_sym(s, s->Bn, s->lam2, s->V2);
    if (st != ML_OK) return st;
    *r = psd_factor(s->lam2, s->V2, p, 1e-13, s->Lt);
    return ML_OK;
}

/* Non-monotone Armijo search along B + t (P - B): the accepted *t, its h
 * (*hn) and nz (*nzn); Bn, Gn and Gzn hold the point. */
static int spg_search(ml_mmc_spg *s, ptrdiff_t r0, double slope, double ref, double *t,
                      double *hn, double *nzn) {
    for (;;) {
        ptrdiff_t r;
        int st = spg_trial(s, *t, r0, &r);
        if (st != ML_OK) return st;
        st = eval_factor(s, s->Lt, r, hn, s->Gn, s->Gzn, nzn);
        if (st != ML_OK) return st;
        if (*hn >= ref + 1e-4 * *t * slope || *t < 1e-12) return ML_OK;
        *t *= 0.5;
    }
}

/* Barzilai-Borwein step; h is concave, so the curvature is >= 0 */
static void spg_bb_step(ml_mmc_spg *s) {
    ptrdiff_t pp = s->p * s->p;
    double ss = 0.0, sy = 0.0;
    for (ptrdiff_t k = 0; k < pp; ++k) {
        double sk = s->Bn[k] - s->B[k];
        ss += sk * sk;
        sy += sk * (s->Gn[k] - s->G[k]);
    }
    double curvature = -sy;
    s->step = curvature > 0.0 ? ss / curvature : 10.0 * s->step;
    double ig = inv_frob(s->Gn, pp);
    if (s->step < 1e-12 * ig) s->step = 1e-12 * ig;
    if (s->step > 1e12 * ig) s->step = 1e12 * ig;
}

/* The trial point becomes the current one; the history and the best follow. */
static void spg_accept(ml_mmc_spg *s, double hn, double nzn) {
    ptrdiff_t pp = s->p * s->p;
    double *tmp;
    tmp = s->B; s->B = s->Bn; s->Bn = tmp;
    tmp = s->G; s->G = s->Gn; s->Gn = tmp;
    tmp = s->Gz; s->Gz = s->Gzn; s->Gzn = tmp;
    s->h = hn;
    s->nz = nzn;
    history_push(s, hn);
    if (hn > s->best_h) {
        s->best_h = hn;
        memcpy(s->best_B, s->B, (size_t)pp * sizeof(double));
        memcpy(s->best_G, s->G, (size_t)pp * sizeof(double));
    }
}

int ml_mmc_spg_run(ml_mmc_spg *s, int *event) {
    const ml_mmc_settings *set = &s->set;
    int st;
    while (s->it < set->max_iter) {
        if (ml_interrupted()) return ML_ERR_INTERRUPTED;
        if (!s->resume_projection && s->log_cap > 0 && s->n_log >= s->log_cap) {
            *event = ML_MMC_LOG_FULL;     /* the caller prints the log and clears it */
            return ML_OK;
        }
        if (!s->resume_projection) {
            if (s->nz > 0.0) {          /* the bound and the step need G_zero: caller */
                *event = ML_MMC_NONSMOOTH;
                return ML_OK;
            }
            st = spg_bound(s);
            if (st != ML_OK) return st;
            if (spg_event(s, event)) return ML_OK;
        }
        s->resume_projection = 0;
        ptrdiff_t r0;
        st = spg_project(s, &r0);
        if (st != ML_OK) return st;
        double slope = frob_dot(s->G, s->dir, s->p * s->p);
        if (!(slope > 1e-15 * s->h)) {     /* no ascent direction left at machine precision */
            s->n_iter = s->it;
            *event = ML_MMC_CONVERGED;
            return ML_OK;
        }
        double t = 1.0, hn = 0.0, nzn = 0.0;
        st = spg_search(s, r0, slope, spg_reference(s), &t, &hn, &nzn);
        if (st != ML_OK) return st;
        spg_bb_step(s);
        if (hn - s->h <= 1e-15 * fabs(s->h) && t < 1e-12) {
            s->n_iter = s->it;        /* stalled: the search found no increase */
            *event = ML_MMC_STALLED;
            return ML_OK;
        }
        spg_accept(s, hn, nzn);
    }
    s->n_iter = set->max_iter;
    *event = ML_MMC_MAX_ITER;
    return ML_OK;
}

/* ---- face Newton sums -------------------------------------------------------- */

/* H += Z^T Z over the `rows` rows of Z (row-major, `cols` entries each): one
 * dsyrk; 'U' column-major is the lower triangle row-major. */
static void add_row_products(ml_dsyrk_fn dsyrk, double *H, double *Z, ptrdiff_t cols,
                             ptrdiff_t rows) {
    char uplo = 'U', trans = 'N';
    int ni = (int)cols, ki = (int)rows;
    double one = 1.0;
    dsyrk(&uplo, &trans, &ni, &ki, &one, Z, &ni, &one, H, &ni);
}

/* Fixed blocks of ML_FACE_BLOCK pairs (one block when m = 0): their number,
 * and the end of the block that starts at `start`. */
static ptrdiff_t face_n_blocks(ptrdiff_t m) {
    return m > 0 ? (m + ML_FACE_BLOCK - 1) / ML_FACE_BLOCK : 1;
}

static ptrdiff_t face_block_end(ptrdiff_t start, ptrdiff_t m) {
    return start + ML_FACE_BLOCK < m ? start + ML_FACE_BLOCK : m;
}

/* The lower triangle of the n x n row-major H copied into its upper one. */
static void mirror_lower(double *H, ptrdiff_t n) {
    for (ptrdiff_t a = 0; a < n; ++a)
        for (ptrdiff_t b = a + 1; b < n; ++b) H[a * n + b] = H[b * n + a];
}

/* (a, b) of the upper triangle in numpy's triu_indices order, and the
 * positions of the free entries (all without free_mask); returns their number. */
static ptrdiff_t face_triu_tables(ptrdiff_t r, const unsigned char *free_mask, ptrdiff_t *idx_a,
                                  ptrdiff_t *idx_b, ptrdiff_t *freepos) {
    ptrdiff_t nf = 0;
    for (ptrdiff_t a = 0, l = 0; a < r; ++a)   /* numpy's triu_indices order */
        for (ptrdiff_t b = a; b < r; ++b, ++l) {
            idx_a[l] = a;
            idx_b[l] = b;
            if (!free_mask || free_mask[l]) freepos[nf++] = l;
        }
    return nf;
}

/* What the blocks of ml_mmc_face_sums share (read only). */
typedef struct {
    const double *F, *C;
    ptrdiff_t m, r, s_len, nf;
    const ptrdiff_t *idx_a, *idx_b, *freepos;
    ml_dsyrk_fn dsyrk;
} face_sums_args;

/* Block b of ml_mmc_face_sums: h into acc[0], gh into gacc and H into Hacc
 * (each NULL when not wanted); Zc holds ML_FACE_CHUNK rows of z_F. */
static void face_sums_block(const face_sums_args *A, ptrdiff_t b, double *acc, double *gacc,
                            double *Hacc, double *Zc) {
    const ptrdiff_t r = A->r, s_len = A->s_len, nf = A->nf;
    const ptrdiff_t *idx_a = A->idx_a, *idx_b = A->idx_b;
    const double sqrt2 = sqrt(2.0);
    ptrdiff_t start = b * ML_FACE_BLOCK, end = face_block_end(start, A->m), filled = 0;
    for (ptrdiff_t k = start; k < end; ++k) {
        const double *f = A->F + k * r;
        double q = 0.0;
        for (ptrdiff_t a = 0; a < r; ++a) {
            double ca = 0.0;
            for (ptrdiff_t c = 0; c < r; ++c) ca += A->C[a * r + c] * f[c];
            q += f[a] * ca;
        }
        double d = q > 0.0 ? sqrt(q) : 0.0;
        acc[0] += d;
        if (!gacc || !(d > 0.0)) continue;
        double w = 0.5 / d;
        for (ptrdiff_t l = 0; l < s_len; ++l) {
            double z = f[idx_a[l]] * f[idx_b[l]] * (idx_a[l] == idx_b[l] ? 1.0 : sqrt2);
            gacc[l] += w * z;
        }
        if (Hacc && nf > 0) {   /* row z_F sqrt(2 w^3), then Z^T Z by dsyrk */
            double sw = sqrt(2.0 * w * w * w);
            double *zr = Zc + filled * nf;
            for (ptrdiff_t u = 0; u < nf; ++u) {
                ptrdiff_t l = A->freepos[u];
                zr[u] = sw * f[idx_a[l]] * f[idx_b[l]]
                        * (idx_a[l] == idx_b[l] ? 1.0 : sqrt2);
            }
            if (++filled == ML_FACE_CHUNK) {
                add_row_products(A->dsyrk, Hacc, Zc, nf, filled);
                filled = 0;
            }
        }
    }
    if (Hacc && filled > 0) add_row_products(A->dsyrk, Hacc, Zc, nf, filled);
}

/* The partials of ml_mmc_face_sums summed in block order into *h, gh and H. */
static int face_sums_reduce(const double *parts, size_t part, ptrdiff_t nb, ptrdiff_t s_len,
                            ptrdiff_t nf, double *h, double *gh, double *H) {
    double hs = 0.0;
    if (gh) memset(gh, 0, (size_t)s_len * sizeof(double));
    if (H) memset(H, 0, (size_t)(nf * nf) * sizeof(double));
    for (ptrdiff_t b = 0; b < nb; ++b) {   /* partials in block order */
        const double *acc = parts + (size_t)b * part;
        hs += acc[0];
        if (gh)
            for (ptrdiff_t l = 0; l < s_len; ++l) gh[l] += acc[1 + l];
        if (H)
            for (ptrdiff_t t = 0; t < nf * nf; ++t) H[t] += acc[1 + s_len + t];
    }
    if (H) mirror_lower(H, nf);   /* dsyrk 'U' column-major = lower triangle row-major */
    *h = hs;
    return isfinite(hs) ? ML_OK : ML_ERR_NUMERIC;
}

int ml_mmc_face_sums(const double *F, ptrdiff_t m, ptrdiff_t r, const double *C,
                     const unsigned char *free_mask, double *h, double *gh, double *H,
                     ml_dsyrk_fn dsyrk, int n_threads) {
    if (m < 0 || r <= 0 || r > 4096 || (H && !gh)) return ML_ERR_ARG;
    ptrdiff_t s_len = r * (r + 1) / 2;
    ptrdiff_t *idx_a = malloc((size_t)s_len * sizeof(ptrdiff_t));
    ptrdiff_t *idx_b = malloc((size_t)s_len * sizeof(ptrdiff_t));
    ptrdiff_t *freepos = malloc((size_t)s_len * sizeof(ptrdiff_t));
    if (!idx_a || !idx_b || !freepos) {
        free(idx_a); free(idx_b); free(freepos);
        return ML_ERR_ALLOC;
    }
    ptrdiff_t nf = face_triu_tables(r, free_mask, idx_a, idx_b, freepos);
    ptrdiff_t nb = face_n_blocks(m);
    size_t part = (size_t)(1 + (gh ? s_len : 0) + (H ? nf * nf : 0));
    double *parts = calloc((size_t)nb * part, sizeof(double));
    if (!parts) {
        free(idx_a); free(idx_b); free(freepos);
        return ML_ERR_ALLOC;
    }
    int status = ML_OK;
    const double work = (double)m * (double)(r * r + (gh ? s_len : 0) + (H ? nf * nf : 0));
    const face_sums_args args = {F, C, m, r, s_len, nf, idx_a, idx_b, freepos, dsyrk};
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *Zc = H ? malloc((size_t)(ML_FACE_CHUNK * (nf > 0 ? nf : 1)) * sizeof(double)) : NULL;
        if (H && !Zc) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b) {
            if ((H && !Zc) || ml_interrupted()) continue;
            double *acc = parts + (size_t)b * part;
            face_sums_block(&args, b, acc, gh ? acc + 1 : NULL, H ? acc + 1 + s_len : NULL, Zc);
        }
        free(Zc);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) status = face_sums_reduce(parts, part, nb, s_len, nf, h, gh, H);
    free(parts);
    free(idx_a);
    free(idx_b);
    free(freepos);
    return status;
}

/* ---- face Newton, factored ----------------------------------------------------- */

/* Block b of face_factored_sums into acc (h, gM, Gf, Hz's lower triangle);
 * Zc holds ML_FACE_CHUNK rows of z and then y (r entries). */
static void face_factored_block(const double *F, ptrdiff_t m, ptrdiff_t r, const double *s,
                                ptrdiff_t b, double *acc, double *Zc, ml_dsyrk_fn dsyrk) {
    const ptrdiff_t sl = r * (r + 1) / 2, rr = r * r;
    double *gacc = acc + 1, *Gacc = gacc + rr, *Hacc = Gacc + rr;
    double *y = Zc + ML_FACE_CHUNK * sl;
    ptrdiff_t start = b * ML_FACE_BLOCK, end = face_block_end(start, m), filled = 0;
    for (ptrdiff_t k = start; k < end; ++k) {
        const double *f = F + k * r;
        double q = 0.0;
        for (ptrdiff_t a = 0; a < r; ++a) {
            y[a] = s[a] * f[a];
            q += y[a] * y[a];
        }
        if (!(q > 0.0)) continue;
        double d = sqrt(q), w = 1.0 / d, w3 = sqrt(w * w * w);
        acc[0] += d;
        double *zr = Zc + filled * sl;
        for (ptrdiff_t a = 0, u = 0; a < r; ++a) {
            double fa = f[a] * w;
            for (ptrdiff_t c = 0; c <= a; ++c, ++u) {
                gacc[a * r + c] += fa * y[c];
                Gacc[a * r + c] += fa * f[c];
                zr[u] = f[a] * y[c] * w3;
            }
        }
        if (++filled == ML_FACE_CHUNK) {
            add_row_products(dsyrk, Hacc, Zc, sl, filled);
            filled = 0;
        }
    }
    if (filled > 0) add_row_products(dsyrk, Hacc, Zc, sl, filled);
}

/* The partials of face_factored_sums summed in block order. */
static int face_factored_reduce(const double *parts, size_t part, ptrdiff_t nb, ptrdiff_t r,
                                double *h, double *gM, double *Gf, double *Hz) {
    const ptrdiff_t sl = r * (r + 1) / 2, rr = r * r;
    double hs = 0.0;
    memset(gM, 0, (size_t)rr * sizeof(double));
    memset(Gf, 0, (size_t)rr * sizeof(double));
    memset(Hz, 0, (size_t)(sl * sl) * sizeof(double));
    for (ptrdiff_t b = 0; b < nb; ++b) {   /* partials in block order */
        const double *acc = parts + (size_t)b * part;
        hs += acc[0];
        for (ptrdiff_t t = 0; t < rr; ++t) {
            gM[t] += acc[1 + t];
            Gf[t] += acc[1 + rr + t];
        }
        for (ptrdiff_t t = 0; t < sl * sl; ++t) Hz[t] += acc[1 + 2 * rr + t];
    }
    mirror_lower(Hz, sl);   /* dsyrk 'U' column-major = lower triangle row-major */
    *h = hs;
    return isfinite(hs) ? ML_OK : ML_ERR_NUMERIC;
}

/* Sums of the factored face problem at M = diag(s) (C = M M^T in its eigenbasis,
 * F = the pairs in that basis, m x r). With y_k = s o f_k, d_k = ||y_k||, over
 * d_k > 0: *h = sum d_k; gM (r x r, row-major, lower triangle) = sum f_k y_k^T / d_k
 * (dh/dM); Gf (r x r, lower) = sum f_k f_k^T / d_k; Hz (sl x sl, lower) =
 * sum z_k z_k^T with z_k[u] = f_a y_b / d_k^{3/2} over u = (a, b), a >= b (the
 * lower triangle in row order). Fixed blocks, partials summed in block order. */
static int face_factored_sums(const double *F, ptrdiff_t m, ptrdiff_t r, const double *s,
                              double *h, double *gM, double *Gf, double *Hz,
                              ml_dsyrk_fn dsyrk, int n_threads) {
    const ptrdiff_t sl = r * (r + 1) / 2, rr = r * r;
    ptrdiff_t nb = face_n_blocks(m);
    size_t part = (size_t)(1 + 2 * rr + sl * sl);
    double *parts = calloc((size_t)nb * part, sizeof(double));
    if (!parts) return ML_ERR_ALLOC;
    int status = ML_OK;
    const double work = (double)m * (double)(sl * sl + 2 * rr);
    #pragma omp parallel if(nb > 1 && work > ML_MIN_PARALLEL_WORK) num_threads(ml_threads(n_threads))
    {
        double *Zc = malloc((size_t)(ML_FACE_CHUNK * sl + r) * sizeof(double));
        if (!Zc) {
            #pragma omp atomic write
            status = ML_ERR_ALLOC;
        }
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t b = 0; b < nb; ++b) {
            if (!Zc || ml_interrupted()) continue;
            face_factored_block(F, m, r, s, b, parts + (size_t)b * part, Zc, dsyrk);
        }
        free(Zc);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    if (status == ML_OK) status = face_factored_reduce(parts, part, nb, r, h, gM, Gf, Hz);
    free(parts);
    return status;
}

/* (ia[u], ib[u]) over the lower triangle of an r x r matrix, in row order. */
static void lower_tables(ptrdiff_t r, ptrdiff_t *ia, ptrdiff_t *ib) {
    for (ptrdiff_t a = 0, u = 0; a < r; ++a)        /* lower triangle, row order */
        for (ptrdiff_t c = 0; c <= a; ++c, ++u) {
            ia[u] = a;
            ib[u] = c;
        }
}

/* eigenvalues descending: reorder the start (mu, Q's columns) */
static void sort_descending(double *mu, double *Q, ptrdiff_t r) {
    for (ptrdiff_t a = 0; a < r; ++a) {
        ptrdiff_t big = a;
        for (ptrdiff_t c = a + 1; c < r; ++c)
            if (mu[c] > mu[big]) big = c;
        if (big != a) {
            double t = mu[a]; mu[a] = mu[big]; mu[big] = t;
            for (ptrdiff_t i = 0; i < r; ++i) {
                t = Q[i * r + a]; Q[i * r + a] = Q[i * r + big]; Q[i * r + big] = t;
            }
        }
    }
}

/* g = ||M||^2 - log h at M = diag(s): gradient (grad; gvec = dh/dM's entries)
 * and Hessian (hess, sl x sl) in the lower-triangle entries. */
static void face_newton_model(ptrdiff_t r, double h, const double *s, const double *gM,
                              const double *Gf, const double *Hz, const ptrdiff_t *ia,
                              const ptrdiff_t *ib, double *gvec, double *grad, double *hess) {
    const ptrdiff_t sl = r * (r + 1) / 2;
    for (ptrdiff_t u = 0; u < sl; ++u) {
        gvec[u] = gM[ia[u] * r + ib[u]];
        grad[u] = (ia[u] == ib[u] ? 2.0 * s[ia[u]] : 0.0) - gvec[u] / h;
    }
    for (ptrdiff_t u = 0; u < sl; ++u)
        for (ptrdiff_t v = 0; v <= u; ++v) {
            double hh = (ib[u] == ib[v] ? Gf[ia[u] * r + ia[v]] : 0.0) - Hz[u * sl + v];
            /* Gf is stored in its lower triangle: ia[u] >= ia[v] as u >= v */
            double val = (u == v ? 2.0 : 0.0) - hh / h + gvec[u] * gvec[v] / (h * h);
            hess[u * sl + v] = val;
            hess[v * sl + u] = val;
        }
}

/* The step dx = -U |L|^-1 U^T grad from the Hessian's eigenpairs (lamH, UH's
 * rows), |L| floored at 1e-10 of the largest; returns the decrement. */
static double face_newton_step(ptrdiff_t sl, const double *lamH, const double *UH,
                               const double *grad, double *coef, double *dx) {
    double amax = 0.0;
    for (ptrdiff_t j = 0; j < sl; ++j) amax = fabs(lamH[j]) > amax ? fabs(lamH[j]) : amax;
    double floor_ = 1e-10 * (amax > 0.0 ? amax : 1.0);
    double dec = 0.0;
    for (ptrdiff_t j = 0; j < sl; ++j) {
        double q = 0.0;
        for (ptrdiff_t u = 0; u < sl; ++u) q += UH[j * sl + u] * grad[u];
        double l = fabs(lamH[j]) > floor_ ? fabs(lamH[j]) : floor_;
        coef[j] = q / l;
        dec += q * q / l;
    }
    for (ptrdiff_t u = 0; u < sl; ++u) {
        double v = 0.0;
        for (ptrdiff_t j = 0; j < sl; ++j) v += UH[j * sl + u] * coef[j];
        dx[u] = -v;
    }
    return dec;
}

/* Cn = Mt Mt^T with Mt = diag(s) + t dx (lower triangular); returns tr Cn. */
static double face_trial(ptrdiff_t r, double t, const double *s, const double *dx,
                         const ptrdiff_t *ia, const ptrdiff_t *ib, double *Mt, double *Cn) {
    const ptrdiff_t sl = r * (r + 1) / 2;
    memset(Mt, 0, (size_t)(r * r) * sizeof(double));
    for (ptrdiff_t a = 0; a < r; ++a) Mt[a * r + a] = s[a];
    for (ptrdiff_t u = 0; u < sl; ++u) Mt[ia[u] * r + ib[u]] += t * dx[u];
    double trn = 0.0;
    for (ptrdiff_t a = 0; a < r; ++a)       /* Cn = Mt Mt^T */
        for (ptrdiff_t c = 0; c <= a; ++c) {
            double v = 0.0;
            for (ptrdiff_t e = 0; e <= c; ++e) v += Mt[a * r + e] * Mt[c * r + e];
            Cn[a * r + c] = v;
            Cn[c * r + a] = v;
            if (a == c) trn += v;
        }
    return trn;
}

/* After eigh of Cn (mu_n ascending, Vn's rows its eigenvectors): mu <- mu_n
 * descending (clipped at 0), Q <- Q Vn in that order. */
static void face_rotate(ml_dgemm_fn dgemm, ptrdiff_t r, const double *mu_n, const double *Vn,
                        double *Qs, double *Qt, double *Q, double *mu) {
    for (ptrdiff_t j = 0; j < r; ++j) {           /* column j: eigenvector r - 1 - j */
        const double *v = Vn + (r - 1 - j) * r;
        for (ptrdiff_t i = 0; i < r; ++i) Qs[i * r + j] = v[i];
    }
    gemm_rm(dgemm, Q, Qs, Qt, r, r, r);
    memcpy(Q, Qt, (size_t)(r * r) * sizeof(double));
    for (ptrdiff_t j = 0; j < r; ++j) mu[j] = mu_n[r - 1 - j] > 0.0 ? mu_n[r - 1 - j] : 0.0;
}

/* Armijo backtracking along M + t dx from t = 1 (halving): leaves the trial
   point's C in Cn and its objective in *gn. */
static int face_armijo(const double *F, ptrdiff_t m, ptrdiff_t r, const double *s,
                       const double *dx, const ptrdiff_t *ia, const ptrdiff_t *ib,
                       double *Mt, double *Cn, double g0, double dec, double noise,
                       double *gn, ml_dsyrk_fn dsyrk, int n_threads) {
    for (double t = 1.0;; t *= 0.5) {
        double trn = face_trial(r, t, s, dx, ia, ib, Mt, Cn), hn = 0.0;
        int status = ml_mmc_face_sums(F, m, r, Cn, NULL, &hn, NULL, NULL, dsyrk, n_threads);
        if (status != ML_OK) return status;
        *gn = hn > 0.0 ? trn - log(hn) : INFINITY;
        if (*gn <= g0 - 1e-4 * t * dec + noise || t < 1e-10) return ML_OK;
    }
}

/* The Newton loop of mmc.py's _face_solve, on the factor of C. C = M M^T with M lower
 * triangular in C's current eigenbasis (eigenvalues descending), so that
 * g(M) = ||M||_F^2 - log h(M M^T) has no boundary: a tiny eigenvalue of C is the
 * square of a small entry of M instead of a constraint the step runs into. The
 * Hessian's negative eigenvalues are taken in absolute value (the step stays a
 * descent direction); Armijo backtracking; after each step C is
 * re-diagonalized (mu, Q) and the basis rotated. Every local minimum of the
 * factored problem is the face problem's global one (M square: where M is
 * invertible the map M -> M M^T is open), and the duality gap of the caller
 * decides convergence anyway. */
int ml_mmc_face_newton(const double *F0, ptrdiff_t m, ptrdiff_t r, double *mu, double *Q,
                       double tol, double decrement, int max_steps, int *steps_out,
                       ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, ml_dsyevd_fn dsyevd,
                       ml_dsyevr_fn dsyevr, int n_threads) {
    if (m < 0 || r <= 0 || r > 64 || max_steps < 0 || !dgemm || !dsyrk || !dsyevd || !dsyevr)
        return ML_ERR_ARG;
    const ptrdiff_t sl = r * (r + 1) / 2, rr = r * r;
    const double eps_mach = 2.220446049250313e-16;
    int lwork, liwork;
    eigh_workspace(sl, &lwork, &liwork);
    double *F = malloc((size_t)(m * r + 1) * sizeof(double));
    double *vecs = malloc((size_t)(6 * sl + 3 * sl * sl + 8 * rr + 2 * r) * sizeof(double));
    double *work = malloc((size_t)lwork * sizeof(double));
    int *iwork = malloc((size_t)(liwork + 2 * sl) * sizeof(int));
    ptrdiff_t *ia = malloc((size_t)sl * sizeof(ptrdiff_t)), *ib = malloc((size_t)sl * sizeof(ptrdiff_t));
    int status = ML_OK, steps = 0;
    if (!F || !vecs || !work || !iwork || !ia || !ib) {
        status = ML_ERR_ALLOC;
        goto done;
    }
    double *grad = vecs, *gvec = grad + sl, *dx = gvec + sl, *lamH = dx + sl;
    double *coef = lamH + sl, *sv = coef + sl;
    double *Hz = sv + sl, *hess = Hz + sl * sl, *UH = hess + sl * sl;
    double *gM = UH + sl * sl, *Gf = gM + rr, *Mt = Gf + rr, *Cn = Mt + rr, *Vn = Cn + rr;
    double *Sr = Vn + rr, *Qt = Sr + rr, *Qs = Qt + rr, *s = Qs + rr, *mu_n = s + r;
    lower_tables(r, ia, ib);
    sort_descending(mu, Q, r);
    int last = 0;
    for (int it = 0; it < max_steps && !last; ++it) {
        gemm_rm(dgemm, F0, Q, F, m, r, r);          /* F = F0 Q: the pairs in C's eigenbasis */
        for (ptrdiff_t a = 0; a < r; ++a) s[a] = mu[a] > 0.0 ? sqrt(mu[a]) : 0.0;
        double h = 0.0;
        status = face_factored_sums(F, m, r, s, &h, gM, Gf, Hz, dsyrk, n_threads);
        if (status != ML_OK) goto done;
        if (!(h > 0.0)) break;
        double tr = 0.0;
        for (ptrdiff_t a = 0; a < r; ++a) tr += mu[a] > 0.0 ? mu[a] : 0.0;
        face_newton_model(r, h, s, gM, Gf, Hz, ia, ib, gvec, grad, hess);
        status = eigh_ws(dsyevd, dsyevr, hess, sl, lamH, UH, Hz, work, lwork, iwork, liwork);
        if (status != ML_OK) goto done;
        double dec = face_newton_step(sl, lamH, UH, grad, coef, dx);
        /* below the decrement: this step is the last (it refines at one h pass) */
        if (dec < decrement * tol) last = 1;
        const double g0 = tr - log(h), noise = 8.0 * eps_mach * (fabs(g0) + 1.0);
        double gn = INFINITY;
        status = face_armijo(F, m, r, s, dx, ia, ib, Mt, Cn, g0, dec, noise, &gn, dsyrk, n_threads);
        if (status != ML_OK) goto done;
        if (!(gn < g0 - noise)) break;               /* no decrease: stay */
        /* mu <- eig(Cn) descending, Q <- Q Vn */
        status = eigh_ws(dsyevd, dsyevr, Cn, r, mu_n, Vn, Sr, work, lwork, iwork, liwork);
        if (status != ML_OK) goto done;
        face_rotate(dgemm, r, mu_n, Vn, Qs, Qt, Q, mu);
        steps += 1;
    }
done:
    *steps_out = steps;
    free(F); free(vecs); free(work); free(iwork); free(ia); free(ib);
    return status;
}
