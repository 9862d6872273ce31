"""Fits on data larger than memory, by passes over row blocks.

CONTRACT (stable):

    kmeans_blockwise(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
                     max_iter=300, tol=1e-4, random_state=None, n_threads=None,
                     verbose=0, block_rows=None, seed_sample_size=None)
        -> KMeansResult(centers, labels int32, inertia, n_iter)
    assign_blockwise(X, centers, *, shift=None, block_rows=None, n_threads=None,
                     name="X") -> (labels int64, squared distances float64)
    gather_pair_rows(X, similar, dissimilar) -> (rows of X, similar, dissimilar, row ids)
    lstsq_blockwise(X, Y, *, block_rows=None) -> (coef (p+1, q), rank)

X is an out-of-core array (:func:`metriclust._core.blockwise.is_out_of_core`)
read one block of rows at a time with :func:`metriclust._core.blockwise.read_block`;
every per-block step is a partial of ``blockwise`` (the same C kernels as in
memory), reduced in block order.
"""

import numbers

import numpy as np

from .blockwise import (combine_r, default_block_rows, iter_blocks, lloyd_partial,
                        read_block, row_blocks, tsqr_partial)
from .kmeans import KMeansResult, assign_labels, farthest_first, kmeans_plusplus
from .threads import effective_n_threads
from .validation import check_array, check_pairs, check_random_state

__all__ = ["assign_blockwise", "gather_pair_rows", "label_counts", "kmeans_blockwise", "mean_and_variance_blockwise",
           "sample_rows", "SEED_SAMPLE_SIZE"]

#: Rows of the uniform sample that k-means++ seeds from on out-of-core data
#: (at least 1,000 per cluster).
SEED_SAMPLE_SIZE = 100_000

# The block structure of the k-means core's mean and variance
# (``_core.kmeans._mean_and_variance``), so that the centering is bit-identical.
_MOMENT_BLOCK = 65536


def mean_and_variance_blockwise(X, dtype, w=None, *, with_variance=True, name="X",
                                block_rows=_MOMENT_BLOCK):
    """Weighted column means and variances of X in float64, one block at a time.

    The blocks and the order of the sums are those of the in-memory k-means
    core (for ``block_rows`` = 65536, its value), so the mean (hence the
    centered data) is the same to the bit. The
    first pass also applies the finiteness checks of
    :func:`metriclust._core.blockwise.read_block` to every block.
    """
    n, p = X.shape
    wd = None if w is None else np.asarray(w, dtype=np.float64)
    total = float(n) if wd is None else float(wd.sum())
    acc = np.zeros(p)
    for s, e, block in iter_blocks(X, dtype, block_rows, name=name):
        rows = block.astype(np.float64, copy=False)
        acc += rows.sum(axis=0) if wd is None else wd[s:e] @ rows
    mean = acc / total
    if not with_variance:
        return mean, None
    acc = np.zeros(p)
    for s, e, block in iter_blocks(X, dtype, block_rows, ensure_finite=False):
        dev = block.astype(np.float64) - mean
        dev *= dev
        acc += dev.sum(axis=0) if wd is None else wd[s:e] @ dev
    return mean, acc / total


def sample_rows(X, indices, dtype, *, block_rows=None):
    """Rows ``indices`` (sorted, int64) of X gathered one block at a time."""
    indices = np.asarray(indices, dtype=np.int64)
    out = np.empty((indices.size, X.shape[1]), dtype=dtype)
    if block_rows is None:
        block_rows = default_block_rows(X.shape[1], np.dtype(dtype).itemsize)
    lo = 0
    for s, e in row_blocks(X.shape[0], block_rows):
        hi = int(np.searchsorted(indices, e, side="left"))
        if hi > lo:
            block = read_block(X, s, e, dtype, ensure_finite=False)
            out[lo:hi] = block[indices[lo:hi] - s]
        lo = hi
    return out


def label_counts(labels, n_clusters, *, chunk=1 << 20):
    """``np.bincount(labels, minlength=n_clusters)`` a chunk at a time.

    ``np.bincount`` casts int32 labels to int64 first: 8 bytes a row of
    temporary on data past memory; by chunks it is 8 MB.
    """
    counts = np.zeros(n_clusters, dtype=np.int64)
    for a in range(0, labels.shape[0], chunk):
        counts += np.bincount(labels[a:a + chunk], minlength=n_clusters)
    return counts


