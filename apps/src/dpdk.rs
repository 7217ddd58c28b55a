//! Running on DPDK ports (feature `dpdk`): `run`/`fwd` with a DPDK configuration, and the
//! DPDK part of the demo.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use dataplane::config::Config;
use dataplane::lcore::Mode;
use dataplane::runtime::{run_lcores, RunOptions};
use dataplane::runtime_dpdk::{build_dpdk, thread_init};

use crate::report;
use crate::topo::{template_frame, IntervalPrinter};

const DEMO_CONFIG: &str = include_str!("../../configs/fwd-null.toml");

/// Removes DPDK's runtime directory of a file prefix when dropped (after the EAL is gone).
struct RuntimeDir(String);

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        dataplane::runtime_dpdk::remove_runtime_dir(&self.0);
    }
}

/// Runs the lcores of a DPDK configuration and prints the summary and device counters; removes
/// DPDK's runtime directory afterwards, whatever happened.
pub fn run(
    cfg: &Config,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
    eal: &[String],
    xstats: bool,
    template: Option<Vec<u8>>,
) -> Result<(), String> {
    // Declared first, so dropped last: after the topology and its EAL.
    let _runtime_dir = RuntimeDir(dataplane::runtime_dpdk::file_prefix(
        &dataplane::runtime_dpdk::eal_args(cfg, eal),
    ));
    let template = if opts.mode != Mode::Nic || !opts.splice_pairs.is_empty() {
        template
    } else {
        None
    };
    let mut topo = build_dpdk(cfg, opts, eal, template.as_deref()).map_err(|e| e.to_string())?;
    for (p, d) in cfg.ports.iter().zip(&topo.devs) {
        let link = d
            .link_status()
            .map(|l| {
                format!(
                    "link {} {} Mb/s",
                    if l.up { "up" } else { "down" },
                    l.speed_mbps
                )
            })
            .unwrap_or_else(|e| e.to_string());
        println!(
            "port {} = {} (DPDK port {}): mac {}, {}, {} queue(s), promiscuous {:?}",
            p.name,
            d.name(),
            d.port_id(),
            dataplane::config::fmt_mac(&d.mac()),
            link,
            d.rx_queues(),
            d.promiscuous()
        );
    }
    let tsc_hz = nicemu_dpdk_tsc_hz();
    let mut printer = IntervalPrinter::new();
    let lcores = std::mem::take(&mut topo.lcores);
    let (reports, elapsed) = run_lcores(lcores, opts, stop, thread_init(), |r, t| {
        printer.print(r, t)
    })
    .map_err(|e| e.to_string())?;
    print!("{}", report::summary(&reports, elapsed, tsc_hz));
    for (p, d) in cfg.ports.iter().zip(&topo.devs) {
        if let Ok(s) = d.stats() {
            println!(
                "dpdk {}: ipackets {} opackets {} imissed {} ierrors {} oerrors {} rx_nombuf {}",
                p.name, s.ipackets, s.opackets, s.imissed, s.ierrors, s.oerrors, s.rx_nombuf
            );
        }
    }
    if xstats {
        for (p, d) in cfg.ports.iter().zip(&topo.devs) {
            match d.xstats() {
                Ok(x) => {
                    let nz: Vec<String> = x
                        .iter()
                        .filter(|(_, v)| *v != 0)
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    println!(
                        "xstats {}: {}",
                        p.name,
                        if nz.is_empty() {
                            "(all zero)".into()
                        } else {
                            nz.join(" ")
                        }
                    );
                }
                Err(e) => println!("xstats {}: {e}", p.name),
            }
        }
    }
    Ok(())
}

fn nicemu_dpdk_tsc_hz() -> u64 {
    match dataplane::runtime_dpdk::tsc_hz() {
        0 => dataplane::cycles::measure_tsc_hz(std::time::Duration::from_millis(50)),
        hz => hz,
    }
}

/// The DPDK part of `nicemu demo`: forwarding on two net_null ports for `secs` seconds.
pub fn demo(secs: f64) -> Result<(), String> {
    println!();
    println!("DPDK forwarding on net_null0 <-> net_null1 for {secs} s (every frame parsed and classified):");
    let text = DEMO_CONFIG.replace(
        "--file-prefix=nicemu-fwd-null",
        &format!("--file-prefix=nicemu-demo-{}", std::process::id()),
    );
    let cfg =
        Config::parse(&text, "configs/fwd-null.toml (embedded)").map_err(|e| e.to_string())?;
    let opts = RunOptions {
        mode: Mode::Forward,
        duration: Some(std::time::Duration::from_secs_f64(secs)),
        stats_interval: None,
        pin: false,
        ..RunOptions::default()
    };
    run(
        &cfg,
        &opts,
        Arc::new(AtomicBool::new(false)),
        &[],
        false,
        Some(template_frame(64)),
    )
}
