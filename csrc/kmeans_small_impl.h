/* The small-d kernel of the k-means core for one floating type and one
 * vector width; included by kmeans_impl.h with REAL, REAL_INT, SFX and SM_VB
 * (vector bytes: 32 for the clones, 64 for the AVX-512 instance) defined,
 * inside its contraction region.  See kmeans_impl.h ("The small-d kernel")
 * for the layout and the contract.  SM_TV points per vector; the functions
 * and vector types are named name_SFX_SM_VB, so the two widths are two
 * instances of this one text. */

#define SM_CAT3_(a, b, c) a##_##b##_##c
#define SM_CAT3(a, b, c) SM_CAT3_(a, b, c)
#define SMN(name) SM_CAT3(name, SFX, SM_VB)
#define SM_TV ((ptrdiff_t)(SM_VB / sizeof(REAL)))

typedef REAL SMN(km_sv) __attribute__((vector_size(SM_VB)));
/* Lane labels (the lanes of a comparison mask) and their int32 form. */
typedef REAL_INT SMN(km_svi) __attribute__((vector_size(SM_VB)));
typedef int32_t SMN(km_svl) __attribute__((vector_size(SM_VB / sizeof(REAL) * 4)));
#if !defined(KM_F64_f64)
#define KM_F64_f64 1
#define KM_F64_f32 0
#endif
/* The running labels (bk) and the center index (kv): int32 lanes in the
 * 64-byte float64 instance on x86 (a ymm register beside each zmm of
 * scores; the comparison's mask register selects the int32 lanes directly,
 * and the label blend and the index add are 256-bit operations, which Zen 4
 * runs in one pass instead of two).  That instance's functions carry its
 * target (SM_TGT), so the AVX-512 intrinsics of small_pick are compiled
 * only where the instruction set is enabled.  GCC only: zig's Clang does
 * not take target("arch=x86-64-v4") as enabling AVX-512 for intrinsics
 * (tools/check_dispatch.sh), so Clang builds keep the selects below (the
 * same labels, int64 lanes).  Elsewhere: the comparison's
 * own lanes (without mask registers an int32 blend would need the mask
 * narrowed first; with vector extensions alone GCC 12 narrows it through
 * a zmm and a permute). */
#if SM_VB == 64 && KM_CAT(KM_F64, SFX) && defined(__x86_64__) && \
    defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define SM_MASKED 1
#define SM_TGT ML_TARGET_V4
typedef SMN(km_svl) SMN(km_sbk);
#else
#define SM_MASKED 0
#define SM_TGT
typedef SMN(km_svi) SMN(km_sbk);
#endif

