"""Benchmark the CSV reader behind ``metriclust cluster`` (issue #22: >= 10x the old reader).

Readers, each timed in its own subprocess (wall time, CPU time, peak RSS), the
repetitions interleaved, medians reported:

- ``load_csv``: metriclust's reader (numpy's C parser after the header is
  checked; the careful parser only locates errors);
- ``careful``: that careful parser alone (the csv module, field by field, as the
  reader was before issue #22);
- ``np.loadtxt``: the peer, numpy's own reader on the same file;
- ``baseline``: with ``--baseline-src DIR``, ``load_csv`` imported from another
  checkout's ``src`` (e.g. the main branch before the change) -- "today".

The file is ``N`` rows of 5 columns written with ``%.4f`` (2e6 rows: 75 MB, the
issue's case), or ``--file``.

Usage: ``python benchmarks/bench_cli_read.py [--rows 2000000] [--repeats 3]
[--baseline-src /path/to/other/src] [--file data.csv]``
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

READERS = {
    "load_csv": "from metriclust.datasets import load_csv as f; "
                "run = lambda p: f(p, label_column=None)",
    "careful": "from metriclust.datasets import _parse_careful, _first_row; "
               "run = lambda p: _parse_careful(p, 1, list(_first_row(p)[0]), None, str, "
               "'error', 'header')",
    "np.loadtxt": "import numpy as np; "
                  "run = lambda p: np.loadtxt(p, delimiter=',', skiprows=1, quotechar='\"', "
                  "comments=None, encoding='utf-8-sig', ndmin=2)",
    # The other checkout's datasets.py, loaded as a module of this metriclust
    # (an editable install would shadow PYTHONPATH); as the old CLI called it.
    "baseline": "import importlib.util, os, metriclust; "
                "spec = importlib.util.spec_from_file_location('metriclust._baseline', "
                "os.path.join(os.environ['BASELINE_SRC'], 'metriclust', 'datasets.py')); "
                "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
                "run = lambda p: m.load_csv(p, label_column=None, label_dtype=str)",
}

CHILD = """
import json, resource, sys, time
{setup}
t0, c0 = time.perf_counter(), time.process_time()
out = run(sys.argv[1])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
X = out[0] if isinstance(out, tuple) else out
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"wall": wall, "cpu": cpu, "rss_mb": rss_mb, "shape": list(X.shape),
                  "sum": float(X.sum())}}))
"""


def time_reader(name, path, baseline_src):
    env = dict(os.environ)
    if name == "baseline":
        env["BASELINE_SRC"] = baseline_src
    code = CHILD.format(setup=READERS[name])
    r = _common.run_json_child([sys.executable, "-c", code, path], env=env)
    if "wall" not in r:
        raise RuntimeError(f"reader {name}: {r}")
    return r


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--file")
    parser.add_argument("--baseline-src")
    parser.add_argument("--skip", default="", help="comma-separated readers to leave out")
    args = parser.parse_args()
    names = [n for n in READERS if n not in args.skip.split(",")
             and (n != "baseline" or args.baseline_src)]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file
        if path is None:
            path = os.path.join(tmp, "data.csv")
            X = np.random.default_rng(0).normal(size=(args.rows, 5))
            np.savetxt(path, X, fmt="%.4f", delimiter=",", header="x0,x1,x2,x3,x4", comments="")
        size = os.path.getsize(path) / 1e6
        runs = {n: [] for n in names}
        for _ in range(args.repeats):
            for n in names:  # interleaved
                runs[n].append(time_reader(n, path, args.baseline_src))
    sums = {n: runs[n][0]["sum"] for n in names}
    shapes = {n: tuple(runs[n][0]["shape"]) for n in names}
    assert len(set(shapes.values())) == 1, shapes
    assert all(np.isclose(s, sums[names[0]], rtol=1e-12) for s in sums.values()), sums
    print("\n".join(_common.machine_header("bench_cli_read", os.cpu_count())[0]))
    load = os.getloadavg()
    print(f"{shapes[names[0]][0]} rows x {shapes[names[0]][1]} columns, {size:.1f} MB; "
          f"{args.repeats} interleaved repeats, medians; load average {load[0]:.1f} "
          f"(machine: {os.cpu_count()} CPUs)\n")
    ref = statistics.median(r["wall"] for r in runs["load_csv"])
    ref_cpu = statistics.median(r["cpu"] for r in runs["load_csv"])
    print("| reader | wall s | CPU s | peak RSS MB | wall / load_csv | CPU / load_csv |")
    print("|---|---|---|---|---|---|")
    for n in names:
        wall = statistics.median(r["wall"] for r in runs[n])
        cpu = statistics.median(r["cpu"] for r in runs[n])
        rss = statistics.median(r["rss_mb"] for r in runs[n])
        print(f"| {n} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {wall / ref:.2f} | "
              f"{cpu / ref_cpu:.2f} |")


if __name__ == "__main__":
    main()
