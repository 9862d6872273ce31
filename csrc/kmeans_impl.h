/* k-means kernels for one floating type; included by kmeans.c once per type
 * with REAL (float or double), SFX (f32 or f64) and GEMM_T (the gemm
 * function-pointer type) defined.  See kmeans.h for the contract and the
 * table of crossovers. */

#define KM_CAT2(a, b) a##_##b
#define KM_CAT(a, b) KM_CAT2(a, b)
#define FN(name) KM_CAT(name, SFX)
/* p rounded up to a 64-byte boundary (a cache line; the buffers it serves
 * are allocated 64 bytes longer). */
#define KM_ALIGN64(p) ((void *)(((uintptr_t)(p) + 63) & ~(uintptr_t)63))

/* __builtin_convertvector (the float32 -> float64 sums below) needs GCC 9. */
#if ML_HAVE_VECTOR_EXT && (defined(__clang__) || __GNUC__ >= 9)
#define KM_HAVE_VEC 1
#ifndef KM_V4D_DEFINED
#define KM_V4D_DEFINED
typedef double km_v4d __attribute__((vector_size(32)));
#endif
typedef REAL FN(km_vr) __attribute__((vector_size(4 * sizeof(REAL))));
/* The tile's vectors: 32 bytes (4 doubles or 8 floats), one ymm register on
 * the AVX2 and AVX-512 clones, two xmm on the baseline one. */
typedef REAL FN(km_vt) __attribute__((vector_size(ML_KM_VECTOR_BYTES)));
typedef __typeof__((FN(km_vt)){0} < (FN(km_vt)){0}) FN(km_vm);
/* Lane labels of the small-d kernel (the lanes of a comparison mask). */
typedef REAL_INT FN(km_vi) __attribute__((vector_size(ML_KM_VECTOR_BYTES)));
typedef int32_t FN(km_vl) __attribute__((vector_size(ML_KM_VECTOR_BYTES / sizeof(REAL) * 4)));
#else
#define KM_HAVE_VEC 0
#endif

/* ---------------------------------------------------------------------------
 * The distance tile: nearest center (and optionally the second nearest) of
 * each row of a chunk, without BLAS.
 *
 * The score of center k for point x is cn_k + sum_j x_j (-2 c_kj), i.e.
 * ||x - c_k||^2 - ||x||^2, summed in j order: the argmin is the nearest
 * center.  A tile is KM_TP points by KM_TK centers: its 2 x KM_TK vector
 * accumulators stay in registers while j runs over the d coordinates (two
 * loads of x and KM_TK broadcasts of -2 c_kj per j, one multiply-add per
 * accumulator), the GEMM micro-kernel without the packing.  KM_TK = 6 fills
 * the 16 registers of AVX2 (12 accumulators, 2 x, 1 broadcast).  The points
 * of a tile are transposed into xt (d x KM_TP) so that a vector holds one
 * coordinate of consecutive points; centers come prepared in blocks of
 * KM_TK (cblk: d x KM_TK per block, cnb: the norms, +inf for the padding
 * centers of the last block, which then never win).
 *
 * Centers are compared in increasing k with a strict <, so ties go to the
 * lowest index, as in scikit-learn.  The labels are carried as REAL (same
 * vector width; exact below 2^24 centers, which the bridge enforces).
 * Multiply-adds are fused (FMA) on the clones that have it: a point's score
 * is then rounded once per term, on every thread count alike.
 * ------------------------------------------------------------------------- */
#define KM_TK ML_KM_TILE_CENTERS
#define KM_TV ((ptrdiff_t)(ML_KM_VECTOR_BYTES / sizeof(REAL)))
#define KM_TP (2 * KM_TV)

ML_FP_CONTRACT_BEGIN
#if KM_HAVE_VEC
/* bs/bk (and s2, the second best, when `second`) take a where a < bs. */
#define KM_TILE_UPDATE(bs, bk, s2, a, kv)                                    \
    do {                                                                     \
        const VM lt = (a) < (bs);                                            \
        if (second) {                                                        \
            const V hi = (V)((lt & (VM)(bs)) | (~lt & (VM)(a)));             \
            const VM l2 = hi < (s2);                                         \
            s2 = (V)((l2 & (VM)hi) | (~l2 & (VM)(s2)));                      \
        }                                                                    \
        bs = (V)((lt & (VM)(a)) | (~lt & (VM)(bs)));                         \
        bk = (V)((lt & (VM)(kv)) | (~lt & (VM)(bk)));                        \
    } while (0)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  /* GCC 12 sees the unrolled a0[] as unset */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* The mt rows at X transposed into xt (d x KM_TP, zero-padded).  Setting
 * each xt vector lane by lane in a register and storing it whole (no scalar
 * stores feeding vector loads) showed no gain at d = 16 (C harness, 1
 * thread, float32, K = 32: 24.6 against 20.0 ms per iteration in one run,
 * the reverse in another, on a machine at load 20): not kept. */
static ML_ALWAYS_INLINE void
FN(tile_load)(const REAL *ML_RESTRICT X, ptrdiff_t mt, const ptrdiff_t d,
              REAL *ML_RESTRICT xt)
{
    for (ptrdiff_t p = 0; p < mt; ++p)
        for (ptrdiff_t j = 0; j < d; ++j) xt[j * KM_TP + p] = X[p * d + j];
    for (ptrdiff_t p = mt; p < KM_TP; ++p)
        for (ptrdiff_t j = 0; j < d; ++j) xt[j * KM_TP + p] = 0;
}

static ML_ALWAYS_INLINE void
FN(tile_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
              const REAL *ML_RESTRICT cblk, const REAL *ML_RESTRICT cnb,
              ptrdiff_t K, REAL *ML_RESTRICT xt, REAL *ML_RESTRICT best,
              REAL *ML_RESTRICT best2, int32_t *ML_RESTRICT lab,
              const int second)
{
    typedef FN(km_vt) V;
    typedef FN(km_vm) VM;
    /* s - (V){0} splats s (s - 0 == s for every s, -0 included). */
    const V inf = (REAL)INFINITY - (V){0};
    for (ptrdiff_t b0 = 0; b0 < m; b0 += KM_TP) {
        const ptrdiff_t mt = m - b0 < KM_TP ? m - b0 : KM_TP;
        FN(tile_load)(X + b0 * d, mt, d, xt);
        V bs0 = inf, bs1 = inf, bk0 = (V){0}, bk1 = (V){0}, s20 = inf, s21 = inf;
        for (ptrdiff_t blk = 0; blk * KM_TK < K; ++blk) {
            const REAL *cb = cblk + blk * d * KM_TK, *nb = cnb + blk * KM_TK;
            /* The padding centers of the last block are not compared. */
            const ptrdiff_t nk = K - blk * KM_TK;
            V a0[KM_TK] = {0}, a1[KM_TK] = {0};
            for (int t = 0; t < KM_TK; ++t) {
                a0[t] = nb[t] - (V){0};
                a1[t] = a0[t];
            }
            for (ptrdiff_t j = 0; j < d; ++j) {
                V x0, x1;
                memcpy(&x0, xt + j * KM_TP, sizeof x0);
                memcpy(&x1, xt + j * KM_TP + KM_TV, sizeof x1);
                for (int t = 0; t < KM_TK; ++t) {
                    const V c = cb[j * KM_TK + t] - (V){0};
                    a0[t] += x0 * c;
                    a1[t] += x1 * c;
                }
            }
            for (int t = 0; t < KM_TK; ++t) {
                if (t >= nk) break;
                const V kv = (REAL)(blk * KM_TK + t) - (V){0};
                KM_TILE_UPDATE(bs0, bk0, s20, a0[t], kv);
                KM_TILE_UPDATE(bs1, bk1, s21, a1[t], kv);
            }
        }
        REAL tb[KM_TP], tk[KM_TP], t2[KM_TP];
        memcpy(tb, &bs0, sizeof bs0); memcpy(tb + KM_TV, &bs1, sizeof bs1);
        memcpy(tk, &bk0, sizeof bk0); memcpy(tk + KM_TV, &bk1, sizeof bk1);
        memcpy(t2, &s20, sizeof s20); memcpy(t2 + KM_TV, &s21, sizeof s21);
        for (ptrdiff_t p = 0; p < mt; ++p) {
            lab[b0 + p] = (int32_t)tk[p];
            if (best) best[b0 + p] = tb[p];
            if (second) best2[b0 + p] = t2[p];
        }
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef KM_TILE_UPDATE
#else
/* Portable form (no vector extensions): the same scores, one point and one
 * center at a time, summed in the same order. */
static void
FN(tile_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
              const REAL *ML_RESTRICT cblk, const REAL *ML_RESTRICT cnb,
              ptrdiff_t K, REAL *ML_RESTRICT xt, REAL *ML_RESTRICT best,
              REAL *ML_RESTRICT best2, int32_t *ML_RESTRICT lab,
              const int second)
{
    (void)xt;
    for (ptrdiff_t b = 0; b < m; ++b) {
        const REAL *x = X + b * d;
        REAL bs = (REAL)INFINITY, s2 = (REAL)INFINITY;
        int32_t bk = 0;
        for (ptrdiff_t k = 0; k < K; ++k) {
            const REAL *cb = cblk + (k / KM_TK) * d * KM_TK + k % KM_TK;
            REAL a = cnb[k];
            for (ptrdiff_t j = 0; j < d; ++j) a += x[j] * cb[j * KM_TK];
            if (second) { const REAL hi = a < bs ? bs : a; s2 = hi < s2 ? hi : s2; }
            if (a < bs) { bs = a; bk = (int32_t)k; }
        }
        lab[b] = bk;
        if (best) best[b] = bs;
        if (second) best2[b] = s2;
    }
}
#endif

/* One clone per (d, second) the compiler can specialise: d = 1..8 as
 * constants (memory-bound sizes, where loop overhead would show), any d. */
#define KM_TILE_FN(NAME, DARG, DVAL)                                          \
    ML_CLONES static void FN(NAME)(                                           \
        const REAL *X, ptrdiff_t m, ptrdiff_t DARG, const REAL *cblk,         \
        const REAL *cnb, ptrdiff_t K, REAL *xt, REAL *best, REAL *best2,      \
        int32_t *lab)                                                         \
    {                                                                         \
        (void)DARG;                                                           \
        if (best2)                                                            \
            FN(tile_body)(X, m, DVAL, cblk, cnb, K, xt, best, best2, lab, 1);    \
        else                                                                  \
            FN(tile_body)(X, m, DVAL, cblk, cnb, K, xt, best, NULL, lab, 0);     \
    }
KM_TILE_FN(tile_d1, d_, 1)
KM_TILE_FN(tile_d2, d_, 2)
KM_TILE_FN(tile_d3, d_, 3)
KM_TILE_FN(tile_d4, d_, 4)
KM_TILE_FN(tile_d5, d_, 5)
KM_TILE_FN(tile_d6, d_, 6)
KM_TILE_FN(tile_d7, d_, 7)
KM_TILE_FN(tile_d8, d_, 8)
KM_TILE_FN(tile_any, d, d)
#undef KM_TILE_FN

/* ---------------------------------------------------------------------------
 * The small-d kernel (d <= ML_KM_SMALL_KERNEL_D and d = ML_KM_SMALL_EXTRA_D;
 * where it serves: ml_kmeans_kernel): labels
 * of a chunk with no center padding, no scores in memory and several point
 * vectors in flight.  cpk holds K rows [||c_k||^2, -2 c_k1, ..., -2 c_kd]
 * (L1-resident; each value is broadcast where it is used), the points of a
 * step are ML_KM_SMALL_STEP_VECTORS(d) vectors of KM_TV points, and the running min and
 * argmin of each vector stay in registers while k runs over all K centers.
 * The score of a (point, center) pair is the tile's, term for term (the
 * norm, then x_j (-2 c_kj) in j order, fused the same way), and centers are
 * compared in increasing k with a strict <: the labels are the tile's bit
 * for bit, so a run does not depend on which kernel served it.
 * ------------------------------------------------------------------------- */
#if KM_HAVE_VEC
/* One text (kmeans_small_impl.h), two vector widths: 32 bytes for the clones
 * (one ymm register on AVX2 and AVX-512, two xmm on the baseline), 64 bytes
 * (zmm) for the AVX-512 instance that small_for picks where it measured
 * faster (ML_KM_SMALL_V4_WIDE in kmeans.h). */
#define SM_VB 32
#include "kmeans_small_impl.h"
#undef SM_VB
#if ML_HAVE_CLONES
#define SM_VB 64
#include "kmeans_small_impl.h"
#undef SM_VB
#endif
#else
/* Portable form: the same scores, one point and one center at a time. */
static void
FN(small_body)(const REAL *ML_RESTRICT X, ptrdiff_t m, const ptrdiff_t d,
               const REAL *ML_RESTRICT cpk, ptrdiff_t K,
               int32_t *ML_RESTRICT lab)
{
    for (ptrdiff_t b = 0; b < m; ++b) {
        const REAL *x = X + b * d;
        REAL bs = (REAL)INFINITY;
        int32_t bk = 0;
        for (ptrdiff_t k = 0; k < K; ++k) {
            const REAL *c = cpk + k * (d + 1);
            REAL a = c[0];
            for (ptrdiff_t j = 0; j < d; ++j) a += x[j] * c[1 + j];
            if (a < bs) { bs = a; bk = (int32_t)k; }
        }
        lab[b] = bk;
    }
}
#endif

/* One clone per d = 1..ML_KM_SMALL_KERNEL_D and ML_KM_SMALL_EXTRA_D (row-packed
 * sums only up to ML_KM_SMALL_KERNEL_D; d a constant: the loops over the
 * coordinates and point vectors unroll into registers), and on AVX-512 the
 * 64-byte instance (small_v4z_d*: compiled for x86-64-v4 only, picked by
 * small_for where ML_KM_SMALL_V4_WIDE says; only the d and dtype it can
 * pick: float64, d = 1, 2). */
#if KM_HAVE_VEC
#define KM_SMALL_BODY(VB) KM_CAT(KM_CAT(small_body, SFX), VB)
#else
#define KM_SMALL_BODY(VB) FN(small_body)
#endif
#define KM_SMALL_FN(TGT, NAME, VB, DV)                                        \
    TGT static void FN(NAME##DV)(const REAL *X, ptrdiff_t m,                  \
                                 const REAL *cpk, ptrdiff_t K, int32_t *lab)  \
    {                                                                         \
        KM_SMALL_BODY(VB)(X, m, DV, cpk, K, lab);                             \
    }
KM_SMALL_FN(ML_CLONES, small_d, 32, 1)
KM_SMALL_FN(ML_CLONES, small_d, 32, 2)
KM_SMALL_FN(ML_CLONES, small_d, 32, 3)
KM_SMALL_FN(ML_CLONES, small_d, 32, 4)
KM_SMALL_FN(ML_CLONES, small_d, 32, 5)
KM_SMALL_FN(ML_CLONES, small_d, 32, 6)
KM_SMALL_FN(ML_CLONES, small_d, 32, 7)
KM_SMALL_FN(ML_CLONES, small_d, 32, 8)
KM_SMALL_FN(ML_CLONES, small_d, 32, 16)
#if KM_HAVE_VEC && ML_HAVE_CLONES && KM_CAT(KM_F64, SFX)
#define KM_SMALL_V4 1
/* Entry at a 64-byte boundary: the same code measured 1.0 or 1.1-1.2
 * against the 32-byte clones as its address moved (C harness built -O2,
 * float32, d = 1..3, K = 8). */
#define KM_SMALL_V4_TGT ML_TARGET_V4 __attribute__((aligned(64)))
KM_SMALL_FN(KM_SMALL_V4_TGT, small_v4z_d, 64, 1)
KM_SMALL_FN(KM_SMALL_V4_TGT, small_v4z_d, 64, 2)
#else
#define KM_SMALL_V4 0
#endif
#undef KM_SMALL_FN
#undef KM_SMALL_BODY
#undef KM_SMALL_V4_TGT

/* ---------------------------------------------------------------------------
 * The centers-across-lanes kernel (ML_KM_LANES_*; d = 9..128, K <= 64 by
 * default): labels of a chunk with the centers, not the points, in the
 * vector lanes.  The centers come packed once per pass in blocks of W:
 * block b is d + 1 rows of W values, row 0 the norms ||c_k||^2 (+inf for
 * the padding centers of the last block, which never win), row 1 + j the
 * values -2 c_kj (0 for padding).  Each point's coordinates are broadcast
 * from the row-major X (no transpose of X, no packing of X, no BLAS), P
 * points share each load of a center row, and the argmin is reduced across
 * the lanes once per point (kmeans_cv_impl.h); when the centers fit one
 * vector (K <= its lanes) the scores of a vector's width of points are
 * transposed and compared center by center instead, and Lloyd's pass adds
 * the rows to the sums in the same kernel (cv_body1).  The score of a
 * (point, center) pair is the tile's, term for term (norm, then x_j
 * (-2 c_kj) in j order, fused the same way), and ties go to the lowest
 * index: the labels are the tile's bit for bit.  Compiled per ISA level with its own
 * blocking (AVX-512: 32 registers; AVX2 and the SSE2 baseline: 16), and
 * on AVX-512 at two widths, 64 and 32 bytes, picked by the CPU's 512-bit
 * FMA rate (lanes_isa below).
 * ------------------------------------------------------------------------- */
typedef void (*FN(km_lanes_fn))(const REAL *, ptrdiff_t, ptrdiff_t,
                                const REAL *, ptrdiff_t, int32_t *);
/* The one-vector form with the chunk's sums (cv_body1 with sums). */
typedef void (*FN(km_lanes_sums_fn))(const REAL *, const REAL *, ptrdiff_t,
                                     ptrdiff_t, const REAL *, int32_t *,
                                     double *, ptrdiff_t, ptrdiff_t, ptrdiff_t);
/* The pruned pass's form: labels, best and second-best scores (cv_body). */
typedef void (*FN(km_lanes_b2_fn))(const REAL *, ptrdiff_t, ptrdiff_t,
                                   const REAL *, ptrdiff_t, int32_t *, REAL *,
                                   REAL *);
static ML_ALWAYS_INLINE void
FN(accum_row)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w, ptrdiff_t b,
              const ptrdiff_t d, ptrdiff_t k, double *ML_RESTRICT acc,
              ptrdiff_t copies, ptrdiff_t stride, ptrdiff_t K);
#if KM_HAVE_VEC
#ifndef KM_CV_MAXP
#define KM_CV_MAXP 8
#define KM_CV_MAXQ 4
#define KM_CV1_MAXP 16
#endif
#ifndef KM_CV_PREFETCH
#define KM_CV_PREFETCH 2
#endif
/* Fails to compile where a points-per-step macro (ML_KM_LANES_P*,
 * ML_KM_SCREEN_P*, overridable with -D) exceeds the kernels' per-point arrays. */
#define KM_CHECK_P(P, MAXP) ((void)sizeof(char[(P) <= (MAXP) ? 1 : -1]))
#define CV_VB 16
#include "kmeans_cv_impl.h"
#undef CV_VB
#define CV_VB 32
#include "kmeans_cv_impl.h"
#undef CV_VB
#if ML_HAVE_CLONES
#define CV_VB 64
#include "kmeans_cv_impl.h"
#undef CV_VB
#endif
/* Each instance in two forms: Lloyd's labels (lanes_*), and the pruned
 * pass's labels with best and second-best scores (lanesb2_*; cv_body's
 * with2). */
#define KM_CV_FN(TGT, ISA, VB, PP, Q)                                          \
    TGT static void FN(lanes_##ISA##_q##Q)(const REAL *X, ptrdiff_t m,         \
                                           ptrdiff_t d, const REAL *ct,        \
                                           ptrdiff_t nb, int32_t *lab)         \
    {                                                                          \
        KM_CHECK_P(PP, KM_CV_MAXP);                                            \
        KM_CAT(KM_CAT(cv_body, SFX), VB)(X, m, d, ct, nb, lab, NULL, NULL, PP, \
                                         Q, 0);                                \
    }                                                                          \
    TGT static void FN(lanesb2_##ISA##_q##Q)(const REAL *X, ptrdiff_t m,       \
                                             ptrdiff_t d, const REAL *ct,      \
                                             ptrdiff_t nb, int32_t *lab,       \
                                             REAL *best, REAL *second)         \
    {                                                                          \
        KM_CHECK_P(PP, KM_CV_MAXP);                                            \
        KM_CAT(KM_CAT(cv_body, SFX), VB)(X, m, d, ct, nb, lab, best, second,   \
                                         PP, Q, 1);                            \
    }
/* One width's instances for Q = 1, 2 and 4 vectors per block, PP(Q)
 * points per step. */
#define KM_CV_Q124(M, TGT, ISA, VB, PP) \
    M(TGT, ISA, VB, PP(1), 1) M(TGT, ISA, VB, PP(2), 2) M(TGT, ISA, VB, PP(4), 4)
#if ML_HAVE_CLONES
#define KM_LANES_P64(Q) ML_KM_LANES_P64(Q, sizeof(REAL))
KM_CV_Q124(KM_CV_FN, ML_TARGET_V4, v4z, 64, KM_LANES_P64)
#undef KM_LANES_P64
KM_CV_Q124(KM_CV_FN, ML_TARGET_V4, v4, 32, ML_KM_LANES_P32)
KM_CV_Q124(KM_CV_FN, ML_TARGET_V3, v3, 32, ML_KM_LANES_P16)
#endif
KM_CV_Q124(KM_CV_FN, , base, 16, ML_KM_LANES_P16)
#undef KM_CV_FN
/* The one-vector form (K <= the lanes of one vector: cv_body1). */
#define KM_CV1_FN(TGT, ISA, VB, PP)                                            \
    TGT static void FN(lanes1_##ISA)(const REAL *X, ptrdiff_t m, ptrdiff_t d,  \
                                     const REAL *ct, ptrdiff_t nb,             \
                                     int32_t *lab)                             \
    {                                                                          \
        (void)nb;                                                              \
        KM_CHECK_P(PP, KM_CV1_MAXP);                                           \
        KM_CAT(KM_CAT(cv_body1, SFX), VB)(X, NULL, m, d, ct, lab, NULL, 0, 0,  \
                                          0, PP, 0);                           \
    }                                                                          \
    TGT static void FN(lanes1s_##ISA)(const REAL *X, const REAL *w,            \
                                      ptrdiff_t m, ptrdiff_t d,                \
                                      const REAL *ct, int32_t *lab,            \
                                      double *acc, ptrdiff_t copies,           \
                                      ptrdiff_t stride, ptrdiff_t K)           \
    {                                                                          \
        KM_CHECK_P(PP, KM_CV1_MAXP);                                           \
        if (w)                                                                 \
            KM_CAT(KM_CAT(cv_body1, SFX), VB)(X, w, m, d, ct, lab, acc,        \
                                              copies, stride, K, PP, 1);       \
        else if (d == 16)                                                      \
            KM_CAT(KM_CAT(cv_body1, SFX), VB)(X, NULL, m, 16, ct, lab, acc,    \
                                              copies, stride, K, PP, 1);       \
        else                                                                   \
            KM_CAT(KM_CAT(cv_body1, SFX), VB)(X, NULL, m, d, ct, lab, acc,     \
                                              copies, stride, K, PP, 1);       \
    }
#if ML_HAVE_CLONES
/* 64-byte vectors: at least one vector's lanes of points per step (the
 * transposed argmin takes a whole vector of points). */
KM_CV1_FN(ML_TARGET_V4, v4z, 64, ML_KM_LANES1_P64(sizeof(REAL)))
KM_CV1_FN(ML_TARGET_V4, v4, 32, ML_KM_LANES1_P32)
KM_CV1_FN(ML_TARGET_V3, v3, 32, ML_KM_LANES1_P16)
#endif
KM_CV1_FN(, base, 16, ML_KM_LANES1_P16)
#undef KM_CV1_FN
#if defined(KM_LANES2) && KM_LANES2
/* The float32 screen's kernel (best and second best; screen_rows), with the
 * blocking of the kernel above. */
#define KM_CV2_FN(TGT, ISA, VB, PP, Q)                                         \
    TGT static void FN(lanes2_##ISA##_q##Q)(                                   \
        const double *X, const double *t, ptrdiff_t m, ptrdiff_t d,            \
        const REAL *ct, ptrdiff_t nb, REAL *x32, int32_t *lab, REAL *best,     \
        REAL *second, double *xn)                                              \
    {                                                                          \
        KM_CHECK_P(PP, KM_CV_MAXP);                                            \
        KM_CAT(KM_CAT(cv_body2, SFX), VB)(X, t, m, d, ct, nb, x32, lab, best,  \
                                          second, xn, PP, Q);                  \
    }
#if ML_HAVE_CLONES
KM_CV_Q124(KM_CV2_FN, ML_TARGET_V4, v4z, 64, ML_KM_SCREEN_P64)
KM_CV_Q124(KM_CV2_FN, ML_TARGET_V4, v4, 32, ML_KM_SCREEN_P32)
KM_CV_Q124(KM_CV2_FN, ML_TARGET_V3, v3, 32, ML_KM_LANES_P16)
#endif
KM_CV_Q124(KM_CV2_FN, , base, 16, ML_KM_LANES_P16)
#undef KM_CV2_FN
#endif
#undef KM_CV_Q124
/* The lanes kernels' vector bytes at a lanes_isa level. */
#define KM_LANES_VB(isa) \
    (ML_HAVE_CLONES && (isa) >= 5 ? 64 : ML_HAVE_CLONES && (isa) >= 3 ? 32 : 16)
#else
/* Portable form of the centers-across-lanes kernels: the same scores, one
 * point and one center at a time, with each point's best and second-best
 * score (the pruned pass's form; the others call it). */
static void FN(lanesb2_scalar)(const REAL *ML_RESTRICT X, ptrdiff_t m,
                               ptrdiff_t d, const REAL *ML_RESTRICT ct,
                               ptrdiff_t nb, int32_t *ML_RESTRICT lab,
                               REAL *ML_RESTRICT best, REAL *ML_RESTRICT second)
{
    const ptrdiff_t W = ML_KM_VECTOR_BYTES / sizeof(REAL);
    for (ptrdiff_t b = 0; b < m; ++b) {
        const REAL *x = X + b * d;
        REAL bs = (REAL)INFINITY, s2 = (REAL)INFINITY;
        int32_t bk = 0;
        for (ptrdiff_t k = 0; k < nb * W; ++k) {
            const REAL *cb = ct + (k / W) * (d + 1) * W + k % W;
            REAL a = cb[0];
            for (ptrdiff_t j = 0; j < d; ++j) a += x[j] * cb[(1 + j) * W];
            const REAL hi = a < bs ? bs : a;
            s2 = hi < s2 ? hi : s2;
            if (a < bs) { bs = a; bk = (int32_t)k; }
        }
        lab[b] = bk;
        best[b] = bs;
        second[b] = s2;
    }
}
/* Lloyd's portable form: the one above, best and second best dropped. */
static void FN(lanes_scalar)(const REAL *ML_RESTRICT X, ptrdiff_t m,
                             ptrdiff_t d, const REAL *ML_RESTRICT ct,
                             ptrdiff_t nb, int32_t *ML_RESTRICT lab)
{
    for (ptrdiff_t b = 0; b < m; ++b) {
        REAL bs, s2;
        FN(lanesb2_scalar)(X + b * d, 1, d, ct, nb, lab + b, &bs, &s2);
    }
}
#if defined(KM_LANES2) && KM_LANES2
/* The screen's kernel, portable form: best and second best as well. */
static void FN(lanes2_scalar)(const double *ML_RESTRICT X,
                              const double *ML_RESTRICT t, ptrdiff_t m,
                              ptrdiff_t d, const REAL *ML_RESTRICT ct,
                              ptrdiff_t nb, REAL *ML_RESTRICT x32,
                              int32_t *ML_RESTRICT lab, REAL *ML_RESTRICT best,
                              REAL *ML_RESTRICT second, double *ML_RESTRICT xn)
{
    for (ptrdiff_t b = 0; b < m; ++b) {
        REAL *x = x32;  /* this row (translated) in REAL, dead after it */
        double q = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double y = t ? X[b * d + j] - t[j] : X[b * d + j];
            q += y * y;
            x[j] = (REAL)y;
        }
        xn[b] = q;
        FN(lanesb2_scalar)(x, 1, d, ct, nb, lab + b, best + b, second + b);
    }
}
#endif
#define KM_LANES_VB(isa) ML_KM_VECTOR_BYTES
#endif
ML_FP_CONTRACT_END

