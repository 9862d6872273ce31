/* The int16 screen of the k-means core's float32 passes (AVX-512 VNNI).
 *
 * A chunk's rows and the centers are rounded to integers, the rows with one
 * power-of-two scale per chunk (sigma), the centers with one per pass (rho),
 * and every score is an exact integer dot product (vpdpwssd: 32 products of
 * int16 pairs per instruction, against 16 float32 multiply-adds).  With q
 * the row's integers, p_k the center's, the exact products
 * I_k = sum_j q_j p_kj and h = 1 / (2 sigma rho), the screen's score of
 * center k is a_k = cn_k h - I_k (float32, one rounding each for the
 * conversion of I_k and the multiply-subtract), and
 *
 *   |a_k - S_k h| <= E = q1 / 2 + C1 / (2 rho) + u' (cnmax h + 2 Pmax q1)
 *                        + gamma_d (cnmax + 2 mx C1) h,
 *
 * where S_k = cn_k - 2 x.c_k is the float32 kernel's score (its norm cn_k
 * plus x_j (-2 c_kj) in j order, fused) in exact arithmetic, q1 = ||q||_1,
 * C1 = max_k ||c_k||_1, cnmax = max_k cn_k, Pmax >= max |p_kj|, mx >= the
 * chunk's max |x_j|, u' = 2^-23 (twice float32's unit roundoff, so that the
 * bound holds in any rounding mode) and gamma_d = d u' / (1 - d u') (the
 * float32 kernel's own rounding: d fused steps).  The first two terms are
 * the rounding of the rows and the centers (|x_j - sigma q_j| <= sigma / 2
 * and |c_kj - rho p_kj| <= rho / 2: both scales powers of two, the rows
 * rounded to nearest explicitly); the third the screen's float32
 * arithmetic; the last the float32 kernel's.  So where the gap between a
 * row's second-best and best screen scores exceeds 2 E, the float32 kernel
 * picks the screen's best center, strictly: its label, bit for bit.  The
 * other rows are left open for the float32 kernel (kmeans_impl.h,
 * screen_rows and screen_pruned).
 *
 * The integers stay exact: |q_j| <= 2^bq, |p_kj| <= 2^bc with
 * 2^(bq + bc) 2 ceil(d / 2) < 2^31 (vpdpwssd wraps modulo 2^32, so only the
 * total has to fit int32).  Compiled only with GCC or Clang for x86-64
 * (ML_Q16_BUILT); elsewhere ml_q16_available() is 0 and nothing calls the
 * rest.
 *
 * Included by kmeans.c only (every function static: the portable dispatch
 * compiles kmeans.c once per ISA level, and each copy keeps its own). */
#ifndef METRICLUST_KMEANS_Q16_H
#define METRICLUST_KMEANS_Q16_H
#include "common.h"
#include "dispatch.h"
#include "kmeans.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && !defined(_MSC_VER) && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 9))
#define ML_Q16_BUILT 1
#else
#define ML_Q16_BUILT 0
#endif

/* Centers per block: 4 vectors of 16 int32 lanes. */
#define ML_Q16_BLOCK 64

/* One pass's centers for the screen (ml_q16_prep). */
typedef struct {
    ptrdiff_t d, d2, K, nb; /* d2 = ceil(d / 2) coordinate pairs; nb blocks */
    int Q;                  /* center vectors per block: 1, 2 or 4 */
    int bq, bc;             /* the rows' and centers' integer bits */
    int ec;                 /* rho = 2^ec */
    int on;                 /* this pass can be screened (centers in range) */
    int32_t *cp;            /* nb x d2 x 16 Q: the pairs (p_k,2j, p_k,2j+1) */
    float *cn;              /* nb x 16 Q: the norms, +inf for padding */
    double C1, cnmax, gam;  /* the bound's constants (above) */
    /* The rows' integers kept between the passes of a fit (ml_q16_keep):
     * chunk c's rows at rq + c (ML_KM_CHUNK + Q16_MAXP) 2 d2 (each slot with
     * room for a step's rows past its last: Q16_MAXP), their ||q||_1 in rq1, its largest |x| as a bit
     * pattern in rbits[c] (UINT32_MAX: not yet rounded); NULL: none. */
    int16_t *rq;
    int32_t *rq1;
    uint32_t *rbits;
} ml_q16_centers;

