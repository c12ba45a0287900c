"""Horus's configurations swept as if they were policies:
`netsched.sweep.Variant` (a policy plus config overrides), the cache key that
includes the overrides, the four Horus curves of the catalog and the page
section that compares them. Needs the package installed (`pip install .`)."""
import pandas as pd

import netsched
from netsched import api, sweep

# Four racks of eight one-core workers under one spine: the shared idle set
# of the unmodified horus-sim (one pool-wide list) changes the schedule here.
BASE = {
    "topology": {"kind": "testbed-uniform"},
    "placement": {"sizes": [32], "mode": "colocated"},
    "workload": {"service": {"kind": "preset", "name": "exp100"}, "load": 0.9,
                 "tasks_per_worker": 200},
}
LABELS = ["horus", "horus (horus-sim)", "horus (horus-sim-fixed)", "horus-tokens"]


def test_a_variant_name_on_the_policy_axis_sets_policy_and_preset():
    pts = sweep.grid(BASE, policy=LABELS, load=[0.9])
    assert [p.labels["policy"] for p in pts] == LABELS
    by = {p.labels["policy"]: p.config for p in pts}
    assert [c["policy"] for c in by.values()] == ["horus", "horus", "horus", "horus-tokens"]
    assert "schedulers" not in by["horus"] and "schedulers" not in by["horus-tokens"]
    assert by["horus (horus-sim)"]["schedulers"] == {"horus": {"preset": "horus-sim"}}
    assert by["horus (horus-sim-fixed)"]["schedulers"] == {"horus": {"preset": "horus-sim-fixed"}}
    # The simulator reads the preset from the config the point runs.
    canon = api.canonical_config(by["horus (horus-sim)"])
    assert canon["schedulers"]["horus"]["preset"] == "horus-sim"
    # The base config is not modified.
    assert "schedulers" not in BASE and "policy" not in BASE


def test_the_cache_key_includes_the_overrides():
    pts = sweep.grid(BASE, policy=LABELS)
    keys = [p.key() for p in pts]
    assert len(set(keys)) == 4, keys
    # The key is the config's, not the label's: the same config under another
    # name, or the default preset written out, is the same entry.
    same = sweep.Variant("renamed", "horus", {"schedulers.horus.preset": "horus-sim"})
    paper = sweep.Variant("explicit paper", "horus", {"schedulers.horus.preset": "paper"})
    [a, b] = sweep.grid(BASE, policy=[same, paper])
    assert a.key() == keys[1] and a.labels["policy"] == "renamed"
    assert b.key() == keys[0]
    # An override on top of a preset is a different run.
    more = sweep.VARIANTS["horus (horus-sim)"].with_overrides(
        schedulers__horus__leaf_idle_threshold=0)
    [c] = sweep.grid(BASE, policy=[more])
    assert c.config["schedulers"]["horus"] == {"preset": "horus-sim", "leaf_idle_threshold": 0}
    assert c.key() not in keys


def test_variants_run_and_are_labelled(tmp_path):
    res = sweep.run_points(sweep.grid(BASE, policy=LABELS), cache_dir=tmp_path, serial=True,
                           progress=False)
    assert res.computed == 4
    runs = res.runs.set_index("policy")
    assert list(runs.index) == LABELS
    # horus-sim's pool-wide idle set: a different schedule from the fixed one.
    assert runs.loc["horus (horus-sim)", "p99_us"] != runs.loc["horus (horus-sim-fixed)", "p99_us"]
    assert runs.loc["horus (horus-sim)", "p50_us"] < runs.loc["horus (horus-sim-fixed)", "p50_us"]
    # Cached by their own keys: a rerun computes nothing and reads the same.
    again = sweep.run_points(sweep.grid(BASE, policy=LABELS), cache_dir=tmp_path, serial=True,
                             progress=False)
    assert again.computed == 0
    pd.testing.assert_series_equal(again.runs["p99_us"], res.runs["p99_us"])


def test_catalog_horus_configs_run_the_full_presets_on_multi_spine_pools():
    from netsched.catalog import horus

    cfg = horus.only_median_pool(horus.datacenter("reduced"), "reduced")
    assert horus.max_spines(cfg) > 1, "the median datacenter pool has several spines"
    multi = horus.horus_configs(cfg)
    assert [sweep.label_of("policy", v) for v in multi] == LABELS
    for v in multi[1:3]:
        assert "schedulers.horus.idle_link" not in sweep.variant(v).overrides
    # horus-sim's random idle-link spine runs on a pool with several spines,
    # with or without the shared idle set.
    cfg["workload"]["tasks_per_worker"] = 2
    for name in ("horus (horus-sim)", "horus (horus-sim-fixed)"):
        [pt] = sweep.grid(cfg, policy=[name])
        res = netsched.run_sim(pt.config)
        assert len(res.runs) == 1


