"""Wide data (p > N): the N-dimensional paths agree with the p-dimensional ones.

Data here are moderately wide (p = 2N or so), where the old p x p paths are
still fast enough to serve as references.
"""

import warnings

import numpy as np
import pytest
import scipy.linalg

from metriclust import CPCM, CPDUML, MMC
from metriclust import cpduml as cpduml_module
from metriclust._core import starts
from metriclust._core import predictors as P
from metriclust._core.kmeans import kmeans
from metriclust.metrics import adjusted_rand_index


def wide_data(n=48, p=96, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) * k // n
    X = rng.standard_normal((n, p)) + 1.5 * rng.standard_normal((k, p))[y]
    return X, y


def sweep_stepwise(X, criterion):
    """The p x p sweep path, forced (the path used when p <= N)."""
    model = P.Stepwise(X, criterion=criterion)
    model.wide, model.Cxx, model.X64 = False, model.R.T @ model.R, None
    return model


def test_thin_r_of_wide_data_is_not_padded():
    X, _ = wide_data()
    R = P.thin_r(X, X.mean(0))
    Xc = X - X.mean(0)
    assert R.shape == (48, 96)
    np.testing.assert_allclose(R.T @ R, Xc.T @ Xc, atol=1e-9)
    model = P.Linear(X)
    assert model.rank == 47                       # N - 1: the centred data's rank
    Q = model.whitened()
    np.testing.assert_allclose(Q.T @ Q, np.eye(47), atol=1e-9)


@pytest.mark.parametrize("criterion", ["ric", "bic", "aic"])
@pytest.mark.parametrize("shape", [(48, 96), (40, 200)])
def test_wide_stepwise_selects_what_the_sweep_selects(criterion, shape):
    X, _ = wide_data(*shape, seed=shape[1])
    rng = np.random.default_rng(1)
    labels = (X[:, 4] + 0.6 * X[:, 7] + 0.3 * rng.standard_normal(len(X)) > 0).astype(np.int64)
    labels[X[:, 1] > 1.0] = 2
    wide = P.Stepwise(X, criterion=criterion)
    assert wide.wide and wide.Cxx is None
    a, b = wide.fit(labels, 3), sweep_stepwise(X, criterion).fit(labels, 3)
    sa, sb = a.extra["selected"], b.extra["selected"]
    Z = np.eye(3)[labels]
    if len(sa) != len(sb) and min(np.abs(a.Zhat - Z).max(), np.abs(b.Zhat - Z).max()) < 1e-5:
        # Near the rank limit (37 of 39 features at 40 x 200 with BIC/AIC) the fit is
        # already exact to 1e-6 and the next feature's RSS gain is at rounding level:
        # Gram-Schmidt and the sweep (two exact-arithmetic-equal paths) may stop one
        # feature apart. Then the shorter selection must lie within the longer one
        # and both predictions exact.
        short, long_ = sorted((list(sa), list(sb)), key=len)
        assert len(long_) - len(short) == 1 and set(short) <= set(long_)
        np.testing.assert_allclose(a.Zhat, b.Zhat, atol=1e-5)
        return
    np.testing.assert_array_equal(sa, sb)
    np.testing.assert_allclose(a.Zhat, b.Zhat, atol=1e-9)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-9)


def test_wide_stepwise_cpcm_run_matches_the_sweep_path():
    X, _ = wide_data()
    start = starts.random_partition(48, 3, np.random.default_rng(0))
    est = CPCM(3, predictor="stepwise", init=start).fit(X)
    from metriclust.cpcm import _cpcm
    ref = _cpcm(sweep_stepwise(X, "ric"), start, 3, 100, 1e-6, 1, 0)
    np.testing.assert_array_equal(est.labels_, ref["labels"])
    np.testing.assert_allclose(est.history_, ref["history"], rtol=1e-9)


def lda_reference(X, labels, K, alpha):
    """The p x p generalized eigenproblem S_c b = l (S_m + rho I) b, K-1 smallest."""
    Xc = X - X.mean(0)
    Sm = Xc.T @ Xc
    p = X.shape[1]
    rho = alpha * np.trace(Sm) / p
    mus = np.array([X[labels == k].mean(0) for k in range(K)])
    Sc = sum((X[labels == k] - mus[k]).T @ (X[labels == k] - mus[k]) for k in range(K))
    return scipy.linalg.eigh(Sc, Sm + rho * np.eye(p), subset_by_index=[0, K - 2])


def test_lda_in_the_whitened_basis_solves_the_p_by_p_problem():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((120, 6))
    labels = rng.integers(0, 3, 120)
    fit = P.LDA(X, alpha=1e-3).fit(labels, 3)
    vals, b = lda_reference(X, labels, 3, 1e-3)
    Xc = X - X.mean(0)
    # the same directions up to sign, with the same normalization b^T (S_m + rho I) b = I
    signs = np.sign(np.sum(fit.coef * b, axis=0))
    np.testing.assert_allclose(fit.coef * signs, b, atol=1e-8)
    np.testing.assert_allclose(fit.Zhat - fit.Zhat.mean(0), Xc @ b * signs, atol=1e-8)


