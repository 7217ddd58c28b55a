//! The virtual-time testbench (`nicemu testbench`, scenarios in `configs/tonic/`): every built-in
//! module delivers every segment through a lossy bottleneck, with ECN marking (DCTCP, DCQCN) or
//! trimming (NDP) where the protocol uses it; two DCQCN flows converge to equal rates
//! (Tonic §6.2.2); an 8-to-1 NDP incast completes without timeouts; NewReno's trace shows slow
//! start, fast recovery and congestion avoidance (Tonic §6.2.1, App. D; Tab. 3).

use std::path::PathBuf;

use dataplane::tonic::registry::Registry;
use dataplane::tonic::testbench::scenario::DropRule;
use dataplane::tonic::testbench::{
    load_scenario, parse_scenario, run_scenario, write_csv, ReceiverKind, Scenario, TestbenchReport,
};

fn configs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/tonic")
}

fn cfg(name: &str) -> Scenario {
    load_scenario(configs().join(format!("{name}.toml"))).unwrap()
}

/// Runs configs/tonic/`name`.toml with invariant checks and asserts that every flow
/// delivered every segment and was acknowledged, after real impairments.
fn delivers_everything(name: &str) -> TestbenchReport {
    let mut s = cfg(name);
    s.check_invariants = true;
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert_eq!(r.module, name, "{text}");
    assert_eq!(r.flows.len() as u32, s.total_flows(), "{text}");
    for f in &r.flows {
        assert_eq!(
            f.delivered, f.segments,
            "flow {} lost segments\n{text}",
            f.flow
        );
        assert!(f.complete(), "flow {} not acknowledged\n{text}", f.flow);
        assert!(f.transmitted >= f.segments, "{text}");
    }
    assert!(r.end_ns < s.duration, "{text}");
    let losses = r.rx_nic_drops + r.link.lost + r.link.dropped + r.link.trimmed;
    assert!(losses > 0, "the scenario must lose packets\n{text}");
    assert!(r.retransmissions() > 0, "{text}");
    let engine_rtx: u64 = r.engines.iter().map(|e| e.retransmitted).sum();
    assert_eq!(engine_rtx, r.retransmissions(), "{text}");
    r
}

#[test]
fn reno_delivers_every_segment_with_loss() {
    let r = delivers_everything("reno");
    assert_eq!(r.receiver, ReceiverKind::TcpCumulative);
}

#[test]
fn newreno_delivers_every_segment_with_loss() {
    let r = delivers_everything("newreno");
    assert_eq!(r.receiver, ReceiverKind::TcpCumulative);
}

#[test]
fn sack_delivers_every_segment_with_loss() {
    let r = delivers_everything("sack");
    assert_eq!(r.receiver, ReceiverKind::TcpSack);
}

#[test]
fn dctcp_delivers_every_segment_with_loss_and_ecn() {
    let r = delivers_everything("dctcp");
    assert_eq!(r.receiver, ReceiverKind::TcpCumulative);
    assert!(r.link.ecn_marked > 0, "{}", r.summary_text());
    // DCTCP keeps the queue near K instead of filling the buffer.
    assert_eq!(r.link.dropped, 0, "{}", r.summary_text());
}

#[test]
fn ndp_delivers_every_segment_with_loss_and_trimming() {
    let r = delivers_everything("ndp");
    assert_eq!(r.receiver, ReceiverKind::NdpPull);
    assert!(
        r.link.trimmed > 0 && r.link.lost > 0,
        "{}",
        r.summary_text()
    );
    assert_eq!(r.link.dropped, 0, "trimming, not dropping");
    assert!(r.receiver_stats.nacks > 0 && r.receiver_stats.pulls > 0);
}

#[test]
fn dcqcn_delivers_every_segment_with_loss_and_ecn() {
    let r = delivers_everything("dcqcn");
    assert_eq!(r.receiver, ReceiverKind::RoceGoBackN);
    let rx = &r.receiver_stats;
    assert!(r.link.ecn_marked > 0 && rx.cnps > 0, "{}", r.summary_text());
    assert!(
        rx.nacks > 0 && rx.discarded > 0,
        "go-back-N: NAKs, discarded out-of-order data"
    );
}

