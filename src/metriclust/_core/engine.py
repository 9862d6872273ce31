"""One block engine: passes over the row blocks of data that is not one in-memory array.

Public classes and functions:

.. autosummary::

   BlockSource  -- a 2-D source read by row blocks (local memmap or Dask backend)
   RowArray     -- per-row state aligned with a BlockSource's blocks
   source       -- a BlockSource over X: Dask for a dask array, local otherwise
   check_block  -- finite values and no overflow in one block of rows

A :class:`BlockSource` is "a row-sliceable source of blocks" with two
backends:

- ``"local"``: an ``np.memmap`` (or a ``.npy`` opened with ``mmap_mode="r"``,
  an h5py/zarr dataset, any 2-D array with row slicing, or an in-memory
  ndarray) read one block of rows at a time, in order, in this process. Only
  one block (and what the per-block function makes of it) is in memory.
- ``"dask"``: a ``dask.array.Array``; one Dask task per row chunk on whatever
  scheduler is active (a ``distributed.Client`` if one exists), or, when X is
  persisted on a distributed cluster, one task per worker thread over chunks
  its worker holds, with the rows balanced over the threads (one round trip a
  pass). ``dask`` is imported only by this backend, when it is first used.

Every pass is a *map* of a per-block function over the blocks, optionally
after a per-block *transform* (a prediction ``X B + b0``, Nystrom features),
whose small partial results come back in block order and are reduced in that
fixed order (:func:`metriclust._core.blockwise.reduce_partials`). So results do
not depend on the thread count, nor (Dask) on which worker finished first.

Per-row state that later passes need (labels, k-means|| distances) lives in a
:class:`RowArray`: a numpy array on the local backend (written block by block,
in place), persisted chunks on the workers on the Dask backend (never
gathered; ``RowArray.result()`` gives it back as a lazy dask array).

Per-block functions and transforms must be module-level functions (or
instances of module-level classes) of their arguments only, so that they
pickle by reference and run on any worker that can import metriclust. A
per-block function is called as::

    fn(block, *row_blocks, *args)          # block after the transform, if any

where ``row_blocks`` are the blocks of the ``rows=`` RowArrays (``None`` for a
``None`` entry). With ``x=False`` the data block is not read and ``fn`` is
called as ``fn(*row_blocks, *args)``.
"""

import numbers
import operator

import numpy as np

from .blockwise import (check_block, check_out_of_core, default_block_rows, reduce_partials,
                        row_blocks, subtract_rows)
from .ondisk import is_out_of_core
from .threads import effective_n_threads
from .validation import is_dask_array

__all__ = ["BlockSource", "RowArray", "source", "check_block"]


def _as_block(raw, dtype):
    return np.ascontiguousarray(np.asarray(raw), dtype=dtype)


def _run(fn, raw, dtype, check, start, n_total, name, transform, rows, args):
    """Body of one block's task (both backends): read, check, transform, call."""
    if raw is None:
        return fn(*rows, *args)
    block = _as_block(raw, dtype)
    if check:
        check_block(block, start, n_total, name)
    if transform is not None:
        block = transform(block)
    return fn(block, *rows, *args)


def _run_group(fn, raws, bounds, dtype, check, n_total, name, transform, rows, args):
    """Body of one worker thread's task (Dask, data held by a cluster): ``_run`` on
    each of its blocks in turn; the results in the order of ``bounds`` (packed, see
    ``_pack``). ``args``: one tuple for every block (sent once), or a list of one
    tuple per block; ``rows``: a list of each block's per-row inputs, or their
    number when they are all None."""
    if isinstance(args, tuple):
        args = [args] * len(raws)
    if isinstance(rows, int):       # that many per-row inputs, all None
        rows = [[None] * rows] * len(raws)
    return _pack([_run(fn, raw, dtype, check, s, n_total, name, transform, r, a)
                  for raw, (s, _), r, a in zip(raws, bounds, rows, args)])


def _run_bundle(fn, bundle, positions, bounds, dtype, check, n_total, name, transform, rows,
                args):
    """``_run_group`` on the blocks ``positions`` of a bundle (one key holding a list of a
    worker thread's blocks, e.g. the centred copy): one dependency, not one a block."""
    return _run_group(fn, [bundle[p] for p in positions], bounds, dtype, check, n_total, name,
                      transform, rows, args)


