"""Hostile-input sweep over every public entry point and the raw Cython bridges.

The standard (COMMON.md): bad input gets a clear ``ValueError``/``TypeError``
naming the parameter -- never a segfault, a hang, a silent NaN or a wrong
answer; the C code checks sizes before it touches memory.

Every case here ends in one of two ways, checked by :func:`check_outcome`:

* a finite result (every float in the returned value / fitted attributes is
  finite), and, where an obviously-correct answer exists, the right one; or
* a ``ValueError``/``TypeError`` whose message names the offending parameter.

The raw bridges in ``metriclust._kernels`` (private, they trust their callers
for values but must still check sizes) are driven in a SUBPROCESS so that a
segfault or a hang is a test failure and not a dead test run. All bridge cases
run in one child interpreter that reports each case as it finishes; if the
child dies or stalls, the case it was on is recorded as a crash/hang and a new
child resumes with the remaining cases. Cython's own buffer checks (dtype,
contiguity, read-only, ndim) raise ``ValueError``/``TypeError`` without naming
the argument; for the bridges we therefore only require the exception type.
"""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from metriclust import (CPCM, CPDUML, LVQ, MMC, ConstrainedKMeans, FuzzyCMeans, GaussianMixture,
                        KMeans, KMedoids, SelfOrganizingMap, TreeStructuredVQ, constraints,
                        datasets, kernels, metrics)
from metriclust.isodata import ISODATA
from _reference import float_arrays
from _reference import gaussian_gram as _gram_ref

