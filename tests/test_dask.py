"""Dask arrays on a real distributed cluster: the same fits as in memory.

A ``distributed.LocalCluster`` (2 worker processes, 1 thread each) is started
once for the module and closed after it; every fit below runs its passes as
tasks on those workers. The in-memory fit of the same data from the same
start is the reference: labels equal, centers and inertia to the rounding of
the float64 sums (their order differs: by chunk here, by OpenMP segment in
memory).
"""

import pickle
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from metriclust import KMeans  # noqa: E402
from metriclust._core.kmeans import kmeans_plusplus  # noqa: E402
from metriclust._dask import seed_centers  # noqa: E402

# centers and inertia: relative agreement with the in-memory fit, by dtype
RTOL = {np.float32: 1e-5, np.float64: 1e-10}


def _blobs(n, p, k, seed, dtype=np.float64, spread=1.0, offset=0.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=6.0, size=(k, p))
    y = rng.integers(k, size=n)
    X = centers[y] + spread * rng.normal(size=(n, p)) + offset
    return X.astype(dtype), y


def _uneven(X, sizes):
    assert sum(sizes) == X.shape[0]
    return da.from_array(X, chunks=(tuple(sizes), X.shape[1]))


def test_import_metriclust_does_not_import_dask():
    code = ("import sys, numpy as np, metriclust\n"
            "from metriclust import KMeans\n"
            "KMeans(2, random_state=0).fit(np.arange(10.0).reshape(5, 2)).predict([[0, 1]])\n"
            "assert not any(m == 'dask' or m.startswith(('dask.', 'distributed'))\n"
            "               for m in sys.modules), sorted(m for m in sys.modules if 'dask' in m)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_is_dask_array_without_importing_dask():
    from metriclust._core.validation import is_dask_array

    assert is_dask_array(da.zeros((4, 2), chunks=2))
    assert not is_dask_array(np.zeros((4, 2)))
    assert not is_dask_array([[0.0, 1.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_equals_in_memory_fit(client, dtype, weighted):
    X, _ = _blobs(3000, 5, 6, seed=1, dtype=dtype, spread=2.0, offset=100.0)
    rng = np.random.default_rng(2)
    w = rng.uniform(0.5, 3.0, size=X.shape[0]) if weighted else None
    init = X[rng.choice(X.shape[0], 6, replace=False)]
    ref = KMeans(6, init=init, tol=0.0).fit(X, sample_weight=w)
    Xd = _uneven(X, [700, 300, 1000, 1000])
    wd = None if w is None else da.from_array(w, chunks=500)   # rechunked to X's rows
    got = KMeans(6, init=init, tol=0.0).fit(Xd, sample_weight=wd)
    assert isinstance(got.labels_, da.Array)
    assert got.labels_.chunks == (Xd.chunks[0],)
    np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
    assert got.n_iter_ == ref.n_iter_ > 2
    assert got.cluster_centers_.dtype == dtype
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=RTOL[dtype],
                               atol=RTOL[dtype] * 100)
    assert got.inertia_ == pytest.approx(ref.inertia_, rel=RTOL[dtype])


@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_on_chunks_held_by_the_cluster_equals_in_memory_fit(client, weighted,
                                                                  monkeypatch):
    # X persisted: a pass is one task per worker over the chunks it holds, on a
    # centred copy made once; the same labels, iterations and stops as in memory
    from metriclust._core.engine import BlockSource

    X, _ = _blobs(3000, 4, 6, seed=21, dtype=np.float32, spread=2.0, offset=50.0)
    rng = np.random.default_rng(22)
    w = rng.uniform(0.5, 2.0, size=X.shape[0]) if weighted else None
    init = X[rng.choice(X.shape[0], 6, replace=False)]
    Xd = _uneven(X, [500, 700, 300, 900, 600]).persist()
    distributed.wait(Xd)
    if not weighted:    # every pass over X must take the per-worker path
        monkeypatch.setattr(BlockSource, "_map_tasks", _no_task_per_chunk)
    for kw in ({"tol": 0.0}, {"tol": 1e-3}, {"tol": 0.0, "max_iter": 3}):
        ref = KMeans(6, init=init, **kw).fit(X, sample_weight=w)
        got = KMeans(6, init=init, **kw).fit(
            Xd, sample_weight=None if w is None else da.from_array(w, chunks=1000))
        assert got.n_iter_ == ref.n_iter_
        np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
        np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=1e-5,
                                   atol=1e-3)
        assert got.inertia_ == pytest.approx(ref.inertia_, rel=1e-5)


def _no_task_per_chunk(*args, **kwargs):
    raise AssertionError("a pass over chunks held by the cluster ran one task per chunk")


def test_engine_pass_by_worker_equals_task_per_chunk(client):
    # the same per-block results in the same order, whole passes and subsets
    from metriclust._core.engine import source

    X, _ = _blobs(1000, 4, 3, seed=23)
    lazy = source(_uneven(X, [300, 300, 300, 100]))
    held = source(_uneven(X, [300, 300, 300, 100]).persist())
    assert held.persisted() and not lazy.persisted()
    np.testing.assert_array_equal(held.reduce(_col_sums), lazy.reduce(_col_sums))
    got = held.map(_first_row_plus, per_block=[10.0, 20.0], blocks=[3, 1])
    ref = lazy.map(_first_row_plus, per_block=[10.0, 20.0], blocks=[3, 1])
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, [X[900] + 10.0, X[300] + 20.0])


def test_place_chunks_balances_rows_over_worker_threads():
    from metriclust._core.engine import _cut_bytes, _place_chunks, _split_rows

    sizes = [100] * 8
    slots = {"a": 1, "b": 1}
    # held once each: every chunk stays on its holder
    held = [{"a"}, {"b"}] * 4
    assert _place_chunks(sizes, held, slots, move=False) == ["a", "b"] * 4
    assert _place_chunks(sizes, held, slots, move=True) == ["a", "b"] * 4
    # every chunk on both workers (e.g. after X.compute()): half each, no copy made
    both = [{"a", "b"}] * 8
    for move in (False, True):
        got = _place_chunks(sizes, both, slots, move=move)
        assert got.count("a") == got.count("b") == 4
    # all on one worker: stays there without move; with move, balanced within a chunk
    one = [{"a"}] * 8
    assert _place_chunks(sizes, one, slots, move=False) == ["a"] * 8
    got = _place_chunks(sizes, one, slots, move=True)
    assert got.count("a") == got.count("b") == 4
    # threads count: a worker with 3 threads takes 3 times the rows of a 1-thread one
    got = _place_chunks(sizes, both, {"a": 3, "b": 1}, move=True)
    assert got.count("a") == 6 and got.count("b") == 2
    # a holder that is not a live worker: None without move, a live worker with it
    assert _place_chunks([5], [{"gone"}], slots, move=False) == [None]
    assert _place_chunks([5], [{"gone"}], slots, move=True) == ["a"]
    # one worker's chunks cut into consecutive runs of about equal rows per thread
    runs = _split_rows([0, 2, 3, 5, 6, 7], [10, 99, 10, 10, 99, 10, 10, 10], 3)
    assert [i for r in runs for i in r] == [0, 2, 3, 5, 6, 7] and len(runs) == 3
    assert all(len(r) == 2 for r in runs)
    assert _split_rows([4], [1] * 5, 4) == [[4]]
    # bundles of at most a byte limit, at least one block each
    assert _cut_bytes([0, 1, 2, 3], [10, 10, 30, 10], 4, 80) == [[0, 1], [2], [3]]
    assert _cut_bytes([5], [10] * 6, 4, 1) == [[5]]


def test_pack_gives_back_the_same_results():
    # one worker task's per-block results: stacked per field when every result is a
    # tuple of same-shape arrays, given back equal (bit for bit); anything else as is
    from metriclust._core.engine import _pack, _unpack

    rng = np.random.default_rng(25)
    res = [(rng.normal(size=(4, 3)), rng.integers(9, size=4)) for _ in range(5)]
    packed = _pack(res)
    assert len(packed.fields) == 2 and packed.fields[0].shape == (5, 4, 3)
    back = _unpack(pickle.loads(pickle.dumps(packed)))
    assert len(back) == 5
    for a, b in zip(back, res):
        assert type(a) is tuple and len(a) == 2
        assert all(x.tobytes() == y.tobytes() and x.dtype == y.dtype for x, y in zip(a, b))
    for other in ([(np.zeros(2), 1.0)] * 3,                  # a float field
                  [(np.zeros(2),), (np.zeros(3),)],           # shapes differ
                  [(np.zeros(2, np.float32),), (np.zeros(2),)],   # dtypes differ
                  [np.zeros(2)] * 3, [(np.zeros(2),), (np.zeros(2), np.zeros(2))], [], [()]):
        assert _pack(other) is other and _unpack(other) is other


@pytest.mark.parametrize("bundle_bytes", [None, 2000])
def test_centred_copy_is_balanced_and_exact(client, bundle_bytes, monkeypatch):
    # X persisted on one worker: the centred copy is spread over both workers (rows
    # within one chunk), holds the bits of X - shift, and passes run where it is; a
    # worker's share is cut into bundles of at most _BUNDLE_BYTES (200-row blocks of 3
    # float32 are 2,400 bytes: one block a bundle at 2,000)
    from metriclust._core import engine
    from metriclust._core.engine import source

    if bundle_bytes is not None:
        monkeypatch.setattr(engine, "_BUNDLE_BYTES", bundle_bytes)

    X, _ = _blobs(1200, 3, 4, seed=24, dtype=np.float32, offset=20.0)
    workers = sorted(client.nthreads())
    Xd = client.persist(_uneven(X, [200] * 6), workers=workers[:1])
    distributed.wait(Xd)
    assert {w for ws in client.who_has(distributed.futures_of(Xd)).values() for w in ws} \
        == set(workers[:1])
    shift = X.mean(axis=0).astype(np.float32)
    src = source(Xd)
    Xc = src.centred(shift)
    # one key per worker thread holds its blocks, on that worker
    where = client.who_has([b for _, _, b in Xc._bundles])
    assert sorted({a for a, _, _ in Xc._bundles}) == workers
    assert all(where[b.key] == (a,) for a, _, b in Xc._bundles)
    per_worker = [sum(len(idx) for a, idx, _ in Xc._bundles if a == w) for w in workers]
    assert per_worker == [3, 3]
    assert len(Xc._bundles) == (2 if bundle_bytes is None else 6)
    assert sorted(i for _, idx, _ in Xc._bundles for i in idx) == list(range(6))
    assert Xc.persisted() and Xc.X.chunks == Xd.chunks
    assert Xc.X.compute().tobytes() == (X - shift).tobytes()
    np.testing.assert_array_equal(np.vstack(Xc.map(_first_rows)), (X - shift)[::200])
    np.testing.assert_array_equal(np.vstack(Xc.map(_first_rows, blocks=[4, 1])),
                                  (X - shift)[[800, 200]])


def _first_rows(block):
    return block[:1]


def _first_row_plus(block, value):
    return block[0] + value


def test_kmeans_stops_like_in_memory(client):
    # tol > 0 (the center-shift stop, then a labelling pass) and max_iter reached
    X, _ = _blobs(2000, 3, 8, seed=3, spread=3.0)
    init = X[:8].copy()
    Xd = da.from_array(X, chunks=(450, 3))
    for kw in ({"tol": 1e-2}, {"tol": 0.0, "max_iter": 3}):
        ref = KMeans(8, init=init, **kw).fit(X)
        got = KMeans(8, init=init, **kw).fit(Xd)
        assert got.n_iter_ == ref.n_iter_
        np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
        np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=1e-10)
        assert got.inertia_ == pytest.approx(ref.inertia_, rel=1e-10)


