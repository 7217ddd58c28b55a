//! The built-in modules over a small lossy path (Tonic App. D, §6.2 and Tab. 3, in miniature; the
//! full virtual-time testbench is a separate tool): every module delivers every segment with random
//! loss, through a receiver that speaks what the protocol expects (cumulative acks, SACKs, NAKs,
//! NACKs with SACKs, pulls, CNPs); NewReno's window shows slow start, fast recovery and congestion
//! avoidance.

use std::collections::VecDeque;

use dataplane::tonic::module::{IncomingPkt, PktType, SegRange};
use dataplane::tonic::modules::ModuleParams;
use dataplane::tonic::registry::Registry;
use dataplane::tonic::{EngineParams, TonicEngine};

const MSS: u32 = 1000;

/// Deterministic xorshift.
struct Rng(u64);
impl Rng {
    fn chance(&mut self, per_mille: u64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % 1000 < per_mille
    }
}

/// One sender, a bottleneck of one segment per `tx_ns` with a drop-tail queue of `queue`
/// segments and random loss, a fixed one-way delay, and a receiver for `module`'s protocol.
struct Path {
    module: String,
    e: TonicEngine,
    now: u64,
    delay: u64,
    tx_ns: u64,
    queue: usize,
    loss: u64,
    /// CNP when the queue is above this (DCQCN/IRN); ECE for DCTCP.
    mark_at: usize,
    rng: Rng,
    /// (arrival time, segment, trimmed) at the receiver.
    to_rx: VecDeque<(u64, u64, bool)>,
    link_free: u64,
    /// (arrival time, packet) at the sender.
    to_tx: VecDeque<(u64, IncomingPkt)>,
    got: Vec<bool>,
    cum: u64,
    nak_sent_for: Option<u64>,
    total: u64,
    /// cwnd samples (time, cwnd) for window modules.
    trace: Vec<(u64, u32)>,
}

impl Path {
    fn new(module: &str, total: u64, loss: u64, queue: usize) -> Path {
        Path::with_rto(module, total, loss, queue, 2_000_000)
    }

    fn with_rto(module: &str, total: u64, loss: u64, queue: usize, rto_ns: u64) -> Path {
        let p = ModuleParams {
            rto_ns,
            rto_low_ns: 500_000,
            line_rate_bps: 8_000_000_000,
            init_credit_bytes: 10 * MSS,
            bdp_segments: 64,
            ..ModuleParams::default()
        };
        let m = Registry::builtin().create(module, &p).unwrap();
        let mut e = TonicEngine::new(m, EngineParams::default()).unwrap();
        e.add_flow(0, MSS, 0).unwrap();
        e.update_tail(0, total * MSS as u64).unwrap();
        Path {
            module: module.to_string(),
            e,
            now: 0,
            delay: 10_000,
            tx_ns: 1000,
            queue,
            loss,
            mark_at: queue / 2,
            rng: Rng(0x9e37_79b9_7f4a_7c15),
            to_rx: VecDeque::new(),
            link_free: 0,
            to_tx: VecDeque::new(),
            got: vec![false; total as usize],
            cum: 0,
            nak_sent_for: None,
            total,
            trace: Vec::new(),
        }
    }

    fn queued(&self) -> usize {
        (self.link_free.saturating_sub(self.now) / self.tx_ns) as usize
    }

    /// The receiver's answer to segment `s` (or its trimmed header).
    fn receive(&mut self, s: u64, trimmed: bool, marked: bool) {
        let at = self.now + self.delay;
        let m = self.module.as_str();
        if trimmed {
            // NDP: header only; NACK it and pull for it.
            let mut p = IncomingPkt::nack(self.cum, s);
            p.flags |= IncomingPkt::FLAG_TRIMMED;
            p.grant_bytes = MSS;
            self.to_tx.push_back((at, p));
            return;
        }
        let in_order = s == self.cum;
        if m == "dcqcn" && !in_order {
            // Go-back-N receiver: drop out-of-order data, NAK the expected PSN once.
            if s > self.cum && self.nak_sent_for != Some(self.cum) {
                self.nak_sent_for = Some(self.cum);
                self.to_tx
                    .push_back((at, IncomingPkt::nack(self.cum, self.cum)));
            }
            return;
        }
        if (s as usize) < self.got.len() {
            self.got[s as usize] = true;
        }
        while (self.cum as usize) < self.got.len() && self.got[self.cum as usize] {
            self.cum += 1;
        }
        let sacks = self.sack_blocks(s);
        let mut p = match m {
            "sack" | "ndp" => IncomingPkt::sack(self.cum, &sacks),
            "irn" if !in_order && s > self.cum => {
                let mut p = IncomingPkt::sack(self.cum, &sacks);
                p.pkt_type = PktType::Nack;
                p.nack = self.cum;
                p
            }
            _ => IncomingPkt::ack(self.cum),
        };
        if m == "ndp" {
            p.grant_bytes = MSS;
        }
        if marked && m == "dctcp" {
            p.flags |= IncomingPkt::FLAG_ECN_ECHO;
        }
        self.to_tx.push_back((at, p));
        if marked && (m == "dcqcn" || m == "irn") {
            self.to_tx.push_back((at, IncomingPkt::cnp()));
        }
    }

