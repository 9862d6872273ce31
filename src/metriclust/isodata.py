"""ISODATA: k-means with splitting and merging of clusters (Ball & Hall 1965).

Public classes and functions:

.. autosummary::

   ISODATA  -- k-means whose number of clusters adapts by splits and merges
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval
from ._core.kmeans import assign_labels, kmeans
from ._core.partition import cluster_means
from ._core.scaling import rescaled_input, standardise
from ._core.validation import check_fit_input

__all__ = ["ISODATA"]


class ISODATA(ClusterMixin, BaseEstimator):
    r"""ISODATA: k-means whose number of clusters adapts by splits and merges.

    The notes (Sec. 4.1.1) describe k-means variants that, after each
    iteration, split clusters that are too spread and merge clusters that are
    too close, naming ISODATA (1965) as one of them; they give no formulas.
    This is the classical ISODATA loop (Ball & Hall 1965; Tou & Gonzalez 1974):

    1. Lloyd's k-means from the current centers (the shared k-means core);
    2. drop clusters with fewer than ``min_cluster_size`` points;
    3. on odd iterations, or when there are at most ``n_clusters / 2``
       clusters: split every cluster whose largest per-feature standard
       deviation :math:`\sigma_{max}` exceeds ``split_std`` and that is more
       spread than average (mean distance to its center above the overall
       mean) or when clusters are too few, into centers
       :math:`c \pm \tfrac12 \sigma_{max} e_{max}`;
    4. otherwise (or when there are at least ``2 n_clusters`` clusters):
       merge up to ``max_merges`` pairs of centers closer than
       ``merge_distance`` (closest first, each cluster once) into their
       size-weighted mean.

    The loop ends after ``max_iter`` rounds or after two rounds in a row (a
    split round and a merge round) without an action.
    Thresholds are in units of the root mean feature variance of X (X is
    centred and scaled by one number first), so the result does not depend
    on the scale of X.

    Parameters
    ----------
    n_clusters : int, default=8
        Desired number of clusters (the starting number too).
    min_cluster_size : int, default=2
    split_std : float, default=0.5
    merge_distance : float, default=0.5
    max_merges : int, default=2
    max_iter : int, default=20
    random_state : None, int or numpy.random.Generator, default=None

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_found, n_features)
    labels_ : ndarray of shape (n_samples,)
    inertia_ : float
    n_iter_ : int
    history_ : list of tuple
        ``(iteration, action, number of clusters)`` for every split, merge
        or removal.
    n_features_in_ : int

    References
    ----------
    G. H. Ball and D. J. Hall, "ISODATA, a novel method of data analysis and
    pattern classification", Stanford Research Institute, 1965.
    J. T. Tou and R. C. Gonzalez, *Pattern Recognition Principles*,
    Addison-Wesley 1974, Sec. 3.3.6.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.isodata import ISODATA
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(80, 2)) * 0.3 + c
    ...                     for c in ([0, 0], [4, 0], [0, 4], [4, 4])])
    >>> ISODATA(2, split_std=0.3, merge_distance=0.3, random_state=0).fit(X).cluster_centers_.shape
    (4, 2)
    """

    # checked on entry to fit
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "min_cluster_size": [Interval(numbers.Integral, 1, None)],
        "split_std": [Interval(numbers.Real, 0, None, finite=True)],
        "merge_distance": [Interval(numbers.Real, 0, None, finite=True)],
        "max_merges": [Interval(numbers.Integral, 0, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_clusters=8, *, min_cluster_size=2, split_std=0.5, merge_distance=0.5,
                 max_merges=2, max_iter=20, random_state=None):
        self.n_clusters = n_clusters
        self.min_cluster_size = min_cluster_size
        self.split_std = split_std
        self.merge_distance = merge_distance
        self.max_merges = max_merges
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        """Cluster X, adapting the number of clusters.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : ISODATA
        """
        X, K0, rng = check_fit_input(X, self.n_clusters, self.random_state)
        Xs, mean, scale = standardise(X)
        n = Xs.shape[0]
        centers = kmeans(Xs, K0, random_state=rng).centers
        history = []
        it = 0
        quiet = 0  # consecutive rounds without an action (a split round and a merge round)
        for it in range(1, min(int(self.max_iter), 10**6) + 1):
            res = kmeans(Xs, len(centers), init=centers, n_init=1)
            labels, centers = res.labels, res.centers
            sizes = np.bincount(labels, minlength=len(centers))
            keep = sizes >= self.min_cluster_size
            changed = False
            if not keep.all() and keep.any():
                centers = centers[keep]
                history.append((it, "remove", len(centers)))
                labels = assign_labels(Xs, np.ascontiguousarray(centers))[0]
                changed = True
            K = len(centers)
            means, sizes = cluster_means(Xs, labels, K)
            dist = np.sqrt(((Xs - means[labels]) ** 2).sum(axis=1))
            spread = np.bincount(labels, weights=dist, minlength=K) / np.maximum(sizes, 1)
            overall = dist.mean()
            if (it % 2 == 1 or K <= K0 // 2) and K < 2 * K0:
                var = cluster_means(Xs**2, labels, K)[0] - means**2
                std = np.sqrt(np.maximum(var, 0.0))
                axis = std.argmax(axis=1)
                smax = std[np.arange(K), axis]
                split = (smax > self.split_std) & (sizes >= 2 * self.min_cluster_size) & (
                    (spread > overall) | (K <= K0 // 2))
                if split.any():
                    step = np.zeros_like(means)
                    step[np.arange(K), axis] = 0.5 * smax
                    centers = np.concatenate([means[~split], means[split] + step[split],
                                              means[split] - step[split]])
                    history.append((it, "split", len(centers)))
                    changed = True
            elif K > 1:
                D = np.sqrt(((means[:, None] - means[None]) ** 2).sum(-1))
                i, j = np.triu_indices(K, 1)
                close = np.flatnonzero(D[i, j] < self.merge_distance)
                close = close[np.argsort(D[i, j][close], kind="stable")]
                used, pairs = set(), []
                for p in close[: max(0, 10 * int(self.max_merges))]:  # pairs, not points
                    a, b = int(i[p]), int(j[p])
                    if a not in used and b not in used and len(pairs) < self.max_merges:
                        used |= {a, b}
                        pairs.append((a, b))
                if pairs:
                    merged = [(sizes[a] * means[a] + sizes[b] * means[b]) / (sizes[a] + sizes[b])
                              for a, b in pairs]
                    rest = [k for k in range(K) if k not in used]
                    centers = np.concatenate([means[rest], np.array(merged)])
                    history.append((it, "merge", len(centers)))
                    changed = True
            quiet = 0 if changed else quiet + 1
            if quiet >= 2:
                break
            centers = np.ascontiguousarray(centers[: n])
        res = kmeans(Xs, len(centers), init=np.ascontiguousarray(centers), n_init=1)
        self._centers_s, self._mean, self._scale = res.centers, mean, scale
        self.cluster_centers_ = res.centers * scale + mean
        self.labels_ = res.labels
        self.inertia_ = float(res.inertia) * scale**2
        self.n_iter_ = it
        self.history_ = history
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Nearest center of each row."""
        Xs = rescaled_input(self, X, "cluster_centers_")
        return assign_labels(Xs, np.ascontiguousarray(self._centers_s))[0]
