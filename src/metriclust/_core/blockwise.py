"""Row blocks of data larger than memory: reading, per-block partial sums, reduction.

Public functions:

.. autosummary::

   check_out_of_core   -- the fit-time checks of an out-of-core X (2-D, enough rows)
   default_block_rows  -- rows per block for a feature count and item size
   row_blocks          -- the (start, stop) bounds of the blocks
   read_block          -- one block as a C-contiguous, checked array
   check_block         -- finite values and no overflow in one block
   iter_blocks         -- the blocks of X in order
   moments_partial     -- weighted sums and cross product of one block
   subtract_rows       -- block - shift, bitwise as numpy's
   lloyd_partial       -- one block of a Lloyd pass: cluster sums, weights, inertia, labels
   tsqr_partial        -- the R factor of one block (TSQR)
   combine_r           -- the R factor of stacked R factors
   reduce_partials     -- partial results summed in block order

An input that lives on disk (an ``np.memmap``, a ``.npy`` opened with
``mmap_mode="r"``, an h5py or zarr dataset) is read one block of rows at a
time; each block gives a small *partial* result (weighted sums, a cross
product, per-cluster sums, an R factor) computed by the same C kernels as the
in-memory path, and the partials are reduced in block order. The reduction
order is fixed, so the results do not depend on the thread count or on the
order in which a scheduler (a thread pool, Dask) finished the blocks.

The per-block functions are pure module-level functions of their arguments
(no global state), so they pickle and can be shipped to workers.

CONTRACT (stable; ``_dask.py`` builds on it):

    default_block_rows(n_features, itemsize) -> int
    row_blocks(n_rows, block_rows) -> list[(start, stop)]
    read_block(X, start, stop, dtype, *, name="X") -> C-contiguous block
    moments_partial(block, sample_weight=None, shift=None) -> (w_sum, sum (p,), cross (p, p))
    lloyd_partial(block, centers, sample_weight=None, shift=None, n_threads=None, *,
                  with_inertia=True, labels_out=None, with_labels=True)
        -> (sums (k, p) f64, counts (k,) f64, inertia f64, labels int64 or None)
    subtract_rows(block, shift, out=None) -> block - shift (the same bits as numpy's)
    tsqr_partial(block) -> R (p, p)
    reduce_partials(partials) -> the fields summed (integer arrays concatenated)
    combine_r(Rs) -> R (p, p)
"""

import contextlib
import math
import numbers

import numpy as np

from .._kernels import _kmeans as _k
from .._kernels._sums import cluster_sums
from .threads import effective_n_threads, single_blas_thread
from .validation import check_magnitude

__all__ = [
    "check_block",
    "check_out_of_core",
    "combine_r",
    "default_block_rows",
    "iter_blocks",
    "lloyd_partial",
    "moments_partial",
    "read_block",
    "reduce_partials",
    "row_blocks",
    "subtract_rows",
    "tsqr_partial",
    "BLOCK_BYTES",
]

#: Bytes of input read per block by default (64 MiB).
BLOCK_BYTES = 64 * 2**20


def check_out_of_core(X, *, name="X", ensure_min_samples=1):
    """Shape and working dtype of an out-of-core X, without reading it.

    float32 stays float32 and every other number type is read as float64,
    as :func:`metriclust._core.validation.check_array` does for in-memory data.

    Returns
    -------
    n_samples, n_features : int
    dtype : numpy.dtype
    """
    shape = tuple(int(s) for s in X.shape)
    dtype = np.dtype(X.dtype)
    if len(shape) != 2:
        raise ValueError(f"Expected a 2D array for {name}, got a {len(shape)}D array of "
                         f"shape {shape}.")
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported in {name}.")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got an array of dtype {dtype}.")
    n, p = shape
    if n < ensure_min_samples:
        raise ValueError(f"{name} has n_samples={n}, while a minimum of "
                         f"{ensure_min_samples} is required.")
    if p < 1:
        raise ValueError(f"{name} has n_features={p}: 0 feature(s) (shape={shape}) while "
                         "a minimum of 1 is required.")
    work = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
    return n, p, work


def default_block_rows(n_features, itemsize, *, block_bytes=BLOCK_BYTES):
    """Rows per block: ``max(1, block_bytes // (n_features * itemsize))``.

    With the default ``block_bytes`` of 64 MiB, float32 rows of 16 features
    come 1,048,576 to a block. The peak memory of a block pass is a small
    multiple of one block (the block, its centered copy, the kernels' per-row
    outputs), so this bounds it independently of the number of rows.
    """
    row = max(int(n_features), 1) * max(int(itemsize), 1)
    return max(1, int(block_bytes) // row)


def row_blocks(n_rows, block_rows):
    """Consecutive ``(start, stop)`` row ranges covering ``range(n_rows)``.

    Every block has ``block_rows`` rows except possibly the last.
    """
    if isinstance(block_rows, bool) or not isinstance(block_rows, numbers.Integral):
        raise TypeError(f"block_rows must be an int, got {block_rows!r}.")
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}.")
    n_rows, block_rows = int(n_rows), int(block_rows)
    return [(s, min(s + block_rows, n_rows)) for s in range(0, n_rows, block_rows)]


