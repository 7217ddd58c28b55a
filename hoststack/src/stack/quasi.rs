//! Lazy TCB creation (AccelTCP §5.2): a connection the NIC set up (0x090A, §4.1) under a
//! listener with both `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` starts as a quasi-TCB
//! ([`QuasiTcb`], 72 bytes plus the bytes it keeps) instead of a full [`Tcb`] (968 bytes plus
//! its rings). Its socket ([`SockState::Quasi`]) reads the bytes received in order and the
//! peer's FIN, keeps what the application writes, and when the application closes right
//! after its write (before the stack flushes) the close goes to the NIC in one 0x090B made
//! from the record (§4.2), with the same checks as for a full TCB; the record is freed.
//!
//! The record grows into a full TCB ([`Tcb::from_quasi`], counted by reason in
//! [`QuasiStats`]) when the connection needs more:
//!
//! - written bytes must be sent: a flush finds them still pending (the write was not followed
//!   by close in the same application step), or a write does not fit the record;
//! - a segment the quasi path does not take ([`QuasiTcb::input`]: out of order, beyond the
//!   window or the record's bound, RST, SYN, a window probe, a duplicate, data after FIN...);
//!   the TCB then takes that segment;
//! - received bytes or FIN are still unacknowledged a delayed-ACK time after they arrived
//!   (the TCB acknowledges them at once);
//! - an API call the record does not serve: shutdown, a blocking read that would block, a
//!   close whose handover is refused, the close of its listener before accept.
//!
//! [`Context::tcb`] returns none for a quasi connection (it does not grow it).

use super::{ep_key, key, Context, Fd, SockOpts, SockState};
use crate::frame::HostLink;
use crate::tcp::segment::TcpRepr;
use crate::tcp::tcb::{CookieHandshake, Endpoints, QuasiMiss, QuasiTcb};
use crate::tcp::TcpConfig;

/// Marks a quasi-TCB's index where a connection index also goes (demux, accept queues,
/// timers).
pub(super) const QUASI: u32 = 1 << 31;

/// A timer's deadline as the record keeps it: units of 1,024 ns, wrapping (about 73
/// minutes), never 0.
fn timer_stamp(at: u64) -> u32 {
    ((at >> 10) as u32).max(1)
}

/// Counters of quasi-TCBs (AccelTCP §5.2).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct QuasiStats {
    /// Connections created as a quasi-TCB.
    pub created: u64,
    /// Closed straight from the quasi-TCB: the 0x090B was sent, no full TCB was built.
    pub closed_offloaded: u64,
    /// Grown: written bytes had to be sent (flush after a write, or a write too large).
    pub upgraded_write: u64,
    /// Grown: a segment the quasi path does not take.
    pub upgraded_segment: u64,
    /// Grown: received data beyond the record's bound.
    pub upgraded_data: u64,
    /// Grown: received bytes unacknowledged for a delayed-ACK time.
    pub upgraded_ack_timer: u64,
    /// Grown: an API call that needs the TCB (shutdown, a blocking read, a refused
    /// handover at close, its listener closed).
    pub upgraded_api: u64,
    /// Quasi-TCBs held now.
    pub live: u64,
}

impl QuasiStats {
    /// Every upgrade to a full TCB.
    pub fn upgraded(&self) -> u64 {
        self.upgraded_write
            + self.upgraded_segment
            + self.upgraded_data
            + self.upgraded_ack_timer
            + self.upgraded_api
    }
}

/// Why a quasi-TCB grows.
#[derive(Clone, Copy, Debug)]
pub(super) enum Upgrade {
    Write,
    TcpRepr,
    Data,
    AckTimer,
    Api,
}

/// A quasi-TCB slot: the record and the application's descriptor (none while queued for
/// accept).
pub(super) struct QuasiConn {
    q: QuasiTcb,
    fd: Option<Fd>,
}

impl<L: HostLink> Context<L> {
    /// Counters of quasi-TCBs.
    pub fn quasi_stats(&self) -> &QuasiStats {
        &self.quasi_stats
    }

    /// The TCP settings of the connections listener `lfd` (or socket) makes.
    fn quasi_config(&self, fd: Option<Fd>, local_port: u16) -> TcpConfig {
        let s = fd
            .and_then(|fd| self.sock(fd).ok())
            .or_else(|| self.sock(*self.listeners.get(&local_port)?).ok());
        match s {
            Some(s) => self.tcp_config_for(&s.opts),
            None => self.cfg.tcp.clone(),
        }
    }

