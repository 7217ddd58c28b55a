//! Tests of segment parsing and emission.
use super::*;
use proptest::prelude::*;
use smoltcp::wire::{IpAddress, Ipv4Address, TcpOption, TcpPacket};

/// The TCP checksum of `tcp` as it stands: 0 when a filled checksum is right; with the
/// field zeroed, the value to store (RFC 9293 §3.1).
fn checksum(src: [u8; 4], dst: [u8; 4], tcp: &[u8]) -> u16 {
    crate::wire::checksum::l4_checksum(src, dst, packet::IPPROTO_TCP, tcp)
}

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [192, 168, 1, 20];

fn ip(a: [u8; 4]) -> IpAddress {
    IpAddress::Ipv4(Ipv4Address::from(a))
}

fn blocks(v: &[(u32, u32)]) -> ([SackBlock; MAX_SACK_BLOCKS], u8) {
    let mut s = [SackBlock::default(); MAX_SACK_BLOCKS];
    for (slot, &(l, r)) in s.iter_mut().zip(v) {
        *slot = SackBlock {
            left: Seq(l),
            right: Seq(r),
        };
    }
    (s, v.len().min(MAX_SACK_BLOCKS) as u8)
}

fn syn_header() -> TcpHeader {
    TcpHeader {
        src_port: 40000,
        dst_port: 80,
        seq: Seq(0x0102_0304),
        ack: Seq(0),
        flags: TcpFlags::SYN,
        window: 64240,
        options: TcpOptions {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: Some((0xdead_beef, 0)),
            ..TcpOptions::default()
        },
    }
}

/// A minimal 20-byte header followed by `opts` (padded to 4 bytes with EOL) and `payload`.
fn with_options(opts: &[u8], payload: &[u8]) -> Vec<u8> {
    let olen = opts.len().div_ceil(4) * 4;
    let mut v = vec![0u8; 20 + olen];
    v[12] = (((20 + olen) / 4) as u8) << 4;
    v[13] = TcpFlags::ACK.0;
    v[20..20 + opts.len()].copy_from_slice(opts);
    v.extend_from_slice(payload);
    v
}

#[test]
fn syn_layout_matches_linux() {
    let h = syn_header();
    assert_eq!(header_len(&h), 40);
    let mut buf = [0xaau8; 60];
    assert_eq!(emit(&h, &mut buf), 40);
    assert_eq!(buf[12], 10 << 4);
    assert_eq!(&buf[16..20], &[0, 0, 0, 0]);
    assert_eq!(
        &buf[20..40],
        &[
            2, 4, 0x05, 0xb4, // MSS 1460
            4, 2, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, // SACK_PERM, TS
            1, 3, 3, 7, // NOP, WS 7
        ]
    );
    let seg = parse(&buf[..40]).unwrap();
    assert_eq!(seg.options, h.options);
    assert_eq!(seg.flags, TcpFlags::SYN);
    assert_eq!(seg.seq, Seq(0x0102_0304));
    assert!(seg.payload.is_empty());
    assert_eq!(seg.seg_len(), 1);
}

#[test]
fn syn_without_sack_perm_pads_ts_with_nops() {
    let mut h = syn_header();
    h.options.sack_permitted = false;
    let mut buf = [0u8; 60];
    assert_eq!(emit(&h, &mut buf), 40);
    assert_eq!(&buf[24..28], &[1, 1, 8, 10]);
    h.options.timestamp = None;
    h.options.sack_permitted = true;
    assert_eq!(emit(&h, &mut buf), 32);
    assert_eq!(&buf[20..32], &[2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]);
}

