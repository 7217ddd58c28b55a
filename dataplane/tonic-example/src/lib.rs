//! An example out-of-tree Tonic protocol module: Reno-like window congestion control (RFC 5681
//! in segments), built as a `cdylib` against the C ABI of `offload_api::tonic_abi` and loaded
//! by `dataplane::tonic::plugin::load`.
//!
//! The protocol, on the window credit scheme:
//! - **New cumulative ack**: slow start (`cwnd += newly acked`) below `ssthresh`, else
//!   congestion avoidance (`cwnd += 1` per window of acked segments); leaves fast recovery
//!   (`cwnd = ssthresh`); restarts the retransmission timer and undoes any timer backoff.
//! - **Duplicate ack** (cumulative ack unchanged while data is outstanding): the third one
//!   marks the first unacknowledged segment for retransmission, sets
//!   `ssthresh = max(in flight / 2, 2)` and halves the window to it (fast retransmit), and
//!   enters fast recovery, where each further duplicate inflates the window by one segment.
//! - **Timeout**: `ssthresh = max(in flight / 2, 2)`, window 1, every outstanding segment
//!   marked for retransmission, timer period doubled (at most [`MAX_RTX_TIMER_NS`]).
//!
//! Per-flow state lives in the user context ([`CTX_WORDS`] words): `ssthresh`, the
//! duplicate-ack count, the fast-recovery flag and the congestion-avoidance accumulator.
//! The crate's own code is safe Rust (`forbid(unsafe_code)`); [`offload_api::export_tonic_module!`]
//! generates the exported symbols and the pointer-to-reference trampolines.

#![forbid(unsafe_code)]

use offload_api::tonic_abi::{
    TonicAbiFlowView, TonicAbiHookOutput, TonicAbiIncomingInput, TonicAbiModule,
    TonicAbiModuleConfig, TonicAbiPeriodicInput, TONIC_ABI_CREDIT_WINDOW,
    TONIC_ABI_MAX_WINDOW_SEGMENTS, TONIC_ABI_PKT_ACK, TONIC_ABI_PKT_SACK,
};

/// The module's registry name.
pub const NAME: &str = "reno-example";

/// Words of user context per flow.
pub const CTX_WORDS: usize = 4;

/// Initial congestion window in segments (RFC 6928).
pub const INIT_WND: u32 = 10;

/// Initial retransmission timer period: 200 ms.
pub const INIT_RTX_TIMER_NS: u64 = 200_000_000;

/// Upper bound of the backed-off retransmission timer: 60 s (RFC 6298 §2.5).
pub const MAX_RTX_TIMER_NS: u64 = 60_000_000_000;

/// Duplicate acks that trigger fast retransmit.
pub const DUP_ACK_THRESHOLD: u64 = 3;

/// User-context word: the slow-start threshold in segments.
const SSTHRESH: usize = 0;
/// User-context word: consecutive duplicate acks.
const DUP_ACKS: usize = 1;
/// User-context word: 1 while in fast recovery.
const IN_RECOVERY: usize = 2;
/// User-context word: segments acked in congestion avoidance since the last increase.
const CA_ACKED: usize = 3;

/// The Reno-like module.
pub struct RenoExample;

impl TonicAbiModule for RenoExample {
    const NAME: &'static str = NAME;
    const CONFIG: TonicAbiModuleConfig = TonicAbiModuleConfig {
        credit_scheme: TONIC_ABI_CREDIT_WINDOW,
        user_ctx_bytes: (CTX_WORDS * 8) as u32,
        init_wnd_size: INIT_WND,
        init_rtx_timer_ns: INIT_RTX_TIMER_NS,
        ..TonicAbiModuleConfig::DEFAULT
    };

    fn init_flow(_now: u64, _flow: &TonicAbiFlowView, ctx: &mut [u64]) {
        if let Some(st) = state(ctx) {
            *st = [u64::from(u32::MAX), 0, 0, 0];
        }
    }

