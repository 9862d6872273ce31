/* The one k-means core: Lloyd, the sequential (online) update,
 * nearest-center assignment and the k-means++ seeding step.
 *
 * Data layout: X is n x d row-major (C order), centers K x d row-major,
 * optional sample weights w (n, same type as X; NULL means all ones).
 * Labels are int64 on output (int32 inside the iteration loop: half the
 * memory traffic at small d).
 *
 * Determinism: rows are split into chunks of ML_KM_CHUNK rows, and chunks
 * into a number of segments that depends on (n, d, K) only.  Each segment is
 * processed by one thread in row order into its own float64 partial sums;
 * segments are then added in segment order.  The results are therefore
 * bitwise identical for any thread count.
 *
 * Precision: distances are computed in the input type, per-cluster sums and
 * weights are accumulated in float64 for float32 input too (scikit-learn
 * accumulates in the input type), and centers are rounded to the input type
 * once per iteration.  Inertia is computed from the differences x - c (not
 * the expanded form) in float64.
 *
 * Distance paths (`method`): ML_KM_DIRECT is the register-blocked distance
 * tile (no BLAS; loops specialised for d = 1..8; vectorized over points;
 * runtime ISA dispatch from dispatch.h); ML_KM_GEMM forms -2 X C^T per
 * chunk with the caller's BLAS gemm (hold BLAS to one thread around the
 * call); ML_KM_AUTO picks by the table below.  Every function returns ML_OK
 * or a negative ML_ERR_* code. */
#ifndef METRICLUST_KMEANS_H
#define METRICLUST_KMEANS_H
#include "common.h"

#define ML_KM_AUTO 0
#define ML_KM_DIRECT 1
#define ML_KM_GEMM 2
/* Methods that force one no-BLAS kernel (tests and crossover benchmarks):
 * the register tile, the small-d kernel, the centers-across-lanes kernel.
 * A forced kernel that cannot serve (d, K) falls back to the tile. */
#define ML_KM_TILE 3
#define ML_KM_SMALL 4
#define ML_KM_LANES 5
/* The centers-across-lanes kernel for float64 data behind the float32 screen
 * (ml_kmeans_screens), at any (d, K); float32 data: ML_KM_LANES. */
#define ML_KM_SCREEN 6

/* The kernel that serves Lloyd's passes (ml_kmeans_kernel). */
#define ML_KM_KERNEL_TILE 0
#define ML_KM_KERNEL_SMALL 1
#define ML_KM_KERNEL_LANES 2
#define ML_KM_KERNEL_GEMM 3

