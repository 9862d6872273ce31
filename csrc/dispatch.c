/* The portable dispatcher's CPU check (see dispatch.h): which ISA level's
 * copy of the hot files runs here.  Built in every configuration (it is
 * small); the trampolines that use it exist only in the portable build.
 *
 * A level needs every feature its -march promises the compiler (the psABI
 * x86-64-v3 / -v4 lists, since the copies are compiled for the whole level)
 * and the OS must save the registers (XCR0): an OS without AVX-512 state
 * gets AVX2, one without AVX state gets the baseline. */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define ML_X86 1
#if defined(__GNUC__) || defined(__clang__)
#include <cpuid.h>
static void ml_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    r[0] = r[1] = r[2] = r[3] = 0;
    if (__get_cpuid_max(leaf & 0x80000000u, NULL) < leaf) return;
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
/* Inline asm, not _xgetbv(): clang's intrinsic needs the xsave target
 * feature, which a baseline compile does not have. Only run once cpuid said
 * OSXSAVE. */
static unsigned long long ml_xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#elif defined(_MSC_VER)
#include <intrin.h>
static void ml_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    int x[4];
    r[0] = r[1] = r[2] = r[3] = 0;
    __cpuid(x, (int)(leaf & 0x80000000u));
    if ((unsigned)x[0] < leaf) return;
    __cpuidex(x, (int)leaf, (int)sub);
    for (int i = 0; i < 4; ++i) r[i] = (unsigned)x[i];
}
static unsigned long long ml_xcr0(void) { return _xgetbv(0); }
#else
#undef ML_X86
#endif
#endif

#if defined(ML_X86) && defined(__APPLE__)
#include <sys/sysctl.h>
/* macOS turns the AVX-512 register state on at a thread's first AVX-512
 * instruction, so XCR0 may not show it yet; the kernel's sysctls say whether
 * the CPU and OS support it. */
static int ml_macos_has(const char *name)
{
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, NULL, 0) == 0 && v != 0;
}
#endif

#define BIT(r, b) (((r) >> (b)) & 1u)

static int ml_detect_level(void)
{
#if defined(ML_X86)
    unsigned l1[4], l7[4], e1[4];
    ml_cpuid(1, 0, l1);
    ml_cpuid(7, 0, l7);
    ml_cpuid(0x80000001u, 0, e1);
    const unsigned ecx = l1[2], ebx7 = l7[1], ecx_e = e1[2];
    /* x86-64-v2: SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, CMPXCHG16B, LAHF/SAHF. */
    const int v2 = BIT(ecx, 0) && BIT(ecx, 9) && BIT(ecx, 19) && BIT(ecx, 20) &&
                   BIT(ecx, 23) && BIT(ecx, 13) && BIT(ecx_e, 0);
    /* x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, OSXSAVE. */
    const int v3_cpu = v2 && BIT(ecx, 28) && BIT(ebx7, 5) && BIT(ebx7, 3) &&
                       BIT(ebx7, 8) && BIT(ecx, 29) && BIT(ecx, 12) &&
                       BIT(ecx_e, 5) && BIT(ecx, 22) && BIT(ecx, 27);
    if (!v3_cpu) return 1;
    const unsigned long long xcr0 = ml_xcr0();
    if ((xcr0 & 0x6) != 0x6) return 1;      /* SSE and AVX state */
    /* x86-64-v4: AVX512 F, BW, CD, DQ, VL. */
    const int v4_cpu = BIT(ebx7, 16) && BIT(ebx7, 30) && BIT(ebx7, 28) &&
                       BIT(ebx7, 17) && BIT(ebx7, 31);
    if (!v4_cpu) return 3;
    if ((xcr0 & 0xe0) == 0xe0) return 4;    /* opmask, ZMM0-15 high, ZMM16-31 */
#if defined(__APPLE__)
    if (ml_macos_has("hw.optional.avx512f") && ml_macos_has("hw.optional.avx512bw") &&
        ml_macos_has("hw.optional.avx512cd") && ml_macos_has("hw.optional.avx512dq") &&
        ml_macos_has("hw.optional.avx512vl"))
        return 4;
#endif
    return 3;
#else
    return 1;
#endif
}

/* -1 until the first call. Every thread that races to fill it writes the
 * same value, and an aligned int is read and written whole on every target
 * this builds for. */
static volatile int ml_level = -1;

int ml_dispatch_level(void)
{
    int level = ml_level;
    if (level < 0) {
        level = ml_detect_level();
        /* METRICLUST_MAX_SIMD caps the level (3: AVX2 copy, 1 or 0: the
         * baseline); a value that is not a whole number is ignored. */
        const char *cap = getenv("METRICLUST_MAX_SIMD");
        if (cap && *cap) {
            char *end;
            const long c = strtol(cap, &end, 10);
            if (*end == '\0' && c < level) level = c >= 3 ? 3 : 1;
        }
        ml_level = level;
    }
    return level;
}

