"""CPD-UML: solvers against slow numpy references, paper checks, estimator API."""

import numpy as np
import pytest
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from metriclust import CPDUML
from metriclust._core.base import NotFittedError
from metriclust._core.cpd import (DensePsiSolver, KernelPCA, LowRankPsiSolver, objective,
                                  orthonormalize_factor)
from metriclust._core.partition import same_partition
from metriclust._core.kmeans import assign_labels, kmeans
from metriclust.kernels import Nystrom, gaussian_gram, top_eigenpairs
from _reference import clustering_accuracy as accuracy
from _reference import gaussian_gram as ref_gram
from _reference import sq_distances


# -- slow, obviously-correct references ---------------------------------------------

def indicator(labels, K):
    """Normalized cluster indicator Y (paper eq. 9), empty clusters dropped."""
    Y = np.zeros((len(labels), K))
    Y[np.arange(len(labels)), labels] = 1.0
    Y = Y[:, Y.sum(0) > 0]
    return Y / np.sqrt(Y.sum(0))


def psi_reference(G, X, labels, K, lam):
    """Row form of eq. 20 as written: dense Y, dense projector, np.linalg.solve."""
    Y = indicator(labels, K)
    P = np.eye(len(X)) - Y @ Y.T
    return np.linalg.solve(G @ P @ G + lam * np.eye(len(X)), -G @ P @ X)


def J_reference(X, G, Psi, Y, lam):
    """Eq. 11 as written (traces)."""
    X1 = X + G @ Psi
    return (np.trace(X1.T @ X1) - np.trace(Y.T @ X1 @ X1.T @ Y)
            + lam * np.trace(Psi.T @ Psi))


def x1_nystrom_spec(X, U, labels, K, lam):
    """The Psi-step's push-through form for G ~= U U^T (U not orthonormal):
    X1 = X - U (lam I + (U^T U) H)^{-1} (U^T U) U^T R, H = U^T U - (U^T Y)(U^T Y)^T."""
    Y = indicator(labels, K)
    R = X - Y @ (Y.T @ X)
    W = U.T @ U
    UtY = U.T @ Y
    H = W - UtY @ UtY.T
    return X - U @ np.linalg.solve(lam * np.eye(U.shape[1]) + W @ H, W @ (U.T @ R))


def agreement(a, b):
    return accuracy(np.asarray(a), np.asarray(b))


def make_moons(n, noise, seed):
    from metriclust.datasets import make_moons as generate

    return generate(n, noise=noise, random_state=seed)


@pytest.fixture(scope="module")
def moons(load_dataset):
    return load_dataset("two_moons")


@pytest.fixture
def small_problem():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((70, 3))
    labels = rng.integers(0, 4, 70)
    labels[labels == 2] = 3          # cluster 2 empty: Y has 3 columns
    return X, labels


# -- the Psi-step ---------------------------------------------------------------------

@pytest.mark.parametrize("sigma, lam", [(0.5, 1e-3), (1.5, 0.1), (3.0, 10.0)])
def test_dense_solver_matches_direct_solve(small_problem, sigma, lam):
    X, labels = small_problem
    G = gaussian_gram(X, sigma=sigma)
    step = DensePsiSolver(G.copy(), X, lam).solve(labels, 4)
    ref = psi_reference(G, X, labels, 4, lam)
    np.testing.assert_allclose(step.psi, ref, rtol=0, atol=1e-8 * np.abs(ref).max())
    np.testing.assert_allclose(step.X1, X + G @ ref, rtol=0, atol=1e-9 * np.abs(X).max())
    Y = indicator(labels, 4)
    J = objective(step.X1, labels, 4, step.psi_sq_norm, lam)
    assert J == pytest.approx(J_reference(X, G, ref, Y, lam), rel=1e-10)


def test_closed_form_psi_is_the_numerical_minimizer_of_J():
    # Eq. 13 for fixed Y minimized by BFGS on a tiny problem equals eq. 20.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 2))
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    G, lam = gaussian_gram(X, sigma=1.0), 0.3
    Y = indicator(labels, 3)

    def f(v):
        Psi = v.reshape(X.shape)
        X1 = X + G @ Psi
        P = np.eye(9) - Y @ Y.T
        return J_reference(X, G, Psi, Y, lam), (2 * G @ P @ X1 + 2 * lam * Psi).ravel()

    res = minimize(f, np.zeros(X.size), jac=True, method="BFGS", options={"gtol": 1e-12})
    closed = DensePsiSolver(G.copy(), X, lam).solve(labels, 3).psi
    np.testing.assert_allclose(res.x.reshape(X.shape), closed, atol=1e-6)
    assert f(closed.ravel())[0] <= res.fun + 1e-10


