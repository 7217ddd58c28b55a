//! Testbench scenarios: what a TOML file under `configs/tonic/` says (Tonic §6: the paper's
//! cycle-accurate simulator was driven by `init_wnd_size`, `init_rtx_timer`, `rtt`, `loss_prob`
//! and `active_flow_cnt`).
//!
//! `configs/tonic/homa-incast.toml` documents every key with its default.
//!
//! Parsing is strict like `dataplane::config`: unknown keys, wrong types and bad values are
//! a [`ConfigError`] naming the file and the key (`link.rate`, `drop[1].segment`).
//!
//! ```toml
//! name = "newreno-loss"        # free text, for reports
//! seed = 7                     # the link's and the receiver NIC's random drops
//! duration = "50ms"            # virtual-time limit
//! trace_interval = "10us"      # per-flow trace sampling (default: rtt)
//! trace_segments = false       # also log every transmitted segment
//! trace_cnps = false           # also log every CNP a sender receives
//! check_invariants = false     # check the engines' §3.1 set invariants at each sample
//!
//! [module]                     # the protocol module and its parameters
//! name = "newreno"             # reno, newreno, sack, ndp, dcqcn, irn, dctcp, homa
//! dup_ack_thresh = 3           # optional ModuleParams: line_rate, min_rate, max_burst,
//!                              # init_credit, bdp_segments, rto_low, dcqcn_g_shift,
//!                              # dcqcn_timer, dcqcn_byte_counter, dcqcn_rai, dcqcn_rhai,
//!                              # dctcp_g_shift, homa_unsched_prio
//! [tonic]                      # Tonic's own knobs, plus engine sizes
//! init_wnd_size = 10           # initial window of window modules, segments
//! init_rtx_timer = "1ms"       # base retransmission timeout
//! rtt = "10us"                 # round-trip propagation delay
//! loss_prob = 0.001            # random data drops at the receiver's NIC (§6.2.1)
//! active_flow_cnt = 1          # flows per sender
//! window = 128                 # bitmap size: 64, 128 or 256 (Tab. 4)
//! ring_depth = 4               # N (§3.1)
//! cycle = "1us"                # Periodic Updates sweep interval
//!
//! [flows]
//! senders = 1                  # sender hosts (one engine each) → one receiver
//! segments = 2000              # or: bytes = "2MB" (a last short segment is allowed)
//! segment_size = 1000          # bytes of payload per segment
//! start_interval = "0ns"       # flow k starts at k · start_interval
//! start_window = "0ns"         # … plus a random delay in [0, start_window)
//!
//! [network]
//! topology = "star"            # or "dumbbell": core link ([link]), then an edge port
//! edge_rate = "10Gbps"         # dumbbell: the edge port to the receiver (default host_rate)
//! edge_buffer = "1MB"          # dumbbell: its buffer (default link.buffer)
//! tx_jitter = "0ns"            # data reaches the switch 0..=tx_jitter after the NIC
//! clock_ppm = 0                # each sender NIC's clock off by up to ±clock_ppm
//! variation_seed = 7           # seed of those draws and start_window's (default: seed)
//!
//! [link]                       # the bottleneck towards the receiver
//! rate = "10Gbps"
//! host_rate = "10Gbps"         # each sender's NIC (default: rate)
//! delay = "5us"                # one-way data delay (default rtt / 2)
//! buffer = "200KB"             # FIFO buffer, tail drop
//! header_bytes = 64            # per-packet header; a trimmed packet's size
//! loss_prob = 0.0              # random loss on the link
//! ecn_threshold = "30KB"       # mark when more than this is queued (K, or RED's Kmin)
//! ecn_threshold_max = "90KB"   # optional RED Kmax: marking probability rises to ecn_prob_max
//! ecn_prob_max = 1.0
//! trim = false                 # NDP: cut the payload instead of dropping when full
//! header_buffer = "64KB"       # room for trimmed headers (priority queue; default buffer)
//! priorities = 1               # strict-priority data queues, 1..=8 (Homa: 8)
//!
//! [receiver]
//! kind = "tcp-sack"            # override the protocol table (see receiver.rs)
//! ack_every = 1                # 2: delayed acks (every second in-order segment)
//! delayed_ack_timeout = "20us"
//! sack_blocks = 4              # 1..=4 (Tonic's prototype used 1)
//! cnp_interval = "50us"        # DCQCN NP: at most one CNP per flow per interval
//! homa_overcommit = 2          # Homa: messages granted at once
//! homa_rtt_bytes = "12KB"      # Homa: grant this far ahead (default module.init_credit)
//! homa_sched_prio = 6          # Homa: priority of the shortest granted message
//!
//! [[drop]]                     # scripted drops at the receiver's NIC
//! flow = 0                     # global flow id (sender · active_flow_cnt + k)
//! segment = 150
//! count = 1                    # how many arrivals of it to drop
//! ```

