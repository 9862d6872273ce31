/* Crossovers and serial thresholds of the Gram, pair-sum and cluster-sum
 * kernels: one table, each entry with what set it.  (The k-means core keeps
 * its own entries in the table of kmeans.h; the two tables follow the same
 * rules.)  None of these changes a result beyond rounding: a crossover picks
 * between two exact forms of one sum, a serial threshold picks one thread
 * over several (results never depend on the thread count).
 *
 * ML_GRAM_DIRECT_MAX_D: the squared-distance tile (gram.h) works by direct
 *   differences up to this many columns, by the GEMM form above.  Measured on
 *   AVX-512 (Gram, N = 4000, one thread, output buffer reused): direct 140 vs
 *   GEMM 135 ms at d = 8, 169 vs 148 at d = 12, 189 vs 161 at 16; the direct
 *   differences are also the more accurate, so they keep the tie.  The
 *   all-pairs sums of pairwise.c use the same tile and so the same crossover
 *   (they switched at r > 8 before sharing it).
 * ML_PAIRS_DIAG_GEMM_MIN_P: the all-pairs diagonal sums (ml_pairs_diag with
 *   pairs == NULL and no Hessian) use the GEMM form (squared-distance tile,
 *   then W X as a GEMM) from this many features; below, the direct pair
 *   loop.  Measured by benchmarks/bench_sqdist.py --crossover (n = 1000,
 *   direct pair loop against the GEMM form, one column count at a time).
 * ML_PAIRS_GEMM_MIN_WORK: the explicit-pair full-metric kernel projects the
 *   differences D Lt by BLAS when p r is at least this (12 x 12), by a loop
 *   below.  Inherited, not re-measured.
 * ML_PAIRS_SYRK_MIN_P: below this many columns the weighted outer-product
 *   sums are direct loops instead of a dsyrk call.  Inherited, not
 *   re-measured.
 * ML_PAIRS_T_GEMM_MIN_P: the all-pairs kernels form W X by BLAS from this
 *   many columns.  Inherited, not re-measured.
 * ML_MIN_PARALLEL_WORK (flops): below, a pair-sum kernel runs on one thread:
 *   a parallel region per solver iteration costs tens of microseconds on a
 *   quiet machine and ~40 ms on an oversubscribed one (measured: 5e3 pairs,
 *   p = 20: 1.5 ms on one thread, 44 ms on two).  Callers read it to skip
 *   limiting BLAS threads when nothing is parallel.
 * ML_SUM_MIN_PARALLEL (entries n p): below, the cluster sums (sums.c) run on
 *   one thread (measured: a 20000 x 20 sum took 12 ms on two threads and
 *   0.3 ms on one on a loaded 2-core machine). */
#ifndef METRICLUST_THRESHOLDS_H
#define METRICLUST_THRESHOLDS_H

#define ML_GRAM_DIRECT_MAX_D 8
#define ML_PAIRS_DIAG_GEMM_MIN_P 12
#define ML_PAIRS_GEMM_MIN_WORK 144
#define ML_PAIRS_SYRK_MIN_P 12
#define ML_PAIRS_T_GEMM_MIN_P 4
#define ML_MIN_PARALLEL_WORK 3.0e7
#define ML_SUM_MIN_PARALLEL 1000000
#define ML_GMM_PAR_MIN_WORK 2e6

#endif