def test_low_rank_solvers_at_full_rank_match_dense(small_problem):
    X, labels = small_problem
    n, sigma, lam = len(X), 0.6, 0.05
    G = gaussian_gram(X, sigma=sigma)
    dense = DensePsiSolver(G.copy(), X, lam).solve(labels, 4)
    # exact eigenpairs, m = N
    s, Q = top_eigenpairs(X, n, sigma=sigma)
    eig = LowRankPsiSolver(np.ascontiguousarray(Q), np.maximum(s, 0), X, lam)
    step = eig.solve(labels, 4)
    np.testing.assert_allclose(step.X1, dense.X1, rtol=0, atol=1e-8)
    np.testing.assert_allclose(Q @ step.psi, dense.psi, rtol=0, atol=1e-8 * np.abs(dense.psi).max())
    assert step.psi_sq_norm == pytest.approx(dense.psi_sq_norm, rel=1e-8)
    # Nystrom with every point a landmark, m = N
    U = Nystrom(n, sigma=sigma, random_state=0).fit(X).factor_.copy()
    Qn, sn, _ = orthonormalize_factor(U)
    step = LowRankPsiSolver(Qn, sn, X, lam).solve(labels, 4)
    np.testing.assert_allclose(step.X1, dense.X1, rtol=0, atol=1e-8)


def test_nystrom_solver_matches_spec_push_through_formula(small_problem):
    X, labels = small_problem
    U = Nystrom(15, sigma=0.8, random_state=1).fit(X).factor_
    lam = 0.02
    ref = x1_nystrom_spec(X, U, labels, 4, lam)
    Q, s, T = orthonormalize_factor(U.copy())
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-10)
    np.testing.assert_allclose(Q @ np.diag(s) @ Q.T, U @ U.T, atol=1e-10)
    step = LowRankPsiSolver(Q, s, X, lam).solve(labels, 4)
    np.testing.assert_allclose(step.X1, ref, rtol=0, atol=1e-9)
    # and Psi = Q C solves the dense system with G replaced by U U^T
    np.testing.assert_allclose(Q @ step.psi, psi_reference(U @ U.T, X, labels, 4, lam),
                               atol=1e-7)


def test_same_partition_ignores_permutation():
    a = np.array([0, 0, 1, 1, 2], dtype=np.int64)
    assert same_partition(a, np.array([2, 2, 0, 0, 1], dtype=np.int64), 3)
    assert not same_partition(a, np.array([0, 0, 1, 1, 1], dtype=np.int64), 3)
    assert not same_partition(a, np.array([0, 1, 1, 1, 2], dtype=np.int64), 3)


# -- paper checks: two moons (Fig. 1, 2) ----------------------------------------------

def test_two_moons_documented_setting_and_defaults(moons):
    # Paper section 3.1: 99% on the two-moon data where k-means fails. The paper gives
    # no sigma or lambda; sigma = 1 data unit, lambda = 100 is a setting found here, by
    # a grid on this data set (benchmarks/RESULTS.md).
    X, y = moons
    n = len(X)
    from metriclust.kernels import median_pairwise_distance

    med = median_pairwise_distance(X)
    doc = CPDUML(2, sigma=1.0 / med, lam=100.0 / n**2, random_state=0).fit(X)
    assert doc.sigma_ == pytest.approx(1.0)
    assert doc.lam_ == pytest.approx(100.0)
    assert accuracy(y, doc.labels_) >= 0.99
    default = CPDUML(2, random_state=0).fit(X)
    assert accuracy(y, default.labels_) >= 0.95
    km = kmeans(X, 2, n_init=10, random_state=0)
    assert accuracy(y, km.labels) < 0.8          # k-means cuts across the moons (~0.7)
    # converged on an unchanged partition: predict on the training points agrees
    assert default.n_iter_ < default.max_iter
    np.testing.assert_array_equal(default.predict(X), default.labels_)


