"""Starting partitions for CPCM's search (SPEC 2, notes from experiments).

Three kinds, all through the one k-means core (:mod:`metriclust._core.kmeans`):

- ``random``: balanced random partitions, the paper's protocol (Algorithm 1);
- ``feature``: 1-D k-means on each single feature, from its quantiles;
- ``direction``: 1-D k-means along the fourth-moment (FOBI) directions of the
  whitened data, which do not depend on the basis (affine-invariant);
- ``kmeans``: k-means++ on a whitened space (for the linear predictors the
  least-squares basis ``(X - mean) W``, shared with the predictor's QR, so these
  starts keep CPCM's affine invariance; for the kernel predictor the leading
  kernel-PCA coordinates).
"""

import numpy as np

from .kmeans import kmeans
from .threads import small_problem_threads

__all__ = ["random_partition", "feature_partition", "kmeans_partition", "canonical",
           "cluster_sizes", "kurtosis_directions"]


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


def kurtosis_directions(Q):
    r"""Projections of whitened data on its fourth-moment directions, most non-Gaussian first.

    ``Q`` (N x r) is a whitened basis of the centered data (orthonormal columns,
    e.g. ``(X - mean) W``). The eigenvectors ``v`` of
    ``M = \sum_i \|q_i\|^2 q_i q_i^T`` (Cardoso's FOBI, 1989) are the directions
    along which the kurtosis is stationary; clusters show as directions of low
    kurtosis (multimodal), a small far cluster as high kurtosis. For a Gaussian
    every eigenvalue is about ``(r + 2) / N``; directions are returned in order of
    ``|N lambda - (r + 2)|``, largest first, as the columns of ``Q V``.

    ``Q`` of an affine image ``X A + b`` is ``Q R`` for an orthogonal ``R``, so
    ``M`` becomes ``R^T M R`` and the projections ``Q V`` are the same up to sign:
    partitions built from them do not depend on the basis of the features.
    """
    n, r = Q.shape
    if r == 0:
        return np.empty((n, 0), dtype=Q.dtype)
    sq = np.einsum("ij,ij->i", Q, Q)
    M = (Q * sq[:, None]).T @ Q
    lam, V = np.linalg.eigh(M)
    order = np.argsort(-np.abs(n * lam - (r + 2)), kind="stable")
    return np.ascontiguousarray(Q @ V[:, order])
