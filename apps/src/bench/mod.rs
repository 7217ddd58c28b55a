//! `nicemu bench echo`: the host-cost comparison of AccelTCP §6 (BENCHMARKS.md, "Host stack");
//! `nicemu bench kv` ([`kv`]): the key-value server of AccelTCP §6.2 on the in-memory wire;
//! `nicemu bench peers` ([`peers`]): the shipped configurations against redis-server, HAProxy,
//! nginx and a kernel echo server, with the clients people use.
//!
//! A persistent-connection echo: `conns` connections, each with one `size`-byte request
//! outstanding; a transaction is one request echoed back in full. The client is always the
//! same nicemu node (host stack + [`crate::echo::EchoClient`] + NIC lcore). Three servers:
//!
//! - **nicemu**: a nicemu node (NIC lcore + host context + [`crate::echo::EchoServer`]) on
//!   the other end of the in-memory wire;
//! - **smoltcp**: a smoltcp interface with one socket per connection on the same wire;
//! - **kernel** (feature `dpdk`): the Linux kernel's TCP stack with an epoll echo server in a
//!   network namespace behind a veth pair; the client's NIC runs on DPDK's net_af_packet.
//!
//! The in-memory rounds run on one thread that steps client host, client NIC, server NIC and
//! server host round-robin, and time (TSC) only the server host's calls: for nicemu,
//! `EchoServer::step` (its `epoll_wait` runs the stack); for smoltcp, `Interface::poll` plus
//! the echo loop over the sockets. For the kernel, see [`kernel`]. Host cost per transaction
//! is that time divided by the transactions completed in the measured window. Rounds
//! alternate the servers (the order rotates each round), so the ratios are side by side.

mod echo_out;
pub mod http_backend;
mod inmem;
#[cfg(feature = "dpdk")]
mod kernel;
// Raw epoll and socket calls for the kernel baseline (SAFETY notes at each call).
#[allow(unsafe_code)]
mod kernel_server;
pub mod kv;
pub mod peers;
// clock_gettime and sysconf (SAFETY notes at each call).
#[allow(unsafe_code)]
mod procstat;
pub mod proxy;
pub mod smol_echo;
mod wheel;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use echo_out::{default_plot_dir, echo_json, echo_plots};
pub use kernel_server::kernel_echo_server;
pub use kv::{kv, KvBenchOpts, KvBenchReport};
pub use peers::{parse_workloads, peers, PeersOpts, PeersReport};
pub use proxy::{parse_modes, proxy, ProxyBenchOpts, ProxyBenchReport, RelayMode};
pub use wheel::{wheel, WheelBenchOpts};

/// Echo port on the server.
const PORT: u16 = 7007;
/// The client node's address (198.18.0.0/15 is reserved for benchmarks, RFC 2544).
const CLIENT_IP: [u8; 4] = [198, 18, 0, 1];
/// The server's address.
const SERVER_IP: [u8; 4] = [198, 18, 0, 2];
const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xbe, 0x01];
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xbe, 0x02];

/// One of the compared servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Server {
    /// The nicemu host stack behind its emulated NIC.
    Nicemu,
    /// The same with AccelTCP's connection-setup offload (§4.1: SYN cookies on the NIC).
    NicemuSetup,
    /// The same with the setup and teardown offloads (§4.1, §4.2), full TCBs.
    NicemuOffload,
    /// The same with quasi-TCBs (§5.2: NIC-made connections start as a small record that
    /// grows into a full TCB only when needed).
    NicemuQuasi,
    /// smoltcp on the same in-memory wire.
    Smoltcp,
    /// The Linux kernel's stack in a namespace (needs the `dpdk` feature).
    Kernel,
}

impl Server {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Server::Nicemu => "nicemu",
            Server::NicemuSetup => "nicemu-setup",
            Server::NicemuOffload => "nicemu-offload",
            Server::NicemuQuasi => "nicemu-quasi",
            Server::Smoltcp => "smoltcp",
            Server::Kernel => "kernel",
        }
    }
}

