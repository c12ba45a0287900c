"""One comparison no paper made: Horus, RS-H, RS-LB, JSQ and JIQ (push, on
`netsched sim`) against Draconis, R2P2 and Sparrow (pull, on `netsched pull`)
on the same workload and the same topologies, single rack and multi-rack.

What is identical on both simulators:

* workload: Horus's Bimodal (50 % 50 µs, 50 % 500 µs, mean 275 µs; the same
  `ServiceDist` preset in both configs), Poisson single-task arrivals, load =
  λ · E[S] / cores (Horus §5.1's "fraction of λ = n / s̄" and Draconis §8's
  definition are the same), the first 10 % of tasks not measured;
* cores: single rack = 8 servers × 16 cores (128), multi-rack = 8 racks ×
  8 servers × 16 cores (1,024); one task runs at a time per core;
* distance: the scheduling layer (Horus's spine, a RackSched ToR/spine, the
  Draconis/R2P2 switch) is two 2-µs hops from every core, in both: the push
  simulator sends spine → leaf → worker (2 hops, constant 2 µs, no loss); the
  pull simulator puts every host one `link_ns` = 4 µs from its switch;
* metric: **response time = from the task's arrival at the scheduling switch
  to its completion at the core** (no reply path). It is the push
  simulator's response time (Horus §4.1) and the pull simulator's
  `completion` (crates/sim/src/pull/metrics.rs: first submission + one client
  link, to the first completion of a copy at an executor). A Sparrow task's
  time includes the switch → scheduler-host link and the scheduler's work.

What cannot be identical: the push systems have a per-core FCFS queue (Horus
§5.1) and leaf schedulers per rack; the pull systems queue in the switch
(Draconis), in a 3-deep executor queue (R2P2 JBSQ(3)) or as reservations at
workers (Sparrow, one scheduler host per rack, d = 2).

More push designs join by name: ``comparison+random`` (any policy of the
registry, crates/core/src/registry.rs, ``+``-separated) is this entry with
those designs beside the eight, on the same workloads (docs/extending.md).
"""
from __future__ import annotations

import pandas as pd

from ..sweep import Point
from . import base
from .base import Experiment, fmt, lines, register, register_family

PUSH = ["horus", "rs-h", "rs-lb", "jsq", "jiq"]
PULL = ["draconis", "r2p2-recirc", "sparrow"]
SYSTEMS = PUSH + PULL
HOP_US = 2.0
CORES_PER_SERVER = 16
SERVERS_PER_RACK = 8
TOPOLOGIES = {"single rack": 1, "multi-rack": 8}  # racks
SERVICE = {"kind": "preset", "name": "bimodal"}


