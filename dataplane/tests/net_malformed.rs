//! Malformed frames through `NicStack::rx`: each drop reason is returned and counted exactly,
//! and arbitrary bytes never panic and are always accounted for.

use dataplane::net::csum::{fill_checksums, fill_ipv4_header};
use dataplane::net::{DropReason, IfaceConfig, NicStack, StackConfig, Verdict};
use dataplane::{HeapBuf, PacketBuf};
use proptest::prelude::*;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, Icmpv4Packet, Icmpv4Repr, IpAddress,
    IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpControl, TcpPacket, TcpRepr, TcpSeqNumber,
    UdpPacket, UdpRepr,
};

const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const PEER_IP: [u8; 4] = [10, 0, 0, 1];
const OUR_IP: [u8; 4] = [10, 0, 0, 2];

// ---- reference frames, built with smoltcp's emitters ----

fn eth(ethertype: u16, body_len: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14 + body_len];
    f[0..6].copy_from_slice(&OUR_MAC);
    f[6..12].copy_from_slice(&PEER_MAC);
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    f
}

fn arp(op: ArpOperation, tpa: [u8; 4]) -> Vec<u8> {
    let mut f = eth(0x0806, 28);
    if op == ArpOperation::Request {
        f[0..6].fill(0xff);
    }
    ArpRepr::EthernetIpv4 {
        operation: op,
        source_hardware_addr: EthernetAddress(PEER_MAC),
        source_protocol_addr: Ipv4Address::from(PEER_IP),
        target_hardware_addr: EthernetAddress(if op == ArpOperation::Request {
            [0; 6]
        } else {
            OUR_MAC
        }),
        target_protocol_addr: Ipv4Address::from(tpa),
    }
    .emit(&mut ArpPacket::new_unchecked(&mut f[14..]));
    f
}

fn ipv4(proto: IpProtocol, l4_len: usize) -> Vec<u8> {
    let mut f = eth(0x0800, 20 + l4_len);
    Ipv4Repr {
        src_addr: Ipv4Address::from(PEER_IP),
        dst_addr: Ipv4Address::from(OUR_IP),
        next_header: proto,
        payload_len: l4_len,
        hop_limit: 64,
    }
    .emit(
        &mut Ipv4Packet::new_unchecked(&mut f[14..]),
        &ChecksumCapabilities::default(),
    );
    f
}

fn tcp(payload: &[u8]) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 80,
        control: TcpControl::Psh,
        seq_number: TcpSeqNumber(1000),
        ack_number: Some(TcpSeqNumber(2000)),
        window_len: 512,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload,
    };
    let mut f = ipv4(IpProtocol::Tcp, repr.buffer_len());
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut f[34..]),
        &IpAddress::Ipv4(Ipv4Address::from(PEER_IP)),
        &IpAddress::Ipv4(Ipv4Address::from(OUR_IP)),
        &ChecksumCapabilities::default(),
    );
    f
}

fn udp(payload: &[u8]) -> Vec<u8> {
    let mut f = ipv4(IpProtocol::Udp, 8 + payload.len());
    UdpRepr {
        src_port: 5000,
        dst_port: 53,
    }
    .emit(
        &mut UdpPacket::new_unchecked(&mut f[34..]),
        &IpAddress::Ipv4(Ipv4Address::from(PEER_IP)),
        &IpAddress::Ipv4(Ipv4Address::from(OUR_IP)),
        payload.len(),
        |p| p.copy_from_slice(payload),
        &ChecksumCapabilities::default(),
    );
    f
}

fn icmp_echo(data: &[u8]) -> Vec<u8> {
    let repr = Icmpv4Repr::EchoRequest {
        ident: 7,
        seq_no: 1,
        data,
    };
    let mut f = ipv4(IpProtocol::Icmp, repr.buffer_len());
    repr.emit(
        &mut Icmpv4Packet::new_unchecked(&mut f[34..]),
        &ChecksumCapabilities::default(),
    );
    f
}

