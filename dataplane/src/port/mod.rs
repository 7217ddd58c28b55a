//! Ports: where frames enter and leave the emulated NIC.
//!
//! A [`Port`] value is one *queue* of a device (one rx and one tx queue), owned by exactly
//! one NIC lcore, so bursts need no locks. Backends:
//! - [`wire`]: an in-memory wire (pairs of lock-free rings) with seeded impairments;
//! - `nicemu_dpdk::EthQueue` (feature `dpdk`): a DPDK ethdev queue, any PMD.

use crate::buf::PacketBuf;

#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod wire;

/// Software counters of one port queue, kept by the backend.
///
/// Invariant: counters only grow; `tx_packets` counts frames the backend accepted (for
/// DPDK, frames `rte_eth_tx_burst` took), `tx_dropped` frames it refused or lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Frames received.
    pub rx_packets: u64,
    /// Bytes received (frame bytes, no FCS).
    pub rx_bytes: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames the backend dropped on transmit (ring full, impairment loss, ...).
    pub tx_dropped: u64,
}

impl QueueStats {
    /// Adds `other` into `self` (for totals over queues or lcores).
    pub fn add(&mut self, other: &QueueStats) {
        self.rx_packets += other.rx_packets;
        self.rx_bytes += other.rx_bytes;
        self.tx_packets += other.tx_packets;
        self.tx_bytes += other.tx_bytes;
        self.tx_dropped += other.tx_dropped;
    }
}

/// One rx/tx queue pair of a port, owned by one lcore.
pub trait Port: Send {
    /// The buffer type this backend moves.
    type Buf: PacketBuf;

    /// Receives up to `max` frames, appending them to `out`; returns how many.
    fn rx_burst(&mut self, out: &mut Vec<Self::Buf>, max: usize) -> usize;

    /// Transmits frames from the front of `pkts`. The frames the backend took are removed
    /// from `pkts`; the rest stay, in order, for the caller to retry or drop. Returns how
    /// many were taken.
    fn tx_burst(&mut self, pkts: &mut Vec<Self::Buf>) -> usize;

    /// An empty buffer (length 0, default headroom) for a frame the NIC originates, or
    /// `None` when the pool is exhausted.
    fn alloc(&mut self) -> Option<Self::Buf>;

    /// The port's MAC address.
    fn mac(&self) -> [u8; 6];

    /// This queue's counters.
    fn stats(&self) -> QueueStats;
}
