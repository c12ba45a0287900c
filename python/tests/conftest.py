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


def _claim(entry, key, kind, verdict, **kw):
    c = {"entry": entry, "paper": "Horus (NSDI'24)", "figure": "Fig. 11(a)", "key": key,
         "statement": f"{key}: Horus's p99 is below RS-H's", "kind": kind,
         "paper_value": 38.0, "paper_text": "38 %",
         "ours": {"mean": 36.1, "ci95": 2.3, "n": 5, "per_seed": [36.0] * 5, "text": "36 %"},
         "tolerance": "within 15 points", "verdict": verdict, "attribution": [],
         "scale": "reduced", "seeds": 5, "scale_note": ""}
    c.update(kw)
    return c


def write_report_results(root: Path) -> list:
    """A results directory as `experiment run` writes it (CLAIMS-API's
    schema): two entries, plots of three panels, every verdict, a data table
    far wider than a phone, a sensitivity row; returns every claim."""
    import json

    import pandas as pd

    from netsched.catalog.base import lines

    root.mkdir(parents=True, exist_ok=True)
    e1, e2 = "horus-fig11", "horus-fig2"
    attr = [{"changed": "the leaf's idle threshold (1 instead of 0)",
             "command": "python3 -m netsched experiment run horus-fig11 --ablation idle-threshold",
             "result": "ours 27 % -> 36 % (paper 38 %)", "moves_to": "agrees"}]
    claims = {
        e1: [_claim(e1, "fig11a-p99-horus-vs-rsh", "numeric", "agrees"),
             _claim(e1, "fig11b-p99", "numeric", "differs", attribution=attr),
             _claim(e1, "fig11c-p99", "numeric", "unexplained"),
             _claim(e1, "fig11-order", "shape", "unresolved", paper_value="Horus < RS-H",
                    paper_text="Horus < RS-H", ours={"mean": 3.0, "ci95": 9.0, "n": 2,
                                                     "per_seed": [1, 5]},
                    scale_note="2 seeds: CI's reduced run"),
             _claim(e1, "fig11-order-sim", "shape", "agrees", section="sensitivity"),
             _claim(e1, "link-delay", "calibration", "calibration", note="fitted to Fig. 5a")],
        e2: [_claim(e2, "fig2-knee", "shape", "agrees", figure="Fig. 2"),
             _claim(e2, "memcached-rate", "not-reproducible", "not-reproducible", ours=None,
                    missing="stock memcached's UDP has no field for the rate header")],
    }
    wide = "| " + " | ".join(f"column_{i}_p99_us" for i in range(30)) + " |\n"
    wide += "|" + "---|" * 30 + "\n"
    wide += "| " + " | ".join(f"{1234567.0 + i:,.0f}" for i in range(30)) + " |\n"
    t = pd.DataFrame([{"service": s, "policy": p, "load": l, "p99_us": 100 * l * (i + 1)}
                      for s in ("exp100", "bimodal", "trimodal")
                      for i, p in enumerate(("horus", "rs-h")) for l in (0.5, 0.7, 0.9)])
    for name in (e1, e2):
        lines(t, str(root / f"{name}.png"), "load", "p99_us", panel="service",
              ylabel="p99 response time (µs)")
        (root / f"{name}.json").write_text(json.dumps(
            {"name": name, "scale": "reduced", "claims": claims[name]}, indent=1))
        (root / f"{name}.md").write_text(
            f"# {name}: Horus (NSDI'24) Fig. 11\n\n**A title.** Setup paragraph with "
            "`horus (horus-sim)` and a long word: responsiveness.\n\n"
            f"![{name}]({name}.png)\n\n## The paper's numbers beside ours\n\n"
            "| paper states | paper | ours | tolerance | verdict |\n|---|---|---|---|---|\n"
            "| s | 1 | 2 | t | **differs** |\n\n1 of 2 checked claims within tolerance.\n\n"
            "## Which Horus produced the paper's figure\n\n| load | horus p50 (µs) | p99_us |\n"
            "|---|---|---|\n| 0.5 | 502 | 1,009 |\n\n## Data\n\n" + wide)
    (root / f"{e1}-b.png").write_bytes((root / f"{e1}.png").read_bytes())
    return claims[e1] + claims[e2]


@pytest.fixture
def report_results(tmp_path):
    """(results directory, its claims) from `write_report_results`."""
    root = tmp_path / "results"
    return root, write_report_results(root)