fn valid_frames() -> Vec<Vec<u8>> {
    let mut padded_arp = arp(ArpOperation::Request, OUR_IP);
    padded_arp.resize(60, 0);
    vec![
        arp(ArpOperation::Request, OUR_IP),
        arp(ArpOperation::Request, [10, 0, 0, 50]),
        arp(ArpOperation::Reply, OUR_IP),
        padded_arp,
        tcp(b"GET / HTTP/1.1\r\n\r\n"),
        tcp(&[]),
        udp(b"dns?"),
        icmp_echo(b"0123456789"),
    ]
}

// ---- helpers ----

fn stack() -> NicStack<HeapBuf> {
    NicStack::new(
        vec![
            IfaceConfig::new(OUR_MAC, vec![(OUR_IP, 24)]),
            IfaceConfig::new([0x02, 0, 0, 0, 1, 0x0b], vec![([10, 1, 0, 2], 24)]),
        ],
        StackConfig::default(),
    )
}

/// Feeds every frame to a fresh stack and checks each is dropped for `reason`, counted exactly.
fn assert_drops(reason: DropReason, frames: &[Vec<u8>]) {
    assert!(!frames.is_empty());
    let mut s = stack();
    for (i, f) in frames.iter().enumerate() {
        let mut b = HeapBuf::from_frame(f);
        assert_eq!(
            s.rx(0, &mut b, 0),
            Verdict::Drop(reason),
            "frame {i} of {reason:?}: {f:02x?}"
        );
    }
    let c = s.counters();
    assert_eq!(c.drops.get(reason), frames.len() as u64, "{reason:?}");
    assert_eq!(
        c.drops.total(),
        frames.len() as u64,
        "only {reason:?} counted"
    );
    assert_eq!(c.passed, 0);
}

fn set_ip_total_len(f: &mut [u8], total: u16) {
    f[16..18].copy_from_slice(&total.to_be_bytes());
    fill_ipv4_header(&mut f[14..34]);
}

// ---- one test per drop reason ----

#[test]
fn valid_frames_are_not_dropped() {
    let mut s = stack();
    for f in valid_frames() {
        let mut b = HeapBuf::from_frame(&f);
        let d = s.rx(0, &mut b, 0);
        assert!(!matches!(d, Verdict::Drop(_)), "{d:?} for {f:02x?}");
    }
    assert_eq!(s.counters().drops.total(), 0);
}

#[test]
fn truncated_at_every_cut_length() {
    let f = tcp(b"some payload bytes");
    let cuts: Vec<Vec<u8>> = (0..f.len()).map(|n| f[..n].to_vec()).collect();
    assert_drops(DropReason::Truncated, &cuts);
    // ARP and UDP/ICMP headers cut short too.
    let a = arp(ArpOperation::Request, OUR_IP);
    let mut more: Vec<Vec<u8>> = (14..a.len()).map(|n| a[..n].to_vec()).collect();
    for proto in [IpProtocol::Udp, IpProtocol::Icmp, IpProtocol::Tcp] {
        let mut f = ipv4(proto, 4);
        f.truncate(14 + 20 + 4);
        more.push(f);
    }
    assert_drops(DropReason::Truncated, &more);
}

#[test]
fn bad_length() {
    let mut frames = Vec::new();
    // IPv4 total length below the header length.
    let mut f = tcp(b"x");
    set_ip_total_len(&mut f, 19);
    frames.push(f);
    // IHL below 5.
    let mut f = tcp(b"x");
    f[14] = 0x44;
    fill_ipv4_header(&mut f[14..34]);
    frames.push(f);
    // TCP data offset below 5 and beyond the segment.
    for doff in [0u8, 4, 6, 15] {
        let mut f = tcp(b"");
        f[46] = doff << 4;
        frames.push(f);
    }
    // UDP length larger and smaller than the IP payload, and below the header.
    for ulen in [100u16, 9, 7] {
        let mut f = udp(b"abcd");
        f[38..40].copy_from_slice(&ulen.to_be_bytes());
        frames.push(f);
    }
    assert_drops(DropReason::BadLength, &frames);
}