def read_block(X, start, stop, dtype, *, name="X", ensure_finite=True):
    """Rows ``start:stop`` of X as a C-contiguous array of ``dtype``.

    The checks of :func:`metriclust._core.validation.check_array` are applied
    to the block: NaN and infinity are refused (naming the row and column in
    X), and so are values larger in magnitude than
    :func:`metriclust._core.validation.max_abs_value` allows for X's whole
    shape, so that every block of one X obeys the same limit as X in memory.

    Parameters
    ----------
    X : array-like
        An out-of-core array (see :func:`metriclust._core.ondisk.is_out_of_core`) or an ndarray.
    start, stop : int
        Row range.
    dtype : numpy.dtype
        float32 or float64.
    name : str
        The parameter's name, for error messages.
    ensure_finite : bool
        Apply the checks above.

    Returns
    -------
    ndarray of shape (stop - start, n_features)
    """
    block = np.ascontiguousarray(np.asarray(X[start:stop]), dtype=dtype)
    if ensure_finite:
        check_block(block, start, int(X.shape[0]), name)
    return block


def check_block(block, start, n_total, name="X"):
    """ValueError for NaN/infinity or values too large for X's whole shape, naming the row.

    The checks of :func:`read_block` on a block already read (``start``: its
    first row in X; ``n_total``: X's rows): NaN and infinity are refused
    naming the row and column in X, and so are values larger in magnitude than
    :func:`metriclust._core.validation.max_abs_value` allows for X's whole shape.
    """
    if not block.size:
        return
    hi, lo = float(block.max()), float(block.min())
    stop = start + block.shape[0]
    if not (math.isfinite(hi) and math.isfinite(lo)):
        bad = np.argwhere(~np.isfinite(block))
        r, c = (int(v) for v in bad[0])
        kind = "NaN" if np.isnan(block[r, c]) else "infinity"
        raise ValueError(
            f"Input {name} contains {kind} at row {start + r}, column {c} "
            f"(in rows {start}:{stop}, {len(bad)} non-finite value(s) in that block).")
    p = block.shape[1]
    check_magnitude(hi, lo, block.dtype, n_total, p, name=name, shape=(n_total, p),
                    where=f" in rows {start}:{stop}")


def iter_blocks(X, dtype, block_rows=None, *, name="X", ensure_finite=True):
    """Yield ``(start, stop, block)`` over X's rows, one block in memory at a time."""
    if block_rows is None:
        block_rows = default_block_rows(X.shape[1], np.dtype(dtype).itemsize)
    for start, stop in row_blocks(X.shape[0], block_rows):
        yield start, stop, read_block(X, start, stop, dtype, name=name,
                                      ensure_finite=ensure_finite)


def _weights_f64(sample_weight, n):
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape}, the block has {n} rows.")
    return w


def moments_partial(block, sample_weight=None, shift=None):
    """Weighted count, column sums and cross product of a block's rows.

    Parameters
    ----------
    block : ndarray of shape (m, p)
    sample_weight : ndarray of shape (m,), optional
    shift : ndarray of shape (p,), optional
        Subtracted from every row first (in float64), e.g. a rough mean, so
        that the cross product of data with a large offset keeps its digits.

    Returns
    -------
    weight_sum : float
        :math:`\\sum_i w_i` (the row count without weights).
    col_sum : ndarray of shape (p,), float64
        :math:`\\sum_i w_i (x_i - s)`.
    cross : ndarray of shape (p, p), float64
        :math:`\\sum_i w_i (x_i - s)(x_i - s)^T`.
    """
    B = np.asarray(block, dtype=np.float64)
    if shift is not None:
        B = B - np.asarray(shift, dtype=np.float64)
    w = _weights_f64(sample_weight, B.shape[0])
    if w is None:
        return float(B.shape[0]), B.sum(axis=0), B.T @ B
    return float(w.sum()), w @ B, B.T @ (B * w[:, None])


#: Elements per call of numpy's inner loop in :func:`subtract_rows`.
_SUBTRACT_RUN = 4096


