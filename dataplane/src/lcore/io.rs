//! The places a frame can leave an NIC lcore through: one queue of each port with its
//! transmit queue, and the PCIe link to the host. [`LcorePorts`] owns them, moves a frame
//! where a [`Verdict`] says, and is the [`OffloadIo`] the offloads send their own frames
//! through.

use std::sync::{Arc, Mutex};

use offload_api::link::NicEnd;

use crate::buf::PacketBuf;
use crate::net::Verdict;
use crate::offload::OffloadIo;
use crate::pcap::PcapWriter;
use crate::port::Port;

use super::{LcoreReport, HOST_TX_HOLD};

/// One port queue owned by an lcore.
pub struct PortSlot<P: Port> {
    /// The queue.
    pub port: P,
    /// The port's index in the configuration (and in the [`crate::net::stack::NicStack`]).
    pub index: usize,
    /// The port's name.
    pub name: String,
    /// Slot that frames are forwarded to in [`super::Mode::Forward`].
    pub peer: Option<usize>,
    /// Capture of what this port sends and receives.
    pub pcap: Option<Arc<Mutex<PcapWriter>>>,
}

/// An lcore's port queues, the frames queued on each for this iteration's transmit burst,
/// and its end of the PCIe link.
///
/// Invariant: `slots`, `tx` and `tx_held` have one entry per port queue, in the same order;
/// `tx_held[i]` frames at the front of `tx[i]` are left over from an earlier iteration and
/// were already captured.
pub(crate) struct LcorePorts<P: Port> {
    pub(crate) slots: Vec<PortSlot<P>>,
    pub(crate) tx: Vec<Vec<P::Buf>>,
    pub(crate) tx_held: Vec<usize>,
    pub(crate) host: Option<NicEnd>,
}

impl<P: Port> LcorePorts<P> {
    pub(crate) fn new(slots: Vec<PortSlot<P>>, host: Option<NicEnd>, burst: usize) -> Self {
        let n = slots.len();
        LcorePorts {
            slots,
            tx: (0..n).map(|_| Vec::with_capacity(burst * 4)).collect(),
            tx_held: vec![0; n],
            host,
        }
    }

    /// The slot serving port `index`, if this lcore serves it.
    #[inline]
    pub(crate) fn slot_of(&self, index: usize) -> Option<usize> {
        self.slots.iter().position(|s| s.index == index)
    }

    /// Frames queued for transmission on every port.
    pub(crate) fn queued(&self) -> usize {
        self.tx.iter().map(Vec::len).sum()
    }

    /// Hands `frame` to the host tagged with port `port`, counted in `report`.
    #[inline]
    pub(crate) fn send_to_host(&mut self, report: &mut LcoreReport, port: usize, frame: &[u8]) {
        let sent = self
            .host
            .as_mut()
            .is_some_and(|h| h.send(port as u16, frame).is_ok());
        if sent {
            report.to_host += 1
        } else {
            report.to_host_dropped += 1
        }
    }

    /// Moves `buf`, received on slot `i`, where `v` says: to the host, back out of its own
    /// port, out of another port, or nowhere (dropping the buffer frees it).
    #[inline(always)]
    pub(crate) fn deliver(&mut self, report: &mut LcoreReport, i: usize, buf: P::Buf, v: Verdict) {
        match v {
            Verdict::Pass | Verdict::ToHost => {
                let index = self.slots[i].index;
                self.send_to_host(report, index, buf.data())
            }
            Verdict::Consumed | Verdict::Drop(_) => {}
            Verdict::Reply => self.tx[i].push(buf),
            Verdict::Out(p) => match self.slot_of(usize::from(p)) {
                Some(j) => self.tx[j].push(buf),
                None => report.offload_out_dropped += 1,
            },
        }
    }

    /// Sends what each transmit queue holds (capturing what was not captured yet). With a
    /// host link, what a port would not take waits for the next iteration (a driver's queue
    /// in front of a full ring), up to [`HOST_TX_HOLD`] frames; without one (forwarding), or
    /// beyond that, it is dropped and counted. Returns whether any queue held anything.
    pub(crate) fn tx(&mut self, report: &mut LcoreReport) -> bool {
        let keep = if self.host.is_some() { HOST_TX_HOLD } else { 0 };
        let mut sent_any = false;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let q = &mut self.tx[i];
            if q.is_empty() {
                continue;
            }
            sent_any = true;
            if slot.pcap.is_some() {
                for b in q.iter().skip(self.tx_held[i]) {
                    capture(&slot.pcap, &mut report.pcap_errors, b.data());
                }
            }
            slot.port.tx_burst(q);
            if q.len() > keep {
                report.ports[i].tx_full_drops += (q.len() - keep) as u64;
                q.truncate(keep);
            }
            self.tx_held[i] = q.len();
        }
        sent_any
    }

    /// Flushes every capture file.
    pub(crate) fn flush_captures(&self) {
        for s in &self.slots {
            if let Some(p) = &s.pcap {
                if let Ok(mut w) = p.lock() {
                    let _ = w.flush();
                }
            }
        }
    }
}

/// Writes `frame` to the capture `pcap` (if any), counting a failure in `errors`.
pub(crate) fn capture(pcap: &Option<Arc<Mutex<PcapWriter>>>, errors: &mut u64, frame: &[u8]) {
    if let Some(p) = pcap {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let ok = match p.lock() {
            Ok(mut w) => w.write(ts, frame).is_ok(),
            Err(_) => false,
        };
        if !ok {
            *errors += 1;
        }
    }
}

impl<P: Port> OffloadIo for LcorePorts<P> {
    fn to_port(&mut self, port: u16, frame: &[u8]) -> bool {
        let Some(i) = self.slot_of(usize::from(port)) else {
            return false;
        };
        let Some(mut b) = self.slots[i].port.alloc() else {
            return false;
        };
        let ok = b.set_frame(frame);
        if ok {
            self.tx[i].push(b);
        }
        ok
    }

    fn to_host(&mut self, port: u16, frame: &[u8]) -> bool {
        self.host
            .as_mut()
            .is_some_and(|h| h.send(port, frame).is_ok())
    }
}
