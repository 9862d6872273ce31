"""Seconds per Lloyd iteration: metriclust.KMeans vs scikit-learn (and faiss).

Each library fits from the same initial centers with tol=0 and n_init=1, once
with ``max_iter = m1`` and once with ``m2``; (t2 - t1) / (m2 - m1) is the time
of one iteration, free of setup, validation and final-inertia costs. The data
are uniform in the unit cube, where Lloyd does not converge in a few
iterations (m2 - m1 is up to 16, kept below the iteration at which Lloyd
converges on that data); a run that stops early is flagged. Libraries are
interleaved within each repeat (3 or more repeats, up to 15 for short runs);
the table shows medians.

Roofline: one iteration must read X once (N d bytes-per-value) and do
2 N K d flops; the bound is max(bytes / bandwidth, flops / GEMM rate), with the
read bandwidth (numpy sum over 512 MB, one thread) and the GEMM rate (numpy
matmul, all threads) measured in the same run. "frac" = bound / time.

OpenMP waits passively (OMP_WAIT_POLICY=PASSIVE, set before any OpenMP
runtime loads, for every library alike) unless --spin is given: on a machine
oversubscribed by other jobs, threads that spin at a barrier take the core
from the thread they wait for, and every library's timings then measure the
scheduler more than the kernel.

Usage: python benchmarks/bench_kmeans.py [--quick] [--repeats R] [--spin] [--out FILE]
       [--N 100000 ...] [--d 2 8 ...] [--K 3 256 ...]
"""

import argparse
import os
import platform
import sys
import time

if "--spin" not in sys.argv:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402


def _threads():
    from metriclust._core.threads import effective_n_threads

    return effective_n_threads()


def measure_bandwidth():
    a = np.ones(64 * 2**20)  # 512 MB
    a.sum()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        a.sum()
        ts.append(time.perf_counter() - t0)
    return a.nbytes / min(ts)


def measure_gemm(dtype):
    n = 2048
    A = np.random.default_rng(0).random((n, n)).astype(dtype)
    A @ A
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        A @ A
        ts.append(time.perf_counter() - t0)
    return 2 * n**3 / min(ts)


def fit_ours(X, C0, m):
    from metriclust import KMeans

    km = KMeans(len(C0), init=C0, n_init=1, max_iter=m, tol=0.0).fit(X)
    return km.n_iter_


def fit_sklearn(X, C0, m):
    from sklearn.cluster import KMeans

    km = KMeans(len(C0), init=C0, n_init=1, max_iter=m, tol=0.0, algorithm="lloyd").fit(X)
    return km.n_iter_


def fit_faiss(X, C0, m):
    import faiss

    km = faiss.Kmeans(X.shape[1], len(C0), niter=m, max_points_per_centroid=10**9,
                      min_points_per_centroid=1, verbose=False, seed=1)
    km.train(X, init_centroids=C0)
    return m


