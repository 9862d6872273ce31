/* Single-thread C harness for the k-means core's Lloyd pass (issue #10):
 * CPU ms per iteration, (t(6 it) - t(2 it)) / 4, best of R, uniform data,
 * no BLAS (the C core only).  Build it against any checkout's csrc/ to
 * compare two versions on the same machine in the same run:
 *
 *   gcc -O3 -fPIC -fopenmp -fno-math-errno -fno-trapping-math -Icsrc \
 *       benchmarks/harness_kmeans.c csrc/kmeans.c csrc/interrupt.c \
 *       csrc/dispatch.c -lm -o /tmp/harness
 *
 * -O3 -fPIC as the wheel is built (meson's buildtype=release): at -O2 GCC
 * leaves the small-d kernel's point-vector loop rolled, and version
 * against version the two levels have disagreed by up to 1.2x (seventh
 * round, 64-byte small-d kernel: kmeans.h, ML_KM_SMALL_V4_WIDE).
 *   /tmp/harness N d K f32|f64 [method [reps [threads [offset [wall]]]]]
 *
 * method: 0 auto, 1 direct, 3 tile, 4 small-d, 5 centers-across-lanes, 6
 * the same behind the float32 screen (float64 data; the ML_KM_* codes of
 * kmeans.h; a build without a code runs auto).  Prints one line: the
 * arguments, ms per iteration, a label checksum and a checksum of the final
 * centers' bits (two builds that agree on both ran the same arithmetic).
 * Built with -DML_KM_SCREEN_STATS (and a core that has the screen) it also
 * prints the screen's counters over all its runs: the fraction of screened
 * rows re-scored in float64 one by one, of screened chunks taken whole by
 * the float64 kernel, and of chunks that skipped the screen.  wall = 1:
 * wall-clock instead of CPU time (the 2-thread split: with
 * OMP_WAIT_POLICY=PASSIVE the CPU time of 2 threads hides their waits).
 * On stderr: whether the lanes kernels ran 64-byte vectors (dispatch.h,
 * ml_wide_vectors; METRICLUST_WIDE_VECTORS=0 / 1 decides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch.h"
#include "kmeans.h"
#include "../tools/test_points.h"

#ifdef ML_KM_SCREEN_STATS
void ml_kmeans_screen_stats(long long out[5], int reset);
#endif

static int use_wall;

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(use_wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 5) { fprintf(stderr, "usage: N d K f32|f64 [method reps threads offset wall]\n"); return 2; }
    const ptrdiff_t N = atol(argv[1]), d = atol(argv[2]), K = atol(argv[3]);
    const int f32 = !strcmp(argv[4], "f32");
    const int method = argc > 5 ? atoi(argv[5]) : 0;
    const int reps = argc > 6 ? atoi(argv[6]) : 3;
    const int nt = argc > 7 ? atoi(argv[7]) : 1;
    const double offset = argc > 8 ? atof(argv[8]) : 0.0;
    use_wall = argc > 9 && atoi(argv[9]) != 0;
    double *X = malloc(N * d * sizeof(double));
    float *Xf = malloc(N * d * sizeof(float));
    int64_t *lab = malloc(N * sizeof(int64_t));
    ml_test_points(X, Xf, N * d);
    /* Data far from the origin (the float32 screen's worst case): every
     * coordinate moved by the same offset. */
    for (ptrdiff_t t = 0; offset != 0.0 && t < N * d; ++t) {
        X[t] += offset;
        Xf[t] = (float)X[t];
    }
    double best[2] = {1e30, 1e30};
    long long check = 0;
    unsigned long long ccheck = 0;
    for (int r = 0; r < reps; ++r)
        for (int v = 0; v < 2; ++v) {
            const int it = v ? 6 : 2;
            double *C = malloc(K * d * sizeof(double));
            float *Cf = malloc(K * d * sizeof(float));
            ml_test_centers(X, Xf, N, d, K, 7919, C, Cf);
            double inertia;
            int n_iter, strict, st;
            const double t0 = cpu_now();
            if (f32)
                st = ml_kmeans_lloyd_f32(Xf, NULL, N, d, K, Cf, it, 0.0, lab, &inertia,
                                         &n_iter, &strict, NULL, method, nt);
            else
                st = ml_kmeans_lloyd_f64(X, NULL, N, d, K, C, it, 0.0, lab, &inertia,
                                         &n_iter, &strict, NULL, method, nt);
            const double t = cpu_now() - t0;
            if (st != 0) { fprintf(stderr, "status %d\n", st); return 1; }
            if (t < best[v]) best[v] = t;
            if (v) {
                check = 0;
                for (ptrdiff_t i = 0; i < N; ++i) check = check * 31 + lab[i];
                const unsigned char *cb = f32 ? (const unsigned char *)Cf : (const unsigned char *)C;
                const size_t nbytes = (size_t)(K * d) * (f32 ? sizeof(float) : sizeof(double));
                ccheck = 1469598103934665603ULL;
                for (size_t t = 0; t < nbytes; ++t) ccheck = (ccheck ^ cb[t]) * 1099511628211ULL;
            }
            free(C); free(Cf);
        }
    printf("N=%td d=%td K=%td %s method=%d: %.4f ms/it  check=%llx centers=%llx\n", N, d,
           K, f32 ? "f32" : "f64", method, (best[1] - best[0]) / 4 * 1e3,
           (unsigned long long)check, ccheck);
    fprintf(stderr, "simd level %d, wide vectors %d (probe: zmm / ymm time %.2f)\n",
            ml_simd_level(), ml_wide_vectors(), ml_wide_vectors_ratio());
#ifdef ML_KM_SCREEN_STATS
    long long sst[5];
    ml_kmeans_screen_stats(sst, 1);
    const double ch = (double)(sst[0] + sst[4]);
    printf("  screen: %lld chunks screened, %lld skipped; rows re-scored %.4f, "
           "chunks whole %.4f, skipped %.4f\n", sst[0], sst[4],
           sst[1] ? (double)sst[2] / (double)sst[1] : 0.0,
           sst[0] ? (double)sst[3] / (double)sst[0] : 0.0, ch > 0 ? (double)sst[4] / ch : 0.0);
#endif
    return 0;
}
