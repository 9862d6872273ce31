"""Shared helpers of the toolbox estimators: one global scale.

Public classes and functions:

.. autosummary::

   standardise    -- centre X and divide it by one number; returns (Xs, mean, scale)
   rescale        -- new rows in the same units, (X - mean) / scale
   rescaled_input -- predict's checks, then rescale with the estimator's mean and scale

Dividing the data by one number (after centring) makes a fit invariant to the
scale of X and keeps sums of squares far from overflow and underflow (data at
1e150 or 1e-150), the library's contract for every estimator.
"""

import numpy as np

from .validation import check_predict_input

__all__ = ["standardise", "rescale", "rescaled_input"]


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


def rescale(X, mean, scale):
    """``(X - mean) / scale`` in float64, C-contiguous: new rows in the units of
    :func:`standardise`'s ``Xs`` (``predict`` and ``transform``)."""
    return np.ascontiguousarray((np.asarray(X, dtype=np.float64) - mean) / scale)


def rescaled_input(estimator, X, attribute):
    """The start of every toolbox ``predict``/``transform``: the checks of
    :func:`~metriclust._core.validation.check_predict_input` (fitted: ``attribute``
    set), then X in the units the estimator was fitted in (its ``_mean`` and
    ``_scale``, from :func:`standardise`)."""
    X = check_predict_input(estimator, X, attribute)
    return rescale(X, estimator._mean, estimator._scale)
