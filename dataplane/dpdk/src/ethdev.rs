//! [`EthDev`]: a configured, started ethdev port.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::eal::{port_name, Eal, EalInner};
use crate::error::{from_errno, DpdkError};
use crate::mempool::Mempool;
use crate::queue::EthQueue;
use crate::sys;

/// RSS over IPv4/IPv6 addresses (`RTE_ETH_RSS_IP`).
pub const RSS_IP: u64 = sys::shim_consts::SHIM_ETH_RSS_IP as u64;
/// RSS over TCP ports (`RTE_ETH_RSS_TCP`).
pub const RSS_TCP: u64 = sys::shim_consts::SHIM_ETH_RSS_TCP as u64;
/// RSS over UDP ports (`RTE_ETH_RSS_UDP`).
pub const RSS_UDP: u64 = sys::shim_consts::SHIM_ETH_RSS_UDP as u64;

/// Ports owned by a live [`EthDev`] (one owner per port).
static CLAIMED: [AtomicBool; sys::RTE_MAX_ETHPORTS as usize] =
    [const { AtomicBool::new(false) }; sys::RTE_MAX_ETHPORTS as usize];

/// Receive-side scaling settings.
///
/// Invariant: none by construction; [`EthDev::configure`] checks `key`'s length against the
/// device and masks `hash_functions` with what it supports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RssConf {
    /// Toeplitz key, 40 or 52 bytes as the device wants; empty for the device's default key.
    pub key: Vec<u8>,
    /// `RTE_ETH_RSS_*` bits ([`RSS_IP`] | [`RSS_TCP`] | [`RSS_UDP`] by default).
    pub hash_functions: u64,
}

impl Default for RssConf {
    /// The symmetric key `0x6d5a` repeated (40 bytes: both directions of a flow hash to the
    /// same queue) over IP, TCP and UDP.
    fn default() -> Self {
        RssConf {
            key: [0x6d, 0x5a].repeat(20),
            hash_functions: RSS_IP | RSS_TCP | RSS_UDP,
        }
    }
}

/// How to configure a port.
///
/// Invariant: none by construction; [`EthDev::configure`] validates against the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortConf {
    /// Rx queues (at least 1).
    pub rx_queues: u16,
    /// Tx queues (at least 1).
    pub tx_queues: u16,
    /// Descriptors per rx queue (adjusted to the device's limits).
    pub rx_desc: u16,
    /// Descriptors per tx queue (adjusted to the device's limits).
    pub tx_desc: u16,
    /// RSS, used only with more than one rx queue and a device that supports it.
    pub rss: Option<RssConf>,
    /// Enable promiscuous mode (devices without it are accepted, see
    /// [`EthDev::promiscuous`]).
    pub promiscuous: bool,
    /// MTU; `None` keeps the device's default (1500).
    pub mtu: Option<u16>,
}

impl Default for PortConf {
    /// One rx and one tx queue of 1024 descriptors, no RSS, promiscuous, default MTU.
    fn default() -> Self {
        PortConf {
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            rss: None,
            promiscuous: true,
            mtu: None,
        }
    }
}

/// Promiscuous mode of a port, as [`EthDev::configure`] left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promiscuous {
    /// Not requested.
    Off,
    /// Enabled.
    On,
    /// Requested, but the driver does not implement it (`ENOTSUP`).
    Unsupported,
}

/// Link state (`rte_eth_link_get_nowait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkStatus {
    /// Link is up.
    pub up: bool,
    /// Speed in Mbit/s; 0 when none or unknown.
    pub speed_mbps: u32,
    /// Full duplex.
    pub full_duplex: bool,
}

/// Device counters (`rte_eth_stats_get`), totals since start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EthStats {
    /// Frames received.
    pub ipackets: u64,
    /// Frames sent.
    pub opackets: u64,
    /// Bytes received.
    pub ibytes: u64,
    /// Bytes sent.
    pub obytes: u64,
    /// Frames dropped by the device for lack of rx descriptors (rx ring full).
    pub imissed: u64,
    /// Erroneous frames received.
    pub ierrors: u64,
    /// Failed transmissions.
    pub oerrors: u64,
    /// Rx mbuf allocation failures.
    pub rx_nombuf: u64,
}

/// State shared by an [`EthDev`] and its [`EthQueue`]s; the port is stopped and closed when
/// the last of them goes (or by [`EthDev::stop`]).
#[derive(Debug)]
pub(crate) struct DevInner {
    pub(crate) port_id: u16,
    pub(crate) rx_queues: u16,
    pub(crate) tx_queues: u16,
    /// One flag per queue id: held by a live [`EthQueue`].
    pub(crate) held: Box<[AtomicBool]>,
    closed: AtomicBool,
    /// Kept alive for the device's life: DPDK keeps the pointer in its copy of the config.
    _rss_key: Box<[u8]>,
    pub(crate) pool: Arc<Mempool>,
    _eal: Arc<EalInner>,
}

