"""What a partition of the rows of a data matrix determines: sizes, sums, means, scatter.

A partition is an int64 label vector with codes in ``[0, n_clusters)``. This
module is the one owner of the per-cluster quantities every method computes
from one: CPCM's criterion and its warning on perfectly predicted clusters,
CPD-UML's objective and Y-step, the metrics, ISODATA and the constraints.

.. autosummary::

   cluster_sizes        -- points per cluster
   cluster_sums         -- per-cluster row sums and sizes (one C pass)
   cluster_means        -- per-cluster (weighted) means and total weights
   scatter              -- within-cluster sums of squares and the between-cluster one
   within_ss            -- the total within-cluster sum of squares (k-means' inertia)
   blur_ratio           -- within over total sum of squares (the CPCM criterion)
   within_shares        -- each cluster's within sum of squares over the total
   contingency_table    -- counts of each pair of labels of two labelings (one C pass)
   same_partition       -- equal up to a renaming of the clusters
   same_partition_table -- the same test on a contingency table
   canonical            -- relabel by order of first appearance
   lloyd_from_partition -- Lloyd's k-means started from a partition's means

The scatter is computed one way: the within-cluster sums of squares as sums of
squared deviations from the cluster means, and the total as within plus
between (``SST = SSW + SSB``, every term non-negative). The textbook form
``1 - SSB / SST`` cancels when the clusters are tight: at a blur ratio of
1e-10 it keeps about six correct digits, this form all of them.
"""

from collections import namedtuple

import numpy as np

from .._kernels import _sums
from .kmeans import kmeans
from .threads import small_problem_threads

__all__ = ["Scatter", "cluster_sizes", "cluster_sums", "cluster_means", "scatter", "within_ss",
           "blur_ratio", "within_shares", "contingency_table", "same_partition",
           "same_partition_table", "canonical", "lloyd_from_partition"]

# Floats per block when streaming over X: one block x p float64 buffer of 16 MB at most.
_BLOCK_FLOATS = 2**21

#: Within-cluster sums of squares (one per cluster, float64) and the
#: between-cluster sum of squares ``sum_k n_k ||mean_k - mean||^2`` (a float).
Scatter = namedtuple("Scatter", ["within", "between"])


def cluster_sizes(labels, n_clusters):
    """Number of points in each cluster (int64, length ``n_clusters``)."""
    return np.bincount(labels, minlength=n_clusters)


def cluster_sums(X, labels, n_clusters, n_threads=0):
    """Per-cluster row sums ``Z^T X`` (K x p, float64) for the one-hot ``Z`` of
    ``labels``, and the cluster sizes (float64).

    ``X`` is C-contiguous float32/float64; small problems run serially in C
    whatever ``n_threads`` says, and the sums are reduced in a fixed order.
    """
    sums = _sums.cluster_sums(X, labels, n_clusters, n_threads)
    return sums, np.bincount(labels, minlength=n_clusters).astype(np.float64)


