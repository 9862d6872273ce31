"""Side information from class labels: pairs and the components of their graph.

The machinery behind :mod:`metriclust.constraints` (which re-exports the three
public functions) and the pairs :class:`metriclust.MMC` draws from labels.

.. autosummary::

   connected_components  -- connected components of a pair graph
   pairs_from_labels     -- random similar and dissimilar pairs from class labels
   sample_similar_pairs  -- similar pairs as in Xing et al. (2003), Sec. 3.2
   sample_similar_fraction -- a random fraction of all same-class pairs (Xing et al., Figs. 2, 3, 7)
"""

import numbers

import numpy as np

from .validation import check_pairs, check_random_state, check_scalar

__all__ = ["connected_components", "pairs_from_labels", "sample_similar_fraction",
           "sample_similar_pairs"]


def connected_components(pairs, n_samples):
    """Connected components of the graph on ``n_samples`` nodes with edges ``pairs``.

    Returns ``(n_components, labels)``; ``labels[i]`` in ``[0, n_components)``,
    numbered in order of each component's first node.

    >>> connected_components([[0, 1], [2, 3], [1, 3]], 5)
    (2, array([0, 0, 0, 0, 1]))
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as _cc

    check_scalar(n_samples, "n_samples", numbers.Integral, min_val=1)
    pairs = check_pairs(pairs, n_samples)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                       shape=(n_samples, n_samples))
    n_comp, labels = _cc(graph, directed=False)
    # Renumber by first occurrence so the result does not depend on scipy's order.
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_comp)
    return int(n_comp), rank[labels]


def _labelled_classes(y):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        bad = int(np.argmax(~np.isfinite(y)))
        raise ValueError(f"y contains NaN or infinity at index {bad}; mark unlabelled "
                         "points with -1.")
    idx = np.flatnonzero(y != -1)
    classes, codes = np.unique(y[idx], return_inverse=True)
    return idx, codes.reshape(-1), len(classes)


def _sample_same(idx, codes, k, size, rng):
    """``size`` random same-class pairs (with replacement), original indices."""
    counts = np.bincount(codes, minlength=k)
    weight = counts * (counts - 1.0)
    if weight.sum() == 0:
        raise ValueError("y has no class with two labelled points: no similar pair exists "
                         "(n_similar > 0).")
    order = np.argsort(codes, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    c = rng.choice(k, size=size, p=weight / weight.sum())
    a = rng.integers(0, counts[c])
    b = rng.integers(0, counts[c] - 1)
    b = b + (b >= a)                                   # a distinct second member
    return np.c_[idx[order[start[c] + a]], idx[order[start[c] + b]]].astype(np.int64)


def _sample_different(idx, codes, k, size, rng):
    counts = np.bincount(codes, minlength=k).astype(np.float64)
    if np.count_nonzero(counts) < 2:
        raise ValueError("y has fewer than two labelled classes: no dissimilar pair exists "
                         "(n_dissimilar > 0).")
    n = idx.size
    out = np.empty((0, 2), dtype=np.int64)
    while len(out) < size:                             # rejection: differs w.p. >= 1/n
        m = 2 * (size - len(out)) + 16
        a, b = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
        ok = codes[a] != codes[b]
        out = np.vstack([out, np.c_[idx[a[ok]], idx[b[ok]]]])
    return np.ascontiguousarray(out[:size])


def pairs_from_labels(y, n_similar, n_dissimilar, random_state=None):
    """Random similar (same class) and dissimilar (different class) pairs.

    Pairs are drawn uniformly with replacement among the labelled points
    (label -1 = unlabelled), never joining a point to itself.

    Returns
    -------
    similar, dissimilar : ndarray of shape (n_similar, 2), (n_dissimilar, 2)

    >>> S, D = pairs_from_labels([0, 0, 1, 1, -1], 3, 2, random_state=0)
    >>> S.shape, D.shape
    ((3, 2), (2, 2))
    """
    check_scalar(n_similar, "n_similar", numbers.Integral, min_val=0)
    check_scalar(n_dissimilar, "n_dissimilar", numbers.Integral, min_val=0)
    rng = check_random_state(random_state)
    idx, codes, k = _labelled_classes(y)
    S = _sample_same(idx, codes, k, n_similar, rng) if n_similar else np.empty((0, 2), np.int64)
    D = (_sample_different(idx, codes, k, n_dissimilar, rng) if n_dissimilar
         else np.empty((0, 2), np.int64))
    return S, D


def sample_similar_fraction(y, fraction, random_state=None):
    """A random ``fraction`` of all same-class pairs, without replacement.

    Xing et al. (2003) use this side information for the synthetic examples
    ("S was a randomly sampled 1% of all pairs of similar points", footnote 6:
    Figs. 2 and 3) and as the x-axis of Fig. 7 ("the fraction of all pairs of
    points in the same class that are randomly sampled to be included in S").
    ``round(fraction * M)`` distinct pairs are drawn, ``M`` the number of
    same-class pairs among the labelled points (label -1 = unlabelled). The
    pairs are drawn by their index in the list of same-class pairs, so no list
    of all ``M`` pairs is formed.

    Returns
    -------
    similar : ndarray of shape (round(fraction * M), 2)
        Distinct same-class pairs ``(i, j)``, ``i < j``, in random order.

    >>> S = sample_similar_fraction([0, 0, 0, 1, 1, -1], 1.0, random_state=0)
    >>> sorted(map(tuple, S.tolist()))
    [(0, 1), (0, 2), (1, 2), (3, 4)]
    """
    check_scalar(fraction, "fraction", numbers.Real, min_val=0, max_val=1)
    rng = check_random_state(random_state)
    idx, codes, k = _labelled_classes(y)
    counts = np.bincount(codes, minlength=k).astype(np.int64)
    per_class = counts * (counts - 1) // 2
    bounds = np.concatenate([[0], np.cumsum(per_class)])
    m = int(round(float(fraction) * int(bounds[-1])))
    if m == 0:
        return np.empty((0, 2), dtype=np.int64)
    t = rng.choice(int(bounds[-1]), size=m, replace=False)
    c = np.searchsorted(bounds, t, side="right") - 1      # the class of each pair
    r, n_c = t - bounds[c], counts[c]                    # index within the class
    # row i of the class's upper triangle: first(i) <= r < first(i + 1),
    # first(i) = i n_c - i (i + 1) / 2; the closed form, then corrected for rounding
    first = lambda i: i * n_c - i * (i + 1) // 2         # noqa: E731
    b = 2.0 * n_c - 1.0
    i = np.floor(0.5 * (b - np.sqrt(np.maximum(b * b - 8.0 * r, 0.0)))).astype(np.int64)
    i = np.where(first(i) > r, i - 1, i)
    i = np.where(first(i + 1) <= r, i + 1, i)
    j = i + 1 + (r - first(i))
    order = np.argsort(codes, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return np.ascontiguousarray(np.c_[idx[order[start[c] + i]], idx[order[start[c] + j]]],
                                dtype=np.int64)


def _distinct_in_order(pairs, n):
    """The pairs (unordered) at their first occurrence, in order of appearance."""
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    _, first = np.unique(lo * np.int64(n) + hi, return_index=True)
    return pairs[np.sort(first)]


def sample_similar_pairs(y, target_component_ratio=0.9, random_state=None):
    """Similar pairs as in Xing et al. (2003), Sec. 3.2, footnote 9.

    "A random subset of all pairs of points sharing the same class", sized so
    that the number of connected components ``K_c`` of the pairs' graph is
    about ``target_component_ratio * N``: 0.9 is the paper's "little" side
    information, 0.7 its "much". The subset is drawn without replacement (no
    pair twice; ``(i, j)`` and ``(j, i)`` are the same pair). ``N`` counts every
    point (unlabelled ones, label -1, stay singletons). The subset size is found
    by bisection on a random sequence of distinct pairs (``K_c`` only decreases
    as pairs are added), so there is no loop over pairs.

    Returns
    -------
    similar : ndarray of shape (m, 2)
        Distinct same-class pairs.

    >>> y = np.repeat(np.arange(3), 20)
    >>> S = sample_similar_pairs(y, 0.7, random_state=0)
    >>> connected_components(S, 60)[0]
    42
    """
    check_scalar(target_component_ratio, "target_component_ratio", numbers.Real,
                 min_val=0, max_val=1)
    rng = check_random_state(random_state)
    y = np.asarray(y)
    n = y.shape[0] if y.ndim == 1 else 0
    idx, codes, k = _labelled_classes(y)
    counts = np.bincount(codes, minlength=k)
    target = int(round(target_component_ratio * n))
    floor = n - idx.size + k                  # components when each class is joined
    if target < floor:
        raise ValueError(f"target_component_ratio={target_component_ratio} asks for "
                         f"{target} components; the classes allow at least {floor}.")
    if target >= n or np.all(counts < 2):
        return np.empty((0, 2), dtype=np.int64)
    need = n - target
    # Uniform draws over all same-class pairs, kept at their first occurrence: a
    # uniformly random order of distinct pairs (sampling without replacement).
    pool = _distinct_in_order(_sample_same(idx, codes, k, 4 * need + 16, rng), n)
    while connected_components(pool, n)[0] > target:   # rare: grow the pool
        more = _sample_same(idx, codes, k, 2 * len(pool) + 16, rng)
        pool = _distinct_in_order(np.vstack([pool, more]), n)
    lo, hi = need, len(pool)                 # K_c(prefix lo) >= N - lo >= target
    while lo < hi:
        mid = (lo + hi) // 2
        if connected_components(pool[:mid], n)[0] <= target:
            hi = mid
        else:
            lo = mid + 1
    return np.ascontiguousarray(pool[:lo])
