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
    from metriclust._core.kmeans import kmeans
    from metriclust._core.scaling import standardise
    from metriclust._core.validation import check_random_state

    iso = ISODATA(4, split_std=10.0, merge_distance=0.0, random_state=0).fit(X)
    assert iso.history_ == [] and len(iso.cluster_centers_) == 4
    Xs, mean, scale = standardise(X)   # plain k-means from the same seeding
    plain = kmeans(Xs, 4, random_state=check_random_state(0))
    np.testing.assert_array_equal(iso.labels_, plain.labels)
    np.testing.assert_allclose(iso.cluster_centers_, plain.centers * scale + mean, rtol=1e-12,
                               atol=1e-12)
    big = ISODATA(2, split_std=0.3, merge_distance=0.3, random_state=0).fit(X * 1e100)
    ref = ISODATA(2, split_std=0.3, merge_distance=0.3, random_state=0).fit(X)
    assert np.array_equal(big.labels_, ref.labels_)


@pytest.mark.parametrize("param,value", [("n_clusters", 0), ("min_cluster_size", 0),
                                         ("split_std", -1.0), ("merge_distance", float("nan")),
                                         ("max_merges", -1), ("max_iter", 0)])
def test_bad_parameters(param, value):
    with pytest.raises((ValueError, TypeError), match=param):
        ISODATA(**{param: value}).fit(_blobs()[0])


# -- reference: one split round and one merge round in plain numpy -------------

def _reference_round(Xs, centers, K0, action, *, min_cluster_size=2, split_std=0.5,
                     merge_distance=0.5, max_merges=2):
    """The docstring's split (step 3) or merge (step 4) rule, loop by loop, on the
    clusters of one Lloyd run from ``centers`` (the shared core, tested elsewhere)."""
    from metriclust._core.kmeans import kmeans

    labels = kmeans(Xs, len(centers), init=centers, n_init=1).labels
    K = len(centers)
    members = [Xs[labels == k] for k in range(K)]
    assert all(len(m) >= min_cluster_size for m in members)  # no removal in these cases
    means = np.array([m.mean(axis=0) for m in members])
    sizes = np.array([len(m) for m in members])
    if action == "split":
        overall = np.mean([np.linalg.norm(x - means[k]) for k in range(K) for x in members[k]])
        kept, halves = [], []
        for k in range(K):
            std = members[k].std(axis=0)
            a = int(np.argmax(std))
            spread = np.mean([np.linalg.norm(x - means[k]) for x in members[k]])
            if (std[a] > split_std and sizes[k] >= 2 * min_cluster_size
                    and (spread > overall or K <= K0 // 2)):
                step = np.zeros(Xs.shape[1])
                step[a] = 0.5 * std[a]
                halves.append((means[k] + step, means[k] - step))
            else:
                kept.append(means[k])
        return np.array(kept + [h[0] for h in halves] + [h[1] for h in halves])
    pairs = sorted((np.linalg.norm(means[a] - means[b]), a, b)
                   for a in range(K) for b in range(a + 1, K))
    used, merged = set(), []
    for dist, a, b in pairs:
        if dist < merge_distance and a not in used and b not in used \
                and len(merged) < max_merges:
            used |= {a, b}
            merged.append((sizes[a] * means[a] + sizes[b] * means[b]) / (sizes[a] + sizes[b]))
    return np.array([means[k] for k in range(K) if k not in used] + merged)


@pytest.mark.parametrize("action, K0, kw", [
    ("split", 2, dict(split_std=0.3, merge_distance=0.3)),
    ("merge", 8, dict(split_std=10.0, merge_distance=0.6, max_merges=3)),
])
def test_split_and_merge_rounds_match_reference(action, K0, kw, monkeypatch):
    # max_iter=1: one (odd, so split) round; max_iter=2 after a round without a
    # split: one merge round. Then the final Lloyd run from the new centers,
    # whose start is compared directly (Lloyd would hide a small error in it).
    import metriclust.isodata as isodata_module
    from metriclust._core.kmeans import kmeans
    from metriclust._core.scaling import standardise
    from metriclust._core.validation import check_random_state

    X, _ = _blobs(2)
    Xs, mean, scale = standardise(X)
    centers = kmeans(Xs, K0, random_state=check_random_state(0)).centers
    if action == "merge":  # round 1 splits nothing: its Lloyd run is the start of round 2
        centers = kmeans(Xs, K0, init=centers, n_init=1).centers
    expected = _reference_round(Xs, centers, K0, action, **kw)
    assert len(expected) != K0  # the round acts
    final = kmeans(Xs, len(expected), init=np.ascontiguousarray(expected), n_init=1)
    starts = []

    def spy(Xa, k, **kwargs):
        starts.append(kwargs.get("init"))
        return kmeans(Xa, k, **kwargs)

    monkeypatch.setattr(isodata_module, "kmeans", spy)
    iso = ISODATA(K0, max_iter=1 if action == "split" else 2, random_state=0, **kw).fit(X)
    np.testing.assert_allclose(starts[-1], expected, rtol=1e-12, atol=1e-12)
    assert [a for _, a, _ in iso.history_] == [action]
    assert iso.history_[0][2] == len(expected)
    np.testing.assert_array_equal(iso.labels_, final.labels)
    np.testing.assert_allclose(iso.cluster_centers_, final.centers * scale + mean, rtol=1e-12,
                               atol=1e-12)