@pytest.mark.parametrize("width", [4.0, 16.0])
def test_kernel_version_rescues_a_too_wide_kernel(moons, width):
    # Paper Fig. 2: kernel k-means fails with RBF widths 4..32; kernel CPD-UML does not.
    X, y = moons
    from metriclust.kernels import median_pairwise_distance

    rel = width / median_pairwise_distance(X)
    Z = KernelPCA(50, sigma=width).fit_transform(X)
    assert accuracy(y, kmeans(Z, 2, n_init=10, random_state=0).labels) < 0.8
    model = CPDUML(2, kernel="rbf", kernel_sigma=rel, random_state=0).fit(X)
    assert model.kernel_sigma_ == pytest.approx(width)
    assert accuracy(y, model.labels_) >= 0.95
    np.testing.assert_allclose(model.transform(X), model.embedding_, atol=1e-6)
    assert np.all(np.diff(model.history_) <= 1e-9 * model.history_[0])


@pytest.mark.parametrize("n", [2000, 20000])
def test_scale_free_defaults_transfer_across_sample_sizes(n):
    # The defaults are scale-free (sigma relative to the median distance, lambda to
    # N^2), so one setting must keep moons at >= 0.99 from the dense to the Nystrom
    # path, at two sample sizes ten times apart.
    X, y = make_moons(n, 0.1, seed=n)
    model = CPDUML(2, random_state=0).fit(X)
    assert model.approximation_ == ("dense" if n <= 4000 else "nystrom")
    assert accuracy(y, model.labels_) >= 0.99


def test_low_rank_labels_agree_with_dense_on_moons():
    X, _ = make_moons(1000, 0.1, seed=5)
    dense = CPDUML(2, approximation="dense", random_state=0).fit(X)
    for approx, m in [("nystrom", 100), ("eig", 50)]:
        lr = CPDUML(2, approximation=approx, n_components=m, random_state=0).fit(X)
        assert lr.approximation_ == approx
        assert agreement(dense.labels_, lr.labels_) >= 0.99


@pytest.mark.parametrize("approx", ["eig", "nystrom"])
def test_full_rank_estimator_transform_matches_dense(approx):
    X, _ = make_moons(120, 0.1, seed=2)
    Xnew, _ = make_moons(30, 0.1, seed=9)
    kw = dict(sigma=0.5, kernel=None, random_state=0)
    dense = CPDUML(2, approximation="dense", **kw).fit(X)
    lr = CPDUML(2, approximation=approx, n_components=len(X), **kw).fit(X)
    np.testing.assert_array_equal(lr.labels_, dense.labels_)
    np.testing.assert_allclose(lr.embedding_, dense.embedding_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(lr.transform(Xnew), dense.transform(Xnew), rtol=0, atol=1e-8)


def test_kernel_pca_exact_and_full_nystrom_agree():
    X, _ = make_moons(80, 0.1, seed=3)
    Xnew, _ = make_moons(20, 0.1, seed=4)
    exact = KernelPCA(5, sigma=1.0)
    nys = KernelPCA(5, sigma=1.0, landmarks=80, random_state=0)
    Ze, Zn = exact.fit_transform(X), nys.fit_transform(X)
    signs = np.sign(np.sum(Ze * Zn, axis=0))          # eigenvectors up to sign
    np.testing.assert_allclose(Zn * signs, Ze, atol=1e-8)
    np.testing.assert_allclose(nys.transform(Xnew) * signs, exact.transform(Xnew), atol=1e-8)
    np.testing.assert_allclose(exact.transform(X), Ze, atol=1e-8)
    # the reference: doubly centered Gram, its top eigenvectors scaled by sqrt(eigenvalue)
    K = gaussian_gram(X, sigma=1.0)
    H = np.eye(80) - 1.0 / 80
    vals, vecs = np.linalg.eigh(H @ K @ H)
    ref = vecs[:, ::-1][:, :5] * np.sqrt(vals[::-1][:5])
    np.testing.assert_allclose(np.abs(Ze), np.abs(ref), atol=1e-8)


# -- invariances and monotonicity -----------------------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(lam=1e-4), dict(kernel="rbf"),
                                dict(approximation="nystrom", n_components=40)])
def test_objective_never_increases(load_dataset, kw):
    X, _ = load_dataset("breast_cancer_wisconsin_original")   # p = 9 > K
    model = CPDUML(3, random_state=0, **kw).fit(X[:300])
    h = model.history_
    assert len(h) == model.n_iter_ >= 1
    assert np.all(np.diff(h) <= 1e-10 * h[0])
    assert model.objective_ == h.min()


