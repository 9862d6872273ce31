"""The k-means core (metriclust._core.kmeans, csrc/kmeans.c) and metriclust.KMeans.

Checked against scikit-learn's Lloyd (same init array -> same labels, centers
to 1e-10), against slow numpy / pure-Python references kept here (Lloyd with
the documented empty-cluster rule, k-means++ with the same random draws,
the notes' sequential update), and for invariances: weights == repeated rows,
1 thread == 2 threads bitwise, dtype preserved, no NaN on degenerate input.
"""

import warnings

import numpy as np
import pytest
from _reference import sq_distances as ref_sq_dist

from metriclust import KMeans
from metriclust._core.kmeans import assign_labels, center_distances, kmeans, kmeans_plusplus
from metriclust._kernels import _kmeans as _k


# --------------------------------------------------------------------------
# Slow, obviously-correct references
# --------------------------------------------------------------------------
def ref_lloyd(X, C, w, max_iter, tol):
    """Lloyd with scikit-learn's stopping rule and kmeans.h's relocation rule."""
    X = X.astype(np.float64)
    C = C.astype(np.float64).copy()
    n, K = X.shape[0], C.shape[0]
    old = np.full(n, -1)
    strict = False
    for it in range(max_iter):
        D = ref_sq_dist(X, C)
        lab = D.argmin(axis=1)
        sums = np.array([(w[lab == k, None] * X[lab == k]).sum(0) for k in range(K)])
        W = np.array([w[lab == k].sum() for k in range(K)])
        dist = D[np.arange(n), lab]
        order = sorted(range(n), key=lambda i: (-dist[i], i))
        taken = set()
        for k in range(K):
            if W[k] != 0:
                continue
            for i in order:
                if i in taken or dist[i] <= 0 or w[i] <= 0:
                    continue
                taken.add(i)
                if W[lab[i]] - w[i] <= 0:
                    continue
                sums[lab[i]] -= w[i] * X[i]
                W[lab[i]] -= w[i]
                sums[k] = w[i] * X[i]
                W[k] = w[i]
                break
        new = np.where(W[:, None] > 0, sums / np.where(W > 0, W, 1)[:, None], C)
        shift = ((new - C) ** 2).sum()
        C = new
        if np.array_equal(lab, old):
            strict = True
            break
        if shift <= tol:
            break
        old = lab
    lab = ref_sq_dist(X, C).argmin(axis=1)
    inertia = float((w * ((X - C[lab]) ** 2).sum(1)).sum())
    return C, lab, inertia, it + 1, strict


def ref_kmeans_plusplus(X, k, w, rng):
    """Greedy k-means++ drawing exactly the random numbers the core draws, by
    inverse CDF over the rows sorted by squared distance to their weighted mean
    (so that the draws do not depend on the order of the rows)."""
    n = X.shape[0]
    mean = (w @ X) / w.sum()
    order = np.argsort(((X - mean) ** 2).sum(1), kind="stable")
    X, w = X[order], w[order]
    trials = 2 + int(np.log(k))
    idx = [rng.choice(n, p=w / w.sum())]
    closest = ((X - X[idx[0]]) ** 2).sum(1)
    for _ in range(1, k):
        cum = np.cumsum(w * closest)
        cand = np.minimum(np.searchsorted(cum, rng.uniform(size=trials) * cum[-1],
                                          side="right"), n - 1)
        d = np.minimum(ref_sq_dist(X[cand], X), closest[None, :])
        best = int(np.argmin(d @ w))
        idx.append(int(cand[best]))
        closest = d[best]
    return order[np.array(idx)]


def ref_sequential(X, C, w, max_iter, tol):
    """The lecture notes' sequential k-means, one row at a time, in plain Python:
    each row joins its nearest centroid, leaves its old one, and both centroids
    are recomputed as the weighted means of their members (an emptied one stays)."""
    C = [list(map(float, c)) for c in C]
    K, d = len(C), X.shape[1]
    rows = X.tolist()
    lab = [-1] * len(X)
    for it in range(max_iter):
        prev = [c[:] for c in C]
        changed = 0
        for i, x in enumerate(rows):
            dists = [sum((x[j] - C[k][j]) ** 2 for j in range(d)) for k in range(K)]
            k = dists.index(min(dists))
            if k == lab[i]:
                continue
            changed += 1
            old, lab[i] = lab[i], k
            for c in {old, k} - {-1}:
                mem = [r for r in range(len(rows)) if lab[r] == c and w[r] > 0]
                if mem:
                    W = sum(w[r] for r in mem)
                    C[c] = [sum(w[r] * rows[r][j] for r in mem) / W for j in range(d)]
        shift = sum((C[k][j] - prev[k][j]) ** 2 for k in range(K) for j in range(d))
        if changed == 0 or shift <= tol:
            break
    return np.array(C), it + 1


def blobs(n, d, k, seed, spread=4.0):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=spread, size=(k, d))
    X = means[rng.integers(k, size=n)] + rng.normal(size=(n, d))
    return np.ascontiguousarray(X)


_DATASETS = {}


def datasets(load_dataset):
    if _DATASETS:
        return _DATASETS
    out = _DATASETS
    out.update({name: load_dataset(name)[0] for name in ("iris", "wine", "glass", "sonar")})
    out["blobs2"] = blobs(4000, 2, 6, 0)
    out["blobs3"] = blobs(3000, 3, 5, 1)
    out["blobs40"] = blobs(2000, 40, 7, 2)  # GEMM path
    return out


# --------------------------------------------------------------------------
# Agreement with scikit-learn
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["iris", "wine", "glass", "sonar", "blobs2", "blobs3",
                                  "blobs40"])
@pytest.mark.parametrize("K", [3, 8])
def test_lloyd_matches_sklearn(load_dataset, name, K):
    from sklearn.cluster import KMeans as SKKMeans

    X = datasets(load_dataset)[name]
    rng = np.random.default_rng(K)
    init = X[rng.choice(len(X), K, replace=False)]
    for tol in (0.0, 1e-4):
        sk = SKKMeans(K, init=init, n_init=1, tol=tol, max_iter=300,
                      algorithm="lloyd").fit(X)
        res = kmeans(X, K, init=init, tol=tol, max_iter=300)
        assert res.n_iter == sk.n_iter_
        np.testing.assert_array_equal(res.labels, sk.labels_)
        np.testing.assert_allclose(res.centers, sk.cluster_centers_, rtol=0, atol=1e-10)
        assert res.inertia == pytest.approx(sk.inertia_, rel=1e-10)


def test_lloyd_matches_sklearn_weighted():
    from sklearn.cluster import KMeans as SKKMeans

    X = blobs(1500, 3, 4, 5)
    w = np.random.default_rng(0).uniform(0.1, 3.0, size=len(X))
    init = X[:4].copy()
    # tol=0: scikit-learn's tolerance uses the unweighted variance, ours the
    # weighted one (so that weights act as repeated rows).
    sk = SKKMeans(4, init=init, n_init=1, tol=0).fit(X, sample_weight=w)
    res = kmeans(X, 4, init=init, tol=0, sample_weight=w)
    assert res.n_iter == sk.n_iter_
    np.testing.assert_array_equal(res.labels, sk.labels_)
    np.testing.assert_allclose(res.centers, sk.cluster_centers_, rtol=0, atol=1e-10)


# --------------------------------------------------------------------------
# Against the numpy reference: both distance paths, relocation
# --------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 11, 20])
@pytest.mark.parametrize("method", ["direct", "gemm"])
@pytest.mark.parametrize("K", [6, 21])  # GEMM path: row-major below 16 centers
@pytest.mark.parametrize("weighted", [True, False])  # unweighted: the delta passes
def test_lloyd_kernel_matches_reference(d, method, K, weighted):
    X = blobs(700, d, 5, d)
    C0 = X[np.random.default_rng(d).choice(len(X), K, replace=False)].copy()
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(X))
    if not weighted:
        w = np.ones(len(X))
    C = C0.copy()
    lab, inertia, n_iter, strict = _k.lloyd(X, w if weighted else None, C, 100, 0.0, method, 2)
    rC, rlab, rinertia, rn_iter, rstrict = ref_lloyd(X, C0, w, 100, 0.0)
    assert (n_iter, strict) == (rn_iter, rstrict)
    np.testing.assert_array_equal(lab, rlab)
    np.testing.assert_allclose(C, rC, rtol=0, atol=1e-10)
    assert inertia == pytest.approx(rinertia, rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(1, 9), (2, 24), (8, 12), (16, 8), (16, 32), (33, 6)])
