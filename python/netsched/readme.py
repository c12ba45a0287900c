"""The README's numbers, generated from the published claims
(docs/claims.json, a list of claim objects) so the README cannot go stale:
the catalog's verdicts by tier and the claims about Horus against RS-H.
`python3 -m netsched readme-counts --into README.md` rewrites the block
between the markers; a test checks the README's block is what this writes."""
from __future__ import annotations

import json
from pathlib import Path

from .claims import VERDICTS, ours_text, tally
from .report import counted, kind_of, paper_text, verdict_of

BEGIN = "<!-- readme-counts:begin (python3 -m netsched readme-counts --into README.md) -->"
END = "<!-- readme-counts:end -->"
REPORT = "docs/report/index.html"
# At most this many Horus-against-RS-H rows: the README stays short; the
# report has every row.
HEADLINE_ROWS = 8


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _tier_line(name: str, counts: dict) -> str:
    total = sum(counts.values())
    parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS if counts.get(v, 0)]
    return f"- **{name}** ({_plural(total, 'claim', 'claims')}): " + (", ".join(parts) or "none")


def counts_text(claims_path: str = "docs/claims.json") -> str:
    """The README's block (Markdown) from `claims_path`; a note saying the
    published run is not committed when the file does not exist."""
    p = Path(claims_path)
    if not p.exists():
        return ("The published run's claims (docs/claims.json) are not committed yet: "
                "`python3 -m netsched experiment run all --scale published --seeds 5 --out "
                "docs/results` writes them.")
    claims = json.loads(p.read_text())
    if isinstance(claims, dict):  # {"claims": [...]} as a run's JSON holds them
        claims = claims.get("claims", [])
    t = tally(claims)
    entries = len({c.get("entry") for c in claims if c.get("entry")})
    lines = [f"Horus against RS-H (the published run; [every claim in the report]({REPORT})):", ""]
    head = [c for c in claims if counted(c) and kind_of(c) in ("numeric", "shape")
            and str(c.get("paper", "")).startswith("Horus") and "RS-H" in str(c.get("statement"))]
    for c in head[:HEADLINE_ROWS]:
        fig = f"{c['figure']}: " if c.get("figure") else ""
        lines.append(f"- {fig}{c['statement']}: paper {paper_text(c)}, ours {ours_text(c)}: "
                     f"**{verdict_of(c)}**")
    if len(head) > HEADLINE_ROWS:
        lines.append(f"- and {len(head) - HEADLINE_ROWS} more in the report")
    if not head:
        lines.append("- no claim about Horus against RS-H in this run")
    lines += ["", f"The catalog's verdicts by tier ({entries} entries, {len(claims)} claims):", ""]
    for name in ("numeric", "shape"):
        lines.append(_tier_line(name, t[name]))
    if "legacy" in t:
        lines.append(_tier_line("not yet tiered", t["legacy"]))
    lines.append(f"- **calibration** (fitted values, shown, never counted): {t['calibration']}")
    lines.append(f"- **not reproducible here** (the missing thing named): {t['not-reproducible']}")
    return "\n".join(lines)


def replace_block(text: str, body: str) -> str:
    """`text` with the block between the markers replaced by `body`."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"no `{BEGIN}` ... `{END}` block to rewrite")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{BEGIN}\n{body.rstrip()}\n{END}{after}"


def block_of(text: str) -> str:
    """The body between the markers."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def write_counts(readme: str, claims_path: str = "docs/claims.json") -> None:
    p = Path(readme)
    p.write_text(replace_block(p.read_text(), counts_text(claims_path)))
