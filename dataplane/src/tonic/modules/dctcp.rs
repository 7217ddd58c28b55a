//! DCTCP (Alizadeh et al., SIGCOMM '10; RFC 8257), window credit: NewReno's loss recovery
//! ([`super::newreno`]) plus DCTCP's reaction to the *fraction* of ECN-marked data.
//!
//! - Per observation window (one RTT: until the cumulative ack passes the segment that was
//!   next to send when the window began), count acknowledged and ECN-echoed segments (an ack
//!   with ECE counts its newly acknowledged segments; `ecn_bytes` counts directly).
//! - At the end of each window: `α = (1 − g)·α + g·F`, F the marked fraction, g = 2^-g_shift
//!   (1/16), α in 1/65536 units.
//! - On ECE, at most once per window of data and not during loss recovery:
//!   `cwnd = cwnd·(1 − α/2)` (at least 2), `ss_thresh = cwnd`.

use super::super::module::{HookOutput, IncomingInput, IncomingPkt, NewAckInput, NewAckOutput};
use super::{clamp_wnd, is_ack, newreno, ModuleParams, TcpModule, TcpState, TcpVariant};

const ALPHA_ONE: u64 = 1 << 16;
const W_ALPHA: usize = TcpState::WORDS;
const W_COUNTS: usize = TcpState::WORDS + 1;
const W_WIN_END: usize = TcpState::WORDS + 2;
const W_CWR_END: usize = TcpState::WORDS + 3;

/// The DCTCP module (parameters: `init_wnd`, `rto_ns`, `dup_ack_thresh`, `dctcp_g_shift`).
pub type Dctcp = TcpModule<DctcpVariant>;

/// DCTCP's part of [`Dctcp`]: NewReno's Incoming hook, then the α estimate and the cut.
#[derive(Clone, Copy, Debug)]
pub struct DctcpVariant;

impl TcpVariant for DctcpVariant {
    const NAME: &'static str = "dctcp";
    const WORDS: usize = TcpState::WORDS + 4;

    fn init_flow(p: &ModuleParams, ctx: &mut [u64]) {
        TcpState::initial(p.init_wnd).store(ctx);
        ctx[W_ALPHA] = ALPHA_ONE;
    }

    const NEW_ACK_FAST_PATH: bool = true;

    /// An unmarked new ack outside recovery: NewReno's fast path, then the acknowledged
    /// count and, when the ack ends the observation window, α's decay for a window with
    /// the marks counted so far (no cut: the ack carries no echo).
    #[inline(always)]
    fn incoming_new_ack(
        p: &ModuleParams,
        i: &NewAckInput<'_>,
        ctx: &mut [u64],
    ) -> Option<NewAckOutput> {
        let pkt = i.pkt;
        if pkt.has(IncomingPkt::FLAG_ECN_ECHO) || pkt.ecn_bytes > 0 {
            return None;
        }
        let o = newreno::new_ack_fast(p, TcpState::words_mut(ctx), i)?;
        let w = ctx[W_COUNTS];
        let acked = w as u32 as u64 + i.newly_acked_cnt as u64;
        let marked = w >> 32;
        ctx[W_COUNTS] = if pkt.cumulative_ack >= ctx[W_WIN_END] && acked > 0 {
            ctx[W_ALPHA] = update_alpha(ctx[W_ALPHA], marked, acked, p.dctcp_g_shift);
            ctx[W_WIN_END] = i.next_new;
            0
        } else {
            acked.min(u32::MAX as u64) | marked << 32
        };
        Some(o)
    }

    #[inline(always)]
    fn incoming(p: &ModuleParams, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        if !is_ack(i) {
            return;
        }
        let mut s = TcpState::load(ctx);
        newreno::incoming(p, &mut s, i, out);
        let f = &i.flow;
        let ece = i.pkt.has(IncomingPkt::FLAG_ECN_ECHO);
        let mut acked = ctx[W_COUNTS] as u32 as u64;
        let mut marked = ctx[W_COUNTS] >> 32;
        acked += i.newly_acked_cnt as u64;
        if i.pkt.ecn_bytes > 0 {
            marked += (i.pkt.ecn_bytes as u64).div_ceil(f.mss.max(1) as u64);
        } else if ece {
            marked += i.newly_acked_cnt.max(1) as u64;
        }
        let cum = i.pkt.cumulative_ack;
        if cum >= ctx[W_WIN_END] && acked > 0 {
            ctx[W_ALPHA] = update_alpha(ctx[W_ALPHA], marked, acked, p.dctcp_g_shift);
            acked = 0;
            marked = 0;
            ctx[W_WIN_END] = f.next_new;
        }
        ctx[W_COUNTS] = acked.min(u32::MAX as u64) | marked.min(u32::MAX as u64) << 32;
        if ece && !s.in_recovery && !s.in_timeout && cum >= ctx[W_CWR_END] {
            let cut = (s.cwnd as u64 * ctx[W_ALPHA]) >> 17;
            s.cwnd = (s.cwnd - cut as u32).max(2);
            s.ss_thresh = s.cwnd;
            s.wnd_inc_cntr = 0;
            ctx[W_CWR_END] = f.next_new;
            out.set_wnd_size(clamp_wnd(s.cwnd as u64));
        }
        s.store(ctx);
    }
}

/// α at the end of an observation window in which `marked` of `acked` (> 0) segments were
/// ECN-marked: `α = (1 − g)·α + g·F` (RFC 8257 §3.3), g = 2^-`g_shift`, in 1/65536 units.
#[inline(always)]
fn update_alpha(alpha: u64, marked: u64, acked: u64, g_shift: u32) -> u64 {
    let frac = (marked.min(acked) << 16) / acked;
    (alpha - (alpha >> g_shift) + (frac >> g_shift)).min(ALPHA_ONE)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain_ids, engine};
    use super::*;

    fn ece(cum: u64) -> IncomingPkt {
        let mut p = IncomingPkt::ack(cum);
        p.flags |= IncomingPkt::FLAG_ECN_ECHO;
        p
    }

    /// With every segment marked, α stays 1 and the window halves once per window of data;
    /// with none marked, α decays by (1 − g) per window.
    #[test]
    fn cuts_by_alpha_half_once_per_window() {
        let mut e = engine(Box::new(Dctcp::new(ModuleParams::default())), 10_000);
        assert_eq!(drain_ids(&mut e, 0).len(), 10);
        e.incoming(0, &ece(1), 1).unwrap();
        // Slow start made it 11, then the cut: 11 − 11·1/2 = 6 (rounded down cut).
        let s = TcpState::load(e.dd().ctx(0));
        assert_eq!(s.cwnd, 6);
        assert_eq!(e.flow_view(0).unwrap().wnd_size, 6);
        e.incoming(0, &ece(2), 2).unwrap();
        assert_eq!(TcpState::load(e.dd().ctx(0)).cwnd, 6, "once per window");
        // Unmarked windows: α decays.
        let a0 = e.dd().ctx(0)[W_ALPHA];
        for cum in 3..=40 {
            drain_ids(&mut e, cum);
            e.incoming(0, &IncomingPkt::ack(cum), cum).unwrap();
        }
        let a1 = e.dd().ctx(0)[W_ALPHA];
        assert!(a1 < a0 * 15 / 16, "{a0} → {a1}");
    }
}
