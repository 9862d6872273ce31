"""CPD-UML's low-rank (Nystrom) fit for data read block by block (memmap, h5py, Dask).

Public classes and functions:

.. autosummary::

   LowRankBlockSolver     -- the low-rank Psi-step from per-block partial sums
   EngineBlocks           -- an out-of-core X as the solver's block source
   RowMap, RowTransform   -- per-row maps (moved points, Nystrom features) applied per block
   spectral_start         -- the spectral start from block moments
   working_set_row_bytes  -- bytes a block row costs, for the block size
   factor_rows, factor_moments_partial, cluster_partial, moved_rows, within_partial,
   affine_rows, float_rows, field_rows, moments_rows
                          -- the per-block functions the passes map

The in-memory low-rank path (:class:`metriclust._core.cpd.LowRankPsiSolver`)
holds three ``N``-long arrays: the data, the Nystrom factor ``U = g(X, L) N_L``
(``N x r``, brought to ``Q = U T`` orthonormal) and the moved points ``X_1``.
Every quantity the Psi-step needs from them is a sum over rows:

* ``U^T U`` (``r x r``, gives ``s`` and ``T``: :func:`metriclust._core.gram.factor_basis`)
  and ``U^T X`` (``r x p``; ``Q^T X = T^T U^T X``): one pass, once;
* per partition, the per-cluster sums of ``U`` and ``X`` and the cluster
  sizes (``Y^T Q = (Y^T U) T``, ``Y^T X``): one pass;

and the moved points are a function of each row alone,
``x_1 = x + g(x, L) M`` with ``M = N_L T diag(s) C`` (``m x p``; the field of
``CPDUML.transform``). So a block driver reduces the per-block partials in
block order, the ``m x m`` system is solved as in memory
(:func:`metriclust._core.cpd.low_rank_coef`), the objective's within-cluster
sum is a pass over the moved blocks, and the Y-step's Lloyd runs on the
moved points through :func:`metriclust._core.streaming.kmeans_blockwise` with
the moved rows as a per-block transform, never an ``N x p`` array. The spectral
start is the same: block moments, then k-means on the lazily mapped rows.

Landmarks are the rows the in-memory ``Nystrom`` draws (the same generator
calls), read alone. What stays in memory: the labels (``8 N`` bytes), the
``m x m``, ``r x p``, ``K x m`` and ``K x p`` sums, one block and its ``b x m``
kernel rows (``8 b (p + 2 m)`` bytes for ``b`` rows a block).

Cost per Psi-step: the cluster pass ``O(N m (p + r))``, the within pass
``O(N m p)``, then ``O(N m p)`` per Lloyd iteration (the moved rows are
recomputed, not stored).

CONTRACT:

    RowMap(X, fn, n_columns, *args): rows fn(X[a:b], *args), lazily (embedding_, weights_)
    RowTransform(fn, *args): fn(block, *args) as an engine transform
    EngineBlocks(X, block_rows=None, *, row_bytes=None): block_map, rows, row_map, kmeans,
        n, p (on the engine; row_bytes: the per-row working set that sizes default blocks)
    working_set_row_bytes(p, m) -> bytes a block row costs in the passes
    factor_moments_partial(block, landmarks, sigma, normalization) -> (U^T U, U^T X)
    cluster_partial(block, labels, K, landmarks, sigma, normalization) -> (sum U, sum X, counts)
    moved_rows(block, landmarks, sigma, M) -> x + g(x, L) M
    within_partial(block, labels, means, landmarks, sigma, M) -> float
    spectral_start(source, K, n_init, rng) -> labels
    LowRankBlockSolver(source, landmarks, sigma, normalization, lam): solve, objective,
        y_step, cluster_centers (the hooks of cpduml._alternate)
"""

import numpy as np

from .._kernels._sums import cluster_sums
from .blockwise import default_block_rows, moments_partial, read_block
from .cpd import PsiStep, low_rank_coef
from .engine import source
from .gram import drop_null_eigenpairs, factor_basis, gaussian_gram, gram_matmat
from .streaming import kmeans_blockwise