@pytest.mark.parametrize("approx", ["dense", "nystrom"])
def test_scaling_and_translating_x_leaves_labels_unchanged(approx):
    X, _ = make_moons(300, 0.1, seed=4)
    kw = dict(approximation=approx, n_components=60, random_state=7)
    base = CPDUML(2, **kw).fit(X)
    for c, shift in [(1e-3, 0.0), (7.5, 0.0), (1.0, 100.0)]:
        m = CPDUML(2, **kw).fit(c * X + shift)
        assert m.sigma_ == pytest.approx(c * base.sigma_, rel=1e-12)
        np.testing.assert_array_equal(m.labels_, base.labels_)
        np.testing.assert_allclose(m.embedding_ - shift, c * base.embedding_,
                                   rtol=0, atol=1e-6 * c)


# -- out of sample: the paper's protocol ------------------------------------------------

def test_breast_three_fold_protocol_near_paper(load_dataset):
    # Paper section 3.2: fit on two folds, label the third by the nearest transformed
    # cluster center. Paper Table 1 (accuracy), row CPD-UML, column Breast: 97.06;
    # Table 3 (purity): 97.06; k-means (Table 1 row K-means): 96.39.
    # sigma = 1.5, lam = 0.05 were picked by hand on this data set (looking at the
    # accuracy), in the input space. The default (kernel, sigma and lam "auto") picks
    # without labels; over runs 20-29 of this protocol it averages 96.46 against
    # k-means' 96.12 (benchmarks/RESULTS.md, issue #14); this one split (seed 0): 96.3
    # against 96.0. Neither reaches the paper's 97.06.
    X, y = load_dataset("breast_cancer_wisconsin_original")
    rng = np.random.default_rng(0)
    folds = np.array_split(rng.permutation(len(X)), 3)
    accs, auto, km = [], [], []
    for f in range(3):
        test = folds[f]
        train = np.concatenate([folds[g] for g in range(3) if g != f])
        model = CPDUML(2, sigma=1.5, lam=0.05, random_state=0).fit(X[train])
        accs.append(accuracy(y[test], model.predict(X[test])))
        model = CPDUML(2, random_state=0).fit(X[train])
        auto.append(accuracy(y[test], model.predict(X[test])))
        centers = kmeans(X[train], 2, n_init=10, random_state=0).centers
        km.append(accuracy(y[test], assign_labels(X[test], centers)[0]))
    assert np.mean(accs) >= 0.95
    assert np.mean(auto) >= np.mean(km) - 0.01 and np.mean(auto) >= 0.955


def test_wdbc_three_fold_protocol_not_below_kmeans(load_dataset):
    # The miss: under the paper's protocol (fit on two folds, label the third)
    # the default fell 5 points below k-means on WDBC (79.9 vs 85.2 over 5 runs),
    # picking deformations that cut fewer edges of a kNN graph ruled by one
    # wide-range feature. Scored on the standardized graph as well, it keeps k-means
    # there (5 runs: 84.85 vs 85.17; benchmarks/RESULTS.md). One run here.
    X, y = load_dataset("breast_cancer_wdbc")
    rng = np.random.default_rng(1000)
    folds = np.array_split(rng.permutation(len(X)), 3)
    km, auto = [], []
    for f in range(3):
        test = folds[f]
        train = np.concatenate([folds[g] for g in range(3) if g != f])
        centers = kmeans(X[train], 2, n_init=10, random_state=0).centers
        km.append(accuracy(y[test], assign_labels(X[test], centers)[0]))
        model = CPDUML(2, random_state=0).fit(X[train])
        auto.append(accuracy(y[test], model.predict(X[test])))
    assert np.mean(auto) >= np.mean(km) - 0.01


# -- label-free choice of sigma and lam ------------------------------------------------

def test_normalized_cut_matches_a_dense_reference():
    from metriclust.cpduml import _knn_graph, _normalized_cut

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    labels = rng.integers(0, 3, 60)
    graph = _knn_graph(X, 5)
    # reference: symmetrized 5-NN adjacency (weight 2 where both directions), dense
    D = sq_distances(X)
    np.fill_diagonal(D, np.inf)
    A = np.zeros((60, 60))
    for i in range(60):
        A[i, np.argsort(D[i])[:5]] = 1
    A = A + A.T
    ref = sum(A[labels == k][:, labels != k].sum() / A[labels == k].sum() for k in range(3))
    assert _normalized_cut(graph, labels, 3) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("name", ["breast_cancer_wisconsin_original", "breast_cancer_wdbc",
                                  "iris", "wine", "glass", "two_moons"])
