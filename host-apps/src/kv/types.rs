//! The collection values of the keyspace: lists, hashes, sets and sorted sets, each with its
//! payload bytes counted as it changes, so the store's memory accounting (`maxmemory`) costs
//! O(1) per command instead of a walk over the collection.
//!
//! Invariant of every type here: `bytes` equals the sum of [`elem_cost`] over the elements
//! (checked by the tests against a recount).

use std::collections::{HashMap, VecDeque};
use std::ops::Deref;

/// Approximate cost of one collection element beyond its bytes (pointers, headers).
pub const ELEM_OVERHEAD: usize = 16;

/// The accounted cost of an element of `n` bytes.
pub fn elem_cost(n: usize) -> usize {
    n + ELEM_OVERHEAD
}

/// A list (Redis `OBJ_LIST`): a deque of byte strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct List {
    items: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl Deref for List {
    type Target = VecDeque<Vec<u8>>;
    fn deref(&self) -> &Self::Target {
        &self.items
    }
}

impl List {
    /// Accounted bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Pushes `x` at the head (`front`) or the tail.
    pub fn push(&mut self, x: Vec<u8>, front: bool) {
        self.bytes += elem_cost(x.len());
        if front {
            self.items.push_front(x);
        } else {
            self.items.push_back(x);
        }
    }

    /// Pops from the head (`front`) or the tail.
    pub fn pop(&mut self, front: bool) -> Option<Vec<u8>> {
        let x = if front {
            self.items.pop_front()
        } else {
            self.items.pop_back()
        }?;
        self.bytes -= elem_cost(x.len());
        Some(x)
    }

    /// Changes the elements through `f` (any edit: LSET, LTRIM, LREM, LINSERT), then counts
    /// them again (those commands are O(n) anyway).
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut VecDeque<Vec<u8>>) -> R) -> R {
        let r = f(&mut self.items);
        self.bytes = self.items.iter().map(|x| elem_cost(x.len())).sum();
        r
    }
}

/// A hash (Redis `OBJ_HASH`): fields to values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hash {
    map: HashMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
}

impl Deref for Hash {
    type Target = HashMap<Vec<u8>, Vec<u8>>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Hash {
    /// Accounted bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Sets `field` to `value`; true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: Vec<u8>) -> bool {
        self.bytes += elem_cost(field.len() + value.len());
        match self.map.get_mut(field) {
            Some(v) => {
                self.bytes -= elem_cost(field.len() + v.len());
                *v = value;
                false
            }
            None => {
                self.map.insert(field.to_vec(), value);
                true
            }
        }
    }

    /// Removes `field`, returning its value.
    pub fn remove(&mut self, field: &[u8]) -> Option<Vec<u8>> {
        let v = self.map.remove(field)?;
        self.bytes -= elem_cost(field.len() + v.len());
        Some(v)
    }
}

/// A set (Redis `OBJ_SET`): members in a vector with an index by member, so that a random
/// member (SPOP, SRANDMEMBER) is O(1) as in Redis's dict.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Set {
    members: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, usize>,
    bytes: usize,
}

impl Set {
    /// Accounted bytes (a member is held twice: in the vector and as the index key).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.index.contains_key(m)
    }

    /// The members, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.members.iter()
    }

    /// The `i`-th member in storage order (for random picks); `i < len`.
    pub fn at(&self, i: usize) -> &[u8] {
        &self.members[i]
    }

    /// Adds `m`; true if it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if self.index.contains_key(m) {
            return false;
        }
        self.bytes += elem_cost(2 * m.len());
        self.index.insert(m.to_vec(), self.members.len());
        self.members.push(m.to_vec());
        true
    }

    /// Removes `m`; true if it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self.index.remove(m) {
            Some(i) => {
                self.take_at(i);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the `i`-th member in storage order; `i < len`.
    pub fn take_at(&mut self, i: usize) -> Vec<u8> {
        let m = self.members.swap_remove(i);
        self.index.remove(&m);
        if let Some(moved) = self.members.get(i) {
            self.index.insert(moved.clone(), i);
        }
        self.bytes -= elem_cost(2 * m.len());
        m
    }
}

impl FromIterator<Vec<u8>> for Set {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(it: I) -> Self {
        let mut s = Set::default();
        for m in it {
            s.insert(&m);
        }
        s
    }
}

/// A sorted set (Redis `OBJ_ZSET`): members with a score, ordered by (score, member bytes)
/// as Redis orders them (`zslValueGteMin`, `sdscmp`). The order is a sorted deque (binary
/// search for rank and score lookups in O(log n), O(1) pops at both ends, inserts in the
/// middle move elements); a hash map gives a member's score in O(1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZSet {
    order: VecDeque<(f64, Vec<u8>)>,
    scores: HashMap<Vec<u8>, f64>,
    bytes: usize,
}

