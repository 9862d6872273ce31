"""The one k-means core every method calls.

Public classes and functions:

.. autosummary::

   KMeansResult       -- (centers, labels, inertia, n_iter) of a fit
   kmeans             -- weighted k-means with restarts; the lowest inertia
   assign_labels      -- nearest center of each row, with squared distances
   center_distances   -- distances of every row to every center, in X's dtype
   kmeans_plusplus    -- greedy k-means++ seeding
   farthest_first     -- farthest-first seeding
   kmeans_columns_1d  -- 1-D k-means of many columns in one call
   value_order        -- a row permutation that depends on the values only

CONTRACT (stable; callers rely on it):

    kmeans(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
           max_iter=300, tol=1e-4, algorithm="lloyd", random_state=None,
           n_threads=None, verbose=0) -> KMeansResult(centers, labels, inertia, n_iter)
    assign_labels(X, centers, *, shift=None, return_distances=True, n_threads=None)
        -> (labels int64, sq_distances or None)
    center_distances(X, centers, *, squared=False, shift=None) -> (n_samples, n_clusters) in X.dtype
    shifted_centers(centers, dtype) -> (shift, centers - shift), both in dtype

X is a validated C-contiguous float32/float64 array (callers validate);
``init`` is "k-means++", "random" or an (n_clusters, p) array of centers
(then n_init must be 1) or a callable ``init(X, n_clusters, random_state=rng)``
returning such an array, called once per run. ``tol`` is relative to the mean
feature variance, as in scikit-learn. Same random_state -> same result for any thread count.

The loops over points run in C (``csrc/kmeans.c`` through
``_kernels/_kmeans.pyx``); this module holds the orchestration: centering,
seeding, restarts, the tolerance, BLAS held to one thread for the GEMM path.
"""

from collections import namedtuple
import contextlib
import math
import numbers

import numpy as np

from .._kernels import _kmeans as _k
from .._kernels import _sums
from .._kernels._kmeans1d import kmeans1d_columns as _kmeans1d_columns
from .threads import effective_n_threads, single_blas_thread
from .validation import check_random_state

__all__ = ["KMeansResult", "kmeans", "assign_labels", "kmeans_plusplus",
           "center_distances", "shifted_centers", "farthest_first", "kmeans_columns_1d"]

KMeansResult = namedtuple("KMeansResult", ["centers", "labels", "inertia", "n_iter"])


def _blas_guard(n_features, n_clusters, method="auto"):
    # threadpoolctl costs a few hundred microseconds: only pay it when BLAS runs.
    return (single_blas_thread() if _k.uses_gemm(n_features, method, n_clusters)
            else contextlib.nullcontext())


def _as_float_array(X, name="X"):
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}.")
    return np.ascontiguousarray(X)


def assign_labels(X, centers, *, shift=None, return_distances=True, n_threads=None):
    """Nearest center of each row: labels (int64) and squared distances (None
    with ``return_distances=False``).

    Ties go to the lowest center index; distances are computed from ``x - c``
    (never negative) in the dtype of X. With ``shift`` (n_features,) the rows
    are ``X - shift`` in X's dtype (the same bits as ``X - shift``, subtracted
    by the C pass chunk by chunk, without a shifted copy of X), and
    ``centers`` are in that shifted space.
    """
    X = _as_float_array(X)
    centers = np.ascontiguousarray(centers, dtype=X.dtype)
    if centers.ndim != 2 or centers.shape[1] != X.shape[1]:
        raise ValueError(
            f"centers must have shape (n_clusters, {X.shape[1]}), got {centers.shape}."
        )
    nt = effective_n_threads(n_threads)
    with _blas_guard(X.shape[1], centers.shape[0]):
        return _k.assign(X, centers, "auto", nt, bool(return_distances), shift)


def shifted_centers(centers, dtype):
    """The shift that predict-style scoring takes off X and the centers (the
    centers' mean, rounded to X's ``dtype``) and the centers less it, in
    ``dtype``: one shift, representable in X's dtype, for both (then
    ``X - shift`` is exact for the rows near the centers)."""
    centers = np.asarray(centers)
    shift = centers.mean(axis=0, dtype=np.float64).astype(dtype)
    return shift, np.ascontiguousarray(centers - shift, dtype=dtype)


