//! nicemu's own small DPDK bindings.
//!
//! Raw bindings come from bindgen over `shim/shim.h` (DPDK's headers plus a tiny C shim that
//! turns DPDK's static-inline functions into real ones); DPDK is found with pkg-config and
//! linked dynamically, its poll-mode drivers load as plugins at [`Eal::init`].
//!
//! On top sits a small safe API:
//! - [`Eal`]: the environment (one per process), port lookup; [`register_thread`] gives our
//!   own threads an lcore id (and with it per-lcore mempool caches);
//! - [`Mempool`]: a packet-buffer pool; [`Mbuf`]: one owned, single-segment packet buffer;
//! - [`EthDev`]: a configured and started ethdev port; [`EthQueue`]: one rx/tx queue pair
//!   of it, owned by one thread.
//!
//! All of nicemu's `unsafe` FFI lives in this crate; every `unsafe` block carries a
//! `// SAFETY:` comment.
//!
//! # Lifetimes and soundness
//! DPDK objects must not outlive the EAL, and mbufs must not outlive their pool. The API
//! enforces this without lifetimes: every [`Mempool`] holds a reference on the EAL (so
//! `rte_eal_cleanup` runs only after the last pool and device are gone), every [`EthDev`] and
//! [`EthQueue`] holds its pool, and a pool dropped while some of its mbufs are still alive is
//! leaked on purpose (together with its EAL reference) instead of freed.
//!
//! When pkg-config cannot find libdpdk at build time the crate compiles to an empty stub
//! ([`LINKED`] is `false`) so that workspace builds without DPDK still succeed.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// True when the crate was built against libdpdk; false for the empty stub built when
/// pkg-config could not find libdpdk (then nothing else in this crate exists).
#[cfg(not(nicemu_dpdk_stub))]
pub const LINKED: bool = true;
/// True when the crate was built against libdpdk; false for the empty stub built when
/// pkg-config could not find libdpdk (then nothing else in this crate exists).
#[cfg(nicemu_dpdk_stub)]
pub const LINKED: bool = false;

// The stub is fine as a workspace member nobody uses, but a crate depending on it (e.g.
// `dataplane --features dpdk`) gets this message instead of a wall of unresolved imports.
#[cfg(nicemu_dpdk_stub)]
const _: () = assert!(
    option_env!("CARGO_PRIMARY_PACKAGE").is_some(),
    "nicemu-dpdk: pkg-config found no libdpdk >= 21.11 at build time; install libdpdk-dev and \
     pkg-config (ci/install-deps.sh installs them), or build without the `dpdk` feature"
);

#[cfg(not(nicemu_dpdk_stub))]
mod eal;
#[cfg(not(nicemu_dpdk_stub))]
mod error;
#[cfg(not(nicemu_dpdk_stub))]
mod ethdev;
#[cfg(not(nicemu_dpdk_stub))]
mod mbuf;
#[cfg(not(nicemu_dpdk_stub))]
mod mempool;
#[cfg(not(nicemu_dpdk_stub))]
mod queue;
#[cfg(not(nicemu_dpdk_stub))]
mod sys;

#[cfg(not(nicemu_dpdk_stub))]
pub use eal::{lcore_id, rdtsc, register_thread, tsc_hz, unregister_thread, Eal};
#[cfg(not(nicemu_dpdk_stub))]
pub use error::DpdkError;
#[cfg(not(nicemu_dpdk_stub))]
pub use ethdev::{
    EthDev, EthStats, LinkStatus, PortConf, Promiscuous, RssConf, RSS_IP, RSS_TCP, RSS_UDP,
};
#[cfg(not(nicemu_dpdk_stub))]
pub use mbuf::{free_bulk, Mbuf, PKTMBUF_HEADROOM};
#[cfg(not(nicemu_dpdk_stub))]
pub use mempool::{Mempool, SOCKET_ID_ANY};
#[cfg(not(nicemu_dpdk_stub))]
pub use queue::EthQueue;