/* ---------------------------------------------------------------------------
 * The k-means core's crossovers and thresholds: the one table.  Each entry
 * says what set it (benchmarks/bench_kmeans.py --crossover prints the
 * measurements; 2-core AMD EPYC, AVX-512 clone).  None of them changes a result
 * bit except the path choice (the tile fuses multiply-adds, BLAS has its own
 * order: labels can differ only where two centers are within rounding of
 * each other).
 *
 * ML_KM_TILE_MAX_D, ML_KM_TILE_MAX_K: method="auto" uses a no-BLAS kernel
 *   (small-d or centers across lanes) when d <= TILE_MAX_D and
 *   K <= TILE_MAX_K, BLAS otherwise (ml_kmeans_uses_gemm in kmeans.c).
 *   Measured against the tile, which the lanes kernel now matches or beats
 *   (so the crossover is conservative; bench_kmeans.py --crossover, N = 2e5,
 *   2 threads, BLAS time / tile time): float32 1.2-3.5 at every d in {16, 64, 128} and
 *   K in {8, ..., 256} (1.03 at d = 128, K = 256); float64 1.4-3.0 at
 *   d = 16, 0.97-1.7 at d = 64, 0.87-1.3 at d = 128.  Eleventh round, past
 *   the old bounds (d = 128, K = 256), the lanes kernel and the float32
 *   screen against BLAS (--crossover --n N, 2 threads, load 2, BLAS time /
 *   no-BLAS time): N = 2e5, d in {2, 16, 64, 128}, K in {512, 1024}: float64
 *   2.2-3.2, float32 1.18-2.9; N = 5e4, d in {16, 64, 128}, K in {2048,
 *   4096}: float64 1.9-3.3, float32 1.13-1.8; N = 5e4, d in {160, 256,
 *   512}, K in {8, 64, 256, 1024}: float64 2.0-2.5, float32 1.09-2.2 but
 *   1.00 and 0.94 at d = 256, K = 256 and 1024.  Past d = 512 or K = 4096
 *   it was not measured; BLAS, which blocks for the caches, is kept there.
 *   All of the above on Zen 4.  On an Intel Xeon (family 6 model 207,
 *   512-bit lanes; N = 5e4, RESULTS.md, fifteenth and sixteenth rounds):
 *   float64 1.2-2.8 everywhere; float32 even or better at K = 256 up to
 *   d = 256 (since ML_KM_LANES_P64), but BLAS ahead at d >= 128 with
 *   K >= 1024 (0.65-0.88 at K = 1024, 0.55-0.68 at K = 4096).  Not made a
 *   rule: one on the probe (ml_kmeans_wide_lanes) would make the last bits
 *   of a fit depend on a timing, and one for every CPU would cost Zen 4
 *   (1.13-1.8 for no-BLAS at d <= 128, K = 2048-4096).
 * ML_KM_GEMM_ROWWISE_K: GEMM path, below this many centers the distances are
 *   formed row-major (BLAS packs the small C).  Inherited from when BLAS
 *   served every d > 8; not re-measured: the GEMM path now runs below 16
 *   centers only for d > TILE_MAX_D.
 * ML_KM_CHUNK: rows per chunk (one scheduling unit; its rows, 256 KB at
 *   d = 128 in float64, stay in L2 while the chunk is assigned and summed).  Changing it changes the segment
 *   boundaries and so the last bits of the sums.
 * ML_KM_PAR_MIN_WORK (n K (d + 1)), ML_KM_PAR_MIN_ROWS: below these a kernel
 *   runs on one thread (starting a parallel region and its barrier costs
 *   more than it saves on tiny problems, badly so on a loaded machine).
 *   Inherited, not re-measured.
 * ML_KM_COPIES_MAX_STRIDE: per-cluster sums are kept in 4 interleaved copies
 *   (breaking the add-latency chain of consecutive rows in one cluster) when
 *   K (d + 1) <= this many doubles: 4 x 8 KB stays in a 32 KB L1.
 * ML_KM_MAX_SEGMENTS, ML_KM_MAX_SEGMENT_BYTES: the rows are cut into at most
 *   64 segments (enough for dynamic balance over 16+ threads) whose partial
 *   sums take at most 64 MB in all; the cut depends on (n, d, K) only.
 * ML_KM_REDUCE_BLOCK, ML_KM_PP_BLOCK: rows per block of the fixed-order
 *   inertia and k-means++ reductions (any fixed value gives thread
 *   invariance; thousands of rows amortize the per-block partial and keep the
 *   partials small).  Changing one changes the last bits of its sums.
 * ML_KM_PRUNE_MIN_K, ML_KM_PRUNE_MIN_D: algorithm="auto" prunes with bounds
 *   (Hamerly) when K >= PRUNE_MIN_K and d >= PRUNE_MIN_D
 *   (ml_kmeans_prefers_pruning in kmeans.c).  Measured (N = 2e5, float32,
 *   20 iterations, CPU time of lloyd / pruned): 256 blobs, d = 16: 1.68;
 *   128 blobs, d = 16: 1.20; uniform data, d = 16: 0.93 at K = 256, 0.78 at
 *   K = 128; every case with d = 2 or K <= 64: 0.17-1.0 (the bounds' upkeep,
 *   a square root or two per row and a gather, costs more than the few
 *   distances it saves).  Fourth round, d = 16-64 and K = 8-64
 *   (bench_kmeans.py --pruning --d 16 32 64 --K 8 16 32 64, N = 2e5,
 *   float32, 20 iterations, 2 threads, load 15, lloyd / pruned, same labels
 *   and n_iter): uniform data 0.32-0.55 (0.51 at K = 64 for d = 16 and 64);
 *   K Gaussian blobs 0.38-0.78, break-even only at K = 64 for d = 32 (1.03)
 *   and d = 64 (1.01).  The pruned pass runs the tile (it needs the second
 *   best score), slower than the lanes and small-d kernels, and on this data
 *   few rows are settled by the bounds: no entry moves, pruning stays off
 *   below K = 256.  Eleventh round, after the running sums and with the
 *   no-BLAS kernels up to K = 4096 (--pruning --d 16 64 --K 128 ... 1024,
 *   same setup, load 2): uniform data 0.68-0.86 at every K; blobs 1.28 (d =
 *   16) and 1.54 (d = 64) at K = 128, 1.29-1.98 at K = 256-1024.  Pruning
 *   stays a bet on clustered data from K = 256 on; not moved.  Twelfth
 *   round, with ML_KM_PRUNE_MAX_OPEN (same setup, d = 16 and 64, K = 64,
 *   128, 256, 1024, two runs alternating with main's wheel, load 1.5-1.9):
 *   uniform data 0.85-1.14 (main 0.48-0.76), blobs 0.96-2.01 (main
 *   0.99-2.26, the same within the runs' spread).  Pruning from K = 128
 *   would gain 1.33-1.65 on the blobs there and cost up to 15% (0.85) on
 *   uniform data: not moved.  Thirteenth round, the pruned passes on the
 *   lanes kernel's form with second-best scores, the bounds' distances in
 *   four partial sums, and the probe (ML_KM_PRUNE_PROBE_STRIDE) (same
 *   setup, float32 and float64, two runs each alternating with main's
 *   wheel, load 1.4-2.1): float32 blobs 1.17-2.64 (main 0.85-2.05), at
 *   K = 128 2.02-2.46 (main 1.34-1.58); float64 blobs 1.01-1.65 (main
 *   0.88-1.37), at K = 128 1.23-1.48; uniform data 0.82-1.17 in both
 *   dtypes (main 0.79-1.06), at K = 128 0.83-1.08.  Moved to K = 128: up
 *   to 2.5x on clustered data against at most the runs' noise, about 10%,
 *   on unclustered data.  K = 64 would gain 1.0-1.9 on the blobs for the
 *   same cost: not moved.  Eighteenth round, the open rows of float64 pruned
 *   passes through the float32 screen (screen_pruned; same setup, d = 16
 *   and 64, K = 128, 256, 1024, one run each, load 1.3-1.8, main's wheel
 *   / this tree): float64 blobs 1.01-1.30 / 1.32-1.76, uniform data
 *   0.81-0.98 / 0.94-1.10; float32 unchanged.  Not moved.
 * ML_KM_PRUNE_MAX_OPEN: a pruned fit whose bounds leave more than this share
 *   of the rows open at a pass after the first drops them and runs unpruned
 *   passes (the lanes kernel; the float32 screen for float64 data) for the
 *   rest of the fit: the same labels, cheaper passes.  Twelfth round,
 *   rows left open per pass, counted in the C core (N = 2e5, float32, the
 *   --pruning data and inits, d = 16 and 64, K = 64, 256, 1024): uniform
 *   data 0.996-1.000 at the second pass, 0.84-1.00 at the third, still
 *   0.33-0.62 at the fortieth; the blobs 0.68-0.73 at the second pass,
 *   0.49-0.57 at the third, below 0.10 for good after 5-21.  0.85 parts the
 *   two at the second pass with a margin on both sides.
 * ML_KM_PRUNE_PROBE_STRIDE: before each pruned pass after the first, the
 *   bounds are tried on every this-many-th row (bounds_probe, nothing
 *   written); if more than ML_KM_PRUNE_MAX_OPEN of those would be open, the
 *   fit drops its bounds before the pass instead of after it (on uniform
 *   data: the second pass runs unpruned).  At 16 the probe reads 1/16 of
 *   the rows once, a few cycles per coordinate: far below the pass it
 *   decides on (K products a coordinate), and at N = 2e5 its estimate
 *   (12500 rows) is within 0.01 of the share.
 * ML_KM_SMALL_MAX_D, ML_KM_SMALL_MAX_K, ML_KM_SMALL_MAX_K_AT_MAX_D: Lloyd's
 *   passes use the small-d kernel (every center read as broadcasts, no
 *   padding, several point vectors in flight, row-packed sums) for
 *   d <= SMALL_MAX_D and K <= SMALL_MAX_K, at d = SMALL_MAX_D only up to
 *   K = SMALL_MAX_K_AT_MAX_D; the lanes kernel otherwise (the tile before
 *   the third round: the measurements below are against the tile).  Labels
 *   are the same bits either way.  ML_KM_SMALL_KERNEL_D: the largest d the
 *   small-d kernel is compiled for (method="small" forces it up to there).  Measured (C harness, N = 1e6 uniform, float64, 1 thread,
 *   CPU ms per iteration, tile / small kernel): d = 2: 1.58 (K = 8), 1.61
 *   (32), 1.51 (64), 1.03 (128); d = 3, K = 64: 1.34; d = 4: 1.18 (32),
 *   1.25 (64); d = 5: 1.60 (8), 1.27 (32); d = 6, K = 16: 1.28; d = 8: 1.22
 *   (8), 1.03 (16), 0.97 (32), 0.91 (64), 1.01 (128); float32 d = 8,
 *   K = 32: 1.05.
 *   Fourth round (at d = 8 the rows are now transposed in registers, see
 *   small_transpose in kmeans_impl.h; C harness, N = 4e5, 1 thread, load
 *   21, small / lanes): d = 8: 1.00 (K = 8, f64), 0.70 (8, f32), 1.11 (16,
 *   f64), 0.86 (16, f32), 1.04 (32, f64), 1.03 (32, f32), 1.15 (64, f64),
 *   1.02 (64, f32): the entries above stand.
 *   Fifth round, with ML_KM_SMALL_CENTER_UNROLL (C harness, N = 16384, 1
 *   thread, 100 repeats x 3 interleaved rounds, 10:30 UTC, load 9, CPU
 *   time of the lanes kernel / the small-d kernel): d = 8: 1.02 (K = 16,
 *   f64), 1.39 (16, f32), 1.27 (24, f64), 1.40 (24, f32), 1.04 (32, f64),
 *   1.17 (32, f32), 0.99 (64, f64), 1.14 (64, f32); d = 7, K = 32, f64:
 *   1.09; d = 6, K = 64, f32: 1.17.  So d = 8 now takes the small-d kernel
 *   up to K = 64 like the other d (SMALL_MAX_K_AT_MAX_D = 64, was 16; f64
 *   K = 64 is a tie).
 * ML_KM_SMALL_WIDE_MAX_K, ML_KM_SMALL_WIDE_MIN_D_F64 / _F32: where the lanes
 *   kernels run 512-bit vectors (dispatch.h, ml_wide_vectors: CPUs with two
 *   full-width FMA ports), the small-d kernel serves K <= SMALL_WIDE_MAX_K
 *   only from d = MIN_D (float64: 3, float32: 5); the lanes kernel the
 *   larger K.  Fourteenth round, Intel Xeon family 6 model 207 (this 2-core
 *   machine), C harness, N = 1e6, 1 thread, CPU ms per iteration, medians
 *   of 3, small / lanes (zmm): float64: d = 2: 0.36-0.59 (K = 16-64);
 *   d = 3: 0.92 (16), 0.95 (24), 1.34 (32), 1.40 (48), 1.43 (64); d = 4-8:
 *   0.92-1.04 (16), 1.04-1.16 (24), 1.34-1.53 (32), 1.11-1.31 (48),
 *   1.58-1.81 (64).  float32: d = 2, 3: 0.68-1.38, no pattern; d = 4: 0.84-
 *   0.95 (16-32), 1.10 (48), 1.17 (64); d = 5-8: 0.83-0.99 (16, 24), 1.07-
 *   1.14 (32), 1.13-1.27 (48), 1.34-1.56 (64).  Labels and center bits are
 *   the same either way.
 * ML_KM_SMALL_EXTRA_D, ML_KM_SMALL_MAX_K_AT_EXTRA_D,
 * ML_KM_SMALL_EXTRA_ITEMSIZE: the small-d kernel is also compiled for
 *   d = EXTRA_D (one point vector per step: its 16 coordinate vectors fill
 *   half of AVX-512's registers) and serves it up to K = MAX_K_AT_EXTRA_D
 *   for values of EXTRA_ITEMSIZE bytes (float32), where the lanes kernel
 *   spends about half its time reducing its 8 lanes per point.  Measured (C
 *   harness, 1 thread, small / lanes, labels identical): N = 4e5, load 16:
 *   d = 16: 0.84 (K = 8, f32), 1.00 (8, f64), 0.89 (4, f64), 0.99 (16,
 *   f32), 1.16 (16, f64), 0.90 (32, f32); N = 16384 (the rows in L2, 30
 *   repeats, load 16): 0.89 (K = 8, f32), 1.14 (8, f64), 1.08 (4, f64).
 *   float64 gains nothing (its K = 8 lanes kernel reduces 4 lanes per
 *   point).  Other d in 9..15 are not compiled (not measured).  Sixth
 *   round: the lanes kernel's one-vector form (ML_KM_LANES1_P32 below) is
 *   faster than this instance at d = 16, K <= 8, float32 (C harness, 1
 *   thread, N = 16384, 12:57 UTC, load 3, small / lanes: 1.16 at K = 8,
 *   same labels and center bits), so MAX_K_AT_EXTRA_D is 0: the instance
 *   serves only method="small".
 * ML_KM_SMALL_CENTER_UNROLL(d), ML_KM_SMALL_MAX_UNROLL: the small-d kernel
 *   scores this many centers at once (small_centers in kmeans_impl.h: their
 *   multiply-add chains interleaved, the same scores and the same order of
 *   comparisons, so the labels do not change).  Measured (C harness
 *   benchmarks/harness_kmeans.c, -O3, 1 thread, N = 16384 so the rows stay
 *   in L2, 100 repeats x 3 interleaved rounds, 10:24 UTC, load 9, CPU time
 *   with 1 center (in the scores-first order, since replaced; see below)
 *   / with 2 / with 4; labels and center bits identical):
 *   d = 1, K = 8, f64: 1.06 / 1.03; d = 2: 0.91 / 0.94; d = 3: 1.00 /
 *   0.97 (f64), 1.40 / 1.37 (f32); d = 4: 0.97 / 0.93; d = 5: 0.99 /
 *   0.94; d = 6: 0.90 / 0.90; d = 7, f32: 0.99 / 1.00; d = 8: 1.03 / 1.06
 *   (K = 8, f64), 1.01 / 1.13 (8, f32), 1.04 / 1.17 (16, f64); d = 16,
 *   K = 8, f32: 1.05 / 1.03.  At d = 8 a center's chain is 8 dependent
 *   multiply-adds (32 cycles of latency) and two point vectors do not fill
 *   the two FMA pipes; where the compare-and-select bookkeeping, not the
 *   chain, is the limit (d <= 6) the unrolled form only adds pressure on
 *   the registers.  These ratios are within this code.  Against main's
 *   single-function kernel (same harness, 11:15 UTC, load 1.8-2.2, rows
 *   in L2 / N = 1e6): d = 8: 1.10 / 1.05 (K = 8, f64), 1.04 / 1.05 (8, f32),
 *   1.04 (32, f32, N = 1e6); d = 1: 1.05; d = 2: 0.99 / 0.99; d = 3: 0.98 /
 *   1.03 (f64), 0.95 / 0.92 (f32, not resolved); d = 5: 1.00; d = 16, K = 8,
 *   f32: 1.02.  With one center the chain-then-compare order of main's
 *   kernel is kept (the scores-first order cost 3-9% at d = 2 and 3), and
 *   d = 3 stays at one center (two centers of four point vectors spill in
 *   float64).
 * ML_KM_SMALL_PREFETCH_BYTES: the small-d kernel asks for the rows this
 *   many bytes past the step it scores (small_prefetch in kmeans_impl.h;
 *   0: none).  Sixth round (perf, C harness, main's code, d = 8, K = 8,
 *   float64, 1 thread): with N = 1e6 39% of the kernel's samples sat in the
 *   row loads and transposes, 18% with the rows in L2 (N = 16384): the
 *   hardware prefetcher alone left the loads waiting.  Measured (C harness
 *   -O3, 1 thread, N = 1e6, best of 5 x 3 interleaved rounds, 12:58 UTC,
 *   load 2.3-2.9, main's time / this code's with 0 / 2048 / 4096, all
 *   with the new sums of accum_packed_rows; labels and center bits
 *   identical): d = 8, K = 8: 0.98 / 1.14 / 1.11 (f64), 1.05 / 1.07 /
 *   1.05 (f32); d = 8, K = 32, f64: 1.01 / 1.04 / 1.03; d = 2: 1.16 /
 *   1.19 / 1.16; d = 3: 1.13 / 1.12 / 1.14 (f64); rows in L2: 1.01-1.07
 *   either way.  Not timed on other CPUs (a prefetch of lines already
 *   cached costs one load-port slot per 64 bytes).
 *   Seventh round, d <= 3, K = 8, float64 (C harness, N = 1e6, 1 thread,
 *   16:02-16:14 UTC, load 2-4, main / variant, labels identical), tried
 *   and not kept: the chunk's sums fused into the small-d kernel (each
 *   step's rows added as the step is labelled, the same additions in the
 *   same order, center bits identical): 0.80-0.88 (d = 1, 2, 3); one step
 *   behind (the previous step's rows while this one is scored): 0.95-1.09,
 *   d = 2 0.95.  The sums' per-cluster K x (d + 1) partials kept in
 *   registers with masked adds (a new summation order) were not built:
 *   they add K (d + 2) vector operations per point vector to a kernel
 *   whose own cost is about K x 5 (two multiply-adds, a compare, two
 *   blends), where the row-packed sums cost one read-modify-write per
 *   row on the load/store ports.  Unrolling the center loop by 2: 0.98-1.02.
 *   64-byte vectors (ML_KM_VECTOR_BYTES = 64 in a copy of the tree, so
 *   8 float64 points per vector on the AVX-512 clone): d = 1 1.25, d = 2
 *   1.10, d = 3 1.01; 2 threads (wall, PASSIVE) d = 2 1.09, d = 3 1.17
 *   (build flags not recorded); made in the next item
 *   (ML_KM_SMALL_V4_WIDE), where -O3 gives much less.
 * ML_KM_SMALL_V4_WIDE(d, itemsize): where the small-d kernel runs its
 *   64-byte instance (zmm: 8 float64 or 16 float32 points per vector;
 *   kmeans_small_impl.h compiled a second time for x86-64-v4 only, picked
 *   by small_for on AVX-512 CPUs) instead of the 32-byte clones.  The same
 *   operations per lane: labels and center bits identical (C harness grid
 *   d = 1..9, 16, K = 1, 2, 3, 8, 17, 32, 64, both dtypes, N = 20011,
 *   1 and 2 threads, -O2 and -O3).  Seventh round, C harness, N = 1e6,
 *   1 thread, CPU time, 32-byte / 64-byte, medians of 3-5 alternating
 *   rounds, load 1-6 (per-round ratios moved +-10% on unchanged rows):
 *   built -O3 -fPIC as the wheel is (16:56-17:12 UTC): float64 K = 8:
 *   d = 1 1.01-1.05, 2 1.00-1.04, 3 0.97-1.00, 5 1.00-1.02, 6 0.98, 7
 *   1.03-1.09, 8 0.89-1.00; K = 32: d = 1 1.09-1.10, 2 1.01-1.03, 3 1.06,
 *   7 1.14; float32 K = 8: d = 1 0.93-1.07, 2 0.98-1.05, 3 0.82-0.94, 5
 *   0.90-1.35, 8 0.88-0.90; 2 threads (wall, PASSIVE) within +-5% of 1
 *   at d = 1, 2.  So float64 at d <= 2 only.  Built -O2 (the harness's
 *   build line), where GCC leaves the point-vector loop rolled and the
 *   points and minima in memory, the 64-byte form gained 1.07-1.17 at
 *   d = 1..3 and up to 1.29 at K = 32: the earlier figures (above) match
 *   this -O2 build, not the wheel.  Not timed on other CPUs.  Eighth
 *   round (d2f8): the instance keeps its running labels in int32 lanes
 *   (a ymm register per zmm of scores, blended under the compare's mask
 *   register; kmeans_small_impl.h, small_pick, GCC only), same labels and
 *   center bits (C harness grid, 560 cases, 1 and 2 threads): C harness
 *   -O3 -fPIC, N = 1e6, 1 thread, main / this, 19:29 UTC, load 3.7-5.4,
 *   medians of 7: float64 K = 8 d = 1 1.08, d = 2 1.06.  With it, all of
 *   d = 3..8 on the 64-byte instance (float64; 18:56 UTC, load 4-5, medians
 *   of 6-10): d = 3 1.00 (K = 8), 1.05-1.07 (K = 32); d = 4 0.93; d = 5
 *   1.05; d = 6 1.08; d = 7 1.06-1.13; d = 8 1.00 (K = 8), 1.03-1.04
 *   (K = 32): not taken (d = 8 is not helped; the others are within the
 *   run-to-run spread or lose).
 * ML_KM_SMALL_WIDE_D, ML_KM_SMALL_STEP_VECTORS: the small-d kernel keeps
 *   4 point vectors in flight (4 independent compare/select chains, which
 *   hide each other's latency) while their 4 d coordinates fit the 16
 *   registers of AVX2 with the running minima, i.e. for d <= SMALL_WIDE_D;
 *   2 up to SMALL_KERNEL_D, 1 at EXTRA_D.  Set by the register count, not
 *   timed.
 * The centers-across-lanes kernel (no entry of its own): Lloyd's passes and
 *   assignments use it (centers packed d x W per block, x broadcast from the
 *   row-major X: no transpose, no packing of X, no BLAS) wherever the small-d
 *   kernel and BLAS do not serve (ml_kmeans_kernel in kmeans.c); the tile
 *   now serves only the pruned passes
 *   (which need the second-best score) and method="tile".  Labels are the
 *   same bits either way (same scores, term for term).  Measured (C harness
 *   benchmarks/harness_kmeans.c, built -O3 like the wheel, 1 thread, N = 1e5
 *   uniform, CPU ms per iteration, tile / lanes; load 15-23): d = 16: 1.21
 *   (K = 8, f32), 1.52 (8, f64), 1.28 (32, f32), 1.10 (64, f64), 1.13 (256,
 *   f32); d = 12, K = 16, f32: 1.05; d = 32, K = 16, f64: 1.48; d = 64: 1.23
 *   (32, f64), 1.39 (64, f32); d = 128: 0.96 (32, f32), 1.08 (128, f64),
 *   0.97 (256, f32).  Against the small-d kernel (N = 4e5, small / lanes):
 *   d = 2, K = 32: 0.62; d = 3: 0.57 (K = 8), 0.73 (64); d = 5, K = 8, f32:
 *   0.63; d = 8: 1.11 (8, f64), 0.70 (8, f32), 1.10 (16, f64), 1.12 (32,
 *   f64), 0.96 (32, f32): the small-d kernel keeps d <= 8 (its table above
 *   is unchanged); at d = 8 and K > 16 the lanes kernel takes the tile's
 *   place.  Seventh round: where the centers are one block of Q vectors
 *   (K <= W: float32 K = 9-32 and float64 K = 5-16 with 32-byte vectors;
 *   the x86 instances: SSE, and AVX on the v3 and v4 clones)
 *   a point's label is the lowest index whose score equals the smallest
 *   (cv_first_min in kmeans_cv_impl.h: minps/minpd, then movmskps and the
 *   lowest set bit; the same labels wherever no score is NaN) instead of
 *   each lane's strict-< selects and two lane reductions.  perf (main's
 *   code, d = 16, K = 32, float32, N = 1e6, 1 thread): the multiply-add
 *   loop ran at its bound (64 per row on 2 pipes) and the per-point
 *   bookkeeping was a third of the kernel's samples.  Measured (C harness,
 *   -O3, 1 thread, 3-5 alternating rounds, main / this, medians, labels and
 *   center bits identical): d = 16, K = 32, float32: 1.09 (N = 1e6, 16:08
 *   UTC, load 5; 2 threads, OMP_WAIT_POLICY=PASSIVE, CPU time: 1.15);
 *   N = 2e5, 16:09 UTC, load 4.5-5: d = 16: 1.14 (K = 16, f32), 1.07 (16,
 *   f64); d = 20, K = 12, f32: 1.13; d = 12, K = 24, f32: 1.12; d = 32,
 *   K = 32, f32: 1.06; d = 64, K = 32, f32: 1.07; d = 130, K = 17, f32:
 *   1.00; rows with several blocks or the one-vector form (unchanged
 *   code): 0.96-1.01; AVX2 level (-march=x86-64-v3 -DML_DISPATCH_LEVEL=3,
 *   16:46 UTC): 1.13 (d = 16, K = 32, f32, N = 1e6), 1.13 (16, 16, f64,
 *   N = 2e5).  Fusing the sums into this form (as cv_body1 does)
 *   measured 1.06 with the rows in L2 but 0.92 at N = 1e6 (0.99 with a
 *   software prefetch 16 steps ahead): not kept.
 * ML_KM_LANES_P32(Q), ML_KM_LANES_P16(Q): points per step of that kernel
 *   for Q center vectors per block (Q = 1, 2, 4: the fewest that hold K
 *   centers, else 4 and several blocks), with 32 vector registers (AVX-512)
 *   and with 16 (AVX2, SSE2): P Q accumulators, Q center vectors and P
 *   running minima and indices fill the register file.  Set by the register
 *   count.
 * ML_KM_LANES_P64(Q, itemsize): the same for the 64-byte instances (CPUs
 *   with two full-rate 512-bit FMA ports: ml_kmeans_wide_lanes): float32
 *   with Q = 4 takes 6 points a step, 24 accumulators, so that each center
 *   row loaded serves 6 multiply-adds instead of 4.  Measured on an Intel
 *   Xeon (family 6 model 207; C harness, method 5, 1 thread, 5 rounds
 *   alternating, 2026-11-27 18:50 UTC, labels and center bits identical),
 *   P = 4 / P = 6 ms per iteration, medians: d = 128, K = 256: 1.15 (N =
 *   5e4); d = 256, K = 256: 1.13; d = 16, K = 256: 1.09; d = 16, K = 64:
 *   1.02; d = 32, K = 128: 1.03; d = 64, K = 64: 1.02 (P = 5: 1.01-1.13).
 *   Q = 2 with P = 8 or 10 (float32 d = 16 and 64, K = 32): 0.88-1.03,
 *   not kept.  float64 (Q = 4 at K > 16) is left at 4: P = 6 read 0.92
 *   (d = 16, K = 256), 0.97 (16, 64), 0.92 (20, 128), 1.03 (64, 64), 1.21
 *   (64, 256; 5 rounds, 20:05 UTC).  Lloyd's float64 passes at d >= 32
 *   take the screen (ML_KM_SCREEN_P64) instead; a P that follows d would
 *   need a second instance.
 * ML_KM_LANES1_P32, ML_KM_LANES1_P16: points per step of that kernel's
 *   one-vector form (K <= the lanes of one vector: cv_body1 in
 *   kmeans_cv_impl.h), whose labels come from the scores of a vector's
 *   width of points at once (transposed, then compared center by center)
 *   instead of two lane reductions per point; a multiple of the vector
 *   width.  Measured (C harness, 1 thread, N = 16384, 12:57-13:01 UTC, load
 *   2-5, main's lanes kernel / this form, labels and center bits
 *   identical): float32 K = 8: 1.90 (d = 16), 1.45 (12), 1.42 (20), 1.18
 *   (64); d = 16, K = 5, f32: 1.42; d = 16, K = 4, f64: 1.18; N = 1e6, d =
 *   16, K = 8, f32: 1.34.  16 points per step on AVX-512 against 8: 0.93
 *   (d = 16, K = 4, f64), 0.94 (64, 8, f32), 0.92 (N = 1e6, d = 16, K = 8,
 *   f32), 1.00 elsewhere: 8.  The same form adds the rows to the sums as
 *   it labels them, one step behind (the per-cluster sums' additions then
 *   overlap the next step's multiply-adds and the rows are read from memory
 *   once): C harness, 1 thread, 13:31 UTC, load 5, 3 rounds, main / this
 *   form with the sums as a second pass / with them fused: N = 1e6: d = 16,
 *   K = 8, f32: 1.13 / 1.27 (2 threads, CPU time: 1.10 / 1.31); d = 12,
 *   K = 8, f32: 1.36 / 1.50; d = 16, K = 4, f64: 1.05 / 1.19.  With the
 *   rows in L2 (N = 16384) the fused form is 6% slower than the second
 *   pass (d = 16 and 12, K = 8, f32), but the passes that matter stream
 *   their rows from memory.  Labels and center bits identical throughout.
 *   Eighth round (x86, GCC): the running minimum of cv_batch_argmin is
 *   minps/minpd (the same value as the strict-< select, which GCC made
 *   vpblendvb, an instruction that shares Zen 4's two FMA pipes).  C
 *   harness, 1 thread, main / this, labels and center bits identical,
 *   d = 16, K = 8, f32: rows in L2 (N = 16384) 1.06-1.08 (d = 12, 20 and
 *   K = 5 alike; AVX2 level 1.04); N = 1e6: 1.03-1.06 (quiet machine,
 *   19:59 UTC: 1.03; 64-byte aligned builds of both 1.02-1.03, 0.95 once
 *   under load).  The classic 8 x 8 transpose (unpcklps, shufps,
 *   vperm2f128) in place of GCC's vpermt2ps was 1.04 faster again in L2
 *   but 0.93-0.99 at N = 1e6: not kept.  16 points per step still lose
 *   against 8 (0.96 in L2, 0.99 at N = 1e6).
 * The lanes kernels' vector width on the AVX-512 level: 64 bytes (zmm)
 *   where the CPU runs 512-bit FMAs at the rate of 256-bit ones and the K
 *   centers fill more than one 32-byte vector, else 32 (ymm, with AVX-512's
 *   32 registers); a timing probe decides once per process (dispatch.h,
 *   ml_wide_vectors; kmeans_impl.h, lanes_isa, with the small-K numbers).
 *   Both give the same bits (one center per lane, its terms in the same
 *   order).  Zen 4 splits a zmm operation into two 256-bit halves: zmm /
 *   ymm time there, C harness, 1 thread: d = 16: 1.12 (K = 8, f64), 1.31
 *   (32, f32), 1.15 (64, f32), 1.00 (64, f64), 1.01 (256, f32); d = 32,
 *   K = 16, f64: 1.13; d = 64: 0.91 (32, f64), 1.01 (64, f32); d = 128,
 *   K = 32, f32: 0.97 (eleventh round: 1.02-1.18 at N = 1e6).  Intel Xeon,
 *   family 6 model 207, two 512-bit FMA ports (fourteenth round,
 *   bench_lanes_width.py, N = 1e6 (K = 256: 2e5), medians of 3): this
 *   2-core machine, 1 / 2 threads: d = 64, K = 64, f32: 0.65 / 0.64;
 *   d = 64, K = 32, f64: 0.97 / 0.80; d = 16, K = 256, f32: 0.51 / 0.65;
 *   d = 16, K = 32, f32: 0.94 / 0.86; d = 128, K = 32, f32: 0.83 / 0.62;
 *   the lent 16-core one, 1 / 4 / 16 threads: 0.53 / 0.65 / 0.55, 0.88 /
 *   1.03 / 0.94, 0.67 / 0.57 / 0.62, 0.89 / 0.83 / 0.74, 0.70 / 1.10 /
 *   0.84.  The probe's zmm / ymm time (as merged): 0.90-1.25 on the
 *   16-core Xeon (20 processes), 1.02-1.17 here; Zen 4 not checked.
 * ML_KM_TILE_CENTERS, ML_KM_VECTOR_BYTES: the tile is 2 vectors of points
 *   (32 bytes each: one ymm register on the AVX2 and AVX-512 clones) by 6
 *   centers: 12 accumulators, 2 point vectors and a broadcast fill the 16
 *   registers of AVX2.  Set by the register count (wider zmm vectors gain
 *   little on this 2-core AMD EPYC, whose AVX-512 unit is 256 bits wide).
 * ML_KM_COPIES: per-cluster sums are kept in this many interleaved copies
 *   (row b goes to copy b mod 4) when they fit in L1
 *   (ML_KM_COPIES_MAX_STRIDE); a row then never waits on the previous row's
 *   additions to the same cluster (floating-point add latency 3-4 cycles).
 *   Changing it changes the last bits of the sums.  Inherited.
 * ML_KM_BOUND_SLACK: relative margin by which the pruning bounds are widened
 *   for their own float64 rounding (a few ulps would do; 1e-12 is far above
 *   and far below any gap the bounds can exploit).  Not timed: it only has
 *   to be safe.
 * ML_KM_SCREEN_MIN_D, ML_KM_SCREEN_MIN_K, ML_KM_SCREEN_MIN_K_LOW_D: float64
 *   data whose passes the lanes kernel serves (ml_kmeans_kernel) are
 *   screened in float32 when d >= SCREEN_MIN_D and K >= SCREEN_MIN_K, or
 *   when 16 <= d < SCREEN_MIN_D and K >= SCREEN_MIN_K_LOW_D
 *   (ml_kmeans_screens in kmeans.c;
 *   method="screen" forces it at any d and K): each chunk's rows are rounded
 *   to float32 and scored against float32 copies of the packed centers by
 *   the float32 lanes kernel keeping the best and second-best score; a
 *   row's float32 label is kept where the gap between the two exceeds twice
 *   a proven bound on the difference between its float32 and float64
 *   scores, and every other row is re-scored by the float64 lanes kernel
 *   (screen_rows in kmeans_impl.h, with the bound's derivation).  The labels
 *   are the float64 kernel's bit for bit; only the time changes.
 *   Measured (C harness benchmarks/harness_kmeans.c, -O3, N = 2e5 uniform,
 *   1 thread, 13:19 UTC, load 6-9 (other sessions' nice-19 builds), main's
 *   kernel / the screened one, 2 alternating rounds, labels and center
 *   bits identical): d = 16: 0.72 (K = 8), 1.00 (32), 1.22 (64); d = 32:
 *   1.41 (8), 1.15 (32), 1.55 (64); d = 64: 1.6-1.9 (8), 2.0 (32), 2.0
 *   (64); d = 128: 1.4 (8), 2.0 (32), 1.85 (64).  Below d = 32 the
 *   per-row work the screen adds (rounding the row, its norm, the best and
 *   second best across the lanes, the bound) outweighs the halved
 *   multiply-adds unless K is large (13:49 UTC, load 5.5-6.3, after the
 *   settled test was vectorized: d = 16: 0.76-0.82 (K = 8), 1.08-1.14 (32),
 *   1.28-1.31 (64); d = 32: 1.46-1.62, 1.29-1.32, 1.58-1.60; d = 64:
 *   1.49-1.75, 2.1-2.12, 2.02-2.05; d = 128: 1.30-1.33, 2.0-2.04,
 *   1.91-1.95: MIN_K_LOW_D = 32); with K < 8 the float64 kernel fills
 *   no more vectors than the float32 one (not screened, not measured).
 *   Rows re-scored: 0.2% (uniform, d = 64, K = 32).
 * ML_KM_SCREEN_P32(Q): points per step of the screen's kernel on the
 *   AVX-512 level, at either of the lanes kernel's widths (measured on Zen
 *   4, at 32 bytes; "zmm" below: 64 bytes there).  Same harness, d = 64, K = 32 / d = 128, K = 64 / d = 32,
 *   K = 64, ms per iteration: P = 4 (Q = 4): 12.2-13.6 / 45.7-48.1 /
 *   11.1-11.3; P = 5: 14.3-14.7 / 46.2-46.5 / 12.0-13.8; P = 6: 16.5-19.2 /
 *   45.2-48.5 / 11.8-11.9; zmm: 17.0 / 44.1-47.2 / 12.1-12.3.  The second
 *   best and its lanes need registers P = 4 leaves free.
 * ML_KM_SCREEN_P64(Q): its 64-byte instances (Intel, as ML_KM_LANES_P64):
 *   6 points a step with Q = 4.  Same harness, method 6 (float64 data), 5
 *   rounds, P = 4 / P = 6: d = 64, K = 64: 1.23; d = 128, K = 256: 1.29;
 *   d = 32, K = 128: 1.02; Q = 2 with P = 8 or 10 (d = 64, K = 32): 0.91-1.04,
 *   not kept.
 *   KM_CV_PREFETCH (kmeans_impl.h): the screen's kernel reads its float64
 *   rows itself and prefetches those this many steps ahead, a cache line
 *   per coordinate of the first block (the rows' first touch otherwise
 *   stalled the rounding: 16-27% of its samples).  d = 64, K = 32: no
 *   prefetch 15.1-15.3 ms, 1 step 15.6, 2 steps 13.0-14.5, 3 13.2-14.0,
 *   4 14.3-15.6, 8 14.4-15.9; into L2 only (locality 1) 4 or 8 steps
 *   ahead: 15.7-17.0.  Eighth round (C harness, N = 1e6, d = 64, K = 32,
 *   1 thread, ms per iteration, labels and center bits identical
 *   throughout): the prefetches spread evenly over the block's
 *   coordinates (one every d / npf) instead of one per coordinate for the
 *   first npf: 61.4-61.8 -> 60.7-61.0; the rows rounded into one step's
 *   P x d buffer instead of the chunk's m x d: 63.9-64.9 -> 61.2-62.2;
 *   the best / second-best updates and lane reduction with minps/maxps
 *   (GCC on x86): 59.9-60.3 -> 57.6-58.0.  Tried and not kept: the
 *   float64 sums of the settled rows added inside the kernel while the
 *   rows are in L1 (each copy up to its first open row, the rest after the
 *   re-score, so the center bits stay main's): as a block ahead of each
 *   step's multiply-adds 66-69 against 61.7-62.2 without, spread through
 *   them 70.3-71.1 against 61.1-61.3: the additions are bound by their
 *   stores and by the sums' rows (16.6 KB at this shape) leaving L1 to the
 *   streamed rows, not by reading the rows from L2 (perf: the separate
 *   pass 8.5% of the samples, the folded additions 6.8% in the kernel plus
 *   4.2% for the rows after the first open one).
 * ML_KM_SCREEN_MAX_OPEN, ML_KM_SCREEN_MAX_SKIP: a chunk whose fraction of
 *   re-scored rows exceeds MAX_OPEN (data very far from the origin, 1e8
 *   for data of unit spread, where the float64 scores themselves carry
 *   errors beyond the gaps, or out of float32's range) is taken
 *   by the float64 kernel whole, and that thread then skips the screen for
 *   its next 1, 3, 7, ... chunks (doubling at each failed screen, at most
 *   MAX_SKIP; reset by a chunk that passes), so that data the screen cannot
 *   serve costs about one screened chunk in MAX_SKIP + 1 more than the plain
 *   float64 pass.  Set by the cost model (a screened chunk costs about half
 *   a float64 one, a re-scored row a float64 row), not by a result.
 *   Checked (same harness, every coordinate offset by 1e4 or 1e8, where
 *   98% of the chunks then skipped the screen before it translated the
 *   centers (at 1e8 they still do); screened / plain lanes kernel,
 *   2 rounds, 13:47 UTC, load 5-6): d = 64, K = 32: 0.93-1.00; d = 32,
 *   K = 8: 0.77-1.07; d = 128, K = 64: 0.91-1.05.  Before the screen
 *   translated the centers (ninth round), the bound grew with ||c||^2 and
 *   ||x|| ||c||: at an offset of 10 (d = 64, K = 32) it left 22% of the
 *   screened rows open, most chunks skipped the screen, and the pass took
 *   2.3x as long as at the origin.
 * ML_KM_SCREEN_SHIFT_ROWS: the screen translates the centers by their mean
 *   t always and the rows too (a float64 subtraction per coordinate before
 *   the float32 rounding) when ||t||_2 > SHIFT_ROWS max_k ||c_k - t||_2
 *   (screen_centers in kmeans_impl.h).  Measured (C harness, N = 1e6 (the
 *   re-score fractions: 1e5), d = 64, K = 32, uniform data plus an offset
 *   in every coordinate, 1 thread, 21:50 UTC, load 1.1, labels and center
 *   bits identical; ||t|| / max ||c_k - t|| after 4 iterations: 6, 19, 45,
 *   134 and 390 at offsets 0, 1, 3, 10 and 30): rows re-scored with the
 *   centers translated alone 0.05%, 0.14%, 0.31%, 0.94%, 2.7% (8.8% at
 *   100, 24% at 300, every chunk skips at 1000), with the rows translated
 *   too 0.02% at every offset; ms per iteration, centers alone / rows too:
 *   57.1 / 59.6 (offset 0), 58.0 / 60.5 (3), 59.2 / 61.1 (10), 59.9 / 60.3
 *   (30): the rows' subtraction costs 3-4%, worth it from about offset 30
 *   (ratio 390) on this shape, where a smaller K would cost it more: 256.
 *   With 256 (and the bound's final N): 0.05%, 0.14%, 0.32%, 0.95%, 0.61%
 *   at offsets 0-30, 0.02% at 100 and 1000, 0.19% at 1e4.  Against main
 *   (untranslated screen), 22:19 UTC, load 0.3-1.2: 1.00 (offset 0, 1
 *   thread), 1.04 (2 threads), 2.23-2.30x faster at offset 10, 2.18-2.29x
 *   at 1000.
 * ML_KM_Q16_MIN_D, ML_KM_Q16_MIN_K: float32 data whose passes the lanes
 *   kernel serves are screened in int16 (kmeans_q16.h: exact integer
 *   scores, vpdpwssd, where the CPU has AVX-512 VNNI) when d >= Q16_MIN_D
 *   and K >= Q16_MIN_K (ml_kmeans_screens; method="screen" forces it at
 *   any d and K): the float32 kernel scores only the rows the bound leaves
 *   open (1.9% on centred uniform data, d = 64, K = 64), so the labels and
 *   center bits are the float32 kernel's.  A fit keeps the rows' integers
 *   from its second unpruned pass on (ml_q16_keep: half of X's bytes;
 *   rounding them each pass took 13% of the harness's samples at d = 64,
 *   K = 64; keeping them: 1.18x, 1 thread).  Measured before that (C
 *   harness, N = 2e5 uniform rows centred (offset -0.5), 1 thread, 3
 *   alternating rounds, 2026-11-28 04:48 UTC, load 0.1-1, Intel Xeon
 *   family 6 model 207, main / screened, medians, labels and center bits
 *   identical): d = 32: 1.03 (K = 32), 1.09 (64), 1.24 (256); d = 64: 1.25
 *   (32), 1.16 (64), 1.53 (256); d = 128: 1.37 (32), 1.47 (64); N = 5e4,
 *   K = 64: 1.34 (d = 256), 1.01 (d = 512: the integers get fewer bits as d
 *   grows, 2^(bq + bc) 2 ceil(d / 2) <= 2^30); N = 1e6, d = 64, K = 64:
 *   1.30 (1 thread), 1.23 (2 threads, wall); with the kept rows 1.30 on 2
 *   threads (wall, 5 rounds).  Below the bounds (measured with Q16_MIN_D =
 *   Q16_MIN_K = 16): d = 16: 0.61 (K = 16), 0.95 (32), 0.91 (64), 0.88
 *   (128); d = 32, K = 16: 0.89; d = 64, K = 16: 0.99: the rounding of the
 *   rows, the per-row test and the labels cost more there than the
 *   integer products save.  Zen 4 (VNNI in 256-bit halves) not measured.
 * ML_KM_DELTA_MAX_MOVED: a Lloyd pass on unweighted rows adds to the
 *   running sums only the change its moved rows make (accum_delta), unless
 *   the pass before it moved more than this fraction of the rows (then, and
 *   at the first pass, the sums are taken afresh).
 *   Each moved row costs two row updates against one for a fresh sum, so
 *   past about half the rows the deltas cost more; a third leaves room for
 *   the fused sums of the one-vector lanes kernel, which cost less than an
 *   update (a count, not a measured crossover).  From a random start the
 *   second pass moves about 20% and the first about all.
 *   ML_KM_DELTA_MAX_MOVED_LOW_D: the same for d <= ML_KM_SMALL_KERNEL_D,
 *   where a fresh sum is one to three vector additions a row.  Measured
 *   there: the second pass (about 20% moved) with deltas against fresh
 *   sums, C harness, N = 1e6, K = 8, 1 thread, medians of 5-9 alternated
 *   runs: d = 2 0.82, d = 3 0.85, d = 4 0.73, d = 5 0.81, d = 6 0.86,
 *   d = 8 1.03 (float64), 0.83 (float32); above it d = 16 1.21 (K = 8)
 *   and 0.99 (K = 32), float32.  The next pass moves about half as many
 *   as the last from a random start, hence a bound on the last pass of
 *   twice the crossover (about 10% at low d).  Both at 0: no deltas.
 *   Passes 3-6 with deltas (3-14% moved), C harness, N = 1e6, 1 thread,
 *   fresh / deltas (medians of 5-7 alternated runs, the same labels; before
 *   _LOW_D, when every d had a third): d = 16 float32 K = 8 1.34, K = 32
 *   1.11; d = 8 K = 8 float64 1.19, float32 1.17, K = 32 float64 1.04;
 *   d = 2 1.15, d = 3 1.01 (K = 8, float64); N = 2e5: d = 64 K = 32
 *   float64 1.14, K = 64 float32 1.06, d = 16 K = 256 float32 1.06.
 * ML_KM_DELTA_MAX_RUN: at most this many passes with deltas in a row, then
 *   fresh sums: each delta adds its rounding to the running sums.  Run to
 *   convergence (100-350 passes, blobs, float64), centers of deltas without
 *   this cap were up to 5.6e-15 (relative) from the exact means of their
 *   labels, against 1.7e-15 for fresh sums; with a cap of 16, 1.7e-15.  The
 *   benchmarks' passes 3-10 all take deltas.
 * ML_KM_POLL_ROWS: the online pass polls Ctrl-C every this many rows (a
 *   power of two; microseconds apart at any d).
 * ------------------------------------------------------------------------- */