use serde::Deserialize;

use super::receiver::ReceiverKind;
use super::units;
use super::variation::Variation;
use crate::config::ConfigError;
use crate::tonic::module::MAX_SACK_BLOCKS;
use crate::tonic::modules::ModuleParams;
use crate::tonic::registry::Registry;
use crate::tonic::{EngineParams, Nanos};

/// A whole scenario. Build one in code with [`Scenario::new`] and field updates, or read one
/// with [`load_scenario`] / [`parse_scenario`].
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free-text name for reports (default: the file name).
    #[serde(default)]
    pub name: String,
    /// Seed of the testbench's random number generator.
    #[serde(default = "one")]
    pub seed: u64,
    /// Virtual-time limit in ns.
    #[serde(default = "default_duration", deserialize_with = "units::duration")]
    pub duration: Nanos,
    /// Trace sampling interval in ns (default: the RTT).
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub trace_interval: Option<Nanos>,
    /// Log every transmitted segment (Tonic Fig. 3b: sequence numbers over time).
    #[serde(default)]
    pub trace_segments: bool,
    /// Log every CNP a sender receives (DCQCN, Tonic §6.2.2: the CNP sequence that drives
    /// the rate trace, e.g. for a reference sender).
    #[serde(default)]
    pub trace_cnps: bool,
    /// Check the engines' invariants (§3.1 sets, rings, window) at each trace sample.
    #[serde(default)]
    pub check_invariants: bool,
    /// The protocol module.
    pub module: ModuleSection,
    /// Tonic's knobs and the engine sizes.
    #[serde(default)]
    pub tonic: TonicSection,
    /// The flows.
    #[serde(default)]
    pub flows: FlowsSection,
    /// The bottleneck link.
    #[serde(default)]
    pub link: LinkSection,
    /// The topology.
    #[serde(default)]
    pub network: NetworkSection,
    /// The receiver.
    #[serde(default)]
    pub receiver: ReceiverSection,
    /// Scripted drops.
    #[serde(default, rename = "drop")]
    pub drops: Vec<DropRule>,
}

fn one() -> u64 {
    1
}
fn default_duration() -> Nanos {
    1_000_000_000
}

/// `[module]`: which module, and the [`ModuleParams`] a scenario may override. Unset
/// parameters keep `ModuleParams::default()`, except `line_rate` (default: the sender's
/// NIC rate).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleSection {
    /// Registry name of the module.
    pub name: String,
    /// Duplicate acks for fast retransmit (App. D `DUP_ACKS_THRESH`).
    pub dup_ack_thresh: Option<u32>,
    /// Initial and largest rate of rate modules, bit/s.
    #[serde(default, deserialize_with = "units::opt_rate")]
    pub line_rate: Option<u64>,
    /// Smallest rate of rate modules, bit/s.
    #[serde(default, deserialize_with = "units::opt_rate")]
    pub min_rate: Option<u64>,
    /// Burst D of rate modules, bytes.
    #[serde(default, deserialize_with = "units::opt_size")]
    pub max_burst: Option<u64>,
    /// NDP's first-RTT credit, bytes.
    #[serde(default, deserialize_with = "units::opt_size")]
    pub init_credit: Option<u64>,
    /// IRN's BDP window, segments.
    pub bdp_segments: Option<u32>,
    /// IRN's RTO_low.
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub rto_low: Option<Nanos>,
    /// DCQCN g = 2^-shift.
    pub dcqcn_g_shift: Option<u32>,
    /// DCQCN timers K and T.
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub dcqcn_timer: Option<Nanos>,
    /// DCQCN byte counter B, bytes.
    #[serde(default, deserialize_with = "units::opt_size")]
    pub dcqcn_byte_counter: Option<u64>,
    /// DCQCN R_AI.
    #[serde(default, deserialize_with = "units::opt_rate")]
    pub dcqcn_rai: Option<u64>,
    /// DCQCN R_HAI.
    #[serde(default, deserialize_with = "units::opt_rate")]
    pub dcqcn_rhai: Option<u64>,
    /// DCTCP g = 2^-shift.
    pub dctcp_g_shift: Option<u32>,
    /// Homa: priority of unscheduled packets, 0–7 (default 7, the highest).
    pub homa_unsched_prio: Option<u8>,
}

