"""The int16 screen of float32 k-means passes (csrc/kmeans_q16.h; issue #10).

On CPUs with AVX-512 VNNI, float32 rows and centers are rounded to integers
(power-of-two scales, one per chunk of rows and one per pass) and scored by
exact integer dot products; a row keeps the screen's label only where the gap
to its second-best score exceeds twice a proven bound on the difference from
the float32 kernel's score, and every other row is scored by the float32 lanes
kernel. So the labels must be the float32 kernel's bit for bit: checked here
against method="lanes" (the same kernel, never screened) on centred and
uncentred data, blobs, data far from the origin, at both ends of float32's
range, on zero rows, exact and near ties, non-finite rows, K across one and
several blocks of 64 centers, odd d, and random problems (hypothesis); for
Lloyd and for the pruned (Hamerly) passes, whose bounds take the screen's
margin. ``screen_probe`` shows which rows each of the screen's two tests (the
threshold of the unpruned passes, the gap with its margin of the pruned ones)
settled, so that the equalities are not vacuous. Skipped where the CPU has no
VNNI (the screen is then never used).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metriclust._kernels import _kmeans as _k

from test_kmeans_screen import (_lloyd, _margin_below_gap, _near_ties, _pruned_equals_lloyd,
                                _same_fits_any_way, _same_run, _screen_equals_lanes)

F32 = np.float32
pytestmark = pytest.mark.skipif(not _k.screens(64, 64, "screen", F32),
                                reason="no int16 screen here (AVX-512 VNNI)")

_DS = [9, 16, 33, 64, 131]
_KS = [2, 17, 32, 64, 100, 300]
_KINDS = ["centred", "uniform", "blobs", "offset1e3", "tiny", "huge", "zero_rows", "grid"]
# Rows: whole chunks (256 rows) and a partial one, a partial step of rows.
_N = 256 * 3 + 21


def _data(kind, n, d, K, seed):
    """Float32 rows and K starting centers (rows of the data) of one kind."""
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        mu = rng.normal(scale=4.0, size=(K, d))
        X = mu[rng.integers(K, size=n)] + rng.normal(size=(n, d))
    elif kind == "grid":
        X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)
    else:
        X = rng.random((n, d))
    if kind == "centred" or kind == "zero_rows":
        X = X - 0.5
    if kind == "zero_rows":
        X[rng.random(n) < 0.2] = 0.0
    elif kind.startswith("offset"):
        X = X + float(kind[6:]) * rng.uniform(0.5, 1.0, size=d)
    elif kind == "tiny":
        X = (X - 0.5) * 1e-30
    elif kind == "huge":
        X = (X - 0.5) * 1e30
    X = np.ascontiguousarray(X, dtype=F32)
    # starts from distinct rows (zero rows would give tied centers)
    pool = np.flatnonzero(np.abs(X).max(1) > 0) if kind == "zero_rows" else np.arange(n)
    C = X[rng.choice(pool, K, replace=False)].copy()
    if kind == "grid":
        C = C + F32(0.5)
    return X, C


def test_q16_table():
    """float32 passes of the lanes kernel are screened from d = 32 and K = 32
    (the measured crossover, csrc/kmeans.h); never with "lanes" or where the
    small-d kernel or BLAS serves; "screen" forces it at any shape."""
    for d in (9, 16, 31, 32, 64, 128):
        for K in (2, 16, 31, 32, 64, 256):
            if _k.kernel(d, K, dtype=F32) != "lanes":
                assert not _k.screens(d, K, dtype=F32)
                continue
            assert _k.screens(d, K, dtype=F32) == (d >= 32 and K >= 32), (d, K)
            assert _k.screens(d, K, "direct", F32) == _k.screens(d, K, dtype=F32)
            assert not _k.screens(d, K, "lanes", F32)
            assert _k.screens(d, K, "screen", F32)
    assert not _k.screens(4, 8, dtype=F32) and not _k.screens(513, 64, dtype=F32)


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("d", _DS)
def test_q16_labels_and_centers_bitwise(kind, d):
    """Assignment and Lloyd behind the screen (1 and 2 threads) against the
    unscreened float32 lanes kernel: labels, distances, centers, inertia and
    n_iter bit for bit, for K across one and several blocks of centers."""
    for K in _KS:
        X, C = _data(kind, _N, d, K, seed=1000 * d + K)
        _screen_equals_lanes(X, C)


@pytest.mark.parametrize("d", _DS)
def test_q16_settles_most_rows_on_centred_data(d):
    """Not vacuous: on centred uniform data and Gaussian blobs both of the
    screen's tests settle most rows (the threshold form only exists for one
    block of centers, K <= 64), and every settled label is the float32
    kernel's; where the bound cannot hold (rows 1e3 from the origin: the
    integers' rounding grows with |x| and |c| but the gaps do not, or chunks
    with a non-finite value) they settle few or none and the labels still
    agree."""
    for K in _KS:
        for kind in ("centred", "blobs", "zero_rows"):
            X, C = _data(kind, _N, d, K, seed=d + K)
            ref, _ = _k.assign(X, C, "lanes", 1, False)
            for with_margin in (True, False):
                lab, settled, _ = _k.screen_probe(X, C, with_margin)
                np.testing.assert_array_equal(lab[settled], ref[settled])
                # starting centers drawn from one blob tie its rows
                floor = {"centred": 0.9, "blobs": 0.75, "zero_rows": 0.7}[kind]
                assert settled.mean() > floor, (kind, K, with_margin, settled.mean())
        X, C = _data("offset1e3", _N, d, K, seed=d + K)
        ref, _ = _k.assign(X, C, "lanes", 1, False)
        lab, settled, _ = _k.screen_probe(X, C, False)
        np.testing.assert_array_equal(lab[settled], ref[settled])
        assert settled.mean() < 0.5


def test_q16_zero_rows_open_and_nonfinite_chunks():
    """A row of zeros whose chunk is all zeros has no scale (stays open); a
    chunk with a NaN or an infinity is left open whole (its largest |x| is
    not finite), and the labels are the float32 kernel's, which the
    neighbouring chunks' screen does not disturb."""
    rng = np.random.default_rng(3)
    X = (rng.random((1024, 40)) - 0.5).astype(F32)
    X[:256] = 0
    X[300, 3] = np.nan
    X[600, 0] = np.inf
    C = X[[256 + 3 * k for k in range(40)]].copy()
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(_k.assign(X, C, "screen", 2, False)[0], ref)
    for with_margin in (True, False):
        _, settled, _ = _k.screen_probe(X, C, with_margin)
        assert not settled[:768].any()
        assert settled[768:].mean() > 0.9


