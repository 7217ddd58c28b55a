//! Building NIC lcores over DPDK ethdev ports from a [`Config`] (feature `dpdk`).
//!
//! Order of things: EAL init with the configured arguments (plus those after `--`), look up
//! every port's device (an unknown name is a config error naming `port[i].device` and the
//! ports that exist), one mbuf pool per port, then the port with one rx and one tx queue per
//! NIC lcore. Drop order matters: lcores (queues), then devices, then the EAL.

use std::sync::Arc;

use nicemu_dpdk::{register_thread, Eal, EthDev, Mempool, PortConf, RssConf, SOCKET_ID_ANY};

use crate::clock::Clock;
use crate::config::{Config, ConfigError, Driver};
use crate::lcore::NicLcore;
use crate::port::dpdk::DpdkQueue;
use crate::runtime::{build_lcores, RunError, RunOptions};
use offload_api::link::HostEnd;

/// Data room of each mbuf: 2048 bytes of frame plus DPDK's headroom, so that every frame up
/// to 2048 bytes arrives in one segment.
pub const MBUF_DATA_ROOM: u16 = 2048 + nicemu_dpdk::PKTMBUF_HEADROOM as u16;

/// A DPDK topology. Fields drop in declaration order: lcores, devices, then the EAL.
pub struct DpdkTopology {
    /// One lcore per NIC lcore of the configuration.
    pub lcores: Vec<NicLcore<DpdkQueue>>,
    /// The configured ports, in configuration order.
    pub devs: Vec<EthDev>,
    /// Host channel of each lcore (when asked for).
    pub host: Vec<HostEnd>,
    /// The EAL; dropping it cleans DPDK up.
    pub eal: Eal,
}

/// Frames in each ring of a `net_af_packet` port unless its `--vdev` says `framecnt=`:
/// DPDK's default, 512, is 0.2 ms of a 2.5 Mpps burst. A kernel TCP sender behind the
/// interface (a proxy's backends, 50 connections with 64 KB windows: about 2,200 full
/// frames in flight) overflowed it: the kernel drops what does not fit, and the senders'
/// retransmissions, some after a timeout, made the latency tail (13,000 retransmitted
/// segments and 22 timeouts in 5 s of `wrk -c 50` through `nicemu proxy` to nginx with 512;
/// 93 and none with 4096). 4096 frames cost 8 MiB of kernel memory per ring.
pub const AF_PACKET_FRAMES: u32 = 4096;

/// Adds `framecnt=AF_PACKET_FRAMES` to a `net_af_packet` device's arguments that do not
/// size its rings (`net_af_packet0,iface=veth0` → `...,framecnt=4096`); others unchanged.
pub fn af_packet_ring_default(vdev: &str) -> String {
    if vdev.starts_with("net_af_packet") && !vdev.split(',').any(|kv| kv.starts_with("framecnt=")) {
        format!("{vdev},framecnt={AF_PACKET_FRAMES}")
    } else {
        vdev.to_string()
    }
}

/// The EAL arguments of a run: the configuration's, then `extra` (from the command line).
/// Unless given otherwise, DPDK logs at warning level and above and its telemetry socket is
/// off (`--no-telemetry`; pass `--telemetry` to keep it), so that a normal start prints
/// nothing and errors stay one line; `net_af_packet` devices get rings of
/// [`AF_PACKET_FRAMES`] frames unless their `--vdev` gives `framecnt=`.
pub fn eal_args(cfg: &Config, extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    let mut vdev_next = false;
    for a in cfg.eal.args.iter().chain(extra) {
        if vdev_next {
            args.push(af_packet_ring_default(a));
        } else if let Some(v) = a.strip_prefix("--vdev=") {
            args.push(format!("--vdev={}", af_packet_ring_default(v)));
        } else {
            args.push(a.clone());
        }
        vdev_next = a == "--vdev";
    }
    if !args.iter().any(|a| a.starts_with("--log-level")) {
        args.push("--log-level=warning".into());
    }
    if !args
        .iter()
        .any(|a| a == "--telemetry" || a == "--no-telemetry")
    {
        args.push("--no-telemetry".into());
    }
    args
}

/// Thread setup for lcore threads: register with DPDK so that mempool caches work.
pub fn thread_init() -> Arc<dyn Fn() -> Result<(), String> + Send + Sync> {
    Arc::new(|| register_thread().map_err(|e| e.to_string()))
}

