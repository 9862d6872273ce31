"""KMeans on data larger than memory: peak anonymous memory and seconds per iteration.

The data, float32 uniform in the unit cube (Lloyd does not converge in a few
iterations there), are written block by block to ``DIR/X.npy``; the file is
read once before timing, so the page cache holds it ("once cached"). Every
contender fits from the same initial centers with tol=0, n_init=1 and
``algorithm="lloyd"`` (``--algorithm``: in memory "auto" may pick Hamerly's
pruning, which skips distance computations a memmap pass does not; the
comparison is like for like by default).

Contenders:

- ``memmap``: ``metriclust.KMeans().fit(np.load(X.npy, mmap_mode="r"))``,
  Lloyd passes over 64 MiB row blocks;
- ``ram``: the same data loaded with ``np.load`` (in memory), the in-memory
  C Lloyd;
- ``sklearn``: ``sklearn.cluster.KMeans(algorithm="lloyd")`` on the memmap,
  which it copies into memory (``copy_x``).

Time: one child process holds every contender (the memmap mapped, the data
loaded for ``ram``) and fits each at ``max_iter = m1`` and ``m2`` (``--iters``,
default 2 and 12), contenders interleaved, ``--repeats`` times: seconds per
iteration = (t(m2) - t(m1)) / (m2 - m1) of each repeat, wall and process CPU
time (steadier on a loaded machine), medians; every fit's ``n_iter_`` is
checked against ``max_iter`` (a fit that stopped early would make the
difference meaningless). The memmap fits also time each Lloyd pass inside
the loop (``verbose=2``), a direct per-iteration figure. The ``ram`` fit's
set-up (checks, mean and variance, a centred copy of X: seconds at these sizes)
varies from fit to fit by more than ten iterations take on a loaded machine,
so the in-memory C Lloyd loop is also timed alone (``ram, C loop``: the same
difference, on X centred once in the child): the like-for-like figure.

Memory: every contender fits once (``max_iter = m1``) in a fresh child
process; its peak RssAnon (anonymous pages: the heap, numpy arrays; not the
file's page cache), sampled every 10 ms from /proc/self/status, interpreter
and libraries included. ``--skip`` leaves contenders out (on the full-size
data, ``ram`` and ``sklearn`` need two copies of X: 18 GB for 9 GB).

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
           [--dir DIR] [--iters 2 12] [--repeats 3] [--skip ram sklearn] [--keep]
           [--algorithm lloyd]
       python benchmarks/bench_out_of_core.py --cpcm --rows 60000000 --features 20
           --clusters 5 [--skip ram] [--dir DIR] [--keep]
       python benchmarks/bench_out_of_core.py --mmc --rows 20000 --features 8 --clusters 4
           [--block-rows 5000]
       python benchmarks/bench_out_of_core.py --cpduml --rows 1000000 --features 8 --clusters 4
"""

import _common  # noqa: I001  (first: sets the OpenMP wait policy)

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

import numpy as np


class PeakSampler:
    """Peak RssAnon of this process, sampled by a thread every ``period`` s."""

    def __init__(self, period=0.01):
        self.period, self.peak, self._stop = period, _common.rss_anon_bytes(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.period):
            self.peak = max(self.peak, _common.rss_anon_bytes())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _common.rss_anon_bytes())


def run_children(kinds, argv_of, env=None):
    """One fresh child process per contender (``argv_of(kind)``: its arguments after
    this script); each result (the child's JSON line, or its error) printed as it comes."""
    res = {}
    for c in kinds:
        res[c] = dict(_common.run_json_child([sys.executable, __file__] + argv_of(c), env=env),
                      kind=c)
        print("  ", json.dumps(res[c]), flush=True)
    return res


def print_rows(headers, kinds, res, cells):
    """The table: one row per contender, ``cells(result)`` for those that ran."""
    print()
    print(_common.markdown_table(headers))
    for c in kinds:
        r = res[c]
        bad = r.get("error") or (f"timed out ({r['timeout']} s)" if "timeout" in r else None)
        print(_common.markdown_row([c, "failed", str(bad)[-80:]] if bad else [c] + cells(r)))
    print(f"\nload average at end {_common.load_average():.1f}")


