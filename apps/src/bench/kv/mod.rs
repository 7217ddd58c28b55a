//! `nicemu bench kv`: the key-value server of AccelTCP §6.2 (Table 4, Figure 14) on the
//! in-memory wire.
//!
//! Two nicemu nodes on the in-memory wire: the server node runs [`KvServer`] (RESP2,
//! Redis-compatible), the client node runs the closed-loop [`LoadGen`] speaking Redis: each
//! connection alternates `SET key value` (a `size`-byte value) and `GET key` and checks every
//! reply. Rows: one request per connection (Table 4's workload: "a single key-value
//! transaction for each connection") and persistent connections. Server variants map to
//! AccelTCP Table 3's rows as in `bench echo`: no offload, setup offload (§4.1), setup and
//! teardown offloads (§4.2), and the same with quasi-TCBs (§5.2).
//!
//! Measurement as in `bench echo` (see [`super::inmem`]): one thread steps client host, client
//! NIC, server NIC and server host round-robin; the server host's time is the TSC time inside
//! `KvServer::step` (its `epoll_wait` runs the stack), the server NIC's the time inside its
//! lcore's poll, both scaled by the fraction of the window the thread was on a CPU; the
//! report gives host only and host + NIC per request, each with its ratio. Latency is
//! the load generator's (request written to reply checked), over the window only. Rounds
//! rotate the order of the variants; ratios are against the no-offload variant of the same
//! round and row.

use std::fmt;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dataplane::clock::Clock;
use dataplane::cycles::rdtsc;
use dataplane::port::wire::WireQueue;
use hdrhistogram::Histogram;
use offload_api::link::LinkCounters;

use super::inmem::{self, ClientPart, ServerPart, Timing};
use super::{median, LinkPerTxn, Server, CLIENT_IP, CLIENT_MAC, SERVER_IP, SERVER_MAC};
use crate::echo::ServerOffloads;
use crate::json::Json;
use crate::kv::server::{KvConfig, KvServer};
use crate::loadgen::{LoadGen, LoadGenConfig, Proto};
use crate::node::Node;
use crate::plot::{LinePlot, Series, StackedBars};

/// The key-value server's port (Redis's).
const KV_PORT: u16 = 6379;

