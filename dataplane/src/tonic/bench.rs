//! Segment-scheduling throughput of the Tonic engines on one core (the Tonic scheduling
//! benchmark; BENCHMARKS.md records the figures).
//!
//! Tonic's hardware makes one scheduling decision per 10 ns for at most 2,048 flows (§1,
//! §6.1.2). This benchmark measures how many decisions per second one CPU core makes with
//! many more active flows. Each flow has unlimited data; the loop runs, per decision:
//!
//! 1. [`TonicEngine::next_segment`]: one Segment Generation (an active flow's next segment
//!    address into its ring) and one Transmit (the next ready flow's address out, and the
//!    Segment Transmitted signal back);
//! 2. the receiver's answer to that segment, fed straight back through
//!    [`TonicEngine::incoming`]: a cumulative ack (plus a one-segment grant for grant-based
//!    modules), through the fixed Incoming stage and the module's hook; with
//!    [`BenchOptions::ack_every`] = 2, only every second segment is acked (delayed acks);
//! 3. Periodic Updates for one flow on average ([`TonicEngine::periodic`] every 64 decisions
//!    for 64 flows), the hardware's one visit per cycle.
//!
//! So a "decision" here carries the whole per-segment transport work, not only the set
//! operations. By default the loop works in bursts of [`DEFAULT_BURST`] decisions, as a NIC
//! lcore's tx and rx bursts do: [`TonicEngine::next_segments`] makes the burst's decisions
//! and [`TonicEngine::incoming_acks`] feeds back their acks, each one as the single calls
//! would; `burst = 1` runs the single calls ([`TonicEngine::next_segment`],
//! [`TonicEngine::incoming`]). Virtual time advances 10 ns per decision (per burst, by the
//! burst's ticks at once); wall time is measured. Nothing is allocated per decision.

use std::time::Instant;

use super::engine::{Ack, EngineParams, TonicEngine, TxSegment};
use super::module::{CreditScheme, IncomingPkt};
use super::modules::ModuleParams;
use super::registry::Registry;
use super::{FlowId, TonicError};

/// Bytes per segment in the benchmark.
const MSS: u32 = 1000;
/// Virtual time per decision (Tonic's 10 ns cycle).
const TICK_NS: u64 = 10;

/// Benchmark knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    /// The receiver acks every `ack_every`-th segment of a flow (1: every segment, the
    /// hardware's one incoming event per decision; 2: delayed acks, as the Linux receiver
    /// and Tonic's §6.2.1 setup do).
    pub ack_every: u32,
    /// Flows join (and so round robin visits them) in flow-id order, which is also their
    /// memory order: a best case, where the CPU's stride prefetchers fetch the next flows'
    /// state. Off (the default), they join in a seeded random order, as flows do after
    /// connection churn, and every flow visited is a cache miss with many flows.
    pub memory_order: bool,
    /// Decisions per burst: the loop asks [`TonicEngine::next_segments`] for this many at
    /// once and feeds their acks back through one [`TonicEngine::incoming_acks`], as a NIC
    /// lcore's tx and rx bursts do (virtual time then advances by the burst's ticks at once).
    /// 1: one [`TonicEngine::next_segment`] and one [`TonicEngine::incoming`] per decision.
    pub burst: usize,
}

/// The default [`BenchOptions::burst`]: the NIC lcore's default tx burst.
pub const DEFAULT_BURST: usize = 32;

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            ack_every: 1,
            memory_order: false,
            burst: DEFAULT_BURST,
        }
    }
}

/// What [`bench_decisions`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    /// The module.
    pub module: String,
    /// Active flows.
    pub flows: usize,
    /// The options used.
    pub options: BenchOptions,
    /// Decisions that produced a segment, in the timed part.
    pub decisions: u64,
    /// Decision calls that found nothing to send (should stay 0: every flow is backlogged).
    pub idle: u64,
    /// Wall-clock seconds of the timed part.
    pub seconds: f64,
    /// `decisions / seconds`.
    pub decisions_per_sec: f64,
    /// CPU seconds the benchmark thread ran in the timed part, if the OS reports it
    /// (`/proc/thread-self/schedstat`); below `seconds` when the core is shared.
    pub cpu_seconds: Option<f64>,
    /// `decisions / cpu_seconds`: the rate per fully available core.
    pub decisions_per_cpu_sec: Option<f64>,
    /// Nanoseconds per decision.
    pub ns_per_decision: f64,
    /// Incoming packets processed in the timed part (one per `ack_every` decisions).
    pub incoming: u64,
    /// Distinct flows that sent in the timed part (round robin reaches them all when the run
    /// is long enough).
    pub flows_served: usize,
}

