/* The centers-across-lanes kernel of the k-means core for one floating type
 * and one vector width; included by kmeans_impl.h with REAL, REAL_INT, SFX
 * and CV_VB (vector bytes: 16, 32 or 64) defined, inside its contraction
 * region.  See kmeans_impl.h ("The centers-across-lanes kernel") for the
 * layout and the contract.
 *
 * A step is P points by one block of W = Q * VL centers (VL lanes per
 * vector): P x Q vector accumulators start at the block's norms, and for
 * each coordinate j the Q vectors of -2 c_.j (one L1 row of the packed
 * block) are multiplied by x_pj broadcast straight from the row-major X and
 * added (one fused multiply-add per accumulator).  Every lane keeps its
 * running minimum and the index of the center that gave it (strict <, so
 * ties stay with the lower index); after the last block the lanes are
 * reduced once per point: the minimum value, then the lowest index among
 * the lanes that hold it. */

#define CV_CAT3_(a, b, c) a##_##b##_##c
#define CV_CAT3(a, b, c) CV_CAT3_(a, b, c)
#define CVN(name) CV_CAT3(name, SFX, CV_VB)
#define CV_VL ((int)(CV_VB / sizeof(REAL)))
/* x86 with SSE (16-byte vectors) or AVX (32, on the x86-64-v3 and v4
 * clones): cv_first_min's instructions, as intrinsics (GCC declares the AVX
 * builtins only where AVX is enabled), and its target. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && CV_VB == 16
#include <immintrin.h>
#define CV_X86 1
#define CV_TGT
#define CV_MINPS(a, b) _mm_min_ps((__m128)(a), (__m128)(b))
#define CV_MINPD(a, b) _mm_min_pd((__m128d)(a), (__m128d)(b))
#define CV_MAXPS(a, b) _mm_max_ps((__m128)(a), (__m128)(b))
#define CV_MAXPD(a, b) _mm_max_pd((__m128d)(a), (__m128d)(b))
#define CV_MOVMSK(v) _mm_movemask_ps((__m128)(v))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && CV_VB == 32 && \
    ML_HAVE_CLONES
/* GCC only: zig's Clang rejected the AVX intrinsics in the portable
 * per-level copies ("'_mm256_min_pd' requires target feature 'avx'" in
 * cv_first_min), so Clang builds keep the selects below (the same labels). */
#include <immintrin.h>
#define CV_X86 1
#define CV_TGT ML_TARGET_V3
#define CV_MINPS(a, b) _mm256_min_ps((__m256)(a), (__m256)(b))
#define CV_MINPD(a, b) _mm256_min_pd((__m256d)(a), (__m256d)(b))
#define CV_MAXPS(a, b) _mm256_max_ps((__m256)(a), (__m256)(b))
#define CV_MAXPD(a, b) _mm256_max_pd((__m256d)(a), (__m256d)(b))
#define CV_MOVMSK(v) _mm256_movemask_ps((__m256)(v))
#else
#define CV_X86 0
#define CV_TGT
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define CV_UNROLL _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define CV_UNROLL _Pragma("unroll")
#else
#define CV_UNROLL
#endif

typedef REAL CVN(km_cv) __attribute__((vector_size(CV_VB)));
typedef REAL_INT CVN(km_cvi) __attribute__((vector_size(CV_VB)));

/* The smaller and the larger of two vectors, lane by lane: x < y ? x : y and
 * y < x ? x : y (y where the two are equal or one is NaN).  On x86 (CV_X86)
 * one minps/minpd or maxps/maxpd, which Zen 4 issues beside the
 * multiply-adds (a compare and a select would be two instructions, the
 * select on the FMA pipes); elsewhere the compare and the select. */
#if CV_X86
#define CV_VMIN(x, y) (sizeof(REAL) == 4 ? (CVN(km_cv))CV_MINPS(x, y) : (CVN(km_cv))CV_MINPD(x, y))
#define CV_VMAX(x, y) (sizeof(REAL) == 4 ? (CVN(km_cv))CV_MAXPS(x, y) : (CVN(km_cv))CV_MAXPD(x, y))
#else
#define CV_VSEL(m, x, y) \
    ((CVN(km_cv))(((CVN(km_cvi))(m) & (CVN(km_cvi))(x)) | (~(CVN(km_cvi))(m) & (CVN(km_cvi))(y))))
