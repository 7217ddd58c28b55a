#!/usr/bin/env bash
# Moves Linux's ephemeral-port walk for 192.0.2.2 -> 192.0.2.1:80, the address pair of the
# proxy tests, for SECONDS (default 600) or until interrupted: for a series of one test
# (ci/repeat-test.sh) under the port reuse the full suite causes.
#
#   bash ci/perturb-port-walk.sh 900 & bash ci/repeat-test.sh splice_netns_thousand_requests_under_loss 40
#
# connect() picks a source port from a walk whose offset (`table_perturb`) is indexed by a
# hash of (source, destination, destination port) and shared by every network namespace. A
# namespace of its own (`pturb`, not the tests' `nmt` prefix, so ci/cleanup.sh leaves it)
# with the client's address starts RATE connects a second (default 1000) to a veth that
# leads nowhere and closes each at once (only unanswered ARP requests leave). Each moves the
# walk on, so a test's client soon lands on ports it used seconds before: with it, 14 of 87
# runs of the splice loss test saw a new connection on a lingering pair's 4-tuple.
set -euo pipefail
SECONDS_TOTAL=${1:-600}
RATE=${RATE:-1000}
ns=pturb
ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
ip -n "$ns" link set lo up
ip -n "$ns" link add d0 type veth peer name d1
ip -n "$ns" link set d1 up
ip -n "$ns" link set d0 up
ip -n "$ns" addr add 192.0.2.2/32 dev d0
ip -n "$ns" route add 192.0.2.1/32 dev d0
ip netns exec "$ns" timeout "$SECONDS_TOTAL" python3 -c '
import socket, sys, time
rate = float(sys.argv[1]); n = 0; t0 = time.time()
while True:
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("192.0.2.1", 80))
    except BlockingIOError: pass
    s.close(); n += 1
    d = t0 + n / rate - time.time()
    if d > 0: time.sleep(d)
' "$RATE" || [ $? -eq 124 ]
