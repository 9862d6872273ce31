"""KMeans with ``copy_x=False``: the fit's memory and time against ``copy_x=True``,
ours and scikit-learn's (issue #10: the fit's centered copy of X).

``fit`` centers X for accurate distances. ``copy_x=True`` (the default, in both
libraries) centers a copy, X's size again; ``copy_x=False`` centers X itself and
adds the mean back at the end. Each fit runs in a fresh child process (one per
library, setting and repeat, interleaved); the child makes X, resets its peak
resident set and fits once, and reports wall and CPU time and the peak resident
memory the fit added above X (Linux VmHWM after ``/proc/self/clear_refs``). Medians.

Usage: python benchmarks/bench_copy_x.py [--repeats 3] [--shapes N,d,K,dtype ...]
"""

import _common  # noqa: F401  (first: OpenMP wait policy)

import argparse
import json
import os
import sys

import numpy as np

_SHAPES = ["1000000,64,32,float64", "4000000,16,8,float32"]


def child(lib, shape, copy_x):
    n, d, K, dtype = shape.split(",")
    X = np.random.default_rng(0).random((int(n), int(d))).astype(dtype)
    if lib == "sklearn":
        from sklearn.cluster import KMeans
    else:
        from metriclust import KMeans
    km = KMeans(int(K), n_init=1, max_iter=20, random_state=0, copy_x=copy_x)
    KMeans(int(K), n_init=1, max_iter=2, random_state=0, copy_x=copy_x).fit(X[:5000].copy())
    base = _common.reset_peak_rss()
    wall, cpu, _ = _common.timed_call(lambda: km.fit(X))
    extra = _common.peak_rss_bytes() - base
    print(json.dumps({"wall": wall, "cpu": cpu, "extra": extra, "x": X.nbytes,
                      "iters": int(km.n_iter_)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", nargs="+", default=_SHAPES)
    ap.add_argument("--child", nargs=3, metavar=("LIB", "SHAPE", "COPY_X"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2] == "1")
        return
    n_threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    for line in _common.machine_header("bench_copy_x.py", n_threads)[0]:
        print(line)
    runs = [(lib, c) for lib in ("metriclust", "sklearn") for c in (True, False)]
    for shape in args.shapes:
        res = {r: [] for r in runs}
        for _ in range(args.repeats):
            for lib, c in runs:
                res[(lib, c)].append(_common.run_json_child(
                    [sys.executable, __file__, "--child", lib, shape, "1" if c else "0"]))
        print(f"\nN, d, K, dtype = {shape}: 20 iterations at most, medians of {args.repeats}, "
              "fresh processes\n")
        print(_common.markdown_table(["library", "copy_x", "wall s", "CPU s",
                                      "peak memory above X, MB", "x X's size", "iterations"]))
        for lib, c in runs:
            r = res[(lib, c)]
            if any("error" in x or "timeout" in x for x in r):
                print(_common.markdown_row([lib, str(c), "failed: " + str(r[-1])]))
                continue
            med = {k: float(np.median([x[k] for x in r])) for k in ("wall", "cpu", "extra")}
            print(_common.markdown_row([lib, str(c), f"{med['wall']:.2f}", f"{med['cpu']:.2f}",
                                        f"{med['extra'] / 1e6:.0f}",
                                        f"{med['extra'] / r[0]['x']:.2f}", r[-1]["iters"]]),
                  flush=True)
    print(f"\n- load average at end: {_common.load_average()}")


if __name__ == "__main__":
    main()
