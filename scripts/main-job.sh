#!/usr/bin/env bash
# The main job: a small datacenter on this machine (`netsched cluster up`):
# controller, spine, a leaf scheduler per rack and worker agents with an
# embedded RocksDB, each a separate process exchanging UDP datagrams on
# loopback, serving a RocksDB GET/SCAN workload through Horus and then
# through RackSched (RS-H). Prints p50/p99 of each beside the simulator's
# result for the same configuration, then tears everything down (also on
# Ctrl-C). About 15 s after the build on an idle 2-core machine.
#   scripts/main-job.sh [cluster config, default experiments/cluster-rocksdb.toml]
# The simulator-only main job (p99 vs load at datacenter scale) is
# scripts/sim-main-job.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-experiments/cluster-rocksdb.toml}
# RocksDB and libclang must be present before the build (librocksdb-sys).
scripts/install-deps.sh
cargo build --release --quiet -p netsched
exec "${CARGO_TARGET_DIR:-target}/release/netsched" cluster up "$config"