#define ML_KM_TILE_MAX_D 512
#define ML_KM_TILE_MAX_K 4096
#define ML_KM_GEMM_ROWWISE_K 16
#define ML_KM_CHUNK 256
#define ML_KM_PAR_MIN_WORK 1e6
#define ML_KM_PAR_MIN_ROWS 16384
#define ML_KM_COPIES_MAX_STRIDE 1024
#define ML_KM_MAX_SEGMENTS 64
#define ML_KM_MAX_SEGMENT_BYTES 64e6
#define ML_KM_REDUCE_BLOCK 4096
#define ML_KM_PP_BLOCK 2048
/* k-means++ keeps its T candidates' scores of every row (n T doubles) for the
 * update of the distances to the chosen center where T doubles take at most
 * a row's bytes divided by ML_KM_PP_KEEP_SCORES; elsewhere the update reads
 * X again (ml_kmeans_pp_keeps_scores).  One step, N = 1e6, 2 threads, time
 * reading X twice / keeping the scores (medians of 5, twice): d = 64 float64,
 * T = 5: 1.8; d = 32 float32, T = 5: 1.27; d = 16 float64, T = 7: 1.37;
 * d = 16 float32, T = 5: 1.55; d = 10 float64, T = 5: 1.18; d = 8 float64,
 * T = 5: 1.19; where the scores outweigh the rows, d = 8 float32, T = 5: 1.03,
 * d = 2 float64, T = 5: 0.55.  The workspace lives over a whole seeding: a
 * fresh 40 MB one paid ~20 ms of page faults a step at d = 64. */
