//! Tonic §6.2.1 (Figure 3c): many NewReno flows on one bottleneck, the Tonic module against
//! the host stack's TCB (see [`super::newreno`] for the network and the two sides).
//!
//! `tonic-newreno-200`: two senders with 100 flows each into one receiver for 5 s over one
//! 10 Gb/s drop-tail bottleneck (5.5 MB buffer, RTT 10 µs, 200 ms minimum RTO, 1,000-byte
//! segments, delayed ACKs); the CDF of per-flow average throughput for both implementations.
//! The paper: the two CDFs "closely match", and the flows share the link.
//!
//! **The hosts' timing variation.** Both senders are identical and send at exactly the
//! bottleneck's rate. In a model without jitter, once the drop-tail buffer is full, every
//! freed slot goes to the same sender's packet and the other sender's 100 flows are locked
//! out behind backed-off timeouts, for both implementations (measured: median 0.4 and 0.1
//! Mb/s against a fair share of 47): Floyd and Jacobson's drop-tail *phase effect* ("On
//! traffic phase effects in packet-switched gateways", 1992), an artefact of the
//! deterministic model, not of either NewReno. Real hosts are not phase-locked, so both runs
//! use the testbench's variation model ([`dataplane::tonic::testbench::variation`]) with
//! what real hosts have, drop-tail kept (the paper's switch; no RED):
//!
//! - transmit jitter of up to one bottleneck service time of a full-size packet,
//!   [`TX_JITTER`] = 852 ns (1,064 bytes at 10 Gb/s): Floyd and Jacobson's remedy, and well
//!   inside the per-packet timing noise of a real host's DMA and PHY;
//! - NIC clocks within ±[`CLOCK_PPM`] = 100 ppm of nominal (IEEE 802.3's tolerance);
//! - flows starting at random times within the first [`START_WINDOW_DIV`]th of the run
//!   (100 ms of 5 s), as simulation studies start many flows to avoid synchronised slow
//!   starts; throughput is counted from each flow's own start.
//!
//! Both implementations get the same draws (seeded by `--seed`): the same NIC clocks, the
//! same start times, the same jitter sequence per host.
//!
//! The checks are the paper's claims: no flow of either implementation below a quarter of the
//! fair share ([`MIN_SHARE`]), and the two CDFs within 10% of each other at every decile
//! ([`DECILE_GAP`]).

use std::fmt::Write as _;

use dataplane::tonic::testbench::variation::Variation;
use dataplane::tonic::testbench::{run_scenario, Scenario, TestbenchReport};
use dataplane::tonic::Nanos;

use super::dcqcn::correlation;
use super::newreno::{tcb_params, tonic_scenario, HEADER, RATE, SEG};
use super::tcbnet::{self, TcbNetRun};
use super::util::{cdf, check, checks_md, quantile, svg, write};
use super::{ensure_dir, ExpOptions, ExpReport};
use crate::plot::{LinePlot, Series};

/// Transmit jitter of the runs: one bottleneck service time of a full-size packet
/// (`wire_time(SEG + HEADER, RATE)`: 1,064 bytes at 10 Gb/s), Floyd and Jacobson's remedy
/// for the phase effect.
pub const TX_JITTER: Nanos = 852;

/// NIC clock tolerance of the runs, ppm (IEEE 802.3: ±100 ppm).
pub const CLOCK_PPM: u32 = 100;

/// Flows start at random within the first `1 / START_WINDOW_DIV` of the run (2%).
pub const START_WINDOW_DIV: u64 = 50;

/// The check's floor: no flow below this fraction of the fair share.
pub const MIN_SHARE: f64 = 0.25;

/// The check's bound: at every decile the two CDFs' throughputs differ by at most this
/// fraction of the larger.
pub const DECILE_GAP: f64 = 0.10;