/// `[tonic]`: the knobs of Tonic's test bench plus engine sizes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TonicSection {
    /// Initial window of window modules, in segments.
    pub init_wnd_size: u32,
    /// Base retransmission timeout, ns.
    #[serde(deserialize_with = "units::duration")]
    pub init_rtx_timer: Nanos,
    /// Round-trip propagation delay, ns (default: twice `link.delay`, else 10 µs as in §6.2.1).
    #[serde(deserialize_with = "units::opt_duration")]
    pub rtt: Option<Nanos>,
    /// Probability that the receiver's NIC drops an arriving data packet.
    pub loss_prob: f64,
    /// Flows per sender.
    pub active_flow_cnt: u32,
    /// Window bitmap size in segments.
    pub window: u32,
    /// N, the per-flow ring of segment addresses.
    pub ring_depth: u32,
    /// Interval of the Periodic Updates sweep (every flow once), ns.
    #[serde(deserialize_with = "units::duration")]
    pub cycle: Nanos,
}

impl Default for TonicSection {
    fn default() -> Self {
        TonicSection {
            init_wnd_size: 10,
            init_rtx_timer: 200_000_000,
            rtt: None,
            loss_prob: 0.0,
            active_flow_cnt: 1,
            window: 128,
            ring_depth: 4,
            cycle: 1_000,
        }
    }
}

/// `[flows]`: how many, how big, when.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlowsSection {
    /// Sender hosts, each with its own engine and NIC, all sending to one receiver.
    pub senders: u32,
    /// Flow size in segments (exclusive with `bytes`; default 1000 segments).
    pub segments: Option<u64>,
    /// Flow size in bytes.
    #[serde(deserialize_with = "units::opt_size")]
    pub bytes: Option<u64>,
    /// Payload bytes per segment.
    pub segment_size: u32,
    /// Flow k starts at k · start_interval, ns.
    #[serde(deserialize_with = "units::duration")]
    pub start_interval: Nanos,
    /// Each flow starts a random delay uniform in `[0, start_window)` ns after
    /// `k · start_interval` (drawn from `network.variation_seed`; 0: no delay, no draw).
    /// See [`super::variation`].
    #[serde(deserialize_with = "units::duration")]
    pub start_window: Nanos,
}

impl Default for FlowsSection {
    fn default() -> Self {
        FlowsSection {
            senders: 1,
            segments: None,
            bytes: None,
            segment_size: 1000,
            start_interval: 0,
            start_window: 0,
        }
    }
}

