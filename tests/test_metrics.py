"""Tests for metriclust.metrics against scikit-learn and brute-force references."""

import itertools
from math import comb, log

import numpy as np
import pytest
from sklearn.metrics import (
    adjusted_rand_score,
    normalized_mutual_info_score,
    rand_score,
)
from sklearn.metrics.cluster import contingency_matrix as sk_contingency

from metriclust._core.validation import check_labels
from metriclust.metrics import (
    adjusted_rand_index,
    blur_ratio,
    clustering_accuracy,
    contingency_matrix,
    entropy,
    normalized_mutual_info,
    pairwise_accuracy,
    purity,
    rand_index,
    variation_of_information,
)
from _reference import blur_ratio as numpy_blur_ratio
from _reference import clustering_accuracy as brute_accuracy

# --------------------------------------------------------------------------
# Slow, obviously-correct references


def brute_pairs(a, b):
    """(ss, sd, ds, dd) by looping over all unordered pairs."""
    a, b = list(a), list(b)
    ss = sd = ds = dd = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        same_a, same_b = a[i] == a[j], b[i] == b[j]
        if same_a and same_b:
            ss += 1
        elif same_a:
            sd += 1
        elif same_b:
            ds += 1
        else:
            dd += 1
    return ss, sd, ds, dd


def brute_rand(a, b):
    ss, sd, ds, dd = brute_pairs(a, b)
    total = ss + sd + ds + dd
    return 1.0 if total == 0 else (ss + dd) / total


def brute_pairwise_accuracy(a, b):
    ss, sd, ds, dd = brute_pairs(a, b)
    terms = []
    if ss + sd:
        terms.append(ss / (ss + sd))
    if ds + dd:
        terms.append(dd / (ds + dd))
    return float(np.mean(terms)) if terms else 1.0


def brute_info(a, b):
    """H(a), H(b), I(a; b) in nats from the empirical joint distribution."""
    a, b = np.asarray(a), np.asarray(b)
    n = len(a)
    ua, ub = np.unique(a), np.unique(b)
    P = np.array([[np.sum((a == x) & (b == y)) for y in ub] for x in ua]) / n
    pa, pb = P.sum(1), P.sum(0)
    h = lambda p: -sum(q * log(q) for q in p if q > 0)  # noqa: E731
    mi = sum(P[i, j] * log(P[i, j] / (pa[i] * pb[j]))
             for i in range(len(ua)) for j in range(len(ub)) if P[i, j] > 0)
    return h(pa), h(pb), mi


def random_labels(rng, n, k, strings=False):
    lab = rng.integers(0, k, n)
    if strings:
        return np.array([f"c{v}" for v in lab])
    return lab


# --------------------------------------------------------------------------
# Agreement with scikit-learn


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strings", [False, True])
def test_matches_sklearn_on_random_labelings(seed, strings):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    a = random_labels(rng, n, int(rng.integers(1, 8)), strings)
    b = random_labels(rng, n, int(rng.integers(1, 8)), strings)
    np.testing.assert_array_equal(contingency_matrix(a, b), sk_contingency(a, b))
    assert rand_index(a, b) == pytest.approx(rand_score(a, b), abs=1e-14)
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    for method in ("arithmetic", "geometric", "min", "max"):
        assert normalized_mutual_info(a, b, average_method=method) == pytest.approx(
            normalized_mutual_info_score(a, b, average_method=method), abs=1e-12)


def test_matches_sklearn_on_mixed_label_types_and_correlated_labelings():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 500)
    b = np.where(rng.random(500) < 0.8, a, rng.integers(0, 6, 500))  # correlated
    b_str = np.array(["k%d" % v for v in b], dtype=object)
    np.testing.assert_array_equal(contingency_matrix(a, b_str), sk_contingency(a, b_str))
    assert rand_index(a, b_str) == pytest.approx(rand_score(a, b), abs=1e-14)
    assert adjusted_rand_index(a, b_str) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    assert normalized_mutual_info(a, b_str) == pytest.approx(
        normalized_mutual_info_score(a, b), abs=1e-12)


@pytest.mark.parametrize("a, b", [
    ([0, 0, 0], [1, 1, 1]),          # both trivial
    ([0, 1, 2], [0, 1, 2]),          # both all-singletons
    ([0, 0, 0], [0, 1, 2]),          # trivial vs singletons
    ([0, 1, 2, 3], [0, 0, 1, 1]),
    ([5], [7]),                       # a single point
])
def test_degenerate_cases_match_sklearn(a, b):
    assert rand_index(a, b) == pytest.approx(rand_score(a, b))
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b))
    assert normalized_mutual_info(a, b) == pytest.approx(normalized_mutual_info_score(a, b))