def _centred_group(blocks, shift, dtype):
    return [_centred_block(b, shift, dtype) for b in blocks]


class _Packed:
    """Per-block results that are tuples of same-shape arrays, one array per field with
    the blocks stacked (``_pack``): one array to send a field, not one per block."""

    def __init__(self, fields):
        self.fields = fields


def _pack(results):
    """``results`` (a list, one per block) as a :class:`_Packed` when every result is a
    tuple of the same length whose fields are ndarrays of one shape and dtype across
    the blocks; otherwise unchanged. ``_unpack`` gives back equal tuples (views of the
    stacked arrays: the same values, bit for bit)."""
    if not results or not all(type(r) is tuple for r in results):
        return results
    m = len(results[0])
    if m == 0 or any(len(r) != m for r in results):
        return results
    fields = []
    for j in range(m):
        col = [r[j] for r in results]
        if not all(type(v) is np.ndarray for v in col) \
                or len({(v.shape, v.dtype) for v in col}) != 1:
            return results
        fields.append(np.stack(col))
    return _Packed(fields)


def _unpack(out):
    if not isinstance(out, _Packed):
        return out
    return [tuple(f[i] for f in out.fields) for i in range(out.fields[0].shape[0])]


def _place_chunks(sizes, holders, slots, move):
    """The worker that runs each chunk's pass: rows balanced over the worker threads.

    ``sizes``: rows of each chunk; ``holders``: the addresses holding each chunk;
    ``slots``: threads of each worker (address -> int). Greedy in chunk order: the
    least loaded holder (load = rows per thread); with ``move``, the least loaded
    worker of all instead when that holder is a chunk or more ahead of it (the
    chunk is then copied there once: for a copy made on that worker). A chunk no
    live worker holds gets None.
    """
    load = dict.fromkeys(slots, 0.0)
    out = []
    for rows, held in zip(sizes, holders):
        held = [a for a in sorted(held) if a in load]
        if not held and not move:
            out.append(None)
            continue
        best = min(held, key=lambda a: (load[a], a)) if held else None
        if move:
            low = min(load, key=lambda a: (load[a], a))
            if best is None or load[best] - load[low] >= rows / slots[low]:
                best = low
        load[best] += rows / slots[best]
        out.append(best)
    return out


def _worker_threads(client):
    """Threads of each worker of the cluster (address -> int, at least 1)."""
    return {a: max(1, int(t)) for a, t in client.nthreads().items()}


def _placement(client, futs, sizes, slots, move):
    """:func:`_place_chunks` for the chunks ``futs`` (X persisted on the cluster),
    once they exist: where each chunk is held is asked of the scheduler."""
    from distributed import wait
    wait(futs)
    holders = client.who_has(futs)
    return _place_chunks(sizes, [holders.get(f.key, ()) for f in futs], slots, move=move)


def _cut_bytes(idx, sizes, row_bytes, limit):
    """``idx`` cut into consecutive pieces of at most ``limit`` bytes (each at least one
    block)."""
    pieces, cur, acc = [], [], 0
    for i in idx:
        b = sizes[i] * row_bytes
        if cur and acc + b > limit:
            pieces.append(cur)
            cur, acc = [], 0
        cur.append(i)
        acc += b
    if cur:
        pieces.append(cur)
    return pieces


def _split_rows(idx, sizes, parts):
    """``idx`` (chunk indices, in order) cut into at most ``parts`` consecutive runs of
    about equal rows (one per worker thread)."""
    parts = max(1, min(int(parts), len(idx)))
    if parts == 1:
        return [idx]
    total = float(sum(sizes[i] for i in idx))
    runs, cur, acc = [], [], 0.0
    for i in idx:
        cur.append(i)
        acc += sizes[i]
        if len(runs) < parts - 1 and acc >= total * (len(runs) + 1) / parts:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


def _client():
    """The active ``distributed.Client``, or None (no distributed, or no client)."""
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        return None


def _future_of(obj):
    from distributed import futures_of
    fut = futures_of(obj)
    return fut[0] if len(fut) == 1 else None


def _run_keep(fn, raw, dtype, check, start, n_total, name, transform, rows, args):
    # fn returns (per-row values, partial)
    out = _run(fn, raw, dtype, check, start, n_total, name, transform, rows, args)
    return out[0], out[1]


