//! `nicemu bench proxy`: the L7 proxy with and without the NIC's connection splicing, in
//! the shape of AccelTCP Table 2 and Figures 12–13 (§2.3, §4.3, §6.1.2; BENCHMARKS.md,
//! "AccelTCP Table 2 / Figures 12–13").
//!
//! Topology, on the in-memory wire: node A runs [`Proxy`] (host stack + NIC lcore with the
//! splice offload); node B runs the HTTP load generator ([`LoadGen`] with [`Proto::Http`])
//! and the back-end servers ([`HttpBackend`], one listener per back end), on one host
//! stack. A *transaction* is one `GET /` (a fixed 59-byte request head) answered by one
//! `200` whose body is the *message*: `size` bytes, framed by Content-Length (RFC 9112
//! §6.3; the response head adds 37 bytes plus the length's digits). The load generator keeps `conns` client connections in a
//! closed loop, one request in flight each, `per_conn` transactions per connection (0:
//! persistent); the proxy opens one back-end connection per client connection (tunnel mode).
//!
//! Two modes per configuration, side by side: **splice** (`nsplice` after the first request
//! head: the NIC relays the rest of the pair, AccelTCP §4.3) and **relay** (the proxy
//! relays both directions on the host, as eproxy on mTCP does).
//!
//! One thread steps the parts round-robin in wall-clock mode (node B's generators and
//! servers, B's NIC, A's NIC, A's host) and times with the TSC only node A's parts: the NIC
//! lcore's `poll_once`, and the host's `Context::poll` plus [`Proxy::step`]. A host round
//! counts as *busy* when it moved a frame across the PCIe link, fired a timer or handled an
//! event; idle rounds (polling an empty ring) are reported apart, because the emulation's
//! round-robin makes them an artefact: a saturated proxy core, as in AccelTCP's
//! measurements, has none. The same holds for the NIC lcore. Times are scaled by the share
//! of the window the thread was on a CPU (CLOCK_THREAD_CPUTIME_ID), as `bench echo` does.

use std::fmt::{self, Write as _};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataplane::clock::Clock;
use dataplane::cycles::rdtsc;
use dataplane::offload::splice::SpliceOffload;
use dataplane::port::wire::{self, WireConfig, WireQueue};
use offload_api::link::LinkCounters;

use super::http_backend::{HttpBackend, MAX_BODY};
use super::inmem::ring_frames;
use super::procstat::thread_cpu_ns;
use super::{median, Deadline, LinkPerTxn};
use crate::json::Json;
use crate::loadgen::{LoadGen, LoadGenConfig, Proto};
use crate::node::{Node, NodeSpec};
use crate::plot::{LinePlot, Series, StackedBars};
use crate::proxy::{Policy, Proxy, ProxyConfig, ProxyMode};

/// The proxy node's address (198.18.0.0/15 is reserved for benchmarks, RFC 2544).
const PROXY_IP: [u8; 4] = [198, 18, 1, 1];
/// The address of the node with the clients and the back ends.
const PEERS_IP: [u8; 4] = [198, 18, 1, 2];
const PROXY_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xbf, 0x01];
const PEERS_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xbf, 0x02];
/// The proxy's port.
const PROXY_PORT: u16 = 80;
/// The first back end's port (the others follow).
const BACKEND_PORT: u16 = 8080;
/// With several transactions per connection, the clients start in this many cohorts spread
/// over one connection lifetime, so that connection setups are spread over time (all
/// connections opened at once would also close at about the same time, and a window would
/// see one or two bursts of setups by chance).
const COHORTS: usize = 8;
/// Where the persistent case sits on the plots' x axis.
const PERSISTENT_X: f64 = 1024.0;

/// How the proxy moves the bytes after the first request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelayMode {
    /// `nsplice`: the NIC relays the pair (AccelTCP §4.3, §5.1).
    Splice,
    /// The proxy relays both directions on the host (`ProxyConfig::splice` off).
    Relay,
}

impl RelayMode {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            RelayMode::Splice => "splice",
            RelayMode::Relay => "relay",
        }
    }
}

/// Parses a comma-separated mode list (`splice,relay`).
pub fn parse_modes(s: &str) -> Result<Vec<RelayMode>, String> {
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = match name {
            "splice" => RelayMode::Splice,
            "relay" | "host" => RelayMode::Relay,
            other => return Err(format!("unknown mode {other:?}, expected splice or relay")),
        };
        if !v.contains(&m) {
            v.push(m);
        }
    }
    if v.is_empty() {
        return Err("no mode given".into());
    }
    Ok(v)
}