/* Whether this CPU and build run the screen: AVX-512 (the dispatch level,
 * so METRICLUST_MAX_SIMD caps it) with VNNI, unless METRICLUST_Q16=0. */
static int ml_q16_available(void);
/* Storage for K centers of d coordinates; ML_OK or ML_ERR_ALLOC. */
static int ml_q16_init(ml_q16_centers *qc, ptrdiff_t d, ptrdiff_t K);
static void ml_q16_free(ml_q16_centers *qc);
/* The pass's centers C (K x d) and the float32 kernel's norms cn (K). */
static void ml_q16_prep(ml_q16_centers *qc, const float *C, const float *cn);
/* Bytes of per-thread scratch that ml_q16_screen needs (64-byte aligned
 * start expected). */
static size_t ml_q16_scratch_bytes(ptrdiff_t d);
/* The screen of m <= ML_KM_CHUNK rows (ML_KM_CHUNK: kmeans.h), chunk
 * `chunk` of the fit's rows (their integers kept, ml_q16_keep) or -1 (not a
 * chunk: rows gathered from several): lab[b] the
 * screen's label of row b, ok[b] whether the bound proves it the float32
 * kernel's, margin[b] (may be NULL) a lower bound on the row's squared
 * distance to its second-nearest center less that to its nearest (where
 * ok; -inf elsewhere).  Returns the number of rows left open. */
static ptrdiff_t ml_q16_screen(const ml_q16_centers *qc, const float *X,
                               ptrdiff_t m, ptrdiff_t chunk, void *scratch,
                               int32_t *lab, int64_t *ok, double *margin);

/* ------------------------------------------------------------------------- */
#define Q16_CHUNK ML_KM_CHUNK
/* Rows per step (P): P Q accumulators, at least 12 so that the
 * multiply-adds' latency (5 cycles, 2 per cycle) is covered, Q center
 * vectors and a broadcast within the 32 registers. */
#define Q16_MAXP 12

static int q16_ceil_log2(ptrdiff_t v)
{
    int b = 0;
    while (((ptrdiff_t)1 << b) < v) ++b;
    return b;
}

static void ml_q16_free(ml_q16_centers *qc)
{
    free(qc->cp);
    free(qc->cn);
    free(qc->rq);
    free(qc->rq1);
    free(qc->rbits);
    qc->cp = NULL;
    qc->cn = NULL;
    qc->rq = NULL;
    qc->rq1 = NULL;
    qc->rbits = NULL;
}

/* Keep the integers of n rows between passes (a fit's second pass asks:
 * its rows do not change, and rounding them again each pass took 13% of
 * the samples at d = 64, K = 64).  Half the rows' float32 bytes; without
 * the memory the screen rounds each pass, with the same integers. */
static void ml_q16_keep(ml_q16_centers *qc, ptrdiff_t n)
{
    if (qc->rq) return;
    const ptrdiff_t nc = (n + Q16_CHUNK - 1) / Q16_CHUNK;
    qc->rq = calloc((size_t)(nc * (Q16_CHUNK + Q16_MAXP) * 2 * qc->d2), sizeof(int16_t));
    qc->rq1 = malloc((size_t)(nc * Q16_CHUNK) * sizeof(int32_t));
    qc->rbits = malloc((size_t)nc * sizeof(uint32_t));
    if (!qc->rq || !qc->rq1 || !qc->rbits) {
        free(qc->rq); free(qc->rq1); free(qc->rbits);
        qc->rq = NULL; qc->rq1 = NULL; qc->rbits = NULL;
        return;
    }
    for (ptrdiff_t c = 0; c < nc; ++c) qc->rbits[c] = UINT32_MAX;
}

