//! Property tests of the splice translation (AccelTCP §4.3, Figure 8): random segments
//! (payloads of any length, option mixes with SACK blocks, timestamps, MSS, window scale,
//! NOPs and unknown kinds, IPv4 options), random offsets including ones that wrap around 2³²,
//! and checksums at their edge values (0x0000 and its other form 0xffff). The differential
//! checksums must equal a full recomputation and verify; seq, ack, window, SACK and timestamp
//! fields must equal the arithmetic model of `SpliceInstallRepr`'s documentation; malformed
//! input is refused without a panic and without a change.

use offload_api::msg::{FourTuple, SpliceInstallRepr, SpliceSide};
use offload_api::splice::{
    directions, translate, translate_common, translate_established, translate_general, PairTracker,
    Side, TranslateError, Translated,
};
use offload_api::wire::checksum::{add_bytes, checksum, fold, l4_checksum, verify, verify_l4};
use offload_api::wire::tcp::TcpFlags;
use proptest::prelude::*;

/// One generated TCP option.
#[derive(Clone, Debug)]
enum Opt {
    Nop,
    Mss(u16),
    Ws(u8),
    SackPerm,
    Sack(Vec<(u32, u32)>),
    Ts(u32, u32),
    Unknown(u8, Vec<u8>),
}

impl Opt {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Opt::Nop => vec![1],
            Opt::Mss(m) => vec![2, 4, (m >> 8) as u8, *m as u8],
            Opt::Ws(s) => vec![3, 3, *s],
            Opt::SackPerm => vec![4, 2],
            Opt::Sack(b) => {
                let mut v = vec![5, (2 + 8 * b.len()) as u8];
                for (l, r) in b {
                    v.extend_from_slice(&l.to_be_bytes());
                    v.extend_from_slice(&r.to_be_bytes());
                }
                v
            }
            Opt::Ts(a, b) => {
                let mut v = vec![8, 10];
                v.extend_from_slice(&a.to_be_bytes());
                v.extend_from_slice(&b.to_be_bytes());
                v
            }
            Opt::Unknown(k, d) => {
                let mut v = vec![*k, (2 + d.len()) as u8];
                v.extend_from_slice(d);
                v
            }
        }
    }
}

fn opt() -> impl Strategy<Value = Opt> {
    prop_oneof![
        Just(Opt::Nop),
        any::<u16>().prop_map(Opt::Mss),
        (0u8..=14).prop_map(Opt::Ws),
        Just(Opt::SackPerm),
        proptest::collection::vec((edge_u32(), edge_u32()), 1..=3).prop_map(Opt::Sack),
        (edge_u32(), edge_u32()).prop_map(|(a, b)| Opt::Ts(a, b)),
        (
            prop_oneof![Just(30u8), Just(254u8), 9u8..=29],
            proptest::collection::vec(any::<u8>(), 0..4)
        )
            .prop_map(|(k, d)| Opt::Unknown(k, d)),
    ]
}

/// Values near the edges of the sequence space as often as anywhere else.
fn edge_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (0u32..64).prop_map(|d| u32::MAX - d),
        0u32..64,
        (0u32..64).prop_map(|d| 0x8000_0000u32.wrapping_sub(32).wrapping_add(d)),
    ]
}

fn side() -> impl Strategy<Value = SpliceSide> {
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u16>(),
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        0u16..4,
        (0u8..=14, 0u8..=14, any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(l, r, lp, rp, lm, rm, port, (pw, lw, sack, ts))| SpliceSide {
                tuple: FourTuple {
                    local_ip: l,
                    local_port: lp,
                    remote_ip: r,
                    remote_port: rp,
                },
                local_mac: lm,
                remote_mac: rm,
                port,
                peer_wscale: pw,
                local_wscale: lw,
                sack_permitted: sack,
                timestamps: ts,
            },
        )
}

fn install() -> impl Strategy<Value = SpliceInstallRepr> {
    (
        any::<u32>(),
        [edge_u32(), edge_u32(), edge_u32(), edge_u32()],
        side(),
        side(),
    )
        .prop_map(|(request_id, o, a, b)| SpliceInstallRepr {
            request_id,
            seq_offset: o[0],
            ack_offset: o[1],
            ts_offset_ab: o[2],
            ts_offset_ba: o[3],
            a,
            b,
            a_start: 0,
            b_start: 0,
        })
}

