"""Benchmark CPCM (Gupta, Foster & Ungar 2008) against the straightforward composition.

Sections (all printed as markdown tables):

1. peer: one CPCM run from the same random starting partition, ours
   (``CPCM(init=labels)``: one QR, per-iteration cluster sums + GEMM, the C k-means
   core) against what a user would write (``numpy.linalg.lstsq`` refit of ``[1, X]``
   + scikit-learn ``KMeans(init=theta, n_init=1)`` every iteration, the same
   accept-if-the-blur-ratio-drops rule). Interleaved repeats, medians, ratio, and
   the final blur ratio of each (the comparison is at equal final blur ratio).
2. large: ``CPCM(n_init=10)`` (linear, init="auto") at N = 1e6, p = 20, K = 5 in a
   subprocess: wall time and peak RSS against the input's size.
3. kernel: ``CPCM(predictor="kernel", n_components=200)`` at N = 1e5 (concentric
   circles): wall time and ARI.
4. table1: the paper's Table 1 (VI and Rand) on glass, ionosphere, sonar, and how
   often each kind of start wins.

Usage: ``python benchmarks/bench_cpcm.py [--quick] [--only peer,large,kernel,table1]``
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import json
import os
import sys
from pathlib import Path

import numpy as np

from metriclust import CPCM, datasets
from metriclust._core import starts
from metriclust.metrics import adjusted_rand_index, rand_index, variation_of_information

DATA = Path(os.environ.get("METRICLUST_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))


# ----------------------------------------------------------------- the peer

def _blur_ratio(Zhat, labels, K):
    theta = np.array([Zhat[labels == k].mean(0) for k in range(K)])
    ssc = ((Zhat - theta[labels]) ** 2).sum()
    return ssc / ((Zhat - Zhat.mean(0)) ** 2).sum()


def peer_cpcm(X, labels, K, max_iter=100, tol=1e-6):
    """CPCM as a user would compose it: lstsq refit + sklearn KMeans each iteration."""
    from sklearn.cluster import KMeans

    A = np.column_stack([np.ones(len(X)), X])

    def predict(lab):
        Z = np.eye(K)[lab]
        Zhat = A @ np.linalg.lstsq(A, Z, rcond=None)[0]
        return Zhat, _blur_ratio(Zhat, lab, K)

    Zhat, br = predict(labels)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        theta = np.array([Zhat[labels == k].mean(0) for k in range(K)])
        new = KMeans(K, init=theta, n_init=1).fit(Zhat).labels_.astype(np.int64)
        if np.array_equal(new, labels):
            break
        Znew, brnew = predict(new)
        if not brnew < br - tol:
            break
        labels, Zhat, br = new, Znew, brnew
    return labels, br, n_iter


def section_peer(quick):
    n = 20_000 if quick else 100_000
    repeats = 2 if quick else 5
    X, y = _common.cpcm_data(n)
    K = 5
    rows = []
    for seed in range(2 if quick else 3):
        start = starts.random_partition(n, K, np.random.default_rng(seed))
        med = _common.medians(_common.interleaved(
            {"ours": lambda: CPCM(K, init=start).fit(X),
             "peer": lambda: peer_cpcm(X, start.copy(), K)}, repeats, warmup=False))
        mo, mp = med["ours"], med["peer"]
        est = CPCM(K, init=start).fit(X)
        lab, br, it = peer_cpcm(X, start.copy(), K)
        rows.append((seed, mo, mp, mp / mo, est.blur_ratio_, br, est.n_iter_, it,
                     adjusted_rand_index(est.labels_, lab)))
    print(f"\n### 1. One CPCM run from the same random start: N={n}, p=20, K=5 "
          f"(median of {repeats} interleaved repeats)\n")
    print(_common.markdown_table(["start", "ours (s)", "peer (s)", "speed-up", "BR ours",
                                  "BR peer", "iters ours", "iters peer", "ARI(ours, peer)"],
                                 [(r[0], r[1], r[2], f"**{r[3]:.1f}x**", f"{r[4]:.6f}",
                                   f"{r[5]:.6f}", r[6], r[7], f"{r[8]:.4f}") for r in rows]))
    return rows


# ---------------------------------------------------------- large, subprocess

def _child_large(n):
    X, _ = _common.cpcm_data(n)
    import gc

    gc.collect()
    before = _common.reset_peak_rss()
    wall, _, est = _common.timed_call(lambda: CPCM(5, n_init=10, random_state=0).fit(X))
    peak = _common.peak_rss_bytes()
    print(json.dumps({"wall": wall, "peak": peak, "before": before, "input": X.nbytes,
                      "br": est.blur_ratio_, "best": est.best_start_,
                      "kinds": est.start_kinds_, "search_size": est.search_size_}))


def section_large(quick):
    n = 200_000 if quick else 1_000_000
    r = _common.run_json_child([sys.executable, __file__, "--child-large", n])
    if "wall" not in r:
        raise RuntimeError(f"the child of section 2 failed: {r}")
    mib = 2.0 ** 20
    print(f"\n### 2. Linear CPCM, n_init=10, init='auto': N={n}, p=20, K=5 (one subprocess)\n")
    print("| wall (s) | input X (MiB) | RSS before fit (MiB) | peak RSS during fit (MiB) | fit's extra memory / input | (X + fit's extra) / input | blur ratio | winning start | search size |")
    print("|---|---|---|---|---|---|---|---|---|")
    extra = r["peak"] - r["before"]
    print(f"| {r['wall']:.1f} | {r['input'] / mib:.0f} | {r['before'] / mib:.0f} | "
          f"{r['peak'] / mib:.0f} | **{extra / r['input']:.2f}x** | "
          f"**{(extra + r['input']) / r['input']:.2f}x** | {r['br']:.5f} | "
          f"{r['best']} | {r['search_size']} |")
    print(f"\nstarts: {r['kinds']}")
    return r


# -------------------------------------------------------------------- kernel

def section_kernel(quick):
    n = 20_000 if quick else 100_000
    X, y = datasets.make_concentric_circles(n, random_state=0)
    # one fit (minutes at N = 1e5): timed once
    wall, _, est = _common.timed_call(
        lambda: CPCM(3, predictor="kernel", n_components=200, random_state=0).fit(X))
    print(f"\n### 3. Kernel CPCM, Nystrom m=200: N={n} concentric circles, K=3\n")
    print("| wall (s) | ARI | blur ratio | effective dof | winning start |")
    print("|---|---|---|---|---|")
    print(f"| {wall:.1f} | {adjusted_rand_index(y, est.labels_):.3f} | {est.blur_ratio_:.4f} "
          f"| {est.effective_dof_:.1f} | {est.best_start_} |")
    return wall


# -------------------------------------------------------------------- table 1

# Gupta et al. 2008, Table 1 (a) VI and (b) Rand; columns CPCM-LSR, CPCM-RKHS, k-means, LDA-km
PAPER = {
    "glass": {"K": 6, "vi": (0.383, 0.371, 0.316, 0.397), "rand": (0.68, 0.73, 0.681, 0.665)},
    "ionosphere": {"K": 2, "vi": (0.205, 0.202, 0.198, 0.203), "rand": (0.571, 0.501, 0.589, 0.577)},
    "sonar": {"K": 2, "vi": (0.236, 0.231, 0.257, 0.229), "rand": (0.508, 0.499, 0.503, 0.499)},
}


def _load(name):
    raw = np.loadtxt(DATA / f"{name}.csv", delimiter=",", skiprows=1)
    return np.ascontiguousarray(raw[:, :-1]), raw[:, -1].astype(np.int64)


def section_table1(quick):
    import warnings

    from metriclust._core.kmeans import kmeans

    seeds = range(3 if quick else 10)
    methods = {
        "CPCM-LSR random (paper)": lambda K, s: dict(init="random", n_init=10, random_state=s),
        "CPCM-LSR auto": lambda K, s: dict(random_state=s),
        "CPCM-RKHS auto": lambda K, s: dict(predictor="kernel", random_state=s),
        "CPCM-RKHS random": lambda K, s: dict(predictor="kernel", init="random", random_state=s),
        "CPCM-LDA auto": lambda K, s: dict(predictor="lda", random_state=s),
        "CPCM-LSRstep auto": lambda K, s: dict(predictor="stepwise", random_state=s),
    }
    print(f"\n### 4. Table 1: VI / log N and Rand index, mean over {len(seeds)} seeds "
          "(raw features, no per-data-set tuning)\n")
    print("| data | method | VI/log N (ours) | VI (nats) | Rand (ours) | paper VI | paper Rand | blur ratio | winning starts |")
    print("|---|---|---|---|---|---|---|---|---|")
    wins = {}
    for name, ref in PAPER.items():
        X, y = _load(name)
        K, logn = ref["K"], np.log(len(X))
        km = [kmeans(X, K, n_init=10, random_state=s).labels for s in seeds]
        vi = [variation_of_information(y, lab) for lab in km]
        print(f"| {name} | k-means (raw) | {np.mean(vi) / logn:.3f} | {np.mean(vi):.3f} | "
              f"{np.mean([rand_index(y, lab) for lab in km]):.3f} | {ref['vi'][2]} | "
              f"{ref['rand'][2]} | | |")
        for mname, params in methods.items():
            vis, rands, brs, kinds = [], [], [], []
            for s in seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = CPCM(K, **params(K, s)).fit(X)
                vis.append(variation_of_information(y, est.labels_))
                rands.append(rand_index(y, est.labels_))
                brs.append(est.blur_ratio_)
                kinds.append(est.best_start_.split()[0])
            if "auto" in mname:
                for k in kinds:
                    wins[k] = wins.get(k, 0) + 1
            col = 0 if "LSR " in mname else 1 if "RKHS" in mname else 3 if "LDA" in mname else None
            pv = ref["vi"][col] if col is not None else ""
            pr = ref["rand"][col] if col is not None else ""
            kind_counts = {k: kinds.count(k) for k in sorted(set(kinds))}
            print(f"| {name} | {mname} | {np.mean(vis) / logn:.3f} | {np.mean(vis):.3f} | "
                  f"{np.mean(rands):.3f} | {pv} | {pr} | {np.mean(brs):.4f} | {kind_counts} |")
    # the paper's figures: which start kind wins with init="auto"
    figs = {
        "Fig1a lines (linear)": (lambda s: datasets.make_parallel_lines(300, random_state=s), 2, "linear"),
        "Fig1d 3 lines (kernel)": (lambda s: datasets.make_parallel_lines(300, n_lines=3, random_state=s), 3, "kernel"),
        "Fig1f circles (kernel)": (lambda s: datasets.make_concentric_circles(300, random_state=s), 3, "kernel"),
        "Sec5.1 clouds (stepwise)": (lambda s: datasets.make_parallel_clouds(300, random_state=s), 3, "stepwise"),
    }
    print("\n| data (init='auto') | mean ARI | winning start kinds |")
    print("|---|---|---|")
    for fname, (make, K, pred) in figs.items():
        aris, kinds = [], []
        for s in seeds:
            X, y = make(s)
            est = CPCM(K, predictor=pred, random_state=s).fit(X)
            aris.append(adjusted_rand_index(y, est.labels_))
            kinds.append(est.best_start_.split()[0])
            wins[kinds[-1]] = wins.get(kinds[-1], 0) + 1
        print(f"| {fname} | {np.mean(aris):.3f} | "
              f"{ {k: kinds.count(k) for k in sorted(set(kinds))} } |")
    print(f"\nwins by start kind over all init='auto' fits above: {wins}")


def main():
    args = _common.section_parser(__doc__, ["peer", "large", "kernel", "table1"],
                                  child_large=True).parse_args()
    if args.child_large:
        return _child_large(args.child_large)
    from metriclust._core.threads import effective_n_threads

    header, _ = _common.machine_header("bench_cpcm" + (" --quick" if args.quick else ""),
                                       effective_n_threads())
    print("\n".join(header))
    for name in args.only.split(","):
        globals()[f"section_{name}"](args.quick)
    print(f"\nload average at the end: {_common.load_average():.1f}")


if __name__ == "__main__":
    main()