def test_default_never_more_than_a_point_below_kmeans(load_dataset, name):
    # Issue target for the defaults (sigma = lam = "auto"): on the shared data never
    # more than 1 point of accuracy below k-means (here: fits on all the data; the
    # 3-fold protocol is in benchmarks/bench_papers.py). The labels are used only
    # to score; the selection sees X alone. Moons: k-means 0.69, the default 0.995.
    X, y = load_dataset(name)
    K = len(np.unique(y))
    km = accuracy(y, kmeans(X, K, n_init=10, random_state=0).labels)
    model = CPDUML(K, random_state=0).fit(X)
    assert accuracy(y, model.labels_) >= km - 0.01
    # kernel k-means (the reference), input-space k-means and the 3 x 4 grid
    assert len(model.selection_) == 2 + 3 * 4
    if name == "two_moons":
        assert accuracy(y, model.labels_) >= 0.99
        assert model.kernel_ is None                  # a deformation of the input space
    if name == "breast_cancer_wisconsin_original":
        # the kernel-space reference is kept and clears the bar on all the data
        # (96.93 against k-means' 96.05; the 3-fold runs: benchmarks/RESULTS.md)
        assert model.kernel_ == "rbf"
        assert accuracy(y, model.labels_) >= 0.965


@pytest.mark.parametrize("name", ["breast_cancer_wdbc", "iris", "two_moons"])
def test_deformation_kept_only_when_it_cuts_both_graphs_clearly_less(load_dataset, name):
    # The guard: the default deforms only if its partition cuts at most
    # (1 - SELECT_MARGIN) of k-means' normalized cut in the input's kNN graph AND in
    # the kNN graph of the standardized input; otherwise the k-means candidate (the
    # largest lam from k-means' partition) is kept.
    from metriclust.cpduml import (SELECT_MARGIN, SELECT_NEIGHBORS, _knn_graph,
                                   _normalized_cut, _standardized)

    X, y = load_dataset(name)
    K = len(np.unique(y))
    assert len(X) <= 1000      # the selection saw all the points: its fits are the final one
    model = CPDUML(K, kernel=None, random_state=0).fit(X)
    rec = model.selection_
    assert rec[0][2] == "kmeans" and rec[0][3] == 1.0
    best = min(rec, key=lambda r: r[3])
    lam = model.lam_ / len(X) ** 2
    if best[3] > 1.0 - SELECT_MARGIN:
        assert lam == pytest.approx(rec[0][1])
        return
    assert (best[2], lam) == ("spectral", pytest.approx(best[1]))
    km = kmeans(X, K, n_init=10, random_state=0).labels
    for G in (_knn_graph(X, SELECT_NEIGHBORS), _knn_graph(_standardized(X), SELECT_NEIGHBORS)):
        assert _normalized_cut(G, model.labels_, K) <= (
            (1 - SELECT_MARGIN) * _normalized_cut(G, km, K))


@pytest.mark.parametrize("kernel", [None, "auto"])
def test_kmeans_kept_when_it_cuts_no_edge(kernel):
    # Two far, tight blobs: k-means' partition cuts no edge of either graph, so no
    # deformation can cut clearly fewer (scores are 1, or inf for one that cuts some).
    # kernel="auto": the reference is k-means in the kernel-PCA space; it is kept.
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(60, 2)) * 0.1, rng.normal(size=(60, 2)) * 0.1 + 20.0]
    model = CPDUML(2, kernel=kernel, random_state=0).fit(X)
    assert all(r[3] >= 1.0 for r in model.selection_)
    if kernel is None:
        assert model.lam_ / len(X) ** 2 == pytest.approx(model.selection_[0][1])
    else:
        assert model.selection_[0][2] == "kernel-kmeans" and model.kernel_ == "rbf"
        assert model.lam_ / len(X) ** 2 == pytest.approx(max(r[1] for r in model.selection_[1:]))
    assert agreement(model.labels_, np.repeat([0, 1], 60)) == 1.0


def centered_gram_eigenvalues(X, sigma):
    """All eigenvalues of H G H (H = I - 11^T / N), descending: numpy, dense."""
    n = len(X)
    H = np.eye(n) - 1.0 / n
    return np.linalg.eigvalsh(H @ ref_gram(X, None, sigma) @ H)[::-1]


