"""Benchmark: what float32 input to MMC's pair sums could save (issue #13).

The pair-sum kernels (csrc/pairwise.c) read float64 X; float32 data are converted
once per fit by the caller (MMC, ``_core/pairsums.py``). A float32 path with
float64 accumulation, the only form that keeps the sums as they are, would save
that conversion and its memory, and nothing inside a pass: the GEMM form copies X
into a centred, scaled float64 operand every pass anyway, and every difference
is formed and summed in float64. This script measures the two quantities that
bound the saving, in the same process, interleaved, medians:

- ``cast``: ``X.astype(np.float64)`` of the float32 data (once per fit);
- ``pass``: one gradient pass of the diagonal-metric sums over all pairs
  (``_pairwise.pairs_diag(X, None, a, hessian=False)``, what each of MMC's
  diagonal iterations calls), and for explicit pairs one pass over ``m`` pairs.

Usage: ``python benchmarks/bench_pair_dtype.py [--n N] [--p P] [--pairs M] [--repeats R]``
(default: issue #23's 1000 x 20000, 1e5 explicit pairs on 1e4 x 20 data).
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse

import numpy as np

from metriclust._core.threads import effective_n_threads, single_blas_thread
from metriclust._kernels import _pairwise


def case(name, X32, pairs, repeats, n_threads):
    X64 = X32.astype(np.float64)
    a = np.ones(X32.shape[1])
    fns = {
        "cast": lambda: X32.astype(np.float64),
        "pass": lambda: _pairwise.pairs_diag(X64, pairs, a, True, False, n_threads=n_threads),
    }
    with single_blas_thread():
        t = _common.medians(_common.interleaved(fns, repeats))
    n, p = X32.shape
    return [name, f"{n} x {p}", t["cast"], t["pass"], t["cast"] / t["pass"],
            f"{n * p * 4 / 2**20:.0f}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--p", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    nt = effective_n_threads()
    header, _ = _common.machine_header("bench_pair_dtype", nt)
    print("\n".join(header))
    rng = np.random.default_rng(0)
    rows = [case("all pairs, GEMM form", rng.standard_normal((args.n, args.p), np.float32),
                 None, args.repeats, nt)]
    X = rng.standard_normal((10_000, 20), np.float32)
    P = np.ascontiguousarray(rng.integers(0, X.shape[0], size=(args.pairs, 2)), dtype=np.int64)
    P = P[P[:, 0] != P[:, 1]]
    rows.append(case(f"{len(P)} explicit pairs", X, P, max(args.repeats, 5), nt))
    print(_common.markdown_table(
        ["pairs", "X (float32)", "cast s", "one pass s", "cast / pass",
         "float64 copy MiB saved"], rows))
    print(f"load average at end {_common.load_average():.1f}")


if __name__ == "__main__":
    main()
