//! SACK loss recovery "inspired from" RFC 6675 (Tonic §6.1.1), window credit.
//!
//! The fixed Incoming stage records SACK blocks in the `acked` bitmap; this module reads it
//! (read-only bitmap operations, §3.5):
//! - **loss** (RFC 6675 `IsLost`): an unacknowledged segment with at least DupThresh
//!   selectively acknowledged segments above it is lost; by the evidence rule of §3.2.2 every
//!   unacked segment below the DupThresh-th highest SACKed one is lost, so one range mark
//!   covers them (never-retransmitted ones only; a lost retransmission waits for the RTO);
//!   DupThresh duplicate acks mark `wnd-start` too;
//! - **recovery**: entered on the first loss with `cum > recover`: `ss_thresh = cwnd =
//!   max(pipe/2, 2)`, `recover` = highest sent; left when the cumulative ack passes `recover`;
//! - **pipe**: `sent_out − sacked − marked-not-yet-retransmitted`; new data may go while
//!   `pipe < cwnd`, expressed as `wnd-size = sent_out + (cwnd − pipe)`;
//! - outside recovery, slow start and congestion avoidance as NewReno; timeouts as Reno.

use super::super::module::{HookOutput, IncomingInput};
use super::{clamp_wnd, is_ack, kth_highest, ModuleParams, TcpModule, TcpState, TcpVariant};

/// The SACK module.
pub type Sack = TcpModule<SackVariant>;

/// SACK's part of [`Sack`]: RFC 6675-style loss marking, recovery and pipe.
#[derive(Clone, Copy, Debug)]
pub struct SackVariant;

impl TcpVariant for SackVariant {
    const NAME: &'static str = "sack";

    #[inline(always)]
    fn incoming(p: &ModuleParams, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        if !is_ack(i) {
            return;
        }
        let mut s = TcpState::load(ctx);
        let f = &i.flow;
        let thresh = p.dup_ack_thresh;
        let cum = i.pkt.cumulative_ack;
        let sent_out = f.sent_out().min(u32::MAX as u64) as u32;
        let is_new_ack = i.new_wnd_start > i.old_wnd_start;
        let is_dup_ack = !is_new_ack && cum == i.old_wnd_start && sent_out > 0;
        s.dup_acks = if is_new_ack {
            0
        } else {
            s.dup_acks + is_dup_ack as u32
        };
        // Lost: every unacked segment below the thresh-th highest SACKed one.
        let mut lost_end = kth_highest(&f.acked, sent_out, thresh).unwrap_or(0);
        if s.dup_acks >= thresh {
            lost_end = lost_end.max(1);
        }
        let newly_lost = if lost_end > 0 {
            // Unacked, never retransmitted, not yet marked, below lost_end: these the mark
            // below adds.
            let mut n = 0;
            for k in 0..lost_end {
                n += (!f.acked.get(k) && !f.rtx_cnt.get(k) && !f.marked_for_rtx.get(k)) as u32;
            }
            out.mark_fresh_for_rtx(f.wnd_start, f.wnd_start + lost_end as u64);
            n
        } else {
            0
        };
        let sacked = f.acked.count_ones_below(sent_out);
        let marked = f.marked_for_rtx.count_ones_below(sent_out) + newly_lost;
        let pipe = sent_out.saturating_sub(sacked + marked);
        if s.in_recovery && cum > s.recover {
            s.in_recovery = false;
            s.cwnd = s.ss_thresh;
        }
        if !s.in_recovery && lost_end > 0 && (cum > s.recover || s.recover == 0) && !s.in_timeout {
            s.ss_thresh = (pipe / 2).max(2);
            s.cwnd = s.ss_thresh;
            s.recover = f.next_new - 1;
            s.in_recovery = true;
            s.wnd_inc_cntr = 0;
        } else if !s.in_recovery && is_new_ack {
            s.grow(i.newly_acked_cnt, f.wnd_size);
        }
        if s.in_timeout && cum > s.recover {
            s.in_timeout = false;
        }
        let wnd = if s.in_recovery {
            sent_out as u64 + s.cwnd.saturating_sub(pipe) as u64
        } else if is_new_ack {
            s.cwnd as u64
        } else {
            // Limited transmit on early dup acks (RFC 3042).
            (s.cwnd + s.dup_acks) as u64
        };
        out.set_wnd_size(clamp_wnd(wnd));
        if is_new_ack && !s.in_recovery {
            s.progress(p.rto_ns, out);
        }
        s.store(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain_ids, engine};
    use super::*;
    use crate::tonic::module::{IncomingPkt, SegRange, WindowBits};

    #[test]
    fn kth_highest_counts_from_the_top() {
        let mut b = WindowBits::default();
        b.words[0] = 1 << 3 | 1 << 9 | 1 << 40;
        b.words[1] = 1 << 2;
        assert_eq!(kth_highest(&b, 128, 1), Some(66));
        assert_eq!(kth_highest(&b, 128, 3), Some(9));
        assert_eq!(kth_highest(&b, 41, 1), Some(40));
        assert_eq!(kth_highest(&b, 128, 5), None);
    }

    /// Two holes in one window are both retransmitted once DupThresh segments above each
    /// are SACKed, without waiting for partial acks, and before new data.
    #[test]
    fn marks_every_hole_below_three_sacked_segments() {
        let mut e = engine(Box::new(Sack::new(ModuleParams::default())), 1000);
        assert_eq!(drain_ids(&mut e, 0).len(), 10);
        e.incoming(0, &IncomingPkt::ack(2), 1).unwrap();
        assert_eq!(
            drain_ids(&mut e, 1),
            (10..14).collect::<Vec<_>>(),
            "cwnd 12"
        );
        // 2 and 5 lost.
        let p = |blocks: &[SegRange]| IncomingPkt::sack(2, blocks);
        e.incoming(0, &p(&[SegRange::new(3, 5)]), 2).unwrap();
        assert_eq!(drain_ids(&mut e, 2), vec![14], "limited transmit");
        e.incoming(0, &p(&[SegRange::new(3, 5), SegRange::new(6, 7)]), 3)
            .unwrap();
        assert_eq!(drain_ids(&mut e, 3), vec![2], "3 SACKed above 2: lost");
        let s = TcpState::load(e.dd().ctx(0));
        assert!(s.in_recovery);
        assert_eq!((s.cwnd, s.recover), (4, 14), "pipe 9 → cwnd 4");
        e.incoming(0, &p(&[SegRange::new(3, 5), SegRange::new(6, 9)]), 4)
            .unwrap();
        assert_eq!(drain_ids(&mut e, 4), vec![5], "hole 5, once; pipe > cwnd");
        assert_eq!(e.stats().retransmitted, 2);
        e.incoming(0, &IncomingPkt::ack(15), 5).unwrap();
        assert!(!TcpState::load(e.dd().ctx(0)).in_recovery);
    }
}
