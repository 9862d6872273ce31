"""LVQ (metriclust.lvq, csrc/prototypes.c): the C updates against a slow
Python transcription of the notes' rules, single updates that show the notes'
behaviour, and accuracy on iris / wine against 1-NN."""

import numpy as np
import pytest

from metriclust import LVQ
from metriclust._kernels import _prototypes

from _reference import sq_distances


def ref_lvq(X, y, P, plab, order, variant, a0, w, eps):
    """One update per visited sample, as the notes (and LVQ_PAK) state them."""
    P = P.copy()
    rates = np.full(len(P), a0)
    s = (1 - w) / (1 + w)
    T = len(order)

    def window(da, db):
        lo, hi = min(da, db), max(da, db)
        return hi > 0 and lo / hi > s

    for t, i in enumerate(order):
        x, c = X[i], y[i]
        a = a0 * (1 - t / T)
        d = np.sqrt(((P - x) ** 2).sum(1))
        srt = np.argsort(d, kind="stable")
        b1, b2 = srt[0], srt[1]
        if variant == "lvq1":
            P[b1] += (a if plab[b1] == c else -a) * (x - P[b1])
        elif variant == "olvq1":
            r = rates[b1]
            right = plab[b1] == c
            P[b1] += (r if right else -r) * (x - P[b1])
            rates[b1] = min(a0, r / (1 + (r if right else -r)))
        elif variant == "lvq2.1":
            same = np.flatnonzero(plab == c)
            other = np.flatnonzero(plab != c)
            ys = same[np.argmin(d[same])]
            yo = other[np.argmin(d[other])]
            if window(d[ys], d[yo]):
                P[ys] += a * (x - P[ys])
                P[yo] -= a * (x - P[yo])
        else:
            r1, r2 = plab[b1] == c, plab[b2] == c
            if r1 and r2:
                P[b1] += eps * a * (x - P[b1])
                P[b2] += eps * a * (x - P[b2])
            elif (r1 or r2) and window(d[b1], d[b2]):
                P[b1] += (a if r1 else -a) * (x - P[b1])
                P[b2] += (a if r2 else -a) * (x - P[b2])
    return P


