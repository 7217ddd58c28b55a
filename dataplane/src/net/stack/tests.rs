use super::*;
use crate::buf::HeapBuf;
use crate::net::csum;
use crate::net::parse::parse;
use crate::net::parse::testframes::*;
use smoltcp::wire::{ArpOperation, TcpControl};

const OUR_MAC: [u8; 6] = MAC_B;
const OUR_IP: [u8; 4] = IP_B;
const PEER_MAC: [u8; 6] = MAC_A;
const PEER_IP: [u8; 4] = IP_A;
const SEC: u64 = 1_000_000_000;

fn stack() -> NicStack<HeapBuf> {
    stack_with(StackConfig::default())
}

fn stack_with(cfg: StackConfig) -> NicStack<HeapBuf> {
    NicStack::new(vec![IfaceConfig::new(OUR_MAC, vec![(OUR_IP, 24)])], cfg)
}

fn alloc() -> Option<HeapBuf> {
    Some(HeapBuf::new())
}

/// A frame as a host stack hands it over: no MACs, no checksums.
fn host_frame(mut f: Vec<u8>) -> HeapBuf {
    f[0..12].fill(0);
    f[24] = 0;
    f[25] = 0;
    match f[23] {
        6 => f[50..52].fill(0),
        17 | 1 => f[40..42].fill(0),
        _ => {}
    }
    HeapBuf::from_frame(&f)
}

fn arp_reply_from_peer() -> HeapBuf {
    HeapBuf::from_frame(&arp(
        ArpOperation::Reply,
        PEER_MAC,
        PEER_IP,
        OUR_MAC,
        OUR_IP,
    ))
}

#[test]
fn arp_request_becomes_exact_reply() {
    let mut s = stack();
    let mut req = arp(ArpOperation::Request, PEER_MAC, PEER_IP, [0; 6], OUR_IP);
    req.resize(60, 0); // as received from a real wire, padded
    let mut b = HeapBuf::from_frame(&req);
    assert_eq!(s.rx(0, &mut b, 0), Verdict::Reply);
    let mut want = Vec::new();
    want.extend_from_slice(&PEER_MAC); // Ethernet destination: the requester
    want.extend_from_slice(&OUR_MAC); // Ethernet source: us
    want.extend_from_slice(&[0x08, 0x06]);
    want.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 2]); // hrd, pro, hln, pln, op=reply
    want.extend_from_slice(&OUR_MAC); // sha
    want.extend_from_slice(&OUR_IP); // spa
    want.extend_from_slice(&PEER_MAC); // tha
    want.extend_from_slice(&PEER_IP); // tpa
    want.resize(60, 0);
    assert_eq!(b.data(), &want[..]);
    // The requester was learnt (RFC 826: target is us, so add the sender).
    assert_eq!(s.arp_lookup(0, PEER_IP, 1), Some(PEER_MAC));
    let c = s.counters();
    assert_eq!((c.arp_requests_in, c.arp_replies_out), (1, 1));
}

#[test]
fn arp_for_other_hosts_is_consumed_and_only_merged() {
    let mut s = stack();
    // Request for someone else from an unknown sender: not learnt.
    let mut b = HeapBuf::from_frame(&arp(
        ArpOperation::Request,
        PEER_MAC,
        PEER_IP,
        [0; 6],
        [10, 0, 0, 77],
    ));
    assert_eq!(s.rx(0, &mut b, 0), Verdict::Consumed);
    assert_eq!(s.arp_lookup(0, PEER_IP, 0), None);
    // Once known, a gratuitous ARP updates the entry (merge).
    let mut b = arp_reply_from_peer();
    assert_eq!(s.rx(0, &mut b, 0), Verdict::Consumed);
    assert_eq!(s.arp_lookup(0, PEER_IP, 0), Some(PEER_MAC));
    let new_mac = [2, 0, 0, 0, 0, 0x77];
    let mut b = HeapBuf::from_frame(&arp(
        ArpOperation::Request,
        new_mac,
        PEER_IP,
        [0; 6],
        PEER_IP,
    ));
    assert_eq!(s.rx(0, &mut b, 5), Verdict::Consumed);
    assert_eq!(s.arp_lookup(0, PEER_IP, 5), Some(new_mac));
    // ARP to another host's unicast MAC is not ours to handle.
    let mut b = HeapBuf::from_frame(&arp(
        ArpOperation::Reply,
        PEER_MAC,
        PEER_IP,
        [2, 9, 9, 9, 9, 9],
        OUR_IP,
    ));
    assert!(matches!(s.rx(0, &mut b, 5), Verdict::Pass));
    let c = s.counters();
    assert_eq!(
        (
            c.arp_requests_in,
            c.arp_replies_in,
            c.arp_replies_out,
            c.passed
        ),
        (2, 1, 0, 1)
    );
}

