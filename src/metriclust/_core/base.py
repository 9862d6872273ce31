"""Estimator base classes following scikit-learn's conventions.

Public classes and functions:

.. autosummary::

   BaseEstimator                       -- get_params / set_params / repr, parameters checked on fit
   ClusterMixin                        -- ``fit_predict``
   TransformerMixin                    -- ``fit_transform``, ``set_output``
   Interval, Options                   -- the declarative constraints of ``_parameter_constraints``
   validate_parameters                 -- check a dict of parameters against such constraints
   InvalidParameterError               -- what it raises (a ValueError and a TypeError)
   check_is_fitted                     -- raise NotFittedError unless fitted
   NotFittedError, ConvergenceWarning  -- also scikit-learn's classes when it is loaded

No scikit-learn import at runtime: ``__sklearn_tags__`` imports it lazily, and
only scikit-learn itself calls that method. Where scikit-learn is already
loaded, the errors and warnings raised here are also instances of its classes
(``sklearn.exceptions.NotFittedError``, ``ConvergenceWarning``), so code written
for scikit-learn catches them.

Every subclass of :class:`BaseEstimator` gets, without code of its own:

- ``feature_names_in_`` when fitted on a DataFrame with string column names,
  and the check that later data has the same columns (``__init_subclass__``
  wraps ``fit``, ``predict``, ``transform``, ``score``...);
- with :class:`TransformerMixin`, ``get_feature_names_out`` and
  ``set_output(transform="pandas" | "polars" | "default")``;
- its constructor parameters checked once, when ``fit`` (or ``fit_predict``,
  ``fit_transform``...) is entered, against the class's declarative
  ``_parameter_constraints`` (:class:`Interval`, :class:`Options`, a type,
  "array-like", "boolean", "random_state", callable, None), scikit-learn's
  convention written here.
"""

import functools
import importlib
import inspect
import math
import numbers
import sys
import threading
import warnings

import numpy as np

__all__ = ["BaseEstimator", "ClusterMixin", "TransformerMixin", "NotFittedError",
           "ConvergenceWarning", "check_is_fitted"]


class NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``.

    When scikit-learn is loaded, the error raised is also an instance of
    ``sklearn.exceptions.NotFittedError``.
    """


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped short of what was asked (or found fewer clusters).

    When scikit-learn is loaded, the warning is also an instance of
    ``sklearn.exceptions.ConvergenceWarning``.
    """


_SKLEARN_TWINS = {}  # our class -> the subclass that also derives from scikit-learn's


def _with_sklearn_twin(cls):
    """``cls``, or a subclass of it and of scikit-learn's class of the same name.

    This never loads scikit-learn (only its small ``exceptions`` module once
    scikit-learn is loaded): a caller who catches scikit-learn's class has
    imported scikit-learn already, and otherwise ``cls`` is enough.
    """
    if "sklearn" not in sys.modules:
        return cls
    twin = _SKLEARN_TWINS.get(cls)
    if twin is None:
        try:
            sk_cls = getattr(importlib.import_module("sklearn.exceptions"), cls.__name__)
        except (ImportError, AttributeError):  # a broken or very old scikit-learn
            return cls
        twin = type(cls.__name__, (cls, sk_cls), {
            "__module__": __name__, "__qualname__": f"_SklearnTwin{cls.__name__}",
            "__doc__": cls.__doc__})
        _SKLEARN_TWINS[cls] = twin
    return twin


def __getattr__(name):
    # Lets pickle find a twin class in a process where it was not built yet
    # (unpickling one means scikit-learn is installed).
    for cls in (NotFittedError, ConvergenceWarning):
        if name == f"_SklearnTwin{cls.__name__}":
            importlib.import_module("sklearn.exceptions")
            return _with_sklearn_twin(cls)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------
# Feature names and output containers
# ---------------------------------------------------------------------------
_FIT_METHODS = ("fit", "fit_transform", "fit_predict")
_USE_METHODS = ("predict", "transform", "score", "decision_function", "predict_proba",
                "predict_log_proba", "score_samples")
_TRANSFORM_METHODS = ("transform", "fit_transform")
_OUTPUTS = ("default", "pandas", "polars")
_calls = threading.local()  # ids of the estimators inside a wrapped method, this thread


