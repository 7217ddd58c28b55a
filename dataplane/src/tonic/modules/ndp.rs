//! NDP (Handley et al., SIGCOMM '17) sender logic, grant-token credit: "senders use explicit
//! NACKs and timeouts for loss detection and rely on grant tokens for congestion control"
//! (Tonic §6.1.1).
//!
//! - A new flow starts with `init_credit_bytes` of credit: NDP's first RTT at line rate.
//! - The receiver's PULLs are grants ([`PktType::Grant`](super::super::module::PktType) with
//!   `grant_bytes`); the fixed credit engine adds them (§3.3.2).
//! - A NACK (or a trimmed-header report) marks exactly the named segment for retransmission,
//!   again if need be: each NACK is first-hand evidence.
//! - Per-packet acks arrive as SACK blocks and cumulative acks, handled by the fixed stage.
//! - A timeout marks every unacknowledged segment and adds their bytes as credit
//!   ("one [module] to add credit for retransmissions on timeouts", §3.3.2).
//!
//! User state: an RTO backoff count (1 byte, Tab. 3 lists 1 B for NDP).

use super::super::module::{
    CreditScheme, HookOutput, IncomingInput, IncomingPkt, ModuleConfig, PeriodicInput, PktType,
    TonicModule, MAX_WINDOW_SEGMENTS,
};
use super::ModuleParams;

/// The NDP module.
#[derive(Clone, Copy, Debug)]
pub struct Ndp {
    p: ModuleParams,
}

impl Ndp {
    /// NDP with parameters `p` (`init_credit_bytes`, `rto_ns`).
    pub fn new(p: ModuleParams) -> Self {
        Ndp { p }
    }
}

impl TonicModule for Ndp {
    fn name(&self) -> &str {
        "ndp"
    }

    fn config(&self) -> ModuleConfig {
        ModuleConfig {
            credit_scheme: CreditScheme::Grant,
            user_ctx_bytes: 1,
            init_wnd_size: MAX_WINDOW_SEGMENTS,
            init_credit_bytes: self.p.init_credit_bytes,
            init_rtx_timer_ns: self.p.rto_ns,
            ..Default::default()
        }
    }

    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        let nacked = i.pkt.pkt_type == PktType::Nack || i.pkt.has(IncomingPkt::FLAG_TRIMMED);
        if nacked {
            out.mark_for_rtx(i.pkt.nack, i.pkt.nack + 1);
        }
        if i.newly_acked_cnt > 0 || nacked {
            // Progress, or news from the receiver: it is alive and pulling.
            if ctx[0] != 0 {
                ctx[0] = 0;
                out.set_rtx_timer_amount(self.p.rto_ns);
            }
            out.reset_rtx_timer();
        }
    }

    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        if !i.timeout_expired {
            return;
        }
        let f = &i.flow;
        // Segments transmitted: the last `outstanding` generated ones still wait in the credit
        // engine's ring (§3.1), so they are neither lost nor owed credit.
        let sent = (f.transmitted_end() - f.wnd_start).min(MAX_WINDOW_SEGMENTS as u64) as u32;
        let unacked = sent - f.acked.count_ones_below(sent);
        out.mark_for_rtx(f.wnd_start, f.wnd_start + sent as u64);
        out.add_credit(unacked.saturating_mul(f.mss));
        ctx[0] = (ctx[0] + 1).min(6);
        out.set_rtx_timer_amount(self.p.rto_ns << ctx[0]);
        out.reset_rtx_timer();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain_ids, engine_with};
    use super::*;
    use crate::tonic::module::SegRange;
    use crate::tonic::EngineParams;

    fn ndp() -> crate::tonic::TonicEngine {
        let m = Ndp::new(ModuleParams {
            init_credit_bytes: 3000,
            ..Default::default()
        });
        let p = EngineParams {
            ring_depth: 1,
            ..Default::default()
        };
        engine_with(Box::new(m), 100, p)
    }

    /// First RTT from the initial credit, then one segment per pulled MSS; a NACK makes the
    /// trimmed segment go right after the one address already in the ring (N = 1), before
    /// any new segment.
    #[test]
    fn pulls_pace_and_nacks_retransmit() {
        let mut e = ndp();
        assert_eq!(
            drain_ids(&mut e, 0),
            vec![0, 1, 2],
            "3000 B credit: 3 segments"
        );
        assert_eq!(e.ce().credit(0, 0), 0);
        assert_eq!(
            e.ce().ring_len(0),
            1,
            "segment 3 generated, waiting for credit"
        );
        e.incoming(0, &IncomingPkt::grant(1000), 1).unwrap();
        assert_eq!(drain_ids(&mut e, 1), vec![3]);
        // 1 trimmed: NACK, then pulls.
        e.incoming(0, &IncomingPkt::nack(1, 1), 2).unwrap();
        assert!(drain_ids(&mut e, 2).is_empty(), "no credit yet");
        e.incoming(0, &IncomingPkt::grant(2000), 3).unwrap();
        assert_eq!(drain_ids(&mut e, 3), vec![4, 1]);
        e.incoming(0, &IncomingPkt::grant(1000), 4).unwrap();
        assert_eq!(drain_ids(&mut e, 4), vec![5]);
        assert_eq!(e.stats().retransmitted, 1);
        // Grant accounting: 3000 + 1000 + 2000 + 1000 tokens − 7 × 1000 bytes.
        assert_eq!(e.ce().credit(0, 4), 0);
    }

    /// A timeout marks the unacknowledged transmitted segments and adds credit for them.
    #[test]
    fn timeout_adds_retransmission_credit() {
        let mut e = ndp();
        drain_ids(&mut e, 0);
        e.incoming(0, &IncomingPkt::sack(0, &[SegRange::new(1, 2)]), 1)
            .unwrap();
        let d = e.flow_view(0).unwrap().rtx_deadline;
        e.periodic(d, 1);
        assert_eq!(e.ce().credit(0, d), 2000, "segments 0 and 2");
        assert_eq!(drain_ids(&mut e, d), vec![3, 0]);
        assert_eq!(e.stats().retransmitted, 1);
    }
}
