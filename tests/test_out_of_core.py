"""Data larger than memory: row blocks, per-block partials, streaming fits (issue #11).

Every streaming result is checked against the in-memory fit of the same data
or against a numpy reference computed in one piece.
"""

import pickle

import numpy as np
import pytest

from metriclust._core import blockwise as bw
from metriclust._core.ondisk import is_out_of_core

from _blocks import RowSliceable, memmap


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(1003, 5)) * [1.0, 2.0, 0.5, 3.0, 1.0] + 100.0


# ---------------------------------------------------------------- blockwise


def test_is_out_of_core(tmp_path, data):
    M = memmap(tmp_path, data)
    assert is_out_of_core(M)
    assert is_out_of_core(M[10:20])
    assert is_out_of_core(np.asarray(M))  # an ndarray view of the memmap
    assert is_out_of_core(RowSliceable(data))
    assert not is_out_of_core(data)
    assert not is_out_of_core(data.tolist())
    assert not is_out_of_core(np.array(M))  # a copy in RAM


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
    M = memmap(tmp_path, bad)
    assert bw.read_block(M, 0, 500, np.float64).flags.c_contiguous
    with pytest.raises(ValueError, match=r"Xtrain contains NaN at row 507, column 3.*500:1000"):
        bw.read_block(M, 500, 1000, np.float64, name="Xtrain")
    huge = data.astype(np.float32)
    huge[2, 0] = 1e30
    M = memmap(tmp_path, huge, "huge.npy")
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


@pytest.mark.parametrize("p,k", [(5, 4), (40, 70)])       # the fused C pass; the BLAS path
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shifted", [False, True])
def test_lloyd_partial_sums_only_same_bits(data, p, k, weighted, shifted):
    """with_labels=False (the passes that throw the labels away): labels None, and
    the sums, counts and inertia of the call that returns labels, bit for bit."""
    rng = np.random.default_rng(p + k)
    X = (data[:, rng.integers(5, size=p)] + rng.normal(size=(len(data), p))).astype(np.float32)
    shift = X.mean(axis=0).astype(np.float32) if shifted else None
    C = (X[rng.choice(len(X), k, replace=False)] - (0 if shift is None else shift)).copy()
    w = rng.uniform(0.5, 2.0, len(X)) if weighted else None
    ref = bw.lloyd_partial(X, C, w, shift, 1)
    for nt in (1, 2):
        got = bw.lloyd_partial(X, C, w, shift, nt, with_labels=False)
        assert got[3] is None
        for a, b in zip(got[:2], ref[:2]):
            assert a.tobytes() == b.tobytes()
        assert got[2] == ref[2]


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


# ---------------------------------------------------------------- KMeans

from metriclust import KMeans  # noqa: E402
from metriclust._core.streaming import kmeans_blockwise  # noqa: E402
from metriclust._core.kmeans import kmeans, kmeans_plusplus  # noqa: E402


def _blobs(n=3000, p=4, k=5, seed=0, dtype=np.float64, offset=50.0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10, 10, size=(k, p))
    y = rng.integers(k, size=n)
    return (centers[y] + rng.normal(size=(n, p)) + offset).astype(dtype)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("block_rows", [None, 100, 7])
def test_kmeans_memmap_equals_in_memory(tmp_path, dtype, rtol, block_rows):
    X = _blobs(dtype=dtype)
    M = memmap(tmp_path, X)
    ref = KMeans(5, random_state=3, tol=0).fit(X)
    km = KMeans(5, random_state=3, tol=0).fit(M, block_rows=block_rows)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    assert km.cluster_centers_.dtype == ref.cluster_centers_.dtype
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=rtol)
    assert km.inertia_ == pytest.approx(ref.inertia_, rel=float(rtol) * 10)
    assert km.n_iter_ == ref.n_iter_
    np.testing.assert_array_equal(km.predict(M, block_rows=block_rows), ref.predict(X))
    np.testing.assert_allclose(km.transform(M, block_rows=block_rows), ref.transform(X),
                               rtol=float(rtol) * 10, atol=1e-4 if dtype == np.float32 else 1e-9)
    assert km.score(M) == pytest.approx(ref.score(X), rel=float(rtol) * 10)