#define CV_VMIN(x, y) CV_VSEL((x) < (y), x, y)
#define CV_VMAX(x, y) CV_VSEL((y) < (x), x, y)
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  /* GCC 12 sees the unrolled arrays as unset */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* The P x Q accumulators of one block start at its norms (row 0). */
static ML_ALWAYS_INLINE void
CVN(cv_acc_init)(CVN(km_cv) acc[KM_CV_MAXP][KM_CV_MAXQ],
                 const REAL *ML_RESTRICT cb, const int P, const int Q)
{
    CV_UNROLL
    for (int q = 0; q < Q; ++q) {
        CVN(km_cv) nq;
        memcpy(&nq, cb + q * CV_VL, sizeof nq);
        CV_UNROLL
        for (int p = 0; p < P; ++p) acc[p][q] = nq;
    }
}

/* acc[p][q] += x_pj (-2 c_.j) for j = 0..d-1 in order, the Q vectors of row
 * 1 + j of the block (cj: row 1) shared by the P points; the cache lines
 * pf + 64 t, t < npf, are prefetched one per coordinate (the screen's kernel,
 * whose rows come from memory in float64; npf = 0: none). */
static ML_ALWAYS_INLINE void
CVN(cv_acc_dot)(CVN(km_cv) acc[KM_CV_MAXP][KM_CV_MAXQ],
                const REAL *xp[KM_CV_MAXP], const REAL *ML_RESTRICT cj,
                const ptrdiff_t d, const ptrdiff_t W, const int P, const int Q,
                const char *pf, const ptrdiff_t npf)
{
    typedef CVN(km_cv) V;
    ptrdiff_t tp = 0;  /* next line to prefetch: spread over the coordinates */
    for (ptrdiff_t j = 0; j < d; ++j, cj += W) {
        if (tp < npf && tp * d <= j * npf) ML_PREFETCH(pf + 64 * tp++);
        V c[KM_CV_MAXQ];
        CV_UNROLL
        for (int q = 0; q < Q; ++q) memcpy(&c[q], cj + q * CV_VL, sizeof c[q]);
        CV_UNROLL
        for (int p = 0; p < P; ++p) {
            const V xb = xp[p][j] - (V){0};
            CV_UNROLL
            for (int q = 0; q < Q; ++q) acc[p][q] += xb * c[q];
        }
    }
    if (npf > 0)
        for (; tp < npf; ++tp) ML_PREFETCH(pf + 64 * tp);
}

/* Each lane's running minimum and center index take block blk's scores
 * (strict <, in increasing q: ties stay with the lower index); `first`
 * (blk == 0, a constant at each call) starts them.  With
 * the trip count a constant, Clang unrolls the q loop (it did not where
 * the first block's test was made inside: -Wpass-failed). */
static ML_ALWAYS_INLINE void
CVN(cv_acc_min)(CVN(km_cv) acc[KM_CV_MAXP][KM_CV_MAXQ],
                CVN(km_cv) bs[KM_CV_MAXP], CVN(km_cvi) bk[KM_CV_MAXP],
                const CVN(km_cvi) *lane, const ptrdiff_t blk, const ptrdiff_t W,
                const int P, const int Q, const int first)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    CV_UNROLL
    for (int p = 0; p < P; ++p) {
        if (first) {
            bs[p] = acc[p][0];
            bk[p] = *lane;
        }
        CV_UNROLL
        for (int q = first ? 1 : 0; q < Q; ++q) {
            const VI lt = (VI)(acc[p][q] < bs[p]);
            const VI kv = *lane + (REAL_INT)(blk * W + q * CV_VL);
            bs[p] = (V)((lt & (VI)acc[p][q]) | (~lt & (VI)bs[p]));
            bk[p] = (lt & kv) | (~lt & bk[p]);
        }
    }
}

/* The label of one point from its lanes: the minimum value, then the lowest
 * center index among the lanes that hold it. */
