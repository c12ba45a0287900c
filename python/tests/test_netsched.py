"""The netsched Python package: the PyO3 API, cached Dask sweeps, the
catalog machinery and the HTML report. Needs the package installed
(`pip install .`, as scripts/test.sh does)."""
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

import netsched
from netsched import sweep

SMALL = {
    "policy": "horus",
    "topology": {"kind": "testbed-uniform"},
    "placement": {"sizes": [32], "mode": "colocated"},
    "workload": {"service": {"kind": "preset", "name": "bimodal"}, "load": 0.7, "tasks_per_worker": 200},
}

SMALL_TOML = """
policy = "horus"
topology = { kind = "testbed-uniform" }
[placement]
sizes = [32]
mode = "colocated"
[workload]
service = { kind = "preset", name = "bimodal" }
load = 0.7
tasks_per_worker = 200
"""


def test_dict_text_and_path_give_the_same_results(tmp_path, stable):
    p = tmp_path / "small.toml"
    p.write_text(SMALL_TOML)
    a = netsched.run_sim(SMALL)
    b = netsched.run_sim(SMALL_TOML)
    c = netsched.run_sim(str(p))
    assert list(a.runs["policy"]) == ["horus"]
    assert a.runs.loc[0, "completed"] > 1000
    assert a.runs.loc[0, "p99_us"] > a.runs.loc[0, "p50_us"] > 0
    assert len(a.pools) == 1 and a.pools.loc[0, "workers"] == 32
    assert a.summary["runs"][0]["policy"] == "horus"
    for other in (b, c):
        assert stable(a.runs).equals(stable(other.runs))
        assert stable(a.pools).equals(stable(other.pools))


def test_sweep_in_config_gives_one_row_per_run_and_threads_do_not_matter(stable):
    cfg = dict(SMALL, sweep={"policies": ["horus", "random"], "loads": [0.5, 0.9]})
    one = netsched.run_sim(cfg, threads=1)
    two = netsched.run_sim(cfg, threads=2)
    assert sorted(zip(one.runs.policy, one.runs.load)) == [
        ("horus", 0.5), ("horus", 0.9), ("random", 0.5), ("random", 0.9)]
    assert stable(one.runs).equals(stable(two.runs))
    # Random dispatch is worse than Horus at high load: the results are real runs.
    hi = one.runs[one.runs.load == 0.9].set_index("policy")
    assert hi.loc["random", "p99_us"] > hi.loc["horus", "p99_us"]


def cli_error(repo_root, config_path):
    exe = repo_root / "target" / "debug" / "netsched"
    if not exe.exists():
        return None
    r = subprocess.run([str(exe), "check", str(config_path)], capture_output=True, text=True)
    assert r.returncode != 0
    return r.stderr.strip().removeprefix("error: ")


def test_bad_config_raises_value_error_with_the_cli_message(tmp_path, repo_root):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL_TOML.replace("load = 0.7", "load = 1.5"))
    with pytest.raises(ValueError) as e:
        netsched.run_sim(str(bad))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == f"{bad}: workload.load: load must be in (0, 1], got 1.5"
    expected = cli_error(repo_root, bad)
    if expected is not None:
        assert msg == expected
    with pytest.raises(ValueError, match="unknown variant `nope`"):
        netsched.run_sim(dict(SMALL, policy="nope"))
    with pytest.raises(FileNotFoundError, match="no-such.toml"):
        netsched.run_sim(str(tmp_path / "no-such.toml"))


def test_flowsim_api(repo_root):
    text = (repo_root / "experiments" / "baraat.toml").read_text()
    cfg = text.replace("tasks = 10000", "tasks = 200").replace("pods = 30", "pods = 4")
    cfg = cfg.replace('policies = ["fair", "pfabric", "orchestra", "stf", "baraat"]', 'policies = ["fair", "baraat"]')
    r = netsched.run_flowsim(cfg)
    assert len(r.runs) == 2
    assert len(r.tasks) == 400
    with pytest.raises(ValueError, match="policies|policy"):
        netsched.run_flowsim(cfg.replace('"fair"', '"nope"'))


def small_grid():
    return sweep.grid(SMALL, policy=["horus", "rs-h"], load=[0.5, 0.9], seed=[1, 2])


