#!/usr/bin/env bash
# Removes what tests may leave behind after a crash: DPDK runtime directories of test file
# prefixes, and network namespaces / veths whose names start with the tests' prefix.
set -u
rm -rf /var/run/dpdk/nicemu-test-* /var/run/dpdk/nicemu-bench-* 2>/dev/null
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^nmt' || true); do
  ip netns del "$ns" 2>/dev/null || true
done
for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^nmt' || true); do
  ip link del "$link" 2>/dev/null || true
done
exit 0
