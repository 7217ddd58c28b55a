//! `nicemu modules` and `nicemu testbench`: Tonic's protocol modules and its virtual-time
//! testbench.

use std::path::PathBuf;

use clap::Args;

/// `nicemu modules`' arguments.
#[derive(Args, Debug)]
pub struct ModulesArgs {
    /// A shared library with a module (the C ABI of offload_api::tonic_abi); repeatable.
    #[arg(long)]
    pub plugin: Vec<PathBuf>,
    /// Also load the plugins named in this configuration's `[tonic] plugins`.
    #[arg(short, long)]
    pub config: Option<PathBuf>,
}

/// `nicemu testbench`'s arguments.
#[derive(Args, Debug)]
pub struct TestbenchArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Directory for the CSV traces.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also draw the traces as an SVG (window or rate, throughput, queue over time) in
    /// the --csv directory.
    #[arg(long, requires = "csv")]
    pub plot: bool,
    /// A shared library with a module the scenario may name; repeatable.
    #[arg(long)]
    pub plugin: Vec<PathBuf>,
}

/// `nicemu modules`: the CLI's plugins plus those of the configuration, if given.
pub fn modules(a: ModulesArgs) -> Result<(), String> {
    let mut plugins = a.plugin;
    if let Some(path) = a.config {
        let cfg = dataplane::config::Config::load(&path).map_err(|e| e.to_string())?;
        plugins.extend(cfg.tonic.plugins.iter().map(PathBuf::from));
    }
    apps::tonic_cmd::modules(&plugins)
}

/// `nicemu testbench`.
pub fn testbench(a: &TestbenchArgs) -> Result<(), String> {
    apps::tonic_cmd::testbench(&a.scenario, a.csv.as_deref(), a.plot, &a.plugin)
}
