"""Input validation shared by every estimator and function.

Public classes and functions:

.. autosummary::

   InputError           -- a refusal of input the caller can fix (a ValueError)
   check_array          -- an array-like of finite numbers -> C-contiguous ndarray
   check_fit_input      -- ``fit``'s preamble: X, n_clusters against its rows, the Generator
   check_predict_input  -- ``predict``'s preamble: fitted, X, its number of features
   check_n_clusters     -- an int in [1, n_samples]
   check_n_features     -- X has the fitted number of columns
   check_scalar         -- a scalar's type and range, named in the error
   check_random_state   -- None / int / Generator / RandomState -> Generator
   check_sample_weight  -- finite non-negative weights with a positive sum
   check_pairs          -- index pairs into X, shape (m, 2)
   check_labels         -- hashable labels -> int64 codes 0..k-1
   max_abs_value        -- largest magnitude whose sums of squares stay finite
   is_dask_array        -- a dask array, told without importing Dask

Errors name the parameter and, for non-finite values, the first bad position,
so that a user can find the offending entry without a debugger.

Finite but huge input is refused here too, in one place for every estimator
and function (see :func:`max_abs_value`): squared distances and the sums of
squares behind every method must fit in floating point, so a value that makes
them overflow gets a ValueError naming the parameter and the remedy (rescale)
instead of an infinite or NaN result later.
"""

import math
import numbers

import numpy as np

from .._kernels._sums import value_range
from .base import check_is_fitted
from .threads import effective_n_threads

__all__ = [
    "InputError",
    "check_array",
    "check_fit_input",
    "check_labels",
    "check_n_clusters",
    "check_n_features",
    "check_pairs",
    "check_predict_input",
    "check_random_state",
    "check_sample_weight",
    "check_scalar",
    "is_dask_array",
    "max_abs_value",
]

_FLOAT_DTYPES = (np.float64, np.float32)


class InputError(ValueError):
    """A refusal of input the caller can fix: a malformed file, data or side
    information that a method cannot use, parameters that contradict each other.

    A ValueError, so that code catching ValueError keeps working. It is raised
    only where the library checks what it was given, never about an array it
    derived itself: a front end (the command line) shows it as one line and
    lets every other exception keep its traceback, because that is a bug.
    """


def _is_sparse(X):
    # Duck-typed so that scipy.sparse is not imported for dense input.
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def is_dask_array(X):
    """Whether X is a ``dask.array.Array``, decided without importing Dask.

    The estimators send such input to :mod:`metriclust._dask` (imported then).
    """
    return any(cls.__module__.split(".")[0] == "dask" and cls.__name__ == "Array"
               for cls in type(X).__mro__)


def check_array(
    X,
    *,
    name="X",
    dtype=_FLOAT_DTYPES,
    ensure_2d=True,
    ensure_min_samples=1,
    ensure_min_features=1,
    ensure_finite=True,
    copy=False,
):
    """Validate an array-like of numbers and return a C-contiguous ndarray.

    Parameters
    ----------
    X : array-like
        The input. Lists, tuples and array-likes are accepted; sparse matrices
        and complex values are refused.
    name : str
        The parameter's name, used in every error message.
    dtype : dtype or tuple of dtypes
        Accepted floating dtypes. With a tuple, an input already of one of them
        keeps it (float32 stays float32); anything else becomes the first.
    ensure_2d : bool
        Require a 2-D array (``(n_samples, n_features)``).
    ensure_min_samples, ensure_min_features : int
        Minimum number of rows and columns.
    ensure_finite : bool
        Refuse NaN and infinity, naming the first bad position, and values
        larger in magnitude than :func:`max_abs_value` allows.
    copy : bool
        Always return a new array.

    Returns
    -------
    ndarray
        C-contiguous array; copied only when needed (or when ``copy=True``).
    """
    if _is_sparse(X):
        raise TypeError(
            f"{name} is a sparse matrix; metriclust does not support sparse input. "
            "Convert it with .toarray() if it fits in memory."
        )
    dtypes = dtype if isinstance(dtype, tuple) else (dtype,)
    try:
        arr = np.asarray(X)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{name} is not a rectangular array: {exc}") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported in {name}.")
    if arr.dtype.kind == "O":
        # float() raises TypeError on non-numbers, which is what a user expects;
        # the message names the parameter.
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name} must hold numbers: {exc}") from None
    elif arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must hold numbers, got an array of dtype {arr.dtype} "
            "(strings and other objects are not converted)."
        )
    target = arr.dtype if arr.dtype in dtypes else np.dtype(dtypes[0])
    if ensure_2d:
        if arr.ndim != 2:
            raise ValueError(
                f"Expected a 2D array for {name}, got a {arr.ndim}D array of shape "
                f"{arr.shape}. Reshape your data with X.reshape(-1, 1) for a single "
                "feature or X.reshape(1, -1) for a single sample."
            )
        n_samples, n_features = arr.shape
        if n_samples < ensure_min_samples:
            raise ValueError(
                f"{name} has n_samples={n_samples}, while a minimum of "
                f"{ensure_min_samples} is required."
            )
        if n_features < ensure_min_features:
            raise ValueError(
                f"{name} has n_features={n_features}: {n_features} feature(s) "
                f"(shape={arr.shape}) while a minimum of {ensure_min_features} is required."
            )
    out = np.array(arr, dtype=target, order="C", copy=True) if copy else (
        np.ascontiguousarray(arr, dtype=target)
    )
    if ensure_finite and out.dtype.kind == "f":
        _check_finite(out, name)
    return out


