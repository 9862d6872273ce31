"""Data larger than memory: row blocks, per-block partials, streaming fits (issue #11).

Every streaming result is checked against the in-memory fit of the same data
or against a numpy reference computed in one piece.
"""

import pickle

import numpy as np
import pytest

from metriclust._core import blockwise as bw


def _memmap(tmp_path, X, name="X.npy"):
    path = tmp_path / name
    np.save(path, X)
    return np.load(path, mmap_mode="r")


class _RowSliceable:
    """An h5py/zarr-like array: shape, dtype, row slicing, not an ndarray."""

    def __init__(self, a):
        self._a = a
        self.shape = a.shape
        self.dtype = a.dtype

    def __getitem__(self, key):
        return np.array(self._a[key])


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(1003, 5)) * [1.0, 2.0, 0.5, 3.0, 1.0] + 100.0


# ---------------------------------------------------------------- blockwise


def test_is_out_of_core(tmp_path, data):
    M = _memmap(tmp_path, data)
    assert bw.is_out_of_core(M)
    assert bw.is_out_of_core(M[10:20])
    assert bw.is_out_of_core(np.asarray(M))  # an ndarray view of the memmap
    assert bw.is_out_of_core(_RowSliceable(data))
    assert not bw.is_out_of_core(data)
    assert not bw.is_out_of_core(data.tolist())
    assert not bw.is_out_of_core(np.array(M))  # a copy in RAM


def test_row_blocks_cover_rows_once():
    for n, b in [(0, 3), (1, 3), (10, 3), (9, 3), (5, 100)]:
        blocks = bw.row_blocks(n, b)
        covered = np.concatenate([np.arange(s, e) for s, e in blocks]) if blocks else []
        assert list(covered) == list(range(n))
        assert all(0 < e - s <= b for s, e in blocks)
    with pytest.raises(ValueError, match="block_rows"):
        bw.row_blocks(10, 0)


def test_default_block_rows_formula():
    assert bw.default_block_rows(16, 4) == 64 * 2**20 // 64
    assert bw.default_block_rows(10**9, 8) == 1
    assert bw.default_block_rows(3, 8, block_bytes=48) == 2


def test_read_block_checks_name_row_range(tmp_path, data):
    bad = data.copy()
    bad[507, 3] = np.nan
    M = _memmap(tmp_path, bad)
    assert bw.read_block(M, 0, 500, np.float64).flags.c_contiguous
    with pytest.raises(ValueError, match=r"Xtrain contains NaN at row 507, column 3.*500:1000"):
        bw.read_block(M, 500, 1000, np.float64, name="Xtrain")
    huge = data.astype(np.float32)
    huge[2, 0] = 1e30
    M = _memmap(tmp_path, huge, "huge.npy")
    with pytest.raises(ValueError, match=r"X has a value of magnitude 1e\+30 in rows 0:4"):
        bw.read_block(M, 0, 4, np.float32)


def test_moments_partial_reduce_matches_numpy(data):
    rng = np.random.default_rng(1)
    w = rng.uniform(0.1, 2.0, size=data.shape[0])
    shift = data[:5].mean(axis=0)
    parts = [bw.moments_partial(data[s:e], w[s:e], shift) for s, e in bw.row_blocks(len(data), 97)]
    ws, s, c = bw.reduce_partials(parts)
    D = data - shift
    np.testing.assert_allclose(ws, w.sum(), rtol=1e-13)
    np.testing.assert_allclose(s, w @ D, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(c, D.T @ (D * w[:, None]), rtol=1e-12)


def test_lloyd_partial_matches_dense_step(data):
    X = data.astype(np.float32)
    shift = X.mean(axis=0, dtype=np.float64).astype(np.float32)
    Xc = X - shift
    C = Xc[[0, 100, 200, 300]].copy()
    parts = [bw.lloyd_partial(X[s:e], C, shift=shift) for s, e in bw.row_blocks(len(X), 128)]
    sums, counts, inertia, labels = bw.reduce_partials(parts)
    d2 = ((Xc[:, None, :].astype(np.float64) - C[None].astype(np.float64)) ** 2).sum(-1)
    ref = d2.argmin(axis=1)
    np.testing.assert_array_equal(labels, ref)
    assert labels.dtype == np.int64
    np.testing.assert_allclose(counts, np.bincount(ref, minlength=4))
    ref_sums = np.stack([Xc[ref == k].astype(np.float64).sum(0) for k in range(4)])
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-10, atol=1e-6)
    np.testing.assert_allclose(inertia, d2.min(axis=1).sum(), rtol=1e-5)
    # weighted: integer weights act as repeated rows
    w = np.arange(len(X)) % 3
    parts = [bw.lloyd_partial(X[s:e], C, w[s:e], shift) for s, e in bw.row_blocks(len(X), 300)]
    sums_w, counts_w, inertia_w, _ = bw.reduce_partials(parts)
    np.testing.assert_allclose(counts_w, np.bincount(ref, weights=w, minlength=4))
    np.testing.assert_allclose(inertia_w, w @ d2.min(axis=1), rtol=1e-5)


def test_partials_block_size_invariant_and_picklable(data):
    C = data[:3] - 100.0
    results = []
    for b in (1003, 64, 7):
        parts = [bw.lloyd_partial(data[s:e], C, shift=np.full(5, 100.0))
                 for s, e in bw.row_blocks(len(data), b)]
        results.append(bw.reduce_partials(parts))
    for r in results[1:]:
        np.testing.assert_array_equal(r[3], results[0][3])
        np.testing.assert_allclose(r[0], results[0][0], rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(r[2], results[0][2], rtol=1e-12)
    for f in (bw.lloyd_partial, bw.moments_partial, bw.tsqr_partial, bw.reduce_partials,
              bw.combine_r, bw.read_block):
        assert pickle.loads(pickle.dumps(f)) is f


def test_tsqr_matches_numpy_qr(data):
    D = data - 100.0
    R_ref = np.linalg.qr(D, mode="r")
    R_ref = R_ref * np.where(np.diag(R_ref) < 0, -1.0, 1.0)[:, None]
    for b in (1003, 100, 3):  # a 3-row block has fewer rows than features
        R = bw.combine_r([bw.tsqr_partial(D[s:e]) for s, e in bw.row_blocks(len(D), b)])
        assert R.shape == (5, 5)
        np.testing.assert_allclose(R, R_ref, rtol=1e-10, atol=1e-9)
