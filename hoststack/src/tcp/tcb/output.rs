//! Timers and transmission: SYN / SYN-ACK, data under the send, congestion and Nagle / SWS
//! rules (RFC 9293 §3.7.4, §3.8.6.2.1) with TSO-sized payloads, FIN, fast retransmit
//! (RFC 6582), SACK-based recovery (RFC 6675 NextSeg), RTO go-back-N (RFC 6298 §5, RFC 5681
//! §3.1), zero-window probes (RFC 9293 §3.8.6.1), ACKs with scaled, never-shrinking windows
//! (RFC 7323 §2.3, RFC 9293 §3.8.6) and SACK blocks (RFC 2018 §4), RST.

use super::super::segment::{
    header_len, SackBlock, TcpFlags, TcpHeader, TcpOptions, FIXED_HEADER_LEN, MAX_SACK_BLOCKS,
};
use super::super::seq::Seq;
use super::{Outgoing, State, Tcb, TcpError, Timer};

/// Why a data segment is sent (for the counters and Karn's rule).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// New data or a go-back-N / fast retransmission.
    Data,
    /// A retransmission chosen by RFC 6675 NextSeg.
    SackRexmit,
    /// A zero-window probe.
    Probe,
}

/// Upper bound on segments one [`Tcb::poll_transmit`] call emits (a safety net; windows
/// bound it long before).
const MAX_BURST: usize = 4096;

/// RFC 8985 §7.2's WCDelAckT: the delayed-ACK time a probe allows for when one segment is in
/// flight (our own delayed ACK is 40 ms; a Linux peer's at most 200 ms).
const DELAYED_ACK_ALLOWANCE_NS: u64 = 200_000_000;

