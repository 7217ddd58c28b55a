//! Typed access to the keyspace for the commands: a value of the type a command works on,
//! or Redis's `-WRONGTYPE` reply when the key holds another type.

use super::*;

/// A value type of the keyspace, as the commands see it.
pub(super) trait Kind: Default {
    fn wrap(self) -> Value;
    fn of(v: &Value) -> Option<&Self>;
    fn of_mut(v: &mut Value) -> Option<&mut Self>;
}

macro_rules! kind {
    ($t:ty, $v:ident) => {
        impl Kind for $t {
            fn wrap(self) -> Value {
                Value::$v(self)
            }
            fn of(v: &Value) -> Option<&Self> {
                match v {
                    Value::$v(x) => Some(x),
                    _ => None,
                }
            }
            fn of_mut(v: &mut Value) -> Option<&mut Self> {
                match v {
                    Value::$v(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

kind!(Vec<u8>, Str);
kind!(List, List);
kind!(Hash, Hash);
kind!(Set, Set);
kind!(ZSet, ZSet);

impl Engine {
    /// The live value of `key` as a `T`: `Ok(None)` when there is no such key, `Err` after a
    /// WRONGTYPE reply.
    pub(super) fn read<T: Kind>(
        &mut self,
        key: &[u8],
        now: i64,
        out: &mut Vec<u8>,
    ) -> Result<Option<&T>, ()> {
        match self.db.get(key, now) {
            None => Ok(None),
            Some(en) => match T::of(&en.value) {
                Some(v) => Ok(Some(v)),
                None => {
                    resp::error(out, WRONGTYPE);
                    Err(())
                }
            },
        }
    }

    /// Changes the `T` at `key` through `f` (creating an empty one first when `create`);
    /// an emptied collection is deleted. `Ok(None)`: no such key (and not `create`); `Err`
    /// after a WRONGTYPE reply.
    pub(super) fn write<T: Kind, R>(
        &mut self,
        key: &[u8],
        now: i64,
        out: &mut Vec<u8>,
        create: bool,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<Option<R>, ()> {
        self.write_if::<T, R>(key, now, out, create, |v| (f(v), true))
    }

    /// [`Engine::write`] where `f` also says whether it changed anything (WATCH sees only
    /// real changes).
    pub(super) fn write_if<T: Kind, R>(
        &mut self,
        key: &[u8],
        now: i64,
        out: &mut Vec<u8>,
        create: bool,
        f: impl FnOnce(&mut T) -> (R, bool),
    ) -> Result<Option<R>, ()> {
        if self.read::<T>(key, now, out)?.is_none() {
            if !create {
                return Ok(None);
            }
            self.db.set(key, T::default().wrap(), false);
        }
        let r = self.db.modify_with(key, now, |v| match T::of_mut(v) {
            Some(t) => {
                let (r, changed) = f(t);
                (Some(r), changed)
            }
            None => (None, false),
        });
        Ok(r.flatten())
    }

    /// Like [`Engine::read`], for a command over several keys that checks all types first.
    pub(super) fn read_all<T: Kind + Clone>(
        &mut self,
        keys: &[Vec<u8>],
        now: i64,
        out: &mut Vec<u8>,
    ) -> Result<Vec<Option<T>>, ()> {
        keys.iter()
            .map(|k| Ok(self.read::<T>(k, now, out)?.cloned()))
            .collect()
    }
}

/// Redis's `getRangeLongFromObjectOrReply` for a count that must not be negative: one
/// message for a non-integer and a negative.
pub(super) fn parse_count(a: &[u8], out: &mut Vec<u8>) -> Result<usize, ()> {
    match string2ll(a) {
        Some(c) if c >= 0 => Ok(c as usize),
        _ => {
            resp::error(out, OUT_OF_RANGE_POSITIVE);
            Err(())
        }
    }
}

/// Writes an array of bulk strings.
pub(super) fn bulks<'a>(out: &mut Vec<u8>, n: usize, items: impl IntoIterator<Item = &'a Vec<u8>>) {
    resp::array_len(out, n);
    for x in items {
        resp::bulk(out, x);
    }
}

/// `+OK`.
pub(super) fn ok(out: &mut Vec<u8>) {
    out.extend_from_slice(b"+OK\r\n");
}

/// A small pseudo-random generator for the random picks (SPOP, SRANDMEMBER, RANDOMKEY,
/// HRANDFIELD): xorshift seeded from the clock at first use; not for anything secret.
pub(super) fn rand_below(n: usize) -> usize {
    use std::cell::Cell;
    thread_local!(static STATE: Cell<u64> = const { Cell::new(0) });
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        if n == 0 {
            0
        } else {
            (x % n as u64) as usize
        }
    })
}
