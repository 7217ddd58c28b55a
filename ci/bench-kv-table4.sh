#!/usr/bin/env bash
# AccelTCP Table 4's measurement with real processes (§6.2: Redis, one key-value transaction
# per connection): server CPU time per request of
#   (a) Debian's redis-server on the Linux kernel's TCP stack, and
#   (b) `nicemu kv` (the RESP2 server on nicemu's host stack, its NIC on DPDK's
#       net_af_packet), with AccelTCP's setup and teardown offloads and with --no-offload,
# each driven by the same `redis-benchmark -k $KEEPALIVE -t $TESTS -n $N -c $CONNS -d $VALUE`
# from a network namespace on the other end of a veth pair. Rounds alternate the servers
# (side by side, DESIGN.md: absolute times drift on shared machines).
#
# Topology (made here, removed at exit):
#   [netns nmkvc<ID>: redis-benchmark, 198.18.5.1/24 on nmkv<ID>c] --veth-- [nmkv<ID>s]
#   (a) nmkv<ID>s has 198.18.5.2/24 and redis-server listens on it (kernel TCP);
#   (b) nmkv<ID>s has no address; nicemu kv owns it through net_af_packet and answers as
#       198.18.5.2 itself (ARP, TCP, SYN cookies on its NIC lcore).
# Transmit checksum offload is off on both veth ends and IPv6 is off on the link
# (DESIGN.md principle 5).
#
# What "server CPU per request" is (all over the redis-benchmark run, per request: N per
# test that redis-benchmark finished, 2N for the default SET and GET):
#   raw: redis-server: utime+stime of the process (/proc/PID/stat fields 14+15, clock
#     ticks). nicemu kv: it busy-polls, so its /proc time is wall time (printed as "polling
#     bound"); its busy CPU comes from the "cpu total:" line of the summary it prints at
#     Ctrl-C: NIC busy + host busy over everything the loop accounted (a shared lcore
#     counts no cycle twice), times the process's CPU time over its whole life (outside the
#     benchmark it only idles).
#   The kernel's receive path runs in softirq on the core whose send made the packet (veth
#     hands it over in the sender's context; tick accounting charges softirq to the task it
#     interrupts and to /proc/stat's softirq column): the server's core does the client's
#     receive path, the client's core does the server's (the request path through the
#     kernel's TCP for redis-server, net_af_packet's copy into its ring for nicemu). So,
#     as `nicemu bench echo` counts the kernel (process + the client core's softirq), and
#     moving the client's receive path out:
#       server = raw - softirq(server core) + softirq(client core)
#       client = redis-benchmark's utime+stime (bash's `times`) - softirq(client core)
#                + softirq(server core)
#     and server + client = the two raw figures together.
#   host cores (nicemu): the host stack and application part of nicemu's busy time alone.
#     AccelTCP's NIC work runs on the SmartNIC, not on the server's cores; nicemu emulates
#     it on a core through a kernel socket (net_af_packet: a sendto per transmit burst).
#
# Usage (root; build first: cargo build --release -p apps --features dpdk):
#   ci/bench-kv-table4.sh
#   N=200000 CONNS=50 ROUNDS=3 KEEPALIVE=0 ci/bench-kv-table4.sh      # the defaults
#   KEEPALIVE=1 ci/bench-kv-table4.sh                                  # persistent connections
#   CONFIG=my-kv.toml ci/bench-kv-table4.sh    # a nicemu configuration of your own (its port
#                                              # must be net_af_packet0 with 198.18.5.2/24)
#   TESTS=ping,set,get,incr,mset PIPELINE=16 SERVERS=nicemu ROUNDS=1 ci/bench-kv-table4.sh
#                                              # other redis-benchmark tests, pipelined
# Environment: N, CONNS, VALUE (bytes, default 2 as in Table 4's USR workload), KEEPALIVE,
# TESTS (redis-benchmark -t, default set,get), PIPELINE (-P, default 1),
# ROUNDS, SERVERS (default "redis nicemu nicemu-no-offload"), NICEMU (binary), CONFIG,
# CORE_SERVER / CORE_CLIENT (cores for the server and for redis-benchmark; default 1 / 0),
# OUT (a directory for the raw outputs; default: a temporary one).
set -euo pipefail

