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
///
/// A consumer that sleeps in a system call of its own (waiting on its ports' file
/// descriptors as well, see [`Doorbell::sleep_with`]) registers a notifier
/// ([`Doorbell::set_notifier`], e.g. a write to an eventfd it waits on) that a ring calls
/// besides unparking the thread.
#[derive(Default)]
pub struct Doorbell {
    sleeping: AtomicBool,
    rung: AtomicBool,
    thread: OnceLock<Thread>,
    notifier: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doorbell")
            .field("sleeping", &self.sleeping)
            .field("rung", &self.rung)
            .field("notifier", &self.notifier.get().is_some())
            .finish()
    }
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
            if let Some(n) = self.notifier.get() {
                n();
            }
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }

    /// Makes every ring that finds the consumer asleep also call `n` (once set, for good;
    /// returns false if a notifier was already set). For a consumer that sleeps in
    /// [`Self::sleep_with`] on something other than a thread park.
    pub fn set_notifier(&self, n: Box<dyn Fn() + Send + Sync>) -> bool {
        self.notifier.set(n).is_ok()
    }

    /// Like [`Self::sleep`], but the wait is `wait(d)` (which returns whether something
    /// else than the timeout ended it): e.g. a `ppoll` on the consumer's ports and on the
    /// eventfd its notifier writes. Returns whether the bell rang or `wait` was woken.
    pub fn sleep_with(&self, d: Duration, wait: impl FnOnce(Duration) -> bool) -> bool {
        self.sleeping.store(true, Ordering::SeqCst);
        let woken = if self.rung.swap(false, Ordering::AcqRel) {
            true
        } else {
            wait(d)
        };
        self.sleeping.store(false, Ordering::SeqCst);
        self.rung.swap(false, Ordering::AcqRel) || woken
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