#[test]
fn irn_delivers_every_segment_with_loss_and_ecn() {
    let r = delivers_everything("irn");
    assert_eq!(r.receiver, ReceiverKind::IrnSelective);
    let rx = &r.receiver_stats;
    assert!(
        r.link.ecn_marked > 0 && rx.cnps > 0 && rx.nacks > 0,
        "{}",
        r.summary_text()
    );
    assert_eq!(rx.discarded, 0, "IRN keeps out-of-order data");
}

/// Tonic §6.2.2: two DCQCN flows from two hosts into one receiver converge to the same rate. The
/// second flow joins 2 ms late; over 30–60 ms both are active (they finish later) and each gets
/// about half the link.
#[test]
fn dcqcn_two_flows_converge_to_equal_rates() {
    let s = cfg("dcqcn-2flows");
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    for f in &r.flows {
        assert!(
            f.completed_ns.unwrap() > 60_000_000,
            "both active until 60 ms\n{text}"
        );
    }
    let (from, to) = (30_000_000, 60_000_000);
    let a = r.goodput_bps(0, from, to).unwrap();
    let b = r.goodput_bps(1, from, to).unwrap();
    let link = s.link.rate as f64;
    assert!(
        a.max(b) / a.min(b) < 1.2,
        "rates {a:.3e} and {b:.3e} differ by 20% or more"
    );
    for g in [a, b] {
        assert!(
            (0.4 * link..0.6 * link).contains(&g),
            "{g:.3e} bit/s is not about half of {link:.3e}"
        );
    }
    // Flow 0 had the link alone first; the join cut it through CNPs.
    let alone = r.goodput_bps(0, 500_000, 2_000_000).unwrap();
    assert!(alone > 0.85 * link, "{alone:.3e}");
    assert!(r.receiver_stats.cnps > 0 && r.timeouts() == 0, "{text}");
    // The rate trace follows DCQCN: the module's rate drops below line rate after the join.
    let min_rate = r.flow_trace(0).map(|t| t.rate_bps).min().unwrap();
    assert!(min_rate < s.link.rate / 2, "{min_rate}");
}

/// An 8-to-1 NDP incast through a trimming 8-packet buffer completes without a single
/// retransmission timeout; trimmed packets are NACKed and re-pulled.
#[test]
fn ndp_incast_8_to_1_completes_without_timeouts() {
    let mut s = cfg("ndp-incast8");
    s.check_invariants = true;
    assert_eq!((s.flows.senders, s.total_flows()), (8, 8));
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.timeouts(), 0, "{text}");
    assert!(r.engines.iter().all(|e| e.timeouts == 0));
    for f in &r.flows {
        assert_eq!(f.delivered, f.segments, "{text}");
        assert_eq!(f.timeouts, 0);
    }
    assert!(
        r.link.trimmed > 0,
        "the incast must overflow the buffer\n{text}"
    );
    assert_eq!(r.link.dropped, 0, "{text}");
    assert_eq!(
        r.retransmissions(),
        r.link.trimmed,
        "one retransmission per trimmed packet"
    );
    // The receiver pulls at its link rate: the incast takes about as long as sending all
    // the data through the bottleneck.
    let bits = 8.0
        * r.flows
            .iter()
            .map(|f| f.bytes + f.transmitted * 64)
            .sum::<u64>() as f64;
    let ideal_ns = bits / s.link.rate as f64 * 1e9;
    assert!(
        (r.end_ns as f64) < 1.25 * ideal_ns,
        "{} ns vs {ideal_ns} ns",
        r.end_ns
    );
}

