"""RackSched (OSDI'20) Fig. 2: inter-server policy × intra-server policy in
one rack of 8 servers × 8 cores, Exp(50) and Trimodal(5, 50, 500), 25 µs PS
slice, no network delay (§2: "the simulation does not model ... the network
delay")."""
from __future__ import annotations

import pandas as pd

from ..sweep import Point
from .base import Claim, Experiment, all_within, fmt, knee, lines, register

PAPER = "RackSched (OSDI'20)"
POLICIES = {"random": "per", "jsq": "JSQ", "central": "global"}
MODELS = {"server-cfcfs": "cFCFS", "server-ps": "PS", "fcfs": "cFCFS"}


def points(scale):
    loads = [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper" else [0.3, 0.5, 0.7, 0.8, 0.9]
    pts = []
    for svc in ["rs-exp50", "rs-trimodal"]:
        for pol in POLICIES:
            # global-cFCFS: a central queue handing each task to an idle core
            # (node = core). global-PS: all 64 cores as one processor-sharing
            # server, i.e. one node of 64 cores under `server-ps` (the
            # scheduler has a single choice, so its policy is immaterial).
            for model in ["server-cfcfs", "server-ps"] if pol != "central" else ["fcfs", "server-ps"]:
                for load in loads:
                    one_server = pol == "central" and model == "server-ps"
                    cfg = {
                        "policy": "random" if one_server else pol,
                        "topology": {"kind": "single-rack",
                                     "servers": 1 if one_server else 8,
                                     "cores_per_server": 64 if one_server else 8},
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
            ok=all(min(k.get("global-cFCFS") or 1.0, k.get("global-PS") or 1.0) >= (k.get(p) or 1.0)
                   for p in ("per-cFCFS", "per-PS")),
            tolerance="order only (the loads are read off a figure): both global policies' knees "
                      "at or above both per-server policies'",
        ))
        hi = max(d["load"])
        dd = d[d["load"] == hi].set_index("policy")
        r = [float(dd.loc[f"JSQ-{m}", "p99_us"] / dd.loc["global-cFCFS", "p99_us"]) for m in ("cFCFS", "PS")]
        out.append(Claim(f"{svc}: JSQ-cFCFS and JSQ-PS are nearly as good as the centralized policies",
                         "nearly the same", f"p99 JSQ/global at load {hi}: cFCFS {r[0]:.2f}×, PS {r[1]:.2f}×",
                         ok=max(r) < 2.0,
                         tolerance="both JSQ/global p99 ratios below 2×"))
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
    differences="global-PS is simulated as one 64-core server under processor sharing with the "
                "same 25 µs slice (the rack as one PS server, as the paper's idealisation); "
                "JSQ-cFCFS and JSQ-PS are compared against global-cFCFS.",
))


# --- RackSched §4 testbed figures (Fig. 10-13, 15) in simulation ----------------------
#
# §4.1 testbed: eight worker servers with 8-core CPUs running Shinjuku (its
# own centralized queue per server, preemption after 250 µs), behind one
# Tofino ToR. We model a server as one cFCFS queue over its cores with
# processor sharing at a 250 µs slice (`server-ps`), the ToR as RackSched's
# power-of-k over servers with loads from replies (`racksched`), and
# "Shinjuku" (requests sent to a uniformly random server) as `random`.
# Hops: 2 µs constant, no loss.

import math  # noqa: E402

import numpy as np  # noqa: E402

MEAN_US = {"rs-exp50": 50.0, "rs-bimodal": 95.0, "rs-bimodal-50-50": 275.0,
           "trimodal": 1850.0,
           # lognormal mixes, σ = 0.1 (crates/config/src/workload.rs ROCKSDB_SIGMA)
           "rs-rocksdb-90-10": (0.9 * 50.0 + 0.1 * 740.0) * math.exp(0.1 ** 2 / 2),
           "rs-rocksdb-50-50": (0.5 * 50.0 + 0.5 * 740.0) * math.exp(0.1 ** 2 / 2)}
SERVICE_NAMES = {"rs-exp50": "Exp(50)", "rs-bimodal": "Bimodal(90%-50, 10%-500)",
                 "rs-bimodal-50-50": "Bimodal(50%-50, 50%-500)",
                 "trimodal": "Trimodal(50, 500, 5000)", "rs-rocksdb-90-10": "RocksDB 90% GET",
                 "rs-rocksdb-50-50": "RocksDB 50% GET"}
SYSTEM = {"racksched": ("racksched", 2), "shinjuku": ("random", 2), "rr": ("round-robin", 2),
          "shortest": ("racksched", 8), "sampling-2": ("racksched", 2),
          "sampling-4": ("racksched", 4)}
STYLE_RS = {"racksched": ("tab:blue", "o", "RackSched"), "shinjuku": ("tab:red", "s", "Shinjuku"),
            "rr": ("tab:green", "^", "RR"), "shortest": ("black", "x", "Shortest"),
            "sampling-2": ("tab:blue", "o", "Sampling-2"),
            "sampling-4": ("tab:orange", "D", "Sampling-4")}


def rack_loads(scale):
    return ([0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95] if scale == "paper"
            else [0.5, 0.7, 0.8, 0.9, 0.95])


def rack_point(labels, system, load, service, cores, scale):
    policy, samples = SYSTEM[system]
    servers = len(cores)
    cfg = {
        "policy": policy,
        "topology": {"kind": "racks", "racks": [list(cores)]},
        "placement": {"sizes": [sum(cores)], "mode": "colocated"},
        "workload": {"service": {"kind": "preset", "name": service}, "load": load,
                     "tasks_per_worker": 4000 if scale == "paper" else 600},
        "network": {"hop_delay": {"kind": "constant", "us": 2.0}, "loss": 0.0},
        "workers": {"model": "server-ps", "ps_slice_us": 250.0},
        "schedulers": {"samples": min(samples, servers)},
    }
    return Point({**labels, "system": system, "load": load}, cfg)


def rack_table(runs, pools):
    return runs[[c for c in ("service", "servers", "system", "load") if c in runs]
                + ["p50_us", "p99_us", "mean_us"]].copy()


def with_krps(t, cores):
    """x axis of the paper: offered requests per second (KRPS) = load × cores / mean."""
    t = t.copy()
    n = t["servers"].map(lambda s: 8 * s) if "servers" in t else cores
    t["krps"] = t["load"] * n / t["service"].map(MEAN_US) * 1e3
    return t


def rs_lines(t, png, panel, title=""):
    import matplotlib  # noqa: F401  (base._plt sets the backend)

    from . import base

    saved = dict(base.STYLE)
    base.STYLE.update(STYLE_RS)
    try:
        lines(t, png, "krps", "p99_us", series="system", panel=panel,
              xlabel="throughput (KRPS)", ylabel="99% latency (µs)", title=title)
    finally:
        base.STYLE.clear()
        base.STYLE.update(saved)


def sustained(d, target_factor=1.5):
    """Highest KRPS whose p99 stays under `target_factor` × the lowest-load p99:
    'maintains low tail latency until X KRPS'."""
    d = d.sort_values("krps")
    base_p99 = d["p99_us"].iloc[0]
    ok = d[d["p99_us"] <= target_factor * base_p99]
    return float(ok["krps"].max()) if len(ok) else float("nan")


HOMOGENEOUS = [8] * 8
HETEROGENEOUS = [4, 4, 4, 4, 7, 7, 7, 7]
SYNTH = ["rs-exp50", "rs-bimodal", "rs-bimodal-50-50", "trimodal"]


# §4.2/§4.4: "both RackSched and Shinjuku have a separate queue for each
# request type" for Bimodal(50-50), Trimodal and RocksDB 50 % GET (§3.6).
MULTI_QUEUE = {"rs-bimodal-50-50", "trimodal", "rs-rocksdb-50-50"}


def queues_as_in_paper(point, service):
    """Multi-queue servers (and per-type ToR counters) where the paper used them."""
    if service in MULTI_QUEUE:
        point.config["workers"]["multi_queue"] = True
    return point


def fig10_points(scale, cores=HOMOGENEOUS):
    return [queues_as_in_paper(rack_point({"service": svc}, s, l, svc, cores, scale), svc)
            for svc in SYNTH for s in ["racksched", "shinjuku"] for l in rack_loads(scale)]


