//! Maps keyed by numbers the server hands out itself (client ids, descriptors, command table
//! indexes), with a multiplicative hash instead of SipHash.
//!
//! `std`'s default SipHash-1-3 defends a map against keys an attacker picks (hash flooding);
//! the keyspace keeps it for that reason, as Redis keeps SipHash for its dictionaries. These
//! keys are not a client's choice, and a command looks its client up five or six times (its
//! outbox, whether it was killed or is blocked, its CLIENT LIST fields, the command's
//! statistics): with SipHash that was about a fifth of a short command's time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for integer keys: each word is folded in as `(h.rotl(5) ^ w) * K` with `K` the
/// 64-bit golden-ratio constant (odd, so distinct keys of one word never collide before the
/// table's reduction; the high bits, which the table's control bytes use, mix well).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u64(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }

    #[inline]
    fn write_u32(&mut self, w: u32) {
        self.write_u64(u64::from(w));
    }

    #[inline]
    fn write_i32(&mut self, w: i32) {
        self.write_u64(w as u32 as u64);
    }

    #[inline]
    fn write_usize(&mut self, w: usize) {
        self.write_u64(w as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` over [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_spread_over_the_table() {
        let mut m: IdMap<u64, u64> = IdMap::default();
        for i in 1..=100_000u64 {
            m.insert(i, i * 2);
        }
        assert_eq!(m.len(), 100_000);
        assert!((1..=100_000u64).all(|i| m.get(&i) == Some(&(i * 2))));
        // The top 7 bits (the table's control byte) take many values over a few ids, and the
        // low bits (the bucket) are a bijection of the id's.
        let h = |i: u64| {
            let mut s = IdHasher::default();
            s.write_u64(i);
            s.finish()
        };
        let tops: std::collections::HashSet<u64> = (1..=256).map(|i| h(i) >> 57).collect();
        assert!(tops.len() > 64, "{}", tops.len());
        let lows: std::collections::HashSet<u64> = (0..4096).map(|i| h(i) & 4095).collect();
        assert_eq!(lows.len(), 4096);
    }
}