@pytest.mark.parametrize("name", ["breast_cancer_wisconsin_original", "iris", "two_moons"])
def test_auto_kernel_keeps_an_input_deformation_only_when_it_cuts_clearly_less(load_dataset,
                                                                               name):
    # kernel="auto": the reference is k-means in the RBF kernel-PCA space of the width
    # (of AUTO_KERNEL_WIDTHS) with the largest eigengap lambda_K / lambda_K+1 of the
    # centered Gram matrix; an input-space candidate is kept only at a score <=
    # 1 - SELECT_MARGIN (its normalized cuts against the reference's, in both kNN
    # graphs), else the reference's partition starts a kernel-space fit with the
    # largest lam.
    from metriclust.cpduml import (AUTO_KERNEL_WIDTHS, SELECT_MARGIN, SELECT_NEIGHBORS,
                                   _knn_graph, _normalized_cut, _standardized)
    from metriclust.kernels import median_pairwise_distance

    X, y = load_dataset(name)
    K = len(np.unique(y))
    model = CPDUML(K, random_state=0).fit(X)
    rec = model.selection_
    assert rec[0] == (None, None, "kernel-kmeans", 1.0)
    best = min(rec[1:], key=lambda r: r[3])
    # the width, from a dense eigendecomposition of every candidate's centered Gram
    med = median_pairwise_distance(X)
    gaps = []
    for w in AUTO_KERNEL_WIDTHS:
        ev = centered_gram_eigenvalues(X, w * med)
        gaps.append(ev[K - 1] / ev[K])
    assert [w for w, _ in model.kernel_selection_] == list(AUTO_KERNEL_WIDTHS)
    np.testing.assert_allclose([g for _, g in model.kernel_selection_], gaps, rtol=1e-6)
    width = AUTO_KERNEL_WIDTHS[int(np.argmax(gaps))]
    # an independent kernel k-means at that width (its own seed): the reference
    Z = KernelPCA(50, sigma=width * med).fit_transform(X)
    ref = kmeans(Z, K, n_init=10, random_state=0).labels
    graphs = (_knn_graph(X, SELECT_NEIGHBORS), _knn_graph(_standardized(X), SELECT_NEIGHBORS))
    if best[3] > 1.0 - SELECT_MARGIN:
        assert model.kernel_ == "rbf" and model.embedding_.shape == (len(X), Z.shape[1])
        assert model.kernel_sigma_ == pytest.approx(width * med, rel=1e-12)
        assert model.lam_ / len(X) ** 2 == pytest.approx(max(r[1] for r in rec[1:]))
        assert agreement(model.labels_, ref) >= 0.95
    else:
        assert model.kernel_ is None and model.embedding_.shape == X.shape
        for G in graphs:
            assert _normalized_cut(G, model.labels_, K) <= (
                (1 - SELECT_MARGIN) * _normalized_cut(G, ref, K) * 1.02)
    if name == "two_moons":
        assert model.kernel_ is None


def test_auto_kernel_width_is_invariant_to_scale_rotation_and_shift(load_dataset):
    # The width rule sees the data only through distances relative to their median:
    # X, 10 X and a rotated, shifted copy pick the same relative width (same eigengaps)
    # and the same partition. glass: the kernel space is kept.
    from metriclust.cpduml import AUTO_KERNEL_WIDTHS

    X, y = load_dataset("glass")
    K = len(np.unique(y))
    Q = np.linalg.qr(np.random.default_rng(5).standard_normal((X.shape[1],) * 2))[0]
    fits = [CPDUML(K, random_state=0).fit(A) for A in (X, 10.0 * X, X @ Q + 7.0)]
    a = fits[0]
    assert a.kernel_ == "rbf"
    scale = np.median(np.sqrt(sq_distances(X, X))[np.triu_indices(len(X), 1)])
    for b, c in zip(fits, (1.0, 10.0, 1.0)):
        np.testing.assert_allclose(b.kernel_selection_, a.kernel_selection_, rtol=1e-7)
        assert b.kernel_sigma_ / (c * scale) == pytest.approx(a.kernel_sigma_ / scale,
                                                              rel=1e-9)
        np.testing.assert_array_equal(b.labels_, a.labels_)
    assert a.kernel_sigma_ / scale in [pytest.approx(w) for w in AUTO_KERNEL_WIDTHS]


