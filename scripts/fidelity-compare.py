#!/usr/bin/env python3
"""Compares netsched's fidelity runs with horus-sim's, cell by cell (docs/fidelity.md).

    python3 scripts/fidelity-compare.py --horus-sim RESULTS.csv --netsched OUT/fidelity.json \
        --distribution exponential [--tolerance 0.10] [--p99-only]

RESULTS.csv has one row per horus-sim run with the columns variant
(unmodified|fixed), policy (Horus|RS-H|RS-LB), distribution, load, pool,
seed, p50_us, p99_us. fidelity.json is what scripts/fidelity-horus.py
writes. Each cell compares seed means; a value "agrees" only within the
tolerance (default 10 %) of horus-sim's.
"""

import argparse
import csv
import json
import statistics
from collections import defaultdict

# horus-sim (variant, policy) -> netsched curve name in fidelity.json
PAIRS = [
    (("unmodified", "Horus"), "horus (horus-sim)"),
    (("fixed", "Horus"), "horus (horus-sim-fixed)"),
    (("unmodified", "RS-H"), "rs-h"),
    (("unmodified", "RS-LB"), "rs-lb"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horus-sim", required=True)
    ap.add_argument("--netsched", required=True)
    ap.add_argument("--distribution", default="exponential")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--p99-only", action="store_true",
                    help="skip p50 (ill-conditioned for an even two-mode mixture: it sits between the modes)")
    args = ap.parse_args()
    theirs = defaultdict(list)
    for r in csv.DictReader(open(args.horus_sim)):
        if r["distribution"] != args.distribution:
            continue
        key = (r["variant"], r["policy"], float(r["load"]), int(r["pool"]))
        theirs[key].append((float(r["p50_us"]), float(r["p99_us"])))
    ours = {}
    for k, v in json.load(open(args.netsched)).items():
        pool, name, load = k.split("|")
        ours[(name, float(load), int(pool))] = (
            statistics.mean(x[0] for x in v), statistics.mean(x[1] for x in v))
    agree = total = 0
    print("| load | pool | horus-sim | netsched | horus-sim p50 / p99 | netsched p50 / p99 | verdict |")
    print("|---|---|---|---|---|---|---|")
    for (variant, policy), name in PAIRS:
        for key in sorted(k for k in theirs if k[:2] == (variant, policy)):
            load, pool = key[2], key[3]
            if (name, load, pool) not in ours:
                continue
            t50 = statistics.mean(x[0] for x in theirs[key])
            t99 = statistics.mean(x[1] for x in theirs[key])
            o50, o99 = ours[(name, load, pool)]
            d50, d99 = o50 / t50 - 1, o99 / t99 - 1
            checked = [d99] if args.p99_only else [d50, d99]
            ok = all(abs(d) <= args.tolerance for d in checked)
            agree += ok
            total += 1
            verdict = "agrees" if ok else "differs"
            diffs = f"{d99:+.0%}" if args.p99_only else f"{d50:+.0%}, {d99:+.0%}"
            print(f"| {load} | {pool} | {variant} {policy} | {name} | {t50:.0f} / {t99:.0f} | "
                  f"{o50:.0f} / {o99:.0f} | {verdict} ({diffs}) |")
    print(f"\n{agree} of {total} cells within {args.tolerance:.0%}")


if __name__ == "__main__":
    main()