/// Settings of the proxy benchmark.
#[derive(Clone, Debug)]
pub struct ProxyBenchOpts {
    /// Client connections in flight (the proxy holds twice as many TCP connections).
    pub conns: usize,
    /// Message (response body) sizes, bytes.
    pub sizes: Vec<usize>,
    /// Transactions per connection; 0: persistent connections.
    pub per_conn: Vec<u64>,
    /// The modes compared.
    pub modes: Vec<RelayMode>,
    /// Back-end servers (ports on node B), chosen round robin by the proxy.
    pub backends: usize,
    /// Measured seconds per configuration and mode.
    pub seconds: f64,
    /// Seconds of traffic before each measured window (after the load is fully up).
    pub warmup_seconds: f64,
    /// Rounds; each runs every configuration in every mode (the mode order alternates).
    pub rounds: u32,
    /// The proxy in its `http` mode (every request parsed; only a connection's last
    /// exchange, which the clients mark `Connection: close`, is spliced, after its response
    /// head) instead of `tunnel` (AccelTCP's epproxy: spliced after the first head).
    pub http: bool,
    /// Set to stop early (Ctrl-C); the benchmark then fails.
    pub stop: Arc<AtomicBool>,
}

impl Default for ProxyBenchOpts {
    fn default() -> Self {
        ProxyBenchOpts {
            conns: 256,
            sizes: vec![64, 1500],
            per_conn: vec![1, 8, 128, 0],
            modes: vec![RelayMode::Splice, RelayMode::Relay],
            backends: 2,
            seconds: 1.0,
            warmup_seconds: 0.3,
            rounds: 1,
            http: false,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl ProxyBenchOpts {
    fn check_stop(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            Err("interrupted".into())
        } else {
            Ok(())
        }
    }

    /// Checks every setting (bad values are errors, never panics).
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16_000).contains(&self.conns) {
            return Err(format!("--conns {}: expected 1..=16000", self.conns));
        }
        if self.sizes.is_empty() {
            return Err("--sizes: no size given".into());
        }
        if let Some(s) = self.sizes.iter().find(|&&s| s > MAX_BODY) {
            return Err(format!("--sizes {s}: expected 0..={MAX_BODY}"));
        }
        if self.per_conn.is_empty() {
            return Err("--per-conn: nothing given".into());
        }
        if let Some(n) = self.per_conn.iter().find(|&&n| n > 1_000_000) {
            return Err(format!(
                "--per-conn {n}: expected 0..=1000000 (0: persistent)"
            ));
        }
        if self.modes.is_empty() {
            return Err("--modes: no mode given".into());
        }
        if !(1..=64).contains(&self.backends) {
            return Err(format!("--backends {}: expected 1..=64", self.backends));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 600.0) {
            return Err(format!("--seconds {}: expected (0, 600]", self.seconds));
        }
        if !(self.warmup_seconds.is_finite() && (0.0..=60.0).contains(&self.warmup_seconds)) {
            return Err(format!(
                "--warmup {}: expected [0, 60]",
                self.warmup_seconds
            ));
        }
        if !(1..=100).contains(&self.rounds) {
            return Err(format!("--rounds {}: expected 1..=100", self.rounds));
        }
        Ok(())
    }
}

/// One configuration in one mode, one round: what the measured window saw.
#[derive(Clone, Debug)]
pub struct ProxyPoint {
    /// Splice or relay.
    pub mode: RelayMode,
    /// Message (response body) size, bytes.
    pub size: usize,
    /// Transactions per connection (0: persistent).
    pub per_conn: u64,
    /// Round (0-based).
    pub round: u32,
    /// Transactions completed in the window.
    pub transactions: u64,
    /// Client connections opened in the window.
    pub connections: u64,
    /// Length of the window, seconds.
    pub wall_s: f64,
    /// Proxy host, busy rounds: nanoseconds in `Context::poll` (link rx, TCP, timers, tx).
    pub host_stack_ns: f64,
    /// Proxy host, busy rounds: nanoseconds in `Proxy::step` (its `epoll_wait`, the state
    /// machines and their socket calls, `nsplice`).
    pub host_app_ns: f64,
    /// Proxy host: nanoseconds of idle rounds (nothing crossed the link, no event).
    pub host_idle_ns: f64,
    /// Proxy NIC lcore: nanoseconds of rounds that moved frames.
    pub nic_ns: f64,
    /// Proxy NIC lcore: nanoseconds of empty rounds.
    pub nic_idle_ns: f64,
    /// Share of the window the thread was on a CPU.
    pub on_cpu: f64,
    /// What crossed the proxy node's PCIe link, per transaction.
    pub link: LinkPerTxn,
    /// Errors over the whole run (warm-up included): the load generator's, plus responses
    /// the proxy made itself, plus back-end resets.
    pub errors: u64,
    /// Counters of the run, for the report.
    pub detail: String,
}

