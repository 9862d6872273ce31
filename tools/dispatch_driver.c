/* A tiny driver for the SIMD dispatch checks (tools/check_dispatch.sh): links
 * the C core alone (no Python), prints the ISA level the dispatcher picked and
 * fingerprints of the dispatched kernels on fixed data, so the same driver
 * built by different toolchains (gcc clones on glibc, clang portable on
 * musl, ...) and run at different levels (METRICLUST_MAX_SIMD) can be
 * compared:
 *
 *   level N
 *   lloyd f64|f32 method M labels=HASH centers=HASH
 *   gram f64|f32 HASH
 *
 * labels= must agree everywhere (the assignment is exact up to ties that
 * this data does not have); centers= and gram hashes are bit patterns and
 * agree between builds of the same level by the same compiler. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gram.h"
#include "kmeans.h"
#include "test_points.h"

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

enum { N = 6000, D = 5, K = 13, NG = 97, DG = 7 };

int main(void)
{
    static double X[N * D], C[K * D], G[NG * NG], Xg[NG * DG];
    static float Xf[N * D], Cf[K * D], Gf[NG * NG], Xgf[NG * DG];
    static int64_t lab[N];
    ml_test_points(X, Xf, N * D);
    for (int t = 0; t < NG * DG; ++t) { Xg[t] = X[3 * t]; Xgf[t] = Xf[3 * t]; }
    printf("level %d\n", ml_kmeans_simd_level());
    const int methods[] = {ML_KM_TILE, ML_KM_SMALL, ML_KM_LANES, ML_KM_DIRECT};
    for (int f32 = 0; f32 < 2; ++f32)
        for (int mi = 0; mi < 4; ++mi) {
            ml_test_centers(X, Xf, N, D, K, 461, C, Cf);
            double inertia;
            int n_iter, strict, st;
            if (f32)
                st = ml_kmeans_lloyd_f32(Xf, NULL, N, D, K, Cf, 15, 0.0, lab, &inertia,
                                         &n_iter, &strict, NULL, methods[mi], 1);
            else
                st = ml_kmeans_lloyd_f64(X, NULL, N, D, K, C, 15, 0.0, lab, &inertia,
                                         &n_iter, &strict, NULL, methods[mi], 1);
            if (st != 0) { fprintf(stderr, "lloyd status %d\n", st); return 1; }
            printf("lloyd %s method %d labels=%016llx centers=%016llx\n", f32 ? "f32" : "f64",
                   methods[mi], (unsigned long long)fnv(lab, sizeof lab, 14695981039346656037ULL),
                   (unsigned long long)(f32 ? fnv(Cf, sizeof Cf, 14695981039346656037ULL)
                                            : fnv(C, sizeof C, 14695981039346656037ULL)));
        }
    if (ml_gaussian_gram_f64(Xg, NG, Xg, NG, DG, 0.8, G, NULL, 1) != 0 ||
        ml_gaussian_gram_f32(Xgf, NG, Xgf, NG, DG, 0.8, Gf, NULL, 1) != 0) {
        fprintf(stderr, "gram failed\n");
        return 1;
    }
    printf("gram f64 %016llx\n", (unsigned long long)fnv(G, sizeof G, 14695981039346656037ULL));
    printf("gram f32 %016llx\n", (unsigned long long)fnv(Gf, sizeof Gf, 14695981039346656037ULL));
    return 0;
}