/// Builds the DPDK topology of `cfg` (all ports of driver `dpdk`). `template`, when given, is
/// written into every mbuf of every pool (for PMDs that do not write packet data: net_null).
pub fn build_dpdk(
    cfg: &Config,
    opts: &RunOptions,
    extra_eal: &[String],
    template: Option<&[u8]>,
) -> Result<DpdkTopology, RunError> {
    if cfg.ports.iter().any(|p| p.driver != Driver::Dpdk) {
        return Err(ConfigError::new(
            &cfg.source,
            "port",
            "build_dpdk needs ports of driver \"dpdk\"",
        )
        .into());
    }
    let args = eal_args(cfg, extra_eal);
    // The EAL pins this thread to the main lcore's core, and threads spawned later inherit
    // it: note the process's cores first, and give them back to this (conducting) thread.
    crate::sys::note_process_cores();
    let eal = Eal::init(&args)
        .map_err(|e| RunError::Dpdk(format!("{e} (EAL arguments: {})", args.join(" "))))?;
    let _ = crate::sys::unpin_current_thread();
    let nic = cfg.nic_lcores();
    let queues = nic.len() as u16;
    let mut devs = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        let device = p.device.as_deref().unwrap_or_default();
        let port_id = eal.port_by_name(device).map_err(|e| {
            ConfigError::new(&cfg.source, format!("port[{i}].device"), e.to_string())
        })?;
        let mut pool = Mempool::create(
            &format!("nicemu_p{i}"),
            cfg.runtime.mbufs,
            256,
            MBUF_DATA_ROOM,
            SOCKET_ID_ANY,
        )
        .map_err(|e| RunError::Dpdk(format!("port {}: {e}", p.name)))?;
        if let Some(frame) = template {
            pool.fill_template(frame)
                .map_err(|e| RunError::Dpdk(format!("port {}: {e}", p.name)))?;
        }
        let conf = PortConf {
            rx_queues: queues,
            tx_queues: queues,
            rx_desc: p.rx_desc,
            tx_desc: p.tx_desc,
            rss: p.rss.key().map(|k| RssConf {
                key: k.to_vec(),
                ..RssConf::default()
            }),
            promiscuous: p.promiscuous,
            mtu: (p.mtu != 1500).then_some(p.mtu),
        };
        let dev = EthDev::configure(&eal, port_id, &conf, pool).map_err(|e| {
            let e = e.to_string();
            // DPDK's memif client connects to its server's socket when it starts, once.
            let hint = if device.starts_with("net_memif") && e.contains("rte_eth_dev_start") {
                " (a net_memif client starts only while its server, role=server on the same \
                 socket, is running: start the server first)"
            } else {
                ""
            };
            RunError::Dpdk(format!("port {} ({device}): {e}{hint}", p.name))
        })?;
        tracing::info!(
            port = %p.name,
            device,
            port_id,
            queues,
            rss_hash_functions = dev.rss_hash_functions(),
            promiscuous = ?dev.promiscuous(),
            "DPDK port started"
        );
        if p.promiscuous && dev.promiscuous() == nicemu_dpdk::Promiscuous::Unsupported {
            tracing::warn!(port = %p.name, device, "the driver cannot enable promiscuous mode; only frames for the port's MAC arrive");
        }
        devs.push(dev);
    }
    let macs: Vec<[u8; 6]> = cfg
        .ports
        .iter()
        .zip(&devs)
        .map(|(p, d)| p.mac.unwrap_or_else(|| d.mac()))
        .collect();
    let (lcores, host) = build_lcores(cfg, opts, &macs, &Clock::real(), |k, i| {
        devs[i]
            .queue(k as u16)
            .map(|q| DpdkQueue::from_queue(q, macs[i]))
            .map_err(|e| RunError::Dpdk(format!("port {}: {e}", cfg.ports[i].name)))
    })?;
    let mut lcores = lcores;
    wake_on_af_packet(&mut lcores, &devs);
    Ok(DpdkTopology {
        lcores,
        devs,
        host,
        eal,
    })
}

/// Adaptive lcores over `net_af_packet` ports sleep on their interfaces
/// ([`crate::wake::PacketWake`]): the first frame after a quiet spell wakes them within the
/// kernel's wake-up latency instead of after the rest of a timed sleep. Only when every port
/// is such a port (each lcore polls a queue of every port): a frame on another driver would
/// not end the sleep, and a loop with a wake-up skips the short sleeps and soon sleeps
/// [`crate::idle::WAKE_DEEP_SLEEP`] at a time, so that frame would wait milliseconds. Where
/// the wake sockets cannot be made (no `CAP_NET_RAW`), a warning says so and the lcore keeps
/// timed sleeps.
fn wake_on_af_packet(lcores: &mut [NicLcore<DpdkQueue>], devs: &[EthDev]) {
    let Some(ifs) = wake_interfaces(devs.iter().map(|d| (d.driver(), d.if_index()))) else {
        if devs.iter().any(|d| d.driver() == "net_af_packet") {
            tracing::info!(
                "not every port is on net_af_packet with a known interface: adaptive lcores keep timed sleeps (up to idle_sleep_max_us) instead of waking on arrivals"
            );
        }
        return;
    };
    for l in lcores.iter_mut() {
        if !l.backoff_mut().adaptive() {
            continue;
        }
        match crate::wake::PacketWake::new(&ifs, l.doorbell().as_ref()) {
            Ok(w) => l.set_wake(Box::new(w)),
            Err(e) => tracing::warn!(
                lcore = l.name(),
                "no wake-up on arriving frames ({e}): idle sleeps end on their timer"
            ),
        }
    }
}