/// Parses a comma-separated server list (`nicemu,smoltcp,kernel`).
pub fn parse_servers(s: &str) -> Result<Vec<Server>, String> {
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let srv = match name {
            "nicemu" => Server::Nicemu,
            "nicemu-setup" => Server::NicemuSetup,
            "nicemu-offload" => Server::NicemuOffload,
            "nicemu-quasi" => Server::NicemuQuasi,
            "smoltcp" => Server::Smoltcp,
            "kernel" => Server::Kernel,
            other => {
                return Err(format!(
                    "unknown server {other:?}, expected nicemu, nicemu-setup, nicemu-offload, \
                     nicemu-quasi, smoltcp or kernel"
                ))
            }
        };
        if !v.contains(&srv) {
            v.push(srv);
        }
    }
    if v.is_empty() {
        return Err("no server given".into());
    }
    Ok(v)
}

/// Settings of the echo benchmark.
#[derive(Clone, Debug)]
pub struct EchoBenchOpts {
    /// Concurrent connections.
    pub conns: usize,
    /// Transactions per connection: 0 keeps connections open (persistent); n closes each
    /// after n transactions and opens a new one at once (1: short-lived, AccelTCP Table 3).
    pub per_conn: u32,
    /// With `per_conn` 1: the nicemu server closes each connection right after its echo
    /// (instead of after the client's FIN).
    pub server_closes: bool,
    /// Request (and echo) size in bytes.
    pub size: usize,
    /// Measured seconds per server per round.
    pub seconds: f64,
    /// Rounds; each runs every server once, in an order that rotates.
    pub rounds: u32,
    /// The servers to compare.
    pub servers: Vec<Server>,
    /// Seconds of traffic before each measured window (after all connections are up).
    pub warmup_seconds: f64,
    /// Cores for (the benchmark thread, the kernel server); none: the first two this
    /// process may run on.
    pub cores: Option<(usize, usize)>,
    /// Set to stop early (Ctrl-C); the benchmark then cleans up and fails.
    pub stop: Arc<AtomicBool>,
}

impl Default for EchoBenchOpts {
    fn default() -> Self {
        EchoBenchOpts {
            conns: 1024,
            per_conn: 0,
            server_closes: false,
            size: 64,
            seconds: 5.0,
            rounds: 3,
            servers: vec![Server::Nicemu, Server::Smoltcp, Server::Kernel],
            warmup_seconds: 0.5,
            cores: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl EchoBenchOpts {
    fn check_stop(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            Err("interrupted".into())
        } else {
            Ok(())
        }
    }

    fn validate(&self) -> Result<(), String> {
        if !(1..=64_000).contains(&self.conns) {
            return Err(format!("--conns {}: expected 1..=64000", self.conns));
        }
        if !(1..=16_384).contains(&self.size) {
            return Err(format!("--size {}: expected 1..=16384", self.size));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(format!("--seconds {}: expected (0, 3600]", self.seconds));
        }
        if !(self.warmup_seconds.is_finite() && (0.0..=60.0).contains(&self.warmup_seconds)) {
            return Err(format!(
                "warm-up {} s: expected [0, 60]",
                self.warmup_seconds
            ));
        }
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        if self.servers.is_empty() {
            return Err("no server given".into());
        }
        if self.server_closes && self.per_conn != 1 {
            return Err("--server-closes needs --per-conn 1".into());
        }
        if self.per_conn != 0 && self.servers.contains(&Server::Smoltcp) {
            return Err(
                "--per-conn: the smoltcp server keeps one socket per persistent connection; \
                 leave it out of --servers for short-lived connections"
                    .into(),
            );
        }
        Ok(())
    }
}

/// True once the client's load is fully up: every persistent connection established, or,
/// with short-lived connections, as many transactions done as connections in flight.
fn warmed(app: &crate::echo::EchoClient, conns: usize, per_conn: u32) -> bool {
    if per_conn == 0 {
        app.connected() == conns
    } else {
        app.transactions >= conns as u64
    }
}

/// A point in time that is `secs` from now.
struct Deadline(Instant);

impl Deadline {
    fn after(secs: f64) -> Deadline {
        Deadline(Instant::now() + Duration::from_secs_f64(secs))
    }
    fn passed(&self) -> bool {
        Instant::now() >= self.0
    }
}

/// What crossed the emulated PCIe link of the nicemu server, per transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkPerTxn {
    /// Frames NIC → host.
    pub to_host_packets: f64,
    /// Bytes NIC → host.
    pub to_host_bytes: f64,
    /// Frames host → NIC.
    pub to_nic_packets: f64,
    /// Bytes host → NIC.
    pub to_nic_bytes: f64,
    /// Copies the link made (DMA model).
    pub dma_copies: f64,
}

/// One server's measured window in one round.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The server.
    pub server: Server,
    /// Round number (0-based).
    pub round: u32,
    /// Transactions completed in the window.
    pub transactions: u64,
    /// Length of the window, seconds.
    pub wall_s: f64,
    /// Host CPU nanoseconds attributed to the server over the window.
    pub host_ns: f64,
    /// In-memory servers: the part of `host_ns` spent in polls that found nothing to do.
    pub host_idle_ns: Option<f64>,
    /// Kernel only: the part spent by the server process itself.
    pub host_ns_process: Option<f64>,
    /// nicemu only: nanoseconds in the server's NIC lcore (the emulated NIC, not host cost).
    pub nic_ns: Option<f64>,
    /// nicemu only: PCIe link crossings per transaction.
    pub link: Option<LinkPerTxn>,
    /// Free-form detail.
    pub note: Option<String>,
}

