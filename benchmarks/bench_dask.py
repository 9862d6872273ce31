"""metriclust on Dask arrays and a LocalCluster: KMeans against dask-ml, and CPCM.

KMeans (issue #12's first target): uniform float32 data in the unit cube
(Lloyd does not converge in a few iterations there), N x d in ``--chunks``
row chunks, persisted on a ``distributed.LocalCluster`` of 2 worker processes
with 1 thread each. Three contenders fit from the same initial centers with
tol=0: metriclust's KMeans on the dask array, dask-ml's KMeans on the same
dask array, and metriclust's KMeans on the same data in memory (in the client
process, OpenMP on every core). Each fits once with ``max_iter = 1`` and once
with ``1 + iters`` (``--iters`` for ours, ``--peer-iters`` for dask-ml, which
is slower); (t2 - t1) / iters is the time of one Lloyd iteration, free of the
setup passes (mean, variance, seeding) and the final labelling. Contenders
are interleaved within each repeat; medians. Our Dask fits also time each
Lloyd pass inside the loop (``verbose=2``: one round trip to the cluster a
pass), a direct figure that the setup's noise does not touch. CPU seconds per
iteration, by the same difference, add the CPU time of this process (client
and the LocalCluster's scheduler) and of every worker process: on a loaded
machine the worker processes get a smaller share of the cores than one
multi-threaded process, and the CPU figure compares the work, not the share.

Per-task figures for the "scaling on paper" estimate: one chunk's Lloyd
partial as a pass runs it (``_core.blockwise.lloyd_partial``, centred block,
sums only, one thread) in CPU time in the client, against the in-memory C
Lloyd loop per row; the pickled size of its reduced part (sums, counts); the
round trip of ``--chunks`` no-op tasks (one task per chunk) and of one no-op
task per worker on the cluster (a Lloyd pass on persisted chunks runs one
task per worker thread over the chunks it holds). Where a pass goes: from the
task stream of one fit, the pass's wall time against the slower and faster
worker task's compute time; the difference is the cluster's round trip.

CPCM (second target): linear predictor on N x p float32 blobs with K
clusters, fitted in memory and on the dask array (same random_state); the
table gives both times and how far the results differ.

MMC and CPD-UML (``--methods``): MMC (full A, tol=1e-6, 1000 similar pairs, D
= all pairs not in S: one task per block pair and evaluation) on ``--mmc-n``
rows and CPD-UML (Nystrom, m = 50, n_init=1, max_iter=10) on ``--cpd-n`` rows,
d = 8 float32 blobs in ``--method-chunks`` chunks, fitted in memory and on
the cluster; times and how far the results differ.

Usage: python benchmarks/bench_dask.py [--n 2e7] [--d 8] [--k 16] [--chunks 64]
           [--iters 10] [--peer-iters 3] [--repeats 3] [--cpcm-n 1e7] [--cpcm-p 20] [--cpcm-k 5] [--cpcm-chunks C]
           [--skip-kmeans] [--skip-cpcm] [--quick]
           [--methods [--mmc-n 2e4] [--cpd-n 1e6] [--method-chunks 8]]
dask-ml is needed for the KMeans peer (pip install dask-ml); without it the
peer's row is skipped.
"""

import argparse
import contextlib
import io
import logging
import os
import pickle
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402  (first: sets the OpenMP wait policy)

import numpy as np  # noqa: E402


