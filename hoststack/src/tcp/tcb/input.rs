//! Segment arrival (RFC 9293 §3.10.7), with RFC 5961 (RST, SYN and ACK checks), RFC 7323
//! (PAWS, TS.Recent), RFC 5681 / RFC 6582 / RFC 6675 loss detection and RFC 2018 SACK.

use super::super::recvbuf::WriteOutcome;
use super::super::sack::DUP_THRESH;
use super::super::segment::{TcpFlags, TcpRepr};
use super::super::seq::Seq;
use super::{State, Tcb, TcpError, Timer, PAWS_IDLE_NS};

/// Timestamp ticks (ms) a segment may lag TS.Recent before PAWS drops it: reordering by a
/// tick is not an old duplicate (Linux's TCP_PAWS_WINDOW).
const PAWS_WINDOW: u32 = 1;

/// `a` is before `b` on the 32-bit timestamp clock (RFC 7323 §5.3 uses modular compare).
#[inline]
fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The acceptability test of RFC 9293 §3.10.7.4 (its four cases).
#[inline]
fn acceptable(seq: Seq, len: u32, rcv_nxt: Seq, wnd: u32) -> bool {
    let end = rcv_nxt + wnd;
    match (len, wnd) {
        (0, 0) => seq == rcv_nxt,
        (0, _) => seq.in_range(rcv_nxt, end),
        (_, 0) => false,
        _ => seq.in_range(rcv_nxt, end) || (seq + (len - 1)).in_range(rcv_nxt, end),
    }
}

impl Tcb {
    /// SYN-SENT (RFC 9293 §3.10.7.3).
    pub(super) fn input_syn_sent(&mut self, seg: &TcpRepr<'_>, now: u64) {
        let f = seg.flags;
        if f.has(TcpFlags::ACK) && (seg.ack.le(self.snd.iss) || seg.ack.gt(self.snd.max)) {
            // An ACK for something we never sent.
            if !f.has(TcpFlags::RST) {
                self.flags.reply_rst = Some(seg.ack);
            }
            return;
        }
        if f.has(TcpFlags::RST) {
            // Acceptable only with an acceptable ACK (RFC 5961 §3.2 leaves SYN-SENT alone).
            if f.has(TcpFlags::ACK) {
                self.fail(TcpError::Refused);
            }
            return;
        }
        if !f.has(TcpFlags::SYN) {
            return;
        }
        self.rcv.irs = seg.seq;
        self.rcv.nxt = seg.seq + 1;
        self.opt.last_ack_sent = self.rcv.nxt;
        self.rcv.adv = self.rcv.nxt + self.syn_window() as u32;
        self.negotiate(&seg.options, now);
        self.snd.wnd = seg.window as u32;
        self.snd.max_wnd = self.snd.wnd;
        self.snd.wl1 = seg.seq;
        self.snd.wl2 = seg.ack;
        if f.has(TcpFlags::ACK) {
            self.snd.una = seg.ack;
            self.establish(seg, now);
            self.flags.ack_now = true;
        } else {
            // Simultaneous open: SYN-ACK with our ISS.
            self.state = State::SynReceived;
            self.flags.syn_pending = true;
        }
    }

    /// The handshake completed: ESTABLISHED (or FIN-WAIT-1 when the application already shut
    /// the write side), controller built, the handshake's RTT sampled.
    ///
    /// A SYN (or SYN-ACK) sent once is timed by the clock (RFC 6298 §3). A retransmitted one
    /// is ambiguous (Karn's rule), but with timestamps `seg`'s TSecr names the transmission
    /// it answers (RFC 7323 §4.1), so its RTT is sampled from that. Without a sample the
    /// backed-off RTO of the handshake would stay on the first data (seconds), and a lost
    /// first segment would wait that long.
    fn establish(&mut self, seg: &TcpRepr<'_>, now: u64) {
        self.state = if self.flags.fin_queued {
            State::FinWait1
        } else {
            State::Established
        };
        if self.snd.nxt.lt(self.snd.una) {
            self.snd.nxt = self.snd.una;
        }
        if !self.flags.syn_rexmitted {
            self.timers
                .rtt
                .sample(now.saturating_sub(self.timers.syn_sent_at));
        } else if let Some(rtt) = self.ts_rtt_ns(seg, now) {
            self.timers.rtt.sample(rtt);
        }
        self.rec.cc = Some(self.cfg.cc.build(self.opt.smss));
        self.timers.retries = 0;
        self.timers.running = Timer::Off;
        self.rec.recover = self.snd.una;
        self.rec.rxt_next = self.snd.una;
        self.pending.established = true;
    }

