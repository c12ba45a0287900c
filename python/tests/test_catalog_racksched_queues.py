"""RackSched multi-queue (Fig. 10c-d, 13b-d) and load-tracking (Fig. 16)
catalog entries: their points are valid simulator configs with the settings
the paper used, and per-class tails reach the sweep's run table. Needs the
package installed (`pip install .`)."""
import pytest

from netsched import api, catalog, sweep

MULTI_QUEUE = {"rs-bimodal-50-50", "trimodal", "rs-rocksdb-50-50"}


@pytest.mark.parametrize("scale", ["reduced", "paper"])
@pytest.mark.parametrize("name", ["racksched-fig10", "racksched-fig11", "racksched-fig13",
                                  "racksched-fig13cd", "racksched-fig16"])
def test_points_are_valid_configs_with_the_papers_queues(name, scale):
    pts = catalog.get(name).points(scale)
    assert pts
    for p in pts:
        canon = api.canonical_config(p.config)  # raises ValueError if invalid
        svc = p.labels["service"]
        assert canon["workers"]["multi_queue"] is (svc in MULTI_QUEUE and name != "racksched-fig16"), (
            name, p.labels)


def test_fig16_runs_every_mechanism_at_a_stated_loss():
    pts = catalog.get("racksched-fig16").points("reduced")
    seen = {}
    for p in pts:
        canon = api.canonical_config(p.config)
        assert canon["policy"] == "racksched"
        seen.setdefault(p.labels["system"], set()).add(
            (canon["schedulers"]["load_tracking"], canon["network"]["loss"]))
    assert seen == {
        "int1": {("int1", 1e-3)}, "int2": {("int2", 1e-3)}, "int3": {("int3", 1e-3)},
        "proactive": {("proactive", 1e-3)}, "proactive-no-loss": {("proactive", 0.0)},
    }
    assert all(api.canonical_config(p.config)["schedulers"]["int2_random_one_in"] == 4 for p in pts)


def test_fig13cd_is_the_multi_queue_rocksdb_50_50_sweep():
    pts = catalog.get("racksched-fig13cd").points("reduced")
    assert {p.labels["service"] for p in pts} == {"rs-rocksdb-50-50"}
    assert {p.labels["system"] for p in pts} == {"racksched", "shinjuku"}


def test_per_class_columns_reach_the_run_table(tmp_path):
    cfg = {
        "seed": 4, "policy": "racksched",
        "topology": {"kind": "single-rack", "servers": 2, "cores_per_server": 4},
        "placement": {"sizes": [8], "mode": "colocated"},
        "workload": {"service": {"kind": "preset", "name": "rs-rocksdb-50-50"}, "load": 0.7,
                     "tasks_per_worker": 200},
        "network": {"hop_delay": {"kind": "constant", "us": 2.0}, "loss": 0.0},
        "workers": {"model": "server-ps", "ps_slice_us": 250.0, "multi_queue": True},
    }
    pts = sweep.grid(cfg, load=[0.5, 0.8])
    res = sweep.run_points(pts, cache_dir=tmp_path, serial=True, progress=False)
    for name in ("get", "scan"):
        for q in ("p50", "p99", "mean"):
            assert f"class_{name}_{q}_us" in res.runs.columns
    runs = res.runs.sort_values("load").reset_index(drop=True)
    for i, summ in enumerate(sorted(res.summaries, key=lambda s: s["runs"][0]["load"])):
        overall = summ["runs"][0]["overall"]
        per = {c["name"]: c["response"] for c in overall["per_class"]}
        assert runs.loc[i, "class_get_p99_us"] == per["get"]["p99_ns"] / 1e3
        assert runs.loc[i, "class_scan_p99_us"] == per["scan"]["p99_ns"] / 1e3
        assert runs.loc[i, "class_get_count"] + runs.loc[i, "class_scan_count"] == overall["completed"]
        # SCANs (median 740 µs) always take longer than GETs (median 50 µs).
        assert runs.loc[i, "class_scan_p50_us"] > 10 * runs.loc[i, "class_get_p50_us"]
    # A cached rerun rebuilds the same columns from summary.json.
    again = sweep.run_points(pts, cache_dir=tmp_path, serial=True, progress=False)
    assert again.computed == 0
    assert again.runs.sort_values("load").reset_index(drop=True).drop(columns=["wall_s"]).equals(
        runs.drop(columns=["wall_s"]))