    /// A 0x090A under listener `lfd`: creates a quasi-TCB when the listener offloads both
    /// setup and teardown and `ack` is a plain ACK of the handshake. Some(created) when the
    /// quasi path decided (false: the accept queue was full or no slot); none when a full TCB
    /// must be built.
    pub(super) fn quasi_create(
        &mut self,
        lfd: Fd,
        remote_ip: [u8; 4],
        ack: &TcpRepr<'_>,
        h: &CookieHandshake,
        now: u64,
    ) -> Option<bool> {
        if !self.cfg.quasi_tcb {
            return None;
        }
        let s = self.sock(lfd).ok()?;
        let SockState::Listening(l) = &s.state else {
            return None;
        };
        if !(s.opts.setup_offload && s.opts.teardown_offload) || s.opts.tonic.is_some() {
            return None;
        }
        let accept_full = l.accept_queue.len() >= l.backlog;
        let opts = self.tcp_config_for(&s.opts);
        if accept_full || self.at_conn_limit() {
            return Some(false);
        }
        let ep = Endpoints {
            local_ip: self.cfg.ip,
            local_port: ack.dst_port,
            remote_ip,
            remote_port: ack.src_port,
        };
        let q = QuasiTcb::from_cookie(&opts, ep, h, ack, now)?;
        let unacked = q.has_unacked();
        let slot = QuasiConn { q, fd: None };
        let qid = match self.free_quasi.pop() {
            Some(i) => {
                self.quasi[i as usize] = Some(slot);
                i
            }
            None => {
                self.quasi.push(Some(slot));
                (self.quasi.len() - 1) as u32
            }
        };
        self.live_conns += 1;
        self.quasi_stats.created += 1;
        self.quasi_stats.live += 1;
        self.stats.passive_opens += 1;
        self.demux.insert(
            key(remote_ip, ack.src_port, self.cfg.ip, ack.dst_port),
            qid | QUASI,
        );
        if unacked {
            self.quasi_ack_timer(qid, now, &opts);
        }
        if let Ok(s) = self.sock_mut(lfd) {
            if let SockState::Listening(l) = &mut s.state {
                l.accept_queue.push_back(qid | QUASI);
            }
        }
        self.notify(lfd);
        Some(true)
    }

    fn quasi_ack_timer(&mut self, qid: u32, now: u64, cfg: &TcpConfig) {
        let at = now.saturating_add(cfg.delayed_ack_ns);
        if let Some(q) = self.quasi_mut(qid) {
            q.set_timer(timer_stamp(at));
            self.timers.push(std::cmp::Reverse((at, qid | QUASI)));
        }
    }

    /// The delayed-ACK timer of quasi-TCB `qid` armed for `at` fired: if the record still
    /// holds received bytes or a FIN (nothing is ever acknowledged from it), it grows and the
    /// TCB acknowledges them. A timer armed for an earlier record in the slot is ignored.
    pub(super) fn quasi_timer(&mut self, qid: u32, at: u64, now: u64) -> usize {
        let due = self
            .quasi
            .get(qid as usize)
            .and_then(|c| c.as_ref())
            .is_some_and(|c| c.q.timer() == timer_stamp(at) && c.q.has_unacked());
        if !due {
            return 0;
        }
        self.stats.timer_fires += 1;
        self.quasi_upgrade(qid, Upgrade::AckTimer, now);
        1
    }

    /// Segment `seg` for quasi-TCB `qid`.
    pub(super) fn quasi_input(&mut self, qid: u32, seg: &TcpRepr<'_>, now: u64) {
        let Some(c) = self.quasi.get(qid as usize).and_then(|c| c.as_ref()) else {
            return;
        };
        let fd = c.fd;
        let cfg = self.quasi_config(fd, seg.dst_port);
        let c = self.quasi[qid as usize].as_mut().expect("checked");
        let had = c.q.has_unacked();
        match c.q.input(&cfg, seg) {
            Ok(()) => {
                let readable = !seg.payload.is_empty() || c.q.fin_received();
                if !had && c.q.has_unacked() {
                    self.quasi_ack_timer(qid, now, &cfg);
                }
                if let (true, Some(fd)) = (readable, fd) {
                    self.notify(fd);
                }
            }
            Err(m) => {
                let why = match m {
                    QuasiMiss::TcpRepr => Upgrade::TcpRepr,
                    QuasiMiss::TooMuchData => Upgrade::Data,
                };
                if let Some(cid) = self.quasi_upgrade(qid, why, now) {
                    self.conn_input(cid, seg, now);
                }
            }
        }
    }

    /// Grows quasi-TCB `qid` into a full TCB in a connection slot (see the module
    /// documentation); returns the connection's index.
    pub(super) fn quasi_upgrade(&mut self, qid: u32, why: Upgrade, now: u64) -> Option<u32> {
        let qc = self.quasi.get_mut(qid as usize)?.take()?;
        self.free_quasi.push(qid);
        self.quasi_stats.live -= 1;
        let st = &mut self.quasi_stats;
        match why {
            Upgrade::Write => st.upgraded_write += 1,
            Upgrade::TcpRepr => st.upgraded_segment += 1,
            Upgrade::Data => st.upgraded_data += 1,
            Upgrade::AckTimer => st.upgraded_ack_timer += 1,
            Upgrade::Api => st.upgraded_api += 1,
        }
        let ep = qc.q.endpoints(self.cfg.ip);
        let cfg = self.quasi_config(qc.fd, ep.local_port);
        let tcb = crate::tcp::tcb::Tcb::from_quasi(&cfg, self.cfg.ip, &qc.q, now);
        let cid = self.alloc_conn(tcb);
        self.live_conns -= 1; // it was counted as a quasi-TCB
        let k = ep_key(&ep);
        self.demux.insert(k, cid);
        let mut listener = None;
        if qc.fd.is_none() {
            // Still queued for accept: the queue entry becomes the connection.
            if let Some(&lfd) = self.listeners.get(&ep.local_port) {
                if let Ok(s) = self.sock_mut(lfd) {
                    if let SockState::Listening(l) = &mut s.state {
                        if let Some(e) = l.accept_queue.iter_mut().find(|e| **e == qid | QUASI) {
                            *e = cid;
                            listener = Some(lfd);
                        }
                    }
                }
            }
        }
        if let Some(fd) = qc.fd {
            if let Ok(s) = self.sock_mut(fd) {
                if matches!(s.state, SockState::Quasi(q) if q == qid) {
                    s.state = SockState::Conn(cid);
                }
            }
        }
        let c = self.conns[cid as usize].as_mut().expect("just allocated");
        c.fd = qc.fd;
        c.listener = listener;
        self.mark_dirty(cid);
        Some(cid)
    }