impl ProxyPoint {
    fn per_txn(&self, ns: f64) -> f64 {
        ns / self.transactions.max(1) as f64
    }

    /// Transactions per second of wall time (the whole single-threaded emulation loop).
    pub fn tps(&self) -> f64 {
        self.transactions as f64 / self.wall_s.max(1e-9)
    }

    /// Proxy host CPU per transaction, busy rounds (stack + proxy), nanoseconds.
    pub fn host_ns_per_txn(&self) -> f64 {
        self.per_txn(self.host_stack_ns + self.host_app_ns)
    }

    /// Proxy host CPU per transaction with idle rounds included, nanoseconds.
    pub fn host_all_ns_per_txn(&self) -> f64 {
        self.per_txn(self.host_stack_ns + self.host_app_ns + self.host_idle_ns)
    }

    /// Proxy NIC lcore time per transaction, busy rounds, nanoseconds.
    pub fn nic_ns_per_txn(&self) -> f64 {
        self.per_txn(self.nic_ns)
    }

    /// Proxy host plus NIC lcore per transaction, busy rounds of both, nanoseconds.
    pub fn host_nic_ns_per_txn(&self) -> f64 {
        self.per_txn(self.host_stack_ns + self.host_app_ns + self.nic_ns)
    }

    /// Frames across the proxy's PCIe link per transaction, both directions.
    pub fn frames_per_txn(&self) -> f64 {
        self.link.to_host_packets + self.link.to_nic_packets
    }

    /// Proxy host CPU per client connection opened in the window (busy), nanoseconds.
    pub fn host_ns_per_conn(&self) -> Option<f64> {
        (self.connections > 0)
            .then(|| (self.host_stack_ns + self.host_app_ns) / self.connections as f64)
    }
}

/// Everything `nicemu bench proxy` measured.
#[derive(Clone, Debug)]
pub struct ProxyBenchReport {
    /// The settings.
    pub opts: ProxyBenchOpts,
    /// TSC frequency used to convert cycles to nanoseconds.
    pub tsc_hz: u64,
    /// Every measured window, in the order run.
    pub points: Vec<ProxyPoint>,
    /// The request head's length, bytes.
    pub request_len: usize,
    /// The response head length for each size (bytes before the body).
    pub response_heads: Vec<(usize, usize)>,
}

/// Whether a goal held.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    /// What was checked.
    pub what: String,
    /// None when the sweep lacks the points to check it.
    pub met: Option<bool>,
}

/// What the clients ask: `GET /` with `Host: bench`.
fn request_proto() -> Proto {
    Proto::Http {
        path: "/".into(),
        host: "bench".into(),
    }
}

/// A node of the benchmark on `q`, set up for `conns` client connections.
fn node(
    name: &str,
    ip: [u8; 4],
    mac: [u8; 6],
    q: WireQueue,
    clock: &Clock,
    conns: usize,
) -> Node<WireQueue> {
    let mut spec = NodeSpec::new(name, ip, 24, mac);
    // Clients close first (TIME_WAIT on node B), and the relaying proxy closes its back-end
    // connection first (TIME_WAIT on node A): both reuse ports soon, as Linux's
    // tcp_tw_reuse lets them; 100 ms stays above the round trip under load.
    spec.host.tcp.time_wait_ns = 100_000_000;
    spec.host.tcp.nodelay = true;
    // Node A holds two TCP connections per client connection.
    spec.link.depth = ring_frames(2 * conns);
    spec.host.max_syn_backlog = spec.host.max_syn_backlog.max(2 * conns);
    spec.host.ephemeral = (1024, 65535);
    Node::new(spec, q, clock)
}

fn wire(clock: &Clock, conns: usize) -> (WireQueue, WireQueue) {
    let (mut a, mut b) = wire::wire_pair(&WireConfig {
        queues: 1,
        ring_size: ring_frames(2 * conns).max(16384),
        macs: [PROXY_MAC, PEERS_MAC],
        clock: clock.clone(),
        ..WireConfig::default()
    });
    (
        a.take_queue(0).expect("queue 0"),
        b.take_queue(0).expect("queue 0"),
    )
}