static ML_ALWAYS_INLINE int32_t
CVN(cv_lane_argmin)(const CVN(km_cv) *bsp, const CVN(km_cvi) *bkp,
                    const CVN(km_cvi) *lanep)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    const VI big = (REAL_INT)INT32_MAX - (VI){0};
    const V bs = *bsp;
    const VI bk = *bkp, lane = *lanep;
    V v = bs;
    CV_UNROLL
    for (int s = CV_VL / 2; s >= 1; s /= 2) {
        const V t = ML_SHUFFLE(v, lane ^ s);
        const VI lt = (VI)(t < v);
        v = (V)((lt & (VI)t) | (~lt & (VI)v));
    }
    const VI eq = (VI)(bs == v);
    VI k = (eq & bk) | (~eq & big);
    CV_UNROLL
    for (int s = CV_VL / 2; s >= 1; s /= 2) {
        const VI t = ML_SHUFFLE(k, lane ^ s);
        const VI lt = (VI)(t < k);
        k = (lt & t) | (~lt & k);
    }
    return (int32_t)k[0];
}

/* The label of one point from its Q score vectors when the centers are one
 * block (nb = 1: center q CV_VL + l in lane l of vector q) on x86 (CV_X86):
 * the smallest score m (a tree of minps/minpd, then across the lanes), the
 * vectors' lanes equal to m as one integer of sign bits (movmskps: one bit
 * per 4 bytes, so a float64 lane gives two), and its lowest set bit: the
 * lowest center index with the smallest score.  Without NaN scores (the
 * callers reject non-finite data and bound its magnitude) that is the label
 * cv_acc_min and cv_lane_argmin give (each lane's first minimum in
 * increasing q, then the lowest index among the lanes that hold the
 * minimum: the same first minimum), for about half their vector operations:
 * a minimum is one instruction where a strict < and its two selects are
 * three, and the index search runs on the integer units.  No equal lane
 * (NaN scores only): label 0, in range. */
#if CV_X86
CV_TGT static ML_ALWAYS_INLINE int32_t
CVN(cv_first_min)(const CVN(km_cv) *a, const CVN(km_cvi) *lanep, const int Q)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    V m = Q >= 2 ? CV_VMIN(a[0], a[1]) : a[0];
    if (Q == 4) m = CV_VMIN(m, CV_VMIN(a[2], a[3]));
    else if (Q == 3) m = CV_VMIN(m, a[2]);
    CV_UNROLL
    for (int s = CV_VL / 2; s >= 1; s /= 2) m = CV_VMIN(ML_SHUFFLE(m, *lanep ^ s), m);
    uint64_t bits = 0;
    CV_UNROLL
    for (int q = 0; q < Q; ++q)
        bits |= (uint64_t)(unsigned)CV_MOVMSK((VI)(a[q] == m)) << (q * (CV_VB / 4));
    return bits ? (int32_t)(__builtin_ctzll(bits) / (sizeof(REAL) / 4)) : 0;
}
#endif

/* t[k] lane p = a[p] lane k for CV_VL vectors: log2 CV_VL rounds of
 * two-source interleaves (constant patterns), in registers. */
static ML_ALWAYS_INLINE void
CVN(cv_transpose)(const CVN(km_cv) *ML_RESTRICT a, CVN(km_cv) *ML_RESTRICT t)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    VI lo, hi;
    CV_UNROLL
    for (int i = 0; i < CV_VL / 2; ++i) {
        lo[2 * i] = i;
        lo[2 * i + 1] = CV_VL + i;
        hi[2 * i] = CV_VL / 2 + i;
        hi[2 * i + 1] = CV_VL + CV_VL / 2 + i;
    }
    V r[CV_VL], nr[CV_VL];
    CV_UNROLL
    for (int p = 0; p < CV_VL; ++p) r[p] = a[p];
    CV_UNROLL
    for (int h = 1; h < CV_VL; h *= 2) {
        CV_UNROLL
        for (int i = 0; i < CV_VL / 2; ++i) {
            nr[2 * i] = ML_SHUFFLE2(r[i], r[i + CV_VL / 2], lo);
            nr[2 * i + 1] = ML_SHUFFLE2(r[i], r[i + CV_VL / 2], hi);
        }
        CV_UNROLL
        for (int p = 0; p < CV_VL; ++p) r[p] = nr[p];
    }
    CV_UNROLL
    for (int k = 0; k < CV_VL; ++k) t[k] = r[k];
}

