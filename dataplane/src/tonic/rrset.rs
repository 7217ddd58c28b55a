//! Round-robin flow sets: the active set and the ready-to-transmit set (Tonic §3.1).
//!
//! The paper implements both as FIFOs of flow ids, which gives per-segment round robin
//! ("see active list in [37]", DRR). Here a set is an intrusive doubly linked list threaded
//! through an index array: `push_back`, `pop_front`, `remove` and `contains` are O(1) and
//! allocate nothing, and a flow is in a set at most once. Removal lets the engines keep the
//! sets *exact* (a flow is a member iff it is eligible) instead of discovering ineligible
//! members when they reach the front.

use super::FlowId;

const NIL: u32 = u32::MAX;
const OUT: u32 = u32::MAX - 1;

/// A FIFO set of flow ids in `[0, capacity)` with O(1) membership operations.
///
/// Invariant: the members form a circular doubly linked list through `next`/`prev`
/// starting at `head` (the front; `prev[head]` is the back), each exactly once; a
/// non-member has `next == OUT`. Being circular, "take the front and put it at the back"
/// ([`rotate`](Self::rotate), the common round-robin step) only moves `head`.
#[derive(Clone, Debug)]
pub struct RrSet {
    next: Vec<u32>,
    prev: Vec<u32>,
    head: u32,
    len: u32,
}

impl RrSet {
    /// Largest capacity (ids `u32::MAX - 1` and up are reserved as link markers).
    pub const MAX_CAPACITY: u32 = u32::MAX - 2;

    /// An empty set for ids `[0, capacity)`.
    pub fn new(capacity: u32) -> Self {
        assert!(capacity <= Self::MAX_CAPACITY);
        RrSet {
            next: vec![OUT; capacity as usize],
            prev: vec![NIL; capacity as usize],
            head: NIL,
            len: 0,
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
        self.next[id as usize] != OUT
    }

    /// The member at the front, if any (the next one round robin picks).
    #[inline]
    pub fn front(&self) -> Option<FlowId> {
        (self.head != NIL).then_some(self.head)
    }

    /// The member `k` places behind the front (going around), if the set is not empty: the
    /// flow round robin picks `k` steps from now if nothing changes (for prefetching).
    #[inline]
    pub fn ahead(&self, k: u32) -> Option<FlowId> {
        if self.head == NIL {
            return None;
        }
        let mut id = self.head;
        for _ in 0..k {
            id = self.next[id as usize];
        }
        Some(id)
    }

    /// Appends `id` at the back; returns false (and does nothing) if it is already a member.
    #[inline]
    pub fn push_back(&mut self, id: FlowId) -> bool {
        if self.contains(id) {
            return false;
        }
        let i = id as usize;
        if self.head == NIL {
            self.head = id;
            self.next[i] = id;
            self.prev[i] = id;
        } else {
            let h = self.head as usize;
            let t = self.prev[h];
            self.next[t as usize] = id;
            self.prev[i] = t;
            self.next[i] = self.head;
            self.prev[h] = id;
        }
        self.len += 1;
        true
    }

    /// Moves the front member to the back (pop it and push it again, in O(1) without
    /// touching any link).
    #[inline]
    pub fn rotate(&mut self) {
        if self.head != NIL {
            self.head = self.next[self.head as usize];
        }
    }

    /// Removes and returns the front member.
    #[inline]
    pub fn pop_front(&mut self) -> Option<FlowId> {
        let id = self.front()?;
        self.unlink(id);
        Some(id)
    }

    /// Removes `id`; returns whether it was a member.
    #[inline]
    pub fn remove(&mut self, id: FlowId) -> bool {
        if !self.contains(id) {
            return false;
        }
        self.unlink(id);
        true
    }

    #[inline]
    fn unlink(&mut self, id: FlowId) {
        let i = id as usize;
        if self.len == 1 {
            self.head = NIL;
        } else {
            let (p, n) = (self.prev[i], self.next[i]);
            self.next[p as usize] = n;
            self.prev[n as usize] = p;
            if self.head == id {
                self.head = n;
            }
        }
        self.next[i] = OUT;
        self.prev[i] = NIL;
        self.len -= 1;
    }

    /// The members front to back (for tests and diagnostics; O(len)).
    pub fn iter(&self) -> impl Iterator<Item = FlowId> + '_ {
        let mut cur = self.head;
        let mut left = self.len;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let id = cur;
            cur = self.next[id as usize];
            Some(id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

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
        fn matches_a_deque_model(ops in prop::collection::vec((0u8..5, 0u32..16), 0..200)) {
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
            }
        }
    }
}
