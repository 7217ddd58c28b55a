//! smoltcp as a peer and as a baseline: a smoltcp [`Device`] over one queue of the in-memory
//! wire, so a smoltcp interface can sit on the far end of a nicemu node's wire (interop tests)
//! or serve the same echo workload (the host-cost comparison of BENCHMARKS.md).

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::time::Instant;

/// A smoltcp device on one wire queue. Frames are received in bursts and sent one by one.
pub struct WireDevice {
    q: WireQueue,
    rx: Vec<HeapBuf>,
    tx: Vec<HeapBuf>,
    /// Frames the wire refused on send (full).
    pub tx_full: u64,
}

impl WireDevice {
    /// A device on `q`.
    pub fn new(q: WireQueue) -> Self {
        WireDevice {
            q,
            rx: Vec::with_capacity(64),
            tx: Vec::with_capacity(1),
            tx_full: 0,
        }
    }
}

/// A received frame.
pub struct Rx(HeapBuf);

/// Permission to send one frame.
pub struct Tx<'a> {
    q: &'a mut WireQueue,
    out: &'a mut Vec<HeapBuf>,
    full: &'a mut u64,
}

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0.data())
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut b = HeapBuf::with_room(len.max(60), 0);
        let r = match b.append(len) {
            Some(bytes) => f(bytes),
            None => {
                let mut scratch = vec![0u8; len];
                f(&mut scratch)
            }
        };
        self.out.push(b);
        self.q.tx_burst(self.out);
        if !self.out.is_empty() {
            *self.full += self.out.len() as u64;
            self.out.clear();
        }
        r
    }
}

impl Device for WireDevice {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        if self.rx.is_empty() {
            self.q.rx_burst(&mut self.rx, 32);
            self.rx.reverse();
        }
        let b = self.rx.pop()?;
        Some((
            Rx(b),
            Tx {
                q: &mut self.q,
                out: &mut self.tx,
                full: &mut self.tx_full,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            q: &mut self.q,
            out: &mut self.tx,
            full: &mut self.tx_full,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c.max_burst_size = Some(32);
        c
    }
}
