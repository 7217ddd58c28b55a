//! DPDK ports (feature `dpdk`): [`nicemu_dpdk::Mbuf`] as a [`PacketBuf`] and [`DpdkQueue`],
//! one queue of a DPDK ethdev port, as a [`Port`].
//!
//! No `unsafe` here: everything unsafe lives in the `nicemu-dpdk` crate.

use nicemu_dpdk::{DpdkError, EthDev, EthQueue, Mbuf};

use crate::buf::PacketBuf;
use crate::port::{Port, QueueStats};

impl PacketBuf for Mbuf {
    #[inline]
    fn data(&self) -> &[u8] {
        Mbuf::data(self)
    }
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        Mbuf::data_mut(self)
    }
    #[inline]
    fn headroom(&self) -> usize {
        Mbuf::headroom(self)
    }
    #[inline]
    fn tailroom(&self) -> usize {
        Mbuf::tailroom(self)
    }
    #[inline]
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        Mbuf::prepend(self, n)
    }
    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        Mbuf::adj(self, n)
    }
    #[inline]
    fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        Mbuf::append(self, n)
    }
    #[inline]
    fn trim(&mut self, n: usize) -> bool {
        Mbuf::trim(self, n)
    }
    #[inline]
    fn len(&self) -> usize {
        Mbuf::len(self)
    }
    #[inline]
    fn is_empty(&self) -> bool {
        Mbuf::is_empty(self)
    }
}

/// One rx/tx queue pair of a DPDK port, as a [`Port`].
///
/// Invariant: `stats` counts exactly the frames and bytes this queue received and the
/// driver took for transmission; frames the driver did not take stay in the caller's `Vec`
/// and are not counted (`tx_dropped` stays 0: dropping is the caller's decision).
#[derive(Debug)]
pub struct DpdkQueue {
    queue: EthQueue,
    mac: [u8; 6],
    stats: QueueStats,
}

impl DpdkQueue {
    /// Queue `q` of `dev` (see [`EthDev::queue`] for the errors).
    pub fn new(dev: &EthDev, q: u16) -> Result<DpdkQueue, DpdkError> {
        Ok(DpdkQueue::from_queue(dev.queue(q)?, dev.mac()))
    }

    /// Wraps an already taken queue handle of a port whose MAC address is `mac`.
    pub fn from_queue(queue: EthQueue, mac: [u8; 6]) -> DpdkQueue {
        DpdkQueue {
            queue,
            mac,
            stats: QueueStats::default(),
        }
    }

    /// The underlying queue handle.
    pub fn queue(&self) -> &EthQueue {
        &self.queue
    }

    /// Unwraps the queue handle.
    pub fn into_queue(self) -> EthQueue {
        self.queue
    }
}

impl Port for DpdkQueue {
    type Buf = Mbuf;

    #[inline]
    fn rx_burst(&mut self, out: &mut Vec<Mbuf>, max: usize) -> usize {
        let (n, bytes) = self.queue.rx_burst_counted(out, max);
        self.stats.rx_packets += n as u64;
        self.stats.rx_bytes += bytes;
        n
    }

    #[inline]
    fn tx_burst(&mut self, pkts: &mut Vec<Mbuf>) -> usize {
        if pkts.is_empty() {
            return 0;
        }
        let before: usize = pkts.iter().map(Mbuf::len).sum();
        let n = self.queue.tx_burst(pkts);
        if n != 0 {
            let after: usize = pkts.iter().map(Mbuf::len).sum();
            self.stats.tx_packets += n as u64;
            self.stats.tx_bytes += (before - after) as u64;
        }
        n
    }

    #[inline]
    fn alloc(&mut self) -> Option<Mbuf> {
        self.queue.alloc()
    }

    fn mac(&self) -> [u8; 6] {
        self.mac
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }
}