def test_eigengap_edge_cases():
    from metriclust.cpduml import _eigengap

    assert _eigengap([4.0, 2.0, 1.0], 2) == 2.0
    assert _eigengap([1.0, 4.0, 2.0], 2) == 2.0        # order does not matter
    assert _eigengap([4.0, 2.0], 2) == np.inf          # exactly K positive: a perfect gap
    assert _eigengap([4.0], 2) == 0.0                  # fewer than K: no K-cluster structure


def test_selection_is_label_free_scale_free_and_partial():
    X, _ = make_moons(300, 0.1, seed=3)
    a = CPDUML(2, random_state=0).fit(X)
    b = CPDUML(2, random_state=0).fit(5.0 * X + 3.0, np.zeros(300))   # y is ignored
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.kernel_ == b.kernel_
    # the kernel-PCA coordinates do not change with the data's scale; the input's do
    c_scale = 5.0 if a.kernel_ is None else 1.0
    assert b.sigma_ == pytest.approx(c_scale * a.sigma_, rel=1e-9)
    # one of the two fixed: only the other is searched (after the kernel reference)
    c = CPDUML(2, sigma=0.8, random_state=0).fit(X)
    assert {r[0] for r in c.selection_[1:]} == {0.8} and len(c.selection_) == 1 + 5
    with pytest.raises(ValueError, match="sigma"):
        CPDUML(2, sigma="median").fit(X)


# -- estimator API ------------------------------------------------------------------------

def test_attributes_and_shapes(moons):
    X, _ = moons
    m = CPDUML(3, sigma=0.8, lam=0.0025, random_state=0).fit(X)
    assert m.selection_ is None                   # fixed sigma and lam: no selection
    assert m.labels_.shape == (200,) and m.labels_.dtype == np.int64
    assert m.weights_.shape == (200, 2) and m.embedding_.shape == (200, 2)
    assert m.cluster_centers_.shape == (3, 2)
    assert m.n_features_in_ == 2 and m.approximation_ == "dense"
    assert m.lam_ == pytest.approx(m.lam * 200**2)
    np.testing.assert_allclose(m.embedding_, X + gaussian_gram(X, sigma=m.sigma_) @ m.weights_,
                               atol=1e-10)
    np.testing.assert_allclose(m.fit_transform(X), m.embedding_, atol=1e-10)
    np.testing.assert_array_equal(m.fit_predict(X), m.labels_)
    Xnew = X[:7] + 0.01
    np.testing.assert_array_equal(m.predict(Xnew),
                                  assign_labels(m.transform(Xnew), m.cluster_centers_)[0])


def test_nystrom_out_of_sample_uses_the_training_factor():
    X, _ = make_moons(500, 0.1, seed=1)
    m = CPDUML(2, approximation="nystrom", n_components=50, random_state=0).fit(X)
    np.testing.assert_allclose(m.transform(X), m.embedding_, rtol=0, atol=1e-10)
    assert m._field_centers.shape == (50, 2)    # the landmarks, not the training set


def test_same_seed_same_result_for_any_thread_count(moons):
    X, _ = moons
    with threadpool_limits(1, "openmp"):
        a = CPDUML(2, random_state=42).fit(X)
    with threadpool_limits(2, "openmp"):
        b = CPDUML(2, random_state=42).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.embedding_, b.embedding_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.history_, b.history_, rtol=1e-12)


def test_verbose_prints_objective(moons, capsys):
    CPDUML(2, verbose=1, random_state=0).fit(moons[0])
    assert "CPDUML iteration 0: J =" in capsys.readouterr().out


