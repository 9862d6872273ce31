/* k-means kernels for one floating type; included by kmeans.c once per type
 * with REAL (float or double), SFX (f32 or f64) and GEMM_T (the gemm
 * function-pointer type) defined.  See kmeans.h for the contract. */

#define KM_CAT2(a, b) a##_##b
#define KM_CAT(a, b) KM_CAT2(a, b)
#define FN(name) KM_CAT(name, SFX)
#if defined(__GNUC__) || defined(__clang__)
#define KM_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define KM_PREFETCH(p) ((void)0)
#endif

/* ---------------------------------------------------------------------------
 * Direct distances for one chunk of m <= ML_KM_CHUNK rows.
 *
 * xT holds the chunk transposed (d rows of ML_KM_CHUNK), so that every inner
 * loop runs over points with unit stride and vectorizes.  With cm2 = -2 C and
 * cn = ||c||^2, the score of center k for point x is cn_k + x . cm2_k, i.e.
 * ||x - c_k||^2 - ||x||^2: the argmin is the nearest center.  Centers are
 * taken four at a time so that best/bestk are loaded and stored once per four
 * centers (the last 1..3 in one more pass); the comparison is strict and in
 * increasing k order, so ties go to the lowest index.  bestk holds the label as a REAL (same vector width).
 * ------------------------------------------------------------------------- */
static inline __attribute__((always_inline)) void
FN(direct_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
                const REAL *ML_RESTRICT cm2, const REAL *ML_RESTRICT cn,
                ptrdiff_t K, REAL *ML_RESTRICT xT, REAL *ML_RESTRICT best,
                REAL *ML_RESTRICT bestk)
{
    const ptrdiff_t B = ML_KM_CHUNK;
    /* While transposing this chunk, prefetch the same rows of the next one
     * (X + B * d onwards): the loads of X otherwise stall the transpose at
     * small d, where there is little distance work per byte.  One prefetch
     * per 64 bytes, eight rows at a time (the transpose of each group of
     * eight rows stays vectorized); past the end of X it is harmless (a
     * prefetch never faults). */
    const char *nxt = (const char *)(X + B * d);
    const ptrdiff_t gb = 8 * d * (ptrdiff_t)sizeof(REAL);
    for (ptrdiff_t b0 = 0; b0 < m; b0 += 8) {
        for (ptrdiff_t t = 0; t < gb; t += 64) KM_PREFETCH(nxt + b0 * d * (ptrdiff_t)sizeof(REAL) + t);
        const ptrdiff_t b1 = b0 + 8 < m ? b0 + 8 : m;
        for (ptrdiff_t b = b0; b < b1; ++b)
            for (ptrdiff_t j = 0; j < d; ++j) xT[j * B + b] = X[b * d + j];
    }
    for (ptrdiff_t b = 0; b < m; ++b) {
        best[b] = (REAL)INFINITY;
        bestk[b] = 0;
    }
    /* Centers in blocks of four, then one pass for the last 1..3. */
    ptrdiff_t k = 0;
    for (; k + 4 <= K; k += 4) {
        const REAL *c0 = cm2 + k * d, *c1 = c0 + d, *c2 = c1 + d, *c3 = c2 + d;
        const REAL n0 = cn[k], n1 = cn[k + 1], n2 = cn[k + 2], n3 = cn[k + 3];
        const REAL k0 = (REAL)k, k1 = (REAL)(k + 1), k2 = (REAL)(k + 2),
                   k3 = (REAL)(k + 3);
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL a0 = n0, a1 = n1, a2 = n2, a3 = n3;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const REAL x = xT[j * B + b];
                a0 += x * c0[j];
                a1 += x * c1[j];
                a2 += x * c2[j];
                a3 += x * c3[j];
            }
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            bk = a1 < bs ? k1 : bk; bs = a1 < bs ? a1 : bs;
            bk = a2 < bs ? k2 : bk; bs = a2 < bs ? a2 : bs;
            bk = a3 < bs ? k3 : bk; bs = a3 < bs ? a3 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
    const ptrdiff_t r = K - k;
    if (r == 3) {
        const REAL *c0 = cm2 + k * d, *c1 = c0 + d, *c2 = c1 + d;
        const REAL n0 = cn[k], n1 = cn[k + 1], n2 = cn[k + 2];
        const REAL k0 = (REAL)k, k1 = (REAL)(k + 1), k2 = (REAL)(k + 2);
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL a0 = n0, a1 = n1, a2 = n2;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const REAL x = xT[j * B + b];
                a0 += x * c0[j];
                a1 += x * c1[j];
                a2 += x * c2[j];
            }
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            bk = a1 < bs ? k1 : bk; bs = a1 < bs ? a1 : bs;
            bk = a2 < bs ? k2 : bk; bs = a2 < bs ? a2 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    } else if (r == 2) {
        const REAL *c0 = cm2 + k * d, *c1 = c0 + d;
        const REAL n0 = cn[k], n1 = cn[k + 1];
        const REAL k0 = (REAL)k, k1 = (REAL)(k + 1);
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL a0 = n0, a1 = n1;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const REAL x = xT[j * B + b];
                a0 += x * c0[j];
                a1 += x * c1[j];
            }
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            bk = a1 < bs ? k1 : bk; bs = a1 < bs ? a1 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    } else if (r == 1) {
        const REAL *c0 = cm2 + k * d;
        const REAL n0 = cn[k], k0 = (REAL)k;
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL a0 = n0;
            for (ptrdiff_t j = 0; j < d; ++j) a0 += xT[j * B + b] * c0[j];
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
}

