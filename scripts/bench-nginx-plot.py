#!/usr/bin/env python3
"""Plot p99 (median over rounds) against offered load per setup from the CSV
of `netsched bench nginx --csv FILE`.

usage: scripts/bench-nginx-plot.py FILE.csv OUT.png
"""
import csv
import statistics
import sys
from collections import defaultdict


def medians(path):
    """{setup: [(load, median p50 µs, median p99 µs)]} in load order."""
    by = defaultdict(lambda: defaultdict(lambda: ([], [])))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            p50, p99 = by[row["setup"]][float(row["load"])]
            p50.append(float(row["p50_us"]))
            p99.append(float(row["p99_us"]))
    return {
        setup: [(load, statistics.median(a), statistics.median(b)) for load, (a, b) in sorted(loads.items())]
        for setup, loads in by.items()
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = medians(sys.argv[1])
    fig, ax = plt.subplots(figsize=(6, 4))
    for setup, pts in data.items():
        ax.plot([p[0] for p in pts], [p[2] / 1e3 for p in pts], marker="o", label=setup)
    ax.set_xlabel("offered load (fraction of worker capacity)")
    ax.set_ylabel("p99 response time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_ylim(bottom=0)
    ax.set_title("Horus / RackSched leaf vs nginx UDP proxy\n(same workers, same client, one run)", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    for setup, pts in data.items():
        print(setup, " ".join(f"{l:.2f}:{p99 / 1e3:.1f}ms" for l, _, p99 in pts))


if __name__ == "__main__":
    main()
