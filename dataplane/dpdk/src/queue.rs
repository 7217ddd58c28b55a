//! [`EthQueue`]: one rx/tx queue pair of an [`crate::EthDev`], owned by one thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::ethdev::DevInner;
use crate::mbuf::{self, Mbuf};
use crate::mempool::Mempool;
use crate::sys;

/// Rx queue `q` and tx queue `q` of a started port (either may be absent when the port has
/// fewer rx than tx queues or the reverse: bursts on it then return 0).
///
/// Invariant: only one `EthQueue` per (port, queue id) exists at a time, so bursts (which
/// DPDK does not lock) never run concurrently on one queue; `Send` (move it to its lcore
/// thread), bursts take `&mut self`. The handle keeps the port started and its mempool
/// alive until dropped.
#[derive(Debug)]
pub struct EthQueue {
    dev: Arc<DevInner>,
    port_id: u16,
    queue_id: u16,
    has_rx: bool,
    has_tx: bool,
    rx_dropped_shared: u64,
}

impl EthQueue {
    /// A handle for queue `q` of `dev`; the caller has set `dev.held[q]`.
    pub(crate) fn new(dev: Arc<DevInner>, q: u16) -> EthQueue {
        EthQueue {
            port_id: dev.port_id,
            queue_id: q,
            has_rx: q < dev.rx_queues,
            has_tx: q < dev.tx_queues,
            dev,
            rx_dropped_shared: 0,
        }
    }

    /// Receives up to `max` frames (`rte_eth_rx_burst`), appending them to `out`; returns
    /// how many were appended. DPDK writes straight into `out`'s spare capacity: no
    /// per-packet allocation (only `out.reserve(max)` when `out` is too small).
    ///
    /// A received mbuf that breaks [`Mbuf`]'s invariant (chained: only possible with frames
    /// longer than the pool's data room; or sharing its buffer) is freed and counted in
    /// [`EthQueue::rx_dropped_unsupported`] instead of being returned.
    #[inline]
    pub fn rx_burst(&mut self, out: &mut Vec<Mbuf>, max: usize) -> usize {
        self.rx_burst_counted(out, max).0
    }

    /// [`EthQueue::rx_burst`] that also returns the bytes of the frames appended, counted in
    /// the same pass over the mbufs as the invariant check.
    #[inline]
    pub fn rx_burst_counted(&mut self, out: &mut Vec<Mbuf>, max: usize) -> (usize, u64) {
        if !self.has_rx || max == 0 {
            return (0, 0);
        }
        let want = max.min(usize::from(u16::MAX));
        out.reserve(want);
        let start = out.len();
        let spare = out.spare_capacity_mut();
        // SAFETY: spare has room for at least `want` elements; Mbuf is repr(transparent)
        // over NonNull<rte_mbuf>, so the slots have the layout of `rte_mbuf *`. This
        // EthQueue is the only handle on (port, queue) (held flag), so no concurrent burst
        // on the queue; the port is started (the Arc keeps it so).
        let n = unsafe {
            sys::shim_eth_rx_burst(
                self.port_id,
                self.queue_id,
                spare.as_mut_ptr().cast::<*mut sys::rte_mbuf>(),
                want as u16,
            )
        };
        let n = usize::from(n).min(want);
        // SAFETY: DPDK initialized the first n spare slots with non-NULL pointers to mbufs
        // it hands over to us; they come from this queue's pool, which outlives them (a pool
        // with live mbufs is never freed). The invariant check follows right below.
        unsafe { out.set_len(start + n) };
        let mut not_plain = 0u64;
        let mut bytes = 0u64;
        for m in &out[start..] {
            not_plain |= m.not_plain_bits();
            bytes += m.len() as u64;
        }
        if not_plain != 0 {
            let tail = out.split_off(start);
            let before = tail.len();
            out.extend(tail.into_iter().filter(Mbuf::is_exclusive_slow));
            self.rx_dropped_shared += (before - (out.len() - start)) as u64;
            bytes = out[start..].iter().map(|m| m.len() as u64).sum();
        }
        (out.len() - start, bytes)
    }

    /// Transmits frames from the front of `pkts` (`rte_eth_tx_burst`, at most 65535 per
    /// call); returns how many the driver took. Those are removed from `pkts` without being
    /// freed (DPDK owns them now); the rest stay, in order, at the front of `pkts` for the
    /// caller to retry or drop.
    #[inline]
    pub fn tx_burst(&mut self, pkts: &mut Vec<Mbuf>) -> usize {
        if !self.has_tx || pkts.is_empty() {
            return 0;
        }
        let nb = pkts.len().min(usize::from(u16::MAX));
        // SAFETY: pkts' first nb elements are owned, valid mbufs laid out as `rte_mbuf *`
        // (repr(transparent)); single handle on the queue (see rx_burst); DPDK takes
        // ownership of the first n returned and leaves the others untouched.
        let n = unsafe {
            sys::shim_eth_tx_burst(
                self.port_id,
                self.queue_id,
                pkts.as_mut_ptr().cast::<*mut sys::rte_mbuf>(),
                nb as u16,
            )
        };
        let n = usize::from(n).min(nb);
        // The first n now belong to DPDK: remove them without running Drop.
        pkts.drain(..n).for_each(std::mem::forget);
        n
    }

    /// An empty buffer from the queue's pool (length 0, [`crate::PKTMBUF_HEADROOM`]), or
    /// `None` when the pool is exhausted.
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        self.dev.pool.alloc()
    }

    /// Frees all of `pkts` at once (`rte_pktmbuf_free_bulk`), leaving it empty.
    pub fn free_bulk(&self, pkts: &mut Vec<Mbuf>) {
        mbuf::free_bulk(pkts);
    }

    /// Received mbufs dropped because they were chained or shared (see
    /// [`EthQueue::rx_burst`]).
    pub fn rx_dropped_unsupported(&self) -> u64 {
        self.rx_dropped_shared
    }

    /// The port id.
    pub fn port_id(&self) -> u16 {
        self.port_id
    }

    /// The queue id.
    pub fn queue_id(&self) -> u16 {
        self.queue_id
    }

    /// Whether this handle has an rx queue (`queue_id < rx_queues`).
    pub fn has_rx(&self) -> bool {
        self.has_rx
    }

    /// Whether this handle has a tx queue (`queue_id < tx_queues`).
    pub fn has_tx(&self) -> bool {
        self.has_tx
    }

    /// The pool rx buffers (and [`EthQueue::alloc`]) come from.
    pub fn mempool(&self) -> &Arc<Mempool> {
        &self.dev.pool
    }
}

impl Drop for EthQueue {
    fn drop(&mut self) {
        self.dev.held[usize::from(self.queue_id)].store(false, Ordering::SeqCst);
    }
}