def test_large_n_pair_counts_do_not_overflow():
    # N = 1e6: T = C(N, 2) ~ 5e11 and products like T^2 ~ 2.5e23 exceed int64.
    rng = np.random.default_rng(0)
    n = 1_000_000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b), rel=1e-10)
    assert rand_index(a, b) == pytest.approx(rand_score(a, b), rel=1e-12)
    # Exact pair counts, from the table with Python integers.
    t = contingency_matrix(a, b)
    ss = sum(comb(int(v), 2) for v in t.ravel())
    s_a = sum(comb(int(v), 2) for v in t.sum(1))
    s_b = sum(comb(int(v), 2) for v in t.sum(0))
    total = comb(n, 2)
    dd = total - s_a - s_b + ss
    expected = 0.5 * ss / s_a + 0.5 * dd / (total - s_a)
    assert pairwise_accuracy(a, b) == pytest.approx(expected, rel=1e-13)
    assert rand_index(np.zeros(n, int), np.zeros(n, int)) == 1.0


# --------------------------------------------------------------------------
# Brute-force pair counting


@pytest.mark.parametrize("seed", range(8))
def test_pair_measures_match_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 40))
    a = random_labels(rng, n, int(rng.integers(1, 5)), strings=seed % 2 == 1)
    b = random_labels(rng, n, int(rng.integers(1, 6)))
    assert rand_index(a, b) == pytest.approx(brute_rand(a, b), abs=1e-15)
    assert pairwise_accuracy(a, b) == pytest.approx(brute_pairwise_accuracy(a, b), abs=1e-15)
    ss, sd, ds, dd = brute_pairs(a, b)
    total = ss + sd + ds + dd
    if sd == 0 and ds == 0:
        expected = 1.0
    else:  # Hubert & Arabie's formula with the brute-force counts
        s_a, s_b = ss + sd, ss + ds
        expected_ss = s_a * s_b / total
        expected = (ss - expected_ss) / (0.5 * (s_a + s_b) - expected_ss)
    assert adjusted_rand_index(a, b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("a, b, expected", [
    ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
    ([0, 0, 1, 1], [0, 0, 0, 0], 0.5),       # every pair joined
    ([0, 0, 1, 1], [0, 1, 2, 3], 0.5),       # every pair split
    ([0, 1, 2, 3], [0, 0, 1, 1], 4 / 6),     # no same-class pair: P(diff | diff) alone
    ([0, 0, 0, 0], [0, 0, 1, 1], 2 / 6),     # one class: P(same | same) alone
    ([3], [4], 1.0),                          # no pairs at all
])
def test_pairwise_accuracy_edge_cases(a, b, expected):
    assert pairwise_accuracy(a, b) == pytest.approx(expected)
    assert pairwise_accuracy(a, b) == pytest.approx(brute_pairwise_accuracy(a, b))


def test_pairwise_accuracy_is_balanced_unlike_rand():
    # Many classes: "all apart" has Rand near 1 but balanced accuracy 0.5
    # (Xing et al. 2003, footnote 8).
    a = np.repeat(np.arange(20), 5)
    singletons = np.arange(100)
    assert rand_index(a, singletons) > 0.95
    assert pairwise_accuracy(a, singletons) == pytest.approx(0.5)


# --------------------------------------------------------------------------
# Lecture notes' example (lecture-clustering-and-distance-metrics.md,
# "External Evaluation of Cluster Quality"; Manning et al., IR book Fig. 16.4)

LECTURE_CLUSTERS = np.repeat([1, 2, 3], [6, 6, 5])
LECTURE_CLASSES = np.array(list("xxxxxo" "xoooov" "xxvvv"))  # (5,1,0), (1,4,1), (2,0,3)


def test_lecture_purity_example():
    masks = [LECTURE_CLUSTERS == k for k in (1, 2, 3)]
    per_cluster = [purity(LECTURE_CLASSES[m], LECTURE_CLUSTERS[m]) for m in masks]
    assert per_cluster == pytest.approx([5 / 6, 4 / 6, 3 / 5])
    # Overall purity weights the clusters by size: (5 + 4 + 3) / 17 = 0.71.
    assert purity(LECTURE_CLASSES, LECTURE_CLUSTERS) == pytest.approx(12 / 17)
    np.testing.assert_array_equal(
        contingency_matrix(LECTURE_CLASSES, LECTURE_CLUSTERS),
        [[1, 4, 0], [0, 1, 3], [5, 1, 2]])  # rows o, v, x (sorted)


def test_ir_book_example_values():
    # Manning, Raghavan & Schuetze, Introduction to IR (2008), Sec. 16.3 on the
    # same example: TP = 20, FP = 20, FN = 24, TN = 72, RI = 0.68, NMI = 0.36.
    assert brute_pairs(LECTURE_CLASSES, LECTURE_CLUSTERS) == (20, 24, 20, 72)
    assert rand_index(LECTURE_CLASSES, LECTURE_CLUSTERS) == pytest.approx(92 / 136)
    assert round(normalized_mutual_info(LECTURE_CLASSES, LECTURE_CLUSTERS), 2) == 0.36


def test_entropy_hand_computed_on_lecture_example():
    h = lambda *p: -sum(q * log(q) for q in p if q > 0)  # noqa: E731
    expected = ((6 / 17) * h(5 / 6, 1 / 6) + (6 / 17) * h(1 / 6, 4 / 6, 1 / 6)
                + (5 / 17) * h(2 / 5, 3 / 5))
    assert entropy(LECTURE_CLASSES, LECTURE_CLUSTERS) == pytest.approx(expected, rel=1e-14)
    normalized = entropy(LECTURE_CLASSES, LECTURE_CLUSTERS, normalized=True)
    assert normalized == pytest.approx(expected / log(3))
    # Entropy of classes within clusters is H(classes | clusters) = H(classes) - I.
    h_a, _, mi = brute_info(LECTURE_CLASSES, LECTURE_CLUSTERS)
    assert expected == pytest.approx(h_a - mi)


def test_purity_and_entropy_extremes():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert purity(a, np.arange(6)) == 1.0         # singletons are pure
    assert entropy(a, np.arange(6)) == 0.0
    assert purity(a, np.zeros(6)) == pytest.approx(1 / 3)
    assert entropy(a, np.zeros(6), normalized=True) == pytest.approx(1.0)
    assert entropy(np.zeros(6), a, normalized=True) == 0.0  # one class


# --------------------------------------------------------------------------
# Variation of information


@pytest.mark.parametrize("seed", range(5))
def test_vi_matches_entropy_definition(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, 60), rng.integers(0, 3, 60)
    h_a, h_b, mi = brute_info(a, b)
    assert variation_of_information(a, b) == pytest.approx(h_a + h_b - 2 * mi, abs=1e-12)
    assert variation_of_information(a, b, normalized=True) == pytest.approx(
        (h_a + h_b - 2 * mi) / log(60), abs=1e-12)


def test_vi_is_zero_iff_same_partition():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 5, 200)
    relabeled = np.array(["q", "w", "e", "r", "t"])[a]
    assert variation_of_information(a, relabeled) == 0.0
    assert variation_of_information(a, a, normalized=True) == 0.0
    b = a.copy()
    b[0] = (b[0] + 1) % 5  # move one point
    assert variation_of_information(a, b) > 0.0
    merged = np.minimum(a, 3)  # merge two clusters
    assert variation_of_information(a, merged) > 0.0


