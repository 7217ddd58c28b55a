//! Tonic §6.2.1 (Figure 3): TCP NewReno as a Tonic module against a hard-coded NewReno.
//!
//! The paper compares its Tonic NewReno sender (RFC 6582, App. D) with ns-3's native stack:
//! hosts on 10 Gb/s links to one switch, RTT 10 µs, 5.5 MB buffer, 200 ms minimum RTO,
//! 1,000-byte segments, delayed ACKs. Here the hard-coded side is the host stack's own TCB
//! ([`hoststack::tcp::tcb::Tcb`], a separate NewReno implementation), run on the same
//! network model by [`super::tcbnet`]; the Tonic side is the `newreno` module in the
//! testbench (`dataplane::tonic::testbench`).
//!
//! - `tonic-newreno-vs-reference` (Fig. 3a/b): one flow, seeded random drops at the
//!   receiver's NIC. Both runs get the *same* drops: the drop sequence is drawn once (each
//!   segment's first arrival dropped with probability `p`) and given to both as scripted
//!   drops. Plots: cwnd over time, transmitted sequence numbers with retransmissions
//!   marked. Report: mean absolute cwnd difference, every halving of both side by side.
//! - `tonic-newreno-200` (Fig. 3c): two senders with 100 flows each into one receiver for
//!   5 s; CDF of per-flow average throughput for both ([`super::newreno_many`]).

use std::fmt::Write as _;
use std::path::Path;

use dataplane::tonic::testbench::link::LinkParams;
use dataplane::tonic::testbench::rng::SplitMix64;
use dataplane::tonic::testbench::scenario::DropRule;
use dataplane::tonic::testbench::{run_scenario, Scenario, TestbenchReport, TxRecord};
use dataplane::tonic::Nanos;

use super::tcbnet::{self, TcbNetParams, TcbNetRun};
use super::util::{check, checks_md, envelope, svg, thin, write};
use super::{ensure_dir, ExpOptions, ExpReport};
use crate::plot::{LinePlot, Series};

/// §6.2.1's network: 10 Gb/s everywhere, RTT 10 µs, 5.5 MB buffer, 200 ms minimum RTO,
/// 1,000-byte segments, 64 header bytes per packet on the wire.
pub(super) const RATE: u64 = 10_000_000_000;
const RTT: Nanos = 10_000;
const BUFFER: u64 = 5_500_000;
const MIN_RTO: Nanos = 200_000_000;
pub(super) const SEG: u32 = 1000;
pub(super) const HEADER: u32 = 64;
/// Delayed ACKs: an ACK every second segment, or after this long (both receivers).
const DELACK: Nanos = 40_000;
/// Tonic's window bitmap (Tab. 4's largest) and, to match it, the TCP receiver's window.
const WINDOW: u32 = 256;

/// A window halving: when, the window before and after (segments), and the segment whose
/// fast retransmission (or timeout) it came with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Halving {
    /// Time of the first sample showing the smaller window.
    pub time_ns: Nanos,
    /// Window before, segments.
    pub before: f64,
    /// Window after, segments.
    pub after: f64,
    /// The first segment retransmitted from one sample before the halving on.
    pub segment: Option<u64>,
}

/// The halvings of a cwnd series: a sample at most 0.7 of the one before (from at least 4
/// segments), each tied to the next retransmission in `tx`.
pub fn halvings(series: &[(Nanos, f64)], tx: &[TxRecord], sample: Nanos) -> Vec<Halving> {
    let rtx: Vec<&TxRecord> = tx.iter().filter(|r| r.rtx).collect();
    series
        .windows(2)
        .filter(|w| w[0].1 >= 4.0 && w[1].1 <= 0.7 * w[0].1)
        .map(|w| {
            let from = w[1].0.saturating_sub(sample);
            let i = rtx.partition_point(|r| r.time_ns < from);
            Halving {
                time_ns: w[1].0,
                before: w[0].1,
                after: w[1].1,
                segment: rtx.get(i).map(|r| r.seg),
            }
        })
        .collect()
}

/// The switch port of scenario `s` for the TCB side (drop-tail, no ECN, no loss).
fn link_params(s: &Scenario) -> LinkParams {
    LinkParams {
        rate_bps: RATE,
        buffer: s.link.buffer,
        header_buffer: s.link.buffer,
        header_bytes: HEADER,
        trim: false,
        ecn_k: None,
        ecn_kmax: None,
        ecn_pmax: 1.0,
        ecn_on_dequeue: false,
        loss_prob: 0.0,
        priorities: 1,
    }
}