def _feature_names(X):
    """Column names of a DataFrame as an object array; None for arrays and lists."""
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray):
        return None
    names = np.asarray(list(columns), dtype=object)
    is_str = [isinstance(n, str) for n in names]
    if not any(is_str):
        return None
    if not all(is_str):
        kinds = sorted({type(n).__name__ for n in names})
        raise TypeError(
            "Feature names are only supported if all input features have string names, "
            f"but your input has {kinds} as feature name / column name types. Convert "
            "them all to str, e.g. X.columns = X.columns.astype(str).")
    return names


def _check_feature_names(estimator, X):
    """Warn or raise when X's columns differ from those seen in ``fit``."""
    fitted = getattr(estimator, "feature_names_in_", None)
    given = _feature_names(X)
    name = type(estimator).__name__
    if fitted is None and given is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=3)
        return
    if given is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=3)
        return
    if len(fitted) == len(given) and np.all(fitted == given):
        return
    unseen = sorted(set(given) - set(fitted))
    missing = sorted(set(fitted) - set(given))

    def listing(names):  # at most five, as scikit-learn prints them
        return "".join(f"- {n}\n" for n in names[:5]) + ("- ...\n" if len(names) > 5 else "")

    msg = "The feature names should match those that were passed during fit.\n"
    if unseen:
        msg += "Feature names unseen at fit time:\n" + listing(unseen)
    if missing:
        msg += "Feature names seen at fit time, yet now missing:\n" + listing(missing)
    if not unseen and not missing:
        msg += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(msg)


def _data_argument(args, kwargs):
    if args:
        return args[0]
    for key in ("X", "Y"):
        if key in kwargs:
            return kwargs[key]
    return None


def _output_format(estimator):
    """The container asked for by ``set_output``, else scikit-learn's global setting."""
    chosen = getattr(estimator, "_sklearn_output_config", {}).get("transform")
    if chosen is None and "sklearn" in sys.modules:
        chosen = importlib.import_module("sklearn").get_config().get("transform_output")
    return chosen or "default"


def _wrap_output(estimator, out, X):
    fmt = _output_format(estimator)
    if fmt == "default" or not isinstance(out, np.ndarray) or out.ndim != 2:
        return out
    columns = [str(c) for c in estimator.get_feature_names_out()]
    if fmt == "pandas":
        import pandas as pd

        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(out, index=index, columns=columns, copy=False)
    import polars as pl

    return pl.DataFrame(out, schema=columns, orient="row")


def _wrap_method(name, method):
    """``method`` with the feature-name bookkeeping and the output container.

    Only the outermost call on an estimator does the bookkeeping, so that a
    method calling another (``predict`` calling ``transform``, ``fit_transform``
    calling ``fit``) neither checks twice nor gets a DataFrame back internally.
    """

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        active = _calls.__dict__.setdefault("ids", set())
        if id(self) in active:
            return method(self, *args, **kwargs)
        X = _data_argument(args, kwargs)
        if name in _USE_METHODS and self.__sklearn_is_fitted__():
            _check_feature_names(self, X)
        names = _feature_names(X) if name in _FIT_METHODS else None
        if name in _FIT_METHODS:
            self._validate_params()
        active.add(id(self))
        try:
            out = method(self, *args, **kwargs)
        finally:
            active.discard(id(self))
        if name in _FIT_METHODS:
            if names is not None:
                self.feature_names_in_ = names
            elif "feature_names_in_" in vars(self):
                del self.feature_names_in_
        if name in _TRANSFORM_METHODS and hasattr(self, "get_feature_names_out"):
            out = _wrap_output(self, out, X)
        return out

    wrapped._feature_names_wrapped = True
    return wrapped