def test_fig11_sweeps_the_four_horus_configurations():
    from netsched import catalog

    pts = catalog.get("horus-fig11").points("reduced")
    pols = list(dict.fromkeys(p.labels["policy"] for p in pts))
    assert pols == LABELS + ["rs-h", "rs-lb"]
    presets = {p.labels["policy"]: p.config.get("schedulers", {}).get("horus", {}).get("preset")
               for p in pts}
    assert presets["horus (horus-sim)"] == "horus-sim"
    assert presets["horus (horus-sim-fixed)"] == "horus-sim-fixed"
    assert presets["horus"] is None and presets["rs-h"] is None


def test_paper_scale_runs_the_authors_configurations_at_one_value_only():
    from netsched import catalog

    for name, col in [("horus-fig12b", "hop_delay_us"), ("horus-fig12c", "loss"),
                      ("horus-fig12a", "load")]:
        pts = catalog.get(name).points("paper")
        at = {p.labels[col] for p in pts if p.labels["policy"] == "horus (horus-sim)"}
        assert len(at) == 1, (name, at)
        assert len({p.labels[col] for p in pts if p.labels["policy"] == "horus"}) > 1


def _table(sim_p99, ratios, p50_ratio=1.0):
    rows = []
    for load, base in [(0.5, sim_p99), (0.9, 2 * sim_p99)]:
        for pol, r in zip(LABELS, ratios):
            rows.append({"service": "exp100", "load": load, "policy": pol,
                         "p50_us": 100.0 * (p50_ratio if pol == "horus" else 1.0),
                         "p99_us": base * r})
        rows.append({"service": "exp100", "load": load, "policy": "rs-h", "p50_us": 1.0,
                     "p99_us": 1.0})
    return pd.DataFrame(rows)


def test_the_configs_section_states_the_ratios_to_horus_sim():
    from netsched.catalog import horus

    t = _table(400.0, [1.5, 1.0, 2.0, 1.25], p50_ratio=3.0)
    md = horus.configs_section(t, "Fig. 11", ["service", "load"],
                               [("p50_us", "p50"), ("p99_us", "p99")], "test", multi_spine=True)
    assert "came from the authors' Python simulator, horus-sim, unmodified" in md
    every = "× at every point"
    assert f"`horus`: p50 3.00{every}, p99 1.50{every}" in md
    assert f"`horus (horus-sim-fixed)`: p50 1.00{every}, p99 2.00{every}" in md
    assert f"`horus-tokens`: p50 1.00{every}, p99 1.25{every}" in md
    assert f"fixing it multiplies p50 by 1.00{every}, p99 by 2.00{every}" in md
    assert "drawn at random" in md
    # One row per point, with the ratio columns.
    assert "| exp100 | 0.9 | 300 | 1,200 | 100 | 800 | 100 | 1,600 | 100 | 1,000 | 3.00× | 1.50× |" in md
    # A rack-sized pool: horus-sim-fixed and horus-sim coincide, and the page says why.
    same = horus.configs_section(_table(400.0, [1.5, 1.0, 1.0, 1.0]), "Fig. 10",
                                 ["service", "load"], [("p99_us", "p99")], "test",
                                 multi_spine=False)
    assert "identical results at every point" in same


def test_a_claim_states_its_tolerance_on_the_page():
    from netsched.catalog.base import Experiment, numeric, shape
    from netsched.claims import aggregate, finalize
    from netsched.experiment import page

    e = Experiment(name="t", paper="P", figure="Fig. 0", title="t", setup="s",
                   points=lambda s: [], table=lambda r, p: r, plot=lambda t, p: None,
                   claims=lambda t: [], differences="d",
                   sections=lambda t: "## Which Horus produced the paper's figure\n\nhorus-sim.")
    recs = finalize(aggregate([[numeric("x", "x", 3.0, v, rel=0.1, unit="×"),
                                shape("y", "y", v - 4, paper_text="flat")] for v in (2.9, 2.92)],
                              entry="t", paper="P", figure="Fig. 0", scale="reduced"))
    md = page(e, "reduced", pd.DataFrame({"a": [1]}), recs, 1.0, 1, 0, 2, "reduced")
    assert "| Fig. 0 | x | numeric | 3× | 2.91× ± 0.127 (n=2) | within 10 % | agrees | — |" in md
    assert "| Fig. 0 | y | shape | flat |" in md and "**unexplained**" in md
    assert "## Which Horus produced the paper's figure" in md