@pytest.mark.parametrize("persisted", [False, True])
def test_empty_cluster_moves_to_the_same_rows_as_in_memory(client, persisted, monkeypatch):
    # persisted: the refill pass runs on the centred copy's per-worker bundles
    from metriclust._core.engine import BlockSource

    if persisted:
        monkeypatch.setattr(BlockSource, "_map_tasks", _no_task_per_chunk)
    X, _ = _blobs(1500, 2, 3, seed=4)
    init = np.vstack([X[:3], [[1e3, 1e3]], [[-1e3, 1e3]]])   # two centers nothing picks
    ref = KMeans(5, init=init, tol=1e-3).fit(X)
    Xd = da.from_array(X, chunks=(400, 2))
    if persisted:
        Xd = Xd.persist()
        distributed.wait(Xd)
    got = KMeans(5, init=init, tol=1e-3).fit(Xd)
    assert np.unique(ref.labels_).size == 5
    np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=1e-10)


def test_predict_and_transform_are_lazy_with_the_same_chunks(client):
    X, _ = _blobs(1200, 4, 3, seed=5, dtype=np.float32, offset=50.0)
    km = KMeans(3, random_state=0).fit(X)
    Xd = _uneven(X, [100, 600, 500])
    labels = km.predict(Xd)
    dist = km.transform(Xd)
    assert isinstance(labels, da.Array) and isinstance(dist, da.Array)
    assert labels.chunks == (Xd.chunks[0],)
    assert dist.chunks == (Xd.chunks[0], (3,)) and dist.dtype == np.float32
    np.testing.assert_array_equal(labels.compute(), km.predict(X))
    np.testing.assert_array_equal(dist.compute(), km.transform(X))
    w = np.random.default_rng(0).uniform(size=X.shape[0])
    assert km.score(Xd, sample_weight=w) == pytest.approx(km.score(X, sample_weight=w),
                                                          rel=1e-12)


