//! Tonic's claims about the fixed engines: retransmissions first (§3.2.3, App. C), window
//! enforcement (§3.2.3, §3.3.1), the outstanding bound N and the set invariants (§3.1), the
//! merge rules (§3.4), timer coverage (§3.2.3), scale limits (§6.1.2, Tab. 4) and the
//! segmentation contract (§5). Property tests drive random event sequences through a
//! scripted module whose hook outputs come from the packets themselves.

use dataplane::tonic::module::{
    CreditScheme, CtxPriority, FlowView, HookOutput, IncomingInput, IncomingPkt, ModuleConfig,
    NewAckInput, NewAckOutput, PeriodicInput, SegRange, TonicModule,
};
use dataplane::tonic::modules::ModuleParams;
use dataplane::tonic::registry::Registry;
use dataplane::tonic::{Ack, EngineParams, TonicEngine, TonicError, TxSegment};
use proptest::prelude::*;

/// A module that does what each packet's data words say: `data[0..2]` a range to mark for
/// retransmission (if `data[0] < data[1]`), `data[2]` a new window (if non-zero), `data[3]`
/// bit 0: reset the timer. Timeouts mark everything sent. Its user context counts calls:
/// word 0 incoming, word 1 periodic.
struct Scripted {
    cfg: ModuleConfig,
}

impl Scripted {
    fn new(scheme: CreditScheme, every_visit: bool, prio: CtxPriority) -> Self {
        Scripted {
            cfg: ModuleConfig {
                credit_scheme: scheme,
                ctx_priority: prio,
                periodic_every_visit: every_visit,
                user_ctx_bytes: 16,
                init_wnd_size: 8,
                max_burst_bytes: 4000,
                init_rate_bps: 8_000_000_000,
                init_credit_bytes: 0,
                init_rtx_timer_ns: 1000,
                ..Default::default()
            },
        }
    }
}

impl TonicModule for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn config(&self) -> ModuleConfig {
        self.cfg
    }
    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        ctx[0] += 1;
        let d = i.pkt.data;
        if d[0] < d[1] {
            out.mark_for_rtx(d[0] as u64, d[1] as u64);
        }
        if d[2] != 0 {
            out.set_wnd_size(d[2]);
        }
        if d[3] & 1 != 0 {
            out.reset_rtx_timer();
        }
    }
    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        ctx[1] += 1;
        if i.timeout_expired {
            out.mark_for_rtx(i.flow.wnd_start, i.flow.next_new);
            out.set_wnd_size(3);
            out.reset_rtx_timer();
        }
    }
}

fn engine(scheme: CreditScheme, flows: u32, window: u32, ring: u32) -> TonicEngine {
    let m: Box<dyn TonicModule> = Box::new(Scripted::new(scheme, false, CtxPriority::Incoming));
    let p = EngineParams {
        max_flows: flows,
        window_segments: window,
        ring_depth: ring,
        ..EngineParams::default()
    };
    TonicEngine::new(m, p).unwrap()
}

