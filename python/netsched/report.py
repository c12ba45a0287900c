"""`netsched report`: every experiment page of a results directory in one
HTML file, plots inlined, so it can be mailed or opened anywhere. Entries
come in `experiment list`'s order, anchored by name, after a table of how
many of each entry's claims are within tolerance."""
from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

from .catalog import natural_key
from .claims import summary_counts


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return t


def _table(rows: list[str]) -> str:
    rows = [r for r in rows if not re.fullmatch(r"\|(:?-+:?\|)+", r.replace(" ", ""))]
    out = ['<div class="scroll"><table>']
    for i, r in enumerate(rows):
        tag = "th" if i == 0 else "td"
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", r.strip().strip("|"))]
        out.append("<tr>" + "".join(
            f"<{tag}>{_inline(c.replace(chr(92) + '|', '|'))}</{tag}>" for c in cells) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def md_to_html(md: str, base: Path) -> str:
    """The markdown our pages use: headings, paragraphs, pipe tables, images."""
    out, table = [], []

    def flush():
        if table:
            out.append(_table(table))
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        m = re.match(r"!\[(.*?)\]\((.+?)\)", line)
        if m:
            img = base / m.group(2)
            if img.exists():
                data = base64.b64encode(img.read_bytes()).decode()
                out.append(f'<img alt="{html.escape(m.group(1))}" src="data:image/png;base64,{data}">')
            continue
        h = re.match(r"(#+) (.*)", line)
        if h:
            n = min(len(h.group(1)) + 1, 6)
            out.append(f"<h{n}>{_inline(h.group(2))}</h{n}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


# Wide tables scroll inside their box; the page itself never scrolls sideways.
CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px}
th{background:#f3f3f3}td{font-variant-numeric:tabular-nums}
img{max-width:100%}section{border-top:2px solid #333;margin-top:2em}code{white-space:pre-wrap}"""


def _anchor(rel: Path) -> str:
    """`horus-fig2`, or `paper--horus-fig2` for a page in a subdirectory:
    named after the entry, so links survive pages being added."""
    parts = [p for p in rel.with_suffix("").parts if p != "."]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "--".join(parts))


def build_report(results: str, out: str) -> int:
    """Writes `out` from every `*.md` page under `results`; returns the page count."""
    root = Path(results)
    pages = sorted(root.rglob("*.md"), key=lambda p: (str(p.relative_to(root).parent),
                                                      natural_key(p.stem)))
    if not pages:
        raise ValueError(f"{root}: no experiment pages (run `netsched experiment run` first)")
    toc, body, summary, total = [], [], [], [0, 0, 0]
    for p in pages:
        md = p.read_text()
        title = md.splitlines()[0].lstrip("# ") if md else p.stem
        rel = p.relative_to(root)
        anchor = _anchor(rel)
        where = "" if str(rel.parent) == "." else f" <small>({html.escape(str(rel.parent))})</small>"
        toc.append(f'<li><a href="#{anchor}">{html.escape(title)}</a>{where}</li>')
        body.append(f'<section id="{anchor}">{md_to_html(md, p.parent)}</section>')
        run = p.with_suffix(".json")
        if run.exists():
            ok, checked, qual = summary_counts(json.loads(run.read_text()).get("claims", []))
            total = [total[0] + ok, total[1] + checked, total[2] + qual]
            summary.append(f'<tr><td><a href="#{anchor}">{html.escape(p.stem)}</a>{where}</td>'
                           f"<td>{ok}</td><td>{checked}</td><td>{qual}</td></tr>")
    head = ""
    if summary:
        head = ('<h2>Claims within tolerance</h2><div class="scroll"><table><tr><th>entry</th>'
                "<th>within tolerance</th><th>checked</th><th>not counted</th></tr>"
                + "".join(summary)
                + f"<tr><th>all</th><th>{total[0]}</th><th>{total[1]}</th><th>{total[2]}</th></tr>"
                "</table></div>")
    doc = (f"<!doctype html><html><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width'><title>netsched experiments</title>"
           f"<style>{CSS}</style></head><body><h1>netsched experiment report</h1>{head}"
           f"<h2>Entries</h2><ul>{''.join(toc)}</ul>" + "".join(body) + "</body></html>")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(doc)
    return len(pages)
