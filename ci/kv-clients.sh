#!/usr/bin/env bash
# Real Redis clients against the shipped kv: `redis-cli --pipe` mass insertion of KEYS keys
# (the protocol stream redis's docs recommend, generated here), then redis-py (Debian's
# python3-redis) through strings, counters, hashes, lists, sets, sorted sets, a MULTI/EXEC
# pipeline, a 1,000-command pipeline, expiry and SCAN. nicemu kv runs on net_af_packet with
# configs/af-packet.toml unchanged, in network namespaces this script makes and removes.
#
#   ci/kv-clients.sh [KEYS]        (1000000; needs root, `make build` and python3-redis)
set -euo pipefail
N=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/nicemu
[ -x "$BIN" ] || { echo "make build first" >&2; exit 2; }
PY=python3
$PY -c 'import redis' 2>/dev/null || PY=/usr/bin/python3
$PY -c 'import redis' || { echo "needs python3-redis (apt-get install python3-redis)" >&2; exit 2; }
S=nmtkvc-s C=nmtkvc-c
TMP=$(mktemp -d /tmp/nicemu-kv-clients.XXXXXX)
cleanup() {
  [ -n "${P:-}" ] && kill "$P" 2>/dev/null
  ip netns del $S 2>/dev/null || true
  ip netns del $C 2>/dev/null || true
  rm -rf "$TMP" /var/run/dpdk/nicemu-test-kvc
}
trap cleanup EXIT
ip netns add $S
ip netns add $C
ip link add nmtkvc0 type veth peer name nmtkvc1
ip link set nmtkvc0 netns $S
ip link set nmtkvc1 netns $C
for n in $S $C; do
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec $n ip link set lo up
done
ip netns exec $S ethtool -K nmtkvc0 tx off >/dev/null
ip netns exec $C ethtool -K nmtkvc1 tx off >/dev/null
ip netns exec $S ip link set nmtkvc0 up
ip netns exec $C ip link set nmtkvc1 up
ip netns exec $C ip addr add 192.0.2.2/24 dev nmtkvc1
ip netns exec $S "$BIN" kv -c "$ROOT/configs/af-packet.toml" --no-pin -- \
  --file-prefix=nicemu-test-kvc --vdev=net_af_packet0,iface=nmtkvc0 > "$TMP/kv.log" 2>&1 &
P=$!
for _ in $(seq 100); do grep -q listening "$TMP/kv.log" && break; sleep 0.1; done
$PY - "$N" > "$TMP/mass.txt" <<'PYEOF'
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k = b"key:%d" % i
    v = b"value:%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PYEOF
start=$(date +%s.%N)
ip netns exec $C redis-cli -h 192.0.2.1 --pipe < "$TMP/mass.txt"
end=$(date +%s.%N)
echo "mass insertion of $N keys: $(echo "$end - $start" | bc) s"
[ "$(ip netns exec $C redis-cli -h 192.0.2.1 dbsize)" = "$N" ] || { echo "DBSIZE is not $N" >&2; exit 1; }
[ "$(ip netns exec $C redis-cli -h 192.0.2.1 get key:$((N - 1)))" = "value:$((N - 1))" ] || { echo "last key wrong" >&2; exit 1; }
ip netns exec $C $PY - <<'PYEOF'
import redis
r = redis.Redis(host="192.0.2.1", port=6379)
assert r.ping()
r.set("a", "1"); assert r.get("a") == b"1"
assert r.incr("n") == 1 and r.incr("n", 5) == 6
r.hset("h", mapping={"f1": "v1", "f2": "v2"}); assert r.hgetall("h") == {b"f1": b"v1", b"f2": b"v2"}
r.rpush("l", 1, 2, 3); assert r.lrange("l", 0, -1) == [b"1", b"2", b"3"]
r.sadd("s", "x", "y"); assert r.smembers("s") == {b"x", b"y"}
r.zadd("z", {"a": 1, "b": 2}); assert r.zrange("z", 0, -1, withscores=True) == [(b"a", 1.0), (b"b", 2.0)]
p = r.pipeline(transaction=True); p.set("t", "v"); p.incr("tc"); p.get("t")
assert p.execute() == [True, 1, b"v"]
p = r.pipeline(transaction=False)
for i in range(1000):
    p.set(f"pk{i}", i)
assert all(p.execute())
assert r.expire("a", 100) and 0 < r.ttl("a") <= 100
assert len(set(r.scan_iter(match="pk*", count=100))) == 1000
print("redis-py", redis.__version__, "ok")
PYEOF
kill -INT $P
wait $P || true
P=
grep -E '^kv:' "$TMP/kv.log"
