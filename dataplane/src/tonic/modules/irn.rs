//! IRN (Mittal et al., SIGCOMM '18), rate credit: RoCE with selective retransmission instead
//! of go-back-N, "a recent hardware-based protocol that improves the simple reliable delivery
//! algorithm on RoCE NICs" (Tonic §6.1.1).
//!
//! - **Loss recovery**: the receiver acks cumulatively and NACKs out-of-order arrivals with
//!   the arriving PSN as a selective ack. On a NACK the sender enters recovery (`recover` =
//!   highest sent) and retransmits every unacknowledged segment below the highest SACKed one,
//!   each once per recovery; recovery ends when the cumulative ack passes `recover`. A lost
//!   retransmission is recovered by the timeout.
//! - **BDP-FC**: at most `bdp_segments` in flight (`wnd-size`).
//! - **Two timeouts**: RTO_low (`rto_low_ns`) when at most 3 segments are in flight, else
//!   RTO_high (`rto_ns`).
//! - **Congestion control**: DCQCN's reaction point (shared with the DCQCN module) on CNPs.

use super::super::module::{
    FlowView, HookOutput, IncomingInput, ModuleConfig, PeriodicInput, PktType, TonicModule,
};
use super::dcqcn::{rate_config, RateCtl};
use super::{kth_highest, ModuleParams};
use crate::tonic::Nanos;

/// Context words after the [`RateCtl`] ones: `recover`, then the in-recovery flag.
const RECOVER: usize = RateCtl::WORDS;
const IN_RECOVERY: usize = RateCtl::WORDS + 1;

/// Segments in flight at or below which RTO_low applies.
const RTO_LOW_FLIGHT: u64 = 3;

/// The IRN module.
#[derive(Clone, Copy, Debug)]
pub struct Irn {
    p: ModuleParams,
}

impl Irn {
    /// IRN with parameters `p` (`bdp_segments`, `rto_ns`, `rto_low_ns`, line rate, `dcqcn_*`).
    pub fn new(p: ModuleParams) -> Self {
        Irn { p }
    }

    fn rto_for(&self, flight: u64) -> Nanos {
        if flight <= RTO_LOW_FLIGHT {
            self.p.rto_low_ns
        } else {
            self.p.rto_ns
        }
    }
}

impl TonicModule for Irn {
    fn name(&self) -> &str {
        "irn"
    }

    fn config(&self) -> ModuleConfig {
        let mut c = rate_config(&self.p, RateCtl::WORDS + 2, self.p.bdp_segments.max(1));
        c.init_rtx_timer_ns = self.p.rto_low_ns;
        c
    }

    fn init_flow(&self, now: Nanos, _flow: &FlowView, ctx: &mut [u64]) {
        RateCtl::initial(&self.p, now).store(ctx);
    }

    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        if i.pkt.pkt_type == PktType::Cnp {
            RateCtl::incoming_cnp(&self.p, i, ctx, out);
            return;
        }
        let f = &i.flow;
        let cum = i.pkt.cumulative_ack;
        let mut in_recovery = ctx[IN_RECOVERY] != 0;
        if in_recovery && cum > ctx[RECOVER] {
            in_recovery = false;
        }
        let sent_out = f.sent_out().min(u32::MAX as u64) as u32;
        if i.pkt.pkt_type == PktType::Nack {
            if !in_recovery {
                in_recovery = true;
                ctx[RECOVER] = f.next_new - 1;
            }
            // Everything unacked below the highest selectively acked segment is lost.
            let top = kth_highest(&f.acked, sent_out, 1).unwrap_or(0).max(1);
            out.mark_fresh_for_rtx(f.wnd_start, f.wnd_start + top as u64);
        }
        ctx[IN_RECOVERY] = in_recovery as u64;
        if i.newly_acked_cnt > 0 {
            out.set_rtx_timer_amount(self.rto_for(f.sent_out()));
            out.reset_rtx_timer();
        }
    }

    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        RateCtl::periodic(&self.p, i, ctx, out);
        if i.timeout_expired {
            let f = &i.flow;
            out.mark_for_rtx(f.wnd_start, f.transmitted_end());
            ctx[IN_RECOVERY] = 1;
            ctx[RECOVER] = f.next_new.saturating_sub(1);
            out.set_rtx_timer_amount(self.rto_for(f.sent_out()));
            out.reset_rtx_timer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain_ids, engine};
    use super::*;
    use crate::tonic::module::{IncomingPkt, SegRange};

    /// A NACK carrying a SACK of segment 6 with 2 and 4 missing retransmits exactly 2 and 4,
    /// before new data; a second NACK does not repeat them.
    #[test]
    fn selective_retransmission() {
        let p = ModuleParams {
            line_rate_bps: 40_000_000_000,
            bdp_segments: 8,
            ..Default::default()
        };
        let mut e = engine(Box::new(Irn::new(p)), 1000);
        let mut now = 0;
        let mut sent = vec![];
        while sent.len() < 8 {
            now += 1000;
            sent.extend(drain_ids(&mut e, now));
        }
        assert_eq!(sent, (0..8).collect::<Vec<_>>(), "BDP-FC: 8 segments");
        let sacked = [SegRange::new(3, 4), SegRange::new(5, 7)];
        let mut nack = IncomingPkt::sack(2, &sacked);
        nack.pkt_type = PktType::Nack;
        nack.nack = 6;
        e.incoming(0, &nack, now).unwrap();
        e.incoming(0, &nack, now + 1).unwrap();
        let mut again = vec![];
        for k in 0..100 {
            again.extend(e.next_segment(now + 10_000 * k).map(|t| t.seg));
        }
        assert_eq!(&again[..4], &[2, 4, 8, 9]);
        assert_eq!(e.stats().retransmitted, 2);
    }
}