fn zcmp(a: &(f64, Vec<u8>), s: f64, m: &[u8]) -> std::cmp::Ordering {
    a.0.partial_cmp(&s)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then_with(|| a.1.as_slice().cmp(m))
}

impl ZSet {
    /// Accounted bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Members.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The score of `m`.
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.scores.get(m).copied()
    }

    /// The elements in order (ascending score, then member).
    pub fn order(&self) -> &VecDeque<(f64, Vec<u8>)> {
        &self.order
    }

    /// The 0-based rank of `m` in ascending order.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        self.order.binary_search_by(|e| zcmp(e, s, m)).ok()
    }

    /// How many elements come before the first whose (score) is not `before(score, member)`:
    /// a partition point of the order.
    pub fn partition(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        self.order.partition_point(|(s, m)| before(*s, m))
    }

    /// Sets the score of `m` (adding it if new); true if it is new. The score is not NaN.
    pub fn insert(&mut self, m: &[u8], score: f64) -> bool {
        let new = match self.scores.get(m).copied() {
            Some(old) => {
                if old == score {
                    return false;
                }
                if let Ok(i) = self.order.binary_search_by(|e| zcmp(e, old, m)) {
                    self.order.remove(i);
                }
                false
            }
            None => {
                self.bytes += elem_cost(2 * m.len() + 8);
                true
            }
        };
        self.scores.insert(m.to_vec(), score);
        let at = self
            .order
            .binary_search_by(|e| zcmp(e, score, m))
            .unwrap_or_else(|i| i);
        self.order.insert(at, (score, m.to_vec()));
        new
    }

    /// Removes `m`; true if it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self.rank(m) {
            Some(i) => {
                self.take_at(i);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the element of rank `i`; `i < len`.
    pub fn take_at(&mut self, i: usize) -> (f64, Vec<u8>) {
        let (s, m) = self.order.remove(i).unwrap_or_default();
        self.scores.remove(&m);
        self.bytes -= elem_cost(2 * m.len() + 8);
        (s, m)
    }

    /// Removes the elements of ranks `lo..hi`; returns how many.
    pub fn remove_ranks(&mut self, lo: usize, hi: usize) -> usize {
        let gone: Vec<(f64, Vec<u8>)> = self.order.drain(lo..hi).collect();
        for (_, m) in &gone {
            self.scores.remove(m);
            self.bytes -= elem_cost(2 * m.len() + 8);
        }
        gone.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_types_count_their_bytes() {
        let mut l = List::default();
        l.push(b"abc".to_vec(), true);
        l.push(b"de".to_vec(), false);
        assert_eq!(l.bytes(), elem_cost(3) + elem_cost(2));
        l.edit(|v| v.retain(|x| x.len() == 2));
        assert_eq!(l.bytes(), elem_cost(2));
        assert_eq!(l.pop(true), Some(b"de".to_vec()));
        assert_eq!(l.bytes(), 0);

        let mut h = Hash::default();
        assert!(h.insert(b"f", b"12345".to_vec()));
        assert!(!h.insert(b"f", b"1".to_vec()));
        assert_eq!(h.bytes(), elem_cost(2));
        assert_eq!(h.remove(b"f"), Some(b"1".to_vec()));
        assert_eq!(h.bytes(), 0);

        let mut s: Set = [b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()]
            .into_iter()
            .collect();
        assert!(!s.insert(b"a"));
        assert!(s.remove(b"a"));
        assert!(s.contains(b"ccc") && s.contains(b"bb") && !s.contains(b"a"));
        // The index follows the member moved into the freed slot.
        let moved = s.at(0).to_vec();
        assert!(s.remove(&moved));
        assert_eq!(s.len(), 1);
        let last = s.take_at(0);
        assert!(!s.contains(&last) && s.is_empty());
        assert_eq!(s.bytes(), 0);

        let mut z = ZSet::default();
        z.insert(b"b", 1.0);
        z.insert(b"a", 1.0);
        z.insert(b"c", 0.5);
        assert_eq!(z.rank(b"c"), Some(0));
        assert_eq!(z.rank(b"a"), Some(1));
        assert_eq!(z.rank(b"b"), Some(2));
        assert!(!z.insert(b"c", 2.0));
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.partition(|s, _| s < 1.5), 2);
        assert_eq!(z.remove_ranks(0, 2), 2);
        assert_eq!(z.take_at(0), (2.0, b"c".to_vec()));
        assert!(z.is_empty() && z.score(b"c").is_none());
        assert_eq!(z.bytes(), 0);
    }
}
