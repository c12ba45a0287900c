"""Draconis (EuroSys'24) §8 figures on the pull simulator (`netsched pull`,
docs/draconis.md "Simulator"): Fig. 5a-13.

Setup of every entry (§8 "Testbed"): one switch, 10 nodes × 16 executors,
2 µs host↔switch links, 500 ns per recirculation pass, executors ask again as
soon as a no-op arrives (one poll per round trip, as the authors' executors do;
docs/draconis.md "Calibration"). Metric: *scheduling latency* (docs/draconis.md: first
submission by the client → first start on an executor), the paper's
"scheduling delay". Reduced scale runs fewer tasks per run (and fewer loads);
paper scale runs 100K tasks per run at the paper's loads.
"""
from __future__ import annotations

import copy

import pandas as pd

from ..sweep import Point
from .base import (STYLE, Claim, Experiment, _plt, bars, fmt, lines, ratio_within, register,
                   same_order, within)

PAPER = "Draconis (EuroSys'24)"

# docs/draconis.md "Calibration": the authors' executors send their next
# task_request the moment a no-op arrives (one poll per round trip); 1 ns is
# the simulator's shortest retry.
CALIBRATED = {"draconis": {"retry_us": 0.001}}
# The swapping policies (Fig. 10-11) keep the 10 µs retry their placement and
# phase results were checked with: an executor polling once per round trip
# would walk the queue (up to `max_swaps` recirculations) every 4 µs, a
# simulation cost not yet measured against those figures.
SWAP_RETRY = {"retry_us": 10.0}

# §8 "Workloads": the synthetic suite (same as `netsched pull --workload`).
SERVICES = {
    "fixed100": {"kind": "fixed", "value_us": 100.0},
    "fixed250": {"kind": "fixed", "value_us": 250.0},
    "fixed500": {"kind": "fixed", "value_us": 500.0},
    "bimodal": {"kind": "mix", "values_us": [100.0, 500.0], "weights": [1.0, 1.0]},
    "trimodal": {"kind": "mix", "values_us": [100.0, 250.0, 500.0], "weights": [1.0, 1.0, 1.0]},
    "exp250": {"kind": "exp", "mean_us": 250.0},
}
MEAN_US = {"fixed100": 100, "fixed250": 250, "fixed500": 500, "bimodal": 300, "trimodal": 850 / 3,
           "exp250": 250}

# Systems: a label → (pull policy, config overrides). Sparrow-2 and the socket
# server are the same code with other parameters (§8 "Schedulers").
SYSTEMS = {
    "draconis": ("draconis", {}),
    "racksched": ("racksched", {}),
    "draconis-server": ("draconis-server", {}),
    # §8.1: sockets "cannot support more than 160k tps": 2 steps per task at
    # 3.125 µs each (the DPDK server's 450 ns gives its 1.1 M tps).
    "draconis-socket-server": ("draconis-server", {"server": {"step_ns": 3125}}),
    "r2p2": ("r2p2", {"r2p2": {"jbsq_bound": 3}}),
    "r2p2-1": ("r2p2", {"r2p2": {"jbsq_bound": 1}}),
    "r2p2-3": ("r2p2", {"r2p2": {"jbsq_bound": 3}}),
    "r2p2-5": ("r2p2", {"r2p2": {"jbsq_bound": 5}}),
    "r2p2-7": ("r2p2", {"r2p2": {"jbsq_bound": 7}}),
    "r2p2-9": ("r2p2", {"r2p2": {"jbsq_bound": 9}}),
    "sparrow": ("sparrow", {"sparrow": {"schedulers": 1}}),
    "sparrow-2": ("sparrow", {"sparrow": {"schedulers": 2}}),
    "draconis-locality": ("draconis-locality", {}),
    "draconis-priority": ("draconis-priority", {}),
    "draconis-resource": ("draconis-resource", {}),
}

STYLE.update({
    "draconis": ("tab:blue", "o", "Draconis"),
    "draconis-server": ("tab:purple", "D", "Draconis-DPDK-Server"),
    "draconis-socket-server": ("tab:pink", "d", "Draconis-Socket-Server"),
    "r2p2": ("tab:green", "^", "R2P2 (JBSQ 3)"),
    "r2p2-1": ("tab:olive", "v", "R2P2-1"),
    "r2p2-3": ("tab:green", "^", "R2P2-3"),
    "r2p2-5": ("tab:cyan", ">", "R2P2-5"),
    "r2p2-7": ("tab:gray", "<", "R2P2-7"),
    "r2p2-9": ("tab:brown", "p", "R2P2-9"),
    "sparrow": ("tab:red", "s", "1 Sparrow"),
    "sparrow-2": ("darkred", "s", "2 Sparrow"),
    "draconis-locality": ("tab:orange", "P", "Draconis-Locality"),
    "draconis-priority": ("tab:orange", "P", "Draconis-Priority"),
})


def merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def pull_config(system: str, load: float, service: dict, tasks: int, extra: dict | None = None,
                seed: int = 1) -> dict:
    """One `netsched pull` run: §8's testbed (10 × 16 executors, 2 µs links,
    500 ns recirculation: the simulator's defaults; executors re-poll at once,
    `CALIBRATED`) with `system`'s policy."""
    policy, over = SYSTEMS[system]
    cfg = {"seed": seed, "policy": policy,
           "workload": {"service": copy.deepcopy(service), "load": load, "tasks": tasks}}
    cfg = merge(merge(cfg, CALIBRATED), over)
    return merge(cfg, extra or {})


def point(labels: dict, system: str, load: float, service: dict, tasks: int,
          extra: dict | None = None) -> Point:
    return Point({**labels, "system": system, "load": load},
                 pull_config(system, load, service, tasks, extra), kind="pull")


def tasks_for(scale: str, reduced: int = 20_000) -> int:
    return 100_000 if scale == "paper" else reduced