/// The Tonic side's scenario: the `newreno` module on §6.2.1's network.
pub(super) fn tonic_scenario(
    name: &str,
    senders: u32,
    per_sender: u32,
    segments: u64,
    duration: Nanos,
) -> Scenario {
    let mut s = Scenario::new("newreno");
    s.name = name.into();
    s.duration = duration;
    s.tonic.rtt = Some(RTT);
    s.tonic.init_rtx_timer = MIN_RTO;
    s.tonic.init_wnd_size = 10;
    s.tonic.window = WINDOW;
    s.tonic.active_flow_cnt = per_sender;
    s.tonic.cycle = 10_000;
    s.flows.senders = senders;
    s.flows.segments = Some(segments);
    s.flows.segment_size = SEG;
    s.link.rate = RATE;
    s.link.host_rate = Some(RATE);
    s.link.buffer = BUFFER;
    s.link.header_bytes = HEADER;
    s.receiver.ack_every = 2;
    s.receiver.delayed_ack_timeout = DELACK;
    s
}

/// The TCB side's parameters for the same network (buffer, minimum RTO, variation and
/// seed from `s`).
pub(super) fn tcb_params(s: &Scenario, sample_flows: u32, sample_every: Nanos) -> TcbNetParams {
    TcbNetParams {
        senders: s.flows.senders,
        flows_per_sender: s.tonic.active_flow_cnt,
        flow_bytes: s.flow_bytes(),
        segment_size: SEG,
        host_rate: RATE,
        link: link_params(s),
        forward_delay: s.forward_delay(),
        reverse_delay: s.reverse_delay(),
        loss_prob: 0.0,
        drops: s.drops.clone(),
        seed: s.seed,
        duration: s.duration,
        sample_every,
        sample_flows,
        trace_segments: sample_flows > 0,
        delayed_ack: DELACK,
        recv_buffer: (WINDOW * SEG) as usize,
        rto_min: s.tonic.init_rtx_timer,
        variation: s.variation(),
    }
}

/// Drops of the seeded sequence are at least this many segments apart: more than the
/// largest window (NewReno treats the drops of one window as one congestion event, and
/// where "one window" ends depends on each sender's exact flight, so closer drops would
/// test that boundary rather than the loss reaction).
pub const DROP_GAP: u64 = WINDOW as u64 + 44;

/// The seeded drop sequence: each segment's first arrival at the receiver's NIC is dropped
/// with probability `p`, at most one in [`DROP_GAP`] segments (segment 0 never, so that
/// the flow starts).
pub fn drop_sequence(seed: u64, segments: u64, p: f64) -> Vec<DropRule> {
    let mut rng = SplitMix64::new(seed ^ 0x6e65_7772_656e_6f21);
    let mut out: Vec<DropRule> = Vec::new();
    for segment in 1..segments {
        let free = out.last().is_none_or(|d| segment >= d.segment + DROP_GAP);
        if rng.chance(p) && free {
            out.push(DropRule {
                flow: 0,
                segment,
                count: 1,
            });
        }
    }
    out
}

/// What the single-flow comparison measured (the tests assert on it).
#[derive(Clone, Debug)]
pub struct SingleFlow {
    /// Tonic's cwnd samples (time, segments).
    pub tonic: Vec<(Nanos, f64)>,
    /// The TCB's cwnd samples.
    pub tcb: Vec<(Nanos, f64)>,
    /// Tonic's halvings.
    pub tonic_halvings: Vec<Halving>,
    /// The TCB's halvings.
    pub tcb_halvings: Vec<Halving>,
    /// Mean |cwnd_tonic − cwnd_tcb| over the samples both have, segments.
    pub mean_abs_diff: f64,
    /// Mean cwnd of both, segments.
    pub mean_cwnd: f64,
    /// The drops given to both.
    pub drops: Vec<DropRule>,
    /// Both runs' completion times.
    pub fct_ns: (Option<Nanos>, Option<Nanos>),
    /// The runs.
    pub tonic_run: TestbenchReport,
    /// The TCB run.
    pub tcb_run: TcbNetRun,
}

