//! `nicemu echo`, `nicemu loadgen` and `nicemu kv`: the host applications as processes on
//! DPDK ports, over the process runtime (`procs.rs`): NIC lcores on their threads, one host
//! context per NIC lcore with the application, Ctrl-C or `--duration`, one summary (the NIC's
//! report, the application's counters, the host stacks' and the CPU split of AccelTCP
//! Table 1).
//!
//! - `echo`: [`EchoServer`](apps::echo::EchoServer) with AccelTCP's setup and teardown
//!   offloads (§4.1, §4.2) unless `--no-offload`; reports its exact transaction count
//!   (bytes echoed / message size).
//! - `loadgen`: [`LoadGen`](apps::loadgen::LoadGen) (echo, HTTP/1.1 GET, Redis SET+GET) with
//!   a progress line every second and a final summary (transactions/s, latency percentiles,
//!   errors by kind); fails when no transaction completed or any error happened.
//! - `kv`: the RESP2 server [`KvServer`](apps::kv::server::KvServer) on every host context,
//!   one keyspace shared by all of them ([`apps::kv::keyspace`]).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

use clap::Args;
use dataplane::config::Config;

/// Options every host application command takes.
#[derive(Args, Debug)]
pub struct HostCommon {
    /// The configuration file: ports and lcores as for `nicemu run` (see configs/).
    #[arg(short, long)]
    pub config: PathBuf,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(short, long)]
    pub duration: Option<f64>,
    /// Do not pin threads to their configured cores.
    #[arg(long)]
    pub no_pin: bool,
    /// DPDK EAL arguments (after `--`), appended to the configuration's eal.args.
    #[arg(last = true, value_name = "EAL ARGS")]
    pub eal: Vec<String>,
}

/// `nicemu echo` arguments.
#[derive(Args, Debug)]
pub struct EchoCmd {
    #[command(flatten)]
    pub common: HostCommon,
    /// TCP port to listen on.
    #[arg(long, default_value_t = 7)]
    pub port: u16,
    /// Message size the clients send: the summary counts transactions as bytes / size.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Do not ask for AccelTCP's setup and teardown offloads.
    #[arg(long)]
    pub no_offload: bool,
    /// Most connections held at once (each host context): beyond, new connections are
    /// refused and counted, with a warning. Nothing is allocated up front.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNS)]
    pub max_conns: usize,
}

/// The default of `nicemu echo --max-conns`: the host stack's default (64Ki).
pub const DEFAULT_MAX_CONNS: usize = 1 << 16;

/// `nicemu loadgen` arguments.
#[derive(Args, Debug)]
pub struct LoadgenCmd {
    #[command(flatten)]
    pub common: HostCommon,
    /// The server, `a.b.c.d:port`.
    #[arg(long)]
    pub server: SocketAddrV4,
    /// The protocol: echo, http or redis.
    #[arg(long, default_value = "echo")]
    pub proto: String,
    /// Message size (echo) or value size (redis).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Connections open at once (all host contexts together). Beyond 64k to one server port:
    /// --clients and --ephemeral must give that many (address, port) pairs, the server must
    /// take them (`nicemu echo --max-conns`), and the timeouts must exceed a round of the
    /// closed loop (connections / transactions per second).
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// Transactions per connection before it is closed and replaced (0: persistent).
    #[arg(long, default_value_t = 0)]
    pub per_conn: u64,
    /// Stop after this many transactions (all host contexts together).
    #[arg(long, conflicts_with = "duration")]
    pub count: Option<u64>,
    /// Extra client addresses: `a.b.c.d/n` (every address of the block) or a number k (the
    /// k addresses after the port's first). The NIC answers ARP for them; `connect` rotates
    /// over them, each with the whole ephemeral range. Connections to one server port need
    /// addresses × ports ≥ --conns: e.g. 1,000,000 with --ephemeral 1024-65535 needs 16
    /// addresses (`--clients 15` and the port's own).
    #[arg(long)]
    pub clients: Option<String>,
    /// The ephemeral port range of the client's connections, `lo-hi` (default
    /// 32768-60999).
    #[arg(long)]
    pub ephemeral: Option<String>,
    /// Ask for AccelTCP's setup and teardown offloads on the client's sockets.
    #[arg(long)]
    pub offload: bool,
    /// A connect still pending after this many milliseconds counts as an error.
    #[arg(long, default_value_t = 3000)]
    pub connect_timeout_ms: u64,
    /// A response not complete after this many milliseconds counts as an error.
    #[arg(long, default_value_t = 10000)]
    pub response_timeout_ms: u64,
    /// HTTP request target.
    #[arg(long, default_value = "/")]
    pub path: String,
}