/* Which instances of the centers-across-lanes kernels run K centers on
 * this CPU: 5 the AVX-512 level's 64-byte ones, 4 its 32-byte ones, 3
 * AVX2's, 1 the baseline's.  64 bytes where ml_wide_vectors says 512-bit
 * FMAs run at full rate and the centers fill more than one 32-byte vector
 * (fewer leave half of each 64-byte vector idle: C harness, N = 1e6, 1
 * thread, 64 / 32 bytes: float32 d = 16, K = 8: 1.18, K = 4: 1.07; d = 12,
 * K = 8: 1.10; float64 d = 16, K = 4: 1.04; against 0.90-1.06 for 4 < K <= 8
 * (float64) and 8 < K <= 16 (float32), kmeans.h).  Every width gives the
 * same scores and labels (one center per lane, its terms in the same
 * order): the choice is one of speed. */
static int FN(lanes_isa)(ptrdiff_t K)
{
    const int level = ml_simd_level();
    if (level < 4) return level == 3 ? 3 : 1;
    return K > 32 / (ptrdiff_t)sizeof(REAL) && ml_kmeans_wide_lanes() ? 5 : 4;
}

/* The blocking of the centers-across-lanes kernels for K centers on this
 * CPU (isa: a lanes_isa level): Q vectors per block (returned), block width
 * *W (centers per block) and block count *nb. */
static int FN(lanes_blocking)(int isa, ptrdiff_t K, ptrdiff_t *W, ptrdiff_t *nb)
{
    const ptrdiff_t VL = KM_LANES_VB(isa) / (ptrdiff_t)sizeof(REAL);
    (void)isa;  /* unused where KM_LANES_VB does not depend on it */
#if KM_HAVE_VEC
    const int Q = K <= VL ? 1 : K <= 2 * VL ? 2 : 4;
#else
    const int Q = 1;
#endif
    *W = Q * VL;
    *nb = (K + *W - 1) / *W;
    return Q;
}

/* The centers-across-lanes kernel for K centers on this CPU, with its block
 * width (*W, centers per block) and block count (*nb). */
static FN(km_lanes_fn) FN(lanes_for)(ptrdiff_t K, ptrdiff_t *W, ptrdiff_t *nb)
{
    const int isa = FN(lanes_isa)(K);
    const int Q = FN(lanes_blocking)(isa, K, W, nb);
    (void)Q;
#if KM_HAVE_VEC
    const int one = *nb == 1 && Q == 1;  /* K <= the lanes of one vector */
#if ML_HAVE_CLONES
    if (one)
        return isa >= 5 ? FN(lanes1_v4z) : isa == 4 ? FN(lanes1_v4)
               : isa == 3 ? FN(lanes1_v3) : FN(lanes1_base);
    if (isa >= 5)
        return Q == 1 ? FN(lanes_v4z_q1) : Q == 2 ? FN(lanes_v4z_q2) : FN(lanes_v4z_q4);
    if (isa == 4)
        return Q == 1 ? FN(lanes_v4_q1) : Q == 2 ? FN(lanes_v4_q2) : FN(lanes_v4_q4);
    if (isa == 3)
        return Q == 1 ? FN(lanes_v3_q1) : Q == 2 ? FN(lanes_v3_q2) : FN(lanes_v3_q4);
#endif
    return one ? FN(lanes1_base) : Q == 1 ? FN(lanes_base_q1)
           : Q == 2 ? FN(lanes_base_q2) : FN(lanes_base_q4);
#else
    return FN(lanes_scalar);
#endif
}

/* The pruned pass's form for K centers (lanes_for's blocking). */
static FN(km_lanes_b2_fn) FN(lanes_b2_for)(ptrdiff_t K)
{
    ptrdiff_t W, nb;
    const int isa = FN(lanes_isa)(K);
    const int Q = FN(lanes_blocking)(isa, K, &W, &nb);
    (void)Q;
#if KM_HAVE_VEC
#if ML_HAVE_CLONES
    if (isa >= 5)
        return Q == 1 ? FN(lanesb2_v4z_q1) : Q == 2 ? FN(lanesb2_v4z_q2) : FN(lanesb2_v4z_q4);
    if (isa == 4)
        return Q == 1 ? FN(lanesb2_v4_q1) : Q == 2 ? FN(lanesb2_v4_q2) : FN(lanesb2_v4_q4);
    if (isa == 3)
        return Q == 1 ? FN(lanesb2_v3_q1) : Q == 2 ? FN(lanesb2_v3_q2) : FN(lanesb2_v3_q4);
#endif
    return Q == 1 ? FN(lanesb2_base_q1) : Q == 2 ? FN(lanesb2_base_q2) : FN(lanesb2_base_q4);
#else
    return FN(lanesb2_scalar);
#endif
}

/* The one-vector form with sums for K centers on this CPU, NULL where
 * the centers do not fit one vector (or there are no vector kernels). */
static FN(km_lanes_sums_fn) FN(lanes_sums_for)(ptrdiff_t K)
{
#if KM_HAVE_VEC
    const int isa = FN(lanes_isa)(K);
    if (K > KM_LANES_VB(isa) / (ptrdiff_t)sizeof(REAL)) return NULL;
#if ML_HAVE_CLONES
    if (isa >= 5) return FN(lanes1s_v4z);
    if (isa == 4) return FN(lanes1s_v4);
    if (isa == 3) return FN(lanes1s_v3);
#endif
    return FN(lanes1s_base);
#else
    (void)K;
    return NULL;
#endif
}
#if defined(KM_LANES2) && KM_LANES2
/* The screen's kernel for K centers (lanes_for's choice of width and
 * blocking). */
static km_screen_fn FN(lanes2_for)(ptrdiff_t K, ptrdiff_t *W, ptrdiff_t *nb)
{
    const int isa = FN(lanes_isa)(K);
    const int Q = FN(lanes_blocking)(isa, K, W, nb);
#if KM_HAVE_VEC
#if ML_HAVE_CLONES
    if (isa >= 5)
        return Q == 1 ? FN(lanes2_v4z_q1) : Q == 2 ? FN(lanes2_v4z_q2) : FN(lanes2_v4z_q4);
    if (isa == 4)
        return Q == 1 ? FN(lanes2_v4_q1) : Q == 2 ? FN(lanes2_v4_q2) : FN(lanes2_v4_q4);
    if (isa == 3)
        return Q == 1 ? FN(lanes2_v3_q1) : Q == 2 ? FN(lanes2_v3_q2) : FN(lanes2_v3_q4);
#endif
    return Q == 1 ? FN(lanes2_base_q1) : Q == 2 ? FN(lanes2_base_q2) : FN(lanes2_base_q4);
#else
    (void)Q;
    return FN(lanes2_scalar);
#endif
}
#endif

typedef void (*FN(km_tile_fn))(const REAL *, ptrdiff_t, ptrdiff_t, const REAL *,
                               const REAL *, ptrdiff_t, REAL *, REAL *, REAL *,
                               int32_t *);

static FN(km_tile_fn) FN(tile_for)(ptrdiff_t d)
{
    static const FN(km_tile_fn) small[9] = {
        NULL, FN(tile_d1), FN(tile_d2), FN(tile_d3), FN(tile_d4),
        FN(tile_d5), FN(tile_d6), FN(tile_d7), FN(tile_d8)};
    return d <= 8 ? small[d] : FN(tile_any);
}

typedef void (*FN(km_small_fn))(const REAL *, ptrdiff_t, const REAL *, ptrdiff_t,
                                int32_t *);

/* The small-d kernel for d (ml_kmeans_kernel decides where it serves). */
static FN(km_small_fn) FN(small_for)(ptrdiff_t d)
{
    static const FN(km_small_fn) by_d[ML_KM_SMALL_KERNEL_D + 1] = {
        NULL, FN(small_d1), FN(small_d2), FN(small_d3), FN(small_d4),
        FN(small_d5), FN(small_d6), FN(small_d7), FN(small_d8)};
#if KM_SMALL_V4
    static const FN(km_small_fn) v4z[ML_KM_SMALL_KERNEL_D + 1] = {
        NULL, FN(small_v4z_d1), FN(small_v4z_d2), NULL, NULL, NULL, NULL,
        NULL, NULL};
    if (d >= 1 && d <= ML_KM_SMALL_KERNEL_D && v4z[d] && ml_simd_level() >= 4 &&
        ML_KM_SMALL_V4_WIDE(d, sizeof(REAL)))
        return v4z[d];
#endif
    if (d == ML_KM_SMALL_EXTRA_D) return FN(small_d16);
    return d <= ML_KM_SMALL_KERNEL_D ? by_d[d] : NULL;
}
#undef KM_SMALL_V4

