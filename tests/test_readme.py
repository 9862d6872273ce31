"""The README's Python examples run as written and print what it says they print."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def readme_namespace():
    if not README.is_file():
        pytest.skip("README.md not found beside tests/")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 4
    namespaces = []
    for block in blocks:
        ns = {} if not namespaces else dict(namespaces[-1])
        # Blocks build on each other where they reuse names (est, X).
        exec(compile(block, str(README), "exec"), ns)  # noqa: S102
        namespaces.append(ns)
    return namespaces


def test_cpcm_example(readme_namespace):
    from metriclust.metrics import adjusted_rand_index

    ns = readme_namespace[0]
    assert adjusted_rand_index(ns["y"], ns["km"].labels_) == pytest.approx(0.0, abs=0.02)
    assert adjusted_rand_index(ns["y"], ns["cpcm"].labels_) == 1.0
    assert round(ns["cpcm"].blur_ratio_, 3) == 0.037


def test_mmc_example(readme_namespace):
    from metriclust.metrics import clustering_accuracy

    ns = readme_namespace[1]
    X, Z, y, similar = ns["X"], ns["Z"], ns["y"], ns["similar"]
    assert len(similar) == 20
    assert round(clustering_accuracy(y, ns["kmeans"].fit_predict(X)), 3) == 0.505
    assert round(clustering_accuracy(y, ns["ckmeans"].fit(X, must_link=similar).labels_), 3) == 0.515
    assert clustering_accuracy(y, ns["kmeans"].fit_predict(Z)) == 1.0
    assert clustering_accuracy(y, ns["ckmeans"].fit(Z, must_link=similar).labels_) == 1.0


def test_cpduml_and_hierarchy_examples(readme_namespace):
    from metriclust.metrics import clustering_accuracy

    ns = readme_namespace[2]
    assert clustering_accuracy(ns["y"], ns["est"].labels_) == 1.0
    ns = readme_namespace[3]
    assert clustering_accuracy(ns["y"], ns["labels"]) == 1.0


def test_gridsearch_example(readme_namespace):
    # the documented path for users with labels on part of the data
    from metriclust.metrics import clustering_accuracy

    ns = readme_namespace[4]
    assert ns["search"].best_params_ == {"lam": 0.0025, "sigma": 0.8}
    assert clustering_accuracy(ns["y"], ns["best"].labels_) >= 0.99


def test_on_a_cluster_example(readme_namespace):
    pytest.importorskip("distributed")
    ns = next(ns for ns in readme_namespace if "dask_km" in ns)
    # three groups 12 apart in every coordinate: recovered exactly
    assert sorted(ns["sizes"].tolist()) == sorted(np.bincount(ns["y"]).tolist())
    assert ns["dask_km"].cluster_centers_.shape == (3, 4)