def center_distances(X, centers, *, squared=False, shift=None, block_rows=4096):
    """Euclidean distances of every row of X to every center, in X's dtype.

    ``||x||^2 - 2 x.c + ||c||^2`` by BLAS in float64, a block of rows at a time;
    the entries where that expansion cancels (a point close to a center compared
    with their norms) are recomputed from ``x - c``, so a point on a center gets
    exactly 0. Callers that care about a large common offset subtract it first:
    with ``shift`` (n_features,) the rows are ``X - shift`` in X's dtype, block by
    block (the result of ``center_distances(X - shift, ...)`` without the copy),
    and ``centers`` are in that shifted space.
    """
    X = _as_float_array(X)
    C = np.ascontiguousarray(centers, dtype=np.float64)
    minus_2c = -2.0 * C.T
    cc = np.einsum("ij,ij->i", C, C)
    cc_max = float(cc.max()) if cc.size else 0.0
    out = np.empty((X.shape[0], C.shape[0]), dtype=X.dtype)
    if shift is not None:
        shift = np.asarray(shift, dtype=X.dtype).reshape(-1)
        if shift.shape[0] != X.shape[1]:
            raise ValueError(f"shift has {shift.shape[0]} values, X has {X.shape[1]} features.")
    for start in range(0, X.shape[0], block_rows):
        Xb = X[start:start + block_rows]
        if shift is not None:
            Xb = Xb - shift
        Xb = Xb.astype(np.float64, copy=False)
        xx = np.einsum("ij,ij->i", Xb, Xb)
        d2 = Xb @ minus_2c
        d2 += xx[:, None]
        d2 += cc
        # Below this share of the norms the expansion has lost more than four
        # of float64's digits: recompute those few entries directly (the
        # largest center norm stands for each one's: a few more, never fewer).
        i, k = np.nonzero(d2 <= (1e-4 * (xx + cc_max))[:, None])
        if i.size:
            diff = Xb[i] - C[k]
            d2[i, k] = np.einsum("ij,ij->i", diff, diff)
        block = out[start:start + block_rows]
        if squared:
            block[...] = d2
        else:
            np.sqrt(d2, out=block, casting="same_kind")
    return out


def value_order(X, sample_weight=None, *, block_rows=65536, n_threads=None):
    """A permutation of the rows of X that depends on their values only: by
    squared distance to the weighted mean of X, computed in float64 in C (the
    arithmetic of k-means++'s distances), ties kept in their order in X.
    (A fit orders its centered copy by the rows' squared norms, made as it
    centers them: ``_k.center_rows``.)

    Draws made by inverse CDF over this order land on the same row values
    whatever the order of the rows, and an integer weight draws like as many
    repeated rows (the weighted mean is theirs). The key is invariant to
    translations, rotations and scalings of X, as k-means is, so the seeding
    stays so too (up to rounding). Distinct rows tie only when equidistant
    from the mean (symmetric designs): there the order of X decides.
    """
    mean, _ = _mean_and_variance(X, sample_weight, with_variance=False, block_rows=block_rows)
    nt = effective_n_threads(n_threads)
    return _k.stable_order(_k.sq_dist_to(X, mean, nt), nt)


def _draw(cum, order, u):
    """Rows drawn with probability proportional to the increments of ``cum``
    (a cumulative sum over ``order``) at the uniform(s) ``u``."""
    pos = np.searchsorted(cum, u * cum[-1], side="right")
    return order[np.minimum(pos, len(order) - 1)]


def _draw_first(order, w_ordered, u):
    """The first seed: a row drawn with probability proportional to its weight
    (``w_ordered``, in ``order``; None: unit weights) at the uniform ``u``."""
    if w_ordered is None:
        # the running sum of unit weights is 1, 2, ..., n, exactly: _draw's
        # search lands at floor(u * n), with no need to build it
        return order[min(int(u * len(order)), len(order) - 1)]
    return _draw(np.cumsum(w_ordered), order, u)


