"""Every claim of every catalog entry in one table (docs/fidelity.md): the
paper's number, ours, the tolerance, the verdict, and the entry's own account
of where and why it differs. Built from the `<name>.json` files that
`experiment run` writes, so the table is always the last run's."""
from __future__ import annotations

import json
from pathlib import Path

from . import catalog

BEGIN = "<!-- claims:begin (python3 -m netsched experiment claims; do not edit by hand) -->"
END = "<!-- claims:end -->"
VERDICT = {True: "agrees", False: "**differs**", None: "qualitative"}


def tally(claims) -> tuple[int, int, int]:
    """(within tolerance, checked, qualitative) over claims or their dicts."""
    oks = [c["ok"] if isinstance(c, dict) else c.ok for c in claims]
    return (sum(o is True for o in oks), sum(o is not None for o in oks),
            sum(o is None for o in oks))


def _cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def gather(results: str) -> str:
    """The markdown for every entry with a `<name>.json` under `results`, in
    catalog order."""
    root = Path(results)
    parts, total = [], [0, 0, 0]
    for exp in catalog.ordered():
        name = exp.name
        f = root / f"{name}.json"
        if not f.exists():
            continue
        run = json.loads(f.read_text())
        claims = run["claims"]
        ok, checked, qual = tally(claims)
        total = [total[0] + ok, total[1] + checked, total[2] + qual]
        parts += [f"### {name}: {exp.paper} {exp.figure}", "",
                  f"{ok} of {checked} checked claims within tolerance"
                  + (f", {qual} qualitative" if qual else "") + f" (scale `{run['scale']}`).", "",
                  "| paper states | paper | ours | tolerance | verdict |", "|---|---|---|---|---|"]
        for c in claims:
            parts.append(f"| {_cell(c['statement'])} | {_cell(c['paper'])} | {_cell(c['ours'])} | "
                         f"{_cell(c['tolerance'] or '—')} | {VERDICT[c['ok']]} |")
        if ok < checked:
            parts += ["", f"Why it differs ({name}'s page): {exp.differences}"]
        parts.append("")
    if not parts:
        raise ValueError(f"{results}: no `<name>.json` from `experiment run`")
    head = [f"**{total[0]} of {total[1]} checked claims within tolerance** across the catalog"
            f" ({total[2]} qualitative).", ""]
    return "\n".join(head + parts)


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
