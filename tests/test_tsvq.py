"""TreeStructuredVQ (metriclust.tsvq): splits against brute-force references,
greedy/balanced orders, descent = training labels, distortion vs k-means."""

import numpy as np
import pytest

from metriclust import KMeans, TreeStructuredVQ
from metriclust.tsvq import monothetic_split


def _sse(X):
    return ((X - X.mean(0)) ** 2).sum() if len(X) else 0.0


def ref_monothetic(X):
    """Every feature, every threshold between distinct values, one at a time."""
    best = None
    for j in range(X.shape[1]):
        vals = np.unique(X[:, j])
        for a, b in zip(vals[:-1], vals[1:]):
            thr = 0.5 * (a + b)
            right = X[:, j] > thr
            cost = _sse(X[~right]) + _sse(X[right])
            if best is None or cost < best[2] - 1e-12:
                best = (j, thr, cost)
    return best


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [6, 0], [0, 6], [6, 6], [12, 0], [12, 6], [3, 12], [9, 12.]])
    return np.concatenate([rng.normal(size=(25, 2)) + c for c in centers])


@pytest.mark.parametrize("seed", range(3))
def test_monothetic_split_matches_brute_force(seed):
    X = np.random.default_rng(seed).normal(size=(40, 3))
    X[:5, 0] = X[5, 0]  # ties
    j, thr, cost = monothetic_split(X)
    rj, rthr, rcost = ref_monothetic(X)
    assert (j, thr) == (rj, rthr)
    assert cost == pytest.approx(rcost, rel=1e-10)


@pytest.mark.parametrize("tree", ["greedy", "balanced"])
@pytest.mark.parametrize("split", ["2-means", "monothetic"])
def test_tree_consistency(tree, split):
    X = _blobs()
    t = TreeStructuredVQ(8, tree=tree, split=split, random_state=0).fit(X)
    assert t.n_leaves_ == 8 and len(np.unique(t.labels_)) == 8
    assert np.array_equal(t.predict(X), t.labels_)
    np.testing.assert_allclose(t.cluster_centers_,
                               [X[t.labels_ == k].mean(0) for k in range(8)], atol=1e-10)
    assert t.inertia_ == pytest.approx(sum(_sse(X[t.labels_ == k]) for k in range(8)))
    assert t.kmeans_inertia_ <= t.inertia_ * (1 + 1e-12)
    # a binary tree: 2 * leaves - 1 nodes, each internal node has two children
    assert len(t.children_) == 15
    internal = t.children_[:, 0] >= 0
    assert internal.sum() == 7
    if tree == "balanced":  # 8 leaves -> a full tree of depth 3
        assert set(t.depth_[~internal]) == {3}


def test_greedy_splits_the_largest_distortion():
    """Greedy order: one far, wide cluster and two tight ones; the wide one is split
    first (its distortion is the largest), so with 3 leaves the tight pair stays whole."""
    rng = np.random.default_rng(1)
    wide = rng.normal(size=(50, 2)) * 3 + [40, 0]
    tight = np.r_[rng.normal(size=(50, 2)) * 0.1, rng.normal(size=(50, 2)) * 0.1 + [1.5, 0]]
    X = np.r_[wide, tight]
    t = TreeStructuredVQ(3, random_state=0).fit(X)
    assert len(np.unique(t.labels_[50:])) == 1  # the tight pair shares a leaf
    b = TreeStructuredVQ(4, tree="balanced", random_state=0).fit(X)
    assert set(b.depth_[b.children_[:, 0] < 0]) == {2}


def test_distortion_against_kmeans():
    """The distortion reported against full k-means. Measured on these 8 blobs
    (seeds 0-2, k-means++ draws over rows ordered by value): greedy 2-means trees
    1.50-1.90x k-means' best of 10, balanced trees 1.65-2.48x (balanced must split
    every blob-pair evenly; on seed 2 both trees make the same splits); k-means
    started from the greedy tree's leaves reaches k-means' best (the notes' TSVQ
    seeding)."""
    ratios = []
    for seed in range(3):
        X = _blobs(seed)
        km = KMeans(8, n_init=10, random_state=0).fit(X)
        g = TreeStructuredVQ(8, random_state=0).fit(X)
        b = TreeStructuredVQ(8, tree="balanced", random_state=0).fit(X)
        m = TreeStructuredVQ(8, split="monothetic").fit(X)
        for t in (g, b, m):
            assert km.inertia_ * (1 - 1e-9) <= t.inertia_ <= 3 * km.inertia_
            assert t.kmeans_inertia_ <= t.inertia_ * (1 + 1e-12)
        assert g.inertia_ <= b.inertia_ * (1 + 1e-12)
        ratios.append(b.inertia_ / g.inertia_)
        assert g.kmeans_inertia_ == pytest.approx(km.inertia_, rel=1e-6)
    assert max(ratios) > 1.5       # greedy splitting pays on at least one layout


def test_unsplittable_data_gives_fewer_leaves_and_scale_invariance():
    X = np.ones((10, 2))
    t = TreeStructuredVQ(3).fit(X)
    assert t.n_leaves_ == 1 and t.inertia_ == 0.0
    X = _blobs(3)
    a = TreeStructuredVQ(5, random_state=0).fit(X)
    b = TreeStructuredVQ(5, random_state=0).fit(X * 1e-120)
    assert np.array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("param,value", [("n_clusters", 0), ("tree", "bfs"),
                                         ("split", "pca"), ("n_init", 0)])
def test_bad_parameters(param, value):
    with pytest.raises((ValueError, TypeError), match=param):
        TreeStructuredVQ(**{param: value}).fit(_blobs())
