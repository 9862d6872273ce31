"""Does the AVX-512 clone's lanes kernel gain from 512-bit vectors on this CPU?

The lanes kernel (centers across the lanes of a vector; csrc/kmeans_cv_impl.h)
runs 256-bit vectors on the AVX-512 clone (``ML_KM_LANES_V4_BYTES = 32`` in
csrc/kmeans.h), chosen on Zen 4, whose AVX-512 unit splits a 512-bit
operation into two 256-bit halves. CPUs with two full-width 512-bit FMA ports
(Intel Xeon server parts) could do twice the multiply-adds per cycle with
512-bit vectors. This script builds the C harness (benchmarks/harness_kmeans.c)
twice, with 32 and 64 bytes, checks that both give the same labels and center
bits, and times them alternately on the compute-bound shapes: milliseconds
per Lloyd iteration (passes 3-6, best of 3 inside the harness; medians over
``--rounds`` alternations), and the ratio 64-byte / 32-byte (below 1: the
wider vectors win). Needs gcc with OpenMP; the CPU must have AVX-512 for the
two builds to differ (the harness prints the same code otherwise).

Usage: python benchmarks/bench_lanes_width.py [--threads 1 2 ...] [--rounds 3]
           [--shapes N,d,K,f32 ...] [--cc gcc]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = ["1000000,64,64,f32", "1000000,64,32,f64", "200000,16,256,f32",
          "1000000,16,32,f32", "1000000,128,32,f32"]


def build(cc, width, out):
    cmd = [cc, "-O3", "-fPIC", "-fopenmp", "-std=c99", "-fno-math-errno",
           "-fno-trapping-math", f"-DML_KM_LANES_V4_BYTES={width}",
           "-I" + os.path.join(ROOT, "csrc"), "-I" + os.path.join(ROOT, "tools"),
           os.path.join(ROOT, "benchmarks", "harness_kmeans.c"),
           os.path.join(ROOT, "csrc", "kmeans.c"), os.path.join(ROOT, "csrc", "interrupt.c"),
           "-lm", "-o", out]
    return subprocess.Popen(cmd, stderr=subprocess.DEVNULL)


def run(binary, shape, threads):
    N, d, K, dt = shape.split(",")
    # wall-clock time on several threads (CPU time would hide their waits)
    args = [binary, N, d, K, dt, "0", "3", str(threads), "0", "1" if threads > 1 else "0"]
    out = subprocess.run(args, capture_output=True, text=True, check=True,
                         env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE")).stdout.split()
    ms = float(out[out.index("ms/it") - 1])
    return ms, " ".join(out[-2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="*", default=[1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", nargs="*", default=SHAPES, help="N,d,K,f32|f64")
    ap.add_argument("--cc", default="gcc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bins = {w: os.path.join(tmp, f"harness{w}") for w in (32, 64)}
        procs = [build(args.cc, w, b) for w, b in bins.items()]
        if any(p.wait() for p in procs):
            sys.exit("build failed (gcc with OpenMP is needed)")
        flags = ""
        if os.path.exists("/proc/cpuinfo"):
            with open("/proc/cpuinfo") as f:
                flags = f.read()
        print(f"- CPU: {os.cpu_count()} logical; avx512f: {'avx512f' in flags}")
        print("")
        print("| N | d | K | dtype | threads | 32 bytes ms/it | 64 bytes ms/it | 64 / 32 "
              "| same bits |")
        print("|---|---|---|---|---|---|---|---|---|")
        for shape in args.shapes:
            for t in args.threads:
                ms = {32: [], 64: []}
                check = {}
                for _ in range(args.rounds):
                    for w, b in bins.items():
                        m, c = run(b, shape, t)
                        ms[w].append(m)
                        check[w] = c
                a, b = statistics.median(ms[32]), statistics.median(ms[64])
                N, d, K, dt = shape.split(",")
                print(f"| {int(N):.0e} | {d} | {K} | {dt} | {t} | {a:.2f} | {b:.2f} | "
                      f"{b / a:.2f} | {'yes' if check[32] == check[64] else 'NO'} |",
                      flush=True)


if __name__ == "__main__":
    main()
