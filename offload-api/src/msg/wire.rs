//! Field encodings shared by the message views: big-endian integers, addresses, the 4-tuple.

/// An Ethernet MAC address (defined in [`crate::wire::ethernet`]).
pub use crate::wire::ethernet::MacAddr;

/// A TCP connection's 4-tuple as seen from the side that owns it (the host, or the NIC on
/// its behalf): `local` is our address, `remote` the peer's. Field names match the host
/// stack's `Endpoints`.
///
/// On the wire (12 bytes): local IPv4 address (4), remote IPv4 address (4), local port (2),
/// remote port (2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// Our IPv4 address.
    pub local_ip: [u8; 4],
    /// Our port.
    pub local_port: u16,
    /// The peer's IPv4 address.
    pub remote_ip: [u8; 4],
    /// The peer's port.
    pub remote_port: u16,
}

impl FourTuple {
    /// Bytes on the wire.
    pub const WIRE_LEN: usize = 12;

    /// The same connection seen from the other end (local and remote swapped).
    pub fn reversed(self) -> FourTuple {
        FourTuple {
            local_ip: self.remote_ip,
            local_port: self.remote_port,
            remote_ip: self.local_ip,
            remote_port: self.local_port,
        }
    }
}

/// A fixed-size field of a message header. `read` and `write` panic when `b` is shorter than
/// `SIZE`; the views only call them at offsets inside a length-checked header.
pub(crate) trait Field: Sized {
    /// Bytes on the wire.
    const SIZE: usize;
    /// Decodes from the first `SIZE` bytes of `b`.
    fn read(b: &[u8]) -> Self;
    /// Encodes into the first `SIZE` bytes of `b`.
    fn write(&self, b: &mut [u8]);
}

/// Copies the first `N` bytes of `b` into an array.
pub(crate) fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                <$t>::from_be_bytes(array(b))
            }
            fn write(&self, b: &mut [u8]) {
                b[..Self::SIZE].copy_from_slice(&self.to_be_bytes());
            }
        }
    )*};
}
int_field!(u8, u16, u32, u64);

impl<const N: usize> Field for [u8; N] {
    const SIZE: usize = N;
    fn read(b: &[u8]) -> Self {
        array(b)
    }
    fn write(&self, b: &mut [u8]) {
        b[..N].copy_from_slice(self);
    }
}

impl Field for FourTuple {
    const SIZE: usize = FourTuple::WIRE_LEN;
    fn read(b: &[u8]) -> Self {
        FourTuple {
            local_ip: array(&b[0..]),
            remote_ip: array(&b[4..]),
            local_port: u16::read(&b[8..]),
            remote_port: u16::read(&b[10..]),
        }
    }
    fn write(&self, b: &mut [u8]) {
        self.local_ip.write(&mut b[0..]);
        self.remote_ip.write(&mut b[4..]);
        self.local_port.write(&mut b[8..]);
        self.remote_port.write(&mut b[10..]);
    }
}

/// Flag byte for the three TCP option features (window scale, SACK, timestamps).
pub(crate) fn flags(wscale: bool, sack: bool, timestamps: bool) -> u8 {
    let mut f = 0;
    if wscale {
        f |= super::FLAG_WSCALE;
    }
    if sack {
        f |= super::FLAG_SACK;
    }
    if timestamps {
        f |= super::FLAG_TIMESTAMPS;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_tuple_layout() {
        let t = FourTuple {
            local_ip: [10, 0, 0, 1],
            local_port: 0x1234,
            remote_ip: [10, 0, 0, 2],
            remote_port: 0xABCD,
        };
        let mut b = [0u8; 12];
        t.write(&mut b);
        assert_eq!(b, [10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0xAB, 0xCD]);
        assert_eq!(FourTuple::read(&b), t);
        assert_eq!(t.reversed().reversed(), t);
        assert_eq!(t.reversed().local_port, 0xABCD);
    }

    #[test]
    fn integers_are_big_endian() {
        let mut b = [0u8; 8];
        0x0102_0304_0506_0708u64.write(&mut b);
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(u32::read(&b), 0x0102_0304);
        assert_eq!(u16::read(&b[6..]), 0x0708);
    }
}
