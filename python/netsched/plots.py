"""p99 against offered load from the CSV files the Rust commands write, one
line per policy or setup (`python3 -m netsched plot ...`, cli.py).

    sim    `netsched sim`'s runs.csv: p99 response time (scripts/sim-main-job.sh)
    pull   `netsched pull`'s runs.csv: p99 scheduling latency (docs/draconis.md)
    nginx  `netsched bench nginx --csv`'s rows: median p99 over rounds per
           setup (scripts/bench-nginx.sh, docs/benchmarks.md)

Pure Python and matplotlib: it runs from the source tree (PYTHONPATH=python)
without the compiled simulator, as the shell scripts call it.
"""
from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Optional

# (load, value) points per series, sorted by load.
Series = dict[str, list[tuple[float, float]]]


@dataclass(frozen=True)
class Figure:
    """How one kind of CSV is read and drawn."""

    read: Callable[[str], Series]
    xlabel: str
    ylabel: str
    title: str
    logy: bool = True
    # series name -> (colour, marker); others get matplotlib's next colour.
    style: dict[str, tuple[str, str]] = field(default_factory=dict)
    default_marker: str = "d"
    size: tuple[float, float] = (5.5, 3.8)
    # The figure's dpi while it is laid out (None: matplotlib's default);
    # the PNG is written at 120 dpi either way. The nginx plot was laid out at
    # the default, and keeps its look.
    layout_dpi: Optional[int] = 120
    title_fontsize: Optional[int] = None
    unit: str = "us"  # of the y values, in the summary line cli.py prints


def read_runs(path) -> Series:
    """p99_us against load per policy, from a runs.csv of `netsched sim` or
    `netsched pull` (whose p99_us is the scheduling latency)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no runs")
    missing = {"policy", "load", "p99_us"} - set(rows[0])
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    series = defaultdict(list)
    for r in rows:
        series[r["policy"]].append((float(r["load"]), float(r["p99_us"])))
    return {p: sorted(v) for p, v in series.items()}


def nginx_medians(path) -> dict[str, list[tuple[float, float, float]]]:
    """{setup: [(load, median p50 µs, median p99 µs)]} in load order, over
    the rounds `netsched bench nginx --repeats` ran."""
    by = defaultdict(lambda: defaultdict(lambda: ([], [])))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no rounds")
    missing = {"setup", "load", "p50_us", "p99_us"} - set(rows[0])
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    for row in rows:
        p50, p99 = by[row["setup"]][float(row["load"])]
        p50.append(float(row["p50_us"]))
        p99.append(float(row["p99_us"]))
    return {
        setup: [(load, statistics.median(a), statistics.median(b)) for load, (a, b) in sorted(loads.items())]
        for setup, loads in by.items()
    }


def read_nginx_p99_ms(path) -> Series:
    return {setup: [(load, p99 / 1e3) for load, _, p99 in pts] for setup, pts in nginx_medians(path).items()}


FIGURES = {
    "sim": Figure(
        read=read_runs,
        xlabel="offered load (fraction of n / mean service time)",
        ylabel="p99 response time (µs)",
        title="p99 response time vs load",
        style={"horus": ("tab:blue", "o"), "rs-h": ("tab:orange", "s"),
               "rs-lb": ("tab:green", "^"), "jsq": ("black", "x")},
    ),
    "pull": Figure(
        read=read_runs,
        xlabel="offered load (fraction of executors / mean service time)",
        ylabel="p99 scheduling latency (µs)",
        title="pull simulator: p99 scheduling latency vs load",
        style={"draconis": ("tab:blue", "o"), "draconis-server": ("tab:purple", "v"),
               "r2p2-recirc": ("tab:red", "s"), "sparrow": ("tab:green", "^"),
               "racksched-nodes": ("tab:orange", "D")},
    ),
    "nginx": Figure(
        read=read_nginx_p99_ms,
        xlabel="offered load (fraction of worker capacity)",
        ylabel="p99 response time (ms)",
        title="Horus / RackSched leaf vs nginx UDP proxy\n(same workers, same client, one run)",
        logy=False,
        unit="ms",
        default_marker="o",
        size=(6, 4),
        layout_dpi=None,
        title_fontsize=10,
    ),
}


def draw(series: Series, out_png, figure: Figure) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figure.size, dpi=figure.layout_dpi)
    for name, pts in series.items():
        color, marker = figure.style.get(name, (None, figure.default_marker))
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, color=color, label=name)
    ax.set_xlabel(figure.xlabel)
    ax.set_ylabel(figure.ylabel)
    if figure.logy:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    # fontsize=None would mean the body text's size, not the title's default.
    title_style = {} if figure.title_fontsize is None else {"fontsize": figure.title_fontsize}
    ax.set_title(figure.title, **title_style)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


def plot(kind: str, csv_path, out_png) -> Series:
    """Reads `csv_path` as `kind` says, writes the PNG, returns what it drew."""
    figure = FIGURES[kind]
    series = figure.read(csv_path)
    draw(series, out_png, figure)
    return series
