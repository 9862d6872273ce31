"""Reproductions of the papers' tables and figures, our numbers beside the paper's.

Sections (printed as markdown tables; ``--only a,b``):

``cpcm_t1``  Gupta, Foster & Ungar 2008, Table 1 (a) VI / log N and (b) Rand index on the
             UCI sets we hold (glass, ionosphere, sonar), K = number of classes: CPCM-LSR
             (the paper's random starts, and our default search), CPCM-RKHS, spectral
             clustering (Ng-Jordan-Weiss, RBF affinity of median width -- the paper used
             kernlab's, settings unstated), k-means, k-means on the leading K principal
             components (the paper does not say how many), LDA-km (CPCM with LDA).

``mmc45``    Xing et al. 2003, Figs. 4 and 5: k-means, constrained k-means, and both
             with the learned metric (full and diagonal A) on ``make_xing_artificial``,
             "little" side information (K_c ~ 0.9 N, footnote 9), the paper's measure
             (Rand index for two clusters, ``xing_accuracy``); 10 draws.
``mmc7``     Xing et al. 2003, Fig. 7(b): accuracy on wine against the fraction of all
             same-class pairs put in S (0 to 0.2), six variants, 5 draws each. The
             paper's curves are pictures (values not in our copy of the text): it reports
             that wine's metrics are learned "quickly with only a very small amount of
             side-information".
``cpd_fig2`` CPD-UML paper Fig. 2: kernel k-means and kernel CPD-UML (r-CPD-UML) on the
             two-moon data with RBF widths 4, 8, 16, 32 (the paper shows pictures only,
             no numbers; it states that k-means degrades for 8-32 and CPD-UML does not).
``cpd_tab``  CPD-UML paper Tables 1-3 protocol (Sec. 3.2): 3-fold, fit on two folds,
             label the third by the nearest (transformed) cluster centre; R runs with
             different fold splits and seeds; mean +- std of accuracy, NMI and purity over
             runs x folds; Student t-tests (p = 0.05) between each pair of methods and the
             ranking score described in the paper (after Wang et al. 2012: 1 per opponent
             beaten significantly, 0.5 per tie, 0 per loss). Only Breast is in the paper's
             tables; the other data sets we hold get our rows only.

``cpcm_starts`` CPCM's default starts (issue #14): Sec. 5.1 clouds (stepwise) and Fig. 1(d, e)
             lines and circles (kernel) over ``--seeds`` seeds; fits on X against fits on
             images of X under the maps each predictor is invariant to.
``cpd_cost`` CPD-UML: time of the label-free default against one fixed-parameter fit
             (interleaved repeats, medians, benchmarks/_common.py).

Not reproduced here: MMC Figs. 2, 3 (learned diagonal / full A on the 3-D data of
Fig. 2, whose distribution the paper does not give), Fig. 7(a) (protein data, not held),
and CPCM Sec. 5.1 (in tests/test_cpcm.py).

Usage: ``python benchmarks/bench_papers.py [--runs R] [--seeds S] [--only cpcm_t1,mmc45,mmc7,
cpd_fig2,cpd_tab,cpcm_starts,cpd_cost]``.
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import os
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("METRICLUST_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))


def load(name):
    from metriclust.datasets import load_csv

    X, y = load_csv(DATA / f"{name}.csv")
    return np.asarray(X, dtype=np.float64), np.asarray(y)


# ---------------------------------------------------------------------------------------
PAPER_T1 = {  # Table 1 (a) VI / log N, (b) Rand: LSR, RKHS, Spectral, k-means, k-means+PCA, LDA-km
    "glass": ((0.383, 0.371, 0.27, 0.316, 0.37, 0.397), (0.68, 0.73, 0.627, 0.681, 0.67, 0.665)),
    "ionosphere": ((0.205, 0.202, 0.215, 0.198, 0.205, 0.203),
                   (0.571, 0.501, 0.538, 0.589, 0.573, 0.577)),
    "sonar": ((0.236, 0.231, 0.147, 0.257, 0.229, 0.229), (0.508, 0.499, 0.498, 0.503, 0.499, 0.499)),
}


def _spectral(X, K, seed):
    """Ng, Jordan & Weiss (2002): RBF affinity (median width), top-K eigenvectors of
    D^-1/2 W D^-1/2, rows normalized, k-means."""
    from metriclust._core.kmeans import kmeans
    from metriclust.kernels import gaussian_gram, median_pairwise_distance

    W = gaussian_gram(X, sigma=median_pairwise_distance(X))
    np.fill_diagonal(W, 0.0)
    d = 1.0 / np.sqrt(W.sum(1))
    _, V = np.linalg.eigh(W * d[:, None] * d[None, :])
    U = V[:, -K:]
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return kmeans(np.ascontiguousarray(U), K, n_init=10, random_state=seed).labels


def cpcm_t1(args):
    import warnings

    from metriclust import CPCM
    from metriclust._core.kmeans import kmeans
    from metriclust.metrics import rand_index, variation_of_information

    cols = ["CPCM-LSR (random starts)", "CPCM-LSR (default)", "CPCM-RKHS", "Spectral",
            "k-means", "k-means + PCA", "LDA-km"]
    paper_col = [0, 0, 1, 2, 3, 4, 5]
    print("\n### CPCM Table 1: VI / log N (lower is better) and Rand index, ours (paper)\n")
    print("| data | measure | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name in ("glass", "ionosphere", "sonar"):
        X, y = load(name)
        K, n = len(np.unique(y)), len(X)
        Xc = X - X.mean(0)
        V = np.linalg.svd(Xc, full_matrices=False)[2][:K].T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labs = [CPCM(K, init="random", random_state=0).fit(X).labels_,
                    CPCM(K, random_state=0).fit(X).labels_,
                    CPCM(K, predictor="kernel", random_state=0).fit(X).labels_,
                    _spectral(X, K, 0),
                    kmeans(X, K, n_init=10, random_state=0).labels,
                    kmeans(np.ascontiguousarray(Xc @ V), K, n_init=10, random_state=0).labels,
                    CPCM(K, predictor="lda", random_state=0).fit(X).labels_]
        vi = [variation_of_information(y, lab) / np.log(n) for lab in labs]
        ri = [rand_index(y, lab) for lab in labs]
        pv, pr = PAPER_T1[name]
        print(f"| {name} | VI/log N | " + " | ".join(
            f"{v:.3f} ({pv[c]})" for v, c in zip(vi, paper_col)) + " |")
        print(f"| {name} | Rand | " + " | ".join(
            f"{v:.3f} ({pr[c]})" for v, c in zip(ri, paper_col)) + " |")


# ---------------------------------------------------------------------------------------
def mmc45(args):
    from metriclust import MMC, KMeans
    from metriclust.constraints import ConstrainedKMeans, sample_similar_pairs
    from metriclust.datasets import make_xing_artificial
    from metriclust.metrics import xing_accuracy

    paper = {1: [0.4975, 0.5060, 1.0, 1.0], 2: [0.4993, 0.5701, 1.0, 1.0]}
    print("\n### MMC Figs. 4 and 5 (xing_accuracy = Rand index; 10 draws, mean [min, max])\n")
    print("| figure | variant | ours (full A) | ours (diagonal A) | paper (full A shown) |")
    print("|---|---|---|---|---|")
    names = ["K-means", "Constrained K-means", "K-means + metric", "Constrained K-means + metric"]
    for kind in (1, 2):
        res = {False: [], True: []}
        for seed in range(10):
            X, y = make_xing_artificial(kind=kind, n_samples=200, random_state=seed)
            S = sample_similar_pairs(y, 0.9, random_state=seed)
            km, ckm = KMeans(2, n_init=10, random_state=seed), ConstrainedKMeans(2, random_state=seed)
            raw = [km.fit_predict(X), ckm.fit(X, must_link=S).labels_]
            for diag in (False, True):
                T = MMC(diagonal=diag).fit(X, similar=S).transform(X)
                labs = raw + [km.fit_predict(T), ckm.fit(T, must_link=S).labels_]
                res[diag].append([xing_accuracy(y, lab) for lab in labs])
        full, diag = np.array(res[False]), np.array(res[True])
        for i, nm in enumerate(names):
            cell = lambda a: f"{a[:, i].mean():.4f} [{a[:, i].min():.4f}, {a[:, i].max():.4f}]"
            print(f"| Fig. {kind + 3} | {nm} | {cell(full)} | {cell(diag)} | {paper[kind][i]:.4f} |")


# ---------------------------------------------------------------------------------------
def mmc7(args):
    from metriclust import MMC, KMeans
    from metriclust.constraints import ConstrainedKMeans
    from metriclust.metrics import xing_accuracy

    X, y = load("wine")
    K = len(np.unique(y))
    iu = np.triu_indices(len(y), 1)
    same = np.flatnonzero(y[iu[0]] == y[iu[1]])
    print(f"\n### MMC Fig. 7(b), wine (N = {len(y)}, {same.size} same-class pairs); "
          "xing_accuracy (balanced, K = 3), mean over 5 draws\n")
    print("| fraction | k-means | c-k-means | k-means + diag A | c-k-means + diag A | "
          "k-means + full A | c-k-means + full A |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for frac in (0.0, 0.02, 0.05, 0.1, 0.2):
        rows = []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            pick = rng.choice(same, int(round(frac * same.size)), replace=False)
            S = np.c_[iu[0][pick], iu[1][pick]].astype(np.int64)
            km, ckm = KMeans(K, n_init=5, random_state=seed), ConstrainedKMeans(K, random_state=seed)
            row = [xing_accuracy(y, km.fit_predict(X)),
                   xing_accuracy(y, ckm.fit(X, must_link=S).labels_)]
            for diag in (True, False):
                if len(S):
                    T = MMC(diagonal=diag).fit(X, similar=S).transform(X)
                else:
                    T = X
                row += [xing_accuracy(y, km.fit_predict(T)),
                        xing_accuracy(y, ckm.fit(T, must_link=S).labels_)]
            rows.append(row)
        m = np.mean(rows, axis=0)
        print(f"| {frac:g} | " + " | ".join(f"{v:.3f}" for v in m) + " |")


# ---------------------------------------------------------------------------------------
def cpd_fig2(args):
    from metriclust import CPDUML
    from metriclust._core.cpd import KernelPCA
    from metriclust._core.kmeans import kmeans
    from metriclust.kernels import median_pairwise_distance
    from metriclust.metrics import clustering_accuracy

    X, y = load("two_moons")
    med = median_pairwise_distance(X)
    print("\n### CPD-UML Fig. 2: two moons (N = 200), RBF width in data units "
          f"(median pairwise distance {med:.3f})\n")
    print("| width | kernel k-means (KPCA 50 + k-means) | r-CPD-UML, default sigma/lam | paper |")
    print("|---:|---:|---:|---|")
    for width in (4.0, 8.0, 16.0, 32.0):
        Z = KernelPCA(50, sigma=width).fit_transform(X)
        kk = clustering_accuracy(y, kmeans(Z, 2, n_init=10, random_state=0).labels)
        m = CPDUML(2, kernel="rbf", kernel_sigma=width / med, random_state=0).fit(X)
        verdict = "k-means fine" if width == 4 else "k-means worse, CPD-UML better (picture)"
        print(f"| {width:g} | {kk:.3f} | {clustering_accuracy(y, m.labels_):.3f} | {verdict} |")


# ---------------------------------------------------------------------------------------
PAPER_BREAST = {  # Tables 1 / 2 / 3, column Breast: accuracy, NMI, purity
    "K-means": (96.39, 76.10, 96.39), "CPD-UML": (97.06, 79.63, 97.06),
    "Kernel K-means": (96.56, 77.01, 96.56), "r-CPD-UML": (96.95, 79.25, 96.95)}


def _methods():
    from metriclust import CPDUML

    # kernel width for the kernel methods: the paper searched 2^-5..2^10 on labels;
    # we use one label-free width, 4 x the median distance (CPDUML's kernel_sigma default).
    return {
        "K-means": None,
        "Kernel K-means": "kpca",
        "CPD-UML": lambda s: CPDUML(0, random_state=s),
        "r-CPD-UML": lambda s: CPDUML(0, kernel="rbf", random_state=s),
        "CPD-UML sigma=1.6 lam=0.1": lambda s: CPDUML(0, sigma=1.6, lam=0.1, random_state=s),
    }


def _fit_predict(make, Xtr, Xte, K, seed):
    from metriclust._core.cpd import KernelPCA
    from metriclust._core.kmeans import assign_labels, kmeans
    from metriclust.kernels import median_pairwise_distance

    if make is None:
        km = kmeans(Xtr, K, n_init=10, random_state=seed)
        return assign_labels(Xte, km.centers)[0]
    if make == "kpca":
        kp = KernelPCA(50, sigma=4.0 * median_pairwise_distance(Xtr, random_state=seed))
        Ztr = kp.fit_transform(Xtr)
        km = kmeans(Ztr, K, n_init=10, random_state=seed)
        return assign_labels(kp.transform(Xte), km.centers)[0]
    model = make(seed).set_params(n_clusters=K).fit(Xtr)
    return model.predict(Xte)


def cpd_tab(args):
    from scipy.stats import ttest_ind

    from metriclust.metrics import clustering_accuracy, normalized_mutual_info, purity

    sets = args.sets.split(",")
    print(f"\n### CPD-UML Tables 1-3 protocol: 3-fold seen/unseen, {args.runs} runs x 3 folds, "
          "mean +- std (percent), ranking score in ()\n")
    for name in sets:
        X, y = load(name)
        K = len(np.unique(y))
        methods = _methods()
        scores = {m: [] for m in methods}
        t0 = time.perf_counter()
        for r in range(args.runs):
            rng = np.random.default_rng(1000 + r)
            folds = np.array_split(rng.permutation(len(X)), 3)
            for f in range(3):
                te = folds[f]
                tr = np.concatenate([folds[g] for g in range(3) if g != f])
                for m, make in methods.items():
                    lab = _fit_predict(make, X[tr], X[te], K, r)
                    scores[m].append([100 * clustering_accuracy(y[te], lab),
                                      100 * normalized_mutual_info(y[te], lab),
                                      100 * purity(y[te], lab)])
        names = list(methods)
        arr = {m: np.array(v) for m, v in scores.items()}
        rank = {m: [0.0, 0.0, 0.0] for m in names}
        for j in range(3):
            for a in names:
                for b in names:
                    if a == b:
                        continue
                    p = ttest_ind(arr[a][:, j], arr[b][:, j]).pvalue
                    better = arr[a][:, j].mean() > arr[b][:, j].mean()
                    if not np.isfinite(p) or p >= 0.05:
                        rank[a][j] += 0.5
                    elif better:
                        rank[a][j] += 1.0
        print(f"\n**{name}** (N = {len(X)}, K = {K}; {time.perf_counter() - t0:.0f} s)\n")
        print("| method | accuracy | NMI | purity | paper (Breast): acc / NMI / purity |")
        print("|---|---|---|---|---|")
        for m in names:
            a = arr[m]
            cells = [f"{a[:, j].mean():.2f} +- {a[:, j].std():.2f} ({rank[m][j]:.1f})"
                     for j in range(3)]
            pap = PAPER_BREAST.get(m) if name == "breast_cancer_wisconsin_original" else None
            pap = " / ".join(f"{v:.2f}" for v in pap) if pap else "-"
            print(f"| {m} | " + " | ".join(cells) + f" | {pap} |")


def cpcm_starts(args):
    from metriclust import CPCM, datasets
    from metriclust.metrics import adjusted_rand_index

    print("\n### CPCM default starts: reliability over seeds and invariance (issue #14)\n")
    print("| data, predictor | seeds with ARI >= 0.95 | lowest ARI |")
    print("|---|---:|---:|")
    cases = [("Sec. 5.1 clouds, stepwise", "stepwise",
              lambda s: datasets.make_parallel_clouds(300, random_state=s)),
             ("Fig. 1(e) three circles, kernel", "kernel",
              lambda s: datasets.make_concentric_circles(300, random_state=s)),
             ("Fig. 1(d) three lines, kernel", "kernel",
              lambda s: datasets.make_parallel_lines(300, n_lines=3, random_state=s))]
    for label, pred, make in cases:
        aris = []
        for seed in range(args.seeds):
            X, y = make(seed)
            aris.append(adjusted_rand_index(y, CPCM(3, predictor=pred,
                                                     random_state=seed).fit(X).labels_))
        print(f"| {label} | {sum(a >= 0.95 for a in aris)} of {args.seeds} | {min(aris):.3f} |")
    print("\n| data | predictor, map | ARI(fit on X, fit on the image), 3 maps |")
    print("|---|---|---|")
    rng = np.random.default_rng(7)
    for name in ("glass", "sonar", "iris", "wine"):
        X, y = load(name)
        K, p = len(np.unique(y)), X.shape[1]
        for pred in ("kernel", "stepwise"):
            ref = CPCM(K, predictor=pred, random_state=0).fit(X).labels_
            out = []
            for _ in range(3):
                if pred == "kernel":   # rotation, common scale, shift
                    R = np.linalg.qr(rng.standard_normal((p, p)))[0]
                    Xt = rng.uniform(0.1, 10) * X @ R + 50 * rng.standard_normal(p)
                else:                  # per-feature scale (any sign) and shift
                    Xt = X * (rng.uniform(0.01, 100, p) * rng.choice([-1.0, 1.0], p)) \
                        + 100 * rng.standard_normal(p)
                out.append(adjusted_rand_index(ref, CPCM(K, predictor=pred,
                                                         random_state=0).fit(Xt).labels_))
            what = "s X R + b" if pred == "kernel" else "X D + b"
            print(f"| {name} | {pred}, {what} | " + ", ".join(f"{a:.3f}" for a in out) + " |")


def cpd_cost(args):
    import _common
    from metriclust import CPDUML

    print("\n### CPD-UML: cost of the label-free default against one fixed-parameter fit\n")
    print(f"load average before: {_common.load_average()}\n")
    print("| data | default (s, median) | sigma=0.8, lam=0.0025 (s, median) | ratio |")
    print("|---|---:|---:|---:|")
    for name in ("breast_cancer_wdbc", "breast_cancer_wisconsin_original", "two_moons"):
        X, y = load(name)
        K = len(np.unique(y))
        t = _common.interleaved({
            "default": lambda: CPDUML(K, random_state=0).fit(X),
            "fixed": lambda: CPDUML(K, sigma=0.8, lam=0.0025, random_state=0).fit(X)}, 5)
        m = _common.medians(t)
        print(f"| {name} | {m['default']:.2f} | {m['fixed']:.2f} | "
              f"{m['default'] / m['fixed']:.1f}x |")
    print(f"\nload average after: {_common.load_average()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", default="cpcm_t1,mmc45,mmc7,cpd_fig2,cpd_tab,cpcm_starts,cpd_cost")
    ap.add_argument("--sets", default="breast_cancer_wisconsin_original,breast_cancer_wdbc,"
                                      "iris,wine,glass,two_moons")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()}")
    for sec in args.only.split(","):
        globals()[sec](args)


if __name__ == "__main__":
    main()