/* GEMM path: nearest (and second nearest) over the columns of P (m x K,
 * column-major) plus cn, vectorized over the points. */
ML_CLONES static void
FN(argmin_cols)(const REAL *ML_RESTRICT P, ptrdiff_t m,
                const REAL *ML_RESTRICT cn, ptrdiff_t K,
                REAL *ML_RESTRICT best, REAL *ML_RESTRICT bestk,
                REAL *ML_RESTRICT best2)
{
    for (ptrdiff_t b = 0; b < m; ++b) {
        best[b] = P[b] + cn[0];
        bestk[b] = 0;
        if (best2) best2[b] = (REAL)INFINITY;
    }
    for (ptrdiff_t k = 1; k < K; ++k) {
        const REAL *p0 = P + k * m;
        const REAL n0 = cn[k], k0 = (REAL)k;
        if (best2) {
            for (ptrdiff_t b = 0; b < m; ++b) {
                const REAL a = p0[b] + n0, bs = best[b];
                const REAL hi = a < bs ? bs : a;
                best2[b] = hi < best2[b] ? hi : best2[b];
                bestk[b] = a < bs ? k0 : bestk[b];
                best[b] = a < bs ? a : bs;
            }
        } else {
            for (ptrdiff_t b = 0; b < m; ++b) {
                const REAL a = p0[b] + n0, bs = best[b];
                bestk[b] = a < bs ? k0 : bestk[b];
                best[b] = a < bs ? a : bs;
            }
        }
    }
}

/* row += wb x (weighted) or row += x, four coordinates per vector operation
 * where d allows (the same products and sums, element by element). */
static ML_ALWAYS_INLINE void
FN(row_add)(double *ML_RESTRICT row, const REAL *ML_RESTRICT x, const ptrdiff_t d,
            const double wb, const int weighted)
{
    ptrdiff_t j = 0;
#if KM_HAVE_VEC
    if (d % 4 == 0)
        for (; j < d; j += 4) {
            km_v4d xv, rv;
            if (sizeof(REAL) == 8) {
                memcpy(&xv, x + j, sizeof xv);
            } else {
                /* float32: the four values converted one by one into the
                 * vector, which GCC 12 makes one whole-register conversion
                 * from memory (vcvtps2pd ymm); its __builtin_convertvector
                 * from 4 floats converts two lanes at a time and inserts
                 * (C harness, d = 16, K = 8, f32, rows in L2: the sums took
                 * a quarter of the pass). */
                const km_v4d t = {(double)x[j], (double)x[j + 1], (double)x[j + 2],
                                  (double)x[j + 3]};
                xv = t;
            }
            memcpy(&rv, row + j, sizeof rv);
            if (weighted)
                rv += wb * xv;
            else
                rv += xv;
            memcpy(row + j, &rv, sizeof rv);
        }
#endif
    for (; j < d; ++j) row[j] += weighted ? wb * (double)x[j] : (double)x[j];
}

/* Row b of a chunk added to cluster k's sums in copy b mod `copies` (copy
 * 0 when copies is 1): the row first, then its weight (without weights the
 * row as it is: the same sums as with weight 1.0, whose products are exact). */
static ML_ALWAYS_INLINE void
FN(accum_row)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w, ptrdiff_t b,
              const ptrdiff_t d, ptrdiff_t k, double *ML_RESTRICT acc,
              ptrdiff_t copies, ptrdiff_t stride, ptrdiff_t K)
{
    const ptrdiff_t u = copies == ML_KM_COPIES ? b % ML_KM_COPIES : 0;
    const double wb = w ? (double)w[b] : 1.0;
    FN(row_add)(acc + u * stride + k * d, X + b * d, d, wb, w != NULL);
    acc[u * stride + K * d + k] += wb;
}

/* Weighted per-cluster sums of one chunk, in float64.  Row b goes to the
 * accumulator copy b mod `copies` (copies is 1 or ML_KM_COPIES = 4):
 * consecutive rows of the same cluster then do not wait on each other's
 * additions.  Without weights (w == NULL) the rows are added as they are:
 * the same sums as with weight 1.0, whose products are exact, without the
 * multiplications. */
static ML_ALWAYS_INLINE void
FN(accum_body)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w,
               ptrdiff_t m, const ptrdiff_t d, const int32_t *ML_RESTRICT lab,
               double *ML_RESTRICT acc, ptrdiff_t copies, ptrdiff_t stride,
               ptrdiff_t K)
{
    double *ML_RESTRICT wacc = acc + K * d;
    if (copies == ML_KM_COPIES && m == ML_KM_CHUNK) {
        for (ptrdiff_t b = 0; b < m; b += ML_KM_COPIES)
            for (ptrdiff_t u = 0; u < ML_KM_COPIES; ++u) {
                const ptrdiff_t k = lab[b + u];
                double *row = acc + u * stride + k * d;
                /* The row first, then its weight: wacc may alias row as far
                 * as the compiler knows, and a store to it ahead of the row's
                 * loads keeps the row update from being vectorized. */
                const double wb = w ? (double)w[b + u] : 1.0;
                FN(row_add)(row, X + (b + u) * d, d, wb, w != NULL);
                wacc[u * stride + k] += wb;
            }
        return;
    }
    for (ptrdiff_t b = 0; b < m; ++b) {
        const ptrdiff_t u = copies == ML_KM_COPIES ? b % ML_KM_COPIES : 0;
        const ptrdiff_t k = lab[b];
        const REAL *x = X + b * d;
        double *row = acc + u * stride + k * d;
        const double wb = w ? (double)w[b] : 1.0;
        wacc[u * stride + k] += wb;
        for (ptrdiff_t j = 0; j < d; ++j) row[j] += wb * (double)x[j];
    }
}

/* Specialised for d = 1..8, 16, 32, 64 and for w == NULL (the branch on w
 * then folds).  d = 64 (eighth round, C harness, N = 1e6, K = 32, f64, the
 * float32 screen, 1 thread): 60.1-60.4 -> 59.2-60.1 ms per iteration. */
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
KM_ACCUM_D(16)
KM_ACCUM_D(32)
KM_ACCUM_D(64)
#undef KM_ACCUM_D

/* Any d, also compiled per ISA level (inlined into the un-cloned pass it
 * ran on the baseline's SSE2 with its vectors spilled to the stack). */
ML_CLONES static void FN(accum_any)(const REAL *X, const REAL *w, ptrdiff_t m,
                                    ptrdiff_t d, const int32_t *lab,
                                    double *acc, ptrdiff_t copies,
                                    ptrdiff_t stride, ptrdiff_t K)
{
    if (w)
        FN(accum_body)(X, w, m, d, lab, acc, copies, stride, K);
    else
        FN(accum_body)(X, NULL, m, d, lab, acc, copies, stride, K);
}

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
    case 16: FN(accum_d16)(X, w, m, lab, acc, copies, stride, K); break;
    case 32: FN(accum_d32)(X, w, m, lab, acc, copies, stride, K); break;
    case 64: FN(accum_d64)(X, w, m, lab, acc, copies, stride, K); break;
    default: FN(accum_any)(X, w, m, d, lab, acc, copies, stride, K);
    }
}

#ifndef KM_MOVED_MASK_DEFINED
#define KM_MOVED_MASK_DEFINED
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif
/* Bit t set where a[t] != b[t], t < n <= 64: four labels a compare and a
 * sign-bit mask on x86 (SSE2, every clone), one at a time elsewhere. */
static ML_ALWAYS_INLINE uint64_t km_moved_mask(const int32_t *a, const int32_t *b,
                                               ptrdiff_t n)
{
    uint64_t mask = 0;
    ptrdiff_t t = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    for (; t + 4 <= n; t += 4) {
        const __m128i va = _mm_loadu_si128((const __m128i *)(const void *)(a + t));
        const __m128i vb = _mm_loadu_si128((const __m128i *)(const void *)(b + t));
        const int eq = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(va, vb)));
        mask |= (uint64_t)(eq ^ 15) << t;
    }
#endif
    for (; t < n; ++t) mask |= (uint64_t)(a[t] != b[t]) << t;
    return mask;
}

/* The index of the lowest set bit of v != 0. */
static ML_ALWAYS_INLINE int km_lowest_bit(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(v);
#else
    int i = 0;
    for (; !(v & 1); v >>= 1) ++i;
    return i;
#endif
}
#endif

/* The change to the per-cluster sums (K x d, then the K counts; one copy)
 * when the chunk's rows move from their old labels L to nl (unweighted):
 * each moved row added to its new cluster and subtracted from its old one,
 * in row order.  Most of Lloyd's passes add only these to the running sums
 * (lloyd_step): after the first few passes a few percent of the rows move
 * (3-7% in passes 3-6 at d = 16, K = 8-32 on uniform data), and the sums of
 * every row were a quarter of the pass at d = 16, K = 8, float32.  The moved
 * rows are found 64 at a time as a bit mask and visited bit by bit: a
 * branch per row mispredicted at every moved row and cost more than the
 * sums it saved (C harness, d = 16, K = 32: 0.95x). */
ML_CLONES static void FN(accum_delta)(const REAL *ML_RESTRICT X, ptrdiff_t m,
                                      ptrdiff_t d, const int32_t *ML_RESTRICT nl,
                                      const int32_t *ML_RESTRICT L,
                                      double *ML_RESTRICT acc, ptrdiff_t K)
{
    double *ML_RESTRICT cnt = acc + K * d;
    for (ptrdiff_t b0 = 0; b0 < m; b0 += 64) {
        const ptrdiff_t nb = m - b0 < 64 ? m - b0 : 64;
        const uint64_t moved = km_moved_mask(nl + b0, L + b0, nb);
        for (uint64_t r = moved; r; r &= r - 1) {
            const ptrdiff_t b = b0 + km_lowest_bit(r);
            const int32_t kn = nl[b], ko = L[b];
            const REAL *x = X + b * d;
            double *ML_RESTRICT rn = acc + (ptrdiff_t)kn * d;
            double *ML_RESTRICT ro = acc + (ptrdiff_t)ko * d;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const double v = (double)x[j];
                rn[j] += v;
                ro[j] -= v;
            }
            cnt[kn] += 1.0;
            cnt[ko] -= 1.0;
        }
    }
}

/* Per-cluster sums of one chunk for the small-d pass, row-packed: cluster k
 * of copy u is the row acc[u * stride + k * rs ..] = [sums of x_1..x_d,
 * weight, zeros], rs = d + 1 rounded up to 4 doubles, so that a point is
 * added with rs / 4 vector additions instead of d + 1 scalar ones.  The
 * rows go to the copies and are added in the same order as in accum_body:
 * every sum is the same sequence of additions, bit for bit. */
#define KM_PACKED_RS(d) (((d) + 4) / 4 * 4)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  /* GCC 12 sees the lanes set one by one as unset */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if KM_HAVE_VEC
#ifndef KM_V4DI_DEFINED
#define KM_V4DI_DEFINED
typedef int64_t km_v4di __attribute__((vector_size(32)));
#endif
#endif
/* row += [x (times wb if weighted), wb, zeros] for one row x of d values;
 * `wide`: the four values from x on lie in the chunk (d < 4: the row is
 * read as one vector, converted whole, and its lanes past d replaced by
 * [wb, 0, ...] with bit masks: the same values as the lane-by-lane form,
 * without a scalar conversion and insert per coordinate).  The d = 3 form
 * (fifth round: C harness, N = 16384, f32 1.52 at K = 8, 1.28 at K = 32;
 * f64 1.00-1.02) now serves d = 1 and 2 too: with lane sets it lost there
 * (0.91-0.98), with the masks and the 4-row loop below it gains (sixth
 * round, C harness, 1 thread, N = 1e6, main / this with no prefetch:
 * d = 2 1.16, d = 3 1.13 (f64), 1.07 at d = 2 f32 with the rows in L2;
 * perf: the sums were 25% of the samples at d = 2, the kernel 38%).
 * The 4-row loop's gain at d = 8 is within noise (0.98-1.02).  Leaving
 * the weight vector out of unweighted rows at d = 4, 8 (counting the
 * labels per cluster instead, which gives the same exact integer weights)
 * was tried: 0.94-0.99, not kept. */
static ML_ALWAYS_INLINE void
FN(accum_packed_row)(double *ML_RESTRICT row, const REAL *ML_RESTRICT x,
                     const ptrdiff_t d, const double wb, const int weighted,
                     const int wide)
{
#if KM_HAVE_VEC
    if (d < 4 && wide) {
        km_v4di keep, at_d;
        for (int j = 0; j < 4; ++j) {
            keep[j] = j < d ? -1 : 0;
            at_d[j] = j == d ? -1 : 0;
        }
        FN(km_vr) xv;
        memcpy(&xv, x, sizeof xv);
        km_v4d t0 = __builtin_convertvector(xv, km_v4d);
        if (weighted) t0 *= wb;
        const km_v4d wv = wb - (km_v4d){0};
        const km_v4d t = (km_v4d)(((km_v4di)t0 & keep) | ((km_v4di)wv & at_d));
        km_v4d r;
        memcpy(&r, row, sizeof r);
        r += t;
        memcpy(row, &r, sizeof r);
        return;
    }
    const ptrdiff_t rs = KM_PACKED_RS(d);
    km_v4d t[KM_PACKED_RS(ML_KM_SMALL_KERNEL_D) / 4];
    for (ptrdiff_t q = 0; q < rs / 4; ++q) t[q] = (km_v4d){0};
    for (ptrdiff_t j = 0; j < d; ++j)
        t[j / 4][j % 4] = weighted ? wb * (double)x[j] : (double)x[j];
    t[d / 4][d % 4] = wb;
    for (ptrdiff_t q = 0; q < rs / 4; ++q) {
        km_v4d r;
        memcpy(&r, row + 4 * q, sizeof r);
        r += t[q];
        memcpy(row + 4 * q, &r, sizeof r);
    }
#else
    (void)wide;
    for (ptrdiff_t j = 0; j < d; ++j) row[j] += weighted ? wb * (double)x[j] : (double)x[j];
    row[d] += wb;
#endif
}

/* A whole chunk with ML_KM_COPIES copies is taken ML_KM_COPIES rows at a
 * time (row b + u to copy u: the same rows, copies and order as the loop
 * below, without a modulo and a multiply per row). */
