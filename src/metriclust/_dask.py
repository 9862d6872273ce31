"""Dask arrays: the estimators' passes over the data as Dask tasks, one per row chunk.

Imported only when an estimator is given a ``dask.array.Array`` (``import
metriclust`` never imports Dask). Each pass maps a per-block function of
:mod:`metriclust._core.blockwise` (the same C kernels as in memory) over the
row chunks of X as Dask tasks; the small partial results (``k x p`` sums and
counts, ``p x p`` moments, ``p x p`` R factors) come back to the client and are
reduced there in chunk order, so the result does not depend on which worker
finished first, and equals the in-memory fit of the same data from the same
start up to the order of the floating-point sums. Per-row results that a
later pass needs (k-means|| distances) stay on the workers (``dask.persist``);
labels are returned lazily.

Whatever scheduler is active runs the tasks: a ``distributed.Client`` if one
exists, else Dask's local threads. The kernels of one task run on one OpenMP
thread: Dask supplies the parallelism (one task per worker thread).

CONTRACT (used by the estimators):

    check_dask_array(X, *, name="X", ensure_min_samples=1) -> X (float, one column chunk)
    dask_weights(sample_weight, X) -> None or a dask array with X's row chunks
    kmeans(X, n_clusters, *, sample_weight, init, n_init, max_iter, tol, random_state,
           verbose) -> KMeansResult(centers, labels (dask), inertia, n_iter)
    predict_labels(X, centers) -> lazy dask array of int64, X's row chunks
    transform_distances(X, centers) -> lazy dask array (n, k), X's row chunks
    inertia(X, centers, sample_weight=None) -> float (KMeans.score)
    nearest_center(Z, centers) -> lazy labels, no shift (CPCM's prediction space)
    affine_map(X, coef, intercept) -> lazy X @ coef + intercept, X's row chunks
    LinearPredictor(X): CPCM's least-squares predictor (mean, tsqr R, whitening)
    cpcm_run(model, labels, K, max_iter, tol, min_size, seed) -> the dict of cpcm._cpcm
    pair_rows(X, [pairs, ...]) -> (rows of X the pairs touch, float64; pairs re-indexed)
    covariance(X) -> sample covariance by block moments
    rowwise(X, estimator, method, n_columns=None, dtype) -> lazy per-chunk method calls
"""

import math

import dask
import dask.array as da
import numpy as np

from ._core.blockwise import lloyd_partial, moments_partial, reduce_partials
from ._core.kmeans import (KMeansResult, assign_labels, center_distances, kmeans as _kmeans,
                           kmeans_plusplus, _check_init_centers)
from ._core.streaming import _update_centers
from ._core.predictors import Linear, PredictorFit, _affine, one_hot_sums, whitening
from ._core.validation import check_random_state

__all__ = ["check_dask_array", "dask_weights", "kmeans", "predict_labels", "seed_centers",
           "transform_distances"]

#: Rounds of k-means|| sampling (Bahmani et al. 2012 take O(log psi) rounds
#: and oversampling l = 2k in most of their experiments; 5 rounds is our choice).
KMEANS_PARALLEL_ROUNDS = 5
#: Expected size of the uniform sample that init="k-means++" seeds on.
PP_SAMPLE_SIZE = 100_000

_ONE_THREAD = 1     # OpenMP threads per Dask task: Dask runs one task per worker thread


# ----------------------------------------------------------------- inputs
def check_dask_array(X, *, name="X", ensure_min_samples=1):
    """A 2-D Dask array of float32/float64 (other numbers become float64), one column chunk.

    Row chunks must have known sizes. NaN and infinity are found by the
    first pass over the data (the moments), which raises a ValueError.
    """
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array for {name}, got a {X.ndim}D dask array of "
                         f"shape {X.shape}.")
    if any(math.isnan(c) for c in X.chunks[0]) or any(math.isnan(s) for s in X.shape):
        raise ValueError(f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() "
                         "first.")
    dtype = np.dtype(X.dtype)
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported in {name}.")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got a dask array of dtype {dtype}.")
    if dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    n, p = X.shape
    if n < ensure_min_samples:
        raise ValueError(f"{name} has n_samples={n}, while a minimum of {ensure_min_samples} "
                         "is required.")
    if p < 1:
        raise ValueError(f"{name} has n_features=0 (shape={X.shape}) while a minimum of 1 "
                         "is required.")
    if len(X.chunks[1]) > 1:        # a task must see whole rows
        X = X.rechunk({1: -1})
    return X


