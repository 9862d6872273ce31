/* Uniform test points in [0, 1) for the C drivers that link the core alone
 * (tools/dispatch_driver.c, benchmarks/harness_kmeans.c), so that both draw
 * the same data and their fingerprints stay comparable between versions.
 *
 * Knuth's MMIX linear congruential generator (multiplier 6364136223846793005,
 * increment 1442695040888963407, modulus 2^64) from the fixed seed 12345; each
 * value is the state's top 53 bits divided by 2^53 (exact in a double), and
 * the float copy is that double rounded. */
#ifndef METRICLUST_TEST_POINTS_H
#define METRICLUST_TEST_POINTS_H
#include <stddef.h>
#include <stdint.h>

static void ml_test_points(double *X, float *Xf, ptrdiff_t n)
{
    uint64_t s = 12345;
    for (ptrdiff_t t = 0; t < n; ++t) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        X[t] = (double)(s >> 11) / 9007199254740992.0;
        Xf[t] = (float)X[t];
    }
}
#endif
