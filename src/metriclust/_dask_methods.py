"""Dask drivers of MMC's all-pairs sums and CPD-UML's low-rank fit.

Imported only when those estimators get a ``dask.array.Array`` (``import
metriclust`` never imports Dask). The per-block (and per-block-pair) work is
the pure functions of :mod:`metriclust._core.pairs_blockwise` and
:mod:`metriclust._core.cpd_blockwise`, run as Dask tasks on the row chunks of
X; their small partials (``p x p``, ``m x m``, ``K x m``) come back to the
client in task order and are reduced there in that fixed order, as the memmap
drivers reduce them, so the result equals the in-memory fit up to the order of
the floating-point sums.

CONTRACT:

    DaskSource(X): MMC's ``gather(S)``, ``mean_cov(want_cov)``, ``pair_map(mean)``
    DaskBlocks(X): CPD-UML's ``block_map``, ``rows``, ``row_map``, ``kmeans``, ``n``, ``p``
    dask_block_map(X) -> block_map(fn, *args, **kw) -> [fn(block, *args, **kw) per chunk]
"""

import dask
import numpy as np

from . import _dask
from ._core.pairs_blockwise import block_pairs

__all__ = ["DaskBlocks", "DaskSource", "dask_block_map"]


def _chunks(X):
    return list(X.to_delayed().ravel())


class DaskSource:
    """What ``MMC._fit_all_pairs`` reads from a Dask array: one task per block pair.

    Every evaluation of the pair sums is ``nb (nb + 1) / 2`` tasks (chunk I
    with chunk J >= I); the scheduler moves chunk J to chunk I's worker.
    """

    def __init__(self, X):
        self.X = X

    def gather(self, S):
        XS, (S_loc,) = _dask.pair_rows(self.X, [S])
        return XS, S_loc

    def mean_cov(self, want_cov):
        if want_cov:
            cov = _dask.covariance(self.X)
        mean, _ = _dask.column_mean_and_variance(self.X)
        return mean, (cov if want_cov else None)

    def pair_map(self, mean):
        blocks = _chunks(self.X)
        order = block_pairs(len(blocks))

        def pair_map(fn, W, arg, **kw):
            kw.pop("n_threads", None)       # the worker's own thread count
            tasks = [dask.delayed(fn)(blocks[i], blocks[j], mean, W, arg, same=i == j, **kw)
                     for i, j in order]
            return list(dask.compute(*tasks))      # in task order

        pair_map.n_blocks = len(blocks)
        return pair_map


def _labelled_task(fn, block, labels, args):
    return fn(block, labels, *args)


class DaskBlocks:
    """CPD-UML's block driver (:mod:`metriclust._core.cpd_blockwise`) on a Dask array.

    ``block_map`` runs one task per row chunk (the chunk's slice of the labels
    shipped with it) and returns the partials in chunk order; ``kmeans`` runs
    :func:`metriclust._dask.kmeans` on the lazily mapped chunks;
    ``row_map`` is a lazy Dask array with X's row chunks.
    """

    def __init__(self, X):
        self.X = X
        self.n, self.p = (int(s) for s in X.shape)
        self.blocks = _chunks(X)
        ends = np.cumsum(X.chunks[0])
        self.bounds = list(zip(np.r_[0, ends[:-1]].tolist(), ends.tolist()))

    def block_map(self, fn, *args, labels=None):
        if labels is None:
            tasks = [dask.delayed(fn)(b, *args) for b in self.blocks]
        else:
            tasks = [dask.delayed(_labelled_task)(fn, b, labels[s:e], args)
                     for b, (s, e) in zip(self.blocks, self.bounds)]
        return list(dask.compute(*tasks))

    def rows(self, indices):
        idx = np.sort(np.asarray(indices, dtype=np.int64))
        rows = np.ascontiguousarray(self.X[idx].compute(), dtype=np.float64)
        if not np.all(np.isfinite(rows)):
            raise ValueError("Input X contains NaN or infinity.")
        return rows

    def row_map(self, fn, n_columns, *args):
        return self.X.map_blocks(fn, *args, dtype=np.float64,
                                 chunks=(self.X.chunks[0], (int(n_columns),)),
                                 meta=np.empty((0, 0), dtype=np.float64))

    def kmeans(self, fn, args, n_columns, n_clusters, *, init="k-means||", n_init=1,
               max_iter=300, tol=1e-4, random_state=None):
        Z = self.row_map(fn, n_columns, *args)
        res = _dask.kmeans(Z, n_clusters, init=init, n_init=n_init, max_iter=max_iter,
                           tol=tol, random_state=random_state)
        return np.asarray(res.labels.compute(), dtype=np.int64)


def dask_block_map(X):
    """``block_map(fn, *args, **kw)``: ``fn(chunk, *args, **kw)`` for every row chunk, in order."""
    blocks = _chunks(X)

    def block_map(fn, *args, **kw):
        return list(dask.compute(*[dask.delayed(fn)(b, *args, **kw) for b in blocks]))

    block_map.n_blocks = len(blocks)
    return block_map
