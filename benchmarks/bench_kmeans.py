"""Seconds per Lloyd iteration: metriclust.KMeans vs scikit-learn (and faiss).

Each library fits from the same initial centers with tol=0 and n_init=1, once
with ``max_iter = 2`` and once with ``2 + diff`` (``--diff``; 4 or 8 by
size); (t2 - t1) over the iterations the second fit ran beyond the first
(diff, unless it converged sooner) is the time of one iteration, free of
setup, validation and final-inertia costs. The data are uniform in the unit
cube (Lloyd does not converge in a few iterations there). Libraries are interleaved within each repeat; the table shows medians
of the wall time and, as a figure that a loaded machine disturbs less, of the
process CPU time (all threads; OpenMP waits passively, so a waiting thread
burns none).

The pruning rows ("elkan") time whole fits (max_iter=30, tol=0) on 256
Gaussian blobs, where bounds pay: metriclust's algorithm="elkan" (Hamerly's
bounds) against scikit-learn's elkan, and our lloyd for reference.

Roofline: one iteration reads X once (N d bytes-per-value) and does 2 N K d
flops; the bound is max(bytes / bandwidth, flops / GEMM rate), with the read
bandwidth (numpy sums over 512 MB in as many Python threads as OpenMP
threads) and the GEMM rate (numpy matmul, all threads) measured at the start
of the same run. "frac" = bound / median wall time.

OpenMP waits passively (OMP_WAIT_POLICY=PASSIVE, set before any OpenMP
runtime loads, for every library alike) unless --spin is given: on a machine
oversubscribed by other jobs, threads that spin at a barrier take the core
from the thread they wait for.

Usage: python benchmarks/bench_kmeans.py [--quick] [--repeats R] [--spin] [--out FILE]
           [--rows I ...] [--shapes N,d,K,dtype ...] [--no-elkan] [--elkan-dtype float32 float64]
       python benchmarks/bench_kmeans.py --threads 1 2 4 8 16 [--rows I ...] [--quick]
       python benchmarks/bench_kmeans.py --crossover [--d 16 64 128] [--K 8 64 256]
       python benchmarks/bench_kmeans.py --kernels [--d 3 8 16 64 128] [--K 8 32 64 256]
       python benchmarks/bench_kmeans.py --pruning [--d 16 32 64] [--K 8 16 32 64]
           [--dtype float32|float64]
       python benchmarks/bench_kmeans.py --offsets [0 10 1e4]
       python benchmarks/bench_kmeans.py --seeding [--shapes N,d,K,dtype ...]

--kernels times the no-BLAS kernels forced one by one (method "small" for
d <= 8, "lanes", "tile"), the measurements behind the small-d / lanes choice
in csrc/kmeans.h (ml_kmeans_kernel); benchmarks/harness_kmeans.c is the same
comparison single-threaded in C, without Python.

--pruning times lloyd against the Hamerly-pruned lloyd per (d, K) on uniform
data and on blobs, the measurements behind the pruning entries of that table.

--seeding times what a fit pays besides its iterations: k-means++ seeding
(metriclust's, over the value order, against scikit-learn's kmeans_plusplus, on
the same centred data, 2 + ln K candidates each) and whole short fits
(KMeans(K, n_init=1, max_iter=1 and 10, random_state=0), the default tol:
seeding, the column mean and variance, the centred copy, one or ten
iterations) against scikit-learn's same fits. Uniform data, shapes from
--shapes or four defaults.

--offsets times KMeans.predict on raw float64 rows far from the origin (d = 64,
K = 32: the float32 screen's shape) against scikit-learn's predict with the
same centers: the screen translates rows and centers by the centers' mean.
"""

import argparse
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor

if "--spin" not in sys.argv:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

# (N, d, K, dtype, target ratio vs scikit-learn, target vs faiss) - the
# issue's rows; None: no target.
ROWS = [
    (1_000_000, 2, 8, "float64", 5.0, None),
    (1_000_000, 3, 8, "float64", 5.0, None),
    (1_000_000, 8, 8, "float64", 3.0, None),
    (1_000_000, 8, 8, "float32", 3.0, None),
    (1_000_000, 8, 32, "float64", 3.0, None),
    (1_000_000, 8, 32, "float32", 3.0, None),
    (1_000_000, 16, 8, "float32", 3.0, None),
    (1_000_000, 16, 32, "float32", 3.0, None),
    (1_000_000, 64, 32, "float64", 3.0, None),
    (1_000_000, 64, 64, "float32", 3.0, None),
    (200_000, 16, 256, "float32", None, 1.5),
]
QUICK_ROWS = [(200_000, d, K, dt, r, f) for (_, d, K, dt, r, f) in ROWS[::2]]


def wide_desc():
    """The lanes kernels' vector width here and the probe behind it."""
    from metriclust._kernels import _kmeans

    if not hasattr(_kmeans, "wide_vectors"):  # a build before the probe: always 256-bit
        return "256-bit (no probe in this build)" if _kmeans.simd_level() >= 4 else "-"
    used, ratio = _kmeans.wide_vectors()
    probe = f"probe zmm / ymm time {ratio:.2f}" if ratio >= 0 else "not probed"
    return f"{512 if used else 256}-bit ({probe})" if _kmeans.simd_level() >= 4 else "-"


def _threads():
    from metriclust._core.threads import effective_n_threads

    return effective_n_threads()


def measure_bandwidth(n_threads):
    """Read bandwidth: numpy sums (which release the GIL) over 512 MB, split
    between n_threads Python threads."""
    a = np.ones(64 * 2**20)
    parts = np.array_split(a, n_threads)
    with ThreadPoolExecutor(n_threads) as ex:
        list(ex.map(np.sum, parts))
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            list(ex.map(np.sum, parts))
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


def fit_ours(X, C0, m, algorithm="lloyd"):
    from metriclust import KMeans

    return KMeans(len(C0), init=C0, n_init=1, max_iter=m, tol=0.0, algorithm=algorithm).fit(X)


def fit_sklearn(X, C0, m, algorithm="lloyd"):
    from sklearn.cluster import KMeans

    return KMeans(len(C0), init=C0, n_init=1, max_iter=m, tol=0.0, algorithm=algorithm).fit(X)


def fit_faiss(X, C0, m, algorithm=None):
    import faiss

    km = faiss.Kmeans(X.shape[1], len(C0), niter=m, max_points_per_centroid=10**9,
                      min_points_per_centroid=1, verbose=False, seed=1)
    km.train(X, init_centroids=C0)
    return km


def timed(fit, *args):
    w0, c0 = time.perf_counter(), time.process_time()
    model = fit(*args)
    return time.perf_counter() - w0, time.process_time() - c0, model


def per_iteration(fit, X, C0, diff):
    """Per-iteration wall and CPU time by the difference of two fits, over the
    iterations they actually ran (a fit that converges early runs fewer)."""
    w1, c1, m1 = timed(fit, X, C0, 2)
    w2, c2, m2 = timed(fit, X, C0, 2 + diff)
    ran = max(1, getattr(m2, "n_iter_", 2 + diff) - getattr(m1, "n_iter_", 2))
    return (w2 - w1) / ran, (c2 - c1) / ran


def machine_header(n_threads):
    from metriclust._kernels import _kmeans

    bw1, bw = measure_bandwidth(1), measure_bandwidth(n_threads)
    gemm = {"float64": measure_gemm(np.float64), "float32": measure_gemm(np.float32)}
    load = os.getloadavg()
    level = {4: "x86-64-v4 (AVX-512)", 3: "x86-64-v3 (AVX2)", 1: "baseline", 0: "no clones"}
    lines = [
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{os.cpu_count()}-core {platform.machine()} (shared), {n_threads} OpenMP threads, "
        f"kernels: {level.get(_kmeans.simd_level(), '?')}, lanes kernels' vectors: "
        f"{wide_desc()}",
        f"- measured at start: read bandwidth {bw1 / 1e9:.1f} GB/s (1 thread), "
        f"{bw / 1e9:.1f} GB/s ({n_threads} threads); GEMM {gemm['float64'] / 1e9:.1f} "
        f"GFLOP/s f64, {gemm['float32'] / 1e9:.1f} GFLOP/s f32",
        f"- load average at start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(default)')}",
    ]
    return lines, bw, gemm


