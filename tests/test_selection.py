"""Choosing K (metriclust.selection), the silhouette and per-cluster purity
(metriclust.metrics), and the K-selection plot."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from metriclust import KMedoids
from metriclust.metrics import cluster_purities, purity, silhouette_samples, silhouette_score
from metriclust.selection import select_n_clusters, within_cluster_distortion


def ref_silhouette(X, labels):
    D = cdist(X, X)
    s = np.zeros(len(X))
    for i in range(len(X)):
        own = labels == labels[i]
        if own.sum() == 1:
            continue
        a = D[i, own].sum() / (own.sum() - 1)
        b = min(D[i, labels == c].mean() for c in set(labels) if c != labels[i])
        s[i] = (b - a) / max(a, b)
    return s


def _blobs(seed=0, k=4):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [8, 0], [0, 8], [8, 8], [16, 4]])[:k]
    return np.concatenate([rng.normal(size=(50, 2)) + c for c in centers])


def test_silhouette_matches_reference_and_sklearn():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 3))
    labels = rng.integers(0, 4, size=90)
    labels[0] = 9  # a singleton cluster, and a gap in the codes
    np.testing.assert_allclose(silhouette_samples(X, labels, chunk_size=16),
                               ref_silhouette(X, labels), atol=1e-12)
    sk = pytest.importorskip("sklearn.metrics")
    assert silhouette_score(X, labels, metric="cityblock") == pytest.approx(
        sk.silhouette_score(X, labels, metric="cityblock"), abs=1e-12)
    with pytest.raises(ValueError, match="clusters"):
        silhouette_score(X, np.zeros(90))


def test_cluster_purities():
    rng = np.random.default_rng(2)
    y, c = rng.integers(0, 3, 200), rng.integers(0, 5, 200)
    per = cluster_purities(y, c)
    for j in range(5):
        assert per[j] == pytest.approx(np.bincount(y[c == j]).max() / (c == j).sum())
    sizes = np.bincount(c)
    assert purity(y, c) == pytest.approx((per * sizes).sum() / sizes.sum())


@pytest.mark.parametrize("k", [3, 4])
def test_criteria_find_the_blobs(k):
    X = _blobs(k=k)
    res = select_n_clusters(X, range(1, 8), random_state=0)
    assert res.best == {"distortion": k, "silhouette": k, "gap": k}
    assert np.all(np.diff(res.distortion) <= 0)
    assert np.isnan(res.silhouette[0]) and res.gap.shape == (7,)


def test_any_clusterer_and_distortion():
    X = _blobs(3, k=3)
    res = select_n_clusters(X, [2, 3, 4], estimator=lambda k: KMedoids(k),
                            criteria=("distortion", "silhouette"))
    assert res.best["silhouette"] == 3 and res.gap is None
    lab = KMedoids(3).fit_predict(X)
    means = np.array([X[lab == j].mean(0) for j in range(3)])
    assert within_cluster_distortion(X, lab) == pytest.approx(((X - means[lab]) ** 2).sum())
    for bad in ({"n_clusters": [0, 2]}, {"criteria": ("bic",)}, {"n_references": 0},
                {"estimator": 3}):
        with pytest.raises((ValueError, TypeError)):
            select_n_clusters(X, **{"n_clusters": [2, 3], **bad})


def test_plot(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from metriclust.plot import plot_n_clusters

    res = select_n_clusters(_blobs(k=3), range(1, 6), n_references=3, random_state=0)
    ax = plot_n_clusters(res)
    ax.figure.savefig(tmp_path / "k.png")
    plt.close(ax.figure)
    assert (tmp_path / "k.png").read_bytes()[:4] == b"\x89PNG"
