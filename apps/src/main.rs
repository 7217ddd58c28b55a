//! `nicemu`: the smart-NIC offload emulator's command line.
//!
//! Subcommands: `run` (bring the NIC up on the configured ports), `fwd` (forwarding
//! benchmark), `check` (validate a configuration), `demo` (the embedded default topology),
//! `proxy` (the HTTP/1.1 load balancer on the host stack, splicing on the NIC), `echo`,
//! `loadgen` and `kv` (the host applications as processes), `experiment` (the papers'
//! transport experiments in virtual time: CSV, SVG and report.md).
//! Everything after `--` goes to DPDK's EAL.

mod demo;
mod demo_tcp;
mod hostapps;
mod proxy_cmd;
mod report;
mod runtime;
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
    /// An HTTP/1.1 layer-7 load balancer on the host stack (AccelTCP's epproxy): reads each
    /// request head, picks a backend, forwards the head, then splices the two connections on
    /// the NIC (nsplice) or, with --no-splice, relays them on the host. Runs until Ctrl-C or
    /// --duration, then prints a summary. The configuration needs a `[proxy]` table.
    Proxy(proxy_cmd::ProxyArgs),
    /// An echo server on the host stack (AccelTCP's setup and teardown offloads unless
    /// --no-offload); the summary counts transactions as bytes echoed / --size.
    Echo(hostapps::EchoCmd),
    /// A load generator on the host stack: echo, HTTP GET or Redis SET+GET transactions
    /// over --conns connections, a progress line every second, then transactions/s, latency
    /// percentiles and errors by kind; exits non-zero when no transaction completed or any
    /// error happened.
    Loadgen(hostapps::LoadgenCmd),
    /// A Redis-compatible (RESP2) key-value server on the host stack, with AccelTCP's setup
    /// and teardown offloads unless --no-offload.
    Kv(hostapps::KvCmd),
    /// Check a configuration file (syntax, keys, values, cores) without running it.
    Check {
        /// The configuration file.
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Run the embedded default topology: a NIC between two peers on the in-memory wire,
    /// exercising ARP, ping, forwarding, malformed frames and host transmit; prints results.
    Demo(DemoArgs),
    /// Benchmarks: `bench echo` compares the host cost of a 64-byte echo on nicemu, smoltcp
    /// and the Linux kernel; `bench kv` runs the key-value server with and without the
    /// offloads; `bench tonic` measures Tonic's segment scheduling decisions per
    /// second; `bench wheel` times the timer bitmap wheel.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// List the Tonic protocol modules: built in, and loaded from shared libraries (--plugin,
    /// or `[tonic] plugins` of a configuration), with their credit scheme and per-flow state.
    Modules {
        /// A shared library with a module (the C ABI of offload_api::tonic_abi); repeatable.
        #[arg(long)]
        plugin: Vec<PathBuf>,
        /// Also load the plugins named in this configuration's `[tonic] plugins`.
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// Run a Tonic scenario (configs/tonic/*.toml) in virtual time: a sender engine with the
    /// scenario's module, a receiver and a bottleneck link; prints per-flow results and, with
    /// --csv, writes per-flow traces (window or rate, sequence numbers, retransmissions).
    Testbench {
        /// The scenario file.
        scenario: PathBuf,
        /// Directory for the CSV traces.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Also draw the traces as an SVG (window or rate, throughput, queue over time) in
        /// the --csv directory.
        #[arg(long, requires = "csv")]
        plot: bool,
        /// A shared library with a module the scenario may name; repeatable.
        #[arg(long)]
        plugin: Vec<PathBuf>,
    },
    /// Run one of the papers' transport experiments in virtual time (Tonic §6.2 and more):
    /// writes CSV traces, SVG plots and report.md into --out, prints the checks, and exits
    /// non-zero if one failed. `--list` shows them.
    Experiment {
        /// The experiment (see --list).
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// List the experiments.
        #[arg(long)]
        list: bool,
        /// Output directory (default: experiments/<name> under the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The reduced version (seconds in a debug build) that keeps the qualitative result.
        #[arg(long)]
        quick: bool,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCmd {
    /// Persistent-connection echo: host CPU ns per transaction and transactions/s of the
    /// nicemu host stack, a smoltcp server and a Linux kernel epoll server, side by side.
    /// The kernel server needs root and a build with the dpdk feature.
    Echo(EchoArgs),
    /// The key-value server (RESP2) under a Redis SET/GET load on the in-memory wire, with
    /// and without AccelTCP's offloads, one request per connection and persistent (AccelTCP
    /// Table 4's shape): requests/s, server host and NIC ns per request, PCIe link frames per
    /// request, latency p50/p99; a table, --json and SVG plots.
    Kv(KvArgs),
    /// The L7 proxy with the NIC's connection splicing vs relaying on the host (AccelTCP
    /// Table 2, Figures 12-13): host and NIC ns per proxied HTTP transaction, txn/s and PCIe
    /// frames, over message sizes and transactions per connection.
    Proxy(ProxyBenchArgs),
    /// End to end as users measure it: `nicemu kv`, `nicemu proxy` and `nicemu echo` with the
    /// shipped configurations against redis-server, HAProxy / nginx and a kernel epoll echo
    /// server, with redis-benchmark, redis-cli, wrk and `nicemu loadgen` as clients, in two
    /// network namespaces joined by a veth pair; rounds alternate the servers. Reports req/s,
    /// latency, the CPU of every process and softirq, and nicemu ÷ reference per round.
    /// Needs root and a build with the dpdk feature.
    Peers(PeersArgs),
    /// Tonic scheduling decisions per second on one core for several numbers of active
    /// flows (Tonic's hardware: one per 10 ns, at most 2,048 flows).
    Tonic {
        /// The module.
        #[arg(long, default_value = "newreno")]
        module: String,
        /// Active flow counts, comma-separated.
        #[arg(long, default_value = "1024,65536,1048576", value_delimiter = ',')]
        flows: Vec<usize>,
        /// Seconds per flow count.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// The receiver acknowledges every n-th segment (1: every segment; 2: delayed ACKs).
        #[arg(long, default_value_t = 1)]
        ack_every: u32,
        /// Round robin visits flows in memory order (a best case the CPU's prefetchers
        /// follow) instead of the default seeded random order.
        #[arg(long)]
        memory_order: bool,
    },
    /// The timer bitmap wheel (AccelTCP §4.2) against the Tonic rate timers' linked-list
    /// wheel: ns per arm, re-arm, disarm and per-slot expiry scan, side by side.
    Wheel {
        /// Registered flow ids.
        #[arg(long, default_value_t = 1 << 20)]
        ids: usize,
        /// Slots of both wheels (a power of two).
        #[arg(long, default_value_t = 1024)]
        slots: usize,
        /// Repetitions (the report gives the median).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Also time arm, re-arm and disarm from this many threads at once on one wheel.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// The kernel epoll echo server `bench echo` runs in its namespace (internal).
    #[command(hide = true)]
    KernelEchoServer {
        /// TCP port to listen on.
        #[arg(long)]
        port: u16,
        /// Core to pin to.
        #[arg(long)]
        core: Option<usize>,
    },
}

#[derive(Args, Debug)]
struct EchoArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 1024)]
    conns: usize,
    /// Transactions per connection: 0 keeps connections open; n closes each after n and
    /// opens a new one (1: short-lived connections, AccelTCP Table 3).
    #[arg(long, default_value_t = 0)]
    per_conn: u32,
    /// With --per-conn 1: the nicemu servers close each connection right after the echo
    /// (the server ends short connections) instead of after the client's FIN.
    #[arg(long)]
    server_closes: bool,
    /// Request size in bytes.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Sweep message sizes, comma-separated (e.g. 64,256,1024): the whole benchmark runs once
    /// per size (AccelTCP Figure 11's sweep); replaces --size.
    #[arg(long, value_delimiter = ',', conflicts_with = "size")]
    sizes: Vec<usize>,
    /// Measured seconds per server per round.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Rounds (each runs every server once; the order rotates).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Servers to compare, comma-separated: nicemu, nicemu-setup (AccelTCP's setup offload),
    /// nicemu-offload (setup and teardown offloads), nicemu-quasi (the same with quasi-TCBs,
    /// AccelTCP §5.2), smoltcp, kernel.
    #[arg(long, default_value = "nicemu,smoltcp,kernel")]
    servers: String,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    #[command(flatten)]
    out: BenchOut,
}

/// Where a benchmark writes its results besides the table.
#[derive(Args, Debug)]
struct BenchOut {
    /// Also write every measured window and the medians to this file as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Directory for the SVG plots (default: target/nicemu-bench/<bench> under the current
    /// directory when it has a target/, else nicemu-bench/<bench>).
    #[arg(long, value_name = "DIR")]
    plot_dir: Option<PathBuf>,
    /// Write no plots.
    #[arg(long, conflicts_with = "plot_dir")]
    no_plots: bool,
}

#[derive(Args, Debug)]
struct KvArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 1024)]
    conns: usize,
    /// Value size in bytes of the SETs (and GETs) (AccelTCP Table 4's workload: 2).
    #[arg(long, default_value_t = 2)]
    size: usize,
    /// Rows, comma-separated: requests per connection (1 or `short`: a new connection per
    /// request, Table 4's case; 0 or `persistent`).
    #[arg(long, default_value = "short,persistent")]
    per_conn: String,
    /// Server variants, comma-separated: nicemu (no offload), nicemu-setup (AccelTCP's setup
    /// offload), nicemu-offload (setup and teardown offloads), nicemu-quasi (the same with
    /// quasi-TCBs, AccelTCP §5.2).
    #[arg(
        long,
        default_value = "nicemu,nicemu-setup,nicemu-offload,nicemu-quasi"
    )]
    servers: String,
    /// Measured seconds per variant per round.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Rounds (each runs every variant once per row; the order rotates).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    #[command(flatten)]
    out: BenchOut,
}