def fig10_claims(t):
    out = []
    for svc, paper in [("rs-exp50", (800, 950)), ("rs-bimodal", (500, 650))]:
        d = t[t.service == svc]
        sh, rs = sustained(d[d.system == "shinjuku"]), sustained(d[d.system == "racksched"])
        out.append(all_within(f"{SERVICE_NAMES[svc]}: low tail until {paper[0]} KRPS "
                              f"(Shinjuku) vs {paper[1]} KRPS (RackSched)", list(paper), [sh, rs],
                              rel=0.25, unit=" KRPS",
                              ours_note=" (highest tested rate with p99 ≤ 1.5× its lowest-load "
                                        "value)"))
    gains = {}
    for svc in ["rs-bimodal-50-50", "trimodal"]:
        d = t[(t.service == svc) & (t.load == max(t.load))].set_index("system")
        gains[svc] = float(d.loc["shinjuku", "p99_us"] / d.loc["racksched", "p99_us"])
    out.append(Claim("The improvement is larger for Trimodal than for Bimodal(50-50)",
                     "Trimodal gain > Bimodal gain",
                     f"p99 Shinjuku/RackSched at load {max(t.load)}: "
                     + ", ".join(f"{SERVICE_NAMES[s]} {g:.1f}×" for s, g in gains.items()),
                     ok=bool(gains["trimodal"] > gains["rs-bimodal-50-50"]),
                     tolerance="direction (the paper states no number): Trimodal's gain above "
                               "Bimodal(50-50)'s"))
    return out


RS_DIFF = ("Servers are modelled as one queue per server with processor sharing at a 250 µs "
           "slice (Shinjuku's preemption after 250 µs) and no dispatcher or networking cost; "
           "the ToR sees a server's queue length in every reply, 2 µs per hop. Homogeneous "
           "servers have 8 workers (the paper's 8-core CPUs; 650 KRPS of Bimodal(90-10) needs "
           "more than 7 × 8 workers). Bimodal(50-50), Trimodal and RocksDB 50/50 run multi-queue "
           "as in the paper (§3.6): a queue per request type at every server and a ToR counter "
           "per (server, type); the paper does not say which type queue a freed core serves, so "
           "it takes the head that has waited longest relative to its type's mean service time "
           "(Shinjuku's per-type latency targets, set proportional to the means).")

register(Experiment(
    name="racksched-fig10", paper=PAPER, figure="Fig. 10",
    title="RackSched vs Shinjuku, synthetic workloads, homogeneous servers",
    setup="Eight servers × 8 workers in one rack; RackSched (power-of-2 over servers at the ToR, "
          "loads from replies) against Shinjuku alone (a uniformly random server); inside a "
          "server one queue with preemption every 250 µs. Exp(50), Bimodal(90-10), "
          "Bimodal(50-50), Trimodal(50, 500, 5000); p99 against offered KRPS.",
    points=fig10_points,
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 64),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig10_claims,
    differences=RS_DIFF + " Our knees sit closer to capacity than the testbed's (Exp(50): the "
                "paper's 800 / 950 KRPS are 0.62 / 0.74 of 64 workers' 1.28 M RPS): Shinjuku's "
                "dispatcher and networking cores, which saturate first on the testbed, are not "
                "modelled. Multi-queue raises the overall p99 of panels c-d, which the long type "
                "sets and the per-type pick serves later (RackSched at load 0.95: 913 → 1,062 µs "
                "for Bimodal(50-50), 9.5 → 14.0 ms for Trimodal against single-queue runs), and "
                "turns the Trimodal-vs-Bimodal ordering of the gains around (single-queue: 3.9× "
                "vs 3.0×).",
))


def fig11_claims(t):
    hi = max(t.load)
    parts, ok = [], True
    for svc in SYNTH:
        d = t[(t.service == svc) & (t.load == hi)].set_index("system")
        g = float(d.loc["shinjuku", "p99_us"] / d.loc["racksched", "p99_us"])
        parts.append(f"{SERVICE_NAMES[svc]} {g:.1f}×")
        ok &= g > 1
    return [Claim("With heterogeneous servers RackSched's load awareness improves on Shinjuku's "
                  "uniform spread on every workload", "RackSched better everywhere",
                  f"p99 Shinjuku/RackSched at load {hi}: " + ", ".join(parts), ok=bool(ok),
                  tolerance="direction (the paper states no number): Shinjuku/RackSched p99 "
                            "above 1× on every workload")]


register(Experiment(
    name="racksched-fig11", paper=PAPER, figure="Fig. 11",
    title="RackSched vs Shinjuku, heterogeneous servers",
    setup="Four servers with 4 workers and four with 7 (44 workers) in one rack; otherwise as "
          "Fig. 10. Shinjuku's uniform spread overloads the 4-worker servers.",
    points=lambda scale: fig10_points(scale, HETEROGENEOUS),
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 44),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig11_claims,
    differences=RS_DIFF,
))


def fig12_points(scale):
    return [rack_point({"servers": n}, s, l, "rs-bimodal", [8] * n, scale)
            for n in [1, 2, 4, 8] for s in ["racksched", "shinjuku"] for l in rack_loads(scale)]


def fig12_table(runs, pools):
    d = rack_table(runs, pools)
    d["service"] = "rs-bimodal"
    return with_krps(d, None)


def fig12_claims(t):
    one = t[t.servers == 1].pivot_table(index="load", columns="system", values="p99_us")
    same = float((one["shinjuku"] / one["racksched"]).sub(1).abs().max())
    d8 = t[t.servers == 8]
    sh, rs = sustained(d8[d8.system == "shinjuku"]), sustained(d8[d8.system == "racksched"])
    return [
        Claim("With one server RackSched and Shinjuku perform the same", "same",
              f"largest p99 difference {100 * same:.0f}%", ok=bool(same < 0.25),
              tolerance="p99 within 25 % of each other at every load"),
        all_within("Eight servers: Shinjuku keeps a low tail until 500 KRPS, RackSched until "
                   "650 KRPS", [500, 650], [sh, rs], rel=0.25, unit=" KRPS"),
    ]


def fig12_plot(t, png):
    d = t.copy()
    d["system"] = d["system"] + " (" + d["servers"].astype(str) + ")"
    lines(d, png, "krps", "p99_us", series="system", xlabel="throughput (KRPS)",
          ylabel="99% latency (µs)", title="Scalability, Bimodal(90-10)")


register(Experiment(
    name="racksched-fig12", paper=PAPER, figure="Fig. 12",
    title="Scalability: 1, 2, 4 and 8 servers",
    setup="RackSched and Shinjuku with 1, 2, 4 and 8 servers × 8 workers, Bimodal(90-10).",
    points=fig12_points,
    table=fig12_table,
    plot=fig12_plot,
    claims=fig12_claims,
    differences=RS_DIFF,
))


def fig13_points(scale):
    return [queues_as_in_paper(rack_point({"service": svc}, s, l, svc, HOMOGENEOUS, scale), svc)
            for svc in ["rs-rocksdb-90-10", "rs-rocksdb-50-50"]
            for s in ["racksched", "shinjuku"] for l in rack_loads(scale)]


def fig13_claims(t):
    d = t[t.service == "rs-rocksdb-90-10"]
    sh, rs = sustained(d[d.system == "shinjuku"]), sustained(d[d.system == "racksched"])
    d5 = t[t.service == "rs-rocksdb-50-50"]
    sh5, rs5 = sustained(d5[d5.system == "shinjuku"]), sustained(d5[d5.system == "racksched"])
    return [all_within("RocksDB 90 % GET: Shinjuku keeps a low tail until 300 KRPS, RackSched "
                       "until 500 KRPS", [300, 500], [sh, rs], rel=0.25, unit=" KRPS"),
            Claim("RocksDB 50 % GET, multi-queue: RackSched keeps a low tail at a higher load "
                  "than Shinjuku", "RackSched higher (no number given)",
                  f"Shinjuku {fmt(sh5)} / RackSched {fmt(rs5)} KRPS", ok=bool(rs5 > sh5),
                  tolerance="direction (the paper states no number): RackSched's sustained rate "
                            "above Shinjuku's")]


register(Experiment(
    name="racksched-fig13", paper=PAPER, figure="Fig. 13a-b",
    title="RocksDB: 90 % and 50 % GET",
    setup="RocksDB service times (GET median 50 µs, SCAN median 740 µs, lognormal σ = 0.1), 90/10 "
          "and 50/50 mixes, RackSched against Shinjuku on 8 × 8 workers.",
    points=fig13_points,
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 64),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig13_claims,
    differences=RS_DIFF + " Fig. 13c-d (GET and SCAN separately) is racksched-fig13cd.",
))


def fig15_points(scale):
    return [rack_point({"service": svc}, s, l, svc, HOMOGENEOUS, scale)
            for svc in ["rs-bimodal", "rs-bimodal-50-50"]
            for s in ["rr", "shortest", "sampling-2", "sampling-4"] for l in rack_loads(scale)]