#: Largest share of a centred copy held under one key (Dask spills and moves a key
#: whole): a worker thread's blocks are cut into bundles of at most this many bytes
#: (a bundle has at least one block), one task a bundle and pass.
_BUNDLE_BYTES = 1 << 30

#: Arguments of a Dask pass larger than this (arrays, transforms holding arrays)
#: go into the graph once, shared by every chunk's task, not once per task.
_SHARE_BYTES = 1 << 16


def _shared_one(a):
    if a is None:
        return None
    size = a.nbytes if isinstance(a, np.ndarray) else sum(
        v.nbytes for v in getattr(a, "__dict__", {}).values() if isinstance(v, np.ndarray))
    if size <= _SHARE_BYTES:
        return a
    import dask
    return dask.delayed(a, pure=True, traverse=False)


def _shared(args):
    return tuple(_shared_one(a) if isinstance(a, np.ndarray) or hasattr(a, "__dict__")
                 else a for a in args)


def _set_rows(values, local_idx, new):
    values = np.array(values, copy=True)
    values[local_idx] = new
    return values


def _fill(m, value, dtype):
    return np.full(m, value, dtype=dtype)


def _concat_rows(*parts):
    return np.concatenate(parts)


def _centred_block(block, shift, dtype):
    return subtract_rows(_as_block(block, dtype), shift)


class RowArray:
    """One value (or row of values) per row of a :class:`BlockSource`, aligned with its blocks.

    Local backend: ``values`` is a numpy array (``block(i)`` a view).
    Dask backend: ``parts`` is a list of persisted delayed chunks.
    """

    def __init__(self, src, values=None, parts=None, dtype=None, width=None):
        self.src = src
        self.values = values
        self.parts = parts
        self.dtype = np.dtype(dtype if dtype is not None else values.dtype)
        self.width = width

    def block(self, i):
        if self.values is not None:
            s, e = self.src.bounds[i]
            return self.values[s:e]
        return self.parts[i]

    def result(self):
        """numpy array (local) or lazy dask array with the source's row chunks (dask)."""
        if self.values is not None:
            return self.values
        import dask.array as da
        shape = (lambda m: (m,)) if self.width is None else (lambda m: (m, self.width))
        return da.concatenate([da.from_delayed(p, shape=shape(e - s), dtype=self.dtype)
                               for p, (s, e) in zip(self.parts, self.src.bounds)])

    def set(self, index, new):
        """Rows ``index`` (global, int) take the values ``new``, in place."""
        index = np.asarray(index, dtype=np.int64)
        new = np.asarray(new, dtype=self.dtype)
        if self.values is not None:
            self.values[index] = new
            return
        import dask
        which = np.searchsorted(self.src.starts, index, side="right") - 1
        for b in np.unique(which):
            sel = which == b
            self.parts[b] = dask.persist(dask.delayed(_set_rows)(
                self.parts[b], index[sel] - self.src.starts[b], new[sel]))[0]

    def copy(self):
        if self.values is not None:
            return RowArray(self.src, values=self.values.copy())
        return RowArray(self.src, parts=list(self.parts), dtype=self.dtype, width=self.width)

    def assign_from(self, other):
        """Take ``other``'s values (in place for the local backend: no second array)."""
        if self.values is not None:
            self.values[...] = other.values
        else:
            self.parts = list(other.parts)


