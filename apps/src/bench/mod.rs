//! `nicemu bench echo`: the host-cost comparison of AccelTCP §6 (BENCHMARKS.md, "Host stack");
//! `nicemu bench kv` ([`kv`]): the key-value server of AccelTCP §6.2 on the in-memory wire;
//! `nicemu bench peers` ([`peers`]): the shipped configurations against redis-server, HAProxy,
//! nginx and a kernel echo server, with the clients people use.
//!
//! A persistent-connection echo: `conns` connections, each with one `size`-byte request
//! outstanding; a transaction is one request echoed back in full. The client is always the
//! same nicemu node (host stack + [`crate::echo::EchoClient`] + NIC lcore). The servers:
//!
//! - **nicemu**: a nicemu node (NIC lcore + host context + [`crate::echo::EchoServer`]) on
//!   the other end of the in-memory wire;
//! - **smoltcp**: a smoltcp interface with one socket per connection on the same wire;
//! - **smoltcp-csum-offload**: the same with the checksum offload nicemu's host has: smoltcp
//!   computes no checksum and its device ([`crate::smol::WireDevice::with_csum_offload`])
//!   verifies and fills them, timed apart as that server's NIC work;
//! - **kernel** (feature `dpdk`): the Linux kernel's TCP stack with an epoll echo server in a
//!   network namespace behind a veth pair; the client's NIC runs on DPDK's net_af_packet.
//!
//! The in-memory rounds run on one thread that steps client host, client NIC, server NIC and
//! server host round-robin, and time (TSC) only the server host's calls: for nicemu,
//! `EchoServer::step` (its `epoll_wait` runs the stack); for smoltcp, `Interface::poll` plus
//! the echo loop over the sockets. For the kernel, see [`kernel`]. Host cost per transaction
//! is that time divided by the transactions completed in the measured window; the report
//! also gives host + NIC per transaction (see [`echo_report`]). Rounds alternate the servers
//! (the order rotates each round), so the ratios are side by side.