CLEAR = (ValueError, TypeError)


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _alarm():
    """Turn a hang in Python-level code into a failure (20 s per test)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum, frame):
        raise TimeoutError("test hung for more than 20 s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def assert_finite(result, what="result"):
    for arr in float_arrays(result):
        assert np.all(np.isfinite(arr)), f"{what} holds a non-finite value: {arr!r}"


def check_outcome(call, names, *, must_raise=None):
    """Run ``call`` and check its outcome.

    ``must_raise``: True -- invalid input, a ValueError/TypeError must be
    raised; False -- valid input, a finite result must come back (a refusal
    fails); None -- either a finite result or a clear error (input whose
    meaning is open, each such case says why).
    ``names``: substrings of which at least one must appear in the message.
    Returns the result, or ``None`` when a clear error was raised.
    """
    if isinstance(names, str):
        names = (names,)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except CLEAR as exc:
        msg = str(exc)
        assert must_raise is not False, f"valid input refused: {type(exc).__name__}: {msg}"
        assert any(n in msg for n in names), (
            f"{type(exc).__name__} does not name any of {names}: {msg!r}")
        return None
    assert not must_raise, f"expected a ValueError/TypeError naming {names}, got {result!r}"
    assert_finite(result)
    return result


def _data(n=24, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[: n // 2] += 4.0
    return X


X0 = _data()
Y0 = (np.arange(len(X0)) < len(X0) // 2).astype(int)


# ----------------------------------------------------------------------------
# the estimators
# ----------------------------------------------------------------------------

def _kmeans(**kw):
    return KMeans(**{"n_clusters": 2, "n_init": 1, "random_state": 0, **kw})


def _ckmeans(**kw):
    return ConstrainedKMeans(**{"n_clusters": 2, "n_init": 1, "random_state": 0, **kw})


def _mmc(**kw):
    return MMC(**{"max_iter": 30, "random_state": 0, **kw})


def _cpcm(predictor, **kw):
    base = {"n_clusters": 2, "predictor": predictor, "n_init": 1, "max_iter": 10,
            "random_state": 0}
    return CPCM(**{**base, **kw})


def _cpduml(approximation, **kw):
    base = {"n_clusters": 2, "kernel": "rbf", "approximation": approximation, "n_init": 1,
            "max_iter": 5, "n_components": 4, "n_kernel_components": 4, "random_state": 0}
    return CPDUML(**{**base, **kw})


def _variant(make, key, value):
    """``make`` with ``key=value`` unless the caller overrides ``key``."""
    return lambda **kw: make(kw.pop(key, value), **kw)


ESTIMATORS = {
    "KMeans": _kmeans,
    "ConstrainedKMeans": _ckmeans,
    "MMC": _mmc,
    "CPCM-linear": _variant(_cpcm, "predictor", "linear"),
    "CPCM-kernel": _variant(_cpcm, "predictor", "kernel"),
    "CPCM-stepwise": _variant(_cpcm, "predictor", "stepwise"),
    "CPCM-lda": _variant(_cpcm, "predictor", "lda"),
    "CPDUML-dense": _variant(_cpduml, "approximation", "dense"),
    "CPDUML-nystrom": _variant(_cpduml, "approximation", "nystrom"),
    "CPDUML-eig": _variant(_cpduml, "approximation", "eig"),
}


# The clustering toolbox of the lecture notes; n_clusters maps to each one's own size.
def _toolbox(cls, size, **fixed):
    def make(**kw):
        k = kw.pop("n_clusters", 2)
        return cls(**{**size(k), **fixed, **kw})
    return make


ESTIMATORS.update({
    "GaussianMixture": _toolbox(GaussianMixture, lambda k: {"n_components": k},
                                random_state=0),
    "GaussianMixture-diag": _toolbox(GaussianMixture, lambda k: {"n_components": k},
                                     covariance_type="diag", random_state=0),
    "KMedoids": _toolbox(KMedoids, lambda k: {"n_clusters": k}, random_state=0),
    "KMedoids-alternate": _toolbox(KMedoids, lambda k: {"n_clusters": k},
                                   method="alternate", random_state=0),
    "FuzzyCMeans": _toolbox(FuzzyCMeans, lambda k: {"n_clusters": k}, random_state=0),
    "TreeStructuredVQ": _toolbox(TreeStructuredVQ, lambda k: {"n_clusters": k},
                                 random_state=0),
    "TreeStructuredVQ-monothetic": _toolbox(TreeStructuredVQ, lambda k: {"n_clusters": k},
                                            split="monothetic", random_state=0),
    "SelfOrganizingMap": _toolbox(SelfOrganizingMap, lambda k: {"n_rows": 1, "n_cols": k},
                                  random_state=0),
    "LVQ": _toolbox(LVQ, lambda k: {}, random_state=0),
    "LVQ-olvq1": _toolbox(LVQ, lambda k: {}, variant="olvq1", random_state=0),
    # adapts its number of clusters: n_clusters is where it starts (see _n_found)
    "ISODATA": _toolbox(ISODATA, lambda k: {"n_clusters": k}, random_state=0),
    "KMeans-objective": _toolbox(KMeans, lambda k: {"n_clusters": k}, n_init=1,
                                 convergence="objective", random_state=0),
})


def _n_found(est_name, fitted, n_clusters=2):
    """Clusters a fit may label: ISODATA splits and merges, so its labels index
    the centers it ended with; the others keep n_clusters."""
    return len(fitted.cluster_centers_) if est_name == "ISODATA" else n_clusters


def _fit(est, X):
    """Fit with whatever supervision the estimator needs (labels for MMC)."""
    if isinstance(est, (MMC, LVQ)):
        n = len(X) if isinstance(X, list) else (np.shape(X)[0] if np.ndim(X) >= 1 else 0)
        return est.fit(X, np.arange(n) % 2)
    return est.fit(X)


def _obj(X):
    return np.asarray(X, dtype=object)


_const_col = X0.copy()
_const_col[:, 1] = 7.0
_dups = np.repeat(X0[:12], 2, axis=0)
_mixed_scale = X0 * np.array([1e150, 1.0, 1e-150])

# name -> (X, must_raise, names the message may use); must_raise None: decided per
# estimator by ALL_IDENTICAL_REFUSED.
BAD_X = {
    "nan": (np.where(np.arange(X0.size).reshape(X0.shape) == 4, np.nan, X0), True, ("X",)),
    "inf": (np.where(np.arange(X0.size).reshape(X0.shape) == 4, np.inf, X0), True, ("X",)),
    "-inf": (np.where(np.arange(X0.size).reshape(X0.shape) == 7, -np.inf, X0), True, ("X",)),
    "empty-rows": (np.empty((0, 3)), True, ("X", "sample")),
    "empty-cols": (np.empty((24, 0)), True, ("X", "feature")),
    "one-sample": (X0[:1], True, ("n_samples", "n_clusters", "X", "sample")),
    "one-feature": (X0[:, :1].copy(), False, ("X",)),
    "constant-feature": (_const_col, False, ("X", "constant")),
    "all-identical": (np.ones((24, 3)), None, ("identical", "zero scatter")),
    "duplicates": (_dups, False, ("X",)),
    "float16": (X0.astype(np.float16), False, ("X",)),
    "float32": (X0.astype(np.float32), False, ("X",)),
    "int": (np.rint(X0 * 10).astype(np.int64), False, ("X",)),
    "bool": (X0 > 0, False, ("X",)),
    "object-numbers": (_obj(X0), False, ("X",)),
    # numeric strings in an object array convert, as in scikit-learn; words do not
    "object-numeric-strings": (_obj(X0.astype(str)), False, ("X",)),
    "object-strings": (np.full((24, 3), "abc", dtype=object), True, ("X",)),
    "strings": (X0.astype(str), True, ("X",)),
    "complex": (X0 + 1j, True, ("X", "omplex")),
    "1-D": (X0[:, 0].copy(), True, ("X", "2D", "2-D", "dimension")),
    "3-D": (X0.reshape(24, 3, 1), True, ("X", "2D", "2-D", "dimension")),
    "list": (X0.tolist(), False, ("X",)),
    "ragged-list": ([[1.0, 2.0, 3.0]] * 23 + [[1.0, 2.0]], True, ("X",)),
    "object-mixed": (np.array([[1.0, None, 2.0]] * 24, dtype=object), True, ("X",)),
    "fortran": (np.asfortranarray(X0), False, ("X",)),
    "negative-stride": (X0[::-1, ::-1], False, ("X",)),
    "read-only": (np.require(X0, requirements="C").copy().view(), False, ("X",)),
    "tiny-1e-150": (X0 * 1e-150, False, ("X", "scale", "sigma")),
    "huge-1e150": (X0 * 1e150, False, ("X", "scale", "sigma", "overflow")),
    "mixed-scales": (_mixed_scale, False, ("X", "scale", "sigma", "overflow")),
}
BAD_X["read-only"][0].flags.writeable = False

# All points identical leave nothing to learn a metric from: MMC's similar pairs have
# zero scatter, CPD-UML's kernel PCA (kernel="rbf") has no coordinate. Each refuses
# by name; every other estimator fits (one point repeated is a valid partition).
ALL_IDENTICAL_REFUSED = {"MMC", "CPDUML-dense", "CPDUML-nystrom", "CPDUML-eig"}


@pytest.mark.parametrize("case", list(BAD_X))
@pytest.mark.parametrize("est_name", list(ESTIMATORS))
def test_fit_hostile_X(est_name, case):
    X, must_raise, names = BAD_X[case]
    if must_raise is None:
        must_raise = est_name in ALL_IDENTICAL_REFUSED
    est = ESTIMATORS[est_name]()
    fitted = check_outcome(lambda: _fit(est, X), names, must_raise=must_raise)
    if fitted is None:
        return
    labels = getattr(fitted, "labels_", None)
    if labels is not None:
        labels = np.asarray(labels)
        assert labels.shape == (np.shape(X)[0],)
        assert labels.min() >= 0 and labels.max() < _n_found(est_name, fitted)
        if est_name == "ISODATA":   # every center it reports is used
            assert np.unique(labels).size == len(fitted.cluster_centers_)
    # the fitted model also serves its own training data
    for method in ("predict", "transform"):
        if hasattr(fitted, method):
            out = check_outcome(lambda: getattr(fitted, method)(X), ("X",), must_raise=False)
            assert np.shape(out)[0] == np.shape(X)[0]


def test_fit_duplicate_points_n_clusters_equals_distinct():
    """Duplicates: 12 distinct points twice, 12 clusters -> each pair together."""
    km = _kmeans(n_clusters=12, n_init=3).fit(_dups)
    assert len(np.unique(km.labels_)) == 12
    assert np.array_equal(km.labels_[0::2], km.labels_[1::2])
    assert km.inertia_ == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("est_name", [name for name in ESTIMATORS  # those with n_clusters
                                      if name != "MMC" and not name.startswith("LVQ")])
def test_n_clusters_equals_n_samples(est_name):
    X = X0[:5]
    est = ESTIMATORS[est_name](n_clusters=5)
    # one point per cluster is a valid partition: every estimator fits
    fitted = check_outcome(lambda: _fit(est, X), ("n_clusters", "n_samples", "min_cluster_size"),
                           must_raise=False)
    if est_name in ("KMeans", "ConstrainedKMeans"):
        # one point per cluster is the only optimum
        assert sorted(fitted.labels_) == list(range(5))
        assert fitted.inertia_ == pytest.approx(0.0, abs=1e-12)


_PAIRS = np.array([[0, 1], [0, 20], [5, 17], [11, 12]])


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("est_name", list(ESTIMATORS))
def test_scale_invariance(est_name, scale):
    """Extreme scales give the right answer, not merely a finite one.

    Every method here is invariant to a global scaling of X (k-means' and
    CPCM's criteria scale by s^2; CPD-UML's and CPCM-kernel's sigmas are
    relative to the data's spread; MMC's metric scales by 1/s^2, so its pair
    distances are unchanged): the partition at 1e-150 / 1e150 is the one at 1.
    """
    ref = _fit(ESTIMATORS[est_name](), X0)
    got = _fit(ESTIMATORS[est_name](), X0 * scale)
    assert_finite(got)
    if est_name == "MMC":
        np.testing.assert_allclose(got.pair_distances(X0 * scale, _PAIRS),
                                   ref.pair_distances(X0, _PAIRS), rtol=1e-8)
        return
    if est_name.startswith("LVQ"):  # a classifier: the same predictions
        assert np.array_equal(got.predict(X0 * scale), ref.predict(X0))
        return
    assert metrics.adjusted_rand_index(ref.labels_, got.labels_) == pytest.approx(1.0)
    assert np.array_equal(got.predict(X0 * scale), got.labels_)


MMC_PAIR_DISTANCES_BAD = {
    "out-of-range": (X0, np.array([[0, 24]]), ("pairs",)),
    "negative": (X0, np.array([[-1, 0]]), ("pairs",)),
    "float": (X0, np.array([[0.0, 1.5]]), ("pairs",)),
    "shape": (X0, np.array([[0, 1, 2]]), ("pairs",)),
    "strings": (X0, np.array([["a", "b"]]), ("pairs",)),
    "X-features": (np.ones((24, 4)), np.array([[0, 1]]), ("features",)),
    "X-nan": (BAD_X["nan"][0], np.array([[0, 1]]), ("X",)),
    "X-1D": (X0[:, 0].copy(), np.array([[0, 1]]), ("X",)),
}


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("case", list(MMC_PAIR_DISTANCES_BAD))
def test_mmc_pair_distances_bad(case, diagonal):
    mmc = _mmc(diagonal=diagonal).fit(X0, Y0)
    X, pairs, names = MMC_PAIR_DISTANCES_BAD[case]
    check_outcome(lambda: mmc.pair_distances(X, pairs), names, must_raise=True)


def test_mmc_pair_distances_self_pair_is_zero():
    """d_A(x, x) = 0 exactly: a self pair at predict time is a valid question."""
    mmc = _mmc().fit(X0, Y0)
    res = check_outcome(lambda: mmc.pair_distances(X0, np.array([[3, 3], [0, 1]])), ("pairs",),
                        must_raise=False)
    assert res[0] == 0.0 and res[1] > 0.0


BAD_INIT = {
    "KMeans-nan-centers": (lambda: _kmeans(init=np.where(np.eye(2, 3) > 0, np.nan, 0.0)),
                           ("init",)),
    "KMeans-inf-centers": (lambda: _kmeans(init=np.full((2, 3), np.inf)), ("init",)),
    "KMeans-1D-centers": (lambda: _kmeans(init=np.ones(3)), ("init",)),
    "KMeans-complex-centers": (lambda: _kmeans(init=np.ones((2, 3)) + 1j), ("init",)),
    "CKMeans-wrong-shape": (lambda: _ckmeans(init=np.ones((3, 3))), ("init",)),
    "CPCM-labels-short": (lambda: _cpcm("linear", init=np.zeros(5, dtype=int)), ("init",)),
    "CPCM-labels-out-of-range": (lambda: _cpcm("linear", init=np.arange(24) % 3), ("init",)),
    "CPCM-labels-negative": (lambda: _cpcm("linear", init=np.arange(24) % 2 - 1), ("init",)),
    "CPCM-labels-nan": (lambda: _cpcm("linear", init=np.r_[np.nan, np.arange(23) % 2]),
                        ("init",)),
    "CPCM-labels-float": (lambda: _cpcm("linear", init=np.r_[0.5, np.arange(23) % 2]),
                          ("init",)),
    "CPCM-labels-2D": (lambda: _cpcm("linear", init=np.zeros((24, 1), dtype=int)), ("init",)),
    "CPCM-labels-one-cluster": (lambda: _cpcm("linear", init=np.zeros(24, dtype=int)),
                                ("init", "n_clusters", "cluster")),
}

@pytest.mark.parametrize("case", list(BAD_INIT))
def test_bad_init(case):
    make, names = BAD_INIT[case]
    # a one-cluster start for two clusters is a valid start: CPCM's k-means step splits it
    check_outcome(lambda: make().fit(X0), names,
                  must_raise=case != "CPCM-labels-one-cluster")


NYSTROM_LANDMARKS_BAD = {
    "features": (np.ones((3, 4)), ("landmarks", "features")),
    "nan": (np.full((3, 3), np.nan), ("landmarks",)),
    "1-D": (np.ones(3), ("landmarks",)),
    "empty": (np.empty((0, 3)), ("landmarks", "n_components")),
    "strings": (np.full((3, 3), "a"), ("landmarks",)),
}


@pytest.mark.parametrize("case", list(NYSTROM_LANDMARKS_BAD))
def test_nystrom_bad_landmarks(case):
    landmarks, names = NYSTROM_LANDMARKS_BAD[case]
    call = lambda: kernels.Nystrom(3, sigma=1.0, landmarks=landmarks).fit(X0)  # noqa: E731
    check_outcome(call, names, must_raise=True)


def test_nystrom_duplicate_landmarks():
    """Duplicate landmarks make W singular: the factor stays finite and exact on X."""
    L = np.repeat(X0[:3], 2, axis=0)
    ny = check_outcome(lambda: kernels.Nystrom(6, sigma=2.0, landmarks=L).fit(X0),
                       ("landmarks",), must_raise=False)
    U = ny.factor_
    assert np.all(np.isfinite(U))
    # rows of X that are landmarks are reproduced exactly: G(l, l') = u_l . u_l'
    idx = [0, 1, 2]
    np.testing.assert_allclose(U[idx] @ U[idx].T, _gram_ref(X0[:3], X0[:3], 2.0),
                               atol=1e-8)


@pytest.mark.parametrize("est_name", list(ESTIMATORS))
@pytest.mark.parametrize("case", ["wrong-n-features", "nan", "1-D", "3-D", "empty", "complex"])
def test_predict_transform_hostile(est_name, case):
    est = _fit(ESTIMATORS[est_name](), X0)
    bad = {
        "wrong-n-features": (np.ones((5, 4)), ("features",)),
        "nan": (np.where(np.eye(5, 3) > 0, np.nan, 1.0), ("X",)),
        "1-D": (X0[:, 0].copy(), ("X", "2D", "2-D")),
        "3-D": (X0.reshape(24, 3, 1), ("X", "2D", "2-D")),
        "empty": (np.empty((0, 3)), ("X", "sample")),
        "complex": (X0 + 1j, ("X", "omplex")),
    }[case]
    for method in ("predict", "transform"):
        if hasattr(est, method):
            check_outcome(lambda: getattr(est, method)(bad[0]), bad[1], must_raise=True)


# ----------------------------------------------------------------------------
# bad parameters
# ----------------------------------------------------------------------------

_NAN = float("nan")
_INF = float("inf")

BAD_PARAMS = {
    "KMeans": [("n_clusters", 0), ("n_clusters", -1), ("n_clusters", 10**9), ("n_clusters", 2.5),
               ("n_clusters", "2"), ("max_iter", -1), ("max_iter", 0), ("tol", _NAN),
               ("tol", -1.0), ("n_init", 0), ("n_init", -3), ("init", "bogus"),
               ("init", np.ones((3, 3))), ("init", np.ones((2, 4))), ("algorithm", "bogus"),
               ("random_state", "seed"), ("random_state", -1)],
    "ConstrainedKMeans": [("n_clusters", 0), ("n_clusters", -1), ("n_clusters", 10**9),
                          ("max_iter", -1), ("tol", _NAN), ("n_init", 0), ("init", "bogus"),
                          ("random_state", "seed")],
    "MMC": [("max_iter", -1), ("max_iter", 0), ("tol", _NAN), ("tol", -1.0), ("init", "bogus"),
            ("random_state", "seed")],
    "CPCM-linear": [("n_clusters", 0), ("n_clusters", -1), ("n_clusters", 10**9),
                    ("predictor", "bogus"), ("predictor", None), ("alpha", -1.0),
                    ("alpha", _NAN), ("max_iter", -1), ("tol", _NAN), ("n_init", 0),
                    ("criterion", "bogus"), ("init", "bogus"), ("min_cluster_size", -1),
                    ("random_state", "seed")],
    "CPCM-kernel": [("sigma", 0.0), ("sigma", -1.0), ("sigma", _INF), ("sigma", _NAN),
                    ("sigma", "bogus"), ("alpha", -1.0), ("alpha", _INF),
                    ("n_components", 0), ("n_components", -2)],
    "CPCM-stepwise": [("criterion", "bogus"), ("max_features", 0), ("max_features", -1)],
    "CPCM-lda": [("alpha", -1.0), ("alpha", _NAN)],
    "CPDUML-dense": [("n_clusters", 0), ("n_clusters", 10**9), ("sigma", 0.0), ("sigma", -1.0),
                     ("sigma", _INF), ("sigma", _NAN), ("lam", -1.0), ("lam", _NAN),
                     ("kernel", "bogus"), ("kernel_sigma", 0.0), ("kernel_sigma", -1.0),
                     ("kernel_sigma", _INF), ("kernel_sigma", _NAN), ("max_iter", -1),
                     ("tol", _NAN), ("n_init", 0), ("approximation", "bogus"),
                     ("random_state", "seed")],
    "CPDUML-nystrom": [("n_components", 0), ("n_components", -1), ("n_kernel_components", 0),
                       ("n_kernel_components", -1)],
    "CPDUML-eig": [("n_components", 0), ("n_kernel_components", 0)],
    "GaussianMixture": [("n_components", 0), ("n_components", 10**9), ("covariance_type", "x"),
                        ("tol", _NAN), ("reg_covar", -1.0), ("reg_covar", _INF),
                        ("max_iter", 0), ("n_init", 0), ("init_params", "bogus"),
                        ("random_state", "seed")],
    "KMedoids": [("n_clusters", 0), ("n_clusters", 10**9), ("metric", "bogus"),
                 ("method", "bogus"), ("init", "bogus"), ("max_iter", 0),
                 ("random_state", "seed")],
    "FuzzyCMeans": [("n_clusters", 0), ("m", 1.0), ("m", _NAN), ("m", _INF), ("tol", _NAN),
                    ("max_iter", 0), ("init", "bogus"), ("random_state", "seed")],
    "TreeStructuredVQ": [("n_clusters", 0), ("n_clusters", 10**9), ("tree", "bogus"),
                         ("split", "bogus"), ("n_init", 0), ("random_state", "seed")],
    "SelfOrganizingMap": [("n_cols", 0), ("n_cols", 10**9), ("n_epochs", 0),
                          ("learning_rate", _NAN), ("sigma", -1.0), ("final_sigma", _NAN),
                          ("init", "bogus"), ("random_state", "seed")],
    "ISODATA": [("n_clusters", 0), ("n_clusters", 10**9), ("min_cluster_size", 0),
                ("split_std", -1.0), ("split_std", _NAN), ("merge_distance", _INF),
                ("max_merges", -1), ("max_iter", 0), ("random_state", "seed")],
    "KMeans-objective": [("convergence", "bogus"), ("convergence", None),
                         ("algorithm", "online")],
    "LVQ": [("variant", "bogus"), ("learning_rate", 0.0), ("learning_rate", _NAN),
            ("n_epochs", 0), ("window", _NAN), ("epsilon", -1.0),
            ("n_prototypes_per_class", 0), ("random_state", "seed")],
}

def _param_cases():
    return [pytest.param(est, name, value, id=f"{est}-{name}={value!r}")
            for est, items in BAD_PARAMS.items() for name, value in items]


@pytest.mark.parametrize("est_name", list(ESTIMATORS))
def test_huge_integer_parameters(est_name):
    """2**31 iterations / components: a normal fit (loops end at convergence, ranks are
    clipped to what the data allow), or a clear error where the number is a size the data
    cannot have (clusters, grid units) or a count of sequential updates (over 10**9) --
    never an OverflowError."""
    names = {"MMC": ["max_iter"], "CPCM-kernel": ["max_iter", "n_components"],
             "CPCM-stepwise": ["max_iter", "max_features"],
             "CPDUML-nystrom": ["max_iter", "n_components"],
             "CPDUML-eig": ["max_iter", "n_kernel_components", "n_components"],
             "TreeStructuredVQ": ["n_clusters"], "TreeStructuredVQ-monothetic": ["n_clusters"],
             "SelfOrganizingMap": ["n_epochs", "n_rows"], "LVQ": ["n_epochs"],
             "LVQ-olvq1": ["n_epochs", "n_prototypes_per_class"]}
    refused = {("TreeStructuredVQ", "n_clusters"), ("TreeStructuredVQ-monothetic", "n_clusters"),
               ("SelfOrganizingMap", "n_epochs"), ("SelfOrganizingMap", "n_rows"),
               ("LVQ", "n_epochs"), ("LVQ-olvq1", "n_epochs")}
    for param in names.get(est_name, ["max_iter"]):
        est = ESTIMATORS[est_name](**{param: 2**31})
        check_outcome(lambda: _fit(est, X0), (param,),
                      must_raise=(est_name, param) in refused)


@pytest.mark.parametrize("fn", ["gaussian_gram", "gram_matmat", "Nystrom", "top_eigenpairs"])
@pytest.mark.parametrize("n_threads", [2**40, -2**40, 0, True, 1.5, "2"], ids=repr)
def test_public_n_threads(fn, n_threads):
    """n_threads: any int works (capped / counted back from the maximum); 0 and non-ints
    are refused by name; the answer does not depend on it."""
    calls = {
        "gaussian_gram": lambda nt: kernels.gaussian_gram(X0, sigma=1.0, n_threads=nt),
        "gram_matmat": lambda nt: kernels.gram_matmat(X0, np.ones((24, 2)), sigma=1.0,
                                                      n_threads=nt),
        "Nystrom": lambda nt: kernels.Nystrom(3, sigma=1.0, random_state=0,
                                              n_threads=nt).fit(X0).factor_,
        "top_eigenpairs": lambda nt: kernels.top_eigenpairs(X0, 2, sigma=1.0, random_state=0,
                                                            n_threads=nt)[0],
    }
    res = check_outcome(lambda: calls[fn](n_threads), ("n_threads",),
                        must_raise=not isinstance(n_threads, int) or n_threads in (0, True))
    if res is not None:
        np.testing.assert_allclose(res, calls[fn](1), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("est_name,param,value", _param_cases())
def test_bad_parameter(est_name, param, value):
    est = ESTIMATORS[est_name](**{param: value})
    check_outcome(lambda: _fit(est, X0), (param,), must_raise=True)


# ----------------------------------------------------------------------------
# sample weights, pairs
# ----------------------------------------------------------------------------

BAD_WEIGHTS = {
    "negative": np.r_[-1.0, np.ones(23)],
    "nan": np.r_[np.nan, np.ones(23)],
    "inf": np.r_[np.inf, np.ones(23)],
    "short": np.ones(23),
    "2-D": np.ones((24, 1)),
    "all-zero": np.zeros(24),
    "strings": np.array(["a"] * 24),
    "complex": np.ones(24) + 1j,
}


@pytest.mark.parametrize("case", list(BAD_WEIGHTS))
@pytest.mark.parametrize("method", ["fit", "score"])
def test_kmeans_bad_sample_weight(case, method):
    w = BAD_WEIGHTS[case]
    if method == "fit":
        call = lambda: _kmeans().fit(X0, sample_weight=w)  # noqa: E731
    else:
        km = _kmeans().fit(X0)
        call = lambda: km.score(X0, sample_weight=w)  # noqa: E731
    check_outcome(call, ("sample_weight",), must_raise=True)


@pytest.mark.parametrize("factor", [
    1e-300,
    1e300,
    1e305,
])
def test_kmeans_weight_scale_invariance(factor):
    """Weights matter only up to a common factor: extreme factors change nothing."""
    ref = _kmeans(n_init=2).fit(X0)
    got = _kmeans(n_init=2).fit(X0, sample_weight=np.full(24, factor))
    assert np.array_equal(ref.labels_, got.labels_)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=1e-10)


def test_kmeans_zero_weight_points_are_ignored():
    """Points of weight 0 must not move the centers (a right answer, not just finite)."""
    w = np.ones(24)
    w[0] = 0.0
    X = X0.copy()
    X[0] = 1e6  # an outlier that, with weight 0, changes nothing
    a = _kmeans(init=X0[[1, 20]]).fit(X, sample_weight=w)
    b = _kmeans(init=X0[[1, 20]]).fit(X0[1:])
    np.testing.assert_allclose(np.sort(a.cluster_centers_, axis=0),
                               np.sort(b.cluster_centers_, axis=0), rtol=1e-12)


BAD_PAIRS = {
    "out-of-range": (np.array([[0, 24]]), ("X", "range", "n_samples")),
    "negative": (np.array([[0, -1]]), ("range", "negative", "n_samples")),
    "float": (np.array([[0.0, 1.5]]), ("integer",)),
    "float-integral": (np.array([[0.0, 1.0]]), ()),
    "three-cols": (np.array([[0, 1, 2]]), ("shape",)),
    "1-D": (np.array([0, 1]), ("shape",)),
    "strings": (np.array([["a", "b"]]), ("integer",)),
    "nan": (np.array([[0.0, np.nan]]), ("integer", "NaN", "finite")),
    "huge-index": (np.array([[0, 2**62]]), ("range", "n_samples")),
}


def _pairs_call(est_name, kind, pairs):
    if est_name == "ConstrainedKMeans":
        good = np.array([[0, 1]])
        kw = {"must_link": good, "cannot_link": np.array([[0, 23]])}
        kw[kind] = pairs
        return lambda: _ckmeans().fit(X0, **kw)
    kw = {"similar": np.array([[0, 1], [2, 3]]), "dissimilar": np.array([[0, 23]])}
    kw[kind] = pairs
    return lambda: _mmc().fit(X0, **kw)


@pytest.mark.parametrize("case", list(BAD_PAIRS))
@pytest.mark.parametrize("est_name,kind", [("ConstrainedKMeans", "must_link"),
                                           ("ConstrainedKMeans", "cannot_link"),
                                           ("MMC", "similar"), ("MMC", "dissimilar")])
def test_bad_pairs(est_name, kind, case):
    pairs, names = BAD_PAIRS[case]
    call = _pairs_call(est_name, kind, pairs)
    if case == "float-integral":
        # integral floats are valid indices: the estimator's own valid pair, as floats
        valid = {"must_link": [[0, 1]], "cannot_link": [[0, 23]], "similar": [[0, 1], [2, 3]],
                 "dissimilar": [[0, 23]]}[kind]
        call = _pairs_call(est_name, kind, np.array(valid, dtype=np.float64))
        check_outcome(call, (kind,), must_raise=False)
        return
    check_outcome(call, (kind,) + names, must_raise=True)
    # and the message names the argument itself
    try:
        call()
    except CLEAR as exc:
        assert kind in str(exc), f"message does not name {kind}: {exc}"


@pytest.mark.parametrize("est_name,kind", [("ConstrainedKMeans", "cannot_link"),
                                           ("MMC", "dissimilar")])
def test_self_pair_in_cannot_link(est_name, kind):
    """A point cannot be apart from itself: refuse by name."""
    call = _pairs_call(est_name, kind, np.array([[3, 3]]))
    check_outcome(call, (kind,), must_raise=True)


@pytest.mark.parametrize("est_name,kind", [("ConstrainedKMeans", "must_link"),
                                           ("MMC", "similar")])
def test_self_pair_in_must_link(est_name, kind):
    """(i, i) must-link says nothing and is most likely a mistake: refused by name."""
    call = _pairs_call(est_name, kind, np.array([[3, 3], [0, 1]]))
    check_outcome(call, (kind,), must_raise=True)


def test_contradictory_constraints():
    """must-link (0,1) with cannot-link (0,1) is infeasible: a clear error."""
    call = lambda: _ckmeans().fit(X0, must_link=np.array([[0, 1]]),  # noqa: E731
                                  cannot_link=np.array([[1, 0]]))
    check_outcome(call, ("must_link", "cannot_link", "infeasible", "contradict"),
                  must_raise=True)


def test_infeasible_cannot_links():
    """Three mutually cannot-linked points and two clusters: a clear error."""
    call = lambda: _ckmeans().fit(X0, cannot_link=np.array([[0, 1], [1, 2], [0, 2]]))  # noqa
    check_outcome(call, ("cannot_link", "cannot-link"), must_raise=True)


def test_must_links_merge_below_n_clusters():
    """Must-links that leave fewer groups than clusters: the error says so."""
    ml = np.c_[np.zeros(23, dtype=int), np.arange(1, 24)]
    call = lambda: _ckmeans().fit(X0, must_link=ml)  # noqa: E731
    check_outcome(call, ("must_link", "must-link", "component"), must_raise=True)


@pytest.mark.parametrize("est_name", list(ESTIMATORS))
def test_predict_float32_after_float64_fit(est_name):
    """Serving float32 data to a float64 model gives the same answer (separated data)."""
    est = _fit(ESTIMATORS[est_name](), X0)
    for method in ("predict", "transform"):
        if hasattr(est, method):
            a = getattr(est, method)(X0)
            b = getattr(est, method)(X0.astype(np.float32))
            assert_finite(b)
            if method == "predict":
                assert np.array_equal(a, b)
            else:
                np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())


# ----------------------------------------------------------------------------
# metriclust.kernels
# ----------------------------------------------------------------------------

KERNEL_FUNCS = {
    "gaussian_gram": lambda X: kernels.gaussian_gram(X, sigma=1.0),
    "gaussian_gram-Y": lambda X: kernels.gaussian_gram(X0, X, sigma=1.0),
    "gram_matmat": lambda X: kernels.gram_matmat(X, np.ones((len(X), 2)), sigma=1.0),
    "median_pairwise_distance": lambda X: kernels.median_pairwise_distance(X, random_state=0),
    "Nystrom": lambda X: kernels.Nystrom(3, sigma=1.0, random_state=0).fit(X),
    "Nystrom-median": lambda X: kernels.Nystrom(3, random_state=0).fit(X),
    "nystrom_factor": lambda X: kernels.nystrom_factor(X, 3, sigma=1.0, random_state=0),
    "top_eigenpairs": lambda X: kernels.top_eigenpairs(X, 2, sigma=1.0, random_state=0),
}

KERNEL_X = ["nan", "inf", "empty-rows", "empty-cols", "one-sample", "one-feature",
            "all-identical", "duplicates", "float16", "int", "bool", "object-numbers",
            "object-numeric-strings", "object-strings", "strings", "complex", "1-D", "3-D",
            "list", "ragged-list", "object-mixed", "fortran",
            "negative-stride", "read-only", "tiny-1e-150", "huge-1e150"]

@pytest.mark.parametrize("case", KERNEL_X)
@pytest.mark.parametrize("fn", list(KERNEL_FUNCS))
def test_kernels_hostile_X(fn, case):
    X, must_raise, names = BAD_X[case]
    if case == "one-sample":
        # a 1 x 1 Gram is well defined (n_components clipped to 1); a median over
        # no pairs and 2 eigenpairs of a 1 x 1 matrix are not
        must_raise = fn in ("median_pairwise_distance", "top_eigenpairs")
    if case == "one-feature" and fn == "gaussian_gram-Y":
        must_raise = True   # Y = one feature against X0's three
    names = names + ("Y",) if fn == "gaussian_gram-Y" else names
    names = names + ("n_components", "n_samples")
    res = check_outcome(lambda: KERNEL_FUNCS[fn](X), names, must_raise=must_raise)
    if res is None or fn not in ("gaussian_gram", "gaussian_gram-Y"):
        return
    Xa = np.asarray(X, dtype=np.float64)
    ref = _gram_ref(Xa, Xa, 1.0) if fn == "gaussian_gram" else _gram_ref(X0, Xa, 1.0)
    np.testing.assert_allclose(res, ref, rtol=1e-3 if res.dtype == np.float32 else 1e-10,
                               atol=1e-6 if res.dtype == np.float32 else 1e-12)


BAD_SIGMAS = [0.0, -1.0, _INF, -_INF, _NAN, "1.0", None, 1j]


@pytest.mark.parametrize("sigma", BAD_SIGMAS, ids=repr)
@pytest.mark.parametrize("fn", ["gaussian_gram", "gram_matmat", "Nystrom", "nystrom_factor",
                                "top_eigenpairs"])
def test_kernels_bad_sigma(fn, sigma):
    calls = {
        "gaussian_gram": lambda: kernels.gaussian_gram(X0, sigma=sigma),
        "gram_matmat": lambda: kernels.gram_matmat(X0, np.ones((24, 2)), sigma=sigma),
        "Nystrom": lambda: kernels.Nystrom(3, sigma=sigma, random_state=0).fit(X0),
        "nystrom_factor": lambda: kernels.nystrom_factor(X0, 3, sigma=sigma, random_state=0),
        "top_eigenpairs": lambda: kernels.top_eigenpairs(X0, 2, sigma=sigma, random_state=0),
    }
    check_outcome(calls[fn], ("sigma",), must_raise=True)


@pytest.mark.parametrize("sigma", [1e-150, 1e150])
def test_gaussian_gram_extreme_sigma(sigma):
    """Tiny sigma: identity (distinct points); huge sigma: all ones. Never NaN."""
    G = kernels.gaussian_gram(X0, sigma=sigma)
    expect = np.eye(24) if sigma < 1 else np.ones((24, 24))
    np.testing.assert_allclose(G, expect, atol=1e-12)


KERNEL_BAD_ARGS = {
    "gram-Y-features": (lambda: kernels.gaussian_gram(X0, np.ones((3, 4)), sigma=1.0),
                        ("Y", "features")),
    "gram-Y-1D": (lambda: kernels.gaussian_gram(X0, np.ones(3), sigma=1.0), ("Y",)),
    "gram-Y-nan": (lambda: kernels.gaussian_gram(X0, np.full((2, 3), np.nan), sigma=1.0),
                   ("Y",)),
    "gram-n_threads-str": (lambda: kernels.gaussian_gram(X0, sigma=1.0, n_threads="x"),
                           ("n_threads",)),
    "gram-out-shape": (lambda: kernels.gaussian_gram(X0, sigma=1.0, out=np.empty((3, 3))),
                       ("out",)),
    "gram-out-dtype": (lambda: kernels.gaussian_gram(X0, sigma=1.0,
                                                     out=np.empty((24, 24), np.float32)),
                       ("out",)),
    "gram-out-readonly": (lambda: kernels.gaussian_gram(
        X0, sigma=1.0, out=np.lib.stride_tricks.as_strided(np.empty((24, 24)), writeable=False)),
        ("out",)),
    "matmat-V-rows": (lambda: kernels.gram_matmat(X0, np.ones((5, 2)), sigma=1.0),
                      ("V", "rows")),
    "matmat-V-nan": (lambda: kernels.gram_matmat(X0, np.full((24, 2), np.nan), sigma=1.0),
                     ("V",)),
    "matmat-V-3D": (lambda: kernels.gram_matmat(X0, np.ones((24, 2, 1)), sigma=1.0), ("V",)),
    "matmat-Y-features": (lambda: kernels.gram_matmat(X0, np.ones((3, 2)), sigma=1.0,
                                                      Y=np.ones((3, 4))), ("Y", "features")),
    "nystrom-ncomp-0": (lambda: kernels.Nystrom(0, sigma=1.0).fit(X0), ("n_components",)),
    "nystrom-ncomp-neg": (lambda: kernels.Nystrom(-2, sigma=1.0).fit(X0), ("n_components",)),
    "nystrom-ncomp-float": (lambda: kernels.Nystrom(2.5, sigma=1.0).fit(X0), ("n_components",)),
    "nystrom-landmarks-bogus": (lambda: kernels.Nystrom(3, sigma=1.0, landmarks="x").fit(X0),
                                ("landmarks",)),
    "nystrom-rcond-neg": (lambda: kernels.Nystrom(3, sigma=1.0, rcond=-1.0).fit(X0),
                          ("rcond",)),
    "nystrom-rcond-nan": (lambda: kernels.Nystrom(3, sigma=1.0, rcond=_NAN).fit(X0),
                          ("rcond",)),
    "nystrom-random_state": (lambda: kernels.Nystrom(3, sigma=1.0, random_state="x").fit(X0),
                             ("random_state",)),
    "nystrom_factor-ncomp-0": (lambda: kernels.nystrom_factor(X0, 0, sigma=1.0),
                               ("n_components",)),
    "top_eig-m-0": (lambda: kernels.top_eigenpairs(X0, 0, sigma=1.0), ("n_components",)),
    "top_eig-m-neg": (lambda: kernels.top_eigenpairs(X0, -1, sigma=1.0), ("n_components",)),
    "top_eig-m-huge": (lambda: kernels.top_eigenpairs(X0, 10**9, sigma=1.0),
                       ("n_components",)),
    "top_eig-method": (lambda: kernels.top_eigenpairs(X0, 2, sigma=1.0, method="x"),
                       ("method",)),
    "top_eig-tol-nan": (lambda: kernels.top_eigenpairs(X0, 2, sigma=1.0, tol=_NAN), ("tol",)),
    "median-max_samples-0": (lambda: kernels.median_pairwise_distance(X0, max_samples=0),
                             ("max_samples",)),
    "median-max_samples-neg": (lambda: kernels.median_pairwise_distance(X0, max_samples=-5),
                               ("max_samples",)),
}


@pytest.mark.parametrize("case", list(KERNEL_BAD_ARGS))
def test_kernels_bad_args(case):
    call, names = KERNEL_BAD_ARGS[case]
    check_outcome(call, names, must_raise=True)


def test_gram_matmat_vector():
    """A 1-D V is a single column: the answer is G @ v, 1-D."""
    v = np.linspace(-1, 1, 24)
    got = kernels.gram_matmat(X0, v, sigma=1.5)
    assert got.shape == (24,)
    np.testing.assert_allclose(got, _gram_ref(X0, X0, 1.5) @ v, rtol=1e-10, atol=1e-12)


def test_public_n_threads_huge():
    """A thread count far beyond the machine is capped, not a crash (run in a child)."""
    code = ("import numpy as np; from metriclust import kernels\n"
            "X = np.random.default_rng(0).normal(size=(50, 3))\n"
            "G = kernels.gaussian_gram(X, sigma=1.0, n_threads=100000)\n"
            "R = kernels.gaussian_gram(X, sigma=1.0, n_threads=1)\n"
            "assert np.array_equal(G, R)\nprint('OK')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "OK" in proc.stdout, (proc.returncode, proc.stderr[-500:])


def test_nystrom_transform_wrong_features():
    ny = kernels.Nystrom(3, sigma=1.0, random_state=0).fit(X0)
    check_outcome(lambda: ny.transform(np.ones((4, 5))), ("features",), must_raise=True)
    check_outcome(lambda: ny.transform(np.full((4, 3), np.nan)), ("X", "Y"), must_raise=True)


def test_nystrom_more_components_than_samples():
    """m > n: clipped to n (a finite exact factor) or refused by name."""
    res = check_outcome(lambda: kernels.Nystrom(50, sigma=2.0, random_state=0).fit(X0[:6]),
                        ("n_components",), must_raise=False)
    U = res.factor_
    np.testing.assert_allclose(U @ U.T, _gram_ref(X0[:6], X0[:6], 2.0), atol=1e-8)


def test_median_pairwise_distance_degenerate():
    """All-identical points: the median distance is 0 (documented), never NaN."""
    res = check_outcome(lambda: kernels.median_pairwise_distance(np.ones((5, 2))), ("X",),
                        must_raise=False)
    assert res == 0.0


# ----------------------------------------------------------------------------
# metriclust.metrics
# ----------------------------------------------------------------------------

LABEL_METRICS = ["contingency_matrix", "rand_index", "adjusted_rand_index",
                 "variation_of_information", "normalized_mutual_info", "purity", "entropy",
                 "clustering_accuracy", "pairwise_accuracy"]

_A = np.array([0, 0, 1, 1, 2, 2])
BAD_LABELS = {
    "length-mismatch": (_A[:5], True),
    "empty": (np.array([], dtype=int), True),     # against 6 labels: a length mismatch
    "2-D": (_A.reshape(3, 2), True),
    "nan": (np.array([0, 0, 1, 1, 2, np.nan]), True),
    "inf": (np.array([0, 0, 1, 1, 2, np.inf]), True),
    "float-nonintegral": (np.array([0, 0, 1.5, 1.5, 2, 2]), False),
    "negative": (-_A, False),
    "huge-values": (_A * 10**15, False),
    "strings": (np.array(list("aabbcc")), False),
    "mixed-object": (np.array([0, "a", 1, 1, 2, 2], dtype=object), True),  # as scikit-learn
    "bool": (_A > 0, False),
    "list": (list(_A), False),
    "one-cluster": (np.zeros(6, dtype=int), False),
    "all-distinct": (np.arange(6), False),
    "complex": (_A + 1j, False),  # distinct hashable values: a valid labelling
    "scalar": (np.int64(3), True),
}


def _label_metric_ref(name, a, b):
    """sklearn is a test dependency: the reference for the standard scores."""
    from sklearn import metrics as skm
    return {"rand_index": skm.rand_score, "adjusted_rand_index": skm.adjusted_rand_score,
            "normalized_mutual_info": skm.normalized_mutual_info_score}.get(name)


@pytest.mark.parametrize("case", list(BAD_LABELS))
@pytest.mark.parametrize("name", LABEL_METRICS)
@pytest.mark.parametrize("side", ["true", "pred"])
def test_metrics_hostile_labels(name, case, side):
    bad, must_raise = BAD_LABELS[case]
    fn = getattr(metrics, name)
    args = (bad, _A) if side == "true" else (_A, bad)
    names = ("labels_true",) if side == "true" else ("labels_pred",)
    if case == "length-mismatch":
        names = ("labels_true", "labels_pred")
    res = check_outcome(lambda: fn(*args), names, must_raise=must_raise)
    if res is None:
        return
    ref = _label_metric_ref(name, *args)
    if ref is not None:
        # the same partitions coded 0..k-1 (the reference does not take complex labels)
        codes = [np.unique(np.asarray(a), return_inverse=True)[1].ravel() for a in args]
        assert res == pytest.approx(ref(*codes), abs=1e-12)
    if name != "contingency_matrix":
        assert np.ndim(res) == 0


BLUR_BAD = {
    "labels-length": (lambda: metrics.blur_ratio(X0, Y0[:5]), ("labels",)),
    "labels-nan": (lambda: metrics.blur_ratio(X0, np.r_[np.nan, Y0[1:]]), ("labels",)),
    "X-nan": (lambda: metrics.blur_ratio(BAD_X["nan"][0], Y0), ("X",)),
    "X-1D": (lambda: metrics.blur_ratio(X0[:, 0], Y0), ("X",)),
    "X-empty": (lambda: metrics.blur_ratio(np.empty((0, 3)), Y0[:0]), ("X", "labels")),
    "transform-shape": (lambda: metrics.blur_ratio(X0, Y0, np.ones((5, 2))), ("transform",)),
    "transform-nan": (lambda: metrics.blur_ratio(X0, Y0, np.full((3, 2), np.nan)),
                      ("transform",)),
    "transform-1D": (lambda: metrics.blur_ratio(X0, Y0, np.ones(3)), ("transform",)),
}


@pytest.mark.parametrize("case", list(BLUR_BAD))
def test_blur_ratio_bad(case):
    call, names = BLUR_BAD[case]
    check_outcome(call, names, must_raise=True)


def test_blur_ratio_degenerate():
    """All-identical points: SST = 0, no partition reduces any spread: the ratio is 1."""
    res = check_outcome(lambda: metrics.blur_ratio(np.ones((6, 2)), _A), ("X", "SST", "total"),
                        must_raise=False)
    assert res == 1.0


# ----------------------------------------------------------------------------
# metriclust.constraints (functions)
# ----------------------------------------------------------------------------

CONSTRAINT_CALLS = {
    "cc-out-of-range": (lambda: constraints.connected_components(np.array([[0, 9]]), 5),
                        ("pairs",), True),
    "cc-negative-index": (lambda: constraints.connected_components(np.array([[0, -1]]), 5),
                          ("pairs",), True),
    "cc-float-index": (lambda: constraints.connected_components(np.array([[0, 1.5]]), 5),
                       ("pairs",), True),
    "cc-n_samples-neg": (lambda: constraints.connected_components(np.array([[0, 1]]), -1),
                         ("n_samples", "pairs"), True),
    "cc-n_samples-float": (lambda: constraints.connected_components(np.array([[0, 1]]), 2.5),
                           ("n_samples",), True),
    "cc-shape": (lambda: constraints.connected_components(np.array([[0, 1, 2]]), 5),
                 ("pairs",), True),
    "cc-empty": (lambda: constraints.connected_components(np.empty((0, 2), int), 5),
                 ("pairs",), False),
    "pfl-neg-similar": (lambda: constraints.pairs_from_labels(Y0, -1, 3), ("n_similar",), True),
    "pfl-neg-dissimilar": (lambda: constraints.pairs_from_labels(Y0, 3, -1),
                           ("n_dissimilar",), True),
    "pfl-float-count": (lambda: constraints.pairs_from_labels(Y0, 2.5, 3), ("n_similar",), True),
    "pfl-nan-labels": (lambda: constraints.pairs_from_labels(np.r_[np.nan, Y0[1:]], 3, 3),
                       ("y",), True),
    "pfl-2D-labels": (lambda: constraints.pairs_from_labels(Y0.reshape(4, 6), 3, 3),
                      ("y",), True),
    "pfl-one-class-dissimilar": (lambda: constraints.pairs_from_labels(np.zeros(6), 2, 2),
                                 ("n_dissimilar", "class", "y"), True),
    "pfl-empty": (lambda: constraints.pairs_from_labels(np.array([]), 1, 1), ("y", "class"),
                  True),
    "ssp-ratio-neg": (lambda: constraints.sample_similar_pairs(Y0, -0.5),
                      ("target_component_ratio",), True),
    "ssp-ratio-nan": (lambda: constraints.sample_similar_pairs(Y0, _NAN),
                      ("target_component_ratio",), True),
    "ssp-ratio-gt1": (lambda: constraints.sample_similar_pairs(Y0, 1.5),
                      ("target_component_ratio",), True),
    "ssp-nan-labels": (lambda: constraints.sample_similar_pairs(np.r_[np.nan, Y0[1:]]),
                       ("y",), True),
    "ssp-empty": (lambda: constraints.sample_similar_pairs(np.array([])), ("y",), False),
}

@pytest.mark.parametrize("case", list(CONSTRAINT_CALLS))
def test_constraint_functions(case):
    call, names, must_raise = CONSTRAINT_CALLS[case]
    check_outcome(call, names, must_raise=must_raise)


# ----------------------------------------------------------------------------
# metriclust.datasets
# ----------------------------------------------------------------------------

_MAKERS = {
    "make_parallel_lines": datasets.make_parallel_lines,
    "make_parallel_clouds": datasets.make_parallel_clouds,
    "make_concentric_circles": datasets.make_concentric_circles,
    "make_moons": datasets.make_moons,
    "make_xing_artificial": lambda **kw: datasets.make_xing_artificial(1, **kw),
}
_MAKER_BAD = [("n_samples", 0), ("n_samples", -5), ("n_samples", 2.5), ("n_samples", "10"),
              ("random_state", "seed"), ("noise", -1.0), ("noise", _NAN), ("noise", _INF)]
_MAKER_PARAMS = {"make_xing_artificial": {"n_samples", "random_state"},
                 "make_moons": {"n_samples", "random_state", "noise"}}


def _maker_cases():
    for fn in _MAKERS:
        for param, value in _MAKER_BAD:
            if param in _MAKER_PARAMS.get(fn, {p for p, _ in _MAKER_BAD}):
                yield pytest.param(fn, param, value, id=f"{fn}-{param}={value!r}")


@pytest.mark.parametrize("fn,param,value", list(_maker_cases()))
def test_dataset_makers_bad_params(fn, param, value):
    check_outcome(lambda: _MAKERS[fn](**{param: value}), (param,), must_raise=True)


_CSV_BAD = {
    "empty": ("", ()),
    "header-only": ("a,b,label\n", ()),
    "no-label-column": ("a,b\n1,2\n3,4\n", ("label",)),
    "nan-field": ("a,b,label\n1,nan,0\n3,4,1\n", ("nan", "finite", "NaN")),
    "inf-field": ("a,b,label\n1,inf,0\n3,4,1\n", ("inf", "finite")),
    "word-field": ("a,b,label\n1,x,0\n3,4,1\n", ("x",)),
    "ragged": ("a,b,label\n1,2,0\n3,1\n", ("field", "column")),
    "float-label": ("a,b,label\n1,2,0.5\n3,4,1\n", ("label",)),
    "binary": ("a,b,label\n\x00\x01,2,0\n", ()),
}


@pytest.mark.parametrize("case", list(_CSV_BAD))
def test_load_csv_hostile(tmp_path, case):
    text, names = _CSV_BAD[case]
    path = tmp_path / "d.csv"
    path.write_text(text)
    # errors name the file (and the line / field where there is one)
    check_outcome(lambda: datasets.load_csv(path), ("d.csv",) + names, must_raise=True)


def test_load_csv_missing_file(tmp_path):
    with pytest.raises(OSError):
        datasets.load_csv(tmp_path / "missing.csv")


# ----------------------------------------------------------------------------
# raw Cython bridges, in a child interpreter
# ----------------------------------------------------------------------------

_PRELUDE = textwrap.dedent("""
    import sys
    import numpy as np
    from metriclust._kernels import _gram as gr, _kmeans as km, _pairwise as pw, _sums as su
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3)); X32 = X.astype(np.float32)
    C = X[:2].copy(); C32 = X32[:2].copy()
    lab = np.arange(10, dtype=np.int64) % 2
    P = np.array([[0, 1], [2, 3]], dtype=np.int64)
    def ro(a):
        a = np.array(a); a.flags.writeable = False; return a
    def nc(a):
        return np.asarray(a)[:, ::2] if np.ndim(a) == 2 else np.asarray(a)[::2]
    def rev(a):
        return np.asarray(a)[::-1]
    def ref_sums(X, lab, K):
        out = np.zeros((K, X.shape[1]))
        np.add.at(out, lab, X)
        return out
    sys.path.insert(0, TESTS_DIR)
    from _reference import gaussian_gram as ref_gram
