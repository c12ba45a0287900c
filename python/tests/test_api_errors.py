"""The Python API's errors say what is wrong and where: a refused config is a
`ConfigError` (a ValueError) with its key path, a missing file a
FileNotFoundError, a bad argument a ValueError or TypeError naming it, and a
config of another simulator names the function that runs it. The Python CLI
ends quietly when its reader closes the pipe."""
import inspect
import subprocess
import sys

import pytest

import netsched
from netsched import api

SMALL = {
    "seed": 1, "policy": "horus",
    "topology": {"kind": "fat-tree", "radix": 4, "cores_per_server": 8},
    "placement": {"sizes": [20, 10]},
    "workload": {"service": {"kind": "preset", "name": "bimodal"}, "load": 0.7,
                 "tasks_per_worker": 5},
}


def test_config_error_is_a_value_error_with_the_key_path(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(api.to_toml(dict(SMALL, workload=dict(SMALL["workload"], load=1.5)))[0])
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim(bad)
    assert isinstance(e.value, ValueError)
    assert e.value.key == "workload.load"
    assert e.value.file == str(bad)
    assert str(e.value) == f"{bad}: workload.load: load must be in (0, 1], got 1.5"
    # A dict: the key path, no line of the TOML the user never saw.
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim(dict(SMALL, topology=dict(SMALL["topology"], cores_per_servr=8)))
    assert e.value.key == "topology.cores_per_servr"
    assert e.value.line is None
    # TOML text: the line.
    text = api.to_toml(SMALL)[0].replace("radix = 4", "radix = 4\nbogus = 1")
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim(text)
    assert e.value.key == "topology.bogus" and isinstance(e.value.line, int), e.value


def test_a_capacity_error_found_before_the_run_names_its_key_and_file(tmp_path):
    p = tmp_path / "big.toml"
    p.write_text(api.to_toml(dict(SMALL, placement={"pools": 100000}))[0])
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim(p, threads=1)
    assert e.value.key == "placement", e.value
    assert str(e.value).startswith(f"{p}: placement: 100000 pools need"), e.value


def test_a_missing_file_is_file_not_found(tmp_path):
    for fn in (netsched.run_sim, netsched.run_pull, netsched.run_flowsim, netsched.placement):
        with pytest.raises(FileNotFoundError, match="nope.toml"):
            fn(tmp_path / "nope.toml")
        with pytest.raises(FileNotFoundError):
            fn(str(tmp_path / "nope.toml"))


@pytest.mark.parametrize("threads,exc,match", [
    (-1, ValueError, "threads must be >= 0"),
    (1.5, TypeError, "threads must be an int"),
    ("2", TypeError, "threads must be an int"),
    (True, TypeError, "threads must be an int"),
])
def test_bad_arguments_are_named(threads, exc, match):
    with pytest.raises(exc, match=match):
        netsched.run_sim(SMALL, threads=threads)


def test_bad_progress_and_kind_arguments_are_named():
    with pytest.raises(TypeError, match="progress must be a bool"):
        netsched.run_sim(SMALL, progress="yes")
    with pytest.raises(ValueError, match="unknown simulator kind `push`"):
        netsched.canonical_config(SMALL, kind="push")
    with pytest.raises(TypeError, match="config must be"):
        netsched.run_sim(42)


def test_a_config_of_another_simulator_names_its_function(repo_root, pull_tiny):
    with pytest.raises(netsched.ConfigError, match=r"this is a pull config: use netsched.run_pull"):
        netsched.run_sim(pull_tiny)
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim(repo_root / "experiments" / "draconis.toml")
    assert e.value.hint == "this is a pull config: use netsched.run_pull"
    with pytest.raises(netsched.ConfigError, match="use netsched.run_flowsim"):
        netsched.run_pull(repo_root / "experiments" / "baraat-fig12.toml")
    with pytest.raises(netsched.ConfigError, match="use netsched.run_sim"):
        netsched.run_flowsim(repo_root / "experiments" / "main.toml")
    # A config that is no simulator's gets no hint.
    with pytest.raises(netsched.ConfigError) as e:
        netsched.run_sim({"nonsense": 1})
    assert e.value.hint is None


def test_public_functions_document_arguments_returns_and_an_example():
    for fn in (api.run_sim, api.run_pull, api.run_flowsim, api.placement,
               api.canonical_config, api.to_toml):
        doc = inspect.getdoc(fn) or ""
        for section in ("Args:", "Returns:", "Raises:", "Example:"):
            assert section in doc, f"{fn.__name__}: no {section}"
    mod = inspect.getdoc(netsched) or ""
    for system in ("Horus", "RackSched", "Draconis", "Baraat"):
        assert system in mod, system


def test_experiment_list_into_a_closed_pipe_exits_0():
    # `python3 -m netsched experiment list | head -1`, with the shell's pipe.
    r = subprocess.run(f"set -o pipefail; {sys.executable} -m netsched experiment list | head -1",
                       shell=True, executable="/bin/bash", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("name"), r.stdout
    assert "Broken pipe" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    # A reader gone before the first byte: same.
    p = subprocess.Popen([sys.executable, "-m", "netsched", "experiment", "list"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert b"Broken pipe" not in err and b"Traceback" not in err, err
