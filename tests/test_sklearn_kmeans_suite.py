"""scikit-learn's k-means tests, ported to metriclust's KMeans (peer suite).

Written here from scikit-learn 1.9's ``sklearn/cluster/tests/test_k_means.py``
and, for the measures metriclust provides (``rand_index``,
``adjusted_rand_index``, ``normalized_mutual_info``, ``contingency_matrix``),
``sklearn/metrics/cluster/tests/test_supervised.py``: each test keeps the
scikit-learn name, data and assertions, adapted to our API. "Same partition"
is checked with ``adjusted_rand_index == 1`` where scikit-learn uses
``v_measure_score == 1`` (both hold exactly for identical partitions).

Seeds: scikit-learn's ``global_random_seed`` fixture is the ``seed`` parameter
here, (0, 1, 42) by default; ``SKLEARN_TESTS_GLOBAL_RANDOM_SEED`` ("all",
"0-99", or one number) widens it as it does for scikit-learn.

Not ported, and why:

- MiniBatchKMeans, BisectingKMeans and every ``Estimator`` parametrization on
  them (minibatch steps, ``partial_fit``, reassignment, ``init_size``,
  ``batch_size``): metriclust has no mini-batch or bisecting k-means.
- Sparse containers (``X_csr``, ``test_dense_sparse``,
  ``test_predict_dense_sparse``, ``test_euclidean_distance``'s and
  ``test_inertia``'s sparse halves): metriclust refuses sparse input with a
  TypeError by design.
- ``test_warning_elkan_1_cluster``: scikit-learn warns that elkan "doesn't
  make sense for a single cluster" and runs lloyd instead; our
  ``algorithm="elkan"`` gives lloyd's labels, centers and iterations at every
  K (pruning is exact), so there is no switch to warn about. Every other
  elkan test runs: the tests are parametrized over the algorithms KMeans
  accepts (``ALGORITHMS``: lloyd and elkan), ``test_kmeans_elkan_results``
  included.
- Private helpers with no counterpart (``_is_same_clustering``,
  ``_mini_batch_step``, ``_labels_inertia``, ``_init_centroids``, the
  ``_relocate_empty_clusters_*`` and ``_inertia_*`` wrappers): their tests are
  ported through the public estimator (``max_iter=1`` exposes one relocation
  step, ``score`` the inertia) or through ``metriclust._core.kmeans``.
- ``kmeans._n_init``: ported as the equality of ``n_init="auto"`` with the
  explicit count it stands for.
- ``test_kmeans_plusplus_wrong_params`` (``x_squared_norms``): our seeding
  takes no precomputed norms. The "random" halves of ``test_sample_weight_init``
  and ``test_sample_weight_zero`` need the private seeding call; the weighted
  random draw is covered by ``test_weights_equal_repeats_with_seeding`` in
  test_kmeans.py.
- Verbose output: ours is one line per run ("k-means run r: n iterations
  (strict convergence | center shift within tolerance | max_iter reached),
  inertia ..."), not scikit-learn's per-iteration lines (the loop runs in C);
  ``test_kmeans_verbose`` checks our format.
- Metrics: sklearn's scores return 1.0 on two empty labelings, ours raise a
  ValueError naming both parameters (a deliberate choice); error wording is
  ours (the same parameters are named). homogeneity, completeness,
  V-measure, AMI, Fowlkes-Mallows, pair_confusion_matrix and
  ``contingency_matrix(eps=, sparse=)`` are not provided.

Beyond scikit-learn's suite, from issues #18 and #19: predict/transform/score
with a large common offset, the float32 centering mean and tolerance, empty
clusters relocated onto duplicated points, and feature names / ``set_output``
/ ``NotFittedError`` for every estimator.
"""

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_blobs

from _reference import sq_distances

from metriclust import CPCM, CPDUML, MMC, ConstrainedKMeans, KMeans, NotFittedError
from metriclust._core.base import ConvergenceWarning
from metriclust._core.kmeans import center_distances, kmeans, kmeans_plusplus
from metriclust.kernels import Nystrom
from metriclust.metrics import (adjusted_rand_index, contingency_matrix,
                                normalized_mutual_info, rand_index)


def _seeds():
    spec = os.environ.get("SKLEARN_TESTS_GLOBAL_RANDOM_SEED", "")
    if spec == "all":
        return list(range(100))
    if re.fullmatch(r"\d+-\d+", spec):
        lo, hi = map(int, spec.split("-"))
        return list(range(lo, hi + 1))
    if spec.isdigit():
        return [int(spec)]
    return [0, 1, 42]


SEEDS = _seeds()


def _accepted_algorithms():
    out = []
    for algorithm in ("lloyd", "elkan"):
        try:
            KMeans(1, algorithm=algorithm, n_init=1).fit(np.zeros((2, 1)))
            out.append(algorithm)
        except ValueError:
            pass
    return out


ALGORITHMS = _accepted_algorithms()


def test_every_algorithm_of_the_peer_suite_runs():
    # The parametrized tests below run only the algorithms KMeans accepts: were
    # elkan dropped, they would skip in silence; this says so.
    assert ALGORITHMS == ["lloyd", "elkan"]

# non centered, sparse centers to check the
centers = np.array([
    [0.0, 5.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 4.0, 0.0, 0.0],
    [1.0, 0.0, 0.0, 5.0, 1.0],
])
n_samples = 100
n_clusters, n_features = centers.shape
X, true_labels = make_blobs(n_samples=n_samples, centers=centers, cluster_std=1.0,
                            random_state=42)


def _same_partition(a, b):
    return adjusted_rand_index(a, b) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_results(algo, dtype):
    # Checks that KMeans works as intended on toy dataset by comparing with
    # expected results computed by hand.
    X = np.array([[0, 0], [0.5, 0], [0.5, 1], [1, 1]], dtype=dtype)
    sample_weight = [3, 1, 1, 3]
    init_centers = np.array([[0, 0], [1, 1]], dtype=dtype)

    kmeans_ = KMeans(n_clusters=2, n_init=1, init=init_centers, algorithm=algo)
    kmeans_.fit(X, sample_weight=sample_weight)

    assert_array_equal(kmeans_.labels_, [0, 0, 1, 1])
    assert_allclose(kmeans_.inertia_, 0.375)
    assert_allclose(kmeans_.cluster_centers_, np.array([[0.125, 0], [0.875, 1]], dtype=dtype))
    assert kmeans_.n_iter_ == 2


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_kmeans_relocated_clusters(algo):
    # check that empty clusters are relocated as expected
    X = np.array([[0, 0], [0.5, 0], [0.5, 1], [1, 1]])
    # second center too far from others points will be empty at first iter
    init_centers = np.array([[0.5, 0.5], [3, 3]])

    km = KMeans(n_clusters=2, n_init=1, init=init_centers, algorithm=algo).fit(X)

    assert_allclose(km.inertia_, 0.25)
    assert km.n_iter_ == 3
    # scikit-learn accepts either way of breaking the tie; ours takes the
    # lowest row index among the farthest, which gives the second.
    assert_array_equal(km.labels_, [1, 1, 0, 0])
    assert_allclose(km.cluster_centers_, [[0.75, 1.0], [0.25, 0.0]])