def fig15_claims(t):
    out = []
    lo, hi = min(t.load), max(t.load)
    for svc in ["rs-bimodal", "rs-bimodal-50-50"]:
        d = t[t.service == svc]
        p = d.pivot_table(index="load", columns="system", values="p99_us")
        out.append(Claim(f"{SERVICE_NAMES[svc]}: RR has a long tail at high load; Sampling-2 ≈ "
                         "Sampling-4", "RR worst at high load; S-2 ≈ S-4",
                         f"p99 at load {hi}: " + ", ".join(f"{c} {p.loc[hi, c]:.0f} µs" for c in p.columns),
                         ok=bool(p.loc[hi, "rr"] >= p.loc[hi, "sampling-2"]
                                 and abs(p.loc[hi, "sampling-2"] / p.loc[hi, "sampling-4"] - 1) < 0.5),
                         tolerance="RR's p99 at the highest load at least Sampling-2's, and "
                                   "Sampling-2 within 50 % of Sampling-4"))
        out.append(Claim(f"{SERVICE_NAMES[svc]}: Shortest (delayed queue lengths) herds and has a "
                         "high tail even at low load", "Shortest above Sampling-2 at low load",
                         f"p99 at load {lo}: shortest {p.loc[lo, 'shortest']:.0f} µs, sampling-2 "
                         f"{p.loc[lo, 'sampling-2']:.0f} µs",
                         ok=bool(p.loc[lo, "shortest"] > p.loc[lo, "sampling-2"]),
                         tolerance="direction (the paper states no number): Shortest's p99 above "
                                   "Sampling-2's at the lowest load"))
    return out


register(Experiment(
    name="racksched-fig15", paper=PAPER, figure="Fig. 15",
    title="Switch scheduling policies: RR, Shortest, Sampling-2, Sampling-4",
    setup="The ToR policy varied on 8 × 8 workers: round robin over servers, the shortest queue "
          "among all 8 (loads from replies), and power-of-2 / power-of-4 sampling; "
          "Bimodal(90-10) and Bimodal(50-50).",
    points=fig15_points,
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 64),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig15_claims,
    differences=RS_DIFF + " Shortest is power-of-8 over the 8 servers (every server sampled, "
                "ties broken at random), with the same reply-delayed loads as RackSched.",
))


# --- Fig. 13c-d: RocksDB 50 % GET under multi-queue, per request type ----------------

def fig13cd_table(runs, pools):
    d = with_krps(rack_table(runs, pools), 64)
    for name in ("get", "scan"):
        d[f"{name}_p99_us"] = runs[f"class_{name}_p99_us"].to_numpy()
    return d


def fig13cd_claims(t):
    lo, hi = min(t.load), max(t.load)
    out = []
    for name, label in [("get", "GET"), ("scan", "SCAN")]:
        p = t.pivot_table(index="load", columns="system", values=f"{name}_p99_us")
        low = float(p.loc[lo, "shinjuku"] / p.loc[lo, "racksched"])
        high = float(p.loc[hi, "shinjuku"] / p.loc[hi, "racksched"])
        out.append(Claim(
            f"{label}: comparable tail at low load, significantly lower at high load with "
            "RackSched (balancing each type does not sacrifice either)",
            "comparable low, RackSched lower high",
            f"p99 Shinjuku/RackSched: {low:.2f}× at load {lo}, {high:.2f}× at load {hi}",
            ok=bool(0.67 <= low <= 1.5 and high > 1.2),
            tolerance="Shinjuku/RackSched p99 within 1.5× either way at low load, above 1.2× at "
                      "high load"))
    # "Supports higher total request load": the highest tested rate whose
    # p99 for the type stays within a latency SLO of 4× the type's median
    # service time (§4.4: GET 50 µs, SCAN 740 µs), the same bound for both.
    for name, label, median in [("get", "GET", 50.0), ("scan", "SCAN", 740.0)]:
        slo = 4 * median
        ok_krps = {s: float(t[(t.system == s) & (t[f"{name}_p99_us"] <= slo)]["krps"].max())
                   for s in ("shinjuku", "racksched")}
        sh, rs = ok_krps["shinjuku"], ok_krps["racksched"]
        out.append(Claim(f"{label}: RackSched supports a higher total request load",
                         "higher (no number given)",
                         f"Shinjuku {fmt(sh)} / RackSched {fmt(rs)} KRPS (highest tested rate "
                         f"with the {label} p99 ≤ {slo:,.0f} µs, 4× its median)",
                         ok=bool(rs > sh),
                         tolerance="direction (the paper states no number): RackSched's "
                                   "sustained rate above Shinjuku's"))
    return out


