#!/usr/bin/env bash
# Every test: Rust unit, property and integration tests, lints, the Python
# plotting tests, and a reduced-scale run of the main job end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# No crate's modules depend on each other in a cycle (python/tests/
# test_module_cycles.py tests the check itself).
python3 scripts/module-cycles.py
# As root, network-namespace tests must run: a skip is a failure
# (crates/lab/src/netns.rs, REQUIRE_NETNS_ENV).
# Likewise the XDP leaf's differential tests, which load BPF programs
# (crates/xdp/tests/differential/).
if [ "$(id -u)" = 0 ]; then
  export NETSCHED_REQUIRE_NETNS="${NETSCHED_REQUIRE_NETNS:-1}"
  export NETSCHED_REQUIRE_BPF="${NETSCHED_REQUIRE_BPF:-1}"
fi
# promtool (Debian's prometheus package, scripts/install-deps.sh) checks
# every daemon's /metrics; missing, it fails the test rather than skipping.
export NETSCHED_REQUIRE_PROMTOOL="${NETSCHED_REQUIRE_PROMTOOL:-1}"
# Property tests draw their cases from a pinned seed, so CI's verdict is a
# function of the code; scripts/proptest-explore.sh searches new seeds.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261126}"
cargo test --workspace --quiet
# The config crate alone: a workspace build unifies features across crates
# and once hid that netsched-config needed core's `serde` feature.
cargo check --quiet -p netsched-config
# A build with nothing changed reruns no build script and compiles nothing
# (a rerun-if-changed path that does not exist made every build a rebuild).
if cargo check -v -p netsched-config 2>&1 | grep -E "^ +(Dirty|Compiling|Running) "; then
  echo "a no-op build rebuilt something (above)" >&2
  exit 1
fi
python3 scripts/ensure-python-deps.py
# The netsched Python package (docs/experiments.md): maturin builds crates/py
# (a release build of only the sim and flowsim crates it needs) into a wheel.
python3 -m pip install --quiet --no-build-isolation --no-deps --force-reinstall .
python3 -m pytest -q python/tests
# The whole experiment catalog at reduced scale on a Dask LocalCluster, then
# its report website, checked in headless Chromium at desktop and phone width
# (a few minutes; results are cached in ~/.cache/netsched). Two seeds: enough
# for intervals; every row says it is fewer than the five the published
# verdicts (docs/results) use. No ablation reruns here (each reruns a whole
# entry): the published results carry the attributions.
python3 -m netsched experiment run all --scale reduced --seeds 2 --ablations none --out results/experiments/reduced --quiet
python3 -m netsched report --results results/experiments/reduced --out results/experiments/reduced/report
NETSCHED_REPORT_SITES=results/experiments/reduced/report \
  python3 -m pytest -q python/tests/test_report_browser.py -k published_and_ci