static int ml_q16_init(ml_q16_centers *qc, ptrdiff_t d, ptrdiff_t K)
{
    memset(qc, 0, sizeof *qc);
    qc->d = d;
    qc->d2 = (d + 1) / 2;
    qc->K = K;
    qc->Q = K <= 16 ? 1 : K <= 32 ? 2 : 4;
    const ptrdiff_t W = 16 * qc->Q;
    qc->nb = (K + W - 1) / W;
    /* 2^(bq + bc) (2 d2) <= 2^30 < 2^31; int16 holds +-2^14. */
    const int room = 30 - q16_ceil_log2(2 * qc->d2);
    qc->bq = room / 2 < 14 ? room / 2 : 14;
    qc->bc = room - qc->bq < 14 ? room - qc->bq : 14;
    qc->gam = (double)d * 0x1p-23 / (1 - (double)d * 0x1p-23);
    qc->cp = malloc((size_t)(qc->nb * qc->d2 * W) * sizeof(int32_t) + 64);
    qc->cn = malloc((size_t)(qc->nb * W) * sizeof(float) + 64);
    if (!qc->cp || !qc->cn || qc->bq < 6 || qc->bc < 6) {
        ml_q16_free(qc);
        return qc->bq < 6 || qc->bc < 6 ? ML_ERR_ARG : ML_ERR_ALLOC;
    }
    return ML_OK;
}

static size_t ml_q16_scratch_bytes(ptrdiff_t d)
{
    const size_t rows = Q16_CHUNK + Q16_MAXP;
    /* the rows' integers (d2 pairs each), q1, best, second (4 bytes each),
     * 2 E (8 bytes), h and max |x| (4 bytes each) */
    return (rows * (size_t)((d + 1) / 2) * 4 + 63) / 64 * 64 + 3 * rows * 4 + rows * 8 +
           2 * rows * 4 + 64;
}

/* The block-packed centers are 64-byte aligned inside their allocation. */
#define Q16_ALIGN(p) ((void *)(((uintptr_t)(p) + 63) & ~(uintptr_t)63))

static void ml_q16_prep(ml_q16_centers *qc, const float *C, const float *cn)
{
    const ptrdiff_t d = qc->d, d2 = qc->d2, K = qc->K, W = 16 * qc->Q;
    double mx = 0, C1 = 0, cnmax = 0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double a = fabs((double)C[k * d + j]);
            s += a;
            mx = a > mx ? a : mx;
        }
        C1 = s > C1 ? s : C1;
        cnmax = (double)cn[k] > cnmax ? (double)cn[k] : cnmax;
    }
    /* mx < 2^E; rho = 2^(E - bc), so |c / rho| < 2^bc.  Centers all zero,
     * or out of a range where every scale below stays a normal float:
     * not screened. */
    int E = 0;
    (void)frexp(mx, &E);
    qc->on = mx >= 0x1p-60 && mx < 0x1p60 && cnmax < 0x1p100;
    qc->ec = E - qc->bc;
    /* sum |c_kj| in double: relative error below d 2^-53 */
    qc->C1 = C1 * (1 + (double)(d + 2) * 0x1p-53);
    qc->cnmax = cnmax;
    int32_t *cp = Q16_ALIGN(qc->cp);
    float *cnb = Q16_ALIGN(qc->cn);
    const double inv = ldexp(1.0, -qc->ec);
    for (ptrdiff_t k = 0; k < qc->nb * W; ++k) {
        const ptrdiff_t blk = k / W, l = k % W;
        cnb[k] = k < K ? cn[k] : INFINITY;
        for (ptrdiff_t j2 = 0; j2 < d2; ++j2) {
            int32_t lo = 0, hi = 0;
            if (k < K && qc->on) {
                lo = (int32_t)nearbyint((double)C[k * d + 2 * j2] * inv);
                if (2 * j2 + 1 < d) hi = (int32_t)nearbyint((double)C[k * d + 2 * j2 + 1] * inv);
            }
            cp[(blk * d2 + j2) * W + l] =
                (int32_t)((uint32_t)(uint16_t)(int16_t)lo | ((uint32_t)(uint16_t)(int16_t)hi << 16));
        }
    }
}

/* Every row open (the centers out of the screen's range, or no screen). */
static ptrdiff_t q16_all_open(ptrdiff_t m, int32_t *lab, int64_t *ok, double *margin)
{
    for (ptrdiff_t b = 0; b < m; ++b) {
        ok[b] = 0;
        lab[b] = 0;
        if (margin) margin[b] = -INFINITY;
    }
    return m;
}

#if ML_Q16_BUILT
#include <immintrin.h>
#define Q16_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

/* The largest |x| of the m rows of X as a bit pattern: the largest bit
 * pattern of |x| (the same order for non-negative floats, and NaN, above
 * infinity, is kept: a chunk with a non-finite value stays open), in four
 * running maxima (one would wait on its own latency every step). */