impl Tcb {
    /// Emits what is due (see [`Tcb::poll_transmit`]), with at most `budget` segments from
    /// the window and SACK recovery (the rest waits for the next call, as when cwnd-limited).
    pub(super) fn transmit(
        &mut self,
        now: u64,
        budget: usize,
        emit: &mut dyn FnMut(&Outgoing<'_>),
    ) -> usize {
        self.run_timers(now);
        let mut n = 0;
        if let Some(seq) = self.flags.reply_rst.take() {
            self.emit_rst(seq, None, emit);
            n += 1;
        }
        match self.state {
            State::Closed => {
                if self.flags.rst_pending {
                    self.flags.rst_pending = false;
                    self.emit_rst(self.snd.max, Some(self.rcv.nxt), emit);
                    n += 1;
                }
                return n;
            }
            State::SynSent | State::SynReceived => {
                if self.flags.syn_pending
                    || (self.state == State::SynReceived && self.flags.ack_now)
                {
                    self.emit_syn(now, emit);
                    n += 1;
                }
                self.flags.ack_now = false;
                self.timers.ack_at = 0;
                self.update_timer(now);
                return n;
            }
            _ => {}
        }
        n += self.send_data(now, budget.clamp(1, MAX_BURST), emit);
        if self.flags.ack_now {
            // A segment without data carries the highest sequence number sent (Linux's
            // tcp_acceptable_seq), not the go-back-N pointer: after a timeout SND.NXT drops to
            // SND.UNA, below the peer's RCV.NXT when it already holds that data, and the peer
            // would then find the ACK unacceptable (RFC 9293 §3.10.7.4) and ignore its ACK
            // field; two sides in that state at once never recover.
            let h = self.make_header(self.snd.max, TcpFlags::ACK, now);
            emit(&Outgoing {
                header: h,
                payload: [&[], &[]],
            });
            self.stats.segs_out += 1;
            n += 1;
        }
        self.update_timer(now);
        self.arm_tlp(now);
        n
    }

    /// Arms the tail-loss probe (RFC 8985 §7.2) while data is outstanding outside recovery,
    /// once per ACK: PTO = 2·SRTT (at least 10 ms, as Linux), plus the peer's delayed-ACK
    /// allowance when one segment is in flight; only if it falls before the RTO.
    fn arm_tlp(&mut self, now: u64) {
        if !self.cfg.tail_loss_probe
            || self.timers.running != Timer::Rto
            || self.rec.in_recovery
            || self.rec.tlp_done
            || !matches!(
                self.state,
                State::Established | State::CloseWait | State::FinWait1 | State::LastAck
            )
        {
            self.rec.tlp_at = 0;
            return;
        }
        if self.rec.tlp_at != 0 {
            return;
        }
        let Some(srtt) = self.timers.rtt.srtt() else {
            return;
        };
        let mut pto = (2 * srtt).max(10_000_000);
        if ((self.snd.max - self.snd.una) as u32) <= self.opt.smss {
            pto = pto.saturating_add(DELAYED_ACK_ALLOWANCE_NS);
        }
        let at = now.saturating_add(pto);
        if at < self.timers.at {
            self.rec.tlp_at = at;
        }
    }

    /// Expired timers: delayed ACK, RTO, persist, TIME_WAIT / orphaned FIN_WAIT_2.
    fn run_timers(&mut self, now: u64) {
        if self.timers.ack_at != 0 && now >= self.timers.ack_at {
            self.timers.ack_at = 0;
            self.flags.ack_now = true;
        }
        if self.rec.tlp_at != 0 && now >= self.rec.tlp_at {
            self.rec.tlp_at = 0;
            self.rec.tlp_done = true;
            self.rec.tlp_fire = true;
        }
        if self.timers.running == Timer::Off || now < self.timers.at {
            return;
        }
        let t = self.timers.running;
        self.timers.running = Timer::Off;
        match t {
            Timer::Rto => self.on_rto(now),
            Timer::Persist => self.on_persist(),
            // An ACK still owed (of the FIN that began a zero-length TIME_WAIT) goes out
            // first; the connection ends on the next poll.
            Timer::TimeWait if self.flags.ack_now => self.timers.running = Timer::TimeWait,
            Timer::TimeWait | Timer::FinWait2 => {
                self.state = State::Closed;
                self.clear_pending_work();
                self.sbuf.release();
                if self.rbuf.is_empty() {
                    self.rbuf.release();
                }
            }
            Timer::Off => {}
        }
    }

    /// Retransmission timeout (RFC 6298 §5.4–5.6, RFC 5681 §3.1, RFC 6582 §4, RFC 2018 §8).
    fn on_rto(&mut self, now: u64) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.timers.retries += 1;
                if self.timers.retries > self.cfg.syn_retries {
                    self.fail(TcpError::TimedOut);
                    return;
                }
                self.stats.rto_expiries += 1;
                self.timers.rtt.backoff();
                self.flags.syn_pending = true;
            }
            State::Closed | State::TimeWait | State::FinWait2 => {}
            _ => {
                if self.snd.una == self.snd.max {
                    return;
                }
                self.timers.retries += 1;
                if self.timers.retries > self.cfg.max_retransmits {
                    self.fail(TcpError::TimedOut);
                    return;
                }
                self.stats.rto_expiries += 1;
                let flight = (self.snd.max - self.snd.una) as u32;
                self.cc().on_rto(flight, now);
                self.timers.rtt.backoff();
                self.rec.in_recovery = false;
                self.rec.dupacks = 0;
                self.rec.recover = self.snd.max;
                self.rec.sb.clear();
                self.flags.rexmit_pending = false;
                // Go back N: resend from the first unacknowledged byte.
                self.snd.nxt = self.snd.una;
                if self.timers.rtt_timed.take().is_some() {
                    self.timers.rtt_ambiguous = true;
                }
            }
        }
    }

    /// Persist timer: probe a zero window, or override SWS avoidance (RFC 9293 §3.8.6.1,
    /// §3.8.6.2.1).
    fn on_persist(&mut self) {
        if self.snd.wnd == 0 && self.snd.end.gt(self.snd.una) {
            self.timers.probes += 1;
            if self.timers.probes > self.cfg.max_retransmits {
                self.fail(TcpError::TimedOut);
                return;
            }
            self.timers.persist_shift = (self.timers.persist_shift + 1).min(30);
            self.flags.probe_now = true;
        } else {
            self.flags.override_sws = true;
        }
    }

    fn persist_interval(&self) -> u64 {
        self.timers
            .rtt
            .rto()
            .saturating_mul(1u64 << self.timers.persist_shift.min(30))
            .min(self.cfg.rto_max_ns.max(self.timers.rtt.rto()))
    }

    /// Arms the one timer slot for what the connection waits on now.
    pub(super) fn update_timer(&mut self, now: u64) {
        let want = match self.state {
            State::Closed => Timer::Off,
            State::TimeWait => Timer::TimeWait,
            State::FinWait2 if self.flags.read_closed => Timer::FinWait2,
            State::FinWait2 => Timer::Off,
            // The NIC runs the retransmission timer (Tonic §3.2.3).
            _ if self.tonic.is_some() => Timer::Off,
            State::SynSent | State::SynReceived => {
                if self.flags.syn_sent {
                    Timer::Rto
                } else {
                    Timer::Off
                }
            }
            _ => {
                let unsent = self.snd.nxt.lt(self.snd.end)
                    || (self.flags.fin_queued && self.snd.nxt.le(self.snd.end));
                if self.snd.wnd == 0
                    && self.snd.end.gt(self.snd.una)
                    && self.snd.nxt - self.snd.una <= 1
                {
                    Timer::Persist
                } else if self.snd.max != self.snd.una {
                    Timer::Rto
                } else if unsent {
                    Timer::Persist
                } else {
                    Timer::Off
                }
            }
        };
        if want != self.timers.running {
            self.timers.running = want;
            self.timers.at = match want {
                Timer::Off => 0,
                Timer::Rto => now.saturating_add(self.timers.rtt.rto()),
                Timer::Persist => now.saturating_add(self.persist_interval()),
                Timer::TimeWait => now.saturating_add(self.cfg.time_wait_ns),
                Timer::FinWait2 => now.saturating_add(self.cfg.fin_wait2_ns),
            };
        }
    }

    /// Bytes of options the next segment carries (timestamps, SACK blocks).
    fn opt_len_now(&self) -> u32 {
        if !(self.opt.sack_ok && self.rbuf.has_ooo()) {
            return self.opt.base_opt_len;
        }
        let n = self
            .rbuf
            .ooo_ranges()
            .min(if self.opt.ts_ok { 3 } else { MAX_SACK_BLOCKS });
        let h = TcpHeader {
            flags: TcpFlags::ACK,
            options: TcpOptions {
                timestamp: self.opt.ts_ok.then_some((0, 0)),
                sack_len: n as u8,
                ..TcpOptions::default()
            },
            ..TcpHeader::default()
        };
        (header_len(&h) - FIXED_HEADER_LEN) as u32
    }

    /// Largest payload of one wire segment now (RFC 9293 §3.7.1: Eff.snd.MSS less options).
    fn payload_room(&self) -> u32 {
        self.opt.eff_mss.saturating_sub(self.opt_len_now()).max(1)
    }

    /// Largest payload of one emitted segment: up to `max_segment_payload` for TSO when the
    /// header carries only the usual options (the NIC copies it onto each piece).
    fn burst_room(&self) -> u32 {
        let one = self.payload_room();
        if self.cfg.max_seg_payload > self.cfg.mss as u32 && one == self.opt.smss {
            self.cfg.max_seg_payload
        } else {
            one.min(self.cfg.max_seg_payload.max(1))
        }
    }

    fn send_data(&mut self, now: u64, budget: usize, emit: &mut dyn FnMut(&Outgoing<'_>)) -> usize {
        // The NIC owns the sender (Tonic §5): data, retransmissions and the FIN wait.
        if self.rec.cc.is_none() || self.tonic.is_some() {
            return 0;
        }
        let mut n = 0;
        if self.rec.tlp_fire {
            self.rec.tlp_fire = false;
            if self.snd.una.lt(self.snd.max) && !self.rec.in_recovery {
                // Tail-loss probe (RFC 8985 §7.3): resend the last segment sent, so that the
                // peer's ACK (with SACK) shows what is missing without waiting for the RTO.
                let e = self.snd.max;
                let s = self.snd.una.max(Seq(e.0.wrapping_sub(self.opt.smss)));
                self.emit_range(s, e, now, emit, Kind::Data);
                self.stats.tail_loss_probes += 1;
                n += 1;
            }
        }
        if self.flags.probe_now {
            self.flags.probe_now = false;
            if self.snd.wnd == 0 && self.snd.end.gt(self.snd.una) {
                // One byte of new data beyond the zero window (RFC 9293 §3.8.6.1).
                let s = self.snd.una;
                self.emit_range(s, s + 1, now, emit, Kind::Probe);
                if self.snd.nxt.lt(s + 1) {
                    self.snd.nxt = s + 1;
                }
                return 1;
            }
        }
        if self.flags.rexmit_pending {
            self.flags.rexmit_pending = false;
            if self.snd.una.lt(self.snd.max) {
                // Fast retransmit / partial ACK: the first unacknowledged segment.
                let s = self.snd.una;
                let mut e = (s + self.payload_room().min(self.opt.smss)).min(self.snd.max);
                if let Some((h, he)) = self.rec.sb.next_hole(s, self.snd.max) {
                    if h == s {
                        e = e.min(he);
                    }
                }
                self.emit_range(s, e, now, emit, Kind::Data);
                n += 1;
                if self.rec.in_recovery {
                    self.rec.rxt_next = self.rec.rxt_next.max(e);
                }
            }
        }
        if self.rec.in_recovery && self.opt.sack_ok {
            return n + self.sack_recovery(now, budget, emit);
        }
        n + self.send_window(now, budget, emit)
    }

    /// Sends what the windows, Nagle and SWS avoidance allow from SND.NXT (new data, or a
    /// go-back-N retransmission after an RTO skipping SACKed ranges), then the FIN.
    fn send_window(
        &mut self,
        now: u64,
        budget: usize,
        emit: &mut dyn FnMut(&Outgoing<'_>),
    ) -> usize {
        let smss = self.opt.smss;
        let mut n = 0;
        while n < budget {
            let mut s = self.snd.nxt;
            if s.lt(self.snd.max) && !self.rec.sb.is_empty() {
                let t = self.rec.sb.skip_sacked(s);
                if t != s {
                    s = t;
                    self.snd.nxt = t;
                }
            }
            let data_avail = if s.lt(self.snd.end) {
                (self.snd.end - s) as u32
            } else {
                0
            };
            let fin_avail = self.flags.fin_queued && s.le(self.snd.end);
            if data_avail == 0 && !fin_avail {
                break;
            }
            let in_flight = (s - self.snd.una).max(0) as u32;
            // RFC 3042 limited transmit: up to two segments more on the first duplicate ACKs.
            let lt = if self.rec.in_recovery {
                0
            } else {
                self.rec.dupacks.min(2) * smss
            };
            let cwnd = self
                .rec
                .cc
                .as_ref()
                .map_or(smss, |c| c.cwnd())
                .saturating_add(lt);
            let usable = self.snd.wnd.min(cwnd).saturating_sub(in_flight);
            let is_rexmit = s.lt(self.snd.max);
            let mut len = data_avail.min(usable).min(self.burst_room());
            if is_rexmit {
                if let Some((h, he)) = self.rec.sb.next_hole(s, self.snd.max) {
                    if h == s {
                        len = len.min((he - s) as u32);
                    }
                }
            }
            if data_avail > 0 {
                if len == 0 {
                    break;
                }
                if len < smss && !is_rexmit && !self.flags.override_sws {
                    let all = len == data_avail;
                    let nagle_ok =
                        self.cfg.nodelay || in_flight == 0 || (all && self.flags.fin_queued);
                    let sws_ok = all || (self.snd.max_wnd > 0 && len >= self.snd.max_wnd / 2);
                    if !(nagle_ok && sws_ok) {
                        break;
                    }
                }
                self.flags.override_sws = false;
            }
            let fin = fin_avail && len == data_avail;
            let e = s + len + fin as u32;
            self.emit_range(s, e, now, emit, Kind::Data);
            self.snd.nxt = e;
            n += 1;
        }
        n
    }

    /// Step (C) of RFC 6675 §5: while cwnd − pipe ≥ 1 SMSS, send what NextSeg (§4) picks.
    fn sack_recovery(
        &mut self,
        now: u64,
        budget: usize,
        emit: &mut dyn FnMut(&Outgoing<'_>),
    ) -> usize {
        let smss = self.opt.smss;
        let cwnd = self.rec.cc.as_ref().map_or(smss, |c| c.cwnd());
        let lost = self.rec.sb.lost_edge(smss);
        let mut pipe = self
            .rec
            .sb
            .pipe(self.snd.una, self.snd.max, lost, self.rec.rxt_next);
        self.snd.nxt = self.snd.max;
        let mut n = 0;
        while cwnd.saturating_sub(pipe) >= smss && n < budget {
            let room = self.payload_room().min(smss);
            let from = self.rec.rxt_next.max(self.snd.una);
            let hole = self.rec.sb.next_hole(from, self.snd.max);
            // (1) the first lost, not yet retransmitted hole.
            if let (Some((h, he)), Some(le)) = (hole, lost) {
                if h.lt(le) {
                    let e = (h + room).min(he);
                    self.emit_range(h, e, now, emit, Kind::SackRexmit);
                    self.rec.rxt_next = e;
                    pipe = pipe.saturating_add((e - h) as u32);
                    n += 1;
                    continue;
                }
            }
            // (2) new data the receiver's window allows.
            let s = self.snd.max;
            let data_avail = if s.lt(self.snd.end) {
                (self.snd.end - s) as u32
            } else {
                0
            };
            let fin_avail = self.flags.fin_queued && s.le(self.snd.end);
            let wnd_room = ((self.snd.una + self.snd.wnd) - s).max(0) as u32;
            if (data_avail > 0 && wnd_room > 0) || (data_avail == 0 && fin_avail) {
                let len = data_avail.min(wnd_room).min(room);
                let fin = fin_avail && len == data_avail;
                let e = s + len + fin as u32;
                self.emit_range(s, e, now, emit, Kind::Data);
                self.snd.nxt = e;
                pipe = pipe.saturating_add(len.max(1));
                n += 1;
                continue;
            }
            // (3) any unSACKed hole below the highest SACKed byte.
            if let (Some((h, he)), Some(hs)) = (hole, self.rec.sb.high()) {
                if h.lt(hs) {
                    let e = (h + room).min(he);
                    self.emit_range(h, e, now, emit, Kind::SackRexmit);
                    self.rec.rxt_next = e;
                    pipe = pipe.saturating_add((e - h) as u32);
                    n += 1;
                    continue;
                }
            }
            // (4) one rescue retransmission of the highest outstanding data per recovery.
            // Only when the sender has nothing new to send (application-limited): a
            // window-limited sender gets more SACKs as soon as the holes are repaired, and
            // would only resend data already in flight.
            let all_sent = if self.flags.fin_queued {
                self.snd.max.gt(self.snd.end)
            } else {
                self.snd.max == self.snd.end
            };
            if !self.rec.rescue_done && all_sent {
                self.rec.rescue_done = true;
                let top = self
                    .rec
                    .sb
                    .high()
                    .map_or(self.snd.una, |h| h.max(self.snd.una));
                if top.lt(self.snd.max) {
                    let s = top.max(Seq(self.snd.max.0.wrapping_sub(room)));
                    let e = self.snd.max;
                    self.emit_range(s, e, now, emit, Kind::SackRexmit);
                    pipe = pipe.saturating_add((e - s) as u32);
                    n += 1;
                    continue;
                }
            }
            break;
        }
        n
    }

    /// Emits `[s, e)` of the send sequence space (data from the send buffer, the FIN when
    /// `e` passes it) and does the accounting. The caller moves SND.NXT.
    fn emit_range(
        &mut self,
        s: Seq,
        e: Seq,
        now: u64,
        emit: &mut dyn FnMut(&Outgoing<'_>),
        kind: Kind,
    ) {
        let has_fin = self.flags.fin_queued && e == self.snd.end + 1 && s.le(self.snd.end);
        let data_end = if has_fin { self.snd.end } else { e };
        let dlen = (data_end - s).max(0) as usize;
        let mut flags = TcpFlags::ACK;
        if has_fin {
            flags = flags | TcpFlags::FIN;
        }
        if dlen > 0 && data_end == self.snd.end {
            flags = flags | TcpFlags::PSH;
        }
        let header = self.make_header(s, flags, now);
        let off = (s - self.snd.una).max(0) as usize;
        let (a, b) = self.sbuf.slices(off, dlen);
        emit(&Outgoing {
            header,
            payload: [a, b],
        });
        self.stats.segs_out += 1;
        if kind == Kind::Probe {
            self.stats.window_probes += 1;
        } else if s.lt(self.snd.max) {
            self.stats.retransmits += 1;
            if kind == Kind::SackRexmit {
                self.stats.sack_retransmits += 1;
            }
            // Karn: the running timing can no longer be trusted.
            if self.timers.rtt_timed.take().is_some() {
                self.timers.rtt_ambiguous = true;
            }
        }
        if e.gt(self.snd.max) {
            let from = s.max(self.snd.max);
            self.stats.bytes_out += (data_end - from).max(0) as u64;
            self.snd.max = e;
            if self.timers.rtt_timed.is_none() && kind != Kind::Probe {
                self.timers.rtt_timed = Some((e, now));
            }
        }
    }

    /// The window field to send: free space, scaled, with receiver SWS avoidance (the right
    /// edge moves only by min(RCV.BUFF/2, MSS) or more, RFC 9293 §3.8.6.2.2), without moving
    /// the right edge left (§3.8.6).
    ///
    /// Scaling truncates (RFC 7323 §2.3), so an unchanged edge is rounded up to the next
    /// unit; the window offered from free space keeps one unit of slack for that, so the
    /// rounded edge still fits the buffer. Only if it would not (the edge crept up over many
    /// rounded ACKs while the application did not read) is it rounded down, by less than one
    /// unit; data up to the edge announced before is still accepted (`rcv.adv`).
    fn advertise(&mut self) -> u16 {
        let ws = self.opt.rcv_wscale as u32;
        let unit = 1u32 << ws;
        let free = self.free_window();
        let offer = free.saturating_sub(unit - 1);
        let cur = self.rcv_wnd();
        let thresh = (self.rbuf.capacity() as u32 / 2).min(self.rcv.mss).max(1);
        let target = if offer >= cur.saturating_add(thresh) || self.rbuf.is_empty() {
            offer.max(cur)
        } else {
            cur
        };
        let cur_units = (cur as u64).div_ceil(unit as u64) as u32;
        let field = (target >> ws).max(cur_units).min(free >> ws).min(65_535);
        let edge = self.rcv.nxt + (field << ws);
        if edge.gt(self.rcv.adv) {
            self.rcv.adv = edge;
        }
        field as u16
    }

    /// A header with our ACK, window, timestamps and SACK blocks; the ACK obligation is met.
    fn make_header(&mut self, seq: Seq, flags: TcpFlags, now: u64) -> TcpHeader {
        let window = self.advertise();
        let mut options = TcpOptions::default();
        if self.opt.ts_ok {
            options.timestamp = Some((self.ts_now(now), self.opt.ts_recent));
        }
        if self.opt.sack_ok && self.rbuf.has_ooo() {
            let mut r = [(0u32, 0u32); MAX_SACK_BLOCKS];
            let max = if self.opt.ts_ok { 3 } else { MAX_SACK_BLOCKS };
            let k = self.rbuf.sack_ranges(&mut r[..max]);
            for (slot, &(a, b)) in options.sack.iter_mut().zip(&r[..k]) {
                *slot = SackBlock {
                    left: self.rcv.nxt + a,
                    right: self.rcv.nxt + b,
                };
            }
            options.sack_len = k as u8;
        }
        self.opt.last_ack_sent = self.rcv.nxt;
        self.flags.ack_now = false;
        self.timers.ack_at = 0;
        self.rcv.unacked = 0;
        TcpHeader {
            src_port: self.ep.local_port,
            dst_port: self.ep.remote_port,
            seq,
            ack: self.rcv.nxt,
            flags,
            window,
            options,
        }
    }

    /// SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED), first or again.
    fn emit_syn(&mut self, now: u64, emit: &mut dyn FnMut(&Outgoing<'_>)) {
        let syn_ack = self.state == State::SynReceived;
        let mut o = TcpOptions {
            mss: Some(self.cfg.mss),
            ..TcpOptions::default()
        };
        if syn_ack {
            if self.opt.ws_ok {
                o.window_scale = Some(self.cfg.want_ws);
            }
            o.sack_permitted = self.opt.sack_ok;
            if self.opt.ts_ok {
                o.timestamp = Some((self.ts_now(now), self.opt.ts_recent));
            }
        } else {
            if self.cfg.offer_ws {
                o.window_scale = Some(self.cfg.want_ws);
            }
            o.sack_permitted = self.cfg.want_sack;
            if self.cfg.want_ts {
                o.timestamp = Some((self.ts_now(now), 0));
            }
        }
        let h = TcpHeader {
            src_port: self.ep.local_port,
            dst_port: self.ep.remote_port,
            seq: self.snd.iss,
            ack: if syn_ack { self.rcv.nxt } else { Seq(0) },
            flags: if syn_ack {
                TcpFlags::SYN | TcpFlags::ACK
            } else {
                TcpFlags::SYN
            },
            window: self.syn_window(),
            options: o,
        };
        emit(&Outgoing {
            header: h,
            payload: [&[], &[]],
        });
        self.stats.segs_out += 1;
        if self.flags.syn_sent {
            self.stats.retransmits += 1;
            self.flags.syn_rexmitted = true;
        } else {
            self.flags.syn_sent = true;
            self.timers.syn_sent_at = now;
        }
        self.flags.syn_pending = false;
        self.snd.nxt = self.snd.iss + 1;
        if self.snd.max.lt(self.snd.nxt) {
            self.snd.max = self.snd.nxt;
        }
        if syn_ack {
            self.opt.last_ack_sent = self.rcv.nxt;
        }
    }

    fn emit_rst(&mut self, seq: Seq, ack: Option<Seq>, emit: &mut dyn FnMut(&Outgoing<'_>)) {
        let h = TcpHeader {
            src_port: self.ep.local_port,
            dst_port: self.ep.remote_port,
            seq,
            ack: ack.unwrap_or(Seq(0)),
            flags: if ack.is_some() {
                TcpFlags::RST | TcpFlags::ACK
            } else {
                TcpFlags::RST
            },
            window: 0,
            options: TcpOptions::default(),
        };
        emit(&Outgoing {
            header: h,
            payload: [&[], &[]],
        });
        self.stats.segs_out += 1;
    }
}