def per_iteration(fit, X, C0, m1, m2):
    t0 = time.perf_counter()
    n1 = fit(X, C0, m1)
    t1 = time.perf_counter()
    n2 = fit(X, C0, m2)
    t2 = time.perf_counter()
    ok = n1 == m1 and n2 == m2
    return ((t2 - t1) - (t1 - t0)) / (m2 - m1), ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N=1e5 and a few shapes only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="also write the markdown table here")
    ap.add_argument("--N", type=int, nargs="*", help="only these N")
    ap.add_argument("--d", type=int, nargs="*", help="only these d")
    ap.add_argument("--K", type=int, nargs="*", help="only these K")
    ap.add_argument("--spin", action="store_true",
                    help="leave OMP_WAIT_POLICY alone (OpenMP's default spinning)")
    args = ap.parse_args()

    try:
        import faiss

        faiss.omp_set_num_threads(_threads())
        have_faiss = True
    except ImportError:
        have_faiss = False

    if args.quick:
        Ns, ds, Ks = [100_000], [2, 3, 8, 64], [3, 32, 256]
    else:
        Ns, ds, Ks = [100_000, 1_000_000], [2, 3, 8, 16, 64], [3, 8, 32, 256]
    Ns, ds, Ks = args.N or Ns, args.d or ds, args.K or Ks
    dtypes = [np.float64, np.float32]

    load0 = os.getloadavg()
    bw = measure_bandwidth()
    gemm = {np.float64: measure_gemm(np.float64), np.float32: measure_gemm(np.float32)}
    lines = []
    say = lines.append
    say(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{os.cpu_count()}-core {platform.machine()} (shared), {_threads()} OpenMP threads")
    say(f"- measured: read bandwidth {bw / 1e9:.1f} GB/s (numpy sum, 1 thread); GEMM "
        f"{gemm[np.float64] / 1e9:.1f} GFLOP/s f64, {gemm[np.float32] / 1e9:.1f} GFLOP/s f32")
    say(f"- load average at start: {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(default)')}")
    say("")
    say("| N | d | K | dtype | metriclust ms/it | sklearn ms/it | x sklearn | faiss ms/it "
        "| x faiss | frac (ours) | frac (sklearn) | target | met |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines), flush=True)

    for N in Ns:
        rng = np.random.default_rng(0)
        X64 = rng.random((N, max(ds)))
        for d in ds:
            for K in Ks:
                for dtype in dtypes:
                    X = np.ascontiguousarray(X64[:, :d], dtype=dtype)
                    C0 = X[np.random.default_rng(1).choice(N, K, replace=False)].copy()
                    work = N * K * d
                    libs = {"ours": fit_ours, "sklearn": fit_sklearn}
                    if have_faiss and dtype == np.float32:
                        libs["faiss"] = fit_faiss
                    # As many iterations as the data allow before Lloyd
                    # converges (at most 16), and more repeats for short runs.
                    if work <= 5e8:
                        n_conv = fit_ours(X, C0, 1000)
                        diff = int(min(16, max(2, n_conv - 4)))
                    else:
                        diff = 2 if work > 5e9 else 4
                    m1, m2 = 2, 2 + diff
                    t0 = time.perf_counter()
                    fit_sklearn(X, C0, m2)
                    t_fit = time.perf_counter() - t0
                    reps = int(min(15, max(args.repeats, round(1.0 / max(t_fit, 1e-3)))))
                    times = {k: [] for k in libs}
                    flags = {k: True for k in libs}
                    for _ in range(reps):
                        for name, fit in libs.items():
                            t, ok = per_iteration(fit, X, C0, m1, m2)
                            times[name].append(t)
                            flags[name] &= ok
                    med = {k: float(np.median(v)) for k, v in times.items()}
                    bound = max(N * d * X.itemsize / bw, 2.0 * work / gemm[dtype])
                    ratio = med["sklearn"] / med["ours"]
                    if d <= 3:
                        target, met = ">= 3x sklearn", ratio >= 3
                    elif d == 8:
                        target, met = ">= 2x sklearn", ratio >= 2
                    elif d == 64:
                        target, met = ">= 1x sklearn", ratio >= 1
                    else:
                        target, met = "-", None
                    fa = fr = "-"
                    if "faiss" in med:
                        fa = f"{med['faiss'] * 1e3:.2f}"
                        fr = f"{med['faiss'] / med['ours']:.2f}"
                        if K == 256 and d <= 16:
                            target = (target + ", " if target != "-" else "") + ">= 1x faiss"
                            fmet = med["faiss"] >= med["ours"]
                            met = fmet if met is None else (met and fmet)
                    note = "" if all(flags.values()) else " (early stop)"
                    row = (f"| {N:.0e} | {d} | {K} | {np.dtype(dtype).name} | "
                           f"{med['ours'] * 1e3:.2f} | {med['sklearn'] * 1e3:.2f} | "
                           f"{ratio:.2f} | {fa} | {fr} | {bound / med['ours']:.2f} | "
                           f"{bound / med['sklearn']:.2f} | {target} | "
                           f"{'-' if met is None else ('yes' if met else 'NO')}{note} |")
                    lines.append(row)
                    print(row, flush=True)
    load1 = os.getloadavg()
    tail = f"\n- load average at end: {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}"
    lines.append(tail)
    print(tail)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