#[derive(Args, Debug)]
struct ProxyBenchArgs {
    /// Client connections in flight.
    #[arg(long, default_value_t = 256)]
    conns: usize,
    /// Message (HTTP response body) sizes in bytes, comma-separated.
    #[arg(long, default_value = "64,1500", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Transactions per connection, comma-separated (0: persistent connections).
    #[arg(long, default_value = "1,8,128,0", value_delimiter = ',')]
    per_conn: Vec<u64>,
    /// Modes compared: splice (nsplice, the NIC relays), relay (the host relays).
    #[arg(long, default_value = "splice,relay")]
    modes: String,
    /// Back-end servers (round robin).
    #[arg(long, default_value_t = 2)]
    backends: usize,
    /// The proxy in http mode (every request parsed; only each connection's last exchange,
    /// marked `Connection: close` by the clients, spliced) instead of tunnel mode (AccelTCP's
    /// epproxy, Table 2's design: spliced after the first request head).
    #[arg(long)]
    http: bool,
    /// Measured seconds per configuration and mode.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.3)]
    warmup: f64,
    /// Rounds (medians over rounds; the mode order alternates).
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG plots into this directory.
    #[arg(long)]
    plot_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PeersArgs {
    /// Workloads, comma-separated: kv, proxy, echo.
    #[arg(long, default_value = "kv,proxy,echo")]
    only: String,
    /// Rounds (each runs every server once; the order rotates).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Seconds of each wrk and loadgen run and of each redis-cli --latency sampling.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Requests of each redis-benchmark run (-n).
    #[arg(long, default_value_t = 20_000)]
    requests: u64,
    /// Client connections (redis-benchmark -c, wrk -c, loadgen --conns).
    #[arg(long, default_value_t = 50)]
    conns: usize,
    /// Directory with the shipped configurations (af-packet.toml, proxy.toml).
    #[arg(long, default_value = "configs")]
    config_dir: PathBuf,
    #[command(flatten)]
    out: BenchOut,
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
    /// data (net_null) deliver real frames to parse: `udp` (64-byte UDP/IPv4), `tcp` (66-byte
    /// TCP ACK with timestamps) or `none`.
    #[arg(long, default_value = "udp")]
    template: String,
    /// Splice translation instead of forwarding (AccelTCP §4.3): the tcp template, two
    /// spliced pairs installed that cover it, every frame looked up and translated by the
    /// splice offload and sent out of the pair's other port.
    #[arg(long)]
    splice: bool,
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
        Cmd::Run(a) => topo::run(&a.common, dataplane::lcore::Mode::Nic, None, 64, false),
        Cmd::Fwd(a) => {
            let template = match a.template.as_str() {
                _ if a.splice => Some(topo::tcp_template_frame()),
                "udp" => Some(topo::template_frame(64)),
                "tcp" => Some(topo::tcp_template_frame()),
                "none" => None,
                other => {
                    eprintln!("nicemu: --template: unknown {other:?}, expected udp, tcp or none");
                    return ExitCode::from(2);
                }
            };
            let mode = if a.splice {
                dataplane::lcore::Mode::Nic
            } else if a.io {
                dataplane::lcore::Mode::Io
            } else {
                dataplane::lcore::Mode::Forward
            };
            topo::run(&a.common, mode, template, a.frame_size, a.splice)
        }
        Cmd::Check { config } => topo::check(&config),
        Cmd::Proxy(a) => proxy_cmd::run(&a),
        Cmd::Echo(a) => hostapps::echo(&a),
        Cmd::Loadgen(a) => hostapps::loadgen(&a),
        Cmd::Kv(a) => hostapps::kv(&a),
        Cmd::Demo(a) => demo::run(a.frames, a.dpdk_seconds),
        Cmd::Bench(BenchCmd::Echo(a)) => bench_echo(a),
        Cmd::Bench(BenchCmd::Kv(a)) => bench_kv(a),
        Cmd::Bench(BenchCmd::Proxy(a)) => bench_proxy(a),
        Cmd::Bench(BenchCmd::Peers(a)) => bench_peers(a),
        Cmd::Bench(BenchCmd::Tonic {
            module,
            flows,
            seconds,
            ack_every,
            memory_order,
        }) => {
            let opts = dataplane::tonic::bench::BenchOptions {
                ack_every,
                memory_order,
            };
            apps::tonic_cmd::bench(&module, &flows, seconds, opts)
        }
        Cmd::Bench(BenchCmd::Wheel {
            ids,
            slots,
            reps,
            threads,
        }) => {
            let opts = apps::bench::WheelBenchOpts {
                ids,
                slots,
                reps,
                threads,
                ..Default::default()
            };
            apps::bench::wheel(&opts).map(|r| print!("{r}"))
        }
        Cmd::Modules { plugin, config } => modules(plugin, config),
        Cmd::Testbench {
            scenario,
            csv,
            plot,
            plugin,
        } => apps::tonic_cmd::testbench(&scenario, csv.as_deref(), plot, &plugin),
        Cmd::Experiment {
            name,
            list,
            out,
            quick,
            seed,
        } => match (list, name) {
            (true, _) => {
                print!("{}", apps::experiment::cli::list());
                Ok(())
            }
            (false, Some(n)) => apps::experiment::cli::run(&n, out, quick, seed),
            (false, None) => Err("name an experiment, or --list".into()),
        },
        Cmd::Bench(BenchCmd::KernelEchoServer { port, core }) => {
            apps::bench::kernel_echo_server(port, core)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nicemu: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `nicemu modules`: the CLI's plugins plus those of the configuration, if given.
fn modules(mut plugins: Vec<PathBuf>, config: Option<PathBuf>) -> Result<(), String> {
    if let Some(path) = config {
        let cfg = dataplane::config::Config::load(&path).map_err(|e| e.to_string())?;
        plugins.extend(cfg.tonic.plugins.iter().map(PathBuf::from));
    }
    apps::tonic_cmd::modules(&plugins)
}

/// Stops `stop` on Ctrl-C (the benchmarks then clean up and fail).
fn stop_on_ctrl_c(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    if let Err(e) =
        ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed))
    {
        eprintln!("nicemu: cannot install the Ctrl-C handler: {e}");
    }
}

/// Writes the plots (unless --no-plots) and the JSON (with the plots' paths) of a benchmark,
/// and says where they went.
fn write_outputs(
    out: &BenchOut,
    bench: &str,
    json: apps::json::Json,
    plots: impl FnOnce(&std::path::Path) -> Result<Vec<PathBuf>, String>,
) -> Result<(), String> {
    let mut written = Vec::new();
    if !out.no_plots {
        let dir = out
            .plot_dir
            .clone()
            .unwrap_or_else(|| apps::bench::default_plot_dir(bench));
        written = plots(&dir)?;
        println!();
        println!("plots written to {}/:", dir.display());
        for f in &written {
            println!("  {}", f.display());
        }
    }
    if let Some(path) = &out.json {
        let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        apps::json::write_file(path, &json.with("plots", paths))?;
        println!("results written to {} (JSON)", path.display());
    }
    Ok(())
}

/// `nicemu bench echo`: runs the benchmark (Ctrl-C stops it and cleans up) once per message
/// size, prints each table, and writes the plots and JSON.
fn bench_echo(a: EchoArgs) -> Result<(), String> {
    let opts = apps::bench::EchoBenchOpts {
        conns: a.conns,
        per_conn: a.per_conn,
        server_closes: a.server_closes,
        size: a.size,
        seconds: a.seconds,
        rounds: a.rounds,
        servers: apps::bench::parse_servers(&a.servers)?,
        warmup_seconds: a.warmup,
        ..Default::default()
    };
    stop_on_ctrl_c(opts.stop.clone());
    let sizes = if a.sizes.is_empty() {
        vec![a.size]
    } else {
        a.sizes.clone()
    };
    let mut reports = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let r = apps::bench::echo(&apps::bench::EchoBenchOpts {
            size,
            ..opts.clone()
        })?;
        print!("{r}");
        reports.push(r);
    }
    write_outputs(&a.out, "echo", apps::bench::echo_json(&reports), |dir| {
        apps::bench::echo_plots(&reports, dir)
    })
}