static ML_ALWAYS_INLINE void
FN(accum_packed_body)(const REAL *ML_RESTRICT X, const REAL *ML_RESTRICT w,
                      ptrdiff_t m, const ptrdiff_t d,
                      const int32_t *ML_RESTRICT lab, double *ML_RESTRICT acc,
                      ptrdiff_t copies, ptrdiff_t stride)
{
    const ptrdiff_t rs = KM_PACKED_RS(d);
    if (copies == ML_KM_COPIES && m == ML_KM_CHUNK) {
        for (ptrdiff_t b = 0; b < m; b += ML_KM_COPIES)
            for (ptrdiff_t u = 0; u < ML_KM_COPIES; ++u)
                FN(accum_packed_row)(acc + u * stride + (ptrdiff_t)lab[b + u] * rs,
                                     X + (b + u) * d, d, w ? (double)w[b + u] : 1.0,
                                     w != NULL, (b + u) * d + 4 <= m * d);
        return;
    }
    for (ptrdiff_t b = 0; b < m; ++b) {
        const ptrdiff_t u = copies == ML_KM_COPIES ? b % ML_KM_COPIES : 0;
        FN(accum_packed_row)(acc + u * stride + (ptrdiff_t)lab[b] * rs, X + b * d, d,
                             w ? (double)w[b] : 1.0, w != NULL, b * d + 4 <= m * d);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#define KM_ACCUM_PACKED_D(DV)                                                 \
    ML_CLONES static void FN(accum_packed_d##DV)(                             \
        const REAL *X, const REAL *w, ptrdiff_t m, const int32_t *lab,        \
        double *acc, ptrdiff_t copies, ptrdiff_t stride)                      \
    {                                                                         \
        if (w)                                                                \
            FN(accum_packed_body)(X, w, m, DV, lab, acc, copies, stride);     \
        else                                                                  \
            FN(accum_packed_body)(X, NULL, m, DV, lab, acc, copies, stride);  \
    }
KM_ACCUM_PACKED_D(1)
KM_ACCUM_PACKED_D(2)
KM_ACCUM_PACKED_D(3)
KM_ACCUM_PACKED_D(4)
KM_ACCUM_PACKED_D(5)
KM_ACCUM_PACKED_D(6)
KM_ACCUM_PACKED_D(7)
KM_ACCUM_PACKED_D(8)
#undef KM_ACCUM_PACKED_D

typedef void (*FN(km_accum_packed_fn))(const REAL *, const REAL *, ptrdiff_t,
                                       const int32_t *, double *, ptrdiff_t,
                                       ptrdiff_t);
static FN(km_accum_packed_fn) FN(accum_packed_for)(ptrdiff_t d)
{
    static const FN(km_accum_packed_fn) by_d[ML_KM_SMALL_KERNEL_D + 1] = {
        NULL, FN(accum_packed_d1), FN(accum_packed_d2), FN(accum_packed_d3),
        FN(accum_packed_d4), FN(accum_packed_d5), FN(accum_packed_d6),
        FN(accum_packed_d7), FN(accum_packed_d8)};
    return by_d[d];
}

/* Per-thread scratch for one chunk. */
typedef struct {
    REAL *xt;     /* d x KM_TP: the transposed tile (tile path) */
    REAL *best;   /* ML_KM_CHUNK: best scores */
    REAL *bestk;  /* ML_KM_CHUNK: their labels (GEMM path) */
    REAL *best2;  /* ML_KM_CHUNK: second best scores (pruned pass) */
    REAL *P;      /* ML_KM_CHUNK x K: -2 X C^T (GEMM path) */
    REAL *gx;     /* ML_KM_CHUNK x d: rows the bounds left open (pruned pass) */
    REAL *tx;     /* ML_KM_CHUNK x d: the chunk's rows less ws->shift */
#if KM_SCREEN
    unsigned char *sx; /* this thread's screen scratch (screen_rows), or NULL */
#endif
} FN(km_scratch);

#if KM_SCREEN && !KM_SCREEN_Q16
/* The float32 screen's translations and bound (screen_rows), set per pass
 * by screen_centers: the centers' translation t (d doubles), the rows' r (t
 * or NULL: none); with e_k = c_k - t and f_k = e_k + 2 (t - r) (as
 * computed), N = max_k sum_j |e_kj| (|e_kj| + |f_kj|) and upper bounds M2 >=
 * max_k ||2 e_k||_2, M = max_kj |2 e_kj|; of the float64 kernel's centers,
 * N64 = max_k of the norms it starts from and M264 >= max_k ||2 c_k||_2; tn
 * >= ||r||_2; g32 = gamma_{d+3}(2^-24) + gamma_{d+3}(2^-53), g64 =
 * gamma_{d+1}(2^-53) (screen_init). */
typedef struct {
    double *t;
    const double *r;
    double N, M2, M, N64, M264, tn, g32, g64;
} km_screen_bound;
#endif

/* Workspace shared by the Lloyd and online drivers and assignment. */
typedef struct {
    ptrdiff_t n, d, K, n_chunks, S, copies, stride, nblk;
    int nt, use_gemm, method;
    GEMM_T gemm;
    FN(km_tile_fn) tile;
    FN(km_small_fn) small; /* NULL: the tile (or BLAS) serves every pass */
    FN(km_lanes_fn) lanes; /* centers-across-lanes kernel, or NULL */
    FN(km_lanes_sums_fn) lanes_sums; /* its one-vector form with sums, or NULL */
    FN(km_lanes_b2_fn) lanes_b2;     /* its form with second best (pruned passes) */
    ptrdiff_t lw, lnb;     /* its block width and block count */
    REAL *ct;              /* lnb x (d + 1) x lw packed centers (lanes) */
    FN(km_accum_packed_fn) accum_packed; /* with small: row-packed sums */
    ptrdiff_t rs;         /* packed row stride (small d), 0: generic layout */
    ptrdiff_t acc_stride; /* doubles per accumulator copy */
    REAL *cn;             /* K: ||c_k||^2 (GEMM path) */
    REAL *cpk;            /* K x (d + 1): norm and -2 c_k (small-d kernel) */
    REAL *cblk, *cnb;     /* nblk x d x KM_TK, nblk x KM_TK (tile path) */
    double *seg;          /* S x copies x acc_stride partial sums, 64-byte aligned */
    double *seg_mem;      /* its allocation */
    int64_t *seg_changed; /* S: labels changed per segment */
    int64_t *seg_open;    /* S: rows scored per segment */
    REAL *scratch;        /* nt x per_thread */
    ptrdiff_t per_thread;
    const REAL *shift;    /* d: subtracted from every row first, or NULL */
#if KM_SCREEN
    /* The screen of the passes (ml_kmeans_screens): of every row
     * (screen_rows), or of the rows a pruned pass's bounds leave open
     * (screen_pruned); float32 for float64 data, int16 for float32 data
     * (kmeans_q16.h). */
#if KM_SCREEN_Q16
    int screen;           /* whether the passes are screened */
    ml_q16_centers q16;   /* its centers, the bound's constants, the kept rows */
    int passes;           /* passes so far (the second keeps the rows' integers) */
#else
    km_screen_fn screen;  /* its kernel, or NULL: no screen */
    ptrdiff_t sw, snb;    /* its block width and block count */
    float *ct32;          /* snb x (d + 1) x sw: the packed centers, float32 */
    km_screen_bound sb;   /* the translation and the bound's constants */
#endif
    int s_on;             /* this pass is screened (centers in range) */
    unsigned char *sbuf;  /* nt x s_per bytes: per-thread screen scratch */
    ptrdiff_t s_per;
#endif
} FN(km_work);

/* Nearest centers of the m rows of X: int32 labels in lab, and when best2
 * is not NULL the best and second best scores (||x - c||^2 - ||x||^2) in
 * s->best and best2. */
static void FN(assign_chunk)(const FN(km_work) *ws, const REAL *X, ptrdiff_t m,
                             const REAL *C, FN(km_scratch) *s, int32_t *lab,
                             REAL *best2)
{
    const ptrdiff_t K = ws->K, d = ws->d;
    if (ws->small && !best2) {
        ws->small(X, m, ws->cpk, K, lab);
        return;
    }
    if (ws->lanes && !best2) {
        ws->lanes(X, m, d, ws->ct, ws->lnb, lab);
        return;
    }
    if (ws->lanes_b2 && best2) {
        ws->lanes_b2(X, m, d, ws->ct, ws->lnb, lab, s->best, best2);
        return;
    }
    if (!ws->use_gemm) {
        ws->tile(X, m, d, ws->cblk, ws->cnb, K, s->xt,
                 best2 ? s->best : NULL, best2, lab);
        return;
    }
    const REAL *cn = ws->cn;
    REAL *P = s->P;
    REAL alpha = -2, beta = 0;
    char ta = 'T', tb = 'N';
    int Kk = (int)d, lda = (int)d, ldb = (int)d;
    if (K < ML_KM_GEMM_ROWWISE_K) {
        /* Few centers: P row-major (m x K) = -2 X C^T, the orientation in
         * which BLAS packs the small C, and a short argmin per row. */
        int M = (int)K, Nn = (int)m, ldc = (int)K;
        ws->gemm(&ta, &tb, &M, &Nn, &Kk, &alpha, (REAL *)C, &lda, (REAL *)X,
                 &ldb, &beta, P, &ldc);
        for (ptrdiff_t b = 0; b < m; ++b) {
            const REAL *row = P + b * K;
            REAL bs = row[0] + cn[0], s2 = (REAL)INFINITY;
            int32_t bk = 0;
            for (ptrdiff_t k = 1; k < K; ++k) {
                const REAL a = row[k] + cn[k], hi = a < bs ? bs : a;
                s2 = hi < s2 ? hi : s2;
                if (a < bs) { bs = a; bk = (int32_t)k; }
            }
            lab[b] = bk;
            s->best[b] = bs;
            if (best2) best2[b] = s2;
        }
        return;
    }
    /* P (m x K, column-major: P[k * m + b]) = -2 X C^T, then the argmin of
     * cn_k + P[k * m + b] over k, vectorized over the points b. */
    int M = (int)m, Nn = (int)K, ldc = (int)m;
    ws->gemm(&ta, &tb, &M, &Nn, &Kk, &alpha, (REAL *)X, &lda, (REAL *)C, &ldb,
             &beta, P, &ldc);
    FN(argmin_cols)(P, m, cn, K, s->best, s->bestk, best2);
    for (ptrdiff_t b = 0; b < m; ++b) lab[b] = (int32_t)s->bestk[b];
}

static void FN(work_free)(FN(km_work) *ws)
{
    free(ws->cn); free(ws->cpk); free(ws->ct); free(ws->cblk); free(ws->cnb); free(ws->seg_mem);
    free(ws->seg_changed); free(ws->seg_open); free(ws->scratch);
#if KM_SCREEN && KM_SCREEN_Q16
    ml_q16_free(&ws->q16); free(ws->sbuf);
#elif KM_SCREEN
    free(ws->ct32); free(ws->sbuf); free(ws->sb.t);
#endif
}

#if KM_SCREEN
/* Per-thread screen scratch, in bytes (each part 64-byte aligned): the
 * backoff state; for the float32 screen one step's rows in float32
 * (KM_SX_STEP_ROWS x d: the screen kernel's rows per step at most; the
 * portable one takes a row at a time), the chunk's float32 best and
 * second-best scores (B each), ||x||^2 (B doubles); for the int16 screen
 * ml_q16_screen's scratch; then the rows to re-score gathered (B x d
 * REAL). */
#ifndef KM_SCREEN_STATE_DEFINED
#define KM_SCREEN_STATE_DEFINED
typedef struct { int skip, fails; } km_screen_state;
#if KM_HAVE_VEC
#define KM_SX_STEP_ROWS KM_CV_MAXP
#else
#define KM_SX_STEP_ROWS 1
#endif
#define KM_SX_ALIGN(b) (((b) + 63) / 64 * 64)
#define KM_SX_X32(d) KM_SX_ALIGN(sizeof(km_screen_state))
#define KM_SX_B32(d) (KM_SX_X32(d) + KM_SX_ALIGN((size_t)KM_SX_STEP_ROWS * (d) * sizeof(float)))
#define KM_SX_S32(d) (KM_SX_B32(d) + KM_SX_ALIGN(ML_KM_CHUNK * sizeof(float)))
#define KM_SX_XN(d) (KM_SX_S32(d) + KM_SX_ALIGN(ML_KM_CHUNK * sizeof(float)))
#define KM_SX_Q16 KM_SX_ALIGN(sizeof(km_screen_state))
#endif
#undef KM_SX_GX
#if KM_SCREEN_Q16
#define KM_SX_GX(d) (KM_SX_Q16 + KM_SX_ALIGN(ml_q16_scratch_bytes(d)))
#else
#define KM_SX_GX(d) (KM_SX_XN(d) + KM_SX_ALIGN(ML_KM_CHUNK * sizeof(double)))
#endif
#undef KM_SX_BYTES
#define KM_SX_BYTES(d) (KM_SX_GX(d) + KM_SX_ALIGN((size_t)ML_KM_CHUNK * (d) * sizeof(REAL)))
#endif

#if KM_SCREEN && KM_SCREEN_Q16
/* The int16 screen's centers and per-thread scratch (screen_rows); no
 * screen where the CPU lacks AVX-512 VNNI. */
static int FN(screen_init)(FN(km_work) *ws)
{
    if (!ml_q16_available()) return ML_OK;
    const int st = ml_q16_init(&ws->q16, ws->d, ws->K);
    if (st == ML_ERR_ARG) return ML_OK;  /* d too large for exact integers */
    if (st != ML_OK) return st;
    ws->s_per = (ptrdiff_t)KM_SX_BYTES(ws->d);
    /* calloc: every thread's backoff state starts at zero. */
    ws->sbuf = calloc((size_t)ws->nt * (size_t)ws->s_per + 64, 1);
    if (!ws->sbuf) return ML_ERR_ALLOC;
    ws->screen = 1;
    return ML_OK;
}
#elif KM_SCREEN
/* The screen's kernel, its centers and per-thread scratch (screen_rows). */
static int FN(screen_init)(FN(km_work) *ws)
{
    const ptrdiff_t d = ws->d;
    ws->screen = lanes2_for_f32(ws->K, &ws->sw, &ws->snb);
    ws->ct32 = malloc((size_t)(ws->snb * (d + 1) * ws->sw) * sizeof(float));
    ws->s_per = (ptrdiff_t)KM_SX_BYTES(d);
    /* calloc: every thread's backoff state starts at zero. */
    ws->sbuf = calloc((size_t)ws->nt * (size_t)ws->s_per + 64, 1);
    ws->sb.t = malloc((size_t)d * sizeof(double));
    if (!ws->ct32 || !ws->sbuf || !ws->sb.t) return ML_ERR_ALLOC;
    /* gamma_n(u) = n u / (1 - n u) (screen_rows). */
    const double u32 = 0x1p-24, u64 = 0x1p-53, n3 = (double)(d + 3), n1 = (double)(d + 1);
    ws->sb.g32 = n3 * u32 / (1 - n3 * u32) + n3 * u64 / (1 - n3 * u64);
    ws->sb.g64 = n1 * u64 / (1 - n1 * u64);
    return ML_OK;
}
#endif

static int FN(work_init)(FN(km_work) *ws, ptrdiff_t n, ptrdiff_t d,
                         ptrdiff_t K, GEMM_T gemm, int method, int n_threads,
                         int with_sums, int pruned, const REAL *shift)
{
    memset(ws, 0, sizeof(*ws));
    ws->n = n; ws->d = d; ws->K = K; ws->gemm = gemm; ws->shift = shift;
    ws->method = method;
    ws->nt = ml_threads(n_threads);
    if (ws->nt < 1) ws->nt = 1;
    if (method == ML_KM_GEMM && !gemm) return ML_ERR_ARG;
    const int kernel = ml_kmeans_kernel(d, K, method, gemm != NULL, (int)sizeof(REAL));
    ws->use_gemm = kernel == ML_KM_KERNEL_GEMM;
    ws->tile = FN(tile_for)(d);
    ws->small = kernel == ML_KM_KERNEL_SMALL ? FN(small_for)(d) : NULL;
    ws->lanes = kernel == ML_KM_KERNEL_LANES ? FN(lanes_for)(K, &ws->lw, &ws->lnb) : NULL;
    ws->lanes_sums = ws->lanes ? FN(lanes_sums_for)(K) : NULL;
    ws->lanes_b2 = ws->lanes && pruned ? FN(lanes_b2_for)(K) : NULL;
    ws->nblk = (K + KM_TK - 1) / KM_TK;
    ws->n_chunks = (n + ML_KM_CHUNK - 1) / ML_KM_CHUNK;
    /* Interleaved accumulator copies break the add-latency chain when
     * consecutive rows fall in the same cluster; 4 copies of up to
     * ML_KM_COPIES_MAX_STRIDE doubles stay in L1. */
    ws->stride = K * d + K;
    ws->copies = ws->stride <= ML_KM_COPIES_MAX_STRIDE ? ML_KM_COPIES : 1;
    /* The segment count depends on (n, d, K) only, never on the threads:
     * at most ML_KM_MAX_SEGMENTS, fewer if their partial sums would pass
     * ML_KM_MAX_SEGMENT_BYTES. */
    ptrdiff_t S = ws->n_chunks < ML_KM_MAX_SEGMENTS ? ws->n_chunks : ML_KM_MAX_SEGMENTS;
    while (S > 1 && (double)S * ws->copies * ws->stride * 8.0 > ML_KM_MAX_SEGMENT_BYTES)
        S /= 2;
    if (S < 1) S = 1;
    ws->S = S;
    /* The small-d pass keeps its sums row-packed (same sums, same order). */
    const int packed = ws->small && d <= ML_KM_SMALL_KERNEL_D;
    ws->rs = packed ? KM_PACKED_RS(d) : 0;
    ws->accum_packed = packed ? FN(accum_packed_for)(d) : NULL;
    /* Each copy, and so each segment, a whole number of 64-byte lines (on
     * the 64-byte aligned seg): two threads never write one line (adjacent
     * segments run on different threads), and no packed row (4 doubles)
     * straddles two lines.  Layout only: the same sums.  Eighth round: the
     * unaligned form shared a line at each segment boundary (C harness,
     * N = 1e6, 2 threads, main / aligned: d = 2 1.32, d = 8 1.14, K = 8). */
    ws->acc_stride = ((ws->rs ? K * ws->rs : ws->stride) + 7) / 8 * 8;
    const ptrdiff_t B = ML_KM_CHUNK;
    ws->per_thread = d * KM_TP + 3 * B + (ws->use_gemm ? B * K : 0) +
                     (pruned ? B * d : 0);
    ws->per_thread = (ws->per_thread + 15) / 16 * 16 + (shift ? B * d : 0);
    ws->cn = malloc((size_t)K * sizeof(REAL));
    ws->cpk = malloc((size_t)(K * (d + 1)) * sizeof(REAL));
    if (ws->lanes)
        ws->ct = malloc((size_t)(ws->lnb * (d + 1) * ws->lw) * sizeof(REAL));
    ws->cblk = malloc((size_t)(ws->nblk * KM_TK * d) * sizeof(REAL));
    ws->cnb = malloc((size_t)(ws->nblk * KM_TK) * sizeof(REAL));
    ws->scratch = malloc((size_t)(ws->nt * ws->per_thread) * sizeof(REAL));
    ws->seg_changed = malloc((size_t)S * sizeof(int64_t));
    ws->seg_open = malloc((size_t)S * sizeof(int64_t));
    if (with_sums) {
        /* 64-byte aligned (acc_stride above; malloc gives 16 bytes). */
        ws->seg_mem = malloc((size_t)(S * ws->copies * ws->acc_stride + 8) * sizeof(double));
        ws->seg = ws->seg_mem ? (double *)KM_ALIGN64(ws->seg_mem) : NULL;
    }
    if (!ws->cn || !ws->cpk || (ws->lanes && !ws->ct) || !ws->cblk || !ws->cnb || !ws->scratch || !ws->seg_changed || !ws->seg_open ||
        (with_sums && !ws->seg)) {
        FN(work_free)(ws);
        return ML_ERR_ALLOC;
    }
#if KM_SCREEN
    /* The float32 screen of the passes, where ml_kmeans_screens says it
     * serves: unpruned (screen_rows), and the open rows of pruned ones
     * (screen_pruned). */
    if (ws->lanes && ml_kmeans_screens(d, K, method, gemm != NULL, (int)sizeof(REAL)) &&
        FN(screen_init)(ws) != ML_OK) {
        FN(work_free)(ws);
        return ML_ERR_ALLOC;
    }
#endif
    return ML_OK;
}

static void FN(scratch_of)(const FN(km_work) *ws, int tid, FN(km_scratch) *sc)
{
    const ptrdiff_t B = ML_KM_CHUNK;
    REAL *base = ws->scratch + (ptrdiff_t)tid * ws->per_thread;
    sc->xt = base;
    sc->best = base + ws->d * KM_TP;
    sc->bestk = sc->best + B;
    sc->best2 = sc->bestk + B;
    sc->P = sc->best2 + B;
    sc->gx = sc->P + (ws->use_gemm ? B * ws->K : 0);
    sc->tx = ws->shift ? base + (ws->per_thread - B * ws->d) : NULL;
#if KM_SCREEN
    /* 64-byte aligned parts (the buffer itself from malloc: 16-aligned). */
    sc->sx = NULL;
    if (ws->sbuf) {
        unsigned char *b0 = (unsigned char *)KM_ALIGN64(ws->sbuf);
        sc->sx = b0 + (ptrdiff_t)tid * ws->s_per;
    }
#endif
}

#if KM_SCREEN && KM_SCREEN_Q16
/* The int16 screen's centers for this pass: the integers of C and the
 * bound's constants, from the norms the float32 kernel starts from (ws->cn,
 * center_prep). */
static void FN(screen_centers)(FN(km_work) *ws, const REAL *C)
{
    ml_q16_prep(&ws->q16, C, ws->cn);
    ws->s_on = ws->q16.on;
}
#elif KM_SCREEN
/* The screen's centers for this pass (screen_rows): the translation t = the
 * centers' mean (any t is exact for the bound; near the rows it keeps the
 * float32 scores small), -2 (c_k - t) and the start P_k = sum_j e_kj (e_kj +
 * 2 (t_j - r_j)) rounded to float32, packed as for the lanes kernel, and
 * the bound's constants (ws->sb).  The rows are translated too (r = t)
 * only where t is far from the centers compared with their spread around
 * it (ML_KM_SCREEN_SHIFT_ROWS): it costs the kernel a subtraction per
 * coordinate, and nearer the origin the centers' translation alone keeps
 * the bound well below the gaps.  A translated center outside float32's
 * range (or not finite: the comparisons fail on NaN) turns the screen off
 * for this pass. */
static void FN(screen_centers)(FN(km_work) *ws, const REAL *C)
{
    const ptrdiff_t K = ws->K, d = ws->d, W = ws->sw;
    km_screen_bound *sb = &ws->sb;
    double *t = sb->t, tn = 0;
    for (ptrdiff_t j = 0; j < d; ++j) t[j] = 0;
    for (ptrdiff_t k = 0; k < K; ++k)
        for (ptrdiff_t j = 0; j < d; ++j) t[j] += (double)C[k * d + j];
    for (ptrdiff_t j = 0; j < d; ++j) {
        t[j] /= (double)K;
        tn += t[j] * t[j];
    }
    /* What does not depend on the rows' translation: the spread (S4 = max_k
     * ||2 e_k||^2), M2, M, M264 and N64. */
    double S4 = 0, M2 = 0, M = 0, N64 = 0, M264 = 0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double q = 0, q64 = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double e = (double)C[k * d + j] - t[j], c2 = 2 * (double)C[k * d + j];
            q += 4 * e * e;
            q64 += c2 * c2;
            if (!(fabs(2 * e) <= M)) M = fabs(2 * e);
        }
        if (!(q <= S4)) S4 = q;
        if (!(sqrt(q) <= M2)) M2 = sqrt(q);
        if (!(sqrt(q64) <= M264)) M264 = sqrt(q64);
        if (!((double)ws->cn[k] <= N64)) N64 = (double)ws->cn[k];
    }
    const int rows = tn > ML_KM_SCREEN_SHIFT_ROWS * ML_KM_SCREEN_SHIFT_ROWS * (0.25 * S4);
    sb->r = rows ? t : NULL;
    double N = 0;
    for (ptrdiff_t k = 0; k < ws->snb * W; ++k) {
        float *cb = ws->ct32 + (k / W) * (d + 1) * W + k % W;
        if (k >= K) {  /* padding: score +inf */
            cb[0] = INFINITY;
            for (ptrdiff_t j = 0; j < d; ++j) cb[(1 + j) * W] = 0.0f;
            continue;
        }
        double p = 0, pa = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const double e = (double)C[k * d + j] - t[j], f = rows ? e : e + 2 * t[j];
            p += e * f;
            pa += fabs(e) * (fabs(e) + fabs(f));
            cb[(1 + j) * W] = (float)(-2 * e);
        }
        cb[0] = (float)p;
        if (!(pa <= N)) N = pa;
    }
    ws->s_on = N < 0x1p100 && M2 < 0x1p100 && M < 0x1p100;
    sb->N = N;
    sb->M = M;
    sb->M2 = M2 * (1 + 0x1p-30) + 0x1p-500;
    sb->N64 = N64;
    sb->M264 = M264 * (1 + 0x1p-30) + 0x1p-500;
    sb->tn = rows ? sqrt(tn) * (1 + 0x1p-30) + 0x1p-500 : 0;
}
#endif