@pytest.mark.parametrize("init", ["random", "array", "farthest"])
def test_kmeans_memmap_inits_weights_restarts(tmp_path, init):
    X = _blobs(n=2000, k=4, seed=1)
    w = np.random.default_rng(2).integers(0, 4, size=len(X)).astype(float)
    M = memmap(tmp_path, X)
    init_ = X[[0, 1, 2, 3]] if init == "array" else init
    n_init = 1 if init == "array" else 3
    kw = dict(init=init_, n_init=n_init, random_state=7, tol=1e-4)
    ref = KMeans(4, **kw).fit(X, sample_weight=w)
    km = KMeans(4, **kw).fit(M, sample_weight=w, block_rows=333)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-10)
    assert km.inertia_ == pytest.approx(ref.inertia_, rel=1e-10)
    assert km.n_iter_ == ref.n_iter_


def test_kmeans_row_sliceable_and_integer_data(tmp_path):
    X = np.rint(_blobs(n=1500, k=3, seed=4) * 10).astype(np.int32)
    ref = KMeans(3, random_state=0).fit(X)
    km = KMeans(3, random_state=0).fit(RowSliceable(X), block_rows=256)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    assert km.cluster_centers_.dtype == np.float64
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-12)


def test_kmeans_empty_cluster_relocation_matches(tmp_path):
    # a far outlier group and a center placed where no point is nearest
    X = _blobs(n=600, k=3, seed=5)
    init = np.vstack([X[:3], np.full((1, X.shape[1]), 1e4)])
    M = memmap(tmp_path, X)
    ref = KMeans(4, init=init, n_init=1).fit(X)
    km = KMeans(4, init=init, n_init=1).fit(M, block_rows=50)
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-10)
    assert km.n_iter_ == ref.n_iter_


def test_kmeans_memmap_block_size_and_thread_invariant(tmp_path):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X = _blobs(n=5000, p=6, k=6, seed=6, dtype=np.float32)
    M = memmap(tmp_path, X)
    fits = []
    for b, nt in [(5000, 2), (777, 2), (777, 1), (64, 1)]:
        with threadpoolctl.threadpool_limits(nt, user_api="openmp"):
            fits.append(KMeans(6, random_state=0).fit(M, block_rows=b))
    for f in fits[1:]:
        np.testing.assert_array_equal(f.labels_, fits[0].labels_)
        np.testing.assert_allclose(f.cluster_centers_, fits[0].cluster_centers_, rtol=1e-6)
    # the same block size gives the same bits whatever the thread count
    np.testing.assert_array_equal(fits[1].cluster_centers_, fits[2].cluster_centers_)
    assert fits[1].inertia_ == fits[2].inertia_


def test_kmeans_memmap_bad_input(tmp_path):
    X = _blobs(n=500)
    X[321, 2] = np.inf
    M = memmap(tmp_path, X)
    with pytest.raises(ValueError, match="infinity at row 321, column 2"):
        KMeans(3).fit(M, block_rows=100)
    M = memmap(tmp_path, _blobs(n=500), "ok.npy")
    with pytest.raises(ValueError, match="online"):
        KMeans(3, algorithm="online").fit(M, block_rows=100)
    with pytest.raises(ValueError, match="convergence='objective'"):
        KMeans(3, convergence="objective").fit(M, block_rows=100)
    # X within one block is read whole and fitted in memory: every option works
    for kw in ({"algorithm": "online"}, {"convergence": "objective"}):
        np.testing.assert_array_equal(KMeans(3, random_state=0, **kw).fit(M).labels_,
                                      KMeans(3, random_state=0, **kw).fit(np.asarray(M)).labels_)
    km = KMeans(3, random_state=0).fit(M)
    with pytest.raises(ValueError, match="3 features"):
        km.predict(memmap(tmp_path, np.zeros((5, 3)), "narrow.npy"))


def test_kmeans_memmap_does_not_copy_x(tmp_path):
    import tracemalloc

    X = _blobs(n=400_000, p=8, k=4, seed=8)
    M = memmap(tmp_path, X)
    init = X[[0, 1, 2, 3]].copy()
    del X
    tracemalloc.start()
    try:
        km = KMeans(4, init=init, max_iter=5).fit(M, block_rows=8192)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # X is 25.6 MB; labels 1.6 MB and a few 0.5 MB blocks are all that is allowed
    assert peak < M.nbytes / 4, peak
    assert km.labels_.dtype == np.int32


