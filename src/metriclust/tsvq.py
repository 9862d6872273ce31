"""Tree-structured vector quantisation: a binary tree of 2-means (or single-feature) splits.

Public class:

.. autosummary::

   TreeStructuredVQ  -- binary tree of 2-means (or single-feature) splits
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval, Options
from ._core.kmeans import assign_labels, kmeans
from ._core.scaling import rescaled_input, standardise
from ._core.validation import check_fit_input

__all__ = ["TreeStructuredVQ"]


def _sse(X):
    return float(((X - X.mean(axis=0)) ** 2).sum()) if len(X) else 0.0


def monothetic_split(X):
    """Best single-feature split of X's rows by squared error.

    For every feature, the rows are sorted by it and the squared error
    :math:`\\sum_{left} \\lVert x - \\bar x_L\\rVert^2 + \\sum_{right} \\lVert x -
    \\bar x_R\\rVert^2` (all features) of every cut between distinct values comes
    from prefix sums, O(n d) per feature. Returns ``(feature, threshold, sse)``
    or None when every feature is constant.
    """
    n, d = X.shape
    best = None
    sq = np.einsum("ij,ij->i", X, X)
    for j in range(d):
        order = np.argsort(X[:, j], kind="stable")
        xs = X[order, j]
        cuts = np.flatnonzero(xs[1:] > xs[:-1])  # cut after position t
        if cuts.size == 0:
            continue
        cs = np.cumsum(X[order], axis=0)
        cq = np.cumsum(sq[order])
        nl = cuts + 1.0
        nr = n - nl
        left = cq[cuts] - np.einsum("ij,ij->i", cs[cuts], cs[cuts]) / nl
        rs = cs[-1] - cs[cuts]
        right = (cq[-1] - cq[cuts]) - np.einsum("ij,ij->i", rs, rs) / nr
        total = left + right
        t = int(np.argmin(total))
        if best is None or total[t] < best[2]:
            best = (j, 0.5 * (xs[cuts[t]] + xs[cuts[t] + 1]), float(total[t]))
    return best


class TreeStructuredVQ(ClusterMixin, BaseEstimator):
    r"""Tree-structured vector quantiser (TSVQ): divisive binary splits.

    All the data start in one cluster; a selected cluster is divided in two,
    until there are ``n_clusters`` leaves (Unsupervised Learning notes,
    Sec. 4.2). A split is 2-means (through the shared k-means core; the
    splitting hyperplane is the perpendicular bisector of the two centroids)
    or, with ``split="monothetic"``, the single-feature threshold with the
    least squared error. ``tree="greedy"`` always splits the leaf with the
    largest distortion (sum of squared distances to its centroid);
    ``tree="balanced"`` splits all leaves of one depth (largest distortion
    first) before going deeper. New points are labelled by descending the tree,
    one comparison per level. The partition is usually worse than full
    k-means': ``kmeans_inertia_`` reports k-means run from the tree's leaves.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of leaves (fewer if the data cannot be split further).
    tree : {"greedy", "balanced"}, default="greedy"
    split : {"2-means", "monothetic"}, default="2-means"
    n_init : int, default=1
        k-means++ restarts of each 2-means split.
    random_state : None, int or numpy.random.Generator, default=None

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_leaves, n_features)
        The leaves' centroids (codewords).
    labels_ : ndarray of shape (n_samples,)
        Leaf of each training row (by descent).
    inertia_ : float
        Distortion: sum of squared distances of the rows to their leaf centroid.
    kmeans_inertia_ : float
        Distortion of Lloyd's k-means started from the leaf centroids (the
        notes' use of a TSVQ as a k-means seed); never above ``inertia_``.
    n_leaves_ : int
    children_ : ndarray of shape (n_nodes, 2)
        Child node ids (-1 for a leaf); node 0 is the root.
    depth_ : ndarray of shape (n_nodes,)
    n_features_in_ : int

    References
    ----------
    A. Buzo, A. H. Gray, R. M. Gray and J. D. Markel, "Speech coding based upon
    vector quantization", IEEE Trans. ASSP 28(5), 1980.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import TreeStructuredVQ
    >>> X = np.array([[0., 0], [0, 1], [5, 0], [5, 1], [20, 0], [20, 1]])
    >>> tsvq = TreeStructuredVQ(3, random_state=0).fit(X)
    >>> len(set(tsvq.labels_.tolist())), round(tsvq.inertia_, 10)
    (3, 1.5)
    """

    # checked on entry to fit
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "tree": [Options("greedy", "balanced")],
        "split": [Options("2-means", "monothetic")],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_clusters=8, *, tree="greedy", split="2-means", n_init=1,
                 random_state=None):
        self.n_clusters = n_clusters
        self.tree = tree
        self.split = split
        self.n_init = n_init
        self.random_state = random_state

    def _split_node(self, Xn, rng):
        """Rule and member mask of the right child, or None if Xn cannot be split."""
        if self.split == "monothetic":
            found = monothetic_split(Xn)
            if found is None:
                return None
            j, thr, _ = found
            return ("feature", j, thr), Xn[:, j] > thr
        if len(Xn) < 2:
            return None
        res = kmeans(Xn, 2, random_state=rng, n_init=int(self.n_init))
        centers = np.ascontiguousarray(res.centers)
        side = assign_labels(Xn, centers)[0] == 1
        if side.all() or not side.any():
            return None
        return ("centers", centers), side

    def fit(self, X, y=None):
        """Grow the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : TreeStructuredVQ
        """
        X, K, rng = check_fit_input(X, self.n_clusters, self.random_state)
        Xs, mean, scale = standardise(X)
        n = Xs.shape[0]
        members = [np.arange(n)]
        rules, children, depth, sse = [None], [[-1, -1]], [0], [_sse(Xs)]
        leaves = [0]
        blocked = set()
        while len(leaves) < K:
            cand = [v for v in leaves if v not in blocked and sse[v] > 0]
            if not cand:
                break
            if self.tree == "balanced":
                top = min(depth[v] for v in cand)
                cand = [v for v in cand if depth[v] == top]
            v = max(cand, key=lambda u: (sse[u], -u))
            idx = members[v]
            found = self._split_node(Xs[idx], rng)
            if found is None:
                blocked.add(v)
                continue
            rule, right = found
            rules[v] = rule
            for part in (idx[~right], idx[right]):
                members.append(part)
                rules.append(None)
                children.append([-1, -1])
                depth.append(depth[v] + 1)
                sse.append(_sse(Xs[part]))
            children[v] = [len(members) - 2, len(members) - 1]
            leaves.remove(v)
            leaves += children[v]
        self._rules = rules
        self.children_ = np.array(children, dtype=np.int64)
        self.depth_ = np.array(depth, dtype=np.int64)
        # leaves numbered in node order; their codewords are their centroids
        leaf_nodes = np.flatnonzero(self.children_[:, 0] < 0)
        self._leaf_of_node = np.full(len(children), -1, dtype=np.int64)
        self._leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
        self._mean, self._scale = mean, scale
        nodes = self._descend(Xs)
        labels = self._leaf_of_node[nodes]
        centers = np.array([Xs[labels == k].mean(axis=0) for k in range(len(leaf_nodes))])
        self._centers_s = np.ascontiguousarray(centers)
        inertia = float(((Xs - centers[labels]) ** 2).sum())
        km = kmeans(Xs, len(leaf_nodes), init=self._centers_s, n_init=1)
        self.cluster_centers_ = centers * scale + mean
        self.labels_ = labels
        self.inertia_ = inertia * scale**2
        self.kmeans_inertia_ = float(km.inertia) * scale**2
        self.n_leaves_ = len(leaf_nodes)
        self.n_features_in_ = X.shape[1]
        return self

    def _descend(self, Xs):
        """Node reached by every row, one level at a time (loops over nodes only)."""
        node = np.zeros(Xs.shape[0], dtype=np.int64)
        for v, rule in enumerate(self._rules):  # parents precede their children
            if rule is None:
                continue
            at = np.flatnonzero(node == v)
            if at.size == 0:
                continue
            if rule[0] == "feature":
                right = Xs[at, rule[1]] > rule[2]
            else:
                right = assign_labels(np.ascontiguousarray(Xs[at]), rule[1])[0] == 1
            node[at] = np.where(right, self.children_[v, 1], self.children_[v, 0])
        return node

    def predict(self, X):
        """Leaf reached by descending the tree from the root."""
        Xs = rescaled_input(self, X, "cluster_centers_")
        return self._leaf_of_node[self._descend(Xs)]
