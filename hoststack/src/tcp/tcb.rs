//! One TCP connection's state machine (RFC 9293 §3.10), sans-I/O.
//!
//! The socket layer feeds it parsed segments ([`Tcb::input`]) and application calls
//! ([`Tcb::send`], [`Tcb::recv`], [`Tcb::close`], ...), and asks it for segments to send
//! ([`Tcb::poll_transmit`]) whenever something happened or [`Tcb::poll_at`] has passed.

use super::segment::{Header, Segment};
use super::seq::Seq;
use super::TcpConfig;

/// The two ends of a connection, as seen from this host.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Endpoints {
    /// Our IPv4 address.
    pub local_ip: [u8; 4],
    /// Our port.
    pub local_port: u16,
    /// The peer's IPv4 address.
    pub remote_ip: [u8; 4],
    /// The peer's port.
    pub remote_port: u16,
}

/// Connection states (RFC 9293 §3.3.2; LISTEN lives in the socket layer).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum State {
    /// SYN sent, waiting for SYN-ACK.
    SynSent,
    /// SYN received, SYN-ACK sent.
    SynReceived,
    /// Open both ways.
    Established,
    /// We closed; our FIN not yet acknowledged.
    FinWait1,
    /// Our FIN acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for the ACK of our FIN.
    Closing,
    /// The peer closed, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Waiting 2·MSL before forgetting the connection.
    TimeWait,
    /// Gone (normally, by reset, or by timeout: see [`Tcb::error`]).
    Closed,
}

/// Why a connection failed (surfaced as SO_ERROR and as errors of later calls).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TcpError {
    /// RST in answer to our SYN (ECONNREFUSED).
    #[error("connection refused")]
    Refused,
    /// RST on an open connection (ECONNRESET).
    #[error("connection reset by peer")]
    Reset,
    /// Retransmissions exhausted (ETIMEDOUT).
    #[error("connection timed out")]
    TimedOut,
    /// Sending after shutdown of the write side or close (EPIPE).
    #[error("write side closed")]
    WriteClosed,
    /// The operation needs an established connection (ENOTCONN).
    #[error("not connected")]
    NotConnected,
}

/// What an input changed, for the socket layer's readiness events (epoll).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Events {
    /// New bytes (or the peer's FIN) became readable.
    pub readable: bool,
    /// Send-buffer space was freed (data acknowledged).
    pub writable: bool,
    /// The handshake completed (SynSent/SynReceived → Established).
    pub established: bool,
    /// The connection failed or was reset ([`Tcb::error`] says why).
    pub error: bool,
}

/// Counters of one connection.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct TcbStats {
    /// Segments given to `input`.
    pub segs_in: u64,
    /// Segments emitted.
    pub segs_out: u64,
    /// Payload bytes delivered in order to the receive buffer.
    pub bytes_in: u64,
    /// New payload bytes sent (retransmissions not counted).
    pub bytes_out: u64,
    /// Segments retransmitted (any cause).
    pub retransmits: u64,
    /// Fast retransmits (3 duplicate ACKs or SACK loss detection).
    pub fast_retransmits: u64,
    /// RTO expiries.
    pub rto_expiries: u64,
    /// Duplicate ACKs received.
    pub dup_acks: u64,
    /// Segments dropped as outside the receive window (an ACK was sent).
    pub out_of_window: u64,
    /// Challenge ACKs sent (RFC 5961).
    pub challenge_acks: u64,
    /// RSTs ignored as out of window (RFC 5961 §3.2).
    pub rst_ignored: u64,
    /// Out-of-order segments queued.
    pub ooo_segments: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
}

/// One segment to send: the header and up to two payload slices (the send buffer is a ring).
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// The header (ports, numbers, flags, window, options).
    pub header: Header,
    /// Payload, in order: `payload[0]` then `payload[1]`.
    pub payload: [&'a [u8]; 2],
}

/// A connection.
#[derive(Debug)]
pub struct Tcb {
    _priv: (),
}

impl Tcb {
    /// Active open: the SYN goes out on the next [`Tcb::poll_transmit`]. State SynSent.
    pub fn connect(cfg: &TcpConfig, ep: Endpoints, iss: Seq, now: u64) -> Tcb {
        let _ = (cfg, ep, iss, now);
        todo!("helper: tcb")
    }

    /// Passive open from a SYN that reached a listening socket: state SynReceived, the
    /// SYN-ACK goes out on the next [`Tcb::poll_transmit`].
    pub fn accept(cfg: &TcpConfig, ep: Endpoints, syn: &Segment<'_>, iss: Seq, now: u64) -> Tcb {
        let _ = (cfg, ep, syn, iss, now);
        todo!("helper: tcb")
    }