/// One many-flows comparison: `senders` × `per_sender` NewReno flows for `duration` over
/// §6.2.1's network with a `buffer`-byte drop-tail buffer and a `min_rto` minimum RTO, the
/// hosts' timing `variation` (its `seed` included) and `seed` for everything else.
#[derive(Clone, Copy, Debug)]
pub struct ManyFlows {
    /// Sender hosts.
    pub senders: u32,
    /// Flows per sender.
    pub per_sender: u32,
    /// Virtual time.
    pub duration: Nanos,
    /// The bottleneck's buffer, bytes.
    pub buffer: u64,
    /// Minimum (and initial) retransmission timeout of both implementations.
    pub min_rto: Nanos,
    /// The hosts' timing variation.
    pub variation: Variation,
    /// The scenario's seed.
    pub seed: u64,
}

impl ManyFlows {
    /// Fig. 3c: 2 × 100 flows for 5 s, 5.5 MB buffer, 200 ms minimum RTO, with
    /// [`ManyFlows::paper_variation`].
    pub fn paper(seed: u64) -> Self {
        ManyFlows {
            senders: 2,
            per_sender: 100,
            duration: 5_000_000_000,
            buffer: 5_500_000,
            min_rto: 200_000_000,
            variation: Variation::default(),
            seed,
        }
        .with_paper_variation()
    }

    /// Fig. 3c scaled down (`--quick` and the tests): 2 × 10 flows for 500 ms with a 500 KB
    /// buffer (20 windows of 256 segments fit the paper's 5.5 MB, so it would never fill)
    /// and a 5 ms minimum RTO (so that timeouts resolve within the run; at 200 ms a flow's
    /// few timeouts still decide its average, and seeds 2 and 3 leave a TCB flow below a
    /// quarter of the fair share).
    pub fn scaled(seed: u64) -> Self {
        ManyFlows {
            per_sender: 10,
            duration: 500_000_000,
            buffer: 500_000,
            min_rto: 5_000_000,
            ..Self::paper(seed)
        }
        .with_paper_variation()
    }

    /// With the runs' variation ([`TX_JITTER`], [`CLOCK_PPM`], a start window of
    /// `duration / START_WINDOW_DIV`), seeded by `seed`.
    pub fn with_paper_variation(self) -> Self {
        ManyFlows {
            variation: Variation {
                tx_jitter: TX_JITTER,
                clock_ppm: CLOCK_PPM,
                start_window: self.duration / START_WINDOW_DIV,
                seed: self.seed,
            },
            ..self
        }
    }

    /// Without any variation: the deterministic model.
    pub fn without_variation(self) -> Self {
        ManyFlows {
            variation: Variation::default(),
            ..self
        }
    }

    /// The Tonic side's scenario (the TCB side's parameters follow from it).
    pub fn scenario(&self) -> Scenario {
        // Long enough that no flow finishes: at most 1/4 of the link for the whole run.
        let segments = (RATE / 8 / SEG as u64 * self.duration / 1_000_000_000 / 4).max(1000);
        let mut s = tonic_scenario(
            "tonic-newreno-200",
            self.senders,
            self.per_sender,
            segments,
            self.duration,
        );
        s.seed = self.seed;
        s.trace_interval = Some(self.duration);
        s.link.buffer = self.buffer;
        s.tonic.init_rtx_timer = self.min_rto;
        let v = self.variation;
        s.network.tx_jitter = v.tx_jitter;
        s.network.clock_ppm = v.clock_ppm;
        s.network.variation_seed = Some(v.seed);
        s.flows.start_window = v.start_window;
        s
    }

    /// Runs both implementations.
    pub fn run(&self) -> Result<ManyFlowsRun, String> {
        let s = self.scenario();
        let t0 = std::time::Instant::now();
        let tonic = run_scenario(&s).map_err(|e| e.to_string())?;
        let tcb = tcbnet::run(&tcb_params(&s, 0, self.duration))?;
        let wall_s = t0.elapsed().as_secs_f64();
        let starts = s.variation().start_offsets(s.total_flows());
        // Payload Mb/s from the flow's start: bits over ns, times 1,000.
        let mbps = |bytes: u64, start: Nanos| {
            bytes as f64 * 8.0 / self.duration.saturating_sub(start).max(1) as f64 * 1e3
        };
        let tonic_mbps = tonic
            .flows
            .iter()
            .map(|f| mbps(f.delivered * SEG as u64, f.start_ns))
            .collect();
        let tcb_mbps = tcb
            .delivered
            .iter()
            .zip(&starts)
            .map(|(&b, &st)| mbps(b, st))
            .collect();
        let payload = RATE as f64 / 1e6 * SEG as f64 / (SEG + HEADER) as f64;
        let tonic_bytes: u64 = tonic.flows.iter().map(|f| f.delivered * SEG as u64).sum();
        let tcb_bytes: u64 = tcb.delivered.iter().sum();
        Ok(ManyFlowsRun {
            tonic_mbps,
            tcb_mbps,
            total_mbps: (mbps(tonic_bytes, 0), mbps(tcb_bytes, 0)),
            fair_mbps: payload / s.total_flows() as f64,
            payload_mbps: payload,
            starts,
            tonic,
            tcb,
            wall_s,
        })
    }
}