def test_relocate_empty_clusters():
    # scikit-learn tests its _relocate_empty_clusters_dense helper; ours runs
    # inside the C Lloyd loop, so one step (max_iter=1) shows it. Three obvious
    # clusters of different sizes, all centers initialized to the first point:
    # every point goes to the first center, the two farthest points (10 and
    # 9.5) take the two empty clusters and the first keeps the other 8.
    X = np.array([-10.0, -9.5, -9, -8.5, -8, -1, 1, 9, 9.5, 10]).reshape(-1, 1)
    init = np.array([-10.0, -10, -10]).reshape(-1, 1)
    km = KMeans(3, init=init, max_iter=1).fit(X)
    assert_allclose(km.cluster_centers_, [[-36 / 8], [10], [9.5]])


@pytest.mark.parametrize("distribution", ["normal", "blobs"])
@pytest.mark.parametrize("tol", [1e-2, 1e-8, 1e-100, 0])
@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_elkan_results(distribution, tol, seed):
    # Check that results are identical between lloyd and elkan algorithms
    rnd = np.random.RandomState(seed)
    if distribution == "normal":
        X = rnd.normal(size=(5000, 10))
    else:
        X, _ = make_blobs(random_state=rnd)
    X[X < 0] = 0
    km_lloyd = KMeans(n_clusters=5, random_state=seed, n_init=1, tol=tol).fit(X)
    km_elkan = KMeans(algorithm="elkan", n_clusters=5, random_state=seed, n_init=1,
                      tol=tol).fit(X)
    assert_allclose(km_elkan.cluster_centers_, km_lloyd.cluster_centers_)
    assert_array_equal(km_elkan.labels_, km_lloyd.labels_)
    assert km_elkan.n_iter_ == km_lloyd.n_iter_
    assert km_elkan.inertia_ == pytest.approx(km_lloyd.inertia_, rel=1e-6)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_convergence(algorithm, seed):
    # Check that KMeans stops when convergence is reached when tol=0. (#16075)
    rnd = np.random.RandomState(seed)
    X = rnd.normal(size=(5000, 10))
    km = KMeans(algorithm=algorithm, n_clusters=5, random_state=seed, n_init=1, tol=0,
                max_iter=300).fit(X)
    assert km.n_iter_ < 300


def _check_fitted_model(km):
    # check that the number of clusters centers and distinct labels match
    # the expectation
    assert km.cluster_centers_.shape == (n_clusters, n_features)
    assert np.unique(km.labels_).shape[0] == n_clusters
    # check that the labels assignment are perfect (up to a permutation)
    assert _same_partition(true_labels, km.labels_)
    assert km.inertia_ > 0.0


@pytest.mark.parametrize(
    "init", ["random", "k-means++", centers.copy(), lambda X, k, random_state: centers.copy()],
    ids=["random", "k-means++", "ndarray", "callable"])
def test_all_init(init):
    # Check KMeans with all possible init.
    n_init = 10 if isinstance(init, str) else 1
    km = KMeans(init=init, n_clusters=n_clusters, random_state=42, n_init=n_init).fit(X)
    _check_fitted_model(km)


@pytest.mark.parametrize(
    "init, expected_n_init",
    [("k-means++", 1), ("random", 10),
     (lambda X, n_clusters, random_state: random_state.uniform(size=(n_clusters, X.shape[1])),
      10),
     ("array-like", 1)])
