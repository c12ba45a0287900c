"""The installed package as a typed library: py.typed, a stub that covers the
compiled module exactly, dict configs whose errors name the key path, ids as
nullable integers, and catalog names with suggestions."""
import inspect
from importlib import resources

import pytest

import netsched
from netsched import _native


def test_the_package_is_typed_and_the_stub_matches_the_native_module():
    files = resources.files("netsched")
    assert files.joinpath("py.typed").is_file()
    stub = files.joinpath("_native.pyi").read_text()
    exported = {n for n in dir(_native) if not n.startswith("_")}
    stubbed = {line.split("(")[0][4:] for line in stub.splitlines() if line.startswith("def ")}
    assert exported == stubbed, f"native only: {exported - stubbed}; stub only: {stubbed - exported}"


def test_a_dict_config_error_names_the_key_path_not_a_generated_line():
    with pytest.raises(ValueError) as e:
        netsched.run_sim({"policy": "horus", "seed": 1,
                          "topology": {"kind": "fat-tree", "radix": 4, "cores_per_servr": 8}})
    msg = str(e.value)
    assert msg.startswith("topology.cores_per_servr: unknown field"), msg
    assert "line" not in msg


def test_unknown_experiment_suggests_the_closest_names():
    with pytest.raises(ValueError, match="did you mean `horus-fig18`"):
        netsched.catalog.get("horus-fig1")


def test_ids_are_nullable_integers():
    from netsched.api import _csv

    df = _csv("pool_id,p99_us\n,1.5\n3,2.0\n")
    assert str(df["pool_id"].dtype) == "Int64"
    assert df["pool_id"].isna().tolist() == [True, False] and df["pool_id"][1] == 3


def test_run_experiment_returns_a_dataclass():
    from netsched.experiment import ExperimentResult

    fields = {f for f in inspect.signature(ExperimentResult).parameters}
    assert {"table", "runs", "pools", "claims", "files"} <= fields


def test_cache_prune_removes_other_builds_and_keeps_this_one(tmp_path):
    import json

    from netsched import sweep

    def entry(key, build, done=True):
        d = tmp_path / key[:2] / key
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"kind": "sim", "config": {}, "build": build}))
        (d / "runs.csv").write_text("a\n1\n")
        if done:
            (d / "done").write_text("")
        return d

    mine = entry("aa11", sweep.build_id())
    old = entry("aa22", "0000000000000000")
    half = entry("bb33", sweep.build_id(), done=False)
    st = sweep.prune_cache(tmp_path, dry_run=True)
    assert (st.entries, st.removed) == (1, 2) and old.exists()
    st = sweep.prune_cache(tmp_path)
    assert (st.entries, st.removed) == (1, 2)
    assert mine.exists() and not old.exists() and not half.exists()
    assert sweep.prune_cache(tmp_path, everything=True).removed == 1 and not mine.exists()


def test_experiment_list_is_aligned_in_natural_order_with_paper_scale_times(capsys):
    from netsched.catalog.walltimes import PAPER_WALL
    from netsched.cli import main

    # Family members (`comparison+pow3-idle`) join the registry when first
    # asked for, by another test perhaps; their wall time is their base's.
    entries = {n for n in netsched.catalog.REGISTRY if "+" not in n}
    assert set(PAPER_WALL) == entries
    assert main(["experiment", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [ln.split()[0] for ln in lines[1:]]
    assert names.index("horus-fig2") < names.index("horus-fig10") < names.index("horus-fig19b")
    col = lines[0].index("paper-scale wall")
    assert all(ln[col - 2:col] == "  " for ln in lines)  # one column edge for every row
    assert any("1 h 37 min 25 s" in ln for ln in lines if ln.startswith("horus-fig12a"))


def test_a_rebuild_at_the_same_commit_hits_the_cache(monkeypatch, tmp_path, pull_tiny):
    """Issue 20 item 5: the cache key names netsched's version and commit
    (and uncommitted changes under crates/), not the library's bytes."""
    from netsched import _native, sweep

    version, commit = _native.build_info()
    point = sweep.Point({}, pull_tiny, "pull")
    sweep.build_id.cache_clear()
    key = point.key()
    assert sweep.build_id().startswith(f"{version}+{commit[:12]}")
    # A rebuild of the same commit: another library file, same key.
    rebuilt = tmp_path / "_native.abi3.so"
    rebuilt.write_bytes(b"another build of the same commit")
    monkeypatch.setattr(_native, "__file__", str(rebuilt))
    sweep.build_id.cache_clear()
    assert point.key() == key
    # An uncommitted edit under crates/, then another commit: fresh keys.
    monkeypatch.setattr(_native, "source_tree", lambda: "0123456789abcdef", raising=False)
    sweep.build_id.cache_clear()
    dirty = point.key()
    assert dirty != key and "+dirty.0123456789ab" in sweep.build_id()
    monkeypatch.setattr(_native, "source_tree", lambda: "clean", raising=False)
    monkeypatch.setattr(_native, "build_info", lambda: (version, "f" * 40))
    sweep.build_id.cache_clear()
    assert point.key() not in (key, dirty)
    sweep.build_id.cache_clear()