# --------------------------------------------------------------------------
# Declarative parameter constraints


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter of the wrong type or out of range (both a
    ValueError and a TypeError, as scikit-learn's class of the same name)."""


class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``) between
    ``left`` and ``right`` (None: unbounded); ``closed`` is "both", "left",
    "right" or "neither". NaN never belongs; infinity only where ``right`` is None
    and ``finite`` is False. Booleans are not numbers here."""

    def __init__(self, kind, left, right, *, closed="both", finite=False):
        self.kind, self.left, self.right = kind, left, right
        self.closed, self.finite = closed, finite

    def is_satisfied_by(self, x):
        if isinstance(x, bool) or not isinstance(x, self.kind):
            return False
        if isinstance(x, numbers.Real) and math.isnan(x):
            return False
        if math.isinf(x) and (self.finite or self.right is not None):
            return False
        lo_ok = self.left is None or x > self.left or (
            x == self.left and self.closed in ("both", "left"))
        hi_ok = self.right is None or x < self.right or (
            x == self.right and self.closed in ("both", "right"))
        return lo_ok and hi_ok

    def __str__(self):
        kind = "an int" if self.kind is numbers.Integral else "a float"
        lo = "-inf" if self.left is None else self.left
        hi = "inf" if self.right is None else self.right
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        text = f"{kind} in the range {lb}{lo}, {hi}{rb}"
        return text + (", finite" if self.finite and self.right is None else "")


class Options:
    """One of a few given values (strings, None, booleans), compared only with
    values of the same kind (so ``1`` is not ``True``; ``numpy.str_`` and
    ``numpy.bool_`` count as ``str`` and ``bool``)."""

    def __init__(self, *values):
        self.values = values

    def is_satisfied_by(self, x):
        for v in self.values:
            if v is None:
                ok = x is None
            elif isinstance(v, bool):
                ok = isinstance(x, (bool, np.bool_)) and bool(x) is v
            else:
                ok = isinstance(x, str) and x == v
            if ok:
                return True
        return False

    def __str__(self):
        return "one of " + ", ".join(repr(v) for v in self.values)


def _random_state_ok(x):
    if x is None or isinstance(x, (np.random.Generator, np.random.RandomState)):
        return True
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and x >= 0


_NAMED = {
    "array-like": (lambda x: isinstance(x, np.ndarray) or (
        hasattr(x, "__len__") and hasattr(x, "__getitem__") and not isinstance(x, (str, bytes))),
        "an array-like"),
    "random_state": (_random_state_ok,
                     "None, a non-negative int, a numpy Generator or RandomState"),
    "boolean": (lambda x: isinstance(x, (bool, np.bool_)), "True or False"),
    callable: (callable, "a callable"),
    None: (lambda x: x is None, "None"),
}


def _satisfies(constraint, value):
    if isinstance(constraint, (Interval, Options)):
        return constraint.is_satisfied_by(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return _NAMED[constraint][0](value)


def _describe(constraint):
    if isinstance(constraint, (Interval, Options)):
        return str(constraint)
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__}"
    return _NAMED[constraint][1]


def validate_parameters(params, constraints, owner):
    """Raise :class:`InvalidParameterError` naming the first parameter in
    ``params`` that satisfies none of its ``constraints[name]`` (a list; a
    parameter not listed is not checked here)."""
    for name, allowed in constraints.items():
        if name not in params:
            continue
        value = params[name]
        if any(_satisfies(c, value) for c in allowed):
            continue
        options = [_describe(c) for c in allowed]
        wanted = options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be {wanted}; got {value!r}.")


class BaseEstimator:
    """Parameters stored untouched by ``__init__``; ``get_params``/``set_params``.

    Subclasses also record ``feature_names_in_`` (see the module docstring).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _FIT_METHODS + _USE_METHODS:
            method = getattr(cls, name, None)
            if callable(method) and not getattr(method, "_feature_names_wrapped", False):
                setattr(cls, name, _wrap_method(name, method))

    @classmethod
    def _param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        # inspect.signature costs ~0.1-0.2 ms, paid by every fit's validation:
        # once per class (and __init__, should it be replaced).
        cached = cls.__dict__.get("_param_names_cache")
        if cached is not None and cached[0] is init:
            return list(cached[1])
        sig = inspect.signature(init)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise RuntimeError(f"{cls.__name__}.__init__ may not take *args/**kwargs.")
            names.append(p.name)
        cls._param_names_cache = (init, tuple(sorted(names)))
        return sorted(names)

    def get_params(self, deep=True):
        """Return the constructor parameters as a dict."""
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                for k, v in value.get_params().items():
                    out[f"{name}__{k}"] = v
            out[name] = value
        return out

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = self._param_names()
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {valid!r}."
                )
            if sub:
                getattr(self, name).set_params(**{sub: value})
            else:
                setattr(self, name, value)
        return self

    def __repr__(self):
        # Show only parameters that differ from their defaults, as scikit-learn does.
        sig = inspect.signature(type(self).__init__)
        shown = []
        for name in self._param_names():
            value = getattr(self, name, None)
            default = sig.parameters[name].default
            if _differs(value, default):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def _validate_params(self):
        """Check every constructor parameter against ``_parameter_constraints``."""
        constraints = getattr(type(self), "_parameter_constraints", None)
        if constraints is not None:
            validate_parameters(self.get_params(deep=False), constraints, type(self).__name__)

    def __sklearn_is_fitted__(self):
        return any(k.endswith("_") and not k.startswith("__") for k in vars(self))

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags

        tags = Tags(estimator_type=None, target_tags=TargetTags(required=False))
        tags.input_tags.allow_nan = False
        return tags

    def __getstate__(self):
        return dict(vars(self))

    def __setstate__(self, state):
        vars(self).update(state)