/* ||c_k||^2 and -2 C in the tile's blocks (padding: norm +inf, zeros). */
static void FN(center_prep)(FN(km_work) *ws, const REAL *C)
{
    const ptrdiff_t K = ws->K, d = ws->d;
    for (ptrdiff_t k = 0; k < ws->nblk * KM_TK; ++k) {
        const ptrdiff_t blk = k / KM_TK, t = k % KM_TK;
        REAL *cb = ws->cblk + blk * d * KM_TK + t;
        if (k >= K) {
            for (ptrdiff_t j = 0; j < d; ++j) cb[j * KM_TK] = 0;
            ws->cnb[k] = (REAL)INFINITY;
            continue;
        }
        REAL s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            s += C[k * d + j] * C[k * d + j];
            cb[j * KM_TK] = -2 * C[k * d + j];
        }
        ws->cn[k] = s;
        ws->cnb[k] = s;
        ws->cpk[k * (d + 1)] = s;
        for (ptrdiff_t j = 0; j < d; ++j) ws->cpk[k * (d + 1) + 1 + j] = cb[j * KM_TK];
    }
    if (ws->lanes) {
        const ptrdiff_t W = ws->lw;
        for (ptrdiff_t k = 0; k < ws->lnb * W; ++k) {
            REAL *cb = ws->ct + (k / W) * (d + 1) * W + k % W;
            cb[0] = k < K ? ws->cn[k] : (REAL)INFINITY;
            for (ptrdiff_t j = 0; j < d; ++j)
                cb[(1 + j) * W] = k < K ? -2 * C[k * d + j] : 0;
        }
    }
#if KM_SCREEN
    if (ws->screen) FN(screen_centers)(ws, C);
#endif
}

/* Bounds for the pruned assignment (Hamerly 2010): per row an upper bound u
 * on the distance to its own center and a lower bound l on the distance to
 * every other one, both moved by the centers' shifts between passes.  A row
 * whose bounds prove its label cannot change is not reassigned.  The proof
 * allows for the rounding of the scores the unpruned pass would compute, so
 * that the labels are those of Lloyd's pass, bit for bit: a computed score
 * is within err = gamma (||x|| + max_k ||c_k||)^2 of ||x - c||^2 - ||x||^2
 * (a dot product of d + 1 terms plus the norm, any summation order), and
 * the label is kept only if u^2 + 2 err < L^2, L the lower bound.  The
 * pass counts the rows it left open (hs->open); the bounds are dropped
 * (hs->off) when they stop paying (ML_KM_PRUNE_MAX_OPEN): before a pass, by
 * pass on a sample of the rows (bounds_probe), or after it, by lloyd_step
 * on its count. */
#ifndef KM_BOUNDS_DEFINED
#define KM_BOUNDS_DEFINED
typedef struct {
    double *u, *l;   /* n */
    double *xn;      /* n: ||x_i|| */
    double *shift;   /* K: ||c_k' - c_k|| since the last pass */
    double *half;    /* K: half the distance from c_k to its nearest other center */
    double shift_max, gamma, R;
    int fresh;       /* no bounds yet: assign every row */
    int off;         /* the bounds stopped paying: unpruned passes from here */
    int64_t open;    /* rows the last pass left open (0 after the first,
                      * which had no bounds to filter with) */
} km_bounds;
#endif

static void FN(bounds_prep)(km_bounds *hs, const REAL *C, ptrdiff_t K,
                            ptrdiff_t d)
{
    double R = 0, smax = 0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double s = 0, h = INFINITY;
        for (ptrdiff_t j = 0; j < d; ++j) s += (double)C[k * d + j] * (double)C[k * d + j];
        R = sqrt(s) > R ? sqrt(s) : R;
        smax = hs->shift[k] > smax ? hs->shift[k] : smax;
        if (hs->fresh) continue;
        for (ptrdiff_t q = 0; q < K; ++q) {
            if (q == k) continue;
            double t = 0;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const double e = (double)C[k * d + j] - (double)C[q * d + j];
                t += e * e;
            }
            h = t < h ? t : h;
        }
        /* float64 rounding of these distances: a relative margin. */
        hs->half[k] = 0.5 * sqrt(h) * (1 - ML_KM_BOUND_SLACK);
    }
    hs->R = R * (1 + ML_KM_BOUND_SLACK);
    hs->shift_max = smax;
}

/* ||x - c||^2 (c NULL: ||x||^2) in float64, in four partial sums: a single
 * sum waits on the add latency at every term, about 4 d cycles a row, next
 * to about K d / 16 for the row's scores in a pass (thirteenth round: with
 * it, and the pruned pass on the lanes kernel, the pruned fit on blobs took
 * about a fifth less time).  Four partial sums round no worse than one (at
 * most d / 4 + 2 roundings a term against d), inside the bounds' margins. */
static ML_ALWAYS_INLINE double FN(row_sq_dist)(const REAL *ML_RESTRICT x,
                                               const REAL *ML_RESTRICT c,
                                               ptrdiff_t d)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    ptrdiff_t j = 0;
    for (; j + 4 <= d; j += 4) {
        const double t0 = (double)x[j] - (c ? (double)c[j] : 0.0);
        const double t1 = (double)x[j + 1] - (c ? (double)c[j + 1] : 0.0);
        const double t2 = (double)x[j + 2] - (c ? (double)c[j + 2] : 0.0);
        const double t3 = (double)x[j + 3] - (c ? (double)c[j + 3] : 0.0);
        s0 += t0 * t0;
        s1 += t1 * t1;
        s2 += t2 * t2;
        s3 += t3 * t3;
    }
    for (; j < d; ++j) {
        const double t = (double)x[j] - (c ? (double)c[j] : 0.0);
        s0 += t * t;
    }
    return (s0 + s1) + (s2 + s3);
}

static void FN(bounds_free)(km_bounds *hs)
{
    free(hs->u); free(hs->l); free(hs->xn); free(hs->shift); free(hs->half);
}

static int FN(bounds_init)(km_bounds *hs, const REAL *X, ptrdiff_t n,
                           ptrdiff_t d, ptrdiff_t K, int nt)
{
    memset(hs, 0, sizeof *hs);
    hs->u = malloc((size_t)n * sizeof(double));
    hs->l = malloc((size_t)n * sizeof(double));
    hs->xn = malloc((size_t)n * sizeof(double));
    hs->shift = calloc((size_t)K, sizeof(double));
    hs->half = malloc((size_t)K * sizeof(double));
    if (!hs->u || !hs->l || !hs->xn || !hs->shift || !hs->half) {
        FN(bounds_free)(hs);
        return ML_ERR_ALLOC;
    }
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t i = 0; i < n; ++i) hs->xn[i] = sqrt(FN(row_sq_dist)(X + i * d, NULL, d));
    (void)nt;
    /* Twice the textbook (d + 1) unit roundoffs of a dot product plus those
     * of the center norm. */
    hs->gamma = (double)(2 * d + 4) * REAL_EPS;
    hs->fresh = 1;
    return ML_OK;
}

/* Whether the bounds settle row i (x, its label a >= 0) against centers C:
 * its moved bounds, tightened to the distance itself when they alone do
 * not, in *u and *l. */
static ML_ALWAYS_INLINE int FN(bounds_settle)(const km_bounds *hs, const REAL *x,
                                              ptrdiff_t i, int32_t a, const REAL *C,
                                              ptrdiff_t d, double *u_out,
                                              double *l_out)
{
    const double slack = 1 + ML_KM_BOUND_SLACK;
    const double e = hs->xn[i] + hs->R, err2 = 2 * hs->gamma * e * e;
    double u = (hs->u[i] + hs->shift[a]) * slack;
    const double l = (hs->l[i] - hs->shift_max) / slack;
    double lb = 2 * hs->half[a] - u;
    lb = l > lb ? l : lb;
    if (!(lb > 0 && u * u + err2 < lb * lb)) {
        u = sqrt(FN(row_sq_dist)(x, C + (ptrdiff_t)a * d, d)) * slack;
        lb = 2 * hs->half[a] - u;
        lb = l > lb ? l : lb;
        if (!(lb > 0 && u * u + err2 < lb * lb)) return 0;
    }
    *u_out = u;
    *l_out = l;
    return 1;
}

/* Rows of one chunk whose label the bounds cannot settle: their indices
 * (into the chunk) in open[], their count returned.  Settled rows keep
 * their label and get their moved bounds. */
static ptrdiff_t FN(bounds_filter)(km_bounds *hs, const REAL *X, ptrdiff_t i0,
                                   ptrdiff_t m, ptrdiff_t d, const REAL *C,
                                   const int32_t *L, ptrdiff_t *open)
{
    ptrdiff_t no = 0;
    for (ptrdiff_t b = 0; b < m; ++b) {
        const ptrdiff_t i = i0 + b;
        double u, l;
        if (hs->fresh || L[b] < 0 || !FN(bounds_settle)(hs, X + b * d, i, L[b], C, d, &u, &l)) {
            open[no++] = b;
            continue;
        }
        hs->u[i] = u;
        hs->l[i] = l;
    }
    return no;
}

/* The share of the rows the bounds would leave open at this pass, estimated
 * on every ML_KM_PRUNE_PROBE_STRIDE-th row (nothing written): a pass that
 * would score most rows anyway runs unpruned (pass), and the fit with it
 * (lloyd_step).  Depends on the data, labels and bounds only. */
static double FN(bounds_probe)(const km_bounds *hs, const REAL *X, ptrdiff_t n,
                               ptrdiff_t d, const REAL *C, const int32_t *lab)
{
    ptrdiff_t seen = 0, open = 0;
    for (ptrdiff_t i = 0; i < n; i += ML_KM_PRUNE_PROBE_STRIDE, ++seen) {
        double u, l;
        open += lab[i] < 0 || !FN(bounds_settle)(hs, X + i * d, i, lab[i], C, d, &u, &l);
    }
    return seen ? (double)open / (double)seen : 0.0;
}

/* The rows of one chunk that the bounds leave open: their indices (into
 * the chunk) in open[], their count returned, and the rows to score in *R
 * (*mr of them): the chunk itself when most rows are open (a row's scores do
 * not depend on the rows beside it), else the open rows gathered into s->gx.
 * newlab gets the old labels, which the settled rows keep. */
static ptrdiff_t FN(open_rows)(km_bounds *hs, const REAL *Xc, ptrdiff_t i0,
                               ptrdiff_t m, ptrdiff_t d, const REAL *C,
                               FN(km_scratch) *sc, const int32_t *L,
                               int32_t *newlab, ptrdiff_t *open,
                               const REAL **R, ptrdiff_t *mr)
{
    memcpy(newlab, L, (size_t)m * sizeof(int32_t));
    const ptrdiff_t no = FN(bounds_filter)(hs, Xc, i0, m, d, C, L, open);
    *R = Xc;
    *mr = m;
    if (no == 0 || 2 * no > m) return no;
    for (ptrdiff_t g = 0; g < no; ++g) {
        const REAL *x = Xc + open[g] * d;
        REAL *y = sc->gx + g * d;
        for (ptrdiff_t j = 0; j < d; ++j) y[j] = x[j];
    }
    *R = sc->gx;
    *mr = no;
    return no;
}

/* Row i's bounds from its best and second best scores (||x - c||^2 -
 * ||x||^2, as computed), widened by their rounding. */
static ML_ALWAYS_INLINE void FN(bounds_reset)(km_bounds *hs, ptrdiff_t i,
                                              double best, double best2)
{
    const double xx = hs->xn[i] * hs->xn[i], e = hs->xn[i] + hs->R;
    const double err = hs->gamma * e * e;
    const double d1 = best + xx + err, d2 = best2 + xx - err;
    hs->u[i] = sqrt(d1 > 0 ? d1 : 0) * (1 + ML_KM_BOUND_SLACK);
    hs->l[i] = sqrt(d2 > 0 ? d2 : 0) / (1 + ML_KM_BOUND_SLACK);
}

/* Assignment of one chunk: all rows (hs == NULL), or only the rows the
 * bounds leave open (open_rows); their bounds are reset from the best and
 * second best scores.  Returns the number of rows scored. */
static ptrdiff_t FN(assign_rows)(const FN(km_work) *ws, km_bounds *hs,
                                 const REAL *Xc, ptrdiff_t i0, ptrdiff_t m,
                                 const REAL *C, FN(km_scratch) *sc,
                                 const int32_t *L, int32_t *newlab)
{
    if (!hs) {
        FN(assign_chunk)(ws, Xc, m, C, sc, newlab, NULL);
        return m;
    }
    ptrdiff_t open[ML_KM_CHUNK], mr;
    int32_t glab[ML_KM_CHUNK];
    const REAL *R;
    const ptrdiff_t no = FN(open_rows)(hs, Xc, i0, m, ws->d, C, sc, L, newlab, open, &R, &mr);
    if (no == 0) return 0;
    FN(assign_chunk)(ws, R, mr, C, sc, glab, sc->best2);
    for (ptrdiff_t g = 0; g < no; ++g) {
        const ptrdiff_t b = open[g], r = R == Xc ? b : g;
        newlab[b] = glab[r];
        FN(bounds_reset)(hs, i0 + b, (double)sc->best[r], (double)sc->best2[r]);
    }
    return no;
}

