//! Window bitmaps as rings of 64-bit words (Tonic §4 "Efficient Bitmap Operations", App. C).
//!
//! A flow's `acked`, `marked-for-rtx` and `rtx-cnt` bitmaps each hold one bit per segment of
//! the window. They are rings: segment `s` lives at bit `s mod W` (W = 64, 128 or 256), and
//! the head (the first unacknowledged segment, `wnd-start`) moves forward with new acks; the
//! bits a moving head leaves behind are cleared so that they are clean when the ring wraps
//! onto them again. All functions here work on a plain word slice (`W = 64 · words.len()`
//! unless a smaller `nbits` is given), allocate nothing and are O(words).

use super::module::{WindowBits, WINDOW_WORDS};

/// Finds the first set bit at or after ring position `head` in the ring of the first `nbits`
/// bits of `words`, going around: App. C's `findfirst(A, H)`.
///
/// Computed as the paper does, without tracking the head through the search: `A'` is `A` with
/// the bits below `head` cleared, and `findfirst(A, H) = findfirst(A', 0)` if `A' != 0`, else
/// `findfirst(A, 0)`. (Our reading of App. C: bit `H` itself stays in `A'`.) Returns the
/// ring position.
pub fn find_first_after(words: &[u64], nbits: u32, head: u32) -> Option<u32> {
    debug_assert!(head < nbits && nbits as usize <= words.len() * 64);
    // findfirst(A', 0): A with the bits [0, head) cleared.
    if let Some(i) = first_set_in(words, nbits, head) {
        return Some(i);
    }
    // A' == 0: findfirst(A, 0).
    first_set_in(words, nbits, 0).filter(|&i| i < head)
}

/// The first set bit in `[from, nbits)`.
fn first_set_in(words: &[u64], nbits: u32, from: u32) -> Option<u32> {
    let mut w = (from / 64) as usize;
    let last = nbits.div_ceil(64) as usize;
    if w >= last {
        return None;
    }
    let mut bits = words[w] & (!0u64 << (from % 64));
    loop {
        if bits != 0 {
            let i = w as u32 * 64 + bits.trailing_zeros();
            return (i < nbits).then_some(i);
        }
        w += 1;
        if w == last {
            return None;
        }
        bits = words[w];
    }
}

/// Whether ring position `i` is set.
#[inline]
pub fn get(words: &[u64], i: u32) -> bool {
    words[(i / 64) as usize] >> (i % 64) & 1 == 1
}

/// Sets ring position `i`.
#[inline]
pub fn set(words: &mut [u64], i: u32) {
    words[(i / 64) as usize] |= 1 << (i % 64);
}

/// Clears ring position `i`.
#[inline]
pub fn clear(words: &mut [u64], i: u32) {
    words[(i / 64) as usize] &= !(1 << (i % 64));
}

/// Whether any bit is set.
#[inline]
pub fn any(words: &[u64]) -> bool {
    words.iter().any(|w| *w != 0)
}

/// Mask of bits `[lo, hi)` of word `w` (`lo`, `hi` absolute bit positions), 0 if disjoint.
#[inline]
fn word_mask(w: usize, lo: u32, hi: u32) -> u64 {
    let base = w as u32 * 64;
    let a = lo.max(base);
    let b = hi.min(base + 64);
    if a >= b {
        return 0;
    }
    let len = b - a;
    let m = if len == 64 { !0 } else { (1u64 << len) - 1 };
    m << (a - base)
}

/// Calls `f(word_index, mask)` for each word touched by the ring range of `len` positions
/// starting at ring position `start` (len <= ring size `64 · words`).
#[inline]
fn for_ring_range(nwords: usize, start: u32, len: u32, mut f: impl FnMut(usize, u64)) {
    let size = nwords as u32 * 64;
    debug_assert!(start < size && len <= size);
    let first_end = (start + len).min(size);
    for w in (start / 64) as usize..first_end.div_ceil(64) as usize {
        f(w, word_mask(w, start, first_end));
    }
    let rest = start + len - first_end;
    for w in 0..rest.div_ceil(64) as usize {
        f(w, word_mask(w, 0, rest));
    }
}

/// Sets the ring range of `len` positions from `start`; returns how many were newly set.
pub fn set_range(words: &mut [u64], start: u32, len: u32) -> u32 {
    let mut n = 0;
    let nw = words.len();
    for_ring_range(nw, start, len, |w, m| {
        n += (m & !words[w]).count_ones();
        words[w] |= m;
    });
    n
}

/// Sets the ring range of `len` positions from `start` where `allow` is set and `deny` is
/// clear (`words |= range & allow & !deny`); `allow`/`deny` are rings of the same size.
pub fn set_range_masked(
    words: &mut [u64],
    start: u32,
    len: u32,
    allow: Option<&[u64]>,
    deny: &[u64],
) {
    let nw = words.len();
    for_ring_range(nw, start, len, |w, m| {
        let a = allow.map_or(!0, |a| a[w]);
        words[w] |= m & a & !deny[w];
    });
}

/// Clears the ring range of `len` positions from `start`.
pub fn clear_range(words: &mut [u64], start: u32, len: u32) {
    let nw = words.len();
    for_ring_range(nw, start, len, |w, m| words[w] &= !m);
}

/// Counts the set bits in the ring range of `len` positions from `start`.
pub fn count_range(words: &[u64], start: u32, len: u32) -> u32 {
    let mut n = 0;
    for_ring_range(words.len(), start, len, |w, m| {
        n += (words[w] & m).count_ones()
    });
    n
}

