#!/usr/bin/env bash
# Removes what tests and benchmarks may leave behind after a crash: DPDK runtime directories
# and hugepage files of their file prefixes, and network namespaces / veths whose names start
# with the tests' prefix.
set -u
rm -rf /var/run/dpdk/nicemu-test-* /var/run/dpdk/nicemu-bench-* 2>/dev/null
# Hugepage files (<prefix>map_<n>) of those prefixes, in every hugetlbfs mount.
for m in $(awk '$3 == "hugetlbfs" {print $2}' /proc/mounts); do
  rm -f "$m"/nicemu-test-*map_* "$m"/nicemu-bench-*map_* "$m"/nicemu-abmap_* 2>/dev/null
done
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^(nmt|nmbp)' || true); do
  ip netns del "$ns" 2>/dev/null || true
done
for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(nmt|nmbp)' || true); do
  ip link del "$link" 2>/dev/null || true
done
exit 0
