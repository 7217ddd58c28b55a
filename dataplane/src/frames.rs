//! Frame builders for traffic generators, the demo and tests: well-formed Ethernet/IPv4
//! frames with valid checksums (filled by [`crate::net::csum::fill_checksums`]).

use crate::net::csum::fill_checksums;

/// Broadcast MAC.
pub const BROADCAST: [u8; 6] = [0xff; 6];

fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&dst);
    out.extend_from_slice(&src);
    out.extend_from_slice(&ethertype.to_be_bytes());
}

fn ipv4_header(src: [u8; 4], dst: [u8; 4], proto: u8, l4_len: usize, out: &mut Vec<u8>) {
    let total = (20 + l4_len) as u16;
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0]); // id 1, DF, TTL 64
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
}

fn finish(mut f: Vec<u8>) -> Vec<u8> {
    fill_checksums(&mut f).expect("builders make well-formed frames");
    if f.len() < 60 {
        f.resize(60, 0); // Ethernet minimum (no FCS); IP total length excludes the padding
    }
    f
}

/// An ARP packet (RFC 826) for Ethernet/IPv4: `op` 1 = request, 2 = reply.
pub fn arp(
    op: u16,
    src_mac: [u8; 6],
    src_ip: [u8; 4],
    dst_mac: [u8; 6],
    target_mac: [u8; 6],
    target_ip: [u8; 4],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    eth(dst_mac, src_mac, offload_api::ETHERTYPE_ARP, &mut f);
    f.extend_from_slice(&[0, 1, 0x08, 0, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&src_ip);
    f.extend_from_slice(&target_mac);
    f.extend_from_slice(&target_ip);
    f.resize(60, 0);
    f
}

/// An ARP request from (`src_mac`, `src_ip`) asking for `target_ip`, broadcast.
pub fn arp_request(src_mac: [u8; 6], src_ip: [u8; 4], target_ip: [u8; 4]) -> Vec<u8> {
    arp(1, src_mac, src_ip, BROADCAST, [0; 6], target_ip)
}

/// An Ethernet/IPv4 frame carrying `l4_header` then `payload` as protocol `proto`, with the
/// IP and L4 checksums filled.
#[allow(clippy::too_many_arguments)]
fn ipv4_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    l4_header: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let l4_len = l4_header.len() + payload.len();
    let mut f = Vec::with_capacity(34 + l4_len);
    eth(dst_mac, src_mac, offload_api::ETHERTYPE_IPV4, &mut f);
    ipv4_header(src, dst, proto, l4_len, &mut f);
    f.extend_from_slice(l4_header);
    f.extend_from_slice(payload);
    finish(f)
}

/// A UDP datagram in an Ethernet/IPv4 frame.
#[allow(clippy::too_many_arguments)]
pub fn udp(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut h = [0u8; 8];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    ipv4_frame(src_mac, dst_mac, src, dst, 17, &h, payload)
}

/// An ICMP echo request (RFC 792) in an Ethernet/IPv4 frame.
pub fn icmp_echo_request(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut h = [8u8, 0, 0, 0, 0, 0, 0, 0];
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&seq.to_be_bytes());
    ipv4_frame(src_mac, dst_mac, src, dst, 1, &h, payload)
}

/// A TCP segment (20-byte header, no options) in an Ethernet/IPv4 frame.
#[allow(clippy::too_many_arguments)]
pub fn tcp(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut h = [0u8; 20];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12..16].copy_from_slice(&[0x50, flags, 0xff, 0xff]);
    ipv4_frame(src_mac, dst_mac, src, dst, 6, &h, payload)
}

/// A TCP segment with the header `h` (options included, emitted by the wire module) in an
/// Ethernet/IPv4 frame.
pub fn tcp_with(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    h: &offload_api::wire::tcp::TcpHeader,
    payload: &[u8],
) -> Vec<u8> {
    let mut b = [0u8; 60];
    let n = offload_api::wire::tcp::emit(h, &mut b);
    ipv4_frame(src_mac, dst_mac, src, dst, 6, &b[..n], payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::parse::{parse, L3};

    #[test]
    fn built_frames_validate() {
        let (a, b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let (ia, ib) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        for f in [
            udp(a, b, ia, ib, 1, 2, b"hello"),
            udp(a, b, ia, ib, 1, 2, &[7; 1000]),
            icmp_echo_request(a, b, ia, ib, 9, 1, b"ping"),
            tcp(a, b, ia, ib, 1000, 80, 1, 0, 0x02, &[]),
        ] {
            let p = parse(&f).unwrap_or_else(|e| panic!("{e:?} for {f:02x?}"));
            assert!(matches!(p.l3, L3::Ipv4 { .. }));
        }
        assert_eq!(parse(&arp_request(a, ia, ib)).unwrap().l3, L3::Arp);
    }
}