def _differs(value, default):
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return True
    try:
        return bool(value != default)
    except Exception:  # noqa: BLE001 - objects with odd __ne__
        return value is not default


class ClusterMixin:
    """``fit_predict`` for clusterers; scikit-learn sees ``estimator_type='clusterer'``."""

    _estimator_type = "clusterer"

    def fit_predict(self, X, y=None, **fit_params):
        """Fit and return ``labels_``."""
        return self.fit(X, y, **fit_params).labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "clusterer"
        from sklearn.utils import TransformerTags

        if hasattr(self, "transform"):
            tags.transformer_tags = TransformerTags()
        return tags


class TransformerMixin:
    """``fit_transform``, ``get_feature_names_out`` and ``set_output``.

    An estimator using it defines ``_n_features_out``, the number of columns
    ``transform`` returns.
    """

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return ``transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of ``transform``'s output: ``<classname>0``, ...

        Parameters
        ----------
        input_features : array-like of str, optional
            Only checked: its length must be ``n_features_in_``, and it must equal
            ``feature_names_in_`` when that is set.

        Returns
        -------
        ndarray of str objects
        """
        check_is_fitted(self)
        if input_features is not None:
            given = np.asarray(input_features, dtype=object)
            if given.ndim != 1 or len(given) != self.n_features_in_:
                raise ValueError(
                    "input_features should have length equal to number of features "
                    f"({self.n_features_in_}), got {len(given)}")
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and not np.array_equal(given, fitted):
                raise ValueError("input_features is not equal to feature_names_in_")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self._n_features_out)], dtype=object)

    def set_output(self, *, transform=None):
        """Choose the container ``transform`` and ``fit_transform`` return.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None
            "default" gives ndarrays; "pandas"/"polars" a DataFrame with the
            columns of ``get_feature_names_out`` (pandas keeps X's index); None
            leaves the setting unchanged. Without a call, scikit-learn's global
            ``transform_output`` applies when scikit-learn is loaded.

        Returns
        -------
        self
        """
        if transform is None:
            return self
        if transform not in _OUTPUTS:
            raise ValueError(f"transform must be one of {_OUTPUTS} or None, got {transform!r}.")
        if transform != "default":
            try:
                importlib.import_module(transform)
            except ImportError:
                raise ImportError(f"set_output(transform={transform!r}) needs {transform}, "
                                  "which is not installed.") from None
        self._sklearn_output_config = {"transform": transform}
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        from sklearn.utils import TransformerTags

        tags.transformer_tags = TransformerTags()
        return tags


def check_is_fitted(estimator, attributes=None):
    """Raise ``NotFittedError`` unless the estimator has been fitted."""
    if attributes is None:
        fitted = estimator.__sklearn_is_fitted__()
    else:
        names = [attributes] if isinstance(attributes, str) else attributes
        fitted = all(hasattr(estimator, a) for a in names)
    if not fitted:
        raise _with_sklearn_twin(NotFittedError)(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )
