//! `nicemu`: the smart-NIC offload emulator's command line.
//!
//! Subcommands: `run` (bring the NIC up on the configured ports), `fwd` (forwarding
//! benchmark), `check` (validate a configuration), `demo` (the embedded default topology).
//! Everything after `--` goes to DPDK's EAL.

mod demo;
mod report;
mod topo;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "nicemu",
    version,
    about = "A DPDK-based userspace smart-NIC offload emulator (AccelTCP offloads, Tonic transports)",
    long_about = "nicemu runs poll-mode NIC lcores on DPDK ports (or an in-memory wire) that act as a \
                  smart NIC. Arguments after `--` are passed to DPDK's EAL, e.g. \
                  `nicemu fwd -c configs/fwd-null.toml -- --no-huge --no-pci`."
)]
struct Cli {
    /// Log filter (tracing EnvFilter syntax, e.g. `info`, `dataplane=debug`); RUST_LOG also works.
    #[arg(long, global = true, default_value = "warn")]
    log: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Bring the NIC up on the configured ports: ARP, ICMP echo, checksum and TSO for the
    /// host; runs until Ctrl-C or --duration, then prints a summary.
    Run(RunArgs),
    /// Forwarding benchmark: port 0 <-> port 1 (2 <-> 3, ...) through the full
    /// rx -> parse -> classify -> tx path; prints Mpps per port and cycles per packet.
    Fwd(FwdArgs),
    /// Check a configuration file (syntax, keys, values, cores) without running it.
    Check {
        /// The configuration file.
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Run the embedded default topology: a NIC between two peers on the in-memory wire,
    /// exercising ARP, ping, forwarding, malformed frames and host transmit; prints results.
    Demo(DemoArgs),
}

#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// The configuration file (TOML, see configs/).
    #[arg(short, long)]
    pub config: PathBuf,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(short, long)]
    pub duration: Option<f64>,
    /// Print statistics every this many seconds (overrides runtime.stats_interval_s).
    #[arg(long)]
    pub stats_interval: Option<f64>,
    /// Capture a port's traffic (both directions) to a pcap file: `--pcap p0=p0.pcap`.
    /// May be given several times.
    #[arg(long, value_name = "PORT=FILE", value_parser = parse_pcap)]
    pub pcap: Vec<(String, PathBuf)>,
    /// Do not pin lcore threads to their configured cores.
    #[arg(long)]
    pub no_pin: bool,
    /// At the end, also print each DPDK port's non-zero extended statistics (xstats).
    #[arg(long)]
    pub xstats: bool,
    /// DPDK EAL arguments (after `--`), appended to the configuration's eal.args.
    #[arg(last = true, value_name = "EAL ARGS")]
    pub eal: Vec<String>,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct FwdArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Frame the DPDK mempools are pre-filled with, so that PMDs that do not write packet
    /// data (net_null) deliver real frames to parse: `udp` (64-byte UDP/IPv4) or `none`.
    #[arg(long, default_value = "udp")]
    template: String,
    /// For in-memory wire ports: frame size the built-in generator sends.
    #[arg(long, default_value_t = 64)]
    frame_size: usize,
    /// Forward without parsing, like testpmd's io mode: a control that shows what the loop
    /// and the port layer cost without the NIC pipeline.
    #[arg(long)]
    io: bool,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Frames the demo forwards from one peer to the other.
    #[arg(long, default_value_t = 20_000)]
    frames: u32,
    /// Also run the DPDK forwarding benchmark on net_null vdevs for this many seconds
    /// (needs a build with the `dpdk` feature; 0: skip).
    #[arg(long, default_value_t = 0.0)]
    dpdk_seconds: f64,
}

fn parse_pcap(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((port, file)) if !port.is_empty() && !file.is_empty() => {
            Ok((port.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("expected PORT=FILE, like p0=p0.pcap, got {s:?}")),
    }
}

fn secs(v: Option<f64>, what: &str) -> Result<Option<Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok((s > 0.0).then(|| Duration::from_secs_f64(s))),
        Some(s) => Err(format!(
            "{what}: expected a number of seconds >= 0, got {s}"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| cli.log.clone());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.cmd {
        Cmd::Run(a) => topo::run(&a.common, dataplane::lcore::Mode::Nic, None, 64),
        Cmd::Fwd(a) => {
            let template = match a.template.as_str() {
                "udp" => Some(topo::template_frame(64)),
                "none" => None,
                other => {
                    eprintln!("nicemu: --template: unknown {other:?}, expected udp or none");
                    return ExitCode::from(2);
                }
            };
            let mode = if a.io {
                dataplane::lcore::Mode::Io
            } else {
                dataplane::lcore::Mode::Forward
            };
            topo::run(&a.common, mode, template, a.frame_size)
        }
        Cmd::Check { config } => topo::check(&config),
        Cmd::Demo(a) => demo::run(a.frames, a.dpdk_seconds),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nicemu: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "dpdk")]
mod dpdk;

/// The DPDK part of `nicemu demo`.
#[cfg(feature = "dpdk")]
fn dpdk_demo(secs: f64) -> Result<(), String> {
    dpdk::demo(secs)
}

/// The DPDK part of `nicemu demo`.
#[cfg(not(feature = "dpdk"))]
fn dpdk_demo(_: f64) -> Result<(), String> {
    Err(
        "--dpdk-seconds needs nicemu built with the dpdk feature (cargo build --features dpdk)"
            .into(),
    )
}
