//! Reno (RFC 5681), window credit: cumulative acks only, fast retransmit and fast recovery
//! with window inflation; it "can only recover from one loss within the window using fast
//! retransmit" (Tonic §6.1.1): recovery ends at the first new ack, and a further loss in the
//! same window needs three more duplicate acks or a timeout.

use super::super::module::{HookOutput, IncomingInput, NewAckInput, NewAckOutput};
use super::{clamp_wnd, is_ack, is_ack_pkt, ModuleParams, TcpModule, TcpState, TcpVariant};

/// The Reno module.
pub type Reno = TcpModule<RenoVariant>;

/// Reno's part of [`Reno`]: fast retransmit and fast recovery on cumulative acks.
#[derive(Clone, Copy, Debug)]
pub struct RenoVariant;

/// Bit of context word 3 that holds `in_recovery` (see `TcpState::store`).
const IN_RECOVERY: u64 = 1 << 32;

impl TcpVariant for RenoVariant {
    const NAME: &'static str = "reno";
    const NEW_ACK_FAST_PATH: bool = true;

    /// A new ack outside recovery: [`incoming`](TcpVariant::incoming)'s first branch, which
    /// grows the window and ends a timeout without reading the rest of the state.
    #[inline(always)]
    fn incoming_new_ack(
        p: &ModuleParams,
        i: &NewAckInput<'_>,
        ctx: &mut [u64],
    ) -> Option<NewAckOutput> {
        let c = TcpState::words_mut(ctx);
        if !(is_ack_pkt(i.pkt) && i.new_wnd_start > i.old_wnd_start && c[3] & IN_RECOVERY == 0) {
            return None;
        }
        Some(TcpState::new_ack_words(
            p.rto_ns,
            c,
            i.newly_acked_cnt,
            i.wnd_size,
        ))
    }

    #[inline(always)]
    fn incoming(p: &ModuleParams, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        if !is_ack(i) {
            return;
        }
        let mut s = TcpState::load(ctx);
        let f = &i.flow;
        let sent_out = f.sent_out();
        let is_new_ack = i.new_wnd_start > i.old_wnd_start;
        let is_dup_ack = !is_new_ack && i.pkt.cumulative_ack == i.old_wnd_start && sent_out > 0;
        let wnd_in = f.wnd_size;
        let wnd = if is_new_ack {
            s.dup_acks = 0;
            if s.in_recovery {
                // Deflate: cwnd = ssthresh (RFC 5681 §3.2 step 6).
                s.in_recovery = false;
                s.cwnd = s.ss_thresh;
            } else {
                s.grow(i.newly_acked_cnt, wnd_in);
            }
            s.in_timeout = false;
            s.progress(p.rto_ns, out);
            s.cwnd as u64
        } else if is_dup_ack {
            s.dup_acks += 1;
            if s.dup_acks == p.dup_ack_thresh && !s.in_recovery {
                let flight = sent_out.min(u32::MAX as u64) as u32;
                s.ss_thresh = (flight / 2).max(2);
                s.cwnd = s.ss_thresh;
                s.in_recovery = true;
                s.wnd_inc_cntr = 0;
                out.mark_for_rtx(f.wnd_start, f.wnd_start + 1);
            }
            // Inflation (recovery) or limited transmit (RFC 3042) before it.
            s.cwnd as u64 + s.dup_acks as u64
        } else {
            wnd_in as u64
        };
        out.set_wnd_size(clamp_wnd(wnd));
        s.store(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ack, drain_ids, engine};
    use super::*;

    #[test]
    fn one_fast_retransmit_then_deflation() {
        let mut e = engine(Box::new(Reno::new(ModuleParams::default())), 1000);
        assert_eq!(drain_ids(&mut e, 0).len(), 10);
        // Segment 0 lost; 1.. arrive: dup acks of 0.
        ack(&mut e, 0, 0, 1);
        ack(&mut e, 0, 0, 2);
        // Limited transmit: two new segments on the first two dup acks.
        assert_eq!(drain_ids(&mut e, 2), vec![10, 11]);
        ack(&mut e, 0, 0, 3);
        // ss_thresh = 12 / 2 = 6; cwnd + 3 = 9 < 12 in flight: only the retransmission.
        assert_eq!(drain_ids(&mut e, 3), vec![0]);
        for k in 4..=10 {
            ack(&mut e, 0, 0, k);
        }
        // Window 6 + 10 = 16 from 0: new segments 12..16.
        assert_eq!(drain_ids(&mut e, 10), vec![12, 13, 14, 15]);
        ack(&mut e, 0, 12, 20);
        let s = TcpState::load(e.dd().ctx(0));
        assert!(!s.in_recovery);
        assert_eq!(e.flow_view(0).unwrap().wnd_size, 6, "deflated to ss_thresh");
    }
}