def max_abs_value(dtype, n_samples, n_features):
    """Largest magnitude accepted in an ``(n_samples, n_features)`` input.

    ``sqrt(finfo(float64).max / (16 n_samples n_features))``, and for float32
    input also ``sqrt(finfo(float32).max / (16 n_features))``: below it, every
    squared difference of two entries summed over all entries (what inertia,
    scatter matrices and pair sums add up, in float64) stays below a quarter
    of float64's range, and a row's squared norm fits in the input dtype
    (float32 distances are computed in float32). About 1e150 for a thousand
    float64 entries, 1e18 for float32 rows of ten features.
    """
    n_entries = max(int(n_samples), 1) * max(int(n_features), 1)
    limit = math.sqrt(np.finfo(np.float64).max / (16.0 * n_entries))
    if np.dtype(dtype) == np.float32:
        limit = min(limit, math.sqrt(float(np.finfo(np.float32).max) / (16.0 * max(int(n_features), 1))))
    return limit


def check_magnitude(hi, lo, dtype, n_samples, n_features, *, name, shape, where=""):
    """Refuse an input whose largest and smallest values ``hi``, ``lo`` exceed
    :func:`max_abs_value` for ``(n_samples, n_features)``: a ValueError naming
    ``name``, its ``shape`` and dtype, the limit and the remedy (``where``, e.g.
    " in rows a:b", placed after the magnitude)."""
    limit = max_abs_value(dtype, n_samples, n_features)
    biggest = max(hi, -lo)
    if biggest > limit:
        remedy = f"Rescale {name}, e.g. divide it by its largest absolute value"
        if np.dtype(dtype) == np.float32:
            remedy += ", or pass float64 data"
        raise ValueError(
            f"Input {name} has a value of magnitude {biggest:.3g}{where}; with its shape "
            f"{shape} and dtype {np.dtype(dtype)}, values above {limit:.3g} would make "
            f"squared distances overflow. {remedy}."
        )


# Values from which _check_finite reads a contiguous array once in C (on the
# OpenMP threads) instead of numpy's max and min (two single-threaded passes):
# check_array of 1e6 x 64 float64 9-10 ms against 35-50 (benchmarks/RESULTS.md,
# k-means, ninth round).
_RANGE_IN_C_MIN = 1 << 16


def _check_finite(arr, name):
    # max and min propagate NaN and show infinity (no temporary); the
    # positional search runs only on failure.
    if arr.size == 0:
        return
    if arr.size >= _RANGE_IN_C_MIN and arr.dtype in _FLOAT_DTYPES and arr.flags.c_contiguous:
        lo, hi, has_nan = value_range(arr.reshape(-1), effective_n_threads())
        if has_nan:
            lo = hi = math.nan
    else:
        hi, lo = float(arr.max()), float(arr.min())
    if math.isfinite(hi) and math.isfinite(lo):
        n_features = arr.shape[1] if arr.ndim == 2 else 1
        check_magnitude(hi, lo, arr.dtype, arr.size // n_features, n_features,
                        name=name, shape=arr.shape)
        return
    bad = np.argwhere(~np.isfinite(arr))
    pos = tuple(int(i) for i in bad[0])
    kind = "NaN" if np.isnan(arr[pos]) else "infinity"
    where = f"row {pos[0]}, column {pos[1]}" if len(pos) == 2 else f"position {pos}"
    raise ValueError(
        f"Input {name} contains {kind} at {where} ({len(bad)} non-finite value(s) in all)."
    )


