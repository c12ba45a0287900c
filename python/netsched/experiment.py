"""Running a catalog entry: its sweep over seeds (on Dask, cached), then
`<name>.csv` (the mean over seeds), `<name>.png`, `<name>.md` (our numbers
beside the paper's) and `<name>.json` (the claim records, netsched.claims)
in the output directory."""
from __future__ import annotations

import copy
import json
import math
import numbers
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pandas as pd

from . import catalog
from .catalog.base import SCALES, paper_points_for
from .claims import aggregate, attribute, claims_table, finalize, tally, tally_text
from .sweep import Point, run_points


@dataclass
class ExperimentResult:
    """One catalog entry's run: the figure's `table` (its CSV: the mean over
    seeds), each seed's `tables`, the sweep's `runs` and `pools` (all seeds),
    the claim records judged over seeds (netsched.claims), and the files
    written ([csv, png, md])."""

    table: pd.DataFrame
    runs: pd.DataFrame
    pools: pd.DataFrame
    claims: list
    wall_s: float
    computed: int
    cached: int
    files: list[str]
    tables: list = field(default_factory=list)
    seeds: int = 1


# Seed s > 0 of a point runs with `seed + s * SEED_STRIDE`: far from the
# seeds entries sweep themselves, and seed 0 is the point's own config (so
# one-seed runs hit the cache of earlier ones).
SEED_STRIDE = 1000
DEFAULT_SEEDS = {"reduced": 2, "paper": 2, "published": 5}
ABLATION_SEEDS = 2


def seeded(p: Point, s: int) -> Point:
    """`p` for replicate `s` over seeds."""
    if s == 0:
        return p
    cfg = copy.deepcopy(p.config)
    cfg["seed"] = int(cfg.get("seed", 1)) + s * SEED_STRIDE
    return Point(dict(p.labels), cfg, p.kind)


def mean_table(tables: list) -> pd.DataFrame:
    """The elementwise mean over seeds of tables with the same rows (label
    columns are equal across seeds, so they stay as they are); the first
    seed's table when the shapes differ."""
    t0 = tables[0]
    if len(tables) == 1:
        return t0
    same = all(t.shape == t0.shape and list(t.columns) == list(t0.columns) for t in tables)
    if not same:
        return t0
    out = t0.copy()
    for c in t0.columns:
        cols = [t[c].reset_index(drop=True) for t in tables]
        if all(x.equals(cols[0]) for x in cols):
            continue  # a label column (or a value every seed shares): kept as it is
        if all(pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x) for x in cols):
            out[c] = pd.concat(cols, axis=1).mean(axis=1, skipna=True).values
        elif not all(x.equals(cols[0]) for x in cols):
            return t0
    return out


def _scale_points(exp, scale: str) -> tuple[str, list]:
    own = exp.published if scale == "published" else scale
    return own, exp.points(own)


def scale_note(exp, scale: str, seeds: int) -> str:
    if scale == "published":
        note = exp.published_note or f"{exp.published} scale"
    elif scale == "reduced":
        note = "reduced scale (the CI run)"
    else:
        note = "paper scale"
    if seeds < 5:
        note += f"; {seeds} seed{'s' if seeds != 1 else ''}, fewer than the 5 published verdicts use"
    return note


def _per_seed(exp, points: list, seeds: int, sweep_args: dict, desc: str):
    """Runs every point for every seed (one Dask sweep), then each seed's
    table and claims."""
    everything = [seeded(p, s) for s in range(seeds) for p in points]
    res = run_points(everything, desc=desc, **sweep_args)
    tables, per_seed, runs, pools = [], [], [], []
    n = len(points)
    for s in range(seeds):
        one = run_points(everything[s * n:(s + 1) * n], cache_dir=sweep_args.get("cache_dir"),
                         serial=True, progress=False)
        t = exp.table(one.runs, one.pools)
        tables.append(t)
        per_seed.append(exp.claims(t))
        # copy() first: the sweep's frames are built column by column.
        runs.append(one.runs.copy().assign(replicate=s))
        pools.append(one.pools.copy().assign(replicate=s))
    return res, tables, per_seed, pd.concat(runs, ignore_index=True), pd.concat(pools, ignore_index=True)


def ablation_keys(ab, records: list) -> list:
    """The claims an ablation names; "*" names every counted numeric or
    shape claim of the entry."""
    if list(ab.claims) == ["*"]:
        return [r["key"] for r in records if r["kind"] in ("numeric", "shape")]
    return list(ab.claims)


def ablation_command(name: str, ab, scale: str, seeds: int) -> str:
    return (f"python3 -m netsched experiment run {name} --ablation {ab.id} --scale {scale} "
            f"--seeds {seeds}")