/// A generated segment.
#[derive(Clone, Debug)]
struct Seg {
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    opts: Vec<Opt>,
    payload: Vec<u8>,
    ip_opts: usize,
    /// 0: as computed; 1: force the TCP checksum to 0x0000; 2: force it to 0xffff (the other
    /// form of zero, which also verifies).
    tcp_edge: u8,
    ip_edge: u8,
    padding: usize,
}

/// Option lists: random mixes, and the NOP NOP TS layout of every established Linux segment
/// (the translation's fast path).
fn opts() -> impl Strategy<Value = Vec<Opt>> {
    prop_oneof![
        proptest::collection::vec(opt(), 0..6),
        (edge_u32(), edge_u32()).prop_map(|(a, b)| vec![Opt::Nop, Opt::Nop, Opt::Ts(a, b)]),
    ]
}

fn seg() -> impl Strategy<Value = Seg> {
    (
        (edge_u32(), edge_u32(), any::<u8>(), any::<u16>()),
        opts(),
        proptest::collection::vec(any::<u8>(), 0..301),
        (0usize..3, 0u8..3, 0u8..3, 0usize..8),
    )
        .prop_map(
            |((seq, ack, flags, window), opts, payload, (ip_opts, tcp_edge, ip_edge, padding))| {
                Seg {
                    seq,
                    ack,
                    flags,
                    window,
                    opts,
                    payload,
                    ip_opts: ip_opts * 4,
                    tcp_edge,
                    ip_edge,
                    padding,
                }
            },
        )
        .prop_filter("options fit in 40 bytes", |s| {
            s.opts.iter().map(|o| o.bytes().len()).sum::<usize>() <= 40
        })
}

/// Builds the frame of `s` arriving on side `from` of `r`; returns it, the TCP header
/// offset and each option's offset in the TCP header.
fn build(r: &SpliceInstallRepr, from: Side, s: &Seg) -> (Vec<u8>, usize, Vec<usize>) {
    let t = if from == Side::A {
        r.a.tuple
    } else {
        r.b.tuple
    };
    let mut opt_bytes = Vec::new();
    let mut at = Vec::new();
    for o in &s.opts {
        at.push(20 + opt_bytes.len());
        opt_bytes.extend(o.bytes());
    }
    while opt_bytes.len() % 4 != 0 {
        opt_bytes.push(0);
    }
    let ihl = 20 + s.ip_opts;
    let thl = 20 + opt_bytes.len();
    let total = ihl + thl + s.payload.len();
    let mut f = vec![0u8; 14 + total + s.padding];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..14 + ihl];
    ip[0] = 0x40 | (ihl / 4) as u8;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&t.remote_ip);
    ip[16..20].copy_from_slice(&t.local_ip);
    for b in ip[20..].iter_mut() {
        *b = 1; // IPv4 NOP options
    }
    let l4 = 14 + ihl;
    {
        let tcp = &mut f[l4..14 + total];
        tcp[0..2].copy_from_slice(&t.remote_port.to_be_bytes());
        tcp[2..4].copy_from_slice(&t.local_port.to_be_bytes());
        tcp[4..8].copy_from_slice(&s.seq.to_be_bytes());
        tcp[8..12].copy_from_slice(&s.ack.to_be_bytes());
        tcp[12] = ((thl / 4) as u8) << 4;
        tcp[13] = s.flags;
        tcp[14..16].copy_from_slice(&s.window.to_be_bytes());
        tcp[20..thl].copy_from_slice(&opt_bytes);
        tcp[thl..].copy_from_slice(&s.payload);
    }
    // IPv4 header checksum, with an edge value forced through the identification field.
    {
        let ip = &mut f[14..14 + ihl];
        if s.ip_edge > 0 {
            ip[4] = 0;
            ip[5] = 0;
            let w = !fold(add_bytes(0, ip));
            ip[4..6].copy_from_slice(&w.to_be_bytes());
        }
        let c = checksum(ip);
        let c = if s.ip_edge == 2 && c == 0 { 0xffff } else { c };
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(verify(ip));
    }
    // TCP checksum, with an edge value forced through the urgent pointer.
    let (src, dst) = (t.remote_ip, t.local_ip);
    {
        let tcp = &mut f[l4..14 + total];
        if s.tcp_edge > 0 {
            let acc = offload_api::wire::checksum::pseudo_header_sum(src, dst, 6, tcp.len() as u16);
            let w = !fold(add_bytes(acc, tcp));
            tcp[18..20].copy_from_slice(&w.to_be_bytes());
        }
        let c = l4_checksum(src, dst, 6, tcp);
        let c = if s.tcp_edge == 2 && c == 0 { 0xffff } else { c };
        tcp[16..18].copy_from_slice(&c.to_be_bytes());
        assert!(verify_l4(src, dst, 6, tcp));
    }
    (f, l4, at)
}

