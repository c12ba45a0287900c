"""Pull-simulator points in sweeps (cache keyed by the canonical pull
config), the Draconis/RackSched catalog entries and the cross-simulator
comparison. Needs the package installed (`pip install .`)."""
import math
from pathlib import Path

import pytest

import netsched
from netsched import sweep


def test_pull_sweep_on_the_cache_equals_direct_runs(tmp_path, pull_tiny):
    pts = sweep.grid(pull_tiny, kind="pull", policy=["draconis", "r2p2-recirc"], load=[0.5, 0.8])
    assert all(p.kind == "pull" for p in pts)
    first = sweep.run_points(pts, cache_dir=tmp_path, serial=True, progress=False)
    assert first.computed == 4 and first.cached == 0
    again = sweep.run_points(pts, cache_dir=tmp_path, serial=True, progress=False)
    assert again.computed == 0 and again.cached == 4
    for p in pts:
        direct = netsched.run_pull(p.config).runs
        for res in (first, again):
            got = res.runs[(res.runs.policy == p.labels["policy"]) & (res.runs.load == p.labels["load"])]
            assert len(got) == 1
            cols = [c for c in direct.columns if c != "wall_s"]
            assert got[cols].reset_index(drop=True).equals(direct[cols].reset_index(drop=True)), p.labels
    # The per-run details come from summary.json: the completion metric is there.
    assert {"completion_p99_us", "sched_p99_us", "response_p99_us"} <= set(first.pools.columns)
    assert len(first.pools) == 4


def test_pull_cache_key_is_the_canonical_config(pull_tiny):
    a = sweep.Point({}, pull_tiny, "pull")
    explicit = dict(pull_tiny, network={"link_ns": 2000, "recirc_ns": 500})  # the defaults, spelled out
    b = sweep.Point({}, explicit, "pull")
    c = sweep.Point({}, dict(pull_tiny, network={"link_ns": 3000}), "pull")
    assert a.key() == b.key() != c.key()
    with pytest.raises(ValueError, match="cluster.nodes"):
        sweep.Point({}, dict(pull_tiny, cluster={"nodes": 0}), "pull").key()
    with pytest.raises(ValueError, match="unknown simulator kind"):
        netsched.api.canonical_config(pull_tiny, "nope")


def test_completion_column_is_response_minus_three_links(pull_tiny):
    r = netsched.run_pull(dict(pull_tiny, network={"link_ns": 5000})).runs.iloc[0]
    assert r["timeouts"] == 0
    assert math.isclose(r["response_mean_us"] - r["completion_mean_us"], 15.0, abs_tol=0.01)
    assert r["completion_p50_us"] >= 100.0 + 5.0


def test_new_entries_are_registered_and_pull_points_validate():
    from netsched import catalog

    names = set(catalog.REGISTRY)
    want = {"draconis-fig5a", "draconis-fig5b", "draconis-fig6", "draconis-fig7", "draconis-fig8",
            "draconis-fig9", "draconis-fig10", "draconis-fig11", "draconis-fig12", "draconis-fig13", "racksched-fig10",
            "racksched-fig11", "racksched-fig12", "racksched-fig13", "racksched-fig14", "racksched-fig15",
            "comparison"}
    assert want <= names
    for n in want:
        for scale in ("reduced", "paper"):
            pts = catalog.get(n).points(scale)
            assert len({p.key() for p in pts}) == len(pts), (n, scale)
    kinds = {p.kind for p in catalog.get("comparison").points("reduced")}
    assert kinds == {"sim", "pull"}


