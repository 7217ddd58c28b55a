//! Host ↔ NIC control messages reaching a host context (AccelTCP App. A EtherTypes
//! 0x090A–0x090D, nicemu control 0x090E): each is recognised by its message type. Those the
//! host does not handle yet count as `control_unhandled`, never as `not_tcp`; Tonic's
//! delivery notifications go to the Tonic code; setup notifications (AccelTCP §4.1) create
//! connections under setup-offloaded listeners.

mod common;

use common::{Net, A, B};
use hoststack::frame;
use hoststack::offload_api::msg::{
    AckStatus, CloseReason, FourTuple, InstallAckRepr, Message, MsgType, NegotiatedOptions,
    SetupRepr, SpliceCloseRepr, TonicDeliveredRepr, WindowScales,
};
use hoststack::stack::HostStats;
use hoststack::tcp::segment::{TcpFlags, TcpHeader};
use hoststack::tcp::Seq;

/// `m` as a whole frame from the NIC, with `payload` after its header.
fn msg_frame(m: Message, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    m.write_frame(
        [0x02, 0, 0, 0, 0, 1],
        [0x02, 0, 0, 0, 0, 2],
        payload,
        &mut f,
    )
    .expect("valid message");
    f
}

/// The IPv4 packet of the ACK that completes a handshake with host A (what a setup
/// notification carries).
fn completing_ack() -> Vec<u8> {
    let h = TcpHeader {
        src_port: 40_000,
        dst_port: 80,
        seq: Seq(1001),
        ack: Seq(5001),
        flags: TcpFlags::ACK,
        window: 1000,
        ..TcpHeader::default()
    };
    let mut buf = Vec::new();
    frame::build_tcp(&mut buf, B, A, 1, &h, [&[], &[]]);
    buf[frame::ETH_HDR_LEN..].to_vec()
}

fn setup_frame() -> Vec<u8> {
    let m = Message::Setup(SetupRepr {
        iss: 5000,
        syn_ack_tsval: 77,
        options: NegotiatedOptions {
            peer_mss: 1460,
            local_mss: 1460,
            window_scale: Some(WindowScales { peer: 7, local: 7 }),
            sack_permitted: true,
            timestamps: true,
        },
    });
    msg_frame(m, &completing_ack())
}

fn tuple(local_port: u16, remote_port: u16) -> FourTuple {
    FourTuple {
        local_ip: A,
        local_port,
        remote_ip: B,
        remote_port,
    }
}

/// Feeds `f` to host A and returns its counters before and after.
fn feed(net: &mut Net, f: &[u8]) -> (HostStats, HostStats) {
    let before = *net.a.stats();
    let now = net.a.now();
    net.a.input_frame(f, now);
    (before, *net.a.stats())
}

fn assert_counted_as_unhandled(net: &mut Net, f: &[u8], what: &str) {
    let (before, after) = feed(net, f);
    assert_eq!(after.frames_in, before.frames_in + 1, "{what}");
    assert_eq!(
        after.control_unhandled,
        before.control_unhandled + 1,
        "{what}: {after:?}"
    );
    assert_eq!(after.not_tcp, before.not_tcp, "{what}: counted as not TCP");
    assert_eq!(
        after.malformed, before.malformed,
        "{what}: counted as malformed"
    );
    assert_eq!(after.frames_out, before.frames_out, "{what}: answered");
}

#[test]
fn setup_notification_without_an_offloaded_listener_is_dropped_and_counted() {
    let mut net = Net::new();
    let f = setup_frame();
    assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x090A);
    let (before, after) = feed(&mut net, &f);
    assert_eq!(after.control_unhandled, before.control_unhandled);
    assert_eq!(after.not_tcp, before.not_tcp);
    assert_eq!(after.malformed, before.malformed);
    assert_eq!(net.a.setup_stats().nic_setup_dropped, 1);
    assert_eq!(net.a.connections(), 0);
    // A listener without TCP_SETUP_OFFLOAD does not take NIC-made connections either.
    let _l = common::listener(&mut net.a, 80);
    feed(&mut net, &f);
    assert_eq!(net.a.setup_stats().nic_setup_dropped, 2);
    assert_eq!(net.a.connections(), 0);
}

