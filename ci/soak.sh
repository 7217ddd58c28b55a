#!/usr/bin/env bash
# The soak: the shipped servers under their users' load for a long time, with faults injected
# on a schedule, their memory and connections recorded every minute.
#
#   ci/soak.sh [SECONDS] [OUTDIR]       (default 1800 s, target/soak; needs root)
#
# Three services, each on its own veth pair between two network namespaces this script makes
# (nothing in the caller's namespace; IPv6 off, `tx off` on the kernel's ends):
#   nicemu kv    (configs/af-packet.toml)  <- redis-benchmark loops (SET/GET/INCR/LPUSH/LPOP)
#   nicemu proxy (configs/proxy.toml)      <- wrk loops, nginx on 192.0.2.3 and .4 behind it
#   nicemu echo  (configs/af-packet.toml)  <- short connections from python, 5% random loss
#                                             both ways (cBPF `ld rand` filter, mirred to a
#                                             dead-end veth: this kernel has no netem)
# Faults, one every FAULT_EVERY seconds (60 by default), in turn: a SYN flood burst at kv
# (hping3, 5 s), the proxy's first nginx killed and restarted 15 s later, 20 proxy clients
# resetting mid-transfer (SO_LINGER 0 after 100 KB of a 10 MB response), the echo link
# flapped (down 2 s).
# Every SAMPLE_EVERY seconds (60) each server's RSS and its last stats line go to
# OUTDIR/samples.tsv. At the end the load stops, the servers get WIND_DOWN s (75: TIME_WAIT
# is 60 s) to close everything,
# and the script checks: each server's RSS within 10% of its value at 5 minutes (at a third
# of a run shorter than 15 minutes), no connection open on any server, the echo clients' bytes
# all intact, and load errors only where a fault explains them (reported, not failed: every
# client error is listed with the fault windows in OUTDIR/soak.md). Exit status 1 when a
# check fails.
set -uo pipefail
DUR=${1:-1800}
OUT=${2:-target/soak}
BIN=${NICEMU:-target/release/nicemu}
FAULT_EVERY=${FAULT_EVERY:-60}
SAMPLE_EVERY=${SAMPLE_EVERY:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ -x "$BIN" ] || { echo "soak: $BIN not built (make build)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/*.log "$OUT"/samples.tsv "$OUT"/faults.tsv "$OUT"/soak.md
SVCS="kv proxy echo"
LOSS_BPF="4,32 0 0 4294963256,53 0 1 214748365,6 0 0 0,6 0 0 4294967295"
PIDS=()

cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  pkill -f "nginx -c $OUT/nginx" 2>/dev/null
  sleep 1
  for s in $SVCS; do
    ip netns del "nmsoak-$s-s" 2>/dev/null
    ip netns del "nmsoak-$s-c" 2>/dev/null
    rm -rf "/var/run/dpdk/nicemu-soak-$s"
  done
}
trap cleanup EXIT

ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
now() { date +%s; }
T0=$(now)
t() { echo $(( $(now) - T0 )); }

# ---- topology
for s in $SVCS; do
  S=nmsoak-$s-s C=nmsoak-$s-c
  ip netns del $S 2>/dev/null; ip netns del $C 2>/dev/null
  ip netns add $S && ip netns add $C || exit 2
  ip link add nmsk-$s-s type veth peer name nmsk-$s-c || exit 2
  ip link set nmsk-$s-s netns $S && ip link set nmsk-$s-c netns $C
  for n in $S $C; do
    ns $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ns $n sysctl -qw net.ipv6.conf.default.disable_ipv6=1
    ns $n ip link set lo up
  done
  ns $S ethtool -K nmsk-$s-s tx off >/dev/null 2>&1
  ns $C ethtool -K nmsk-$s-c tx off >/dev/null 2>&1
  ns $S ip link set nmsk-$s-s up
  ns $C ip link set nmsk-$s-c up
  ns $C ip addr add 192.0.2.2/24 dev nmsk-$s-c
done
ns nmsoak-proxy-c ip addr add 192.0.2.3/24 dev nmsk-proxy-c
ns nmsoak-proxy-c ip addr add 192.0.2.4/24 dev nmsk-proxy-c
# Loss for echo, both directions, on the kernel's end.
ns nmsoak-echo-c ip link add nmsk-sink type veth peer name nmsk-sinkp
ns nmsoak-echo-c ip link set nmsk-sink up
ns nmsoak-echo-c ip link set dev nmsk-echo-c gso_max_segs 1
ns nmsoak-echo-c tc qdisc add dev nmsk-echo-c clsact
for dir in egress ingress; do
  ns nmsoak-echo-c tc filter add dev nmsk-echo-c $dir bpf bytecode "$LOSS_BPF" \
    action mirred egress redirect dev nmsk-sink || exit 2
done

# ---- nginx backends for the proxy
mkdir -p "$OUT/www"
head -c 1024 /dev/urandom > "$OUT/www/f1k"
head -c 102400 /dev/urandom > "$OUT/www/f100k"
head -c 10485760 /dev/urandom > "$OUT/www/f10m"
for b in 3 4; do
  cat > "$OUT/nginx$b.conf" <<EOF
