"""Estimator base classes following scikit-learn's conventions.

No scikit-learn import at runtime: ``__sklearn_tags__`` imports it lazily, and
only scikit-learn itself calls that method.
"""

import inspect

import numpy as np

__all__ = ["BaseEstimator", "ClusterMixin", "TransformerMixin", "NotFittedError",
           "check_is_fitted"]


class NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``."""


class BaseEstimator:
    """Parameters stored untouched by ``__init__``; ``get_params``/``set_params``."""

    @classmethod
    def _param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise RuntimeError(f"{cls.__name__}.__init__ may not take *args/**kwargs.")
            names.append(p.name)
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
    """``fit_transform`` for estimators with ``transform``."""

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return ``transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)

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
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )
