"""KMeans on data larger than memory: peak anonymous memory and seconds per iteration.

The data, float32 uniform in the unit cube (Lloyd does not converge in a few
iterations there), are written block by block to ``DIR/X.npy``. Every fit runs
in a fresh child process (so that each one's memory is its own) from the same
initial centers with tol=0 and n_init=1, once with ``max_iter = 2`` and once
with ``2 + diff``: (t2 - t1) / diff is the time of one Lloyd iteration, free
of setup, seeding and final-pass costs. The file is read once before timing,
so the page cache holds it ("once cached").

Contenders:

- ``memmap``: ``metriclust.KMeans().fit(np.load(X.npy, mmap_mode="r"))``,
  Lloyd passes over 64 MiB row blocks;
- ``ram``: the same data loaded with ``np.load`` (in memory), the in-memory
  C Lloyd;
- ``sklearn``: ``sklearn.cluster.KMeans(algorithm="lloyd")`` on the memmap,
  which it copies into memory (``copy_x``).

Memory is the child's peak RssAnon (anonymous pages: the heap, numpy arrays;
not the file's page cache), sampled every 10 ms from /proc/self/status,
interpreter and libraries included. ``--skip`` leaves contenders out (on the
full-size data, ``ram`` and ``sklearn`` need two copies of X: 18 GB for 9 GB).

CPCM (``--cpcm``): CPCM linear (``n_init=3``, ``random_state=0``) on float32
blobs (K well-separated Gaussian clusters in p dimensions, written block by
block to ``DIR/blobs.npy``), fitted in a fresh child process on the memmap
(``memmap``) and, unless skipped, on the same data loaded in RAM (``ram``);
the table gives seconds, peak RssAnon, blur ratio, iterations and whether the
labels are equal (compared in the parent, from the labels each child saved).

MMC and CPD-UML (``--mmc``, ``--cpduml``; issue #11's remaining methods):
float32 blobs with their labels (``DIR/lblobs.npy``), each fit in a fresh
child process on the memmap and on the data in RAM. ``--mmc``: MMC (full A,
tol=1e-6) with 1000 similar pairs drawn from the labels and D = all pairs not
in S (the block-pair sums; ``--block-rows``); the table adds J and the
relative difference of A against the RAM fit. ``--cpduml``: CPDUML with the
Nystrom path (sigma=0.5, lam=1e-3, n_components=50, n_init=1, max_iter=10,
random_state=0); the table adds J and the adjusted Rand index of the two
partitions (past 100,000 rows the out-of-core k-means++ seeds on a 100,000-row
sample, so the starts may differ).

Usage: python benchmarks/bench_out_of_core.py --rows N [--features 16] [--clusters 16]
           [--dir DIR] [--diff 3] [--repeats 2] [--skip ram sklearn] [--keep]
       python benchmarks/bench_out_of_core.py --cpcm --rows 60000000 --features 20
           --clusters 5 [--skip ram] [--dir DIR] [--keep]
       python benchmarks/bench_out_of_core.py --mmc --rows 20000 --features 8 --clusters 4
           [--block-rows 5000]
       python benchmarks/bench_out_of_core.py --cpduml --rows 1000000 --features 8 --clusters 4
"""

import _common  # noqa: I001  (first: sets the OpenMP wait policy)

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np


def rss_anon():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakSampler:
    """Peak RssAnon of this process, sampled by a thread every ``period`` s."""

    def __init__(self, period=0.01):
        self.period, self.peak, self._stop = period, rss_anon(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.period):
            self.peak = max(self.peak, rss_anon())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_anon())


def child(kind, path, init_path, max_iter):
    """One fit in this (fresh) process; prints a JSON line."""
    init = np.load(init_path)
    base = rss_anon()
    with PeakSampler() as mem:
        if kind == "ram":
            X = np.load(path)
        else:
            X = np.load(path, mmap_mode="r")
        t0 = time.perf_counter()
        if kind == "sklearn":
            from sklearn.cluster import KMeans as Peer

            km = Peer(len(init), init=init, n_init=1, max_iter=max_iter, tol=0,
                      algorithm="lloyd").fit(X)
        else:
            from metriclust import KMeans

            km = KMeans(len(init), init=init, n_init=1, max_iter=max_iter, tol=0).fit(X)
        seconds = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "max_iter": max_iter, "seconds": seconds,
                      "n_iter": int(km.n_iter_), "peak_rss_anon": mem.peak,
                      "base_rss_anon": base, "inertia": float(km.inertia_)}))