def check_n_clusters(n_clusters, n_samples, *, name="n_clusters"):
    """Check that ``n_clusters`` is an integer in ``[1, n_samples]``."""
    check_scalar(n_clusters, name, numbers.Integral, min_val=1)
    if n_clusters > n_samples:
        raise ValueError(
            f"n_samples={n_samples} should be >= {name}={n_clusters}."
        )
    return int(n_clusters)


def check_n_features(estimator, X):
    """Check that X has as many features as the data the estimator was fitted on."""
    expected = estimator.n_features_in_
    if X.shape[1] != expected:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
            f"expecting {expected} features as input."
        )


def check_fit_input(X, n_clusters=None, random_state=None, *, name="n_clusters",
                    dtype=_FLOAT_DTYPES, ensure_min_samples=1):
    """The data checks every estimator's ``fit`` starts with, in one place.

    Returns ``(X, n_clusters, rng)``: X through :func:`check_array`, the number
    of clusters checked against its rows (:func:`check_n_clusters`, named
    ``name``; None when ``n_clusters`` is None) and the Generator of
    :func:`check_random_state`, which draws nothing. The constructor parameters
    alone are checked before, on entry to ``fit`` (``_parameter_constraints``).
    """
    if not is_dask_array(X):    # a dask array's chunks are checked where they are read
        X = check_array(X, dtype=dtype, ensure_min_samples=ensure_min_samples)
    if n_clusters is not None:
        n_clusters = check_n_clusters(n_clusters, X.shape[0], name=name)
    return X, n_clusters, check_random_state(random_state)


def check_predict_input(estimator, X, attribute=None, *, dtype=_FLOAT_DTYPES):
    """The checks of ``predict``/``transform``: fitted (``attribute`` set, see
    :func:`~metriclust._core.base.check_is_fitted`), X an array of numbers with
    the fitted number of features. Returns X as :func:`check_array` does."""
    check_is_fitted(estimator, attribute)
    X = check_array(X, dtype=dtype)
    check_n_features(estimator, X)
    return X


def check_scalar(x, name, target_type, *, min_val=None, max_val=None,
                 include_boundaries="both", allow_inf=True):
    """Check a scalar parameter's type and range, naming it in the error.

    ``include_boundaries`` is one of "both", "left", "right", "neither".
    NaN is always refused (it passes every comparison); infinity unless
    ``allow_inf``.
    """
    if isinstance(x, bool) or not isinstance(x, target_type):
        types = target_type if isinstance(target_type, tuple) else (target_type,)
        names = " or ".join(getattr(t, "__name__", str(t)) for t in types)
        raise TypeError(f"{name} must be an instance of {names}, got {x!r}.")
    if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral):
        if math.isnan(x):
            raise ValueError(f"{name} == {x!r}, must be a number, not NaN.")
        if not allow_inf and math.isinf(x):
            raise ValueError(f"{name} == {x!r}, must be finite.")
    left = include_boundaries in ("both", "left")
    right = include_boundaries in ("both", "right")
    if min_val is not None and (x < min_val or (x == min_val and not left)):
        op = ">=" if left else ">"
        raise ValueError(f"{name} == {x!r}, must be {op} {min_val}.")
    if max_val is not None and (x > max_val or (x == max_val and not right)):
        op = "<=" if right else "<"
        raise ValueError(f"{name} == {x!r}, must be {op} {max_val}.")
    return x


