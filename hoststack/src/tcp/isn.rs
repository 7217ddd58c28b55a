//! Initial sequence numbers per RFC 6528 (ISN = M + F(4-tuple, secret), M a 4 µs clock, F
//! SipHash-2-4 keyed with a secret), and the SipHash-2-4 keyed hash itself, which the
//! SYN-cookie offload also uses (DESIGN.md "SYN cookie").

use super::seq::Seq;

/// SipHash-2-4 (Aumasson and Bernstein) of `data` with a 128-bit key.
///
/// The key is read as two little-endian 64-bit words k0 = key[0..8], k1 = key[8..16]; the
/// message as little-endian 64-bit words, the last one padded with zeros and carrying
/// `data.len() mod 256` in its top byte; 2 SipRounds per word and 4 in finalization. The
/// result is the 64-bit output as a number (the reference implementation writes it out
/// little-endian). Constant time in the contents of `data`; no allocation.
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let (k0, k1) = key.split_at(8);
    let k0 = u64::from_le_bytes([k0[0], k0[1], k0[2], k0[3], k0[4], k0[5], k0[6], k0[7]]);
    let k1 = u64::from_le_bytes([k1[0], k1[1], k1[2], k1[3], k1[4], k1[5], k1[6], k1[7]]);
    let mut v = SipState {
        v0: k0 ^ 0x736f_6d65_7073_6575, // "somepseu"
        v1: k1 ^ 0x646f_7261_6e64_6f6d, // "dorandom"
        v2: k0 ^ 0x6c79_6765_6e65_7261, // "lygenera"
        v3: k1 ^ 0x7465_6462_7974_6573, // "tedbytes"
    };
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        v.compress(u64::from_le_bytes([
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
        ]));
    }
    let rem = words.remainder();
    let mut last = [0u8; 8];
    last[..rem.len()].copy_from_slice(rem);
    last[7] = data.len() as u8;
    v.compress(u64::from_le_bytes(last));
    v.v2 ^= 0xff;
    for _ in 0..4 {
        v.round();
    }
    v.v0 ^ v.v1 ^ v.v2 ^ v.v3
}

/// The four 64-bit words of SipHash's internal state.
struct SipState {
    v0: u64,
    v1: u64,
    v2: u64,
    v3: u64,
}

impl SipState {
    /// One SipRound (the ARX network of the SipHash paper, §2).
    #[inline(always)]
    fn round(&mut self) {
        self.v0 = self.v0.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(13);
        self.v1 ^= self.v0;
        self.v0 = self.v0.rotate_left(32);
        self.v2 = self.v2.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(16);
        self.v3 ^= self.v2;
        self.v0 = self.v0.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(21);
        self.v3 ^= self.v0;
        self.v2 = self.v2.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(17);
        self.v1 ^= self.v2;
        self.v2 = self.v2.rotate_left(32);
    }

    /// Absorbs one message word with c = 2 SipRounds.
    #[inline(always)]
    fn compress(&mut self, m: u64) {
        self.v3 ^= m;
        self.round();
        self.round();
        self.v0 ^= m;
    }
}

/// RFC 6528 ISN generator.
#[derive(Clone, Debug)]
pub struct IsnGenerator {
    key: [u8; 16],
}

impl IsnGenerator {
    /// A generator with secret `key` (take it from a good random source at start).
    pub fn new(key: [u8; 16]) -> Self {
        IsnGenerator { key }
    }

    /// The ISN for a connection at `now_ns`: the 4 µs clock plus the keyed hash of
    /// (local ip, local port, remote ip, remote port).
    ///
    /// RFC 6528 §3: ISN = M + F(localip, localport, remoteip, remoteport, secretkey), with M =
    /// `now_ns / 4000` truncated to 32 bits (wrapping about every 4.77 hours) and F the low 32
    /// bits of SipHash-2-4 keyed with the secret over the 12 bytes `local ip ‖ local port ‖
    /// remote ip ‖ remote port` (ports big-endian). The sum wraps modulo 2^32, so ISNs of one
    /// 4-tuple increase with time, and those of different 4-tuples are unpredictable.
    pub fn isn(&self, local: ([u8; 4], u16), remote: ([u8; 4], u16), now_ns: u64) -> Seq {
        let m = (now_ns / 4000) as u32;
        let f = siphash24(&self.key, &tuple_bytes(local, remote)) as u32;
        Seq(m.wrapping_add(f))
    }
}

