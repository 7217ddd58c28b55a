//! Building NIC lcores from a [`Config`] and running them on pinned threads.
//!
//! The backend-independent part lives here: spawning, pinning, periodic statistics, stopping
//! and collecting reports. Port construction is per backend: [`build_wire`] for the
//! in-memory wire here, and `runtime_dpdk` (feature `dpdk`) for DPDK ethdevs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::config::{Config, ConfigError, Driver};
use crate::lcore::{LcoreReport, LcoreSetup, Mode, NicLcore, PortSlot};
use crate::net::stack::{IfaceConfig, L4Checksum, NicStack, StackConfig};
use crate::offload::{build_chain, LoadedPlugins, OffloadError, SharedOffloads};
use crate::pcap::PcapWriter;
use crate::port::wire::{wire_pair, Impairments, LinkCounters, WireConfig, WireEnd, WireQueue};
use crate::port::Port;
use offload_api::link::{link_with_id, HostEnd, LinkConfig, LinkId};

/// Errors of building or running a topology.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration does not fit this run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A capture file could not be opened.
    #[error("--pcap {port}={path}: {source}")]
    Pcap {
        /// Port name.
        port: String,
        /// File.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// An lcore thread could not be started or panicked.
    #[error("lcore {name}: {message}")]
    Lcore {
        /// Lcore name.
        name: String,
        /// What happened.
        message: String,
    },
    /// A DPDK call failed.
    #[error("DPDK: {0}")]
    Dpdk(String),
}

/// Options of one run, beyond the configuration file.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// What lcores do with frames not for the NIC itself.
    pub mode: Mode,
    /// Stop after this long (None: until Ctrl-C).
    pub duration: Option<Duration>,
    /// Print statistics this often (None: only at the end).
    pub stats_interval: Option<Duration>,
    /// `(port name, file)`: capture what the port sends and receives.
    pub pcap: Vec<(String, PathBuf)>,
    /// Pin lcore threads to their configured cores.
    pub pin: bool,
    /// Give each NIC lcore an emulated PCIe link to a host core (frames to and from the
    /// host side): NIC lcore k ↔ host core k.
    pub host_channels: bool,
    /// Ring depth and DMA model of those links.
    pub link: LinkConfig,
    /// Spliced pairs put in the process's splice table before the lcores start, owned by no
    /// lcore (never timed out or reported): `nicemu fwd --splice` measures translation with
    /// them. Needs `[offloads] splice`.
    pub splice_pairs: Vec<offload_api::msg::SpliceInstallRepr>,
    /// How the NIC lcores poll (resolved, see [`polling`]); `Spin` by default.
    pub poll: crate::idle::PollMode,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            mode: Mode::Nic,
            duration: None,
            stats_interval: None,
            pcap: Vec::new(),
            pin: true,
            host_channels: false,
            link: LinkConfig::default(),
            splice_pairs: Vec::new(),
            poll: crate::idle::PollMode::Spin,
        }
    }
}

/// The polling mode a run of `cfg` uses with `threads` polling threads (NIC lcores, host
/// threads, shared lcores), pinned or not, and the one-line warnings to print about it.
///
/// `[runtime] poll = "auto"` resolves to spinning only on physical NICs with a CPU left
/// for everything else ([`crate::idle::PollMode::resolve`]); an explicit `"spin"` that
/// leaves no CPU free, or spinning threads left unpinned, is kept but warned about, naming
/// the fix.
pub fn polling(cfg: &Config, threads: usize, pin: bool) -> (crate::idle::PollMode, Vec<String>) {
    use crate::idle::PollMode;
    let cpus = crate::sys::process_cores().map_or(1, |c| c.len().max(1));
    let physical = cfg.ports.iter().all(|p| p.is_physical());
    let mode = cfg.runtime.poll.resolve(physical, threads, cpus);
    let mut warnings = Vec::new();
    if mode == PollMode::Spin && threads >= cpus {
        warnings.push(format!(
            "{}: {threads} spinning thread(s) on {cpus} usable CPU(s) leave none for clients, \
             backends or the kernel's softirq (latency becomes the scheduler's time slice); \
             set [runtime] poll = \"adaptive\" (or \"auto\"), or use fewer lcores",
            cfg.source
        ));
    }
    if mode == PollMode::Spin && !pin && threads > 1 {
        warnings.push(format!(
            "{}: {threads} spinning threads unpinned (--no-pin): the scheduler may stack them \
             on one CPU; pin them, or set [runtime] poll = \"adaptive\"",
            cfg.source
        ));
    }
    (mode, warnings)
}