def test_vi_symmetric_triangle_and_bounded():
    rng = np.random.default_rng(2)
    for _ in range(40):
        n = int(rng.integers(2, 80))
        a, b, c = (rng.integers(0, int(rng.integers(1, 7)), n) for _ in range(3))
        ab, ba = variation_of_information(a, b), variation_of_information(b, a)
        assert ab == pytest.approx(ba, abs=1e-13)
        assert ab <= variation_of_information(a, c) + variation_of_information(c, b) + 1e-12
        assert 0.0 <= variation_of_information(a, b, normalized=True) <= 1.0
    # The bound log N is attained by one cluster versus all singletons.
    n = 37
    assert variation_of_information(np.zeros(n), np.arange(n)) == pytest.approx(log(n))
    vi_max = variation_of_information(np.zeros(n), np.arange(n), normalized=True)
    assert vi_max == pytest.approx(1.0)
    assert variation_of_information([4], [2], normalized=True) == 0.0


# --------------------------------------------------------------------------
# Clustering accuracy


@pytest.mark.parametrize("seed", range(6))
def test_clustering_accuracy_matches_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(1, 50))
    a = random_labels(rng, n, int(rng.integers(1, 5)))
    b = random_labels(rng, n, int(rng.integers(1, 6)), strings=True)  # K1 != K2 often
    assert clustering_accuracy(a, b) == pytest.approx(brute_accuracy(a, b))
    assert clustering_accuracy(b, a) == pytest.approx(clustering_accuracy(a, b))