#if KM_SCREEN
/* ---------------------------------------------------------------------------
 * The float32 screen of a float64 pass (ml_kmeans_screens; the float64
 * lanes kernel serves the pass).  A chunk's rows (translated by the
 * centers' mean where it is far from the origin) are rounded to float32 and
 * scored by the float32 lanes kernel against the centers translated by
 * their mean and rounded to float32 (twice the lanes per vector), which
 * also keeps each row's second-best score.  A row keeps the float32 label when
 * second - best > 2 E (E below); every other row is re-scored by the
 * float64 lanes kernel (gathered, as assign_rows gathers the open rows: a
 * row's scores do not depend on the rows beside it).  The labels are
 * therefore the float64 kernel's, bit for bit, on every row.
 *
 * The bound.  u = 2^-24, v = 2^-53, gamma_n(u) = n u / (1 - n u) (Higham,
 * Accuracy and Stability of Numerical Algorithms, 2002, section 3.1).  For
 * a row x and center k let m_j = -2 c_kj (exact in float64), N_k the float64
 * norm the float64 kernel starts from, S_k = N_k + sum_j x_j m_j (exact), and
 * T_k = sum_j |x_j| |m_j|.
 * - The float64 kernel adds the d products to N_k in j order, fused or not:
 *   each term carries at most d + 1 roundings, |s64_k - S_k| <=
 *   gamma_{d+1}(v) (N_k + T_k).  N_k is ||c_k||^2 with d roundings: N_k =
 *   ||c_k||^2 + nu_k, |nu_k| <= gamma_{d+1}(v) N_k.
 * - The screen scores the row translated by r and the centers by t (t the
 *   centers' mean, r = t or 0: screen_centers).  Its exact scores are R_k =
 *   P_k - 2 (x - r).(c_k - t) with P_k = sum_j e_j f_j, e_j = c_kj - t_j,
 *   f_j = e_j + 2 (t_j - r_j): R_k = ||x - c_k||^2 - ||x - t||^2, which
 *   differs from S_k - nu_k = ||x - c_k||^2 - ||x||^2 by the same amount for
 *   every k.  It rounds x_j - r_j (r = t: a float64 subtraction first) and
 *   -2 (c_kj - t_j) (a float64 subtraction) to float32, and P_k, summed in
 *   float64 from the rounded e_j and f_j (its error below gamma_{d+3}(v)
 *   sum_j |e_j| (|e_j| + |f_j|), a rounded e_j reaching f_j too), to
 *   float32; then it runs the recurrence above in float32: each term
 *   carries at most d + 3 roundings of size u and d + 3 of size v, so
 *   |s32_k - R_k| <= (gamma_{d+3}(u) + gamma_{d+3}(v)) (N'_k + T'_k) (the
 *   product of the two factors' excess, below 2^-50 gamma_{d+3}(u), is
 *   inside the slack below), with N'_k = sum_j |e_j| (|e_j| + |f_j|) and
 *   T'_k = sum_j |x_j - r_j| |2 e_j|.
 * - Underflow: each float32 rounding may instead add an absolute error up
 *   to 2^-150 (float64: 2^-1075; a float64 difference that underflows is
 *   exact); x_j - r_j's and m_j's then reach the score multiplied by |m_j|
 *   or |x_j - r_j|, and the at most 2 d + 3 roundings of the recurrence add
 *   one each, all magnified by less than 2, the float64 sum P_k's d + 2 at
 *   most 2^-1074 each: in all below A = 2^-149 (||x - r||_1 + d M + 2 d +
 *   6), M = max_kj |2 (c_kj - t_j)|, ||x - r||_1 <= sqrt(d) ||x - r||_2.
 * - N'_k <= N = max_k N'_k, T'_k <= ||x - r||_2 M2, N_k <= N64, T_k <=
 *   ||x||_2 M264 <= (||x - r||_2 + ||r||_2) M264 (Cauchy-Schwarz; M2 and
 *   M264 bound ||2 (c_k - t)||_2 and ||2 c_k||_2), so with E = (gamma_{d+3}(u)
 *   + gamma_{d+3}(v)) (N + ||x - r||_2 M2) + gamma_{d+1}(v) (2 N64 + ||x||_2
 *   M264) + A, for every k: s64_k = R_k + delta + e'_k with delta the same
 *   for every k and |s32_k - R_k| + |e'_k| <= E.
 * If k' is the screen's argmin and second - best > 2 E, then for k != k':
 * s64_k - s64_k' >= (s32_k - s32_k') - 2 E >= second - best - 2 E > 0: k' is
 * the float64 kernel's unique minimum, hence its label (no tie to break).
 * Far from the origin the translations keep N and M2 near the centers'
 * spread instead of their distance from the origin (and with r = t, the
 * rows' term too); the float64 kernel's own term, gamma_{d+1}(v) ||x||_2
 * M264, then decides (at 1e8 from the origin it exceeds the gaps: nothing
 * is settled there).
 * - Range: with N, M2, M < 2^100 (else the pass is not screened:
 *   screen_centers) and N + ||x - r||_2 (M2 + 1) < 2^120, every float32
 *   value (x_j - r_j, the products, the partial sums: < (1 + gamma)(N +
 *   T'_k)) is finite; a row outside it, or not finite (the comparison fails
 *   on NaN), is re-scored; where N64 or M264 overflow, E is infinite and no
 *   row is settled.
 * - E, the norms and the gap are evaluated in float64 (at most d + 9
 *   roundings of relative size v, d < 2^20: below 2^-32), ||x - r||_2^2
 *   perhaps short by d 2^-1074 from underflow: ||x - r||_2 is enlarged to
 *   sqrt(s)(1 + 2^-30) + 2^-500, M2, M264 and ||r||_2 likewise
 *   (screen_centers), E by 1 + 2^-30.
 * A chunk with more than ML_KM_SCREEN_MAX_OPEN of its rows open is taken by
 * the float64 kernel whole, and the thread skips the screen for its next
 * chunks (kmeans.h: ML_KM_SCREEN_MAX_SKIP).
 * ------------------------------------------------------------------------- */
#ifdef ML_KM_SCREEN_STATS
/* Counters for the C harness (never in the wheel): chunks screened, rows
 * screened, rows re-scored (gathered), chunks taken whole, chunks skipped. */
static long long km_screen_stats[5];
#define KM_SCREEN_COUNT(i, v) do { _Pragma("omp atomic") km_screen_stats[i] += (v); } while (0)
#else
#define KM_SCREEN_COUNT(i, v) ((void)0)
#endif

#if !KM_SCREEN_Q16
/* ok[b] = whether row b is settled: second - best > 2 E in float32's range
 * (the bound above; compiled per ISA level, vectorized over the rows), and
 * margin[b] <= (second - best - 2 E)(1 + 2^-53): for a settled row, below
 * the squared distance to its second nearest center less that to its
 * nearest by at most a relative 2^-53 (screen_pruned), since s32_k - E <=
 * R_k <= s32_k + E for every k and the R_k differ by those squared
 * distances' differences. */
ML_CLONES static void FN(screen_settled)(ptrdiff_t m, ptrdiff_t d,
                                         const float *ML_RESTRICT b32,
                                         const float *ML_RESTRICT s32,
                                         const double *ML_RESTRICT yn,
                                         const km_screen_bound *sb,
                                         int64_t *ML_RESTRICT ok,
                                         double *ML_RESTRICT margin)
{
    const double slack = 1 + 0x1p-30, rd = sqrt((double)d);
    const double N = sb->N, M2 = sb->M2, N64 = sb->N64, M264 = sb->M264, tn = sb->tn;
    const double g32 = sb->g32, g64 = sb->g64;
    const double a0 = (double)d * sb->M + (double)(2 * d + 6);
    for (ptrdiff_t b = 0; b < m; ++b) {
        const double yl = sqrt(yn[b]) * slack + 0x1p-500, xl = yl + tn;
        const double E = (g32 * (N + yl * M2) + g64 * (2 * N64 + xl * M264) +
                          0x1p-149 * (rd * yl + a0)) * slack;
        const double gap = (double)s32[b] - (double)b32[b];
        ok[b] = (N + yl * (M2 + 1) < 0x1p120) & (gap > 2 * E);
        /* gap may have been rounded up (a float32 difference in float64) */
        margin[b] = gap * (1 - 0x1p-52) - 2 * E;
    }
}

/* The screen of m rows: their float32 labels in lab, and ok and margin as
 * screen_settled gives them (sx: the thread's screen scratch). */
static void FN(screen_scores)(const FN(km_work) *ws, const REAL *Xc, ptrdiff_t m,
                              ptrdiff_t c, unsigned char *sx, int32_t *lab,
                              int64_t *ok, double *margin)
{
    (void)c;
    const ptrdiff_t d = ws->d;
    float *x32 = (float *)(sx + KM_SX_X32(d));
    float *b32 = (float *)(sx + KM_SX_B32(d)), *s32 = (float *)(sx + KM_SX_S32(d));
    double *yn = (double *)(sx + KM_SX_XN(d));
    double unused[ML_KM_CHUNK];  /* margin NULL: not wanted */
    ws->screen(Xc, ws->sb.r, m, d, ws->ct32, ws->snb, x32, lab, b32, s32, yn);
    FN(screen_settled)(m, d, b32, s32, yn, &ws->sb, ok, margin ? margin : unused);
}
#else
/* The int16 screen of m rows (kmeans_q16.h; chunk c of the pass, or -1):
 * its labels in lab, ok and margin as ml_q16_screen gives them. */
static void FN(screen_scores)(const FN(km_work) *ws, const REAL *Xc, ptrdiff_t m,
                              ptrdiff_t c, unsigned char *sx, int32_t *lab,
                              int64_t *ok, double *margin)
{
    (void)ml_q16_screen(&ws->q16, Xc, m, c, sx + KM_SX_Q16, lab, ok, margin);
}
#endif

/* The screen of one chunk (the pass's chunk c, or -1): the screen's labels
 * of its m rows in newlab, and the rows whose label the bound does not
 * settle (indices into the chunk) in open[], their count returned; margin:
 * screen_scores'. */
static ptrdiff_t FN(screen_open)(const FN(km_work) *ws, const REAL *Xc,
                                 ptrdiff_t m, ptrdiff_t c, unsigned char *sx,
                                 int32_t *newlab, ptrdiff_t *open, double *margin)
{
    int64_t ok[ML_KM_CHUNK];
    FN(screen_scores)(ws, Xc, m, c, sx, newlab, ok, margin);
    ptrdiff_t no = 0;
    for (ptrdiff_t b = 0; b < m; ++b) {
        open[no] = b;
        no += !ok[b];
    }
    return no;
}

/* Whether this thread skips the screen for this chunk (screen_backoff). */
static int FN(screen_skips)(km_screen_state *st)
{
    if (st->skip <= 0) return 0;
    --st->skip;
    KM_SCREEN_COUNT(4, 1);
    return 1;
}

/* Whether the screen failed on a chunk, no of its m rows left to re-score
 * (more than ML_KM_SCREEN_MAX_OPEN of them): then the next 2^fails - 1
 * chunks of this thread skip it. */
static int FN(screen_backoff)(km_screen_state *st, ptrdiff_t no, ptrdiff_t m)
{
    if ((double)no <= ML_KM_SCREEN_MAX_OPEN * (double)m) {
        st->fails = 0;
        return 0;
    }
    st->fails = st->fails < 30 ? st->fails + 1 : 30;
    const long sk = (1L << st->fails) - 1;
    st->skip = (int)(sk < ML_KM_SCREEN_MAX_SKIP ? sk : ML_KM_SCREEN_MAX_SKIP);
    KM_SCREEN_COUNT(3, 1);
    return 1;
}

/* Labels of the pass's chunk c through the screen (the full-precision
 * kernel's, bit for bit). */
static void FN(screen_rows)(const FN(km_work) *ws, const REAL *Xc, ptrdiff_t m,
                            ptrdiff_t c, const REAL *C, FN(km_scratch) *sc,
                            int32_t *newlab)
{
    const ptrdiff_t d = ws->d;
    unsigned char *sx = sc->sx;
    km_screen_state *st = (km_screen_state *)sx;
    if (FN(screen_skips)(st)) {
        FN(assign_chunk)(ws, Xc, m, C, sc, newlab, NULL);
        return;
    }
    REAL *gx = (REAL *)(sx + KM_SX_GX(d));
    ptrdiff_t open[ML_KM_CHUNK];
    const ptrdiff_t no = FN(screen_open)(ws, Xc, m, c, sx, newlab, open, NULL);
    KM_SCREEN_COUNT(0, 1);
    KM_SCREEN_COUNT(1, m);
    if (no == 0) {
        st->fails = 0;
        return;
    }
    if (FN(screen_backoff)(st, no, m)) {
        /* The screen does not pay here: the float64 kernel takes the chunk. */
        FN(assign_chunk)(ws, Xc, m, C, sc, newlab, NULL);
        return;
    }
    KM_SCREEN_COUNT(2, no);
    for (ptrdiff_t t = 0; t < no; ++t)
        memcpy(gx + t * d, Xc + open[t] * d, (size_t)d * sizeof(REAL));
    int32_t glab[ML_KM_CHUNK];
    FN(assign_chunk)(ws, gx, no, C, sc, glab, NULL);
    for (ptrdiff_t t = 0; t < no; ++t) newlab[open[t]] = glab[t];
}

/* The pruned pass's assignment of one chunk through the screen: the rows
 * the bounds leave open (open_rows) are screened; a settled row takes the
 * screen's label (the float64 kernel's: screen_rows) and the bounds u =
 * ||x - c_a|| and l = sqrt(u^2 + margin) <= the distance to any other center
 * (screen_settled), each widened by ML_KM_BOUND_SLACK for its own rounding
 * (the relative error of row_sq_dist and of the margin's last operations,
 * below 1e-13 for d < 2^20); the other rows are gathered and scored by the
 * float64 kernel, best and second best, as in assign_rows.  Returns the
 * number of rows the bounds left open. */
static ptrdiff_t FN(screen_pruned)(const FN(km_work) *ws, km_bounds *hs,
                                   const REAL *Xc, ptrdiff_t i0, ptrdiff_t m,
                                   const REAL *C, FN(km_scratch) *sc,
                                   const int32_t *L, int32_t *newlab)
{
    const ptrdiff_t d = ws->d;
    unsigned char *sx = sc->sx;
    km_screen_state *st = (km_screen_state *)sx;
    if (FN(screen_skips)(st))
        return FN(assign_rows)(ws, hs, Xc, i0, m, C, sc, L, newlab);
    ptrdiff_t open[ML_KM_CHUNK], redo[ML_KM_CHUNK], mr;
    int32_t glab[ML_KM_CHUNK];
    const REAL *R;
    const ptrdiff_t no = FN(open_rows)(hs, Xc, i0, m, d, C, sc, L, newlab, open, &R, &mr);
    if (no == 0) return 0;
    REAL *gx = (REAL *)(sx + KM_SX_GX(d));
    int64_t ok[ML_KM_CHUNK];
    double margin[ML_KM_CHUNK];
    FN(screen_scores)(ws, R, mr, -1, sx, glab, ok, margin);
    const double slack = 1 + ML_KM_BOUND_SLACK;
    ptrdiff_t nr = 0;
    for (ptrdiff_t g = 0; g < no; ++g) {
        const ptrdiff_t b = open[g], r = R == Xc ? b : g, i = i0 + b;
        const REAL *x = R + r * d;
        if (!ok[r]) {
            memcpy(gx + nr * d, x, (size_t)d * sizeof(REAL));
            redo[nr++] = b;
            continue;
        }
        const int32_t a = glab[r];
        const double u2 = FN(row_sq_dist)(x, C + (ptrdiff_t)a * d, d);
        newlab[b] = a;
        hs->u[i] = sqrt(u2) * slack;
        /* margin <= 0 (a gap within 2^-52 of 2 E): no bound to keep */
        hs->l[i] = margin[r] > 0 ? sqrt(u2 + margin[r]) / slack : 0;
    }
    KM_SCREEN_COUNT(0, 1);
    KM_SCREEN_COUNT(1, mr);
    KM_SCREEN_COUNT(2, nr);
    FN(screen_backoff)(st, nr, no);
    if (nr == 0) return no;
    FN(assign_chunk)(ws, gx, nr, C, sc, glab, sc->best2);
    for (ptrdiff_t t = 0; t < nr; ++t) {
        newlab[redo[t]] = glab[t];
        FN(bounds_reset)(hs, i0 + redo[t], (double)sc->best[t], (double)sc->best2[t]);
    }
    return no;
}
#endif

/* The chunk's m new labels nl written over the old ones L; returns how many
 * changed (counted in int32: a chunk has ML_KM_CHUNK rows).  One loop, in
 * each ISA's vectors (the pass itself is not cloned: its count ran in
 * SSE2, then a memcpy), and the next chunk's labels asked for ahead of use
 * (perf, main's code, C harness, d = 2, K = 8, f64, 1 thread: 10% of
 * the pass in pass_segment, most of it on the loads of the old labels).
 * Seventh round, C harness, N = 1e6, K = 8, f64, main / this, labels and
 * center bits identical: 1 thread 1.02-1.03 (d = 1, 2, 3), 1.11 (d = 3,
 * K = 2); 2 threads (wall, OMP_WAIT_POLICY=PASSIVE) 1.01-1.03 in a
 * quieter run, 1.05-1.12 in a loaded one.  Writing only the 16-label
 * blocks where a label changed, so that lines of L stay clean, was tried:
 * 0.75-0.87 at d = 1, 2, 3 (a branch per block, mispredicted while many
 * labels move; GCC 12 does not make the conditional store a masked one). */
ML_CLONES static int32_t FN(lab_update)(const int32_t *ML_RESTRICT nl,
                                        int32_t *ML_RESTRICT L, ptrdiff_t m)
{
    for (ptrdiff_t o = 0; o < m * (ptrdiff_t)sizeof(int32_t); o += 64)
        ML_PREFETCH((const void *)((uintptr_t)(L + m) + (uintptr_t)o));
    int32_t ch = 0;
    for (ptrdiff_t b = 0; b < m; ++b) {
        ch += nl[b] != L[b];
        L[b] = nl[b];
    }
    return ch;
}

/* out = the m rows of X less shift, in REAL (numpy's X - shift, bit for
 * bit). */
ML_CLONES static void FN(shift_rows)(const REAL *ML_RESTRICT X, ptrdiff_t m,
                                     ptrdiff_t d, const REAL *ML_RESTRICT shift,
                                     REAL *ML_RESTRICT out)
{
    for (ptrdiff_t b = 0; b < m; ++b)
        for (ptrdiff_t j = 0; j < d; ++j) out[b * d + j] = X[b * d + j] - shift[j];
}

/* One pass over the rows: labels of the nearest centers of C (lab, int32,
 * in/out: the number of changed labels is returned in *changed) and, when
 * sums != NULL, the weighted per-cluster sums (K x d) and weights (K).  With
 * bounds (hs != NULL) rows whose label the bounds settle are not reassigned
 * (same labels); the sums are always taken over every row, in the same
 * order, so that the centers are Lloyd's bit for bit. */
/* Segment s of a pass: its chunks in row order, assigned, then summed into
 * its own accumulator copies acc (when not NULL); returns the labels
 * changed, and the rows scored in *opened. */
static int64_t FN(pass_segment)(const FN(km_work) *ws, km_bounds *hs,
                                const REAL *X, const REAL *w, const REAL *C,
                                int32_t *lab, ptrdiff_t s, FN(km_scratch) *sc,
                                double *acc, ptrdiff_t copies, int delta,
                                int64_t *opened)
{
    const ptrdiff_t d = ws->d, nc = ws->n_chunks, n = ws->n;
    int32_t newlab[ML_KM_CHUNK];
    int64_t ch = 0;
    *opened = 0;
    if (acc) memset(acc, 0, (size_t)(copies * ws->acc_stride) * sizeof(double));
    const ptrdiff_t c_lo = s * nc / ws->S, c_hi = (s + 1) * nc / ws->S;
    for (ptrdiff_t c = c_lo; c < c_hi && !ml_interrupted(); ++c) {
        const ptrdiff_t i0 = c * ML_KM_CHUNK;
        const ptrdiff_t m = n - i0 < ML_KM_CHUNK ? n - i0 : ML_KM_CHUNK;
        const REAL *Xc = X + i0 * d, *wc = w ? w + i0 : NULL;
        int32_t *L = lab + i0;
        if (ws->shift) {
            FN(shift_rows)(Xc, m, d, ws->shift, sc->tx);
            Xc = sc->tx;
        }
        /* The one-vector lanes kernel adds the sums as it labels.  It is
         * compiled with contraction on (its scores are fused as the tile's),
         * so a float64 row times its weight would be fused into the sum and
         * differ from accum's in the last bit: weighted float64 chunks take
         * accum.  (A float32 row times its weight is exact in float64.) */
        const int fused = acc && !delta && !hs && ws->lanes_sums &&
                          (!wc || sizeof(REAL) < sizeof(double));
        if (fused)
            ws->lanes_sums(Xc, wc, m, d, ws->ct, newlab, acc, copies,
                           ws->acc_stride, ws->K);
#if KM_SCREEN
        else if (!hs && ws->screen && ws->s_on && sc->sx)
            FN(screen_rows)(ws, Xc, m, c, C, sc, newlab);
        else if (hs && ws->screen && ws->s_on && sc->sx)
            *opened += FN(screen_pruned)(ws, hs, Xc, i0, m, C, sc, L, newlab);
#endif
        else
            *opened += FN(assign_rows)(ws, hs, Xc, i0, m, C, sc, L, newlab);
        if (acc && delta)
            FN(accum_delta)(Xc, m, d, newlab, L, acc, ws->K);
        ch += FN(lab_update)(newlab, L, m);
        if (fused || delta)
            continue;
        if (acc && ws->rs)
            ws->accum_packed(Xc, wc, m, newlab, acc, copies, ws->acc_stride);
        else if (acc)
            FN(accum)(Xc, wc, m, d, newlab, acc, copies, ws->acc_stride, ws->K);
    }
    return ch;
}

