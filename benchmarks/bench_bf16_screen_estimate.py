"""How many rows a bfloat16 screen would leave open (issue #10, d = 16-64).

The lead's estimate behind "fewer products is not a lever here" (eighth
round, RESULTS.md, k-means section): a screen that scores every (row,
center) pair from bfloat16 products and settles a row only when its two
best screened scores differ by more than twice a proven error bound E must
re-score every other row exactly. This script counts those open rows.

Setting (numpy emulation, not the C kernel): uniform data in the unit cube,
N = 1e5, the centers of scikit-learn's Lloyd after 1, 2 and 6 iterations
from the same random rows, rows and centers translated by the centers' mean
(which leaves the labels unchanged and shrinks the bound), bfloat16 by
round-to-nearest-even of the float32 values, products and sums in float64.
Bound: E = (eps + 2 (d + 3) 2^-24) (max ||c||^2 + ||x|| max ||2c||) with
eps = 2^-7 and 2^-8 (the bfloat16 rounding of the inputs, and the float32
arithmetic of the scores); a row is open when its best and second-best
screened scores are within 2E.  Prints, per (d, K), the open fraction for
each iteration count and eps.

Usage: python benchmarks/bench_bf16_screen_estimate.py
"""

import numpy as np
from sklearn.cluster import KMeans


def bf16(a):
    """float32 values rounded to bfloat16 (round to nearest even), as float32."""
    a = np.asarray(a, np.float32).copy()
    u = a.view(np.uint32)
    r = ((u >> 16) & 1) + 0x7FFF
    u2 = ((u + r) >> 16) << 16
    return u2.view(np.float32)


def open_fractions(d, K, N=100_000):
    """The fraction of rows the screen leaves open, per iteration count and eps."""
    rng = np.random.default_rng(0)
    X = rng.random((N, d)).astype(np.float32)
    C0 = X[np.random.default_rng(1).choice(N, K, replace=False)].copy()
    out = []
    for it in (1, 2, 6):
        if it > 1:
            km = KMeans(K, init=C0, n_init=1, max_iter=it, tol=0, algorithm="lloyd").fit(X)
            C = km.cluster_centers_.astype(np.float32)
        else:
            C = C0
        mu = C.mean(0)
        Xc, Cc = X - mu, C - mu
        Xb, Cb = bf16(Xc).astype(np.float64), bf16(Cc).astype(np.float64)
        Nk = (Cc.astype(np.float64) ** 2).sum(1)
        s = Nk[None, :] - 2 * Xb @ Cb.T
        ss = np.sort(s, 1)
        gap = ss[:, 1] - ss[:, 0]
        xl = np.sqrt((Xc.astype(np.float64) ** 2).sum(1))
        M2 = 2 * np.sqrt(Nk.max())
        for eps in (2.0**-7, 2.0**-8):
            E = (eps + 2 * (d + 3) * 2.0**-24) * (Nk.max() + xl * M2)
            out.append(f"it{it} eps{int(-np.log2(eps))}: open {np.mean(gap <= 2 * E):.3f}")
    return out


def main():
    for d, K in [(16, 8), (16, 32), (64, 32), (64, 64), (8, 8), (8, 32)]:
        print(d, K, "; ".join(open_fractions(d, K)), flush=True)


if __name__ == "__main__":
    main()
