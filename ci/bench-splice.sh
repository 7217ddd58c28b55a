#!/usr/bin/env bash
# Splice translation next to plain forwarding (BENCHMARKS.md, "Splice translation"): on the
# same two net_null vdevs and the same 66-byte TCP frame (an ACK with timestamps), one NIC
# lcore either forwards every frame (`nicemu fwd --template tcp`: parse, classify, transit
# fast path, tx) or splices it (`nicemu fwd --splice`: the lcore's splice fast path, a
# fixed-offset header read, a lookup in the lcore's cache of the splice table, header
# translation with differential checksums, pair accounting, tx out of the pair's other port).
# Alternating, ROUNDS times; rates are Mpps received over both ports. NICEMU picks the binary
# (e.g. an older build, to compare commits on the same machine).
#
#   ci/bench-splice.sh                      # --no-huge
#   HUGE=1 ROUNDS=5 SECONDS_EACH=5 ci/bench-splice.sh
#   HUGE=1 LCORES=2 ci/bench-splice.sh      # two NIC lcores sharing the splice table (RSS)
#   MISS=1 ci/bench-splice.sh               # also `--splice --splice-miss`: the same pairs
#                                           # installed, every frame a segment of no pair
#                                           # (received, looked up, passed on and dropped
#                                           # for want of a host: Mpps received)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_EACH:-5}
CORE=${CORE:-1}
NICEMU=${NICEMU:-./target/release/nicemu}
[ -x "$NICEMU" ] || { echo "build first: cargo build --release -p apps --features dpdk" >&2; exit 1; }

. ci/fwd-null.sh
MEM=(--no-huge -m 512)
if [ "${HUGE:-0}" = 1 ]; then
  hugepages_on
  MEM=("${HUGE_MEM[@]}")
fi
cfg=$(mktemp --suffix=.toml)
trap 'rm -f "$cfg"; dpdk_leftovers_rm nicemu-bench-splice' EXIT
fwd_null_config "$cfg" nicemu-bench-splice "${MEM[@]}"
# net_null's frames are 64 bytes unless told: the template is 66.
sed -i 's/--vdev=net_null\([01]\)/--vdev=net_null\1,size=66/g' "$cfg"

mpps() { awk '$1=="p0"||$1=="p1" {s+=$3} END {printf "%.3f", s}'; }
cpp() { sed -n 's/.*: \([0-9.]*\) cycles\/pkt.*/\1/p' | head -1; }

echo "mode: ${MEM[*]}, ${ROUNDS} rounds of ${SECS} s, ${LCORES:-1} lcore(s) from core ${CORE}, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-6s %12s %12s %8s %10s %10s' round "fwd-tcp" "splice" ratio "cyc/pkt" "cyc/pkt-sp"
[ "${MISS:-0}" = 1 ] && printf ' %12s %10s' "miss-rx" "cyc/pkt-mi"
echo
sum=0
for r in $(seq 1 "$ROUNDS"); do
  out=$("$NICEMU" fwd -c "$cfg" -d "$SECS" --template tcp 2>&1) || { echo "$out" >&2; exit 1; }
  f=$(echo "$out" | mpps); fc=$(echo "$out" | cpp)
  out=$("$NICEMU" fwd -c "$cfg" -d "$SECS" --splice 2>&1) || { echo "$out" >&2; exit 1; }
  s=$(echo "$out" | mpps); sc=$(echo "$out" | cpp)
  [ -n "${VERBOSE:-}" ] && echo "$out"
  ratio=$(awk -v a="$s" -v b="$f" 'BEGIN {printf "%.3f", a/b}')
  sum=$(awk -v s="$sum" -v x="$ratio" 'BEGIN {print s+x}')
  printf '%-6s %12s %12s %8s %10s %10s' "$r" "$f" "$s" "$ratio" "$fc" "$sc"
  if [ "${MISS:-0}" = 1 ]; then
    out=$("$NICEMU" fwd -c "$cfg" -d "$SECS" --splice --splice-miss 2>&1) || { echo "$out" >&2; exit 1; }
    printf ' %12s %10s' "$(echo "$out" | mpps)" "$(echo "$out" | cpp)"
  fi
  echo
done
awk -v s="$sum" -v n="$ROUNDS" 'BEGIN {printf "mean ratio splice/forward: %.3f\n", s/n}'
