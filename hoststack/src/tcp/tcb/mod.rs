//! One TCP connection's state machine (RFC 9293 §3.10), sans-I/O.
//!
//! The socket layer feeds it parsed segments ([`Tcb::input`]) and application calls
//! ([`Tcb::send`], [`Tcb::recv`], [`Tcb::close`], ...), and asks it for segments to send
//! ([`Tcb::poll_transmit`]) whenever something happened or [`Tcb::poll_at`] has passed.
//!
//! Layout:
//! - `types.rs`: the public value types ([`State`], [`Events`], [`TcbStats`], ...);
//! - this file: the connection state and the application calls;
//! - `input.rs`: segment arrival (RFC 9293 §3.10.7, RFC 5961, RFC 7323
//!   PAWS, ACK processing, NewReno and SACK loss detection, reassembly, FIN);
//! - `output.rs`: timers and transmission (SYN, data with Nagle/SWS/TSO, FIN, fast
//!   retransmit, RFC 6675 NextSeg, RTO go-back-N, zero-window probes, ACKs, RST);
//! - `tonic.rs`: the handover of the sender side to Tonic on the NIC (Tonic §5).
//!
//! Buffers ([`SendBuf`], [`RecvBuf`]) allocate on first use and grow up to the configured
//! sizes; the congestion controller is built when the handshake completes. Nothing on the
//! per-segment path allocates.

mod input;
mod output;
#[cfg(test)]
mod tests;
mod tonic;
mod types;

use super::cc::{CcAlgorithm, CongestionControl};
use super::recvbuf::RecvBuf;
use super::rtt::RttEstimator;
use super::sack::Scoreboard;
use super::segment::{Flags, Header, Options, Segment};
use super::sendbuf::SendBuf;
use super::seq::Seq;
use super::TcpConfig;

pub use tonic::{TonicHandover, SMALL_HOLD_NS};
pub use types::{Endpoints, Events, Outgoing, State, TcbStats, TcpError};

/// Which timer runs (one slot: they never run together).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Timer {
    Off,
    /// Retransmission (RFC 6298), also for SYN / SYN-ACK.
    Rto,
    /// Zero-window probe, or the SWS-avoidance override (RFC 9293 §3.8.6.1, §3.8.6.2.1).
    Persist,
    /// 2·MSL.
    TimeWait,
    /// Orphaned FIN_WAIT_2 (closed by the application, waiting for the peer's FIN).
    FinWait2,
}

/// Most challenge ACKs (and ACKs for unacceptable ACK fields) per second (RFC 5961 §7).
pub const CHALLENGE_ACKS_PER_SEC: u32 = 10;

/// PAWS idle limit (RFC 7323 §5.5: 24 days).
const PAWS_IDLE_NS: u64 = 24 * 86_400 * 1_000_000_000;

/// Default MSS when the peer sends none (RFC 9293 §3.7.1).
const DEFAULT_MSS: u32 = 536;

/// Smallest MSS we accept from a peer (guards against tiny-MSS resource abuse).
const MIN_MSS: u32 = 64;

/// A connection.
#[derive(Debug)]
pub struct Tcb {
    ep: Endpoints,
    state: State,
    error: Option<TcpError>,
    /// We sent the first SYN.
    active: bool,

    // Configuration.
    cfg_mss: u16,
    max_seg_payload: u32,
    want_ws: u8,
    /// Offer window scaling on our SYN (off for connections that hand their sender to the
    /// NIC: [`Tcb::prepare_tonic_sender`]).
    offer_ws: bool,
    want_sack: bool,
    want_ts: bool,
    nodelay: bool,
    delayed_ack_ns: u64,
    max_retransmits: u32,
    tail_loss_probe: bool,
    syn_retries: u32,
    time_wait_ns: u64,
    rto_max_ns: u64,
    cc_alg: CcAlgorithm,

    // Send sequence space (RFC 9293 §3.3.1). Data starts at ISS + 1; `snd_end` is one past
    // the last byte queued (the FIN's number once the write side is shut); `snd_max` is one
    // past the highest number ever sent (SND.NXT before a go-back-N retransmission).
    iss: Seq,
    snd_una: Seq,
    snd_nxt: Seq,
    snd_max: Seq,
    snd_end: Seq,
    snd_wnd: u32,
    max_snd_wnd: u32,
    snd_wl1: Seq,
    snd_wl2: Seq,
    snd_wscale: u8,

