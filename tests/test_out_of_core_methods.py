"""MMC's implicit D and CPD-UML's Nystrom fit on data read block by block (issue #11).

The reference is always the in-memory fit of the same data (same random_state,
hence the same start and landmarks): the block drivers only change the order
of the floating-point sums. Tolerances are stated where they are used.
"""

import numpy as np
import pytest

from metriclust import MMC
from metriclust._core import cpd_blockwise as cb
from metriclust._core import pairs_blockwise as pb
from metriclust._kernels import _pairwise

from _blocks import Recording, RowSliceable, blobs, cpd_nystrom, memmap, similar_pairs


# ------------------------------------------------------------------ the kernels
def test_crosspairs_equals_direct_sum():
    rng = np.random.default_rng(0)
    XI, XJ = rng.normal(size=(70, 4)), rng.normal(size=(45, 4)) + 0.5
    XJ[3] = XI[5]                                     # a pair at distance 0: weight 0
    Lt = rng.normal(size=(4, 3))
    h, G = _pairwise.crosspairs_full(XI, XI @ Lt, XJ, XJ @ Lt)
    D = (XI[:, None, :] - XJ[None, :, :]).reshape(-1, 4)
    d = np.linalg.norm(D @ Lt, axis=1)
    w = np.divide(0.5, d, out=np.zeros_like(d), where=d > 0)
    np.testing.assert_allclose(h, d.sum(), rtol=1e-12)
    np.testing.assert_allclose(G, (D * w[:, None]).T @ D, rtol=1e-10, atol=1e-12)


def test_crosspairs_checks_shapes():
    X = np.zeros((5, 3))
    with pytest.raises(ValueError, match="rows"):
        _pairwise.crosspairs_full(X, X[:4], X, X)
    with pytest.raises(ValueError, match="columns"):
        _pairwise.crosspairs_full(X, X, np.zeros((5, 2)), np.zeros((5, 2)))


@pytest.mark.parametrize("block_rows", [1, 13, 64, 500])
def test_block_pairs_sum_to_all_pairs(tmp_path, block_rows):
    # every pair once: within-block (I == J) and cross-block (I < J) terms, any block size
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 5)) * [1, 2, 3, 0.5, 1] + 10.0
    Lt = rng.normal(size=(5, 5))
    mean = X.mean(axis=0)
    h_ref, G_ref = _pairwise.allpairs_full(X - mean, (X - mean) @ Lt)
    pair_map = pb.memmap_allpairs(memmap(tmp_path, X), block_rows, mean)
    parts = pair_map(pb.allpairs_block_partial, None, Lt)
    assert len(parts) == len(pb.block_pairs(pair_map.n_blocks))
    h = sum(p[0] for p in parts)
    G = sum(p[1] for p in parts)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12)
    np.testing.assert_allclose(G, G_ref, rtol=1e-10, atol=1e-10 * np.abs(G_ref).max())


@pytest.mark.parametrize("block_rows", [7, 64])
def test_block_pairs_diagonal_sums(tmp_path, block_rows):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 4))
    a = rng.uniform(0.1, 2.0, size=4)
    ref = _pairwise.pairs_diag(X - X.mean(0), None, a, True, True, zero_pairs=True)
    pair_map = pb.memmap_allpairs(memmap(tmp_path, X), block_rows, X.mean(0))
    parts = pair_map(pb.alldiag_block_partial, None, a, hessian=True)
    for k in range(4):
        got = sum(p[k] for p in parts)
        np.testing.assert_allclose(got, ref[k], rtol=1e-10, atol=1e-12)


def _callback_solver(**kw):
    from metriclust._kernels import _mmc

    return _mmc.FullSPG(np.zeros((0, 3)), "callback", np.zeros((0, 2), np.int64), max_iter=5,
                        tol=1e-6, memory=10, window=20, stall_gap=100.0, face_gap=3e-2,
                        newton_ok=False, **kw)


def _read_fails(Lt):
    raise RuntimeError("block read failed")


def _wrong_shape(Lt):
    return 1.0, np.zeros((2, 2))


def _interrupted(Lt):
    raise KeyboardInterrupt


@pytest.mark.parametrize("evaluator, error, match", [
    (_read_fails, RuntimeError, "block read failed"),
    (_wrong_shape, ValueError, "shape"),
    (_interrupted, KeyboardInterrupt, None),      # Ctrl-C inside a block pass: handed on
])
def test_solver_callback_errors_propagate(evaluator, error, match):
    solver = _callback_solver(evaluator=evaluator)
    with pytest.raises(error, match=match):
        solver.evaluate(np.eye(3) / 3)


def test_solver_callback_form_needs_an_evaluator():
    with pytest.raises(TypeError, match="callable"):
        _callback_solver()


