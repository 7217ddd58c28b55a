#!/usr/bin/env bash
# Redis's own test suite (tests/unit/... of a redis 7.0.15 source tree) against the shipped
# kv server as an external server: nicemu kv on net_af_packet (configs/af-packet.toml
# unchanged) in one network namespace, the suite's `runtest --host 192.0.2.1 --port 6379`
# in another, both made and removed by this script. SERVER=redis runs the same files against
# redis-server (the kernel's TCP on the same veth pair) as the baseline.
#
#   REDIS_SRC=/path/to/redis-7.0.15 ci/redis-suite.sh [FILE...]
#       A source tree: `git clone --branch 7.0.15 https://github.com/redis/redis` or Debian's
#       `apt-get source redis` (deb-src lines needed); runtest looks for its binaries in
#       src/: link them to Debian's (`ln -s /usr/bin/redis-server /usr/bin/redis-cli
#       /usr/bin/redis-benchmark src/`), no build needed.
#       FILE: unit/type/string, unit/keyspace, ... (default: the files below)
#   SERVER=nicemu|redis (nicemu), LOGDIR=dir (a temporary one; kept), needs root and
#   `cargo build --release -p apps --features dpdk` for nicemu.
#
# runtest options: --single FILE per file (one runtest per file, so one file's trouble
# cannot end the others), --durable (a test that raises a Tcl error, e.g. an unknown
# command's reply outside assert_error, is counted as failed and the file goes on; without
# it the whole file stops at the first such test), --clients 1, and --tags -needs:debug
# --tags -needs:repl: the tests that need DEBUG or replication, i.e. the server's internals
# (runtest's external mode already skips those tagged external:skip, e.g. persistence,
# and every test of unit/auth). The table counts runtest's [ok], [err] (assertion failures
# and exceptions) and skipped ([ignore] for tags, [skip]) lines per file.
# The names (nmrsuite-*, file prefix nicemu-rsuite) are outside ci/cleanup.sh's patterns, so
# a cleanup run by another job does not pull the namespaces from under a long suite run.
set -euo pipefail
REDIS_SRC=${REDIS_SRC:?set REDIS_SRC to a redis 7.0.15 source tree}
SERVER=${SERVER:-nicemu}
DEFAULT_FILES="unit/type/string unit/type/incr unit/type/list unit/type/hash unit/type/set
unit/type/zset unit/keyspace unit/expire unit/multi unit/pubsub unit/auth unit/info-command
unit/protocol"
FILES=${*:-$DEFAULT_FILES}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/nicemu
if [ "$SERVER" = nicemu ] && [ ! -x "$BIN" ]; then
  echo "cargo build --release -p apps --features dpdk first" >&2
  exit 2
fi
LOGDIR=${LOGDIR:-$(mktemp -d /tmp/nicemu-redis-suite.XXXXXX)}
mkdir -p "$LOGDIR"
S=nmrsuite-s C=nmrsuite-c
cleanup() {
  [ -n "${P:-}" ] && kill "$P" 2>/dev/null && wait "$P" 2>/dev/null
  ip netns del $S 2>/dev/null || true
  ip netns del $C 2>/dev/null || true
  rm -rf /var/run/dpdk/nicemu-rsuite "$LOGDIR/redis-dir"
}
trap cleanup EXIT
ip netns add $S
ip netns add $C
ip link add nmrsuite0 type veth peer name nmrsuite1
ip link set nmrsuite0 netns $S
ip link set nmrsuite1 netns $C
for n in $S $C; do
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec $n ip link set lo up
done
ip netns exec $S ethtool -K nmrsuite0 tx off >/dev/null
ip netns exec $C ethtool -K nmrsuite1 tx off >/dev/null
ip netns exec $S ip link set nmrsuite0 up
ip netns exec $C ip link set nmrsuite1 up
ip netns exec $C ip addr add 192.0.2.2/24 dev nmrsuite1

start_server() {
  if [ "$SERVER" = redis ]; then
    ip netns exec $S ip addr add 192.0.2.1/24 dev nmrsuite0 2>/dev/null || true
    mkdir -p "$LOGDIR/redis-dir"
    ip netns exec $S redis-server --bind 192.0.2.1 --port 6379 --protected-mode no \
      --save "" --appendonly no --dir "$LOGDIR/redis-dir" > "$LOGDIR/server.log" 2>&1 &
    P=$!
  else
    ip netns exec $S "$BIN" kv -c "$ROOT/configs/af-packet.toml" --no-pin -- \
      --file-prefix=nicemu-rsuite --vdev=net_af_packet0,iface=nmrsuite0 \
      > "$LOGDIR/server.log" 2>&1 &
    P=$!
  fi
  for _ in $(seq 100); do
    ip netns exec $C redis-cli -h 192.0.2.1 -p 6379 ping 2>/dev/null | grep -q PONG && return
    sleep 0.2
  done
  echo "the server did not answer" >&2
  exit 1
}

stop_server() {
  kill -INT "$P" 2>/dev/null || true
  wait "$P" 2>/dev/null || true
  P=
}

printf '%-22s %5s %5s %8s  %s\n' file ok err skipped "runtest status"
tot_ok=0 tot_err=0 tot_skip=0
for f in $FILES; do
  # A fresh server per file: a file's leftovers (settings, clients) do not leak.
  start_server
  log=$LOGDIR/$(echo "$f" | tr / _).log
  set +e
  (cd "$REDIS_SRC" && ip netns exec $C timeout 1800 ./runtest --host 192.0.2.1 --port 6379 \
    --single "$f" --clients 1 --durable --timeout 300 \
    --tags -needs:debug --tags -needs:repl) > "$log" 2>&1
  rc=$?
  set -e
  stop_server
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"   # runtest's colours
  ok=$(grep -c '^\[ok\]:' "$log" || true)
  err=$(grep -c '^\[err\]:' "$log" || true)
  skip=$(grep -cE '^\[(ignore|skip)\]:' "$log" || true)
  status="exit $rc"
  grep -q '^\[exception\]' "$log" && status="$status, exception (file aborted)"
  [ $rc = 124 ] && status="$status (timed out)"
  printf '%-22s %5d %5d %8d  %s\n' "$f" "$ok" "$err" "$skip" "$status"
  tot_ok=$((tot_ok + ok)) tot_err=$((tot_err + err)) tot_skip=$((tot_skip + skip))
done
printf '%-22s %5d %5d %8d\n' total "$tot_ok" "$tot_err" "$tot_skip"
echo "logs: $LOGDIR"