def test_comparison_gives_rows_for_every_system_and_topology(tmp_path, monkeypatch):
    from netsched.catalog import comparison
    from netsched.experiment import run_experiment

    monkeypatch.setattr(comparison, "loads", lambda scale: [0.3, 0.8])
    monkeypatch.setattr(comparison, "tasks_per_core", lambda scale, racks: 20 if racks == 1 else 4)
    r = run_experiment("comparison", out=str(tmp_path / "out"), cache_dir=str(tmp_path / "c"),
                       serial=True, progress=False)
    t = r.table
    assert len(t) == len(comparison.SYSTEMS) * len(comparison.TOPOLOGIES) * 2
    for topo in comparison.TOPOLOGIES:
        for s in comparison.SYSTEMS:
            d = t[(t.topology == topo) & (t.system == s)]
            assert sorted(d.load) == [0.3, 0.8], (topo, s)
    low = t[t.load == 0.3]
    # One definition on both simulators: at low load every system's p99 is a
    # 500 µs task plus its scheduling path, and the fastest median is a 50 µs
    # task plus the two hops to the core.
    assert (low.p99_us >= 500).all() and (low.p99_us < 2000).all(), low
    assert (low.p50_us >= 50 + 4).all(), low
    page = Path(r.files[2]).read_text()
    assert "switch" in page and "sparrow" in page


def test_racksched_fig14_systems_are_configured_as_the_paper_describes():
    from netsched import catalog

    pts = catalog.get("racksched-fig14").points("reduced")
    by = {}
    for p in pts:
        by.setdefault(p.labels["system"], p.config)
        # Every point parses: the canonical config fills the defaults in.
        canon = netsched.canonical_config(p.config)
        assert canon["topology"]["racks"] == [[8] * 8]
    assert by["r2p2"]["policy"] == "r2p2" and by["r2p2"]["workers"]["model"] == "fcfs"
    assert by["r2p2"]["schedulers"]["jbsq_bound"] == 3
    assert by["client-100"]["policy"] == "pow2-delayed"
    assert by["client-100"]["schedulers"] == {"samples": 2, "clients": 100}
    assert by["client-100"]["workers"]["model"] == "server-ps"
    assert by["racksched"]["policy"] == "racksched" and by["shinjuku"]["policy"] == "random"
    assert {p.labels["service"] for p in pts} == {"rs-bimodal", "rs-bimodal-50-50"}


def test_draconis_fig5b_points_are_closed_loops_of_noop_executors():
    from netsched import catalog
    from netsched.catalog import draconis

    for scale, counts in (("reduced", [16, 64, 112, 160, 208]),
                          ("paper", list(range(16, 209, 16)))):
        pts = catalog.get("draconis-fig5b").points(scale)
        # Plus the priority policy at the most executors (§8.7).
        assert len(pts) == len(draconis.FIG5B_SYSTEMS) * len(counts) + 1
        prio = [p for p in pts if p.labels["system"] == "draconis-priority"]
        assert [p.labels["executors"] for p in prio] == [208]
        assert prio[0].config["workload"]["priority_weights"] == draconis.PRIORITY_MIX
        for p in pts:
            canon = netsched.canonical_config(p.config, "pull")
            c, w = canon["cluster"], canon["workload"]
            assert c["nodes"] * c["executors_per_node"] == p.labels["executors"]
            assert w["arrival"] == "closed-loop" and w["outstanding"] == 4096
            assert w["service"] == {"kind": "fixed", "value_us": 0.001}
            assert canon["network"]["switch_pps"] == 4_700_000_000
        assert sorted({p.labels["executors"] for p in pts}) == counts
        by = {(p.labels["system"], p.labels["executors"]): p.config for p in pts}
        assert by[("draconis-socket-server", 16)]["server"] == {"step_ns": 3125}
        assert by[("sparrow-2", 16)]["sparrow"] == {"schedulers": 2}


