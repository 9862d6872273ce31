"""The import graph points down: public modules -> _core -> _kernels (house style).

Parses every module of ``src/metriclust`` (no import is executed) and checks:

- ``_core`` imports only ``_core``, ``_kernels``, numpy, scipy, threadpoolctl
  and the standard library, at module level;
- ``_kernels`` (the Cython bridges) imports nothing of metriclust outside itself;
  the ``.pyx``/``.pxd`` sources are read too (their ``import`` and ``cimport``
  lines, by pattern: Cython is not Python's grammar);
- ``_dask`` (the estimators' Dask entry points) belongs to the core layer:
  the estimators import it downwards, and it obeys the core's rules;
- a public module (``metriclust/*.py``) imports another public module only
  along an edge listed in ``PUBLIC_EDGES`` with its reason;
- no function-level import inside ``_core`` except the optional or heavy
  dependencies of ``LAZY_IMPORTS`` (imported on first use to keep
  ``import metriclust`` fast, or never needed at run time).
"""

import ast
import re
import sys
from pathlib import Path


SRC = Path(__file__).resolve().parents[1] / "src" / "metriclust"

# Third-party packages the core may use (runtime dependencies only).
CORE_THIRD_PARTY = {"numpy", "scipy", "threadpoolctl"}

# Function-level imports allowed in _core, by top-level package: scipy
# submodules cost import time and are needed by few paths; scikit-learn,
# pandas and polars are optional (scikit-learn tags, set_output containers);
# dask is optional too: the block engine's Dask backend (_core/engine.py) imports
# it on first use, when an estimator is given a dask array; and distributed (the
# metriclust[dask] extra) where a pass runs on chunks a distributed cluster holds.
LAZY_IMPORTS = {"scipy", "threadpoolctl", "sklearn", "pandas", "polars", "dask",
                "distributed"}

# Public-to-public imports that are part of the design: the application
# modules sit above every estimator, and model selection drives estimators.
# (importer, imported) -> reason.
PUBLIC_EDGES = {
    ("__init__", "*"): "the package namespace re-exports the public modules",
    ("__main__", "_cli"): "the entry point",
    ("_cli", "*"): "the command line drives estimators and metrics",
    ("_demo", "*"): "the demo drives estimators, data sets and plots",
    ("selection", "kmeans"): "model selection fits estimators",
    ("selection", "metrics"): "model selection scores partitions",
}

# Private modules beside the public ones that belong to the core layer (they
# import only _core and _kernels; the estimators import them downwards).
CORE_MODULES = {"_dask"}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        yield rel, ast.parse(path.read_text(), filename=str(path))


_CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\b|c?import\s+([\w.]+))")


def _cython_imports():
    """(rel, names, lineno) for every import and cimport line of the bridges'
    .pyx and .pxd sources (module-level or not)."""
    for path in sorted(SRC.rglob("*.pyx")) + sorted(SRC.rglob("*.pxd")):
        rel = path.relative_to(SRC)
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            match = _CYTHON_IMPORT.match(line)
            if match:
                name = match.group(1) or match.group(2)
                dots = len(name) - len(name.lstrip("."))
                if dots:
                    package = ["metriclust", *rel.parts[:-1]]
                    name = ".".join(package[: len(package) - (dots - 1)]
                                    + ([name[dots:]] if name[dots:] else []))
                yield rel, name, lineno