/// Settings of the key-value benchmark.
#[derive(Clone, Debug)]
pub struct KvBenchOpts {
    /// Concurrent connections.
    pub conns: usize,
    /// Value size in bytes (AccelTCP's USR workload: 2-byte values).
    pub size: usize,
    /// The rows: requests per connection (1: a new connection per request; 0: persistent).
    pub rows: Vec<u32>,
    /// The server variants (nicemu, nicemu-setup, nicemu-offload, nicemu-quasi).
    pub servers: Vec<Server>,
    /// Measured seconds per variant per round.
    pub seconds: f64,
    /// Rounds; each runs every variant once per row, in an order that rotates.
    pub rounds: u32,
    /// Seconds of traffic before each window (after the load is up).
    pub warmup_seconds: f64,
    /// Core for the benchmark thread; none: the first this process may run on.
    pub core: Option<usize>,
    /// Set to stop early (Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

impl Default for KvBenchOpts {
    fn default() -> Self {
        KvBenchOpts {
            conns: 1024,
            size: 2,
            rows: vec![1, 0],
            servers: vec![
                Server::Nicemu,
                Server::NicemuSetup,
                Server::NicemuOffload,
                Server::NicemuQuasi,
            ],
            seconds: 3.0,
            rounds: 3,
            warmup_seconds: 0.5,
            core: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl KvBenchOpts {
    fn validate(&self) -> Result<(), String> {
        if !(1..=60_000).contains(&self.conns) {
            return Err(format!("--conns {}: expected 1..=60000", self.conns));
        }
        if !(1..=65_536).contains(&self.size) {
            return Err(format!("--size {}: expected 1..=65536", self.size));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(format!("--seconds {}: expected (0, 3600]", self.seconds));
        }
        if !(self.warmup_seconds.is_finite() && (0.0..=60.0).contains(&self.warmup_seconds)) {
            return Err(format!(
                "--warmup {}: expected [0, 60]",
                self.warmup_seconds
            ));
        }
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        if self.rows.is_empty() {
            return Err("no row given (--per-conn)".into());
        }
        if self.servers.is_empty() {
            return Err("no server given".into());
        }
        if let Some(s) = self.servers.iter().find(|s| {
            matches!(
                s,
                Server::Smoltcp | Server::SmoltcpCsumOffload | Server::Kernel
            )
        }) {
            return Err(format!(
                "--servers: {} has no key-value server here; choose among nicemu, \
                 nicemu-setup, nicemu-offload, nicemu-quasi (ci/bench-kv-table4.sh measures \
                 redis-server on the kernel)",
                s.name()
            ));
        }
        Ok(())
    }
}

/// The name of a row.
pub fn row_name(per_conn: u32) -> String {
    match per_conn {
        0 => "persistent".into(),
        1 => "1 req/conn".into(),
        n => format!("{n} req/conn"),
    }
}

/// Parses `--per-conn` rows: numbers, or `short` (1) and `persistent` (0).
pub fn parse_rows(s: &str) -> Result<Vec<u32>, String> {
    let mut v = Vec::new();
    for r in s.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        let n = match r {
            "short" => 1,
            "persistent" => 0,
            n => n
                .parse()
                .map_err(|_| format!("--per-conn: {n:?} is not a number, short or persistent"))?,
        };
        if !v.contains(&n) {
            v.push(n);
        }
    }
    if v.is_empty() {
        return Err("--per-conn: no row given".into());
    }
    Ok(v)
}

/// Quantiles of the latency CDF kept per window (for the plot and the JSON).
const CDF_QUANTILES: [f64; 15] = [
    0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999,
];

/// One variant's measured window in one round of one row.
#[derive(Clone, Debug)]
pub struct KvMeasurement {
    /// The server variant.
    pub server: Server,
    /// Requests per connection (0: persistent).
    pub per_conn: u32,
    /// Round number (0-based).
    pub round: u32,
    /// Requests (transactions) completed and checked in the window.
    pub transactions: u64,
    /// Length of the window, seconds.
    pub wall_s: f64,
    /// Server host CPU nanoseconds over the window (`KvServer::step`, stack included).
    pub host_ns: f64,
    /// The part of `host_ns` in polls that found nothing to do.
    pub host_idle_ns: f64,
    /// Nanoseconds in the server's NIC lcore (the emulated NIC, not host cost).
    pub nic_ns: f64,
    /// PCIe link crossings of the server per request.
    pub link: LinkPerTxn,
    /// Latency quantiles over the window: (quantile, nanoseconds), from [`CDF_QUANTILES`].
    pub latency: Vec<(f64, u64)>,
    /// Load generator errors in the window, by kind ("none" when there were none).
    pub errors: String,
    /// Load generator errors in the window.
    pub error_count: u64,
    /// Counters of the server (accepted, closed, offload use).
    pub note: String,
}

impl KvMeasurement {
    /// Requests per second over the window.
    pub fn tps(&self) -> f64 {
        self.transactions as f64 / self.wall_s.max(1e-9)
    }

    fn per_txn(&self, ns: f64) -> f64 {
        ns / self.transactions.max(1) as f64
    }

    /// Server host CPU nanoseconds per request.
    pub fn host_ns_per_req(&self) -> f64 {
        self.per_txn(self.host_ns)
    }

    /// Server NIC lcore nanoseconds per request.
    pub fn nic_ns_per_req(&self) -> f64 {
        self.per_txn(self.nic_ns)
    }

    /// Server host plus NIC lcore nanoseconds per request.
    pub fn host_nic_ns_per_req(&self) -> f64 {
        self.per_txn(self.host_ns + self.nic_ns)
    }

    /// Link frames (both directions) per request.
    pub fn link_frames(&self) -> f64 {
        self.link.to_host_packets + self.link.to_nic_packets
    }

    /// Latency at quantile `q` (one of [`CDF_QUANTILES`]), nanoseconds.
    pub fn latency_at(&self, q: f64) -> u64 {
        self.latency
            .iter()
            .find(|(x, _)| (*x - q).abs() < 1e-9)
            .map_or(0, |(_, v)| *v)
    }
}

/// Medians over rounds of one variant in one row.
#[derive(Clone, Debug)]
pub struct KvSummary {
    /// Requests per connection (0: persistent).
    pub per_conn: u32,
    /// The variant.
    pub server: Server,
    /// Requests per second.
    pub tps: f64,
    /// Server host ns per request.
    pub host_ns_per_req: f64,
    /// Of which idle polls.
    pub host_idle_ns_per_req: f64,
    /// Server NIC lcore ns per request.
    pub nic_ns_per_req: f64,
    /// Link frames NIC → host per request.
    pub to_host_frames: f64,
    /// Link frames host → NIC per request.
    pub to_nic_frames: f64,
    /// Latency p50, ns.
    pub p50_ns: f64,
    /// Latency p99, ns.
    pub p99_ns: f64,
    /// Server host + NIC lcore ns per request.
    pub host_nic_ns_per_req: f64,
    /// Median over rounds of host ns per request ÷ the no-offload variant's in that round.
    pub vs_no_offload: Option<f64>,
    /// The same on host + NIC: host + NIC ns per request ÷ the no-offload variant's host +
    /// NIC in that round.
    pub host_nic_vs_no_offload: Option<f64>,
    /// Load generator errors over all rounds.
    pub errors: u64,
}

/// Everything `nicemu bench kv` measured.
#[derive(Clone, Debug)]
pub struct KvBenchReport {
    /// The settings.
    pub opts: KvBenchOpts,
    /// TSC frequency used to convert cycles to nanoseconds.
    pub tsc_hz: u64,
    /// Every window, in the order run.
    pub rounds: Vec<KvMeasurement>,
}

/// The client: a nicemu node running the Redis load generator.
struct KvClient {
    node: Node<WireQueue>,
    gen: LoadGen,
    conns: usize,
    per_conn: u32,
    /// The latency histogram and error count when the window started.
    hist0: Option<Histogram<u64>>,
    errors0: crate::loadgen::ErrorCounts,
}

impl ClientPart for KvClient {
    fn step(&mut self) {
        self.gen.step(&mut self.node.host);
        self.node.nic.poll_once();
    }

    fn warmed(&self) -> bool {
        let st = self.gen.stats();
        if self.per_conn == 0 {
            st.established >= self.conns as u64
        } else {
            st.transactions >= self.conns as u64
        }
    }

    fn transactions(&self) -> u64 {
        self.gen.stats().transactions
    }

    fn progress(&self) -> String {
        let st = self.gen.stats();
        format!(
            "{} of {} connections established, {} requests done, errors {}\nclient host: {:?}",
            st.established,
            self.conns,
            st.transactions,
            st.errors.describe(),
            self.node.host.stats()
        )
    }

    fn check(&self) -> Result<(), String> {
        // A wrong reply is a failure of the server, never load.
        let bad = self.gen.stats().errors.bad_response - self.errors0.bad_response;
        if bad > 0 {
            return Err(format!("{bad} wrong or malformed replies"));
        }
        Ok(())
    }

    fn mark(&mut self) {
        self.hist0 = Some(self.gen.latency().clone());
        self.errors0 = self.gen.stats().errors;
    }
}

/// The server: NIC lcore + host context + `KvServer`.
struct KvServerPart {
    node: Node<WireQueue>,
    app: KvServer,
    clock: Clock,
    /// Unix milliseconds at the clock's zero (the store's clock for TTLs).
    epoch_ms: i64,
    link0: (LinkCounters, LinkCounters),
}

impl ServerPart for KvServerPart {
    fn step(&mut self) -> (u64, u64, bool) {
        let now_ms = self.epoch_ms + (self.clock.now_ns() / 1_000_000) as i64;
        let t0 = rdtsc();
        self.node.nic.poll_once();
        let t1 = rdtsc();
        let events = self.app.step(&mut self.node.host, now_ms);
        let t2 = rdtsc();
        (t2.wrapping_sub(t1), t1.wrapping_sub(t0), events > 0)
    }

    fn mark(&mut self) {
        let l = self.node.host.link();
        self.link0 = (l.rx_counters(), l.tx_counters());
    }

    fn counters(&self) -> String {
        format!("kv {:?}; host {:?}", self.app.stats, self.node.host.stats())
    }
}

fn offloads(s: Server) -> ServerOffloads {
    ServerOffloads {
        setup: matches!(
            s,
            Server::NicemuSetup | Server::NicemuOffload | Server::NicemuQuasi
        ),
        teardown: matches!(s, Server::NicemuOffload | Server::NicemuQuasi),
    }
}

/// One window of variant `server` in row `per_conn`.
fn round(
    opts: &KvBenchOpts,
    per_conn: u32,
    round: u32,
    tsc_hz: u64,
    server: Server,
) -> Result<KvMeasurement, String> {
    let clock = Clock::real();
    let epoch_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
        - (clock.now_ns() / 1_000_000) as i64;
    let (qc, qs) = inmem::wire(&clock, opts.conns);
    let mut cnode = inmem::node(
        "client", CLIENT_IP, CLIENT_MAC, qc, &clock, opts.conns, per_conn, false,
    );
    let gen = LoadGen::new(
        &mut cnode.host,
        LoadGenConfig {
            conns: opts.conns,
            size: opts.size,
            per_conn: per_conn as u64,
            proto: Proto::Redis,
            ..LoadGenConfig::new(SocketAddrV4::new(SERVER_IP.into(), KV_PORT))
        },
    )
    .map_err(|e| format!("load generator: {e:?}"))?;
    let mut client = KvClient {
        node: cnode,
        gen,
        conns: opts.conns,
        per_conn,
        hist0: None,
        errors0: Default::default(),
    };
    let mut snode = inmem::node(
        "server",
        SERVER_IP,
        SERVER_MAC,
        qs,
        &clock,
        opts.conns,
        per_conn,
        server == Server::NicemuQuasi,
    );
    let app = KvServer::new(
        &mut snode.host,
        KvConfig {
            port: KV_PORT,
            offloads: offloads(server),
            max_connections: 2 * opts.conns + 1024,
            backlog: opts.conns.max(4096),
            ..KvConfig::default()
        },
    )
    .map_err(|e| format!("kv server: {e:?}"))?;
    let mut srv = KvServerPart {
        node: snode,
        app,
        clock: clock.clone(),
        epoch_ms,
        link0: Default::default(),
    };
    let timing = Timing {
        warmup_s: opts.warmup_seconds,
        seconds: opts.seconds,
        stop: &opts.stop,
    };
    let w = inmem::drive(&timing, &mut client, &mut srv)?;
    let mut hist = client.gen.latency().clone();
    if let Some(h0) = &client.hist0 {
        hist.subtract(h0)
            .map_err(|e| format!("latency histogram: {e:?}"))?;
    }
    let latency = if hist.is_empty() {
        Vec::new()
    } else {
        CDF_QUANTILES
            .iter()
            .map(|&q| (q, hist.value_at_quantile(q)))
            .collect()
    };
    let e = client.gen.stats().errors;
    let e0 = client.errors0;
    let errs = crate::loadgen::ErrorCounts {
        refused: e.refused - e0.refused,
        connect_timeout: e.connect_timeout - e0.connect_timeout,
        reset: e.reset - e0.reset,
        closed_early: e.closed_early - e0.closed_early,
        bad_response: e.bad_response - e0.bad_response,
        http_status: e.http_status - e0.http_status,
        response_timeout: e.response_timeout - e0.response_timeout,
        local: e.local - e0.local,
    };
    let l = srv.node.host.link();
    let rx = l.rx_counters().delta(&srv.link0.0);
    let tx = l.tx_counters().delta(&srv.link0.1);
    let t = w.transactions.max(1) as f64;
    let h = srv.node.host.stats();
    let hs = srv.node.host.setup_stats();
    let q = srv.node.host.quasi_stats();
    let note = format!(
        "{}; whole round: kv accepted {} closed {} refused {}, host passive opens {}, NIC \
         setups {}, teardowns offloaded {}, quasi-TCBs created {} grown {}, RSTs sent {}",
        w.note(),
        srv.app.stats.accepted,
        srv.app.stats.closed,
        srv.app.stats.refused,
        h.passive_opens,
        hs.nic_setups,
        h.teardown.offloaded,
        q.created,
        q.upgraded(),
        h.rst_sent
    );
    Ok(KvMeasurement {
        server,
        per_conn,
        round,
        transactions: w.transactions,
        wall_s: w.wall,
        host_ns: w.ns(w.host_cycles, tsc_hz),
        host_idle_ns: w.ns(w.idle_cycles, tsc_hz),
        nic_ns: w.ns(w.nic_cycles, tsc_hz),
        link: LinkPerTxn {
            to_host_packets: rx.packets as f64 / t,
            to_host_bytes: rx.bytes as f64 / t,
            to_nic_packets: tx.packets as f64 / t,
            to_nic_bytes: tx.bytes as f64 / t,
            dma_copies: (rx.dma_copies + tx.dma_copies) as f64 / t,
        },
        latency,
        errors: errs.describe(),
        error_count: errs.total(),
        note,
    })
}

/// Runs the key-value benchmark as `opts` says. Progress goes to standard error.
pub fn kv(opts: &KvBenchOpts) -> Result<KvBenchReport, String> {
    opts.validate()?;
    let core = match opts.core {
        Some(c) => c,
        None => *dataplane::sys::allowed_cores()
            .map_err(|e| e.to_string())?
            .first()
            .ok_or("no CPU core allowed")?,
    };
    if let Err(e) = dataplane::sys::pin_current_thread(core) {
        eprintln!("bench: could not pin to core {core}: {e}");
    }
    let tsc_hz = dataplane::cycles::measure_tsc_hz(Duration::from_millis(100));
    let mut report = KvBenchReport {
        opts: opts.clone(),
        tsc_hz,
        rounds: Vec::new(),
    };
    for &row in &opts.rows {
        for r in 0..opts.rounds {
            let mut order = opts.servers.clone();
            let k = r as usize % order.len();
            order.rotate_left(k);
            for s in order {
                if opts.stop.load(Ordering::Relaxed) {
                    return Err("interrupted".into());
                }
                let m = round(opts, row, r, tsc_hz, s)
                    .map_err(|e| format!("{} {} round {}: {e}", row_name(row), s.name(), r + 1))?;
                eprintln!(
                    "bench kv: {:<11} round {} {:<15} {:>9.0} req/s {:>7.0} host ns/req",
                    row_name(row),
                    r + 1,
                    s.name(),
                    m.tps(),
                    m.host_ns_per_req()
                );
                report.rounds.push(m);
            }
        }
    }
    Ok(report)
}

mod report;
pub(super) use report::link_json;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse() {
        assert_eq!(parse_rows("short,persistent").unwrap(), vec![1, 0]);
        assert_eq!(parse_rows("1, 0, 4, 1").unwrap(), vec![1, 0, 4]);
        assert!(parse_rows("").is_err());
        assert!(parse_rows("many").is_err());
        let bad = KvBenchOpts {
            servers: vec![Server::Nicemu, Server::Kernel],
            ..KvBenchOpts::default()
        };
        assert!(bad.validate().is_err());
    }
}
