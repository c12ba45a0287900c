"""Horus (NSDI'24) figures: §2 Fig. 2, §5.2 Fig. 10-12, App. B Fig. 15-16,
App. C Fig. 17-19. Paper scale is §5.1's datacenter (k=48 fat tree, 1,000
pools, ~685K workers); reduced scale keeps every mechanism (multi-pod fat
tree, scattered pools with the same size distribution shape, spine and leaf
schedulers, 5 µs hops, 1e-5 loss) on a k=16 tree with 30 pools so the whole
catalog runs in CI."""
from __future__ import annotations

import copy
import functools
import random

import pandas as pd

from ..sweep import VARIANTS, Point, Variant, grid
from .base import Claim, Experiment, bars, fmt, knee, lines, register, within

PAPER = "Horus (NSDI'24)"

# --- Horus's configurations (issue 13 item 3) -----------------------------------
#
# The paper's simulated figures came from the authors' Python simulator,
# horus-sim, unmodified; netsched's `horus` is the paper's and the P4's
# mechanism. Every entry that plots Horus's latency beside other policies
# shows four Horus curves (docs/fidelity.md):
PAPER_HORUS = "horus"  # preset "paper": the paper's and P4's mechanism (default)
SIM = "horus (horus-sim)"  # the authors' simulator, unmodified: produced the figures
SIM_FIXED = "horus (horus-sim-fixed)"  # the same choices, shared idle set fixed
TOKENS = "horus-tokens"  # netsched's high-rate variant (its own policy)
HORUS_CONFIGS = [PAPER_HORUS, SIM, SIM_FIXED, TOKENS]


@functools.lru_cache(maxsize=None)
def _max_spines(key: str) -> int:
    import json

    from ..api import placement

    cfg = json.loads(key)
    pl = placement(cfg)
    if cfg.get("only_pools"):
        pl = pl[pl["pool_id"].isin(cfg["only_pools"])]
    return int(pl.groupby("pool_id")["spine_id"].nunique().max())


def max_spines(cfg: dict) -> int:
    """The most spines serving one (simulated) pool under `cfg`'s placement."""
    import json

    return _max_spines(json.dumps(cfg, sort_keys=True))


def horus_configs(cfg: dict) -> list:
    """The `policy` axis values of the four Horus curves for runs of `cfg`:
    the paper mechanism, both presets of the authors' simulator as they are,
    and `horus-tokens`. (`cfg` is kept for callers; every preset now runs on
    pools with several spines.)"""
    return [PAPER_HORUS, VARIANTS[SIM], VARIANTS[SIM_FIXED], TOKENS]


def idle_link_note(multi_spine: bool) -> str:
    if not multi_spine:
        return ("Each pool here has one spine, where horus-sim's random idle-link spine is "
                "the leaf's own spine; all five of horus-sim's choices are in effect.")
    return ("Pools here are served by several spines. As in horus-sim, each leaf links its "
            "idle state to a spine of its pool drawn at random at every idleAdd (item 3), "
            "while its load reports and each spine's power-of-2 stay within its own group; "
            "all five of horus-sim's choices are in effect.")


CONFIGS_INTRO = (
    "`horus (horus-sim)` is `schedulers.horus.preset = \"horus-sim\"`: the authors' "
    "choices (random pick from the spine's idle list, leaf idle threshold 4 with no "
    "announcement on replies, no idleRemove lock) and their simulator's defect, one idle set "
    "shared by every leaf of a pool (`leaf_idle_scope = \"pool\"`), which makes Horus a "
    "pool-wide join-idle-queue that no switch can implement. `horus (horus-sim-fixed)` is the "
    "same choices with one idle set per rack. `horus` is the paper's and the P4 program's "
    "mechanism, netsched's default. `horus-tokens` is netsched's high-rate variant (one idle "
    "token per idle worker, popped at the spine), not in the paper."
)


def _ratio_range(r: pd.Series) -> str:
    r = r.dropna()
    if r.empty:
        return "—"
    if len(r) == 1:
        return f"{r.iloc[0]:.2f}×"
    if f"{r.min():.2f}" == f"{r.max():.2f}":
        return f"{r.iloc[0]:.2f}× at every point"
    return f"{r.min():.2f}-{r.max():.2f}× (median {r.median():.2f}×)"


def configs_section(t: pd.DataFrame, figure: str, by: list, metrics: list, where: str,
                    multi_spine: bool, only_at: str = "") -> str:
    """The page's section on Horus's configurations: which one produced the
    paper's figure, the four side by side at every point of `by` where all
    four ran, and each one's ratio to horus-sim (the figure's configuration)
    per metric, from the measured table `t` (one row per `by` + policy).
    `metrics` is a list of (column, name) pairs."""
    have = t[t["policy"].isin(HORUS_CONFIGS)]
    wide = have.pivot_table(index=by, columns="policy", values=[c for c, _ in metrics])
    present = [c for c in HORUS_CONFIGS if all((m, c) in wide.columns for m, _ in metrics)]
    out = [f"## Which Horus produced the paper's {figure}", ""]
    out.append(
        f"The paper's {figure} came from the authors' Python simulator, horus-sim, "
        f"unmodified: the curve `{SIM}` here. " + CONFIGS_INTRO + " "
        + idle_link_note(multi_spine) + (" " + only_at if only_at else ""))
    if SIM not in present:
        out += ["", "The authors' configuration did not run here."]
        return "\n".join(out)
    wide = wide.dropna(subset=[(m, c) for m, _ in metrics for c in present])
    n = len(wide)
    out += ["", f"Measured ({where}; {n} point{'s' if n != 1 else ''} with all four "
                "configurations), each "
                f"configuration's {' and '.join(n for _, n in metrics)} against horus-sim's "
                "(unmodified), the configuration of the paper's figure:", ""]
    summary = []
    for c in present:
        if c == SIM:
            continue
        parts = [f"{n} {_ratio_range(wide[(m, c)] / wide[(m, SIM)])}" for m, n in metrics]
        summary.append(f"`{c}`: " + ", ".join(parts))
    out.append("; ".join(summary) + ".")
    fix = {n: wide[(m, SIM_FIXED)] / wide[(m, SIM)] for m, n in metrics} if SIM_FIXED in present else {}
    if fix and all(bool((r - 1).abs().max() < 1e-12) for r in fix.values()):
        out += ["", "horus-sim-fixed and horus-sim give identical results at every point: each "
                    "pool here lies in one rack, so the idle set horus-sim shares among a pool's "
                    "leaves is that rack's own (its defect changes nothing)."]
    elif fix:
        out += ["", "horus-sim-fixed differs from horus-sim in item 5 alone (the shared idle set), "
                    "so its ratio is what that defect is worth here: fixing it multiplies "
                    + ", ".join(f"{n} by {_ratio_range(r)}" for n, r in fix.items()) + "."]
    # The table: every point, the four configurations' values and their ratios to horus-sim.
    head = [str(b) for b in by] + [f"{c} {n}" for c in present for _, n in metrics]
    head += [f"{c} / horus-sim {n}" for c in present if c != SIM for _, n in metrics]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for idx, r in wide.iterrows():
        idx = idx if isinstance(idx, tuple) else (idx,)
        cells = [str(v) for v in idx]
        cells += [fmt(float(r[(m, c)])) for c in present for m, _ in metrics]
        cells += [f"{r[(m, c)] / r[(m, SIM)]:.2f}×" for c in present if c != SIM for m, _ in metrics]
        rows.append("| " + " | ".join(cells) + " |")
    out += [""] + rows
    return "\n".join(out)


