"""Property-based tests (hypothesis) over every estimator and public function.

Inputs: random shapes, dtypes (float64, float32, int), scales from 1e-300 to
1e300, duplicated rows, constant features, identical rows, and random
parameters (valid and not). Properties, for every input:

1. no crash and no hang (a 60 s alarm per example);
2. either a result in which every float is finite (fitted attributes,
   returned arrays, scores), with no RuntimeWarning (overflow, invalid value)
   on the way,
3. or a ValueError/TypeError whose message names one of the parameters the
   call was given.

The "ci" profile (default, tests/conftest.py) runs a bounded number of
examples per test with a fixed seed; ``pytest tests/test_properties.py
--hypothesis-profile=long`` runs 1000 per test. Inputs that failed once are
kept below as explicit regression tests (``test_regression_*``).
"""

import collections
import signal
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from metriclust import (CPCM, CPDUML, MMC, ConstrainedKMeans, KMeans,  # noqa: E402
                        constraints, datasets, kernels, metrics)
from _reference import float_arrays  # noqa: E402

CLEAR = (ValueError, TypeError)

#: Outcomes of every checked call, by test: printed at the end of the module
#: (run with -s to see them; tests/README.md quotes them).
OUTCOMES = collections.defaultdict(collections.Counter)


@pytest.fixture(scope="module", autouse=True)
def _report_outcomes():
    yield
    total = collections.Counter()
    for test, counts in sorted(OUTCOMES.items()):
        total.update(counts)
        print(f"\n{test}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("all: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))


# ----------------------------------------------------------------------------
# the property
# ----------------------------------------------------------------------------

class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang("call ran for more than 60 s")


def check(call, names):
    """Run ``call()``; assert the property above. ``names``: the parameters
    the call was given (a rejection must name one of them)."""
    old = signal.signal(signal.SIGALRM, _alarm) if hasattr(signal, "SIGALRM") else None
    if old is not None:
        signal.alarm(60)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                result = call()
            except CLEAR as exc:
                OUTCOMES[_current_test()][f"rejected ({type(exc).__name__})"] += 1
                msg = str(exc)
                assert any(name in msg for name in names), (
                    f"{type(exc).__name__} names none of {names}: {msg}")
                return None
    finally:
        if old is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    for arr in float_arrays(result):
        assert np.all(np.isfinite(arr)), f"non-finite output from finite input: {arr!r}"
    OUTCOMES[_current_test()]["finite result"] += 1
    return result


def _current_test():
    import os
    return os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[-1].split(" ")[0]


# ----------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------

_KINDS = ("normal", "blobs", "integers", "duplicates", "constant_column", "identical",
          "one_outlier")