#[test]
fn icmp_echo_answered_other_traffic_passed() {
    let mut s = stack();
    let req = icmp_echo(OUR_MAC, PEER_IP, OUR_IP, 9, 3, b"abcdefg");
    let mut b = HeapBuf::from_frame(&req);
    assert_eq!(s.rx(0, &mut b, 0), Verdict::Reply);
    let d = b.data();
    assert_eq!(&d[0..6], &PEER_MAC);
    assert_eq!(&d[6..12], &OUR_MAC);
    assert_eq!(&d[26..30], &OUR_IP);
    assert_eq!(&d[30..34], &PEER_IP);
    assert_eq!(d[34], 0);
    assert!(csum::verify(&d[14..34]));
    assert!(csum::verify(&d[34..]));
    // Echo to another IP, and TCP to us, pass.
    let mut b = HeapBuf::from_frame(&icmp_echo(OUR_MAC, PEER_IP, [10, 0, 0, 99], 9, 3, b"x"));
    assert!(matches!(s.rx(0, &mut b, 0), Verdict::Pass));
    let mut f = tcp(PEER_IP, OUR_IP, 1, TcpControl::Syn, &[]);
    f[0..6].copy_from_slice(&OUR_MAC);
    let mut b = HeapBuf::from_frame(&f);
    assert_eq!(s.rx(0, &mut b, 0), Verdict::Pass);
    assert!(matches!(
        crate::net::parse::parse_headers(b.data()).unwrap().l3,
        L3::Ipv4 { proto: 6, .. }
    ));
    let c = s.counters();
    assert_eq!((c.icmp_echo_in, c.icmp_echo_replies, c.passed), (1, 1, 2));
}

#[test]
fn out_of_range_port_is_counted_not_panicked() {
    let mut s = stack();
    let mut b = arp_reply_from_peer();
    assert_eq!(s.rx(5, &mut b, 0), Verdict::Drop(DropReason::Unsupported));
    let mut out = Vec::new();
    let f = host_frame(udp(OUR_IP, PEER_IP, b"x"));
    assert_eq!(
        s.host_tx(5, f, 0, &mut alloc, &mut out),
        Err(DropReason::Unsupported)
    );
    s.poll_tx(5, 0, &mut alloc, &mut out);
    s.resolve(5, PEER_IP, 0);
    assert_eq!(s.arp_lookup(5, PEER_IP, 0), None);
    assert!(out.is_empty());
    assert_eq!(s.counters().drops.get(DropReason::Unsupported), 2);
    assert_eq!(s.iface(5).ipv4.len(), 0);
    assert_eq!(s.iface(0).mac, OUR_MAC);
}

#[test]
fn arp_resolution_flow() {
    let mut s = stack();
    let mut out = Vec::new();
    let f = host_frame(udp(OUR_IP, PEER_IP, b"payload"));
    assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(0));
    let f = host_frame(udp(OUR_IP, PEER_IP, b"second"));
    assert_eq!(s.host_tx(0, f, 10, &mut alloc, &mut out), Ok(0));
    assert!(out.is_empty());
    assert_eq!(s.pending_frames(0), 2);

    s.poll_tx(0, 20, &mut alloc, &mut out);
    assert_eq!(out.len(), 1);
    let req = out.pop().unwrap();
    let d = req.data();
    assert_eq!(d.len(), 60);
    assert_eq!(&d[0..6], &[0xff; 6]);
    assert_eq!(&d[6..12], &OUR_MAC);
    assert_eq!(&d[12..14], &[0x08, 0x06]);
    let a = ArpFields::read(&d[14..]).unwrap();
    assert_eq!(
        a,
        ArpFields {
            op: 1,
            sha: OUR_MAC,
            spa: OUR_IP,
            tha: [0; 6],
            tpa: PEER_IP
        }
    );
    // Nothing more until the retry time.
    s.poll_tx(0, 30, &mut alloc, &mut out);
    assert!(out.is_empty());

    let mut rep = arp_reply_from_peer();
    assert_eq!(s.rx(0, &mut rep, 40), Verdict::Consumed);
    s.poll_tx(0, 50, &mut alloc, &mut out);
    assert_eq!(out.len(), 2);
    for (b, payload) in out.iter().zip([&b"payload"[..], b"second"]) {
        let p = parse(b.data()).expect("checksums filled");
        assert_eq!(p.dst_mac, PEER_MAC);
        assert_eq!(p.src_mac, OUR_MAC);
        assert_eq!(&b.data()[42..], payload);
    }
    assert_eq!(s.pending_frames(0), 0);
    // Now resolved: the next frame goes straight out.
    out.clear();
    let f = host_frame(udp(OUR_IP, PEER_IP, b"third"));
    assert_eq!(s.host_tx(0, f, 60, &mut alloc, &mut out), Ok(1));
    assert_eq!(&out[0].data()[0..6], &PEER_MAC);
    let c = s.counters();
    assert_eq!(
        (c.arp_requests_out, c.arp_replies_in, c.host_tx_packets),
        (1, 1, 3)
    );
    assert_eq!(c.drops.total(), 0);
}