fn rd32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn translation_matches_model_and_checksums(
        r in install(),
        s in seg(),
        b_to_a in any::<bool>(),
    ) {
        let from = if b_to_a { Side::B } else { Side::A };
        let (ab, ba) = directions(&r);
        let d = if b_to_a { ba } else { ab };
        let (mut f, l4, at) = build(&r, from, &s);
        let before = f.clone();
        let t: Translated = translate(&mut f, l4, &d).unwrap();
        prop_assert_eq!(f.len(), before.len());

        let (fs, ts) = if b_to_a { (&r.b, &r.a) } else { (&r.a, &r.b) };
        // Model of SpliceInstallRepr's documentation.
        let (seq_m, ack_m, tsval_m, tsecr_m) = if b_to_a {
            (
                s.seq.wrapping_sub(r.ack_offset),
                s.ack.wrapping_sub(r.seq_offset),
                r.ts_offset_ba,
                r.ts_offset_ab,
            )
        } else {
            (
                s.seq.wrapping_add(r.seq_offset),
                s.ack.wrapping_add(r.ack_offset),
                r.ts_offset_ab,
                r.ts_offset_ba,
            )
        };
        let has_ack = s.flags & 0x10 != 0;
        let ack_m = if has_ack { ack_m } else { s.ack };
        let sack_shift = |v: u32| if b_to_a { v.wrapping_sub(r.seq_offset) } else { v.wrapping_add(r.ack_offset) };

        prop_assert_eq!(&f[0..6], &ts.remote_mac[..]);
        prop_assert_eq!(&f[6..12], &ts.local_mac[..]);
        let ip = &f[14..l4];
        prop_assert_eq!(&ip[12..16], &ts.tuple.local_ip[..]);
        prop_assert_eq!(&ip[16..20], &ts.tuple.remote_ip[..]);
        prop_assert!(verify(ip));
        let mut ip_zero = ip.to_vec();
        ip_zero[10] = 0;
        ip_zero[11] = 0;
        prop_assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), checksum(&ip_zero));

        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        let tcp = &f[l4..14 + total];
        prop_assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), ts.tuple.local_port);
        prop_assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), ts.tuple.remote_port);
        prop_assert_eq!(rd32(tcp, 4), seq_m);
        prop_assert_eq!(rd32(tcp, 8), ack_m);
        prop_assert_eq!((t.seq_in, t.seq_out, t.ack_in, t.ack_out), (s.seq, seq_m, s.ack, ack_m));
        let win = u16::from_be_bytes([tcp[14], tcp[15]]);
        let win_m = if s.flags & 0x02 != 0 {
            s.window
        } else {
            ((u64::from(s.window) << fs.peer_wscale) >> ts.local_wscale).min(65_535) as u16
        };
        prop_assert_eq!(win, win_m);
        for (o, &a) in s.opts.iter().zip(&at) {
            match o {
                Opt::Sack(blocks) => {
                    if ts.sack_permitted {
                        for (k, (l, rr)) in blocks.iter().enumerate() {
                            prop_assert_eq!(rd32(tcp, a + 2 + 8 * k), sack_shift(*l));
                            prop_assert_eq!(rd32(tcp, a + 6 + 8 * k), sack_shift(*rr));
                        }
                    } else {
                        prop_assert!(tcp[a..a + 2 + 8 * blocks.len()].iter().all(|&b| b == 1));
                        prop_assert!(t.sack_stripped);
                    }
                }
                Opt::Ts(v, e) => {
                    if ts.timestamps {
                        prop_assert_eq!(rd32(tcp, a + 2), v.wrapping_add(tsval_m));
                        prop_assert_eq!(rd32(tcp, a + 6), e.wrapping_sub(tsecr_m));
                    } else {
                        prop_assert!(tcp[a..a + 10].iter().all(|&b| b == 1));
                        prop_assert!(t.ts_stripped);
                    }
                }
                other => {
                    let b = other.bytes();
                    prop_assert_eq!(&tcp[a..a + b.len()], &b[..]);
                }
            }
        }
        // Payload and padding untouched.
        prop_assert_eq!(&f[14 + total - s.payload.len()..], &before[14 + total - s.payload.len()..]);
        prop_assert_eq!(t.payload_len as usize, s.payload.len());
        // The differential TCP checksum verifies and equals a full recomputation.
        let (src, dst) = (ts.tuple.local_ip, ts.tuple.remote_ip);
        prop_assert!(verify_l4(src, dst, 6, tcp));
        let mut zero = tcp.to_vec();
        zero[16] = 0;
        zero[17] = 0;
        prop_assert_eq!(u16::from_be_bytes([tcp[16], tcp[17]]), l4_checksum(src, dst, 6, &zero));
    }

    #[test]
    fn wrong_tuple_and_bad_options_are_refused_unchanged(
        r in install(),
        s in seg(),
        cut in 0usize..40,
        bad_len in prop_oneof![Just(0u8), Just(1u8), 41u8..=255],
    ) {
        let (ab, ba) = directions(&r);
        let (mut f, l4, _) = build(&r, Side::A, &s);
        let before = f.clone();
        // The B → A direction does not take a segment of side A (unless the tuples agree).
        if ba.in_key() != ab.in_key() {
            prop_assert_eq!(translate(&mut f, l4, &ba), Err(TranslateError::TupleMismatch));
            prop_assert_eq!(&f, &before);
        }
        // An option with an impossible length byte.
        let thl = usize::from(f[l4 + 12] >> 4) * 4;
        if thl > 20 {
            let i = 20 + cut % (thl - 20);
            let mut g = f.clone();
            // Make sure the walk reaches byte i: NOPs before it.
            for b in &mut g[l4 + 20..l4 + i] { *b = 1; }
            g[l4 + i] = 8;
            if i + 1 < thl {
                g[l4 + i + 1] = bad_len;
            }
            let g0 = g.clone();
            prop_assert_eq!(translate(&mut g, l4, &ab), Err(TranslateError::BadOption));
            prop_assert_eq!(g, g0);
        }
        // Truncated frames.
        let mut h = f[..f.len().min(l4 + cut.min(19))].to_vec();
        let h0 = h.clone();
        prop_assert!(translate(&mut h, l4, &ab).is_err());
        prop_assert_eq!(h, h0);
    }

    /// The fixed-offset translation of the common shape does exactly what the general walk
    /// does, and takes every segment of that shape (`translate` uses the first when it
    /// applies; `translation_matches_model_and_checksums` checks `translate` itself).
    #[test]
    fn common_shape_translation_equals_the_general_one(
        r in install(),
        s in seg(),
        b_to_a in any::<bool>(),
        ts_off in any::<bool>(),
        same_scale in any::<bool>(),
    ) {
        let from = if b_to_a { Side::B } else { Side::A };
        let (ab, ba) = directions(&r);
        let mut d = if b_to_a { ba } else { ab };
        if ts_off {
            d.out_ts = false;
        }
        // Both peers with the same window scale (the window passes unchanged; the fast
        // path skips its rewrite), as often as different ones.
        if same_scale {
            d.out_wscale = d.in_wscale;
        }
        let (f, l4, _) = build(&r, from, &s);
        let (mut fast, mut general) = (f.clone(), f.clone());
        let common_shape = d.out_ts
            && l4 == 34
            && matches!(s.opts[..], [Opt::Nop, Opt::Nop, Opt::Ts(..)]);
        let t = translate_common(&mut fast, &d);
        let g = translate_general(&mut general, l4, &d);
        // The fast path's form, on a frame with the headers it checks itself (the segment
        // is built on `d`'s 4-tuple): the same result.
        if l4 == 34 {
            let mut est = f.clone();
            prop_assert_eq!(translate_established(&mut est, &d), t);
            prop_assert_eq!(&est, &fast);
        }
        prop_assert_eq!(t.is_some(), common_shape);
        match t {
            Some(t) => {
                prop_assert_eq!(Ok(t), g);
                prop_assert_eq!(fast, general);
            }
            None => prop_assert_eq!(&fast, &f),
        }
        // Another direction's segment is never taken.
        let other = if b_to_a { ab } else { ba };
        let mut g2 = f.clone();
        prop_assert_eq!(translate_common(&mut g2, &other), None);
        prop_assert_eq!(g2, f);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        r in install(),
        mut f in proptest::collection::vec(any::<u8>(), 0..120),
        l4 in 0usize..80,
        ipv4 in any::<bool>(),
    ) {
        if ipv4 && f.len() > 15 {
            f[12] = 0x08;
            f[13] = 0x00;
            f[14] = 0x45;
        }
        let (ab, _) = directions(&r);
        let before = f.clone();
        let mut g = f.clone();
        if translate(&mut f, l4, &ab).is_err() {
            prop_assert_eq!(&f, &before);
        }
        if translate_common(&mut g, &ab).is_none() {
            prop_assert_eq!(g, before);
        }
    }
}

