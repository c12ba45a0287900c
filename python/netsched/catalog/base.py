"""The experiment catalog's building blocks: an `Experiment` per reproduced
figure or table, a `Claim` per number the paper states, and plot helpers in
the papers' style (p99 against load on a log axis, one panel per workload)."""
from __future__ import annotations

import contextlib
import contextvars
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import pandas as pd

from ..sweep import Point

# "published": the scale of the committed results (docs/results): the
# paper's where it fits this machine, else the largest that does, stated per
# entry in `Experiment.published_note`.
SCALES = ("reduced", "paper", "published")
KINDS = ("numeric", "shape", "calibration", "not-reproducible")

# The widest tolerances a numeric claim may take without a stated reason
# from the paper's own precision.
MAX_REL, MAX_PP, MAX_FACTOR = 0.15, 15.0, 1.5


@dataclass
class Claim:
    """One thing a paper states, and this seed's value of ours.

    Built by `numeric`, `shape`, `calibration` or `not_reproducible`; an
    entry's `claims(table)` runs once per seed and returns the same claims in
    the same order (same `key`s), and the framework (netsched.claims)
    aggregates each over seeds into a mean, a 95 % interval and a verdict.
    `kind` is one of KINDS and `key` a lowercase slug, stable across seeds."""

    statement: str
    key: str
    kind: str
    paper_value: object = None
    paper_text: str = ""
    value: Optional[float] = None  # this seed's value (numeric/calibration), or diff (shape)
    rel: Optional[float] = None
    pp: Optional[float] = None
    factor: Optional[float] = None
    unit: str = ""
    reason: str = ""
    figure: str = ""
    describe: str = ""  # shape: what `value` is, in words ("RS-H p99 - Horus p99, µs")
    note: str = ""  # calibration: what was fitted to what
    missing: str = ""  # not_reproducible: the one missing thing
    # "main" claims are counted; "sensitivity" rows (another configuration
    # re-judging a claim the main row already judges) are shown apart.
    section: str = "main"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key!r}: unknown kind {self.kind!r}")
        if not self.key or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", self.key):
            raise ValueError(f"claim {self.statement!r}: key {self.key!r} must be a lowercase slug")
        if self.section not in ("main", "sensitivity"):
            raise ValueError(f"claim {self.key!r}: section must be main or sensitivity")
        if self.value is not None:
            self.value = float(self.value)


def _num(v) -> Optional[float]:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def numeric(key: str, statement: str, paper_value: float, ours, *, rel: Optional[float] = None,
            pp: Optional[float] = None, factor: Optional[float] = None, unit: str = "",
            reason: str = "", figure: str = "", paper_text: str = "",
            section: str = "main") -> Claim:
    """The paper states a number. Tolerance: relative `rel` (default 15 %),
    percentage points `pp`, or a ratio within `factor` either way; wider
    than 15 % / 15 points / 1.5x only with a `reason` from the paper's own
    precision. `ours` is this seed's value (None or NaN: not measured, e.g.
    no knee in the measured range, and the claim fails)."""
    given = [t for t in (rel, pp, factor) if t is not None]
    if len(given) > 1:
        raise ValueError(f"claim {key!r}: give one of rel, pp, factor")
    if not given:
        rel = 0.15
    if not reason and ((rel is not None and rel > MAX_REL + 1e-12)
                       or (pp is not None and pp > MAX_PP + 1e-12)
                       or (factor is not None and factor > MAX_FACTOR + 1e-12)):
        raise ValueError(f"claim {key!r}: a tolerance wider than 15 % / 15 points / 1.5x "
                         "needs a reason from the paper's own precision")
    if factor is not None and (factor <= 1 or float(paper_value) <= 0):
        raise ValueError(f"claim {key!r}: a factor tolerance needs factor > 1 and a positive "
                         "paper value")
    v = _num(ours)
    return Claim(statement, key=key, kind="numeric", paper_value=float(paper_value),
                 paper_text=paper_text or fmt(float(paper_value), unit), value=v,
                 rel=rel, pp=pp, factor=factor, unit=unit, reason=reason, figure=figure,
                 section=section)


