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

fn per_conn_label(n: u64) -> String {
    if n == 0 {
        "persistent".into()
    } else {
        n.to_string()
    }
}

fn per_conn_x(n: u64) -> f64 {
    if n == 0 {
        PERSISTENT_X
    } else {
        n as f64
    }
}

fn ratio_text(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}x"),
        Some(_) => "inf".into(),
        None => "-".into(),
    }
}

impl ProxyBenchReport {
    fn of(&self, mode: RelayMode, size: usize, per_conn: u64) -> impl Iterator<Item = &ProxyPoint> {
        self.points
            .iter()
            .filter(move |p| p.mode == mode && p.size == size && p.per_conn == per_conn)
    }

    /// Median over rounds of `f` for one configuration and mode.
    pub fn median_of(
        &self,
        mode: RelayMode,
        size: usize,
        per_conn: u64,
        f: impl Fn(&ProxyPoint) -> f64,
    ) -> Option<f64> {
        median(self.of(mode, size, per_conn).map(f).collect())
    }

    /// Median over rounds of relay's `f` ÷ splice's `f` in the same round (infinite when
    /// the splice's is zero).
    pub fn ratio(&self, size: usize, per_conn: u64, f: impl Fn(&ProxyPoint) -> f64) -> Option<f64> {
        let v: Vec<f64> = self
            .of(RelayMode::Relay, size, per_conn)
            .filter_map(|r| {
                let s = self
                    .of(RelayMode::Splice, size, per_conn)
                    .find(|s| s.round == r.round)?;
                let (a, b) = (f(r), f(s));
                Some(if b > 0.0 { a / b } else { f64::INFINITY })
            })
            .collect();
        median(v)
    }

    /// The host-cost ratio relay ÷ splice for one configuration.
    pub fn host_ratio(&self, size: usize, per_conn: u64) -> Option<f64> {
        self.ratio(size, per_conn, ProxyPoint::host_ns_per_txn)
    }

    /// The goals of BENCHMARKS.md: host relay costs at least 3x the splice per transaction
    /// at 8 transactions per connection, and more as connections get longer (128, then
    /// persistent).
    pub fn goals(&self) -> Vec<Goal> {
        let mut out = Vec::new();
        for &size in &self.opts.sizes {
            let r8 = self.host_ratio(size, 8);
            out.push(Goal {
                what: format!(
                    "{size} B: host relay >= 3x splice per transaction at 8 transactions per \
                     connection ({})",
                    ratio_text(r8)
                ),
                met: r8.map(|r| r >= 3.0),
            });
            let chain: Vec<(u64, f64)> = [8, 128, 0]
                .into_iter()
                .filter_map(|n| Some((n, self.host_ratio(size, n)?)))
                .collect();
            let text: Vec<String> = chain
                .iter()
                .map(|(n, r)| format!("{}: {}", per_conn_label(*n), ratio_text(Some(*r))))
                .collect();
            out.push(Goal {
                what: format!(
                    "{size} B: the ratio grows as connections get longer ({})",
                    text.join(", ")
                ),
                met: (chain.len() >= 2).then(|| chain.windows(2).all(|w| w[1].1 > w[0].1)),
            });
        }
        out
    }

    /// Medians over rounds of the proxy host's busy time per client connection opened in
    /// the window, as (total, stack, proxy) nanoseconds, and of the PCIe frames per
    /// connection (both directions): where the per-connection work goes. None for
    /// persistent connections (none opened in the window) or a missing point.
    pub fn per_connection(
        &self,
        mode: RelayMode,
        size: usize,
        per_conn: u64,
    ) -> Option<(f64, f64, f64, f64)> {
        if per_conn == 0 {
            return None;
        }
        let per = |f: &dyn Fn(&ProxyPoint) -> f64| {
            median(
                self.of(mode, size, per_conn)
                    .filter(|p| p.connections > 0)
                    .map(|p| f(p) / p.connections as f64)
                    .collect(),
            )
        };
        Some((
            per(&|p| p.host_stack_ns + p.host_app_ns)?,
            per(&|p| p.host_stack_ns)?,
            per(&|p| p.host_app_ns)?,
            per(&|p| p.frames_per_txn() * p.transactions as f64)?,
        ))
    }