def test_running_sums_are_the_means_of_the_labels(dtype, d, K):
    """Unweighted Lloyd passes after the first few add only the rows that
    moved to running sums (csrc accum_delta): the first passes, every pass
    after ML_KM_DELTA_MAX_RUN (16) delta passes and every pass after an empty
    cluster sum afresh.  Long runs (uniform data, 64 segments) go through the
    first two and the deltas' roundings would add up over them: at strict
    convergence the centers are the means of their labels to a few ulps (the
    exact means, math.fsum), and the same bits on 1 and 2 threads."""
    import math

    X = np.random.default_rng(100 + d).random((40_000, d)).astype(dtype)
    C0 = X[np.random.default_rng(d).choice(len(X), K, replace=False)].copy()
    runs = []
    for nt in (1, 2):
        C = C0.copy()
        runs.append((C, *_k.lloyd(X, None, C, 2000, 0.0, "auto", nt)))
    (C, lab, inertia, n_iter, strict), (C2, lab2, *_) = runs
    assert strict and n_iter > 20, n_iter
    np.testing.assert_array_equal(C2, C)
    np.testing.assert_array_equal(lab2, lab)
    counts = np.bincount(lab, minlength=K)
    assert counts.min() > 0
    exact = np.array([[math.fsum(X[lab == k, j].astype(np.float64)) / counts[k]
                       for j in range(d)] for k in range(K)])
    scale = np.abs(exact).max()
    if dtype == np.float32:   # float32(sums / counts): the float32 rounding of the mean
        np.testing.assert_allclose(C, exact, rtol=0, atol=scale * 2.0 ** -23)
    else:
        np.testing.assert_allclose(C, exact, rtol=0, atol=scale * 2e-15)


def test_empty_clusters_relocated_like_reference():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    X[:5] += 8.0  # far points that will be taken by the empty clusters
    init = np.array([[0.0, 0.0], [0.1, 0.1], [50.0, 50.0], [-60.0, 40.0]])
    w = np.ones(len(X))
    C = init.copy()
    lab, inertia, n_iter, _ = _k.lloyd(X, None, C, 50, 0.0, "direct", 1)
    rC, rlab, rinertia, rn_iter, _ = ref_lloyd(X, init, w, 50, 0.0)
    assert n_iter == rn_iter
    np.testing.assert_array_equal(lab, rlab)
    np.testing.assert_allclose(C, rC, atol=1e-12)
    assert np.bincount(lab, minlength=4).min() > 0  # every cluster refilled


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_duplicates_and_empty_never_nan(dtype):
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(3, 2)), 10, axis=0).astype(dtype)
    for init in ("k-means++", "random", np.repeat(X[:1], 5, axis=0)):
        res = kmeans(X, 5, init=init, random_state=0)
        assert np.all(np.isfinite(res.centers))
        assert np.isfinite(res.inertia)
        assert res.inertia == pytest.approx(0.0, abs=1e-5)
        assert res.labels.min() >= 0 and res.labels.max() < 5
    # all points identical
    Z = np.ones((7, 3), dtype=dtype)
    res = kmeans(Z, 3, random_state=0)
    assert np.all(np.isfinite(res.centers)) and res.inertia == 0.0


def test_zero_weights_never_nan():
    X = blobs(200, 2, 3, 4)
    w = np.zeros(len(X))
    w[:50] = 1.0
    res = kmeans(X, 4, sample_weight=w, random_state=0)
    assert np.all(np.isfinite(res.centers))


# --------------------------------------------------------------------------
# k-means++ and restarts
# --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_plusplus_matches_reference(dtype, weighted):
    X = blobs(3000, 3, 9, 7).astype(dtype)
    w = np.random.default_rng(2).uniform(0.2, 2, len(X)) if weighted else None
    centers, idx = kmeans_plusplus(X, 9, sample_weight=w, random_state=42)
    ref = ref_kmeans_plusplus(X.astype(np.float64), 9,
                              np.ones(len(X)) if w is None else w.astype(dtype).astype(np.float64),
                              np.random.default_rng(42))
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(centers, X[ref])


def test_n_init_keeps_lowest_inertia():
    X = blobs(1500, 2, 10, 11, spread=2.0)
    runs = [kmeans(X, 10, init="random", random_state=s).inertia for s in range(5)]
    # n_init=5 draws five different seedings from one stream: its best is at
    # least as good as a single run from the same generator.
    first = kmeans(X, 10, init="random", random_state=0)
    best = kmeans(X, 10, init="random", n_init=5, random_state=0)
    assert best.inertia <= first.inertia + 1e-9
    assert min(runs) > 0


def test_same_seed_same_result():
    X = blobs(2000, 4, 5, 12)
    a = kmeans(X, 5, random_state=7, n_init=2)
    b = kmeans(X, 5, random_state=7, n_init=2)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.centers, b.centers)


# --------------------------------------------------------------------------
# Invariances
# --------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["lloyd", "online"])
def test_integer_weights_equal_repeated_rows(algorithm):
    X = blobs(400, 3, 4, 13)
    reps = np.random.default_rng(0).integers(1, 4, size=len(X))
    init = X[[0, 100, 200, 300]].copy()
    # np.repeat keeps the copies consecutive: in the sequential form the copies
    # of a row all join (and leave) the same centroid, as the weighted row does.
    Xr = np.repeat(X, reps, axis=0)
    a = kmeans(X, 4, init=init, sample_weight=reps.astype(float), tol=0, algorithm=algorithm)
    b = kmeans(Xr, 4, init=init, tol=0, algorithm=algorithm)
    assert a.n_iter == b.n_iter
    np.testing.assert_array_equal(np.repeat(a.labels, reps), b.labels)
    np.testing.assert_allclose(a.centers, b.centers, rtol=0, atol=1e-10)
    assert a.inertia == pytest.approx(b.inertia, rel=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("algorithm", ["lloyd", "online", "elkan"])
@pytest.mark.parametrize("d", [2, 8, 30])
def test_one_vs_two_threads_bitwise(dtype, algorithm, d):
    X = blobs(40000, d, 12, 14).astype(dtype)  # many segments
    w = np.random.default_rng(0).uniform(0.5, 1.5, len(X))
    a = kmeans(X, 12, sample_weight=w, random_state=3, n_threads=1, algorithm=algorithm,
               max_iter=20)
    b = kmeans(X, 12, sample_weight=w, random_state=3, n_threads=2, algorithm=algorithm,
               max_iter=20)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.centers.tobytes() == b.centers.tobytes()
    assert a.inertia == b.inertia and a.n_iter == b.n_iter


@pytest.mark.parametrize("runner", ["lloyd", "hamerly"])
@pytest.mark.parametrize("d,K,dtype", [
    (1, 5, np.float64), (2, 8, np.float64), (3, 8, np.float32), (8, 32, np.float64),
    (9, 17, np.float32), (16, 32, np.float32), (33, 64, np.float64), (64, 64, np.float32),
    (64, 32, np.float64), (130, 8, np.float64), (16, 256, np.float32),
    (300, 300, np.float64), (64, 1024, np.float32)])
def test_thread_counts_beyond_two_bitwise(runner, d, K, dtype):
    """Unweighted passes (running sums after the first) on 3 and 7 threads give
    1 thread's labels, center bits, inertia and n_iter: a thread count that
    does not divide the segments, and more threads than this machine's cores
    (a 16-core run of the C harness checked 1, 3 and 16 likewise).  Every
    kernel: 1-D, small-d, lanes, the float32 screen (d = 64, K = 32 float64),
    the tile at d = 130, K = 256, and past the old BLAS crossover (d = 300,
    K = 1024)."""
    n = 30011 if d * K < 20000 else 8011  # wide shapes cost K d a row: fewer rows
    X = np.random.default_rng(d * 1000 + K).random((n, d)).astype(dtype)
    C0 = X[np.random.default_rng(K).choice(len(X), K, replace=False)].copy()
    runs = []
    for nt in (1, 3, 7):
        C = C0.copy()
        runs.append((C, *getattr(_k, runner)(X, None, C, 25, 0.0, "auto", nt)))
    C1, lab1, inertia1, n_iter1, _ = runs[0]
    assert n_iter1 > 2  # past the fresh sums of the first passes
    for C, lab, inertia, n_iter, _ in runs[1:]:
        np.testing.assert_array_equal(lab, lab1)
        assert C.tobytes() == C1.tobytes()
        assert inertia == inertia1 and n_iter == n_iter1


# --------------------------------------------------------------------------
# Distance paths across their crossovers; exact pruning ("elkan")
# --------------------------------------------------------------------------
def _labels_agree_off_ties(lab, X, C, dtype, D=None):
    """Labels equal the float64 brute-force argmin wherever the nearest two
    centers are not within the input type's rounding of each other.  D: the
    reference's squared distances, where the caller checks several labelings."""
    if D is None:
        D = _brute_sq_dist(X, C)
    part = np.sort(D, axis=1)
    gap = (part[:, 1] - part[:, 0]) if C.shape[0] > 1 else np.inf
    scale = (np.linalg.norm(X, axis=1) + np.linalg.norm(C, axis=1).max()) ** 2
    eps = np.finfo(dtype).eps * 8 * (X.shape[1] + 2)
    clear = gap > eps * scale
    assert clear.mean() > 0.3  # not vacuous (d = 1, K = 257 packs centers tightly)
    np.testing.assert_array_equal(lab[clear], D.argmin(1)[clear])


def _brute_sq_dist(X, C):
    """The reference's direct differences in float64, 32 rows at a time (its
    n x K x d intermediate would take gigabytes at K = 4096)."""
    X, C = X.astype(np.float64), C.astype(np.float64)
    return np.concatenate([ref_sq_dist(X[i:i + 32], C) for i in range(0, len(X), 32)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 127, 128, 129, 130,
                               511, 512, 513])
def test_assign_paths_across_crossovers(dtype, d):
    """Every kernel (small-d, centers across lanes, tile, BLAS), forced and as
    the table picks it, with K across their blocks and crossovers (BLAS past
    d = 512 or K = 4096), against brute force."""
    rng = np.random.default_rng(d)
    X = rng.normal(size=(531, d)).astype(dtype)  # a partial chunk and tile
    wide_K = (4096, 4097) if d in (16, 130) else ()
    for K in (1, 5, 6, 7, 13, 64, 257) + wide_K:
        C = rng.normal(size=(K, d)).astype(dtype)
        D = _brute_sq_dist(X, C)
        for method in ("direct", "gemm", "auto", "tile", "lanes", "small"):
            lab, _ = _k.assign(X, C, method, 2, False)
            _labels_agree_off_ties(lab, X, C, dtype, D)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 5, 8, 9, 16, 33, 64, 130])
def test_assign_shift_is_x_minus_shift_bitwise(dtype, d):
    """assign(X, C, shift=s) subtracts s chunk by chunk in the C pass: the
    labels and distances of assign(X - s, C), bit for bit, on every kernel
    (the float32 screen included), 1 and 2 threads, rows far from the origin
    and a partial last chunk; a shift of the wrong length is refused."""
    rng = np.random.default_rng(100 + d)
    X = (rng.normal(size=(1000, d)) + 1e3 * rng.uniform(size=d)).astype(dtype)
    shift = X[:50].mean(0, dtype=np.float64).astype(dtype)
    for K in (1, 7, 33):
        C = (X[rng.choice(len(X), K, replace=False)] - shift).astype(dtype)
        methods = ["auto", "direct", "gemm", "tile", "lanes", "small"]
        if dtype == np.float64:
            methods.append("screen")
        for method in methods:
            ref = _k.assign(X - shift, C, method, 1, True)
            for nt in (1, 2):
                lab, dist = _k.assign(X, C, method, nt, True, shift)
                np.testing.assert_array_equal(lab, ref[0])
                assert dist.tobytes() == ref[1].tobytes()
                lab2, none = _k.assign(X, C, method, nt, False, shift.astype(np.float64))
                np.testing.assert_array_equal(lab2, ref[0])
                assert none is None
    with pytest.raises(ValueError, match="shift"):
        _k.assign(X, C, "auto", 1, True, shift[:-1] if d > 1 else np.zeros(2))
    lab, dist = assign_labels(X, C, shift=shift, return_distances=False)
    assert dist is None and lab.shape == (len(X),)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_center_distances_shift_and_transform(dtype):
    """center_distances(X, C, shift=s) is center_distances(X - s, C) bit for
    bit (blocks of rows shifted one at a time), squared or not; KMeans's
    transform, predict and score far from the origin equal the shifted copy's
    results."""
    rng = np.random.default_rng(7)
    X = (rng.normal(size=(9000, 5)) + 1e4).astype(dtype)
    shift = X[:10].mean(0).astype(dtype)
    C = (X[:6] - shift).astype(dtype)
    for squared in (False, True):
        ref = center_distances(X - shift, C, squared=squared, block_rows=1000)
        got = center_distances(X, C, squared=squared, shift=shift, block_rows=1000)
        assert got.tobytes() == ref.tobytes()
    with pytest.raises(ValueError, match="shift"):
        center_distances(X, C, shift=shift[:-1])
    km = KMeans(6, n_init=1, random_state=0).fit(X)
    s = km.cluster_centers_.mean(0).astype(dtype)
    Cs = (km.cluster_centers_ - s).astype(dtype)
    assert km.transform(X).tobytes() == center_distances(X - s, Cs).tobytes()
    lab, d2 = assign_labels(X - s, Cs)
    np.testing.assert_array_equal(km.predict(X), lab)
    assert km.score(X) == -float(np.dot(np.ones(len(X)), d2.astype(np.float64)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(2, 40), (3, 7), (9, 33), (16, 64), (16, 100), (40, 70),
                                 (130, 20)])