/* Labels of CV_VL points at once when the centers are one vector (K <=
 * CV_VL, center k in lane k; a[p]: point p's scores): the scores
 * transposed (lane p of t[k]: point p, center k), then the centers compared
 * in increasing k with a strict <, as the tile does: each point's first
 * minimum, the label cv_lane_argmin gives, for CV_VL points in CV_VL - 1
 * compare-and-selects instead of two lane reductions per point.  The n
 * labels (n <= CV_VL) go to lab. */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_batch_argmin)(const CVN(km_cv) *ML_RESTRICT a, const ptrdiff_t n,
                     int32_t *ML_RESTRICT lab)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    typedef int32_t VL32 __attribute__((vector_size(CV_VL * 4)));
    V t[CV_VL];
    CVN(cv_transpose)(a, t);
    V bs = t[0];
    VI bk = (VI){0};
    CV_UNROLL
    for (int k = 1; k < CV_VL; ++k) {
        const VI lt = (VI)(t[k] < bs);
        bs = CV_VMIN(t[k], bs);
        bk ^= lt & (bk ^ (REAL_INT)k);
    }
    const VL32 l = __builtin_convertvector(bk, VL32);
    if (n == CV_VL) {
        memcpy(lab, &l, sizeof l);
        return;
    }
    for (ptrdiff_t p = 0; p < n; ++p) lab[p] = l[p];
}

/* cv_body for one block of one vector (K <= CV_VL, nb = 1): the same
 * scores, the labels from cv_batch_argmin, CV_VL points at a time (P a
 * multiple of CV_VL).  With `sums`, the rows are also added to their
 * clusters' sums in sacc (accum_row: the rows in order, each to the copy
 * and with the operations accum gives it, so the sums are accum's bit for
 * bit), each step's rows after the next step's scores: their labels are
 * known by then, and the additions overlap that step's reduction and the
 * multiply-adds after it instead of making a second pass over the chunk. */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_body1)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w,
              ptrdiff_t m, const ptrdiff_t d, const REAL *ML_RESTRICT ct,
              int32_t *ML_RESTRICT lab, double *ML_RESTRICT sacc,
              const ptrdiff_t copies, const ptrdiff_t stride, const ptrdiff_t K,
              const int P, const int sums)
{
    typedef CVN(km_cv) V;
    ptrdiff_t done = 0;  /* rows summed so far */
    for (ptrdiff_t b0 = 0; b0 < m; b0 += P) {
        const ptrdiff_t np = m - b0 < P ? m - b0 : P;
        const REAL *xp[KM_CV1_MAXP];
        /* Rows past the chunk's end repeat its row b0 (labels discarded). */
        CV_UNROLL
        for (int p = 0; p < P; ++p) xp[p] = X + (b0 + (p < np ? p : 0)) * d;
        V acc[KM_CV1_MAXP][KM_CV_MAXQ];
        CVN(cv_acc_init)(acc, ct, P, 1);
        CVN(cv_acc_dot)(acc, xp, ct + CV_VL, d, CV_VL, P, 1, NULL, 0);
        CV_UNROLL
        for (int g = 0; g < P; g += CV_VL) {
            if (g >= np) break;
            V a[CV_VL];
            CV_UNROLL
            for (int i = 0; i < CV_VL; ++i) a[i] = acc[g + i][0];
            CVN(cv_batch_argmin)(a, np - g < CV_VL ? np - g : CV_VL, lab + b0 + g);
        }
        if (sums)
            for (; done < b0; ++done)
                FN(accum_row)(X, w, done, d, lab[done], sacc, copies, stride, K);
    }
    if (sums)
        for (; done < m; ++done)
            FN(accum_row)(X, w, done, d, lab[done], sacc, copies, stride, K);
}

/* The screen's variant (kmeans_impl.h, screen_rows; and the pruned pass's,
 * cv_body below): each lane also keeps its second-best score (s2: the
 * smallest score that is not its running minimum, strict < as above: an
 * equal score goes to s2), so that the lanes give the two smallest scores
 * of the point. */
/* The best and second best are taken with CV_VMIN and CV_VMAX (one
 * instruction each on x86): the values of the strict < and its selects for
 * finite scores (the only rows the screen settles: screen_rows), and best's
 * lane index from the strict < as before. */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_acc_min2)(CVN(km_cv) acc[KM_CV_MAXP][KM_CV_MAXQ],
                 CVN(km_cv) bs[KM_CV_MAXP], CVN(km_cv) s2[KM_CV_MAXP],
                 CVN(km_cvi) bk[KM_CV_MAXP], const CVN(km_cvi) *lane,
                 const ptrdiff_t blk, const ptrdiff_t W, const int P, const int Q,
                 const int first)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    CV_UNROLL
    for (int p = 0; p < P; ++p) {
        if (first) {
            bs[p] = acc[p][0];
            bk[p] = *lane;
            s2[p] = (REAL)INFINITY - (V){0};
        }
        CV_UNROLL
        for (int q = first ? 1 : 0; q < Q; ++q) {
            const V a = acc[p][q];
            const VI lt = (VI)(a < bs[p]);
            const VI kv = *lane + (REAL_INT)(blk * W + q * CV_VL);
            s2[p] = CV_VMIN(CV_VMAX(a, bs[p]), s2[p]);
            bs[p] = CV_VMIN(a, bs[p]);
            bk[p] = (lt & kv) | (~lt & bk[p]);
        }
    }
}