def _inertia(X, centers):
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    return float(d2.min(1).sum())


@pytest.mark.parametrize("init", ["k-means||", "k-means++"])
def test_scalable_seeding_is_as_good_as_kmeanspp_in_memory(client, init):
    # 20 well-separated blobs: a poor seeding leaves two blobs under one center,
    # which Lloyd does not repair. Lloyd runs in memory from each seeding.
    X, _ = _blobs(4000, 3, 20, seed=6, spread=0.5)
    Xd = da.from_array(X, chunks=(1000, 3))
    seeded, fitted, ref_seeded, ref_fitted = [], [], [], []
    for seed in range(3):
        C = seed_centers(Xd, 20, init=init, random_state=seed)
        seeded.append(_inertia(X, C))
        fitted.append(KMeans(20, init=C).fit(X).inertia_)
        C = kmeans_plusplus(X, 20, random_state=seed)[0]
        ref_seeded.append(_inertia(X, C))
        ref_fitted.append(KMeans(20, init=C).fit(X).inertia_)
    assert np.median(fitted) <= 1.05 * np.median(ref_fitted)
    assert np.median(seeded) <= 1.25 * np.median(ref_seeded)


def test_same_random_state_same_seeding(client):
    # the chunks' random draws are seeded from random_state, whichever worker runs them
    X, _ = _blobs(2000, 3, 5, seed=7, dtype=np.float32)
    Xd = da.from_array(X, chunks=(300, 3))
    for init in ("k-means||", "k-means++"):
        a = seed_centers(Xd, 5, init=init, random_state=3)
        b = seed_centers(Xd.rechunk((300, 3)), 5, init=init, random_state=3)
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_dask_input_errors(client):
    X = np.random.default_rng(0).normal(size=(100, 2))
    Xn = X.copy()
    Xn[57, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 57, column 1"):
        KMeans(2, random_state=0).fit(da.from_array(Xn, chunks=(25, 2)))
    with pytest.raises(ValueError, match="k-means\\|\\|"):
        KMeans(2, init="k-means||").fit(X)
    with pytest.raises(ValueError, match="2D"):
        KMeans(2).fit(da.zeros((4, 2, 2), chunks=2))
    Xu = da.from_array(X, chunks=(25, 2))
    Xu = Xu[Xu[:, 0] > -10]   # unknown chunk sizes
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        KMeans(2).fit(Xu)
    with pytest.raises(ValueError, match="sample_weight"):
        KMeans(2).fit(da.from_array(X, chunks=(25, 2)), sample_weight=-np.ones(100))
    with pytest.raises(ValueError, match="sample_weight"):
        KMeans(2).fit(da.from_array(X, chunks=(25, 2)), sample_weight=np.ones(99))
    km = KMeans(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        km.predict(da.zeros((4, 3), chunks=2))


@pytest.mark.parametrize("dtype", [np.float64])
def test_cpcm_linear_equals_in_memory_fit(client, dtype):
    # above the search sample (20000 rows): the starts are searched on the same
    # sample as in memory, the best fixed points polished on all of X by tasks
    from metriclust import CPCM

    X, _ = _blobs(24000, 4, 3, seed=8, dtype=dtype, spread=2.0)
    ref = CPCM(3, n_init=2, random_state=0).fit(X)
    Xd = _uneven(X, [6000, 9000, 9000])
    got = CPCM(3, n_init=2, random_state=0).fit(Xd)
    assert isinstance(got.labels_, da.Array)
    np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
    assert got.n_iter_ == ref.n_iter_
    assert got.blur_ratio_ == pytest.approx(ref.blur_ratio_, rel=RTOL[dtype])
    tol = {np.float32: 1e-4, np.float64: 1e-9}[dtype]
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.centers_, ref.centers_, rtol=tol, atol=tol)
    Z = got.transform(Xd)
    assert isinstance(Z, da.Array) and Z.chunks == (Xd.chunks[0], (3,))
    np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=tol, atol=tol)
    np.testing.assert_array_equal(got.predict(Xd).compute(), ref.predict(X))