    /// The RTT `seg`'s TSecr measures (RFC 7323 §4.1): our clock now minus the TSval it
    /// echoes, in ns. None without timestamps, for a zero TSecr (the peer echoes nothing),
    /// or for an echo older than two minutes (not one of ours).
    fn ts_rtt_ns(&self, seg: &TcpRepr<'_>, now: u64) -> Option<u64> {
        if !self.opt.ts_ok {
            return None;
        }
        let (_, ecr) = seg.options.timestamp?;
        let d = self.ts_now(now).wrapping_sub(ecr) >> self.opt.ts_shift;
        (ecr != 0 && d < 120_000).then_some(u64::from(d) * 1_000_000)
    }

    /// Every state after SYN-SENT (RFC 9293 §3.10.7.4).
    pub(super) fn input_synchronized(&mut self, seg: &TcpRepr<'_>, now: u64) {
        let f = seg.flags;
        let seg_len = seg.seg_len();

        // The peer retransmitted its SYN: our SYN-ACK was lost; send it again now.
        if self.state == State::SynReceived
            && f.has(TcpFlags::SYN)
            && !f.has(TcpFlags::ACK)
            && !f.has(TcpFlags::RST)
            && seg.seq == self.rcv.irs
        {
            self.flags.syn_pending = true;
            return;
        }

        // Simultaneous open (RFC 9293 §3.5, Figure 8): the peer's SYN-ACK acknowledges our
        // SYN while we are in SYN-RECEIVED.
        if self.state == State::SynReceived
            && f.has(TcpFlags::SYN)
            && f.has(TcpFlags::ACK)
            && !f.has(TcpFlags::RST)
            && seg.seq == self.rcv.irs
        {
            if self.snd.una.lt(seg.ack) && seg.ack.le(self.snd.max) {
                self.snd.una = seg.ack;
                self.snd.wnd = seg.window as u32; // SYN windows are not scaled
                self.snd.max_wnd = self.snd.wnd;
                self.snd.wl1 = seg.seq;
                self.snd.wl2 = seg.ack;
                self.establish(seg, now);
                self.flags.ack_now = true;
            } else {
                self.flags.reply_rst = Some(seg.ack);
            }
            return;
        }

        let wnd = self.rcv_wnd();
        let ok = acceptable(seg.seq, seg_len, self.rcv.nxt, wnd);

        // RST (RFC 5961 §3.2): exact match resets, in window challenges, else ignored.
        if f.has(TcpFlags::RST) {
            if !ok {
                self.stats.rst_ignored += 1;
            } else if seg.seq == self.rcv.nxt {
                self.on_reset();
            } else {
                self.challenge_ack(now);
            }
            return;
        }

        // SYN in a synchronized state, whatever its number (RFC 5961 §4).
        if f.has(TcpFlags::SYN) {
            self.challenge_ack(now);
            return;
        }

        // PAWS (RFC 7323 §5.3 R1).
        let tsval = if self.opt.ts_ok {
            seg.options.timestamp.map(|t| t.0)
        } else {
            None
        };
        if let Some(v) = tsval {
            if ts_before(v.wrapping_add(PAWS_WINDOW), self.opt.ts_recent)
                && now.saturating_sub(self.opt.ts_recent_at) < PAWS_IDLE_NS
            {
                self.stats.paws_rejected += 1;
                self.flags.ack_now = true;
                return;
            }
        }

        if !ok {
            // Unacceptable: ACK and drop (RFC 9293 §3.10.7.4), but still take a valid ACK
            // from a segment at RCV.NXT when our window is zero.
            self.stats.out_of_window += 1;
            self.flags.ack_now = true;
            if self.state == State::TimeWait
                && f.has(TcpFlags::FIN)
                && seg.seq + seg_len == self.rcv.nxt
            {
                // A retransmitted FIN: re-ACK it and restart 2·MSL (RFC 9293 §3.10.7.4).
                self.timers.running = Timer::TimeWait;
                self.timers.at = now.saturating_add(self.cfg.time_wait_ns);
            }
            if wnd == 0
                && seg.seq == self.rcv.nxt
                && f.has(TcpFlags::ACK)
                && self.state != State::SynReceived
            {
                self.process_ack(seg, now);
                self.after_ack_state(now);
            }
            return;
        }

        if !f.has(TcpFlags::ACK) {
            self.stats.no_ack += 1;
            return;
        }

        // TS.Recent (RFC 7323 §4.3 / §5.3 R3).
        if let Some(v) = tsval {
            if !ts_before(v, self.opt.ts_recent) && seg.seq.le(self.opt.last_ack_sent) {
                self.opt.ts_recent = v;
                self.opt.ts_recent_at = now;
            }
        }

        if self.state == State::SynReceived {
            if !(self.snd.una.lt(seg.ack) && seg.ack.le(self.snd.max)) {
                self.flags.reply_rst = Some(seg.ack);
                return;
            }
            self.snd.una = seg.ack;
            self.snd.wnd = (seg.window as u32) << self.opt.snd_wscale;
            self.snd.max_wnd = self.snd.wnd;
            self.snd.wl1 = seg.seq;
            self.snd.wl2 = seg.ack;
            self.establish(seg, now);
        }

        if !self.process_ack(seg, now) {
            return;
        }
        if !self.after_ack_state(now) {
            return;
        }

        self.segment_text(seg, now);
    }