def _pp_scores(X, n_candidates, keep=True):
    """The workspace of k-means++ steps with ``n_candidates`` candidates over X, where
    keeping the candidates' distances beats reading X again (``_k.pp_keeps_scores``)
    and ``keep`` allows it: True, False, or "small" (where it is at most a
    quarter of X's size)."""
    n, p = X.shape
    if keep == "small":
        keep = 4 * 8 * n_candidates <= p * X.itemsize
    return np.empty(n * n_candidates) if keep and _k.pp_keeps_scores(
        p, n_candidates, X.dtype) else None


def kmeans_plusplus(X, n_clusters, *, sample_weight=None, random_state=None,
                    n_local_trials=None, n_threads=None, order=None, keep_scores=True):
    """Greedy k-means++ seeding (Arthur & Vassilvitskii 2007).

    Each new center is the best, by potential ``sum_i w_i min_k ||x_i - c_k||^2``,
    of ``2 + log(k)`` candidates drawn with probability proportional to
    ``w_i D(x_i)^2``, as in scikit-learn. The draws run over the rows in
    :func:`value_order`, so the seeds (and a fit from them) do not depend on
    the order of the rows, and an integer weight acts as repeating the row;
    ``order``, if given, is that permutation computed once for several calls.
    ``keep_scores=False`` re-reads X to update the distances after each step
    instead of keeping the candidates' (``n * n_local_trials`` doubles where
    that is faster): less memory, more time (the same result); "small" keeps
    them only where they take at most a quarter of X's size.
    Returns ``(centers, indices)``.
    """
    rng = check_random_state(random_state)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    wk = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=X.dtype)
    nt = effective_n_threads(n_threads)
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    if order is None:
        order = value_order(X, None if sample_weight is None else w, n_threads=nt)
    order = np.ascontiguousarray(order, dtype=np.int64)
    w_ordered = None if sample_weight is None else w[order]
    idx = np.empty(n_clusters, dtype=np.int64)
    idx[0] = _draw_first(order, w_ordered, rng.random())
    closest = np.full(n, np.inf)
    # also serves the one-candidate first step
    scores = _pp_scores(X, n_local_trials, keep_scores)
    _k.pp_step(X, wk, idx[:1].copy(), closest, nt, scores if scores is not None
               else _pp_scores(X, 1, keep_scores))
    for c in range(1, n_clusters):
        cum = _k.ordered_cumsum(closest, order, w_ordered)
        if cum[-1] > 0:
            cand = _draw(cum, order, rng.uniform(size=n_local_trials)).astype(np.int64)
        else:  # every point coincides with a center already chosen
            cand = rng.integers(n, size=n_local_trials).astype(np.int64)
        best, _ = _k.pp_step(X, wk, cand, closest, nt, scores)
        idx[c] = cand[best]
    return X[idx].copy(), idx


def farthest_first(X, n_clusters, *, sample_weight=None, random_state=None, n_threads=None,
                   order=None, keep_scores=True):
    """Farthest-first seeding: a random first center, then each next center is the
    row farthest from all chosen ones (the lecture's "least similar" seed;
    Gonzalez 1985). Rows of zero weight are never chosen; the first draw runs
    over :func:`value_order`, as in :func:`kmeans_plusplus` (``keep_scores`` too).
    Returns ``(centers, indices)``.
    """
    rng = check_random_state(random_state)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    nt = effective_n_threads(n_threads)
    idx = np.empty(n_clusters, dtype=np.int64)
    if order is None:   # the first draw runs over it, as k-means++'s
        order = value_order(X, None if sample_weight is None else w, n_threads=nt)
    idx[0] = _draw_first(order, None if sample_weight is None else w[order], rng.random())
    closest = np.full(n, np.inf)
    scores = _pp_scores(X, 1, keep_scores)
    for c in range(1, n_clusters):
        # closest <- min(closest, d^2)
        _k.pp_step(X, None, idx[c - 1:c].copy(), closest, nt, scores)
        idx[c] = int(np.argmax(np.where(w > 0, closest, -1.0)))
    return X[idx].copy(), idx