/// Tonic §6.2.1 / App. D: NewReno's window trace. One flow, BDP ≈ 125 segments (10 Gbps, 100 µs),
/// init window 2, segment 150 dropped once: slow start doubles the window every RTT, the third
/// duplicate ack starts fast recovery, the full ack leaves it at half the window, then congestion
/// avoidance adds one segment per RTT.
#[test]
fn newreno_trace_shows_slow_start_fast_recovery_and_congestion_avoidance() {
    let mut s = Scenario::new("newreno");
    s.tonic.rtt = Some(100_000);
    s.tonic.init_wnd_size = 2;
    s.tonic.window = 256;
    s.tonic.init_rtx_timer = 10_000_000;
    s.link.buffer = 1_000_000;
    s.flows.segments = Some(6000);
    s.trace_interval = Some(10_000);
    s.check_invariants = true;
    s.drops.push(DropRule {
        flow: 0,
        segment: 150,
        count: 1,
    });
    let r = run_scenario(&s).unwrap();
    assert!(r.all_complete(), "{}", r.summary_text());
    assert_eq!(
        (r.retransmissions(), r.timeouts(), r.rx_nic_drops),
        (1, 0, 1)
    );
    let rows: Vec<_> = r.flow_trace(0).copied().collect();
    let wnd_at = |t: u64| {
        rows.iter()
            .take_while(|x| x.time_ns <= t)
            .last()
            .unwrap()
            .wnd_size
    };
    let rtt = 100_000;
    // Slow start: mid-round samples double every RTT (2 → 4 → … → 64).
    for k in 1..=5 {
        let (a, b) = (wnd_at(k * rtt + rtt / 2), wnd_at((k + 1) * rtt + rtt / 2));
        let ratio = b as f64 / a as f64;
        assert!((1.6..=2.4).contains(&ratio), "round {k}: {a} → {b}");
    }
    // Fast recovery: the first retransmission, then half the pre-loss window.
    let first_rtx = rows.iter().find(|x| x.retransmissions > 0).unwrap().time_ns;
    let before = rows
        .iter()
        .filter(|x| x.time_ns < first_rtx)
        .map(|x| x.wnd_size)
        .max()
        .unwrap();
    let after = wnd_at(first_rtx + 2 * rtt);
    assert!(before >= 100, "slow start reached {before}");
    let half = after as f64 / before as f64;
    assert!((0.4..=0.6).contains(&half), "{before} → {after}");
    // Congestion avoidance: about +1 segment per RTT over 30 RTTs, never a jump.
    let start = first_rtx + 2 * rtt;
    let ca: Vec<_> = rows
        .iter()
        .filter(|x| x.time_ns >= start && x.time_ns <= start + 30 * rtt)
        .map(|x| x.wnd_size)
        .collect();
    let growth = *ca.last().unwrap() as f64 - ca[0] as f64;
    assert!(
        (20.0..=32.0).contains(&growth),
        "CA growth {growth} over 30 RTTs"
    );
    assert!(
        ca.windows(2).all(|w| w[1] >= w[0] && w[1] <= w[0] + 1),
        "{ca:?}"
    );
}

/// Variants of the TCP receivers: delayed acks (every second segment, as in §6.2.1) and a
/// single SACK block per ack (Tonic's prototype, §6.1.1).
#[test]
fn delayed_acks_and_one_sack_block_still_deliver() {
    let mut s = cfg("newreno");
    s.receiver.ack_every = 2;
    s.check_invariants = true;
    let r = run_scenario(&s).unwrap();
    assert!(r.all_complete(), "{}", r.summary_text());
    assert!(r.receiver_stats.acks < 7000, "fewer acks than segments");
    let mut s = cfg("sack");
    s.receiver.sack_blocks = 1;
    let r = run_scenario(&s).unwrap();
    assert!(r.all_complete(), "{}", r.summary_text());
}

/// A seed fixes the run; another seed changes the drops.
#[test]
fn runs_are_deterministic_per_seed() {
    let s = cfg("sack");
    let (a, b) = (run_scenario(&s).unwrap(), run_scenario(&s).unwrap());
    assert_eq!(a.summary_csv(), b.summary_csv());
    assert_eq!(a.trace, b.trace);
    let mut s2 = s.clone();
    s2.seed = 99;
    let c = run_scenario(&s2).unwrap();
    assert_ne!(a.summary_csv(), c.summary_csv());
}

