//! `nicemu experiment`: list the experiments, or run one and say how it went.
//!
//! `nicemu experiment --list` prints every experiment with its description;
//! `nicemu experiment <name> [--out DIR] [--quick] [--seed N]` runs one, writes its CSV
//! traces, SVG plots and `report.md` into DIR (default `experiments/<name>` under the
//! current directory), prints its checks and the files, and fails (non-zero exit) if a
//! check did not hold.

use std::path::PathBuf;

use super::{find, ExpOptions, EXPERIMENTS};

/// The experiment listing, one per line.
pub fn list() -> String {
    let w = EXPERIMENTS.iter().map(|e| e.0.len()).max().unwrap_or(0);
    EXPERIMENTS
        .iter()
        .map(|(n, d, _)| format!("{n:w$}  {d}\n"))
        .collect()
}

/// The default output directory of experiment `name`: `experiments/<name>`.
pub fn default_out(name: &str) -> PathBuf {
    PathBuf::from("experiments").join(name)
}

/// Runs experiment `name` and prints its checks and files; an error if it is unknown, if
/// it failed to run, or if a check failed.
pub fn run(name: &str, out: Option<PathBuf>, quick: bool, seed: u64) -> Result<(), String> {
    let Some(f) = find(name) else {
        return Err(format!(
            "unknown experiment {name:?}; `nicemu experiment --list` shows them:\n{}",
            list()
        ));
    };
    let opts = ExpOptions {
        out: out.unwrap_or_else(|| default_out(name)),
        quick,
        seed,
    };
    let t0 = std::time::Instant::now();
    let r = f(&opts)?;
    let secs = t0.elapsed().as_secs_f64();
    let report = opts.out.join("report.md");
    if !r.files.contains(&report) {
        super::ensure_dir(&opts.out)?;
        std::fs::write(&report, &r.markdown).map_err(|e| format!("{}: {e}", report.display()))?;
    }
    println!(
        "{}{}: {:.1} s, {} data segments, {} events",
        r.name,
        if quick { " (quick)" } else { "" },
        secs,
        r.data_segments,
        r.events
    );
    for c in &r.checks {
        println!("  [{}] {}", if c.ok { " ok " } else { "FAIL" }, c.what);
    }
    println!("files in {}:", opts.out.display());
    for f in &r.files {
        println!("  {}", f.display());
    }
    if !r.files.contains(&report) {
        println!("  {}", report.display());
    }
    let failed = r.checks.iter().filter(|c| !c.ok).count();
    if failed > 0 {
        return Err(format!("{failed} of {} checks failed", r.checks.len()));
    }
    Ok(())
}