def _check_weights(sample_weight, n, dtype):
    # As the k-means core: float64 checks, the largest weight scaled to 1.
    if sample_weight is None:
        return None, 1.0
    w = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and np.any(w > 0)):
        raise ValueError("sample_weight must be finite and non-negative, and not all zero.")
    w_scale = float(w.max())
    return np.ascontiguousarray(w / w_scale, dtype=dtype), w_scale


def _lloyd_pass(X, dtype, centers, shift, w, labels, block_rows, nt, with_inertia=False):
    """One Lloyd pass: the block partials reduced in block order; ``labels`` updated.

    Returns ``(sums, counts, inertia, n_changed)``; inertia at ``centers``
    (NaN without ``with_inertia``).
    """
    k, p = centers.shape
    sums = np.zeros((k, p))
    counts = np.zeros(k)
    inertia = 0.0
    changed = 0
    for s, e, block in iter_blocks(X, dtype, block_rows, ensure_finite=False):
        bs, bc, bi, bl = lloyd_partial(block, centers, None if w is None else w[s:e],
                                       shift, nt, with_inertia=with_inertia)
        sums += bs
        counts += bc
        inertia += bi
        changed += int(np.count_nonzero(labels[s:e] != bl))
        labels[s:e] = bl
    return sums, counts, inertia, changed


def _own_inertia(X, dtype, centers, shift, w, labels, block_rows, chunk=65536):
    """``sum_i w_i ||x_i - shift - c_{labels_i}||^2`` from ``x - c`` in float64, by blocks."""
    total = 0.0
    C = centers.astype(np.float64)
    for s, e, block in iter_blocks(X, dtype, block_rows, ensure_finite=False):
        for a in range(0, e - s, chunk):
            b = min(e - s, a + chunk)
            diff = (block[a:b] - shift).astype(np.float64) - C[labels[s + a:s + b]]
            d = np.einsum("ij,ij->i", diff, diff)
            total += float(d.sum()) if w is None else float(w[s + a:s + b] @ d)
    return total


def _relocate_empty(X, dtype, centers, shift, w, labels, sums, counts, block_rows, nt):
    """Empty clusters take the rows farthest from their centers (the C core's rule).

    Largest distance first (ties to the lowest row), a row only if it has
    positive weight and a positive distance, its cluster keeps a positive
    weight, and it differs from the rows already moved. One extra pass keeps
    the ``T`` farthest rows of every block (``T`` = a few per empty cluster).
    """
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return
    T = 4 * empty.size + 16
    cand_d, cand_i, cand_x = [], [], []
    for s, e, block in iter_blocks(X, dtype, block_rows, ensure_finite=False):
        Bc = block - shift.astype(dtype)
        diff = Bc.astype(np.float64) - centers[labels[s:e]].astype(np.float64)
        d = np.einsum("ij,ij->i", diff, diff)
        if w is not None:
            d[~(w[s:e] > 0)] = -1.0
        top = np.argsort(-d, kind="stable")[:T]
        cand_d.append(d[top])
        cand_i.append(top + s)
        cand_x.append(Bc[top])
    d, idx, rows = np.concatenate(cand_d), np.concatenate(cand_i), np.concatenate(cand_x)
    order = np.lexsort((idx, -d))
    moved = []
    pos = 0
    for k in empty:
        while pos < order.size:
            j = order[pos]
            pos += 1
            if not d[j] > 0:
                pos = order.size
                break
            old = labels[idx[j]]
            wf = 1.0 if w is None else float(w[idx[j]])
            if not counts[old] - wf > 0:
                continue
            x = rows[j]
            if any(np.array_equal(x, y) for y in moved):
                continue
            sums[old] -= wf * x.astype(np.float64)
            sums[k] = wf * x.astype(np.float64)
            counts[old] -= wf
            counts[k] = wf
            labels[idx[j]] = k
            moved.append(x)
            break


def _update_centers(sums, counts, centers):
    """New centers (an empty cluster keeps its center) and the squared shift."""
    safe = np.where(counts > 0, counts, 1.0)[:, None]
    new = np.where(counts[:, None] > 0, (sums / safe).astype(centers.dtype), centers)
    shift = float(np.sum((new.astype(np.float64) - centers.astype(np.float64)) ** 2))
    return np.ascontiguousarray(new), shift


