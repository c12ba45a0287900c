import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import netsched_plot  # noqa: E402


def write_csv(path, rows):
    with open(path, "w") as f:
        f.write("policy,load,p50_us,p99_us\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")


def test_reads_series_sorted_by_load(tmp_path):
    p = tmp_path / "runs.csv"
    write_csv(p, [("horus", 0.9, 60, 900), ("horus", 0.5, 50, 500), ("rs-h", 0.5, 55, 700)])
    series = netsched_plot.read_runs(p)
    assert series["horus"] == [(0.5, 500.0), (0.9, 900.0)]
    assert series["rs-h"] == [(0.5, 700.0)]


def test_plot_writes_png(tmp_path):
    p = tmp_path / "runs.csv"
    write_csv(p, [("horus", 0.5, 50, 500), ("horus", 0.9, 60, 900)])
    out = tmp_path / "p99.png"
    assert netsched_plot.main(["x", str(p), str(out)]) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_missing_column_is_a_clear_error(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text("policy,load\nhorus,0.5\n")
    with pytest.raises(ValueError, match="p99_us"):
        netsched_plot.read_runs(p)
