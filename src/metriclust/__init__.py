"""metriclust: clustering with learned distance metrics.

Three metric-learning methods on one set of compiled OpenMP kernels:

- :class:`CPCM` (Gupta, Foster & Ungar 2008): unsupervised, linear metric by
  predicting cluster membership.
- :class:`MMC` (Xing, Ng, Jordan & Russell 2003): Mahalanobis metric from
  pairs marked similar / dissimilar.
- :class:`CPDUML`: unsupervised, nonlinear metric by Coherent Point Drift.

plus :class:`KMeans`, :class:`ConstrainedKMeans`, the Gaussian Gram
(:mod:`metriclust.kernels`), side-information tools
(:mod:`metriclust.constraints`) and clustering measures (:mod:`metriclust.metrics`).
"""

import importlib

from ._version import __version__

# Public name -> module. Imported on first use, so `import metriclust` stays cheap.
_LAZY = {
    "KMeans": "metriclust.kmeans",
    "ConstrainedKMeans": "metriclust.constraints",
    "MMC": "metriclust.mmc",
    "CPCM": "metriclust.cpcm",
    "CPDUML": "metriclust.cpduml",
    "NotFittedError": "metriclust._core.base",
    # the clustering toolbox of the lecture notes
    "GaussianMixture": "metriclust.mixture",
    "KMedoids": "metriclust.kmedoids",
    "FuzzyCMeans": "metriclust.fuzzy",
    "LVQ": "metriclust.lvq",
    "TreeStructuredVQ": "metriclust.tsvq",
    "SelfOrganizingMap": "metriclust.som",
}
_SUBMODULES = ("metrics", "datasets", "kernels", "constraints", "selection")

__all__ = sorted(_LAZY) + list(_SUBMODULES) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"metriclust.{name}")
    else:
        raise AttributeError(f"module 'metriclust' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return __all__
