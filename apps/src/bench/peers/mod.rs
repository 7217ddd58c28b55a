//! `nicemu bench peers`: nicemu's shipped configurations against the servers people use,
//! measured as users measure them, side by side in one run.
//!
//! Two network namespaces joined by a veth pair ([`topo`]). The server side runs, in turn,
//! a nicemu process (`nicemu kv|proxy|echo` from this binary, with the shipped
//! configs/af-packet.toml or configs/proxy.toml, unchanged but for the net_af_packet device
//! and a unique DPDK file prefix after `--`) and the kernel reference on the same veth and
//! the same address (the kernel holds 192.0.2.1 only while a reference server runs):
//!
//! - **kv**: `nicemu kv` vs redis-server; redis-benchmark `-t set` and `-t get` with `-c 50`
//!   keep-alive, with `-k 0` (a connection per request) and with `-P 16`, parsed from
//!   `--csv` (req/s, p50, p99); `redis-cli --latency -i S --raw` (a PING every 10 ms for S
//!   seconds: average latency).
//! - **proxy**: `nicemu proxy` (splice, and `--no-splice`: relay on the host) vs HAProxy
//!   (generated configuration: HTTP mode, keep-alive, one thread, the same two back ends,
//!   round robin, X-Forwarded-For) vs nginx serving the files itself (no proxy: the floor);
//!   the back ends are nginx on 192.0.2.3:8080 and .4:8080 serving 64 B and 64 KB bodies;
//!   wrk `-c 50 -t 1 -d S --latency` (req/s, p50, p99, socket errors and non-2xx).
//! - **echo**: `nicemu echo` vs the kernel epoll echo server of `bench echo`; the client is
//!   `nicemu loadgen` (50 connections, 64-byte messages) on net_af_packet in the client
//!   namespace (req/s, p50, p99, p99.9, errors).
//!
//! Rounds alternate: each round runs every server of a workload once, in an order that
//! rotates. Every client run records the CPU time (user + system, all threads, from
//! `/proc/<pid>/stat`) of each server-side process and of the client, and the softirq time
//! of all CPUs (`/proc/stat`), over that run; ratios are nicemu's req/s ÷ the reference's
//! (redis-server, HAProxy, the kernel echo server) in the same round and case.

mod parse;
mod report;
mod rounds;
mod topo;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use parse::ClientResult;

/// A workload of `bench peers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `nicemu kv` vs redis-server, redis-benchmark and redis-cli.
    Kv,
    /// `nicemu proxy` vs HAProxy and nginx, wrk.
    Proxy,
    /// `nicemu echo` vs a kernel epoll echo server, `nicemu loadgen`.
    Echo,
}

impl Workload {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Kv => "kv",
            Workload::Proxy => "proxy",
            Workload::Echo => "echo",
        }
    }

    /// The reference server nicemu's rows are divided by.
    pub fn reference(self) -> &'static str {
        match self {
            Workload::Kv => "redis-server",
            Workload::Proxy => "haproxy",
            Workload::Echo => "kernel-epoll",
        }
    }
}

/// Parses `--only` (`kv,proxy,echo`, any subset, in the order given).
pub fn parse_workloads(s: &str) -> Result<Vec<Workload>, String> {
    let mut v = Vec::new();
    for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let w = match w {
            "kv" => Workload::Kv,
            "proxy" => Workload::Proxy,
            "echo" => Workload::Echo,
            other => {
                return Err(format!(
                    "--only: unknown workload {other:?}, expected kv, proxy or echo"
                ))
            }
        };
        if !v.contains(&w) {
            v.push(w);
        }
    }
    if v.is_empty() {
        return Err("--only: no workload given".into());
    }
    Ok(v)
}

/// Settings of `bench peers`.
#[derive(Clone, Debug)]
pub struct PeersOpts {
    /// The workloads, in order.
    pub only: Vec<Workload>,
    /// Rounds; each runs every server of every workload once.
    pub rounds: u32,
    /// Seconds of each wrk and loadgen run, and of each `redis-cli --latency` sampling.
    pub seconds: f64,
    /// Requests of each redis-benchmark run (`-n`).
    pub requests: u64,
    /// Client connections (redis-benchmark `-c`, wrk `-c`, loadgen `--conns`).
    pub conns: usize,
    /// Directory of the shipped configurations (af-packet.toml, proxy.toml).
    pub config_dir: PathBuf,
    /// The nicemu executable the servers and the load generator run from.
    pub exe: PathBuf,
    /// Set to stop early (Ctrl-C); the benchmark then cleans up and fails.
    pub stop: Arc<AtomicBool>,
}

