"""Gaussian Gram matrix and its low-rank factors (SPEC 0.2).

CONTRACT (stable; CPCM and CPD-UML rely on it):

    gaussian_gram(X, Y=None, *, sigma, n_threads=None) -> (n_x, n_y) array
    median_pairwise_distance(X, *, max_samples=2000, random_state=None) -> float
    Nystrom(n_components=100, *, sigma, landmarks="random", random_state=None)
        .fit(X) -> self; .factor_ (n, m) with G ~= U U^T; .transform(Y) -> (n_y, m)
    nystrom_factor(X, n_components, *, sigma, random_state=None) -> U (n, m)
    top_eigenpairs(X, n_components, *, sigma, random_state=None) -> (eigvals desc, eigvecs)

TEMPORARY: plain numpy until the C kernel lands.
"""

import numpy as np

from ._core.validation import check_array, check_random_state

__all__ = ["gaussian_gram", "median_pairwise_distance", "Nystrom", "nystrom_factor",
           "top_eigenpairs"]


def gaussian_gram(X, Y=None, *, sigma, n_threads=None):
    """``G[i, j] = exp(-||x_i - y_j||^2 / (2 sigma^2))``."""
    X = check_array(X, name="X")
    Yv = X if Y is None else check_array(Y, name="Y")
    mean = X.mean(0)
    Xc, Yc = X - mean, Yv - mean
    d2 = (Xc**2).sum(1)[:, None] - 2 * Xc @ Yc.T + (Yc**2).sum(1)[None, :]
    np.maximum(d2, 0, out=d2)
    return np.exp(-d2 / (2.0 * sigma**2))


def median_pairwise_distance(X, *, max_samples=2000, random_state=None):
    """Median Euclidean distance between distinct rows (sampled above max_samples)."""
    X = check_array(X, name="X", ensure_min_samples=2)
    if X.shape[0] > max_samples:
        rng = check_random_state(random_state)
        X = X[rng.choice(X.shape[0], max_samples, replace=False)]
    from scipy.spatial.distance import pdist

    return float(np.median(pdist(X)))


class Nystrom:
    """Rank-m Nystrom factor ``U`` of the Gaussian Gram: ``G ~= U U^T``."""

    def __init__(self, n_components=100, *, sigma, landmarks="random", random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.landmarks = landmarks
        self.random_state = random_state

    def fit(self, X):
        X = check_array(X, name="X")
        rng = check_random_state(self.random_state)
        m = min(self.n_components, X.shape[0])
        self.landmarks_ = X[rng.choice(X.shape[0], m, replace=False)]
        Kmm = gaussian_gram(self.landmarks_, sigma=self.sigma)
        vals, vecs = np.linalg.eigh(Kmm)
        keep = vals > vals.max() * 1e-10
        self.normalization_ = vecs[:, keep] / np.sqrt(vals[keep])
        self.factor_ = self.transform(X)
        return self

    def transform(self, Y):
        return gaussian_gram(Y, self.landmarks_, sigma=self.sigma) @ self.normalization_


def nystrom_factor(X, n_components, *, sigma, random_state=None):
    """``U`` with ``G ~= U U^T`` from ``n_components`` random landmarks."""
    return Nystrom(n_components, sigma=sigma, random_state=random_state).fit(X).factor_


def top_eigenpairs(X, n_components, *, sigma, random_state=None):
    """Largest eigenpairs of the Gaussian Gram of X (descending)."""
    vals, vecs = np.linalg.eigh(gaussian_gram(X, sigma=sigma))
    return vals[::-1][:n_components], vecs[:, ::-1][:, :n_components]
