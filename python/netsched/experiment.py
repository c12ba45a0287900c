"""Running a catalog entry: its sweep (on Dask, cached), then `<name>.csv`,
`<name>.png` and `<name>.md` (our numbers beside the paper's) in the output
directory."""
from __future__ import annotations

import json
import math
import numbers
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pandas as pd

from . import catalog
from .catalog.base import SCALES
from .claims import tally
from .sweep import run_points


@dataclass
class ExperimentResult:
    """One catalog entry's run: the figure's `table` (its CSV), the sweep's
    `runs` and `pools`, the paper's `claims` judged, and the files written
    ([csv, png, md])."""

    table: pd.DataFrame
    runs: pd.DataFrame
    pools: pd.DataFrame
    claims: list
    wall_s: float
    computed: int
    cached: int
    files: list[str]


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
) -> "ExperimentResult":
    """Runs one entry and writes its files."""
    if scale not in SCALES:
        raise ValueError(f"--scale: expected one of {', '.join(SCALES)}, got `{scale}`")
    exp = catalog.get(name)
    out_dir = Path(out or Path("results") / "experiments" / scale)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    res = run_points(exp.points(scale), cache_dir=cache_dir, scheduler=scheduler, client=client,
                     n_workers=n_workers, serial=serial, progress=progress, desc=name)
    table = exp.table(res.runs, res.pools)
    wall = time.time() - t0
    csv = out_dir / f"{name}.csv"
    png = out_dir / f"{name}.png"
    md = out_dir / f"{name}.md"
    table.to_csv(csv, index=False)
    exp.plot(table, str(png))
    claims = exp.claims(table)
    md.write_text(page(exp, scale, table, claims, wall, res.computed, res.cached))
    version, commit = _native_build_info()
    (out_dir / f"{name}.json").write_text(json.dumps({
        "netsched": {"version": version, "commit": commit},
        "name": name, "scale": scale, "wall_s": wall, "computed": res.computed,
        "cached": res.cached, "claims": [c.__dict__ for c in claims]}, indent=1))
    return ExperimentResult(table=table, runs=res.runs, pools=res.pools, claims=claims,
                            wall_s=wall, computed=res.computed, cached=res.cached,
                            files=[str(csv), str(png), str(md)])


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


def page(exp, scale, table, claims, wall, computed, cached) -> str:
    verdict = {True: "agrees", False: "differs", None: "qualitative"}
    lines = [
        f"# {exp.name}: {exp.paper} {exp.figure}",
        "",
        f"**{exp.title}.** {exp.setup}",
        "",
        f"Scale: `{scale}`. Wall time {wall:.1f} s ({computed} runs computed, {cached} from the cache).",
        "",
        f"![{exp.name}]({exp.name}.png)",
        "",
        "## The paper's numbers beside ours",
        "",
        "| paper states | paper | ours | tolerance | verdict |",
        "|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(f"| {c.statement} | {c.paper} | {c.ours} | {c.tolerance or '—'} | "
                     f"{verdict[c.ok]} |")
    ok, checked, qual = tally(claims)
    lines += ["", f"{ok} of {checked} checked claims within tolerance"
              + (f"; {qual} qualitative" if qual else "") + "."]
    extra = exp.sections(table) if exp.sections else ""
    if extra:
        lines += ["", extra.strip()]
    differ = [c for c in claims if c.ok is False]
    lines += ["", "## Where and why we differ", ""]
    if differ:
        lines.append("Differs on: " + "; ".join(c.statement for c in differ) + ". ")
    lines += [exp.differences, "", "## Data", "", _md_table(table), ""]
    return "\n".join(lines)