Q16_TGT static uint32_t q16_maxbits(const float *ML_RESTRICT X, ptrdiff_t n)
{
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
    const int32_t *Xi = (const int32_t *)(const void *)X;
    ptrdiff_t i = 0;
    for (; i + 64 <= n; i += 64) {
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(Xi + i), ab));
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512(Xi + i + 16), ab));
        m2 = _mm512_max_epu32(m2, _mm512_and_si512(_mm512_loadu_si512(Xi + i + 32), ab));
        m3 = _mm512_max_epu32(m3, _mm512_and_si512(_mm512_loadu_si512(Xi + i + 48), ab));
    }
    __m512i mx = _mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3));
    for (; i + 16 <= n; i += 16)
        mx = _mm512_max_epu32(mx, _mm512_and_si512(_mm512_loadu_si512(Xi + i), ab));
    if (i < n)
        mx = _mm512_max_epu32(mx, _mm512_and_si512(
                 _mm512_maskz_loadu_epi32((__mmask16)((1u << (n - i)) - 1), Xi + i), ab));
    return _mm512_reduce_max_epu32(mx);
}

/* A chunk's scale from its largest |x| (bits): sigma = 2^e with
 * e = E - bq for |x| < 2^E, so |q| <= 2^bq; *inv = 1 / sigma and *h = 1 /
 * (2 sigma rho), both 0 and NaN where either is not a normal float32 (an
 * all-zero chunk, a non-finite value, a range far from the centers': the
 * rows stay open); *mx = the largest |x|. */
static void q16_scale(uint32_t bits, int bq, int ec, float *inv, float *h, float *mx)
{
    /* E = -126 for 0 and subnormals, 129 for infinity and NaN */
    const int E = (int)(bits >> 23) - 126, e = E - bq, sh = -1 - e - ec;
    const int valid = bits < 0x7f800000u && e >= -126 && e <= 126 && sh >= -126 && sh <= 127;
    const uint32_t ib = valid ? (uint32_t)(127 - e) << 23 : 0;
    const uint32_t hb = valid ? (uint32_t)(127 + sh) << 23 : 0x7fc00000u;
    memcpy(inv, &ib, sizeof *inv);
    memcpy(h, &hb, sizeof *h);
    memcpy(mx, &bits, sizeof *mx);
}

/* The m rows of X as integers q = x / sigma rounded to nearest (iv = 1 /
 * sigma, a power of two), d2 pairs per row, zero-padded, and q1[b] =
 * ||q_b||_1.  One scale per chunk: one per row (the row's own largest |x|,
 * found as it is rounded) cost more than it saved: 1.8% of the rows were
 * open either way (uniform data, d = 64, K = 64), and the per-row
 * reduction and exponent took the rounding from 11% to 18% of the
 * samples (C harness, perf). */
Q16_TGT static void q16_rows(const float *ML_RESTRICT X, ptrdiff_t m, ptrdiff_t d,
                             ptrdiff_t d2, float inv, int16_t *ML_RESTRICT qb,
                             int32_t *ML_RESTRICT q1)
{
    const __m512 iv = _mm512_set1_ps(inv);
    for (ptrdiff_t b = 0; b < m; ++b) {
        const float *x = X + b * d;
        int16_t *q = qb + b * 2 * d2;
        __m512i s = _mm512_setzero_si512();
        for (ptrdiff_t j = 0; j < d; j += 16) {
            const __mmask16 mk = d - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (d - j)) - 1);
            const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + j), iv);
            const __m512i qi = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            s = _mm512_add_epi32(s, _mm512_abs_epi32(qi));
            _mm512_mask_cvtepi32_storeu_epi16(q + j, mk, qi);
        }
        if (d & 1) q[d] = 0;
        q1[b] = _mm512_reduce_add_epi32(s);
    }
}

/* acc[p][q] = sum_j2 (q_p pair j2) . (center pair j2 of vector q), for the
 * P rows at qw (d2 int32 words each) and one block of centers cb (d2 rows
 * of Q vectors).  Its own function with d2 a variable: GCC 12 keeps the
 * P Q accumulators in registers here, where inlined into the step (or with
 * d2 a constant) it spilled them on every iteration. */
