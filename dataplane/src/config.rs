//! The TOML configuration of a nicemu run (`configs/*.toml`).
//!
//! Parsing is strict: an unknown key, a wrong type or a bad value is a [`ConfigError`] that
//! names the file, the key (as a path like `port[1].mtu`) and what was expected. Checks that
//! need the running system (does a DPDK device exist?) are made later by the runtime and
//! reported with the same key path.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::port::wire::Impairments;
use crate::rss::RssMode;

pub use offload_api::config_error::ConfigError;

/// A whole configuration.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where it was read from (set by the loader).
    #[serde(skip)]
    pub source: String,
    /// DPDK EAL settings.
    #[serde(default)]
    pub eal: EalConfig,
    /// Runtime settings.
    #[serde(default)]
    pub runtime: RuntimeConfig,
    /// Ports, in order; lcores refer to them by name.
    #[serde(rename = "port", default)]
    pub ports: Vec<PortConfig>,
    /// In-memory wires, by name (the `wire` of a port of driver `wire`): impairments of both
    /// directions. A wire named by one port has its far end free for a traffic peer (the
    /// demo's generator, a test); a wire named by two ports joins them.
    #[serde(rename = "wire", default)]
    pub wires: BTreeMap<String, Impairments>,
    /// Lcores and their roles.
    #[serde(rename = "lcore", default)]
    pub lcores: Vec<LcoreConfig>,
    /// AccelTCP offload switches.
    #[serde(default)]
    pub offloads: OffloadConfig,
    /// Tonic transport engine settings.
    #[serde(default)]
    pub tonic: TonicConfig,
    /// The L7 proxy's settings (`nicemu proxy`), kept as raw TOML: the apps crate checks
    /// them (`host_apps::proxy::config`), so that one file configures the NIC and the proxy.
    #[serde(default)]
    pub proxy: Option<toml::Table>,
}

/// DPDK EAL settings. Arguments after `--` on the command line are appended to `args`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EalConfig {
    /// EAL arguments, e.g. `["--no-huge", "--no-pci", "--vdev=net_null0"]`.
    pub args: Vec<String>,
}

/// Runtime settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Frames per rx burst (1..=512).
    pub burst: u16,
    /// Mbufs in each port's pool (DPDK).
    pub mbufs: u32,
    /// Seconds between periodic statistics lines (0: off).
    pub stats_interval_s: f64,
    /// How the NIC lcores and host threads poll: `"auto"` (default: adaptive, except on
    /// physical NICs with a CPU to spare), `"spin"` (dedicated cores) or `"adaptive"` (back
    /// off when idle, for machines that also run the clients). See [`crate::idle`].
    pub poll: crate::idle::PollMode,
    /// The longest sleep of an idle adaptive loop, in microseconds (1..=10000): the most
    /// it adds to the first packet after a quiet spell.
    pub idle_sleep_max_us: u32,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            burst: 32,
            mbufs: 8191,
            stats_interval_s: 0.0,
            poll: crate::idle::PollMode::Auto,
            idle_sleep_max_us: 200,
        }
    }
}

impl RuntimeConfig {
    /// The adaptive policy these settings give (the other thresholds are fixed).
    pub fn idle_policy(&self) -> crate::idle::IdlePolicy {
        let d = crate::idle::IdlePolicy::default();
        let max_sleep = std::time::Duration::from_micros(u64::from(self.idle_sleep_max_us));
        crate::idle::IdlePolicy {
            max_sleep,
            min_sleep: d.min_sleep.min(max_sleep),
            ..d
        }
    }
}

/// Which backend a port uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// A DPDK ethdev (physical or virtual device).
    Dpdk,
    /// One end of an in-memory wire.
    Wire,
}