fn pkt(cum: u64, mark: (u32, u32), wnd: u32, reset: bool) -> IncomingPkt {
    let mut p = IncomingPkt::ack(cum);
    p.data = [mark.0, mark.1, wnd, reset as u32];
    p
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Cumulative ack of `wnd_start + k` (k may point past what was sent, or behind).
    Ack(u32, i64),
    /// Cumulative ack of `wnd_start + k` advertising a receiver window of `w` segments (0:
    /// the peer's window is shut, RFC 9293 §3.8.6.1).
    AckRcvWnd(u32, i64, u8),
    /// Cumulative ack of `wnd_start + k` echoing congestion (RFC 3168 ECE; DCTCP): with
    /// `b == 0` the ECE flag, else a count of `b * 500` ECN-marked bytes.
    AckEcn(u32, i64, u8),
    /// SACK of `[wnd_start + a, wnd_start + a + len)`.
    Sack(u32, u8, u8),
    /// Mark `[wnd_start + a, wnd_start + b)` for retransmission.
    Mark(u32, u8, u8),
    /// New window.
    Wnd(u32, u8),
    /// More data.
    Tail(u32, u16),
    Generate,
    Transmit,
    Decide,
    Periodic(u8),
    Grant(u32, u16),
    Time(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let f = 0u32..4;
    prop_oneof![
        (f.clone(), -3i64..12).prop_map(|(f, k)| Op::Ack(f, k)),
        (f.clone(), -1i64..6, 0u8..4).prop_map(|(f, k, w)| Op::AckRcvWnd(f, k, w)),
        (f.clone(), -1i64..6, 0u8..3).prop_map(|(f, k, b)| Op::AckEcn(f, k, b)),
        (f.clone(), 0u8..12, 1u8..4).prop_map(|(f, a, l)| Op::Sack(f, a, l)),
        (f.clone(), 0u8..10, 0u8..10).prop_map(|(f, a, b)| Op::Mark(f, a, b)),
        (f.clone(), 0u8..20).prop_map(|(f, w)| Op::Wnd(f, w)),
        (f.clone(), 0u16..20_000).prop_map(|(f, b)| Op::Tail(f, b)),
        Just(Op::Generate),
        Just(Op::Generate),
        Just(Op::Transmit),
        Just(Op::Transmit),
        Just(Op::Decide),
        (0u8..6).prop_map(Op::Periodic),
        (f.clone(), 0u16..5000).prop_map(|(f, b)| Op::Grant(f, b)),
        (0u16..3000).prop_map(Op::Time),
    ]
}

/// Runs `ops` and checks after every step: the set invariants (§3.1, via
/// `check_invariants`: active iff it can generate, outstanding = ring occupancy ≤ N, ready
/// iff ring and credit), retransmissions first (§3.2.3), the window and wnd-start monotone
/// (§3.3.1).
fn run(scheme: CreditScheme, window: u32, ring: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut e = engine(scheme, 4, window, ring);
    let mut now = 1u64;
    let mut tail = [0u64; 4];
    for f in 0..4 {
        e.add_flow(f, 1000, now).unwrap();
    }
    for op in ops {
        let before: Vec<_> = (0..4).map(|f| e.flow_view(f).unwrap()).collect();
        match *op {
            Op::Ack(f, k) => {
                let ws = before[f as usize].wnd_start as i64;
                let cum = (ws + k).max(0) as u64;
                e.incoming(f, &pkt(cum, (0, 0), 0, k > 0), now).unwrap();
            }
            Op::AckRcvWnd(f, k, w) => {
                let ws = before[f as usize].wnd_start as i64;
                let mut p = IncomingPkt::ack((ws + k).max(0) as u64);
                p.flags |= IncomingPkt::FLAG_RCV_WND;
                p.rcv_wnd = w as u32;
                e.incoming(f, &p, now).unwrap();
            }
            Op::AckEcn(f, k, b) => {
                let ws = before[f as usize].wnd_start as i64;
                e.incoming(f, &ecn_ack((ws + k).max(0) as u64, b), now)
                    .unwrap();
            }
            Op::Sack(f, a, l) => {
                let ws = before[f as usize].wnd_start;
                let b = SegRange::new(ws + a as u64, ws + a as u64 + l as u64);
                e.incoming(f, &IncomingPkt::sack(ws, &[b]), now).unwrap();
            }
            Op::Mark(f, a, b) => {
                let ws = before[f as usize].wnd_start as u32;
                e.incoming(f, &pkt(0, (ws + a as u32, ws + b as u32), 0, false), now)
                    .unwrap();
            }
            Op::Wnd(f, w) => {
                e.incoming(f, &pkt(0, (0, 0), w as u32, false), now)
                    .unwrap();
            }
            Op::Tail(f, b) => {
                tail[f as usize] += b as u64;
                match e.update_tail(f, tail[f as usize]) {
                    Ok(()) => {}
                    Err(TonicError::SmallSegmentPending(_)) => tail[f as usize] -= b as u64,
                    Err(x) => return Err(TestCaseError::fail(format!("{x}"))),
                }
            }
            Op::Generate => {
                let front = e.dd().active_set().front();
                if let Some((f, seg)) = e.generate_step(now) {
                    prop_assert_eq!(Some(f), front, "round robin takes the front");
                    let v = &before[f as usize];
                    let wnd = v.wnd_size.min(v.rcv_wnd).min(v.window_capacity) as u64;
                    // §3.2.3: the first marked segment inside the window goes first.
                    match v.marked_for_rtx.find_first_set(0) {
                        Some(o) if (o as u64) < wnd => {
                            prop_assert_eq!(seg, v.wnd_start + o as u64, "retransmission first")
                        }
                        _ => {
                            prop_assert_eq!(seg, v.next_new, "else the next new segment");
                            // §3.3.1: never beyond wnd-start + window.
                            prop_assert!(seg < v.wnd_start + wnd, "window: {:?}", v);
                            prop_assert!(seg < v.tail);
                        }
                    }
                }
            }
            Op::Transmit => {
                if let Some(tx) = e.transmit_step(now) {
                    e.segment_transmitted(tx.flow);
                }
            }
            Op::Decide => {
                e.next_segment(now);
            }
            Op::Periodic(k) => {
                e.periodic(now, k as u32);
            }
            Op::Grant(f, b) => {
                e.incoming(f, &IncomingPkt::grant(b as u32), now).unwrap();
            }
            Op::Time(dt) => now += dt as u64,
        }
        for f in 0..4 {
            let v = e.flow_view(f).unwrap();
            prop_assert!(
                v.wnd_start >= before[f as usize].wnd_start,
                "wnd-start monotone"
            );
            prop_assert!(v.next_new <= v.wnd_start + v.window_capacity as u64);
            prop_assert!(v.outstanding_cnt <= ring, "§3.1: at most N outstanding");
        }
        if let Err(msg) = e.check_invariants(now) {
            return Err(TestCaseError::fail(format!("after {op:?}: {msg}")));
        }
    }
    Ok(())
}

/// One scheduling decision the long way: generation (repeated while nothing is ready, as
/// `next_segment` does), transmission, and the Segment Transmitted signal.
fn decide_general(e: &mut TonicEngine, now: u64) -> Option<TxSegment> {
    e.generate_step(now);
    let mut tries = e.dd().active_set().len();
    while e.ce().ready_set().is_empty() && tries > 0 {
        e.generate_step(now)?;
        tries -= 1;
    }
    let tx = e.transmit_step(now)?;
    e.segment_transmitted(tx.flow);
    Some(tx)
}

/// A cumulative ack of `cum` echoing congestion: the ECE flag (`b == 0`) or `b * 500`
/// ECN-marked bytes.
fn ecn_ack(cum: u64, b: u8) -> IncomingPkt {
    let mut p = IncomingPkt::ack(cum);
    if b == 0 {
        p.flags |= IncomingPkt::FLAG_ECN_ECHO;
    } else {
        p.ecn_bytes = b as u32 * 500;
    }
    p
}

/// Applies `op` to both engines and checks that each call returns the same on both; `b`
/// decides with `decide_b` (`Op::Decide`), `a` with `next_segment`. `tail` holds each flow's
/// data tail (grown by `Op::Tail`), `now` the time (advanced by `Op::Time`).
fn apply_op(
    a: &mut TonicEngine,
    b: &mut TonicEngine,
    op: Op,
    now: &mut u64,
    tail: &mut [u64; 4],
    decide_b: fn(&mut TonicEngine, u64) -> Option<TxSegment>,
) -> Result<(), TestCaseError> {
    let ws = |e: &TonicEngine, f: u32| e.flow_view(f).unwrap().wnd_start;
    match op {
        Op::Ack(f, k) => {
            let cum = (ws(a, f) as i64 + k).max(0) as u64;
            let p = pkt(cum, (0, 0), 0, k > 0);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::AckRcvWnd(f, k, w) => {
            let mut p = IncomingPkt::ack((ws(a, f) as i64 + k).max(0) as u64);
            p.flags |= IncomingPkt::FLAG_RCV_WND;
            p.rcv_wnd = w as u32;
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::AckEcn(f, k, m) => {
            let p = ecn_ack((ws(a, f) as i64 + k).max(0) as u64, m);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::Sack(f, x, l) => {
            let w = ws(a, f);
            let p = IncomingPkt::sack(w, &[SegRange::new(w + x as u64, w + (x + l) as u64)]);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::Mark(f, x, y) => {
            let w = ws(a, f) as u32;
            let p = pkt(0, (w + x as u32, w + y as u32), 0, false);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::Wnd(f, w) => {
            let p = pkt(0, (0, 0), w as u32, false);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::Tail(f, n) => {
            tail[f as usize] += n as u64;
            let r = a.update_tail(f, tail[f as usize]);
            prop_assert_eq!(&r, &b.update_tail(f, tail[f as usize]));
            if r.is_err() {
                tail[f as usize] -= n as u64;
            }
        }
        Op::Generate => prop_assert_eq!(a.generate_step(*now), b.generate_step(*now)),
        Op::Transmit => {
            let t = a.transmit_step(*now);
            prop_assert_eq!(t, b.transmit_step(*now));
            if let Some(t) = t {
                a.segment_transmitted(t.flow);
                b.segment_transmitted(t.flow);
            }
        }
        Op::Decide => prop_assert_eq!(a.next_segment(*now), decide_b(b, *now)),
        Op::Periodic(k) => {
            prop_assert_eq!(a.periodic(*now, k as u32), b.periodic(*now, k as u32))
        }
        Op::Grant(f, n) => {
            let p = IncomingPkt::grant(n as u32);
            prop_assert_eq!(a.incoming(f, &p, *now), b.incoming(f, &p, *now));
        }
        Op::Time(dt) => *now += dt as u64,
    }
    Ok(())
}

/// Runs `ops` on two engines, deciding with `next_segment` on one and with
/// [`decide_general`] on the other, and checks that they stay identical: `next_segment`'s
/// direct path (window scheme, nothing ready: the generated address goes straight out)
/// changes nothing but the cost.
fn run_both(scheme: CreditScheme, ring: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let (mut a, mut b) = (engine(scheme, 4, 64, ring), engine(scheme, 4, 64, ring));
    let mut now = 1u64;
    let mut tail = [0u64; 4];
    for f in 0..4 {
        a.add_flow(f, 1000, now).unwrap();
        b.add_flow(f, 1000, now).unwrap();
    }
    for op in ops {
        apply_op(&mut a, &mut b, *op, &mut now, &mut tail, decide_general)?;
        prop_assert_eq!(a.stats(), b.stats(), "after {:?}", op);
        for f in 0..4 {
            prop_assert_eq!(a.flow_view(f).unwrap(), b.flow_view(f).unwrap());
            prop_assert_eq!(a.dd().ctx(f), b.dd().ctx(f));
            prop_assert_eq!(a.ce().ring_len(f), b.ce().ring_len(f));
        }
        let sets = |e: &TonicEngine| {
            let active: Vec<u32> = e.dd().active_set().iter().collect();
            let ready: Vec<u32> = e.ce().ready_set().iter().collect();
            (active, ready)
        };
        prop_assert_eq!(sets(&a), sets(&b), "after {:?}", op);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn next_segment_decides_as_generation_then_transmission(
        ops in prop::collection::vec(op(), 1..200),
        scheme in prop::sample::select(vec![CreditScheme::Window, CreditScheme::Rate, CreditScheme::Grant]),
        ring in 1u32..=4,
    ) {
        run_both(scheme, ring, &ops)?;
    }

    #[test]
    fn window_scheme_keeps_invariants(ops in prop::collection::vec(op(), 1..150)) {
        run(CreditScheme::Window, 64, 4, &ops)?;
    }

    #[test]
    fn rate_scheme_keeps_invariants(ops in prop::collection::vec(op(), 1..150)) {
        run(CreditScheme::Rate, 128, 2, &ops)?;
    }

    #[test]
    fn grant_scheme_keeps_invariants(ops in prop::collection::vec(op(), 1..150)) {
        run(CreditScheme::Grant, 256, 1, &ops)?;
    }
}

/// §3.1: with no credit, a flow generates exactly N addresses and leaves the active set;
/// each transmission lets it generate one more.
#[test]
fn outstanding_bound_n() {
    let mut e = engine(CreditScheme::Grant, 2, 128, 3);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 100_000).unwrap();
    let gens: Vec<_> = std::iter::from_fn(|| e.generate_step(0)).take(10).collect();
    assert_eq!(gens, vec![(0, 0), (0, 1), (0, 2)]);
    assert!(!e.dd().active_set().contains(0));
    assert_eq!(e.ce().ring_len(0), 3);
    e.incoming(0, &IncomingPkt::grant(1000), 0).unwrap();
    let tx = e.transmit_step(0).unwrap();
    assert_eq!((tx.flow, tx.seg), (0, 0));
    assert!(!e.dd().active_set().contains(0), "not before step 9");
    e.segment_transmitted(0);
    assert!(
        e.dd().active_set().contains(0),
        "re-activated by the transmit signal"
    );
    assert_eq!(e.generate_step(0), Some((0, 3)));
    assert_eq!(e.generate_step(0), None);
    e.check_invariants(0).unwrap();
}

/// §3.2.3: an ack can re-activate a flow stopped by its window.
#[test]
fn ack_reactivates_a_window_limited_flow() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 100_000).unwrap();
    let sent: Vec<_> = std::iter::from_fn(|| e.next_segment(0))
        .map(|t| t.seg)
        .collect();
    assert_eq!(sent, (0..8).collect::<Vec<_>>(), "initial window 8");
    assert!(!e.dd().active_set().contains(0));
    e.incoming(0, &IncomingPkt::ack(3), 1).unwrap();
    assert!(e.dd().active_set().contains(0));
    let sent: Vec<_> = std::iter::from_fn(|| e.next_segment(1))
        .map(|t| t.seg)
        .collect();
    assert_eq!(sent, vec![8, 9, 10]);
}

/// Round robin: backlogged flows are served one segment each in turn (§3.1).
#[test]
fn round_robin_across_flows() {
    let mut e = engine(CreditScheme::Window, 3, 128, 2);
    for f in 0..3 {
        e.add_flow(f, 1000, 0).unwrap();
        e.update_tail(f, 4000).unwrap();
    }
    let order: Vec<_> = std::iter::from_fn(|| e.next_segment(0))
        .map(|t| (t.flow, t.seg))
        .collect();
    assert_eq!(order.len(), 12);
    for (i, (f, s)) in order.iter().enumerate() {
        assert_eq!((*f, *s), ((i % 3) as u32, (i / 3) as u64), "{order:?}");
    }
}

/// §3.4: an ack and a timeout for the same flow in the same cycle: the timeout is
/// discarded.
#[test]
fn ack_and_timeout_in_one_cycle_drop_the_timeout() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 100_000).unwrap();
    while e.next_segment(0).is_some() {}
    let deadline = e.flow_view(0).unwrap().rtx_deadline;
    assert_eq!(deadline, 1000);
    // Same cycle: an ack (no reset) and the periodic visit of the expired flow.
    let rep = e
        .cycle(deadline, Some((0, pkt(2, (0, 0), 0, false))))
        .unwrap();
    assert!(rep.timeout_discarded && !rep.timeout);
    let v = e.flow_view(0).unwrap();
    assert_eq!(v.wnd_size, 8, "the timeout handler did not run");
    assert!(v.marked_for_rtx.is_empty());
    assert_eq!(
        e.dd().ctx(0)[1],
        0,
        "periodic hook not called for the timeout"
    );
    // Next cycle without an ack: the timeout fires.
    let rep = e.cycle(deadline + 1, None).unwrap();
    assert!(rep.timeout);
    assert_eq!(e.flow_view(0).unwrap().wnd_size, 3);
}

/// §3.4: a generation and a transmission of the same flow in one cycle leave
/// `outstanding-cnt` unchanged.
#[test]
fn generate_and_transmit_in_one_cycle_cancel_out() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 100_000).unwrap();
    e.generate_step(0).unwrap();
    assert_eq!(e.flow_view(0).unwrap().outstanding_cnt, 1);
    for t in 1..5 {
        let rep = e.cycle(t, None).unwrap();
        assert_eq!(rep.generated.map(|g| g.0), Some(0));
        assert_eq!(rep.tx.map(|x| x.flow), Some(0));
        assert_eq!(e.flow_view(0).unwrap().outstanding_cnt, 1);
    }
}

/// §3.4: user-context updates of both hooks in one cycle are merged by the module's
/// priority; retransmission marks of both apply.
#[test]
fn same_cycle_hooks_merge_by_priority() {
    for (prio, want) in [
        (CtxPriority::Incoming, [1, 0]),
        (CtxPriority::Periodic, [0, 1]),
    ] {
        let m = Scripted::new(CreditScheme::Window, true, prio);
        let mut e = TonicEngine::new(Box::new(m), EngineParams::default()).unwrap();
        e.add_flow(0, 1000, 0).unwrap();
        e.update_tail(0, 100_000).unwrap();
        while e.next_segment(0).is_some() {}
        let rep = e.cycle(1, Some((0, pkt(0, (2, 3), 0, false)))).unwrap();
        // Both hooks changed the context (incoming: word 0, periodic: word 1); the
        // prioritized one's whole context wins.
        assert_eq!(e.dd().ctx(0), &want, "{prio:?}");
        assert_eq!(
            rep.generated,
            Some((0, 2)),
            "the mark applied: retransmitted at once"
        );
    }
}

/// §3.2.3 (timer coverage): a sweep of `k` flows per call visits every flow within ⌈flows / k⌉
/// calls, so every expired timer is handled within that many calls.
#[test]
fn periodic_sweep_covers_every_flow() {
    let n = 100;
    let mut e = engine(CreditScheme::Window, n, 128, 4);
    for f in 0..n {
        e.add_flow(f, 1000, 0).unwrap();
        e.update_tail(f, 1000).unwrap();
    }
    while e.next_segment(0).is_some() {}
    let mut timeouts = 0;
    for _ in 0..10 {
        timeouts += e.periodic(5000, 10).timeouts;
    }
    assert_eq!(timeouts, n);
}

/// §6.1.2: window bitmaps of 64, 128 or 256 segments; more flows than Tonic's 2048; user
/// state within Tab. 4.
#[test]
fn scale_limits() {
    for w in [64, 128, 256] {
        let mut e = engine(CreditScheme::Window, 1, w, 4);
        e.add_flow(0, 100, 0).unwrap();
        e.incoming(0, &pkt(0, (0, 0), 10_000, false), 0).unwrap();
        e.update_tail(0, 1_000_000).unwrap();
        let n = std::iter::from_fn(|| e.next_segment(0)).count();
        assert_eq!(n as u32, w, "the bitmap bounds the window");
    }
    let m = Scripted::new(CreditScheme::Window, false, CtxPriority::Incoming);
    let p = EngineParams {
        window_segments: 512,
        ..EngineParams::default()
    };
    assert!(TonicEngine::new(Box::new(m), p).is_err());
    let mut e = engine(CreditScheme::Window, 100_000, 128, 4);
    e.add_flow(99_999, 1000, 0).unwrap();
    assert!(matches!(
        e.add_flow(100_000, 1000, 0),
        Err(TonicError::FlowOutOfRange(100_000, 100_000))
    ));
}

/// §5: equal segments except a final small one, which blocks new data until it is
/// delivered; then the host is told and segmentation resumes after it.
#[test]
fn segmentation_contract() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 2500).unwrap();
    let tx: Vec<_> = std::iter::from_fn(|| e.next_segment(0)).collect();
    let shape: Vec<_> = tx.iter().map(|t| (t.seg, t.offset, t.len)).collect();
    assert_eq!(shape, vec![(0, 0, 1000), (1, 1000, 1000), (2, 2000, 500)]);
    assert_eq!(
        e.update_tail(0, 4000),
        Err(TonicError::SmallSegmentPending(0))
    );
    let r = e.incoming(0, &IncomingPkt::ack(2), 1).unwrap();
    assert_eq!((r.acked_bytes, r.small_delivered), (2000, false));
    let r = e.incoming(0, &IncomingPkt::ack(3), 2).unwrap();
    assert_eq!((r.acked_bytes, r.small_delivered), (2500, true));
    e.update_tail(0, 4000).unwrap();
    let tx: Vec<_> = std::iter::from_fn(|| e.next_segment(3)).collect();
    let shape: Vec<_> = tx.iter().map(|t| (t.seg, t.offset, t.len)).collect();
    assert_eq!(shape, vec![(3, 2500, 1000), (4, 3500, 500)]);
    assert!(matches!(
        e.update_tail(0, 100),
        Err(TonicError::SmallSegmentPending(0))
    ));
    // Byte ↔ segment mapping after the restart at byte 2500.
    let b2s = |b, up| e.byte_to_seg(0, b, up).unwrap();
    assert_eq!(
        (b2s(2500, false), b2s(3499, false), b2s(3500, false)),
        (3, 3, 4)
    );
    assert_eq!(
        (b2s(2501, true), b2s(4000, false), b2s(9999, true)),
        (4, 5, 5)
    );
    let r = e.incoming(0, &IncomingPkt::ack(5), 4).unwrap();
    assert_eq!((r.acked_bytes, r.small_delivered), (4000, true));
    assert!(matches!(
        e.update_tail(0, 100),
        Err(TonicError::TailBackwards {
            old: 4000,
            new: 100,
            ..
        })
    ));
}