/// The ring rotated so that ring position `head` becomes bit 0 (the window-relative view a
/// module sees). Bits of a ring smaller than [`WindowBits`] fill its low part.
pub fn rotate_to_head(words: &[u64], head: u32) -> WindowBits {
    let nw = words.len();
    debug_assert!(nw <= WINDOW_WORDS);
    let mut out = WindowBits::default();
    debug_assert!(nw.is_power_of_two());
    let mask = nw - 1;
    let q = (head / 64) as usize;
    let r = head % 64;
    for (i, o) in out.words.iter_mut().enumerate().take(nw) {
        let lo = words[(i + q) & mask];
        *o = if r == 0 {
            lo
        } else {
            let hi = words[(i + q + 1) & mask];
            lo >> r | hi << (64 - r)
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// App. C's worked example: a 32-bit ring with bits 5 and 30 set, head 6: the answer is
    /// 30, and the naive 8-bit reduction with head 6/4 = 1 would wrongly give 5.
    #[test]
    fn app_c_find_first_example() {
        let a32 = [1u64 << 5 | 1 << 30];
        assert_eq!(find_first_after(&a32, 32, 6), Some(30));
        // The reduction A8[i] = OR(A32[4i..4i+3]) sets A8[1] and A8[7] ...
        let a8: u64 = (0..8)
            .filter(|i| a32[0] >> (4 * i) & 0xf != 0)
            .map(|i| 1u64 << i)
            .sum();
        assert_eq!(a8, 1 << 1 | 1 << 7);
        // ... and a search from head 1 in A8 lands in group 1 (segment 5): wrong.
        assert_eq!(first_set_in(&[a8], 8, 1), Some(1));
        // The trick: A'32 = A32 with bits [0, 6) cleared, reduced the same way, searched from
        // 0: group 7, whose first set bit is 30.
        let a32p = a32[0] & !((1u64 << 6) - 1);
        let a8p: u64 = (0..8)
            .filter(|i| a32p >> (4 * i) & 0xf != 0)
            .map(|i| 1u64 << i)
            .sum();
        assert_ne!(a8p, 0);
        let g = first_set_in(&[a8p], 8, 0).unwrap();
        assert_eq!(g, 7);
        assert_eq!(first_set_in(&[a32p], 32, 4 * g), Some(30));
        // Wrap-around: nothing at or after the head, so the first bit from 0.
        assert_eq!(find_first_after(&a32, 32, 31), Some(5));
        assert_eq!(find_first_after(&a32, 32, 30), Some(30));
        assert_eq!(find_first_after(&[0], 32, 3), None);
    }

    #[test]
    fn ranges_wrap_around_the_ring() {
        let mut r = [0u64; 2];
        assert_eq!(set_range(&mut r, 120, 16), 16);
        assert_eq!(r[1] >> 56, 0xff);
        assert_eq!(r[0], 0xff);
        assert_eq!(count_range(&r, 124, 8), 8);
        assert_eq!(set_range(&mut r, 126, 4), 0);
        clear_range(&mut r, 127, 3);
        assert!(!get(&r, 127) && !get(&r, 0) && !get(&r, 1) && get(&r, 2) && get(&r, 126));
        let v = rotate_to_head(&r, 120);
        assert_eq!(v.words[0], 0b1111_1100_0111_1111);
        assert_eq!(v.words[1], 0);
    }

    fn model_first(bits: &[bool], head: usize) -> Option<u32> {
        let n = bits.len();
        (0..n)
            .map(|k| (head + k) % n)
            .find(|&i| bits[i])
            .map(|i| i as u32)
    }

    proptest! {
        #[test]
        fn find_first_matches_a_linear_scan(
            words in prop::collection::vec(prop::num::u64::ANY, 4),
            sparse in prop::bool::ANY,
            nw in 1usize..=4,
            head in 0u32..256,
        ) {
            let mut w: Vec<u64> = words[..nw].to_vec();
            if sparse {
                for x in w.iter_mut() { *x &= *x >> 7 & *x >> 13; }
            }
            let n = nw as u32 * 64;
            let head = head % n;
            let bits: Vec<bool> = (0..n).map(|i| get(&w, i)).collect();
            prop_assert_eq!(find_first_after(&w, n, head), model_first(&bits, head as usize));
        }

        #[test]
        fn range_ops_match_a_bool_model(
            nw in prop::sample::select(vec![1usize, 2, 4]),
            ops in prop::collection::vec((0u8..3, 0u32..256, 0u32..=256), 1..40),
        ) {
            let n = nw as u32 * 64;
            let mut w = vec![0u64; nw];
            let mut m = vec![false; n as usize];
            for (op, start, len) in ops {
                let start = start % n;
                let len = len % (n + 1);
                let idx = |k: u32| ((start + k) % n) as usize;
                match op {
                    0 => {
                        let newly = (0..len).filter(|&k| !m[idx(k)]).count() as u32;
                        prop_assert_eq!(set_range(&mut w, start, len), newly);
                        for k in 0..len { m[idx(k)] = true; }
                    }
                    1 => {
                        clear_range(&mut w, start, len);
                        for k in 0..len { m[idx(k)] = false; }
                    }
                    _ => {
                        let c = (0..len).filter(|&k| m[idx(k)]).count() as u32;
                        prop_assert_eq!(count_range(&w, start, len), c);
                    }
                }
                for i in 0..n { prop_assert_eq!(get(&w, i), m[i as usize]); }
                let head = start;
                let v = rotate_to_head(&w, head);
                for k in 0..n { prop_assert_eq!(v.get(k), m[((head + k) % n) as usize]); }
            }
        }
    }
}