/* Runtime d: the j loop moves outside the point loop (accumulators in
 * arrays), so the point loop is still the innermost, vectorized one. */
ML_CLONES static void
FN(direct_any)(const REAL *ML_RESTRICT X, ptrdiff_t m, ptrdiff_t d,
               const REAL *ML_RESTRICT cm2, const REAL *ML_RESTRICT cn,
               ptrdiff_t K, REAL *ML_RESTRICT xT, REAL *ML_RESTRICT best,
               REAL *ML_RESTRICT bestk, REAL *ML_RESTRICT acc)
{
    const ptrdiff_t B = ML_KM_CHUNK;
    for (ptrdiff_t b = 0; b < m; ++b)
        for (ptrdiff_t j = 0; j < d; ++j) xT[j * B + b] = X[b * d + j];
    for (ptrdiff_t b = 0; b < m; ++b) { best[b] = (REAL)INFINITY; bestk[b] = 0; }
    REAL *ML_RESTRICT a0 = acc, *ML_RESTRICT a1 = acc + B,
         *ML_RESTRICT a2 = acc + 2 * B, *ML_RESTRICT a3 = acc + 3 * B;
    ptrdiff_t k = 0;
    for (; k + 4 <= K; k += 4) {
        const REAL *c0 = cm2 + k * d, *c1 = c0 + d, *c2 = c1 + d, *c3 = c2 + d;
        for (ptrdiff_t b = 0; b < m; ++b) {
            a0[b] = cn[k]; a1[b] = cn[k + 1]; a2[b] = cn[k + 2]; a3[b] = cn[k + 3];
        }
        for (ptrdiff_t j = 0; j < d; ++j) {
            const REAL *ML_RESTRICT x = xT + j * B;
            const REAL e0 = c0[j], e1 = c1[j], e2 = c2[j], e3 = c3[j];
            for (ptrdiff_t b = 0; b < m; ++b) {
                a0[b] += x[b] * e0; a1[b] += x[b] * e1;
                a2[b] += x[b] * e2; a3[b] += x[b] * e3;
            }
        }
        const REAL k0 = (REAL)k, k1 = (REAL)(k + 1), k2 = (REAL)(k + 2),
                   k3 = (REAL)(k + 3);
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL bs = best[b], bk = bestk[b];
            bk = a0[b] < bs ? k0 : bk; bs = a0[b] < bs ? a0[b] : bs;
            bk = a1[b] < bs ? k1 : bk; bs = a1[b] < bs ? a1[b] : bs;
            bk = a2[b] < bs ? k2 : bk; bs = a2[b] < bs ? a2[b] : bs;
            bk = a3[b] < bs ? k3 : bk; bs = a3[b] < bs ? a3[b] : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
    for (; k < K; ++k) {
        const REAL *c0 = cm2 + k * d;
        for (ptrdiff_t b = 0; b < m; ++b) a0[b] = cn[k];
        for (ptrdiff_t j = 0; j < d; ++j) {
            const REAL *ML_RESTRICT x = xT + j * B;
            const REAL e0 = c0[j];
            for (ptrdiff_t b = 0; b < m; ++b) a0[b] += x[b] * e0;
        }
        const REAL k0 = (REAL)k;
        for (ptrdiff_t b = 0; b < m; ++b) {
            REAL bs = best[b], bk = bestk[b];
            bk = a0[b] < bs ? k0 : bk; bs = a0[b] < bs ? a0[b] : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
}

/* best/bestk over the columns of P (m x K, column-major) plus cn. */
ML_CLONES static void
FN(argmin_cols)(const REAL *ML_RESTRICT P, ptrdiff_t m,
                const REAL *ML_RESTRICT cn, ptrdiff_t K,
                REAL *ML_RESTRICT best, REAL *ML_RESTRICT bestk)
{
    for (ptrdiff_t b = 0; b < m; ++b) { best[b] = P[b] + cn[0]; bestk[b] = 0; }
    ptrdiff_t k = 1;
    for (; k + 4 <= K; k += 4) {
        const REAL *p0 = P + k * m, *p1 = p0 + m, *p2 = p1 + m, *p3 = p2 + m;
        const REAL n0 = cn[k], n1 = cn[k + 1], n2 = cn[k + 2], n3 = cn[k + 3];
        const REAL k0 = (REAL)k, k1 = (REAL)(k + 1), k2 = (REAL)(k + 2),
                   k3 = (REAL)(k + 3);
        for (ptrdiff_t b = 0; b < m; ++b) {
            const REAL a0 = p0[b] + n0, a1 = p1[b] + n1, a2 = p2[b] + n2,
                       a3 = p3[b] + n3;
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            bk = a1 < bs ? k1 : bk; bs = a1 < bs ? a1 : bs;
            bk = a2 < bs ? k2 : bk; bs = a2 < bs ? a2 : bs;
            bk = a3 < bs ? k3 : bk; bs = a3 < bs ? a3 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
    for (; k < K; ++k) {
        const REAL *p0 = P + k * m;
        const REAL n0 = cn[k], k0 = (REAL)k;
        for (ptrdiff_t b = 0; b < m; ++b) {
            const REAL a0 = p0[b] + n0;
            REAL bs = best[b], bk = bestk[b];
            bk = a0 < bs ? k0 : bk; bs = a0 < bs ? a0 : bs;
            best[b] = bs;
            bestk[b] = bk;
        }
    }
}

#define KM_DIRECT_D(DV)                                                       \
    ML_CLONES static void FN(direct_d##DV)(                                   \
        const REAL *ML_RESTRICT X, ptrdiff_t m, const REAL *ML_RESTRICT cm2,  \
        const REAL *ML_RESTRICT cn, ptrdiff_t K, REAL *ML_RESTRICT xT,        \
        REAL *ML_RESTRICT best, REAL *ML_RESTRICT bestk)                      \
    {                                                                         \
        FN(direct_body)(X, m, DV, cm2, cn, K, xT, best, bestk);               \
    }
KM_DIRECT_D(1)
KM_DIRECT_D(2)
KM_DIRECT_D(3)
KM_DIRECT_D(4)
KM_DIRECT_D(5)
KM_DIRECT_D(6)
KM_DIRECT_D(7)
KM_DIRECT_D(8)
#undef KM_DIRECT_D

#if (defined(__GNUC__) && __GNUC__ >= 9) || defined(__clang__)
#define KM_HAVE_VEC 1
#ifndef KM_V4D_DEFINED
#define KM_V4D_DEFINED
typedef double km_v4d __attribute__((vector_size(32)));
#endif
typedef REAL FN(km_vr) __attribute__((vector_size(4 * sizeof(REAL))));
#else
#define KM_HAVE_VEC 0
#endif

/* Weighted per-cluster sums of one chunk, in float64.  Row b goes to the
 * accumulator copy b mod `copies` (copies is 1 or 4): consecutive rows of the
 * same cluster then do not wait on each other's additions.  Without weights
 * (w == NULL) the rows are added as they are: the same sums as with weight
 * 1.0, whose products are exact, without the multiplications. */
static inline __attribute__((always_inline)) void
FN(accum_body)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w,
               ptrdiff_t m, const ptrdiff_t d, const int32_t *ML_RESTRICT lab,
               double *ML_RESTRICT acc, ptrdiff_t copies, ptrdiff_t stride,
               ptrdiff_t K)
{
    double *ML_RESTRICT wacc = acc + K * d;
    if (copies == 4 && m == ML_KM_CHUNK) {
        for (ptrdiff_t b = 0; b < m; b += 4)
            for (ptrdiff_t u = 0; u < 4; ++u) {
                const ptrdiff_t k = lab[b + u];
                const REAL *x = X + (b + u) * d;
                double *row = acc + u * stride + k * d;
                /* The row first, then its weight: wacc may alias row as far
                 * as the compiler knows, and a store to it ahead of the row's
                 * loads keeps the row update from being vectorized. */
                if (w) {
                    const double wb = (double)w[b + u];
#if KM_HAVE_VEC
                    if (d % 4 == 0 && d <= 8) {
                        /* Four coordinates per vector operation (the same
                         * products and sums, element by element). */
                        for (ptrdiff_t j = 0; j < d; j += 4) {
                            FN(km_vr) xv;
                            km_v4d rv;
                            memcpy(&xv, x + j, sizeof xv);
                            memcpy(&rv, row + j, sizeof rv);
                            rv += wb * __builtin_convertvector(xv, km_v4d);
                            memcpy(row + j, &rv, sizeof rv);
                        }
                    } else
#endif
                    for (ptrdiff_t j = 0; j < d; ++j) row[j] += wb * (double)x[j];
                    wacc[u * stride + k] += wb;
                } else {
#if KM_HAVE_VEC
                    if (d % 4 == 0 && d <= 8) {
                        for (ptrdiff_t j = 0; j < d; j += 4) {
                            FN(km_vr) xv;
                            km_v4d rv;
                            memcpy(&xv, x + j, sizeof xv);
                            memcpy(&rv, row + j, sizeof rv);
                            rv += __builtin_convertvector(xv, km_v4d);
                            memcpy(row + j, &rv, sizeof rv);
                        }
                    } else
#endif
                    for (ptrdiff_t j = 0; j < d; ++j) row[j] += (double)x[j];
                    wacc[u * stride + k] += 1.0;
                }
            }
        return;
    }
    for (ptrdiff_t b = 0; b < m; ++b) {
        const ptrdiff_t u = copies == 4 ? (b & 3) : 0;
        const ptrdiff_t k = lab[b];
        const REAL *x = X + b * d;
        double *row = acc + u * stride + k * d;
        const double wb = w ? (double)w[b] : 1.0;
        wacc[u * stride + k] += wb;
        for (ptrdiff_t j = 0; j < d; ++j) row[j] += wb * (double)x[j];
    }
}

/* Specialised for d = 1..8 and for w == NULL (the branch on w then folds). */
#define KM_ACCUM_D(DV)                                                        \
    ML_CLONES static void FN(accum_d##DV)(const REAL *X, const REAL *w,       \
                                          ptrdiff_t m, const int32_t *lab,    \
                                          double *acc, ptrdiff_t copies,      \
                                          ptrdiff_t stride, ptrdiff_t K)      \
    {                                                                         \
        if (w)                                                                \
            FN(accum_body)(X, w, m, DV, lab, acc, copies, stride, K);         \
        else                                                                  \
            FN(accum_body)(X, NULL, m, DV, lab, acc, copies, stride, K);      \
    }
KM_ACCUM_D(1)
KM_ACCUM_D(2)
KM_ACCUM_D(3)
KM_ACCUM_D(4)
KM_ACCUM_D(5)
KM_ACCUM_D(6)
KM_ACCUM_D(7)
KM_ACCUM_D(8)
#undef KM_ACCUM_D

static void FN(accum)(const REAL *X, const REAL *w, ptrdiff_t m, ptrdiff_t d,
                      const int32_t *lab, double *acc, ptrdiff_t copies,
                      ptrdiff_t stride, ptrdiff_t K)
{
    switch (d) {
    case 1: FN(accum_d1)(X, w, m, lab, acc, copies, stride, K); break;
    case 2: FN(accum_d2)(X, w, m, lab, acc, copies, stride, K); break;
    case 3: FN(accum_d3)(X, w, m, lab, acc, copies, stride, K); break;
    case 4: FN(accum_d4)(X, w, m, lab, acc, copies, stride, K); break;
    case 5: FN(accum_d5)(X, w, m, lab, acc, copies, stride, K); break;
    case 6: FN(accum_d6)(X, w, m, lab, acc, copies, stride, K); break;
    case 7: FN(accum_d7)(X, w, m, lab, acc, copies, stride, K); break;
    case 8: FN(accum_d8)(X, w, m, lab, acc, copies, stride, K); break;
    default: FN(accum_body)(X, w, m, d, lab, acc, copies, stride, K);
    }
}

/* Per-thread scratch for one chunk. */
typedef struct {
    REAL *xT;     /* d x ML_KM_CHUNK (direct) */
    REAL *best;   /* ML_KM_CHUNK */
    REAL *bestk;  /* ML_KM_CHUNK */
    REAL *acc;    /* 4 x ML_KM_CHUNK (direct_any) or ML_KM_CHUNK x K (gemm) */
} FN(km_scratch);

/* Nearest centers of rows [i0, i0 + m): writes int32 labels to lab[0..m). */
static void FN(assign_chunk)(const REAL *X, ptrdiff_t m, ptrdiff_t d,
                             const REAL *C, const REAL *cm2, const REAL *cn,
                             ptrdiff_t K, int use_gemm, GEMM_T gemm,
                             FN(km_scratch) *s, int32_t *lab)
{
    if (use_gemm) {
        REAL *P = s->acc;
        REAL alpha = -2, beta = 0;
        char ta = 'T', tb = 'N';
        int Kk = (int)d, lda = (int)d, ldb = (int)d;
        if (K < ML_KM_GEMM_ROWWISE_K) {
            /* Few centers: P row-major (m x K) = -2 X C^T, the orientation in
             * which BLAS packs the small C, and a short argmin per row. */
            int M = (int)K, Nn = (int)m, ldc = (int)K;
            gemm(&ta, &tb, &M, &Nn, &Kk, &alpha, (REAL *)C, &lda, (REAL *)X,
                 &ldb, &beta, P, &ldc);
            for (ptrdiff_t b = 0; b < m; ++b) {
                const REAL *row = P + b * K;
                REAL bs = row[0] + cn[0];
                int32_t bk = 0;
                for (ptrdiff_t k = 1; k < K; ++k) {
                    const REAL a = row[k] + cn[k];
                    if (a < bs) { bs = a; bk = (int32_t)k; }
                }
                lab[b] = bk;
            }
            return;
        }
        /* P (m x K, column-major: P[k * m + b]) = -2 X C^T, then the argmin
         * of cn_k + P[k * m + b] over k, vectorized over the points b. */
        int M = (int)m, Nn = (int)K, ldc = (int)m;
        gemm(&ta, &tb, &M, &Nn, &Kk, &alpha, (REAL *)X, &lda, (REAL *)C, &ldb,
             &beta, P, &ldc);
        FN(argmin_cols)(P, m, cn, K, s->best, s->bestk);
        for (ptrdiff_t b = 0; b < m; ++b) lab[b] = (int32_t)s->bestk[b];
        return;
    }
    switch (d) {
    case 1: FN(direct_d1)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 2: FN(direct_d2)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 3: FN(direct_d3)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 4: FN(direct_d4)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 5: FN(direct_d5)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 6: FN(direct_d6)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 7: FN(direct_d7)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    case 8: FN(direct_d8)(X, m, cm2, cn, K, s->xT, s->best, s->bestk); break;
    default:
        FN(direct_any)(X, m, d, cm2, cn, K, s->xT, s->best, s->bestk, s->acc);
    }
    for (ptrdiff_t b = 0; b < m; ++b) lab[b] = (int32_t)s->bestk[b];
}

/* Workspace shared by the Lloyd and online drivers and assignment. */
typedef struct {
    ptrdiff_t n, d, K, n_chunks, S, copies, stride;
    int nt, use_gemm;
    GEMM_T gemm;
    REAL *cm2, *cn;       /* K x d, K */
    double *seg;          /* S x copies x stride partial sums */
    int64_t *seg_changed; /* S */
    REAL *scratch;        /* nt x per_thread */
    ptrdiff_t per_thread;
} FN(km_work);

static void FN(work_free)(FN(km_work) *ws)
{
    free(ws->cm2); free(ws->cn); free(ws->seg); free(ws->seg_changed);
    free(ws->scratch);
}

static int FN(work_init)(FN(km_work) *ws, ptrdiff_t n, ptrdiff_t d,
                         ptrdiff_t K, GEMM_T gemm, int method, int n_threads,
                         int with_sums)
{
    memset(ws, 0, sizeof(*ws));
    ws->n = n; ws->d = d; ws->K = K; ws->gemm = gemm;
    ws->nt = ml_threads(n_threads);
    if (ws->nt < 1) ws->nt = 1;
    if (method == ML_KM_GEMM && !gemm) return ML_ERR_ARG;
    ws->use_gemm = method == ML_KM_GEMM ||
                   (method == ML_KM_AUTO && gemm && d > ML_KM_DIRECT_MAX_D);
    ws->n_chunks = (n + ML_KM_CHUNK - 1) / ML_KM_CHUNK;
    /* Interleaved accumulator copies break the add-latency chain when
     * consecutive rows fall in the same cluster (small K * d only). */
    ws->stride = K * d + K;
    ws->copies = ws->stride <= 1024 ? 4 : 1;
    /* The segment count depends on (n, d, K) only, never on the threads. */
    ptrdiff_t S = ws->n_chunks < 64 ? ws->n_chunks : 64;
    while (S > 1 && (double)S * ws->copies * ws->stride * 8.0 > 64e6) S /= 2;
    if (S < 1) S = 1;
    ws->S = S;
    ws->per_thread = (ptrdiff_t)ML_KM_CHUNK * (d + 2) +
                     (ws->use_gemm ? (ptrdiff_t)ML_KM_CHUNK * K
                                   : 4 * (ptrdiff_t)ML_KM_CHUNK);
    ws->per_thread = (ws->per_thread + 15) / 16 * 16;
    ws->cm2 = malloc((size_t)(K * d + 1) * sizeof(REAL));
    ws->cn = malloc((size_t)K * sizeof(REAL));
    ws->scratch = malloc((size_t)(ws->nt * ws->per_thread) * sizeof(REAL));
    ws->seg_changed = malloc((size_t)S * sizeof(int64_t));
    if (with_sums)
        ws->seg = malloc((size_t)(S * ws->copies * ws->stride) * sizeof(double));
    if (!ws->cm2 || !ws->cn || !ws->scratch || !ws->seg_changed ||
        (with_sums && !ws->seg)) {
        FN(work_free)(ws);
        return ML_ERR_ALLOC;
    }
    return ML_OK;
}

static void FN(center_prep)(FN(km_work) *ws, const REAL *C)
{
    const ptrdiff_t K = ws->K, d = ws->d;
    for (ptrdiff_t k = 0; k < K; ++k) {
        REAL s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            s += C[k * d + j] * C[k * d + j];
            ws->cm2[k * d + j] = -2 * C[k * d + j];
        }
        ws->cn[k] = s;
    }
}

/* One pass over the rows: labels of the nearest centers of C (lab, int32,
 * in/out: the number of changed labels is returned in *changed) and, when
 * sums != NULL, the weighted per-cluster sums (K x d) and weights (K). */
static void FN(pass)(FN(km_work) *ws, const REAL *X, const REAL *w,
                     const REAL *C, int32_t *lab, double *sums, double *wsum,
                     int64_t *changed)
{
    const ptrdiff_t d = ws->d, K = ws->K, S = ws->S, nc = ws->n_chunks,
                    n = ws->n, stride = ws->stride;
    const int do_sums = sums != NULL;
    const ptrdiff_t copies = do_sums ? ws->copies : 0;
    FN(center_prep)(ws, C);
    /* Small problems run on one thread: a parallel region costs more than it
     * saves, badly so on a loaded machine.  (Results do not depend on it.) */
    int nt = ws->nt;
    if (S <= 1 || (double)n * (double)K * (double)(d + 1) < ML_KM_PAR_MIN_WORK) nt = 1;
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int tid = ml_thread_id();
        REAL *base = ws->scratch + (ptrdiff_t)tid * ws->per_thread;
        FN(km_scratch) sc;
        sc.xT = base;
        sc.best = base + (ptrdiff_t)ML_KM_CHUNK * d;
        sc.bestk = sc.best + ML_KM_CHUNK;
        sc.acc = sc.bestk + ML_KM_CHUNK;
        int32_t newlab[ML_KM_CHUNK];
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t s = 0; s < S; ++s) {
            double *acc = do_sums ? ws->seg + s * copies * stride : NULL;
            if (do_sums) memset(acc, 0, (size_t)(copies * stride) * sizeof(double));
            int64_t ch = 0;
            const ptrdiff_t c_lo = s * nc / S, c_hi = (s + 1) * nc / S;
            for (ptrdiff_t c = c_lo; c < c_hi && !ml_interrupted(); ++c) {
                const ptrdiff_t i0 = c * ML_KM_CHUNK;
                const ptrdiff_t m = n - i0 < ML_KM_CHUNK ? n - i0 : ML_KM_CHUNK;
                const REAL *Xc = X + i0 * d;
                FN(assign_chunk)(Xc, m, d, C, ws->cm2, ws->cn, K, ws->use_gemm,
                                 ws->gemm, &sc, newlab);
                int32_t *L = lab + i0;
                for (ptrdiff_t b = 0; b < m; ++b) ch += newlab[b] != L[b];
                memcpy(L, newlab, (size_t)m * sizeof(int32_t));
                if (do_sums)
                    FN(accum)(Xc, w ? w + i0 : NULL, m, d, newlab, acc, copies,
                              stride, K);
            }
            ws->seg_changed[s] = ch;
        }
    }
    int64_t ch = 0;
    for (ptrdiff_t s = 0; s < S; ++s) ch += ws->seg_changed[s];
    *changed = ch;
    if (!do_sums) return;
    memset(sums, 0, (size_t)(K * d) * sizeof(double));
    memset(wsum, 0, (size_t)K * sizeof(double));
    for (ptrdiff_t s = 0; s < S; ++s)
        for (ptrdiff_t c = 0; c < copies; ++c) {
            const double *a = ws->seg + (s * copies + c) * stride;
            for (ptrdiff_t t = 0; t < K * d; ++t) sums[t] += a[t];
            for (ptrdiff_t k = 0; k < K; ++k) wsum[k] += a[K * d + k];
        }
}

/* Squared distance of every row to its own center, from x - c (float64). */
static void FN(own_dist)(const REAL *X, ptrdiff_t n, ptrdiff_t d, const REAL *C,
                         const int32_t *lab, double *out, int nt)
{
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t i = 0; i < n; ++i) {
        const REAL *x = X + i * d, *c = C + (ptrdiff_t)lab[i] * d;
        double s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double t = (double)x[j] - (double)c[j];
            s += t * t;
        }
        out[i] = s;
    }
}