def shape(key: str, statement: str, diff, *, paper_text: str, describe: str = "",
          figure: str = "", unit: str = "", section: str = "main") -> Claim:
    """A direction, order or trend the paper states without a number. `diff`
    is this seed's signed difference, positive when it goes the paper's way;
    it agrees when its 95 % interval over seeds excludes zero on that side."""
    return Claim(statement, key=key, kind="shape", paper_value=paper_text, paper_text=paper_text,
                 value=_num(diff), describe=describe, figure=figure, unit=unit, section=section)


def _paper_fields(paper_value, paper_text: str, unit: str) -> dict:
    """The paper's value as a number when it is one (else as given), and the
    text shown for it."""
    pv = _num(paper_value)
    return {"paper_value": pv if pv is not None else paper_value,
            "paper_text": paper_text or (fmt(pv, unit) if pv is not None else str(paper_value))}


def calibration(key: str, statement: str, paper_value, ours, note: str, *, unit: str = "",
                figure: str = "", paper_text: str = "") -> Claim:
    """A value the model was fitted to: shown, never counted."""
    if not note.strip():
        raise ValueError(f"claim {key!r}: a calibration says what was fitted to what")
    return Claim(statement, key=key, kind="calibration", value=_num(ours), note=note, unit=unit,
                 figure=figure, **_paper_fields(paper_value, paper_text, unit))


def not_reproducible(key: str, statement: str, paper_value, missing: str, *,
                     figure: str = "", unit: str = "", paper_text: str = "") -> Claim:
    """A claim our setup cannot test; `missing` names the one missing thing."""
    if not missing.strip():
        raise ValueError(f"claim {key!r}: name the missing thing")
    return Claim(statement, key=key, kind="not-reproducible", missing=missing, unit=unit,
                 figure=figure, **_paper_fields(paper_value, paper_text, unit))


@dataclass
class PaperPoint:
    """A value the paper gives for one point of a figure, drawn by `lines`
    and `bars` on the same axes as ours: a hollow marker in the series'
    colour. `x` is the x value (lines) or the category (bars)."""

    series: str
    x: object
    y: float
    panel: object = None
    label: str = ""


@dataclass
class Ablation:
    """A run that changes one modelling choice and reports where it moves
    the named claims (netsched.claims): `apply(cfg)` edits each point's
    config in place (on the points `where(labels)` selects, default all),
    or `scale` runs the entry's points at another scale instead. `claims`
    lists claim keys, or ["*"] for every numeric and shape claim."""

    id: str
    claims: list
    changed: str
    apply: Optional[Callable[[dict], None]] = None
    where: Optional[Callable[[dict], bool]] = None
    scale: Optional[str] = None
    seeds: Optional[int] = None  # seeds of the ablated run (default 2, at most the main run's)

    def __post_init__(self) -> None:
        if (self.apply is None) == (self.scale is None):
            raise ValueError(f"ablation {self.id!r}: give exactly one of apply and scale")


@dataclass
class Experiment:
    name: str
    paper: str
    figure: str
    title: str
    setup: str  # one paragraph: what the figure shows and how we run it
    points: Callable[[str], list[Point]]  # scale -> runs
    table: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]  # (runs, pools) -> CSV
    plot: Callable[[pd.DataFrame, str], None]  # (table, png path)
    claims: Callable[[pd.DataFrame], list[Claim]]
    differences: str  # where and why our setup differs from the paper's
    status: str = "done"
    # Extra markdown sections for the page, generated from the table (e.g.
    # which Horus configuration produced the paper's figure, with our
    # measured numbers for each); "" for none.
    sections: Optional[Callable[[pd.DataFrame], str]] = None
    # The paper's values on the plot: a list, or a function of the table.
    paper_points: Union[list, Callable[[pd.DataFrame], list], None] = None
    # Runs that change one modelling choice each, for the attribution of
    # claims that differ (netsched.claims.attribute).
    ablations: list = field(default_factory=list)
    # Which of `points`' scales `--scale published` runs ("paper" where it
    # fits this 2-core machine), and why when it is not the paper's.
    published: str = "paper"
    published_note: str = ""


