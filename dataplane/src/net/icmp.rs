//! ICMP echo (RFC 792 "Echo or Echo Reply Message") answered by the NIC for its own addresses.

use offload_api::wire::{EthernetFrame, Ipv4Packet};

use super::csum;
use super::parse::{ETH_HDR_LEN, IPV4_HDR_LEN};

/// ICMP type of an echo reply (RFC 792).
pub const TYPE_ECHO_REPLY: u8 = 0;
/// ICMP type of an echo request (RFC 792).
pub const TYPE_ECHO_REQUEST: u8 = 8;
/// TTL of the replies the NIC originates (RFC 1700's recommended default, as Linux uses).
pub const REPLY_TTL: u8 = 64;

/// True when the ICMP message `l4` (at least 8 bytes, validated by `parse`) is an echo
/// request: type 8, code 0 (RFC 792).
#[inline]
pub fn is_echo_request(l4: &[u8]) -> bool {
    l4.len() >= 8 && l4[0] == TYPE_ECHO_REQUEST && l4[1] == 0
}

/// Rewrites the echo request `frame` (Ethernet/IPv4 without options, validated by `parse`,
/// ICMP at `l4_off`) into its echo reply in place: Ethernet destination = the requester,
/// source = `our_mac`; IP source and destination swapped, TTL reset to [`REPLY_TTL`], header
/// checksum recomputed (RFC 791 §3.1); ICMP type 0 with the checksum updated incrementally
/// (RFC 1624 eqn. 3); identifier, sequence number and data unchanged (RFC 792: "the data
/// received in the echo message must be returned in the echo reply message").
///
/// Invariant: if the request's checksums verified, the reply's verify too. The frame's length
/// is unchanged.
#[inline]
pub fn echo_reply_in_place(frame: &mut [u8], l4_off: usize, our_mac: [u8; 6]) {
    if frame.len() < l4_off + 8 || l4_off < ETH_HDR_LEN + IPV4_HDR_LEN {
        return;
    }
    // Ethernet.
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    let requester = eth.src_addr();
    eth.set_dst_addr(requester);
    eth.set_src_addr(our_mac);
    // IPv4: the header is `frame[14..l4_off]`.
    let ip_hdr = &mut frame[ETH_HDR_LEN..l4_off];
    let mut ip = Ipv4Packet::new_unchecked(&mut *ip_hdr);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    ip.set_ttl(REPLY_TTL);
    csum::fill_ipv4_header(ip_hdr);
    // ICMP: type 8 → 0, code kept; the (type, code) word changes.
    let icmp = &mut frame[l4_off..];
    let old_word = u16::from_be_bytes([icmp[0], icmp[1]]);
    icmp[0] = TYPE_ECHO_REPLY;
    let new_word = u16::from_be_bytes([icmp[0], icmp[1]]);
    let old_csum = u16::from_be_bytes([icmp[2], icmp[3]]);
    let c = csum::update16(old_csum, old_word, new_word);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::parse::testframes::*;
    use crate::net::parse::{parse, L3};
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr, Ipv4Packet};

    #[test]
    fn echo_reply_is_correct() {
        let data = b"0123456789abcdefghij";
        let req = icmp_echo(MAC_B, IP_A, IP_B, 0x1234, 42, data);
        let mut f = req.clone();
        assert!(is_echo_request(&f[34..]));
        echo_reply_in_place(&mut f, 34, MAC_B);
        assert_eq!(f.len(), req.len());
        assert_eq!(&f[0..6], &MAC_A);
        assert_eq!(&f[6..12], &MAC_B);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.src_addr().octets(), IP_B);
        assert_eq!(ip.dst_addr().octets(), IP_A);
        assert_eq!(ip.hop_limit(), 64);
        let icmp = Icmpv4Packet::new_checked(&f[34..]).unwrap();
        assert!(icmp.verify_checksum());
        let repr = Icmpv4Repr::parse(&icmp, &ChecksumCapabilities::default()).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::EchoReply {
                ident: 0x1234,
                seq_no: 42,
                data
            }
        );
        // Our own parser agrees and the incremental result equals a full recomputation.
        assert!(matches!(parse(&f).unwrap().l3, L3::Ipv4 { proto: 1, .. }));
        let mut full = f[34..].to_vec();
        full[2] = 0;
        full[3] = 0;
        assert_eq!(&f[36..38], &csum::checksum(&full).to_be_bytes());
    }

    #[test]
    fn echo_reply_with_odd_payload_and_padding() {
        let req = icmp_echo(MAC_B, IP_A, IP_B, 1, 1, b"x");
        let mut f = req.clone();
        f.resize(60, 0);
        echo_reply_in_place(&mut f, 34, MAC_B);
        assert_eq!(f.len(), 60);
        assert!(parse(&f).is_ok());
        assert_eq!(f[34], 0);
    }
}
