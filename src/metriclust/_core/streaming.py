"""Fits by passes over row blocks, written once against the block engine.

Public classes and functions:

.. autosummary::

   kmeans_blockwise            -- Lloyd's k-means by passes over row blocks (local or Dask)
   lloyd                       -- Lloyd iterations from given centers, one pass each
   seed                        -- initial centers (k-means++, k-means||, random, array)
   relocate_empty              -- empty clusters take the farthest rows (the C core's rule)
   assign_blockwise            -- nearest center of every row, block by block
   label_counts                -- ``bincount`` of labels a chunk at a time
   column_mean_and_variance    -- weighted column means and variances in two passes
   mean_and_variance_blockwise -- the same for an out-of-core X
   sample_rows                 -- chosen rows of X
   take_pair_rows              -- the rows pairs touch, and the pairs re-indexed
   gather_pair_rows            -- the same for similar and dissimilar pairs together
   SEED_SAMPLE_SIZE            -- rows sampled for k-means++ on out-of-core data
   KMEANS_PARALLEL_ROUNDS      -- rounds of k-means||

Every function here takes a :class:`metriclust._core.engine.BlockSource` (or
an array it can wrap: an ``np.memmap``/row-sliceable array, or a validated
Dask array), so the same code runs one block at a time in this process and as
Dask tasks on a cluster. Each per-block step is a module-level function of
its arguments (the same C kernels as in memory), reduced in block order.

CONTRACT (stable):

    kmeans_blockwise(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
                     max_iter=300, tol=1e-4, random_state=None, n_threads=None,
                     verbose=0, block_rows=None, seed_sample_size=None, transform=None)
        -> KMeansResult(centers, labels, inertia, n_iter)
        (labels: int32 ndarray on the local backend, lazy int32 dask array on Dask)
    lloyd(src, centers, *, shift, weights=None, labels=None, max_iter=300, abs_tol=0.0,
          transform=None, verbose=0) -> dict(centers, labels RowArray, inertia, n_iter, strict)
    relocate_empty(src, centers, shift, weights, sums, counts, transform=None)
        -> (moved rows, their new labels); sums and counts updated in place
    seed(src, n_clusters, init, shift, weights, rng, ...) -> centers (shifted space)
    assign_blockwise(X, centers, *, shift=None, block_rows=None, n_threads=None,
                     name="X") -> (labels int64, squared distances float64)
    gather_pair_rows(X, similar, dissimilar) -> (rows of X, similar, dissimilar, row ids)
    take_pair_rows(X, pairs) -> (rows of X float64, [pairs re-indexed])
    label_counts(labels, n_clusters) -> int64 counts
    column_mean_and_variance(src, weights=None, transform=None) -> (mean, var) float64
"""

import numbers
import time

import numpy as np

from .blockwise import (combine_r, lloyd_partial, reduce_partials, subtract_rows,
                        tsqr_partial)
from .engine import RowArray, source
from .gram import Nystrom, drop_null_eigenpairs, gaussian_gram
from .kmeans import (KMeansResult, _check_init_centers, _column_sums_block,
                     _squared_deviation_sums_block, assign_labels, center_distances,
                     farthest_first, kmeans as _kmeans, kmeans_plusplus)
from .partition import cluster_sums
from .predictors import _affine, whitening
from .validation import check_array, check_pairs, check_random_state

__all__ = ["assign_blockwise", "column_mean_and_variance", "gather_pair_rows",
           "kmeans_blockwise", "label_counts", "lloyd", "mean_and_variance_blockwise",
           "relocate_empty", "sample_rows", "seed", "take_pair_rows", "SEED_SAMPLE_SIZE",
           "KMEANS_PARALLEL_ROUNDS"]

#: Rows of the uniform sample that k-means++ seeds from on out-of-core data
#: (at least 1,000 per cluster).
SEED_SAMPLE_SIZE = 100_000
#: Rounds of k-means|| sampling (Bahmani et al. 2012 take O(log psi) rounds
#: and oversampling l = 2k in most of their experiments; 5 rounds is our choice).
KMEANS_PARALLEL_ROUNDS = 5

# The block structure of the k-means core's mean and variance
# (``_core.kmeans._mean_and_variance``), so that the centering is bit-identical.
_MOMENT_BLOCK = 65536


# ------------------------------------------------------------ per-block steps
# Module-level functions of their arguments only (they pickle by reference).

def _weight_summary_block(w):
    w = np.asarray(w, dtype=np.float64)
    finite = bool(np.all(np.isfinite(w)))
    return (float(w.sum()) if finite else 0.0, float(w.max(initial=0.0)) if finite else 0.0,
            finite and bool(np.all(w >= 0)))


def _scale_block(w, scale, dtype):
    return np.asarray(np.asarray(w, np.float64) / scale, dtype=dtype), None


def _shifted(block, shift):
    return block if shift is None else subtract_rows(block, shift)


class _Scratch:
    """Buffers reused from block to block by one pass of the local backend (its
    blocks run one after the other in this thread): no new array per block, so
    no page faults. Dask tasks get None and allocate their own."""

    def __init__(self):
        self._buffers = {}

    def get(self, name, shape, dtype):
        shape = tuple(int(v) for v in np.atleast_1d(shape))
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != dtype or buf.shape[1:] != shape[1:] \
                or buf.shape[0] < shape[0]:
            buf = self._buffers[name] = np.empty(shape, dtype=dtype)
        return buf[:shape[0]]


def _pass_block(block, w, centers, shift, n_threads, with_inertia, center_first, scratch,
                with_labels=True):
    """One Lloyd pass on a block (``lloyd_partial``): ``(sums, counts, inertia, labels)``.

    ``center_first``: subtract the shift first ("inplace": the block is a temporary,
    a transform's output; "copy": into another array), so that the distances are
    those of the in-memory core on its centred copy of the data, to the bit
    (``lloyd_partial`` otherwise assigns the rows as read to the centers moved back
    by the shift: no copy of the block, the same labels except at near-ties).
    The labels (int64) are ``scratch``'s buffer when one is given: read them
    before the next block's call; None with ``with_labels=False`` (the sums
    only: no label array made or written).
    """
    if center_first and shift is not None:
        if center_first == "inplace" and block.flags.writeable:
            block = subtract_rows(block, shift, out=block)
        else:                   # or a transform that passes X's (read-only) rows through
            out = None if scratch is None else scratch.get("centred", block.shape, block.dtype)
            block = subtract_rows(block, shift, out=out)
        shift = None
    lab = None if scratch is None or not with_labels else scratch.get(
        "labels", block.shape[0], np.int64)
    return lloyd_partial(block, centers, w, shift, n_threads, with_inertia=with_inertia,
                         labels_out=lab, with_labels=with_labels)