    // Receive sequence space.
    irs: Seq,
    rcv_nxt: Seq,
    /// Right edge of the window we advertised (never moves left).
    rcv_adv: Seq,
    rcv_wscale: u8,
    /// The peer's FIN, received out of order.
    rcv_fin: Option<Seq>,

    // Negotiated options.
    ws_ok: bool,
    ts_ok: bool,
    sack_ok: bool,
    ts_recent: u32,
    ts_recent_at: u64,
    ts_offset: u32,
    last_ack_sent: Seq,
    /// min(peer MSS, our MSS): the largest segment the path takes, options included.
    eff_mss: u32,
    /// Sender MSS: payload of a full segment with the usual options (RFC 5681 SMSS).
    smss: u32,
    /// Bytes of options on every segment (timestamps).
    base_opt_len: u32,
    /// Estimated size of the peer's full segments (for delayed ACKs and window updates).
    rcv_mss: u32,

    // Flags.
    fin_queued: bool,
    read_closed: bool,
    fin_rcvd: bool,
    syn_pending: bool,
    syn_sent: bool,
    syn_rexmitted: bool,
    rst_pending: bool,
    reply_rst: Option<Seq>,
    ack_now: bool,
    rexmit_pending: bool,
    probe_now: bool,
    override_sws: bool,

    // Timers.
    timer: Timer,
    timer_at: u64,
    ack_at: u64,
    syn_sent_at: u64,
    retries: u32,
    probes: u32,
    persist_shift: u32,
    rtt: RttEstimator,
    /// The segment being timed (its end, its send time), RFC 6298 with Karn's rule.
    rtt_timed: Option<(Seq, u64)>,
    /// A retransmission made the running timing invalid: take the next sample from TSecr.
    rtt_ambiguous: bool,

    // Congestion control and loss recovery.
    cc: Option<Box<dyn CongestionControl>>,
    in_recovery: bool,
    /// RFC 6582 `recover` (one past the highest number sent when recovery began); also
    /// RFC 6675 RecoveryPoint.
    recover: Seq,
    dupacks: u32,
    partial_seen: bool,
    /// RFC 6675 HighRxt + 1.
    rxt_next: Seq,
    rescue_done: bool,
    /// Tail-loss probe deadline (0: none), after RFC 8985 §7.
    tlp_at: u64,
    /// A probe went out since the last new ACK.
    tlp_done: bool,
    /// The probe is due: send it on this poll.
    tlp_fire: bool,
    sb: Scoreboard,

    // Buffers.
    sbuf: SendBuf,
    rbuf: RecvBuf,
    /// In-order bytes received since our last ACK.
    unacked_rcv: u32,

    // RFC 5961 §7 ACK throttling.
    chal_at: u64,
    chal_n: u32,

    stats: TcbStats,
    pending: Events,

    /// The NIC owns the sender side (Tonic §5; see `tonic.rs`): none while the TCB sends
    /// itself.
    tonic: Option<tonic::TonicSend>,
}

