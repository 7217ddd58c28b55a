//! Per-flow one-shot timers on a hashed timing wheel: the software stand-in for the credit
//! engine's per-flow rate timers (Tonic §3.3.2, §4).
//!
//! Each flow has at most one timer. A deadline is rounded *up* to a slot of `2^shift` ns, so a
//! timer never fires early and fires at most one slot late. Slots hold intrusive doubly linked
//! lists through per-flow index arrays: arming, cancelling and firing are O(1) and allocate
//! nothing; [`advance`](HashedTimerWheel::advance) visits each slot once per revolution and
//! re-files entries that belong to a later revolution.

use super::{FlowId, Nanos};

const NIL: u32 = u32::MAX;
/// `prev` of a slot's first entry: this bit plus the slot index.
const HEAD: u32 = 1 << 31;

/// A timing wheel of one-shot timers for ids `[0, capacity)`.
#[derive(Clone, Debug)]
pub struct HashedTimerWheel {
    shift: u32,
    mask: u64,
    slots: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Deadline per id; 0 = not armed.
    deadline: Vec<Nanos>,
    /// The next tick to process: every tick below it has been processed.
    cur_tick: u64,
    armed: usize,
}

impl HashedTimerWheel {
    /// A wheel of `2^slots_log2` slots of `2^shift` ns each, for ids `[0, capacity)`.
    pub fn new(capacity: u32, shift: u32, slots_log2: u32) -> Self {
        assert!(capacity < HEAD && slots_log2 < 31 && shift < 40);
        HashedTimerWheel {
            shift,
            mask: (1u64 << slots_log2) - 1,
            slots: vec![NIL; 1 << slots_log2],
            next: crate::sys::huge_vec(capacity as usize, NIL),
            prev: crate::sys::huge_vec(capacity as usize, NIL),
            deadline: crate::sys::huge_vec(capacity as usize, 0),
            cur_tick: 0,
            armed: 0,
        }
    }

    /// Number of armed timers.
    pub fn armed(&self) -> usize {
        self.armed
    }

    /// Whether `id` has an armed timer.
    #[inline]
    pub fn is_armed(&self, id: FlowId) -> bool {
        self.deadline[id as usize] != 0
    }

    /// The deadline of `id`'s timer, if armed.
    pub fn deadline(&self, id: FlowId) -> Option<Nanos> {
        let d = self.deadline[id as usize];
        (d != 0).then_some(d)
    }

    /// Arms (or re-arms) `id` to fire at the first [`advance`](Self::advance) with
    /// `now >= deadline`, rounded up to a slot. A deadline of 0 is treated as 1.
    pub fn arm(&mut self, id: FlowId, deadline: Nanos) {
        self.cancel(id);
        let deadline = deadline.max(1);
        self.deadline[id as usize] = deadline;
        self.armed += 1;
        self.file(id, deadline);
    }

    fn file(&mut self, id: FlowId, deadline: Nanos) {
        let tick = deadline.div_ceil(1 << self.shift).max(self.cur_tick);
        let slot = (tick & self.mask) as usize;
        let i = id as usize;
        let h = self.slots[slot];
        self.next[i] = h;
        self.prev[i] = HEAD | slot as u32;
        if h != NIL {
            self.prev[h as usize] = id;
        }
        self.slots[slot] = id;
    }

