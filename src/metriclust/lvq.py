"""Learning vector quantisation (Kohonen): a vector quantiser whose centroids carry labels.

Public class:

.. autosummary::

   LVQ  -- LVQ1, LVQ2.1, LVQ3 and OLVQ1 classifiers
"""

import numbers

import numpy as np

from ._core.base import BaseEstimator, Interval, Options
from ._core.kmeans import assign_labels, kmeans
from ._core.scaling import rescaled_input, standardise
from ._core.validation import check_fit_input
from ._kernels import _prototypes

__all__ = ["LVQ"]

_VARIANTS = ("lvq1", "lvq2.1", "lvq3", "olvq1")


class LVQ(BaseEstimator):
    r"""Learning vector quantisation classifier: LVQ1, LVQ2.1, LVQ3 and OLVQ1.

    Labelled prototypes are pushed towards samples of their class and away
    from samples of other classes, one sample at a time (Unsupervised Learning
    notes, Sec. 6; Kohonen et al. 1996). A sample is classified by its nearest
    prototype. With :math:`c` the nearest prototype and :math:`\alpha(t)` the
    learning rate:

    - ``"lvq1"``: :math:`\mu_c \leftarrow \mu_c \pm \alpha(t)(x - \mu_c)`, + when
      the classes agree, - otherwise.
    - ``"olvq1"``: LVQ1 with one rate per prototype,
      :math:`\alpha_c \leftarrow \alpha_c / (1 \pm \alpha_c)` (+ when right), never
      above ``learning_rate`` (Kohonen's optimised rate, the notes' "adaptive
      learning rate").
    - ``"lvq2.1"``: with :math:`\mu_y` the nearest prototype of x's class and
      :math:`\mu_{\bar y}` the nearest of another class, when x falls in the
      window :math:`\min(d_y/d_{\bar y}, d_{\bar y}/d_y) > (1-w)/(1+w)`,
      :math:`\mu_y` moves towards x and :math:`\mu_{\bar y}` away from it.
      (The notes print a + for both; Kohonen's rule, followed here, moves the
      wrong-class prototype away, which is what makes the update
      discriminative.)
    - ``"lvq3"``: with :math:`\mu_1, \mu_2` the two nearest prototypes: if
      exactly one has x's class and x is in the window, it moves towards x and
      the other away; if both have x's class, both move towards x by
      :math:`\epsilon\alpha(t)`; otherwise nothing happens.

    :math:`\alpha(t)` decreases linearly from ``learning_rate`` to 0 over the
    ``n_epochs`` passes (except OLVQ1). Prototypes start, as the notes
    suggest, from k-means on each class's samples (the shared k-means core).
    The sequential updates run in C (``csrc/prototypes.c``); the visiting
    order is a fresh permutation per epoch drawn from ``random_state``.

    Parameters
    ----------
    n_prototypes_per_class : int, float or array-like of int, default=1
        Prototypes per class: one number for all classes, a fraction in
        (0, 1) of each class's size (at least one; the notes' "number of
        representatives proportional to the number of samples of the class"),
        or one count per class in the order of ``classes_``; capped at the
        class's number of samples.
    variant : {"lvq1", "lvq2.1", "lvq3", "olvq1"}, default="lvq1"
    learning_rate : float, default=0.1
        :math:`\alpha(0)` (and OLVQ1's cap), in (0, 1).
    n_epochs : int, default=30
        Passes over the training data.
    window : float, default=0.3
        Relative window width :math:`w` of LVQ2.1 and LVQ3, in (0, 1).
    epsilon : float, default=0.2
        LVQ3's factor for two prototypes of the right class (Kohonen suggests
        0.1 to 0.5, the notes say).
    random_state : None, int or numpy.random.Generator, default=None
        Randomness of the k-means start and of the visiting order.

    Attributes
    ----------
    classes_ : ndarray
    prototypes_ : ndarray of shape (n_prototypes, n_features)
    prototype_labels_ : ndarray of shape (n_prototypes,)
        Class of each prototype (values of ``classes_``).
    initial_prototypes_ : ndarray of shape (n_prototypes, n_features)
        The per-class k-means centers training started from.
    n_updates_ : int
        Samples that moved a prototype.
    n_features_in_ : int

    References
    ----------
    T. Kohonen, J. Hynninen, J. Kangas, J. Laaksonen and K. Torkkola,
    "LVQ_PAK: the learning vector quantization program package", Report A30,
    Helsinki University of Technology, 1996.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import LVQ
    >>> X = np.array([[0., 0], [0, 1], [1, 0], [5, 5], [5, 6], [6, 5]])
    >>> y = [0, 0, 0, 1, 1, 1]
    >>> LVQ(random_state=0).fit(X, y).predict([[0.5, 0.5], [5.5, 5.5]]).tolist()
    [0, 1]
    """

    _estimator_type = "classifier"

    # checked on entry to fit (the per-class counts are checked against the classes there)
    _parameter_constraints = {
        "n_prototypes_per_class": [Interval(numbers.Integral, 1, None),
                                   Interval(numbers.Real, 0, 1, closed="neither"), "array-like"],
        "variant": [Options(*_VARIANTS)],
        "learning_rate": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_epochs": [Interval(numbers.Integral, 1, None)],
        "window": [Interval(numbers.Real, 0, 1, closed="neither")],
        "epsilon": [Interval(numbers.Real, 0, 1)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_prototypes_per_class=1, *, variant="lvq1", learning_rate=0.1,
                 n_epochs=30, window=0.3, epsilon=0.2, random_state=None):
        self.n_prototypes_per_class = n_prototypes_per_class
        self.variant = variant
        self.learning_rate = learning_rate
        self.n_epochs = n_epochs
        self.window = window
        self.epsilon = epsilon
        self.random_state = random_state

    def _counts(self, class_sizes):
        n_cls = len(class_sizes)
        p = self.n_prototypes_per_class
        if np.ndim(p) == 0 and isinstance(p, numbers.Real) and not isinstance(
                p, numbers.Integral):
            counts = np.maximum(1, np.rint(p * class_sizes)).astype(np.int64)
        elif np.ndim(p) == 0:
            counts = np.full(n_cls, int(p))
        else:
            counts = np.asarray(p)
            if counts.shape != (n_cls,) or counts.dtype.kind not in "iu" or np.any(counts < 1):
                raise ValueError(f"n_prototypes_per_class must be a positive int or {n_cls} "
                                 f"positive ints (one per class), got {p!r}.")
        return np.minimum(counts, class_sizes)

    def fit(self, X, y):
        """Train the prototypes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self : LVQ
        """
        X, _, rng = check_fit_input(X, random_state=self.random_state)
        if y is None:
            raise ValueError("LVQ is supervised: y is required.")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}.")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity.")
        classes, y_idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y must hold at least two classes, got {len(classes)} "
                             f"(n_samples={X.shape[0]}).")
        sizes = np.bincount(y_idx, minlength=len(classes))
        counts = self._counts(sizes)
        n_epochs = int(self.n_epochs)
        if n_epochs * X.shape[0] > 10**9:
            raise ValueError(f"n_epochs={n_epochs} x {X.shape[0]} samples is more than "
                             "10**9 updates.")
        Xs, mean, scale = standardise(X)
        protos, labels = [], []
        for c, k in enumerate(counts):
            Xc = Xs[y_idx == c]
            protos.append(kmeans(Xc, int(k), random_state=rng).centers)
            labels.append(np.full(int(k), c, dtype=np.int64))
        protos = np.ascontiguousarray(np.concatenate(protos), dtype=np.float64)
        labels = np.concatenate(labels)
        init = protos.copy()
        n = X.shape[0]
        order = np.concatenate([rng.permutation(n) for _ in range(n_epochs)]).astype(np.int64)
        rates = np.full(len(protos), float(self.learning_rate))
        moves = _prototypes.lvq_train(Xs, y_idx.astype(np.int64), protos, labels, order,
                                      self.variant, float(self.learning_rate),
                                      float(self.window), float(self.epsilon), rates)
        self.classes_ = classes
        self._protos_s, self._labels_idx = protos, labels
        self._mean, self._scale = mean, scale
        self.prototypes_ = protos * scale + mean
        self.initial_prototypes_ = init * scale + mean
        self.prototype_labels_ = classes[labels]
        self.n_updates_ = moves
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Class of the nearest prototype of each row."""
        Xs = rescaled_input(self, X, "prototypes_")
        nearest, _ = assign_labels(Xs, self._protos_s)
        return self.classes_[self._labels_idx[nearest]]

    def score(self, X, y):
        """Classification accuracy on (X, y)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))
