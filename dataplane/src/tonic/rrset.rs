//! Round-robin flow sets: the active set and the ready-to-transmit set (Tonic §3.1).
//!
//! The paper implements both as FIFOs of flow ids, which gives per-segment round robin
//! ("see active list in [37]", DRR), and so does this: a set is a ring of entries in memory
//! order, so the flows round robin serves next are read sequentially, and prefetching them
//! costs no pointer chase (with a million flows in random memory order, an index-linked list
//! spent a cache miss per step just to find the next flow). `push_back`, `pop_front`,
//! `rotate`, `remove` and `contains` are O(1) amortized and allocate nothing after
//! construction, and a flow is a member at most once. Removal lets the engines keep the sets
//! *exact* (a flow is a member iff it is eligible): a removed flow's entry stays in the ring
//! as a stale entry (its generation no longer matches) and is skipped when it reaches the
//! front; a full ring is compacted in place.

use super::FlowId;

/// Per-id tag bit: the id is a member.
const MEMBER: u32 = 1;

/// A FIFO set of flow ids in `[0, capacity)` with O(1) membership operations.
///
/// Invariants: `tag[id] = gen << 1 | member`; the ring slots `[head, tail)` hold entries
/// `(id, gen)`, exactly one of them *valid* (its gen equals the id's current gen and the id
/// is a member) per member, in FIFO order; the others are stale, and there are `stale` of
/// them. When the set is not empty the entry at `head` is valid.
#[derive(Clone, Debug)]
pub struct RrSet {
    /// Entries `id | gen << 32`, in a ring of `mask + 1` slots (a power of two, at least
    /// twice the capacity, so that compaction frees at least `capacity` slots).
    ring: Vec<u64>,
    mask: usize,
    tag: Vec<u32>,
    head: usize,
    tail: usize,
    len: u32,
    stale: u32,
}

impl RrSet {
    /// Largest capacity (generations must not wrap between two compactions).
    pub const MAX_CAPACITY: u32 = 1 << 30;

