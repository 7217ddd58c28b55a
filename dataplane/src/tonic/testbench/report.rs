//! What a testbench run produces: per-flow traces (Tonic Fig. 3a/4: cwnd or rate over time;
//! Fig. 3b: transmitted sequence numbers, retransmissions marked), a per-flow summary, and
//! CSV files of both.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::link::LinkStats;
use super::receiver::{ReceiverKind, RxStats};
use super::TestbenchError;
use crate::tonic::{EngineStats, Nanos, SegId};

/// One trace sample of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceRow {
    /// Virtual time.
    pub time_ns: Nanos,
    /// Global flow id.
    pub flow: u32,
    /// `wnd-size` (Tab. 2): the module's congestion window in segments (window scheme; in
    /// recovery it is what the module set, e.g. NewReno's inflated window).
    pub wnd_size: u32,
    /// The flow's rate in bit/s (rate scheme; 0 otherwise).
    pub rate_bps: u64,
    /// Credit in bytes (rate and grant schemes; 0 for the window scheme).
    pub credit_bytes: i64,
    /// `wnd-start`: the first unacknowledged segment (snd_una).
    pub snd_una: SegId,
    /// `highest-sent + 1` (snd_nxt).
    pub snd_nxt: SegId,
    /// The receiver's cumulative ack.
    pub rcv_cum: SegId,
    /// Segments transmitted so far (retransmissions included).
    pub transmitted: u64,
    /// Retransmissions so far.
    pub retransmissions: u64,
    /// Retransmission timeouts so far.
    pub timeouts: u64,
    /// Data bytes queued at the bottleneck (shared by all flows).
    pub queue_bytes: u64,
    /// TCP-style window modules (reno, newreno, sack, dctcp): the module's own congestion
    /// window, App. D's `cwnd` user variable, in segments — without the recovery inflation
    /// that `wnd_size` carries (Tonic §6.2.1, Fig. 3a). Other modules: `wnd_size`.
    pub cwnd: u32,
}

/// One transmitted segment (with `trace_segments`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxRecord {
    /// When the sender's NIC started sending it.
    pub time_ns: Nanos,
    /// Global flow id.
    pub flow: u32,
    /// Segment index.
    pub seg: SegId,
    /// A retransmission.
    pub rtx: bool,
}

/// The outcome of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowSummary {
    /// Global flow id.
    pub flow: u32,
    /// Its sender.
    pub sender: u32,
    /// Segments in the flow.
    pub segments: u64,
    /// Bytes in the flow.
    pub bytes: u64,
    /// Distinct segments the receiver got (for go-back-N: accepted in order).
    pub delivered: u64,
    /// Duplicate arrivals at the receiver.
    pub duplicates: u64,
    /// Segments transmitted (retransmissions included).
    pub transmitted: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// CNPs the sender received for this flow (DCQCN).
    pub cnps: u64,
    /// When the flow started.
    pub start_ns: Nanos,
    /// When the receiver had every segment.
    pub rx_complete_ns: Option<Nanos>,
    /// When the sender had every segment acknowledged.
    pub completed_ns: Option<Nanos>,
}

impl FlowSummary {
    /// Flow completion time (sender side), if the flow completed.
    pub fn fct_ns(&self) -> Option<Nanos> {
        self.completed_ns.map(|t| t - self.start_ns)
    }

    /// Whether every segment was delivered and acknowledged.
    pub fn complete(&self) -> bool {
        self.completed_ns.is_some() && self.delivered == self.segments
    }
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct TestbenchReport {
    /// The scenario's name.
    pub name: String,
    /// The module.
    pub module: String,
    /// The receiver behaviour used.
    pub receiver: ReceiverKind,
    /// Payload bytes per segment.
    pub segment_size: u32,
    /// When the run stopped (every flow acknowledged, or the duration limit).
    pub end_ns: Nanos,
    /// Per-flow outcomes.
    pub flows: Vec<FlowSummary>,
    /// Trace samples, in time order (every `trace_interval`, plus one when a flow completes).
    pub trace: Vec<TraceRow>,
    /// Transmitted segments (with `trace_segments`).
    pub tx_log: Vec<TxRecord>,
    /// CNPs as their senders received them, `(time, flow)` in time order (with
    /// `trace_cnps`).
    pub cnp_log: Vec<(Nanos, u32)>,
    /// Simulator events processed (for the speed figures).
    pub events: u64,
    /// Bottleneck counters.
    pub link: LinkStats,
    /// Receiver counters.
    pub receiver_stats: RxStats,
    /// Random drops at the receiver's NIC (`tonic.loss_prob`) and scripted drops.
    pub rx_nic_drops: u64,
    /// Each sender engine's counters.
    pub engines: Vec<EngineStats>,
}

impl TestbenchReport {
    /// Whether every flow delivered every segment and was acknowledged.
    pub fn all_complete(&self) -> bool {
        self.flows.iter().all(FlowSummary::complete)
    }

    /// Retransmission timeouts over all flows.
    pub fn timeouts(&self) -> u64 {
        self.flows.iter().map(|f| f.timeouts).sum()
    }

