"""`netsched report`: the experiment results as a static website, an index
and one page per catalog entry, written from a directory `experiment run`
filled (`<name>.json` claims, `<name>.png` plot, `<name>.md` page).

Pages are Jinja2 templates (python/netsched/templates); the entry's own
Markdown (setup, sections, data) goes through markdown-it-py. The claims
table is drawn from the JSON, not the Markdown: every verdict coloured, the
paper's value beside our mean and 95 % interval, and the run that attributes
each difference. Plots are linked, not copied: the site refers to the PNGs
beside it in the results directory (`../horus-fig11.png`), so it stays small
and is only valid next to that directory."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .claims import VERDICTS, ours_text, tally

# Kinds shown but never counted as agreeing or differing.
UNCOUNTED = ("calibration", "not-reproducible")

# Column-name suffixes the catalog's tables use, and the unit each means.
UNITS = {"us": "µs", "ns": "ns", "ms": "ms", "s": "s", "pct": "%", "krps": "KRPS",
         "mrps": "MRPS", "gbps": "Gbps"}


def unit_of(column: str) -> str:
    """The unit a column name's suffix means (`p99_us` -> `µs`), or ""."""
    stem, _, suffix = column.strip().rpartition("_")
    return UNITS.get(suffix, "") if stem else ""


def header_label(name: str) -> str:
    """`p99_us` -> `p99 (µs)`: a header naming its unit in words a reader
    knows; names without a unit suffix are returned as they are."""
    unit = unit_of(name)
    return f"{name.strip().rpartition('_')[0]} ({unit})" if unit else name


def verdict_of(c: dict) -> str:
    return str(c.get("verdict") or "qualitative")


def kind_of(c: dict) -> str:
    return str(c.get("kind") or "legacy")


def counted(c: dict) -> bool:
    """Sensitivity rows (another configuration re-judging a claim a main row
    judges) are shown, not counted."""
    return c.get("section", "main") == "main"


@dataclass
class Bar:
    """One tier's verdicts as segments of a horizontal bar."""

    tier: str
    counts: dict
    total: int = field(init=False)

    def __post_init__(self):
        self.total = sum(self.counts.values())

    @property
    def segments(self):
        return [(v, n, 100.0 * n / self.total) for v, n in self.counts.items() if n]

    @property
    def label(self) -> str:
        # The catalog's earlier one-seed verdicts, until every entry is tiered.
        return "one seed" if self.tier == "legacy" else self.tier

    @property
    def words(self) -> str:
        return ", ".join(f"{n} {v}" for v, n, _ in self.segments) or "none"


def bars(tiers: dict) -> list[Bar]:
    return [Bar(t, c) for t, c in tiers.items() if isinstance(c, dict) and sum(c.values())]


def paper_text(c: dict) -> str:
    """The paper's value: its text, else the number (the earlier rows' `paper`
    field held the text; in the tiered schema `paper` names the paper)."""
    t = c.get("paper_text") or (c.get("paper") if "kind" not in c else None)
    if t:
        return str(t)
    v = c.get("paper_value")
    return "—" if v is None else f"{v:,.3g}" if isinstance(v, float) else str(v)


@dataclass
class Entry:
    """What one entry's page and its index row need."""

    name: str
    heading: str
    title: str
    paper: str
    scale: str
    claims: list
    images: list
    intro_html: str
    body_html: str
    tiers: dict

    @property
    def href(self) -> str:
        return f"{self.name}.html"

    @property
    def main_claims(self):
        return [c for c in self.claims if counted(c)]

    @property
    def sensitivity_claims(self):
        return [c for c in self.claims if not counted(c)]


# --- Markdown ------------------------------------------------------------------

def _markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    return md