def cpcm_child(kind, path, out_path):
    """One CPCM fit in this (fresh) process; prints a JSON line, saves the labels."""
    base = rss_anon()
    with PeakSampler() as mem:
        X = np.load(path) if kind == "ram" else np.load(path, mmap_mode="r")
        t0 = time.perf_counter()
        from metriclust import CPCM

        est = CPCM(int(os.environ.get("BENCH_K", "5")), n_init=3, random_state=0).fit(X)
        seconds = time.perf_counter() - t0
    np.save(out_path, np.asarray(est.labels_))
    print(json.dumps({"kind": kind, "seconds": seconds, "peak_rss_anon": mem.peak,
                      "base_rss_anon": base, "blur_ratio": float(est.blur_ratio_),
                      "n_iter": int(est.n_iter_), "best_start": est.best_start_,
                      "search_size": int(est.search_size_)}))


def method_child(method, kind, path, out_path, block_rows):
    """One MMC or CPDUML fit in this (fresh) process; prints a JSON line, saves the result."""
    import warnings

    base = rss_anon()
    with PeakSampler() as mem:
        X = np.load(path) if kind == "ram" else np.load(path, mmap_mode="r")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "mmc":
                from metriclust import MMC

                S = np.load(path + ".similar.npy")
                kw = {} if kind == "ram" else {"block_rows": block_rows}
                est = MMC(tol=1e-6).fit(X, similar=S, **kw)
                result, J = est.metric_, est.objective_
            else:
                from metriclust import CPDUML

                est = CPDUML(int(os.environ.get("BENCH_K", "4")), sigma=0.5, lam=1e-3,
                             approximation="nystrom", n_components=50, n_init=1,
                             max_iter=10, random_state=0).fit(X)
                result, J = np.asarray(est.labels_), est.objective_
        seconds = time.perf_counter() - t0
    np.save(out_path, result)
    print(json.dumps({"kind": kind, "seconds": seconds, "peak_rss_anon": mem.peak,
                      "base_rss_anon": base, "objective": float(J),
                      "n_iter": int(est.n_iter_)}))


