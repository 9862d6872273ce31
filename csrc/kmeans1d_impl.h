/* Type-generic body of kmeans1d.c, included once per REAL (double, float).
 * FN(name) pastes the type suffix. */

/* Scratch of one thread: the sorted column and its Lloyd state. */
typedef struct {
    REAL *xr;          /* n: centered values in row order */
    int32_t *lab;      /* n: label of each row (row order) */
    int32_t *old;      /* n: the labels before the pass (k1_delta) */
    double *dist;      /* n: squared distance to own center (relocation) */
    REAL *C, *C_new;   /* K: centers (centered units) */
    double *sums, *wsum;
    REAL *cn, *cb;     /* K: the score's ||c_k||^2 and -2 c_k */
    double *acc;       /* 8 K: the cluster sums' copies (k1_sums) */
    ptrdiff_t *moved;  /* K: sorted positions moved by one relocation step */
} FN(k1_work);

static void FN(k1_free)(FN(k1_work) *w)
{
    free(w->xr); free(w->lab); free(w->old); free(w->dist); free(w->C);
    free(w->C_new); free(w->sums); free(w->wsum); free(w->cn); free(w->cb); free(w->acc); free(w->moved);
}

static int FN(k1_alloc)(FN(k1_work) *w, ptrdiff_t n, ptrdiff_t K)
{
    w->xr = malloc((size_t)n * sizeof(REAL));
    w->lab = malloc((size_t)n * sizeof(int32_t));
    w->old = malloc((size_t)n * sizeof(int32_t));
    w->dist = malloc((size_t)n * sizeof(double));
    w->C = malloc((size_t)K * sizeof(REAL));
    w->C_new = malloc((size_t)K * sizeof(REAL));
    w->sums = malloc((size_t)K * sizeof(double));
    w->wsum = malloc((size_t)K * sizeof(double));
    w->cn = malloc((size_t)K * sizeof(REAL));
    w->cb = malloc((size_t)K * sizeof(REAL));
    w->acc = malloc((size_t)(8 * K) * sizeof(double));
    w->moved = malloc((size_t)K * sizeof(ptrdiff_t));
    if (!w->xr || !w->lab || !w->old || !w->dist || !w->C || !w->C_new || !w->sums ||
        !w->wsum || !w->cn || !w->cb || !w->acc || !w->moved) {
        FN(k1_free)(w);
        return ML_ERR_ALLOC;
    }
    return ML_OK;
}

/* kmeans.c's segments of n rows at d = 1 (its work_init): the number of
 * chunks (*nc), the accumulator copies (*copies) and the segment count. */
static ptrdiff_t FN(k1_segments)(ptrdiff_t n, ptrdiff_t K, ptrdiff_t *nc, ptrdiff_t *copies)
{
    const ptrdiff_t stride = 2 * K;
    *copies = stride <= ML_KM_COPIES_MAX_STRIDE ? 4 : 1;
    *nc = (n + ML_KM_CHUNK - 1) / ML_KM_CHUNK;
    ptrdiff_t S = *nc < ML_KM_MAX_SEGMENTS ? *nc : ML_KM_MAX_SEGMENTS;
    while (S > 1 && (double)S * *copies * stride * 8.0 > ML_KM_MAX_SEGMENT_BYTES) S /= 2;
    return S < 1 ? 1 : S;
}

/* Cluster sums added in kmeans.c's order (its pass and accum): rows in chunks
 * of ML_KM_CHUNK, chunks in ML_KM_MAX_SEGMENTS segments, in each segment row b
 * of a chunk into copy b & 3 (4 copies when 2K <= ML_KM_COPIES_MAX_STRIDE),
 * then segments and copies added in order: the same centers to the last bit. */
