"""Baraat (SIGCOMM'14) on the flow-level simulator (`netsched flowsim`,
docs/flowsim.md): §2.2 Fig. 3 (SFF vs fair sharing against flows per task),
§5.2.1 Fig. 8 and 9 and Table 4 (reduction in task completion time with
Baraat against RCP, pFabric, Orchestra and STF for the Bing, data-analytics
and uniform workloads), §5.2.3 Fig. 12 (heavy-task threshold).

Every point is one `kind="flowsim"` run of one policy, so Fig. 8, Fig. 9,
Table 4 and Fig. 12 share their runs through the sweep cache. Paper scale is
§5.2's datacenter (36,000 servers: 30 pods × 30 racks × 40, 1 Gbps hosts,
2:1 at the ToR; 10,000 single-stage tasks of 39 flows at 80 % load on the 30
aggregator racks). Reduced scale keeps the task shape (a 40-server rack, 39
flows of 2-50 KB, 2:1 ToR) and the per-aggregator load, with 10 aggregator
racks in a 10 × 10-rack tree and 2,000 tasks (200 per aggregator). Table 4
and Fig. 8-9 run 10 seeds (5 at paper scale) and leave each run's first 10 %
of tasks out; §5.2.2-5.2.3's entries are in `baraat_sweeps`."""
from __future__ import annotations

import copy

import pandas as pd

from ..sweep import Point
from .base import Claim, Experiment, _plt, bars, points, register

PAPER = "Baraat (SIGCOMM'14)"

# §5.2: "The first two workloads are based on the Bing and Facebook traces
# ... while the third one models a more homogeneous application with flow
# sizes ... uniformly distributed across [2KB, 50KB]". Fig. 2 is not available
# as data, so the models follow its text (docs/flowsim.md, "Workloads"):
# bing = bimodal, 15 % of tasks heavy ("approximately 15% of the tasks are
# significantly heavier"); data-analytics = bounded Pareto task scale
# (heavy-tailed); uniform = no scale.
WORKLOADS = {"bing": "bing", "data-analytics": "facebook", "uniform": "uniform"}
OTHERS = ["fair", "pfabric", "stf", "orchestra"]  # Table 4's rows, in its order
NAMES = {"fair": "RCP", "pfabric": "pFabric", "stf": "STF", "orchestra": "Orchestra",
         "baraat": "Baraat"}

# Seeds per point, and the share of each run's first tasks left out of the
# statistics (the queues start empty: a warm-up).
# Reduced scale: 10 seeds (a run takes well under a second); with 3 the
# heavy-tailed columns' 95 % intervals spanned ±50 to ±550 points and two
# data-analytics STF cells "agreed" by noise alone.
SEEDS = {"reduced": list(range(1, 11)), "paper": [1, 2, 3, 4, 5]}
WARMUP = 0.1


def heavy_threshold(sizes: str, servers_per_rack: int = 40, flow_max_kb: float = 50.0) -> dict:
    """§4.3's heavy threshold per workload, as the `[baraat]` table. Bimodal
    (Bing): "as soon as the task size enters the second mode": the light
    mode's upper edge, every light flow at its maximum into the aggregator.
    Heavy-tailed (data analytics): "a threshold in the range of 80th-90th
    percentile", the middle of it. Uniform: no heavy tasks, so Baraat is
    FIFO ("Baraat and Orchestra collapse to the same policy"): the largest
    task of the history."""
    if sizes == "bing":
        return {"threshold_bytes": (servers_per_rack - 1) * flow_max_kb * 1000.0}
    if sizes == "facebook":
        return {"threshold_percentile": 0.85}
    return {"threshold_percentile": 1.0}


