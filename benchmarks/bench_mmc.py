"""MMC benchmark: metriclust.MMC against metric-learn 0.7.0 (issues #4, #17).

Usage::

    python benchmarks/bench_mmc.py            # issue #17: warm and cold, d = 200 / 500
    python benchmarks/bench_mmc.py --grid     # issue #4's grid (add --quick for a short one)
    python benchmarks/bench_mmc.py --fig6     # the paper's Fig. 6 protocol, 20 draws

metric-learn 0.7.0 needs scikit-learn < 1.8, so it is installed in its own
virtual environment (``benchmarks/.venv-metric-learn``, created on first use)
and run in a subprocess on the same saved data; every peer figure comes from
the same run (none is typed in). For timings from process start, metriclust is
installed as a regular (non-editable) package in ``benchmarks/.venv-metriclust``
(rebuilt from this checkout on each run unless ``--no-reinstall``): an editable
install re-checks its build on every import, which no user pays. That venv,
like the peer's, does not see this interpreter's site-packages.

Both sides are scored with the same scale-free objective
``J(A) = sum_D d_A / sqrt(sum_S d_A^2)``; the optimum is our solver at
``tol=1e-10`` (a certified duality gap). Data (fixed seed): N = 2000 points,
K = 5 Gaussian classes in the first max(2, d/5) dimensions, the other
dimensions scaled by 3; P pairs, half same-class, half different. Repeats are
interleaved (peer, ours, peer, ours, ...); medians.
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
VENV = HERE / ".venv-metric-learn"
PEER_PY = VENV / "bin" / "python"
OURS_VENV = HERE / ".venv-metriclust"
OURS_PY = OURS_VENV / "bin" / "python"

PEER_CODE = r"""
import json, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
from metric_learn import MMC
f, diagonal = sys.argv[1], sys.argv[2] == "diag"
z = np.load(f)
X, S, D = z["X"], z["S"], z["D"]
pairs = np.vstack([S, D])
y = np.r_[np.ones(len(S)), -np.ones(len(D))]
m = MMC(preprocessor=X, diagonal=diagonal, random_state=0)
t0, c0 = time.perf_counter(), time.process_time()
m.fit(pairs, y)
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps(dict(wall=t1 - t0, cpu=c1 - c0, A=m.get_mahalanobis_matrix().tolist())))
"""


# A fresh process: imports, data, one fit (the "cold" time ends there), then
# warm fits in the same process. The parent notes the wall clock at spawn.
COLD_CODE = r"""
import json, sys, time
import numpy as np
peer = sys.argv[3] == "peer"
if peer:
    import warnings
    warnings.filterwarnings("ignore")
    from metric_learn import MMC
else:
    from metriclust import MMC
f, diagonal = sys.argv[1], sys.argv[2] == "diag"
z = np.load(f)
X, S, D = z["X"], z["S"], z["D"]


def fit():
    if peer:
        m = MMC(preprocessor=X, diagonal=diagonal, random_state=0)
        m.fit(np.vstack([S, D]), np.r_[np.ones(len(S)), -np.ones(len(D))])
        return m.get_mahalanobis_matrix(), -1, None
    m = MMC(diagonal=diagonal, tol=1e-6).fit(X, similar=S, dissimilar=D)
    return m.metric_, m.n_iter_, bool(m.converged_)


t0, c0 = time.perf_counter(), time.process_time()
A, n_iter, converged = fit()
first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
end_first = time.time()
import resource  # noqa: E402 - after the timed part
ru = resource.getrusage(resource.RUSAGE_SELF)
cold_cpu = ru.ru_utime + ru.ru_stime          # process CPU from its start: imports too
warm, warm_cpu = [], []
for _ in range(int(sys.argv[4])):
    t0, c0 = time.perf_counter(), time.process_time()
    fit()
    warm.append(time.perf_counter() - t0)
    warm_cpu.append(time.process_time() - c0)