/// One port.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    /// Name lcores and `--pcap` use.
    pub name: String,
    /// Backend.
    pub driver: Driver,
    /// DPDK device name (`net_null0`, `net_af_packet0`, or a PCI address like `0000:3b:00.0`).
    #[serde(default)]
    pub device: Option<String>,
    /// Name of the in-memory wire this port is an end of (driver `wire`).
    #[serde(default)]
    pub wire: Option<String>,
    /// MAC address; defaults to the device's (DPDK) or a locally administered one (wire).
    #[serde(default, deserialize_with = "de_opt_mac")]
    pub mac: Option<[u8; 6]>,
    /// The NIC's IPv4 addresses on this port, with prefix length (`10.0.0.1/24`).
    #[serde(default, deserialize_with = "de_cidrs")]
    pub ipv4: Vec<([u8; 4], u8)>,
    /// IP MTU in bytes (68..=9000).
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    /// Receive descriptors per queue (DPDK).
    #[serde(default = "default_desc")]
    pub rx_desc: u16,
    /// Transmit descriptors per queue (DPDK).
    #[serde(default = "default_desc")]
    pub tx_desc: u16,
    /// Accept frames for any MAC.
    #[serde(default = "default_true")]
    pub promiscuous: bool,
    /// RSS key choice when the port has several queues.
    #[serde(default)]
    pub rss: RssMode,
    /// More IPv4 prefixes on this port's link besides the subnets of `ipv4`
    /// (`on_link = ["198.51.100.0/24"]`): the NIC resolves their addresses with ARP and sends
    /// to them directly, as mTCP does for a prefix its `route.conf` gives to an interface.
    /// Addresses off the subnets and these prefixes are unreachable (no gateway). Empty by
    /// default.
    #[serde(default, deserialize_with = "de_cidrs")]
    pub on_link: Vec<([u8; 4], u8)>,
    /// Static neighbours (`neighbours = [{ ip = "192.0.2.2", mac = "02:00:00:00:00:02" }]`),
    /// as mTCP's `arp.conf`: frames to `ip` go to `mac` without ARP, whatever the subnet,
    /// and the entries never expire. Empty by default.
    #[serde(default)]
    pub neighbours: Vec<Neighbour>,
}

/// A static neighbour of a port ([`PortConfig::neighbours`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Neighbour {
    /// Its IPv4 address (`"192.0.2.2"`).
    #[serde(deserialize_with = "de_ipv4")]
    pub ip: [u8; 4],
    /// How many leading bits of `ip` an address must share to go to `mac` (0..=32; 32,
    /// the default: `ip` alone). A shorter prefix sends a whole range to one MAC, as an
    /// mTCP `arp.conf` entry such as `10.1.0.0/16 <gateway's MAC>` does; the longest
    /// matching prefix wins.
    #[serde(default = "default_neighbour_prefix")]
    pub prefix_len: u8,
    /// Its MAC address (`"02:00:00:00:00:02"`).
    #[serde(deserialize_with = "de_mac")]
    pub mac: [u8; 6],
}

fn default_neighbour_prefix() -> u8 {
    32
}

impl PortConfig {
    /// Whether this port is a physical NIC: a DPDK device that is not a virtual one (DPDK
    /// names those `net_*`: net_memif, net_af_packet, net_ring, net_null, ...). Only a
    /// physical NIC hashes flows to queues with RSS, and only on one may the runtime assume
    /// dedicated cores.
    pub fn is_physical(&self) -> bool {
        self.driver == Driver::Dpdk
            && self
                .device
                .as_deref()
                .is_some_and(|d| !d.starts_with("net_"))
    }

    /// Whether the port is a `net_af_packet` vdev, whose queues (`qpairs=N`) the kernel's
    /// packet fanout fills by a flow hash with a per-boot secret: no source port can aim an
    /// outgoing connection's replies at a queue ([`crate::steer`]).
    pub fn is_af_packet(&self) -> bool {
        self.driver == Driver::Dpdk
            && self
                .device
                .as_deref()
                .is_some_and(|d| d.starts_with("net_af_packet"))
    }
}

fn default_mtu() -> u16 {
    1500
}
fn default_desc() -> u16 {
    1024
}
fn default_true() -> bool {
    true
}

/// What an lcore does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A NIC lcore: polls port queues and runs the offload engines.
    Nic,
    /// A host lcore: runs the host stack and an application.
    Host,
    /// Both, one after the other in one loop (small machines, deterministic tests).
    Shared,
}

/// One lcore: a thread pinned to a CPU core.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LcoreConfig {
    /// The CPU core to pin to.
    pub core: usize,
    /// What it runs.
    pub role: Role,
}