daemon off;
worker_processes 1;
pid $OUT/nginx$b.pid;
error_log $OUT/nginx$b.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  server { listen 192.0.2.$b:8080 reuseport; root $OUT/www; }
}
EOF
done
declare -A NGX
start_nginx() {
  ip netns exec nmsoak-proxy-c nginx -c "$OUT/nginx$1.conf" >/dev/null 2>&1 &
  NGX[$1]=$!
  PIDS+=("${NGX[$1]}")
}
start_nginx 3; start_nginx 4

# ---- the servers, with the shipped configurations unchanged
# (`ip netns exec` execs the server, so $! is the server's own PID: its RSS, its SIGINT.)
declare -A SRV
start_server() {
  local s=$1 cmd cfg
  case $s in
    kv) cmd=kv; cfg=configs/af-packet.toml ;;
    proxy) cmd=proxy; cfg=configs/proxy.toml ;;
    echo) cmd=echo; cfg=configs/af-packet.toml ;;
  esac
  ip netns exec nmsoak-$s-s "$BIN" $cmd -c $cfg --no-pin -- --file-prefix=nicemu-soak-$s \
    --vdev=net_af_packet0,iface=nmsk-$s-s > "$OUT/$s.log" 2>&1 &
  SRV[$s]=$!
  PIDS+=("${SRV[$s]}")
}
for s in $SVCS; do start_server $s; done
for s in $SVCS; do
  for _ in $(seq 1 100); do grep -q "listening on" "$OUT/$s.log" && break; sleep 0.2; done
  grep -q "listening on" "$OUT/$s.log" || { echo "soak: $s did not start:"; cat "$OUT/$s.log"; exit 2; }
done
echo "soak: servers up at $(t) s; running ${DUR} s (faults every ${FAULT_EVERY} s, samples every ${SAMPLE_EVERY} s) into $OUT"

# ---- load (each loop runs until the stop file appears)
STOP="$OUT/stop"; rm -f "$STOP"
kv_load() {
  while [ ! -e "$STOP" ]; do
    echo "== $(t)"
    ns nmsoak-kv-c timeout 120 redis-benchmark -h 192.0.2.1 -p 6379 -n 20000 -c 20 \
      -t set,get,incr,lpush,lpop -q 2>&1 | tr '\r' '\n' | grep -v '^$' | grep -v 'rps=' | tail -6
    echo "exit $?"
  done
}
proxy_load() {
  while [ ! -e "$STOP" ]; do
    echo "== $(t)"
    ns nmsoak-proxy-c timeout 60 wrk -t1 -c16 -d20s --timeout 10s http://192.0.2.1/f1k 2>&1 \
      | grep -E 'requests in|Non-2xx|Socket errors'
  done
}
ECHO_PY='
import socket, sys, time, os
stop, sent, bad, errs = sys.argv[1], 0, 0, 0
while not os.path.exists(stop):
    try:
        s = socket.create_connection(("192.0.2.1", 7), timeout=10)
        msg = os.urandom(64)
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            c = s.recv(4096)
            if not c: break
            got += c
        s.close()
        sent += 1
        if got != msg: bad += 1
    except OSError as e:
        errs += 1
        print("error", int(time.time()), e, flush=True)
    if sent % 200 == 0: print("progress", int(time.time()), sent, bad, errs, flush=True)
print("done", sent, bad, errs, flush=True)
'
echo_load() { ns nmsoak-echo-c python3 -c "$ECHO_PY" "$STOP"; }
kv_load > "$OUT/load-kv.log" 2>&1 & PIDS+=($!)
proxy_load > "$OUT/load-proxy.log" 2>&1 & PIDS+=($!)
echo_load > "$OUT/load-echo.log" 2>&1 & ECHO_LOAD=$!; PIDS+=($ECHO_LOAD)

# ---- faults and samples
RESET_PY='
import socket, struct
for i in range(20):
    s = socket.create_connection(("192.0.2.1", 80), timeout=10)
    s.sendall(b"GET /f10m HTTP/1.1\r\nHost: x\r\n\r\n")
    got = 0
    while got < 100000:
        c = s.recv(65536)
        if not c: break
        got += len(c)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print("reset 20 clients")
