//! Handshake and options.

use super::*;

#[test]
fn handshake_negotiates_all_options() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 1);
    net.handshake();
    for i in 0..2 {
        let t = net.tcb(i);
        assert_eq!(t.negotiated(), (true, true, true));
        assert_eq!(t.window_scales(), (7, 7));
        assert_eq!(t.send_mss(), 1460 - 12);
        assert_eq!(
            t.buffer_bytes(),
            0,
            "lazy buffers: nothing allocated without data"
        );
        assert!(t.srtt().is_some());
    }
    // SYN: MSS, WS, SACK-permitted, TS; SYN-ACK answers all of them.
    let syn = &net.recs[0];
    assert_eq!(syn.flags, TcpFlags::SYN);
    assert_eq!(syn.opts.mss, Some(1460));
    assert_eq!(syn.opts.window_scale, Some(7));
    assert!(syn.opts.sack_permitted);
    assert_eq!(syn.opts.timestamp.map(|t| t.1), Some(0));
    let sa = &net.recs[1];
    assert_eq!(sa.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(sa.ack, syn.seq + 1);
    assert!(sa.opts.sack_permitted && sa.opts.window_scale == Some(7));
    // SYN-ACK echoes the SYN's TSval.
    assert_eq!(sa.opts.timestamp.unwrap().1, syn.opts.timestamp.unwrap().0);
    // Window fields: unscaled on SYNs (65,535 max), scaled afterwards.
    assert_eq!(syn.win, 65_535);
    let ack = &net.recs[2];
    assert_eq!(ack.flags, TcpFlags::ACK);
    assert_eq!(
        ack.win as usize,
        (256 * 1024 - 127) >> 7,
        "one unit of slack for rounding"
    );
}

#[test]
fn handshake_without_timestamps_or_sack() {
    let mut ca = cfg();
    ca.timestamps = false;
    let mut cb = cfg();
    cb.sack = false;
    let mut net = Net::new(ca, cb, [Impair::delay(MS); 2], 2);
    net.handshake();
    for i in 0..2 {
        assert_eq!(net.tcb(i).negotiated(), (true, false, false));
        assert_eq!(net.tcb(i).send_mss(), 1460);
    }
    let sa = &net.recs[1];
    assert!(!sa.opts.sack_permitted && sa.opts.timestamp.is_none());
    // Data still flows, with no options on data segments.
    let mut bulk = Bulk::new(100_000, 100_000);
    assert!(net.run_until(net.now + 60 * SEC, |n| bulk.app(n)));
    assert!(net
        .data_recs(A)
        .all(|r| r.opts.timestamp.is_none() && r.len <= 1460));
}

#[test]
fn handshake_without_window_scale_from_peer() {
    // A peer that offers nothing: no WS, no SACK, no TS, no MSS (536 applies).
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 3);
    net.flush(A);
    let syn = net.recs[0].clone();
    net.q.clear();
    let peer_iss = Seq(5_000);
    let h = TcpHeader {
        src_port: 80,
        dst_port: 40_000,
        seq: peer_iss,
        ack: syn.seq + 1,
        flags: TcpFlags::SYN | TcpFlags::ACK,
        window: 4_000,
        options: TcpOptions::default(),
    };
    net.inject(A, &h, &[]);
    let t = net.tcb(A);
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.negotiated(), (false, false, false));
    assert_eq!(t.window_scales(), (0, 0));
    assert_eq!(t.send_mss(), 536);
    let ack = net.recs.last().unwrap();
    assert_eq!(ack.ack, peer_iss + 1);
    assert_eq!(ack.win, 65_535, "unscaled window, clamped to the field");
    assert!(ack.opts.timestamp.is_none());
    // Data segments respect the 536-byte MSS and the peer's 4,000-byte window: seven full
    // segments; the 248 bytes left of the window wait (sender SWS avoidance and Nagle).
    net.tcb(A).send(&[7u8; 20_000]).unwrap();
    net.flush(A);
    let data: Vec<_> = net.data_recs(A).cloned().collect();
    assert!(data.iter().all(|r| r.len == 536));
    assert_eq!(data.len(), 7);
}

#[test]
fn passive_side_without_window_scale_or_options() {
    let c = cfg();
    let ep = Endpoints {
        local_ip: [10, 0, 0, 2],
        local_port: 80,
        remote_ip: [10, 0, 0, 1],
        remote_port: 1234,
    };
    let syn = TcpRepr {
        src_port: 1234,
        dst_port: 80,
        seq: Seq(100),
        ack: Seq(0),
        flags: TcpFlags::SYN,
        window: 1000,
        options: TcpOptions {
            mss: Some(1200),
            ..TcpOptions::default()
        },
        payload: &[],
    };
    let mut t = Tcb::accept(&c, ep, &syn, Seq(9_000), SEC);
    let mut out = Vec::new();
    t.poll_transmit(SEC, &mut |o| out.push(o.header));
    assert_eq!(out.len(), 1);
    let sa = out[0];
    assert_eq!(sa.flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(sa.ack, Seq(101));
    assert_eq!(sa.options.mss, Some(1460));
    assert_eq!(
        sa.options.window_scale, None,
        "no WS unless the SYN had one"
    );
    assert!(!sa.options.sack_permitted && sa.options.timestamp.is_none());
    assert_eq!(t.send_mss(), 1200);
}
