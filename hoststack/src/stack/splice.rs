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

use offload_api::msg::{
    AckStatus, CloseReason, FourTuple, InstallAckRepr, Message, SpliceCloseRepr, SpliceInstallRepr,
    SpliceSide as WireSide,
};

use super::quasi::Upgrade;
use super::{ep_key, Context, Fd, Key, SockState};
use crate::errno::Errno;
use crate::frame::HostLink;
use crate::tcp::segment::{TcpFlags, TcpRepr};
use crate::tcp::tcb::{Endpoints, SpliceView, State};

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
    /// Bytes relayed client → server from the `nsplice` call on, each byte once: those the
    /// host moved (unread at the call, or relayed by the host after a refusal) plus those
    /// the NIC relayed. What the server's application reads after what the proxy wrote.
    pub bytes_c2s: u64,
    /// Bytes relayed server → client from the `nsplice` call on, each byte once.
    pub bytes_s2c: u64,
    /// The part of `bytes_c2s` the host moved itself.
    pub host_bytes_c2s: u64,
    /// The part of `bytes_s2c` the host moved itself.
    pub host_bytes_s2c: u64,
    /// Packets the NIC relayed client → server (retransmissions and pure ACKs included).
    pub packets_c2s: u64,
    /// Packets the NIC relayed server → client.
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
    /// Installs the NIC did not answer in time (no splice offload), relayed by the host.
    pub install_timeouts: u64,
    /// Pairs whose closure was reported.
    pub closed: u64,
    /// Segments kept during the drain and install, then passed to the NIC.
    pub kept_segments: u64,
    /// Kept segments dropped (the bound was reached; the peer retransmits them).
    pub kept_dropped: u64,
    /// Frames of a pair on the NIC that reached the host anyway (they passed the NIC before
    /// the install) and went back to the NIC to be translated.
    pub late_frames: u64,
}

/// Longest a splice may wait for both send buffers to be acknowledged; beyond it both
/// connections are reset and the callback reports [`SpliceEnd::Timeout`].
///
/// Long enough for TCP's own retransmissions to get a lost head through: a connection
/// whose handshake was retransmitted and could not be timed (no timestamps, Karn's rule)
/// starts at a backed-off RTO of 2 s, so its data goes at 0, 2, 6 and 14 s (RFC 6298 §5.5);
/// 10 s allowed three tries, and a 5% loss each way ended about one pair in 8,000 of those.
pub const DRAIN_TIMEOUT_NS: u64 = 30_000_000_000;
/// Longest the host waits for the NIC's install ack; without one (a NIC without the splice
/// offload answers nothing) the host relays the pair itself.
pub const INSTALL_TIMEOUT_NS: u64 = 500_000_000;
/// Most segments kept per pair while it drains and installs (beyond: dropped and counted;
/// the peer retransmits them).
pub const MAX_KEPT_SEGMENTS: usize = 4096;
/// Most bytes of kept segments per pair.
pub const MAX_KEPT_BYTES: usize = 8 << 20;

/// Where a spliced pair is.
#[derive(Debug)]
pub(super) enum Phase {
    /// Waiting for both send buffers to be acknowledged (data segments are kept).
    Drain,
    /// The 0x090C went out; waiting for the NIC's install ack (every segment is kept).
    Installing,
    /// The NIC relays the pair; both connections are freed here.
    OnNic,
    /// The NIC refused the install: the host relays the pair through its two TCBs.
    HostRelay,
}

/// One pair handed to `nsplice`, from the call to its closure report.
pub(super) struct Splice {
    /// The client-side and server-side connections (slots in `conns`; stale once `OnNic`).
    a: u32,
    b: u32,
    a_ep: Endpoints,
    b_ep: Endpoints,
    phase: Phase,
    /// Raw frames kept while draining and installing, in arrival order.
    kept: Vec<Vec<u8>>,
    kept_bytes: usize,
    started: u64,
    /// When the 0x090C went out.
    install_sent: u64,
    callback: SpliceCallback,
    /// Host relay: payload moved each way.
    relayed_ab: u64,
    relayed_ba: u64,
}