def test_lda_ignores_directions_the_data_do_not_span():
    # a constant feature: S_c b = 0 there, so the p x p problem returns it as an LDA
    # direction (eigenvalue 0) although it predicts nothing; the span path does not
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 40)
    X = np.c_[rng.standard_normal((120, 4)) + 3 * rng.standard_normal((3, 4))[y], np.ones(120)]
    _, b_ref = lda_reference(X, y, 3, 1e-6)
    Xc = X - X.mean(0)
    assert np.linalg.norm(Xc @ b_ref, axis=0).min() < 0.5        # the old path's defect
    fit = P.LDA(X).fit(y, 3)
    np.testing.assert_allclose(fit.coef[4], 0.0, atol=1e-12)
    # both directions carry the data (b^T S_m b ~ 1) and separate the classes
    np.testing.assert_allclose(np.linalg.norm(Xc @ fit.coef, axis=0), 1.0, rtol=1e-4)
    # and they are the LDA directions of the features that vary (the span's problem)
    vals, b4 = lda_reference(X[:, :4], y, 3, 1e-6 * 5 / 4)      # same rho: tr(S_m) / p
    signs = np.sign(np.sum(fit.coef[:4] * b4, axis=0))
    np.testing.assert_allclose(fit.coef[:4] * signs, b4, rtol=1e-5, atol=1e-7)


def test_feature_starts_of_wide_data_are_the_strongest_splits():
    X, _ = wide_data()
    K = 3
    cols = starts.strongest_split_features(X, K, 10)
    shares = []
    for j in range(X.shape[1]):
        col = np.ascontiguousarray(X[:, j:j + 1])
        labels = starts.feature_partition(col, K, seed=0)
        within = sum(((col[labels == k] - col[labels == k].mean()) ** 2).sum() for k in range(K))
        shares.append(within / ((col - col.mean()) ** 2).sum())
    np.testing.assert_array_equal(cols, np.sort(np.argsort(shares, kind="stable")[:10]))
    # block quantiles equal the per-column ones
    for j, init in starts.feature_quantiles(X, K, columns=[3, 50, 95], block=2):
        np.testing.assert_array_equal(init, np.quantile(X[:, j], (np.arange(K) + 0.5) / K))


@pytest.mark.parametrize("predictor", ["kernel", "stepwise"])
def test_wide_cpcm_is_invariant_to_permuting_features(predictor):
    X, y = wide_data()
    perm = np.random.default_rng(5).permutation(X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = CPCM(3, predictor=predictor, random_state=0).fit(X)
        b = CPCM(3, predictor=predictor, random_state=0).fit(X[:, perm])
    assert adjusted_rand_index(a.labels_, b.labels_) == 1.0
    assert a.blur_ratio_ == pytest.approx(b.blur_ratio_, rel=1e-9)
    assert np.sum(a.search_["kind"] == "feature") <= X.shape[0]


def test_spectral_start_from_the_n_by_n_gram_matches_the_p_by_p_one():
    X, _ = wide_data(60, 150, 4)
    Zc = X - X.mean(0)
    ev, V = np.linalg.eigh(Zc.T @ Zc)                 # the p x p route
    ev, V = ev[::-1][:4], V[:, ::-1][:, :4]
    E = np.ascontiguousarray(Zc @ (V / np.sqrt(ev)))
    ref = kmeans(E, 4, n_init=5, random_state=np.random.default_rng(7)).labels
    got = cpduml_module._spectral_partition(X, 4, 5, np.random.default_rng(7))
    np.testing.assert_array_equal(got, ref)


def test_wide_cpduml_is_invariant_to_rotating_the_features():
    X, _ = wide_data(40, 90, 3)
    Q, _ = np.linalg.qr(np.random.default_rng(8).standard_normal((90, 90)))
    a = CPDUML(3, random_state=0).fit(X)
    b = CPDUML(3, random_state=0).fit(X @ Q)
    assert adjusted_rand_index(a.labels_, b.labels_) == 1.0
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)


@pytest.mark.parametrize("kernel", ["auto", None])
def test_wide_cpduml_selection_in_the_span_matches_the_p_dimensional_one(monkeypatch, kernel):
    """The sigma/lam selection of wide data runs in the N columns of the data's span;
    it scores and picks what the selection in the p columns of X picks."""
    X, _ = wide_data(45, 400, 3, seed=3)
    fast = CPDUML(3, kernel=kernel, random_state=0).fit(X)
    monkeypatch.setattr(cpduml_module, "span_coordinates", lambda A: A)   # p columns
    slow = CPDUML(3, kernel=kernel, random_state=0).fit(X)
    assert [r[:3] for r in fast.selection_] == [r[:3] for r in slow.selection_]
    np.testing.assert_allclose([r[3] for r in fast.selection_],
                               [r[3] for r in slow.selection_], rtol=1e-9)
    np.testing.assert_array_equal(fast.labels_, slow.labels_)
    assert (fast.sigma_, fast.lam_, fast.kernel_) == (slow.sigma_, slow.lam_, slow.kernel_)