def _uniform(n, d, chunks, seed):
    import dask.array as da

    rows = -(-n // chunks)
    return da.random.default_rng(seed).random((n, d), dtype=np.float32, chunks=(rows, d))


_PASS_LINE = re.compile(r"iteration \d+: .*, ([0-9.]+) s$")


def _per_iteration(fit, iters, passes=None, cpu=time.process_time):
    """Callable timing one fit at max_iter=1 and one at 1 + iters.

    Returns (seconds per iteration from the difference, seconds of the longer fit,
    CPU seconds per iteration from the difference of ``cpu()``); with a list
    ``passes``, the fits run with verbose=2 and the seconds of each pass timed
    inside the Lloyd loop are appended to it.
    """
    def run():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            c0, t0 = cpu(), time.perf_counter()
            fit(1)
            c1, t1 = cpu(), time.perf_counter()
            fit(1 + iters)
            c2, t2 = cpu(), time.perf_counter()
        if passes is not None:
            passes.extend(float(g.group(1)) for g in map(_PASS_LINE.search,
                                                         buf.getvalue().splitlines()) if g)
        return ((t2 - t1) - (t1 - t0)) / iters, t2 - t1, ((c2 - c1) - (c1 - c0)) / iters
    return run


def _cluster_cpu(client):
    """CPU seconds used so far by this process (the client, and the LocalCluster's
    scheduler thread) and by every worker process: the whole cost of a fit, whichever
    process ran it, steadier than wall time on a loaded machine."""
    def total():
        return time.process_time() + sum(client.run(time.process_time).values())
    return total


def bench_kmeans(args, client, lines):
    import dask
    import distributed
    from metriclust import KMeans
    from metriclust._core.blockwise import lloyd_partial

    X = _uniform(int(args.n), args.d, args.chunks, 0).persist()
    distributed.wait(X)
    Xm = X.compute()
    rng = np.random.default_rng(1)
    init = np.ascontiguousarray(Xm[np.sort(rng.choice(Xm.shape[0], args.k, replace=False))])
    fits = {
        "metriclust (dask)": lambda m: KMeans(args.k, init=init, max_iter=m, tol=0,
                                              verbose=2).fit(X),
        "metriclust (in memory)": lambda m: KMeans(args.k, init=init, max_iter=m, tol=0).fit(Xm),
    }
    iters = {"metriclust (dask)": args.iters, "metriclust (in memory)": args.iters,
             "dask-ml": args.peer_iters}
    passes = {"metriclust (dask)": []}
    try:
        import dask_ml.cluster

        fits["dask-ml"] = lambda m: dask_ml.cluster.KMeans(
            n_clusters=args.k, init=init, max_iter=m, tol=0).fit(X)
    except ImportError:
        lines.append("(dask-ml not installed: its row is skipped)")

    # the contenders agree (labels from the same init after 1 + peer_iters iterations)
    with contextlib.redirect_stdout(io.StringIO()):
        ours = fits["metriclust (dask)"](1 + args.peer_iters)
    mem = fits["metriclust (in memory)"](1 + args.peer_iters)
    same = bool(np.array_equal(ours.labels_.compute(), mem.labels_))
    dc = float(np.max(np.abs(ours.cluster_centers_ - mem.cluster_centers_)))
    peer_note = ""
    if "dask-ml" in fits:
        peer = fits["dask-ml"](1 + args.peer_iters)
        agree = float(np.mean(np.asarray(peer.labels_) == ours.labels_.compute()))
        peer_note = f"; dask-ml's labels agree with ours on {agree:.4%} of the rows"
    del ours, mem

    load0 = _common.load_average()
    # round-robin repeats; each call records its own seconds per iteration
    cpu = _cluster_cpu(client)
    _common.interleaved({k: _recording(k, _per_iteration(f, iters[k], passes.get(k), cpu))
                         for k, f in fits.items()}, args.repeats, warmup=False)
    med = {k: float(np.median([v[0] for v in vs])) for k, vs in _PER_IT.items()}
    whole = {k: float(np.median([v[1] for v in vs])) for k, vs in _PER_IT.items()}
    cpu_it = {k: float(np.median([v[2] for v in vs])) for k, vs in _PER_IT.items()}
    load1 = _common.load_average()

    split = _pass_breakdown(client, fits["metriclust (dask)"], int(args.n))
    rows_per_chunk = -(-int(args.n) // args.chunks)
    # one chunk's pass as a Lloyd pass runs it on a worker (centred block, sums only,
    # no labels, no inertia, one thread), against the in-memory C loop per row
    block = np.ascontiguousarray(Xm[:rows_per_chunk] - Xm[:rows_per_chunk].mean(axis=0))
    C0 = np.ascontiguousarray(init - init.mean(axis=0))
    def task_cpu():
        t0 = time.thread_time()
        lloyd_partial(block, C0, None, None, 1, with_inertia=False, with_labels=False)
        return time.thread_time() - t0

    task_cpu()
    t_task = float(np.median([task_cpu() for _ in range(9)]))
    sums, counts, inertia, _ = lloyd_partial(block, C0, None, None, 1, with_labels=False)
    partial_bytes = len(pickle.dumps((sums, counts)))
    loop_ns = _loop_ns_per_row(Xm, init)
    noop = [dask.delayed(int)(0) for _ in range(args.chunks)]
    workers = list(client.scheduler_info()["workers"])
    t_noop = _common.medians(_common.interleaved({
        "chunks": lambda: dask.compute(*noop),
        "workers": lambda: client.gather([client.submit(int, 0, workers=[w], pure=False)
                                          for w in workers])}, 5))

    n = int(args.n)
    in_loop = {k: float(np.median(v)) for k, v in passes.items() if v}
    lines.append(f"## KMeans, N = {n:.3g}, d = {args.d}, K = {args.k}, float32, "
                 f"{args.chunks} chunks; fits at max_iter 1 and 1 + iterations, "
                 f"{args.repeats} interleaved repeats; load average {load0:.1f} before, "
                 f"{load1:.1f} after")
    lines.append("")
    mem_it = med["metriclust (in memory)"]
    lines.append(_common.markdown_table(
        ["contender", "iterations", "s / Lloyd iteration (median)", "s / pass in the loop",
         "dask-ml / this", "this / in memory", "CPU s / iteration (all processes)",
         "CPU: this / in memory", "whole fit, s"],
        [[k, iters[k], v, in_loop.get(k, "-"),
          (med["dask-ml"] / v) if "dask-ml" in med else "-", v / mem_it, cpu_it[k],
          cpu_it[k] / cpu_it["metriclust (in memory)"], whole[k]]
         for k, v in med.items()]))
    if "metriclust (dask)" in in_loop:
        ld = in_loop["metriclust (dask)"]
        lines.append("")
        lines.append(f"With the pass timed in the loop: dask-ml / ours "
                     f"{med['dask-ml'] / ld:.3g}x; ours / in memory {ld / mem_it:.3g}x."
                     if "dask-ml" in med else
                     f"With the pass timed in the loop: ours / in memory {ld / mem_it:.3g}x.")
    lines.append("")
    lines.append(f"Same labels as in memory after {1 + args.peer_iters} iterations: {same} "
                 f"(largest center difference {dc:.3g}){peer_note}.")
    lines.append(f"Per task: one chunk of {rows_per_chunk} rows, the pass's lloyd_partial "
                 f"(sums only) on one thread in the client {t_task * 1e3:.2f} CPU-ms "
                 f"({t_task / rows_per_chunk * 1e9:.2f} CPU-ns a row; the in-memory C Lloyd "
                 f"loop {loop_ns[1]:.2f} CPU-ns a row on 1 thread, {loop_ns[2]:.2f} on 2); "
                 f"its reduced partial {partial_bytes} bytes pickled; "
                 f"{args.chunks} no-op tasks on the cluster {t_noop['chunks'] * 1e3:.1f} ms "
                 f"({t_noop['chunks'] / args.chunks * 1e3:.2f} ms a task); one no-op task "
                 f"on each of the {len(workers)} workers {t_noop['workers'] * 1e3:.1f} ms.")
    if split:
        lines.append(
            f"Where a Dask Lloyd pass goes (task stream of a fit, {split['passes']} passes, "
            f"medians): pass {split['wall'] * 1e3:.1f} ms in the loop; the slower worker's "
            f"task {split['max'] * 1e3:.1f} ms, the faster's {split['min'] * 1e3:.1f} ms "
            f"(compute); both tasks' compute {split['sum'] / (int(args.n)) * 1e9:.2f} ns a "
            f"row on one thread; the rest of the pass (submit, scheduler, transfers of "
            f"results, gather, reduction) {(split['wall'] - split['max']) * 1e3:.1f} ms.")
    lines.append("")


def _pass_breakdown(client, fit, n, iters=6):
    """Per-pass figures of a Dask fit from the task stream: medians over its Lloyd
    passes of the pass's wall time in the loop, of the slower and faster worker
    task's compute time and of their sum; None if the passes cannot be told apart."""
    import distributed

    buf = io.StringIO()
    with distributed.get_task_stream(client) as ts, contextlib.redirect_stdout(buf):
        fit(iters)
    walls = [float(g.group(1)) for g in map(_PASS_LINE.search, buf.getvalue().splitlines())
             if g]
    # one task per worker thread a pass; the Lloyd passes are the fit's last such tasks
    # (the mean and variance passes come before them, the labelling pass is per chunk)
    per = sum(client.nthreads().values())
    recs = sorted((r for r in ts.data if "_run_group" in str(r["key"])
                   or "_run_bundle" in str(r["key"])),
                  key=lambda r: min(s["start"] for s in r["startstops"]))
    if not walls or len(recs) < per * len(walls):
        return None
    recs = recs[len(recs) - per * len(walls):]
    comp = [sum(s["stop"] - s["start"] for s in r["startstops"] if s["action"] == "compute")
            for r in recs]
    groups = [comp[i:i + per] for i in range(0, len(comp), per)]
    return {"passes": len(walls), "wall": float(np.median(walls)),
            "max": float(np.median([max(g) for g in groups])),
            "min": float(np.median([min(g) for g in groups])),
            "sum": float(np.median([sum(g) for g in groups]))}


def _loop_ns_per_row(Xm, init, iters=5):
    """The in-memory C Lloyd loop (on X centred once) per row and iteration: CPU ns on
    1 and on 2 threads (by the difference of 1 and 1 + iters iterations)."""
    from metriclust._kernels import _kmeans as _k

    Xc = Xm - Xm.mean(axis=0)
    C = np.ascontiguousarray(init - Xm.mean(axis=0), dtype=Xm.dtype)
    out = {}
    for nt in (1, 2):
        clock = time.process_time
        t = []
        for m in (1, 1 + iters):
            c = C.copy()
            t0 = clock()
            _k.lloyd(Xc, None, c, m, 0.0, "auto", nt)
            t.append(clock() - t0)
        out[nt] = (t[1] - t[0]) / iters / Xm.shape[0] * 1e9
    return out


_PER_IT = {}


def _recording(name, fn):
    def run():
        _PER_IT.setdefault(name, []).append(fn())
    return run


def bench_cpcm(args, client, lines):
    import dask.array as da
    from metriclust import CPCM

    n, p, K = int(args.cpcm_n), args.cpcm_p, args.cpcm_k
    chunks = args.cpcm_chunks or args.chunks
    rows = -(-n // chunks)
    rng = np.random.default_rng(2)
    centers = rng.normal(scale=1.5, size=(K, p)).astype(np.float32)

    def block(b, block_info=None):
        lo, hi = block_info[0]["array-location"][0]
        r = np.random.default_rng(1000 + lo)
        y = r.integers(K, size=hi - lo)
        return (centers[y] + r.standard_normal((hi - lo, p), dtype=np.float32))

    X = da.zeros((n, p), dtype=np.float32, chunks=(rows, p)).map_blocks(
        block, dtype=np.float32).persist()
    Xm = X.compute()
    load0 = _common.load_average()
    t0 = time.perf_counter()
    ref = CPCM(K, random_state=0).fit(Xm)
    t1 = time.perf_counter()
    got = CPCM(K, random_state=0).fit(X)
    labels = got.labels_.compute()
    t2 = time.perf_counter()
    load1 = _common.load_average()
    lines.append(f"## CPCM linear, N = {n:.3g}, p = {p}, K = {K}, float32, {chunks} "
                 f"chunks; load average {load0:.1f} before, {load1:.1f} after")
    lines.append("")
    lines.append(_common.markdown_table(
        ["fit", "seconds", "blur ratio", "iterations"],
        [["in memory", t1 - t0, ref.blur_ratio_, ref.n_iter_],
         ["dask (LocalCluster)", t2 - t1, got.blur_ratio_, got.n_iter_]]))
    lines.append("")
    lines.append(f"Labels equal: {bool(np.array_equal(labels, ref.labels_))} "
                 f"({int(np.count_nonzero(labels != ref.labels_))} rows differ); "
                 f"|blur ratio difference| {abs(got.blur_ratio_ - ref.blur_ratio_):.3g}; "
                 f"largest |coef_ difference| {float(np.max(np.abs(got.coef_ - ref.coef_))):.3g}.")
    lines.append("")


def bench_methods(args, client, lines):
    """MMC (D = all pairs not in S) and CPD-UML (Nystrom) on Dask against the in-memory fit."""
    import warnings

    import dask.array as da
    from metriclust import CPDUML, MMC
    from metriclust.metrics import adjusted_rand_index

    rng = np.random.default_rng(3)
    d, K = 8, 4
    centers = rng.normal(scale=3.0, size=(K, d))
    rows = []
    # MMC: the all-pairs sums, one task per block pair and evaluation
    n = int(args.mmc_n)
    y = rng.integers(K, size=n)
    X = (centers[y] + rng.normal(size=(n, d))).astype(np.float32)
    S = []
    while len(S) < 1000:
        i, j = rng.integers(n, size=2)
        if i != j and y[i] == y[j]:
            S.append((i, j))
    S = np.array(S)
    Xd = da.from_array(X, chunks=(-(-n // args.method_chunks), d)).persist()
    load0 = _common.load_average()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        ref = MMC(tol=1e-6).fit(X, similar=S)
        t1 = time.perf_counter()
        got = MMC(tol=1e-6).fit(Xd, similar=S)
        t2 = time.perf_counter()
    diff = np.linalg.norm(got.metric_ - ref.metric_) / np.linalg.norm(ref.metric_)
    rows.append([f"MMC all pairs, N = {n}", t1 - t0, t2 - t1, ref.n_iter_, got.n_iter_,
                 f"J rel. diff {abs(got.objective_ / ref.objective_ - 1):.1e}, "
                 f"A rel. diff {diff:.1e}"])
    # CPD-UML: Nystrom features per chunk
    n = int(args.cpd_n)
    y = rng.integers(K, size=n)
    X = (centers[y] + rng.normal(size=(n, d))).astype(np.float32)
    Xd = da.from_array(X, chunks=(-(-n // args.method_chunks), d)).persist()
    kw = dict(n_clusters=K, sigma=0.5, lam=1e-3, approximation="nystrom", n_components=50,
              n_init=1, max_iter=10, random_state=0)
    t0 = time.perf_counter()
    ref = CPDUML(**kw).fit(X)
    t1 = time.perf_counter()
    got = CPDUML(**kw).fit(Xd)
    t2 = time.perf_counter()
    rows.append([f"CPDUML Nystrom m = 50, N = {n}", t1 - t0, t2 - t1, ref.n_iter_, got.n_iter_,
                 f"J rel. diff {abs(got.objective_ / ref.objective_ - 1):.1e}, ARI "
                 f"{adjusted_rand_index(ref.labels_, got.labels_):.4f}"])
    load1 = _common.load_average()
    lines.append(f"## MMC (D = all pairs not in S) and CPD-UML (Nystrom) on Dask, d = {d}, "
                 f"K = {K}, float32, {args.method_chunks} chunks; load average {load0:.1f} "
                 f"before, {load1:.1f} after")
    lines.append("")
    lines.append(_common.markdown_table(
        ["fit", "in memory (s)", "dask (s)", "iterations (memory)", "iterations (dask)",
         "agreement"], rows))
    lines.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=2e7)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10, help="Lloyd iterations timed (ours)")
    ap.add_argument("--peer-iters", type=int, default=3, help="Lloyd iterations timed (dask-ml)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpcm-n", type=float, default=1e7)
    ap.add_argument("--cpcm-p", type=int, default=20)
    ap.add_argument("--cpcm-k", type=int, default=5)
    ap.add_argument("--cpcm-chunks", type=int, default=None,
                    help="row chunks of CPCM's data (default: --chunks)")
    ap.add_argument("--skip-kmeans", action="store_true")
    ap.add_argument("--skip-cpcm", action="store_true")
    ap.add_argument("--methods", action="store_true",
                    help="also MMC (all pairs) and CPD-UML (Nystrom) against memory")
    ap.add_argument("--mmc-n", type=float, default=2e4)
    ap.add_argument("--cpd-n", type=float, default=1e6)
    ap.add_argument("--method-chunks", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="N = 2e6 and 1e6, 2 repeats")
    ap.add_argument("--spin", action="store_true", help="OpenMP threads spin (default passive)")
    args = ap.parse_args()
    if args.quick:
        args.n, args.cpcm_n, args.repeats = 2e6, 1e6, 2

    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    try:
        header, _ = _common.machine_header("bench_dask", os.cpu_count(), repeats=3)
        lines = header + ["cluster: distributed.LocalCluster, 2 worker processes x 1 thread",
                          ""]
        print("\n".join(lines), flush=True)
        done = len(lines)
        if not args.skip_kmeans:
            bench_kmeans(args, client, lines)
            print("\n".join(lines[done:]), flush=True)
            done = len(lines)
        if not args.skip_cpcm:
            bench_cpcm(args, client, lines)
            print("\n".join(lines[done:]), flush=True)
            done = len(lines)
        if args.methods:
            bench_methods(args, client, lines)
            print("\n".join(lines[done:]), flush=True)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
