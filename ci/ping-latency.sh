#!/bin/bash
# One PING at a time against `nicemu kv` or redis-server, as `redis-cli --latency` does it
# (a PING, its reply, then 10 ms of quiet), with the client's own latency percentiles.
#
#   ci/ping-latency.sh redis|nicemu [nicemu kv options...]
#   N=500 GAP=0.010 CFG=configs/af-packet.toml NICEMU=target/release/nicemu ci/ping-latency.sh nicemu
#
# Two namespaces joined by a veth pair, as `nicemu bench peers` makes them: the server's
# (192.0.2.1, nicemu over net_af_packet on its veth end, or redis-server on the kernel's
# stack) and the client's (192.0.2.2). Prints the python client's figures and the server's
# CPU (its namespace's processes, from /proc) over that run, then
# `redis-cli --latency --raw` over the same connection setup (min max avg samples, ms).
# Needs root, python3, redis-server and redis-tools. Everything is removed on exit.
set -u
cd "$(dirname "$0")/.."
N=${N:-500}; GAP=${GAP:-0.010}; CFG=${CFG:-configs/af-packet.toml}
NICEMU=${NICEMU:-target/release/nicemu}
S=nmping$$s; C=nmping$$c; P=nmping$$
mode=${1:?usage: ci/ping-latency.sh redis|nicemu [nicemu kv options...]}; shift
cleanup() {
    pkill -INT -f "file-prefix=$P" 2>/dev/null && sleep 3
    ip netns pids $S 2>/dev/null | xargs -r kill 2>/dev/null; sleep 0.3
    ip netns del $S 2>/dev/null; ip netns del $C 2>/dev/null; rm -rf /var/run/dpdk/$P
}
trap cleanup EXIT
ip netns add $S && ip netns add $C || exit 1
ip link add ${P}s netns $S type veth peer name ${P}c netns $C || exit 1
for ns in $S $C; do
    ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip netns exec $ns ip link set lo up
done
ip netns exec $S ethtool -K ${P}s tx off >/dev/null; ip netns exec $C ethtool -K ${P}c tx off >/dev/null
ip netns exec $S ip link set ${P}s up; ip netns exec $C ip link set ${P}c up
ip netns exec $C ip addr add 192.0.2.2/24 dev ${P}c
case $mode in
redis)
    ip netns exec $S ip addr add 192.0.2.1/24 dev ${P}s
    ip netns exec $S redis-server --bind 192.0.2.1 --port 6379 --save '' --appendonly no \
        --protected-mode no >/dev/null &
    ;;
nicemu)
    ip netns exec $S "$NICEMU" kv -c "$CFG" "$@" -- --vdev=net_af_packet0,iface=${P}s \
        --file-prefix=$P > /tmp/$P.log 2>&1 &
    ;;
*) echo "ci/ping-latency.sh: unknown server '$mode' (redis or nicemu)" >&2; exit 2 ;;
esac
up=
for _ in $(seq 100); do
    ip netns exec $C bash -c 'echo > /dev/tcp/192.0.2.1/6379' 2>/dev/null && { up=1; break; }
    sleep 0.2
done
[ -n "$up" ] || { echo "ci/ping-latency.sh: $mode did not listen on 192.0.2.1:6379" >&2; cat /tmp/$P.log 2>/dev/null; exit 1; }
sleep 1
# CPU of the server's processes (everything in its namespace) over the python run.
server_ticks() { ip netns pids $S | xargs -r -I{} awk '{print $14+$15}' /proc/{}/stat 2>/dev/null | awk '{s+=$1} END {print s+0}'; }
ticks0=$(server_ticks); t0=$(date +%s%N)
ip netns exec $C python3 - 192.0.2.1 6379 "$N" "$GAP" <<'PY'
import socket, statistics, sys, time
host, port, n, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
lat = []
for _ in range(n):
    t = time.perf_counter_ns()
    s.sendall(b"PING\r\n")
    reply = s.recv(64)
    lat.append((time.perf_counter_ns() - t) / 1000)
    if not reply.startswith(b"+PONG"):
        sys.exit(f"unexpected reply {reply!r}")
    time.sleep(gap)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"python PING: n={n} mean={statistics.mean(lat):.0f} p10={q(.1):.0f} p50={q(.5):.0f} "
      f"p90={q(.9):.0f} p99={q(.99):.0f} us")
PY
ticks1=$(server_ticks); t1=$(date +%s%N)
awk -v d=$((ticks1 - ticks0)) -v ns=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "server CPU over the python run: %.1f%% of a core\n", 100 * d / hz / (ns / 1e9)}'
echo "redis-cli --latency (min max avg samples, ms): $(ip netns exec $C redis-cli -h 192.0.2.1 --latency -i 2 --raw)"
