#!/usr/bin/env bash
# libmtcp's cost: mtcp/tests/c/echo_server.c (mTCP's API through libmtcp) against
# `nicemu echo`, on the same net_memif configuration (one `shared` lcore each side, the load
# generator on the other core), alternating ROUNDS times: `nicemu loadgen`, 64 persistent
# connections, 64-byte echoes, SECONDS each. Needs `make build` and
# `cargo build --release -p nicemu-mtcp --features dpdk`.
#
#   ci/bench-mtcp-echo.sh [ROUNDS] [SECONDS]
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=$ROOT/target/release/nicemu
LIB=$ROOT/target/release
[ -x "$N" ] && [ -f "$LIB/libmtcp.so" ] || { echo "build first (see the header)" >&2; exit 2; }
D=$(mktemp -d /tmp/nicemu-bench-mtcp.XXXXXX)
trap 'rm -rf "$D" /var/run/dpdk/nicemu-bench-mtcp-e /var/run/dpdk/nicemu-bench-mtcp-l' EXIT
gcc -Wall -O2 -pthread -o "$D/echo_server" "$ROOT/mtcp/tests/c/echo_server.c" \
  -I"$ROOT/mtcp/include" -L"$LIB" -lmtcp -Wl,-rpath,"$LIB"
for side in 0 1; do
  role=$([ $side = 0 ] && echo server || echo client)
  n=$([ $side = 0 ] && echo e || echo l)
  cat > "$D/$n.toml" <<EOT
[eal]
args = ["--no-huge", "--no-pci", "-m", "512", "-l", "$side", "--file-prefix=nicemu-bench-mtcp-$n",
        "--vdev=net_memif0,role=$role,socket=$D/memif.sock,socket-abstract=no,id=0,mac=02:00:00:00:00:0$((side + 1))"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "net_memif0"
ipv4 = ["10.99.0.$((side + 1))/24"]
rss = "off"
[[lcore]]
core = $side
role = "shared"
EOT
done
printf 'num_cores = 1\nnicemu_config = %s/e.toml\n' "$D" > "$D/mtcp.conf"
one() {
  if [ "$1" = nicemu ]; then
    "$N" echo -c "$D/e.toml" > "$D/srv.log" 2>&1 &
  else
    "$D/echo_server" "$D/mtcp.conf" 7 1000000 $((SECS + 30)) 1 > "$D/srv.log" 2>&1 &
  fi
  local p=$!
  for _ in $(seq 100); do grep -q listening "$D/srv.log" && break; sleep 0.1; done
  "$N" loadgen -c "$D/l.toml" --server 10.99.0.1:7 --conns 64 -d "$SECS" > "$D/lg.log" 2>&1
  kill -INT $p; wait $p 2>/dev/null || true
  local rate errs
  rate=$(grep -oE '\(([0-9]+)/s\)' "$D/lg.log" | tail -1 | tr -dc 0-9)
  errs=$(grep -oE 'loadgen: errors [0-9]+' "$D/lg.log" | awk '{print $3}')
  echo "$1 $rate $errs"
}
printf '%-8s %12s %7s\n' server "trans/s" errors
for r in $(seq "$ROUNDS"); do
  for s in nicemu c; do one $s; done
done | tee "$D/rows" | awk '{printf "%-8s %12s %7s\n", $1, $2, $3}'
awk '$1 == "nicemu" {n += $2; k++} $1 == "c" {c += $2} END {printf "mean: c %.0f/s, nicemu %.0f/s, c/nicemu %.2fx\n", c / k, n / k, c / n}' "$D/rows"
