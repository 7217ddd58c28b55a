#!/usr/bin/env bash
# Side-by-side speed check of two nicemu builds (e.g. a change and the commit before it), for
# the three headline benchmarks, alternating the two binaries round by round so that drift of
# the shared machine hits both alike:
#   - forwarding: `nicemu fwd` on two net_null vdevs with hugepages, cycles per frame and Mpps
#     (the configuration of ci/bench-fwd.sh, without testpmd);
#   - host stack: `nicemu bench echo --servers nicemu`, host ns per transaction and the NIC
#     lcore's ns per transaction;
#   - Tonic: `nicemu bench tonic`, scheduling decisions per second at 1K, 64K and 1M flows.
#
#   git worktree add /tmp/base <commit> && (cd /tmp/base && cargo build --release -p apps --features dpdk)
#   cargo build --release -p apps --features dpdk
#   BASE=/tmp/base/target/release/nicemu ROUNDS=3 ci/bench-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:?set BASE to the other nicemu binary}
NEW=${NEW:-./target/release/nicemu}
ROUNDS=${ROUNDS:-3}
CORE=${CORE:-1}
for b in "$BASE" "$NEW"; do [ -x "$b" ] || { echo "not executable: $b" >&2; exit 1; }; done

. ci/fwd-null.sh
hugepages_on
cfg=$(mktemp --suffix=.toml)
trap 'rm -f "$cfg"; dpdk_leftovers_rm nicemu-ab' EXIT
fwd_null_config "$cfg" nicemu-ab "${HUGE_MEM[@]}"

label() { if [ "$1" = "$BASE" ]; then echo base; else echo new; fi; }
echo "base: $BASE"
echo "new:  $NEW"
for r in $(seq 1 "$ROUNDS"); do
  for bin in "$BASE" "$NEW"; do
    out=$("$bin" fwd -c "$cfg" -d 3 --template udp 2>&1)
    mpps=$(echo "$out" | awk '$1=="p0"||$1=="p1" {s+=$3} END {printf "%.2f", s}')
    cpp=$(echo "$out" | sed -n 's/.*: \([0-9.]*\) cycles\/pkt.*/\1/p' | head -1)
    printf 'fwd   round %s %-4s %7s Mpps %6s cycles/frame\n' "$r" "$(label "$bin")" "$mpps" "$cpp"
  done
done
for r in $(seq 1 "$ROUNDS"); do
  for bin in "$BASE" "$NEW"; do
    line=$(taskset -c "$CORE" "$bin" bench echo --servers nicemu --rounds 1 --seconds 3 2>&1 \
      | grep -E '^[0-9]+ +nicemu')
    host=$(echo "$line" | awk '{print $5}')
    nic=$(echo "$line" | sed -n 's/.*NIC lcore \([0-9.]*\) ns\/txn.*/\1/p')
    printf 'echo  round %s %-4s host %5s ns/txn, NIC lcore %5s ns/txn\n' "$r" "$(label "$bin")" "$host" "$nic"
  done
done
for r in $(seq 1 "$ROUNDS"); do
  for bin in "$BASE" "$NEW"; do
    rates=$(taskset -c "$CORE" "$bin" bench tonic --seconds 1 2>&1 \
      | sed -n 's/.*flows *\([0-9]*\) .*: *\([0-9.]*\) M decisions\/s.*/\1 flows \2 M\/s/p' | paste -sd, -)
    printf 'tonic round %s %-4s %s\n' "$r" "$(label "$bin")" "$rates"
  done
done
