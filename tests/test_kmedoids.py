"""KMedoids (metriclust.kmedoids): PAM BUILD + SWAP (FastPAM1 deltas) and the
alternating variant, on scipy's metrics or a precomputed matrix.

References kept here: the total distance of every medoid set by brute force
(tiny data), and every single swap evaluated one at a time.
"""

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from metriclust import KMedoids
from metriclust.kmedoids import pam_build, swap_deltas


def _total(D, medoids):
    return D[:, list(medoids)].min(axis=1).sum()


def _brute_optimum(D, k):
    return min(_total(D, c) for c in itertools.combinations(range(D.shape[0]), k))


def _blobs(seed, n=9, d=2):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) + rng.integers(0, 3, size=(n, 1)) * 5.0


def test_swap_deltas_match_one_swap_at_a_time():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 3))
    D = cdist(X, X)
    medoids = np.array([3, 11, 17])
    delta = swap_deltas(D, medoids)
    base = _total(D, medoids)
    for m in range(3):
        for x in range(25):
            if x in medoids:
                assert delta[m, x] == np.inf
                continue
            trial = medoids.copy()
            trial[m] = x
            assert delta[m, x] == pytest.approx(_total(D, trial) - base, abs=1e-10)


def test_build_is_greedy():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    D = cdist(X, X)
    med = pam_build(D, 4)
    chosen = []
    for _ in range(4):
        costs = [(_total(D, chosen + [c]) if c not in chosen else np.inf) for c in range(30)]
        chosen.append(int(np.argmin(costs)))
    assert med.tolist() == chosen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
def test_pam_reaches_brute_force_optimum(seed, k, metric):
    X = _blobs(seed)
    D = cdist(X, X, metric)
    km = KMedoids(k, metric=metric).fit(X)
    assert km.inertia_ == pytest.approx(_brute_optimum(D, k), rel=1e-12)
    assert km.inertia_ == pytest.approx(_total(D, km.medoid_indices_), rel=1e-12)


@pytest.mark.parametrize("method", ["pam", "alternate"])
@pytest.mark.parametrize("init", ["build", "random"])
def test_result_is_consistent(method, init):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2)) + np.repeat([[0, 0], [6, 0], [0, 6]], 20, axis=0)
    km = KMedoids(3, method=method, init=init, random_state=0).fit(X)
    D = cdist(X, X)
    assert np.array_equal(km.labels_, D[:, km.medoid_indices_].argmin(1))
    assert np.array_equal(km.predict(X), km.labels_)
    np.testing.assert_allclose(km.transform(X), D[:, km.medoid_indices_])
    assert np.array_equal(km.cluster_centers_, X[km.medoid_indices_])
    if method == "pam":  # no single swap improves PAM's result
        assert np.all(swap_deltas(D, km.medoid_indices_) >= -1e-9)
    else:  # each medoid minimises its cluster's total distance
        for k, m in enumerate(km.medoid_indices_):
            members = np.flatnonzero(km.labels_ == k)
            assert D[members][:, members].sum(0).min() == pytest.approx(D[members, m].sum())
    # PAM's optimum is no worse than the alternating one from the same start
    if method == "alternate":
        pam = KMedoids(3, init=init, random_state=0).fit(X)
        assert pam.inertia_ <= km.inertia_ + 1e-9


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev", "minkowski",
                                    "hamming", "cosine", "correlation", "sqeuclidean"])
def test_precomputed_equals_metric(metric):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 4)) + 0.1
    if metric == "hamming":
        X = (X > 0).astype(float)
    a = KMedoids(3, metric=metric).fit(X)
    D = cdist(X, X, metric)
    b = KMedoids(3, metric="precomputed").fit(D)
    assert np.array_equal(a.medoid_indices_, b.medoid_indices_)
    assert a.inertia_ == pytest.approx(b.inertia_)
    Xn = rng.normal(size=(5, 4))
    if metric == "hamming":
        Xn = (Xn > 0).astype(float)
    assert np.array_equal(a.predict(Xn), b.predict(cdist(Xn, X, metric)))


def test_callable_metric_and_errors():
    X = _blobs(0, n=20)
    a = KMedoids(2, metric=lambda u, v: np.abs(u - v).sum()).fit(X)
    b = KMedoids(2, metric="cityblock").fit(X)
    assert np.array_equal(a.medoid_indices_, b.medoid_indices_)
    for kw in ({"metric": "bogus"}, {"metric": 3}, {"method": "clara"}, {"init": "x"},
               {"max_iter": 0}):
        with pytest.raises((ValueError, TypeError), match=list(kw)[0]):
            KMedoids(2, **kw).fit(X)
    with pytest.raises(ValueError, match="square"):
        KMedoids(2, metric="precomputed").fit(np.ones((3, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        KMedoids(2, metric="precomputed").fit(-np.ones((3, 3)))
    with pytest.raises(ValueError, match="cosine"):
        KMedoids(2, metric="cosine").fit(np.zeros((5, 2)))
