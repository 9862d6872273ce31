"""The k-means core's gain inside whole fits: CPCM at N = 1e6, CPD-UML at N = 1e5.

Issue #10 asks to report CPCM's N = 1e6 fit and CPD-UML's 1e5 fit before and
after the core's work. Each installed version (one Python interpreter per
version, given with ``--python``) runs each fit in a fresh child process; the
versions take turns within every repeat and the table shows medians and the
ratio to the first interpreter. Each child fits twice: the first fit in a
fresh process also pays one-time costs (wave 2 made ``import metriclust`` lazy,
so scipy's modules now load inside the first fit instead of at import), the
second ("warm") is the fit's own cost. The fits are spelled out in full, so that
versions whose defaults differ run the same algorithm:

- CPCM: ``CPCM(5, n_init=10, random_state=0)`` on ``_common.cpcm_data``, the data of
  ``bench_cpcm.py`` (N = 1e6, p = 20, K = 5). What ``init="auto"`` starts from
  changed between versions; ``cpcm_kmeans`` (``init="kmeans"``: ten k-means++
  runs on X, then the alternations) is the same algorithm in every version.
- CPD-UML: ``CPDUML(2, sigma=0.8, lam=0.0025, kernel=None,
  approximation="nystrom", n_components=100, random_state=0)`` on two moons
  (N = 1e5): the wave-1 defaults, written out.
- KMeans: ``KMeans(5, n_init=1, random_state=0)`` on the CPCM data (k-means++
  seeding included), ``kmeans_k256``: ``KMeans(256, n_init=1, max_iter=30,
  tol=0)`` on 2e5 x 16 uniform float32 (the seeding's share grows with K), and
  ``kmeans_d64``: ``KMeans(32, n_init=1, max_iter=20, random_state=0)`` on 1e6 x 64
  uniform float64 (512 MB: the seeding and the per-fit passes over X, the mean,
  the variance behind ``tol`` and the centred copy, weigh more than at d = 20).
- Pruned float64 fits, ``init="random", n_init=1, max_iter=30, tol=0``, K = 256:
  ``kmeans_elkan_f64``, ``algorithm="elkan"`` on 2e5 x 64 float64 Gaussian blobs (256
  of them, unit spread, means at scale 4: where the bounds keep pruning), and
  ``kmeans_auto_f64``, ``algorithm="auto"`` (which prunes there) on 2e5 x 32 uniform
  float64 (where the bounds stop paying after a few passes). Random seeds, because
  k-means++ at K = 256 would take most of these fits (about 90% at d = 64).

A second child per version and fit runs the same warm fit under ``cProfile`` and
reports the seconds spent in calls into ``metriclust._core.kmeans`` from
outside it (the k-means core and its Python driver; present in every version),
so the table says how much of each fit the core is.

Usage: python benchmarks/bench_core_fits.py --python OLD/bin/python NEW/bin/python
           [--repeats 3] [--fits cpcm cpcm_kmeans cpduml kmeans kmeans_k256 kmeans_d64
                  kmeans_elkan_f64 kmeans_auto_f64]
"""

import _common  # noqa: F401  (first: OpenMP wait policy)

import argparse
import json
import os
import sys
import time
import zlib

import numpy as np