_ALGORITHMS = ("lloyd", "elkan", "auto", "online")


def _runner(algorithm, n_features, n_clusters):
    """The C driver for ``algorithm``: "elkan" prunes with Hamerly's bounds
    (same result as "lloyd"); "auto" prunes where the C table says it pays."""
    if algorithm == "online":
        return _k.online
    if algorithm == "elkan" or (algorithm == "auto" and _k.prefers_pruning(n_features, n_clusters)):
        return _k.hamerly
    return _k.lloyd


def _check_init(init, n_clusters, X, n_init):
    if isinstance(init, str):
        if init not in ("k-means++", "random", "farthest"):
            raise ValueError(f"init must be 'k-means++', 'random', 'farthest', an array or a "
                             f"callable, got {init!r}.")
        return str(init)
    if callable(init):
        return init
    if n_init != 1:
        raise ValueError(f"n_init must be 1 when init is an array, got {n_init}.")
    return _check_init_centers(init, n_clusters, X)


def _check_init_centers(init, n_clusters, X):
    """Initial centers given by the user (or returned by a callable ``init``)."""
    arr = np.asarray(init)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"init must be 'k-means++', 'random', an array or a callable, "
                        f"got {init!r}.")
    if arr.ndim != 2 or arr.shape[0] != n_clusters:
        raise ValueError(
            f"The shape of the initial centers {arr.shape} does not match the number "
            f"of clusters {n_clusters}: init must have shape ({n_clusters}, {X.shape[1]}).")
    if arr.shape[1] != X.shape[1]:
        raise ValueError(
            f"The shape of the initial centers {arr.shape} does not match the number "
            f"of features of the data {X.shape[1]}: init must have shape "
            f"({n_clusters}, {X.shape[1]}).")
    if not np.all(np.isfinite(arr)):
        raise ValueError("init contains NaN or infinity.")
    return np.array(arr, dtype=X.dtype, order="C")


def _mean_and_variance(X, w=None, *, with_variance=True, block_rows=65536):
    """Column means and variances of X, weighted by ``w``, accumulated in float64.

    numpy reduces axis 0 of a C-ordered array row after row in the array's dtype
    (not pairwise): for float32 the error grows with the number of rows, and with
    a large common offset the variance, hence ``tol``, can be wrong by orders of
    magnitude. Blocks of rows are converted to float64, so the extra memory is
    bounded and the order of the sums is fixed.
    """
    n, p = X.shape
    wd = None if w is None else np.asarray(w, dtype=np.float64)
    total = float(n) if wd is None else float(wd.sum())
    blocks = [slice(i, min(i + block_rows, n)) for i in range(0, n, block_rows)]

    def column_sums(mean):  # mean None: of X, else of (X - mean)**2
        if wd is None and _in_c(X):   # every block's sums at once, on threads
            parts = _sums.column_block_sums(X, block_rows, mean)
        elif mean is None:
            parts = [_column_sums_block(X[b], None if wd is None else wd[b]) for b in blocks]
        else:
            parts = [_squared_deviation_sums_block(X[b], None if wd is None else wd[b], mean)
                     for b in blocks]
        acc = np.zeros(p)
        for part in parts:   # the blocks added in order
            acc += part
        return acc

    mean = column_sums(None) / total
    return mean, (column_sums(mean) / total if with_variance else None)


def _in_c(block):
    """Whether the C block sums (``_sums.column_block_sums``) reproduce numpy's
    for ``block``: a C-ordered float block of rows of two or more columns, which
    numpy sums over axis 0 row after row (one column it sums pairwise)."""
    return (block.ndim == 2 and block.shape[0] > 0 and block.shape[1] >= 2
            and block.dtype in (np.float32, np.float64) and block.flags.c_contiguous)