    /// The report as JSON (settings, every window, the ratios and the goals).
    pub fn to_json(&self) -> String {
        let o = &self.opts;
        // Three decimals are plenty for nanoseconds and ratios; not finite: null.
        let r3 = |x: f64| Json::Num((x * 1000.0).round() / 1000.0);
        let opt = |r: Option<f64>| r.map_or(Json::Null, r3);
        let points: Vec<Json> = self
            .points
            .iter()
            .map(|p| {
                let l = &p.link;
                Json::obj()
                    .with("mode", p.mode.name())
                    .with("size", p.size)
                    .with("per_conn", p.per_conn)
                    .with("round", p.round)
                    .with("transactions", p.transactions)
                    .with("connections", p.connections)
                    .with("wall_s", r3(p.wall_s))
                    .with("txn_per_s", r3(p.tps()))
                    .with("host_ns_per_txn", r3(p.host_ns_per_txn()))
                    .with("host_stack_ns_per_txn", r3(p.per_txn(p.host_stack_ns)))
                    .with("host_app_ns_per_txn", r3(p.per_txn(p.host_app_ns)))
                    .with("host_idle_ns_per_txn", r3(p.per_txn(p.host_idle_ns)))
                    .with("host_all_ns_per_txn", r3(p.host_all_ns_per_txn()))
                    .with("nic_ns_per_txn", r3(p.nic_ns_per_txn()))
                    .with("nic_idle_ns_per_txn", r3(p.per_txn(p.nic_idle_ns)))
                    .with("host_ns_per_conn", opt(p.host_ns_per_conn()))
                    .with("on_cpu", r3(p.on_cpu))
                    .with("pcie_to_host_packets_per_txn", r3(l.to_host_packets))
                    .with("pcie_to_host_bytes_per_txn", r3(l.to_host_bytes))
                    .with("pcie_to_nic_packets_per_txn", r3(l.to_nic_packets))
                    .with("pcie_to_nic_bytes_per_txn", r3(l.to_nic_bytes))
                    .with("dma_copies_per_txn", r3(l.dma_copies))
                    .with("errors", p.errors)
                    .with("detail", p.detail.as_str())
            })
            .collect();
        let mut ratios = Vec::new();
        for &size in &o.sizes {
            for &n in &o.per_conn {
                ratios.push(
                    Json::obj()
                        .with("size", size)
                        .with("per_conn", n)
                        .with("host_ns_relay_over_splice", opt(self.host_ratio(size, n)))
                        .with(
                            "frames_relay_over_splice",
                            opt(self.ratio(size, n, ProxyPoint::frames_per_txn)),
                        )
                        .with(
                            "tps_relay_over_splice",
                            opt(self.ratio(size, n, ProxyPoint::tps)),
                        ),
                );
            }
        }
        let goals: Vec<Json> = self
            .goals()
            .iter()
            .map(|g| Json::obj().with("goal", g.what.as_str()).with("met", g.met))
            .collect();
        Json::obj()
            .with("benchmark", "proxy")
            .with("conns", o.conns)
            .with("sizes", o.sizes.clone())
            .with("per_conn", o.per_conn.clone())
            .with(
                "modes",
                o.modes
                    .iter()
                    .map(|m| Json::from(m.name()))
                    .collect::<Vec<_>>(),
            )
            .with("backends", o.backends)
            .with("seconds", r3(o.seconds))
            .with("warmup_seconds", r3(o.warmup_seconds))
            .with("rounds", o.rounds)
            .with("proxy_mode", if o.http { "http" } else { "tunnel" })
            .with("tsc_hz", self.tsc_hz)
            .with("points", points)
            .with("ratios", ratios)
            .with("goals", goals)
            .pretty()
    }

