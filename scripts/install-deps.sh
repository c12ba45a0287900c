#!/usr/bin/env bash
# Debian packages the project needs beyond Rust and Python, installed only if
# missing (so a prepared machine never touches apt). Called by .ci/run and by
# scripts/main-job.sh; this is the one list.
#   librocksdb-dev  RocksDB for the worker's GET/SCAN tasks; librocksdb-sys
#                   links it instead of compiling RocksDB (docs/runtime.md)
#   libclang-dev    bindgen, which generates librocksdb-sys's bindings
#   nginx, libnginx-mod-stream
#                   nginx's UDP stream proxy: the `netsched bench nginx`
#                   baseline (docs/benchmarks.md)
#   clang, llvm, libbpf-dev, bpftool
#                   the XDP Horus leaf: clang's BPF target builds
#                   crates/xdp/bpf/horus_leaf.bpf.c against libbpf's headers
#                   (docs/xdp.md); bpftool to inspect loaded maps
#   chromium        headless browser for the report's layout test
#                   (python/tests/test_report_browser.py)
#   prometheus      ships promtool, which checks every daemon's /metrics
#                   (crates/node/tests/promtool.rs)
set -euo pipefail
DEB_PKGS="librocksdb-dev libclang-dev nginx libnginx-mod-stream clang llvm libbpf-dev bpftool chromium prometheus"
# shellcheck disable=SC2086  # word splitting of the list is intended
if dpkg -s $DEB_PKGS >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-deps: missing Debian packages ($DEB_PKGS) and no apt-get" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then
    SUDO="sudo"
  else
    echo "install-deps: missing Debian packages ($DEB_PKGS); run as root or install sudo" >&2
    exit 1
  fi
fi
echo "install-deps: installing $DEB_PKGS with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $DEB_PKGS >/dev/null