# The column moments of one block of rows, in the order every path sums them (this
# module's _mean_and_variance and value_order; the blockwise and Dask paths of
# ``streaming`` map them over their blocks, so the centering is bit-identical).
def _column_sums_block(block, w):
    if w is None and _in_c(block):
        return _sums.column_block_sums(block, block.shape[0], n_threads=1)[0]
    rows = block.astype(np.float64, copy=False)
    return rows.sum(axis=0) if w is None else np.asarray(w, np.float64) @ rows


def _squared_deviation_sums_block(block, w, mean):
    """Column sums of (block - mean)**2 in float64 (``w``: weighted), as numpy sums
    ``(block.astype(float64) - mean) ** 2`` over axis 0."""
    if w is None and _in_c(block):
        return _sums.column_block_sums(block, block.shape[0], mean, n_threads=1)[0]
    dev = np.subtract(block, mean, dtype=np.float64)
    dev *= dev
    return dev.sum(axis=0) if w is None else np.asarray(w, np.float64) @ dev


def kmeans_columns_1d(X, columns, init, *, max_iter=300, tol=1e-4, return_labels=False,
                      n_threads=None):
    """1-D k-means of many columns of X in one call: for each ``c``, what
    ``kmeans(X[:, [columns[c]]], K, init=init[c][:, None], n_init=1, max_iter=max_iter,
    tol=tol)`` computes (the same Lloyd iteration, scores, relocation and stopping rule,
    ``csrc/kmeans1d.c``), without a Python call per column.

    ``init``: (m, K) starting centers, one row per column. Returns ``(centers (m, K) in
    X's dtype, inertia (m,), n_iter (m,), labels (m, n) int64 or None)``.
    """
    X = _as_float_array(X)
    columns = np.ascontiguousarray(columns, dtype=np.int64).reshape(-1)
    init = np.ascontiguousarray(init, dtype=X.dtype)
    if init.ndim != 2 or init.shape[0] != columns.size:
        raise ValueError(f"init must have shape ({columns.size}, n_clusters), got {init.shape}.")
    max_iter = min(int(max_iter), 2**31 - 1)
    if columns.size and (columns.min() < 0 or columns.max() >= X.shape[1]):
        raise ValueError(f"columns out of range: X has {X.shape[1]} columns, got values from "
                         f"{columns.min()} to {columns.max()}.")
    # kmeans()'s centering and tolerance, to the last bit: _mean_and_variance of the
    # columns in Fortran order sums each column as it sums an (n, 1) array
    mean, var = _mean_and_variance(np.asfortranarray(X[:, columns]))
    return _kmeans1d_columns(X, columns, init, mean, var, max_iter, float(tol),
                             bool(return_labels), effective_n_threads(n_threads))


def _run_to_objective_tol(run, Xc, w, centers, max_iter, tol, n_threads):
    """``run`` (a C driver) one iteration at a time from ``centers`` (updated in
    place) until the inertia's relative decrease ``(J_prev - J) / J_prev`` is at
    most ``tol``, or ``max_iter``; returns what ``run`` returns.

    Each call's inertia is the objective at its new centers and their labels.
    Labels equal to the previous call's are a fixed point (the next centers are
    the current ones): that stop is strict convergence, counted as the C
    drivers count it (the iteration whose pass changes no label, which is the
    pass that closed this call).
    """
    previous, previous_labels = None, None
    for n_iter in range(1, max_iter + 1):
        labels, inertia, _, _ = run(Xc, w, centers, 1, 0.0, "auto", n_threads)
        if previous is not None and previous - inertia <= tol * previous:
            return labels, inertia, n_iter, False
        if previous_labels is not None and np.array_equal(labels, previous_labels) \
                and n_iter < max_iter:
            return labels, inertia, n_iter + 1, True
        previous, previous_labels = inertia, labels
    return labels, inertia, max_iter, False


