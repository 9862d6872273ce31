"""Benchmark: float32 X in MMC's pair sums, and float64 against a baseline build (issue #13).

The explicit-pair and diagonal pair sums (``_pairwise.pairs_full`` and
``pairs_diag``, csrc/pairwise.c) read float32 X as it is: each value is widened
to float64 as it is read and every sum is float64, so the results are those on
``X.astype(np.float64)`` bit for bit, without that copy. This script measures,
interleaved, in fresh worker processes, medians over the repeats:

- ``float64, this build / baseline``: one pass of each kernel on float64 X in
  this checkout against a baseline install (``--baseline-python``: a Python whose
  ``metriclust`` is another build, e.g. a wheel of ``main``); ratio < 1 is faster;
- ``float32 / float64``: the same pass on float32 X against float64 X (this build);
- ``cast``: ``X.astype(np.float64)``, what a caller saved per fit by passing float32.

Cases: MMC diagonal A's pass (5000 pairs on 2000 x 20, with the Hessian), its
gradient-only pass, the full-A direct pass (``pairs_full``, L 20 x 20), 1e5
explicit pairs on 1e4 x 20 (gradient), and all pairs of 1000 x 2000 (the GEMM form).

Usage: ``python benchmarks/bench_pair_dtype.py [--baseline-python PY] [--repeats R]``.
Run it under the shared benchmark lock (``flock /work/bench.lock ...``).
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CASES = ["diag H, 5000 pairs, 2000 x 20", "diag grad, 5000 pairs, 2000 x 20",
         "full, 5000 pairs, 2000 x 20", "diag grad, 1e5 pairs, 1e4 x 20",
         "diag grad, all pairs, 1000 x 2000"]


def _data(case, dtype):
    rng = np.random.default_rng(0)
    if case.endswith("1000 x 2000"):
        X = rng.standard_normal((1000, 2000))
        return X.astype(dtype), None
    n, m = (10_000, 100_000) if "1e5" in case else (2000, 5000)
    X = rng.standard_normal((n, 20)).astype(dtype)
    P = rng.integers(0, n, size=(m, 2))
    return X, np.ascontiguousarray(P[P[:, 0] != P[:, 1]], dtype=np.int64)


def worker(case, dtype, calls):
    """Seconds per call (median of ``calls``) of one kernel pass; the cast too.
    BLAS and OpenMP are held to one thread by the environment (run_worker)."""
    from metriclust._kernels import _pairwise as K
    X, P = _data(case, np.dtype(dtype))
    a = np.random.default_rng(1).random(X.shape[1])
    Lt = np.ascontiguousarray(np.random.default_rng(2).standard_normal((20, 20)))
    if case.startswith("full"):
        def fn():
            K.pairs_full(X, P, Lt, True)
    else:
        hess = case.startswith("diag H")
        def fn():
            K.pairs_diag(X, P, a, True, hess, n_threads=1, zero_pairs=True)
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    cast = []
    for _ in range(calls):
        t0 = time.perf_counter()
        X.astype(np.float64)
        cast.append(time.perf_counter() - t0)
    return dict(pass_s=float(np.median(times)), cast_s=float(np.median(cast)))


def run_worker(python, case, dtype, calls):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([python, __file__, "--worker", case, dtype, str(calls)],
                         capture_output=True, text=True, env=env, check=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-python", default=None,
                    help="a Python whose metriclust is the baseline build (float64 only)")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved worker rounds")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        case, dtype, calls = args.worker
        print(json.dumps(worker(case, dtype, int(calls))))
        return
    header, _ = _common.machine_header("bench_pair_dtype", 1)
    print("\n".join(header))
    load0 = _common.load_average()
    sides = [("f64", sys.executable, "float64"), ("f32", sys.executable, "float32")]
    if args.baseline_python:
        sides.append(("base", args.baseline_python, "float64"))
    rows = []
    for case in CASES:
        calls = 3 if case.endswith("1000 x 2000") else 50
        got = {name: [] for name, _, _ in sides}
        for _ in range(args.repeats):             # interleaved rounds of fresh workers
            for name, py, dtype in sides:
                got[name].append(run_worker(py, case, dtype, calls))
        med = {k: float(np.median([r["pass_s"] for r in v])) for k, v in got.items()}
        cast = float(np.median([r["cast_s"] for r in got["f32"]]))
        base = med.get("base", float("nan"))
        per = ([f"{a['pass_s'] / b['pass_s']:.2f}" for a, b in zip(got["f64"], got["base"])]
               if "base" in got else [])
        rows.append([case, base, med["f64"], med["f64"] / base, " ".join(per), med["f32"],
                     med["f32"] / med["f64"], cast])
        print(rows[-1], flush=True)
    print(_common.markdown_table(
        ["case", "baseline f64 s", "this f64 s", "this / baseline (f64)", "per round",
         "this f32 s", "f32 / f64", "cast to f64 s"], rows))
    print(f"load average: {load0:.1f} at the start, {_common.load_average():.1f} at the end")


if __name__ == "__main__":
    main()
