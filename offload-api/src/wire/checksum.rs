//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624): the one
//! implementation both sides use, for IPv4 headers, TCP, UDP and ICMP.
//!
//! Arithmetic model: the checksum is the one's complement of the one's-complement sum of the
//! covered data taken as big-endian 16-bit words, an odd final byte padded with a zero byte
//! (RFC 1071 §1). Partial sums are carried in a `u64` accumulator ("acc") that callers may
//! chain across several slices with [`add_bytes`]; only [`fold`] reduces it to 16 bits.
//! Chaining is exact only when every slice but the last has an even length (RFC 1071 §2(A):
//! byte positions must keep their parity).

/// Adds `data` (big-endian 16-bit words, odd tail byte padded with zero) to the
/// one's-complement accumulator `acc` and returns the new accumulator (RFC 1071 §4.1).
///
/// Fast path: the bytes are summed as little-endian 32-bit words into eight 64-bit lanes
/// (vectorisable; a lane overflows only after 2^32 additions, far beyond any frame), folded
/// to 16 bits and byte-swapped back, which RFC 1071 §2(B) (byte-order independence) makes
/// exact.
///
/// Invariant: `fold(add_bytes(acc, d)) == fold(acc) +' sum16(d)` in one's-complement
/// arithmetic, for any `acc` and any `d`.
#[inline]
pub fn add_bytes(acc: u64, data: &[u8]) -> u64 {
    let mut lanes = [0u64; 8];
    let mut chunks = data.chunks_exact(32);
    for c in &mut chunks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = [c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]];
            *lane += u32::from_le_bytes(w) as u64;
        }
    }
    let mut sum = lanes.iter().sum::<u64>();
    let rest = chunks.remainder();
    let mut words = rest.chunks_exact(4);
    for w in &mut words {
        sum += u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let tail = words.remainder();
    let mut i = 0;
    if tail.len() >= 2 {
        sum += u16::from_le_bytes([tail[0], tail[1]]) as u64;
        i = 2;
    }
    if i < tail.len() {
        sum += tail[i] as u64; // the high byte of a big-endian word, in the swapped domain
    }
    let local = fold(sum).swap_bytes() as u64;
    let (s, carry) = acc.overflowing_add(local);
    s + carry as u64
}

/// Folds a one's-complement accumulator to 16 bits with end-around carries (RFC 1071 §4.1).
///
/// Invariant: the result is congruent to `acc` modulo 0xffff, and it is 0 only when `acc` is 0.
#[inline]
pub fn fold(acc: u64) -> u16 {
    let mut s = (acc >> 32) + (acc & 0xffff_ffff);
    s = (s >> 32) + (s & 0xffff_ffff);
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    s as u16
}

/// [`fold`] of a sum below 2³² (two end-around carries suffice): what the incremental
/// updates with pre-folded deltas need (RFC 1624).
#[inline(always)]
pub fn fold_small(acc: u64) -> u16 {
    debug_assert!(acc < 1 << 32);
    let mut s = (acc >> 16) + (acc & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    s as u16
}

/// The Internet checksum of `data`: the one's complement of its one's-complement sum
/// (RFC 1071). Storing it in a zeroed checksum field makes [`verify`] of the data true.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(add_bytes(0, data))
}

/// True when `data`, checksum field included, sums to 0xffff (all ones), i.e. its stored
/// Internet checksum is valid (RFC 1071 §1, "checking the checksum").
#[inline]
pub fn verify(data: &[u8]) -> bool {
    fold(add_bytes(0, data)) == 0xffff
}

/// True when the 20-byte IPv4 header `h` (no options) carries a valid header checksum
/// (RFC 791 §3.1). Straight-line fast path of [`verify`] for the per-packet check:
/// [`ipv4_header20_words`] is non-zero and [`is_multiple_of_ffff`].
///
/// Why a remainder works: the one's-complement sum folds to 0xffff exactly when the plain
/// integer sum of the 16-bit words is a non-zero multiple of 0xffff (end-around carry is
/// addition modulo 0xffff). Summing 32-bit words instead changes nothing modulo 0xffff
/// (2^16 ≡ 1), nor does reading them little-endian (a byte swap multiplies by 2^8, which is
/// invertible modulo 0xffff). So one multiplication replaces the five fold steps.
#[inline(always)]
pub fn verify_ipv4_header20(h: &[u8; 20]) -> bool {
    let sum = ipv4_header20_words(h);
    sum != 0 && is_multiple_of_ffff(sum)
}