impl std::fmt::Display for BenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>8} flows {:>9} {} ack/{} burst {}: {:>7.2} M decisions/s ({:>6.1} ns each; {} decisions in {:.2} s",
            self.module,
            self.flows,
            if self.options.memory_order { "in-order" } else { "shuffled" },
            self.options.ack_every,
            self.options.burst,
            self.decisions_per_sec / 1e6,
            self.ns_per_decision,
            self.decisions,
            self.seconds,
        )?;
        if let (Some(c), Some(r)) = (self.cpu_seconds, self.decisions_per_cpu_sec) {
            write!(f, "; {:.2} s on CPU: {:.2} M/s per CPU second", c, r / 1e6)?;
        }
        write!(f, "; {} flows served)", self.flows_served)
    }
}

/// Runs the benchmark for `flows` backlogged flows of `module` for about `seconds` of wall
/// time (after a warm-up of a few decisions per flow) and reports decisions per second.
///
/// Panics if `module` is not a built-in module name or `flows` is 0 or above 2^30; see
/// [`try_bench_decisions`].
pub fn bench_decisions(flows: usize, seconds: f64, module: &str) -> BenchResult {
    try_bench_decisions(flows, seconds, module).unwrap_or_else(|e| panic!("tonic bench: {e}"))
}

/// [`bench_decisions`], returning an error for a bad module name or flow count.
pub fn try_bench_decisions(
    flows: usize,
    seconds: f64,
    module: &str,
) -> Result<BenchResult, TonicError> {
    bench_decisions_with(flows, seconds, module, BenchOptions::default())
}

/// [`bench_decisions`] with options.
pub fn bench_decisions_with(
    flows: usize,
    seconds: f64,
    module: &str,
    options: BenchOptions,
) -> Result<BenchResult, TonicError> {
    let ack_every = options.ack_every.max(1) as u64;
    if flows == 0 || flows > 1 << 30 {
        return Err(TonicError::InvalidParam(format!(
            "bench: {flows} flows, expected 1 to 2^30"
        )));
    }
    let mp = ModuleParams {
        // Rate modules: every flow at line rate with room for a burst, so that the credit
        // engine's arithmetic runs but never idles the benchmark.
        line_rate_bps: 100_000_000_000,
        max_burst_bytes: 64 * MSS,
        init_credit_bytes: 8 * MSS,
        init_wnd: 16,
        ..ModuleParams::default()
    };
    let m = Registry::builtin().create(module, &mp)?;
    let ep = EngineParams {
        max_flows: flows as u32,
        ..EngineParams::default()
    };
    let mut e = TonicEngine::new(m, ep)?;
    let grant = e.config().credit_scheme == CreditScheme::Grant;
    // Unless asked for memory order, flows join in a seeded random order (Fisher-Yates), so
    // that round robin visits their state in no memory order, as after churn.
    let mut order: Vec<FlowId> = (0..flows as FlowId).collect();
    if !options.memory_order {
        let mut rng = crate::clock::SplitMix64::new(0x5eed_70a1c);
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
    }
    for &f in &order {
        e.add_flow(f, MSS, 0)?;
        e.update_tail(f, 1 << 50)?;
    }
    let mut now = 0u64;
    let burst = options.burst.clamp(1, MAX_BURST);
    let run = |e: &mut TonicEngine, n: u64, now: &mut u64| {
        if burst == 1 {
            run_single(e, n, now, ack_every, grant)
        } else {
            run_bursts(e, n, now, ack_every, grant, burst)
        }
    };
    // Warm-up: every flow through generation, ring and ack a few times (capped).
    let warm = (flows as u64 * 4).min(20_000_000);
    run(&mut e, warm, &mut now);
    let sent_before: Vec<u64> = (0..flows as FlowId)
        .map(|f| e.flow_view(f).map_or(0, |v| v.total_sent))
        .collect();
    let cpu0 = thread_cpu_ns();
    let start = Instant::now();
    let (mut decisions, mut idle, mut incoming0) = (0u64, 0u64, e.stats().incoming);
    let chunk = 1 << 16;
    loop {
        let (d, i) = run(&mut e, chunk, &mut now);
        decisions += d;
        idle += i;
        if start.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e9),
        _ => None,
    };
    incoming0 = e.stats().incoming - incoming0;
    let flows_served = (0..flows as FlowId)
        .filter(|&f| e.flow_view(f).map_or(0, |v| v.total_sent) > sent_before[f as usize])
        .count();
    Ok(BenchResult {
        module: module.to_string(),
        flows,
        options,
        decisions,
        idle,
        seconds: secs,
        decisions_per_sec: decisions as f64 / secs,
        cpu_seconds: cpu,
        decisions_per_cpu_sec: cpu.map(|c| decisions as f64 / c),
        ns_per_decision: secs * 1e9 / decisions.max(1) as f64,
        incoming: incoming0,
        flows_served,
    })
}

