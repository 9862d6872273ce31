"""Hierarchical clustering and the notes' distances stay delegated to scipy; these
tests pin down how they are used with metriclust: the lecture's worked examples,
every linkage the notes list on a learned space (``transform`` output), the
cophenetic correlation, and the distance measures."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import cophenet, fcluster, linkage
from scipy.spatial.distance import cdist, pdist, squareform

from metriclust import MMC
from metriclust.datasets import make_xing_artificial
from metriclust.metrics import clustering_accuracy

# Xing's lecture: four points a, b, c, d and their distances
_ABCD = squareform([2, 5, 6, 3, 5, 4])


def test_lecture_single_link_example():
    """Merges (a,b) at 2, then c at 3, then d at 4 (the lecture's tables)."""
    Z = linkage(squareform(_ABCD), "single")
    assert Z[:, 2].tolist() == [2.0, 3.0, 4.0]
    assert Z[0, :2].tolist() == [0, 1] and Z[1, :2].tolist() == [2, 4]


def test_lecture_complete_link_example():
    """Merges (a,b) at 2, (c,d) at 4, then both at 6."""
    Z = linkage(squareform(_ABCD), "complete")
    assert Z[:, 2].tolist() == [2.0, 4.0, 6.0]
    assert Z[1, :2].tolist() == [2, 3]


@pytest.mark.parametrize("method", ["single", "complete", "average", "centroid", "median",
                                    "ward"])
def test_every_linkage_on_a_learned_space(method):
    """Xing's artificial data I: in MMC's learned space (20 similar pairs) every
    linkage of the notes separates the two classes; on the raw features none of the
    compact-cluster linkages does (single link chains both classes)."""
    X, y = make_xing_artificial(kind=1, random_state=0)
    from metriclust.constraints import sample_similar_pairs

    similar = sample_similar_pairs(y, target_component_ratio=0.9, random_state=0)
    Z = MMC(diagonal=True).fit(X, similar=similar).transform(X)
    labels = fcluster(linkage(Z, method), 2, "maxclust")
    assert clustering_accuracy(y, labels) == 1.0
    raw = fcluster(linkage(X, method), 2, "maxclust")
    assert clustering_accuracy(y, raw) < 0.9


def test_cophenetic_correlation():
    """The notes' judge of a hierarchy (Hastie et al. p. 475, quoted there): the
    correlation between the pairs' distances and their merge heights -- computed
    by hand here from the tree, and compared with scipy's."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 6]
    d = pdist(X)
    for method in ("single", "average", "complete"):
        Z = linkage(X, method)
        c, coph = cophenet(Z, d)
        # merge height of each pair from the tree, by brute force
        members = {i: {i} for i in range(40)}
        height = np.zeros((40, 40))
        for k, (a, b, h, _) in enumerate(Z):
            A, B = members.pop(int(a)), members.pop(int(b))
            for i in A:
                for j in B:
                    height[i, j] = height[j, i] = h
            members[40 + k] = A | B
        ref = squareform(height)
        np.testing.assert_allclose(coph, ref)
        assert c == pytest.approx(np.corrcoef(d, ref)[0, 1])
        assert c > 0.7  # two well separated groups: the hierarchy fits the distances


def test_minkowski_distances_lecture_example():
    """Differences 4 and 3: Euclidean 5, Manhattan 7, sup 4 (the lecture's example)."""
    x, y = np.array([[0.0, 0.0]]), np.array([[4.0, 3.0]])
    assert cdist(x, y, "minkowski", p=2)[0, 0] == pytest.approx(5.0)
    assert cdist(x, y, "minkowski", p=1)[0, 0] == pytest.approx(7.0)
    assert cdist(x, y, "chebyshev")[0, 0] == pytest.approx(4.0)
    assert cdist(x, y, "cityblock")[0, 0] == cdist(x, y, "minkowski", p=1)[0, 0]
    # r -> infinity approaches the sup distance
    assert cdist(x, y, "minkowski", p=200)[0, 0] == pytest.approx(4.0, rel=1e-3)


def test_hamming_lecture_example():
    """Gene expression under 17 conditions: #(01) + #(10) = 4 + 1 = 5. scipy's
    'hamming' is the fraction of differing features: times p gives the count."""
    a = np.array([0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1])
    b = np.array([0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1])
    assert pdist(np.array([a, b]), "hamming")[0] * 17 == pytest.approx(5.0)
    assert pdist(np.array([a, b]), "cityblock")[0] == 5.0  # Manhattan on binary features


def test_pearson_and_cosine():
    """scipy's 'correlation' distance is 1 - Pearson's s(x, y) and 'cosine' is
    1 - x.y / (|x||y|), the lecture's two similarity measures; cosine is Pearson
    without the centring."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=12), rng.normal(size=12)
    xc, yc = x - x.mean(), y - y.mean()
    pearson = (xc @ yc) / np.sqrt((xc @ xc) * (yc @ yc))
    assert 1 - pdist([x, y], "correlation")[0] == pytest.approx(pearson)
    assert 1 - pdist([x, y], "cosine")[0] == pytest.approx(x @ y / np.linalg.norm(x)
                                                           / np.linalg.norm(y))
    assert 1 - pdist([xc, yc], "cosine")[0] == pytest.approx(pearson)
    assert abs(pearson) <= 1