/// `[link]`: the bottleneck from the switch to the receiver, and the senders' NICs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkSection {
    /// Bottleneck rate, bit/s.
    #[serde(deserialize_with = "units::rate")]
    pub rate: u64,
    /// Each sender NIC's rate, bit/s (default: `rate`).
    #[serde(deserialize_with = "units::opt_rate")]
    pub host_rate: Option<u64>,
    /// One-way delay of data packets, ns (default: rtt / 2).
    #[serde(deserialize_with = "units::opt_duration")]
    pub delay: Option<Nanos>,
    /// FIFO buffer in bytes (tail drop).
    #[serde(deserialize_with = "units::size")]
    pub buffer: u64,
    /// Header bytes per packet (on the wire, and all a trimmed packet keeps).
    pub header_bytes: u32,
    /// Random loss probability of a packet on the link.
    pub loss_prob: f64,
    /// ECN: mark arriving data when more than this many bytes are queued.
    #[serde(deserialize_with = "units::opt_size")]
    pub ecn_threshold: Option<u64>,
    /// ECN (RED): above this, always mark; between the thresholds, mark with a probability
    /// rising linearly to `ecn_prob_max`.
    #[serde(deserialize_with = "units::opt_size")]
    pub ecn_threshold_max: Option<u64>,
    /// RED's Pmax.
    pub ecn_prob_max: f64,
    /// ECN: judge and mark a data packet when it leaves the queue, by the bytes queued
    /// behind it, instead of when it arrives (the switch of DCQCN's NS3 simulator, Zhu et
    /// al., CoNEXT '16, marks on departure).
    pub ecn_on_dequeue: bool,
    /// Trim instead of dropping when the buffer is full (NDP).
    pub trim: bool,
    /// Bytes of trimmed headers the priority queue holds (default: `buffer`).
    #[serde(deserialize_with = "units::opt_size")]
    pub header_buffer: Option<u64>,
    /// Strict-priority data queues per output port, 1 to 8 (Homa: 8). A packet of priority
    /// p (0 lowest … 7 highest) waits in queue min(p, priorities − 1); a queue is served only
    /// when every higher one is empty. All share `buffer`.
    pub priorities: u32,
}

impl Default for LinkSection {
    fn default() -> Self {
        LinkSection {
            rate: 10_000_000_000,
            host_rate: None,
            delay: None,
            buffer: 5_500_000,
            header_bytes: 64,
            loss_prob: 0.0,
            ecn_threshold: None,
            ecn_threshold_max: None,
            ecn_prob_max: 1.0,
            ecn_on_dequeue: false,
            trim: false,
            header_buffer: None,
            priorities: 1,
        }
    }
}

/// Which switches stand between the senders and the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// One switch, every host on its own port: the receiver's port (the `[link]`) is the
    /// bottleneck output queue (Tonic §6.2: "hosts … to the same switch").
    #[default]
    Star,
    /// Senders on switch A, the receiver on switch B: data crosses the A→B core link (the
    /// `[link]`: rate, buffer, ECN, trimming, priorities of A's output port) and then B's
    /// port towards the receiver (`network.edge_rate`, `network.edge_buffer`, same
    /// queueing rules) (nanoTransport §5.2's incast runs on a dumbbell).
    Dumbbell,
}

/// `[network]`: the topology.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkSection {
    /// `star` (default) or `dumbbell`.
    pub topology: Topology,
    /// Dumbbell: the rate of switch B's port to the receiver (default: `link.host_rate`).
    #[serde(deserialize_with = "units::opt_rate")]
    pub edge_rate: Option<u64>,
    /// Dumbbell: that port's buffer (default: `link.buffer`).
    #[serde(deserialize_with = "units::opt_size")]
    pub edge_buffer: Option<u64>,
    /// Transmit jitter: each data packet reaches the (first) switch a random delay uniform
    /// in `[0, tx_jitter]` ns after its sender's NIC finished it, its host's order kept
    /// (0: none, nothing drawn). See [`super::variation`].
    #[serde(deserialize_with = "units::duration")]
    pub tx_jitter: Nanos,
    /// Each sender NIC's clock is off nominal by a random offset uniform in
    /// `[−clock_ppm, +clock_ppm]` ppm (0: exact clocks, nothing drawn; at most 10,000).
    pub clock_ppm: u32,
    /// Seed of the variation draws (`tx_jitter`, `clock_ppm`, `flows.start_window`);
    /// default: `seed`.
    pub variation_seed: Option<u64>,
}

