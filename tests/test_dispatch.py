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


WIDE_CHILD = r"""
import json, sys
import numpy as np
from metriclust._kernels import _kmeans
rng = np.random.default_rng(11)
used, ratio = _kmeans.wide_vectors()
out = {"used": used, "ratio": ratio, "level": _kmeans.simd_level()}
# Every form of the centers-across-lanes kernels: one vector of centers (the
# labels and the sums in one pass), one block of 2 or 4 vectors, several
# blocks, the float32 screen (float64, d >= 32), the pruned passes' form, the
# assignment alone; integer grids with duplicated centers (exact ties) and
# weights, and Gaussian data.
shapes = [(d, K) for d in (9, 16, 20, 33, 64, 130)
          for K in (3, 8, 9, 16, 17, 33, 64, 100, 256)]
# d <= 8: 512-bit lanes take K >= 32 from the small-d kernel.
shapes += [(d, K) for d in (2, 3, 5, 8) for K in (16, 32, 64)]
for dt in ("float64", "float32"):
    for d, K in shapes:
        for grid in (True, False):
            if grid:
                X = rng.integers(-3, 4, size=(1537, d)).astype(dt)
                X += (4 * rng.integers(0, 3, size=(len(X), 1))).astype(dt)
                w = rng.integers(1, 4, size=len(X)).astype(dt)
            else:
                X = rng.standard_normal((1537, d)).astype(dt)
                w = None
            init = X[rng.choice(len(X), K, replace=False)].copy()
            if grid:
                init[1::3] = init[::3][: len(init[1::3])]
            res = []
            for fit, method in ((_kmeans.lloyd, "auto"), (_kmeans.lloyd, "lanes"),
                                (_kmeans.hamerly, "auto")):
                C = init.copy()
                labels, inertia, n_iter, _ = fit(X, w, C, 4, 0.0, method, 2)
                res.append([labels.tobytes().hex(), C.tobytes().hex(),
                            float(inertia).hex(), n_iter])
            lab, dist = _kmeans.assign(X, init)[:2]
            res.append([lab.tobytes().hex(), dist.tobytes().hex()])
            out[f"{dt}-{d}-{K}-{grid}"] = res
print(json.dumps(out))
"""


def run_wide(value):
    env = dict(os.environ)
    env.pop("METRICLUST_WIDE_VECTORS", None)
    if value is not None:
        env["METRICLUST_WIDE_VECTORS"] = value
    res = subprocess.run([sys.executable, "-c", WIDE_CHILD], capture_output=True, text=True,
                         env=env, check=True, timeout=600)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_lanes_kernels_same_bits_at_either_vector_width():
    """The lanes kernels run 64- or 32-byte vectors on the AVX-512 level, as a
    timing probe of the CPU's 512-bit FMA rate decides (csrc/dispatch.c,
    ml_wide_vectors); METRICLUST_WIDE_VECTORS=0 / 1 overrides it. The width
    is a matter of speed only: labels, centers, inertia, n_iter, distances
    and the pruned fits are the same bits at both (each center keeps its own
    lane, its terms summed in the same order, ties to the lowest index), and
    so are they where the width moves d <= 8, K >= 32 from the small-d
    kernel to the lanes kernel."""
    narrow, wide = run_wide("0"), run_wide("1")
    assert narrow["used"] is False and narrow["ratio"] == -1.0
    assert wide["used"] is (wide["level"] >= 4) and wide["ratio"] == -1.0
    keys = [k for k in narrow if k not in ("used", "ratio", "level")]
    assert len(keys) == 2 * (6 * 9 + 4 * 3) * 2
    for key in keys:
        assert wide[key] == narrow[key], key


def test_wide_vectors_probe_and_its_override():
    """Unset (or set to anything but 0 / 1), the CPU is timed once where it
    runs AVX-512, and the ratio it measured decides (below
    ML_WIDE_VECTORS_MAX_RATIO = 1.5: 512-bit)."""
    used, ratio = _kmeans.wide_vectors()
    if os.environ.get("METRICLUST_WIDE_VECTORS") in ("0", "1"):
        pytest.skip("METRICLUST_WIDE_VECTORS is set for this run")
    top = _kmeans.simd_level()
    if top < 4:
        assert used is False
        return
    # The C probe ran (clones, or the portable dispatcher's AVX-512 copy).
    assert ratio > 0 and used is (ratio < 1.5)
    for value in (None, "2", "yes"):
        env = dict(os.environ)
        env.pop("METRICLUST_WIDE_VECTORS", None)
        if value is not None:
            env["METRICLUST_WIDE_VECTORS"] = value
        res = subprocess.run(
            [sys.executable, "-c",
             "from metriclust._kernels import _kmeans; print(*_kmeans.wide_vectors())"],
            capture_output=True, text=True, env=env, check=True, timeout=120)
        got_used, got_ratio = res.stdout.split()
        assert float(got_ratio) > 0 and (got_used == "True") is (float(got_ratio) < 1.5)