REGISTRY: dict[str, Experiment] = {}


# Entries that take more designs by name: `base+a+b` is FAMILIES[base]((a, b)).
FAMILIES: dict[str, Callable[[tuple], Experiment]] = {}


def register_family(base: str, make: Callable[[tuple], Experiment]) -> None:
    """`base+x+y` names `make(("x", "y"))`, built and registered when first
    asked for (`catalog.get`)."""
    FAMILIES[base] = make


def register(e: Experiment) -> Experiment:
    if e.name in REGISTRY:
        raise ValueError(f"duplicate experiment {e.name}")
    REGISTRY[e.name] = e
    return e


# --- plot helpers --------------------------------------------------------------

STYLE = {
    "horus": ("tab:blue", "o", "Horus (paper)"),
    "rs-h": ("tab:orange", "s", "RS-H"),
    "rs-lb": ("tab:green", "^", "RS-LB"),
    "racksched": ("tab:orange", "s", "RackSched"),
    "jsq": ("black", "x", "JSQ"),
    "random": ("tab:red", "v", "Random"),
    "central": ("tab:purple", "D", "Global"),
    "pow2-delayed": ("tab:brown", "s", "Pow-of-2 DU"),
    "idle-only": ("tab:gray", "^", "Idle only"),
    "jiq": ("tab:cyan", "P", "JIQ"),
    # Horus's configurations (netsched.sweep.VARIANTS): `horus` is the paper's.
    "horus (horus-sim)": ("navy", "*", "Horus (horus-sim, unmodified)"),
    "horus (horus-sim-fixed)": ("tab:pink", "d", "Horus (horus-sim, fixed)"),
    "horus-tokens": ("tab:olive", "h", "horus-tokens"),
}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# The paper's values for the plot being drawn: `experiment run` sets them
# from `Experiment.paper_points` around the entry's `plot`, so every
# entry's lines()/bars() draw them without passing them through.
_PAPER: contextvars.ContextVar = contextvars.ContextVar("paper_points", default=())


@contextlib.contextmanager
def paper_points_for(pts):
    """`lines`/`bars` inside this block also draw `pts` (PaperPoints)."""
    tok = _PAPER.set(tuple(pts or ()))
    try:
        yield
    finally:
        _PAPER.reset(tok)


def _paper_in(panel, panels: list, paper) -> list:
    pts = list(_PAPER.get()) if paper is None else list(paper)
    if panel is None:
        return pts
    return [p for p in pts if p.panel == panel or (p.panel is None and len(panels) == 1)]


def _legend_below(fig, axes) -> None:
    """One legend for the figure, below the panels, so it never covers data."""
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="upper center", fontsize=8,
                   bbox_to_anchor=(0.5, 0.0), ncol=min(len(seen), 4), frameon=False)


