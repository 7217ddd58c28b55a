//! The timer source of the teardown engine: one timer per flow id, for its retransmission
//! timeout or its TIME_WAIT (AccelTCP §4.2, "Timeout management": "AccelTCP supports the
//! TIME_WAIT state, but it shares the same mechanism as RTO management for the timer").
//!
//! Everything the engine needs from a timer is the five calls of [`FlowTimers`]: arm, disarm,
//! advance (collect the expired ids), next deadline and the number armed. They are the calls of
//! the timer bitmap wheel (`crate::wheel::TimerWheel`, AccelTCP §4.2, Figure 6), so the wheel
//! can replace this source without touching the engine.
//!
//! This source is a binary heap of `(deadline, id)` with lazy deletion: an entry counts only
//! while it matches the id's current deadline.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One timer per flow id, in nanoseconds of the caller's clock.
///
/// Invariant: `deadline[id]` is `u64::MAX` when the id's timer is off; every armed id has a
/// heap entry with its current deadline (stale entries may remain and are skipped).
#[derive(Debug)]
pub(crate) struct FlowTimers {
    deadline: Vec<u64>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    armed: usize,
}

impl FlowTimers {
    /// Timers for ids `0..ids`.
    pub(crate) fn new(ids: usize) -> FlowTimers {
        FlowTimers {
            deadline: vec![u64::MAX; ids],
            heap: BinaryHeap::new(),
            armed: 0,
        }
    }

    /// (Re)arms `id` to expire `after_ns` after `now`. Ids out of range are ignored.
    pub(crate) fn arm(&mut self, id: u32, now: u64, after_ns: u64) {
        let Some(d) = self.deadline.get_mut(id as usize) else {
            return;
        };
        if *d == u64::MAX {
            self.armed += 1;
        }
        *d = now.saturating_add(after_ns).min(u64::MAX - 1);
        self.heap.push(Reverse((*d, id)));
    }

    /// Turns `id`'s timer off.
    pub(crate) fn disarm(&mut self, id: u32) {
        if let Some(d) = self.deadline.get_mut(id as usize) {
            if *d != u64::MAX {
                *d = u64::MAX;
                self.armed -= 1;
            }
        }
    }

    /// True while `id`'s timer is armed.
    pub(crate) fn is_armed(&self, id: u32) -> bool {
        self.deadline
            .get(id as usize)
            .is_some_and(|&d| d != u64::MAX)
    }

    /// Calls `expired` with every id whose deadline is at or before `now`, turning it off
    /// first (the callback may re-arm it).
    pub(crate) fn advance(&mut self, now: u64, mut expired: impl FnMut(u32)) {
        while let Some(&Reverse((t, id))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            if self.deadline.get(id as usize) == Some(&t) {
                self.deadline[id as usize] = u64::MAX;
                self.armed -= 1;
                expired(id);
            }
        }
    }

    /// The earliest deadline of an armed id (may be a stale, earlier one: polling then finds
    /// nothing due and the caller asks again).
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        if self.armed == 0 {
            return None;
        }
        self.heap.peek().map(|r| r.0 .0)
    }

    /// Number of armed ids.
    pub(crate) fn armed(&self) -> usize {
        self.armed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_rearm_disarm_advance() {
        let mut t = FlowTimers::new(4);
        t.arm(1, 0, 10);
        t.arm(2, 0, 5);
        t.arm(1, 0, 20); // re-arm: the 10 entry is stale
        t.arm(9, 0, 1); // out of range: ignored
        assert_eq!(t.armed(), 2);
        let mut got = Vec::new();
        t.advance(15, |id| got.push(id));
        assert_eq!(got, [2]);
        t.disarm(1);
        assert_eq!(t.armed(), 0);
        assert_eq!(t.next_deadline(), None);
        t.advance(100, |id| got.push(id));
        assert_eq!(got, [2]);
    }
}
