//! Host frames larger than one packet buffer: a TCP segment the host built for TSO (up to
//! 64 KB) is resolved by ARP, held while resolving within a byte budget, and segmented
//! straight from its bytes; anything else that large is refused and counted.

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::frames;
use dataplane::net::parse::{parse, DropReason, L3};
use dataplane::net::stack::{IfaceConfig, NicStack, StackConfig};
use dataplane::net::Verdict;

const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
const OUR_IP: [u8; 4] = [192, 0, 2, 1];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];
const PEER_IP: [u8; 4] = [192, 0, 2, 7];

fn stack(cfg: StackConfig) -> NicStack<HeapBuf> {
    NicStack::new(vec![IfaceConfig::new(OUR_MAC, vec![(OUR_IP, 24)])], cfg)
}

fn alloc() -> Option<HeapBuf> {
    Some(HeapBuf::new())
}

fn big_tcp(len: usize) -> (Vec<u8>, Vec<u8>) {
    let payload: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
    let mut f = frames::tcp(
        OUR_MAC, [0; 6], OUR_IP, PEER_IP, 5000, 80, 0xfffff000, 1, 0x18, &payload,
    );
    f[24..26].fill(0); // the host leaves checksums to the NIC
    f[50..52].fill(0);
    (f, payload)
}

#[test]
fn a_64k_tso_frame_is_resolved_held_and_segmented() {
    let mut s = stack(StackConfig::default());
    let (frame, payload) = big_tcp(60_000);
    assert!(
        frame.len() > HeapBuf::new().tailroom(),
        "the frame must not fit one buffer"
    );
    let mut out = Vec::new();
    assert_eq!(
        s.host_tx_frame(0, &frame, 0, &mut alloc, &mut out),
        Ok(0),
        "held for ARP"
    );
    s.poll_tx(0, 0, &mut alloc, &mut out);
    assert_eq!(out.len(), 1, "one ARP request");
    assert_eq!(&out[0].data()[12..14], &[0x08, 0x06]);
    out.clear();
    let reply = frames::arp(2, PEER_MAC, PEER_IP, OUR_MAC, OUR_MAC, OUR_IP);
    assert_eq!(
        s.rx(0, &mut HeapBuf::from_frame(&reply), 1),
        Verdict::Consumed
    );
    s.poll_tx(0, 2, &mut alloc, &mut out);
    assert_eq!(out.len(), 60_000usize.div_ceil(1460));
    let mut got = Vec::new();
    let mut seq = 0xfffff000u32;
    for seg in &out {
        let f = seg.data();
        assert_eq!(&f[0..6], &PEER_MAC);
        assert!(f.len() - 14 <= 1500);
        let p = parse(f).expect("every segment has valid checksums");
        let L3::Ipv4 { l4_off, l4_len, .. } = p.l3 else {
            panic!("not IPv4")
        };
        assert_eq!(
            u32::from_be_bytes(f[l4_off + 4..l4_off + 8].try_into().unwrap()),
            seq
        );
        let body = &f[l4_off + 20..l4_off + l4_len];
        seq = seq.wrapping_add(body.len() as u32);
        got.extend_from_slice(body);
    }
    assert!(got == payload, "payload reassembles");
    assert_eq!(s.counters().tso_segments, out.len() as u64);
    assert_eq!(s.counters().drops.total(), 0);
}

#[test]
fn oversized_non_tcp_is_refused_and_counted() {
    let mut s = stack(StackConfig::default());
    let udp = frames::udp(OUR_MAC, PEER_MAC, OUR_IP, PEER_IP, 1, 2, &vec![1; 5000]);
    let mut out = Vec::new();
    assert_eq!(
        s.host_tx_frame(0, &udp, 0, &mut alloc, &mut out),
        Err(DropReason::TsoTooLarge)
    );
    assert!(out.is_empty());
    assert_eq!(s.counters().drops.get(DropReason::TsoTooLarge), 1);
    assert_eq!(s.counters().host_tx_packets, 1);
}

#[test]
fn held_bytes_are_bounded() {
    let mut s = stack(StackConfig {
        pending_bytes_per_port: 100_000,
        ..StackConfig::default()
    });
    let (frame, _) = big_tcp(60_000);
    let mut out = Vec::new();
    assert_eq!(s.host_tx_frame(0, &frame, 0, &mut alloc, &mut out), Ok(0));
    assert_eq!(
        s.host_tx_frame(0, &frame, 0, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
    assert_eq!(s.counters().drops.get(DropReason::ArpUnresolved), 1);
    assert_eq!(s.pending_frames(0), 1);
    // Once the neighbour never answers, the held frame is dropped and the budget is free.
    for t in 0..6u64 {
        s.poll_tx(0, t * 1_000_000_000, &mut alloc, &mut out);
    }
    assert_eq!(s.pending_frames(0), 0);
    assert_eq!(s.counters().drops.get(DropReason::ArpUnresolved), 2);
    assert_eq!(
        s.host_tx_frame(0, &frame, 7_000_000_000, &mut alloc, &mut out),
        Ok(0)
    );
}
