#!/usr/bin/env bash
# Property tests beyond CI's fixed seed: every proptest target with many
# cases and a fresh seed per round. scripts/test.sh pins PROPTEST_RNG_SEED so
# that CI's verdict is a function of the code; this is where new cases are
# searched for. A failure prints its seed (rerun with PROPTEST_RNG_SEED=...)
# and proptest records the shrunk case in the target's
# *.proptest-regressions file, which belongs in the commit of the fix.
#
#   scripts/proptest-explore.sh [CASES [ROUNDS]]     (defaults 2000, 1)
set -uo pipefail
cd "$(dirname "$0")/.."
cases="${1:-2000}"
rounds="${2:-1}"
targets=(
  "-p netsched-core --lib"
  "-p netsched-core --test horus_props"
  "-p netsched-core --test draconis_props"
  "-p netsched-proto --test props"
  "-p netsched-config --lib"
  "-p netsched-sim --lib"
  "-p netsched-flowsim --lib"
  "-p netsched-flowsim --test equivalence"
)
if [ "$(id -u)" = 0 ]; then
  # BPF_PROG_TEST_RUN needs root.
  targets+=("-p netsched-xdp --test differential" "-p netsched-xdp --test draconis_differential")
fi
failed=0
for round in $(seq "$rounds"); do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  for t in "${targets[@]}"; do
    echo "== round $round, PROPTEST_RNG_SEED=$seed PROPTEST_CASES=$cases cargo test $t"
    # shellcheck disable=SC2086
    if ! PROPTEST_RNG_SEED=$seed PROPTEST_CASES=$cases cargo test --quiet $t; then
      failed=1
    fi
  done
done
exit $failed
