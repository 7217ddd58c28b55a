//! A virtual-time testbench for Tonic protocol modules, like the paper's own (Tonic §6: "a
//! cycle-accurate hardware simulator … integrated with NS3", used for §6.2), but
//! self-contained: sender engines, a bottleneck link and a receiver that speaks each
//! protocol, all in virtual time and deterministic for a seed.
//!
//! - [`scenario`]: the TOML scenario: Tonic's knobs (`init_wnd_size`, `init_rtx_timer`, `rtt`,
//!   `loss_prob`, `active_flow_cnt`), the module and its parameters, flows, link, receiver,
//!   scripted drops. Examples in `configs/tonic/`.
//! - [`link`]: an output port: rate, delay, buffer with tail drop or NDP trimming, ECN marking
//!   (step or RED), up to 8 strict-priority queues (Homa), random loss; a `star` topology
//!   has one in the data path, a `dumbbell` two (core link, then the receiver's edge port).
//! - [`receiver`]: cumulative acks with ECN echo, SACKs, NDP NACKs and pulls, RoCE go-back-N
//!   NAKs and DCQCN CNPs, IRN selective NACKs, Homa's SRPT grants with priorities; chosen
//!   from the module by a documented table.
//! - [`variation`]: the timing variation real hosts have (transmit jitter, NIC clock
//!   offsets, random flow starts), off by default; it removes the drop-tail phase effect
//!   (Floyd and Jacobson, 1992) of identical senders at exactly the bottleneck rate.
//! - [`report`]: per-flow traces (wnd-size / rate / credit, snd_una, snd_nxt, retransmissions,
//!   timeouts), the summary (delivered, retransmissions, timeouts, completion times), CSV.
//!
//! ```no_run
//! use dataplane::tonic::testbench::{load_scenario, run_scenario, write_csv};
//! let s = load_scenario("configs/tonic/newreno.toml").unwrap();
//! let r = run_scenario(&s).unwrap();
//! assert!(r.all_complete());
//! write_csv(&r, std::path::Path::new("/tmp/newreno")).unwrap();
//! ```

pub mod event;
pub mod link;
pub mod receiver;
pub mod report;
pub mod rng;
pub mod scenario;
mod sim;
pub mod units;
pub mod variation;

pub use receiver::ReceiverKind;
pub use report::{write_csv, FlowSummary, TestbenchReport, TraceRow, TxRecord};
pub use scenario::{
    load_scenario, load_scenario_with, parse_scenario, parse_scenario_with, Scenario,
};

use crate::config::ConfigError;
use crate::tonic::registry::Registry;
use crate::tonic::TonicError;

/// Why a testbench run failed.
#[derive(Debug, thiserror::Error)]
pub enum TestbenchError {
    /// The scenario is invalid (names the key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An engine or module refused something.
    #[error("tonic: {0}")]
    Tonic(#[from] TonicError),
    /// Writing CSV failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// An engine broke one of its §3.1 invariants (with `check_invariants`).
    #[error("engine invariant broken: {0}")]
    Invariant(String),
}

/// Runs scenario `s` with the built-in modules until every flow is acknowledged or the
/// duration limit.
pub fn run_scenario(s: &Scenario) -> Result<TestbenchReport, TestbenchError> {
    run_scenario_with(s, &Registry::builtin())
}

/// [`run_scenario`] with modules from `registry` (out-of-tree modules).
pub fn run_scenario_with(
    s: &Scenario,
    registry: &Registry,
) -> Result<TestbenchReport, TestbenchError> {
    sim::Sim::new(s, registry)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a, 64 bits.
    fn fnv(h: &mut u64, s: &str) {
        for b in s.bytes() {
            *h ^= b as u64;
            *h = h.wrapping_mul(0x100_0000_01b3);
        }
    }

    /// A digest of everything a run reports: the summary (text and CSV), every flow's trace,
    /// and the counters.
    fn digest(r: &TestbenchReport) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        fnv(&mut h, &r.summary_text());
        fnv(&mut h, &r.summary_csv());
        for f in &r.flows {
            fnv(&mut h, &r.trace_csv(f.flow));
            fnv(&mut h, &format!("{}", f.cnps));
        }
        fnv(&mut h, &format!("{:?}{:?}", r.link, r.receiver_stats));
        h
    }

    /// Seeded runs of the example scenarios produce exactly the reports they produced before
    /// the simulator's hot paths were optimised (event queue, allocations): the
    /// optimisations change speed, never results.
    #[test]
    fn testbench_pinned_summaries() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/tonic");
        let mut got = Vec::new();
        for (file, dur) in [
            ("newreno.toml", None),
            ("sack.toml", None),
            ("dcqcn-2flows.toml", Some(40_000_000)),
            ("irn.toml", None),
            ("ndp-incast8.toml", None),
            ("homa-incast.toml", None),
        ] {
            let mut s = load_scenario(dir.join(file)).unwrap();
            if let Some(d) = dur {
                s.duration = d;
            }
            let r = run_scenario(&s).unwrap();
            got.push((file, digest(&r)));
        }
        let want: Vec<(&str, u64)> = vec![
            ("newreno.toml", 13124661868676742998),
            ("sack.toml", 13654698988658471699),
            ("dcqcn-2flows.toml", 11459733079050545325),
            ("irn.toml", 10469162262400446093),
            ("ndp-incast8.toml", 7452429878512732506),
            ("homa-incast.toml", 2882332403867693595),
        ];
        assert_eq!(got, want);
    }
}
