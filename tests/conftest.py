import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The shared numpy references (tests/_reference.py) are imported by name; under
# --import-mode=importlib the tests folder is not on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# ../shared/data beside the project root (see shared/data/README.md).
_DATA_DIR = Path(os.environ.get("METRICLUST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir():
    if not _DATA_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"benchmark data not found at {_DATA_DIR}")
        pytest.skip(f"benchmark data not found at {_DATA_DIR}")
    return _DATA_DIR


@pytest.fixture(scope="session")
def load_dataset(data_dir):
    """Load ../shared/data/NAME.csv as (X float64, y int)."""

    def load(name):
        raw = np.loadtxt(data_dir / f"{name}.csv", delimiter=",", skiprows=1)
        return np.ascontiguousarray(raw[:, :-1]), raw[:, -1].astype(np.int64)

    return load


# Hypothesis profiles for tests/test_properties.py: "ci" (the default, 25
# examples per test, fixed seed: well under a minute), "medium" (200) and
# "long" (1000), e.g. pytest --hypothesis-profile=long.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the property suite skips itself
    pass
else:
    _slow_ok = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                              database=None, suppress_health_check=_slow_ok,
                              print_blob=True)
    settings.register_profile("medium", max_examples=200, deadline=None, database=None,
                              suppress_health_check=_slow_ok, print_blob=True)
    settings.register_profile("long", max_examples=1000, deadline=None, database=None,
                              suppress_health_check=_slow_ok, print_blob=True)
    settings.load_profile(os.environ.get("METRICLUST_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def client():
    """A real distributed.LocalCluster (2 worker processes, 1 thread each) and its
    client, for the Dask tests of one module; closed after them."""
    import logging

    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
