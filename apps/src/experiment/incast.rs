//! `incast`: N-to-1 incast (N = 8, 32, 128) of one 64 KB message per sender, all at once, in
//! the shape of nanoTransport's incast comparison (§5.2, Fig. 2: NDP vs Homa on a dumbbell
//! whose bottleneck is the receiver's downlink), with DCQCN and NewReno added. Reports
//! message completion times (p50, p99) per protocol and N.
//!
//! The network is the same for every protocol: one switch, every link 10 Gb/s, RTT 10 µs,
//! 1,000-byte segments, a 2 MB shared output buffer (large enough to absorb the first RTT of
//! the largest incast: nanoTransport's "large buffer" case) with 8 strict-priority queues.
//! Each protocol adds the switch feature it is designed for: trimming for NDP (NDP §3),
//! RED/ECN marking for DCQCN (5 KB / 200 KB / 1%). NDP's first-RTT credit and Homa's
//! RTTbytes are the BDP (12 KB); every protocol's base RTO is 1 ms.

use std::fmt::Write as _;

use dataplane::tonic::testbench::{run_scenario, Scenario, TestbenchReport};

use super::dcqcn::{plot, put, segments};
use super::{ensure_dir, Check, ExpOptions, ExpReport};
use crate::plot::{LinePlot, Series};

/// The protocols compared.
pub const PROTOCOLS: [&str; 4] = ["ndp", "homa", "dcqcn", "newreno"];
/// The incast degrees.
pub const DEGREES: [u32; 3] = [8, 32, 128];

/// The incast scenario for `module` with `n` senders.
pub fn scenario(module: &str, n: u32, seed: u64) -> Scenario {
    let mut s = Scenario::new(module);
    s.name = format!("incast-{module}-{n}");
    s.seed = seed;
    s.duration = 500_000_000;
    s.trace_interval = Some(1_000_000);
    s.tonic.rtt = Some(10_000);
    s.tonic.init_rtx_timer = 1_000_000;
    s.tonic.active_flow_cnt = 1;
    s.flows.senders = n;
    s.flows.bytes = Some(64 * 1024);
    s.flows.segment_size = 1000;
    s.link.rate = 10_000_000_000;
    s.link.buffer = 2_000_000;
    s.link.priorities = 8;
    match module {
        "ndp" => {
            s.module.init_credit = Some(12_000);
            s.tonic.ring_depth = 1;
            s.link.trim = true;
        }
        "homa" => {
            s.module.init_credit = Some(12_000);
            s.module.homa_unsched_prio = Some(7);
            s.tonic.ring_depth = 1;
        }
        "dcqcn" => {
            s.module.min_rate = Some(10_000_000);
            s.link.ecn_threshold = Some(5_000);
            s.link.ecn_threshold_max = Some(200_000);
            s.link.ecn_prob_max = 0.01;
        }
        _ => {}
    }
    s
}

/// The `q`-quantile (nearest rank) of `v`.
fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[k - 1]
}

struct Row {
    module: &'static str,
    n: u32,
    p50: f64,
    p99: f64,
    complete: bool,
    timeouts: u64,
    rtx: u64,
    drops: u64,
    trims: u64,
}

fn row(module: &'static str, n: u32, r: &TestbenchReport) -> Row {
    let mct: Vec<f64> = r
        .flows
        .iter()
        .map(|f| f.fct_ns().map_or(f64::INFINITY, |t| t as f64 / 1e3))
        .collect();
    Row {
        module,
        n,
        p50: quantile(&mct, 0.5),
        p99: quantile(&mct, 0.99),
        complete: r.all_complete(),
        timeouts: r.timeouts(),
        rtx: r.retransmissions(),
        drops: r.link.dropped,
        trims: r.link.trimmed,
    }
}

