//! `nicemu experiment cc-zoo`: every built-in Tonic module (Tonic §6.1.1's protocols, plus
//! DCTCP and Homa) on the same dumbbell with the same seeded loss and ECN marking.
//!
//! Each module starts from its example scenario in `configs/tonic/` (its parameters, its
//! receiver: trimming for NDP, eight priority queues for Homa, CNPs for DCQCN) and then
//! gets the common network: four senders with one flow each, a 10 Gb/s core link (500 KB
//! buffer, ECN step marking above 30 KB, random loss 5·10⁻⁴) and a 10 Gb/s edge port to
//! the receiver, RTT 10 µs. Plots: goodput over time and bottleneck queue over time, one
//! line per module; report.md has the table.

use std::fmt::Write as _;

use dataplane::tonic::testbench::scenario::Topology;
use dataplane::tonic::testbench::{parse_scenario, run_scenario, Scenario, TestbenchReport};
use dataplane::tonic::Nanos;

use super::util::{check, checks_md, envelope, svg, write};
use super::{ensure_dir, ExpOptions, ExpReport};
use crate::plot::{LinePlot, Series};

/// The modules and their example scenarios.
pub const MODULES: &[(&str, &str)] = &[
    ("reno", include_str!("../../../configs/tonic/reno.toml")),
    (
        "newreno",
        include_str!("../../../configs/tonic/newreno.toml"),
    ),
    ("sack", include_str!("../../../configs/tonic/sack.toml")),
    ("dctcp", include_str!("../../../configs/tonic/dctcp.toml")),
    ("dcqcn", include_str!("../../../configs/tonic/dcqcn.toml")),
    ("irn", include_str!("../../../configs/tonic/irn.toml")),
    ("ndp", include_str!("../../../configs/tonic/ndp.toml")),
    (
        "homa",
        include_str!("../../../configs/tonic/homa-incast.toml"),
    ),
];

/// Module `name`'s scenario on the common dumbbell.
pub fn scenario(name: &str, text: &str, quick: bool, seed: u64) -> Result<Scenario, String> {
    let mut s =
        parse_scenario(text, &format!("configs/tonic/{name}.toml")).map_err(|e| e.to_string())?;
    s.name = format!("cc-zoo-{name}");
    s.seed = seed;
    s.duration = if quick { 20_000_000 } else { 200_000_000 };
    s.trace_interval = Some(if quick { 20_000 } else { 50_000 });
    s.trace_segments = false;
    s.tonic.rtt = Some(10_000);
    s.tonic.loss_prob = 0.0;
    s.tonic.active_flow_cnt = 1;
    s.flows.senders = 4;
    s.flows.bytes = None;
    s.flows.segments = Some(if quick { 600 } else { 10_000 });
    s.flows.segment_size = 1000;
    s.flows.start_interval = 0;
    s.network.topology = Topology::Dumbbell;
    s.network.edge_rate = Some(10_000_000_000);
    s.network.edge_buffer = Some(500_000);
    s.link.rate = 10_000_000_000;
    s.link.host_rate = Some(10_000_000_000);
    s.link.delay = None;
    s.link.buffer = 500_000;
    s.link.loss_prob = 0.0005;
    s.link.ecn_threshold = Some(30_000);
    s.link.ecn_threshold_max = None;
    s.drops.clear();
    Ok(s)
}

/// Goodput (Gb/s) between samples, from the receivers' cumulative acks (a completed flow
/// keeps its last value).
fn goodput(r: &TestbenchReport) -> Vec<(f64, f64)> {
    let mut last = vec![0u64; r.flows.len()];
    let mut out = Vec::new();
    let mut prev: Option<(Nanos, u64)> = None;
    let mut i = 0;
    while i < r.trace.len() {
        let t = r.trace[i].time_ns;
        while i < r.trace.len() && r.trace[i].time_ns == t {
            let row = &r.trace[i];
            last[row.flow as usize] = last[row.flow as usize].max(row.rcv_cum);
            i += 1;
        }
        let total: u64 = last.iter().sum();
        if let Some((t0, c0)) = prev {
            if t > t0 {
                let bits = (total - c0) as f64 * r.segment_size as f64 * 8.0;
                out.push((t as f64 / 1e6, bits / (t - t0) as f64));
            }
        }
        prev = Some((t, total));
    }
    out
}

