"""Choosing the number of clusters: distortion elbow, silhouette and gap statistic.

Public functions and classes:

.. autosummary::

   KSelection                 -- result of select_n_clusters: one value per K and criterion
   select_n_clusters          -- fit a clusterer for each K and score it
   within_cluster_distortion  -- sum of squared distances of rows to their cluster mean
"""

import numbers
from dataclasses import dataclass, field

import numpy as np

from ._core.partition import within_ss
from ._core.validation import check_array, check_random_state, check_scalar

__all__ = ["KSelection", "select_n_clusters", "within_cluster_distortion"]

_CRITERIA = ("distortion", "silhouette", "gap")


def within_cluster_distortion(X, labels):
    """Sum of squared distances of the rows to their cluster's mean (the notes' e^2)."""
    labels = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)
    return within_ss(X, labels, int(labels.max()) + 1)


@dataclass
class KSelection:
    """Result of :func:`select_n_clusters`: one value per K of ``n_clusters``.

    ``best`` maps each criterion to its suggested K: the elbow of the
    distortion curve, the K of the largest mean silhouette, and the gap
    statistic's smallest K with ``gap[K] >= gap[K+1] - gap_std[K+1]``.
    """

    n_clusters: np.ndarray
    distortion: np.ndarray
    silhouette: np.ndarray = None
    gap: np.ndarray = None
    gap_std: np.ndarray = None
    best: dict = field(default_factory=dict)


def _elbow(ks, distortion):
    """The K farthest below the chord from the first to the last point of the
    curve, both axes scaled to [0, 1] (a "knee" rule; the notes name no formula)."""
    if len(ks) < 3:
        return int(ks[0])
    x = (ks - ks[0]) / (ks[-1] - ks[0])
    span = distortion[0] - distortion[-1]
    y = (distortion - distortion[-1]) / span if span > 0 else np.zeros_like(distortion)
    below = (1.0 - x) - y
    return int(ks[int(np.argmax(below))])


def select_n_clusters(X, n_clusters=range(1, 11), *, estimator=None,
                      criteria=("distortion", "silhouette", "gap"), n_references=10,
                      silhouette_max_samples=2000, random_state=None):
    r"""Fit a clusterer for each K and report the criteria for choosing K.

    For each K: the within-cluster distortion :math:`e^2 = \sum_i \lVert x_i -
    \bar x_{c(i)}\rVert^2` (the notes' squared error, Sec. 4.1; its "elbow"),
    the mean silhouette (Rousseeuw 1987; K >= 2), and the gap statistic
    (Tibshirani, Walther & Hastie 2001): :math:`\mathrm{gap}(K) =
    E^*[\log e^2_K] - \log e^2_K` with the expectation over ``n_references``
    data sets drawn uniformly in the bounding box of X's principal axes, and
    its standard error :math:`s_K = \mathrm{sd}^*(\log e^2_K) \sqrt{1 + 1/B}`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Often a learned space: ``CPCM(...).fit(X).transform(X)``.
    n_clusters : iterable of int, default=range(1, 11)
    estimator : None or callable, default=None
        ``estimator(k)`` returns an unfitted clusterer with ``fit_predict``
        (or ``fit`` and ``labels_``); None: ``KMeans(k, n_init=4)`` with a
        seed drawn from ``random_state``.
    criteria : tuple of {"distortion", "silhouette", "gap"}
        The distortion is always computed.
    n_references : int, default=10
        Reference data sets of the gap statistic.
    silhouette_max_samples : int, default=2000
        The silhouette is computed on a random subset of this many rows
        (O(N^2) work).
    random_state : None, int or numpy.random.Generator, default=None

    Returns
    -------
    KSelection

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.selection import select_n_clusters
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(60, 2)) + c for c in ([0, 0], [8, 0], [0, 8])])
    >>> res = select_n_clusters(X, range(1, 7), random_state=0)
    >>> res.best
    {'distortion': 3, 'silhouette': 3, 'gap': 3}
    """
    # imported here, not at module level: the estimator layer they pull in
    # costs ~48 ms of ``import metriclust.selection`` (measured; no cycle)
    from .metrics import silhouette_score

    X = check_array(X, dtype=np.float64)
    ks = np.array(sorted({int(k) for k in n_clusters}), dtype=np.int64)
    if ks.size == 0 or ks[0] < 1 or ks[-1] > X.shape[0]:
        raise ValueError(f"n_clusters must be integers in [1, n_samples={X.shape[0]}], "
                         f"got {list(n_clusters)!r}.")
    unknown = set(criteria) - set(_CRITERIA)
    if unknown:
        raise ValueError(f"criteria must be among {_CRITERIA}, got {sorted(unknown)}.")
    check_scalar(n_references, "n_references", numbers.Integral, min_val=1)
    check_scalar(silhouette_max_samples, "silhouette_max_samples", numbers.Integral, min_val=2)
    rng = check_random_state(random_state)
    if estimator is None:
        from .kmeans import KMeans

        seed = int(rng.integers(2**31))

        def estimator(k):
            return KMeans(k, n_init=4, random_state=seed)
    elif not callable(estimator):
        raise TypeError("estimator must be None or a callable k -> clusterer.")

    def labels_of(Z, k):
        est = estimator(int(k))
        return np.asarray(est.fit_predict(Z) if hasattr(est, "fit_predict")
                          else est.fit(Z).labels_)

    labels = [labels_of(X, k) for k in ks]
    res = KSelection(n_clusters=ks,
                     distortion=np.array([within_cluster_distortion(X, lab) for lab in labels]))
    res.best["distortion"] = _elbow(ks, res.distortion)
    if "silhouette" in criteria:
        sub = (rng.choice(X.shape[0], silhouette_max_samples, replace=False)
               if X.shape[0] > silhouette_max_samples else np.arange(X.shape[0]))
        sil = np.full(len(ks), np.nan)
        for i, lab in enumerate(labels):
            n_lab = len(np.unique(lab[sub]))
            if 2 <= n_lab <= len(sub) - 1:
                sil[i] = silhouette_score(X[sub], lab[sub])
        res.silhouette = sil
        if np.any(np.isfinite(sil)):
            res.best["silhouette"] = int(ks[np.nanargmax(sil)])
    if "gap" in criteria:
        Xc = X - X.mean(axis=0)
        _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
        Z = Xc @ Vt.T
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        ref_logs = np.empty((n_references, len(ks)))
        for b in range(n_references):
            R = rng.uniform(lo, hi, size=Z.shape) @ Vt
            for i, k in enumerate(ks):
                ref_logs[b, i] = np.log(max(within_cluster_distortion(R, labels_of(R, k)),
                                            np.finfo(float).tiny))
        logs = np.log(np.maximum(res.distortion, np.finfo(float).tiny))
        res.gap = ref_logs.mean(axis=0) - logs
        res.gap_std = ref_logs.std(axis=0) * np.sqrt(1.0 + 1.0 / n_references)
        res.best["gap"] = int(ks[-1])
        for i in range(len(ks) - 1):
            if res.gap[i] >= res.gap[i + 1] - res.gap_std[i + 1]:
                res.best["gap"] = int(ks[i])
                break
    return res