def _lloyd_sums_block(block, w, centers, shift, n_threads, center_first, scratch):
    """Per-cluster sums and weights of one Lloyd pass on a block (labels not kept)."""
    sums, counts, _, _ = _pass_block(block, w, centers, shift, n_threads, False, center_first,
                                     scratch, with_labels=False)
    return sums, counts


def _lloyd_final_block(block, w, centers, shift, n_threads, center_first):
    """Labels (int32, kept) and inertia of the final centers on a block."""
    _, _, inertia, labels = _pass_block(block, w, centers, shift, n_threads, True, center_first,
                                        None)
    return labels.astype(np.int32), inertia


def _farthest_block(block, w, centers, shift, n_threads, center_first, n_top):
    """The ``n_top`` rows farthest from their own centers (their labels those of a
    Lloyd pass at ``centers``, :func:`_pass_block`): (dist, local index, row in the
    shifted space, weight, label); rows of zero weight and zero distance excluded."""
    labels = _pass_block(block if center_first != "inplace" else block.copy(), w, centers,
                         shift, n_threads, False, center_first, None)[3]
    Bc = _shifted(block, shift)
    diff = Bc.astype(np.float64) - np.asarray(centers, dtype=np.float64)[labels]
    d = np.einsum("ij,ij->i", diff, diff)
    wt = np.ones(Bc.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    d[~(wt > 0)] = -1.0
    top = np.lexsort((np.arange(Bc.shape[0]), -d))[:n_top]
    top = top[d[top] > 0]
    return d[top], top.astype(np.int64), np.array(Bc[top]), wt[top], labels[top]


def _assign_block(block, centers, shift, n_threads):
    return assign_labels(block, centers, shift=shift, return_distances=False,
                         n_threads=n_threads)[0]


def _assign_d2_block(block, centers, shift, n_threads):
    lab, d2 = assign_labels(block, centers, shift=shift, n_threads=n_threads)
    return np.column_stack([lab.astype(np.float64), d2.astype(np.float64)])


def _distances_block(block, centers, shift):
    return center_distances(block, centers, shift=shift)


def _inertia_block(block, w, centers, shift, n_threads):
    d2 = assign_labels(block, centers, shift=shift, n_threads=n_threads)[1]
    d2 = d2.astype(np.float64)
    return float(d2.sum()) if w is None else float(np.asarray(w, np.float64) @ d2)


def _closest_block(block, closest, w, centers, shift, n_threads):
    """Squared distance of each row to its nearest candidate (min with ``closest``),
    and the block's potential ``sum_i w_i d_i^2`` (k-means||)."""
    d2 = assign_labels(block, centers, shift=shift, n_threads=n_threads)[1]
    d2 = d2.astype(np.float64)
    if closest is not None:
        d2 = np.minimum(np.asarray(closest), d2)
    pot = float(d2.sum()) if w is None else float(d2 @ np.asarray(w, np.float64))
    return d2, pot


def _oversample_block(block, closest, w, shift, scale, seed):
    """Rows kept independently with probability ``min(1, scale * w_i * d_i^2)``."""
    wt = 1.0 if w is None else np.asarray(w, dtype=np.float64)
    prob = np.minimum(1.0, scale * wt * np.asarray(closest))
    keep = np.random.default_rng(seed).random(prob.shape[0]) < prob
    return np.array(_shifted(block, shift)[keep])


def _one_row_block(block, w, shift, seed):
    """One row of the block drawn by weight, and the block's total weight."""
    m = block.shape[0]
    wt = np.ones(m) if w is None else np.asarray(w, dtype=np.float64)
    total = float(wt.sum())
    if m == 0 or not total > 0:
        return np.zeros(block.shape[1], dtype=block.dtype), 0.0
    i = int(np.random.default_rng(seed).choice(m, p=wt / total))
    return np.array(_shifted(block[i:i + 1], shift)[0]), total


def _candidate_weight_block(block, w, candidates, shift, n_threads):
    labels = assign_labels(block, candidates, shift=shift, return_distances=False,
                           n_threads=n_threads)[0]
    return np.bincount(labels, weights=None if w is None else np.asarray(w, np.float64),
                       minlength=candidates.shape[0]).astype(np.float64)


def _changed_and_counts_block(new, old, k):
    new = np.asarray(new)
    return (float(np.count_nonzero(new != np.asarray(old))),
            np.bincount(new, minlength=k).astype(np.float64))


def _changed_block(a, b):
    return int(np.count_nonzero(np.asarray(a) != np.asarray(b)))


def _bincount_block(labels, k):
    return np.bincount(np.asarray(labels), minlength=k).astype(np.int64)


# --------------------------------------------------------------- moments
def column_mean_and_variance(src, weights=None, *, with_variance=True, transform=None):
    """Weighted column means and variances (float64) in two passes.

    Local backend: blocks of 65,536 rows and the order of the in-memory
    k-means core's ``_mean_and_variance`` (the same bits for the same data);
    Dask: the row chunks. The first pass over X checks it (NaN, infinity).
    """
    src = source(src)
    if src.kind == "local":
        sub = src.reblock(min(_MOMENT_BLOCK, max(e - s for s, e in src.bounds)))
        if weights is not None:
            weights = RowArray(sub, values=weights.values)
    else:
        sub = src
    if weights is None:
        total = float(src.n_rows)
    elif weights.values is not None:    # as the in-memory core: one numpy sum
        total = float(np.asarray(weights.values, dtype=np.float64).sum())
    else:
        total = float(sum(sub.map(_sum_weights, rows=(weights,), x=False)))
    mean = sub.reduce(_column_sums_block, rows=(weights,), transform=transform) / total
    src.checked = sub.checked
    if not np.all(np.isfinite(mean)):
        raise ValueError(f"Input {src.name} contains NaN or infinity (or values so large "
                         "that their sum overflows).")
    if not with_variance:
        return mean, None
    var = sub.reduce(_squared_deviation_sums_block, mean, rows=(weights,),
                     transform=transform) / total
    return mean, var


def _sum_weights(w):
    return float(np.sum(np.asarray(w, dtype=np.float64)))


def mean_and_variance_blockwise(X, dtype=None, w=None, *, with_variance=True, name="X",
                                block_rows=_MOMENT_BLOCK):
    """Weighted column means and variances of an out-of-core X (see
    :func:`column_mean_and_variance`)."""
    src = source(X, block_rows=block_rows, name=name)
    return column_mean_and_variance(src, src.rows(w), with_variance=with_variance)


def sample_rows(X, indices, dtype=None, *, block_rows=None):
    """Rows ``indices`` of X (see :meth:`BlockSource.take_rows`)."""
    return source(X, block_rows=block_rows).take_rows(indices)


def label_counts(labels, n_clusters, *, chunk=1 << 20):
    """``np.bincount(labels, minlength=n_clusters)`` a chunk at a time.

    ``np.bincount`` casts int32 labels to int64 first: 8 bytes a row of
    temporary on data past memory; by chunks it is 8 MB. A dask array is
    counted chunk by chunk on the workers.
    """
    if hasattr(labels, "__dask_graph__"):
        import dask.array as da
        return np.asarray(da.bincount(labels, minlength=n_clusters).compute(), dtype=np.int64)
    counts = np.zeros(n_clusters, dtype=np.int64)
    for a in range(0, labels.shape[0], chunk):
        counts += np.bincount(labels[a:a + chunk], minlength=n_clusters)
    return counts


# --------------------------------------------------------------- weights
def _check_weights(src, sample_weight):
    """Weights as a RowArray in the working dtype, the largest scaled to 1, and the scale.

    As the k-means core: finite, non-negative and not all zero, checked in float64.
    """
    if sample_weight is None:
        return None, 1.0
    if src.kind == "local":
        w = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if w.shape != (src.n_rows,):
            raise ValueError(f"sample_weight must have shape ({src.n_rows},), got {w.shape}.")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and np.any(w > 0)):
            raise ValueError("sample_weight must be finite and non-negative, and not all zero.")
        w_scale = float(w.max())
        return src.rows(np.ascontiguousarray(w / w_scale, dtype=src.dtype)), w_scale
    if np.ndim(sample_weight) == 0:
        sample_weight = np.full(src.n_rows, float(sample_weight))
    shape = tuple(int(v) for v in np.shape(sample_weight))
    if shape != (src.n_rows,):
        raise ValueError(f"sample_weight must have shape ({src.n_rows},), got {shape}.")
    raw = src.rows(sample_weight, dtype=np.float64)
    parts = src.map(_weight_summary_block, rows=(raw,), x=False)
    total = reduce_partials([(t,) for t, _, _ in parts])[0]
    if not all(ok for _, _, ok in parts) or not total > 0:
        raise ValueError("sample_weight must be finite and non-negative, and not all zero.")
    w_scale = max(m for _, m, _ in parts)
    w, _ = src.map_keep(_scale_block, w_scale, src.dtype, rows=(raw,), dtype=src.dtype, x=False)
    return w, w_scale


