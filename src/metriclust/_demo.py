"""``metriclust demo``: k-means against the learned metrics on the papers' own examples.

Everything runs on the package's generators (nothing is read or downloaded).
Each data set is one the papers use to show where Euclidean k-means fails.

Public classes and functions:

.. autosummary::

   run_demo           -- every case: one table per data set, optionally PNGs
   linear_blur_ratio  -- a partition's blur ratio in CPCM's linear prediction space
"""

import os
import time

import numpy as np

# (title, generator in metriclust.datasets, its arguments, n_clusters, CPCM predictor)
_CASES = (
    ("Two parallel lines (CPCM paper, Fig. 1a)",
     "make_parallel_lines", {"n_samples": 400, "n_lines": 2}, 2, "linear"),
    ("Xing et al.'s artificial data (MMC paper, Fig. 4)",
     "make_xing_artificial", {"kind": 1}, 2, "linear"),
    ("Two moons (CPD-UML paper, Fig. 1)",
     "make_moons", {"n_samples": 200}, 2, "kernel"),
    ("Three clouds + 53 noise dimensions (CPCM paper, section 5.1)",
     "make_parallel_clouds", {"n_samples": 300}, 3, "stepwise"),
)


def linear_blur_ratio(X, labels):
    """Blur ratio of a partition in CPCM's linear prediction space (lower: more linearly predictable).

    ``SSC / SST`` of ``Zhat = H Z``, with ``Z`` the one-hot labels and ``H``
    the least-squares hat matrix of ``[1, X]`` (Gupta et al. 2008, section 3):
    CPCM's own linear predictor and criterion.
    """
    from ._core.partition import blur_ratio
    from ._core.predictors import Linear

    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    k = int(codes.max()) + 1
    return blur_ratio(Linear(np.ascontiguousarray(X, dtype=np.float64)).fit(codes, k).Zhat,
                      codes, k)


def _methods(X, y, n_clusters, predictor, rs):
    """(name, fit function returning (labels, learned-space coordinates))."""
    from . import CPCM, CPDUML, MMC, KMeans
    from .constraints import sample_similar_pairs

    similar = sample_similar_pairs(y, target_component_ratio=0.9, random_state=rs)

    def kmeans():
        return KMeans(n_clusters, random_state=rs).fit_predict(X), X

    def cpcm():
        est = CPCM(n_clusters, predictor=predictor, random_state=rs).fit(X)
        return est.labels_, est.transform(X)

    def mmc(diagonal):
        def fit():
            est = MMC(diagonal=diagonal, random_state=rs).fit(X, similar=similar)
            Z = est.transform(X)
            return KMeans(n_clusters, random_state=rs).fit_predict(Z), Z
        return fit

    def cpduml():
        est = CPDUML(n_clusters, random_state=rs).fit(X)
        return est.labels_, est.embedding_

    n_pairs = len(similar)
    return [
        ("k-means (Euclidean)", kmeans),
        (f"CPCM ({predictor})", cpcm),
        (f"MMC diagonal ({n_pairs} similar pairs)", mmc(True)),
        (f"MMC full ({n_pairs} similar pairs)", mmc(False)),
        ("CPD-UML", cpduml),
    ]


def run_demo(plot_dir=None, random_state=0, out=print):
    """Run every case, print one table per data set, optionally write PNGs."""
    from . import datasets
    from .metrics import adjusted_rand_index, clustering_accuracy

    if plot_dir is not None:
        from .plot import _pyplot

        _pyplot()  # fail before the work if matplotlib is missing
        os.makedirs(plot_dir, exist_ok=True)
    out("metriclust demo: k-means on raw features against learned metrics.\n"
        "MMC is semi-supervised: it sees a few pairs known to share a class "
        "(about 10% of the points joined); the other methods see no labels.\n")
    total = time.perf_counter()
    for title, generator, kwargs, n_clusters, predictor in _CASES:
        X, y = getattr(datasets, generator)(**kwargs, random_state=random_state)
        out(f"## {title}: {X.shape[0]} points, {X.shape[1]} features, {n_clusters} classes\n")
        out(f"| {'method':<34} | accuracy |   ARI   | blur ratio | seconds |")
        out(f"|{'-' * 36}|----------|---------|------------|---------|")
        results = []
        for name, fit in _methods(X, y, n_clusters, predictor, random_state):
            start = time.perf_counter()
            labels, Z = fit()
            seconds = time.perf_counter() - start
            acc = clustering_accuracy(y, labels)
            ari = adjusted_rand_index(y, labels)
            br = linear_blur_ratio(X, labels)
            out(f"| {name:<34} | {acc:8.3f} | {ari:7.3f} | {br:10.3f} | {seconds:7.2f} |")
            results.append((name, labels, Z))
        out("")
        if plot_dir is not None:
            path = os.path.join(plot_dir, _slug(title) + ".png")
            _plot_case(title, X, results, path)
            out(f"wrote {path}\n")
    out(f"demo finished in {time.perf_counter() - total:.1f} s. Accuracy is after the best "
        "matching of clusters to classes; blur ratio is measured in CPCM's linear "
        "prediction space (lower = the partition is more linearly predictable).")


def _slug(title):
    keep = "".join(c.lower() if c.isalnum() else "-" for c in title.split("(")[0])
    return "-".join(filter(None, keep.split("-")))


def _plot_case(title, X, results, path):
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    from .plot import _pyplot, plot_clusters

    plt = _pyplot()

    fig, axes = plt.subplots(2, len(results), figsize=(3.2 * len(results), 6.2),
                             squeeze=False)
    for j, (name, labels, Z) in enumerate(results):
        plot_clusters(X, labels, ax=axes[0, j], title=name, s=6)
        space = "feature space (nothing learned)" if Z is X else "learned space"
        plot_clusters(Z, labels, ax=axes[1, j], title=space, s=6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
