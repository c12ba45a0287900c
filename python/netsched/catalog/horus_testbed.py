"""Horus (NSDI'24) §4 testbed figures, reproduced in simulation configured
like the testbed (one Tofino as spine and leaves, 1 worker per core, per-core
FCFS queues): Fig. 6 (single rack against RackSched), Fig. 7 and Fig. 14b
(Uniform and Skewed racks against RS-H and RS-LB), Fig. 9c (a leaf failure)
and App. B's Fig. 15-16 (resubmissions and state-update messages).

The testbed's x axis is offered KRPS; a point's load is KRPS × the mean
service time / workers. "Achievable throughput" (§4.1) is the largest load
whose p99 stays under a bound: we interpolate log p99 linearly between the
two tested rates around the bound."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..sweep import Point, grid
from .base import (Ablation, Experiment, PaperPoint, lines, not_reproducible, numeric, register,
                   shape)
from .horus import PAPER, horus_sim_ablation, provenance

# Horus §4.1: RocksDB GET median 40 µs, SCAN median 650 µs (lognormal, σ =
# 0.1, crates/config/src/workload.rs), TPC-C's five classes.
SIGMA = 0.1
MEAN_US = {"rocksdb-50-50": 0.5 * (40.0 + 650.0) * math.exp(SIGMA ** 2 / 2),
           "rocksdb-90-10": (0.9 * 40.0 + 0.1 * 650.0) * math.exp(SIGMA ** 2 / 2),
           "tpcc": 0.44 * 21.6 + 0.04 * 22.68 + 0.44 * 71.28 + 0.04 * 332.64 + 0.04 * 378.0}
WORKERS = {"single-rack": 32, "uniform": 32, "skewed": 48}
TOPOLOGY = {"single-rack": {"kind": "racks", "racks": [[8, 8, 8, 8]]},
            "uniform": {"kind": "testbed-uniform"}, "skewed": {"kind": "testbed-skewed"}}
STYLE_TB = {"horus": ("tab:blue", "o", "Horus"), "racksched": ("tab:orange", "s", "RackSched"),
            "rs-h": ("tab:orange", "s", "RS-H"), "rs-lb": ("tab:green", "^", "RS-LB")}


# "published": the largest that fits five seeds and the ablations on the
# project's 2-core machine.
TASKS_PER_WORKER = {"paper": 2000, "published": 1000, "reduced": 400}


def capacity_krps(setup: str, service: str) -> float:
    return WORKERS[setup] / MEAN_US[service] * 1e3


def testbed_points(setup: str, service: str, policies: list, krps: list, scale: str) -> list:
    pts = []
    cap = capacity_krps(setup, service)
    for pol in policies:
        for k in krps:
            cfg = {"policy": pol, "topology": TOPOLOGY[setup],
                   "placement": {"sizes": [WORKERS[setup]], "mode": "colocated"},
                   "workload": {"service": {"kind": "preset", "name": service},
                                "load": round(k / cap, 6),
                                "tasks_per_worker": TASKS_PER_WORKER[scale]}}
            pts.append(Point({"setup": setup, "service": service, "policy": pol, "krps": k}, cfg))
    return pts


def krps_table(runs, pools):
    keep = ["setup", "service", "policy", "krps", "p50_us", "p99_us", "mean_us", "completed",
            "aborted"]
    return runs[[c for c in keep if c in runs]].copy()


def achievable(d: pd.DataFrame, bound_us: float) -> float:
    """The largest KRPS with p99 ≤ `bound_us`, interpolating log p99 between
    the tested rates around the crossing; NaN when even the lowest rate is
    above the bound, the highest tested rate when none is."""
    d = d.sort_values("krps")
    x, y = d["krps"].to_numpy(float), d["p99_us"].to_numpy(float)
    if y[0] > bound_us:
        return float("nan")
    over = np.nonzero(y > bound_us)[0]
    if not len(over):
        return float(x[-1])
    i = over[0]
    f = (math.log(bound_us) - math.log(y[i - 1])) / (math.log(y[i]) - math.log(y[i - 1]))
    return float(x[i - 1] + f * (x[i] - x[i - 1]))


def at(t, setup, service, policy, krps, col="p99_us") -> float:
    d = t[(t.setup == setup) & (t.service == service) & (t.policy == policy) & (t.krps == krps)]
    return float(d[col].iloc[0])


def tb_lines(t, png, title=""):
    from . import base

    d = t.assign(panel=t["setup"] + " / " + t["service"])
    saved = dict(base.STYLE)
    base.STYLE.update(STYLE_TB)
    try:
        lines(d, png, "krps", "p99_us", series="policy", panel="panel",
              xlabel="offered load (KRPS)", ylabel="p99 response time (µs)", title=title)
    finally:
        base.STYLE.clear()
        base.STYLE.update(saved)


TESTBED_SETUP = ("Simulated like the testbed: one switch plays the spine and every leaf, one "
                 "worker per core with its own FCFS queue, §5.1's network model (5 µs hops, 1e-5 "
                 "loss); Poisson arrivals at the offered KRPS. The paper's single-rack worker "
                 "count is not stated; we put the 32 workers of the Uniform setup in one rack.")


def one_switch_hops(cfg: dict) -> None:
    cfg.setdefault("network", {})["hop_delay"] = {"kind": "constant", "us": 1.0}


def testbed_ablations(keys: list) -> list:
    """The modelling choices a testbed figure's difference may come from:
    the hop delay (the testbed is one switch, we use §5.1's 5 µs hops) and
    Horus's mechanism (the authors' simulator's choices instead of the P4's)."""
    return [Ablation("hops-1us", keys, "1 µs constant per hop (one switch) instead of §5.1's "
                     "exponential 5 µs", apply=one_switch_hops),
            horus_sim_ablation(keys)]


def more_workers(cfg: dict) -> None:
    """48 workers in the rack at the same offered KRPS."""
    cfg["topology"] = {"kind": "racks", "racks": [[8] * 6]}
    cfg["placement"]["sizes"] = [48]
    cfg["workload"]["load"] = round(cfg["workload"]["load"] * 32 / 48, 6)


# --- Fig. 6: single rack, Horus against RackSched ---------------------------------

FIG6_SLO_US = 3000.0  # §4.1's example bound for the achievable throughput
FIG6_KRPS = {"rocksdb-50-50": [10, 20, 30, 40, 50, 60, 70, 80, 85, 88],
             "rocksdb-90-10": [25, 50, 100, 150, 200, 250, 275, 290, 300],
             "tpcc": [40, 100, 200, 250, 300, 350, 400, 420, 435]}


def fig6_points(scale):
    return [p for svc, ks in FIG6_KRPS.items()
            for p in testbed_points("single-rack", svc, ["horus", "racksched"], ks, scale)]


def fig6_claims(t):
    red = 100 * (1 - at(t, "single-rack", "rocksdb-50-50", "horus", 80)
                 / at(t, "single-rack", "rocksdb-50-50", "racksched", 80))
    gain = {}
    for svc in FIG6_KRPS:
        d = t[t.service == svc]
        gain[svc] = (achievable(d[d.policy == "horus"], FIG6_SLO_US)
                     / achievable(d[d.policy == "racksched"], FIG6_SLO_US))
    return [
        numeric("rocksdb-50-50-75pct-lower-at-80krps", "RocksDB 50 % GET at 80 KRPS: Horus "
                "reduces the tail response time by up to 75 % against RackSched", 75.0, red,
                pp=15, unit=" %", figure="Fig. 6a"),
        numeric("throughput-up-to-1.9x", "Horus increases the throughput by up to 1.9× against "
                "RackSched (achievable throughput at p99 ≤ 3 ms, largest ratio over the three "
                "workloads)", 1.9, max(gain.values()), unit="×"),
    ]


register(Experiment(
    name="horus-fig6",
    published="reduced",
    published_note="400 tasks per worker (paper scale: 2,000), to fit five seeds and the "
                   "ablations on this shared 2-core machine",
    paper=PAPER, figure="Fig. 6",
    title="Horus vs RackSched in a single rack (testbed setup, simulated)",
    setup="Horus and RackSched (power-of-2 at the ToR over reply-updated loads) over 32 workers "
          "in one rack (4 servers × 8), RocksDB 50 % and 90 % GET and TPC-C, p99 against "
          "offered KRPS. " + TESTBED_SETUP,
    points=fig6_points,
    table=krps_table,
    plot=lambda t, png: tb_lines(t, png, "Single rack"),
    claims=fig6_claims,
    ablations=testbed_ablations(["rocksdb-50-50-75pct-lower-at-80krps", "throughput-up-to-1.9x"])
    + [Ablation("48-workers", ["rocksdb-50-50-75pct-lower-at-80krps", "throughput-up-to-1.9x"],
                "48 workers in the rack (6 servers × 8) instead of 32, at the same KRPS",
                apply=more_workers)],
    paper_points=[PaperPoint("horus", 80, None, panel="single-rack / rocksdb-50-50",
                             label="75 % below RackSched at 80 KRPS")],
    sections=provenance("The testbed ran the authors' P4 program: the paper's mechanism, "
                        "netsched's default `horus`, is the configuration here."),
    differences="The paper does not state the single rack's worker count or the latency bound "
                "behind its 1.9× throughput; we use 32 workers and §4.1's example bound of 3 ms. "
                "Where Horus's p99 stays under the bound up to the highest tested rate (95 % of "
                "capacity), its achievable throughput is taken as that rate, so the ratio is a "
                "lower bound there.",
))


# --- Fig. 7 and Fig. 14b: Uniform and Skewed racks against RS-H and RS-LB -----------

FIG7_SLO_US = 2000.0  # §4.2: "if the target tail response time is 2 ms"
FIG7_RUNS = {("uniform", "rocksdb-50-50"): [10, 20, 25, 30, 40, 50, 60, 70, 80, 85, 88],
             ("skewed", "rocksdb-90-10"): [50, 100, 150, 200, 250, 300, 350, 400, 430, 450],
             ("skewed", "rocksdb-50-50"): [10, 20, 25, 30, 40, 60, 80, 100, 110, 125, 130]}
FIG7_SLO = {"horus": 80.0, "rs-lb": 25.0, "rs-h": 40.0}


def fig7_points(scale):
    return [p for (setup, svc), ks in FIG7_RUNS.items()
            for p in testbed_points(setup, svc, ["horus", "rs-h", "rs-lb"], ks, scale)]


def fig7_claims(t):
    thr = {}
    for (setup, svc) in FIG7_RUNS:
        d = t[(t.setup == setup) & (t.service == svc)]
        for pol in ("horus", "rs-h", "rs-lb"):
            thr[(setup, svc, pol)] = achievable(d[d.policy == pol], FIG7_SLO_US)
    red = 100 * (1 - at(t, "uniform", "rocksdb-50-50", "horus", 80)
                 / at(t, "uniform", "rocksdb-50-50", "rs-h", 80))
    out = [numeric("uniform-50pct-below-rs-h-at-80krps", "Uniform, RocksDB 50 % GET: Horus "
                   "reduces the tail by up to 50 % against RS-H at 80 KRPS", 50.0, red, pp=15,
                   unit=" %", figure="Fig. 7a")]
    for pol, paper in FIG7_SLO.items():
        out.append(numeric(f"uniform-2ms-throughput-{pol}", f"Uniform, RocksDB 50 % GET: "
                           f"{STYLE_TB[pol][2]}'s achievable throughput at p99 ≤ 2 ms is {paper:g} "
                           "KRPS", paper, thr[("uniform", "rocksdb-50-50", pol)], unit=" KRPS",
                           figure="Fig. 7a"))
    gain = {k: thr[(*k, "horus")] / thr[(*k, "rs-h")] for k in FIG7_RUNS}
    out.append(shape("skewed-gains-higher", "Skewed placement, RocksDB 90 % GET: even higher "
                     "gains than Uniform 50 % GET (2 ms throughput, Horus over RS-H)",
                     gain[("skewed", "rocksdb-90-10")] - gain[("uniform", "rocksdb-50-50")],
                     paper_text="higher gains", figure="Fig. 7b",
                     describe="Horus/RS-H 2 ms throughput ratio, Skewed 90-10 minus Uniform 50-50"))
    sk = ("skewed", "rocksdb-50-50")
    out += [
        numeric("skewed-50-50-sustains-125krps", "Skewed, RocksDB 50 % GET: Horus sustains up to "
                "125 KRPS (achievable throughput at p99 ≤ 2 ms)", 125.0, thr[(*sk, "horus")],
                unit=" KRPS", figure="Fig. 14b"),
        numeric("skewed-50-50-1.6x-rs-h", "Skewed, RocksDB 50 % GET: 60 % higher than RS-H", 1.6,
                thr[(*sk, "horus")] / thr[(*sk, "rs-h")], unit="×", figure="Fig. 14b"),
        numeric("skewed-50-50-5x-rs-lb", "Skewed, RocksDB 50 % GET: 400 % higher than RS-LB", 5.0,
                thr[(*sk, "horus")] / thr[(*sk, "rs-lb")], unit="×", figure="Fig. 14b"),
        not_reproducible("leaf-failure-1444-tasks", "A leaf failure at 65 KRPS loses 1,444 tasks, "
                         "2 % of the tasks submitted per second", 1444,
                         "the testbed's failure-detection delay (from disabling the leaf's ports "
                         "to the spine no longer sending to it), which sets the count and is "
                         "not stated", figure="Fig. 9c"),
        not_reproducible("leaf-added-recovers-2s", "After adding a leaf scheduler with a rack of "
                         "8 workers the response time recovers within about 2 s", 2.0,
                         "the testbed controller's time to install a new leaf (the simulator adds "
                         "workers at an instant; the 2 s is control-plane time the paper does not "
                         "break down)", figure="Fig. 9c", unit=" s"),
    ]
    return out


register(Experiment(
    name="horus-fig7",
    published="reduced",
    published_note="400 tasks per worker (paper scale: 2,000), to fit five seeds and the "
                   "ablations on this shared 2-core machine", paper=PAPER, figure="Fig. 7, 9c, 14b",
    title="Horus vs RS-H vs RS-LB on the testbed's racks (simulated)",
    setup="Horus, RS-H and RS-LB on the testbed's Uniform (4 racks × 8 workers) and Skewed "
          "(4, 4, 8, 32 workers) setups: RocksDB 50 % GET on Uniform (Fig. 7a) and Skewed "
          "(Fig. 14b), RocksDB 90 % GET on Skewed (Fig. 7b); p99 against offered KRPS and the "
          "achievable throughput at p99 ≤ 2 ms. " + TESTBED_SETUP,
    points=fig7_points,
    table=krps_table,
    plot=lambda t, png: tb_lines(t, png, "Multi-rack testbed setups"),
    claims=fig7_claims,
    ablations=testbed_ablations(
        ["uniform-50pct-below-rs-h-at-80krps", "uniform-2ms-throughput-horus",
         "uniform-2ms-throughput-rs-lb", "uniform-2ms-throughput-rs-h", "skewed-gains-higher",
         "skewed-50-50-sustains-125krps", "skewed-50-50-1.6x-rs-h", "skewed-50-50-5x-rs-lb"]),
    paper_points=[PaperPoint(pol, k, None, panel="uniform / rocksdb-50-50",
                             label=f"{k:g} KRPS at 2 ms") for pol, k in FIG7_SLO.items()]
    + [PaperPoint("horus", 125, None, panel="skewed / rocksdb-50-50", label="125 KRPS")],
    sections=provenance("The testbed ran the authors' P4 program: the paper's mechanism, "
                        "netsched's default `horus`, is the configuration here."),
    differences="Fig. 9c's leaf failure is listed with the one fact the simulator lacks.",
))


# --- Fig. 15-16 -------------------------------------------------------------------

def testbed(kind: str, scale: str) -> dict:
    workers = 32 if kind == "uniform" else 48
    return {
        "policy": "horus",
        "topology": {"kind": f"testbed-{kind}"},
        "placement": {"sizes": [workers], "mode": "colocated"},
        "workload": {"service": {"kind": "preset", "name": "rocksdb-90-10"}, "load": 0.5,
                     "tasks_per_worker": 2000 if scale == "paper" else 300},
    }


def fig15_points(scale):
    pts = []
    for setup in ["uniform", "skewed"]:
        for p in grid(testbed(setup, scale), service=["rocksdb-90-10", "rocksdb-50-50", "tpcc"],
                      load=[0.1, 0.3, 0.5, 0.7, 0.9]):
            p.labels = {"setup": setup, **p.labels}
            pts.append(p)
    return pts


def fig15_table(runs, pools):
    d = runs[["setup", "service", "load", "submitted", "submitted_total"]].copy()
    d["resub_spine"] = runs["resubmitted_tasks_spine"] / runs["submitted"]
    d["resub_leaf"] = runs["resubmitted_tasks_leaf"] / runs["submitted"]
    # App. B: "the fraction of task packets that are processed twice by a
    # spine or leaf switch" (100 % if every packet were resubmitted): a task
    # repeated at both layers counts once, so not the per-layer sum.
    d["resub_total"] = runs["resubmitted_tasks_any"] / runs["submitted"]
    d["load_updates_per_task"] = runs["msg_load_update"] / runs["submitted_total"]
    d["idle_add_remove_per_task"] = (runs["msg_idle_add"] + runs["msg_idle_remove"]) / runs["submitted_total"]
    return d


def fig15_claims(t):
    mx = t.groupby("setup")["resub_total"].max()
    lu = t[t["load"] == t["load"].max()]["load_updates_per_task"].max()
    return [
        numeric("resubmitted-max-uniform", "Maximum fraction of resubmitted tasks, Uniform setup: "
                "38 %", 38.0, 100 * float(mx["uniform"]), pp=15, unit=" %"),
        numeric("resubmitted-max-skewed", "Maximum fraction of resubmitted tasks, Skewed setup: "
                "13 %", 13.0, 100 * float(mx["skewed"]), pp=15, unit=" %"),
        shape("load-updates-below-0.15", "Load-update messages per task at the highest load are "
              "below 0.15", 0.15 - float(lu), paper_text="< 0.15 per task",
              describe="0.15 minus the largest loadUpdate messages per task at the highest load"),
    ]


def fig15_plot(t, png):
    m = t.melt(id_vars=["setup", "service", "load"],
               value_vars=["resub_total", "load_updates_per_task", "idle_add_remove_per_task"],
               var_name="metric")
    m["panel"] = m["setup"] + " / " + m["metric"]
    m["series"] = m["service"]
    lines(m, png, "load", "value", series="series", panel="panel", xlabel="load",
          ylabel="fraction / per task", logy=False)


register(Experiment(
    name="horus-fig15-16",
    published="paper", paper=PAPER, figure="Fig. 15-16",
    title="Resubmitted tasks and state-update messages (testbed setups, simulated)",
    setup="Horus on the testbed's Uniform (4 racks × 8 workers) and Skewed (4, 4, 8, 32) setups "
          "with RocksDB 90/10, 50/50 and TPC-C: fraction of tasks processed twice by the spine "
          "or a leaf (each task once, whichever layers repeated it), loadUpdate and idleAdd/Remove messages per task, against load.",
    points=fig15_points,
    table=fig15_table,
    plot=fig15_plot,
    claims=fig15_claims,
    paper_points=[PaperPoint("rocksdb-50-50", 0.9, 0.38, panel="uniform / resub_total",
                             label="max 38 %"),
                  PaperPoint("rocksdb-50-50", 0.9, 0.13, panel="skewed / resub_total",
                             label="max 13 %")],
    sections=provenance(
        "The paper's Fig. 15-16 were measured on its Tofino testbed running the authors' P4 "
        "program, not with their simulator, so the paper's mechanism, netsched's default "
        "`horus` (`schedulers.horus.preset = \"paper\"`), is the configuration that produced "
        "them, and the only one run here."),
    differences="The paper measures these on the Tofino testbed; we simulate the same rack "
                "layouts and service mixes with §5.1's network model (5 µs hops, 1e-5 loss).",
))