# ----------------------------------------------------------------- Lloyd
def _update_centers(sums, counts, centers):
    """New centers (an empty cluster keeps its center) and the squared shift."""
    safe = np.where(counts > 0, counts, 1.0)[:, None]
    new = np.where(counts[:, None] > 0, (sums / safe).astype(centers.dtype), centers)
    shift = float(np.sum((new.astype(np.float64) - centers.astype(np.float64)) ** 2))
    return np.ascontiguousarray(new), shift


def _center_first(src, transform):
    # Rows centred before the assignment: transformed blocks (temporaries, in
    # place) and Dask chunks (into a copy: the in-memory core's arithmetic to the
    # bit); a memmap's blocks are assigned as read (no copy of the block).
    return "inplace" if transform is not None else ("copy" if src.kind == "dask" else False)


def relocate_empty(src, centers, shift, weights, sums, counts, transform=None):
    """Empty clusters take the rows farthest from their centers (the C core's rule), in place.

    Largest distance first (ties to the lowest row), a row only if it has
    positive weight and a positive distance, its cluster keeps a positive
    weight, and it differs from the rows already moved. One extra pass keeps
    the ``T`` farthest rows of every block (``T = 4 * n_empty + K + 16``), with
    their labels at ``centers`` (the pass's); ``sums`` and ``counts`` are
    updated. Returns the moved rows' indices and new labels (no per-row state
    is kept between passes: the next pass assigns every row afresh).
    """
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return [], []
    T = 4 * empty.size + centers.shape[0] + 16
    parts = src.map(_farthest_block, centers, shift, src.n_threads,
                    _center_first(src, transform), T, rows=(weights,), transform=transform)
    d = np.concatenate([q[0] for q in parts])
    idx = np.concatenate([q[1] + s for q, s in zip(parts, src.starts)])
    rows = np.concatenate([q[2] for q in parts])
    wts = np.concatenate([q[3] for q in parts])
    labs = np.concatenate([q[4] for q in parts])
    order = np.lexsort((idx, -d))
    moved, moved_idx, moved_to = [], [], []
    pos = 0
    for k in empty:
        while pos < order.size:
            j = order[pos]
            pos += 1
            old = labs[j]
            wf = float(wts[j])
            if not counts[old] - wf > 0:
                continue
            x = rows[j]
            if any(np.array_equal(x, y) for y in moved):
                continue
            sums[old] -= wf * x.astype(np.float64)
            sums[k] = wf * x.astype(np.float64)
            counts[old] -= wf
            counts[k] = wf
            labs[j] = k
            moved.append(x)
            moved_idx.append(int(idx[j]))
            moved_to.append(int(k))
            break
    return moved_idx, moved_to


def lloyd(src, centers, *, shift, weights=None, labels=None, max_iter=300, abs_tol=0.0,
          transform=None, verbose=0):
    """Lloyd iterations from ``centers`` (in the space of ``block - shift``), one pass each.

    The iteration of the k-means core (:func:`metriclust._core.kmeans.kmeans`,
    ``algorithm="lloyd"``): the C assignment and cluster sums on each block
    (:func:`metriclust._core.blockwise.lloyd_partial`), the sums reduced in
    block order, empty clusters moved to the farthest rows
    (:func:`relocate_empty`), new centers; a stop when the squared center shift
    is at most ``abs_tol``; then one pass gives the labels and the inertia
    (float64, from ``x - c``) of the final centers.

    A pass returns only the ``K x p`` sums and the ``K`` weights of its block:
    no label is kept between passes, so a pass is one read of the data (a
    memmap) or one round of one task per chunk (Dask). The core's strict stop
    ("no label changed") is the same stop: an unchanged partition gives
    bitwise the same block sums, so the same centers, a center shift of 0 and
    the stop at the same iteration; and the core's final labels (its last
    pass's, or a labelling pass at the final centers) are then the labels of
    the final centers, as here. (The one case that can differ: a pass that
    changes no label but refills an empty cluster that the previous pass
    could not, which the core counts as strict.) ``strict`` reports an
    unchanged partition (bitwise unchanged centers after the first pass).

    ``labels``: a RowArray that receives the final labels (local backend: in
    place); a new one if None. ``verbose >= 2`` prints each iteration's
    center shift and seconds.

    Returns a dict: ``centers``, ``labels`` (RowArray, int32), ``inertia``,
    ``n_iter``, ``strict``.
    """
    mode = _center_first(src, transform)
    nt = src.n_threads
    scratch = _Scratch() if src.kind == "local" else None
    C = np.ascontiguousarray(centers)
    strict = False
    it = 0
    for it in range(max_iter):
        t0 = time.perf_counter()
        sums, counts = src.reduce(_lloyd_sums_block, C, shift, nt, mode, scratch,
                                  rows=(weights,), transform=transform)
        moved, _ = relocate_empty(src, C, shift, weights, sums, counts, transform=transform)
        new, center_shift = _update_centers(sums, counts, C)
        strict = it > 0 and not moved and np.array_equal(new, C)
        C = new
        if verbose >= 2:
            print(f"  iteration {it + 1}: center shift {center_shift:.6g}"
                  f"{f', {len(moved)} empty cluster(s) refilled' if moved else ''}, "
                  f"{time.perf_counter() - t0:.4f} s", flush=True)
        if strict or center_shift <= abs_tol:
            break
    labels, parts = src.map_keep(_lloyd_final_block, C, shift, nt, mode, rows=(weights,),
                                 out=labels, dtype=np.int32, transform=transform)
    inertia = reduce_partials([(v,) for v in parts])[0]
    return {"centers": C, "labels": labels, "inertia": float(inertia), "n_iter": it + 1,
            "strict": strict}


