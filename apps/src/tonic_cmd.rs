//! The Tonic subcommands: `nicemu modules` (what the registry offers, built in and loaded
//! from shared libraries) and `nicemu bench tonic` (scheduling decisions per second).

use std::path::PathBuf;

use dataplane::tonic::bench::{bench_decisions_with, BenchOptions};
use dataplane::tonic::plugin as tonic_plugin;
use dataplane::tonic::registry::Registry;

/// The built-in registry plus the modules in `plugins` (shared libraries through the C ABI
/// of `offload_api::tonic_abi`). A library that does not load is an error naming it.
pub fn registry_with(plugins: &[PathBuf]) -> Result<Registry, String> {
    let mut reg = Registry::builtin();
    for p in plugins {
        let m = tonic_plugin::load(p).map_err(|e| e.to_string())?;
        let name = m.name().to_string();
        reg.register(
            &name,
            &format!("loaded from {}", p.display()),
            tonic_plugin::factory(m),
        )
        .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(reg)
}

/// `nicemu modules`: one line per module with its credit scheme and per-flow state size.
pub fn modules(plugins: &[PathBuf]) -> Result<(), String> {
    let reg = registry_with(plugins)?;
    println!(
        "{:<14} {:<8} {:>10}  {:<8} description",
        "module", "credit", "state (B)", "origin"
    );
    for m in reg.list() {
        println!(
            "{:<14} {:<8} {:>10}  {:<8} {}",
            m.name,
            m.credit_scheme.name(),
            m.user_ctx_bytes,
            if m.builtin { "built-in" } else { "loaded" },
            m.description
        );
    }
    Ok(())
}

/// `nicemu bench tonic`: decisions per second for each flow count, one module.
pub fn bench(
    module: &str,
    flows: &[usize],
    seconds: f64,
    options: BenchOptions,
) -> Result<(), String> {
    println!("Tonic segment scheduling on one core: module {module}, {seconds} s per point");
    println!("(Tonic's hardware: one decision per 10 ns = 100 M/s, at most 2,048 flows)");
    for &n in flows {
        let r = bench_decisions_with(n, seconds, module, options).map_err(|e| e.to_string())?;
        println!("{r}");
    }
    Ok(())
}

/// `nicemu testbench`: runs a Tonic scenario in virtual time, prints the summary, and writes
/// the per-flow traces as CSV into `csv` when given, with `plot` also an SVG of them there
/// ([`crate::tonic_plot`]). Fails when a flow did not complete.
pub fn testbench(
    scenario: &std::path::Path,
    csv: Option<&std::path::Path>,
    plot: bool,
    plugins: &[PathBuf],
) -> Result<(), String> {
    use dataplane::tonic::testbench::{load_scenario_with, run_scenario_with, write_csv};
    let reg = registry_with(plugins)?;
    let s = load_scenario_with(scenario, &reg).map_err(|e| e.to_string())?;
    let report = run_scenario_with(&s, &reg).map_err(|e| format!("{}: {e}", scenario.display()))?;
    print!("{}", report.summary_text());
    if let Some(dir) = csv {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let files = write_csv(&report, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        println!("traces: {} files in {}", files.len(), dir.display());
        if plot {
            let svg = crate::tonic_plot::write_svg(&report, dir)?;
            println!("plot: {}", svg.display());
        }
    }
    if report.all_complete() {
        Ok(())
    } else {
        Err(format!(
            "{}: not every flow completed within the scenario's duration",
            scenario.display()
        ))
    }
}