# Paths given relative to where the script was started; then work from the checkout's root.
[ -n "${CONFIG:-}" ] && CONFIG=$(realpath "$CONFIG")
[ -n "${NICEMU:-}" ] && NICEMU=$(realpath "$NICEMU")
cd "$(dirname "$0")/.."

N=${N:-200000}
CONNS=${CONNS:-50}
VALUE=${VALUE:-2}
KEEPALIVE=${KEEPALIVE:-0}
TESTS=${TESTS:-set,get}
PIPELINE=${PIPELINE:-1}
ROUNDS=${ROUNDS:-3}
SERVERS=${SERVERS:-"redis nicemu nicemu-no-offload"}
NICEMU=${NICEMU:-target/release/nicemu}
CORE_SERVER=${CORE_SERVER:-1}
CORE_CLIENT=${CORE_CLIENT:-0}
PORT=6379
ID=$(( $$ % 100000 ))
NS=nmkvc$ID
VC=nmkv${ID}c   # in the namespace: the client side
VS=nmkv${ID}s   # outside: the server side
CLIENT_IP=198.18.5.1
SERVER_IP=198.18.5.2
OUT=${OUT:-$(mktemp -d /tmp/nicemu-kv-table4.XXXXXX)}
mkdir -p "$OUT"
TICK_NS=$(( 1000000000 / $(getconf CLK_TCK) ))

for tool in redis-server redis-benchmark redis-cli ip ethtool taskset; do
  command -v "$tool" >/dev/null || { echo "bench-kv-table4: $tool missing (apt-get install redis-server redis-tools iproute2 ethtool util-linux)" >&2; exit 1; }
done
if [[ " $SERVERS " == *" nicemu"* ]]; then
  [ -x "$NICEMU" ] || { echo "bench-kv-table4: $NICEMU missing (cargo build --release -p apps --features dpdk)" >&2; exit 1; }
  "$NICEMU" kv --help >/dev/null 2>&1 || { echo "bench-kv-table4: this nicemu has no 'kv' subcommand yet" >&2; exit 1; }
fi
[ "$(id -u)" -eq 0 ] || { echo "bench-kv-table4: needs root (namespaces, veth)" >&2; exit 1; }

SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -INT "$SERVER_PID" 2>/dev/null || true
    sleep 1
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  ip link del "$VS" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "/var/run/dpdk/nmkv$ID"
}
trap cleanup EXIT INT TERM

ip netns add "$NS"
ip link add "$VS" type veth peer name "$VC" netns "$NS"
for dev in "$VS"; do
  sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
  ethtool -K "$dev" tx off >/dev/null
  ip link set "$dev" up
done
ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$VC.disable_ipv6=1"
ip netns exec "$NS" ethtool -K "$VC" tx off >/dev/null
ip -n "$NS" addr add "$CLIENT_IP/24" dev "$VC"
ip -n "$NS" link set "$VC" up
ip -n "$NS" link set lo up
# The client opens ~N connections per test: reuse TIME_WAIT ports as redis-benchmark expects.
ip netns exec "$NS" sysctl -qw net.ipv4.tcp_tw_reuse=1
ip netns exec "$NS" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"

if [ -z "${CONFIG:-}" ]; then
  CONFIG=$OUT/kv.toml
  cat >"$CONFIG" <<EOF
# Generated by ci/bench-kv-table4.sh: nicemu kv on net_af_packet0, one shared lcore (NIC,
# host stack and the key-value server in one loop) on core $CORE_SERVER.
[eal]
args = ["--no-huge", "--no-pci", "-m", "512", "--file-prefix=nmkv$ID"]

[[port]]
name = "p0"
driver = "dpdk"
device = "net_af_packet0"
ipv4 = ["$SERVER_IP/24"]
rss = "off"

[[lcore]]
core = $CORE_SERVER
role = "shared"
EOF
fi