# ----------------------------------------------------------------- seeding
def _block_seeds(rng, n_blocks):
    return [int(s) for s in rng.integers(2**63 - 1, size=n_blocks)]


def kmeans_parallel(src, n_clusters, shift, weights, rng, *, oversampling=2.0,
                    n_rounds=KMEANS_PARALLEL_ROUNDS, transform=None):
    """k-means|| (Bahmani et al. 2012, Algorithm 2) on ``block - shift``.

    One row drawn by weight; then ``n_rounds`` rounds that each add every row
    independently with probability ``l * w_i d_i^2 / phi`` (``d_i`` the
    distance to the nearest candidate so far, ``phi = sum_i w_i d_i^2``,
    ``l = oversampling * n_clusters``); the candidates, weighted by the weight
    of the rows nearest to them, are reclustered into ``n_clusters`` by the
    in-memory weighted k-means (k-means++ seeding, then Lloyd). Keeps one
    float64 distance per row between rounds (``8 N`` bytes: on the workers for
    Dask, in memory for the local backend).
    """
    nt = src.n_threads
    parts = src.map(_one_row_block, shift, rows=(weights,), transform=transform,
                    per_block=_block_seeds(rng, src.n_blocks))
    block_w = np.array([q[1] for q in parts])
    first = parts[int(rng.choice(len(parts), p=block_w / block_w.sum()))][0]
    candidates = first[None, :]
    closest = None
    new = candidates
    ell = oversampling * n_clusters
    for _ in range(n_rounds):
        closest, pots = src.map_keep(_closest_block, np.ascontiguousarray(new), shift, nt,
                                     rows=(closest, weights), dtype=np.float64,
                                     transform=transform)
        phi = reduce_partials([(v,) for v in pots])[0]
        if not phi > 0:
            break
        new = np.concatenate(src.map(_oversample_block, shift, ell / phi,
                                     rows=(closest, weights), transform=transform,
                                     per_block=_block_seeds(rng, src.n_blocks)))
        if new.shape[0] == 0:
            break
        candidates = np.concatenate([candidates, new])
    candidates = np.ascontiguousarray(candidates)
    cw = src.reduce(_candidate_weight_block, candidates, shift, nt, rows=(weights,),
                    transform=transform)
    keep = cw > 0
    if np.count_nonzero(keep) < n_clusters:   # too few candidates hold rows: use them all
        keep = np.ones_like(keep)
    if np.count_nonzero(keep) < n_clusters:
        raise ValueError(f"k-means|| found {int(np.count_nonzero(keep))} candidate centers "
                         f"for n_clusters={n_clusters}; use init='k-means++'.")
    cand, cw = np.ascontiguousarray(candidates[keep]), cw[keep]
    cw = np.where(cw > 0, cw, np.min(cw[cw > 0]) if np.any(cw > 0) else 1.0)
    return _kmeans(cand, n_clusters, sample_weight=cw, init="k-means++",
                   random_state=rng).centers






def seed(src, n_clusters, init, shift, weights, rng, *, seed_sample_size=None, X=None,
         transform=None):
    """Initial centers in the space of ``block - shift``.

    ``init``: an array of centers (in X's space), a callable
    ``init(X, n_clusters, random_state=rng)``, ``"random"`` (rows drawn as in
    memory), ``"k-means++"``/``"farthest"`` (the core's greedy seeding on a
    uniform sample of ``seed_sample_size`` rows drawn without replacement; with
    no more rows than that the sample is X and the seeding the in-memory one),
    or ``"k-means||"`` (:func:`kmeans_parallel`).
    """
    n = src.n_rows

    def rows(idx):
        got = src.take_rows(idx)
        return got if transform is None else np.ascontiguousarray(transform(got))
    dtype = np.dtype(shift.dtype)
    if isinstance(init, np.ndarray):
        return init - shift
    if callable(init):
        shape = _Shape((n, shift.shape[0]))
        return _check_init_centers(init(src.X if X is None else X, n_clusters,
                                        random_state=rng), n_clusters, shape) - shift
    if init == "random":
        pr = None
        if weights is not None:
            wv = weights.values if weights.values is not None else \
                np.asarray(weights.result().compute(), dtype=np.float64)
            if np.count_nonzero(wv) >= n_clusters:
                pr = np.asarray(wv, dtype=np.float64) / float(np.sum(wv, dtype=np.float64))
        idx = rng.choice(n, size=n_clusters, replace=False, p=pr)
        return rows(idx) - shift
    if init == "k-means||":
        return kmeans_parallel(src, n_clusters, shift, weights, rng, transform=transform)
    if init not in ("k-means++", "farthest"):
        raise ValueError(f"init must be 'k-means++', 'k-means||', 'farthest', 'random', an "
                         f"array or a callable, got {init!r}.")
    if seed_sample_size is None:
        seed_sample_size = max(SEED_SAMPLE_SIZE, 1000 * n_clusters)
    idx = np.arange(n, dtype=np.int64) if n <= seed_sample_size else \
        np.sort(rng.choice(n, size=seed_sample_size, replace=False))
    sample = np.ascontiguousarray(rows(idx) - shift, dtype=dtype)
    sample_w = None
    if weights is not None:
        wv = weights.values if weights.values is not None else \
            np.asarray(weights.result()[idx].compute())
        sample_w = np.ascontiguousarray(np.asarray(wv)[idx] if weights.values is not None
                                        else wv, dtype=dtype)
    how = farthest_first if init == "farthest" else kmeans_plusplus
    return how(sample, n_clusters, sample_weight=sample_w, random_state=rng,
               n_threads=src.n_threads)[0]


