//! The keyspace: keys (byte strings) to values with an optional expiry time, as a Redis
//! database holds them. Expiry is lazy (a key past its time is deleted when touched) and
//! active ([`Store::active_expire`] looks at a bounded number of keys with a time to live per
//! call, as Redis's `activeExpireCycle` does). Memory is accounted approximately per key for
//! `maxmemory`, in O(1) per change (the collection types count their own bytes).
//!
//! Keys live in a vector of slots with a hash index by name (an index map): a random key
//! (RANDOMKEY) is O(1), and SCAN walks the slots from the last to the first, so that a key
//! present for a whole scan is returned at least once (a removal moves the last slot, already
//! visited, into the hole; keys added go to the end), the guarantee Redis's SCAN gives.
//!
//! WATCH support: a watched key has a version that every change to it bumps (set, modify,
//! remove, expiry changes, flush), so a transaction can tell whether its keys changed.

use std::collections::HashMap;

pub use super::types::{Hash, List, Set, ZSet, ELEM_OVERHEAD};

/// A value of one of Redis's five core types.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string (Redis `OBJ_STRING`).
    Str(Vec<u8>),
    /// A list (Redis `OBJ_LIST`); never empty in the store (an emptied value is deleted).
    List(List),
    /// A hash (Redis `OBJ_HASH`); never empty in the store.
    Hash(Hash),
    /// A set (Redis `OBJ_SET`); never empty in the store.
    Set(Set),
    /// A sorted set (Redis `OBJ_ZSET`); never empty in the store.
    ZSet(ZSet),
}

impl Value {
    /// Payload bytes (for memory accounting), O(1).
    fn size(&self) -> usize {
        match self {
            Value::Str(s) => s.len(),
            Value::List(l) => l.bytes(),
            Value::Hash(h) => h.bytes(),
            Value::Set(s) => s.bytes(),
            Value::ZSet(z) => z.bytes(),
        }
    }

    /// Whether the value is an empty collection (which the store deletes).
    fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::List(l) => l.is_empty(),
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }

    /// The type name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }
}

/// One key's entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute expiry time, Unix milliseconds.
    pub expire_at: Option<i64>,
    /// Whether the key is in the active-expiry list.
    tracked: bool,
}

/// Approximate bookkeeping cost of one key (hash table slot, entry, allocation headers).
const KEY_OVERHEAD: usize = 64;

/// The bytes accounted for `key` holding `v` (MEMORY USAGE).
pub fn cost(key: &[u8], v: &Value) -> usize {
    KEY_OVERHEAD + key.len() + v.size()
}

/// One database.
#[derive(Debug, Default)]
pub struct Store {
    index: HashMap<Vec<u8>, usize>,
    slots: Vec<(Vec<u8>, Entry)>,
    /// Keys that were given a time to live (may name keys since deleted or persisted:
    /// checked and dropped as the active cycle passes).
    ttl_keys: Vec<Vec<u8>>,
    cursor: usize,
    used: usize,
    expires: usize,
    /// Watched keys: (version, watchers).
    watched: HashMap<Vec<u8>, (u64, usize)>,
    /// Keys deleted because their time had come (lazy and active).
    pub expired_keys: u64,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys held, counting expired ones not yet removed (Redis `DBSIZE`).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keys with a time to live.
    pub fn expires(&self) -> usize {
        self.expires
    }

    /// Approximate bytes used by keys and values.
    pub fn used_memory(&self) -> usize {
        self.used
    }

    fn touch(&mut self, key: &[u8]) {
        if !self.watched.is_empty() {
            if let Some(w) = self.watched.get_mut(key) {
                w.0 += 1;
            }
        }
    }