#define ML_KM_PP_KEEP_SCORES 1
#define ML_KM_PRUNE_MIN_K 128
#define ML_KM_PRUNE_MIN_D 16
#ifndef ML_KM_PRUNE_MAX_OPEN
#define ML_KM_PRUNE_MAX_OPEN 0.85
#endif
#define ML_KM_PRUNE_PROBE_STRIDE 16
#define ML_KM_SMALL_MAX_D 8
#define ML_KM_SMALL_MAX_K 64
#define ML_KM_SMALL_MAX_K_AT_MAX_D 64
#define ML_KM_SMALL_WIDE_MAX_K 31
#define ML_KM_SMALL_WIDE_MIN_D_F64 3
#define ML_KM_SMALL_WIDE_MIN_D_F32 5
#define ML_KM_SMALL_KERNEL_D 8
#define ML_KM_SMALL_EXTRA_D 16
#define ML_KM_SMALL_MAX_K_AT_EXTRA_D 0
#define ML_KM_SMALL_EXTRA_ITEMSIZE 4
#define ML_KM_SMALL_WIDE_D 4
#define ML_KM_SMALL_STEP_VECTORS(d) \
    ((d) <= ML_KM_SMALL_WIDE_D ? 4 : (d) <= ML_KM_SMALL_KERNEL_D ? 2 : 1)
