"""Tests of metriclust.kernels against slow, obviously-correct numpy references."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from metriclust import kernels
from metriclust._kernels import _gram
from metriclust.kernels import (Nystrom, gaussian_gram, gram_matmat, median_pairwise_distance,
                                nystrom_factor, top_eigenpairs)
from _reference import gaussian_gram as brute_gram
from _reference import sq_distances


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # The numpy references (eigh, matmul) crawl when OpenBLAS threads contend
    # for the cores of a loaded machine; the kernels under test set their own
    # thread counts (n_threads, OpenMP) and are unaffected.
    with threadpool_limits(1, "blas"):
        yield


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
@pytest.mark.parametrize("p", [1, 2, 8, 9, 16, 40, 130])
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
    X = data(140, 5, 5)
    direct = _gram.gaussian_gram(X, None, 2.0, 1, False)
    # 5 features would take the direct path: pad with zero columns to force
    # the GEMM path on the same distances.
    assert _gram.DIRECT_MAX_D < 32
    gemm = gaussian_gram(np.hstack([X, np.zeros((140, 27))]), sigma=2.0)
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


# ---------------------------------------------------------------- gram_matmat
@pytest.mark.parametrize("p", [3, 40])
def test_gram_matmat_matches_dense(p):
    X, Y = data(300, p, 11), data(150, p, 12)
    sigma = np.sqrt(p)
    V = data(300, 7, 13)
    np.testing.assert_allclose(gram_matmat(X, V, sigma=sigma), brute_gram(X, None, sigma) @ V,
                               rtol=0, atol=1e-11)
    W = data(150, 3, 14)
    np.testing.assert_allclose(gram_matmat(X, W, sigma=sigma, Y=Y),
                               brute_gram(X, Y, sigma) @ W, rtol=0, atol=1e-11)
    v = V[:, 0]
    out = gram_matmat(X, v, sigma=sigma)
    assert out.shape == (300,)
    np.testing.assert_allclose(out, brute_gram(X, None, sigma) @ v, rtol=0, atol=1e-11)


def test_gram_matmat_threads_and_float32():
    X, V = data(400, 20, 15), data(400, 5, 16)
    a = gram_matmat(X, V, sigma=4.0, n_threads=1)
    assert np.array_equal(a, gram_matmat(X, V, sigma=4.0, n_threads=2))
    Xf, Vf = X.astype(np.float32), V.astype(np.float32)
    b = gram_matmat(Xf, Vf, sigma=4.0)
    assert b.dtype == np.float32
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-4 * np.abs(a).max())
    assert gram_matmat(Xf, V, sigma=4.0).dtype == np.float64


def test_gram_matmat_bad_input():
    X = data(10, 2, 17)
    with pytest.raises(ValueError, match="V"):
        gram_matmat(X, np.ones((9, 2)), sigma=1.0)
    with pytest.raises(ValueError, match="sigma"):
        gram_matmat(X, np.ones(10), sigma=-1.0)
    with pytest.raises(ValueError, match="V"):
        gram_matmat(X, np.full(10, np.nan), sigma=1.0)
    assert gram_matmat(X, np.ones((10, 0)), sigma=1.0).shape == (10, 0)


# ---------------------------------------------------------------- median distance
def test_median_pairwise_distance_exact():
    X = data(101, 3, 18)
    D = np.sqrt(sq_distances(X))
    ref = np.median(D[np.triu_indices(101, 1)])
    assert median_pairwise_distance(X) == pytest.approx(ref, rel=1e-14)
    # scale equivariance and translation invariance
    assert median_pairwise_distance(3 * X + 7) == pytest.approx(3 * ref, rel=1e-13)


def test_median_pairwise_distance_sampled():
    X = data(5000, 2, 19)
    a = median_pairwise_distance(X, max_samples=500, random_state=0)
    assert a == median_pairwise_distance(X, max_samples=500, random_state=0)
    # for 2-D standard normals the distance is sqrt(2) * Rayleigh: median sqrt(4 ln 2)
    assert a == pytest.approx(np.sqrt(4 * np.log(2)), rel=0.05)
    with pytest.raises(ValueError, match="max_samples"):
        median_pairwise_distance(X, max_samples=1)
    with pytest.raises(ValueError):
        median_pairwise_distance(X[:1])


# ---------------------------------------------------------------- Nystrom
def test_nystrom_full_rank_reproduces_gram():
    X = data(300, 3, 20)
    G = brute_gram(X, None, 1.0)
    for landmarks in ["random", X[::-1]]:
        ny = Nystrom(300, sigma=1.0, landmarks=landmarks, random_state=0).fit(X)
        U = ny.factor_
        assert U.shape[0] == 300 and ny.n_components_ == U.shape[1]
        assert np.abs(U @ U.T - G).max() < 1e-8


def test_nystrom_rank_deficient_kmm():
    # 300 copies of 30 points: K_mm has rank 30; the eigenvalue cut keeps 30
    # directions and the factor is still exact.
    base = data(30, 2, 21)
    X = np.repeat(base, 10, axis=0)
    ny = Nystrom(300, sigma=1.0, random_state=0).fit(X)
    assert ny.n_components_ == 30
    assert np.abs(ny.factor_ @ ny.factor_.T - brute_gram(X, None, 1.0)).max() < 1e-8
    assert np.all(np.isfinite(ny.factor_))


@pytest.mark.parametrize("landmarks", ["random", "kmeans"])
def test_nystrom_error_decreases_with_m(landmarks):
    # relative Frobenius error ||U U^T - G|| / ||G|| (measured: random 0.35, 0.11,
    # 0.017; kmeans 0.23, 0.065, 0.0027 at m = 10, 40, 160 on this data)
    X = data(400, 4, 22)
    sigma = median_pairwise_distance(X) / 2
    G = brute_gram(X, None, sigma)
    errs = []
    for m in [10, 40, 160]:
        U = Nystrom(m, sigma=sigma, landmarks=landmarks, random_state=1).fit(X).factor_
        errs.append(np.linalg.norm(U @ U.T - G) / np.linalg.norm(G))
    assert all(a > 2 * b for a, b in zip(errs, errs[1:])), errs
    assert errs[0] > 0.1 and errs[-1] < 0.03


def test_nystrom_kmeans_beats_random_at_small_m():
    X = np.vstack([data(200, 2, 23) * 0.3 + c for c in ([0, 0], [4, 0], [0, 4])])
    G = brute_gram(X, None, 0.8)
    err = {}
    for lm in ["random", "kmeans"]:
        U = Nystrom(12, sigma=0.8, landmarks=lm, random_state=0).fit(X).factor_
        err[lm] = np.linalg.norm(U @ U.T - G)
    assert err["kmeans"] < err["random"]


def test_nystrom_transform_out_of_sample():
    X, Y = data(250, 3, 24), data(60, 3, 25)
    ny = Nystrom(250, sigma=1.5, random_state=0).fit(X)
    np.testing.assert_allclose(ny.transform(X), ny.factor_, rtol=0, atol=1e-12)
    # cross Gram through the same factor
    assert np.abs(ny.transform(Y) @ ny.factor_.T - brute_gram(Y, X, 1.5)).max() < 1e-8
    with pytest.raises(ValueError, match="features"):
        ny.transform(np.ones((2, 4)))


def test_nystrom_validation_and_determinism():
    X = data(100, 2, 26)
    a = nystrom_factor(X, 20, sigma=1.0, random_state=3)
    assert np.array_equal(a, nystrom_factor(X, 20, sigma=1.0, random_state=3))
    assert a.shape == (100, 20)
    assert Nystrom(500, sigma=1.0).fit(X).landmarks_.shape == (100, 2)
    with pytest.raises(ValueError, match="landmarks"):
        Nystrom(5, sigma=1.0, landmarks="grid").fit(X)
    with pytest.raises(ValueError, match="n_components"):
        Nystrom(0, sigma=1.0).fit(X)
    with pytest.raises(ValueError, match="sigma"):
        Nystrom(5, sigma=0.0).fit(X)
    with pytest.raises(Exception, match="fit"):
        Nystrom(5, sigma=1.0).transform(X)
    assert "n_components=5" in repr(Nystrom(5, sigma=1.0))


# ---------------------------------------------------------------- top eigenpairs
def _check_eigenpairs(vals, vecs, G, m):
    ref_vals, ref_vecs = np.linalg.eigh(G)
    ref_vals, ref_vecs = ref_vals[::-1][:m], ref_vecs[:, ::-1][:, :m]
    np.testing.assert_allclose(vals, ref_vals, rtol=0, atol=1e-8)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(m), atol=1e-10)
    # eigenvectors up to sign
    assert np.abs(np.abs(np.sum(vecs * ref_vecs, 0)) - 1).max() < 1e-8
    np.testing.assert_allclose(G @ vecs, vecs * vals, rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", ["dense", "subspace", "lanczos"])
def test_top_eigenpairs_match_dense_eigh(method):
    X = data(500, 3, 27)
    sigma = median_pairwise_distance(X) / 2
    vals, vecs = top_eigenpairs(X, 10, sigma=sigma, method=method, random_state=0)
    _check_eigenpairs(vals, vecs, brute_gram(X, None, sigma), 10)


def test_top_eigenpairs_auto_large_n_path_is_deterministic():
    X = data(400, 2, 28)
    a = top_eigenpairs(X, 4, sigma=1.0, random_state=5, dense_max_samples=100)
    b = top_eigenpairs(X, 4, sigma=1.0, random_state=5, dense_max_samples=100)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    _check_eigenpairs(*a, brute_gram(X, None, 1.0), 4)


def test_top_eigenpairs_validation():
    X = data(20, 2, 29)
    with pytest.raises(ValueError, match="n_components"):
        top_eigenpairs(X, 21, sigma=1.0)
    with pytest.raises(ValueError, match="method"):
        top_eigenpairs(X, 2, sigma=1.0, method="qr")
    with pytest.raises(ValueError, match="sigma"):
        top_eigenpairs(X, 2, sigma=np.nan)
    vals, vecs = top_eigenpairs(X, 20, sigma=1.0)
    assert vals.shape == (20,) and np.all(np.diff(vals) <= 0)


def test_subspace_iteration_warns_when_not_converged():
    X = data(200, 2, 30)
    with pytest.warns(RuntimeWarning, match="did not reach"):
        kernels.top_eigenpairs(X, 5, sigma=0.05, method="subspace", max_iter=2,
                               random_state=0)


def test_out_buffer():
    X, Y = data(150, 30, 31), data(40, 30, 32)
    buf = np.full((150, 40), np.nan)
    G = gaussian_gram(X, Y, sigma=5.0, out=buf)
    assert G is buf
    np.testing.assert_allclose(buf, brute_gram(X, Y, 5.0), rtol=0, atol=1e-12)
    for bad in [np.empty((150, 41)), np.empty((150, 40), np.float32),
                np.empty((40, 150)).T, [[0.0] * 40] * 150]:
        with pytest.raises(ValueError, match="out"):
            gaussian_gram(X, Y, sigma=5.0, out=bad)


def test_nystrom_sklearn_estimator_checks():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(Nystrom(n_components=5, random_state=0))


def test_nystrom_default_sigma_is_median_distance():
    X = data(120, 3, 33)
    ny = Nystrom(10, random_state=0).fit(X)
    assert ny.sigma_ == median_pairwise_distance(X)
    # scale-free: scaling X scales sigma_ and leaves the factor unchanged
    ny2 = Nystrom(10, random_state=0).fit(5 * X)
    assert ny2.sigma_ == pytest.approx(5 * ny.sigma_, rel=1e-13)
    np.testing.assert_allclose(ny2.factor_, ny.factor_, atol=1e-8)
    assert Nystrom(3).fit(np.ones((4, 2))).sigma_ == 1.0


@pytest.mark.filterwarnings("ignore")
def test_gram_property_random_shapes():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(nx=st.integers(1, 300), ny=st.integers(0, 260), p=st.integers(1, 40),
           log_sigma=st.floats(-1.0, 1.5), seed=st.integers(0, 2**16),
           sym=st.booleans(), f32=st.booleans())
    def check(nx, ny, p, log_sigma, seed, sym, f32):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(nx, p)) * rng.uniform(0.1, 3.0)
        Y = None if sym or ny == 0 else rng.normal(size=(ny, p))
        sigma = 10.0**log_sigma * np.sqrt(p)
        if f32:
            X = X.astype(np.float32)
            Y = None if Y is None else Y.astype(np.float32)
        G = gaussian_gram(X, Y, sigma=sigma)
        ref = brute_gram(X, Y, sigma)
        assert G.shape == ref.shape
        assert np.abs(G - ref).max(initial=0.0) <= (3e-6 if f32 else 1e-12)
        V = rng.normal(size=(G.shape[1], 3)).astype(G.dtype)
        GV = gram_matmat(X, V, sigma=sigma, Y=Y)
        tol = 1e-4 if f32 else 1e-11
        assert np.abs(GV - ref @ V).max(initial=0.0) <= tol * max(1.0, G.shape[1])

    check()


@pytest.mark.parametrize("module", ["metriclust.kernels", "metriclust._core.gram"])
def test_docstring_examples(module):
    """The public face and the machinery behind it show examples that run."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_check_status_maps_every_code_and_rejects_unknown():
    # The one status-to-exception mapping every bridge calls (issue #13).
    from metriclust._kernels import _status
    assert _status.raise_for_status(_status.OK) is None
    for code, exc in [(_status.ERR_ALLOC, MemoryError), (_status.ERR_ARG, ValueError),
                      (_status.ERR_NUMERIC, FloatingPointError),
                      (_status.ERR_INTERRUPTED, KeyboardInterrupt)]:
        with pytest.raises(exc):
            _status.raise_for_status(code, "where")
    for unknown in (-5, 1, 7, -2**31):
        with pytest.raises(RuntimeError, match=f"where: unknown status {unknown}"):
            _status.raise_for_status(unknown, "where")
