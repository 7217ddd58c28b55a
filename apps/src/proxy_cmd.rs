//! `nicemu proxy`: the L7 proxy as a real process on DPDK ports (part of the `nicemu`
//! binary, not the library: it prints the binary's run summary).
//!
//! It runs on the process runtime (`procs.rs`): a host context per NIC lcore, each with a
//! [`Proxy`](apps::proxy::Proxy). Ctrl-C or `--duration` stops every thread; then one
//! summary: the NIC's report, each proxy's counters and each host stack's, and the CPU
//! split.

use std::path::PathBuf;

use apps::proxy::ProxyConfig;
use clap::Args;
use dataplane::config::Config;
#[cfg(feature = "dpdk")]
use {
    crate::procs::{HostApp, HostCtx, HostResult},
    apps::proxy::{Proxy, ProxyStats},
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

/// The summary's host part: each host context's proxy and stack counters.
#[cfg(feature = "dpdk")]
fn host_block(snaps: &[HostResult<ProxyStats>]) -> String {
    let mut s = String::new();
    for (k, h) in snaps.iter().enumerate() {
        s += &format!("== host {k} ==\n{}", h.app);
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
        s += &crate::procs::tcp_line(k, &h.tcp);
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

/// The proxy as a [`HostApp`] of the runtime.
#[cfg(feature = "dpdk")]
impl HostApp for Proxy {
    type Stats = ProxyStats;

    fn step(&mut self, ctx: &mut HostCtx, now_ns: u64) -> usize {
        Proxy::step(self, ctx, now_ns)
    }

    fn close(&mut self, ctx: &mut HostCtx) {
        Proxy::close(self, ctx)
    }

    fn stats(&self, _: &HostCtx) -> ProxyStats {
        Proxy::stats(self)
    }
}

/// `nicemu proxy`.
pub fn run(args: &ProxyArgs) -> Result<(), String> {
    let cfg = Config::load(&args.config).map_err(|e| e.to_string())?;
    let mut pcfg =
        ProxyConfig::from_section(cfg.proxy.as_ref(), &cfg.source).map_err(|e| e.to_string())?;
    if args.no_splice {
        pcfg.splice = false;
    }
    crate::procs::check_config(&cfg, "proxy")?;
    let stop = crate::procs::ctrl_c_flag();
    run_dpdk(&cfg, pcfg, args, stop)
}

#[cfg(not(feature = "dpdk"))]
fn run_dpdk(
    cfg: &Config,
    _: ProxyConfig,
    _: &ProxyArgs,
    _: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<(), String> {
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
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<(), String> {
    use crate::procs::{secs, RunSpec};

    let ip = cfg.ports[0].ipv4[0].0;
    // Printed once the port is up and the listener bound.
    let ready = format!(
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
    let spec = RunSpec {
        duration: secs(args.duration, "--duration")?,
        stats_interval: secs(
            args.stats_interval.or(Some(cfg.runtime.stats_interval_s)),
            "--stats-interval",
        )?,
        pin: !args.no_pin,
        eal: &args.eal,
        wait_link: None,
        ready: Some(ready),
    };
    let mut printer = crate::topo::IntervalPrinter::new();
    let listen_port = pcfg.listen;
    let out = crate::procs::run(
        cfg,
        &spec,
        stop,
        move |_, hc| crate::procs::exclude_listening(hc, &[listen_port]),
        move |_, ctx| {
            Proxy::new(ctx, pcfg.clone())
                .map_err(|e| format!("cannot listen on the proxy port: {e}"))
        },
        |nic, hosts: &[HostResult<ProxyStats>], t| {
            printer.print(nic, t);
            for (k, h) in hosts.iter().enumerate() {
                let p = &h.app;
                println!(
                    "           host {k}: requests {} active {} spliced {} relayed {} errors {} open {}",
                    p.requests,
                    p.active,
                    p.spliced,
                    p.relayed,
                    p.errors.values().sum::<u64>(),
                    h.conns
                );
            }
        },
    )?;
    print!(
        "{}",
        crate::report::summary(&out.nic, out.elapsed, out.tsc_hz)
    );
    print!("{}", host_block(&out.hosts));
    print!("{}", crate::procs::outcome_cpu_lines(&out));
    Ok(())
}