#define ML_KM_SMALL_MAX_UNROLL 4
#ifndef ML_KM_SMALL_V4_WIDE
#define ML_KM_SMALL_V4_WIDE(d, itemsize) ((d) <= 2 && (itemsize) == 8)
#endif
#ifndef ML_KM_SMALL_PREFETCH_BYTES
#define ML_KM_SMALL_PREFETCH_BYTES 2048
#endif
#ifndef ML_KM_SMALL_CENTER_UNROLL
#define ML_KM_SMALL_CENTER_UNROLL(d) ((d) == 8 ? 4 : (d) == 16 ? 2 : 1)
#endif
#define ML_KM_LANES_P32(Q) ((Q) == 1 ? 8 : (Q) == 2 ? 6 : 4)
#ifndef ML_KM_LANES_P64
#define ML_KM_LANES_P64(Q, itemsize) ((itemsize) == 4 && (Q) == 4 ? 6 : ML_KM_LANES_P32(Q))
#endif
#ifndef ML_KM_SCREEN_P32
#define ML_KM_SCREEN_P32(Q) ML_KM_LANES_P32(Q)
#endif
#ifndef ML_KM_SCREEN_P64
#define ML_KM_SCREEN_P64(Q) ((Q) == 4 ? 6 : ML_KM_SCREEN_P32(Q))
#endif
#define ML_KM_LANES_P16(Q) ((Q) == 1 ? 4 : (Q) == 2 ? 3 : 2)
#ifndef ML_KM_LANES1_P32
#define ML_KM_LANES1_P32 8
#endif
#define ML_KM_LANES1_P16 8
#define ML_KM_LANES1_P64(itemsize) \
    (64 / (int)(itemsize) > ML_KM_LANES1_P32 ? 64 / (int)(itemsize) : ML_KM_LANES1_P32)
