"""Seeding in the k-means core: farthest-first ("least similar point") and the row order
that k-means++ and farthest-first draw over (value_order, its radix sort)."""

import numpy as np
import pytest

from metriclust import KMeans
from metriclust._core.kmeans import farthest_first, kmeans_plusplus, value_order
from metriclust._kernels import _kmeans

from _reference import sq_distances


def ref_farthest(X, k, first):
    idx = [first]
    for _ in range(1, k):
        d = sq_distances(X, X[idx]).min(1)
        idx.append(int(np.argmax(d)))
    return idx


@pytest.mark.parametrize("seed", range(3))
def test_matches_reference(seed):
    X = np.random.default_rng(seed).normal(size=(200, 3))
    centers, idx = farthest_first(X, 6, random_state=seed)
    # the first row is drawn uniformly over the rows ordered by value
    first = value_order(X)[np.random.default_rng(seed).choice(200, p=np.full(200, 1 / 200))]
    assert idx.tolist() == ref_farthest(X, 6, first)
    np.testing.assert_array_equal(centers, X[idx])


def test_zero_weight_rows_never_chosen():
    X = np.r_[np.zeros((5, 2)), [[100.0, 100.0]]]
    w = np.r_[np.ones(5), 0.0]
    _, idx = farthest_first(X, 2, sample_weight=w, random_state=0)
    assert 5 not in idx