def fig13cd_plot(t, png):
    d = pd.concat([t.assign(request=label, p99_us=t[f"{name}_p99_us"])
                   for name, label in [("get", "GET"), ("scan", "SCAN")]], ignore_index=True)
    rs_lines(d, png, "request", title="RocksDB 50 % GET, multi-queue, per request type")


register(Experiment(
    name="racksched-fig13cd", paper=PAPER, figure="Fig. 13c-d",
    title="RocksDB 50 % GET / 50 % SCAN, multi-queue: p99 of GET and of SCAN",
    setup="The Fig. 13b runs (RocksDB GET median 50 µs, SCAN median 740 µs, 50/50, RackSched "
          "against Shinjuku on 8 × 8 workers, a queue per request type at every server and a "
          "ToR counter per (server, type)), with the 99th percentile of each request type "
          "against the total offered KRPS.",
    points=lambda scale: [p for p in fig13_points(scale)
                          if p.labels["service"] == "rs-rocksdb-50-50"],
    table=fig13cd_table,
    plot=fig13cd_plot,
    claims=fig13cd_claims,
    differences=RS_DIFF + " The per-type percentiles come from the simulator's per-class "
                "response histograms (3 significant digits).",
))


# --- Fig. 16: server load tracking mechanisms ---------------------------------------
#
# §4.6: INT1 (per-server queue lengths piggybacked on replies, power-of-2:
# RackSched itself), INT2 (only the least loaded server seen in replies),
# INT3 (per-server outstanding work: summed service times), Proactive (the
# switch adds one per dispatch and removes one per reply). The paper blames
# Proactive's weakness on packet loss and retransmission corrupting its
# counters but states no loss rate; with no loss its counters are exact. We
# run every mechanism at a stated per-packet loss of 1e-3 (lost requests are
# not retransmitted: each leaves a +1 that is never removed) and add
# Proactive without loss as the reference.

TRACKING_LOSS = 1e-3
TRACKING = {"int1": ("int1", TRACKING_LOSS), "int2": ("int2", TRACKING_LOSS),
            "int3": ("int3", TRACKING_LOSS), "proactive": ("proactive", TRACKING_LOSS),
            "proactive-no-loss": ("proactive", 0.0)}
STYLE_RS.update({"int1": ("tab:blue", "o", "INT1"), "int2": ("tab:red", "s", "INT2"),
                 "int3": ("tab:green", "^", "INT3"),
                 "proactive": ("tab:purple", "D", f"Proactive (loss {TRACKING_LOSS:g})"),
                 "proactive-no-loss": ("tab:gray", "x", "Proactive (no loss)")})


def fig16_points(scale):
    pts = []
    for svc in ["rs-bimodal", "rs-bimodal-50-50"]:
        for mech, (mode, loss) in TRACKING.items():
            for load in rack_loads(scale):
                p = rack_point({"service": svc}, "racksched", load, svc, HOMOGENEOUS, scale)
                p.labels["system"] = mech
                p.config["schedulers"]["load_tracking"] = mode
                p.config["network"]["loss"] = loss
                pts.append(p)
    return pts


def fig16_claims(t):
    """Each mechanism against INT1 by the geometric mean, over the loads from
    0.7 up (where the mechanisms can differ), of its p99 over INT1's; "worse"
    needs more than 5 %, "comparable" within 20 %."""
    out = []
    for svc in ["rs-bimodal", "rs-bimodal-50-50"]:
        d = t[(t.service == svc) & (t.load >= 0.7)]
        p = d.pivot_table(index="load", columns="system", values="p99_us")
        ratio = {m: float(np.exp(np.log(p[m] / p["int1"]).mean())) for m in TRACKING}
        name = SERVICE_NAMES[svc]
        span = f"p99 / INT1's, geometric mean over loads {min(p.index)}-{max(p.index)}"
        hi = max(p.index)
        out.append(Claim(f"{name}: INT1 works the best", "INT1 lowest",
                         f"{span}: " + ", ".join(f"{m} {ratio[m]:.2f}×" for m in TRACKING
                                                 if m != "int1")
                         + f"; p99 at load {hi}: " + ", ".join(f"{m} {p.loc[hi, m]:.0f} µs"
                                                               for m in TRACKING),
                         ok=bool(min(ratio[m] for m in ("int2", "int3", "proactive")) >= 0.95),
                         tolerance="every other method's p99 ratio to INT1 at least 0.95×"))
        out.append(Claim(f"{name}: INT3 is comparable to INT1", "comparable",
                         f"{span}: {ratio['int3']:.2f}×", ok=bool(0.8 <= ratio["int3"] <= 1.25),
                         tolerance="INT3/INT1 p99 ratio within 0.8-1.25×"))
        out.append(Claim(f"{name}: INT2 performs worse than INT1 (herding on the one recorded "
                         "minimum)", "INT2 worse", f"{span}: {ratio['int2']:.2f}×",
                         ok=bool(ratio["int2"] > 1.05),
                         tolerance="INT2/INT1 p99 ratio above 1.05×"))
        out.append(Claim(f"{name}: Proactive does not work as well as the others (loss and "
                         "retransmission corrupt its counters; no rate stated)", "Proactive worse",
                         f"{span}: {ratio['proactive']:.2f}× at loss {TRACKING_LOSS:g}, "
                         f"{ratio['proactive-no-loss']:.2f}× without loss",
                         ok=bool(ratio["proactive"] > 1.05),
                         tolerance="Proactive/INT1 p99 ratio above 1.05× with loss"))
    return out