/// CSV export: a summary, one trace per flow, and the transmission log (Fig. 3b).
#[test]
fn csv_export_writes_summary_traces_and_segments() {
    let mut s = cfg("newreno");
    s.trace_segments = true;
    s.drops.push(DropRule {
        flow: 1,
        segment: 20,
        count: 1,
    });
    let r = run_scenario(&s).unwrap();
    let resent: Vec<_> = r
        .tx_log
        .iter()
        .filter(|t| t.flow == 1 && t.seg == 20)
        .collect();
    assert!(resent.len() >= 2 && resent[1].rtx, "{resent:?}");
    let dir = std::env::temp_dir().join(format!("nicemu-testbench-{}", std::process::id()));
    let files = write_csv(&r, &dir).unwrap();
    assert_eq!(files.len(), 2 + r.flows.len());
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    assert!(summary.starts_with("flow,sender,segments,bytes,delivered,"));
    assert_eq!(summary.lines().count(), 1 + r.flows.len());
    let trace = std::fs::read_to_string(dir.join("flow-3.csv")).unwrap();
    let header = trace.lines().next().unwrap();
    assert!(header.starts_with("time_ns,flow,wnd_size,rate_bps,credit_bytes,snd_una,snd_nxt"));
    assert_eq!(trace.lines().count(), 1 + r.flow_trace(3).count());
    let last = trace.lines().last().unwrap();
    assert_eq!(
        last.split(',').nth(5),
        Some("2000"),
        "snd_una at the end: {last}"
    );
    let tx = std::fs::read_to_string(dir.join("tx.csv")).unwrap();
    assert_eq!(tx.lines().count(), 1 + r.tx_log.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every shipped scenario loads, and together they cover every built-in module.
#[test]
fn shipped_scenarios_cover_every_builtin_module() {
    let mut modules = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(configs()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let s = load_scenario(&p).unwrap_or_else(|e| panic!("{e}"));
            modules.insert(s.module.name.clone());
        }
    }
    for m in Registry::builtin().list() {
        assert!(modules.contains(&m.name), "no scenario for {}", m.name);
    }
    assert!(configs().join("dcqcn-2flows.toml").exists());
    assert!(configs().join("ndp-incast8.toml").exists());
}

/// Scenario errors name the file and the key, like `dataplane::config`.
#[test]
fn scenario_errors_name_the_key() {
    let err = |t: &str| parse_scenario(t, "s.toml").unwrap_err();
    let base = "[module]\nname = \"newreno\"\n";
    assert_eq!(err(&format!("{base}[link]\nrate = 5.5\n")).key, "link.rate");
    assert_eq!(
        err(&format!("{base}[tonic]\nwindow = 100\n")).key,
        "tonic.window"
    );
    assert_eq!(
        err(&format!("{base}[flows]\nsegmens = 3\n")).key,
        "flows.segmens"
    );
    assert_eq!(
        err(&format!("{base}[receiver]\nkind = \"carrier-pigeon\"\n")).key,
        "receiver.kind"
    );
    let e = err(&format!("{base}[flows]\nsegments = 10\nbytes = 100\n"));
    assert_eq!(e.key, "flows.bytes");
    assert!(e.to_string().starts_with("s.toml: flows.bytes: "), "{e}");
    let e = load_scenario(configs().join("no-such.toml")).unwrap_err();
    assert_eq!(e.key, "(file)");
    let ok = parse_scenario(
        &format!("{base}[receiver]\nkind = \"tcp-sack\"\n"),
        "s.toml",
    );
    assert_eq!(ok.unwrap().receiver.kind, Some(ReceiverKind::TcpSack));
}

/// Homa incast (SIGCOMM 2018 §3.2–§3.4): `senders` messages of 64 KB into one receiver at
/// once, over 8 priority queues: every message completes, none times out, nothing is lost,
/// and the unscheduled bytes plus the grants add up to each message.
fn homa_incast(senders: u32) -> TestbenchReport {
    let mut s = cfg("homa-incast");
    s.check_invariants = true;
    s.flows.senders = senders;
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert_eq!(r.receiver, ReceiverKind::HomaGrant);
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.timeouts(), 0, "{text}");
    assert!(r.engines.iter().all(|e| e.timeouts == 0), "{text}");
    assert_eq!(r.retransmissions(), 0, "{text}");
    assert_eq!(r.link.dropped + r.link.lost, 0, "{text}");
    for f in &r.flows {
        assert_eq!(f.bytes, 64_000);
        assert_eq!(f.delivered, f.segments, "{text}");
        assert_eq!(f.transmitted, f.segments, "{text}");
    }
    // Grants: at least one per message (each is longer than RTTbytes), at most one per
    // scheduled packet beyond the 12 unscheduled ones.
    let grants = r.receiver_stats.pulls;
    assert!(
        grants >= senders as u64 && grants <= senders as u64 * (64 - 12),
        "{text}"
    );
    r
}