def mmc_problem(n=40, p=80, n_similar=30, connected=False, seed=0):
    X, y = wide_data(n, p, 4, seed)
    rng = np.random.default_rng(seed)
    if connected:               # a spanning chain: M_S has full rank in the data's span
        S = np.c_[np.arange(n - 1), np.arange(1, n)]
    else:
        i, j = np.triu_indices(n, 1)
        same = np.flatnonzero(y[i] == y[j])
        pick = rng.choice(same, n_similar, replace=False)
        S = np.c_[i[pick], j[pick]]
    return X, S


def old_path(est, X, S):
    """The p-dimensional solver of today's code, called directly."""
    est.n_features_in_ = X.shape[1]
    est._fit(X, S, None)
    return est


def pair_distances(est, X):
    Z = est.transform(X)
    i, j = np.triu_indices(len(X), 1)
    return np.linalg.norm(Z[i] - Z[j], axis=1)


@pytest.mark.parametrize("connected", [True, False])
@pytest.mark.parametrize("init", ["identity", "covariance"])
def test_wide_full_mmc_in_the_span_matches_the_p_dimensional_solve(connected, init):
    X, S = mmc_problem(connected=connected)
    new = MMC(init=init, tol=1e-9, max_iter=5000).fit(X, similar=S)
    old = old_path(MMC(init=init, tol=1e-9, max_iter=5000), X, S)
    assert new.components_.shape == (39, 80) and old.components_.shape == (80, 80)
    # connected S: a well-posed problem, equal to rounding; otherwise M_S is singular in
    # the span and the 1e-9 ridge sets a scale of 1e9: equal to the solver's tolerance
    rtol = 1e-7 if connected else 1e-5
    assert new.objective_ == pytest.approx(old.objective_, rel=rtol)
    np.testing.assert_allclose(pair_distances(new, X), pair_distances(old, X),
                               rtol=0, atol=rtol * pair_distances(old, X).max() * 10)


def test_wide_full_mmc_is_zero_off_the_span_of_the_data():
    X, S = mmc_problem(connected=True)
    est = MMC().fit(X, similar=S)
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc)
    off = Vt[39:].T                                   # orthogonal complement (p - r dims)
    np.testing.assert_allclose(est.metric_ @ off, 0.0, atol=1e-9 * np.abs(est.metric_).max())
    np.testing.assert_allclose(est.transform(off.T), 0.0, atol=1e-9 * np.abs(est.components_).max())
    np.testing.assert_allclose(est.metric_, est.components_.T @ est.components_)
    # rotating the features rotates the metric: pair distances are unchanged
    Q, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((80, 80)))
    rot = MMC().fit(X @ Q, similar=S)
    np.testing.assert_allclose(pair_distances(rot, X @ Q), pair_distances(est, X), rtol=1e-6)


@pytest.mark.parametrize("init", ["identity", "covariance"])
def test_wide_diagonal_mmc_matches_newton(init):
    X, S = mmc_problem()
    new = MMC(diagonal=True, init=init, tol=1e-9).fit(X, similar=S)
    old = old_path(MMC(diagonal=True, init=init, tol=1e-9), X, S)
    assert new.converged_ and old.converged_
    assert new.objective_ == pytest.approx(old.objective_, rel=1e-8)
    w_new, w_old = np.diag(new.metric_), np.diag(old.metric_)
    np.testing.assert_allclose(w_new, w_old, atol=1e-5 * w_old.max())
    # only the positive weights are stored as rows
    assert new.components_.shape == (np.count_nonzero(w_new), 80)
    np.testing.assert_allclose(new.transform(X) @ new.transform(X).T,
                               old.transform(X) @ old.transform(X).T,
                               rtol=1e-4, atol=1e-4 * np.abs(old.transform(X)).max() ** 2)


def test_wide_principal_components_from_the_gram_match_the_svd():
    # components() of wide data takes the leading right singular vectors from the
    # N x N Gram: the same scores as the thin SVD, up to each column's sign.
    from metriclust._core import predictors

    X, _ = wide_data(50, 300, 3)
    model = predictors.Linear(X)
    F = model.components(6)
    _, _, Vt = np.linalg.svd(X - X.mean(0), full_matrices=False)
    ref = (X - X.mean(0)) @ Vt[:6].T
    signs = np.sign(np.sum(F * ref, axis=0))
    np.testing.assert_allclose(F * signs, ref, atol=1e-9 * np.abs(ref).max())