def test_cpcm_dask_refuses_what_it_cannot_run(client):
    from metriclust import CPCM

    Xd = da.from_array(np.random.default_rng(0).normal(size=(100, 3)), chunks=(50, 3))
    with pytest.raises(ValueError, match="predictor='linear' or 'kernel'"):
        CPCM(2, predictor="stepwise").fit(Xd)


def _pairs(y, m, rng):
    n = y.shape[0]
    i, j = rng.integers(n, size=(2, 8 * m))
    keep = i != j
    i, j = i[keep], j[keep]
    same = y[i] == y[j]
    return (np.c_[i[same], j[same]][:m].astype(np.int64),
            np.c_[i[~same], j[~same]][:m].astype(np.int64))


@pytest.mark.parametrize("diagonal, init", [(False, "covariance"), (True, "identity")])
def test_mmc_explicit_pairs_equals_in_memory_fit(client, diagonal, init):
    from metriclust import MMC

    rng = np.random.default_rng(9)
    X, y = _blobs(4000, 4, 3, seed=9)
    X[:, 1] *= 5.0
    S, D = _pairs(y, 300, rng)
    Xd = _uneven(X, [1000, 500, 2500])
    ref = MMC(diagonal=diagonal, init=init).fit(X, similar=S, dissimilar=D)
    got = MMC(diagonal=diagonal, init=init).fit(Xd, similar=S, dissimilar=D)
    assert got.n_iter_ == ref.n_iter_
    assert got.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    np.testing.assert_allclose(got.metric_, ref.metric_, rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(got.similar_, S)
    Z = got.transform(Xd)
    assert isinstance(Z, da.Array) and Z.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got.pair_distances(Xd, D[:50]), ref.pair_distances(X, D[:50]),
                               rtol=1e-8)