@pytest.mark.parametrize("variant", ["lvq1", "lvq2.1", "lvq3", "olvq1"])
def test_kernel_matches_reference(variant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(np.int64)
    P = rng.normal(size=(6, 3))
    plab = np.array([0, 0, 0, 1, 1, 1], dtype=np.int64)
    order = np.concatenate([rng.permutation(60) for _ in range(5)]).astype(np.int64)
    ref = ref_lvq(X, y, P, plab, order, variant, 0.2, 0.4, 0.3)
    got = P.copy()
    moves = _prototypes.lvq_train(X, y, got, plab, order, variant, 0.2, 0.4, 0.3,
                                  np.full(6, 0.2))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    assert 0 < moves <= len(order)


def test_single_updates_follow_the_notes():
    X = np.array([[1.0, 0.0]])
    plab = np.array([0, 1], dtype=np.int64)
    one = np.array([0], dtype=np.int64)
    # LVQ1: nearest prototype of the same class moves a fraction alpha towards x ...
    P = np.array([[0.0, 0.0], [5.0, 0.0]])
    _prototypes.lvq_train(X, np.array([0]), P, plab, one, "lvq1", 0.25, 0.3, 0.2, None)
    np.testing.assert_allclose(P, [[0.25, 0.0], [5.0, 0.0]])
    # ... and away from x when the classes differ; the others do not move
    P = np.array([[0.0, 0.0], [5.0, 0.0]])
    _prototypes.lvq_train(X, np.array([1]), P, plab, one, "lvq1", 0.25, 0.3, 0.2, None)
    np.testing.assert_allclose(P, [[-0.25, 0.0], [5.0, 0.0]])
    # LVQ2.1: outside the window (x far nearer to one prototype) nothing happens
    P = np.array([[0.0, 0.0], [5.0, 0.0]])
    assert _prototypes.lvq_train(X, np.array([0]), P, plab, one, "lvq2.1", 0.25, 0.3,
                                 0.2, None) == 0
    np.testing.assert_allclose(P, [[0.0, 0.0], [5.0, 0.0]])
    # inside the window (near the midplane) the right one approaches, the wrong one leaves
    P = np.array([[0.0, 0.0], [2.2, 0.0]])
    _prototypes.lvq_train(X, np.array([0]), P, plab, one, "lvq2.1", 0.5, 0.3, 0.2, None)
    np.testing.assert_allclose(P, [[0.5, 0.0], [2.8, 0.0]])
    # LVQ3, both nearest of x's class: both approach by epsilon * alpha
    P = np.array([[0.0, 0.0], [2.0, 0.0], [9.0, 9.0]])
    _prototypes.lvq_train(X, np.array([0]), P, np.array([0, 0, 1], dtype=np.int64), one,
                          "lvq3", 0.5, 0.3, 0.2, None)
    np.testing.assert_allclose(P, [[0.1, 0.0], [1.9, 0.0], [9.0, 9.0]])


def _split(X, y, seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    cut = int(0.7 * len(y))
    return X[idx[:cut]], y[idx[:cut]], X[idx[cut:]], y[idx[cut:]]


def _one_nn(Xtr, ytr, Xte):
    d = sq_distances(Xte, Xtr)
    return ytr[d.argmin(1)]


@pytest.mark.parametrize("dataset", ["iris", "wine"])
@pytest.mark.parametrize("variant", ["lvq1", "lvq2.1", "lvq3", "olvq1"])
def test_accuracy_against_one_nn(dataset, variant):
    """Three prototypes per class classify held-out iris / wine (standardised, 70/30
    split) about as well as 1-NN on all training points, and fit the training set
    at least as well as their k-means start. LVQ2.1 runs as the notes advise
    (Kohonen: few iterations, small rate)."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    Xtr, ytr, Xte, yte = _split(X, y)
    nn = np.mean(_one_nn(Xtr, ytr, Xte) == yte)
    kw = dict(learning_rate=0.02, n_epochs=3) if variant == "lvq2.1" else {}
    lvq = LVQ(3, variant=variant, random_state=0, **kw).fit(Xtr, ytr)
    assert lvq.score(Xte, yte) >= nn - 0.05, (lvq.score(Xte, yte), nn)
    start = np.mean(lvq.classes_[_one_nn(lvq.initial_prototypes_,
                                         np.repeat(np.arange(3), 3), Xtr)] == ytr)
    assert lvq.score(Xtr, ytr) >= start - 0.01, (lvq.score(Xtr, ytr), start)


def test_long_lvq21_runs_drift():
    """The notes' comparison (Sec. 6.4): LVQ2.1 is the least robust variant, to be
    run only briefly. Thirty epochs at rate 0.1 lose accuracy on iris where
    LVQ1 and LVQ3 do not (measured: 0.80 vs 0.97 training accuracy)."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    Xtr, ytr, _, _ = _split(X, y)
    long21 = LVQ(3, variant="lvq2.1", random_state=0).fit(Xtr, ytr).score(Xtr, ytr)
    for v in ("lvq1", "lvq3"):
        assert LVQ(3, variant=v, random_state=0).fit(Xtr, ytr).score(Xtr, ytr) > long21 + 0.1


def test_labels_kept_and_scale_invariant():
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 3]
    y = np.array(["a"] * 30 + ["b"] * 30)
    a = LVQ(2, random_state=0).fit(X, y)
    assert set(a.prototype_labels_) == {"a", "b"} and a.predict(X).dtype.kind == "U"
    b = LVQ(2, random_state=0).fit(X * 1e120, y)
    np.testing.assert_allclose(b.prototypes_, a.prototypes_ * 1e120, rtol=1e-9)
    c = LVQ([1, 3], random_state=0).fit(X, y)
    assert list(c.prototype_labels_).count("b") == 3
    # proportional to the class sizes (the notes' allocation)
    yp = np.array(["a"] * 40 + ["b"] * 20)
    d = LVQ(0.1, random_state=0).fit(X, yp)
    assert list(d.prototype_labels_).count("a") == 4 and list(d.prototype_labels_).count("b") == 2


@pytest.mark.parametrize("param,value", [
    ("variant", "lvq2"), ("learning_rate", 0.0), ("learning_rate", 1.5),
    ("n_epochs", 0), ("window", 0.0), ("window", 1.0), ("epsilon", -0.1),
    ("n_prototypes_per_class", 0), ("n_prototypes_per_class", [1, 2, 3]),
    ("n_prototypes_per_class", 1.5), ("n_prototypes_per_class", float("nan"))])
def test_bad_parameters(param, value):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.arange(20) % 2
    with pytest.raises((ValueError, TypeError), match=param):
        LVQ(**{param: value}).fit(X, y)


def test_bad_y_and_bridge_checks():
    X = np.ones((4, 2))
    for y in (None, [0, 0, 0, 0], [0, 1], [0, 1, np.nan, 1]):
        with pytest.raises(ValueError, match="y"):
            LVQ().fit(X, y)
    P = np.zeros((2, 2))
    with pytest.raises(ValueError, match="order"):
        _prototypes.lvq_train(X, np.zeros(4, dtype=np.int64), P, np.array([0, 1]),
                              np.array([4]), "lvq1", 0.1, 0.3, 0.2, None)
    with pytest.raises(ValueError, match="rates"):
        _prototypes.lvq_train(X, np.zeros(4, dtype=np.int64), P, np.array([0, 1]),
                              np.array([0]), "olvq1", 0.1, 0.3, 0.2, None)