def test_draconis_fig5b_switch_scales_and_servers_saturate():
    """Two of the entry's points, shortened: Draconis at 16 and 32 executors
    is executors / (two 2 µs links + 1 ns); the socket server is flat at
    1 / (2 × 3.125 µs) = 160 K tasks/s."""
    from netsched import catalog

    pts = {(p.labels["system"], p.labels["executors"]): p
           for p in catalog.get("draconis-fig5b").points("paper")}
    got = {}
    for key in [("draconis", 16), ("draconis", 32), ("draconis-socket-server", 16),
                ("draconis-socket-server", 32)]:
        cfg = dict(pts[key].config)
        cfg["workload"] = dict(cfg["workload"], tasks=20_000)
        r = netsched.run_pull(cfg).runs.iloc[0]
        assert r["completed"] == r["submitted"] and r["timeouts"] == 0, key
        got[key] = r["steady_decisions_per_s"]
    for n in (16, 32):
        assert math.isclose(got[("draconis", n)], n * 1e9 / 4001, rel_tol=0.005), got
        assert math.isclose(got[("draconis-socket-server", n)], 160e3, rel_tol=0.005), got


def test_the_comparison_takes_a_registered_design_by_name(monkeypatch):
    """`comparison+pow3-idle`: docs/extending.md's example beside the eight
    designs, on the same push configs; a run of its point completes."""
    from netsched import catalog
    from netsched.catalog import comparison

    e = catalog.get("comparison+pow3-idle")
    assert e.name == "comparison+pow3-idle" and catalog.get(e.name) is e
    pts = e.points("reduced")
    base = catalog.get("comparison").points("reduced")
    assert len(pts) == len(base) * (len(comparison.SYSTEMS) + 1) // len(comparison.SYSTEMS)
    ours = [p for p in pts if p.labels["system"] == "pow3-idle"]
    assert ours and all(p.kind == "sim" for p in ours)
    # The same workload and topology as every push design: only the policy differs.
    for p in ours:
        twin = next(b for b in base if b.labels == {**p.labels, "system": "horus"})
        assert {**p.config, "policy": "horus"} == twin.config
    with pytest.raises(ValueError, match="pull system"):
        catalog.get("comparison+sparrow")
    with pytest.raises(ValueError, match="unknown experiment"):
        catalog.get("comparisn+pow3-idle")
    small = dict(ours[0].config, workload=dict(ours[0].config["workload"], tasks_per_worker=5))
    runs = netsched.run_sim(small).runs
    assert list(runs.policy) == ["pow3-idle"] and (runs.p99_us > 0).all()


def test_draconis_fig12_queuing_delay_is_measured_at_the_switch():
    """§8.6's queuing delay is the authors' switch-timestamp difference
    (dispatch − enqueue), not our scheduling latency, which adds the
    client→switch and switch→executor links."""
    import pandas as pd

    from netsched.catalog import draconis, draconis_policies

    sched = {f"sched_l{l}_{q}_us": 1000.0 * l + {"p50": 0, "p90": 1, "p99": 2}[q]
             for l in range(1, 5) for q in ("p50", "p90", "p99")}
    counts = {f"sched_l{l}_count": 10 for l in range(1, 5)}
    pools = pd.DataFrame([dict(system="draconis-priority", **sched, **counts),
                          dict(system="draconis", sched_p50_us=500.0, sched_p90_us=600.0,
                               sched_p99_us=700.0)])
    t = draconis_policies.fig12_table(None, pools).set_index("level")
    links = 2 * draconis.LINK_US
    assert t.loc["L1", "p50_us"] == 1000.0 - links
    assert t.loc["L4", "p99_us"] == 4002.0 - links
    assert t.loc["FCFS", "p90_us"] == 600.0 - links


def test_draconis_trace_model_jobs_share_service_time_and_priority():
    """The authors' client replays the Google trace as jobs of one runTime
    and one priority (Fig. 9, 12, 13 use the trace model)."""
    from netsched.catalog import REGISTRY

    for name in ("draconis-fig9", "draconis-fig12", "draconis-fig13"):
        for p in REGISTRY[name].points("reduced"):
            assert p.config["workload"]["arrival"] == "bursty", name
            assert p.config["workload"]["job_attributes"] is True, name
