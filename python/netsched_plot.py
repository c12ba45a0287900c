"""Plots of simulator results: p99 response time against offered load.

Usage: python3 python/netsched_plot.py RUNS_CSV OUT_PNG

RUNS_CSV is the `runs.csv` that `netsched sim` writes: one row per
(policy, load) run with columns including `policy`, `load`, `p99_us`.
"""
import csv
import sys
from collections import defaultdict

STYLE = {
    "horus": ("tab:blue", "o"),
    "rs-h": ("tab:orange", "s"),
    "rs-lb": ("tab:green", "^"),
    "jsq": ("black", "x"),
}


def read_runs(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    needed = {"policy", "load", "p99_us"}
    if not rows:
        raise ValueError(f"{path}: no runs")
    missing = needed - set(rows[0])
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    series = defaultdict(list)
    for r in rows:
        series[r["policy"]].append((float(r["load"]), float(r["p99_us"])))
    return {p: sorted(v) for p, v in series.items()}


def plot_p99(series, out_png, title="p99 response time vs load"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8), dpi=120)
    for policy, pts in series.items():
        color, marker = STYLE.get(policy, (None, "d"))
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, color=color, label=policy)
    ax.set_xlabel("offered load (fraction of n / mean service time)")
    ax.set_ylabel("p99 response time (µs)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    plot_p99(read_runs(argv[1]), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
