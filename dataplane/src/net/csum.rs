//! Checksum fill for host-originated Ethernet/IPv4 frames (the NIC's "tx checksum offload"),
//! over the one Internet checksum implementation, [`offload_api::wire::checksum`] (RFC 1071,
//! RFC 1624), re-exported here.

pub use offload_api::wire::checksum::{
    add_bytes, checksum, fold, l4_checksum, pseudo_header_sum, update16, update32, verify,
    verify_ipv4_header20, verify_l4,
};

use offload_api::wire::{EthernetFrame, Ipv4Packet, TcpPacket};

use super::parse::{
    ipv4_drop_reason, DropReason, ETHERTYPE_IPV4, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP,
    UDP_CHECKSUM_AT,
};

/// Computes and stores the IPv4 header checksum of `ip_hdr` (exactly IHL*4 bytes) in place
/// (RFC 791 §3.1, "Header Checksum"): over the whole slice, whatever its IHL says.
#[inline]
pub fn fill_ipv4_header(ip_hdr: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut *ip_hdr).set_checksum(0);
    let c = checksum(ip_hdr);
    Ipv4Packet::new_unchecked(ip_hdr).set_checksum(c);
}

/// Fill the IPv4 header checksum and the TCP/UDP/ICMP checksum of an Ethernet/IPv4 frame built
/// by the host (host stacks leave them 0; AccelTCP's host relies on NIC checksum offload).
/// Err on malformed frames.
///
/// Whatever the fields held before is overwritten (RFC 791 §3.1, RFC 9293 §3.1, RFC 768,
/// RFC 792). Frames that are not IPv4 have nothing to fill and are left untouched (`Ok`).
/// Checks: IPv4 version and IHL (`BadIpVersion`, `BadLength`), header and `total_length`
/// within the frame (`Truncated`, `BadLength`; trailing Ethernet padding is allowed), no
/// fragment (`Fragment`: a fragment's L4 checksum covers bytes this frame does not hold),
/// L4 header present (`Truncated`), TCP data offset within the segment and UDP length equal
/// to the IP payload (`BadLength`).
/// IP options are allowed. Protocols other than TCP, UDP and ICMP only get the IP checksum.
/// Invariant: on `Ok`, an IPv4 frame without IP options passes [`super::parse::parse`].
pub fn fill_checksums(frame: &mut [u8]) -> Result<(), DropReason> {
    let mut eth = EthernetFrame::new_checked(frame).map_err(|_| DropReason::Truncated)?;
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return Ok(());
    }
    let mut ip = ipv4_for_tx(eth.payload_mut())?;
    ip.fill_checksum();
    let (proto, src, dst) = (ip.protocol(), ip.src_addr(), ip.dst_addr());
    fill_l4(proto, src, dst, ip.payload_mut())
}

/// The IPv4 packet `ip` of a host-built frame as a checked view, after the transmit checks
/// ([`Ipv4Packet::check_len`], RFC 791 §3.1, with [`ipv4_drop_reason`]'s reasons) and
/// `Fragment` for a fragment (RFC 791 §3.2). IP options are allowed.
#[inline]
pub(crate) fn ipv4_for_tx<T: AsRef<[u8]>>(ip: T) -> Result<Ipv4Packet<T>, DropReason> {
    let p = Ipv4Packet::new_checked(ip).map_err(ipv4_drop_reason)?;
    if p.is_fragment() {
        return Err(DropReason::Fragment);
    }
    Ok(p)
}

/// Fills the L4 checksum of `l4` (the IP payload, exactly) for protocol `proto`.
#[inline]
pub(crate) fn fill_l4(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    l4: &mut [u8],
) -> Result<(), DropReason> {
    super::parse::check_l4_header(proto, l4)?;
    match proto {
        IPPROTO_TCP => TcpPacket::new_unchecked(l4).fill_checksum(src, dst),
        IPPROTO_UDP => {
            let field = UDP_CHECKSUM_AT..UDP_CHECKSUM_AT + 2;
            l4[field.clone()].fill(0);
            let mut c = l4_checksum(src, dst, proto, l4);
            if c == 0 {
                c = 0xffff; // RFC 768: a computed zero is transmitted as all ones.
            }
            l4[field].copy_from_slice(&c.to_be_bytes());
        }
        IPPROTO_ICMP => {
            l4[2] = 0;
            l4[3] = 0;
            let c = checksum(l4);
            l4[2..4].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filled frame verifies under the parser; a flipped payload bit does not.
    #[test]
    fn filled_frames_verify() {
        let mut f = crate::frames::udp([2; 6], [4; 6], [10, 0, 0, 1], [10, 0, 0, 2], 5, 6, b"hi");
        f[24] = 0;
        f[25] = 0;
        fill_checksums(&mut f).unwrap();
        assert!(super::super::parse::parse(&f).is_ok());
        f[43] ^= 1;
        assert!(super::super::parse::parse(&f).is_err());
    }
}