def test_kmeans_plusplus_on_sample_quality():
    """Seeding from a 2% uniform sample is about as good as k-means++ on all rows."""
    X = _blobs(n=50_000, p=5, k=12, seed=9, offset=0.0)
    Xc = X - X.mean(axis=0)
    pot_sample, pot_full, fit_sample, fit_full = [], [], [], []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(len(X), size=1000, replace=False))
        c_s, _ = kmeans_plusplus(Xc[idx], 12, random_state=seed)
        c_f, _ = kmeans_plusplus(Xc, 12, random_state=seed)
        for c, out in ((c_s, pot_sample), (c_f, pot_full)):
            out.append(float(((Xc[:, None] - c[None]) ** 2).sum(-1).min(1).sum()))
        fit_sample.append(kmeans_blockwise(X, 12, random_state=seed, seed_sample_size=1000,
                                           block_rows=10_000).inertia)
        fit_full.append(kmeans(X, 12, random_state=seed).inertia)
    assert np.median(pot_sample) <= 1.25 * np.median(pot_full)
    assert np.median(fit_sample) <= 1.02 * np.median(fit_full)


# ------------------------------------------------- past 2**31 elements (64-bit indexing)


def _rss_anon_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def _nearest_and_sums_reference(M, centers, n_tail, block_rows=1 << 20):
    """numpy, one block at a time: cluster sizes and sums for the nearest of
    ``centers``, and the labels of the last ``n_tail`` rows."""
    k = centers.shape[0]
    C = centers.astype(np.float64)
    cc = (C ** 2).sum(1)
    sums, counts = np.zeros((k, M.shape[1])), np.zeros(k)
    for s, e in bw.row_blocks(M.shape[0], block_rows):
        B = np.asarray(M[s:e], dtype=np.float64)
        lab = np.argmin(cc - 2.0 * B @ C.T, axis=1)
        sums += np.eye(k)[lab].T @ B
        counts += np.bincount(lab, minlength=k)
    return sums, counts, lab[-n_tail:]


def test_nearest_and_sums_reference_is_right():
    X = _blobs(n=1000, k=3, seed=3, offset=0.0)
    C = X[:3]
    sums, counts, tail = _nearest_and_sums_reference(X, C, 50, block_rows=128)
    lab = ((X[:, None] - C[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(tail, lab[-50:])
    np.testing.assert_array_equal(counts, np.bincount(lab, minlength=3))
    np.testing.assert_allclose(sums, [X[lab == j].sum(0) for j in range(3)], rtol=1e-12)


@pytest.mark.slow
def test_fit_past_2_31_elements_on_sparse_file(tmp_path):
    """A float32 file of 134.25M x 16 = 2.148e9 elements (> 2**31): zero rows
    (a sparse file's holes, no disk) and three groups of distinguishable points
    in the last rows, all past element 2**31. The C kernels run on the whole
    memmap at once (element offsets past 2**31) and KMeans fits it by blocks;
    both are checked against a block-wise numpy reference.

    Reads the 8.6 GB of (zero) pages about six times: 825 s measured on the
    shared 2-core machine at load average 8-19. Anonymous memory stays below
    4 GB (labels, distances); the file's pages are page cache."""
    from metriclust._core.kmeans import assign_labels
    from metriclust._kernels._sums import cluster_sums

    n, p, per = 134_250_000, 16, 3000
    assert n * p > 2**31 and (n - 3 * per) * p > 2**31
    path = tmp_path / "big.npy"
    M = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, p))
    rng = np.random.default_rng(0)
    truth = np.zeros((4, p), dtype=np.float32)
    truth[1], truth[2] = 10.0, -10.0
    truth[3, ::2], truth[3, 1::2] = 10.0, -10.0
    tail = np.repeat(np.arange(1, 4), per)
    M[n - 3 * per:] = truth[tail] + rng.normal(scale=0.5, size=(3 * per, p))
    M.flush()
    del M
    M = np.load(path, mmap_mode="r")

    # block-wise numpy reference: nearest of ``truth`` and per-cluster sums
    ref_sums, ref_counts, ref_tail = _nearest_and_sums_reference(M, truth, 3 * per)
    np.testing.assert_array_equal(ref_tail, tail)
    assert ref_counts[0] == n - 3 * per

    # the C kernels on all 2.148e9 elements in one call
    labels, d2 = assign_labels(M, truth)
    assert labels.shape == (n,)
    np.testing.assert_array_equal(np.bincount(labels, minlength=4), ref_counts)
    np.testing.assert_array_equal(labels[-3 * per:], tail)
    del d2
    sums = cluster_sums(np.asarray(M), labels, 4)
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-9, atol=1e-6)
    del labels

    # the estimator, end to end, by blocks
    init = truth + np.float32(0.7)
    km = KMeans(4, init=init, n_init=1, tol=0.0, max_iter=10).fit(M)
    np.testing.assert_array_equal(np.bincount(km.labels_, minlength=4), ref_counts)
    np.testing.assert_array_equal(km.labels_[-3 * per:], tail)
    np.testing.assert_allclose(km.cluster_centers_, ref_sums / ref_counts[:, None],
                               rtol=1e-5, atol=1e-5)
    assert km.n_iter_ <= 3
    assert _rss_anon_bytes() < 4 * 2**30