def kmeans_blockwise(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
                     max_iter=300, tol=1e-4, random_state=None, n_threads=None, verbose=0,
                     block_rows=None, seed_sample_size=None):
    """Lloyd's k-means on an out-of-core X, one pass over the row blocks per iteration.

    The iteration is the k-means core's (:func:`metriclust._core.kmeans.kmeans`
    with ``algorithm="lloyd"``): X centered by its weighted mean (the same
    float64 block sums), the C assignment and cluster-sum kernels on each
    block (:func:`metriclust._core.blockwise.lloyd_partial`), the sums reduced
    in block order, empty clusters moved to the farthest rows, strict
    convergence when no label changes (the labels then stand), otherwise the
    squared center shift against ``tol`` times the mean feature variance.
    Labels equal the in-memory fit's on data whose assignment has no
    near-ties (the distances are rounded differently); centers agree to
    rounding, and the result does not depend on ``block_rows`` beyond
    rounding, nor on the thread count at all.

    Seeding: ``"k-means++"`` runs the greedy k-means++ of the core on a
    uniform sample of ``seed_sample_size`` rows drawn without replacement
    (default :data:`SEED_SAMPLE_SIZE`, at least ``1000 * n_clusters``) and
    gathered in one block pass; with no more rows than that the sample is X
    itself and the seeding is the in-memory one. ``"farthest"`` runs on the
    same sample; ``"random"`` and given centers are as in memory.

    Peak extra memory: ``4 N`` bytes of int32 labels (twice with
    ``n_init > 1``), ``8 N`` for ``sample_weight``, the sample
    (``seed_sample_size * p`` values and ``8 seed_sample_size`` of seeding
    distances), and about ``block_rows * (3 p itemsize + 24)`` bytes for one
    block, its centered copy and the kernels' per-row outputs.

    Returns
    -------
    KMeansResult(centers, labels, inertia, n_iter)
        labels are int32 (4 bytes a row on data that does not fit in memory).
    """
    n, p = X.shape
    dtype = np.dtype(np.float32) if np.dtype(X.dtype) == np.float32 else np.dtype(np.float64)
    if block_rows is None:
        block_rows = default_block_rows(p, dtype.itemsize)
    if n_clusters > n:
        raise ValueError(f"n_samples={n} should be >= n_clusters={n_clusters}.")
    max_iter = min(int(max_iter), 2**31 - 1)
    rng = check_random_state(random_state)
    nt = effective_n_threads(n_threads)
    w, w_scale = _check_weights(sample_weight, n, dtype)
    if seed_sample_size is None:
        seed_sample_size = max(SEED_SAMPLE_SIZE, 1000 * n_clusters)
    if isinstance(seed_sample_size, bool) or not isinstance(seed_sample_size, numbers.Integral) \
            or seed_sample_size < n_clusters:
        raise ValueError(f"seed_sample_size must be an int >= n_clusters={n_clusters}, "
                         f"got {seed_sample_size!r}.")

    mean, var = mean_and_variance_blockwise(X, dtype, w, with_variance=tol > 0,
                                            block_rows=min(_MOMENT_BLOCK, block_rows))
    X_mean = mean.astype(dtype)
    abs_tol = float(np.mean(var) * tol) if tol > 0 else 0.0

    sample = sample_w = best_labels = None
    best = None
    labels = np.full(n, -1, dtype=np.int32)
    for r in range(n_init):
        if isinstance(init, np.ndarray):
            centers = init.astype(dtype) - X_mean
        elif callable(init):
            c0 = np.asarray(init(X, n_clusters, random_state=rng), dtype=dtype)
            if c0.shape != (n_clusters, p) or not np.all(np.isfinite(c0)):
                raise ValueError(f"init must return finite centers of shape ({n_clusters}, {p}).")
            centers = c0 - X_mean
        elif init == "random":
            pr = None
            if w is not None and np.count_nonzero(w) >= n_clusters:
                pr = np.asarray(w, dtype=np.float64) / float(np.sum(w, dtype=np.float64))
            seeds = rng.choice(n, size=n_clusters, replace=False, p=pr)
            order = np.argsort(seeds)
            rows = sample_rows(X, seeds[order], dtype, block_rows=block_rows)
            centers = np.empty_like(rows)
            centers[order] = rows
            centers = centers - X_mean
        else:
            if sample is None:
                if n <= seed_sample_size:
                    idx = np.arange(n, dtype=np.int64)
                else:
                    idx = np.sort(rng.choice(n, size=seed_sample_size, replace=False))
                sample = sample_rows(X, idx, dtype, block_rows=block_rows) - X_mean
                sample_w = None if w is None else np.ascontiguousarray(w[idx])
            seed = farthest_first if init == "farthest" else kmeans_plusplus
            centers, _ = seed(sample, n_clusters, sample_weight=sample_w, random_state=rng,
                              n_threads=nt)
        centers = np.ascontiguousarray(centers, dtype=dtype)
        labels.fill(-1)
        strict = False
        for it in range(max_iter):
            sums, counts, inertia, changed = _lloyd_pass(X, dtype, centers, X_mean, w, labels,
                                                         block_rows, nt)
            _relocate_empty(X, dtype, centers, X_mean, w, labels, sums, counts, block_rows, nt)
            new, shift = _update_centers(sums, counts, centers)
            centers = new
            if changed == 0:  # the new centers are the means of the same partition
                strict = True
                break
            if shift <= abs_tol:
                break
        n_iter = it + 1
        if strict:  # the labels stand (as in the C core); their inertia at the new centers
            inertia = _own_inertia(X, dtype, centers, X_mean, w, labels, block_rows)
        else:  # labels and inertia of the final centers
            inertia = _lloyd_pass(X, dtype, centers, X_mean, w, labels, block_rows, nt,
                                  with_inertia=True)[2]
        if verbose:
            how = "strict convergence" if strict else (
                "center shift within tolerance" if n_iter < max_iter else "max_iter reached")
            print(f"k-means start {r + 1} of {n_init}: {n_iter} iterations ({how}), "
                  f"inertia {inertia:.6g}")
        if best is None or inertia < best.inertia:
            if n_init > 1:  # ``labels`` is reused by the next start
                if best_labels is None:
                    best_labels = labels.copy()
                else:
                    best_labels[...] = labels
            best = KMeansResult(centers, labels if n_init == 1 else best_labels, inertia, n_iter)
    inertia = float(best.inertia) * w_scale
    return KMeansResult((best.centers + X_mean).astype(dtype, copy=False), best.labels,
                        inertia, int(best.n_iter))