def test_elkan_equals_lloyd(dtype, d, K):
    """Pruning leaves the result of every Lloyd iteration unchanged, bit for bit."""
    X = blobs(6000, d, K, 30 + d, spread=3.0).astype(dtype)
    w = np.random.default_rng(d).uniform(0.5, 2.0, len(X)).astype(dtype)
    init = X[np.random.default_rng(K).choice(len(X), K, replace=False)]
    for max_iter in (3, 300):
        a = kmeans(X, K, init=init, tol=0, max_iter=max_iter, algorithm="lloyd",
                   sample_weight=w)
        b = kmeans(X, K, init=init, tol=0, max_iter=max_iter, algorithm="elkan",
                   sample_weight=w)
        np.testing.assert_array_equal(a.labels, b.labels)
        assert a.centers.tobytes() == b.centers.tobytes()
        assert a.inertia == b.inertia and a.n_iter == b.n_iter


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(16, 64), (64, 32), (33, 256), (130, 40)])
def test_pruning_that_stops_paying_gives_lloyds_result(dtype, d, K):
    """On uniform data the bounds leave nearly every row open at the second
    pass (99.6-100% at d = 16 and 64, K = 64-1024, N = 2e5, counted in the
    C core in the twelfth round), so a pruned fit drops them there
    (ML_KM_PRUNE_MAX_OPEN) and runs unpruned passes for the rest, float64
    ones through the float32 screen (set up at the switch; every shape here
    has it): labels, center bits, inertia and n_iter stay Lloyd's, weighted
    and not, stopping right after the switch, one pass later, and to
    convergence."""
    rng = np.random.default_rng(d + K)
    X = rng.random((9001, d)).astype(dtype)
    w = rng.uniform(0.5, 2.0, len(X)).astype(dtype)
    init = X[rng.choice(len(X), K, replace=False)]
    for weights in (None, w):
        for max_iter in (2, 3, 300):
            Ca, Cb = init.copy(), init.copy()
            a = _k.lloyd(X, weights, Ca, max_iter, 0.0, "auto", 2)
            b = _k.hamerly(X, weights, Cb, max_iter, 0.0, "auto", 2)
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1:] == b[1:] and Ca.tobytes() == Cb.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [9, 16, 20, 40])
def test_pruned_lanes_form_equals_lloyd_on_ties(dtype, d):
    """From d = 9 the pruned passes score their open rows with the
    centers-across-lanes kernel's form that also keeps the second-best score
    (cv_body's with2 form): on an integer grid, where many distances tie exactly, its
    labels follow the lowest-index rule of Lloyd's kernels, with one vector
    of centers, one block of several and several blocks (K up to 256), in
    whole and partial chunks and steps; elkan's result is lloyd's, bit for
    bit (and the tile's), after one pass and to convergence, on clustered
    and on uniform grids (where the fit may stop pruning)."""
    rng = np.random.default_rng(200 + d)
    for spread in (1, 6):
        X = rng.integers(-3, 4, size=(3001, d)).astype(dtype)
        X += (spread * rng.integers(0, 4, size=(len(X), 1))).astype(dtype)
        w = rng.integers(1, 4, size=len(X)).astype(dtype)
        for K in (5, 8, 17, 33, 64, 100, 256):
            init = X[rng.choice(len(X), K, replace=False)].copy()
            init[1::3] = init[::3][: len(init[1::3])]  # duplicate centers: exact ties
            for max_iter in (1, 2, 300):
                Ca, Cb, Ct = init.copy(), init.copy(), init.copy()
                a = _k.lloyd(X, w, Ca, max_iter, 0.0, "auto", 2)
                b = _k.hamerly(X, w, Cb, max_iter, 0.0, "auto", 2)
                t = _k.lloyd(X, w, Ct, max_iter, 0.0, "tile", 1)  # another kernel
                for r, Cr in ((a, Ca), (t, Ct)):
                    np.testing.assert_array_equal(r[0], b[0])
                    assert r[1:] == b[1:] and Cr.tobytes() == Cb.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6, 7, 8, 16])
def test_small_d_kernel_equals_tile(dtype, d):
    """The small-d kernel (Lloyd's passes for d <= 8, K <= 64; float32 d = 16, K <= 8) and the tile
    (which serves the pruned passes) give the same labels, bit for bit, even
    where an integer grid makes many distances tie exactly; hence elkan's
    result is lloyd's there too."""
    rng = np.random.default_rng(d)
    X = rng.integers(-3, 4, size=(3001, d)).astype(dtype)  # a partial chunk and step
    w = rng.integers(1, 4, size=len(X)).astype(dtype)
    for K in (1, 8, 17, 64):
        init = rng.integers(-3, 4, size=(K, d)).astype(dtype) + dtype(0.5)
        for max_iter in (1, 300):
            a = _k.lloyd(X, w, init.copy(), max_iter, 0.0, "auto", 2)
            b = _k.hamerly(X, w, init.copy(), max_iter, 0.0, "auto", 2)
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1:] == b[1:]
        C = init.copy()
        lab, _ = _k.assign(X, C, "auto", 1, False)
        D = ref_sq_dist(X.astype(np.float64), C.astype(np.float64))
        np.testing.assert_array_equal(lab, D.argmin(1))  # exact data: exact scores


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6, 7, 8, 16])
def test_small_d_kernel_bitwise_tile_on_distinct_coordinates(dtype, d):
    """The small-d kernel reads a step's rows as whole vectors and puts them
    in coordinate order with shuffles: on data whose every coordinate differs
    (a value moved to the wrong lane or coordinate changes the label), its
    labels are the tile's bit for bit, for a full and a partial step, one
    vector of centers and several."""
    rng = np.random.default_rng(100 + d)
    for n in (256 * 3, 531):  # whole chunks; a partial chunk and step
        X = rng.normal(size=(n, d)).astype(dtype)
        for K in (2, 8, 33):
            C = rng.normal(size=(K, d)).astype(dtype)
            small, _ = _k.assign(X, C, "small", 2, False)
            tile, _ = _k.assign(X, C, "tile", 1, False)
            np.testing.assert_array_equal(small, tile)
            assert len(np.unique(small)) > 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [4, 12, 16, 32])
def test_weighted_sums_same_bits_on_every_path(dtype, d):
    """The per-cluster sums do not depend on the pass that labelled the rows:
    with real-valued weights (products that round in float64), Lloyd's pass
    (whose one-vector lanes kernel can add the sums as it labels), the tile
    and the pruned pass give the same centers, bit for bit."""
    rng = np.random.default_rng(d)
    X = rng.normal(size=(3001, d)).astype(dtype)
    w = rng.uniform(0.1, 3.0, size=len(X)).astype(dtype)
    for K in (3, 8):
        init = X[rng.choice(len(X), K, replace=False)].copy()
        runs = []
        for fit, method in ((_k.lloyd, "auto"), (_k.lloyd, "tile"), (_k.hamerly, "auto")):
            C = init.copy()
            lab = fit(X, w, C, 15, 0.0, method, 2)[0]
            runs.append((lab, C))
        for lab, C in runs[1:]:
            np.testing.assert_array_equal(lab, runs[0][0])
            assert C.tobytes() == runs[0][1].tobytes()


def test_kernel_table():
    """The one table in csrc/kmeans.h: small-d kernel for d <= 8 and K <= 64
    (its d = 16 instance only when forced: the lanes kernel's one-vector form
    is faster there), centers across lanes up to d = 512 and K = 4096, BLAS
    beyond; "direct" never calls BLAS; forced kernels are served. Where the
    lanes kernels run 512-bit vectors (CPUs with two full-width FMA ports),
    they take K >= 32 from d = 3 (float64) / d = 5 (float32)."""
    wide = _k.wide_vectors()[0]
    for d in range(1, 9):
        assert _k.kernel(d, 16) == "small"
        assert _k.kernel(d, 31, dtype=np.float32) == "small"
        assert _k.kernel(d, 65) == "lanes"
        for K in (32, 64):
            for dt, min_d in ((np.float64, 3), (np.float32, 5)):
                want = "lanes" if wide and d >= min_d else "small"
                assert _k.kernel(d, K, dtype=dt) == want, (d, K, dt)
    for d in (9, 16, 64, 128, 512):
        for K in (9, 64, 256, 4096):
            assert _k.kernel(d, K) == "lanes"
        for K in (1, 8):
            assert _k.kernel(d, K) == "lanes"
            assert _k.kernel(d, K, dtype=np.float32) == "lanes"
    assert _k.kernel(15, 8, "small") == "tile" and _k.kernel(16, 64, "small") == "small"
    assert _k.kernel(513, 8) == "gemm" and _k.kernel(16, 4097) == "gemm"
    assert _k.kernel(513, 8, "direct") == "lanes" and _k.kernel(16, 4097, "direct") == "lanes"
    assert _k.kernel(3, 8, "tile") == "tile" and _k.kernel(30, 8, "small") == "tile"
    assert _k.kernel(3, 8, "lanes") == "lanes" and _k.kernel(300, 8, "gemm") == "gemm"
    with pytest.raises(ValueError, match="method"):
        _k.kernel(3, 8, "fast")
    with pytest.raises(ValueError, match="dtype"):
        _k.kernel(3, 8, dtype=np.int64)


