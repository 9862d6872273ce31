"""Gaussian Gram matrix and its low-rank factors.

Public functions and classes (all computed by :mod:`metriclust._core.gram`):

.. autosummary::

   gaussian_gram             -- Gaussian (RBF) Gram matrix, parallel tiles
   gram_matmat               -- ``G(X, Y) @ V`` without storing ``G``
   median_pairwise_distance  -- the scale-free default kernel width
   Nystrom                   -- rank-m factor ``G ~= U U^T``, a transformer
   nystrom_factor            -- the factor ``U`` of :class:`Nystrom` in one call
   top_eigenpairs            -- largest eigenpairs of ``G`` (dense, subspace, Lanczos)

These are what CPCM's kernel predictor and CPD-UML's large-N path use instead
of the dense ``N x N`` matrix.

Examples
--------
>>> import numpy as np
>>> from metriclust.kernels import gaussian_gram
>>> np.round(gaussian_gram(np.array([[0.0, 0.0], [3.0, 4.0]]), sigma=5.0), 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
"""

from ._core.gram import (Nystrom, gaussian_gram, gram_matmat, median_pairwise_distance,
                         nystrom_factor, top_eigenpairs)

__all__ = ["gaussian_gram", "gram_matmat", "median_pairwise_distance", "Nystrom",
           "nystrom_factor", "top_eigenpairs"]