def subtract_rows(block, shift, out=None):
    """``block - shift`` with ``shift`` (p,) broadcast over the rows, in the block's dtype.

    The same bits as ``np.subtract(block, shift)``, several times faster for few
    features: numpy's broadcast loop calls its inner loop once per row (p
    elements a call); here groups of rows are subtracted as one long row of
    the shift repeated, about :data:`_SUBTRACT_RUN` elements a call.

    Parameters
    ----------
    block : ndarray of shape (m, p)
    shift : array-like of shape (p,)
        Cast to the block's dtype.
    out : ndarray of shape (m, p), optional
        C-contiguous, the block's dtype; may be ``block`` itself (in place).

    Returns
    -------
    ndarray of shape (m, p)
    """
    B = np.asarray(block)
    s = np.asarray(shift, dtype=B.dtype)
    if out is None:
        out = np.empty(B.shape, dtype=B.dtype)
    m, p = B.shape
    r = max(1, _SUBTRACT_RUN // max(p, 1))
    g = m // r if (B.flags.c_contiguous and out.flags.c_contiguous and r > 1) else 0
    if g:
        np.subtract(B[:g * r].reshape(g, r * p), np.tile(s, r),
                    out=out[:g * r].reshape(g, r * p))
    if g * r < m:
        np.subtract(B[g * r:], s, out=out[g * r:])
    return out


#: Bytes of rows shifted and assigned at a time inside :func:`lloyd_partial`:
#: small enough to stay in cache between the shift, the assignment and the sums.
CHUNK_BYTES = 16 * 2**20


def lloyd_partial(block, centers, sample_weight=None, shift=None, n_threads=None, *,
                  with_inertia=True, labels_out=None, with_labels=True):
    """One Lloyd step on a block: nearest centers and per-cluster sums.

    The assignment is the C k-means kernel's (ties to the lowest center
    index), the sums the k-means pass's or the C cluster-sum kernel's.
    Where the kernel computes distances from ``x - c`` (few features and
    centers: no BLAS) and there are no weights, the block is assigned as it
    is, to the centers plus the shift, with no copy; otherwise (the BLAS
    expansion, whose accuracy needs centered data, or weights) it is shifted
    in chunks of :data:`CHUNK_BYTES`, whose partial sums are added in order.

    Parameters
    ----------
    block : ndarray of shape (m, p), float32 or float64
    centers : ndarray of shape (k, p)
        Centers in the space of ``block - shift``, cast to the block's dtype.
    sample_weight : ndarray of shape (m,), optional
    shift : ndarray of shape (p,), optional
        Subtracted from the block in its dtype before anything else (the
        k-means core centers the data the same way).
    n_threads : int, optional
        OpenMP threads of the kernels.
    with_inertia : bool, default=True
        Compute the inertia (the kernel then also returns each row's
        distance, which costs about as much as the assignment); without it
        the inertia returned is NaN.
    labels_out : ndarray of shape (m,), int64, optional
        Where the labels go (a buffer reused from block to block: no new
        array, no page faults); a new array by default.
    with_labels : bool, default=True
        False: the sums only, ``labels`` returned as None (a pass whose
        labels are thrown away: the fused C pass then writes no label
        output, and no label array is made). The same sums, counts and
        inertia.

    Returns
    -------
    sums : ndarray of shape (k, p), float64
        :math:`\\sum_{c(i)=k} w_i (x_i - s)`.
    counts : ndarray of shape (k,), float64
        :math:`\\sum_{c(i)=k} w_i`.
    inertia : float
        :math:`\\sum_i w_i \\lVert x_i - s - \\mu_{c(i)} \\rVert^2` at ``centers``.
    labels : ndarray of shape (m,), int64, or None (``with_labels=False``)
    """
    B = np.asarray(block)
    if B.dtype not in (np.float32, np.float64):
        B = B.astype(np.float64)
    m, p = B.shape
    C = np.ascontiguousarray(centers, dtype=B.dtype)
    k = C.shape[0]
    s = None if shift is None else np.asarray(shift, dtype=B.dtype)
    w = _weights_f64(sample_weight, m)
    nt = effective_n_threads(n_threads)
    # BLAS held to one thread where the kernel calls it from OpenMP threads
    # (threadpoolctl is paid only then, as in the k-means core).
    gemm = _k.uses_gemm(p, "auto", k)
    guard = single_blas_thread() if gemm else contextlib.nullcontext()
    if w is None and (s is None or not gemm):
        # Distances from x - c directly (no BLAS expansion that the shift would
        # protect): assign the rows as they are to the centers moved back by the
        # shift, with no copy of the block; the sums are shifted in float64.
        # One fused C pass (the k-means core's own: labels, sums, weights and
        # inertia, bit for bit those of an in-memory Lloyd pass).
        Bx = np.ascontiguousarray(B)
        Cx = C if s is None else (C.astype(np.float64) + s.astype(np.float64)).astype(B.dtype)
        labels = _labels_buffer(labels_out, m) if with_labels else None
        sums, counts = np.empty((k, p)), np.empty(k)
        with guard:
            inertia = float(_k.assign_accumulate(Bx, None, Cx, sums, counts, labels, "auto", nt,
                                                 with_inertia))
        if s is not None:
            sums -= counts[:, None] * s.astype(np.float64)
        return sums, counts, inertia, labels
    chunk = max(1, CHUNK_BYTES // max(1, p * B.dtype.itemsize))
    buf = np.empty((min(chunk, m), p), dtype=B.dtype)
    labels = _labels_buffer(labels_out, m)
    sums = np.zeros((k, p))
    inertia = 0.0 if with_inertia else float("nan")
    with guard:
        for a in range(0, m, chunk):
            b = min(m, a + chunk)
            Bc = buf[: b - a]
            if s is None:
                Bc[...] = B[a:b]
            else:
                subtract_rows(B[a:b], s, out=Bc)
            lab, d2 = _k.assign(Bc, C, "auto", nt, with_inertia)
            labels[a:b] = lab
            if w is None:
                sums += cluster_sums(Bc, lab, k, nt)
                if with_inertia:
                    inertia += float(np.sum(d2, dtype=np.float64))
            else:
                wb = w[a:b]
                Bc *= wb[:, None].astype(B.dtype)
                sums += cluster_sums(Bc, lab, k, nt)
                if with_inertia:
                    inertia += float(np.dot(wb, d2.astype(np.float64)))
    if w is None:
        counts = np.bincount(labels, minlength=k).astype(np.float64)
    else:
        counts = np.bincount(labels, weights=w, minlength=k)
    return sums, counts, inertia, labels if with_labels else None


def _labels_buffer(labels_out, m):
    if labels_out is None:
        return np.empty(m, dtype=np.int64)
    if not (isinstance(labels_out, np.ndarray) and labels_out.dtype == np.int64
            and labels_out.shape == (m,) and labels_out.flags.c_contiguous
            and labels_out.flags.writeable):
        raise ValueError(f"labels_out must be a writeable contiguous int64 array of shape ({m},).")
    return labels_out


def _pad_r(R, p):
    # np.linalg.qr gives min(m, p) rows; an R of p rows (zeros below) stacks uniformly.
    if R.shape[0] == p:
        return R
    out = np.zeros((p, p), dtype=R.dtype)
    out[:R.shape[0]] = R
    return out


def _positive_diagonal(R):
    # QR is unique up to the signs of R's rows: fix them so that R does not
    # depend on how the rows were blocked beyond rounding.
    signs = np.where(np.diag(R) < 0, -1.0, 1.0)
    return R * signs[:, None]


def tsqr_partial(block):
    """R factor (upper triangular, float64, shape (p, p)) of a block of rows.

    The first step of a tall-skinny QR (Demmel et al., "Communication-optimal
    parallel and sequential QR and LU factorizations", 2012): the R of the
    whole matrix is the R of the stacked R's of its blocks
    (:func:`combine_r`), since ``X^T X = sum_b R_b^T R_b``.
    """
    B = np.asarray(block, dtype=np.float64)
    p = B.shape[1]
    if B.shape[0] == 0:
        return np.zeros((p, p))
    return _positive_diagonal(_pad_r(np.linalg.qr(B, mode="r"), p))


def combine_r(Rs):
    """R factor of the rows of the stacked R's (the TSQR reduction), diagonal >= 0."""
    Rs = [np.asarray(R, dtype=np.float64) for R in Rs]
    if not Rs:
        raise ValueError("combine_r needs at least one R factor.")
    p = Rs[0].shape[1]
    if len(Rs) == 1:
        return _positive_diagonal(_pad_r(Rs[0], p))
    return _positive_diagonal(_pad_r(np.linalg.qr(np.vstack(Rs), mode="r"), p))


def reduce_partials(partials):
    """Reduce per-block partial results in the given (block) order.

    Each partial is a tuple (or a single value); fields are combined position
    by position: integer arrays (per-row labels) are concatenated, everything
    else (floats, float arrays) is summed in float64, left to right. A fixed
    order makes the result independent of the thread count and of the order
    in which a scheduler finished the blocks.

    Parameters
    ----------
    partials : iterable of tuples
        In block order.

    Returns
    -------
    tuple (or single value) of the reduced fields
    """
    partials = list(partials)
    if not partials:
        raise ValueError("reduce_partials needs at least one partial result.")
    single = not isinstance(partials[0], tuple)
    rows = [(p,) if single else tuple(p) for p in partials]
    out = []
    for j in range(len(rows[0])):
        fields = [r[j] for r in rows]
        first = fields[0]
        if isinstance(first, np.ndarray) and first.dtype.kind in "iub":
            out.append(np.concatenate(fields))
            continue
        acc = np.array(first, dtype=np.float64, copy=True)
        for f in fields[1:]:
            acc += f
        out.append(float(acc) if acc.ndim == 0 else acc)
    return out[0] if single else tuple(out)
