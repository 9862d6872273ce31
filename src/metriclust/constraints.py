"""Side information and constrained k-means (Xing, Ng, Jordan & Russell 2003, Sec. 3).

Public functions and classes:

.. autosummary::

   ConstrainedKMeans     -- k-means with must-link (and optional cannot-link) constraints
   connected_components  -- connected components of a pair graph
   pairs_from_labels     -- random similar and dissimilar pairs from class labels
   sample_similar_pairs  -- similar pairs as in Xing et al. (2003), Sec. 3.2
   sample_similar_fraction -- a random fraction of all same-class pairs (Xing et al., Figs. 2, 3, 7)

Pairs are int64 arrays of shape ``(m, 2)`` of row indices. ``S`` (must-link,
similar) and ``D`` (cannot-link, dissimilar).

The paper's four clustering variants (Xing et al. 2003, Sec. 3), with
``km = KMeans(K)``, ``ckm = ConstrainedKMeans(K)`` and ``mmc = MMC().fit(X, similar=S)``:

1. k-means:                          ``km.fit_predict(X)``
2. constrained k-means:              ``ckm.fit(X, must_link=S).labels_``
3. k-means + learned metric:         ``km.fit_predict(mmc.transform(X))``
4. constrained k-means + metric:     ``ckm.fit(mmc.transform(X), must_link=S).labels_``
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval, Options, check_is_fitted
from ._core.kmeans import assign_labels, kmeans
from ._core.partition import cluster_means
from ._core.sidepairs import (connected_components, pairs_from_labels, sample_similar_fraction,
                              sample_similar_pairs)
from ._core.validation import (InputError, check_array, check_n_features, check_pairs,
                               check_random_state)

__all__ = ["ConstrainedKMeans", "connected_components", "pairs_from_labels",
           "sample_similar_fraction", "sample_similar_pairs"]


class ConstrainedKMeans(ClusterMixin, BaseEstimator):
    """k-means with must-link (and optional cannot-link) constraints.

    Must-link (Xing et al. 2003, Sec. 3): each connected component of
    the must-link graph is assigned as a unit to
    ``argmin_k sum_{i in comp} ||x_i - mu_k||^2``, which is exactly weighted
    k-means on the component means with weight = component size; that is run
    through the shared k-means core. Cannot-link (an extension beyond the paper,
    Wagstaff et al. 2001, COP-k-means): in each assignment step the components
    touched by a cannot-link take, in index order, the nearest centre not already
    taken by a component they cannot join; if none is left the constraints are
    infeasible for this run and ``ValueError`` is raised.

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"k-means++", "random"} or ndarray, default="k-means++"
    n_init : int, default=10
    max_iter : int, default=300
    tol : float, default=1e-4
    random_state : None, int or Generator
    verbose : int, default=0

    Attributes
    ----------
    labels_, cluster_centers_, inertia_, n_iter_, n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1], [10.0], [10.1]])
    >>> ckm = ConstrainedKMeans(2, random_state=0).fit(X, must_link=[[1, 2]])
    >>> bool(ckm.labels_[1] == ckm.labels_[2])
    True
    """

    # each parameter alone, checked on entry to fit; fit adds what depends on the data
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "init": [Options("k-means++", "random"), "array-like"],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=10, max_iter=300,
                 tol=1e-4, random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, must_link=None, cannot_link=None):
        """Cluster ``X`` with the constraints; ``y`` is ignored."""
        X = check_array(X)
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        S = check_pairs(must_link if must_link is not None else [], n, name="must_link")
        C = check_pairs(cannot_link if cannot_link is not None else [], n, name="cannot_link")
        n_comp, comp = connected_components(S, n)
        if self.n_clusters > n_comp:
            raise InputError(f"n_clusters={self.n_clusters} exceeds the {n_comp} units to "
                             f"cluster ({n} samples joined into {n_comp} must-link components).")
        K = int(self.n_clusters)
        means, weights = cluster_means(X, comp, n_comp)
        means = means.astype(X.dtype)
        init = self.init
        if not isinstance(init, str):
            init = check_array(init, name="init", dtype=X.dtype)
            if init.shape != (K, X.shape[1]):
                raise InputError(f"init must have shape ({K}, {X.shape[1]}), got {init.shape}.")
        rng = check_random_state(self.random_state)
        res = kmeans(means, K, sample_weight=weights, init=init,
                     n_init=1 if not isinstance(init, str) else self.n_init,
                     max_iter=self.max_iter, tol=self.tol, random_state=rng,
                     verbose=self.verbose)
        centers, comp_labels, n_iter = res.centers, res.labels, res.n_iter
        if len(C):
            centers, comp_labels, n_iter = self._cop_lloyd(means, weights, comp[C], centers)
        self.cluster_centers_ = np.asarray(centers)
        self.labels_ = np.asarray(comp_labels, dtype=np.int64)[comp]
        diff = X - self.cluster_centers_[self.labels_]
        self.inertia_ = float(np.einsum("ij,ij->", diff, diff))
        self.n_iter_ = int(n_iter)
        return self

    def _cop_lloyd(self, means, weights, cl, centers):
        """Lloyd on component means with the cannot-link rule in the assignment."""
        if np.any(cl[:, 0] == cl[:, 1]):
            r = int(np.argmax(cl[:, 0] == cl[:, 1]))
            raise InputError(f"cannot_link[{r}] joins two points already must-linked "
                             "(same connected component): the constraints are infeasible.")
        K = centers.shape[0]
        labels = None
        for it in range(1, self.max_iter + 1):
            new = _cop_assign(means, centers, cl)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            c, w = cluster_means(means, labels, K, sample_weight=weights)
            centers = np.where(w[:, None] > 0, c, centers).astype(means.dtype)
        return centers, labels, it

    def predict(self, X):
        """Nearest learned centre of each row (constraints do not apply to new points)."""
        check_is_fitted(self, "cluster_centers_")
        X = check_array(X)
        check_n_features(self, X)
        return assign_labels(X, self.cluster_centers_.astype(X.dtype))[0]


def _cop_assign(means, centers, cl):
    """COP-k-means assignment of component means (Wagstaff et al. 2001).

    Unconstrained components go to their nearest centre (vectorized); the
    constrained ones, in index order, to the nearest centre not held by an
    already placed component they may not join. That rule is sequential, so the
    loop runs over the constrained components (not over pairs: their partners
    come from a sparse adjacency).
    """
    from scipy.sparse import coo_matrix

    labels, _ = assign_labels(means, centers)
    n_comp, K = means.shape[0], centers.shape[0]
    adj = coo_matrix((np.ones(2 * len(cl)), (np.r_[cl[:, 0], cl[:, 1]], np.r_[cl[:, 1], cl[:, 0]])),
                     shape=(n_comp, n_comp)).tocsr()
    involved = np.unique(cl)
    d2 = ((means[involved, None, :] - centers[None, :, :]) ** 2).sum(-1)
    placed = np.full(n_comp, -1, dtype=np.int64)
    for row, c in enumerate(involved):
        banned = np.zeros(K, dtype=bool)
        held = placed[adj.indices[adj.indptr[c]:adj.indptr[c + 1]]]
        banned[held[held >= 0]] = True
        order = np.argsort(d2[row], kind="stable")
        free = order[~banned[order]]
        if free.size == 0:
            raise InputError("The cannot-link constraints cannot be satisfied with "
                             f"n_clusters={K} in this assignment "
                             f"(component {int(c)} conflicts with every cluster).")
        placed[c] = free[0]
    labels[involved] = placed[involved]
    return labels