/// Acks for segments never sent are clipped; stale acks change nothing.
#[test]
fn acks_are_clipped_and_monotone() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 5000).unwrap();
    while e.next_segment(0).is_some() {}
    let r = e.incoming(0, &IncomingPkt::ack(100), 1).unwrap();
    assert_eq!((r.wnd_start, r.newly_acked, r.acked_bytes), (5, 5, 5000));
    let r = e.incoming(0, &IncomingPkt::ack(2), 2).unwrap();
    assert_eq!((r.wnd_start, r.newly_acked), (5, 0));
    assert_eq!(
        e.incoming(7, &IncomingPkt::ack(1), 3),
        Err(TonicError::FlowOutOfRange(7, 1))
    );
    e.remove_flow(0).unwrap();
    assert_eq!(
        e.incoming(0, &IncomingPkt::ack(1), 3),
        Err(TonicError::NoSuchFlow(0))
    );
}

/// A rate engine whose one flow gets 1000 B of credit per 8 µs (1 Gbit/s), with no initial
/// credit, a 4000 B burst and a 1 µs retransmission timer: every segment waits about 8 µs
/// in the credit engine's ring, far longer than the timer.
fn slow_rate_engine() -> TonicEngine {
    let mut s = Scripted::new(CreditScheme::Rate, false, CtxPriority::Incoming);
    s.cfg.init_rate_bps = 1_000_000_000;
    let p = EngineParams {
        max_flows: 1,
        ..EngineParams::default()
    };
    let m: Box<dyn TonicModule> = Box::new(s);
    let mut e = TonicEngine::new(m, p).unwrap();
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 20_000).unwrap();
    e
}