def split_page(md_text: str) -> tuple[str, str]:
    """An entry's Markdown as (introduction, sections), without what the
    page draws itself: its title (the first heading), its images, and every
    `##` section holding a table with a verdict column (the claims, drawn
    from the JSON instead)."""
    lines = md_text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    sections, cur = [], []
    for line in lines:
        if line.startswith("## "):
            sections.append(cur)
            cur = []
        cur.append(line)
    sections.append(cur)
    keep = []
    for sec in sections:
        heads = [ln for ln in sec if ln.startswith("|")][:1]
        if heads and re.search(r"\|\s*verdict\s*\|", heads[0], re.I):
            sec = []
        keep.append("\n".join(ln for ln in sec
                              if not re.match(r"\s*!\[[^\]]*\]\([^)]*\)\s*$", ln)))
    return keep[0], "\n".join(keep[1:])


def data_units(csv_path: Path) -> dict:
    """{metric: unit} from the unit-suffixed columns of an entry's CSV
    (`p99_us` -> {"p99": "µs"}): what a table header naming the metric
    without its unit ("horus p99") measures in."""
    if not csv_path.exists():
        return {}
    with csv_path.open() as f:
        cols = f.readline().strip().split(",")
    units, last = {}, {}
    for c in cols:
        if unit_of(c):
            stem = c.rpartition("_")[0]
            units[stem] = unit_of(c)
            # `median_p50_us` also names "p50" ("horus median pool p50"),
            # unless another column gives "p50" another unit.
            for part in stem.split("_"):
                last.setdefault(part, set()).add(unit_of(c))
    return {**{k: v.pop() for k, v in last.items() if len(v) == 1}, **units}


def _with_unit(head: str, units: dict) -> str:
    if unit_of(head):
        return header_label(head)
    last = head.split()[-1] if head.split() else ""
    # Ratios ("horus / horus-sim p50") have none; a header ending in its
    # unit ("p99 (µs)") ends in "(µs)", not in a metric.
    if last in units and "/" not in head:
        return f"{head} ({units[last]})"
    return head


def render_markdown(md_text: str, units: Optional[dict] = None) -> str:
    """HTML for an entry's Markdown: tables in a box that scrolls sideways
    by itself, every header with its unit (a column name's suffix spelled
    out, or the unit of the data column a header names, from `units`),
    verdict words coloured."""
    units = units or {}
    md = _markdown()
    tokens = md.parse(md_text)
    in_head = False
    for i, t in enumerate(tokens):
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "inline" and in_head and t.children:
            if len(t.children) == 1 and t.children[0].type == "text":
                t.children[0].content = _with_unit(t.children[0].content, units)
        elif t.type == "td_open":
            cell = tokens[i + 1]
            word = re.sub(r"[*_]", "", cell.content).strip().lower()
            if word in VERDICTS or word in UNCOUNTED or word == "qualitative":
                t.attrJoin("class", f"verdict v-{word}")
            elif cell.content and not re.search(r"\s", cell.content.strip()):
                # One token ("draconis-socket-server", "1,234"): kept on one
                # line, not split at its hyphens; the table scrolls instead.
                t.attrJoin("class", "token")
    html = md.renderer.render(tokens, md.options, {})
    html = html.replace("<table>", '<div class="scroll"><table>').replace(
        "</table>", "</table></div>")
    return html


# --- the site ------------------------------------------------------------------

# A page's markup between tags on one line: a page is build output, and its
# template's one-element-per-line layout made every page repeat the next
# one's shape line for line (`duplicates` listed hundreds of such pairs
# among the committed pages). White space holding a newline between two
# tags renders as one space, so the page looks the same. Text keeps its
# line breaks; `<script>` and `<pre>` (and `code.cmd`, white-space: pre,
# which holds no tags) are left as they are.
_VERBATIM = re.compile(r"(<(script|pre|style|textarea)\b.*?</\2>)", re.S)
_BREAK_BETWEEN_TAGS = re.compile(r">\s*\n\s*<")


