/* SIMD dispatch for every metriclust kernel: one place that says which ISA
 * levels a hot loop is compiled for and how the level is chosen at run time.
 *
 * The wheel targets baseline x86-64 (no -march=native).  A function marked
 * ML_CLONES is compiled several times and the loader picks the best clone
 * for the CPU it runs on:
 *
 *   GCC or Clang, x86-64, ELF with glibc (manylinux):
 *       target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")
 *       v4 = AVX-512 F/BW/CD/DQ/VL (32 vector registers, masks),
 *       v3 = AVX2 + FMA + BMI, default = SSE2.  The choice is made once by an
 *       ifunc resolver from the CPU's feature bits (cpuid), not its model.
 *       Where the clones must differ in more than the instructions (register
 *       blocking), a kernel is written once as an always-inline body and
 *       instantiated per level with ML_TARGET_V4 / ML_TARGET_V3 / no
 *       attribute; ml_simd_level() picks the instance (the same feature
 *       bits as the resolver, so it agrees with the clones).
 *   Clang on Mach-O (macOS), MSVC, musl libc, other architectures (aarch64 has NEON
 *       in its baseline), or ML_NO_CLONES defined at build time:
 *       ML_CLONES is empty and the loops are compiled once for the baseline,
 *       the portable scalar (auto-vectorized) fallback.  No ifunc exists on
 *       those targets; a hand-written cpuid dispatcher would need one copy of
 *       every kernel per level, which the baseline speed does not justify
 *       before a user asks for it.
 *
 * ML_HAVE_VECTOR_EXT says whether GCC/Clang vector extensions
 * (__attribute__((vector_size(n)))) may be used; code that uses them keeps a
 * plain C fallback for the other compilers.  ml_simd_level() reports what
 * the running CPU gets (for benchmark headers and bug reports).
 *
 * Floating-point contraction (a * b + c fused into one FMA) is not enabled
 * here: it changes results in the last bit between clones, so each file
 * decides.  gram.c turns it on for the whole file; kmeans.c turns it on only
 * around its register-blocked distance tile (see kmeans_impl.h). */
#ifndef METRICLUST_DISPATCH_H
#define METRICLUST_DISPATCH_H

/* <limits.h> pulls in glibc's <features.h>, which defines __GLIBC__: clones
 * need an ifunc resolver, which glibc has and musl (musllinux wheels) lacks. */
#include <limits.h>

#if !defined(ML_NO_CLONES) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__) &&         \
    (defined(__clang__) ? __clang_major__ >= 14 : __GNUC__ >= 11)
#define ML_HAVE_CLONES 1
#define ML_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* Kernels whose blocking depends on the register file (16 vector registers
 * on AVX2, 32 on AVX-512) are compiled once per level with these, each with
 * its own block sizes, and picked at run time by ml_simd_level(); the
 * baseline form carries no attribute. */
#define ML_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define ML_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#else
#define ML_HAVE_CLONES 0
#define ML_CLONES
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ML_ALWAYS_INLINE inline __attribute__((always_inline))
#define ML_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define ML_ALWAYS_INLINE inline
#define ML_PREFETCH(p) ((void)0)
#endif
/* ML_NO_VECTOR_EXT builds the plain C forms with GCC too (to test them). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(ML_NO_VECTOR_EXT)
#define ML_HAVE_VECTOR_EXT 1
#else
#define ML_HAVE_VECTOR_EXT 0
#endif

/* Contraction on/off for a stretch of functions (GCC: an optimize pragma;
 * Clang: the standard FP_CONTRACT pragma, which is honoured per block). */
#if defined(__GNUC__) && !defined(__clang__)
#define ML_FP_CONTRACT_BEGIN _Pragma("GCC push_options") \
    _Pragma("GCC optimize(\"fp-contract=fast\")")
#define ML_FP_CONTRACT_END _Pragma("GCC pop_options")
#else
#define ML_FP_CONTRACT_BEGIN
#define ML_FP_CONTRACT_END
#endif

/* The clone the loader picks on this CPU: 4 (x86-64-v4), 3 (x86-64-v3),
 * 1 (the baseline clone) or 0 (no clones in this build). */
static inline int ml_simd_level(void) {
#if ML_HAVE_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return 4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return 3;
    return 1;
#else
    return 0;
#endif
}

#endif
