"""Import cost: what a first small fit adds over `import numpy`, beside scikit-learn.

Each case runs in a fresh interpreter (nothing cached in sys.modules):

- ``numpy``: ``import numpy`` and build X (300 x 4; no numpy.random);
- ``metriclust``: that, then ``from metriclust import KMeans; KMeans(8).fit(X)``;
- ``metriclust +learners``: that, after also importing MMC, CPCM and CPDUML
  (which load scipy.linalg only when they fit);
- ``metriclust d=200``: the same on 300 x 200, which takes the BLAS (GEMM) path
  and so loads scipy's BLAS;
- ``scikit-learn``: ``from sklearn.cluster import KMeans; KMeans(8).fit(X)``.

Three measures, inside the child from before ``import numpy`` to the end of the
fit (interpreter start-up excluded, the same for all cases): wall clock, CPU
time (``time.process_time``: steadier than wall clock on a loaded machine,
and import work is CPU-bound once the files are in the page cache), and
``python -X importtime`` (one run per case) summed by top-level package. The
cases are interleaved, in a rotating order, for ``--repeats`` rounds; the
table gives medians and each case's median excess over ``numpy`` in the same
round. Run it with the interpreter of an installed wheel (an editable install
rebuilds on import): ``python benchmarks/bench_import.py [--python PATH]``.
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import collections
import os
import statistics
import subprocess
import sys

HEAD = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import numpy as np
X = np.sin(np.arange(300 * {d}, dtype=np.float64).reshape(300, {d}) * 0.731) + np.repeat(
    np.arange(8.0), 300 // 8 + 1)[:300, None]
t1 = time.perf_counter()
"""
TAIL = """
t2, c2 = time.perf_counter(), time.process_time()
print(t2 - t0, c2 - c0)
"""
CASES = {
    "numpy": HEAD.format(d=4) + "t1 = time.perf_counter()" + TAIL,
    "metriclust": HEAD.format(d=4)
    + "from metriclust import KMeans\nKMeans(8, random_state=0).fit(X)" + TAIL,
    "metriclust +learners": HEAD.format(d=4)
    + "from metriclust import KMeans, MMC, CPCM, CPDUML\nKMeans(8, random_state=0).fit(X)" + TAIL,
    "metriclust d=200": HEAD.format(d=200)
    + "from metriclust import KMeans\nKMeans(8, random_state=0).fit(X)" + TAIL,
    "scikit-learn": HEAD.format(d=4)
    + "from sklearn.cluster import KMeans\nKMeans(8, random_state=0, n_init=1).fit(X)" + TAIL,
}


def run(python, code, importtime=False):
    cmd = [python] + (["-X", "importtime"] if importtime else []) + ["-c", code]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/")
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out


def importtime_by_package(stderr):
    """Self time (ms) per top-level package from -X importtime's lines."""
    totals = collections.Counter()
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cum, name = (part.strip() for part in line[len("import time:"):].split("|"))
        totals[name.split(".")[0]] += int(self_us) / 1000
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    names = list(CASES)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    wall_excess = {n: [] for n in names}
    cpu_excess = {n: [] for n in names}
    for r in range(args.repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        this_round = {}
        for n in order:
            this_round[n] = [float(v) * 1e3 for v in run(args.python, CASES[n]).stdout.split()]
        for n in names:
            wall[n].append(this_round[n][0])
            cpu[n].append(this_round[n][1])
            wall_excess[n].append(this_round[n][0] - this_round["numpy"][0])
            cpu_excess[n].append(this_round[n][1] - this_round["numpy"][1])

    packages = ("numpy", "metriclust", "scipy", "sklearn", "threadpoolctl")
    imp = {n: importtime_by_package(run(args.python, CASES[n], importtime=True).stderr)
           for n in names}
    print("\n".join(_common.machine_header("bench_import", os.cpu_count())[0]))
    load = os.getloadavg()
    print(f"{args.repeats} interleaved rounds; load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}; python {args.python}\n")
    med = statistics.median
    print("| case | wall, ms | wall excess over numpy, ms | CPU, ms | CPU excess over numpy, ms | "
          + " | ".join(f"importtime {p}" for p in packages) + " | importtime other |")
    print("|---|---:|---:|---:|---:|" + "---:|" * (len(packages) + 1))
    for n in names:
        other = sum(v for k, v in imp[n].items() if k not in packages)
        print(f"| {n} | {med(wall[n]):.1f} | {med(wall_excess[n]):.1f} | {med(cpu[n]):.1f} | "
              f"{med(cpu_excess[n]):.1f} | "
              + " | ".join(f"{imp[n].get(p, 0.0):.1f}" for p in packages)
              + f" | {other:.1f} |")
    for label, excess in (("wall", wall_excess), ("CPU", cpu_excess)):
        ml, sk = med(excess["metriclust"]), med(excess["scikit-learn"])
        print(f"\n{label}: scikit-learn's excess {sk:.1f} ms, metriclust's {ml:.1f} ms "
              f"(ratio {sk / ml:.0f}x where metriclust's is positive)" if ml > 0 else
              f"\n{label}: scikit-learn's excess {sk:.1f} ms, metriclust's {ml:.1f} ms")


if __name__ == "__main__":
    main()