impl Measurement {
    /// Transactions per second over the window.
    pub fn tps(&self) -> f64 {
        self.transactions as f64 / self.wall_s.max(1e-9)
    }

    /// Host CPU nanoseconds per transaction.
    pub fn host_ns_per_txn(&self) -> f64 {
        self.host_ns / self.transactions.max(1) as f64
    }

    /// Kernel only: the server process's own nanoseconds per transaction.
    pub fn process_ns_per_txn(&self) -> Option<f64> {
        self.host_ns_process
            .map(|p| p / self.transactions.max(1) as f64)
    }
}

/// One server's results over all rounds.
#[derive(Clone, Debug)]
pub struct ServerSummary {
    /// The server.
    pub server: Server,
    /// Median transactions per second.
    pub tps: f64,
    /// Median host CPU nanoseconds per transaction.
    pub host_ns_per_txn: f64,
    /// Kernel only: median of the process-only part.
    pub process_ns_per_txn: Option<f64>,
    /// Median over rounds of (this server's host ns/txn ÷ nicemu's in the same round).
    pub vs_nicemu: Option<f64>,
    /// The same with the kernel's process-only cost.
    pub process_vs_nicemu: Option<f64>,
}

/// Everything `nicemu bench echo` measured.
#[derive(Clone, Debug)]
pub struct EchoBenchReport {
    /// The settings.
    pub opts: EchoBenchOpts,
    /// TSC frequency used to convert cycles to nanoseconds.
    pub tsc_hz: u64,
    /// Every measured window, in the order run.
    pub rounds: Vec<Measurement>,
    /// Servers not run, with the reason.
    pub skipped: Vec<(Server, String)>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl EchoBenchReport {
    fn of(&self, s: Server) -> impl Iterator<Item = &Measurement> {
        self.rounds.iter().filter(move |m| m.server == s)
    }

    fn nicemu_in(&self, round: u32) -> Option<f64> {
        self.rounds
            .iter()
            .find(|m| m.server == Server::Nicemu && m.round == round)
            .map(Measurement::host_ns_per_txn)
    }

    /// Medians per server, in the order the servers were given.
    pub fn summary(&self) -> Vec<ServerSummary> {
        let mut out = Vec::new();
        for &s in &self.opts.servers {
            if self.of(s).next().is_none() {
                continue;
            }
            let ratio = |f: &dyn Fn(&Measurement) -> Option<f64>| {
                median(
                    self.of(s)
                        .filter_map(|m| Some(f(m)? / self.nicemu_in(m.round)?))
                        .collect(),
                )
            };
            out.push(ServerSummary {
                server: s,
                tps: median(self.of(s).map(Measurement::tps).collect()).unwrap_or(0.0),
                host_ns_per_txn: median(self.of(s).map(Measurement::host_ns_per_txn).collect())
                    .unwrap_or(0.0),
                process_ns_per_txn: median(
                    self.of(s)
                        .filter_map(Measurement::process_ns_per_txn)
                        .collect(),
                ),
                vs_nicemu: ratio(&|m| Some(m.host_ns_per_txn())),
                process_vs_nicemu: ratio(&|m| m.process_ns_per_txn()),
            });
        }
        out
    }

    /// Whether nicemu's host cost is at least `factor` times lower than every other server's
    /// (using the kernel's process-only cost, the conservative one); none without nicemu or
    /// without another server.
    pub fn target_met(&self, factor: f64) -> Option<bool> {
        let sum = self.summary();
        let others: Vec<f64> = sum
            .iter()
            .filter(|s| s.server != Server::Nicemu)
            .filter_map(|s| s.process_vs_nicemu.or(s.vs_nicemu))
            .collect();
        if others.is_empty() || !sum.iter().any(|s| s.server == Server::Nicemu) {
            return None;
        }
        Some(others.iter().all(|&r| r >= factor))
    }
}

impl fmt::Display for EchoBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        let kind = match o.per_conn {
            0 => "persistent connections".to_string(),
            1 => "connections in flight, one transaction each".to_string(),
            n => format!("connections in flight, {n} transactions each"),
        };
        writeln!(
            f,
            "echo benchmark: {} {kind}, {}-byte requests, {} round(s) of {} s \
             per server (order rotates each round), TSC {:.3} GHz",
            o.conns,
            o.size,
            o.rounds,
            o.seconds,
            self.tsc_hz as f64 / 1e9
        )?;
        for (s, why) in &self.skipped {
            writeln!(f, "{}: skipped: {why}", s.name())?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<6} {:<14} {:>12} {:>12} {:>12}  detail",
            "round", "server", "transactions", "txn/s", "host ns/txn"
        )?;
        for m in &self.rounds {
            let mut detail = m.note.clone().unwrap_or_default();
            if let Some(l) = &m.link {
                detail += &format!(
                    "; NIC lcore {:.0} ns/txn; PCIe link per txn: NIC->host {:.2} pkts {:.0} B, \
                     host->NIC {:.2} pkts {:.0} B, {:.2} DMA copies",
                    m.nic_ns.unwrap_or(0.0) / m.transactions.max(1) as f64,
                    l.to_host_packets,
                    l.to_host_bytes,
                    l.to_nic_packets,
                    l.to_nic_bytes,
                    l.dma_copies
                );
            }
            writeln!(
                f,
                "{:<6} {:<14} {:>12} {:>12.0} {:>12.0}  {detail}",
                m.round + 1,
                m.server.name(),
                m.transactions,
                m.tps(),
                m.host_ns_per_txn()
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "summary (medians over rounds; ratio = host ns/txn ÷ nicemu's in the same round):"
        )?;
        writeln!(
            f,
            "{:<14} {:>12} {:>12} {:>10}",
            "server", "txn/s", "host ns/txn", "vs nicemu"
        )?;
        for s in self.summary() {
            let ratio = s.vs_nicemu.map_or("-".into(), |r| format!("{r:.2}x"));
            write!(
                f,
                "{:<14} {:>12.0} {:>12.0} {:>10}",
                s.server.name(),
                s.tps,
                s.host_ns_per_txn,
                ratio
            )?;
            if let (Some(p), Some(r)) = (s.process_ns_per_txn, s.process_vs_nicemu) {
                write!(f, "   (server process only: {p:.0} ns/txn, {r:.2}x)")?;
            }
            writeln!(f)?;
        }
        writeln!(f)?;
        writeln!(f, "how host cost is measured:")?;
        writeln!(
            f,
            "  nicemu:  TSC time inside the server host's EchoServer::step (epoll_wait runs the \
             stack: link rx, TCP, timers, link tx), empty polls included; checksums and ARP \
             are done by the emulated NIC (its lcore time is shown apart, not host cost)"
        )?;
        writeln!(
            f,
            "  smoltcp: TSC time inside Interface::poll plus the echo loop over its sockets \
             (one per connection), empty polls included; smoltcp does checksums and ARP itself"
        )?;
        writeln!(
            f,
            "  (both scaled by the fraction of the window the thread was on a CPU, from \
             CLOCK_THREAD_CPUTIME_ID, so that preemption by other processes is not counted)"
        )?;
        writeln!(
            f,
            "  kernel:  server process on-CPU time (/proc/<pid>/schedstat, pinned to its own \
             core) + softirq time of the client's core (/proc/stat; requests enter the kernel \
             stack in softirq on the sending CPU). Limits: softirq is tick-sampled (no IRQ \
             time accounting), includes veth/af_packet work and anything else on that core; \
             the process time includes the softirq that hands replies to af_packet (wire \
             work). The process-only figure leaves the whole request receive path out: the \
             conservative one, used for the target"
        )?;
        writeln!(
            f,
            "  txn/s is the whole single-threaded loop (client + both NICs + server) for the \
             in-memory servers, and the client core's rate over af_packet for the kernel"
        )?;
        if self.opts.per_conn != 0 {
            // AccelTCP Table 3's question: how much host work the offloads save (the row
            // with every optimisation that ran: quasi-TCBs, else setup + teardown).
            let sum = self.summary();
            let full = [Server::NicemuQuasi, Server::NicemuOffload]
                .into_iter()
                .find_map(|row| {
                    let s = sum.iter().find(|s| s.server == row)?;
                    Some((row, s.vs_nicemu?))
                });
            if let Some((row, r)) = full {
                writeln!(f)?;
                writeln!(
                    f,
                    "goal (the offloads cut the host's cost per short connection at least 4x, \
                     AccelTCP Table 3; row {}): {:.2}x lower, {}",
                    row.name(),
                    1.0 / r.max(1e-9),
                    if r <= 0.25 { "MET" } else { "NOT MET" }
                )?;
            }
        } else if let Some(met) = self.target_met(3.0) {
            writeln!(f)?;
            writeln!(
                f,
                "target (nicemu host cost >= 3x lower than every other server, kernel counted \
                 conservatively as process only): {}",
                if met { "MET" } else { "NOT MET" }
            )?;
        }
        Ok(())
    }
}