def make_fit(name):
    """(X, estimator) of one of the two fits."""
    if name.startswith("kmeans"):
        from metriclust import KMeans

        if name == "kmeans_k256":
            X = np.random.default_rng(0).random((200_000, 16)).astype(np.float32)
            return X, KMeans(256, n_init=1, max_iter=30, tol=0.0, random_state=0)
        if name == "kmeans_d64":
            X = np.random.default_rng(0).random((1_000_000, 64))
            return X, KMeans(32, n_init=1, max_iter=20, random_state=0)
        if name == "kmeans_elkan_f64":
            rng = np.random.default_rng(0)
            means = rng.normal(scale=4.0, size=(256, 64))
            X = means[rng.integers(256, size=200_000)] + rng.normal(size=(200_000, 64))
            return X, KMeans(256, init="random", n_init=1, max_iter=30, tol=0.0,
                             algorithm="elkan", random_state=0)
        if name == "kmeans_auto_f64":
            X = np.random.default_rng(0).random((200_000, 32))
            return X, KMeans(256, init="random", n_init=1, max_iter=30, tol=0.0,
                             algorithm="auto", random_state=0)
        X, _ = _common.cpcm_data(1_000_000)
        return X, KMeans(5, n_init=1, random_state=0)
    if name.startswith("cpcm"):
        from metriclust import CPCM

        X, _ = _common.cpcm_data(1_000_000)
        init = "kmeans" if name == "cpcm_kmeans" else "auto"
        return X, CPCM(5, n_init=10, init=init, random_state=0)
    from metriclust import CPDUML
    from metriclust.datasets import make_moons

    X, _ = make_moons(100_000, noise=0.1, random_state=0)
    return X, CPDUML(2, sigma=0.8, lam=0.0025, kernel=None, approximation="nystrom",
                     n_components=100, random_state=0)


def child(name, profile):
    X, est = make_fit(name)
    if not profile:
        first, _, est = _common.timed_call(lambda: est.fit(X))
        time.sleep(0.3)  # a BLAS pool thread started by the first fit spins ~50 ms
        wall, cpu, est = _common.timed_call(lambda: est.fit(X))
        labels = np.asarray(est.labels_, dtype=np.int64)
        print(json.dumps({"first": first, "wall": wall, "cpu": cpu,
                          "labels": f"{zlib.crc32(labels.tobytes()):08x}"}))
        return
    import cProfile
    import pstats

    est.fit(X)
    time.sleep(0.3)
    pr = cProfile.Profile()
    pr.enable()
    est.fit(X)
    pr.disable()
    st = pstats.Stats(pr)
    mine = [k for k in st.stats if k[0].endswith(os.path.join("_core", "kmeans.py"))]
    # Entries into the k-means module from outside it (cumulative: the C core and what the
    # module's functions call), so nested calls are not counted twice.
    core = sum(ct for k in mine for caller, (_, _, _, ct) in st.stats[k][4].items()
               if caller not in mine)
    print(json.dumps({"kmeans": core, "total": st.total_tt}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", nargs="+", default=[sys.executable])
    ap.add_argument("--repeats", type=int, default=3)
    fits = ["cpcm", "cpcm_kmeans", "cpduml", "kmeans", "kmeans_k256", "kmeans_d64",
            "kmeans_elkan_f64", "kmeans_auto_f64"]
    ap.add_argument("--fits", nargs="+", default=fits, choices=fits)
    ap.add_argument("--child", nargs=2, metavar=("FIT", "PROFILE"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1] == "1")
        return
    n_threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    for line in _common.machine_header("bench_core_fits.py", n_threads)[0]:
        print(line)
    for fit in args.fits:
        runs = {py: [] for py in args.python}
        prof = {}
        for _ in range(args.repeats):
            for py in args.python:
                runs[py].append(_common.run_json_child([py, __file__, "--child", fit, "0"]))
        for py in args.python:
            prof[py] = _common.run_json_child([py, __file__, "--child", fit, "1"])
        print(f"\n{fit}: medians of {args.repeats} fresh-process fits, versions interleaved\n")
        print(_common.markdown_table(["interpreter", "first fit wall s", "warm fit wall s",
                                      "warm fit CPU s", "x first interpreter (warm wall)",
                                      "k-means core s (profiled run)", "core share",
                                      "labels (crc32)"]))
        first = None
        for py in args.python:
            f = float(np.median([r["first"] for r in runs[py]]))
            w = float(np.median([r["wall"] for r in runs[py]]))
            c = float(np.median([r["cpu"] for r in runs[py]]))
            first = first or w
            p = prof[py]
            print(_common.markdown_row([py, f"{f:.2f}", f"{w:.2f}", f"{c:.2f}",
                                        f"{first / w:.2f}",
                                        f"{p['kmeans']:.2f}", f"{p['kmeans'] / p['total']:.0%}",
                                        runs[py][-1]["labels"]]), flush=True)


if __name__ == "__main__":
    main()
