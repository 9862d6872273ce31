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