/// Two lcores on one port: both ask for the peer, its reply reaches only one (RSS and
/// packet fanout steer ARP to one queue), and the other's held frames go out anyway, at its
/// next poll and without an ARP request of its own answered; later frames on either lcore go
/// straight out.
#[test]
fn lcores_of_a_port_share_what_they_learn() {
    let shared = std::sync::Arc::new(arp::SharedNeighbours::new(16, 60 * SEC));
    let (mut a, mut b) = (stack(), stack());
    a.share_neighbours(0, shared.clone());
    b.share_neighbours(0, shared.clone());
    let mut out = Vec::new();
    for s in [&mut a, &mut b] {
        let f = host_frame(udp(OUR_IP, PEER_IP, b"held"));
        assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(0));
        s.poll_tx(0, 1, &mut alloc, &mut out);
    }
    assert_eq!(out.len(), 2, "each lcore asked");
    out.clear();
    // The reply reaches lcore a only.
    let mut rep = arp_reply_from_peer();
    assert_eq!(a.rx(0, &mut rep, 2), Verdict::Consumed);
    // Long before b's retry time, b's frame goes out with the peer's MAC.
    b.poll_tx(0, 3, &mut alloc, &mut out);
    assert_eq!(out.len(), 1, "b released its held frame");
    assert_eq!(&out[0].data()[0..6], &PEER_MAC);
    assert_eq!(&out[0].data()[42..], b"held");
    assert_eq!(b.pending_frames(0), 0);
    assert_eq!(b.counters().arp_replies_in, 0);
    out.clear();
    let f = host_frame(udp(OUR_IP, PEER_IP, b"next"));
    assert_eq!(b.host_tx(0, f, 4, &mut alloc, &mut out), Ok(1));
    // An lcore that never asked knows it too.
    let mut c = stack();
    c.share_neighbours(0, shared);
    let f = host_frame(udp(OUR_IP, PEER_IP, b"third"));
    assert_eq!(c.host_tx(0, f, 5, &mut alloc, &mut out), Ok(1));
    assert_eq!(&out[1].data()[0..6], &PEER_MAC);
    assert_eq!(c.counters().arp_requests_out, 0);
}

/// Without sharing (one lcore per port), another stack's reply teaches nothing: the frame
/// stays held until the stack's own resolution.
#[test]
fn unshared_stacks_learn_only_their_own_replies() {
    let (mut a, mut b) = (stack(), stack());
    let mut out = Vec::new();
    let f = host_frame(udp(OUR_IP, PEER_IP, b"held"));
    assert_eq!(b.host_tx(0, f, 0, &mut alloc, &mut out), Ok(0));
    b.poll_tx(0, 1, &mut alloc, &mut out);
    out.clear();
    let mut rep = arp_reply_from_peer();
    a.rx(0, &mut rep, 2);
    b.poll_tx(0, 3, &mut alloc, &mut out);
    assert!(out.is_empty());
    assert_eq!(b.pending_frames(0), 1);
}

#[test]
fn arp_retries_then_gives_up() {
    let mut s = stack();
    let mut out = Vec::new();
    for i in 0..3 {
        let f = host_frame(udp(OUR_IP, PEER_IP, &[i]));
        assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(0));
    }
    // Virtual clock in 100 ms steps over 10 s: first request at 0, retries at 1, 2, 3 s.
    let mut sent_at = Vec::new();
    for step in 0..100u64 {
        let now = step * SEC / 10;
        s.poll_tx(0, now, &mut alloc, &mut out);
        for b in out.drain(..) {
            assert_eq!(&b.data()[12..14], &[0x08, 0x06]);
            sent_at.push(now);
        }
    }
    assert_eq!(sent_at, vec![0, SEC, 2 * SEC, 3 * SEC]);
    let c = s.counters();
    assert_eq!(c.arp_requests_out, 4);
    assert_eq!(c.arp_resolution_failed, 1);
    assert_eq!(c.drops.get(DropReason::ArpUnresolved), 3);
    assert_eq!(s.pending_frames(0), 0);
    // A late reply addressed to us is still learnt (RFC 826: target is us, add the sender).
    let mut rep = arp_reply_from_peer();
    assert_eq!(s.rx(0, &mut rep, 11 * SEC), Verdict::Consumed);
    assert_eq!(s.arp_lookup(0, PEER_IP, 11 * SEC), Some(PEER_MAC));
}