#define Q16_ACC_FN(P, Q)                                                       \
    Q16_TGT __attribute__((noinline)) static void q16_acc_##P##_##Q(            \
        const int32_t *ML_RESTRICT qw, const int32_t *ML_RESTRICT cb,          \
        ptrdiff_t d2, __m512i *ML_RESTRICT out, const char *pf, ptrdiff_t npf) \
    {                                                                          \
        ptrdiff_t tp = 0;                                                      \
        __m512i a[P][Q];                                                       \
        _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p)                   \
            _Pragma("GCC unroll 4") for (int q = 0; q < Q; ++q)                \
                a[p][q] = _mm512_setzero_si512();                              \
        for (ptrdiff_t j2 = 0; j2 < d2; ++j2) {                                \
            if (tp < npf && tp * d2 <= j2 * npf)                               \
                _mm_prefetch(pf + 64 * tp++, _MM_HINT_T0);                     \
            __m512i c[Q];                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < Q; ++q)                \
                c[q] = _mm512_load_si512(cb + (j2 * Q + q) * 16);              \
            _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p) {             \
                const __m512i xb = _mm512_set1_epi32(qw[p * d2 + j2]);         \
                _Pragma("GCC unroll 4") for (int q = 0; q < Q; ++q)            \
                    a[p][q] = _mm512_dpwssd_epi32(a[p][q], xb, c[q]);          \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p)                   \
            _Pragma("GCC unroll 4") for (int q = 0; q < Q; ++q)                \
                _mm512_store_si512(out + p * Q + q, a[p][q]);                  \
        for (; tp < npf; ++tp) _mm_prefetch(pf + 64 * tp, _MM_HINT_T0);       \
    }
Q16_ACC_FN(6, 4)
Q16_ACC_FN(6, 2)
Q16_ACC_FN(12, 1)
#undef Q16_ACC_FN

/* Each lane's best and second-best score and the best's center index take
 * one block's scores a = cn h - I (m1, m2, idx: P x 16 lanes; ties keep
 * the lower index, and an equal score becomes the second best, so that a
 * tie leaves a gap of 0). */
Q16_TGT static void q16_lanes(const __m512i *ML_RESTRICT acc, int P, int Q,
                              const float *ML_RESTRICT cnb, ptrdiff_t k0,
                              const float *hv, __m512 *m1, __m512 *m2,
                              __m512i *idx)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int p = 0; p < P; ++p) {
        const __m512 h = _mm512_set1_ps(hv[p]);
        __m512 b1 = m1[p], b2 = m2[p];
        __m512i bi = idx[p];
        for (int q = 0; q < Q; ++q) {
            const __m512 a = _mm512_fmsub_ps(_mm512_load_ps(cnb + q * 16), h,
                                             _mm512_cvtepi32_ps(acc[p * Q + q]));
            b2 = _mm512_min_ps(b2, _mm512_max_ps(b1, a));
            const __mmask16 lt = _mm512_cmp_ps_mask(a, b1, _CMP_LT_OQ);
            b1 = _mm512_min_ps(b1, a);
            bi = _mm512_mask_blend_epi32(lt, bi, _mm512_add_epi32(lane, _mm512_set1_epi32((int)(k0 + q * 16))));
        }
        m1[p] = b1; m2[p] = b2; idx[p] = bi;
    }
}

/* One row's best score, second best and label from its lanes. */
Q16_TGT static void q16_reduce(__m512 m1, __m512 m2, __m512i idx, float *best,
                               float *second, int32_t *lab)
{
    const float m = _mm512_reduce_min_ps(m1);
    const __mmask16 eq = _mm512_cmp_ps_mask(m1, _mm512_set1_ps(m), _CMP_EQ_OQ);
    *best = m;
    *lab = _mm512_mask_reduce_min_epi32(eq, idx);
    /* two lanes at the minimum: a tie, gap 0 */
    *second = (eq & (eq - 1)) ? m : _mm512_reduce_min_ps(_mm512_mask_blend_ps(eq, m1, m2));
}

/* The labels of one step's P rows from one block of scores (nb = 1), and
 * whether each is settled: row b's best score s is the only one at or below
 * thr = s + T[b] (T[b] >= 2 E_b plus the rounding of that float32 sum:
 * ml_q16_screen), so every other score exceeds s + 2 E_b (a tie leaves two
 * at s: open).  All in vectors, no branch on the data: about half the work
 * of the lanes' running second best (q16_lanes, q16_reduce). */