cpu_ticks() { # utime + stime of process $1 (fields after the ")" that ends the name)
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

wait_ready() { # until the server answers PING from the namespace (30 s at most)
  for _ in $(seq 300); do
    if ip netns exec "$NS" redis-cli -h "$SERVER_IP" -p $PORT ping 2>/dev/null | grep -q PONG; then
      return 0
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "bench-kv-table4: the server exited" >&2; return 1
    fi
    sleep 0.1
  done
  echo "bench-kv-table4: the server did not answer PING in 30 s" >&2
  return 1
}

run_client() { # redis-benchmark from the namespace: its CSV into $1, its CPU times into $1.times
  ip netns exec "$NS" taskset -c "$CORE_CLIENT" bash -c '
    redis-benchmark "$@" --csv >"$0" 2>&1; st=$?; times >"$0.times"; exit $st' "$1" \
    -h "$SERVER_IP" -p $PORT -k "$KEEPALIVE" -t "$TESTS" -P "$PIPELINE" -n "$N" -c "$CONNS" -d "$VALUE"
}

softirq_ticks() { # the softirq column of core $1 in /proc/stat
  awk -v c="cpu$1" '$1 == c { print $8 }' /proc/stat
}

child_ns() { # the children's user + system time of a `times` output, in ns
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
                 printf "%.0f", n * 1e9 }' "$1"
}

start_server() { # $1: redis | nicemu | nicemu-no-offload; $2: log file
  case "$1" in
    redis)
      ip addr add "$SERVER_IP/24" dev "$VS"
      taskset -c "$CORE_SERVER" redis-server --bind "$SERVER_IP" --port $PORT --save "" \
        --appendonly no --protected-mode no --daemonize no >"$2" 2>&1 &
      SERVER_PID=$! ;;
    nicemu|nicemu-no-offload)
      ip addr flush dev "$VS"
      local extra=()
      [ "$1" = nicemu-no-offload ] && extra=(--no-offload)
      "$NICEMU" kv -c "$CONFIG" --port $PORT "${extra[@]}" -- \
        "--vdev=net_af_packet0,iface=$VS" >"$2" 2>&1 &
      SERVER_PID=$! ;;
  esac
}

stop_server() {
  kill -INT "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
  ip addr flush dev "$VS"
}

echo "bench-kv-table4: redis-benchmark -k $KEEPALIVE -t $TESTS -P $PIPELINE -n $N -c $CONNS -d $VALUE, $ROUNDS round(s), server core $CORE_SERVER, client core $CORE_CLIENT; raw outputs in $OUT"
printf '%-6s %-18s %9s %9s %9s %9s %9s %9s %10s %9s %9s %9s\n' round server "SET rps" "GET rps" \
  "raw ns" "sirq srv" "sirq cli" "server" "host cores" client total "poll bound"
