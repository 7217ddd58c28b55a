//! Checksum fill for host-originated Ethernet/IPv4 frames (the NIC's "tx checksum offload"),
//! over the one Internet checksum implementation, [`offload_api::wire::checksum`] (RFC 1071,
//! RFC 1624), re-exported here.

pub use offload_api::wire::checksum::{
    add_bytes, checksum, fold, l4_checksum, pseudo_header_sum, update16, update32, verify,
    verify_ipv4_header20, verify_l4,
};

use super::parse::{
    DropReason, ETHERTYPE_IPV4, ETH_HDR_LEN, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP,
};

/// Computes and stores the IPv4 header checksum of `ip_hdr` (exactly IHL*4 bytes) in place
/// (RFC 791 §3.1, "Header Checksum").
#[inline]
pub fn fill_ipv4_header(ip_hdr: &mut [u8]) {
    ip_hdr[10] = 0;
    ip_hdr[11] = 0;
    let c = checksum(ip_hdr);
    ip_hdr[10..12].copy_from_slice(&c.to_be_bytes());
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
    if frame.len() < ETH_HDR_LEN {
        return Err(DropReason::Truncated);
    }
    if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return Ok(());
    }
    let ip = &mut frame[ETH_HDR_LEN..];
    let (ihl, total) = ipv4_bounds_for_tx(ip)?;
    let (hdr, rest) = ip[..total].split_at_mut(ihl);
    fill_ipv4_header(hdr);
    let src = [hdr[12], hdr[13], hdr[14], hdr[15]];
    let dst = [hdr[16], hdr[17], hdr[18], hdr[19]];
    fill_l4(hdr[9], src, dst, rest)
}

/// Validates the IPv4 header of a host-built packet and returns `(IHL*4, total_length)`.
#[inline]
pub(crate) fn ipv4_bounds_for_tx(ip: &[u8]) -> Result<(usize, usize), DropReason> {
    if ip.len() < 20 {
        return Err(DropReason::Truncated);
    }
    if ip[0] >> 4 != 4 {
        return Err(DropReason::BadIpVersion);
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    if ihl < 20 {
        return Err(DropReason::BadLength);
    }
    if ihl > ip.len() {
        return Err(DropReason::Truncated);
    }
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if total < ihl {
        return Err(DropReason::BadLength);
    }
    if total > ip.len() {
        return Err(DropReason::Truncated);
    }
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    if frag & 0x3fff != 0 {
        return Err(DropReason::Fragment);
    }
    Ok((ihl, total))
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
        IPPROTO_TCP => {
            l4[16] = 0;
            l4[17] = 0;
            let c = l4_checksum(src, dst, proto, l4);
            l4[16..18].copy_from_slice(&c.to_be_bytes());
        }
        IPPROTO_UDP => {
            l4[6] = 0;
            l4[7] = 0;
            let mut c = l4_checksum(src, dst, proto, l4);
            if c == 0 {
                c = 0xffff; // RFC 768: a computed zero is transmitted as all ones.
            }
            l4[6..8].copy_from_slice(&c.to_be_bytes());
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
