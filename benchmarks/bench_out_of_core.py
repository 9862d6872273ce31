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

Usage: python benchmarks/bench_out_of_core.py --rows N [--features 16] [--clusters 16]
           [--dir DIR] [--diff 3] [--repeats 2] [--skip ram sklearn] [--keep]
       python benchmarks/bench_out_of_core.py --cpcm --rows 60000000 --features 20
           --clusters 5 [--skip ram] [--dir DIR] [--keep]
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
    args = ap.parse_args()
    if args.cpcm:
        return main_cpcm(args)

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
    if len(sys.argv) > 1 and sys.argv[1] == "--cpcm-child":
        cpcm_child(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main()
