//! Frame builders for traffic generators, the demo and tests: well-formed Ethernet/IPv4
//! frames with valid checksums (filled by [`crate::net::csum::fill_checksums`]).

use offload_api::wire::tcp::{self, TcpFlags, TcpHeader, TcpOptions};
use offload_api::wire::{EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, Seq};
use offload_api::{ETHERTYPE_ARP, ETHERTYPE_IPV4, ETH_HDR_LEN, IPV4_HDR_LEN};

use crate::net::arp::{ArpFields, OP_REQUEST};
use crate::net::csum::fill_checksums;
use crate::net::parse::{ARP_LEN, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};

/// Broadcast MAC (IEEE 802.3 §3.2.3), defined in [`offload_api::wire::ethernet`].
pub use offload_api::wire::ethernet::BROADCAST;

/// Appends an Ethernet header (RFC 894).
fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + ETH_HDR_LEN, 0);
    EthernetRepr {
        dst,
        src,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut out[at..]));
}

/// Appends an IPv4 header without options (RFC 791 §3.1): identification 1, DF, TTL 64,
/// checksum 0 (filled by [`finish`]).
fn ipv4_header(src: [u8; 4], dst: [u8; 4], proto: u8, l4_len: usize, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + IPV4_HDR_LEN, 0);
    Ipv4Repr {
        src,
        dst,
        protocol: proto,
        payload_len: l4_len,
        ttl: 64,
        ident: 1,
        dont_frag: true,
        dscp_ecn: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut out[at..]));
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
    eth(dst_mac, src_mac, ETHERTYPE_ARP, &mut f);
    f.resize(ETH_HDR_LEN + ARP_LEN, 0);
    ArpFields {
        op,
        sha: src_mac,
        spa: src_ip,
        tha: target_mac,
        tpa: target_ip,
    }
    .write(&mut f[ETH_HDR_LEN..]);
    f.resize(60, 0);
    f
}

/// An ARP request from (`src_mac`, `src_ip`) asking for `target_ip`, broadcast.
pub fn arp_request(src_mac: [u8; 6], src_ip: [u8; 4], target_ip: [u8; 4]) -> Vec<u8> {
    arp(OP_REQUEST, src_mac, src_ip, BROADCAST, [0; 6], target_ip)
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
    let mut f = Vec::with_capacity(ETH_HDR_LEN + IPV4_HDR_LEN + l4_len);
    eth(dst_mac, src_mac, ETHERTYPE_IPV4, &mut f);
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
    ipv4_frame(src_mac, dst_mac, src, dst, IPPROTO_UDP, &h, payload)
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
    ipv4_frame(src_mac, dst_mac, src, dst, IPPROTO_ICMP, &h, payload)
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
    let h = TcpHeader {
        src_port: sport,
        dst_port: dport,
        seq: Seq(seq),
        ack: Seq(ack),
        flags: TcpFlags(flags),
        window: 0xffff,
        options: TcpOptions::default(),
    };
    tcp_with(src_mac, dst_mac, src, dst, &h, payload)
}

/// A TCP segment with the header `h` (options included, emitted by the wire module) in an
/// Ethernet/IPv4 frame.
pub fn tcp_with(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    h: &TcpHeader,
    payload: &[u8],
) -> Vec<u8> {
    let mut b = [0u8; tcp::MAX_HEADER_LEN];
    let n = tcp::emit(h, &mut b);
    ipv4_frame(src_mac, dst_mac, src, dst, IPPROTO_TCP, &b[..n], payload)
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
