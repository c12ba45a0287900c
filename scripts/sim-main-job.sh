#!/usr/bin/env bash
# The simulator's main job (the README's main job before the UDP runtime):
# Horus vs RS-H vs RS-LB vs ideal JSQ on a mid-size simulated datacenter at
# loads 0.5, 0.7 and 0.9. Prints the p99 table and writes a plot of p99 vs load.
#   scripts/sim-main-job.sh [extra `netsched sim` flags, e.g. --tasks-per-worker 20]
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/main
cargo build --release --quiet -p netsched
"${CARGO_TARGET_DIR:-target}/release/netsched" sim --config experiments/main.toml --out "$out" "$@"
python3 scripts/ensure-python-deps.py
# The plot is pure Python: it runs from the source tree, without `pip install .`.
PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}" python3 -m netsched plot sim "$out/runs.csv" "$out/p99_vs_load.png"
echo "plot: $out/p99_vs_load.png"