def _fit(kind, X, init, max_iter, algorithm, verbose=0):
    if kind == "sklearn":
        from sklearn.cluster import KMeans as Peer

        return Peer(len(init), init=init, n_init=1, max_iter=max_iter, tol=0,
                    algorithm="lloyd").fit(X)
    from metriclust import KMeans

    return KMeans(len(init), init=init, n_init=1, max_iter=max_iter, tol=0,
                  algorithm=algorithm, verbose=verbose).fit(X)


def _load(kind, path):
    return np.load(path) if kind == "ram" else np.load(path, mmap_mode="r")


def child(kind, path, init_path, max_iter, algorithm):
    """One fit in this (fresh) process: its seconds and peak RssAnon, as a JSON line."""
    init = np.load(init_path)
    base = _common.rss_anon_bytes()
    with PeakSampler() as mem:
        X = _load(kind, path)
        t0 = time.perf_counter()
        km = _fit(kind, X, init, max_iter, algorithm)
        seconds = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "max_iter": max_iter, "seconds": seconds,
                      "n_iter": int(km.n_iter_), "peak_rss_anon": mem.peak,
                      "base_rss_anon": base, "inertia": float(km.inertia_)}))


_PASS_LINE = re.compile(r"iteration \d+: .*, ([0-9.]+) s$")


def timing_child(path, init_path, m1, m2, repeats, kinds, algorithm):
    """Seconds per iteration of every contender, interleaved in this one process.

    For each repeat and contender: a fit at ``max_iter = m1`` and one at ``m2``;
    (t2 - t1) / (m2 - m1) in wall and process CPU seconds. The memmap fits run
    with ``verbose=2``: the seconds of each Lloyd pass, timed in the loop.
    """
    init = np.load(init_path)
    data = {c: _load(c, path) for c in kinds}
    if "ram" in kinds:      # the in-memory C Lloyd loop alone, on X centred once
        from metriclust._core.threads import effective_n_threads
        from metriclust._kernels import _kmeans

        mean = data["ram"].mean(axis=0, dtype=np.float64).astype(np.float32)
        Xc, C0, nt = data["ram"] - mean, init - mean, effective_n_threads()
        kinds = kinds + ["ram, C loop"]
    out = {c: {"wall": [], "cpu": [], "n_iter_ok": True, "passes": []} for c in kinds}

    def fit(c, m):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            t0, c0 = time.perf_counter(), time.process_time()
            if c == "ram, C loop":
                n_iter = _kmeans.lloyd(Xc, None, C0.copy(), m, 0.0, "auto", nt)[2]
            else:
                n_iter = _fit(c, data[c], init, m, algorithm,
                              verbose=2 if c == "memmap" else 0).n_iter_
            t, cpu = time.perf_counter() - t0, time.process_time() - c0
        out[c]["n_iter_ok"] &= int(n_iter) == m
        out[c]["passes"] += [float(g.group(1)) for g in map(_PASS_LINE.search,
                                                            buf.getvalue().splitlines()) if g]
        return t, cpu

    for c in kinds:                         # warm-up: imports, first page faults
        fit(c, m1)
    for _ in range(repeats):
        for c in kinds:
            t1, c1 = fit(c, m1)
            t2, c2 = fit(c, m2)
            out[c]["wall"].append((t2 - t1) / (m2 - m1))
            out[c]["cpu"].append((c2 - c1) / (m2 - m1))
    print(json.dumps(out))


def cpcm_child(kind, path, out_path):
    """One CPCM fit in this (fresh) process; prints a JSON line, saves the labels."""
    base = _common.rss_anon_bytes()
    with PeakSampler() as mem:
        X = _load(kind, path)
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

    base = _common.rss_anon_bytes()
    with PeakSampler() as mem:
        X = _load(kind, path)
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