class _Shape:
    def __init__(self, shape):
        self.shape = shape


# ---------------------------------------------------------------- k-means
def kmeans_blockwise(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
                     max_iter=300, tol=1e-4, random_state=None, n_threads=None, verbose=0,
                     block_rows=None, seed_sample_size=None, transform=None):
    """Lloyd's k-means of X by passes over its row blocks (local or Dask backend).

    The iteration is the k-means core's (:func:`metriclust._core.kmeans.kmeans`
    with ``algorithm="lloyd"``): X centered by its weighted mean (the same
    float64 block sums), then :func:`lloyd`. Local backend: labels equal the
    in-memory fit's on data whose assignment has no near-ties (a memmap's
    blocks are assigned as read, against the centers moved back by the shift:
    no copy of the block, the distances rounded differently); Dask: every
    chunk is centred first, the in-memory arithmetic (on 4e5 x 8 uniform
    float32 rows, K = 16, 4 iterations: 0 labels differ on Dask, 19 on a
    memmap). Centers agree to rounding, and the result does not depend on
    ``block_rows`` beyond rounding, nor on the thread count at all.

    Seeding: see :func:`seed` (``"k-means++"`` on a sample of
    ``seed_sample_size`` rows, default :data:`SEED_SAMPLE_SIZE` and at least
    ``1000 * n_clusters``; ``"k-means||"``; ``"farthest"``; ``"random"``; an
    array; a callable).

    Peak extra memory (local backend): ``4 N`` bytes of int32 labels (twice
    with ``n_init > 1``), ``8 N`` for ``sample_weight`` (``8 N`` more for the
    k-means|| distances), the seeding sample (``seed_sample_size * p`` values
    and ``8 seed_sample_size`` of seeding distances), and about
    ``block_rows * (3 p itemsize + 24)`` bytes for one block, its centered copy
    and the kernels' per-row outputs. Dask: the final labels stay on the
    workers (``4 N`` bytes spread over them), and X held by a distributed
    cluster (``X.persist()``) gets a centred copy there for the fit (X's size
    again, as the in-memory core's ``X - mean``; other chunks are centred
    task by task at every pass); the client holds ``K x p`` partials. A Lloyd
    pass keeps no per-row state (see :func:`lloyd`): one read of a memmap, one
    round of one task per chunk on Dask.

    ``transform``: a per-block transform (a module-level callable object; see
    :mod:`metriclust._core.engine`): k-means of the rows ``transform(X)``,
    computed block by block and never stored (given centers are in that space).

    Returns
    -------
    KMeansResult(centers, labels, inertia, n_iter)
        labels are int32: an ndarray (local) or a lazy dask array with X's
        row chunks (Dask).
    """
    src = source(X, block_rows=block_rows, n_threads=n_threads)
    n, p, dtype = src.n_rows, src.n_features, src.dtype
    if transform is not None:    # the space of the transformed rows
        probe = np.asarray(transform(src.take_rows([0])))
        p = probe.shape[1]
        dtype = probe.dtype if probe.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    if n_clusters > n:
        raise ValueError(f"n_samples={n} should be >= n_clusters={n_clusters}.")
    max_iter = min(int(max_iter), 2**31 - 1)
    rng = check_random_state(random_state)
    if seed_sample_size is not None and (
            isinstance(seed_sample_size, bool)
            or not isinstance(seed_sample_size, numbers.Integral)
            or seed_sample_size < n_clusters):
        raise ValueError(f"seed_sample_size must be an int >= n_clusters={n_clusters}, "
                         f"got {seed_sample_size!r}.")
    w, w_scale = _check_weights(src, sample_weight)
    mean, var = column_mean_and_variance(src, w, with_variance=tol > 0, transform=transform)
    X_mean = mean.astype(dtype)
    abs_tol = float(np.mean(var) * tol) if tol > 0 else 0.0

    best = best_labels = None
    # the final labels of a start go into one array (local; Dask: new chunks each start)
    labels = RowArray(src, values=np.empty(n, dtype=np.int32)) if src.kind == "local" else None
    # Dask data held by the cluster: the Lloyd passes run on a centred copy persisted
    # once (the in-memory core's ``X - mean``), not on chunks centred at every pass
    lsrc, lshift = src, X_mean
    if transform is None and src.persisted():
        lsrc, lshift = src.centred(X_mean), None
    for r in range(n_init):
        centers = np.ascontiguousarray(
            seed(src, n_clusters, init, X_mean, w, rng, seed_sample_size=seed_sample_size,
                 transform=transform),
            dtype=dtype)
        run = lloyd(lsrc, centers, shift=lshift, weights=w,
                    labels=labels, max_iter=max_iter, abs_tol=abs_tol, transform=transform,
                    verbose=verbose)
        if verbose:
            how = "strict convergence" if run["strict"] else (
                "center shift within tolerance" if run["n_iter"] < max_iter
                else "max_iter reached")
            print(f"k-means start {r + 1} of {n_init}: {run['n_iter']} iterations ({how}), "
                  f"inertia {run['inertia']:.6g}")
        if best is None or run["inertia"] < best["inertia"]:
            if n_init > 1 and src.kind == "local":   # ``labels`` is reused by the next start
                if best_labels is None:
                    best_labels = labels.copy()
                else:
                    best_labels.assign_from(labels)
                run = dict(run, labels=best_labels)
            best = run
    inertia = float(best["inertia"]) * w_scale
    if not np.isfinite(inertia):
        raise ValueError("sample_weight is too large: the weighted inertia overflows float64. "
                         "Rescale sample_weight (k-means depends on the weights only up to a "
                         "common factor).")
    return KMeansResult((best["centers"] + X_mean).astype(dtype, copy=False),
                        best["labels"].result(), inertia, int(best["n_iter"]))


# ------------------------------------------------------- predict, transform
def assign_blockwise(X, centers, *, shift=None, block_rows=None, n_threads=None, name="X"):
    """Nearest center of every row of X, one block at a time (local backend).

    ``shift`` is subtracted from the rows first (in the centers' dtype), and
    ``centers`` are in that shifted space. Returns ``(labels int64, squared
    distances float64)``: peak extra memory ``16 N`` bytes for them plus one
    block and its shifted copy.
    """
    src = source(X, block_rows=block_rows, name=name, n_threads=n_threads)
    centers = np.ascontiguousarray(centers, dtype=src.dtype)
    out = src.rowwise(_assign_d2_block, centers, shift, src.n_threads, n_columns=2)
    return out[:, 0].astype(np.int64), np.ascontiguousarray(out[:, 1])


