"""Declarative parameter constraints (``_core.base``): the validator and every estimator
that declares ``_parameter_constraints``."""

import numbers

import numpy as np
import pytest

from metriclust import (CPCM, CPDUML, LVQ, MMC, ConstrainedKMeans, FuzzyCMeans, GaussianMixture,
                        KMeans, KMedoids, SelfOrganizingMap, TreeStructuredVQ)
from metriclust._core.base import (Interval, InvalidParameterError, Options,
                                   validate_parameters)
from metriclust.isodata import ISODATA

DECLARED = [KMeans, CPCM, CPDUML, MMC, ConstrainedKMeans, FuzzyCMeans, ISODATA, KMedoids, LVQ,
            GaussianMixture, SelfOrganizingMap, TreeStructuredVQ]


def test_interval_bounds_types_and_specials():
    pos_int = Interval(numbers.Integral, 1, None)
    assert pos_int.is_satisfied_by(1) and pos_int.is_satisfied_by(np.int64(2**40))
    assert not pos_int.is_satisfied_by(0) and not pos_int.is_satisfied_by(1.0)
    assert not pos_int.is_satisfied_by(True)                   # a bool is not a count
    open_pos = Interval(numbers.Real, 0, None, closed="neither", finite=True)
    assert open_pos.is_satisfied_by(1e-300) and not open_pos.is_satisfied_by(0.0)
    assert not open_pos.is_satisfied_by(float("inf"))
    assert not open_pos.is_satisfied_by(float("nan"))
    nonneg = Interval(numbers.Real, 0, None)
    assert nonneg.is_satisfied_by(float("inf")) and not nonneg.is_satisfied_by(float("nan"))
    unit = Interval(numbers.Real, 0, 1, closed="left")
    assert unit.is_satisfied_by(0) and not unit.is_satisfied_by(1)
    assert not unit.is_satisfied_by(float("inf"))
    assert str(unit) == "a float in the range [0, 1)"


def test_options_compare_within_a_type():
    o = Options("auto", None, True)
    assert o.is_satisfied_by("auto") and o.is_satisfied_by(None) and o.is_satisfied_by(True)
    assert not o.is_satisfied_by(1) and not o.is_satisfied_by("Auto")
    assert not o.is_satisfied_by(np.array(["auto"]))
    assert o.is_satisfied_by(np.str_("auto")) and o.is_satisfied_by(np.bool_(True))
    assert not o.is_satisfied_by(np.bool_(False)) and not o.is_satisfied_by(0)


def test_validate_parameters_names_the_parameter_and_what_it_accepts():
    cons = {"tol": [Interval(numbers.Real, 0, None)], "init": [Options("a", "b"), "array-like"],
            "rs": ["random_state"], "f": [callable, None], "metric": [str]}
    validate_parameters({"tol": 0.0, "init": [1, 2], "rs": None, "f": len, "metric": "l1"},
                        cons, "Est")
    with pytest.raises(TypeError, match="'metric' parameter of Est must be an instance of str"):
        validate_parameters({"metric": 1}, cons, "Est")
    validate_parameters({"rs": np.random.default_rng(0)}, cons, "Est")
    with pytest.raises(InvalidParameterError, match=r"'tol' parameter of Est must be a float "
                       r"in the range \[0, inf\); got -1"):
        validate_parameters({"tol": -1}, cons, "Est")
    with pytest.raises(ValueError, match=r"'init' .* one of 'a', 'b' or an array-like; got 'c'"):
        validate_parameters({"init": "c"}, cons, "Est")
    with pytest.raises(TypeError, match="'rs' parameter"):        # both kinds of error
        validate_parameters({"rs": -1}, cons, "Est")
    with pytest.raises(ValueError, match="'f' parameter"):
        validate_parameters({"f": 3}, cons, "Est")


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.__name__)
def test_every_constructor_parameter_is_declared(cls):
    assert set(cls._parameter_constraints) == set(cls._param_names())


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.__name__)
def test_defaults_satisfy_the_constraints(cls):
    validate_parameters(cls().get_params(deep=False), cls._parameter_constraints, cls.__name__)


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.__name__)
def test_fit_refuses_a_bad_value_of_every_parameter_before_any_work(cls):
    # a value no constraint of any parameter accepts: fit must name the parameter
    X = np.random.default_rng(0).normal(size=(20, 3))
    for name in cls._param_names():
        est = cls().set_params(**{name: object()})
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of {cls.__name__}"):
            est.fit(X)