def base_table(runs: pd.DataFrame, pools: pd.DataFrame, extra_cols=()) -> pd.DataFrame:
    keep = [c for c in ("service", "system", "load") if c in runs]
    cols = keep + ["offered_tps", "p50_us", "p90_us", "p99_us", "p999_us", "mean_us",
                   "decisions_per_s", "utilization", "submitted", "completed", "gave_up",
                   "dropped", "timeouts", "recirc_fraction"] + list(extra_cols)
    d = runs[[c for c in cols if c in runs]].copy()
    d["dropped_fraction"] = runs["dropped"] / runs["submitted"].clip(lower=1)
    # A collapsed scheduler (no measured task started) has no latency.
    d.loc[runs["completed"] == 0, ["p50_us", "p90_us", "p99_us", "p999_us", "mean_us"]] = float("nan")
    return d.reset_index(drop=True)


def at(t: pd.DataFrame, system: str, load: float, col: str = "p99_us", **where) -> float:
    d = t[(t["system"] == system) & (t["load"] == load)]
    for k, v in where.items():
        d = d[d[k] == v]
    return float(d[col].iloc[0]) if len(d) else float("nan")


def ratio(a: float, b: float) -> str:
    return "—" if not (a == a and b == b and b > 0) else f"{a / b:.1f}×"


# --- Fig. 5a ----------------------------------------------------------------------

def fig5a_points(scale):
    loads = ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper"
             else [0.2, 0.5, 0.6, 0.8, 0.9])
    systems = ["draconis", "racksched", "draconis-server", "draconis-socket-server", "r2p2",
               "sparrow", "sparrow-2"]
    return [point({}, s, l, SERVICES["fixed500"], tasks_for(scale)) for s in systems for l in loads]