/// The interfaces to wake on, given each port's `(driver, ifindex)`: all of them when every
/// port is a `net_af_packet` port with a known interface, else none.
fn wake_interfaces<'a>(ports: impl Iterator<Item = (&'a str, u32)>) -> Option<Vec<u32>> {
    let mut ifs = Vec::new();
    for (driver, ifindex) in ports {
        if driver != "net_af_packet" || ifindex == 0 {
            return None;
        }
        ifs.push(ifindex);
    }
    (!ifs.is_empty()).then_some(ifs)
}

/// The TSC frequency DPDK measured (0 before EAL init).
pub fn tsc_hz() -> u64 {
    nicemu_dpdk::tsc_hz()
}

/// The `--file-prefix` among EAL arguments: the last one, as DPDK's argument parsing keeps
/// the last (DPDK's default is `rte`).
pub fn file_prefix(args: &[String]) -> String {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(p) = a.strip_prefix("--file-prefix=") {
            found = Some(p.to_string());
        } else if a == "--file-prefix" {
            if let Some(p) = it.next() {
                found = Some(p.clone());
            }
        }
    }
    found.unwrap_or_else(|| "rte".to_string())
}

/// Removes the runtime directory DPDK made for `prefix` (`/var/run/dpdk/<prefix>` for root,
/// `$XDG_RUNTIME_DIR/dpdk/<prefix>` otherwise). Call after the EAL is cleaned up.
pub fn remove_runtime_dir(prefix: &str) {
    if prefix.is_empty() || prefix.contains('/') || prefix.contains("..") {
        return;
    }
    let base = if effective_uid_is_root() {
        std::path::PathBuf::from("/var/run/dpdk")
    } else {
        match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(d) => std::path::PathBuf::from(d).join("dpdk"),
            None => std::path::PathBuf::from("/tmp/dpdk"),
        }
    };
    let _ = std::fs::remove_dir_all(base.join(prefix));
}

fn effective_uid_is_root() -> bool {
    // The effective uid decides DPDK's runtime directory; /proc/self is owned by it.
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::{af_packet_ring_default, file_prefix, wake_interfaces};

    #[test]
    fn lcores_wake_on_arrivals_only_when_every_port_can_signal_one() {
        let w = |p: &[(&'static str, u32)]| wake_interfaces(p.iter().copied());
        assert_eq!(w(&[("net_af_packet", 7)]), Some(vec![7]));
        assert_eq!(
            w(&[("net_af_packet", 7), ("net_af_packet", 9)]),
            Some(vec![7, 9])
        );
        // A memif or ring port's frames would not end the sleep.
        assert_eq!(w(&[("net_af_packet", 7), ("net_memif", 0)]), None);
        assert_eq!(w(&[("net_ring", 0), ("net_af_packet", 7)]), None);
        // An af_packet port whose interface is unknown cannot be listened to either.
        assert_eq!(w(&[("net_af_packet", 7), ("net_af_packet", 0)]), None);
        assert_eq!(w(&[]), None);
    }

    #[test]
    fn af_packet_rings_default_to_4096_frames_unless_sized() {
        assert_eq!(
            af_packet_ring_default("net_af_packet0,iface=v0"),
            "net_af_packet0,iface=v0,framecnt=4096"
        );
        assert_eq!(
            af_packet_ring_default("net_af_packet1,iface=v0,framecnt=256,qpairs=2"),
            "net_af_packet1,iface=v0,framecnt=256,qpairs=2"
        );
        assert_eq!(
            af_packet_ring_default("net_memif0,role=server"),
            "net_memif0,role=server"
        );
    }

    #[test]
    fn file_prefix_is_the_last_one_given() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(file_prefix(&v(&["--no-huge"])), "rte");
        assert_eq!(file_prefix(&v(&["--file-prefix=a", "-l", "0"])), "a");
        assert_eq!(
            file_prefix(&v(&["--file-prefix=a", "--file-prefix", "b"])),
            "b"
        );
        assert_eq!(
            file_prefix(&v(&["--file-prefix", "a", "--file-prefix=c"])),
            "c"
        );
        assert_eq!(file_prefix(&v(&["--file-prefix"])), "rte");
    }
}