/// The integer sum of the five 32-bit words of the 20-byte IPv4 header `h`, read
/// little-endian: congruent modulo 0xffff to its one's-complement sum (see
/// [`verify_ipv4_header20`]), and zero only for an all-zero header.
#[inline(always)]
pub fn ipv4_header20_words(h: &[u8; 20]) -> u64 {
    let w = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as u64;
    w(0) + w(4) + w(8) + w(12) + w(16)
}

/// True when `sum` is a multiple of 0xffff (zero included), tested without a division:
/// multiplied by 0xffff's inverse modulo 2^64, the multiples, and only they, give at most
/// (2^64 − 1) / 0xffff (Granlund and Montgomery, "Division by invariant integers using
/// multiplication", PLDI 1994, §9).
#[inline(always)]
pub fn is_multiple_of_ffff(sum: u64) -> bool {
    /// 0xffff's inverse modulo 2^64.
    const INV_FFFF: u64 = 0xfffe_fffe_fffe_ffff;
    const MAX_Q: u64 = u64::MAX / 0xffff;
    sum.wrapping_mul(INV_FFFF) <= MAX_Q
}

/// The accumulator of the IPv4 pseudo-header used by TCP and UDP checksums: source and
/// destination address, zero, protocol and the L4 length (RFC 9293 §3.1, RFC 768).
///
/// Invariant: `fold(add_bytes(pseudo_header_sum(..), l4))` is the TCP/UDP one's-complement sum.
#[inline]
pub fn pseudo_header_sum(src: [u8; 4], dst: [u8; 4], proto: u8, l4_len: u16) -> u64 {
    u32::from_be_bytes(src) as u64 + u32::from_be_bytes(dst) as u64 + proto as u64 + l4_len as u64
}

