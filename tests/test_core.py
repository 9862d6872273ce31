import numpy as np
import pytest

from metriclust._core.base import BaseEstimator, NotFittedError, check_is_fitted
from metriclust._core.threads import effective_n_threads
from metriclust._core.validation import (
    check_array, check_labels, check_n_clusters, check_pairs, check_random_state,
    check_sample_weight, check_scalar,
)
from metriclust._kernels._sums import cluster_sums, contingency, value_range


def test_check_array_preserves_float32_and_converts_ints():
    assert check_array(np.ones((3, 2), np.float32)).dtype == np.float32
    assert check_array([[1, 2], [3, 4]]).dtype == np.float64
    X = np.ones((4, 3))
    assert check_array(X) is X  # no copy when already fine
    F = np.asfortranarray(np.ones((4, 3)))
    assert check_array(F).flags.c_contiguous


@pytest.mark.parametrize("bad, kind", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_check_array_names_first_nonfinite_position(bad, kind):
    X = np.zeros((5, 3))
    X[2, 1] = bad
    X[4, 0] = bad
    with pytest.raises(ValueError, match=f"Xtest contains {kind} at row 2, column 1"):
        check_array(X, name="Xtest")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_value_range_matches_numpy(dtype):
    """value_range (one C pass, the check of large arrays): numpy's min and
    max over the values that are not NaN, and whether there is a NaN, for
    lengths around its lanes and blocks, a NaN or an infinity anywhere
    (first, last, the lanes' tail), signed zeros, 1 and 2 threads."""
    rng = np.random.default_rng(0)
    for n in (1, 15, 16, 17, 65535, 65536 + 5, 3 * 65536 + 33):
        x = rng.normal(scale=1e3, size=n).astype(dtype)
        for nt in (1, 2):
            assert value_range(x, nt) == (float(x.min()), float(x.max()), False)
        for pos in {0, n - 1, n // 2, max(n - 3, 0)}:
            for bad in (np.nan, np.inf, -np.inf):
                y = x.copy()
                y[pos] = bad
                lo, hi, has_nan = value_range(y, 2)
                finite = y[~np.isnan(y)]
                assert has_nan == bool(np.isnan(bad))
                if finite.size:
                    assert (lo, hi) == (float(finite.min()), float(finite.max()))
    z = np.array([0.0, -0.0] * 40, dtype=dtype)
    lo, hi, has_nan = value_range(z)
    assert lo == 0 and hi == 0 and not has_nan
    with pytest.raises(ValueError, match="empty"):
        value_range(np.zeros(0, dtype))


@pytest.mark.parametrize("bad, kind", [(np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "infinity")])
def test_check_array_large_names_first_nonfinite_position(bad, kind):
    """Arrays large enough for the one-pass C check give the same refusal,
    and a large finite array is accepted without a copy."""
    X = np.zeros((40000, 3))
    assert check_array(X) is X
    X[20000, 2] = bad
    X[39999, 0] = bad
    with pytest.raises(ValueError, match=f"Xtest contains {kind} at row 20000, column 2"):
        check_array(X, name="Xtest")
    X = np.full((40000, 2), 1e308)
    with pytest.raises(ValueError, match="magnitude 1e.308.*Rescale"):
        check_array(X)


def test_check_array_rejects_bad_shapes_and_types():
    with pytest.raises(ValueError, match="Expected a 2D array for X"):
        check_array(np.ones(3))
    with pytest.raises(ValueError, match="n_samples=0"):
        check_array(np.ones((0, 3)))
    with pytest.raises(ValueError, match="Complex data"):
        check_array(np.ones((2, 2), complex))
    with pytest.raises(TypeError, match="must hold numbers"):
        check_array(np.array([["a", "b"]]))
    with pytest.raises(TypeError, match="sparse"):
        import scipy.sparse as sp

        check_array(sp.eye(3, format="csr"))


def test_overflowing_sum_is_not_mistaken_for_nonfinite():
    # Finite but too large for squared distances: refused as such (the finite
    # but huge contract), not reported as NaN or infinity.
    X = np.full((4, 2), 1e308)
    with pytest.raises(ValueError, match="magnitude 1e.308.*Rescale"):
        check_array(X)
    X = np.full((4, 2), 1e150)
    assert check_array(X) is X


def test_check_n_clusters():
    assert check_n_clusters(3, 10) == 3
    with pytest.raises(ValueError, match="n_samples=2 should be >= n_clusters=3"):
        check_n_clusters(3, 2)
    with pytest.raises(TypeError, match="n_clusters"):
        check_n_clusters(2.5, 10)
    with pytest.raises(ValueError, match="n_clusters"):
        check_n_clusters(0, 10)


def test_check_pairs():
    p = check_pairs([[0, 1], [2, 3]], 4)
    assert p.dtype == np.int64 and p.shape == (2, 2)
    assert check_pairs([], 4).shape == (0, 2)
    with pytest.raises(ValueError, match=r"similar\[1, 1\] = 4 is out of range"):
        check_pairs([[0, 1], [2, 4]], 4, name="similar")
    with pytest.raises(ValueError, match=r"with itself"):
        check_pairs([[1, 1]], 4)
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2\)"):
        check_pairs([[0, 1, 2]], 4)
    with pytest.raises(ValueError, match="integer"):
        check_pairs([[0.5, 1]], 4)


def test_check_random_state():
    a = check_random_state(3).random(3)
    b = check_random_state(3).random(3)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(0)
    assert check_random_state(g) is g
    with pytest.raises(TypeError, match="random_state"):
        check_random_state("seed")
    with pytest.raises(ValueError, match="random_state"):
        check_random_state(-1)


def test_check_sample_weight_and_scalar():
    np.testing.assert_array_equal(check_sample_weight(None, 3), np.ones(3))
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        check_sample_weight([1, 2], 3)
    with pytest.raises(ValueError, match="non-negative"):
        check_sample_weight([1, -2, 1], 3)
    with pytest.raises(ValueError, match=r"tol == -1, must be >= 0"):
        check_scalar(-1, "tol", (int, float), min_val=0)
    with pytest.raises(TypeError, match="max_iter must be an instance of int"):
        check_scalar(True, "max_iter", int)


def test_check_labels_encodes_hashables():
    codes, classes = check_labels(["b", "a", "b", "c"])
    np.testing.assert_array_equal(codes, [1, 0, 1, 2])
    np.testing.assert_array_equal(classes[codes], ["b", "a", "b", "c"])
    with pytest.raises(ValueError, match="labels_true has 2 entries, expected 3"):
        check_labels([1, 2], name="labels_true", n_samples=3)


def test_cluster_sums_matches_numpy_for_both_dtypes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 5))
    labels = rng.integers(0, 7, size=10_000)
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        # The kernel accumulates in float64 whatever the input dtype.
        expected = np.stack([Xd[labels == k].astype(np.float64).sum(0) for k in range(7)])
        np.testing.assert_allclose(cluster_sums(Xd, labels, 7), expected, rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
        cluster_sums(X, labels, 3)
    with pytest.raises(ValueError, match="labels has"):
        cluster_sums(X, labels[:5], 7)


def test_cluster_sums_independent_of_thread_count():
    rng = np.random.default_rng(1)
    # 1.2e6 entries: above the kernel's serial threshold, so two threads really run.
    X = rng.normal(size=(400_000, 3))
    labels = rng.integers(0, 4, size=400_000)
    one = cluster_sums(X, labels, 4, 1)
    two = cluster_sums(X, labels, 4, 2)
    np.testing.assert_array_equal(one, two)


def test_contingency_kernel():
    a = np.array([0, 0, 1, 2, 2, 2])
    b = np.array([1, 1, 0, 0, 1, 1])
    np.testing.assert_array_equal(contingency(a, b, 3, 2), [[0, 2], [1, 0], [1, 2]])
    with pytest.raises(ValueError, match="out of range"):
        contingency(a, b, 2, 2)


def test_effective_n_threads_follows_threadpoolctl():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        assert effective_n_threads() == 1
    assert effective_n_threads(3) == 3
    with pytest.raises(ValueError):
        effective_n_threads(0)


class _Toy(BaseEstimator):
    def __init__(self, alpha=1.0, beta="x"):
        self.alpha = alpha
        self.beta = beta


def test_base_estimator_params_and_repr():
    est = _Toy(alpha=2.0)
    assert est.get_params() == {"alpha": 2.0, "beta": "x"}
    assert repr(est) == "_Toy(alpha=2.0)"
    assert est.set_params(beta="y") is est and est.beta == "y"
    with pytest.raises(ValueError, match="Invalid parameter 'gamma'"):
        est.set_params(gamma=1)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        check_is_fitted(est)
    est.coef_ = 1
    check_is_fitted(est)


def test_blas_thread_limits_apply_and_restore():
    from threadpoolctl import threadpool_info

    from metriclust._core.threads import blas_threads, single_blas_thread

    def blas_counts():
        return [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]

    with single_blas_thread():  # the first use loads scipy's BLAS too
        pass
    before = blas_counts()
    assert before
    with single_blas_thread():
        assert set(blas_counts()) == {1}
    with blas_threads(2):
        assert set(blas_counts()) == {2}
    assert blas_counts() == before
