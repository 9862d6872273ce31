"""Does the AVX-512 level's lanes kernel gain from 512-bit vectors on this CPU?

The lanes kernel (centers across the lanes of a vector; csrc/kmeans_cv_impl.h)
runs 64- or 32-byte vectors on the AVX-512 level, as a timing probe of the
CPU's 512-bit multiply-add rate decides (csrc/dispatch.c, ml_wide_vectors):
CPUs with two full-width 512-bit FMA ports (Intel Xeon server parts) do twice
the multiply-adds per cycle with 512-bit vectors; Zen 4 splits them in two
256-bit halves. This script builds the C harness (benchmarks/harness_kmeans.c)
once, runs it with METRICLUST_WIDE_VECTORS=0 and =1 (which override the
probe), checks that both give the same labels and center bits, and times them
alternately on the compute-bound shapes: milliseconds per Lloyd iteration
(passes 3-6, best of 3 inside the harness; medians over ``--rounds``
alternations), and the ratio 64-byte / 32-byte (below 1: the wider vectors
win). It prints what the probe chose on this CPU. Needs gcc with OpenMP; the
CPU must have AVX-512 for the two settings to differ.

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


def build(cc, out):
    cmd = [cc, "-O3", "-fPIC", "-fopenmp", "-std=c99", "-fno-math-errno",
           "-fno-trapping-math",
           "-I" + os.path.join(ROOT, "csrc"), "-I" + os.path.join(ROOT, "tools"),
           os.path.join(ROOT, "benchmarks", "harness_kmeans.c"),
           os.path.join(ROOT, "csrc", "kmeans.c"), os.path.join(ROOT, "csrc", "interrupt.c"),
           os.path.join(ROOT, "csrc", "dispatch.c"), "-lm", "-o", out]
    return subprocess.run(cmd, stderr=subprocess.DEVNULL).returncode


def run(binary, shape, threads, wide):
    N, d, K, dt = shape.split(",")
    # wall-clock time on several threads (CPU time would hide their waits)
    args = [binary, N, d, K, dt, "0", "3", str(threads), "0", "1" if threads > 1 else "0"]
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    if wide is not None:
        env["METRICLUST_WIDE_VECTORS"] = str(wide)
    res = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    out = res.stdout.split()
    ms = float(out[out.index("ms/it") - 1])
    return ms, " ".join(out[-2:]), res.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="*", default=[1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", nargs="*", default=SHAPES, help="N,d,K,f32|f64")
    ap.add_argument("--cc", default="gcc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "harness")
        if build(args.cc, binary):
            sys.exit("build failed (gcc with OpenMP is needed)")
        flags = ""
        if os.path.exists("/proc/cpuinfo"):
            with open("/proc/cpuinfo") as f:
                flags = f.read()
        probe = run(binary, "1000,16,8,f32", 1, None)[2]
        print(f"- CPU: {os.cpu_count()} logical; avx512f: {'avx512f' in flags}; "
              f"the probe's choice: {probe}")
        print("")
        print("| N | d | K | dtype | threads | 32 bytes ms/it | 64 bytes ms/it | 64 / 32 "
              "| same bits |")
        print("|---|---|---|---|---|---|---|---|---|")
        for shape in args.shapes:
            for t in args.threads:
                ms = {32: [], 64: []}
                check = {}
                for _ in range(args.rounds):
                    for w in (32, 64):
                        m, c, _ = run(binary, shape, t, int(w == 64))
                        ms[w].append(m)
                        check[w] = c
                a, b = statistics.median(ms[32]), statistics.median(ms[64])
                N, d, K, dt = shape.split(",")
                print(f"| {int(N):.0e} | {d} | {K} | {dt} | {t} | {a:.2f} | {b:.2f} | "
                      f"{b / a:.2f} | {'yes' if check[32] == check[64] else 'NO'} |",
                      flush=True)


if __name__ == "__main__":
    main()
