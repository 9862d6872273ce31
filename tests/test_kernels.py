"""Tests of metriclust.kernels against slow, obviously-correct numpy references."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from metriclust import kernels
from metriclust._kernels import _gram
from metriclust.kernels import (Nystrom, gaussian_gram, gram_matmat, median_pairwise_distance,
                                nystrom_factor, top_eigenpairs)


def brute_gram(X, Y, sigma):
    """Direct differences in float64, one pair at a time in numpy: no GEMM form."""
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    D2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return np.exp(-D2 / (2.0 * sigma**2))


def data(n, p, seed=0, loc=0.0, scale=1.0):
    return loc + scale * np.random.default_rng(seed).normal(size=(n, p))


# ---------------------------------------------------------------- the exp
def test_expneg_matches_libm_float64():
    x = -np.concatenate([np.linspace(0, 1, 10001), np.linspace(0, 700, 100001),
                         np.random.default_rng(1).exponential(20, 100000)])
    got, ref = _gram.expneg(x), np.exp(x)
    assert np.max(np.abs(got - ref) / ref) < 1e-15
    assert _gram.expneg(np.array([0.0, -0.0]))[0] == 1.0


def test_expneg_subnormal_and_underflow():
    x = -np.linspace(700, 760, 6001)
    got, ref = _gram.expneg(x), np.exp(x)
    # relative accuracy down to the smallest normal, 1 ulp of subnormal below it
    normal = ref >= np.finfo(np.float64).tiny
    assert np.max(np.abs(got[normal] - ref[normal]) / ref[normal]) < 1e-15
    assert np.max(np.abs(got[~normal] - ref[~normal])) <= 5e-324
    assert np.all(_gram.expneg(np.array([-746.0, -1e5, -np.inf])) == 0.0)


def test_expneg_float32():
    x = -np.random.default_rng(2).exponential(10, 100000).astype(np.float32)
    got, ref = _gram.expneg(x), np.exp(x.astype(np.float64))
    ok = ref >= np.finfo(np.float32).tiny
    assert got.dtype == np.float32
    assert np.max(np.abs(got[ok] - ref[ok]) / ref[ok]) < 3e-7
    assert _gram.expneg(np.zeros(3, np.float32))[0] == 1.0


# ---------------------------------------------------------------- gaussian_gram
@pytest.mark.parametrize("p", [1, 2, 10, 16, 17, 40, 130])
@pytest.mark.parametrize("n", [1, 7, 128, 300])
def test_symmetric_matches_brute_force(n, p):
    X = data(n, p, seed=n + p, loc=3.0)  # off-center: exercises the centering
    sigma = 0.7 * np.sqrt(p)
    G = gaussian_gram(X, sigma=sigma)
    assert G.shape == (n, n) and G.dtype == np.float64
    np.testing.assert_allclose(G, brute_gram(X, None, sigma), rtol=0, atol=1e-12)
    assert np.array_equal(G, G.T)
    assert np.all(np.diag(G) == 1.0)


@pytest.mark.parametrize("p", [3, 16, 50])
def test_cross_matches_brute_force(p):
    X, Y = data(257, p, 1, loc=-2.0), data(130, p, 2, loc=-1.0, scale=2.0)
    sigma = 1.3 * np.sqrt(p)
    G = gaussian_gram(X, Y, sigma=sigma)
    assert G.shape == (257, 130)
    np.testing.assert_allclose(G, brute_gram(X, Y, sigma), rtol=0, atol=1e-12)
    np.testing.assert_allclose(gaussian_gram(Y, X, sigma=sigma), G.T, rtol=0, atol=1e-15)


def test_cross_with_self_equals_symmetric_path():
    X = data(200, 30, 3)
    np.testing.assert_allclose(gaussian_gram(X, X, sigma=4.0), gaussian_gram(X, sigma=4.0),
                               rtol=0, atol=1e-14)


def test_centering_limits_cancellation():
    # Far from the origin the naive GEMM form loses everything; centered, the
    # result stays at the brute-force reference.
    X = data(150, 40, 4, loc=1e4)
    np.testing.assert_allclose(gaussian_gram(X, sigma=5.0), brute_gram(X, None, 5.0),
                               rtol=0, atol=1e-10)


def test_direct_and_gemm_paths_agree():
    X = data(140, 12, 5)
    direct = _gram.gaussian_gram(X, None, 2.0, 1, False)
    # 12 features would take the direct path anyway: pad with zero columns
    # to force the GEMM path on the same distances.
    gemm = gaussian_gram(np.hstack([X, np.zeros((140, 20))]), sigma=2.0)
    np.testing.assert_allclose(direct, gemm, rtol=0, atol=1e-13)


def test_duplicates_and_far_points():
    X = np.vstack([np.ones((5, 20)), 100 * np.ones((1, 20))])
    G = gaussian_gram(X, sigma=1.0)
    assert np.all(G[:5, :5] == 1.0)  # clamped squared distances give exactly 1
    assert np.all(G[5, :5] == 0.0) and np.all(np.isfinite(G))


@pytest.mark.parametrize("p", [4, 60])
def test_float32(p):
    X = data(200, p, 6).astype(np.float32)
    Y = data(90, p, 7).astype(np.float32)
    sigma = np.sqrt(p)
    G = gaussian_gram(X, sigma=sigma)
    assert G.dtype == np.float32
    np.testing.assert_allclose(G, brute_gram(X, None, sigma), rtol=0, atol=2e-6)
    Gc = gaussian_gram(X, Y, sigma=sigma)
    assert Gc.dtype == np.float32
    np.testing.assert_allclose(Gc, brute_gram(X, Y, sigma), rtol=0, atol=2e-6)
    # mixed dtypes fall back to float64
    assert gaussian_gram(X, Y.astype(np.float64), sigma=sigma).dtype == np.float64


@pytest.mark.parametrize("p", [5, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_thread_count_bitwise(p, dtype):
    X, Y = data(333, p, 8).astype(dtype), data(200, p, 9).astype(dtype)
    for args in [(X, None), (X, Y)]:
        g1 = gaussian_gram(*args, sigma=3.0, n_threads=1)
        g2 = gaussian_gram(*args, sigma=3.0, n_threads=2)
        assert np.array_equal(g1, g2)
        with threadpool_limits(1, "openmp"):
            assert np.array_equal(gaussian_gram(*args, sigma=3.0), g1)


def test_extreme_sigma():
    X = data(40, 3, 10)
    assert np.all(gaussian_gram(X, sigma=1e300) == 1.0)
    G = gaussian_gram(X, sigma=1e-200)  # 1/(2 sigma^2) overflows: no NaN
    assert np.array_equal(G, np.eye(40))


@pytest.mark.parametrize("sigma", [0, -1.0, np.inf, np.nan])
def test_bad_sigma_value(sigma):
    with pytest.raises(ValueError, match="sigma"):
        gaussian_gram(np.ones((3, 2)), sigma=sigma)


@pytest.mark.parametrize("sigma", ["1", None, True, [1.0]])
def test_bad_sigma_type(sigma):
    with pytest.raises(TypeError, match="sigma"):
        gaussian_gram(np.ones((3, 2)), sigma=sigma)


def test_bad_shapes_and_values():
    with pytest.raises(ValueError, match="features"):
        gaussian_gram(np.ones((3, 2)), np.ones((3, 3)), sigma=1.0)
    with pytest.raises(ValueError, match="X"):
        gaussian_gram(np.array([[1.0, np.nan]]), sigma=1.0)
    with pytest.raises(ValueError, match="Y"):
        gaussian_gram(np.ones((2, 2)), np.array([[1.0, np.inf]]), sigma=1.0)
    with pytest.raises(ValueError):
        gaussian_gram(np.ones(3), sigma=1.0)


def test_accepts_lists_ints_and_noncontiguous():
    X = np.arange(24, dtype=np.int64).reshape(6, 4)
    ref = brute_gram(X, None, 5.0)
    np.testing.assert_allclose(gaussian_gram(X.tolist(), sigma=5), ref, atol=1e-15)
    Xf = np.asfortranarray(X[:, ::2].astype(float))
    np.testing.assert_allclose(gaussian_gram(Xf, sigma=5.0), brute_gram(Xf, None, 5.0),
                               atol=1e-15)