/// The per-port interface settings of a configuration, with each port's MAC.
pub fn ifaces(cfg: &Config, macs: &[[u8; 6]]) -> Vec<IfaceConfig> {
    cfg.ports
        .iter()
        .zip(macs)
        .map(|(p, mac)| IfaceConfig {
            mac: *mac,
            ipv4: p.ipv4.clone(),
            mtu: p.mtu,
            on_link: p.on_link.clone(),
            neighbours: {
                let mut v: Vec<_> = p
                    .neighbours
                    .iter()
                    .map(|n| (n.ip, n.prefix_len, n.mac))
                    .collect();
                // Longest prefix first: the first match is the most specific.
                v.sort_by_key(|n| std::cmp::Reverse(n.1));
                v
            },
        })
        .collect()
}

/// The NIC stack settings of a run: in forward mode, transit frames are checked like a router
/// checks them (IP header, not the end-to-end L4 checksum: RFC 1812 §5.2.2).
pub fn stack_config(opts: &RunOptions) -> StackConfig {
    StackConfig {
        l4_checksum: match opts.mode {
            Mode::Forward | Mode::Io => L4Checksum::Terminating,
            Mode::Nic => L4Checksum::All,
        },
        ..StackConfig::default()
    }
}

/// Opens the capture files named in `opts`, one writer per port index.
pub fn open_captures(
    cfg: &Config,
    opts: &RunOptions,
) -> Result<Vec<Option<Arc<Mutex<PcapWriter>>>>, RunError> {
    let mut out: Vec<Option<Arc<Mutex<PcapWriter>>>> = vec![None; cfg.ports.len()];
    for (port, path) in &opts.pcap {
        let Some(i) = cfg.port_index(port) else {
            let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
            return Err(ConfigError::new(
                "--pcap",
                port.clone(),
                format!("no such port; the ports are: {}", names.join(", ")),
            )
            .into());
        };
        let w = PcapWriter::create(path, 65535).map_err(|e| RunError::Pcap {
            port: port.clone(),
            path: path.display().to_string(),
            source: e,
        })?;
        out[i] = Some(Arc::new(Mutex::new(w)));
    }
    Ok(out)
}

/// The forwarding peer of each port: 0 ↔ 1, 2 ↔ 3, ...; an odd last port has none.
pub fn forward_peer(index: usize, ports: usize) -> Option<usize> {
    let p = index ^ 1;
    (p < ports).then_some(p)
}

/// A locally administered MAC for wire port `index` (02:6e:69:00:00:index+1).
pub fn wire_mac(index: usize) -> [u8; 6] {
    [
        0x02,
        0x6e,
        0x69,
        0x00,
        (index >> 8) as u8,
        (index as u8).wrapping_add(1),
    ]
}

/// An in-memory topology built from a configuration whose ports are all wire ports.
pub struct WireTopology {
    /// One lcore per NIC lcore of the configuration.
    pub lcores: Vec<NicLcore<WireQueue>>,
    /// Far ends of wires named by only one port, by wire name: for traffic peers.
    pub peers: BTreeMap<String, WireEnd>,
    /// Counters of each wire's directions: (wire name, NIC→far, far→NIC).
    pub links: Vec<(String, Arc<LinkCounters>, Arc<LinkCounters>)>,
    /// Host channel of each lcore (when asked for).
    pub host: Vec<HostEnd>,
}