/// Largest [`BenchOptions::burst`] (longer ones are cut to it).
pub const MAX_BURST: usize = 256;

/// `n` decisions one call at a time: [`TonicEngine::next_segment`], the ack through
/// [`TonicEngine::incoming`], and [`TonicEngine::periodic`] for 64 flows every 64 decisions.
/// Returns (decisions made, calls that found nothing to send).
fn run_single(
    e: &mut TonicEngine,
    n: u64,
    now: &mut u64,
    ack_every: u64,
    grant: bool,
) -> (u64, u64) {
    let (mut done, mut idle) = (0u64, 0u64);
    // The receiver's answer, reused: only the cumulative ack and the grant change.
    let mut pkt = IncomingPkt::ack(0);
    for i in 0..n {
        *now += TICK_NS;
        match e.next_segment(*now) {
            Some(tx) => {
                done += 1;
                if (tx.seg + 1) % ack_every == 0 {
                    pkt.cumulative_ack = tx.seg + 1;
                    if grant {
                        pkt.grant_bytes = tx.len * ack_every as u32;
                    }
                    // The flow exists: ignore the (impossible) error rather than branch.
                    let _ = e.incoming(tx.flow, &pkt, *now);
                }
            }
            None => idle += 1,
        }
        if i % 64 == 63 {
            e.periodic(*now, 64);
        }
    }
    (done, idle)
}

/// `n` decisions in bursts of `burst`: [`TonicEngine::next_segments`] at the burst's last
/// tick, the acks of what it sent through one [`TonicEngine::incoming_acks`], and
/// [`TonicEngine::periodic`] for 64 flows each time the decision count passes a multiple of
/// 64. Returns (decisions made, decisions asked for and not made).
fn run_bursts(
    e: &mut TonicEngine,
    n: u64,
    now: &mut u64,
    ack_every: u64,
    grant: bool,
    burst: usize,
) -> (u64, u64) {
    let (mut done, mut idle) = (0u64, 0u64);
    let mut txs = [TxSegment::default(); MAX_BURST];
    let mut acks = [Ack::default(); MAX_BURST];
    let mut i = 0u64;
    while i < n {
        let want = (n - i).min(burst as u64);
        *now += TICK_NS * want;
        let made = e.next_segments(*now, &mut txs[..want as usize]);
        done += made as u64;
        idle += want - made as u64;
        let mut k = 0;
        for tx in &txs[..made] {
            if ack_every == 1 || (tx.seg + 1) % ack_every == 0 {
                acks[k] = Ack {
                    flow: tx.flow,
                    cumulative_ack: tx.seg + 1,
                    grant_bytes: if grant { tx.len * ack_every as u32 } else { 0 },
                };
                k += 1;
            }
        }
        // The flows exist: the (impossible) errors are ignored.
        e.incoming_acks(&acks[..k], *now, |_, _| {});
        if (i + want) / 64 > i / 64 {
            e.periodic(*now, 64);
        }
        i += want;
    }
    (done, idle)
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`, first
/// field), if available.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark runs for every module and keeps all flows busy (no timing asserted:
    /// benchmarks are programs, never timed assertions in tests).
    #[test]
    fn runs_for_every_module_without_idling() {
        for m in crate::config::TONIC_MODULES {
            let r = bench_decisions(64, 0.0, m);
            assert!(r.decisions >= 1 << 16, "{r}");
            assert_eq!(r.idle, 0, "{r}");
            assert_eq!(r.incoming, r.decisions);
            assert_eq!(r.flows_served, 64, "{r}");
            for burst in [1, 7, DEFAULT_BURST] {
                let opts = BenchOptions {
                    ack_every: 2,
                    memory_order: true,
                    burst,
                };
                let r = bench_decisions_with(64, 0.0, m, opts).unwrap();
                assert_eq!(r.idle, 0, "{r}");
                assert_eq!(r.incoming * 2, r.decisions, "{r}");
                assert_eq!(r.flows_served, 64, "{r}");
            }
            let single = BenchOptions {
                burst: 1,
                ..BenchOptions::default()
            };
            let r = bench_decisions_with(64, 0.0, m, single).unwrap();
            assert_eq!((r.idle, r.incoming), (0, r.decisions), "{r}");
        }
        assert!(try_bench_decisions(8, 0.0, "cubic").is_err());
    }
}
