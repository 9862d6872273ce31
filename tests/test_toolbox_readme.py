"""The README's toolbox section: its example prints what it says, and its mission
table names only things that exist."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _section():
    if not README.is_file():
        pytest.skip("README.md not found beside tests/")
    text = README.read_text()
    start = text.index("## The clustering toolbox of the lecture notes")
    return text[start:text.index("\n## ", start + 10)]


def test_learned_space_example():
    from metriclust.metrics import clustering_accuracy

    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    ns = {}
    exec(compile(blocks[0], str(README), "exec"), ns)  # noqa: S102
    gm_raw = ns["GaussianMixture"](2, random_state=0).fit_predict(ns["Xw"])
    assert round(clustering_accuracy(ns["yw"], gm_raw), 4) == 0.5175
    assert clustering_accuracy(ns["yw"], ns["gm"].labels_) == 1.0
    assert ns["cluster_purities"](ns["yw"], ns["gm"].labels_).tolist() == [1.0, 1.0]
    exec(compile(blocks[1], str(README), "exec"), ns)  # noqa: S102
    assert 0.5 < ns["corr"] <= 1.0


def test_mission_table_names_exist():
    import importlib

    import metriclust

    names = set(re.findall(r"`((?:metriclust\.)?[A-Za-z_.]+)[(`]", _section()))
    checked = 0
    for name in names:
        if name.startswith("metriclust."):
            mod, _, attr = name.rpartition(".")
            assert hasattr(importlib.import_module(mod), attr), name
            checked += 1
        elif name[0].isupper() and "." not in name:
            assert hasattr(metriclust, name) or name == "ISODATA", name
            checked += 1
    assert checked >= 10
