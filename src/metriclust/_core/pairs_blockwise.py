"""MMC's sums over all pairs not in S, for data read block by block (memmap or Dask).

D = "all pairs not in S" (Xing et al. 2003) makes MMC's objective and gradient
sums over all ``N (N - 1) / 2`` pairs. In memory they are one C pass
(``_pairwise.allpairs_full``, the pair graph's Laplacian over row tiles). Here
the rows are cut into blocks ``B_0, ..., B_{nb-1}`` and the sum runs over the
block pairs ``(I, J)``, ``I <= J``, in that fixed (row-major) order:

* ``I == J``: the pairs ``i < j`` within the block (``allpairs_full``);
* ``I < J``: every pair between the two blocks (``crosspairs_full``, the same
  tile code with ``B_J`` in the column role);

minus S's own terms (the similar pairs' rows, gathered once). Each block pair's
``(h, G)`` is a pure function of the two blocks (:func:`allpairs_block_partial`),
and one driver on the block engine (:func:`engine_allpairs`,
:mod:`metriclust._core.engine`: memmap and Dask alike) reduces the partials in
that order. Memory: two blocks (and their whitened copies) and
``p x p`` partials. Cost: ``O(N^2 p)`` flops per evaluation (every pair is
visited, as in memory) and ``nb (nb + 1) / 2`` block reads.

CONTRACT:

    allpairs_block_partial(BI, BJ, shift, W, Lt, *, same, n_threads=None) -> (h, G)
    alldiag_block_partial(BI, BJ, shift, W, a, *, same, hessian, n_threads=None)
        -> (h, grad, H, grad_zero, n_zero)
    block_pairs(n_blocks) -> [(I, J), ...], I <= J, row-major
    engine_allpairs(src, shift) -> pair_map(fn, W, arg, **kw) -> [partials, block-pair order]
    memmap_allpairs(X, block_rows, shift) -> engine_allpairs(source(X, block_rows=...), shift)
    AllPairsSource(X, block_rows=None): gather(S), mean_cov(want_cov), pair_map(mean)
    BlockAllPairSums(pair_map, W, E_S, S, n_threads=None): the ``PairSums`` face
        (``implicit``, ``full``, ``diag``, ``full_solver``) for ``mmc.py``
"""

import numpy as np

from .._kernels import _mmc, _pairwise
from .blockwise import default_block_rows, moments_partial
from .engine import source
from .pairsums import all_but_similar, unique_pairs
from .streaming import column_mean_and_variance, take_pair_rows
from .threads import effective_n_threads

__all__ = ["AllPairsSource", "BlockAllPairSums", "alldiag_block_partial",
           "allpairs_block_partial", "block_pairs", "engine_allpairs", "memmap_allpairs",
           "whiten"]

#: Pairs per explicit-pair call of the diagonal block-pair sums.
_DIAG_CHUNK = 1 << 16


def whiten(block, shift, W):
    """``(block - shift) W`` in float64, C-contiguous (W None: the identity)."""
    E = np.asarray(block, dtype=np.float64) - shift
    return np.ascontiguousarray(E if W is None else E @ W)


def block_pairs(n_blocks):
    """The block pairs ``(I, J)``, ``I <= J``, in the fixed reduction order."""
    return [(i, j) for i in range(n_blocks) for j in range(i, n_blocks)]


def allpairs_block_partial(BI, BJ, shift, W, Lt, *, same, n_threads=None):
    """``(h, G)`` of the pairs between row blocks ``BI`` and ``BJ`` (within ``BI`` if same).

    ``h = sum ||(e_i - e_j) Lt||`` and ``G = sum (e_i - e_j)(e_i - e_j)^T / (2 d_ij)``
    over the pairs ``i < j`` of ``BI`` (``same``) or all ``(i, j)`` in
    ``BI x BJ``, with ``e = (x - shift) W``.
    """
    nt = effective_n_threads(n_threads)
    EI = whiten(BI, shift, W)
    YI = np.ascontiguousarray(EI @ Lt)
    if same:
        return _pairwise.allpairs_full(EI, YI, n_threads=nt)
    EJ = whiten(BJ, shift, W)
    return _pairwise.crosspairs_full(EI, YI, EJ, np.ascontiguousarray(EJ @ Lt), n_threads=nt)


