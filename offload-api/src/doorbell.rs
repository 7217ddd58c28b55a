//! The doorbell of the emulated PCIe link: how one side wakes the other when it hands over
//! work, as a NIC raises an interrupt for a sleeping host (NAPI) and a host writes a NIC's
//! doorbell register. A consumer that found its rings empty for a while parks on its
//! doorbell with a timeout; the producer rings it after a push.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;

/// Wakes a sleeping loop when work is handed to it (a frame pushed on the host ↔ NIC link):
/// the producer rings, the consumer's park ends at once instead of at its timeout.
///
/// Invariant: ringing costs one relaxed load when the consumer is awake. A ring that races
/// with the consumer falling asleep may be missed; the sleep's own timeout (at most the
/// policy's `max_sleep`) bounds what that costs, so no work waits longer than that.
#[derive(Debug, Default)]
pub struct Doorbell {
    sleeping: AtomicBool,
    rung: AtomicBool,
    thread: OnceLock<Thread>,
}

impl Doorbell {
    /// A new doorbell, shared between the sleeping loop and its producers.
    pub fn new() -> Arc<Doorbell> {
        Arc::new(Doorbell::default())
    }

    /// Whether the consumer is parked on it now.
    pub fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed)
    }

    /// Wakes the consumer if it sleeps; otherwise costs one relaxed load.
    #[inline]
    pub fn ring(&self) {
        if self.sleeping.load(Ordering::Relaxed) {
            self.rung.store(true, Ordering::Release);
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }

    /// Parks the calling thread up to `d`, or until [`Self::ring`]. Returns whether it was
    /// rung.
    pub fn sleep(&self, d: Duration) -> bool {
        let _ = self.thread.get_or_init(std::thread::current);
        self.sleeping.store(true, Ordering::SeqCst);
        if !self.rung.swap(false, Ordering::AcqRel) {
            std::thread::park_timeout(d);
        }
        self.sleeping.store(false, Ordering::SeqCst);
        self.rung.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_while_awake_is_not_stored() {
        let bell = Doorbell::new();
        bell.ring();
        assert!(!bell.is_sleeping());
        assert!(!bell.sleep(Duration::from_millis(5)));
    }
}