#[test]
fn bad_ip_version() {
    let frames: Vec<Vec<u8>> = [0u8, 5, 6, 15]
        .iter()
        .map(|&v| {
            let mut f = tcp(b"x");
            f[14] = (v << 4) | 5;
            fill_ipv4_header(&mut f[14..34]);
            f
        })
        .collect();
    assert_drops(DropReason::BadIpVersion, &frames);
}

#[test]
fn bad_ip_checksum() {
    let mut frames = Vec::new();
    for base in [tcp(b"x"), udp(b"y"), icmp_echo(b"z")] {
        for byte in [24usize, 25, 22, 26] {
            let mut f = base.clone();
            f[byte] ^= 0x10;
            frames.push(f);
        }
    }
    assert_drops(DropReason::BadIpChecksum, &frames);
}

#[test]
fn bad_l4_checksum_tcp_udp_icmp() {
    let mut tcp_bad = tcp(b"payload");
    tcp_bad[60] ^= 1;
    let mut tcp_csum = tcp(b"payload");
    tcp_csum[50] ^= 0x80;
    let mut udp_bad = udp(b"payload");
    udp_bad[43] ^= 1;
    let mut icmp_bad = icmp_echo(b"payload");
    icmp_bad[45] ^= 1;
    let mut icmp_odd = icmp_echo(b"odd");
    icmp_odd[44] ^= 0xff;
    assert_drops(DropReason::BadL4Checksum, &[tcp_bad, tcp_csum]);
    assert_drops(DropReason::BadL4Checksum, &[udp_bad]);
    assert_drops(DropReason::BadL4Checksum, &[icmp_bad, icmp_odd]);
}

#[test]
fn ip_options() {
    // IHL 6 with a 4-byte option (NOP NOP NOP EOL), everything else consistent.
    let f = tcp(b"x");
    let mut g = f[..34].to_vec();
    g.extend_from_slice(&[1, 1, 1, 0]);
    g.extend_from_slice(&f[34..]);
    g[14] = 0x46;
    let total = (g.len() - 14) as u16;
    g[16..18].copy_from_slice(&total.to_be_bytes());
    fill_ipv4_header(&mut g[14..38]);
    let mut max = f[..34].to_vec();
    max.extend_from_slice(&[1; 40]);
    max.extend_from_slice(&f[34..]);
    max[14] = 0x4f;
    let total = (max.len() - 14) as u16;
    max[16..18].copy_from_slice(&total.to_be_bytes());
    fill_ipv4_header(&mut max[14..74]);
    assert_drops(DropReason::IpOptions, &[g, max]);
}

#[test]
fn fragment_mf_and_offset() {
    let mut frames = Vec::new();
    for (flags_frag, base) in [
        (0x2000u16, tcp(b"first")),  // MF, offset 0
        (0x0001, tcp(b"last")),      // offset 8
        (0x2010, udp(b"middle")),    // MF and offset
        (0x1fff, icmp_echo(b"max")), // largest offset
        (0x6000, udp(b"df+mf")),     // DF and MF
    ] {
        let mut f = base;
        f[20..22].copy_from_slice(&flags_frag.to_be_bytes());
        fill_ipv4_header(&mut f[14..34]);
        frames.push(f);
    }
    assert_drops(DropReason::Fragment, &frames);
    // DF alone is not a fragment.
    let mut f = tcp(b"df");
    f[20..22].copy_from_slice(&0x4000u16.to_be_bytes());
    fill_ipv4_header(&mut f[14..34]);
    let mut s = stack();
    assert!(matches!(
        s.rx(0, &mut HeapBuf::from_frame(&f), 0),
        Verdict::Pass
    ));
}

#[test]
fn control_ethertypes_from_wire() {
    let frames: Vec<Vec<u8>> = (0x090Au16..=0x090E)
        .map(|t| {
            let mut f = eth(t, 46);
            f[14..].fill(0x5a);
            f
        })
        .collect();
    assert_drops(DropReason::ControlFromWire, &frames);
    // Their neighbours are ordinary EtherTypes.
    let mut s = stack();
    for t in [0x0909u16, 0x090F] {
        let mut b = HeapBuf::from_frame(&eth(t, 46));
        assert!(matches!(s.rx(0, &mut b, 0), Verdict::Pass));
    }
}

