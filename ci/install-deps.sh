#!/usr/bin/env bash
# Installs what nicemu needs to build and test, only what is missing (idempotent,
# non-interactive). Debian/Ubuntu. Run as root (or with sudo available).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need=()
pkg-config --exists 'libdpdk >= 21.11' 2>/dev/null || need+=(libdpdk-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
# bindgen loads libclang.so / libclang-N.so; libclang-cpp (pulled in by other packages) is not it.
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* >/dev/null 2>&1 \
  || need+=(libclang-dev)
command -v ip >/dev/null || need+=(iproute2)
command -v ethtool >/dev/null || need+=(ethtool)
command -v dpdk-testpmd >/dev/null || need+=(dpdk-dev)
command -v tshark >/dev/null || need+=(tshark)
command -v ping >/dev/null || need+=(iputils-ping)
command -v python3 >/dev/null || need+=(python3)
# libmtcp's C tests (mtcp/tests/netns_c_api.rs) compile C programs against its headers.
command -v gcc >/dev/null || need+=(gcc)
dpkg -s libc6-dev >/dev/null 2>&1 || need+=(libc6-dev)
# offload-api/tests/roce_scapy.rs compares RoCEv2 packets with scapy's RoCE layer.
/usr/bin/python3 -c 'import scapy.contrib.roce' >/dev/null 2>&1 || need+=(python3-scapy)
command -v tc >/dev/null || need+=(iproute2)
command -v hping3 >/dev/null || need+=(hping3)
# Peers of the proxy and key-value tests: an HTTP server and client, redis, scapy.
command -v nginx >/dev/null || need+=(nginx-light)
command -v curl >/dev/null || need+=(curl)
# mTCP's epserver is fetched from with wget too (mtcp/tests/netns_mtcp_examples.rs).
command -v wget >/dev/null || need+=(wget)
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
# References of `nicemu bench peers`: HAProxy in front of the same backends, wrk as the
# HTTP client; tcl runs redis's own test suite against `nicemu kv`.
command -v haproxy >/dev/null || need+=(haproxy)
command -v wrk >/dev/null || need+=(wrk)
command -v tclsh >/dev/null || need+=(tcl)
dpkg -s python3-scapy >/dev/null 2>&1 || need+=(python3-scapy)  # for /usr/bin/python3
# A Redis client library (redis-py) for ci/kv-clients.sh.
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "install-deps: installing cargo-nextest"
  cargo install --locked cargo-nextest
fi
echo "install-deps: ok (DPDK $(pkg-config --modversion libdpdk))"