def _best_start(Xc, w, n_clusters, init, n_init, max_iter, tol, abs_tol, run, convergence,
                X_mean, order, keep_scores, rng, nt, verbose):
    """The lowest-inertia run of ``n_init`` from centered X (``kmeans``); a
    callable ``init``'s starts come as a list (one per run); ``order``: the
    seeding's value order, or None where init draws no seeds."""
    best = None
    n, p = Xc.shape
    with _blas_guard(p, n_clusters):
        for r in range(n_init):
            if isinstance(init, np.ndarray):
                centers = init - X_mean
            elif isinstance(init, list):
                centers = _check_init_centers(init[r], n_clusters, Xc) - X_mean
            elif init == "random":
                pr = None
                if w is not None and np.count_nonzero(w) >= n_clusters:
                    pr = np.asarray(w, dtype=np.float64) / float(np.sum(w, dtype=np.float64))
                seeds = rng.choice(n, size=n_clusters, replace=False, p=pr)
                centers = Xc[seeds]
            elif init == "farthest":
                centers, _ = farthest_first(Xc, n_clusters, sample_weight=w,
                                            random_state=rng, n_threads=nt, order=order,
                                            keep_scores=keep_scores)
            else:
                centers, _ = kmeans_plusplus(Xc, n_clusters, sample_weight=w,
                                             random_state=rng, n_threads=nt, order=order,
                                             keep_scores=keep_scores)
            centers = np.ascontiguousarray(centers, dtype=Xc.dtype)
            if convergence == "objective":
                labels, inertia, n_iter, strict = _run_to_objective_tol(
                    run, Xc, w, centers, max_iter, tol, nt)
            else:
                labels, inertia, n_iter, strict = run(Xc, w, centers, max_iter, abs_tol, "auto",
                                                      nt)
            if verbose:
                how = "strict convergence" if strict else (
                    f"{convergence.replace('_', ' ')} within tolerance" if n_iter < max_iter
                    else "max_iter reached")
                print(f"k-means start {r + 1} of {n_init}: {n_iter} iterations ({how}), "
                      f"inertia {inertia:.6g}")
            # A later start must beat the best by more than rounding: starts
            # that reach one partition (in another label order) keep the
            # first, whatever the last bits of their inertias (weighted rows
            # and the same rows repeated sum in different orders).
            if best is None or inertia < best.inertia - _START_TIE_RTOL * best.inertia:
                best = KMeansResult(centers, labels, inertia, n_iter)
    return best


_START_TIE_RTOL = 1e-12