Q16_TGT static ML_ALWAYS_INLINE void q16_settle(const __m512i *ML_RESTRICT acc,
                                                const int P, const int Q,
                                                const float *ML_RESTRICT cnb,
                                                const float *hr, const float *T,
                                                ptrdiff_t nr, int32_t *lab,
                                                int64_t *ok)
{
    for (int p = 0; p < P && p < nr; ++p) {
        const __m512 hv = _mm512_set1_ps(hr[p]);
        __m512 a[4];
        for (int q = 0; q < Q; ++q)
            a[q] = _mm512_fmsub_ps(_mm512_load_ps(cnb + q * 16), hv,
                                   _mm512_cvtepi32_ps(acc[p * Q + q]));
        __m512 mn = a[0];
        for (int q = 1; q < Q; ++q) mn = _mm512_min_ps(mn, a[q]);
        /* the minimum in every lane */
        mn = _mm512_min_ps(mn, _mm512_shuffle_f32x4(mn, mn, 0x4e));
        mn = _mm512_min_ps(mn, _mm512_shuffle_f32x4(mn, mn, 0xb1));
        mn = _mm512_min_ps(mn, _mm512_permute_ps(mn, 0x4e));
        mn = _mm512_min_ps(mn, _mm512_permute_ps(mn, 0xb1));
        const __m512 tv = _mm512_add_ps(mn, _mm512_set1_ps(T[p]));
        uint64_t mk = 0;
        for (int q = 0; q < Q; ++q)
            mk |= (uint64_t)_mm512_cmp_ps_mask(a[q], tv, _CMP_LE_OQ) << (16 * q);
        lab[p] = mk ? (int32_t)__builtin_ctzll(mk) : 0;
        ok[p] = mk != 0 && (mk & (mk - 1)) == 0;
    }
}

/* The m rows quantized in qb (rows past m are zero and ignored), row b
 * with scale factor hr[b]: with T (one block of centers, no margin wanted)
 * their labels and whether settled (q16_settle); without, their labels,
 * best and second-best scores.  The npf cache lines at pf are prefetched
 * along the way. */
Q16_TGT static void q16_scores(const ml_q16_centers *qc, const int16_t *qb,
                               ptrdiff_t m, const float *hr, const float *T,
                               const char *pf, ptrdiff_t npf, int32_t *lab,
                               int64_t *ok, float *best, float *second)
{
    ptrdiff_t tp = 0;  /* next of the npf lines at pf to prefetch */
    const ptrdiff_t d2 = qc->d2, W = 16 * qc->Q;
    const int Q = qc->Q, P = Q == 1 ? 12 : 6;
    const int32_t *cp = Q16_ALIGN(qc->cp);
    const float *cnb = Q16_ALIGN(qc->cn);
    __m512i acc[Q16_MAXP * 4] __attribute__((aligned(64)));
    for (ptrdiff_t b0 = 0; b0 < m; b0 += P) {
        __m512 m1[Q16_MAXP], m2[Q16_MAXP];
        __m512i idx[Q16_MAXP];
        for (int p = 0; p < P; ++p) {
            m1[p] = m2[p] = _mm512_set1_ps(INFINITY);
            idx[p] = _mm512_setzero_si512();
        }
        const int32_t *qw = (const int32_t *)(const void *)(qb + b0 * 2 * d2);
        /* this step's share of the lines, spread over its first block's
         * coordinate pairs */
        const ptrdiff_t to = (b0 + P) * npf / m < npf ? (b0 + P) * npf / m : npf;
        const char *pfs = pf + 64 * tp;
        const ptrdiff_t nps = to - tp;
        tp = to;
        for (ptrdiff_t blk = 0; blk < qc->nb; ++blk) {
            const int32_t *cb = cp + blk * d2 * W;
            const ptrdiff_t n1 = blk == 0 ? nps : 0;
            if (Q == 4) q16_acc_6_4(qw, cb, d2, acc, pfs, n1);
            else if (Q == 2) q16_acc_6_2(qw, cb, d2, acc, pfs, n1);
            else q16_acc_12_1(qw, cb, d2, acc, pfs, n1);
            if (T && Q == 4) q16_settle(acc, 6, 4, cnb, hr + b0, T + b0, m - b0, lab + b0, ok + b0);
            else if (T && Q == 2) q16_settle(acc, 6, 2, cnb, hr + b0, T + b0, m - b0, lab + b0, ok + b0);
            else if (T) q16_settle(acc, 12, 1, cnb, hr + b0, T + b0, m - b0, lab + b0, ok + b0);
            else q16_lanes(acc, P, Q, cnb + blk * W, blk * W, hr + b0, m1, m2, idx);
        }
        for (int p = 0; !T && p < P && b0 + p < m; ++p)
            q16_reduce(m1[p], m2[p], idx[p], best + b0 + p, second + b0 + p, lab + b0 + p);
    }
}