def test_dask_local_cluster_sweep_equals_serial(tmp_path, stable):
    from dask.distributed import Client, LocalCluster

    # Fail instead of hanging if a worker process cannot start or import netsched.
    signal.alarm(240)
    serial = sweep.run_points(small_grid(), cache_dir=tmp_path / "a", serial=True, progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            dist = sweep.run_points(small_grid(), cache_dir=tmp_path / "b", client=client, progress=False)
    signal.alarm(0)
    assert serial.computed == dist.computed == 8
    assert len(serial.runs) == 8
    assert stable(serial.runs).equals(stable(dist.runs))
    assert stable(serial.pools).equals(stable(dist.pools))
    # Different seeds are different runs.
    s = serial.runs
    a = s[(s.policy == "horus") & (s.load == 0.9)]
    assert a.p99_us.nunique() == 2


def test_remote_dask_cluster_by_address_returns_results_to_the_driver_cache(
        tmp_path, monkeypatch, stable, pull_tiny):
    """A cluster reached by its scheduler address may share no filesystem
    with the driver: workers must only compute, and the driver must key and
    write every cache entry (in a directory the workers are never told of)."""
    from dask.distributed import LocalCluster

    sim_points = small_grid()[:4]
    pull_points = sweep.grid(pull_tiny, kind="pull", policy=["draconis", "r2p2-recirc"], load=[0.5, 0.8])
    signal.alarm(240)
    serial_sim = sweep.run_points(sim_points, cache_dir=tmp_path / "serial", serial=True, progress=False)
    serial_pull = sweep.run_points(pull_points, cache_dir=tmp_path / "serial", serial=True, progress=False)
    stored = []
    real_store = sweep.store_point
    monkeypatch.setattr(sweep, "store_point",
                        lambda cache, key, p, r: (stored.append(key), real_store(cache, key, p, r)))
    cache = tmp_path / "driver-only"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dist_sim = sweep.run_points(sim_points, cache_dir=cache, scheduler=cluster.scheduler_address,
                                    progress=False)
        dist_pull = sweep.run_points(pull_points, cache_dir=cache, scheduler=cluster.scheduler_address,
                                     progress=False)
    signal.alarm(0)
    keys = {p.key() for p in sim_points + pull_points}
    # Every entry was written by this process (the workers run in others).
    assert sorted(stored) == sorted(keys)
    assert {e.name for d in cache.iterdir() for e in d.iterdir()} == keys
    assert dist_sim.computed == 4 and dist_pull.computed == 4
    assert stable(serial_sim.runs).equals(stable(dist_sim.runs))
    assert stable(serial_sim.pools).equals(stable(dist_sim.pools))
    assert stable(serial_pull.runs).equals(stable(dist_pull.runs))
    assert stable(serial_pull.pools).equals(stable(dist_pull.pools))
    # A rerun against the driver's cache computes nothing (no cluster needed).
    again = sweep.run_points(sim_points + pull_points, cache_dir=cache, serial=True, progress=False)
    assert (again.computed, again.cached) == (0, 8)


def test_results_of_another_simulator_build_are_not_cached(tmp_path):
    p = small_grid()[0]
    r = sweep.run_point(p)
    with pytest.raises(ValueError, match="same netsched wheel"):
        sweep.store_point(tmp_path, p.key(), p, sweep.PointResult(r.runs, r.second, r.summary, "0" * 16))
    assert not sweep.cached(tmp_path, p.key())


def test_cache_second_run_computes_nothing(tmp_path, stable):
    first = sweep.run_points(small_grid()[:3], cache_dir=tmp_path, serial=True, progress=False)
    assert (first.computed, first.cached) == (3, 0)
    again = sweep.run_points(small_grid(), cache_dir=tmp_path, serial=True, progress=False)
    assert (again.computed, again.cached) == (5, 3)
    third = sweep.run_points(small_grid(), cache_dir=tmp_path, serial=True, progress=False)
    assert (third.computed, third.cached) == (0, 8)
    assert stable(again.runs).equals(stable(third.runs))
    # The key is the canonical config: spelled-out defaults and `threads` hit the same entry.
    p = small_grid()[0]
    spelled = sweep.Point(p.labels, dict(p.config, threads=2, network={"loss": 1e-5}))
    assert spelled.key() == p.key()
    assert sweep.Point(p.labels, dict(p.config, seed=99)).key() != p.key()


def test_experiment_writes_csv_plot_page_and_report(tmp_path):
    from netsched import catalog
    from netsched.catalog.base import Ablation, Experiment, PaperPoint, lines, numeric, shape
    from netsched.experiment import run_experiment
    from netsched.report import build_site

    name = "test-tiny"
    catalog.REGISTRY.pop(name, None)
    def table(runs, pools):
        return runs[["policy", "load", "p99_us"]]

    def claims(t):
        p = t.set_index(["policy", "load"])["p99_us"]
        return [shape("horus-beats-random", "horus beats random at 0.9",
                      float(p[("random", 0.9)] - p[("horus", 0.9)]), paper_text="lower"),
                # A paper value far from ours: differs over seeds.
                numeric("horus-p99", "horus p99 is 5 µs at 0.9", 5.0, float(p[("horus", 0.9)]),
                        unit=" µs")]

    catalog.base.register(Experiment(
        name=name, paper="Test", figure="Fig. 0", title="tiny", setup="two policies",
        points=lambda scale: sweep.grid(SMALL, policy=["horus", "random"], load=[0.5, 0.9]),
        table=table,
        plot=lambda t, png: lines(t, png, "load", "p99_us"),
        claims=claims,
        paper_points=[PaperPoint("horus", 0.9, 5.0)],
        # Doubling every hop delay moves nothing toward 5 µs: the difference
        # stays unexplained, with the run's record beside it.
        ablations=[Ablation("hop-x2", ["horus-p99"], "hop delay doubled",
                            apply=lambda cfg: cfg.setdefault("network", {}).update(
                                hop_delay={"kind": "constant", "us": 10.0}))],
        differences="none",
    ))
    try:
        r = run_experiment(name, out=str(tmp_path / "out"), cache_dir=str(tmp_path / "c"),
                           serial=True, progress=False, seeds=3)
        # Every entry's claims gathered into one marked section of a doc,
        # rewritten in place on the next run.
        from netsched.claims import collect, gather, write_into

        body = gather(str(tmp_path / "out"))
        doc = tmp_path / "fidelity.md"
        doc.write_text("# Fidelity\n\nhand-written text\n")
        write_into(str(doc), body)
        write_into(str(doc), body)
        records = collect(str(tmp_path / "out"))
    finally:
        catalog.REGISTRY.pop(name)
    # Three seeds, each point run with its own seed (seed 0 keeps the config's).
    assert r.seeds == 3 and len(r.tables) == 3
    assert sorted(set(r.runs["replicate"])) == [0, 1, 2]
    beats, p99 = records
    assert beats["verdict"] == "agrees" and beats["ours"]["n"] == 3
    assert beats["ours"]["ci95"] is not None and len(beats["ours"]["per_seed"]) == 3
    assert p99["kind"] == "numeric" and p99["paper_value"] == 5.0
    assert p99["verdict"] == "unexplained"
    assert p99["attribution"][0]["changed"] == "hop delay doubled"
    assert p99["attribution"][0]["moves_to"] == "no"
    assert "--ablation hop-x2" in p99["attribution"][0]["command"]
    assert "| numeric | 0 | 0 | 1 | 0 |" in body
    text = doc.read_text()
    assert text.startswith("# Fidelity\n\nhand-written text\n")
    assert text.count("### test-tiny") == 1
    csv, png, md = map(Path, r.files)
    run_json = json.loads(md.with_suffix(".json").read_text())
    assert run_json["netsched"]["version"] == netsched.__version__
    assert len(run_json["netsched"]["commit"]) in (40, len("unknown"))
    assert run_json["seeds"] == 3 and "fewer than the 5" in run_json["scale_note"]
    assert len(r.table) == 4
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = md.read_text()
    assert "| horus beats random at 0.9 | shape | lower |" in page
    assert build_site(str(tmp_path / "out")) == 1
    site = tmp_path / "out" / "report"
    html = (site / f"{name}.html").read_text()
    assert f'<img src="../{name}.png"' in html and "<table" in html
    assert f'href="{name}.html"' in (site / "index.html").read_text()


def test_catalog_entries_are_well_formed():
    from netsched import catalog

    names = set(catalog.REGISTRY)
    assert {"horus-fig2", "horus-fig10", "horus-fig11", "horus-fig12a", "horus-fig12b",
            "horus-fig12c", "horus-fig15-16", "horus-fig17", "horus-fig18", "horus-fig19b",
            "racksched-fig2", "racksched-fig14"} <= names
    for e in catalog.REGISTRY.values():
        for scale in ("reduced", "paper"):
            pts = e.points(scale)
            assert pts, e.name
            keys = {p.key() for p in pts}  # every config parses and validates
            assert len(keys) == len(pts), f"{e.name}: duplicate runs at {scale} scale"
    with pytest.raises(ValueError, match="unknown experiment"):
        catalog.get("horus-fig99")


def test_module_cli_list_and_unknown_entry():
    env = dict(os.environ)
    r = subprocess.run([shutil.which("python3") or "python3", "-m", "netsched", "experiment", "list"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "horus-fig11" in r.stdout
    r = subprocess.run(["python3", "-m", "netsched", "experiment", "run", "nope"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stderr.startswith("error: unknown experiment `nope`")


def test_pull_api(repo_root):
    text = (repo_root / "experiments" / "draconis.toml").read_text()
    cfg = text.replace("tasks = 60000", "tasks = 3000")
    cfg = cfg.replace('policies = ["draconis", "racksched-nodes", "draconis-server", "r2p2-recirc", "sparrow"]',
                      'policies = ["draconis", "sparrow"]')
    cfg = cfg.replace("loads = [0.2, 0.4, 0.6, 0.8, 0.9, 0.95]", "loads = [0.5]")
    r = netsched.run_pull(cfg)
    assert sorted(r.runs["policy"]) == ["draconis", "sparrow"]
    assert (r.runs["completed"] > 2000).all()
    with pytest.raises(ValueError, match="unknown policy `nope`"):
        netsched.run_pull(cfg.replace('"sparrow"]', '"nope"]'))
