"""Data generators from the papers' figures, and a reader for the shared CSV data.

Public functions and classes:

.. autosummary::

   load_csv                 -- read a numeric CSV file with a header and a label column
   make_concentric_circles  -- concentric noisy circles (CPCM Fig. 1(f))
   make_moons               -- two interleaving half circles (CPD-UML Fig. 1)
   make_parallel_clouds     -- clouds hidden by correlated and noise dimensions (CPCM Sec. 5.1)
   make_parallel_lines      -- parallel noisy line segments (CPCM Fig. 1(a))
   make_xing_artificial     -- the 3-D two-class examples of MMC (Xing et al. 2003, Figs. 4, 5)
   make_xing_metric_examples -- the 3-D data of MMC's learned metrics (Xing et al. 2003, Figs. 2, 3)

Every generator is deterministic given ``random_state`` (None, an int, or a
``numpy.random.Generator``) and returns ``(X, y)``: ``X`` a C-contiguous
float64 array of shape ``(n_samples, n_features)`` and ``y`` the int64 class of
each row, ``0 .. n_classes - 1``. Classes are as balanced as ``n_samples``
allows (the first classes get the extra points). Rows are shuffled unless
``shuffle=False``, in which case they come class by class.

The papers draw these data sets without giving all of their parameters; each
docstring says what the paper fixes and what was chosen here.
"""

import csv
import errno
import math
import numbers
import os
import warnings

import numpy as np

from ._core.validation import InputError, check_random_state, check_scalar

__all__ = [
    "load_csv",
    "make_concentric_circles",
    "make_moons",
    "make_parallel_clouds",
    "make_parallel_lines",
    "make_xing_artificial",
    "make_xing_metric_examples",
]


# --------------------------------------------------------------------------
# Helpers


def _check_n_samples(n_samples, n_classes):
    check_scalar(n_samples, "n_samples", numbers.Integral, min_val=1)
    if n_samples < n_classes:
        raise ValueError(
            f"n_samples={n_samples} must be at least the number of classes ({n_classes})."
        )
    return int(n_samples)


def _check_nonneg(value, name):
    check_scalar(value, name, numbers.Real, min_val=0)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return float(value)


def _check_positive(value, name):
    check_scalar(value, name, numbers.Real, min_val=0, include_boundaries="neither")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return float(value)