def provenance(text: str):
    """A static `sections` callable for an entry without the four configurations."""
    return lambda t: "## Which Horus produced the paper's figure\n\n" + text


def datacenter(scale: str) -> dict:
    """§5.1: 48-port Clos, 24 servers × 32 cores per rack, 1K pools with
    Exp(min 50, max 20K, mean 685) sizes scattered over racks."""
    if scale == "paper":
        return {
            "topology": {"kind": "fat-tree", "radix": 48, "cores_per_server": 32},
            "placement": {"pools": 1000, "mode": "scattered", "ratio": 10},
            "workload": {"service": {"kind": "preset", "name": "bimodal"}, "load": 0.9,
                         "tasks_per_worker": 100},
        }
    # The simulator main job's datacenter (experiments/main.toml): radix 16, 128 racks of 8 x 32-core servers
    # (32,768 cores); 30 pools drawn from §5.1's size distribution.
    return {
        "topology": {"kind": "fat-tree", "radix": 16, "cores_per_server": 32},
        "placement": {"pools": 30, "mode": "scattered", "ratio": 10},
        "workload": {"service": {"kind": "preset", "name": "bimodal"}, "load": 0.9,
                     "tasks_per_worker": 30},
    }


def loads(scale: str) -> list:
    return [0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] if scale == "paper" else [0.5, 0.7, 0.8, 0.9]


def per_run(runs: pd.DataFrame, cols=("service", "policy", "load")) -> pd.DataFrame:
    keep = [c for c in cols if c in runs] + ["p50_us", "p99_us", "p999_us", "mean_us", "completed",
                                            "aborted", "submitted_total"]
    return runs[keep].copy()


@functools.lru_cache(maxsize=None)
def pool_sizes(scale: str) -> pd.DataFrame:
    """Every pool's worker count in the datacenter's placement (the one
    every run uses, from `pool_spread`), smallest first, ties by id."""
    sizes = pool_spread(scale)[["pool_id", "workers"]]
    return sizes.sort_values(["workers", "pool_id"]).reset_index(drop=True)


