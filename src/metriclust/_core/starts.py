"""Starting partitions for CPCM's search (Gupta, Foster & Ungar 2008, Algorithm 1).

Public classes and functions:

.. autosummary::

   start_kinds                           -- kinds of start for an ``init`` and a predictor
   max_starts                            -- upper bound on the number of starts (verbose output)
   n_feature_starts, n_direction_starts  -- how many features / directions give starts
   random_partition                      -- balanced random partition
   feature_quantiles                     -- quantile starts of each feature
   strongest_split_features              -- the features whose own 1-D split is strongest
   feature_partition                     -- 1-D k-means of one column
   kmeans_partition                      -- k-means++ on a whitened space
   kurtosis_directions                   -- directions of extreme kurtosis (FOBI, FastICA)

Three kinds, all through the one k-means core (:mod:`metriclust._core.kmeans`):

- ``random``: balanced random partitions, the paper's protocol (Algorithm 1);
- ``feature``: 1-D k-means on each single feature, from its quantiles;
- ``direction``: 1-D k-means along the fourth-moment (FOBI) directions of the
  whitened data, and along the leading ones refined to a kurtosis extremum
  (FastICA's fixed point), which do not depend on the basis (affine-invariant);
- ``kmeans``: k-means++ on a whitened space (for the linear predictors the
  least-squares basis ``(X - mean) W``, shared with the predictor's QR, so these
  starts keep CPCM's affine invariance; for the kernel predictor the leading
  kernel-PCA coordinates).
"""

import numpy as np

from .kmeans import kmeans, kmeans_columns_1d
from .threads import small_problem_threads

__all__ = ["random_partition", "feature_partition", "feature_quantiles",
           "strongest_split_features", "kmeans_partition", "kurtosis_directions",
           "start_kinds", "n_feature_starts", "n_direction_starts", "max_starts",
           "WIDE_FEATURE_STARTS"]

# Kinds of start for each ``init`` of CPCM, and for ``init="auto"`` by predictor:
# every default start is computed from quantities that the predictor's own
# invariances leave unchanged, so the search adds no dependence on the basis.
# Least squares and LDA are affine-invariant (Property 1), and so are directions
# and whitened k-means. The Gaussian kernel (median width) is invariant to
# rotations, translations and a common scale: input directions and kernel-PCA
# starts are too. Stepwise selects original features, so it is invariant to
# rescaling, shifting (and reordering) them: per-feature starts are too, and on
# the Sec. 5.1 clouds a start along the informative feature is what finds them.
_KINDS_BY_INIT = {"random": ("random",), "features": ("feature",), "kmeans": ("kmeans",),
                  "components": ("component",), "directions": ("direction",)}
_AUTO_KINDS = {"linear": ("random", "direction", "kmeans"),
               "lda": ("random", "direction", "kmeans"),
               "kernel": ("random", "direction", "component", "kmeans"),
               "stepwise": ("random", "feature", "direction", "kmeans")}
# Wide data (p > N): p feature starts at O(N p) each would cost O(N p^2), and the
# whitened data give up to N - 1 directions: keep this many per n_init (features:
# those whose own 1-D k-means split is strongest; on the lymphoma-shaped benchmark
# set the best stepwise start is the strongest split of the 4026).
WIDE_FEATURE_STARTS = 10


def start_kinds(init, predictor):
    """The kinds of start, in the order they run, for a named ``init``."""
    return _AUTO_KINDS[predictor] if init == "auto" else _KINDS_BY_INIT[init]


def n_feature_starts(n_samples, n_features, n_init):
    """How many single features give a start: all, or the strongest few of wide data."""
    if n_features > n_samples:
        return min(n_samples, WIDE_FEATURE_STARTS * n_init)
    return n_features


def n_direction_starts(rank, n_init):
    """Number of directions :func:`kurtosis_directions` returns for the search:
    ``WIDE_FEATURE_STARTS * n_init`` at most, and the first ``n_init`` refined."""
    m = max(0, min(WIDE_FEATURE_STARTS * n_init, rank))
    return m + min(n_init, m)


def max_starts(kinds, n_samples, n_features, rank, n_init, n_components):
    """An upper bound on the number of starts of ``kinds``: the count of each kind
    (``n_components``: the component starts of the predictor), and ``n_init``
    random starts when no structured start is admissible."""
    count = {
        "random": n_init,
        "feature": n_feature_starts(n_samples, n_features, n_init),
        "direction": n_direction_starts(rank, n_init),
        "component": n_components,
        "kmeans": n_init,
    }
    return max(sum(count[k] for k in kinds), n_init)


def random_partition(n_samples, n_clusters, rng):
    """A balanced random partition: cluster sizes differ by at most one."""
    labels = np.arange(n_samples, dtype=np.int64) % n_clusters
    rng.shuffle(labels)
    return labels


def _quantile_levels(n_clusters):
    return (np.arange(n_clusters) + 0.5) / n_clusters


def feature_quantiles(X, n_clusters, columns=None, block=256):
    """Yield ``(j, quantiles of feature j)``: the starts of :func:`feature_partition`.

    One ``np.quantile`` call per block of columns instead of one per feature
    (0.5 ms of overhead each: 2 s of a 4026-feature search); the same values.
    ``columns``: increasing feature indices (default all).
    """
    q = _quantile_levels(n_clusters)
    columns = np.arange(X.shape[1]) if columns is None else np.asarray(columns)
    for a in range(0, columns.size, block):
        cols = columns[a:a + block]
        Q = np.quantile(X[:, cols], q, axis=0)
        for j, init in zip(cols, Q.T):
            yield int(j), init


