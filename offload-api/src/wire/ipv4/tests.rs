//! Tests of the IPv4 view and representation, against fixed headers and smoltcp's `wire`
//! (an independent implementation).
use super::*;
use proptest::prelude::*;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{IpProtocol, Ipv4Address};

/// A classic example header (Wikipedia "IPv4 header checksum"): 192.168.0.1 → 192.168.0.199,
/// UDP, total length 0x73, DF, TTL 64, checksum 0xb861 (RFC 1071 over the 20 bytes).
const UDP_HEADER: [u8; 20] = [
    0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
    0xc0, 0xa8, 0x00, 0xc7,
];

/// `UDP_HEADER` followed by its 0x73 − 20 bytes of payload and `pad` bytes of link padding.
fn udp_packet(pad: usize) -> Vec<u8> {
    let mut v = UDP_HEADER.to_vec();
    v.extend((0..0x73 - 20).map(|i| i as u8));
    v.extend(std::iter::repeat_n(0xee, pad));
    v
}

#[test]
fn reads_a_known_header() {
    let b = udp_packet(4);
    let p = Ipv4Packet::new_checked(&b[..]).unwrap();
    assert_eq!(p.version(), 4);
    assert_eq!(p.header_len(), 20);
    assert_eq!(p.dscp_ecn(), 0);
    assert_eq!(p.total_len(), 0x73);
    assert_eq!(p.ident(), 0);
    assert!(p.dont_frag() && !p.more_frags() && !p.is_fragment());
    assert_eq!(p.frag_offset(), 0);
    assert_eq!(p.ttl(), 64);
    assert_eq!(p.protocol(), IPPROTO_UDP);
    assert_eq!(p.checksum(), 0xb861);
    assert_eq!(p.src_addr(), [192, 168, 0, 1]);
    assert_eq!(p.dst_addr(), [192, 168, 0, 199]);
    assert!(p.options().is_empty());
    assert_eq!(p.payload().len(), 0x73 - 20, "padding is not payload");
    assert_eq!(p.payload_slice(), &b[20..0x73]);
    assert!(p.verify_checksum());
    let r = Ipv4Repr::parse(&p).unwrap();
    assert_eq!(
        r,
        Ipv4Repr {
            src: [192, 168, 0, 1],
            dst: [192, 168, 0, 199],
            protocol: IPPROTO_UDP,
            payload_len: 0x73 - 20,
            ttl: 64,
            ident: 0,
            dont_frag: true,
            dscp_ecn: 0,
        }
    );
    // Emitting the repr gives the same header (with the checksum filled).
    let mut out = [0u8; 20];
    let mut q = Ipv4Packet::new_unchecked(&mut out[..]);
    r.emit(&mut q);
    assert_eq!(q.checksum(), 0);
    q.fill_checksum();
    assert_eq!(out, UDP_HEADER);
}

#[test]
fn checks_come_in_rfc_791_order() {
    let good = udp_packet(0);
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        Ipv4Packet::new_checked(b).err()
    };
    assert_eq!(with(&|b| b.truncate(19)), Some(Ipv4Error::Truncated));
    assert_eq!(with(&|b| b[0] = 0x65), Some(Ipv4Error::BadVersion));
    // Version is checked before the IHL.
    assert_eq!(with(&|b| b[0] = 0x64), Some(Ipv4Error::BadVersion));
    assert_eq!(with(&|b| b[0] = 0x44), Some(Ipv4Error::BadHeaderLen));
    // IHL 15 (60 bytes) on a 40-byte buffer: the header is cut.
    assert_eq!(
        with(&|b| {
            b[0] = 0x4f;
            b.truncate(40)
        }),
        Some(Ipv4Error::Truncated)
    );
    assert_eq!(
        with(&|b| b[2..4].copy_from_slice(&19u16.to_be_bytes())),
        Some(Ipv4Error::BadTotalLen)
    );
    assert_eq!(with(&|b| b.truncate(0x72)), Some(Ipv4Error::Truncated));
    // The header half alone accepts what only the total length refuses.
    let mut b = good.clone();
    b.truncate(0x72);
    let p = Ipv4Packet::new_unchecked(&b[..]);
    assert_eq!(p.check_header_len(), Ok(()));
    assert_eq!(p.check_total_len(), Err(Ipv4Error::Truncated));
    assert!(Ipv4Packet::new_checked(&good[..]).is_ok());
}

#[test]
fn options_fragments_and_setters() {
    // IHL 6: one word of options (NOP NOP NOP EOL), checksummed over 24 bytes.
    let mut b = [0u8; 40];
    b[..20].copy_from_slice(&UDP_HEADER);
    b[20..24].copy_from_slice(&[1, 1, 1, 0]);
    let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
    p.set_version_and_header_len(VERSION, 24);
    p.set_total_len(40);
    p.set_dscp_ecn(0xb8 | 0x02);
    p.set_ident(0xbeef);
    p.set_ttl(3);
    p.set_protocol(IPPROTO_TCP);
    p.set_src_addr([10, 0, 0, 1]);
    p.set_dst_addr([10, 0, 0, 2]);
    p.set_whole_datagram(false);
    p.payload_mut().fill(0x5a);
    assert!(!p.verify_checksum());
    p.fill_checksum();
    assert!(p.verify_checksum());
    assert!(checksum::verify(&b[..24]));
    let p = Ipv4Packet::new_checked(&b[..]).unwrap();
    assert_eq!(p.header_len(), 24);
    assert_eq!(p.options(), &[1, 1, 1, 0]);
    assert_eq!(p.payload(), &[0x5a; 16]);
    assert_eq!((p.dscp_ecn(), p.ident(), p.ttl()), (0xba, 0xbeef, 3));
    assert!(!p.dont_frag());
    // smoltcp reads the same fields.
    let s = smoltcp::wire::Ipv4Packet::new_checked(&b[..]).unwrap();
    assert!(s.verify_checksum());
    assert_eq!(s.header_len(), 24);
    assert_eq!(s.next_header(), IpProtocol::Tcp);
    assert_eq!(s.src_addr(), Ipv4Address::new(10, 0, 0, 1));
    assert_eq!(s.dst_addr(), Ipv4Address::new(10, 0, 0, 2));
    assert_eq!((s.dscp(), s.ecn()), (0xb8 >> 2, 2));

    for (flags, frag) in [
        (0x4000u16, false),
        (0x2000, true),
        (0x0001, true),
        (0x1fff, true),
        (0x8000, false),
    ] {
        let mut h = UDP_HEADER;
        h[6..8].copy_from_slice(&flags.to_be_bytes());
        let p = Ipv4Packet::new_unchecked(&h[..]);
        assert_eq!(p.is_fragment(), frag, "{flags:#x}");
        assert_eq!(p.frag_offset(), (flags & 0x1fff) * 8);
        if frag {
            let mut b = udp_packet(0);
            b[..20].copy_from_slice(&h);
            let p = Ipv4Packet::new_checked(&b[..]).unwrap();
            assert_eq!(Ipv4Repr::parse(&p), Err(Ipv4Error::Fragment));
        }
    }
}

