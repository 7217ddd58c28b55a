//! Ethernet II frames (RFC 894; IEEE 802.3 §3.2.6, the Length/Type field read as an
//! EtherType): destination and source MAC addresses, the EtherType, then the payload. No VLAN
//! tag and no FCS: the link and the ports hand frames over without them.
//!
//! Two levels, as in smoltcp's `wire` module and [`super::tcp`]:
//! - [`EthernetFrame`], a zero-copy view over a frame's bytes with the header's byte ranges
//!   in [`field`], getters and setters;
//! - [`EthernetRepr`], the header's fields, read with [`EthernetRepr::parse`] and written with
//!   [`EthernetRepr::emit`].
//!
//! The EtherTypes of the ordinary protocols are here ([`ETHERTYPE_IPV4`], [`ETHERTYPE_ARP`]);
//! those of the host ↔ NIC messages (AccelTCP App. A) are at the crate root.

use super::bytes;

/// Byte positions of the Ethernet II header (RFC 894 "Frame Format"), from the start of the
/// frame.
pub mod field {
    /// A byte range of the header.
    pub type Field = core::ops::Range<usize>;

    /// Destination MAC address.
    pub const DESTINATION: Field = 0..6;
    /// Source MAC address.
    pub const SOURCE: Field = 6..12;
    /// EtherType (RFC 894; IEEE 802.3 §3.2.6 values of 0x0600 and above).
    pub const ETHERTYPE: Field = 12..14;
    /// Where the payload starts (and the header ends).
    pub const PAYLOAD: usize = 14;
}

/// Length of an Ethernet II header: destination, source, EtherType; no VLAN tag (RFC 894).
pub const HEADER_LEN: usize = field::PAYLOAD;

/// EtherType of an IPv4 packet (RFC 894): crosses the host ↔ NIC link unchanged.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of an ARP packet (RFC 826).
pub const ETHERTYPE_ARP: u16 = 0x0806;

/// A MAC address (IEEE 802), transmitted first octet first.
pub type MacAddr = [u8; 6];

/// The broadcast MAC address (IEEE 802.3 §3.2.3: all ones).
pub const BROADCAST: MacAddr = [0xff; 6];

/// True when `mac` is a group (multicast or broadcast) address: the I/G bit, the least
/// significant bit of the first octet, is set (IEEE 802.3 §3.2.3).
#[inline(always)]
pub const fn is_group(mac: &MacAddr) -> bool {
    mac[0] & 1 != 0
}

/// Why bytes are not an Ethernet frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EthernetError {
    /// Shorter than the 14-byte header.
    #[error("frame shorter than the Ethernet header")]
    Truncated,
}