def strongest_split_features(X, n_clusters, n_features, *, block=2048):
    """The ``n_features`` features whose own 1-D k-means (:func:`feature_partition`)
    leaves the smallest share of their variance within clusters; increasing indices.

    ``O(N p)`` in all. For wide data this bounds the feature starts of CPCM's
    search by N instead of p; with the stepwise predictor a feature start's
    blur ratio is that very share when the feature alone enters the model.
    The 1-D k-means run ``block`` columns per call of the batched core
    (:func:`~.kmeans.kmeans_columns_1d`: the same fits as one call per column,
    which cost 20,000 Python-level calls at p = 20,000).
    """
    p = X.shape[1]
    share = np.full(p, np.inf)
    q = _quantile_levels(n_clusters)
    for a in range(0, p, block):
        cols = np.arange(a, min(a + block, p))
        Xb = X[:, cols]
        init = np.quantile(Xb, q, axis=0).T
        total = np.sum((Xb - Xb.mean(axis=0, dtype=np.float64)) ** 2, axis=0)
        del Xb
        nt = small_problem_threads(X.shape[0] * cols.size)
        inertia = kmeans_columns_1d(X, cols, init, n_threads=nt)[1]
        spread = total > 0
        share[cols[spread]] = inertia[spread] / total[spread]
    return np.sort(np.argsort(share, kind="stable")[: int(n_features)])


def feature_partition(column, n_clusters, *, seed, init=None):
    """1-D k-means of one feature (an (N, 1) array), started from its quantiles
    (``init``, from :func:`feature_quantiles`, or computed here)."""
    if init is None:
        init = np.quantile(column[:, 0], _quantile_levels(n_clusters))
    return _feature_kmeans(column, n_clusters, init, seed).labels


def _feature_kmeans(column, n_clusters, init, seed=0):
    # quantile starts: the seed is never used (kept for the record of the search)
    init = np.asarray(init).reshape(-1, 1).astype(column.dtype)
    nt = small_problem_threads(column.size)
    return kmeans(column, n_clusters, init=init, n_init=1, random_state=seed, n_threads=nt)


def kmeans_partition(F, n_clusters, *, seed):
    """k-means++ (one seeding) of the rows of ``F``."""
    nt = small_problem_threads(F.size)
    return kmeans(F, n_clusters, init="k-means++", n_init=1, random_state=seed,
                  n_threads=nt).labels


def kurtosis_directions(Q, n_directions=None, *, n_refined=0, max_iter=50, tol=1e-10):
    r"""Projections of whitened data on directions of extreme kurtosis, most non-Gaussian first.

    ``Q`` (N x r) is a whitened basis of the centered data (orthonormal columns,
    e.g. ``(X - mean) W``). The eigenvectors ``v`` of
    ``M = \sum_i \|q_i\|^2 q_i q_i^T`` (Cardoso's FOBI, 1989) are the directions
    along which the kurtosis is stationary; clusters show as directions of low
    kurtosis (multimodal), a small far cluster as high kurtosis. For a Gaussian
    every eigenvalue is about ``(r + 2) / N``; the first ``n_directions`` (default
    all) are returned in order of ``|N lambda - (r + 2)|``, largest first.

    FOBI separates directions only as far as their kurtoses differ (three
    parallel lines: the across-lines and the along-lines directions are both
    platykurtic, and FOBI can mix them). So the first ``n_refined`` of them are
    also returned refined, after the others, by the kurtosis fixed point of
    FastICA (Hyvarinen & Oja 1997), ``w <- E[u (w^T u)^3] - 3 w`` with
    ``u = sqrt(N) q``, normalized, which climbs to a local extremum of the
    kurtosis (``max_iter`` steps at most, or until ``1 - |w_new^T w| <= tol``).
    The refined ones do not replace the FOBI ones: several can climb to the same
    extremum, and the FOBI set is the more varied.

    ``Q`` of an affine image ``X A + b`` is ``Q R`` for an orthogonal ``R``, so
    ``M`` becomes ``R^T M R``, the fixed-point step commutes with ``R``, and the
    projections are the same up to sign: partitions built from them do not
    depend on the basis of the features.
    """
    n, r = Q.shape
    if r == 0:
        return np.empty((n, 0), dtype=Q.dtype)
    sq = np.einsum("ij,ij->i", Q, Q)
    M = (Q * sq[:, None]).T @ Q
    lam, V = np.linalg.eigh(M)
    order = np.argsort(-np.abs(n * lam - (r + 2)), kind="stable")
    m = r if n_directions is None else max(0, min(int(n_directions), r))
    k = max(0, min(int(n_refined), m))
    W = np.array(V[:, order[:m]], dtype=np.float64)
    refined = np.array(W[:, :k])
    U = np.asarray(Q, dtype=np.float64) * np.sqrt(n)          # unit variance coordinates
    for j in range(k):
        w = refined[:, j]
        for _ in range(max_iter):
            w_new = U.T @ (U @ w) ** 3 / n - 3.0 * w
            norm = np.linalg.norm(w_new)
            if not norm > 0:
                break
            w_new /= norm
            done = 1.0 - abs(float(w_new @ w)) <= tol
            w = w_new
            if done:
                break
        refined[:, j] = w
    W = np.hstack([W, refined]).astype(Q.dtype, copy=False)
    return np.ascontiguousarray(Q @ W)
