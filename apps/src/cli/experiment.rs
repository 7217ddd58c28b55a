//! `nicemu experiment`: the papers' transport experiments in virtual time.

use std::path::PathBuf;

use clap::Args;

/// `nicemu experiment`'s arguments.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The experiment (see --list).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List the experiments.
    #[arg(long)]
    pub list: bool,
    /// Output directory (default: experiments/<name> under the current directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The reduced version (seconds in a debug build) that keeps the qualitative result.
    #[arg(long)]
    pub quick: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `nicemu experiment`: runs one, or lists them.
pub fn run(a: ExperimentArgs) -> Result<(), String> {
    match (a.list, a.name) {
        (true, _) => {
            print!("{}", apps::experiment::cli::list());
            Ok(())
        }
        (false, Some(n)) => apps::experiment::cli::run(&n, a.out, a.quick, a.seed),
        (false, None) => Err("name an experiment, or --list".into()),
    }
}
