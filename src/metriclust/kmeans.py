"""K-means clustering: the public estimator over the one k-means core.

Public class:

.. autosummary::

   KMeans  -- Lloyd's batch algorithm or the sequential (online) update
"""

import numbers
import types
import warnings

import numpy as np

from . import _dask
from ._core.base import (BaseEstimator, ClusterMixin, ConvergenceWarning, Interval, Options,
                         TransformerMixin, _with_sklearn_twin, check_is_fitted)
from ._core.blockwise import check_out_of_core, default_block_rows
from ._core.ondisk import is_out_of_core
from ._core.kmeans import assign_labels, center_distances, kmeans, shifted_centers
from ._core.engine import source
from ._core.streaming import assign_blockwise, distances, kmeans_blockwise, label_counts
from ._core.validation import (InputError, check_array, check_n_clusters, check_n_features,
                               check_sample_weight, is_dask_array)

__all__ = ["KMeans"]


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""K-means clustering (Lloyd's batch algorithm or the sequential online update).

    Minimizes the weighted within-cluster sum of squares

    .. math::

        J(\mu, c) = \sum_{i=1}^{N} w_i \, \lVert x_i - \mu_{c(i)} \rVert^2 .

    Lloyd alternates the assignment :math:`c(i) = \arg\min_k \lVert x_i - \mu_k\rVert^2`
    and the update :math:`\mu_k = \sum_{c(i)=k} w_i x_i / \sum_{c(i)=k} w_i`; each step
    cannot increase :math:`J`. The online variant is the sequential k-means of
    the course notes (Sec. 4.1; MacQueen 1967): the rows are visited in data
    order (``random_state`` only seeds the centers); a row whose nearest center
    changed joins it, :math:`\mu_k \leftarrow \mu_k + (w_i / W_k)(x_i - \mu_k)`,
    and leaves its old center :math:`j`, :math:`\mu_j \leftarrow \mu_j + (w_i / W_j)
    (\mu_j - x_i)`, with :math:`W` the weight of the members after the move (the
    learning rate :math:`1/n_k` for unit weights). Every center is thus the mean of its
    current members (an emptied center stays put; the first row to reach a center
    replaces its seed), and a pass that changes no label leaves a fixed point of Lloyd.
    Both run in C with OpenMP (``csrc/kmeans.c``); results do not depend on the
    number of threads.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters :math:`K`.
    init : {"k-means++", "random", "farthest"}, ndarray of shape \
            (n_clusters, n_features) or callable, default="k-means++"
        Greedy k-means++ seeding with :math:`2 + \lfloor\ln K\rfloor` local trials
        (Arthur & Vassilvitskii 2007), ``n_clusters`` distinct rows drawn with
        probability proportional to the weights, farthest-first traversal (a
        random first row, then each time the row farthest from the chosen
        ones: the lecture's "least similar" seed; Gonzalez 1985), given
        centers, or a function ``init(X, n_clusters, random_state=rng)``
        (``rng`` a ``numpy.random.Generator``) returning them, called once per run.
        For a dask array or out-of-core X also "k-means||" (Bahmani et al.
        2012, a few passes over the blocks; the default for a dask array);
        "k-means++" and "farthest" then run on a uniform sample of 100,000
        rows.
    n_init : "auto" or int, default="auto"
        Number of seedings; the run with the lowest inertia is kept. "auto" is
        1 for k-means++ and an array, 10 for "random" and a callable (as
        scikit-learn).
    max_iter : int, default=300
        Maximum number of iterations (passes over the data for "online").
    tol : float, default=1e-4
        A run stops when the labels no longer change or when the squared shift
        of the centers :math:`\sum_k \lVert \mu_k' - \mu_k \rVert^2` is at most
        ``tol`` times the mean feature variance of X. With
        ``convergence="objective"``, ``tol`` bounds the objective's relative
        decrease instead.
    convergence : {"center_shift", "objective"}, default="center_shift"
        The stopping rule. "center_shift" is scikit-learn's (above).
        "objective" stops a run when the relative decrease of :math:`J` in an
        iteration, :math:`(J_{t-1} - J_t) / J_{t-1}`, is at most ``tol`` (the
        lecture notes' rule, and the meaning of ``tol`` in :class:`FuzzyCMeans`);
        :math:`J_t` is the objective at the iteration's new centers, so each
        iteration costs one more assignment pass than under "center_shift".
        Batch algorithms only (not "online").
    algorithm : {"lloyd", "elkan", "auto", "online"}, default="lloyd"
        Batch (Lloyd 1982) or sequential (above) updates. "elkan" is
        Lloyd with exact triangle-inequality pruning (the name scikit-learn
        users know; the bounds are Hamerly's (2010): one upper and one lower
        bound per row instead of Elkan's K): the same labels, centers and
        iterations as "lloyd", faster for many well-separated clusters
        (measured, 20 iterations: float32 2.0-2.6x, float64 1.3-1.8x at
        128-1024 Gaussian blobs in 16 and 64 dimensions). Where the bounds
        leave most rows open (unclustered data) the fit drops them, at its
        second pass, and runs Lloyd's passes: 0.82-1.17x of "lloyd" there.
        "auto" prunes from 128 clusters in 16 or more dimensions.
    random_state : None, int or numpy.random.Generator, default=None
        Seeding randomness.
    verbose : int, default=0
        Print a line per run.
    copy_x : bool, default=True
        ``fit`` centers X (subtracts its mean) for accurate distances. True
        centers a copy: X's size again in memory. False centers X itself and
        adds the mean back before ``fit`` returns (also on an error or
        Ctrl-C), as scikit-learn's ``copy_x=False``: no copy and the same
        result bit for bit, but X can come back changed in its last bits and
        looks centered to another thread meanwhile; the seeding then also
        keeps its candidates' distances only where they take at most a
        quarter of X's size (else it re-reads X: more time at small d). Only
        a writeable,
        C-ordered float32 or float64 X is centered in place; anything else is
        converted (a copy) first. Ignored for out-of-core and dask arrays,
        which are read in blocks and never copied whole.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Centers, in the dtype of the training data (float32 stays float32).
    labels_ : ndarray of shape (n_samples,)
        Index of the nearest center of each training row.
    inertia_ : float
        :math:`J` at the final centers and labels.
    n_iter_ : int
        Iterations run by the kept run.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X, set only when X was a DataFrame with string names.

    Warns
    -----
    ConvergenceWarning
        When ``fit`` ends with fewer distinct clusters than ``n_clusters``
        (X has fewer distinct points, or duplicates were all that was left).

    Notes
    -----
    With the same ``init`` array, labels equal scikit-learn's
    ``KMeans(algorithm="lloyd", n_init=1)`` and centers agree to rounding: the
    stopping rule (strict convergence when labels are unchanged, otherwise the
    center shift against ``tol``), the centering of X, and the ties to the lowest
    center index are the same. Empty clusters take the rows farthest from
    their centers (skipping rows equal to one already moved in the same step).
    Per-cluster sums, the centering mean and the variance behind ``tol`` are
    accumulated in float64 for float32 data. Without ``sample_weight``, most
    passes after the first two add to running sums only the rows whose label
    changed, and every 17th pass sums afresh; the centers stay within a few
    ulps of the exact means of their labels. Among ``n_init`` starts, a later
    one replaces the best only if its inertia is lower by more than rounding
    (relative 1e-12), so starts that reach one partition keep the first.
    ``predict``, ``transform`` and
    ``score`` subtract the centers' mean from X and the centers first, so a
    large common offset in the data costs no more digits than it does in ``fit``.

    Out-of-core data: an ``np.memmap`` (a ``.npy`` opened with
    ``mmap_mode="r"``) or a row-sliceable array such as an h5py or zarr dataset
    is never copied whole. ``fit`` runs Lloyd's iteration with one pass over
    blocks of rows per iteration (:func:`metriclust._core.streaming.kmeans_blockwise`:
    the same C kernels, per-block sums reduced in block order, so the result
    does not depend on the thread count, and on the block size only by
    rounding); k-means++ seeds from a uniform sample of 100,000 rows (at least
    1,000 per cluster; all of X when it has fewer rows, then the seeding is the
    in-memory one), or ``init="k-means||"`` runs over the blocks (``8 N``
    bytes more for its distances); ``labels_`` is int32. A dask array runs the
    same code on the same block engine (:mod:`metriclust._core.engine`), one
    Dask task per row chunk. ``predict``, ``transform`` and
    ``score`` read blocks too. Peak extra memory: ``4 N`` bytes of labels
    (``8 N`` with ``n_init > 1``; ``+ 8 N`` with ``sample_weight``), the seeding
    sample, and a few copies of one block (64 MiB of input by default).
    Data that fit in one block (and no ``block_rows`` given) are read whole
    and fitted in memory, within the same bound; beyond one block,
    ``algorithm="online"`` and ``convergence="objective"`` are refused.

    References
    ----------
    S. Lloyd, "Least squares quantization in PCM", IEEE Trans. Inf. Theory 28(2), 1982.
    J. MacQueen, "Some methods for classification and analysis of multivariate
    observations", Proc. 5th Berkeley Symp., 1967.
    D. Arthur and S. Vassilvitskii, "k-means++: the advantages of careful
    seeding", SODA 2007.
    G. Hamerly, "Making k-means even faster", SDM 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import KMeans
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> km = KMeans(n_clusters=2, random_state=0).fit(X)
    >>> sorted(km.cluster_centers_.tolist())
    [[1.0, 2.0], [10.0, 2.0]]
    >>> bool(km.predict([[0, 0]])[0] == km.predict([[1, 1]])[0])
    True
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, convergence="center_shift", algorithm="lloyd", random_state=None,
                 verbose=0, copy_x=True):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.convergence = convergence
        self.algorithm = algorithm
        self.random_state = random_state
        self.verbose = verbose
        self.copy_x = copy_x

    # each parameter alone, checked on entry to fit; _check_params adds what depends on X
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "init": [Options("k-means++", "random", "farthest", "k-means||"), "array-like", callable],
        "n_init": [Options("auto"), Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "convergence": [Options("center_shift", "objective")],
        "algorithm": [Options("lloyd", "elkan", "auto", "online")],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None)],
        "copy_x": ["boolean"],
    }

    def _check_params(self, X, *, dask=False):
        n_clusters = check_n_clusters(self.n_clusters, X.shape[0])
        init = self.init
        if isinstance(init, str):
            if init == "k-means||" and not dask:
                raise InputError("init='k-means||' is the scalable seeding for dask arrays "
                                 "and out-of-core X; use 'k-means++' in memory.")
        elif not callable(init):
            init = check_array(init, name="init", dtype=X.dtype)
        if isinstance(self.n_init, str):
            n_init = 1 if isinstance(init, np.ndarray) or init in ("k-means++", "k-means||") \
                else 10
        else:
            n_init = self.n_init
        if isinstance(init, np.ndarray) and n_init != 1:
            warnings.warn("Explicit initial center position passed: performing only one "
                          f"init in KMeans instead of n_init={n_init}.", RuntimeWarning,
                          stacklevel=4)
            n_init = 1
        return n_clusters, init, int(n_init)

    def fit(self, X, y=None, sample_weight=None, block_rows=None):
        """Compute the clustering.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; float32 is kept, other numbers become float64.
            Data larger than memory (an ``np.memmap``, a ``.npy`` opened with
            ``mmap_mode="r"``, an h5py or zarr dataset) is read in blocks of
            rows, never copied whole; see "Out-of-core data" in the Notes.
            A ``dask.array.Array`` is fitted by Dask tasks, one per row chunk,
            on whatever scheduler is active (``labels_`` is then a dask array).
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; an integer weight acts as repeating the row.
        block_rows : int, default=None
            Rows per block for out-of-core X (default: 64 MiB of input a
            block, :func:`metriclust._core.blockwise.default_block_rows`);
            ignored for in-memory X.

        Returns
        -------
        self : KMeans
        """
        if is_dask_array(X):
            return self._fit_dask(X, sample_weight)
        if is_out_of_core(X):
            n, p, dtype = check_out_of_core(X)
            if block_rows is None and n <= default_block_rows(p, np.dtype(dtype).itemsize):
                # one block holds all of X: read it, within the same memory
                # bound, and fit in memory (every algorithm and stopping rule)
                X = check_array(np.asarray(X[:n]))
            else:
                X = types.SimpleNamespace(shape=(n, p), dtype=dtype, data=X)
        else:
            X = check_array(X)
        n_clusters, init, n_init = self._check_params(
            X, dask=isinstance(X, types.SimpleNamespace))
        w = None  # (all ones is not materialized: N values for data past RAM)
        if sample_weight is not None:
            w = check_sample_weight(np.asarray(sample_weight), X.shape[0], dtype=X.dtype)
        if isinstance(X, types.SimpleNamespace):
            # Lloyd's passes over row blocks ("elkan"/"auto" give Lloyd's result
            # anyway; "online" has no block form and is refused).
            if self.convergence != "center_shift":
                raise InputError("convergence='objective' is not available for out-of-core X "
                                 "(an np.memmap or row-sliceable array); use 'center_shift'.")
            if self.algorithm == "online":
                raise InputError("algorithm='online' is not available for out-of-core X "
                                 "(an np.memmap or row-sliceable array); use 'lloyd'.")
            res = kmeans_blockwise(X.data, n_clusters, sample_weight=w, init=init,
                                   n_init=n_init, max_iter=self.max_iter, tol=self.tol,
                                   random_state=self.random_state, verbose=self.verbose,
                                   block_rows=block_rows)
        else:
            res = kmeans(X, n_clusters, sample_weight=w,
                         init=init, n_init=n_init, max_iter=self.max_iter, tol=self.tol,
                         convergence=self.convergence, algorithm=self.algorithm,
                         random_state=self.random_state,
                         verbose=self.verbose, copy_x=self.copy_x)
        self.n_features_in_ = X.shape[1]
        self.cluster_centers_ = res.centers
        self.labels_ = res.labels
        self.inertia_ = res.inertia
        self.n_iter_ = res.n_iter
        n_distinct = int(np.count_nonzero(label_counts(res.labels, n_clusters)))
        if n_distinct < n_clusters:
            warnings.warn(f"Number of distinct clusters ({n_distinct}) found smaller than "
                          f"n_clusters ({n_clusters}). Possibly due to duplicate points in X.",
                          _with_sklearn_twin(ConvergenceWarning), stacklevel=3)
        return self

    def _fit_dask(self, X, sample_weight):
        # each pass as Dask tasks over X's row chunks; labels_ is a dask array
        X = _dask.check_dask_array(X)
        n_clusters, init, n_init = self._check_params(X, dask=True)
        if self.convergence != "center_shift" or self.algorithm == "online":
            raise InputError("A dask array X is fitted by Lloyd's passes with the center-shift "
                             f"rule: got algorithm={self.algorithm!r}, "
                             f"convergence={self.convergence!r}.")
        res = _dask.kmeans(X, n_clusters, sample_weight=sample_weight, init=init,
                           n_init=n_init, max_iter=self.max_iter, tol=self.tol,
                           random_state=self.random_state, verbose=self.verbose)
        self.n_features_in_ = X.shape[1]
        self.cluster_centers_ = res.centers
        self.labels_ = res.labels
        self.inertia_ = res.inertia
        self.n_iter_ = res.n_iter
        return self

    def _dask_test_data(self, X):
        check_is_fitted(self)
        X = _dask.check_dask_array(X)
        check_n_features(self, X)
        return _dask, X

    @property
    def _n_features_out(self):
        # columns of ``transform``: one distance per center
        return self.cluster_centers_.shape[0]

    def _check_test_data(self, X):
        """X, the shift (the centers' mean in X's dtype) and the centers less it.

        ``fit`` works on centered data; scoring ``X - shift`` here keeps a large
        common offset from eating the digits of ``||x||^2 - 2 x.c + ||c||^2``.
        (The C pass subtracts it chunk by chunk: ``assign_labels(shift=)``.)
        """
        check_is_fitted(self)
        X = check_array(X)
        check_n_features(self, X)
        return (X, *shifted_centers(self.cluster_centers_, X.dtype))

    def _out_of_core_test_data(self, X):
        """Shift and shifted centers for block-wise predict/transform/score."""
        check_is_fitted(self)
        _, p, dtype = check_out_of_core(X)
        if p != self.n_features_in_:
            raise ValueError(f"X has {p} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        return shifted_centers(self.cluster_centers_, dtype)

    def predict(self, X, block_rows=None):
        """Index of the nearest center of each row of X (ties to the lowest index).

        Out-of-core X is read in blocks of ``block_rows`` rows. A dask array
        gives a lazy dask array with X's row chunks.
        """
        if is_dask_array(X):
            _dask, X = self._dask_test_data(X)
            return _dask.predict_labels(X, self.cluster_centers_)
        if is_out_of_core(X):
            shift, centers = self._out_of_core_test_data(X)
            return assign_blockwise(X, centers, shift=shift, block_rows=block_rows)[0]
        X, shift, centers = self._check_test_data(X)
        return assign_labels(X, centers, shift=shift, return_distances=False)[0]

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit and return ``labels_``."""
        return self.fit(X, sample_weight=sample_weight).labels_

    def transform(self, X, block_rows=None):
        """Euclidean distances of the rows of X to the centers, shape (n_samples, n_clusters).

        Out-of-core X is read in blocks of ``block_rows`` rows (the result,
        ``n_samples x n_clusters``, is in memory). A dask array gives a lazy
        dask array with X's row chunks.
        """
        if is_dask_array(X):
            _dask, X = self._dask_test_data(X)
            return _dask.transform_distances(X, self.cluster_centers_)
        if is_out_of_core(X):
            shift, centers = self._out_of_core_test_data(X)
            return distances(source(X, block_rows=block_rows), centers, shift)
        X, shift, centers = self._check_test_data(X)
        return center_distances(X, centers, shift=shift)

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fit and return ``transform(X)``."""
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the inertia of X at the fitted centers (out-of-core X by blocks)."""
        if is_dask_array(X):
            _dask, X = self._dask_test_data(X)
            return -_dask.inertia(X, self.cluster_centers_, sample_weight)
        if is_out_of_core(X):
            shift, centers = self._out_of_core_test_data(X)
            w = check_sample_weight(sample_weight, X.shape[0], dtype=np.float64)
            _, d2 = assign_blockwise(X, centers, shift=shift)
            return -float(np.dot(w, d2))
        X, shift, centers = self._check_test_data(X)
        w = check_sample_weight(sample_weight, X.shape[0], dtype=np.float64)
        _, d2 = assign_labels(X, centers, shift=shift)
        return -float(np.dot(w, d2.astype(np.float64)))