__all__ = ["EngineBlocks", "LowRankBlockSolver", "RowMap", "RowTransform", "affine_rows",
           "cluster_partial", "factor_moments_partial", "field_rows", "float_rows",
           "moved_rows", "spectral_start", "within_partial", "working_set_row_bytes"]


# ------------------------------------------------------------ per-block functions
def _f64(block):
    return np.ascontiguousarray(block, dtype=np.float64)


def factor_rows(block, landmarks, sigma, normalization):
    """The Nystrom factor's rows ``g(x, L) N_L`` of a block (``b x r``)."""
    return gaussian_gram(_f64(block), landmarks, sigma=sigma) @ normalization


def factor_moments_partial(block, landmarks, sigma, normalization):
    """``(U_b^T U_b, U_b^T X_b)`` of one block."""
    B = _f64(block)
    U = factor_rows(B, landmarks, sigma, normalization)
    return U.T @ U, U.T @ B


def cluster_partial(block, labels, n_clusters, landmarks, sigma, normalization):
    """Per-cluster sums of the factor's rows and of the rows, and the cluster sizes."""
    B = _f64(block)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    U = np.ascontiguousarray(factor_rows(B, landmarks, sigma, normalization))
    return (cluster_sums(U, labels, n_clusters), cluster_sums(B, labels, n_clusters),
            np.bincount(labels, minlength=n_clusters).astype(np.float64))


def moved_rows(block, landmarks, sigma, M):
    """``x + g(x, L) M`` for the rows of a block (the moved points ``X_1``)."""
    B = _f64(block)
    return B + gram_matmat(B, M, sigma=sigma, Y=landmarks)


def within_partial(block, labels, means, landmarks, sigma, M):
    """``sum ||x_1 - means[label]||^2`` over a block's moved rows (deviations, no cancellation)."""
    dev = moved_rows(block, landmarks, sigma, M)
    dev -= means[np.asarray(labels, dtype=np.int64)]
    return float(np.einsum("ij,ij->", dev, dev))


def affine_rows(block, shift, B):
    """``(x - shift) B`` for the rows of a block (the spectral coordinates)."""
    return np.ascontiguousarray((_f64(block) - shift) @ B)


def float_rows(block):
    """The rows of a block as float64 (k-means on X itself, as in memory)."""
    return _f64(block)


def field_rows(block, landmarks, sigma, V):
    """``g(x, L) V`` for the rows of a block (``Psi``'s rows with ``V = N_L T C``)."""
    return gram_matmat(_f64(block), V, sigma=sigma, Y=landmarks)


def moments_rows(block, shift):
    """``moments_partial`` with its rows as float64 (task-friendly argument order)."""
    return moments_partial(_f64(block), shift=shift)


# ------------------------------------------------------------------ row views
class RowMap:
    """Rows ``fn(X[a:b], *args)`` of an out-of-core X, computed when sliced.

    An ``(N, n_columns)`` float64 array-like that supports row slicing, so
    :func:`metriclust._core.streaming.kmeans_blockwise` reads it like a memmap;
    no row is stored. ``X`` is read as float64.
    """

    def __init__(self, X, fn, n_columns, *args):
        self.X, self.fn, self.args = X, fn, args
        self.shape = (int(X.shape[0]), int(n_columns))
        self.dtype = np.dtype(np.float64)
        self.ndim = 2

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("RowMap supports contiguous row slices only")
        start, stop, _ = key.indices(self.shape[0])
        stop = max(stop, start)
        return self.fn(read_block(self.X, start, stop, np.float64, ensure_finite=False),
                       *self.args)