/// TSC cycles of the proxy node's parts.
#[derive(Default)]
struct Cycles {
    stack: u64,
    app: u64,
    idle: u64,
    nic: u64,
    nic_idle: u64,
}

/// One run: both nodes, the proxy, the back ends and the client cohorts.
struct Run {
    clock: Clock,
    a: Node<WireQueue>,
    b: Node<WireQueue>,
    proxy: Proxy,
    backend: HttpBackend,
    gens: Vec<LoadGen>,
    /// Cohort k starts once `starts[k]` transactions are done.
    starts: Vec<u64>,
    started: usize,
}

impl Run {
    fn new(
        opts: &ProxyBenchOpts,
        mode: RelayMode,
        size: usize,
        per_conn: u64,
    ) -> Result<Run, String> {
        let clock = Clock::real();
        let (qa, qb) = wire(&clock, opts.conns);
        let mut a = node("proxy", PROXY_IP, PROXY_MAC, qa, &clock, opts.conns);
        let mut b = node("peers", PEERS_IP, PEERS_MAC, qb, &clock, opts.conns);
        let ports: Vec<u16> = (0..opts.backends)
            .map(|i| BACKEND_PORT + i as u16)
            .collect();
        let backend = HttpBackend::new(&mut b.host, &ports, size, opts.conns + 64)
            .map_err(|e| format!("back end: {e:?}"))?;
        let proxy = Proxy::new(
            &mut a.host,
            ProxyConfig {
                listen: PROXY_PORT,
                backends: ports
                    .iter()
                    .map(|&p| SocketAddrV4::new(PEERS_IP.into(), p))
                    .collect(),
                policy: Policy::RoundRobin,
                // AccelTCP's epproxy (Table 2) splices right after the first head: the
                // proxy's tunnel mode, chosen by name (its `http` mode parses every
                // request and splices only a connection's last exchange).
                mode: if opts.http {
                    ProxyMode::Http
                } else {
                    ProxyMode::Tunnel
                },
                add_header: None,
                splice: mode == RelayMode::Splice,
                max_clients: (2 * opts.conns).max(10_000),
                ..ProxyConfig::default()
            },
        )
        .map_err(|e| format!("proxy: {e:?}"))?;
        let cohorts = if per_conn >= 2 {
            COHORTS.min(opts.conns)
        } else {
            1
        };
        let mut gens = Vec::new();
        let mut starts = Vec::new();
        let generation = per_conn.saturating_mul(opts.conns as u64);
        for k in 0..cohorts {
            let n = opts.conns / cohorts + usize::from(k < opts.conns % cohorts);
            let mut cfg = LoadGenConfig::new(SocketAddrV4::new(PROXY_IP.into(), PROXY_PORT));
            cfg.conns = n;
            cfg.size = size;
            cfg.per_conn = per_conn;
            cfg.proto = request_proto();
            // In http mode the last request says Connection: close, so that the proxy may
            // splice that exchange (a keep-alive exchange is relayed on the host).
            cfg.close_last = opts.http;
            gens.push(
                LoadGen::new(&mut b.host, cfg).map_err(|e| format!("load generator: {e:?}"))?,
            );
            starts.push(generation / cohorts as u64 * k as u64);
        }
        Ok(Run {
            clock,
            a,
            b,
            proxy,
            backend,
            gens,
            starts,
            started: 0,
        })
    }

    fn transactions(&self) -> u64 {
        self.gens.iter().map(|g| g.stats().transactions).sum()
    }

    fn established(&self) -> u64 {
        self.gens.iter().map(|g| g.stats().established).sum()
    }

    fn connects(&self) -> u64 {
        self.gens.iter().map(|g| g.stats().connects).sum()
    }

    fn load_errors(&self) -> u64 {
        self.gens.iter().map(|g| g.stats().errors.total()).sum()
    }