/// What a [`ManyFlows`] run measured.
#[derive(Clone, Debug)]
pub struct ManyFlowsRun {
    /// Tonic's per-flow payload throughput from each flow's start, Mb/s.
    pub tonic_mbps: Vec<f64>,
    /// The TCB's, Mb/s.
    pub tcb_mbps: Vec<f64>,
    /// Payload delivered in all over the run, Tonic's and the TCB's, Mb/s.
    pub total_mbps: (f64, f64),
    /// The fair share: the bottleneck's payload capacity over the flows, Mb/s.
    pub fair_mbps: f64,
    /// The bottleneck's payload capacity, Mb/s.
    pub payload_mbps: f64,
    /// Each flow's start, ns (the same for both).
    pub starts: Vec<Nanos>,
    /// The Tonic run.
    pub tonic: TestbenchReport,
    /// The TCB run.
    pub tcb: TcbNetRun,
    /// Wall time of both runs, s.
    pub wall_s: f64,
}

/// The 10th, 20th, …, 90th percentiles of `v` (nearest rank).
pub fn deciles(v: &[f64]) -> [f64; 9] {
    std::array::from_fn(|i| quantile(v, (i + 1) as f64 / 10.0))
}

impl ManyFlowsRun {
    /// How many flows of `v` got less than `share` of the fair share.
    pub fn below(&self, v: &[f64], share: f64) -> usize {
        v.iter().filter(|&&x| x < share * self.fair_mbps).count()
    }

