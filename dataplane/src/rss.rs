//! Receive-side scaling: the Toeplitz hash NICs use to spread flows over queues, in software.
//!
//! The in-memory wire uses it to pick the receiving queue exactly as a NIC would; for DPDK
//! ports the same key is programmed into the hardware (or PMD). The *symmetric* key
//! (0x6d5a repeated, Woo & Park, "Scalable TCP Session Monitoring with Symmetric RSS") hashes
//! both directions of a flow to the same value, so one NIC lcore sees both directions.

use offload_api::wire::ipv4::{self, Ipv4Packet};
use offload_api::wire::EthernetFrame;
use offload_api::{ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_TCP, IPPROTO_UDP, IPV4_HDR_LEN};

/// The default Toeplitz key of Microsoft's RSS specification (40 bytes), used by most NICs.
pub const DEFAULT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// A 40-byte symmetric key: 0x6d5a repeated. hash(a→b) == hash(b→a) for IPv4 and ports.
pub const SYMMETRIC_KEY: [u8; 40] = {
    let mut k = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// Which key a port uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RssMode {
    /// No RSS: everything goes to queue 0.
    Off,
    /// Microsoft's default key.
    Standard,
    /// The symmetric key (both directions of a flow on one queue).
    #[default]
    Symmetric,
}

impl RssMode {
    /// The key of this mode (`None` for `Off`).
    pub fn key(self) -> Option<&'static [u8; 40]> {
        match self {
            RssMode::Off => None,
            RssMode::Standard => Some(&DEFAULT_KEY),
            RssMode::Symmetric => Some(&SYMMETRIC_KEY),
        }
    }
}

/// The Toeplitz hash of `input` under `key`.
///
/// For each set bit `i` of the input (most significant bit of byte 0 first), XOR in the 32
/// key bits starting at bit `i` of the key. Requires `key.len() >= input.len() + 4`; key bits
/// past the end read as zero.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let key_byte = |i: usize| key.get(i).copied().unwrap_or(0) as u64;
    // `window` holds key bits [8*b, 8*b + 64) for the current input byte b.
    let mut window: u64 = 0;
    for i in 0..8 {
        window = (window << 8) | key_byte(i);
    }
    let mut hash = 0u32;
    for (b, &byte) in input.iter().enumerate() {
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                hash ^= (window >> (32 - bit)) as u32;
            }
        }
        window = (window << 8) | key_byte(b + 8);
    }
    hash
}

/// The RSS input of an IPv4 flow: source address, destination address and, for TCP and UDP,
/// source and destination ports (Microsoft RSS, "IPv4 with TCP/UDP" hash types).
pub fn ipv4_input(
    src: [u8; 4],
    dst: [u8; 4],
    ports: Option<(u16, u16)>,
    out: &mut [u8; 12],
) -> usize {
    out[..4].copy_from_slice(&src);
    out[4..8].copy_from_slice(&dst);
    match ports {
        Some((sp, dp)) => {
            out[8..10].copy_from_slice(&sp.to_be_bytes());
            out[10..12].copy_from_slice(&dp.to_be_bytes());
            12
        }
        None => 8,
    }
}

/// Hashes an Ethernet frame the way an RSS NIC does: IPv4 TCP/UDP by 4-tuple, other IPv4 by
/// addresses, anything else (ARP, non-first fragments, malformed) hashes to 0.
pub fn hash_frame(key: &[u8], frame: &[u8]) -> u32 {
    if frame.len() < ETH_HDR_LEN + IPV4_HDR_LEN {
        return 0;
    }
    let eth = EthernetFrame::new_unchecked(frame);
    let ip = Ipv4Packet::new_unchecked(eth.payload());
    if eth.ethertype() != ETHERTYPE_IPV4 || ip.version() != ipv4::VERSION {
        return 0;
    }
    // The header length is not validated: a NIC hashes what the IHL says.
    let l4 = ETH_HDR_LEN + ip.header_len();
    let proto = ip.protocol();
    let ports = match frame.get(l4..l4 + 4) {
        Some(&[s0, s1, d0, d1])
            if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) && !ip.is_fragment() =>
        {
            // TCP and UDP both start with the source and destination ports (RFC 9293 §3.1,
            // RFC 768).
            Some((u16::from_be_bytes([s0, s1]), u16::from_be_bytes([d0, d1])))
        }
        _ => None,
    };
    let mut input = [0u8; 12];
    let n = ipv4_input(ip.src_addr(), ip.dst_addr(), ports, &mut input);
    toeplitz(key, &input[..n])
}

/// A redirection table: hash → queue, as NICs implement RSS (128 entries, round-robin fill).
#[derive(Clone, Debug)]
pub struct Reta {
    table: Vec<u16>,
}

impl Reta {
    /// Entries in the table (a power of two).
    pub const SIZE: usize = 128;

    /// A table spreading over `queues` queues (at least 1).
    pub fn new(queues: u16) -> Self {
        let q = queues.max(1);
        Reta {
            table: (0..Self::SIZE).map(|i| (i % q as usize) as u16).collect(),
        }
    }

    /// The queue for `hash`: the table entry indexed by the hash's low bits.
    #[inline]
    pub fn queue(&self, hash: u32) -> u16 {
        self.table[hash as usize & (Self::SIZE - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn input(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, ports: bool) -> Vec<u8> {
        let mut b = [0u8; 12];
        let n = ipv4_input(src, dst, ports.then_some((sp, dp)), &mut b);
        b[..n].to_vec()
    }

    /// Verification vectors of Microsoft's RSS specification ("Verifying the RSS Hash
    /// Calculation"), IPv4 rows.
    #[test]
    fn microsoft_verification_vectors() {
        let rows = [
            (
                [66, 9, 149, 187],
                2794,
                [161, 142, 100, 80],
                1766,
                0x323e8fc2,
                0x51ccc178,
            ),
            (
                [199, 92, 111, 2],
                14230,
                [65, 69, 140, 83],
                4739,
                0xd718262a,
                0xc626b0ea,
            ),
            (
                [24, 19, 198, 95],
                12898,
                [12, 22, 207, 184],
                38024,
                0xd2d0a5de,
                0x5c2b394a,
            ),
        ];
        for (src, sp, dst, dp, ip_only, with_ports) in rows {
            assert_eq!(
                toeplitz(&DEFAULT_KEY, &input(src, sp, dst, dp, false)),
                ip_only
            );
            assert_eq!(
                toeplitz(&DEFAULT_KEY, &input(src, sp, dst, dp, true)),
                with_ports
            );
        }
    }

    proptest! {
        #[test]
        fn symmetric_key_is_symmetric(src: [u8; 4], dst: [u8; 4], sp: u16, dp: u16) {
            let ab = toeplitz(&SYMMETRIC_KEY, &input(src, sp, dst, dp, true));
            let ba = toeplitz(&SYMMETRIC_KEY, &input(dst, dp, src, sp, true));
            prop_assert_eq!(ab, ba);
        }

        #[test]
        fn reta_stays_in_range(hash: u32, queues in 1u16..64) {
            prop_assert!(Reta::new(queues).queue(hash) < queues);
        }

        #[test]
        fn hash_frame_never_panics(frame in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = hash_frame(&DEFAULT_KEY, &frame);
        }
    }

    #[test]
    fn reta_spreads_evenly() {
        let reta = Reta::new(4);
        let mut counts = [0; 4];
        for h in 0..Reta::SIZE as u32 {
            counts[reta.queue(h) as usize] += 1;
        }
        assert_eq!(counts, [32; 4]);
    }
}