    /// Retransmissions over all flows.
    pub fn retransmissions(&self) -> u64 {
        self.flows.iter().map(|f| f.retransmissions).sum()
    }

    /// The trace of flow `f`.
    pub fn flow_trace(&self, f: u32) -> impl Iterator<Item = &TraceRow> + '_ {
        self.trace.iter().filter(move |r| r.flow == f)
    }

    /// Flow `f`'s goodput between `from` and `to` in bit/s: the growth of `snd_una` between
    /// the last samples at or before each time, in payload bits. `None` without samples.
    pub fn goodput_bps(&self, f: u32, from: Nanos, to: Nanos) -> Option<f64> {
        let at = |t: Nanos| {
            self.flow_trace(f)
                .take_while(|r| r.time_ns <= t)
                .last()
                .copied()
        };
        let (a, b) = (at(from)?, at(to)?);
        let dt = b.time_ns.checked_sub(a.time_ns).filter(|d| *d > 0)?;
        let bits = (b.snd_una - a.snd_una) as f64 * self.segment_size as f64 * 8.0;
        Some(bits * 1e9 / dt as f64)
    }

    /// The per-flow trace as CSV.
    pub fn trace_csv(&self, f: u32) -> String {
        let mut s = String::from(
            "time_ns,flow,wnd_size,rate_bps,credit_bytes,snd_una,snd_nxt,rcv_cum,transmitted,retransmissions,timeouts,queue_bytes\n",
        );
        for r in self.flow_trace(f) {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                r.time_ns,
                r.flow,
                r.wnd_size,
                r.rate_bps,
                r.credit_bytes,
                r.snd_una,
                r.snd_nxt,
                r.rcv_cum,
                r.transmitted,
                r.retransmissions,
                r.timeouts,
                r.queue_bytes
            );
        }
        s
    }

    /// The summary as CSV, one row per flow.
    pub fn summary_csv(&self) -> String {
        let mut s = String::from(
            "flow,sender,segments,bytes,delivered,duplicates,transmitted,retransmissions,timeouts,start_ns,rx_complete_ns,completed_ns,fct_ns\n",
        );
        let opt = |v: Option<Nanos>| v.map(|t| t.to_string()).unwrap_or_default();
        for f in &self.flows {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                f.flow,
                f.sender,
                f.segments,
                f.bytes,
                f.delivered,
                f.duplicates,
                f.transmitted,
                f.retransmissions,
                f.timeouts,
                f.start_ns,
                opt(f.rx_complete_ns),
                opt(f.completed_ns),
                opt(f.fct_ns())
            );
        }
        s
    }

    /// A human-readable summary (what `nicemu testbench` prints).
    pub fn summary_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}: module {}, receiver {}, {} flows, ended at {} ns, {}",
            self.name,
            self.module,
            self.receiver.name(),
            self.flows.len(),
            self.end_ns,
            if self.all_complete() {
                "all complete"
            } else {
                "INCOMPLETE"
            }
        );
        let l = &self.link;
        let _ = writeln!(
            s,
            "link: {} sent, {} dropped, {} trimmed, {} ECN-marked, {} lost, max queue {} B; receiver NIC drops {}",
            l.sent, l.dropped, l.trimmed, l.ecn_marked, l.lost, l.max_queue_bytes, self.rx_nic_drops
        );
        let r = &self.receiver_stats;
        let _ = writeln!(
            s,
            "receiver: {} acks, {} nacks, {} CNPs, {} pulls, {} discarded out of order",
            r.acks, r.nacks, r.cnps, r.pulls, r.discarded
        );
        for f in &self.flows {
            let _ = writeln!(
                s,
                "flow {}: delivered {}/{}, {} sent, {} retransmitted, {} timeouts, fct {}",
                f.flow,
                f.delivered,
                f.segments,
                f.transmitted,
                f.retransmissions,
                f.timeouts,
                f.fct_ns().map_or("-".to_string(), |t| format!("{t} ns"))
            );
        }
        s
    }
}

/// Writes `summary.csv`, `flow-<id>.csv` for every flow and, with a transmission log,
/// `tx.csv` (time_ns, flow, seg, rtx) into `dir` (created if needed). Returns the paths.
pub fn write_csv(
    report: &TestbenchReport,
    dir: impl AsRef<Path>,
) -> Result<Vec<PathBuf>, TestbenchError> {
    let dir = dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| TestbenchError::Io(dir.display().to_string(), e))?;
    let mut written = Vec::new();
    let mut put = |name: String, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| TestbenchError::Io(p.display().to_string(), e))?;
        written.push(p);
        Ok::<(), TestbenchError>(())
    };
    put("summary.csv".into(), report.summary_csv())?;
    for f in &report.flows {
        put(format!("flow-{}.csv", f.flow), report.trace_csv(f.flow))?;
    }
    if !report.tx_log.is_empty() {
        let mut s = String::from("time_ns,flow,seg,rtx\n");
        for t in &report.tx_log {
            let _ = writeln!(s, "{},{},{},{}", t.time_ns, t.flow, t.seg, t.rtx as u8);
        }
        put("tx.csv".into(), s)?;
    }
    Ok(written)
}
