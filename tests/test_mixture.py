"""GaussianMixture (metriclust.mixture, csrc/mixture.c).

Checked against slow numpy references of the E-step and the M-step kept here,
and against scikit-learn's GaussianMixture from the same initial parameters
(same EM -> same log-likelihood to 1e-8); plus EM's monotonicity, the
k-means start through the shared core, thread invariance, scale invariance
and the covariance floor.
"""

import warnings

import numpy as np
import pytest

from metriclust import GaussianMixture
from metriclust._core.kmeans import kmeans
from metriclust._kernels import _mixture


def _data(seed=0, n=(300, 200, 100), d=3, offset=0.0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    X = np.r_[rng.normal(size=(n[0], d)) @ A, rng.normal(size=(n[1], d)) + 4,
              rng.normal(size=(n[2], d)) * 0.5 - 3]
    return X + offset


# --------------------------------------------------------------------------
# slow references
# --------------------------------------------------------------------------
def ref_log_gauss(X, mean, cov):
    d = X.shape[1]
    diff = X - mean
    sol = np.linalg.solve(cov, diff.T).T
    _, logdet = np.linalg.slogdet(cov)
    return -0.5 * (d * np.log(2 * np.pi) + logdet + (diff * sol).sum(axis=1))


def ref_estep(X, weights, means, covs):
    """Posteriors p_l^(i) and log f(x_i), the notes' E-step, one component at a time."""
    logp = np.column_stack([np.log(w) + ref_log_gauss(X, m, c)
                            for w, m, c in zip(weights, means, covs)])
    mx = logp.max(axis=1, keepdims=True)
    ll = (mx + np.log(np.exp(logp - mx).sum(axis=1, keepdims=True)))[:, 0]
    return np.exp(logp - ll[:, None]), ll


def ref_mstep(X, resp):
    """The notes' M-step: pi, mu, Sigma from the posteriors (full covariances)."""
    nk = resp.sum(axis=0)
    means = (resp.T @ X) / nk[:, None]
    covs = np.array([(resp[:, k, None] * (X - means[k])).T @ (X - means[k]) / nk[k]
                     for k in range(resp.shape[1])])
    return nk / nk.sum(), means, covs


def _factor(cov):
    L = np.linalg.cholesky(cov)
    U = np.triu(np.swapaxes(np.linalg.inv(L), 1, 2))
    return np.ascontiguousarray(U), -np.log(np.diagonal(L, axis1=1, axis2=2)).sum(1)


@pytest.mark.parametrize("kind", ["full", "diag"])
def test_estep_matches_reference(kind):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 4))
    K = 3
    means = rng.normal(size=(K, 4))
    if kind == "full":
        B = rng.normal(size=(K, 4, 4))
        covs = B @ np.swapaxes(B, 1, 2) + np.eye(4)
        prec, logdet = _factor(covs)
    else:
        var = rng.uniform(0.5, 2.0, size=(K, 4))
        covs = np.array([np.diag(v) for v in var])
        prec, logdet = 1.0 / np.sqrt(var), -0.5 * np.log(var).sum(1)
    weights = np.array([0.2, 0.5, 0.3])
    log_norm = np.log(weights) + logdet - 0.5 * 4 * np.log(2 * np.pi)
    resp, sll, total = _mixture.estep(X, means, prec, log_norm, True, True, 1)
    ref_resp, ref_ll = ref_estep(X, weights, means, covs)
    np.testing.assert_allclose(resp, ref_resp, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(sll, ref_ll, rtol=1e-11)
    assert total == pytest.approx(ref_ll.sum(), rel=1e-12)


def test_mstep_matches_reference():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(700, 3))
    resp = rng.uniform(size=(700, 4))
    resp /= resp.sum(1, keepdims=True)
    nk, means, covs = _mixture.mstep(X, resp, True, 1)
    w_ref, m_ref, c_ref = ref_mstep(X, resp)
    np.testing.assert_allclose(nk / nk.sum(), w_ref, rtol=1e-12)
    np.testing.assert_allclose(means, m_ref, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(covs, c_ref, rtol=1e-11, atol=1e-14)
    _, _, var = _mixture.mstep(X, resp, False, 1)
    np.testing.assert_allclose(var, np.diagonal(c_ref, axis1=1, axis2=2), rtol=1e-11)


def test_kernels_thread_invariant():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60_000, 5))
    resp = rng.uniform(size=(60_000, 4))
    resp /= resp.sum(1, keepdims=True)
    a = _mixture.mstep(X, resp, True, 1)
    b = _mixture.mstep(X, resp, True, 2)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)
    prec, logdet = _factor(a[2])
    ln = np.log(a[0] / a[0].sum()) + logdet
    e1 = _mixture.estep(X, a[1], prec, ln, True, True, 1)
    e2 = _mixture.estep(X, a[1], prec, ln, True, True, 2)
    assert np.array_equal(e1[0], e2[0]) and e1[2] == e2[2]