/// The retransmission timer starts when a segment is transmitted (Segment Transmitted), not
/// when its address is generated, and stops when everything transmitted is acknowledged
/// even if more addresses wait for credit: a rate flow slower than its timer gets no
/// timeouts when nothing is lost, and still gets one when a transmitted segment is lost.
#[test]
fn rtx_timer_runs_only_while_segments_are_on_the_wire() {
    let mut e = slow_rate_engine();
    assert!(e.next_segment(0).is_none(), "no credit yet");
    let v = e.flow_view(0).unwrap();
    assert!(v.outstanding_cnt > 0, "addresses wait in the ring");
    assert_eq!(v.rtx_deadline, 0, "not armed at generation");
    let mut now = 0;
    let mut sent = vec![];
    while sent.len() < 10 {
        now += 250;
        assert_eq!(e.periodic(now, 1).timeouts, 0, "at {now}: {:?}", e.stats());
        if let Some(tx) = e.next_segment(now) {
            assert_eq!(
                e.flow_view(0).unwrap().rtx_deadline,
                now + 1000,
                "armed at tx"
            );
            sent.push(tx.seg);
            // The ack comes back 500 ns later and resets the timer; then nothing is in
            // flight and the timer stops although the ring is not empty.
            now += 500;
            e.incoming(0, &pkt(tx.seg + 1, (0, 0), 0, true), now)
                .unwrap();
            let v = e.flow_view(0).unwrap();
            assert!(v.outstanding_cnt > 0 && v.transmitted_end() == v.wnd_start);
            assert_eq!(v.rtx_deadline, 0, "nothing in flight after {}", tx.seg);
        }
        e.check_invariants(now).unwrap();
    }
    assert_eq!(sent, (0..10).collect::<Vec<_>>());
    assert_eq!((e.stats().timeouts, e.stats().retransmitted), (0, 0));
    // Segment 10 is lost: no ack, the timer started at its transmission expires.
    let tx = loop {
        now += 250;
        if let Some(tx) = e.next_segment(now) {
            break tx;
        }
    };
    assert_eq!(tx.seg, 10);
    let rep = e.periodic(tx_deadline(&e), 1);
    assert_eq!(rep.timeouts, 1);
    assert_eq!(e.stats().timeouts, 1);
    assert_eq!(
        e.flow_view(0).unwrap().marked_for_rtx.find_first_set(0),
        Some(0)
    );
}