    /// An acceptable RST with SEG.SEQ = RCV.NXT (RFC 9293 §3.10.7.4 second check).
    fn on_reset(&mut self) {
        match self.state {
            State::SynReceived if self.active => self.fail(TcpError::Refused),
            State::SynReceived
            | State::Established
            | State::FinWait1
            | State::FinWait2
            | State::CloseWait => self.fail(TcpError::Reset),
            _ => {
                self.state = State::Closed;
                self.clear_pending_work();
                self.release_buffers();
            }
        }
    }

    /// State changes on the ACK of our FIN (RFC 9293 §3.10.7.4 fifth check). Returns false
    /// when the connection is gone.
    fn after_ack_state(&mut self, now: u64) -> bool {
        let fin_acked = self.flags.fin_queued && self.snd.una == self.snd.end + 1;
        if !fin_acked {
            return self.state != State::Closed;
        }
        match self.state {
            State::FinWait1 => self.state = State::FinWait2,
            State::Closing => self.enter_time_wait(now),
            State::LastAck => {
                self.state = State::Closed;
                self.clear_pending_work();
                self.sbuf.release();
                return false;
            }
            _ => {}
        }
        self.state != State::Closed
    }

    fn enter_time_wait(&mut self, now: u64) {
        self.state = State::TimeWait;
        self.timers.running = Timer::TimeWait;
        self.timers.at = now.saturating_add(self.cfg.time_wait_ns);
        self.sbuf.release();
    }

