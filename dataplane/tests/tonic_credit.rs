//! Credit-engine claims of Tonic: rate-limiter arithmetic and the multi-precision rate
//! (§3.3.1–§3.3.2, App. B), grant accounting (§3.3.1–§3.3.2). Driven through whole engines.

use dataplane::tonic::module::{
    CreditScheme, HookOutput, IncomingInput, IncomingPkt, ModuleConfig, PeriodicInput, TonicModule,
};
use dataplane::tonic::rate::{RateCredit, RateRep};
use dataplane::tonic::{EngineParams, TonicEngine};
use proptest::prelude::*;

/// A module that only sets the rate from `data[0..2]` (bits per second, low and high word)
/// when a packet carries one.
struct RateSetter {
    scheme: CreditScheme,
    bps: u64,
    burst: u32,
}

impl TonicModule for RateSetter {
    fn name(&self) -> &str {
        "rate-setter"
    }
    fn config(&self) -> ModuleConfig {
        ModuleConfig {
            credit_scheme: self.scheme,
            init_wnd_size: 256,
            init_rate_bps: self.bps,
            max_burst_bytes: self.burst,
            init_credit_bytes: 0,
            ..Default::default()
        }
    }
    fn incoming(&self, i: &IncomingInput, _: &mut [u64], out: &mut HookOutput) {
        let bps = i.pkt.data[0] as u64 | (i.pkt.data[1] as u64) << 32;
        if bps != 0 {
            out.set_rate(bps);
        }
    }
    fn periodic(&self, _: &PeriodicInput, _: &mut [u64], _: &mut HookOutput) {}
}

fn rate_engine(bps: u64, burst: u32) -> TonicEngine {
    let m: Box<dyn TonicModule> = Box::new(RateSetter {
        scheme: CreditScheme::Rate,
        bps,
        burst,
    });
    let mut e = TonicEngine::new(m, EngineParams::default()).unwrap();
    e.add_flow(0, 1000, 0).unwrap();
    e.update_tail(0, 1 << 40).unwrap();
    e
}

/// Sends as fast as the engine allows, polling every `poll_ns`, acking every segment at
/// once; returns the bytes sent in `[0, dur)`.
fn run_rate(e: &mut TonicEngine, poll_ns: u64, dur: u64) -> u64 {
    let mut bytes = 0;
    let mut now = 0;
    while now < dur {
        e.periodic(now, 1);
        while let Some(tx) = e.next_segment(now) {
            bytes += tx.len as u64;
            e.incoming(0, &IncomingPkt::ack(tx.seg + 1), now).unwrap();
        }
        now += poll_ns;
    }
    bytes
}

/// App. B: multi-precision R keeps slow and fast flows accurate: 1 Mbit/s, 1 Gbit/s,
/// 20 Gbit/s and 100 Gbit/s flows send within 1% of their rate (the burst D absorbs the
/// timer granularity of App. B's representation).
#[test]
fn rates_from_1mbps_to_100gbps_are_accurate() {
    for (bps, dur, poll) in [
        (1_000_000u64, 2_000_000_000u64, 10_000u64),
        (1_000_000_000, 20_000_000, 100),
        (20_000_000_000, 1_000_000, 10),
        (100_000_000_000, 200_000, 2),
    ] {
        let mut e = rate_engine(bps, 4000);
        let bytes = run_rate(&mut e, poll, dur);
        let got = bytes as f64 * 8.0 * 1e9 / dur as f64;
        let err = (got - bps as f64).abs() / bps as f64;
        assert!(
            err < 0.01,
            "{bps} bit/s: sent at {got:.0} ({:.2}% off)",
            err * 100.0
        );
    }
}

/// §3.3.2: the timer fires after ⌈C/R⌉ units and the flow is then ready; a rate change
/// from the module reaches the credit engine (§3.3.3).
#[test]
fn rate_timer_and_module_rate_changes() {
    // 8 Gbit/s = 1 B/ns, D = 1000 B: one segment every 1000 ns (T = ⌈1000/512⌉ × 512 ns =
    // 1024 ns with the 512 ns unit the multi-precision choice makes).
    let mut e = rate_engine(8_000_000_000, 1000);
    let r = e.ce().rate(0);
    assert_eq!((r.exp, r.mant), (3, 512));
    e.incoming(0, &IncomingPkt::ack(0), 0).unwrap();
    assert!(e.next_segment(0).is_none(), "no credit at t = 0");
    assert!(e.ce().timer_armed(0));
    assert!(e.next_segment(1023).is_none());
    assert_eq!(e.next_segment(1024).map(|t| t.seg), Some(0));
    // Module sets 80 Gbit/s: 10 B/ns.
    let mut p = IncomingPkt::ack(1);
    p.data[0] = 80_000_000_000u64 as u32;
    p.data[1] = (80_000_000_000u64 >> 32) as u32;
    e.incoming(0, &p, 1024).unwrap();
    assert_eq!(e.flow_view(0).unwrap().rate_bps, 80_000_000_000);
    assert!(e.next_segment(1100).is_none());
    assert!(
        e.next_segment(1152).is_some(),
        "⌈1000/640⌉ × 64 ns = 128 ns later"
    );
}

proptest! {
    /// §3.3.1, App. B: credit(t) = min(R·(t − t0) + c0, D), and each transmit changes it by
    /// (T1 − T0)·R − S, for any rate and any transmit times.
    #[test]
    fn rate_credit_update_formula(
        bps in 1_000_000u64..400_000_000_000,
        burst in 1500u32..100_000,
        c0 in 0i64..1500,
        steps in prop::collection::vec((1u64..1_000_000, 1u32..1500), 1..20),
    ) {
        let r = RateRep::from_bps(bps);
        let d = burst as i64;
        let mut c = RateCredit { credit: c0, t0: 0 };
        let mut model = c0;
        let mut t0 = 0u64;
        for (dt, s) in steps {
            let t1 = t0 + dt;
            let gained = ((dt as u128 * r.mant as u128) >> r.shift()) as i64;
            prop_assert_eq!(c.at(r, d, t1), (model + gained).min(d));
            c.spend(r, d, t1, s);
            model = (model + gained).min(d) - s as i64;
            prop_assert_eq!(c.credit, model);
            if let Some(w) = c.wait_for(r, d, t1, 1000) {
                prop_assert!(c.at(r, d, t1 + w) >= 1000, "enough credit when T expires");
            }
            t0 = t1;
        }
    }

    /// §3.3.1–§3.3.2: with grant tokens, credit = Σ tokens − bytes sent, and a flow sends exactly
    /// when it has a segment's worth.
    #[test]
    fn grant_credit_is_tokens_minus_bytes(grants in prop::collection::vec(0u32..3000, 1..40)) {
        let m: Box<dyn TonicModule> = Box::new(RateSetter {
            scheme: CreditScheme::Grant,
            bps: 0,
            burst: 0,
        });
        let mut e = TonicEngine::new(m, EngineParams::default()).unwrap();
        e.add_flow(0, 1000, 0).unwrap();
        e.update_tail(0, 1 << 30).unwrap();
        let (mut tokens, mut sent) = (0i64, 0i64);
        for (i, g) in grants.into_iter().enumerate() {
            let now = i as u64;
            e.incoming(0, &IncomingPkt::grant(g), now).unwrap();
            tokens += g as i64;
            while let Some(tx) = e.next_segment(now) {
                sent += tx.len as i64;
            }
            prop_assert_eq!(e.ce().credit(0, now), tokens - sent);
            prop_assert!(tokens - sent < 1000, "would have sent with a segment's credit");
            prop_assert!(tokens - sent >= 0);
        }
    }
}