/* 2 E_b = 2 (A_b + B q1_b) (kmeans_q16.h) for the m rows, widened for its
 * own rounding and for the rounding of the threshold s + 2 E in double
 * (q16_settle: E >= 2^-23 |s|, so a relative 2^-20 of E covers
 * 2^-53 |s + 2 E|); a NaN h_b makes it NaN, and the row open.  Vectorized
 * over the rows (its own target: the caller is baseline code). */
Q16_TGT static void q16_bound(const ml_q16_centers *qc, ptrdiff_t m,
                              const int32_t *ML_RESTRICT q1,
                              const float *ML_RESTRICT hr,
                              const float *ML_RESTRICT mxr, double *ML_RESTRICT E2)
{
    const double u = 0x1p-23, slack = 1 + 0x1p-20, g = qc->gam;
    const double C1r = qc->C1 * ldexp(1.0, -1 - qc->ec), cnmax = qc->cnmax, C1 = qc->C1;
    const double B = (0.5 + 2 * u * ldexp(1.0, qc->bc)) * slack;
    for (ptrdiff_t b = 0; b < m; ++b) {
        const double h = (double)hr[b], mx = (double)mxr[b];
        const double A = (C1r + u * cnmax * h + g * (cnmax + 2 * mx * C1) * h) * slack;
        E2[b] = 2 * (A + B * (double)q1[b]);
    }
}

/* T_b = 2 E_b plus the rounding of s + T_b in float32 (at most 2^-24
 * |s + T_b|, |s| <= cnmax h + Pmax q1), rounded up to float32 (the relative
 * 2^-20 covers the rounding of T_b itself): q16_settle's thresholds. */
Q16_TGT static void q16_threshold(const ml_q16_centers *qc, ptrdiff_t m,
                                  const int32_t *ML_RESTRICT q1,
                                  const float *ML_RESTRICT hr,
                                  const double *ML_RESTRICT E2, float *ML_RESTRICT T)
{
    const double Pmax = ldexp(1.0, qc->bc), cnmax = qc->cnmax;
    for (ptrdiff_t b = 0; b < m; ++b) {
        const double sb = cnmax * (double)hr[b] + Pmax * (double)q1[b];
        T[b] = (float)((E2[b] + 0x1p-22 * sb) * (1 + 0x1p-20));
    }
}

static int ml_q16_available(void)
{
    static volatile int avail = -1;
    int a = avail;
    if (a < 0) {
        const char *off = getenv("METRICLUST_Q16");
        a = ml_dispatch_level() >= 4 && __builtin_cpu_supports("avx512vnni") &&
            !(off && !strcmp(off, "0"));
        avail = a;
    }
    return a;
}

/* The integers of the m rows of X into *qb, *q1 (scratch), or the kept
 * ones of chunk `chunk` (rounded at the first pass that asks); returns the
 * rows' largest |x| as a bit pattern (q16_maxbits). */
static uint32_t q16_integers(const ml_q16_centers *qc, const float *X, ptrdiff_t m,
                             ptrdiff_t chunk, int16_t **qb, int32_t **q1)
{
    const ptrdiff_t d = qc->d, d2 = qc->d2;
    const int kept = chunk >= 0 && qc->rq;
    if (kept) {
        *qb = qc->rq + chunk * (Q16_CHUNK + Q16_MAXP) * 2 * d2;
        *q1 = qc->rq1 + chunk * Q16_CHUNK;
        if (qc->rbits[chunk] != UINT32_MAX) return qc->rbits[chunk];
    }
    const uint32_t bits = q16_maxbits(X, m * d);
    float inv, h, mx;
    q16_scale(bits, qc->bq, 0, &inv, &h, &mx);
    q16_rows(X, m, d, d2, inv, *qb, *q1);
    if (kept)
        qc->rbits[chunk] = bits;
    else  /* the step past the last row reads zeros */
        memset(*qb + m * 2 * d2, 0, (size_t)(Q16_MAXP * 2 * d2) * sizeof(int16_t));
    return bits;
}