    /// The ACK field (RFC 9293 §3.10.7.4 fifth check, RFC 5961 §5). Returns false when the
    /// segment must be dropped.
    fn process_ack(&mut self, seg: &TcpRepr<'_>, now: u64) -> bool {
        if self.tonic.is_some() {
            // The NIC owns snd.una, snd.nxt and snd.wnd (Tonic §5): it processed this ACK.
            return true;
        }
        let ack = seg.ack;
        let oldest = Seq(self.snd.una.0.wrapping_sub(self.snd.max_wnd));
        if ack.gt(self.snd.max) || ack.lt(oldest) {
            self.stats.bad_acks += 1;
            self.throttled_ack(now);
            return false;
        }
        self.timers.probes = 0; // the peer answers
        let win = (seg.window as u32) << self.opt.snd_wscale;
        let mut new_sack = false;
        if self.opt.sack_ok && seg.options.sack_len > 0 {
            new_sack = self.rec.sb.update(
                seg.options.sack_blocks(),
                ack.max(self.snd.una),
                self.snd.max,
            );
        }
        if ack.gt(self.snd.una) {
            self.on_new_ack(seg, now);
        } else if ack == self.snd.una
            && self.snd.max != self.snd.una
            && (if self.opt.sack_ok {
                new_sack
            } else {
                seg.payload.is_empty()
                    && !seg.flags.has(TcpFlags::FIN)
                    && win != 0
                    && win == self.snd.wnd
            })
        {
            self.on_dup_ack(now);
        }
        // Window update (RFC 9293 §3.10.7.4: SND.WL1 / SND.WL2 rule).
        if ack.ge(self.snd.una)
            && (self.snd.wl1.lt(seg.seq) || (self.snd.wl1 == seg.seq && self.snd.wl2.le(ack)))
        {
            let was_zero = self.snd.wnd == 0;
            self.snd.wnd = win;
            self.snd.wl1 = seg.seq;
            self.snd.wl2 = ack;
            self.snd.max_wnd = self.snd.max_wnd.max(win);
            if was_zero
                && win > 0
                && self.snd.nxt.gt(self.snd.una)
                && self.snd.nxt - self.snd.una <= 1
            {
                // The window opened while a probe byte was unacknowledged: send it again
                // in order.
                self.snd.nxt = self.snd.una;
            }
        }
        true
    }

    /// SND.UNA < SEG.ACK ≤ SND.MAX.
    fn on_new_ack(&mut self, seg: &TcpRepr<'_>, now: u64) {
        let ack = seg.ack;
        let acked = (ack - self.snd.una) as u32;
        let data_upto = ack.min(self.snd.end);
        if data_upto.gt(self.snd.una) {
            self.sbuf.consume((data_upto - self.snd.una) as usize);
            self.pending.writable = true;
        }
        self.snd.una = ack;
        if self.snd.nxt.lt(ack) {
            self.snd.nxt = ack;
        }
        self.timers.retries = 0;
        self.rec.tlp_done = false;
        self.rec.tlp_at = 0;
        self.timers.persist_shift = 0;
        self.rec.sb.advance(ack);

        // RTT (RFC 6298 §3 with Karn's rule; RFC 7323 §4 from TSecr when the timed segment
        // was retransmitted).
        let mut sampled = false;
        if let Some((end, at)) = self.timers.rtt_timed {
            if end.le(ack) {
                self.timers.rtt.sample(now.saturating_sub(at));
                self.timers.rtt_timed = None;
                self.timers.rtt_ambiguous = false;
                sampled = true;
            }
        }
        if !sampled && self.timers.rtt_ambiguous {
            if let Some(rtt) = self.ts_rtt_ns(seg, now) {
                self.timers.rtt.sample(rtt);
                self.timers.rtt_ambiguous = false;
            }
        }

        let smss = self.opt.smss;
        let flight = (self.snd.max - self.snd.una) as u32;
        let mut restart_rto = true;
        if self.rec.in_recovery {
            if ack.ge(self.rec.recover) {
                // Full ACK (RFC 6582 §3.2 step 3; RFC 6675 §5 end of recovery).
                self.rec.in_recovery = false;
                self.rec.dupacks = 0;
                self.stats.recoveries += 1;
                self.cc().on_recovery_exit(flight, now);
            } else if self.opt.sack_ok {
                // Partial ACK with SACK: the scoreboard drives NextSeg (RFC 6675 §5 (C)).
                self.rec.rxt_next = self.rec.rxt_next.max(ack);
            } else {
                // Partial ACK (RFC 6582 §3.2 step 5): retransmit the next hole, deflate by
                // the amount acknowledged, add back one SMSS if that was at least one SMSS.
                self.flags.rexmit_pending = true;
                let cc = self.cc();
                let cw = cc.cwnd().saturating_sub(acked);
                cc.set_cwnd(cw.saturating_add(if acked >= smss { smss } else { 0 }));
                // Reset the timer only on the first partial ACK ("Impatient" variant).
                restart_rto = !self.rec.partial_seen;
                self.rec.partial_seen = true;
            }
        } else {
            self.rec.dupacks = 0;
            if self.rec.recover.lt(self.snd.una) {
                self.rec.recover = self.snd.una;
            }
            self.cc().on_ack(acked, now);
        }

        if self.snd.una == self.snd.max {
            if self.timers.running == Timer::Rto {
                self.timers.running = Timer::Off;
            }
        } else if restart_rto || self.timers.running != Timer::Rto {
            // RFC 6298 §5.3.
            self.timers.running = Timer::Rto;
            self.timers.at = now.saturating_add(self.timers.rtt.rto());
        }
    }