# ------------------------------------------------- command line: a CSV past memory


def _numeric_csv(path, X, header=True):
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(f"f{j}" for j in range(X.shape[1])) + "\n")
        for row in X:
            fh.write(",".join(f"{v:.6f}" for v in row) + "\n")


@pytest.mark.parametrize("header", [True, False])
def test_csv_to_npy_in_small_chunks(tmp_path, header):
    from metriclust._cli import csv_to_npy

    X = _blobs(n=537, p=3, seed=2)
    csv = tmp_path / "x.csv"
    _numeric_csv(csv, X, header=header)
    lines = []
    shape = csv_to_npy(str(csv), str(tmp_path / "x.npy"), chunk_bytes=100, log=lines.append)
    assert shape == (537, 3) and len(lines) > 10
    M = np.load(tmp_path / "x.npy", mmap_mode="r")
    np.testing.assert_array_equal(M, np.loadtxt(csv, delimiter=",", skiprows=int(header)))


def test_csv_to_npy_refuses_text(tmp_path):
    from metriclust._cli import CLIError, csv_to_npy

    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n3,x\n")
    with pytest.raises(CLIError, match="plain finite numbers"):
        csv_to_npy(str(csv), str(tmp_path / "x.npy"))
    assert not list(tmp_path.glob("*.tmp")) and not (tmp_path / "x.npy").exists()


def test_cli_cluster_out_of_core_matches_in_memory(tmp_path):
    import subprocess
    import sys

    X = _blobs(n=2000, p=3, k=4, seed=3)
    csv = tmp_path / "x.csv"
    _numeric_csv(csv, X)

    def cluster(out, *extra):
        return subprocess.run([sys.executable, "-m", "metriclust", "cluster", str(csv),
                               "--n-clusters", "4", "--random-state", "0", "--output",
                               str(out), *extra], capture_output=True, text=True, timeout=300)

    ref = cluster(tmp_path / "ref.csv")
    assert ref.returncode == 0, ref.stderr
    proc = cluster(tmp_path / "ooc.csv", "--out-of-core", "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert "converting" in proc.stderr and "by blocks of rows" in proc.stderr
    assert (tmp_path / "ooc.X.npy").exists()
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "ooc.csv", skiprows=1),
                                  np.loadtxt(tmp_path / "ref.csv", skiprows=1))
    assert "2000 rows in 4 clusters" in proc.stdout
    again = cluster(tmp_path / "ooc.csv", "--out-of-core", "--verbose", "--force")
    assert again.returncode == 0 and "reusing" in again.stderr
    bad = cluster(tmp_path / "x2.csv", "--out-of-core", "--method", "cpcm")
    assert bad.returncode == 2 and "--method kmeans only" in bad.stderr


def test_readme_example_prints_what_it_says():
    from pathlib import Path
    import contextlib
    import io
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## Data larger than memory"):]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102
    assert out.getvalue().strip() == "[5000 5000]"


# ------------------------------------------------- MMC: only the rows the pairs touch


def test_mmc_memmap_reads_only_pair_rows(tmp_path, monkeypatch):
    from metriclust import MMC
    from metriclust._core import streaming

    rng = np.random.default_rng(0)
    X = _blobs(n=3000, p=4, k=3, seed=11)
    S = rng.integers(0, 3000, size=(40, 2))
    S = S[S[:, 0] != S[:, 1]]
    D = rng.integers(0, 3000, size=(60, 2))
    D = D[D[:, 0] != D[:, 1]]
    ref = MMC(random_state=0).fit(X, similar=S, dissimilar=D)
    M = memmap(tmp_path, X)
    seen = {}
    real = streaming.gather_pair_rows

    def spy(*a):
        out = real(*a)
        seen["rows"] = out[0].shape[0]
        return out

    # mmc imports it from streaming when an out-of-core X needs it (not at import)
    monkeypatch.setattr(streaming, "gather_pair_rows", spy)
    est = MMC(random_state=0).fit(M, similar=S, dissimilar=D)
    assert seen["rows"] == np.unique(np.concatenate([S.ravel(), D.ravel()])).size < 300
    np.testing.assert_allclose(est.metric_, ref.metric_, rtol=1e-7, atol=1e-10)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-9)
    np.testing.assert_array_equal(est.similar_, S)
    np.testing.assert_array_equal(est.dissimilar_, D)
    np.testing.assert_allclose(est.transform(X[:5]), ref.transform(X[:5]), rtol=1e-7, atol=1e-10)
    with pytest.raises(ValueError, match="similar"):
        MMC().fit(M, similar=[[0, 5000]], dissimilar=D)