def predict_labels(src, centers, shift=None, *, transform=None):
    """Nearest center of each row (int64): ndarray (local) or lazy dask array (Dask)."""
    src = source(src)
    dt = src.dtype if transform is None else np.dtype(transform.out_dtype(src.dtype))
    C = np.ascontiguousarray(centers, dtype=dt)
    return src.rowwise(_assign_block, C, shift, src.n_threads, dtype=np.int64,
                       transform=transform)


def distances(src, centers, shift=None):
    """Euclidean distances to the centers, (n, k) in X's dtype (ndarray or lazy dask array)."""
    src = source(src)
    C = np.ascontiguousarray(centers, dtype=src.dtype)
    return src.rowwise(_distances_block, C, shift, n_columns=C.shape[0], dtype=src.dtype)


def inertia(src, centers, shift=None, sample_weight=None):
    """``sum_i w_i min_k ||x_i - shift - c_k||^2`` in one pass (KMeans.score)."""
    src = source(src)
    w = None
    if sample_weight is not None:
        w = src.rows(sample_weight, dtype=np.float64)
        parts = src.map(_weight_summary_block, rows=(w,), x=False)
        if not all(ok for _, _, ok in parts):
            raise ValueError("sample_weight must be finite and non-negative.")
    C = np.ascontiguousarray(centers, dtype=src.dtype)
    return src.reduce(_inertia_block, C, shift, src.n_threads, rows=(w,))



# --------------------------------------------------------------- pair rows
def take_pair_rows(X, pairs, dtype=np.float64):
    """The rows of X that ``pairs`` touch and ``pairs`` re-indexed into them.

    ``pairs`` is a list of (m, 2) int arrays (None stays None), already
    validated against X's rows. Each row is read from the block that holds it
    (memmap: only its pages; Dask: only the chunks that hold pairs); X is never
    gathered whole. Raises a ValueError for a non-finite value in those rows.
    """
    src = source(X)
    used = [np.asarray(q).ravel() for q in pairs if q is not None and len(q)]
    rows = np.unique(np.concatenate(used)).astype(np.int64) if used else \
        np.zeros(0, dtype=np.int64)
    E = np.ascontiguousarray(src.take_rows(rows), dtype=dtype)
    if not np.all(np.isfinite(E)):
        raise ValueError(f"Input {src.name} contains NaN or infinity in a row of a pair.")
    out = [None if q is None else np.ascontiguousarray(
        np.searchsorted(rows, np.asarray(q, dtype=np.int64)), dtype=np.int64) for q in pairs]
    return E, out, rows


def gather_pair_rows(X, similar, dissimilar):
    """The rows of an out-of-core X that explicit pairs touch, and the pairs renumbered.

    A metric learned from pairs (MMC) depends on X only through those rows.
    The pairs are validated against X's row count (errors name ``similar`` or
    ``dissimilar``). Peak extra memory: the touched rows (``n_touched * p``
    values) and the pairs.

    Returns
    -------
    X_rows : ndarray of shape (n_touched, p)
        Validated as :func:`metriclust._core.validation.check_array` does.
    similar, dissimilar : ndarray of shape (m, 2), int64
        Indices into ``X_rows``.
    rows : ndarray of shape (n_touched,), int64
        ``X_rows[i]`` is ``X[rows[i]]``: ``rows[similar]`` gives back the pairs.
    """
    n = X.shape[0]
    S = check_pairs(similar, n, name="similar", allow_empty=False)
    D = check_pairs(dissimilar, n, name="dissimilar")
    src = source(X)
    E, (S2, D2), rows = take_pair_rows(src, [S, D], dtype=src.dtype)
    return check_array(E, name="X"), S2.reshape(-1, 2), D2.reshape(-1, 2), rows


def n_changed(a, b):
    """Number of rows where RowArrays ``a`` and ``b`` differ (one pass, no X)."""
    return int(sum(a.src.map(_changed_block, rows=(a, b), x=False)))


def counts_of(labels, n_clusters):
    """Cluster sizes of a RowArray of labels (int64), reduced in block order."""
    return labels.src.reduce(_bincount_block, n_clusters, rows=(labels,), x=False)


# =====================================================================
# CPCM (Gupta, Foster & Ungar 2008) by passes over row blocks
# =====================================================================
#
# Both block predictors predict ``Zhat = phi(x) B + b0`` with ``phi`` the
# identity (least squares, CPCM-LSR) or the centered Nystrom features of the
# Gaussian kernel (CPCM-RKHS), and ``B = P diag(d) P^T (S - n mu^T)^T`` from the
# per-cluster sums ``S`` of ``phi`` (one pass of the C cluster-sum kernel).
# ``Zhat`` is computed per block by a transform (:class:`Affine`,
# :class:`NystromMap`), never materialised.

class Affine:
    """Per-block transform ``block @ B + b0`` in the block's dtype (float32 stays)."""

    def __init__(self, B, b0):
        self.B = np.ascontiguousarray(B, dtype=np.float64)
        self.b0 = np.ascontiguousarray(b0, dtype=np.float64)

    def __call__(self, block):
        out = block @ self.B.astype(block.dtype, copy=False)
        out += self.b0.astype(block.dtype, copy=False)
        return out

    def out_dtype(self, dtype):
        return np.dtype(dtype)


class NystromMap:
    """Per-block centered Nystrom features ``G(x, L) N - f_mean`` (float64), then
    ``@ B + b0`` when ``B`` is given."""

    def __init__(self, landmarks, normalization, sigma, f_mean, B=None, b0=None, n_threads=1):
        self.L = np.ascontiguousarray(landmarks, dtype=np.float64)
        self.N = np.ascontiguousarray(normalization, dtype=np.float64)
        self.sigma = float(sigma)
        self.f_mean = np.asarray(f_mean, dtype=np.float64)
        self.B = None if B is None else np.ascontiguousarray(B, dtype=np.float64)
        self.b0 = None if b0 is None else np.asarray(b0, dtype=np.float64)
        self.n_threads = n_threads

    def __call__(self, block):
        F = gaussian_gram(np.asarray(block, dtype=np.float64), self.L, sigma=self.sigma,
                          n_threads=self.n_threads) @ self.N
        F -= self.f_mean
        if self.B is None:
            return F
        out = F @ self.B
        out += self.b0
        return out

    def out_dtype(self, dtype):
        return np.dtype(np.float64)

    def with_coef(self, B, b0):
        return NystromMap(self.L, self.N, self.sigma, self.f_mean, B, b0, self.n_threads)


class ModelMap:
    """Per-block transform ``model.transform(block, fit)`` of any fitted predictor."""

    def __init__(self, model, fit):
        self.model, self.fit = model, fit
        self.B = fit.coef

    def __call__(self, block):
        return np.asarray(self.model.transform(block, self.fit), dtype=np.float64)

    def out_dtype(self, dtype):
        return np.dtype(np.float64)