    /// One round of every part; the proxy node's parts are timed into `c`.
    fn step(&mut self, c: &mut Cycles) {
        if self.started < self.gens.len() && self.transactions() >= self.starts[self.started] {
            self.started += 1;
        }
        for g in &mut self.gens[..self.started] {
            g.step(&mut self.b.host);
        }
        self.backend.step(&mut self.b.host);
        self.b.nic.poll_once();
        let now = self.clock.now_ns();
        let t0 = rdtsc();
        let nic_work = self.a.nic.poll_once();
        let t1 = rdtsc();
        let frames0 = {
            let s = self.a.host.stats();
            s.frames_in + s.frames_out
        };
        let t2 = rdtsc();
        let stack_work = self.a.host.poll();
        let t3 = rdtsc();
        let events = self.proxy.step(&mut self.a.host, now);
        let t4 = rdtsc();
        let frames1 = {
            let s = self.a.host.stats();
            s.frames_in + s.frames_out
        };
        let nic = t1.wrapping_sub(t0);
        if nic_work > 0 {
            c.nic += nic;
        } else {
            c.nic_idle += nic;
        }
        let (stack, app) = (t3.wrapping_sub(t2), t4.wrapping_sub(t3));
        if stack_work > 0 || events > 0 || frames1 != frames0 {
            c.stack += stack;
            c.app += app;
        } else {
            c.idle += stack + app;
        }
    }

    /// True once the load is fully up: every persistent connection carried a transaction,
    /// or every cohort started and had time for a transaction per connection.
    fn warmed(&self, conns: usize, per_conn: u64) -> bool {
        let t = self.transactions();
        if per_conn == 0 {
            self.established() >= conns as u64 && t >= conns as u64
        } else {
            self.started == self.gens.len()
                && t >= self.starts.last().copied().unwrap_or(0) + conns as u64
        }
    }

    /// Counters of the run for the report, and the errors among them.
    fn counters(&self) -> (String, u64) {
        let ps = self.proxy.stats();
        let proxy_errors: u64 = ps.errors.values().sum();
        let bs = self.backend.stats();
        let hs = self.a.host.splice_stats();
        let load: Vec<String> = self
            .gens
            .iter()
            .map(|g| g.stats().errors.describe())
            .filter(|d| d != "none")
            .collect();
        let mut d = format!(
            "clients: errors {}; proxy: accepted {} requests {} spliced {} (refused {}) \
             closed on NIC {} relayed {} errors {}; back ends: accepted {} requests {} resets {}; \
             proxy host splice: installed {} refused {} install timeouts {} kept segments {} \
             (dropped {}) late frames {}",
            if load.is_empty() {
                "none".into()
            } else {
                load.join(" ")
            },
            ps.accepted,
            ps.requests,
            ps.spliced,
            ps.splice_refused,
            ps.splice_on_nic,
            ps.relayed,
            proxy_errors,
            bs.accepted,
            bs.requests,
            bs.errors,
            hs.installed,
            hs.refused,
            hs.install_timeouts,
            hs.kept_segments,
            hs.kept_dropped,
            hs.late_frames
        );
        if let Some(o) = self.a.nic.offload::<SpliceOffload>() {
            let s = o.stats();
            let _ = write!(
                d,
                "; proxy NIC splice: installs {} translated c->s {} s->c {} (from host {}) \
                 closed fin {} rst {} idle {}",
                s.installs,
                s.translated_ab,
                s.translated_ba,
                s.from_host,
                s.closed_fin,
                s.closed_rst,
                s.closed_idle
            );
        }
        (d, self.load_errors() + proxy_errors + bs.errors)
    }
}