def test_bridge_checks_shapes():
    X = np.ones((5, 2))
    with pytest.raises(ValueError, match="precision"):
        _mixture.estep(X, np.zeros((2, 2)), np.ones((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="features"):
        _mixture.estep(X, np.zeros((2, 3)), np.ones((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="log_norm"):
        _mixture.estep(X, np.zeros((2, 2)), np.ones((2, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="rows"):
        _mixture.mstep(X, np.ones((4, 2)), True)


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------
def _sk_fit(X, ct, init, max_iter, tol):
    from sklearn.mixture import GaussianMixture as SKGM

    var = float(np.mean(np.var(X, axis=0)))
    sk = SKGM(init.n_components, covariance_type=ct, weights_init=init.weights_,
              means_init=init.means_, precisions_init=init.precisions_, max_iter=max_iter,
              tol=tol, reg_covar=1e-6 * var)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sk.fit(X)


@pytest.mark.filterwarnings("ignore:EM did not converge")
@pytest.mark.parametrize("ct", ["full", "diag", "spherical"])
def test_same_as_sklearn_from_same_init(ct):
    """Same initial parameters -> scikit-learn's EM gives the same model and
    log-likelihood (to 1e-8), iteration for iteration; X is offset by 100 so
    that the centring matters."""
    pytest.importorskip("sklearn")
    X = _data(offset=100.0)
    init = GaussianMixture(3, covariance_type=ct, random_state=0, max_iter=2, tol=0).fit(X)
    mine = GaussianMixture(3, covariance_type=ct, weights_init=init.weights_,
                           means_init=init.means_, precisions_init=init.precisions_,
                           max_iter=25, tol=0).fit(X)
    sk = _sk_fit(X, ct, init, 25, 0)
    assert mine.n_iter_ == sk.n_iter_ == 25
    assert mine.score(X) == pytest.approx(sk.score(X), abs=1e-8)
    assert mine.lower_bound_ == pytest.approx(sk.lower_bound_, abs=1e-8)
    np.testing.assert_allclose(mine.score_samples(X), sk.score_samples(X), atol=1e-8)
    np.testing.assert_allclose(mine.means_, sk.means_, atol=1e-8)
    np.testing.assert_allclose(mine.covariances_, sk.covariances_, atol=1e-8)
    np.testing.assert_allclose(mine.weights_, sk.weights_, atol=1e-10)
    np.testing.assert_allclose(mine.predict_proba(X), sk.predict_proba(X), atol=1e-8)
    # the same stopping rule with the default tol
    mine = GaussianMixture(3, covariance_type=ct, weights_init=init.weights_,
                           means_init=init.means_, precisions_init=init.precisions_).fit(X)
    sk = _sk_fit(X, ct, init, 100, 1e-3)
    assert mine.n_iter_ == sk.n_iter_ and mine.converged_ == sk.converged_
    assert mine.lower_bound_ == pytest.approx(sk.lower_bound_, abs=1e-8)


@pytest.mark.filterwarnings("ignore:EM did not converge")
def test_kmeans_start_is_the_mstep_of_the_core_labels():
    """init_params='kmeans': the first E-step uses the M-step of the one-hot labels of
    the shared k-means core (on the standardised data, same generator)."""
    X = _data()
    gm = GaussianMixture(3, max_iter=1, tol=0, random_state=7).fit(X)
    Xs = (X - X.mean(0))
    Xs = Xs / np.sqrt(np.mean(np.var(Xs, axis=0)))
    labels = kmeans(Xs, 3, random_state=np.random.default_rng(7), n_init=1).labels
    resp = np.eye(3)[labels]
    w, m, c = ref_mstep(X, resp)
    c = c + 1e-6 * np.mean(np.var(X, axis=0)) * np.eye(X.shape[1])
    _, ll = ref_estep(X, w, m, c)
    assert gm.lower_bounds_[0] == pytest.approx(ll.mean(), rel=1e-10)


@pytest.mark.parametrize("ct", ["full", "diag", "spherical"])
def test_em_is_monotone_and_consistent(ct):
    X = _data(5)
    gm = GaussianMixture(3, covariance_type=ct, tol=1e-10, max_iter=200, random_state=0,
                         n_init=2).fit(X)
    lb = np.array(gm.lower_bounds_)
    assert np.all(np.diff(lb) >= -1e-10 * np.abs(lb[1:]))
    assert gm.converged_
    P = gm.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    assert np.array_equal(gm.predict(X), gm.labels_)
    assert gm.score(X) == pytest.approx(gm.score_samples(X).mean())
    assert gm.score(X) >= gm.lower_bound_ - 1e-9  # one more M-step cannot lower it
    assert gm.bic(X) > gm.aic(X) or X.shape[0] < 8
    # precisions and covariances are inverse to each other
    if ct == "full":
        np.testing.assert_allclose(gm.precisions_ @ gm.covariances_,
                                   np.broadcast_to(np.eye(3), (3, 3, 3)), atol=1e-9)
    else:
        np.testing.assert_allclose(gm.precisions_ * gm.covariances_, 1.0, rtol=1e-12)


def test_recovers_separated_components():
    X = _data(9)
    gm = GaussianMixture(3, random_state=0).fit(X)
    truth = np.repeat([0, 1, 2], [300, 200, 100])
    from metriclust.metrics import adjusted_rand_index

    assert adjusted_rand_index(truth, gm.labels_) > 0.95
    assert sorted(np.round(gm.weights_, 1)) == [0.2, 0.3, 0.5]


def test_scale_and_shift_invariance():
    X = _data(4)
    a = GaussianMixture(3, random_state=0).fit(X)
    b = GaussianMixture(3, random_state=0).fit(X * 1e5 + 1e7)
    assert np.array_equal(a.labels_, b.labels_)
    assert b.score(X * 1e5 + 1e7) == pytest.approx(a.score(X) - 3 * np.log(1e5), abs=1e-6)


def test_covariance_floor():
    """A constant feature: the floor keeps the component's variance at
    reg_covar x mean feature variance, and the likelihood finite."""
    X = _data(2)
    X[:, 1] = 3.0
    gm = GaussianMixture(2, covariance_type="diag", reg_covar=1e-3, random_state=0).fit(X)
    floor = 1e-3 * np.mean(np.var(X, axis=0))
    np.testing.assert_allclose(gm.covariances_[:, 1], floor, rtol=1e-9)
    assert np.isfinite(gm.score(X))


@pytest.mark.parametrize("param,value", [
    ("n_components", 0), ("n_components", 10**6), ("covariance_type", "tied"),
    ("tol", -1.0), ("reg_covar", -1e-6), ("reg_covar", float("nan")), ("max_iter", 0),
    ("n_init", 0), ("init_params", "k-means++"), ("weights_init", [0.5, 0.6]),
    ("means_init", np.zeros((3, 2))), ("precisions_init", np.ones(3)),
    ("random_state", "x")])
def test_bad_parameters(param, value):
    with pytest.raises((ValueError, TypeError), match=param):
        GaussianMixture(2, **{param: value}).fit(_data())


def test_not_fitted_and_wrong_features():
    from metriclust import NotFittedError

    with pytest.raises(NotFittedError):
        GaussianMixture(2).predict(np.ones((3, 3)))
    gm = GaussianMixture(2, random_state=0).fit(_data())
    with pytest.raises(ValueError, match="features"):
        gm.predict(np.ones((3, 4)))


def test_warns_when_not_converged():
    with pytest.warns(UserWarning, match="max_iter=2"):
        gm = GaussianMixture(3, max_iter=2, tol=0, random_state=0).fit(_data())
    assert not gm.converged_ and gm.n_iter_ == 2 and len(gm.lower_bounds_) == 2


def test_fit_is_thread_count_independent():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(8)
    X = np.r_[rng.normal(size=(30_000, 3)), rng.normal(size=(30_000, 3)) + 3]
    fits = []
    for nt in (1, 2):
        with threadpoolctl.threadpool_limits(limits=nt, user_api="openmp"):
            fits.append(GaussianMixture(4, random_state=0, max_iter=20).fit(X))
    assert np.array_equal(fits[0].means_, fits[1].means_)
    assert fits[0].lower_bounds_ == fits[1].lower_bounds_


def test_random_start_and_best_of_n_init():
    X = _data(9)
    runs = [GaussianMixture(3, init_params="random", random_state=s, max_iter=300).fit(X)
            for s in range(3)]
    best = GaussianMixture(3, init_params="random", random_state=0, n_init=3,
                           max_iter=300).fit(X)
    # the kept run is the best of its restarts, at least as good as a single restart
    assert best.lower_bound_ >= runs[0].lower_bound_ - 1e-12
    assert max(r.lower_bound_ for r in runs) >= GaussianMixture(3, random_state=0).fit(
        X).lower_bound_ - 0.05


def test_max_iter_warnings_are_convergence_warnings_for_sklearn_users():
    # GaussianMixture and MMC warn with the shared ConvergenceWarning, which is also
    # scikit-learn's class once scikit-learn is loaded (as KMeans' warning is).
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    from metriclust import MMC
    from metriclust._core.base import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 4.0]
    with pytest.warns(SkConvergenceWarning) as record:
        GaussianMixture(2, max_iter=1, tol=0.0, random_state=0).fit(X)
    assert any(isinstance(w.message, ConvergenceWarning) for w in record)
    y = np.repeat([0, 1], 100)
    with pytest.warns(SkConvergenceWarning):
        MMC(max_iter=1, tol=1e-300).fit(X, y)