class RowTransform:
    """``fn(block, *args)`` as an engine per-block transform (picklable)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __call__(self, block):
        return self.fn(block, *self.args)


class EngineBlocks:
    """The block driver of the fit, on the block engine (memmap, h5py, Dask).

    ``block_map(fn, *args, labels=None)``: ``[fn(block, [labels_b], *args)]``
    in block order (``source.map``; the labels as a per-row array aligned with
    the blocks). ``rows(indices)``: those rows as float64 (``take_rows``).
    ``row_map(fn, n_columns, *args)``: the rows ``fn(block, *args)``, lazily
    (a :class:`RowMap` of an out-of-core X, a Dask array with X's chunks).
    ``kmeans(fn, args, n_columns, K, **kw)``: the engine's k-means
    (:func:`~metriclust._core.streaming.kmeans_blockwise`) of the rows
    ``fn(block, *args)``, a per-block transform; int64 labels in memory.
    """

    def __init__(self, X, block_rows=None, *, row_bytes=None):
        if block_rows is None and row_bytes is not None and not hasattr(X, "__dask_graph__"):
            # blocks sized by their working set (kernel rows, moved rows), not by
            # X's bytes alone: 64 MiB of it
            block_rows = default_block_rows(1, row_bytes)
        self.src = source(X, block_rows=block_rows)
        self.n, self.p = self.src.n_rows, self.src.n_features
        self.block_rows = max(e - s for s, e in self.src.bounds)

    def block_map(self, fn, *args, labels=None):
        rows = () if labels is None else (self.src.rows(np.asarray(labels, dtype=np.int64)),)
        return self.src.map(fn, *args, rows=rows)

    def rows(self, indices):
        return np.ascontiguousarray(self.src.take_rows(np.sort(indices)), dtype=np.float64)

    def row_map(self, fn, n_columns, *args):
        if self.src.kind == "dask":
            return self.src.rowwise(fn, *args, n_columns=n_columns)
        return RowMap(self.src.X, fn, n_columns, *args)

    def kmeans(self, fn, args, n_columns, n_clusters, **kw):
        res = kmeans_blockwise(self.src, n_clusters, transform=RowTransform(fn, *args), **kw)
        labels = res.labels
        if hasattr(labels, "compute"):
            labels = labels.compute()
        return np.asarray(labels, dtype=np.int64)


def working_set_row_bytes(p, m):
    """Bytes one block row costs in the passes: float64 row, kernel row and factor
    row (``m`` each), moved row, gram_matmat's output: ``8 (3 p + 2 m)``."""
    return 8 * (3 * int(p) + 2 * int(m))


def _sum_in_order(parts):
    """Field-wise sums of a list of tuples, in list order."""
    total = [np.array(f, dtype=np.float64, copy=True) for f in parts[0]]
    for part in parts[1:]:
        for acc, f in zip(total, part):
            acc += f
    return total


# ------------------------------------------------------------------ the start
def spectral_start(source, n_clusters, n_init, rng):
    """``cpduml._spectral_partition`` for data read block by block (p <= N).

    Block moments about the mean give ``Zc^T Zc``; its top-K eigenvectors
    (the same cut of null eigenpairs) map each row to ``Zc v / sqrt(ev)``,
    and k-means runs on those mapped rows (``source.kmeans``).
    """
    parts = source.block_map(moments_rows, None)
    total, col_sum, _ = _sum_in_order(parts)
    mean = col_sum / total
    _, _, cross = _sum_in_order(source.block_map(moments_rows, mean))
    ev, V = drop_null_eigenpairs(*np.linalg.eigh(cross))
    ev, V = ev[:n_clusters], V[:, :n_clusters]
    if not ev.size:                             # all points identical
        return np.arange(source.n, dtype=np.int64) % n_clusters
    B = np.ascontiguousarray(V / np.sqrt(ev))
    return source.kmeans(affine_rows, (mean, B), B.shape[1], n_clusters, n_init=n_init,
                         random_state=rng)


# ------------------------------------------------------------------ the solver
class _MovedPoints:
    """``PsiStep.X1`` of the block solver: the moved points, as a field (never stored)."""

    def __init__(self, source, landmarks, sigma, M, n, p):
        self.source, self.landmarks, self.sigma, self.M = source, landmarks, sigma, M
        self.shape = (n, p)


class LowRankBlockSolver:
    """The low-rank Psi-step (eq. 20) with ``G ~= U U^T``, ``U = g(X, L) N_L``, by block passes.

    Equal to :class:`metriclust._core.cpd.LowRankPsiSolver` on
    ``orthonormalize_factor(U)`` up to the order of the sums: the same
    ``s``, ``T`` (from the reduced ``U^T U``), the same ``m x m`` solve.

    Parameters
    ----------
    source : EngineBlocks
    landmarks : ndarray (m, p)
    sigma : float
    normalization : ndarray (m, r), ``N_L`` of the Nystrom factor
    lam : float
        Raw regularization.
    """

    def __init__(self, source, landmarks, sigma, normalization, lam):
        self.source, self.L, self.sigma = source, landmarks, float(sigma)
        self.N_L, self.lam = normalization, float(lam)
        UtU, UtX = _sum_in_order(source.block_map(factor_moments_partial, landmarks,
                                                  self.sigma, normalization))
        self.s, self.T = factor_basis(0.5 * (UtU + UtU.T))
        self._QtX = self.T.T @ UtX
        #: N_L U^T U T = N_L T S: CPDUML's landmark map (coefficients of the field)
        self.landmark_map = normalization @ (self.T * self.s)

    def _sums(self, labels, n_clusters):
        sU, sX, counts = _sum_in_order(self.source.block_map(
            cluster_partial, n_clusters, self.L, self.sigma, self.N_L, labels=labels))
        return sU, sX, counts

    def solve(self, labels, n_clusters):
        """``PsiStep`` for ``labels``: ``psi`` is ``C`` (``Psi = Q C``), ``X1`` a lazy field."""
        sU, sX, counts = self._sums(labels, n_clusters)
        keep = counts > 0
        root = np.sqrt(counts[keep])[:, None]
        BT = (sU[keep] @ self.T) / root               # Y^T Q
        YtX = sX[keep] / root
        C = low_rank_coef(self.s, self._QtX, BT, YtX, self.lam)
        M = self.landmark_map @ C
        X1 = _MovedPoints(self.source, self.L, self.sigma, M, self.source.n, self.source.p)
        # cluster sums of X1 = X + U T s C come with the partition's sums
        X1.sums = sX + sU @ (self.T * self.s) @ C
        X1.counts = counts
        X1.labels = labels
        return PsiStep(C, X1, float(np.einsum("ij,ij->", C, C)))

    def cluster_centers(self, X1, labels, n_clusters):
        """Cluster means of the moved points (empty clusters: zero rows)."""
        if X1.labels is labels:
            sums, counts = X1.sums, X1.counts
        else:
            sums, counts = self._moved_sums(X1, labels, n_clusters)
        return np.divide(sums, counts[:, None], out=np.zeros_like(sums),
                         where=counts[:, None] > 0)

    def _moved_sums(self, X1, labels, n_clusters):
        # another partition than the one X1 was solved for: a pass over the moved rows
        parts = self.source.block_map(_moved_cluster_partial, n_clusters, X1.landmarks,
                                      X1.sigma, X1.M, labels=labels)
        return _sum_in_order(parts)

    def objective(self, X1, labels, n_clusters, psi_sq_norm, lam):
        """J of eq. 11: the moved points' within-cluster sum (a pass) plus ``lam ||C||^2``."""
        means = self.cluster_centers(X1, labels, n_clusters)
        within = sum(self.source.block_map(within_partial, means, X1.landmarks, X1.sigma,
                                           X1.M, labels=labels))
        return float(within) + lam * float(psi_sq_norm)

    def y_step(self, X1, labels, n_clusters):
        """Lloyd on the moved points from the means of ``labels`` (``lloyd_from_partition``)."""
        means = self.cluster_centers(X1, labels, n_clusters)
        return self.source.kmeans(moved_rows, (X1.landmarks, X1.sigma, X1.M), X1.shape[1],
                                  n_clusters, init=means, n_init=1, max_iter=300, tol=0.0)


def _moved_cluster_partial(block, labels, n_clusters, landmarks, sigma, M):
    X1 = moved_rows(block, landmarks, sigma, M)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    return (cluster_sums(X1, labels, n_clusters),
            np.bincount(labels, minlength=n_clusters).astype(np.float64))