def write_blobs(path, n, d, k, block=1 << 20, seed=0, n_similar=0):
    """K Gaussian clusters (centers N(0, 3^2 I), unit noise), float32, block by block;
    with ``n_similar``, also that many same-cluster pairs (``path.similar.npy``) and
    the labels (``path.y.npy``)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(k, d)).astype(np.float32)
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    y = np.empty(n, dtype=np.int64) if n_similar else None
    for s in range(0, n, block):
        e = min(n, s + block)
        yb = rng.integers(k, size=e - s)
        X[s:e] = centers[yb] + rng.standard_normal((e - s, d), dtype=np.float32)
        if y is not None:
            y[s:e] = yb
    X.flush()
    del X
    if n_similar:
        S = []
        while len(S) < n_similar:
            i, j = rng.integers(n, size=2)
            if i != j and y[i] == y[j]:
                S.append((i, j))
        np.save(path + ".similar.npy", np.array(S, dtype=np.int64))
        np.save(path + ".y.npy", y)


def _workdir(args):
    directory = args.dir or tempfile.mkdtemp(prefix="bench-ooc-")
    os.makedirs(directory, exist_ok=True)
    return directory


def _done(args, directory):
    if not args.keep and args.dir is None:
        shutil.rmtree(directory, ignore_errors=True)


def _header(name):
    from metriclust._core.threads import effective_n_threads

    lines, _ = _common.machine_header(name, effective_n_threads())
    print("\n".join(lines))


def main_method(args, method):
    from metriclust.metrics import adjusted_rand_index

    directory = _workdir(args)
    n, d, k = args.rows, args.features, args.clusters
    path = os.path.join(directory, f"lblobs-{n}-{d}-{k}.npy")
    _header(f"bench_out_of_core --{method}")
    if not os.path.exists(path + ".y.npy"):
        write_blobs(path, n, d, k, n_similar=1000)
    warm_page_cache(path)
    what = ("MMC(tol=1e-6), full A, 1000 similar pairs, D = all pairs not in S, "
            f"block_rows={args.block_rows}" if method == "mmc" else
            "CPDUML(K, sigma=0.5, lam=1e-3, approximation='nystrom', n_components=50, "
            "n_init=1, max_iter=10, random_state=0)")
    print(f"data: {n:,} x {d} float32 blobs, K = {k} ({n * d * 4 / 1e6:.1f} MB); {what}; "
          f"load average {_common.load_average():.1f}", flush=True)
    kinds = [c for c in ("memmap", "ram") if c not in args.skip]
    out = {c: os.path.join(directory, f"{method}-{c}.npy") for c in kinds}
    res = run_children(kinds, lambda c: ["--method-child", method, c, path, out[c],
                                         args.block_rows],
                       env=dict(os.environ, BENCH_K=str(k)))
    agree = "-"
    if all("seconds" in res.get(c, {}) for c in ("memmap", "ram")):
        a, b = (np.load(out[c]) for c in ("memmap", "ram"))
        agree = (float(np.linalg.norm(a - b) / np.linalg.norm(b)) if method == "mmc" else
                 float(adjusted_rand_index(b, a)))
    print_rows(["fit", "seconds", "peak RssAnon (MB)", "J", "iterations",
                "rel. Frobenius diff of A vs ram" if method == "mmc" else "ARI vs ram"],
               kinds, res, lambda r: [r["seconds"], r["peak_rss_anon"] / 1e6, r["objective"],
                                      r["n_iter"], agree if r["kind"] == "memmap" else "-"])
    _done(args, directory)


def main_cpcm(args):
    directory = _workdir(args)
    path = os.path.join(directory, "blobs.npy")
    n, d, k = args.rows, args.features, args.clusters
    _header("bench_out_of_core --cpcm")
    t0 = time.perf_counter()
    if not (os.path.exists(path) and np.load(path, mmap_mode="r").shape == (n, d)):
        write_blobs(path, n, d, k)
    warm_page_cache(path)
    print(f"data: {n:,} x {d} float32 blobs, K = {k} = {n * d * 4 / 1e9:.2f} GB at {path} "
          f"(written/read in {time.perf_counter() - t0:.0f} s); CPCM(K, n_init=3, "
          f"random_state=0), linear; load average {_common.load_average():.1f}", flush=True)
    kinds = [c for c in ("memmap", "ram") if c not in args.skip]
    out = {c: os.path.join(directory, f"labels-{c}.npy") for c in kinds}
    res = run_children(kinds, lambda c: ["--cpcm-child", c, path, out[c]],
                       env=dict(os.environ, BENCH_K=str(k)))
    same = "-"
    if all("seconds" in res.get(c, {}) for c in ("memmap", "ram")):
        same = bool(np.array_equal(np.load(out["memmap"]), np.load(out["ram"])))
    print_rows(["fit", "seconds", "peak RssAnon (GB)", "blur ratio", "iterations",
                "labels = ram"], kinds, res,
               lambda r: [r["seconds"], r["peak_rss_anon"] / 1e9, r["blur_ratio"],
                          r["n_iter"], same])
    _done(args, directory)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--clusters", type=int, default=16)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--iters", type=int, nargs=2, default=[2, 12], metavar=("M1", "M2"),
                    help="max_iter of the two fits whose difference times an iteration")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--algorithm", default="lloyd", help="metriclust's KMeans algorithm")
    ap.add_argument("--skip", nargs="*", default=[], choices=["memmap", "ram", "sklearn"])
    ap.add_argument("--skip-memory", action="store_true", help="no memory children")
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

    from metriclust._kernels import _kmeans

    directory = _workdir(args)
    path = os.path.join(directory, "X.npy")
    init_path = os.path.join(directory, "init.npy")
    n, d, k = args.rows, args.features, args.clusters
    m1, m2 = args.iters
    _header("bench_out_of_core")
    t0 = time.perf_counter()
    if not (os.path.exists(path) and np.load(path, mmap_mode="r").shape == (n, d)):
        write_data(path, n, d)
    np.save(init_path, np.load(path, mmap_mode="r")[: k * 1000 : 1000].copy())
    warm_page_cache(path)
    print(f"data: {n:,} x {d} float32 = {n * d * 4 / 1e9:.2f} GB at {path} (written/read in "
          f"{time.perf_counter() - t0:.0f} s), K = {k}; algorithm={args.algorithm!r} "
          f"(in memory 'auto' would prune: {bool(_kmeans.prefers_pruning(d, k))}); max_iter "
          f"{m1} and {m2}, tol=0, {args.repeats} interleaved repeats, medians; load average "
          f"{_common.load_average():.1f}", flush=True)
    kinds = [c for c in ("memmap", "ram", "sklearn") if c not in args.skip]
    mem = ({c: {"kind": c} for c in kinds} if args.skip_memory else
           run_children(kinds, lambda c: ["--child", c, path, init_path, m1, args.algorithm]))
    timing = _common.run_json_child([sys.executable, __file__, "--timing-child", path,
                                     init_path, m1, m2, args.repeats, ",".join(kinds),
                                     args.algorithm])
    print("  ", json.dumps(timing), flush=True)
    if "error" in timing or "timeout" in timing:
        timing = {c: timing for c in kinds}
    med = {c: (float(np.median(timing[c]["wall"])), float(np.median(timing[c]["cpu"])))
           for c in kinds if "wall" in timing[c]}
    ram = med.get("ram")

    def cells(r):
        c = r["kind"]
        if c not in med:
            return ["failed", str(timing[c])[-80:], "", "", "", "", ""]
        w, cpu = med[c]
        passes = timing[c]["passes"]
        if c == "ram, C loop":
            return [w, cpu, w / ram[0], cpu / ram[1], "-", "(in ram's)",
                    "yes" if timing[c]["n_iter_ok"] else "no"]
        return [w, cpu, w / ram[0] if ram else "(no ram run)", cpu / ram[1] if ram else "-",
                float(np.median(passes)) if passes else "-",
                r["peak_rss_anon"] / 1e9 if "peak_rss_anon" in r else "-",
                "yes" if timing[c]["n_iter_ok"] and r.get("n_iter", m1) == m1 else "no"]

    if "ram, C loop" in timing:
        kinds, mem = kinds + ["ram, C loop"], dict(mem, **{"ram, C loop": {"kind": "ram, C loop"}})
        med["ram, C loop"] = (float(np.median(timing["ram, C loop"]["wall"])),
                              float(np.median(timing["ram, C loop"]["cpu"])))
    print_rows(["contender", "s / iteration (wall)", "CPU s / iteration", "ratio vs ram (wall)",
                "ratio vs ram (CPU)", "s / pass in the loop", "peak RssAnon (GB)",
                "n_iter = max_iter"], kinds, mem, cells)
    if "ram, C loop" in med and "memmap" in med:
        (w, c), (lw, lc) = med["memmap"], med["ram, C loop"]
        p = timing["memmap"]["passes"]
        print(f"memmap / in-memory C loop: {w / lw:.3g} (wall), {c / lc:.3g} (CPU)"
              + (f"; the memmap pass timed in its loop / the C loop: {np.median(p) / lw:.3g}"
                 if p else ""))
    _done(args, directory)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--method-child":
        method_child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--cpcm-child":
        cpcm_child(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
    elif len(sys.argv) > 1 and sys.argv[1] == "--timing-child":
        timing_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                     int(sys.argv[6]), sys.argv[7].split(","), sys.argv[8])
    else:
        main()