/* sum_i w_i ||x_i - c_{l_i}||^2 in float64, fixed blocks reduced in order. */
static int FN(inertia)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                       const REAL *C, const int32_t *lab, double *out, int nt)
{
    const ptrdiff_t BL = 4096, nb = (n + BL - 1) / BL;
    double *part = malloc((size_t)(nb + 1) * sizeof(double));
    if (!part) return ML_ERR_ALLOC;
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t bi = 0; bi < nb; ++bi) {
        const ptrdiff_t hi = (bi + 1) * BL < n ? (bi + 1) * BL : n;
        double acc = 0;
        for (ptrdiff_t i = bi * BL; i < hi; ++i) {
            const REAL *x = X + i * d, *c = C + (ptrdiff_t)lab[i] * d;
            double s = 0;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const double t = (double)x[j] - (double)c[j];
                s += t * t;
            }
            acc += w ? (double)w[i] * s : s;
        }
        part[bi] = acc;
    }
    double tot = 0;
    for (ptrdiff_t bi = 0; bi < nb; ++bi) tot += part[bi];
    free(part);
    *out = tot;
    return ML_OK;
}

/* Empty clusters take the rows farthest from their (old) centers: largest
 * distance first, ties to the lowest row index; a row is taken only if it
 * has positive weight, a positive distance, and its cluster keeps a positive
 * weight.  sums/wsum are updated in place. */