#define ML_KM_TILE_CENTERS 6
#define ML_KM_VECTOR_BYTES 32
#define ML_KM_COPIES 4
#define ML_KM_BOUND_SLACK 1e-12
#define ML_KM_POLL_ROWS 4096
#ifndef ML_KM_DELTA_MAX_MOVED
#define ML_KM_DELTA_MAX_MOVED (1.0 / 3.0)
#endif
#ifndef ML_KM_DELTA_MAX_MOVED_LOW_D
#define ML_KM_DELTA_MAX_MOVED_LOW_D 0.2
#endif
#ifndef ML_KM_DELTA_MAX_RUN
#define ML_KM_DELTA_MAX_RUN 16
#endif
#define ML_KM_SCREEN_MIN_D 32
#ifndef ML_KM_SCREEN_SHIFT_ROWS
#define ML_KM_SCREEN_SHIFT_ROWS 256.0
#endif
#define ML_KM_SCREEN_MIN_K 8
#define ML_KM_SCREEN_MIN_K_LOW_D 32
#define ML_KM_SCREEN_MAX_OPEN 0.375
#define ML_KM_SCREEN_MAX_SKIP 63
/* float32 data: the int16 screen (kmeans_q16.h) where d >= Q16_MIN_D and
 * K >= Q16_MIN_K (the table above). */
