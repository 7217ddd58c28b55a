//! An in-memory [`HostLink`] joining two host contexts directly, with no NIC between them:
//! for tests of the socket layer and for examples. Frames keep zero MACs and zero checksums
//! (nobody checks them on this path). Single-producer, single-consumer queues behind a mutex;
//! not for benchmarks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::frame::HostLink;

type Queue = Arc<Mutex<VecDeque<Vec<u8>>>>;

/// A predicate choosing frames to lose.
pub type DropHook = Box<dyn FnMut(&[u8]) -> bool + Send>;

/// One end of a [`pair`].
pub struct MemLink {
    rx: Queue,
    tx: Queue,
    /// Frames sent through this end.
    pub sent: u64,
    /// Frames refused because the peer's queue held `depth` frames.
    pub refused: u64,
    /// Most frames queued towards the peer.
    pub depth: usize,
    /// Drop hook: when it returns true for a frame about to be sent, the frame is lost.
    pub drop_if: Option<DropHook>,
    /// A copy of the last frame sent (tests read sequence numbers from it).
    pub last_sent: Vec<u8>,
}

/// Two joined ends: what one sends, the other receives.
pub fn pair(depth: usize) -> (MemLink, MemLink) {
    let a: Queue = Default::default();
    let b: Queue = Default::default();
    let end = |rx: &Queue, tx: &Queue| MemLink {
        rx: rx.clone(),
        tx: tx.clone(),
        sent: 0,
        refused: 0,
        depth,
        drop_if: None,
        last_sent: Vec::new(),
    };
    (end(&a, &b), end(&b, &a))
}

impl MemLink {
    /// Queues a frame as if the peer had sent it (for injecting hostile input).
    pub fn inject(&mut self, frame: &[u8]) {
        self.rx
            .lock()
            .expect("memlink lock")
            .push_back(frame.to_vec());
    }

    /// Frames waiting to be received at this end.
    pub fn pending(&self) -> usize {
        self.rx.lock().expect("memlink lock").len()
    }
}

impl HostLink for MemLink {
    type Buf = Vec<u8>;

    fn recv(&mut self) -> Option<(u16, Vec<u8>)> {
        self.rx
            .lock()
            .expect("memlink lock")
            .pop_front()
            .map(|f| (0, f))
    }

    fn send(&mut self, _port: u16, frame: &[u8]) -> bool {
        self.last_sent.clear();
        self.last_sent.extend_from_slice(frame);
        if let Some(d) = self.drop_if.as_mut() {
            if d(frame) {
                self.sent += 1;
                return true;
            }
        }
        let mut q = self.tx.lock().expect("memlink lock");
        if q.len() >= self.depth {
            self.refused += 1;
            return false;
        }
        q.push_back(frame.to_vec());
        self.sent += 1;
        true
    }

    fn tx_space(&self) -> usize {
        let q = self.tx.lock().expect("memlink lock");
        self.depth.saturating_sub(q.len())
    }

    fn tx_pending(&self) -> usize {
        self.tx.lock().expect("memlink lock").len()
    }
}