impl Default for PeersOpts {
    fn default() -> Self {
        PeersOpts {
            only: vec![Workload::Kv, Workload::Proxy, Workload::Echo],
            rounds: 3,
            seconds: 5.0,
            requests: 20_000,
            conns: 50,
            config_dir: PathBuf::from("configs"),
            exe: PathBuf::from("nicemu"),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl PeersOpts {
    fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 || self.rounds > 100 {
            return Err(format!("--rounds {}: expected 1..=100", self.rounds));
        }
        if !(self.seconds.is_finite() && (1.0..=600.0).contains(&self.seconds)) {
            return Err(format!("--seconds {}: expected [1, 600]", self.seconds));
        }
        if !(100..=10_000_000).contains(&self.requests) {
            return Err(format!(
                "--requests {}: expected 100..=10000000",
                self.requests
            ));
        }
        if !(1..=1000).contains(&self.conns) {
            return Err(format!("--conns {}: expected 1..=1000", self.conns));
        }
        if self.only.is_empty() {
            return Err("--only: no workload given".into());
        }
        Ok(())
    }

    fn check_stop(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            Err("interrupted".into())
        } else {
            Ok(())
        }
    }
}

/// CPU seconds of one process over a client run.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcCpu {
    /// The process ("nicemu kv", "redis-server", "nginx back ends", "wrk", ...).
    pub name: String,
    /// Server side (true) or client side.
    pub server_side: bool,
    /// User + system CPU seconds, all threads.
    pub seconds: f64,
}

/// One client run against one server in one round.
#[derive(Clone, Debug)]
pub struct PeerRow {
    /// The workload.
    pub workload: Workload,
    /// What the client ran ("SET", "GET -k 0", "SET -P 16", "PING --latency", "64 B", ...).
    pub case: String,
    /// The server ("nicemu", "nicemu-relay", "redis-server", "haproxy", "nginx", ...).
    pub server: String,
    /// A nicemu server (its req/s are divided by the reference's).
    pub nicemu: bool,
    /// Only latency is measured (redis-cli --latency): req/s is the sampling rate.
    pub latency_only: bool,
    /// Round (0-based).
    pub round: u32,
    /// What the client reported.
    pub result: ClientResult,
    /// Wall seconds of the client run.
    pub wall_s: f64,
    /// CPU of every process over the run.
    pub cpu: Vec<ProcCpu>,
    /// Softirq seconds of all CPUs over the run.
    pub softirq_s: f64,
    /// nicemu servers: the error counters of their summary at exit (over every run
    /// against that server in this round).
    pub server_note: String,
}

impl PeerRow {
    /// CPU seconds of the server-side processes together.
    pub fn server_cpu_s(&self) -> f64 {
        self.cpu
            .iter()
            .filter(|c| c.server_side)
            .map(|c| c.seconds)
            .sum()
    }

    /// CPU seconds of the client.
    pub fn client_cpu_s(&self) -> f64 {
        self.cpu
            .iter()
            .filter(|c| !c.server_side)
            .map(|c| c.seconds)
            .sum()
    }

    /// Requests completed in the run: the client's count, else req/s × wall time.
    pub fn requests(&self) -> f64 {
        if self.result.requests > 0 {
            self.result.requests as f64
        } else {
            self.result.rps * self.wall_s
        }
    }

    /// All CPU (every process and softirq) per request, microseconds.
    pub fn cpu_us_per_req(&self) -> f64 {
        (self.server_cpu_s() + self.client_cpu_s() + self.softirq_s) * 1e6
            / self.requests().max(1.0)
    }
}

/// Everything `bench peers` measured.
#[derive(Clone, Debug)]
pub struct PeersReport {
    /// The settings.
    pub opts: PeersOpts,
    /// Every client run, in the order run.
    pub rows: Vec<PeerRow>,
}

/// Runs `bench peers` as `opts` says. Progress goes to standard error. The namespaces, the
/// veth pair, every process and DPDK runtime directory it makes are removed before it
/// returns, also on error or when `opts.stop` is set.
pub fn peers(opts: &PeersOpts) -> Result<PeersReport, String> {
    opts.validate()?;
    rounds::check_tools(opts)?;
    let topo = topo::Topology::new(std::process::id() % 100_000)?;
    let mut env = rounds::Env::new(opts, &topo)?;
    let mut report = PeersReport {
        opts: opts.clone(),
        rows: Vec::new(),
    };
    for &w in &opts.only {
        let mut servers = rounds::servers(w);
        for round in 0..opts.rounds {
            for s in servers.clone() {
                opts.check_stop()?;
                let rows = env
                    .run(w, s, round)
                    .map_err(|e| format!("{} {} round {}: {e}", w.name(), s.name(), round + 1))?;
                for r in &rows {
                    eprintln!(
                        "bench peers: {:<5} round {} {:<14} {:<16} {:>9.0} req/s  p99 {}  errors {}",
                        w.name(),
                        round + 1,
                        r.server,
                        r.case,
                        r.result.rps,
                        report::ms(r.result.p99_ms),
                        r.result.errors
                    );
                }
                report.rows.extend(rows);
            }
            // The next round starts with the next server.
            servers.rotate_left(1);
        }
    }
    drop(env);
    drop(topo);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse() {
        assert_eq!(
            parse_workloads("kv, echo,kv").unwrap(),
            vec![Workload::Kv, Workload::Echo]
        );
        assert!(parse_workloads("").is_err());
        assert!(parse_workloads("kv,memcached").is_err());
        let bad = PeersOpts {
            seconds: 0.0,
            ..PeersOpts::default()
        };
        assert!(bad.validate().is_err());
        assert!(PeersOpts::default().validate().is_ok());
    }
}