    /// Writes the SVG plots into `dir` (made if missing) and returns their paths: host ns
    /// per transaction and transactions per second over transactions per connection (lines:
    /// mode × size; AccelTCP Figure 13's axes), and per size a stacked bar of the proxy
    /// node's CPU per transaction (host stack, proxy, NIC lcore; busy rounds).
    pub fn write_plots(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut written = Vec::new();
        let mut per_conn = self.opts.per_conn.clone();
        per_conn.sort_by_key(|&n| if n == 0 { u64::MAX } else { n });
        let lines = |f: &dyn Fn(&ProxyPoint) -> f64| -> Vec<Series> {
            let mut v = Vec::new();
            for &mode in &self.opts.modes {
                for &size in &self.opts.sizes {
                    let pts = per_conn
                        .iter()
                        .filter_map(|&n| Some((per_conn_x(n), self.median_of(mode, size, n, f)?)))
                        .collect();
                    v.push(Series::new(format!("{} {size} B", mode.name()), pts).with_markers());
                }
            }
            v
        };
        let x_label =
            format!("transactions per connection (log; persistent plotted at {PERSISTENT_X})");
        let host = LinePlot {
            title: "L7 proxy: proxy host CPU per transaction (busy rounds)".into(),
            x_label: x_label.clone(),
            y_label: "host CPU per transaction (ns)".into(),
            series: lines(&ProxyPoint::host_ns_per_txn),
            log_x: true,
            y_from_zero: true,
        };
        let path = dir.join("proxy_host_ns.svg");
        host.write_svg(&path).map_err(|e| e.to_string())?;
        written.push(path);
        let tps = LinePlot {
            title: "L7 proxy: transactions per second (whole emulation loop, one core)".into(),
            x_label,
            y_label: "transactions per second (txn/s)".into(),
            series: lines(&ProxyPoint::tps),
            log_x: true,
            y_from_zero: true,
        };
        let path = dir.join("proxy_tps.svg");
        tps.write_svg(&path).map_err(|e| e.to_string())?;
        written.push(path);
        for &size in &self.opts.sizes {
            let mut categories = Vec::new();
            let mut comps: [Vec<f64>; 3] = Default::default();
            for &n in &per_conn {
                for &mode in &self.opts.modes {
                    let m = |f: &dyn Fn(&ProxyPoint) -> f64| {
                        self.median_of(mode, size, n, f).unwrap_or(0.0)
                    };
                    categories.push(format!(
                        "{} {}",
                        mode.name(),
                        if n == 0 {
                            "pers.".to_string()
                        } else {
                            format!("n={n}")
                        }
                    ));
                    comps[0].push(m(&|p| p.per_txn(p.host_stack_ns)));
                    comps[1].push(m(&|p| p.per_txn(p.host_app_ns)));
                    comps[2].push(m(&ProxyPoint::nic_ns_per_txn));
                }
            }
            let [a, b, c] = comps;
            let bars = StackedBars {
                title: format!(
                    "L7 proxy node CPU per transaction, {size} B messages (n = txn/connection)"
                ),
                y_label: "CPU per transaction, busy rounds (ns)".into(),
                categories,
                components: vec![
                    ("host: TCP stack (Context::poll)".into(), a),
                    ("host: proxy (Proxy::step, socket calls)".into(), b),
                    ("NIC lcore (splice offload, NIC stack)".into(), c),
                ],
            };
            let path = dir.join(format!("proxy_cpu_split_{size}B.svg"));
            bars.write_svg(&path).map_err(|e| e.to_string())?;
            written.push(path);
        }
        Ok(written)
    }
}