def test_clustering_accuracy_unequal_numbers_of_clusters():
    a = [0, 0, 0, 1, 1, 1]
    assert clustering_accuracy(a, [5, 5, 5, 7, 7, 8]) == pytest.approx(5 / 6)
    assert clustering_accuracy(a, [0, 0, 0, 0, 0, 0]) == pytest.approx(0.5)
    assert clustering_accuracy(a, [2, 2, 2, 1, 1, 1]) == 1.0


# --------------------------------------------------------------------------
# Blur ratio


@pytest.mark.parametrize("seed", range(4))
def test_blur_ratio_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4)) * [1, 5, 0.1, 2]
    labels = rng.integers(0, 4, 120)
    assert blur_ratio(X, labels) == pytest.approx(numpy_blur_ratio(X, labels), rel=1e-12)
    beta = rng.normal(size=(4, 2))
    expected = numpy_blur_ratio(X @ beta, labels)
    assert blur_ratio(X, labels, transform=beta) == pytest.approx(expected, rel=1e-12)
    assert blur_ratio(X, labels, transform=lambda Y: Y @ beta) == pytest.approx(expected, rel=1e-12)
    identity = blur_ratio(X, labels, transform=np.eye(4))
    assert identity == pytest.approx(blur_ratio(X, labels), rel=1e-14)
    # float32 input measured the same way, up to float32 rounding of X.
    assert blur_ratio(X.astype(np.float32), labels) == pytest.approx(
        numpy_blur_ratio(X.astype(np.float32).astype(float), labels), rel=1e-10)


def test_blur_ratio_invariances():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    labels = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, 80)]
    br = blur_ratio(X, labels)
    assert blur_ratio(1e4 * X, labels) == pytest.approx(br, rel=1e-12)      # global scaling
    assert blur_ratio(X + [1e3, -5, 7], labels) == pytest.approx(br, rel=1e-9)  # translation
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert blur_ratio(X @ Q, labels) == pytest.approx(br, rel=1e-12)        # rotation
    assert 0.0 < br < 1.0
    assert blur_ratio(X, np.zeros(80)) == pytest.approx(1.0)                 # one cluster
    assert blur_ratio(X, np.arange(80)) == 0.0                               # singletons


def test_blur_ratio_parallel_lines_raw_versus_learned_space():
    # CPCM Fig. 1(a)/(b): two long parallel bands. In the raw space the cut
    # across the bands has the lower blur ratio (which is why k-means takes it);
    # measured along the gap direction (beta = e_2) the true bands are almost
    # perfectly tight and the cut is fully blurred.
    rng = np.random.default_rng(0)
    t = rng.uniform(-10, 10, 400)
    y = np.repeat([0, 1], 200)
    X = np.column_stack([t, 2.0 * y + rng.normal(scale=0.2, size=400)])
    across = (t > 0).astype(int)
    assert blur_ratio(X, across) < 0.3 < 0.9 < blur_ratio(X, y)
    beta = np.array([[0.0], [1.0]])
    assert blur_ratio(X, y, transform=beta) < 0.05
    assert blur_ratio(X, across, transform=beta) > 0.95


def test_blur_ratio_degenerate_space_is_one():
    X = np.random.default_rng(0).normal(size=(10, 2))
    assert blur_ratio(X, [0, 1] * 5, transform=np.zeros((2, 3))) == 1.0
    assert blur_ratio(np.full((6, 2), 0.1), [0, 0, 1, 1, 2, 2]) == 1.0


