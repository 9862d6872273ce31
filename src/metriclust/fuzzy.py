"""Fuzzy c-means: graded memberships instead of a hard partition.

Public classes and functions:

.. autosummary::

   FuzzyCMeans        -- fuzzy c-means (Bezdek 1981): memberships with exponent ``m``
   fuzzy_memberships  -- memberships from squared distances to the centers
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval, Options
from ._core.kmeans import center_distances, kmeans_plusplus
from ._core.scaling import rescaled_input, standardise
from ._core.validation import check_array, check_fit_input

__all__ = ["FuzzyCMeans", "fuzzy_memberships"]


def fuzzy_memberships(d2, m):
    r"""Memberships :math:`u_{ik} = 1 / \sum_j (d_{ik} / d_{ij})^{2/(m-1)}` from squared
    distances ``d2`` (n, K).

    Computed as a softmax of :math:`-\log d^2_{ik} / (m - 1)`, which cannot
    overflow; a point on a center (distance 0) belongs to it (shared equally
    among coincident centers).
    """
    zero = d2 <= 0.0
    with np.errstate(divide="ignore"):
        a = -np.log(np.where(zero, 1.0, d2)) / (m - 1.0)
    a -= a.max(axis=1, keepdims=True)
    u = np.exp(a)
    u /= u.sum(axis=1, keepdims=True)
    rows = zero.any(axis=1)
    if rows.any():
        z = zero[rows].astype(np.float64)
        u[rows] = z / z.sum(axis=1, keepdims=True)
    return u


class FuzzyCMeans(ClusterMixin, BaseEstimator):
    r"""Fuzzy c-means (Bezdek 1981): soft partition with membership exponent ``m``.

    Minimises :math:`J_m = \sum_i \sum_k u_{ik}^m \lVert x_i - c_k \rVert^2` over
    memberships with :math:`\sum_k u_{ik} = 1` (the notes' normalised fuzzy
    memberships, Sec. 2.2; the lecture's "fuzzy k-means") by alternating

    .. math::

        u_{ik} = \Big(\sum_j (d_{ik}/d_{ij})^{2/(m-1)}\Big)^{-1}, \qquad
        c_k = \frac{\sum_i u_{ik}^m x_i}{\sum_i u_{ik}^m}.

    Each step cannot increase :math:`J_m`. As :math:`m \to 1` the memberships
    become hard (k-means); large ``m`` makes them uniform.

    Parameters
    ----------
    n_clusters : int, default=8
    m : float, default=2.0
        Membership exponent, > 1.
    init : {"k-means++"} or ndarray of shape (n_clusters, n_features), default="k-means++"
        Initial centers: the shared core's k-means++ seeding, or given ones.
    max_iter : int, default=300
    tol : float, default=1e-6
        Stop when the relative decrease of :math:`J_m` in an iteration is at
        most ``tol``.
    random_state : None, int or numpy.random.Generator, default=None

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    memberships_ : ndarray of shape (n_samples, n_clusters)
        Rows sum to 1.
    labels_ : ndarray of shape (n_samples,)
        Cluster of largest membership.
    objective_ : float
        :math:`J_m` at the final centers and memberships (X's units).
    objective_history_ : list of float
        :math:`J_m` after every iteration (non-increasing).
    n_iter_ : int
    n_features_in_ : int

    References
    ----------
    J. C. Bezdek, *Pattern Recognition with Fuzzy Objective Function
    Algorithms*, Plenum 1981.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import FuzzyCMeans
    >>> X = np.array([[0., 0], [0, 1], [10, 0], [10, 1], [5, 0.5]])
    >>> fcm = FuzzyCMeans(2, random_state=0).fit(X)
    >>> fcm.memberships_[4].round(2).tolist()  # the middle point is shared
    [0.5, 0.5]
    """

    # checked on entry to fit
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "m": [Interval(numbers.Real, 1, None, closed="neither", finite=True)],
        "init": [Options("k-means++"), "array-like"],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_clusters=8, *, m=2.0, init="k-means++", max_iter=300, tol=1e-6,
                 random_state=None):
        self.n_clusters = n_clusters
        self.m = m
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None):
        """Compute the fuzzy partition.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : FuzzyCMeans
        """
        X, K, rng = check_fit_input(X, self.n_clusters, self.random_state)
        Xs, mean, scale = standardise(X)
        if isinstance(self.init, str):
            centers, _ = kmeans_plusplus(Xs, K, random_state=rng)
        else:
            init = check_array(self.init, name="init", dtype=np.float64)
            if init.shape != (K, X.shape[1]):
                raise ValueError(f"init must have shape ({K}, {X.shape[1]}), got {init.shape}.")
            centers = (init - mean) / scale
        m = float(self.m)
        history = []
        n_iter = 0
        u = fuzzy_memberships(center_distances(Xs, centers, squared=True), m)
        for n_iter in range(1, int(self.max_iter) + 1):
            um = u**m
            centers = (um.T @ Xs) / um.sum(axis=0)[:, None]
            d2 = center_distances(Xs, centers, squared=True)
            u = fuzzy_memberships(d2, m)
            J = float(np.sum(u**m * d2))
            history.append(J)
            if n_iter > 1 and history[-2] - J <= self.tol * history[-2]:
                break
        self.cluster_centers_ = centers * scale + mean
        if X.dtype == np.float32:
            self.cluster_centers_ = self.cluster_centers_.astype(np.float32)
        self._centers_s, self._mean, self._scale = centers, mean, scale
        self.memberships_ = u
        self.labels_ = u.argmax(axis=1)
        self.objective_history_ = [J * scale**2 for J in history]
        self.objective_ = self.objective_history_[-1]
        self.n_iter_ = n_iter
        self.n_features_in_ = X.shape[1]
        return self

    def predict_memberships(self, X):
        """Memberships of new rows to the fitted centers, shape (n_samples, n_clusters)."""
        Xs = rescaled_input(self, X, "cluster_centers_")
        d2 = center_distances(Xs, self._centers_s, squared=True)
        return fuzzy_memberships(d2, float(self.m))

    def predict(self, X):
        """Cluster of largest membership of each row."""
        return self.predict_memberships(X).argmax(axis=1)
