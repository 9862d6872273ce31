"""Inputs for the tests of data read block by block (memmaps, row-sliceable arrays, Dask).

One copy of each, shared by test_out_of_core*.py and test_dask*.py.
"""

import numpy as np


def memmap(tmp_path, X, name="X.npy"):
    """X saved as .npy and opened read-only with mmap_mode="r"."""
    path = tmp_path / name
    np.save(path, X)
    return np.load(path, mmap_mode="r")


class RowSliceable:
    """An h5py/zarr-like array: shape, dtype, row slicing, not an ndarray."""

    def __init__(self, a):
        self._a = a
        self.shape = a.shape
        self.dtype = a.dtype

    def __getitem__(self, key):
        return np.array(self._a[key])


class Recording(RowSliceable):
    """Row-sliceable, and records how many rows each read fetched."""

    def __init__(self, a):
        super().__init__(a)
        self.reads = []

    def __getitem__(self, key):
        out = super().__getitem__(key)
        self.reads.append(out.shape[0] if out.ndim else 1)
        return out


def blobs(n, p, k, seed, spread=1.0):
    """n points around k random centers (scale 4) in p dimensions, and their labels."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(k, p))
    y = rng.integers(k, size=n)
    return centers[y] + spread * rng.normal(size=(n, p)), y


def similar_pairs(y, m, rng):
    """m random same-label pairs (i != j, with replacement)."""
    S = []
    while len(S) < m:
        i, j = rng.integers(len(y), size=2)
        if i != j and y[i] == y[j]:
            S.append((i, j))
    return np.array(S, dtype=np.int64)


def cpd_nystrom(**kw):
    """The CPDUML of the out-of-core and Dask tests: Nystrom (m = 30), 3 clusters,
    random_state=0; keyword arguments override. kernel=None: the in-memory fit's
    "auto" kernel k-means reference has no block path."""
    from metriclust import CPDUML

    base = dict(n_clusters=3, sigma=0.5, lam=1e-3, approximation="nystrom", n_components=30,
                kernel=None, n_init=3, random_state=0)
    base.update(kw)
    return CPDUML(**base)
