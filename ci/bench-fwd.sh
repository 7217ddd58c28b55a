#!/usr/bin/env bash
# Side-by-side forwarding benchmark (BENCHMARKS.md, "Forwarding"): `nicemu fwd` and
# `dpdk-testpmd --forward-mode=io` on the same two net_null vdevs, one forwarding core each,
# alternating, ROUNDS times. nicemu parses and classifies every frame (its mempools hold a
# 64-byte UDP/IPv4 frame, so net_null hands out real frames); testpmd only moves mbufs.
# `nicemu fwd --io` (no parsing, like testpmd's io mode) runs too, as a control that shows
# what nicemu's loop and port layer cost by themselves. Rates are Mpps over both ports.
#
# `EXTRA_MODES=macswap` also runs testpmd in other forwarding modes, for comparison with a
# testpmd that touches every frame (macswap reads and writes each Ethernet header). testpmd's
# pools are not pre-filled, so on net_null its frames are zeros: header-parsing modes (5tswap,
# csum) see no IPv4 and do less than they would on real traffic. The target ratio is the one
# against io mode.
#
#   ci/bench-fwd.sh                 # --no-huge (what tests use)
#   HUGE=1 ci/bench-fwd.sh          # 2 MB hugepages (reserved here if missing; needs root)
#   ROUNDS=5 SECONDS_EACH=5 CORE=1 ci/bench-fwd.sh
#   HUGE=1 EXTRA_MODES=macswap ci/bench-fwd.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_EACH:-5}
CORE=${CORE:-1}
NICEMU=${NICEMU:-./target/release/nicemu}
[ -x "$NICEMU" ] || { echo "build first: cargo build --release -p apps --features dpdk" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd missing: apt-get install dpdk-dev" >&2; exit 1; }

. ci/fwd-null.sh
MEM=(--no-huge -m 512)
if [ "${HUGE:-0}" = 1 ]; then
  hugepages_on
  MEM=("${HUGE_MEM[@]}")
fi
VDEVS=(--vdev=net_null0 --vdev=net_null1)
cfg=$(mktemp --suffix=.toml)
trap 'rm -f "$cfg"; dpdk_leftovers_rm nicemu-bench-nicemu nicemu-bench-testpmd' EXIT
fwd_null_config "$cfg" nicemu-bench-nicemu "${MEM[@]}"

# testpmd MODE: testpmd's Mpps over both ports in --forward-mode=MODE (the last stats period).
testpmd() {
  timeout -s INT $((SECS + 2)) dpdk-testpmd "${MEM[@]}" --no-pci --file-prefix=nicemu-bench-testpmd \
        -l 0,"$CORE" "${VDEVS[@]}" --log-level=warning -- --forward-mode="$1" --auto-start \
        --nb-cores=1 --stats-period=1 --total-num-mbufs=16384 2>&1 \
      | awk '/Rx-pps/ {v[n++]=$2} END {printf "%.3f", (v[n-1]+v[n-2])/1e6}' || true
}

echo "mode: ${MEM[*]}, ${ROUNDS} rounds of ${SECS} s, forwarding core ${CORE}, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-6s %12s %12s %12s %8s %8s %10s %10s\n' round "nicemu" "nicemu-io" "testpmd" ratio ratio-io "cyc/pkt" "cyc/pkt-io"
sum_ratio=0
sum_io=0
for r in $(seq 1 "$ROUNDS"); do
  out=$("$NICEMU" fwd -c "$cfg" -d "$SECS" --template udp 2>&1) || { echo "$out" >&2; exit 1; }
  nm=$(echo "$out" | awk '$1=="p0"||$1=="p1" {s+=$3} END {printf "%.3f", s}')
  cpp=$(echo "$out" | sed -n 's/.*: \([0-9.]*\) cycles\/pkt.*/\1/p' | head -1)
  out=$("$NICEMU" fwd -c "$cfg" -d "$SECS" --io 2>&1) || { echo "$out" >&2; exit 1; }
  io=$(echo "$out" | awk '$1=="p0"||$1=="p1" {s+=$3} END {printf "%.3f", s}')
  cpp_io=$(echo "$out" | sed -n 's/.*: \([0-9.]*\) cycles\/pkt.*/\1/p' | head -1)
  tp=$(testpmd io)
  ratio=$(awk -v a="$nm" -v b="$tp" 'BEGIN {printf "%.3f", a/b}')
  ratio_io=$(awk -v a="$io" -v b="$tp" 'BEGIN {printf "%.3f", a/b}')
  sum_ratio=$(awk -v s="$sum_ratio" -v x="$ratio" 'BEGIN {print s+x}')
  sum_io=$(awk -v s="$sum_io" -v x="$ratio_io" 'BEGIN {print s+x}')
  printf '%-6s %12s %12s %12s %8s %8s %10s %10s\n' "$r" "$nm" "$io" "$tp" "$ratio" "$ratio_io" "$cpp" "$cpp_io"
  for m in ${EXTRA_MODES:-}; do
    x=$(testpmd "$m")
    printf '       testpmd %-8s %8s Mpps, nicemu/testpmd-%s %s\n' "$m" "$x" "$m" \
      "$(awk -v a="$nm" -v b="$x" 'BEGIN {printf "%.3f", a/b}')"
  done
done
awk -v s="$sum_ratio" -v i="$sum_io" -v n="$ROUNDS" 'BEGIN {printf "mean ratio nicemu/testpmd: %.3f (parsing every frame), %.3f (io control, no parsing)\n", s/n, i/n}'