/// AccelTCP offloads (`[offloads]`, AccelTCP §4): which engines the NIC lcores run, and their
/// settings. An engine that is on stays idle until the host asks for it (a listener with
/// `TCP_SETUP_OFFLOAD`, a close with `TCP_TEARDOWN_OFFLOAD`); one that is off leaves those
/// requests unanswered, and the host does the work itself.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OffloadConfig {
    /// SYN-cookie connection setup on the NIC (AccelTCP §4.1). On by default.
    pub setup: bool,
    /// Connection teardown on the NIC (AccelTCP §4.2). On by default.
    pub teardown: bool,
    /// Connection splicing on the NIC (AccelTCP §4.3). On by default.
    pub splice: bool,
    /// Spliced pairs the NIC holds at once, over all its lcores (the shared splice table);
    /// more are refused and the host relays them itself.
    pub splice_max_pairs: usize,
    /// A spliced pair without traffic for this long is removed and reported, milliseconds.
    pub splice_idle_timeout_ms: u64,
    /// How long a pair whose FINs were both acknowledged still translates (a retransmitted
    /// last FIN or ACK), milliseconds.
    pub splice_linger_ms: u64,
    /// Connections one NIC lcore may be closing at once (the teardown engine's table).
    pub teardown_max_flows: usize,
    /// TIME_WAIT on the NIC, milliseconds (RFC 9293 §3.6.1: 2·MSL; Linux 60 s).
    pub teardown_time_wait_ms: u64,
    /// Longest FIN_WAIT_2 on the NIC, milliseconds (Linux's `tcp_fin_timeout`, 60 s).
    pub teardown_fin_wait2_ms: u64,
    /// Retransmission timeouts in a row before the NIC gives a teardown up with a RST.
    pub teardown_max_retries: u32,
    /// Length of one SYN-cookie time-counter tick, seconds.
    pub cookie_period_s: u64,
    /// Oldest accepted cookie, in ticks (at most 30: the counter has 5 bits).
    pub cookie_max_age: u32,
    /// The cookie key rotates every this many ticks (more than `cookie_max_age`).
    pub cookie_rotate_ticks: u32,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        OffloadConfig {
            setup: true,
            teardown: true,
            splice: true,
            splice_max_pairs: 65_536,
            splice_idle_timeout_ms: 60_000,
            splice_linger_ms: 1_000,
            teardown_max_flows: 65_536,
            teardown_time_wait_ms: 60_000,
            teardown_fin_wait2_ms: 60_000,
            teardown_max_retries: 8,
            cookie_period_s: 64,
            cookie_max_age: 2,
            cookie_rotate_ticks: 16,
        }
    }
}

impl OffloadConfig {
    /// Checks the value ranges; returns the offending key (under `offloads.`) and the
    /// problem.
    fn check(&self) -> Result<(), (&'static str, String)> {
        let o = self;
        let rules: [(&'static str, bool, &str); 10] = [
            (
                "splice_max_pairs",
                (1..=1 << 24).contains(&o.splice_max_pairs),
                "expected 1 to 16,777,216 pairs",
            ),
            (
                "splice_idle_timeout_ms",
                o.splice_idle_timeout_ms >= 1,
                "expected a positive time",
            ),
            (
                "splice_linger_ms",
                o.splice_linger_ms <= 600_000,
                "expected at most 600000 ms",
            ),
            (
                "teardown_max_flows",
                (1..=1 << 24).contains(&o.teardown_max_flows),
                "expected 1 to 16,777,216 connections",
            ),
            (
                "teardown_time_wait_ms",
                o.teardown_time_wait_ms >= 1,
                "expected a positive time",
            ),
            (
                "teardown_fin_wait2_ms",
                o.teardown_fin_wait2_ms >= 1,
                "expected a positive time",
            ),
            (
                "teardown_max_retries",
                (1..=64).contains(&o.teardown_max_retries),
                "expected 1 to 64",
            ),
            (
                "cookie_period_s",
                (1..=3600).contains(&o.cookie_period_s),
                "expected 1 to 3600 seconds",
            ),
            (
                "cookie_max_age",
                (1..=30).contains(&o.cookie_max_age),
                "expected 1 to 30 ticks (the cookie's counter has 5 bits)",
            ),
            (
                "cookie_rotate_ticks",
                o.cookie_rotate_ticks > o.cookie_max_age,
                "expected more ticks than cookie_max_age",
            ),
        ];
        for (key, ok, msg) in rules {
            if !ok {
                return Err((key, msg.to_string()));
            }
        }
        Ok(())
    }
}

/// Protocol modules the Tonic engine will offer (Tonic Table 3, plus DCTCP).
pub const TONIC_MODULES: [&str; 7] = ["reno", "newreno", "sack", "ndp", "dcqcn", "irn", "dctcp"];

/// Tonic settings (`[tonic]`): the module and the engine and module parameters
/// (`dataplane::tonic::registry::params_from_config` maps them).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TonicConfig {
    /// The protocol module, one of [`TONIC_MODULES`]; none: Tonic off.
    pub module: Option<String>,
    /// Flow ids per engine (Tonic: 1024 by default, 2048 at most).
    pub max_flows: u32,
    /// Window bitmap size in segments: 64, 128 or 256 (Tonic Tab. 4).
    pub window: u32,
    /// N: generated-but-untransmitted segments per flow (Tonic §3.1), 1 to 8.
    pub ring_depth: u32,
    /// Initial window in segments (window modules; Tonic's `init_wnd_size`).
    pub init_wnd: u32,
    /// Base retransmission timeout in µs (Tonic's `init_rtx_timer`).
    pub rto_us: u64,
    /// Duplicate acks that trigger fast retransmit.
    pub dup_ack_thresh: u32,
    /// Line rate of rate modules (dcqcn, irn) in Mbit/s: their initial and largest rate.
    pub line_rate_mbps: u64,
    /// Smallest rate of rate modules in Mbit/s.
    pub min_rate_mbps: u64,
    /// Maximum burst D of rate modules, in bytes.
    pub max_burst_bytes: u32,
    /// Credit an NDP flow starts with (its first-RTT window), in bytes.
    pub init_credit_bytes: u32,
    /// IRN's window in segments (BDP flow control), at most `window`.
    pub bdp_segments: u32,
    /// IRN's RTO_low in µs (few segments in flight).
    pub rto_low_us: u64,
    /// Shared libraries with out-of-tree modules (the C ABI of `offload_api::tonic_abi`),
    /// loaded at start; `module` may then name one of them.
    pub plugins: Vec<String>,
}

