"""`netsched.plots` and `python3 -m netsched plot`: p99 against load from the
CSV files `netsched sim`, `netsched pull` and `netsched bench nginx` write."""
import os
import subprocess
import sys
import textwrap

import pytest

from netsched import cli, plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_runs(path, rows):
    with open(path, "w") as f:
        f.write("policy,load,offered_tps,p50_us,p99_us\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")


def test_reads_series_sorted_by_load(tmp_path):
    p = tmp_path / "runs.csv"
    write_runs(p, [("horus", 0.9, 1, 60, 900), ("horus", 0.5, 1, 50, 500), ("rs-h", 0.5, 1, 55, 700)])
    series = plots.read_runs(p)
    assert series["horus"] == [(0.5, 500.0), (0.9, 900.0)]
    assert series["rs-h"] == [(0.5, 700.0)]


@pytest.mark.parametrize("kind, vocabulary", [("sim", "push"), ("pull", "pull")])
def test_every_styled_series_is_a_policy_of_its_simulator(kind, vocabulary):
    """A style keyed by a name the simulator no longer writes (a renamed
    policy) silently loses its colour and marker."""
    from netsched import _native
    names = set(_native.policy_names()[vocabulary])
    assert set(plots.FIGURES[kind].style) <= names, set(plots.FIGURES[kind].style) - names


@pytest.mark.parametrize("kind", ["sim", "pull"])
def test_plot_writes_png(tmp_path, kind):
    p = tmp_path / "runs.csv"
    write_runs(p, [("draconis", 0.5, 1, 4.5, 9.0), ("draconis", 0.9, 1, 7.5, 100), ("r2p2", 0.5, 1, 4, 4)])
    out = tmp_path / "p99.png"
    assert cli.main(["plot", kind, str(p), str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_missing_column_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "runs.csv"
    p.write_text("policy,load\nhorus,0.5\n")
    with pytest.raises(ValueError, match="p99_us"):
        plots.read_runs(p)
    assert cli.main(["plot", "sim", str(p), str(tmp_path / "x.png")]) == 1
    assert capsys.readouterr().err == f"error: {p}: missing columns ['p99_us']\n"
    assert not (tmp_path / "x.png").exists()


def test_a_missing_file_is_a_one_line_error(tmp_path, capsys):
    assert cli.main(["plot", "pull", str(tmp_path / "nope.csv"), str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope.csv" in err and err.count("\n") == 1


def test_usage_on_bad_args():
    with pytest.raises(SystemExit) as e:
        cli.main(["plot", "sim"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        cli.main(["plot", "nope", "a.csv", "b.png"])
    assert e.value.code == 2


def test_nginx_rows_are_medians_over_rounds_in_ms(tmp_path, capsys):
    p = tmp_path / "rows.csv"
    # `netsched bench nginx --csv`'s header (crates/cli/src/node.rs).
    header = "round,setup,load,rate,submitted,completed,failed,timed_out,p50_us,p99_us,p999_us\n"
    rounds = [(1, "horus", 0.5, 100, 3000), (2, "horus", 0.5, 120, 1000), (3, "horus", 0.5, 110, 2000),
              (1, "nginx", 0.5, 200, 9000), (1, "horus", 0.3, 90, 800)]
    p.write_text(header + "".join(f"{r},{s},{load},1000,10,10,0,0,{p50},{p99},{p99 * 2}\n"
                                  for r, s, load, p50, p99 in rounds))
    assert plots.nginx_medians(p) == {"horus": [(0.3, 90.0, 800.0), (0.5, 110.0, 2000.0)],
                                      "nginx": [(0.5, 200.0, 9000.0)]}
    out = tmp_path / "p99.png"
    assert cli.main(["plot", "nginx", str(p), str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert capsys.readouterr().out == "horus 0.30:0.8ms 0.50:2.0ms\nnginx 0.50:9.0ms\n"


def test_module_cli_plots_from_the_source_tree_without_the_compiled_module(tmp_path, repo_root):
    """The shell scripts run `python3 -m netsched plot` with PYTHONPATH=python,
    before (or without) `pip install .`: nothing on that path may import the
    compiled `_native`."""
    p = tmp_path / "runs.csv"
    write_runs(p, [("horus", 0.5, 1, 50, 500), ("horus", 0.9, 1, 60, 900)])
    out = tmp_path / "p99.png"
    probe = textwrap.dedent("""
        import runpy, sys
        csv, png, source_tree = sys.argv[1:]
        sys.argv = ["netsched", "plot", "sim", csv, png]
        try:
            runpy.run_module("netsched", run_name="__main__")
        finally:
            assert sys.modules["netsched"].__file__.startswith(source_tree), "not the source tree"
            assert "netsched._native" not in sys.modules, "loaded the compiled module"
    """)
    env = dict(os.environ, PYTHONPATH=str(repo_root / "python"))
    r = subprocess.run([sys.executable, "-c", probe, str(p), str(out), str(repo_root / "python")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "horus 0.50:500.0us 0.90:900.0us\n"
    assert out.read_bytes()[:8] == PNG_MAGIC
