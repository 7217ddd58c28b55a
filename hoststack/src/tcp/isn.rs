//! Initial sequence numbers per RFC 6528 (ISN = M + F(4-tuple, secret), M a 4 µs clock, F
//! SipHash-2-4 keyed with a secret, [`offload_api::wire::siphash`], which the NIC's SYN
//! cookies use too).

use super::seq::Seq;
use offload_api::wire::siphash::siphash24;

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