def fig5a_claims(t):
    lo = min(t["load"])
    hi = 0.9 if 0.9 in set(t["load"]) else max(t["load"])
    d0 = at(t, "draconis", lo)
    others = ["racksched", "draconis-server", "r2p2", "sparrow"]
    paper_x = {"racksched": 3.0, "draconis-server": 20.0, "r2p2": 120.0, "sparrow": 200.0}
    low = {s: at(t, s, lo) / d0 for s in others}
    hi_d = at(t, "draconis", hi)
    hi_alt = {s: at(t, s, hi) for s in others + ["draconis-socket-server", "sparrow-2"]}
    closest = min((v, s) for s, v in hi_alt.items() if v == v)
    s1, s2 = at(t, "sparrow", hi), at(t, "sparrow-2", hi)
    out = [within("Draconis' p99 scheduling delay at low load", 4.7, d0, rel=0.25, unit=" µs",
                  ours_text=f"{fmt(d0, ' µs')} at load {lo}")]
    for s in others:
        out.append(ratio_within(f"Draconis' p99 is {paper_x[s]:.0f}× lower than {s}'s at low "
                                "load", paper_x[s], low[s], factor=2.0,
                                ours_text=f"{low[s]:.2g}× at load {lo}"))
    mid = 0.6 if 0.6 in set(t["load"]) else sorted(set(t["load"]))[len(set(t["load"])) // 2]
    mid_p99 = {s: at(t, s, mid) for s in ["draconis"] + others}
    lowest = min((v, s) for s, v in mid_p99.items() if v == v)
    out.append(Claim("Draconis has the lowest p99 at moderate load", "Draconis lowest",
                     f"load {mid}: lowest {lowest[1]} {fmt(lowest[0], ' µs')}, Draconis "
                     f"{fmt(mid_p99['draconis'], ' µs')}",
                     ok=lowest[1] == "draconis",
                     tolerance="direction (Fig. 5a's curves): Draconis' p99 below every other "
                               "system's at load 0.6"))
    out += [
        ratio_within("At high utilization Draconis is 30× below the closest alternative", 30.0,
                     closest[0] / hi_d, factor=2.0,
                     ours_text=f"load {hi}: Draconis {fmt(hi_d, ' µs')}, closest {closest[1]} "
                               f"{fmt(closest[0], ' µs')} ({ratio(closest[0], hi_d)})"),
        Claim("Two Sparrow schedulers do better than one", "2 Sparrow < 1 Sparrow",
              f"p99 at load {hi}: 1 Sparrow {fmt(s1, ' µs')}, 2 Sparrow {fmt(s2, ' µs')}",
              ok=bool(s2 == s2 and (s1 != s1 or s2 < s1)),
              tolerance="direction (the paper states no number): 2 Sparrow's p99 below 1 "
                        "Sparrow's"),
    ]
    return out


def throughput_plot(t, png, panel=None, title=""):
    d = t.copy()
    d["ktps"] = d["offered_tps"] / 1e3
    lines(d, png, "ktps", "p99_us", series="system", panel=panel,
          xlabel="throughput (K tasks/s)", ylabel="p99 scheduling delay (µs)", title=title)


register(Experiment(
    name="draconis-fig5a", paper=PAPER, figure="Fig. 5a",
    title="p99 scheduling delay against throughput, 500 µs tasks",
    setup="Draconis (switch cFCFS), RackSched (power-of-2 over nodes + cFCFS in the node, "
          "3.5 µs intra-node overhead), Draconis-DPDK-Server (450 ns per step, ≈1.1 M tps), "
          "Draconis-Socket-Server (3.125 µs per step, ≈160 K tps), R2P2 JBSQ(3), one and two "
          "Sparrow schedulers (d = 2, 700 ns per message); fixed 500 µs tasks on 10 × 16 "
          "executors; x = offered tasks/s (load × 320 K).",
    points=fig5a_points,
    table=lambda runs, pools: base_table(runs, pools),
    plot=lambda t, png: throughput_plot(t, png, title="Fig. 5a: 500 µs tasks"),
    claims=fig5a_claims,
    differences="R2P2 is modelled from its authors' router (docs/draconis.md \"R2P2 as its "
                "authors built it\"): counters that learn of a completion from the executor's "
                "feedback, one link late, and a first-fit search from a hashed start that "
                "dispatches to any executor under JBSQ's bound, busy or not, so a task queues "
                "behind a running 500 µs one from the lowest load (p99 ≈ 700 µs at 0.2, the "
                "paper's ≈ 560 µs). Draconis' floor is two links (4 µs) plus the wait for the "
                "next poll, which arrives within a fraction of a µs while executors poll once "
                "per round trip. Draconis-DPDK-Server's latency at low load is the queue of polls "
                "from idle executors in front of each submission (docs/draconis.md "
                "\"Calibration\"), so it falls at the median as load rises. RackSched's low-load "
                "p99 is two links plus the 3.5 µs intra-node overhead, 1.6× Draconis' where the "
                "paper has 3×; §8.1 names nothing that adds the missing ≈ 5 µs. Server and "
                "Sparrow costs are per-message service times calibrated to §8.2's throughputs, "
                "not measured software.",
))


# --- Fig. 5b: scheduling throughput with no-op executors -----------------------

# §8.2: "an executor retrieves the task, immediately drops it, and requests a
# new task". 1 ns is the simulator's shortest service time.
NOOP = {"kind": "fixed", "value_us": 0.001}
FIG5B_SYSTEMS = ["draconis", "draconis-server", "draconis-socket-server", "sparrow", "sparrow-2"]
# §8.2: "The switch can handle up to 4.7 billion packets per second".
TOFINO_PPS = 4_700_000_000
# Clients keep this many tasks outstanding (closed loop): many times what 208
# executors hold in flight, so no scheduler's queue runs dry.
FIG5B_OUTSTANDING = 4096


def fig5b_executors(scale):
    # The testbed ran 16 executors per node, up to 208 (13 nodes).
    return list(range(16, 209, 16)) if scale == "paper" else [16, 64, 112, 160, 208]


def fig5b_points(scale):
    pts = []
    for s in FIG5B_SYSTEMS:
        for n in fig5b_executors(scale):
            extra = {"cluster": {"nodes": n // 16, "executors_per_node": 16},
                     "network": {"switch_pps": TOFINO_PPS},
                     "workload": {"arrival": "closed-loop", "outstanding": FIG5B_OUTSTANDING},
                     "client": {"timeout_us": 1_000_000.0}}
            # `load` is unused by a closed loop (any valid value).
            cfg = pull_config(s, 1.0, NOOP, tasks_for(scale), extra)
            pts.append(Point({"system": s, "executors": n}, cfg, kind="pull"))
    return pts


def fig5b_table(runs, pools):
    d = runs[["system", "executors", "steady_decisions_per_s", "decisions_per_s", "completed",
              "dropped", "timeouts", "noops", "first_passes", "recirculations", "sim_s"]].copy()
    d["mdps"] = d["steady_decisions_per_s"] / 1e6
    # Switch passes per second over the run: how close the pipeline came to its rate.
    d["passes_per_s"] = (d["first_passes"] + d["recirculations"]) / d["sim_s"]
    return d.reset_index(drop=True)


def fig5b_claims(t):
    def tput(system, n=None):
        d = t[t.system == system]
        if n is None:
            return float(d["steady_decisions_per_s"].max())
        return float(d[d.executors == n]["steady_decisions_per_s"].iloc[0])

    lo, hi = int(t.executors.min()), int(t.executors.max())
    dr_lo, dr_hi = tput("draconis", lo), tput("draconis", hi)
    dpdk, sock = tput("draconis-server"), tput("draconis-socket-server")
    s1, s2 = tput("sparrow"), tput("sparrow-2")
    growth = (dr_hi / dr_lo) / (hi / lo)
    sw = t[(t.system == "draconis") & (t.executors == hi)]
    pps = float(sw["passes_per_s"].iloc[0])
    return [
        Claim("Draconis' throughput grows linearly with executors",
              "linear", f"{dr_lo / 1e6:.2f} M/s at {lo}, {dr_hi / 1e6:.1f} M/s at {hi} "
              f"(growth {growth:.3f} of linear)",
              ok=bool(abs(growth - 1) <= 0.02),
              tolerance="growth from the fewest to the most executors within 2 % of linear"),
        within("Draconis reaches 58 M decisions/s at 208 executors", 58.0, dr_hi / 1e6, rel=0.15,
               unit=" M/s", ours_text=f"{dr_hi / 1e6:.1f} M/s at {hi}"),
        ratio_within("Draconis is 52× above Draconis-DPDK-Server, the closest alternative", 52.0,
                     dr_hi / dpdk, factor=2.0,
                     ours_text=ratio(dr_hi, dpdk) + f" at {hi} executors"),
        within("Draconis-DPDK-Server peaks at 1.1 M tasks/s", 1.1, dpdk / 1e6, rel=0.10,
               unit=" M/s", ours_text=f"{dpdk / 1e6:.3f} M/s"),
        within("Socket-based schedulers cannot exceed 160 K tasks/s (§8.1)", 160.0, sock / 1e3,
               rel=0.10, unit=" K/s", ours_text=f"{sock / 1e3:.1f} K/s"),
        within("One Sparrow scheduler reaches 500 K tasks/s", 500.0, s1 / 1e3, rel=0.25,
               unit=" K/s", ours_text=f"{s1 / 1e3:.0f} K/s"),
        within("Two Sparrow schedulers reach 900 K tasks/s", 900.0, s2 / 1e3, rel=0.25,
               unit=" K/s", ours_text=f"{s2 / 1e3:.0f} K/s"),
        Claim("The switch (4.7 G packets/s) is far from its limit: the executors are the bottleneck",
              "≪ 4.7 G pps", f"{pps / 1e6:.0f} M passes/s at {hi} executors "
              f"({100 * pps / TOFINO_PPS:.1f} % of 4.7 G)", ok=bool(pps < 0.1 * TOFINO_PPS),
              tolerance="below 10 % of the pipeline's 4.7 G passes/s"),
    ]


register(Experiment(
    name="draconis-fig5b", paper=PAPER, figure="Fig. 5b",
    title="Scheduling throughput with no-op executors",
    setup="No-op executors (1 ns per task) pull from Draconis (switch cFCFS, pipeline limited to "
          "§8.2's 4.7 G passes/s), Draconis-DPDK-Server (450 ns per step), "
          "Draconis-Socket-Server (3.125 µs per step), one and two Sparrow schedulers (700 ns "
          "per message); 16 executors per node, 16-208 executors; clients keep 4,096 tasks "
          "outstanding (a closed loop, so every queue stays full). y = decisions per second "
          "from the warm-up-th decision to the last submission (`steady_decisions_per_s`).",
    points=fig5b_points,
    table=fig5b_table,
    plot=lambda t, png: lines(t, png, "executors", "mdps", series="system",
                              xlabel="no-op executors",
                              ylabel="throughput (M scheduling decisions/s)",
                              title="Fig. 5b: no-op executors"),
    claims=fig5b_claims,
    differences="A no-op executor's loop here is two 2 µs links (the host↔switch delay every "
                "Draconis entry uses, from Fig. 5a's latency floor) plus 1 ns, so Draconis gives "
                "exactly executors / 4 µs: 52 M/s at 208 where the paper measured 58 M/s, a "
                "3.6 µs loop. The servers' and Sparrow's ceilings are their per-step and "
                "per-message costs, calibrated to the throughputs §8.1-§8.2 state, so agreement "
                "there is by construction; what the simulation shows independently is the shape: "
                "the switch never limits (≈2 % of its pass rate at 208 executors), the servers "
                "are flat from 16 executors.",
))


# --- Fig. 6 -----------------------------------------------------------------------

def fig6_points(scale):
    # Reduced: three loads, 10K tasks (idle executors polling once per round
    # trip make the low-load Draconis runs the slowest ones to simulate).
    loads = ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper"
             else [0.3, 0.6, 0.9])
    pts = []
    for svc in SERVICES:
        for s in ["draconis", "racksched", "r2p2", "draconis-server"]:
            for l in loads:
                pts.append(point({"service": svc}, s, l, SERVICES[svc], tasks_for(scale, 10_000)))
    return pts


def fig6_claims(t):
    upto = t[t["load"] <= 0.8]
    d = upto[upto.system == "draconis"]["p99_us"]
    out = [Claim("Draconis' p99 stays within 4.7-20 µs on every synthetic workload",
                 "4.7-20 µs", f"loads ≤ 0.8: {fmt(d.min(), ' µs')}-{fmt(d.max(), ' µs')}",
                 ok=bool(d.min() >= 4.7 / 1.25 and d.max() <= 20 * 1.25),
                 tolerance="every value within 25 % of the paper's 4.7-20 µs range")]
    worse = []
    for s in ["racksched", "r2p2", "draconis-server"]:
        a = upto[upto.system == s].set_index(["service", "load"])["p99_us"]
        b = upto[upto.system == "draconis"].set_index(["service", "load"])["p99_us"]
        worse.append((s, float((a > b).mean())))
    out.append(Claim("Draconis' tail is significantly lower than RackSched, R2P2 and "
                     "Draconis-DPDK-Server", "lower everywhere",
                     "share of (workload, load ≤ 0.8) points where the alternative's p99 is above "
                     "Draconis': " + ", ".join(f"{s} {100 * v:.0f}%" for s, v in worse),
                     ok=all(v >= 0.5 for _, v in worse),
                     tolerance="each alternative's p99 above Draconis' at half or more of the "
                               "points"))
    fixed = t[t.service.str.startswith("fixed") & (t.system == "r2p2") & (t.load >= 0.5)]
    svc_us = fixed.service.map(MEAN_US)
    frac = fixed["p99_us"] / svc_us
    out.append(Claim("R2P2's tail on fixed workloads equals the service time from 30-40% "
                     "utilization (node-level blocking)", "p99 ≈ service time",
                     "R2P2 p99 / service time at loads ≥ 0.5: "
                     + ", ".join(f"{s} {l}: {f:.2f}" for s, l, f in
                                 zip(fixed.service, fixed.load, frac)),
                     ok=bool(((frac - 1).abs() <= 0.5).mean() >= 0.5),
                     tolerance="p99 within 50 % of the service time at half or more of the "
                               "points at load ≥ 0.5"))
    return out


register(Experiment(
    name="draconis-fig6", paper=PAPER, figure="Fig. 6",
    title="p99 scheduling delay against throughput, the synthetic suite",
    setup="Draconis, RackSched, R2P2 JBSQ(3) and Draconis-DPDK-Server on fixed 100/250/500 µs, "
          "bimodal (50 % 100, 50 % 500 µs), trimodal (⅓ each 100/250/500 µs) and exponential "
          "250 µs tasks, 10 × 16 executors; one panel per workload.",
    points=fig6_points,
    table=lambda runs, pools: base_table(runs, pools),
    plot=lambda t, png: throughput_plot(t, png, panel="service"),
    claims=fig6_claims,
    differences="Draconis' tail up to load 0.8 is 7-17 µs, inside the paper's 4.7-20 µs, but "
                "RackSched's is often lower here: its p99 at low load is two "
                "links plus the 3.5 µs intra-node overhead (7.5 µs), while a Draconis task that "
                "arrives when executors are idle waits two links and a fraction of a µs for the "
                "next poll. R2P2's first-fit search queues a task behind a running one whenever its "
                "hashed start is busy, so its tail reaches the service time from low load "
                "(paper: from 30-40 %). Draconis-DPDK-"
                "Server saturates where the offered rate passes ≈1.1 M tasks/s (fixed 100 µs "
                "above load ≈0.7), where the paper stopped running it.",
))


# --- Fig. 7 and 8: R2P2's JBSQ size -------------------------------------------------

R2P2_LOADS = {"paper": [0.3, 0.4, 0.5, 0.6, 0.7, 0.82, 0.9, 0.93, 0.97],
              "reduced": [0.3, 0.6, 0.82, 0.93, 0.97]}


def r2p2_points(scale, services, systems):
    pts = []
    for svc in services:
        mean = MEAN_US[svc]
        # §8.3 sets the client timeout to 2× the task time. Our clients time
        # out any copy not completed by then, and under JBSQ a task queued
        # behind two others at an executor is late without being lost, so
        # 2× turns queueing into duplicate storms. We use the simulator's
        # default, 10× (the upper end of §8.3's "typically 5-10×").
        extra = {"client": {"timeout_us": 10 * mean, "max_attempts": 1000}}
        for s in systems:
            for l in R2P2_LOADS[scale]:
                pts.append(point({"service": svc}, s, l, SERVICES[svc], tasks_for(scale, 15_000),
                                 extra))
    return pts


def fig7_claims(t):
    r1 = t[t.system == "r2p2-1"].set_index("load")
    r3 = t[t.system == "r2p2-3"]
    dr = t[t.system == "draconis"]
    hi = max(r1.index)
    near93 = min(r1.index, key=lambda l: abs(l - 0.93))
    return [
        Claim("R2P2-1: ~50 % of processed packets are recirculations at 93 % load, 75 % at 97 %",
              "50 % / 75 %",
              f"{100 * r1.loc[near93, 'recirc_fraction']:.0f} % at {near93}, "
              f"{100 * r1.loc[hi, 'recirc_fraction']:.0f} % at {hi}",
              ok=bool(abs(r1.loc[near93, "recirc_fraction"] - 0.50) <= 0.15
                      and abs(r1.loc[hi, "recirc_fraction"] - 0.75) <= 0.15),
              tolerance="each within 15 percentage points of the paper's"),
        Claim("R2P2-3 drops no tasks", "0 drops", f"{int(r3['dropped'].sum())} drops",
              ok=bool(r3["dropped"].sum() == 0), tolerance="exactly 0"),
        Claim("R2P2-3 brings recirculations down to zero", "0 %",
              f"up to {100 * r3['recirc_fraction'].max():.0f} % (at load "
              f"{r3.loc[r3['recirc_fraction'].idxmax(), 'load']})",
              ok=bool(r3["recirc_fraction"].max() < 0.01), tolerance="below 1 % at every load"),
        Claim("Draconis recirculates 0.02-0.05 % of packets and drops none", "0.02-0.05 %, 0 drops",
              f"{100 * dr['recirc_fraction'].min():.2f}-{100 * dr['recirc_fraction'].max():.2f} %, "
              f"{int(dr['dropped'].sum())} drops",
              ok=bool(dr["dropped"].sum() == 0 and dr["recirc_fraction"].max() <= 0.0005 * 2),
              tolerance="no drops, and at most 2× the paper's 0.05 % at every load"),
    ]


def fig7_plot(t, png):
    m = t.melt(id_vars=["system", "load"], value_vars=["recirc_fraction", "dropped_fraction"],
               var_name="metric")
    m["value"] = 100 * m["value"]
    m["panel"] = m["metric"].map({"recirc_fraction": "recirculated packets (%)",
                                  "dropped_fraction": "dropped tasks (%)"})
    lines(m, png, "load", "value", series="system", panel="panel", xlabel="cluster load",
          ylabel="% (recirculated passes / dropped submissions)", logy=False)


register(Experiment(
    name="draconis-fig7", paper=PAPER, figure="Fig. 7",
    title="Recirculated packets and dropped tasks, 250 µs tasks",
    setup="R2P2-1, R2P2-3 and Draconis on fixed 250 µs tasks; the share of switch passes that are "
          "recirculations and the dropped fraction (R2P2 loses a request when the switch's "
          "recirculation port, 100 Gb/s with a 128-packet buffer, overflows) against load; client "
          "timeout 10× the task time (§8.3 uses 2×, see Fig. 8).",
    points=lambda scale: r2p2_points(scale, ["fixed250"], ["r2p2-1", "r2p2-3", "draconis"]),
    table=lambda runs, pools: base_table(runs, pools),
    plot=fig7_plot,
    claims=fig7_claims,
    differences="Draconis' recirculations here are 0.5-5 % rather than 0.02-0.05 %: a poll that "
                "finds the queue empty overshoots `retrieve_ptr`, so the next submission sends a "
                "repair pass (§4.5), one per submission into an idle cluster. With every idle "
                "executor polling once per round trip, repairs / passes ≈ λ / (idle executors / "
                "RTT): 0.2 % at load 0.2, more as load rises; 0.02 % would need ten times more "
                "polls than one outstanding request per executor can send (docs/draconis.md "
                "\"Calibration\"). R2P2 probes one executor per pass (§2.2), so R2P2-1 walks the "
                "busy executors pass by pass: ≈ 98 % of its passes are recirculations from 0.9, "
                "and R2P2-3 (first-fit under k) recirculates 14-50 % from 0.82 (docs/draconis.md "
                "\"R2P2 as its authors built it\").",
))


def fig8_claims(t):
    out = []
    for svc, load, paper in [("fixed100", 0.82, 0.05), ("fixed250", 0.93, 0.09)]:
        d = t[(t.service == svc) & (t.system == "r2p2-1")]
        row = d.iloc[(d["load"] - load).abs().argsort().iloc[0]]
        out.append(ratio_within(f"R2P2-1 drops {100 * paper:.0f} % of tasks at "
                                f"{int(100 * load)} % load ({svc})", paper,
                                row["dropped_fraction"], factor=2.0,
                                paper_text=f"{100 * paper:.0f} %",
                                ours_text=f"{100 * row['dropped_fraction']:.2f} % at "
                                          f"{row['load']}"))
    for svc in ["fixed100", "fixed250"]:
        d = t[(t.service == svc) & (t.system == "r2p2-3") & (t.load <= 0.6)]
        out.append(Claim(f"R2P2-3's p99 ≈ the task time from 30-40 % utilization ({svc})",
                         f"≈ {MEAN_US[svc]} µs",
                         ", ".join(f"{l}: {fmt(v, ' µs')}" for l, v in zip(d.load, d.p99_us)),
                         ok=bool((d.p99_us > 0.5 * MEAN_US[svc]).any()),
                         tolerance="p99 above half the task time at some load ≤ 0.6"))
    return out


register(Experiment(
    name="draconis-fig8", paper=PAPER, figure="Fig. 8",
    title="Cluster utilization against p99 scheduling delay for R2P2 queue sizes",
    setup="Draconis, R2P2-1 (no executor queue) and R2P2-3 on fixed 100 µs (a) and 250 µs (b) "
          "tasks; x = measured utilization; dropped fractions "
          "in the CSV (the paper marks runs with drops in yellow). Client timeout 10× the task "
          "time (the paper: 2×).",
    points=lambda scale: r2p2_points(scale, ["fixed100", "fixed250"], ["draconis", "r2p2-1", "r2p2-3"]),
    table=lambda runs, pools: base_table(runs, pools),
    plot=lambda t, png: lines(t, png, "utilization", "p99_us", series="system", panel="service",
                              xlabel="cluster utilization", ylabel="p99 scheduling delay (µs)"),
    claims=fig8_claims,
    differences="R2P2-1 drops when the switch's recirculation port (100 Gb/s, a Tofino's) "
                "overflows, which happens from about 0.9 load with 100 µs tasks and 0.97 with "
                "250 µs, later than on the testbed (docs/draconis.md \"R2P2 as its authors built "
                "it\"). Fig. 7's runs (fixed 250 µs) are shared with panel (b).",
))


# --- Fig. 9: bursty trace -------------------------------------------------------------

BURSTY = {"arrival": "bursty", "burst_fraction": 0.05, "burst_mean_tasks": 100.0,
          "burst_max_tasks": 1000}


def fig9_points(scale):
    systems = ["draconis", "r2p2-1", "r2p2-3", "r2p2-5", "r2p2-7", "r2p2-9", "racksched",
               "draconis-server"]
    svc = {"kind": "exp", "mean_us": 500.0}
    return [point({}, s, 0.5, svc, tasks_for(scale, 30_000), {"workload": BURSTY}) for s in systems]


def fig9_table(runs, pools):
    d = base_table(runs, pools)
    return d.drop(columns=["load"])


def fig9_claims(t):
    d = t.set_index("system")
    p50 = d["p50_us"]
    best_r2p2 = min(["r2p2-3", "r2p2-5", "r2p2-7", "r2p2-9"], key=lambda s: p50[s])
    out = [within(f"Median scheduling delay of {name}", paper, p50[s], rel=0.25, unit=" µs")
           for s, name, paper in [("draconis", "Draconis", 4.18), ("r2p2-5", "R2P2-5", 5.2),
                                  ("racksched", "RackSched", 5.83)]]
    out += [
        same_order("Medians: Draconis < R2P2-5 < RackSched", ["draconis", "r2p2-5", "racksched"],
                   {s: p50[s] for s in ["draconis", "r2p2-5", "racksched"]}, unit=" µs"),
        Claim("R2P2-5 is the best R2P2 variant", "R2P2-5", best_r2p2, ok=best_r2p2 == "r2p2-5",
              tolerance="the lowest median of R2P2-3/5/7/9 is R2P2-5's"),
        ratio_within("R2P2-1 drops 6.3 % of tasks on the bursty trace", 0.063,
                     d.loc["r2p2-1", "dropped_fraction"], factor=2.0, paper_text="6.3 %",
                     ours_text=f"{100 * d.loc['r2p2-1', 'dropped_fraction']:.1f} %"),
        within("Draconis-DPDK-Server's median behind the trace", 2.1e6, p50["draconis-server"],
               rel=0.25, paper_text="2.1 s", ours_text=fmt(p50["draconis-server"], " µs")),
    ]
    return out


def percentile_plot(t, png, series, cols, xlabel, title=""):
    """The papers' CDFs from the percentiles the simulator reports (p50, p90,
    p99, p99.9): one line per series, latency on a log x axis."""
    plt = _plt()
    qs = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
    fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=110)
    for _, r in t.iterrows():
        xs = [r[c] for c in cols]
        ys = [qs[next(tok for tok in c.split("_") if tok in qs)] for c in cols]
        color, marker, label = STYLE.get(str(r[series]), (None, "o", str(r[series])))
        ax.plot(xs, ys, marker=marker, color=color, label=label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of tasks (CDF at p50/p90/p99/p99.9)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


register(Experiment(
    name="draconis-fig9", paper=PAPER, figure="Fig. 9",
    title="Scheduling delay CDF on a bursty Google-trace-like workload",
    setup="Our model of §8.4's accelerated Google trace (docs/draconis.md: Poisson jobs, 5 % are "
          "batches of Geometric(100) tasks capped at 1,000, exponential 500 µs tasks) at load 0.5, "
          "for Draconis, R2P2 with JBSQ 1/3/5/7/9, RackSched and Draconis-DPDK-Server.",
    points=fig9_points,
    table=fig9_table,
    plot=lambda t, png: percentile_plot(t[t.system != "r2p2-1"], png, "system",
                                        ["p50_us", "p90_us", "p99_us", "p999_us"],
                                        "scheduling delay (µs)", "Fig. 9: bursty workload"),
    claims=fig9_claims,
    differences="The trace itself is not used (not public in a usable form here): the bursty "
                "model reproduces its batches, not its exact arrival pattern, and the paper does "
                "not state the trace's load; we run 0.5. Batches of hundreds of tasks queue "
                "behind each other, so the switch systems' medians are 7-16 µs rather than "
                "4-6 µs. Among R2P2 variants a deeper executor queue adds node-level blocking "
                "behind running tasks (first-fit JBSQ), while a shallow one recirculates and, "
                "at JBSQ 1, drops at the recirculation port in bursts; which variant wins "
                "depends on the bursts' size (the paper: R2P2-5). Draconis-DPDK-Server is not overloaded "
                "at 0.5 here (≈160 K tasks/s against its 1.1 M), so its median is ~0.2 ms, not "
                "the 2.1 s of a server behind a trace it cannot keep up with.",
))


# --- Fig. 10: locality ------------------------------------------------------------

LOCALITY = {"cluster": {"racks": 3},
            "workload": {"locality": {"local_us": 0.0, "rack_us": 20.0, "remote_us": 100.0}},
            "draconis": {"rack_start_limit": 3, "global_start_limit": 9, **SWAP_RETRY}}


def fig10_points(scale):
    return [point({}, s, 0.5, SERVICES["fixed100"], tasks_for(scale, 30_000), LOCALITY)
            for s in ["draconis", "draconis-locality"]]


def fig10_table(runs, pools):
    p = pools[["system", "placed_node", "placed_rack", "placed_remote", "response_p50_us",
               "response_p90_us", "response_p99_us", "response_mean_us", "locality_violations"]]
    d = base_table(runs, pools).merge(p, on="system")
    return d


def fig10_claims(t):
    d = t.set_index("system")
    f, l = d.loc["draconis"], d.loc["draconis-locality"]
    return [
        Claim("FCFS places 10.03 % on the data node, 24.05 % on its rack, 65.94 % elsewhere",
              "10.0 / 24.1 / 65.9 %",
              f"{100 * f.placed_node:.1f} / {100 * f.placed_rack:.1f} / {100 * f.placed_remote:.1f} %",
              ok=bool(max(abs(f.placed_node - 0.1003), abs(f.placed_rack - 0.2405),
                          abs(f.placed_remote - 0.6594)) <= 0.05),
              tolerance="each share within 5 percentage points of the paper's"),
        Claim("Locality (limits 3 / 9) places 27.66 % on the data node, 38.82 % on its rack",
              "27.7 / 38.8 / 33.5 %",
              f"{100 * l.placed_node:.1f} / {100 * l.placed_rack:.1f} / {100 * l.placed_remote:.1f} %",
              ok=bool(max(abs(l.placed_node - 0.2766), abs(l.placed_rack - 0.3882),
                          abs(l.placed_remote - 0.3352)) <= 0.05),
              tolerance="each share within 5 percentage points of the paper's"),
        within("Median end-to-end delay with FCFS", 203.87, f.response_p50_us, rel=0.25,
               unit=" µs"),
        within("Median end-to-end delay with Locality", 131.35, l.response_p50_us, rel=0.25,
               unit=" µs"),
    ]


register(Experiment(
    name="draconis-fig10", paper=PAPER, figure="Fig. 10",
    title="Locality-aware scheduling against FCFS",
    setup="10 nodes in 3 racks (4 + 4 + 2), each task's data on one uniformly chosen node, 100 µs "
          "of compute plus 20 µs (same rack) or 100 µs (other rack) of storage access; "
          "Draconis-Locality with rack_start_limit 3, global_start_limit 9 against Draconis-FCFS "
          "at load 0.5. End-to-end delay = submission to the completion reply at the client.",
    points=fig10_points,
    table=fig10_table,
    plot=lambda t, png: percentile_plot(t, png, "system",
                                        ["response_p50_us", "response_p90_us", "response_p99_us"],
                                        "end-to-end delay (µs)", "Fig. 10: locality"),
    claims=fig10_claims,
    differences="Our locality policy keeps more tasks on their data node (≈47 % vs 27.7 %): the "
                "simulated executors poll in a steady rhythm, so a task meets a data-local "
                "executor within its skip budget more often than on the testbed. The paper does "
                "not state the load; we use 0.5 of compute time.",
))


# --- Fig. 11: resources ----------------------------------------------------------------

def fig11_points(scale):
    extra = {"cluster": {"nodes": 9, "resource_groups": True},
             "workload": {"resource_phases": True},
             "client": {"timeout_us": 1_000_000.0}, "draconis": {"max_swaps": 16, **SWAP_RETRY}}
    return [point({}, "draconis-resource", 0.5, SERVICES["fixed500"], tasks_for(scale, 30_000),
                  extra)]


def fig11_table(runs, pools):
    rows = []
    r = pools.iloc[0]
    for g in (1, 2, 3):
        for ph in "ABC":
            rows.append({"group": f"G{g}", "phase": ph,
                         "tasks_per_node_per_s": r[f"g{g}_phase_{ph}_tps_per_node"],
                         "drain_us": r["drain_us"], "resource_violations": r["resource_violations"]})
    return pd.DataFrame(rows)


def fig11_claims(t):
    d = t.set_index(["group", "phase"])["tasks_per_node_per_s"]
    a_busy = all(d[(g, "A")] > 0 for g in ("G1", "G2", "G3"))
    b_ok = d[("G1", "B")] == 0 and d[("G2", "B")] > 0 and d[("G3", "B")] > 0
    c_ok = d[("G1", "C")] == 0 and d[("G2", "C")] == 0 and d[("G3", "C")] > 0
    drain = float(t["drain_us"].iloc[0])
    return [
        Claim("Phase A: every group runs tasks; B: only G2 and G3; C: only G3",
              "A: all, B: G2+G3, C: G3",
              "per node per s, A " + "/".join(f"{d[(g, 'A')]:.0f}" for g in ("G1", "G2", "G3"))
              + ", B " + "/".join(f"{d[(g, 'B')]:.0f}" for g in ("G1", "G2", "G3"))
              + ", C " + "/".join(f"{d[(g, 'C')]:.0f}" for g in ("G1", "G2", "G3")),
              ok=bool(a_busy and b_ok and c_ok),
              tolerance="exactly the paper's pattern: a group runs tasks (> 0) in a phase if and "
                        "only if the paper's does"),
        Claim("G3 is overloaded in phase C: execution ends after the last submission",
              "ends 20 s after (of a 90 s run)", f"backlog drains {drain / 1e3:.1f} ms after the "
              "last submission", ok=bool(drain > 1000),
              tolerance="the backlog outlasts the last submission by more than 1 ms (the paper's "
                        "20 s is wall-clock on a 90 s run; ours is a ms-long run)"),
    ]


register(Experiment(
    name="draconis-fig11", paper=PAPER, figure="Fig. 11",
    title="Throughput per node with resource constraints",
    setup="9 nodes in three groups G1 = {A}, G2 = {A, B}, G3 = {A, B, C}; the run is cut in three "
          "equal phases whose tasks need A, then B, then C (fixed 500 µs tasks, load 0.5 of the "
          "cluster); Draconis' resource policy with task swapping (≤ 16 swaps).",
    points=fig11_points,
    table=fig11_table,
    plot=lambda t, png: bars(t, png, "phase", "tasks_per_node_per_s", series="group",
                             ylabel="tasks per node per second"),
    claims=fig11_claims,
    differences="The phases are cut by task count (equal in time under stationary arrivals), not "
                "30-second wall-clock windows, and the run is milliseconds long, so the drain time "
                "is in ms, not the testbed's 20 s.",
))


# --- Fig. 12: priorities -----------------------------------------------------------

PRIORITY = {"workload": {"priority_weights": [1.2, 1.7, 64.6, 32.2]},
            "client": {"timeout_us": 10_000_000.0}, "draconis": {"retry_us": 50.0}}


def fig12_points(scale):
    svc = {"kind": "exp", "mean_us": 5000.0}
    # The paper replays the bursty Google trace: our bursty model (Fig. 9's)
    # at load 0.9. Poisson arrivals at 0.97 give µs-scale medians instead.
    extra = merge(PRIORITY, {"workload": BURSTY})
    return [point({}, s, 0.9, svc, tasks_for(scale, 30_000), extra)
            for s in ["draconis-priority", "draconis"]]


def fig12_table(runs, pools):
    rows = []
    for _, r in pools.iterrows():
        if r["system"] == "draconis":
            rows.append({"system": "draconis", "level": "FCFS", "p50_us": r["sched_p50_us"],
                         "p90_us": r["sched_p90_us"], "p99_us": r["sched_p99_us"]})
            continue
        for lvl in range(1, 5):
            rows.append({"system": r["system"], "level": f"L{lvl}",
                         "p50_us": r[f"sched_l{lvl}_p50_us"], "p90_us": r[f"sched_l{lvl}_p90_us"],
                         "p99_us": r[f"sched_l{lvl}_p99_us"],
                         "tasks": r[f"sched_l{lvl}_count"]})
    return pd.DataFrame(rows)


def fig12_claims(t):
    d = t.set_index("level")["p50_us"]
    # Levels 1 and 2 are both served at once when an executor is idle: equal
    # within 10 % counts as ordered.
    order = d["L1"] <= 1.1 * d["L2"] and d["L2"] <= 1.1 * d["L3"] and d["L3"] <= d["L4"]
    out = [Claim("Median queuing delay is ordered by priority level", "L1 < L2 < L3 < L4",
                 " / ".join(fmt(d[f"L{i}"] / 1e3, " ms") for i in range(1, 5)), ok=bool(order),
                 tolerance="L1 ≤ 1.1× L2, L2 ≤ 1.1× L3, L3 ≤ L4 (levels 1-2 are served at once "
                           "when an executor is idle)")]
    out += [within(f"Median queuing delay of level {i}", paper, d[f"L{i}"] / 1e3, rel=0.25,
                   unit=" ms") for i, paper in zip(range(1, 5), [1.4, 2.9, 13.3, 53.5])]
    out += [
        within("FCFS on the same workload: median 39.5 ms", 39.5, d["FCFS"] / 1e3, rel=0.25,
               unit=" ms"),
        Claim("FCFS's median lies between levels 3 and 4", "L3 < FCFS < L4",
              f"{fmt(d['L3'] / 1e3, ' ms')} / {fmt(d['FCFS'] / 1e3, ' ms')} / "
              f"{fmt(d['L4'] / 1e3, ' ms')}", ok=bool(d["L3"] <= d["FCFS"] <= d["L4"]),
              tolerance="L3 ≤ FCFS ≤ L4"),
    ]
    return out


def fig12_plot(t, png):
    m = t.melt(id_vars=["level"], value_vars=["p50_us", "p99_us"], var_name="percentile")
    bars(m, png, "level", "value", series="percentile", ylabel="queuing (scheduling) delay (µs)",
         logy=True)


register(Experiment(
    name="draconis-fig12", paper=PAPER, figure="Fig. 12",
    title="Queuing delay per priority level",
    setup="Four priority levels with the Google-trace mix 1.2 / 1.7 / 64.6 / 32.2 %, exponential "
          "5 ms tasks arriving in bursts (Fig. 9's model of the trace: 5 % of jobs are batches "
          "of Geometric(100) tasks) at load 0.9, Draconis' priority policy against "
          "priority-unaware FCFS on the same task sequence; executors re-poll after 50 µs.",
    points=fig12_points,
    table=fig12_table,
    plot=fig12_plot,
    claims=fig12_claims,
    differences="The paper replays the accelerated Google trace at an unstated rate; we use our "
                "bursty model of it at load 0.9. Levels 1-2 (3 % of tasks) are served almost "
                "at once when a batch arrives, so their medians are tens of µs rather than "
                "1.4-2.9 ms: in the trace, high-priority tasks presumably arrive in the same "
                "bursts and queue behind each other. Levels 3-4 and FCFS are in the paper's "
                "ms range. With Poisson arrivals (tried at 0.97) every median is below 1.5 ms.",
))


# --- Fig. 13: get_task() per priority level --------------------------------------

def fig13_table(runs, pools):
    r = pools[pools["system"] == "draconis-priority"].iloc[0]
    return pd.DataFrame([{"level": f"L{lvl}", "p50_us": r[f"get_task_l{lvl}_p50_us"],
                          "p90_us": r[f"get_task_l{lvl}_p90_us"],
                          "p99_us": r[f"get_task_l{lvl}_p99_us"]} for lvl in range(1, 5)])


def fig13_claims(t):
    spread50 = float(t["p50_us"].max() - t["p50_us"].min())
    spread90 = float(t["p90_us"].max() - t["p90_us"].min())
    return [Claim("Median and 90th-percentile get_task() latencies differ between levels by "
                  "1-2 µs at most", "≤ 1-2 µs",
                  f"p50 spread {spread50:.2f} µs, p90 spread {spread90:.2f} µs "
                  "(L1→L4: " + " / ".join(f"{v:.2f}" for v in t["p50_us"]) + " µs at p50)",
                  ok=bool(max(spread50, spread90) <= 2.0),
                  tolerance="both spreads at most the paper's 2 µs")]


register(Experiment(
    name="draconis-fig13", paper=PAPER, figure="Fig. 13",
    title="get_task() latency per priority level",
    setup="The runs of Fig. 12 (four priority levels, bursty 5 ms tasks, load 0.9): the time from "
          "an executor's task_request to the arrival of the task it gets, by the task's level. "
          "A request recirculates once per empty level above (500 ns per pass); a request that "
          "finds every level empty gets a no-op and its retry is a new step.",
    points=fig12_points,
    table=fig13_table,
    plot=lambda t, png: bars(t.melt(id_vars=["level"], value_vars=["p50_us", "p90_us"],
                                    var_name="percentile"), png, "level", "value",
                             series="percentile", ylabel="get_task() latency (µs)"),
    claims=fig13_claims,
    differences="In the simulator the step is deterministic once a request finds a task: two "
                "2 µs links plus 500 ns per empty level passed, so the levels differ by exactly "
                "0.5-1.5 µs; on the testbed the links' jitter spreads it. Runs shared with "
                "Fig. 12.",
))