#[test]
fn pending_queue_is_bounded_and_off_subnet_refused() {
    let cfg = StackConfig {
        pending_bytes_per_ip: 2 * HELD_FRAME_CHARGE,
        ..StackConfig::default()
    };
    let mut s = stack_with(cfg);
    let mut out = Vec::new();
    for i in 0..4u8 {
        let f = host_frame(udp(OUR_IP, PEER_IP, &[i]));
        let r = s.host_tx(0, f, 0, &mut alloc, &mut out);
        assert_eq!(
            r,
            if i < 2 {
                Ok(0)
            } else {
                Err(DropReason::ArpUnresolved)
            }
        );
    }
    let f = host_frame(udp(OUR_IP, [192, 168, 1, 1], b"x"));
    assert_eq!(
        s.host_tx(0, f, 0, &mut alloc, &mut out),
        Err(DropReason::ArpUnresolved)
    );
    assert_eq!(s.counters().drops.get(DropReason::ArpUnresolved), 3);
    assert_eq!(s.pending_frames(0), 2);
    // Broadcast and multicast need no ARP.
    let f = host_frame(udp(OUR_IP, [10, 0, 0, 255], b"x"));
    assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(1));
    assert_eq!(&out[0].data()[0..6], &[0xff; 6]);
    let f = host_frame(udp(OUR_IP, [239, 129, 2, 3], b"x"));
    assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(1));
    assert_eq!(&out[1].data()[0..6], &[1, 0, 0x5e, 1, 2, 3]);
}

#[test]
fn a_burst_of_fifty_syns_to_an_unresolved_backend_is_held_whole() {
    // A proxy opening 50 backend connections at once sends 50 SYNs before the backend's
    // MAC is known: Linux holds them (unres_qlen_bytes); so must the NIC.
    let mut s = stack();
    let mut out = Vec::new();
    for i in 0..50u8 {
        let f = host_frame(udp(OUR_IP, PEER_IP, &[i; 40]));
        assert_eq!(s.host_tx(0, f, 0, &mut alloc, &mut out), Ok(0), "frame {i}");
    }
    assert_eq!(s.pending_frames(0), 50);
    assert_eq!(s.counters().drops.get(DropReason::ArpUnresolved), 0);
    // The bound is in bytes: a default queue takes 212,992 / 2,048 = 104 small frames.
    for i in 50..120u8 {
        let f = host_frame(udp(OUR_IP, PEER_IP, &[i; 40]));
        let _ = s.host_tx(0, f, 0, &mut alloc, &mut out);
    }
    assert_eq!(s.pending_frames(0), 212_992 / HELD_FRAME_CHARGE);
    assert_eq!(s.counters().drops.get(DropReason::ArpUnresolved), 120 - 104);
    // The reply releases every held frame.
    let mut rep = arp_reply_from_peer();
    assert_eq!(s.rx(0, &mut rep, 1), Verdict::Consumed);
    s.poll_tx(0, 1, &mut alloc, &mut out);
    assert_eq!(s.pending_frames(0), 0);
    let to_peer = out.iter().filter(|b| b.data()[0..6] == PEER_MAC).count();
    assert_eq!(to_peer, 104);
}

