"""Dask arrays: input checks and the estimators' entry points, on the block engine.

Public classes and functions:

.. autosummary::

   check_dask_array     -- a 2-D float Dask array with one column chunk
   kmeans               -- Lloyd's k-means of a Dask array
   seed_centers         -- initial centers by a scalable seeding
   predict_labels       -- lazy nearest-center labels, X's row chunks
   transform_distances  -- lazy distances to the centers, X's row chunks

Imported only when an estimator is given a ``dask.array.Array`` (``import
metriclust`` never imports Dask). Every pass runs on the one block engine
(:mod:`metriclust._core.engine`, Dask backend): one task per row chunk (for X
persisted on a distributed cluster, one task per worker thread over the chunks
its worker holds), the same per-block functions and C kernels as for a memmap,
the small partials (``k x p`` sums and counts, ``p x p`` moments and R factors,
``m x m`` Nystrom products) reduced on the client in chunk order, so the result does
not depend on which worker finished first and equals the in-memory fit of the
same data from the same start up to the order of the floating-point sums.
Per-row state (labels, k-means|| distances) stays on the workers; labels,
predictions and transforms are returned as lazy dask arrays with X's row chunks.

Whatever scheduler is active runs the tasks: a ``distributed.Client`` if one
exists, else Dask's local threads. The kernels of one task run on one OpenMP
thread: Dask supplies the parallelism (one task per worker thread).

CONTRACT (used by the estimators):

    check_dask_array(X, *, name="X", ensure_min_samples=1) -> X (float, one column chunk)
    kmeans(X, n_clusters, *, sample_weight, init, n_init, max_iter, tol, random_state,
           verbose) -> KMeansResult(centers, labels (dask), inertia, n_iter)
    seed_centers(X, n_clusters, *, init, sample_weight, random_state) -> centers
    predict_labels(X, centers) -> lazy dask array of int64, X's row chunks
    transform_distances(X, centers) -> lazy dask array (n, k), X's row chunks
    inertia(X, centers, sample_weight=None) -> float (KMeans.score)
    affine_map(X, coef, intercept) -> lazy X @ coef + intercept, X's row chunks
    pair_rows(X, [pairs, ...]) -> (rows of X the pairs touch, float64; pairs re-indexed)
    covariance(X) -> sample covariance by block moments
    column_mean_and_variance(X, w=None) -> (mean, var)
    rowwise(X, estimator, method, n_columns=None, dtype) -> lazy per-chunk method calls
"""

import math

import numpy as np

from ._core import streaming
from ._core.engine import source
from ._core.kmeans import shifted_centers
from ._core.validation import check_random_state

__all__ = ["check_dask_array", "kmeans", "predict_labels", "seed_centers",
           "transform_distances"]

#: Rounds of k-means|| sampling (see :func:`metriclust._core.streaming.kmeans_parallel`).
KMEANS_PARALLEL_ROUNDS = streaming.KMEANS_PARALLEL_ROUNDS


def check_dask_array(X, *, name="X", ensure_min_samples=1):
    """A 2-D Dask array of float32/float64 (other numbers become float64), one column chunk.

    Row chunks must have known sizes. NaN and infinity are found by the
    first pass over the data, which raises a ValueError naming the row.
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


def kmeans(X, n_clusters, *, sample_weight=None, init="k-means||", n_init=1, max_iter=300,
           tol=1e-4, random_state=None, verbose=0):
    """Lloyd's k-means of a Dask array (:func:`metriclust._core.streaming.kmeans_blockwise`
    on the Dask backend); ``labels`` is a lazy int32 dask array with X's row chunks."""
    return streaming.kmeans_blockwise(X, n_clusters, sample_weight=sample_weight, init=init,
                                      n_init=n_init, max_iter=max_iter, tol=tol,
                                      random_state=random_state, verbose=verbose)


def seed_centers(X, n_clusters, *, init="k-means||", sample_weight=None, random_state=None):
    """Initial centers of a Dask array by a scalable seeding (returned, not fitted).

    ``"k-means||"`` (Bahmani et al. 2012; :func:`metriclust._core.streaming.kmeans_parallel`)
    or ``"k-means++"`` (the core's greedy k-means++ on a uniform sample of
    :data:`metriclust._core.streaming.SEED_SAMPLE_SIZE` rows).
    """
    if init not in ("k-means||", "k-means++"):
        raise ValueError(f"init must be 'k-means||' or 'k-means++', got {init!r}.")
    src = source(check_dask_array(X))
    w, _ = streaming._check_weights(src, sample_weight)
    shift = np.zeros(src.n_features, dtype=src.dtype)
    return np.asarray(streaming.seed(src, n_clusters, init, shift, w,
                                     check_random_state(random_state)), dtype=src.dtype)


def predict_labels(X, centers):
    """Lazy labels of the nearest centers, int64, with X's row chunks."""
    shift, C = shifted_centers(centers, X.dtype)
    return streaming.predict_labels(source(X), C, shift)


def transform_distances(X, centers):
    """Lazy Euclidean distances to the centers, (n, k) in X's dtype, X's row chunks."""
    shift, C = shifted_centers(centers, X.dtype)
    return streaming.distances(source(X), C, shift)


def inertia(X, centers, sample_weight=None):
    """``sum_i w_i min_k ||x_i - c_k||^2`` of a dask array (KMeans.score), one pass."""
    shift, C = shifted_centers(centers, X.dtype)
    return streaming.inertia(source(X), C, shift, sample_weight)


def affine_map(X, coef, intercept):
    """Lazy ``X @ coef + intercept`` in X's dtype, with X's row chunks."""
    return streaming.transform_rows(source(X), streaming.Affine(coef, intercept))


def pair_rows(X, pairs):
    """The rows of X that ``pairs`` touch, as float64, and ``pairs`` re-indexed into them
    (:func:`metriclust._core.streaming.take_pair_rows`: only the chunks that hold them)."""
    E, out, _ = streaming.take_pair_rows(X, pairs)
    return E, out


def column_mean_and_variance(X, w=None, *, name="X"):
    """Weighted column means and variances of X (float64), two passes."""
    src = source(X, name=name)
    return streaming.column_mean_and_variance(src, None if w is None else src.rows(w))


def _moments_block(block, mean):
    B = block.astype(np.float64) - mean
    return float(B.shape[0]), B.sum(axis=0), B.T @ B


def covariance(X):
    """Sample covariance (float64, ``N - 1`` in the denominator) by block moments about the mean."""
    src = source(X)
    mean, _ = streaming.column_mean_and_variance(src, with_variance=False)
    total, dev_sum, cross = src.reduce(_moments_block, mean)
    C = cross - np.outer(dev_sum, dev_sum) / total
    return C / max(total - 1.0, 1.0)


def _method_block(block, estimator, method):
    return getattr(estimator, method)(np.asarray(block))


def rowwise(X, estimator, method, n_columns=None, dtype=np.float64):
    """Lazy ``estimator.<method>(chunk)`` of every row chunk of X (a row-wise map).

    For methods whose output row depends on the input row only (a fitted
    transform or predict); the fitted estimator is shipped with the tasks.
    ``n_columns`` None gives a 1-D result (labels), else ``(n, n_columns)``.
    """
    return source(X).rowwise(_method_block, estimator, method, n_columns=n_columns,
                             dtype=dtype)