/// The TCP or UDP checksum of `l4` (header with a zeroed checksum field, plus payload) under
/// the IPv4 pseudo-header (RFC 9293 §3.1, RFC 768). For UDP a result of 0 must be sent as
/// 0xffff (RFC 768); [`fill_checksums`] does that.
#[inline]
pub fn l4_checksum(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> u16 {
    let acc = pseudo_header_sum(src, dst, proto, l4.len() as u16);
    !fold(add_bytes(acc, l4))
}

/// True when the TCP/UDP segment `l4` carries a valid checksum under the IPv4 pseudo-header.
#[inline]
pub fn verify_l4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> bool {
    let acc = pseudo_header_sum(src, dst, proto, l4.len() as u16);
    fold(add_bytes(acc, l4)) == 0xffff
}

/// Incrementally updates checksum `old_csum` after one 16-bit word of the covered data changed
/// from `old_word` to `new_word`: `HC' = ~(~HC + ~m + m')` (RFC 1624 §3, eqn. 3), which unlike
/// RFC 1141's formula never produces the wrong zero.
///
/// Invariant: equals a full recomputation over the new data unless the new data is all zero:
/// then it gives 0x0000 where a recomputation gives 0xffff, and only the latter passes
/// [`verify`] (RFC 1624 §3 discusses this corner; real headers are never all zero).
#[inline]
pub fn update16(old_csum: u16, old_word: u16, new_word: u16) -> u16 {
    let s = (!old_csum) as u64 + (!old_word) as u64 + new_word as u64;
    !fold(s)
}

/// [`update16`] for a 32-bit field (an IPv4 address, a TCP sequence number): both halves are
/// updated in one step (RFC 1624 §3).
#[inline]
pub fn update32(old_csum: u16, old: u32, new: u32) -> u16 {
    let s = (!old_csum) as u64
        + (!(old >> 16) as u16) as u64
        + (!(old as u16)) as u64
        + (new >> 16) as u64
        + (new & 0xffff) as u64;
    !fold(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Stores the IPv4 header checksum of `h` in place (RFC 791 §3.1).
    fn fill_ipv4_header(h: &mut [u8]) {
        h[10] = 0;
        h[11] = 0;
        let c = checksum(h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }

    /// RFC 1071 reference: 16 bits at a time, 32-bit accumulator folded as it goes.
    fn naive_sum(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        let mut i = 0;
        while i + 1 < data.len() {
            s += u16::from_be_bytes([data[i], data[i + 1]]) as u32;
            s = (s & 0xffff) + (s >> 16);
            i += 2;
        }
        if i < data.len() {
            s += (data[i] as u32) << 8;
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(add_bytes(0, &d)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn known_ipv4_header() {
        // A classic example header (Wikipedia "IPv4 header checksum"): checksum b861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        fill_ipv4_header(&mut h);
        assert_eq!(&h[10..12], &[0xb8, 0x61]);
        assert!(verify(&h));
    }

    #[test]
    fn empty_and_single_byte() {
        assert_eq!(checksum(&[]), 0xffff);
        assert_eq!(fold(add_bytes(0, &[0xab])), 0xab00);
    }

    #[test]
    fn fold_of_large_accumulator() {
        assert_eq!(fold(u64::MAX), 0xffff);
        assert_eq!(fold(0x1_0000), 1);
        assert_eq!(fold(0), 0);
    }

    #[test]
    fn update16_all_zero_corner() {
        // Data 0x0001 with its checksum 0xfffe; the word becomes 0: all-zero data.
        let c = update16(checksum(&[0, 1]), 0x0001, 0x0000);
        assert_eq!(c, 0x0000);
        assert_eq!(checksum(&[0, 0]), 0xffff);
        assert!(verify(&[0, 0, 0xff, 0xff]));
        assert!(!verify(&[0, 0, 0, 0]));
    }

    #[test]
    fn update16_matches_rfc1624_example() {
        // RFC 1624 §4: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives HC' = 0x0000.
        assert_eq!(update16(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    proptest! {
        #[test]
        fn sum_matches_naive(data in proptest::collection::vec(any::<u8>(), 0..1600)) {
            prop_assert_eq!(fold(add_bytes(0, &data)), naive_sum(&data));
        }

        #[test]
        fn chained_even_slices_match_whole(
            data in proptest::collection::vec(any::<u8>(), 0..600),
            cut in 0usize..300,
            init in any::<u64>(),
        ) {
            let cut = (cut * 2).min(data.len() & !1);
            let whole = fold(add_bytes(init, &data));
            let chained = fold(add_bytes(add_bytes(init, &data[..cut]), &data[cut..]));
            prop_assert_eq!(whole, chained);
        }

        #[test]
        fn header20_fast_path_accepts_filled_and_refuses_flipped(
            mut h in any::<[u8; 20]>(),
            bit in 0usize..160,
        ) {
            fill_ipv4_header(&mut h);
            prop_assert!(verify_ipv4_header20(&h) && verify(&h));
            h[bit / 8] ^= 1 << (bit % 8);
            prop_assert_eq!(verify_ipv4_header20(&h), verify(&h));
        }

        #[test]
        fn header20_fast_path_matches(h in any::<[u8; 20]>()) {
            prop_assert_eq!(verify_ipv4_header20(&h), verify(&h));
        }

        #[test]
        fn multiple_of_ffff_matches_the_remainder(x in any::<u64>(), k in 0u64..(u64::MAX / 0xffff)) {
            prop_assert_eq!(is_multiple_of_ffff(x), x % 0xffff == 0);
            prop_assert!(is_multiple_of_ffff(k * 0xffff));
        }

        #[test]
        fn filled_checksum_verifies(mut data in proptest::collection::vec(any::<u8>(), 2..301)) {
            // Put the checksum in the first word of the data and check the whole.
            data[0] = 0;
            data[1] = 0;
            let c = checksum(&data);
            data[..2].copy_from_slice(&c.to_be_bytes());
            prop_assert!(verify(&data));
        }

        #[test]
        fn incremental_equals_recompute(
            mut data in proptest::collection::vec(any::<u8>(), 4..200),
            idx in any::<prop::sample::Index>(),
            new in any::<u16>(),
            new32 in any::<u32>(),
        ) {
            // Word 0 holds the checksum; change another aligned word (or two for update32).
            let words = data.len() / 2;
            prop_assume!(words >= 3);
            data[0] = 0;
            data[1] = 0;
            let c = checksum(&data);
            let w = 1 + idx.index(words - 2);
            let old = u16::from_be_bytes([data[2 * w], data[2 * w + 1]]);
            data[2 * w..2 * w + 2].copy_from_slice(&new.to_be_bytes());
            let inc = update16(c, old, new);
            let full = checksum(&data);
            if data.iter().any(|&b| b != 0) {
                prop_assert_eq!(inc, full);
            } else {
                prop_assert_eq!((inc, full), (0, 0xffff));
            }
            // 32-bit variant on words w..w+2 when they fit.
            if 2 * w + 4 <= data.len() {
                let c = checksum(&data);
                let old32 = u32::from_be_bytes([
                    data[2 * w], data[2 * w + 1], data[2 * w + 2], data[2 * w + 3],
                ]);
                data[2 * w..2 * w + 4].copy_from_slice(&new32.to_be_bytes());
                let inc = update32(c, old32, new32);
                if data.iter().any(|&b| b != 0) {
                    prop_assert_eq!(inc, checksum(&data));
                    data[..2].copy_from_slice(&inc.to_be_bytes());
                    prop_assert!(verify(&data));
                }
            }
        }
    }
}