impl Splice {
    fn addrs(&self) -> (SocketAddrV4, SocketAddrV4) {
        (
            SocketAddrV4::new(self.a_ep.remote_ip.into(), self.a_ep.remote_port),
            SocketAddrV4::new(self.b_ep.remote_ip.into(), self.b_ep.remote_port),
        )
    }
}

fn tuple(ep: &Endpoints) -> FourTuple {
    FourTuple {
        local_ip: ep.local_ip,
        local_port: ep.local_port,
        remote_ip: ep.remote_ip,
        remote_port: ep.remote_port,
    }
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
    /// connections cannot be spliced (a side would receive segments larger than its peer's
    /// MSS, or timestamps on one side only); the sockets stay with the application then.
    pub fn nsplice(
        &mut self,
        sock_c: Fd,
        sock_s: Fd,
        callback: SpliceCallback,
    ) -> Result<(), Errno> {
        if sock_c == sock_s {
            return Err(Errno::Inval);
        }
        let now = (self.now)();
        let a = self.splice_conn_of(sock_c, now)?;
        let b = self.splice_conn_of(sock_s, now)?;
        let (va, vb) = match (self.splice_view(a, now), self.splice_view(b, now)) {
            (Some(va), Some(vb)) => (va, vb),
            _ => return Err(Errno::NotConn),
        };
        // A segment from one peer goes to the other unchanged in size: it must fit that
        // peer's MSS. Timestamps translate only between two connections that both use them.
        if va.local_mss > vb.peer_mss || vb.local_mss > va.peer_mss {
            return Err(Errno::OpNotSupp);
        }
        if va.timestamps != vb.timestamps {
            return Err(Errno::OpNotSupp);
        }
        self.splice_detach_fd(sock_c);
        self.splice_detach_fd(sock_s);
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let a_ep = self.conns[a as usize]
            .as_ref()
            .expect("live")
            .tcb
            .endpoints();
        let b_ep = self.conns[b as usize]
            .as_ref()
            .expect("live")
            .tcb
            .endpoints();
        self.splices.insert(
            id,
            Splice {
                a,
                b,
                a_ep,
                b_ep,
                phase: Phase::Drain,
                kept: Vec::new(),
                kept_bytes: 0,
                started: now,
                install_sent: 0,
                callback,
                relayed_ab: 0,
                relayed_ba: 0,
            },
        );
        self.splice_conns.insert(a, id);
        self.splice_conns.insert(b, id);
        self.splice_busy.push(id);
        self.splice_stats.requested += 1;
        self.splice_progress(now);
        Ok(())
    }

    /// Spliced pairs not yet reported closed (draining, installing, or on the NIC).
    pub fn splices_active(&self) -> usize {
        self.splices.len()
    }

    /// Host-side splice counters.
    pub fn splice_stats(&self) -> SpliceHostStats {
        self.splice_stats
    }

    /// The connection behind `fd` as a full TCB (a quasi-TCB grows into one).
    fn splice_conn_of(&mut self, fd: Fd, now: u64) -> Result<u32, Errno> {
        match self.sock(fd)?.state {
            SockState::Conn(cid) => Ok(cid),
            SockState::Quasi(qid) => {
                let cid = self
                    .quasi_upgrade(qid, Upgrade::Api, now)
                    .ok_or(Errno::NotConn)?;
                self.sock_mut(fd)?.state = SockState::Conn(cid);
                Ok(cid)
            }
            _ => Err(Errno::NotConn),
        }
    }

    fn splice_view(&self, cid: u32, now: u64) -> Option<SpliceView> {
        self.conns[cid as usize].as_ref()?.tcb.splice_view(now)
    }

    /// Releases `fd` for the application without closing its connection (the splice owns
    /// the connection now).
    fn splice_detach_fd(&mut self, fd: Fd) {
        let Ok(s) = self.sock(fd) else { return };
        let SockState::Conn(cid) = s.state else {
            return;
        };
        let local = s.local;
        if let Some(l) = local.filter(|l| l.ip().octets() == self.cfg.ip) {
            if let Some(n) = self.bound.get_mut(&l.port()) {
                *n -= 1;
                if *n == 0 {
                    self.bound.remove(&l.port());
                }
            }
        }
        self.release_fd(fd);
        if let Some(c) = self.conns[cid as usize].as_mut() {
            c.fd = None;
        }
    }

    /// A segment for connection `cid`, one of the pair `id` (see the module documentation
    /// for what each phase does with it). `f` is the whole frame.
    pub(super) fn splice_input(
        &mut self,
        id: u32,
        cid: u32,
        f: &[u8],
        seg: &TcpRepr<'_>,
        now: u64,
    ) {
        let Some(sp) = self.splices.get_mut(&id) else {
            self.conn_input(cid, seg, now);
            return;
        };
        match sp.phase {
            Phase::HostRelay => {
                self.conn_input(cid, seg, now);
                self.splice_progress(now);
            }
            Phase::Installing => keep(sp, f, &mut self.splice_stats),
            Phase::OnNic => {
                // Cannot happen: the conns are freed when the install is acked.
                self.conn_input(cid, seg, now);
            }
            Phase::Drain => {
                let carries = !seg.payload.is_empty() || seg.flags.has(TcpFlags::FIN);
                let holes = self.conns[cid as usize]
                    .as_ref()
                    .and_then(|c| c.tcb.splice_view(now))
                    .is_some_and(|v| v.recv_holes);
                if seg.flags.has(TcpFlags::RST) || !carries || holes {
                    // A RST ends the pair; a pure ACK drains our send side; data that fills
                    // a hole in what we already acknowledged selectively is taken (the peer
                    // will not send the bytes after the hole again).
                    self.conn_input(cid, seg, now);
                } else {
                    let sp = self.splices.get_mut(&id).expect("checked");
                    keep(sp, f, &mut self.splice_stats);
                    if seg.flags.has(TcpFlags::ACK) {
                        // Its acknowledgement still counts for our send side; its data waits.
                        let mut ack_only = *seg;
                        ack_only.payload = &[];
                        ack_only.flags = TcpFlags(seg.flags.0 & !TcpFlags::FIN.0);
                        self.conn_input(cid, &ack_only, now);
                    }
                }
                self.splice_progress(now);
            }
        }
    }

    /// Moves draining and host-relayed pairs on: copies unread bytes across, installs a
    /// drained pair on the NIC, ends pairs whose connections failed. Runs from `poll`.
    pub(super) fn splice_progress(&mut self, now: u64) {
        if self.splice_busy.is_empty() {
            return;
        }
        let busy = std::mem::take(&mut self.splice_busy);
        let mut still = Vec::with_capacity(busy.len());
        for id in busy {
            if self.splice_step(id, now) {
                still.push(id);
            }
        }
        still.append(&mut self.splice_busy);
        self.splice_busy = still;
    }

    /// One pair's progress; false when it no longer needs polling.
    fn splice_step(&mut self, id: u32, now: u64) -> bool {
        let Some(sp) = self.splices.get(&id) else {
            return false;
        };
        let (a, b) = (sp.a, sp.b);
        match sp.phase {
            Phase::Drain => {}
            Phase::HostRelay => return self.relay_step(id, now),
            Phase::Installing => {
                if now.saturating_sub(sp.install_sent) <= INSTALL_TIMEOUT_NS {
                    return true;
                }
                self.splice_stats.install_timeouts += 1;
                self.splice_to_host(id);
                return false;
            }
            Phase::OnNic => return false,
        }
        // A side that failed (RST, timeout) ends the pair: the other side is reset.
        let failed = |c: &Option<super::Conn>| {
            c.as_ref()
                .is_none_or(|c| c.tcb.state() != State::Established || c.tcb.error().is_some())
        };
        let a_failed = failed(&self.conns[a as usize]);
        let b_failed = failed(&self.conns[b as usize]);
        if a_failed || b_failed {
            let end = match (a_failed, b_failed) {
                (true, _) => SpliceEnd::Rst(SpliceSide::Client),
                _ => SpliceEnd::Rst(SpliceSide::Server),
            };
            self.splice_abort(id, end);
            return false;
        }
        if now.saturating_sub(sp.started) > DRAIN_TIMEOUT_NS {
            self.splice_abort(id, SpliceEnd::Timeout);
            return false;
        }
        // Unread bytes belong to the other peer.
        let moved_ab = self.move_bytes(a, b);
        let moved_ba = self.move_bytes(b, a);
        if moved_ab + moved_ba > 0 {
            let sp = self.splices.get_mut(&id).expect("live");
            sp.relayed_ab += moved_ab as u64;
            sp.relayed_ba += moved_ba as u64;
        }
        let (Some(va), Some(vb)) = (self.splice_view(a, now), self.splice_view(b, now)) else {
            return true;
        };
        let unread = |cid: u32| {
            self.conns[cid as usize]
                .as_ref()
                .is_some_and(|c| c.tcb.recv_available() > 0)
        };
        if !va.send_drained
            || !vb.send_drained
            || va.recv_holes
            || vb.recv_holes
            || unread(a)
            || unread(b)
        {
            return true;
        }
        self.splice_install(id, va, vb, now);
        self.splices
            .get(&id)
            .is_some_and(|s| matches!(s.phase, Phase::Installing))
    }

    /// Copies what `from` received and the application did not read into `to`'s send
    /// buffer, as far as it has room. Returns the bytes moved.
    fn move_bytes(&mut self, from: u32, to: u32) -> usize {
        let mut moved = 0;
        loop {
            let (Some(src), Some(dst)) = two_mut(&mut self.conns, from, to) else {
                return moved;
            };
            let room = dst.tcb.send_space();
            let (first, _) = src.tcb.recv_peek();
            let n = first.len().min(room);
            if n == 0 {
                break;
            }
            let Ok(w) = dst.tcb.send(&first[..n]) else {
                break;
            };
            src.tcb.recv_consume(w);
            moved += w;
            if w < n {
                break;
            }
        }
        if moved > 0 {
            self.mark_dirty(from);
            self.mark_dirty(to);
        }
        moved
    }

    /// Both send buffers are acknowledged: sends the 0x090C with the offsets (App. A).
    fn splice_install(&mut self, id: u32, va: SpliceView, vb: SpliceView, now: u64) {
        let port = self.cfg.port;
        let sp = self.splices.get_mut(&id).expect("live");
        let side = |ep: &Endpoints, v: &SpliceView| WireSide {
            tuple: tuple(ep),
            local_mac: [0; 6],
            remote_mac: [0; 6],
            port,
            peer_wscale: v.peer_wscale,
            local_wscale: v.local_wscale,
            sack_permitted: v.sack,
            timestamps: v.timestamps,
        };
        let repr = SpliceInstallRepr {
            request_id: id,
            seq_offset: vb.snd_nxt.0.wrapping_sub(va.rcv_nxt.0),
            ack_offset: vb.rcv_nxt.0.wrapping_sub(va.snd_nxt.0),
            // TSvals from A's peer must not go backwards for B's peer, which last saw ours
            // (RFC 7323 §5.3 PAWS): they move to at or after our clock on B; and back.
            ts_offset_ab: vb.ts_now.wrapping_sub(va.ts_recent),
            ts_offset_ba: va.ts_now.wrapping_sub(vb.ts_recent),
            a: side(&sp.a_ep, &va),
            b: side(&sp.b_ep, &vb),
            a_start: va.rcv_nxt.0,
            b_start: vb.rcv_nxt.0,
        };
        sp.phase = Phase::Installing;
        sp.install_sent = now;
        if !self.send_control(&Message::SpliceInstall(repr)) {
            // The link is full: the host keeps relaying the pair itself.
            self.splice_stats.refused += 1;
            self.splice_to_host(id);
        }
    }

    /// The NIC's answer to a splice install.
    pub(super) fn splice_install_ack(&mut self, a: InstallAckRepr) {
        let Some(sp) = self.splices.get_mut(&a.request_id) else {
            self.stats.control_unhandled += 1;
            return;
        };
        if !matches!(sp.phase, Phase::Installing) {
            self.stats.control_unhandled += 1;
            return;
        }
        if a.status != AckStatus::Ok {
            self.splice_stats.refused += 1;
            self.splice_to_host(a.request_id);
            return;
        }
        self.splice_stats.installed += 1;
        sp.phase = Phase::OnNic;
        let kept = std::mem::take(&mut sp.kept);
        sp.kept_bytes = 0;
        let (ca, cb, ka, kb) = (sp.a, sp.b, ep_key(&sp.a_ep), ep_key(&sp.b_ep));
        // Single ownership (AccelTCP §3): the NIC has the pair now; the kept segments go to
        // it, translated there like any other of the pair's packets.
        let port = self.cfg.port;
        for f in &kept {
            if self.link.send(port, f) {
                self.stats.frames_out += 1;
            } else {
                self.stats.link_full += 1;
            }
        }
        for cid in [ca, cb] {
            self.splice_conns.remove(&cid);
            self.free_conn(cid);
        }
        self.splice_keys.insert(ka, a.request_id);
        self.splice_keys.insert(kb, a.request_id);
    }

    /// A frame for a 4-tuple the NIC splices: it passed the NIC before the install (another
    /// lcore's ring) and goes back to be translated. True when `k` is such a 4-tuple.
    pub(super) fn splice_late(&mut self, k: Key, f: &[u8]) -> bool {
        if self.splice_keys.is_empty() || !self.splice_keys.contains_key(&k) {
            return false;
        }
        self.splice_stats.late_frames += 1;
        if self.link.send(self.cfg.port, f) {
            self.stats.frames_out += 1;
        } else {
            self.stats.link_full += 1;
        }
        true
    }

    /// A 0x090D closure report: the pair ended on the NIC; the callback learns how.
    pub(super) fn splice_closed(&mut self, r: SpliceCloseRepr) {
        let Some(mut sp) = self.splices.remove(&r.request_id) else {
            self.stats.control_unhandled += 1;
            return;
        };
        for ep in [&sp.a_ep, &sp.b_ep] {
            self.splice_keys.remove(&ep_key(ep));
        }
        self.splice_stats.closed += 1;
        let end = match r.reason {
            CloseReason::Fin => SpliceEnd::Fin,
            CloseReason::Timeout => SpliceEnd::Timeout,
            CloseReason::Rst => SpliceEnd::Rst(if r.rst_side == 2 {
                SpliceSide::Server
            } else {
                SpliceSide::Client
            }),
        };
        let (client, server) = sp.addrs();
        (sp.callback)(&SpliceReport {
            client,
            server,
            bytes_c2s: r.bytes_ab + sp.relayed_ab,
            bytes_s2c: r.bytes_ba + sp.relayed_ba,
            host_bytes_c2s: sp.relayed_ab,
            host_bytes_s2c: sp.relayed_ba,
            packets_c2s: r.packets_ab,
            packets_s2c: r.packets_ba,
            end,
            on_nic: true,
        });
    }

    /// The NIC refused the pair: the host owns both connections again and relays between
    /// them; the kept segments are processed as if they had just arrived.
    fn splice_to_host(&mut self, id: u32) {
        let Some(sp) = self.splices.get_mut(&id) else {
            return;
        };
        sp.phase = Phase::HostRelay;
        let kept = std::mem::take(&mut sp.kept);
        sp.kept_bytes = 0;
        self.splice_busy.push(id);
        let now = (self.now)();
        for f in &kept {
            self.input_frame(f, now);
        }
        self.splice_progress(now);
    }

    /// One pass of the host relay of a refused pair: bytes across, FIN and RST across; the
    /// callback once both connections are done. False when the pair is over.
    fn relay_step(&mut self, id: u32, now: u64) -> bool {
        let sp = self.splices.get(&id).expect("live");
        let (a, b) = (sp.a, sp.b);
        let moved_ab = self.move_bytes(a, b);
        let moved_ba = self.move_bytes(b, a);
        let sp = self.splices.get_mut(&id).expect("live");
        sp.relayed_ab += moved_ab as u64;
        sp.relayed_ba += moved_ba as u64;
        let _ = now;
        let mut reset = None;
        for (from, to, side) in [(a, b, SpliceSide::Client), (b, a, SpliceSide::Server)] {
            let (Some(src), Some(dst)) = two_mut(&mut self.conns, from, to) else {
                continue;
            };
            if src.tcb.error().is_some() && src.tcb.state() == State::Closed {
                if dst.tcb.state() != State::Closed {
                    dst.tcb.abort();
                }
                reset.get_or_insert(side);
            } else if src.tcb.fin_received() && src.tcb.recv_available() == 0 {
                dst.tcb.shutdown_write();
            }
        }
        self.mark_dirty(a);
        self.mark_dirty(b);
        let done = |c: &Option<super::Conn>| {
            c.as_ref()
                .is_none_or(|c| c.tcb.is_finished() || c.tcb.state() == State::TimeWait)
        };
        if reset.is_none() && !(done(&self.conns[a as usize]) && done(&self.conns[b as usize])) {
            return true;
        }
        let end = reset.map_or(SpliceEnd::Fin, SpliceEnd::Rst);
        self.splice_finish(id, end, false);
        false
    }

    /// Ends a pair the host still holds: resets both connections (a RST from the side that
    /// failed reaches the other) and reports `end`.
    fn splice_abort(&mut self, id: u32, end: SpliceEnd) {
        let Some(sp) = self.splices.get(&id) else {
            return;
        };
        for cid in [sp.a, sp.b] {
            if let Some(c) = self.conns[cid as usize].as_mut() {
                if c.tcb.state() != State::Closed {
                    c.tcb.abort();
                }
            }
            self.mark_dirty(cid);
        }
        self.splice_finish(id, end, false);
    }

    /// Forgets pair `id` on the host and calls its callback with what the host relayed.
    fn splice_finish(&mut self, id: u32, end: SpliceEnd, on_nic: bool) {
        let Some(mut sp) = self.splices.remove(&id) else {
            return;
        };
        for cid in [sp.a, sp.b] {
            if self.splice_conns.get(&cid) == Some(&id) {
                self.splice_conns.remove(&cid);
            }
        }
        self.splice_stats.closed += 1;
        let (client, server) = sp.addrs();
        (sp.callback)(&SpliceReport {
            client,
            server,
            bytes_c2s: sp.relayed_ab,
            bytes_s2c: sp.relayed_ba,
            host_bytes_c2s: sp.relayed_ab,
            host_bytes_s2c: sp.relayed_ba,
            packets_c2s: 0,
            packets_s2c: 0,
            end,
            on_nic,
        });
    }
}

/// Keeps frame `f` of a draining or installing pair (bounded; beyond, dropped and counted).
fn keep(sp: &mut Splice, f: &[u8], st: &mut SpliceHostStats) {
    if sp.kept.len() >= MAX_KEPT_SEGMENTS || sp.kept_bytes + f.len() > MAX_KEPT_BYTES {
        st.kept_dropped += 1;
        return;
    }
    sp.kept_bytes += f.len();
    sp.kept.push(f.to_vec());
    st.kept_segments += 1;
}

/// Two distinct connection slots, both writable.
fn two_mut(
    conns: &mut [Option<super::Conn>],
    x: u32,
    y: u32,
) -> (Option<&mut super::Conn>, Option<&mut super::Conn>) {
    let (x, y) = (x as usize, y as usize);
    if x == y || x >= conns.len() || y >= conns.len() {
        return (None, None);
    }
    if x < y {
        let (l, r) = conns.split_at_mut(y);
        (l[x].as_mut(), r[0].as_mut())
    } else {
        let (l, r) = conns.split_at_mut(x);
        (r[0].as_mut(), l[y].as_mut())
    }
}