    fn incoming(input: &TonicAbiIncomingInput, ctx: &mut [u64], out: &mut TonicAbiHookOutput) {
        let Some(st) = state(ctx) else { return };
        let flow = &input.flow;
        let cwnd = flow.wnd_size.max(1);
        if input.new_wnd_start > input.old_wnd_start {
            st[DUP_ACKS] = 0;
            let new_cwnd = if st[IN_RECOVERY] != 0 {
                // Reno leaves fast recovery on the first ack of new data and deflates.
                st[IN_RECOVERY] = 0;
                st[CA_ACKED] = 0;
                ssthresh(st)
            } else if u64::from(cwnd) < st[SSTHRESH] {
                cwnd.saturating_add(input.newly_acked_cnt.max(1))
            } else {
                st[CA_ACKED] += u64::from(input.newly_acked_cnt.max(1));
                if st[CA_ACKED] >= u64::from(cwnd) {
                    st[CA_ACKED] -= u64::from(cwnd);
                    cwnd + 1
                } else {
                    cwnd
                }
            };
            out.set_wnd_size(new_cwnd.min(TONIC_ABI_MAX_WINDOW_SEGMENTS));
            out.reset_rtx_timer();
            if flow.rtx_timer_amount != INIT_RTX_TIMER_NS {
                out.set_rtx_timer_amount(INIT_RTX_TIMER_NS);
            }
        } else if is_dup_ack(input) {
            st[DUP_ACKS] += 1;
            if st[IN_RECOVERY] != 0 {
                // Window inflation: each duplicate means a segment has left the network.
                out.set_wnd_size(cwnd.saturating_add(1).min(TONIC_ABI_MAX_WINDOW_SEGMENTS));
            } else if st[DUP_ACKS] == DUP_ACK_THRESHOLD {
                st[SSTHRESH] = half_flight(flow);
                st[IN_RECOVERY] = 1;
                st[CA_ACKED] = 0;
                out.mark_for_rtx(flow.wnd_start, flow.wnd_start + 1);
                out.set_wnd_size(ssthresh(st));
            }
        }
    }

    fn periodic(input: &TonicAbiPeriodicInput, ctx: &mut [u64], out: &mut TonicAbiHookOutput) {
        let Some(st) = state(ctx) else { return };
        if input.timeout_expired == 0 {
            return;
        }
        let flow = &input.flow;
        *st = [half_flight(flow), 0, 0, 0];
        out.set_wnd_size(1);
        if flow.sent_out() > 0 {
            out.mark_for_rtx(flow.wnd_start, flow.next_new);
        }
        let period = flow.rtx_timer_amount.max(1).saturating_mul(2);
        out.set_rtx_timer_amount(period.min(MAX_RTX_TIMER_NS));
        out.reset_rtx_timer();
    }
}

offload_api::export_tonic_module!(RenoExample);

/// The module's words of the user context, if the engine gave enough.
fn state(ctx: &mut [u64]) -> Option<&mut [u64; CTX_WORDS]> {
    ctx.first_chunk_mut::<CTX_WORDS>()
}

/// `ssthresh` as a window (it is `u32::MAX` until the first loss).
fn ssthresh(st: &[u64; CTX_WORDS]) -> u32 {
    u32::try_from(st[SSTHRESH]).unwrap_or(u32::MAX)
}

/// `max(in flight / 2, 2)` (RFC 5681 eq. 4), in segments.
fn half_flight(flow: &TonicAbiFlowView) -> u64 {
    (flow.sent_out() / 2).max(2)
}