/// Runs one configuration in one mode: setup, warm-up, measured window.
fn run_one(
    opts: &ProxyBenchOpts,
    tsc_hz: u64,
    mode: RelayMode,
    size: usize,
    per_conn: u64,
    round: u32,
) -> Result<ProxyPoint, String> {
    let mut run = Run::new(opts, mode, size, per_conn)?;
    let mut c = Cycles::default();
    let warm = Deadline::after(opts.warmup_seconds);
    let limit_s = opts.warmup_seconds + 30.0;
    let limit = Deadline::after(limit_s);
    let mut i = 0u64;
    loop {
        run.step(&mut c);
        i += 1;
        if i.is_multiple_of(256) {
            opts.check_stop()?;
            if run.warmed(opts.conns, per_conn) && warm.passed() {
                break;
            }
            if limit.passed() {
                let (d, _) = run.counters();
                return Err(format!(
                    "the load did not come up in {limit_s:.0} s: {} transactions, {} of {} \
                     connections established\n{d}\nproxy host: {:?}",
                    run.transactions(),
                    run.established(),
                    opts.conns,
                    run.a.host.stats()
                ));
            }
        }
    }
    let link0: (LinkCounters, LinkCounters) = {
        let l = run.a.host.link();
        (l.rx_counters(), l.tx_counters())
    };
    let (tx0, conn0) = (run.transactions(), run.connects());
    let mut c = Cycles::default();
    let cpu0 = thread_cpu_ns();
    let t0 = Instant::now();
    let end = Deadline::after(opts.seconds);
    loop {
        run.step(&mut c);
        i += 1;
        if i.is_multiple_of(64) && end.passed() {
            break;
        }
        if i.is_multiple_of(65_536) {
            opts.check_stop()?;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let on_cpu = ((thread_cpu_ns().saturating_sub(cpu0)) as f64 / 1e9 / wall.max(1e-9)).min(1.0);
    let transactions = run.transactions() - tx0;
    let connections = run.connects() - conn0;
    let l = run.a.host.link();
    let rx = l.rx_counters().delta(&link0.0);
    let tx = l.tx_counters().delta(&link0.1);
    let t = transactions.max(1) as f64;
    let ns = |cycles: u64| cycles as f64 * 1e9 / tsc_hz.max(1) as f64 * on_cpu;
    let (mut detail, errors) = run.counters();
    let _ = write!(
        detail,
        "; window: {connections} connections opened, on CPU {:.0}%",
        on_cpu * 100.0
    );
    Ok(ProxyPoint {
        mode,
        size,
        per_conn,
        round,
        transactions,
        connections,
        wall_s: wall,
        host_stack_ns: ns(c.stack),
        host_app_ns: ns(c.app),
        host_idle_ns: ns(c.idle),
        nic_ns: ns(c.nic),
        nic_idle_ns: ns(c.nic_idle),
        on_cpu,
        link: LinkPerTxn {
            to_host_packets: rx.packets as f64 / t,
            to_host_bytes: rx.bytes as f64 / t,
            to_nic_packets: tx.packets as f64 / t,
            to_nic_bytes: tx.bytes as f64 / t,
            dma_copies: (rx.dma_copies + tx.dma_copies) as f64 / t,
        },
        errors,
        detail,
    })
}

/// Runs the proxy benchmark as `opts` says and returns what it measured; progress goes to
/// standard error.
pub fn proxy(opts: &ProxyBenchOpts) -> Result<ProxyBenchReport, String> {
    opts.validate()?;
    match dataplane::sys::allowed_cores() {
        Ok(cores) => {
            if let Some(&core) = cores.first() {
                if let Err(e) = dataplane::sys::pin_current_thread(core) {
                    eprintln!("bench: could not pin to core {core}: {e}");
                }
            }
        }
        Err(e) => eprintln!("bench: no core list: {e}"),
    }
    let tsc_hz = dataplane::cycles::measure_tsc_hz(Duration::from_millis(100));
    let mut report = ProxyBenchReport {
        opts: opts.clone(),
        tsc_hz,
        points: Vec::new(),
        request_len: {
            let mut r = Vec::new();
            crate::loadgen::proto::request(&request_proto(), 0, 0, 0, false, &mut r);
            r.len()
        },
        response_heads: opts
            .sizes
            .iter()
            .map(|&s| {
                (
                    s,
                    super::http_backend::response(0).len() + s.to_string().len() - 1,
                )
            })
            .collect(),
    };
    let mut k = 0usize;
    for round in 0..opts.rounds {
        for &size in &opts.sizes {
            for &per_conn in &opts.per_conn {
                // The mode order alternates, so neither mode always runs first.
                let mut order = opts.modes.clone();
                let n = order.len();
                order.rotate_left(k % n);
                k += 1;
                for mode in order {
                    opts.check_stop()?;
                    let p = run_one(opts, tsc_hz, mode, size, per_conn, round).map_err(|e| {
                        format!(
                            "{} {size} B {} txn/conn round {}: {e}",
                            mode.name(),
                            per_conn_label(per_conn),
                            round + 1
                        )
                    })?;
                    eprintln!(
                        "bench: {:<6} {:>5} B {:>10} txn/conn: {:>9.0} txn/s {:>7.0} host ns/txn \
                         {:>7.0} NIC ns/txn {:>7.0} host+NIC ns/txn {:>5.2} PCIe frames/txn, \
                         errors {}",
                        mode.name(),
                        size,
                        per_conn_label(per_conn),
                        p.tps(),
                        p.host_ns_per_txn(),
                        p.nic_ns_per_txn(),
                        p.host_nic_ns_per_txn(),
                        p.frames_per_txn(),
                        p.errors
                    );
                    report.points.push(p);
                }
            }
        }
    }
    Ok(report)
}

mod report;
#[cfg(test)]
mod tests;

use report::per_conn_label;
