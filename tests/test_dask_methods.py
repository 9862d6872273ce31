"""MMC's implicit D and CPD-UML's Nystrom fit on Dask arrays, on a real cluster (issue #12).

A ``distributed.LocalCluster`` (2 worker processes, 1 thread each, as in
``test_dask.py``) runs every block and block-pair task. The reference is the
in-memory fit of the same data from the same start; tolerances as in
``test_out_of_core_methods.py`` (the sums differ only in their order).
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from metriclust import CPDUML, MMC  # noqa: E402
from metriclust._core import cpd_blockwise as cb  # noqa: E402
import metriclust.cpduml as cpduml_module  # noqa: E402
from _blocks import blobs, cpd_nystrom, similar_pairs  # noqa: E402

J_RTOL, A_RTOL, CPD_RTOL = 1e-10, 1e-6, 1e-8


@pytest.mark.parametrize("diagonal", [False, True])
def test_mmc_all_pairs_equals_in_memory(client, diagonal):
    X, y = blobs(240, 4, 3, seed=3)
    X[:, 0] *= 5.0
    S = similar_pairs(y, 60, np.random.default_rng(3))
    ref = MMC(diagonal=diagonal, tol=1e-9).fit(X, similar=S)
    Xd = da.from_array(X, chunks=((60, 100, 80), 4))          # uneven chunks
    got = MMC(diagonal=diagonal, tol=1e-9).fit(Xd, similar=S)
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=J_RTOL)
    assert np.linalg.norm(got.metric_ - ref.metric_) <= A_RTOL * np.linalg.norm(ref.metric_)
    assert got.dissimilar_ is None and got.converged_
    Z = got.transform(Xd)                                       # lazy, X's chunks
    assert isinstance(Z, da.Array) and Z.chunks[0] == Xd.chunks[0]


def test_mmc_all_pairs_covariance_init(client):
    X, y = blobs(240, 4, 3, seed=6)
    X[:, 0] *= 5.0
    S = similar_pairs(y, 60, np.random.default_rng(6))
    ref = MMC(init="covariance", tol=1e-9).fit(X, similar=S)
    assert ref.converged_
    got = MMC(init="covariance", tol=1e-9).fit(da.from_array(X, chunks=(70, 4)), similar=S)
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=J_RTOL)
    assert np.linalg.norm(got.metric_ - ref.metric_) <= A_RTOL * np.linalg.norm(ref.metric_)


def _cpd(**kw):
    return cpd_nystrom(**dict(dict(n_init=2), **kw))


def test_cpduml_nystrom_equals_in_memory(client):
    # Unpatched: the spectral start's k-means++ runs on a sample that is X
    # itself below 100,000 rows, so the whole fit is the in-memory one.
    # (n_init=1: restarts ending in one partition numbered differently tie to
    # rounding; either may be kept.)
    X, _ = blobs(900, 3, 3, seed=8, spread=1.5)
    ref = _cpd(n_init=1).fit(X)
    got = _cpd(n_init=1).fit(da.from_array(X, chunks=((300, 250, 350), 3)))
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.history_, ref.history_, rtol=CPD_RTOL)


def test_cpduml_nystrom_equals_in_memory_from_the_same_start(client, monkeypatch):
    # The same start partition given to both fits (the start's k-means is
    # the engine's, tested in test_dask.py): every later step (Psi-steps,
    # warm Lloyd on the moved chunks) must agree.
    X, _ = blobs(900, 3, 3, seed=8, spread=1.5)
    start = np.asarray(np.argmin(((X[:, None, :] - X[[0, 1, 2]][None]) ** 2).sum(-1), 1),
                       dtype=np.int64)
    monkeypatch.setattr(cpduml_module, "_spectral_partition", lambda *a, **k: start.copy())
    monkeypatch.setattr(cb, "spectral_start", lambda *a, **k: start.copy())
    ref = _cpd().fit(X)
    assert ref.n_iter_ >= 2
    Xd = da.from_array(X, chunks=((300, 250, 350), 3))
    got = _cpd().fit(Xd)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=CPD_RTOL)
    np.testing.assert_allclose(got.history_, ref.history_, rtol=CPD_RTOL)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=CPD_RTOL,
                               atol=CPD_RTOL * np.abs(ref.cluster_centers_).max())
    assert isinstance(got.embedding_, da.Array) and got.embedding_.chunks[0] == Xd.chunks[0]
    scale = np.abs(ref.embedding_).max()
    np.testing.assert_allclose(got.embedding_.compute(), ref.embedding_, rtol=CPD_RTOL,
                               atol=CPD_RTOL * scale)
    Z = got.transform(Xd)                                       # lazy, X's chunks
    assert isinstance(Z, da.Array) and Z.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(Z.compute(), ref.transform(X), rtol=CPD_RTOL,
                               atol=CPD_RTOL * scale)
    np.testing.assert_array_equal(got.predict(Xd).compute(), ref.predict(X))


def test_cpduml_dask_spectral_start_is_a_good_partition(client):
    # without the patch: the start on the spectral coordinates finds the blobs
    X, y = blobs(900, 3, 3, seed=8, spread=0.5)
    got = _cpd(random_state=2).fit(da.from_array(X, chunks=(300, 3)))
    from metriclust.metrics import adjusted_rand_index
    assert adjusted_rand_index(y, got.labels_) > 0.95


def test_cpduml_dask_refuses_other_paths(client):
    X, _ = blobs(300, 3, 3, seed=1)
    Xd = da.from_array(X, chunks=(100, 3))
    with pytest.raises(TypeError, match="Nystrom"):
        CPDUML(3).fit(Xd)                       # auto -> dense at 300 points
    with pytest.raises(TypeError, match="Nystrom"):
        _cpd(kernel="rbf").fit(Xd)