/* The running minimum *bs and label *bk of each lane take the score s and
 * the index kv where s < *bs (strict: the first minimum keeps its label). */
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_pick)(const SMN(km_sv) s, SMN(km_sv) *ML_RESTRICT bs,
                SMN(km_sbk) *ML_RESTRICT bk, const SMN(km_sbk) kv)
{
#if SM_MASKED
    const __mmask8 lt = _mm512_cmp_pd_mask((__m512d)s, (__m512d)*bs, _CMP_LT_OS);
    *bs = (SMN(km_sv))_mm512_mask_mov_pd((__m512d)*bs, lt, (__m512d)s);
    *bk = (SMN(km_sbk))_mm256_mask_mov_epi32((__m256i)*bk, lt, (__m256i)kv);
#else
    typedef SMN(km_svi) VM;
    const VM lt = (VM)(s < *bs);
    *bs = (SMN(km_sv))((lt & (VM)s) | (~lt & (VM)*bs));
    *bk = (lt & kv) | (~lt & *bk);
#endif
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  /* GCC 12 sees the lanes set one by one as unset */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* x[j] (j < d, d a multiple of SM_TV) = coordinate j of the SM_TV rows at
 * Xs, lane p holding row p: each block of SM_TV coordinates is read as
 * SM_TV row vectors and transposed in registers (log2 SM_TV rounds of
 * two-source interleaves, whose patterns are constants).  Setting the
 * lanes one at a time went through the stack at these d (the scalar stores
 * stalled the vector loads behind them: roughly a third of the kernel's samples
 * at d = 8, K = 8, float64, N = 1e6).  Measured (C harness, K = 8, 1
 * thread, load 16, before / after): N = 16384 (rows in L2, 30 repeats):
 * d = 4: 1.02 (f64), 1.01 (f32); d = 8: 1.06 (f64), 1.03 (f32); N = 2e5:
 * between 0.74 and 1.34 from run to run at that load.  A small gain, not
 * the 40%: out of L2 the loads wait on memory either way.  For the other
 * d the same idea (each coordinate merged from the vectors that hold its
 * lanes) was slower, 0.51-0.95 at N = 2e5 except d = 5, f32 (1.15), and
 * is not used.  Values are moved, never computed: the scores and labels
 * do not change.  Sixth round, float32 (SM_TV = 8): the rows are read as
 * 16-byte halves, rows p and p + 4 joined in one register
 * (small_join), then transposed within each 16-byte lane (2 rounds of
 * in-lane interleaves instead of 3 rounds of cross-lane permutes).  C
 * harness, 1 thread, 13:09-13:12 UTC, load 6.5-7.5, before / after, bits
 * identical: d = 8, K = 8: 1.04-1.06 (N = 1e6), 1.05 (rows in L2); K = 32:
 * 1.03; d = 16, K = 8: 1.00.  float64 (4 lanes: 2 joins and 2 in-lane
 * rounds against 2 rounds of permutes, the same count) lost at d = 8,
 * K = 32 (0.86-0.89, the center loop's registers), so d = 8 keeps the
 * whole-vector form.  Seventh round, float64 at d = 4 (C harness, 1
 * thread, 16:05 UTC, load 2.8-2.9, main / joined, best of 5 rounds of 200
 * repeats, bits identical): K = 8: 1.08 (rows in L2), 1.10 (N = 1e6);
 * K = 3: 1.05; K = 32: 1.02-1.03; K = 64: 1.02, so d < 8 joins; d = 8
 * measured again: 0.985 (K = 8), 0.88 (K = 32). */
#define KM_UNROLL_ALL _Pragma("GCC unroll 64")
/* Two 16-byte halves joined into one vector (GCC >= 12 and Clang have
 * __builtin_shufflevector; the halves are loaded straight into the two
 * lanes of a register). */
#if (defined(__clang__) || __GNUC__ >= 12) && SM_VB == 32
#define KM_HALF_JOIN 1
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_join)(SMN(km_sv) *ML_RESTRICT out, const REAL *ML_RESTRICT lo,
               const REAL *ML_RESTRICT hi)
{
    typedef REAL Vh __attribute__((vector_size(16)));
    Vh a, b;
    memcpy(&a, lo, sizeof a);
    memcpy(&b, hi, sizeof b);
#if KM_CAT(KM_F64, SFX)
    *out = __builtin_shufflevector(a, b, 0, 1, 2, 3);
#else
    *out = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7);
#endif
}
#else
#define KM_HALF_JOIN 0
#endif
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_transpose)(const REAL *ML_RESTRICT Xs, const ptrdiff_t d,
                    SMN(km_sv) *ML_RESTRICT x)
{
    typedef SMN(km_sv) V;
    typedef SMN(km_svi) VM;
    enum { VL = (int)SM_TV };
    /* Half rows joined: float32, and float64 below d = 8 (see above). */
    const int H = KM_HALF_JOIN && (VL == 8 || d < 8) ? VL / 2 : VL;
    /* lo/hi interleave the first/second halves of two vectors within each
     * group of H lanes (H = VL: the whole vector). */
    VM lo, hi;
    KM_UNROLL_ALL
    for (int g = 0; g < VL; g += H)
        KM_UNROLL_ALL
        for (int t = 0; t < H / 2; ++t) {
            lo[g + 2 * t] = g + t;
            lo[g + 2 * t + 1] = VL + g + t;
            hi[g + 2 * t] = g + H / 2 + t;
            hi[g + 2 * t + 1] = VL + g + H / 2 + t;
        }
    KM_UNROLL_ALL
    for (ptrdiff_t c = 0; c < d / H; ++c) {
        /* r[p]: H values of rows p, p + H, ... (one group each). */
        V r[VL], nr[VL];
        KM_UNROLL_ALL
        for (int p = 0; p < H; ++p) {
#if KM_HALF_JOIN
            if (H < VL) {
                SMN(small_join)(&r[p], Xs + p * d + c * H, Xs + (p + H) * d + c * H);
                continue;
            }
#endif
            memcpy(&r[p], Xs + p * d + c * H, sizeof(V));
        }
        KM_UNROLL_ALL
        for (int h = 1; h < H; h *= 2) {
            KM_UNROLL_ALL
            for (int i = 0; i < H / 2; ++i) {
                nr[2 * i] = ML_SHUFFLE2(r[i], r[i + H / 2], lo);
                nr[2 * i + 1] = ML_SHUFFLE2(r[i], r[i + H / 2], hi);
            }
            KM_UNROLL_ALL
            for (int p = 0; p < H; ++p) r[p] = nr[p];
        }
        KM_UNROLL_ALL
        for (int j = 0; j < H; ++j) x[c * H + j] = r[j];
    }
}
#undef KM_UNROLL_ALL

