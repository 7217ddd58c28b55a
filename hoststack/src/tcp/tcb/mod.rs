//! One TCP connection's state machine (RFC 9293 §3.10), sans-I/O.
//!
//! The socket layer feeds it parsed segments ([`Tcb::input`]) and application calls
//! ([`Tcb::send`], [`Tcb::recv`], [`Tcb::close`], ...), and asks it for segments to send
//! ([`Tcb::poll_transmit`]) whenever something happened or [`Tcb::poll_at`] has passed.
//!
//! Layout:
//! - `types.rs`: the public value types ([`State`], [`Events`], [`TcbStats`], ...);
//! - this file: the connection and the application calls;
//! - `vars.rs`: the groups of the connection's variables (RFC 9293 §3.3.1 send and receive
//!   sequence variables, negotiated options, configuration, pending actions, timers, loss
//!   recovery);
//! - `input.rs`: segment arrival (RFC 9293 §3.10.7, RFC 5961, RFC 7323
//!   PAWS, ACK processing, NewReno and SACK loss detection, reassembly, FIN);
//! - `output.rs`: timers and transmission (SYN, data with Nagle/SWS/TSO, FIN, fast
//!   retransmit, RFC 6675 NextSeg, RTO go-back-N, zero-window probes, ACKs, RST);
//! - `tonic.rs`: the handover of the sender side to Tonic on the NIC (Tonic §5).
//!
//! Buffers ([`SendBuf`], [`RecvBuf`]) allocate on first use and grow up to the configured
//! sizes; the congestion controller is built when the handshake completes. Nothing on the
//! per-segment path allocates.

mod cookie;
mod input;
mod output;
mod quasi;
mod splice;
mod teardown;
#[cfg(test)]
mod tests;
mod tonic;
mod types;
mod vars;

use super::cc::CongestionControl;
use super::recvbuf::RecvBuf;
use super::segment::{TcpFlags, TcpHeader, TcpOptions, TcpRepr};
use super::sendbuf::SendBuf;
use super::seq::Seq;
use super::TcpConfig;

pub use cookie::CookieHandshake;
pub use quasi::{QuasiMiss, QuasiTcb, QUASI_MAX_BYTES};
pub use splice::SpliceView;
pub use teardown::{TeardownHandover, TeardownRefusal, TEARDOWN_MAX_DATA};
pub use tonic::{TonicHandover, SMALL_HOLD_NS};
pub use types::{Endpoints, Events, Outgoing, State, TcbStats, TcpError};
use vars::Timer;
use vars::{AckThrottle, ConnFlags, Negotiated, Recovery, RecvSeq, SendSeq, TcbConfig, Timers};

/// Most challenge ACKs (and ACKs for unacceptable ACK fields) per second (RFC 5961 §7).
pub const CHALLENGE_ACKS_PER_SEC: u32 = 10;

/// PAWS idle limit (RFC 7323 §5.5: 24 days).
const PAWS_IDLE_NS: u64 = 24 * 86_400 * 1_000_000_000;

/// Default MSS when the peer sends none (RFC 9293 §3.7.1).
const DEFAULT_MSS: u32 = 536;

/// Smallest MSS we accept from a peer (guards against tiny-MSS resource abuse).
const MIN_MSS: u32 = 64;

/// A connection.
///
/// The variables are grouped as RFC 9293 §3.3.1 groups them, plus the negotiated options,
/// the configuration, the pending actions, the timers and the loss-recovery state (see
/// `vars.rs`): a handover of the connection (AccelTCP §4, Tonic §5) reads and writes whole
/// groups. Exactly one side drives the sender at a time (AccelTCP §3): this TCB, or, while
/// `tonic` is set, Tonic on the NIC.
#[derive(Debug)]
pub struct Tcb {
    ep: Endpoints,
    state: State,
    error: Option<TcpError>,
    /// We sent the first SYN.
    active: bool,