register(Experiment(
    name="racksched-fig16", paper=PAPER, figure="Fig. 16",
    title="Server load tracking: INT1, INT2, INT3, Proactive",
    setup="RackSched's ToR on 8 × 8 workers (single queue, preemption every 250 µs), "
          "Bimodal(90-10) and Bimodal(50-50), with four ways to know server loads: INT1 "
          "(queue lengths piggybacked on replies, power-of-2; RackSched's design), INT2 (one "
          "register holding the least loaded server seen in replies, every request sent "
          "there; one in four goes to a random server, as the RackSched artifact does), INT3 "
          "(replies carry the summed service time of the server's outstanding requests, "
          "power-of-2) and Proactive (the switch adds one to the chosen server per request in "
          "a second pipeline pass and removes one per reply, power-of-2). Per-packet loss "
          f"{TRACKING_LOSS:g} for all four (the paper gives no rate), and Proactive without "
          "loss for reference.",
    points=fig16_points,
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 64),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig16_claims,
    differences=RS_DIFF + " The paper states no loss rate; 1e-3 per packet is ours, and lost "
                "requests are not retransmitted (a retransmission would add a second +1 for the "
                "same request, a larger error). Proactive's error grows with run length (leaked "
                "counts never drain), so the paper-scale runs, 6.7× longer, degrade it more. "
                "INT2's 1-in-4 random requests follow the artifact's int2.p4; without them no "
                "other server would ever reply and INT2 would send everything to one server.",
))


# --- Fig. 14: comparison with R2P2 and client-based scheduling (§4.5) -----------------
#
# Four systems on 8 servers × 8 cores. RackSched and Shinjuku as in Fig. 10.
# Client(100): 100 clients sending at equal rates (each task picks its client
# uniformly: Poisson splitting), each running RackSched's power-of-2 over the
# 8 servers on loads learned only from the replies to its own requests
# (`pow2-delayed` with `schedulers.clients = 100`). R2P2: JBSQ(k) at the
# switch over the 64 cores, each core a non-preemptive FCFS queue of at most
# k requests (`r2p2`, `workers.model = "fcfs"`). The paper gives no bound;
# k = 3 is the one Draconis (§8) runs R2P2 with.

FIG14_SYSTEMS = {
    "racksched": {"policy": "racksched", "schedulers": {"samples": 2}},
    "shinjuku": {"policy": "random"},
    "client-100": {"policy": "pow2-delayed", "schedulers": {"samples": 2, "clients": 100}},
    "r2p2": {"policy": "r2p2", "workers": {"model": "fcfs"}, "schedulers": {"jbsq_bound": 3}},
}
STYLE_RS.update({"client-100": ("tab:green", "^", "Client(100)"),
                 "r2p2": ("tab:purple", "D", "R2P2")})
FIG14_SERVICES = ["rs-bimodal", "rs-bimodal-50-50"]


def fig14_points(scale):
    pts = []
    for svc in FIG14_SERVICES:
        for system, over in FIG14_SYSTEMS.items():
            for load in rack_loads(scale):
                p = rack_point({"service": svc}, "racksched", load, svc, HOMOGENEOUS, scale)
                p.labels["system"] = system
                cfg = p.config
                cfg["policy"] = over["policy"]
                cfg["schedulers"] = dict(over.get("schedulers", {}))
                cfg["workers"] = {**cfg["workers"], **over.get("workers", {})}
                pts.append(p)
    return pts


