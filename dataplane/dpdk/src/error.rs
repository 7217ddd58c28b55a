//! The crate's error type and helpers turning DPDK error codes into it.

use std::ffi::CStr;

use crate::sys;

/// Everything that can go wrong in this crate. Messages are one line and name the DPDK call
/// or the limit involved; `errno` values are positive (`EINVAL`, `ENOTSUP`, ...) and `msg` is
/// DPDK's `rte_strerror` text for them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DpdkError {
    /// [`crate::Eal::init`] was already called in this process (DPDK allows one EAL per
    /// process, and no second attempt even after a failed one).
    #[error("the DPDK EAL was already initialized (or an init was attempted) in this process; only one is allowed")]
    EalAlreadyInitialized,
    /// A call needs a live EAL and there is none (not initialized, or already cleaned up).
    #[error("the DPDK EAL is not initialized (call Eal::init first and keep the Eal alive)")]
    EalNotInitialized,
    /// `rte_eal_init` failed.
    #[error("rte_eal_init failed: {msg} (rte_errno {errno}); see DPDK's log above for details")]
    EalInit {
        /// `rte_errno`.
        errno: i32,
        /// `rte_strerror(errno)`.
        msg: String,
    },
    /// A Rust-side argument DPDK cannot take (interior NUL byte, value out of range, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// No ethdev port has this name.
    #[error("no DPDK port named {name:?}; available ports: [{}]", .available.join(", "))]
    NoSuchPort {
        /// The name looked up.
        name: String,
        /// Names of the ports that do exist.
        available: Vec<String>,
    },
    /// The port id does not name a valid ethdev port.
    #[error("port {0} is not a valid DPDK port")]
    InvalidPort(u16),
    /// Another [`crate::EthDev`] already owns this port.
    #[error("port {0} is already configured by another EthDev")]
    PortBusy(u16),
    /// More queues requested than the device supports.
    #[error("port {port}: {requested} {dir} queues requested, the device supports at most {max}")]
    TooManyQueues {
        /// Port id.
        port: u16,
        /// `"rx"` or `"tx"`.
        dir: &'static str,
        /// Queues requested.
        requested: u16,
        /// The device's maximum.
        max: u16,
    },
    /// [`crate::EthDev::queue`] with a queue id no queue of this port has.
    #[error("port {port}: queue {queue} out of range ({rx_queues} rx and {tx_queues} tx queues configured)")]
    QueueOutOfRange {
        /// Port id.
        port: u16,
        /// Queue id asked for.
        queue: u16,
        /// Rx queues configured.
        rx_queues: u16,
        /// Tx queues configured.
        tx_queues: u16,
    },
    /// [`crate::EthDev::queue`] for a queue another live [`crate::EthQueue`] already holds.
    #[error("port {port}: queue {queue} is already held by another EthQueue")]
    QueueInUse {
        /// Port id.
        port: u16,
        /// Queue id.
        queue: u16,
    },
    /// [`crate::EthDev::stop`] while [`crate::EthQueue`] handles are still alive.
    #[error(
        "port {port}: {held} EthQueue handle(s) still alive; drop them before stopping the port"
    )]
    QueuesInUse {
        /// Port id.
        port: u16,
        /// Live queue handles.
        held: usize,
    },
    /// The port was stopped and closed by [`crate::EthDev::stop`].
    #[error("port {0} is stopped and closed")]
    PortStopped(u16),
    /// A [`crate::PortConf`] the device cannot take (RSS key length, MTU range, ...).
    #[error("port {port}: {msg}")]
    Config {
        /// Port id.
        port: u16,
        /// What is wrong.
        msg: String,
    },
    /// Creating a mempool failed (`EEXIST`: the name is taken).
    #[error("mempool {name:?}: {msg} (errno {errno})")]
    Mempool {
        /// Pool name.
        name: String,
        /// `rte_errno` or a negative-return errno.
        errno: i32,
        /// What happened.
        msg: String,
    },
    /// A DPDK call failed.
    #[error("{call} failed: {msg} (errno {errno})")]
    Call {
        /// The call, with its key arguments, e.g. `rte_eth_dev_start(port 0)`.
        call: String,
        /// Positive errno.
        errno: i32,
        /// `rte_strerror(errno)`.
        msg: String,
    },
    /// [`crate::EthDev::wait_link_up`] timed out.
    #[error("port {port}: link still down after {waited_ms} ms")]
    LinkDown {
        /// Port id.
        port: u16,
        /// How long we waited.
        waited_ms: u64,
    },
}

/// `rte_strerror(errno)` for a positive or negative errno.
pub(crate) fn strerror(errno: i32) -> String {
    let e = errno.checked_abs().unwrap_or(i32::MAX);
    // SAFETY: rte_strerror accepts any int and returns a pointer to a NUL-terminated string
    // (a static string or a per-thread buffer) that stays valid until the next call on this
    // thread; we copy it out immediately.
    let p = unsafe { sys::rte_strerror(e) };
    if p.is_null() {
        return format!("error {e}");
    }
    // SAFETY: p is non-null and NUL-terminated (see above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The calling thread's `rte_errno`.
pub(crate) fn rte_errno() -> i32 {
    // SAFETY: reads a thread-local int; no preconditions.
    unsafe { sys::shim_rte_errno() }
}

/// A [`DpdkError::Call`] for `call` from the thread's `rte_errno`.
pub(crate) fn from_rte_errno(call: impl Into<String>) -> DpdkError {
    from_errno(call, rte_errno())
}

/// A [`DpdkError::Call`] for `call` from a (negative or positive) errno return value.
pub(crate) fn from_errno(call: impl Into<String>, ret: i32) -> DpdkError {
    let errno = ret.checked_abs().unwrap_or(i32::MAX);
    DpdkError::Call {
        call: call.into(),
        errno,
        msg: strerror(errno),
    }
}
