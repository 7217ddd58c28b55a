#!/usr/bin/env bash
# Multi-core scaling over net_memif: `nicemu echo` (64-byte echoes) or `nicemu kv` (SET+GET)
# with N server core pairs (N NIC lcores + N host lcores, one memif queue pair each) against
# `nicemu loadgen` with N shared lcores (client queue i <-> server queue i), for each N.
# PORT=af_packet runs the same over a veth pair instead: two network namespaces made (and
# removed) by this script, server and load generator each on its veth end as net_af_packet
# with qpairs=N (the kernel's packet fanout spreads flows over the queues; the lcores steer
# the replies of the generator's connections to the context that opened them).
#
#   ci/scale-memif.sh [WORKS] [PAIRS] [SECONDS] [ROUNDS]     ("echo kv", "1 2 4", 5, 2)
#   PORT=af_packet ci/scale-memif.sh "echo kv" "1 2 4 8"
#
# Cores: server NIC lcores on 0..N-1, server host lcores on N..2N-1, client lcores on
# 2N..3N-1, so N pairs need 3N cores; where 3N exceeds the usable cores the server runs N
# shared lcores (NIC and host in one loop, cores 0..N-1, client on N..2N-1) instead and the
# row says so (LAYOUT=shared: shared lcores for every N). `nicemu kv` serves one keyspace
# from its N host contexts (the engine under one lock: apps::kv::keyspace). Every run polls
# (`poll = "spin"`, pinned): this measures dedicated cores.
#
# NICEMU: the binary (default target/release/nicemu; on a machine without DPDK, the devkit's
# "target/devkit/run nicemu" with EXTRA_EAL naming its drivers, see ../shared/tools/devkit.sh).
# Prints one line per run and, per work, txn/s by N with each added pair's gain as a share of
# the first pair's rate (the target: at least 0.8 up to 4 pairs).
set -euo pipefail
WORKS=${1:-"echo kv"}
PAIRS=${2:-"1 2 4"}
SECS=${3:-5}
ROUNDS=${4:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
read -r -a NICEMU <<< "${NICEMU:-$ROOT/target/release/nicemu}"
EXTRA_EAL=${EXTRA_EAL:-}
NCPU=$(nproc)
PORT=${PORT:-memif}
TMP=$(mktemp -d /tmp/nicemu-scale.XXXXXX)
SRV_PID=
NS_S=nicemu-scale-s-$$
NS_C=nicemu-scale-c-$$
cleanup() {
  [ -n "$SRV_PID" ] && kill -INT "$SRV_PID" 2>/dev/null && sleep 1
  [ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null || true
  if [ "$PORT" = af_packet ]; then
    ip netns del "$NS_S" 2>/dev/null || true
    ip netns del "$NS_C" 2>/dev/null || true
  fi
  rm -rf "$TMP" /var/run/dpdk/nicemu-scale-*
}
trap cleanup EXIT
case "$PORT" in
  memif) IN_S=() IN_C=() ;;
  af_packet)
    # Two namespaces joined by a veth pair (sv0 in the server's, cv0 in the client's): no
    # kernel address on either end, IPv6 and transmit offloads off.
    ip netns add "$NS_S"
    ip netns add "$NS_C"
    ip link add sv0 netns "$NS_S" type veth peer name cv0 netns "$NS_C"
    for x in "$NS_S sv0" "$NS_C cv0"; do
      set -- $x
      ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
      ip netns exec "$1" ethtool -K "$2" tx off >/dev/null 2>&1 || true
      ip netns exec "$1" ip link set "$2" up
      ip netns exec "$1" ip link set lo up
    done
    set --
    IN_S=(ip netns exec "$NS_S") IN_C=(ip netns exec "$NS_C") ;;
  *) echo "PORT: memif or af_packet, not $PORT" >&2; exit 2 ;;
esac

eal_list() { # extra EAL args as TOML list items
  local out="" a
  for a in $EXTRA_EAL; do out+=", \"$a\""; done
  printf '%s' "$out"
}

