"""Setup shared by the Python tests. They test the installed `netsched`
package (`pip install .`, as scripts/test.sh does): python/ on sys.path (pytest
started from python/, or PYTHONPATH=python) would shadow it with the source
tree, which has no compiled `_native` module. It is taken off here, before any
test module imports netsched, and so for the Dask worker processes the tests
spawn too: they inherit sys.path as it is when they start."""
import copy
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_TREE = REPO_ROOT / "python"

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != SOURCE_TREE]

# Four nodes of four executors: a pull run of 3,000 tasks takes tens of
# milliseconds (Draconis, fixed 100 µs tasks at load 0.6).
PULL_TINY = {
    "seed": 2,
    "policy": "draconis",
    "cluster": {"nodes": 4, "executors_per_node": 4},
    "workload": {"service": {"kind": "fixed", "value_us": 100.0}, "load": 0.6, "tasks": 3000},
}


@pytest.fixture
def repo_root():
    return REPO_ROOT


@pytest.fixture
def pull_tiny():
    """A small pull-simulator config; each test gets its own copy."""
    return copy.deepcopy(PULL_TINY)


@pytest.fixture
def stable():
    """Compares runs without their wall-clock column, the one column that
    differs between two runs of the same config."""
    def without_wall_clock(df):
        return df.drop(columns=[c for c in df.columns if c == "wall_s"]).reset_index(drop=True)

    return without_wall_clock