impl DevInner {
    /// `rte_eth_dev_stop` + `rte_eth_dev_close`, once; releases the port claim.
    fn close_once(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        // SAFETY: the port is ours (claimed) and no EthQueue can be bursting: close_once
        // runs from Drop of the last reference or from EthDev::stop after checking that no
        // queue is held.
        let ret = unsafe { sys::rte_eth_dev_stop(self.port_id) };
        if ret != 0 {
            tracing::warn!(
                port = self.port_id,
                "rte_eth_dev_stop: {}",
                crate::error::strerror(ret)
            );
        }
        // SAFETY: as above; the port is stopped.
        let ret = unsafe { sys::rte_eth_dev_close(self.port_id) };
        if ret != 0 {
            tracing::warn!(
                port = self.port_id,
                "rte_eth_dev_close: {}",
                crate::error::strerror(ret)
            );
        }
        CLAIMED[usize::from(self.port_id)].store(false, Ordering::SeqCst);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

impl Drop for DevInner {
    fn drop(&mut self) {
        self.close_once();
    }
}

/// Releases a port claim on early return from [`EthDev::configure`].
struct ClaimGuard(u16, bool);

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if self.1 {
            CLAIMED[usize::from(self.0)].store(false, Ordering::SeqCst);
        }
    }
}

/// A configured and started ethdev port.
///
/// Invariant: one `EthDev` per port at a time; the port stays started until [`EthDev::stop`]
/// or until the `EthDev` and all its [`EthQueue`]s are dropped, then it is stopped and
/// closed exactly once (for virtual devices closing also removes the port). The device
/// keeps its mempool (and the EAL) alive.
#[derive(Debug)]
pub struct EthDev {
    inner: Arc<DevInner>,
    name: String,
    mac: [u8; 6],
    promiscuous: Promiscuous,
    rss_hash_functions: u64,
    rx_desc: u16,
    tx_desc: u16,
    driver: String,
    if_index: u32,
}

fn call_err(call: &str, port: u16, ret: i32) -> DpdkError {
    from_errno(format!("{call}(port {port})"), ret)
}

