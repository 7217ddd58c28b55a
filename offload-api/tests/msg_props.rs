//! Property tests of the host ↔ NIC messages: every message survives emit → parse as a whole
//! frame, truncated frames are refused, and no input makes a parser panic.

use offload_api::msg::*;
use proptest::prelude::*;

fn tuple() -> impl Strategy<Value = FourTuple> {
    (
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<[u8; 4]>(),
        any::<u16>(),
    )
        .prop_map(|(local_ip, local_port, remote_ip, remote_port)| FourTuple {
            local_ip,
            local_port,
            remote_ip,
            remote_port,
        })
}

fn shift() -> impl Strategy<Value = u8> {
    0..=MAX_WSCALE
}

fn side() -> impl Strategy<Value = SpliceSide> {
    (
        tuple(),
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        any::<u16>(),
        shift(),
        shift(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(tuple, local_mac, remote_mac, port, peer_wscale, local_wscale, sack, ts)| {
                SpliceSide {
                    tuple,
                    local_mac,
                    remote_mac,
                    port,
                    peer_wscale,
                    local_wscale,
                    sack_permitted: sack,
                    timestamps: ts,
                }
            },
        )
}

fn state() -> impl Strategy<Value = TcpState> {
    (0u16..=10).prop_map(|c| TcpState::from_u16(c).unwrap())
}

fn setup() -> impl Strategy<Value = SetupRepr> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        any::<u16>(),
        proptest::option::of((shift(), shift())),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(iss, tsval, peer_mss, local_mss, ws, sack, ts)| SetupRepr {
                iss,
                syn_ack_tsval: tsval,
                options: NegotiatedOptions {
                    peer_mss,
                    local_mss,
                    window_scale: ws.map(|(peer, local)| WindowScales { peer, local }),
                    sack_permitted: sack,
                    timestamps: ts,
                },
            },
        )
}

fn teardown() -> impl Strategy<Value = TeardownRepr> {
    (
        (any::<u16>(), state(), any::<u32>()),
        any::<[u32; 5]>(),
        (shift(), shift(), any::<bool>()),
        proptest::option::of(any::<(u32, u32)>()),
    )
        .prop_map(
            |((mss, state, rto_us), s, (sw, rw, sack), ts)| TeardownRepr {
                mss,
                state,
                rto_us,
                snd_una: s[0],
                snd_nxt: s[1],
                rcv_nxt: s[2],
                snd_wnd: s[3],
                rcv_wnd: s[4],
                snd_wscale: sw,
                rcv_wscale: rw,
                sack_permitted: sack,
                timestamps: ts.map(|(ts_recent, ts_val)| Timestamps { ts_recent, ts_val }),
            },
        )
}

fn splice_install() -> impl Strategy<Value = SpliceInstallRepr> {
    (any::<[u32; 7]>(), side(), side()).prop_map(|(v, a, b)| SpliceInstallRepr {
        request_id: v[0],
        seq_offset: v[1],
        ack_offset: v[2],
        ts_offset_ab: v[3],
        ts_offset_ba: v[4],
        a,
        b,
        a_start: v[5],
        b_start: v[6],
    })
}

fn splice_close() -> impl Strategy<Value = SpliceCloseRepr> {
    (
        any::<u32>(),
        (0u8..=2).prop_map(|c| CloseReason::from_u8(c).unwrap()),
        0u8..=2,
        tuple(),
        tuple(),
        any::<[u64; 4]>(),
    )
        .prop_map(|(request_id, reason, rst_side, a, b, n)| SpliceCloseRepr {
            request_id,
            reason,
            rst_side,
            a,
            b,
            bytes_ab: n[0],
            bytes_ba: n[1],
            packets_ab: n[2],
            packets_ba: n[3],
        })
}

