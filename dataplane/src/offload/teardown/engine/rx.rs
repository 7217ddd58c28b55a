//! Segments from the wire for the teardown engine's flows (RFC 9293 §3.10.7.4, RFC 5961,
//! RFC 1337), split from `engine.rs`; see its documentation for the behaviour.

use offload_api::wire::tcp::{parse_options, TcpFlags, TcpOptions, TcpPacket};
use offload_api::wire::Seq;

use super::{Flow, FlowState, RxOutcome, TeardownEngine, Tx, Why};
use crate::net::csum;
use crate::net::parse::IPPROTO_TCP;

impl TeardownEngine {
    /// A TCP segment (`seg`: header and payload, as far as the IPv4 total length) from `src`
    /// to `dst`, from the wire. Segments of the engine's flows are processed (RFC 9293
    /// §3.10.7.4) and consumed; everything else is [`RxOutcome::NotMine`].
    pub fn rx(
        &mut self,
        src: [u8; 4],
        dst: [u8; 4],
        seg: &[u8],
        now: u64,
        tx: Tx<'_>,
    ) -> RxOutcome {
        let Ok(p) = TcpPacket::new_checked(seg) else {
            return RxOutcome::NotMine;
        };
        let Some(&id) = self.by_key.get(&(src, dst, p.src_port(), p.dst_port())) else {
            return RxOutcome::NotMine;
        };
        if !csum::verify_l4(src, dst, IPPROTO_TCP, seg) {
            self.stats.bad_checksum += 1;
            return RxOutcome::Consumed;
        }
        let Ok(opts) = parse_options(p.options()) else {
            self.stats.bad_options += 1;
            return RxOutcome::Consumed;
        };
        let flags = p.flags();
        if self.flows[id as usize]
            .as_ref()
            .is_some_and(|f| f.state == FlowState::TimeWait)
        {
            return self.time_wait_rx(id, &p, flags, now, tx);
        }
        self.segment(id, &p, flags, &opts, now, tx);
        RxOutcome::Consumed
    }

    /// TIME_WAIT (RFC 9293 §3.10.7.4): a retransmitted FIN is acknowledged and restarts the
    /// 2·MSL timer; a RST is ignored (RFC 1337); a SYN with a higher sequence number ends
    /// TIME_WAIT and goes on to the host (a new connection of the same 4-tuple, RFC 6191),
    /// but not a SYN+FIN, which no listener takes; anything else unacceptable gets an ACK.
    fn time_wait_rx(
        &mut self,
        id: u32,
        p: &TcpPacket<&[u8]>,
        flags: TcpFlags,
        now: u64,
        tx: Tx<'_>,
    ) -> RxOutcome {
        let Some(f) = self.flows[id as usize].as_ref() else {
            return RxOutcome::NotMine;
        };
        let seq = p.seq_number();
        let plen = p.payload().len() as u32;
        if flags.has(TcpFlags::RST) {
            self.stats.bad_rst += 1;
            return RxOutcome::Consumed;
        }
        let opens =
            flags.has(TcpFlags::SYN) && !flags.has(TcpFlags::ACK) && !flags.has(TcpFlags::FIN);
        if opens && seq.gt(f.rcv_nxt) {
            self.stats.tw_reused += 1;
            self.free_flow(id);
            return RxOutcome::NotMine;
        }
        if flags.has(TcpFlags::FIN) && seq + plen + 1 == f.rcv_nxt {
            self.stats.dup_fin_acked += 1;
            self.send_ack(id, now, tx);
            self.timers.arm(id, now, self.cfg.time_wait_ns);
            return RxOutcome::Consumed;
        }
        if !acceptable(f, seq, plen + flags.has(TcpFlags::FIN) as u32) {
            self.stats.unacceptable += 1;
            self.send_ack(id, now, tx);
        }
        RxOutcome::Consumed
    }

