//! NewReno (RFC 6582) as Tonic App. D writes it (`new_reno_incoming`), window credit.
//!
//! The Incoming hook transcribes App. D line by line, with the listing's inconsistencies
//! resolved as follows (each marked "[interp]" below):
//! - `sent_out = next_new − wnd_start` (segments sent and not cumulatively acked; the listing's
//!   `highest_sent − wnd_start` with `highest_sent` read as the next segment to send);
//! - a duplicate ack also needs data in flight (RFC 5681's definition) and fast retransmit
//!   happens only outside recovery (RFC 6582 §3.2 step 2);
//! - `cwnd` on fast retransmit is the listing's `sent_out >> 1` when `sent_out − 3 > 2`, else
//!   `ss_thresh` (the listing's 1 would collapse small windows; RFC 6582 uses ssthresh);
//! - the timer restarts on *new* acks outside recovery (App. D: any ack outside recovery;
//!   RFC 6298 §5.3: new data acknowledged);
//! - a partial ack retransmits `wnd-start` only if it was never retransmitted (after a
//!   timeout every unacknowledged segment is already marked).
//!
//! The Periodic hook, shared by the window modules ([`TcpModule`]), handles timeouts
//! (`TcpState::on_timeout`).

use super::super::module::{HookOutput, IncomingInput, NewAckInput, NewAckOutput};
use super::{clamp_wnd, is_ack, is_ack_pkt, ModuleParams, TcpModule, TcpState, TcpVariant};

/// The NewReno module.
pub type NewReno = TcpModule<NewRenoVariant>;

/// NewReno's part of [`NewReno`]: App. D's Incoming hook.
#[derive(Clone, Copy, Debug)]
pub struct NewRenoVariant;

/// App. D's `new_reno_incoming` on state `s`. Shared with DCTCP.
#[inline(always)]
pub(crate) fn incoming(
    p: &ModuleParams,
    s: &mut TcpState,
    i: &IncomingInput,
    out: &mut HookOutput,
) {
    if !is_ack(i) {
        return;
    }
    let f = &i.flow;
    let thresh = p.dup_ack_thresh;
    let cum = i.pkt.cumulative_ack;
    if i.new_wnd_start > i.old_wnd_start
        && !s.in_recovery
        && !s.in_timeout
        && cum > s.recover
        && thresh != 0
    {
        // The common case, a new ack outside recovery, where the listing below reduces to:
        // no duplicates, no marks, slow start or congestion avoidance, window = cwnd, timer
        // restarted.
        s.dup_acks = 0;
        s.prev_highest_ack = i.old_wnd_start;
        s.grow(i.newly_acked_cnt, f.wnd_size);
        out.set_wnd_size(clamp_wnd(s.cwnd as u64));
        s.progress(p.rto_ns, out);
        return;
    }
    // [interp] sent_out over the window after the fixed stage.
    let sent_out = f.sent_out();
    let is_new_ack = i.new_wnd_start > i.old_wnd_start;
    let is_dup_ack = !is_new_ack && cum == i.old_wnd_start && sent_out > 0;
    let dup_acks = if is_new_ack {
        0
    } else if is_dup_ack {
        s.dup_acks + 1
    } else {
        s.dup_acks
    };
    let in_flight = sent_out.saturating_sub(dup_acks as u64);
    let prev_highest_ack = if is_new_ack {
        i.old_wnd_start
    } else {
        s.prev_highest_ack
    };
    let do_fast_rtx = dup_acks == thresh
        && !s.in_recovery
        && (cum > s.recover || (f.wnd_size > 1 && cum.saturating_sub(s.prev_highest_ack) <= 4));
    let recover = if do_fast_rtx {
        f.next_new - 1
    } else {
        s.recover
    };
    let half_wnd = if in_flight > 2 { in_flight >> 1 } else { 2 };
    let ss_thresh = if do_fast_rtx {
        half_wnd.min(u32::MAX as u64) as u32
    } else {
        s.ss_thresh
    };
    let full_ack = is_new_ack && cum > s.recover;
    let partial_ack = is_new_ack && cum <= s.recover;
    if do_fast_rtx {
        out.mark_for_rtx(f.wnd_start, f.wnd_start + 1);
    } else if partial_ack {
        out.mark_fresh_for_rtx(f.wnd_start, f.wnd_start + 1);
    }
    let in_recovery = do_fast_rtx || (s.in_recovery && cum <= s.recover);
    let in_timeout = !full_ack && s.in_timeout;
    // cwnd and the counter.
    let cwnd_in = s.cwnd;
    let mut cwnd = cwnd_in;
    let mut cntr = s.wnd_inc_cntr;
    if do_fast_rtx {
        cwnd = if sent_out.saturating_sub(thresh as u64) > 2 {
            (sent_out >> 1) as u32
        } else {
            ss_thresh
        };
    } else if !s.in_recovery && is_new_ack {
        let mut g = TcpState {
            cwnd: cwnd_in,
            ss_thresh,
            wnd_inc_cntr: cntr,
            ..*s
        };
        g.grow(i.newly_acked_cnt, f.wnd_size);
        cwnd = g.cwnd;
        cntr = g.wnd_inc_cntr;
    }
    if in_recovery && !s.in_timeout {
        cntr = 0;
    }
    let there_is_more = in_flight >= cwnd_in as u64;
    let new_wnd_size = if do_fast_rtx {
        sent_out
    } else if !s.in_recovery && is_new_ack {
        cwnd as u64
    } else if there_is_more {
        sent_out
    } else {
        cwnd_in as u64 + dup_acks as u64
    };
    out.set_wnd_size(clamp_wnd(new_wnd_size));
    if !in_recovery && is_new_ack {
        s.progress(p.rto_ns, out);
    }
    *s = TcpState {
        cwnd,
        ss_thresh,
        recover,
        prev_highest_ack,
        dup_acks,
        wnd_inc_cntr: cntr,
        in_recovery,
        in_timeout,
        backoff: s.backoff,
    };
}