fn listen_add() -> impl Strategy<Value = ListenAddRepr> {
    (
        any::<u32>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u16>(),
        proptest::option::of(shift()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(request_id, addr, port, mss, ws, sack, ts)| ListenAddRepr {
                request_id,
                addr,
                port,
                options: ListenOptions {
                    mss,
                    window_scale: ws,
                    sack_permitted: sack,
                    timestamps: ts,
                },
            },
        )
}

fn install_ack() -> impl Strategy<Value = InstallAckRepr> {
    (
        any::<u32>(),
        proptest::sample::select(MsgType::ALL.to_vec()),
        (0u8..=5).prop_map(|c| AckStatus::from_u8(c).unwrap()),
    )
        .prop_map(|(request_id, request_type, status)| InstallAckRepr {
            request_id,
            request_type,
            status,
        })
}

fn flow_add() -> impl Strategy<Value = TonicFlowAddRepr> {
    (
        any::<[u32; 5]>(),
        tuple(),
        any::<([u8; 6], [u8; 6])>(),
        any::<(u16, u16, u64)>(),
        "[!-~]{1,16}",
        0u8..=offload_api::msg::MAX_WSCALE,
    )
        .prop_map(
            |(v, tuple, (lm, rm), (port, mss, rate), name, ws)| TonicFlowAddRepr {
                request_id: v[0],
                flow_id: v[1],
                tuple,
                local_mac: lm,
                remote_mac: rm,
                port,
                mss,
                init_seq: v[2],
                init_cwnd: v[3],
                init_rate_bps: rate,
                init_credit: v[4],
                module: ModuleName::new(&name).unwrap(),
                snd_wscale: ws,
            },
        )
}

/// A message and a payload that its type accepts.
fn message_and_payload() -> impl Strategy<Value = (Message, Vec<u8>)> {
    let ip = proptest::collection::vec(any::<u8>(), 1..200);
    let opt_ip = proptest::collection::vec(any::<u8>(), 0..200);
    let data = proptest::collection::vec(any::<u8>(), 0..200);
    prop_oneof![
        (setup(), ip).prop_map(|(r, p)| (Message::Setup(r), p)),
        (teardown(), opt_ip.clone()).prop_map(|(r, p)| (Message::Teardown(r), p)),
        (splice_install(), opt_ip).prop_map(|(r, p)| (Message::SpliceInstall(r), p)),
        splice_close().prop_map(|r| (Message::SpliceClose(r), vec![])),
        listen_add().prop_map(|r| (Message::ListenAdd(r), vec![])),
        any::<(u32, [u8; 4], u16)>().prop_map(|(request_id, addr, port)| (
            Message::ListenRemove(ListenRemoveRepr {
                request_id,
                addr,
                port
            }),
            vec![]
        )),
        install_ack().prop_map(|r| (Message::InstallAck(r), vec![])),
        any::<u32>()
            .prop_map(|count| (Message::TeardownCount(TeardownCountRepr { count }), vec![])),
        flow_add().prop_map(|r| (Message::TonicFlowAdd(r), vec![])),
        any::<(u32, u32)>().prop_map(|(request_id, flow_id)| (
            Message::TonicFlowRemove(TonicFlowRemoveRepr {
                request_id,
                flow_id
            }),
            vec![]
        )),
        (any::<(u32, u32)>(), data).prop_map(|((flow_id, tail), d)| (
            Message::TonicTail(TonicTailRepr {
                flow_id,
                tail,
                data_len: d.len() as u32
            }),
            d
        )),
        any::<(u32, u32)>().prop_map(|(flow_id, delivered)| (
            Message::TonicDelivered(TonicDeliveredRepr { flow_id, delivered }),
            vec![]
        )),
    ]
}

/// Runs every view's checked constructor and parser over `msg`; none may panic.
fn parse_every_view(msg: &[u8]) {
    macro_rules! try_view {
        ($($frame:ident => $repr:ident),*) => {$(
            if let Ok(f) = $frame::new_checked(msg) {
                let _ = $repr::parse(&f);
                let _ = f.payload();
            }
            // Parsing an unchecked view checks first: never panics either.
            let _ = $repr::parse(&$frame::new_unchecked(msg));
        )*};
    }
    try_view!(
        SetupFrame => SetupRepr,
        TeardownFrame => TeardownRepr,
        SpliceInstallFrame => SpliceInstallRepr,
        SpliceCloseFrame => SpliceCloseRepr,
        ListenAddFrame => ListenAddRepr,
        ListenRemoveFrame => ListenRemoveRepr,
        InstallAckFrame => InstallAckRepr,
        TeardownCountFrame => TeardownCountRepr,
        TonicFlowAddFrame => TonicFlowAddRepr,
        TonicFlowRemoveFrame => TonicFlowRemoveRepr,
        TonicTailFrame => TonicTailRepr,
        TonicDeliveredFrame => TonicDeliveredRepr
    );
    if let Ok(f) = TonicTailFrame::new_checked(msg) {
        let _ = f.data();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_message_round_trips(
        (m, payload) in message_and_payload(),
        dst in any::<[u8; 6]>(),
        src in any::<[u8; 6]>(),
        padding in 0usize..8,
    ) {
        let mut frame = Vec::new();
        m.write_frame(dst, src, &payload, &mut frame).unwrap();
        prop_assert_eq!(frame.len(), m.frame_len(payload.len()));
        prop_assert_eq!(classify(&frame), FrameKind::Control(m.msg_type()));
        let p = parse_frame(&frame).unwrap();
        prop_assert_eq!(p.message, m);
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert_eq!((p.dst, p.src), (dst, src));

        // emit_frame into a larger buffer writes the same bytes.
        let mut big = vec![0xAAu8; frame.len() + 5];
        prop_assert_eq!(m.emit_frame(dst, src, &payload, &mut big), Ok(frame.len()));
        prop_assert_eq!(&big[..frame.len()], &frame[..]);

        // Ethernet padding after a message without a variable payload changes nothing.
        if !matches!(m.msg_type().payload(), PayloadKind::IpPacket | PayloadKind::OptionalIpPacket) {
            frame.resize(frame.len() + padding, 0);
            let p = parse_frame(&frame).unwrap();
            prop_assert_eq!(p.message, m);
            prop_assert_eq!(p.payload, &payload[..]);
        }
    }

    #[test]
    fn truncated_headers_are_refused(
        (m, payload) in message_and_payload(),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut frame = Vec::new();
        m.write_frame([0; 6], [0; 6], &payload, &mut frame).unwrap();
        let header_end = ETH_HEADER_LEN + m.header_len();
        let n = cut.index(header_end);
        prop_assert!(parse_frame(&frame[..n]).is_err());
        prop_assert!(!matches!(classify(&frame[..n]), FrameKind::Control(_)));
        parse_every_view(&frame[ETH_HEADER_LEN.min(n)..n]);
        // Cutting a required payload or carried data is refused too.
        if m.msg_type() == MsgType::Setup {
            prop_assert_eq!(parse_frame(&frame[..header_end]), Err(MsgError::MissingPayload));
        }
        if !payload.is_empty() && m.msg_type() == MsgType::TonicTail {
            prop_assert!(parse_frame(&frame[..frame.len() - 1]).is_err());
        }
    }

    #[test]
    fn garbage_never_panics(
        ethertype in prop_oneof![0x0909u16..=0x090F, any::<u16>()],
        version in prop_oneof![Just(VERSION), any::<u8>()],
        body in proptest::collection::vec(any::<u8>(), 0..160),
        hdr_len in prop_oneof![any::<u16>(), 0u16..100],
    ) {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&ethertype.to_be_bytes());
        frame.extend_from_slice(&body);
        if frame.len() > 15 {
            frame[14] = version;
        }
        if frame.len() > 17 {
            frame[16..18].copy_from_slice(&hdr_len.to_be_bytes());
        }
        let kind = classify(&frame);
        let parsed = parse_frame(&frame);
        if let Ok(p) = parsed {
            prop_assert_eq!(kind, FrameKind::Control(p.message.msg_type()));
        }
        if let FrameKind::Control(t) = kind {
            prop_assert_eq!(t.ethertype(), ethertype);
        }
        parse_every_view(&frame[ETH_HEADER_LEN.min(frame.len())..]);
        let _ = MsgHeader::new_checked(&body[..]).map(|h| (h.version(), h.msg_type(), h.header_len()));
    }

    #[test]
    fn corrupted_messages_never_panic(
        (m, payload) in message_and_payload(),
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut frame = Vec::new();
        m.write_frame([0; 6], [0; 6], &payload, &mut frame).unwrap();
        for (at, v) in flips {
            let i = at.index(frame.len());
            frame[i] = v;
        }
        let kind = classify(&frame);
        if let Ok(p) = parse_frame(&frame) {
            prop_assert_eq!(kind, FrameKind::Control(p.message.msg_type()));
            // What parses re-emits to a frame that parses to the same message.
            let mut again = Vec::new();
            p.message.write_frame(p.dst, p.src, p.payload, &mut again).unwrap();
            prop_assert_eq!(parse_frame(&again).unwrap().message, p.message);
        }
        parse_every_view(&frame[ETH_HEADER_LEN..]);
    }
}
