"""scikit-learn's estimator checks on the toolbox estimators (mixture, medoids,
fuzzy c-means, LVQ, TSVQ, SOM, ISODATA): parameters, cloning, fit/predict
contracts; every check passes, none is expected to fail."""

import warnings

import pytest

from metriclust.isodata import ISODATA
from metriclust import (LVQ, FuzzyCMeans, GaussianMixture, KMedoids, SelfOrganizingMap,
                        TreeStructuredVQ)

# No check is expected to fail (issue #19): NotFittedError is also scikit-learn's
# class once scikit-learn is loaded, so check_estimators_unfitted passes too.
EXPECTED = {}

CASES = {
    "GaussianMixture": lambda: GaussianMixture(2, random_state=0),
    "GaussianMixture-diag": lambda: GaussianMixture(2, covariance_type="diag", random_state=0),
    "KMedoids": lambda: KMedoids(2, random_state=0),
    "FuzzyCMeans": lambda: FuzzyCMeans(2, random_state=0),
    "TreeStructuredVQ": lambda: TreeStructuredVQ(2, random_state=0),
    "SelfOrganizingMap": lambda: SelfOrganizingMap(1, 2, random_state=0),
    "LVQ": lambda: LVQ(random_state=0),
    "ISODATA": lambda: ISODATA(2, random_state=0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_check_estimator(name):
    estimator_checks = pytest.importorskip("sklearn.utils.estimator_checks")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "does not inherit from BaseEstimator"
        estimator_checks.check_estimator(CASES[name](), expected_failed_checks=EXPECTED)