def prediction_transform(model, fit, n_threads=1):
    """The per-block transform ``X -> Zhat`` of a fitted CPCM predictor (any of the
    in-memory ones with an affine map or a Nystrom kernel, or a block predictor)."""
    if getattr(model, "name", None) == "kernel":
        if getattr(model, "nystrom", None) is None:
            # the exact kernel (N <= 2000 training rows): its cross Gram, per block
            return ModelMap(model, fit)
        ny = model.nystrom
        return NystromMap(ny.landmarks_, ny.normalization_, ny.sigma_, model.f_mean,
                          fit.coef, fit.intercept, n_threads)
    return Affine(fit.coef, fit.intercept)


def _cluster_sums_block(block, labels, n_clusters, n_threads):
    return cluster_sums(np.ascontiguousarray(block), np.ascontiguousarray(labels, np.int64),
                        n_clusters, n_threads)


def _tsqr_block(block, mean):
    return tsqr_partial(np.asarray(block, dtype=np.float64) - mean)


def _cross_block(F):
    return F.T @ F


def _within_block(Z, labels, theta, n_clusters):
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    dev = Z - theta[labels]
    return np.bincount(labels, weights=np.einsum("ij,ij->i", dev, dev), minlength=n_clusters)


def _nearest_block(Z, centers, n_threads):
    lab = assign_labels(Z, centers.astype(Z.dtype, copy=False), n_threads=n_threads)[0]
    return lab.astype(np.int32), None


class _BlockFit:
    """A fitted block predictor: ``coef``/``intercept`` (as ``PredictorFit``), the
    transform to ``Zhat`` and the cluster sums it came from."""

    def __init__(self, coef, intercept, transform, sums, counts):
        self.Zhat = None
        self.coef, self.intercept = coef, intercept
        self.transform = transform
        self.sums, self.counts = sums, counts
        self.extra = {"counts": counts}


class BlockLinear:
    """CPCM's least-squares predictor (``predictors.Linear``) by passes over row blocks.

    The mean from block sums, the R factor of the centred data by TSQR (a QR
    per block, then of the stacked R's: :func:`metriclust._core.blockwise.tsqr_partial`,
    ``combine_r``), in one pass; the whitening ``W``, coefficients and
    intercept from the in-memory formulas on the reduced ``K x p`` cluster sums.
    Peak extra memory: one block and its float64 centred copy for the QR
    (``block_rows * p * 16`` bytes), and ``p x p`` per block of R's (``n_blocks p^2 * 8``).
    """

    name = "linear"

    def __init__(self, src):
        self.src = src
        self.n_samples = n = src.n_rows
        self.mean = column_mean_and_variance(src, with_variance=False)[0]
        self.R = combine_r(src.map(_tsqr_block, self.mean))
        self.W = whitening(self.R, n)
        self.rank = self.W.shape[1]
        self.features = None
        self.P, self.d = self.W, np.ones(self.rank)
        self.mu = self.mean
        self.cross = self.R.T @ self.R            # X_c^T X_c, for the moments of Zhat

    def _transform(self, B, b0):
        return Affine(B, b0)

    def z_moments(self, fit):
        """Column means and variances of ``Zhat = phi B + b0`` from the moments of
        ``phi`` (no pass): ``mu B + b0`` and ``diag(B^T C B) / N``."""
        B = fit.coef
        mean = self.mu @ B + fit.intercept
        var = np.einsum("ij,ij->j", B, self.cross @ B) / self.n_samples
        return mean, np.maximum(var, 0.0)

    def fit(self, labels, n_clusters):
        src = self.src
        sums, counts = src.reduce(_cluster_sums_block, n_clusters, src.n_threads,
                                  rows=(labels,), transform=self.features)
        ZtC = sums - counts[:, None] * self.mu[None, :]
        B = self.P @ (self.d[:, None] * (ZtC @ self.P).T)
        b0 = counts / self.n_samples - self.mu @ B
        return _BlockFit(B, b0, self._transform(B, b0), sums, counts)

    def transform(self, X, fit):
        return _affine(X, fit.coef, fit.intercept)

    def release(self):
        self.src = None


def block_kernel(src, *, sigma, alpha, n_components, random_state):
    """CPCM's Nystrom kernel predictor (``predictors.Kernel`` with ``n_components``)
    by passes over row blocks; see :class:`BlockKernel`."""
    return BlockKernel(src, sigma=sigma, alpha=alpha, n_components=n_components,
                       random_state=random_state)


class BlockKernel(BlockLinear):
    """Nystrom kernel ridge predictor of CPCM by passes over row blocks.

    Landmarks: ``m`` distinct rows drawn as :class:`metriclust._core.gram.Nystrom`
    draws them (``random_state``), read from their blocks. Features
    ``F = G(x, L) V_r L_r^{-1/2}`` computed per block, centred by their mean
    (one pass), the ``m x m`` product ``F_c^T F_c`` reduced in block order
    (a second pass) and diagonalised as in memory
    (:func:`metriclust._core.gram.centered_factor_eigenpairs`); then
    ``Zhat = F_c V diag(l / (l + N alpha)) L^{-1} V^T F_c^T Z + n / N`` per block.
    Peak extra memory: one block, its ``block_rows x m`` float64 features and
    kernel values (``16 block_rows m`` bytes), the landmarks and ``m x m`` matrices.
    """

    name = "kernel"

    def __init__(self, src, *, sigma, alpha, n_components, random_state):
        from scipy.linalg import eigh

        self.src = src
        n = self.n_samples = src.n_rows
        self.sigma = float(sigma)
        m = min(int(n_components), n)
        rng = check_random_state(random_state)
        Z = np.ascontiguousarray(src.take_rows(np.sort(rng.choice(n, m, replace=False))),
                                 dtype=np.float64)
        self.nystrom = Nystrom(m, sigma=self.sigma, landmarks=Z).fit(Z)
        ny = self.nystrom
        raw = NystromMap(ny.landmarks_, ny.normalization_, self.sigma,
                         np.zeros(ny.n_components_), n_threads=src.n_threads)
        self.f_mean = src.reduce(_column_sums_block, None, transform=raw) / n
        self.features = NystromMap(ny.landmarks_, ny.normalization_, self.sigma, self.f_mean,
                                   n_threads=src.n_threads)
        C = src.reduce(_cross_block, transform=self.features)
        self.cross = C
        self.l, self.V = drop_null_eigenpairs(*eigh(C, check_finite=False))
        self.lam = n * float(alpha)
        self.shrink = self.l / (self.l + self.lam)
        self.effective_dof = float(self.shrink.sum())
        self.rank = self.l.size
        self.P, self.d = self.V, 1.0 / (self.l + self.lam)
        self.mu = np.zeros(ny.n_components_)
        self.Q = None

    def _transform(self, B, b0):
        return self.features.with_coef(B, b0)

    def features_of(self, X):
        return np.asarray(self.nystrom.transform(X), dtype=np.float64) - self.f_mean

    def transform(self, X, fit):
        return self.features_of(X) @ fit.coef + fit.intercept


