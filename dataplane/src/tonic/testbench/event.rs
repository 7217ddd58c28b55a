//! The event of a discrete-event simulation in virtual time, ordered for
//! `std::collections::BinaryHeap` so that the heap pops the earliest event first and, among
//! events at the same time, the one scheduled first: runs are deterministic. The testbench
//! and `nicemu experiment`'s TCB network both schedule with it.

use std::cmp::Ordering;

use crate::tonic::Nanos;

/// An event `ev` due at `t`, the `seq`-th scheduled (the caller numbers them in order).
#[derive(Debug)]
pub struct Timed<E> {
    /// When it is due.
    pub t: Nanos,
    /// Its scheduling order (ties at one `t` go first-scheduled first).
    pub seq: u64,
    /// The event.
    pub ev: E,
}

impl<E> Timed<E> {
    /// The ordering key: `(t, seq)`.
    pub fn key(&self) -> (Nanos, u64) {
        (self.t, self.seq)
    }
}

impl<E> PartialEq for Timed<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}

impl<E> Eq for Timed<E> {}

impl<E> PartialOrd for Timed<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl<E> Ord for Timed<E> {
    /// Reversed, so that the max-heap pops the earliest event.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::Timed;
    use std::collections::BinaryHeap;

    #[test]
    fn earliest_first_then_first_scheduled() {
        let mut h = BinaryHeap::new();
        for (seq, (t, ev)) in [(5, 'a'), (1, 'b'), (5, 'c'), (3, 'd'), (1, 'e')]
            .into_iter()
            .enumerate()
        {
            h.push(Timed {
                t,
                seq: seq as u64,
                ev,
            });
        }
        let order: String = std::iter::from_fn(|| h.pop().map(|i| i.ev)).collect();
        assert_eq!(order, "bedac");
    }
}