impl fmt::Display for ProxyBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        writeln!(
            f,
            "proxy benchmark (AccelTCP Table 2 / Figures 12-13): {} client connections in \
             flight through nicemu's L7 proxy ({} mode) to {} back end(s), {} round(s) of {} s \
             per configuration and mode (after {} s of warm-up), TSC {:.3} GHz",
            o.conns,
            if o.http { "http" } else { "tunnel" },
            o.backends,
            o.rounds,
            o.seconds,
            o.warmup_seconds,
            self.tsc_hz as f64 / 1e9
        )?;
        let heads: Vec<String> = self
            .response_heads
            .iter()
            .map(|(s, h)| format!("{h} B for {s} B"))
            .collect();
        writeln!(
            f,
            "transaction = one {}-byte `GET /` head and its 200 response; message = the \
             response body (Content-Length bytes); the response head adds {}",
            self.request_len,
            heads.join(", ")
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:>6} {:>10} {:<6} {:>5} {:>10} {:>9} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>6}",
            "size",
            "txn/conn",
            "mode",
            "round",
            "txn/s",
            "host ns",
            "stack",
            "proxy",
            "+idle ns",
            "NIC ns",
            "PCIe->h",
            "PCIe->n",
            "errors"
        )?;
        for p in &self.points {
            writeln!(
                f,
                "{:>6} {:>10} {:<6} {:>5} {:>10.0} {:>9.0} {:>8.0} {:>9.0} {:>9.0} {:>8.0} {:>9.2} {:>9.2} {:>6}",
                p.size,
                per_conn_label(p.per_conn),
                p.mode.name(),
                p.round + 1,
                p.tps(),
                p.host_ns_per_txn(),
                p.per_txn(p.host_stack_ns),
                p.per_txn(p.host_app_ns),
                p.per_txn(p.host_idle_ns),
                p.nic_ns_per_txn(),
                p.link.to_host_packets,
                p.link.to_nic_packets,
                p.errors
            )?;
        }
        writeln!(
            f,
            "(per transaction: host ns = proxy host, busy rounds = stack + proxy; +idle ns = \
             the host's idle polls, not in host ns; NIC ns = proxy NIC lcore, busy rounds; \
             PCIe->h / ->n = frames NIC->host / host->NIC on the proxy's link)"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "summary (medians over rounds; ratios relay / splice in the same round):"
        )?;
        writeln!(
            f,
            "{:>6} {:>10} {:>12} {:>12} {:>10} {:>12} {:>12} {:>10} {:>10}",
            "size",
            "txn/conn",
            "splice ns",
            "relay ns",
            "host x",
            "splice txn/s",
            "relay txn/s",
            "frames x",
            "NIC x"
        )?;
        for &size in &o.sizes {
            for &n in &o.per_conn {
                let m = |mode, g: &dyn Fn(&ProxyPoint) -> f64| {
                    self.median_of(mode, size, n, g)
                        .map_or("-".into(), |v| format!("{v:.0}"))
                };
                writeln!(
                    f,
                    "{:>6} {:>10} {:>12} {:>12} {:>10} {:>12} {:>12} {:>10} {:>10}",
                    size,
                    per_conn_label(n),
                    m(RelayMode::Splice, &ProxyPoint::host_ns_per_txn),
                    m(RelayMode::Relay, &ProxyPoint::host_ns_per_txn),
                    ratio_text(self.host_ratio(size, n)),
                    m(RelayMode::Splice, &ProxyPoint::tps),
                    m(RelayMode::Relay, &ProxyPoint::tps),
                    ratio_text(self.ratio(size, n, ProxyPoint::frames_per_txn)),
                    ratio_text(self.ratio(size, n, ProxyPoint::nic_ns_per_txn)),
                )?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "proxy host busy time per client connection opened in the window (stack + proxy) \
             and PCIe frames per connection:"
        )?;
        for &size in &o.sizes {
            for &mode in &o.modes {
                for &n in &o.per_conn {
                    if let Some((t, st, app, fr)) = self.per_connection(mode, size, n) {
                        writeln!(
                            f,
                            "  {:<6} {size:>5} B n={n:<4}: {t:>8.0} ns ({st:.0} + {app:.0}), \
                             {fr:.1} frames",
                            mode.name()
                        )?;
                    }
                }
            }
        }
        writeln!(f)?;
        writeln!(f, "counters per run:")?;
        for p in &self.points {
            writeln!(
                f,
                "  {} {} B n={} round {}: {}",
                p.mode.name(),
                p.size,
                per_conn_label(p.per_conn),
                p.round + 1,
                p.detail
            )?;
        }
        writeln!(f)?;
        writeln!(f, "goals:")?;
        for g in self.goals() {
            let verdict = match g.met {
                Some(true) => "MET",
                Some(false) => "NOT MET",
                None => "not measured",
            };
            writeln!(f, "  {}: {verdict}", g.what)?;
        }
        Ok(())
    }
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
                         {:>7.0} NIC ns/txn {:>5.2} PCIe frames/txn, errors {}",
                        mode.name(),
                        size,
                        per_conn_label(per_conn),
                        p.tps(),
                        p.host_ns_per_txn(),
                        p.nic_ns_per_txn(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!(
            parse_modes("splice, relay,splice").unwrap(),
            vec![RelayMode::Splice, RelayMode::Relay]
        );
        assert!(parse_modes("").is_err());
        assert!(parse_modes("splice,kernel").is_err());
    }

    #[test]
    fn bad_settings_are_errors() {
        let ok = ProxyBenchOpts::default();
        assert!(ok.validate().is_ok());
        for bad in [
            ProxyBenchOpts {
                conns: 0,
                ..ok.clone()
            },
            ProxyBenchOpts {
                sizes: vec![],
                ..ok.clone()
            },
            ProxyBenchOpts {
                sizes: vec![MAX_BODY + 1],
                ..ok.clone()
            },
            ProxyBenchOpts {
                seconds: f64::NAN,
                ..ok.clone()
            },
            ProxyBenchOpts {
                warmup_seconds: -1.0,
                ..ok.clone()
            },
            ProxyBenchOpts {
                backends: 0,
                ..ok.clone()
            },
            ProxyBenchOpts {
                per_conn: vec![],
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    fn point(mode: RelayMode, per_conn: u64, round: u32, host_ns: f64) -> ProxyPoint {
        ProxyPoint {
            mode,
            size: 64,
            per_conn,
            round,
            transactions: 1000,
            connections: 10,
            wall_s: 1.0,
            host_stack_ns: host_ns / 2.0,
            host_app_ns: host_ns / 2.0,
            host_idle_ns: 0.0,
            nic_ns: 1000.0,
            nic_idle_ns: 0.0,
            on_cpu: 1.0,
            link: LinkPerTxn::default(),
            errors: 0,
            detail: "a \"quoted\"\nline".into(),
        }
    }

    #[test]
    fn ratios_goals_json_and_plots() {
        let opts = ProxyBenchOpts {
            sizes: vec![64],
            rounds: 2,
            ..ProxyBenchOpts::default()
        };
        let mut points = Vec::new();
        for round in 0..2 {
            for (n, s, r) in [
                (1, 10e6, 15e6),
                (8, 2e6, 8e6),
                (128, 1e6, 8e6),
                (0, 0.0, 7e6),
            ] {
                points.push(point(RelayMode::Splice, n, round, s));
                points.push(point(RelayMode::Relay, n, round, r));
            }
        }
        let report = ProxyBenchReport {
            opts,
            tsc_hz: 1,
            points,
            request_len: 59,
            response_heads: vec![(64, 39)],
        };
        assert_eq!(report.host_ratio(64, 8), Some(4.0));
        assert_eq!(report.host_ratio(64, 0), Some(f64::INFINITY));
        let goals = report.goals();
        assert_eq!(goals.len(), 2);
        assert!(goals.iter().all(|g| g.met == Some(true)), "{goals:?}");
        // 10 connections per window: 1000 transactions at 10 µs busy each is 1 ms per
        // connection; none for persistent connections.
        let (t, st, app, _) = report.per_connection(RelayMode::Splice, 64, 1).unwrap();
        assert_eq!((t, st, app), (1e6, 5e5, 5e5));
        assert_eq!(report.per_connection(RelayMode::Relay, 64, 0), None);
        let json = report.to_json();
        assert!(json.contains("\"host_ns_relay_over_splice\": 4,"), "{json}");
        assert!(json.contains("a \\\"quoted\\\"\\nline"));
        assert!(json.contains("\"host_ns_relay_over_splice\": null"));
        let text = report.to_string();
        assert!(text.contains("MET") && !text.contains("NOT MET"), "{text}");
        let dir = std::env::temp_dir().join(format!("nicemu-bench-proxy-{}", std::process::id()));
        let files = report.write_plots(&dir).unwrap();
        assert_eq!(files.len(), 3);
        for f in &files {
            let svg = std::fs::read_to_string(f).unwrap();
            assert!(svg.contains("<svg"), "{}", f.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn json_is_valid_and_rounded() {
        let report = ProxyBenchReport {
            opts: ProxyBenchOpts::default(),
            tsc_hz: 1,
            points: Vec::new(),
            request_len: 0,
            response_heads: Vec::new(),
        };
        let v = crate::json::parse(&report.to_json()).unwrap();
        assert_eq!(v.get("benchmark").and_then(Json::as_str), Some("proxy"));
        assert_eq!(v.get("proxy_mode").and_then(Json::as_str), Some("tunnel"));
        assert_eq!(v.get("seconds").and_then(Json::as_f64), Some(1.0));
    }
}