/// `nicemu kv` arguments.
#[derive(Args, Debug)]
pub struct KvCmd {
    #[command(flatten)]
    pub common: HostCommon,
    /// TCP port to listen on.
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Do not ask for AccelTCP's setup and teardown offloads.
    #[arg(long)]
    pub no_offload: bool,
    /// Redis's `maxmemory` in bytes (0: unlimited; writes beyond get `-OOM`).
    #[arg(long, default_value_t = 0)]
    pub maxmemory: u64,
}

/// The extra client addresses of `--clients` for a port whose first address is `primary`
/// with prefix length `len`.
pub fn client_addrs(spec: &str, primary: [u8; 4], len: u8) -> Result<Vec<[u8; 4]>, String> {
    const MAX: u64 = 4096;
    let p = u32::from_be_bytes(primary);
    let (first, count) = match spec.split_once('/') {
        Some((ip, n)) => {
            let ip: Ipv4Addr = ip
                .parse()
                .map_err(|_| format!("--clients: {ip:?} is not an IPv4 address"))?;
            let n: u32 = n
                .parse()
                .ok()
                .filter(|n| *n <= 32)
                .ok_or_else(|| format!("--clients: prefix length {n:?} is not 0..=32"))?;
            let size = 1u64 << (32 - n);
            let mask = if n == 0 { 0 } else { u32::MAX << (32 - n) };
            (u32::from(ip) & mask, size)
        }
        None => {
            let k: u64 = spec.parse().map_err(|_| {
                format!("--clients: expected a.b.c.d/n or a number of addresses, got {spec:?}")
            })?;
            (p.wrapping_add(1), k)
        }
    };
    if count > MAX {
        return Err(format!("--clients: {count} addresses, at most {MAX}"));
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let mut out = Vec::new();
    for i in 0..count {
        let a = first.wrapping_add(i as u32);
        if a == p {
            continue;
        }
        if a & mask != p & mask {
            return Err(format!(
                "--clients: {} is outside the port's subnet {}/{len}",
                Ipv4Addr::from(a),
                Ipv4Addr::from(p & mask)
            ));
        }
        out.push(a.to_be_bytes());
    }
    Ok(out)
}

/// `lo-hi` of `--ephemeral`.
pub fn port_range(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("--ephemeral: expected lo-hi with 1 <= lo <= hi <= 65535, got {s:?}");
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let (a, b): (u16, u16) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a == 0 || a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// The `k`-th of `n` shares of `total`.
fn share(total: u64, n: usize, k: usize) -> u64 {
    let n = n.max(1) as u64;
    total / n + u64::from((k as u64) < total % n)
}

fn load(common: &HostCommon, what: &str) -> Result<Config, String> {
    let cfg = Config::load(&common.config).map_err(|e| e.to_string())?;
    crate::procs::check_config(&cfg, what)?;
    Ok(cfg)
}

#[cfg(not(feature = "dpdk"))]
fn no_dpdk() -> Result<(), String> {
    Err("this command needs nicemu built with DPDK support (cargo build --features dpdk)".into())
}

/// `nicemu echo`.
#[cfg(not(feature = "dpdk"))]
pub fn echo(_: &EchoCmd) -> Result<(), String> {
    no_dpdk()
}

/// `nicemu loadgen`.
#[cfg(not(feature = "dpdk"))]
pub fn loadgen(_: &LoadgenCmd) -> Result<(), String> {
    no_dpdk()
}

/// `nicemu kv`.
#[cfg(not(feature = "dpdk"))]
pub fn kv(_: &KvCmd) -> Result<(), String> {
    no_dpdk()
}

#[cfg(feature = "dpdk")]
pub use with_dpdk::{echo, kv, loadgen};

#[cfg(feature = "dpdk")]
mod with_dpdk {
    use std::time::Duration;

    use apps::echo::{EchoServer, ServerOffloads};
    use apps::kv::keyspace::{Keyspace, SharedKeyspace};
    use apps::kv::server::{KvConfig, KvServer, KvStats};
    use apps::kv::Engine;
    use apps::loadgen::{LoadGen, LoadGenConfig, LoadStats, Proto};
    use hdrhistogram::Histogram;
    use hoststack::HostConfig;
    use std::sync::Arc;

    use super::*;
    use crate::procs::{secs, HostApp, HostCtx, HostResult, Outcome, RunSpec};

    /// The stack counters of each host, one line each.
    fn host_lines<S>(hosts: &[HostResult<S>]) -> String {
        let mut s = String::new();
        for (k, h) in hosts.iter().enumerate() {
            let st = &h.host;
            s += &format!(
                "host {k}: frames in {} out {} (link full {}), active opens {} passive opens {}, rst sent {}, syn dropped {}, at connection limit {}, conns freed {}, open {}, malformed {}\n",
                st.frames_in, st.frames_out, st.link_full, st.active_opens, st.passive_opens,
                st.rst_sent, st.syn_dropped, st.conn_limit, st.conns_freed, h.conns, st.malformed
            );
            s += &crate::procs::tcp_line(k, &h.tcp);
        }
        s
    }

    /// The NIC report, the hosts' lines and the CPU split.
    fn print_common<S>(out: &Outcome<S>) {
        if crate::procs::interrupted() {
            println!(
                "nicemu: stopped by Ctrl-C after {:.2} s: the summary covers the run until then",
                out.elapsed.as_secs_f64()
            );
        }
        print!(
            "{}",
            crate::report::summary(&out.nic, out.elapsed, out.tsc_hz)
        );
        print!("{}", host_lines(&out.hosts));
        print!("{}", crate::procs::outcome_cpu_lines(out));
    }

    fn spec<'a>(
        c: &'a HostCommon,
        interval: Option<Duration>,
        wait_link: Option<Duration>,
        ready: Option<String>,
    ) -> Result<RunSpec<'a>, String> {
        Ok(RunSpec {
            duration: secs(c.duration, "--duration")?,
            stats_interval: interval,
            pin: !c.no_pin,
            eal: &c.eal,
            wait_link,
            ready,
        })
    }

    /// The echo server with its message size.
    struct EchoApp {
        server: EchoServer,
    }

    /// Counters of an echo server.
    #[derive(Clone, Copy, Default)]
    struct EchoStats {
        bytes: u64,
        accepted: u64,
        closed: u64,
    }

    impl HostApp for EchoApp {
        type Stats = EchoStats;

        fn step(&mut self, ctx: &mut HostCtx, _: u64) -> usize {
            self.server.step(ctx)
        }

        fn close(&mut self, _: &mut HostCtx) {}

        fn stats(&self, _: &HostCtx) -> EchoStats {
            EchoStats {
                bytes: self.server.bytes,
                accepted: self.server.accepted,
                closed: self.server.closed,
            }
        }
    }

    /// `nicemu echo`.
    pub fn echo(a: &EchoCmd) -> Result<(), String> {
        if a.size == 0 {
            return Err("--size: must be at least 1".into());
        }
        let cfg = load(&a.common, "echo")?;
        let stop = crate::procs::ctrl_c_flag();
        let interval = secs(
            Some(cfg.runtime.stats_interval_s),
            "runtime.stats_interval_s",
        )?;
        let off = ServerOffloads {
            setup: !a.no_offload,
            teardown: !a.no_offload,
        };
        let port = a.port;
        // Printed once the port is up and the listener bound.
        let ready = format!(
            "nicemu echo: listening on {}:{port}, offloads {}",
            Ipv4Addr::from(cfg.ports[0].ipv4[0].0),
            if a.no_offload {
                "off"
            } else {
                "setup+teardown"
            }
        );
        let size = a.size as u64;
        let max_conns = a.max_conns.max(1);
        let mut warned = false;
        let out = crate::procs::run(
            &cfg,
            &spec(&a.common, interval, None, Some(ready))?,
            stop,
            move |_, hc| {
                conn_limits(hc, max_conns, max_conns);
                crate::procs::exclude_listening(hc, &[port]);
            },
            move |_, ctx| {
                EchoServer::with_offloads(ctx, port, off)
                    .map(|server| EchoApp { server })
                    .map_err(|e| format!("cannot listen on port {port}: {e}"))
            },
            |_, hosts: &[HostResult<EchoStats>], t| {
                let b: u64 = hosts.iter().map(|h| h.app.bytes).sum();
                println!(
                    "[{:7.1} s] echo: transactions {} accepted {} open {}",
                    t.as_secs_f64(),
                    b / size,
                    hosts.iter().map(|h| h.app.accepted).sum::<u64>(),
                    hosts.iter().map(|h| h.conns).sum::<usize>()
                );
                if !warned && hosts.iter().any(|h| h.host.conn_limit > 0) {
                    warned = true;
                    eprintln!("{}", limit_warning(max_conns));
                }
            },
        )?;
        print_common(&out);
        if out.hosts.iter().any(|h| h.host.conn_limit > 0) {
            println!("{}", limit_warning(max_conns));
        }
        let bytes: u64 = out.hosts.iter().map(|h| h.app.bytes).sum();
        let accepted: u64 = out.hosts.iter().map(|h| h.app.accepted).sum();
        let closed: u64 = out.hosts.iter().map(|h| h.app.closed).sum();
        println!(
            "echo: transactions {} ({} bytes of {size}-byte messages{}), accepted {accepted}, closed {closed}",
            bytes / size,
            bytes,
            if !bytes.is_multiple_of(size) {
                format!(", {} bytes of a partial message", bytes % size)
            } else {
                String::new()
            }
        );
        Ok(())
    }

    /// The warning of a server that refused connections at `--max-conns`.
    fn limit_warning(max_conns: usize) -> String {
        format!(
            "nicemu echo: warning: connections refused at the connection limit (--max-conns {max_conns} per host context); raise --max-conns"
        )
    }

    /// A host context that holds up to `conns` connections and `fds` sockets.
    fn conn_limits(hc: &mut HostConfig, conns: usize, fds: usize) {
        hc.max_conns = conns;
        // Every connection may be a socket, plus listeners and epolls.
        hc.max_fds = fds.saturating_add(64);
    }

    /// A load generator; gives up when every connection failed before any transaction, or
    /// when errors keep coming without a transaction completing (3 per connection), so a
    /// server that is absent or went away never keeps it running.
    struct LoadApp {
        gen: LoadGen,
        conns: u64,
        gave_up: bool,
        /// Transactions and errors when a transaction last completed.
        progress: (u64, u64),
    }

    /// What a load generator publishes.
    #[derive(Clone, Default)]
    struct LoadSnap {
        stats: LoadStats,
        open: usize,
        hist: Option<Histogram<u64>>,
        gave_up: bool,
    }

    impl HostApp for LoadApp {
        type Stats = LoadSnap;

        fn step(&mut self, ctx: &mut HostCtx, _: u64) -> usize {
            let w = self.gen.step(ctx);
            let s = self.gen.stats();
            let errors = s.errors.total();
            if s.transactions != self.progress.0 {
                self.progress = (s.transactions, errors);
            }
            let stalled = errors - self.progress.1;
            if self.conns > 0
                && ((s.transactions == 0 && errors >= self.conns) || stalled >= 3 * self.conns)
            {
                self.gave_up = true;
            }
            w
        }

        fn close(&mut self, ctx: &mut HostCtx) {
            self.gen.close(ctx)
        }

        fn stats(&self, ctx: &HostCtx) -> LoadSnap {
            LoadSnap {
                stats: *self.gen.stats(),
                open: ctx.connections(),
                hist: Some(self.gen.latency().clone()),
                gave_up: self.gave_up,
            }
        }

        fn finished(&self) -> bool {
            self.gave_up || self.gen.finished()
        }
    }

    fn add(a: &mut LoadStats, b: &LoadStats) {
        a.transactions += b.transactions;
        a.started += b.started;
        a.connects += b.connects;
        a.established += b.established;
        a.bytes_out += b.bytes_out;
        a.bytes_in += b.bytes_in;
        let (x, y) = (&mut a.errors, &b.errors);
        x.refused += y.refused;
        x.connect_timeout += y.connect_timeout;
        x.reset += y.reset;
        x.closed_early += y.closed_early;
        x.bad_response += y.bad_response;
        x.http_status += y.http_status;
        x.response_timeout += y.response_timeout;
        x.local += y.local;
    }

    /// `nicemu loadgen`.
    pub fn loadgen(a: &LoadgenCmd) -> Result<(), String> {
        let mut cfg = load(&a.common, "loadgen")?;
        let proto = Proto::parse(&a.proto, &a.path, &a.server.ip().to_string())
            .map_err(|e| format!("--proto: {e}"))?;
        if a.conns == 0 {
            return Err("--conns: must be at least 1".into());
        }
        if a.size == 0 && !matches!(proto, Proto::Http { .. }) {
            return Err("--size: must be at least 1".into());
        }
        let (primary, len) = cfg.ports[0].ipv4[0];
        let extra = match &a.clients {
            Some(s) => client_addrs(s, primary, len)?,
            None => Vec::new(),
        };
        for ip in &extra {
            if !cfg.ports[0].ipv4.iter().any(|(a, _)| a == ip) {
                cfg.ports[0].ipv4.push((*ip, len));
            }
        }
        let ephemeral = a.ephemeral.as_deref().map(port_range).transpose()?;
        // Each connection to the one server port needs its own (client address, port).
        let (lo, hi) = ephemeral.unwrap_or(HostConfig::new(primary, 0).ephemeral);
        let tuples = (1 + extra.len() as u64) * (u64::from(hi - lo) + 1);
        if a.conns as u64 > tuples {
            return Err(format!(
                "--conns {}: {} client address(es) × {} ephemeral ports give at most {tuples} connections to one server port; add client addresses with --clients (at least {} addresses in all) or widen --ephemeral",
                a.conns,
                1 + extra.len(),
                u64::from(hi - lo) + 1,
                (a.conns as u64).div_ceil(u64::from(hi - lo) + 1)
            ));
        }
        if a.common.duration.is_none() && a.count.is_none() {
            eprintln!("nicemu loadgen: neither --count nor --duration: runs until Ctrl-C");
        }
        let stop = crate::procs::ctrl_c_flag();
        let hosts = cfg.nic_lcores().len().max(1);
        let mut lc = LoadGenConfig::new(a.server);
        lc.size = a.size;
        lc.per_conn = a.per_conn;
        lc.proto = proto;
        lc.offloads = a.offload;
        lc.connect_timeout_ns = a.connect_timeout_ms.max(1) * 1_000_000;
        lc.response_timeout_ns = a.response_timeout_ms.max(1) * 1_000_000;
        let (conns, count) = (a.conns as u64, a.count);
        let a_conns = a.conns;
        println!(
            "nicemu loadgen: {} to {} from {} address(es), {conns} connection(s), {} transactions per connection, {}",
            a.proto,
            a.server,
            1 + extra.len(),
            if a.per_conn == 0 {
                "persistent".to_string()
            } else {
                a.per_conn.to_string()
            },
            match count {
                Some(n) => format!("{n} transactions"),
                None => "until stopped".into(),
            }
        );
        let mut last = (0u64, Duration::ZERO);
        let out = crate::procs::run(
            &cfg,
            &spec(
                &a.common,
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(10)),
                None,
            )?,
            stop,
            move |_, hc| {
                hc.extra_ips = extra.clone();
                if let Some(r) = ephemeral {
                    hc.ephemeral = r;
                }
                // Room for every connection, and for those in TIME_WAIT after it (at most
                // one per 4-tuple).
                let most = (tuples as usize).max(DEFAULT_MAX_CONNS);
                conn_limits(hc, most, a_conns.max(DEFAULT_MAX_CONNS));
            },
            move |k, ctx| {
                let mut c = lc.clone();
                c.conns = share(conns, hosts, k) as usize;
                // Slots numbered across the contexts: their Redis keys stay apart in a
                // server that serves one keyspace to all of them.
                c.first_slot = (0..k).map(|j| share(conns, hosts, j) as usize).sum();
                c.max_transactions = count.map(|n| share(n, hosts, k));
                let conns = c.conns as u64;
                LoadGen::new(ctx, c)
                    .map(|gen| LoadApp {
                        gen,
                        conns,
                        gave_up: false,
                        progress: (0, 0),
                    })
                    .map_err(|e| format!("load generator: {e}"))
            },
            |_, hosts: &[HostResult<LoadSnap>], t| {
                let mut s = LoadStats::default();
                for h in hosts {
                    add(&mut s, &h.app.stats);
                }
                let dt = (t - last.1).as_secs_f64().max(1e-9);
                println!(
                    "[{:7.1} s] loadgen: transactions {} ({:.0}/s), connections open {} (handshakes completed {}), errors {}",
                    t.as_secs_f64(),
                    s.transactions,
                    s.transactions.saturating_sub(last.0) as f64 / dt,
                    hosts.iter().map(|h| h.app.open).sum::<usize>(),
                    s.established,
                    s.errors.total()
                );
                last = (s.transactions, t);
            },
        )?;
        print_common(&out);
        let mut s = LoadStats::default();
        let mut hist: Option<Histogram<u64>> = None;
        for h in &out.hosts {
            add(&mut s, &h.app.stats);
            if let Some(x) = &h.app.hist {
                match hist.as_mut() {
                    Some(a) => {
                        let _ = a.add(x);
                    }
                    None => hist = Some(x.clone()),
                }
            }
        }
        let secs = out.elapsed.as_secs_f64().max(1e-9);
        let us = |v: u64| v as f64 / 1e3;
        let p = match &hist {
            Some(h) if !h.is_empty() => [
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.9),
                h.value_at_quantile(0.99),
                h.value_at_quantile(0.999),
                h.max(),
            ],
            _ => [0; 5],
        };
        println!(
            "loadgen: transactions {} in {secs:.2} s ({:.0}/s), connects {} established {}, bytes out {} in {}",
            s.transactions,
            s.transactions as f64 / secs,
            s.connects,
            s.established,
            s.bytes_out,
            s.bytes_in
        );
        println!(
            "loadgen: latency p50 {:.1} us p90 {:.1} us p99 {:.1} us p99.9 {:.1} us max {:.1} us",
            us(p[0]),
            us(p[1]),
            us(p[2]),
            us(p[3]),
            us(p[4])
        );
        println!(
            "loadgen: errors {} ({})",
            s.errors.total(),
            s.errors.describe()
        );
        if let Some(n) = count.filter(|&n| crate::procs::interrupted() && s.transactions < n) {
            println!(
                "loadgen: interrupted after {} of {n} transactions (partial results)",
                s.transactions
            );
        }
        if out.hosts.iter().any(|h| h.app.gave_up) {
            println!("loadgen: gave up: connections kept failing without a transaction completing");
        }
        if s.transactions == 0 {
            return Err(format!(
                "no transaction completed ({} errors: {})",
                s.errors.total(),
                s.errors.describe()
            ));
        }
        if s.errors.total() > 0 {
            return Err(format!(
                "{} errors ({})",
                s.errors.total(),
                s.errors.describe()
            ));
        }
        Ok(())
    }

    /// The key-value server (one of several sharing the keyspace when there are several
    /// host contexts).
    struct KvApp {
        server: KvServer,
        shared: Option<Arc<SharedKeyspace>>,
    }

    /// What the key-value server publishes.
    #[derive(Clone, Default)]
    struct KvSnap {
        stats: KvStats,
        connected: usize,
    }

    impl HostApp for KvApp {
        type Stats = KvSnap;

        fn step(&mut self, ctx: &mut HostCtx, _: u64) -> usize {
            self.server.step(ctx, apps::kv::unix_ms())
        }

        fn close(&mut self, ctx: &mut HostCtx) {
            self.server.shutdown(ctx)
        }

        fn stats(&self, _: &HostCtx) -> KvSnap {
            KvSnap {
                stats: self.server.stats.clone(),
                connected: self.server.connections(),
            }
        }

        fn set_waker(&mut self, wake: Arc<dyn Fn() + Send + Sync>) {
            if let Some(s) = &self.shared {
                s.set_waker(self.server.index(), wake);
            }
        }
    }

    /// A kv summary line's counters.
    fn kv_line(s: &KvStats) -> String {
        format!(
            "commands {} error replies {}, accepted {} closed {} refused {}, bytes in {} out {}, output stalls {}, socket errors {}",
            s.commands,
            s.error_replies,
            s.accepted,
            s.closed,
            s.refused,
            s.bytes_in,
            s.bytes_out,
            s.output_stalls,
            s.socket_errors
        )
    }

    /// `nicemu kv`.
    pub fn kv(a: &KvCmd) -> Result<(), String> {
        let cfg = load(&a.common, "kv")?;
        let stop = crate::procs::ctrl_c_flag();
        let interval = secs(
            Some(cfg.runtime.stats_interval_s),
            "runtime.stats_interval_s",
        )?;
        let mut kc = KvConfig {
            port: a.port,
            ..KvConfig::default()
        };
        kc.offloads = ServerOffloads {
            setup: !a.no_offload,
            teardown: !a.no_offload,
        };
        kc.engine.maxmemory = a.maxmemory;
        kc.engine.port = a.port;
        // Several host contexts serve one keyspace (each holds the connections its queue
        // received; see `apps::kv::keyspace`).
        let hosts = cfg.nic_lcores().len().max(1);
        let kv_port = a.port;
        let shared = (hosts > 1)
            .then(|| SharedKeyspace::new(Engine::new(KvServer::engine_config(&kc)), hosts));
        // Printed once the port is up and the listener bound.
        let ready = format!(
            "nicemu kv: listening on {}:{}, offloads {}, maxmemory {}{}",
            Ipv4Addr::from(cfg.ports[0].ipv4[0].0),
            a.port,
            if a.no_offload {
                "off"
            } else {
                "setup+teardown"
            },
            a.maxmemory,
            if hosts > 1 {
                format!(", one keyspace over {hosts} host contexts")
            } else {
                String::new()
            }
        );
        let out = crate::procs::run(
            &cfg,
            &spec(&a.common, interval, None, Some(ready))?,
            stop,
            move |_, hc| crate::procs::exclude_listening(hc, &[kv_port]),
            move |k, ctx| {
                let keyspace = match &shared {
                    Some(s) => Keyspace::Shared(s.clone(), k),
                    None => Keyspace::Own(Box::new(Engine::new(KvServer::engine_config(&kc)))),
                };
                KvServer::with_keyspace(ctx, kc.clone(), keyspace)
                    .map(|server| KvApp {
                        server,
                        shared: shared.clone(),
                    })
                    .map_err(|e| format!("cannot listen on port {}: {e}", kc.port))
            },
            |_, hosts: &[HostResult<KvSnap>], t| {
                for h in hosts {
                    println!(
                        "[{:7.1} s] kv: commands {} connected {} errors {} open {}",
                        t.as_secs_f64(),
                        h.app.stats.commands,
                        h.app.connected,
                        h.app.stats.error_replies,
                        h.conns
                    );
                }
            },
        )?;
        print_common(&out);
        // One line for the keyspace (all hosts), then one per host when several share it.
        let mut total = KvStats::default();
        for h in &out.hosts {
            total.add(&h.app.stats);
        }
        println!("kv: {}", kv_line(&total));
        if out.hosts.len() > 1 {
            for (k, h) in out.hosts.iter().enumerate() {
                println!("kv host {k}: {}", kv_line(&h.app.stats));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