/// [`incoming`]'s common case, a new ack outside recovery, on the packed state `c` directly:
/// the same outputs and the same context words as `load`, [`incoming`], `store`, without
/// unpacking the words the case leaves alone. Returns `None`, having changed nothing, when
/// the packet is not that case. Both the full hook and the engine's fast path
/// ([`TonicModule::incoming_new_ack`](super::super::module::TonicModule::incoming_new_ack))
/// come here.
#[inline(always)]
pub(crate) fn new_ack_fast(
    p: &ModuleParams,
    c: &mut [u64; TcpState::WORDS],
    i: &NewAckInput<'_>,
) -> Option<NewAckOutput> {
    let w3 = c[3];
    if !(is_ack_pkt(i.pkt)
        && i.new_wnd_start > i.old_wnd_start
        && w3 & TcpState::RECOVERY_BITS == 0
        && i.pkt.cumulative_ack > c[1]
        && p.dup_ack_thresh != 0)
    {
        return None;
    }
    // As in `incoming`: no duplicates, window = cwnd after growth, timer restarted (which
    // ends the backoff), `prev_highest_ack` = the old window start. `recover` (word 1) is
    // unchanged.
    let o = TcpState::new_ack_words(p.rto_ns, c, i.newly_acked_cnt, i.wnd_size);
    c[2] = i.old_wnd_start;
    Some(o)
}

/// [`incoming`] on the packed state `c` (out of line: the fast path stays small).
#[inline(never)]
fn incoming_words(
    p: &ModuleParams,
    c: &mut [u64; TcpState::WORDS],
    i: &IncomingInput,
    out: &mut HookOutput,
) {
    let mut s = TcpState::load(c);
    incoming(p, &mut s, i, out);
    s.store(c);
}

impl TcpVariant for NewRenoVariant {
    const NAME: &'static str = "newreno";
    const NEW_ACK_FAST_PATH: bool = true;

    #[inline(always)]
    fn incoming(p: &ModuleParams, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        let c = TcpState::words_mut(ctx);
        let fast = NewAckInput {
            pkt: &i.pkt,
            newly_acked_cnt: i.newly_acked_cnt,
            wnd_size: i.flow.wnd_size,
            old_wnd_start: i.old_wnd_start,
            new_wnd_start: i.new_wnd_start,
            next_new: i.flow.next_new,
        };
        match new_ack_fast(p, c, &fast) {
            Some(o) => o.write(out),
            None => incoming_words(p, c, i, out),
        }
    }

    #[inline(always)]
    fn incoming_new_ack(
        p: &ModuleParams,
        i: &NewAckInput<'_>,
        ctx: &mut [u64],
    ) -> Option<NewAckOutput> {
        new_ack_fast(p, TcpState::words_mut(ctx), i)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ack, drain_ids, engine};
    use super::*;
    use crate::tonic::module::IncomingPkt;

    fn nr() -> Box<NewReno> {
        Box::new(NewReno::new(ModuleParams::default()))
    }

    fn state(e: &crate::tonic::TonicEngine) -> TcpState {
        TcpState::load(e.dd().ctx(0))
    }

    /// Slow start adds `newly_acked_cnt` per ack (App. D).
    #[test]
    fn slow_start_adds_newly_acked() {
        let mut e = engine(nr(), 1000);
        assert_eq!(drain_ids(&mut e, 0), (0..10).collect::<Vec<_>>());
        ack(&mut e, 0, 2, 1);
        assert_eq!(state(&e).cwnd, 12);
        ack(&mut e, 0, 5, 2);
        assert_eq!(state(&e).cwnd, 15);
        assert_eq!(e.flow_view(0).unwrap().wnd_size, 15);
        // 15 in the window from 5: segments 10..20 may go.
        assert_eq!(drain_ids(&mut e, 3), (10..20).collect::<Vec<_>>());
    }