@pytest.mark.parametrize("offset", [0.0, 10.0])
@pytest.mark.parametrize("d", _DS)
def test_q16_adversarial_near_ties(d, offset):
    """Rows within an ulp of the bisector of two centers: the screen cannot
    settle them and the float32 kernel's label, whichever rounding decides
    it, comes out; the ordinary rows beside them are settled."""
    for K in (2, 17, 32, 64, 100):
        X, C = _near_ties(d, K, seed=7 * d + K, offset=offset)
        X, C = X.astype(F32), C.astype(F32)
        ref, _ = _k.assign(X, C, "lanes", 1, False)
        for nt in (1, 2):
            np.testing.assert_array_equal(_k.assign(X, C, "screen", nt, False)[0], ref)
        D = np.sort(((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
        near = (D[:, 1] - D[:, 0]) < 1e-6 * D[:, 0] if K > 1 else D[:, 0] < 0
        assert near.sum() >= 300
        for with_margin in (True, False):
            lab, settled, _ = _k.screen_probe(X, C, with_margin)
            np.testing.assert_array_equal(lab[settled], ref[settled])
            assert not settled[near].any()
            if offset == 0.0:
                assert settled[len(X) - 200:].mean() > 0.5
        _same_run(_lloyd(X, C, "screen", 2, max_iter=4), _lloyd(X, C, "lanes", 1, max_iter=4))


def test_q16_exact_ties_on_a_grid():
    """Integer rows and half-integer centers (every score exact, many exact
    ties): the float32 kernel's lowest-index tie rule survives the screen."""
    rng = np.random.default_rng(5)
    for d in (33, 64):
        X = rng.integers(-3, 4, size=(800, d)).astype(F32)
        for K in (2, 33, 64, 65):
            C = (rng.integers(-3, 4, size=(K, d)) + 0.5).astype(F32)
            ref, _ = _k.assign(X, C, "lanes", 1, False)
            np.testing.assert_array_equal(_k.assign(X, C, "screen", 2, False)[0], ref)
            D = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1)
            np.testing.assert_array_equal(ref, D.argmin(1))


@pytest.mark.parametrize("d,K", [(32, 32), (64, 64), (33, 17), (130, 100)])
def test_q16_thread_invariance_and_auto(d, K):
    """The screened Lloyd (as method="auto" picks it where the table says)
    on 1 and 2 threads, with weights, several segments and the parallel
    path: bit for bit the same as each other and as the unscreened kernel;
    the block entry (assign_accumulate) likewise."""
    rng = np.random.default_rng(d * K)
    mu = rng.normal(scale=3.0, size=(K, d))
    X = (mu[rng.integers(K, size=20000)] + rng.normal(size=(20000, d))).astype(F32)
    w = rng.uniform(0.5, 2.0, len(X)).astype(F32)
    C = X[rng.choice(len(X), K, replace=False)].copy()
    assert _k.screens(d, K, dtype=F32) == (d >= 32 and K >= 32)
    _same_fits_any_way(X, w, C)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 700), d=st.integers(9, 70), K=st.integers(1, 80),
       scale=st.sampled_from([1e-20, 1e-3, 1.0, 1e3, 1e20]),
       offset=st.sampled_from([0.0, 0.1, 10.0]),
       ties=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_q16_property_random_problems(n, d, K, scale, offset, ties, seed):
    """Random small problems (any n, d, K, scale, offset; rounded to a coarse
    grid for many exact ties): the screened labels are the float32 kernel's,
    and so are the settled rows' labels of either test."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    C = rng.normal(size=(K, d))
    if ties:
        X, C = np.round(X * 2) / 2, np.round(C * 2) / 2
    X = (X * scale + offset * scale).astype(F32)
    C = (C * scale + offset * scale).astype(F32)
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(_k.assign(X, C, "screen", 1, False)[0], ref)
    for with_margin in (True, False):
        lab, settled, _ = _k.screen_probe(X, C, with_margin)
        np.testing.assert_array_equal(lab[settled], ref[settled])


@pytest.mark.parametrize("kind", _KINDS + ["ties0"])
@pytest.mark.parametrize("d", _DS)
def test_q16_margin_bounds_the_second_gap(kind, d):
    """The pruned pass keeps, for a row the screen settles, the lower bound
    l^2 = ||x - c_a||^2 + margin on its squared distance to every other
    center: margin must not exceed the true gap (to 2^-50 relative). Not
    vacuous: on centred data and blobs the margin is most of the gap for
    most settled rows."""
    for K in _KS[1:]:
        if kind == "ties0":
            X, C = _near_ties(d, K, seed=11 * d + K)
            X, C = X.astype(F32), C.astype(F32)
        else:
            X, C = _data(kind, _N, d, K, seed=3 * d + K)
        tight = _margin_below_gap(X, C)
        if kind in ("centred", "blobs"):
            assert tight > (0.8 if kind == "centred" else 0.6), (kind, K)


@pytest.mark.parametrize("kind", ["centred", "blobs", "uniform", "grid", "ties0"])
@pytest.mark.parametrize("d", [33, 64, 131])
def test_q16_pruned_fit_equals_lloyd(kind, d):
    """Pruned fits (Hamerly's bounds) whose open rows go through the screen,
    forced and as "auto" picks it, weighted and not, on 1, 2 and 3 threads:
    labels, center bits, inertia and n_iter are the unscreened, unpruned
    float32 Lloyd's, after one pass, a few and to convergence."""
    for K in (17, 64, 100, 300):
        if kind == "ties0":
            X, C = _near_ties(d, K, seed=13 * d + K)
            X, C = X.astype(F32), C.astype(F32)
        else:
            X, C = _data(kind, 3 * _N, d, K, seed=5 * d + K)
        _pruned_equals_lloyd(X, C, np.random.default_rng(K).uniform(0.5, 2.0, len(X)).astype(F32))


_FIT = """
import hashlib, numpy as np
from metriclust import KMeans
from metriclust._kernels import _kmeans as _k
X = np.random.default_rng(0).random((6000, 64), dtype=np.float32)
km = KMeans(64, n_init=2, max_iter=30, random_state=0).fit(X)
h = hashlib.sha256(km.labels_.tobytes() + km.cluster_centers_.tobytes())
print(_k.screens(64, 64, dtype=np.float32), h.hexdigest(), repr(km.inertia_), km.n_iter_)
"""


def test_q16_kmeans_estimator_same_with_and_without():
    """KMeans on float32 data at the issue's shape (d = 64, K = 64): the fit
    (labels, center bits, inertia, n_iter) is the same with the screen as
    with it turned off (METRICLUST_Q16=0, read once per process)."""
    import os
    import subprocess
    import sys
    out = {}
    for flag in ("1", "0"):
        env = dict(os.environ, METRICLUST_Q16=flag)
        res = subprocess.run([sys.executable, "-c", _FIT], env=env, capture_output=True,
                             text=True, check=True)
        out[flag] = res.stdout.split()
    assert out["1"][0] == "True" and out["0"][0] == "False"
    assert out["1"][1:] == out["0"][1:]


def test_q16_centers_rounding_against_the_gap():
    """Centers whose rounding to integers reverses their order for these rows:
    on half the coordinates c1 and c2 straddle a rounding boundary (1.5 +- 1/64
    at rho = 1: the integers differ by 1, the values by 1/32), on the other half
    they round to the same integer though they differ by 7/8 (9/16 and 23/16),
    and a shared coordinate of 3072 sets rho = 1. For rows with every coordinate
    equal to M > 0 the integer scores put c1 far ahead (by about ||q_A||_1) while
    c2 is the nearer, by 0.875 (d / 2 - 1) M: the bound's center-rounding term
    (||q||_1 / 2) is what keeps these rows open. The float32 kernel's label (c2,
    as in float64) must come out, and the screen must not settle a row."""
    d = 64
    c1 = np.empty(d)
    c2 = np.empty(d)
    c1[0] = c2[0] = 3072.0
    c1[1:33], c2[1:33] = 1.5 + 1 / 64, 1.5 - 1 / 64
    c1[33:], c2[33:] = 9 / 16, 23 / 16
    C = np.ascontiguousarray([c1, c2], dtype=F32)
    M = np.linspace(50.0, 150.0, 600)
    X = np.ascontiguousarray(np.repeat(M[:, None], d, axis=1), dtype=F32)
    D = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1)
    assert (D.argmin(1) == 1).all()
    ref, _ = _k.assign(X, C, "lanes", 1, False)
    np.testing.assert_array_equal(ref, 1)
    for nt in (1, 2):
        np.testing.assert_array_equal(_k.assign(X, C, "screen", nt, False)[0], ref)
    for with_margin in (True, False):
        lab, settled, _ = _k.screen_probe(X, C, with_margin)
        assert not settled.any()
