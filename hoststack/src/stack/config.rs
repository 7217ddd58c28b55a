//! The settings of a host context: [`HostConfig`] (addresses, limits, offload switches), the
//! descriptor reuse order [`FdReuse`], the flow → core map [`FlowCore`] that outgoing
//! connections pick source ports with, and the [`ListenHook`].

use std::sync::Arc;

use crate::tcp::tcb::Endpoints;
use crate::tcp::TcpConfig;

/// Maps a connection (as seen by the NIC: remote → local) to the host core its packets
/// reach, so outgoing connections can pick source ports that bring replies back to this core
/// (mTCP's `mtcp_init_rss`). The runtime builds it from the NIC's RSS key and table.
pub type FlowCore = Arc<dyn Fn(&Endpoints) -> usize + Send + Sync>;

/// Called with the local port of every listener a context opens, before its first SYN can
/// be answered: a runtime whose NIC lcores steer frames by local port registers the port so
/// that its connections stay where they arrive, and no context picks it for a connection.
pub type ListenHook = Arc<dyn Fn(u16) + Send + Sync>;

/// Settings of one host context.
#[derive(Clone)]
pub struct HostConfig {
    /// The host's IPv4 address (all sockets of this context use it).
    pub ip: [u8; 4],
    /// The NIC port index frames are sent on.
    pub port: u16,
    /// Defaults for new connections (socket options override buffer sizes and Nagle).
    pub tcp: TcpConfig,
    /// Most descriptors (sockets + epolls) open at once (EMFILE beyond).
    pub max_fds: usize,
    /// Which free descriptor a new socket or epoll gets.
    pub fd_reuse: FdReuse,
    /// Most connections (open, half-open, closing) at once; SYNs beyond are dropped and
    /// `connect` fails with `Again`, counted in
    /// [`HostStats::conn_limit`](super::HostStats::conn_limit). Nothing is allocated up
    /// front: the bound costs nothing until connections exist.
    pub max_conns: usize,
    /// Most half-open (SYN received) connections per listener; SYNs beyond are dropped and
    /// counted (a SYN-flood bound; AccelTCP §4.1's SYN cookies will bound this on the NIC).
    pub max_syn_backlog: usize,
    /// Ephemeral port range for connect, inclusive (Linux default 32768–60999).
    pub ephemeral: (u16, u16),
    /// More local addresses for outgoing connections (a load generator's client range):
    /// `connect` rotates over `ip` and these, each with the whole ephemeral range, so one
    /// context can hold more than 64k connections to one server port. Listeners and the
    /// offloads serve `ip` only; the NIC must answer ARP for every address here.
    pub extra_ips: Vec<[u8; 4]>,
    /// Secret for RFC 6528 ISNs.
    pub isn_key: [u8; 16],
    /// This context's core index and the flow → core map (see [`FlowCore`]).
    pub core: usize,
    /// See [`FlowCore`]; none: any source port will do.
    pub flow_core: Option<FlowCore>,
    /// See [`ListenHook`]; none: nobody needs to know.
    pub on_listen: Option<ListenHook>,
    /// Frames taken from the link per poll.
    pub rx_burst: usize,
    /// Longest a blocking call waits before failing with `Again` (none: forever).
    pub block_timeout_ns: Option<u64>,
    /// Answer SYNs with SYN cookies when a listener's SYN queue (`max_syn_backlog`) is full
    /// (RFC 4987 §3.6; Linux's `tcp_syncookies = 1`), instead of dropping them.
    pub syn_cookies: bool,
    /// Settings of the host's SYN cookies (tick, accepted age, key rotation).
    pub cookie: offload_api::syncookie::CookieConfig,
    /// `TCP_TEARDOWN_OFFLOAD`: closes are handed to the NIC only while its last reported
    /// number of connections being closed is below this (AccelTCP §4.2, third condition).
    pub teardown_threshold: u32,
    /// AccelTCP §5.2 lazy TCB creation: connections from 0x090A setup notifications under a
    /// listener with both `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` start as a small
    /// quasi-TCB (see `stack/quasi.rs`). On by default.
    pub quasi_tcb: bool,
}

impl HostConfig {
    /// Defaults for a context with address `ip` sending on NIC port `port`.
    pub fn new(ip: [u8; 4], port: u16) -> Self {
        let mut isn_key = [0u8; 16];
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let r = std::collections::hash_map::RandomState::new();
        use std::hash::BuildHasher;
        let a = r.hash_one(t);
        let b = r.hash_one(a);
        isn_key[..8].copy_from_slice(&a.to_le_bytes());
        isn_key[8..].copy_from_slice(&b.to_le_bytes());
        HostConfig {
            ip,
            port,
            tcp: TcpConfig::default(),
            max_fds: 1 << 16,
            fd_reuse: FdReuse::Recent,
            max_conns: 1 << 16,
            max_syn_backlog: 1024,
            ephemeral: (32768, 60999),
            extra_ips: Vec::new(),
            isn_key,
            core: 0,
            flow_core: None,
            on_listen: None,
            rx_burst: 64,
            block_timeout_ns: None,
            syn_cookies: true,
            cookie: offload_api::syncookie::CookieConfig::default(),
            teardown_threshold: 65_536,
            quasi_tcb: true,
        }
    }
}

/// How descriptors are handed out again after a close.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum FdReuse {
    /// The most recently freed first (its table entry is warm in the cache); a new number
    /// only when none is free.
    #[default]
    Recent,
    /// mTCP's order (its `socket.c` keeps every socket of a `max_concurrency`-sized table in
    /// a free queue): every number below `max_fds` once before any is reused, then the one
    /// freed longest ago. A number just closed is not handed out again at once, which
    /// programs written for mTCP rely on: its `epwget` clears the state it indexes by
    /// descriptor when it opens the next connection, before it is done with the old one's.
    Cycle,
}