def _blur_and_within(src, fit, labels, n_clusters):
    """Blur ratio ``SSC / SST`` (Gupta et al. 2008, Sec. 2), cluster means ``theta``
    and each cluster's share of the scatter, in one pass over ``Zhat``.

    As :func:`metriclust._core.partition.blur_ratio`: the within sums of squares
    from the deviations themselves, the total as within plus between. The
    cluster sums of ``Zhat`` are ``S B + n b0`` (no pass needed).
    """
    counts = fit.counts
    if fit.transform.out_dtype(src.dtype) == np.float32:
        # float32 predictions: their cluster sums from the rounded values themselves
        # (a pass), as in memory, so that the centers and the clustering stage's
        # start agree to the bit with the in-memory fit's
        zsums, counts = src.reduce(_cluster_sums_block, n_clusters, src.n_threads,
                                   rows=(labels,), transform=fit.transform)
    else:
        zsums = fit.sums @ fit.coef + counts[:, None] * fit.intercept[None, :]
    theta = zsums / np.maximum(counts, 1.0)[:, None]
    n = counts.sum()
    dev = theta - zsums.sum(axis=0) / n if n > 0 else theta
    between = float(np.einsum("k,kj,kj->", counts, dev, dev))
    within = src.reduce(_within_block, theta, n_clusters, rows=(labels,),
                        transform=fit.transform)
    w_total = float(within.sum())
    total = w_total + between
    br = 1.0 if not total > 0.0 else min(1.0, w_total / total)
    shares = within / total if total > 0 else np.ones(n_clusters)
    return br, theta, shares


def start_labels(src, transform, centers):
    """Labels (RowArray, int32) of the nearest ``centers`` in the space of ``transform``."""
    labels, _ = src.map_keep(_nearest_block, np.ascontiguousarray(centers, dtype=np.float64),
                             src.n_threads, transform=transform, dtype=np.int32)
    return labels


#: stop of the clustering stage's Lloyd iterations (the k-means core's default,
#: as ``partition.lloyd_from_partition`` is called by CPCM)
_LLOYD_TOL = 1e-4


def _lloyd_from_partition(src, model, fit, theta, labels_out, max_iter=300, tol=_LLOYD_TOL):
    """``partition.lloyd_from_partition`` on ``Zhat`` (per block): Lloyd's k-means
    started from the cluster means ``theta``, centred on ``Zhat``'s mean, with the
    core's stop (``tol`` times the mean variance of ``Zhat``); the labels go to
    ``labels_out``. For float64 predictions the mean and variance of ``Zhat``
    come from the predictor's moments (``model.z_moments``) instead of two
    passes: they agree with the in-memory ones to rounding (they set the
    centering shift and the stop). Float32 predictions take them from the
    rounded values (two passes), as in memory: the float32 shift could
    otherwise differ by an ulp and move near-ties."""
    T = fit.transform
    zdt = T.out_dtype(src.dtype)
    if zdt == np.float32:   # as in memory: the moments of the rounded predictions (2 passes)
        mean, var = column_mean_and_variance(src, transform=T, with_variance=tol > 0)
    else:
        mean, var = model.z_moments(fit)
    shift = mean.astype(zdt)
    abs_tol = float(np.mean(var) * tol) if tol > 0 else 0.0
    if labels_out is not None and labels_out.values is None:   # Dask: new persisted chunks
        labels_out = None
    centers = np.ascontiguousarray(theta.astype(zdt) - shift)
    return lloyd(src, centers, shift=shift, labels=labels_out, max_iter=max_iter,
                 abs_tol=abs_tol, transform=T)["labels"]


def cpcm_run(src, model, labels, n_clusters, max_iter, tol, min_size):
    """CPCM's Algorithm 1 from one starting partition, every stage a pass over the blocks.

    The in-memory loop (``cpcm._cpcm``): prediction stage (cluster sums of
    ``phi``, then the small solve), blur ratio (one pass over ``Zhat``),
    clustering stage (:func:`_lloyd_from_partition`: the k-means core's Lloyd
    on ``Zhat`` from the current cluster means, ``Zhat`` computed per block and
    never stored), a new partition accepted only if its blur ratio drops by
    more than ``tol`` (Property 2) and its clusters keep ``min_size`` rows.

    ``labels`` is a RowArray (int32). Peak extra memory (local backend): three
    int32 label vectors (``12 N`` bytes: current, candidate, the Lloyd pass's
    reuse of the candidate) plus one block and its transforms
    (``block_rows * (p + 3 d) * 8`` bytes, ``d`` = K for the linear predictor,
    ``m + K`` for Nystrom) and the ``m x m`` / ``p x p`` matrices.

    Returns the dict of ``cpcm._cpcm`` with ``theta``; ``labels`` as an ndarray
    (local) or a lazy dask array (Dask), ``fit.Zhat`` None.
    """
    K = n_clusters
    fit = model.fit(labels, K)
    br, theta, within = _blur_and_within(src, fit, labels, K)
    history = [br]
    n_iter = 0
    spare = labels.copy() if src.kind == "local" else None   # Dask: new chunks each time
    for n_iter in range(1, max_iter + 1):
        new = _lloyd_from_partition(src, model, fit, theta, spare)
        changed, sizes = src.reduce(_changed_and_counts_block, K, rows=(new, labels), x=False)
        if changed == 0:
            break
        if sizes.min() < min_size:
            break
        new_fit = model.fit(new, K)
        new_br, new_theta, new_within = _blur_and_within(src, new_fit, new, K)
        if not new_br < br - tol:
            break
        spare = labels
        labels, fit, br, theta, within = new, new_fit, new_br, new_theta, new_within
        history.append(br)
    return {"labels": labels.result(), "fit": fit, "blur_ratio": br, "history": history,
            "n_iter": n_iter, "within": within, "theta": theta}


def _identity(block):
    return block


def transform_rows(src, transform):
    """``transform(X)`` row block by row block: an ndarray (local) or a lazy dask array
    with X's row chunks (Dask); ``transform`` has ``B`` (its output width)."""
    src = source(src)
    return src.rowwise(_identity, transform=transform, n_columns=transform.B.shape[1],
                       dtype=transform.out_dtype(src.dtype))
