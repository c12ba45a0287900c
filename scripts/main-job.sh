#!/usr/bin/env bash
# The main job: a small datacenter on this machine (`netsched cluster up`):
# controller, spine, a leaf scheduler per rack and worker agents, each a
# separate process exchanging UDP datagrams on loopback, serving tasks
# through Horus and then through RackSched (RS-H). The default is
# experiments/cluster-agree.toml: timer tasks Exp(5 ms) at load 0.5 on 2
# racks x 2 workers: long tasks beside this 2-core machine's stalls, which
# RocksDB tasks cannot reach here (experiments/cluster-rocksdb.toml runs at
# load 0.05). With RS-H on RackSched's 2-executor servers the two differ
# little here (RS-H p50 x1.05, p99 x1.08 of Horus's on 2026-11-26; on
# single-queue workers they differed x1.5, docs/benchmarks.md). Prints p50/p99 of each beside the
# simulator's result for the same configuration, the ratio, the tolerance
# it is held to and a verdict, and RS-H against Horus; then tears
# everything down (also on Ctrl-C). About 30 s after the build.
#   scripts/main-job.sh [cluster config, default experiments/cluster-agree.toml]
# The simulator-only main job (p99 vs load at datacenter scale) is
# scripts/sim-main-job.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-experiments/cluster-agree.toml}
# RocksDB and libclang must be present before the build (librocksdb-sys).
scripts/install-deps.sh
cargo build --release --quiet -p netsched
exec "${CARGO_TARGET_DIR:-target}/release/netsched" cluster up "$config"