/// Runs the echo benchmark as `opts` says and returns what it measured. Progress goes to
/// standard error. Every namespace, veth, process and DPDK runtime directory it makes is
/// removed before it returns, also on error or when `opts.stop` is set.
pub fn echo(opts: &EchoBenchOpts) -> Result<EchoBenchReport, String> {
    opts.validate()?;
    #[cfg_attr(not(feature = "dpdk"), allow(unused_variables))]
    let (bench_core, server_core) = match opts.cores {
        Some(c) => c,
        None => {
            let cores = dataplane::sys::allowed_cores().map_err(|e| e.to_string())?;
            let first = *cores.first().ok_or("no CPU core allowed")?;
            (first, cores.get(1).copied().unwrap_or(first))
        }
    };
    if let Err(e) = dataplane::sys::pin_current_thread(bench_core) {
        eprintln!("bench: could not pin to core {bench_core}: {e}");
    }
    let tsc_hz = dataplane::cycles::measure_tsc_hz(Duration::from_millis(100));
    let mut report = EchoBenchReport {
        opts: opts.clone(),
        tsc_hz,
        rounds: Vec::new(),
        skipped: Vec::new(),
    };
    let mut servers = opts.servers.clone();
    #[cfg(feature = "dpdk")]
    let mut kernel = None;
    if servers.contains(&Server::Kernel) {
        #[cfg(feature = "dpdk")]
        {
            eprintln!(
                "bench: kernel server: namespace + veth, server on core {server_core}, \
                 DPDK client on core {bench_core}"
            );
            match kernel::KernelBench::start(bench_core, server_core, opts.conns) {
                Ok(k) => kernel = Some(k),
                Err(e) => report.skipped.push((Server::Kernel, e)),
            }
        }
        #[cfg(not(feature = "dpdk"))]
        report.skipped.push((
            Server::Kernel,
            "needs nicemu built with the dpdk feature (cargo build --release -p apps \
             --features dpdk): its client reaches the namespace through net_af_packet"
                .into(),
        ));
        if report.skipped.iter().any(|(s, _)| *s == Server::Kernel) {
            servers.retain(|s| *s != Server::Kernel);
        }
    }
    for round in 0..opts.rounds {
        let mut order = servers.clone();
        let k = round as usize % order.len().max(1);
        order.rotate_left(k);
        for s in order {
            opts.check_stop()?;
            let m = match s {
                Server::Nicemu
                | Server::NicemuSetup
                | Server::NicemuOffload
                | Server::NicemuQuasi => inmem::nicemu(opts, round, tsc_hz, s),
                Server::Smoltcp => inmem::smoltcp(opts, round, tsc_hz),
                #[cfg(feature = "dpdk")]
                Server::Kernel => match kernel.as_mut() {
                    Some(k) => k.round(opts, round),
                    None => continue,
                },
                #[cfg(not(feature = "dpdk"))]
                Server::Kernel => continue,
            }
            .map_err(|e| format!("{} round {}: {e}", s.name(), round + 1))?;
            eprintln!(
                "bench: round {} {:<14} {:>10.0} txn/s {:>8.0} host ns/txn",
                round + 1,
                s.name(),
                m.tps(),
                m.host_ns_per_txn()
            );
            report.rounds.push(m);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_lists_parse() {
        assert_eq!(
            parse_servers("nicemu, smoltcp,kernel,nicemu").unwrap(),
            vec![Server::Nicemu, Server::Smoltcp, Server::Kernel]
        );
        assert!(parse_servers("").is_err());
        assert!(parse_servers("nicemu,linux").is_err());
    }

    #[test]
    fn medians_and_ratios_are_per_round() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let m = |server, round, host_ns: f64, process: Option<f64>| Measurement {
            server,
            round,
            transactions: 1000,
            wall_s: 1.0,
            host_ns,
            host_idle_ns: None,
            host_ns_process: process,
            nic_ns: None,
            link: None,
            note: None,
        };
        let report = EchoBenchReport {
            opts: EchoBenchOpts::default(),
            tsc_hz: 1,
            rounds: vec![
                m(Server::Nicemu, 0, 1e6, None),
                m(Server::Smoltcp, 0, 5e6, None),
                m(Server::Kernel, 0, 9e6, Some(4e6)),
                m(Server::Nicemu, 1, 2e6, None),
                m(Server::Smoltcp, 1, 5e6, None),
                m(Server::Kernel, 1, 9e6, Some(7e6)),
            ],
            skipped: Vec::new(),
        };
        let s = report.summary();
        assert_eq!(s[1].vs_nicemu, Some((5.0 + 2.5) / 2.0));
        assert_eq!(s[2].process_vs_nicemu, Some((4.0 + 3.5) / 2.0));
        assert_eq!(report.target_met(3.0), Some(true));
        assert_eq!(report.target_met(4.0), Some(false));
        assert!(report.to_string().contains("MET"));
    }

    /// Runs the in-memory servers briefly (a smoke test: nothing here is timed).
    #[test]
    fn in_memory_servers_echo() {
        let opts = EchoBenchOpts {
            conns: 32,
            seconds: 0.2,
            rounds: 1,
            servers: vec![Server::Nicemu, Server::Smoltcp],
            warmup_seconds: 0.0,
            ..EchoBenchOpts::default()
        };
        let r = echo(&opts).unwrap();
        assert_eq!(r.rounds.len(), 2);
        for m in &r.rounds {
            assert!(m.transactions > 0, "{m:?}");
        }
        let link = r.rounds[0].link.expect("nicemu reports link crossings");
        // About one frame each way per transaction (window edges blur the count).
        assert!(
            link.to_host_packets > 0.5 && link.to_nic_packets > 0.5,
            "{link:?}"
        );
    }

    /// Short connections that the server closes right after its echo, with the setup and
    /// teardown offloads: every transaction completes and none fails (a smoke test: the
    /// counters are in the note, nothing here is timed).
    #[test]
    fn in_memory_short_connections_closed_by_the_server() {
        let opts = EchoBenchOpts {
            conns: 32,
            per_conn: 1,
            server_closes: true,
            seconds: 0.2,
            rounds: 1,
            servers: vec![Server::NicemuQuasi],
            warmup_seconds: 0.0,
            ..EchoBenchOpts::default()
        };
        let r = echo(&opts).unwrap();
        let m = &r.rounds[0];
        assert!(m.transactions > 0, "{m:?}");
        let note = m.note.as_deref().unwrap_or("");
        assert!(note.contains("closed straight to the NIC"), "{note}");
        assert!(!note.contains("closed straight to the NIC 0,"), "{note}");
        let bad = EchoBenchOpts {
            per_conn: 0,
            ..opts
        };
        assert!(bad.validate().is_err());
    }

    /// More connections than the old 4,096-descriptor link held: every one comes up (the
    /// SYN burst, and the closed loop's frames, fit the rings; the listener takes the burst).
    /// Bounded: the bench gives up after 30 s of connection setup.
    #[test]
    fn in_memory_nicemu_echo_with_5000_connections() {
        let opts = EchoBenchOpts {
            conns: 5000,
            seconds: 0.1,
            rounds: 1,
            servers: vec![Server::Nicemu],
            warmup_seconds: 0.0,
            ..EchoBenchOpts::default()
        };
        let r = echo(&opts).unwrap();
        assert!(r.rounds[0].transactions > 0, "{:?}", r.rounds[0]);
    }
}
