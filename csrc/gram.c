/* The squared-distance tile, the Gaussian Gram matrix and the fused
 * Gram-times-matrix product. The float64 and float32 kernels are one
 * template, gram_impl.h, included twice. See gram.h for the contract. */
#include "gram.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Let the compiler fuse a * b + c into FMA where the target has it (ISO C
 * mode turns contraction off by default). Only the ISA clones with FMA use
 * it; results then differ from the baseline build in the last bit. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Hot loops are compiled for three ISA levels and dispatched at load time:
 * ML_CLONES comes from dispatch.h, shared by every kernel. */
#include "dispatch.h"

/* ------------------------------------------------------------------------ */
/* exp(x) for x <= 0, branch-free so that loops calling it vectorize.
 *
 * x = k ln2 + r with k = round(x / ln2) and |r| <= ln2/2 (Cody-Waite: ln2 in
 * two parts, k ln2_hi exact); exp(r) by its Taylor polynomial (degree 12 for
 * double: truncation < 2e-16 relative; degree 7 for float: < 6e-9), then
 * multiplied by 2^k1 * 2^k2 (k = k1 + k2, both normal powers of two, so that
 * results in the subnormal range round correctly). The integer k is read from
 * the low mantissa bits of x/ln2 + 1.5*2^52 (no float->int conversion, which
 * has no vector form before AVX-512). x below the underflow threshold (and
 * NaN, from overflowed inputs) gives 0. Measured error: see tests. */
/* exp(r) for |r| <= ln2/2: the Taylor coefficients 1/j!, by Estrin's scheme
 * (short dependency chains: the loop is latency-bound under Horner). */
static inline double ml_exppoly_f64(double r) {
    const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const double p01 = 1.0 + r, p23 = 0.5 + r * (1.0 / 6.0),
                 p45 = 1.0 / 24.0 + r * (1.0 / 120.0),
                 p67 = 1.0 / 720.0 + r * (1.0 / 5040.0),
                 p89 = 1.0 / 40320.0 + r * (1.0 / 362880.0),
                 p1011 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    const double q0 = p01 + r2 * p23, q1 = p45 + r2 * p67,
                 q2 = p89 + r2 * p1011;
    const double e0 = q0 + r4 * q1, e1 = q2 + r4 * (1.0 / 479001600.0);
    return e0 + r8 * e1;
}

static inline float ml_exppoly_f32(float r) {
    const float r2 = r * r, r4 = r2 * r2;
    const float p01 = 1.0f + r, p23 = 0.5f + r * (1.0f / 6.0f),
                p45 = 1.0f / 24.0f + r * (1.0f / 120.0f),
                p67 = 1.0f / 720.0f + r * (1.0f / 5040.0f);
    return (p01 + r2 * p23) + r4 * (p45 + r2 * p67);
}

/* One body for both types: REAL, its unsigned integer of the same width, the
 * exponent bias and mantissa bits, and the constants (typed literals):
 * log2(e), the shift 1.5 * 2^MANT, ln2 in a high part with few significant
 * bits and the rest, and the clamp below which the result is 0.
 * t = k + shift holds k in its low mantissa bits: 2^k is those bits plus the
 * bias, moved into the exponent field. */
#define ML_EXPNEG1(SUF, REAL, UINT, BIAS, MANT, LOG2E, SHIFT, LN2HI, LN2LO, XMIN, HALF)  \
    static inline REAL ml_pow2_##SUF(REAL t) {                                          \
        UINT b;                                                                          \
        memcpy(&b, &t, sizeof b);                                                        \
        b = (b + BIAS) << MANT;                                                          \
        REAL s;                                                                          \
        memcpy(&s, &b, sizeof s);                                                        \
        return s;                                                                        \
    }                                                                                    \
    static inline REAL ml_expneg1_##SUF(REAL x) {                                       \
        const REAL log2e = LOG2E, shift = SHIFT, ln2hi = LN2HI, ln2lo = LN2LO;           \
        x = x >= XMIN ? x : XMIN;                                                        \
        REAL t = x * log2e + shift;                                                      \
        REAL kd = t - shift;                                                             \
        REAL r = (x - kd * ln2hi) - kd * ln2lo;                                          \
        const REAL p = ml_exppoly_##SUF(r);                                              \
        REAL h = kd * HALF + shift;            /* low bits: k1 = round(k / 2) */         \
        REAL t2 = (kd - (h - shift)) + shift;  /* low bits: k2 = k - k1 */               \
        return p * ml_pow2_##SUF(h) * ml_pow2_##SUF(t2);                                 \
    }

/* ln2hi: 32 significant bits (double), 16 (float); shift 0x1.8p52, 0x1.8p23. */
ML_EXPNEG1(f64, double, uint64_t, 1023u, 52, 1.4426950408889634074, 6755399441055744.0,
           6.93147180369123816490e-01, 1.90821492927058770002e-10, -746.0, 0.5)
ML_EXPNEG1(f32, float, uint32_t, 127u, 23, 1.44269504088896341f, 12582912.0f,
           0.693145751953125f, 1.428606765330187045e-06f, -104.0f, 0.5f)
#undef ML_EXPNEG1

ML_CLONES
void ml_expneg_f64(const double *ML_RESTRICT x, double *ML_RESTRICT out,
                   ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = ml_expneg1_f64(x[i]);
}

ML_CLONES
void ml_expneg_f32(const float *ML_RESTRICT x, float *ML_RESTRICT out,
                   ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = ml_expneg1_f32(x[i]);
}

/* ------------------------------------------------------------------------ */
/* A row of a tile buffer copied into G (plain memcpy: non-temporal stores
 * were tried and gained nothing measurable, the first-touch page clearing of
 * a fresh output dominates the memory time). */
#define ML_COPY_ROW(dst, src, n) memcpy((dst), (src), sizeof *(dst) * (size_t)(n))

#define REAL double
#define REAL_MAX DBL_MAX
#define SUF(name) name##_f64
#define GEMM_T ml_dgemm_fn
#define EXPNEG ml_expneg1_f64
#include "gram_impl.h"
#undef REAL
#undef REAL_MAX
#undef SUF
#undef GEMM_T
#undef EXPNEG

#define REAL float
#define REAL_MAX FLT_MAX
#define SUF(name) name##_f32
#define GEMM_T ml_sgemm_fn
#define EXPNEG ml_expneg1_f32
#include "gram_impl.h"
#undef REAL
#undef REAL_MAX
#undef SUF
#undef GEMM_T
#undef EXPNEG
