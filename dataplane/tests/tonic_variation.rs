//! The testbench's host timing variation (`network.tx_jitter`, `network.clock_ppm`,
//! `network.variation_seed`, `flows.start_window`; `dataplane::tonic::testbench::variation`):
//! the keys parse and are checked, off is the deterministic model, a seed gives one run, and
//! the variation removes the drop-tail phase effect (Floyd and Jacobson, "On traffic phase
//! effects in packet-switched gateways", 1992) that locks out one of two identical senders
//! at exactly the bottleneck rate.

use dataplane::tonic::testbench::{parse_scenario, run_scenario, Scenario, TestbenchReport};

/// Tonic §6.2.1's network scaled down: 2 senders × 10 NewReno flows into one 10 Gb/s
/// drop-tail bottleneck, RTT 10 µs, delayed ACKs, for 200 ms. The buffer (500 KB) is smaller
/// than the flows' windows together (20 × 256 segments), so it fills; a 5 ms minimum RTO
/// lets timeouts resolve within the run.
const PHASE: &str = r#"
seed = 1
duration = "200ms"
trace_interval = "200ms"
[module]
name = "newreno"
[tonic]
init_rtx_timer = "5ms"
rtt = "10us"
active_flow_cnt = 10
window = 256
cycle = "10us"
[flows]
senders = 2
segments = 1000000
[link]
rate = "10Gbps"
buffer = "500KB"
[receiver]
ack_every = 2
"#;

/// The scenario with `extra` TOML appended (sections of their own).
fn phase(extra: &str) -> Scenario {
    parse_scenario(&format!("{PHASE}{extra}"), "phase.toml").unwrap()
}

/// Flows that got less than a quarter of the mean per-flow delivery.
fn locked_out(r: &TestbenchReport) -> Vec<u32> {
    let mean = r.flows.iter().map(|f| f.delivered).sum::<u64>() as f64 / r.flows.len() as f64;
    r.flows
        .iter()
        .filter(|f| (f.delivered as f64) < 0.25 * mean)
        .map(|f| f.flow)
        .collect()
}

#[test]
fn variation_keys_parse_and_are_checked() {
    let s = phase("[network]\ntx_jitter = \"852ns\"\nclock_ppm = 100\nvariation_seed = 9\n");
    let v = s.variation();
    assert_eq!((v.tx_jitter, v.clock_ppm, v.seed), (852, 100, 9));
    assert_eq!(v.start_window, 0);
    let s = parse_scenario(
        &PHASE.replace("[flows]", "[flows]\nstart_window = \"4ms\""),
        "t",
    )
    .unwrap();
    assert_eq!(s.variation().start_window, 4_000_000);
    assert_eq!(s.variation().seed, s.seed, "the scenario's seed by default");
    let e = parse_scenario(&format!("{PHASE}[network]\nclock_ppm = 20000\n"), "t.toml");
    assert_eq!(e.unwrap_err().key, "network.clock_ppm");
    let e = parse_scenario(
        &format!("{PHASE}[network]\ntx_jitter = \"soon\"\n"),
        "t.toml",
    );
    assert_eq!(e.unwrap_err().key, "network.tx_jitter");
}

/// Off (the keys given as zero, any variation seed) is the deterministic model: the same
/// report, trace for trace. On, one seed gives one run, and the variation seed alone
/// changes it.
#[test]
fn off_is_identical_and_on_is_deterministic_per_seed() {
    let mut base = phase("");
    base.duration = 20_000_000;
    let a = run_scenario(&base).unwrap();
    let mut zero = phase("[network]\ntx_jitter = \"0ns\"\nclock_ppm = 0\nvariation_seed = 77\n");
    zero.duration = base.duration;
    zero.flows.start_window = 0;
    let b = run_scenario(&zero).unwrap();
    assert_eq!(a.summary_csv(), b.summary_csv());
    assert_eq!(a.trace, b.trace);
    assert_eq!((a.events, a.link), (b.events, b.link));

    let mut on = base.clone();
    on.network.tx_jitter = 852;
    on.network.clock_ppm = 100;
    on.flows.start_window = 1_000_000;
    let (c, d) = (run_scenario(&on).unwrap(), run_scenario(&on).unwrap());
    assert_eq!(c.summary_csv(), d.summary_csv());
    assert_eq!(c.trace, d.trace);
    assert_ne!(a.summary_csv(), c.summary_csv());
    assert!(c.flows.iter().all(|f| f.start_ns < 1_000_000));
    assert!(c.flows.iter().any(|f| f.start_ns > 0));
    let mut other = on.clone();
    other.network.variation_seed = Some(on.seed + 1);
    let e = run_scenario(&other).unwrap();
    assert_ne!(c.summary_csv(), e.summary_csv());
}

/// The phase effect, and its remedy. Without variation both senders' packets reach the full
/// drop-tail buffer at fixed phases, the same sender's find it full, and that sender's
/// flows are locked out; with transmit jitter of up to one bottleneck service time (852 ns
/// for 1,064 bytes at 10 Gb/s, Floyd and Jacobson's remedy) no flow is, alone or with the
/// clock offsets and random starts.
#[test]
fn variation_removes_the_drop_tail_phase_effect() {
    let off = run_scenario(&phase("")).unwrap();
    let out = locked_out(&off);
    assert!(
        out.len() >= 5,
        "without variation a sender's flows are locked out: {out:?}\n{}",
        off.summary_text()
    );
    let jitter = run_scenario(&phase("[network]\ntx_jitter = \"852ns\"\n")).unwrap();
    assert_eq!(
        locked_out(&jitter),
        Vec::<u32>::new(),
        "{}",
        jitter.summary_text()
    );
    let mut all = phase("[network]\ntx_jitter = \"852ns\"\nclock_ppm = 100\n");
    all.flows.start_window = 4_000_000;
    let r = run_scenario(&all).unwrap();
    assert_eq!(locked_out(&r), Vec::<u32>::new(), "{}", r.summary_text());
    // Both senders get about half the link.
    let per_sender = |r: &TestbenchReport, sd| -> u64 {
        r.flows
            .iter()
            .filter(|f| f.sender == sd)
            .map(|f| f.delivered)
            .sum()
    };
    let (a, b) = (per_sender(&r, 0) as f64, per_sender(&r, 1) as f64);
    assert!((a - b).abs() <= 0.2 * (a + b) / 2.0, "{a} vs {b}");
}