    /// Configuration copied from [`TcpConfig`].
    cfg: TcbConfig,
    /// Send sequence variables (RFC 9293 §3.3.1).
    snd: SendSeq,
    /// Receive sequence variables (RFC 9293 §3.3.1).
    rcv: RecvSeq,
    /// Negotiated options (MSS, RFC 7323 window scale and timestamps, RFC 2018 SACK).
    opt: Negotiated,
    /// State flags and pending actions.
    flags: ConnFlags,
    /// Timers and RTT estimation (RFC 6298).
    timers: Timers,
    /// Congestion control and loss recovery (RFC 5681, 6582, 6675, 8985).
    rec: Recovery,
    /// RFC 5961 §7 ACK throttling.
    chal: AckThrottle,

    // Buffers.
    sbuf: SendBuf,
    rbuf: RecvBuf,

    stats: TcbStats,
    pending: Events,

    /// Tonic on the NIC owns the sender side (Tonic §5; see `tonic.rs`): none while the TCB
    /// sends itself.
    tonic: Option<tonic::TonicSend>,
}

impl Tcb {
    fn new(cfg: &TcpConfig, ep: Endpoints, iss: Seq, state: State) -> Tcb {
        let tcfg = TcbConfig::new(cfg);
        let opt = Negotiated::new(iss, tcfg.mss);
        Tcb {
            ep,
            state,
            error: None,
            active: false,
            snd: SendSeq::new(iss),
            rcv: RecvSeq::new(opt.eff_mss),
            opt,
            cfg: tcfg,
            flags: ConnFlags::new(),
            timers: Timers::new(cfg),
            rec: Recovery::new(iss),
            chal: AckThrottle::default(),
            sbuf: SendBuf::new(cfg.send_buffer),
            rbuf: RecvBuf::new(cfg.recv_buffer),
            stats: TcbStats::default(),
            pending: Events::default(),
            tonic: None,
        }
    }

    /// Active open: the SYN goes out on the next [`Tcb::poll_transmit`]. State SynSent.
    ///
    /// The SYN offers MSS, window scale (RFC 7323 §2), SACK-permitted (RFC 2018) and
    /// timestamps (RFC 7323 §3) as configured.
    pub fn connect(cfg: &TcpConfig, ep: Endpoints, iss: Seq, now: u64) -> Tcb {
        let mut t = Tcb::new(cfg, ep, iss, State::SynSent);
        t.active = true;
        t.opt.ts_offset = ts_offset_for(iss, now);
        t
    }

    /// Passive open from a SYN that reached a listening socket: state SynReceived, the
    /// SYN-ACK goes out on the next [`Tcb::poll_transmit`].
    ///
    /// Options are negotiated from the SYN: window scaling only when the SYN carried a
    /// window scale (shift clamped to 14, RFC 7323 §2.3), SACK when it carried
    /// SACK-permitted and timestamps when it carried TSopt, each also only when configured.
    pub fn accept(cfg: &TcpConfig, ep: Endpoints, syn: &TcpRepr<'_>, iss: Seq, now: u64) -> Tcb {
        let mut t = Tcb::new(cfg, ep, iss, State::SynReceived);
        t.opt.ts_offset = ts_offset_for(iss, now);
        t.rcv.irs = syn.seq;
        t.rcv.nxt = syn.seq + 1;
        t.opt.last_ack_sent = t.rcv.nxt;
        t.rcv.adv = t.rcv.nxt + t.syn_window() as u32;
        t.negotiate(&syn.options, now);
        // The window of a SYN is never scaled (RFC 7323 §2.2).
        t.snd.wnd = syn.window as u32;
        t.snd.max_wnd = t.snd.wnd;
        t.snd.wl1 = syn.seq;
        t
    }

    /// Processes one received segment addressed to this connection (RFC 9293 §3.10.7).
    ///
    /// Returns what changed, plus any events of timer work since the last call (see
    /// [`Tcb::take_events`]).
    pub fn input(&mut self, seg: &TcpRepr<'_>, now: u64) -> Events {
        self.stats.segs_in += 1;
        match self.state {
            State::Closed => {}
            State::SynSent => self.input_syn_sent(seg, now),
            _ => self.input_synchronized(seg, now),
        }
        self.update_timer(now);
        std::mem::take(&mut self.pending)
    }

