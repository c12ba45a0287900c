import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import draconis_plot  # noqa: E402


def test_plot_writes_png(tmp_path):
    p = tmp_path / "runs.csv"
    with open(p, "w") as f:
        f.write("policy,load,offered_tps,p50_us,p99_us\n")
        f.write("draconis,0.5,1,4.5,9.0\ndraconis,0.9,1,7.5,100\nr2p2,0.5,1,4,4\n")
    out = tmp_path / "p99.png"
    assert draconis_plot.main(["x", str(p), str(out)]) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_usage_on_bad_args():
    assert draconis_plot.main(["x"]) == 2