    /// Forgets quasi-TCB `qid` (its close went to the NIC).
    fn quasi_free(&mut self, qid: u32) {
        if let Some(qc) = self.quasi.get_mut(qid as usize).and_then(|c| c.take()) {
            let ep = qc.q.endpoints(self.cfg.ip);
            let k = ep_key(&ep);
            if self.demux.get(&k) == Some(&(qid | QUASI)) {
                self.demux.remove(&k);
            }
            self.free_quasi.push(qid);
            self.quasi_stats.live -= 1;
            self.live_conns -= 1;
            self.stats.conns_freed += 1;
        }
    }

    /// Before a flush: quasi-TCBs written to and not closed since must send; they grow.
    pub(super) fn quasi_flush(&mut self, now: u64) {
        while let Some(qid) = self.quasi_dirty.pop() {
            let pending = self
                .quasi
                .get(qid as usize)
                .and_then(|c| c.as_ref())
                .is_some_and(|c| !c.q.pending().is_empty());
            if pending {
                self.quasi_upgrade(qid, Upgrade::Write, now);
            }
        }
    }

    /// Accepts quasi-TCB `qid` as descriptor `fd`.
    pub(super) fn quasi_accepted(&mut self, qid: u32, fd: Fd) {
        if let Some(c) = self.quasi.get_mut(qid as usize).and_then(|c| c.as_mut()) {
            c.fd = Some(fd);
        }
    }

    /// The endpoints of quasi-TCB `qid`.
    pub(super) fn quasi_endpoints(&self, qid: u32) -> Option<Endpoints> {
        let c = self.quasi.get(qid as usize)?.as_ref()?;
        Some(c.q.endpoints(self.cfg.ip))
    }

    /// The record of quasi-TCB `qid`.
    pub(super) fn quasi_ref(&self, qid: u32) -> Option<&QuasiTcb> {
        Some(&self.quasi.get(qid as usize)?.as_ref()?.q)
    }

    /// The record of quasi-TCB `qid`, mutably.
    pub(super) fn quasi_mut(&mut self, qid: u32) -> Option<&mut QuasiTcb> {
        Some(&mut self.quasi.get_mut(qid as usize)?.as_mut()?.q)
    }

    /// A write of `bufs` (`total` bytes) to quasi-TCB `qid`: kept when it all fits the
    /// record (true); otherwise nothing is kept (false) and the caller grows the TCB.
    pub(super) fn quasi_write(&mut self, qid: u32, bufs: &[std::io::IoSlice<'_>]) -> bool {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let Some(q) = self.quasi_mut(qid) else {
            return false;
        };
        if total > q.send_room() {
            return false;
        }
        for b in bufs {
            q.send(b);
        }
        self.quasi_dirty.push(qid);
        true
    }

    /// close() of quasi-TCB `qid` with `opts`: hands the close to the NIC straight from the
    /// record when AccelTCP §4.2's conditions hold (as `teardown_offload` checks them for a
    /// full TCB), frees it and returns true; false when the host must close it itself (the
    /// caller grows the TCB).
    pub(super) fn quasi_close(&mut self, qid: u32, opts: &SockOpts) -> bool {
        let now = (self.now)();
        let Some(c) = self.quasi.get(qid as usize).and_then(|c| c.as_ref()) else {
            return false;
        };
        let ep = c.q.endpoints(self.cfg.ip);
        let cfg = self.quasi_config(None, ep.local_port);
        let Some(h) = super::teardown::admit_teardown(
            &mut self.stats.teardown,
            c.q.teardown_handover(&cfg, now),
            opts,
            self.cfg.teardown_threshold,
        ) else {
            return false;
        };
        // The record leaves the table for the send (the payload borrows it).
        let Some(qc) = self.quasi[qid as usize].take() else {
            return false;
        };
        let sent = self.send_teardown(ep, &h, [qc.q.pending(), &[]]);
        self.quasi[qid as usize] = Some(qc);
        if !sent {
            return false;
        }
        self.quasi_stats.closed_offloaded += 1;
        self.quasi_free(qid);
        self.remember_handover(ep_key(&ep), now);
        true
    }
}