/// `[receiver]`: how the receiver answers.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReceiverSection {
    /// Receiver behaviour; default from the module (see [`ReceiverKind::for_module`]).
    pub kind: Option<ReceiverKind>,
    /// TCP receivers: ack every this many in-order segments (2: delayed acks).
    pub ack_every: u32,
    /// TCP receivers: the delayed-ack timer, ns.
    #[serde(deserialize_with = "units::duration")]
    pub delayed_ack_timeout: Nanos,
    /// SACK blocks per ack, 1..=4.
    pub sack_blocks: u32,
    /// RoCE receivers: at most one CNP per flow per this interval, ns (DCQCN: 50 µs).
    #[serde(deserialize_with = "units::duration")]
    pub cnp_interval: Nanos,
    /// Homa receivers: messages granted at once (the degree of overcommitment, Homa §3.5).
    pub homa_overcommit: u32,
    /// Homa receivers: RTTbytes, how far ahead of the arrived bytes a message is granted
    /// (default: `module.init_credit`, the senders' unscheduled bytes).
    #[serde(deserialize_with = "units::opt_size")]
    pub homa_rtt_bytes: Option<u64>,
    /// Homa receivers: the highest priority of scheduled packets (the shortest message's);
    /// the next ones get one level less each (default 6, below the unscheduled 7).
    pub homa_sched_prio: u8,
}

impl Default for ReceiverSection {
    fn default() -> Self {
        ReceiverSection {
            kind: None,
            ack_every: 1,
            delayed_ack_timeout: 40_000,
            sack_blocks: MAX_SACK_BLOCKS as u32,
            cnp_interval: 50_000,
            homa_overcommit: 2,
            homa_rtt_bytes: None,
            homa_sched_prio: 6,
        }
    }
}

/// `[[drop]]`: drop arrivals of one segment at the receiver's NIC.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DropRule {
    /// Global flow id.
    pub flow: u32,
    /// Segment index.
    pub segment: u64,
    /// Arrivals to drop (first transmission first).
    #[serde(default = "one")]
    pub count: u64,
}

impl Scenario {
    /// A scenario running module `module` with every other setting at its default.
    pub fn new(module: &str) -> Self {
        Scenario {
            name: module.to_string(),
            seed: 1,
            duration: default_duration(),
            trace_interval: None,
            trace_segments: false,
            trace_cnps: false,
            check_invariants: false,
            module: ModuleSection {
                name: module.to_string(),
                ..Default::default()
            },
            tonic: TonicSection::default(),
            flows: FlowsSection::default(),
            link: LinkSection::default(),
            network: NetworkSection::default(),
            receiver: ReceiverSection::default(),
            drops: Vec::new(),
        }
    }

    /// Round-trip propagation delay.
    pub fn rtt(&self) -> Nanos {
        match (self.tonic.rtt, self.link.delay) {
            (Some(r), _) => r,
            (None, Some(d)) => 2 * d,
            (None, None) => 10_000,
        }
    }

    /// One-way delay of data (sender → receiver).
    pub fn forward_delay(&self) -> Nanos {
        self.link.delay.unwrap_or(self.rtt() / 2)
    }

    /// One-way delay of control packets (receiver → sender): `rtt − delay`.
    pub fn reverse_delay(&self) -> Nanos {
        self.rtt().saturating_sub(self.forward_delay())
    }

    /// Each sender NIC's rate.
    pub fn host_rate(&self) -> u64 {
        self.link.host_rate.unwrap_or(self.link.rate)
    }

    /// The hosts' timing variation this scenario gives ([`super::variation`]).
    pub fn variation(&self) -> Variation {
        Variation {
            tx_jitter: self.network.tx_jitter,
            clock_ppm: self.network.clock_ppm,
            start_window: self.flows.start_window,
            seed: self.network.variation_seed.unwrap_or(self.seed),
        }
    }

    /// Flows in total: `senders · active_flow_cnt`.
    pub fn total_flows(&self) -> u32 {
        self.flows.senders * self.tonic.active_flow_cnt
    }

    /// Bytes per flow.
    pub fn flow_bytes(&self) -> u64 {
        match (self.flows.segments, self.flows.bytes) {
            (_, Some(b)) => b,
            (Some(s), None) => s * self.flows.segment_size as u64,
            (None, None) => 1000 * self.flows.segment_size as u64,
        }
    }

    /// Segments per flow (a final short one included).
    pub fn flow_segments(&self) -> u64 {
        self.flow_bytes()
            .div_ceil(self.flows.segment_size.max(1) as u64)
    }