/* ---------------------------------------------------------------------------
 * Whether 512-bit vectors pay on this CPU (ml_wide_vectors, dispatch.h).
 *
 * No feature bit says how wide the FMA units are: Intel's Xeon server parts
 * (and AMD's Zen 5 desktop and server parts) issue two 512-bit FMAs a cycle,
 * Zen 4 and Intel's one-port parts issue one (two 256-bit halves or one fused
 * port), against two 256-bit FMAs everywhere.  So the CPU is asked by timing:
 * 12 independent chains of FMAs (enough to keep two ports busy through a
 * 4-cycle latency) in zmm, then in ymm, the cycle counter around each; the
 * best of many alternating trials (ml_probe_ratio).  Two ports: zmm time /
 * ymm time ~1.0; one: ~2.  Up to a few milliseconds (0.1 ms where the ratio
 * settles early), once per process, only on CPUs whose AVX-512 state the OS
 * saves. */
#if defined(ML_X86) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <x86intrin.h>
/* 12 independent chains of n FMAs each in vectors of type V; the sum goes
 * to memory, so that none of it is optimized away (the loop must hold 12
 * FMAs: objdump -d, ml_probe_zmm). */
#define ML_PROBE_FN(NAME, TGT, V, SET1, FMA, ADD, STORE)                    \
    __attribute__((target(TGT), noinline)) static void NAME(long n, float *out) \
    {                                                                       \
        /* distinct starts: equal chains would be merged into one */       \
        const V m = SET1(0.5f), c = SET1(1.0f);                             \
        V a0 = SET1(0.0f), a1 = SET1(1.0f), a2 = SET1(2.0f), a3 = SET1(3.0f), \
          a4 = SET1(4.0f), a5 = SET1(5.0f), a6 = SET1(6.0f), a7 = SET1(7.0f), \
          a8 = SET1(8.0f), a9 = SET1(9.0f), a10 = SET1(10.0f), a11 = SET1(11.0f); \
        for (long i = 0; i < n; ++i) {                                      \
            a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c);      \
            a3 = FMA(a3, m, c); a4 = FMA(a4, m, c); a5 = FMA(a5, m, c);      \
            a6 = FMA(a6, m, c); a7 = FMA(a7, m, c); a8 = FMA(a8, m, c);      \
            a9 = FMA(a9, m, c); a10 = FMA(a10, m, c); a11 = FMA(a11, m, c);  \
        }                                                                   \
        STORE(out, ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), \
                       ADD(ADD(a8, a9), ADD(a10, a11))));                   \
    }
ML_PROBE_FN(ml_probe_zmm, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps,
            _mm512_add_ps, _mm512_storeu_ps)
ML_PROBE_FN(ml_probe_ymm, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps,
            _mm256_add_ps, _mm256_storeu_ps)
#undef ML_PROBE_FN
/* Read once, so that the probes' stores stay live. */
static volatile float ml_probe_keep;
/* zmm time over ymm time for the same count of FMA instructions: the best
 * of up to ML_PROBE_ROUNDS alternating trials (12000 FMAs each), stopping
 * early once 16 or more of them show a ratio below 1.25.  A CPU may run its
 * first 512-bit instructions slowly for a while (likely Intel powering
 * the upper halves up and changing its frequency licence): on a freshly
 * started 16-core Xeon, 7 rounds after a 240000-FMA warm-up read 1.35-1.60
 * in six processes of eight and 1.00 in the last two. */
#define ML_PROBE_ROUNDS 400
static double ml_probe_ratio(void)
{
    float sink[16];
    unsigned long long best_z = ~0ull, best_y = ~0ull;
    for (int r = 0; r < ML_PROBE_ROUNDS; ++r) {
        const unsigned long long t0 = __rdtsc();
        ml_probe_zmm(1000, sink);
        const unsigned long long t1 = __rdtsc();
        ml_probe_ymm(1000, sink);
        const unsigned long long t2 = __rdtsc();
        if (t1 - t0 < best_z) best_z = t1 - t0;
        if (t2 - t1 < best_y) best_y = t2 - t1;
        if (r >= 15 && 4 * best_z < 5 * best_y) break;
    }
    ml_probe_keep = sink[0];
    return best_y ? (double)best_z / (double)best_y : 2.0;
}
#define ML_HAVE_PROBE 1
#else
#define ML_HAVE_PROBE 0
#endif

/* -1 until the first call.  Threads that race to fill it each run the
 * probe and may write different answers; harmless, since only speed depends
 * on it (each fit reads it once, when it picks its kernels). */
static volatile int ml_wide = -1;
static volatile double ml_wide_ratio = -1.0;

int ml_wide_vectors(void)
{
    int wide = ml_wide;
    if (wide < 0) {
        /* METRICLUST_WIDE_VECTORS=0 or =1 decides instead of the probe (1
         * only where the CPU and OS run AVX-512). */
        const char *force = getenv("METRICLUST_WIDE_VECTORS");
        const int can = ml_detect_level() >= 4;
        if (force && (!strcmp(force, "0") || !strcmp(force, "1"))) {
            wide = can && force[0] == '1';
        } else {
#if ML_HAVE_PROBE
            if (can) {
                const double r = ml_probe_ratio();
                ml_wide_ratio = r;
                wide = r < ML_WIDE_VECTORS_MAX_RATIO;
            } else {
                wide = 0;
            }
#else
            wide = 0;
#endif
        }
        ml_wide = wide;
    }
    return wide;
}

double ml_wide_vectors_ratio(void)
{
    (void)ml_wide_vectors();
    return ml_wide_ratio;
}