def _balanced_labels(n_samples, n_classes):
    """Class sizes as equal as possible, class by class: [0, 0, .., 1, 1, ..]."""
    sizes = np.full(n_classes, n_samples // n_classes)
    sizes[: n_samples % n_classes] += 1
    return np.repeat(np.arange(n_classes, dtype=np.int64), sizes)


def _finish(X, y, shuffle, rng):
    if shuffle:
        order = rng.permutation(y.shape[0])
        X, y = X[order], y[order]
    return np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(y, dtype=np.int64)


def _lines(y, n_lines, length, gap, noise, rng):
    """Horizontal segments of the given length at heights (k - (n_lines-1)/2) * gap."""
    n = y.shape[0]
    along = rng.uniform(-0.5 * length, 0.5 * length, size=n)
    height = (y - 0.5 * (n_lines - 1)) * gap
    return np.column_stack([along, height]) + rng.normal(scale=noise, size=(n, 2))


# --------------------------------------------------------------------------
# Generators


def make_parallel_lines(n_samples=300, *, n_lines=2, length=10.0, gap=3.5, noise=0.36,
                        shuffle=True, random_state=None):
    r"""Parallel noisy line segments (CPCM, Gupta, Foster & Ungar 2008, Fig. 1(a) and (d)).

    Line ``k`` is the horizontal segment ``{(t, h_k) : |t| <= length / 2}`` at
    height ``h_k = (k - (n_lines - 1) / 2) * gap``; points are drawn uniformly
    along it and get isotropic Gaussian noise of standard deviation ``noise``:

    .. math:: x = (t, h_{y}) + \varepsilon,\quad t \sim U(-L/2, L/2),\quad
              \varepsilon \sim N(0, \sigma^2 I_2)

    Because the lines are much longer than the gap between them, k-means
    prefers to cut across them (Fig. 1(a): "parallel vertical bands"), while
    the classes are separated by the second coordinate alone.

    The paper gives neither the number of points, the length, the gap nor the
    noise. The defaults were *tuned* to reproduce its two-line blur ratios for
    K = 2, so a check of those two numbers passes by construction: k-means'
    partition has blur ratio about 0.45 in the raw space (paper: 0.447), and the
    true lines have blur ratio about 0.04 in the least-squares prediction space
    (paper: 0.041 for CPCM's partition). What does not depend on the tuning:
    k-means' blur ratio hardly moves with ``noise``, the lines' grows with it
    and stays below k-means' while the lines are apart.

    Parameters
    ----------
    n_samples : int, default=300
        Total number of points, split evenly over the lines.
    n_lines : int, default=2
        Number of lines (Fig. 1(a) has 2, Fig. 1(d) has 3); at least 2.
    length : float, default=10.0
        Length of each segment.
    gap : float, default=3.5
        Distance between neighbouring lines.
    noise : float, default=0.36
        Standard deviation of the Gaussian noise added to both coordinates.
    shuffle : bool, default=True
        Shuffle the rows.
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64
        The line of each point, ordered by height.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.datasets import make_parallel_lines
    >>> X, y = make_parallel_lines(90, n_lines=3, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((90, 2), [30, 30, 30])
    """
    check_scalar(n_lines, "n_lines", numbers.Integral, min_val=2)
    n = _check_n_samples(n_samples, n_lines)
    length = _check_positive(length, "length")
    gap = _check_positive(gap, "gap")
    noise = _check_nonneg(noise, "noise")
    rng = check_random_state(random_state)
    y = _balanced_labels(n, int(n_lines))
    X = _lines(y, int(n_lines), length, gap, noise, rng)
    return _finish(X, y, shuffle, rng)


def make_parallel_clouds(n_samples=300, *, n_noise_correlated=3, n_noise=50, n_clouds=3,
                         length=10.0, gap=3.5, noise=0.36, correlated_scale=10.0,
                         correlation=0.9, noise_scale=1.0, shuffle=True, random_state=None):
    r"""Parallel clouds hidden by correlated and by many noise dimensions (CPCM Sec. 5.1).

    The paper's high-dimensional example: "the three parallel cloud example of
    Figure 1(d)" plus "3 dimensions of high-variance, highly correlated Gaussian
    noise" plus "50 dimensions of Gaussian noise"; only CPCM with a stepwise
    predictor recovers the clouds (its Fig. 2). The columns are

    - 0, 1: the clouds, exactly :func:`make_parallel_lines` with ``n_clouds`` lines;
    - ``2 .. 2 + n_noise_correlated``: ``correlated_scale * (sqrt(rho) f +
      sqrt(1 - rho) e_j)`` with one shared factor ``f ~ N(0, 1)`` per point and
      independent ``e_j ~ N(0, 1)``, so each has standard deviation
      ``correlated_scale`` and any two have correlation ``rho = correlation``;
    - the last ``n_noise``: independent ``N(0, noise_scale^2)``.

    None of the noise depends on the class. The paper does not quantify "high
    variance" or "highly correlated"; the defaults (standard deviation 10
    against the clouds' spread of about 3, correlation 0.9) make the
    correlated dimensions dominate every Euclidean criterion.

    Parameters
    ----------
    n_samples : int, default=300
        Total number of points.
    n_noise_correlated : int, default=3
        Number of correlated high-variance noise dimensions.
    n_noise : int, default=50
        Number of independent Gaussian noise dimensions.
    n_clouds : int, default=3
        Number of parallel clouds (classes); at least 2.
    length, gap, noise : float
        Geometry of the clouds, as in :func:`make_parallel_lines`.
    correlated_scale : float, default=10.0
        Standard deviation of each correlated noise dimension.
    correlation : float in [0, 1], default=0.9
        Correlation between any two correlated noise dimensions.
    noise_scale : float, default=1.0
        Standard deviation of the independent noise dimensions.
    shuffle : bool, default=True
        Shuffle the rows.
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 2 + n_noise_correlated + n_noise), float64
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> from metriclust.datasets import make_parallel_clouds
    >>> X, y = make_parallel_clouds(60, random_state=0)
    >>> X.shape
    (60, 55)
    """
    check_scalar(n_clouds, "n_clouds", numbers.Integral, min_val=2)
    n = _check_n_samples(n_samples, n_clouds)
    check_scalar(n_noise_correlated, "n_noise_correlated", numbers.Integral, min_val=0)
    check_scalar(n_noise, "n_noise", numbers.Integral, min_val=0)
    length = _check_positive(length, "length")
    gap = _check_positive(gap, "gap")
    noise = _check_nonneg(noise, "noise")
    correlated_scale = _check_nonneg(correlated_scale, "correlated_scale")
    check_scalar(correlation, "correlation", numbers.Real, min_val=0, max_val=1)
    noise_scale = _check_nonneg(noise_scale, "noise_scale")
    rng = check_random_state(random_state)

    y = _balanced_labels(n, int(n_clouds))
    clouds = _lines(y, int(n_clouds), length, gap, noise, rng)
    factor = rng.standard_normal((n, 1))
    own = rng.standard_normal((n, int(n_noise_correlated)))
    rho = float(correlation)
    correlated = correlated_scale * (np.sqrt(rho) * factor + np.sqrt(1.0 - rho) * own)
    white = rng.normal(scale=noise_scale, size=(n, int(n_noise)))
    X = np.hstack([clouds, correlated, white])
    return _finish(X, y, shuffle, rng)


def make_concentric_circles(n_samples=300, *, n_circles=3, radii=None, noise=0.1,
                            shuffle=True, random_state=None):
    r"""Concentric noisy circles (CPCM Fig. 1(f), three circles with CPCM-RKHS).

    Circle ``k`` has radius ``r_k``; angles are uniform on ``[0, 2 pi)`` and
    every point gets isotropic Gaussian noise:

    .. math:: x = r_y(\cos\phi, \sin\phi) + \varepsilon,\quad
              \phi \sim U(0, 2\pi),\quad \varepsilon \sim N(0, \sigma^2 I_2)

    No linear map separates the classes (the circles share their centre), so
    CPCM needs its RKHS predictor here. The paper shows the figure only; the
    radii 1, 2, 3 and equal class sizes (not sizes proportional to the
    circumference) are choices made here.

    Parameters
    ----------
    n_samples : int, default=300
        Total number of points, split evenly over the circles.
    n_circles : int, default=3
        Number of circles; at least 2. Ignored when ``radii`` is given.
    radii : array-like of positive floats, optional
        Radii of the circles (distinct); default ``1, 2, .., n_circles``.
        Class ``k`` is the ``k``-th smallest radius.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise.
    shuffle : bool, default=True
        Shuffle the rows.
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.datasets import make_concentric_circles
    >>> X, y = make_concentric_circles(30, noise=0.0, random_state=0)
    >>> np.round(np.hypot(X[:, 0], X[:, 1]), 12)[y == 2][:3].tolist()
    [3.0, 3.0, 3.0]
    """
    if radii is None:
        check_scalar(n_circles, "n_circles", numbers.Integral, min_val=2)
        radii = np.arange(1, int(n_circles) + 1, dtype=np.float64)
    else:
        radii = np.asarray(radii, dtype=np.float64)
        if radii.ndim != 1 or radii.shape[0] < 2:
            raise ValueError(
                f"radii must be a 1-D list of at least 2 radii, got shape {radii.shape}."
            )
        if not np.all(np.isfinite(radii)) or np.any(radii <= 0):
            raise ValueError(f"radii must be finite and positive, got {radii.tolist()}.")
        if np.unique(radii).shape[0] != radii.shape[0]:
            raise ValueError(f"radii must be distinct, got {radii.tolist()}.")
        radii = np.sort(radii)
    k = radii.shape[0]
    n = _check_n_samples(n_samples, k)
    noise = _check_nonneg(noise, "noise")
    rng = check_random_state(random_state)
    y = _balanced_labels(n, k)
    phi = rng.uniform(0.0, 2.0 * np.pi, size=n)
    X = radii[y, None] * np.column_stack([np.cos(phi), np.sin(phi)])
    X += rng.normal(scale=noise, size=(n, 2))
    return _finish(X, y, shuffle, rng)


def make_moons(n_samples=200, *, noise=0.1, shuffle=True, random_state=None):
    r"""Two interleaving half circles (the two-moon data of CPD-UML's Fig. 1).

    Class 0 is the upper half circle of radius 1 about (0, 0), class 1 the lower
    half circle about (1, 0.5), with evenly spaced angles and isotropic Gaussian
    noise: the construction of scikit-learn's ``make_moons`` (same points for
    ``noise=0``), which is the shape of the manifold-regularization two-moon
    set (Belkin, Niyogi & Sindhwani 2006) used by the CPD-UML paper (that set
    itself has 200 points, radius about 1.16, noise about 0.11, classes
    96/104). k-means cuts the moons with a straight line; a metric that
    follows the manifold separates them.

    Parameters
    ----------
    n_samples : int, default=200
        Total number of points; the upper moon gets ``n_samples // 2``.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise.
    shuffle : bool, default=True
        Shuffle the rows.
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.datasets import make_moons
    >>> X, y = make_moons(100, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((100, 2), [50, 50])
    """
    n = _check_n_samples(n_samples, 2)
    noise = _check_nonneg(noise, "noise")
    rng = check_random_state(random_state)
    n_out = n // 2
    n_in = n - n_out
    t_out = np.linspace(0.0, np.pi, n_out)
    t_in = np.linspace(0.0, np.pi, n_in)
    X = np.vstack([
        np.column_stack([np.cos(t_out), np.sin(t_out)]),
        np.column_stack([1.0 - np.cos(t_in), 0.5 - np.sin(t_in)]),
    ])
    y = np.repeat(np.array([0, 1], dtype=np.int64), [n_out, n_in])
    X += rng.normal(scale=noise, size=X.shape)
    return _finish(X, y, shuffle, rng)


# The parameters and returns the two Xing generators share, written once and
# filled into both docstrings by _xing_doc.
_XING_3D_DOC = """shuffle : bool, default=True
        Shuffle the rows.
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 3), float64
        Columns x, y, z.
    y : ndarray of shape (n_samples,), int64"""


def _xing_doc(func):
    if func.__doc__:  # None under python -OO
        func.__doc__ = func.__doc__.replace("{xing_3d}", _XING_3D_DOC)
    return func


@_xing_doc
def make_xing_artificial(kind=1, n_samples=200, *, shuffle=True, random_state=None):
    r"""The 3-D two-class examples of MMC (Xing, Ng, Jordan & Russell 2003, Figs. 4 and 5).

    In both, the classes differ only along a low-variance axis, while the
    high-variance axes suggest a different split, so that k-means on the raw
    features scores an accuracy of about 0.5 (the paper's measure for two
    clusters is the Rand index, :func:`metriclust.metrics.xing_accuracy`: 0.4975
    for Fig. 4, 0.4993 for Fig. 5) and k-means with the learned metric scores 1.
    The distributions below were chosen to give those numbers (tuned); the
    constrained k-means figure of Fig. 5 (0.5701) is not reproduced (we get 0.50).

    - ``kind=1`` (Fig. 4, axes about +-20 in x, y and +-10 in z): two
      well-separated blobs along x (centres x = +-10, standard deviation 2)
      that have nothing to do with the class, a spread-out y (standard
      deviation 7), and the classes at z = -2 and z = +2 (standard deviation
      0.5). k-means splits the blobs, i.e. splits x.
    - ``kind=2`` (Fig. 5, axes about +-50): one broad isotropic Gaussian in the
      (x, y) plane (standard deviation 20) and the classes at z = -3 and z = +3
      (standard deviation 0.75): two thin parallel sheets. k-means cuts the
      sheets along some direction in the plane.

    The paper's text (garbled in our copy) says only that the true classes are
    "distinguished by their [one]-coordinate" while the data "seems to cluster
    much better according to [another]"; the exact distributions, scales and
    numbers of points are not given. Everything above beyond that is a choice
    made here to reproduce the figures' axis ranges and accuracies.

    Parameters
    ----------
    kind : {1, 2}, default=1
        Which figure.
    n_samples : int, default=200
        Total number of points, split evenly over the two classes.
    {xing_3d}

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.datasets import make_xing_artificial
    >>> X, y = make_xing_artificial(kind=2, n_samples=10, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((10, 3), [5, 5])
    """
    if isinstance(kind, bool) or kind not in (1, 2):
        raise ValueError(f"kind must be 1 or 2, got {kind!r}.")
    n = _check_n_samples(n_samples, 2)
    rng = check_random_state(random_state)
    y = _balanced_labels(n, 2)
    sign = 2.0 * y - 1.0  # -1 / +1
    if kind == 1:
        blob = rng.integers(0, 2, size=n) * 2.0 - 1.0  # independent of the class
        x = 10.0 * blob + rng.normal(scale=2.0, size=n)
        yy = rng.normal(scale=7.0, size=n)
        z = 2.0 * sign + rng.normal(scale=0.5, size=n)
    else:
        x = rng.normal(scale=20.0, size=n)
        yy = rng.normal(scale=20.0, size=n)
        z = 3.0 * sign + rng.normal(scale=0.75, size=n)
    X = np.column_stack([x, yy, z])
    return _finish(X, y, shuffle, rng)


@_xing_doc
def make_xing_metric_examples(figure=2, n_samples=None, *, shuffle=True, random_state=None):
    r"""The 3-D data of MMC's learned-metric examples (Xing et al. 2003, Figs. 2 and 3).

    What the paper gives (Sec. 3.1; its text is garbled in our copy, the
    figures' axis labels survive):

    - Fig. 2: 3-D data "divided into two classes", axes about +-5 in x, y and
      z; with the similar pairs S a random 1% of all same-class pairs
      (footnote 6) MMC learns ``A = diag(1.036, 1.007, 0)`` (diagonal) and a
      full ``A`` that is rank one to the printed precision (eigenvalues 6.574,
      ~0, ~0; top eigenvector (0.703, 0.711, 0.018)); the full ``A``'s
      rescaled data span about +-20 (Fig. 2(c)).
    - Fig. 3: "three clusters whose centroids differ only in the x and y
      directions", axes +-5 in x, y and +-2 in z; the learned diagonal "correctly
      ignores the z direction", and the full ``A`` projects the data "onto a line
      that still maintains the separation of the clusters well" (axes +-2). No
      numbers are given.

    What is **assumed** here (nothing in the paper fixes it): Gaussian classes
    of equal size, 100 points per class by default. Fig. 2: the class means are
    at ``+-2.5 u`` with ``u = (1, 1, 0) / sqrt(2)`` -- the direction read off the
    paper's full ``A``, so that direction is built in -- and each class is thin
    along it and wide across it: standard deviations 0.3 along ``u``, 1 along
    ``(1, -1, 0) / sqrt(2)`` and 2 along z (two parallel slabs). This is one of
    four such designs tried; the others differ in how often the diagonal A
    keeps some weight on z. Fig. 3: the
    centroids are the corners of a triangle in the (x, y) plane, (-3, -1.5),
    (3, -1.5) and (0, 2.5), with standard deviation 0.6 in x and y and 0.8 in
    z. The scales only fill the figures' axes; they were not tuned to the
    paper's matrices. What does not depend on the assumptions' details is the
    shape of MMC's answer: z weighted zero by the diagonal A, x and y weighted
    alike (Fig. 2, by the symmetry of the construction), and a full A of rank
    about one.

    Parameters
    ----------
    figure : {2, 3}, default=2
        Which figure: 2 (two classes) or 3 (three clusters).
    n_samples : int or None, default=None
        Total number of points, split evenly over the classes; None: 100 per
        class.
    {xing_3d}

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.datasets import make_xing_metric_examples
    >>> X, y = make_xing_metric_examples(3, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((300, 3), [100, 100, 100])
    """
    if isinstance(figure, bool) or figure not in (2, 3):
        raise ValueError(f"figure must be 2 or 3, got {figure!r}.")
    k = figure                  # number of classes
    n = _check_n_samples(100 * k if n_samples is None else n_samples, k)
    rng = check_random_state(random_state)
    y = _balanced_labels(n, k)
    if figure == 2:
        u = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
        v = np.array([1.0, -1.0, 0.0]) / np.sqrt(2.0)
        along_u = 2.5 * (2.0 * y - 1.0) + rng.normal(scale=0.3, size=n)
        X = (along_u[:, None] * u + rng.normal(scale=1.0, size=n)[:, None] * v
             + rng.normal(scale=2.0, size=n)[:, None] * np.array([0.0, 0.0, 1.0]))
    else:
        centres = np.array([[-3.0, -1.5, 0.0], [3.0, -1.5, 0.0], [0.0, 2.5, 0.0]])
        X = centres[y] + rng.normal(size=(n, 3)) * np.array([0.6, 0.6, 0.8])
    return _finish(X, y, shuffle, rng)


# --------------------------------------------------------------------------
# CSV reader
#
# Two parsers read the same format. The fast one is in C (csrc/csvparse.c);
# it accepts a file only when every line is plain numeric and otherwise steps
# aside, so that the careful one (the csv module, field by field) reads
# the file again and either returns the same numbers or names the file, line
# and column of the first problem. Error messages therefore come from one place.

_FIELD_LIMIT = 131072  # the csv module's default field size limit
_HEADER_CHOICES = ("infer", True, False)
_EMPTY_LABEL_CHOICES = ("error", "unlabeled")


class _Table:
    """What the reader found: the arrays and where they came from."""

    def __init__(self, path, X, y, columns, has_header, header_inferred, skip_lines):
        self.path = path
        self.X = X
        self.y = y
        self.columns = columns              # feature names (numbers 1.. without a header)
        self.has_header = has_header
        self.header_inferred = header_inferred  # "infer" found no header: line 1 is data
        self._skip_lines = skip_lines       # physical lines before the first data line
        self.first_data_line = skip_lines + 1

    def line_of(self, row):
        """The 1-based file line of data row ``row`` (blank lines skipped), for messages."""
        with open(self.path, newline="", encoding="utf-8-sig", errors="replace") as f:
            reader = csv.reader(f)
            for _ in range(self._skip_lines):
                next(reader, None)
            r = -1
            for fields in reader:
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    continue
                r += 1
                if r == row:
                    return reader.line_num
        return None


def load_csv(path, *, label_column="label", label_dtype=int, header="infer",
             empty_labels="error"):
    """Read a numeric CSV file: a header line, numeric fields, an integer label column.

    The format: one header line of column names,
    then one row per point of numeric fields separated by commas; the class
    is the integer column named ``label`` (last by convention, but found by
    name). Fields may be quoted; a UTF-8 byte-order mark, CRLF line ends and
    blank lines are accepted. The file must be UTF-8 (ASCII is UTF-8).

    Parameters
    ----------
    path : str or os.PathLike
        The file (a regular file: devices and FIFOs are refused).
    label_column : str or None, default="label"
        Name of the column holding the class. None: every column is a feature
        and ``y`` is None. Without a header the columns are named by their
        1-based position: ``"1"``, ``"2"``, ...
    label_dtype : {int, str}, default=int
        ``int``: labels must be integers (the format of the UCI-derived benchmark files).
        ``str``: labels are kept as stripped strings, for user files with
        class names (``"setosa"``); the measures in :mod:`metriclust.metrics`
        accept either.
    header : {"infer", True, False}, default="infer"
        True: the first non-blank line holds the column names. False: every
        line is data. "infer": the first line is the header unless every one
        of its fields is a number, in which case it is data -- a numeric row is
        never dropped as a header.
    empty_labels : {"error", "unlabeled"}, default="error"
        What an empty label field means: an error, or an unlabeled row
        (``-1`` for integer labels, ``""`` for string labels).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        The feature columns, in file order.
    y : ndarray of shape (n_samples,), int64 or str, or None
        The labels.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist (the message has the path).
    ValueError
        (its subclass ``InputError``: input the caller can fix) For a path
        that is not a regular file, an empty file, a file that is not UTF-8,
        a header without the label column, or a row that is ragged, has an
        empty, non-numeric or non-finite field, a field longer than 131,072
        characters, or a non-integer label; the message gives the path, line
        number and column.

    Examples
    --------
    >>> import os, tempfile
    >>> from metriclust.datasets import load_csv
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "toy.csv")
    ...     with open(path, "w") as f:
    ...         _ = f.write('"x1","x2",label\\n1.5,2,0\\n3,4.25,1\\n')
    ...     X, y = load_csv(path)
    >>> X.tolist(), y.tolist()
    ([[1.5, 2.0], [3.0, 4.25]], [0, 1])
    """
    table = _read_csv(path, label_column=label_column, label_dtype=label_dtype, header=header,
                      empty_labels=empty_labels,
                      missing_label_hint="pass label_column=None for a file without labels")
    return table.X, table.y


def _read_csv(path, *, label_column=None, label_dtype=str, header="infer", empty_labels="error",
              missing_label_hint=""):
    """Read a numeric CSV into a :class:`_Table` (see :func:`load_csv`)."""
    path = os.fspath(path)
    if label_column is not None and not isinstance(label_column, str):
        raise TypeError(f"label_column must be a str or None, got {label_column!r}.")
    if label_dtype not in (int, str):
        raise ValueError(f"label_dtype must be int or str, got {label_dtype!r}.")
    if not any(header is choice for choice in _HEADER_CHOICES):
        raise ValueError(f"header must be 'infer', True or False, got {header!r}.")
    if empty_labels not in _EMPTY_LABEL_CHOICES:
        raise ValueError(f"empty_labels must be 'error' or 'unlabeled', got {empty_labels!r}.")
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "CSV file not found", path)
    if not os.path.isfile(path):
        raise InputError(f"{path} is not a regular file.")

    first, first_line = _first_row(path)
    if first is None:
        raise InputError(f"{path} is empty; expected a header line of column names.")
    numeric_first = all(_is_number(field) for field in first)
    has_header = header is True or (header == "infer" and not numeric_first)
    if has_header:
        columns = [name.strip() for name in first]
        skip = first_line
    else:
        columns = [str(j + 1) for j in range(len(first))]
        skip = first_line - 1
    label_idx = None
    if label_column is not None:
        hits = [i for i, name in enumerate(columns) if name == label_column]
        if not hits:
            where = f"{path}, line {first_line}"
            if has_header:
                msg = f"{where}: no column named {label_column!r} in the header {columns}"
            else:
                why = "header=False" if header is False else f"line {first_line} is all numbers"
                msg = (f"{path} has no header ({why}), so no column named {label_column!r}: "
                       f"without a header, columns are named 1..{len(columns)}")
            raise InputError(msg + (f"; {missing_label_hint}." if missing_label_hint else "."))
        if len(hits) > 1:
            raise InputError(f"{path}, line {first_line}: column {label_column!r} appears "
                             f"{len(hits)} times in the header.")
        label_idx = hits[0]

    text_labels = label_idx is not None and label_dtype is str
    parsed = _parse_fast(path, skip, len(columns), label_idx, text_labels, empty_labels)
    if parsed is None:
        parsed = _parse_careful(path, skip, columns, label_idx, label_dtype, empty_labels,
                                "header" if has_header else "first line")
    data, labels = parsed
    if label_idx is None:
        X, y = np.ascontiguousarray(data), None
    else:
        X = np.ascontiguousarray(np.delete(data, label_idx, axis=1))
        y = labels if text_labels else data[:, label_idx].astype(np.int64)
        del columns[label_idx]
    return _Table(path, X, y, columns, has_header, header == "infer" and not has_header, skip)