def run_ablation(exp, ab, scale: str, seeds: int, sweep_args: dict, progress: bool = False):
    """The entry's claims with one modelling choice changed: records over
    the seeds of the ablated run (only the ablation's claims)."""
    if ab.scale is not None:
        pts = exp.points(ab.scale)
    else:
        _, pts = _scale_points(exp, scale)
        changed = []
        for p in pts:
            if ab.where is None or ab.where(p.labels):
                cfg = copy.deepcopy(p.config)
                ab.apply(cfg)
                p = Point(dict(p.labels), cfg, p.kind)
            changed.append(p)
        pts = changed
    # Two seeds by default: an ablation asks where the mean moves, and every
    # one of them reruns the whole entry.
    n = min(seeds, ab.seeds or ABLATION_SEEDS)
    _, _, per_seed, _, _ = _per_seed(exp, pts, n, dict(sweep_args, progress=progress),
                                     f"{exp.name} --ablation {ab.id}")
    recs = aggregate(per_seed, entry=exp.name, paper=exp.paper, figure=exp.figure,
                     scale=ab.scale or scale)
    return [r for r in recs if r["key"] in ablation_keys(ab, recs)], n


def run_experiment(
    name: str,
    scale: str = "reduced",
    out: Optional[str] = None,
    cache_dir: Optional[str] = None,
    scheduler: Optional[str] = None,
    client=None,
    n_workers: Optional[int] = None,
    serial: bool = False,
    progress: bool = True,
    seeds: Optional[int] = None,
    ablations: str = "auto",
) -> "ExperimentResult":
    """Runs one catalog entry and writes its files.

    Every point of the entry's sweep runs once per seed (on Dask, results
    cached); the entry's table and claims are computed per seed and each
    claim is judged on its mean and 95 % Student-t interval over the seeds.

    Args:
        name: a catalog entry (``python3 -m netsched experiment list``),
            e.g. ``"horus-fig11"``; an unknown name raises ``ValueError``
            with the closest names.
        scale: ``"reduced"`` (minutes), ``"paper"`` (the paper's size) or
            ``"published"`` (the scale docs/results uses for this entry).
        out: output directory (default ``results/experiments/<scale>``).
        cache_dir: the run cache (default ``~/.cache/netsched``).
        scheduler: a Dask scheduler address; ``client``: a Dask client;
            ``n_workers``: the LocalCluster's size; ``serial``: no Dask.
        progress: a progress bar on stderr.
        seeds: seeds per point (default 5 at ``published``, else 2).
        ablations: ``"auto"`` reruns the entry's ablations that name a
            claim which does not agree, ``"all"`` every one, ``"none"`` none.

    Returns:
        An `ExperimentResult`: ``table`` (the figure's data, the mean over
        seeds; the columns are the entry's, e.g. ``policy``, ``load``,
        ``p50_us``, ``p99_us``), ``runs`` and ``pools`` (one row per
        simulator run / pool, with a ``replicate`` column: 0 .. seeds-1), ``claims`` (the
        judged claim records of ``<name>.json``), ``wall_s``, ``computed``,
        ``cached`` and ``files`` (the CSV, PNG and page written).

    Example:
        >>> r = run_experiment("horus-fig11", out="results/x")  # doctest: +SKIP
        >>> [c["verdict"] for c in r.claims]                   # doctest: +SKIP
    """
    if scale not in SCALES:
        raise ValueError(f"--scale: expected one of {', '.join(SCALES)}, got `{scale}`")
    if ablations not in ("auto", "all", "none"):
        raise ValueError(f"--ablations: expected auto, all or none, got `{ablations}`")
    exp = catalog.get(name)
    seeds = seeds or DEFAULT_SEEDS[scale]
    if seeds < 1:
        raise ValueError("--seeds: at least 1")
    out_dir = Path(out or Path("results") / "experiments" / scale)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    sweep_args = dict(cache_dir=cache_dir, scheduler=scheduler, client=client, n_workers=n_workers,
                      serial=serial, progress=progress)
    _, points = _scale_points(exp, scale)
    res, tables, per_seed, all_runs, all_pools = _per_seed(exp, points, seeds, sweep_args, name)
    note = scale_note(exp, scale, seeds)
    if ablations == "none" and exp.ablations:
        note += "; ablations not run (--ablations none), so a difference shows as unexplained"
    records = aggregate(per_seed, entry=name, paper=exp.paper, figure=exp.figure, scale=scale,
                        scale_note=note)
    computed, cached_n = res.computed, res.cached
    for ab in exp.ablations:
        keys = ablation_keys(ab, records)
        unknown = set(keys) - {r["key"] for r in records}
        if unknown:
            raise ValueError(f"{name}: ablation {ab.id} names unknown claims {sorted(unknown)}")
        wanted = ablations == "all" or (ablations == "auto" and any(
            r["key"] in keys and r["verdict"] == "differs" for r in records))
        if not wanted:
            continue
        ablated, n = run_ablation(exp, ab, scale, seeds, sweep_args)
        attribute(records, ablated, keys=keys, changed=ab.changed,
                  command=ablation_command(name, ab, scale, n))
    finalize(records)
    table = mean_table(tables)
    wall = time.time() - t0
    csv = out_dir / f"{name}.csv"
    png = out_dir / f"{name}.png"
    md = out_dir / f"{name}.md"
    table.to_csv(csv, index=False)
    pp = exp.paper_points(table) if callable(exp.paper_points) else exp.paper_points
    with paper_points_for(pp):
        exp.plot(table, str(png))
    md.write_text(page(exp, scale, table, records, wall, computed, cached_n, seeds, note))
    version, commit = _native_build_info()
    (out_dir / f"{name}.json").write_text(json.dumps({
        "netsched": {"version": version, "commit": commit},
        "name": name, "paper": exp.paper, "figure": exp.figure, "scale": scale,
        "seeds": seeds, "scale_note": note, "wall_s": wall, "computed": computed,
        "cached": cached_n, "claims": records}, indent=1, allow_nan=False))
    return ExperimentResult(table=table, runs=all_runs, pools=all_pools, claims=records,
                            wall_s=wall, computed=computed, cached=cached_n,
                            files=[str(csv), str(png), str(md)], tables=tables, seeds=seeds)


