"""Ctrl-C latency of ``metriclust cluster`` (issue #22: control back within 1 s, no output).

For each method a fit that would run for minutes is started in a subprocess
(``--verbose``); one second after it reports "fitting", SIGINT is sent and the
time until the process has exited is measured, with its exit status (130
expected) and whether any output or temporary file was left. The repeats are
interleaved across methods; medians and maxima are reported. No peer: the
figure is compared with the issue's 1 s bound.

Usage: ``python benchmarks/bench_cli_interrupt.py [--repeats 3] [--python PATH]``
(the interpreter of an installed wheel: an editable install rebuilds on import).
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# Each case: rows of the data file, and the arguments that make its fit long.
CASES = {
    "kmeans": (200_000, ["--n-clusters", "256", "--param", "n_init=100", "--param", "tol=0",
                         "--param", "max_iter=100000"]),
    "cpcm": (200_000, ["--n-clusters", "8", "--param", "n_init=1000"]),
    "cpduml": (3_000, ["--n-clusters", "8", "--param", "max_iter=100000",
                       "--param", "tol=0"]),
    "mmc": (40_000, ["--n-clusters", "2"]),   # all pairs not in --similar: O(N^2) a step
}


def make_inputs(directory):
    rng = np.random.default_rng(0)
    paths = {}
    for rows in sorted({r for r, _ in CASES.values()}):
        path = Path(directory) / f"X{rows}.csv"
        np.savetxt(path, rng.normal(size=(rows, 4)), fmt="%.5f", delimiter=",",
                   header="a,b,c,d", comments="")
        paths[rows] = path
    pairs = Path(directory) / "similar.csv"
    pairs.write_text("".join(f"{2 * i},{2 * i + 1}\n" for i in range(20)))
    return paths, pairs


def one(python, method, data, pairs, directory):
    rows, extra = CASES[method]
    out = Path(directory) / f"{method}-labels.csv"
    cmd = [python, "-m", "metriclust", "cluster", str(data[rows]), "--method", method,
           "--output", str(out), "--transform", str(out.with_suffix(".z.csv")), "--verbose",
           "--random-state", "0", *extra]
    if method == "mmc":
        cmd += ["--similar", str(pairs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "fitting" in line:
            break
    time.sleep(1.0)
    if proc.poll() is not None:
        return {"error": f"{method}: the fit ended before the signal ({proc.returncode})"}
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    latency = time.perf_counter() - sent
    proc.stderr.read()
    left = sorted(p.name for p in Path(directory).iterdir()
                  if p.name.startswith(".metriclust-") or p.name.startswith(f"{method}-"))
    return {"latency": latency, "status": proc.returncode, "left": left}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--methods", default=",".join(CASES))
    args = ap.parse_args()
    print("\n".join(_common.machine_header("bench_cli_interrupt", os.cpu_count())[0]))
    methods = args.methods.split(",")
    runs = {m: [] for m in methods}
    with tempfile.TemporaryDirectory() as tmp:
        data, pairs = make_inputs(tmp)
        for _ in range(args.repeats):
            for m in methods:
                runs[m].append(one(args.python, m, data, pairs, tmp))
    print(f"\nload average at end {os.getloadavg()[0]:.1f}\n")
    print("| method | median s | max s | exit statuses | files left | runs |")
    print("|---|---:|---:|---|---|---:|")
    for m in methods:
        ok = [r for r in runs[m] if "latency" in r]
        errors = [r["error"] for r in runs[m] if "error" in r]
        if not ok:
            print(f"| {m} | - | - | - | {'; '.join(errors)} | 0 |")
            continue
        lat = [r["latency"] for r in ok]
        statuses = ",".join(str(r["status"]) for r in ok)
        left = sorted({f for r in ok for f in r["left"]}) or ["none"]
        print(f"| {m} | {statistics.median(lat):.3f} | {max(lat):.3f} | {statuses} | "
              f"{', '.join(left)} | {len(ok)} |")


if __name__ == "__main__":
    main()
