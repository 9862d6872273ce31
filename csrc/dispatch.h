/* SIMD dispatch for every metriclust kernel: one place that says which ISA
 * levels a hot loop is compiled for and how the level is chosen at run time.
 *
 * The wheel targets baseline x86-64 (no -march=native).  The hot loops
 * (kmeans.c, kmeans1d.c, gram.c: the files that use ML_CLONES / ML_TARGET_*)
 * exist for three levels and the best one the CPU and OS support runs:
 *   v4 = AVX-512 F/BW/CD/DQ/VL (32 vector registers, masks),
 *   v3 = AVX2 + FMA + BMI1/2 + F16C + LZCNT + MOVBE,
 *   base = SSE2 (the portable, auto-vectorized fallback).
 * The level comes from the CPU's feature bits (cpuid) and the OS's saved
 * register state (xgetbv), not from the CPU model.  Kernels mark what is
 * compiled per level: ML_CLONES on a function compiled for each level as it
 * is; where the levels must differ in more than the instructions (register
 * blocking), a kernel is written once as an always-inline body, instantiated
 * per level with ML_TARGET_V4 / ML_TARGET_V3 / no attribute and picked by
 * ml_simd_level().  Two mechanisms build the levels, chosen by meson's
 * -Ddispatch option (meson.options):
 *
 *   portable (the default on x86-64 without ifunc: musl (musllinux), macOS
 *       (Clang, Mach-O), Windows (MSVC, MinGW); -Ddispatch=portable forces it
 *       on glibc, which is how CI tests it on Linux): per-level objects,
 *       numpy's approach.  meson compiles the hot C files once per level with
 *       ML_DISPATCH_LEVEL set and a force-included header, generated from the
 *       files' public headers by tools/gen_dispatch.py, that renames every
 *       entry point ml_x to ml_x_v4 / ml_x_v3 / ml_x_base.  Inside a level's
 *       copy ml_simd_level() is the constant level, so the level's kernel
 *       instances and block sizes are live and the other levels' are dead
 *       code.  GCC/Clang: ML_CLONES is the level's target attribute and the
 *       unmarked functions stay baseline, exactly what the clones build
 *       compiles, so the two give the same results bit for bit
 *       (.ci/dispatch_outputs.py, tools/check_dispatch.sh).  Compiling the
 *       whole file with -march=x86-64-v4 instead was tried: the unmarked
 *       helpers of gram.c's BLAS form then fused multiply-adds (the file
 *       allows contraction) and the Gram matrix moved by 1e-14 relative.
 *       MSVC has no target attribute: its copies are compiled whole with
 *       /arch:AVX512 / /arch:AVX2 / the default.  One generated trampoline
 *       per entry point (dispatch_table_<file>.c, one file per header, so a
 *       bridge links only the copies it calls) calls the copy for
 *       ml_dispatch_level() (dispatch.c: cpuid via <cpuid.h> on GCC/Clang,
 *       __cpuidex/_xgetbv on MSVC; on macOS, which turns the AVX-512 state on
 *       lazily, the hw.optional.avx512* sysctls), found once and cached.  No
 *       kernel body knows which mechanism built it.  METRICLUST_MAX_SIMD=3 or
 *       =1 in the environment caps the level (tests, bug reports: the AVX2 or
 *       baseline copy on an AVX-512 CPU).
 *
 *   clones (the default with GCC >= 11 or Clang >= 18 on x86-64 ELF with
 *       glibc: manylinux; also any direct compile of the sources, e.g. the C
 *       harness in benchmarks/): ML_CLONES is target_clones("arch=x86-64-v4",
 *       "arch=x86-64-v3", "default") and glibc's ifunc resolver picks each
 *       clone at load time; ml_simd_level() reads the same feature bits
 *       (__builtin_cpu_supports).  Not available on Mach-O, Windows or musl
 *       (no ifunc); METRICLUST_MAX_SIMD does not apply.  Clang before 18
 *       names a cloned function's ifunc "f.ifunc" and defines no "f", so an
 *       exported clone cannot be called from another file (Debian's clang
 *       14.0.6 here: _gram.so failed to import, ml_expneg_f32 undefined;
 *       llvm-project PR #71706 fixed it for 18; zig's clang 22 checked).
 *
 *   baseline (other architectures, where the baseline has the SIMD that
 *       matters (aarch64: NEON), or -Ddispatch=baseline / ML_NO_CLONES):
 *       ML_CLONES is empty and the loops are compiled once for the baseline.
 *
 * Why glibc keeps the clones: measured in the same run (benchmarks/
 * bench_dispatch.py; RESULTS.md, "Portable runtime SIMD dispatch (issue
 * #16)"), the portable build is as fast on most k-means and Gram cases (the
 * same kernel code and bits), but the k-means tile at d=32 f64 was 10-16%
 * slower in the last four measurements (faster in the first two), not yet
 * explained; the brief was one mechanism only if as fast, so glibc stays on
 * ifunc until that is settled.  The portable build also costs three compiles
 * of the hot files and three whole copies in the modules that call them:
 * the twelve extension modules total 4.52 MB against 4.31 MB with clones
 * (gcc 12, -O3).
 *
 * ML_HAVE_VECTOR_EXT says whether GCC/Clang vector extensions
 * (__attribute__((vector_size(n)))) may be used; code that uses them keeps a
 * plain C fallback for the other compilers (MSVC: the levels' copies differ by
 * what /arch lets the auto-vectorizer use).  ml_simd_level() reports what the
 * running CPU gets (for benchmark headers and bug reports).
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

/* The level the portable dispatcher picked on this CPU (dispatch.c): 4, 3 or
 * 1; 1 on other architectures. Found once, then cached. */