    /// Fast retransmit exactly at the third duplicate ack; ss_thresh = max(in_flight/2, 2);
    /// partial acks retransmit wnd-start; the RTO timer is reset only outside recovery.
    #[test]
    fn fast_retransmit_partial_acks_and_timer() {
        let mut e = engine(nr(), 1000);
        drain_ids(&mut e, 0); // 0..10
        ack(&mut e, 0, 10, 1);
        let sent = drain_ids(&mut e, 1);
        assert_eq!(sent, (10..30).collect::<Vec<_>>(), "cwnd 20");
        // Segments 10 and 15 lost: dup acks of 10.
        let armed = e.flow_view(0).unwrap().rtx_deadline;
        for k in 1..=2 {
            ack(&mut e, 0, 10, 10 + k);
            assert!(!state(&e).in_recovery);
            assert_eq!(state(&e).dup_acks, k as u32);
        }
        ack(&mut e, 0, 10, 13);
        let s = state(&e);
        assert!(s.in_recovery);
        // in_flight = 20 - 3 = 17 → ss_thresh 8.
        assert_eq!(s.ss_thresh, 8);
        assert_eq!(s.recover, 29);
        assert_eq!(
            drain_ids(&mut e, 13),
            vec![10],
            "the first unacked segment, once"
        );
        assert_eq!(
            e.flow_view(0).unwrap().rtx_deadline,
            armed,
            "no timer reset in recovery"
        );
        // Partial ack up to the second hole: it is retransmitted next.
        ack(&mut e, 0, 15, 20);
        assert!(state(&e).in_recovery);
        assert_eq!(drain_ids(&mut e, 20), vec![15]);
        assert_eq!(e.flow_view(0).unwrap().rtx_deadline, armed);
        // Full ack: recovery ends, cwnd deflates, the timer restarts.
        ack(&mut e, 0, 30, 30);
        let s = state(&e);
        assert!(!s.in_recovery);
        assert_eq!(e.flow_view(0).unwrap().rtx_deadline, 0, "nothing in flight");
        assert_eq!(e.flow_view(0).unwrap().wnd_size, s.cwnd);
        let next = drain_ids(&mut e, 30);
        assert_eq!(next.first(), Some(&30));
        assert_eq!(e.flow_view(0).unwrap().rtx_deadline, 30 + 200_000_000);
    }

    /// Congestion avoidance: +1 segment per window of acks.
    #[test]
    fn congestion_avoidance_adds_one_per_window() {
        let mut e = engine(nr(), 100_000);
        // As after a loss episode: ss_thresh = cwnd = 10.
        let mut words = [0u64; 4];
        TcpState {
            ss_thresh: 10,
            ..TcpState::initial(10)
        }
        .store(&mut words);
        e.test_set_ctx(0, &words);
        let (mut now, mut cwnds) = (0, vec![]);
        for _ in 0..6 {
            drain_ids(&mut e, now);
            now += 10_000;
            let v = e.flow_view(0).unwrap();
            for seg in v.wnd_start..v.next_new {
                ack(&mut e, 0, seg + 1, now);
            }
            cwnds.push(state(&e).cwnd);
        }
        for w in cwnds.windows(2) {
            assert!(w[1] == w[0] + 1, "one more segment per window: {cwnds:?}");
        }
    }

    /// A timeout: cwnd 1, every unacknowledged segment marked, go-back-N under the window.
    #[test]
    fn timeout_goes_back_n_in_slow_start() {
        let mut e = engine(nr(), 1000);
        drain_ids(&mut e, 0);
        ack(&mut e, 0, 2, 1);
        drain_ids(&mut e, 1); // 10..14 (cwnd 12 from 2)
        let deadline = e.flow_view(0).unwrap().rtx_deadline;
        e.periodic(deadline - 1, 1);
        assert_eq!(e.stats().timeouts, 0);
        e.periodic(deadline, 1);
        assert_eq!(e.stats().timeouts, 1);
        let s = state(&e);
        assert_eq!((s.cwnd, s.ss_thresh, s.in_timeout), (1, 6, true));
        assert_eq!(drain_ids(&mut e, deadline), vec![2], "window of one");
        let v = e.flow_view(0).unwrap();
        assert_eq!(v.rtx_timer_amount, 400_000_000, "backed off");
        ack(&mut e, 0, 3, deadline + 10);
        assert_eq!(
            drain_ids(&mut e, deadline + 10),
            vec![3, 4],
            "slow start: 2"
        );
        e.incoming(0, &IncomingPkt::ack(14), deadline + 20).unwrap();
        assert!(!state(&e).in_timeout, "full ack");
    }
}