RESULTS=$OUT/results.tsv
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
  for srv in $SERVERS; do
    log=$OUT/$srv.$round.log
    csv=$OUT/$srv.$round.csv
    start_server "$srv" "$log"
    wait_ready
    t0=$(cpu_ticks "$SERVER_PID")
    s0=$(softirq_ticks "$CORE_SERVER"); c0=$(softirq_ticks "$CORE_CLIENT")
    run_client "$csv"
    t1=$(cpu_ticks "$SERVER_PID")
    s1=$(softirq_ticks "$CORE_SERVER"); c1=$(softirq_ticks "$CORE_CLIENT")
    stop_server
    set_rps=$(sed -nE 's/^"SET","([0-9.]+)".*/\1/p' "$csv")
    get_rps=$(sed -nE 's/^"GET","([0-9.]+)".*/\1/p' "$csv")
    # Every test redis-benchmark finished is a row "NAME","rps",...: N requests each.
    tests_done=$(grep -cE '^"[A-Z_ ()0-9]+","[0-9.]+"' "$csv" || true)
    if grep -qiE 'error|unexpected' "$csv" || [ "$tests_done" -eq 0 ]; then
      echo "bench-kv-table4: $srv round $round: redis-benchmark reported errors or finished no test:" >&2
      grep -iE 'error|unexpected' "$csv" | sort | uniq -c | head >&2 || true
    fi
    sed -nE 's/^"([^"]+)","([0-9.]+)".*/  \1 \2 requests\/s/p' "$csv" >"$csv.rps"
    [ "$TESTS" = set,get ] || { echo "  ($srv round $round)"; cat "$csv.rps"; }
    REQUESTS=$(( N * (tests_done > 0 ? tests_done : 1) ))
    run_ns=$(( (t1 - t0) * TICK_NS / REQUESTS ))
    sirq_srv=$(( (s1 - s0) * TICK_NS / REQUESTS ))
    sirq_cli=$(( (c1 - c0) * TICK_NS / REQUESTS ))
    client_raw=$(( $(child_ns "$csv.times") / REQUESTS ))
    if [ "$srv" = redis ]; then
      raw_ns=$run_ns; host_ns="-"; bound="-"
    else
      # "cpu total: nic busy A s idle B s; host busy H s (...) idle I s": the busy shares
      # of everything accounted, times the process's CPU over its life.
      read -r raw_ns host_ns < <(sed -nE 's/^cpu total: nic busy ([0-9.]+) s idle ([0-9.]+) s; host busy ([0-9.]+) s .* idle ([0-9.]+) s$/\1 \2 \3 \4/p' "$log" |
        awk -v t="$t1" -v k="$TICK_NS" -v r="$REQUESTS" '{ all = $1 + $2 + $3 + $4
          if (all > 0) printf "%.0f %.0f\n", ($1 + $3) / all * t * k / r, $3 / all * t * k / r }')
      raw_ns=${raw_ns:-?}; host_ns=${host_ns:-?}
      bound=$run_ns
    fi
    server_ns="?"; total_ns="?"
    client_ns=$(( client_raw - sirq_cli + sirq_srv ))
    if [ "$raw_ns" != "?" ]; then
      server_ns=$(( raw_ns - sirq_srv + sirq_cli ))
      total_ns=$(( raw_ns + client_raw ))
    fi
    printf '%-6s %-18s %9s %9s %9s %9s %9s %9s %10s %9s %9s %9s\n' "$round" "$srv" "${set_rps:-?}" "${get_rps:-?}" \
      "$raw_ns" "$sirq_srv" "$sirq_cli" "$server_ns" "$host_ns" "$client_ns" "$total_ns" "$bound"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$srv" "${set_rps:-}" "${get_rps:-}" \
      "$raw_ns" "$sirq_srv" "$sirq_cli" "$server_ns" "$host_ns" "$client_ns" "$total_ns" "$bound" >>"$RESULTS"
  done
done
echo
echo "medians over rounds (ns per request; in brackets redis-server's server figure / this one, so 3.00x = a third of the CPU):"
awk -F'\t' '
  { for (c = 5; c <= 11; c++) v[$2, c] = v[$2, c] " " $c; seen[$2] = 1 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function ratio(base, m) { return (base > 0 && m > 0) ? sprintf(" (%.2fx)", base / m) : "" }
  END {
    printf "  %-18s %10s %10s %10s %16s %16s %10s %16s\n", "server", "raw", "sirq srv", "sirq cli", "server", "host cores", "client", "total"
    base = ("redis" in seen) ? median(v["redis", 8]) : 0
    tbase = ("redis" in seen) ? median(v["redis", 11]) : 0
    for (s in seen) {
      m = median(v[s, 8]); h = (s == "redis") ? 0 : median(v[s, 9]); t = median(v[s, 11])
      printf "  %-18s %10.0f %10.0f %10.0f %16s %16s %10.0f %16s\n", s, median(v[s, 5]), median(v[s, 6]),
        median(v[s, 7]), sprintf("%.0f%s", m, ratio(base, m)),
        (s == "redis") ? "-" : sprintf("%.0f%s", h, ratio(base, h)), median(v[s, 10]),
        sprintf("%.0f%s", t, ratio(tbase, t))
    }
  }' "$RESULTS"