# D = all pairs not in S on a Dask array: tests/test_dask_methods.py.


def test_cpduml_transform_and_predict_chunk_by_chunk(client):
    # a Nystrom fit (the low-rank path) in memory; new points moved lazily per chunk
    from metriclust import CPDUML

    X, _ = _blobs(600, 3, 3, seed=11)
    est = CPDUML(3, sigma=0.5, lam=1e-3, approximation="nystrom", n_components=40,
                 random_state=0).fit(X)
    Xd = _uneven(X, [100, 200, 300])
    Z = est.transform(Xd)
    labels = est.predict(Xd)
    assert isinstance(Z, da.Array) and Z.chunks == (Xd.chunks[0], (3,))
    np.testing.assert_array_equal(Z.compute(), est.transform(X))
    np.testing.assert_array_equal(labels.compute(), est.predict(X))
    with pytest.raises(TypeError, match="dask array"):
        CPDUML(3).fit(Xd)


def test_cpcm_kernel_nystrom_equals_in_memory_fit(client):
    # Nystrom features per chunk, the m x m products reduced in chunk order
    from metriclust import CPCM

    X, _ = _blobs(24000, 3, 3, seed=12, spread=2.0)
    kw = dict(predictor="kernel", n_components=40, n_init=2, random_state=0)
    ref = CPCM(3, **kw).fit(X)
    Xd = _uneven(X, [5000, 7000, 12000])
    got = CPCM(3, **kw).fit(Xd)
    assert isinstance(got.labels_, da.Array)
    np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
    assert got.n_iter_ == ref.n_iter_ and got.sigma_ == ref.sigma_
    assert got.blur_ratio_ == pytest.approx(ref.blur_ratio_, rel=1e-9)
    np.testing.assert_allclose(got.centers_, ref.centers_, rtol=1e-8, atol=1e-8)
    Z = got.transform(Xd)
    assert isinstance(Z, da.Array) and Z.chunks == (Xd.chunks[0], (3,))
    np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(got.predict(Xd).compute(), ref.predict(X))