/* The segments' partial sums added in segment order, then copy order: into
 * zeroed sums, or with delta (one unpacked copy per segment: accum_delta)
 * into the running sums, the counts exactly (integers), and a cluster left
 * with no rows then gets sums of exactly zero, as a fresh sum would. */
static void FN(reduce_segments)(const FN(km_work) *ws, ptrdiff_t copies,
                                int delta, double *sums, double *wsum)
{
    const ptrdiff_t d = ws->d, K = ws->K, rs = delta ? 0 : ws->rs;
    if (!delta) {
        memset(sums, 0, (size_t)(K * d) * sizeof(double));
        memset(wsum, 0, (size_t)K * sizeof(double));
    }
    for (ptrdiff_t s = 0; s < ws->S; ++s)
        for (ptrdiff_t c = 0; c < copies; ++c) {
            const double *a = ws->seg + (s * copies + c) * ws->acc_stride;
            if (rs) {
                for (ptrdiff_t k = 0; k < K; ++k) {
                    for (ptrdiff_t j = 0; j < d; ++j) sums[k * d + j] += a[k * rs + j];
                    wsum[k] += a[k * rs + d];
                }
                continue;
            }
            for (ptrdiff_t t = 0; t < K * d; ++t) sums[t] += a[t];
            for (ptrdiff_t k = 0; k < K; ++k) wsum[k] += a[K * d + k];
        }
    if (delta)
        for (ptrdiff_t k = 0; k < K; ++k)
            if (wsum[k] == 0)
                memset(sums + k * d, 0, (size_t)d * sizeof(double));
}

/* delta: the pass adds to sums/wsum the change that the moved rows make
 * (accum_delta; unweighted only) instead of writing the sums afresh. */
static void FN(pass)(FN(km_work) *ws, km_bounds *hs, const REAL *X,
                     const REAL *w, const REAL *C, int32_t *lab, double *sums,
                     double *wsum, int64_t *changed, int delta)
{
    const ptrdiff_t d = ws->d, K = ws->K, S = ws->S;
    const int do_sums = sums != NULL;
    const ptrdiff_t copies = do_sums ? (delta ? 1 : ws->copies) : 0;
    if (hs && hs->off) hs = NULL;
#if KM_SCREEN_Q16
    /* From a fit's second unpruned pass on, the rows' integers are kept
     * (the pruned passes screen rows gathered from several chunks). */
    if (ws->screen && ws->passes++ >= 1 && !hs) ml_q16_keep(&ws->q16, ws->n);
#endif
    FN(center_prep)(ws, C);
    if (hs) FN(bounds_prep)(hs, C, K, d);
    if (hs && !hs->fresh && !ws->shift &&
        FN(bounds_probe)(hs, X, ws->n, d, C, lab) > ML_KM_PRUNE_MAX_OPEN) {
        hs->off = 1;
        hs = NULL;
    }
    /* Small problems run on one thread: a parallel region costs more than it
     * saves, badly so on a loaded machine.  (Results do not depend on it.) */
    int nt = ws->nt;
    if (S <= 1 || (double)ws->n * (double)K * (double)(d + 1) < ML_KM_PAR_MIN_WORK) nt = 1;
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
        FN(km_scratch) sc;
        FN(scratch_of)(ws, ml_thread_id(), &sc);
        #pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t s = 0; s < S; ++s) {
            double *acc = do_sums ? ws->seg + s * copies * ws->acc_stride : NULL;
            ws->seg_changed[s] = FN(pass_segment)(ws, hs, X, w, C, lab, s, &sc,
                                                  acc, copies, delta,
                                                  ws->seg_open + s);
        }
    }
    int64_t ch = 0, op = 0;
    for (ptrdiff_t s = 0; s < S; ++s) {
        ch += ws->seg_changed[s];
        op += ws->seg_open[s];
    }
    if (hs) {
        hs->open = hs->fresh ? 0 : op;
        hs->fresh = 0;
    }
    *changed = ch;
    if (do_sums) FN(reduce_segments)(ws, copies, delta, sums, wsum);
}

/* Squared distance of every row, less shift (in REAL; NULL: none), to its
 * own center, from x - c (float64). */
static void FN(own_dist)(const REAL *X, const REAL *shift, ptrdiff_t n,
                         ptrdiff_t d, const REAL *C, const int32_t *lab,
                         double *out, int nt)
{
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t i = 0; i < n; ++i) {
        const REAL *x = X + i * d, *c = C + (ptrdiff_t)lab[i] * d;
        double s = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const REAL xs = shift ? (REAL)(x[j] - shift[j]) : x[j];
            const double t = (double)xs - (double)c[j];
            s += t * t;
        }
        out[i] = s;
    }
}

/* sum_i w_i ||x_i - c_{l_i}||^2 in float64, fixed blocks reduced in order. */
static int FN(inertia)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                       const REAL *C, const int32_t *lab, double *out, int nt)
{
    const ptrdiff_t BL = ML_KM_REDUCE_BLOCK, nb = (n + BL - 1) / BL;
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
 * weight, and not if it equals a row already moved in this call: two empty
 * clusters placed on duplicated points would tie, the higher index would
 * empty again at the next step, and the fit would end with fewer distinct
 * clusters than the data allow.  sums/wsum are updated in place. */
static int FN(relocate_empty)(const REAL *X, const REAL *w, ptrdiff_t n,
                              ptrdiff_t d, ptrdiff_t K, const REAL *C_old,
                              const int32_t *lab, double *sums, double *wsum,
                              int nt)
{
    ptrdiff_t n_empty = 0;
    for (ptrdiff_t k = 0; k < K; ++k) n_empty += wsum[k] == 0;
    if (n_empty == 0) return ML_OK;
    double *dist = malloc((size_t)n * sizeof(double));
    ptrdiff_t *moved = malloc((size_t)n_empty * sizeof(ptrdiff_t));
    if (!dist || !moved) { free(dist); free(moved); return ML_ERR_ALLOC; }
    ptrdiff_t n_moved = 0;
    FN(own_dist)(X, NULL, n, d, C_old, lab, dist, nt);
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
            int duplicate = 0;
            for (ptrdiff_t m = 0; m < n_moved && !duplicate; ++m) {
                const REAL *y = X + moved[m] * d;
                ptrdiff_t j = 0;
                while (j < d && x[j] == y[j]) ++j;
                duplicate = j == d;
            }
            if (duplicate) continue;
            for (ptrdiff_t j = 0; j < d; ++j) {
                sums[old * d + j] -= wf * (double)x[j];
                sums[k * d + j] = wf * (double)x[j];
            }
            wsum[old] -= wf;
            wsum[k] = wf;
            moved[n_moved++] = far;
            break;
        }
    }
    free(dist);
    free(moved);
    return ML_OK;
}

static void FN(lab_out)(const int32_t *lab, ptrdiff_t n, int64_t *labels)
{
    for (ptrdiff_t i = 0; i < n; ++i) labels[i] = lab[i];
}

/* New centers from the sums (a cluster left empty keeps its center); the
 * squared shift is returned, and each center's own shift (its norm) goes to
 * the bounds when hs != NULL. */
static double FN(update_centers)(const double *sums, const double *wsum,
                                 const REAL *C, REAL *C_new, ptrdiff_t K,
                                 ptrdiff_t d, km_bounds *hs)
{
    double shift = 0;
    for (ptrdiff_t k = 0; k < K; ++k) {
        double sk = 0;
        for (ptrdiff_t j = 0; j < d; ++j) {
            const REAL v = wsum[k] > 0 ? (REAL)(sums[k * d + j] / wsum[k])
                                       : C[k * d + j];
            const double t = (double)v - (double)C[k * d + j];
            sk += t * t;
            C_new[k * d + j] = v;
        }
        shift += sk;
        if (hs) hs->shift[k] = sqrt(sk) * (1 + ML_KM_BOUND_SLACK);
    }
    return shift;
}

/* The driver both iterations share.  `step` moves the centers once and
 * reports the labels it changed and the squared shift of the centers; the
 * loop stops when no label changed (strict convergence: the centers are
 * then the means of an unchanged partition, scikit-learn's rule), the shift
 * is <= tol, or after max_iter steps.  Then the labels are made those of
 * the final centers (one more pass unless the last step left them as they
 * are) and their inertia computed. */
#ifndef KM_STEP_DEFINED
#define KM_STEP_DEFINED
typedef int (*km_step_fn)(void *ctx, int64_t *changed, double *shift);
#endif


typedef const REAL *(*FN(km_centers_fn))(void *ctx);

/* `centers_of(ctx)`: the current centers; relabel_always: the last step
 * moves the centers after labelling (online), so its labels are never
 * those of the final centers. */
static int FN(drive)(FN(km_work) *ws, km_bounds *hs, km_step_fn step,
                     FN(km_centers_fn) centers_of, void *ctx,
                     int relabel_always, const REAL *X, const REAL *w,
                     int32_t *lab, int max_iter, double tol, int64_t *labels,
                     double *inertia, int *n_iter, int *strict)
{
    for (ptrdiff_t i = 0; i < ws->n; ++i) lab[i] = -1;
    int it, is_strict = 0;
    for (it = 0; it < max_iter; ++it) {
        int64_t changed;
        double shift;
        const int st = step(ctx, &changed, &shift);
        if (st != ML_OK) return st;
        if (changed == 0) { is_strict = 1; break; }
        if (shift <= tol) break;
    }
    if (it == max_iter) it = max_iter - 1;
    const REAL *C = centers_of(ctx);
    if (!is_strict || relabel_always) {
        int64_t changed;
        FN(pass)(ws, hs, X, w, C, lab, NULL, NULL, &changed, 0);
        if (ml_interrupted()) return ML_ERR_INTERRUPTED;
    }
    const int st = FN(inertia)(X, w, ws->n, ws->d, C, lab, inertia, ws->nt);
    if (st != ML_OK) return st;
    FN(lab_out)(lab, ws->n, labels);
    *n_iter = it + 1;
    *strict = is_strict;
    return ML_OK;
}

/* Lloyd's step: assignment and sums in one pass, empty clusters refilled,
 * new centers (C and C_new swap roles at every step). */
typedef struct {
    FN(km_work) *ws;
    km_bounds *hs;
    const REAL *X, *w;
    REAL *C, *C_new;
    int32_t *lab;
    double *sums, *wsum;
    int fresh;   /* the next pass sums every row (else it adds the deltas) */
    int run;     /* passes with deltas since the last fresh sums */
} FN(km_lloyd_ctx);

/* The sums are taken afresh at the first pass, after a pass that moved more
 * than ML_KM_DELTA_MAX_MOVED of the rows (ML_KM_DELTA_MAX_MOVED_LOW_D at low
 * d; the deltas of the next pass would cost more than they save), after an
 * empty cluster (relocate_empty moves rows in the sums,
 * not in the labels), after ML_KM_DELTA_MAX_RUN passes with deltas (their
 * roundings add up), and always with weights (a weight sum's rounding could
 * leave an emptied cluster a nonzero weight); otherwise the pass adds to the
 * running sums what its moved rows change.  The choice depends on the
 * labels only: the same for any thread count. */
static int FN(lloyd_step)(void *vctx, int64_t *changed, double *shift)
{
    FN(km_lloyd_ctx) *c = vctx;
    FN(km_work) *ws = c->ws;
    const int delta = !c->fresh && !c->w && c->run < ML_KM_DELTA_MAX_RUN;
    c->run = delta ? c->run + 1 : 0;
    FN(pass)(ws, c->hs, c->X, c->w, c->C, c->lab, c->sums, c->wsum, changed, delta);
    if (ml_interrupted()) return ML_ERR_INTERRUPTED;
    /* The bounds left most rows open: unpruned passes for the rest of the
     * fit (the same labels; pass's probe may drop them before a pass). */
    if (c->hs && (double)c->hs->open > ML_KM_PRUNE_MAX_OPEN * (double)ws->n)
        c->hs->off = 1;
    const double max_moved = ws->d <= ML_KM_SMALL_KERNEL_D ? ML_KM_DELTA_MAX_MOVED_LOW_D
                                                           : ML_KM_DELTA_MAX_MOVED;
    c->fresh = (double)*changed > max_moved * (double)ws->n;
    for (ptrdiff_t k = 0; k < ws->K; ++k) c->fresh |= c->wsum[k] == 0;
    const int st = FN(relocate_empty)(c->X, c->w, ws->n, ws->d, ws->K, c->C,
                                      c->lab, c->sums, c->wsum, ws->nt);
    if (st != ML_OK) return st;
    *shift = FN(update_centers)(c->sums, c->wsum, c->C, c->C_new, ws->K,
                                ws->d, c->hs);
    REAL *t = c->C;
    c->C = c->C_new;
    c->C_new = t;
    return ML_OK;
}

static const REAL *FN(lloyd_centers)(void *vctx)
{
    return ((FN(km_lloyd_ctx) *)vctx)->C;
}

/* Lloyd's iteration, every row reassigned at every pass (prune = 0) or only
 * those the bounds leave open (prune = 1): the same labels and centers. */
static int FN(lloyd_run)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                         ptrdiff_t K, REAL *centers, int max_iter, double tol,
                         int64_t *labels, double *inertia, int *n_iter,
                         int *strict, GEMM_T gemm, int method, int n_threads,
                         int prune)
{
    if (n < 1 || d < 1 || K < 1 || K > n || max_iter < 1 || K > INT32_MAX)
        return ML_ERR_ARG;
    FN(km_work) ws;
    km_bounds hs, *hp = prune ? &hs : NULL;
    memset(&hs, 0, sizeof hs);
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 1, prune, NULL);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    REAL *buf = malloc((size_t)(K * d) * sizeof(REAL));
    double *sums = malloc((size_t)(K * d) * sizeof(double));
    double *wsum = malloc((size_t)K * sizeof(double));
    if (!lab || !buf || !sums || !wsum) { st = ML_ERR_ALLOC; goto done; }
    if (prune && (st = FN(bounds_init)(&hs, X, n, d, K, ws.nt)) != ML_OK) goto done;
    FN(km_lloyd_ctx) ctx = {&ws, hp, X, w, centers, buf, lab, sums, wsum, 1, 0};
    st = FN(drive)(&ws, hp, FN(lloyd_step), FN(lloyd_centers), &ctx, 0, X, w,
                   lab, max_iter, tol, labels, inertia, n_iter, strict);
    if (st == ML_OK && ctx.C != centers)
        memcpy(centers, ctx.C, (size_t)(K * d) * sizeof(REAL));
done:
    free(buf); free(lab); free(sums); free(wsum);
    FN(bounds_free)(&hs);
    FN(work_free)(&ws);
    return st;
}

int FN(ml_kmeans_lloyd)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                        ptrdiff_t K, REAL *centers, int max_iter, double tol,
                        int64_t *labels, double *inertia, int *n_iter,
                        int *strict, GEMM_T gemm, int method, int n_threads)
{
    return FN(lloyd_run)(X, w, n, d, K, centers, max_iter, tol, labels,
                         inertia, n_iter, strict, gemm, method, n_threads, 0);
}

int FN(ml_kmeans_hamerly)(const REAL *X, const REAL *w, ptrdiff_t n,
                          ptrdiff_t d, ptrdiff_t K, REAL *centers,
                          int max_iter, double tol, int64_t *labels,
                          double *inertia, int *n_iter, int *strict,
                          GEMM_T gemm, int method, int n_threads)
{
    return FN(lloyd_run)(X, w, n, d, K, centers, max_iter, tol, labels,
                         inertia, n_iter, strict, gemm, method, n_threads, 1);
}

/* One pass of the sequential k-means of the lecture notes, in data order,
 * over float64 centers Cd (updated in place; C holds Cd rounded to REAL for
 * the final assignment): each row joins its nearest center and a row that
 * moves leaves its old one, so every center stays the weighted mean of its
 * current members (cnt their weight, members their number; an emptied center
 * stays where it was). Ctrl-C is polled every ML_KM_POLL_ROWS rows. */
typedef struct {
    const REAL *X, *w;
    ptrdiff_t n, d, K;
    double *Cd, *Cprev, *cnt;
    int64_t *members;
    REAL *C;
    int32_t *lab;
} FN(km_online_ctx);

static int FN(online_step)(void *vctx, int64_t *changed_out, double *shift)
{
    FN(km_online_ctx) *c = vctx;
    const ptrdiff_t d = c->d, K = c->K;
    double *Cd = c->Cd;
    memcpy(c->Cprev, Cd, (size_t)(K * d) * sizeof(double));
    int64_t changed = 0;
    for (ptrdiff_t i = 0; i < c->n; ++i) {
        if (i % ML_KM_POLL_ROWS == 0 && ml_interrupted()) return ML_ERR_INTERRUPTED;
        const REAL *x = c->X + i * d;
        double bs = INFINITY;
        int32_t bk = 0;
        for (ptrdiff_t k = 0; k < K; ++k) {
            double s = 0;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const double t = (double)x[j] - Cd[k * d + j];
                s += t * t;
            }
            if (s < bs) { bs = s; bk = (int32_t)k; }
        }
        const int32_t old = c->lab[i];
        if (bk == old) continue;
        ++changed;
        c->lab[i] = bk;
        const double wi = c->w ? (double)c->w[i] : 1.0;
        if (!(wi > 0)) continue;
        if (old >= 0 && --c->members[old] > 0) {   /* mu <- (W mu - w x) / (W - w) */
            c->cnt[old] -= wi;
            const double eta = wi / c->cnt[old];
            double *co = Cd + (ptrdiff_t)old * d;
            for (ptrdiff_t j = 0; j < d; ++j) co[j] += eta * (co[j] - (double)x[j]);
        } else if (old >= 0) {
            c->cnt[old] = 0;
        }
        ++c->members[bk];
        c->cnt[bk] += wi;
        const double eta = wi / c->cnt[bk];
        double *ck = Cd + (ptrdiff_t)bk * d;
        for (ptrdiff_t j = 0; j < d; ++j) ck[j] += eta * ((double)x[j] - ck[j]);
    }
    double sh = 0;
    for (ptrdiff_t t = 0; t < K * d; ++t) {
        const double u = Cd[t] - c->Cprev[t];
        sh += u * u;
        c->C[t] = (REAL)Cd[t];
    }
    *changed_out = changed;
    *shift = sh;
    return ML_OK;
}