class BlockSource:
    """A 2-D data source read by row blocks; see the module docstring.

    Attributes
    ----------
    kind : {"local", "dask"}
    n_rows, n_features : int
    dtype : numpy.dtype
        The working dtype of a block: float32 stays float32, other numbers float64.
    bounds : list of (start, stop)
        The row blocks, in order (Dask: X's row chunks).
    starts : ndarray of int64
        First row of each block.
    n_threads : int
        OpenMP threads a per-block kernel should use (local: the process's
        setting; Dask: 1, Dask runs one task per worker thread).
    """

    def __init__(self, X, kind, bounds, dtype, *, name="X", n_threads=None, checked=False):
        self.X = X
        self.kind = kind
        self.n_rows, self.n_features = (int(s) for s in X.shape)
        self.dtype = np.dtype(dtype)
        self.bounds = [(int(s), int(e)) for s, e in bounds]
        self.starts = np.array([s for s, _ in self.bounds], dtype=np.int64)
        self.name = name
        self.n_threads = 1 if kind == "dask" else effective_n_threads(n_threads)
        # the first pass checks every block (NaN, infinity, overflow); later ones do not
        self.checked = checked
        self._delayed = None
        self._futs = None       # Dask, X held by a cluster: its chunks' futures (asked once)
        self._holder = None     # ... the worker that runs each chunk's pass
        self._slots = None      # ... threads of each worker
        self._bundles = None    # ... or (worker, block indices, future of their list) each

    shape = property(lambda self: (self.n_rows, self.n_features))

    def _block_sizes(self):
        """Rows of each block, in block order."""
        return [e - s for s, e in self.bounds]

    @property
    def n_blocks(self):
        return len(self.bounds)

    def __repr__(self):
        return (f"BlockSource({self.kind}, shape={self.shape}, dtype={self.dtype}, "
                f"{self.n_blocks} blocks)")

    # ----------------------------------------------------------- blocks
    def reblock(self, block_rows):
        """The same data in blocks of ``block_rows`` rows (local); Dask keeps its chunks."""
        if self.kind == "dask":
            return self
        return BlockSource(self.X, "local", row_blocks(self.n_rows, block_rows), self.dtype,
                           name=self.name, n_threads=self.n_threads, checked=self.checked)

    def _dask_blocks(self):
        if self._delayed is None:
            self._delayed = list(self.X.to_delayed().ravel())
        return self._delayed

    def _row_parts(self, rows, i):
        return [None if r is None else r.block(i) for r in rows]

    def _chunk_futures(self):
        """The futures of X's chunks in block order (X persisted on a cluster), else None.
        Found once (a walk of X's graph) and kept: X does not change."""
        if self._bundles is not None:    # passes read the bundles
            return None
        if self._futs is None:
            if not self.persisted():
                return None
            from distributed import futures_of
            by_key = {f.key: f for f in futures_of(self.X)}
            keys = [k for row in self.X.__dask_keys__() for k in row]
            futs = [by_key.get(k) for k in keys]
            if not all(f is not None for f in futs):
                return None
            self._futs = futs
        return self._futs

    def _workers(self, client, futs):
        """Where each chunk's pass runs and the threads of each worker: asked once per
        source (two round trips), rows balanced over the worker threads among each
        chunk's holders (a chunk several workers hold, e.g. after ``X.compute()``,
        is not all sent to one of them)."""
        if self._holder is None:
            self._slots = _worker_threads(client)
            self._holder = _placement(client, futs, self._block_sizes(), self._slots,
                                      move=False)
        return self._holder

    def _map_by_worker(self, client, futs, fn, which, check, transform, rows, args_of):
        """One task per worker thread over the chunks its worker holds (one round trip,
        as many tasks as worker threads); the results in the order of ``which``, or
        None where a per-row input is not held by the cluster."""
        row_futs = {}
        for r in rows:
            if r is not None:
                got = [_future_of(p) for p in r.parts]
                if any(f is None for f in got):
                    return None
                row_futs[id(r)] = got
        if self._bundles is not None:     # one key per worker thread holds its blocks
            wanted = set(which)
            runs = []
            for addr, idx, bundle in self._bundles:
                pos = [p for p, i in enumerate(idx) if i in wanted]
                if pos:
                    runs.append((addr, [idx[p] for p in pos], (bundle, pos)))
        else:
            holder = self._workers(client, futs)
            sizes = self._block_sizes()
            groups = {}
            for i in which:
                groups.setdefault(holder[i], []).append(i)
            runs = [(addr, run, None) for addr, idx in groups.items()
                    for run in _split_rows(idx, sizes, self._slots.get(addr, 1))]
        tasks = []
        for addr, idx, bundle in runs:
            parts = len(rows) if all(r is None for r in rows) else [
                [None if r is None else row_futs[id(r)][i] for r in rows] for i in idx]
            args = [args_of(i) for i in idx]
            if all(a is args[0] for a in args):       # the same arguments: sent once
                args = args[0]
            head = (_run_group, fn, [futs[i] for i in idx]) if bundle is None else (
                _run_bundle, fn, bundle[0], bundle[1])
            tasks.append(client.submit(
                *head, [self.bounds[i] for i in idx], self.dtype, check, self.n_rows,
                self.name, transform, parts, args, pure=False,
                **({} if addr is None else {"workers": [addr], "allow_other_workers": True})))
        out = {}
        for (_, idx, _), res in zip(runs, client.gather(tasks)):
            out.update(zip(idx, _unpack(res)))
        return [out[i] for i in which]

    def persisted(self):
        """Whether every block is held in memory by a distributed cluster (Dask:
        ``X.persist()`` on a ``distributed.Client``); always False for the local backend."""
        if self.kind != "dask":
            return False
        if self._futs is not None or self._bundles is not None:
            return True
        try:
            from distributed import futures_of
        except ImportError:
            return False
        return len(futures_of(self.X)) == self.n_blocks

    def centred(self, shift):
        """The blocks minus ``shift`` (in the working dtype, the bits of ``X - shift``).

        Dask: a new source over ``X - shift`` persisted on the workers (X's size
        again, the in-memory core's centred copy; released with the source), so
        that later passes need not centre each chunk again. Local: self (a
        memmap is never copied; its passes take the shift as an argument).
        """
        if self.kind != "dask":
            return self
        shift = np.asarray(shift, dtype=self.dtype)
        client, futs = _client(), self._chunk_futures()
        slots = None if client is None or futs is None else _worker_threads(client)
        if not slots:
            Xc = self.X.map_blocks(_centred_block, shift, self.dtype, dtype=self.dtype)
            return BlockSource(Xc.persist(), "dask", self.bounds, self.dtype, name=self.name,
                               checked=self.checked)
        # X held by a cluster: each centred chunk made on the worker chosen for it, rows
        # balanced over the worker threads (the passes then run where the chunks are)
        sizes = self._block_sizes()
        place = _placement(client, futs, sizes, slots, move=True)
        # one key per worker thread holds its centred blocks (a pass's task then has
        # one dependency, not one per block); the dask array's chunks are views of it
        import dask
        import dask.array as da
        from distributed import wait
        groups = {}
        for i, a in enumerate(place):
            groups.setdefault(a, []).append(i)
        bundles = []
        row_bytes = self.n_features * self.dtype.itemsize
        for a, idx in groups.items():
            for run in _split_rows(idx, sizes, slots[a]):
                for piece in _cut_bytes(run, sizes, row_bytes, _BUNDLE_BYTES):
                    bundles.append((a, piece, client.submit(
                        _centred_group, [futs[i] for i in piece], shift, self.dtype,
                        workers=[a], allow_other_workers=True, pure=False)))
        wait([b for _, _, b in bundles])
        chunk = {}
        for _, run, b in bundles:
            for p, i in enumerate(run):
                chunk[i] = da.from_delayed(dask.delayed(operator.getitem, pure=True)(b, p),
                                           shape=(sizes[i], self.n_features), dtype=self.dtype)
        out = BlockSource(da.concatenate([chunk[i] for i in range(self.n_blocks)]), "dask",
                          self.bounds, self.dtype, name=self.name, checked=self.checked)
        out._bundles, out._slots = bundles, slots
        return out

    # ------------------------------------------------------------ passes
    def _args(self, args, per_block, i):
        return args if per_block is None else tuple(args) + (per_block[i],)

    def map(self, fn, *args, rows=(), transform=None, x=True, per_block=None, blocks=None):
        """Per-block results of ``fn``, computed, in block order (a list).

        ``per_block``: a list of one value per block, passed as ``fn``'s last argument.
        ``blocks``: indices of the blocks to run on (in the order given; ``per_block``
        then has one value per given block); default all. A pass over a subset does not
        count as the checking pass.

        Dask: when X is held by a distributed cluster (:meth:`persisted`), one task
        per worker thread runs ``fn`` on chunks its worker holds, in turn (one round
        trip to the cluster, as many tasks as worker threads, no chunk moved; a chunk
        several workers hold goes to the one with fewer rows per thread); otherwise
        one task per chunk. Either way the results are per block, in block order.
        """
        which = range(self.n_blocks) if blocks is None else [int(b) for b in blocks]
        if per_block is not None and blocks is not None:
            per_block = dict(zip(which, per_block))
        check = x and not self.checked
        if self.kind == "local":
            out = []
            for i in which:
                s, e = self.bounds[i]
                raw = self.X[s:e] if x else None
                out.append(_run(fn, raw, self.dtype, check, s, self.n_rows, self.name,
                                transform, self._row_parts(rows, i),
                                self._args(args, per_block, i)))
        else:
            out = None
            client, futs = (_client(), self._chunk_futures()) if x else (None, None)
            if client is not None and (futs is not None or self._bundles is not None and x):
                out = self._map_by_worker(client, futs, fn, which, check, transform, rows,
                                          lambda i: self._args(args, per_block, i))
            if out is None:
                out = self._map_tasks(fn, which, check, transform, rows, args, per_block, x)
        if check and blocks is None:
            self.checked = True
        return out

    def _map_tasks(self, fn, which, check, transform, rows, args, per_block, x):
        """Dask: one task per chunk (``dask.compute`` of delayed calls), in ``which`` order."""
        import dask
        args, transform = _shared(args), _shared_one(transform)
        dblocks = self._dask_blocks()
        tasks = [dask.delayed(_run)(fn, dblocks[i] if x else None, self.dtype, check,
                                    self.bounds[i][0], self.n_rows, self.name, transform,
                                    self._row_parts(rows, i), self._args(args, per_block, i))
                 for i in which]
        return list(dask.compute(*tasks))

    def reduce(self, fn, *args, rows=(), transform=None, x=True, per_block=None, blocks=None):
        """``reduce_partials`` of :meth:`map`: fields summed (integer arrays concatenated)
        left to right in the order of the blocks."""
        return reduce_partials(self.map(fn, *args, rows=rows, transform=transform, x=x,
                                        per_block=per_block, blocks=blocks))

    def map_keep(self, fn, *args, rows=(), transform=None, out=None, dtype=None, width=None,
                 x=True, per_block=None):
        """``fn`` returns ``(per-row values, partial)``: the values are kept in a RowArray.

        Local: written into ``out.values`` block by block (``out`` may be one of
        ``rows``: each block is read before it is overwritten), or a new array.
        Dask: persisted on the workers. Returns ``(RowArray, [partials in block order])``.
        """
        check = x and not self.checked
        if self.kind == "local":
            if out is None:
                shape = (self.n_rows,) if width is None else (self.n_rows, width)
                out = RowArray(self, values=np.empty(shape, dtype=dtype))
            partials = []
            for i, (s, e) in enumerate(self.bounds):
                raw = self.X[s:e] if x else None
                vals, part = _run(fn, raw, self.dtype, check, s, self.n_rows, self.name,
                                  transform, self._row_parts(rows, i),
                                  self._args(args, per_block, i))
                out.values[s:e] = vals
                partials.append(part)
        else:
            import dask
            blocks = self._dask_blocks()
            args, transform = _shared(args), _shared_one(transform)
            pairs = [dask.delayed(_run_keep, nout=2)(
                fn, blocks[i] if x else None, self.dtype, check, s, self.n_rows, self.name,
                transform, self._row_parts(rows, i), self._args(args, per_block, i))
                for i, (s, _) in enumerate(self.bounds)]
            vals, parts = dask.persist([v for v, _ in pairs], [q for _, q in pairs])
            partials = list(dask.compute(*parts))
            dt = np.dtype(dtype) if dtype is not None else (
                out.dtype if out is not None else np.dtype(np.float64))
            if out is None:
                out = RowArray(self, parts=list(vals), dtype=dt, width=width)
            else:
                out.parts = list(vals)
        if check:
            self.checked = True
        return out, partials

    def rowwise(self, fn, *args, rows=(), transform=None, n_columns=None, dtype=np.float64):
        """Per-row output of ``fn`` (a predict/transform): a numpy array (local, filled
        block by block) or a lazy dask array with the source's row chunks (dask)."""
        if self.kind == "local":
            check = not self.checked
            shape = (self.n_rows,) if n_columns is None else (self.n_rows, int(n_columns))
            out = np.empty(shape, dtype=dtype)
            for i, (s, e) in enumerate(self.bounds):
                out[s:e] = _run(fn, self.X[s:e], self.dtype, check, s, self.n_rows, self.name,
                                transform, self._row_parts(rows, i), args)
            self.checked = True
            return out
        import dask
        import dask.array as da
        check = not self.checked
        blocks = self._dask_blocks()
        args, transform = _shared(args), _shared_one(transform)
        parts = []
        for i, (s, e) in enumerate(self.bounds):
            d = dask.delayed(_run)(fn, blocks[i], self.dtype, check, s, self.n_rows, self.name,
                                   transform, self._row_parts(rows, i), args)
            shape = (e - s,) if n_columns is None else (e - s, int(n_columns))
            parts.append(da.from_delayed(d, shape=shape, dtype=dtype))
        return da.concatenate(parts)

    # ------------------------------------------------------------- rows
    def rows(self, values, dtype=None):
        """Wrap a per-row array (numpy; for Dask also a dask array) as a RowArray, or None."""
        if values is None:
            return None
        if isinstance(values, RowArray):
            return values
        if self.kind == "local":
            v = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
            if v.shape[0] != self.n_rows:
                raise ValueError(f"a per-row array has {v.shape[0]} rows, X has {self.n_rows}.")
            return RowArray(self, values=v)
        import dask
        import dask.array as da
        v = values if is_dask_array(values) else da.from_array(np.asarray(values))
        if v.shape[0] != self.n_rows:
            raise ValueError(f"a per-row array has {v.shape[0]} rows, X has {self.n_rows}.")
        if dtype is not None:
            v = v.astype(dtype)
        chunks = (tuple(self._block_sizes()),) + tuple((c,) for c in v.shape[1:])
        v = v.rechunk(chunks)
        parts = dask.persist(*v.to_delayed().ravel())
        return RowArray(self, parts=list(parts), dtype=v.dtype,
                        width=None if v.ndim == 1 else int(v.shape[1]))

    def full(self, value, dtype):
        """A RowArray filled with ``value``."""
        if self.kind == "local":
            return RowArray(self, values=np.full(self.n_rows, value, dtype=dtype))
        import dask
        parts = dask.persist(*[dask.delayed(_fill)(e - s, value, dtype) for s, e in self.bounds])
        return RowArray(self, parts=list(parts), dtype=dtype)

    def take_rows(self, index):
        """Rows ``index`` (int, any order, repeats allowed) of X in the working dtype.

        Local: a memmap/ndarray by fancy indexing of the sorted unique rows (only
        their pages are read), another row-sliceable array one block at a time.
        Dask: ``X[rows]`` (only the chunks that hold them are read).
        """
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= self.n_rows):
            raise IndexError(f"row index out of range for {self.name} with {self.n_rows} rows.")
        uniq, inverse = np.unique(index, return_inverse=True)
        if self.kind == "dask":
            got = np.asarray(self.X[uniq].compute())
        elif isinstance(self.X, np.ndarray):
            got = np.asarray(self.X[uniq])
        else:
            got = np.empty((uniq.size, self.n_features), dtype=self.dtype)
            lo = 0
            for s, e in self.bounds:
                hi = int(np.searchsorted(uniq, e, side="left"))
                if hi > lo:
                    got[lo:hi] = _as_block(self.X[s:e], self.dtype)[uniq[lo:hi] - s]
                lo = hi
        got = _as_block(got, self.dtype)
        return got[inverse.reshape(-1)]


