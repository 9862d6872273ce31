"""The shared squared-distance tile (issue #13) and the all-pairs GEMM form (#23).

Two parts:

- ``--crossover``: in this build, the all-pairs diagonal sums (MMC's implicit
  D, ``pairs_diag(X, None, a, hessian=False)``) by the direct pair loop
  (``method="direct"``) and by the GEMM form, interleaved, for a range of p at
  n = 1000: where the GEMM form starts to pay sets ``ML_PAIRS_DIAG_GEMM_MIN_P``
  in ``csrc/thresholds.h``.
- default: this build against a baseline build (another commit's install, e.g.
  ``main``), kernel by kernel: the Gaussian Gram matrix and ``G @ V`` (the
  tile's exp-fused callers) and the pair sums of MMC (the tile's distance
  callers, plus the explicit-pair kernels that were restructured). Each case
  runs in a child process per build, the builds alternating (new, old, new,
  old, ...) for ``--repeats`` rounds; a child times ``--calls`` calls and
  reports their medians (wall clock, and CPU time of all threads); the table
  gives the medians over rounds and old / new (> 1: this build is faster).

Baseline: a plain install of another commit in its own virtual environment,
e.g. ``git archive main | tar -x -C /tmp/base && python -m venv
--system-site-packages /tmp/base/.venv && /tmp/base/.venv/bin/pip install
--no-build-isolation /tmp/base``; pass ``--base-python /tmp/base/.venv/bin/python``.

Usage::

    python benchmarks/bench_sqdist.py --crossover
    python benchmarks/bench_sqdist.py --base-python /tmp/base/.venv/bin/python
    python benchmarks/bench_sqdist.py --child CASE     # one timing (internal)
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# name -> (description, calls); the data are drawn in `_case`.
CASES = {
    "gram-d2-f64": ("gaussian_gram N=4000 d=2 float64", 5),
    "gram-d16-f64": ("gaussian_gram N=4000 d=16 float64", 5),
    "gram-d64-f32": ("gaussian_gram N=4000 d=64 float32", 5),
    "matmat-d16-f64": ("gram_matmat N=4000 d=16 k=10 float64", 5),
    "allpairs-full-r20": ("allpairs_full N=2000 p=20 r=20", 5),
    "allpairs-full-r4": ("allpairs_full N=2000 p=20 r=4", 5),
    "pairs-full-20": ("pairs_full 1e5 pairs p=20", 5),
    "pairs-diag-20": ("pairs_diag 1e5 pairs p=20 (with Hessian)", 5),
    "allpairs-diag-p2000": ("pairs_diag all pairs N=1000 p=2000, no Hessian", 3),
}


def _case(name):
    """A zero-argument callable running case `name` once (data drawn here)."""
    from metriclust._core.threads import single_blas_thread
    from metriclust._kernels import _gram, _pairwise

    rng = np.random.default_rng(0)
    # The kernels call BLAS inside OpenMP: one BLAS thread, as the library holds
    # it (scipy's BLAS loaded first, so that the limit reaches it).
    limit = single_blas_thread()
    limit.__enter__()
    if name.startswith("gram-") or name.startswith("matmat-"):
        d = int(name.split("-")[1][1:])
        dtype = np.float32 if name.endswith("f32") else np.float64
        X = rng.normal(size=(4000, d)).astype(dtype)
        sigma = float(np.sqrt(d))
        if name.startswith("gram-"):
            return lambda: _gram.gaussian_gram(X, None, sigma)
        V = rng.normal(size=(4000, 10)).astype(dtype)
        return lambda: _gram.gram_matmat(X, None, V, sigma)
    if name.startswith("allpairs-full"):
        r = int(name.rsplit("r", 1)[1])
        X = rng.normal(size=(2000, 20))
        X -= X.mean(0)
        Y = np.ascontiguousarray(X @ rng.normal(size=(20, r)))
        return lambda: _pairwise.allpairs_full(X, Y)
    if name.startswith("pairs-"):
        X = rng.normal(size=(5000, 20))
        P = rng.integers(5000, size=(100_000, 2)).astype(np.int64)
        if name.startswith("pairs-full"):
            Lt = np.ascontiguousarray(rng.normal(size=(20, 20)))
            return lambda: _pairwise.pairs_full(X, P, Lt)
        a = rng.random(20)
        return lambda: _pairwise.pairs_diag(X, P, a)
    if name == "allpairs-diag-p2000":
        X = rng.normal(size=(1000, 2000))
        a = rng.random(2000)
        return lambda: _pairwise.pairs_diag(X, None, a, hessian=False)
    raise ValueError(name)


def child(name, calls):
    # one warm-up call (imports, BLAS resolution, page faults), then medians of
    # the wall-clock and the CPU time (all threads) of `calls` calls. The pause:
    # a BLAS library loaded by the warm-up starts its pool thread, which spins
    # for ~50 ms before it sleeps (5 clock ticks measured, once per process,
    # the same whether scipy.linalg or the lazy loader loads it); timed calls
    # made during that spin were charged its CPU time.
    fn = _case(name)
    fn()
    time.sleep(0.25)
    wall, cpu = [], []
    for _ in range(calls):
        w, c, out = _common.timed_call(fn)
        del out
        wall.append(w)
        cpu.append(c)
    print(json.dumps({"case": name, "median_s": float(np.median(wall)),
                      "median_cpu_s": float(np.median(cpu))}))


def run_child(python, name, calls):
    r = _common.run_json_child([python, Path(__file__), "--child", name, "--calls", calls])
    if "median_s" not in r:
        raise RuntimeError(f"{python} {name}: {r}")
    return r["median_s"], r["median_cpu_s"]


def compare(base_python, repeats, cases):
    print("\n".join(_common.machine_header("bench_sqdist", os.cpu_count())[0]))
    print(f"load average at start: {os.getloadavg()}")
    print(_common.markdown_table(["case", "new s", "old s", "old / new",
                                  "new CPU s", "old CPU s", "old / new CPU"]))
    for name in cases:
        desc, calls = CASES[name]
        new, old = [], []
        for _ in range(repeats):
            new.append(run_child(sys.executable, name, calls))
            old.append(run_child(base_python, name, calls))
        (n, nc), (o, oc) = np.median(new, axis=0), np.median(old, axis=0)
        print(_common.markdown_row([desc, n, o, o / n, nc, oc, oc / nc]), flush=True)
    print(f"load average at end: {os.getloadavg()}")


def crossover(repeats, ps):
    from metriclust._core.threads import single_blas_thread
    from metriclust._kernels import _pairwise

    print(f"load average at start: {os.getloadavg()}")
    print(_common.markdown_table(["n", "p", "direct s", "GEMM s", "direct / GEMM"]))
    rng = np.random.default_rng(0)
    with single_blas_thread():
        for p in ps:
            X = rng.normal(size=(1000, p))
            a = rng.random(p)
            t = _common.medians(_common.interleaved({
                "direct": lambda: _pairwise.pairs_diag(X, None, a, hessian=False,
                                                       method="direct"),
                "gemm": lambda: _pairwise.pairs_diag(X, None, a, hessian=False,
                                                     method="gemm")}, repeats))
            print(_common.markdown_row([1000, p, t["direct"], t["gemm"],
                                        t["direct"] / t["gemm"]]), flush=True)
    print(f"load average at end: {os.getloadavg()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--base-python")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--crossover", action="store_true")
    ap.add_argument("--ps", type=int, nargs="*", default=[12, 16, 24, 32, 48, 64, 128, 512])
    ap.add_argument("--spin", action="store_true", help="OMP_WAIT_POLICY left to libgomp")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.calls)
    if args.crossover:
        return crossover(args.repeats, args.ps)
    if not args.base_python:
        ap.error("--base-python is required (the baseline build's interpreter)")
    compare(args.base_python, args.repeats, args.cases)


if __name__ == "__main__":
    main()
