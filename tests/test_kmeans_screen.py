"""The float32 screen of float64 k-means passes (csrc/kmeans_impl.h,
screen_rows; issue #10).

The screen scores float64 rows in float32 and keeps a row's float32 label only
where the gap to its second-best score exceeds twice a proven bound on the
difference between float32 and float64 scores; every other row is re-scored
by the float64 lanes kernel. So the labels must be the float64 kernel's bit for
bit, always: checked here against method="lanes" (the same kernel, never
screened) on benign data, exact and near (1 ulp) ties, data far from the origin
(the screen scores rows and centers translated by the centers' mean; at 1e8 the
float64 kernel's own rounding exceeds the gaps and the screen must give way),
scales at the ends of float64's range (outside float32's), non-finite rows, and
random problems (hypothesis). ``screen_probe`` shows which rows the bound
settled, so that the equalities are not vacuous: on benign data, near the
origin or 1e4 from it, most rows are settled by the float32 scores.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metriclust._kernels import _kmeans as _k

_DS = [9, 16, 33, 64, 130]
_KS = [2, 8, 17, 32, 64]
_KINDS = ["uniform", "blobs", "offset1e4", "offset1e6", "offset1e8", "tiny", "huge"]
# Rows: whole chunks (256 rows) and a partial one, a partial step of points.
_N = 256 * 3 + 21


def _data(kind, n, d, K, seed):
    """Float64 rows and K starting centers (rows of the data) of one kind."""
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        mu = rng.normal(scale=4.0, size=(K, d))
        X = mu[rng.integers(K, size=n)] + rng.normal(size=(n, d))
    else:
        X = rng.random((n, d))
    if kind.startswith("offset"):
        X = X + float(kind[6:]) * rng.uniform(0.5, 1.0, size=d)
    elif kind == "tiny":
        X = X * 1e-150
    elif kind == "huge":
        X = X * 1e150
    C = X[rng.choice(n, K, replace=False)].copy()
    return np.ascontiguousarray(X), C


def _lloyd(X, C, method, nt, max_iter=6, w=None):
    C = C.copy()
    lab, inertia, n_iter, strict = _k.lloyd(X, w, C, max_iter, 0.0, method, nt)
    return lab, C, inertia, n_iter, strict


def _same_run(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1].tobytes() == b[1].tobytes()
    assert a[2:] == b[2:]


def test_screen_table():
    """The screen serves float64 passes of the lanes kernel from the table's
    crossover (kmeans.h: d >= 32 and K >= 8, or d >= 16 and K >= 32); never
    the small-d kernel, BLAS, a forced "lanes" or "tile"; "screen" forces it
    at any shape the lanes kernel serves. (float32 data: the int16 screen,
    test_kmeans_q16.py, where the CPU has it.)"""
    q16 = _k.screens(64, 64, "screen", np.float32)
    for d in (16, 24, 32, 64, 128, 512):
        for K in (8, 32, 64, 4096):
            assert _k.kernel(d, K) == "lanes"
            assert _k.screens(d, K) == (d >= 32 or K >= 32)
            assert _k.screens(d, K, "direct") == _k.screens(d, K)
            assert _k.screens(d, K, dtype=np.float32) == (q16 and d >= 32 and K >= 32)
            assert not _k.screens(d, K, "lanes") and not _k.screens(d, K, "tile")
    assert not _k.screens(8, 32) and not _k.screens(3, 8)  # small-d kernel
    assert not _k.screens(513, 32) and not _k.screens(16, 4097)  # BLAS
    assert _k.screens(9, 2, "screen") and _k.screens(3, 8, "screen")
    assert _k.screens(513, 32, "screen") and _k.screens(513, 32, "screen", np.float32) == q16
    assert _k.kernel(9, 2, "screen") == "lanes"
    with pytest.raises(ValueError, match="method"):
        _k.screens(16, 8, "fast")
    with pytest.raises(ValueError, match="dtype"):
        _k.screens(16, 8, dtype=np.int32)


def _screen_equals_lanes(X, C):
    """Assignment (labels, distances) and Lloyd (labels, center bits,
    inertia, n_iter) through the screen on 1 and 2 threads equal the
    unscreened lanes kernel's, bit for bit."""
    ref, dref = _k.assign(X, C, "lanes", 1, True)
    for nt in (1, 2):
        lab, dist = _k.assign(X, C, "screen", nt, True)
        np.testing.assert_array_equal(lab, ref)
        assert dist.tobytes() == dref.tobytes()
    base = _lloyd(X, C, "lanes", 1)
    _same_run(_lloyd(X, C, "screen", 1), base)
    _same_run(_lloyd(X, C, "screen", 2), base)


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("d", _DS)
def test_screen_labels_and_centers_bitwise(kind, d):
    """Assignment and Lloyd behind the screen (1 and 2 threads) against the
    unscreened float64 lanes kernel: labels, centers, inertia, n_iter and the
    distances bit for bit, for K across one to several blocks of centers."""
    for K in _KS:
        X, C = _data(kind, _N, d, K, seed=1000 * d + K)
        _screen_equals_lanes(X, C)


