"""`netsched report`: every experiment page of a results directory in one
HTML file, plots inlined, so it can be mailed or opened anywhere."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return t


def md_to_html(md: str, base: Path) -> str:
    """The markdown our pages use: headings, paragraphs, pipe tables, images."""
    out, table = [], []

    def flush():
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|(-+\|)+", r.replace(" ", ""))]
            out.append("<table>")
            for i, r in enumerate(rows):
                tag = "th" if i == 0 else "td"
                cells = [c.strip() for c in r.strip().strip("|").split("|")]
                out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
            out.append("</table>")
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


CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px}
img{max-width:100%}section{border-top:2px solid #333;margin-top:2em}"""


def build_report(results: str, out: str) -> int:
    """Writes `out` from every `*.md` page under `results`; returns the page count."""
    root = Path(results)
    pages = sorted(root.rglob("*.md"))
    if not pages:
        raise ValueError(f"{root}: no experiment pages (run `netsched experiment run` first)")
    toc, body = [], []
    for i, p in enumerate(pages):
        md = p.read_text()
        title = md.splitlines()[0].lstrip("# ") if md else p.stem
        rel = p.relative_to(root)
        toc.append(f'<li><a href="#e{i}">{html.escape(title)}</a> <small>({html.escape(str(rel.parent))})</small></li>')
        body.append(f'<section id="e{i}">{md_to_html(md, p.parent)}</section>')
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>netsched experiments</title>"
           f"<style>{CSS}</style></head><body><h1>netsched experiment report</h1><ul>{''.join(toc)}</ul>"
           + "".join(body) + "</body></html>")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(doc)
    return len(pages)