    /// The largest relative gap between the two CDFs at a decile, `|a − b| / max(a, b)`,
    /// and the decile (1–9) where it is.
    pub fn decile_gap(&self) -> (f64, usize) {
        let (a, b) = (deciles(&self.tonic_mbps), deciles(&self.tcb_mbps));
        (0..9)
            .map(|i| ((a[i] - b[i]).abs() / a[i].max(b[i]).max(1e-9), i + 1))
            .fold((0.0, 0), |m, x| if x.0 > m.0 { x } else { m })
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// `nicemu experiment tonic-newreno-200`.
pub fn two_hundred(o: &ExpOptions) -> Result<ExpReport, String> {
    let m = if o.quick {
        ManyFlows::scaled(o.seed)
    } else {
        ManyFlows::paper(o.seed)
    };
    let r = m.run()?;
    let n = (m.senders * m.per_sender) as usize;
    ensure_dir(&o.out)?;
    let mut files = Vec::new();
    let mut c = String::from("impl,flow,start_ns,throughput_mbps,retransmissions,timeouts\n");
    for (g, f) in r.tonic.flows.iter().enumerate() {
        let _ = writeln!(
            c,
            "tonic,{g},{},{:.3},{},{}",
            f.start_ns, r.tonic_mbps[g], f.retransmissions, f.timeouts
        );
    }
    for (g, mbps) in r.tcb_mbps.iter().enumerate() {
        let _ = writeln!(
            c,
            "tcb,{g},{},{mbps:.3},{},{}",
            r.starts[g], r.tcb.retransmissions[g], r.tcb.timeouts[g]
        );
    }
    write(&o.out, "throughput.csv", &c, &mut files)?;
    svg(
        &o.out,
        "throughput_cdf.svg",
        &LinePlot {
            title: format!(
                "NewReno, {n} flows on one 10 Gb/s drop-tail bottleneck: per-flow throughput (Tonic Fig. 3c)"
            ),
            x_label: "average throughput (Mb/s)".into(),
            y_label: "CDF".into(),
            series: vec![
                Series::new("Tonic newreno module", cdf(&r.tonic_mbps)),
                Series::new("host stack TCB (RFC 6582)", cdf(&r.tcb_mbps)),
                Series::new(
                    "fair share",
                    vec![(r.fair_mbps, 0.0), (r.fair_mbps, 1.0)],
                ),
            ],
            y_from_zero: true,
            ..Default::default()
        },
        &mut files,
    )?;
    let fair = r.fair_mbps;
    let (tt, th) = r.total_mbps;
    let floor = |name: &str, v: &[f64]| {
        let lo = min(v);
        check(
            format!(
                "{name}: no flow below {:.0}% of the fair share ({:.2} Mb/s): {} below, slowest {lo:.2} Mb/s ({:.0}% of {fair:.2})",
                MIN_SHARE * 100.0,
                MIN_SHARE * fair,
                r.below(v, MIN_SHARE),
                lo / fair * 100.0
            ),
            r.below(v, MIN_SHARE) == 0,
        )
    };
    let (gap, at) = r.decile_gap();
    let checks = vec![
        floor("Tonic", &r.tonic_mbps),
        floor("TCB", &r.tcb_mbps),
        check(
            format!(
                "the CDFs match: at every decile Tonic's and the TCB's throughputs within {:.0}% of each other (largest gap {:.1}%, at p{}0)",
                DECILE_GAP * 100.0,
                gap * 100.0,
                at
            ),
            gap <= DECILE_GAP,
        ),
        check(
            format!(
                "both fill the bottleneck: Tonic {tt:.0} Mb/s, TCB {th:.0} Mb/s of payload in all (≥ 90% of its payload capacity, {:.0})",
                r.payload_mbps
            ),
            tt >= 0.9 * r.payload_mbps && th >= 0.9 * r.payload_mbps,
        ),
    ];
    let md = report_md(o, &m, &r, &checks);
    write(&o.out, "report.md", &md, &mut files)?;
    Ok(ExpReport {
        name: "tonic-newreno-200".into(),
        files,
        checks,
        markdown: md,
        data_segments: r.tonic.flows.iter().map(|f| f.transmitted).sum::<u64>()
            + r.tcb.data_segments,
        events: r.tonic.events + r.tcb.events,
    })
}

fn report_md(o: &ExpOptions, m: &ManyFlows, r: &ManyFlowsRun, checks: &[super::Check]) -> String {
    let v = m.variation;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# tonic-newreno-200 (Tonic §6.2.1, Figure 3c)\n\n\
         {} senders with {} NewReno flows each into one receiver for {:.3} s over one 10 Gb/s \
         drop-tail bottleneck ({:.1} MB buffer, RTT 10 µs, {} ms minimum RTO, 1,000-byte \
         segments, delayed ACKs){}. Tonic: the `newreno` module, per-packet round robin across \
         each sender's flows (§3.1). TCB: the host stack's NewReno, each host's NIC sending in \
         the order the connections emitted (no round robin). Seed {}.\n\n\
         **Hosts' timing variation** (`dataplane::tonic::testbench::variation`, the same draws \
         for both implementations): transmit jitter uniform in [0, {} ns] per packet (one \
         bottleneck service time of a 1,064-byte packet), NIC clocks within ±{} ppm of \
         nominal (IEEE 802.3's tolerance), flows starting at random within the first {:.0} ms \
         ({:.0}% of the run). Throughput counts payload from each flow's own start; the fair \
         share is the bottleneck's payload capacity ({:.0} Mb/s) over the {} flows: {:.2} Mb/s.\n\n\
         Why: both senders are identical and send at exactly the bottleneck's rate. Without \
         jitter, once the drop-tail buffer is full, the slot each departure frees goes to the \
         same sender's packet every time, and the other sender's flows are locked out behind \
         backed-off timeouts, in both implementations alike (the deterministic model gives \
         median 0.4 Mb/s for Tonic and 0.1 Mb/s for the TCB, half the flows near zero): the \
         drop-tail phase effect of Floyd and Jacobson (\"On traffic phase effects in \
         packet-switched gateways\", 1992), whose remedy is a random delay of up to one \
         bottleneck service time per packet. Real hosts have that and more; the switch stays \
         drop-tail as in the paper.\n",
        m.senders,
        m.per_sender,
        m.duration as f64 / 1e9,
        m.buffer as f64 / 1e6,
        m.min_rto / 1_000_000,
        if o.quick {
            " (--quick: the paper's setup scaled down to 2 × 10 flows for 500 ms, 500 KB buffer, 5 ms minimum RTO)"
        } else {
            ""
        },
        o.seed,
        v.tx_jitter,
        v.clock_ppm,
        v.start_window as f64 / 1e6,
        100.0 / START_WINDOW_DIV as f64,
        r.payload_mbps,
        r.tonic_mbps.len(),
        r.fair_mbps
    );
    let row = |v: &[f64]| {
        let d = deciles(v);
        let mut s = format!("{:.1}", min(v));
        for x in d {
            let _ = write!(s, " | {x:.1}");
        }
        let _ = write!(s, " | {:.1}", max(v));
        s
    };
    let _ = writeln!(
        md,
        "Per-flow throughput (Mb/s):\n\n\
         | | min | p10 | p20 | p30 | p40 | median | p60 | p70 | p80 | p90 | max |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n\
         | Tonic | {} |\n| TCB | {} |\n",
        row(&r.tonic_mbps),
        row(&r.tcb_mbps)
    );
    let _ = writeln!(
        md,
        "| | Tonic | TCB |\n|---|---|---|\n\
         | payload delivered over the run (Mb/s) | {:.0} | {:.0} |\n\
         | retransmissions | {} | {} |\n\
         | timeouts | {} | {} |\n\
         | flows with a timeout | {} | {} |\n",
        r.total_mbps.0,
        r.total_mbps.1,
        r.tonic.flows.iter().map(|f| f.retransmissions).sum::<u64>(),
        r.tcb.retransmissions.iter().sum::<u64>(),
        r.tonic.flows.iter().map(|f| f.timeouts).sum::<u64>(),
        r.tcb.timeouts.iter().sum::<u64>(),
        r.tonic.flows.iter().filter(|f| f.timeouts > 0).count(),
        r.tcb.timeouts.iter().filter(|&&t| t > 0).count(),
    );
    let timeouts = |t: &[u64]| t.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let tonic_to: Vec<u64> = r.tonic.flows.iter().map(|f| f.timeouts).collect();
    let (ct, ch) = (
        correlation(&r.tonic_mbps, &timeouts(&tonic_to)),
        correlation(&r.tcb_mbps, &timeouts(&r.tcb.timeouts)),
    );
    let _ = writeln!(
        md,
        "A timeout costs a flow at least the {} ms minimum RTO, doubled while it backs off; a \
         flow's throughput correlates with its number of timeouts with r = {ct:.2} (Tonic) \
         and {ch:.2} (TCB).",
        m.min_rto / 1_000_000
    );
    let (nt, nh) = (
        tonic_to.iter().sum::<u64>(),
        r.tcb.timeouts.iter().sum::<u64>(),
    );
    if nh > nt {
        let _ = writeln!(
            md,
            "The TCB times out {:.1}× as often, and its backoffs last longer: after a timeout \
             it retransmits the whole window (go-back-N), the acks of retransmitted segments \
             give no RTT sample (Karn's algorithm, RFC 6298 §3), so its backoff (§5.5) lasts \
             until new data is acknowledged and a loss meanwhile waits out a doubled RTO; the \
             Tonic module, which has no RTT estimator, returns to the base RTO at the first ack \
             that makes progress outside recovery.",
            nh as f64 / nt.max(1) as f64
        );
    }
    let _ = writeln!(
        md,
        "\nPlot: `throughput_cdf.svg` (both CDFs, the fair share marked). Data: \
         `throughput.csv` (per flow: start, throughput, retransmissions, timeouts). Run time \
         {:.1} s wall for both simulations.\n",
        r.wall_s
    );
    md.push_str(&checks_md(checks));
    md
}