    fn entry_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let i = *self.index.get(key)?;
        Some(&mut self.slots[i].1)
    }

    fn entry(&self, key: &[u8]) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.slots[i].1)
    }

    /// The entry of `key` as held, expired or not (for inspection: no lazy expiry).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.entry(key)
    }

    /// Whether `key` is held and its time has come (no removal).
    pub fn is_expired(&self, key: &[u8], now: i64) -> bool {
        self.entry(key)
            .is_some_and(|e| e.expire_at.is_some_and(|t| t <= now))
    }

    /// Removes `key` if its time has come; true if it was removed.
    fn expire_if_needed(&mut self, key: &[u8], now: i64) -> bool {
        let due = self.is_expired(key, now);
        if due {
            self.remove(key);
            self.expired_keys += 1;
        }
        due
    }

    /// The live entry of `key` (lazy expiry first), found with one lookup.
    pub fn get(&mut self, key: &[u8], now: i64) -> Option<&Entry> {
        let i = *self.index.get(key)?;
        if self.slots[i].1.expire_at.is_some_and(|t| t <= now) {
            self.remove(key);
            self.expired_keys += 1;
            return None;
        }
        Some(&self.slots[i].1)
    }

    /// Whether `key` is live.
    pub fn contains(&mut self, key: &[u8], now: i64) -> bool {
        self.get(key, now).is_some()
    }

    /// Changes the value of a live `key` in place through `f` (keeping its time to live);
    /// memory accounting follows, and an emptied collection is deleted. `None` when the key
    /// is absent.
    pub fn modify<R>(
        &mut self,
        key: &[u8],
        now: i64,
        f: impl FnOnce(&mut Value) -> R,
    ) -> Option<R> {
        self.modify_with(key, now, |v| (f(v), true))
    }

    /// [`Store::modify`] where `f` also says whether it changed anything: a watched key
    /// counts as changed only then (Redis signals a modified key only on a real change).
    pub fn modify_with<R>(
        &mut self,
        key: &[u8],
        now: i64,
        f: impl FnOnce(&mut Value) -> (R, bool),
    ) -> Option<R> {
        self.expire_if_needed(key, now);
        let e = self.entry_mut(key)?;
        let before = e.value.size();
        let (r, changed) = f(&mut e.value);
        let after = e.value.size();
        let empty = e.value.is_empty_collection();
        self.used = self.used + after - before;
        if changed {
            self.touch(key);
        }
        if empty {
            self.remove(key);
        }
        Some(r)
    }

    /// Sets `key` to `value`; the time to live is kept when `keep_ttl`, else removed.
    pub fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let add = cost(key, &value);
        self.touch(key);
        match self.index.get(key) {
            Some(&i) => {
                let e = &mut self.slots[i].1;
                self.used = self.used + add - cost(key, &e.value);
                e.value = value;
                if !keep_ttl && e.expire_at.take().is_some() {
                    self.expires -= 1;
                }
            }
            None => {
                self.used += add;
                self.index.insert(key.to_vec(), self.slots.len());
                self.slots.push((
                    key.to_vec(),
                    Entry {
                        value,
                        expire_at: None,
                        tracked: false,
                    },
                ));
            }
        }
    }

    /// Removes `key` (no expiry check) and returns its entry.
    pub fn take(&mut self, key: &[u8]) -> Option<Entry> {
        let i = self.index.remove(key)?;
        let (_, e) = self.slots.swap_remove(i);
        if let Some((moved, _)) = self.slots.get(i) {
            if let Some(j) = self.index.get_mut(moved) {
                *j = i;
            }
        }
        self.used -= cost(key, &e.value);
        if e.expire_at.is_some() {
            self.expires -= 1;
        }
        self.touch(key);
        Some(e)
    }

    /// Removes `key` (no expiry check); true if it was there.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.take(key).is_some()
    }

    /// Sets the expiry time of an existing `key` (Unix ms).
    pub fn set_expire(&mut self, key: &[u8], at: i64) {
        let Some(e) = self.entry_mut(key) else {
            return;
        };
        let added = e.expire_at.replace(at).is_none();
        let track = !e.tracked;
        e.tracked = true;
        if added {
            self.expires += 1;
        }
        if track {
            self.ttl_keys.push(key.to_vec());
        }
        self.touch(key);
    }

    /// Removes the time to live of `key`; true if it had one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        match self.entry_mut(key) {
            Some(e) if e.expire_at.is_some() => {
                e.expire_at = None;
                self.expires -= 1;
                self.touch(key);
                true
            }
            _ => false,
        }
    }

    /// Empties the store; watched keys that were held count as changed.
    pub fn clear(&mut self) {
        let held: Vec<Vec<u8>> = self
            .watched
            .keys()
            .filter(|k| self.index.contains_key(*k))
            .cloned()
            .collect();
        for k in held {
            self.touch(&k);
        }
        self.index.clear();
        self.slots.clear();
        self.ttl_keys.clear();
        self.cursor = 0;
        self.used = 0;
        self.expires = 0;
    }

    /// The key in slot `i` (`i < len`), live or not: for random picks.
    pub fn key_at(&self, i: usize) -> &[u8] {
        &self.slots[i].0
    }

    /// Every key held (expired ones not yet removed included), in slot order.
    pub fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.slots.iter().map(|(k, _)| k)
    }

    /// One SCAN step: from `cursor` (0: start), visits up to `count` slots from the last
    /// towards the first; returns the next cursor (0: done) and the keys visited.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Vec<u8>>) {
        let mut next = if cursor == 0 {
            self.slots.len() as u64
        } else {
            cursor.min(self.slots.len() as u64)
        };
        let mut got = Vec::new();
        while next > 0 && got.len() < count.max(1) {
            next -= 1;
            got.push(self.slots[next as usize].0.clone());
        }
        (next, got)
    }

    /// Starts watching `key`; returns its version.
    pub fn watch(&mut self, key: &[u8]) -> u64 {
        let w = self.watched.entry(key.to_vec()).or_insert((0, 0));
        w.1 += 1;
        w.0
    }

    /// Stops one watch of `key`.
    pub fn unwatch(&mut self, key: &[u8]) {
        if let Some(w) = self.watched.get_mut(key) {
            w.1 -= 1;
            if w.1 == 0 {
                self.watched.remove(key);
            }
        }
    }

    /// The version of watched `key` (0 if not watched).
    pub fn version(&self, key: &[u8]) -> u64 {
        self.watched.get(key).map_or(0, |w| w.0)
    }

    /// Moves the keys (and their accounting) of `self` and `other` into each other, keeping
    /// each side's watched keys where they are (Redis's SWAPDB swaps data, not clients); a
    /// watched key held on either side counts as changed.
    pub fn swap_data(&mut self, other: &mut Store) {
        let held = |a: &Store, b: &Store| -> Vec<Vec<u8>> {
            a.watched
                .keys()
                .filter(|k| a.index.contains_key(*k) || b.index.contains_key(*k))
                .cloned()
                .collect()
        };
        for k in held(self, other) {
            self.touch(&k);
        }
        for k in held(other, self) {
            other.touch(&k);
        }
        let (wa, wb) = (
            std::mem::take(&mut self.watched),
            std::mem::take(&mut other.watched),
        );
        std::mem::swap(self, other);
        self.watched = wa;
        other.watched = wb;
    }

    /// Active expiry: looks at up to `budget` keys that were given a time to live, deletes
    /// those whose time has come and forgets those that no longer have one. Returns the keys
    /// deleted.
    pub fn active_expire(&mut self, now: i64, budget: usize) -> usize {
        let mut deleted = 0;
        for _ in 0..budget {
            if self.ttl_keys.is_empty() {
                break;
            }
            if self.cursor >= self.ttl_keys.len() {
                self.cursor = 0;
            }
            let i = self.cursor;
            let state = self.entry(&self.ttl_keys[i]).map(|e| e.expire_at);
            match state {
                Some(Some(t)) if t <= now => {
                    let k = self.ttl_keys.swap_remove(i);
                    self.remove(&k);
                    self.expired_keys += 1;
                    deleted += 1;
                }
                Some(Some(_)) => self.cursor += 1,
                Some(None) => {
                    let k = self.ttl_keys.swap_remove(i);
                    if let Some(e) = self.entry_mut(&k) {
                        e.tracked = false;
                    }
                }
                None => {
                    self.ttl_keys.swap_remove(i);
                }
            }
        }
        deleted
    }

    /// Recounts the memory used from scratch (tests check it against the running count).
    pub fn recount(&self) -> usize {
        self.slots.iter().map(|(k, e)| cost(k, &e.value)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_store_lazy_and_active_expiry_and_accounting() {
        let mut s = Store::new();
        s.set(b"a", Value::Str(b"1".to_vec()), false);
        s.set(b"b", Value::Str(b"2".to_vec()), false);
        s.set_expire(b"a", 100);
        s.set_expire(b"b", 1000);
        assert_eq!(s.expires(), 2);
        assert!(s.contains(b"a", 99));
        assert!(!s.contains(b"a", 100));
        assert_eq!(s.expires(), 1);
        assert_eq!(s.len(), 1);
        assert_eq!(s.active_expire(999, 10), 0);
        assert_eq!(s.active_expire(1000, 10), 1);
        assert!(s.is_empty());
        assert_eq!(s.used_memory(), 0);
        assert_eq!(s.expired_keys, 2);
        // A persisted key leaves the active list.
        s.set(b"c", Value::Str(vec![0; 100]), false);
        s.set_expire(b"c", 5);
        assert!(s.persist(b"c"));
        assert_eq!(s.active_expire(10, 10), 0);
        assert!(s.contains(b"c", 10));
        assert_eq!(s.used_memory(), KEY_OVERHEAD + 1 + 100);
        // Overwriting without KEEPTTL drops the time to live.
        s.set_expire(b"c", 50);
        s.set(b"c", Value::Str(vec![]), false);
        assert_eq!(s.expires(), 0);
        assert!(s.contains(b"c", 60));
    }
}