    /// The trace sampling interval.
    pub fn trace_every(&self) -> Nanos {
        self.trace_interval.unwrap_or(self.rtt()).max(1)
    }

    /// The module parameters this scenario gives.
    pub fn module_params(&self) -> ModuleParams {
        let m = &self.module;
        let d = ModuleParams::default();
        ModuleParams {
            init_wnd: self.tonic.init_wnd_size,
            rto_ns: self.tonic.init_rtx_timer,
            dup_ack_thresh: m.dup_ack_thresh.unwrap_or(d.dup_ack_thresh),
            line_rate_bps: m.line_rate.unwrap_or(self.host_rate()),
            min_rate_bps: m.min_rate.unwrap_or(d.min_rate_bps),
            max_burst_bytes: m.max_burst.map_or(d.max_burst_bytes, clamp32),
            init_credit_bytes: m.init_credit.map_or(d.init_credit_bytes, clamp32),
            bdp_segments: m.bdp_segments.unwrap_or(d.bdp_segments),
            rto_low_ns: m.rto_low.unwrap_or(d.rto_low_ns),
            dcqcn_g_shift: m.dcqcn_g_shift.unwrap_or(d.dcqcn_g_shift),
            dcqcn_timer_ns: m.dcqcn_timer.unwrap_or(d.dcqcn_timer_ns),
            dcqcn_byte_counter: m.dcqcn_byte_counter.unwrap_or(d.dcqcn_byte_counter),
            dcqcn_rai_bps: m.dcqcn_rai.unwrap_or(d.dcqcn_rai_bps),
            dcqcn_rhai_bps: m.dcqcn_rhai.unwrap_or(d.dcqcn_rhai_bps),
            dctcp_g_shift: m.dctcp_g_shift.unwrap_or(d.dctcp_g_shift),
            homa_unsched_prio: m.homa_unsched_prio.unwrap_or(d.homa_unsched_prio),
        }
    }

    /// The engine sizes of each sender.
    pub fn engine_params(&self) -> EngineParams {
        EngineParams {
            max_flows: self.tonic.active_flow_cnt,
            window_segments: self.tonic.window,
            ring_depth: self.tonic.ring_depth,
            ..EngineParams::default()
        }
    }
}

fn clamp32(v: u64) -> u32 {
    v.min(u32::MAX as u64) as u32
}

/// Parses scenario text; `file` names it in errors. Module names are checked against the
/// built-in registry.
pub fn parse_scenario(text: &str, file: &str) -> Result<Scenario, ConfigError> {
    parse_scenario_with(text, file, &Registry::builtin())
}

/// [`parse_scenario`] against `registry` (for out-of-tree modules).
pub fn parse_scenario_with(
    text: &str,
    file: &str,
    registry: &Registry,
) -> Result<Scenario, ConfigError> {
    let value: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| format!("line {}", text[..s.start].matches('\n').count() + 1))
            .unwrap_or_else(|| "(syntax)".into());
        ConfigError::new(file, line, format!("TOML syntax error: {}", e.message()))
    })?;
    let mut s: Scenario =
        serde_path_to_error::deserialize(toml::Value::Table(value)).map_err(|e| {
            let p = e.path().to_string();
            let key = if p == "." || p.is_empty() {
                "(top level)".to_string()
            } else {
                p
            };
            ConfigError::new(file, key, e.into_inner().message().to_string())
        })?;
    if s.name.is_empty() {
        s.name = std::path::Path::new(file)
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    s.check(file, registry)?;
    Ok(s)
}

/// Reads and checks a scenario file (module names from the built-in registry).
pub fn load_scenario(path: impl AsRef<std::path::Path>) -> Result<Scenario, ConfigError> {
    load_scenario_with(path, &Registry::builtin())
}

/// [`load_scenario`] against `registry` (for out-of-tree modules).
pub fn load_scenario_with(
    path: impl AsRef<std::path::Path>,
    registry: &Registry,
) -> Result<Scenario, ConfigError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&file, "(file)", format!("cannot read: {e}")))?;
    parse_scenario_with(&text, &file, registry)
}

mod check;
#[cfg(test)]
mod tests;
