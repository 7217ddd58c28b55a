//! The public value types of the TCB interface: endpoints, states, errors, events, counters
//! and outgoing segments.

use crate::tcp::segment::TcpHeader;

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
    /// Gone (normally, by reset, or by timeout: see [`Tcb::error`](super::Tcb::error)).
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
    /// The connection failed or was reset ([`Tcb::error`](super::Tcb::error) says why).
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
    /// Acceptable segments dropped in a synchronized state for carrying neither ACK, SYN
    /// nor RST (RFC 9293 §3.10.7.4, fifth check: "if the ACK bit is off, drop the segment").
    pub no_ack: u64,
    /// Out-of-order segments queued.
    pub ooo_segments: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Tail-loss probes sent (RFC 8985 §7: the last segment resent when the ACK clock
    /// stops before the retransmission timeout).
    pub tail_loss_probes: u64,
    /// Segments dropped by PAWS (RFC 7323 §5.3; an ACK was sent).
    pub paws_rejected: u64,
    /// Segments dropped for an unacceptable ACK field: acknowledging data never sent, or
    /// older than SND.UNA − MAX.SND.WND (RFC 5961 §5.2; a rate-limited ACK was sent).
    pub bad_acks: u64,
    /// Segments of SACK-based loss recovery sent by RFC 6675 NextSeg rules 1, 3 and 4.
    pub sack_retransmits: u64,
    /// Entries into fast recovery ended by a full ACK.
    pub recoveries: u64,
}

impl TcbStats {
    /// Adds `o` field by field (totals over connections).
    pub fn add(&mut self, o: &TcbStats) {
        let TcbStats {
            segs_in,
            segs_out,
            bytes_in,
            bytes_out,
            retransmits,
            fast_retransmits,
            rto_expiries,
            dup_acks,
            out_of_window,
            challenge_acks,
            rst_ignored,
            no_ack,
            ooo_segments,
            window_probes,
            tail_loss_probes,
            paws_rejected,
            bad_acks,
            sack_retransmits,
            recoveries,
        } = *o;
        self.segs_in += segs_in;
        self.segs_out += segs_out;
        self.bytes_in += bytes_in;
        self.bytes_out += bytes_out;
        self.retransmits += retransmits;
        self.fast_retransmits += fast_retransmits;
        self.rto_expiries += rto_expiries;
        self.dup_acks += dup_acks;
        self.out_of_window += out_of_window;
        self.challenge_acks += challenge_acks;
        self.rst_ignored += rst_ignored;
        self.no_ack += no_ack;
        self.ooo_segments += ooo_segments;
        self.window_probes += window_probes;
        self.tail_loss_probes += tail_loss_probes;
        self.paws_rejected += paws_rejected;
        self.bad_acks += bad_acks;
        self.sack_retransmits += sack_retransmits;
        self.recoveries += recoveries;
    }
}

/// One segment to send: the header and up to two payload slices (the send buffer is a ring).
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// The header (ports, numbers, flags, window, options).
    pub header: TcpHeader,
    /// Payload, in order: `payload[0]` then `payload[1]`.
    pub payload: [&'a [u8]; 2],
}