static int FN(relocate_empty)(const REAL *X, const REAL *w, ptrdiff_t n,
                              ptrdiff_t d, ptrdiff_t K, const REAL *C_old,
                              const int32_t *lab, double *sums, double *wsum,
                              int nt)
{
    ptrdiff_t n_empty = 0;
    for (ptrdiff_t k = 0; k < K; ++k) n_empty += wsum[k] == 0;
    if (n_empty == 0) return ML_OK;
    double *dist = malloc((size_t)n * sizeof(double));
    if (!dist) return ML_ERR_ALLOC;
    FN(own_dist)(X, n, d, C_old, lab, dist, nt);
    for (ptrdiff_t i = 0; i < n; ++i)
        if (w && !(w[i] > 0)) dist[i] = -1;
    for (ptrdiff_t k = 0; k < K; ++k) {
        if (wsum[k] != 0) continue;
        for (;;) {
            ptrdiff_t far = -1;
            double dmax = 0;
            for (ptrdiff_t i = 0; i < n; ++i)
                if (dist[i] > dmax) { dmax = dist[i]; far = i; }
            if (far < 0) break;  /* nothing left to move: keep the old center */
            dist[far] = -1;
            const int32_t old = lab[far];
            const double wf = w ? (double)w[far] : 1.0;
            if (!(wsum[old] - wf > 0)) continue;  /* would empty its cluster */
            const REAL *x = X + far * d;
            for (ptrdiff_t j = 0; j < d; ++j) {
                sums[old * d + j] -= wf * (double)x[j];
                sums[k * d + j] = wf * (double)x[j];
            }
            wsum[old] -= wf;
            wsum[k] = wf;
            break;
        }
    }
    free(dist);
    return ML_OK;
}

