"""Wide data (p >> N, issue #23): this branch against today's code, in the same run.

"Today's code" is a build of another commit (default: ``main``) in its own
worktree and virtual environment (``--setup-baseline`` makes both; about two
minutes of compiling)::

    python benchmarks/bench_wide.py --setup-baseline          # once
    python benchmarks/bench_wide.py                           # the 96 x 4026 targets
    python benchmarks/bench_wide.py --big                     # 1000 x 20000 float32
    python benchmarks/bench_wide.py --table2                  # CPCM Table 2 protocol

Every fit runs in a fresh subprocess (peak resident memory, VmHWM,
so it includes Python, numpy and the data), the two builds interleaved
(new, old, new, old, ...), medians of ``--repeats``; "CPU s" is the process's CPU
time (all threads) during the fit, which a loaded machine inflates far less than wall
time. A run of the old code is stopped after ``--old-timeout`` seconds (default
120 s) and reported as ``> timeout``: several of its paths take tens of minutes here.

The data are SYNTHETIC: the paper's lymphoma set (Alizadeh et al. 2000, 96
samples x 4026 genes, K = 9 classes of sizes 46, 2, 2, 10, 6, 6, 9, 4, 11) is
not in the shared data. :func:`make_lymphoma_like` draws a set of that shape
and those class sizes: a gene-wise baseline, a shared 5-factor sample effect,
200 class-specific genes per class shifted by N(0, 1), unit noise. Its
parameters were chosen once, a priori, and were not tuned to the paper's Rand
index 0.845.

Results checked per case: CPCM - blur ratio (lower is better) and whether the
partitions are equal; CPD-UML - its objective J (eq. 11, lower is better) and
the partition; MMC - ``objective_`` (sum over D of d_A at sum_S d_A^2 = 1: the
paper's scale-free objective, higher is better).
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BASE_DIR = Path(os.environ.get("METRICLUST_WIDE_BASE", "/tmp/metriclust-wide-base"))
BASE_PY = BASE_DIR / ".venv" / "bin" / "python"
LYMPHOMA_SIZES = (46, 2, 2, 10, 6, 6, 9, 4, 11)


def make_lymphoma_like(n_samples=96, n_features=4026, sizes=LYMPHOMA_SIZES, *,
                       dtype=np.float64, random_state=0):
    """Synthetic expression-like data of the lymphoma set's shape (see module docstring)."""
    rng = np.random.default_rng(random_state)
    sizes = np.asarray(sizes)
    if sizes.sum() != n_samples:                  # scale the class sizes to n_samples
        sizes = np.maximum(1, np.round(sizes * n_samples / sizes.sum())).astype(int)
        sizes[0] += n_samples - sizes.sum()
    y = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(0.0, 1.0, (n_samples, n_features))
    X += rng.normal(0.0, 1.0, n_features)                                 # gene baseline
    X += rng.normal(0.0, 1.0, (n_samples, 5)) @ rng.normal(0.0, 0.3, (5, n_features))
    for k in range(len(sizes)):
        genes = rng.choice(n_features, 200, replace=False)
        X[np.ix_(y == k, genes)] += rng.normal(0.0, 1.0, 200)
    return X.astype(dtype), y


def similar_pairs(y, n_pairs, seed=0):
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(len(y), 1)
    same = np.flatnonzero(y[i] == y[j])
    pick = rng.choice(same, min(n_pairs, same.size), replace=False)
    return np.c_[i[pick], j[pick]]


# ----------------------------------------------------------------------------- child
def child(case, n, p, dtype):
    """One fit in this process; prints one JSON line."""
    import warnings

    warnings.simplefilter("ignore")
    from metriclust import CPCM, CPDUML, MMC

    X, y = make_lymphoma_like(n, p, dtype=np.dtype(dtype))
    K = len(LYMPHOMA_SIZES)
    out = {}

    def fit():
        if case.startswith("cpcm-"):
            est = CPCM(K, predictor=case[5:], random_state=0).fit(X)
            out.update(value=float(est.blur_ratio_), labels=est.labels_.tolist(),
                       starts=int(len(est.search_["kind"])))
        elif case == "cpduml":
            est = CPDUML(K, random_state=0).fit(X)
            out.update(value=float(est.objective_), labels=est.labels_.tolist())
        elif case.startswith("mmc-"):
            est = MMC(diagonal=case == "mmc-diag").fit(X, similar=similar_pairs(y, 100))
            out.update(value=float(est.objective_), n_iter=int(est.n_iter_),
                       converged=bool(est.converged_))

    # CPU seconds of all threads: load-independent
    out["seconds"], out["cpu_seconds"], _ = _common.timed_call(fit)
    out["peak_mb"] = _common.peak_rss_bytes() / 2**20
    print(json.dumps(out))


def run(python, case, n, p, dtype, timeout):
    return _common.run_json_child([python, __file__, "--child", case, "--n", n, "--p", p,
                                   "--dtype", dtype], timeout=timeout, cwd=str(HERE))


