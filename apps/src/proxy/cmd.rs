//! `nicemu proxy`: the L7 proxy as a real process on DPDK ports (part of the `nicemu`
//! binary, not the library: it prints the binary's run summary).
//!
//! The configuration's ports and lcores are built as for `nicemu run`, with a host channel
//! (the emulated PCIe link) per NIC lcore. Each NIC lcore k gets a host context k running a
//! [`Proxy`](apps::proxy::Proxy): on its own thread, pinned to the configuration's k-th `role = "host"` lcore
//! when there is one, or in the NIC lcore's own loop when its role is `shared` (the NIC
//! iteration, then the proxy's step, as `apps::node` does). The host contexts read the NIC
//! lcores' clock. Ctrl-C or `--duration` stops every thread; then one summary: the NIC's
//! report, each proxy's counters and each host stack's.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use apps::proxy::ProxyConfig;
use clap::Args;
use dataplane::config::{Config, Driver};
#[cfg(feature = "dpdk")]
use {
    apps::proxy::{Proxy, ProxyStats},
    hoststack::stack::{HostStats, SpliceHostStats},
    std::sync::Mutex,
};

/// `nicemu proxy` arguments.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// The configuration file: ports and lcores as for `nicemu run`, plus a `[proxy]` table
    /// (see configs/proxy.toml).
    #[arg(short, long)]
    pub config: PathBuf,
    /// Relay every connection on the host instead of splicing it on the NIC (overrides
    /// proxy.splice).
    #[arg(long)]
    pub no_splice: bool,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(short, long)]
    pub duration: Option<f64>,
    /// Print statistics every this many seconds (overrides runtime.stats_interval_s).
    #[arg(long)]
    pub stats_interval: Option<f64>,
    /// Do not pin threads to their configured cores.
    #[arg(long)]
    pub no_pin: bool,
    /// DPDK EAL arguments (after `--`), appended to the configuration's eal.args.
    #[arg(last = true, value_name = "EAL ARGS")]
    pub eal: Vec<String>,
}

/// What a host thread publishes while it runs and returns at the end.
#[cfg(feature = "dpdk")]
#[derive(Clone, Default)]
struct HostSnapshot {
    proxy: ProxyStats,
    host: HostStats,
    splice: SpliceHostStats,
    /// The host context's connections at the end.
    conns: usize,
}

/// The summary's host part: each host context's proxy and stack counters.
#[cfg(feature = "dpdk")]
fn host_block(snaps: &[HostSnapshot]) -> String {
    let mut s = String::new();
    for (k, h) in snaps.iter().enumerate() {
        s += &format!("== host {k} ==\n{}", h.proxy);
        let st = &h.host;
        s += &format!(
            "host: frames in {} out {} (link full {}), active opens {} passive opens {}, rst sent {}, syn dropped {}, conns freed {}, open {}, malformed {}\n",
            st.frames_in,
            st.frames_out,
            st.link_full,
            st.active_opens,
            st.passive_opens,
            st.rst_sent,
            st.syn_dropped,
            st.conns_freed,
            h.conns,
            st.malformed
        );
        let sp = &h.splice;
        s += &format!(
            "host splice: requested {} installed {} refused {} install timeouts {} closed {} kept segments {} (dropped {}) late frames {}\n",
            sp.requested,
            sp.installed,
            sp.refused,
            sp.install_timeouts,
            sp.closed,
            sp.kept_segments,
            sp.kept_dropped,
            sp.late_frames
        );
    }
    s
}