print(json.dumps(dict(end_first=end_first, first=first, first_cpu=first_cpu, warm=warm,
                      warm_cpu=warm_cpu,
                      cold_cpu=cold_cpu, n_iter=int(n_iter), converged=converged,
                      A=np.asarray(A).tolist())))
"""


def ensure_ours(reinstall=True, build_dir=None):
    """metriclust as a regular install of this checkout, in its own venv.

    Like the peer's, the venv does not see this interpreter's site-packages:
    ours gets numpy, scipy and threadpoolctl installed into it, and a process
    started from it pays only its own start-up (a shared site-packages can
    carry ``.pth`` files that run at every interpreter start: 27 ms of CPU per
    process on the shared machine, which the peer's venv does not pay). The
    checkout is built into a wheel with this interpreter's build tools, in
    ``build_dir`` (kept between runs, so a rebuild is incremental).
    """
    if not OURS_PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(OURS_VENV)], check=True)
        subprocess.run([str(OURS_PY), "-m", "pip", "install", "-q", "numpy", "scipy",
                        "threadpoolctl"], check=True)    # the runtime dependencies
        reinstall = True
    if reinstall:
        print("installing this checkout into", OURS_VENV, flush=True)
        wheels = OUT / "wheel"
        for old in wheels.glob("metriclust-*.whl"):
            old.unlink()
        build_dir = Path(build_dir) if build_dir else OUT / "build-metriclust"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                        "--no-deps", f"-Cbuild-dir={build_dir.resolve()}", "-w", str(wheels),
                        str(HERE.parent)], check=True)
        subprocess.run([str(OURS_PY), "-m", "pip", "install", "-q", "--no-deps",
                        "--force-reinstall", *map(str, wheels.glob("metriclust-*.whl"))],
                       check=True)


def run_cold(python, path, diagonal, side, n_warm, timeout):
    """One fresh process: (seconds from spawn to the end of the first fit, result)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    t_spawn = time.time()
    try:
        r = subprocess.run([str(python), "-c", COLD_CODE, str(path),
                            "diag" if diagonal else "full", side, str(n_warm)],
                           capture_output=True, text=True, env=env, timeout=timeout,
                           cwd=str(OUT))
    except subprocess.TimeoutExpired:
        return None
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["cold"] = out["end_first"] - t_spawn
    out["A"] = np.array(out["A"])
    return out


def ensure_peer():
    if PEER_PY.exists():
        return
    print("creating", VENV, "(metric-learn 0.7.0, scikit-learn < 1.8)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(PEER_PY), "-m", "pip", "install", "-q", "metric-learn==0.7.0",
                    "scikit-learn<1.8"], check=True)


