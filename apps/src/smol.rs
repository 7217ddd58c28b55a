//! smoltcp as a peer and as a baseline: a smoltcp [`Device`] over one queue of the in-memory
//! wire, so a smoltcp interface can sit on the far end of a nicemu node's wire (interop tests)
//! or serve the same echo workload (the host-cost comparison of BENCHMARKS.md).

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::time::Instant;

/// Which way a frame seen by a [`Tap`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapDir {
    /// Received by the smoltcp interface from the wire.
    Rx,
    /// Sent by the smoltcp interface onto the wire.
    Tx,
}

/// An observer of every frame the device receives or sends (tests use it to check TCP flags
/// and options on the wire).
pub type Tap = Box<dyn FnMut(TapDir, &[u8]) + Send>;

/// A smoltcp device on one wire queue. Frames are received in bursts and sent one by one.
pub struct WireDevice {
    q: WireQueue,
    rx: Vec<HeapBuf>,
    tx: Vec<HeapBuf>,
    tap: Option<Tap>,
    /// Frames the wire refused on send (full).
    pub tx_full: u64,
    /// Frames handed to smoltcp.
    pub rx_frames: u64,
    /// Frames smoltcp sent.
    pub tx_frames: u64,
}

impl WireDevice {
    /// A device on `q`.
    pub fn new(q: WireQueue) -> Self {
        WireDevice {
            q,
            rx: Vec::with_capacity(64),
            tx: Vec::with_capacity(1),
            tap: None,
            tx_full: 0,
            rx_frames: 0,
            tx_frames: 0,
        }
    }

    /// Calls `tap` with every frame received or sent from now on (replaces an earlier tap).
    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// Frames received plus frames sent so far (a measure of work done).
    pub fn frames(&self) -> u64 {
        self.rx_frames + self.tx_frames
    }
}

/// A received frame.
pub struct Rx(HeapBuf);

/// Permission to send one frame.
pub struct Tx<'a> {
    q: &'a mut WireQueue,
    out: &'a mut Vec<HeapBuf>,
    tap: &'a mut Option<Tap>,
    full: &'a mut u64,
    sent: &'a mut u64,
}

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0.data())
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut b = HeapBuf::with_room(len.max(60), 0);
        let Some(bytes) = b.append(len) else {
            // Cannot happen (the room is at least `len`); smoltcp still needs a buffer.
            return f(&mut vec![0u8; len]);
        };
        let r = f(bytes);
        if let Some(tap) = self.tap.as_mut() {
            tap(TapDir::Tx, b.data());
        }
        *self.sent += 1;
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
        self.rx_frames += 1;
        if let Some(tap) = self.tap.as_mut() {
            tap(TapDir::Rx, b.data());
        }
        Some((
            Rx(b),
            Tx {
                q: &mut self.q,
                out: &mut self.tx,
                tap: &mut self.tap,
                full: &mut self.tx_full,
                sent: &mut self.tx_frames,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            q: &mut self.q,
            out: &mut self.tx,
            tap: &mut self.tap,
            full: &mut self.tx_full,
            sent: &mut self.tx_frames,
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