# ------------------------------------------------------------ MMC, implicit D
# Where the solver certifies its optimum (converged_), the two runs take the
# same steps up to rounding: J agrees to 1e-10 and A to 1e-6 (relative,
# Frobenius; measured: 1e-14 and 1e-7 at worst on these data). The data sets
# are ones on which the in-memory solver converges at tol = 1e-9 (on some
# blob draws its optimum is a degenerate rank-1 face where it stops at
# max_iter; two such runs then part by up to 1e-5 in J, in memory too).
J_RTOL, A_RTOL = 1e-10, 1e-6


def _mmc_data(seed=3, n=240, p=4):
    X, y = blobs(n, p, 3, seed)
    X[:, 0] *= 5.0                                   # something to learn
    S = similar_pairs(y, 60, np.random.default_rng(seed))
    return X, S


def _assert_same_metric(got, ref, j_rtol=J_RTOL, a_rtol=A_RTOL):
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=j_rtol)
    assert np.linalg.norm(got.metric_ - ref.metric_) <= a_rtol * np.linalg.norm(ref.metric_)
    assert got.dissimilar_ is None
    np.testing.assert_array_equal(got.similar_, ref.similar_)


@pytest.mark.parametrize("block_rows", [None, 50, 97])
@pytest.mark.parametrize("diagonal", [False, True])
def test_mmc_all_pairs_memmap_equals_in_memory(tmp_path, block_rows, diagonal):
    X, S = _mmc_data()
    ref = MMC(diagonal=diagonal, tol=1e-9).fit(X, similar=S)
    assert ref.converged_
    got = MMC(diagonal=diagonal, tol=1e-9).fit(memmap(tmp_path, X), similar=S,
                                               block_rows=block_rows)
    _assert_same_metric(got, ref)
    assert got.converged_


def test_mmc_all_pairs_float32_and_row_sliceable(tmp_path):
    # float32 on disk is read as float64 (as in memory); an h5py-like array works the same
    X, S = _mmc_data(seed=6)
    X = X.astype(np.float32)
    ref = MMC(tol=1e-9).fit(X, similar=S)
    assert ref.converged_
    for src in (memmap(tmp_path, X), RowSliceable(X)):
        _assert_same_metric(MMC(tol=1e-9).fit(src, similar=S, block_rows=60), ref)


def test_mmc_all_pairs_covariance_init_and_transform(tmp_path):
    X, S = _mmc_data(seed=6)
    ref = MMC(init="covariance", tol=1e-9).fit(X, similar=S)
    assert ref.converged_
    got = MMC(init="covariance", tol=1e-9).fit(memmap(tmp_path, X), similar=S,
                                               block_rows=70)
    _assert_same_metric(got, ref)
    # the learned map: distances agree (components_ may differ in sign/rotation)
    P = np.array([[0, 1], [5, 9], [17, 200]])
    np.testing.assert_allclose(got.pair_distances(X, P), ref.pair_distances(X, P),
                               rtol=1e-4)


def test_mmc_all_pairs_reads_blocks_not_x_whole(tmp_path):
    # the all-pairs sums run block pair by block pair; no read is larger than a block
    X, S = _mmc_data(seed=6, n=200)
    Xr = Recording(X)
    MMC(tol=1e-6).fit(Xr, similar=S, block_rows=40)
    assert Xr.reads and max(Xr.reads) <= 40


def test_mmc_all_pairs_bad_input(tmp_path):
    X, S = _mmc_data(seed=7, n=60)
    Xm = memmap(tmp_path, X)
    with pytest.raises(ValueError, match="similar"):
        MMC().fit(Xm, similar=S + 1000)
    with pytest.raises(ValueError, match="block_rows"):
        MMC().fit(Xm, similar=S, block_rows=0)


# ------------------------------------------------------------ CPD-UML, Nystrom
# Labels equal; J, history, centers and the moved points to 1e-8 relative
# (the m x m system is the same up to the order of its N-long sums).
CPD_RTOL = 1e-8


def _cpd_data(seed=8, n=900, p=3):
    X, _ = blobs(n, p, 3, seed, spread=1.5)
    return X


def _cpd(**kw):
    return cpd_nystrom(**dict(dict(n_init=3), **kw))


