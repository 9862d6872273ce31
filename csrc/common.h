/* Shared definitions for the metriclust C core.
 *
 * C99 + OpenMP, no Python headers. Every kernel returns an int status
 * (ML_OK or a negative ML_ERR_*); sizes are ptrdiff_t because N * p passes
 * 2^31 on real data. Callers (the Cython bridges) validate shapes first. */
#ifndef METRICLUST_COMMON_H
#define METRICLUST_COMMON_H

#include <limits.h>   /* on glibc, defines __GLIBC__ */
#include <stddef.h>
#include <stdint.h>

/* A wheel must run on the oldest glibc its manylinux policy names (2.28).
 * glibc 2.29 gave exp, log and pow new symbol versions (the same results; the
 * old entry points also set errno, which no kernel reads), so a build on a
 * newer system would need 2.29 (.ci/check_dist.py checks this): bind the
 * x86-64 baseline versions instead. */
#if defined(__GLIBC__) && defined(__x86_64__)
__asm__(".symver exp,exp@GLIBC_2.2.5");
__asm__(".symver log,log@GLIBC_2.2.5");
__asm__(".symver pow,pow@GLIBC_2.2.5");
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#define ML_OK 0
#define ML_ERR_ALLOC (-1)     /* malloc failed */
#define ML_ERR_ARG (-2)       /* a size or index out of range */
#define ML_ERR_NUMERIC (-3)   /* non-finite intermediate result */
/* ML_ERR_INTERRUPTED (-4): SIGINT arrived during a long loop (interrupt.h). */
#include "interrupt.h"

#if defined(__GNUC__) || defined(__clang__)
#define ML_RESTRICT __restrict__
#else
#define ML_RESTRICT
#endif

/* BLAS is supplied by the caller (scipy.linalg.cython_blas) as a function
 * pointer, so the C core links against no BLAS of its own and stays testable
 * in isolation. Fortran calling convention. */
typedef void (*ml_dgemm_fn)(char *transa, char *transb, int *m, int *n, int *k,
                            double *alpha, double *a, int *lda, double *b,
                            int *ldb, double *beta, double *c, int *ldc);
typedef void (*ml_sgemm_fn)(char *transa, char *transb, int *m, int *n, int *k,
                            float *alpha, float *a, int *lda, float *b,
                            int *ldb, float *beta, float *c, int *ldc);

/* Number of threads for a parallel region: n_threads <= 0 means "OpenMP's
 * default", which honours OMP_NUM_THREADS and threadpoolctl. A request is
 * capped at ML_MAX_THREADS_PER_PROC threads per processor (and never below
 * OpenMP's default): asking for 100000 threads made libgomp fail to create
 * them and the process crash; results do not depend on the thread count. */
#define ML_MAX_THREADS_PER_PROC 4
static inline int ml_threads(int n_threads) {
#ifdef _OPENMP
    int dflt = omp_get_max_threads();
    if (n_threads <= 0) return dflt;
    int cap = ML_MAX_THREADS_PER_PROC * omp_get_num_procs();
    if (cap < dflt) cap = dflt;
    return n_threads < cap ? n_threads : cap;
#else
    (void)n_threads;
    return 1;
#endif
}

static inline int ml_thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

#endif