def dask_weights(sample_weight, X, dtype=np.float64):
    """``sample_weight`` as a Dask array with X's row chunks (None stays None).

    Checks that need the values (finite, non-negative, positive sum) are made
    by :func:`_weight_summary` in one pass.
    """
    if sample_weight is None:
        return None
    n = X.shape[0]
    if np.ndim(sample_weight) == 0:
        w = da.full((n,), float(sample_weight), chunks=(X.chunks[0],), dtype=np.float64)
    else:
        w = da.asarray(sample_weight)
        if w.ndim != 1 or w.shape[0] != n:
            raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
        w = w.astype(np.float64).rechunk((X.chunks[0],))
    return w.astype(dtype)


def _blocks(X):
    """Delayed row chunks of X, in order, and their first row indices."""
    blocks = list(X.to_delayed().ravel())
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    return blocks, offsets


def _weight_blocks(w, n_blocks):
    return [None] * n_blocks if w is None else list(w.to_delayed().ravel())


# ------------------------------------------------------------- block tasks
# Module-level functions of their arguments only: they pickle by reference
# and run on any worker that can import metriclust.
def _moments_task(block, weight, shift):
    return moments_partial(block, sample_weight=weight, shift=shift)


def _weight_summary_task(weight):
    w = np.asarray(weight, dtype=np.float64)
    finite = bool(np.all(np.isfinite(w)))
    return (float(w.sum()) if finite else 0.0, float(w.max(initial=0.0)) if finite else 0.0,
            finite and bool(np.all(w >= 0)))


def _lloyd_task(block, centers, weight, shift):
    # the reduced part of a Lloyd step only: labels are not kept between passes
    sums, counts, inertia, _ = lloyd_partial(block, centers, sample_weight=weight, shift=shift,
                                             n_threads=_ONE_THREAD)
    return sums, counts, inertia


def _centered(block, shift):
    B = np.asarray(block)
    return np.ascontiguousarray(B - np.asarray(shift, dtype=B.dtype))