def test_kmeans_farthest_init_finds_the_far_cluster():
    """Three blobs, one tiny and far away: farthest-first always seeds it."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + [4, 0],
              rng.normal(size=(5, 2)) * 0.1 + [60, 60]]
    for seed in range(5):
        km = KMeans(3, init="farthest", random_state=seed).fit(X)
        assert len(set(km.labels_[-5:])) == 1 and km.labels_[-1] not in km.labels_[:600]
        assert km.n_iter_ >= 1
    with pytest.raises(ValueError, match="init"):
        KMeans(3, init="farthest-first").fit(X)


def _keys(kind, n, rng):
    if kind == "uniform":
        return rng.random(n)
    if kind == "ties":            # few distinct values: the order of ties is the test
        return np.floor(rng.random(n) * 7.0)
    if kind == "wide":            # zeros, subnormals, huge values and +inf together
        pool = np.array([0.0, 5e-324, 1e-310, 1e-300, 1.0, 1.0 + 2**-52, 1e300, np.inf])
        return pool[rng.integers(pool.size, size=n)] * rng.integers(1, 3, size=n)
    X = rng.normal(size=(n, 3)) * [1.0, 1e-3, 1e3]  # squared distances to the mean
    dev = X - (X.mean(0) if n else 0.0)
    return np.einsum("ij,ij->i", dev, dev)


@pytest.mark.parametrize("kind", ["uniform", "ties", "wide", "sqdist"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 200_001])
def test_stable_order_is_numpys_stable_argsort(kind, n):
    key = _keys(kind, n, np.random.default_rng(n))
    want = np.argsort(key, kind="stable")
    for threads in (1, 2, 3):   # 200_001 rows sort on several threads
        got = _kmeans.stable_order(key, threads)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [[1.0, -1.0], [-0.0], [0.0, np.nan], [-np.inf]])
def test_stable_order_rejects_what_it_cannot_order(bad):
    with pytest.raises(ValueError, match="key must hold non-negative"):
        _kmeans.stable_order(np.array(bad))


@pytest.mark.parametrize("weighted", [False, True])
def test_value_order_is_the_argsort_of_the_distance_to_the_mean(weighted):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70_000, 4)).astype(np.float32)
    w = rng.random(70_000) if weighted else None
    mean = np.average(X.astype(np.float64), axis=0, weights=w)
    key = ((X.astype(np.float64) - mean) ** 2).sum(1)
    got = value_order(X, w)
    # the key here sums in another order than value_order's: compare the keys it orders
    assert np.all(np.diff(key[got]) >= -1e-12 * key.max())
    np.testing.assert_array_equal(np.sort(got), np.arange(70_000))
    np.testing.assert_array_equal(got, value_order(X, w, n_threads=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 1023, 1025, 40_003])
def test_center_rows_is_numpys_subtraction_and_the_value_orders_key(dtype, n):
    # a fit's centered copy and its seeding's key in one pass: the copy is
    # numpy's X - shift and the key sq_dist_to's squared norms, bit for bit,
    # on any number of threads
    rng = np.random.default_rng(n)
    X = (rng.normal(size=(n, 5)) * [1.0, 1e3, 1e-3, 7.0, 1.0] + 40.0).astype(dtype)
    X[0, 1] = -0.0
    shift = X.mean(0, dtype=np.float64).astype(dtype)
    want = X - shift
    want_key = _kmeans.sq_dist_to(want, np.zeros(5))
    for threads in (1, 2, 3):
        got, key = _kmeans.center_rows(X, shift, True, threads)
        assert got.dtype == X.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        np.testing.assert_array_equal(key, want_key)
    got, key = _kmeans.center_rows(X, shift)
    assert key is None
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="shift has 4 entries"):
        _kmeans.center_rows(X, shift[:4])


def test_fit_seeds_over_the_value_order_of_its_centered_rows():
    # the fit's seeds are kmeans_plusplus's on its centered copy, drawn over the
    # order of that copy's squared norms (what value_order gives up to the
    # rounding of the mean)
    from metriclust._core.kmeans import _mean_and_variance, kmeans, kmeans_plusplus

    rng = np.random.default_rng(7)
    X = rng.normal(size=(5000, 3)) * [3.0, 1.0, 0.5] + 100.0
    mean, _ = _mean_and_variance(X, with_variance=False)
    Xc = X - mean
    order = _kmeans.stable_order(_kmeans.sq_dist_to(Xc, np.zeros(3)))
    seeds, _ = kmeans_plusplus(Xc, 6, random_state=np.random.default_rng(2), order=order)
    fit = kmeans(X, 6, init=lambda *a, **k: seeds + mean, random_state=0, max_iter=5)
    got = kmeans(X, 6, random_state=np.random.default_rng(2), max_iter=5)
    np.testing.assert_array_equal(got.labels, fit.labels)
    np.testing.assert_array_equal(got.centers, fit.centers)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 999, 40_001])
def test_unit_weights_draw_as_no_weights(dtype, n):
    # Without weights the first draw skips the running sum of n ones (exact
    # integers: the search lands at floor(u n)); the seeds must be those of
    # sample_weight=ones, which builds it, bit for bit.
    from metriclust._core.kmeans import kmeans_plusplus

    X = np.random.default_rng(n).normal(size=(n, 4)).astype(dtype)
    k = min(n, 6)
    for seed in range(8):
        a = kmeans_plusplus(X, k, random_state=seed)
        b = kmeans_plusplus(X, k, sample_weight=np.ones(n), random_state=seed)
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[0], b[0])
        f = farthest_first(X, k, random_state=seed)[1]
        np.testing.assert_array_equal(f, farthest_first(X, k, sample_weight=np.ones(n),
                                                        random_state=seed)[1])


def _pp_step_by_hand(X, w, cand, closest, block=2048):
    """k-means++'s step as the C core defines it, one float64 operation at a time:
    per row the squared distance summed in coordinate order, the min with closest,
    the (weighted) potential summed in row order per block of 2048 rows, blocks in order."""
    n = len(X)
    rows = [[float(v) for v in r] for r in X]
    cands = [rows[c] for c in cand]
    pots = []
    for c in cands:
        pot = 0.0
        for lo in range(0, n, block):
            acc = 0.0
            for i in range(lo, min(lo + block, n)):
                s = 0.0
                for xj, cj in zip(rows[i], c):
                    u = xj - cj
                    s += u * u
                m = s if s < closest[i] else closest[i]
                acc += float(w[i]) * m if w is not None else m
            pot += acc
        pots.append(pot)
    best = min(range(len(cand)), key=lambda t: (pots[t], t))
    new = closest.copy()
    for i in range(n):
        s = 0.0
        for xj, cj in zip(rows[i], cands[best]):
            u = xj - cj
            s += u * u
        new[i] = min(new[i], s)
    return best, pots[best], new


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_cand", [1, 8, 11])
def test_pp_step_is_the_sequential_arithmetic_bit_for_bit(dtype, weighted, n_cand):
    """The candidates' scores run 8 to a vector (csrc/kmeans_impl.h, pp_block), and
    the update of ``closest`` takes the best one's from that pass (with the scores
    workspace) or recomputes them four rows at a time (pp_update; 4501 rows leave
    a tail of one): each must still do the one-candidate arithmetic in the same
    order, bit for bit."""
    rng = np.random.default_rng(n_cand)
    n, d = 4501, 5
    X = (rng.normal(size=(n, d)) * [1e-3, 1.0, 10.0, 1e3, 3.0] + 7.0).astype(dtype)
    w = rng.random(n).astype(dtype) if weighted else None
    closest = np.full(n, np.inf)
    _kmeans.pp_step(X, w, np.array([17], np.int64), closest, 1)
    cand = rng.integers(n, size=n_cand).astype(np.int64)
    want_best, want_pot, want_closest = _pp_step_by_hand(X, w, cand, closest)
    for threads in (1, 2):
        for scores in (None, np.full(n * n_cand + 3, np.nan)):
            got_closest = closest.copy()
            best, pot = _kmeans.pp_step(X, w, cand, got_closest, threads, scores)
            assert best == want_best
            assert pot == want_pot    # exact
            np.testing.assert_array_equal(got_closest, want_closest)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [40_000, 40_003])
def test_pp_step_keeps_its_bits_with_the_scores_workspace_on_threads(dtype, n):
    """Past ML_KM_PAR_MIN_ROWS the update runs on threads: with or without the
    scores workspace, on 1 to 3 threads, the same best, potential and closest."""
    rng = np.random.default_rng(n)
    X = (rng.normal(size=(n, 12)) * 3.0 + 1.0).astype(dtype)
    closest = np.full(n, np.inf)
    _kmeans.pp_step(X, None, np.array([5], np.int64), closest, 1)
    cand = rng.integers(n, size=9).astype(np.int64)     # two groups of 8 lanes
    want = closest.copy()
    want_best, want_pot = _kmeans.pp_step(X, None, cand, want, 1)
    for threads in (1, 2, 3):
        for scores in (None, np.empty(n * 9)):
            got = closest.copy()
            assert _kmeans.pp_step(X, None, cand, got, threads, scores) == (want_best, want_pot)
            np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


def test_pp_step_checks_its_scores_workspace():
    X = np.ones((10, 2))
    with pytest.raises(ValueError, match="scores has 19 entries, 10 rows and 2 candidates"):
        _kmeans.pp_step(X, None, np.array([0, 1], np.int64), np.full(10, np.inf), 1,
                        np.empty(19))
    with pytest.raises(ValueError, match="Buffer dtype mismatch"):
        _kmeans.pp_step(X, None, np.array([0], np.int64), np.full(10, np.inf), 1,
                        np.empty(10, np.float32))


def test_pp_keeps_scores_where_they_are_no_bigger_than_the_rows():
    assert _kmeans.pp_keeps_scores(64, 5, np.float64)
    assert _kmeans.pp_keeps_scores(10, 5, np.float32)       # 40 bytes each
    assert not _kmeans.pp_keeps_scores(9, 5, np.float32)
    assert not _kmeans.pp_keeps_scores(2, 5, np.float64)


@pytest.mark.parametrize("weighted", [False, True])
def test_ordered_cumsum_is_numpys_cumsum_bit_for_bit(weighted):
    rng = np.random.default_rng(5)
    v = rng.random(30_000) * np.logspace(-300, 300, 30_000)
    order = rng.permutation(30_000).astype(np.int64)
    w = rng.random(30_000) if weighted else None
    want = np.cumsum(v[order] if w is None else w * v[order])
    got = _kmeans.ordered_cumsum(v, order, w)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


def test_ordered_cumsum_checks_its_arguments():
    v = np.ones(4)
    with pytest.raises(ValueError, match="order must hold row indices"):
        _kmeans.ordered_cumsum(v, np.array([0, 1, 2, 4], np.int64))
    with pytest.raises(ValueError, match="order has 3 entries"):
        _kmeans.ordered_cumsum(v, np.arange(3, dtype=np.int64))
    with pytest.raises(ValueError, match="weights has 2 entries"):
        _kmeans.ordered_cumsum(v, np.arange(4, dtype=np.int64), np.ones(2))


@pytest.mark.parametrize("shape", [(70_000, 1), (70_000, 2), (200_000, 64), (131_073, 200),
                                   (5, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_column_moments_are_the_block_sums_bit_for_bit(shape, dtype, weighted):
    """The mean and the variance behind ``tol`` (and the centering of every fit):
    numpy's sums of float64 blocks of 65,536 rows, the blocks added in order. The
    in-memory path sums all blocks at once on threads in C (unweighted, two or
    more columns); the blockwise and Dask paths call the block functions, which
    use the same C code block by block: the same bits either way."""
    from metriclust._core.kmeans import _mean_and_variance
    rng = np.random.default_rng(shape[1])
    X = (rng.normal(size=shape) * np.logspace(-3, 3, shape[1]) + 1e3).astype(dtype)
    w = rng.random(shape[0]) if weighted else None
    acc, acc2 = np.zeros(shape[1]), np.zeros(shape[1])
    for lo in range(0, shape[0], 65536):
        rows = X[lo:lo + 65536].astype(np.float64)
        acc += rows.sum(axis=0) if w is None else w[lo:lo + 65536] @ rows
    total = shape[0] if w is None else float(w.sum())
    want_mean = acc / total
    for lo in range(0, shape[0], 65536):
        dev = (X[lo:lo + 65536].astype(np.float64) - want_mean) ** 2
        acc2 += dev.sum(axis=0) if w is None else w[lo:lo + 65536] @ dev
    mean, var = _mean_and_variance(X, w)
    np.testing.assert_array_equal(mean.view(np.uint64), want_mean.view(np.uint64))
    np.testing.assert_array_equal(var.view(np.uint64), (acc2 / total).view(np.uint64))


def test_column_block_sums_on_threads_and_their_checks():
    # the blocks run on threads, each summed on one: the same bits on any number;
    # the block function the streaming paths call gives the same rows
    from metriclust._core.kmeans import _column_sums_block, _squared_deviation_sums_block
    from metriclust._kernels import _sums

    X = np.random.default_rng(0).normal(size=(300_001, 9)) * 1e4
    c = X.mean(0)
    for center in (None, c):
        one = _sums.column_block_sums(X, 65536, center, n_threads=1)
        assert one.shape == (5, 9)
        for threads in (2, 3):
            np.testing.assert_array_equal(_sums.column_block_sums(X, 65536, center, threads), one)
    np.testing.assert_array_equal(_column_sums_block(X[65536:131072], None),
                                  _sums.column_block_sums(X, 65536)[1])
    np.testing.assert_array_equal(_squared_deviation_sums_block(X[262144:], None, c),
                                  _sums.column_block_sums(X, 65536, c)[4])
    with pytest.raises(ValueError, match="block_rows must be positive"):
        _sums.column_block_sums(X, 0)
    with pytest.raises(ValueError, match="center has 8 entries"):
        _sums.column_block_sums(X, 100, c[:8])
    assert _sums.column_block_sums(X[:0], 100).shape == (0, 9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_seeding_without_kept_scores_is_the_same(dtype):
    """keep_scores=False (X re-read at each update instead of n x
    n_local_trials kept distances) and "small" (what copy_x=False asks for:
    kept only where at most a quarter of X's size) seed the same rows,
    weighted or not, for k-means++ and farthest-first."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 24)).astype(dtype)
    w = rng.uniform(0.5, 2.0, len(X))
    assert _kmeans.pp_keeps_scores(24, 4, dtype)  # the kept path is the default here
    for sw in (None, w):
        a = kmeans_plusplus(X, 12, sample_weight=sw, random_state=3)
        for keep in (False, "small"):
            b = kmeans_plusplus(X, 12, sample_weight=sw, random_state=3, keep_scores=keep)
            np.testing.assert_array_equal(a[1], b[1])
            assert a[0].tobytes() == b[0].tobytes()
    a = farthest_first(X, 12, random_state=3)
    b = farthest_first(X, 12, random_state=3, keep_scores=False)
    np.testing.assert_array_equal(a[1], b[1])
