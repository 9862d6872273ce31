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
static inline double ml_expneg1_f64(double x) {
    const double log2e = 1.4426950408889634074;
    const double shift = 6755399441055744.0; /* 0x1.8p52 */
    const double ln2hi = 6.93147180369123816490e-01; /* 32 significant bits */
    const double ln2lo = 1.90821492927058770002e-10;
    x = x >= -746.0 ? x : -746.0;
    double t = x * log2e + shift;
    double kd = t - shift;
    double r = (x - kd * ln2hi) - kd * ln2lo;
    /* Taylor coefficients 1/j!, evaluated by Estrin's scheme (short
     * dependency chains: the loop is latency-bound under Horner). */
    const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const double p01 = 1.0 + r, p23 = 0.5 + r * (1.0 / 6.0),
                 p45 = 1.0 / 24.0 + r * (1.0 / 120.0),
                 p67 = 1.0 / 720.0 + r * (1.0 / 5040.0),
                 p89 = 1.0 / 40320.0 + r * (1.0 / 362880.0),
                 p1011 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    const double q0 = p01 + r2 * p23, q1 = p45 + r2 * p67,
                 q2 = p89 + r2 * p1011;
    const double e0 = q0 + r4 * q1, e1 = q2 + r4 * (1.0 / 479001600.0);
    const double p = e0 + r8 * e1;
    double h = kd * 0.5 + shift; /* low bits: k1 = round(k / 2) */
    double t2 = (kd - (h - shift)) + shift; /* low bits: k2 = k - k1 */
    uint64_t b1, b2;
    memcpy(&b1, &h, sizeof b1);
    memcpy(&b2, &t2, sizeof b2);
    b1 = (b1 + 1023u) << 52;
    b2 = (b2 + 1023u) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return p * s1 * s2;
}

static inline float ml_expneg1_f32(float x) {
    const float log2e = 1.44269504088896341f;
    const float shift = 12582912.0f; /* 0x1.8p23 */
    const float ln2hi = 0.693145751953125f; /* 16 significant bits */
    const float ln2lo = 1.428606765330187045e-06f;
    x = x >= -104.0f ? x : -104.0f;
    float t = x * log2e + shift;
    float kd = t - shift;
    float r = (x - kd * ln2hi) - kd * ln2lo;
    const float r2 = r * r, r4 = r2 * r2;
    const float p01 = 1.0f + r, p23 = 0.5f + r * (1.0f / 6.0f),
                p45 = 1.0f / 24.0f + r * (1.0f / 120.0f),
                p67 = 1.0f / 720.0f + r * (1.0f / 5040.0f);
    const float p = (p01 + r2 * p23) + r4 * (p45 + r2 * p67);
    float h = kd * 0.5f + shift;
    float t2 = (kd - (h - shift)) + shift;
    uint32_t b1, b2;
    memcpy(&b1, &h, sizeof b1);
    memcpy(&b2, &t2, sizeof b2);
    b1 = (b1 + 127u) << 23;
    b2 = (b2 + 127u) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return p * s1 * s2;
}

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