/// `nicemu bench kv`: runs the key-value benchmark, prints its table, writes plots and JSON.
fn bench_kv(a: KvArgs) -> Result<(), String> {
    let opts = apps::bench::KvBenchOpts {
        conns: a.conns,
        size: a.size,
        rows: apps::bench::kv::parse_rows(&a.per_conn)?,
        servers: apps::bench::parse_servers(&a.servers)?,
        seconds: a.seconds,
        rounds: a.rounds,
        warmup_seconds: a.warmup,
        ..Default::default()
    };
    stop_on_ctrl_c(opts.stop.clone());
    let r = apps::bench::kv(&opts)?;
    print!("{r}");
    write_outputs(&a.out, "kv", r.json(), |dir| r.plots(dir))
}

/// `nicemu bench peers`: runs the end-to-end comparison (Ctrl-C stops it and cleans up),
/// prints its table, writes plots and JSON.
fn bench_peers(a: PeersArgs) -> Result<(), String> {
    let opts = apps::bench::PeersOpts {
        only: apps::bench::parse_workloads(&a.only)?,
        rounds: a.rounds,
        seconds: a.seconds,
        requests: a.requests,
        conns: a.conns,
        config_dir: a.config_dir,
        exe: std::env::current_exe().map_err(|e| format!("own executable: {e}"))?,
        ..Default::default()
    };
    stop_on_ctrl_c(opts.stop.clone());
    let r = apps::bench::peers(&opts)?;
    print!("{r}");
    write_outputs(&a.out, "peers", r.json(), |dir| r.plots(dir))
}

/// `nicemu bench proxy`: runs the sweep (Ctrl-C stops it), prints the report, writes the
/// JSON and the plots when asked.
fn bench_proxy(a: ProxyBenchArgs) -> Result<(), String> {
    let opts = apps::bench::ProxyBenchOpts {
        conns: a.conns,
        sizes: a.sizes,
        per_conn: a.per_conn,
        modes: apps::bench::parse_modes(&a.modes)?,
        backends: a.backends,
        seconds: a.seconds,
        warmup_seconds: a.warmup,
        rounds: a.rounds,
        http: a.http,
        ..Default::default()
    };
    let stop = opts.stop.clone();
    if let Err(e) =
        ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed))
    {
        eprintln!("nicemu: cannot install the Ctrl-C handler: {e}");
    }
    let report = apps::bench::proxy(&opts)?;
    print!("{report}");
    if let Some(path) = &a.json {
        std::fs::write(path, report.to_json()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(dir) = &a.plot_dir {
        for p in report.write_plots(dir)? {
            eprintln!("bench: wrote {}", p.display());
        }
    }
    Ok(())
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