    /// Processes one received segment addressed to this connection (RFC 9293 §3.10.7).
    pub fn input(&mut self, seg: &Segment<'_>, now: u64) -> Events {
        let _ = (seg, now);
        todo!("helper: tcb")
    }

    /// Emits every segment that is due at `now` (data the windows allow, ACKs, retransmissions,
    /// window probes, FIN, RST), in order, through `emit`; handles expired timers. Returns the
    /// number emitted.
    pub fn poll_transmit(&mut self, now: u64, emit: &mut dyn FnMut(&Outgoing<'_>)) -> usize {
        let _ = (now, emit);
        todo!("helper: tcb")
    }

    /// The earliest time at which [`Tcb::poll_transmit`] has timer work (RTO, delayed ACK,
    /// persist, TIME_WAIT expiry), if any.
    pub fn poll_at(&self) -> Option<u64> {
        todo!("helper: tcb")
    }

    /// Queues bytes for sending; returns how many fit in the send buffer (0 when full).
    pub fn send(&mut self, data: &[u8]) -> Result<usize, TcpError> {
        let _ = data;
        todo!("helper: tcb")
    }

    /// Copies received in-order bytes into `out`; `Ok(0)` when none are available (check
    /// [`Tcb::fin_received`] to tell end of stream from "try later").
    pub fn recv(&mut self, out: &mut [u8]) -> Result<usize, TcpError> {
        let _ = out;
        todo!("helper: tcb")
    }

    /// The readable bytes in place (two slices, the buffer being a ring), for zero-copy reads;
    /// follow with [`Tcb::recv_consume`].
    pub fn recv_peek(&self) -> (&[u8], &[u8]) {
        todo!("helper: tcb")
    }

    /// Drops `n` bytes (≤ what [`Tcb::recv_peek`] showed) from the receive buffer, opening
    /// the window (a window update goes out when it grew by ≥ 2·MSS or half the buffer).
    pub fn recv_consume(&mut self, n: usize) {
        let _ = n;
        todo!("helper: tcb")
    }

    /// Free send-buffer bytes.
    pub fn send_space(&self) -> usize {
        todo!("helper: tcb")
    }

    /// Readable bytes.
    pub fn recv_available(&self) -> usize {
        todo!("helper: tcb")
    }

    /// True once the peer's FIN has been received in order: after the readable bytes, the
    /// stream ends.
    pub fn fin_received(&self) -> bool {
        todo!("helper: tcb")
    }

    /// shutdown(SHUT_WR): a FIN follows the queued data.
    pub fn shutdown_write(&mut self) {
        todo!("helper: tcb")
    }

    /// close(): shutdown_write, and no more reads. With unread received data it aborts with a
    /// RST instead (RFC 9293 §3.10.4, RFC 2525 §2.17).
    pub fn close(&mut self) {
        todo!("helper: tcb")
    }

    /// Sends a RST (unless in SynSent/Closed/TimeWait) and goes to Closed.
    pub fn abort(&mut self) {
        todo!("helper: tcb")
    }

    /// TCP_NODELAY.
    pub fn set_nodelay(&mut self, on: bool) {
        let _ = on;
        todo!("helper: tcb")
    }

    /// The state.
    pub fn state(&self) -> State {
        todo!("helper: tcb")
    }

    /// The error that closed the connection, if any (sticky).
    pub fn error(&self) -> Option<TcpError> {
        todo!("helper: tcb")
    }

    /// True when the connection is Closed and has nothing left to send: the socket layer
    /// may free it once the application has closed it.
    pub fn is_finished(&self) -> bool {
        todo!("helper: tcb")
    }

    /// The endpoints.
    pub fn endpoints(&self) -> Endpoints {
        todo!("helper: tcb")
    }

    /// Counters.
    pub fn stats(&self) -> &TcbStats {
        todo!("helper: tcb")
    }

    /// Current congestion window and slow-start threshold (for traces).
    pub fn cwnd(&self) -> (u32, u32) {
        todo!("helper: tcb")
    }
}

/// The RST to answer a segment that reached no connection or listener (RFC 9293 §3.10.7.1):
/// none for a RST; `<SEQ=SEG.ACK><CTL=RST>` for an ACK; otherwise `<SEQ=0><ACK=SEG.SEQ+SEG.LEN>
/// <CTL=RST,ACK>`. Ports are swapped.
pub fn reset_for(seg: &Segment<'_>) -> Option<Header> {
    let _ = seg;
    todo!("helper: tcb")
}
