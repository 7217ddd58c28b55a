//! The sans-I/O TCP engine of the host stack (RFC 9293), after smoltcp's and quinn-proto's
//! I/O-free state machines (sans-I/O, `docs/architecture.md`): plain Rust over byte slices and an
//! explicit `now` in nanoseconds. Nothing here touches threads, clocks or the NIC.
//!
//! - [`seq`]: sequence-number arithmetic (the wire module's);
//! - [`segment`]: header and option parse/emit (the wire module's, under the host's names);
//! - [`isn`]: RFC 6528 ISNs;
//! - [`rtt`]: RFC 6298 RTO;
//! - [`cc`]: the congestion-control trait and NewReno;
//! - [`tcb`]: one connection's state machine (with its send and receive buffers and SACK
//!   scoreboard).

pub mod cc;
pub mod isn;
pub mod recvbuf;
pub mod ring;
pub mod rtt;
pub mod sack;
pub mod segment;
pub mod sendbuf;
pub mod seq;
pub mod tcb;

pub use seq::Seq;

/// Settings of a connection, fixed when it is created (the socket layer fills them from the
/// stack defaults and the socket options).
#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// MSS we advertise (MTU − 40 for IPv4 without options).
    pub mss: u16,
    /// Largest payload one emitted segment may carry. Above `mss` it asks the NIC for TSO
    /// (the NIC splits it into MSS-sized segments); at most 65,535 − 40 − 40.
    pub max_segment_payload: usize,
    /// Our window-scale shift, offered on SYN (RFC 7323 §2; ≤ 14).
    pub window_scale: u8,
    /// Offer and use SACK (RFC 2018).
    pub sack: bool,
    /// Offer and use timestamps (RFC 7323 §3).
    pub timestamps: bool,
    /// TCP_NODELAY: Nagle's algorithm off (RFC 9293 §3.7.4).
    pub nodelay: bool,
    /// SO_SNDBUF: send buffer bytes.
    pub send_buffer: usize,
    /// SO_RCVBUF: receive buffer bytes (the largest window we offer).
    pub recv_buffer: usize,
    /// Delayed-ACK timeout (RFC 9293 §3.8.6.3: < 0.5 s); an ACK is sent at least every
    /// second full-sized segment.
    pub delayed_ack_ns: u64,
    /// RTO before any sample (RFC 6298: 1 s).
    pub rto_initial_ns: u64,
    /// Lower RTO bound (RFC 6298 says 1 s; Linux uses 200 ms).
    pub rto_min_ns: u64,
    /// Upper RTO bound (at least 60 s per RFC 6298).
    pub rto_max_ns: u64,
    /// Retransmissions of one segment before the connection fails with `TimedOut`.
    pub max_retransmits: u32,
    /// SYN (or SYN-ACK) retransmissions before failing.
    pub syn_retries: u32,
    /// TIME_WAIT duration (2·MSL); 0 frees a connection as soon as it enters TIME_WAIT
    /// (mTCP's default, `tcp_timewait = 0`).
    pub time_wait_ns: u64,
    /// How long a connection closed by the application waits in FIN_WAIT_2 for the peer's
    /// FIN (Linux's `tcp_fin_timeout`); one whose application may still read waits forever.
    pub fin_wait2_ns: u64,
    /// Congestion control algorithm.
    pub cc: cc::CcAlgorithm,
    /// Tail-loss probes (RFC 8985 §7): resend the last segment when ACKs stop for two
    /// round trips, before the retransmission timeout.
    pub tail_loss_probe: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            max_segment_payload: 1460,
            window_scale: 7,
            sack: true,
            timestamps: true,
            nodelay: false,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            delayed_ack_ns: 40_000_000,
            rto_initial_ns: 1_000_000_000,
            rto_min_ns: 200_000_000,
            rto_max_ns: 60_000_000_000,
            max_retransmits: 15,
            syn_retries: 6,
            time_wait_ns: 60_000_000_000,
            fin_wait2_ns: 60_000_000_000,
            cc: cc::CcAlgorithm::NewReno,
            tail_loss_probe: true,
        }
    }
}