fn tx_deadline(e: &TonicEngine) -> u64 {
    let d = e.flow_view(0).unwrap().rtx_deadline;
    assert_ne!(d, 0);
    d
}

/// With a lagging step 9, the timer starts when the Segment Transmitted signal arrives.
#[test]
fn segment_transmitted_starts_the_timer() {
    let mut e = engine(CreditScheme::Window, 1, 128, 4);
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 3000).unwrap();
    e.generate_step(0).unwrap();
    e.generate_step(0).unwrap();
    assert_eq!(e.flow_view(0).unwrap().rtx_deadline, 0);
    let tx = e.transmit_step(10).unwrap();
    e.segment_transmitted(tx.flow);
    assert_eq!(
        e.flow_view(0).unwrap().rtx_deadline,
        1010,
        "from the transmission"
    );
    let tx = e.transmit_step(20).unwrap();
    e.segment_transmitted_at(tx.flow, 30);
    assert_eq!(
        e.flow_view(0).unwrap().rtx_deadline,
        1010,
        "a running timer is not restarted"
    );
    e.incoming(0, &pkt(1, (0, 0), 0, true), 40).unwrap();
    assert_eq!(
        e.flow_view(0).unwrap().rtx_deadline,
        1040,
        "reset: 1 in flight"
    );
    e.incoming(0, &pkt(2, (0, 0), 0, false), 50).unwrap();
    assert_eq!(e.flow_view(0).unwrap().rtx_deadline, 0, "all acknowledged");
}