#[test]
fn homa_incast_8_to_1_completes_without_timeouts() {
    let r = homa_incast(8);
    // SRPT with equal sizes: the messages finish one after another, not all together.
    let mut done: Vec<u64> = r.flows.iter().map(|f| f.completed_ns.unwrap()).collect();
    done.sort_unstable();
    assert!(done[0] * 2 < done[7], "{done:?}");
}

#[test]
fn homa_incast_32_to_1_completes_without_timeouts() {
    homa_incast(32);
}

/// The dumbbell topology: data crosses the core link and then switch B's port to the
/// receiver. With the edge port at half the core rate the bottleneck moves there: NDP's
/// incast trims at B, still completes without timeouts, and takes as long as pushing the
/// bytes through the slower edge port.
#[test]
fn dumbbell_edge_port_is_the_bottleneck_when_slower() {
    use dataplane::tonic::testbench::scenario::Topology;
    let mut s = cfg("ndp-incast8");
    s.check_invariants = true;
    s.network.topology = Topology::Dumbbell;
    s.network.edge_rate = Some(5_000_000_000);
    s.network.edge_buffer = Some(8_500);
    s.link.buffer = 1_000_000;
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.timeouts(), 0, "{text}");
    assert!(r.link.trimmed > 0, "{text}");
    let bits = 8.0
        * r.flows
            .iter()
            .map(|f| f.bytes + f.transmitted * 64)
            .sum::<u64>() as f64;
    let ideal_ns = bits / 5e9 * 1e9;
    let end = r.end_ns as f64;
    assert!(
        end > 0.95 * ideal_ns && end < 1.3 * ideal_ns,
        "{end} vs {ideal_ns}\n{text}"
    );
    // The star (default) on the same data: twice as fast.
    let mut star = cfg("ndp-incast8");
    star.link.buffer = 1_000_000;
    let r2 = run_scenario(&star).unwrap();
    assert!((r2.end_ns as f64) < 0.6 * end, "{} vs {end}", r2.end_ns);
}

