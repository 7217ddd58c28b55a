#!/usr/bin/env bash
# Builds libmtcp (mTCP's C API over nicemu, the `nicemu-mtcp` crate) and installs it under
# PREFIX (default /usr/local):
#   PREFIX/lib/libmtcp.so, PREFIX/lib/libmtcp.a
#   PREFIX/include/mtcp_api.h, PREFIX/include/mtcp_epoll.h
#   PREFIX/lib/pkgconfig/mtcp.pc
# PROFILE=debug installs the debug build instead of the release build. Then an mTCP
# program builds with `cc app.c $(pkg-config --cflags --libs mtcp)` (with
# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a prefix pkg-config does not search) and runs
# with PREFIX/lib on the loader's path (ldconfig, LD_LIBRARY_PATH or -Wl,-rpath).
set -euo pipefail

PREFIX="${1:-/usr/local}"
PROFILE="${PROFILE:-release}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CARGO="${CARGO:-cargo}"

case "$PROFILE" in
  release) "$CARGO" build --release -p nicemu-mtcp --features dpdk --manifest-path "$ROOT/Cargo.toml" ;;
  debug) "$CARGO" build -p nicemu-mtcp --features dpdk --manifest-path "$ROOT/Cargo.toml" ;;
  *) echo "install-mtcp: PROFILE must be release or debug, not $PROFILE" >&2; exit 2 ;;
esac

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE"
DPDK_LIBDIR="$(pkg-config --variable=libdir libdpdk)"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"

install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 0755 "$TARGET/libmtcp.so" "$PREFIX/lib/libmtcp.so"
install -m 0644 "$TARGET/libmtcp.a" "$PREFIX/lib/libmtcp.a"
install -m 0644 "$ROOT/mtcp/include/mtcp_api.h" "$ROOT/mtcp/include/mtcp_epoll.h" "$PREFIX/include/"
sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$VERSION|g" -e "s|@DPDK_LIBDIR@|$DPDK_LIBDIR|g" "$ROOT/mtcp/mtcp.pc.in" \
  > "$PREFIX/lib/pkgconfig/mtcp.pc"
chmod 0644 "$PREFIX/lib/pkgconfig/mtcp.pc"
echo "install-mtcp: libmtcp $VERSION ($PROFILE) installed under $PREFIX"