#[test]
fn syn_only_options_dropped_without_syn() {
    let mut h = syn_header();
    h.flags = TcpFlags::ACK;
    let (sack, sack_len) = blocks(&[(1, 2)]);
    h.options.sack = sack;
    h.options.sack_len = sack_len;
    let mut buf = [0u8; 60];
    assert_eq!(emit(&h, &mut buf), 20 + 12 + 12);
    assert_eq!(&buf[20..24], &[1, 1, 8, 10]);
    assert_eq!(&buf[32..36], &[1, 1, 5, 10]);
    let o = parse(&buf[..44]).unwrap().options;
    assert_eq!(o.mss, None);
    assert_eq!(o.window_scale, None);
    assert!(!o.sack_permitted);
    assert_eq!(o.timestamp, Some((0xdead_beef, 0)));
    assert_eq!(o.sack_blocks(), &sack[..1]);
}

#[test]
fn sack_blocks_limited_to_what_fits() {
    let (sack, sack_len) = blocks(&[(1, 2), (3, 4), (5, 6), (7, 8)]);
    let mut h = TcpHeader {
        flags: TcpFlags::ACK,
        options: TcpOptions {
            sack,
            sack_len,
            ..TcpOptions::default()
        },
        ..TcpHeader::default()
    };
    // No timestamps: 4 blocks, NOP NOP SACK(34) = 36 bytes.
    assert_eq!(header_len(&h), 56);
    // Timestamps: 3 blocks, 12 + 28 = 40 bytes.
    h.options.timestamp = Some((1, 2));
    assert_eq!(header_len(&h), 60);
    let mut buf = [0u8; 60];
    emit(&h, &mut buf);
    assert_eq!(parse(&buf).unwrap().options.sack_blocks(), &sack[..3]);
    // SYN with everything: 20 bytes of SYN options leave room for 2 blocks.
    let mut s = syn_header();
    s.options.sack = sack;
    s.options.sack_len = 4;
    assert_eq!(header_len(&s), 60);
    emit(&s, &mut buf);
    assert_eq!(parse(&buf).unwrap().options.sack_blocks(), &sack[..2]);
    // An out-of-range sack_len is clamped, not a panic.
    h.options.sack_len = 200;
    h.options.timestamp = None;
    assert_eq!(header_len(&h), 56);
}

#[test]
fn bare_ack_is_twenty_bytes() {
    let h = TcpHeader {
        src_port: 1,
        dst_port: 2,
        seq: Seq(3),
        ack: Seq(4),
        flags: TcpFlags::ACK | TcpFlags::PSH,
        window: 5,
        options: TcpOptions::default(),
    };
    let mut buf = [0xffu8; 20];
    assert_eq!(emit(&h, &mut buf), 20);
    assert_eq!(
        buf,
        [0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0x50, 0x18, 0, 5, 0, 0, 0, 0]
    );
}

#[test]
#[should_panic]
fn emit_into_short_buffer_panics() {
    let mut buf = [0u8; 39];
    emit(&syn_header(), &mut buf);
}

#[test]
fn parse_fixed_errors() {
    assert_eq!(parse(&[]).unwrap_err(), TcpError::Truncated);
    assert_eq!(parse(&[0u8; 19]).unwrap_err(), TcpError::Truncated);
    let mut v = [0u8; 24];
    for doff in 0..5u8 {
        v[12] = doff << 4;
        assert_eq!(parse(&v).unwrap_err(), TcpError::BadDataOffset);
    }
    v[12] = 7 << 4; // 28 bytes > 24
    assert_eq!(parse(&v).unwrap_err(), TcpError::BadDataOffset);
    v[12] = 6 << 4;
    v[20..24].copy_from_slice(&[1, 1, 1, 0]);
    let seg = parse(&v).unwrap();
    assert_eq!(seg.options, TcpOptions::default());
    assert!(seg.payload.is_empty());
}

#[test]
fn parse_payload_and_flags() {
    let v = with_options(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8], b"hello");
    let seg = parse(&v).unwrap();
    assert_eq!(seg.payload, b"hello");
    assert_eq!(seg.options.timestamp, Some((9, 8)));
    assert_eq!(seg.flags, TcpFlags::ACK);
    assert_eq!(seg.seg_len(), 5);
}

