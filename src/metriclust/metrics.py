"""Clustering quality measures.

Public functions and classes:

.. autosummary::

   adjusted_rand_index       -- Rand index adjusted for chance (Hubert & Arabie 1985)
   blur_ratio                -- within over total sum of squares, CPCM's criterion
   cluster_purities          -- purity of each cluster: the share of its dominant class
   clustering_accuracy       -- accuracy after the best matching of clusters to classes
   contingency_matrix        -- contingency table of two labelings
   entropy                   -- size-weighted entropy of the classes inside each cluster
   normalized_mutual_info    -- normalized mutual information
   pairwise_accuracy         -- Xing et al.'s balanced pairwise accuracy
   xing_accuracy             -- Xing et al.'s accuracy: Rand for two classes, else balanced
   purity                    -- share of points in their cluster's dominant class
   rand_index                -- share of point pairs on which two labelings agree
   silhouette_samples        -- silhouette of each point
   silhouette_score          -- mean silhouette of all points
   variation_of_information  -- variation of information (Meila 2007)

Every comparison of two labelings is computed from their contingency table
``n_ij`` (points with true class ``i`` and predicted cluster ``j``), built by one
pass of a C kernel (``metriclust._core.partition.contingency_table``): O(N) for
the table, then O(K1 * K2) for the measure. Labels may be any hashable, mutually
comparable values (integers, strings); they are encoded by
:func:`metriclust._core.validation.check_labels`.

Notation used in the docstrings: ``N`` points, ``a_i = sum_j n_ij`` (class
sizes), ``b_j = sum_i n_ij`` (cluster sizes), ``C(n, 2) = n (n - 1) / 2`` and
``T = C(N, 2)`` pairs. Pair counts are formed as int64 per cell (exact for
``N < 4.2e9``) and combined as Python integers, so products such as ``T^2``
never overflow. Entropies use the natural logarithm.

:func:`blur_ratio` is the CPCM criterion (Gupta, Foster & Ungar 2008, Sec. 2).
"""

import numbers

import numpy as np

from ._core.partition import blur_ratio as _blur_ratio, contingency_table, same_partition_table
from ._core.validation import check_array, check_labels

__all__ = [
    "adjusted_rand_index",
    "blur_ratio",
    "cluster_purities",
    "clustering_accuracy",
    "contingency_matrix",
    "entropy",
    "normalized_mutual_info",
    "pairwise_accuracy",
    "xing_accuracy",
    "purity",
    "rand_index",
    "silhouette_samples",
    "silhouette_score",
    "variation_of_information",
]


# --------------------------------------------------------------------------
# Shared pieces: encoding, the table, pair counts, entropies


def _table(labels_true, labels_pred, names=("labels_true", "labels_pred")):
    """Validate both labelings and return their (K1, K2) int64 contingency table."""
    a, _ = check_labels(labels_true, name=names[0])
    b, _ = check_labels(labels_pred, name=names[1])
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same length, got "
            f"{a.shape[0]} and {b.shape[0]}."
        )
    if a.shape[0] == 0:
        raise ValueError(f"{names[0]} and {names[1]} are empty; at least one label is required.")
    ka = int(a.max()) + 1
    kb = int(b.max()) + 1
    return contingency_table(a, b, ka, kb)