@st.composite
def arrays(draw, min_rows=1, max_rows=30, max_cols=5):
    """A finite 2-D array: shape, dtype, kind and scale are drawn."""
    n = draw(st.integers(min_rows, max_rows))
    p = draw(st.integers(1, max_cols))
    kind = draw(st.sampled_from(_KINDS))
    dtype = draw(st.sampled_from([np.float64, np.float64, np.float32, np.int64]))
    exponent = draw(st.one_of(st.just(0), st.integers(-20, 20),
                              st.sampled_from([-300, -150, 150, 300]), st.integers(-300, 300)))
    offset = draw(st.sampled_from([0.0, 0.0, 1.0, 1e6, -1e12]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "blobs":
        X = rng.standard_normal((n, p)) + 10 * rng.integers(0, 3, size=(n, 1))
    elif kind == "integers":
        X = rng.integers(-3, 4, size=(n, p)).astype(float)
    elif kind == "duplicates":
        X = rng.standard_normal((max(1, n // 3), p))[rng.integers(0, max(1, n // 3), size=n)]
    elif kind == "constant_column":
        X = rng.standard_normal((n, p))
        X[:, rng.integers(0, p)] = 1.0
    elif kind == "identical":
        X = np.tile(rng.standard_normal(p), (n, 1))
    elif kind == "one_outlier":
        X = rng.standard_normal((n, p))
        X[rng.integers(0, n)] *= 1e8
    else:
        X = rng.standard_normal((n, p))
    with np.errstate(over="ignore", under="ignore"):
        X = X * 10.0 ** exponent + offset
        if dtype is np.int64:
            X = np.clip(np.round(X), -2**62, 2**62).astype(np.int64)
        else:
            X = X.astype(dtype)
    if not np.all(np.isfinite(X)):  # float32 overflow: keep it finite (clip)
        X = np.nan_to_num(X, posinf=np.finfo(X.dtype).max, neginf=-np.finfo(X.dtype).max)
    note(f"X: kind={kind} shape={X.shape} dtype={X.dtype} 10**{exponent} + {offset}")
    return X


def _pairs(draw, n, max_pairs=15):
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    m = draw(st.integers(0, max_pairs))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    i = rng.integers(0, n, size=m)
    j = (i + rng.integers(1, n, size=m)) % n
    return np.stack([i, j], axis=1)


seeds = st.integers(0, 2**31 - 1)
n_clusters = st.integers(-1, 6)


# ----------------------------------------------------------------------------
# estimators
# ----------------------------------------------------------------------------

@given(X=arrays(), k=n_clusters, init=st.sampled_from(["k-means++", "random"]),
       n_init=st.integers(1, 3), max_iter=st.integers(1, 50),
       tol=st.sampled_from([0.0, 1e-4, 1.0]), algorithm=st.sampled_from(["lloyd", "online"]),
       weights=st.sampled_from([None, "ones", "random", "zeros_some", "huge", "tiny"]),
       seed=seeds)
def test_kmeans(X, k, init, n_init, max_iter, tol, algorithm, weights, seed):
    rng = np.random.default_rng(seed)
    w = {None: None, "ones": np.ones(len(X)), "random": rng.random(len(X)) + 0.1,
         "zeros_some": np.where(rng.random(len(X)) < 0.3, 0.0, 1.0),
         "huge": np.full(len(X), 1e300), "tiny": np.full(len(X), 1e-300)}[weights]
    if w is not None and not w.any():
        w[0] = 1.0
    names = ["X", "n_clusters", "sample_weight", "n_samples"]
    est = KMeans(k, init=init, n_init=n_init, max_iter=max_iter, tol=tol,
                 algorithm=algorithm, random_state=seed)
    fitted = check(lambda: est.fit(X, sample_weight=w), names)
    if fitted is not None:
        labels = check(lambda: est.predict(X), names)
        assert labels.shape == (len(X),) and labels.min() >= 0 and labels.max() < k
        check(lambda: est.transform(X), names)
        check(lambda: est.score(X), names)


@given(X=arrays(), k=n_clusters, n_init=st.integers(1, 2), max_iter=st.integers(1, 30),
       data=st.data(), seed=seeds)
def test_constrained_kmeans(X, k, n_init, max_iter, data, seed):
    ml = _pairs(data.draw, len(X))
    cl = _pairs(data.draw, len(X))
    est = ConstrainedKMeans(k, n_init=n_init, max_iter=max_iter, random_state=seed)
    fitted = check(lambda: est.fit(X, must_link=ml, cannot_link=cl),
                   ["X", "n_clusters", "must_link", "cannot_link", "n_samples"])
    if fitted is not None:
        check(lambda: est.predict(X), ["X"])


@given(X=arrays(min_rows=2), diagonal=st.booleans(), max_iter=st.integers(1, 30),
       init=st.sampled_from(["identity", "random"]), data=st.data(), seed=seeds)
def test_mmc(X, diagonal, max_iter, init, data, seed):
    sim = _pairs(data.draw, len(X))
    dis = _pairs(data.draw, len(X))
    est = MMC(diagonal=diagonal, max_iter=max_iter, init=init, random_state=seed)
    fitted = check(lambda: est.fit(X, similar=sim, dissimilar=dis),
                   ["X", "similar", "dissimilar", "init"])
    if fitted is not None:
        check(lambda: est.transform(X), ["X"])


@given(X=arrays(min_rows=2), k=n_clusters,
       predictor=st.sampled_from(["linear", "kernel", "stepwise", "lda"]),
       alpha=st.sampled_from([None, 0.0, 1e-6, 1.0, 1e6]),
       n_init=st.integers(1, 2), max_iter=st.integers(1, 10), seed=seeds)
def test_cpcm(X, k, predictor, alpha, n_init, max_iter, seed):
    est = CPCM(k, predictor=predictor, alpha=alpha, n_init=n_init, max_iter=max_iter,
               random_state=seed)
    fitted = check(lambda: est.fit(X), ["X", "n_clusters", "alpha", "n_samples",
                                        "min_cluster_size", "predictor"])
    if fitted is not None:
        check(lambda: est.transform(X), ["X"])
        check(lambda: est.predict(X), ["X"])


@given(X=arrays(min_rows=2, max_rows=25), k=n_clusters,
       sigma=st.sampled_from([1e-3, 0.8, 10.0, 1e6]), lam=st.sampled_from([1e-6, 0.0025, 1e3]),
       kernel=st.sampled_from([None, "rbf"]),
       approximation=st.sampled_from(["auto", "dense", "nystrom", "eig"]),
       n_components=st.integers(1, 8), max_iter=st.integers(1, 10), seed=seeds)
def test_cpduml(X, k, sigma, lam, kernel, approximation, n_components, max_iter, seed):
    est = CPDUML(k, sigma=sigma, lam=lam, kernel=kernel, approximation=approximation,
                 n_components=n_components, n_kernel_components=n_components,
                 max_iter=max_iter, n_init=1, random_state=seed)
    fitted = check(lambda: est.fit(X), ["X", "n_clusters", "sigma", "lam", "n_components",
                                        "n_kernel_components", "approximation", "n_samples"])
    if fitted is not None:
        check(lambda: est.transform(X), ["X"])


# ----------------------------------------------------------------------------
# functions
# ----------------------------------------------------------------------------

labels_strategy = st.lists(st.integers(-2, 4), min_size=0, max_size=30)


@given(a=labels_strategy, data=st.data())
def test_label_metrics(a, data):
    b = data.draw(st.lists(st.integers(0, 5), min_size=len(a), max_size=len(a)))
    names = ["labels_true", "labels_pred"]
    for fn in (metrics.contingency_matrix, metrics.rand_index, metrics.adjusted_rand_index,
               metrics.variation_of_information, metrics.normalized_mutual_info,
               metrics.purity, metrics.entropy, metrics.clustering_accuracy,
               metrics.pairwise_accuracy):
        check(lambda: fn(np.array(a), np.array(b)), names)
    check(lambda: metrics.variation_of_information(a, b, normalized=True), names)
    check(lambda: metrics.entropy(a, b, normalized=True), names)


@given(X=arrays(), data=st.data())
def test_blur_ratio(X, data):
    labels = data.draw(st.lists(st.integers(0, 3), min_size=len(X), max_size=len(X)))
    check(lambda: metrics.blur_ratio(X, np.array(labels)), ["X", "labels"])


@given(X=arrays(), sigma=st.one_of(st.sampled_from([1e-300, 1e-3, 1.0, 1e300, 0.0, -1.0]),
                                   st.floats(1e-6, 1e6)),
       k=st.integers(0, 3), seed=seeds)
def test_gram_functions(X, sigma, k, seed):
    names = ["X", "Y", "V", "sigma", "n_components", "max_samples"]
    check(lambda: kernels.gaussian_gram(X, sigma=sigma), names)
    check(lambda: kernels.gaussian_gram(X, X[:2], sigma=sigma), names)
    V = np.random.default_rng(seed).standard_normal((len(X), k))
    check(lambda: kernels.gram_matmat(X, V, sigma=sigma), names)
    check(lambda: kernels.median_pairwise_distance(X, random_state=seed), names)
    check(lambda: kernels.nystrom_factor(X, k, sigma=sigma, random_state=seed), names)
    check(lambda: kernels.top_eigenpairs(X, k, sigma=sigma, random_state=seed), names)
    nys = kernels.Nystrom(k, sigma=sigma, random_state=seed)
    if check(lambda: nys.fit(X), names) is not None:
        check(lambda: nys.transform(X), names)


@given(n=st.integers(-1, 25), data=st.data(), seed=seeds)
def test_constraint_functions(n, data, seed):
    pairs = _pairs(data.draw, max(n, 0))
    check(lambda: constraints.connected_components(pairs, n), ["pairs", "n_samples"])
    y = data.draw(st.lists(st.integers(0, 3), min_size=max(n, 0), max_size=max(n, 0)))
    ns, nd = data.draw(st.integers(-1, 20)), data.draw(st.integers(-1, 20))
    check(lambda: constraints.pairs_from_labels(np.array(y), ns, nd, random_state=seed),
          ["y", "n_similar", "n_dissimilar"])
    ratio = data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0, 1.5]))
    check(lambda: constraints.sample_similar_pairs(np.array(y), ratio, random_state=seed),
          ["y", "target_component_ratio"])


@given(n=st.integers(-1, 60), noise=st.sampled_from([0.0, 0.1, 1e300, -1.0]), seed=seeds,
       which=st.sampled_from(["parallel_lines", "parallel_clouds", "concentric_circles",
                              "moons", "xing_artificial"]))
def test_dataset_generators(n, noise, seed, which):
    if which == "xing_artificial":
        call = lambda: datasets.make_xing_artificial(1, n_samples=n, random_state=seed)  # noqa: E731
        names = ["n_samples"]
    else:
        fn = getattr(datasets, f"make_{which}")
        call = lambda: fn(n_samples=n, noise=noise, random_state=seed)  # noqa: E731
        names = ["n_samples", "noise"]
    check(call, names)
