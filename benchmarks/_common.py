"""Shared pieces of the benchmark scripts: one timer, one machine header, one table.

Import this module FIRST in a benchmark script (before numpy, scipy, scikit-learn
or metriclust): it sets the OpenMP wait policy for every library in the process.

- ``OMP_WAIT_POLICY=PASSIVE`` (unless ``--spin`` is on the command line or the
  variable is already set): on a machine shared with other jobs, threads that
  spin at a barrier take the core from the thread they wait for, and every
  library's timings then measure the scheduler more than the kernel. It is set
  once, here, for ours and the peers alike (libgomp reads it when it loads).
- :func:`interleaved`: repeats of several callables run round-robin (ours, peer,
  ours, peer, ...) so that a change of load hits every contender alike; medians.
- :func:`machine_header`: what the numbers were measured on -- cores, OpenMP
  threads, the wait policy, the load average, and the measured write bandwidth
  and dgemm rate, so that a table can be read against the machine's limits.
- :func:`markdown_table`: the one table format of ``benchmarks/RESULTS.md``.
- :func:`run_json_child` with :func:`timed_call`, :func:`reset_peak_rss`,
  :func:`peak_rss_bytes` and :func:`rss_anon_bytes`: a measurement that needs a
  fresh process (peak memory, import time, a fit too long to repeat) runs in a
  child that prints one JSON line.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import threading
import time

if "--spin" not in sys.argv:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

__all__ = ["interleaved", "medians", "machine_header", "markdown_table", "markdown_row",
           "section_parser",
           "load_average", "measure_dgemm_rate", "measure_write_bandwidth",
           "timed_call", "reset_peak_rss", "peak_rss_bytes", "run_json_child", "cpcm_data"]


def interleaved(fns, repeats, *, warmup=True):
    """Time each callable of ``fns`` (name -> fn) ``repeats`` times, round-robin.

    One untimed call of each first (``warmup``: imports, page faults of
    buffers, caches). The result of a call is dropped before the next call
    starts, so no contender pays for another's memory. Returns name -> list of
    seconds (``time.perf_counter``).
    """
    if warmup:
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    for _ in range(int(repeats)):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            del out
    return times


def medians(times):
    """name -> median of the list of seconds."""
    return {name: float(np.median(t)) for name, t in times.items()}


def load_average():
    """The 1-minute load average (what the shared machine was doing meanwhile)."""
    return os.getloadavg()[0]


def measure_dgemm_rate(n=2000, k=256, repeats=5):
    """float64 GEMM rate in flop/s: an ``n x k`` by ``k x n`` product, default BLAS threads."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(n, k)), rng.normal(size=(k, n))
    t = medians(interleaved({"gemm": lambda: A @ B}, repeats))["gemm"]
    return 2.0 * n * k * n / t


def _fresh_fill(n, n_threads):
    # n x n doubles written into a fresh array by n_threads threads (numpy
    # releases the GIL in copyto): page faults included, as for any new output.
    a = np.empty((n, n))
    bounds = np.linspace(0, n, n_threads + 1).astype(int)
    ts = [threading.Thread(target=np.copyto, args=(a[lo:hi], 1.0))
          for lo, hi in zip(bounds[:-1], bounds[1:])]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return a


def measure_write_bandwidth(n_threads, n=4000, repeats=5):
    """Bytes/s written into (fresh array, existing array) of ``n x n`` doubles.

    The fresh array pays its page faults (what a new ``N x N`` output costs);
    the existing one is a plain fill on one thread.
    """
    buf = np.zeros((n, n))
    t = medians(interleaved({"fresh": lambda: _fresh_fill(n, n_threads),
                             "fill": lambda: buf.fill(1.0)}, repeats))
    return 8.0 * n * n / t["fresh"], 8.0 * n * n / t["fill"]


def machine_header(name, n_threads, *, repeats=5):
    """Markdown lines naming the run and the machine, with measured rates.

    Returns ``(lines, rates)``; ``rates`` holds ``dgemm`` (flop/s), ``write``
    and ``fill`` (bytes/s) for bounds computed by the caller.
    """
    load = os.getloadavg()
    gemm = measure_dgemm_rate(repeats=repeats)
    write, fill = measure_write_bandwidth(n_threads, repeats=repeats)
    lines = [
        f"# {name}  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()} {platform.processor() or ''}".rstrip()
        + f", {os.cpu_count()} cores, OpenMP threads {n_threads}, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(default)')}; "
        f"load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}",
        f"measured: dgemm {gemm / 1e9:.1f} GFLOP/s; write into a fresh array "
        f"({n_threads} thr) {write / 1e9:.2f} GB/s, into an existing one (1 thr) "
        f"{fill / 1e9:.2f} GB/s",
    ]
    return lines, {"dgemm": gemm, "write": write, "fill": fill}


def markdown_row(cells):
    """One table row; floats print with 4 significant digits, the rest with ``str``."""
    return "| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                             for v in cells) + " |"


def markdown_table(headers, rows=()):
    """A markdown table: ``headers`` (strings), ``rows`` (sequences of cells).

    With no rows: the header lines only, for a script that prints each row
    (:func:`markdown_row`) as it is measured.
    """
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(out + [markdown_row(row) for row in rows])


def section_parser(doc, sections, *, quick=True, child_large=False):
    """The command line the benchmarks made of sections share.

    ``--only`` (also spelled ``--sections``): the comma-separated sections to
    run, by default all of ``sections``; ``--quick`` (when ``quick``): small
    sizes and few repeats; ``--child-large N`` (when ``child_large``, hidden):
    the internal entry of one large case run in a child process. Add the
    script's own flags to the parser returned.
    """
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", "--sections", dest="only", default=",".join(sections),
                    help="comma-separated sections to run (default: all): "
                         + ", ".join(sections))
    if quick:
        ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    if child_large:
        ap.add_argument("--child-large", type=int, help=argparse.SUPPRESS)
    return ap


def timed_call(fn):
    """``(wall seconds, CPU seconds of all threads, result)`` of one call of ``fn``:
    for a fit too long to repeat, run once in a child (:func:`run_json_child`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def _status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_anon_bytes():
    """Anonymous resident memory of this process now (Linux RssAnon: the heap and
    numpy arrays, not file pages such as a memmap's), in bytes."""
    return _status_bytes("RssAnon")


def reset_peak_rss():
    """Reset the peak resident set (Linux: VmHWM) to the current one; returns it in bytes."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_bytes("VmRSS")


def peak_rss_bytes():
    """Peak resident set of this process since start or :func:`reset_peak_rss` (VmHWM)."""
    return _status_bytes("VmHWM")


def run_json_child(cmd, *, timeout=None, env=None, cwd=None):
    """Run ``cmd`` (a list) and return the dict its last output line holds (JSON).

    A child that fails returns ``{"error": its last line of stderr}``, one that
    runs past ``timeout`` seconds ``{"timeout": timeout}``: a table row can say so.
    """
    try:
        res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                             timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if res.returncode != 0:
        return {"error": (res.stderr.strip().splitlines() or ["exit %d" % res.returncode])[-1]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def cpcm_data(n, p=20, K=5, seed=0):
    """K Gaussian clusters in 4 dims + (p - 4) noise dims, mixed by a random p x p map."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    centers = rng.standard_normal((K, 4)) * 3
    Z = np.column_stack([centers[y] + rng.standard_normal((n, 4)),
                         rng.standard_normal((n, p - 4))])
    return np.ascontiguousarray(Z @ rng.standard_normal((p, p))), y