static void FN(lab_out)(const int32_t *lab, ptrdiff_t n, int64_t *labels)
{
    for (ptrdiff_t i = 0; i < n; ++i) labels[i] = lab[i];
}

int FN(ml_kmeans_lloyd)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                        ptrdiff_t K, REAL *centers, int max_iter, double tol,
                        int64_t *labels, double *inertia, int *n_iter,
                        int *strict, GEMM_T gemm, int method, int n_threads)
{
    if (n < 1 || d < 1 || K < 1 || K > n || max_iter < 1 || K > INT32_MAX)
        return ML_ERR_ARG;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 1);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    REAL *buf = malloc((size_t)(K * d) * sizeof(REAL));
    double *sums = malloc((size_t)(K * d) * sizeof(double));
    double *wsum = malloc((size_t)K * sizeof(double));
    if (!lab || !buf || !sums || !wsum) { st = ML_ERR_ALLOC; goto done; }
    for (ptrdiff_t i = 0; i < n; ++i) lab[i] = -1;

    REAL *C = centers, *C_new = buf;  /* swapped after every update */
    int it, is_strict = 0;
    for (it = 0; it < max_iter; ++it) {
        int64_t changed;
        FN(pass)(&ws, X, w, C, lab, sums, wsum, &changed);
        if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
        st = FN(relocate_empty)(X, w, n, d, K, C, lab, sums, wsum, ws.nt);
        if (st != ML_OK) goto done;
        double shift = 0;
        for (ptrdiff_t k = 0; k < K; ++k)
            for (ptrdiff_t j = 0; j < d; ++j) {
                const REAL v = wsum[k] > 0 ? (REAL)(sums[k * d + j] / wsum[k])
                                           : C[k * d + j];
                const double t = (double)v - (double)C[k * d + j];
                shift += t * t;
                C_new[k * d + j] = v;
            }
        { REAL *t = C; C = C_new; C_new = t; }
        /* Labels unchanged: the new centers are the means of the same
         * partition, a fixed point (scikit-learn's "strict convergence"). */
        if (changed == 0) { is_strict = 1; break; }
        if (shift <= tol) break;
    }
    if (it == max_iter) it = max_iter - 1;
    if (!is_strict) {  /* labels of the final centers */
        int64_t changed;
        FN(pass)(&ws, X, w, C, lab, NULL, NULL, &changed);
        if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
    }
    if (C != centers) memcpy(centers, C, (size_t)(K * d) * sizeof(REAL));
    st = FN(inertia)(X, w, n, d, centers, lab, inertia, ws.nt);
    if (st != ML_OK) goto done;
    FN(lab_out)(lab, n, labels);
    *n_iter = it + 1;
    *strict = is_strict;
