#!/usr/bin/env bash
# p99 against offered load for Horus and RackSched leaves beside nginx's UDP
# stream proxy (random two least_conn) over the same workers and client
# (docs/benchmarks.md). Needs Debian's nginx and libnginx-mod-stream (.ci/run
# installs them). Extra arguments go to `netsched bench nginx`.
#   [REPEATS=3] scripts/bench-nginx.sh [OUT_DIR] [--service '{ kind = "exp", mean_us = 2000 }' ...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/nginx}
shift || true
mkdir -p "$out"
cargo build --release -p netsched --quiet
bin=${CARGO_TARGET_DIR:-target}/release/netsched
"$bin" bench nginx --repeats "${REPEATS:-3}" --csv "$out/rows.csv" "$@" | tee "$out/table.md"
# Median p99 over the rounds per (setup, load); pure Python, from the source tree.
PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}" python3 -m netsched plot nginx "$out/rows.csv" "$out/p99_vs_load.png"
echo "wrote $out/table.md $out/rows.csv $out/p99_vs_load.png"