/* The two smallest scores of one point from its lanes' (best, second,
 * index) triples, merged pairwise: (b1, s1) and (b2, s2) give min(b1, b2)
 * and min(max(b1, b2), s1, s2), exactly (an equal best in two lanes makes
 * the second equal to the best), and the index of the lane whose best is
 * the smaller.  The label is that of a center with the smallest score; it
 * is the float64 kernel's only where the screen settles the row, and there
 * the smallest score is unique (second > best), so no tie rule is needed. */
CV_TGT static ML_ALWAYS_INLINE int32_t
CVN(cv_lane_min2)(const CVN(km_cv) *bsp, const CVN(km_cv) *s2p,
                  const CVN(km_cvi) *bkp, const CVN(km_cvi) *lanep,
                  REAL *best, REAL *second)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    const VI lane = *lanep;
    V b = *bsp, s = *s2p;
#if CV_X86
    /* Minima and maxima (CV_VMIN): every lane ends with the two smallest,
     * and the label is that of the lowest lane whose best is the smallest
     * (unique where the row is settled). */
    CV_UNROLL
    for (int sh = CV_VL / 2; sh >= 1; sh /= 2) {
        const V tb = ML_SHUFFLE(b, lane ^ sh), ts = ML_SHUFFLE(s, lane ^ sh);
        s = CV_VMIN(CV_VMIN(s, ts), CV_VMAX(b, tb));
        b = CV_VMIN(b, tb);
    }
    *best = b[0];
    *second = s[0];
    const unsigned bits = (unsigned)CV_MOVMSK((VI)(*bsp == b));
    return bits ? (int32_t)(*bkp)[__builtin_ctz(bits) / (sizeof(REAL) / 4)] : 0;
#else
    VI k = *bkp;
    CV_UNROLL
    for (int sh = CV_VL / 2; sh >= 1; sh /= 2) {
        const V tb = ML_SHUFFLE(b, lane ^ sh), ts = ML_SHUFFLE(s, lane ^ sh);
        const VI tk = ML_SHUFFLE(k, lane ^ sh);
        const VI lb = (VI)(tb < b), ls = (VI)(ts < s);
        const V lo = (V)((lb & (VI)tb) | (~lb & (VI)b));
        const V hi = (V)((lb & (VI)b) | (~lb & (VI)tb));
        const V sm = (V)((ls & (VI)ts) | (~ls & (VI)s));
        const VI lh = (VI)(hi < sm);
        s = (V)((lh & (VI)hi) | (~lh & (VI)sm));
        k = (lb & tk) | (~lb & k);
        b = lo;
    }
    *best = b[0];
    *second = s[0];
    return (int32_t)k[0];
#endif
}

/* One float64 row x, translated by t unless t is NULL (x - t in float64),
 * rounded to REAL into y, and the (translated) row's squared norm in float64
 * (summed in 8 lanes: the screen's bound allows any order).  tr: t != NULL,
 * a constant in each of cv_row_in's two calls, so that an untranslated row
 * costs no loads of t. */
static ML_ALWAYS_INLINE double
CVN(cv_row_in_tr)(const double *ML_RESTRICT x, const double *ML_RESTRICT t,
                  REAL *ML_RESTRICT y, const ptrdiff_t d, const int tr)
{
    typedef double D4 __attribute__((vector_size(32)));
    typedef REAL R4 __attribute__((vector_size(4 * sizeof(REAL))));
    D4 a0 = {0}, a1 = {0};
    ptrdiff_t j = 0;
    for (; j + 8 <= d; j += 8) {
        D4 v0, v1;
        memcpy(&v0, x + j, sizeof v0);
        memcpy(&v1, x + j + 4, sizeof v1);
        if (tr) {
            D4 t0, t1;
            memcpy(&t0, t + j, sizeof t0);
            memcpy(&t1, t + j + 4, sizeof t1);
            v0 -= t0;
            v1 -= t1;
        }
        a0 += v0 * v0;
        a1 += v1 * v1;
        const R4 f0 = __builtin_convertvector(v0, R4), f1 = __builtin_convertvector(v1, R4);
        memcpy(y + j, &f0, sizeof f0);
        memcpy(y + j + 4, &f1, sizeof f1);
    }
    a0 += a1;
    double s = (a0[0] + a0[1]) + (a0[2] + a0[3]);
    for (; j < d; ++j) {
        const double v = tr ? x[j] - t[j] : x[j];
        s += v * v;
        y[j] = (REAL)v;
    }
    return s;
}