done:
    free(buf); free(lab); free(sums); free(wsum);
    FN(work_free)(&ws);
    return st;
}

int FN(ml_kmeans_online)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                         ptrdiff_t K, REAL *centers, int max_iter, double tol,
                         int64_t *labels, double *inertia, int *n_iter,
                         int *strict, GEMM_T gemm, int method, int n_threads)
{
    if (n < 1 || d < 1 || K < 1 || K > n || max_iter < 1 || K > INT32_MAX)
        return ML_ERR_ARG;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 0);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    double *cnt = calloc((size_t)K, sizeof(double));
    double *Cd = malloc((size_t)(K * d) * sizeof(double));
    double *Cprev = malloc((size_t)(K * d) * sizeof(double));
    if (!lab || !cnt || !Cd || !Cprev) { st = ML_ERR_ALLOC; goto done; }
    for (ptrdiff_t i = 0; i < n; ++i) lab[i] = -1;
    /* Centers are kept in float64 during the passes and rounded at the end. */
    for (ptrdiff_t t = 0; t < K * d; ++t) Cd[t] = (double)centers[t];
    int it, is_strict = 0;
    for (it = 0; it < max_iter; ++it) {
        memcpy(Cprev, Cd, (size_t)(K * d) * sizeof(double));
        int64_t changed = 0;
        for (ptrdiff_t i = 0; i < n; ++i) {
            if ((i & 4095) == 0 && ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
            const REAL *x = X + i * d;
            double bs = INFINITY;
            int32_t bk = 0;
            for (ptrdiff_t k = 0; k < K; ++k) {
                const double *c = Cd + k * d;
                double s = 0;
                for (ptrdiff_t j = 0; j < d; ++j) {
                    const double t = (double)x[j] - c[j];
                    s += t * t;
                }
                if (s < bs) { bs = s; bk = (int32_t)k; }
            }
            changed += bk != lab[i];
            lab[i] = bk;
            const double wi = w ? (double)w[i] : 1.0;
            if (!(wi > 0)) continue;
            cnt[bk] += wi;
            const double eta = wi / cnt[bk];
            double *c = Cd + (ptrdiff_t)bk * d;
            for (ptrdiff_t j = 0; j < d; ++j) c[j] += eta * ((double)x[j] - c[j]);
        }
        double shift = 0;
        for (ptrdiff_t t = 0; t < K * d; ++t) {
            const double u = Cd[t] - Cprev[t];
            shift += u * u;
        }
        if (changed == 0) { is_strict = 1; break; }
        if (shift <= tol) break;
    }
    if (it == max_iter) it = max_iter - 1;
    for (ptrdiff_t t = 0; t < K * d; ++t) centers[t] = (REAL)Cd[t];
    {
        int64_t changed;
        FN(pass)(&ws, X, w, centers, lab, NULL, NULL, &changed);
        if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
    }
    st = FN(inertia)(X, w, n, d, centers, lab, inertia, ws.nt);
    if (st != ML_OK) goto done;
    FN(lab_out)(lab, n, labels);
    *n_iter = it + 1;
    *strict = is_strict;
done:
    free(lab); free(cnt); free(Cd); free(Cprev);
    FN(work_free)(&ws);
    return st;
}