int ml_dispatch_level(void);

/* 1 where the kernels that can should use 512-bit vectors on the AVX-512
 * level: the CPU issues 512-bit FMAs at the rate of 256-bit ones (two
 * full-width FMA ports: Intel Xeon server parts, AMD Zen 5 desktop and
 * server parts), 0 elsewhere (Zen 4 and one-port Intel parts split a 512-bit
 * FMA, and the wider vectors only cost there).  No cpuid bit tells, so it is
 * timed once per process (dispatch.c: 0.1-0.8 ms where it settles early, up
 * to about 2.3 ms of alternation otherwise).  METRICLUST_WIDE_VECTORS
 * =0 or =1 in the environment decides instead (1 only on AVX-512 CPUs).  Only
 * speed may depend on it: a kernel that reads it gives the same bits at
 * either width.  ml_wide_vectors_ratio(): the probe's zmm / ymm time (-1
 * where it did not run). */
int ml_wide_vectors(void);
double ml_wide_vectors_ratio(void);
/* The probe's cut: at or above this zmm / ymm time ratio, 256-bit. */
#define ML_WIDE_VECTORS_MAX_RATIO 1.5

#if defined(ML_DISPATCH_LEVEL)
/* The level-ML_DISPATCH_LEVEL copy of a hot file (portable dispatch); the
 * level's kernel instances are the only live ones (ml_simd_level() is a
 * constant). GCC/Clang: each function gets the ISA its clone has in the
 * clones build (ML_CLONES = the level's target, the rest baseline), so the
 * two builds' code, and results, are the same bit for bit. MSVC, which has no
 * target attribute: the whole file is compiled for the level (/arch). */
#define ML_HAVE_CLONES (ML_DISPATCH_LEVEL >= 3)
#if defined(__GNUC__) || defined(__clang__)
#define ML_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define ML_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#if ML_DISPATCH_LEVEL >= 4
#define ML_CLONES ML_TARGET_V4
#elif ML_DISPATCH_LEVEL == 3
#define ML_CLONES ML_TARGET_V3
#else
#define ML_CLONES
#endif
#else
#define ML_CLONES
#define ML_TARGET_V4
#define ML_TARGET_V3
#endif
#elif !defined(ML_NO_CLONES) && !defined(ML_DISPATCH_PORTABLE) &&            \
    (defined(__GNUC__) || defined(__clang__)) &&                             \
    defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__) &&         \
    (defined(__clang__) ? __clang_major__ >= 18 : __GNUC__ >= 11)
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

/* ML_SHUFFLE(v, m): the vector whose lane i is v[m[i]]; ML_SHUFFLE2(a, b, m):
 * lane i is a[m[i]] for m[i] < n, else b[m[i] - n] (n lanes); m a vector of
 * lane indices, not necessarily constant: GCC's __builtin_shuffle. Clang has
 * no such builtin (its __builtin_shufflevector takes constant indices only):
 * a lane loop, which it turns into one permute once the indices are known.
 * The kernels spell it this way so that they build with any Clang (macOS). */
#if ML_HAVE_VECTOR_EXT && defined(__clang__)
#define ML_LANES_(v) ((int)(sizeof(v) / sizeof((v)[0])))
#define ML_SHUFFLE(v, m) __extension__({                                     \
    const __typeof__(v) ml_shv_ = (v);                                        \
    const __typeof__(m) ml_shm_ = (m);                                        \
    __typeof__(v) ml_shr_ = ml_shv_;                                          \
    for (int ml_shi_ = 0; ml_shi_ < ML_LANES_(ml_shv_); ++ml_shi_)            \
        ml_shr_[ml_shi_] = ml_shv_[ml_shm_[ml_shi_] & (ML_LANES_(ml_shv_) - 1)]; \
    ml_shr_; })
#define ML_SHUFFLE2(a, b, m) __extension__({                                 \
    const __typeof__(a) ml_sha_ = (a), ml_shb_ = (b);                         \
    const __typeof__(m) ml_shm_ = (m);                                        \
    __typeof__(a) ml_shr_ = ml_sha_;                                          \
    for (int ml_shi_ = 0; ml_shi_ < ML_LANES_(ml_sha_); ++ml_shi_) {          \
        const int ml_shj_ = (int)ml_shm_[ml_shi_] & (2 * ML_LANES_(ml_sha_) - 1); \
        ml_shr_[ml_shi_] = ml_shj_ < ML_LANES_(ml_sha_)                       \
            ? ml_sha_[ml_shj_] : ml_shb_[ml_shj_ - ML_LANES_(ml_sha_)];       \
    }                                                                         \
    ml_shr_; })
#elif ML_HAVE_VECTOR_EXT
#define ML_SHUFFLE(v, m) __builtin_shuffle(v, m)
#define ML_SHUFFLE2(a, b, m) __builtin_shuffle(a, b, m)
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

/* The ISA level the kernels run on this CPU: 4 (x86-64-v4), 3 (x86-64-v3),
 * 1 (the baseline copy or clone) or 0 (one baseline compile, no dispatch). */
static inline int ml_simd_level(void) {
#if defined(ML_DISPATCH_LEVEL)
    return ML_DISPATCH_LEVEL;
#elif defined(ML_DISPATCH_PORTABLE)
    return ml_dispatch_level();
#elif ML_HAVE_CLONES
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