@pytest.mark.parametrize("params, match", [
    (dict(sigma=0.0), "sigma"), (dict(lam=-1.0), "lam"), (dict(kernel="poly"), "kernel"),
    (dict(approximation="svd"), "approximation"), (dict(n_components=0), "n_components"),
    (dict(max_iter=0), "max_iter"), (dict(tol=-1.0), "tol"), (dict(n_init=0), "n_init"),
    (dict(kernel_sigma=0), "kernel_sigma"), (dict(n_kernel_components=0),
                                             "n_kernel_components"),
    (dict(n_clusters=500), "n_clusters"),
])
def test_bad_parameters_are_named(moons, params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        CPDUML(**{"n_clusters": 2, **params}).fit(moons[0])


def test_transform_checks(moons):
    X, _ = moons
    with pytest.raises(NotFittedError):
        CPDUML(2).transform(X)
    m = CPDUML(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="2 features"):
        m.transform(np.ones((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        m.predict(np.array([[np.nan, 0.0]]))


def test_identical_points_do_not_break():
    m = CPDUML(2, random_state=0).fit(np.ones((10, 3)))
    assert np.all(np.isfinite(m.embedding_)) and np.isfinite(m.objective_)


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with pytest.warns(UserWarning, match="does not inherit"):
        check_estimator(CPDUML(n_clusters=3, random_state=0))


# -- wide data: one N x N eigendecomposition for the start and the selection ------------

def wide_blobs(n, p, k, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n) * k // n
    return rng.standard_normal((n, p)) + 1.5 * rng.standard_normal((k, p))[y], y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spectral_start_from_principal_axes_equals_the_eigendecomposition_route(seed):
    # The span coordinates are the centered rows along their principal axes, so their K
    # columns of largest norm, normalized, are the top-K left singular vectors: the
    # start is the same partition as the N x N eigendecomposition's.
    from metriclust._core.gram import span_coordinates
    from metriclust.cpduml import _spectral_partition

    X, _ = wide_blobs(50, 300, 4, seed)
    ref = _spectral_partition(X, 4, 5, np.random.default_rng(seed))
    got = _spectral_partition(span_coordinates(X), 4, 5, np.random.default_rng(seed),
                              principal_axes=True)
    np.testing.assert_array_equal(got, ref)
    # all points alike: no axis, the same round-robin fallback
    same = np.ones((6, 20))
    np.testing.assert_array_equal(
        _spectral_partition(span_coordinates(same), 2, 1, np.random.default_rng(0),
                            principal_axes=True),
        _spectral_partition(same, 2, 1, np.random.default_rng(0)))


@pytest.mark.parametrize("kernel", ["auto", None])
def test_wide_fit_decomposes_the_n_by_n_gram_once_and_labels_are_unchanged(monkeypatch,
                                                                          kernel):
    # Wide data (p > N): the spectral start and the selection share one decomposition of
    # X's centered N x N Gram (the standardized copy's is a different matrix). Reference:
    # the same fit with the start recomputed from X by its own decomposition.
    import metriclust.cpduml as cpduml_module

    X, _ = wide_blobs(45, 400, 3, 3)
    calls = []
    eigh = np.linalg.eigh

    def counting_eigh(A, *args, **kwargs):
        calls.append(A.shape)
        return eigh(A, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", counting_eigh)
    fast = CPDUML(3, kernel=kernel, random_state=0).fit(X)
    assert calls.count((45, 45)) == 2           # X's Gram and the standardized X's
    monkeypatch.setattr(np.linalg, "eigh", eigh)
    orig = cpduml_module._spectral_partition
    monkeypatch.setattr(cpduml_module, "_spectral_partition",
                        lambda Z, *a, principal_axes=False: orig(X if principal_axes else Z, *a))
    slow = CPDUML(3, kernel=kernel, random_state=0).fit(X)
    np.testing.assert_array_equal(fast.labels_, slow.labels_)
    assert [r[:3] for r in fast.selection_] == [r[:3] for r in slow.selection_]
    np.testing.assert_allclose([r[3] for r in fast.selection_],
                               [r[3] for r in slow.selection_], rtol=1e-12)
    assert fast.objective_ == pytest.approx(slow.objective_, rel=1e-12)


def test_kernel_selection_is_none_without_a_kernel_reference(tmp_path, moons):
    # kernel=None, fixed sigma and lam, and the block-by-block path (whose "auto" means
    # None) consider no kernel width: kernel_selection_ is None, as documented
    X, _ = moons
    assert CPDUML(2, kernel=None, random_state=0).fit(X).kernel_selection_ is None
    assert CPDUML(2, sigma=0.8, lam=0.01, random_state=0).fit(X).kernel_selection_ is None
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    m = CPDUML(2, approximation="nystrom", n_components=20, random_state=0).fit(mm)
    assert m.kernel_ is None and m.kernel_selection_ is None
    from metriclust.cpduml import AUTO_KERNEL_WIDTHS

    a = CPDUML(2, random_state=0).fit(X)
    assert len(a.kernel_selection_) == len(AUTO_KERNEL_WIDTHS)
    assert a.selection_[0][2] == "kernel-kmeans"
