"""Benchmark: metriclust.kernels.gaussian_gram vs scikit-learn and scipy.

Peers, in the same process, repeats interleaved (ours, sklearn, scipy, ours, ...):
- ``sklearn.metrics.pairwise.rbf_kernel(X, gamma=1 / (2 sigma^2))``
- ``scipy.spatial.distance.cdist(X, X, "sqeuclidean")`` then an in-place
  scale and ``np.exp``.

Measured in the same run, for the bound (the header comes from
``benchmarks/_common.py``): the dgemm rate, the write bandwidth into a fresh
array (one slab per thread: the page faults a fresh output must pay are
included), and here the rate of the kernel's exp (in cache, one thread, times
the OpenMP thread count).
Bound = 2 N^2 d / dgemm rate + N^2 / exp rate + 8 N^2 bytes / write bandwidth
(the symmetric path does half the GEMM flops and half the exps, so it can beat
this bound).

The last columns time ours writing into a reused ``out=`` buffer (no page
faults): what a caller that keeps its buffer gets.

Usage: python benchmarks/bench_gram.py [--quick] [--repeats R] [--spin]
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse

import numpy as np


def measure_exp_rate(n_threads, repeats):
    """Values/s of the Gram kernel's exp (4096 in cache, one thread) x n_threads."""
    from metriclust._kernels import _gram

    x = -np.random.default_rng(0).uniform(0, 30, 4096)
    xo = np.empty_like(x)

    def thousand():
        for _ in range(1000):
            _gram.expneg(x, xo)

    t = _common.medians(_common.interleaved({"exp": thousand}, repeats))["exp"] / 1000
    return x.size / t * n_threads


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--spin", action="store_true",
                        help="leave OMP_WAIT_POLICY alone (OpenMP's default spinning)")
    args = parser.parse_args()

    from scipy.spatial.distance import cdist
    from sklearn.metrics.pairwise import rbf_kernel

    from metriclust._core.threads import effective_n_threads
    from metriclust.kernels import gaussian_gram

    Ns = [2000, 5000] if args.quick else [2000, 5000, 10000]
    ds = [2, 100] if args.quick else [2, 10, 100]
    repeats = args.repeats or (3 if args.quick else 5)
    nt = effective_n_threads()

    header, rates = _common.machine_header("bench_gram", nt, repeats=repeats)
    exp_rate = measure_exp_rate(nt, repeats)
    print("\n".join(header) + f"; kernel exp {exp_rate / 1e9:.2f} G/s ({nt} thr)\n")
    print(_common.markdown_table(
        ["N", "d", "ours (s)", "rbf_kernel (s)", "cdist+exp (s)", "rbf / ours",
         "cdist / ours", "bound (s)", "bound / ours", "ours, out= reused (s)",
         "rbf / ours out="]), flush=True)
    errors = []
    for N in Ns:
        for d in ds:
            X = np.random.default_rng(N + d).normal(size=(N, d))
            sigma = float(np.sqrt(d))
            gamma = 1.0 / (2 * sigma**2)

            def scipy_gram():
                D = cdist(X, X, "sqeuclidean")
                D *= -gamma
                return np.exp(D, out=D)

            buf = np.empty((N, N))
            fns = {"ours": lambda: gaussian_gram(X, sigma=sigma),
                   "rbf": lambda: rbf_kernel(X, gamma=gamma),
                   "cdist": scipy_gram,
                   "ours_out": lambda: gaussian_gram(X, sigma=sigma, out=buf)}
            # agreement check (not timed; the timer's warm-up touches buf's pages)
            errors.append(float(np.abs(fns["ours"]() - fns["rbf"]()).max()))
            med = _common.medians(_common.interleaved(fns, repeats))
            bound = (2.0 * N * N * d / rates["dgemm"] + N * N / exp_rate
                     + 8.0 * N * N / rates["write"])
            print(_common.markdown_row(
                [N, d, med["ours"], med["rbf"], med["cdist"], med["rbf"] / med["ours"],
                 med["cdist"] / med["ours"], bound, bound / med["ours"], med["ours_out"],
                 med["rbf"] / med["ours_out"]]), flush=True)
            del buf
    print(f"\nload average at end {_common.load_average():.1f}; "
          f"max |ours - rbf_kernel| = {max(errors):.1e}")


if __name__ == "__main__":
    main()