/// Runs the single-flow comparison: `segments` segments, drop probability `p`, cwnd
/// sampled every `sample` ns.
pub fn single_flow(seed: u64, segments: u64, p: f64, sample: Nanos) -> Result<SingleFlow, String> {
    let drops = drop_sequence(seed, segments, p);
    let mut s = tonic_scenario("tonic-newreno-vs-reference", 1, 1, segments, 10_000_000_000);
    s.seed = seed;
    s.trace_interval = Some(sample);
    s.trace_segments = true;
    s.drops = drops.clone();
    let tonic_run = run_scenario(&s).map_err(|e| e.to_string())?;
    let tcb_run = tcbnet::run(&tcb_params(&s, 1, sample))?;
    let tonic: Vec<(Nanos, f64)> = tonic_run
        .trace
        .iter()
        .filter(|r| r.flow == 0)
        .map(|r| (r.time_ns, r.cwnd as f64))
        .collect();
    let tcb: Vec<(Nanos, f64)> = tcb_run
        .samples
        .iter()
        .map(|r| (r.time_ns, r.cwnd))
        .collect();
    // Samples at the same instants (both sample every `sample` from 0).
    let mut diffs = Vec::new();
    let mut sum = 0.0;
    let (mut i, mut j) = (0, 0);
    while i < tonic.len() && j < tcb.len() {
        match tonic[i].0.cmp(&tcb[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                diffs.push((tonic[i].1 - tcb[j].1).abs());
                sum += tonic[i].1 + tcb[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    let n = diffs.len().max(1) as f64;
    let mean_abs_diff = diffs.iter().sum::<f64>() / n;
    let mean_cwnd = sum / (2.0 * n);
    let tonic_halvings = halvings(&tonic, &tonic_run.tx_log, sample);
    let tcb_halvings = halvings(&tcb, &tcb_run.tx_log, sample);
    let fct_ns = (tonic_run.flows[0].fct_ns(), tcb_run.completed[0]);
    Ok(SingleFlow {
        tonic,
        tcb,
        tonic_halvings,
        tcb_halvings,
        mean_abs_diff,
        mean_cwnd,
        drops,
        fct_ns,
        tonic_run,
        tcb_run,
    })
}

/// The tracking bound of the single-flow check: mean |Δcwnd| at most this fraction of the
/// mean cwnd. Loose on purpose: between losses App. D's NewReno grows half as fast as the
/// TCB's with delayed ACKs (see the report's note), so the windows drift apart between
/// halvings and meet again at them ([`AFTER_BOUND`]).
pub const TRACK_BOUND: f64 = 0.75;

/// After each halving both windows are half the same flight: at most this many segments
/// apart.
pub const AFTER_BOUND: f64 = 4.0;

impl SingleFlow {
    /// The segments whose fast retransmission came with a halving, in order.
    pub fn halving_segments(h: &[Halving]) -> Vec<Option<u64>> {
        h.iter().map(|h| h.segment).collect()
    }

    /// Both halved at the same drops (the same retransmitted segments, in the same order).
    pub fn same_halvings(&self) -> bool {
        !self.tonic_halvings.is_empty()
            && Self::halving_segments(&self.tonic_halvings)
                == Self::halving_segments(&self.tcb_halvings)
    }

    /// Mean |Δcwnd| within [`TRACK_BOUND`] of the mean cwnd.
    pub fn tracks(&self) -> bool {
        self.mean_abs_diff <= TRACK_BOUND * self.mean_cwnd
    }

    /// How much more the TCB's window grew than Tonic's between consecutive halvings (sum
    /// over the intervals of the growth from one halving to the next, TCB over Tonic).
    pub fn growth_ratio(&self) -> f64 {
        let growth = |h: &[Halving]| -> f64 {
            h.windows(2)
                .map(|w| (w[1].before - w[0].after).max(0.0))
                .sum()
        };
        growth(&self.tcb_halvings) / growth(&self.tonic_halvings).max(1e-9)
    }

    /// The largest difference of the windows right after the same halving, segments.
    pub fn max_after_diff(&self) -> f64 {
        self.tonic_halvings
            .iter()
            .zip(&self.tcb_halvings)
            .map(|(a, b)| (a.after - b.after).abs())
            .fold(0.0, f64::max)
    }
}

fn ms(t: Nanos) -> f64 {
    t as f64 / 1e6
}

/// `nicemu experiment tonic-newreno-vs-reference`.
pub fn vs_reference(o: &ExpOptions) -> Result<ExpReport, String> {
    let (segments, p, sample) = if o.quick {
        (6_000, 1.0 / 700.0, 2_000)
    } else {
        (150_000, 1.0 / 2_500.0, 2_000)
    };
    let r = single_flow(o.seed, segments, p, sample)?;
    ensure_dir(&o.out)?;
    let mut files = Vec::new();
    write_single_csv(&o.out, &r, &mut files)?;
    let pts = |v: &[(Nanos, f64)]| -> Vec<(f64, f64)> {
        envelope(
            &v.iter().map(|&(t, c)| (ms(t), c)).collect::<Vec<_>>(),
            3000,
        )
    };
    svg(
        &o.out,
        "cwnd.svg",
        &LinePlot {
            title: "NewReno, one flow, same drops: congestion window (Tonic Fig. 3a)".into(),
            x_label: "time (ms)".into(),
            y_label: "cwnd (segments)".into(),
            series: vec![
                Series::new("Tonic newreno module", pts(&r.tonic)),
                Series::new("host stack TCB (RFC 6582)", pts(&r.tcb)),
            ],
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    let seq = |tx: &[TxRecord], rtx: bool| -> Vec<(f64, f64)> {
        tx.iter()
            .filter(|t| t.rtx == rtx)
            .map(|t| (ms(t.time_ns), t.seg as f64 * SEG as f64 / 1e6))
            .collect()
    };
    svg(
        &o.out,
        "seq.svg",
        &LinePlot {
            title: "NewReno, one flow: transmitted sequence numbers (Tonic Fig. 3b)".into(),
            x_label: "time (ms)".into(),
            y_label: "sequence number (MB)".into(),
            series: vec![
                Series::new("Tonic: sent", thin(&seq(&r.tonic_run.tx_log, false), 2000)),
                Series::new("Tonic: retransmitted", seq(&r.tonic_run.tx_log, true)).with_markers(),
                Series::new("TCB: sent", thin(&seq(&r.tcb_run.tx_log, false), 2000)),
                Series::new("TCB: retransmitted", seq(&r.tcb_run.tx_log, true)).with_markers(),
            ],
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    let checks = vec![
        check(
            format!(
                "both halve at the same drops: Tonic {} halvings, TCB {}, retransmitted segments {}",
                r.tonic_halvings.len(),
                r.tcb_halvings.len(),
                if r.same_halvings() { "identical" } else { "differ" }
            ),
            r.same_halvings(),
        ),
        check(
            format!(
                "after each halving the windows are within {AFTER_BOUND} segments: largest difference {}",
                r.max_after_diff()
            ),
            r.same_halvings() && r.max_after_diff() <= AFTER_BOUND,
        ),
        check(
            format!(
                "cwnd tracks: mean |Δcwnd| {:.2} segments ≤ {:.0}% of the mean cwnd {:.1} ({:.2})",
                r.mean_abs_diff,
                TRACK_BOUND * 100.0,
                r.mean_cwnd,
                TRACK_BOUND * r.mean_cwnd
            ),
            r.tracks(),
        ),
        check(
            format!(
                "both deliver the flow: Tonic {:?} ms, TCB {:?} ms",
                r.fct_ns.0.map(ms),
                r.fct_ns.1.map(ms)
            ),
            r.fct_ns.0.is_some() && r.fct_ns.1.is_some(),
        ),
    ];
    let markdown = single_md(o, segments, p, sample, &r, &checks);
    write(&o.out, "report.md", &markdown, &mut files)?;
    Ok(ExpReport {
        name: "tonic-newreno-vs-reference".into(),
        files,
        checks,
        markdown,
        data_segments: r.tonic_run.flows[0].transmitted + r.tcb_run.data_segments,
        events: r.tonic_run.events + r.tcb_run.events,
    })
}

fn write_single_csv(
    out: &Path,
    r: &SingleFlow,
    files: &mut Vec<std::path::PathBuf>,
) -> Result<(), String> {
    let mut c = String::from("impl,time_ns,cwnd_segments\n");
    for (name, v) in [("tonic", &r.tonic), ("tcb", &r.tcb)] {
        for (t, w) in v.iter() {
            let _ = writeln!(c, "{name},{t},{w}");
        }
    }
    write(out, "cwnd.csv", &c, files)?;
    let mut c = String::from("impl,time_ns,segment,rtx\n");
    for (name, v) in [("tonic", &r.tonic_run.tx_log), ("tcb", &r.tcb_run.tx_log)] {
        for t in v.iter() {
            let _ = writeln!(c, "{name},{},{},{}", t.time_ns, t.seg, t.rtx as u8);
        }
    }
    write(out, "seq.csv", &c, files)?;
    let mut c = String::from("segment\n");
    for d in &r.drops {
        let _ = writeln!(c, "{}", d.segment);
    }
    write(out, "drops.csv", &c, files)
}

fn single_md(
    o: &ExpOptions,
    segments: u64,
    p: f64,
    sample: Nanos,
    r: &SingleFlow,
    checks: &[super::Check],
) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# tonic-newreno-vs-reference (Tonic §6.2.1, Figure 3a/b)\n\n\
         One NewReno flow of {segments} × {SEG}-byte segments; hosts on 10 Gb/s links to one \
         switch, RTT 10 µs, 5.5 MB buffer, 200 ms minimum RTO, delayed ACKs (every second \
         segment, {} µs timeout), {WINDOW}-segment window (Tonic's bitmap; the TCP receiver \
         offers the same). Seed {}{}: {} drops at the receiver's NIC (each segment's first \
         arrival with p = {:.5}, drops at least {DROP_GAP} segments apart), the same for both. cwnd sampled every {} µs.\n\n\
         - **Tonic**: the `newreno` module (App. D) in the testbench; cwnd is the module's \
         `cwnd` user variable.\n\
         - **TCB**: the host stack's NewReno (`hoststack::tcp::tcb::Tcb`, RFC 6582, no SACK, \
         no timestamps, no tail-loss probes) on the same network model \
         (`apps/src/experiment/tcbnet.rs`); cwnd is the TCB's cwnd outside recovery and \
         ssthresh inside (without the RFC 6582 inflation).\n\n\
         Plots: `cwnd.svg` (Fig. 3a), `seq.svg` (Fig. 3b). Traces: `cwnd.csv`, `seq.csv`, \
         `drops.csv`.\n",
        DELACK / 1000,
        o.seed,
        if o.quick { " (--quick)" } else { "" },
        r.drops.len(),
        p,
        sample / 1000
    );
    let _ = writeln!(
        m,
        "## Tracking\n\n\
         | | Tonic | TCB |\n|---|---|---|\n\
         | flow completion (ms) | {} | {} |\n\
         | halvings | {} | {} |\n\
         | retransmissions | {} | {} |\n\
         | timeouts | {} | {} |\n\n\
         Mean |cwnd_Tonic − cwnd_TCB| = **{:.2} segments** over the run (mean cwnd {:.1}; \
         bound {:.0}% of it). Right after each halving the windows differ by at most \
         **{:.1} segments**; between halvings the TCB's window grows {:.2}× as much as \
         Tonic's (see the note below).\n",
        r.fct_ns.0.map_or("-".into(), |t| format!("{:.3}", ms(t))),
        r.fct_ns.1.map_or("-".into(), |t| format!("{:.3}", ms(t))),
        r.tonic_halvings.len(),
        r.tcb_halvings.len(),
        r.tonic_run.flows[0].retransmissions,
        r.tcb_run.retransmissions[0],
        r.tonic_run.flows[0].timeouts,
        r.tcb_run.timeouts[0],
        r.mean_abs_diff,
        r.mean_cwnd,
        TRACK_BOUND * 100.0,
        r.max_after_diff(),
        r.growth_ratio()
    );
    let _ = writeln!(
        m,
        "## Halvings, side by side\n\n\
         | # | segment (Tonic) | Tonic at (ms) | cwnd | segment (TCB) | TCB at (ms) | cwnd | Δt (µs) |\n\
         |---|---|---|---|---|---|---|---|"
    );
    let n = r.tonic_halvings.len().max(r.tcb_halvings.len());
    for k in 0..n {
        let a = r.tonic_halvings.get(k);
        let b = r.tcb_halvings.get(k);
        let cell = |h: Option<&Halving>| match h {
            Some(h) => (
                h.segment.map_or("-".into(), |s| s.to_string()),
                format!("{:.3}", ms(h.time_ns)),
                format!("{:.0} → {:.0}", h.before, h.after),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let (sa, ta, ca) = cell(a);
        let (sb, tb, cb) = cell(b);
        let dt = match (a, b) {
            (Some(a), Some(b)) => format!("{:+.1}", (b.time_ns as f64 - a.time_ns as f64) / 1e3),
            _ => "-".into(),
        };
        let _ = writeln!(
            m,
            "| {} | {sa} | {ta} | {ca} | {sb} | {tb} | {cb} | {dt} |",
            k + 1
        );
    }
    let _ = writeln!(
        m,
        "\nNote: in congestion avoidance App. D's NewReno adds one segment per `cwnd` *ACKs* \
         (`wnd_inc_cntr` counts ACKs, as ns-3's NewReno of the paper's time did), the host \
         stack one per `cwnd` *bytes* acknowledged (RFC 3465 byte counting). With delayed \
         ACKs (two segments per ACK) the TCB's window therefore grows about twice as fast \
         between losses; that, not the loss reaction, is most of the cwnd difference.\n"
    );
    m.push_str(&checks_md(checks));
    m
}