def assign_blockwise(X, centers, *, shift=None, block_rows=None, n_threads=None, name="X"):
    """Nearest center of every row of an out-of-core X, one block at a time.

    ``shift`` is subtracted from the rows first (in the centers' dtype), and
    ``centers`` are in that shifted space. Returns ``(labels int64, squared
    distances float64)``: peak extra memory ``16 N`` bytes for them plus one
    block and its shifted copy.
    """
    n = X.shape[0]
    centers = np.ascontiguousarray(centers)
    dtype = np.dtype(centers.dtype)
    labels = np.empty(n, dtype=np.int64)
    d2 = np.empty(n, dtype=np.float64)
    for s, e, block in iter_blocks(X, dtype, block_rows, name=name):
        Bc = block if shift is None else block - np.asarray(shift, dtype=dtype)
        labels[s:e], d2[s:e] = assign_labels(Bc, centers, n_threads=n_threads)
    return labels, d2


def gather_pair_rows(X, similar, dissimilar):
    """The rows of an out-of-core X that explicit pairs touch, and the pairs renumbered.

    A metric learned from pairs (MMC) depends on X only through those rows.
    The pairs are validated against X's row count (errors name ``similar`` or
    ``dissimilar``); a memmap is read by fancy indexing (only the touched
    pages), another row-sliceable array one block at a time. Peak extra
    memory: the touched rows (``n_touched * p`` values) and the pairs.

    Returns
    -------
    X_rows : ndarray of shape (n_touched, p)
        Validated as :func:`metriclust._core.validation.check_array` does.
    similar, dissimilar : ndarray of shape (m, 2), int64
        Indices into ``X_rows``.
    rows : ndarray of shape (n_touched,), int64
        ``X_rows[i]`` is ``X[rows[i]]``: ``rows[similar]`` gives back the pairs.
    """
    n, p = X.shape
    S = check_pairs(similar, n, name="similar", allow_empty=False)
    D = check_pairs(dissimilar, n, name="dissimilar")
    rows, inverse = np.unique(np.concatenate([S.ravel(), D.ravel()]), return_inverse=True)
    dtype = np.float32 if np.dtype(X.dtype) == np.float32 else np.float64
    if isinstance(X, np.ndarray):
        X_rows = np.asarray(X[rows], dtype=dtype)
    else:
        X_rows = sample_rows(X, rows, dtype)
    X_rows = check_array(X_rows, name="X")
    inverse = inverse.reshape(-1).astype(np.int64)
    return (X_rows, inverse[:S.size].reshape(-1, 2), inverse[S.size:].reshape(-1, 2),
            rows.astype(np.int64))