@pytest.mark.parametrize("d", _DS)
def test_screen_settles_most_rows_on_benign_data(d):
    """Not vacuous: on uniform data, Gaussian blobs and uniform data 1e4 from
    the origin (translated by the centers' mean before the float32 rounding)
    the bound settles most rows from the float32 scores, and every settled
    label is the float64 kernel's; at 1e8 from the origin (the float64 scores
    themselves carry errors beyond the gaps), at 1e-150 (below float32's
    range) and 1e150 (above it) it settles none."""
    for K in _KS:
        for kind in ("uniform", "blobs", "offset1e4"):
            X, C = _data(kind, _N, d, K, seed=d + K)
            ref, _ = _k.assign(X, C, "lanes", 1, False)
            lab, settled, _ = _k.screen_probe(X, C)
            np.testing.assert_array_equal(lab[settled], ref[settled])
            assert settled.mean() > 0.9, (kind, K, settled.mean())
        for kind in ("offset1e8", "tiny", "huge"):
            X, C = _data(kind, _N, d, K, seed=d + K)
            _, settled, _ = _k.screen_probe(X, C)
            assert not settled.any(), kind


def _near_ties(d, K, seed, offset=0.0):
    """Rows on the bisector of two centers (exact ties up to the rounding of
    the midpoint), 1 ulp and 1e-12 off it, plus ordinary rows; all of it
    `offset` from the origin in every coordinate."""
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(K, d)) + offset
    rows = []
    for _ in range(300):
        a, b = rng.choice(K, 2, replace=False)
        mid = 0.5 * (C[a] + C[b])
        e = C[b] - C[a]
        v = rng.normal(size=d)
        v -= (v @ e) / (e @ e) * e  # along the bisecting hyperplane
        x = mid + 0.3 * v
        rows.append(x)
        j = rng.integers(d)
        for direction in (np.inf, -np.inf):
            y = x.copy()
            y[j] = np.nextafter(y[j], direction)
            rows.append(y)
        rows.append(x + 1e-12 * e)
        rows.append(x - 1e-12 * e)
    rows.extend(rng.normal(size=(200, d)) + offset)
    return np.ascontiguousarray(rows), C


