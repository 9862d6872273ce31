"""Farthest-first ("least similar point") seeding in the k-means core and KMeans."""

import numpy as np
import pytest

from metriclust import KMeans
from metriclust._core.kmeans import farthest_first, value_order

from _reference import sq_distances


def ref_farthest(X, k, first):
    idx = [first]
    for _ in range(1, k):
        d = sq_distances(X, X[idx]).min(1)
        idx.append(int(np.argmax(d)))
    return idx


@pytest.mark.parametrize("seed", range(3))
def test_matches_reference(seed):
    X = np.random.default_rng(seed).normal(size=(200, 3))
    centers, idx = farthest_first(X, 6, random_state=seed)
    # the first row is drawn uniformly over the rows ordered by value
    first = value_order(X)[np.random.default_rng(seed).choice(200, p=np.full(200, 1 / 200))]
    assert idx.tolist() == ref_farthest(X, 6, first)
    np.testing.assert_array_equal(centers, X[idx])


def test_zero_weight_rows_never_chosen():
    X = np.r_[np.zeros((5, 2)), [[100.0, 100.0]]]
    w = np.r_[np.ones(5), 0.0]
    _, idx = farthest_first(X, 2, sample_weight=w, random_state=0)
    assert 5 not in idx


def test_kmeans_farthest_init_finds_the_far_cluster():
    """Three blobs, one tiny and far away: farthest-first always seeds it."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + [4, 0],
              rng.normal(size=(5, 2)) * 0.1 + [60, 60]]
    for seed in range(5):
        km = KMeans(3, init="farthest", random_state=seed).fit(X)
        assert len(set(km.labels_[-5:])) == 1 and km.labels_[-1] not in km.labels_[:600]
        assert km.n_iter_ >= 1
    with pytest.raises(ValueError, match="init"):
        KMeans(3, init="farthest-first").fit(X)