def _col_sums(block):
    return block.sum(axis=0)


def _argmax_and_count(block, old):
    lab = block.argmax(axis=1).astype(np.int32)
    return lab, int(np.count_nonzero(lab != old))


def test_engine_dask_backend_equals_local_backend(client):
    # the same per-block functions on the same blocks: the same bits, in block order
    from metriclust._core.engine import source

    X, _ = _blobs(1000, 4, 3, seed=13)
    loc = source(X, block_rows=300)
    dsk = source(_uneven(X, [300, 300, 300, 100]))
    assert dsk.kind == "dask" and dsk.bounds == loc.bounds and dsk.n_threads == 1
    np.testing.assert_array_equal(dsk.reduce(_col_sums), loc.reduce(_col_sums))
    lab = dsk.full(-1, np.int32)
    lab, changed = dsk.map_keep(_argmax_and_count, rows=(lab,), out=lab)
    assert sum(changed) == 1000
    lab.set([3, 999], [7, 7])
    got = lab.result()
    assert isinstance(got, da.Array) and got.chunks == ((300, 300, 300, 100),)
    ref = X.argmax(axis=1)
    ref[[3, 999]] = 7
    np.testing.assert_array_equal(got.compute(), ref)
    np.testing.assert_array_equal(dsk.take_rows([999, 3, 3]), X[[999, 3, 3]])


def test_kmeans_on_workers_with_two_threads_equals_in_memory_fit(client):
    # a worker with 2 threads: a pass runs one task per worker thread (the centred
    # copy in one bundle per thread), and the fit still equals the in-memory one
    import logging

    from metriclust._core.engine import source

    X, _ = _blobs(2400, 3, 5, seed=26, dtype=np.float32, spread=2.0, offset=10.0)
    init = X[:5].copy()
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    try:
        with distributed.Client(cluster, set_as_default=False) as c2, c2.as_current():
            Xd = c2.persist(_uneven(X, [400] * 6))
            distributed.wait(Xd)
            Xc = source(Xd).centred(np.zeros(3, np.float32))
            assert len(Xc._bundles) == 2 and len(c2.nthreads()) == 1
            assert {a for a, _, _ in Xc._bundles} == set(c2.nthreads())
            assert sorted(len(idx) for _, idx, _ in Xc._bundles) == [3, 3]
            assert Xc.X.compute().tobytes() == X.tobytes()
            for kw in ({"tol": 0.0}, {"tol": 0.0, "max_iter": 2}):
                ref = KMeans(5, init=init, **kw).fit(X)
                got = KMeans(5, init=init, **kw).fit(Xd)
                assert got.n_iter_ == ref.n_iter_
                np.testing.assert_array_equal(got.labels_.compute(), ref.labels_)
                np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_,
                                           rtol=1e-5, atol=1e-4)
    finally:
        cluster.close()