#ifndef ML_KM_Q16_MIN_D
#define ML_KM_Q16_MIN_D 32
#endif
#ifndef ML_KM_Q16_MIN_K
#define ML_KM_Q16_MIN_K 32
#endif

/* The kernel that serves the unpruned assignment of (d, K) under `method`
 * for data of `itemsize` bytes per value (8: float64, 4: float32)
 * (ML_KM_KERNEL_*): BLAS, the small-d kernel, the centers-across-lanes
 * kernel or the tile.  The one place the path is chosen (from the table
 * above).  The pruned pass, which also needs the second best score, uses
 * the tile or BLAS. */
int ml_kmeans_kernel(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm,
                     int itemsize);

/* Whether the assignment of (d, K) calls BLAS under `method` (have_gemm:
 * whether a gemm is supplied).  The one place BLAS is chosen (ml_kmeans_kernel
 * and the pruned pass both ask it). */
int ml_kmeans_uses_gemm(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm);

/* Whether the passes of (d, K) under `method` are screened: float64 data
 * in float32 (see ML_KM_SCREEN_MIN_D), float32 data in int16 where the CPU
 * has AVX-512 VNNI (kmeans_q16.h, ML_KM_Q16_MIN_D); the lanes kernel serves
 * both.  Labels identical, fewer full-precision scores. */
int ml_kmeans_screens(ptrdiff_t d, ptrdiff_t K, int method, int have_gemm,
                      int itemsize);

/* Tests only: the screen of one assignment pass at any (d, K)
 * (ML_KM_SCREEN; float32 data: ML_ERR_ARG where the int16 screen is not
 * available): labels[i] the screen's label of row i (-1 where the centers
 * are out of its range; meaningful where settled), settled[i] 1 where the
 * bound proves it is the full-precision kernel's label, 0 where the row
 * would be re-scored; margin (or NULL) the bound's lower bound on a settled
 * row's squared distance to its second nearest center less that to its
 * nearest, within a relative 2^-50 (the pruned pass's second bound:
 * screen_pruned), -inf where not settled.  One thread. */
int ml_kmeans_screen_probe_f64(const double *X, ptrdiff_t n, ptrdiff_t d,
                               const double *centers, ptrdiff_t K,
                               int64_t *labels, unsigned char *settled,
                               double *margin);
int ml_kmeans_screen_probe_f32(const float *X, ptrdiff_t n, ptrdiff_t d,
                               const float *centers, ptrdiff_t K,
                               int64_t *labels, unsigned char *settled,
                               double *margin);

/* Whether algorithm="auto" should prune (ml_kmeans_hamerly) for (d, K). */
int ml_kmeans_prefers_pruning(ptrdiff_t d, ptrdiff_t K);

/* The ISA clone the kernels run on this CPU (see dispatch.h). */
int ml_kmeans_simd_level(void);

/* Whether the lanes kernels may run 64-byte vectors here: the AVX-512 clone
 * on a CPU whose 512-bit FMAs run at full rate (dispatch.h, ml_wide_vectors).
 * The one test of it: the d <= 8 crossover (ml_kmeans_kernel), the kernels'
 * width (kmeans_impl.h, lanes_isa) and the Python report ask it. */