/// Every rate timer that fires is counted in `EngineStats::rate_timers`, including those
/// fired by a transmit step (not only those of `periodic`).
#[test]
fn rate_timers_fired_by_transmit_are_counted() {
    let mut e = slow_rate_engine();
    assert!(e.next_segment(0).is_none());
    assert!(e.ce().timer_armed(0));
    let mut fired = 0;
    for t in 1..=40 {
        let was_armed = e.ce().timer_armed(0);
        if e.next_segment(t * 1000).is_some() {
            assert!(was_armed, "sent only after its timer fired");
            fired += 1;
        }
    }
    assert!(fired >= 4, "{fired}");
    assert_eq!(e.stats().rate_timers, fired, "{:?}", e.stats());
}

/// `check_invariants` is read-only: a due rate timer stays armed and the flow stays out of
/// ready-to-tx until the engine itself fires it (and counts it).
#[test]
fn check_invariants_has_no_side_effects() {
    let mut e = slow_rate_engine();
    assert!(e.next_segment(0).is_none());
    let due = e.ce().ready_set().len();
    assert_eq!(due, 0);
    let stats = *e.stats();
    let view = e.flow_view(0).unwrap();
    // Well past the timer's deadline.
    e.check_invariants(50_000).unwrap();
    assert!(e.ce().timer_armed(0), "the check did not fire the timer");
    assert!(!e.ce().ready_set().contains(0));
    assert_eq!(*e.stats(), stats);
    assert_eq!(e.flow_view(0).unwrap(), view);
    assert!(e.next_segment(50_000).is_some());
    assert_eq!(e.stats().rate_timers, 1);
}

/// What [`run_burst_vs_single`] does between comparisons.
#[derive(Clone, Debug)]
enum BurstOp {
    /// Any single-call operation of [`op`] (done on both engines alike).
    One(Op),
    /// `next_segments` of up to `n` decisions against `n` `next_segment` calls (stopping at
    /// the first that finds nothing).
    Decide(u8),
    /// `incoming_acks` of these `(flow, wnd_start + k, grant)` acks against `incoming` of
    /// each one's packet.
    Acks(Vec<(u32, i64, u16)>),
}

fn burst_op() -> impl Strategy<Value = BurstOp> {
    let ack = (0u32..4, -2i64..10, prop_oneof![Just(0u16), 0u16..3000]);
    prop_oneof![
        3 => op().prop_map(BurstOp::One),
        2 => (0u8..40).prop_map(BurstOp::Decide),
        2 => prop::collection::vec(ack, 0..12).prop_map(BurstOp::Acks),
    ]
}

