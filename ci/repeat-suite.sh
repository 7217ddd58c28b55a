#!/usr/bin/env bash
# Runs the whole suite (`cargo nextest run --workspace --features dpdk`, as `make test` does)
# N times in a row: a series for tests that flake only among the others (shared CPUs, and
# state the kernel shares between namespaces, such as the ephemeral-port walk for one
# address pair). Keeps the whole output of every failing run.
#
#   ci/repeat-suite.sh 20                 # 20 runs
#   UNTIL=$(date -d '+90 min' +%s) ci/repeat-suite.sh 50   # at most 50, none started after
#
# Prints one line per run (its summary, and the failing tests' names) and a total; failing
# runs' logs are under target/repeat/. Exits non-zero when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
UNTIL=${UNTIL:-0}
FEATURES=${FEATURES:---features dpdk}
out_dir=target/repeat
mkdir -p "$out_dir"
# shellcheck disable=SC2086
cargo nextest run --workspace $FEATURES --no-run >/dev/null 2>&1 || { echo "build failed" >&2; exit 2; }
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
failed=0
done_runs=0
for i in $(seq 1 "$RUNS"); do
  if [ "$UNTIL" -gt 0 ] && [ "$(date +%s)" -ge "$UNTIL" ]; then
    echo "stopped before run $i: time is up"
    break
  fi
  log=$(mktemp)
  start=$(date +%s)
  # shellcheck disable=SC2086
  cargo nextest run --workspace $FEATURES >"$log" 2>&1
  rc=$?
  summary=$(grep -E '^ +Summary' "$log" | tail -1 | sed 's/^ *//')
  if [ "$rc" -eq 0 ]; then
    echo "run $i: pass in $(( $(date +%s) - start )) s: $summary"
    rm -f "$log"
  else
    failed=$((failed + 1))
    keep="$out_dir/suite-$i.log"
    mv "$log" "$keep"
    names=$(grep -E '^ +FAIL \[' "$keep" | sed 's/.*) //; s/ /::/' | sort -u | tr '\n' ' ')
    echo "run $i: FAIL (rc $rc): $summary; failed: $names(log: $keep)"
  fi
  done_runs=$i
  bash ci/cleanup.sh >/dev/null 2>&1 || true
done
echo "suite: $failed of $done_runs runs failed"
[ "$failed" -eq 0 ]