impl EthDev {
    /// Configures port `port_id` as `conf` says with rx buffers from `pool`, starts it and
    /// (if asked) enables promiscuous mode.
    ///
    /// Checks the device's limits first: queue counts against `max_rx_queues` /
    /// `max_tx_queues` ([`DpdkError::TooManyQueues`]), MTU and RSS key length
    /// ([`DpdkError::Config`]). RSS is used only with more than one rx queue: the requested
    /// hash functions are masked with the device's `flow_type_rss_offloads` (a warning is
    /// logged when that reduces them) and RSS is skipped, with a warning, on devices that
    /// support none (net_null, net_ring). Promiscuous `ENOTSUP` is accepted and reported by
    /// [`EthDev::promiscuous`].
    ///
    /// Errors also: [`DpdkError::InvalidPort`], [`DpdkError::PortBusy`] (another `EthDev`
    /// owns the port), [`DpdkError::Call`] for a failing DPDK call.
    pub fn configure(
        eal: &Eal,
        port_id: u16,
        conf: &PortConf,
        pool: Arc<Mempool>,
    ) -> Result<EthDev, DpdkError> {
        let port = port_id;
        // SAFETY: a pure query on any port id; the EAL is alive (eal).
        let valid = unsafe { sys::rte_eth_dev_is_valid_port(port) } == 1;
        if !valid || usize::from(port) >= CLAIMED.len() {
            return Err(DpdkError::InvalidPort(port));
        }
        if CLAIMED[usize::from(port)].swap(true, Ordering::SeqCst) {
            return Err(DpdkError::PortBusy(port));
        }
        let mut claim = ClaimGuard(port, true);

        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: valid port; info is a valid out-pointer for the call.
        let ret = unsafe { sys::rte_eth_dev_info_get(port, &mut info) };
        if ret != 0 {
            return Err(call_err("rte_eth_dev_info_get", port, ret));
        }
        let driver = if info.driver_name.is_null() {
            String::from("?")
        } else {
            // SAFETY: driver_name is a static NUL-terminated string of the driver.
            unsafe { CStr::from_ptr(info.driver_name) }
                .to_string_lossy()
                .into_owned()
        };
        for (dir, requested, max) in [
            ("rx", conf.rx_queues, info.max_rx_queues),
            ("tx", conf.tx_queues, info.max_tx_queues),
        ] {
            if requested == 0 {
                return Err(DpdkError::Config {
                    port,
                    msg: format!("{dir}_queues must be at least 1"),
                });
            }
            if requested > max {
                return Err(DpdkError::TooManyQueues {
                    port,
                    dir,
                    requested,
                    max,
                });
            }
        }

        let mut eth_conf = sys::rte_eth_conf::default();
        let mut rss_key: Box<[u8]> = Box::new([]);
        let mut rss_hf = 0u64;
        if let (true, Some(rss)) = (conf.rx_queues > 1, &conf.rss) {
            rss_hf = rss.hash_functions & info.flow_type_rss_offloads;
            if rss_hf == 0 {
                tracing::warn!(
                    port,
                    driver = %driver,
                    "device supports no RSS hash function: RSS disabled, all traffic arrives on rx queue 0"
                );
            } else {
                if rss_hf != rss.hash_functions {
                    tracing::warn!(
                        port,
                        driver = %driver,
                        requested = format_args!("{:#x}", rss.hash_functions),
                        used = format_args!("{rss_hf:#x}"),
                        "device supports only some of the requested RSS hash functions"
                    );
                }
                if !rss.key.is_empty()
                    && info.hash_key_size != 0
                    && rss.key.len() != usize::from(info.hash_key_size)
                {
                    return Err(DpdkError::Config {
                        port,
                        msg: format!(
                            "RSS key is {} bytes, the device ({driver}) wants {}",
                            rss.key.len(),
                            info.hash_key_size
                        ),
                    });
                }
                rss_key = rss.key.clone().into_boxed_slice();
                let rc = &mut eth_conf.rx_adv_conf.rss_conf;
                if !rss_key.is_empty() {
                    rc.rss_key = rss_key.as_mut_ptr();
                    rc.rss_key_len = rss_key.len() as u8;
                }
                rc.rss_hf = rss_hf;
                eth_conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode::RTE_ETH_MQ_RX_RSS;
            }
        } else if conf.rx_queues > 1 && driver != "net_af_packet" && driver != "net_memif" {
            // (net_af_packet's queues are the kernel's packet fanout, by flow hash; a
            // net_memif queue receives what the peer sends on its queue of the same index.)
            tracing::warn!(
                port,
                "several rx queues without RSS: all traffic arrives on rx queue 0"
            );
        }
        if let Some(mtu) = conf.mtu {
            if mtu < info.min_mtu || mtu > info.max_mtu {
                return Err(DpdkError::Config {
                    port,
                    msg: format!(
                        "MTU {mtu} outside the device's range {}..={}",
                        info.min_mtu, info.max_mtu
                    ),
                });
            }
            eth_conf.rxmode.mtu = u32::from(mtu);
        }

        // SAFETY: valid, stopped port we own; eth_conf is a valid config whose RSS key
        // pointer (if any) points into rss_key, kept alive in DevInner for the device's life.
        let ret =
            unsafe { sys::rte_eth_dev_configure(port, conf.rx_queues, conf.tx_queues, &eth_conf) };
        if ret != 0 {
            return Err(call_err("rte_eth_dev_configure", port, ret));
        }
        let (mut rx_desc, mut tx_desc) = (conf.rx_desc, conf.tx_desc);
        // SAFETY: configured port; valid out-pointers.
        let ret =
            unsafe { sys::rte_eth_dev_adjust_nb_rx_tx_desc(port, &mut rx_desc, &mut tx_desc) };
        if ret != 0 {
            return Err(call_err("rte_eth_dev_adjust_nb_rx_tx_desc", port, ret));
        }
        // SAFETY: a pure query.
        let socket = unsafe { sys::rte_eth_dev_socket_id(port) };
        for q in 0..conf.rx_queues {
            // SAFETY: configured port, q < rx_queues; NULL rxconf means the driver's
            // default; the pool outlives the device (DevInner holds it).
            let ret = unsafe {
                sys::rte_eth_rx_queue_setup(
                    port,
                    q,
                    rx_desc,
                    socket as u32,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            };
            if ret != 0 {
                return Err(call_err(
                    &format!("rte_eth_rx_queue_setup(queue {q})"),
                    port,
                    ret,
                ));
            }
        }
        for q in 0..conf.tx_queues {
            // SAFETY: configured port, q < tx_queues; NULL txconf means the driver's default.
            let ret = unsafe {
                sys::rte_eth_tx_queue_setup(port, q, tx_desc, socket as u32, std::ptr::null())
            };
            if ret != 0 {
                return Err(call_err(
                    &format!("rte_eth_tx_queue_setup(queue {q})"),
                    port,
                    ret,
                ));
            }
        }
        // SAFETY: configured port with all queues set up.
        let ret = unsafe { sys::rte_eth_dev_start(port) };
        if ret != 0 {
            return Err(call_err("rte_eth_dev_start", port, ret));
        }
        // From here the device is started: DevInner's Drop stops and closes it on error.
        claim.1 = false;
        let inner = Arc::new(DevInner {
            port_id: port,
            rx_queues: conf.rx_queues,
            tx_queues: conf.tx_queues,
            held: (0..conf.rx_queues.max(conf.tx_queues))
                .map(|_| AtomicBool::new(false))
                .collect(),
            closed: AtomicBool::new(false),
            _rss_key: rss_key,
            pool,
            _eal: Arc::clone(eal.inner()),
        });

        let promiscuous = if conf.promiscuous {
            // SAFETY: started port we own.
            let ret = unsafe { sys::rte_eth_promiscuous_enable(port) };
            if ret == 0 {
                Promiscuous::On
            } else if ret == -libc::ENOTSUP {
                tracing::info!(port, driver = %driver, "promiscuous mode not supported by the driver");
                Promiscuous::Unsupported
            } else {
                return Err(call_err("rte_eth_promiscuous_enable", port, ret));
            }
        } else {
            Promiscuous::Off
        };

        let mut addr = sys::rte_ether_addr::default();
        // SAFETY: valid port; addr is a valid out-pointer.
        let ret = unsafe { sys::rte_eth_macaddr_get(port, &mut addr) };
        if ret != 0 {
            return Err(call_err("rte_eth_macaddr_get", port, ret));
        }
        Ok(EthDev {
            name: port_name(port).unwrap_or_default(),
            inner,
            mac: addr.addr_bytes,
            promiscuous,
            rss_hash_functions: rss_hf,
            rx_desc,
            tx_desc,
            driver,
            if_index: info.if_index,
        })
    }

    /// The driver's name (`rte_eth_dev_info.driver_name`, e.g. `net_af_packet`).
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// The kernel interface the device is bound to (`rte_eth_dev_info.if_index`: e.g. the
    /// interface a `net_af_packet` port reads), 0 if none.
    pub fn if_index(&self) -> u32 {
        self.if_index
    }

    /// A handle on queue `q` (rx queue `q` and tx queue `q`, whichever exist) for one
    /// thread. Each queue id can be held by one [`EthQueue`] at a time.
    ///
    /// Errors: [`DpdkError::QueueOutOfRange`] when the port has neither an rx nor a tx queue
    /// `q`, [`DpdkError::QueueInUse`], [`DpdkError::PortStopped`].
    pub fn queue(&self, q: u16) -> Result<EthQueue, DpdkError> {
        let d = &self.inner;
        if d.is_closed() {
            return Err(DpdkError::PortStopped(d.port_id));
        }
        let Some(flag) = d.held.get(usize::from(q)) else {
            return Err(DpdkError::QueueOutOfRange {
                port: d.port_id,
                queue: q,
                rx_queues: d.rx_queues,
                tx_queues: d.tx_queues,
            });
        };
        if flag.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::QueueInUse {
                port: d.port_id,
                queue: q,
            });
        }
        Ok(EthQueue::new(Arc::clone(d), q))
    }

    /// Stops and closes the port now (`rte_eth_dev_stop`, `rte_eth_dev_close`); later calls
    /// do nothing. Drop does the same if this was not called.
    ///
    /// Errors: [`DpdkError::QueuesInUse`] while [`EthQueue`] handles are alive (the port
    /// stays started).
    pub fn stop(&mut self) -> Result<(), DpdkError> {
        let held = self
            .inner
            .held
            .iter()
            .filter(|h| h.load(Ordering::SeqCst))
            .count();
        if held != 0 {
            return Err(DpdkError::QueuesInUse {
                port: self.inner.port_id,
                held,
            });
        }
        self.inner.close_once();
        Ok(())
    }

    fn live_port(&self) -> Result<u16, DpdkError> {
        if self.inner.is_closed() {
            Err(DpdkError::PortStopped(self.inner.port_id))
        } else {
            Ok(self.inner.port_id)
        }
    }

    /// Current link state, without waiting.
    pub fn link_status(&self) -> Result<LinkStatus, DpdkError> {
        let port = self.live_port()?;
        let mut link = sys::rte_eth_link::default();
        // SAFETY: started port; link is a valid out-pointer.
        let ret = unsafe { sys::rte_eth_link_get_nowait(port, &mut link) };
        if ret != 0 {
            return Err(call_err("rte_eth_link_get_nowait", port, ret));
        }
        let speed = link.link_speed;
        Ok(LinkStatus {
            up: u32::from(link.link_status()) == sys::RTE_ETH_LINK_UP,
            speed_mbps: if speed == sys::RTE_ETH_SPEED_NUM_UNKNOWN {
                0
            } else {
                speed
            },
            full_duplex: u32::from(link.link_duplex()) == sys::RTE_ETH_LINK_FULL_DUPLEX,
        })
    }

    /// Polls the link every 10 ms until it is up or `timeout` passes.
    ///
    /// Errors: [`DpdkError::LinkDown`] on timeout.
    pub fn wait_link_up(&self, timeout: Duration) -> Result<LinkStatus, DpdkError> {
        let start = Instant::now();
        loop {
            let st = self.link_status()?;
            if st.up {
                return Ok(st);
            }
            if start.elapsed() >= timeout {
                return Err(DpdkError::LinkDown {
                    port: self.inner.port_id,
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Device counters.
    pub fn stats(&self) -> Result<EthStats, DpdkError> {
        let port = self.live_port()?;
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: started port; s is a valid out-pointer.
        let ret = unsafe { sys::rte_eth_stats_get(port, &mut s) };
        if ret != 0 {
            return Err(call_err("rte_eth_stats_get", port, ret));
        }
        Ok(EthStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }

    /// The driver's extended counters as `(name, value)`.
    pub fn xstats(&self) -> Result<Vec<(String, u64)>, DpdkError> {
        let port = self.live_port()?;
        // The count can change between calls (queues): retry a few times.
        for _ in 0..4 {
            // SAFETY: NULL/0 asks for the number of names.
            let n = unsafe { sys::rte_eth_xstats_get_names(port, std::ptr::null_mut(), 0) };
            if n < 0 {
                return Err(call_err("rte_eth_xstats_get_names", port, n));
            }
            let n = n as usize;
            let mut names = vec![sys::rte_eth_xstat_name::default(); n];
            // SAFETY: names has room for n entries.
            let got = unsafe { sys::rte_eth_xstats_get_names(port, names.as_mut_ptr(), n as u32) };
            if got < 0 {
                return Err(call_err("rte_eth_xstats_get_names", port, got));
            }
            if got as usize > n {
                continue;
            }
            let mut vals = vec![sys::rte_eth_xstat::default(); n];
            // SAFETY: vals has room for n entries.
            let got2 = unsafe { sys::rte_eth_xstats_get(port, vals.as_mut_ptr(), n as u32) };
            if got2 < 0 {
                return Err(call_err("rte_eth_xstats_get", port, got2));
            }
            if got2 as usize > n {
                continue;
            }
            let out = vals[..got2 as usize]
                .iter()
                .filter_map(|v| {
                    let name = names.get(v.id as usize)?;
                    // SAFETY: DPDK NUL-terminates every name within its fixed-size array
                    // (and the array was zeroed).
                    let s = unsafe { CStr::from_ptr(name.name.as_ptr()) };
                    Some((s.to_string_lossy().into_owned(), v.value))
                })
                .collect();
            return Ok(out);
        }
        Err(DpdkError::Call {
            call: format!("rte_eth_xstats_get(port {port})"),
            errno: libc::EAGAIN,
            msg: "the number of counters kept changing".into(),
        })
    }

    /// The port id.
    pub fn port_id(&self) -> u16 {
        self.inner.port_id
    }

    /// The port's name (e.g. `net_ring0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Promiscuous mode as configured.
    pub fn promiscuous(&self) -> Promiscuous {
        self.promiscuous
    }

    /// The RSS hash functions in use (requested ∩ supported); 0 when RSS is off.
    pub fn rss_hash_functions(&self) -> u64 {
        self.rss_hash_functions
    }

    /// Rx queues configured.
    pub fn rx_queues(&self) -> u16 {
        self.inner.rx_queues
    }

    /// Tx queues configured.
    pub fn tx_queues(&self) -> u16 {
        self.inner.tx_queues
    }

    /// Descriptors per rx and tx queue after adjustment to the device's limits.
    pub fn descriptors(&self) -> (u16, u16) {
        (self.rx_desc, self.tx_desc)
    }

    /// The pool rx buffers come from.
    pub fn mempool(&self) -> &Arc<Mempool> {
        &self.inner.pool
    }
}