    /// Emits every segment that is due at `now` (data the windows allow, ACKs, retransmissions,
    /// window probes, FIN, RST), in order, through `emit`; handles expired timers. Returns the
    /// number emitted.
    ///
    /// A timer may end the connection here (retransmissions exhausted: [`TcpError::TimedOut`];
    /// TIME_WAIT over): check [`Tcb::state`] / [`Tcb::error`], or [`Tcb::take_events`].
    pub fn poll_transmit(&mut self, now: u64, emit: &mut dyn FnMut(&Outgoing<'_>)) -> usize {
        self.transmit(now, usize::MAX, emit)
    }

    /// [`Tcb::poll_transmit`] for a sink with room for few frames (a driver's queue, the
    /// host ↔ NIC link): at most `budget` segments of data from the windows and SACK
    /// recovery (the rest stays unsent, as when the congestion window is full, for the next
    /// call), plus at most four control segments (a reply RST, a tail-loss probe, a fast
    /// retransmission, a pure ACK). Returns the number emitted; a call that emitted
    /// `budget` or more may have more to send.
    pub fn poll_transmit_budget(
        &mut self,
        now: u64,
        budget: usize,
        emit: &mut dyn FnMut(&Outgoing<'_>),
    ) -> usize {
        self.transmit(now, budget, emit)
    }

    /// The earliest time at which [`Tcb::poll_transmit`] has timer work (RTO, delayed ACK,
    /// persist, TIME_WAIT expiry), if any.
    ///
    /// `Some(0)` means something is due at once (an ACK, RST or retransmission was decided
    /// by an input or application call and [`Tcb::poll_transmit`] was not called since).
    pub fn poll_at(&self) -> Option<u64> {
        if self.flags.ack_now
            || self.flags.rst_pending
            || self.flags.reply_rst.is_some()
            || (self.flags.syn_pending && matches!(self.state, State::SynSent | State::SynReceived))
            || self.flags.rexmit_pending
            || self.flags.probe_now
        {
            return Some(0);
        }
        let mut t = u64::MAX;
        if self.timers.running != Timer::Off {
            t = self.timers.at;
        }
        if self.timers.ack_at != 0 {
            t = t.min(self.timers.ack_at);
        }
        if self.rec.tlp_at != 0 {
            t = t.min(self.rec.tlp_at);
        }
        if let Some(h) = self.tonic_hold_at() {
            t = t.min(h);
        }
        (t != u64::MAX).then_some(t)
    }

    /// Queues bytes for sending; returns how many fit in the send buffer (0 when full).
    ///
    /// Data queued before the handshake completes goes out once it has.
    pub fn send(&mut self, data: &[u8]) -> Result<usize, TcpError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        match self.state {
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
                if !self.flags.fin_queued => {}
            State::Closed => return Err(TcpError::NotConnected),
            _ => return Err(TcpError::WriteClosed),
        }
        let n = self.sbuf.write(data);
        self.snd.end += n as u32;
        Ok(n)
    }

    /// Copies received in-order bytes into `out`; `Ok(0)` when none are available (check
    /// [`Tcb::fin_received`] to tell end of stream from "try later").
    ///
    /// After a reset or timeout the error is returned (RFC 9293 §3.10.7: queues are flushed).
    pub fn recv(&mut self, out: &mut [u8]) -> Result<usize, TcpError> {
        if self.rbuf.is_empty() {
            return match self.error {
                Some(e) => Err(e),
                None => Ok(0),
            };
        }
        let n = self.rbuf.read(out);
        self.after_read();
        Ok(n)
    }

    /// The readable bytes in place (two slices, the buffer being a ring), for zero-copy reads;
    /// follow with [`Tcb::recv_consume`].
    pub fn recv_peek(&self) -> (&[u8], &[u8]) {
        self.rbuf.peek()
    }

    /// Drops `n` bytes (≤ what [`Tcb::recv_peek`] showed) from the receive buffer, opening
    /// the window (a window update goes out when it grew by ≥ 2·MSS or half the buffer).
    pub fn recv_consume(&mut self, n: usize) {
        self.rbuf.consume(n);
        self.after_read();
    }

    /// Free send-buffer bytes.
    pub fn send_space(&self) -> usize {
        let open = matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        );
        if open && !self.flags.fin_queued && self.error.is_none() {
            self.sbuf.free()
        } else {
            0
        }
    }

