//! `nicemu bench`: the benchmarks' subcommands, their arguments, and how each runs and
//! writes its table, JSON and plots.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Persistent-connection echo: host CPU ns per transaction (host only, and host + the
    /// emulated NIC's work) and transactions/s of the nicemu host stack, a smoltcp server and
    /// a Linux kernel epoll server, side by side.
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
    Tonic(TonicBenchArgs),
    /// The timer bitmap wheel (AccelTCP §4.2) against the Tonic rate timers' linked-list
    /// wheel: ns per arm, re-arm, disarm and per-slot expiry scan, side by side.
    Wheel(WheelArgs),
    /// The kernel epoll echo server `bench echo` runs in its namespace (internal).
    #[command(hide = true)]
    KernelEchoServer(KernelEchoServerArgs),
}

/// Runs `nicemu bench <cmd>`.
pub fn run(cmd: BenchCmd) -> Result<(), String> {
    match cmd {
        BenchCmd::Echo(a) => bench_echo(a),
        BenchCmd::Kv(a) => bench_kv(a),
        BenchCmd::Proxy(a) => bench_proxy(a),
        BenchCmd::Peers(a) => bench_peers(a),
        BenchCmd::Tonic(a) => {
            let opts = dataplane::tonic::bench::BenchOptions {
                ack_every: a.ack_every,
                memory_order: a.memory_order,
                burst: a.burst,
            };
            apps::tonic_cmd::bench(&a.module, &a.flows, a.seconds, opts)
        }
        BenchCmd::Wheel(a) => {
            let opts = apps::bench::WheelBenchOpts {
                ids: a.ids,
                slots: a.slots,
                reps: a.reps,
                threads: a.threads,
                ..Default::default()
            };
            apps::bench::wheel(&opts).map(|r| print!("{r}"))
        }
        BenchCmd::KernelEchoServer(a) => apps::bench::kernel_echo_server(a.port, a.core),
    }
}

#[derive(Args, Debug)]
pub struct TonicBenchArgs {
    /// The module.
    #[arg(long, default_value = "newreno")]
    pub module: String,
    /// Active flow counts, comma-separated.
    #[arg(long, default_value = "1024,65536,1048576", value_delimiter = ',')]
    pub flows: Vec<usize>,
    /// Seconds per flow count.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// The receiver acknowledges every n-th segment (1: every segment; 2: delayed ACKs).
    #[arg(long, default_value_t = 1)]
    pub ack_every: u32,
    /// Round robin visits flows in memory order (a best case the CPU's prefetchers
    /// follow) instead of the default seeded random order.
    #[arg(long)]
    pub memory_order: bool,
    /// Decisions per burst: `next_segments` and `incoming_acks` take this many at once, as
    /// a NIC lcore's tx burst (1: one `next_segment` and one `incoming` call per decision).
    #[arg(long, default_value_t = dataplane::tonic::bench::DEFAULT_BURST)]
    pub burst: usize,
}

#[derive(Args, Debug)]
pub struct WheelArgs {
    /// Registered flow ids.
    #[arg(long, default_value_t = 1 << 20)]
    pub ids: usize,
    /// Slots of both wheels (a power of two).
    #[arg(long, default_value_t = 1024)]
    pub slots: usize,
    /// Repetitions (the report gives the median).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Also time arm, re-arm and disarm from this many threads at once on one wheel.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

#[derive(Args, Debug)]
pub struct KernelEchoServerArgs {
    /// TCP port to listen on.
    #[arg(long)]
    pub port: u16,
    /// Core to pin to.
    #[arg(long)]
    pub core: Option<usize>,
}

#[derive(Args, Debug)]
pub struct EchoArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 1024)]
    pub conns: usize,
    /// Transactions per connection: 0 keeps connections open; n closes each after n and
    /// opens a new one (1: short-lived connections, AccelTCP Table 3).
    #[arg(long, default_value_t = 0)]
    pub per_conn: u32,
    /// With --per-conn 1: the nicemu servers close each connection right after the echo
    /// (the server ends short connections) instead of after the client's FIN.
    #[arg(long)]
    pub server_closes: bool,
    /// Request size in bytes.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Sweep message sizes, comma-separated (e.g. 64,256,1024): the whole benchmark runs once
    /// per size (AccelTCP Figure 11's sweep); replaces --size.
    #[arg(long, value_delimiter = ',', conflicts_with = "size")]
    pub sizes: Vec<usize>,
    /// Measured seconds per server per round.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Rounds (each runs every server once; the order rotates).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Servers to compare, comma-separated: nicemu, nicemu-setup (AccelTCP's setup offload),
    /// nicemu-offload (setup and teardown offloads), nicemu-quasi (the same with quasi-TCBs,
    /// AccelTCP §5.2), smoltcp, smoltcp-csum-offload (smoltcp with its checksums done by its
    /// device, timed as NIC work, as nicemu's NIC does them), kernel.
    #[arg(long, default_value = "nicemu,smoltcp,kernel")]
    pub servers: String,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.5)]
    pub warmup: f64,
    #[command(flatten)]
    pub out: BenchOut,
}

