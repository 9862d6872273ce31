"""Shared helpers of the toolbox estimators: one global scale, squared distances.

Dividing the data by one number (after centring) makes a fit invariant to the
scale of X and keeps sums of squares far from overflow and underflow (data at
1e150 or 1e-150), the library's contract for every estimator.
"""

import numpy as np

__all__ = ["standardise", "sq_distances"]


def standardise(X):
    """Centre X and divide by the root of its mean feature variance.

    Returns ``(Xs, mean, scale)`` with ``Xs = (X - mean) / scale`` float64 and
    C-contiguous. ``scale`` is 1 for constant data.
    """
    mean = X.mean(axis=0, dtype=np.float64)
    Xc = np.asarray(X, dtype=np.float64) - mean
    top = float(np.abs(Xc).max())
    if top == 0.0 or not np.isfinite(top):
        return np.ascontiguousarray(Xc), mean, 1.0
    scale = top * float(np.sqrt(np.mean(np.var(Xc / top, axis=0))))
    if scale == 0.0 or not np.isfinite(scale):
        scale = 1.0
    return np.ascontiguousarray(Xc / scale), mean, scale


def sq_distances(X, C, *, chunk=4096):
    """All squared Euclidean distances ``||x_i - c_k||^2``, shape (n, K).

    From the differences (exact up to rounding, no cancellation: a point on a
    center is at distance 0 exactly), vectorised over row chunks so that the
    (chunk, K, d) temporary stays small.
    """
    out = np.empty((X.shape[0], C.shape[0]))
    for lo in range(0, X.shape[0], chunk):
        diff = X[lo:lo + chunk, None, :] - C[None, :, :]
        np.einsum("ikj,ikj->ik", diff, diff, out=out[lo:lo + chunk])
    return out
