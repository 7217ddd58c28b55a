//! The keyspace: keys (byte strings) to values with an optional expiry time, as a Redis
//! database holds them. Expiry is lazy (a key past its time is deleted when touched) and
//! active ([`Store::active_expire`] looks at a bounded number of keys with a time to live per
//! call, as Redis's `activeExpireCycle` does). Memory is accounted approximately per key for
//! `maxmemory`.

use std::collections::{HashMap, VecDeque};

/// A value: a string, or a list (the second type lets `-WRONGTYPE` be reached as in Redis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string (Redis `OBJ_STRING`).
    Str(Vec<u8>),
    /// A list (Redis `OBJ_LIST`); never empty in the store (an emptied list is deleted).
    List(VecDeque<Vec<u8>>),
}

impl Value {
    /// Payload bytes (for memory accounting).
    fn size(&self) -> usize {
        match self {
            Value::Str(s) => s.len(),
            Value::List(l) => l.iter().map(|e| e.len() + ELEM_OVERHEAD).sum(),
        }
    }

    /// The type name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
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
/// Approximate cost of one list element beyond its bytes.
const ELEM_OVERHEAD: usize = 16;

fn cost(key: &[u8], v: &Value) -> usize {
    KEY_OVERHEAD + key.len() + v.size()
}

/// One database.
#[derive(Debug, Default)]
pub struct Store {
    map: HashMap<Vec<u8>, Entry>,
    /// Keys that were given a time to live (may name keys since deleted or persisted:
    /// checked and dropped as the active cycle passes).
    ttl_keys: Vec<Vec<u8>>,
    cursor: usize,
    used: usize,
    expires: usize,
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
        self.map.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Keys with a time to live.
    pub fn expires(&self) -> usize {
        self.expires
    }

    /// Approximate bytes used by keys and values.
    pub fn used_memory(&self) -> usize {
        self.used
    }

    /// Removes `key` if its time has come; true if it was removed.
    fn expire_if_needed(&mut self, key: &[u8], now: i64) -> bool {
        let due = matches!(self.map.get(key), Some(e) if e.expire_at.is_some_and(|t| t <= now));
        if due {
            self.remove(key);
            self.expired_keys += 1;
        }
        due
    }

    /// The live entry of `key` (lazy expiry first).
    pub fn get(&mut self, key: &[u8], now: i64) -> Option<&Entry> {
        self.expire_if_needed(key, now);
        self.map.get(key)
    }

    /// Whether `key` is live.
    pub fn contains(&mut self, key: &[u8], now: i64) -> bool {
        self.get(key, now).is_some()
    }

    /// Changes the value of a live `key` in place through `f` (keeping its time to live);
    /// memory accounting follows. `None` when the key is absent.
    pub fn modify<R>(
        &mut self,
        key: &[u8],
        now: i64,
        f: impl FnOnce(&mut Value) -> R,
    ) -> Option<R> {
        self.expire_if_needed(key, now);
        let e = self.map.get_mut(key)?;
        let before = cost(key, &e.value);
        let r = f(&mut e.value);
        let after = cost(key, &e.value);
        self.used = self.used + after - before;
        let empty = matches!(&e.value, Value::List(l) if l.is_empty());
        if empty {
            self.remove(key);
        }
        Some(r)
    }

    /// Sets `key` to `value`; the time to live is kept when `keep_ttl`, else removed.
    pub fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let add = cost(key, &value);
        match self.map.get_mut(key) {
            Some(e) => {
                self.used = self.used + add - cost(key, &e.value);
                e.value = value;
                if !keep_ttl && e.expire_at.take().is_some() {
                    self.expires -= 1;
                }
            }
            None => {
                self.used += add;
                self.map.insert(
                    key.to_vec(),
                    Entry {
                        value,
                        expire_at: None,
                        tracked: false,
                    },
                );
            }
        }
    }

    /// Removes `key` (no expiry check); true if it was there.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        match self.map.remove(key) {
            Some(e) => {
                self.used -= cost(key, &e.value);
                if e.expire_at.is_some() {
                    self.expires -= 1;
                }
                true
            }
            None => false,
        }
    }

    /// Sets the expiry time of an existing `key` (Unix ms).
    pub fn set_expire(&mut self, key: &[u8], at: i64) {
        if let Some(e) = self.map.get_mut(key) {
            if e.expire_at.replace(at).is_none() {
                self.expires += 1;
            }
            if !e.tracked {
                e.tracked = true;
                self.ttl_keys.push(key.to_vec());
            }
        }
    }

    /// Removes the time to live of `key`; true if it had one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        match self.map.get_mut(key) {
            Some(e) if e.expire_at.is_some() => {
                e.expire_at = None;
                self.expires -= 1;
                true
            }
            _ => false,
        }
    }

    /// Empties the store.
    pub fn clear(&mut self) {
        self.map.clear();
        self.ttl_keys.clear();
        self.cursor = 0;
        self.used = 0;
        self.expires = 0;
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
            let state = self.map.get(&self.ttl_keys[i]).map(|e| e.expire_at);
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
                    if let Some(e) = self.map.get_mut(&k) {
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