#[test]
fn alloc_failure_counts_no_buffer_and_retries() {
    let mut s = stack();
    let mut out = Vec::new();
    s.resolve(0, PEER_IP, 0);
    let mut none = || -> Option<HeapBuf> { None };
    s.poll_tx(0, 0, &mut none, &mut out);
    assert!(out.is_empty());
    assert_eq!(s.counters().drops.get(DropReason::NoBuffer), 1);
    s.poll_tx(0, 1, &mut alloc, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(s.counters().arp_requests_out, 1);
}

#[test]
fn arp_table_eviction_when_full() {
    let cfg = StackConfig {
        arp_table_size: 4,
        ..StackConfig::default()
    };
    let mut s = stack_with(cfg);
    for i in 0..6u8 {
        let ip = [10, 0, 0, 10 + i];
        let mac = [2, 0, 0, 0, 1, i];
        let mut b = HeapBuf::from_frame(&arp(ArpOperation::Request, mac, ip, [0; 6], OUR_IP));
        assert_eq!(s.rx(0, &mut b, i as u64 * 100), Verdict::Reply);
    }
    assert_eq!(s.counters().arp_table_evictions, 2);
    let now = 1000;
    assert_eq!(s.arp_lookup(0, [10, 0, 0, 10], now), None);
    assert_eq!(s.arp_lookup(0, [10, 0, 0, 11], now), None);
    for i in 2..6u8 {
        assert_eq!(
            s.arp_lookup(0, [10, 0, 0, 10 + i], now),
            Some([2, 0, 0, 0, 1, i])
        );
    }
}

#[test]
fn stale_entry_is_used_and_refreshed() {
    let mut s = stack();
    let mut rep = arp_reply_from_peer();
    s.rx(0, &mut rep, 0);
    let mut out = Vec::new();
    let later = 61 * SEC;
    assert_eq!(s.arp_lookup(0, PEER_IP, later), None);
    let f = host_frame(udp(OUR_IP, PEER_IP, b"x"));
    assert_eq!(s.host_tx(0, f, later, &mut alloc, &mut out), Ok(1));
    assert_eq!(&out[0].data()[0..6], &PEER_MAC);
    s.poll_tx(0, later, &mut alloc, &mut out);
    assert_eq!(out.len(), 2, "a refresh request went out");
    assert_eq!(&out[1].data()[12..14], &[0x08, 0x06]);
    let mut rep = arp_reply_from_peer();
    s.rx(0, &mut rep, later + 1);
    assert_eq!(s.arp_lookup(0, PEER_IP, later + 2), Some(PEER_MAC));
}

#[test]
fn host_tx_tso_and_mtu_rules() {
    let mut s = stack();
    let mut rep = arp_reply_from_peer();
    s.rx(0, &mut rep, 0);
    let mut out = Vec::new();
    let payload: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
    let mut f = tcp(OUR_IP, PEER_IP, 100, TcpControl::Psh, &[]);
    f.extend_from_slice(&payload);
    let total = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    let b = host_frame(f);
    assert_eq!(s.host_tx(0, b, 1, &mut alloc, &mut out), Ok(3));
    let mut joined = Vec::new();
    for b in &out {
        let p = parse(b.data()).expect("valid segment");
        assert_eq!(p.dst_mac, PEER_MAC);
        assert_eq!(p.src_mac, OUR_MAC);
        joined.extend_from_slice(&b.data()[54..]);
    }
    assert_eq!(joined, payload);
    assert_eq!(s.counters().tso_segments, 3);
    // UDP over the MTU cannot be segmented.
    let b = host_frame(udp(OUR_IP, PEER_IP, &[0; 1600]));
    assert_eq!(
        s.host_tx(0, b, 1, &mut alloc, &mut out),
        Err(DropReason::TsoTooLarge)
    );
    assert_eq!(s.counters().drops.get(DropReason::TsoTooLarge), 1);
}

#[test]
fn held_tso_frame_is_segmented_on_release() {
    let mut s = stack();
    let mut out = Vec::new();
    let mut f = tcp(OUR_IP, PEER_IP, 100, TcpControl::Psh, &[]);
    f.extend_from_slice(&[7u8; 3000]);
    let total = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    assert_eq!(s.host_tx(0, host_frame(f), 0, &mut alloc, &mut out), Ok(0));
    s.poll_tx(0, 0, &mut alloc, &mut out);
    assert_eq!(out.len(), 1); // the ARP request
    out.clear();
    let mut rep = arp_reply_from_peer();
    s.rx(0, &mut rep, 1);
    s.poll_tx(0, 2, &mut alloc, &mut out);
    assert_eq!(out.len(), 3);
    assert!(out
        .iter()
        .all(|b| parse(b.data()).is_ok() && b.data()[0..6] == PEER_MAC));
}

#[test]
fn counters_add() {
    let mut a = StackCounters {
        passed: 2,
        arp_requests_out: 1,
        ..Default::default()
    };
    a.drops.inc(DropReason::Fragment);
    let mut b = StackCounters::default();
    b.add(&a);
    b.add(&a);
    assert_eq!(
        (
            b.passed,
            b.arp_requests_out,
            b.drops.get(DropReason::Fragment)
        ),
        (4, 2, 2)
    );
}
