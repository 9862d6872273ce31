/* Uniform test points in [0, 1), and k-means starts, for the C drivers that
 * link the core alone (tools/dispatch_driver.c, benchmarks/harness_kmeans.c),
 * so that both draw the same data and their fingerprints stay comparable
 * between versions.
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

/* K starting centers (d columns) for k-means: rows k * stride mod N of the
 * points, in both precisions (stride coprime with N spreads them out). */
static void ml_test_centers(const double *X, const float *Xf, ptrdiff_t N, ptrdiff_t d,
                            ptrdiff_t K, ptrdiff_t stride, double *C, float *Cf)
{
    for (ptrdiff_t k = 0; k < K; ++k)
        for (ptrdiff_t j = 0; j < d; ++j) {
            C[k * d + j] = X[(k * stride % N) * d + j];
            Cf[k * d + j] = Xf[(k * stride % N) * d + j];
        }
}
#endif
