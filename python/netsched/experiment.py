"""Running a catalog entry: its sweep (on Dask, cached), then `<name>.csv`,
`<name>.png` and `<name>.md` (our numbers beside the paper's) in the output
directory."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

from . import catalog
from .catalog.base import SCALES
from .claims import tally
from .sweep import run_points


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
) -> dict:
    """Runs one entry; returns {"table", "claims", "wall_s", "computed", "files"}."""
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
    (out_dir / f"{name}.json").write_text(json.dumps({
        "name": name, "scale": scale, "wall_s": wall, "computed": res.computed,
        "cached": res.cached, "claims": [c.__dict__ for c in claims]}, indent=1))
    return {"table": table, "claims": claims, "wall_s": wall, "computed": res.computed,
            "files": [str(csv), str(png), str(md)]}


def _md_table(df, max_rows: int = 60) -> str:
    cols = list(df.columns)
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.head(max_rows).iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        rows.append("| " + " | ".join(cells) + " |")
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
        "| paper states | paper | ours | tolerance | |",
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