def kmeans(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
           max_iter=300, tol=1e-4, algorithm="lloyd", random_state=None,
           n_threads=None, verbose=0, convergence="center_shift", copy_x=True):
    """Weighted k-means with ``n_init`` restarts; keep the lowest inertia.

    Minimizes ``sum_i w_i ||x_i - mu_{c(i)}||^2`` by Lloyd's batch iteration
    (assignment, then weighted means) or the sequential (online) update.
    ``algorithm`` is "lloyd", "elkan" (Lloyd with exact triangle-inequality
    pruning, Hamerly's bounds, dropped for the rest of a fit once they leave
    most rows open: the same labels, centers and n_iter), "auto"
    (pruning for many clusters in enough dimensions, where it was measured to
    pay: ``_k.prefers_pruning``) or "online". The data
    are centered first (as scikit-learn does) for accurate distances; a run
    stops when no label changes or when the squared center shift is at most
    ``tol * mean(var(X, axis=0))``. With ``sample_weight`` the mean and the
    variance are weighted, so integer weights act as repeated rows. With
    ``convergence="objective"`` a run stops instead when the inertia's relative
    decrease in an iteration is at most ``tol`` (``_run_to_objective_tol``).
    With ``copy_x=False`` a writeable X that needs no conversion (C-ordered
    float32 or float64) is centered in place and the mean added back before
    returning, also on an error or an interrupt: no second copy of X, the
    same result bit for bit, but X can come back changed in its last bits
    (``(x - m) + m`` rounds), and a reader on another thread sees it centered
    meanwhile. A callable ``init`` is still called on X as given, and the
    seeding keeps its candidate distances only where they are small
    (``keep_scores="small"``).

    Returns
    -------
    KMeansResult(centers, labels, inertia, n_iter)
        centers in X's dtype, labels int64, inertia a float, n_iter an int.
    """
    X = _as_float_array(X)
    n, p = X.shape
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise TypeError(f"n_clusters must be an int, got {n_clusters!r}.")
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}.")
    if n_clusters > n:
        raise ValueError(f"n_samples={n} should be >= n_clusters={n_clusters}.")
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {_ALGORITHMS}, got {algorithm!r}.")
    if isinstance(n_init, bool) or not isinstance(n_init, numbers.Integral) or n_init < 1:
        raise ValueError(f"n_init must be a positive int, got {n_init!r}.")
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}.")
    max_iter = min(int(max_iter), 2**31 - 1)  # the C loop counts in int; a huge cap is valid
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}.")
    if convergence not in ("center_shift", "objective"):
        raise ValueError(f"convergence must be 'center_shift' or 'objective', "
                         f"got {convergence!r}.")
    if convergence == "objective" and algorithm == "online":
        # the online driver's per-center step sizes live for one call only
        raise ValueError("convergence='objective' needs a batch algorithm ('lloyd', 'elkan' "
                         "or 'auto'), got algorithm='online'.")
    init = _check_init(init, n_clusters, X, n_init)
    rng = check_random_state(random_state)
    nt = effective_n_threads(n_threads)
    if sample_weight is None:
        w = None
    else:
        # float64 first: a float32 cast of weights above 3.4e38 would overflow.
        w = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and np.any(w > 0)):
            raise ValueError("sample_weight must be finite and non-negative, "
                             "and not all zero.")
        # Weights matter only up to a common factor: scale the largest to 1 so
        # that sums of weights cannot overflow; the inertia is scaled back.
        w_scale = float(w.max())
        w = np.ascontiguousarray(w / w_scale, dtype=X.dtype)

    # Subtract the mean for accurate ||x||^2 - 2 x.c + ||c||^2 distances. The
    # mean and the variance behind ``tol`` are weighted, so that an integer
    # weight acts exactly like repeating the row (scikit-learn ignores the
    # weights here; the two agree for unit weights), and summed in float64.
    mean, var = _mean_and_variance(X, w, with_variance=tol > 0 and convergence == "center_shift")
    X_mean = mean.astype(X.dtype)
    # the seeding's row order (one sort for all n_init runs) is by distance to
    # the mean: its key is the centered rows' squared norms, made in the same pass
    seeded = isinstance(init, str) and init in ("k-means++", "farthest")
    in_place = not copy_x and p > 0 and X.flags.writeable
    if callable(init):
        # every start drawn first, on X as given (X may be centered in place
        # next; nothing else draws from rng between them)
        init = [init(X, n_clusters, random_state=rng) for _ in range(n_init)]
    if p > 0:
        Xc, key = _k.center_rows(X, X_mean, seeded, nt, X if in_place else None)
    else:
        Xc, key = X - X_mean, np.zeros(n)
    abs_tol = float(np.mean(var) * tol) if var is not None else 0.0
    try:
        order = _k.stable_order(key, nt) if seeded else None
        del key
        # copy_x=False asks for little memory: the seeding keeps its
        # candidates' distances (up to X's size) only where they are small
        best = _best_start(Xc, w, n_clusters, init, n_init, max_iter, tol, abs_tol,
                           _runner(algorithm, p, n_clusters), convergence, X_mean,
                           order, True if copy_x else "small", rng, nt, verbose)
    finally:
        if in_place:  # x - (-m) is x + m: numpy's X += X_mean, on threads
            _k.center_rows(X, -X_mean, False, nt, X)
    centers = best.centers + X_mean
    inertia = float(best.inertia) * (1.0 if w is None else w_scale)
    if not math.isfinite(inertia):  # the weights' scale times the squared distances
        raise ValueError(
            f"sample_weight is too large: the weighted inertia overflows float64 "
            f"(largest weight {w_scale:.3g}). Rescale sample_weight (k-means depends "
            "on the weights only up to a common factor)."
        )
    return KMeansResult(centers.astype(X.dtype, copy=False), best.labels, inertia,
                        int(best.n_iter))