def lower_median_id(sizes: pd.DataFrame) -> int:
    """Horus Fig. 11 plots 'the worker pool with the median size': the lower
    median of `pool_id, workers` rows sorted by size, ties by id."""
    sizes = sizes.sort_values(["workers", "pool_id"])
    return int(sizes["pool_id"].iloc[(len(sizes) - 1) // 2])


def median_pool_id(scale: str) -> int:
    return lower_median_id(pool_sizes(scale))


def only_median_pool(cfg: dict, scale: str) -> dict:
    """Pools share no state (each has its own event queue and random streams),
    so simulating the median pool alone gives exactly its full-run results
    (crates/sim/tests/runs.rs checks it) at a few thousandth of the cost."""
    cfg["only_pools"] = [median_pool_id(scale)]
    return cfg


def median_pool(pools: pd.DataFrame) -> pd.DataFrame:
    """The median-size pool's rows of a runs' pools table (the runs simulate
    only that pool; the selection by size is repeated as a check)."""
    pid = lower_median_id(pools.drop_duplicates("pool_id")[["pool_id", "workers"]])
    d = pools[pools["pool_id"] == pid].copy()
    d["p99_us"] = d["response_p99_ns"] / 1e3
    d["mean_us"] = d["response_mean_ns"] / 1e3
    return d


# --- Fig. 2 ---------------------------------------------------------------------

def fig2_points(scale):
    return grid(datacenter(scale), service=["exp100", "bimodal"], policy=["rs-lb", "jsq"],
                load=loads(scale))


def fig2_claims(t):
    out = []
    for svc in dict.fromkeys(t["service"]):
        d = t[t["service"] == svc]
        rs = d[d.policy == "rs-lb"]
        js = d[d.policy == "jsq"]
        k_rs, k_js = knee(rs), knee(js)
        hi = max(d["load"])
        ratio = float(rs[rs.load == hi].p99_us.iloc[0] / js[js.load == hi].p99_us.iloc[0])
        out.append(Claim(
            f"{svc}: RS-LB's p99 rises rapidly past ~50% load; JSQ stays low up to ~90%",
            "RS-LB knee ≈ 0.5; JSQ flat to 0.9",
            f"RS-LB p99 doubles (vs lowest load) at {fmt(k_rs)}; JSQ at {fmt(k_js)}; "
            f"RS-LB/JSQ p99 at load {hi}: {ratio:.1f}×",
            ok=ratio > 2 and (k_js is None or (k_rs is not None and k_js > k_rs)),
            tolerance="agrees if RS-LB/JSQ p99 at the highest load is above 2× and JSQ's p99 "
                      "doubles at a higher load than RS-LB's (or never)",
        ))
    return out


register(Experiment(
    name="horus-fig2", paper=PAPER, figure="Fig. 2",
    title="RS-LB against ideal global JSQ across the datacenter",
    setup="p99 response time against load for RackSched behind a uniformly random rack "
          "load balancer (RS-LB) and an ideal zero-delay JSQ over every worker of a pool, "
          "Exp(100) and Bimodal(50%-50, 50%-500) service times, §5.1's datacenter.",
    points=fig2_points,
    table=lambda runs, pools: per_run(runs),
    plot=lambda t, png: lines(t, png, "load", "p99_us", panel="service", xlabel="load",
                              ylabel="p99 response time (µs)"),
    claims=fig2_claims,
    sections=provenance(
        "Fig. 2 has no Horus curve, so no Horus configuration is involved. The paper's simulated "
        "figures came from the authors' simulator, horus-sim; docs/fidelity.md compares "
        "netsched's RS-LB with horus-sim's on three of the authors' pools (within 13 % at p99)."),
    differences="Reduced scale runs a k=16 fat tree with 30 pools (~20K workers) instead of "
                "k=48 with 1,000 pools (~685K); the gap between RS-LB and JSQ comes from per-rack "
                "random splitting, which the smaller tree keeps.",
))


# --- Fig. 10 --------------------------------------------------------------------

def single_rack(scale):
    # §5.2: 10 applications inside one rack of 24 servers x 32 cores.
    return {
        "topology": {"kind": "single-rack", "servers": 24, "cores_per_server": 32},
        "placement": {"sizes": [76] * 10, "mode": "scattered"},
        "workload": {"service": {"kind": "preset", "name": "bimodal"}, "load": 0.9,
                     "tasks_per_worker": 200 if scale == "paper" else 40},
    }


def fig10_points(scale):
    base = single_rack(scale)
    return grid(base, service=["exp100", "bimodal", "trimodal"],
                policy=horus_configs(base) + ["racksched", "jsq"], load=loads(scale))


def gap_claim(t, a, b, statement, paper, want_lower=True):
    """p99 of `a` against `b` at the highest load, per service."""
    parts, ok = [], True
    hi = max(t["load"])
    for svc in dict.fromkeys(t["service"]):
        d = t[(t["service"] == svc) & (t["load"] == hi)].set_index("policy")
        ra = float(d.loc[a, "p99_us"] / d.loc[b, "p99_us"])
        parts.append(f"{svc} {ra:.2f}×")
        ok &= (ra < 1.0) if want_lower else (ra >= 1.0)
    return Claim(statement, paper, f"p99 {a}/{b} at load {hi}: " + ", ".join(parts), ok=ok,
                 tolerance=f"agrees if the ratio is {'below' if want_lower else 'at least'} 1.00× "
                           "for every workload")


def tag(h: str) -> str:
    """A claim's prefix naming the Horus configuration it was measured with."""
    return "" if h == PAPER_HORUS else f"[{h}] "


def fig10_claims(t):
    hi = max(t["load"])
    out = []
    for h in (PAPER_HORUS, SIM):
        if h not in set(t["policy"]):
            continue
        near = []
        for svc in dict.fromkeys(t["service"]):
            d = t[(t["service"] == svc) & (t["load"] == hi)].set_index("policy")
            near.append(f"{svc} {float(d.loc[h, 'p99_us'] / d.loc['jsq', 'p99_us']):.2f}×")
        out += [
            gap_claim(t, h, "racksched",
                      tag(h) + "Horus substantially outperforms RackSched in a single rack",
                      "Horus p99 < RackSched p99 at every workload"),
            Claim(tag(h) + "Horus's performance is close to JSQ's", "close (no number stated)",
                  f"p99 {h}/jsq at load {hi}: " + ", ".join(near),
                  tolerance="none: the paper states no number"),
        ]
    return out


register(Experiment(
    name="horus-fig10", paper=PAPER, figure="Fig. 10",
    title="Horus vs RackSched vs JSQ in a single rack (simulation)",
    setup="Ten applications of 76 workers each inside one rack of 24 × 32-core servers; p99 "
          "against load for Horus, RackSched (power-of-2 at the ToR over reply-updated loads) "
          "and zero-delay JSQ; Exp(100), Bimodal and Trimodal.",
    points=fig10_points,
    table=lambda runs, pools: per_run(runs),
    plot=lambda t, png: lines(t, png, "load", "p99_us", panel="service", xlabel="load",
                              ylabel="p99 response time (µs)"),
    claims=fig10_claims,
    sections=lambda t: configs_section(
        t, "Fig. 10", ["service", "load"], [("p50_us", "p50"), ("p99_us", "p99")],
        "single rack, every workload and load", multi_spine=False),
    differences="The paper does not state the ten pools' sizes; we split the rack's 768 "
                "cores evenly (76 each). Reduced scale runs fewer tasks per worker (40 vs 200).",
))


# --- Fig. 11 --------------------------------------------------------------------

def fig11_points(scale):
    base = only_median_pool(datacenter(scale), scale)
    return grid(base, service=["exp100", "bimodal", "trimodal"],
                policy=horus_configs(base) + ["rs-h", "rs-lb"], load=loads(scale))


def fig11_table(runs, pools):
    d = median_pool(pools)
    d["p50_us"] = d["response_p50_ns"] / 1e3
    return d[["service", "policy", "load", "pool_id", "workers", "p50_us", "p99_us", "mean_us",
              "completed"]].reset_index(drop=True)


def fig11_claims(t):
    out = []
    for h in (PAPER_HORUS, SIM):
        if h not in set(t["policy"]):
            continue
        best = []
        for svc in dict.fromkeys(t["service"]):
            d = t[t["service"] == svc].pivot_table(index="load", columns="policy", values="p99_us")
            r = (d["rs-h"] / d[h]).max()
            best.append((svc, float(r), float((d["rs-h"] / d[h]).idxmax())))
        mx = max(r for _, r, _ in best)
        out.append(Claim(
            tag(h) + "Horus reduces the median pool's p99 by up to 3× against RS-H at moderate loads",
            "up to 3×",
            f"max p99 RS-H/{h}: " + ", ".join(f"{s} {r:.1f}× (load {l})" for s, r, l in best),
            ok=2.0 <= mx <= 4.5,
            tolerance="agrees if the largest ratio over workloads and loads is 2-4.5× "
                      "(the paper's 3× within a factor 1.5)",
        ))
        gains = {s: r for s, r, _ in best}
        out.append(Claim(
            tag(h) + "Gains are larger for Bimodal and Trimodal than for Exp(100)",
            "Exp < Bimodal, Trimodal",
            ", ".join(f"{s} {r:.1f}×" for s, r in gains.items()),
            ok=gains.get("exp100", 0) <= max(gains.get("bimodal", 0), gains.get("trimodal", 0)),
            tolerance="agrees if Exp(100)'s largest ratio is at most the larger of Bimodal's "
                      "and Trimodal's",
        ))
    return out


register(Experiment(
    name="horus-fig11", paper=PAPER, figure="Fig. 11",
    title="Horus vs RS-H vs RS-LB across the datacenter (median-size pool)",
    setup="p99 response time of the median-size pool against load for Horus, RS-H (RackSched at "
          "spines over rack averages, every leaf reporting to every spine after each reply) and "
          "RS-LB (random rack, then RackSched), Exp(100), Bimodal and Trimodal, §5.1's datacenter. "
          "Every pool is placed; only the median-size one is simulated (pools share no state, so "
          "its numbers are exactly those of a whole-datacenter run).",
    points=fig11_points,
    table=fig11_table,
    plot=lambda t, png: lines(t, png, "load", "p99_us", panel="service", xlabel="load",
                              ylabel="p99 response time of the median pool (µs)"),
    claims=fig11_claims,
    sections=lambda t: configs_section(
        t, "Fig. 11", ["service", "load"], [("p50_us", "p50"), ("p99_us", "p99")],
        "the median-size pool, every workload and load", multi_spine=True),
    differences="Reduced scale: k=16 tree, 30 pools and 30 tasks per worker (paper: k=48, "
                "1,000 pools, 100 tasks per worker here); the median of 30 pool sizes is a noisier "
                "draw than the median of 1,000, and a pool in a smaller tree spans fewer racks.",
))


# --- Fig. 12a-c -------------------------------------------------------------------

# The whole datacenter per run: the authors' configurations and horus-tokens
# run at this one load only (at paper scale each is a 685K-worker run).
CONFIGS_LOAD = 0.9


def fig12a_points(scale):
    base = datacenter(scale)
    pts = grid(base, policy=["horus", "rs-h", "rs-lb"], load=loads(scale))
    return pts + grid(base, policy=horus_configs(base)[1:], load=[CONFIGS_LOAD])


def fig12a_table(runs, pools):
    return runs[["policy", "load", "imbalance_p1", "imbalance_p50", "imbalance_p99",
                 "imbalance_mean", "p50_us", "p99_us"]].copy()


def fig12a_claims(t):
    hi = max(t["load"])
    base = ["horus", "rs-h", "rs-lb"]
    d = t[t["load"] == hi].set_index("policy")
    out = []
    for h in (PAPER_HORUS, SIM):
        if h not in d.index:
            continue
        dd = d.loc[[h, "rs-h", "rs-lb"]]
        out.append(Claim(
            tag(h) + "Horus spreads load more uniformly: lower max/mean queue imbalance than RS-H "
            "and RS-LB",
            "Horus lowest",
            f"p99 imbalance at load {hi}: " + ", ".join(f"{p} {dd.loc[p, 'imbalance_p99']:.2f}"
                                                       for p in dd.index),
            ok=bool(dd.loc[h, "imbalance_p99"] <= dd["imbalance_p99"].min() + 1e-9),
            tolerance="agrees if Horus's p99 imbalance is the lowest of the three (ties count)",
        ))
    others = [p for p in HORUS_CONFIGS if p in d.index and p not in base]
    if others:
        out.append(Claim(
            "(not in the paper) the other Horus configurations' imbalance at the same load",
            "—", ", ".join(f"{p} {d.loc[p, 'imbalance_p99']:.2f}" for p in others)))
    return out


register(Experiment(
    name="horus-fig12a", paper=PAPER, figure="Fig. 12a",
    title="Queue imbalance (max/mean queue length per pool, sampled every 50 µs)",
    setup="Horus, RS-H and RS-LB on the datacenter with Bimodal service; the imbalance of §5.2 "
          "sampled every 50 µs in every pool; we plot its 1st-99th percentile range.",
    points=fig12a_points,
    table=fig12a_table,
    plot=lambda t, png: lines(t, png, "load", "imbalance_p50", band=("imbalance_p1", "imbalance_p99"),
                              xlabel="load", ylabel="queue imbalance (max/mean), p1-p99",
                              logy=False, title="Queue imbalance"),
    claims=fig12a_claims,
    sections=lambda t: configs_section(
        t, "Fig. 12a", ["load"], [("imbalance_p99", "p99 imbalance"), ("p50_us", "p50"),
                                  ("p99_us", "p99")],
        "whole datacenter, Bimodal; p50 and p99 over all pools' tasks", multi_spine=True,
        only_at=f"The authors' configurations and horus-tokens run at load {CONFIGS_LOAD} "
                "only (each is a whole-datacenter run; at paper scale 685K workers); they are "
                "single points in the plot."),
    differences="Percentiles are over all samples of all pools merged, where the paper's "
                "figure is per workload; the workload here is Bimodal only.",
))


def pool_quartiles(pools: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per (policy, `by`): quartiles of the pools' p99 and the median of their p50."""
    d = pools.copy()
    d["p99_us"] = d["response_p99_ns"] / 1e3
    d["p50_us"] = d["response_p50_ns"] / 1e3
    keys = ["policy", by] if "policy" in d else [by]
    g = d.groupby(keys, sort=False)["p99_us"]
    out = pd.DataFrame({"p25_us": g.quantile(0.25), "median_us": g.median(),
                        "p75_us": g.quantile(0.75), "pools": g.count(),
                        "median_p50_us": d.groupby(keys, sort=False)["p50_us"].median()})
    return out.reset_index()


def sweep_configs(base: dict, scale: str, name: str, values: list, normal, claimed: list,
                  set_value) -> list:
    """Points of a one-parameter sweep of Horus (Fig. 12b, 12c): the paper's
    mechanism at every value; the authors' configurations and horus-tokens
    (each point a whole-datacenter run) at the `normal` value and the values
    the paper's claims name (`claimed`) at reduced scale, at the `normal`
    value only at paper scale."""
    others = [normal] if scale == "paper" else sorted({normal, *claimed})
    pts = []
    for h in horus_configs(base):
        for v in values:
            if h != PAPER_HORUS and v not in others:
                continue
            cfg = copy.deepcopy(base)
            set_value(cfg, v)
            [pt] = grid(cfg, policy=[h])
            pts.append(Point({"policy": pt.labels["policy"], name: v}, pt.config))
    return pts


def only_at_note(t: pd.DataFrame, name: str, unit: str) -> str:
    """Says at which values of the swept parameter the authors' configurations ran."""
    at = sorted(set(t.loc[t["policy"] == SIM, name]))
    allv = sorted(set(t[name]))
    if at == allv:
        return ""
    return (f"The authors' configurations and horus-tokens run at {name} = "
            + ", ".join(f"{v:g}{unit}" for v in at) + " only at this scale (each point is a "
            "whole-datacenter run: the normal value and those the paper's claims name); the "
            "paper mechanism runs at every value.")


def fig12b_points(scale):
    base = datacenter(scale)
    base["workload"]["load"] = 0.8

    def hop(cfg, mean):
        cfg["network"] = {"hop_delay": {"kind": "exp", "mean_us": mean}}

    return sweep_configs(base, scale, "hop_delay_us", [0.0, 5.0, 10.0, 50.0, 100.0], 5.0,
                         [10.0, 100.0], hop)


def fig12b_claims(t):
    out = []
    for h in (PAPER_HORUS, SIM):
        d = t[t["policy"] == h].set_index("hop_delay_us")
        if not {5.0, 10.0, 100.0} <= set(d.index):
            continue
        out += [
            Claim(tag(h) + "At 10 µs per hop (2× normal) Horus keeps a low p99 with small variation",
                  "small change from 5 µs",
                  f"median pool p99: 5 µs {d.loc[5.0, 'median_us']:.0f} µs, 10 µs "
                  f"{d.loc[10.0, 'median_us']:.0f} µs",
                  ok=bool(d.loc[10.0, "median_us"] <= 1.5 * d.loc[5.0, "median_us"]),
                  tolerance="agrees if the 10 µs value is at most 1.5× the 5 µs value"),
            Claim(tag(h) + "At 50-100 µs per hop stale updates raise the tail", "p99 grows",
                  f"median pool p99 at 100 µs: {d.loc[100.0, 'median_us']:.0f} µs",
                  ok=bool(d.loc[100.0, "median_us"] > d.loc[5.0, "median_us"]),
                  tolerance="direction only: agrees if the 100 µs value is above the 5 µs value"),
        ]
    return out


register(Experiment(
    name="horus-fig12b", paper=PAPER, figure="Fig. 12b",
    title="Horus p99 against per-hop network delay",
    setup="Horus on the datacenter with Bimodal service at load 0.8; the mean of the exponential "
          "per-hop delay goes from 0 to 100 µs; box = quartiles of the pools' p99.",
    points=fig12b_points,
    table=lambda runs, pools: pool_quartiles(pools, "hop_delay_us"),
    plot=lambda t, png: lines(t, png, "hop_delay_us", "median_us",
                              band=("p25_us", "p75_us"), xlabel="mean per-hop delay (µs)",
                              ylabel="pools' p99 (µs), IQR", title="Network delay"),
    claims=fig12b_claims,
    sections=lambda t: configs_section(
        t, "Fig. 12b", ["hop_delay_us"], [("median_p50_us", "median pool p50"),
                                          ("median_us", "median pool p99")],
        "whole datacenter, Bimodal at load 0.8", multi_spine=True,
        only_at=only_at_note(t, "hop_delay_us", " µs")),
    differences="The paper does not state the load or workload of Fig. 12b; we use Bimodal at "
                "0.8. Response time includes the hops, so part of the rise is the delay itself.",
))


def fig12c_points(scale):
    base = datacenter(scale)
    base["workload"]["load"] = 0.8

    def loss(cfg, v):
        cfg["network"] = {"loss": v}

    return sweep_configs(base, scale, "loss", [0.0, 1e-5, 1e-4, 1e-3, 5e-3, 1e-2], 1e-5,
                         [0.0, 1e-3, 1e-2], loss)


def fig12c_claims(t):
    out = []
    for h in (PAPER_HORUS, SIM):
        d = t[t["policy"] == h].set_index("loss")
        if not {0.0, 1e-3, 1e-2} <= set(d.index):
            continue
        out.append(Claim(
            tag(h) + "At 0.1% loss (10× normal) Horus is not significantly impacted",
            "no significant change",
            f"median pool p99: 0 loss {d.loc[0.0, 'median_us']:.0f} µs, 0.1% "
            f"{d.loc[1e-3, 'median_us']:.0f} µs, 1% {d.loc[1e-2, 'median_us']:.0f} µs",
            ok=bool(d.loc[1e-3, "median_us"] <= 1.25 * d.loc[0.0, "median_us"]),
            tolerance="agrees if the 0.1 % value is at most 1.25× the lossless value"))
    return out


register(Experiment(
    name="horus-fig12c", paper=PAPER, figure="Fig. 12c",
    title="Horus p99 against packet loss",
    setup="Horus on the datacenter, Bimodal at load 0.8, per-packet loss from 0 to 1%; "
          "box = quartiles of the pools' p99 (lost tasks are aborted, not counted in p99).",
    points=fig12c_points,
    table=lambda runs, pools: pool_quartiles(pools, "loss"),
    plot=lambda t, png: lines(t, png, "loss", "median_us",
                              band=("p25_us", "p75_us"), xlabel="packet loss rate",
                              ylabel="pools' p99 (µs), IQR", title="Packet loss", xscale="symlog"),
    claims=fig12c_claims,
    sections=lambda t: configs_section(
        t, "Fig. 12c", ["loss"], [("median_p50_us", "median pool p50"),
                                  ("median_us", "median pool p99")],
        "whole datacenter, Bimodal at load 0.8", multi_spine=True,
        only_at=only_at_note(t, "loss", "")),
    differences="Load and workload are not stated in the paper; we use Bimodal at 0.8.",
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
    d["resub_total"] = d["resub_spine"] + d["resub_leaf"]
    d["load_updates_per_task"] = runs["msg_load_update"] / runs["submitted_total"]
    d["idle_add_remove_per_task"] = (runs["msg_idle_add"] + runs["msg_idle_remove"]) / runs["submitted_total"]
    return d


def fig15_claims(t):
    mx = t.groupby("setup")["resub_total"].max()
    lu = t[t["load"] == t["load"].max()]["load_updates_per_task"].max()
    return [
        Claim("Maximum fraction of resubmitted tasks: 38% (Uniform), 13% (Skewed)",
              "38% / 13%", f"{100 * mx['uniform']:.0f}% / {100 * mx['skewed']:.0f}%",
              ok=bool(mx["uniform"] > mx["skewed"]) and bool(mx.max() < 1.0),
              tolerance="shape only: agrees if Uniform's maximum is above Skewed's (both below "
                        "100 %)"),
        Claim("Load-update messages per task at the highest load are below 0.15",
              "< 0.15", f"{lu:.3f}", ok=bool(lu < 0.15), tolerance="agrees if below 0.15"),
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
    name="horus-fig15-16", paper=PAPER, figure="Fig. 15-16",
    title="Resubmitted tasks and state-update messages (testbed setups, simulated)",
    setup="Horus on the testbed's Uniform (4 racks × 8 workers) and Skewed (4, 4, 8, 32) setups "
          "with RocksDB 90/10, 50/50 and TPC-C: fraction of tasks needing a resubmission pass "
          "(spine + leaf), loadUpdate and idleAdd/Remove messages per task, against load.",
    points=fig15_points,
    table=fig15_table,
    plot=fig15_plot,
    claims=fig15_claims,
    sections=provenance(
        "The paper's Fig. 15-16 were measured on its Tofino testbed running the authors' P4 "
        "program, not with their simulator, so the paper's mechanism, netsched's default "
        "`horus` (`schedulers.horus.preset = \"paper\"`), is the configuration that produced "
        "them, and the only one run here."),
    differences="The paper measures these on the Tofino testbed; we simulate the same rack "
                "layouts and service mixes with §5.1's network model (5 µs hops, 1e-5 loss).",
))


# --- Fig. 17 --------------------------------------------------------------------

def sample_pools(scale: str) -> list:
    """App. C: 'five sample worker pools with sizes ranging from 50 to
    20,000'. We take the pools at the size quantiles 0, 1/4, 1/2, 3/4 and 1
    of the placement (smallest to largest; §5.1's distribution has its cap of
    20,000 far above the largest of 1,000 draws)."""
    sizes = pool_sizes(scale)
    at = [round(q * (len(sizes) - 1)) for q in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return sorted(int(sizes["pool_id"].iloc[i]) for i in at)


def fig17_points(scale):
    base = datacenter(scale)
    base["only_pools"] = sample_pools(scale)
    return grid(base, policy=horus_configs(base) + ["pow2-delayed", "idle-only"], load=loads(scale))


def fig17_claims(t):
    hi = max(t["load"])
    d = t[t["load"] == hi].set_index("policy")
    out = []
    for h in (PAPER_HORUS, SIM):
        if h not in d.index:
            continue
        dd = d.loc[[h, "pow2-delayed", "idle-only"]]
        out.append(Claim(
            tag(h) + "Horus (idle selection + lazily updated power-of-2) beats Pow-of-2 DU and "
            "idle-only on mean response time",
            "Horus lowest",
            f"mean at load {hi}: " + ", ".join(f"{p} {dd.loc[p, 'mean_us']:.0f} µs" for p in dd.index),
            ok=bool(dd.loc[h, "mean_us"] <= dd["mean_us"].min() + 1e-9),
            tolerance="agrees if Horus's mean is the lowest of the three (ties count)"))
    return out


register(Experiment(
    name="horus-fig17", paper=PAPER, figure="Fig. 17",
    title="Horus's components: lazy power-of-2 and idle selection",
    setup="Mean response time against load for Horus, power-of-2 updated only by replies "
          "(Pow-of-2 DU) and idle-list-only selection (random when none idle), Bimodal, over "
          "App. C's five sample pools: the datacenter's pools at the size quantiles 0, ¼, ½, ¾ "
          "and 1, simulated alone (pools share no state, so their results are the full run's).",
    points=fig17_points,
    table=lambda runs, pools: per_run(runs),
    plot=lambda t, png: lines(t, png, "load", "mean_us", xlabel="load",
                              ylabel="mean response time (µs)", title="Horus components"),
    claims=fig17_claims,
    sections=lambda t: configs_section(
        t, "Fig. 17", ["load"], [("mean_us", "mean"), ("p50_us", "p50"), ("p99_us", "p99")],
        "App. C's five sample pools, Bimodal, every load", multi_spine=True),
    differences="The two variants run as one scheduler over each pool's workers (App. C does not "
                "state their placement in the hierarchy). App. C does not name its five pools; we "
                "take the size quantiles, so the largest is the datacenter's largest pool (a few "
                "thousand workers at paper scale) rather than 20,000. Mean response time is over "
                "the five pools' tasks together.",
))


# --- Fig. 18 --------------------------------------------------------------------

def spine_pools(scale: str) -> dict:
    """Global spine id -> the pools it schedules for (its leaves' pools), from
    the placement at the leaf:spine ratio of each of Fig. 18's runs."""
    from ..api import placement

    out = {}
    for r in (10, 20, 40):
        cfg = datacenter(scale)
        cfg["placement"]["ratio"] = r
        pl = placement(cfg)
        out[r] = {int(s): sorted(int(p) for p in g.unique()) for s, g in pl.groupby("spine_id")["pool_id"]}
    return out


def fig18_points(scale):
    base = datacenter(scale)
    base["policy"] = "horus"
    reps = 30 if scale == "paper" else 3
    rng = random.Random(18)
    tpw = base["workload"]["tasks_per_worker"]
    # Fail mid-window: the arrival window is tasks_per_worker × mean / load (Bimodal mean 275 µs).
    at_us = 0.5 * tpw * 275.0 / base["workload"]["load"]
    by_spine = spine_pools(scale)
    pts = []
    for r in [10, 20, 40]:
        # A random spine *scheduler*: one that schedules for at least one pool
        # (at reduced scale many spines serve none). Distinct spines per ratio:
        # a repeated spine would repeat a run.
        used = sorted(by_spine[r])
        for rep, spine in enumerate(rng.sample(used, reps)):
            cfg = copy.deepcopy(base)
            cfg["placement"]["ratio"] = r
            cfg["failures"] = [{"kind": "spine", "at_us": at_us, "id": spine}]
            # Only the pools the failure reaches: the others run exactly as
            # without it and contribute no message or abort.
            cfg["only_pools"] = by_spine[r][spine]
            pts.append(Point({"ratio": r, "rep": rep, "spine": spine}, cfg))
    return pts


def fig18_table(runs, pools):
    d = runs[["ratio", "rep", "spine", "pools", "msg_controller", "aborted_dead_spine",
              "submitted_total"]].copy()
    # Of the tasks submitted to the pools using the failed spine: an upper
    # bound on the paper's fraction of all the datacenter's tasks.
    d["aborted_fraction"] = d["aborted_dead_spine"] / d["submitted_total"]
    return d


def fig18_claims(t):
    g = t.groupby("ratio")
    m = g["msg_controller"].mean()
    ab = g["aborted_fraction"].mean()
    return [
        Claim("Controller messages per spine failure fall as r grows", "falling", ", ".join(f"r={r}: mean {m[r]:.0f} (max {g['msg_controller'].max()[r]:.0f})"
                                                for r in m.index),
              ok=bool(m.iloc[0] >= m.iloc[-1]),
              tolerance="direction: agrees if the mean at the smallest r is at least the "
                        "mean at the largest"),
        within("Controller messages per spine failure at r=10: mean 306", 306.0,
               float(m[10]) if 10 in m.index else float("nan"), rel=0.25,
               ours_text=f"{m[10]:.0f}" if 10 in m.index else "r=10 not run"),
        Claim("Less than 0.1% of submitted tasks are aborted per spine failure",
              "< 0.1%", ", ".join(f"r={r}: {100 * ab[r]:.3f}%" for r in ab.index),
              ok=bool(ab.max() < 1e-3),
              tolerance="agrees if every r's mean is below 0.1 %"),
    ]


register(Experiment(
    name="horus-fig18", paper=PAPER, figure="Fig. 18",
    title="Spine scheduler failures: controller messages and aborted tasks",
    setup="A random spine scheduler fails halfway through the run (Bimodal, load 0.9); leaves "
          "learn of it after the controller's hop-delayed notice. Repeated for leaf:spine ratios "
          "r = 10, 20, 40 (30 random spines each at paper scale, 3 at reduced scale). Only the "
          "pools that use the failed spine are simulated (the others are untouched by it); the "
          "aborted fraction is of those pools' submitted tasks.",
    points=fig18_points,
    table=fig18_table,
    plot=lambda t, png: bars(t.groupby("ratio", as_index=False)[["msg_controller", "aborted_fraction"]].mean()
                             .melt(id_vars="ratio", var_name="metric"), png, "ratio", "value",
                             series="metric", ylabel="mean per failure", logy=True),
    claims=fig18_claims,
    sections=provenance(
        "The paper's simulated figures came from the authors' simulator, horus-sim, unmodified. "
        "Fig. 18 counts controller messages and aborted tasks after a spine failure, not "
        "latency, and runs here with the paper's mechanism only: netsched refuses failure events "
        "with horus-sim's shared idle set (`leaf_idle_scope = \"pool\"` merges a pool's racks "
        "into one, which a failure cannot address). The Horus configurations side by side are on "
        "the pages of Fig. 10, 11, 12a-c, 17, 19a and 19b."),
    differences="A reduced-scale tree has 128 spines and 30 pools, so far fewer leaves depend "
                "on each spine and message counts are proportionally smaller; we draw the failed "
                "spine among those scheduling for at least one pool (at reduced scale many serve "
                "none). The paper divides aborted tasks by all submitted tasks; we divide by the "
                "tasks of the pools that use the failed spine, a smaller denominator, so our "
                "fraction is an upper bound on the paper's."))


# --- Fig. 19b -------------------------------------------------------------------

FIG19B_NORMAL_LOSS = 1e-5


def fig19b_points(scale):
    base = datacenter(scale)
    pts = []
    # The paper's mechanism at every loss; the authors' configurations and
    # horus-tokens at §5.1's normal loss only (whole-datacenter runs).
    for h in horus_configs(base):
        for loss in [0.0, FIG19B_NORMAL_LOSS, 1e-3, 5e-3, 1e-2]:
            if h != PAPER_HORUS and loss != FIG19B_NORMAL_LOSS:
                continue
            cfg = copy.deepcopy(base)
            cfg["network"] = {"loss": loss}
            [pt] = grid(cfg, policy=[h])
            pts.append(Point({"policy": pt.labels["policy"], "loss": loss}, pt.config))
    return pts


def fig19b_table(runs, pools):
    d = runs[["policy", "loss", "submitted_total"]].copy()
    d["load_update_per_task"] = runs["msg_load_update"] / runs["submitted_total"]
    d["idle_add_remove_per_task"] = (runs["msg_idle_add"] + runs["msg_idle_remove"]) / runs["submitted_total"]
    return d


def fig19b_claims(t):
    d = t[t["policy"] == PAPER_HORUS].set_index("loss")
    inc = d.loc[1e-3, "idle_add_remove_per_task"] / d.loc[1e-5, "idle_add_remove_per_task"] - 1
    lu = d["load_update_per_task"]
    return [
        Claim("idleAdd/Remove rate rises by only ~15% at 0.1% loss", "+15%", f"{100 * inc:+.0f}%",
              ok=bool(abs(inc) < 0.5),
              tolerance="agrees if the change is within ±50 % (the paper's +15 % is a small rise)"),
        Claim("Load-update rate is insensitive to loss", "flat",
              f"{lu.min():.3f}-{lu.max():.3f} per task", ok=bool(lu.max() <= 1.2 * lu.min()),
              tolerance="agrees if the highest rate is at most 1.2× the lowest"),
    ]


register(Experiment(
    name="horus-fig19b", paper=PAPER, figure="Fig. 19b",
    title="Update messages against packet loss",
    setup="Horus on the datacenter, Bimodal at 0.9: loadUpdate and idleAdd/Remove messages per "
          "task for loss rates 0 to 1% (lost idle messages are re-sent, App. A.3).",
    points=fig19b_points,
    table=fig19b_table,
    plot=lambda t, png: lines(t[t["policy"] == PAPER_HORUS]
                              .melt(id_vars="loss", value_vars=["load_update_per_task",
                                                                "idle_add_remove_per_task"],
                                    var_name="policy"), png, "loss", "value", xlabel="loss rate",
                              ylabel="messages per task", logy=False, xscale="symlog",
                              title="Update messages vs loss (paper mechanism)"),
    claims=fig19b_claims,
    sections=lambda t: configs_section(
        t, "Fig. 19b", ["loss"], [("idle_add_remove_per_task", "idleAdd/Remove per task"),
                                  ("load_update_per_task", "loadUpdate per task")],
        "whole datacenter, Bimodal at load 0.9", multi_spine=True,
        only_at=f"The authors' configurations and horus-tokens run at the normal loss "
                f"{FIG19B_NORMAL_LOSS:g} only (whole-datacenter runs); the plot and the claims "
                "are the paper mechanism's. Caveat: netsched reproduces horus-sim's shared idle "
                "set by merging each pool's racks under one leaf (docs/fidelity.md), which keeps "
                "its latency within 10 % of horus-sim's but not its message counts: one leaf per "
                "pool sends far fewer loadUpdate and idle messages than horus-sim's one per rack, "
                "so the `horus (horus-sim)` column below is not horus-sim's message rate, and "
                "its ratios are not what the defect is worth in messages."),
    differences="Messages are counted when sent, retransmissions included, over the whole run.",
))


# --- Fig. 19a -------------------------------------------------------------------

FIG19A_POLICIES = ["horus", "rs-h", "rs-lb", SIM, SIM_FIXED, TOKENS]


def fig19a_points(scale):
    # Bimodal at load 0.9 over the whole datacenter: exactly Fig. 12a's runs
    # at that load (same configs, so the cache shares them). `scale` rides along as a label so
    # the table can rebuild the placement.
    base = datacenter(scale)
    pts = grid(base, service=["bimodal"], policy=["horus", "rs-h", "rs-lb"] + horus_configs(base)[1:],
               load=[CONFIGS_LOAD])
    for p in pts:
        p.labels["scale"] = scale
    return pts


def pool_spread(scale: str) -> pd.DataFrame:
    """Per pool: workers, racks, and the (population) variance of its
    per-rack worker counts over the racks it occupies, from the placement
    the runs used (`netsched.placement`, the simulator's own
    `Placement::place` with the same seed)."""
    from ..api import placement

    pl = placement(datacenter(scale))
    g = pl.groupby("pool_id")["workers"]
    return pd.DataFrame({"workers": g.sum(), "racks": g.size(), "per_rack_mean": g.mean(),
                         "per_rack_var": g.var(ddof=0).fillna(0.0)}).reset_index()


def fig19a_groups(scale: str) -> int:
    return 6 if scale == "paper" else 4


def fig19a_table(runs, pools):
    """One row per (variance group, policy): the pools' mean p99 and its
    standard deviation (App. C: 'the average of the tail response time ...
    error bars, the average plus/minus one standard deviation')."""
    scale = str(pools["scale"].iloc[0])
    spread = pool_spread(scale)
    d = pools[["policy", "pool_id", "workers", "response_p99_ns"]].merge(
        spread.drop(columns="workers"), on="pool_id", validate="many_to_one")
    d["p99_us"] = d["response_p99_ns"] / 1e3
    # Groups of pools with similar variance: equal-count bins of the variance.
    n = fig19a_groups(scale)
    ranks = spread.set_index("pool_id")["per_rack_var"].rank(method="first")
    group = ((ranks - 1) * n // len(ranks)).astype(int)
    d["group"] = d["pool_id"].map(group)
    g = d.groupby(["group", "policy"])
    out = pd.DataFrame({
        "var_lo": g["per_rack_var"].min(), "var_hi": g["per_rack_var"].max(),
        "var_mean": g["per_rack_var"].mean(), "pools": g.size(),
        "workers_mean": g["workers"].mean(),
        "p99_mean_us": g["p99_us"].mean(), "p99_sd_us": g["p99_us"].std(ddof=0),
    }).reset_index()
    order = {p: i for i, p in enumerate(FIG19A_POLICIES)}
    return out.sort_values(["group", "policy"], key=lambda s: s.map(order) if s.name == "policy" else s,
                           ).reset_index(drop=True)


def fig19a_plot(t, png):
    from .base import STYLE, _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.0, 3.6), dpi=110)
    pols = [p for p in FIG19A_POLICIES if p in set(t["policy"])]
    for i, pol in enumerate(pols):
        d = t[t["policy"] == pol].sort_values("group")
        color, marker, label = STYLE.get(pol, (None, "o", pol))
        label = "RS-R (RS-LB)" if pol == "rs-lb" else label
        # Offset the groups slightly so the error bars do not overlap.
        x = d["group"] + (i - (len(pols) - 1) / 2) * 0.08
        lo = (d["p99_mean_us"] - d["p99_sd_us"]).clip(lower=d["p99_mean_us"] * 0.05)
        ax.errorbar(x, d["p99_mean_us"], yerr=[d["p99_mean_us"] - lo, d["p99_sd_us"]],
                    color=color, marker=marker, label=label, capsize=3, ls="-")
    ticks = t.drop_duplicates("group").sort_values("group")
    ax.set_xticks(ticks["group"])
    ax.set_xticklabels([f"{a:.0f}-{b:.0f}" for a, b in zip(ticks["var_lo"], ticks["var_hi"])])
    ax.set_xlabel("variance of the pool's workers per rack")
    ax.set_ylabel("p99 response time (µs), mean ± sd")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Load 0.9, Bimodal")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def fig19a_claims(t):
    p = t.pivot_table(index="group", columns="policy", values="p99_mean_us")
    sd = t.pivot_table(index="group", columns="policy", values="p99_sd_us")
    top = p.index.max()
    lo_g, hi_g = p.index.min(), top
    rise = {pol: float(p.loc[hi_g, pol] / p.loc[lo_g, pol]) for pol in p.columns}
    out = [
        Claim("As the per-rack variance grows, RS-H and RS-R get higher tail response times",
              "rising with variance",
              f"mean p99 highest/lowest variance group: RS-H {rise['rs-h']:.2f}×, "
              f"RS-R {rise['rs-lb']:.2f}×",
              ok=bool(rise["rs-h"] > 1.0 and rise["rs-lb"] > 1.0),
              tolerance="agrees if both ratios are above 1.00×"),
    ]
    for h in (PAPER_HORUS, SIM):
        if h not in p.columns:
            continue
        red_lb = 100 * (1 - p.loc[top, h] / p.loc[top, "rs-lb"])
        red_h = 100 * (1 - p.loc[top, h] / p.loc[top, "rs-h"])
        cv = float((sd[h] / p[h]).max())
        out += [
            Claim(tag(h) + "Horus's tail stays stable across worker distributions", "stable",
                  f"highest/lowest group {rise[h]:.2f}×; largest sd/mean within a group {cv:.2f}",
                  ok=bool(rise[h] < min(rise["rs-h"], rise["rs-lb"]) and rise[h] < 1.5),
                  tolerance="agrees if Horus's highest/lowest ratio is below 1.5× and below "
                            "RS-H's and RS-R's"),
            Claim(tag(h) + "Most scattered pools (variance ≈ 140): Horus reduces p99 by up to 94 % "
                  "vs RS-R and 99 % vs RS-H",
                  "94 % / 99 %",
                  f"highest-variance group (variance {t[t.group == top].var_lo.iloc[0]:.0f}-"
                  f"{t[t.group == top].var_hi.iloc[0]:.0f}): {red_lb:.0f}% vs RS-R, "
                  f"{red_h:.0f}% vs RS-H",
                  ok=bool(abs(red_lb - 94) <= 15 and abs(red_h - 99) <= 15),
                  tolerance="each within 15 percentage points of the paper's (our highest "
                            "variance is far below the paper's 140, see below)"),
        ]
    return out


register(Experiment(
    name="horus-fig19a", paper=PAPER, figure="Fig. 19a",
    title="Impact of worker placement: p99 per pool grouped by the variance of its workers per rack",
    setup="Fig. 12a's whole-datacenter Bimodal runs at load 0.9 (Horus, RS-H, RS-LB; shared through "
          "the cache). Each "
          "pool's per-rack worker counts come from the placement the runs used "
          "(`netsched.placement`); pools are grouped into equal-count bins of the variance of "
          "those counts, and we plot the mean of the pools' p99 ± one standard deviation.",
    points=fig19a_points,
    table=fig19a_table,
    plot=fig19a_plot,
    claims=fig19a_claims,
    sections=lambda t: configs_section(
        t, "Fig. 19a", ["group"], [("p99_mean_us", "mean of the pools' p99")],
        f"whole datacenter, Bimodal at load {CONFIGS_LOAD}, per variance group",
        multi_spine=True),
    differences="The paper's RS-R is taken to be RS-LB (a uniformly random rack, then RackSched). "
                "Its variance is 'the variance in the number of workers per worker pool' across "
                "racks; we take the population variance over the racks a pool occupies. Under "
                "our scattered placement (each worker on a uniformly random free core) that "
                "variance grows with pool size (about the mean workers per rack), so the groups "
                "are also size groups and the largest variance is far below the paper's 140: 33 "
                "at reduced scale (30 pools on 128 racks), 6.3 at paper scale (1,000 pools on "
                "1,152 racks, 1.4 workers per occupied rack on average). The paper does not "
                "describe the placement behind its variance of 140. Reduced scale has 30 pools "
                "in 4 groups (paper scale: 1,000 pools in 6).",
))