/// Runs `ops` on two engines built by `make` with four flows: one takes decisions and acks in
/// bursts (`next_segments`, `incoming_acks`), the other one call at a time; every output,
/// the counters, each flow's state and user context, ring and both sets must stay identical.
fn run_burst_vs_single(
    make: &dyn Fn() -> TonicEngine,
    ops: &[BurstOp],
) -> Result<(), TestCaseError> {
    run_burst_vs_single_on(make(), make(), ops)
}

/// [`run_burst_vs_single`] on engines `a` (bursts) and `b` (single calls), which must
/// behave the same (four flows, ids 0–3, none added yet).
fn run_burst_vs_single_on(
    mut a: TonicEngine,
    mut b: TonicEngine,
    ops: &[BurstOp],
) -> Result<(), TestCaseError> {
    let mut now = 1u64;
    let mut tail = [0u64; 4];
    for f in 0..4 {
        a.add_flow(f, 1000, now).unwrap();
        b.add_flow(f, 1000, now).unwrap();
        tail[f as usize] = 40_000 + 500 * f as u64;
        a.update_tail(f, tail[f as usize]).unwrap();
        b.update_tail(f, tail[f as usize]).unwrap();
    }
    let mut buf = [TxSegment::default(); 40];
    for op in ops {
        let ws = |e: &TonicEngine, f: u32| e.flow_view(f).unwrap().wnd_start;
        match op {
            BurstOp::One(o) => apply_op(&mut a, &mut b, *o, &mut now, &mut tail, |e, now| {
                e.next_segment(now)
            })?,
            BurstOp::Decide(n) => {
                let n = *n as usize;
                let made = a.next_segments(now, &mut buf[..n]);
                let single: Vec<TxSegment> = (0..n).map_while(|_| b.next_segment(now)).collect();
                prop_assert_eq!(&buf[..made], &single[..]);
            }
            BurstOp::Acks(list) => {
                let acks: Vec<Ack> = list
                    .iter()
                    .map(|&(f, k, g)| Ack {
                        flow: f,
                        cumulative_ack: (ws(&a, f) as i64 + k).max(0) as u64,
                        grant_bytes: g as u32,
                    })
                    .collect();
                let mut got = Vec::new();
                a.incoming_acks(&acks, now, |i, r| got.push((i, r)));
                let want: Vec<_> = acks
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (i, b.incoming(k.flow, &k.pkt(), now)))
                    .collect();
                prop_assert_eq!(got, want);
            }
        }
        prop_assert_eq!(a.stats(), b.stats(), "after {:?}", op);
        for f in 0..4 {
            prop_assert_eq!(a.flow_view(f).unwrap(), b.flow_view(f).unwrap());
            prop_assert_eq!(a.dd().ctx(f), b.dd().ctx(f));
            prop_assert_eq!(a.ce().ring_len(f), b.ce().ring_len(f));
            prop_assert_eq!(a.ce().credit(f, now), b.ce().credit(f, now));
            prop_assert_eq!(a.priority(f), b.priority(f));
        }
        let sets = |e: &TonicEngine| {
            let active: Vec<u32> = e.dd().active_set().iter().collect();
            let ready: Vec<u32> = e.ce().ready_set().iter().collect();
            (active, ready)
        };
        prop_assert_eq!(sets(&a), sets(&b), "after {:?}", op);
        prop_assert_eq!(a.check_invariants(now), Ok(()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Bursts decide and ack exactly as single calls, with the scripted module in every
    /// credit scheme (§3.3: window, rate, grant) and ring depth.
    #[test]
    fn bursts_match_single_calls_in_every_credit_scheme(
        ops in prop::collection::vec(burst_op(), 1..120),
        scheme in prop::sample::select(vec![CreditScheme::Window, CreditScheme::Rate, CreditScheme::Grant]),
        ring in 1u32..=4,
    ) {
        run_burst_vs_single(&|| engine(scheme, 4, 64, ring), &ops)?;
    }

    /// Bursts decide and ack exactly as single calls with every built-in module.
    #[test]
    fn bursts_match_single_calls_for_every_builtin_module(
        ops in prop::collection::vec(burst_op(), 1..120),
        module in prop::sample::select(
            Registry::builtin().list().map(|m| m.name.clone()).collect::<Vec<_>>()
        ),
    ) {
        let make = || {
            let m = Registry::builtin().create(&module, &ModuleParams::default()).unwrap();
            let p = EngineParams { max_flows: 4, ..EngineParams::default() };
            TonicEngine::new(m, p).unwrap()
        };
        run_burst_vs_single(&make, &ops)?;
    }
}

/// A module with every hook of `0` but the Incoming hook's fast path
/// (`TonicModule::incoming_new_ack`, `has_new_ack_fast_path`), which it lacks: the engine
/// then always builds the full hook input.
struct FullHookOnly(Box<dyn TonicModule>);

impl TonicModule for FullHookOnly {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn config(&self) -> ModuleConfig {
        self.0.config()
    }
    fn init_flow(&self, now: u64, flow: &FlowView, ctx: &mut [u64]) {
        self.0.init_flow(now, flow, ctx)
    }
    fn init_wnd_size(&self, flow: &FlowView) -> Option<u32> {
        self.0.init_wnd_size(flow)
    }
    fn incoming(&self, input: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        self.0.incoming(input, ctx, out)
    }
    fn periodic(&self, input: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        self.0.periodic(input, ctx, out)
    }
    fn merge_user_ctx(&self, before: &[u64], i: &[u64], p: &[u64], merged: &mut [u64]) {
        self.0.merge_user_ctx(before, i, p, merged)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// The Incoming hook's fast path (`incoming_new_ack`) changes nothing an engine does:
    /// with losses, SACKs, window changes, timeouts and small segments, an engine whose
    /// module decides new acks there makes the same decisions, reports, counters, flow
    /// states, user contexts and sets as one that always calls the full hook, for every
    /// built-in module (those without a fast path check the wrapper itself).
    #[test]
    fn the_hooks_fast_path_decides_as_the_full_hook(
        ops in prop::collection::vec(burst_op(), 1..150),
        module in prop::sample::select(
            Registry::builtin().list().map(|m| m.name.clone()).collect::<Vec<_>>()
        ),
        init_wnd in 1u32..12,
    ) {
        let mp = ModuleParams { init_wnd, rto_ns: 5_000, ..ModuleParams::default() };
        let p = EngineParams { max_flows: 4, ..EngineParams::default() };
        let m = || Registry::builtin().create(&module, &mp).unwrap();
        let fast = TonicEngine::new(m(), p).unwrap();
        let wrapped: Box<dyn TonicModule> = Box::new(FullHookOnly(m()));
        let full = TonicEngine::new(wrapped, p).unwrap();
        run_burst_vs_single_on(fast, full, &ops)?;
    }
}

/// NewReno decides every new ack of a loss-free transfer on the fast path: the full hook's
/// input is never built (checked through a module that counts the full hook's calls).
#[test]
fn newreno_takes_the_fast_path_for_new_acks() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    struct Counting(Box<dyn TonicModule>, Arc<AtomicU64>, Arc<AtomicU64>);
    impl TonicModule for Counting {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn config(&self) -> ModuleConfig {
            self.0.config()
        }
        fn init_flow(&self, now: u64, flow: &FlowView, ctx: &mut [u64]) {
            self.0.init_flow(now, flow, ctx)
        }
        fn incoming(&self, input: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.incoming(input, ctx, out)
        }
        fn incoming_new_ack(
            &self,
            input: &NewAckInput<'_>,
            ctx: &mut [u64],
        ) -> Option<NewAckOutput> {
            let r = self.0.incoming_new_ack(input, ctx);
            if r.is_some() {
                self.2.fetch_add(1, Ordering::Relaxed);
            }
            r
        }
        fn has_new_ack_fast_path(&self) -> bool {
            self.0.has_new_ack_fast_path()
        }
        fn periodic(&self, input: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
            self.0.periodic(input, ctx, out)
        }
    }
    let (full, fast) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let m = Registry::builtin()
        .create("newreno", &ModuleParams::default())
        .unwrap();
    let p = EngineParams {
        max_flows: 1,
        ..EngineParams::default()
    };
    let counting: Box<dyn TonicModule> = Box::new(Counting(m, full.clone(), fast.clone()));
    let mut e = TonicEngine::new(counting, p).unwrap();
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 100_000).unwrap();
    let mut now = 1;
    let mut acked = 0;
    while acked < 100 {
        now += 10;
        let tx = e.next_segment(now).expect("window open after each ack");
        e.incoming(0, &IncomingPkt::ack(tx.seg + 1), now).unwrap();
        acked = tx.seg + 1;
    }
    assert_eq!(e.flow_view(0).unwrap().wnd_start, 100);
    assert_eq!(
        (full.load(Ordering::Relaxed), fast.load(Ordering::Relaxed)),
        (0, 100)
    );
    // A duplicate ack is not a new ack: the full hook.
    e.incoming(0, &IncomingPkt::ack(100), now).unwrap();
    assert_eq!(full.load(Ordering::Relaxed), 1);
}

/// A final small segment acknowledged while its address still waits for credit in the ring
/// (a grant scheme, an ack ahead of transmission): segmentation restarts after it (§5), the
/// stale address is dropped unsent, and the next small segment goes out on the credit that
/// is there. Left queued, the stale address would block the ring and take the new small
/// segment's length, so the flow would hold credit without being ready (§3.1).
#[test]
fn a_delivered_small_segment_leaves_no_stale_address_behind() {
    let params = ModuleParams {
        init_credit_bytes: 2000,
        ..ModuleParams::default()
    };
    let m = Registry::builtin().create("ndp", &params).unwrap();
    let p = EngineParams {
        max_flows: 1,
        ..EngineParams::default()
    };
    let mut e = TonicEngine::new(m, p).unwrap();
    e.add_flow(0, 1000, 1).unwrap();
    e.update_tail(0, 2500).unwrap();
    let sent: Vec<(u64, u32)> = (0..4)
        .map_while(|_| e.next_segment(1))
        .map(|s| (s.seg, s.len))
        .collect();
    assert_eq!(
        sent,
        [(0, 1000), (1, 1000)],
        "the small segment waits for credit"
    );
    assert_eq!(e.ce().ring_len(0), 1);
    let ack = Ack {
        flow: 0,
        cumulative_ack: 3,
        grant_bytes: 100,
    };
    let rep = e.incoming(0, &ack.pkt(), 2).unwrap();
    assert!(rep.small_delivered);
    assert_eq!(e.ce().ring_len(0), 0);
    assert_eq!(e.flow_view(0).unwrap().outstanding_cnt, 0);
    assert_eq!(e.stats().voided, 1);
    e.check_invariants(2).unwrap();
    e.update_tail(0, 2501).unwrap();
    let s = e
        .next_segment(3)
        .expect("100 B of credit send the 1-byte segment");
    assert_eq!((s.seg, s.offset, s.len, s.rtx), (3, 2500, 1, false));
    assert_eq!(e.stats().stale, 0);
    e.check_invariants(3).unwrap();
}
