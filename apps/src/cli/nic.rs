//! The subcommands that bring the NIC up on a configuration: `run`, `fwd`, `check` and
//! `demo`, with their arguments (`CommonArgs`: what every process on DPDK ports takes).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::{demo, topo};

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
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug)]
pub struct FwdArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Frame the DPDK mempools are pre-filled with, so that PMDs that do not write packet
    /// data (net_null) deliver real frames to parse: `udp` (64-byte UDP/IPv4), `tcp` (66-byte
    /// TCP ACK with timestamps) or `none`.
    #[arg(long, default_value = "udp")]
    pub template: String,
    /// Splice translation instead of forwarding (AccelTCP §4.3): the tcp template, two
    /// spliced pairs installed that cover it, every frame looked up and translated by the
    /// splice offload and sent out of the pair's other port.
    #[arg(long)]
    pub splice: bool,
    /// With --splice: the installed pairs cover other 4-tuples than the frames', so every
    /// frame misses the splice table and takes the general path (to the host, dropped and
    /// counted without one): what a segment of no pair pays while pairs are installed.
    #[arg(long, requires = "splice")]
    pub splice_miss: bool,
    /// For in-memory wire ports: frame size the built-in generator sends.
    #[arg(long, default_value_t = 64)]
    pub frame_size: usize,
    /// Forward without parsing, like testpmd's io mode: a control that shows what the loop
    /// and the port layer cost without the NIC pipeline.
    #[arg(long)]
    pub io: bool,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Frames the demo forwards from one peer to the other.
    #[arg(long, default_value_t = 20_000)]
    pub frames: u32,
    /// Also run the DPDK forwarding benchmark on net_null vdevs for this many seconds
    /// (needs a build with the `dpdk` feature; 0: skip).
    #[arg(long, default_value_t = 0.0)]
    pub dpdk_seconds: f64,
}

/// `nicemu check`'s arguments.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The configuration file.
    #[arg(short, long)]
    pub config: PathBuf,
}

/// `nicemu run`.
pub fn run(a: &RunArgs) -> Result<(), String> {
    topo::run(&a.common, dataplane::lcore::Mode::Nic, None, 64, Vec::new())
}

/// `nicemu fwd`.
pub fn fwd(a: &FwdArgs) -> Result<(), String> {
    let template = match a.template.as_str() {
        _ if a.splice => Some(topo::tcp_template_frame()),
        "udp" => Some(topo::template_frame(64)),
        "tcp" => Some(topo::tcp_template_frame()),
        "none" => None,
        other => {
            return Err(format!(
                "--template: unknown {other:?}, expected udp, tcp or none"
            ))
        }
    };
    let mode = if a.splice {
        dataplane::lcore::Mode::Nic
    } else if a.io {
        dataplane::lcore::Mode::Io
    } else {
        dataplane::lcore::Mode::Forward
    };
    let pairs = match (a.splice, a.splice_miss) {
        (true, false) => topo::splice_bench_pairs(),
        (true, true) => topo::splice_miss_pairs(),
        _ => Vec::new(),
    };
    topo::run(&a.common, mode, template, a.frame_size, pairs)
}

/// `nicemu check`.
pub fn check(a: &CheckArgs) -> Result<(), String> {
    topo::check(&a.config)
}

/// `nicemu demo`.
pub fn demo(a: &DemoArgs) -> Result<(), String> {
    demo::run(a.frames, a.dpdk_seconds)
}

/// `--pcap PORT=FILE`.
fn parse_pcap(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((port, file)) if !port.is_empty() && !file.is_empty() => {
            Ok((port.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("expected PORT=FILE, like p0=p0.pcap, got {s:?}")),
    }
}

/// `v` seconds as a duration (0 or none: none); an error naming `what` otherwise.
pub fn secs(v: Option<f64>, what: &str) -> Result<Option<Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok((s > 0.0).then(|| Duration::from_secs_f64(s))),
        Some(s) => Err(format!(
            "{what}: expected a number of seconds >= 0, got {s}"
        )),
    }
}

/// The DPDK part of `nicemu demo`.
#[cfg(feature = "dpdk")]
pub fn dpdk_demo(secs: f64) -> Result<(), String> {
    crate::dpdk::demo(secs)
}

/// The DPDK part of `nicemu demo`.
#[cfg(not(feature = "dpdk"))]
pub fn dpdk_demo(_: f64) -> Result<(), String> {
    Err(
        "--dpdk-seconds needs nicemu built with the dpdk feature (cargo build --features dpdk)"
            .into(),
    )
}
