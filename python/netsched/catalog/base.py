"""The experiment catalog's building blocks: an `Experiment` per reproduced
figure or table, a `Claim` per number the paper states, and plot helpers in
the papers' style (p99 against load on a log axis, one panel per workload)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import pandas as pd

from ..sweep import Point

SCALES = ("reduced", "paper")


@dataclass
class Claim:
    """A number the paper states beside ours. `ok` is True when ours is
    inside the stated `tolerance`, False when it is outside, None when the
    comparison is qualitative only (the paper states no number or direction
    that ours could miss). A verdict without a stated tolerance is refused:
    "agrees" means nothing without the rule behind it."""

    statement: str
    paper: str
    ours: str
    ok: Optional[bool] = None
    # The rule behind `ok`, in words ("within 25 % of the paper's value"):
    # a verdict says "agrees" only inside it.
    tolerance: str = ""

    def __post_init__(self) -> None:
        if self.ok is not None:
            self.ok = bool(self.ok)
            if not self.tolerance.strip():
                raise ValueError(f"claim {self.statement!r} has a verdict but states no tolerance")


def _finite(*vs: float) -> bool:
    return all(v is not None and v == v and abs(v) != float("inf") for v in vs)


def within(statement: str, paper: float, ours: float, rel: float = 0.25, unit: str = "",
           paper_text: Optional[str] = None, ours_text: Optional[str] = None) -> Claim:
    """Agrees if ours is within `rel` of the paper's value (|ours/paper - 1| <= rel)."""
    ok = _finite(paper, ours) and paper != 0 and abs(ours / paper - 1) <= rel
    return Claim(statement, paper_text or fmt(paper, unit), ours_text or fmt(ours, unit), ok=ok,
                 tolerance=f"within {100 * rel:.0f} % of the paper's value")


def all_within(statement: str, paper: list[float], ours: list[float], rel: float = 0.25,
               unit: str = "", ours_note: str = "") -> Claim:
    """Agrees if every one of several values is within `rel` of the paper's."""
    ok = len(paper) == len(ours) and all(
        _finite(p, o) and p != 0 and abs(o / p - 1) <= rel for p, o in zip(paper, ours))
    return Claim(statement, " / ".join(fmt(p) for p in paper) + unit,
                 " / ".join(fmt(o) for o in ours) + unit + ours_note, ok=ok,
                 tolerance=f"each within {100 * rel:.0f} % of the paper's value")


def ratio_within(statement: str, paper: float, ours: float, factor: float = 2.0,
                 paper_text: Optional[str] = None, ours_text: Optional[str] = None) -> Claim:
    """Agrees if ours is within a factor of the paper's (1/factor <= ours/paper <= factor):
    for ratios between systems, which the papers state to one significant figure."""
    ok = _finite(paper, ours) and paper > 0 and ours > 0 and 1 / factor <= ours / paper <= factor
    if ours_text is None:
        ours_text = f"{ours:.3g}×" if _finite(ours) else "—"
    return Claim(statement, paper_text or f"{paper:.3g}×", ours_text, ok=ok,
                 tolerance=f"within {factor:g}× of the paper's value")


def points(statement: str, paper: float, ours: float, pp: float = 15.0,
           paper_text: Optional[str] = None, ours_text: Optional[str] = None) -> Claim:
    """Agrees if a percentage is within `pp` percentage points of the paper's."""
    ok = _finite(paper, ours) and abs(ours - paper) <= pp
    return Claim(statement, paper_text or f"{paper:.0f}%", ours_text or
                 (f"{ours:.0f}%" if _finite(ours) else "—"), ok=ok,
                 tolerance=f"within {pp:g} percentage points of the paper's value")


def same_order(statement: str, paper_order: list[str], ours: dict[str, float],
               unit: str = "") -> Claim:
    """Agrees if sorting the named systems by our values (lowest first) gives
    the paper's order; systems without a value break the order."""
    have = {s: v for s, v in ours.items() if _finite(v)}
    ranked = sorted(have, key=lambda s: have[s])
    ok = ranked == list(paper_order)
    return Claim(statement, " < ".join(paper_order),
                 " < ".join(f"{s} {fmt(have[s], unit)}" for s in ranked) or "—", ok=ok,
                 tolerance="the same order of the named systems")


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


REGISTRY: dict[str, Experiment] = {}


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
) -> None:
    """One line per `series`, one panel per value of `panel`, as the papers
    draw their load sweeps. `band` shades between two columns (IQR plots)."""
    plt = _plt()
    panels = list(dict.fromkeys(df[panel])) if panel else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), dpi=110, squeeze=False)
    for ax, pv in zip(axes[0], panels):
        d = df if pv is None else df[df[panel] == pv]
        for s in dict.fromkeys(d[series]):
            dd = d[d[series] == s].sort_values(x)
            color, marker, label = STYLE.get(str(s), (None, "o", str(s)))
            ax.plot(dd[x], dd[y], marker=marker, color=color, label=label)
            if band:
                ax.fill_between(dd[x], dd[band[0]], dd[band[1]], color=color, alpha=0.15)
        if logy:
            ax.set_yscale("log")
        if xscale:
            ax.set_xscale(xscale)
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or y)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"({chr(97 + list(panels).index(pv))}) {pv}" if pv is not None else title)
        ax.legend(fontsize=8)
    if title and panel:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def bars(df: pd.DataFrame, png: str, x: str, y: str, series: str, ylabel: str, title: str = "",
         logy: bool = False, panel: Optional[str] = None) -> None:
    """Grouped bars: one group per `x`, one bar per `series`."""
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
        ax.set_xticks([j + w * (len(ss) - 1) / 2 for j in range(len(xs))])
        ax.set_xticklabels([str(v) for v in xs])
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_title(str(pv) if pv is not None else title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


# --- analysis helpers ----------------------------------------------------------

def knee(d: pd.DataFrame, x: str = "load", y: str = "p99_us", factor: float = 2.0) -> Optional[float]:
    """The first x at which y exceeds `factor` times its value at the lowest
    x: where a curve 'increases rapidly'."""
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