def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


def _first_row(path):
    """The first non-blank row's fields and its line number, or (None, None)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            for row in reader:
                if row and not (len(row) == 1 and not row[0].strip()):
                    return row, reader.line_num
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except csv.Error as exc:
        raise _csv_error(path, reader.line_num, exc) from None
    return None, None


def _parse_fast(path, skip, n_cols, label_idx, text_labels, empty_labels):
    """The C parser (csrc/csvparse.c); None when anything is unusual (then the careful one)."""
    from ._kernels._csv import parse_numeric

    with open(path, "rb") as f:
        raw = f.read()
    if not raw.endswith(b"\n"):
        raw += b"\n"
    start = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    try:
        for _ in range(skip):
            start = raw.index(b"\n", start) + 1
    except ValueError:
        return None
    data = parse_numeric(memoryview(raw)[start:], n_cols,
                         label_idx if text_labels else -1)
    del raw
    if data is None or data.shape[0] == 0 or not np.all(np.isfinite(data)):
        return None
    labels = None
    if text_labels:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "input contained no data": checked below
                labels = np.loadtxt(path, delimiter=",", quotechar='"', comments=None,
                                    encoding="utf-8-sig", skiprows=skip, ndmin=2, dtype=str,
                                    usecols=[label_idx])[:, 0]
        except (ValueError, UnicodeDecodeError):
            return None
        labels = np.char.strip(labels)
        if labels.shape[0] != data.shape[0] or (empty_labels == "error"
                                                and np.any(labels == "")):
            return None
    elif label_idx is not None:
        y = data[:, label_idx]
        if np.any(y != np.round(y)):
            return None
    return data, labels


def _parse_careful(path, skip, columns, label_idx, label_dtype, empty_labels, reference):
    """The csv module, field by field: returns the data or raises naming line and column."""
    n_cols = len(columns)
    text_labels = label_idx is not None and label_dtype is str
    rows, lines, names = [], [], []
    reader = None
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            for _ in range(skip):
                next(reader, None)
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                line = reader.line_num
                if len(row) != n_cols:
                    raise InputError(
                        f"{path}, line {line}: expected {n_cols} fields (as in the "
                        f"{reference}), got {len(row)}."
                    )
                if label_idx is not None and not row[label_idx].strip():
                    if empty_labels == "error":
                        raise InputError(
                            f"{path}, line {line}, column {columns[label_idx]!r}: empty label "
                            "(mark unlabeled rows explicitly, e.g. empty_labels='unlabeled')."
                        )
                    row = row[:label_idx] + ["" if text_labels else "-1"] + row[label_idx + 1:]
                if text_labels:
                    names.append(row[label_idx].strip())
                    row = row[:label_idx] + ["0"] + row[label_idx + 1:]
                try:
                    values = [float(field) for field in row]
                except ValueError:
                    values = None
                if values is None or not all(map(math.isfinite, values)):
                    _raise_bad_field(path, line, row, columns)
                if label_idx is not None and not text_labels and not values[label_idx].is_integer():
                    raise InputError(
                        f"{path}, line {line}, column {columns[label_idx]!r}: a label must be "
                        f"an integer, got {values[label_idx]!r}."
                    )
                rows.append(values)
                lines.append(line)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except csv.Error as exc:
        raise _csv_error(path, reader.line_num if reader else 1, exc) from None
    if not rows:
        raise InputError(f"{path} has a header but no data rows.")
    return np.array(rows, dtype=np.float64), (np.array(names) if text_labels else None)


def _not_utf8(path):
    """A ValueError naming the line and byte of the first byte that is not UTF-8."""
    with open(path, "rb") as f:
        raw = f.read()
    start = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    try:
        raw[start:].decode("utf-8")
        pos = len(raw)
    except UnicodeDecodeError as exc:
        pos = start + exc.start
    line = raw.count(b"\n", 0, pos) + 1
    line_start = raw.rfind(b"\n", 0, pos) + 1
    column = raw.count(b",", line_start, pos) + 1
    byte = f"0x{raw[pos]:02x}" if pos < len(raw) else "end of file"
    return InputError(
        f"{path}, line {line}, field {column} (byte {pos - line_start + 1} of the line): "
        f"{byte} is not UTF-8; save the file as UTF-8 (Latin-1 or another legacy encoding?)."
    )


def _csv_error(path, line, exc):
    message = str(exc)
    if "field larger than field limit" in message:
        message = (f"a field is longer than {_FIELD_LIMIT} characters (an unbalanced quote, "
                   "or not a numeric CSV)")
    return InputError(f"{path}, line {line}: {message}.")


def _raise_bad_field(path, line, row, header):
    """Name the first empty, non-numeric or non-finite field of a row."""
    for name, field in zip(header, row):
        text = field.strip()
        where = f"{path}, line {line}, column {name!r}"
        if not text:
            raise InputError(f"{where}: empty field.")
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"{where}: could not convert {field!r} to a number.") from None
        if not np.isfinite(value):
            raise InputError(f"{where}: non-finite value {field!r}.")
    raise AssertionError("unreachable")  # pragma: no cover
