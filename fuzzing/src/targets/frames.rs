//! Frame building and the checks on what a node sends.

use super::*;
/// An Ethernet + IPv4 + TCP frame from `src` to `dst` with valid checksums; `tcp_hdr` is a
/// whole TCP header (its checksum is filled in).
pub(super) fn ip_tcp_frame(
    (smac, sip): ([u8; 6], [u8; 4]),
    (dmac, dip): ([u8; 6], [u8; 4]),
    tcp_bytes: &[u8],
) -> Vec<u8> {
    let total = 20 + tcp_bytes.len();
    let mut f = vec![0u8; 14 + total];
    f[0..6].copy_from_slice(&dmac);
    f[6..12].copy_from_slice(&smac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&sip);
    ip[16..20].copy_from_slice(&dip);
    let c = checksum::checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f[34..].copy_from_slice(tcp_bytes);
    if tcp_bytes.len() >= 18 {
        f[34 + 16..34 + 18].fill(0);
        let c = checksum::l4_checksum(sip, dip, 6, &f[34..]);
        f[34 + 16..34 + 18].copy_from_slice(&c.to_be_bytes());
    }
    f
}

/// A TCP segment's bytes: header `h` and `payload`.
pub(super) fn tcp_bytes(h: &TcpHeader, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; tcp::header_len(h) + payload.len()];
    let n = tcp::emit(h, &mut v);
    v[n..].copy_from_slice(payload);
    v
}

/// Checks a frame the node under test put on the wire: well-formed Ethernet, IPv4 with a
/// valid header checksum and a length inside the frame, TCP that parses with a valid
/// checksum; never a host <-> NIC message.
pub(super) fn check_wire_frame(f: &[u8]) {
    assert!(f.len() >= 14, "runt frame on the wire: {f:?}");
    let ethertype = u16::from_be_bytes([f[12], f[13]]);
    assert!(
        !offload_api::is_control_ethertype(ethertype),
        "a host <-> NIC message (EtherType {ethertype:#06x}) left on the wire"
    );
    match ethertype {
        0x0806 => assert!(f.len() >= 42, "short ARP frame"),
        0x0800 => {
            let ip = &f[14..];
            assert!(ip.len() >= 20, "short IPv4 header");
            assert_eq!(ip[0] >> 4, 4);
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            assert!(
                ihl >= 20 && total >= ihl && total <= ip.len(),
                "IPv4 lengths"
            );
            assert!(
                checksum::verify(&ip[..ihl]),
                "IPv4 header checksum of a sent frame"
            );
            if ip[9] == 6 {
                let (src, dst) = (arr4(&ip[12..16]), arr4(&ip[16..20]));
                let seg = &ip[ihl..total];
                assert!(tcp::parse(seg).is_ok(), "a sent TCP segment parses");
                assert!(
                    checksum::verify_l4(src, dst, 6, seg),
                    "TCP checksum of a sent segment"
                );
            }
        }
        other => panic!("unexpected EtherType {other:#06x} on the wire"),
    }
}

pub(super) fn arr4(b: &[u8]) -> [u8; 4] {
    [b[0], b[1], b[2], b[3]]
}
