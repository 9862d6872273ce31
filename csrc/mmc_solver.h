/* MMC's full-A solver loop (Xing, Ng, Jordan & Russell 2003, Fig. 1, done as
 * a spectral projected gradient; see metriclust/mmc.py for the method).
 *
 * The Python layer builds the whitened problem, starts the solver and handles
 * the rare events (a non-smooth point, a face Newton step); the iterations
 * themselves (bound, projection, line search, Barzilai-Borwein step) run here
 * without the GIL, on buffers allocated once per solve (the pairwise kernels
 * keep their own per-call partial sums). The pair sums come
 * from pairwise.h's entry points, in one of three forms: explicit pairs
 * (direct kernel), explicit pairs through the pair graph's Laplacian (many
 * pairs on few points), or all pairs not in S. Matrices are row-major p x p,
 * symmetric. Determinism: every reduction is in a fixed order (pairwise.h). */
#ifndef METRICLUST_MMC_SOLVER_H
#define METRICLUST_MMC_SOLVER_H
#include "common.h"
#include "pairwise.h"

/* LAPACK's dsyevd / dsyevr (scipy.linalg.cython_lapack), Fortran convention. */
typedef void (*ml_dsyevd_fn)(char *jobz, char *uplo, int *n, double *a, int *lda,
                             double *w, double *work, int *lwork, int *iwork,
                             int *liwork, int *info);
typedef void (*ml_dsyevr_fn)(char *jobz, char *range, char *uplo, int *n, double *a,
                             int *lda, double *vl, double *vu, int *il, int *iu,
                             double *abstol, int *m, double *w, double *z, int *ldz,
                             int *isuppz, double *work, int *lwork, int *iwork,
                             int *liwork, int *info);

/* Status of an eigendecomposition that failed in both drivers. */
#define ML_ERR_EIGEN (-5)

enum {
    ML_MMC_DIRECT = 0,     /* explicit pairs, direct kernel (ml_pairs_full) */
    ML_MMC_LAPLACIAN = 1,  /* explicit pairs: far ones by the Laplacian form, close ones direct */
    ML_MMC_ALLPAIRS = 2,   /* all pairs i < j minus the (unique) similar pairs */
    ML_MMC_CALLBACK = 3    /* the caller's function gives h and G (data read block by
                            * block: metriclust._core.pairs_blockwise); no G_zero */
};

/* ML_MMC_CALLBACK: *h and G (p x p) at the factor Lt (p x r, row-major) of B;
 * returns ML_OK or an error status, which the solver returns as it is. */
typedef int (*ml_mmc_eval_fn)(void *ctx, const double *Lt, ptrdiff_t p, ptrdiff_t r,
                              double *h, double *G);

/* Why ml_mmc_spg_run returned. */
enum {
    ML_MMC_CONVERGED = 0,  /* certified gap, the objective-change rule, or no ascent left */
    ML_MMC_STALLED = 1,    /* the line search found no increase: not converged */
    ML_MMC_MAX_ITER = 2,
    ML_MMC_NONSMOOTH = 3,  /* the current point has n_zero > 0: the caller steps */
    ML_MMC_FACE = 4,       /* it >= next_face, gap < face_gap: the caller tries its face solve */
    ML_MMC_LOG_FULL = 5    /* verbose: the (it, h, gap) log is full; the caller clears it */
};

typedef struct {
    const double *E;           /* n x p, the whitened data */
    ptrdiff_t n, p;
    int form;
    const int64_t *pairs;      /* DIRECT: D; LAPLACIAN: the far pairs; ALLPAIRS: S */
    ptrdiff_t m;
    const int64_t *close;      /* LAPLACIAN: the close pairs (direct kernel) */
    ptrdiff_t m_close;
    ml_dgemm_fn dgemm;
    ml_dsyrk_fn dsyrk;
    ml_dsyevd_fn dsyevd;
    ml_dsyevr_fn dsyevr;
    int n_threads;
    ml_mmc_eval_fn eval;       /* CALLBACK: the sums (E, pairs unused) */
    void *eval_ctx;
} ml_mmc_problem;

typedef struct ml_mmc_spg ml_mmc_spg;

/* The stopping and face-Newton settings (mmc.py's constants). */
typedef struct {
    ptrdiff_t max_iter;
    double tol;
    int memory;        /* the non-monotone search's reference: min of the last `memory` h */
    int window;        /* objective-change rule: look-back in iterations ... */
    double stall_gap;  /* ... applied only where gap <= stall_gap * tol */
    double face_gap;   /* face solve tried below this gap, from iteration next_face */
    int newton_ok;     /* face Newton possible (explicit pairs) */
    int verbose;       /* keep an (it, h, gap) log, 1024 entries at a time */
} ml_mmc_settings;