/// Random bytes, made to look like an IPv4 header often enough that every check is reached.
fn arb_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..90),
        any::<bool>(),
        0u8..16,
        0usize..100,
    )
        .prop_map(|(mut b, v4, ihl, total)| {
            if v4 && !b.is_empty() {
                b[0] = 0x40 | ihl;
            }
            if v4 && b.len() >= 4 {
                b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            }
            b
        })
}

fn arb_repr() -> impl Strategy<Value = Ipv4Repr> {
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u8>(),
        0usize..=65515,
        any::<u8>(),
        any::<u16>(),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(
            |(src, dst, protocol, payload_len, ttl, ident, dont_frag, dscp_ecn)| Ipv4Repr {
                src,
                dst,
                protocol,
                payload_len,
                ttl,
                ident,
                dont_frag,
                dscp_ecn,
            },
        )
}

proptest! {
    #[test]
    fn checked_view_never_panics(b in arb_packet()) {
        match Ipv4Packet::new_checked(&b[..]) {
            Ok(p) => {
                // Every accessor is safe on a checked view, and smoltcp accepts it too.
                let r = Ipv4Repr::parse(&p);
                prop_assert_eq!(r.is_err(), p.is_fragment());
                prop_assert_eq!(p.options().len() + 20, p.header_len());
                prop_assert_eq!(p.payload().len() + p.header_len(), p.total_len());
                let _ = p.verify_checksum();
                let s = smoltcp::wire::Ipv4Packet::new_checked(&b[..]).unwrap();
                prop_assert_eq!(usize::from(s.header_len()), p.header_len());
                prop_assert_eq!(usize::from(s.total_len()), p.total_len());
                prop_assert_eq!(s.payload(), p.payload());
                prop_assert_eq!(s.verify_checksum(), p.verify_checksum());
                prop_assert_eq!(s.src_addr().octets(), p.src_addr());
                prop_assert_eq!(s.dst_addr().octets(), p.dst_addr());
            }
            Err(e) => {
                // The error names the first check that fails.
                let v = b.first().map(|x| x >> 4);
                let hl = b.first().map(|x| usize::from(x & 0x0f) * 4);
                let want = if b.len() < 20 {
                    Ipv4Error::Truncated
                } else if v != Some(4) {
                    Ipv4Error::BadVersion
                } else if hl < Some(20) {
                    Ipv4Error::BadHeaderLen
                } else if hl > Some(b.len()) {
                    Ipv4Error::Truncated
                } else if usize::from(u16::from_be_bytes([b[2], b[3]])) < hl.unwrap_or(0) {
                    Ipv4Error::BadTotalLen
                } else {
                    Ipv4Error::Truncated
                };
                prop_assert_eq!(e, want);
            }
        }
    }

    #[test]
    fn repr_emit_parse_round_trips(r in arb_repr(), pad in 0usize..8) {
        let mut b = vec![0xa5u8; r.total_len() + pad];
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&p), Ok(r));
        prop_assert_eq!(p.payload().len(), r.payload_len);
        // smoltcp parses the same header (it verifies the checksum; DSCP/ECN and the
        // identification are not in its repr).
        let s = smoltcp::wire::Ipv4Packet::new_checked(&b[..]).unwrap();
        let sr = smoltcp::wire::Ipv4Repr::parse(&s, &ChecksumCapabilities::default()).unwrap();
        prop_assert_eq!(sr.src_addr.octets(), r.src);
        prop_assert_eq!(sr.dst_addr.octets(), r.dst);
        prop_assert_eq!(u8::from(sr.next_header), r.protocol);
        prop_assert_eq!(sr.payload_len, r.payload_len);
        prop_assert_eq!(sr.hop_limit, r.ttl);
        prop_assert_eq!(s.dont_frag(), r.dont_frag);
        prop_assert_eq!(s.ident(), r.ident);
    }

    #[test]
    fn verify_checksum_is_rfc_1071_over_the_header(
        mut h in proptest::collection::vec(any::<u8>(), 60),
        ihl in 5u8..16,
        fill in any::<bool>(),
    ) {
        h[0] = 0x40 | ihl;
        let hl = usize::from(ihl) * 4;
        let mut p = Ipv4Packet::new_unchecked(&mut h[..]);
        if fill {
            p.fill_checksum();
            prop_assert!(p.verify_checksum());
        }
        prop_assert_eq!(p.verify_checksum(), checksum::verify(&h[..hl]));
    }
}