    /// A segment of a flow that is not in TIME_WAIT (RFC 9293 §3.10.7.4, in its order).
    fn segment(
        &mut self,
        id: u32,
        p: &TcpPacket<&[u8]>,
        flags: TcpFlags,
        opts: &TcpOptions,
        now: u64,
        tx: Tx<'_>,
    ) {
        let Some(f) = self.flows[id as usize].as_mut() else {
            return;
        };
        let seq = p.seq_number();
        let payload = p.payload();
        let plen = payload.len() as u32;
        let fin = flags.has(TcpFlags::FIN);
        let seg_len = plen + fin as u32 + flags.has(TcpFlags::SYN) as u32;
        // First: sequence number.
        if !acceptable(f, seq, seg_len) {
            if flags.has(TcpFlags::RST) {
                self.stats.bad_rst += 1;
                return;
            }
            if fin && seq + plen + 1 == f.rcv_nxt {
                self.stats.dup_fin_acked += 1;
            } else {
                self.stats.unacceptable += 1;
            }
            self.send_ack(id, now, tx);
            return;
        }
        // Second: RST (RFC 5961 §3.2).
        if flags.has(TcpFlags::RST) {
            if seq == f.rcv_nxt {
                self.stats.peer_rst += 1;
                self.free_flow(id);
            } else {
                self.stats.bad_rst += 1;
                self.send_ack(id, now, tx);
            }
            return;
        }
        // Fourth: SYN (RFC 5961 §4.2: challenge ACK).
        if flags.has(TcpFlags::SYN) {
            self.stats.bad_syn += 1;
            self.send_ack(id, now, tx);
            return;
        }
        // Fifth: ACK.
        if !flags.has(TcpFlags::ACK) {
            self.stats.no_ack += 1;
            return;
        }
        let ack = p.ack_number();
        if ack.gt(f.max) {
            self.stats.bad_ack += 1;
            self.send_ack(id, now, tx);
            return;
        }
        // RFC 7323 §4.3: TS.Recent from a segment covering rcv.nxt.
        if let (Some(ts), Some((tsval, _))) = (f.ts.as_mut(), opts.timestamp) {
            if seq.le(f.rcv_nxt) && Seq(tsval).ge(Seq(ts.0)) {
                ts.0 = tsval;
            }
        }
        let wnd = (p.window_len() as u32) << f.snd_wscale;
        let mut fast = false;
        let before = f.state;
        let advanced = ack.gt(f.una);
        if advanced {
            let acked = (ack - f.una) as usize;
            let drop = acked.min(f.data.len());
            f.data.drain(..drop);
            f.una = ack;
            if f.nxt.lt(ack) {
                f.nxt = ack;
            }
            f.retries = 0;
            f.dupacks = 0;
            if f.recover.is_some_and(|r| ack.ge(r)) {
                f.recover = None;
            }
            f.snd_wnd = wnd;
        } else if ack == f.una {
            let dup = plen == 0 && !fin && wnd == f.snd_wnd && f.una.lt(f.max);
            if dup {
                f.dupacks = f.dupacks.saturating_add(1);
                if f.dupacks == 3 && f.recover.is_none() {
                    f.recover = Some(f.max);
                    fast = true;
                }
            } else {
                f.dupacks = 0;
            }
            f.snd_wnd = wnd;
        }
        if fast {
            let (una, len) = (f.una, ((f.end - f.una).max(0) as u32).min(f.mss));
            self.send_segment(id, una, len, now, Why::Fast, tx);
        }
        let Some(f) = self.flows[id as usize].as_mut() else {
            return;
        };
        if f.fin_acked() {
            match f.state {
                FlowState::FinWait1 => f.state = FlowState::FinWait2,
                FlowState::Closing => {
                    f.state = FlowState::TimeWait;
                    self.stats.time_wait += 1;
                    self.timers.arm(id, now, self.cfg.time_wait_ns);
                    return;
                }
                FlowState::LastAck => {
                    self.stats.completed += 1;
                    self.free_flow(id);
                    return;
                }
                FlowState::FinWait2 | FlowState::TimeWait => {}
            }
        }
        // Seventh: segment text. The application closed: in-order data is acknowledged and
        // discarded; out-of-order data gets a duplicate ACK.
        let mut ack_now = false;
        let end = seq + plen;
        if plen > 0 {
            self.stats.peer_data += 1;
            if seq.le(f.rcv_nxt) {
                if end.gt(f.rcv_nxt) {
                    f.rcv_nxt = end;
                }
            } else {
                self.stats.out_of_order += 1;
            }
            ack_now = true;
        }
        // Eighth: FIN, in order only.
        if fin {
            if end == f.rcv_nxt {
                f.rcv_nxt += 1;
                match f.state {
                    FlowState::FinWait1 => f.state = FlowState::Closing,
                    FlowState::FinWait2 => {
                        f.state = FlowState::TimeWait;
                        self.stats.time_wait += 1;
                    }
                    FlowState::Closing | FlowState::LastAck | FlowState::TimeWait => {}
                }
            } else if plen == 0 {
                self.stats.out_of_order += 1;
            }
            ack_now = true;
        }
        let state = f.state;
        if ack_now {
            self.send_ack(id, now, tx);
        }
        match state {
            FlowState::TimeWait => self.timers.arm(id, now, self.cfg.time_wait_ns),
            FlowState::FinWait2 if state != before => {
                // Our FIN is acknowledged: wait for the peer's, at most `fin_wait2_ns`
                // (Linux's tcp_fin_timeout for orphaned connections).
                self.timers.arm(id, now, self.cfg.fin_wait2_ns);
            }
            FlowState::FinWait2 => {}
            _ => {
                self.transmit_new(id, now, tx);
                self.arm_rto_after_ack(id, now, advanced || fast);
            }
        }
    }

    /// After an ACK: restart the retransmission timer when it acknowledged new data (RFC
    /// 6298 §5.3) or a fast retransmit went out, stop it when everything is acknowledged.
    fn arm_rto_after_ack(&mut self, id: u32, now: u64, restart: bool) {
        let Some(f) = self.flows[id as usize].as_ref() else {
            return;
        };
        let outstanding = f.una.lt(f.max) || f.nxt.lt(f.end + 1);
        if !outstanding {
            self.timers.disarm(id);
        } else if restart || !self.timers.is_armed(id) {
            self.timers.arm(id, now, f.rto_ns);
        }
    }
}

/// RFC 9293 §3.10.7.4 acceptability of a segment of `len` (SEG.LEN) at `seq`.
fn acceptable(f: &Flow, seq: Seq, len: u32) -> bool {
    let wnd = f.rcv_wnd;
    let lo = f.rcv_nxt;
    let hi = lo + wnd;
    match (len, wnd) {
        (0, 0) => seq == lo,
        (0, _) => seq.in_range(lo, hi),
        (_, 0) => false,
        _ => seq.in_range(lo, hi) || (seq + (len - 1)).in_range(lo, hi),
    }
}