def lines(
    df: pd.DataFrame,
    png: str,
    x: str,
    y: str,
    series: str = "policy",
    panel: Optional[str] = None,
    xlabel: str = "",
    ylabel: str = "",
    logy: bool = True,
    title: str = "",
    xscale: Optional[str] = None,
    band: Optional[tuple[str, str]] = None,
    paper: Optional[list] = None,
) -> None:
    """One line per `series`, one panel per value of `panel`, as the papers
    draw their load sweeps. `band` shades between two columns (IQR plots).
    The paper's values (`paper`, else the entry's `paper_points`) are hollow
    markers of the series' colour on the same axes."""
    plt = _plt()
    panels = list(dict.fromkeys(df[panel])) if panel else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), dpi=110, squeeze=False)
    for ax, pv in zip(axes[0], panels):
        d = df if pv is None else df[df[panel] == pv]
        drawn = {}
        for s in dict.fromkeys(d[series]):
            dd = d[d[series] == s].sort_values(x)
            color, marker, label = STYLE.get(str(s), (None, "o", str(s)))
            [ln] = ax.plot(dd[x], dd[y], marker=marker, color=color, label=label)
            drawn[str(s)] = ln.get_color()
            if band:
                ax.fill_between(dd[x], dd[band[0]], dd[band[1]], color=color, alpha=0.15)
        for p in _paper_in(pv, panels, paper):
            color, marker, _ = STYLE.get(str(p.series), (None, "o", str(p.series)))
            color = color or drawn.get(str(p.series), "black")
            if p.y is None:
                # The paper gives an x only (a knee, a sustained rate): a dotted line.
                ax.axvline(p.x, color=color or "black", linestyle=":", linewidth=1.5,
                           label=f"paper: {STYLE.get(str(p.series), (0, 0, str(p.series)))[2]}"
                           + (f" ({p.label})" if p.label else ""))
                continue
            ax.plot([p.x], [p.y], linestyle="none", marker=marker, markersize=9,
                    markerfacecolor="none", markeredgecolor=color or "black", markeredgewidth=1.6,
                    label=f"paper: {STYLE.get(str(p.series), (0, 0, str(p.series)))[2]}"
                    + (f" ({p.label})" if p.label else ""))
        if logy:
            ax.set_yscale("log")
        if xscale:
            ax.set_xscale(xscale)
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or y)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"({chr(97 + list(panels).index(pv))}) {pv}" if pv is not None else title)
    if title and panel:
        fig.suptitle(title)
    fig.tight_layout()
    _legend_below(fig, axes[0])
    fig.savefig(png, bbox_inches="tight")
    plt.close(fig)


def bars(df: pd.DataFrame, png: str, x: str, y: str, series: str, ylabel: str, title: str = "",
         logy: bool = False, panel: Optional[str] = None, paper: Optional[list] = None) -> None:
    """Grouped bars: one group per `x`, one bar per `series`; the paper's
    values as hollow markers on their bars."""
    plt = _plt()
    panels = list(dict.fromkeys(df[panel])) if panel else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.4), dpi=110, squeeze=False)
    for ax, pv in zip(axes[0], panels):
        d = df if pv is None else df[df[panel] == pv]
        xs = list(dict.fromkeys(d[x]))
        ss = list(dict.fromkeys(d[series]))
        w = 0.8 / max(len(ss), 1)
        for i, s in enumerate(ss):
            dd = d[d[series] == s].set_index(x).reindex(xs)
            color, _, label = STYLE.get(str(s), (None, "o", str(s)))
            ax.bar([j + i * w for j in range(len(xs))], dd[y], width=w, color=color, label=label)
        for p in _paper_in(pv, panels, paper):
            if p.x not in xs or p.series not in ss:
                continue
            pos = xs.index(p.x) + ss.index(p.series) * w
            ax.plot([pos], [p.y], linestyle="none", marker="D", markersize=8, markerfacecolor="none",
                    markeredgecolor="black", markeredgewidth=1.6, label=f"paper{'' if not p.label else ': ' + p.label}")
        ax.set_xticks([j + w * (len(ss) - 1) / 2 for j in range(len(xs))])
        ax.set_xticklabels([str(v) for v in xs])
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_title(str(pv) if pv is not None else title)
    fig.tight_layout()
    _legend_below(fig, axes[0])
    fig.savefig(png, bbox_inches="tight")
    plt.close(fig)


# --- analysis helpers ----------------------------------------------------------

def knee(d: pd.DataFrame, x: str = "load", y: str = "p99_us", factor: float = 2.0) -> Optional[float]:
    """The first x at which y exceeds `factor` times its value at the lowest
    x: where a curve 'increases rapidly'. None when no knee lies in the
    measured range: a knee claim then fails (numeric(..., None))."""
    d = d.sort_values(x)
    base = d[y].iloc[0]
    over = d[d[y] > factor * base]
    return None if over.empty else float(over[x].iloc[0])


def fmt(v, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "—"
    if isinstance(v, float):
        return f"{v:,.3g}{unit}" if abs(v) < 1000 else f"{v:,.0f}{unit}"
    return f"{v}{unit}"