/// A listener on port 80 of host A with `TCP_SETUP_OFFLOAD`.
fn offloaded_listener(net: &mut Net) -> hoststack::Fd {
    let l = net.a.socket().unwrap();
    net.a
        .setsockopt(l, hoststack::stack::SockOpt::SetupOffload(true))
        .unwrap();
    net.a.bind(l, common::addr(A, 80)).unwrap();
    net.a.listen(l, 16).unwrap();
    l
}

#[test]
fn setup_notification_creates_an_established_connection_with_its_data() {
    let mut net = Net::new();
    let l = offloaded_listener(&mut net);
    assert_eq!(net.a.setup_stats().listen_registered, 1);
    // The completing ACK carries the first request bytes.
    let h = TcpHeader {
        src_port: 40_000,
        dst_port: 80,
        seq: Seq(1001),
        ack: Seq(5001),
        flags: TcpFlags::ACK | TcpFlags::PSH,
        window: 1000,
        ..TcpHeader::default()
    };
    let mut buf = Vec::new();
    frame::build_tcp(&mut buf, B, A, 1, &h, [b"hello", &[]]);
    let m = Message::Setup(SetupRepr {
        iss: 5000,
        syn_ack_tsval: 77,
        options: NegotiatedOptions {
            peer_mss: 1460,
            local_mss: 1460,
            window_scale: Some(WindowScales { peer: 7, local: 7 }),
            sack_permitted: true,
            timestamps: false,
        },
    });
    let f = msg_frame(m, &buf[frame::ETH_HDR_LEN..]);
    feed(&mut net, &f);
    assert_eq!(net.a.setup_stats().nic_setups, 1);
    net.a.set_nonblocking(l, true).unwrap();
    let (s, peer) = net.a.accept(l).expect("queued ESTABLISHED");
    assert_eq!(peer, common::addr(B, 40_000));
    net.a.set_nonblocking(s, true).unwrap();
    let mut got = [0u8; 16];
    assert_eq!(net.a.read(s, &mut got), Ok(5));
    assert_eq!(&got[..5], b"hello");
    let t = net.a.tcb(s).unwrap();
    assert_eq!(t.state(), hoststack::tcp::tcb::State::Established);
    assert_eq!(t.window_scales(), (7, 7));
    // The same notification again (the peer's next segment still echoed the NIC's TSval):
    // its segment goes to the connection, which sees a duplicate and delivers nothing new.
    feed(&mut net, &f);
    assert_eq!(net.a.setup_stats().nic_setup_dups, 1);
    assert_eq!(net.a.connections(), 1);
    assert!(net.a.read(s, &mut got).is_err());
    // Turning the option off unregisters the listener at the NIC.
    net.a
        .setsockopt(l, hoststack::stack::SockOpt::SetupOffload(false))
        .unwrap();
    assert_eq!(net.a.setup_stats().listen_unregistered, 1);
}

#[test]
fn setup_notification_that_does_not_ack_the_cookie_is_dropped() {
    let mut net = Net::new();
    let _l = offloaded_listener(&mut net);
    let m = Message::Setup(SetupRepr {
        iss: 9000, // the carried ACK acknowledges 5001, not 9001
        syn_ack_tsval: 77,
        options: NegotiatedOptions {
            peer_mss: 1460,
            local_mss: 1460,
            window_scale: None,
            sack_permitted: false,
            timestamps: false,
        },
    });
    feed(&mut net, &msg_frame(m, &completing_ack()));
    assert_eq!(net.a.setup_stats().nic_setup_dropped, 1);
    assert_eq!(net.a.connections(), 0);
}

#[test]
fn splice_close_report_is_an_unhandled_control_message() {
    let mut net = Net::new();
    let m = Message::SpliceClose(SpliceCloseRepr {
        request_id: 9,
        reason: CloseReason::Fin,
        rst_side: 0,
        a: tuple(80, 40_000),
        b: tuple(40_001, 8080),
        bytes_ab: 10,
        bytes_ba: 20,
        packets_ab: 1,
        packets_ba: 2,
    });
    let f = msg_frame(m, &[]);
    assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x090D);
    assert_counted_as_unhandled(&mut net, &f, "0x090D splice close");
}

