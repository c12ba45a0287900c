"""Testbed-figure metrics measured as the papers define them: Horus Fig. 15's
fraction of resubmitted tasks, and RackSched's offered KRPS under the
7-workers ablation. Needs the package installed (`pip install .`)."""
import pytest

from netsched import api, catalog, sweep
from netsched.catalog import horus_testbed, racksched


def test_fig15_counts_a_task_resubmitted_at_both_layers_once(tmp_path):
    # Horus App. B: "the fraction of task packets that are processed twice by
    # a spine or leaf switch" (100 % if every packet were resubmitted). The
    # Uniform setup near saturation repeats some tasks at the spine and at a
    # leaf; summing the per-layer fractions counted those tasks twice.
    [pt] = [p for p in catalog.get("horus-fig15-16").points("reduced")
            if p.labels["setup"] == "uniform" and p.labels["service"] == "tpcc"
            and p.labels["load"] == 0.9]
    res = sweep.run_points([pt], cache_dir=tmp_path, serial=True, progress=False)
    t = horus_testbed.fig15_table(res.runs, res.pools).iloc[0]
    assert 0 < t.resub_spine and 0 < t.resub_leaf
    assert max(t.resub_spine, t.resub_leaf) <= t.resub_total < t.resub_spine + t.resub_leaf
    assert t.resub_total == res.runs["resubmitted_tasks_any"].iloc[0] / t.submitted


def test_seven_workers_ablation_offers_fewer_krps_at_the_same_load():
    # §4.2: a server of seven workers has one of its 8 cores used by the
    # scheduler. The ablation keeps the loads, so the KRPS axis must follow
    # the run's 56 workers, not the 64 of the main runs.
    pts = [p for p in catalog.get("racksched-fig10").points("reduced")
           if p.labels["service"] == "rs-exp50" and p.labels["load"] == 0.95]
    assert pts
    for p in pts:
        racksched.seven_workers(p.config)
        canon = api.canonical_config(p.config)
        assert canon["topology"]["racks"] == [[7] * 8]
        assert canon["placement"]["sizes"] == [56]
    t = racksched.with_krps(
        racksched.pd.DataFrame({"service": ["rs-exp50"] * 2, "load": [0.95] * 2,
                                "workers": [64, 56]}), 64)
    assert list(t["krps"]) == pytest.approx([0.95 * 64 / 50e-3, 0.95 * 56 / 50e-3])
