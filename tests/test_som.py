"""SelfOrganizingMap (metriclust.som, csrc/prototypes.c): the C updates against a
slow Python transcription, and the map's defining properties (ordering of a
chain on a line, neighbourhood decay, quantisation error)."""

import numpy as np
import pytest

from metriclust import SelfOrganizingMap
from metriclust._kernels import _prototypes


def ref_som(X, W, grid, order, a0, a1, s0, s1):
    W = W.copy()
    T = len(order)
    for t, i in enumerate(order):
        frac = t / T if T > 1 else 0.0
        a = a0 * (a1 / a0) ** frac
        s = s0 * (s1 / s0) ** frac
        b = np.argmin(((W - X[i]) ** 2).sum(1))
        for j in range(len(W)):
            h = np.exp(-((grid[j] - grid[b]) ** 2).sum() / (2 * s * s))
            W[j] += a * h * (X[i] - W[j])
    return W


def test_kernel_matches_reference():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    grid = np.array([(r, c) for r in range(2) for c in range(3)], dtype=float)
    W0 = rng.normal(size=(6, 3))
    order = rng.permutation(np.tile(np.arange(50), 3)).astype(np.int64)
    W = W0.copy()
    _prototypes.som_train(X, W, grid, order, 0.5, 0.01, 2.0, 0.5)
    np.testing.assert_allclose(W, ref_som(X, W0, grid, order, 0.5, 0.01, 2.0, 0.5),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("init", ["pca", "random"])
def test_chain_orders_itself_along_a_line(init):
    """Kohonen's ordering property: a 1 x 8 chain trained on points of a segment ends
    monotone along the segment (from a random start too)."""
    X = np.random.default_rng(1).uniform(size=(400, 1))
    som = SelfOrganizingMap(1, 8, n_epochs=20, init=init, random_state=0).fit(X)
    w = som.cluster_centers_[:, 0]
    assert np.all(np.diff(w) > 0) or np.all(np.diff(w) < 0)
    assert som.topographic_error_ == 0.0


def test_grid_map_quality():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(1000, 2))
    som = SelfOrganizingMap(4, 4, n_epochs=15, random_state=0).fit(X)
    assert som.grid_.shape == (16, 2)
    assert np.array_equal(som.predict(X), som.labels_)
    D = som.transform(X)
    np.testing.assert_allclose(D.min(1).mean(), som.quantization_error_, rtol=1e-9)
    # 16 units on the unit square: about the quantisation error of a 4 x 4 lattice
    # (0.0955 for cells of side 1/4), far below one unit's (0.38)
    assert som.quantization_error_ < 0.13
    assert som.topographic_error_ < 0.1
    # neighbours on the grid are neighbours in the data
    W = som.cluster_centers_
    adj = [np.linalg.norm(W[i] - W[j]) for i in range(16) for j in range(16)
           if np.abs(som.grid_[i] - som.grid_[j]).sum() == 1]
    far = [np.linalg.norm(W[i] - W[j]) for i in range(16) for j in range(16)
           if np.abs(som.grid_[i] - som.grid_[j]).sum() >= 4]
    assert max(adj) < min(far)


def test_scale_invariance_and_same_seed():
    X = np.random.default_rng(3).normal(size=(200, 3))
    a = SelfOrganizingMap(3, 3, random_state=0).fit(X)
    b = SelfOrganizingMap(3, 3, random_state=0).fit(X * 1e140)
    c = SelfOrganizingMap(3, 3, random_state=0).fit(X)
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.cluster_centers_, c.cluster_centers_)


@pytest.mark.parametrize("param,value", [
    ("n_rows", 0), ("n_cols", 100), ("n_epochs", 0), ("learning_rate", 0.0),
    ("learning_rate", 2.0), ("final_learning_rate", -1.0), ("sigma", 0.0),
    ("final_sigma", float("inf")), ("init", "grid")])
def test_bad_parameters(param, value):
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises((ValueError, TypeError), match=param if param != "n_cols" else "n_cols"):
        SelfOrganizingMap(2, 2, **{param: value}).fit(X)
