#!/usr/bin/env bash
# Every test: Rust unit, property and integration tests, lints, the Python
# plotting tests, and a reduced-scale run of the main job end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet
python3 scripts/ensure-python-deps.py
python3 -m pytest -q python/tests