fn seg_t(flags: TcpFlags, seq: u32, ack: u32, len: u32) -> Translated {
    Translated {
        flags,
        seq_in: seq,
        seq_out: seq,
        ack_in: ack,
        ack_out: ack,
        payload_len: len,
        out_port: 0,
        sack_stripped: false,
        ts_stripped: false,
        ts_missing: false,
    }
}

#[test]
fn tracker_fin_both_ways_and_acks() {
    let ack = TcpFlags::ACK;
    let fin = TcpFlags::FIN | TcpFlags::ACK;
    // A's relayed bytes start at u32::MAX - 5, B's at 100.
    let mut p = PairTracker::new(5, u32::MAX - 5, 100);
    // A sends 10 bytes and a FIN at u32::MAX - 5: its FIN ends past the wrap.
    p.observe(Side::A, &seg_t(fin, u32::MAX - 5, 100, 10), 6);
    // A retransmission of the same bytes, and one of bytes before the splice point: still
    // 10 bytes relayed.
    p.observe(Side::A, &seg_t(ack, u32::MAX - 5, 100, 10), 6);
    p.observe(Side::A, &seg_t(ack, u32::MAX - 100, 100, 50), 6);
    assert_eq!(p.dirs[0].fin_end, Some(5));
    // B acknowledges part of it: not yet.
    p.observe(Side::B, &seg_t(ack, 100, 3, 0), 7);
    assert!(!p.dirs[0].fin_acked);
    // B acknowledges the FIN and sends its own.
    p.observe(Side::B, &seg_t(fin, 100, 5, 0), 8);
    assert!(p.dirs[0].fin_acked && !p.closed_by_fin());
    p.observe(Side::A, &seg_t(ack, 5, 101, 0), 9);
    assert!(p.closed_by_fin());
    assert_eq!(p.bytes(), (10, 0));
    assert_eq!(
        p.dirs[0].bytes, 70,
        "translated payload, retransmissions included"
    );
    assert_eq!(p.packets(), (4, 2));
    assert_eq!(p.last_activity, 9);
    assert_eq!(p.rst, None);
}

#[test]
fn tracker_first_rst_side_wins() {
    let mut p = PairTracker::new(0, 0, 0);
    p.observe(Side::B, &seg_t(TcpFlags::RST, 1, 0, 0), 1);
    p.observe(Side::A, &seg_t(TcpFlags::RST, 1, 0, 0), 2);
    assert_eq!(p.rst, Some(Side::B));
    assert_eq!(Side::B.code(), 2);
}