def write_labelled_blobs(path, n, d, k, n_similar=1000, block=1 << 20, seed=0):
    """``write_blobs``'s clusters, plus ``n_similar`` same-cluster pairs (``path.similar.npy``)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(k, d)).astype(np.float32)
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    y = np.empty(n, dtype=np.int64)
    for s in range(0, n, block):
        e = min(n, s + block)
        y[s:e] = rng.integers(k, size=e - s)
        X[s:e] = centers[y[s:e]] + rng.standard_normal((e - s, d), dtype=np.float32)
    X.flush()
    del X
    S = []
    while len(S) < n_similar:
        i, j = rng.integers(n, size=2)
        if i != j and y[i] == y[j]:
            S.append((i, j))
    np.save(path + ".similar.npy", np.array(S, dtype=np.int64))
    np.save(path + ".y.npy", y)


def main_method(args, method):
    from metriclust._core.threads import effective_n_threads
    from metriclust.metrics import adjusted_rand_index

    directory = args.dir or tempfile.mkdtemp(prefix="bench-ooc-")
    os.makedirs(directory, exist_ok=True)
    n, d, k = args.rows, args.features, args.clusters
    path = os.path.join(directory, f"lblobs-{n}-{d}-{k}.npy")
    lines, _ = _common.machine_header(f"bench_out_of_core --{method}", effective_n_threads())
    print("\n".join(lines))
    if not os.path.exists(path + ".y.npy"):
        write_labelled_blobs(path, n, d, k)
    warm_page_cache(path)
    what = ("MMC(tol=1e-6), full A, 1000 similar pairs, D = all pairs not in S, "
            f"block_rows={args.block_rows}" if method == "mmc" else
            "CPDUML(K, sigma=0.5, lam=1e-3, approximation='nystrom', n_components=50, "
            "n_init=1, max_iter=10, random_state=0)")
    print(f"data: {n:,} x {d} float32 blobs, K = {k} ({n * d * 4 / 1e6:.1f} MB); {what}; "
          f"load average {_common.load_average():.1f}", flush=True)
    kinds = [c for c in ("memmap", "ram") if c not in args.skip]
    res = {}
    for c in kinds:
        out = os.path.join(directory, f"{method}-{c}.npy")
        r = subprocess.run([sys.executable, __file__, "--method-child", method, c, path, out,
                            str(args.block_rows)], capture_output=True, text=True,
                           env=dict(os.environ, BENCH_K=str(k)))
        res[c] = (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else
                  {"kind": c, "error": r.stderr.strip()[-300:]})
        print("  ", json.dumps(res[c]), flush=True)
    agree = "-"
    ok = all("error" not in res.get(c, {"error": 1}) for c in ("memmap", "ram"))
    if ok:
        a, b = (np.load(os.path.join(directory, f"{method}-{c}.npy")) for c in ("memmap", "ram"))
        agree = (float(np.linalg.norm(a - b) / np.linalg.norm(b)) if method == "mmc" else
                 float(adjusted_rand_index(b, a)))
    print()
    print(_common.markdown_table(["fit", "seconds", "peak RssAnon (MB)", "J", "iterations",
                                  "rel. Frobenius diff of A vs ram" if method == "mmc" else
                                  "ARI vs ram"]))
    for c in kinds:
        r = res[c]
        if "error" in r:
            print(_common.markdown_row([c, "failed", "", "", "", r["error"][-80:]]))
        else:
            print(_common.markdown_row([c, r["seconds"], r["peak_rss_anon"] / 1e6,
                                        r["objective"], r["n_iter"],
                                        agree if c == "memmap" else "-"]))
    print(f"\nload average at end {_common.load_average():.1f}")
    if not args.keep and args.dir is None:
        shutil.rmtree(directory, ignore_errors=True)


def write_blobs(path, n, d, k, block=1 << 20, seed=0):
    """K Gaussian clusters (centers N(0, 3^2 I), unit noise), float32, block by block."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(k, d)).astype(np.float32)
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    for s in range(0, n, block):
        e = min(n, s + block)
        y = rng.integers(k, size=e - s)
        X[s:e] = centers[y] + rng.standard_normal((e - s, d), dtype=np.float32)
    X.flush()
    del X


def main_cpcm(args):
    from metriclust._core.threads import effective_n_threads

    directory = args.dir or tempfile.mkdtemp(prefix="bench-ooc-")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "blobs.npy")
    n, d, k = args.rows, args.features, args.clusters
    lines, _ = _common.machine_header("bench_out_of_core --cpcm", effective_n_threads())
    print("\n".join(lines))
    t0 = time.perf_counter()
    if not (os.path.exists(path) and np.load(path, mmap_mode="r").shape == (n, d)):
        write_blobs(path, n, d, k)
    warm_page_cache(path)
    print(f"data: {n:,} x {d} float32 blobs, K = {k} = {n * d * 4 / 1e9:.2f} GB at {path} "
          f"(written/read in {time.perf_counter() - t0:.0f} s); CPCM(K, n_init=3, "
          f"random_state=0), linear; load average {_common.load_average():.1f}", flush=True)
    kinds = [c for c in ("memmap", "ram") if c not in args.skip]
    res = {}
    for c in kinds:
        out = os.path.join(directory, f"labels-{c}.npy")
        env = dict(os.environ, BENCH_K=str(k))
        r = subprocess.run([sys.executable, __file__, "--cpcm-child", c, path, out],
                           capture_output=True, text=True, env=env)
        res[c] = (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else
                  {"kind": c, "error": r.stderr.strip()[-300:]})
        print("  ", json.dumps(res[c]), flush=True)
    same = "-"
    if all("error" not in res.get(c, {"error": 1}) for c in ("memmap", "ram")):
        same = bool(np.array_equal(np.load(os.path.join(directory, "labels-memmap.npy")),
                                   np.load(os.path.join(directory, "labels-ram.npy"))))
    print()
    print(_common.markdown_table(["fit", "seconds", "peak RssAnon (GB)", "blur ratio",
                                  "iterations", "labels = ram"]))
    for c in kinds:
        r = res[c]
        if "error" in r:
            print(_common.markdown_row([c, "failed", "", "", "", r["error"][-80:]]))
        else:
            print(_common.markdown_row([c, r["seconds"], r["peak_rss_anon"] / 1e9,
                                        r["blur_ratio"], r["n_iter"], same]))
    print(f"\nload average at end {_common.load_average():.1f}")
    if not args.keep and args.dir is None:
        shutil.rmtree(directory, ignore_errors=True)


