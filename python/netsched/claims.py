"""Claims judged over seeds, and every claim of the catalog in one table.

A catalog entry's `claims(table)` runs once per seed (netsched.experiment);
`aggregate` turns the per-seed claims into one record per claim (mean, 95 %
interval over seeds, verdict), `attribute` adds what each ablation run did
to the claims that differ, and `tally` counts the verdicts by tier. The
`<name>.json` files `experiment run` writes hold these records;
`gather` turns a results directory into docs/fidelity.md's section and
`collect` into docs/claims.json.

Verdict rules (docs/fidelity.md states them for readers):
- numeric: agrees if the mean is inside the tolerance band and the interval's
  half-width is not wider than the band's; differs if the mean is outside and
  the whole interval misses the band; unresolved otherwise (more seeds or
  scale needed). A value that could not be measured (NaN: e.g. no knee in
  the measured range) differs.
- shape: agrees iff n >= 2 and the interval of the difference lies above
  zero; differs iff it lies below; unresolved otherwise.
- calibration: shown, never counted; not-reproducible names what is missing.
- a differs row that no ablation run moves (closer or into agreement) is
  `unexplained`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

BEGIN = "<!-- claims:begin (python3 -m netsched experiment claims; do not edit by hand) -->"
END = "<!-- claims:end -->"
COUNTED = ("numeric", "shape")
VERDICTS = ("agrees", "differs", "unresolved", "unexplained")

# Two-sided 95 % Student t quantiles by degrees of freedom (n - 1).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
         16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042,
         40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with `df` degrees of freedom (the
    next tabulated smaller df, so never narrower than the exact value)."""
    if df < 1:
        raise ValueError("a confidence interval needs two or more seeds")
    return _T975[max(k for k in _T975 if k <= df)] if df <= 120 else 1.960


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def stats(values: list) -> tuple[float, Optional[float], int]:
    """(mean, 95 % half-width, n) over seeds; the half-width is None for one
    seed, and the mean is NaN when any seed could not be measured."""
    n = len(values)
    if n == 0 or not all(_finite(v) for v in values):
        return math.nan, None, n
    mean = sum(values) / n
    if n < 2:
        return mean, None, n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, t975(n - 1) * math.sqrt(var / n), n


def band(c: dict) -> tuple[float, float]:
    """A numeric claim's tolerance band around the paper's value."""
    p = float(c["paper_value"])
    if c.get("factor"):
        return p / c["factor"], p * c["factor"]
    if c.get("pp") is not None:
        return p - c["pp"], p + c["pp"]
    return p - abs(p) * c["rel"], p + abs(p) * c["rel"]


def tolerance_text(c: dict) -> str:
    if c["kind"] == "numeric":
        if c.get("factor"):
            t = f"within {c['factor']:g}× either way"
        elif c.get("pp") is not None:
            t = f"within {c['pp']:g} points"
        else:
            t = f"within {100 * c['rel']:g} %"
        return t + (f" ({c['reason']})" if c.get("reason") else "")
    if c["kind"] == "shape":
        return "95 % interval of the difference above zero"
    if c["kind"] == "calibration":
        return "fitted, not counted"
    return "—"


def judge(c: dict) -> str:
    """The verdict of an aggregated claim record (before attribution)."""
    kind, o = c["kind"], c["ours"]
    if kind == "calibration":
        return "calibration"
    if kind == "not-reproducible":
        return "not-reproducible"
    mean, ci, n = o["mean"], o["ci95"], o["n"]
    if not _finite(mean):
        return "differs"
    if kind == "shape":
        if ci is None:
            return "unresolved"
        if mean - ci > 0:
            return "agrees"
        if mean + ci < 0:
            return "differs"
        return "unresolved"
    lo, hi = band(c)
    half = (hi - lo) / 2
    w = 0.0 if ci is None else ci
    inside = lo <= mean <= hi
    if inside and w <= half:
        return "agrees"
    if not inside and (mean + w < lo or mean - w > hi):
        return "differs"
    return "unresolved"


def distance(c: dict) -> float:
    """How far an aggregated claim is from agreeing (0 inside): for moves_to."""
    mean = c["ours"]["mean"]
    if not _finite(mean):
        return math.inf
    if c["kind"] == "shape":
        return max(0.0, -mean)
    lo, hi = band(c)
    if lo <= mean <= hi:
        return 0.0
    if c.get("factor"):
        if mean <= 0:
            return math.inf
        return abs(math.log(mean / (lo if mean < lo else hi)))
    return lo - mean if mean < lo else mean - hi


def _fmt(v, unit: str = "") -> str:
    if not _finite(v):
        return "—"
    a = abs(v)
    s = f"{v:,.0f}" if a >= 1000 else f"{v:.3g}"
    return s + unit


def ours_text(c: dict) -> str:
    o, unit = c["ours"], c.get("unit", "")
    if c["kind"] == "not-reproducible":
        return "—"
    if not _finite(o["mean"]):
        return "not measured" + (f" ({c['describe']})" if c.get("describe") else "")
    base = _fmt(o["mean"], unit)
    if o["ci95"] is not None:
        base += f" ± {_fmt(o['ci95'])}"
    return base + f" (n={o['n']})"


def _clean(v):
    return v if not isinstance(v, float) or math.isfinite(v) else None


def aggregate(per_seed: list, *, entry: str, paper: str, figure: str, scale: str,
              scale_note: str = "") -> list[dict]:
    """One record per claim from `per_seed` (a list, one per seed, of the
    claims `claims(table)` returned): checks that every seed returned the
    same keys in the same order, no key twice."""
    if not per_seed:
        return []
    keys = [c.key for c in per_seed[0]]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"{entry}: claim keys used twice: {', '.join(dup)}")
    for i, cs in enumerate(per_seed[1:], 1):
        if [c.key for c in cs] != keys:
            raise ValueError(f"{entry}: seed {i} returned other claims than seed 0")
    n = len(per_seed)
    out = []
    for j, c0 in enumerate(per_seed[0]):
        seeds = [cs[j] for cs in per_seed]
        rec = {
            "entry": entry, "paper": paper, "figure": c0.figure or figure, "key": c0.key,
            "statement": c0.statement, "kind": c0.kind, "section": c0.section,
            "paper_value": _clean(c0.paper_value), "paper_text": c0.paper_text,
            "unit": c0.unit, "scale": scale, "seeds": n, "scale_note": scale_note,
        }
        vals = [c.value for c in seeds]
        mean, ci, _ = stats([math.nan if v is None else v for v in vals])
        # NaN mean kept for judging; `finalize` cleans it for JSON.
        rec["ours"] = {"mean": mean, "ci95": ci, "n": n, "per_seed": [_clean(v) for v in vals]}
        for f in ("rel", "pp", "factor", "reason", "describe", "note", "missing"):
            v = getattr(c0, f)
            if v not in (None, ""):
                rec[f] = v
        rec["tolerance"] = tolerance_text(rec)
        rec["ours"]["text"] = ours_text(rec)
        rec["verdict"] = judge(rec)
        rec["attribution"] = []
        out.append(rec)
    return out


def margin(c: dict) -> float:
    """How far an ablation must move a claim toward the paper to count as
    "closer": more than the main run's 95 % half-width (in `distance`'s
    units), so a move inside the noise is "no"."""
    ci, mean = c["ours"].get("ci95") or 0.0, c["ours"]["mean"]
    if c.get("factor") and _finite(mean) and mean > 0:
        return ci / mean
    return ci + 1e-12


def record(main: dict, ablated: dict, *, changed: str, command: str) -> dict:
    """What an ablation did to one claim: ours before and after, and whether
    it moved to agreement, closer to it, or not."""
    before, after = ours_text(main), ours_text(ablated)
    d0, d1 = distance(main), distance(ablated)
    if ablated["verdict"] == "agrees":
        moves = "agrees"
    elif d1 < d0 - margin(main):
        moves = "closer"
    else:
        moves = "no"
    return {"changed": changed, "command": command,
            "result": f"ours {before} -> {after} (paper {main['paper_text']})",
            "verdict": ablated["verdict"], "moves_to": moves}


def attribute(records: list[dict], ablated: list[dict], *, keys: list, changed: str,
              command: str) -> None:
    """Adds an ablation's record to each claim of `keys` in `records`."""
    by_key = {r["key"]: r for r in ablated}
    for r in records:
        if r["verdict"] == "agrees":
            continue  # nothing to attribute
        if r["key"] in keys and r["key"] in by_key:
            r["attribution"].append(record(r, by_key[r["key"]], changed=changed, command=command))


def finalize(records: list[dict]) -> list[dict]:
    """A differs row that no ablation moves is `unexplained`; NaN means
    become null for JSON."""
    for r in records:
        if r["verdict"] == "differs" and r["kind"] in COUNTED and not any(
                a["moves_to"] in ("agrees", "closer") for a in r["attribution"]):
            r["verdict"] = "unexplained"
        if r.get("ours") and "mean" in r["ours"]:
            r["ours"]["mean"] = _clean(r["ours"]["mean"])
    return records


def tally(claims) -> dict:
    """Counts by tier over claim records: numeric and shape verdicts of the
    counted (main-section) claims, calibrations, not-reproducible claims and
    sensitivity rows (not counted). A record of another kind (a results
    directory from before the tiers) is an error: rerun `experiment run`."""
    t = {"numeric": dict.fromkeys(VERDICTS, 0), "shape": dict.fromkeys(VERDICTS, 0),
         "calibration": 0, "not-reproducible": 0, "sensitivity": 0}
    for c in claims:
        kind = c.get("kind")
        if kind not in COUNTED + ("calibration", "not-reproducible"):
            raise ValueError(f"claim {c.get('key') or c.get('statement')!r}: kind {kind!r} is not a "
                             "tier (results from before the tiers: rerun `experiment run`)")
        if c.get("section", "main") == "sensitivity":
            t["sensitivity"] += 1
        elif kind in COUNTED:
            t[kind][c["verdict"]] += 1
        else:
            t[kind] += 1
    return t


