"""K-medoids: partitioning around medoids (PAM) and the alternating heuristic.

Public class:

.. autosummary::

   KMedoids  -- k-medoids on any distance: PAM or the alternating heuristic
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval, Options, TransformerMixin
from ._core.validation import check_fit_input, check_predict_input

__all__ = ["KMedoids"]


def _pairwise(X, Y, metric):
    from scipy.spatial.distance import cdist

    try:
        return cdist(X, Y, metric=metric)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"metric={metric!r} is not usable by "
                         f"scipy.spatial.distance.cdist: {exc}") from None


def _nearest_two(Dm):
    """Nearest and second-nearest medoid of every row of Dm (n, K)."""
    order = np.argsort(Dm, axis=1, kind="stable")
    rows = np.arange(Dm.shape[0])
    n1 = order[:, 0]
    d1 = Dm[rows, n1]
    d2 = Dm[rows, order[:, 1]] if Dm.shape[1] > 1 else np.full(Dm.shape[0], np.inf)
    return n1, d1, d2


def pam_build(D, n_clusters):
    """PAM's BUILD: the medoid minimising the total distance, then greedily the
    point that lowers the total distance most (Kaufman & Rousseeuw 1990)."""
    medoids = [int(np.argmin(D.sum(axis=0)))]
    dnear = D[:, medoids[0]].copy()
    for _ in range(1, n_clusters):
        gain = np.maximum(dnear[:, None] - D, 0.0).sum(axis=0)
        gain[medoids] = -1.0
        c = int(np.argmax(gain))
        medoids.append(c)
        np.minimum(dnear, D[:, c], out=dnear)
    return np.array(medoids, dtype=np.int64)


def swap_deltas(D, medoids):
    r"""Change of the total distance for every (medoid m, non-medoid x) swap.

    FastPAM1's decomposition (Schubert & Rousseeuw 2019): with d1, d2 each
    point's distances to its nearest and second-nearest medoid and n1 the
    nearest, removing m and adding x changes point o's cost by
    :math:`\min(d_{ox} - d1_o, 0)` if :math:`n1_o \ne m` and by
    :math:`\min(d_{ox}, d2_o) - d1_o` otherwise, so all K x N deltas cost one
    pass over D. Medoid columns are +inf.
    """
    n1, d1, d2 = _nearest_two(D[:, medoids])
    closer = np.minimum(D - d1[:, None], 0.0)
    shared = closer.sum(axis=0)
    own = np.minimum(D, d2[:, None]) - d1[:, None] - closer
    onehot = np.zeros((len(medoids), D.shape[0]))
    onehot[n1, np.arange(D.shape[0])] = 1.0
    delta = shared[None, :] + onehot @ own
    delta[:, medoids] = np.inf
    return delta


class KMedoids(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""K-medoids clustering on any distance: PAM or the alternating heuristic.

    Minimises the total distance of the points to their nearest medoid,
    :math:`\sum_i \min_k d(x_i, m_k)`, with the medoids :math:`m_k` restricted
    to data points, so any dissimilarity works (the lecture's "partitioning
    around medoids"; the notes' k-medoid objective, Sec. 4.1.1).

    ``method="pam"``: BUILD, then SWAP -- at each step the single
    (medoid, non-medoid) exchange that lowers the total distance most, until
    none does. All the swap deltas of a step are evaluated at once with
    FastPAM1's decomposition (Schubert & Rousseeuw 2019), O(K N^2) per step in
    vectorised numpy; the result is PAM's. ``method="alternate"``: assign each
    point to its nearest medoid, replace each medoid by the member minimising
    the within-cluster total distance, repeat (Park & Jun 2009; faster, often
    worse).

    Parameters
    ----------
    n_clusters : int, default=8
    metric : str, callable or "precomputed", default="euclidean"
        Anything ``scipy.spatial.distance.cdist`` accepts ("euclidean",
        "cityblock", "chebyshev", "minkowski", "hamming", "cosine",
        "correlation", ...), or "precomputed": X is then an (n, n) distance
        matrix in ``fit`` and an (n_new, n) matrix of distances to the training
        points in ``predict``/``transform``.
    method : {"pam", "alternate"}, default="pam"
    init : {"build", "random"}, default="build"
        Starting medoids: PAM's BUILD or distinct random points.
    max_iter : int, default=300
        Maximum number of swaps (pam) or alternations.
    random_state : None, int or numpy.random.Generator, default=None
        Used by ``init="random"``.

    Attributes
    ----------
    medoid_indices_ : ndarray of shape (n_clusters,)
    cluster_centers_ : ndarray of shape (n_clusters, n_features) or None
        The medoids (None with a precomputed metric).
    labels_ : ndarray of shape (n_samples,)
    inertia_ : float
        Total distance of the points to their medoids.
    n_iter_ : int
    n_features_in_ : int

    Notes
    -----
    The (n, n) distance matrix is held in memory: PAM is for up to a few
    thousand points.

    References
    ----------
    L. Kaufman and P. J. Rousseeuw, *Finding Groups in Data*, Wiley 1990, ch. 2.
    E. Schubert and P. J. Rousseeuw, "Faster k-medoids clustering: improving
    the PAM, CLARA, and CLARANS algorithms", SISAP 2019.
    H.-S. Park and C.-H. Jun, "A simple and fast algorithm for K-medoids
    clustering", Expert Syst. Appl. 36(2), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import KMedoids
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [9, 9], [9, 8], [8, 9], [10, 10.]])
    >>> km = KMedoids(2, metric="cityblock").fit(X)
    >>> km.labels_.tolist(), X[km.medoid_indices_].tolist()
    ([1, 1, 1, 0, 0, 0, 0], [[9.0, 9.0], [0.0, 0.0]])
    """

    # checked on entry to fit (metric names are checked where the distances are formed)
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "metric": [str, callable],
        "method": [Options("pam", "alternate")],
        "init": [Options("build", "random")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_clusters=8, *, metric="euclidean", method="pam", init="build",
                 max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.metric = metric
        self.method = method
        self.init = init
        self.max_iter = max_iter
        self.random_state = random_state

    def _distances(self, X):
        if isinstance(self.metric, str) and self.metric == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"With metric='precomputed', X must be a square distance "
                                 f"matrix, got shape {X.shape}.")
            if np.any(X < 0):
                raise ValueError("With metric='precomputed', X must hold non-negative "
                                 "distances.")
            return np.asarray(X, dtype=np.float64)
        if not (isinstance(self.metric, str) or callable(self.metric)):
            raise TypeError(f"metric must be a string, a callable or 'precomputed', "
                            f"got {self.metric!r}.")
        D = _pairwise(X, X, self.metric)
        if not np.all(np.isfinite(D)):
            raise ValueError(f"metric={self.metric!r} gives non-finite distances on X "
                             "(e.g. cosine or correlation of a zero or constant row).")
        return D

    def fit(self, X, y=None):
        """Find the medoids.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
        y : ignored

        Returns
        -------
        self : KMedoids
        """
        X, K, rng = check_fit_input(X, self.n_clusters, self.random_state, dtype=np.float64)
        D = self._distances(X)
        n = D.shape[0]
        if self.init == "build":
            medoids = pam_build(D, K)
        else:
            medoids = np.sort(rng.choice(n, size=K, replace=False)).astype(np.int64)
        n_iter = 0
        if self.method == "pam":
            for n_iter in range(1, int(self.max_iter) + 1):
                delta = swap_deltas(D, medoids)
                m, x = np.unravel_index(np.argmin(delta), delta.shape)
                total = D[:, medoids].min(axis=1).sum()
                # strict improvement beyond rounding, so that the search ends
                if not delta[m, x] < -1e-12 * max(total, np.finfo(float).tiny):
                    break
                medoids[m] = x
        else:
            for n_iter in range(1, int(self.max_iter) + 1):
                labels = np.argmin(D[:, medoids], axis=1)
                new = medoids.copy()
                for k in range(K):
                    members = np.flatnonzero(labels == k)
                    if members.size:
                        costs = D[np.ix_(members, members)].sum(axis=0)
                        # keep the current medoid on ties
                        if costs.min() < D[members, medoids[k]].sum():
                            new[k] = members[np.argmin(costs)]
                if np.array_equal(new, medoids):
                    break
                medoids = new
        Dm = D[:, medoids]
        self.medoid_indices_ = medoids
        self.labels_ = np.argmin(Dm, axis=1)
        self.inertia_ = float(Dm[np.arange(n), self.labels_].sum())
        self.n_iter_ = n_iter
        precomputed = isinstance(self.metric, str) and self.metric == "precomputed"
        self.cluster_centers_ = None if precomputed else X[medoids].copy()
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        """Distances of the rows of X to the medoids, shape (n_samples, n_clusters)."""
        X = check_predict_input(self, X, "medoid_indices_", dtype=np.float64)
        if self.cluster_centers_ is None:
            return X[:, self.medoid_indices_].copy()
        return _pairwise(X, self.cluster_centers_, self.metric)

    def predict(self, X):
        """Index of the nearest medoid of each row of X."""
        return np.argmin(self.transform(X), axis=1)