/* x[v][j] = coordinate j of the SM_TV rows of point vector v of the step at
 * row b0 (mt of its nv * SM_TV rows are in the chunk; the others read 0). */
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_load)(const REAL *ML_RESTRICT X, ptrdiff_t b0, ptrdiff_t mt,
               const ptrdiff_t d, const int nv,
               SMN(km_sv) x[ML_KM_SMALL_STEP_VECTORS(1)][ML_KM_SMALL_EXTRA_D])
{
    typedef SMN(km_sv) V;
    const ptrdiff_t tp = nv * SM_TV;
    if (mt == tp && d % SM_TV == 0) {
        /* Whole blocks of SM_TV coordinates: the rows loaded as vectors
         * and transposed in registers (small_transpose). */
        for (int v = 0; v < nv; ++v)
            SMN(small_transpose)(X + (b0 + v * SM_TV) * d, d, x[v]);
    } else if (mt == tp) {
        /* Lanes set in registers: a transpose through memory would
         * stall every vector load on the scalar stores before it. */
        for (int v = 0; v < nv; ++v)
            for (ptrdiff_t j = 0; j < d; ++j)
                for (ptrdiff_t p = 0; p < SM_TV; ++p)
                    x[v][j][p] = X[(b0 + v * SM_TV + p) * d + j];
    } else {
        REAL xt[ML_KM_SMALL_EXTRA_D][ML_KM_SMALL_STEP_VECTORS(1) * SM_TV];
        for (ptrdiff_t p = 0; p < tp; ++p)
            for (ptrdiff_t j = 0; j < d; ++j)
                xt[j][p] = p < mt ? X[(b0 + p) * d + j] : 0;
        for (int v = 0; v < nv; ++v)
            for (ptrdiff_t j = 0; j < d; ++j)
                memcpy(&x[v][j], &xt[j][v * SM_TV], sizeof(V));
    }
}

/* The labels of the step's mt rows (of nv * SM_TV) out of the lane labels. */
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_store)(const SMN(km_sbk) bk[ML_KM_SMALL_STEP_VECTORS(1)], ptrdiff_t mt,
                const int nv, int32_t *ML_RESTRICT lab)
{
    if (mt == nv * SM_TV) {
        for (int v = 0; v < nv; ++v) {
            const SMN(km_svl) l = __builtin_convertvector(bk[v], SMN(km_svl));
            memcpy(lab + v * SM_TV, &l, sizeof l);
        }
    } else {
        for (int v = 0; v < nv; ++v)
            for (ptrdiff_t p = 0; p < SM_TV; ++p)
                if (v * SM_TV + p < mt) lab[v * SM_TV + p] = (int32_t)bk[v][p];
    }
}

