/* A tiny driver for the SIMD dispatch checks (tools/check_dispatch.sh): links
 * the C core alone (no Python), prints the ISA level the dispatcher picked and
 * fingerprints of the dispatched kernels on fixed data, so the same driver
 * built by different toolchains (gcc clones on glibc, clang portable on
 * musl, ...) and run at different levels (METRICLUST_MAX_SIMD) can be
 * compared:
 *
 *   level N
 *   lloyd f64|f32 method M labels=HASH centers=HASH
 *   pruned f64|f32 uniform|clustered labels=HASH centers=HASH
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
#include "dispatch.h"
#include "kmeans.h"
#include "test_points.h"

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

enum { N = 6000, D = 5, K = 13, NG = 97, DG = 7, NP = 1500, DP = 20, KP = 37 };

/* Lloyd with Hamerly's bounds (the centers-across-lanes kernel's form with
 * second-best scores) against Lloyd at d = DP, K = KP, on the uniform points
 * (the bounds soon leave most rows open: the fit stops pruning) and on
 * KP clusters (it prunes to the end): labels and centers must be Lloyd's,
 * bit for bit, at every level. */
static int pruned_check(const double *X, const float *Xf)
{
    static double Y[NP * DP], C[KP * DP], C2[KP * DP];
    static float Yf[NP * DP], Cf[KP * DP], Cf2[KP * DP];
    static int64_t lab[NP], lab2[NP];
    for (int clustered = 0; clustered < 2; ++clustered) {
        for (int t = 0; t < NP * DP; ++t) {
            const int i = t / DP, j = t % DP;
            const double off = clustered ? (double)((i % KP) * (j + 1) * 7919 % 101) / 10.0 : 0.0;
            Y[t] = X[t] + off;
            Yf[t] = (float)Y[t];
        }
        for (int f32 = 0; f32 < 2; ++f32) {
            ml_test_centers(Y, Yf, NP, DP, KP, 31, C, Cf);
            memcpy(C2, C, sizeof C);
            memcpy(Cf2, Cf, sizeof Cf);
            double in1, in2;
            int it1, it2, s1, s2, st1, st2;
            if (f32) {
                st1 = ml_kmeans_lloyd_f32(Yf, NULL, NP, DP, KP, Cf, 20, 0.0, lab, &in1, &it1,
                                          &s1, NULL, ML_KM_DIRECT, 1);
                st2 = ml_kmeans_hamerly_f32(Yf, NULL, NP, DP, KP, Cf2, 20, 0.0, lab2, &in2,
                                            &it2, &s2, NULL, ML_KM_DIRECT, 1);
            } else {
                st1 = ml_kmeans_lloyd_f64(Y, NULL, NP, DP, KP, C, 20, 0.0, lab, &in1, &it1,
                                          &s1, NULL, ML_KM_DIRECT, 1);
                st2 = ml_kmeans_hamerly_f64(Y, NULL, NP, DP, KP, C2, 20, 0.0, lab2, &in2,
                                            &it2, &s2, NULL, ML_KM_DIRECT, 1);
            }
            if (st1 != 0 || st2 != 0) {
                fprintf(stderr, "pruned check: status %d %d\n", st1, st2);
                return 1;
            }
            if (memcmp(lab, lab2, sizeof lab) != 0 || it1 != it2 ||
                (f32 ? memcmp(Cf, Cf2, sizeof Cf) : memcmp(C, C2, sizeof C)) != 0) {
                fprintf(stderr, "pruned check: %s %s: the pruned fit is not Lloyd's\n",
                        f32 ? "f32" : "f64", clustered ? "clustered" : "uniform");
                return 1;
            }
            printf("pruned %s %s labels=%016llx centers=%016llx\n", f32 ? "f32" : "f64",
                   clustered ? "clustered" : "uniform",
                   (unsigned long long)fnv(lab, sizeof lab, 14695981039346656037ULL),
                   (unsigned long long)(f32 ? fnv(Cf, sizeof Cf, 14695981039346656037ULL)
                                            : fnv(C, sizeof C, 14695981039346656037ULL)));
        }
    }
    return 0;
}

int main(void)
{
    static double X[N * D], C[K * D], G[NG * NG], Xg[NG * DG];
    static float Xf[N * D], Cf[K * D], Gf[NG * NG], Xgf[NG * DG];
    static int64_t lab[N];
    ml_test_points(X, Xf, N * D);
    for (int t = 0; t < NG * DG; ++t) { Xg[t] = X[3 * t]; Xgf[t] = Xf[3 * t]; }
    printf("level %d\n", ml_kmeans_simd_level());
    /* On stderr: the same bits are expected at either vector width. */
    fprintf(stderr, "wide vectors %d\n", ml_kmeans_wide_lanes());
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
    if (pruned_check(X, Xf) != 0) return 1;
    if (ml_gaussian_gram_f64(Xg, NG, Xg, NG, DG, 0.8, G, NULL, 1) != 0 ||
        ml_gaussian_gram_f32(Xgf, NG, Xgf, NG, DG, 0.8, Gf, NULL, 1) != 0) {
        fprintf(stderr, "gram failed\n");
        return 1;
    }
    printf("gram f64 %016llx\n", (unsigned long long)fnv(G, sizeof G, 14695981039346656037ULL));
    printf("gram f32 %016llx\n", (unsigned long long)fnv(Gf, sizeof Gf, 14695981039346656037ULL));
    return 0;
}
