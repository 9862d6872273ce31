"""The one k-means core every method calls (SPEC 0.1).

CONTRACT (stable; callers rely on it):

    kmeans(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
           max_iter=300, tol=1e-4, algorithm="lloyd", random_state=None,
           n_threads=None, verbose=0) -> KMeansResult(centers, labels, inertia, n_iter)
    assign_labels(X, centers, *, n_threads=None) -> (labels int64, sq_distances)
    cluster_means(X, labels, n_clusters, *, sample_weight=None) -> (means float64, weights)

X is a validated C-contiguous float32/float64 array (callers validate);
``init`` is "k-means++", "random" or an (n_clusters, p) array of centers
(then n_init must be 1). ``tol`` is relative to the mean feature variance,
as in scikit-learn. Same random_state -> same result for any thread count.

TEMPORARY: a plain numpy implementation until the C core lands.
"""

from collections import namedtuple

import numpy as np

from .._kernels._sums import cluster_sums
from .validation import check_random_state

__all__ = ["KMeansResult", "kmeans", "assign_labels", "cluster_means"]

KMeansResult = namedtuple("KMeansResult", ["centers", "labels", "inertia", "n_iter"])


def cluster_means(X, labels, n_clusters, *, sample_weight=None):
    """Per-cluster (weighted) means of X's rows and the clusters' total weights.

    Empty clusters get a zero row and weight 0.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if sample_weight is None:
        sums = cluster_sums(X, labels, n_clusters)
        weights = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        sums = cluster_sums(np.ascontiguousarray(X * w[:, None].astype(X.dtype)), labels, n_clusters)
        weights = np.bincount(labels, weights=w, minlength=n_clusters)
    means = np.divide(sums, weights[:, None], out=np.zeros_like(sums), where=weights[:, None] > 0)
    return means, weights


def assign_labels(X, centers, *, n_threads=None):
    """Nearest center of each row: labels and squared distances."""
    d2 = (np.einsum("ij,ij->i", X, X)[:, None] - 2 * X @ centers.T
          + np.einsum("ij,ij->i", centers, centers)[None, :])
    labels = np.argmin(d2, axis=1).astype(np.int64)
    best = np.maximum(d2[np.arange(len(X)), labels], 0)
    return labels, best


def _kmeans_plusplus(X, k, w, rng):
    n = X.shape[0]
    centers = np.empty((k, X.shape[1]), dtype=X.dtype)
    first = rng.choice(n, p=w / w.sum())
    centers[0] = X[first]
    d2 = ((X - centers[0]) ** 2).sum(1)
    n_trials = 2 + int(np.log(k))
    for c in range(1, k):
        pot = d2 * w
        if pot.sum() <= 0:
            idx = rng.integers(n, size=n_trials)
        else:
            idx = rng.choice(n, size=n_trials, p=pot / pot.sum())
        cand = ((X[idx, None, :] - X[None, :, :]) ** 2).sum(2)
        cand = np.minimum(cand, d2[None, :])
        best = int(np.argmin((cand * w).sum(1)))
        centers[c] = X[idx[best]]
        d2 = cand[best]
    return centers


def _lloyd(X, centers, w, max_iter, tol):
    labels = None
    for it in range(1, max_iter + 1):
        labels, d2 = assign_labels(X, centers)
        new, weights = cluster_means(X, labels, len(centers), sample_weight=w)
        empty = np.flatnonzero(weights == 0)
        if empty.size:
            far = np.argsort(-d2, kind="stable")[: empty.size]
            new[empty] = X[far]
        new = new.astype(X.dtype)
        shift = ((new - centers) ** 2).sum()
        centers = new
        if shift <= tol:
            break
    labels, d2 = assign_labels(X, centers)
    return centers, labels, float((d2 * w).sum()), it


def kmeans(X, n_clusters, *, sample_weight=None, init="k-means++", n_init=1,
           max_iter=300, tol=1e-4, algorithm="lloyd", random_state=None,
           n_threads=None, verbose=0):
    """Run k-means with ``n_init`` restarts and keep the lowest inertia."""
    rng = check_random_state(random_state)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    abs_tol = tol * float(np.mean(np.var(X, axis=0))) if X.size else 0.0
    best = None
    for _ in range(n_init):
        if isinstance(init, np.ndarray):
            centers = np.array(init, dtype=X.dtype)
        elif init == "random":
            centers = X[rng.choice(X.shape[0], n_clusters, replace=False)].copy()
        else:
            centers = _kmeans_plusplus(X, n_clusters, w, rng)
        res = KMeansResult(*_lloyd(X, centers, w, max_iter, abs_tol))
        if best is None or res.inertia < best.inertia:
            best = res
    return best