def test_blur_ratio_bad_input():
    X = np.ones((4, 2))
    X[0, 0] = 2
    with pytest.raises(ValueError, match="labels has 3 entries, expected 4"):
        blur_ratio(X, [0, 1, 0])
    with pytest.raises(ValueError, match="transform has 3 rows, but X has 2 features"):
        blur_ratio(X, [0, 1, 0, 1], transform=np.ones((3, 1)))
    with pytest.raises(ValueError, match="transform\\(X\\) returned 2 rows"):
        blur_ratio(X, [0, 1, 0, 1], transform=lambda Y: Y[:2])
    with pytest.raises(ValueError, match="transform\\(X\\) contains NaN"):
        blur_ratio(X, [0, 1, 0, 1], transform=lambda Y: Y * np.nan)
    with pytest.raises(TypeError, match="transform must be None, a callable"):
        blur_ratio(X, [0, 1, 0, 1], transform="pca")
    with pytest.raises(ValueError, match="X contains NaN"):
        blur_ratio(np.array([[np.nan, 1.0]]), [0])
    with pytest.raises(ValueError, match="labels must be 1-D"):
        blur_ratio(X, np.zeros((4, 1)))


# --------------------------------------------------------------------------
# Bad input for every labeling measure

LABEL_MEASURES = [contingency_matrix, rand_index, adjusted_rand_index, variation_of_information,
                  normalized_mutual_info, purity, entropy, clustering_accuracy, pairwise_accuracy]


@pytest.mark.parametrize("func", LABEL_MEASURES)
def test_bad_labels(func):
    with pytest.raises(ValueError, match="labels_true and labels_pred must have the same "
                                         "length, got 3 and 2"):
        func([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="labels_true must be 1-D"):
        func(np.zeros((3, 2)), [0, 1, 1])
    with pytest.raises(ValueError, match="labels_pred must be 1-D"):
        func([0, 1, 1], [[0], [1], [1]])
    with pytest.raises(ValueError, match="labels_pred contains NaN"):
        func([0, 1, 1], [0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="empty"):
        func([], [])


def test_normalized_mutual_info_bad_average_method():
    with pytest.raises(ValueError, match="average_method"):
        normalized_mutual_info([0, 1], [0, 1], average_method="harmonic")


def test_measures_do_not_depend_on_label_values():
    rng = np.random.default_rng(9)
    a, b = rng.integers(0, 4, 100), rng.integers(0, 3, 100)
    a2 = np.array([-7, 1000, 3, 42])[a]               # wide-range integers
    b2 = np.array(["z", "y", "x"])[b]                 # strings in another order
    for func in LABEL_MEASURES[1:]:
        assert func(a2, b2) == pytest.approx(func(a, b), abs=1e-14), func.__name__


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64,
                                   bool])
def test_check_labels_fast_path_equals_numpy_unique(dtype):
    # check_labels encodes small-range integers without sorting; it must give
    # exactly np.unique's classes and inverse.
    rng = np.random.default_rng(3)
    if dtype is bool:
        cases = [(0, 1, 50), (1, 1, 3)]
    else:
        info = np.iinfo(dtype)
        cases = [(0, 5, 50), (0, 100, 30), (0, 2, 1),
                 (info.min, info.min + 500, 300),   # near the bottom of the range
                 (info.max - 500, info.max, 300),   # near the top
                 (info.min, info.max, 300)]         # whole range: wide unless 8/16-bit
    for lo, hi, n in cases:
        if dtype is bool:
            arr = rng.integers(lo, hi, n, endpoint=True).astype(bool)
        else:
            lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
            arr = rng.integers(lo, hi, n, endpoint=True, dtype=dtype)
        codes, classes = check_labels(arr)
        ref_classes, ref_codes = np.unique(arr, return_inverse=True)
        np.testing.assert_array_equal(codes, ref_codes)
        np.testing.assert_array_equal(classes, ref_classes)
        assert classes.dtype == ref_classes.dtype and codes.dtype == np.int64
    # Offsets beyond the dtype's own positive range (int8: -100 .. 100).
    wide8 = np.array([100, -100, 0, 100, 7], dtype=np.int8)
    codes, classes = check_labels(wide8)
    np.testing.assert_array_equal(codes, [3, 0, 1, 3, 2])
    np.testing.assert_array_equal(classes, [-100, 0, 7, 100])
    assert classes.dtype == np.int8
    extreme = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).min + 3, 0])
    codes, classes = check_labels(extreme)
    np.testing.assert_array_equal(classes, np.unique(extreme))
    big = np.array([2**64 - 1, 2**64 - 4], dtype=np.uint64)
    codes, classes = check_labels(big)
    np.testing.assert_array_equal(codes, [1, 0])
    np.testing.assert_array_equal(classes, np.sort(big))