    /// Readable bytes.
    pub fn recv_available(&self) -> usize {
        self.rbuf.len()
    }

    /// True once the peer's FIN has been received in order: after the readable bytes, the
    /// stream ends.
    pub fn fin_received(&self) -> bool {
        self.flags.fin_rcvd
    }

    /// shutdown(SHUT_WR): a FIN follows the queued data.
    ///
    /// ESTABLISHED → FIN_WAIT_1, CLOSE_WAIT → LAST_ACK (RFC 9293 §3.10.4); before the
    /// handshake completes the FIN is queued and the state changes on completion.
    pub fn shutdown_write(&mut self) {
        if self.flags.fin_queued {
            return;
        }
        match self.state {
            State::SynSent | State::SynReceived => self.flags.fin_queued = true,
            State::Established => {
                self.flags.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.flags.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// close(): shutdown_write, and no more reads. With unread data it aborts with a RST
    /// instead (RFC 9293 §3.10.4, RFC 2525 §2.17); data arriving later also gets a RST
    /// (RFC 1122 §4.2.2.13). In SYN_SENT the connection is simply forgotten.
    pub fn close(&mut self) {
        self.flags.read_closed = true;
        match self.state {
            State::SynSent => {
                self.state = State::Closed;
                self.clear_pending_work();
                self.release_buffers();
            }
            State::Closed | State::TimeWait => {}
            _ if !self.rbuf.is_empty() => self.abort(),
            _ => self.shutdown_write(),
        }
    }

    /// Sends a RST (unless in SynSent/Closed/TimeWait) and goes to Closed.
    pub fn abort(&mut self) {
        if !matches!(self.state, State::SynSent | State::Closed | State::TimeWait) {
            self.flags.rst_pending = true;
        }
        self.flags.read_closed = true;
        self.state = State::Closed;
        self.clear_pending_work();
        self.release_buffers();
    }

    /// TCP_NODELAY.
    pub fn set_nodelay(&mut self, on: bool) {
        self.cfg.nodelay = on;
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The error that closed the connection, if any (sticky).
    pub fn error(&self) -> Option<TcpError> {
        self.error
    }

    /// True when the connection is Closed and has nothing left to send: the socket layer
    /// may free it once the application has closed it.
    pub fn is_finished(&self) -> bool {
        self.state == State::Closed && !self.flags.rst_pending && self.flags.reply_rst.is_none()
    }

    /// The endpoints.
    pub fn endpoints(&self) -> Endpoints {
        self.ep
    }

    /// Counters.
    pub fn stats(&self) -> &TcbStats {
        &self.stats
    }

    /// Current congestion window and slow-start threshold (for traces).
    ///
    /// Before the handshake completes, `(0, u32::MAX)`: the controller does not exist yet.
    pub fn cwnd(&self) -> (u32, u32) {
        match &self.rec.cc {
            Some(cc) => (cc.cwnd(), cc.ssthresh()),
            None => (0, u32::MAX),
        }
    }

    /// Events produced by timer work in [`Tcb::poll_transmit`] (for example `error` when the
    /// retransmissions ran out) since the last [`Tcb::input`] or call of this; clears them.
    pub fn take_events(&mut self) -> Events {
        std::mem::take(&mut self.pending)
    }

    /// Payload bytes of one full-sized segment on the wire (Eff.snd.MSS less the
    /// timestamp option, RFC 9293 §3.7.1): the segment size for the NIC's TSO when an
    /// emitted payload is larger.
    pub fn send_mss(&self) -> usize {
        self.opt.smss as usize
    }

    /// Smoothed RTT in nanoseconds, once measured (RFC 6298).
    pub fn srtt(&self) -> Option<u64> {
        self.timers.rtt.srtt()
    }

    /// The current retransmission timeout, backoff included (RFC 6298).
    pub fn rto(&self) -> u64 {
        self.timers.rtt.rto()
    }

    /// Bytes queued and not yet acknowledged (SIOCOUTQ).
    pub fn send_queued(&self) -> usize {
        self.sbuf.len()
    }

    /// What was negotiated on the handshake: (window scaling, SACK, timestamps).
    pub fn negotiated(&self) -> (bool, bool, bool) {
        (self.opt.ws_ok, self.opt.sack_ok, self.opt.ts_ok)
    }

    /// Our window-scale shift and the peer's (both 0 without window scaling).
    pub fn window_scales(&self) -> (u8, u8) {
        (self.opt.rcv_wscale, self.opt.snd_wscale)
    }

    /// Bytes of buffer storage currently allocated (send + receive); 0 for a connection
    /// that never carried data (lazy buffers, AccelTCP §5.2).
    pub fn buffer_bytes(&self) -> usize {
        self.sbuf.allocated() + self.rbuf.allocated()
    }

    /// True while the connection is in fast recovery (RFC 6582 / RFC 6675).
    pub fn in_recovery(&self) -> bool {
        self.rec.in_recovery
    }

    // ---- internals shared by input and output ----

    /// Records the peer's SYN options (RFC 9293 §3.7.1, RFC 7323 §2.2 and §3.2, RFC 2018
    /// §2).
    fn negotiate(&mut self, o: &TcpOptions, now: u64) {
        match o.window_scale {
            Some(ws) if self.cfg.offer_ws => {
                self.opt.ws_ok = true;
                self.opt.snd_wscale = ws.min(14);
                self.opt.rcv_wscale = self.cfg.want_ws;
            }
            _ => {
                self.opt.ws_ok = false;
                self.opt.snd_wscale = 0;
                self.opt.rcv_wscale = 0;
            }
        }
        self.opt.sack_ok = self.cfg.want_sack && o.sack_permitted;
        self.opt.ts_ok = false;
        if self.cfg.want_ts {
            if let Some((tsval, _)) = o.timestamp {
                self.opt.ts_ok = true;
                self.opt.ts_recent = tsval;
                self.opt.ts_recent_at = now;
            }
        }
        let peer_mss = o.mss.map_or(DEFAULT_MSS, |m| m as u32).max(MIN_MSS);
        self.opt.eff_mss = peer_mss.min(self.cfg.mss as u32);
        self.opt.base_opt_len = if self.opt.ts_ok {
            let h = TcpHeader {
                options: TcpOptions {
                    timestamp: Some((0, 0)),
                    ..TcpOptions::default()
                },
                ..TcpHeader::default()
            };
            (super::segment::header_len(&h) - super::segment::FIXED_HEADER_LEN) as u32
        } else {
            0
        };
        self.opt.smss = self.opt.eff_mss - self.opt.base_opt_len;
        self.rcv.mss = self.opt.smss;
    }

    /// The window field of our SYN or SYN-ACK (never scaled).
    ///
    /// One unit of the window scale we offer is kept as slack for later rounding (see
    /// `advertise`).
    fn syn_window(&self) -> u16 {
        let slack = (1usize << self.cfg.want_ws) - 1;
        self.rbuf.capacity().saturating_sub(slack).min(65_535) as u16
    }

    /// RCV.WND: what is left of the window we advertised.
    #[inline]
    fn rcv_wnd(&self) -> u32 {
        let w = self.rcv.adv - self.rcv.nxt;
        if w > 0 {
            w as u32
        } else {
            0
        }
    }

    /// Our timestamp clock (RFC 7323 §5.4): milliseconds plus a per-connection offset.
    #[inline]
    fn ts_now(&self, now: u64) -> u32 {
        self.opt
            .ts_offset
            .wrapping_add(((now / 1_000_000) as u32) << self.opt.ts_shift)
    }

    /// Ends the connection with an error (RFC 9293 §3.10.7: queues flushed).
    fn fail(&mut self, e: TcpError) {
        self.state = State::Closed;
        self.error = Some(e);
        self.pending.error = true;
        self.clear_pending_work();
        self.release_buffers();
    }

    /// Closed without error: forget timers and anything but a RST to send.
    fn clear_pending_work(&mut self) {
        self.timers.running = Timer::Off;
        self.timers.ack_at = 0;
        self.flags.ack_now = false;
        self.flags.syn_pending = false;
        self.flags.rexmit_pending = false;
        self.flags.probe_now = false;
        self.flags.override_sws = false;
    }

    fn release_buffers(&mut self) {
        self.sbuf.release();
        self.rbuf.release();
    }

    /// The application read: open the window, with an update when it grew enough
    /// (RFC 9293 §3.8.6.2.2 receiver SWS avoidance).
    fn after_read(&mut self) {
        if self.flags.fin_rcvd
            || !matches!(
                self.state,
                State::Established | State::FinWait1 | State::FinWait2
            )
        {
            return;
        }
        let free = self.free_window();
        let cur = self.rcv_wnd();
        let grow = free.saturating_sub(cur);
        let half = (self.rbuf.capacity() as u32 / 2).max(1);
        if grow >= (2 * self.rcv.mss).min(half)
            || (cur < self.rcv.mss && grow >= self.rcv.mss.min(half))
        {
            self.flags.ack_now = true;
        }
    }

    /// Free receive space, limited to what the window field can say.
    #[inline]
    fn free_window(&self) -> u32 {
        let max = 65_535u64 << self.opt.rcv_wscale;
        (self.rbuf.free() as u64).min(max) as u32
    }

    /// Sends an ACK at once, at most [`CHALLENGE_ACKS_PER_SEC`] per second together with
    /// [`Tcb::throttled_ack`] (RFC 5961 §3.2, §4, §7).
    fn challenge_ack(&mut self, now: u64) {
        if self.ack_budget(now) {
            self.stats.challenge_acks += 1;
            self.flags.ack_now = true;
        }
    }

    /// ACK for an unacceptable ACK field (RFC 5961 §5.2), throttled like challenge ACKs.
    fn throttled_ack(&mut self, now: u64) {
        if self.ack_budget(now) {
            self.flags.ack_now = true;
        }
    }

    fn ack_budget(&mut self, now: u64) -> bool {
        if self.chal.n == 0 || now.saturating_sub(self.chal.at) >= 1_000_000_000 {
            self.chal.at = now;
            self.chal.n = 0;
        }
        if self.chal.n < CHALLENGE_ACKS_PER_SEC {
            self.chal.n += 1;
            true
        } else {
            false
        }
    }

    #[inline]
    fn cc(&mut self) -> &mut dyn CongestionControl {
        if self.rec.cc.is_none() {
            self.rec.cc = Some(self.cfg.cc.build(self.opt.smss));
        }
        self.rec.cc.as_deref_mut().expect("just built")
    }
}

/// The offset of a connection's timestamp clock (RFC 7323 §5.4), from its ISS taken at `now`:
/// the ISS is the RFC 6528 clock plus a keyed hash of the 4-tuple, and the offset is derived
/// from that hash alone, so it is unpredictable across 4-tuples but the same for successive
/// incarnations of one 4-tuple, whose TSvals then keep increasing: a peer holding the old
/// incarnation in TIME_WAIT can tell the new SYN is newer (RFC 6191).
fn ts_offset_for(iss: Seq, now: u64) -> u32 {
    let tuple_hash = iss.0.wrapping_sub((now / 4000) as u32);
    tuple_hash.rotate_left(13) ^ 0x9e37_79b9
}

/// The RST to answer a segment that reached no connection or listener (RFC 9293 §3.10.7.1):
/// none for a RST; `<SEQ=SEG.ACK><CTL=RST>` for an ACK; otherwise `<SEQ=0><ACK=SEG.SEQ+SEG.LEN>
/// <CTL=RST,ACK>`. Ports are swapped.
pub fn reset_for(seg: &TcpRepr<'_>) -> Option<TcpHeader> {
    if seg.flags.has(TcpFlags::RST) {
        return None;
    }
    let mut h = TcpHeader {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        ..TcpHeader::default()
    };
    if seg.flags.has(TcpFlags::ACK) {
        h.seq = seg.ack;
        h.flags = TcpFlags::RST;
    } else {
        h.seq = Seq(0);
        h.ack = seg.seq + seg.seg_len();
        h.flags = TcpFlags::RST | TcpFlags::ACK;
    }
    Some(h)
}