/* The gap test of the rows' best and second-best scores against 2 E, and
 * the margins (kmeans_q16.h; the norms' own rounding included: ||c_k||^2
 * against the float32 norm cn_k, since the margin is in distances);
 * returns the rows left open. */
static ptrdiff_t q16_gaps(const ml_q16_centers *qc, ptrdiff_t m, const float *best,
                          const float *second, const double *E2, const float *hr,
                          int64_t *ok, double *margin)
{
    const double g = qc->gam, dn = 2 * g * qc->cnmax * (1 + 2 * g) * (1 + 0x1p-20);
    ptrdiff_t no = 0;
    for (ptrdiff_t b = 0; b < m; ++b) {
        const double gap = ((double)second[b] - (double)best[b]) * (1 - 0x1p-52);
        ok[b] = gap > E2[b];
        no += !ok[b];
        if (margin) margin[b] = ok[b] ? ((gap - E2[b]) / (double)hr[b]) * (1 - 0x1p-50) - dn : -INFINITY;
    }
    return no;
}

static ptrdiff_t ml_q16_screen(const ml_q16_centers *qc, const float *X, ptrdiff_t m,
                               ptrdiff_t chunk, void *scratch, int32_t *lab, int64_t *ok,
                               double *margin)
{
    const ptrdiff_t d = qc->d, d2 = qc->d2, rows = Q16_CHUNK + Q16_MAXP;
    unsigned char *base = Q16_ALIGN(scratch);
    int16_t *qb = (int16_t *)(void *)base;
    int32_t *q1 = (int32_t *)(void *)(base + (rows * (size_t)d2 * 4 + 63) / 64 * 64);
    float *best = (float *)(q1 + rows), *second = best + rows;
    double *E2 = (double *)(void *)(second + rows);
    float *hr = (float *)(void *)(E2 + rows), *mxr = hr + rows;
    if (!qc->on) return q16_all_open(m, lab, ok, margin);
    const uint32_t bits = q16_integers(qc, X, m, chunk, &qb, &q1);
    float inv, h, mx;
    q16_scale(bits, qc->bq, qc->ec, &inv, &h, &mx);
    for (ptrdiff_t b = 0; b < m; ++b) {
        hr[b] = h;
        mxr[b] = mx;
    }
    for (ptrdiff_t b = m; b < m + Q16_MAXP; ++b) hr[b] = 1;
    q16_bound(qc, m, q1, hr, mxr, E2);
    /* The next chunk's rows (usually the caller's next call) are fetched
     * while these are scored: their first touch otherwise stalled the
     * rounding of the rows (C harness, perf). */
    const char *pf = (const char *)(X + m * d);
    const ptrdiff_t npf = (ptrdiff_t)((size_t)(m * d) * sizeof(float) / 64);
    if (qc->nb == 1 && !margin) {
        float *T = best;
        q16_threshold(qc, m, q1, hr, E2, T);
        q16_scores(qc, qb, m, hr, T, pf, npf, lab, ok, NULL, NULL);
        ptrdiff_t no = 0;
        for (ptrdiff_t b = 0; b < m; ++b) no += !ok[b];
        return no;
    }
    q16_scores(qc, qb, m, hr, NULL, pf, npf, lab, NULL, best, second);
    return q16_gaps(qc, m, best, second, E2, hr, ok, margin);
}

#else
static int ml_q16_available(void) { return 0; }

static ptrdiff_t ml_q16_screen(const ml_q16_centers *qc, const float *X, ptrdiff_t m,
                               ptrdiff_t chunk, void *scratch, int32_t *lab, int64_t *ok,
                               double *margin)
{
    (void)qc; (void)X; (void)scratch; (void)chunk;
    return q16_all_open(m, lab, ok, margin);
}
#endif

#endif