def check_random_state(random_state, *, name="random_state"):
    """Turn ``random_state`` into a ``numpy.random.Generator``.

    None gives fresh entropy, an int seeds a new Generator, a Generator is used
    as is (and advanced), and a legacy ``RandomState`` seeds a new Generator
    from its stream.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name} must be non-negative, got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"{name} must be None, an int, or a numpy.random.Generator; got {random_state!r}."
    )


def check_sample_weight(sample_weight, n_samples, dtype=np.float64, *,
                        name="sample_weight"):
    """Return sample weights as a 1-D array of ``dtype``; None means all ones.

    Weights must be finite and non-negative with a positive sum.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    if np.ndim(sample_weight) == 0:
        w = np.full(n_samples, sample_weight, dtype=np.float64)
    else:
        # Finiteness is checked below; the magnitude limit of check_array is for
        # data (squared distances), weights are normalized by their users.
        w = check_array(sample_weight, name=name, dtype=np.float64, ensure_2d=False,
                        ensure_min_samples=0, ensure_finite=False)
        if w.ndim != 1 or w.shape[0] != n_samples:
            raise ValueError(
                f"{name} must have shape ({n_samples},), got {w.shape}."
            )
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contains NaN or infinity.")
    if np.any(w < 0):
        raise ValueError(f"{name} must be non-negative; got {w.min()!r} at index {int(np.argmin(w))}.")
    if w.sum() <= 0:
        raise ValueError(f"{name} must have a positive sum (all weights are zero).")
    if np.dtype(dtype) != w.dtype:
        if w.max() > np.finfo(dtype).max:
            raise ValueError(
                f"{name} has values up to {w.max():.3g}, beyond the range of the data's "
                f"dtype {np.dtype(dtype)}; rescale {name} (only the ratios of the weights matter)."
            )
        w = w.astype(dtype)
    return w


def check_pairs(pairs, n_samples, *, name="pairs", allow_empty=True, allow_self=False):
    """Validate index pairs: an int64 array of shape (m, 2) of indices into X.

    Indices must lie in ``[0, n_samples)`` and, unless ``allow_self`` (a
    distance query, where ``d(x, x) = 0`` is a valid answer), a pair may not
    join a point to itself.
    """
    arr = np.asarray(pairs)
    if arr.size == 0:
        if not allow_empty:
            raise ValueError(f"{name} is empty; at least one pair is required.")
        return np.empty((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_pairs, 2), got {arr.shape}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold integer indices.")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer indices, got dtype {arr.dtype}.")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    bad = (out < 0) | (out >= n_samples)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(
            f"{name}[{r}, {c}] = {out[r, c]} is out of range for n_samples={n_samples}."
        )
    self_pairs = out[:, 0] == out[:, 1]
    if not allow_self and self_pairs.any():
        r = int(np.argmax(self_pairs))
        raise ValueError(f"{name}[{r}] pairs point {out[r, 0]} with itself.")
    return out


def check_labels(labels, *, name="labels", n_samples=None):
    """Encode a 1-D array of hashable labels as int64 codes 0..k-1.

    Returns ``(codes, classes)`` with ``classes[codes] == labels``.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}.")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} entries, expected {n_samples}."
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity.")
    if arr.dtype.kind in "biu" and arr.size:
        fast = _encode_small_int_range(arr)
        if fast is not None:
            return fast
    try:
        classes, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:  # mixed, unorderable types
        raise TypeError(f"{name} must hold mutually comparable values: {exc}") from None
    return codes.astype(np.int64).reshape(-1), classes


def _encode_small_int_range(arr):
    """O(n + range) encoding of integer labels whose range is at most ~2n.

    Gives exactly ``np.unique(arr, return_inverse=True)``'s codes and classes
    (same dtype) without the O(n log n) sort; None when the range is too wide.
    """
    dtype = arr.dtype
    if dtype.kind == "b":
        arr = arr.view(np.uint8)
    lo, hi = int(arr.min()), int(arr.max())
    if hi - lo > 2 * arr.shape[0] + 1024:
        return None
    # Subtract in 64 bits of the same signedness: every true offset lies in
    # [0, hi - lo], so wrap-around arithmetic gives it exactly.
    wide = np.int64 if arr.dtype.kind == "i" else np.uint64
    base = wide(lo)
    offset = (arr.astype(wide, copy=False) - base).astype(np.intp)
    present = np.bincount(offset, minlength=hi - lo + 1) > 0
    codes = (np.cumsum(present, dtype=np.int64) - 1)[offset]
    classes = (np.flatnonzero(present).astype(wide) + base).astype(dtype)
    return codes, classes