/// An ack that acknowledges nothing new while data is outstanding.
fn is_dup_ack(input: &TonicAbiIncomingInput) -> bool {
    matches!(input.pkt.pkt_type, TONIC_ABI_PKT_ACK | TONIC_ABI_PKT_SACK)
        && input.pkt.cumulative_ack == input.old_wnd_start
        && input.new_wnd_start == input.old_wnd_start
        && input.flow.sent_out() > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_api::tonic_abi::{TONIC_ABI_OUT_MARK_RTX, TONIC_ABI_OUT_WND_SIZE};

    fn flow(wnd_start: u64, next_new: u64, wnd_size: u32) -> TonicAbiFlowView {
        TonicAbiFlowView {
            wnd_start,
            next_new,
            wnd_size,
            rtx_timer_amount: INIT_RTX_TIMER_NS,
            ..Default::default()
        }
    }

    fn ack(old: u64, cum: u64, f: TonicAbiFlowView) -> TonicAbiIncomingInput {
        let mut i = TonicAbiIncomingInput {
            old_wnd_start: old,
            new_wnd_start: old.max(cum),
            newly_acked_cnt: cum.saturating_sub(old) as u32,
            flow: f,
            ..Default::default()
        };
        i.pkt.cumulative_ack = cum;
        i
    }

    fn fresh_ctx() -> [u64; CTX_WORDS] {
        let mut ctx = [0; CTX_WORDS];
        RenoExample::init_flow(0, &TonicAbiFlowView::default(), &mut ctx);
        ctx
    }

    #[test]
    fn slow_start_then_congestion_avoidance() {
        let mut ctx = fresh_ctx();
        let mut out = TonicAbiHookOutput::default();
        RenoExample::incoming(&ack(0, 4, flow(4, 10, 10)), &mut ctx, &mut out);
        assert_eq!(out.wnd_size, 14);
        ctx[SSTHRESH] = 14;
        for i in 0..14 {
            let mut out = TonicAbiHookOutput::default();
            RenoExample::incoming(&ack(4 + i, 5 + i, flow(5 + i, 30, 14)), &mut ctx, &mut out);
            assert_eq!(out.wnd_size, if i == 13 { 15 } else { 14 });
        }
    }

    #[test]
    fn three_dup_acks_fast_retransmit_and_recovery() {
        let mut ctx = fresh_ctx();
        let f = flow(20, 40, 20);
        for n in 1..=2 {
            let mut out = TonicAbiHookOutput::default();
            RenoExample::incoming(&ack(20, 20, f), &mut ctx, &mut out);
            assert_eq!(out.set, 0, "dup ack {n} does nothing yet");
        }
        let mut out = TonicAbiHookOutput::default();
        RenoExample::incoming(&ack(20, 20, f), &mut ctx, &mut out);
        assert!(out.has(TONIC_ABI_OUT_MARK_RTX | TONIC_ABI_OUT_WND_SIZE));
        assert_eq!((out.mark_rtx.start, out.mark_rtx.end), (20, 21));
        assert_eq!(out.wnd_size, 10);
        let mut out = TonicAbiHookOutput::default();
        RenoExample::incoming(&ack(20, 20, flow(20, 40, 10)), &mut ctx, &mut out);
        assert_eq!(out.wnd_size, 11, "inflation");
        let mut out = TonicAbiHookOutput::default();
        RenoExample::incoming(&ack(20, 41, flow(41, 41, 11)), &mut ctx, &mut out);
        assert_eq!(out.wnd_size, 10, "deflated to ssthresh");
        assert_eq!(ctx[IN_RECOVERY], 0);
    }

    #[test]
    fn timeout_resets_window_and_backs_off() {
        let mut ctx = fresh_ctx();
        let mut out = TonicAbiHookOutput::default();
        let idle = TonicAbiPeriodicInput {
            flow: flow(3, 9, 8),
            ..Default::default()
        };
        RenoExample::periodic(&idle, &mut ctx, &mut out);
        assert_eq!(out.set, 0);
        let expired = TonicAbiPeriodicInput {
            timeout_expired: 1,
            ..idle
        };
        RenoExample::periodic(&expired, &mut ctx, &mut out);
        assert_eq!(out.wnd_size, 1);
        assert_eq!((out.mark_rtx.start, out.mark_rtx.end), (3, 9));
        assert_eq!(out.rtx_timer_amount, 2 * INIT_RTX_TIMER_NS);
        assert_eq!(ctx[SSTHRESH], 3);
    }

    #[test]
    fn short_context_is_ignored() {
        let mut ctx = [0u64; 2];
        let mut out = TonicAbiHookOutput::default();
        RenoExample::incoming(&ack(0, 5, flow(5, 9, 4)), &mut ctx, &mut out);
        assert_eq!((out.set, ctx), (0, [0, 0]));
    }
}