    /// SACK blocks: the received run containing `s` first, then up to two more above cum.
    fn sack_blocks(&self, s: u64) -> Vec<SegRange> {
        let run = |from: u64| {
            let mut a = from;
            while a > self.cum && self.got[a as usize - 1] {
                a -= 1;
            }
            let mut b = from;
            while (b as usize) < self.got.len() && self.got[b as usize] {
                b += 1;
            }
            SegRange::new(a, b)
        };
        let mut v = Vec::new();
        if s >= self.cum && (s as usize) < self.got.len() && self.got[s as usize] {
            v.push(run(s));
        }
        let mut x = self.cum;
        while v.len() < 3 && (x as usize) < self.got.len() && x < self.cum + 256 {
            if self.got[x as usize] && !v.iter().any(|r| r.start <= x && x < r.end) {
                let r = run(x);
                x = r.end;
                v.push(r);
            } else {
                x += 1;
            }
        }
        v
    }

    /// Runs until everything is delivered or `limit_ns` passes; returns whether delivered.
    fn run(&mut self, limit_ns: u64) -> bool {
        let step = 250;
        while self.cum < self.total && self.now < limit_ns {
            while self.to_tx.front().is_some_and(|(t, _)| *t <= self.now) {
                let (_, p) = self.to_tx.pop_front().unwrap();
                self.e.incoming(0, &p, self.now).unwrap();
            }
            while self.to_rx.front().is_some_and(|(t, _, _)| *t <= self.now) {
                let (_, s, trimmed) = self.to_rx.pop_front().unwrap();
                let marked = self.queued() > self.mark_at;
                self.receive(s, trimmed, marked);
            }
            self.e.periodic(self.now, 4);
            // The NIC may hand the link one segment whenever its queue has room.
            while self.queued() < self.queue + 1 {
                let Some(tx) = self.e.next_segment(self.now) else {
                    break;
                };
                let start = self.link_free.max(self.now);
                self.link_free = start + self.tx_ns;
                let lost = self.rng.chance(self.loss);
                let overflow = self.queued() > self.queue;
                if self.module == "ndp" && (lost || overflow) {
                    self.to_rx
                        .push_back((self.link_free + self.delay, tx.seg, true));
                } else if !lost && !overflow {
                    self.to_rx
                        .push_back((self.link_free + self.delay, tx.seg, false));
                }
            }
            if let Some(w) = self.cwnd() {
                if self.trace.last().map(|t| t.1) != Some(w) {
                    self.trace.push((self.now, w));
                }
            }
            self.now += step;
        }
        self.cum == self.total
    }

    /// NewReno's cwnd (first user-context word, low half) for window modules.
    fn cwnd(&self) -> Option<u32> {
        matches!(self.module.as_str(), "reno" | "newreno" | "sack" | "dctcp")
            .then(|| self.e.dd().ctx(0)[0] as u32)
    }
}

#[test]
fn every_module_delivers_everything_under_loss() {
    for m in dataplane::config::TONIC_MODULES {
        let mut p = Path::new(m, 3000, 10, 40);
        let ok = p.run(2_000_000_000);
        let s = p.e.stats();
        assert!(
            ok,
            "{m}: delivered {} of {} by {} ns; stats {s:?}",
            p.cum, p.total, p.now
        );
        assert!(s.retransmitted > 0, "{m}: losses were recovered: {s:?}");
        p.e.check_invariants(p.now).unwrap();
    }
}