def _cross_pair_chunks(nI, nJ, offset, chunk=_DIAG_CHUNK):
    """Index pairs ``(i, offset + j)`` over ``nI x nJ`` in row order, ``chunk`` at a time."""
    rows = max(1, chunk // max(nJ, 1))
    cols = np.arange(nJ, dtype=np.int64) + offset
    for a in range(0, nI, rows):
        b = min(a + rows, nI)
        i = np.repeat(np.arange(a, b, dtype=np.int64), nJ)
        yield np.ascontiguousarray(np.c_[i, np.tile(cols, b - a)])


def alldiag_block_partial(BI, BJ, shift, W, a, *, same, hessian, n_threads=None):
    """The diagonal metric's sums (``_pairwise.pairs_diag``) over the pairs of a block pair.

    Returns ``(h, grad, H, grad_zero, n_zero)`` (``H`` None unless
    ``hessian``). Within a block: ``pairs_diag``'s all-pairs form; between
    two blocks: its direct kernel on the stacked rows, with the cross pairs
    generated ``2^16`` at a time (the per-pair arithmetic of the in-memory
    all-pairs sums with a Hessian, which is the direct kernel too).
    """
    nt = effective_n_threads(n_threads)
    EI = whiten(BI, shift, W)
    if same:
        return _pairwise.pairs_diag(EI, None, a, True, hessian, n_threads=nt, zero_pairs=True)
    E = np.ascontiguousarray(np.concatenate([EI, whiten(BJ, shift, W)]))
    p = E.shape[1]
    h, grad, H, gz, nz = 0.0, np.zeros(p), np.zeros((p, p)) if hessian else None, np.zeros(p), 0
    for pairs in _cross_pair_chunks(EI.shape[0], E.shape[0] - EI.shape[0], EI.shape[0]):
        out = _pairwise.pairs_diag(E, pairs, a, True, hessian, n_threads=nt, zero_pairs=True)
        h += out[0]
        grad += out[1]
        if hessian:
            H += out[2]
        gz += out[3]
        nz += out[4]
    return h, grad, H, gz, nz


def _pair_task(BI, fn, BJ, shift, W, arg, kw, same):
    # block I (<= J) of the engine pass for block J
    return fn(BI, BJ, shift, W, arg, same=same, **kw)


def engine_allpairs(src, shift):
    """A ``pair_map`` over the block pairs of an engine source (memmap or Dask).

    ``pair_map(fn, W, arg, **kw)`` returns ``[fn(B_I, B_J, shift, W, arg,
    same=I == J, **kw) for (I, J) in block_pairs]``. For each block J (read
    once, by ``take_rows``) one engine pass runs ``fn`` on the blocks
    ``I <= J`` (``map(blocks=...)``); the partials are put in
    :func:`block_pairs` order. Local: at most two blocks in memory and
    ``nb (nb + 1) / 2 + nb`` block reads per evaluation; Dask: block J travels
    with the tasks of its pass.
    """
    nb = src.n_blocks
    index = {pair: k for k, pair in enumerate(block_pairs(nb))}

    def pair_map(fn, W, arg, **kw):
        kw["n_threads"] = src.n_threads
        out = [None] * len(index)
        for j, (s, e) in enumerate(src.bounds):
            BJ = np.ascontiguousarray(src.take_rows(np.arange(s, e, dtype=np.int64)),
                                      dtype=np.float64)
            parts = src.map(_pair_task, fn, BJ, shift, W, arg, kw, blocks=range(j + 1),
                            per_block=[i == j for i in range(j + 1)])
            for i in range(j + 1):
                out[index[(i, j)]] = parts[i]
        return out

    pair_map.n_blocks = nb
    return pair_map


def memmap_allpairs(X, block_rows, shift):
    """:func:`engine_allpairs` of ``source(X, block_rows=block_rows)``."""
    return engine_allpairs(source(X, block_rows=block_rows), shift)


def _moments_f64(block, shift):
    return moments_partial(np.asarray(block, dtype=np.float64), shift=shift)


class AllPairsSource:
    """What ``MMC._fit_all_pairs`` reads from X, through the block engine (memmap, h5py, Dask).

    ``block_rows`` None: blocks of ``64 MiB / (64 p)`` rows (their working set,
    about ``8 b p`` float64 for two blocks, is 64 MiB); a Dask array keeps its
    row chunks. The mean is the engine's
    ``column_mean_and_variance``; the covariance (``init="covariance"``)
    comes from per-block moments about that mean.
    """

    def __init__(self, X, block_rows=None):
        if block_rows is None and not hasattr(X, "__dask_graph__"):
            # two blocks and their copies, about 8 float64 values a row and feature
            block_rows = default_block_rows(8 * int(X.shape[1]), 8)
        self.src = source(X, block_rows=block_rows)

    def gather(self, S):
        XS, (S_loc,), _ = take_pair_rows(self.src, [S], dtype=np.float64)
        return XS, S_loc

    def mean_cov(self, want_cov):
        mean, _ = column_mean_and_variance(self.src, with_variance=False)
        if not want_cov:
            return mean, None
        total, dev, cross = self.src.reduce(_moments_f64, mean)
        return mean, (cross - np.outer(dev, dev) / total) / max(total - 1.0, 1.0)

    def pair_map(self, mean):
        return engine_allpairs(self.src, mean)


class BlockAllPairSums:
    """``PairSums`` for D = all pairs not in S when X is read block by block.

    Parameters
    ----------
    pair_map : callable
        ``pair_map(fn, W, arg, **kw)``: ``fn`` applied to every block pair in
        the order of :func:`block_pairs` (:func:`memmap_allpairs`, or the Dask
        driver), the rows whitened by ``(x - shift) W``.
    W : ndarray (p, p) or None
        The whitening (None: raw, centred coordinates).
    E_S : ndarray (n_s, p)
        The rows the similar pairs touch, whitened the same way.
    S : ndarray (k, 2)
        The similar pairs, indices into ``E_S``.
    """

    implicit = True

    def __init__(self, pair_map, W, E_S, S, n_threads=None):
        self.pair_map, self.W = pair_map, W
        self.E_S = np.ascontiguousarray(E_S, dtype=np.float64)
        self.S = unique_pairs(S)
        self.n_threads = effective_n_threads(n_threads)
        self.p = self.E_S.shape[1]

    def full(self, Lt, gradient=True, zero_pairs=False):
        """``(h, G)`` as ``PairSums.full`` for all pairs not in S (no zero pairs)."""
        Lt = np.ascontiguousarray(Lt, dtype=np.float64)
        parts = self.pair_map(allpairs_block_partial, self.W, Lt, n_threads=self.n_threads)
        h, G = 0.0, np.zeros((self.p, self.p))
        for hk, Gk in parts:                     # block-pair order
            h += hk
            G += Gk
        return all_but_similar(h, G, self.E_S, self.S, Lt, gradient, zero_pairs,
                               self.n_threads)

    def full_solver(self, **settings):
        """The C solver loop (``_mmc.FullSPG``) with these sums as its evaluator."""
        return _mmc.FullSPG(np.zeros((0, self.p)), "callback", np.zeros((0, 2), np.int64),
                            n_threads=self.n_threads, evaluator=self.full, **settings)

    def diag(self, a, gradient=True, hessian=True, zero_pairs=False):
        """``PairSums.diag`` for all pairs not in S."""
        a = np.ascontiguousarray(a, dtype=np.float64)
        parts = self.pair_map(alldiag_block_partial, self.W, a, hessian=hessian,
                              n_threads=self.n_threads)
        p = self.p
        h, grad, gz, nz = 0.0, np.zeros(p), np.zeros(p), 0
        H = np.zeros((p, p)) if hessian else None
        for hk, gk, Hk, gzk, nzk in parts:        # block-pair order
            h += hk
            grad += gk
            if hessian:
                H += Hk
            gz += gzk
            nz += nzk
        out = (h, grad, H, gz, nz)
        out_s = _pairwise.pairs_diag(self.E_S, self.S, a, True, hessian,
                                     n_threads=self.n_threads, zero_pairs=True)
        res = tuple(None if x is None else x - xs for x, xs in zip(out, out_s))
        res = (res[0], res[1] if gradient else None, res[2]) + res[3:]
        return res if zero_pairs else res[:3]
