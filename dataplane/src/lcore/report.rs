//! What an NIC lcore reports: per-port queue counters, the NIC stack's counters, each
//! offload's verdicts and counters, and the cycles of the loop's stages, busy and idle.

use crate::cycles::StageCycles;
use crate::net::stack::StackCounters;
use crate::offload::OffloadReport;
use crate::port::QueueStats;

/// Per-port counters of one lcore.
#[derive(Clone, Debug, Default)]
pub struct PortReport {
    /// Port name.
    pub name: String,
    /// Port index.
    pub index: usize,
    /// Queue counters from the backend.
    pub queue: QueueStats,
    /// Frames `tx_burst` would not take (freed and counted; on an lcore with a host link,
    /// only those beyond [`HOST_TX_HOLD`](super::HOST_TX_HOLD)).
    pub tx_full_drops: u64,
}

/// What an lcore has done so far.
#[derive(Clone, Debug, Default)]
pub struct LcoreReport {
    /// Lcore name.
    pub name: String,
    /// CPU core it is pinned to.
    pub core: Option<usize>,
    /// Per-port counters.
    pub ports: Vec<PortReport>,
    /// NIC stack counters (ARP, ICMP, drops by reason, ...).
    pub stack: StackCounters,
    /// Cycles per stage, from the sampled iterations only (one in [`STAGE_SAMPLE_EVERY`](super::STAGE_SAMPLE_EVERY)):
    /// read the shares of the stages from it, not totals.
    pub cycles: StageCycles,
    /// Cycles of every iteration that received, sent or handled anything (exact: one TSC
    /// read per iteration, charged to the iteration that ends there).
    pub busy_cycles: u64,
    /// Cycles of every iteration that found nothing to do (exact, as `busy_cycles`).
    pub idle_cycles: u64,
    /// Frames forwarded to a peer port (forward mode).
    pub forwarded: u64,
    /// Frames handed to the host.
    pub to_host: u64,
    /// Frames for the host dropped: no host channel, or it was full.
    pub to_host_dropped: u64,
    /// Frames taken from the host.
    pub from_host: u64,
    /// One report per offload on the chain, in chain order: the verdicts it returned and
    /// its own counters.
    pub offloads: Vec<OffloadReport>,
    /// Control messages from the host that no offload took, or whose header was unusable
    /// (dropped: a host ↔ NIC EtherType never goes to a wire).
    pub control_unhandled: u64,
    /// Frames an offload sent out of a port this lcore does not serve (dropped).
    pub offload_out_dropped: u64,
    /// Frames from the host for a port this lcore does not serve (the stack's counters hold
    /// the other drops: no buffer, unresolved, too large, ...).
    pub from_host_dropped: u64,
    /// Frames for the host that belonged to another lcore's connection and were handed to
    /// it ([`crate::steer`]).
    pub steered_out: u64,
    /// Frames other lcores handed to this one.
    pub steered_in: u64,
    /// Frames to steer that the other lcore's inbox had no room for (or, taken from the
    /// inbox, whose port this lcore does not serve): dropped.
    pub steer_dropped: u64,
    /// Frames capture failed to write.
    pub pcap_errors: u64,
    /// Loop iterations.
    pub iterations: u64,
    /// Time the loop gave back while idle (adaptive polling, [`crate::idle`]); in a
    /// `shared` lcore, the combined loop's.
    pub idle: crate::idle::IdleStats,
}

impl LcoreReport {
    /// The report of the offload called `name`, if the chain has one.
    pub fn offload(&self, name: &str) -> Option<&OffloadReport> {
        self.offloads.iter().find(|o| o.name == name)
    }

    /// Frames received on all ports.
    pub fn rx_packets(&self) -> u64 {
        self.ports.iter().map(|p| p.queue.rx_packets).sum()
    }
    /// Frames sent on all ports.
    pub fn tx_packets(&self) -> u64 {
        self.ports.iter().map(|p| p.queue.tx_packets).sum()
    }
}

/// Cycles per packet: busy cycles over frames received (0 when none).
pub fn cycles_per_packet(r: &LcoreReport) -> f64 {
    let pkts = r.rx_packets();
    if pkts == 0 {
        0.0
    } else {
        r.busy_cycles as f64 / pkts as f64
    }
}
