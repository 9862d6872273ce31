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