static ML_ALWAYS_INLINE double
CVN(cv_row_in)(const double *ML_RESTRICT x, const double *ML_RESTRICT t,
               REAL *ML_RESTRICT y, const ptrdiff_t d)
{
    return t ? CVN(cv_row_in_tr)(x, t, y, d, 1) : CVN(cv_row_in_tr)(x, NULL, y, d, 0);
}

/* The screen's kernel: cv_body for float64 rows X, translated by t (none
 * where t is NULL), scored in REAL.  Each step first rounds its P rows into
 * x32 (P x d in REAL, reused every step: the float32 rows are dead after
 * their step, and stay in L1) and takes their squared norms (xn, float64),
 * so that the rows' reads from memory
 * stay interleaved with the multiply-adds as in cv_body; each point's best
 * and second-best score go to best[] and second[] beside its label. */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_body2)(const double *ML_RESTRICT X, const double *ML_RESTRICT t,
              ptrdiff_t m, const ptrdiff_t d,
              const REAL *ML_RESTRICT ct, ptrdiff_t nb, REAL *ML_RESTRICT x32,
              int32_t *ML_RESTRICT lab, REAL *ML_RESTRICT best,
              REAL *ML_RESTRICT second, double *ML_RESTRICT xn, const int P,
              const int Q)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    const ptrdiff_t W = (ptrdiff_t)Q * CV_VL, bstride = (d + 1) * W;
    VI lane;
    CV_UNROLL
    for (int l = 0; l < CV_VL; ++l) lane[l] = l;
    for (ptrdiff_t b0 = 0; b0 < m; b0 += P) {
        const ptrdiff_t np = m - b0 < P ? m - b0 : P;
        for (ptrdiff_t p = 0; p < np; ++p)
            xn[b0 + p] = CVN(cv_row_in)(X + (b0 + p) * d, t, x32 + p * d, d);
        /* The rows KM_CV_PREFETCH steps ahead (past m: the next chunk's,
         * which follow in memory; a prefetch never faults), one cache line
         * per coordinate of the first block (cv_acc_dot). */
        const char *pf = (const char *)(X + (b0 + KM_CV_PREFETCH * P) * d);
        const ptrdiff_t npf = (ptrdiff_t)(P * d * sizeof(double) / 64);
        const REAL *xp[KM_CV_MAXP];
        CV_UNROLL
        for (int p = 0; p < P; ++p) xp[p] = x32 + (p < np ? p : 0) * d;
        V bs[KM_CV_MAXP], s2[KM_CV_MAXP];
        VI bk[KM_CV_MAXP];
        for (ptrdiff_t blk = 0; blk < nb; ++blk) {
            const REAL *cb = ct + blk * bstride;
            V acc[KM_CV_MAXP][KM_CV_MAXQ];
            CVN(cv_acc_init)(acc, cb, P, Q);
            CVN(cv_acc_dot)(acc, xp, cb + W, d, W, P, Q, pf, blk == 0 ? npf : 0);
            if (blk == 0)
                CVN(cv_acc_min2)(acc, bs, s2, bk, &lane, 0, W, P, Q, 1);
            else
                CVN(cv_acc_min2)(acc, bs, s2, bk, &lane, blk, W, P, Q, 0);
        }
        CV_UNROLL
        for (int p = 0; p < np; ++p) {
            lab[b0 + p] = CVN(cv_lane_min2)(&bs[p], &s2[p], &bk[p], &lane, best + b0 + p,
                                            second + b0 + p);
        }
    }
}
/* cv_acc_min, or with `with2` cv_acc_min2 (second-best scores too), for
 * block blk (`first` a constant at each call: see cv_acc_min). */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_acc_take)(CVN(km_cv) acc[KM_CV_MAXP][KM_CV_MAXQ],
                 CVN(km_cv) bs[KM_CV_MAXP], CVN(km_cv) s2[KM_CV_MAXP],
                 CVN(km_cvi) bk[KM_CV_MAXP], const CVN(km_cvi) *lane,
                 const ptrdiff_t blk, const ptrdiff_t W, const int P, const int Q,
                 const int first, const int with2)
{
    if (with2)
        CVN(cv_acc_min2)(acc, bs, s2, bk, lane, blk, W, P, Q, first);
    else
        CVN(cv_acc_min)(acc, bs, bk, lane, blk, W, P, Q, first);
}

