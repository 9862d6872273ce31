"""Starting partitions for CPCM's search (SPEC 2, notes from experiments).

Three kinds, all through the one k-means core (:mod:`metriclust._core.kmeans`):

- ``random``: balanced random partitions, the paper's protocol (Algorithm 1);
- ``feature``: 1-D k-means on each single feature, from its quantiles;
- ``kmeans``: k-means++ on a whitened space (for the linear predictors the
  least-squares basis ``(X - mean) W``, shared with the predictor's QR, so these
  starts keep CPCM's affine invariance; for the kernel predictor the leading
  kernel-PCA coordinates).
"""

import numpy as np

from .kmeans import kmeans
from .threads import small_problem_threads

__all__ = ["random_partition", "feature_partition", "kmeans_partition", "canonical",
           "cluster_sizes"]


def cluster_sizes(labels, n_clusters):
    """Number of points in each cluster (length ``n_clusters``)."""
    return np.bincount(labels, minlength=n_clusters)


def canonical(labels):
    """Relabel clusters by order of first appearance (equal for equal partitions)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse.reshape(-1)].astype(np.int64)


def random_partition(n_samples, n_clusters, rng):
    """A balanced random partition: cluster sizes differ by at most one."""
    labels = np.arange(n_samples, dtype=np.int64) % n_clusters
    rng.shuffle(labels)
    return labels


def feature_partition(column, n_clusters, *, seed):
    """1-D k-means of one feature (an (N, 1) array), started from its quantiles."""
    q = (np.arange(n_clusters) + 0.5) / n_clusters
    init = np.quantile(column[:, 0], q).reshape(-1, 1).astype(column.dtype)
    nt = small_problem_threads(column.size, None)
    return kmeans(column, n_clusters, init=init, n_init=1, random_state=seed,
                  n_threads=nt).labels


def kmeans_partition(F, n_clusters, *, seed):
    """k-means++ (one seeding) of the rows of ``F``."""
    nt = small_problem_threads(F.size, None)
    return kmeans(F, n_clusters, init="k-means++", n_init=1, random_state=seed,
                  n_threads=nt).labels
