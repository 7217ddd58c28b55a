#!/usr/bin/env bash
# Runs one test N times in a row (a series for a test suspected of flaking) and keeps the
# whole output of every failing run, so that a failure seen once can be read afterwards.
#
#   ci/repeat-test.sh splice_netns_thousand_requests_under_loss 50          # package apps
#   PKG=dataplane ci/repeat-test.sh rx_burst_matches_rx_frame_by_frame 20
#
# Prints one line per run and a total; failing runs' logs are under target/repeat/. Exits
# non-zero when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
TEST=${1:?usage: ci/repeat-test.sh TEST_NAME [RUNS]}
RUNS=${2:-50}
PKG=${PKG:-apps}
FEATURES=${FEATURES:---features dpdk}
out_dir=target/repeat
mkdir -p "$out_dir"
# Build once, so that every run measures the test alone.
# shellcheck disable=SC2086
cargo nextest run -p "$PKG" $FEATURES --no-run >/dev/null 2>&1 || { echo "build failed" >&2; exit 2; }
failed=0
for i in $(seq 1 "$RUNS"); do
  log=$(mktemp)
  # shellcheck disable=SC2086
  if cargo nextest run -p "$PKG" $FEATURES -E "test(=$TEST) | test(/::$TEST\$/)" >"$log" 2>&1 \
      && grep -q "1 test run: 1 passed" "$log"; then
    echo "run $i: pass ($(sed -n 's/.*Summary \[ *\([0-9.]*s\)\].*/\1/p' "$log" | tail -1))"
    rm -f "$log"
  else
    failed=$((failed + 1))
    keep="$out_dir/$TEST-$i.log"
    mv "$log" "$keep"
    echo "run $i: FAIL (log: $keep)"
  fi
  bash ci/cleanup.sh >/dev/null 2>&1 || true
done
echo "$TEST: $failed of $RUNS runs failed"
[ "$failed" -eq 0 ]