_LANE_DS = [1, 2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 64, 100, 127, 128, 129, 130]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", _LANE_DS)
def test_lanes_kernel_exact_on_a_grid(dtype, d):
    """Centers-across-lanes kernel on integer data and half-integer centers,
    where every score is exact and many tie: its labels are the float64
    brute-force argmin (lowest index on ties) and the tile's, bit for bit, for
    K across one vector, one block (Q = 1, 2, 4) and several blocks, with a
    partial chunk and a partial step of points."""
    rng = np.random.default_rng(d)
    X = rng.integers(-3, 4, size=(531, d)).astype(dtype)
    for K in (1, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 100):
        C = rng.integers(-3, 4, size=(K, d)).astype(dtype) + dtype(0.5)
        ref = ref_sq_dist(X.astype(np.float64), C.astype(np.float64)).argmin(1)
        lanes, _ = _k.assign(X, C, "lanes", 2, False)
        tile, _ = _k.assign(X, C, "tile", 1, False)
        np.testing.assert_array_equal(lanes, ref)
        np.testing.assert_array_equal(tile, ref)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(3, 8), (8, 32), (9, 5), (16, 8), (16, 33), (24, 64),
                                 (64, 32), (64, 64), (130, 9)])
def test_lanes_lloyd_equals_tile_and_reference(dtype, d, K):
    """Lloyd through the lanes kernel and through the tile: the same labels,
    centers, inertia and n_iter, bit for bit (the same scores term for term),
    on 1 and 2 threads; labels the float64 reference's off rounding ties."""
    X = blobs(3000, d, K, 40 + d, spread=2.0).astype(dtype)
    w = np.random.default_rng(d).uniform(0.5, 2.0, len(X)).astype(dtype)
    init = X[np.random.default_rng(K).choice(len(X), K, replace=False)].copy()
    runs = []
    for method, nt in (("lanes", 1), ("lanes", 2), ("tile", 2)):
        C = init.copy()
        lab, inertia, n_iter, strict = _k.lloyd(X, w, C, 20, 0.0, method, nt)
        runs.append((lab, C, inertia, n_iter, strict))
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0][0], other[0])
        assert runs[0][1].tobytes() == other[1].tobytes()
        assert runs[0][2:] == other[2:]
    lab, C = runs[0][0], runs[0][1]
    _labels_agree_off_ties(lab, X, C, dtype)


def _ref_block(X, w, C):
    D = ref_sq_dist(X.astype(np.float64), C.astype(np.float64))
    lab = D.argmin(1)
    K, d = C.shape
    sums = np.zeros((K, d))
    np.add.at(sums, lab, w[:, None] * X.astype(np.float64))
    counts = np.bincount(lab, weights=w, minlength=K)
    return lab, sums, counts, float(np.sum(w * D[np.arange(len(X)), lab]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(2, 8), (3, 64), (8, 65), (16, 32), (130, 5)])
@pytest.mark.parametrize("weighted", [False, True])
def test_assign_accumulate_block(dtype, d, K, weighted):
    """One block of Lloyd: labels, sums, counts and inertia against numpy; the
    same sums as one iteration of lloyd (centers = sums / counts, bitwise);
    the same bits on 1 and 2 threads."""
    X = blobs(20000, d, K, d + K).astype(dtype)  # several segments
    rng = np.random.default_rng(K)
    w = rng.uniform(0.5, 2.0, len(X)).astype(dtype) if weighted else None
    C0 = X[rng.choice(len(X), K, replace=False)].copy()
    out = {}
    for nt in (1, 2):
        sums, counts = np.full((K, d), np.nan), np.full(K, np.nan)
        labels = np.full(len(X), -7, dtype=np.int64)
        inertia = _k.assign_accumulate(X, w, C0, sums, counts, labels, "auto", nt)
        out[nt] = (sums, counts, labels, inertia)
    sums, counts, labels, inertia = out[1]
    assert sums.tobytes() == out[2][0].tobytes() and counts.tobytes() == out[2][1].tobytes()
    np.testing.assert_array_equal(labels, out[2][2])
    assert inertia == out[2][3]
    ww = np.ones(len(X)) if w is None else w.astype(np.float64)
    _labels_agree_off_ties(labels, X, C0, dtype)
    assert np.mean(labels == _ref_block(X, ww, C0)[0]) > 0.999
    esums = np.zeros((K, d))  # the sums of *our* labels (ties may differ)
    np.add.at(esums, labels, ww[:, None] * X.astype(np.float64))
    np.testing.assert_allclose(sums, esums, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(counts, np.bincount(labels, weights=ww, minlength=K),
                               rtol=1e-12)
    Xd, Cd = X.astype(np.float64), C0.astype(np.float64)
    assert inertia == pytest.approx(float(np.sum(ww * ((Xd - Cd[labels]) ** 2).sum(1))),
                                    rel=1e-12)
    C1 = C0.copy()
    lab1, _, n_iter, strict = _k.lloyd(X, w, C1, 1, 0.0, "auto", 2)
    if counts.min() > 0 and not strict:  # no relocation: the update is sums / counts
        assert C1.tobytes() == (sums / counts[:, None]).astype(dtype).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d,K", [(2, 8), (8, 16), (16, 32), (130, 5)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_inertia", [False, True])
def test_assign_accumulate_sums_only(dtype, d, K, weighted, with_inertia):
    """labels_out=None (the sums only): sums, counts and inertia bit for bit those
    of the call that writes labels, on 1 and 2 threads; a labels_out of the
    wrong length still raises (None is the only way to skip it)."""
    X = blobs(20000, d, K, 3 * d + K).astype(dtype)  # several segments
    rng = np.random.default_rng(d + K)
    w = rng.uniform(0.5, 2.0, len(X)).astype(dtype) if weighted else None
    C0 = X[rng.choice(len(X), K, replace=False)].copy()
    sums, counts = np.full((K, d), np.nan), np.full(K, np.nan)
    labels = np.empty(len(X), dtype=np.int64)
    ref = _k.assign_accumulate(X, w, C0, sums, counts, labels, "auto", 1, with_inertia)
    for nt in (1, 2):
        s2, c2 = np.full((K, d), np.nan), np.full(K, np.nan)
        got = _k.assign_accumulate(X, w, C0, s2, c2, None, "auto", nt, with_inertia)
        assert s2.tobytes() == sums.tobytes() and c2.tobytes() == counts.tobytes()
        if with_inertia:
            assert got == ref
        else:
            assert np.isnan(got) and np.isnan(ref)
    assert counts.sum() == pytest.approx(len(X) if w is None else float(w.astype(np.float64).sum()))


def test_assign_accumulate_errors():
    X = blobs(50, 3, 2, 0)
    C = X[:4].copy()
    sums, counts, labels = np.zeros((4, 3)), np.zeros(4), np.zeros(50, dtype=np.int64)
    with pytest.raises(ValueError, match="sums_out"):
        _k.assign_accumulate(X, None, C, np.zeros((4, 2)), counts, labels)
    with pytest.raises(ValueError, match="counts_out"):
        _k.assign_accumulate(X, None, C, sums, np.zeros(3), labels)
    with pytest.raises(ValueError, match="labels_out"):
        _k.assign_accumulate(X, None, C, sums, counts, labels[:49])
    with pytest.raises(ValueError, match="features"):
        _k.assign_accumulate(X, None, C[:, :2].copy(), sums, counts, labels)
    with pytest.raises(ValueError, match="sample_weight"):
        _k.assign_accumulate(X, np.ones(3), C, sums, counts, labels)
    with pytest.raises(ValueError, match="method"):
        _k.assign_accumulate(X, None, C, sums, counts, labels, "fast")


# iris is left out: its one-decimal values put points at exactly equal
# distances from two of 40 centers, where any rounding picks either.
@pytest.mark.parametrize("name", ["wine", "glass", "sonar", "blobs2", "blobs40"])
def test_elkan_and_auto_match_sklearn(load_dataset, name):
    from sklearn.cluster import KMeans as SKKMeans

    X = datasets(load_dataset)[name]
    K = 40
    init = X[np.random.default_rng(K).choice(len(X), K, replace=False)]
    sk = SKKMeans(K, init=init, n_init=1, tol=0, max_iter=300, algorithm="lloyd").fit(X)
    for algorithm in ("elkan", "auto"):
        res = kmeans(X, K, init=init, tol=0, max_iter=300, algorithm=algorithm)
        assert res.n_iter == sk.n_iter_
        np.testing.assert_array_equal(res.labels, sk.labels_)


