#!/usr/bin/env bash
# libmtcp's soak: mtcp/tests/c/soak.c -- THREADS threads, each with its own mTCP context,
# each keeping CONNS connections going (connect, send 1..64 KB, check the echo, close; some
# aborted, some closed half read) -- against `nicemu echo` over net_memif, for SECONDS.
# Every REPORT seconds it records both processes' resident memory (VmRSS); at the end it
# checks that each process's last sample is within 10% of its sample at 5 minutes (or at a
# twelfth of a shorter run), that the client saw no error, and that the echo server ended
# with every connection closed. Release builds.
#
#   bash ci/mtcp-soak.sh [SECONDS=3600] [THREADS=2] [REPORT=60] [CONNS=8]
#
# Output: target/mtcp-soak/{soak.out,echo.out,rss.tsv}. Needs gcc; runs as root (DPDK).
set -euo pipefail
SECONDS_RUN=${1:-3600}
THREADS=${2:-2}
REPORT=${3:-60}
CONNS=${4:-8}
cd "$(dirname "$0")/.."
OUT=target/mtcp-soak
rm -rf "$OUT"; mkdir -p "$OUT"
cargo build -q --release -p nicemu-mtcp -p apps --features dpdk
LIB=$PWD/target/release
gcc -Wall -Wextra -Werror -O2 -g -pthread -o "$OUT/soak" mtcp/tests/c/soak.c \
  -Imtcp/include -L"$LIB" -lmtcp -Wl,-rpath,"$LIB"

pid=$$
sock=$PWD/$OUT/memif.sock
cores=$(seq -s, 0 $((THREADS - 1)))
side() { # role mac-suffix prefix
  local lcores=""
  for c in $(seq 0 $((THREADS - 1))); do
    lcores+=$'[[lcore]]\n'"core = $c"$'\nrole = "shared"\n'
  done
  cat <<T
[eal]
args = ["--no-huge", "--no-pci", "-m", "512", "-l", "$cores", "--file-prefix=$3",
        "--vdev=net_memif0,role=$1,socket=$sock,socket-abstract=no,id=0,mac=02:00:00:00:00:0$2"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "net_memif0"
ipv4 = ["10.97.0.$2/24"]
rss = "off"
$lcores
T
}
SP=nicemu-mtcp-soak-s-$pid; CP=nicemu-mtcp-soak-c-$pid
side server 1 "$SP" > "$OUT/server.toml"
side client 2 "$CP" > "$OUT/client.toml"
printf 'num_cores = %s\nmax_concurrency = 4096\nrcvbuf = 65536\nsndbuf = 65536\nnicemu_config = client.toml\n' \
  "$THREADS" > "$OUT/client.conf"

cleanup() {
  kill "${ECHO:-}" "${SOAK:-}" 2>/dev/null || true
  rm -rf "/var/run/dpdk/$SP" "/var/run/dpdk/$CP"
}
trap cleanup EXIT

./target/release/nicemu echo -c "$OUT/server.toml" --port 7 >"$OUT/echo.out" 2>&1 &
ECHO=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$OUT/soak" "$OUT/client.conf" 10.97.0.1 7 "$THREADS" "$SECONDS_RUN" "$REPORT" "$CONNS" \
  >"$OUT/soak.out" 2>&1 &
SOAK=$!

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
printf 't_s\tsoak_rss_kb\techo_rss_kb\n' | tee "$OUT/rss.tsv"
start=$(date +%s)
while kill -0 "$SOAK" 2>/dev/null; do
  sleep "$REPORT"
  kill -0 "$SOAK" 2>/dev/null || break
  printf '%s\t%s\t%s\n' $(( $(date +%s) - start )) "$(rss $SOAK)" "$(rss $ECHO)" | tee -a "$OUT/rss.tsv"
done
rc=0; wait "$SOAK" || rc=$?
kill -INT "$ECHO"; wait "$ECHO" || true
tail -3 "$OUT/soak.out"
tail -2 "$OUT/echo.out"

base_t=$(( SECONDS_RUN / 12 < 300 ? SECONDS_RUN / 12 : 300 ))
verdict=$(awk -v bt="$base_t" 'NR > 1 && $1 >= bt && !b { b = 1; s0 = $2; e0 = $3 }
  NR > 1 { s = $2; e = $3 }
  END { ok = (b && s <= s0 * 1.10 && e <= e0 * 1.10);
        printf "%s soak %d -> %d kB, echo %d -> %d kB (from the sample at >= %d s to the last)\n",
          ok ? "ok:" : "FAIL:", s0, s, e0, e, bt }' "$OUT/rss.tsv")
echo "mtcp-soak: $verdict"
echo "mtcp-soak: client exit status $rc"
grep -q "closed" "$OUT/echo.out" || { echo "mtcp-soak: no echo summary"; exit 1; }
[[ $rc -eq 0 && $verdict == ok:* ]]