    /// An empty set for ids `[0, capacity)`.
    pub fn new(capacity: u32) -> Self {
        assert!(capacity <= Self::MAX_CAPACITY);
        let slots = (2 * capacity as usize).next_power_of_two().max(2);
        RrSet {
            ring: crate::sys::huge_vec(slots, 0),
            mask: slots - 1,
            tag: crate::sys::huge_vec(capacity as usize, 0),
            head: 0,
            tail: 0,
            len: 0,
            stale: 0,
        }
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is a member.
    #[inline]
    pub fn contains(&self, id: FlowId) -> bool {
        self.tag[id as usize] & MEMBER != 0
    }

    /// The ring slot of position `pos`: `pos & mask`, with the mask computed from the ring's
    /// length (`mask + 1`), so that the compiler sees the slot is in bounds.
    #[inline(always)]
    fn slot(&self, pos: usize) -> usize {
        pos & (self.ring.len() - 1)
    }

    #[inline(always)]
    fn entry(&self, pos: usize) -> (FlowId, u32) {
        let e = self.ring[self.slot(pos)];
        (e as u32, (e >> 32) as u32)
    }

    #[inline(always)]
    fn valid(&self, (id, gen): (FlowId, u32)) -> bool {
        self.tag[id as usize] == (gen << 1 | MEMBER)
    }

    /// The member at the front, if any (the next one round robin picks).
    #[inline]
    pub fn front(&self) -> Option<FlowId> {
        (self.len != 0).then(|| self.entry(self.head).0)
    }

    /// The flow round robin picks `k` steps from now (going around) if nothing changes, for
    /// prefetching: exact when no member was removed since the ring last turned, otherwise
    /// possibly a removed flow. Reads one ring slot and no per-flow state.
    #[inline]
    pub fn ahead(&self, k: u32) -> Option<FlowId> {
        if self.len == 0 {
            return None;
        }
        let used = self.tail - self.head;
        let k = k as usize;
        let k = if k < used { k } else { k % used };
        Some(self.entry(self.head + k).0)
    }

    /// Hints the CPU to fetch what [`contains`](Self::contains) and
    /// [`push_back`](Self::push_back) read about `id`.
    #[inline(always)]
    pub fn prefetch_member(&self, id: FlowId) {
        if let Some(t) = self.tag.get(id as usize) {
            crate::sys::prefetch((t as *const u32).cast());
        }
    }

    /// Appends `id` at the back; returns false (and does nothing) if it is already a member.
    #[inline]
    pub fn push_back(&mut self, id: FlowId) -> bool {
        let t = self.tag[id as usize];
        if t & MEMBER != 0 {
            return false;
        }
        if self.tail - self.head > self.mask {
            self.compact();
        }
        self.tag[id as usize] = t | MEMBER;
        let gen = t >> 1;
        let tail = self.tail;
        let i = self.slot(tail);
        self.ring[i] = id as u64 | (gen as u64) << 32;
        self.tail = tail + 1;
        self.len += 1;
        true
    }

    /// Moves the front member to the back (pop it and push it again).
    #[inline(always)]
    pub fn rotate(&mut self) {
        if self.len == 0 {
            return;
        }
        if self.stale != 0 {
            self.rotate_with_stale();
            return;
        }
        // No stale entry: the ring holds `len` entries, at most half its slots, so the slot
        // at `tail` is free and every entry is valid.
        self.move_front_to_back();
    }

    /// [`rotate`](Self::rotate) of a non-empty set with stale entries (out of line).
    #[inline(never)]
    fn rotate_with_stale(&mut self) {
        // The ring has a free slot: the front entry is in it, and the set stays the same size.
        if self.tail - self.head > self.mask {
            self.compact();
        }
        self.move_front_to_back();
        self.skip_stale();
    }

    /// Copies the entry at `head` to the slot at `tail` and advances both; the slot at
    /// `tail` must be free.
    #[inline(always)]
    fn move_front_to_back(&mut self) {
        let (head, tail) = (self.head, self.tail);
        let e = self.ring[self.slot(head)];
        let i = self.slot(tail);
        self.ring[i] = e;
        self.tail = tail + 1;
        self.head = head + 1;
    }

    /// Removes and returns the front member.
    #[inline]
    pub fn pop_front(&mut self) -> Option<FlowId> {
        if self.len == 0 {
            return None;
        }
        let (id, _) = self.entry(self.head);
        self.tag[id as usize] &= !MEMBER;
        self.head += 1;
        self.len -= 1;
        self.skip_stale();
        Some(id)
    }

    /// Removes `id`; returns whether it was a member.
    #[inline]
    pub fn remove(&mut self, id: FlowId) -> bool {
        let t = self.tag[id as usize];
        if t & MEMBER == 0 {
            return false;
        }
        if self.entry(self.head).0 == id {
            self.pop_front();
            return true;
        }
        // Its entry goes stale: a new generation, not a member.
        self.tag[id as usize] = (t >> 1).wrapping_add(1) << 1;
        self.len -= 1;
        self.stale += 1;
        true
    }

    /// Re-establishes "the front entry is valid" by dropping stale entries at the front.
    #[inline(always)]
    fn skip_stale(&mut self) {
        if self.stale == 0 {
            return;
        }
        if self.len == 0 {
            self.head = self.tail;
            self.stale = 0;
            return;
        }
        while !self.valid(self.entry(self.head)) {
            self.head += 1;
            self.stale -= 1;
        }
    }

    /// Drops every stale entry, keeping the valid ones in order from `head` (in place: the
    /// write position never passes the read position).
    #[cold]
    fn compact(&mut self) {
        let mut w = self.head;
        for r in self.head..self.tail {
            let e = self.entry(r);
            if self.valid(e) {
                let (to, from) = (self.slot(w), self.slot(r));
                self.ring[to] = self.ring[from];
                w += 1;
            }
        }
        debug_assert_eq!(w - self.head, self.len as usize);
        self.tail = w;
        self.stale = 0;
    }

    /// The members front to back (for tests and diagnostics; O(len + stale)).
    pub fn iter(&self) -> impl Iterator<Item = FlowId> + '_ {
        (self.head..self.tail)
            .map(|p| self.entry(p))
            .filter(|&e| self.valid(e))
            .map(|e| e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// Removals leave stale entries; a ring full of them is compacted without losing order.
    #[test]
    fn stale_entries_are_skipped_and_compacted() {
        let mut s = RrSet::new(4);
        assert_eq!(s.mask + 1, 8);
        for round in 0..100u32 {
            assert!(s.push_back(0) && s.push_back(1) && s.push_back(2));
            assert!(s.remove(1) && s.remove(2), "round {round}");
            s.rotate();
            assert_eq!(s.iter().collect::<Vec<_>>(), vec![0]);
            assert!(s.tail - s.head <= 8);
            assert_eq!(s.pop_front(), Some(0));
            assert!(s.is_empty());
        }
        assert!(s.push_back(3) && s.push_back(1) && s.push_back(2) && s.remove(1));
        for _ in 0..20 {
            assert!(s.push_back(1) && s.remove(1), "flaps while 3 and 2 stay");
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 2]);
        s.rotate();
        assert_eq!((s.front(), s.len()), (Some(2), 2));
    }

    #[test]
    fn fifo_order_and_membership() {
        let mut s = RrSet::new(8);
        assert!(s.push_back(3) && s.push_back(1) && s.push_back(5));
        assert!(!s.push_back(1), "a flow is in a set once");
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 1, 5]);
        assert!(s.remove(1) && !s.remove(1));
        assert_eq!(s.pop_front(), Some(3));
        s.push_back(3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![5, 3]);
        s.rotate();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(
            (s.ahead(0), s.ahead(1), s.ahead(2)),
            (Some(3), Some(5), Some(3))
        );
        s.rotate();
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop_front(), Some(5));
        assert_eq!(s.pop_front(), Some(3));
        assert_eq!(s.pop_front(), None);
        assert!(s.is_empty() && !s.contains(3));
    }

    proptest! {
        /// The set behaves like a VecDeque with uniqueness, whatever the operation sequence.
        #[test]
        fn matches_a_deque_model(ops in prop::collection::vec((0u8..5, 0u32..16), 0..400)) {
            let mut s = RrSet::new(16);
            let mut m: VecDeque<u32> = VecDeque::new();
            for (op, id) in ops {
                match op {
                    0 | 1 => {
                        let fresh = !m.contains(&id);
                        prop_assert_eq!(s.push_back(id), fresh);
                        if fresh { m.push_back(id); }
                    }
                    2 => prop_assert_eq!(s.pop_front(), m.pop_front()),
                    3 => {
                        s.rotate();
                        if let Some(x) = m.pop_front() { m.push_back(x); }
                    }
                    _ => {
                        let pos = m.iter().position(|&x| x == id);
                        prop_assert_eq!(s.remove(id), pos.is_some());
                        if let Some(p) = pos { m.remove(p); }
                    }
                }
                prop_assert_eq!(s.len(), m.len());
                prop_assert_eq!(s.iter().collect::<Vec<_>>(), m.iter().copied().collect::<Vec<_>>());
                for x in 0..16 { prop_assert_eq!(s.contains(x), m.contains(&x)); }
                // Look-ahead: exact with no stale entries, and never out of range.
                for k in 0..3u32 {
                    let want = (!m.is_empty()).then(|| m[k as usize % m.len()]);
                    match s.ahead(k) {
                        Some(a) if s.stale == 0 => prop_assert_eq!(Some(a), want),
                        Some(a) => prop_assert!(a < 16 && want.is_some()),
                        None => prop_assert!(want.is_none()),
                    }
                }
                prop_assert!(s.tail - s.head <= s.mask + 1);
            }
        }
    }
}