def make_data(d, P, seed=0, N=2000, K=5):
    rng = np.random.default_rng(seed)
    k = max(2, d // 5)
    y = rng.integers(K, size=N)
    X = rng.normal(size=(N, d))
    X[:, :k] += 2.0 * rng.normal(size=(K, k))[y]
    X[:, k:] *= 3.0
    out = []
    for same in (True, False):
        a, b = rng.integers(N, size=(2, 8 * P))
        ok = (a != b) & ((y[a] == y[b]) == same)
        out.append(np.ascontiguousarray(np.c_[a[ok], b[ok]][: P // 2], dtype=np.int64))
    return X, y, out[0], out[1]


def J_of(X, S, D, A):
    dS = X[S[:, 0]] - X[S[:, 1]]
    dD = X[D[:, 0]] - X[D[:, 1]]
    num = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", dD, A, dD), 0)).sum()
    return num / np.sqrt(np.einsum("ij,jk,ik->", dS, A, dS))


def run_peer(path, diagonal, threads, timeout):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    try:
        r = subprocess.run([str(PEER_PY), "-c", PEER_CODE, str(path),
                            "diag" if diagonal else "full"],
                           capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(wall=float(timeout), cpu=np.nan, A=None, timed_out=True)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["A"] = np.array(out["A"])
    return out


def run_ours(X, S, D, diagonal, threads, tol=1e-6):
    from threadpoolctl import threadpool_limits

    from metriclust import MMC

    with threadpool_limits(threads):
        t0, c0 = time.perf_counter(), time.process_time()
        m = MMC(diagonal=diagonal, tol=tol).fit(X, similar=S, dissimilar=D)
        t1, c1 = time.perf_counter(), time.process_time()
    return dict(wall=t1 - t0, cpu=c1 - c0, A=m.metric_, n_iter=m.n_iter_, model=m)


def grid(args):
    OUT.mkdir(exist_ok=True)
    ds = [10, 20, 50]
    Ps = [1000, 10000] if args.quick else [1000, 10000, 100000]
    threads = [1] if args.quick else [1, 2]
    rows = []
    for kind in ("full", "diag"):
        for d in ds:
            for P in Ps:
                X, y, S, D = make_data(d, P)
                path = OUT / f"mmc_d{d}_P{P}.npz"
                np.savez(path, X=X, S=S, D=D)
                diagonal = kind == "diag"
                # The optimum, scored by the same J_of as both runs (objective_ carries
                # the 1e-9 ridge of the constraint, ~4e-9 relative).
                opt = J_of(X, S, D, run_ours(X, S, D, diagonal, 2, tol=1e-10)["A"])
                for t in threads:
                    peer, ours = [], []
                    # Interleaved; the peer is repeated only where one run is short.
                    for rep in range(3):
                        peer.append(run_peer(path, diagonal, t, args.peer_timeout))
                        for _ in range(3):
                            ours.append(run_ours(X, S, D, diagonal, t))
                        if args.quick or peer[0]["wall"] > 5.0:
                            break
                    o_t = np.median([o["wall"] for o in ours])
                    o_J = J_of(X, S, D, ours[0]["A"])
                    if peer[0].get("timed_out"):
                        p_t, p_J = peer[0]["wall"], np.nan
                        note = f"peer stopped at the {p_t:.0f} s time limit (ratio is a lower bound)"
                    else:
                        p_t = np.median([p["wall"] for p in peer])
                        p_J = J_of(X, S, D, peer[0]["A"])
                        note = ""
                    rows.append(dict(kind=kind, d=d, P=P, threads=t, peer_t=p_t, ours_t=o_t,
                                     ratio=p_t / o_t, peer_J=p_J, ours_J=o_J, opt=opt,
                                     peer_gap=(opt - p_J) / opt, ours_gap=(opt - o_J) / opt,
                                     iters=ours[0]["n_iter"], note=note))
                    r = rows[-1]
                    print(f"{kind} d={d} P={P} t={t}: peer {p_t:.3f}s J={p_J:.6f} | ours "
                          f"{o_t:.4f}s J={o_J:.6f} ({r['iters']} it) | opt {opt:.6f} | "
                          f"x{r['ratio']:.1f} {note}", flush=True)
    return rows


def all_pairs(args):
    from threadpoolctl import threadpool_limits

    from metriclust import MMC
    from metriclust.constraints import sample_similar_pairs

    Ns = [2000, 5000] if args.quick else [2000, 5000, 20000]
    rows = []
    for N in Ns:
        X, y, _, _ = make_data(10, 10, N=N)
        S = sample_similar_pairs(y, 0.9, random_state=0)
        for t in ([1] if args.quick else [1, 2]):
            with threadpool_limits(t):
                t0 = time.perf_counter()
                m = MMC(tol=1e-6).fit(X, similar=S)
                wall = time.perf_counter() - t0
            rows.append(dict(N=N, S=len(S), D=N * (N - 1) // 2 - len(S), threads=t, wall=wall,
                             iters=m.n_iter_, J=m.objective_))
            print(rows[-1], flush=True)
    return rows


def issue17(args):
    """Issue #17: N = 2000, d = 20, 5000 + 5000 pairs; warm and from process start."""
    OUT.mkdir(exist_ok=True)
    rows = []
    for seed in args.seeds:
        X, y, S, D = make_data(20, 10000, seed=seed)
        path = OUT / f"mmc17_seed{seed}.npz"
        np.savez(path, X=X, S=S, D=D)
        for kind in args.kinds:
            diagonal = kind == "diag"
            opt = J_of(X, S, D, run_ours(X, S, D, diagonal, 1, tol=1e-10)["A"])
            peer, ours = [], []
            for rep in range(args.reps):        # interleaved, each in a fresh process
                peer.append(run_cold(PEER_PY, path, diagonal, "peer", 1, args.peer_timeout))
                ours.append(run_cold(OURS_PY, path, diagonal, "ours", 5, 600))
            peer = [p for p in peer if p is not None]
            if not peer:
                print(f"{kind} seed={seed}: the peer timed out", flush=True)
                continue
            # per repeat (peer and ours of the same interleaved round): the spread
            pw = [np.median([p["first"]] + p["warm"]) for p in peer]
            ow = [np.median(o["warm"]) for o in ours[:len(peer)]]
            warm_r = [a / b for a, b in zip(pw, ow)]
            # CPU per repeat: the peer's fit(s) against our median warm fit, same round
            cpu_r = [np.median([p["first_cpu"]] + p["warm_cpu"]) / np.median(o["warm_cpu"])
                     for p, o in zip(peer, ours)] if all("first_cpu" in p for p in peer) else []
            cold_r = [p["cold"] / o["cold"] for p, o in zip(peer, ours)]
            # CPU seconds (steadier under load): warm fits, and the process from its start
            p_wcpu = np.median([np.median(p["warm_cpu"]) for p in peer])
            o_wcpu = np.median([np.median(o["warm_cpu"]) for o in ours])
            p_ccpu = np.median([p["cold_cpu"] for p in peer])
            o_ccpu = np.median([o["cold_cpu"] for o in ours])
            r = dict(kind=kind, seed=seed, opt=opt,
                     cpu_warm_ratio=p_wcpu / o_wcpu, cpu_cold_ratio=p_ccpu / o_ccpu,
                     peer_cold_cpu=p_ccpu, ours_cold_cpu=o_ccpu,
                     peer_warm=np.median(pw),
                     peer_cold=np.median([p["cold"] for p in peer]),
                     ours_warm=np.median([np.median(o["warm"]) for o in ours]),
                     ours_cold=np.median([o["cold"] for o in ours]),
                     ours_first=np.median([o["first"] for o in ours]),
                     warm_range=(min(warm_r), max(warm_r)),
                     cold_range=(min(cold_r), max(cold_r)),
                     peer_J=J_of(X, S, D, peer[0]["A"]), ours_J=J_of(X, S, D, ours[0]["A"]),
                     iters=ours[0]["n_iter"])
            rows.append(r)
            print(f"{kind} seed={seed}: warm peer {r['peer_warm']:.3f}s ours {r['ours_warm']:.4f}s "
                  f"x{r['peer_warm'] / r['ours_warm']:.0f} | cold peer {r['peer_cold']:.3f}s ours "
                  f"{r['ours_cold']:.3f}s x{r['peer_cold'] / r['ours_cold']:.1f} | J peer "
                  f"{r['peer_J']:.6f} ours {r['ours_J']:.6f} opt {opt:.6f} ({r['iters']} it)",
                  flush=True)
            print(f"    per repeat: warm wall {' '.join(f'{x:.1f}' for x in warm_r)} | warm CPU "
                  f"{' '.join(f'{x:.1f}' for x in cpu_r)} | cold wall "
                  f"{' '.join(f'{x:.1f}' for x in cold_r)}", flush=True)
    return rows


def scale_d(args):
    """Full A at d = 200 and 500, 1e5 pairs (ours only: metric-learn needs minutes at d = 50)."""
    rows = []
    for d in args.dims:
        X, y, S, D = make_data(d, 100000)
        path = OUT / f"mmc_d{d}_P100000.npz"
        np.savez(path, X=X, S=S, D=D)
        o = run_cold(OURS_PY, path, False, "ours", 0, 900)
        rows.append(dict(d=d, first=o["first"], cold=o["cold"], iters=o["n_iter"],
                         converged=o["converged"]))
        print(rows[-1], flush=True)
    return rows


# Where a cold process's time goes: marks at interpreter start (CPU from
# getrusage: start-up included), after numpy, after `from metriclust import MMC`,
# after loading the data, after resolving scipy's BLAS / LAPACK, after one fit.
PROBE_CODE = r"""
import json, resource, sys, time
def mark():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, time.time()
marks = [("interpreter start", mark())]
what = sys.argv[1]
if what != "pass":
    import numpy as np
    marks.append(("import numpy", mark()))
if what == "fit":
    from metriclust import MMC
    marks.append(("from metriclust import MMC", mark()))
    z = np.load(sys.argv[2])
    X, S, D = z["X"], z["S"], z["D"]
    marks.append(("np.load of the data", mark()))
    from metriclust._kernels import _blas, _mmc
    _blas.load()
    _mmc.load_lapack()
    marks.append(("scipy's BLAS + LAPACK", mark()))
    MMC(diagonal=sys.argv[3] == "diag", tol=1e-6).fit(X, similar=S, dissimilar=D)
    marks.append(("first fit", mark()))
print(json.dumps(dict(marks=marks, scipy=sorted(m for m in sys.modules if m == "scipy"))))
"""


def cold_floor(args):
    """CPU and wall of a cold process, step by step (ours, hard draw), against
    ``python -c pass`` and ``import numpy`` in both venvs; interleaved, medians."""
    path = OUT / "mmc17_seed1.npz"
    if not path.exists():
        X, y, S, D = make_data(20, 10000, seed=1)
        np.savez(path, X=X, S=S, D=D)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    cases = [("ours: pass", OURS_PY, ["pass"]), ("peer: pass", PEER_PY, ["pass"]),
             ("ours: import numpy", OURS_PY, ["numpy"]),
             ("peer: import numpy", PEER_PY, ["numpy"]),
             ("ours: full A fit", OURS_PY, ["fit", str(path), "full"]),
             ("ours: diagonal fit", OURS_PY, ["fit", str(path), "diag"])]
    steps = {name: {} for name, _, _ in cases}
    for _ in range(args.floor_reps):
        for name, py, argv in cases:
            t_spawn = time.time()
            r = subprocess.run([str(py), "-c", PROBE_CODE, *argv], capture_output=True,
                               text=True, env=env, cwd=str(OUT), check=True)
            out = json.loads(r.stdout)
            prev_cpu, prev_wall = 0.0, t_spawn
            for label, (cpu, wall) in out["marks"]:
                steps[name].setdefault(label, []).append((cpu - prev_cpu, wall - prev_wall))
                prev_cpu, prev_wall = cpu, wall
            steps[name].setdefault("total", []).append((prev_cpu, prev_wall - t_spawn))
            steps[name].setdefault("scipy package imported", []).append(bool(out["scipy"]))
    return steps


def print_floor(steps):
    print("\n| process | step | CPU ms (median) | wall ms (median) |")
    print("|---|---|---|---|")
    for name, by_step in steps.items():
        for label, vals in by_step.items():
            if label == "scipy package imported":
                continue
            cpu = 1e3 * np.median([v[0] for v in vals])
            wall = 1e3 * np.median([v[1] for v in vals])
            print(f"| {name} | {label} | {cpu:.1f} | {wall:.1f} |")
    fits = [s for n, s in steps.items() if "fit" in n]
    print("scipy package imported by our fits:",
          any(any(s["scipy package imported"]) for s in fits))


def fig6(args):
    from metriclust import MMC, ConstrainedKMeans, KMeans
    from metriclust.constraints import sample_similar_pairs
    from metriclust.metrics import pairwise_accuracy

    data = Path(os.environ.get("METRICLUST_DATA", HERE.parents[1] / "shared" / "data"))
    names = ["iris", "wine", "soybean_small", "ionosphere", "breast_cancer_wdbc"]
    draws = 5 if args.quick else 20
    rows = []
    for name in names:
        raw = np.loadtxt(data / f"{name}.csv", delimiter=",", skiprows=1)
        X, y = raw[:, :-1], raw[:, -1].astype(int)
        K = len(np.unique(y))
        for info, ratio in (("little", 0.9), ("much", 0.7)):
            acc = []
            for s in range(draws):
                S = sample_similar_pairs(y, ratio, random_state=s)
                km = KMeans(K, n_init=5, random_state=s)
                ckm = ConstrainedKMeans(K, n_init=5, random_state=s)
                Td = MMC(diagonal=True).fit(X, similar=S).transform(X)
                Tf = MMC().fit(X, similar=S).transform(X)
                acc.append([pairwise_accuracy(y, lab) for lab in (
                    km.fit_predict(X), km.fit_predict(Td), km.fit_predict(Tf),
                    ckm.fit(X, must_link=S).labels_, ckm.fit(Td, must_link=S).labels_,
                    ckm.fit(Tf, must_link=S).labels_)])
            acc = np.array(acc)
            rows.append(dict(name=name, info=info, mean=acc.mean(0), sd=acc.std(0), draws=draws))
            print(name, info, np.round(acc.mean(0), 3), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", action="store_true", help="issue #4's grid and the all-pairs timing")
    ap.add_argument("--quick", action="store_true", help="a short grid")
    ap.add_argument("--fig6", action="store_true", help="only the Fig. 6 accuracy table")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repeats (issue #17 set)")
    ap.add_argument("--kinds", nargs="*", default=["full", "diag"], choices=["full", "diag"],
                    help="full and/or diagonal A (issue #17 set)")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3],
                    help="draws of the issue #17 problem (seed 1: the hard one)")
    ap.add_argument("--dims", type=int, nargs="*", default=[200, 500],
                    help="d for the full-A scaling runs (1e5 pairs)")
    ap.add_argument("--no-reinstall", action="store_true",
                    help="reuse benchmarks/.venv-metriclust as it is")
    ap.add_argument("--floor-reps", type=int, default=7,
                    help="repeats of the cold-process breakdown (0: skip it)")
    ap.add_argument("--build-dir", default=None,
                    help="meson build directory for our wheel (default benchmarks/out/"
                         "build-metriclust; an editable install's build/cp311 works too)")
    ap.add_argument("--peer-timeout", type=float, default=None,
                    help="seconds before a peer run is stopped (default 20 quick, 600 otherwise)")
    args = ap.parse_args()
    if args.peer_timeout is None:
        args.peer_timeout = 20.0 if args.quick else 600.0
    lines, _ = _common.machine_header("MMC benchmark (metric-learn 0.7.0 peer)", 1)
    print("\n".join(lines), flush=True)
    if args.fig6:
        rows = fig6(args)
        print("\n| data | side info | k-means | +diag A | +full A | c-k-means | c+diag A | c+full A |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            cells = " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(r["mean"], r["sd"]))
            print(f"| {r['name']} | {r['info']} | {cells} |")
        return
    ensure_peer()
    if args.grid:
        grid_main(args)
        return
    OUT.mkdir(exist_ok=True)
    ensure_ours(reinstall=not args.no_reinstall, build_dir=args.build_dir)
    rows = issue17(args)
    load_mid = os.getloadavg()
    floor = cold_floor(args) if args.floor_reps > 0 else None
    d_rows = scale_d(args)
    print(f"\nload average after the comparison {load_mid}, at the end {os.getloadavg()}")
    print("\n| A | seed | metric-learn warm s | ours warm s | warm ratio (per repeat) "
          "| metric-learn cold s | ours cold s | cold ratio (per repeat) | J metric-learn "
          "| J ours | J optimum | rel. gap ours | iters |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kind']} | {r['seed']} | {r['peer_warm']:.3f} | {r['ours_warm']:.4f} | "
              f"{r['peer_warm'] / r['ours_warm']:.0f}x ({r['warm_range'][0]:.0f}-"
              f"{r['warm_range'][1]:.0f}) | {r['peer_cold']:.3f} | "
              f"{r['ours_cold']:.3f} | {r['peer_cold'] / r['ours_cold']:.1f}x "
              f"({r['cold_range'][0]:.1f}-{r['cold_range'][1]:.1f}) | "
              f"{r['peer_J']:.6f} | {r['ours_J']:.6f} | {r['opt']:.6f} | "
              f"{(r['opt'] - r['ours_J']) / r['opt']:.1e} | {r['iters']} |")
    print("\nCPU time (user + system), medians: warm = one fit; cold = the process from its "
          "start to the end of its first fit (interpreter start and imports included)")
    print("\n| A | seed | warm CPU ratio | metric-learn cold CPU s | ours cold CPU s "
          "| cold CPU ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kind']} | {r['seed']} | {r['cpu_warm_ratio']:.0f}x | "
              f"{r['peer_cold_cpu']:.3f} | {r['ours_cold_cpu']:.3f} | "
              f"{r['cpu_cold_ratio']:.1f}x |")
    for kind in ("full", "diag"):
        sel = [r for r in rows if r["kind"] == kind]
        if sel:
            print(f"{kind}: over seeds {[r['seed'] for r in sel]}, the smallest warm ratio "
                  f"{min(r['peer_warm'] / r['ours_warm'] for r in sel):.1f}x, cold "
                  f"{min(r['peer_cold'] / r['ours_cold'] for r in sel):.1f}x; largest rel. gap "
                  f"to J* {max((r['opt'] - r['ours_J']) / r['opt'] for r in sel):.1e}")
    if floor is not None:
        print_floor(floor)
    print("\n| d | pairs | fit s (first in process) | from process start s | iters | converged |")
    print("|---|---|---|---|---|---|")
    for r in d_rows:
        print(f"| {r['d']} | 100000 | {r['first']:.2f} | {r['cold']:.2f} | {r['iters']} | "
              f"{r['converged']} |")


def grid_main(args):
    rows = grid(args)
    ap_rows = all_pairs(args)
    print(f"\nload average at the end {os.getloadavg()}")
    print("\n| A | d | pairs | threads | metric-learn s | ours s | ratio | J metric-learn | J ours "
          "| J optimum | rel. gap ML | rel. gap ours | iters |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pj = "n/a" if np.isnan(r["peer_J"]) else f"{r['peer_J']:.4f}"
        pg = "n/a" if np.isnan(r["peer_gap"]) else f"{r['peer_gap']:.1e}"
        star = " *" if r["note"] else ""
        print(f"| {r['kind']} | {r['d']} | {r['P']} | {r['threads']} | {r['peer_t']:.3f}{star} | "
              f"{r['ours_t']:.4f} | {r['ratio']:.0f}x | {pj} | {r['ours_J']:.4f} | "
              f"{r['opt']:.4f} | {pg} | {r['ours_gap']:.1e} | {r['iters']} |")
    print("\n| N | S pairs | implicit D pairs | threads | seconds | iters |")
    print("|---|---|---|---|---|---|")
    for r in ap_rows:
        print(f"| {r['N']} | {r['S']} | {r['D']} | {r['threads']} | {r['wall']:.2f} | {r['iters']} |")


if __name__ == "__main__":
    main()