def _resolve(rel, node):
    """Absolute dotted names an Import/ImportFrom node may bind (module first)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not node.level:
        return [node.module]
    package = ["metriclust", *rel.parts[:-1]]
    mod = ".".join(package[: len(package) - (node.level - 1)]
                   + ([node.module] if node.module else []))
    # ``from . import x`` / ``from .pkg import sub`` may name modules too.
    return [mod] + [f"{mod}.{alias.name}" for alias in node.names]


def _imports(rel, tree):
    """(names, lineno, at_module_level) for every import statement in the module."""
    top = {id(n) for n in tree.body}
    return [(_resolve(rel, node), node.lineno, id(node) in top)
            for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _layer(name):
    """'public:<module>', 'core', 'kernels', 'package' or None (not metriclust)."""
    parts = name.split(".")
    if parts[0] != "metriclust":
        return None
    if len(parts) == 1:
        return "package"
    if parts[1] == "_core":
        return "core"
    if parts[1] == "_kernels":
        return "kernels"
    if parts[1] in CORE_MODULES:
        return "core"
    if (SRC / f"{parts[1]}.py").exists():
        return f"public:{parts[1]}"
    return None    # a name imported from the package namespace (``from . import X``)


def _violations():
    bad = []
    stdlib = sys.stdlib_module_names
    for rel, tree in _modules():
        where = str(rel)
        own = "core" if rel.parts[0] == "_core" or rel.stem in CORE_MODULES else (
            "kernels" if rel.parts[0] == "_kernels" else f"public:{rel.stem}")
        for names, line, top_level in _imports(rel, tree):
            root = names[0].split(".")[0]
            if own == "core" and not top_level and root not in LAZY_IMPORTS:
                bad.append(f"{where}:{line} function-level import of {names[0]} in _core")
            for name in names:
                layer = _layer(name)
                if own == "core":
                    if layer == "package" or (layer or "").startswith("public:"):
                        bad.append(f"{where}:{line} core imports the public layer ({name})")
                    elif root != "metriclust" and root not in stdlib \
                            and root not in CORE_THIRD_PARTY | LAZY_IMPORTS:
                        bad.append(f"{where}:{line} core imports {name}")
                elif own == "kernels":
                    if layer not in (None, "kernels"):
                        bad.append(f"{where}:{line} bridge imports {name}")
                elif layer is not None and layer.startswith("public:"):
                    importer, imported = rel.stem, layer.split(":")[1]
                    if importer != imported and (importer, imported) not in PUBLIC_EDGES \
                            and (importer, "*") not in PUBLIC_EDGES:
                        bad.append(f"{where}:{line} sideways import {importer} -> {imported}")
    for rel, name, line in _cython_imports():
        if _layer(name) not in (None, "kernels"):
            bad.append(f"{rel}:{line} bridge imports {name}")
    return sorted(set(bad))


def test_every_bridge_import_is_read():
    # The pattern must see the bridges' own imports (else the check above is empty).
    names = {(str(rel), name) for rel, name, _ in _cython_imports()}
    assert ("_kernels/_pairwise.pyx", "metriclust._kernels._status") in names
    assert ("_kernels/_mmc.pyx", "metriclust._kernels._blas") in names


def test_import_arrows_point_down():
    assert _violations() == []


def test_the_checker_sees_upward_sideways_and_lazy_imports(tmp_path, monkeypatch):
    # The check must be able to fail: plant each kind of arrow in a copy.
    fake = tmp_path / "metriclust"
    (fake / "_core").mkdir(parents=True)
    (fake / "_kernels").mkdir()
    (fake / "kernels.py").write_text("from ._core.gram import gaussian_gram\n")
    (fake / "cpcm.py").write_text("from .kernels import gaussian_gram\n")
    (fake / "metrics.py").write_text("import numpy\n")
    (fake / "_core" / "gram.py").write_text(
        "import numpy\nfrom ..metrics import x\n"
        "def f():\n    from .kmeans import kmeans\n    from scipy.linalg import eigh\n")
    (fake / "_core" / "kmeans.py").write_text("from .. import kernels\n")
    (fake / "_kernels" / "b.py").write_text("from .._core import gram\n")
    (fake / "_kernels" / "c.pyx").write_text(
        '"""A bridge\nfrom the docs: not an import.\n"""\n'
        "from metriclust._kernels._status cimport check_status\n"
        "from metriclust._core.validation import check_array\n"
        "    from ..kernels cimport gaussian_gram\n")
    (fake / "_dask.py").write_text("from . import kernels\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    found = "\n".join(_violations())
    assert "cpcm.py:1 sideways import cpcm -> kernels" in found
    assert "_core/gram.py:2 core imports the public layer (metriclust.metrics" in found
    assert "_core/gram.py:4 function-level import of metriclust._core.kmeans" in found
    assert "scipy" not in found                      # whitelisted lazy import
    assert "_core/kmeans.py:1 core imports the public layer" in found
    assert "_kernels/b.py:1 bridge imports metriclust._core" in found
    assert "_kernels/c.pyx:5 bridge imports metriclust._core.validation" in found
    assert "_kernels/c.pyx:6 bridge imports metriclust.kernels" in found
    assert "c.pyx:4" not in found                    # a bridge's own import
    assert "_dask.py:1 core imports the public layer (metriclust.kernels)" in found
    assert not any(v.startswith("kernels.py") for v in found.splitlines())  # public -> core