def test_label_counts_by_chunks():
    from metriclust._core.streaming import label_counts

    lab = np.random.default_rng(0).integers(0, 7, size=10_001).astype(np.int32)
    np.testing.assert_array_equal(label_counts(lab, 9, chunk=1000), np.bincount(lab, minlength=9))


# ------------------------------------------------- the block engine (local backend)

from metriclust._core.engine import source  # noqa: E402


def _col_sums(block):
    return block.sum(axis=0)


def _argmax_changed(block, old):
    lab = block.argmax(axis=1).astype(np.int32)
    return lab, int(np.count_nonzero(lab != old))


def _row_norms(block, scale):
    return scale * np.sqrt((block * block).sum(axis=1))


def test_engine_local_map_reduce_rows_in_block_order(tmp_path, data):
    M = memmap(tmp_path, data)
    src = source(M, block_rows=77)
    assert src.kind == "local" and src.n_blocks == 14 and src.shape == data.shape
    ref = [data[s:e].sum(axis=0) for s, e in src.bounds]
    np.testing.assert_array_equal(np.array(src.map(_col_sums)), np.array(ref))
    acc = ref[0].copy()
    for r in ref[1:]:     # reduced left to right, in block order
        acc += r
    np.testing.assert_array_equal(src.reduce(_col_sums), acc)
    # per-row state written in place, block by block
    lab = src.full(-1, np.int32)
    out, changed = src.map_keep(_argmax_changed, rows=(lab,), out=lab)
    assert out is lab and sum(changed) == data.shape[0]
    np.testing.assert_array_equal(lab.values, data.argmax(axis=1))
    lab.set([5, 900], [4, 4])
    assert lab.values[5] == lab.values[900] == 4
    np.testing.assert_array_equal(src.take_rows([900, 5, 5, 0]), data[[900, 5, 5, 0]])
    np.testing.assert_allclose(src.rowwise(_row_norms, 2.0),
                               2.0 * np.linalg.norm(data, axis=1), rtol=1e-14)
    Xr = RowSliceable(data)
    np.testing.assert_array_equal(source(Xr, block_rows=100).take_rows([999, 3]),
                                  data[[999, 3]])
    with pytest.raises(ValueError, match="block_rows"):
        source(M, block_rows=0)
    bad = data.copy()
    bad[500, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 500, column 1"):
        source(memmap(tmp_path, bad, "bad.npy"), block_rows=77).reduce(_col_sums)


def test_kmeans_parallel_init_on_memmap(tmp_path):
    # k-means|| runs on the same engine for a memmap: as good as k-means++ in memory
    X = _blobs(n=6000, p=3, k=8, seed=14, offset=0.0)
    M = memmap(tmp_path, X)
    got = [KMeans(8, init="k-means||", random_state=s).fit(M, block_rows=700).inertia_
           for s in range(4)]
    ref = [KMeans(8, random_state=s).fit(X).inertia_ for s in range(4)]
    assert np.median(got) <= 1.05 * np.median(ref)
    a = KMeans(8, init="k-means||", random_state=1).fit(M, block_rows=700)
    b = KMeans(8, init="k-means||", random_state=1).fit(M, block_rows=700)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


# ------------------------------------------------- CPCM past RAM

from metriclust import CPCM  # noqa: E402

# blur ratio: relative agreement with the in-memory fit (the sums' order differs)
BR_RTOL = {np.float32: 1e-5, np.float64: 1e-9}


def _cpcm_data(dtype, n=24000):
    # above the 20,000-row search sample: the polish runs on the blocks
    rng = np.random.default_rng(13)
    centers = np.array([[0.0, 0.0, 0.0, 0.0], [4.0, 1.0, 0.0, 0.0], [0.0, 5.0, 2.0, 0.0]])
    y = rng.integers(3, size=n)
    X = centers[y] + rng.normal(size=(n, 4)) * [1.0, 1.5, 0.7, 2.0] + 20.0
    return X.astype(dtype)


@pytest.mark.parametrize("predictor, dtype", [("linear", np.float64), ("linear", np.float32),
                                              ("kernel", np.float64)])
def test_cpcm_memmap_equals_in_memory_fit(tmp_path, predictor, dtype):
    X = _cpcm_data(dtype)
    kw = dict(predictor=predictor, n_init=2, random_state=0)
    if predictor == "kernel":
        kw["n_components"] = 40
    ref = CPCM(3, **kw).fit(X)
    M = memmap(tmp_path, X)
    got = CPCM(3, **kw).fit(M, block_rows=5000)
    assert got.search_size_ == ref.search_size_ == 20000
    assert got.labels_.dtype == np.int32
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert got.n_iter_ == ref.n_iter_
    assert got.best_start_ == ref.best_start_
    assert got.blur_ratio_ == pytest.approx(ref.blur_ratio_, rel=BR_RTOL[dtype])
    tol = 1e-4 if dtype == np.float32 else 1e-8
    np.testing.assert_allclose(got.centers_, ref.centers_, rtol=tol, atol=tol)
    if predictor == "linear":
        np.testing.assert_allclose(got.coef_, ref.coef_, rtol=tol, atol=tol)
    else:
        assert got.sigma_ == ref.sigma_
        assert got.effective_dof_ == pytest.approx(ref.effective_dof_, rel=1e-9)
    Z = got.transform(M)
    np.testing.assert_allclose(Z, ref.transform(X), rtol=tol, atol=tol)
    np.testing.assert_array_equal(got.predict(M), ref.predict(X))
    np.testing.assert_allclose(got.transform(X[:100]), Z[:100], rtol=1e-12, atol=1e-12)


def test_cpcm_memmap_block_size_and_thread_invariant(tmp_path):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X = _cpcm_data(np.float64)
    M = memmap(tmp_path, X)
    fits = []
    for b, nt in [(24000, 2), (3001, 2), (3001, 1)]:
        with threadpoolctl.threadpool_limits(nt, user_api="openmp"):
            fits.append(CPCM(3, n_init=2, random_state=1).fit(M, block_rows=b))
    for f in fits[1:]:      # block size: the same labels, the sums' rounding apart
        np.testing.assert_array_equal(f.labels_, fits[0].labels_)
        assert f.blur_ratio_ == pytest.approx(fits[0].blur_ratio_, rel=1e-12)
        np.testing.assert_allclose(f.coef_, fits[0].coef_, rtol=1e-10, atol=1e-12)
    # the same blocks give the same bits whatever the thread count
    assert fits[1].blur_ratio_ == fits[2].blur_ratio_
    np.testing.assert_array_equal(fits[1].coef_, fits[2].coef_)
    np.testing.assert_array_equal(fits[1].centers_, fits[2].centers_)


def test_cpcm_memmap_small_or_other_predictors_in_memory(tmp_path):
    M = memmap(tmp_path, _cpcm_data(np.float64, n=300))
    # stepwise and lda have no block path: X is read into memory
    np.testing.assert_array_equal(
        CPCM(2, predictor="stepwise", random_state=0, n_init=2).fit(M).labels_,
        CPCM(2, predictor="stepwise", random_state=0, n_init=2).fit(np.asarray(M)).labels_)
    # X within the search sample is read whole: the in-memory fit
    np.testing.assert_array_equal(CPCM(2, random_state=0, n_init=2).fit(M).labels_,
                                  CPCM(2, random_state=0, n_init=2).fit(np.asarray(M)).labels_)


def test_kmeans_blockwise_of_a_per_block_transform(tmp_path):
    # k-means of rows transformed block by block (never stored) = k-means of the
    # transformed data in memory; a pass over a subset of the blocks
    from metriclust._core.streaming import Affine

    X = _blobs(n=3000, p=4, k=4, seed=15)
    B = np.random.default_rng(1).normal(size=(4, 3))
    b0 = np.array([1.0, -2.0, 0.5])
    M = memmap(tmp_path, X)
    got = kmeans_blockwise(M, 4, random_state=2, block_rows=400, transform=Affine(B, b0))
    ref = kmeans(np.ascontiguousarray(X @ B + b0), 4, random_state=2)
    np.testing.assert_array_equal(got.labels, ref.labels)
    np.testing.assert_allclose(got.centers, ref.centers, rtol=1e-10)
    src = source(M, block_rows=400)
    np.testing.assert_array_equal(np.array(src.map(_col_sums, blocks=[3, 0])),
                                  np.array([X[1200:1600].sum(0), X[:400].sum(0)]))