impl Default for TonicConfig {
    fn default() -> Self {
        TonicConfig {
            module: None,
            max_flows: 1024,
            window: 128,
            ring_depth: 4,
            init_wnd: 10,
            rto_us: 200_000,
            dup_ack_thresh: 3,
            line_rate_mbps: 100_000,
            min_rate_mbps: 10,
            max_burst_bytes: 16 * 1024,
            init_credit_bytes: 16 * 1500,
            bdp_segments: 128,
            rto_low_us: 100,
            plugins: Vec::new(),
        }
    }
}

impl TonicConfig {
    /// Checks the value ranges; returns the offending key (under `tonic.`) and the problem.
    fn check(&self) -> Result<(), (&'static str, String)> {
        let t = self;
        if let Some(m) = &t.module {
            // A name that is not built in may come from a plugin: checked when it loads.
            if !TONIC_MODULES.contains(&m.as_str()) && t.plugins.is_empty() {
                let known = TONIC_MODULES.join(", ");
                return Err((
                    "module",
                    format!("unknown module {m:?}, expected one of {known}"),
                ));
            }
        }
        let rules: [(&'static str, bool, &str); 10] = [
            ("max_flows", t.max_flows >= 1, "expected at least 1 flow"),
            (
                "window",
                matches!(t.window, 64 | 128 | 256),
                "expected 64, 128 or 256 segments",
            ),
            (
                "ring_depth",
                (1..=8).contains(&t.ring_depth),
                "expected 1 to 8",
            ),
            ("init_wnd", t.init_wnd >= 1, "expected at least 1 segment"),
            ("rto_us", t.rto_us >= 1, "expected a positive timeout"),
            (
                "dup_ack_thresh",
                t.dup_ack_thresh >= 1,
                "expected at least 1",
            ),
            (
                "min_rate_mbps",
                t.min_rate_mbps >= 1,
                "expected a positive rate",
            ),
            (
                "line_rate_mbps",
                t.line_rate_mbps >= t.min_rate_mbps,
                "expected at least min_rate_mbps",
            ),
            (
                "max_burst_bytes",
                t.max_burst_bytes >= 1,
                "expected a positive burst",
            ),
            (
                "bdp_segments",
                (1..=t.window).contains(&t.bdp_segments),
                "expected 1 to `window` segments",
            ),
        ];
        for (key, ok, msg) in rules {
            if !ok {
                return Err((key, msg.to_string()));
            }
        }
        if t.rto_low_us == 0 {
            return Err(("rto_low_us", "expected a positive timeout".to_string()));
        }
        Ok(())
    }
}

/// `aa:bb:cc:dd:ee:ff` (six two-digit hex bytes).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in mac.iter_mut() {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// `a.b.c.d/len` (len 0..=32).
pub fn parse_cidr(s: &str) -> Option<([u8; 4], u8)> {
    let (ip, len) = s.split_once('/')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    (len <= 32).then_some((ip.octets(), len))
}

fn de_opt_mac<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u8; 6]>, D::Error> {
    de_mac(d).map(Some)
}

