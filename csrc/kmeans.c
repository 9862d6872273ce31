/* The k-means core (SPEC 0.1): see kmeans.h.  The kernels are written once
 * in kmeans_impl.h and instantiated here for float64 and float32. */
#include "kmeans.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runtime dispatch for the vectorized distance loops: an AVX2 clone and a
 * baseline x86-64 (SSE2) one, chosen at load time by CPU feature (no
 * -march=native).  ("arch=haswell" would test the CPU model, not features.) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__linux__)
#define ML_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ML_CLONES
#endif

#define REAL double
#define SFX f64
#define GEMM_T ml_dgemm_fn
#include "kmeans_impl.h"
#undef REAL
#undef SFX
#undef GEMM_T

#define REAL float
#define SFX f32
#define GEMM_T ml_sgemm_fn
#include "kmeans_impl.h"
#undef REAL
#undef SFX
#undef GEMM_T