def source(X, *, block_rows=None, name="X", n_threads=None):
    """A :class:`BlockSource` over X: Dask for a ``dask.array.Array``, local otherwise.

    Parameters
    ----------
    X : np.memmap, row-sliceable 2-D array, ndarray or dask array
        A dask array must have known row chunk sizes and be validated by
        the caller (``metriclust._dask.check_dask_array``: one column chunk).
    block_rows : int, optional
        Local backend: rows per block (default
        :func:`metriclust._core.blockwise.default_block_rows`, 64 MiB of input).
        Ignored for Dask (the chunks are the blocks).
    """
    if isinstance(X, BlockSource):
        return X
    if is_dask_array(X):
        dtype = np.dtype(X.dtype)
        if dtype not in (np.float32, np.float64):
            dtype = np.dtype(np.float64)
        bounds = []
        s = 0
        for c in X.chunks[0]:
            bounds.append((s, s + int(c)))
            s += int(c)
        return BlockSource(X, "dask", bounds, dtype, name=name)
    if not (isinstance(X, np.ndarray) or is_out_of_core(X)):
        raise TypeError(f"{name} must be an array with row slicing, got {type(X).__name__}.")
    n, p, dtype = check_out_of_core(X, name=name)
    if block_rows is None:
        block_rows = default_block_rows(p, dtype.itemsize)
    if isinstance(block_rows, bool) or not isinstance(block_rows, numbers.Integral) \
            or block_rows < 1:
        raise ValueError(f"block_rows must be an int >= 1, got {block_rows!r}.")
    return BlockSource(X, "local", row_blocks(n, block_rows), dtype, name=name,
                       n_threads=n_threads)
