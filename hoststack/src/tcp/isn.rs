//! Initial sequence numbers per RFC 6528 (ISN = M + F(4-tuple, secret), M a 4 µs clock, F
//! SipHash-2-4 keyed with a secret), and the SipHash-2-4 keyed hash itself, which the
//! SYN-cookie offload also uses (DESIGN.md "SYN cookie").

use super::seq::Seq;

/// SipHash-2-4 (Aumasson and Bernstein) of `data` with a 128-bit key.
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let _ = (key, data);
    todo!("helper: tcp-wire")
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
    pub fn isn(
        &self,
        local: ([u8; 4], u16),
        remote: ([u8; 4], u16),
        now_ns: u64,
    ) -> Seq {
        let _ = (local, remote, now_ns, &self.key);
        todo!("helper: tcp-wire")
    }
}