static void FN(k1_sums)(const REAL *xr, ptrdiff_t n, const int32_t *lab, ptrdiff_t K,
                        double *acc, double *sums, double *wsum)
{
    const ptrdiff_t stride = 2 * K;
    ptrdiff_t nc, copies;
    const ptrdiff_t S = FN(k1_segments)(n, K, &nc, &copies);
    for (ptrdiff_t k = 0; k < K; ++k) sums[k] = wsum[k] = 0;
    for (ptrdiff_t s = 0; s < S; ++s) {
        for (ptrdiff_t t = 0; t < copies * stride; ++t) acc[t] = 0;
        for (ptrdiff_t c = s * nc / S; c < (s + 1) * nc / S; ++c) {
            const ptrdiff_t i0 = c * ML_KM_CHUNK;
            const ptrdiff_t m = n - i0 < ML_KM_CHUNK ? n - i0 : ML_KM_CHUNK;
            for (ptrdiff_t b = 0; b < m; ++b) {
                double *a = acc + (copies == 4 ? (b & 3) : 0) * stride;
                const int32_t k = lab[i0 + b];
                a[K + k] += 1.0;
                a[k] += (double)xr[i0 + b];
            }
        }
        for (ptrdiff_t u = 0; u < copies; ++u) {
            for (ptrdiff_t k = 0; k < K; ++k) sums[k] += acc[u * stride + k];
            for (ptrdiff_t k = 0; k < K; ++k) wsum[k] += acc[u * stride + K + k];
        }
    }
}

/* The running sums moved as kmeans.c's delta passes move them (accum_delta,
 * reduce_segments): in each segment the rows whose label changed from old to lab,
 * in row order, added to the new cluster and subtracted from the old one in
 * one zeroed copy, the copy added to the sums; a cluster left empty gets
 * sums of exactly zero. */
static void FN(k1_delta)(const REAL *xr, ptrdiff_t n, const int32_t *old,
                         const int32_t *lab, ptrdiff_t K, double *acc, double *sums,
                         double *wsum)
{
    const ptrdiff_t stride = 2 * K;
    ptrdiff_t nc, copies;
    const ptrdiff_t S = FN(k1_segments)(n, K, &nc, &copies);
    for (ptrdiff_t s = 0; s < S; ++s) {
        for (ptrdiff_t t = 0; t < stride; ++t) acc[t] = 0;
        const ptrdiff_t lo = s * nc / S * ML_KM_CHUNK, hi0 = (s + 1) * nc / S * ML_KM_CHUNK;
        const ptrdiff_t hi = hi0 < n ? hi0 : n;
        for (ptrdiff_t i = lo; i < hi; ++i) {
            const int32_t kn = lab[i], ko = old[i];
            if (kn == ko) continue;
            const double v = (double)xr[i];
            acc[kn] += v;
            acc[ko] -= v;
            acc[K + kn] += 1.0;
            acc[K + ko] -= 1.0;
        }
        for (ptrdiff_t k = 0; k < K; ++k) sums[k] += acc[k];
        for (ptrdiff_t k = 0; k < K; ++k) wsum[k] += acc[K + k];
    }
    for (ptrdiff_t k = 0; k < K; ++k)
        if (wsum[k] == 0) sums[k] = 0;
}

/* Nearest center of every row, by kmeans.c's score cn_k + x (-2 c_k)
 * (= ||x - c_k||^2 - ||x||^2) compared in increasing k with a strict <, built,
 * contracted and cloned as its distance tile is: the same labels as the
 * k-means core, ties and near-ties included (a row equal to two centers one
 * rounding apart goes where the core sends it).  With sums, the cluster sums
 * follow (k1_sums; with old, the labels before the pass, k1_delta moves the
 * running sums instead).  Returns the labels changed. */