#[test]
fn install_ack_of_a_request_the_host_does_not_make_is_unhandled() {
    let mut net = Net::new();
    let m = Message::InstallAck(InstallAckRepr {
        request_id: 3,
        request_type: MsgType::SpliceInstall,
        status: AckStatus::Ok,
    });
    assert_counted_as_unhandled(&mut net, &msg_frame(m, &[]), "splice-install ack");
    // Acks of listen registrations are the setup code's: a refusal is counted there.
    let m = Message::InstallAck(InstallAckRepr {
        request_id: 4,
        request_type: MsgType::ListenAdd,
        status: AckStatus::TableFull,
    });
    let (before, after) = feed(&mut net, &msg_frame(m, &[]));
    assert_eq!(after.control_unhandled, before.control_unhandled);
    assert_eq!(net.a.setup_stats().listen_refused, 1);
}

#[test]
fn tonic_delivery_for_no_flow_goes_to_the_tonic_code() {
    let mut net = Net::new();
    let m = Message::TonicDelivered(TonicDeliveredRepr {
        flow_id: 42,
        delivered: 1234,
    });
    let (before, after) = feed(&mut net, &msg_frame(m, &[]));
    assert_eq!(after.control_unhandled, before.control_unhandled);
    assert_eq!(after.not_tcp, before.not_tcp);
    let ts = net.a.tonic_stats();
    assert_eq!((ts.delivered_msgs, ts.stray), (1, 1));
}

#[test]
fn bad_control_header_is_malformed_and_other_ethertypes_are_not_tcp() {
    let mut net = Net::new();
    // A setup notification with a wrong contract version.
    let mut f = setup_frame();
    f[frame::ETH_HDR_LEN] ^= 0xff;
    let (before, after) = feed(&mut net, &f);
    assert_eq!(after.malformed, before.malformed + 1);
    assert_eq!(after.control_unhandled, before.control_unhandled);
    assert_eq!(after.not_tcp, before.not_tcp);
    // IPv6 and ARP frames stay `not_tcp`.
    for ethertype in [0x86DDu16, 0x0806] {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        let (before, after) = feed(&mut net, &f);
        assert_eq!(after.not_tcp, before.not_tcp + 1, "{ethertype:#06x}");
        assert_eq!(after.control_unhandled, before.control_unhandled);
    }
}

/// A segment of a connection handed to the NIC's teardown offload a moment ago that still
/// reaches the host (it passed the NIC before the NIC installed the handover) is dropped
/// and counted, not answered with a RST that would reset the NIC's connection; after the
/// grace period the host answers such a segment as any other.
#[test]
fn segment_racing_a_teardown_handover_draws_no_reset() {
    let mut net = Net::new();
    let (c, s) = common::connected(&mut net, 80);
    net.a
        .setsockopt(s, hoststack::stack::SockOpt::TeardownOffload(true))
        .unwrap();
    net.a.close(s).unwrap();
    assert_eq!(net.a.stats().teardown.offloaded, 1);
    assert_eq!(net.a.connections(), 0);
    // B's next segment (its data) arrives at A's host, which no longer has the connection.
    let rst0 = net.a.stats().rst_sent;
    net.b.write(c, b"late").unwrap();
    net.run_until(100, |n| n.a.stats().teardown.late_segments == 1);
    assert_eq!(net.a.stats().teardown.late_segments, 1);
    assert_eq!(net.a.stats().rst_sent, rst0);
    // A second later the host no longer knows the connection: a RST, as RFC 9293 §3.10.7.1
    // asks for a segment to no connection.
    net.clock
        .fetch_add(1_500_000_000, std::sync::atomic::Ordering::Relaxed);
    let h = TcpHeader {
        src_port: net.b.tcb(c).unwrap().endpoints().local_port,
        dst_port: 80,
        seq: Seq(1),
        ack: Seq(1),
        flags: TcpFlags::ACK,
        window: 1000,
        ..TcpHeader::default()
    };
    let mut f = Vec::new();
    frame::build_tcp(&mut f, B, A, 9, &h, [b"x", &[]]);
    feed(&mut net, &f);
    assert_eq!(net.a.stats().rst_sent, rst0 + 1);
    assert_eq!(net.a.stats().teardown.late_segments, 1);
}
