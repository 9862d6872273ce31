"""Packaging: one version, every module installed, and an import that does not
pull in scipy until a code path needs it.

The artifact checks (LICENSE and only tracked files in the sdist and the wheel,
the manylinux tag, the cibuildwheel build list) run in .ci/run through
.ci/check_dist.py: they need a build.
"""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import metriclust

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "metriclust"


def _meson_version():
    text = (ROOT / "meson.build").read_text()
    return re.search(r"project\(.*?version\s*:\s*'([^']+)'", text, flags=re.S).group(1)


@pytest.fixture(scope="module")
def source_tree():
    if not (ROOT / "meson.build").is_file() or not SRC.is_dir():
        pytest.skip("the source tree is not beside tests/ (testing an installed wheel)")
    return ROOT


def test_version_single_sourced(source_tree):
    """meson.build's project() holds the version; pyproject declares it dynamic
    and __version__ and the installed metadata carry it."""
    from importlib.metadata import version

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert metriclust.__version__ == _meson_version()
    assert version("metriclust") == _meson_version()


def test_python_sources_listed_for_install(source_tree):
    """Every module under src/metriclust is named in an install_sources list
    (meson.build installs explicit lists, not the directory)."""
    listed = set()
    for build in SRC.rglob("meson.build"):
        text = build.read_text()
        for block in re.findall(r"install_sources\(\s*\[(.*?)\]", text, flags=re.S):
            rel = build.parent.relative_to(SRC)
            listed |= {str(rel / name) for name in re.findall(r"'([^']+\.py)'", block)}
    on_disk = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
               if "__pycache__" not in p.parts}
    assert on_disk - listed == set(), "add these to an install_sources list in meson.build"
    assert listed - on_disk == set(), "meson.build lists files that do not exist"


def test_bridges_all_built(source_tree):
    """Each .pyx under _kernels is an extension module in its meson.build."""
    build = (SRC / "_kernels" / "meson.build").read_text()
    names = set(re.findall(r"'(_\w+)'", re.search(r"foreach name : \[(.*?)\]", build, re.S).group(1)))
    pyx = {p.stem for p in (SRC / "_kernels").glob("*.pyx")}
    assert pyx == names


def _run(code):
    """Run code in a fresh interpreter (nothing imported yet) and return stdout."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_small_kmeans_fit_does_not_import_scipy():
    out = _run("""
        import sys
        import numpy as np
        from metriclust import KMeans
        X = np.random.default_rng(0).normal(size=(300, 4))
        km = KMeans(8, random_state=0).fit(X)
        print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'sklearn',
                                                                  'threadpoolctl')))
        from metriclust._kernels import _blas
        print(_blas.loaded())
        # Wide data takes the GEMM path: scipy's BLAS is loaded then, without
        # scipy.linalg's __init__ (_blas.scipy_capi).
        Xw = np.random.default_rng(1).normal(size=(300, 600))
        KMeans(8, random_state=0).fit(Xw)
        print('scipy.linalg.cython_blas' in sys.modules, _blas.loaded())
        print('scipy.linalg' in sys.modules)
        import scipy.linalg                      # still imports, and uses the same module
        from scipy.linalg import cython_blas
        print(cython_blas is sys.modules['scipy.linalg.cython_blas'])
    """)
    assert out.split("\n")[:5] == ["[]", "False", "True True", "False", "True"]


def test_public_modules_import_without_scipy():
    """No public module imports scipy on load, the metric learners included:
    scipy.linalg is imported by the fits that call LAPACK, on first use."""
    out = _run("""
        import sys
        import metriclust
        from metriclust import KMeans, ConstrainedKMeans, metrics, kernels, datasets
        from metriclust import MMC, CPCM, CPDUML
        print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn', 'matplotlib'}))
    """)
    assert out.strip() == "[]"


def test_metric_learners_import_scipy_only_when_fitting():
    """Importing MMC, CPCM and CPDUML and fitting a small KMeans loads no scipy;
    a CPCM fit then does (its whitening calls LAPACK), so the check can fail."""
    out = _run("""
        import sys
        import numpy as np
        import metriclust
        from metriclust import MMC, CPCM, CPDUML, KMeans
        X = np.random.default_rng(0).normal(size=(200, 3))
        KMeans(4, random_state=0).fit(X)
        print('scipy' in sys.modules)
        CPCM(2, n_init=2, random_state=0).fit(X)
        print('scipy.linalg' in sys.modules)
    """)
    assert out.split()[:2] == ["False", "True"]


def test_blas_trampolines_resolve_on_first_call():
    """Raw bridges called before anything loaded BLAS: the first GEMM/SYRK call
    (from inside the OpenMP region) resolves scipy's routine and the results
    agree with the direct paths and a numpy reference."""
    out = _run("""
        import sys
        import numpy as np
        from metriclust._kernels import _blas, _gram, _kmeans, _pairwise
        assert not _blas.loaded() and 'scipy' not in sys.modules
        rng = np.random.default_rng(0)
        for dtype in (np.float64, np.float32):
            X = rng.normal(size=(2000, 24)).astype(dtype)
            C = rng.normal(size=(7, 24)).astype(dtype)
            lg, dg = _kmeans.assign(X, C, method="gemm", n_threads=2)
            ld, dd = _kmeans.assign(X, C, method="direct", n_threads=2)
            assert (lg == ld).all()
            np.testing.assert_allclose(dg, dd, rtol=1e-3 if dtype == np.float32 else 1e-9,
                                       atol=1e-3 if dtype == np.float32 else 1e-9)
            G = _gram.gaussian_gram(X[:300], None, 3.0, n_threads=2)
            Gd = _gram.gaussian_gram(X[:300], None, 3.0, n_threads=2, use_blas=False)
            np.testing.assert_allclose(G, Gd, rtol=1e-4, atol=1e-5)
        X = rng.normal(size=(60, 16))
        pairs = np.array([[i, j] for i in range(60) for j in range(i + 1, 60, 7)], dtype=np.int64)
        a = rng.uniform(0.5, 2.0, size=16)
        h, grad, H = _pairwise.pairs_diag(X, pairs, a, n_threads=2)
        v = (X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2
        d = np.sqrt(v @ a)
        np.testing.assert_allclose(H, (v / (4 * d ** 3)[:, None]).T @ v, rtol=1e-10)
        print(_blas.loaded())
    """)
    assert out.strip() == "True"