/// Builds the in-memory topology of `cfg` (all ports of driver `wire`).
pub fn build_wire(cfg: &Config, opts: &RunOptions, clock: Clock) -> Result<WireTopology, RunError> {
    if cfg.ports.iter().any(|p| p.driver != Driver::Wire) {
        return Err(ConfigError::new(
            &cfg.source,
            "port",
            "build_wire needs ports of driver \"wire\"",
        )
        .into());
    }
    let nic = cfg.nic_lcores();
    let queues = nic.len() as u16;
    let macs: Vec<[u8; 6]> = cfg
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| p.mac.unwrap_or_else(|| wire_mac(i)))
        .collect();
    // For each wire: the ends taken by ports, in port order.
    let mut ends: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        ends.entry(p.wire.clone().unwrap_or_default())
            .or_default()
            .push(i);
    }
    let mut port_ends: Vec<Option<WireEnd>> = (0..cfg.ports.len()).map(|_| None).collect();
    let mut peers = BTreeMap::new();
    let mut links = Vec::new();
    for (name, users) in &ends {
        let imp = cfg.wires.get(name).cloned().unwrap_or_default();
        let back = Impairments {
            seed: imp.seed.wrapping_add(0x5eed),
            ..imp.clone()
        };
        let far_mac = users
            .get(1)
            .map(|&j| macs[j])
            .unwrap_or([0x02, 0x70, 0x65, 0x65, 0x72, 0x01]);
        let (a, b) = wire_pair(&WireConfig {
            queues,
            a_to_b: imp,
            b_to_a: back,
            rss: cfg.ports[users[0]].rss,
            macs: [macs[users[0]], far_mac],
            clock: clock.clone(),
            ..WireConfig::default()
        });
        links.push((name.clone(), a.tx_link(), a.rx_link()));
        port_ends[users[0]] = Some(a);
        match users.get(1) {
            Some(&j) => port_ends[j] = Some(b),
            None => {
                peers.insert(name.clone(), b);
            }
        }
    }
    let (lcores, host) = build_lcores(cfg, opts, &macs, &clock, |k, i| {
        port_ends[i]
            .as_mut()
            .and_then(|e| e.take_queue(k as u16))
            .ok_or_else(|| RunError::Lcore {
                name: format!("nic{k}"),
                message: format!("wire of port {} has no queue {k}", cfg.ports[i].name),
            })
    })?;
    Ok(WireTopology {
        lcores,
        peers,
        links,
        host,
    })
}

/// NIC lcores and their host channels (empty when not asked for).
pub type Lcores<P> = (Vec<NicLcore<P>>, Vec<HostEnd>);

/// Builds one [`NicLcore`] per NIC lcore of `cfg`, with `queue(k, i)` giving lcore `k` its
/// queue of port `i`, and a link to a host core each when `opts.host_channels`.
pub fn build_lcores<P: Port>(
    cfg: &Config,
    opts: &RunOptions,
    macs: &[[u8; 6]],
    clock: &Clock,
    mut queue: impl FnMut(usize, usize) -> Result<P, RunError>,
) -> Result<Lcores<P>, RunError> {
    let nic = cfg.nic_lcores();
    let captures = open_captures(cfg, opts)?;
    // Every lcore gets the offloads of the configuration; plugins load once per process.
    let plugins = LoadedPlugins::load(&cfg.tonic).map_err(offload_error(cfg))?;
    // The splice table is one per process: a pair's segments may reach any lcore.
    let shared = SharedOffloads::new(&cfg.offloads);
    if !opts.splice_pairs.is_empty() {
        let Some(t) = &shared.splice else {
            return Err(ConfigError::new(
                &cfg.source,
                "offloads.splice",
                "spliced pairs to pre-install need the splice offload on".to_string(),
            )
            .into());
        };
        for r in &opts.splice_pairs {
            let s = t.install_unowned(r, clock.now_ns());
            if s != offload_api::msg::AckStatus::Ok {
                return Err(ConfigError::new(
                    &cfg.source,
                    "offloads.splice_max_pairs",
                    format!("pre-installing spliced pair {}: {s:?}", r.request_id),
                )
                .into());
            }
        }
    }
    let mut host = Vec::new();
    let mut nic_ends = Vec::new();
    if opts.host_channels {
        for k in 0..nic.len() {
            let (h, n) = link_with_id(&opts.link, LinkId { host: k, nic: k });
            host.push(h);
            nic_ends.push(Some(n));
        }
    }
    let mut lcores = Vec::new();
    // With several NIC lcores on a port, an ARP reply reaches only one of them (RSS and
    // packet fanout steer non-IP frames to one queue): they share what they learn.
    let neighbours: Vec<Option<Arc<crate::net::arp::SharedNeighbours>>> = cfg
        .ports
        .iter()
        .map(|_| {
            let sc = stack_config(opts);
            (nic.len() > 1).then(|| {
                Arc::new(crate::net::arp::SharedNeighbours::new(
                    sc.arp_table_size,
                    sc.arp_timeout_ns,
                ))
            })
        })
        .collect();
    for (k, l) in nic.iter().enumerate() {
        let mut slots = Vec::new();
        for (i, p) in cfg.ports.iter().enumerate() {
            slots.push(PortSlot {
                port: queue(k, i)?,
                index: i,
                name: p.name.clone(),
                peer: forward_peer(i, cfg.ports.len()),
                pcap: captures[i].clone(),
            });
        }
        let mut lcore = NicLcore::new(
            LcoreSetup {
                name: format!("nic{k}"),
                core: Some(l.core),
                mode: opts.mode,
                burst: cfg.runtime.burst as usize,
                clock: clock.clone(),
                host: nic_ends.get_mut(k).and_then(Option::take),
            },
            slots,
            NicStack::new(ifaces(cfg, macs), stack_config(opts)),
        );
        for (i, sh) in neighbours.iter().enumerate() {
            if let Some(sh) = sh {
                lcore.stack_mut().share_neighbours(i, sh.clone());
            }
        }
        lcore.set_offloads(
            build_chain(&cfg.tonic, &cfg.offloads, &plugins, &shared)
                .map_err(offload_error(cfg))?,
        );
        lcore.set_polling(opts.poll, cfg.runtime.idle_policy());
        lcores.push(lcore);
    }
    Ok((lcores, host))
}