# ----------------------------------------------------------------------------- table 2
def table2(runs=100):
    """CPCM Table 2 protocol on the synthetic lymphoma-shaped set.

    The paper (Sec. 5.3): the first K - 1 principal components as features
    (Ding & He 2004), 100 runs of each algorithm, mean Rand index; k-means
    0.748, spectral 0.777, CPCM-RKHS 0.845. A run here is one random start
    (``init="random", n_init=1``: the paper's protocol) with seed 0..runs-1;
    also shown: CPCM-RKHS with the library's default search over starts, and
    CPCM on all 4026 features (kernel and stepwise predictors).
    """
    import warnings

    warnings.simplefilter("ignore")
    from metriclust import CPCM, KMeans
    from metriclust.metrics import rand_index

    X, y = make_lymphoma_like()
    K = len(LYMPHOMA_SIZES)
    Xc = X - X.mean(0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    F = U[:, :K - 1] * s[:K - 1]
    rows = []
    km = [rand_index(y, KMeans(K, n_init=1, random_state=r).fit(F).labels_) for r in range(runs)]
    rows.append(("k-means, 8 PCs", "one k-means++ seeding", np.mean(km), runs))
    cp = [rand_index(y, CPCM(K, predictor="kernel", init="random", n_init=1,
                             random_state=r).fit(F).labels_) for r in range(runs)]
    rows.append(("CPCM-RKHS, 8 PCs", "one random start", np.mean(cp), runs))
    for r_ in (0,):
        est = CPCM(K, predictor="kernel", random_state=r_).fit(F)
        rows.append(("CPCM-RKHS, 8 PCs", "default search (init='auto')",
                     rand_index(y, est.labels_), 1))
    for pred in ("kernel", "stepwise"):
        est = CPCM(K, predictor=pred, random_state=0).fit(X)
        rows.append((f"CPCM-{pred}, all 4026 features", "default search",
                     rand_index(y, est.labels_), 1))
    print("| method | starts | mean Rand index | runs |\n|---|---|---|---|")
    for name, how, ri, nr in rows:
        print(f"| {name} | {how} | {ri:.3f} | {nr} |")
    print("\nPaper (Table 2, real lymphoma data): k-means 0.748, spectral 0.777, "
          "CPCM-RKHS 0.845.")


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child")
    ap.add_argument("--n", type=int, default=96)
    ap.add_argument("--p", type=int, default=4026)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--big", action="store_true", help="1000 x 20000 float32")
    ap.add_argument("--table2", action="store_true")
    ap.add_argument("--cases", default="cpcm-linear,cpcm-kernel,cpcm-stepwise,cpcm-lda,"
                                       "cpduml,mmc-full,mmc-diag")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-timeout", type=float, default=120.0)
    ap.add_argument("--new-timeout", type=float, default=3600.0)
    ap.add_argument("--no-old", action="store_true", help="skip the old (baseline) build; time only this checkout")
    ap.add_argument("--setup-baseline", action="store_true")
    ap.add_argument("--baseline-ref", default="main")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.n, args.p, args.dtype)
    if args.setup_baseline:
        repo = HERE.parent
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(BASE_DIR),
                        args.baseline_ref], check=True)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                        str(BASE_DIR / ".venv")], check=True)
        subprocess.run([str(BASE_PY), "-m", "pip", "install", "-q", "--no-build-isolation",
                        str(BASE_DIR)], check=True)
        return
    if args.table2:
        return table2()
    if args.big:
        args.n, args.p, args.dtype = 1000, 20000, "float32"
    old = None if args.no_old or not BASE_PY.exists() else BASE_PY
    load = os.getloadavg()
    commit = ""
    if old is not None:
        commit = subprocess.run(["git", "-C", str(BASE_DIR), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    print("\n".join(_common.machine_header("bench_wide", os.cpu_count())[0]))
    print(f"{args.n} x {args.p} {args.dtype}, K = 9; {platform.node()}, "
          f"{os.cpu_count()} cores; load average at start {load[0]:.1f}; "
          f"today's code = {commit or 'not run'} (timeout {args.old_timeout:.0f} s)\n")
    print("| case | new s (median) | new CPU s | new peak MB | new result | old s (median) "
          "| old result | old / new | same partition |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        new_runs, old_runs = [], []
        for _ in range(args.repeats):
            new_runs.append(run(sys.executable, case, args.n, args.p, args.dtype,
                                args.new_timeout))
            if old is not None and not any("timeout" in r for r in old_runs):
                old_runs.append(run(old, case, args.n, args.p, args.dtype, args.old_timeout))
        print(_row(case, new_runs, old_runs), flush=True)
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")


def _row(case, new_runs, old_runs):
    def summary(runs):
        ok = [r for r in runs if "seconds" in r]
        if not ok:
            if runs and "timeout" in runs[0]:
                return f"> {runs[0]['timeout']:.0f}", "-", None, "-"
            return (str(runs[0].get("error")) if runs else "not run"), "-", None, "-"
        t = float(np.median([r["seconds"] for r in ok]))
        cpu = float(np.median([r.get("cpu_seconds", np.nan) for r in ok]))
        r0 = ok[0]
        result = f"{r0['value']:.6g}"
        if "converged" in r0:
            result += f" ({r0['n_iter']} it{'' if r0['converged'] else ', not converged'})"
        return (f"{t:.2f}", f"{cpu:.1f} | {max(r['peak_mb'] for r in ok):.0f}", r0,
                result)

    nt, nmem, n0, nres = summary(new_runs)
    ot, _, o0, ores = summary(old_runs)
    nmem = nmem if "|" in nmem else f"- | {nmem}"
    ratio = "-"
    if n0 is not None and o0 is not None:
        ratio = f"{float(ot) / float(nt):.1f}x"
    elif n0 is not None and ot.startswith(">"):
        ratio = f"> {float(ot[2:]) / float(nt):.0f}x"
    same = "-"
    if n0 is not None and o0 is not None and "labels" in n0:
        a, b = np.asarray(n0["labels"]), np.asarray(o0["labels"])
        table = np.zeros((a.max() + 1, b.max() + 1), int)
        np.add.at(table, (a, b), 1)
        same = "yes" if np.all((table > 0).sum(0) <= 1) and np.all((table > 0).sum(1) <= 1) \
            else "no"
    return f"| {case} | {nt} | {nmem} | {nres} | {ot} | {ores} | {ratio} | {same} |"


if __name__ == "__main__":
    main()