def fig14_claims(t):
    out = []
    hi = max(t.load)
    sus = {}
    for svc in FIG14_SERVICES:
        d = t[t.service == svc]
        sus[svc] = {s: sustained(d[d.system == s]) for s in FIG14_SYSTEMS}
        top = d[d.load == hi].set_index("system")["p99_us"]
        best = top.idxmin()
        out.append(Claim(
            f"{SERVICE_NAMES[svc]}: RackSched keeps a low tail to the highest rate of the four",
            "RackSched best",
            "highest KRPS with p99 ≤ 1.5× its lowest-load value: "
            + ", ".join(f"{s} {fmt(v)}" for s, v in sus[svc].items())
            + f"; p99 at load {hi}: " + ", ".join(f"{s} {top[s]:.0f} µs" for s in FIG14_SYSTEMS),
            ok=bool(best == "racksched"
                    and all(sus[svc]["racksched"] >= v for v in sus[svc].values())),
            tolerance="RackSched has the lowest p99 at the highest load and the highest "
                      "sustained rate (ties count)",
        ))
        p = d.pivot_table(index="load", columns="system", values="p99_us")
        diff = float((p["client-100"] / p["shinjuku"]).sub(1).abs().max())
        out.append(Claim(
            f"{SERVICE_NAMES[svc]}: Client(100) performs nearly the same as Shinjuku",
            "nearly the same",
            f"largest p99 difference over the loads {100 * diff:.0f}%",
            ok=bool(diff < 0.25),
            tolerance="p99 within 25 % of Shinjuku's at every load",
        ))
    gap = {}
    for svc in FIG14_SERVICES:
        d = t[(t.service == svc) & (t.load == hi)].set_index("system")
        gap[svc] = float(d.loc["r2p2", "p99_us"] / d.loc["racksched", "p99_us"])
    out.append(Claim(
        "R2P2 is close to RackSched under Bimodal(50-50) and much worse under Bimodal(90-10)",
        "gap larger under 90-10",
        f"p99 R2P2/RackSched at load {hi}: "
        + ", ".join(f"{SERVICE_NAMES[s]} {g:.2f}×" for s, g in gap.items()),
        ok=bool(gap["rs-bimodal"] > gap["rs-bimodal-50-50"] and gap["rs-bimodal-50-50"] < 1.3),
        tolerance="R2P2/RackSched p99 below 1.3× under 50-50 and larger under 90-10",
    ))
    return out


register(Experiment(
    name="racksched-fig14", paper=PAPER, figure="Fig. 14",
    title="Comparison with other solutions: R2P2 (JBSQ) and client-based scheduling",
    setup="Eight servers × 8 workers. RackSched (power-of-2 over servers at the ToR, loads "
          "from replies), Shinjuku (a random server), Client(100) (100 equal-rate clients, each "
          "running RackSched's power-of-2 on the loads piggybacked on replies to its own "
          "requests) and R2P2 (JBSQ(3) at the switch over the 64 cores, non-preemptive FCFS at "
          "each core). Bimodal(90-10) and Bimodal(50-50); p99 against offered KRPS.",
    points=fig14_points,
    table=lambda runs, pools: with_krps(rack_table(runs, pools), 64),
    plot=lambda t, png: rs_lines(t, png, "service"),
    claims=fig14_claims,
    differences=RS_DIFF + " R2P2's bound is not given in the paper; we use JBSQ(3) as Draconis "
                "does, with the router's queue in the switch at no recirculation cost and no "
                "preemption at the cores. Client(100) picks each task's client uniformly at "
                "random (equal rates), and a client learns a server's load two hops after the "
                "reply leaves the server; client software delay is not modelled (as in §2). "
                "Below the knee R2P2's p99 is under RackSched's: with a free router queue, "
                "JBSQ over 64 cores is close to one central FCFS queue until every core holds "
                "a task, while RackSched's servers share 8 cores by processor sharing, which "
                "stretches the 500 µs requests; the paper's R2P2 pays recirculation and a "
                "software router. Client(100) sits between Shinjuku and RackSched at high "
                "load (within 8 % of Shinjuku's p99 up to load 0.8, 15-37 % below it at "
                "0.9-0.95 in the reduced run): a client hears from a given server every 1.25 ms "
                "(Bimodal(90-10) at 0.95) to 3.6 ms (50-50), stale but still informative about "
                "the queues that build up near saturation.",
))
