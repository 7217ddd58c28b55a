//! `nicemu experiment <name>`: the papers' transport experiments (Tonic §6.2, nanoTransport's
//! incast comparison) run in virtual time, each writing CSV traces, SVG plots
//! ([`crate::plot`]) and a `report.md` that puts the measured figures next to the paper's.
//!
//! Each experiment is one function in [`EXPERIMENTS`]; `quick` asks for a reduced version
//! (what the tests run) that still shows the qualitative result.

use std::path::{Path, PathBuf};

pub mod cli;
pub mod dcqcn;
pub mod dcqcn_ref;
pub mod incast;
pub mod newreno;
pub mod newreno_many;
pub mod tcbnet;
pub mod util;
pub mod zoo;

/// How to run an experiment.
#[derive(Clone, Debug)]
pub struct ExpOptions {
    /// Directory for the CSV traces, SVG plots and `report.md` (created if missing).
    pub out: PathBuf,
    /// A reduced version (shorter, fewer flows) that keeps the qualitative result.
    pub quick: bool,
    /// Seed of every random choice (drops, start times).
    pub seed: u64,
}

/// One qualitative check of an experiment: what it says and whether it held.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What is checked, with the measured and the bound values.
    pub what: String,
    /// Whether it held.
    pub ok: bool,
}

/// What an experiment produced.
#[derive(Clone, Debug, Default)]
pub struct ExpReport {
    /// The experiment's name.
    pub name: String,
    /// The files written (CSV, SVG, report.md).
    pub files: Vec<PathBuf>,
    /// The qualitative checks (the tests assert them all).
    pub checks: Vec<Check>,
    /// The markdown of `report.md`.
    pub markdown: String,
    /// Simulated data segments (each with its ACK or equivalent), for the speed figures.
    pub data_segments: u64,
    /// Simulator events processed, summed over every simulation the experiment ran.
    pub events: u64,
}

/// An experiment: runs with the options and reports, or fails with a message.
pub type ExpFn = fn(&ExpOptions) -> Result<ExpReport, String>;

/// Every experiment: name, one-line description, function.
pub const EXPERIMENTS: &[(&str, &str, ExpFn)] = &[
    (
        "tonic-newreno-vs-reference",
        "Tonic §6.2.1 Fig. 3a/b: one NewReno flow, same drops, Tonic module vs the host stack's TCB",
        newreno::vs_reference,
    ),
    (
        "tonic-newreno-200",
        "Tonic §6.2.1 Fig. 3c: 2 senders x 100 NewReno flows, CDF of per-flow throughput",
        newreno_many::two_hundred,
    ),
    (
        "cc-zoo",
        "every Tonic module on one dumbbell with loss and ECN: goodput and queue per module",
        zoo::zoo,
    ),
    (
        "dcqcn-convergence",
        "Tonic §6.2.2 Fig. 4: two DCQCN flows converge; module vs a reference DCQCN sender",
        dcqcn::convergence,
    ),
    (
        "dcqcn-200",
        "Tonic §6.2.2: 2 × 100 DCQCN flows on 40 Gb/s, per-flow throughput and CNPs",
        dcqcn::two_hundred,
    ),
    (
        "incast",
        "nanoTransport §5.2: N-to-1 incast of 64 KB messages, NDP/Homa/DCQCN/NewReno MCTs",
        incast::incast,
    ),
];

/// The experiment called `name`.
pub fn find(name: &str) -> Option<ExpFn> {
    EXPERIMENTS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, f)| *f)
}

/// Creates `dir` (and parents); an error names it.
pub fn ensure_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}