impl Tcb {
    fn new(cfg: &TcpConfig, ep: Endpoints, iss: Seq, state: State) -> Tcb {
        let cfg_mss = cfg.mss.max(MIN_MSS as u16);
        let eff_mss = (cfg_mss as u32).min(DEFAULT_MSS);
        Tcb {
            ep,
            state,
            error: None,
            active: false,
            cfg_mss,
            max_seg_payload: cfg.max_segment_payload.min(65_535 - 80) as u32,
            want_ws: cfg.window_scale.min(14),
            offer_ws: true,
            want_sack: cfg.sack,
            want_ts: cfg.timestamps,
            nodelay: cfg.nodelay,
            delayed_ack_ns: cfg.delayed_ack_ns,
            max_retransmits: cfg.max_retransmits,
            tail_loss_probe: cfg.tail_loss_probe,
            syn_retries: cfg.syn_retries,
            time_wait_ns: cfg.time_wait_ns,
            rto_max_ns: cfg.rto_max_ns,
            cc_alg: cfg.cc,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            snd_end: iss + 1,
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: Seq(0),
            snd_wl2: iss,
            snd_wscale: 0,
            irs: Seq(0),
            rcv_nxt: Seq(0),
            rcv_adv: Seq(0),
            rcv_wscale: 0,
            rcv_fin: None,
            ws_ok: false,
            ts_ok: false,
            sack_ok: false,
            ts_recent: 0,
            ts_recent_at: 0,
            ts_offset: iss.0.rotate_left(13) ^ 0x9e37_79b9,
            last_ack_sent: Seq(0),
            eff_mss,
            smss: eff_mss,
            base_opt_len: 0,
            rcv_mss: eff_mss,
            fin_queued: false,
            read_closed: false,
            fin_rcvd: false,
            syn_pending: true,
            syn_sent: false,
            syn_rexmitted: false,
            rst_pending: false,
            reply_rst: None,
            ack_now: false,
            rexmit_pending: false,
            probe_now: false,
            override_sws: false,
            timer: Timer::Off,
            timer_at: 0,
            ack_at: 0,
            syn_sent_at: 0,
            retries: 0,
            probes: 0,
            persist_shift: 0,
            rtt: RttEstimator::new(cfg.rto_initial_ns, cfg.rto_min_ns, cfg.rto_max_ns),
            rtt_timed: None,
            rtt_ambiguous: false,
            cc: None,
            in_recovery: false,
            recover: iss,
            dupacks: 0,
            partial_seen: false,
            rxt_next: iss,
            rescue_done: false,
            tlp_at: 0,
            tlp_done: false,
            tlp_fire: false,
            sb: Scoreboard::new(),
            sbuf: SendBuf::new(cfg.send_buffer),
            rbuf: RecvBuf::new(cfg.recv_buffer),
            unacked_rcv: 0,
            chal_at: 0,
            chal_n: 0,
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
        let _ = now;
        let mut t = Tcb::new(cfg, ep, iss, State::SynSent);
        t.active = true;
        t
    }

    /// Passive open from a SYN that reached a listening socket: state SynReceived, the
    /// SYN-ACK goes out on the next [`Tcb::poll_transmit`].
    ///
    /// Options are negotiated from the SYN: window scaling only when the SYN carried a
    /// window scale (shift clamped to 14, RFC 7323 §2.3), SACK when it carried
    /// SACK-permitted and timestamps when it carried TSopt, each also only when configured.
    pub fn accept(cfg: &TcpConfig, ep: Endpoints, syn: &Segment<'_>, iss: Seq, now: u64) -> Tcb {
        let mut t = Tcb::new(cfg, ep, iss, State::SynReceived);
        t.irs = syn.seq;
        t.rcv_nxt = syn.seq + 1;
        t.last_ack_sent = t.rcv_nxt;
        t.rcv_adv = t.rcv_nxt + t.syn_window() as u32;
        t.negotiate(&syn.options, now);
        // The window of a SYN is never scaled (RFC 7323 §2.2).
        t.snd_wnd = syn.window as u32;
        t.max_snd_wnd = t.snd_wnd;
        t.snd_wl1 = syn.seq;
        t
    }

    /// Processes one received segment addressed to this connection (RFC 9293 §3.10.7).
    ///
    /// Returns what changed, plus any events of timer work since the last call (see
    /// [`Tcb::take_events`]).
    pub fn input(&mut self, seg: &Segment<'_>, now: u64) -> Events {
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
        self.transmit(now, emit)
    }

    /// The earliest time at which [`Tcb::poll_transmit`] has timer work (RTO, delayed ACK,
    /// persist, TIME_WAIT expiry), if any.
    ///
    /// `Some(0)` means something is due at once (an ACK, RST or retransmission was decided
    /// by an input or application call and [`Tcb::poll_transmit`] was not called since).
    pub fn poll_at(&self) -> Option<u64> {
        if self.ack_now
            || self.rst_pending
            || self.reply_rst.is_some()
            || (self.syn_pending && matches!(self.state, State::SynSent | State::SynReceived))
            || self.rexmit_pending
            || self.probe_now
        {
            return Some(0);
        }
        let mut t = u64::MAX;
        if self.timer != Timer::Off {
            t = self.timer_at;
        }
        if self.ack_at != 0 {
            t = t.min(self.ack_at);
        }
        if self.tlp_at != 0 {
            t = t.min(self.tlp_at);
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
                if !self.fin_queued => {}
            State::Closed => return Err(TcpError::NotConnected),
            _ => return Err(TcpError::WriteClosed),
        }
        let n = self.sbuf.write(data);
        self.snd_end += n as u32;
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
        if open && !self.fin_queued && self.error.is_none() {
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
        self.fin_rcvd
    }

    /// shutdown(SHUT_WR): a FIN follows the queued data.
    ///
    /// ESTABLISHED → FIN_WAIT_1, CLOSE_WAIT → LAST_ACK (RFC 9293 §3.10.4); before the
    /// handshake completes the FIN is queued and the state changes on completion.
    pub fn shutdown_write(&mut self) {
        if self.fin_queued {
            return;
        }
        match self.state {
            State::SynSent | State::SynReceived => self.fin_queued = true,
            State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// close(): shutdown_write, and no more reads. With unread data it aborts with a RST
    /// instead (RFC 9293 §3.10.4, RFC 2525 §2.17); data arriving later also gets a RST
    /// (RFC 1122 §4.2.2.13). In SYN_SENT the connection is simply forgotten.
    pub fn close(&mut self) {
        self.read_closed = true;
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
            self.rst_pending = true;
        }
        self.read_closed = true;
        self.state = State::Closed;
        self.clear_pending_work();
        self.release_buffers();
    }

    /// TCP_NODELAY.
    pub fn set_nodelay(&mut self, on: bool) {
        self.nodelay = on;
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
        self.state == State::Closed && !self.rst_pending && self.reply_rst.is_none()
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
        match &self.cc {
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
        self.smss as usize
    }

    /// Smoothed RTT in nanoseconds, once measured (RFC 6298).
    pub fn srtt(&self) -> Option<u64> {
        self.rtt.srtt()
    }

    /// The current retransmission timeout, backoff included (RFC 6298).
    pub fn rto(&self) -> u64 {
        self.rtt.rto()
    }

    /// Bytes queued and not yet acknowledged (SIOCOUTQ).
    pub fn send_queued(&self) -> usize {
        self.sbuf.len()
    }

    /// What was negotiated on the handshake: (window scaling, SACK, timestamps).
    pub fn negotiated(&self) -> (bool, bool, bool) {
        (self.ws_ok, self.sack_ok, self.ts_ok)
    }

    /// Our window-scale shift and the peer's (both 0 without window scaling).
    pub fn window_scales(&self) -> (u8, u8) {
        (self.rcv_wscale, self.snd_wscale)
    }

    /// Bytes of buffer storage currently allocated (send + receive); 0 for a connection
    /// that never carried data (lazy buffers, AccelTCP §5.2).
    pub fn buffer_bytes(&self) -> usize {
        self.sbuf.allocated() + self.rbuf.allocated()
    }

    /// True while the connection is in fast recovery (RFC 6582 / RFC 6675).
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    // ---- internals shared by input and output ----

    /// Records the peer's SYN options (RFC 9293 §3.7.1, RFC 7323 §2.2 and §3.2, RFC 2018
    /// §2).
    fn negotiate(&mut self, o: &Options, now: u64) {
        match o.window_scale {
            Some(ws) if self.offer_ws => {
                self.ws_ok = true;
                self.snd_wscale = ws.min(14);
                self.rcv_wscale = self.want_ws;
            }
            _ => {
                self.ws_ok = false;
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
            }
        }
        self.sack_ok = self.want_sack && o.sack_permitted;
        self.ts_ok = false;
        if self.want_ts {
            if let Some((tsval, _)) = o.timestamp {
                self.ts_ok = true;
                self.ts_recent = tsval;
                self.ts_recent_at = now;
            }
        }
        let peer_mss = o.mss.map_or(DEFAULT_MSS, |m| m as u32).max(MIN_MSS);
        self.eff_mss = peer_mss.min(self.cfg_mss as u32);
        self.base_opt_len = if self.ts_ok {
            let h = Header {
                options: Options {
                    timestamp: Some((0, 0)),
                    ..Options::default()
                },
                ..Header::default()
            };
            (super::segment::header_len(&h) - super::segment::FIXED_HEADER_LEN) as u32
        } else {
            0
        };
        self.smss = self.eff_mss - self.base_opt_len;
        self.rcv_mss = self.smss;
    }

    /// The window field of our SYN or SYN-ACK (never scaled).
    ///
    /// One unit of the window scale we offer is kept as slack for later rounding (see
    /// `advertise`).
    fn syn_window(&self) -> u16 {
        let slack = (1usize << self.want_ws) - 1;
        self.rbuf.capacity().saturating_sub(slack).min(65_535) as u16
    }

    /// RCV.WND: what is left of the window we advertised.
    #[inline]
    fn rcv_wnd(&self) -> u32 {
        let w = self.rcv_adv - self.rcv_nxt;
        if w > 0 {
            w as u32
        } else {
            0
        }
    }

    /// Our timestamp clock (RFC 7323 §5.4): milliseconds plus a per-connection offset.
    #[inline]
    fn ts_now(&self, now: u64) -> u32 {
        self.ts_offset.wrapping_add((now / 1_000_000) as u32)
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
        self.timer = Timer::Off;
        self.ack_at = 0;
        self.ack_now = false;
        self.syn_pending = false;
        self.rexmit_pending = false;
        self.probe_now = false;
        self.override_sws = false;
    }

    fn release_buffers(&mut self) {
        self.sbuf.release();
        self.rbuf.release();
    }

    /// The application read: open the window, with an update when it grew enough
    /// (RFC 9293 §3.8.6.2.2 receiver SWS avoidance).
    fn after_read(&mut self) {
        if self.fin_rcvd
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
        if grow >= (2 * self.rcv_mss).min(half)
            || (cur < self.rcv_mss && grow >= self.rcv_mss.min(half))
        {
            self.ack_now = true;
        }
    }

    /// Free receive space, limited to what the window field can say.
    #[inline]
    fn free_window(&self) -> u32 {
        let max = 65_535u64 << self.rcv_wscale;
        (self.rbuf.free() as u64).min(max) as u32
    }

    /// Sends an ACK at once, at most [`CHALLENGE_ACKS_PER_SEC`] per second together with
    /// [`Tcb::throttled_ack`] (RFC 5961 §3.2, §4, §7).
    fn challenge_ack(&mut self, now: u64) {
        if self.ack_budget(now) {
            self.stats.challenge_acks += 1;
            self.ack_now = true;
        }
    }

    /// ACK for an unacceptable ACK field (RFC 5961 §5.2), throttled like challenge ACKs.
    fn throttled_ack(&mut self, now: u64) {
        if self.ack_budget(now) {
            self.ack_now = true;
        }
    }

    fn ack_budget(&mut self, now: u64) -> bool {
        if self.chal_n == 0 || now.saturating_sub(self.chal_at) >= 1_000_000_000 {
            self.chal_at = now;
            self.chal_n = 0;
        }
        if self.chal_n < CHALLENGE_ACKS_PER_SEC {
            self.chal_n += 1;
            true
        } else {
            false
        }
    }

    #[inline]
    fn cc(&mut self) -> &mut dyn CongestionControl {
        if self.cc.is_none() {
            self.cc = Some(self.cc_alg.build(self.smss));
        }
        self.cc.as_deref_mut().expect("just built")
    }
}

/// The RST to answer a segment that reached no connection or listener (RFC 9293 §3.10.7.1):
/// none for a RST; `<SEQ=SEG.ACK><CTL=RST>` for an ACK; otherwise `<SEQ=0><ACK=SEG.SEQ+SEG.LEN>
/// <CTL=RST,ACK>`. Ports are swapped.
pub fn reset_for(seg: &Segment<'_>) -> Option<Header> {
    if seg.flags.has(Flags::RST) {
        return None;
    }
    let mut h = Header {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        ..Header::default()
    };
    if seg.flags.has(Flags::ACK) {
        h.seq = seg.ack;
        h.flags = Flags::RST;
    } else {
        h.seq = Seq(0);
        h.ack = seg.seq + seg.seg_len();
        h.flags = Flags::RST | Flags::ACK;
    }
    Some(h)
}