/// `nicemu proxy`.
pub fn run(args: &ProxyArgs) -> Result<(), String> {
    let cfg = Config::load(&args.config).map_err(|e| e.to_string())?;
    let mut pcfg = ProxyConfig::from_config(&cfg).map_err(|e| e.to_string())?;
    if args.no_splice {
        pcfg.splice = false;
    }
    let allowed = dataplane::sys::allowed_cores()
        .map_err(|e| format!("cannot read this process's CPU affinity: {e}"))?;
    cfg.check_cores(&allowed).map_err(|e| e.to_string())?;
    if cfg.ports[0].driver != Driver::Dpdk {
        return Err(format!(
            "{}: port[0].driver: nicemu proxy runs on DPDK ports (driver \"dpdk\"); in-memory wires have no clients",
            cfg.source
        ));
    }
    if cfg.ports[0].ipv4.is_empty() {
        return Err(format!(
            "{}: port[0].ipv4: the proxy needs an address to listen on",
            cfg.source
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed)) {
        eprintln!("nicemu: warning: cannot install the Ctrl-C handler: {e}");
    }
    run_dpdk(&cfg, pcfg, args, stop)
}

#[cfg(not(feature = "dpdk"))]
fn run_dpdk(cfg: &Config, _: ProxyConfig, _: &ProxyArgs, _: Arc<AtomicBool>) -> Result<(), String> {
    Err(format!(
        "{}: port[0].driver: \"dpdk\" needs a nicemu built with DPDK support (cargo build --features dpdk)",
        cfg.source
    ))
}

#[cfg(feature = "dpdk")]
fn run_dpdk(
    cfg: &Config,
    pcfg: ProxyConfig,
    args: &ProxyArgs,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    use std::time::{Duration, Instant};

    use dataplane::config::Role;
    use dataplane::lcore::{LcoreReport, Mode, NicLcore};
    use dataplane::port::dpdk::DpdkQueue;
    use dataplane::runtime::{run_lcores, RunOptions};
    use dataplane::runtime_dpdk::{build_dpdk, eal_args, file_prefix, remove_runtime_dir};
    use hoststack::{Context, HostConfig};
    use offload_api::link::HostEnd;

    /// Removes DPDK's runtime directory when dropped (after the EAL is gone).
    struct RuntimeDir(String);
    impl Drop for RuntimeDir {
        fn drop(&mut self) {
            remove_runtime_dir(&self.0);
        }
    }

    let secs = |v: Option<f64>, what: &str| -> Result<Option<Duration>, String> {
        match v {
            None => Ok(None),
            Some(s) if s.is_finite() && s >= 0.0 => {
                Ok((s > 0.0).then(|| Duration::from_secs_f64(s)))
            }
            Some(s) => Err(format!(
                "{what}: expected a number of seconds >= 0, got {s}"
            )),
        }
    };
    let opts = RunOptions {
        mode: Mode::Nic,
        duration: secs(args.duration, "--duration")?,
        stats_interval: secs(
            args.stats_interval.or(Some(cfg.runtime.stats_interval_s)),
            "--stats-interval",
        )?,
        pin: !args.no_pin,
        host_channels: true,
        ..RunOptions::default()
    };
    // Declared first, so dropped last: after the topology and its EAL.
    // DPDK takes the last --file-prefix (one after `--` overrides the configuration's).
    let eal = eal_args(cfg, &args.eal);
    let prefix = (0..eal.len())
        .rev()
        .find(|&i| eal[i].starts_with("--file-prefix"))
        .map_or_else(|| "rte".to_string(), |i| file_prefix(&eal[i..]));
    let _runtime_dir = RuntimeDir(prefix);
    let mut topo = build_dpdk(cfg, &opts, &args.eal, None).map_err(|e| e.to_string())?;
    let ip = cfg.ports[0].ipv4[0].0;
    println!(
        "nicemu proxy: listening on {}:{}, {} backend(s), policy {}, {}",
        std::net::Ipv4Addr::from(ip),
        pcfg.listen,
        pcfg.backends.len(),
        pcfg.policy.name(),
        if pcfg.splice {
            "splicing (nsplice)"
        } else {
            "relaying on the host"
        }
    );
    let roles: Vec<Role> = cfg.nic_lcores().iter().map(|l| l.role).collect();
    let host_cores: Vec<usize> = cfg
        .lcores
        .iter()
        .filter(|l| l.role == Role::Host)
        .map(|l| l.core)
        .collect();
    let queues = roles.len();
    let flow_core =
        (queues > 1).then(|| apps::node::rss_flow_core(cfg.ports[0].rss, queues as u16));
    let host_cfg = move |k: usize| {
        let mut hc = HostConfig::new(ip, 0);
        hc.core = k;
        hc.flow_core = flow_core.clone();
        hc
    };

    let lcores = std::mem::take(&mut topo.lcores);
    let hosts = std::mem::take(&mut topo.host);
    let start = Instant::now();
    let mut nic_only: Vec<NicLcore<DpdkQueue>> = Vec::new();
    // Reports of the shared lcores (their loops publish them), for the interval lines.
    let mut shared_reports = Vec::new();
    let mut snaps: Vec<Arc<Mutex<HostSnapshot>>> = Vec::new();
    type HostJoin = std::thread::JoinHandle<Result<Option<LcoreReport>, String>>;
    let mut threads: Vec<HostJoin> = Vec::new();
    let mut next_host_core = host_cores.iter();

    /// A host context on the NIC lcore's clock with its proxy.
    fn host_side(
        hc: HostConfig,
        end: HostEnd,
        clock: dataplane::clock::Clock,
        pcfg: ProxyConfig,
    ) -> Result<(Context<HostEnd>, Proxy), String> {
        let c = clock.clone();
        let mut ctx = Context::new(hc, end, Arc::new(move || c.now_ns()));
        let proxy = Proxy::new(&mut ctx, pcfg)
            .map_err(|e| format!("cannot listen on the proxy port: {e}"))?;
        Ok((ctx, proxy))
    }

    /// Publishes a host's counters (every ~100 ms and at the end).
    fn publish(snap: &Mutex<HostSnapshot>, ctx: &Context<HostEnd>, proxy: &Proxy) {
        if let Ok(mut s) = snap.lock() {
            s.proxy = proxy.stats();
            s.host = *ctx.stats();
            s.splice = ctx.splice_stats();
            s.conns = ctx.connections();
        }
    }

    /// Stops the proxy: closes what it holds, then runs the stack a little longer so the
    /// closes go out.
    fn wind_down(ctx: &mut Context<HostEnd>, proxy: &mut Proxy, also: &mut dyn FnMut()) {
        proxy.close(ctx);
        let until = Instant::now() + Duration::from_millis(50);
        while Instant::now() < until {
            ctx.poll();
            also();
        }
    }

    for (k, (mut lcore, end)) in lcores.into_iter().zip(hosts).enumerate() {
        let snap = Arc::new(Mutex::new(HostSnapshot::default()));
        snaps.push(snap.clone());
        let (stop, pcfg, hc) = (stop.clone(), pcfg.clone(), host_cfg(k));
        let clock = lcore.clock().clone();
        let pin = opts.pin;
        if roles[k] == Role::Shared {
            shared_reports.push(lcore.report_handle());
            // The NIC lcore and the host in one loop on the lcore's core.
            let t = std::thread::Builder::new()
                .name(format!("shared{k}"))
                .spawn(move || -> Result<Option<LcoreReport>, String> {
                    let r = (|| {
                        if let (true, Some(core)) = (pin, lcore.core()) {
                            dataplane::sys::pin_current_thread(core)
                                .map_err(|e| format!("cannot pin to core {core}: {e}"))?;
                        }
                        dataplane::runtime_dpdk::thread_init()()?;
                        let (mut ctx, mut proxy) = host_side(hc, end, clock.clone(), pcfg)?;
                        let mut last = Instant::now();
                        while !stop.load(Ordering::Relaxed) {
                            lcore.poll_once();
                            proxy.step(&mut ctx, clock.now_ns());
                            if last.elapsed() >= Duration::from_millis(100) {
                                last = Instant::now();
                                publish(&snap, &ctx, &proxy);
                                // Publishes the lcore's report (run_lcores does this for
                                // the lcores it runs).
                                lcore.finish();
                            }
                        }
                        wind_down(&mut ctx, &mut proxy, &mut || {
                            lcore.poll_once();
                        });
                        publish(&snap, &ctx, &proxy);
                        Ok(Some(lcore.finish()))
                    })();
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
                .map_err(|e| format!("cannot start the shared lcore thread: {e}"))?;
            threads.push(t);
        } else {
            nic_only.push(lcore);
            let core = next_host_core.next().copied();
            let t = std::thread::Builder::new()
                .name(format!("host{k}"))
                .spawn(move || -> Result<Option<LcoreReport>, String> {
                    let r = (|| {
                        if let (true, Some(core)) = (pin, core) {
                            dataplane::sys::pin_current_thread(core)
                                .map_err(|e| format!("cannot pin to core {core}: {e}"))?;
                        }
                        let (mut ctx, mut proxy) = host_side(hc, end, clock.clone(), pcfg)?;
                        let mut last = Instant::now();
                        while !stop.load(Ordering::Relaxed) {
                            proxy.step(&mut ctx, clock.now_ns());
                            if last.elapsed() >= Duration::from_millis(100) {
                                last = Instant::now();
                                publish(&snap, &ctx, &proxy);
                            }
                        }
                        wind_down(&mut ctx, &mut proxy, &mut || {});
                        publish(&snap, &ctx, &proxy);
                        Ok(None)
                    })();
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
                .map_err(|e| format!("cannot start the host thread: {e}"))?;
            threads.push(t);
        }
    }

    let mut printer = crate::topo::IntervalPrinter::new();
    let snaps_print = snaps.clone();
    let result = run_lcores(
        nic_only,
        &opts,
        stop.clone(),
        dataplane::runtime_dpdk::thread_init(),
        |r, t| {
            let mut all = r.to_vec();
            all.extend(
                shared_reports
                    .iter()
                    .filter_map(|h| h.lock().ok().map(|r| r.clone())),
            );
            printer.print(&all, t);
            for (k, s) in snaps_print.iter().enumerate() {
                if let Ok(s) = s.lock() {
                    let p = &s.proxy;
                    println!(
                        "           host {k}: requests {} active {} spliced {} relayed {} errors {}",
                        p.requests,
                        p.active,
                        p.spliced,
                        p.relayed,
                        p.errors.values().sum::<u64>()
                    );
                }
            }
        },
    );
    stop.store(true, Ordering::Relaxed);
    let mut reports = Vec::new();
    let mut first_err = None;
    for t in threads {
        match t.join() {
            Ok(Ok(Some(r))) => reports.push(r),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert("a host thread panicked".to_string());
            }
        }
    }
    let elapsed = start.elapsed();
    let (nic_reports, _) = result.map_err(|e| e.to_string())?;
    if let Some(e) = first_err {
        return Err(e);
    }
    reports.extend(nic_reports);
    let tsc_hz = match dataplane::runtime_dpdk::tsc_hz() {
        0 => dataplane::cycles::measure_tsc_hz(Duration::from_millis(50)),
        hz => hz,
    };
    print!("{}", crate::report::summary(&reports, elapsed, tsc_hz));
    let snaps: Vec<HostSnapshot> = snaps
        .iter()
        .map(|s| s.lock().map(|s| s.clone()).unwrap_or_default())
        .collect();
    print!("{}", host_block(&snaps));
    Ok(())
}