def _comb2_sum(counts):
    """``sum C(n, 2)`` over an int64 array, as an exact Python int."""
    counts = counts.astype(np.int64, copy=False)
    return int(np.sum(counts * (counts - 1) // 2, dtype=np.int64))


def _pair_counts(table):
    """Exact pair counts ``(ss, sd, ds, dd, T)`` as Python ints.

    ``ss``: pairs together in both labelings; ``sd``: together in the true
    labeling only; ``ds``: together in the predicted labeling only; ``dd``:
    apart in both; ``T = C(N, 2)``.
    """
    n = int(table.sum())
    s_ij = _comb2_sum(table.ravel())
    s_a = _comb2_sum(table.sum(axis=1))
    s_b = _comb2_sum(table.sum(axis=0))
    total = n * (n - 1) // 2
    return s_ij, s_a - s_ij, s_b - s_ij, total - s_a - s_b + s_ij, total


def _nonneg(x):
    """``max(x, 0.0)`` as a float, without keeping a negative zero."""
    x = float(x)
    return x if x > 0.0 else 0.0


def _entropy_of_counts(counts):
    """Shannon entropy (nats) of the distribution given by non-negative counts."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts > 0]
    n = counts.sum()
    if counts.size <= 1:
        return 0.0
    # -sum p log p with p = c / n, written as log n - sum c log c / n.
    return _nonneg(np.log(n) - np.dot(counts, np.log(counts)) / n)


def _mutual_info(table):
    """Mutual information (nats) of the two labelings, clipped at 0."""
    if min(table.shape) == 1:  # a one-cluster labeling carries no information
        return 0.0
    n = float(table.sum())
    rows = table.sum(axis=1).astype(np.float64)
    cols = table.sum(axis=0).astype(np.float64)
    i, j = np.nonzero(table)
    nij = table[i, j].astype(np.float64)
    mi = np.dot(nij, np.log(nij) + np.log(n) - np.log(rows[i]) - np.log(cols[j])) / n
    return _nonneg(mi)


# --------------------------------------------------------------------------
# Public measures


def contingency_matrix(labels_true, labels_pred):
    r"""Contingency table of two labelings.

    .. math:: n_{ij} = |\{t : \mathrm{true}_t = c_i,\ \mathrm{pred}_t = k_j\}|

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable, mutually comparable values).
    labels_pred : array-like of shape (n_samples,)
        Labels to compare with.

    Returns
    -------
    table : ndarray of shape (n_classes, n_clusters), int64
        Rows follow the sorted distinct values of ``labels_true``, columns
        those of ``labels_pred`` (as :func:`numpy.unique` orders them), like
        ``sklearn.metrics.cluster.contingency_matrix``.

    Examples
    --------
    >>> from metriclust.metrics import contingency_matrix
    >>> contingency_matrix(["a", "a", "b"], [1, 0, 0])
    array([[1, 1],
           [1, 0]])
    """
    return _table(labels_true, labels_pred)


def rand_index(labels_true, labels_pred):
    r"""Rand index: the fraction of point pairs on which two labelings agree.

    .. math::

        RI = \frac{n_{ss} + n_{dd}}{\binom{N}{2}},\qquad
        n_{ss} = \sum_{ij}\binom{n_{ij}}{2},\quad
        n_{dd} = \binom{N}{2} - \sum_i\binom{a_i}{2} - \sum_j\binom{b_j}{2} + n_{ss}

    Computed exactly from the contingency table in O(N + K1 K2). With fewer
    than two points there are no pairs and the index is 1.0 (as in
    scikit-learn's ``rand_score``).

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The two labelings.

    Returns
    -------
    float
        In [0, 1]; 1 for identical partitions (up to relabeling).

    References
    ----------
    W. M. Rand, "Objective criteria for the evaluation of clustering methods",
    JASA 66 (1971) 846-850.

    Examples
    --------
    >>> from metriclust.metrics import rand_index
    >>> rand_index([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    ss, _, _, dd, total = _pair_counts(_table(labels_true, labels_pred))
    if total == 0:
        return 1.0
    return (ss + dd) / total


def adjusted_rand_index(labels_true, labels_pred):
    r"""Adjusted Rand index (Hubert & Arabie): the Rand index corrected for chance.

    .. math::

        ARI = \frac{n_{ss} - S_a S_b / T}{\tfrac12 (S_a + S_b) - S_a S_b / T},\qquad
        S_a = \sum_i\binom{a_i}{2},\ S_b = \sum_j\binom{b_j}{2},\ T = \binom{N}{2}

    evaluated in the equivalent integer form
    ``2 (ss dd - sd ds) / ((ss + sd)(sd + dd) + (ss + ds)(ds + dd))`` with exact
    Python integers. Identical partitions (no disagreeing pair, including the
    cases with no pairs at all) give 1.0, as in scikit-learn.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The two labelings.

    Returns
    -------
    float
        1 for identical partitions, about 0 for independent ones, can be
        negative (down to -0.5).

    References
    ----------
    L. Hubert and P. Arabie, "Comparing partitions", J. Classification 2 (1985).

    Examples
    --------
    >>> from metriclust.metrics import adjusted_rand_index
    >>> adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2])
    0.5714285714285714
    """
    ss, sd, ds, dd, _ = _pair_counts(_table(labels_true, labels_pred))
    if sd == 0 and ds == 0:
        return 1.0
    return 2.0 * (ss * dd - sd * ds) / ((ss + sd) * (sd + dd) + (ss + ds) * (ds + dd))


def variation_of_information(labels_true, labels_pred, *, normalized=False):
    r"""Variation of information (Meila 2003/2007) between two partitions.

    .. math::

        VI = H(C) + H(C') - 2 I(C; C'),\qquad
        H(C) = -\sum_i \frac{a_i}{N}\log\frac{a_i}{N},\quad
        I(C;C') = \sum_{ij}\frac{n_{ij}}{N}\log\frac{N n_{ij}}{a_i b_j}

    with the natural logarithm. VI is a metric on partitions: 0 exactly for the
    same partition up to relabeling, symmetric, and it satisfies the triangle
    inequality. ``normalized=True`` divides by ``log N`` (its maximum over all
    pairs of partitions of N points), giving a value in [0, 1]; this is the
    form the CPCM paper's Table 1(a) reports. For N = 1 both forms are 0.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The two labelings (the measure is symmetric).
    normalized : bool, default=False
        Divide by ``log N``.

    Returns
    -------
    float
        Non-negative; at most ``log N`` (at most 1 when normalized).

    References
    ----------
    M. Meila, "Comparing clusterings -- an information based distance",
    J. Multivariate Analysis 98 (2007) 873-895.

    Examples
    --------
    >>> from metriclust.metrics import variation_of_information
    >>> round(variation_of_information([0, 0, 1, 1], [0, 1, 0, 1]), 4)  # 2 log 2
    1.3863
    """
    table = _table(labels_true, labels_pred)
    if same_partition_table(table):
        return 0.0
    h_true = _entropy_of_counts(table.sum(axis=1))
    h_pred = _entropy_of_counts(table.sum(axis=0))
    mi = _mutual_info(table)
    # I <= min(H, H') in exact arithmetic; clip the rounding.
    vi = _nonneg(h_true + h_pred - 2.0 * min(mi, h_true, h_pred))
    if normalized:
        n = int(table.sum())
        return float(vi / np.log(n)) if n > 1 else 0.0
    return vi


def normalized_mutual_info(labels_true, labels_pred, *, average_method="arithmetic"):
    r"""Normalized mutual information.

    .. math:: NMI = \frac{I(C; C')}{\operatorname{mean}(H(C), H(C'))}

    with the arithmetic mean by default (scikit-learn's default
    ``normalized_mutual_info_score``; equal to Strehl & Ghosh's
    ``I / sqrt(H H')`` with ``average_method="geometric"``). Special cases
    follow scikit-learn: two one-cluster labelings give 1.0; otherwise zero
    mutual information gives 0.0.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The two labelings.
    average_method : {"arithmetic", "geometric", "min", "max"}, default="arithmetic"
        How the two entropies are combined in the denominator.

    Returns
    -------
    float
        In [0, 1].

    References
    ----------
    A. Strehl and J. Ghosh, "Cluster ensembles", JMLR 3 (2002) 583-617.

    Examples
    --------
    >>> from metriclust.metrics import normalized_mutual_info
    >>> normalized_mutual_info(["x", "x", "y", "y"], [5, 5, 7, 7])
    1.0
    """
    methods = ("arithmetic", "geometric", "min", "max")
    if average_method not in methods:
        raise ValueError(f"average_method must be one of {methods}, got {average_method!r}.")
    table = _table(labels_true, labels_pred)
    if same_partition_table(table):  # includes two one-cluster labelings
        return 1.0
    mi = _mutual_info(table)
    if mi == 0.0:
        return 0.0
    h_true = _entropy_of_counts(table.sum(axis=1))
    h_pred = _entropy_of_counts(table.sum(axis=0))
    if average_method == "arithmetic":
        norm = 0.5 * (h_true + h_pred)
    elif average_method == "geometric":
        norm = np.sqrt(h_true * h_pred)
    elif average_method == "min":
        norm = min(h_true, h_pred)
    else:
        norm = max(h_true, h_pred)
    # mi > 0 implies both entropies > 0; rounding may leave mi a hair above norm.
    return min(float(mi / norm), 1.0)


def purity(labels_true, labels_pred):
    r"""Purity of the clusters ``labels_pred`` with respect to the classes ``labels_true``.

    .. math:: \mathrm{purity} = \frac{1}{N}\sum_j \max_i n_{ij}

    Each cluster counts its most frequent class as correct. Not symmetric:
    purity is 1 whenever every cluster holds one class (e.g. all singletons).

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        The classes.
    labels_pred : array-like of shape (n_samples,)
        The clusters.

    Returns
    -------
    float
        In (0, 1].

    References
    ----------
    C. D. Manning, P. Raghavan and H. Schuetze, *Introduction to Information
    Retrieval*, Cambridge UP 2008, Sec. 16.3.

    Examples
    --------
    The lecture notes' example (clusters of sizes 6, 6 and 5 with majority
    classes 5, 4 and 3):

    >>> from metriclust.metrics import purity
    >>> classes = list("xxxxxo" "xoooov" "xxvvv")
    >>> clusters = [1] * 6 + [2] * 6 + [3] * 5
    >>> round(purity(classes, clusters), 4)  # (5 + 4 + 3) / 17
    0.7059
    """
    table = _table(labels_true, labels_pred)
    return float(table.max(axis=0).sum() / table.sum())


def cluster_purities(labels_true, labels_pred):
    r"""Purity of each cluster: the share of its dominant class.

    .. math:: \mathrm{Purity}(\omega_j) = \frac{1}{n_j} \max_i n_{ij}

    (the lecture's per-cluster purity, Xing, lecture 10, "External evaluation
    of cluster quality"). :func:`purity` is their size-weighted mean.

    Returns
    -------
    ndarray of shape (n_clusters,)
        In the order of the sorted distinct values of ``labels_pred``.

    Examples
    --------
    The lecture's example: clusters I, II, III with class counts (5, 1, 0),
    (1, 4, 1) and (2, 0, 3):

    >>> from metriclust.metrics import cluster_purities
    >>> classes = list("xxxxxo" "xoooov" "xxvvv")
    >>> clusters = [1] * 6 + [2] * 6 + [3] * 5
    >>> cluster_purities(classes, clusters).round(4).tolist()  # 5/6, 4/6, 3/5
    [0.8333, 0.6667, 0.6]
    """
    table = _table(labels_true, labels_pred)
    return table.max(axis=0) / table.sum(axis=0)


def silhouette_samples(X, labels, *, metric="euclidean", chunk_size=1024):
    r"""Silhouette of each point: :math:`s_i = (b_i - a_i) / \max(a_i, b_i)`.

    :math:`a_i` is the mean distance of point i to the other points of its
    cluster, :math:`b_i` the smallest mean distance to the points of another
    cluster (Rousseeuw 1987); :math:`s_i = 0` in a singleton cluster. The
    distances (any ``scipy.spatial.distance.cdist`` metric) are formed by row
    chunks and reduced per cluster with one matrix product: O(N^2) time,
    O(chunk_size x N) memory.

    References
    ----------
    P. J. Rousseeuw, "Silhouettes: a graphical aid to the interpretation and
    validation of cluster analysis", J. Comput. Appl. Math. 20, 1987.
    """
    from scipy.spatial.distance import cdist

    X = check_array(X, dtype=np.float64)
    codes, _ = check_labels(labels, name="labels", n_samples=X.shape[0])
    codes = np.unique(codes, return_inverse=True)[1].reshape(-1)  # no empty codes
    K = int(codes.max()) + 1
    if K < 2 or K > X.shape[0] - 1:
        raise ValueError(f"the silhouette needs 2 <= number of clusters <= n_samples - 1, "
                         f"got {K} labels for {X.shape[0]} samples.")
    onehot = np.zeros((X.shape[0], K))
    onehot[np.arange(X.shape[0]), codes] = 1.0
    sizes = onehot.sum(axis=0)
    s = np.empty(X.shape[0])
    for lo in range(0, X.shape[0], chunk_size):
        D = cdist(X[lo:lo + chunk_size], X, metric=metric)
        sums = D @ onehot
        own = codes[lo:lo + chunk_size]
        rows = np.arange(len(own))
        n_own = sizes[own]
        a = sums[rows, own] / np.maximum(n_own - 1, 1)
        means = sums / sizes
        means[rows, own] = np.inf
        b = means.min(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            si = (b - a) / np.maximum(a, b)
        s[lo:lo + chunk_size] = np.where((n_own > 1) & np.isfinite(si), si, 0.0)
    return s


def silhouette_score(X, labels, *, metric="euclidean"):
    """Mean silhouette of all points (see :func:`silhouette_samples`); in [-1, 1]."""
    return float(np.mean(silhouette_samples(X, labels, metric=metric)))


def entropy(labels_true, labels_pred, *, normalized=False):
    r"""Size-weighted entropy of the classes inside each cluster.

    .. math::

        E = \sum_j \frac{b_j}{N}\, H_j,\qquad
        H_j = -\sum_i \frac{n_{ij}}{b_j}\log\frac{n_{ij}}{b_j}

    i.e. the conditional entropy ``H(classes | clusters)`` in nats; 0 when
    every cluster is pure. ``normalized=True`` divides by ``log K1`` (the
    number of classes; Zhao & Karypis 2004), giving a value in [0, 1]; with a
    single class the entropy is 0 either way.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        The classes.
    labels_pred : array-like of shape (n_samples,)
        The clusters.
    normalized : bool, default=False
        Divide by the logarithm of the number of classes.

    Returns
    -------
    float
        Lower is better.

    References
    ----------
    Y. Zhao and G. Karypis, "Empirical and theoretical comparisons of selected
    criterion functions for document clustering", Machine Learning 55 (2004).

    Examples
    --------
    >>> from metriclust.metrics import entropy
    >>> entropy([0, 0, 1, 1], [0, 0, 1, 1])
    0.0
    >>> round(entropy([0, 1, 0, 1], [0, 0, 0, 0], normalized=True), 6)
    1.0
    """
    table = _table(labels_true, labels_pred)
    n = float(table.sum())
    cols = table.sum(axis=0).astype(np.float64)
    i, j = np.nonzero(table)
    nij = table[i, j].astype(np.float64)
    # sum_j (b_j/N) H_j = -(1/N) sum_ij n_ij log(n_ij / b_j)
    value = _nonneg(-np.dot(nij, np.log(nij) - np.log(cols[j])) / n)
    if normalized:
        k = table.shape[0]
        return float(value / np.log(k)) if k > 1 else 0.0
    return value


def clustering_accuracy(labels_true, labels_pred):
    r"""Accuracy after the best one-to-one matching of clusters to classes.

    .. math:: \mathrm{ACC} = \frac{1}{N}\max_{\pi}\sum_j n_{\pi(j) j}

    over injective maps ``pi`` between clusters and classes, found by the
    Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`) on the
    contingency table in O(K^3). When the numbers of classes and clusters
    differ, only ``min(K1, K2)`` pairs are matched and the points of unmatched
    clusters count as errors.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The two labelings (symmetric).

    Returns
    -------
    float
        In (0, 1].

    Examples
    --------
    >>> from metriclust.metrics import clustering_accuracy
    >>> clustering_accuracy([0, 0, 1, 1, 2], ["b", "b", "a", "a", "a"])
    0.8
    """
    from scipy.optimize import linear_sum_assignment

    table = _table(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / table.sum())


def pairwise_accuracy(labels_true, labels_pred):
    r"""Xing et al.'s balanced pairwise accuracy.

    .. math::

        \mathrm{Acc} = \tfrac12\,P(\hat c_i = \hat c_j \mid c_i = c_j)
                     + \tfrac12\,P(\hat c_i \ne \hat c_j \mid c_i \ne c_j)
                     = \frac12\frac{n_{ss}}{S_a} + \frac12\frac{n_{dd}}{T - S_a}

    over all unordered pairs ``i < j``, with ``c`` the true labels, ``c-hat``
    the predicted ones, ``S_a = sum_i C(a_i, 2)`` the same-class pairs and
    ``T = C(N, 2)``. This is the measure of Xing, Ng, Jordan & Russell (2003),
    Sec. 3.2 and footnote 8, computed exactly from the contingency table rather
    than by sampling pairs.

    Zero denominators: when one kind of pair does not exist (every class a
    singleton, so no same-class pair; or a single class, so no
    different-class pair) the undefined term is dropped and the other
    conditional probability is returned alone. With fewer than two points
    there are no pairs and the result is 1.0.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The true classes and the clustering (not symmetric).

    Returns
    -------
    float
        In [0, 1]; 1 for a perfect clustering, 0.5 for the trivial ones (all
        points in one cluster, or every point its own cluster), about 0.5 for
        a clustering independent of the classes.

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan and S. Russell, "Distance metric
    learning, with application to clustering with side-information",
    NIPS 15 (2003).

    Examples
    --------
    >>> from metriclust.metrics import pairwise_accuracy
    >>> pairwise_accuracy([0, 0, 1, 1], [0, 0, 0, 0])  # every same pair right, no different pair
    0.5
    """
    ss, sd, _, dd, total = _pair_counts(_table(labels_true, labels_pred))
    same = ss + sd  # same-class pairs
    diff = total - same
    if same > 0 and diff > 0:
        return 0.5 * (ss / same) + 0.5 * (dd / diff)
    if same > 0:
        return ss / same
    if diff > 0:
        return dd / diff
    return 1.0


def xing_accuracy(labels_true, labels_pred):
    r"""The clustering accuracy of Xing, Ng, Jordan & Russell (2003), Sec. 3.2.

    For data with two true classes the paper's measure is the plain Rand index
    (the probability that two points drawn at random are put in the same or in
    different clusters as the true classes put them, :func:`rand_index`). With
    more classes most pairs are in different classes, so the Rand index is
    inflated; there (footnote 8) the pairs are drawn from the same class and from
    different classes with chance 0.5 each, :func:`pairwise_accuracy`.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)
        The true classes and the clustering.

    Returns
    -------
    float
        ``rand_index`` when ``labels_true`` has at most two classes, else
        ``pairwise_accuracy``.

    Examples
    --------
    >>> from metriclust.metrics import xing_accuracy
    >>> xing_accuracy([0, 0, 1, 1], [0, 0, 0, 0])   # 2 classes: Rand index, 2 of 6 pairs right
    0.3333333333333333
    >>> xing_accuracy([0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 0, 0])  # 3 classes: balanced
    0.5
    """
    table = _table(labels_true, labels_pred)
    if table.shape[0] <= 2:
        ss, _, _, dd, total = _pair_counts(table)
        return 1.0 if total == 0 else (ss + dd) / total
    return pairwise_accuracy(labels_true, labels_pred)


#: outside [_TINY, 1 / _TINY] the squares in blur_ratio could underflow or overflow
_TINY = 1e-100


def blur_ratio(X, labels, transform=None):
    r"""Blur ratio of a partition: within-cluster over total sum of squares.

    .. math::

        BR = \frac{SSC}{SST}
           = \frac{\sum_i \lVert z_i - \theta_{c(i)} \rVert^2}
                  {\sum_i \lVert z_i - \bar z \rVert^2},\qquad z_i = x_i\beta

    where ``theta_k`` is the mean of the ``z_i`` in cluster ``k`` and ``z-bar``
    the mean of all ``z_i``. This is the criterion CPCM minimizes (Gupta,
    Foster & Ungar 2008, Sec. 2, with ``A = beta beta^T``); with ``beta = I``
    it is k-means' inertia over the total sum of squares. It is invariant to
    translations and to a global scaling of ``z``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data (finite numbers).
    labels : array-like of shape (n_samples,)
        The partition (any hashable labels).
    transform : None, callable or array-like of shape (n_features, q), default=None
        The space in which to measure: None uses ``X`` itself; a callable is
        applied to the validated ``X`` and must return ``n_samples`` rows (e.g.
        a fitted estimator's ``transform``); a matrix ``beta`` maps ``X`` to
        ``X @ beta``.

    Returns
    -------
    float
        In [0, 1]. By convention 1.0 when ``SST == 0`` (all points coincide in
        the measured space): nothing is separated, and a metric that collapses
        the data must not look like a perfect clustering to a minimizer.

    References
    ----------
    A. A. Gupta, D. P. Foster and L. H. Ungar, "Unsupervised distance metric
    learning using predictability", Tech. Rep. MS-CIS-08-23, U. Pennsylvania
    (2008).

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.metrics import blur_ratio
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> round(blur_ratio(X, [0, 0, 1, 1]), 6)  # 4 * 0.25 / (4 * 25.25)
    0.009901
    >>> blur_ratio(X, [0, 0, 1, 1], transform=np.array([[0.0], [1.0]]))  # only the 2nd feature
    1.0
    """
    X = check_array(X, name="X")
    n = X.shape[0]
    codes, classes = check_labels(labels, name="labels", n_samples=n)
    if transform is None:
        Z = X
    elif callable(transform):
        Z = transform(X)
        Z = check_array(Z, name="transform(X)")
        if Z.shape[0] != n:
            raise ValueError(
                f"transform(X) returned {Z.shape[0]} rows for {n} samples."
            )
    else:
        if isinstance(transform, (str, bytes, numbers.Number)):
            raise TypeError(
                "transform must be None, a callable or an (n_features, q) matrix, "
                f"got {transform!r}."
            )
        beta = check_array(transform, name="transform", dtype=np.float64)
        if beta.shape[0] != X.shape[1]:
            raise ValueError(
                f"transform has {beta.shape[0]} rows, but X has {X.shape[1]} features; "
                "expected a matrix of shape (n_features, q)."
            )
        Z = X.astype(np.float64, copy=False) @ beta
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if not np.any(np.ptp(Z, axis=0) > 0):
        return 1.0
    scale = float(np.abs(Z).max())
    if not _TINY <= scale <= 1.0 / _TINY:  # the ratio is scale-free: rescale
        Z = Z / scale
    return _blur_ratio(Z, codes, classes.shape[0])
