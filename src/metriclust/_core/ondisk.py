"""Whether an input lives on disk (read by row blocks) rather than in memory.

Public functions:

.. autosummary::

   is_out_of_core  -- whether X is read by row blocks (memmap, h5py/zarr, row-sliceable)

A module of its own, importing only numpy and the standard library, so that an
estimator can ask the question without loading the block machinery of
:mod:`metriclust._core.blockwise` (which re-exports it) and the k-means kernels
under it.
"""

import mmap

import numpy as np

__all__ = ["is_out_of_core"]


def _is_memmap_backed(arr):
    # A memmap, or an ndarray view whose chain of bases ends in one (what
    # np.asarray(memmap) and slicing give).
    base = arr
    while base is not None:
        if isinstance(base, (np.memmap, mmap.mmap)):
            return True
        base = getattr(base, "base", None)
    return False


def is_out_of_core(X):
    """Whether X is read from disk in row blocks rather than loaded whole.

    Parameters
    ----------
    X : object
        The data given to ``fit`` (or ``predict``).

    Returns
    -------
    bool
        True for an ``np.memmap`` (and an ndarray view of one, e.g. a ``.npy``
        opened with ``np.load(..., mmap_mode="r")``), and for a 2-D array-like
        that has ``.shape``, a numpy ``.dtype`` and row slicing but is not an
        in-memory ndarray (h5py and zarr datasets). False for in-memory
        arrays, lists, sparse matrices, DataFrames and Dask arrays (Dask
        arrays have their own path).
    """
    if isinstance(X, np.ndarray):
        return _is_memmap_backed(X)
    if hasattr(X, "__dask_graph__") or hasattr(X, "tocsr"):
        return False
    shape = getattr(X, "shape", None)
    dtype = getattr(X, "dtype", None)
    if shape is None or dtype is None or not hasattr(X, "__getitem__"):
        return False
    try:
        dtype = np.dtype(dtype)
        ndim = len(shape)
    except TypeError:
        return False
    return ndim == 2 and dtype.kind in "biuf"