int FN(ml_kmeans_assign)(const REAL *X, ptrdiff_t n, ptrdiff_t d,
                         const REAL *centers, ptrdiff_t K, int64_t *labels,
                         REAL *dist, GEMM_T gemm, int method, int n_threads)
{
    if (n < 0 || d < 1 || K < 1 || K > INT32_MAX) return ML_ERR_ARG;
    if (n == 0) return ML_OK;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 0);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    double *dd = dist ? malloc((size_t)n * sizeof(double)) : NULL;
    if (!lab || (dist && !dd)) { st = ML_ERR_ALLOC; goto done; }
    for (ptrdiff_t i = 0; i < n; ++i) lab[i] = -1;
    int64_t changed;
    FN(pass)(&ws, X, NULL, centers, lab, NULL, NULL, &changed);
    if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
    FN(lab_out)(lab, n, labels);
    if (dist) {
        FN(own_dist)(X, n, d, centers, lab, dd, ws.nt);
        for (ptrdiff_t i = 0; i < n; ++i) dist[i] = (REAL)dd[i];
    }
done:
    free(lab); free(dd);
    FN(work_free)(&ws);
    return st;
}

/* k-means++: distances of all rows to T candidates, block by block. */
int FN(ml_kmeans_pp_step)(const REAL *X, const REAL *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          int n_threads)
{
    if (n < 1 || d < 1 || T < 1) return ML_ERR_ARG;
    for (ptrdiff_t t = 0; t < T; ++t)
        if (cand[t] < 0 || cand[t] >= n) return ML_ERR_ARG;
    const ptrdiff_t BL = 2048, nb = (n + BL - 1) / BL;
    int nt = ml_threads(n_threads);
    double *part = malloc((size_t)(nb * T) * sizeof(double));
    double *cd = malloc((size_t)(T * d) * sizeof(double));
    if (!part || !cd) { free(part); free(cd); return ML_ERR_ALLOC; }
    for (ptrdiff_t t = 0; t < T; ++t)
        for (ptrdiff_t j = 0; j < d; ++j) cd[t * d + j] = (double)X[cand[t] * d + j];
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t bi = 0; bi < nb; ++bi) {
        if (ml_interrupted()) continue;
        const ptrdiff_t lo = bi * BL, hi = lo + BL < n ? lo + BL : n;
        for (ptrdiff_t t = 0; t < T; ++t) {
            const double *c = cd + t * d;
            double acc = 0;
            for (ptrdiff_t i = lo; i < hi; ++i) {
                const REAL *x = X + i * d;
                double s = 0;
                for (ptrdiff_t j = 0; j < d; ++j) {
                    const double u = (double)x[j] - c[j];
                    s += u * u;
                }
                s = s < closest[i] ? s : closest[i];
                acc += w ? (double)w[i] * s : s;
            }
            part[bi * T + t] = acc;
        }
    }
    if (ml_interrupted()) { free(part); free(cd); return ML_ERR_INTERRUPTED; }
    ptrdiff_t bt = 0;
    double bpot = INFINITY;
    for (ptrdiff_t t = 0; t < T; ++t) {
        double p = 0;
        for (ptrdiff_t bi = 0; bi < nb; ++bi) p += part[bi * T + t];
        if (p < bpot) { bpot = p; bt = t; }
    }
    const double *c = cd + bt * d;
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t i = 0; i < n; ++i) {
        const REAL *x = X + i * d;
        double s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double u = (double)x[j] - c[j];
            s += u * u;
        }
        if (s < closest[i]) closest[i] = s;
    }
    free(part); free(cd);
    *best = bt;
    *pot = bpot;
    return ML_OK;
}

#undef FN
#undef KM_HAVE_VEC
#undef KM_PREFETCH
#undef KM_CAT
#undef KM_CAT2