/// App. D in shape: slow start (cwnd grows by the newly acked count, doubling per RTT),
/// a fast recovery that about halves the window (ss_thresh = max(in_flight/2, 2)), then
/// congestion avoidance (at most one segment per window of acks). Random drops (0.3%) on a
/// path whose queue never overflows, and Linux's 200 ms minimum RTO, as in Tonic's §6.2.1
/// runs.
#[test]
fn newreno_window_trace_has_slow_start_recovery_and_avoidance() {
    let mut p = Path::with_rto("newreno", 20_000, 3, 1000, 200_000_000);
    assert!(p.run(2_000_000_000), "delivered");
    let t = &p.trace;
    assert_eq!(t[0].1, 10, "initial window");
    // Slow start: the window more than doubles before the first decrease.
    let first_drop = t.windows(2).position(|w| w[1].1 < w[0].1).expect("a loss");
    let peak = t[first_drop].1;
    assert!(
        peak >= 40,
        "slow start reached {peak}: {:?}",
        &t[..first_drop + 1]
    );
    // The decrease is to about half of what was in flight.
    let after = t[first_drop + 1].1;
    assert!(after <= peak / 2 + 2 && after >= 2, "{peak} → {after}");
    // Congestion avoidance afterwards: over any RTT (20 µs here) the window grows by at
    // most a couple of segments.
    let ca: Vec<_> = t[first_drop + 1..]
        .iter()
        .filter(|(time, _)| *time > t[first_drop].0 + 200_000)
        .collect();
    assert!(!ca.is_empty());
    for (i, (t0, w0)) in ca.iter().enumerate() {
        if let Some((_, w1)) = ca[i..]
            .iter()
            .take_while(|(t1, _)| *t1 <= t0 + 20_000)
            .last()
        {
            assert!(*w1 <= w0 + 2, "CA grew {w0} → {w1} within an RTT at {t0}");
        }
    }
    assert_eq!(p.e.stats().timeouts, 0, "losses recovered without RTO");
}

#[test]
fn ndp_incast_trims_are_recovered_by_nacks_without_timeouts() {
    // A small queue: many trims, no random loss; NACKs and pulls do all the recovery.
    let mut p = Path::new("ndp", 3000, 0, 4);
    assert!(p.run(1_000_000_000));
    let s = p.e.stats();
    assert!(s.retransmitted > 0 && s.timeouts == 0, "{s:?}");
}

/// The testbench scenario of the credit-wait timeout bug: one DCQCN flow at 100 Mbit/s
/// (80 µs per 1000-byte segment) with a 2000-byte burst and a 50 µs RTO, no loss. Each
/// segment after the burst waits longer than the RTO in the credit engine's ring.
fn slow_dcqcn(segments: u64) -> dataplane::tonic::testbench::Scenario {
    let mut s = dataplane::tonic::testbench::Scenario::new("dcqcn");
    s.module.line_rate = Some(100_000_000);
    s.module.max_burst = Some(2000);
    s.tonic.init_rtx_timer = 50_000;
    s.flows.segments = Some(segments);
    s.check_invariants = true;
    s
}

/// The retransmission timer runs while a segment is on the wire, not while its address waits
/// for credit: a rate flow whose next segment waits longer than the RTO for credit gets no
/// timeout and retransmits nothing when nothing is lost (before the fix: 98 timeouts for 100
/// segments).
#[test]
fn rate_flow_waiting_for_credit_does_not_time_out() {
    let r = dataplane::tonic::testbench::run_scenario(&slow_dcqcn(100)).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.flows[0].delivered, 100, "{text}");
    assert_eq!(r.timeouts(), 0, "{text}");
    assert_eq!(r.retransmissions(), 0, "{text}");
    assert_eq!(r.engines[0].timeouts, 0, "{text}");
}

/// ... and a segment that is lost on the wire still times out: the last segment (no later
/// packet makes the receiver NAK) is dropped once and recovered by the RTO alone.
#[test]
fn rate_flow_still_times_out_on_a_lost_last_segment() {
    let mut s = slow_dcqcn(20);
    s.drops
        .push(dataplane::tonic::testbench::scenario::DropRule {
            flow: 0,
            segment: 19,
            count: 1,
        });
    let r = dataplane::tonic::testbench::run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.timeouts(), 1, "{text}");
    assert_eq!(r.retransmissions(), 1, "{text}");
}

/// Invariant checks observe a run without changing it: the same rate-limited scenario with
/// and without `check_invariants` produces the same trace, transmissions and counters.
#[test]
fn invariant_checks_do_not_change_a_run() {
    let mut with = slow_dcqcn(60);
    with.trace_segments = true;
    // Samples (and checks) fall between the Periodic Updates sweeps, when a rate timer can
    // be due but not yet fired.
    with.trace_interval = Some(7_300);
    with.tonic.cycle = 10_000;
    with.module.line_rate = Some(93_000_000);
    with.module.max_burst = Some(3000);
    let mut without = with.clone();
    without.check_invariants = false;
    let a = dataplane::tonic::testbench::run_scenario(&with).unwrap();
    let b = dataplane::tonic::testbench::run_scenario(&without).unwrap();
    assert!(a.all_complete(), "{}", a.summary_text());
    assert_eq!(a.end_ns, b.end_ns);
    assert_eq!(a.tx_log, b.tx_log);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.engines, b.engines);
    assert!(a.engines[0].rate_timers > 0, "{:?}", a.engines);
}