def ablate(name: str, ablation_id: str, scale: str = "reduced", seeds: Optional[int] = None,
           progress: bool = True, **sweep_args) -> list[dict]:
    """`experiment run NAME --ablation ID`: the ablation's claims, judged
    over seeds with its one change applied."""
    exp = catalog.get(name)
    abs_ = {a.id: a for a in exp.ablations}
    if ablation_id not in abs_:
        raise ValueError(f"{name}: no ablation `{ablation_id}` (has: {', '.join(abs_) or 'none'})")
    seeds = seeds or DEFAULT_SEEDS[scale]
    recs, _ = run_ablation(exp, abs_[ablation_id], scale, seeds, sweep_args, progress=progress)
    return finalize(recs)


def _native_build_info() -> tuple[str, str]:
    from . import _native

    return _native.build_info()


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def column_format(values) -> Callable[[object], str]:
    """One notation per column: integers with thousands separators; other
    numbers with the decimals that give the column's largest value three
    significant digits (598, 1,407, 18,060; or 0.052, 0.140); "—" for
    missing values."""
    nums = [float(v) for v in values if _is_number(v) and math.isfinite(v)]
    if not nums:
        return lambda v: "—" if _is_number(v) and not math.isfinite(v) else str(v)
    if all(v == int(v) for v in nums) and max(abs(v) for v in nums) < 1e15:
        decimals = 0
    else:
        top = max(abs(v) for v in nums) or 1.0
        decimals = min(6, max(0, 2 - math.floor(math.log10(top))))

    def f(v):
        if not _is_number(v):
            return str(v)
        if not math.isfinite(v):
            return "—"
        return f"{v:,.{decimals}f}"
    return f


def _md_table(df, max_rows: int = 60) -> str:
    cols = list(df.columns)
    shown = df.head(max_rows)
    fmts = {c: column_format(list(shown[c])) for c in cols}
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in shown.iterrows():
        rows.append("| " + " | ".join(fmts[c](r[c]) for c in cols) + " |")
    if len(df) > max_rows:
        rows.append(f"\n({len(df) - max_rows} more rows in the CSV)")
    return "\n".join(rows)


def page(exp, scale, table, claims, wall, computed, cached, seeds=1, note="") -> str:
    lines = [
        f"# {exp.name}: {exp.paper} {exp.figure}",
        "",
        f"**{exp.title}.** {exp.setup}",
        "",
        f"Scale: `{scale}` ({note}). Wall time {wall:.1f} s ({computed} runs computed, "
        f"{cached} from the cache). Values are means over {seeds} seed"
        f"{'s' if seeds != 1 else ''} with 95 % Student-t intervals.",
        "",
        f"![{exp.name}]({exp.name}.png)",
        "",
        "## The paper's claims beside ours",
        "",
    ]
    main = [c for c in claims if c.get("section", "main") == "main"]
    sens = [c for c in claims if c.get("section", "main") == "sensitivity"]
    lines += claims_table(main)
    lines += ["", tally_text(tally(claims)) + "."]
    if sens:
        lines += ["", "## Sensitivity (not counted)", "",
                  "Other configurations judged against the same claims:", ""] + claims_table(sens)
    extra = exp.sections(table) if exp.sections else ""
    if extra:
        lines += ["", extra.strip()]
    lines += ["", "## Setup differences", "", exp.differences, "", "## Data", "",
              _md_table(table), ""]
    return "\n".join(lines)
