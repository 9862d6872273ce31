"""Runtime SIMD dispatch (csrc/dispatch.h): every ISA level's copy of the hot
kernels gives the same clustering.

The portable dispatcher (macOS, Windows and musl wheels; -Ddispatch=portable)
honours METRICLUST_MAX_SIMD, so on a wheel test runner these tests run the
AVX-512, AVX2 and baseline copies one after the other in fresh processes; the
target_clones build (manylinux) ignores the variable, and the tests check
that it does."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from metriclust._kernels import _kmeans

CHILD = r"""
import json, sys
import numpy as np
from metriclust._kernels import _gram, _kmeans
rng = np.random.default_rng(7)
out = {"level": _kmeans.simd_level()}
for dt in ("float64", "float32"):
    for d, K, method in ((2, 5, "small"), (7, 20, "tile"), (12, 40, "lanes"), (30, 9, "auto")):
        X = rng.standard_normal((2000, d)).astype(dt)
        C = np.ascontiguousarray(X[rng.choice(2000, K, replace=False)])
        labels, inertia, n_iter, _ = _kmeans.lloyd(X, None, C, 30, 0.0, method, 1)
        key = f"{dt}-{d}-{K}-{method}"
        out[key] = {"labels": labels.tolist(), "centers": C.astype(float).ravel().tolist(),
                    "inertia": inertia, "n_iter": n_iter}
    A = rng.standard_normal((150, 6)).astype(dt)
    out[f"gram-{dt}"] = _gram.gaussian_gram(A, A, 1.3, 1, False).astype(float).ravel().tolist()
print(json.dumps(out))
"""


def run_at(cap):
    env = dict(os.environ)
    env.pop("METRICLUST_MAX_SIMD", None)
    if cap is not None:
        env["METRICLUST_MAX_SIMD"] = str(cap)
    res = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=env, check=True, timeout=300)
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default_run():
    return run_at(None)


def test_level_is_a_known_one():
    assert _kmeans.simd_level() in (0, 1, 3, 4)


@pytest.mark.parametrize("cap", [3, 1])
def test_capped_level_gives_the_same_clustering(default_run, cap):
    capped = run_at(cap)
    top = default_run["level"]
    # Portable dispatch: the cap applies. Clones (ifunc) or one baseline
    # compile: the variable is ignored and the level stays.
    assert capped["level"] in (min(top, cap), top)
    if top >= 3:
        assert capped["level"] <= cap or capped["level"] == top
    for key, ref in default_run.items():
        if key == "level":
            continue
        got = capped[key]
        if key.startswith("gram"):
            # exp and FMA contraction differ in the last bits between ISAs.
            rtol = 1e-12 if "float64" in key else 2e-5
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)
            continue
        # Well-separated nearest centers: the labels are exact on every level,
        # so Lloyd follows the same path; the centers are means of the same sets.
        assert got["labels"] == ref["labels"], key
        assert got["n_iter"] == ref["n_iter"], key
        rtol = 1e-12 if "float64" in key else 1e-5
        np.testing.assert_allclose(got["centers"], ref["centers"], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(got["inertia"], ref["inertia"], rtol=rtol)


def test_cap_that_is_not_a_number_is_ignored(default_run):
    assert run_at("avx2")["level"] == default_run["level"]