    /// A duplicate ACK (RFC 5681 §2 definition; with SACK, one that SACKs new data).
    fn on_dup_ack(&mut self, now: u64) {
        self.stats.dup_acks += 1;
        self.rec.dupacks = self.rec.dupacks.saturating_add(1);
        let smss = self.opt.smss;
        if self.rec.in_recovery {
            if !self.opt.sack_ok {
                // RFC 6582 §3.2 step 4: inflate by one SMSS per duplicate ACK.
                let cc = self.cc();
                let cw = cc.cwnd();
                cc.set_cwnd(cw.saturating_add(smss));
            }
            return;
        }
        let lost = self.opt.sack_ok
            && self
                .rec
                .sb
                .lost_edge(smss)
                .is_some_and(|e| self.snd.una.lt(e));
        // RFC 6582 §3.2 step 2 / RFC 6675 §5 step (2): only when the cumulative ACK covers
        // the previous recovery point.
        if (self.rec.dupacks >= DUP_THRESH || lost) && self.snd.una.ge(self.rec.recover) {
            self.enter_recovery(now);
        }
    }

    /// Fast retransmit and fast recovery (RFC 6582 §3.2 step 2, RFC 6675 §5 step (4)).
    fn enter_recovery(&mut self, now: u64) {
        let flight = (self.snd.max - self.snd.una) as u32;
        let smss = self.opt.smss;
        self.rec.in_recovery = true;
        self.rec.recover = self.snd.max;
        self.rec.partial_seen = false;
        self.rec.rxt_next = self.snd.una;
        self.rec.rescue_done = false;
        self.flags.rexmit_pending = true;
        self.stats.fast_retransmits += 1;
        let sack = self.opt.sack_ok;
        let cc = self.cc();
        cc.on_loss(flight, now);
        if !sack {
            let ss = cc.ssthresh();
            cc.set_cwnd(ss.saturating_add(3 * smss));
        }
    }