# Table 4: reduction in task completion time with Baraat relative to each
# policy (median, 95th, 99th percentile), per workload.
TABLE4 = {
    ("bing", "fair"): (-5, 30, 34), ("bing", "pfabric"): (4, 70, 76),
    ("bing", "stf"): (-8, 84, 97), ("bing", "orchestra"): (28, 27, 16),
    ("data-analytics", "fair"): (25, 58, 62), ("data-analytics", "pfabric"): (4, 43, 61),
    ("data-analytics", "stf"): (0, 37, 64), ("data-analytics", "orchestra"): (94, 93, 84),
    ("uniform", "fair"): (7, 37, 40), ("uniform", "pfabric"): (38, 66, 75),
    ("uniform", "stf"): (0, 1, 6), ("uniform", "orchestra"): (0, 0, 0),
}
# §5.2.1's text for Fig. 8 and 9 (95th percentile). It gives 47 % over RCP for
# the uniform workload where Table 4 says 37 %; we compare with the figure's.
FIG8 = {("bing", "pfabric"): 70, ("data-analytics", "pfabric"): 43, ("uniform", "pfabric"): 66,
        ("bing", "fair"): 30, ("data-analytics", "fair"): 58, ("uniform", "fair"): 47}
FIG9 = {("bing", "orchestra"): 27, ("data-analytics", "orchestra"): 93,
        ("bing", "stf"): 84, ("data-analytics", "stf"): 37,
        # "For uniform workloads, all centralized solutions perform the same"
        ("uniform", "orchestra"): 0, ("uniform", "stf"): 1}


def datacenter(scale: str, sizes: str = "bing") -> dict:
    """§5.2's large-scale setup, one policy per config (set by the caller)."""
    cfg = {
        "seed": 1,
        "topology": {"pods": 30, "racks_per_pod": 30, "servers_per_rack": 40, "host_gbps": 1.0,
                     "tor_oversub": 2.0, "agg_oversub": 1.0},
        "workload": {"workflow": "single-stage", "sizes": sizes, "arrival": "poisson",
                     "tasks": 10_000, "load": 0.8, "aggregators": 30, "flow_min_kb": 2.0,
                     "flow_max_kb": 50.0},
        "baraat": heavy_threshold(sizes),
    }
    if scale == "reduced":
        cfg["topology"].update(pods=10, racks_per_pod=10)
        cfg["workload"].update(tasks=2_000, aggregators=10)
    return cfg


def run_point(scale: str, workload: str, policy: str, threshold: float | None = None,
              seed: int = 1) -> Point:
    cfg = copy.deepcopy(datacenter(scale, WORKLOADS[workload]))
    cfg["policies"] = [policy]
    cfg["seed"] = seed
    if threshold is not None:
        cfg["baraat"] = {"threshold_percentile": threshold}
    labels = {"workload": workload, "policy": policy, "seed": seed}
    return Point(labels, cfg, kind="flowsim")


def comparison_points(scale: str) -> list[Point]:
    return [run_point(scale, w, p, seed=s) for s in SEEDS[scale] for w in WORKLOADS
            for p in OTHERS + ["baraat"]]


# Two-sided 95 % Student t quantiles by degrees of freedom.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228}


def mean_ci(values) -> tuple[float, float]:
    """Mean across seeds and the half-width of its 95 % confidence interval
    (Student t; 0 with one seed)."""
    v = pd.Series(list(values), dtype=float)
    n = len(v)
    if n < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), _T975.get(n - 1, 1.96) * float(v.std(ddof=1)) / n ** 0.5


def task_quantiles(tasks: pd.DataFrame, by: list[str], warmup: float = WARMUP) -> pd.DataFrame:
    """Median, 95th and 99th percentile, mean and worst task completion time
    (ns) per group of `by`, leaving out each run's first `warmup` share of
    tasks (by arrival index)."""
    def one(g):
        g = g[g["index"] >= warmup * (g["index"].max() + 1)]
        c = g["completion_ns"]
        return pd.Series({"median_ns": c.quantile(0.5), "p95_ns": c.quantile(0.95),
                          "p99_ns": c.quantile(0.99), "mean_ns": c.mean(), "max_ns": c.max(),
                          "tasks": len(c)})
    return tasks.groupby(by, sort=False).apply(one, include_groups=False).reset_index()


def reduction(baraat: float, other: float) -> float:
    """Table 4's metric: 100 × (other − Baraat) / other."""
    return 100.0 * (other - baraat) / other if other else 0.0