/* Allocate a solver (NULL: allocation failed or a size is out of range). The
 * problem's arrays must outlive it. */
ml_mmc_spg *ml_mmc_spg_new(const ml_mmc_problem *pb, const ml_mmc_settings *set);
void ml_mmc_spg_free(ml_mmc_spg *s);

/* h, G (and G_zero, n_zero except for ALLPAIRS, CALLBACK: zero and 0) at B >= 0 (p x p).
 * Uses the solver's scratch: not concurrently with ml_mmc_spg_run. */
int ml_mmc_spg_evaluate(ml_mmc_spg *s, const double *B, double *h, double *G,
                        double *G_zero, double *n_zero);

/* Set the current point (B, h, G, G_zero, n_zero as ml_mmc_spg_evaluate gives
 * them). reset: it also becomes the best point, the history restarts, the
 * bound is forgotten and next_face = it + 3 (a face Newton point); otherwise
 * it is appended to the history (a non-smooth step). Both set the BB step to
 * 1 / ||G||_F. */
int ml_mmc_spg_set_point(ml_mmc_spg *s, const double *B, double h, const double *G,
                         const double *G_zero, double n_zero, int reset);

/* Run SPG iterations until an event (*event, ML_MMC_*). */
int ml_mmc_spg_run(ml_mmc_spg *s, int *event);

/* Accessors (the caller's orchestration and verbose output). */
typedef struct {
    ptrdiff_t it;            /* iterations so far (the caller adds its Newton steps) */
    ptrdiff_t n_iter;        /* the iteration count to report at the last event */
    ptrdiff_t next_face;
    double h, n_zero, best_h, upper, gap;
    ptrdiff_t n_log;         /* entries of the (it, h, gap) log */
    ptrdiff_t n_eval;        /* pair-sum passes so far */
} ml_mmc_spg_info;
void ml_mmc_spg_get_info(const ml_mmc_spg *s, ml_mmc_spg_info *info);
void ml_mmc_spg_set_counters(ml_mmc_spg *s, ptrdiff_t it, ptrdiff_t next_face, double upper);
/* Pointers into the solver's state (p x p each, valid until the next call). */
const double *ml_mmc_spg_current(const ml_mmc_spg *s, int which);  /* 0 B, 1 G, 2 G_zero, 3 best B, 4 best G */
const double *ml_mmc_spg_log(const ml_mmc_spg *s);                  /* 3 doubles per entry */
void ml_mmc_spg_clear_log(ml_mmc_spg *s);

/* Face sums (h for the line search of mmc.py's _face_solve). F (m x r, row-major), C (r x r,
 * symmetric); q_k = f_k^T C f_k, d_k = sqrt(max(q_k, 0)); *h = sum d_k. With
 * the symmetric vectorization z_k (entries f_a f_b over a <= b in row order,
 * off-diagonal ones times sqrt 2; s = r (r + 1) / 2 entries) and w_k = 1/(2 d_k)
 * over d_k > 0: gh (s, may be NULL) = sum w_k z_k and H (s_free x s_free, may
 * be NULL, needs gh) = sum 2 w_k^3 z_kF z_kF^T over the entries with
 * free[l] != 0. Fixed blocks, OpenMP above ML_MIN_PARALLEL_WORK. */
int ml_mmc_face_sums(const double *F, ptrdiff_t m, ptrdiff_t r, const double *C,
                     const unsigned char *free_mask, double *h, double *gh, double *H,
                     ml_dsyrk_fn dsyrk, int n_threads);

/* The Newton loop of mmc.py's _face_solve: min tr C - log h(C), h(C) = sum_k
 * sqrt(f_k^T C f_k), C >= 0, f_k the rows of F0 (m x r), on the factor of C:
 * C = M M^T with M lower triangular in C's eigenbasis (no boundary at a tiny
 * eigenvalue). C = Q diag(mu) Q^T (mu: r, Q: r x r row-major; both updated in
 * place, mu descending on return). Stops after the step whose Newton decrement
 * is below decrement * tol, when no decrease is found, or after max_steps;
 * *steps: the steps taken. r <= 64 (the caller's faces have at most 16). */
int ml_mmc_face_newton(const double *F0, ptrdiff_t m, ptrdiff_t r, double *mu, double *Q,
                       double tol, double decrement, int max_steps, int *steps,
                       ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk, ml_dsyevd_fn dsyevd,
                       ml_dsyevr_fn dsyevr, int n_threads);
#endif