#[test]
fn malformed_options() {
    use TcpError::BadOption;
    let cases: &[(&[u8], &str)] = &[
        (&[2, 0, 0, 0], "length 0"),
        (&[2, 1, 0, 0], "length 1"),
        (&[99, 0], "unknown kind, length 0"),
        (&[99, 1], "unknown kind, length 1"),
        (&[1, 1, 1, 2], "length byte missing"),
        (&[1, 1, 99, 3], "runs past the header"),
        (&[2, 8, 5, 0xb4], "MSS runs past the header"),
        (&[2, 3, 5, 0], "MSS length 3"),
        (&[2, 5, 5, 0xb4, 0, 0, 0, 0], "MSS length 5"),
        (&[3, 2, 1, 1], "WS length 2"),
        (&[3, 4, 7, 0], "WS length 4"),
        (&[4, 3, 0, 0], "SACK_PERM length 3"),
        (&[8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "TS length 9"),
        (&[8, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "TS length 11"),
        (&[5, 2, 0, 0], "SACK with no blocks"),
        (&[5, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "SACK length 9"),
        (&[5, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "SACK length 11"),
    ];
    for (opts, what) in cases {
        assert_eq!(
            parse(&with_options(opts, b"")).unwrap_err(),
            BadOption,
            "{what}"
        );
    }
    // Five SACK blocks: 42 bytes, needs an options area larger than 40 bytes; test the
    // options parser directly.
    let mut five = vec![5u8, 42];
    five.extend_from_slice(&[0; 40]);
    assert_eq!(parse_options(&five).unwrap_err(), BadOption);
    let mut four = vec![5u8, 34];
    four.extend_from_slice(&[0; 32]);
    assert_eq!(parse_options(&four).unwrap().sack_len, 4);
}

#[test]
fn option_list_rules() {
    // EOL ends the list: garbage after it is ignored.
    let o = parse(&with_options(&[2, 4, 1, 0, 0, 2, 0, 0], b""))
        .unwrap()
        .options;
    assert_eq!(o.mss, Some(256));
    // Unknown kinds with valid lengths are skipped (kind 30 MPTCP, kind 34 TFO cookie).
    let o = parse(&with_options(
        &[30, 4, 0xab, 0xcd, 34, 2, 1, 3, 3, 14, 4, 2],
        b"",
    ))
    .unwrap()
    .options;
    assert_eq!(o.window_scale, Some(14));
    assert!(o.sack_permitted);
    // Values above 14 kept as sent.
    let o = parse(&with_options(&[3, 3, 200, 0], b"")).unwrap().options;
    assert_eq!(o.window_scale, Some(200));
    // SACK with one block, big-endian.
    let o = parse(&with_options(&[1, 1, 5, 10, 0, 0, 1, 0, 0, 0, 2, 0], b""))
        .unwrap()
        .options;
    assert_eq!(
        o.sack_blocks(),
        &[SackBlock {
            left: Seq(256),
            right: Seq(512)
        }]
    );
    // SYN-only options on a non-SYN segment are parsed.
    let o = parse(&with_options(&[2, 4, 5, 0xb4], b"")).unwrap().options;
    assert_eq!(o.mss, Some(1460));
}

#[test]
fn checksum_known_value() {
    // By hand: pseudo-header 0a00+0001+c0a8+0114+0006+0014 = cbd7; header words
    // 0001+0002+0000+0003+0000+0004+5010+0005 = 501f; cbd7+501f = 1_bf6 -> 1bf7.
    let h = TcpHeader {
        src_port: 1,
        dst_port: 2,
        seq: Seq(3),
        ack: Seq(4),
        flags: TcpFlags::ACK,
        window: 5,
        options: TcpOptions::default(),
    };
    let mut buf = [0u8; 20];
    emit(&h, &mut buf);
    let c = checksum(SRC, DST, &buf);
    assert_eq!(c, !0x1bf7);
    buf[16..18].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checksum(SRC, DST, &buf), 0);
    assert!(TcpPacket::new_checked(&buf[..])
        .unwrap()
        .verify_checksum(&ip(SRC), &ip(DST)));
}

/// What `parse(emit(h))` should give back for `h`'s options.
fn expected_options(h: &TcpHeader) -> TcpOptions {
    let mut o = h.options;
    let syn = h.flags.has(TcpFlags::SYN);
    if !syn {
        o.mss = None;
        o.window_scale = None;
        o.sack_permitted = false;
    }
    let used = if syn {
        4 * o.mss.is_some() as usize
            + 4 * o.window_scale.is_some() as usize
            + if o.timestamp.is_some() {
                12
            } else {
                4 * o.sack_permitted as usize
            }
    } else {
        12 * o.timestamp.is_some() as usize
    };
    let fit = match used {
        0..=4 => 4,
        5..=12 => 3,
        13..=20 => 2,
        _ => unreachable!(),
    };
    let n = (o.sack_len as usize).min(fit);
    for b in &mut o.sack[n..] {
        *b = SackBlock::default();
    }
    o.sack_len = n as u8;
    o
}

fn arb_header() -> impl Strategy<Value = TcpHeader> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
        (any::<u8>(), any::<u16>()),
        (
            any::<Option<u16>>(),
            any::<Option<u8>>(),
            any::<bool>(),
            proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
            any::<Option<(u32, u32)>>(),
        ),
    )
        .prop_map(
            |((sp, dp, seq, ack), (flags, window), (mss, ws, sp_ok, sack, ts))| {
                let (blocks, len) = blocks(&sack);
                TcpHeader {
                    src_port: sp,
                    dst_port: dp,
                    seq: Seq(seq),
                    ack: Seq(ack),
                    flags: TcpFlags(flags),
                    window,
                    options: TcpOptions {
                        mss,
                        window_scale: ws,
                        sack_permitted: sp_ok,
                        sack: blocks,
                        sack_len: len,
                        timestamp: ts,
                    },
                }
            },
        )
}

/// TcpOptions as smoltcp's parser reads them (its SACK option keeps at most 3 blocks).
fn smoltcp_options(opts: &[u8]) -> TcpOptions {
    let mut o = TcpOptions::default();
    let mut rest = opts;
    while !rest.is_empty() {
        let (next, opt) = TcpOption::parse(rest).expect("smoltcp rejects our options");
        match opt {
            TcpOption::EndOfList => break,
            TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
            TcpOption::MaxSegmentSize(m) => o.mss = Some(m),
            TcpOption::WindowScale(s) => o.window_scale = Some(s),
            TcpOption::SackPermitted => o.sack_permitted = true,
            TcpOption::TimeStamp { tsval, tsecr } => o.timestamp = Some((tsval, tsecr)),
            TcpOption::SackRange(r) => {
                let v: Vec<(u32, u32)> = r.iter().flatten().copied().collect();
                (o.sack, o.sack_len) = blocks(&v);
            }
        }
        rest = next;
    }
    o
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn emit_parse_roundtrip(
        h in arb_header(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let hl = header_len(&h);
        prop_assert!(matches!(hl, 20 | 24 | 28 | 32 | 36 | 40 | 44 | 48 | 52 | 56 | 60));
        let mut buf = vec![0x5au8; hl + payload.len()];
        prop_assert_eq!(emit(&h, &mut buf), hl);
        buf[hl..].copy_from_slice(&payload);
        prop_assert_eq!((buf[12] >> 4) as usize * 4, hl);
        prop_assert_eq!(buf[12] & 0x0f, 0);
        prop_assert_eq!(&buf[16..20], &[0u8, 0, 0, 0][..]);
        let seg = parse(&buf).unwrap();
        prop_assert_eq!(seg.src_port, h.src_port);
        prop_assert_eq!(seg.dst_port, h.dst_port);
        prop_assert_eq!(seg.seq, h.seq);
        prop_assert_eq!(seg.ack, h.ack);
        prop_assert_eq!(seg.flags, h.flags);
        prop_assert_eq!(seg.window, h.window);
        prop_assert_eq!(seg.payload, &payload[..]);
        prop_assert_eq!(seg.options, expected_options(&h));
    }

    #[test]
    fn emitted_segments_agree_with_smoltcp(
        h in arb_header(),
        payload in proptest::collection::vec(any::<u8>(), 0..1500),
        src: [u8; 4],
        dst: [u8; 4],
    ) {
        let hl = header_len(&h);
        let mut buf = vec![0u8; hl + payload.len()];
        emit(&h, &mut buf);
        buf[hl..].copy_from_slice(&payload);

        // Checksum: ours equals smoltcp's fill_checksum, and verifies to 0.
        let ours = checksum(src, dst, &buf);
        let mut theirs = buf.clone();
        let mut p = TcpPacket::new_checked(&mut theirs[..]).unwrap();
        p.fill_checksum(&ip(src), &ip(dst));
        prop_assert_eq!(ours, p.checksum());
        buf[16..18].copy_from_slice(&ours.to_be_bytes());
        prop_assert_eq!(checksum(src, dst, &buf), 0);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum(&ip(src), &ip(dst)));

        // TcpHeader fields and options as smoltcp reads them.
        prop_assert_eq!(p.header_len() as usize, hl);
        prop_assert_eq!(p.src_port(), h.src_port);
        prop_assert_eq!(p.dst_port(), h.dst_port);
        prop_assert_eq!(p.window_len(), h.window);
        prop_assert_eq!(p.payload(), &payload[..]);
        let mut want = expected_options(&h);
        if want.sack_len > 3 {
            want.sack[3] = SackBlock::default();
            want.sack_len = 3;
        }
        prop_assert_eq!(smoltcp_options(p.options()), want);
    }

    #[test]
    fn checksum_detects_single_bit_errors(
        data in proptest::collection::vec(any::<u8>(), 20..200),
        bit in any::<proptest::sample::Index>(),
    ) {
        let mut buf = data;
        buf[16] = 0;
        buf[17] = 0;
        let c = checksum(SRC, DST, &buf);
        buf[16..18].copy_from_slice(&c.to_be_bytes());
        prop_assert_eq!(checksum(SRC, DST, &buf), 0);
        let i = bit.index(buf.len() * 8);
        buf[i / 8] ^= 1 << (i % 8);
        prop_assert_ne!(checksum(SRC, DST, &buf), 0);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..120)) {
        if let Ok(seg) = parse(&data) {
            prop_assert!(seg.options.sack_len as usize <= MAX_SACK_BLOCKS);
            prop_assert!(seg.payload.len() + 20 <= data.len());
        }
    }

    #[test]
    fn parse_never_panics_on_mutated_segments(
        h in arb_header(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<proptest::sample::Index>(),
    ) {
        let hl = header_len(&h);
        let mut buf = vec![0u8; hl + 8];
        emit(&h, &mut buf);
        for (i, v) in edits {
            let i = i.index(buf.len());
            buf[i] = v;
        }
        let n = cut.index(buf.len() + 1);
        let _ = parse(&buf[..n]);
        if let Ok(seg) = parse(&buf) {
            // Whatever parses must re-emit and parse to itself (modulo the emit rules).
            let h2 = TcpHeader {
                src_port: seg.src_port,
                dst_port: seg.dst_port,
                seq: seg.seq,
                ack: seg.ack,
                flags: seg.flags,
                window: seg.window,
                options: seg.options,
            };
            let mut out = [0u8; 60];
            let l2 = emit(&h2, &mut out);
            prop_assert_eq!(parse(&out[..l2]).unwrap().options, expected_options(&h2));
        }
    }
}