int ml_kmeans_wide_lanes(void);

/* Batch k-means (Lloyd): iterate assignment + weighted means from `centers`
 * (in: initial centers, out: final centers) until the labels stop changing
 * (strict convergence) or the squared center shift sum_k ||c_k' - c_k||^2 is
 * <= tol (tol is absolute), or max_iter iterations.  Empty clusters are
 * relocated to the points farthest from their centers (largest distance
 * first, ties to the lowest index, never emptying another cluster); a cluster
 * that cannot be refilled keeps its center.  On return: labels of the final
 * centers, their weighted inertia, the number of iterations run and whether
 * the run converged strictly (labels unchanged). */
int ml_kmeans_lloyd_f64(const double *X, const double *w, ptrdiff_t n,
                        ptrdiff_t d, ptrdiff_t K, double *centers,
                        int max_iter, double tol, int64_t *labels,
                        double *inertia, int *n_iter, int *strict,
                        ml_dgemm_fn gemm, int method, int n_threads);
int ml_kmeans_lloyd_f32(const float *X, const float *w, ptrdiff_t n,
                        ptrdiff_t d, ptrdiff_t K, float *centers,
                        int max_iter, double tol, int64_t *labels,
                        double *inertia, int *n_iter, int *strict,
                        ml_sgemm_fn gemm, int method, int n_threads);

/* The same iteration with exact pruning (Hamerly 2010): per row an upper
 * bound on the distance to its center and a lower bound on the distance to
 * the others, moved by the center shifts; a row is reassigned only when the
 * bounds, widened by the rounding of the scores, cannot prove its label.
 * Labels, centers, inertia and n_iter are those of ml_kmeans_lloyd bit for
 * bit; it pays when K is large and the clusters are separated.  A fit whose
 * bounds leave most rows open (ML_KM_PRUNE_MAX_OPEN) drops them and runs
 * unpruned passes from there. */
int ml_kmeans_hamerly_f64(const double *X, const double *w, ptrdiff_t n,
                          ptrdiff_t d, ptrdiff_t K, double *centers,
                          int max_iter, double tol, int64_t *labels,
                          double *inertia, int *n_iter, int *strict,
                          ml_dgemm_fn gemm, int method, int n_threads);
int ml_kmeans_hamerly_f32(const float *X, const float *w, ptrdiff_t n,
                          ptrdiff_t d, ptrdiff_t K, float *centers,
                          int max_iter, double tol, int64_t *labels,
                          double *inertia, int *n_iter, int *strict,
                          ml_sgemm_fn gemm, int method, int n_threads);

/* Online k-means, the sequential form of the lecture notes (4.1): passes
 * over the rows in data order; a row whose nearest center changed joins it,
 * c_k += (w_i / W_k) (x_i - c_k), and leaves its old center, which becomes
 * the mean of its remaining members (W_k: the weight of the members, so the
 * first row to reach a center replaces the initial value).  Stops
 * when a pass changes no label or moves the centers by <= tol (squared,
 * absolute), or after max_iter passes; then labels and inertia are those of
 * the final centers, as for Lloyd.  Sequential by nature (one thread),
 * except for the final assignment. */
int ml_kmeans_online_f64(const double *X, const double *w, ptrdiff_t n,
                         ptrdiff_t d, ptrdiff_t K, double *centers,
                         int max_iter, double tol, int64_t *labels,
                         double *inertia, int *n_iter, int *strict,
                         ml_dgemm_fn gemm, int method, int n_threads);
int ml_kmeans_online_f32(const float *X, const float *w, ptrdiff_t n,
                         ptrdiff_t d, ptrdiff_t K, float *centers,
                         int max_iter, double tol, int64_t *labels,
                         double *inertia, int *n_iter, int *strict,
                         ml_sgemm_fn gemm, int method, int n_threads);

/* Nearest center of every row (ties to the lowest index) and, if dist is not
 * NULL, the squared distance to it computed from x - c (never negative).
 * With shift (d values, or NULL) the rows are X less shift, subtracted in
 * X's type chunk by chunk as the pass reads them (the results of numpy's
 * X - shift, bit for bit, without a shifted copy of X). */
int ml_kmeans_assign_f64(const double *X, const double *shift, ptrdiff_t n,
                         ptrdiff_t d, const double *centers, ptrdiff_t K,
                         int64_t *labels, double *dist, ml_dgemm_fn gemm,
                         int method, int n_threads);
int ml_kmeans_assign_f32(const float *X, const float *shift, ptrdiff_t n,
                         ptrdiff_t d, const float *centers, ptrdiff_t K,
                         int64_t *labels, float *dist, ml_sgemm_fn gemm,
                         int method, int n_threads);

/* One block of a Lloyd iteration, for callers that stream the rows in
 * blocks and reduce the blocks' sums in a fixed order themselves: labels of
 * the n rows (nearest center of `centers`, ties to the lowest index),
 * sums (K x d, out) and wsum (K, out) the weighted per-cluster sums and
 * weights of these rows in float64 (overwritten, not added to), and
 * *inertia their weighted squared distances to their centers (from x - c,
 * float64).  Labels and sums are those of the pass ml_kmeans_lloyd makes,
 * bitwise, and do not depend on n_threads.  labels may be NULL (sums only)
 * and inertia NULL (not computed). */
int ml_kmeans_assign_accumulate_f64(const double *X, const double *w,
                                    ptrdiff_t n, ptrdiff_t d,
                                    const double *centers, ptrdiff_t K,
                                    double *sums, double *wsum,
                                    int64_t *labels, double *inertia,
                                    ml_dgemm_fn gemm, int method,
                                    int n_threads);
int ml_kmeans_assign_accumulate_f32(const float *X, const float *w,
                                    ptrdiff_t n, ptrdiff_t d,
                                    const float *centers, ptrdiff_t K,
                                    double *sums, double *wsum,
                                    int64_t *labels, double *inertia,
                                    ml_sgemm_fn gemm, int method,
                                    int n_threads);

/* One k-means++ step.  closest[i] (float64, in/out) is the squared distance
 * of row i to its nearest chosen center (+inf before the first).  For each of
 * the T candidate rows cand[t], the potential sum_i w_i min(closest_i,
 * ||x_i - x_cand[t]||^2) is computed (fixed-order block reduction); the
 * candidate with the lowest potential (first on ties) is returned in *best
 * (an index into cand), its potential in *pot, and closest is updated.
 * scores: NULL, or a workspace of n T doubles, where the scoring pass keeps
 * the candidates' distances so that the update does not read X again (the
 * same bits either way; ml_kmeans_pp_keeps_scores says where it pays). */
int ml_kmeans_pp_step_f64(const double *X, const double *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          double *scores, int n_threads);
int ml_kmeans_pp_step_f32(const float *X, const float *w, ptrdiff_t n,
                          ptrdiff_t d, const int64_t *cand, ptrdiff_t T,
                          double *closest, ptrdiff_t *best, double *pot,
                          double *scores, int n_threads);
/* out[i] = ||x_i - c||^2 for every row, summed in float64 in coordinate order
 * (k-means++'s arithmetic; +inf where it overflows): the key of the value order
 * that seeding draws over (metriclust._core.kmeans.value_order). */
int ml_kmeans_sq_dist_to_f64(const double *X, ptrdiff_t n, ptrdiff_t d,
                             const double *c, double *out, int n_threads);
int ml_kmeans_sq_dist_to_f32(const float *X, ptrdiff_t n, ptrdiff_t d,
                             const double *c, double *out, int n_threads);
/* out = X - shift, row by row in X's precision (numpy's X - shift, bit for
 * bit), and, where key is not NULL, key[i] = ||out_i||^2 in the arithmetic of
 * ml_kmeans_sq_dist_to (so the same bits as it gives on out and a zero point):
 * a fit's centered copy and its value order's key in one pass over X, on
 * n_threads threads.  out is X (centered in place) or does not overlap it. */
int ml_kmeans_center_rows_f64(const double *X, ptrdiff_t n, ptrdiff_t d,
                              const double *shift, double *out, double *key,
                              int n_threads);
int ml_kmeans_center_rows_f32(const float *X, ptrdiff_t n, ptrdiff_t d,
                              const float *shift, float *out, double *key,
                              int n_threads);
/* Whether a k-means++ step with T candidates over rows of d values of
 * itemsize bytes should be given the scores workspace (ML_KM_PP_KEEP_SCORES). */
int ml_kmeans_pp_keeps_scores(ptrdiff_t d, ptrdiff_t T, int itemsize);
#endif
