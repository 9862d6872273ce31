"""Batched 1-D k-means (csrc/kmeans1d.c, ``_core.kmeans.kmeans_columns_1d``).

Each column must be solved exactly as the k-means core solves it as an n x 1
matrix from the same centers (labels, iterations, and centers and inertia to the
last bit), on columns with ties, duplicates and empty clusters, beyond one
chunk of the core's sums (n > 256); the CPCM feature ranking
built on it must pick the features the per-column loop picked.
"""

import numpy as np
import pytest

from metriclust._core import starts
from metriclust._core.kmeans import kmeans, kmeans_columns_1d


def hard_columns(n=1100, seed=0):
    rng = np.random.default_rng(seed)
    cols = [rng.normal(size=n),                                   # plain
            rng.normal(size=n) + 4 * (rng.random(n) < 0.3),       # two modes
            np.round(rng.normal(size=n)),                         # few distinct values
            np.r_[np.ones(n - 5), 2.0 * np.ones(5)],              # duplicate quantiles
            np.r_[np.zeros(n - 3), [50.0, 60.0, 70.0]],           # far outliers
            rng.exponential(size=n) ** 3,                         # heavy tail
            np.repeat(np.arange(4.0), n // 4)]                    # exact midpoint ties
    return np.ascontiguousarray(np.column_stack(cols))


def quantile_starts(X, K):
    return np.quantile(X, (np.arange(K) + 0.5) / K, axis=0).T.astype(X.dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("K", [1, 2, 3, 5, 8])
def test_each_column_as_the_kmeans_core_solves_it(dtype, K):
    X = hard_columns().astype(dtype)
    init = quantile_starts(X, K)
    # also a start with coinciding centers, so that clusters begin empty
    cols = np.r_[np.arange(X.shape[1]), 0]
    init = np.vstack([init, np.full((1, K), X[0, 0])])
    C, inertia, n_iter, labels = kmeans_columns_1d(X, cols, init, return_labels=True)
    assert C.dtype == dtype and labels.shape == (cols.size, X.shape[0])
    for c, j in enumerate(cols):
        ref = kmeans(np.ascontiguousarray(X[:, j:j + 1]), K, init=init[c][:, None], n_init=1)
        np.testing.assert_array_equal(labels[c], ref.labels, err_msg=f"column {j}")
        assert n_iter[c] == ref.n_iter
        # the same sums in the same order: equal to the last bit
        np.testing.assert_array_equal(C[c], ref.centers[:, 0])
        assert inertia[c] == ref.inertia


def test_many_rows_sum_in_the_cores_order():
    # past one inertia block (4096 rows) and over many chunks and segments
    X = hard_columns(n=9000, seed=2)
    init = quantile_starts(X, 6)
    cols = np.arange(X.shape[1])
    C, inertia, n_iter, labels = kmeans_columns_1d(X, cols, init, return_labels=True)
    for j in cols:
        ref = kmeans(np.ascontiguousarray(X[:, j:j + 1]), 6, init=init[j][:, None], n_init=1)
        assert np.array_equal(labels[j], ref.labels) and n_iter[j] == ref.n_iter
        np.testing.assert_array_equal(C[j], ref.centers[:, 0])
        assert inertia[j] == ref.inertia


def test_max_iter_and_tol_follow_the_core():
    X = hard_columns(seed=3)
    init = quantile_starts(X, 4)
    cols = np.arange(X.shape[1])
    for max_iter, tol in ((1, 0.0), (2, 0.0), (300, 0.0), (300, 1e-2)):
        _, inertia, n_iter, labels = kmeans_columns_1d(X, cols, init, max_iter=max_iter,
                                                       tol=tol, return_labels=True)
        for j in cols:
            ref = kmeans(np.ascontiguousarray(X[:, j:j + 1]), 4, init=init[j][:, None],
                         n_init=1, max_iter=max_iter, tol=tol)
            assert n_iter[j] == ref.n_iter and np.array_equal(labels[j], ref.labels)


def test_threads_do_not_change_the_result():
    X = np.random.default_rng(1).normal(size=(500, 300))
    init = quantile_starts(X, 6)
    cols = np.arange(300)
    one = kmeans_columns_1d(X, cols, init, return_labels=True, n_threads=1)
    two = kmeans_columns_1d(X, cols, init, return_labels=True, n_threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_bad_arguments_are_refused():
    X = np.ones((10, 3))
    init = np.zeros((2, 2))
    with pytest.raises(ValueError, match="out of range"):
        kmeans_columns_1d(X, [0, 3], init)
    with pytest.raises(ValueError, match="out of range"):
        kmeans_columns_1d(X, [-1, 0], init)
    with pytest.raises(ValueError, match="init"):
        kmeans_columns_1d(X, [0], init)
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans_columns_1d(X[:1], [0, 1], init)
    with pytest.raises(ValueError, match="max_iter"):
        kmeans_columns_1d(X, [0, 1], init, max_iter=0)
    out = kmeans_columns_1d(X, np.empty(0, dtype=np.int64), np.empty((0, 2)))
    assert out[0].shape == (0, 2) and out[1].shape == (0,)


def _strongest_by_loop(X, K, n_features):
    """The former ranking: one k-means call per feature."""
    share = np.full(X.shape[1], np.inf)
    for j, init in starts.feature_quantiles(X, K):
        column = np.ascontiguousarray(X[:, j:j + 1])
        total = float(np.sum((column - column.mean(dtype=np.float64)) ** 2))
        if total > 0:
            res = kmeans(column, K, init=init.reshape(-1, 1).astype(X.dtype), n_init=1)
            share[j] = res.inertia / total
    return np.sort(np.argsort(share, kind="stable")[:n_features])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_feature_ranking_matches_the_per_column_loop(dtype):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 700))
    X[:20, :40] += 8.0                      # 40 features that split the rows
    X[:, 100] = 0.0                         # a constant feature ranks last
    X = X.astype(dtype)
    got = starts.strongest_split_features(X, 3, 50, block=128)
    np.testing.assert_array_equal(got, _strongest_by_loop(X, 3, 50))
    assert set(range(40)) <= set(got.tolist()) and 100 not in got