mod echo_out;
mod echo_report;
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
    /// smoltcp with the checksum offload nicemu's host has: smoltcp computes no checksum,
    /// its device verifies and fills them (timed apart as the NIC's work).
    SmoltcpCsumOffload,
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
            Server::SmoltcpCsumOffload => "smoltcp-csum-offload",
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
            "smoltcp-csum-offload" => Server::SmoltcpCsumOffload,
            "kernel" => Server::Kernel,
            other => {
                return Err(format!(
                    "unknown server {other:?}, expected nicemu, nicemu-setup, nicemu-offload, \
                     nicemu-quasi, smoltcp, smoltcp-csum-offload or kernel"
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
        if self.per_conn != 0
            && self
                .servers
                .iter()
                .any(|s| matches!(s, Server::Smoltcp | Server::SmoltcpCsumOffload))
        {
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
    /// The NIC's work for the server over the window, not host cost: for nicemu the
    /// nanoseconds in its NIC lcore; for smoltcp-csum-offload the device's checksum verify
    /// and fill (taken out of `host_ns`); none for smoltcp and the kernel.
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

    /// The NIC's nanoseconds per transaction (see [`Measurement::nic_ns`]).
    pub fn nic_ns_per_txn(&self) -> Option<f64> {
        self.nic_ns.map(|n| n / self.transactions.max(1) as f64)
    }

    /// Host plus NIC nanoseconds per transaction: the host's, plus the NIC's where the
    /// server has one (nicemu, smoltcp-csum-offload); the host's alone otherwise.
    pub fn host_nic_ns_per_txn(&self) -> f64 {
        (self.host_ns + self.nic_ns.unwrap_or(0.0)) / self.transactions.max(1) as f64
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
    /// Median NIC ns per transaction, where the server has a NIC part.
    pub nic_ns_per_txn: Option<f64>,
    /// Median host + NIC ns per transaction ([`Measurement::host_nic_ns_per_txn`]).
    pub host_nic_ns_per_txn: f64,
    /// Median over rounds of (this server's host ns/txn ÷ nicemu's in the same round).
    pub vs_nicemu: Option<f64>,
    /// The same with the kernel's process-only cost.
    pub process_vs_nicemu: Option<f64>,
    /// Median over rounds of (this server's host + NIC ns/txn ÷ nicemu's host + NIC ns/txn
    /// in the same round).
    pub host_nic_vs_nicemu: Option<f64>,
    /// Kernel only: its process-only cost ÷ nicemu's host + NIC, median over rounds.
    pub process_vs_nicemu_host_nic: Option<f64>,
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
                Server::Smoltcp | Server::SmoltcpCsumOffload => {
                    inmem::smoltcp(opts, round, tsc_hz, s).map(|(m, _)| m)
                }
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
                "bench: round {} {:<20} {:>10.0} txn/s {:>8.0} host ns/txn",
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
            parse_servers("nicemu, smoltcp,kernel,nicemu,smoltcp-csum-offload").unwrap(),
            vec![
                Server::Nicemu,
                Server::Smoltcp,
                Server::Kernel,
                Server::SmoltcpCsumOffload
            ]
        );
        assert!(parse_servers("").is_err());
        assert!(parse_servers("nicemu,linux").is_err());
    }

    #[test]
    fn medians_and_ratios_are_per_round() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let m = |server, round, host_ns: f64, nic: Option<f64>, process: Option<f64>| Measurement {
            server,
            round,
            transactions: 1000,
            wall_s: 1.0,
            host_ns,
            host_idle_ns: None,
            host_ns_process: process,
            nic_ns: nic,
            link: None,
            note: None,
        };
        let report = EchoBenchReport {
            opts: EchoBenchOpts {
                servers: vec![
                    Server::Nicemu,
                    Server::Smoltcp,
                    Server::SmoltcpCsumOffload,
                    Server::Kernel,
                ],
                ..EchoBenchOpts::default()
            },
            tsc_hz: 1,
            rounds: vec![
                m(Server::Nicemu, 0, 1e6, Some(1e6), None),
                m(Server::Smoltcp, 0, 5e6, None, None),
                m(Server::SmoltcpCsumOffload, 0, 4e6, Some(1e6), None),
                m(Server::Kernel, 0, 9e6, None, Some(4e6)),
                m(Server::Nicemu, 1, 2e6, Some(2e6), None),
                m(Server::Smoltcp, 1, 5e6, None, None),
                m(Server::SmoltcpCsumOffload, 1, 4e6, Some(1e6), None),
                m(Server::Kernel, 1, 9e6, None, Some(7e6)),
            ],
            skipped: Vec::new(),
        };
        let s = report.summary();
        // Host only: ÷ nicemu's host (1e6, then 2e6).
        assert_eq!(s[1].vs_nicemu, Some((5.0 + 2.5) / 2.0));
        assert_eq!(s[2].vs_nicemu, Some((4.0 + 2.0) / 2.0));
        assert_eq!(s[3].process_vs_nicemu, Some((4.0 + 3.5) / 2.0));
        // Host + NIC: ÷ nicemu's host + NIC (2e6, then 4e6); smoltcp and the kernel have no
        // NIC part, smoltcp-csum-offload adds its device's.
        assert_eq!(s[0].host_nic_ns_per_txn, (2e3 + 4e3) / 2.0);
        assert_eq!(s[1].host_nic_ns_per_txn, 5e3);
        assert_eq!(s[2].host_nic_ns_per_txn, 5e3);
        assert_eq!(s[2].nic_ns_per_txn, Some(1e3));
        assert_eq!(s[1].nic_ns_per_txn, None);
        assert_eq!(s[1].host_nic_vs_nicemu, Some((2.5 + 1.25) / 2.0));
        assert_eq!(s[2].host_nic_vs_nicemu, Some((2.5 + 1.25) / 2.0));
        assert_eq!(s[3].host_nic_vs_nicemu, Some((4.5 + 2.25) / 2.0));
        assert_eq!(s[3].process_vs_nicemu_host_nic, Some((2.0 + 1.75) / 2.0));
        // The target is judged on host only; host + NIC is reported beside it.
        assert_eq!(report.target_met(3.0), Some(true));
        assert_eq!(report.target_met(4.0), Some(false));
        assert_eq!(report.target_met_on(3.0, true), Some(false));
        assert_eq!(report.target_met_on(1.8, true), Some(true));
        let text = report.to_string();
        assert!(text.contains("): MET; on host + NIC ("), "{text}");
        assert!(text.contains("would not be met"), "{text}");
        assert!(text.contains("vs nicemu (host+NIC)"), "{text}");
    }

    /// The goal of short connections: judged on host only, host + NIC beside it.
    #[test]
    fn goal_is_judged_on_host_only_with_host_and_nic_beside() {
        let m = |server, host_ns: f64, nic_ns: f64| Measurement {
            server,
            round: 0,
            transactions: 1000,
            wall_s: 1.0,
            host_ns,
            host_idle_ns: None,
            host_ns_process: None,
            nic_ns: Some(nic_ns),
            link: None,
            note: None,
        };
        let report = EchoBenchReport {
            opts: EchoBenchOpts {
                per_conn: 1,
                servers: vec![Server::Nicemu, Server::NicemuQuasi],
                ..EchoBenchOpts::default()
            },
            tsc_hz: 1,
            rounds: vec![
                m(Server::Nicemu, 5e6, 1e6),
                m(Server::NicemuQuasi, 1e6, 3e6),
            ],
            skipped: Vec::new(),
        };
        let text = report.to_string();
        assert!(
            text.contains("5.00x lower, MET; on host + NIC: 1.50x lower (would not be met)"),
            "{text}"
        );
    }

    /// smoltcp with its device's checksum offload serves echoes: the client (a nicemu node,
    /// whose NIC verifies every checksum and drops bad frames) completes transactions, the
    /// device found no bad checksum on receive and filled every IPv4 frame it sent (the
    /// others are ARP). A smoke test: nothing here is timed.
    #[test]
    fn smoltcp_with_checksum_offload_serves_correct_checksums() {
        let opts = EchoBenchOpts {
            conns: 32,
            seconds: 0.2,
            rounds: 1,
            servers: vec![Server::SmoltcpCsumOffload],
            warmup_seconds: 0.0,
            ..EchoBenchOpts::default()
        };
        let (m, dev) = inmem::smoltcp(&opts, 0, 1_000_000_000, Server::SmoltcpCsumOffload)
            .expect("the client's NIC dropped nothing for bad checksums");
        assert!(m.transactions > 0, "{m:?}");
        let c = dev.csum.expect("the device has the checksum offload");
        assert_eq!(c.rx_bad, 0, "{c:?}");
        assert!(c.rx_verified > 0, "{c:?}");
        assert!(c.tx_filled > 0, "{c:?}");
        assert_eq!(c.tx_filled + c.tx_other, dev.frames_sent, "{c:?}");
        // Nothing but ARP goes unfilled: at most a reply or two.
        assert!(c.tx_other <= 2, "{c:?}");
        assert!(m.nic_ns.is_some_and(|n| n > 0.0), "{m:?}");
        // Without the offload the device computes nothing.
        let (m, dev) = inmem::smoltcp(&opts, 0, 1_000_000_000, Server::Smoltcp).unwrap();
        assert!(m.transactions > 0 && dev.csum.is_none() && m.nic_ns.is_none());
    }

    /// Runs the in-memory servers briefly (a smoke test: nothing here is timed).
    #[test]
    fn in_memory_servers_echo() {
        let opts = EchoBenchOpts {
            conns: 32,
            seconds: 0.2,
            rounds: 1,
            servers: vec![Server::Nicemu, Server::Smoltcp, Server::SmoltcpCsumOffload],
            warmup_seconds: 0.0,
            ..EchoBenchOpts::default()
        };
        let r = echo(&opts).unwrap();
        assert_eq!(r.rounds.len(), 3);
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