/// The 12-byte hash input for a 4-tuple: local ip, local port, remote ip, remote port, in
/// network byte order.
#[inline]
fn tuple_bytes(local: ([u8; 4], u16), remote: ([u8; 4], u16)) -> [u8; 12] {
    let [lp0, lp1] = local.1.to_be_bytes();
    let [rp0, rp1] = remote.1.to_be_bytes();
    let (l, r) = (local.0, remote.0);
    [
        l[0], l[1], l[2], l[3], lp0, lp1, r[0], r[1], r[2], r[3], rp0, rp1,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference key 00 01 .. 0f.
    fn ref_key() -> [u8; 16] {
        std::array::from_fn(|i| i as u8)
    }

    /// Message 00 01 .. (n-1).
    fn ref_msg(n: usize) -> Vec<u8> {
        (0..n).map(|i| i as u8).collect()
    }

    #[test]
    fn siphash_paper_vectors() {
        let k = ref_key();
        assert_eq!(siphash24(&k, &ref_msg(0)), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash24(&k, &ref_msg(1)), 0x74f8_39c5_93dc_67fd);
        // The worked example of the paper's Appendix A.
        assert_eq!(siphash24(&k, &ref_msg(15)), 0xa129_ca61_49be_45e5);
    }

    /// `vectors_sip64` of the reference implementation (veorq/SipHash `vectors.h`): output for
    /// message length i, as the little-endian bytes the reference writes.
    #[rustfmt::skip]
    const SIP64: [[u8; 8]; 64] = [
        [0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72],
        [0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74],
        [0x5a, 0x4f, 0xa9, 0xd9, 0x09, 0x80, 0x6c, 0x0d],
        [0x2d, 0x7e, 0xfb, 0xd7, 0x96, 0x66, 0x67, 0x85],
        [0xb7, 0x87, 0x71, 0x27, 0xe0, 0x94, 0x27, 0xcf],
        [0x8d, 0xa6, 0x99, 0xcd, 0x64, 0x55, 0x76, 0x18],
        [0xce, 0xe3, 0xfe, 0x58, 0x6e, 0x46, 0xc9, 0xcb],
        [0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab],
        [0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93],
        [0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e],
        [0xf3, 0xb9, 0xdd, 0x94, 0xc5, 0xbb, 0x5d, 0x7a],
        [0xa7, 0xad, 0x6b, 0x22, 0x46, 0x2f, 0xb3, 0xf4],
        [0xfb, 0xe5, 0x0e, 0x86, 0xbc, 0x8f, 0x1e, 0x75],
        [0x90, 0x3d, 0x84, 0xc0, 0x27, 0x56, 0xea, 0x14],
        [0xee, 0xf2, 0x7a, 0x8e, 0x90, 0xca, 0x23, 0xf7],
        [0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1],
        [0xdb, 0x9b, 0xc2, 0x57, 0x7f, 0xcc, 0x2a, 0x3f],
        [0x94, 0x47, 0xbe, 0x2c, 0xf5, 0xe9, 0x9a, 0x69],
        [0x9c, 0xd3, 0x8d, 0x96, 0xf0, 0xb3, 0xc1, 0x4b],
        [0xbd, 0x61, 0x79, 0xa7, 0x1d, 0xc9, 0x6d, 0xbb],
        [0x98, 0xee, 0xa2, 0x1a, 0xf2, 0x5c, 0xd6, 0xbe],
        [0xc7, 0x67, 0x3b, 0x2e, 0xb0, 0xcb, 0xf2, 0xd0],
        [0x88, 0x3e, 0xa3, 0xe3, 0x95, 0x67, 0x53, 0x93],
        [0xc8, 0xce, 0x5c, 0xcd, 0x8c, 0x03, 0x0c, 0xa8],
        [0x94, 0xaf, 0x49, 0xf6, 0xc6, 0x50, 0xad, 0xb8],
        [0xea, 0xb8, 0x85, 0x8a, 0xde, 0x92, 0xe1, 0xbc],
        [0xf3, 0x15, 0xbb, 0x5b, 0xb8, 0x35, 0xd8, 0x17],
        [0xad, 0xcf, 0x6b, 0x07, 0x63, 0x61, 0x2e, 0x2f],
        [0xa5, 0xc9, 0x1d, 0xa7, 0xac, 0xaa, 0x4d, 0xde],
        [0x71, 0x65, 0x95, 0x87, 0x66, 0x50, 0xa2, 0xa6],
        [0x28, 0xef, 0x49, 0x5c, 0x53, 0xa3, 0x87, 0xad],
        [0x42, 0xc3, 0x41, 0xd8, 0xfa, 0x92, 0xd8, 0x32],
        [0xce, 0x7c, 0xf2, 0x72, 0x2f, 0x51, 0x27, 0x71],
        [0xe3, 0x78, 0x59, 0xf9, 0x46, 0x23, 0xf3, 0xa7],
        [0x38, 0x12, 0x05, 0xbb, 0x1a, 0xb0, 0xe0, 0x12],
        [0xae, 0x97, 0xa1, 0x0f, 0xd4, 0x34, 0xe0, 0x15],
        [0xb4, 0xa3, 0x15, 0x08, 0xbe, 0xff, 0x4d, 0x31],
        [0x81, 0x39, 0x62, 0x29, 0xf0, 0x90, 0x79, 0x02],
        [0x4d, 0x0c, 0xf4, 0x9e, 0xe5, 0xd4, 0xdc, 0xca],
        [0x5c, 0x73, 0x33, 0x6a, 0x76, 0xd8, 0xbf, 0x9a],
        [0xd0, 0xa7, 0x04, 0x53, 0x6b, 0xa9, 0x3e, 0x0e],
        [0x92, 0x59, 0x58, 0xfc, 0xd6, 0x42, 0x0c, 0xad],
        [0xa9, 0x15, 0xc2, 0x9b, 0xc8, 0x06, 0x73, 0x18],
        [0x95, 0x2b, 0x79, 0xf3, 0xbc, 0x0a, 0xa6, 0xd4],
        [0xf2, 0x1d, 0xf2, 0xe4, 0x1d, 0x45, 0x35, 0xf9],
        [0x87, 0x57, 0x75, 0x19, 0x04, 0x8f, 0x53, 0xa9],
        [0x10, 0xa5, 0x6c, 0xf5, 0xdf, 0xcd, 0x9a, 0xdb],
        [0xeb, 0x75, 0x09, 0x5c, 0xcd, 0x98, 0x6c, 0xd0],
        [0x51, 0xa9, 0xcb, 0x9e, 0xcb, 0xa3, 0x12, 0xe6],
        [0x96, 0xaf, 0xad, 0xfc, 0x2c, 0xe6, 0x66, 0xc7],
        [0x72, 0xfe, 0x52, 0x97, 0x5a, 0x43, 0x64, 0xee],
        [0x5a, 0x16, 0x45, 0xb2, 0x76, 0xd5, 0x92, 0xa1],
        [0xb2, 0x74, 0xcb, 0x8e, 0xbf, 0x87, 0x87, 0x0a],
        [0x6f, 0x9b, 0xb4, 0x20, 0x3d, 0xe7, 0xb3, 0x81],
        [0xea, 0xec, 0xb2, 0xa3, 0x0b, 0x22, 0xa8, 0x7f],
        [0x99, 0x24, 0xa4, 0x3c, 0xc1, 0x31, 0x57, 0x24],
        [0xbd, 0x83, 0x8d, 0x3a, 0xaf, 0xbf, 0x8d, 0xb7],
        [0x0b, 0x1a, 0x2a, 0x32, 0x65, 0xd5, 0x1a, 0xea],
        [0x13, 0x50, 0x79, 0xa3, 0x23, 0x1c, 0xe6, 0x60],
        [0x93, 0x2b, 0x28, 0x46, 0xe4, 0xd7, 0x06, 0x66],
        [0xe1, 0x91, 0x5f, 0x5c, 0xb1, 0xec, 0xa4, 0x6c],
        [0xf3, 0x25, 0x96, 0x5c, 0xa1, 0x6d, 0x62, 0x9f],
        [0x57, 0x5f, 0xf2, 0x8e, 0x60, 0x38, 0x1b, 0xe5],
        [0x72, 0x45, 0x06, 0xeb, 0x4c, 0x32, 0x8a, 0x95],
    ];

    #[test]
    fn siphash_reference_vectors() {
        let k = ref_key();
        for (n, want) in SIP64.iter().enumerate() {
            assert_eq!(
                siphash24(&k, &ref_msg(n)),
                u64::from_le_bytes(*want),
                "length {n}"
            );
        }
    }

    /// SipHash-2-4 as the standard library computes it (`std::hash::SipHasher` is SipHash-2-4;
    /// deprecated only as a `Hasher` recommendation), as an independent implementation.
    #[allow(deprecated)]
    fn std_siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
        use std::hash::Hasher;
        let k0 = u64::from_le_bytes(key[..8].try_into().unwrap());
        let k1 = u64::from_le_bytes(key[8..].try_into().unwrap());
        let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
        h.write(data);
        h.finish()
    }

    #[test]
    fn isn_is_clock_plus_hash() {
        let key = [7u8; 16];
        let g = IsnGenerator::new(key);
        let local = ([10, 0, 0, 1], 80);
        let remote = ([10, 0, 0, 2], 40000);
        let f = siphash24(&key, &[10, 0, 0, 1, 0, 80, 10, 0, 0, 2, 0x9c, 0x40]) as u32;
        assert_eq!(g.isn(local, remote, 0), Seq(f));
        // 4 µs ticks: 3,999 ns is still tick 0, 4,000 ns is tick 1.
        assert_eq!(g.isn(local, remote, 3_999), Seq(f));
        assert_eq!(g.isn(local, remote, 4_000), Seq(f.wrapping_add(1)));
        assert_eq!(g.isn(local, remote, 1_000_000), Seq(f.wrapping_add(250)));
        // M wraps after 2^32 ticks.
        let wrap = (1u64 << 32) * 4000;
        assert_eq!(g.isn(local, remote, wrap + 8_000), Seq(f.wrapping_add(2)));
        // Swapping the ends, changing a port, or changing the key changes F.
        assert_ne!(g.isn(remote, local, 0), Seq(f));
        assert_ne!(g.isn(local, ([10, 0, 0, 2], 40001), 0), Seq(f));
        assert_ne!(IsnGenerator::new([8u8; 16]).isn(local, remote, 0), Seq(f));
    }

    proptest! {
        #[test]
        fn siphash_matches_std(
            key: [u8; 16],
            data in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            prop_assert_eq!(siphash24(&key, &data), std_siphash24(&key, &data));
        }

        #[test]
        fn isn_advances_with_the_clock(
            key: [u8; 16],
            lip: [u8; 4], lport: u16, rip: [u8; 4], rport: u16,
            t0 in 0u64..(1 << 60),
            dt in 0u64..(1 << 40),
        ) {
            let g = IsnGenerator::new(key);
            let a = g.isn((lip, lport), (rip, rport), t0);
            let b = g.isn((lip, lport), (rip, rport), t0 + dt);
            let ticks = ((t0 + dt) / 4000).wrapping_sub(t0 / 4000) as u32;
            prop_assert_eq!(b.0.wrapping_sub(a.0), ticks);
        }
    }
}
