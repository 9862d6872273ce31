"""Each plot renders to a non-empty PNG with the Agg backend."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from metriclust import plot  # noqa: E402


def save_png(ax, path):
    ax.figure.savefig(path)
    plt.close(ax.figure)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 2000
    return data


@pytest.fixture
def moons():
    from metriclust.datasets import make_moons

    return make_moons(n_samples=120, random_state=0)


def test_plot_clusters_2d_and_projected(tmp_path, moons):
    X, y = moons
    save_png(plot.plot_clusters(X, y, title="moons"), tmp_path / "a.png")
    wide = np.column_stack([X, np.random.default_rng(0).normal(size=(len(X), 3))])
    ax = plot.plot_clusters(wide, y)
    assert ax.get_xlabel() == "PC 1"
    save_png(ax, tmp_path / "b.png")
    with pytest.raises(ValueError, match="labels must have shape"):
        plot.plot_clusters(X, y[:-1])


def test_plot_learned_space_history_and_field(tmp_path, moons):
    from metriclust import CPDUML

    X, _ = moons
    est = CPDUML(n_clusters=2, random_state=0).fit(X)
    save_png(plot.plot_learned_space(est, X), tmp_path / "space.png")
    save_png(plot.plot_history(est), tmp_path / "hist.png")
    ax = plot.plot_displacement_field(est, X, grid=12)
    # One arrow per grid point, and the arrows are the learned displacements.
    quiver = [c for c in ax.collections if type(c).__name__ == "Quiver"][0]
    assert quiver.N == 144
    save_png(ax, tmp_path / "field.png")


def test_plot_metric(tmp_path):
    A = np.array([[2.0, -0.5], [-0.5, 1.0]])
    save_png(plot.plot_metric(A, feature_names=["a", "b"]), tmp_path / "m.png")
    save_png(plot.plot_metric(np.array([1.0, 0.1, 3.0])), tmp_path / "d.png")
    with pytest.raises(ValueError, match="square"):
        plot.plot_metric(np.ones((2, 3)))


def test_unfitted_estimator_is_refused():
    from metriclust import KMeans, NotFittedError

    with pytest.raises(NotFittedError):
        plot.plot_history(KMeans(2))


def test_import_does_not_pull_matplotlib():
    import subprocess
    import sys

    code = "import sys, metriclust, metriclust.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
