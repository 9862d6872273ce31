"""The partition primitives of ``metriclust._core.partition`` against slow references."""

from fractions import Fraction

import numpy as np
import pytest

from metriclust._core import partition
from metriclust._core.kmeans import kmeans
from _reference import blur_ratio as ref_blur_ratio


def _data(n=300, p=4, k=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(n, p)), dtype=dtype)
    labels = rng.integers(0, k, size=n).astype(np.int64)
    return X, labels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scatter_matches_direct_sums(dtype):
    X, labels = _data(dtype=dtype)
    K = 4                                            # cluster 3 is empty
    s = partition.scatter(X, labels, K)
    X64 = X.astype(np.float64)
    for k in range(K):
        rows = X64[labels == k]
        want = float(((rows - rows.mean(0)) ** 2).sum()) if len(rows) else 0.0
        assert s.within[k] == pytest.approx(want, rel=1e-12, abs=1e-12)
    total = float(((X64 - X64.mean(0)) ** 2).sum())
    assert s.within.sum() + s.between == pytest.approx(total, rel=1e-12)
    assert partition.blur_ratio(X, labels, K) == pytest.approx(ref_blur_ratio(X64, labels),
                                                               rel=1e-12)


def test_scatter_streams_blocks_like_one_pass(monkeypatch):
    X, labels = _data(n=1000)
    whole = partition.scatter(X, labels, 3)
    total = partition.within_ss(X, labels, 3)
    assert total == pytest.approx(float(whole.within.sum()), rel=1e-13)
    monkeypatch.setattr(partition, "_BLOCK_FLOATS", 30)        # blocks of 7 rows
    blocked = partition.scatter(X, labels, 3)
    np.testing.assert_allclose(blocked.within, whole.within, rtol=1e-13)
    assert partition.within_ss(X, labels, 3) == pytest.approx(total, rel=1e-13)


def _exact_blur_ratio(X, labels):
    # rational arithmetic on the float inputs: the true value of the ratio
    rows = [[Fraction(float(v)) for v in r] for r in X]
    p, n = X.shape[1], len(rows)

    def ss(group):
        mean = [sum(r[j] for r in group) / len(group) for j in range(p)]
        return sum((r[j] - mean[j]) ** 2 for r in group for j in range(p))

    within = sum(ss([rows[i] for i in range(n) if labels[i] == k]) for k in set(labels.tolist()))
    return float(within / ss(rows))


def test_blur_ratio_keeps_its_relative_accuracy_for_tight_clusters():
    # Two clusters 1e6 apart with spread 1e-3: BR ~ 4e-18. The cancelling form
    # 1 - SSB/SST returns rounding noise (or 0) here; this one all digits.
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(2, dtype=np.int64), 20)
    X = np.ascontiguousarray(1e6 * labels[:, None] + 1e-3 * rng.normal(size=(40, 2)))
    want = _exact_blur_ratio(X, labels)
    assert 0 < want < 1e-15
    assert partition.blur_ratio(X, labels, 2) == pytest.approx(want, rel=1e-9)
    shares = partition.within_shares(X, labels, 2)
    assert shares.sum() == pytest.approx(want, rel=1e-9) and np.all(shares > 0)


def test_blur_ratio_of_coincident_points_is_one():
    X = np.zeros((10, 2))
    assert partition.blur_ratio(X, np.arange(10, dtype=np.int64) % 2, 2) == 1.0
    np.testing.assert_array_equal(partition.within_shares(X, np.zeros(10, dtype=np.int64), 2),
                                  [1.0, 1.0])


def test_cluster_means_weighted_and_empty():
    X, labels = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(labels))
    means, weights = partition.cluster_means(X, labels, 4, sample_weight=w)
    for k in range(3):
        m = labels == k
        np.testing.assert_allclose(means[k], (X[m] * w[m, None]).sum(0) / w[m].sum(),
                                   rtol=1e-12)
        assert weights[k] == pytest.approx(float(w[m].sum()), rel=1e-12)
    assert weights[3] == 0 and np.all(means[3] == 0)
    sums, counts = partition.cluster_sums(X, labels, 4)
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=4))
    np.testing.assert_allclose(sums[:3], [X[labels == k].sum(0) for k in range(3)], rtol=1e-12)


def test_same_partition_and_canonical():
    a = np.array([0, 0, 1, 1, 2], dtype=np.int64)
    b = np.array([2, 2, 0, 0, 1], dtype=np.int64)
    assert partition.same_partition(a, b, 3)
    assert not partition.same_partition(a, np.array([0, 0, 1, 1, 1], dtype=np.int64), 3)
    assert not partition.same_partition(a, np.array([0, 1, 1, 1, 2], dtype=np.int64), 3)
    np.testing.assert_array_equal(partition.canonical(a), partition.canonical(b))
    assert partition.canonical(b).tolist() == [0, 0, 1, 1, 2]


def test_lloyd_from_partition_is_kmeans_from_the_partition_means():
    X, labels = _data(n=400, p=3, k=4, seed=5)
    got = partition.lloyd_from_partition(X, labels, 4)
    means, _ = partition.cluster_means(X, labels, 4)
    want = kmeans(X, 4, init=means, n_init=1, tol=0.0).labels
    np.testing.assert_array_equal(got, want)
    # Lloyd never raises the within-cluster sum of squares of its start
    assert (partition.scatter(X, got, 4).within.sum()
            <= partition.scatter(X, labels, 4).within.sum())
    # a fixed point stays put
    np.testing.assert_array_equal(partition.lloyd_from_partition(X, got, 4), got)