@pytest.mark.parametrize("algorithm", ["lloyd", "hamerly"])
def test_float32_data_sums_in_float64(algorithm):
    """One cluster of 2**20 float32 rows in [1, 2): the center is the float64 mean
    rounded once; a float32 running sum would be off by hundreds of ulps."""
    X = np.random.default_rng(0).uniform(1, 2, size=(2**20, 2)).astype(np.float32)
    C = np.zeros((1, 2), dtype=np.float32)
    getattr(_k, algorithm)(X, None, C, 1, 0.0, "auto", 2)
    mean64 = X.astype(np.float64).mean(axis=0)
    ulp = np.spacing(np.float32(1.5))
    assert np.all(np.abs(C[0].astype(np.float64) - mean64) <= 0.5 * ulp + 1e-12)
    naive = np.cumsum(X, axis=0, dtype=np.float32)[-1] / np.float32(len(X))
    assert np.all(np.abs(naive.astype(np.float64) - mean64) > 8 * ulp)


def test_elkan_path_choice_and_errors():
    from metriclust import KMeans

    assert _k.uses_gemm(513, "auto", 8) and not _k.uses_gemm(512, "auto", 8)
    assert _k.uses_gemm(16, "auto", 4097) and not _k.uses_gemm(16, "auto", 4096)
    assert _k.uses_gemm(16, "gemm", 8) and not _k.uses_gemm(600, "direct", 8)
    assert _k.simd_level() in (0, 1, 3, 4)
    assert _k.prefers_pruning(16, 128) and not _k.prefers_pruning(2, 256)
    assert not _k.prefers_pruning(16, 127) and not _k.prefers_pruning(15, 128)
    X = blobs(500, 2, 3, 0)
    for algorithm in ("lloyd", "elkan", "auto", "online"):
        assert KMeans(3, algorithm=algorithm, random_state=0).fit(X).labels_.shape == (500,)
    with pytest.raises(ValueError, match="algorithm"):
        KMeans(3, algorithm="full").fit(X)


def test_threadpoolctl_limit_same_result():
    from threadpoolctl import threadpool_limits

    X = blobs(30000, 3, 8, 15)
    with threadpool_limits(1, "openmp"):
        a = kmeans(X, 8, random_state=0)
    b = kmeans(X, 8, random_state=0)
    assert a.centers.tobytes() == b.centers.tobytes()
    np.testing.assert_array_equal(a.labels, b.labels)


@pytest.mark.parametrize("algorithm", ["lloyd", "online"])
def test_float32_preserved_and_close_to_float64(algorithm):
    X = blobs(3000, 3, 4, 16)
    init = X[:4].copy()
    a = kmeans(X.astype(np.float32), 4, init=init, algorithm=algorithm, tol=0)
    b = kmeans(X, 4, init=init, algorithm=algorithm, tol=0)
    assert a.centers.dtype == np.float32
    assert a.labels.dtype == np.int64
    np.testing.assert_allclose(a.centers, b.centers, atol=1e-4)
    assert np.mean(a.labels == b.labels) > 0.999


# --------------------------------------------------------------------------
# Online (the lecture notes' sequential k-means)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_online_matches_python_sequential(weighted):
    X = blobs(120, 2, 3, 17)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(X)) if weighted else np.ones(len(X))
    init = X[[0, 1, 2]].copy()
    C = init.copy()
    lab, inertia, n_iter, _ = _k.online(X, w if weighted else None, C, 30, 1e-12, "auto", 1)
    ref, ref_iter = ref_sequential(X, init, w, 30, 1e-12)
    assert n_iter == ref_iter
    np.testing.assert_allclose(C, ref, rtol=0, atol=1e-12)
    rlab = ref_sq_dist(X, ref).argmin(1)
    np.testing.assert_array_equal(lab, rlab)
    assert inertia == pytest.approx(float((w * ((X - ref[rlab]) ** 2).sum(1)).sum()), rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_online_converged_centers_are_member_means(seed):
    # A row that moves leaves its old centroid: once a pass changes no label,
    # every centroid is the weighted mean of its members, so the result is a
    # fixed point of Lloyd (MacQueen's running mean, which never forgets the
    # rows that left, is not).
    X = blobs(600, 3, 5, 30 + seed)
    w = np.random.default_rng(seed).uniform(0.2, 3.0, len(X))
    w[::7] = 0.0
    r = kmeans(X, 5, sample_weight=w, tol=0, max_iter=500, algorithm="online",
               random_state=seed)
    assert r.n_iter < 500
    means = np.array([w[r.labels == k] @ X[r.labels == k] / w[r.labels == k].sum()
                      for k in range(5)])
    np.testing.assert_allclose(r.centers, means, rtol=0, atol=1e-9)
    lloyd = kmeans(X, 5, sample_weight=w, init=r.centers, tol=0, algorithm="lloyd")
    np.testing.assert_array_equal(lloyd.labels, r.labels)
    np.testing.assert_allclose(lloyd.centers, r.centers, rtol=0, atol=1e-9)


# --------------------------------------------------------------------------
# assign_labels and errors
# --------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 3, 8, 9, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_assign_labels_matches_brute_force(d, dtype):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(1000, d)).astype(dtype)
    C = rng.normal(size=(13, d)).astype(dtype)
    lab, dist = assign_labels(X, C)
    D = ref_sq_dist(X.astype(np.float64), C.astype(np.float64))
    assert dist.dtype == dtype
    # ties are impossible here at float64 resolution; float32 may flip near-ties
    agree = lab == D.argmin(1)
    if dtype == np.float64:
        assert agree.all()
    else:
        assert agree.mean() > 0.995
        assert np.allclose(D[np.arange(1000), lab], D.min(1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dist, D[np.arange(1000), lab], rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_ties_go_to_lowest_index():
    X = np.array([[0.0, 0.0], [1.0, 0.0]])
    C = np.array([[0.5, 1.0], [0.5, 1.0], [0.5, -1.0]])
    lab, _ = assign_labels(X, C)
    np.testing.assert_array_equal(lab, [0, 0])


def test_errors():
    X = blobs(10, 2, 2, 0)
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans(X, 11)
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans(X, 0)
    with pytest.raises(ValueError, match="init"):
        kmeans(X, 3, init=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="init"):
        kmeans(X, 3, init="kmeans")
    with pytest.raises(ValueError, match="n_init"):
        kmeans(X, 2, init=X[:2], n_init=3)
    with pytest.raises(ValueError, match="algorithm"):
        kmeans(X, 2, algorithm="hamerly")
    with pytest.raises(ValueError, match="sample_weight"):
        kmeans(X, 2, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="method"):
        _k.lloyd(X, None, X[:2].copy(), 10, 0.0, "fast", 1)
    with pytest.raises(ValueError, match="features"):
        _k.lloyd(X, None, np.zeros((2, 3)), 10, 0.0, "auto", 1)
    with pytest.raises(ValueError, match="n_clusters"):
        _k.lloyd(X[:1], None, np.zeros((2, 2)), 10, 0.0, "auto", 1)
    with pytest.raises(ValueError, match="out of range"):
        _k.pp_step(X, None, np.array([10], dtype=np.int64), np.full(10, np.inf))


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------
def _expected_failed_checks(estimator):
    # None: check_sample_weight_equivalence_on_dense_data passes since the
    # k-means++ draws run over rows ordered by value (see the test below).
    return {}


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    from metriclust import KMeans

    with pytest.warns(UserWarning, match="does not inherit"):
        check_estimator(KMeans(), expected_failed_checks=_expected_failed_checks(KMeans()))


def test_seeding_does_not_depend_on_row_order():
    # The check scikit-learn's estimator checks run (weights vs repeated rows
    # after a shuffle) holds because the seeding draws over rows ordered by value:
    # a permutation of X permutes the labels and changes nothing else.
    from metriclust import KMeans

    rng = np.random.default_rng(5)
    X = blobs(600, 4, 7, 9, spread=1.5)
    w = rng.integers(0, 4, size=len(X)).astype(float)
    perm = rng.permutation(len(X))
    for init in ("k-means++", "farthest"):
        a = KMeans(7, init=init, random_state=3).fit(X, sample_weight=w)
        b = KMeans(7, init=init, random_state=3).fit(X[perm], sample_weight=w[perm])
        np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_array_equal(b.labels_, a.labels_[perm])
        rep = KMeans(7, init=init, random_state=3).fit(np.repeat(X[perm], w[perm].astype(int),
                                                                 axis=0))
        np.testing.assert_allclose(rep.cluster_centers_, a.cluster_centers_, rtol=1e-10,
                                   atol=1e-12)


def test_seeding_is_invariant_to_rotating_and_shifting_the_data():
    # The order the draws run over is by distance to the mean, which a rotation
    # and a shift keep: the same seeds, as with the rows' own order before.
    from metriclust import KMeans

    X = blobs(500, 5, 6, 12, spread=2.0)
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((5, 5)))
    a = KMeans(6, random_state=4).fit(X)
    b = KMeans(6, random_state=4).fit(X @ Q + 10.0)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_ @ Q + 10.0, atol=1e-9)


def test_sample_weight_equivalence_check_passes_and_sklearn_fails_it():
    # The same check, run directly beside scikit-learn's KMeans, which draws
    # its seeds in row order and so fails it (1.9.1): this is what the row-value
    # order buys, not a property every k-means has.
    import sklearn.cluster
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

    from metriclust import KMeans

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_sample_weight_equivalence_on_dense_data("KMeans", KMeans())
        with pytest.raises(AssertionError, match="not equivalent"):
            check_sample_weight_equivalence_on_dense_data("KMeans", sklearn.cluster.KMeans())


def test_weights_equal_repeats_with_seeding():
    # Integer weights act as repeated rows through the seeding too: each
    # k-means++ draw lands on the same original row (rows kept in order).
    from metriclust import KMeans

    rng = np.random.RandomState(42)
    X = rng.rand(40, 5)
    sw = rng.randint(0, 5, size=40)
    a = KMeans(4, random_state=0).fit(X.repeat(sw, axis=0))
    b = KMeans(4, random_state=0).fit(X, sample_weight=sw)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("algorithm", ["lloyd", "online"])
def test_estimator_attributes_and_methods(dtype, algorithm):
    from metriclust import KMeans

    X = blobs(600, 3, 4, 20).astype(dtype)
    km = KMeans(4, algorithm=algorithm, random_state=0).fit(X)
    assert km.cluster_centers_.dtype == dtype and km.cluster_centers_.shape == (4, 3)
    assert km.n_features_in_ == 3 and km.n_iter_ >= 1
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    np.testing.assert_array_equal(KMeans(4, algorithm=algorithm, random_state=0)
                                  .fit_predict(X), km.labels_)
    T = km.transform(X)
    assert T.dtype == dtype
    ref = np.sqrt(ref_sq_dist(X.astype(np.float64), km.cluster_centers_.astype(np.float64)))
    np.testing.assert_allclose(T, ref, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)
    np.testing.assert_array_equal(T.argmin(axis=1), km.labels_)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=1e-5)
    inertia = float((((X - km.cluster_centers_[km.labels_]).astype(np.float64)) ** 2).sum())
    assert km.inertia_ == pytest.approx(inertia, rel=1e-5)