def _farthest_task(block, centers, weight, shift, offset, n_top):
    """The ``n_top`` rows farthest from their own centers: (dist, index, row, weight, label).

    As the k-means core's empty-cluster relocation ranks them: labels of the
    nearest centers (the assignment of the pass), distance from ``x - c`` in
    float64, rows of zero weight excluded, ties to the lowest index.
    """
    B = _centered(block, shift)
    labels = assign_labels(B, centers, n_threads=_ONE_THREAD)[0]
    diff = B.astype(np.float64) - np.asarray(centers, dtype=np.float64)[labels]
    dist = np.einsum("ij,ij->i", diff, diff)
    w = np.ones(B.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    dist[~(w > 0)] = -1.0
    order = np.lexsort((np.arange(B.shape[0]), -dist))[:n_top]
    order = order[dist[order] > 0]
    return dist[order], order + offset, B[order], w[order], labels[order]


def _predict_block(block, centers, shift):
    return assign_labels(_centered(block, shift), centers, n_threads=_ONE_THREAD)[0]


def _transform_block(block, centers, shift):
    return center_distances(_centered(block, shift), centers)


def _closest_task(block, centers, weight, shift, closest):
    """Squared distance of each row to its nearest center (``closest`` updated),
    and the chunk's potential ``sum_i w_i d_i^2``."""
    d2 = assign_labels(_centered(block, shift), centers, n_threads=_ONE_THREAD)[1]
    d2 = d2.astype(np.float64)
    if closest is not None:
        d2 = np.minimum(closest, d2)
    potential = float(d2.sum()) if weight is None else \
        float(d2 @ np.asarray(weight, dtype=np.float64))
    return d2, potential


def _oversample_task(block, closest, weight, shift, scale, seed):
    """Rows drawn independently with probability ``min(1, scale * w_i * d_i^2)`` (k-means||)."""
    w = 1.0 if weight is None else np.asarray(weight, dtype=np.float64)
    prob = np.minimum(1.0, scale * w * closest)
    keep = np.random.default_rng(seed).random(prob.shape[0]) < prob
    return _centered(block, shift)[keep]


def _uniform_sample_task(block, weight, shift, rate, seed):
    """Rows kept with probability ``rate``, with their weights (k-means++ on a sample)."""
    m = block.shape[0]
    keep = np.random.default_rng(seed).random(m) < rate
    w = np.ones(m) if weight is None else np.asarray(weight, dtype=np.float64)
    return _centered(block, shift)[keep], w[keep]


def _candidate_weight_task(block, candidates, weight, shift):
    labels = assign_labels(_centered(block, shift), candidates, n_threads=_ONE_THREAD)[0]
    return np.bincount(labels, weights=None if weight is None else
                       np.asarray(weight, dtype=np.float64),
                       minlength=candidates.shape[0]).astype(np.float64)


# -------------------------------------------------------------- reductions
def _compute(tasks):
    """Compute a list of delayed partials; returned in the order given."""
    return list(dask.compute(*tasks))


def _weight_summary(w, n_blocks):
    """Total and largest weight; ValueError for NaN, infinity, negatives or zero sum."""
    if w is None:
        return None, None
    parts = _compute([dask.delayed(_weight_summary_task)(b) for b in _weight_blocks(w, n_blocks)])
    if not all(ok for _, _, ok in parts):
        raise ValueError("sample_weight must be finite and non-negative, and not all zero.")
    total = reduce_partials([(t,) for t, _, _ in parts])[0]
    biggest = max(m for _, m, _ in parts)
    if not total > 0:
        raise ValueError("sample_weight must be finite and non-negative, and not all zero.")
    return total, biggest


def column_mean_and_variance(X, w=None, *, name="X"):
    """Weighted column means and variances of X (float64), two passes of block moments.

    The second pass takes the moments about the mean of the first, as the
    in-memory k-means core does, so a large common offset costs no digits.
    Raises a ValueError when X holds NaN or infinity.
    """
    blocks, _ = _blocks(X)
    wb = _weight_blocks(w, len(blocks))
    total, col_sum, _ = reduce_partials(_compute(
        [dask.delayed(_moments_task)(b, wt, None) for b, wt in zip(blocks, wb)]))
    if not np.all(np.isfinite(col_sum)):
        raise ValueError(f"Input {name} contains NaN or infinity (or values so large that "
                         "their sum overflows).")
    mean = col_sum / total
    total, dev_sum, cross = reduce_partials(_compute(
        [dask.delayed(_moments_task)(b, wt, mean) for b, wt in zip(blocks, wb)]))
    var = np.diag(cross) / total - (dev_sum / total) ** 2
    return mean, np.maximum(var, 0.0)


# ----------------------------------------------------------------- k-means
def kmeans(X, n_clusters, *, sample_weight=None, init="k-means||", n_init=1, max_iter=300,
           tol=1e-4, random_state=None, verbose=0):
    """Lloyd's k-means of a Dask array, one task per row chunk and pass.

    The same iteration as :func:`metriclust._core.kmeans.kmeans` with
    ``algorithm="lloyd"``: the data centred on their (weighted) mean, labels
    of the nearest centers (ties to the lowest index), weighted means, empty
    clusters moved to the rows farthest from their centers, a stop when no
    label changes or when the squared center shift is at most ``tol`` times
    the mean feature variance. From the same initial centers it gives the
    same labels as in memory; centers and inertia differ only by the order of
    the float64 sums (the tests hold them to 1e-5 relative in float32 and
    1e-10 in float64).

    ``init`` is an array of centers, "k-means||" (Bahmani et al. 2012),
    "k-means++" (greedy k-means++ on a uniform sample of about
    ``PP_SAMPLE_SIZE`` rows, weighted), "random" (rows drawn as in memory) or
    a callable ``init(X, n_clusters, random_state=rng)``.

    Returns
    -------
    KMeansResult(centers ndarray, labels lazy dask array, inertia float, n_iter int)
    """
    n, p = X.shape
    dtype = np.dtype(X.dtype)
    blocks, offsets = _blocks(X)
    w = None
    w_scale = 1.0
    if sample_weight is not None:
        w_raw = dask_weights(sample_weight, X)
        _, w_scale = _weight_summary(w_raw, len(blocks))
        # as the in-memory core: the largest weight scaled to 1, in X's dtype
        w = (w_raw / w_scale).astype(dtype).persist()
    wb = _weight_blocks(w, len(blocks))
    mean, var = column_mean_and_variance(X, w)
    shift = mean.astype(dtype)
    abs_tol = float(np.mean(var) * tol) if tol > 0 else 0.0
    rng = check_random_state(random_state)

    best = None
    for r in range(n_init):
        if isinstance(init, np.ndarray):
            centers = init - shift
        elif callable(init):
            centers = _check_init_centers(init(X, n_clusters, random_state=rng),
                                          n_clusters, X) - shift
        elif init == "random":
            centers = _random_rows(X, w, n_clusters, rng) - shift
        elif init == "k-means++":
            centers = _pp_on_sample(blocks, wb, shift, n, n_clusters, rng)
        elif init == "k-means||":
            centers = _kmeans_parallel(blocks, wb, shift, n_clusters, rng)
        else:
            raise ValueError(f"init must be 'k-means||', 'k-means++', 'random', an array or a "
                             f"callable for a dask array, got {init!r}.")
        centers = np.ascontiguousarray(centers, dtype=dtype)
        run = _lloyd(blocks, wb, offsets, shift, centers, max_iter, abs_tol)
        if verbose:
            how = "strict convergence" if run["strict"] else (
                "center shift within tolerance" if run["n_iter"] < max_iter
                else "max_iter reached")
            print(f"k-means (dask) start {r + 1} of {n_init}: {run['n_iter']} iterations "
                  f"({how}), inertia {run['inertia']:.6g}")
        if best is None or run["inertia"] < best["inertia"]:
            best = run
    # the labels of the final centers, lazily (the assignment kernel of the passes)
    labels = X.map_blocks(_predict_block, best["centers"], shift, dtype=np.int64, drop_axis=1,
                          meta=np.empty((0,), dtype=np.int64))
    inertia = float(best["inertia"]) * w_scale
    if not math.isfinite(inertia):
        raise ValueError("sample_weight is too large: the weighted inertia overflows float64. "
                         "Rescale sample_weight (k-means depends on the weights only up to a "
                         "common factor).")
    return KMeansResult((best["centers"] + shift).astype(dtype, copy=False), labels, inertia,
                        int(best["n_iter"]))


def _lloyd(blocks, wb, offsets, shift, centers, max_iter, abs_tol):
    """Lloyd iterations, one pass of tasks each; only ``k x p`` partials come back.

    The k-means core stops strictly when no label changes; then the new
    centers, the means of the same partition summed in the same order, equal
    the old ones bit for bit. That equality is the test here, so no labels
    are kept between passes (two partitions with bitwise-equal sums would
    stop it one pass early; on real data they do not occur).
    """
    C = centers
    strict = False
    inertia = None
    for it in range(max_iter):
        sums, counts, inertia = reduce_partials(_compute(
            [dask.delayed(_lloyd_task)(b, C, wt, shift) for b, wt in zip(blocks, wb)]))
        relocated = bool(np.any(counts == 0))
        if relocated:
            _relocate_empty(blocks, wb, offsets, shift, C, sums, counts)
        C_new, center_shift = _update_centers(sums, counts, C)
        if np.array_equal(C_new, C):
            # the last pass's labels and inertia are those of the final centers
            strict = True
            break
        C = C_new
        if center_shift <= abs_tol:
            break
    if not strict:  # the inertia of the final centers
        inertia = reduce_partials(_compute(
            [dask.delayed(_lloyd_task)(b, C, wt, shift) for b, wt in zip(blocks, wb)]))[2]
    return {"centers": C, "inertia": inertia, "n_iter": it + 1, "strict": strict}


def _relocate_empty(blocks, wb, offsets, shift, C, sums, counts):
    """Empty clusters take the rows farthest from their (old) centers, in place.

    The rule of the in-memory core (``csrc/kmeans_impl.h``, relocate_empty):
    largest distance first, ties to the lowest row index; a row is taken only
    if it has positive weight and distance, its cluster keeps a positive
    weight, and it does not equal a row already moved. Each chunk offers its
    ``2 * n_empty + K`` farthest rows, enough unless more rows than that are
    skipped (then a cluster may keep its old center where the in-memory core
    would have found a row).
    """
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return
    n_top = 2 * empty.size + C.shape[0]
    parts = _compute([dask.delayed(_farthest_task)(b, C, wt, shift, off, n_top)
                      for b, wt, off in zip(blocks, wb, offsets)])
    dist = np.concatenate([q[0] for q in parts])
    index = np.concatenate([q[1] for q in parts])
    rows = np.concatenate([q[2] for q in parts])
    wts = np.concatenate([q[3] for q in parts])
    labs = np.concatenate([q[4] for q in parts])
    order = np.lexsort((index, -dist))
    pos = 0
    moved = []
    for k in empty:
        while pos < order.size:
            j = order[pos]
            pos += 1
            old = labs[j]
            if not counts[old] - wts[j] > 0:
                continue
            if any(np.array_equal(rows[j], rows[m]) for m in moved):
                continue
            x = rows[j].astype(np.float64)
            sums[old] -= wts[j] * x
            sums[k] = wts[j] * x
            counts[old] -= wts[j]
            counts[k] = wts[j]
            moved.append(j)
            break


# ------------------------------------------------------------------- seeding
def _block_seeds(rng, n_blocks):
    return [int(s) for s in rng.integers(2**63 - 1, size=n_blocks)]


def _random_rows(X, w, n_clusters, rng):
    """``n_clusters`` distinct rows drawn as the in-memory core draws them."""
    n = X.shape[0]
    pr = None
    if w is not None:
        wn = np.asarray(w.compute(), dtype=np.float64)
        if np.count_nonzero(wn) >= n_clusters:
            pr = wn / float(np.sum(wn))
    idx = rng.choice(n, size=n_clusters, replace=False, p=pr)
    order = np.argsort(idx)
    rows = np.asarray(X[np.sort(idx)].compute())
    out = np.empty_like(rows)
    out[order] = rows
    return out


def _pp_on_sample(blocks, wb, shift, n, n_clusters, rng):
    """Greedy k-means++ (the in-memory core's) on a uniform sample of the rows, weighted."""
    rate = min(1.0, max(PP_SAMPLE_SIZE, 10 * n_clusters) / n)
    seeds = _block_seeds(rng, len(blocks))
    parts = _compute([dask.delayed(_uniform_sample_task)(b, wt, shift, rate, s)
                      for b, wt, s in zip(blocks, wb, seeds)])
    rows = np.concatenate([q[0] for q in parts])
    wts = np.concatenate([q[1] for q in parts])
    if np.count_nonzero(wts) < n_clusters:   # a tiny sample: take every row
        parts = _compute([dask.delayed(_uniform_sample_task)(b, wt, shift, 1.0, 0)
                          for b, wt in zip(blocks, wb)])
        rows = np.concatenate([q[0] for q in parts])
        wts = np.concatenate([q[1] for q in parts])
    return kmeans_plusplus(np.ascontiguousarray(rows), n_clusters, sample_weight=wts,
                           random_state=rng)[0]


def seed_centers(X, n_clusters, *, init="k-means||", sample_weight=None, random_state=None):
    """Initial centers of a Dask array by a scalable seeding (returned, not fitted).

    ``init="k-means||"`` (Bahmani et al. 2012, Algorithm 2): one row drawn by
    weight; then ``KMEANS_PARALLEL_ROUNDS`` rounds that each add every row
    independently with probability ``l * w_i d_i^2 / phi`` (``d_i`` the
    distance to the nearest candidate so far, ``phi = sum_i w_i d_i^2``,
    oversampling ``l = 2 * n_clusters``); the candidates are weighted by the
    weight of the rows nearest to them and reclustered into ``n_clusters`` by
    the in-memory weighted k-means (k-means++ seeding, then Lloyd).
    ``init="k-means++"``: greedy k-means++ on a uniform sample of about
    ``PP_SAMPLE_SIZE`` rows, each carrying its weight.

    Returns
    -------
    ndarray of shape (n_clusters, n_features), in X's dtype
    """
    X = check_dask_array(X)
    rng = check_random_state(random_state)
    blocks, _ = _blocks(X)
    wb = _weight_blocks(dask_weights(sample_weight, X), len(blocks))
    shift = np.zeros(X.shape[1], dtype=X.dtype)
    if init == "k-means||":
        centers = _kmeans_parallel(blocks, wb, shift, n_clusters, rng)
    elif init == "k-means++":
        centers = _pp_on_sample(blocks, wb, shift, X.shape[0], n_clusters, rng)
    else:
        raise ValueError(f"init must be 'k-means||' or 'k-means++', got {init!r}.")
    return np.asarray(centers, dtype=X.dtype)


def _kmeans_parallel(blocks, wb, shift, n_clusters, rng, *, oversampling=2.0,
                     n_rounds=KMEANS_PARALLEL_ROUNDS):
    # k-means|| on centred chunks (see seed_centers)
    # the first candidate: a row drawn with probability proportional to its weight,
    # by a uniform draw of one row per chunk and then one chunk by weight
    seeds = _block_seeds(rng, len(blocks))
    parts = _compute([dask.delayed(_one_row_task)(b, wt, shift, s)
                      for b, wt, s in zip(blocks, wb, seeds)])
    block_w = np.array([q[1] for q in parts])
    first = parts[int(rng.choice(len(parts), p=block_w / block_w.sum()))][0]
    candidates = first[None, :]
    closest = [None] * len(blocks)
    new = candidates
    ell = oversampling * n_clusters
    for _ in range(n_rounds):
        # distances to the candidates added last (one task per chunk, kept on
        # the workers), and the potential phi reduced in chunk order
        closest, potentials = zip(*[dask.delayed(_closest_task, nout=2)(b, new, wt, shift, c)
                                    for b, wt, c in zip(blocks, wb, closest)])
        closest, potentials = dask.persist(list(closest), list(potentials))
        phi = reduce_partials([(v,) for v in _compute(potentials)])[0]
        if not phi > 0:
            break
        seeds = _block_seeds(rng, len(blocks))
        new = np.concatenate(_compute(
            [dask.delayed(_oversample_task)(b, c, wt, shift, ell / phi, s)
             for b, c, wt, s in zip(blocks, closest, wb, seeds)]))
        if new.shape[0] == 0:
            break
        candidates = np.concatenate([candidates, new])
    candidates = np.ascontiguousarray(candidates)
    weights = reduce_partials([(v,) for v in _compute(
        [dask.delayed(_candidate_weight_task)(b, candidates, wt, shift)
         for b, wt in zip(blocks, wb)])])[0]
    keep = weights > 0
    if np.count_nonzero(keep) < n_clusters:   # too few candidates hold rows: use them all
        keep = np.ones_like(keep)
    if np.count_nonzero(keep) < n_clusters:
        raise ValueError(f"k-means|| found {int(np.count_nonzero(keep))} candidate centers "
                         f"for n_clusters={n_clusters}; use init='k-means++'.")
    cand, cw = np.ascontiguousarray(candidates[keep]), weights[keep]
    cw = np.where(cw > 0, cw, np.min(cw[cw > 0]) if np.any(cw > 0) else 1.0)
    return _kmeans(cand, n_clusters, sample_weight=cw, init="k-means++",
                   random_state=rng).centers


def _one_row_task(block, weight, shift, seed):
    """One row of the chunk drawn by weight, and the chunk's total weight."""
    m = block.shape[0]
    w = np.ones(m) if weight is None else np.asarray(weight, dtype=np.float64)
    total = float(w.sum())
    if m == 0 or not total > 0:
        return np.zeros(block.shape[1], dtype=np.asarray(block).dtype), 0.0
    i = int(np.random.default_rng(seed).choice(m, p=w / total))
    return _centered(block[i:i + 1], shift)[0], total


# ------------------------------------------------------------ predict, transform
def _test_shift(centers, dtype):
    # as KMeans._check_test_data: one shift, in X's dtype, off X and the centers
    shift = np.asarray(centers).mean(axis=0, dtype=np.float64).astype(dtype)
    return shift, np.ascontiguousarray(np.asarray(centers) - shift, dtype=dtype)


def predict_labels(X, centers):
    """Lazy labels of the nearest centers, int64, with X's row chunks."""
    shift, C = _test_shift(centers, X.dtype)
    return X.map_blocks(_predict_block, C, shift, dtype=np.int64, drop_axis=1,
                        meta=np.empty((0,), dtype=np.int64))


def transform_distances(X, centers):
    """Lazy Euclidean distances to the centers, (n, k) in X's dtype, X's row chunks."""
    shift, C = _test_shift(centers, X.dtype)
    return X.map_blocks(_transform_block, C, shift, dtype=X.dtype,
                        chunks=(X.chunks[0], (C.shape[0],)),
                        meta=np.empty((0, 0), dtype=X.dtype))


def _inertia_task(block, centers, shift, weight):
    d2 = assign_labels(_centered(block, shift), centers, n_threads=_ONE_THREAD)[1]
    d2 = d2.astype(np.float64)
    return float(d2.sum()) if weight is None else float(np.asarray(weight, np.float64) @ d2)


def inertia(X, centers, sample_weight=None):
    """``sum_i w_i min_k ||x_i - c_k||^2`` of a dask array (KMeans.score), one pass.

    X and the centers less the centers' mean, as KMeans.score in memory.
    """
    shift, C = _test_shift(centers, X.dtype)
    blocks, _ = _blocks(X)
    w = dask_weights(sample_weight, X)
    if w is not None:
        _weight_summary(w, len(blocks))
    return reduce_partials([(v,) for v in _compute(
        [dask.delayed(_inertia_task)(b, C, shift, wt)
         for b, wt in zip(blocks, _weight_blocks(w, len(blocks)))])])[0]


def nearest_center(X, centers):
    """Lazy labels of the nearest ``centers`` (no shift), int64, with X's row chunks."""
    C = np.ascontiguousarray(centers, dtype=X.dtype)
    return X.map_blocks(_predict_block, C, np.zeros(C.shape[1], dtype=X.dtype),
                        dtype=np.int64, drop_axis=1, meta=np.empty((0,), dtype=np.int64))


# -------------------------------------------------------------- CPCM, linear
def _affine_block(block, B, b0):
    return _affine(np.asarray(block), B, b0)


def _cluster_sums_task(block, labels, n_clusters):
    return one_hot_sums(np.ascontiguousarray(block), labels, n_clusters)


def _scatter_task(zblock, labels, n_clusters, mean):
    """Per-cluster sums, counts and squared norms of a block of Zhat, and its
    scatter about ``mean`` (float64): the pieces of the blur ratio."""
    Z = np.ascontiguousarray(zblock)
    sums, counts = one_hot_sums(Z, labels, n_clusters)
    sq = np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
    dev = Z.astype(np.float64) - mean
    return sums, counts, float(np.einsum("ij,ij->", dev, dev)), \
        np.bincount(labels, weights=sq, minlength=n_clusters)


def _label_blocks(labels):
    return list(labels.to_delayed().ravel())


class LinearPredictor:
    """CPCM's least-squares predictor (``predictors.Linear``) for a Dask array.

    The mean comes from block moments, the R factor of the centred data from
    ``dask.array.linalg.tsqr`` (a block QR, then a QR of the stacked R's), and
    the whitening, coefficients and intercept from the in-memory formulas
    (:func:`metriclust._core.predictors.whitening`, ``Linear.coef_for``) on
    the reduced ``K x p`` cluster sums. ``Zhat = X B + b0`` stays lazy.
    """

    name = "linear"

    def __init__(self, X):
        self.X = X
        self.n_threads = _ONE_THREAD
        self.n_samples = X.shape[0]
        self._blocks = _blocks(X)[0]
        total, col_sum, _ = reduce_partials(_compute(
            [dask.delayed(_moments_task)(b, None, None) for b in self._blocks]))
        if not np.all(np.isfinite(col_sum)):
            raise ValueError("Input X contains NaN or infinity (or values so large that "
                             "their sum overflows).")
        self.mean = col_sum / total
        if X.shape[1] > min(X.chunks[0]):
            raise ValueError(f"X has {X.shape[1]} features and a chunk of {min(X.chunks[0])} "
                             "rows: the chunks of a dask array must hold at least as many rows "
                             "as features (rechunk X).")
        _, R = da.linalg.tsqr(X.astype(np.float64) - self.mean)
        self.R = np.asarray(R.compute())
        self.W = whitening(self.R, self.n_samples)
        self.rank = self.W.shape[1]

    def coef_for(self, labels, n_clusters):
        sums = reduce_partials(_compute(
            [dask.delayed(_cluster_sums_task)(b, lb, n_clusters)
             for b, lb in zip(self._blocks, _label_blocks(labels))]))
        return Linear.coef_for(self, None, n_clusters, sums=sums)

    def fit(self, labels, n_clusters):
        B, b0, counts = self.coef_for(labels, n_clusters)
        return PredictorFit(self.transform(self.X, PredictorFit(None, B, b0)), B, b0,
                            {"counts": counts})

    def transform(self, X, fit):
        return affine_map(X, fit.coef, fit.intercept)


def affine_map(X, coef, intercept):
    """Lazy ``X @ coef + intercept`` in X's dtype, with X's row chunks."""
    k = coef.shape[1]
    return X.map_blocks(_affine_block, coef, intercept, dtype=X.dtype,
                        chunks=(X.chunks[0], (k,)), meta=np.empty((0, 0), dtype=X.dtype))


def _scatter(Zhat, labels, n_clusters, mean):
    zb = list(Zhat.to_delayed().ravel())
    return reduce_partials(_compute(
        [dask.delayed(_scatter_task)(z, lb, n_clusters, mean)
         for z, lb in zip(zb, _label_blocks(labels))]))


def _blur_and_within(fit, labels, n_clusters, x_mean):
    """Blur ratio ``SSC / SST`` (Gupta et al. 2008, Sec. 2), cluster means
    ``theta_k`` and each cluster's share of the scatter, in one pass over Zhat.

    As ``predictors.blur_ratio`` and ``cpcm._within_share``, with the scatter
    taken about the exact mean of the affine predictions, ``x_mean B + b0``.
    """
    z_mean = x_mean @ fit.coef + fit.intercept
    sums, counts, sst, sq = _scatter(fit.Zhat, labels, n_clusters, z_mean)
    nz = counts > 0
    dev = sums[nz] - counts[nz, None] * z_mean[None, :]
    ssb = float(np.sum(dev * dev / counts[nz, None]))
    br = 1.0 if not sst > 0.0 else min(1.0, max(0.0, (sst - ssb) / sst))
    theta = sums / np.maximum(counts, 1.0)[:, None]
    per = sq - (sums * sums).sum(1) / np.maximum(counts, 1.0)
    within = np.maximum(per, 0.0) / sst if sst > 0 else np.ones(n_clusters)
    return br, theta, within


def cpcm_run(model, labels, n_clusters, max_iter, tol, min_size, seed):
    """CPCM's Algorithm 1 (Gupta et al. 2008) from one starting partition of a
    Dask array: the in-memory loop (``cpcm._cpcm``), each stage a pass of tasks.

    ``labels`` is a dask array of int64 with X's row chunks. Returns the dict
    of ``cpcm._cpcm`` (``labels`` a persisted dask array, ``fit.Zhat`` lazy)
    with the cluster means ``theta`` of the final prediction space.
    """
    K = n_clusters
    labels = labels.persist()
    fit = model.fit(labels, K)                                   # prediction stage
    br, theta, within = _blur_and_within(fit, labels, K, model.mean)
    history = [br]
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        # clustering stage: k-means of Zhat from theta_k = current cluster means
        new = kmeans(fit.Zhat, K, init=theta.astype(fit.Zhat.dtype), n_init=1,
                     random_state=seed).labels.persist()
        if int((new != labels).sum().compute()) == 0:
            break
        if da.bincount(new, minlength=K).compute().min() < min_size:
            break
        new_fit = model.fit(new, K)                              # prediction stage
        new_br, new_theta, new_within = _blur_and_within(new_fit, new, K, model.mean)
        if not new_br < br - tol:                               # monotone (Property 2)
            break
        labels, fit, br, theta, within = new, new_fit, new_br, new_theta, new_within
        history.append(br)
    return {"labels": labels, "fit": fit, "blur_ratio": br, "history": history,
            "n_iter": n_iter, "within": within, "theta": theta}


# ------------------------------------------------------------------------ MMC
def pair_rows(X, pairs):
    """The rows of X that ``pairs`` touch, as float64, and ``pairs`` re-indexed into them.

    Each row is read from the chunk that holds it (dask's row selection reads
    only those chunks); X is never gathered whole. ``pairs`` is a list of
    (m, 2) int64 arrays (None stays None).
    """
    used = [q for q in pairs if q is not None and len(q)]
    rows = np.unique(np.concatenate([q.ravel() for q in used])) if used else \
        np.zeros(0, dtype=np.int64)
    E = np.ascontiguousarray(X[rows].compute(), dtype=np.float64)
    if not np.all(np.isfinite(E)):
        raise ValueError("Input X contains NaN or infinity in a row of a pair.")
    return E, [None if q is None else np.ascontiguousarray(np.searchsorted(rows, q),
                                                           dtype=np.int64) for q in pairs]


def covariance(X):
    """Sample covariance (float64, ``N - 1`` in the denominator) by block moments about the mean."""
    mean, _ = column_mean_and_variance(X)
    blocks, _ = _blocks(X)
    total, dev_sum, cross = reduce_partials(_compute(
        [dask.delayed(_moments_task)(b, None, mean) for b in blocks]))
    C = cross - np.outer(dev_sum, dev_sum) / total
    return C / max(total - 1.0, 1.0)


# ------------------------------------------------------ row-wise methods of a fit
def _method_block(block, estimator, method):
    return getattr(estimator, method)(np.asarray(block))


def rowwise(X, estimator, method, n_columns=None, dtype=np.float64):
    """Lazy ``estimator.<method>(chunk)`` of every row chunk of X (a row-wise map).

    For methods whose output row depends on the input row only (a fitted
    transform or predict); the fitted estimator is shipped with the tasks.
    ``n_columns`` None gives a 1-D result (labels), else ``(n, n_columns)``.
    """
    if n_columns is None:
        return X.map_blocks(_method_block, estimator, method, dtype=dtype, drop_axis=1,
                            meta=np.empty((0,), dtype=dtype))
    return X.map_blocks(_method_block, estimator, method, dtype=dtype,
                        chunks=(X.chunks[0], (int(n_columns),)),
                        meta=np.empty((0, 0), dtype=dtype))
