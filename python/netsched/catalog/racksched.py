"""RackSched (OSDI'20) Fig. 2: inter-server policy × intra-server policy in
one rack of 8 servers × 8 cores, Exp(50) and Trimodal(5, 50, 500), 25 µs PS
slice, no network delay (§2: "the simulation does not model ... the network
delay")."""
from __future__ import annotations

import pandas as pd

from ..sweep import Point
from .base import Claim, Experiment, fmt, knee, lines, register

PAPER = "RackSched (OSDI'20)"
POLICIES = {"random": "per", "jsq": "JSQ", "central": "global"}
MODELS = {"server-cfcfs": "cFCFS", "server-ps": "PS", "fcfs": "cFCFS"}


def points(scale):
    loads = [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper" else [0.3, 0.5, 0.7, 0.8, 0.9]
    pts = []
    for svc in ["rs-exp50", "rs-trimodal"]:
        for pol in POLICIES:
            # A central queue hands each task to an idle core: that is
            # global-cFCFS over all 64 cores (node = core). A rack-wide PS
            # has no counterpart in the simulator, so global-PS is not run.
            for model in (["server-cfcfs", "server-ps"] if pol != "central" else ["fcfs"]):
                for load in loads:
                    cfg = {
                        "policy": pol,
                        "topology": {"kind": "single-rack", "servers": 8, "cores_per_server": 8},
                        "placement": {"sizes": [64], "mode": "colocated"},
                        "workload": {"service": {"kind": "preset", "name": svc}, "load": load,
                                     "tasks_per_worker": 5000 if scale == "paper" else 1000},
                        "network": {"hop_delay": {"kind": "constant", "us": 0.0}, "loss": 0.0,
                                    "resubmit_ns": 0},
                        "workers": {"model": model, "ps_slice_us": 25.0},
                    }
                    pts.append(Point({"service": svc, "scheduler": pol, "model": model,
                                      "load": load}, cfg))
    return pts


def table(runs, pools):
    d = runs[["service", "scheduler", "model", "load", "p50_us", "p99_us", "mean_us"]].copy()
    d["policy"] = [f"{POLICIES[p]}-{MODELS[m]}" for p, m in zip(d["scheduler"], d["model"])]
    return d


def claims(t):
    out = []
    for svc in dict.fromkeys(t["service"]):
        d = t[t["service"] == svc]
        k = {p: knee(d[d.policy == p], factor=2.0) for p in dict.fromkeys(d.policy)}
        out.append(Claim(
            f"{svc}: per-cFCFS and per-PS tails rise past load ~0.75 and ~0.5; global-cFCFS/PS stay "
            "low until near saturation",
            "per-cFCFS 0.75, per-PS 0.5, global ≈ saturation",
            "load where p99 first exceeds 2× its low-load value: "
            + ", ".join(f"{p} {fmt(v)}" for p, v in k.items()),
            ok=all((k.get("global-cFCFS") or 1.0) >= (k.get(p) or 1.0) for p in ("per-cFCFS", "per-PS")),
        ))
        hi = max(d["load"])
        dd = d[d["load"] == hi].set_index("policy")
        r = [float(dd.loc[f"JSQ-{m}", "p99_us"] / dd.loc["global-cFCFS", "p99_us"]) for m in ("cFCFS", "PS")]
        out.append(Claim(f"{svc}: JSQ-cFCFS and JSQ-PS are nearly as good as the centralized policies",
                         "nearly the same", f"p99 JSQ/global at load {hi}: cFCFS {r[0]:.2f}×, PS {r[1]:.2f}×",
                         ok=max(r) < 2.0))
    return out


def plot(t, png):
    lines(t, png, "load", "p99_us", series="policy", panel="service", xlabel="load",
          ylabel="p99 latency (µs)")


register(Experiment(
    name="racksched-fig2", paper=PAPER, figure="Fig. 2",
    title="Inter-server (random, JSQ, global) × intra-server (cFCFS, PS) scheduling in one rack",
    setup="Eight servers of eight cores; requests go to a random server (per-), the server with "
          "the shortest queue (JSQ-) or one central queue over all 64 cores (global-); inside a "
          "server they share one cFCFS queue or processor sharing with a 25 µs slice. Exp(50) and "
          "Trimodal(5, 50, 500); zero network delay.",
    points=points,
    table=table,
    plot=plot,
    claims=claims,
    differences="The paper's global-PS shares all 64 cores as one processor-sharing server; the "
                "simulator has no rack-wide PS, so only global-cFCFS (one central FCFS queue "
                "handing tasks to idle cores) is run, and JSQ-PS is compared against it.",
))