def test_estimator_n_init_auto_and_init_array():
    from metriclust import KMeans

    X = blobs(500, 2, 5, 21)
    # "auto": one k-means++ run, ten random runs; more random runs never do worse
    r1 = KMeans(5, init="random", n_init=1, random_state=3).fit(X)
    r10 = KMeans(5, init="random", random_state=3).fit(X)
    assert r10.inertia_ <= r1.inertia_ + 1e-9
    init = X[:5].copy()
    with pytest.warns(RuntimeWarning, match="n_init"):
        a = KMeans(5, init=init, n_init=3).fit(X)
    b = KMeans(5, init=init).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


def test_estimator_errors():
    from metriclust import KMeans

    X = blobs(20, 2, 2, 0)
    with pytest.raises(ValueError, match="n_clusters"):
        KMeans(21).fit(X)
    with pytest.raises(ValueError, match="algorithm"):
        KMeans(2, algorithm="full").fit(X)
    with pytest.raises(ValueError, match="n_init"):
        KMeans(2, n_init="many").fit(X)
    with pytest.raises(ValueError, match="n_init"):
        KMeans(2, n_init=0).fit(X)
    with pytest.raises(ValueError, match="init"):
        KMeans(2, init=np.zeros((3, 2))).fit(X)
    with pytest.raises(ValueError, match="sample_weight"):
        KMeans(2).fit(X, sample_weight=-np.ones(20))
    with pytest.raises(ValueError, match="NaN"):
        KMeans(2).fit(np.where(np.arange(40).reshape(20, 2) == 7, np.nan, X))
    km = KMeans(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        km.predict(np.zeros((3, 5)))


@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e305])
def test_weight_scale_changes_only_the_inertia(scale):
    # Weights are normalized internally so their sums cannot overflow; the
    # partition is unchanged and the inertia scales with them.
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    w = rng.uniform(0.5, 2.0, size=60)
    ref = kmeans(X, 3, sample_weight=w, n_init=2, random_state=0)
    got = kmeans(X, 3, sample_weight=w * scale, n_init=2, random_state=0)
    np.testing.assert_array_equal(got.labels, ref.labels)
    np.testing.assert_allclose(got.centers, ref.centers, rtol=1e-12)
    assert got.inertia == pytest.approx(ref.inertia * scale, rel=1e-12)


def test_huge_max_iter_is_a_valid_cap():
    X = np.random.default_rng(6).normal(size=(50, 2))
    res = kmeans(X, 2, max_iter=2**40, random_state=0)
    assert res.n_iter < 100


# --------------------------------------------------------------------------
# Stopping on the objective's relative change (convergence="objective")
# --------------------------------------------------------------------------
def _objective_run(X, init, max_iter, tol):
    from metriclust import KMeans

    return KMeans(len(init), init=init, n_init=1, max_iter=max_iter, tol=tol,
                  convergence="objective").fit(X)


@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-5])
def test_objective_stop_is_the_first_small_relative_decrease(tol):
    # Runs from the same centers follow one trajectory, so max_iter = m gives
    # the objective J_m after m iterations: the fit must stop at the first m
    # with (J_{m-1} - J_m) <= tol * J_{m-1}, labels unchanged aside.
    X = blobs(3000, 2, 12, 3, spread=1.5)
    init = X[:12].copy()
    fit = _objective_run(X, init, 300, tol)
    n = fit.n_iter_
    assert 2 <= n < 300
    J = [_objective_run(X, init, m, 0.0).inertia_ for m in range(1, n + 1)]
    assert J[-1] == pytest.approx(fit.inertia_, rel=1e-12)
    assert all(a >= b for a, b in zip(J, J[1:]))          # Lloyd never increases J
    assert J[-2] - J[-1] <= tol * J[-2]
    assert all(a - b > tol * a for a, b in zip(J[:-2], J[1:-1]))
    np.testing.assert_array_equal(fit.labels_, ref_sq_dist(X, fit.cluster_centers_).argmin(1))


def test_objective_stop_tol_zero_is_the_fixed_point_and_iterations_shrink_with_tol():
    from metriclust import KMeans

    X = blobs(2000, 3, 8, 4, spread=1.5)
    init = X[:8].copy()
    shift = KMeans(8, init=init, n_init=1, tol=0.0).fit(X)
    exact = _objective_run(X, init, 300, 0.0)
    np.testing.assert_array_equal(exact.labels_, shift.labels_)
    # the same partitions; the objective rule's one-pass calls sum every row
    # afresh where the center-shift run moves its running sums (accum_delta)
    np.testing.assert_allclose(exact.cluster_centers_, shift.cluster_centers_, rtol=1e-13,
                               atol=1e-13)
    assert exact.n_iter_ == shift.n_iter_
    iters = [_objective_run(X, init, 300, tol).n_iter_ for tol in (0.0, 1e-6, 1e-4, 1e-2)]
    assert iters == sorted(iters, reverse=True) and iters[-1] < iters[0]