ML_FP_CONTRACT_BEGIN
ML_CLONES static ptrdiff_t FN(k1_pass)(const REAL *ML_RESTRICT xr, ptrdiff_t n,
                                       const REAL *ML_RESTRICT C, ptrdiff_t K,
                                       REAL *ML_RESTRICT cn, REAL *ML_RESTRICT cb,
                                       int32_t *ML_RESTRICT lab, int32_t *ML_RESTRICT old,
                                       double *ML_RESTRICT acc,
                                       double *ML_RESTRICT sums, double *ML_RESTRICT wsum)
{
    if (old) memcpy(old, lab, (size_t)n * sizeof(int32_t));
    for (ptrdiff_t k = 0; k < K; ++k) {
        REAL s = 0;
        s += C[k] * C[k];
        cn[k] = s;
        cb[k] = -2 * C[k];
    }
    ptrdiff_t changed = 0;
    for (ptrdiff_t i = 0; i < n; ++i) {
        const REAL x = xr[i];
        REAL bs = (REAL)INFINITY;
        int32_t bk = 0;
        for (ptrdiff_t k = 0; k < K; ++k) {
            REAL a = cn[k];
            a += x * cb[k];
            if (a < bs) { bs = a; bk = (int32_t)k; }
        }
        changed += lab[i] != bk;
        lab[i] = bk;
    }
    if (sums && old)
        FN(k1_delta)(xr, n, old, lab, K, acc, sums, wsum);
    else if (sums)
        FN(k1_sums)(xr, n, lab, K, acc, sums, wsum);
    return changed;
}
ML_FP_CONTRACT_END

/* Empty clusters take the rows farthest from their centers (kmeans.c's
 * relocate_empty: largest distance first, ties to the lowest row, never
 * emptying a cluster, a row equal to one already moved skipped). */
static void FN(k1_relocate)(FN(k1_work) *w, ptrdiff_t n, ptrdiff_t K)
{
    ptrdiff_t n_empty = 0;
    for (ptrdiff_t k = 0; k < K; ++k) n_empty += w->wsum[k] == 0;
    if (n_empty == 0) return;
    for (ptrdiff_t i = 0; i < n; ++i) {
        const double t = (double)w->xr[i] - (double)w->C[w->lab[i]];
        w->dist[i] = t * t;
    }
    ptrdiff_t n_moved = 0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        if (w->wsum[k] != 0) continue;
        for (;;) {
            ptrdiff_t far = -1;
            double dmax = 0;
            for (ptrdiff_t i = 0; i < n; ++i)
                if (w->dist[i] > dmax) { dmax = w->dist[i]; far = i; }
            if (far < 0) break;             /* nothing left to move: keep the old center */
            w->dist[far] = -1;
            const int32_t old = w->lab[far];
            if (!(w->wsum[old] - 1.0 > 0)) continue;
            int duplicate = 0;
            for (ptrdiff_t q = 0; q < n_moved && !duplicate; ++q)
                duplicate = w->xr[w->moved[q]] == w->xr[far];
            if (duplicate) continue;
            w->sums[old] -= (double)w->xr[far];
            w->sums[k] = (double)w->xr[far];
            w->wsum[old] -= 1.0;
            w->wsum[k] = 1.0;
            w->moved[n_moved++] = far;
            break;
        }
    }
}