def test_kmeans_init_auto_with_initial_centroids(init, expected_n_init):
    # n_init="auto" chooses the right number of initializations (scikit-learn
    # reads the private _n_init; here "auto" must give the same fit as the
    # explicit count, and a different one from a single run where it matters).
    rng = np.random.RandomState(0)
    X = rng.randn(100, 10)
    if isinstance(init, str) and init == "array-like":
        init = rng.randn(5, 10)
    auto = KMeans(n_clusters=5, init=init, n_init="auto", random_state=3).fit(X)
    explicit = KMeans(n_clusters=5, init=init, n_init=expected_n_init, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # n_init=1 with an array is quiet
        explicit.fit(X)
    assert_array_equal(auto.labels_, explicit.labels_)
    assert auto.inertia_ == explicit.inertia_


@pytest.mark.parametrize("seed", SEEDS)
def test_fortran_aligned_data(seed):
    # Check that KMeans works with fortran-aligned data.
    X_fortran = np.asfortranarray(X)
    centers_fortran = np.asfortranarray(centers)
    km_c = KMeans(n_clusters=n_clusters, init=centers, n_init=1, random_state=seed).fit(X)
    km_f = KMeans(n_clusters=n_clusters, init=centers_fortran, n_init=1,
                  random_state=seed).fit(X_fortran)
    assert_allclose(km_c.cluster_centers_, km_f.cluster_centers_)
    assert_array_equal(km_c.labels_, km_f.labels_)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("tol", [1e-2, 0])
def test_kmeans_verbose(algorithm, tol, capsys):
    # Check verbose mode of KMeans (our format: one line per run).
    X = np.random.RandomState(0).normal(size=(5000, 10))
    KMeans(algorithm=algorithm, n_clusters=n_clusters, random_state=42, init="random",
           n_init=1, tol=tol, verbose=1).fit(X)
    out = capsys.readouterr().out
    assert re.search(r"k-means start 1 of 1: [0-9]+ iterations", out)
    if tol == 0:
        assert re.search(r"strict convergence", out)
    else:
        assert re.search(r"center shift within tolerance", out)


def test_warning_n_init_precomputed_centers():
    # Check that a warning is raised when n_init > 1 and an array is passed for
    # the init parameter.
    with pytest.warns(RuntimeWarning,
                      match="Explicit initial center position passed: performing only one init"):
        KMeans(init=centers, n_clusters=n_clusters, n_init=10).fit(X)


def test_kmeans_copyx():
    # Check that copy_x=False returns nearly equal X after de-centering (and,
    # ours, that the default leaves a C-contiguous float64 X untouched).
    my_X = X.copy()
    km = KMeans(copy_x=False, n_clusters=n_clusters, random_state=42)
    km.fit(my_X)
    _check_fitted_model(km)
    assert_allclose(my_X, X)
    my_X = X.copy()
    _check_fitted_model(KMeans(n_clusters=n_clusters, random_state=42).fit(my_X))
    assert_array_equal(my_X, X)


@pytest.mark.parametrize("seed", SEEDS)
def test_score_max_iter(seed):
    # Check that fitting KMeans with more iterations gives better score
    X = np.random.RandomState(seed).randn(100, 10)
    s1 = KMeans(n_init=1, random_state=seed, max_iter=1).fit(X).score(X)
    s2 = KMeans(n_init=1, random_state=seed, max_iter=10).fit(X).score(X)
    assert s2 > s1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("max_iter", [2, 100])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_predict(algorithm, max_iter, dtype, seed):
    # Check the predict method and the equivalence between fit.predict and
    # fit_predict.
    X, _ = make_blobs(n_samples=200, n_features=10, centers=10, random_state=seed)
    X = X.astype(dtype)
    km = KMeans(n_clusters=10, init="random", n_init=10, max_iter=max_iter,
                random_state=seed, algorithm=algorithm).fit(X)
    labels = km.labels_
    # re-predict labels for training set using predict
    assert_array_equal(km.predict(X), labels)
    # re-predict labels for training set using fit_predict
    assert_array_equal(km.fit_predict(X), labels)
    # predict centroid labels
    assert_array_equal(km.predict(km.cluster_centers_), np.arange(10))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("init", ["k-means++", "ndarray"])
@pytest.mark.parametrize("seed", SEEDS)
def test_integer_input(dtype, init, seed):
    # Check that KMeans works with integer input.
    X_dense = np.array([[0, 0], [10, 10], [12, 9], [-1, 1], [2, 0], [8, 10]])
    X = X_dense.astype(dtype)
    n_init = 1 if init == "ndarray" else 10
    init = X_dense[:2] if init == "ndarray" else init
    km = KMeans(n_clusters=2, init=init, n_init=n_init, random_state=seed).fit(X)
    # Internally integer input should be converted to float64
    assert km.cluster_centers_.dtype == np.float64
    assert _same_partition(km.labels_, [0, 1, 1, 0, 0, 1])


@pytest.mark.parametrize("seed", SEEDS)
def test_transform(seed):
    # Check the transform method
    km = KMeans(n_clusters=n_clusters, random_state=seed).fit(X)
    # Transforming cluster_centers_ should return the pairwise distances
    # between centers
    C = km.cluster_centers_
    Xt = km.transform(C)
    assert_allclose(Xt, np.sqrt(sq_distances(C)))
    # In particular, diagonal must be 0
    assert_array_equal(Xt.diagonal(), np.zeros(n_clusters))
    # Transforming X should return the pairwise distances between X and the centers
    assert_allclose(km.transform(X), np.sqrt(sq_distances(X, C)))


@pytest.mark.parametrize("seed", SEEDS)
def test_fit_transform(seed):
    # Check equivalence between fit.transform and fit_transform
    X1 = KMeans(random_state=seed, n_init=1).fit(X).transform(X)
    X2 = KMeans(random_state=seed, n_init=1).fit_transform(X)
    assert_allclose(X1, X2)


@pytest.mark.parametrize("seed", SEEDS)
def test_n_init(seed):
    # Check that increasing the number of init increases the quality
    previous_inertia = np.inf
    for n_init in [1, 5, 10]:
        # set max_iter=1 to avoid finding the global minimum and get the same
        # inertia each time
        km = KMeans(n_clusters=n_clusters, init="random", n_init=n_init, random_state=seed,
                    max_iter=1).fit(X)
        assert km.inertia_ <= previous_inertia
        previous_inertia = km.inertia_


@pytest.mark.parametrize("seed", SEEDS)
def test_k_means_function(seed):
    # test calling the k-means function (our core; there is no public k_means).
    # One k-means++ run ends in a local minimum on this data for about 1% of
    # seeds, for scikit-learn's seeding and ours alike (1500 seeds: 0.8% and
    # 1.1%); scikit-learn's test passes on its own streams' luck, so 3 runs here.
    cluster_centers, labels, inertia, _ = kmeans(X, n_clusters, sample_weight=None,
                                                 n_init=3, random_state=seed)
    assert cluster_centers.shape == (n_clusters, n_features)
    assert np.unique(labels).shape[0] == n_clusters
    # check that the labels assignment are perfect (up to a permutation)
    assert _same_partition(true_labels, labels)
    assert inertia > 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_float_precision(seed):
    # Check that the results are the same for single and double precision.
    km = KMeans(n_init=1, random_state=seed)
    inertia, Xt, centers_, labels = {}, {}, {}, {}
    for dtype in [np.float64, np.float32]:
        Xd = X.astype(dtype, copy=False)
        km.fit(Xd)
        inertia[dtype] = km.inertia_
        Xt[dtype] = km.transform(Xd)
        centers_[dtype] = km.cluster_centers_
        labels[dtype] = km.labels_
        # dtype of cluster centers has to be the dtype of the input data
        assert km.cluster_centers_.dtype == dtype
    # compare arrays with low precision since the difference between 32 and
    # 64 bit comes from an accumulation of rounding errors.
    rtol = 1e-4
    assert_allclose(inertia[np.float32], inertia[np.float64], rtol=rtol)
    assert_allclose(Xt[np.float32], Xt[np.float64], atol=Xt[np.float64].max() * rtol)
    assert_allclose(centers_[np.float32], centers_[np.float64],
                    atol=centers_[np.float64].max() * rtol)
    assert_array_equal(labels[np.float32], labels[np.float64])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_centers_not_mutated(dtype):
    # Check that KMeans won't mutate the user provided init centers silently
    # even if input data and init centers have the same type.
    X_new_type = X.astype(dtype, copy=False)
    centers_new_type = centers.astype(dtype, copy=False)
    before = centers_new_type.copy()
    km = KMeans(init=centers_new_type, n_clusters=n_clusters, n_init=1).fit(X_new_type)
    assert not np.may_share_memory(km.cluster_centers_, centers_new_type)
    assert_array_equal(centers_new_type, before)


def test_kmeans_init_fitted_centers():
    # Check that starting fitting from a local optimum shouldn't change the solution
    km1 = KMeans(n_clusters=n_clusters).fit(X)
    km2 = KMeans(n_clusters=n_clusters, init=km1.cluster_centers_, n_init=1).fit(X)
    assert_allclose(km1.cluster_centers_, km2.cluster_centers_)


@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_warns_less_centers_than_unique_points(seed):
    # Check KMeans when the number of found clusters is smaller than expected
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    X = np.asarray([[0, 0], [0, 1], [1, 0], [1, 0]])  # last point is duplicated
    km = KMeans(n_clusters=4, random_state=seed)
    # KMeans should warn that fewer labels than cluster centers have been used
    msg = (r"Number of distinct clusters \(3\) found smaller than "
           r"n_clusters \(4\). Possibly due to duplicate points in X.")
    # scikit-learn's class (scikit-learn is loaded) and ours both catch it
    with pytest.warns(SkConvergenceWarning, match=msg) as record:
        km.fit(X)
    assert any(isinstance(w.message, ConvergenceWarning) for w in record)
    # only three distinct points, so only three clusters can have points assigned to them
    assert set(km.labels_) == set(range(3))


def _sort_centers(centers):
    return np.sort(centers, axis=0)


@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_vs_repeated(seed):
    # Check that a sample weight of N should yield the same result as an N-fold
    # repetition of the sample. Valid only if init is precomputed, otherwise
    # rng produces different results.
    sample_weight = np.random.RandomState(seed).randint(1, 5, size=n_samples)
    X_repeat = np.repeat(X, sample_weight, axis=0)
    km = KMeans(init=centers, n_init=1, n_clusters=n_clusters, random_state=seed)
    km_weighted = clone(km).fit(X, sample_weight=sample_weight)
    repeated_labels = np.repeat(km_weighted.labels_, sample_weight)
    km_repeated = clone(km).fit(X_repeat)
    assert_array_equal(km_repeated.labels_, repeated_labels)
    assert_allclose(km_weighted.inertia_, km_repeated.inertia_)
    assert_allclose(_sort_centers(km_weighted.cluster_centers_),
                    _sort_centers(km_repeated.cluster_centers_))


@pytest.mark.parametrize("seed", SEEDS)
def test_unit_weights_vs_no_weights(seed):
    # Check that not passing sample weights should be equivalent to passing
    # sample weights all equal to one.
    km = KMeans(n_clusters=n_clusters, random_state=seed, n_init=1)
    km_none = clone(km).fit(X, sample_weight=None)
    km_ones = clone(km).fit(X, sample_weight=np.ones(n_samples))
    assert_array_equal(km_none.labels_, km_ones.labels_)
    assert_allclose(km_none.cluster_centers_, km_ones.cluster_centers_)


@pytest.mark.parametrize("seed", SEEDS)
def test_scaled_weights(seed):
    # Check that scaling all sample weights by a common factor shouldn't change the result
    sample_weight = np.random.RandomState(seed).uniform(size=n_samples)
    km = KMeans(n_clusters=n_clusters, random_state=seed, n_init=1)
    km_orig = clone(km).fit(X, sample_weight=sample_weight)
    km_scaled = clone(km).fit(X, sample_weight=0.5 * sample_weight)
    assert_array_equal(km_orig.labels_, km_scaled.labels_)
    assert_allclose(km_orig.cluster_centers_, km_scaled.cluster_centers_)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_kmeans_iter_attribute(algorithm):
    # Regression test on bad n_iter_ value (#11340, an elkan test there).
    km = KMeans(algorithm=algorithm, max_iter=1).fit(X)
    assert km.n_iter_ == 1


def test_kmeans_empty_cluster_relocated():
    # check that empty clusters are correctly relocated when using sample weights (#13486)
    X = np.array([[-1], [1]])
    sample_weight = [1.9, 0.1]
    init = np.array([[-1], [10]])
    km = KMeans(n_clusters=2, init=init, n_init=1).fit(X, sample_weight=sample_weight)
    assert len(set(km.labels_)) == 2
    assert_allclose(km.cluster_centers_, [[-1], [1]])


@pytest.mark.parametrize("seed", SEEDS)
def test_result_equal_in_diff_n_threads(seed):
    # Check that KMeans gives the same results in parallel mode than in sequential mode.
    from threadpoolctl import threadpool_limits

    rnd = np.random.RandomState(seed)
    X = rnd.normal(size=(50, 10))
    with threadpool_limits(limits=1, user_api="openmp"):
        result_1 = KMeans(n_clusters=n_clusters, random_state=seed).fit(X).labels_
    with threadpool_limits(limits=2, user_api="openmp"):
        result_2 = KMeans(n_clusters=n_clusters, random_state=seed).fit(X).labels_
    assert_array_equal(result_1, result_2)


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("seed", SEEDS)
def test_k_means_1_iteration(algo, seed):
    # check the results after a single iteration (E-step M-step E-step) by
    # comparing against a pure python implementation.
    X = np.random.RandomState(seed).uniform(size=(100, 5))
    init_centers = X[:5]

    def argmin_dist(X, C):
        return sq_distances(X, C).argmin(1)

    def py_kmeans(X, init):
        new_centers = init.copy()
        labels = argmin_dist(X, init)
        for label in range(init.shape[0]):
            new_centers[label] = X[labels == label].mean(axis=0)
        return argmin_dist(X, new_centers), new_centers

    py_labels, py_centers = py_kmeans(X, init_centers)
    km = KMeans(n_clusters=5, n_init=1, init=init_centers, algorithm=algo, max_iter=1).fit(X)
    assert_array_equal(py_labels, km.labels_)
    assert_allclose(py_centers, km.cluster_centers_)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", SEEDS)
def test_euclidean_distance(dtype, seed):
    # The distances behind transform (center_distances) against the direct formula.
    rng = np.random.RandomState(seed)
    a = np.where(rng.uniform(size=100) < 0.5, rng.randn(100), 0).astype(dtype)
    b = rng.randn(100).astype(dtype)
    expected = ((a.astype(np.float64) - b) ** 2).sum()
    rtol = 1e-4 if dtype == np.float32 else 1e-7
    assert_allclose(center_distances(a[None], b[None], squared=True)[0, 0], expected, rtol=rtol)
    assert_allclose(KMeans(1, init=b[None], max_iter=1).fit(b[None]).transform(a[None])[0, 0],
                    np.sqrt(expected), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, p, K", [(1, 1, 1), (50, 3, 7), (5000, 20, 40)])
def test_center_distances_against_direct_differences(dtype, n, p, K):
    # all distances, blockwise; rows equal to a center get exactly 0
    rng = np.random.default_rng(n + p + K)
    C = rng.normal(size=(K, p)).astype(dtype)
    X = rng.normal(size=(n, p)).astype(dtype)
    X[::7] = C[rng.integers(K, size=X[::7].shape[0])]
    want = sq_distances(X, C)
    got = center_distances(X, C, block_rows=64)
    assert got.dtype == dtype and got.shape == (n, K)
    eps = np.finfo(dtype).eps
    assert_allclose(got, np.sqrt(want), rtol=4 * eps, atol=4 * eps)
    assert np.all(got.min(axis=1)[::7] == 0)
    assert_allclose(center_distances(X, C, squared=True), want, rtol=8 * eps, atol=8 * eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", SEEDS)
def test_inertia(dtype, seed):
    # scikit-learn checks its _inertia_dense helper with given labels; here the
    # public score: minus the weighted inertia at the nearest centers, and
    # inertia_ the same sum on the training data.
    rng = np.random.RandomState(seed)
    X_dense = rng.randn(100, 10).astype(dtype)
    sample_weight = rng.uniform(size=100).astype(dtype)
    km = KMeans(5, random_state=seed).fit(X_dense, sample_weight=sample_weight)
    C = km.cluster_centers_.astype(np.float64)
    d2 = sq_distances(X_dense, C)
    expected = np.sum(d2.min(1) * sample_weight)
    rtol = 1e-4 if dtype == np.float32 else 1e-6
    assert_allclose(-km.score(X_dense, sample_weight=sample_weight), expected, rtol=rtol)
    assert_allclose(km.inertia_, expected, rtol=rtol)
    assert_array_equal(km.labels_, d2.argmin(1))


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_n_init_auto(init):
    est = KMeans(n_init="auto", init=init, random_state=0).fit(X)
    ref = KMeans(n_init=1 if init == "k-means++" else 10, init=init, random_state=0).fit(X)
    assert_array_equal(est.labels_, ref.labels_)
    assert est.inertia_ == ref.inertia_


def test_sample_weight_unchanged():
    # Check that sample_weight is not modified in place by KMeans (#17204)
    X = np.array([[1], [2], [4]])
    sample_weight = np.array([0.5, 0.2, 0.3])
    KMeans(n_clusters=2, random_state=0).fit(X, sample_weight=sample_weight)
    assert_array_equal(sample_weight, np.array([0.5, 0.2, 0.3]))


@pytest.mark.parametrize(
    "param, match",
    [({"n_clusters": n_samples + 1}, r"n_samples.* should be >= n_clusters"),
     ({"init": X[:2]},
      r"The shape of the initial centers .* does not match the number of clusters"),
     ({"init": lambda X_, k, random_state: X_[:2]},
      r"The shape of the initial centers .* does not match the number of clusters"),
     ({"init": X[:8, :2]},
      r"The shape of the initial centers .* does not match the number of features of the data"),
     ({"init": lambda X_, k, random_state: X_[:8, :2]},
      r"The shape of the initial centers .* does not match the number of features of the data")])
def test_wrong_params(param, match):
    # Check that error are raised with clear error message when wrong values
    # are passed for the parameters
    km = KMeans(n_init=1)
    with pytest.raises(ValueError, match=match):
        km.set_params(**param).fit(X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_plusplus_output(dtype, seed):
    # Check for the correct number of seeds and all positive values
    data = X.astype(dtype)
    centers_, indices = kmeans_plusplus(data, n_clusters, random_state=seed)
    assert indices.shape[0] == n_clusters
    assert (indices >= 0).all() and (indices <= data.shape[0]).all()
    assert centers_.shape[0] == n_clusters
    assert (centers_.max(axis=0) <= data.max(axis=0)).all()
    assert (centers_.min(axis=0) >= data.min(axis=0)).all()
    assert_allclose(X[indices].astype(dtype), centers_)


@pytest.mark.parametrize("seed", SEEDS)
def test_kmeans_plusplus_dataorder(seed):
    # Check that memory layout does not effect result (our seeding takes a
    # C-ordered array; KMeans converts a Fortran one)
    km_c = KMeans(n_clusters, n_init=1, max_iter=1, random_state=seed).fit(X)
    km_f = KMeans(n_clusters, n_init=1, max_iter=1, random_state=seed).fit(np.asfortranarray(X))
    assert_allclose(km_c.cluster_centers_, km_f.cluster_centers_)


@pytest.mark.parametrize("kwargs", ({"init": np.str_("k-means++")},
                                    {"init": [[0, 0], [1, 1]], "n_init": 1}))
def test_kmeans_with_array_like_or_np_scalar_init(kwargs):
    # Check that init works with numpy scalar strings (#21964).
    X = np.asarray([[0, 0], [0.5, 0], [0.5, 1], [1, 1]], dtype=np.float64)
    KMeans(n_clusters=2, **kwargs).fit(X)


def test_feature_names_out():
    # Check `feature_names_out` for `KMeans`
    km = KMeans().fit(X)
    names_out = km.get_feature_names_out()
    assert_array_equal([f"kmeans{i}" for i in range(km.cluster_centers_.shape[0])], names_out)


def test_predict_does_not_change_cluster_centers():
    # Check that predict does not change (read-only) cluster centers (gh-24253).
    X, _ = make_blobs(n_samples=200, n_features=10, centers=10, random_state=0)
    km = KMeans()
    y_pred1 = km.fit_predict(X)
    km.cluster_centers_ = km.cluster_centers_.copy()
    km.cluster_centers_.flags.writeable = False
    km.labels_.flags.writeable = False
    before = km.cluster_centers_.copy()
    assert_array_equal(y_pred1, km.predict(X))
    assert_array_equal(km.cluster_centers_, before)


@pytest.mark.parametrize("seed", SEEDS)
def test_sample_weight_init(seed):
    # Check that sample weight is used during (k-means++) init.
    rng = np.random.RandomState(seed)
    X, _ = make_blobs(n_samples=200, n_features=10, centers=10, random_state=seed)
    weighted, _ = kmeans_plusplus(X, 5, sample_weight=rng.uniform(size=X.shape[0]),
                                  random_state=seed)
    plain, _ = kmeans_plusplus(X, 5, sample_weight=np.ones(X.shape[0]), random_state=seed)
    with pytest.raises(AssertionError):
        assert_allclose(weighted, plain)


@pytest.mark.parametrize("seed", SEEDS)
def test_sample_weight_zero(seed):
    # Check that if sample weight is 0, this sample won't be chosen (k-means++).
    rng = np.random.RandomState(seed)
    X, _ = make_blobs(n_samples=100, n_features=5, centers=5, random_state=seed)
    sample_weight = rng.uniform(size=X.shape[0])
    sample_weight[::2] = 0
    seeds, _ = kmeans_plusplus(X, 10, sample_weight=sample_weight, random_state=seed)
    # No center should be one of the 0 sample weight point
    d = np.sqrt(sq_distances(X[::2], seeds))
    assert not np.any(np.isclose(d, 0))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_relocating_with_duplicates(algorithm):
    # Check that kmeans stops when there are more centers than non-duplicate
    # samples (scikit-learn #28055)
    X = np.array([[0, 0], [1, 1], [1, 1], [1, 0], [0, 1]])
    km = KMeans(n_clusters=5, init=X, algorithm=algorithm)
    msg = r"Number of distinct clusters \(4\) found smaller than n_clusters \(5\)"
    with pytest.warns(ConvergenceWarning, match=msg):
        km.fit(X)
    assert km.n_iter_ == 1


# ---------------------------------------------------------------------------
# Clustering measures (sklearn/metrics/cluster/tests/test_supervised.py)
# ---------------------------------------------------------------------------
score_funcs = [adjusted_rand_index, rand_index, normalized_mutual_info]


@pytest.mark.parametrize("score_func", score_funcs)
def test_error_messages_on_wrong_input(score_func):
    with pytest.raises(ValueError, match=r"same length, got 2 and 3"):
        score_func([0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match=r"labels_true must be 1-D, got shape \(2"):
        score_func([[0, 1], [1, 0]], [1, 1, 1])
    with pytest.raises(ValueError, match=r"labels_pred must be 1-D, got shape \(2"):
        score_func([0, 1, 0], [[1, 1], [0, 0]])
    with pytest.raises(ValueError, match="labels_true and labels_pred are empty"):
        score_func([], [])  # scikit-learn returns 1.0 here


@pytest.mark.parametrize("score_func", score_funcs)
def test_perfect_matches(score_func):
    assert score_func([0], [1]) == pytest.approx(1.0)
    assert score_func([0, 0, 0], [0, 0, 0]) == pytest.approx(1.0)
    assert score_func([0, 1, 0], [42, 7, 42]) == pytest.approx(1.0)
    assert score_func([0.0, 1.0, 0.0], [42.0, 7.0, 42.0]) == pytest.approx(1.0)
    assert score_func([0.0, 1.0, 2.0], [42.0, 7.0, 2.0]) == pytest.approx(1.0)
    assert score_func([0, 1, 2], [42, 7, 2]) == pytest.approx(1.0)


@pytest.mark.parametrize("average_method", ["min", "geometric", "arithmetic", "max"])
def test_perfect_matches_with_changing_means(average_method):
    def nmi(a, b):
        return normalized_mutual_info(a, b, average_method=average_method)

    for a, b in [([0], [1]), ([0, 0, 0], [0, 0, 0]), ([0, 1, 0], [42, 7, 42]),
                 ([0.0, 1.0, 0.0], [42.0, 7.0, 42.0]), ([0.0, 1.0, 2.0], [42.0, 7.0, 2.0]),
                 ([0, 1, 2], [42, 7, 2]), ([0, 1], [0, 1]), ([0, 1, 2, 3], [0, 1, 2, 3])]:
        assert nmi(a, b) == pytest.approx(1.0)


def test_non_consecutive_labels():
    # regression tests for labels with gaps
    ari_1 = adjusted_rand_index([0, 0, 0, 1, 1, 1], [0, 1, 0, 1, 2, 2])
    ari_2 = adjusted_rand_index([0, 0, 0, 1, 1, 1], [0, 4, 0, 4, 2, 2])
    assert ari_1 == pytest.approx(0.24, abs=5e-3)
    assert ari_2 == pytest.approx(0.24, abs=5e-3)
    ri_1 = rand_index([0, 0, 0, 1, 1, 1], [0, 1, 0, 1, 2, 2])
    ri_2 = rand_index([0, 0, 0, 1, 1, 1], [0, 4, 0, 4, 2, 2])
    assert ri_1 == pytest.approx(0.66, abs=1e-2)
    assert ri_2 == pytest.approx(0.66, abs=1e-2)


def test_adjustment_for_chance():
    # Check that adjusted scores are almost zero on random labels
    random_labels = np.random.RandomState(42).randint
    scores = np.zeros((4, 10))
    for i, k in enumerate([2, 10, 50, 90]):
        for j in range(10):
            scores[i, j] = adjusted_rand_index(random_labels(low=0, high=k, size=100),
                                               random_labels(low=0, high=k, size=100))
    assert_allclose(np.abs(scores).max(axis=1), [0.02, 0.03, 0.03, 0.02], atol=5e-3)


def test_contingency_matrix():
    labels_a = np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3])
    labels_b = np.array([1, 1, 1, 1, 2, 1, 2, 2, 2, 2, 3, 1, 3, 3, 3, 2, 2])
    C = contingency_matrix(labels_a, labels_b)
    C2 = np.histogram2d(labels_a, labels_b, bins=(np.arange(1, 5), np.arange(1, 5)))[0]
    assert_array_equal(C, C2)


def test_exactly_zero_info_score():
    # Check numerical stability when information is exactly zero
    for i in np.logspace(1, 4, 4).astype(int):
        labels_a, labels_b = np.ones(i, dtype=int), np.arange(i, dtype=int)
        for method in ["min", "geometric", "arithmetic", "max"]:
            assert normalized_mutual_info(labels_a, labels_b,
                                          average_method=method) == pytest.approx(0.0)


def test_pair_counts_match_quadratic_reference():
    # scikit-learn's test_pair_confusion_matrix reference, through the Rand index
    n = 10
    clustering1 = np.hstack([[i + 1] * n for i in range(n)])
    clustering2 = np.hstack([[i + 1] * (n + 1) for i in range(n)])[:n * n]
    same1 = clustering1[:, None] == clustering1[None]
    same2 = clustering2[:, None] == clustering2[None]
    off = ~np.eye(n * n, dtype=bool)
    agree = np.count_nonzero((same1 == same2) & off)
    assert rand_index(clustering1, clustering2) == pytest.approx(agree / off.sum())


@pytest.mark.parametrize("clustering1, clustering2",
                         [(list(range(100)), list(range(100))),
                          (np.zeros((100,)), np.zeros((100,)))])
def test_rand_score_edge_cases(clustering1, clustering2):
    # every element is its own cluster / only one cluster
    assert_allclose(rand_index(clustering1, clustering2), 1.0)


def test_rand_score():
    # regular case: different non-trivial clusterings
    clustering1 = [0, 0, 0, 1, 1, 1]
    clustering2 = [0, 1, 0, 1, 2, 2]
    D11 = 2 * 2  # ordered pairs (1, 3), (5, 6)
    D10 = 2 * 4  # ordered pairs (1, 2), (2, 3), (4, 5), (4, 6)
    D01 = 2 * 1  # ordered pair (2, 4)
    D00 = 5 * 6 - D11 - D01 - D10  # the remaining pairs
    expected = (D00 + D11) / (D00 + D01 + D10 + D11)
    assert_allclose(rand_index(clustering1, clustering2), expected)


def test_adjusted_rand_score_overflow():
    # Large data must not overflow in the adjusted Rand index (scikit-learn #20305).
    rng = np.random.RandomState(0)
    y_true = rng.randint(0, 2, 100_000, dtype=np.int8)
    y_pred = rng.randint(0, 2, 100_000, dtype=np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert abs(adjusted_rand_index(y_true, y_pred)) < 1e-3


@pytest.mark.parametrize("average_method", ["min", "arithmetic", "geometric", "max"])
def test_normalized_mutual_info_score_bounded(average_method):
    # nmi is in [0, 1), 1 only for a perfect match (scikit-learn #13836)
    labels1 = [0] * 469
    labels2 = [1] + labels1[1:]
    labels3 = [0, 1] + labels1[2:]
    assert normalized_mutual_info(labels1, labels2, average_method=average_method) == 0
    nmi = normalized_mutual_info(labels2, labels3, average_method=average_method)
    assert 0 <= nmi < 1


# ---------------------------------------------------------------------------
# Beyond scikit-learn's suite (issues #18 and #19)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, offset", [(np.float32, 1e3), (np.float32, 1e4),
                                           (np.float64, 1e6), (np.float64, 1e8)])
def test_predict_transform_score_with_large_offset(dtype, offset):
    # A common offset must not change labels or distances beyond the rounding
    # of the centred data. Reference: float64 differences x - c of the very
    # values the estimator holds (exact). Before centring, float32 at 1e4 had
    # ~1400 of 3000 labels wrong and distances off by 8; float64 at 1e8, 331.
    rng = np.random.default_rng(0)
    X0 = rng.normal(size=(2000, 3)) * 0.5 + rng.integers(4, size=(2000, 1)) * 2.0
    km = KMeans(4, random_state=0).fit((X0 + offset).astype(dtype))
    Xt = (rng.normal(size=(3000, 3)) * 1.5 + 3 + offset).astype(dtype)
    C = km.cluster_centers_.astype(np.float64)
    d2 = sq_distances(Xt, C)
    assert_array_equal(km.predict(Xt), d2.argmin(1))
    # rounding at the scale of the centred data, R (about 10 here, not 1e8)
    eps, R = float(np.finfo(dtype).eps), np.abs(Xt.astype(np.float64) - C.mean(0)).max()
    assert_allclose(km.transform(Xt), np.sqrt(d2), rtol=8 * eps, atol=8 * eps * R)
    assert km.score(Xt) == pytest.approx(-d2.min(1).sum(), rel=64 * eps)


def test_float32_centering_and_tol_accumulate_in_float64():
    # numpy's float32 axis-0 mean/var run row after row in float32: at 1e5
    # rows and an offset of 3e4 the variance behind tol came out ~6x too large
    # (138x at 2e5 rows, 1e4), Lloyd stopped after 3 iterations instead of 5
    # and 119 labels differed from the float64 fit of the same data.
    rng = np.random.default_rng(0)
    n, offset = 100_000, 3e4
    side = rng.integers(2, size=n)
    X = rng.normal(size=(n, 2)) + np.where(side[:, None] == 1, 1.0, -1.0)
    X32 = (X + offset).astype(np.float32)
    init = np.array([[-0.05, 0.0], [0.05, 0.0]]) + offset
    km32 = KMeans(2, init=init.astype(np.float32)).fit(X32)
    km64 = KMeans(2, init=init).fit(X32.astype(np.float64))
    assert km32.n_iter_ == km64.n_iter_
    assert_array_equal(km32.labels_, km64.labels_)
    assert km32.inertia_ == pytest.approx(km64.inertia_, rel=1e-9)


def _one_lloyd_step(X, C):
    """One assignment + update with the documented relocation rule (slow reference)."""
    n, K = X.shape[0], C.shape[0]
    d2 = sq_distances(X, C)
    lab = d2.argmin(1)
    dist = d2[np.arange(n), lab]
    wsum = np.bincount(lab, minlength=K).astype(float)
    sums = np.zeros_like(C)
    np.add.at(sums, lab, X)
    examined, moved = set(), []
    for k in range(K):
        if wsum[k] != 0:
            continue
        for i in sorted(range(n), key=lambda i: (-dist[i], i)):
            if dist[i] <= 0 or i in examined:
                continue
            examined.add(i)
            if not wsum[lab[i]] - 1 > 0:
                continue  # would empty its cluster
            if any(np.array_equal(X[i], X[m]) for m in moved):
                continue  # a duplicate of a row already moved
            sums[lab[i]] -= X[i]
            wsum[lab[i]] -= 1
            sums[k], wsum[k] = X[i], 1
            moved.append(i)
            break
    return np.where(wsum[:, None] > 0, sums / np.maximum(wsum, 1)[:, None], C)


def test_empty_clusters_not_relocated_onto_duplicates():
    # The two farthest rows are duplicates: moving both would put two centers
    # on one point, and the higher one would empty again.
    X = np.array([0, 10, 11, 30, 30], dtype=float).reshape(-1, 1)
    init = np.array([[0.0], [1], [2], [3]])
    with pytest.warns(ConvergenceWarning, match="distinct clusters"):  # 10 joins 11
        km = KMeans(4, init=init, max_iter=1).fit(X)
    assert_allclose(km.cluster_centers_, [[0], [30], [11], [20]])
    assert_allclose(km.cluster_centers_, _one_lloyd_step(X, init))


@pytest.mark.parametrize("seed", range(20))
def test_relocation_matches_reference_on_duplicated_points(seed):
    # 16 rows of small integers (many duplicates, a dyadic mean so that
    # centring is exact): one Lloyd step equals the slow reference.
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(16, 2)).astype(float)
    init = rng.integers(0, 4, size=(6, 2)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(6, init=init, max_iter=1).fit(X)
    assert_allclose(km.cluster_centers_, _one_lloyd_step(X, init), atol=1e-12)


# -- feature names, get_feature_names_out, set_output, NotFittedError ---------
def _fitted(est, X, y):
    if isinstance(est, MMC):
        return est.fit(X, y)
    return est.fit(X)


TRANSFORMERS = [
    lambda: KMeans(3, random_state=0),
    lambda: CPCM(3, random_state=0),
    lambda: MMC(),
    lambda: CPDUML(n_clusters=3, random_state=0),
    lambda: Nystrom(5, random_state=0),
]
ESTIMATORS = TRANSFORMERS + [lambda: ConstrainedKMeans(3, random_state=0)]


def _frame():
    pd = pytest.importorskip("pandas")
    Xb, yb = make_blobs(n_samples=60, centers=3, n_features=4, random_state=0)
    return pd, pd.DataFrame(Xb, columns=[f"f{i}" for i in range(4)],
                            index=np.arange(100, 160)), yb


@pytest.mark.parametrize("make", ESTIMATORS)
def test_feature_names_in_and_column_checks(make):
    pd, df, y = _frame()
    est = _fitted(make(), df, y)
    assert est.feature_names_in_.dtype == object
    assert_array_equal(est.feature_names_in_, df.columns)
    method = est.transform if hasattr(est, "transform") else est.predict
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        method(df)  # same columns: no warning
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        method(df.to_numpy())
    with pytest.raises(ValueError, match="must be in the same order"):
        method(df[df.columns[::-1]])
    with pytest.raises(ValueError, match="unseen at fit time:\n- g0"):
        method(df.rename(columns={"f0": "g0"}))
    # a refit on an array forgets the names, and then a DataFrame warns
    est = _fitted(est, df.to_numpy(), y)
    assert not hasattr(est, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but"):
        method(df)
    with pytest.raises(TypeError, match="all input features have string names"):
        _fitted(make(), df.set_axis(["a", "b", 3, 4], axis=1), y)


@pytest.mark.parametrize("make", TRANSFORMERS)
def test_get_feature_names_out_and_set_output(make):
    pd, df, y = _frame()
    est = _fitted(make(), df, y)
    plain = est.transform(df)
    names = est.get_feature_names_out()
    prefix = type(est).__name__.lower()
    assert names.dtype == object
    assert_array_equal(names, [f"{prefix}{i}" for i in range(plain.shape[1])])
    assert_array_equal(est.get_feature_names_out(list(df.columns)), names)
    with pytest.raises(ValueError, match="input_features should have length equal"):
        est.get_feature_names_out(["f0"])
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        est.get_feature_names_out(["a", "b", "c", "d"])

    est.set_output(transform="pandas")
    out = est.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert_array_equal(out.columns, names)
    assert_array_equal(out.index, df.index)
    assert_allclose(out.to_numpy(), plain)
    ft = clone(est).fit_transform(df, y) if isinstance(est, MMC) else clone(est).fit_transform(df)
    assert isinstance(ft, pd.DataFrame) and ft.shape == plain.shape
    if hasattr(est, "predict"):  # predict calls transform inside: still labels
        labels = est.predict(df)
        assert isinstance(labels, np.ndarray) and labels.ndim == 1
    est.set_output(transform="default")
    assert isinstance(est.transform(df), np.ndarray)
    with pytest.raises(ValueError, match="transform must be one of"):
        est.set_output(transform="arrow")


def test_set_output_follows_sklearn_global_config():
    from sklearn import config_context

    pd, df, _ = _frame()
    with config_context(transform_output="pandas"):
        out = KMeans(3, random_state=0).fit_transform(df)
        assert isinstance(out, pd.DataFrame)
        # an explicit choice on the estimator wins over the global one
        km = KMeans(3, random_state=0).set_output(transform="default")
        assert isinstance(km.fit_transform(df), np.ndarray)
    assert isinstance(KMeans(3, random_state=0).fit_transform(df), np.ndarray)


def test_set_output_polars_needs_polars():
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="polars"):
            KMeans().set_output(transform="polars")
    else:
        out = KMeans(3, random_state=0).set_output(transform="polars").fit_transform(X)
        assert list(out.columns) == ["kmeans0", "kmeans1", "kmeans2"]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_not_fitted_error_is_sklearns_too(make):
    import pickle

    from sklearn.exceptions import NotFittedError as SkNotFittedError

    est = make()
    method = est.transform if hasattr(est, "transform") else est.predict
    with pytest.raises(SkNotFittedError, match="not fitted yet") as info:
        method(X[:, :4])
    assert isinstance(info.value, NotFittedError)
    assert isinstance(info.value, (ValueError, AttributeError))
    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, SkNotFittedError) and isinstance(again, NotFittedError)


def test_import_does_not_load_sklearn():
    # Without scikit-learn loaded, the errors are metriclust's own classes and
    # nothing imports scikit-learn: not import, fit, predict nor the errors.
    code = (
        "import sys, warnings, numpy as np\n"
        "import metriclust\n"
        "from metriclust import KMeans, NotFittedError\n"
        "try:\n"
        "    KMeans(2).predict(np.zeros((3, 2)))\n"
        "except NotFittedError as e:\n"
        "    assert type(e) is NotFittedError, type(e)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    KMeans(4, random_state=0).fit(np.array([[0, 0], [0, 1], [1, 0], [1, 0]]))\n"
        "assert 'Number of distinct clusters' in str(w[0].message)\n"
        "KMeans(2, random_state=0).fit(np.eye(4)).transform(np.eye(4))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'pandas')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