def table4(runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per (workload, policy other than Baraat): Baraat's reduction at
    the median, 95th and 99th percentile, each the mean across seeds with
    its 95 % confidence interval (`*_ci`, half-width), ours beside the
    paper's, and both policies' completion times (ms, mean across seeds).
    Statistics leave out each run's warm-up (`WARMUP`)."""
    if "seed" not in tasks:
        tasks = tasks.assign(seed=1)
    q = task_quantiles(tasks, ["workload", "policy", "seed"]).set_index(
        ["workload", "policy", "seed"])
    rows = []
    for w in dict.fromkeys(tasks["workload"]):
        seeds = sorted(set(q.loc[w].index.get_level_values("seed")))
        for p in OTHERS:
            pm, p95, p99 = TABLE4[(w, p)]
            row = {"workload": w, "policy": p, "name": NAMES[p]}
            for col, stat in [("median_red", "median_ns"), ("p95_red", "p95_ns"),
                              ("p99_red", "p99_ns")]:
                reds = [reduction(q.loc[(w, "baraat", s), stat], q.loc[(w, p, s), stat])
                        for s in seeds]
                row[col], row[col + "_ci"] = mean_ci(reds)
            row.update({"paper_median_red": pm, "paper_p95_red": p95, "paper_p99_red": p99})
            for stat, name in [("median_ns", "median_ms"), ("p95_ns", "p95_ms"),
                               ("p99_ns", "p99_ms")]:
                row[name] = sum(q.loc[(w, p, s), stat] for s in seeds) / len(seeds) / 1e6
                row["baraat_" + name] = sum(q.loc[(w, "baraat", s), stat]
                                            for s in seeds) / len(seeds) / 1e6
            row["tasks"] = int(q.loc[(w, p, seeds[0]), "tasks"])
            row["seeds"] = len(seeds)
            rows.append(row)
    return pd.DataFrame(rows)


# Table 4 and Figs. 8-9 state reductions in percent; a cell agrees within
# 15 percentage points of the paper's (issue 15's measure of the table).
CELL_PP = 15.0


def _fmt_red(v: float, ci: float | None = None) -> str:
    """A reduction, with its 95 % confidence interval across seeds."""
    return f"{v:+.0f}%" if ci is None or ci != ci else f"{v:+.0f}% ± {ci:.0f}"


def seed_mean(c: Claim) -> Claim:
    """States on the claim that its verdict judges the mean across seeds."""
    c.tolerance += "; the mean across seeds is judged (± its 95 % confidence interval)"
    return c


def table4_claims(t: pd.DataFrame) -> list[Claim]:
    """One claim per cell of Table 4: 12 rows × (median, 95th, 99th)."""
    out = []
    for _, r in t.iterrows():
        for col, label in [("median_red", "median"), ("p95_red", "95th-percentile"),
                           ("p99_red", "99th-percentile")]:
            out.append(seed_mean(points(
                f"{r.workload}: {label} reduction with Baraat vs {r['name']}",
                r[f"paper_{col}"], r[col], pp=CELL_PP,
                ours_text=_fmt_red(r[col], r.get(col + "_ci")))))
    return out


def table4_plot(t: pd.DataFrame, png: str) -> None:
    m = t.melt(id_vars=["workload", "policy"], value_vars=["median_red", "p95_red", "p99_red"],
               var_name="percentile", value_name="reduction")
    m["percentile"] = m["percentile"].str.replace("_red", "")
    m["policy"] = m["policy"].map(NAMES)
    bars(m, png, "percentile", "reduction", series="policy", panel="workload",
         ylabel="reduction with Baraat (%)")


TABLE4_DIFF = (
    "Which modelling choice moves which cells, by cell (reduced scale, 10 seeds; "
    "docs/flowsim.md has the scans). "
    "[pFabric, bing and data-analytics medians] Out of reach at 80 % load for any pFabric: "
    "ours (ideal shortest remaining flow first, per flow, sizes known, no protocol overhead: "
    "the paper's §5.2.1 'shortest flow first ... with no protocol overhead') finishes the "
    "median task in 1.14× (bing) and 1.01× (data analytics) the time its own bytes need at "
    "the aggregator's downlink (seed 1: 9.7 ms against 8.3; 19.2 against 15.6), so no "
    "variant of it can be much faster, and a slower one cannot make light tasks wait as "
    "FIFO does. Baraat's median task waits behind the tasks ahead of it (3.14× and 2.22× "
    "its own time: 36.4 and 53.6 ms), so the cells are −435 ± 79 % and −417 ± 138 %; "
    "the paper's +4 % needs a median task that hardly queues. That is "
    "load: at 30 % load (seed 1) bing's cell is −2.5 % and data analytics' −17 %, at 50 % "
    "−42 % and −40 %. "
    "[uniform RCP, pFabric median, STF median and 99th] Load: the paper's 80 % 'data center "
    "load' cannot be the load of the aggregators' downlinks in our model, where fair sharing "
    "is then ~50 % worse than FIFO at the uniform median (the paper: 7 %). At 30 % load the "
    "uniform column agrees in 9 of 12 cells (RCP +7/+36/+36 %, paper 7/37/40; STF "
    "0/−6/+8 %, paper 0/1/6; Orchestra 0/−2/0) but bing and data analytics lose theirs (3 "
    "and 2 of 12): no single load fits the three columns, so we keep 80 %. "
    "[bing RCP median, all STF medians] STF's preemption: the paper's STF orders tasks by "
    "total size known up front; ours until 2026-11-26 preempted a started task for every "
    "smaller arrival (medians −268 %, −198 %, −78 %; paper −8, 0, 0); non-preemptive STF "
    "gives −57 ± 21 %, −53 ± 28 % and −42 ± 6 %; the uniform one reaches 0 % at 30 % "
    "load, as above. Bing's RCP median is −29 ± 9 % (paper −5 %; −5 % with seed 1 alone). "
    "[bing STF, Orchestra and pFabric 95th/99th; data-analytics RCP, STF and Orchestra] "
    "Workload models: Fig. 2 is not available as data; Bing's heavy factor (2-20) and the "
    "data-analytics Pareto (shape 1.1 or 1.5, max ×30 to ×1,000) were scanned; none puts "
    "more than 5 of a column's 12 cells within 15 points, and in every one Baraat's 95th "
    "percentile stays above Orchestra's for Bing (paper: 27 % below): FIFO-LM's half-link "
    "sharing with a heavy task costs the heavy tasks (the 95th percentile is one of them) "
    "more than FIFO's blocking costs the light ones. "
    "[data-analytics STF 95th/99th] Seeds: with 3 seeds these agreed (+43 ± 104, "
    "+52 ± 99 %), with 10 they differ (+15 ± 30, +41 ± 21 %; paper 37 and 64): the "
    "agreement was noise. Reduced scale: 10 aggregator racks and 2,000 tasks instead of 30 "
    "and 10,000.")


register(Experiment(
    name="baraat-table4", paper=PAPER, figure="Table 4",
    title="Reduction in task completion time with Baraat relative to other policies",
    setup="§5.2.1: single-stage partition-aggregate (an aggregator and its 39 rack peers, "
          "2-50 KB flows scaled per task) at 80 % load on the aggregators' downlinks, Poisson "
          "arrivals; Baraat (FIFO-LM; heavy threshold per workload, §4.3: Bing at the light "
          "mode's edge, data analytics p85, uniform none) against RCP (ideal fair sharing), "
          "pFabric (ideal shortest remaining flow first), STF (centralised, total task sizes "
          "known up front, non-preemptive) and Orchestra (centralised FIFO), for the "
          "Bing-like, data-analytics-like and uniform workloads; reduction = (other − Baraat) "
          "/ other at the median, 95th and 99th percentile of task completion time, per seed "
          "(first 10 % of tasks left out), mean across seeds ± 95 % CI.",
    points=comparison_points,
    table=table4,
    plot=table4_plot,
    claims=table4_claims,
    differences=TABLE4_DIFF,
))


# --- Fig. 8 and 9: the 95th-percentile columns of the same runs -------------------

def p95_table(policies):
    def table(runs, tasks):
        t = table4(runs, tasks)
        t = t[t["policy"].isin(policies)].copy()
        ref = FIG8 if "pfabric" in policies else FIG9
        t["paper_p95_red"] = [ref[(w, p)] for w, p in zip(t["workload"], t["policy"])]
        return t[["workload", "policy", "name", "p95_red", "p95_red_ci", "paper_p95_red",
                  "p95_ms", "baraat_p95_ms", "tasks", "seeds"]].reset_index(drop=True)
    return table


def p95_claims(t: pd.DataFrame) -> list[Claim]:
    return [seed_mean(points(f"{r.workload}: 95th-percentile reduction with Baraat vs {r['name']}",
                             r.paper_p95_red, r.p95_red, pp=CELL_PP,
                             ours_text=_fmt_red(r.p95_red, r.get("p95_red_ci"))))
            for _, r in t.iterrows()]


def p95_plot(t: pd.DataFrame, png: str) -> None:
    bars(t, png, "workload", "p95_red", series="name",
         ylabel="p95 reduction with Baraat (%)")


register(Experiment(
    name="baraat-fig8", paper=PAPER, figure="Fig. 8",
    title="Reduction in tail (95th-percentile) task completion time with Baraat against "
          "decentralized schemes (pFabric, RCP)",
    setup="The 95th-percentile columns of Table 4's runs against pFabric and RCP (same runs, "
          "shared through the cache): 10,000 single-stage tasks at 80 % load per workload.",
    points=comparison_points,
    table=p95_table(["pfabric", "fair"]),
    plot=p95_plot,
    claims=p95_claims,
    differences="The paper's text gives 47 % over RCP for the uniform workload, Table 4 37 %; "
                "we compare with the text. " + TABLE4_DIFF,
))

register(Experiment(
    name="baraat-fig9", paper=PAPER, figure="Fig. 9",
    title="Reduction in tail (95th-percentile) task completion time with Baraat against "
          "centralized schemes (Orchestra, STF)",
    setup="The 95th-percentile columns of Table 4's runs against Orchestra (FIFO) and STF "
          "(shortest task first, total sizes known upfront, non-preemptive), both idealised "
          "and centralised.",
    points=comparison_points,
    table=p95_table(["orchestra", "stf"]),
    plot=p95_plot,
    claims=p95_claims,
    differences="For the uniform workload the paper states only that all centralised "
                "schemes perform the same; we compare with Table 4's 0 % and 1 %. " + TABLE4_DIFF,
))


# --- Fig. 3: SFF vs fair sharing against flows per task ------------------------

FIG3_FLOWS = [1, 2, 5, 10, 20, 50, 100, 200]
FIG3_POLICIES = ["fair", "pfabric", "orchestra", "stf"]


def fig3_points(scale: str) -> list[Point]:
    """§2.2: 'a simple single stage partition-aggregate workflow scenario with
    40 tasks comprising flows uniformly chosen from the range [5, 40]KB'. The
    paper does not state the arrivals; we take the simplest reading, a batch
    of 40 tasks at one aggregator (one rack of n + 1 servers, n flows per
    task). Seeds average out the draw of flow sizes. Reduced scale stops at
    100 flows (200 flows × 40 tasks is 8,000 flows on one link, ~3 s a run)
    and uses 2 seeds."""
    seeds = range(1, 11) if scale == "paper" else range(1, 3)
    flows = FIG3_FLOWS if scale == "paper" else FIG3_FLOWS[:-1]
    pts = []
    for n in flows:
        for seed in seeds:
            for pol in FIG3_POLICIES:
                cfg = {
                    "seed": seed, "policies": [pol],
                    "topology": {"pods": 1, "racks_per_pod": 1, "servers_per_rack": n + 1},
                    "workload": {"workflow": "single-stage", "sizes": "uniform",
                                 "arrival": "batch", "tasks": 40, "aggregators": 1,
                                 "flow_min_kb": 5.0, "flow_max_kb": 40.0},
                }
                pts.append(Point({"flows": n, "seed": seed, "policy": pol}, cfg, kind="flowsim"))
    return pts


def fig3_table(runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    d = runs.pivot_table(index=["flows", "seed"], columns="policy", values="mean_ns").reset_index()
    d["sff_red"] = 100 * (d["fair"] - d["pfabric"]) / d["fair"]
    d["task_aware_red"] = 100 * (d["fair"] - d["orchestra"]) / d["fair"]
    d["task_aware_stf_red"] = 100 * (d["fair"] - d["stf"]) / d["fair"]
    g = d.groupby("flows")
    return pd.DataFrame({
        "sff_red": g["sff_red"].mean(), "sff_red_sd": g["sff_red"].std(ddof=0),
        "task_aware_red": g["task_aware_red"].mean(),
        "task_aware_red_sd": g["task_aware_red"].std(ddof=0),
        "task_aware_stf_red": g["task_aware_stf_red"].mean(),
        "task_aware_stf_red_sd": g["task_aware_stf_red"].std(ddof=0),
        "fair_mean_ms": g["fair"].mean() / 1e6, "seeds": g.size(),
    }).reset_index()


def fig3_plot(t: pd.DataFrame, png: str) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.6, 3.4), dpi=110)
    for col, label, color, marker in [("sff_red", "SFF (pFabric)", "tab:red", "v"),
                                      ("task_aware_red", "task-aware, FIFO (Orchestra)", "tab:blue", "o"),
                                      ("task_aware_stf_red", "task-aware, smallest first (STF)",
                                       "tab:purple", "D")]:
        ax.errorbar(t["flows"], t[col], yerr=t[col + "_sd"], label=label, color=color,
                    marker=marker, capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("flows per task")
    ax.set_ylabel("reduction in mean task\ncompletion time vs fair sharing (%)")
    ax.axhline(0, color="black", lw=0.6)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def fig3_claims(t: pd.DataFrame) -> list[Claim]:
    d = t.set_index("flows")
    one = float(d.loc[1, "sff_red"])
    many = d[d.index >= 20]["sff_red"]
    ta = d["task_aware_stf_red"]
    fifo = d["task_aware_red"]
    return [
        Claim("With one flow per task SFF reduces task completion time by almost 50 %",
              "≈ 50 %", f"{one:.0f}%", ok=35 <= one <= 60,
              tolerance="35-60 % (\"almost 50 %\", read within 15 points below and 10 above)"),
        Claim("With tens to hundreds of flows per task SFF performs like fair sharing",
              "≈ 0 %", f"{many.min():.0f}% to {many.max():.0f}% (20-{many.index.max()} flows)",
              ok=bool(many.abs().max() <= 10),
              tolerance="within 10 percentage points of 0 at every n ≥ 20"),
        Claim("The task-aware straw man's benefit is stable across flows per task (judged on "
              "the size-ordered straw man; FIFO order shown too)",
              "stable", f"smallest task first {ta.min():.0f}% to {ta.max():.0f}%; FIFO "
              f"{fifo.min():.0f}% to {fifo.max():.0f}% (lowest at 1 flow)",
              ok=bool(ta.max() - ta.min() <= 15 and ta.min() > 25),
              tolerance="the straw man's reduction spans at most 15 points over n and stays "
                        "above 25 %"),
    ]


register(Experiment(
    name="baraat-fig3", paper=PAPER, figure="Fig. 3",
    title="SFF fails to improve over fair sharing for realistic numbers of flows per task",
    setup="§2.2: 40 single-stage partition-aggregate tasks of n flows each (sizes uniform in "
          "[5, 40] KB) into one aggregator; reduction in mean task completion time against "
          "fair sharing for shortest flow first (pFabric) and a task-aware straw man that "
          "schedules a task's flows together, in FIFO order (Orchestra) or smallest task "
          "first (STF), n = 1 to 200 (100 at reduced scale); mean ± one standard deviation "
          "over seeds.",
    points=fig3_points,
    table=fig3_table,
    plot=fig3_plot,
    claims=fig3_claims,
    differences="The paper does not state the arrival pattern, the topology or the x-axis "
                "values; we run the 40 tasks as a batch into one aggregator's 1 Gbps downlink "
                "(one rack of n + 1 servers) and average 2 seeds (reduced) or 10 (paper). "
                "The paper does not say in which order its straw man serves tasks: in FIFO "
                "order a batch of single-flow tasks gains only ~30 % (random order against "
                "processor sharing of sizes in [5, 40] KB), smallest-first gains ~48 % at "
                "every n; from 2 flows on both are stable near 40-49 %.",
))


# --- Fig. 12: heavy-task threshold ----------------------------------------------------

FIG12_THRESHOLDS = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99]


