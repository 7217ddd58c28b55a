#!/usr/bin/env bash
# Back-to-back connections to the shipped kv server: `redis-benchmark -k 0` (a new connection
# per request) from a kernel client, nicemu kv on net_af_packet with configs/af-packet.toml
# unchanged, both in network namespaces this script makes and removes.
#
#   ci/kv-connect-churn.sh [REQUESTS] [CLIENTS]      (100000, 4; needs root and `make build`)
#
# `-t ping` runs PING_INLINE and PING_MBULK: 2 x REQUESTS connections. The client's namespace
# sets net.ipv4.tcp_tw_reuse=1 (TW_REUSE=...): with Linux's default (2: loopback only) a
# client that closes first holds each port in TIME_WAIT for 60 s and runs out of its 28,232
# ephemeral ports long before 100,000 connections, whichever server it talks to.
set -euo pipefail
N=${1:-100000}
CONNS=${2:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/nicemu
[ -x "$BIN" ] || { echo "make build first" >&2; exit 2; }
S=nmtchurn-s C=nmtchurn-c
LOG=$(mktemp /tmp/nicemu-kv-churn.XXXXXX)
cleanup() {
  [ -n "${P:-}" ] && kill "$P" 2>/dev/null
  ip netns del $S 2>/dev/null || true
  ip netns del $C 2>/dev/null || true
  rm -rf /var/run/dpdk/nicemu-test-churn
}
trap cleanup EXIT
ip netns add $S
ip netns add $C
ip link add nmtchurn0 type veth peer name nmtchurn1
ip link set nmtchurn0 netns $S
ip link set nmtchurn1 netns $C
for n in $S $C; do
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec $n ip link set lo up
done
ip netns exec $S ethtool -K nmtchurn0 tx off >/dev/null
ip netns exec $C ethtool -K nmtchurn1 tx off >/dev/null
ip netns exec $S ip link set nmtchurn0 up
ip netns exec $C ip link set nmtchurn1 up
ip netns exec $C ip addr add 192.0.2.2/24 dev nmtchurn1
ip netns exec $C sysctl -qw net.ipv4.tcp_tw_reuse="${TW_REUSE:-1}"
ip netns exec $S "$BIN" kv -c "$ROOT/configs/af-packet.toml" --no-pin -- \
  --file-prefix=nicemu-test-churn --vdev=net_af_packet0,iface=nmtchurn0 > "$LOG" 2>&1 &
P=$!
for _ in $(seq 100); do grep -q listening "$LOG" && break; sleep 0.1; done
start=$(date +%s.%N)
ip netns exec $C timeout 600 redis-benchmark -h 192.0.2.1 -n "$N" -c "$CONNS" -k 0 -t ping -q 2>&1 \
  | tr '\r' '\n' | grep -v 'rps=' | grep -v '^ *$'
end=$(date +%s.%N)
kill -INT $P
wait $P || true
P=
echo "wall time: $(echo "$end - $start" | bc) s"
grep -E '^host 0|^offload setup|^offload teardown|^kv:|^drops' "$LOG"
rm -f "$LOG"
