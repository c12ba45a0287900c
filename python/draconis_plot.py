"""p99 scheduling latency against load for the pull simulator.

Usage: python3 python/draconis_plot.py RUNS_CSV OUT_PNG

RUNS_CSV is the `runs.csv` that `netsched pull` writes (one row per
(policy, load); `p99_us` is the p99 scheduling latency, docs/draconis.md).
Reuses netsched_plot's reader; only the labels and colours differ.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netsched_plot  # noqa: E402

STYLE = {
    "draconis": ("tab:blue", "o"),
    "draconis-server": ("tab:purple", "v"),
    "r2p2": ("tab:red", "s"),
    "sparrow": ("tab:green", "^"),
    "racksched": ("tab:orange", "D"),
}


def plot(series, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8), dpi=120)
    for policy, pts in series.items():
        color, marker = STYLE.get(policy, (None, "d"))
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, color=color, label=policy)
    ax.set_xlabel("offered load (fraction of executors / mean service time)")
    ax.set_ylabel("p99 scheduling latency (µs)")
    ax.set_yscale("log")
    ax.set_title("pull simulator: p99 scheduling latency vs load")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    plot(netsched_plot.read_runs(argv[1]), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