@pytest.mark.parametrize("offset", [0.0, 1e4])
@pytest.mark.parametrize("d", _DS)
def test_screen_adversarial_near_ties(d, offset):
    """Rows within an ulp of the bisector of two centers, near the origin and
    1e4 from it (where the screen's translation by the centers' mean is what
    lets it settle anything): the screen cannot settle them (their float32
    gap is within the bound) and the float64 kernel's label, whichever
    rounding decides it, comes out; settled rows (the ordinary ones) carry
    the float64 label."""
    for K in (2, 8, 17, 32, 64):
        X, C = _near_ties(d, K, seed=7 * d + K, offset=offset)
        ref, _ = _k.assign(X, C, "lanes", 1, False)
        for nt in (1, 2):
            np.testing.assert_array_equal(_k.assign(X, C, "screen", nt, False)[0], ref)
        lab, settled, _ = _k.screen_probe(X, C)
        np.testing.assert_array_equal(lab[settled], ref[settled])
        # Rows whose two nearest centers are within 1e-9 of each other,
        # relative to the scores' scale about the centers' mean, where the
        # screen scores them (exact arithmetic up to 1e-16: numpy's float64
        # differences): the float32 scores cannot prove them, so none is
        # settled.
        D = np.sort(((X[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
        Y = X - C.mean(0)
        near = (D[:, 1] - D[:, 0]) < 1e-9 * (D[:, 0] + (Y * Y).sum(1)) if K > 1 else D[:, 0] < 0
        assert near.sum() >= 300
        assert not settled[near].any()
        assert settled[len(X) - 200:].mean() > 0.5
        _same_run(_lloyd(X, C, "screen", 2, max_iter=4), _lloyd(X, C, "lanes", 1, max_iter=4))


def test_screen_exact_ties_on_a_grid():
    """Integer rows and half-integer centers (every score exact, many exact
    ties): the float64 kernel's lowest-index tie rule survives the screen."""
    rng = np.random.default_rng(5)
    for d in (9, 16, 64):
        X = rng.integers(-3, 4, size=(800, d)).astype(np.float64)
        for K in (2, 8, 33):
            C = rng.integers(-3, 4, size=(K, d)) + 0.5
            ref, _ = _k.assign(X, C, "lanes", 1, False)
            np.testing.assert_array_equal(_k.assign(X, C, "screen", 2, False)[0], ref)
            D = ((X[:, None, :] - C[None]) ** 2).sum(-1)
            np.testing.assert_array_equal(ref, D.argmin(1))


def test_screen_nonfinite_rows_and_centers():
    """NaN and infinite rows are re-scored in float64 (the bound's comparison
    fails on them): the labels are the float64 kernel's; a center out of
    float32's range (1e39) turns the screen off for the pass."""
    rng = np.random.default_rng(3)
    X = rng.random((600, 16))
    X[5, 3] = np.nan
    X[300, 0] = np.inf
    X[400, :] = -np.inf
    X[401, 2] = 1e39
    C = X[[1, 2, 3, 4, 6, 7, 8, 9]].copy()
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(_k.assign(X, C, "screen", 2, False)[0], ref)
    _, settled, _ = _k.screen_probe(X, C)
    assert not settled[[5, 300, 400, 401]].any() and settled.mean() > 0.5
    C[2, 0] = 1e39
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(_k.assign(X, C, "screen", 2, False)[0], ref)
    lab, settled, _ = _k.screen_probe(X, C)
    assert not settled.any() and (lab == -1).all()


@pytest.mark.parametrize("d,K", [(16, 8), (64, 32), (33, 17), (128, 64)])
def test_screen_thread_invariance_and_auto(d, K):
    """The screened Lloyd (as method="auto" picks it) on 1 and 2 threads, with
    weights, several segments and the parallel path: bit for bit the same as
    each other and as the unscreened float64 kernel; the block entry
    (assign_accumulate) likewise."""
    rng = np.random.default_rng(d * K)
    mu = rng.normal(scale=3.0, size=(K, d))
    X = mu[rng.integers(K, size=20000)] + rng.normal(size=(20000, d))
    w = rng.uniform(0.5, 2.0, len(X))
    C = X[rng.choice(len(X), K, replace=False)].copy()
    assert _k.screens(d, K) == (d >= 32)
    _same_fits_any_way(X, w, C)


def _same_fits_any_way(X, w, C):
    """Lloyd as "auto" picks it on 1 and 2 threads, forced through the screen
    and forced around it (lanes), and the block entry (assign_accumulate)
    likewise: labels, center bits, sums, inertia and n_iter all the same."""
    K, d = C.shape
    runs = [_lloyd(X, C, m, nt, max_iter=8, w=w) for m, nt in
            (("auto", 1), ("auto", 2), ("screen", 2), ("lanes", 2))]
    for r in runs[1:]:
        _same_run(r, runs[0])
    outs = []
    for method, nt in (("auto", 1), ("auto", 2), ("screen", 2), ("lanes", 1)):
        sums, counts = np.empty((K, d)), np.empty(K)
        lab = np.empty(len(X), dtype=np.int64)
        inertia = _k.assign_accumulate(X, w, C, sums, counts, lab, method, nt)
        outs.append((lab, sums.tobytes(), counts.tobytes(), inertia))
    for o in outs[1:]:
        np.testing.assert_array_equal(o[0], outs[0][0])
        assert o[1:] == outs[0][1:]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 700), d=st.integers(9, 48), K=st.integers(1, 40),
       scale=st.sampled_from([1e-30, 1e-3, 1.0, 1e3, 1e30]),
       offset=st.sampled_from([0.0, 1.0, 1e3, 1e6]),
       ties=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_screen_property_random_problems(n, d, K, scale, offset, ties, seed):
    """Random small problems (any n, d, K, scale, offset; rounded to a coarse
    grid for many exact ties): the screened labels are the float64 kernel's."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    C = rng.normal(size=(K, d))
    if ties:
        X, C = np.round(X * 2) / 2, np.round(C * 2) / 2
    X, C = X * scale + offset, C * scale + offset
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(_k.assign(X, C, "screen", 1, False)[0], ref)
    lab, settled, _ = _k.screen_probe(X, C)
    np.testing.assert_array_equal(lab[settled], ref[settled])


def _second_gap(X, C, lab):
    """Squared distance of each row to its second nearest center less that
    to center lab (in long double: the differences of float64 values exact,
    their squares and sums to 2^-63), with the size of its rounding."""
    Xl, Cl = X.astype(np.longdouble), C.astype(np.longdouble)
    D = ((Xl[:, None, :] - Cl[None]) ** 2).sum(-1)
    own = D[np.arange(len(X)), lab]
    D[np.arange(len(X)), lab] = np.inf
    other = D.min(1)
    return other - own, 4 * X.shape[1] * 2.0 ** -63 * (other + own)


def _margin_below_gap(X, C):
    """screen_probe's margin against the true second gap (long double, from
    the float64 values of X and C): never above it (to 2^-50 relative), -inf
    where not settled. Returns the fraction of settled rows whose margin is
    more than half the gap (1.0 where none is settled)."""
    lab, settled, margin = _k.screen_probe(X, C)
    assert np.all(margin[~settled] == -np.inf)
    if not settled.any():
        return 1.0
    gap, err = _second_gap(X[settled].astype(np.float64), C.astype(np.float64),
                           lab[settled])
    m = margin[settled].astype(np.longdouble)
    assert np.all(m <= gap * (1 + 2.0 ** -50) + err)
    return float(np.mean(m > gap / 2))


@pytest.mark.parametrize("kind", _KINDS + ["ties0", "ties1e4"])
@pytest.mark.parametrize("d", _DS)
def test_screen_margin_bounds_the_second_gap(kind, d):
    """The pruned pass keeps, for a row the screen settles, the lower bound
    l^2 = ||x - c_a||^2 + margin on its squared distance to every other
    center (screen_pruned): margin must not exceed the true gap (to 2^-52
    relative), on every kind of data, near ties included. Not vacuous: on
    benign data (uniform, blobs, 1e4 from the origin) the margin is most of
    the gap for most settled rows, so the bound lets the next passes skip
    rows."""
    for K in _KS[1:]:
        if kind.startswith("ties"):
            X, C = _near_ties(d, K, seed=11 * d + K, offset=float(kind[4:]))
        else:
            X, C = _data(kind, _N, d, K, seed=3 * d + K)
        tight = _margin_below_gap(X, C)
        if kind in ("uniform", "blobs", "offset1e4"):
            assert tight > 0.8, (kind, K)


def _pruned_equals_lloyd(X, C, w):
    """Hamerly-pruned fits through the screen (forced on 1 and 2 threads,
    "auto" on 3), unweighted and with weights w, after 1, 3 and 100 passes:
    labels, center bits, inertia and n_iter are the unscreened Lloyd's."""
    for weights in (None, w):
        for max_iter in (1, 3, 100):
            ref = _lloyd(X, C, "lanes", 1, max_iter, weights)
            for method, nt in (("screen", 1), ("screen", 2), ("auto", 3)):
                Cb = C.copy()
                got = _k.hamerly(X, weights, Cb, max_iter, 0.0, method, nt)
                _same_run((got[0], Cb) + tuple(got[1:]), ref)


@pytest.mark.parametrize("kind", _KINDS + ["ties0", "ties1e4"])
@pytest.mark.parametrize("d", _DS)
def test_screened_pruned_fit_equals_lloyd(kind, d):
    """Pruned fits (Hamerly's bounds) whose open rows go through the screen,
    forced ("screen") and as "auto" picks it, weighted and not, on 1, 2 and
    3 threads: labels, center bits, inertia and n_iter are the unscreened,
    unpruned float64 Lloyd's, after one pass, a few and to convergence. The
    bounds the screen sets (margin above) decide which rows the later passes
    skip, so a bound too tight on either side would change a label."""
    for K in _KS:
        if kind.startswith("ties"):
            X, C = _near_ties(d, K, seed=13 * d + K, offset=float(kind[4:]))
        else:
            X, C = _data(kind, 3 * _N, d, K, seed=5 * d + K)
        _pruned_equals_lloyd(X, C, np.random.default_rng(K).uniform(0.5, 2.0, len(X)))


def test_screen_probe_arguments():
    X = np.zeros((4, 16))
    with pytest.raises(ValueError, match="features"):
        _k.screen_probe(X, np.zeros((2, 15)))
    with pytest.raises(ValueError, match="center"):
        _k.screen_probe(X, np.zeros((0, 16)))