static void FN(k1_column)(FN(k1_work) *w, const REAL *X, ptrdiff_t n, ptrdiff_t p,
                          ptrdiff_t j, ptrdiff_t K, const REAL *init, double mean,
                          double var, int max_iter, double tol, REAL *C_out,
                          double *inertia, int32_t *n_iter, int64_t *labels)
{
    /* centered as kmeans() centers: its float64 mean cast to REAL, subtracted in REAL */
    const REAL xm = (REAL)mean;
    for (ptrdiff_t i = 0; i < n; ++i) {
        w->xr[i] = (REAL)(X[i * p + j] - xm);
        w->lab[i] = -1;
    }
    for (ptrdiff_t k = 0; k < K; ++k) w->C[k] = (REAL)(init[k] - xm);
    const double abs_tol = tol > 0 ? var * tol : 0.0;

    int it, strict = 0, fresh = 1, run = 0;   /* kmeans.c's lloyd_step's rule */
    for (it = 0; it < max_iter; ++it) {
        const int delta = !fresh && run < ML_KM_DELTA_MAX_RUN;
        run = delta ? run + 1 : 0;
        const ptrdiff_t changed = FN(k1_pass)(w->xr, n, w->C, K, w->cn, w->cb, w->lab,
                                              delta ? w->old : NULL, w->acc, w->sums,
                                              w->wsum);
        fresh = (double)changed > ML_KM_DELTA_MAX_MOVED_LOW_D * (double)n;   /* d = 1 */
        for (ptrdiff_t k = 0; k < K; ++k) fresh |= w->wsum[k] == 0;
        FN(k1_relocate)(w, n, K);
        double shift = 0;
        for (ptrdiff_t k = 0; k < K; ++k) {
            const REAL v = w->wsum[k] > 0 ? (REAL)(w->sums[k] / w->wsum[k]) : w->C[k];
            const double t = (double)v - (double)w->C[k];
            shift += t * t;
            w->C_new[k] = v;
        }
        { REAL *t = w->C; w->C = w->C_new; w->C_new = t; }
        if (changed == 0) { strict = 1; break; }
        if (shift <= abs_tol) break;
    }
    if (it == max_iter) it = max_iter - 1;
    if (!strict)   /* labels of the final centers */
        FN(k1_pass)(w->xr, n, w->C, K, w->cn, w->cb, w->lab, NULL, NULL, NULL, NULL);
    double tot = 0;   /* kmeans.c's inertia: partial sums over ML_KM_REDUCE_BLOCK rows */
    for (ptrdiff_t i0 = 0; i0 < n; i0 += ML_KM_REDUCE_BLOCK) {
        const ptrdiff_t hi = i0 + ML_KM_REDUCE_BLOCK < n ? i0 + ML_KM_REDUCE_BLOCK : n;
        double part = 0;
        for (ptrdiff_t i = i0; i < hi; ++i) {
            const double t = (double)w->xr[i] - (double)w->C[w->lab[i]];
            part += t * t;
        }
        tot += part;
    }
    *inertia = tot;
    *n_iter = it + 1;
    for (ptrdiff_t k = 0; k < K; ++k) C_out[k] = (REAL)(w->C[k] + xm);
    if (labels)
        for (ptrdiff_t i = 0; i < n; ++i) labels[i] = w->lab[i];
}

int FN(ml_kmeans1d_columns)(const REAL *X, ptrdiff_t n, ptrdiff_t p, const int64_t *cols,
                            ptrdiff_t m, ptrdiff_t K, const REAL *init, const double *means,
                            const double *vars, int max_iter,
                            double tol, REAL *centers, double *inertia, int32_t *n_iter,
                            int64_t *labels, int n_threads)
{
    if (n < 1 || p < 1 || m < 0 || K < 1 || K > n || K > INT32_MAX || max_iter < 1 ||
        !(tol >= 0))
        return ML_ERR_ARG;
    for (ptrdiff_t c = 0; c < m; ++c)
        if (cols[c] < 0 || cols[c] >= p) return ML_ERR_ARG;
    if (m == 0) return ML_OK;
    int status = ML_OK;
    const int nt = ml_threads(n_threads);
    (void)nt;   /* unused in the serial (no-OpenMP) build */
    #pragma omp parallel num_threads(nt) if (nt > 1 && m > 1)
    {
        FN(k1_work) w;
        int st = FN(k1_alloc)(&w, n, K);
        if (st != ML_OK) {
            #pragma omp critical(ml_kmeans1d_status)
            status = st;
        }
        #pragma omp for schedule(dynamic, 8)
        for (ptrdiff_t c = 0; c < m; ++c) {
            if (st != ML_OK || ml_interrupted()) continue;
            FN(k1_column)(&w, X, n, p, (ptrdiff_t)cols[c], K, init + c * K, means[c], vars[c],
                          max_iter, tol,
                          centers + c * K, inertia + c, n_iter + c,
                          labels ? labels + c * n : NULL);
        }
        if (st == ML_OK) FN(k1_free)(&w);
    }
    if (status == ML_OK && ml_interrupted()) status = ML_ERR_INTERRUPTED;
    return status;
}