static const REAL *FN(online_centers)(void *vctx)
{
    return ((FN(km_online_ctx) *)vctx)->C;
}

int FN(ml_kmeans_online)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                         ptrdiff_t K, REAL *centers, int max_iter, double tol,
                         int64_t *labels, double *inertia, int *n_iter,
                         int *strict, GEMM_T gemm, int method, int n_threads)
{
    if (n < 1 || d < 1 || K < 1 || K > n || max_iter < 1 || K > INT32_MAX)
        return ML_ERR_ARG;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 0, 0, NULL);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    double *cnt = calloc((size_t)K, sizeof(double));
    int64_t *members = calloc((size_t)K, sizeof(int64_t));
    double *Cd = malloc((size_t)(K * d) * sizeof(double));
    double *Cprev = malloc((size_t)(K * d) * sizeof(double));
    if (!lab || !cnt || !members || !Cd || !Cprev) { st = ML_ERR_ALLOC; goto done; }
    /* Centers are kept in float64 during the passes and rounded after each. */
    for (ptrdiff_t t = 0; t < K * d; ++t) Cd[t] = (double)centers[t];
    FN(km_online_ctx) ctx = {X, w, n, d, K, Cd, Cprev, cnt, members, centers, lab};
    st = FN(drive)(&ws, NULL, FN(online_step), FN(online_centers), &ctx, 1, X,
                   w, lab, max_iter, tol, labels, inertia, n_iter, strict);
done:
    free(lab); free(cnt); free(members); free(Cd); free(Cprev);
    FN(work_free)(&ws);
    return st;
}


int FN(ml_kmeans_assign)(const REAL *X, const REAL *shift, ptrdiff_t n,
                         ptrdiff_t d, const REAL *centers, ptrdiff_t K,
                         int64_t *labels, REAL *dist, GEMM_T gemm, int method,
                         int n_threads)
{
    if (n < 0 || d < 1 || K < 1 || K > INT32_MAX) return ML_ERR_ARG;
    if (n == 0) return ML_OK;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 0, 0, shift);
    if (st != ML_OK) return st;
    int32_t *lab = malloc((size_t)n * sizeof(int32_t));
    double *dd = dist ? malloc((size_t)n * sizeof(double)) : NULL;
    if (!lab || (dist && !dd)) { st = ML_ERR_ALLOC; goto done; }
    for (ptrdiff_t i = 0; i < n; ++i) lab[i] = -1;
    int64_t changed;
    FN(pass)(&ws, NULL, X, NULL, centers, lab, NULL, NULL, &changed, 0);
    if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
    FN(lab_out)(lab, n, labels);
    if (dist) {
        FN(own_dist)(X, shift, n, d, centers, lab, dd, ws.nt);
        for (ptrdiff_t i = 0; i < n; ++i) dist[i] = (REAL)dd[i];
    }
done:
    free(lab); free(dd);
    FN(work_free)(&ws);
    return st;
}

#if KM_SCREEN
int FN(ml_kmeans_screen_probe)(const REAL *X, ptrdiff_t n, ptrdiff_t d,
                               const REAL *centers, ptrdiff_t K,
                               int64_t *labels, unsigned char *settled,
                               double *margin)
{
    if (n < 1 || d < 1 || K < 1 || K > INT32_MAX) return ML_ERR_ARG;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, NULL, ML_KM_SCREEN, 1, 0, 0, NULL);
    if (st != ML_OK) return st;
    if (!ws.screen) { FN(work_free)(&ws); return ML_ERR_ARG; }
    FN(center_prep)(&ws, centers);
    FN(km_scratch) sc;
    FN(scratch_of)(&ws, 0, &sc);
    for (ptrdiff_t i0 = 0; i0 < n; i0 += ML_KM_CHUNK) {
        const ptrdiff_t m = n - i0 < ML_KM_CHUNK ? n - i0 : ML_KM_CHUNK;
        int32_t lab[ML_KM_CHUNK];
        ptrdiff_t open[ML_KM_CHUNK], no = m;
        double mg[ML_KM_CHUNK];
        for (ptrdiff_t b = 0; b < m; ++b) { lab[b] = -1; open[b] = b; mg[b] = -INFINITY; }
        if (ws.s_on)
            no = FN(screen_open)(&ws, X + i0 * d, m, -1, sc.sx, lab, open, margin ? mg : NULL);
        for (ptrdiff_t b = 0; b < m; ++b) {
            labels[i0 + b] = lab[b];
            settled[i0 + b] = 1;
            if (margin) margin[i0 + b] = mg[b];
        }
        for (ptrdiff_t t = 0; t < no; ++t) {
            settled[i0 + open[t]] = 0;
            if (margin) margin[i0 + open[t]] = -INFINITY;
        }
    }
    FN(work_free)(&ws);
    return ML_OK;
}
#endif

/* One block of Lloyd: labels of the rows (nearest center), the block's
 * weighted per-cluster sums (K x d, float64) and weights (K), and its inertia
 * under those labels.  The same pass as one Lloyd iteration (the same
 * segments and fixed-order reduction), so the outputs do not depend on the
 * thread count.  inertia may be NULL (not computed); labels may be NULL (the
 * sums only: no label output written). */
int FN(ml_kmeans_assign_accumulate)(const REAL *X, const REAL *w, ptrdiff_t n,
                                    ptrdiff_t d, const REAL *centers,
                                    ptrdiff_t K, double *sums, double *wsum,
                                    int64_t *labels, double *inertia,
                                    GEMM_T gemm, int method, int n_threads)
{
    if (n < 1 || d < 1 || K < 1 || K > INT32_MAX) return ML_ERR_ARG;
    FN(km_work) ws;
    int st = FN(work_init)(&ws, n, d, K, gemm, method, n_threads, 1, 0, NULL);
    if (st != ML_OK) return st;
    /* The pass's own int32 labels; their initial values only feed the change
     * count, which is not used here, so calloc's zeros (no fill loop). */
    int32_t *lab = calloc((size_t)n, sizeof(int32_t));
    if (!lab) { st = ML_ERR_ALLOC; goto done; }
    int64_t changed;
    FN(pass)(&ws, NULL, X, w, centers, lab, sums, wsum, &changed, 0);
    if (ml_interrupted()) { st = ML_ERR_INTERRUPTED; goto done; }
    if (inertia) {  /* a second read of the block: only when asked for */
        st = FN(inertia)(X, w, n, d, centers, lab, inertia, ws.nt);
        if (st != ML_OK) goto done;
    }
    if (labels) FN(lab_out)(lab, n, labels);
done:
    free(lab);
    FN(work_free)(&ws);
    return st;
}

/* k-means++: distances of all rows to T candidates, block by block. */
/* k-means++'s candidate scores over rows [lo, hi): acc[t] (t < KM_PP_LANES) =
 * sum over the rows in order of w_i min(closest_i, ||x_i - c_t||^2), with
 * ct the candidates j-major (ct[j * KM_PP_LANES + t], float64).  Each lane is
 * one candidate and does what the one-candidate loop did, operation for
 * operation (difference, square, add in j order; min; weighted add in row
 * order; no contraction outside ML_FP_CONTRACT regions): the same bits, with
 * KM_PP_LANES independent chains in flight instead of one latency-bound chain
 * (k-means++ at K = 256, N = 2e5, d = 16 spent 88% of a 30-iteration fit
 * here). */
#define KM_PP_LANES 8
#if KM_HAVE_VEC
/* The lanes as two 4-double vectors (the scalar form kept the 8 chains in
 * scalar registers; one 8-double vector went through the stack on AVX2). */
static ML_ALWAYS_INLINE void FN(pp_min)(km_v4d *m, const km_v4d *s, const km_v4d *cl)
{
    typedef __typeof__((km_v4d){0} < (km_v4d){0}) M;
    const M lt = *s < *cl;
    *m = (km_v4d)((lt & (M)*s) | (~lt & (M)*cl));
}

ML_CLONES static void FN(pp_block)(const REAL *X, const REAL *w, ptrdiff_t lo,
                                   ptrdiff_t hi, ptrdiff_t d, const double *ct,
                                   const double *closest, double *acc,
                                   double *sc, ptrdiff_t n, int nl)
{
    km_v4d a0 = {0}, a1 = {0};
    for (ptrdiff_t i = lo; i < hi; ++i) {  /* rows in order: the same sums */
        const REAL *x = X + i * d;
        km_v4d s0 = {0}, s1 = {0};
        for (ptrdiff_t j = 0; j < d; ++j) {
            km_v4d c0, c1;
            memcpy(&c0, ct + j * KM_PP_LANES, sizeof c0);
            memcpy(&c1, ct + j * KM_PP_LANES + 4, sizeof c1);
            const km_v4d xj = (double)x[j] - (km_v4d){0};
            const km_v4d u0 = xj - c0, u1 = xj - c1;
            s0 += u0 * u0;
            s1 += u1 * u1;
        }
        if (sc) {  /* lane l's score of row i, kept for the update (pp_step) */
            double sl[KM_PP_LANES];
            memcpy(sl, &s0, sizeof s0);
            memcpy(sl + 4, &s1, sizeof s1);
            for (int l = 0; l < nl; ++l) sc[l * n + i] = sl[l];
        }
        const km_v4d cl = closest[i] - (km_v4d){0};
        km_v4d m0, m1;
        FN(pp_min)(&m0, &s0, &cl);
        FN(pp_min)(&m1, &s1, &cl);
        if (w) {
            const km_v4d wi = (double)w[i] - (km_v4d){0};
            a0 += wi * m0;
            a1 += wi * m1;
        } else {
            a0 += m0;
            a1 += m1;
        }
    }
    memcpy(acc, &a0, sizeof a0);
    memcpy(acc + 4, &a1, sizeof a1);
}
#else
static void FN(pp_block)(const REAL *X, const REAL *w, ptrdiff_t lo, ptrdiff_t hi,
                         ptrdiff_t d, const double *ct, const double *closest,
                         double *acc, double *sc, ptrdiff_t n, int nl)
{
    for (int t = 0; t < KM_PP_LANES; ++t) acc[t] = 0;
    for (ptrdiff_t i = lo; i < hi; ++i) {
        const REAL *x = X + i * d;
        double s[KM_PP_LANES] = {0};
        for (ptrdiff_t j = 0; j < d; ++j)
            for (int t = 0; t < KM_PP_LANES; ++t) {
                const double u = (double)x[j] - ct[j * KM_PP_LANES + t];
                s[t] += u * u;
            }
        if (sc)
            for (int l = 0; l < nl; ++l) sc[l * n + i] = s[l];
        for (int t = 0; t < KM_PP_LANES; ++t) {
            const double m = s[t] < closest[i] ? s[t] : closest[i];
            acc[t] += w ? (double)w[i] * m : m;
        }
    }
}
#endif

/* part[bi * T + t]: candidate t's potential over row block bi; sc (or NULL):
 * sc[t * n + i] candidate t's squared distance to row i. */
static int FN(pp_scores)(const REAL *X, const REAL *w, ptrdiff_t n, ptrdiff_t d,
                         const int64_t *cand, ptrdiff_t T, const double *closest,
                         double *part, double *sc, int nt)
{
    const ptrdiff_t BL = ML_KM_PP_BLOCK, nb = (n + BL - 1) / BL;
    const ptrdiff_t ng = (T + KM_PP_LANES - 1) / KM_PP_LANES;
    double *ct = malloc((size_t)(ng * d * KM_PP_LANES) * sizeof(double));
    if (!ct) return ML_ERR_ALLOC;
    for (ptrdiff_t g = 0; g < ng; ++g)  /* lanes past T repeat candidate 0 */
        for (ptrdiff_t j = 0; j < d; ++j)
            for (int l = 0; l < KM_PP_LANES; ++l) {
                const ptrdiff_t t = g * KM_PP_LANES + l < T ? g * KM_PP_LANES + l : 0;
                ct[(g * d + j) * KM_PP_LANES + l] = (double)X[cand[t] * d + j];
            }
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t bi = 0; bi < nb; ++bi) {
        if (ml_interrupted()) continue;
        const ptrdiff_t lo = bi * BL, hi = lo + BL < n ? lo + BL : n;
        for (ptrdiff_t g = 0; g < ng; ++g) {
            double acc[KM_PP_LANES];
            const int nl = T - g * KM_PP_LANES < KM_PP_LANES ? (int)(T - g * KM_PP_LANES)
                                                               : KM_PP_LANES;
            FN(pp_block)(X, w, lo, hi, d, ct + g * d * KM_PP_LANES, closest, acc,
                         sc ? sc + g * KM_PP_LANES * n : NULL, n, nl);
            for (int l = 0; l < KM_PP_LANES && g * KM_PP_LANES + l < T; ++l)
                part[bi * T + g * KM_PP_LANES + l] = acc[l];
        }
    }
    free(ct);
    return ml_interrupted() ? ML_ERR_INTERRUPTED : ML_OK;
}

/* closest[i] = min(closest[i], ||x_i - c||^2), the squared distance summed in j
 * order as pp_block's lanes sum it (the same bits); four rows at a time, four
 * independent chains instead of one latency-bound one. */
ML_CLONES static void FN(pp_update)(const REAL *X, ptrdiff_t n, ptrdiff_t d,
                                    const double *c, double *closest, int nt)
{
    const ptrdiff_t n4 = n / 4;
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t q = 0; q < n4 + 1; ++q) {
        const ptrdiff_t i0 = 4 * q, m = n - i0 < 4 ? n - i0 : 4;
        double s[4] = {0, 0, 0, 0};
        if (m == 4) {
            const REAL *x0 = X + i0 * d, *x1 = x0 + d, *x2 = x1 + d, *x3 = x2 + d;
            for (ptrdiff_t j = 0; j < d; ++j) {
                const double u0 = (double)x0[j] - c[j], u1 = (double)x1[j] - c[j];
                const double u2 = (double)x2[j] - c[j], u3 = (double)x3[j] - c[j];
                s[0] += u0 * u0;
                s[1] += u1 * u1;
                s[2] += u2 * u2;
                s[3] += u3 * u3;
            }
        } else {
            for (ptrdiff_t r = 0; r < m; ++r)
                for (ptrdiff_t j = 0; j < d; ++j) {
                    const double u = (double)X[(i0 + r) * d + j] - c[j];
                    s[r] += u * u;
                }
        }
        for (ptrdiff_t r = 0; r < m; ++r)
            if (s[r] < closest[i0 + r]) closest[i0 + r] = s[r];
    }
}

int FN(ml_kmeans_pp_step)(const REAL *X, const REAL *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          double *sc, int n_threads)
{
    if (n < 1 || d < 1 || T < 1) return ML_ERR_ARG;
    for (ptrdiff_t t = 0; t < T; ++t)
        if (cand[t] < 0 || cand[t] >= n) return ML_ERR_ARG;
    const ptrdiff_t nb = (n + ML_KM_PP_BLOCK - 1) / ML_KM_PP_BLOCK;
    const int nt = ml_threads(n_threads);
    double *part = malloc((size_t)(nb * T) * sizeof(double));
    double *c = sc ? NULL : malloc((size_t)d * sizeof(double));  /* the update's center */
    int st = part && (sc || c) ? FN(pp_scores)(X, w, n, d, cand, T, closest, part, sc, nt)
                               : ML_ERR_ALLOC;
    if (st != ML_OK) { free(part); free(c); return st; }
    ptrdiff_t bt = 0;
    double bpot = INFINITY;
    for (ptrdiff_t t = 0; t < T; ++t) {
        double p = 0;
        for (ptrdiff_t bi = 0; bi < nb; ++bi) p += part[bi * T + t];
        if (p < bpot) { bpot = p; bt = t; }
    }
    if (sc) {  /* the scoring pass's distances to the best: no second read of X */
        const double *s = sc + bt * n;
        #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
        for (ptrdiff_t i = 0; i < n; ++i)
            if (s[i] < closest[i]) closest[i] = s[i];
    } else {
        for (ptrdiff_t j = 0; j < d; ++j) c[j] = (double)X[cand[bt] * d + j];
        FN(pp_update)(X, n, d, c, closest, nt);
    }
    free(part); free(c);
    *best = bt;
    *pot = bpot;
    return ML_OK;
}

int FN(ml_kmeans_sq_dist_to)(const REAL *X, ptrdiff_t n, ptrdiff_t d,
                             const double *c, double *out, int n_threads)
{
    if (n < 0 || d < 1) return ML_ERR_ARG;
    for (ptrdiff_t i = 0; i < n; ++i) out[i] = INFINITY;
    FN(pp_update)(X, n, d, c, out, ml_threads(n_threads));
    return ML_OK;
}

int FN(ml_kmeans_center_rows)(const REAL *X, ptrdiff_t n, ptrdiff_t d,
                              const REAL *shift, REAL *out, double *key,
                              int n_threads)
{
    if (n < 0 || d < 1) return ML_ERR_ARG;
    double *zero = key ? calloc((size_t)d, sizeof(double)) : NULL;
    if (key && !zero) return ML_ERR_ALLOC;
    const ptrdiff_t chunk = 1024;  /* rows centered, then scored while in cache */
    const ptrdiff_t nc = (n + chunk - 1) / chunk;
    const int nt = ml_threads(n_threads);
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && n >= ML_KM_PAR_MIN_ROWS)
    for (ptrdiff_t b = 0; b < nc; ++b) {
        const ptrdiff_t lo = b * chunk, m = n - lo < chunk ? n - lo : chunk;
        for (ptrdiff_t i = lo; i < lo + m; ++i)
            for (ptrdiff_t j = 0; j < d; ++j) out[i * d + j] = X[i * d + j] - shift[j];
        if (key) FN(ml_kmeans_sq_dist_to)(out + lo * d, m, d, zero, key + lo, 1);
    }
    free(zero);
    return ML_OK;
}

#undef KM_PP_LANES
#undef FN
#undef KM_ALIGN64
#undef KM_HAVE_VEC
#undef KM_CAT
#undef KM_CAT2