/* The scores of the nu centers at c (rows of cpk) for the step's nv point
 * vectors, then each lane's running minimum and label updated with them in
 * increasing k (*kvp: the first one's index in every lane, advanced past
 * them).  Each score is one chain of
 * multiply-adds (the norm, then j in order), so a lone center leaves the
 * FMA units waiting on its chain's latency (d chained multiply-adds at
 * 4 cycles each); nu = ML_KM_SMALL_CENTER_UNROLL(d) centers give nu * nv
 * independent chains, interleaved coordinate by coordinate.  Every score is
 * the same sequence of operations as with nu = 1, and the comparisons come
 * in the same order: the labels do not depend on nu. */
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_centers)(SMN(km_sv) x[ML_KM_SMALL_STEP_VECTORS(1)][ML_KM_SMALL_EXTRA_D],
                  const REAL *ML_RESTRICT c, const ptrdiff_t d, const int nv,
                  const int nu, SMN(km_sbk) *ML_RESTRICT kvp, SMN(km_sv) *ML_RESTRICT bs,
                  SMN(km_sbk) *ML_RESTRICT bk)
{
    typedef SMN(km_sv) V;
    typedef SMN(km_sbk) VB;
    V a[ML_KM_SMALL_MAX_UNROLL][ML_KM_SMALL_STEP_VECTORS(1)];
    VB kv = *kvp;
    if (nu == 1) {
        /* One center: each point vector's chain, then its comparison (the
         * order main's kernel had; the scores-first order below was 3-9%
         * slower at d = 2 and 3). */
        for (int v = 0; v < nv; ++v) {
            V s = c[0] - (V){0};
            for (ptrdiff_t j = 0; j < d; ++j) s += x[v][j] * (c[1 + j] - (V){0});
            SMN(small_pick)(s, &bs[v], &bk[v], kv);
        }
        *kvp = kv + 1;
        return;
    }
    for (int u = 0; u < nu; ++u)
        for (int v = 0; v < nv; ++v) a[u][v] = c[u * (d + 1)] - (V){0};
    for (ptrdiff_t j = 0; j < d; ++j)
        for (int u = 0; u < nu; ++u) {
            const V cj = c[u * (d + 1) + 1 + j] - (V){0};
            for (int v = 0; v < nv; ++v) a[u][v] += x[v][j] * cj;
        }
    for (int u = 0; u < nu; ++u, kv += 1)
        for (int v = 0; v < nv; ++v) {
            SMN(small_pick)(a[u][v], &bs[v], &bk[v], kv);
        }
    *kvp = kv;
}

/* The lines ML_KM_SMALL_PREFETCH_BYTES past the step's nvals values at xs
 * asked for ahead of use (the stream is read once, in order; an address
 * past the data is harmless: a prefetch never faults, and it is formed as
 * an integer). */
static ML_ALWAYS_INLINE SM_TGT void
SMN(small_prefetch)(const REAL *xs, const ptrdiff_t nvals)
{
#if ML_KM_SMALL_PREFETCH_BYTES > 0
    const uintptr_t a = (uintptr_t)xs + ML_KM_SMALL_PREFETCH_BYTES;
    for (ptrdiff_t o = 0; o < nvals * (ptrdiff_t)sizeof(REAL); o += 64)
        ML_PREFETCH((const void *)(a + (uintptr_t)o));
#else
    (void)xs;
    (void)nvals;
#endif
}

static ML_ALWAYS_INLINE SM_TGT void
SMN(small_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
               const REAL *ML_RESTRICT cpk, ptrdiff_t K,
               int32_t *ML_RESTRICT lab)
{
    typedef SMN(km_sv) V;
    typedef SMN(km_sbk) VB;
    const int nv = ML_KM_SMALL_STEP_VECTORS(d), ku = ML_KM_SMALL_CENTER_UNROLL(d);
    const ptrdiff_t tp = nv * SM_TV;
    const V inf = (REAL)INFINITY - (V){0};
    for (ptrdiff_t b0 = 0; b0 < m; b0 += tp) {
        const ptrdiff_t mt = m - b0 < tp ? m - b0 : tp;
        V x[ML_KM_SMALL_STEP_VECTORS(1)][ML_KM_SMALL_EXTRA_D];
        V bs[ML_KM_SMALL_STEP_VECTORS(1)];
        VB bk[ML_KM_SMALL_STEP_VECTORS(1)];
        SMN(small_prefetch)(X + b0 * d, tp * d);
        SMN(small_load)(X, b0, mt, d, nv, x);
        for (int v = 0; v < nv; ++v) {
            bs[v] = inf;
            bk[v] = (VB){0};
        }
        VB kv = (VB){0};
        ptrdiff_t k = 0;
        for (; k + ku <= K; k += ku)
            SMN(small_centers)(x, cpk + k * (d + 1), d, nv, ku, &kv, bs, bk);
        for (; k < K; ++k)
            SMN(small_centers)(x, cpk + k * (d + 1), d, nv, 1, &kv, bs, bk);
        SMN(small_store)(bk, mt, nv, lab + b0);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef KM_HALF_JOIN
#undef SM_MASKED
#undef SM_TGT
#undef SM_TV
#undef SMN
#undef SM_CAT3
#undef SM_CAT3_