/// Where a benchmark writes its results besides the table.
#[derive(Args, Debug)]
pub struct BenchOut {
    /// Also write every measured window and the medians to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for the SVG plots (default: target/nicemu-bench/<bench> under the current
    /// directory when it has a target/, else nicemu-bench/<bench>).
    #[arg(long, value_name = "DIR")]
    pub plot_dir: Option<PathBuf>,
    /// Write no plots.
    #[arg(long, conflicts_with = "plot_dir")]
    pub no_plots: bool,
}

#[derive(Args, Debug)]
pub struct KvArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 1024)]
    pub conns: usize,
    /// Value size in bytes of the SETs (and GETs) (AccelTCP Table 4's workload: 2).
    #[arg(long, default_value_t = 2)]
    pub size: usize,
    /// Rows, comma-separated: requests per connection (1 or `short`: a new connection per
    /// request, Table 4's case; 0 or `persistent`).
    #[arg(long, default_value = "short,persistent")]
    pub per_conn: String,
    /// Server variants, comma-separated: nicemu (no offload), nicemu-setup (AccelTCP's setup
    /// offload), nicemu-offload (setup and teardown offloads), nicemu-quasi (the same with
    /// quasi-TCBs, AccelTCP §5.2).
    #[arg(
        long,
        default_value = "nicemu,nicemu-setup,nicemu-offload,nicemu-quasi"
    )]
    pub servers: String,
    /// Measured seconds per variant per round.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Rounds (each runs every variant once per row; the order rotates).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.5)]
    pub warmup: f64,
    #[command(flatten)]
    pub out: BenchOut,
}

#[derive(Args, Debug)]
pub struct ProxyBenchArgs {
    /// Client connections in flight.
    #[arg(long, default_value_t = 256)]
    pub conns: usize,
    /// Message (HTTP response body) sizes in bytes, comma-separated.
    #[arg(long, default_value = "64,1500", value_delimiter = ',')]
    pub sizes: Vec<usize>,
    /// Transactions per connection, comma-separated (0: persistent connections).
    #[arg(long, default_value = "1,8,128,0", value_delimiter = ',')]
    pub per_conn: Vec<u64>,
    /// Modes compared: splice (nsplice, the NIC relays), relay (the host relays).
    #[arg(long, default_value = "splice,relay")]
    pub modes: String,
    /// Back-end servers (round robin).
    #[arg(long, default_value_t = 2)]
    pub backends: usize,
    /// The proxy in http mode (every request parsed; only each connection's last exchange,
    /// marked `Connection: close` by the clients, spliced) instead of tunnel mode (AccelTCP's
    /// epproxy, Table 2's design: spliced after the first request head).
    #[arg(long)]
    pub http: bool,
    /// Measured seconds per configuration and mode.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 0.3)]
    pub warmup: f64,
    /// Rounds (medians over rounds; the mode order alternates).
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write SVG plots into this directory.
    #[arg(long)]
    pub plot_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PeersArgs {
    /// Workloads, comma-separated: kv, proxy, echo.
    #[arg(long, default_value = "kv,proxy,echo")]
    pub only: String,
    /// Rounds (each runs every server once; the order rotates).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Seconds of each wrk and loadgen run and of each redis-cli --latency sampling.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Requests of each redis-benchmark run (-n).
    #[arg(long, default_value_t = 20_000)]
    pub requests: u64,
    /// Client connections (redis-benchmark -c, wrk -c, loadgen --conns).
    #[arg(long, default_value_t = 50)]
    pub conns: usize,
    /// Directory with the shipped configurations (af-packet.toml, proxy.toml).
    #[arg(long, default_value = "configs")]
    pub config_dir: PathBuf,
    #[command(flatten)]
    pub out: BenchOut,
}

/// Stops `stop` on Ctrl-C (the benchmarks then clean up and fail).
pub fn stop_on_ctrl_c(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
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