def cluster_means(X, labels, n_clusters, *, sample_weight=None):
    """Per-cluster (weighted) means of X's rows (float64) and the clusters' total weights.

    Empty clusters get a zero row and weight 0.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if sample_weight is None:
        sums, weights = cluster_sums(X, labels, n_clusters)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        sums = _sums.cluster_sums(np.ascontiguousarray(X * w[:, None].astype(X.dtype)),
                                  labels, n_clusters, 0)
        weights = np.bincount(labels, weights=w, minlength=n_clusters)
    means = np.divide(sums, weights[:, None], out=np.zeros_like(sums), where=weights[:, None] > 0)
    return means, weights


def _within(X, labels, means, n_clusters, per_cluster):
    """Sum of ``||x_i - means[labels[i]]||^2``, per cluster or in all, streamed in
    row blocks through one float64 buffer (the deviations themselves: no cancellation)."""
    n, p = X.shape
    block = max(1, min(n, _BLOCK_FLOATS // max(p, 1)))
    buf = np.empty((block, p))
    within = np.zeros(n_clusters) if per_cluster else 0.0
    for start in range(0, n, block):
        lab = labels[start:start + block]
        dev = buf[:lab.shape[0]]
        np.take(means, lab, axis=0, out=dev, mode="clip")   # labels are valid codes
        np.subtract(X[start:start + block], dev, out=dev)
        if per_cluster:
            within += np.bincount(lab, weights=np.einsum("ij,ij->i", dev, dev),
                                  minlength=n_clusters)
        else:
            within += float(np.einsum("ij,ij->", dev, dev))
    return within


def _means_and_between(X, labels, n_clusters, n_threads):
    sums, counts = cluster_sums(X, labels, n_clusters, n_threads)
    means = sums / np.maximum(counts, 1.0)[:, None]
    n = counts.sum()
    dev = means - sums.sum(axis=0) / n if n > 0 else means
    return means, float(np.einsum("k,kj,kj->", counts, dev, dev))


def scatter(X, labels, n_clusters, n_threads=0):
    r"""Within-cluster sums of squares and the between-cluster sum of squares.

    .. math:: W_k = \sum_{c(i)=k} \|x_i - \mu_k\|^2, \qquad
              B = \sum_k n_k \|\mu_k - \bar x\|^2,

    so that the total sum of squares is ``W.sum() + B`` (Huygens). ``W_k`` is
    summed from the deviations themselves, in row blocks (no N x p temporary),
    and never as a difference of large terms. Returns a :data:`Scatter`.
    """
    means, between = _means_and_between(X, labels, n_clusters, n_threads)
    return Scatter(_within(X, labels, means, n_clusters, True), between)


def within_ss(X, labels, n_clusters, n_threads=0):
    """Total within-cluster sum of squares ``sum_i ||x_i - mu_c(i)||^2`` (float), as
    :func:`scatter` computes it, without the per-cluster split."""
    means, _ = _means_and_between(X, labels, n_clusters, n_threads)
    return float(_within(X, labels, means, n_clusters, False))


def blur_ratio(Z, labels, n_clusters, n_threads=0):
    r"""Blur ratio ``SSC / SST`` of a partition of the rows of ``Z``.

    .. math:: BR = \frac{\sum_i \|z_i - \theta_{c(i)}\|^2}
                         {\sum_i \|z_i - \bar z\|^2},
              \qquad \theta_k = \mathrm{mean}_{c(i)=k}\, z_i

    (Gupta, Foster & Ungar 2008, Sec. 2), from :func:`scatter`:
    ``W.sum() / (W.sum() + B)``. Returns 1.0 when the total is zero (nothing
    is separated).
    """
    means, between = _means_and_between(Z, labels, n_clusters, n_threads)
    within = float(_within(Z, labels, means, n_clusters, False))
    total = within + between
    if not total > 0.0:
        return 1.0
    return min(1.0, within / total)


def within_shares(Z, labels, n_clusters, n_threads=0):
    """Each cluster's within-cluster sum of squares over the total (ones when the
    total is zero)."""
    s = scatter(Z, labels, n_clusters, n_threads)
    total = float(s.within.sum()) + s.between
    return s.within / total if total > 0 else np.ones(n_clusters)


def contingency_table(a, b, ka, kb):
    """The ``(ka, kb)`` int64 table of counts of ``(a[i], b[i])``: int64 label
    vectors of one length with codes in ``[0, ka)`` and ``[0, kb)``."""
    return _sums.contingency(a, b, ka, kb)


def same_partition(a, b, n_clusters):
    """True when label vectors ``a`` and ``b`` define the same partition (any permutation)."""
    return same_partition_table(contingency_table(a, b, n_clusters, n_clusters))


def same_partition_table(table):
    """True when a contingency table has at most one non-zero cell in each row and
    column: its two labelings are the same partition (empty clusters aside)."""
    nz = table > 0
    return bool(np.all(nz.sum(0) <= 1) and np.all(nz.sum(1) <= 1))


def canonical(labels):
    """Relabel clusters by order of first appearance (equal for equal partitions)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse.reshape(-1)].astype(np.int64)


def lloyd_from_partition(X, labels, n_clusters, *, max_iter=300, tol=0.0, n_threads=None):
    """Labels after Lloyd's k-means on ``X`` started from the means of ``labels``.

    Each Lloyd step lowers the within-cluster sum of squares, so the result is
    never worse than ``labels`` (the Y-step of CPD-UML, the clustering stage of
    CPCM). ``tol`` is the k-means core's (relative to the mean feature
    variance); ``n_threads=None`` runs small problems on one thread. An empty
    cluster starts at the origin, as its zero mean.
    """
    means, _ = cluster_means(X, labels, n_clusters)
    if n_threads is None:
        n_threads = small_problem_threads(X.size)
    return kmeans(X, n_clusters, init=means.astype(X.dtype, copy=False), n_init=1,
                  max_iter=max_iter, tol=tol, n_threads=n_threads).labels
