//! Tonic §6.2.1 (Figure 3c): many NewReno flows on one bottleneck, the Tonic module against
//! the host stack's TCB (see [`super::newreno`] for the network and the two sides).

use std::fmt::Write as _;

use dataplane::tonic::testbench::run_scenario;

use super::newreno::{tcb_params, tonic_scenario, RATE, SEG};
use super::tcbnet;
use super::util::{cdf, check, checks_md, quantile, svg, write};
use super::{ensure_dir, ExpOptions, ExpReport};
use crate::plot::{LinePlot, Series};

/// `nicemu experiment tonic-newreno-200`.
pub fn two_hundred(o: &ExpOptions) -> Result<ExpReport, String> {
    let (per_sender, duration) = if o.quick {
        (10, 20_000_000)
    } else {
        (100, 5_000_000_000)
    };
    // Long enough that no flow finishes: at most 1/4 of the link for the whole run.
    let segments = (RATE / 8 / SEG as u64 * duration / 1_000_000_000 / 4).max(1000);
    let mut s = tonic_scenario("tonic-newreno-200", 2, per_sender, segments, duration);
    s.seed = o.seed;
    s.trace_interval = Some(duration);
    let t = run_scenario(&s).map_err(|e| e.to_string())?;
    let h = tcbnet::run(&tcb_params(&s, 0, duration))?;
    let secs = duration as f64 / 1e9;
    let tonic_mbps: Vec<f64> = t
        .flows
        .iter()
        .map(|f| f.delivered as f64 * SEG as f64 * 8.0 / secs / 1e6)
        .collect();
    let tcb_mbps: Vec<f64> = h
        .delivered
        .iter()
        .map(|&b| b as f64 * 8.0 / secs / 1e6)
        .collect();
    ensure_dir(&o.out)?;
    let mut files = Vec::new();
    let mut c = String::from("impl,flow,throughput_mbps,retransmissions,timeouts\n");
    for (g, f) in t.flows.iter().enumerate() {
        let _ = writeln!(
            c,
            "tonic,{g},{:.3},{},{}",
            tonic_mbps[g], f.retransmissions, f.timeouts
        );
    }
    for (g, mbps) in tcb_mbps.iter().enumerate() {
        let _ = writeln!(
            c,
            "tcb,{g},{mbps:.3},{},{}",
            h.retransmissions[g], h.timeouts[g]
        );
    }
    write(&o.out, "throughput.csv", &c, &mut files)?;
    svg(
        &o.out,
        "throughput_cdf.svg",
        &LinePlot {
            title: format!(
                "NewReno, {} flows on one 10 Gb/s bottleneck: per-flow throughput (Tonic Fig. 3c)",
                2 * per_sender
            ),
            x_label: "average throughput (Mb/s)".into(),
            y_label: "CDF".into(),
            series: vec![
                Series::new("Tonic newreno module", cdf(&tonic_mbps)),
                Series::new("host stack TCB (RFC 6582)", cdf(&tcb_mbps)),
            ],
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let fair = RATE as f64 / 1e6 / (2 * per_sender) as f64;
    let med = (quantile(&tonic_mbps, 0.5), quantile(&tcb_mbps, 0.5));
    let starved = |v: &[f64]| v.iter().filter(|&&x| x < 0.1 * fair).count();
    let (sa, sb) = (starved(&tonic_mbps), starved(&tcb_mbps));
    let checks = vec![
        check(
            format!(
                "as many flows starve (below 10% of the fair share): Tonic {sa}, TCB {sb} (within 10% of the flows)"
            ),
            sa.abs_diff(sb) as f64 <= 0.1 * (2 * per_sender) as f64,
        ),
        check(
            format!(
                "both fill the bottleneck: Tonic {:.0} Mb/s, TCB {:.0} Mb/s in all (≥ 80% of 10,000)",
                sum(&tonic_mbps),
                sum(&tcb_mbps)
            ),
            sum(&tonic_mbps) >= 8000.0 && sum(&tcb_mbps) >= 8000.0,
        ),
        check(
            format!(
                "medians close: Tonic {:.1} Mb/s, TCB {:.1} Mb/s (fair share {fair:.1}; within 50% of it)",
                med.0, med.1
            ),
            (med.0 - med.1).abs() <= 0.5 * fair,
        ),
    ];
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# tonic-newreno-200 (Tonic §6.2.1, Figure 3c)\n\n\
         Two senders with {per_sender} NewReno flows each into one receiver for {:.3} s over \
         one 10 Gb/s bottleneck (5.5 MB buffer, RTT 10 µs, 200 ms minimum RTO, delayed \
         ACKs). Tonic: the `newreno` module, per-packet round robin across each sender's \
         flows (§3.1). TCB: the host stack's NewReno, each host's NIC sending in the order \
         the connections emitted (no round robin). Seed {}.\n\n\
         | | Tonic | TCB |\n|---|---|---|\n\
         | total (Mb/s) | {:.0} | {:.0} |\n\
         | p10 / median / p90 per flow (Mb/s) | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} / {:.1} |\n\
         | retransmissions | {} | {} |\n\
         | timeouts | {} | {} |\n\n\
         Plot: `throughput_cdf.svg`. Data: `throughput.csv`.\n\n\
         Known artefact of the model: both hosts send at exactly the bottleneck rate and \
         the simulation has no jitter, so once the drop-tail buffer is full the same \
         host's packets take every slot a departure frees (the drop-tail phase effect). In \
         the full run one sender's 100 flows share the link and the other's are locked out \
         behind exponentially backed-off 200 ms timeouts, for both implementations alike: \
         the CDF is bimodal where the paper's is not. Reproducing Fig. 3c's spread needs \
         per-host jitter or rate variation in the testbench.\n",
        secs,
        o.seed,
        sum(&tonic_mbps),
        sum(&tcb_mbps),
        quantile(&tonic_mbps, 0.1),
        med.0,
        quantile(&tonic_mbps, 0.9),
        quantile(&tcb_mbps, 0.1),
        med.1,
        quantile(&tcb_mbps, 0.9),
        t.flows.iter().map(|f| f.retransmissions).sum::<u64>(),
        h.retransmissions.iter().sum::<u64>(),
        t.flows.iter().map(|f| f.timeouts).sum::<u64>(),
        h.timeouts.iter().sum::<u64>(),
    );
    m.push_str(&checks_md(&checks));
    write(&o.out, "report.md", &m, &mut files)?;
    Ok(ExpReport {
        name: "tonic-newreno-200".into(),
        files,
        checks,
        markdown: m,
        data_segments: t.flows.iter().map(|f| f.transmitted).sum::<u64>() + h.data_segments,
        events: t.events + h.events,
    })
}