def lloyd_rows(rows, repeats, bw, gemm, have_faiss, say, diff=None):
    """The peer table; returns each row's median wall times by library."""
    from metriclust._kernels import _kmeans

    medians = []

    say("| N | d | K | dtype | kernel | algorithm=\"auto\" runs | metriclust lloyd ms/it "
        "| sklearn lloyd ms/it | x sklearn (wall) | x sklearn (cpu) | auto: x sklearn (cpu) "
        "| faiss ms/it | x faiss | frac of bound | target | met |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for N, d, K, dt, target, ftarget in rows:
        rng = np.random.default_rng(0)
        X = rng.random((N, d)).astype(dt)
        C0 = X[np.random.default_rng(1).choice(N, K, replace=False)].copy()
        libs = {"ours": fit_ours, "sklearn": fit_sklearn}
        if have_faiss and dt == "float32" and K >= 256:
            libs["faiss"] = fit_faiss
        pruned = _kmeans.prefers_pruning(d, K)
        if pruned:  # algorithm="auto" runs another pass than lloyd: time it too
            libs["ours auto"] = lambda X, C0, m: fit_ours(X, C0, m, "auto")
        row_diff = diff or (4 if N * K * d > 2e8 else 8)
        times = {k: [] for k in libs}
        for fit in libs.values():  # one-time costs (imports, BLAS pool start) untimed
            fit(X, C0, 2)
        time.sleep(0.25)  # a fresh BLAS pool thread spins ~50 ms before it sleeps
        for _ in range(repeats):
            for name, fit in libs.items():
                times[name].append(per_iteration(fit, X, C0, row_diff))
        wall = {k: float(np.median([t[0] for t in v])) for k, v in times.items()}
        cpu = {k: float(np.median([t[1] for t in v])) for k, v in times.items()}
        bound = max(N * d * X.itemsize / bw, 2.0 * N * K * d / gemm[dt])
        ratio = wall["sklearn"] / wall["ours"]
        met = []
        if target:
            met.append(ratio >= target)
        fa = fr = "-"
        if "faiss" in wall:
            fa, fr = f"{wall['faiss'] * 1e3:.2f}", f"{wall['faiss'] / wall['ours']:.2f}"
            if ftarget:
                met.append(wall["faiss"] / wall["ours"] >= ftarget)
        tg = ", ".join(([f">= {target:g}x sklearn"] if target else [])
                       + ([f">= {ftarget:g}x faiss"] if ftarget and "faiss" in wall else []))
        auto = "pruned" if pruned else "lloyd (same pass)"
        auto_cpu = cpu["ours auto"] if pruned else cpu["ours"]
        kern = _kmeans.kernel(d, K, 'auto', dt)
        if getattr(_kmeans, "screens", None) and _kmeans.screens(d, K, "auto", dt):
            kern += " + int16 screen" if np.dtype(dt) == np.float32 else " + f32 screen"
        say(f"| {N:.0e} | {d} | {K} | {dt} | {kern} | {auto} | "
            f"{wall['ours'] * 1e3:.2f} | "
            f"{wall['sklearn'] * 1e3:.2f} | {ratio:.2f} | {cpu['sklearn'] / cpu['ours']:.2f} | "
            f"{cpu['sklearn'] / auto_cpu:.2f} | "
            f"{fa} | {fr} | {bound / wall['ours']:.2f} | {tg or '-'} | "
            f"{('yes' if all(met) else 'NO') if met else '-'} |")
        medians.append(wall)
    return medians


def thread_scaling(counts, rows, repeats, have_faiss, say, diff=None):
    """The peer table once per OpenMP thread count (threadpoolctl limits
    OpenMP and BLAS alike for every library; faiss is told the count), then
    one summary: each library's time per iteration and its speed-up over
    the first count, and the ratio to scikit-learn at each count."""
    from threadpoolctl import threadpool_limits

    runs = {}
    for t in counts:
        with threadpool_limits(limits=t, user_api="openmp"), \
                threadpool_limits(limits=t, user_api="blas"):
            if have_faiss:
                import faiss

                faiss.omp_set_num_threads(t)
            head, bw, gemm = machine_header(t)
            say(f"### {t} thread{'s' if t > 1 else ''}")
            say("")
            for s in head + [""]:
                say(s)
            runs[t] = lloyd_rows(rows, repeats, bw, gemm, have_faiss, say, diff)
            say("")
    t0 = counts[0]
    say(f"### Scaling: ms per iteration (speed-up over {t0} thread{'s' if t0 > 1 else ''})")
    say("")
    say("| N | d | K | dtype | library | " + " | ".join(f"{t} thr" for t in counts) + " |")
    say("|---|---|---|---|---|" + "---|" * len(counts))
    for i, (N, d, K, dt, _, _) in enumerate(rows):
        for lib in runs[t0][i]:
            cells = [f"{runs[t][i][lib] * 1e3:.2f} ({runs[t0][i][lib] / runs[t][i][lib]:.2f})"
                     for t in counts]
            say(f"| {N:.0e} | {d} | {K} | {dt} | {lib} | " + " | ".join(cells) + " |")
        cells = [f"{runs[t][i]['sklearn'] / runs[t][i]['ours']:.2f}" for t in counts]
        say(f"| {N:.0e} | {d} | {K} | {dt} | x sklearn | " + " | ".join(cells) + " |")


def blob_data(N, d, K, rng, dtype):
    """K Gaussian blobs (unit spread, means at scale 4) drawn from rng."""
    means = rng.normal(scale=4.0, size=(K, d))
    return (means[rng.integers(K, size=N)] + rng.normal(size=(N, d))).astype(dtype)


def elkan_rows(repeats, say, N=200_000, d=16, K=256, dtype="float32"):
    rng = np.random.default_rng(0)
    X = blob_data(N, d, K, rng, np.dtype(dtype))
    C0 = X[rng.choice(N, K, replace=False)].copy()
    runs = {"ours elkan": (fit_ours, "elkan"), "ours lloyd": (fit_ours, "lloyd"),
            "sklearn elkan": (fit_sklearn, "elkan")}
    times = {k: [] for k in runs}
    labels = {}
    for _ in range(repeats):
        for name, (fit, alg) in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            labels[name] = fit(X, C0, 30, alg).labels_
            times[name].append((time.perf_counter() - w0, time.process_time() - c0))
    wall = {k: float(np.median([t[0] for t in v])) for k, v in times.items()}
    cpu = {k: float(np.median([t[1] for t in v])) for k, v in times.items()}
    same = np.array_equal(labels["ours elkan"], labels["ours lloyd"])
    ratio = wall["sklearn elkan"] / wall["ours elkan"]
    say("")
    say(f"Pruning: {N:.0e} x {d} {dtype}, {K} Gaussian blobs, 30 iterations from the same init "
        "(whole fits, medians)")
    say("")
    say("| run | wall s | cpu s | x sklearn elkan (wall) | x (cpu) |")
    say("|---|---|---|---|---|")
    for k in runs:
        say(f"| {k} | {wall[k]:.3f} | {cpu[k]:.3f} | {wall['sklearn elkan'] / wall[k]:.2f} | "
            f"{cpu['sklearn elkan'] / cpu[k]:.2f} |")
    say("")
    say(f"- target >= 2x sklearn elkan: {'yes' if ratio >= 2 else 'NO'} ({ratio:.2f}x); "
        f"labels of our elkan == our lloyd: {same}")


def offsets(offs, repeats, say, N=1_000_000, d=64, K=32):
    """KMeans.predict on data far from the origin: the nearest center of raw
    rows (predict does not center them; fit does), float64, where the
    float32 screen serves the pass (d = 64, K = 32). Uniform rows plus an
    offset in every coordinate; scikit-learn's predict with the same
    centers in the same run; labels compared."""
    from sklearn.cluster import KMeans as SKMeans

    from metriclust import KMeans

    say(f"Predict on data far from the origin: {N:.0e} x {d} float64, K = {K}, uniform rows "
        "+ offset, the same centers in both libraries (medians)")
    say("")
    say("| offset | metriclust predict ms | sklearn predict ms | x sklearn (wall) "
        "| x sklearn (cpu) | labels equal |")
    say("|---|---|---|---|---|---|")
    for off in offs:
        X = np.random.default_rng(0).random((N, d)) + off
        ours = KMeans(K, n_init=1, max_iter=5, random_state=0).fit(X)
        theirs = SKMeans(K, init=ours.cluster_centers_, n_init=1, max_iter=1).fit(X[:1000])
        theirs.cluster_centers_ = ours.cluster_centers_.copy()
        runs = {"ours": ours.predict, "sklearn": theirs.predict}
        times = {k: [] for k in runs}
        labels = {k: f(X) for k, f in runs.items()}  # untimed first call
        time.sleep(0.25)
        for _ in range(repeats):
            for name, f in runs.items():
                times[name].append(timed(f, X))
        wall = {k: float(np.median([t[0] for t in v])) for k, v in times.items()}
        cpu = {k: float(np.median([t[1] for t in v])) for k, v in times.items()}
        same = float(np.mean(labels["ours"] == labels["sklearn"]))
        say(f"| {off:g} | {wall['ours'] * 1e3:.1f} | {wall['sklearn'] * 1e3:.1f} | "
            f"{wall['sklearn'] / wall['ours']:.2f} | {cpu['sklearn'] / cpu['ours']:.2f} | "
            f"{same:.6f} |")


def crossover(ds, Ks, repeats, say, N=200_000):
    """Tile (no BLAS) against BLAS per (d, K): the measurements behind
    ML_KM_TILE_MAX_D / ML_KM_TILE_MAX_K in csrc/kmeans.h."""
    from metriclust._core.threads import single_blas_thread
    from metriclust._kernels import _kmeans

    say("| dtype | d | K | tile ms/it | BLAS ms/it | BLAS / tile |")
    say("|---|---|---|---|---|---|")
    for dt in ("float64", "float32"):
        for d in ds:
            X = np.random.default_rng(d).random((N, d)).astype(dt)
            for K in Ks:
                C0 = X[:K].copy()
                res = {"direct": [], "gemm": []}
                for _ in range(repeats):
                    for method in res:
                        ts = []
                        for m in (2, 5):
                            C = C0.copy()
                            with single_blas_thread():
                                t0 = time.perf_counter()
                                _kmeans.lloyd(X, None, C, m, 0.0, method, 0)
                                ts.append(time.perf_counter() - t0)
                        res[method].append((ts[1] - ts[0]) / 3)
                t, g = np.median(res["direct"]), np.median(res["gemm"])
                say(f"| {dt} | {d} | {K} | {t * 1e3:.2f} | {g * 1e3:.2f} | {g / t:.2f} |")


def kernels(ds, Ks, repeats, say, N=200_000):
    """The no-BLAS kernels forced one by one: ms per Lloyd iteration (CPU time,
    all threads) and each one's time over the lanes kernel's."""
    from metriclust._kernels import _kmeans

    say("| dtype | d | K | auto picks | small ms/it | tile ms/it | lanes ms/it "
        "| small / lanes | tile / lanes |")
    say("|---|---|---|---|---|---|---|---|---|")
    for dt in ("float64", "float32"):
        for d in ds:
            X = np.random.default_rng(d).random((N, d)).astype(dt)
            methods = (["small"] if d <= 8 else []) + ["tile", "lanes"]
            for K in Ks:
                C0 = X[:K].copy()
                res = {m: [] for m in methods}
                for _ in range(repeats):
                    for method in methods:
                        ts = []
                        for m in (2, 5):
                            C = C0.copy()
                            c0 = time.process_time()
                            _kmeans.lloyd(X, None, C, m, 0.0, method, 0)
                            ts.append(time.process_time() - c0)
                        res[method].append((ts[1] - ts[0]) / 3)
                t = {m: float(np.median(v)) for m, v in res.items()}
                sm = f"{t['small'] * 1e3:.2f}" if "small" in t else "-"
                sr = f"{t['small'] / t['lanes']:.2f}" if "small" in t else "-"
                say(f"| {dt} | {d} | {K} | {_kmeans.kernel(d, K, 'auto', dt)} | {sm} | "
                    f"{t['tile'] * 1e3:.2f} | {t['lanes'] * 1e3:.2f} | {sr} | "
                    f"{t['tile'] / t['lanes']:.2f} |")


def pruning(ds, Ks, repeats, say, N=200_000, iters=20, dtype="float32"):
    """Lloyd against Lloyd with Hamerly's bounds (the same labels, centers and
    n_iter) per (d, K) on uniform data and on K Gaussian blobs: whole fits of
    `iters` iterations (tol=0) from the same init, process CPU time. The
    measurements behind ML_KM_PRUNE_MIN_K / ML_KM_PRUNE_MIN_D in csrc/kmeans.h
    (what algorithm="auto" chooses)."""
    from metriclust._core.kmeans import _blas_guard
    from metriclust._kernels import _kmeans

    say(f"N = {N:.0e}, {dtype}, {iters} iterations, tol = 0, CPU s per fit, median of {repeats}")
    say("")
    say("| data | d | K | n_iter | lloyd s | pruned s | lloyd / pruned | auto prunes |")
    say("|---|---|---|---|---|---|---|---|")
    for data in ("uniform", "blobs"):
        for d in ds:
            for K in Ks:
                if data == "uniform":
                    X = np.random.default_rng(d).random((N, d)).astype(dtype)
                else:
                    X = blob_data(N, d, K, np.random.default_rng(d + K), dtype)
                C0 = X[np.random.default_rng(K).choice(N, K, replace=False)].copy()
                res = {"lloyd": [], "hamerly": []}
                out = {}
                for _ in range(repeats):
                    for name in res:
                        C = C0.copy()
                        with _blas_guard(d, K):  # as KMeans.fit holds BLAS
                            c0 = time.process_time()
                            out[name] = getattr(_kmeans, name)(X, None, C, iters, 0.0,
                                                               "auto", 0)
                            res[name].append(time.process_time() - c0)
                assert np.array_equal(out["lloyd"][0], out["hamerly"][0])
                assert out["lloyd"][2] == out["hamerly"][2]
                t = {k: float(np.median(v)) for k, v in res.items()}
                say(f"| {data} | {d} | {K} | {out['lloyd'][2]} | {t['lloyd']:.3f} | "
                    f"{t['hamerly']:.3f} | {t['lloyd'] / t['hamerly']:.2f} | "
                    f"{'yes' if _kmeans.prefers_pruning(d, K) else 'no'} |")


SEEDING_SHAPES = [(1_000_000, 64, 32, "float64"), (1_000_000, 20, 5, "float64"),
                  (200_000, 16, 256, "float32"), (1_000_000, 2, 8, "float64")]


def seeding(shapes, repeats, say):
    """k-means++ seeding and whole short fits, metriclust against scikit-learn."""
    from metriclust import KMeans
    from metriclust._core.kmeans import kmeans_plusplus
    from sklearn.cluster import KMeans as SKMeans
    from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus

    say("| N | d | K | dtype | what | metriclust s | sklearn s | x sklearn (wall) "
        "| x sklearn (cpu) | n_iter ours / sklearn |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    for N, d, K, dt in shapes:
        X = np.random.default_rng(0).random((N, d)).astype(dt)
        Xc = X - X.mean(axis=0).astype(dt)
        runs = {
            "seeding": {"ours": lambda: kmeans_plusplus(Xc, K, random_state=0),
                        "sklearn": lambda: sk_kmeans_plusplus(Xc, K, random_state=0)},
            # one iteration: the fit's own costs (moments, the centered copy,
            # the seeding and its row order) dominate
            "fit, max_iter=1": {
                "ours": lambda: KMeans(K, n_init=1, max_iter=1, random_state=0).fit(X),
                "sklearn": lambda: SKMeans(K, n_init=1, max_iter=1,
                                           random_state=0).fit(X)},
            "fit, max_iter=10": {
                "ours": lambda: KMeans(K, n_init=1, max_iter=10, random_state=0).fit(X),
                "sklearn": lambda: SKMeans(K, n_init=1, max_iter=10,
                                           random_state=0).fit(X)},
        }
        for what, libs in runs.items():
            times = {k: [] for k in libs}
            iters = {}
            for fit in libs.values():  # one-time costs untimed
                fit()
            for _ in range(repeats):
                for name, fit in libs.items():
                    w, c, model = timed(fit)
                    times[name].append((w, c))
                    iters[name] = getattr(model, "n_iter_", None)
            wall = {k: float(np.median([t[0] for t in v])) for k, v in times.items()}
            cpu = {k: float(np.median([t[1] for t in v])) for k, v in times.items()}
            it = (f"{iters['ours']} / {iters['sklearn']}" if iters["ours"] is not None
                  else "-")
            say(f"| {N:.0e} | {d} | {K} | {dt} | {what} | {wall['ours']:.3f} | "
                f"{wall['sklearn']:.3f} | {wall['sklearn'] / wall['ours']:.2f} | "
                f"{cpu['sklearn'] / cpu['ours']:.2f} | {it} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N=2e5 and every other row")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="also write the markdown here")
    ap.add_argument("--spin", action="store_true",
                    help="leave OMP_WAIT_POLICY alone (OpenMP's default spinning)")
    ap.add_argument("--crossover", action="store_true",
                    help="tile vs BLAS per (d, K) instead of the peer table")
    ap.add_argument("--kernels", action="store_true",
                    help="the no-BLAS kernels (small-d, tile, lanes) per (d, K)")
    ap.add_argument("--pruning", action="store_true",
                    help="lloyd vs Hamerly-pruned lloyd per (d, K), uniform and blob data")
    ap.add_argument("--offsets", type=float, nargs="*", default=None,
                    help="predict on data this far from the origin (d = 64, K = 32, "
                         "float64) instead of the peer table")
    ap.add_argument("--seeding", action="store_true",
                    help="k-means++ seeding and whole short fits against scikit-learn")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                    help="the data's dtype for --pruning")
    ap.add_argument("--d", type=int, nargs="*", default=[16, 64, 128])
    ap.add_argument("--K", type=int, nargs="*", default=[8, 32, 64, 128, 256])
    ap.add_argument("--n", type=int, default=200_000,
                    help="rows for --crossover (fewer for large K)")
    ap.add_argument("--no-elkan", action="store_true", help="skip the pruning rows")
    ap.add_argument("--elkan-dtype", nargs="+", default=["float32"],
                    choices=["float32", "float64"],
                    help="the pruning rows' dtypes (the issue's row is float32)")
    ap.add_argument("--diff", type=int, default=None,
                    help="time (max_iter = 2 + DIFF) - (max_iter = 2) (default 4 or 8 by "
                         "size); many threads make an iteration short next to a fit's "
                         "setup, and need more")
    ap.add_argument("--threads", type=int, nargs="*", default=None,
                    help="the peer table once per OpenMP thread count (threadpoolctl), "
                         "then a scaling summary; no elkan rows")
    ap.add_argument("--shapes", nargs="*", default=None,
                    help="N,d,K,float32|float64 ...: these rows instead of the issue's")
    ap.add_argument("--rows", type=int, nargs="*", default=None,
                    help="only these rows of the peer table (0-based indices into ROWS), "
                         "to split a run into several shorter ones")
    args = ap.parse_args()

    nt = _threads()
    try:
        import faiss

        faiss.omp_set_num_threads(nt)
        have_faiss = True
    except ImportError:
        have_faiss = False

    lines = []

    def say(s):
        lines.append(s)
        print(s, flush=True)

    rows = QUICK_ROWS if args.quick else ROWS
    if args.rows is not None:
        rows = [rows[i] for i in args.rows]
    if args.shapes:  # rows of the table's form without a target
        rows = [(int(float(N)), int(d), int(K), dt, None, None)
                for N, d, K, dt in (sh.split(",") for sh in args.shapes)]
    if args.threads:  # one machine header per thread count
        thread_scaling(args.threads, rows, args.repeats, have_faiss, say, args.diff)
    else:
        head, bw, gemm = machine_header(nt)
        for s in head + [""]:
            say(s)
        if args.crossover:
            crossover(args.d, args.K, args.repeats, say, args.n)
        elif args.kernels:
            kernels(args.d, args.K, args.repeats, say)
        elif args.pruning:
            pruning(args.d, args.K, args.repeats, say, dtype=args.dtype)
        elif args.seeding:
            seeding([(int(float(N)), int(d), int(K), dt) for N, d, K, dt in
                     (sh.split(",") for sh in args.shapes)] if args.shapes
                    else SEEDING_SHAPES, args.repeats, say)
        elif args.offsets is not None:
            offsets(args.offsets or [0.0, 10.0, 1e4], args.repeats, say)
        else:
            lloyd_rows(rows, args.repeats, bw, gemm, have_faiss, say, args.diff)
            if not args.no_elkan:
                for dt in args.elkan_dtype:
                    elkan_rows(args.repeats, say, dtype=dt)
    load = os.getloadavg()
    say(f"\n- load average at end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
