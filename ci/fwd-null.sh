# Shared by ci/bench-fwd.sh, ci/bench-splice.sh and ci/bench-ab.sh (sourced, not run): the
# forwarding benchmark's topology, two net_null vdevs forwarded by one NIC lcore on core $CORE.

# Reserves 2 MB hugepages and mounts hugetlbfs if missing (needs root).
hugepages_on() {
  if [ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)" -lt 600 ]; then
    echo 600 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  fi
  mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
}

# EAL memory arguments for hugepage runs: 512 MB, and --huge-unlink so that DPDK removes each
# hugepage file as soon as it is mapped (without it, the files <prefix>map_<n> stay in the
# hugetlbfs mount after the process exits and hold their pages until someone deletes them).
HUGE_MEM=(-m 512 --huge-unlink)

# dpdk_leftovers_rm PREFIX...: removes what DPDK processes with these --file-prefix values
# leave behind when they end early (killed, crashed, or without --huge-unlink): their runtime
# directory and their hugepage files in every hugetlbfs mount. Meant for an EXIT trap; names
# only the given prefixes, so benchmarks of other users with other prefixes are left alone.
dpdk_leftovers_rm() {
  local p m
  for p in "$@"; do
    rm -rf "/var/run/dpdk/$p"
    for m in $(awk '$3 == "hugetlbfs" {print $2}' /proc/mounts); do
      rm -f "$m/$p"map_*
    done
  done
}

# fwd_null_config FILE PREFIX EAL_MEM_ARGS...: writes the nicemu configuration to FILE, with
# DPDK file prefix PREFIX and the given EAL memory arguments (e.g. --no-huge -m 512).
# LCORES=N (default 1) gives N NIC lcores on cores CORE, CORE+1, ... (modulo the machine's
# cores), each with its own queue on both ports (symmetric RSS).
fwd_null_config() {
  local file=$1 prefix=$2
  shift 2
  local n=${LCORES:-1} rss=off lcores="" i
  [ "$n" -gt 1 ] && rss=symmetric
  for ((i = 0; i < n; i++)); do
    lcores+="[[lcore]]"$'\n'"core = $(( (${CORE:-1} + i) % $(nproc) ))"$'\n'"role = \"nic\""$'\n'
  done
  local eal
  eal=$(printf '"%s", ' "$@" --no-pci --file-prefix="$prefix" --vdev=net_null0 --vdev=net_null1)
  cat > "$file" <<TOML
[eal]
args = [${eal%, }]
[runtime]
burst = 32
mbufs = 16383
[[port]]
name = "p0"
driver = "dpdk"
device = "net_null0"
rss = "$rss"
[[port]]
name = "p1"
driver = "dpdk"
device = "net_null1"
rss = "$rss"
${lcores}
TOML
}