/// `incast`.
pub fn incast(o: &ExpOptions) -> Result<ExpReport, String> {
    ensure_dir(&o.out)?;
    let t0 = std::time::Instant::now();
    let mut rows = Vec::new();
    let mut segs = 0;
    let mut events = 0;
    for m in PROTOCOLS {
        for n in DEGREES {
            let s = scenario(m, n, o.seed);
            let r = run_scenario(&s).map_err(|e| format!("{}: {e}", s.name))?;
            segs += segments(&r);
            events += r.events;
            rows.push(row(m, n, &r));
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let mut files = Vec::new();
    let mut csv = String::from(
        "protocol,senders,p50_mct_us,p99_mct_us,complete,timeouts,retransmissions,drops,trimmed\n",
    );
    for r in &rows {
        let _ = writeln!(
            csv,
            "{},{},{:.2},{:.2},{},{},{},{},{}",
            r.module, r.n, r.p50, r.p99, r.complete, r.timeouts, r.rtx, r.drops, r.trims
        );
    }
    put(&mut files, o, "mct.csv", &csv)?;
    for (q, name) in [("p50", "mct-p50.svg"), ("p99", "mct-p99.svg")] {
        let series = PROTOCOLS
            .iter()
            .map(|m| {
                Series::new(
                    *m,
                    rows.iter()
                        .filter(|r| r.module == *m)
                        .map(|r| (r.n as f64, if q == "p50" { r.p50 } else { r.p99 }))
                        .collect(),
                )
                .with_markers()
            })
            .collect();
        plot(
            &mut files,
            o,
            name,
            &LinePlot {
                title: format!("N-to-1 incast of 64 KB messages, 10 Gb/s: {q} completion time"),
                x_label: "senders N".into(),
                y_label: format!("{q} message completion time (µs)"),
                series,
                log_x: true,
                y_from_zero: true,
            },
        )?;
    }
    let get = |m: &str, n: u32| rows.iter().find(|r| r.module == m && r.n == n).unwrap();
    let clean = |m: &str| {
        rows.iter()
            .filter(|r| r.module == m)
            .all(|r| r.complete && r.timeouts == 0)
    };
    let (h, nd) = (get("homa", 128), get("ndp", 128));
    let checks = vec![
        Check {
            what: format!(
                "NDP completes every message with no timeouts at N = {:?} (timeouts {:?})",
                DEGREES,
                rows.iter()
                    .filter(|r| r.module == "ndp")
                    .map(|r| r.timeouts)
                    .collect::<Vec<_>>()
            ),
            ok: clean("ndp"),
        },
        Check {
            what: format!(
                "Homa completes every message with no timeouts at N = {:?} (timeouts {:?})",
                DEGREES,
                rows.iter()
                    .filter(|r| r.module == "homa")
                    .map(|r| r.timeouts)
                    .collect::<Vec<_>>()
            ),
            ok: clean("homa"),
        },
        Check {
            what: format!(
                "Homa's p99 completion time at N = 128 ({:.1} µs) is no worse than NDP's ({:.1} µs)",
                h.p99, nd.p99
            ),
            ok: h.p99 <= nd.p99,
        },
    ];
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# incast (nanoTransport §5.2, Fig. 2, with DCQCN and NewReno)\n"
    );
    let _ = writeln!(md, "N senders each send one 64 KB message (66 segments of 1,000 B) to one receiver at time 0. One switch, 10 Gb/s links, RTT 10 µs, 2 MB shared buffer with 8 priority queues; trimming for NDP, RED/ECN for DCQCN; base RTO 1 ms. Seed {}. The ideal completion of the last message is N · 64 KB at 10 Gb/s (N = 128: {:.0} µs).\n", o.seed, 128.0 * 65536.0 * 8.0 / 10e9 * 1e6);
    let _ = writeln!(md, "| protocol | N | p50 MCT (µs) | p99 MCT (µs) | complete | timeouts | retransmissions | drops | trimmed |\n|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
            r.module, r.n, r.p50, r.p99, r.complete, r.timeouts, r.rtx, r.drops, r.trims
        );
    }
    let _ = writeln!(md, "\nnanoTransport (large buffer): Homa's SRPT grants give lower completion times than NDP's round-robin pulls, which keep the bottleneck queue high.\n");
    for c in &checks {
        let _ = writeln!(md, "- [{}] {}", if c.ok { "x" } else { " " }, c.what);
    }
    let _ = writeln!(
        md,
        "\nRun time {wall:.1} s wall, {segs} data segments. Files: mct.csv, mct-p50.svg, mct-p99.svg."
    );
    put(&mut files, o, "report.md", &md)?;
    Ok(ExpReport {
        name: "incast".into(),
        files,
        checks,
        markdown: md,
        data_segments: segs,
        events,
    })
}