# config ROLE(server|client) N LAYOUT(pair|shared) FILE
config() {
  local role=$1 n=$2 layout=$3 f=$4 k lc="" ip mac prefix base
  if [ "$role" = server ]; then ip=10.98.0.1 mac=02:00:00:00:00:01; else ip=10.98.0.2 mac=02:00:00:00:00:02; fi
  prefix=nicemu-scale-$role
  local vdev="net_memif0,role=$role,socket=$TMP/memif.sock,socket-abstract=no,id=0,mac=$mac"
  local dev=net_memif0
  if [ "$PORT" = af_packet ]; then
    dev=net_af_packet0
    if [ "$role" = server ]; then vdev="$dev,iface=sv0,qpairs=$n"; else vdev="$dev,iface=cv0,qpairs=$n"; fi
  fi
  for ((k = 0; k < n; k++)); do
    if [ "$role" = client ]; then
      if [ "$layout" = pair ]; then base=$((2 * n)); else base=$n; fi
      lc+="[[lcore]]\ncore = $((base + k))\nrole = \"shared\"\n"
    elif [ "$layout" = pair ]; then
      lc+="[[lcore]]\ncore = $k\nrole = \"nic\"\n"
    else
      lc+="[[lcore]]\ncore = $k\nrole = \"shared\"\n"
    fi
  done
  if [ "$role" = server ] && [ "$layout" = pair ]; then
    for ((k = 0; k < n; k++)); do lc+="[[lcore]]\ncore = $((n + k))\nrole = \"host\"\n"; done
  fi
  printf '[eal]\nargs = ["--no-huge", "--no-pci", "-m", "1024", "--file-prefix=%s", "--vdev=%s"%s]\n[runtime]\nstats_interval_s = 0.0\npoll = "spin"\nmbufs = 65536\n[[port]]\nname = "p0"\ndriver = "dpdk"\ndevice = "%s"\nipv4 = ["%s/24"]\nrss = "off"\n%b' \
    "$prefix" "$vdev" "$(eal_list)" "$dev" "$ip" "$lc" > "$f"
}

run_one() { # WORK N -> prints "txn/s layout"
  local work=$1 n=$2 layout=${LAYOUT:-pair} port proto
  [ $((3 * n)) -le "$NCPU" ] || layout=shared
  [ $((2 * n)) -le "$NCPU" ] || { echo "0 too-few-cores"; return; }
  config server "$n" "$layout" "$TMP/s.toml"
  config client "$n" "$layout" "$TMP/c.toml"
  if [ "$work" = echo ]; then port=7 proto=echo; else port=6379 proto=redis; fi
  local sargs=("$work" -c "$TMP/s.toml")
  [ "$work" = echo ] && sargs+=(--size 64)
  "${IN_S[@]}" "${NICEMU[@]}" "${sargs[@]}" > "$TMP/server.log" 2>&1 &
  SRV_PID=$!
  for _ in $(seq 200); do grep -q listening "$TMP/server.log" && break; sleep 0.1; done
  grep -q listening "$TMP/server.log" || { cat "$TMP/server.log" >&2; exit 1; }
  "${IN_C[@]}" "${NICEMU[@]}" loadgen -c "$TMP/c.toml" --server 10.98.0.1:$port --proto $proto --size 64 \
    --conns $((128 * n)) -d "$SECS" --connect-timeout-ms 10000 > "$TMP/lg.log" 2>&1 || {
    cat "$TMP/lg.log" >&2
  }
  local st=0
  kill -INT "$SRV_PID" 2>/dev/null || echo "server exited before the end of the run" >&2
  wait "$SRV_PID" || st=$?
  SRV_PID=
  if [ "$st" -ne 0 ]; then
    echo "server ($work, $n pairs, $layout) exited with status $st; its log ends:" >&2
    tail -25 "$TMP/server.log" >&2
    echo "loadgen's log ends:" >&2
    tail -8 "$TMP/lg.log" >&2
  fi
  local tps
  tps=$(grep -m1 -E "^loadgen: transactions" "$TMP/lg.log" | grep -oE '\([0-9]+/s\)' | grep -oE '[0-9]+' || true)
  local errs
  errs=$(grep -m1 -E "^loadgen: errors" "$TMP/lg.log" | grep -oE 'errors [0-9]+' | grep -oE '[0-9]+' || echo "?")
  echo "${tps:-0} $layout $errs"
  rm -rf /var/run/dpdk/nicemu-scale-*
}

declare -A R
for round in $(seq "$ROUNDS"); do
  for work in $WORKS; do
    for n in $PAIRS; do
      read -r tps layout errs < <(run_one "$work" "$n")
      echo "round $round $work pairs $n ($layout): $tps txn/s, errors $errs"
      R[$work,$n]="${R[$work,$n]:-} $tps"
    done
  done
done
echo
echo "medians (txn/s) and each added pair's gain / the first pair's rate:"
for work in $WORKS; do
  first=
  prev=
  prevn=
  for n in $PAIRS; do
    med=$(printf '%s\n' ${R[$work,$n]} | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
    gain="-"
    if [ -z "$first" ]; then first=$med; else
      gain=$(awk -v m="$med" -v p="$prev" -v f="$first" -v a="$n" -v b="$prevn" 'BEGIN {printf "%.2f", (m - p) / (a - b) / f}')
    fi
    printf '%-5s pairs %2s: %12.0f txn/s  x%.2f of 1 pair  added-pair gain %s\n' "$work" "$n" "$med" "$(awk -v m="$med" -v f="$first" 'BEGIN {print m / f}')" "$gain"
    prev=$med prevn=$n
  done
done
