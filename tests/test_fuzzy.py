"""FuzzyCMeans (metriclust.fuzzy) against a slow loop-by-loop reference of
Bezdek's updates, and its invariants (monotone objective, rows summing to 1)."""

import numpy as np
import pytest

from metriclust import FuzzyCMeans, KMeans
from metriclust.metrics import adjusted_rand_index

from _reference import sq_distances


def ref_fcm_step(X, C, m):
    """One update, written as the formulas read: memberships, then centers."""
    n, K = X.shape[0], C.shape[0]
    d = np.array([[np.sqrt(((X[i] - C[k]) ** 2).sum()) for k in range(K)] for i in range(n)])
    U = np.empty((n, K))
    for i in range(n):
        for k in range(K):
            U[i, k] = 1.0 / sum((d[i, k] / d[i, j]) ** (2.0 / (m - 1.0)) for j in range(K))
    C_new = np.array([sum(U[i, k] ** m * X[i] for i in range(n)) / sum(U[i, k] ** m
                      for i in range(n)) for k in range(K)])
    return U, C_new


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(size=(40, 2)), rng.normal(size=(30, 2)) + [5, 0],
                 rng.normal(size=(30, 2)) + [0, 5]]


@pytest.mark.parametrize("m", [1.5, 2.0, 3.0])
def test_matches_reference_updates(m):
    X = _data()
    C0 = X[[0, 45, 80]] + 0.1
    # with init C0 and max_iter=k, the estimator has made k center updates
    U, C = ref_fcm_step(X, C0, m)          # memberships of C0 -> centers 1
    for it in range(1, 4):
        fcm = FuzzyCMeans(3, m=m, init=C0, max_iter=it, tol=0).fit(X)
        np.testing.assert_allclose(fcm.cluster_centers_, C, rtol=1e-9, atol=1e-12)
        U, C = ref_fcm_step(X, C, m)
        np.testing.assert_allclose(fcm.memberships_, U, rtol=1e-9, atol=1e-12)


def test_objective_monotone_and_memberships():
    X = _data(1)
    fcm = FuzzyCMeans(3, random_state=0, tol=0, max_iter=50).fit(X)
    J = np.array(fcm.objective_history_)
    assert np.all(np.diff(J) <= 1e-12 * J[1:])
    np.testing.assert_allclose(fcm.memberships_.sum(1), 1.0)
    assert np.all(fcm.memberships_ >= 0)
    u = fcm.memberships_
    d2 = sq_distances(X, fcm.cluster_centers_)
    assert fcm.objective_ == pytest.approx(np.sum(u**2 * d2), rel=1e-9)
    np.testing.assert_allclose(fcm.predict_memberships(X), u, atol=1e-12)
    assert np.array_equal(fcm.predict(X), fcm.labels_)


def test_small_m_approaches_kmeans_and_large_m_uniform():
    X = _data(2)
    km = KMeans(3, random_state=0).fit(X)
    fcm = FuzzyCMeans(3, m=1.05, random_state=0).fit(X)
    assert adjusted_rand_index(km.labels_, fcm.labels_) == pytest.approx(1.0)
    assert fcm.memberships_.max(1).mean() > 0.99
    # (k-means++ seeds on data points; with m = 50 a point on a center keeps it
    # there -- a genuine fixed point -- so start off the data here)
    flat = FuzzyCMeans(3, m=50.0, init=X[[0, 45, 80]] + 0.1).fit(X)
    assert np.median(np.abs(flat.memberships_ - 1 / 3)) < 0.02


def test_point_on_center_and_scale_invariance():
    X = np.array([[0.0, 0], [0, 0], [4, 0], [4, 0]])
    fcm = FuzzyCMeans(2, random_state=0).fit(X)
    assert sorted(fcm.memberships_.max(1).tolist()) == [1.0] * 4
    X = _data(3)
    a = FuzzyCMeans(3, random_state=0).fit(X)
    b = FuzzyCMeans(3, random_state=0).fit(X * 1e-100)
    np.testing.assert_allclose(b.memberships_, a.memberships_, atol=1e-9)


@pytest.mark.parametrize("param,value", [("m", 1.0), ("m", 0.5), ("m", float("inf")),
                                         ("n_clusters", 0), ("max_iter", 0), ("tol", -1.0),
                                         ("init", "random"), ("init", np.zeros((2, 2)))])
def test_bad_parameters(param, value):
    with pytest.raises((ValueError, TypeError), match=param):
        FuzzyCMeans(3, **{param: value}).fit(_data())
