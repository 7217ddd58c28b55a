//! The message set over the link, as the host stack and a NIC lcore use it: messages built in
//! link buffers, classified and parsed on the other side, plain IPv4 frames passing unchanged.

use offload_api::link::*;
use offload_api::msg::*;
use offload_api::Direction;

fn assert_send<T: Send>() {}
fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn ends_and_buffers_move_between_threads() {
    assert_send::<HostEnd>();
    assert_send::<NicEnd>();
    assert_send::<LinkBuf>();
    assert_send_sync::<LinkMonitor>();
}

/// A minimal IPv4 packet of `len` bytes (the link and the messages do not look inside).
fn ip_packet(len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len).map(|i| i as u8).collect();
    p[0] = 0x45;
    p
}

#[test]
fn listen_registration_and_ack_cross_the_link() {
    for dma in [DmaMode::Copy, DmaMode::ZeroCopy] {
        let (mut host, mut nic) = link(&LinkConfig {
            depth: 8,
            dma,
            ..LinkConfig::default()
        });
        let listen = Message::ListenAdd(ListenAddRepr {
            request_id: 1,
            addr: [10, 0, 0, 1],
            port: 80,
            options: ListenOptions {
                mss: 1460,
                window_scale: Some(9),
                sack_permitted: true,
                timestamps: true,
            },
        });
        // Host: build the message straight in a link buffer.
        let mut b = host.alloc().unwrap();
        listen
            .write_frame([0; 6], [0; 6], &[], b.as_vec_mut())
            .unwrap();
        host.send_buf(0, b).unwrap();

        // NIC: classify, check the direction, parse, answer.
        let (port, b) = nic.recv().unwrap();
        assert_eq!(port, 0);
        let FrameKind::Control(ty) = classify(&b) else {
            panic!("not a control frame");
        };
        assert_eq!(ty.direction(), Direction::HostToNic);
        let p = parse_frame(&b).unwrap();
        assert_eq!(p.message, listen);
        // The view works on the link buffer directly too.
        let view = ListenAddFrame::new_checked(&b[ETH_HEADER_LEN..]).unwrap();
        assert_eq!(view.port(), 80);
        let ack = Message::InstallAck(InstallAckRepr {
            request_id: 1,
            request_type: ty,
            status: AckStatus::Ok,
        });
        let mut out = [0u8; 64];
        let n = ack.emit_frame([0; 6], [0; 6], &[], &mut out).unwrap();
        nic.send(0, &out[..n]).unwrap();

        let (_, b) = host.recv().unwrap();
        assert_eq!(classify(&b), FrameKind::Control(MsgType::InstallAck));
        assert_eq!(parse_frame(&b).unwrap().message, ack);
    }
}

#[test]
fn setup_teardown_and_plain_packets_share_the_link() {
    let (mut host, mut nic) = link(&LinkConfig {
        depth: 8,
        dma: DmaMode::ZeroCopy,
        ..LinkConfig::default()
    });
    let mac_a = [2, 0, 0, 0, 0, 1];
    let mac_b = [2, 0, 0, 0, 0, 2];

    // NIC → host: a plain packet, then a setup notification carrying the ACK.
    let mut plain = vec![0u8; 14];
    plain[..6].copy_from_slice(&mac_a);
    plain[6..12].copy_from_slice(&mac_b);
    plain[12..14].copy_from_slice(&offload_api::ETHERTYPE_IPV4.to_be_bytes());
    plain.extend_from_slice(&ip_packet(40));
    nic.send(1, &plain).unwrap();
    let setup = Message::Setup(SetupRepr {
        iss: 77,
        syn_ack_tsval: 5,
        options: NegotiatedOptions {
            peer_mss: 1460,
            local_mss: 1460,
            window_scale: Some(WindowScales { peer: 7, local: 7 }),
            sack_permitted: true,
            timestamps: true,
        },
    });
    let mut b = nic.alloc().unwrap();
    setup
        .write_frame(mac_a, mac_b, &ip_packet(52), b.as_vec_mut())
        .unwrap();
    nic.send_buf(1, b).unwrap();

    let (_, b) = host.recv().unwrap();
    assert_eq!(classify(&b), FrameKind::Ipv4);
    assert_eq!(&b[..], &plain[..], "plain packets cross unchanged");
    let (_, b) = host.recv().unwrap();
    let p = parse_frame(&b).unwrap();
    assert_eq!(p.message, setup);
    assert_eq!(p.message.msg_type().direction(), Direction::NicToHost);
    assert_eq!(p.payload, &ip_packet(52)[..]);
    assert_eq!((p.dst, p.src), (mac_a, mac_b));

    // Host → NIC: a teardown with a 64 KB TSO packet.
    let teardown = Message::Teardown(TeardownRepr {
        mss: 1448,
        state: TcpState::FinWait1,
        rto_us: 200_000,
        snd_una: 1,
        snd_nxt: 1,
        rcv_nxt: 2,
        snd_wnd: 1 << 20,
        rcv_wnd: 65535,
        snd_wscale: 7,
        rcv_wscale: 7,
        sack_permitted: true,
        timestamps: Some(Timestamps {
            ts_recent: 10,
            ts_val: 20,
        }),
    });
    let tso = ip_packet(65_535);
    let mut b = host.alloc().unwrap();
    teardown
        .write_frame(mac_b, mac_a, &tso, b.as_vec_mut())
        .unwrap();
    assert!(b.len() <= MAX_FRAME_LEN);
    host.send_buf(0, b).unwrap();
    let (_, b) = nic.recv().unwrap();
    assert_eq!(classify(&b), FrameKind::Control(MsgType::Teardown));
    let p = parse_frame(&b).unwrap();
    assert_eq!(p.message, teardown);
    assert_eq!(p.payload.len(), 65_535);
    assert_eq!(p.payload, &tso[..]);
    assert_eq!(host.tx_counters().dma_copies, 0, "zero-copy buffers");
}