fn de_mac<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
    let s = String::deserialize(d)?;
    parse_mac(&s).ok_or_else(|| {
        de::Error::custom(format!(
            "invalid MAC address {s:?}, expected six hex bytes like \"02:00:00:00:00:01\""
        ))
    })
}

fn de_ipv4<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 4], D::Error> {
    let s = String::deserialize(d)?;
    s.parse::<std::net::Ipv4Addr>()
        .map(|a| a.octets())
        .map_err(|_| de::Error::custom(format!("invalid IPv4 address {s:?}")))
}

fn de_cidrs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<([u8; 4], u8)>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    v.iter()
        .map(|s| {
            parse_cidr(s).ok_or_else(|| {
                de::Error::custom(format!(
                    "invalid IPv4 address {s:?}, expected address/prefix like \"10.0.0.1/24\""
                ))
            })
        })
        .collect()
}

/// Formats a MAC address as `aa:bb:cc:dd:ee:ff`.
pub fn fmt_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(&file, "(file)", format!("cannot read: {e}")))?;
        Self::parse(&text, &file)
    }

    /// Parses and checks configuration text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let value: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let msg = e.message().to_string();
            let line = e
                .span()
                .map(|s| format!("line {}", text[..s.start].matches('\n').count() + 1))
                .unwrap_or_else(|| "(syntax)".into());
            ConfigError::new(file, line, format!("TOML syntax error: {msg}"))
        })?;
        let mut cfg: Config =
            serde_path_to_error::deserialize(toml::Value::Table(value)).map_err(|e| {
                let key = path_to_key(&e.path().to_string());
                let msg = e.into_inner().message().to_string();
                ConfigError::new(file, key, msg)
            })?;
        cfg.source = file.to_string();
        cfg.check()?;
        Ok(cfg)
    }

    fn err(&self, key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
        ConfigError::new(&self.source, key, msg)
    }

    /// Checks rules that span keys (names unique and resolvable, ranges).
    fn check(&self) -> Result<(), ConfigError> {
        let r = &self.runtime;
        if !(1..=512).contains(&r.burst) {
            return Err(self.err(
                "runtime.burst",
                format!("{} is out of range, expected 1..=512", r.burst),
            ));
        }
        if r.mbufs < 512 {
            return Err(self.err(
                "runtime.mbufs",
                format!("{} is too small, expected at least 512", r.mbufs),
            ));
        }
        if !(r.stats_interval_s >= 0.0 && r.stats_interval_s.is_finite()) {
            return Err(self.err(
                "runtime.stats_interval_s",
                "expected a number of seconds >= 0",
            ));
        }
        if !(1..=10_000).contains(&r.idle_sleep_max_us) {
            return Err(self.err(
                "runtime.idle_sleep_max_us",
                format!(
                    "{} is out of range, expected 1..=10000 microseconds",
                    r.idle_sleep_max_us
                ),
            ));
        }
        if self.ports.is_empty() {
            return Err(self.err("port", "no ports: add at least one [[port]] table"));
        }
        let mut names = HashSet::new();
        let mut wire_ends: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, p) in self.ports.iter().enumerate() {
            let key = |k: &str| format!("port[{i}].{k}");
            if p.name.is_empty() || !names.insert(p.name.as_str()) {
                return Err(self.err(
                    key("name"),
                    format!(
                        "{:?} is empty or used twice, expected a unique name",
                        p.name
                    ),
                ));
            }
            if let Some((k, n)) = p
                .neighbours
                .iter()
                .enumerate()
                .find(|(_, n)| n.prefix_len > 32)
            {
                return Err(self.err(
                    key(&format!("neighbours[{k}].prefix_len")),
                    format!("{} is out of range, expected 0..=32", n.prefix_len),
                ));
            }
            if !(68..=9000).contains(&p.mtu) {
                return Err(self.err(
                    key("mtu"),
                    format!("{} is out of range, expected 68..=9000", p.mtu),
                ));
            }
            for (k, d) in [("rx_desc", p.rx_desc), ("tx_desc", p.tx_desc)] {
                if !(32..=16384).contains(&d) {
                    return Err(
                        self.err(key(k), format!("{d} is out of range, expected 32..=16384"))
                    );
                }
            }
            match p.driver {
                Driver::Dpdk => {
                    if p.device.as_deref().unwrap_or("").is_empty() {
                        return Err(self.err(key("device"), "missing: a port of driver \"dpdk\" needs the DPDK device name, like \"net_null0\" or \"0000:3b:00.0\""));
                    }
                    if p.wire.is_some() {
                        return Err(
                            self.err(key("wire"), "only ports of driver \"wire\" take a wire")
                        );
                    }
                }
                Driver::Wire => {
                    let Some(w) = p.wire.as_deref() else {
                        return Err(self.err(
                            key("wire"),
                            "missing: a port of driver \"wire\" needs the name of its wire",
                        ));
                    };
                    *wire_ends.entry(w).or_default() += 1;
                    if p.device.is_some() {
                        return Err(
                            self.err(key("device"), "only ports of driver \"dpdk\" take a device")
                        );
                    }
                }
            }
        }
        if self.ports.iter().any(|p| p.driver != self.ports[0].driver) {
            return Err(self.err(
                "port",
                "all ports of one run must use the same driver (\"dpdk\" or \"wire\")",
            ));
        }
        for (w, n) in &wire_ends {
            if *n > 2 {
                return Err(self.err(
                    format!("wire.{w}"),
                    format!("a wire has two ends, but {n} ports name it"),
                ));
            }
        }
        for (w, imp) in &self.wires {
            if !wire_ends.contains_key(w.as_str()) {
                return Err(self.err(format!("wire.{w}"), "no port uses this wire"));
            }
            if let Err(field) = imp.validate() {
                return Err(self.err(
                    format!("wire.{w}.{field}"),
                    "expected a probability between 0 and 1",
                ));
            }
        }
        if self.lcores.is_empty() {
            return Err(self.err(
                "lcore",
                "no lcores: add at least one [[lcore]] with role \"nic\" or \"shared\"",
            ));
        }
        if !self.lcores.iter().any(|l| l.role != Role::Host) {
            return Err(self.err(
                "lcore",
                "no NIC lcore: at least one lcore needs role \"nic\" or \"shared\"",
            ));
        }
        let mut cores = HashSet::new();
        for (i, l) in self.lcores.iter().enumerate() {
            if !cores.insert(l.core) {
                return Err(self.err(
                    format!("lcore[{i}].core"),
                    format!("core {} is used by two lcores", l.core),
                ));
            }
        }
        if let Err((key, msg)) = self.tonic.check() {
            return Err(self.err(format!("tonic.{key}"), msg));
        }
        if let Err((key, msg)) = self.offloads.check() {
            return Err(self.err(format!("offloads.{key}"), msg));
        }
        Ok(())
    }

    /// Checks the lcores against the cores this process may use: every core must be in
    /// `allowed`, and there cannot be more lcores than allowed cores.
    pub fn check_cores(&self, allowed: &[usize]) -> Result<(), ConfigError> {
        let avail = crate::sys::format_core_list(allowed);
        if self.lcores.len() > allowed.len() {
            return Err(self.err(
                "lcore",
                format!(
                    "{} lcores configured but this machine has only {} usable core(s) ({avail})",
                    self.lcores.len(),
                    allowed.len()
                ),
            ));
        }
        for (i, l) in self.lcores.iter().enumerate() {
            if !allowed.contains(&l.core) {
                return Err(self.err(
                    format!("lcore[{i}].core"),
                    format!(
                        "core {} is not available on this machine (usable cores: {avail})",
                        l.core
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The lcores that poll ports (role `nic` or `shared`), in order.
    pub fn nic_lcores(&self) -> Vec<&LcoreConfig> {
        self.lcores
            .iter()
            .filter(|l| l.role != Role::Host)
            .collect()
    }

    /// Index of the port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
}

/// Turns serde_path_to_error's `port[1].mtu`-style path into our key form (it already is,
/// except the top level, which it prints as `.`).
fn path_to_key(p: &str) -> String {
    if p == "." || p.is_empty() {
        "(top level)".to_string()
    } else {
        p.to_string()
    }
}

impl fmt::Display for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Driver::Dpdk => "dpdk",
            Driver::Wire => "wire",
        })
    }
}

#[cfg(test)]
mod tests;
