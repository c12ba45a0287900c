#!/usr/bin/env python3
"""netsched's side of the horus-sim cross-check (docs/fidelity.md).

Runs the three small-dataset pools (experiments/fidelity/horus-sim-pool*.toml)
with Horus under each `[schedulers.horus]` preset (paper, horus-sim-fixed,
horus-sim) and RS-H, RS-LB and JSQ, for the given seeds, and prints one
Markdown table per load with seed means of p50 and p99.

    python3 scripts/fidelity-horus.py --seeds 1,2,3 --loads 0.9 [--out results/fidelity]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POOLS = [50, 250, 1000]
PRESETS = ["paper", "horus-sim-fixed", "horus-sim"]
BASELINES = ["horus-tokens", "rs-h", "rs-lb", "jsq"]


def run(binary, config_text, policies, loads, seed, out):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(config_text)
        path = f.name
    cmd = [
        str(binary), "sim", "-c", path, "--policy", ",".join(policies),
        "--load", ",".join(map(str, loads)), "--seed", str(seed), "-q", "-o", str(out),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    runs = json.loads((out / "summary.json").read_text())["runs"]
    return {(r["policy"], r["load"]): r for r in runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--loads", default="0.5,0.7,0.9")
    ap.add_argument("--service", default=None,
                    help='service TOML inline table, e.g. \'{ kind = "preset", name = "bimodal" }\'')
    ap.add_argument("--hop-delay", default=None,
                    help='hop_delay TOML inline table, e.g. \'{ kind = "exp", mean_us = 1.0 }\' '
                         '(default: the configs\' Pingmesh model, horus-sim\'s)')
    ap.add_argument("--spine-leaf-hops", type=int, default=None,
                    help="links between spine and leaf (default: the configs' 4, horus-sim's; 1 is netsched's racks geometry)")
    ap.add_argument("--out", default="results/fidelity")
    ap.add_argument("--binary", default=str(ROOT / "target/release/netsched"))
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    loads = [float(x) for x in args.loads.split(",")]
    out = Path(args.out)
    rows = {}  # (pool, name, load) -> list of (p50, p99)
    t0 = time.time()
    for pool in POOLS:
        base = (ROOT / f"experiments/fidelity/horus-sim-pool{pool}.toml").read_text()
        if args.service:
            lines = [l for l in base.splitlines() if not l.startswith("service =")]
            base = "\n".join(lines).replace(
                "[workload]", f"[workload]\nservice = {args.service}")
        if args.spine_leaf_hops is not None:
            base = base.replace("spine_leaf_hops = 4", f"spine_leaf_hops = {args.spine_leaf_hops}")
        if args.hop_delay:
            lines = [l for l in base.splitlines() if not l.startswith("hop_delay =")]
            base = "\n".join(lines).replace("[network]", f"[network]\nhop_delay = {args.hop_delay}")
        for seed in seeds:
            for preset in PRESETS:
                text = base + f'\n[schedulers.horus]\npreset = "{preset}"\n'
                res = run(args.binary, text, ["horus"], loads, seed, out / f"p{pool}-{preset}-s{seed}")
                for load in loads:
                    r = res[("horus", load)]
                    rows.setdefault((pool, f"horus ({preset})", load), []).append(
                        (r["overall"]["response"]["p50_ns"] / 1e3, r["overall"]["response"]["p99_ns"] / 1e3))
            res = run(args.binary, base, BASELINES, loads, seed, out / f"p{pool}-base-s{seed}")
            for name in BASELINES:
                for load in loads:
                    r = res[(name, load)]
                    rows.setdefault((pool, name, load), []).append(
                        (r["overall"]["response"]["p50_ns"] / 1e3, r["overall"]["response"]["p99_ns"] / 1e3))
    names = [f"horus ({p})" for p in PRESETS] + BASELINES
    for load in loads:
        print(f"\nload {load}, mean of seeds {seeds}: p50 / p99 (µs)\n")
        print("| pool | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for pool in POOLS:
            cells = []
            for name in names:
                v = rows[(pool, name, load)]
                p50 = statistics.mean(x[0] for x in v)
                p99 = statistics.mean(x[1] for x in v)
                cells.append(f"{p50:.0f} / {p99:.0f}")
            print(f"| {pool} | " + " | ".join(cells) + " |")
    json.dump({f"{k[0]}|{k[1]}|{k[2]}": v for k, v in rows.items()},
              open(out / "fidelity.json", "w"), indent=1)
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