def fig12_points(scale: str) -> list[Point]:
    pts = [run_point(scale, "data-analytics", p) for p in ["fair", "orchestra"]]
    for th in FIG12_THRESHOLDS:
        p = run_point(scale, "data-analytics", "baraat", th)
        p.labels["threshold"] = th
        pts.append(p)
    return pts


def fig12_table(runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    ref = runs[runs["policy"] != "baraat"].set_index("policy")
    d = runs[runs["policy"] == "baraat"].sort_values("threshold")
    out = pd.DataFrame({
        "threshold": d["threshold"].values,
        "mean_ms": d["mean_ns"].values / 1e6, "p95_ms": d["p95_ns"].values / 1e6,
        "p99_ms": d["p99_ns"].values / 1e6,
    })
    for p in ["fair", "orchestra"]:
        out[f"{p}_mean_ms"] = ref.loc[p, "mean_ns"] / 1e6
        out[f"{p}_p95_ms"] = ref.loc[p, "p95_ns"] / 1e6
        out[f"p95_red_vs_{p}"] = [reduction(b, ref.loc[p, "p95_ns"]) for b in d["p95_ns"]]
    return out


def fig12_plot(t: pd.DataFrame, png: str) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), dpi=110)
    for ax, m, label in [(axes[0], "p95", "95th-percentile"), (axes[1], "mean", "mean")]:
        ax.plot(100 * t["threshold"], t[f"{m}_ms"], marker="o", color="tab:blue", label="Baraat")
        ax.axhline(t[f"fair_{m}_ms"].iloc[0], color="tab:green", ls="--", label="RCP")
        ax.axhline(t[f"orchestra_{m}_ms"].iloc[0], color="tab:purple", ls=":", label="Orchestra")
        ax.set_xlabel("heavy-task threshold (percentile of task size)")
        ax.set_ylabel(f"{label} task completion time (ms)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Data-analytics workload")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def fig12_claims(t: pd.DataFrame) -> list[Claim]:
    best = t.loc[t["p95_ms"].idxmin()]
    lo, hi = t.iloc[0], t.iloc[-1]
    fair, orch = float(t["fair_p95_ms"].iloc[0]), float(t["orchestra_p95_ms"].iloc[0])

    def closer(v):
        return "RCP" if abs(v - fair) < abs(v - orch) else "Orchestra"
    return [
        Claim("A threshold between the 80th and 90th percentile gives the best performance",
              "best in p80-p90",
              f"lowest p95 at p{100 * best.threshold:.0f} ({best.p95_ms:.0f} ms)",
              ok=bool(0.8 <= float(best.threshold) <= 0.9),
              tolerance="the best threshold lies in p80-p90"),
        Claim("Too low a threshold converges to fair sharing (RCP)", "→ RCP",
              f"p{100 * lo.threshold:.0f}: p95 {lo.p95_ms:.0f} ms (RCP {fair:.0f}, "
              f"Orchestra {orch:.0f}): closer to {closer(lo.p95_ms)}",
              ok=closer(lo.p95_ms) == "RCP",
              tolerance="the lowest threshold's p95 is nearer RCP's than Orchestra's"),
        Claim("Too high a threshold converges to Orchestra", "→ Orchestra",
              f"p{100 * hi.threshold:.0f}: p95 {hi.p95_ms:.0f} ms: closer to {closer(hi.p95_ms)}",
              ok=closer(hi.p95_ms) == "Orchestra",
              tolerance="the highest threshold's p95 is nearer Orchestra's than RCP's"),
    ]


register(Experiment(
    name="baraat-fig12", paper=PAPER, figure="Fig. 12",
    title="Baraat against the heavy-task identification threshold (data analytics)",
    setup="§5.2.3: Table 4's data-analytics setup; Baraat with the heavy threshold at the "
          "50th-99th percentile of the per-port task size history, RCP and Orchestra as the "
          "two limits; 95th-percentile and mean task completion time.",
    points=fig12_points,
    table=fig12_table,
    plot=fig12_plot,
    claims=fig12_claims,
    differences="The paper's text does not give Fig. 12's y axis; we plot the 95th percentile "
                "and the mean (seed 1, every task). The data-analytics workload is our "
                "bounded-Pareto model of Fig. 2 (right, shape 1.1 up to ×1,000), not the "
                "Facebook trace. In it fair "
                "sharing beats Baraat at the 95th percentile (see baraat-table4: a ×1,000 task "
                "holds the top class for seconds), so Baraat's curve falls monotonically towards "
                "RCP as the threshold drops and the best threshold is the lowest we try, not "
                "p80-p90; both limits (low → RCP, high → Orchestra) do show.",
))