/* The labels of a chunk (lab; see the top of this file), and with `with2`
 * (the pruned pass: kmeans_impl.h, assign_rows) each point's best and
 * second-best score in best[] and second[] too (cv_acc_min2, cv_lane_min2:
 * the tile's values, the scores being the same bits), which reset its
 * bounds; the label then still comes from cv_lane_argmin (the lowest index
 * among the lanes that hold the minimum: the tile's tie rule, which the
 * screen's lane reduction does not keep).  The pruned pass ran the tile
 * before, 1.04-1.43 times slower (d = 16 and 64, K = 64 to 1024). */
CV_TGT static ML_ALWAYS_INLINE void
CVN(cv_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
             const REAL *ML_RESTRICT ct, ptrdiff_t nb, int32_t *ML_RESTRICT lab,
             REAL *ML_RESTRICT best, REAL *ML_RESTRICT second, const int P,
             const int Q, const int with2)
{
    typedef CVN(km_cv) V;
    typedef CVN(km_cvi) VI;
    const ptrdiff_t W = (ptrdiff_t)Q * CV_VL, bstride = (d + 1) * W;
    VI lane;
    CV_UNROLL
    for (int l = 0; l < CV_VL; ++l) lane[l] = l;
    for (ptrdiff_t b0 = 0; b0 < m; b0 += P) {
        const ptrdiff_t np = m - b0 < P ? m - b0 : P;
        const REAL *xp[KM_CV_MAXP];
        /* Rows past the chunk's end repeat its row b0 (results discarded). */
        CV_UNROLL
        for (int p = 0; p < P; ++p) xp[p] = X + (b0 + (p < np ? p : 0)) * d;
#if CV_X86
        if (!with2 && nb == 1) {  /* one block: cv_first_min, the same labels */
            V acc[KM_CV_MAXP][KM_CV_MAXQ];
            CVN(cv_acc_init)(acc, ct, P, Q);
            CVN(cv_acc_dot)(acc, xp, ct + W, d, W, P, Q, NULL, 0);
            CV_UNROLL
            for (int p = 0; p < np; ++p) lab[b0 + p] = CVN(cv_first_min)(acc[p], &lane, Q);
            continue;
        }
#endif
        V bs[KM_CV_MAXP], s2[KM_CV_MAXP];
        VI bk[KM_CV_MAXP];
        for (ptrdiff_t blk = 0; blk < nb; ++blk) {
            const REAL *cb = ct + blk * bstride;
            V acc[KM_CV_MAXP][KM_CV_MAXQ];
            CVN(cv_acc_init)(acc, cb, P, Q);
            CVN(cv_acc_dot)(acc, xp, cb + W, d, W, P, Q, NULL, 0);
            if (blk == 0)
                CVN(cv_acc_take)(acc, bs, s2, bk, &lane, 0, W, P, Q, 1, with2);
            else
                CVN(cv_acc_take)(acc, bs, s2, bk, &lane, blk, W, P, Q, 0, with2);
        }
        CV_UNROLL
        for (int p = 0; p < np; ++p) {
            if (with2)
                (void)CVN(cv_lane_min2)(&bs[p], &s2[p], &bk[p], &lane, best + b0 + p,
                                        second + b0 + p);
            lab[b0 + p] = CVN(cv_lane_argmin)(&bs[p], &bk[p], &lane);
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#undef CV_X86
#undef CV_VMIN
#undef CV_VMAX
#undef CV_VSEL
#undef CV_TGT
#undef CV_MINPS
#undef CV_MINPD
#undef CV_MAXPS
#undef CV_MAXPD
#undef CV_MOVMSK
#undef CV_CAT3_
#undef CV_CAT3
#undef CVN
#undef CV_VL
#undef CV_UNROLL