def write_data(path, n, d, block=1 << 21, seed=0):
    rng = np.random.default_rng(seed)
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    for s in range(0, n, block):
        e = min(n, s + block)
        X[s:e] = rng.random((e - s, d), dtype=np.float32)
    X.flush()
    del X


def warm_page_cache(path):
    with open(path, "rb") as fh:
        while fh.read(64 << 20):
            pass


def run_child(kind, path, init_path, max_iter):
    out = subprocess.run([sys.executable, __file__, "--child", kind, path, init_path,
                          str(max_iter)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"kind": kind, "max_iter": max_iter, "error": out.stderr.strip()[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--clusters", type=int, default=16)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--diff", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip", nargs="*", default=[], choices=["memmap", "ram", "sklearn"])
    ap.add_argument("--keep", action="store_true", help="keep DIR/X.npy")
    ap.add_argument("--spin", action="store_true")
    ap.add_argument("--cpcm", action="store_true", help="CPCM linear instead of KMeans")
    ap.add_argument("--mmc", action="store_true", help="MMC, D = all pairs not in S")
    ap.add_argument("--cpduml", action="store_true", help="CPDUML, Nystrom path")
    ap.add_argument("--block-rows", type=int, default=5000, help="MMC's block rows")
    args = ap.parse_args()
    if args.cpcm:
        return main_cpcm(args)
    if args.mmc or args.cpduml:
        return main_method(args, "mmc" if args.mmc else "cpduml")

    from metriclust._core.threads import effective_n_threads

    directory = args.dir or tempfile.mkdtemp(prefix="bench-ooc-")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "X.npy")
    init_path = os.path.join(directory, "init.npy")
    n, d, k = args.rows, args.features, args.clusters
    lines, _ = _common.machine_header("bench_out_of_core", effective_n_threads())
    print("\n".join(lines))
    t0 = time.perf_counter()
    if not (os.path.exists(path) and np.load(path, mmap_mode="r").shape == (n, d)):
        write_data(path, n, d)
    np.save(init_path, np.load(path, mmap_mode="r")[: k * 1000 : 1000].copy())
    warm_page_cache(path)
    gb = n * d * 4 / 1e9
    print(f"data: {n:,} x {d} float32 = {gb:.2f} GB at {path} (written/read in "
          f"{time.perf_counter() - t0:.0f} s), K = {k}; max_iter 2 and {2 + args.diff}, "
          f"tol=0, {args.repeats} interleaved repeats, medians")
    kinds = [c for c in ("memmap", "ram", "sklearn") if c not in args.skip]
    results = {c: {2: [], 2 + args.diff: []} for c in kinds}
    for _ in range(args.repeats):
        for c in kinds:
            for m in (2, 2 + args.diff):
                r = run_child(c, path, init_path, m)
                results[c][m].append(r)
                print("  ", json.dumps(r), flush=True)
    print()
    print(_common.markdown_table(["contender", "s / iteration", "ratio vs ram",
                                  "peak RssAnon (GB)", "n_iter ok"]))
    per_iter, rows = {}, {}
    for c in kinds:
        ok = [r for rs in results[c].values() for r in rs if "error" not in r]
        if len(ok) < 2 * args.repeats:
            err = next(r["error"] for rs in results[c].values() for r in rs if "error" in r)
            rows[c] = [c, "failed", "", "", err.splitlines()[-1][:80]]
            continue
        t = {m: float(np.median([r["seconds"] for r in rs])) for m, rs in results[c].items()}
        per_iter[c] = (t[2 + args.diff] - t[2]) / args.diff
        peak = max(r["peak_rss_anon"] for r in ok) / 1e9
        n_ok = all(r["n_iter"] == r["max_iter"] for r in ok)
        rows[c] = [c, per_iter[c], None, peak, "yes" if n_ok else "no"]
    for c in kinds:
        if c in per_iter:
            rows[c][2] = per_iter[c] / per_iter["ram"] if "ram" in per_iter else "(no ram run)"
        print(_common.markdown_row(rows[c]))
    print(f"\nload average at end {_common.load_average():.1f}")
    if not args.keep and args.dir is None:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--method-child":
        method_child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--cpcm-child":
        cpcm_child(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main()
