"""Kohonen's self-organising map on a rectangular grid.

Public class:

.. autosummary::

   SelfOrganizingMap  -- prototypes on a grid, trained by the sequential rule
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, ClusterMixin, Interval, Options, TransformerMixin
from ._core.kmeans import assign_labels, center_distances
from ._core.scaling import rescaled_input, standardise
from ._core.validation import check_fit_input
from ._kernels import _prototypes

__all__ = ["SelfOrganizingMap"]


class SelfOrganizingMap(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""Self-organising map: k-means-like prototypes tied by a grid topology.

    Units sit on an ``n_rows`` x ``n_cols`` rectangular grid, each with a weight
    vector :math:`w_j`. Samples are visited one at a time (a fresh permutation
    per epoch); the best-matching unit :math:`b = \arg\min_j \lVert x - w_j\rVert`
    and its grid neighbours move towards the sample,

    .. math::

        w_j \leftarrow w_j + \alpha(t)\, h_{jb}(t)\, (x - w_j), \qquad
        h_{jb}(t) = \exp\!\Big(-\frac{\lVert g_j - g_b \rVert^2}{2\sigma(t)^2}\Big),

    with :math:`g_j` the grid coordinates and the learning rate and the
    neighbourhood width decaying geometrically from (``learning_rate``,
    ``sigma``) to (``final_learning_rate``, ``final_sigma``). This is the
    lecture's "underlying topology that relates cluster centroids to one
    another" (Kohonen 1997). The sequential updates run in C
    (``csrc/prototypes.c``); prediction uses the k-means core's assignment.

    Parameters
    ----------
    n_rows, n_cols : int, default=5
        Grid shape; ``n_rows * n_cols`` units (clusters).
    n_epochs : int, default=10
    learning_rate, final_learning_rate : float, default=0.5, 0.01
        :math:`\alpha` at the start and at the end, in (0, 1].
    sigma, final_sigma : float or None, default=None, 0.5
        Neighbourhood width (grid units) at the start (None: half the larger
        grid side, at least 1) and at the end.
    init : {"pca", "random"}, default="pca"
        Weights on the plane of the data's two leading principal components
        (spanning +-2 standard deviations), or randomly drawn samples.
    random_state : None, int or numpy.random.Generator, default=None

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_rows * n_cols, n_features)
        Unit weights, row-major over the grid.
    grid_ : ndarray of shape (n_rows * n_cols, 2)
        (row, column) of each unit.
    labels_ : ndarray of shape (n_samples,)
        Best-matching unit of each training row.
    quantization_error_ : float
        Mean distance of the rows to their best-matching unit.
    topographic_error_ : float
        Fraction of rows whose two best-matching units are not grid neighbours
        (distance 1 on the grid).
    n_features_in_ : int

    References
    ----------
    T. Kohonen, *Self-Organizing Maps*, 2nd ed., Springer 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import SelfOrganizingMap
    >>> X = np.linspace(0, 1, 200)[:, None]
    >>> som = SelfOrganizingMap(1, 5, random_state=0).fit(X)
    >>> w = som.cluster_centers_[:, 0]
    >>> bool(np.all(np.diff(w) > 0) or np.all(np.diff(w) < 0))  # an ordered chain
    True
    """

    # each parameter alone, checked on entry to fit; _check_params adds what depends on X
    _parameter_constraints = {
        "n_rows": [Interval(numbers.Integral, 1, None)],
        "n_cols": [Interval(numbers.Integral, 1, None)],
        "n_epochs": [Interval(numbers.Integral, 1, None)],
        "learning_rate": [Interval(numbers.Real, 0, 1, closed="right")],
        "final_learning_rate": [Interval(numbers.Real, 0, 1, closed="right")],
        "sigma": [None, Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "final_sigma": [Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "init": [Options("pca", "random")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_rows=5, n_cols=5, *, n_epochs=10, learning_rate=0.5,
                 final_learning_rate=0.01, sigma=None, final_sigma=0.5, init="pca",
                 random_state=None):
        self.n_rows = n_rows
        self.n_cols = n_cols
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.final_learning_rate = final_learning_rate
        self.sigma = sigma
        self.final_sigma = final_sigma
        self.init = init
        self.random_state = random_state

    def _check_params(self, n):
        if self.n_rows * self.n_cols > n:
            raise ValueError(f"n_rows * n_cols = {self.n_rows * self.n_cols} units for "
                             f"n_samples={n}: at most one unit per sample.")
        if self.n_epochs * n > 10**9:
            raise ValueError(f"n_epochs={self.n_epochs} x {n} samples is more than "
                             "10**9 updates.")
        sigma = self.sigma
        if sigma is None:
            sigma = max(1.0, max(self.n_rows, self.n_cols) / 2.0)
        return float(sigma)

    def fit(self, X, y=None):
        """Train the map.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : SelfOrganizingMap
        """
        X, _, rng = check_fit_input(X, random_state=self.random_state)
        sigma = self._check_params(X.shape[0])
        Xs, mean, scale = standardise(X)
        n, d = Xs.shape
        R, C = int(self.n_rows), int(self.n_cols)
        grid = np.array([(r, c) for r in range(R) for c in range(C)], dtype=np.float64)
        if self.init == "random":
            W = Xs[rng.choice(n, size=R * C, replace=False)].copy()
        else:
            _, s, Vt = np.linalg.svd(Xs, full_matrices=False)
            sd = s / np.sqrt(n)
            axes = [sd[i] * Vt[i] if i < len(sd) else np.zeros(d) for i in range(2)]
            u = np.linspace(-2, 2, R) if R > 1 else np.zeros(1)
            v = np.linspace(-2, 2, C) if C > 1 else np.zeros(1)
            # the longer grid side follows the first component
            if C >= R:
                W = np.array([u[r] * axes[1] + v[c] * axes[0] for r, c in grid.astype(int)])
            else:
                W = np.array([u[r] * axes[0] + v[c] * axes[1] for r, c in grid.astype(int)])
        W = np.ascontiguousarray(W, dtype=np.float64)
        order = np.concatenate([rng.permutation(n)
                                for _ in range(int(self.n_epochs))]).astype(np.int64)
        _prototypes.som_train(Xs, W, grid, order, float(self.learning_rate),
                              float(self.final_learning_rate), sigma, float(self.final_sigma))
        self._W_s, self._mean, self._scale = W, mean, scale
        self.grid_ = grid
        self.cluster_centers_ = W * scale + mean
        d2 = center_distances(Xs, W, squared=True)
        if W.shape[0] > 1:
            two = np.argsort(d2, axis=1, kind="stable")[:, :2]
            gap = np.abs(grid[two[:, 0]] - grid[two[:, 1]]).sum(axis=1)
            self.topographic_error_ = float(np.mean(gap > 1))
        else:
            self.topographic_error_ = 0.0
        self.labels_ = d2.argmin(axis=1)
        self.quantization_error_ = float(np.mean(np.sqrt(d2.min(axis=1)))) * scale
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Best-matching unit of each row."""
        Xs = rescaled_input(self, X, "cluster_centers_")
        return assign_labels(Xs, self._W_s)[0]

    def transform(self, X):
        """Euclidean distances of the rows to every unit, shape (n_samples, n_units)."""
        Xs = rescaled_input(self, X, "cluster_centers_")
        return center_distances(Xs, self._W_s) * self._scale