""")

_RUNNER = textwrap.dedent("""
    import json, sys, math
    import numpy as np
    exec(compile(PRELUDE, "prelude", "exec"))
    cases = json.loads(sys.stdin.read())
    def floats(o):
        if isinstance(o, np.ndarray):
            if o.dtype.kind in "fc":
                yield o
        elif isinstance(o, (float, np.floating)):
            yield np.asarray(o)
        elif isinstance(o, (tuple, list)):
            for x in o:
                yield from floats(x)
    for name, code in cases:
        print("START " + name, flush=True)
        env = {"TESTS_DIR": TESTS_DIR}
        try:
            exec(compile(PRELUDE, "prelude", "exec"), env)
            exec(compile(code, name, "exec"), env)
            res = env.get("result")
            bad = [a for a in floats(res) if not np.all(np.isfinite(a))]
            out = {"kind": "nonfinite" if bad else "ok"}
        except AssertionError as exc:
            out = {"kind": "wrong", "msg": repr(exc)}
        except BaseException as exc:
            # The builtin class (NonFiniteResult counts as FloatingPointError).
            kind = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")
            out = {"kind": "raise", "type": kind.__name__, "msg": str(exc)[:300]}
        print("RESULT " + json.dumps([name, out]), flush=True)
""")

# name -> (code, expectation) ; expectation: "ok" (finite & asserts pass),
# "raise" (ValueError/TypeError/MemoryError/OverflowError), or "either".
BRIDGE = {
    # --- _sums.cluster_sums -------------------------------------------------
    "sums-ok": ("result = su.cluster_sums(X, lab, 2)\n"
                "assert np.allclose(result, ref_sums(X, lab, 2))", "ok"),
    "sums-f32": ("result = su.cluster_sums(X32, lab, 2)\n"
                 "assert np.allclose(result, ref_sums(X32.astype(float), lab, 2), atol=1e-5)",
                 "ok"),
    "sums-labels-short": ("result = su.cluster_sums(X, lab[:5], 2)", "raise"),
    "sums-labels-long": ("result = su.cluster_sums(X, np.r_[lab, lab], 2)", "raise"),
    "sums-label-neg": ("l = lab.copy(); l[3] = -1; result = su.cluster_sums(X, l, 2)", "raise"),
    "sums-label-eq-K": ("l = lab.copy(); l[3] = 2; result = su.cluster_sums(X, l, 2)", "raise"),
    "sums-label-huge": ("l = lab.copy(); l[3] = 2**62; result = su.cluster_sums(X, l, 2)",
                        "raise"),
    "sums-K-0": ("result = su.cluster_sums(X, lab, 0)", "raise"),
    "sums-K-neg": ("result = su.cluster_sums(X, lab, -5)", "raise"),
    "sums-K-huge": ("result = su.cluster_sums(X, lab, 2**62)", "raise"),
    "sums-threads-0": ("result = su.cluster_sums(X, lab, 2, 0)\n"
                       "assert np.allclose(result, ref_sums(X, lab, 2))", "ok"),
    "sums-threads-neg": ("result = su.cluster_sums(X, lab, 2, -7)\n"
                         "assert np.allclose(result, ref_sums(X, lab, 2))", "ok"),
    "sums-threads-huge": ("result = su.cluster_sums(X, lab, 2, 100000)\n"
                          "assert np.allclose(result, ref_sums(X, lab, 2))", "either"),
    "sums-threads-overflow": ("result = su.cluster_sums(X, lab, 2, 2**40)", "raise"),
    "sums-int-X": ("result = su.cluster_sums(X.astype(np.int64), lab, 2)", "raise"),
    "sums-int32-labels": ("result = su.cluster_sums(X, lab.astype(np.int32), 2)", "raise"),
    "sums-float-labels": ("result = su.cluster_sums(X, lab.astype(float), 2)", "raise"),
    "sums-noncontig-X": ("result = su.cluster_sums(nc(X), lab, 2)", "raise"),
    "sums-negstride-X": ("result = su.cluster_sums(rev(X), lab, 2)", "raise"),
    "sums-noncontig-labels": ("result = su.cluster_sums(X[:5], nc(lab), 2)", "raise"),
    "sums-readonly": ("result = su.cluster_sums(ro(X), ro(lab), 2)\n"
                      "assert np.allclose(result, ref_sums(X, lab, 2))", "ok"),
    "sums-zero-rows": ("result = su.cluster_sums(X[:0], lab[:0], 3)\n"
                       "assert result.shape == (3, 3) and not result.any()", "ok"),
    "sums-zero-cols": ("result = su.cluster_sums(np.empty((10, 0)), lab, 2)\n"
                       "assert result.shape == (2, 0)", "ok"),
    "sums-zero-cols-bad-label": ("l = lab.copy(); l[0] = 9\n"
                                 "result = su.cluster_sums(np.empty((10, 0)), l, 2)", "raise"),
    "sums-1D": ("result = su.cluster_sums(X[:, 0].copy(), lab, 2)", "raise"),
    "sums-3D": ("result = su.cluster_sums(X[:, :, None].copy(), lab, 2)", "raise"),
    "sums-None": ("result = su.cluster_sums(None, lab, 2)", "raise"),
    "sums-list": ("result = su.cluster_sums(X.tolist(), lab, 2)", "raise"),
    # --- _sums.contingency ---------------------------------------------------
    "cont-ok": ("result = su.contingency(lab, lab, 2, 2)\n"
                "assert (result == np.diag([5, 5])).all()", "ok"),
    "cont-length": ("result = su.contingency(lab, lab[:4], 2, 2)", "raise"),
    "cont-out-of-range": ("result = su.contingency(lab, lab, 1, 2)", "raise"),
    "cont-negative": ("result = su.contingency(-lab, lab, 2, 2)", "raise"),
    "cont-k0": ("result = su.contingency(lab, lab, 0, 2)", "raise"),
    "cont-k-neg": ("result = su.contingency(lab, lab, 2, -1)", "raise"),
    "cont-k-huge": ("result = su.contingency(lab, lab, 2**40, 2**40)", "raise"),
    "cont-empty": ("result = su.contingency(lab[:0], lab[:0], 2, 3)\n"
                   "assert result.shape == (2, 3) and not result.any()", "ok"),
    "cont-int32": ("result = su.contingency(lab.astype(np.int32), lab, 2, 2)", "raise"),
    "cont-noncontig": ("result = su.contingency(nc(lab), nc(lab), 2, 2)", "raise"),
    "cont-readonly": ("result = su.contingency(ro(lab), ro(lab), 2, 2)\n"
                      "assert result.sum() == 10", "ok"),
    # --- _gram ---------------------------------------------------------------
    "gram-ok": ("result = gr.gaussian_gram(X, None, 1.0)\n"
                "assert np.allclose(result, ref_gram(X, X, 1.0))", "ok"),
    "gram-Y": ("result = gr.gaussian_gram(X, C, 1.0)\n"
               "assert np.allclose(result, ref_gram(X, C, 1.0))", "ok"),
    "gram-direct": ("result = gr.gaussian_gram(X, C, 1.0, 0, False)\n"
                    "assert np.allclose(result, ref_gram(X, C, 1.0))", "ok"),
    "gram-f32": ("result = gr.gaussian_gram(X32, None, 1.0)\n"
                 "assert np.allclose(result, ref_gram(X, X, 1.0), atol=1e-5)", "ok"),
    "gram-Y-features": ("result = gr.gaussian_gram(X, np.ones((4, 5)), 1.0)", "raise"),
    "gram-Y-dtype": ("result = gr.gaussian_gram(X, C32, 1.0)", "raise"),
    "gram-int": ("result = gr.gaussian_gram(X.astype(np.int64), None, 1.0)", "raise"),
    "gram-f16": ("result = gr.gaussian_gram(X.astype(np.float16), None, 1.0)", "raise"),
    "gram-complex": ("result = gr.gaussian_gram(X + 0j, None, 1.0)", "raise"),
    "gram-bool": ("result = gr.gaussian_gram(X > 0, None, 1.0)", "raise"),
    "gram-object": ("result = gr.gaussian_gram(X.astype(object), None, 1.0)", "raise"),
    "gram-1D": ("result = gr.gaussian_gram(X[:, 0].copy(), None, 1.0)", "raise"),
    "gram-3D": ("result = gr.gaussian_gram(X[:, :, None].copy(), None, 1.0)", "raise"),
    "gram-3D-Y": ("result = gr.gaussian_gram(X, X[:, :, None].copy(), 1.0)", "raise"),
    "gram-list": ("result = gr.gaussian_gram(X.tolist(), None, 1.0)", "raise"),
    "gram-None": ("result = gr.gaussian_gram(None, None, 1.0)", "raise"),
    "gram-noncontig": ("result = gr.gaussian_gram(nc(X), None, 1.0)", "raise"),
    "gram-negstride": ("result = gr.gaussian_gram(rev(X), None, 1.0)", "raise"),
    "gram-noncontig-Y": ("result = gr.gaussian_gram(X, nc(X), 1.0)", "raise"),
    "gram-readonly": ("result = gr.gaussian_gram(ro(X), ro(C), 1.0)\n"
                      "assert np.allclose(result, ref_gram(X, C, 1.0))", "ok"),
    "gram-zero-rows": ("result = gr.gaussian_gram(X[:0], None, 1.0)\n"
                       "assert result.shape == (0, 0)", "ok"),
    "gram-zero-rows-Y": ("result = gr.gaussian_gram(X, X[:0], 1.0)\n"
                         "assert result.shape == (10, 0)", "ok"),
    "gram-zero-cols": ("result = gr.gaussian_gram(np.empty((4, 0)), None, 1.0)", "raise"),
    "gram-sigma-0": ("result = gr.gaussian_gram(X, None, 0.0)", "raise"),
    "gram-sigma-neg": ("result = gr.gaussian_gram(X, None, -1.0)", "raise"),
    "gram-sigma-inf": ("result = gr.gaussian_gram(X, None, float('inf'))", "raise"),
    "gram-sigma-nan": ("result = gr.gaussian_gram(X, None, float('nan'))", "raise"),
    "gram-nan-X": ("Z = X.copy(); Z[0, 0] = np.nan\n"
                   "result = gr.gaussian_gram(Z, None, 1.0)", "either-nan"),
    "gram-threads-neg": ("result = gr.gaussian_gram(X, None, 1.0, -3)\n"
                         "assert np.allclose(result, ref_gram(X, X, 1.0))", "ok"),
    "gram-threads-huge": ("result = gr.gaussian_gram(X, None, 1.0, 100000)\n"
                          "assert np.allclose(result, ref_gram(X, X, 1.0))", "either"),
    "gram-threads-overflow": ("result = gr.gaussian_gram(X, None, 1.0, 2**40)", "raise"),
    "gram-out-shape": ("result = gr.gaussian_gram(X, None, 1.0, 0, True, np.empty((3, 3)))",
                       "raise"),
    "gram-out-dtype": ("result = gr.gaussian_gram(X, None, 1.0, 0, True,"
                       " np.empty((10, 10), np.float32))", "raise"),
    "gram-out-noncontig": ("result = gr.gaussian_gram(X, None, 1.0, 0, True,"
                           " np.empty((10, 20))[:, ::2])", "raise"),
    "gram-out-readonly": ("result = gr.gaussian_gram(X, None, 1.0, 0, True,"
                          " ro(np.empty((10, 10))))", "raise"),
    "gram-out-list": ("result = gr.gaussian_gram(X, None, 1.0, 0, True, [[0.0]])", "raise"),
    "matmat-ok": ("V = np.ones((10, 2)); result = gr.gram_matmat(X, None, V, 1.0)\n"
                  "assert np.allclose(result, ref_gram(X, X, 1.0) @ V)", "ok"),
    "matmat-Y": ("V = np.ones((2, 3)); result = gr.gram_matmat(X, C, V, 1.0)\n"
                 "assert np.allclose(result, ref_gram(X, C, 1.0) @ V)", "ok"),
    "matmat-V-rows": ("result = gr.gram_matmat(X, None, np.ones((4, 2)), 1.0)", "raise"),
    "matmat-V-rows-Y": ("result = gr.gram_matmat(X, C, np.ones((10, 2)), 1.0)", "raise"),
    "matmat-V-1D": ("result = gr.gram_matmat(X, None, np.ones(10), 1.0)", "raise"),
    "matmat-V-3D": ("result = gr.gram_matmat(X, None, np.ones((10, 2, 1)), 1.0)", "raise"),
    "matmat-V-dtype": ("result = gr.gram_matmat(X, None, np.ones((10, 2), np.float32), 1.0)",
                       "raise"),
    "matmat-V-noncontig": ("result = gr.gram_matmat(X, None, nc(np.ones((10, 4))), 1.0)",
                           "raise"),
    "matmat-V-readonly": ("V = ro(np.ones((10, 2))); result = gr.gram_matmat(X, None, V, 1.0)\n"
                          "assert np.allclose(result, ref_gram(X, X, 1.0) @ V)", "ok"),
    "matmat-V-zero-cols": ("result = gr.gram_matmat(X, None, np.ones((10, 0)), 1.0)\n"
                           "assert result.shape == (10, 0)", "ok"),
    "matmat-V-None": ("result = gr.gram_matmat(X, None, None, 1.0)", "raise"),
    "matmat-zero-rows": ("result = gr.gram_matmat(X[:0], None, np.ones((0, 2)), 1.0)\n"
                         "assert result.shape == (0, 2)", "ok"),
    "matmat-sigma-0": ("result = gr.gram_matmat(X, None, np.ones((10, 2)), 0.0)", "raise"),
    "matmat-1D-X": ("result = gr.gram_matmat(X[:, 0].copy(), None, np.ones((10, 2)), 1.0)",
                    "raise"),
    "matmat-threads-huge": ("V = np.ones((10, 2))\n"
                            "result = gr.gram_matmat(X, None, V, 1.0, 100000)\n"
                            "assert np.allclose(result, ref_gram(X, X, 1.0) @ V)", "either"),
    "expneg-ok": ("x = -np.linspace(0, 50, 7); result = gr.expneg(x)\n"
                  "assert np.allclose(result, np.exp(x), rtol=1e-12, atol=0)", "ok"),
    "expneg-2D": ("result = gr.expneg(-np.ones((3, 3)))", "raise"),
    "expneg-int": ("result = gr.expneg(-np.ones(3, dtype=np.int64))", "raise"),
    "expneg-out-short": ("result = gr.expneg(-np.ones(5), np.empty(3))", "raise"),
    "expneg-out-2D": ("result = gr.expneg(-np.ones(5), np.empty((5, 2)))", "raise"),
    "expneg-out-readonly": ("result = gr.expneg(-np.ones(5), ro(np.empty(5)))", "raise"),
    "expneg-noncontig": ("result = gr.expneg(nc(-np.ones(6)))", "raise"),
    "expneg-empty": ("result = gr.expneg(np.empty(0))\nassert result.shape == (0,)", "ok"),
    "expneg-list": ("result = gr.expneg([-1.0, -2.0])", "raise"),
    "expneg-scalar": ("result = gr.expneg(np.float64(-1.0))", "raise"),
    # --- _kmeans -------------------------------------------------------------
    "km-lloyd-ok": ("c = C.copy(); result = km.lloyd(X, None, c, 10, 0.0)\n"
                    "l = result[0]; assert l.min() >= 0 and l.max() < 2", "ok"),
    "km-lloyd-f32": ("c = C32.copy(); result = km.lloyd(X32, None, c, 10, 0.0)", "ok"),
    "km-online-ok": ("c = C.copy(); result = km.online(X, None, c, 10, 0.0)", "ok"),
    "km-centers-features": ("result = km.lloyd(X, None, np.ones((2, 4)), 10, 0.0)", "raise"),
    "km-centers-dtype": ("result = km.lloyd(X, None, C32.copy(), 10, 0.0)", "raise"),
    "km-centers-readonly": ("result = km.lloyd(X, None, ro(C), 10, 0.0)", "raise"),
    "km-centers-noncontig": ("result = km.lloyd(X, None, nc(np.ones((2, 6))), 10, 0.0)",
                             "raise"),
    "km-X-noncontig": ("result = km.lloyd(nc(np.ones((10, 6))), None, C.copy(), 10, 0.0)",
                       "raise"),
    "km-X-negstride": ("result = km.lloyd(rev(X), None, C.copy(), 10, 0.0)", "raise"),
    "km-X-readonly": ("c = C.copy(); result = km.lloyd(ro(X), None, c, 10, 0.0)", "ok"),
    "km-X-int": ("result = km.lloyd(X.astype(np.int64), None, C.copy(), 10, 0.0)", "raise"),
    "km-X-1D": ("result = km.lloyd(X[:, 0].copy(), None, C.copy(), 10, 0.0)", "raise"),
    "km-X-3D": ("result = km.lloyd(X[:, :, None].copy(), None, C.copy(), 10, 0.0)", "raise"),
    "km-X-empty": ("result = km.lloyd(X[:0], None, C.copy(), 10, 0.0)", "raise"),
    "km-X-zero-cols": ("result = km.lloyd(np.empty((10, 0)), None, np.empty((2, 0)), 10, 0.0)",
                       "raise"),
    "km-K-0": ("result = km.lloyd(X, None, np.empty((0, 3)), 10, 0.0)", "raise"),
    "km-K-gt-n": ("result = km.lloyd(X[:1].copy(), None, C.copy(), 10, 0.0)", "raise"),
    "km-K-eq-n": ("c = X.copy(); result = km.lloyd(X, None, c, 10, 0.0)\n"
                  "assert result[1] == 0 and sorted(result[0]) == list(range(10))", "ok"),
    "km-max_iter-0": ("result = km.lloyd(X, None, C.copy(), 0, 0.0)", "raise"),
    "km-max_iter-neg": ("result = km.lloyd(X, None, C.copy(), -5, 0.0)", "raise"),
    "km-max_iter-overflow": ("result = km.lloyd(X, None, C.copy(), 2**40, 0.0)", "raise"),
    "km-tol-nan": ("result = km.lloyd(X, None, C.copy(), 10, float('nan'))", "raise"),
    "km-tol-neg": ("result = km.lloyd(X, None, C.copy(), 10, -1.0)", "raise"),
    "km-method-bogus": ("result = km.lloyd(X, None, C.copy(), 10, 0.0, 'bogus')", "raise"),
    "km-method-None": ("result = km.lloyd(X, None, C.copy(), 10, 0.0, None)", "raise"),
    "km-threads-neg": ("result = km.lloyd(X, None, C.copy(), 10, 0.0, 'auto', -4)", "ok"),
    "km-threads-huge": ("result = km.lloyd(X, None, C.copy(), 10, 0.0, 'auto', 100000)",
                        "either"),
    "km-threads-overflow": ("result = km.lloyd(X, None, C.copy(), 10, 0.0, 'auto', 2**40)",
                            "raise"),
    "km-weight-short": ("result = km.lloyd(X, np.ones(3), C.copy(), 10, 0.0)", "raise"),
    "km-weight-2D": ("result = km.lloyd(X, np.ones((10, 1)), C.copy(), 10, 0.0)", "raise"),
    "km-weight-dtype": ("result = km.lloyd(X, np.ones(10, np.float32), C.copy(), 10, 0.0)",
                        "raise"),
    "km-weight-noncontig": ("result = km.lloyd(X, nc(np.ones(20)), C.copy(), 10, 0.0)",
                            "raise"),
    "km-weight-list": ("result = km.lloyd(X, [1.0] * 10, C.copy(), 10, 0.0)", "either"),
    "km-weight-readonly": ("result = km.lloyd(X, ro(np.ones(10)), C.copy(), 10, 0.0)", "ok"),
    "km-weight-zero": ("result = km.lloyd(X, np.zeros(10), C.copy(), 10, 0.0)", "either"),
    "km-weight-nan": ("result = km.lloyd(X, np.full(10, np.nan), C.copy(), 10, 0.0)",
                      "either-nan"),
    "km-weight-negative": ("result = km.lloyd(X, -np.ones(10), C.copy(), 10, 0.0)",
                           "either-nan"),
    "km-identical-points": ("Z = np.ones((10, 3)); c = Z[:2].copy()\n"
                            "result = km.lloyd(Z, None, c, 10, 0.0)", "ok"),
    "km-nan-centers": ("c = C.copy(); c[0, 0] = np.nan\n"
                       "result = km.lloyd(X, None, c, 10, 0.0)", "either-nan"),
    "assign-ok": ("result = km.assign(X, C)\n"
                  "d = ((X[:, None] - C[None]) ** 2).sum(-1)\n"
                  "assert (result[0] == d.argmin(1)).all()\n"
                  "assert np.allclose(result[1], d.min(1))", "ok"),
    "assign-zero-rows": ("result = km.assign(X[:0], C)\nassert result[0].shape == (0,)", "ok"),
    "assign-K-0": ("result = km.assign(X, np.empty((0, 3)))", "raise"),
    "assign-features": ("result = km.assign(X, np.ones((2, 4)))", "raise"),
    "assign-zero-cols": ("result = km.assign(np.empty((5, 0)), np.empty((2, 0)))", "raise"),
    "assign-dtype-mix": ("result = km.assign(X, C32)", "raise"),
    "assign-K-huge-f64": ("result = km.assign(X, np.zeros((1, 3)))\n"
                          "assert (result[0] == 0).all()", "ok"),
    "assign-method": ("result = km.assign(X, C, 'gemm')", "ok"),
    "assign-method-bogus": ("result = km.assign(X, C, 'x')", "raise"),
    "assign-noncontig": ("result = km.assign(nc(np.ones((4, 6))), C)", "raise"),
    "assign-threads-huge": ("result = km.assign(X, C, 'auto', 100000)", "either"),
    "pp-ok": ("cl = np.full(10, np.inf); result = km.pp_step(X, None,"
              " np.array([0, 3], np.int64), cl)", "ok"),
    "pp-cand-oob": ("cl = np.full(10, np.inf)\n"
                    "result = km.pp_step(X, None, np.array([0, 10], np.int64), cl)", "raise"),
    "pp-cand-neg": ("cl = np.full(10, np.inf)\n"
                    "result = km.pp_step(X, None, np.array([-1], np.int64), cl)", "raise"),
    "pp-cand-empty": ("cl = np.full(10, np.inf)\n"
                      "result = km.pp_step(X, None, np.array([], np.int64), cl)", "raise"),
    "pp-closest-short": ("result = km.pp_step(X, None, np.array([0], np.int64),"
                         " np.full(3, np.inf))", "raise"),
    "pp-closest-readonly": ("result = km.pp_step(X, None, np.array([0], np.int64),"
                            " ro(np.full(10, np.inf)))", "raise"),
    "pp-closest-f32": ("result = km.pp_step(X, None, np.array([0], np.int64),"
                       " np.full(10, np.inf, np.float32))", "raise"),
    "pp-X-empty": ("result = km.pp_step(X[:0], None, np.array([0], np.int64),"
                   " np.full(0, np.inf))", "raise"),
    "pp-cand-int32": ("result = km.pp_step(X, None, np.array([0], np.int32),"
                      " np.full(10, np.inf))", "raise"),
    "order-ok": ("key = np.array([3.0, 0.0, np.inf, 1.0, 0.0])\n"
                 "result = km.stable_order(key)\n"
                 "assert (result == np.argsort(key, kind='stable')).all()", "ok"),
    "order-empty": ("result = km.stable_order(np.empty(0))\nassert result.shape == (0,)", "ok"),
    "order-big": ("key = np.random.default_rng(0).random(70000)\n"
                  "result = km.stable_order(key, 0)\n"
                  "assert (result == np.argsort(key, kind='stable')).all()", "ok"),
    "order-negative": ("result = km.stable_order(np.array([1.0, -2.0]))", "raise"),
    "order-minus-zero": ("result = km.stable_order(np.array([-0.0]))", "raise"),
    "order-nan": ("result = km.stable_order(np.array([np.nan, 1.0]))", "raise"),
    "order-f32": ("result = km.stable_order(np.ones(3, np.float32))", "raise"),
    "order-noncontig": ("result = km.stable_order(nc(np.ones(6)))", "raise"),
    "order-threads-huge": ("result = km.stable_order(np.ones(70000), 100000)", "either"),
    "cumsum-ok": ("v = np.arange(5.0); o = np.array([4, 0, 3, 1, 2], np.int64)\n"
                  "result = km.ordered_cumsum(v, o, np.ones(5))\n"
                  "assert (result == np.cumsum(v[o])).all()", "ok"),
    "cumsum-empty": ("result = km.ordered_cumsum(np.empty(0), np.empty(0, np.int64))", "ok"),
    "cumsum-oob": ("result = km.ordered_cumsum(np.ones(3), np.array([0, 1, 3], np.int64))",
                   "raise"),
    "cumsum-neg": ("result = km.ordered_cumsum(np.ones(3), np.array([0, -1, 2], np.int64))",
                   "raise"),
    "cumsum-short-order": ("result = km.ordered_cumsum(np.ones(3), np.zeros(2, np.int64))",
                           "raise"),
    "cumsum-short-weights": ("result = km.ordered_cumsum(np.ones(3), np.zeros(3, np.int64),"
                             " np.ones(2))", "raise"),
    "cumsum-order-int32": ("result = km.ordered_cumsum(np.ones(3), np.zeros(3, np.int32))",
                           "raise"),
    "uses_gemm-bogus": ("result = km.uses_gemm(3, 'bogus')", "raise"),
    "uses_gemm-neg": ("result = km.uses_gemm(-3)", "either"),
    # --- _pairwise -----------------------------------------------------------
    "pf-ok": ("result = pw.pairs_full(X, P, np.eye(3), True, True)\n"
              "d = np.linalg.norm(X[P[:, 0]] - X[P[:, 1]], axis=1)\n"
              "assert np.isclose(result[0], d.sum()) and np.allclose(result[2], d)", "ok"),
    "pf-oob": ("result = pw.pairs_full(X, np.array([[0, 10]], np.int64), np.eye(3))", "raise"),
    "pf-neg": ("result = pw.pairs_full(X, np.array([[-1, 0]], np.int64), np.eye(3))", "raise"),
    "pf-huge-index": ("result = pw.pairs_full(X, np.array([[0, 2**62]], np.int64), np.eye(3))",
                      "raise"),
    "pf-shape": ("result = pw.pairs_full(X, np.zeros((2, 3), np.int64), np.eye(3))", "raise"),
    "pf-pairs-int32": ("result = pw.pairs_full(X, P.astype(np.int32), np.eye(3))", "raise"),
    "pf-pairs-float": ("result = pw.pairs_full(X, P.astype(float), np.eye(3))", "raise"),
    "pf-pairs-noncontig": ("result = pw.pairs_full(X, np.asfortranarray(P), np.eye(3))",
                           "raise"),
    "pf-pairs-readonly": ("result = pw.pairs_full(X, ro(P), ro(np.eye(3)))", "ok"),
    "pf-Lt-rows": ("result = pw.pairs_full(X, P, np.eye(4))", "raise"),
    "pf-Lt-zero-cols": ("result = pw.pairs_full(X, P, np.empty((3, 0)))", "raise"),
    "pf-X-zero-cols": ("result = pw.pairs_full(np.empty((10, 0)), P, np.empty((0, 2)))",
                       "raise"),
    "pf-X-f32": ("result = pw.pairs_full(X32, P, np.eye(3))", "ok"),  # float32 X is read as is
    "pf-X-noncontig": ("result = pw.pairs_full(nc(np.ones((10, 6))), P, np.eye(3))", "raise"),
    "pf-no-pairs": ("result = pw.pairs_full(X, np.empty((0, 2), np.int64), np.eye(3),"
                    " True, True)\nassert result[0] == 0", "ok"),
    "pf-empty-X-with-pairs": ("result = pw.pairs_full(X[:0], P, np.eye(3))", "raise"),
    "pf-self-pair": ("result = pw.pairs_full(X, np.array([[1, 1]], np.int64), np.eye(3),"
                     " True, True)", "either-nan"),
    "pf-duplicate-points": ("Z = np.ones((4, 3))\n"
                            "result = pw.pairs_full(Z, np.array([[0, 1]], np.int64),"
                            " np.eye(3), True, True)", "either-nan"),
    "pf-threads-huge": ("result = pw.pairs_full(X, P, np.eye(3), True, False, 100000)",
                        "either"),
    "pd-ok": ("result = pw.pairs_diag(X, P, np.ones(3))\n"
              "d = np.linalg.norm(X[P[:, 0]] - X[P[:, 1]], axis=1)\n"
              "assert np.isclose(result[0], d.sum())", "ok"),
    "pd-all-pairs": ("result = pw.pairs_diag(X, None, np.ones(3))\n"
                     "i, j = np.triu_indices(10, 1)\n"
                     "assert np.isclose(result[0], np.linalg.norm(X[i] - X[j], axis=1).sum())",
                     "ok"),
    "pd-a-len": ("result = pw.pairs_diag(X, P, np.ones(4))", "raise"),
    "pd-a-2D": ("result = pw.pairs_diag(X, P, np.ones((3, 1)))", "raise"),
    "pd-a-noncontig": ("result = pw.pairs_diag(X, P, nc(np.ones(6)))", "raise"),
    "pd-oob": ("result = pw.pairs_diag(X, np.array([[0, 10]], np.int64), np.ones(3))", "raise"),
    "pd-pairs-list": ("result = pw.pairs_diag(X, [[0, 1]], np.ones(3))", "raise"),
    "pd-pairs-int32": ("result = pw.pairs_diag(X, P.astype(np.int32), np.ones(3))", "raise"),
    "pd-no-pairs": ("result = pw.pairs_diag(X, np.empty((0, 2), np.int64), np.ones(3))\n"
                    "assert result[0] == 0", "ok"),
    "pd-empty-X": ("result = pw.pairs_diag(X[:0], None, np.ones(3))\n"
                   "assert result[0] == 0", "ok"),
    "pd-one-row": ("result = pw.pairs_diag(X[:1].copy(), None, np.ones(3))\n"
                   "assert result[0] == 0", "ok"),
    "pd-zero-cols": ("result = pw.pairs_diag(np.empty((10, 0)), None, np.empty(0))", "raise"),
    "pd-a-negative": ("result = pw.pairs_diag(X, P, -np.ones(3))", "either-nan"),
    "pd-a-nan": ("result = pw.pairs_diag(X, P, np.full(3, np.nan))", "either-nan"),
    "pd-pairs-None-huge-threads-1row": ("result = pw.pairs_diag(X[:1].copy(), None,"
                                        " np.ones(3), True, True, 100000)", "ok"),
    "pd-threads-huge": ("result = pw.pairs_diag(X, None, np.ones(3), True, True, 100000)",
                        "either"),
    "ap-ok": ("result = pw.allpairs_full(X, X)\n"
              "i, j = np.triu_indices(10, 1)\n"
              "assert np.isclose(result[0], np.linalg.norm(X[i] - X[j], axis=1).sum())", "ok"),
    "ap-rows": ("result = pw.allpairs_full(X, X[:5].copy())", "raise"),
    "ap-zero-cols-Y": ("result = pw.allpairs_full(X, np.empty((10, 0)))", "raise"),
    "ap-zero-rows": ("result = pw.allpairs_full(X[:0], X[:0])\nassert result[0] == 0", "ok"),
    "ap-one-row": ("result = pw.allpairs_full(X[:1].copy(), X[:1].copy())\n"
                   "assert result[0] == 0", "ok"),
    "ap-f32": ("result = pw.allpairs_full(X32, X32)", "raise"),
    "ap-noncontig": ("result = pw.allpairs_full(nc(np.ones((10, 6))), X)", "raise"),
    "ap-readonly": ("result = pw.allpairs_full(ro(X), ro(X))", "ok"),
    "ap-duplicate-points": ("Z = np.ones((4, 3)); result = pw.allpairs_full(Z, Z)",
                            "either-nan"),
    "ap-threads-huge": ("result = pw.allpairs_full(X, X, 100000)", "either"),
    "cp-ok": ("result = pw.crosspairs_full(X[:4].copy(), X[:4].copy(), X[4:].copy(),"
              " X[4:].copy())\n"
              "D = (X[:4, None] - X[None, 4:]).reshape(-1, X.shape[1])\n"
              "assert np.isclose(result[0], np.linalg.norm(D, axis=1).sum())", "ok"),
    "cp-rows": ("result = pw.crosspairs_full(X, X[:5].copy(), X, X)", "raise"),
    "cp-cols": ("result = pw.crosspairs_full(X, X, np.ones((3, 2)), np.ones((3, 2)))",
                "raise"),
    "cp-zero-cols": ("result = pw.crosspairs_full(np.empty((3, 0)), np.empty((3, 0)),"
                     " np.empty((2, 0)), np.empty((2, 0)))", "raise"),
    "cp-zero-rows": ("result = pw.crosspairs_full(X[:0], X[:0], X, X)\n"
                     "assert result[0] == 0", "ok"),
    "cp-f32": ("result = pw.crosspairs_full(X32, X32, X32, X32)", "raise"),
    "cp-noncontig": ("result = pw.crosspairs_full(nc(np.ones((10, 6))), X, X, X)", "raise"),
    "cp-readonly": ("result = pw.crosspairs_full(ro(X), ro(X), ro(X), ro(X))", "ok"),
    "cp-duplicate-points": ("Z = np.ones((4, 3)); result = pw.crosspairs_full(Z, Z, Z, Z)",
                            "either-nan"),
    "cp-threads-huge": ("result = pw.crosspairs_full(X, X, X, X, 100000)", "either"),
}

# The toolbox's bridges (mixture E/M steps, LVQ and SOM runs).
_MX = "from metriclust._kernels import _mixture as mx\n"
_PT = ("from metriclust._kernels import _prototypes as pt\n"
       "y = lab.copy(); pl = np.array([0, 1], dtype=np.int64)\n"
       "order = np.arange(10, dtype=np.int64)\n"
       "grid = np.array([[0.0, 0.0], [0.0, 1.0]])\n")
BRIDGE.update({
    "mx-estep-diag-ok": (_MX + "result = mx.estep(X, C, np.ones((2, 3)), np.zeros(2), True, True)\n"
                         "assert np.allclose(result[0].sum(1), 1)", "ok"),
    "mx-estep-full-ok": (_MX + "result = mx.estep(X, C, np.broadcast_to(np.eye(3), (2, 3, 3)),"
                         " np.zeros(2))\nassert np.allclose(result[0].sum(1), 1)", "ok"),
    "mx-estep-prec-shape": (_MX + "result = mx.estep(X, C, np.ones((2, 4)), np.zeros(2))",
                            "raise"),
    "mx-estep-prec-3x": (_MX + "result = mx.estep(X, C, np.ones((3, 3, 3)), np.zeros(2))",
                         "raise"),
    "mx-estep-means-features": (_MX + "result = mx.estep(X, np.ones((2, 4)), np.ones((2, 4)),"
                                " np.zeros(2))", "raise"),
    "mx-estep-lognorm-len": (_MX + "result = mx.estep(X, C, np.ones((2, 3)), np.zeros(5))",
                             "raise"),
    "mx-estep-K0": (_MX + "result = mx.estep(X, C[:0], np.ones((0, 3)), np.zeros(0))",
                    "raise"),
    "mx-estep-f32": (_MX + "result = mx.estep(X32, C, np.ones((2, 3)), np.zeros(2))", "raise"),
    "mx-estep-noncontig": (_MX + "result = mx.estep(nc(X), C, np.ones((2, 3)), np.zeros(2))",
                           "raise"),
    "mx-estep-zero-rows": (_MX + "result = mx.estep(X[:0], C, np.ones((2, 3)), np.zeros(2))\n"
                           "assert result[0].shape == (0, 2)", "ok"),
    "mx-estep-minus-inf": (_MX + "result = mx.estep(X, C, np.ones((2, 3)),"
                           " np.full(2, -np.inf))", "either-nan"),
    "mx-estep-threads-huge": (_MX + "result = mx.estep(X, C, np.ones((2, 3)), np.zeros(2),"
                              " True, True, 100000)", "either"),
    "mx-mstep-ok": (_MX + "r = np.full((10, 2), 0.5); result = mx.mstep(X, r, True)\n"
                    "assert np.allclose(result[1][0], X.mean(0))", "ok"),
    "mx-mstep-rows": (_MX + "result = mx.mstep(X, np.full((9, 2), 0.5), True)", "raise"),
    "mx-mstep-zero-rows": (_MX + "result = mx.mstep(X[:0], np.full((0, 2), 0.5), False)",
                           "raise"),
    "mx-mstep-K0": (_MX + "result = mx.mstep(X, np.empty((10, 0)), False)", "raise"),
    "pt-lvq-ok": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl, order, 'lvq1',"
                  " 0.1, 0.3, 0.2)", "ok"),
    "pt-lvq-empty-order": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl, order[:0],"
                           " 'lvq3', 0.1, 0.3, 0.2)\nassert np.array_equal(P, C)", "ok"),
    "pt-lvq-order-range": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl,"
                           " order + 1, 'lvq1', 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-order-neg": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl, -order,"
                         " 'lvq1', 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-y-short": (_PT + "P = C.copy(); result = pt.lvq_train(X, y[:5], P, pl, order[:5],"
                       " 'lvq1', 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-labels-len": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl[:1], order,"
                          " 'lvq1', 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-features": (_PT + "P = np.ones((2, 4)); result = pt.lvq_train(X, y, P, pl, order,"
                        " 'lvq1', 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-variant": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl, order, 'lvq9',"
                       " 0.1, 0.3, 0.2)", "raise"),
    "pt-lvq-olvq1-rates": (_PT + "P = C.copy(); result = pt.lvq_train(X, y, P, pl, order,"
                           " 'olvq1', 0.1, 0.3, 0.2, np.ones(1))", "raise"),
    "pt-lvq-readonly-P": (_PT + "result = pt.lvq_train(X, y, ro(C), pl, order, 'lvq1', 0.1,"
                          " 0.3, 0.2)", "raise"),
    "pt-som-ok": (_PT + "W = C.copy(); result = pt.som_train(X, W, grid, order, 0.5, 0.01,"
                  " 1.0, 0.5)\nresult = W", "ok"),
    "pt-som-grid": (_PT + "W = C.copy(); result = pt.som_train(X, W, grid[:1].copy(), order,"
                    " 0.5, 0.01, 1.0, 0.5)", "raise"),
    "pt-som-rate": (_PT + "W = C.copy(); result = pt.som_train(X, W, grid, order, -0.5, 0.01,"
                    " 1.0, 0.5)", "raise"),
    "pt-som-sigma-nan": (_PT + "W = C.copy(); result = pt.som_train(X, W, grid, order, 0.5,"
                         " 0.01, float('nan'), 0.5)", "raise"),
    "pt-som-order-range": (_PT + "W = C.copy(); result = pt.som_train(X, W, grid, order * 9,"
                           " 0.5, 0.01, 1.0, 0.5)", "raise"),
})

_BRIDGE_TIMEOUT = 30.0


def _run_bridge_batch(names):
    """Run the named cases in child interpreters; return name -> outcome dict."""
    results = {}
    todo = list(names)
    env = dict(os.environ, OMP_NUM_THREADS="2", PYTHONFAULTHANDLER="1")
    while todo:
        payload = json.dumps([[n, BRIDGE[n][0]] for n in todo])
        code = (f"TESTS_DIR = {os.path.dirname(os.path.abspath(__file__))!r}\n"
                "PRELUDE = " + repr(_PRELUDE) + "\n" + _RUNNER)
        try:
            proc = subprocess.run([sys.executable, "-c", code], input=payload,
                                  capture_output=True, text=True, timeout=_BRIDGE_TIMEOUT,
                                  env=env)
            out, rc, hung = proc.stdout, proc.returncode, False
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or ""
            if isinstance(out, bytes):
                out = out.decode()
            rc, hung = None, True
        started = None
        for line in out.splitlines():
            if line.startswith("START "):
                started = line[6:]
            elif line.startswith("RESULT "):
                name, res = json.loads(line[7:])
                results[name] = res
                started = None
        if started is not None:
            results[started] = {"kind": "hang" if hung else "crash", "rc": rc}
        elif rc not in (0, None) and not hung:
            # died before any case started
            for n in todo:
                results.setdefault(n, {"kind": "crash", "rc": rc})
        todo = [n for n in todo if n not in results]
        if hung and started is None:
            for n in todo:
                results[n] = {"kind": "hang"}
            todo = []
    return results


@pytest.fixture(scope="module")
def bridge_results():
    return _run_bridge_batch(list(BRIDGE))


_BRIDGE_RAISE_OK = {"ValueError", "TypeError", "MemoryError", "OverflowError"}


@pytest.mark.parametrize("name", list(BRIDGE))
def test_raw_bridge(bridge_results, name):
    expect = BRIDGE[name][1]
    res = bridge_results[name]
    kind = res["kind"]
    assert kind not in ("crash", "hang"), f"{name}: {kind} (rc={res.get('rc')})"
    assert kind != "wrong", f"{name}: wrong answer {res.get('msg')}"
    if kind == "raise":
        allowed = _BRIDGE_RAISE_OK | ({"FloatingPointError"} if expect == "either-nan" else set())
        assert res["type"] in allowed, f"{name}: {res['type']}: {res['msg']}"
        assert expect != "ok", f"{name}: refused a valid call: {res['type']}: {res['msg']}"
        return
    if expect == "either-nan":
        # garbage in (NaN data, a zero distance the caller must not pass):
        # the bridge may propagate it, but it must not crash or hang.
        return
    assert kind == "ok", f"{name}: non-finite result"
    assert expect != "raise", f"{name}: accepted invalid input"