/// Queued bytes at the bottleneck ports over time (KB).
fn queue(r: &TestbenchReport) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut last_t = None;
    for row in &r.trace {
        if last_t != Some(row.time_ns) {
            out.push((row.time_ns as f64 / 1e6, row.queue_bytes as f64 / 1e3));
            last_t = Some(row.time_ns);
        }
    }
    out
}

/// `nicemu experiment cc-zoo`.
pub fn zoo(o: &ExpOptions) -> Result<ExpReport, String> {
    ensure_dir(&o.out)?;
    let mut files = Vec::new();
    let mut gp = Vec::new();
    let mut qs = Vec::new();
    let mut checks = Vec::new();
    let (mut segs, mut events) = (0, 0);
    let mut table = String::from(
        "| module | receiver | flows done | last FCT (ms) | goodput (Gb/s) | rtx | timeouts | drops | trimmed | ECN marks | max queue (KB) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut csv = String::from("module,time_ms,goodput_gbps,queue_kb\n");
    for &(name, text) in MODULES {
        let s = scenario(name, text, o.quick, o.seed)?;
        let r = run_scenario(&s).map_err(|e| format!("{name}: {e}"))?;
        let delivered: u64 = r.flows.iter().map(|f| f.delivered).sum();
        let done = r.flows.iter().filter(|f| f.complete()).count();
        let every = r.flows.iter().all(|f| f.delivered > 0);
        let fct = r.flows.iter().filter_map(|f| f.fct_ns()).max();
        let g = delivered as f64 * r.segment_size as f64 * 8.0 / r.end_ns.max(1) as f64;
        segs += r.flows.iter().map(|f| f.transmitted).sum::<u64>();
        events += r.events;
        let _ = writeln!(
            table,
            "| {name} | {:?} | {done}/{} | {} | {g:.2} | {} | {} | {} | {} | {} | {:.0} |",
            r.receiver,
            r.flows.len(),
            fct.map_or("-".into(), |t| format!("{:.3}", t as f64 / 1e6)),
            r.flows.iter().map(|f| f.retransmissions).sum::<u64>(),
            r.flows.iter().map(|f| f.timeouts).sum::<u64>(),
            r.link.dropped + r.link.lost,
            r.link.trimmed,
            r.link.ecn_marked,
            r.link.max_queue_bytes as f64 / 1e3
        );
        checks.push(check(
            format!(
                "{name}: every flow delivers data ({done}/{} complete, {delivered} segments)",
                r.flows.len()
            ),
            every,
        ));
        let gpv = goodput(&r);
        let qv = queue(&r);
        for (a, b) in gpv.iter().zip(qv.iter().skip(1)) {
            let _ = writeln!(csv, "{name},{:.3},{:.4},{:.3}", a.0, a.1, b.1);
        }
        gp.push(Series::new(name, envelope(&gpv, 1500)));
        qs.push(Series::new(name, envelope(&qv, 1500)));
    }
    write(&o.out, "zoo.csv", &csv, &mut files)?;
    svg(
        &o.out,
        "goodput.svg",
        &LinePlot {
            title: "Every Tonic module on one dumbbell (loss 5e-4, ECN K = 30 KB): goodput".into(),
            x_label: "time (ms)".into(),
            y_label: "goodput at the receiver (Gb/s)".into(),
            series: gp,
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    svg(
        &o.out,
        "queue.svg",
        &LinePlot {
            title: "Every Tonic module on one dumbbell: bottleneck queue".into(),
            x_label: "time (ms)".into(),
            y_label: "queued data (KB)".into(),
            series: qs,
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    let mut m = format!(
        "# cc-zoo\n\nEvery built-in Tonic module from its `configs/tonic/` example (module \
         parameters, receiver), on one dumbbell: 4 senders × 1 flow of {} × 1,000-byte \
         segments, 10 Gb/s core link (500 KB buffer, ECN step marking above 30 KB, random \
         loss 5·10⁻⁴), 10 Gb/s edge port, RTT 10 µs. Seed {}{}.\n\n",
        if o.quick { 600 } else { 10_000 },
        o.seed,
        if o.quick { " (--quick)" } else { "" }
    );
    m.push_str(&table);
    m.push_str("\nPlots: `goodput.svg`, `queue.svg`. Data: `zoo.csv`.\n\n");
    m.push_str(&checks_md(&checks));
    write(&o.out, "report.md", &m, &mut files)?;
    Ok(ExpReport {
        name: "cc-zoo".into(),
        files,
        checks,
        markdown: m,
        data_segments: segs,
        events,
    })
}