/// An offload that could not be built, as a configuration error naming the file and key.
fn offload_error(cfg: &Config) -> impl Fn(OffloadError) -> RunError + '_ {
    move |e| match e {
        OffloadError::Plugin { path, message } => {
            ConfigError::new(&cfg.source, "tonic.plugins", format!("{path}: {message}")).into()
        }
        OffloadError::Teardown(message) => {
            ConfigError::new(&cfg.source, "offloads.teardown", message).into()
        }
    }
}

/// Runs `lcores` on their own threads until `stop` is set or `opts.duration` passes, calling
/// `on_stats` every `opts.stats_interval` with the reports so far; returns the final reports
/// and the wall time the lcores ran.
///
/// `thread_init` runs first on every lcore thread (DPDK registers the thread there).
pub fn run_lcores<P: Port + 'static>(
    lcores: Vec<NicLcore<P>>,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
    thread_init: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
    mut on_stats: impl FnMut(&[LcoreReport], Duration),
) -> Result<(Vec<LcoreReport>, Duration), RunError> {
    let handles: Vec<_> = lcores.iter().map(|l| l.report_handle()).collect();
    let start = Instant::now();
    let mut threads = Vec::new();
    for mut lcore in lcores {
        let stop = stop.clone();
        let init = thread_init.clone();
        let pin = opts.pin;
        let name = lcore.name().to_string();
        let t = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || -> Result<LcoreReport, String> {
                let core = lcore.core().filter(|_| pin);
                crate::sys::place_current_thread(core, &format!("lcore {}", lcore.name()));
                crate::sys::set_timer_slack_ns(1_000);
                init()?;
                tracing::info!(lcore = %lcore.name(), core = ?lcore.core(), "lcore started");
                let report = lcore.run(&stop, None);
                tracing::info!(lcore = %report.name, iterations = report.iterations, rx = report.rx_packets(), tx = report.tx_packets(), "lcore stopped");
                Ok(report)
            })
            .map_err(|e| RunError::Lcore {
                name: name.clone(),
                message: e.to_string(),
            })?;
        threads.push((name, t));
    }
    let mut next_stats = opts.stats_interval.map(|i| start + i);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = Instant::now();
        if opts.duration.is_some_and(|d| now - start >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        if threads.iter().any(|(_, t)| t.is_finished()) {
            stop.store(true, Ordering::Relaxed);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let (Some(at), Some(every)) = (next_stats, opts.stats_interval) {
            if now >= at {
                let reports: Vec<LcoreReport> = handles
                    .iter()
                    .map(|h| h.lock().map(|r| r.clone()).unwrap_or_default())
                    .collect();
                on_stats(&reports, now - start);
                next_stats = Some(at + every);
            }
        }
    }
    let mut reports = Vec::new();
    let mut first_err = None;
    for (name, t) in threads {
        match t.join() {
            Ok(Ok(r)) => reports.push(r),
            Ok(Err(message)) => {
                first_err.get_or_insert(RunError::Lcore { name, message });
            }
            Err(_) => {
                first_err.get_or_insert(RunError::Lcore {
                    name,
                    message: "panicked".into(),
                });
            }
        }
    }
    let elapsed = start.elapsed();
    match first_err {
        Some(e) => Err(e),
        None => Ok((reports, elapsed)),
    }
}