def loads(scale):
    return [0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper" else [0.5, 0.7, 0.8, 0.9]


def tasks_per_core(scale, racks):
    if scale == "paper":
        return 500
    return 150 if racks == 1 else 30


def push_config(policy, load, racks, scale):
    cores = racks * SERVERS_PER_RACK * CORES_PER_SERVER
    return {
        "seed": 1,
        "policy": policy,
        "topology": {"kind": "racks",
                     "racks": [[CORES_PER_SERVER] * SERVERS_PER_RACK for _ in range(racks)]},
        "placement": {"sizes": [cores], "mode": "colocated"},
        "workload": {"service": dict(SERVICE), "load": load,
                     "tasks_per_worker": tasks_per_core(scale, racks), "warmup_fraction": 0.1},
        "network": {"hop_delay": {"kind": "constant", "us": HOP_US}, "loss": 0.0},
        "workers": {"model": "fcfs"},
    }


def pull_config(policy, load, racks, scale):
    cores = racks * SERVERS_PER_RACK * CORES_PER_SERVER
    return {
        "seed": 1,
        "policy": policy,
        "cluster": {"nodes": racks * SERVERS_PER_RACK, "executors_per_node": CORES_PER_SERVER,
                    "racks": racks},
        # Two hops to the scheduling switch, as the push simulator's spine → leaf → worker.
        "network": {"link_ns": int(2 * HOP_US * 1000)},
        "workload": {"service": dict(SERVICE), "load": load,
                     "tasks": tasks_per_core(scale, racks) * cores},
        "r2p2": {"jbsq_bound": 3},
        # Sparrow is distributed: one scheduler host per rack.
        "sparrow": {"schedulers": racks, "probe_ratio": 2},
    }


def points(scale, push=tuple(PUSH)):
    from ..api import simulator_of  # the native module, loaded only to run

    pts = []
    for topo, racks in TOPOLOGIES.items():
        for system in list(push) + PULL:
            for load in loads(scale):
                labels = {"topology": topo, "system": system, "load": load}
                # A system is a policy name; its family says which simulator runs it.
                kind = simulator_of(system)
                make = push_config if kind == "sim" else pull_config
                pts.append(Point(labels, make(system, load, racks, scale), kind))
    return pts


def table(runs, pools):
    rows = []
    for _, r in runs.iterrows():
        push = r["system"] not in PULL
        row = {"topology": r["topology"], "system": r["system"], "load": r["load"],
               "simulator": "sim" if push else "pull"}
        if push:
            row.update(p50_us=r["p50_us"], p99_us=r["p99_us"], mean_us=r["mean_us"],
                       sched_p99_us=float("nan"), client_response_p99_us=float("nan"))
        else:
            ok = r["completed"] > 0
            nan = float("nan")
            row.update(p50_us=r["completion_p50_us"] if ok else nan,
                       p99_us=r["completion_p99_us"] if ok else nan,
                       mean_us=r["completion_mean_us"] if ok else nan,
                       sched_p99_us=r["p99_us"] if ok else nan,
                       client_response_p99_us=r["response_p99_us"] if ok else nan)
        rows.append(row)
    return pd.DataFrame(rows)


def claims(t):
    """No paper ran these systems side by side: nothing to judge (the
    rankings are in the page's section, `observations`)."""
    return []


def observations(t):
    out = ["## What the runs show (no paper states it; not counted)", ""]
    for topo in TOPOLOGIES:
        d = t[t.topology == topo]
        hi = max(d.load)
        at = d[d.load == hi].set_index("system")["p99_us"].dropna().sort_values()
        out.append(f"- {topo}, ranking by p99 response time at load {hi}: "
                   + ", ".join(f"{s} {fmt(v, ' µs')}" for s, v in at.items()) + ".")
    for topo in TOPOLOGIES:
        d = t[t.topology == topo].pivot_table(index="load", columns="system", values="p99_us")
        r = d["draconis"] / d["horus"]
        out.append(f"- {topo}, a central switch queue (Draconis) against Horus's per-core queues, "
                   "p99 Draconis/Horus by load: "
                   + ", ".join(f"{l}: {v:.2f}" for l, v in r.items()) + ".")
    return "\n".join(out)


# One colour and marker per system (the per-paper styles reuse colours).
STYLE = {
    "horus": ("tab:blue", "o", "Horus (sim)"),
    "rs-h": ("tab:orange", "s", "RS-H (sim)"),
    "rs-lb": ("tab:green", "^", "RS-LB (sim)"),
    "jsq": ("black", "x", "JSQ (sim)"),
    "jiq": ("tab:cyan", "P", "JIQ (sim)"),
    "draconis": ("tab:purple", "D", "Draconis (pull)"),
    "r2p2-recirc": ("tab:olive", "v", "R2P2 JBSQ(3) (pull)"),
    "sparrow": ("tab:red", "*", "Sparrow (pull)"),
}


def plot(t, png):
    saved = dict(base.STYLE)
    base.STYLE.update(STYLE)
    try:
        lines(t, png, "load", "p99_us", series="system", panel="topology", xlabel="load",
              ylabel="p99 response time, switch → completion (µs)")
    finally:
        base.STYLE.clear()
        base.STYLE.update(saved)


def experiment(extra=()):
    """The entry, with the push designs `extra` beside the eight."""
    if any(d in PULL for d in extra):
        raise ValueError(f"comparison+: {', '.join(d for d in extra if d in PULL)} is a pull "
                         "system of the comparison already; name push policies")
    push = PUSH + [d for d in extra if d not in PUSH]
    return Experiment(
        name="+".join(["comparison", *extra]),
        published="reduced",
        published_note=("reduced scale (150 / 30 tasks per core): paper scale takes 4 min 23 s per seed here"), paper="netsched (no paper)", figure="cross-paper comparison",
        title="Horus, RS-H, RS-LB, JSQ, JIQ, Draconis, R2P2 and Sparrow on one workload"
              + "".join(f" (and {d})" for d in extra),
        setup="Bimodal(50 % 50 µs, 50 % 500 µs) at the same loads on one rack of 8 × 16 cores and "
              "on 8 such racks (1,024 cores); the scheduling switch two 2-µs hops from every core in "
              "both simulators. Metric for every system: p99 of the time from the task's arrival at "
              "the scheduling switch to its completion at a core (the push simulator's response "
              "time; the pull simulator's `completion`). Push systems: per-core FCFS queues, Horus "
              "and RackSched with leaf schedulers per rack, JSQ an ideal zero-delay global view, "
              "JIQ join-idle-queue. Pull systems: Draconis (central queue in the switch, executors "
              "re-poll every 10 µs), R2P2 JBSQ(3), Sparrow (one scheduler host per rack, d = 2). "
              "The CSV also has the pull systems' scheduling latency and client-to-client response.",
        points=lambda scale: points(scale, push),
        table=table,
        plot=plot,
        claims=claims,
        sections=observations,
        differences="No paper ran these systems side by side, so there are no paper numbers. Two "
                    "simulators, one definition: the pull side's timer starts one client link after "
                    "submission (when the task reaches the switch), as the push side's starts at the "
                    "spine. The pull simulator has a single switch, so its multi-rack case is the "
                    "same distance to more executors; the push systems see the rack structure "
                    "(Horus and RackSched schedule per rack at the leaves).",
    )


register(experiment())
register_family("comparison", experiment)