#[test]
fn unsupported_arp_and_port() {
    let mut frames = Vec::new();
    for (i, v) in [(15usize, 6u8), (17, 0xdd), (18, 8), (19, 16), (21, 3)] {
        let mut f = arp(ArpOperation::Request, OUR_IP);
        f[i] = v;
        frames.push(f);
    }
    assert_drops(DropReason::Unsupported, &frames);
    let mut s = stack();
    let mut b = HeapBuf::from_frame(&tcp(b"x"));
    assert_eq!(s.rx(2, &mut b, 0), Verdict::Drop(DropReason::Unsupported));
    assert_eq!(s.counters().drops.get(DropReason::Unsupported), 1);
}

// ---- property: anything goes in, everything is accounted for ----

#[derive(Default, Debug)]
struct Tally {
    frames: u64,
    pass: u64,
    consumed: u64,
    reply: u64,
    drops: [u64; 12],
}

fn feed(s: &mut NicStack<HeapBuf>, t: &mut Tally, port: usize, bytes: &[u8], now: u64) {
    let mut b = HeapBuf::from_frame(bytes);
    t.frames += 1;
    match s.rx(port, &mut b, now) {
        Verdict::Pass => t.pass += 1,
        Verdict::Consumed => t.consumed += 1,
        Verdict::Reply => {
            t.reply += 1;
            assert_eq!(b.len(), bytes.len(), "a reply keeps the frame length");
            assert!(
                dataplane::net::parse(b.data()).is_ok(),
                "a reply is a valid frame: {:02x?}",
                b.data()
            );
        }
        Verdict::Drop(r) => t.drops[r as usize] += 1,
        v @ (Verdict::Out(_) | Verdict::ToHost) => panic!("the NIC stack answered {v:?}"),
    }
}

fn check_accounting(s: &NicStack<HeapBuf>, t: &Tally) {
    let c = s.counters();
    assert_eq!(
        t.pass + t.consumed + t.reply + t.drops.iter().sum::<u64>(),
        t.frames
    );
    assert_eq!(c.passed, t.pass);
    assert_eq!(c.arp_replies_out + c.icmp_echo_replies, t.reply);
    assert_eq!(
        c.arp_requests_in - c.arp_replies_out + c.arp_replies_in,
        t.consumed
    );
    for r in DropReason::ALL {
        assert_eq!(c.drops.get(r), t.drops[r as usize], "{r:?}");
    }
    assert_eq!(
        c.passed + c.drops.total() + c.arp_requests_in + c.arp_replies_in + c.icmp_echo_replies,
        t.frames
    );
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Truncate(usize),
    Extend(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), any::<u8>()).prop_map(|(i, v)| Mutation::Set(i, v)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Mutation::Extend),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic_and_are_accounted(
        frames in proptest::collection::vec(
            (0usize..3, proptest::collection::vec(any::<u8>(), 0..200)), 1..20),
    ) {
        let mut s = stack();
        let mut t = Tally::default();
        for (i, (port, f)) in frames.iter().enumerate() {
            feed(&mut s, &mut t, *port, f, i as u64);
        }
        check_accounting(&s, &t);
    }

    #[test]
    fn mutated_valid_frames_never_panic_and_are_accounted(
        cases in proptest::collection::vec(
            (any::<prop::sample::Index>(), proptest::collection::vec(mutation(), 0..6),
             any::<bool>(), 0usize..3),
            1..24),
    ) {
        let base = valid_frames();
        let mut s = stack();
        let mut t = Tally::default();
        for (i, (which, muts, refill, port)) in cases.into_iter().enumerate() {
            let mut f = base[which.index(base.len())].clone();
            for m in muts {
                match m {
                    Mutation::Set(at, v) if !f.is_empty() => {
                        let n = f.len();
                        f[at % n] = v;
                    }
                    Mutation::Set(..) => {}
                    Mutation::Truncate(n) => f.truncate(n % (f.len() + 1)),
                    Mutation::Extend(more) => f.extend_from_slice(&more),
                }
            }
            // Half the time, make the checksums right again so that deeper checks run.
            if refill {
                let _ = fill_checksums(&mut f);
            }
            feed(&mut s, &mut t, port, &f, i as u64 * 1_000);
        }
        check_accounting(&s, &t);
    }
}