/// An Ethernet II frame's bytes (header and payload, to the end of the buffer), read and
/// written in place.
///
/// Invariant: a view made by [`EthernetFrame::new_checked`] holds at least [`HEADER_LEN`]
/// bytes, so no accessor panics. On a view made by [`EthernetFrame::new_unchecked`] the
/// accessors panic when the buffer is shorter than the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// A view with no length check (see the type's invariant).
    #[inline(always)]
    pub const fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// A view after [`EthernetFrame::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>, EthernetError> {
        let f = EthernetFrame::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// [`EthernetError::Truncated`] when the buffer is shorter than [`HEADER_LEN`].
    #[inline(always)]
    pub fn check_len(&self) -> Result<(), EthernetError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(EthernetError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The underlying buffer.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination MAC address.
    #[inline(always)]
    pub fn dst_addr(&self) -> MacAddr {
        bytes(self.buffer.as_ref(), field::DESTINATION.start)
    }

    /// The source MAC address.
    #[inline(always)]
    pub fn src_addr(&self) -> MacAddr {
        bytes(self.buffer.as_ref(), field::SOURCE.start)
    }

    /// The EtherType.
    #[inline(always)]
    pub fn ethertype(&self) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[field::ETHERTYPE.start], b[field::ETHERTYPE.start + 1]])
    }

    /// The payload: everything after the header (Ethernet padding included).
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<'a> EthernetFrame<&'a [u8]> {
    /// The payload, borrowed for as long as the buffer.
    #[inline(always)]
    pub fn payload_slice(&self) -> &'a [u8] {
        &self.buffer[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    #[inline(always)]
    pub fn set_dst_addr(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&mac);
    }

    /// Sets the source MAC address.
    #[inline(always)]
    pub fn set_src_addr(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&mac);
    }

    /// Sets the EtherType.
    #[inline(always)]
    pub fn set_ethertype(&mut self, ethertype: u16) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&ethertype.to_be_bytes());
    }

    /// The payload, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The fields of an Ethernet II header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Destination MAC address.
    pub dst: MacAddr,
    /// Source MAC address.
    pub src: MacAddr,
    /// EtherType.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// The header of a frame (a view that holds at least [`HEADER_LEN`] bytes, as
    /// [`EthernetFrame::new_checked`] makes).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(f: &EthernetFrame<T>) -> EthernetRepr {
        EthernetRepr {
            dst: f.dst_addr(),
            src: f.src_addr(),
            ethertype: f.ethertype(),
        }
    }

    /// Writes this header into the first [`HEADER_LEN`] bytes of `f`'s buffer; the payload is
    /// left as it is.
    ///
    /// # Panics
    /// When the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, f: &mut EthernetFrame<T>) {
        f.set_dst_addr(self.dst);
        f.set_src_addr(self.src);
        f.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use smoltcp::wire::{EthernetAddress, EthernetProtocol};

    /// An ARP request's Ethernet header: broadcast from 02:00:00:00:00:0a.
    const ARP_HEADER: [u8; 16] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x06, 0x00,
        0x01,
    ];

    #[test]
    fn reads_a_known_header() {
        let f = EthernetFrame::new_checked(&ARP_HEADER[..]).unwrap();
        assert_eq!(f.dst_addr(), BROADCAST);
        assert!(is_group(&f.dst_addr()));
        assert_eq!(f.src_addr(), [2, 0, 0, 0, 0, 0x0a]);
        assert!(!is_group(&f.src_addr()));
        assert_eq!(f.ethertype(), ETHERTYPE_ARP);
        assert_eq!(f.payload(), &[0x00, 0x01]);
        assert_eq!(f.payload_slice(), &[0x00, 0x01]);
        assert_eq!(
            EthernetRepr::parse(&f),
            EthernetRepr {
                dst: BROADCAST,
                src: [2, 0, 0, 0, 0, 0x0a],
                ethertype: ETHERTYPE_ARP,
            }
        );
    }

    #[test]
    fn checked_view_refuses_short_frames() {
        assert_eq!(
            EthernetFrame::new_checked(&ARP_HEADER[..13]).err(),
            Some(EthernetError::Truncated)
        );
        assert!(EthernetFrame::new_checked(&ARP_HEADER[..14])
            .unwrap()
            .payload()
            .is_empty());
    }

    #[test]
    fn setters_write_what_smoltcp_reads() {
        let mut b = [0u8; 20];
        let mut f = EthernetFrame::new_unchecked(&mut b[..]);
        f.set_dst_addr([1, 2, 3, 4, 5, 6]);
        f.set_src_addr([7, 8, 9, 10, 11, 12]);
        f.set_ethertype(ETHERTYPE_IPV4);
        f.payload_mut().fill(0xaa);
        let s = smoltcp::wire::EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(s.dst_addr(), EthernetAddress([1, 2, 3, 4, 5, 6]));
        assert_eq!(s.src_addr(), EthernetAddress([7, 8, 9, 10, 11, 12]));
        assert_eq!(s.ethertype(), EthernetProtocol::Ipv4);
        assert_eq!(s.payload(), &[0xaa; 6]);
    }

    proptest! {
        #[test]
        fn checked_view_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(f) = EthernetFrame::new_checked(&b[..]) {
                let r = EthernetRepr::parse(&f);
                prop_assert_eq!(f.payload().len(), b.len() - HEADER_LEN);
                prop_assert_eq!(r.ethertype, u16::from_be_bytes([b[12], b[13]]));
            } else {
                prop_assert!(b.len() < HEADER_LEN);
            }
        }

        #[test]
        fn repr_round_trips(dst: [u8; 6], src: [u8; 6], ethertype: u16, tail: [u8; 3]) {
            let r = EthernetRepr { dst, src, ethertype };
            let mut b = [0u8; HEADER_LEN + 3];
            b[HEADER_LEN..].copy_from_slice(&tail);
            r.emit(&mut EthernetFrame::new_unchecked(&mut b[..]));
            let f = EthernetFrame::new_checked(&b[..]).unwrap();
            prop_assert_eq!(EthernetRepr::parse(&f), r);
            prop_assert_eq!(f.payload(), &tail[..]);
        }
    }
}
