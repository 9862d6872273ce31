"""Slow, obviously-correct numpy references shared by the test files.

One helper per quantity, written straight from its definition (no GEMM form, no
cancelling identities, no metriclust code), so that every test compares the
library against the same thing; and ``float_arrays``, the one walker the
robustness and property tests check the finiteness of a result with.
"""

import itertools

import numpy as np


def sq_distances(X, Y=None):
    """``||x_i - y_j||^2`` from direct float64 differences (``Y=None``: ``Y = X``)."""
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    return ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)


def gaussian_gram(X, Y, sigma):
    """``exp(-||x_i - y_j||^2 / (2 sigma^2))`` from :func:`sq_distances`.

    ``Y=None`` means ``Y = X``.
    """
    return np.exp(-sq_distances(X, Y) / (2.0 * sigma**2))


def lsr_prediction(X, labels, n_clusters):
    """``Zhat``: least squares of the one-hot memberships on ``[1, X]`` (Gupta,
    Foster & Ungar 2008, Sec. 3.1), by numpy's SVD solver."""
    A = np.column_stack([np.ones(len(X)), np.asarray(X, dtype=np.float64)])
    Z = np.eye(n_clusters)[np.asarray(labels)]
    return A @ np.linalg.lstsq(A, Z, rcond=None)[0]


def blur_ratio(Z, labels):
    """``SSC / SST`` (Gupta, Foster & Ungar 2008, Sec. 2): squared deviations from
    each cluster's mean over squared deviations from the overall mean."""
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels)
    ssc = sum(((Z[labels == k] - Z[labels == k].mean(0)) ** 2).sum()
              for k in np.unique(labels))
    return ssc / ((Z - Z.mean(0)) ** 2).sum()


def clustering_accuracy(labels_true, labels_pred):
    """Best one-to-one matching of clusters to classes, by trying every matching.

    Exhaustive over the permutations of the larger label set taken as many at a
    time as the smaller one has labels: use it with a handful of clusters.
    """
    a, b = np.asarray(labels_true), np.asarray(labels_pred)
    ua, ub = np.unique(a), np.unique(b)
    best = 0
    if len(ub) <= len(ua):
        for perm in itertools.permutations(ua, len(ub)):
            best = max(best, sum(np.sum((b == k) & (a == c)) for k, c in zip(ub, perm)))
    else:
        for perm in itertools.permutations(ub, len(ua)):
            best = max(best, sum(np.sum((a == c) & (b == k)) for c, k in zip(ua, perm)))
    return best / len(a)


def float_arrays(obj, seen=None):
    """Yield every float array / float scalar reachable from a result: arrays,
    scalars, tuples, lists, dicts, and the learned attributes (``name_``) of an
    object such as a fitted estimator. Not a reference: the walker the
    robustness and property tests check finiteness with."""
    if seen is None:
        seen = set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc":
            yield obj
        return
    if isinstance(obj, (float, np.floating)):
        yield np.asarray(obj)
        return
    if isinstance(obj, (tuple, list)):
        for item in obj:
            yield from float_arrays(item, seen)
        return
    if isinstance(obj, dict):
        for item in obj.values():
            yield from float_arrays(item, seen)
        return
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        for key, item in vars(obj).items():
            if key.endswith("_") and not key.startswith("_"):
                yield from float_arrays(item, seen)
