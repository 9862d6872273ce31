"""ISODATA (metriclust.isodata): splits find clusters k-means was not given,
merges remove superfluous ones, and each action does what it says."""

import numpy as np
import pytest

from metriclust.isodata import ISODATA
from metriclust.metrics import adjusted_rand_index


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [4, 0], [0, 4], [4, 4]])
    X = np.concatenate([rng.normal(size=(80, 2)) * 0.3 + c for c in centers])
    return X, np.repeat(np.arange(4), 80)


@pytest.mark.parametrize("start", [2, 8])
def test_reaches_the_four_blobs(start):
    X, y = _blobs()
    iso = ISODATA(start, split_std=0.3, merge_distance=0.3, random_state=0).fit(X)
    assert len(iso.cluster_centers_) == 4
    assert adjusted_rand_index(y, iso.labels_) == pytest.approx(1.0)
    actions = {a for _, a, _ in iso.history_}
    assert ("split" in actions) if start == 2 else ("merge" in actions)
    assert np.array_equal(iso.predict(X), iso.labels_)


def test_no_action_is_plain_kmeans_and_scale_invariance():
    X, _ = _blobs(1)
    iso = ISODATA(4, split_std=10.0, merge_distance=0.0, random_state=0).fit(X)
    assert iso.history_ == [] and len(iso.cluster_centers_) == 4
    big = ISODATA(2, split_std=0.3, merge_distance=0.3, random_state=0).fit(X * 1e100)
    ref = ISODATA(2, split_std=0.3, merge_distance=0.3, random_state=0).fit(X)
    assert np.array_equal(big.labels_, ref.labels_)


@pytest.mark.parametrize("param,value", [("n_clusters", 0), ("min_cluster_size", 0),
                                         ("split_std", -1.0), ("merge_distance", float("nan")),
                                         ("max_merges", -1), ("max_iter", 0)])
def test_bad_parameters(param, value):
    with pytest.raises((ValueError, TypeError), match=param):
        ISODATA(**{param: value}).fit(_blobs()[0])
