"""The two runtime SIMD dispatch mechanisms side by side (issue #16, csrc/dispatch.h):
target_clones with glibc's ifunc (the manylinux default) against the portable
per-level objects with a cpuid trampoline (-Ddispatch=portable: the macOS,
Windows and musl default), on the k-means and Gram kernels, in the same run.

Each build lives in its own venv and runs in its own worker process; the
parent sends "run case i" to the workers round-robin (interleaved repeats,
medians), so both builds see the same machine load. One OpenMP thread: the
kernels, not the scheduling.

    python benchmarks/bench_dispatch.py --make            # build both venvs first
    python benchmarks/bench_dispatch.py [--repeats 7] [--quick]
        [--build clones=PYTHON --build portable=PYTHON]

--make creates benchmarks/.venv-dispatch-clones and -portable (system site
packages, this checkout installed with -Ddispatch=clones / =portable), the
default builds. METRICLUST_MAX_SIMD=3 in the environment times the AVX2
copies of the portable build (the clones build ignores it).
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILDS = ("clones", "portable")


def cases(quick):
    n = 50_000 if quick else 200_000
    ng = 1000 if quick else 2500
    # (name, kind, args): k-means = Lloyd, 5 iterations from fixed centers.
    return [
        (f"k-means N={n} d=2 K=8 f64 (small-d)", "lloyd", (n, 2, 8, "float64", "auto")),
        (f"k-means N={n} d=8 K=32 f32 (auto)", "lloyd", (n, 8, 32, "float32", "auto")),
        (f"k-means N={n} d=16 K=64 f32 (lanes)", "lloyd", (n, 16, 64, "float32", "lanes")),
        (f"k-means N={n} d=32 K=16 f64 (tile)", "lloyd", (n, 32, 16, "float64", "tile")),
        (f"k-means N={n // 2} d=64 K=128 f64 (lanes)", "lloyd", (n // 2, 64, 128, "float64", "lanes")),
        (f"Gram {ng}x{ng} d=8 f64 (direct)", "gram", (ng, 8, "float64", False)),
        (f"Gram {ng}x{ng} d=8 f32 (direct)", "gram", (ng, 8, "float32", False)),
        (f"Gram {ng}x{ng} d=100 f64 (BLAS)", "gram", (ng, 100, "float64", True)),
        (f"Gram matmat {ng}x{ng} d=8 k=4 f64", "matmat", (ng, 8, "float64")),
    ]


def worker(quick):
    """Set up every case's data, then time one call per "i" line on stdin."""
    import time

    import numpy as np

    from metriclust._kernels import _gram, _kmeans

    rng = np.random.default_rng(0)
    fns = []
    for _, kind, args in cases(quick):
        if kind == "lloyd":
            n, d, K, dt, method = args
            X = rng.standard_normal((n, d)).astype(dt)
            C0 = np.ascontiguousarray(X[rng.choice(n, K, replace=False)])
            fns.append(lambda X=X, C0=C0, m=method: _kmeans.lloyd(X, None, C0.copy(), 5, 0.0, m, 1))
        elif kind == "gram":
            n, d, dt, blas = args
            A = rng.standard_normal((n, d)).astype(dt)
            fns.append(lambda A=A, b=blas: _gram.gaussian_gram(A, A, 2.0, 1, b))
        else:
            n, d, dt = args
            A = rng.standard_normal((n, d)).astype(dt)
            V = rng.standard_normal((n, 4)).astype(dt)
            fns.append(lambda A=A, V=V: _gram.gram_matmat(A, A, V, 2.0, 1))
    for fn in fns:
        fn()  # warm-up: page faults, BLAS loading
    print(json.dumps({"level": _kmeans.simd_level()}), flush=True)
    for line in sys.stdin:
        i = int(line)
        t0 = time.perf_counter()
        fns[i]()
        print(json.dumps(time.perf_counter() - t0), flush=True)


def make_venvs():
    for b in BUILDS:
        venv = HERE / f".venv-dispatch-{b}"
        if (venv / "bin" / "python").exists():
            continue
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--no-build-isolation", f"-Csetup-args=-Ddispatch={b}",
                        f"-Cbuild-dir={venv / 'build'}", str(ROOT)], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--build", action="append", default=[], metavar="NAME=PYTHON")
    args = ap.parse_args()
    if args.worker:
        return worker(args.quick)
    if args.make:
        return make_venvs()
    builds = dict(b.split("=", 1) for b in args.build) or {
        b: str(HERE / f".venv-dispatch-{b}" / "bin" / "python") for b in BUILDS}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = {}
    for name, python in builds.items():
        cmd = [python, str(Path(__file__).resolve()), "--worker"] + (["--quick"] if args.quick else [])
        procs[name] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, env=env, cwd=str(HERE))
    levels = {name: json.loads(p.stdout.readline())["level"] for name, p in procs.items()}
    cs = cases(args.quick)
    times = {(name, i): [] for name in procs for i in range(len(cs))}
    load0 = _common.load_average()
    for _ in range(args.repeats):
        for i in range(len(cs)):
            for name, p in procs.items():
                p.stdin.write(f"{i}\n")
                p.stdin.flush()
                times[name, i].append(json.loads(p.stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    med = _common.medians({f"{k[0]}|{k[1]}": v for k, v in times.items()})
    names = list(procs)
    lines, _ = _common.machine_header("bench_dispatch", 1, repeats=3)
    print("\n".join(lines))
    print("builds: " + ", ".join(f"{n} ({builds[n]}, level {levels[n]})" for n in names)
          + f"; {args.repeats} interleaved repeats, medians; load average "
          f"{load0:.1f} at the first repeat, {_common.load_average():.1f} at the last")
    print()
    rows = []
    for i, (label, _, _) in enumerate(cs):
        t = [med[f"{n}|{i}"] for n in names]
        rows.append([label] + [f"{x * 1e3:.1f}" for x in t]
                    + ([f"{t[1] / t[0]:.3f}"] if len(t) == 2 else []))
    hdr = ["case"] + [f"{n} ms" for n in names] + ([f"{names[1]} / {names[0]}"] if len(names) == 2 else [])
    print(_common.markdown_table(hdr, rows))


if __name__ == "__main__":
    main()