// ---- property: host frames of any shape never panic, and what goes out is valid ----

fn big_tcp(len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
    let mut f = tcp(&[]);
    f.extend_from_slice(&payload);
    let total = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f
}

/// Checks a frame about to leave the NIC on port 0 (MTU 1500); `from_poll`: it came out of
/// `poll_tx` (so an ARP frame is one the stack built).
fn assert_valid_out(b: &HeapBuf, from_poll: bool) {
    let d = b.data();
    if d.len() >= 34 && d[12..14] == [0x08, 0x00] {
        let total = u16::from_be_bytes([d[16], d[17]]) as usize;
        assert!(total <= 1500, "IP packet over the MTU sent");
        assert!(d.len() <= (14 + total).max(60), "trailing bytes sent");
        if d[14] == 0x45 {
            assert!(
                dataplane::net::parse(d).is_ok(),
                "invalid IPv4 frame out: {:?} {d:02x?}",
                dataplane::net::parse(d)
            );
        }
    } else if from_poll {
        assert_eq!(&d[12..14], &[0x08, 0x06]);
        assert!(dataplane::net::parse(d).is_ok(), "our ARP request is valid");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn host_tx_never_panics_and_sends_valid_frames(
        cases in proptest::collection::vec(
            (0usize..6, proptest::collection::vec(mutation(), 0..3), any::<bool>(),
             prop_oneof![6 => Just(0usize), 1 => Just(1), 1 => Just(2)], 0u8..4, any::<bool>()),
            1..16),
    ) {
        let base = [
            udp(b"hello"), icmp_echo(b"ping"), tcp(b"data"), big_tcp(1460), big_tcp(4000),
            arp(ArpOperation::Request, OUR_IP),
        ];
        let mut s = stack();
        let mut out: Vec<HeapBuf> = Vec::new();
        for (i, (which, muts, zero_mac, port, fail_every, reply)) in cases.into_iter().enumerate() {
            let now = i as u64 * 400_000_000;
            let mut f = base[which].clone();
            if which < 5 {
                f[24] = 0; // host stacks leave checksums to the NIC
                f[25] = 0;
                f[30..34].copy_from_slice(&PEER_IP);
                f[26..30].copy_from_slice(&OUR_IP);
            }
            if zero_mac {
                f[0..12].fill(0);
            }
            for m in muts {
                match m {
                    Mutation::Set(at, v) if !f.is_empty() => {
                        let n = f.len();
                        f[at % n] = v;
                    }
                    Mutation::Set(..) => {}
                    Mutation::Truncate(n) => f.truncate(n % (f.len() + 1)),
                    Mutation::Extend(more) => f.extend_from_slice(&more),
                }
            }
            let mut calls = 0u32;
            let mut alloc = || {
                calls += 1;
                // Every `fail_every`-th allocation fails (never when 0).
                match calls.checked_rem(fail_every as u32) {
                    Some(0) => None,
                    _ => Some(HeapBuf::new()),
                }
            };
            let before = out.len();
            match s.host_tx(port, HeapBuf::from_frame(&f), now, &mut alloc, &mut out) {
                Ok(n) => prop_assert_eq!(out.len(), before + n),
                Err(_) => prop_assert_eq!(out.len(), before),
            }
            for b in out.drain(..) {
                if port == 0 {
                    assert_valid_out(&b, false);
                }
            }
            s.poll_tx(port, now, &mut alloc, &mut out);
            for b in out.drain(..) {
                if port == 0 {
                    assert_valid_out(&b, true);
                }
            }
            if reply {
                let mut r = HeapBuf::from_frame(&arp(ArpOperation::Reply, OUR_IP));
                s.rx(0, &mut r, now);
            }
        }
        let c = s.counters();
        prop_assert!(c.host_tx_packets <= 16);
    }
}