def summary_counts(claims) -> tuple[int, int, int]:
    """(agrees, judged, not judged) over counted claims: for one-line
    summaries (the report's index)."""
    t = tally(claims)
    agrees = t["numeric"]["agrees"] + t["shape"]["agrees"]
    judged = sum(t["numeric"].values()) + sum(t["shape"].values())
    other = t["calibration"] + t["not-reproducible"]
    return agrees, judged, other


def tally_text(t: dict) -> str:
    n, s = t["numeric"], t["shape"]
    parts = [f"numeric: {n['agrees']} agree, {n['differs']} differ (attributed), "
             f"{n['unexplained']} unexplained, {n['unresolved']} unresolved",
             f"shape: {s['agrees']} agree, {s['differs']} differ (attributed), "
             f"{s['unexplained']} unexplained, {s['unresolved']} unresolved",
             f"{t['calibration']} calibrations (not counted)",
             f"{t['not-reproducible']} not reproducible here"]
    if t["sensitivity"]:
        parts.append(f"{t['sensitivity']} sensitivity rows (not counted)")
    return "; ".join(parts)


def _cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def attribution_text(c: dict) -> str:
    if c["kind"] == "not-reproducible":
        return "missing: " + c.get("missing", "")
    if c["kind"] == "calibration":
        return c.get("note", "")
    return "; ".join(f"{a['changed']}: {a['result']}, moves {a['moves_to']} (`{a['command']}`)"
                     for a in c["attribution"])


def claims_table(claims: list[dict]) -> list[str]:
    rows = ["| figure | claim | kind | paper | ours (mean ± 95 % CI) | tolerance | verdict | "
            "attribution |", "|---|---|---|---|---|---|---|---|"]
    for c in claims:
        v = c["verdict"]
        shown = f"**{v}**" if v in ("differs", "unexplained") else v
        rows.append(f"| {_cell(c['figure'])} | {_cell(c['statement'])} | {c['kind']} | "
                    f"{_cell(c['paper_text'])} | {_cell(c['ours']['text'] if c.get('ours') else '—')}"
                    f" | {_cell(c.get('tolerance') or '—')} | {shown} | "
                    f"{_cell(attribution_text(c) or '—')} |")
    return rows


def runs(results: str) -> list[dict]:
    """Every `<name>.json` of a results directory, in catalog order."""
    from . import catalog

    root = Path(results)
    out = []
    for exp in catalog.ordered():
        f = root / f"{exp.name}.json"
        if f.exists():
            out.append(json.loads(f.read_text()))
    if not out:
        raise ValueError(f"{results}: no `<name>.json` from `experiment run`")
    return out


def collect(results: str) -> list[dict]:
    """docs/claims.json: every claim record of a results directory."""
    return [c for run in runs(results) for c in run["claims"]]


def gather(results: str) -> str:
    """The markdown for every entry with a `<name>.json` under `results`, in
    catalog order: counts by tier, then each entry's claims."""
    parts, everything = [], []
    for run in runs(results):
        claims = run["claims"]
        everything += claims
        main = [c for c in claims if c.get("section", "main") == "main"]
        sens = [c for c in claims if c.get("section", "main") == "sensitivity"]
        n = run.get("seeds", 1)
        parts += [f"### {run['name']}: {run.get('paper', '')} {run.get('figure', '')}".rstrip(), "",
                  f"Scale `{run['scale']}`, {n} seed{'s' if n != 1 else ''}"
                  + (f": {run['scale_note']}" if run.get("scale_note") else "") + ". "
                  + tally_text(tally(claims)) + ".", ""]
        parts += claims_table(main)
        if sens:
            parts += ["", "Sensitivity (other configurations re-judging the claims above; not "
                          "counted):", ""] + claims_table(sens)
        parts.append("")
    t = tally(everything)
    head = ["| tier | agrees | differs (attributed) | unexplained | unresolved |",
            "|---|---|---|---|---|"]
    for k in COUNTED:
        head.append(f"| {k} | {t[k]['agrees']} | {t[k]['differs']} | {t[k]['unexplained']} | "
                    f"{t[k]['unresolved']} |")
    head += ["", f"Calibrations (shown, not counted): {t['calibration']}. Not reproducible here: "
                 f"{t['not-reproducible']}. Sensitivity rows (not counted): {t['sensitivity']}."]
    return "\n".join(["**Claims by tier** across the catalog:", ""] + head + [""] + parts)


def write_into(doc: str, body: str) -> None:
    """Replaces the text between the markers in `doc` (appends a section the
    first time)."""
    p = Path(doc)
    text = p.read_text() if p.exists() else ""
    block = f"{BEGIN}\n{body.rstrip()}\n{END}"
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n## Every claim of the catalog\n\n" + block + "\n"
    p.write_text(text)