def _assert_same_cpd(got, ref, X, block_rows=None):
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=CPD_RTOL)
    np.testing.assert_allclose(got.history_, ref.history_, rtol=CPD_RTOL)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=CPD_RTOL,
                               atol=CPD_RTOL * np.abs(ref.cluster_centers_).max())
    assert got.sigma_ == ref.sigma_ and got.lam_ == ref.lam_
    emb = got.embedding_
    rows = np.asarray(emb[0:X.shape[0]]) if not hasattr(emb, "compute") else emb.compute()
    scale = np.abs(ref.embedding_).max()
    np.testing.assert_allclose(rows, ref.embedding_, rtol=CPD_RTOL, atol=CPD_RTOL * scale)
    W = got.weights_
    W = np.asarray(W[0:X.shape[0]]) if not hasattr(W, "compute") else W.compute()
    np.testing.assert_allclose(W, ref.weights_, rtol=1e-6,
                               atol=1e-7 * np.abs(ref.weights_).max())
    Xnew = X[:50] + 0.1
    np.testing.assert_allclose(got.transform(Xnew), ref.transform(Xnew), rtol=CPD_RTOL,
                               atol=CPD_RTOL * scale)
    np.testing.assert_array_equal(got.predict(Xnew), ref.predict(Xnew))


@pytest.mark.parametrize("block_rows", [None, 128, 301])
def test_cpduml_nystrom_memmap_equals_in_memory(tmp_path, block_rows):
    X = _cpd_data()
    ref = _cpd().fit(X)
    assert ref.n_iter_ >= 2                         # the alternation really ran
    got = _cpd().fit(memmap(tmp_path, X), block_rows=block_rows)
    _assert_same_cpd(got, ref, X)


def test_cpduml_nystrom_float32_row_sliceable(tmp_path):
    X = _cpd_data(seed=9).astype(np.float32)
    ref = _cpd(random_state=1).fit(X)
    got = _cpd(random_state=1).fit(RowSliceable(X), block_rows=200)
    _assert_same_cpd(got, ref, X.astype(np.float64))


def test_cpduml_auto_selection_memmap_equals_in_memory(tmp_path):
    # sigma/lam "auto": the 1000-point selection sample and the k-means candidate.
    # (n_init=1: with restarts, two that end in the same partition numbered
    # differently tie to rounding, and either may be kept: same partition,
    # labels permuted.)
    X = _cpd_data(seed=10, n=1300)
    ref = _cpd(sigma="auto", lam="auto", n_init=1).fit(X)
    got = _cpd(sigma="auto", lam="auto", n_init=1).fit(memmap(tmp_path, X), block_rows=400)
    assert got.selection_ == ref.selection_
    _assert_same_cpd(got, ref, X)


def test_cpduml_blockwise_reads_blocks_only(tmp_path):
    # no read of X larger than a block (landmarks and samples: their rows only)
    X = _cpd_data(seed=11, n=600)
    Xr = Recording(X)
    est = _cpd().fit(Xr, block_rows=100)
    assert Xr.reads and max(Xr.reads) <= 100
    assert isinstance(est.embedding_, cb.RowMap)
    assert est.labels_.shape == (600,)


def test_cpduml_memmap_dense_path_unchanged(tmp_path):
    # the exact (dense) path still reads X whole: same result as in memory
    X = _cpd_data(seed=12, n=200)
    ref = _cpd(approximation="dense").fit(X)
    got = _cpd(approximation="dense").fit(memmap(tmp_path, X))
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_array_equal(got.embedding_, ref.embedding_)


def test_row_map_slices_only():
    view = cb.RowMap(np.arange(12.0).reshape(6, 2), cb.float_rows, 2)
    np.testing.assert_array_equal(view[1:3], [[2, 3], [4, 5]])
    with pytest.raises(TypeError, match="slices"):
        view[[0, 1]]


def test_crosspairs_thread_invariant():
    rng = np.random.default_rng(13)
    XI, XJ = rng.normal(size=(700, 6)), rng.normal(size=(500, 6))
    Lt = rng.normal(size=(6, 6))
    a = _pairwise.crosspairs_full(XI, XI @ Lt, XJ, XJ @ Lt, n_threads=1)
    b = _pairwise.crosspairs_full(XI, XI @ Lt, XJ, XJ @ Lt, n_threads=2)
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])


def test_blockwise_fits_thread_invariant(tmp_path):
    # same block size: the same bits whatever the OpenMP thread count
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X, S = _mmc_data(seed=3, n=300)
    Xc = _cpd_data(seed=14, n=500)
    Xm, Xcm = memmap(tmp_path, X), memmap(tmp_path, Xc, "C.npy")
    out = []
    for nt in (1, 2):
        with threadpoolctl.threadpool_limits(nt, user_api="openmp"):
            m = MMC(tol=1e-9).fit(Xm, similar=S, block_rows=70)
            c = _cpd().fit(Xcm, block_rows=128)
        out.append((m.metric_, m.objective_, c.labels_, c.objective_, c.cluster_centers_))
    for x, y in zip(*out):
        np.testing.assert_array_equal(x, y)
