"""Benchmark: metriclust.kernels.gaussian_gram vs scikit-learn and scipy.

Peers, in the same process, repeats interleaved (ours, sklearn, scipy, ours, ...):
- ``sklearn.metrics.pairwise.rbf_kernel(X, gamma=1 / (2 sigma^2))``
- ``scipy.spatial.distance.cdist(X, X, "sqeuclidean")`` then an in-place
  scale and ``np.exp``.

Also measured in the same run, for the bound: the BLAS GEMM rate (GFLOP/s of
a 2000 x 256 x 2000 product, default BLAS threads), the rate of the kernel's
exp (in cache, one thread, times the OpenMP thread count), and the write
bandwidth into a fresh array (one slab per thread: the page faults a fresh
output must pay are included; a fill of an existing array is printed too).
Bound = 2 N^2 d / GEMM rate + N^2 / exp rate + 8 N^2 bytes / write bandwidth
(the issue's definition; the symmetric path does half the GEMM flops and
half the exps, so it can beat this bound).

The last columns time ours writing into a reused ``out=`` buffer (no page
faults): what a caller that keeps its buffer gets.

Usage: python benchmarks/bench_gram.py [--quick] [--repeats R]
"""

import argparse
import datetime
import os
import platform
import time

import numpy as np


def _median_time(fn, times):
    t = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t)
    del out


def _fresh_fill(n, n_threads):
    """Write n x n doubles into a fresh array from n_threads threads (numpy
    releases the GIL in copyto): page faults included, as for any new output."""
    import threading

    a = np.empty((n, n))
    bounds = np.linspace(0, n, n_threads + 1).astype(int)
    ts = [threading.Thread(target=np.copyto, args=(a[lo:hi], 1.0))
          for lo, hi in zip(bounds[:-1], bounds[1:])]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return a


def measure_rates(n_threads, repeats):
    from metriclust._kernels import _gram

    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(2000, 256)), rng.normal(size=(256, 2000))
    x = -rng.uniform(0, 30, 4096)
    xo = np.empty_like(x)
    big = 4000
    gemm_t, exp_t, fresh_t, fill_t = [], [], [], []
    buf = np.empty((big, big))
    buf.fill(0.0)
    for _ in range(repeats):
        _median_time(lambda: A @ B, gemm_t)
        t = time.perf_counter()
        for _ in range(1000):
            _gram.expneg(x, xo)
        exp_t.append((time.perf_counter() - t) / 1000)
        _median_time(lambda: _fresh_fill(big, n_threads), fresh_t)
        t = time.perf_counter()
        buf.fill(1.0)
        fill_t.append(time.perf_counter() - t)
    gemm_rate = 2 * 2000 * 256 * 2000 / np.median(gemm_t)
    exp_rate = x.size / np.median(exp_t) * n_threads
    write_bw = 8.0 * big * big / np.median(fresh_t)
    fill_bw = 8.0 * big * big / np.median(fill_t)
    return gemm_rate, exp_rate, write_bw, fill_bw


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()

    from scipy.spatial.distance import cdist
    from sklearn.metrics.pairwise import rbf_kernel

    from metriclust._core.threads import effective_n_threads
    from metriclust.kernels import gaussian_gram

    Ns = [2000, 5000] if args.quick else [2000, 5000, 10000]
    ds = [2, 100] if args.quick else [2, 10, 100]
    repeats = args.repeats or (3 if args.quick else 5)
    nt = effective_n_threads()

    load0 = os.getloadavg()
    gemm_rate, exp_rate, write_bw, fill_bw = measure_rates(nt, repeats)
    print(f"# bench_gram  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, OpenMP threads {nt}; "
          f"load average at start {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}")
    print(f"measured: GEMM {gemm_rate / 1e9:.1f} GFLOP/s, kernel exp "
          f"{exp_rate / 1e9:.2f} G/s ({nt} thr), write into fresh array ({nt} thr) "
          f"{write_bw / 1e9:.2f} GB/s (existing array, 1 thr: {fill_bw / 1e9:.2f} GB/s)")
    print()
    print("| N | d | ours (s) | rbf_kernel (s) | cdist+exp (s) | rbf / ours | cdist / ours "
          "| bound (s) | bound / ours | ours, out= reused (s) | rbf / ours out= |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
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
            fns["ours_out"]()  # touch buf's pages once
            # warm-up and agreement check (not timed)
            G = fns["ours"]()
            err = float(np.abs(G - fns["rbf"]()).max())
            del G
            times = {k: [] for k in fns}
            for _ in range(repeats):
                for k, fn in fns.items():
                    _median_time(fn, times[k])
            med = {k: float(np.median(v)) for k, v in times.items()}
            bound = 2.0 * N * N * d / gemm_rate + N * N / exp_rate + 8.0 * N * N / write_bw
            rows.append((N, d, med, bound, err))
            print(f"| {N} | {d} | {med['ours']:.4f} | {med['rbf']:.4f} | {med['cdist']:.4f} "
                  f"| {med['rbf'] / med['ours']:.2f} | {med['cdist'] / med['ours']:.2f} "
                  f"| {bound:.4f} | {bound / med['ours']:.2f} | {med['ours_out']:.4f} "
                  f"| {med['rbf'] / med['ours_out']:.2f} |", flush=True)
            del buf
    load1 = os.getloadavg()
    print()
    print(f"load average at end {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}; "
          f"max |ours - rbf_kernel| = {max(r[4] for r in rows):.1e}")


if __name__ == "__main__":
    main()