def test_objective_stop_float32_weights_and_errors():
    from metriclust import KMeans

    X = blobs(1500, 4, 6, 5, spread=2.0)
    w = np.random.default_rng(0).integers(1, 4, size=len(X)).astype(float)
    for Xd in (X, X.astype(np.float32)):
        # integer weights act as repeated rows: the same iterations and stop
        est = KMeans(6, init=Xd[:6], n_init=1, convergence="objective", tol=1e-4)
        km = est.fit(Xd, sample_weight=w)
        assert km.cluster_centers_.dtype == Xd.dtype
        rep = KMeans(6, init=Xd[:6], n_init=1, convergence="objective",
                     tol=1e-4).fit(np.repeat(Xd, w.astype(int), axis=0))
        assert rep.n_iter_ == km.n_iter_
        np.testing.assert_allclose(rep.cluster_centers_, km.cluster_centers_, rtol=1e-5)
        assert rep.inertia_ == pytest.approx(km.inertia_, rel=1e-5)
    with pytest.raises(ValueError, match="convergence"):
        KMeans(3, convergence="inertia").fit(X)
    with pytest.raises(ValueError, match="convergence"):
        kmeans(X, 3, convergence=None)
    with pytest.raises(ValueError, match="batch algorithm"):
        KMeans(3, convergence="objective", algorithm="online").fit(X)
    # elkan prunes with bounds rebuilt at every call: the same result as lloyd
    a, b = (KMeans(6, init=X[:6], n_init=1, convergence="objective", algorithm=alg).fit(X)
            for alg in ("lloyd", "elkan"))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.n_iter_ == b.n_iter_


def test_check_estimator_objective_stop():
    from sklearn.utils.estimator_checks import check_estimator

    from metriclust import KMeans

    est = KMeans(convergence="objective")
    with pytest.warns(UserWarning, match="does not inherit"):
        check_estimator(est, expected_failed_checks=_expected_failed_checks(est))


def _fit_pair(X, **kw):
    """KMeans(copy_x=True) on a copy of X, and KMeans(copy_x=False) on X."""
    a = KMeans(copy_x=True, **kw).fit(X.copy())
    b = KMeans(copy_x=False, **kw).fit(X)
    return a, b


def _same_fit(a, b):
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.cluster_centers_.tobytes() == b.cluster_centers_.tobytes()
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_


def _starts_from_rows(X, n_clusters, random_state):
    return X[random_state.choice(len(X), n_clusters, replace=False)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_copy_x_false_centers_in_place_with_the_same_result(dtype):
    """copy_x=False centers X itself (no copy) and puts the mean back: the
    fit is copy_x=True's bit for bit, for every seeding (a callable init
    still sees X as given), algorithm, weights, several starts and both
    stopping rules; X is the same array afterwards, within a rounding of
    (x - m) + m of what it was, and exactly so where that round trip is exact
    (integer data with an integer mean)."""
    rng = np.random.default_rng(3)
    X0 = (blobs(3000, 5, 6, 1) + 1e3).astype(dtype)
    w = rng.uniform(0.5, 2.0, len(X0))
    seen = []

    def init(X, n_clusters, random_state):
        seen.append(float(X[:, 0].mean()))
        return _starts_from_rows(X, n_clusters, random_state)

    cases = [dict(init=i) for i in ("k-means++", "random", "farthest", X0[:6].copy(), init)]
    cases += [dict(algorithm=a) for a in ("elkan", "auto", "online")]
    cases += [dict(n_init=3, convergence="objective"), dict(n_init=2, tol=0.0, max_iter=5)]
    for kw in cases:
        for weights in (None, w):
            X = X0.copy()
            before = X.__array_interface__["data"][0]
            a = KMeans(6, random_state=0, copy_x=True, **kw).fit(X0.copy(), sample_weight=weights)
            b = KMeans(6, random_state=0, copy_x=False, **kw).fit(X, sample_weight=weights)
            _same_fit(a, b)
            assert X.__array_interface__["data"][0] == before
            m = np.abs(X0.mean(0, dtype=np.float64))
            assert np.all(np.abs(X - X0) <= np.spacing((np.abs(X0) + m).astype(dtype)))
    assert len(seen) == 2 * 2 * 10 and min(seen) > 900  # 10 starts a fit, on X as given
    Y = np.random.default_rng(5).integers(-50, 50, size=(1000, 4))
    Xi = (np.vstack([Y, -Y]) + 7).astype(dtype)  # mean exactly 7: (x - m) + m is exact
    X = Xi.copy()
    _same_fit(KMeans(5, random_state=1).fit(Xi), KMeans(5, random_state=1, copy_x=False).fit(X))
    assert X.tobytes() == Xi.tobytes()


def test_copy_x_false_needs_no_copy_of_x():
    """The point of copy_x=False: the fit allocates a small part of X's size
    (traced numpy allocations: the seeding's per-row state, about ten doubles
    a row here), where copy_x=True allocates a centered copy."""
    import tracemalloc

    X = np.random.default_rng(0).random((100_000, 64))
    peaks = {}
    for copy_x in (True, False):
        KMeans(8, n_init=1, max_iter=3, random_state=0, copy_x=copy_x).fit(X[:1000].copy())
        tracemalloc.start()
        KMeans(8, n_init=1, max_iter=3, random_state=0, copy_x=copy_x).fit(X)
        peaks[copy_x] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks[True] > X.nbytes > 4 * peaks[False], peaks


def test_copy_x_false_restores_x_on_error_and_leaves_other_x_alone(monkeypatch):
    """X comes back (within rounding) when the fit fails after centering it;
    a read-only X, an F-ordered one and integers are converted or copied
    first and never written."""
    from metriclust._core import kmeans as core

    X0 = blobs(2000, 3, 4, 2) + 50.0
    X = X0.copy()

    def boom(Xc, *args, **kwargs):
        assert abs(Xc[:, 0].mean()) < 1e-9  # X itself, centered
        raise RuntimeError("boom")

    monkeypatch.setattr(core, "_best_start", boom)
    with pytest.raises(RuntimeError, match="boom"):
        KMeans(4, copy_x=False).fit(X)
    np.testing.assert_allclose(X, X0, rtol=0, atol=1e-12)
    monkeypatch.undo()
    ro = X0.copy()
    ro.flags.writeable = False
    for Y in (ro, np.asfortranarray(X0), np.round(X0).astype(np.int64)):
        Y0 = Y.copy()
        _same_fit(KMeans(4, random_state=0).fit(Y0), KMeans(4, random_state=0, copy_x=False).fit(Y))
        assert Y.tobytes() == Y0.tobytes()  # never written


def test_center_rows_out_argument():
    """center_rows writes into X itself (the same bits as into a new array)
    or into a separate array of X's shape; a partial overlap or a wrong
    shape is refused."""
    X = np.random.default_rng(1).random((5000, 7)) + 3.0
    shift = X.mean(0)
    want, key = _k.center_rows(X, shift, True, 2)
    Y = X.copy()
    got, key2 = _k.center_rows(Y, shift, True, 2, Y)
    assert got is Y and Y.tobytes() == want.tobytes() and key2.tobytes() == key.tobytes()
    Z = np.empty_like(X)
    assert _k.center_rows(X, shift, False, 2, Z)[0] is Z and Z.tobytes() == want.tobytes()
    buf = np.empty((5001, 7))
    with pytest.raises(ValueError, match="overlap"):
        _k.center_rows(buf[1:], shift, False, 1, buf[:-1])
    with pytest.raises(ValueError, match="shape"):
        _k.center_rows(X, shift, False, 1, np.empty((4999, 7)))