def compact_markup(html: str) -> str:
    """`html` with the line breaks between tags folded to spaces, outside
    `<script>`, `<pre>`, `<style>` and `<textarea>`."""
    parts = _VERBATIM.split(html)
    # split() with two groups yields [text, whole, tagname, text, ...].
    out = []
    for i, part in enumerate(parts):
        kind = i % 3
        if kind == 0:
            out.append(_BREAK_BETWEEN_TAGS.sub("> <", part))
        elif kind == 1:
            out.append(part)
    return "".join(out)


# The stylesheet a report ships is build output too: its copy of the
# template, comments and line breaks included, was a 90-line repeat of
# templates/report.css in every committed report.
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def compact_stylesheet(css: str) -> str:
    """`css` without comments, its white space folded to single spaces."""
    return " ".join(_CSS_COMMENT.sub(" ", css).split()) + "\n"


def _env():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("netsched", "templates"),
                      autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(verdict_of=verdict_of, kind_of=kind_of, ours_text=ours_text,
                       paper_text=paper_text)
    return env


def _order(names: list) -> list:
    from .catalog import REGISTRY, natural_key

    known = [n for n in REGISTRY if n in names]
    cat = sorted(known, key=natural_key)
    rest = sorted((n for n in names if n not in REGISTRY), key=natural_key)
    return cat + rest


def _entry(root: Path, name: str, out: Path) -> Entry:
    from .catalog import REGISTRY

    run = json.loads((root / f"{name}.json").read_text())
    md_path = root / f"{name}.md"
    md_text = md_path.read_text() if md_path.exists() else ""
    exp = REGISTRY.get(name)
    first = md_text.splitlines()[0].lstrip("# ").strip() if md_text else name
    claims = run.get("claims", [])
    if exp is not None:
        heading, title, paper = f"{name}: {exp.paper} {exp.figure}", exp.title, exp.paper
    else:
        c0 = claims[0] if claims else {}
        paper = str(c0.get("paper", "")) if "kind" in c0 else ""
        heading, title = first, ""
    pngs = sorted(root.glob(f"{name}.png")) + sorted(root.glob(f"{name}-*.png"))
    images = [os.path.relpath(p, out).replace(os.sep, "/") for p in pngs]
    intro, body = split_page(md_text)
    units = data_units(root / f"{name}.csv")
    return Entry(name=name, heading=heading, title=title, paper=paper,
                 scale=str(run.get("scale", "")), claims=claims, images=images,
                 intro_html=render_markdown(intro, units), body_html=render_markdown(body, units),
                 tiers=tally(claims))


def build_site(results: str, out: Optional[str] = None) -> int:
    """Writes `out` (default `<results>/report`): `index.html`, one
    `<name>.html` per entry with a `<name>.json` in `results`, and
    `report.css`. Returns the number of entry pages."""
    root = Path(results)
    names = [p.stem for p in root.glob("*.json")]
    if not names:
        raise ValueError(f"{root}: no `<name>.json` from `experiment run` "
                         "(run `python3 -m netsched experiment run` first)")
    dest = Path(out) if out else root / "report"
    dest.mkdir(parents=True, exist_ok=True)
    entries = [_entry(root, n, dest) for n in _order(names)]
    total = tally([c for e in entries for c in e.claims])
    groups: dict = {}
    for e in entries:
        groups.setdefault(e.paper or "other", []).append(e)
    env = _env()
    css = (Path(__file__).parent / "templates" / "report.css").read_text()
    (dest / "report.css").write_text(compact_stylesheet(css))
    scales = sorted({e.scale for e in entries if e.scale})
    (dest / "index.html").write_text(compact_markup(env.get_template("index.html.j2").render(
        groups=groups, total=total, bars=bars, scales=scales, entries=entries)))
    for i, e in enumerate(entries):
        prev = entries[i - 1] if i > 0 else None
        nxt = entries[i + 1] if i + 1 < len(entries) else None
        (dest / e.href).write_text(compact_markup(env.get_template("entry.html.j2").render(
            e=e, prev=prev, next=nxt, bars=bars)))
    return len(entries)
