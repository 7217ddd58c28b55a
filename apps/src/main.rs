//! `nicemu`: the smart-NIC offload emulator's command line.
//!
//! Subcommands: `run` (bring the NIC up on the configured ports), `fwd` (forwarding
//! benchmark), `check` (validate a configuration), `demo` (the embedded default topology),
//! `proxy` (the HTTP/1.1 load balancer on the host stack, splicing on the NIC), `echo`,
//! `loadgen` and `kv` (the host applications as processes), `experiment` (the papers'
//! transport experiments in virtual time: CSV, SVG and report.md).
//! Everything after `--` goes to DPDK's EAL.
#![deny(unsafe_code)]

mod cli;
mod demo;
mod demo_tcp;
#[cfg(feature = "dpdk")]
mod dpdk;
// Without the `dpdk` feature the applications' subcommands only say that they need it, so
// their runtime's helpers go unused there.
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
mod hostapps;
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
mod procs;
mod proxy_cmd;
mod report;
mod topo;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| cli.log.clone());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match cli::run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nicemu: {e}");
            ExitCode::FAILURE
        }
    }
}