/// Network-model keys parse, with errors naming the key.
#[test]
fn network_model_keys_parse_and_are_checked() {
    let base = "[module]\nname = \"homa\"\n";
    let s = parse_scenario(
        &format!("{base}[network]\ntopology = \"dumbbell\"\nedge_rate = \"25Gbps\"\nedge_buffer = \"2MB\"\n[link]\npriorities = 8\n[receiver]\nhoma_overcommit = 3\nhoma_sched_prio = 5\nhoma_rtt_bytes = \"20KB\"\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.network.edge_rate, Some(25_000_000_000));
    assert_eq!((s.link.priorities, s.receiver.homa_overcommit), (8, 3));
    let bad = |t: &str| {
        parse_scenario(&format!("{base}{t}"), "t.toml")
            .unwrap_err()
            .key
    };
    assert_eq!(bad("[link]\npriorities = 9\n"), "link.priorities");
    assert_eq!(bad("[network]\ntopology = \"ring\"\n"), "network.topology");
    assert_eq!(
        bad("[network]\nedge_buffer = \"10B\"\n"),
        "network.edge_buffer"
    );
    assert_eq!(
        bad("[receiver]\nhoma_overcommit = 0\n"),
        "receiver.homa_overcommit"
    );
    assert_eq!(
        bad("[receiver]\nhoma_sched_prio = 8\n"),
        "receiver.homa_sched_prio"
    );
}

/// Homa-Tr (nanoTransport §4.4, §5.2): Homa over trimming switches. The 8-to-1 incast's
/// unscheduled burst overflows a 30 KB buffer; each trimmed header comes back as a RESEND
/// and its segment is resent at once: no timeouts, one retransmission per trimmed packet.
#[test]
fn homa_over_trimming_switches_resends_trimmed_packets_without_timeouts() {
    let mut s = cfg("homa-incast");
    s.check_invariants = true;
    s.link.buffer = 30_000;
    s.link.trim = true;
    s.network.edge_buffer = Some(30_000);
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert_eq!(r.timeouts(), 0, "{text}");
    assert!(r.link.trimmed > 0, "{text}");
    assert_eq!(r.link.dropped, 0, "{text}");
    assert_eq!(r.retransmissions(), r.link.trimmed, "{text}");
    assert_eq!(r.receiver_stats.nacks, r.link.trimmed, "{text}");
}

/// Homa with random loss on the wire and no trimming: lost packets are found by the sender's
/// timeout (Homa §3.7) and every message completes.
#[test]
fn homa_recovers_random_loss_by_timeout() {
    let mut s = cfg("homa-incast");
    s.check_invariants = true;
    s.link.loss_prob = 0.02;
    s.tonic.init_rtx_timer = 200_000;
    let r = run_scenario(&s).unwrap();
    let text = r.summary_text();
    assert!(r.all_complete(), "{text}");
    assert!(r.link.lost > 0, "{text}");
    assert!(
        r.timeouts() > 0 && r.retransmissions() >= r.link.lost,
        "{text}"
    );
    for f in &r.flows {
        assert_eq!(f.delivered, f.segments, "{text}");
    }
}

/// nanoTransport §5.2 (Fig. 2a): in an incast with a buffer large enough for the burst, NDP
/// pulls one packet per arrival, so the bottleneck queue stays as high as the first-RTT
/// burst left it, while Homa grants only a few messages at a time and its queue settles low
/// after the first RTTs. Also the SRPT side: Homa finishes the first message far sooner.
#[test]
fn incast_queue_stays_high_with_ndp_and_settles_low_with_homa() {
    let homa = cfg("homa-incast");
    let mut ndp = cfg("ndp-incast8");
    ndp.flows.segments = None;
    ndp.flows.bytes = Some(64_000);
    ndp.module.init_credit = Some(12_000);
    ndp.link.buffer = 1_000_000;
    ndp.link.trim = false;
    ndp.trace_interval = homa.trace_interval;
    let mean_queue = |r: &TestbenchReport| {
        let mut by_time = std::collections::BTreeMap::new();
        for t in &r.trace {
            by_time.insert(t.time_ns, t.queue_bytes);
        }
        let (from, to) = (50_000, r.end_ns * 3 / 4);
        let q: Vec<u64> = by_time.range(from..to).map(|(_, q)| *q).collect();
        q.iter().sum::<u64>() as f64 / q.len().max(1) as f64
    };
    let rh = run_scenario(&homa).unwrap();
    let rn = run_scenario(&ndp).unwrap();
    assert!(rh.all_complete() && rn.all_complete());
    let (qh, qn) = (mean_queue(&rh), mean_queue(&rn));
    assert!(qh * 3.0 < qn, "Homa {qh} B vs NDP {qn} B");
    let first = |r: &TestbenchReport| r.flows.iter().filter_map(|f| f.fct_ns()).min().unwrap();
    assert!(
        first(&rh) * 2 < first(&rn),
        "first completion: Homa {} ns, NDP {} ns",
        first(&rh),
        first(&rn)
    );
}