    /// Cancels `id`'s timer; returns whether one was armed.
    pub fn cancel(&mut self, id: FlowId) -> bool {
        let i = id as usize;
        let d = self.deadline[i];
        if d == 0 {
            return false;
        }
        let (p, n) = (self.prev[i], self.next[i]);
        if p & HEAD != 0 {
            self.slots[(p & !HEAD) as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
        self.deadline[i] = 0;
        self.next[i] = NIL;
        self.prev[i] = NIL;
        self.armed -= 1;
        true
    }

    /// Fires every timer with `deadline <= now`, calling `fire(id)` for each (already
    /// disarmed when called); returns how many fired.
    #[inline]
    pub fn advance(&mut self, now: Nanos, fire: impl FnMut(FlowId)) -> usize {
        let now_tick = now >> self.shift;
        if self.cur_tick > now_tick {
            return 0;
        }
        if self.armed == 0 {
            self.cur_tick = now_tick + 1;
            return 0;
        }
        self.advance_slots(now, now_tick, fire)
    }

    fn advance_slots(&mut self, now: Nanos, now_tick: u64, mut fire: impl FnMut(FlowId)) -> usize {
        let mut fired = 0;
        let span = (now_tick - self.cur_tick + 1).min(self.slots.len() as u64);
        let first = if span == self.slots.len() as u64 {
            // Jumped at least a whole revolution: visit every slot once.
            now_tick + 1 - span
        } else {
            self.cur_tick
        };
        // Everything filed from now on lands at a tick after now_tick.
        self.cur_tick = now_tick + 1;
        for tick in first..first + span {
            let slot = (tick & self.mask) as usize;
            let mut cur = std::mem::replace(&mut self.slots[slot], NIL);
            while cur != NIL {
                let i = cur as usize;
                let nxt = self.next[i];
                let d = self.deadline[i];
                if d <= now {
                    self.deadline[i] = 0;
                    self.next[i] = NIL;
                    self.prev[i] = NIL;
                    self.armed -= 1;
                    fired += 1;
                    fire(cur);
                } else {
                    self.file(cur, d);
                }
                cur = nxt;
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fires_once_not_early_at_most_a_slot_late() {
        let mut w = HashedTimerWheel::new(4, 6, 4); // 64 ns slots, 16 slots (1024 ns revolution)
        w.arm(0, 100);
        w.arm(1, 5000); // several revolutions away
        w.arm(2, 64);
        let mut got = vec![];
        assert_eq!(w.advance(63, |id| got.push(id)), 0);
        assert_eq!(w.advance(64, |id| got.push(id)), 1);
        assert_eq!(
            w.advance(100, |id| got.push(id)),
            0,
            "slot of 100 is [128, 192)"
        );
        assert_eq!(w.advance(128, |id| got.push(id)), 1);
        assert_eq!(got, vec![2, 0]);
        assert_eq!(w.advance(4999, |id| got.push(id)), 0);
        assert!(w.is_armed(1));
        assert_eq!(w.advance(5100, |id| got.push(id)), 1);
        assert_eq!(w.armed(), 0);
        w.arm(3, 6000);
        assert!(w.cancel(3) && !w.cancel(3));
        assert_eq!(w.advance(100_000, |id| got.push(id)), 0);
    }

    proptest! {
        /// Every armed, uncancelled timer fires exactly once, never before its deadline and no
        /// later than one slot after it, whatever the arm/cancel/advance interleaving.
        #[test]
        fn fires_exactly_once_within_a_slot(
            ops in prop::collection::vec((0u8..3, 0u32..8, 0u64..5000), 1..100)
        ) {
            let mut w = HashedTimerWheel::new(8, 5, 3); // 32 ns slots, 8 slots
            let mut model: [Option<u64>; 8] = [None; 8];
            let mut now = 0u64;
            for (op, id, v) in ops {
                match op {
                    0 => { let d = now + v + 1; w.arm(id, d); model[id as usize] = Some(d); }
                    1 => { prop_assert_eq!(w.cancel(id), model[id as usize].is_some()); model[id as usize] = None; }
                    _ => {
                        now += v % 700;
                        let mut fired = vec![];
                        w.advance(now, |i| fired.push(i));
                        for i in 0..8u32 {
                            match model[i as usize] {
                                Some(d) if d <= now => {
                                    // Due: fired now, or (rounded up to its slot) still
                                    // pending when its slot is not yet over.
                                    if fired.contains(&i) {
                                        model[i as usize] = None;
                                    } else {
                                        prop_assert!(d.div_ceil(32) * 32 > now, "late: {} at {}", d, now);
                                    }
                                }
                                _ => prop_assert!(!fired.contains(&i), "early or spurious"),
                            }
                        }
                        prop_assert_eq!(w.armed(), model.iter().filter(|m| m.is_some()).count());
                    }
                }
            }
        }
    }
}