'
fault() {
  local k=$1 start
  start=$(t)
  case $((k % 4)) in
    0) ns nmsoak-kv-c timeout 5 hping3 -q -S -p 6379 --flood 192.0.2.1 >/dev/null 2>&1
       name="syn flood at kv (5 s)" ;;
    1) kill "${NGX[3]}" 2>/dev/null; sleep 15; start_nginx 3
       name="nginx 192.0.2.3 killed, restarted after 15 s" ;;
    2) ns nmsoak-proxy-c timeout 60 python3 -c "$RESET_PY" >/dev/null 2>&1
       name="20 proxy clients reset mid-transfer" ;;
    3) ns nmsoak-echo-c ip link set nmsk-echo-c down; sleep 2
       ns nmsoak-echo-c ip link set nmsk-echo-c up
       name="echo link down for 2 s" ;;
  esac
  printf '%s\t%s\t%s\n' "$start" "$(t)" "$name" >> "$OUT/faults.tsv"
}
sample() {
  local s pid rss line
  for s in $SVCS; do
    pid=${SRV[$s]}
    rss=$(ps -o rss= -p "$pid" 2>/dev/null | tr -d ' ')
    line=$(grep -E 'open [0-9]+' "$OUT/$s.log" | grep -v '^host ' | tail -1 | sed 's/^ *//')
    printf '%s\t%s\t%s\t%s\n' "$(t)" "$s" "${rss:-dead}" "$line" >> "$OUT/samples.tsv"
  done
}
printf 'time_s\tservice\trss_kb\tlast stats line\n' > "$OUT/samples.tsv"
printf 'start_s\tend_s\tfault\n' > "$OUT/faults.tsv"
next_fault=$FAULT_EVERY; next_sample=0; k=0
while [ "$(t)" -lt "$DUR" ]; do
  if [ "$(t)" -ge "$next_sample" ]; then sample; next_sample=$((next_sample + SAMPLE_EVERY)); fi
  if [ "$(t)" -ge "$next_fault" ]; then fault $k; k=$((k + 1)); next_fault=$((next_fault + FAULT_EVERY)); fi
  for s in $SVCS; do
    kill -0 "${SRV[$s]}" 2>/dev/null || { echo "soak: $s died at $(t) s"; tail -20 "$OUT/$s.log"; exit 1; }
  done
  sleep 1
done

# ---- wind down and check: the load stops; connections the servers closed first sit in
# TIME_WAIT (60 s in the shipped configurations) before they count as gone.
touch "$STOP"
wait "$ECHO_LOAD" 2>/dev/null
sleep "${WIND_DOWN:-75}"
sample
fail=0
report="$OUT/soak.md"
{
  echo "# soak: ${DUR} s, $(date -u +%F)"
  echo
  echo "| service | RSS at first check (KB) | RSS at end (KB) | change | open at end |"
  echo "|---|---|---|---|---|"
} > "$report"
ref_t=300; [ "$DUR" -lt 900 ] && ref_t=$((DUR / 3))
for s in $SVCS; do
  ref=$(awk -F'\t' -v s=$s -v r=$ref_t 'NR>1 && $2==s && $1>=r {print $3; exit}' "$OUT/samples.tsv")
  end=$(awk -F'\t' -v s=$s 'NR>1 && $2==s {v=$3} END {print v}' "$OUT/samples.tsv")
  open=$(awk -F'\t' -v s=$s 'NR>1 && $2==s {v=$4} END {print v}' "$OUT/samples.tsv" | grep -oE 'open [0-9]+' | tail -1 | awk '{print $2}')
  pct=$(awk -v a="$ref" -v b="$end" 'BEGIN { if (a > 0) printf "%+.1f%%", (b - a) * 100 / a; else print "n/a" }')
  echo "| $s | $ref | $end | $pct | ${open:-?} |" >> "$report"
  awk -v a="$ref" -v b="$end" 'BEGIN { exit !(a > 0 && b <= a * 1.10) }' || { echo "soak: $s RSS grew $pct" >&2; fail=1; }
  [ "${open:-1}" = 0 ] || { echo "soak: $s still has ${open:-?} connections open" >&2; fail=1; }
done
{
  echo
  echo "## Load"
  echo
  echo '```'
  echo "kv (redis-benchmark rounds; lines with errors):"
  grep -c '^== ' "$OUT/load-kv.log"
  grep -iE 'error|refused|reset' "$OUT/load-kv.log" | sort | uniq -c | head -20
  echo "proxy (wrk rounds: requests, non-2xx, socket errors):"
  grep -E 'requests in' "$OUT/load-proxy.log" | awk '{n+=$1} END {print n " requests in " NR " rounds"}'
  grep -E 'Non-2xx|Socket errors' "$OUT/load-proxy.log" | sort | uniq -c | head -20
  echo "echo (python short connections):"
  tail -1 "$OUT/load-echo.log"
  echo '```'
  echo
  echo "## Faults"
  echo
  echo '```'
  cat "$OUT/faults.tsv"
  echo '```'
  echo
  echo "## Samples"
  echo
  echo '```'
  cat "$OUT/samples.tsv"
  echo '```'
} >> "$report"
bad=$(tail -1 "$OUT/load-echo.log" | awk '$1 == "done" {print $3}')
[ "${bad:-1}" = 0 ] || { echo "soak: echo returned different bytes ($bad)" >&2; fail=1; }
for s in $SVCS; do kill -INT "${SRV[$s]}" 2>/dev/null; done
sleep 3
for s in $SVCS; do
  echo; echo "## nicemu $s's summary"; echo; echo '```'
  sed -n '/== nicemu summary/,$p' "$OUT/$s.log" | head -40
  echo '```'
done >> "$report"
cat "$report"
[ $fail = 0 ] && echo "soak: all checks passed" || echo "soak: FAILED" >&2
exit $fail