    /// Segment text and FIN (RFC 9293 §3.10.7.4 seventh and eighth checks).
    fn segment_text(&mut self, seg: &TcpRepr<'_>, now: u64) {
        let receiving = matches!(
            self.state,
            State::Established | State::FinWait1 | State::FinWait2
        );
        if !receiving {
            return;
        }
        let mut data = seg.payload;
        let mut seq = seg.seq;
        let mut fin = seg.flags.has(TcpFlags::FIN);
        // Trim what was already received.
        if seq.lt(self.rcv.nxt) {
            let d = (self.rcv.nxt - seq) as usize;
            if d > data.len() {
                data = &[];
                fin = false;
            } else {
                data = &data[d..];
            }
            seq = self.rcv.nxt;
        }
        // Trim to the window (never store beyond the advertised right edge, nor beyond the
        // peer's own FIN).
        let mut limit = self.rcv.adv;
        if let Some(fs) = self.rcv.fin {
            limit = limit.min(fs);
        }
        let room = (limit - seq).max(0) as usize;
        if data.len() > room {
            data = &data[..room];
            fin = false;
        }

        if !data.is_empty() {
            if self.flags.read_closed {
                // Data after close(): RFC 1122 §4.2.2.13 / RFC 2525 §2.17.
                self.abort();
                return;
            }
            let off = (seq - self.rcv.nxt) as usize;
            let had_ooo = self.rbuf.has_ooo();
            match self.rbuf.write(off, data) {
                WriteOutcome::InOrder(n) => {
                    self.rcv.nxt += n as u32;
                    self.stats.bytes_in += n as u64;
                    self.pending.readable = true;
                    if had_ooo {
                        // Filling a hole: ACK at once (RFC 5681 §4.2).
                        self.flags.ack_now = true;
                    } else {
                        self.rcv.unacked = self.rcv.unacked.saturating_add(data.len() as u32);
                        if self.rcv.unacked >= 2 * self.rcv.mss {
                            self.flags.ack_now = true;
                        } else if self.timers.ack_at == 0 {
                            self.timers.ack_at = now.saturating_add(self.cfg.delayed_ack_ns).max(1);
                        }
                    }
                }
                WriteOutcome::Queued => {
                    self.stats.ooo_segments += 1;
                    self.flags.ack_now = true;
                }
                WriteOutcome::Dropped => self.flags.ack_now = true,
            }
            let len = data.len() as u32;
            if len > self.rcv.mss && len <= self.cfg.mss as u32 {
                self.rcv.mss = len;
            }
        }

        if fin {
            let fs = seq + data.len() as u32;
            if fs.gt(self.rcv.nxt) {
                self.rcv.fin = Some(fs);
                self.flags.ack_now = true;
            } else if fs == self.rcv.nxt {
                self.rcv.fin = Some(fs);
            }
        }
        if self.rcv.fin == Some(self.rcv.nxt) {
            self.rcv.fin = None;
            self.on_fin(now);
        }
    }

    /// The peer's FIN, in order (RFC 9293 §3.10.7.4 eighth check).
    fn on_fin(&mut self, now: u64) {
        self.rcv.nxt += 1;
        self.flags.fin_rcvd = true;
        self.pending.readable = true;
        self.flags.ack_now = true;
        let fin_acked = self.flags.fin_queued && self.snd.una == self.snd.end + 1;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 if fin_acked => self.enter_time_wait(now),
            State::FinWait1 => self.state = State::Closing,
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptability_four_cases() {
        let n = Seq(1000);
        assert!(acceptable(Seq(1000), 0, n, 0));
        assert!(!acceptable(Seq(1001), 0, n, 0));
        assert!(acceptable(Seq(1099), 0, n, 100));
        assert!(!acceptable(Seq(1100), 0, n, 100));
        assert!(!acceptable(Seq(999), 0, n, 100));
        assert!(!acceptable(Seq(1000), 10, n, 0));
        assert!(acceptable(Seq(990), 11, n, 100)); // end in window
        assert!(!acceptable(Seq(990), 10, n, 100)); // entirely old
        assert!(acceptable(Seq(1099), 500, n, 100));
        assert!(!acceptable(Seq(1100), 5, n, 100));
    }

    #[test]
    fn timestamp_order_wraps() {
        assert!(ts_before(u32::MAX, 0));
        assert!(!ts_before(0, u32::MAX));
        assert!(!ts_before(5, 5));
    }
}
