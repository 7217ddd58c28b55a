//! Host ↔ NIC control messages reaching a host context (AccelTCP App. A EtherTypes
//! 0x090A–0x090D, nicemu control 0x090E): each is recognised by its message type. Those the
//! host does not handle yet count as `control_unhandled`, never as `not_tcp`; Tonic's
//! delivery notifications go to the Tonic code.

mod common;

use common::{Net, A, B};
use hoststack::frame;
use hoststack::offload_api::msg::{
    AckStatus, CloseReason, FourTuple, InstallAckRepr, Message, MsgType, NegotiatedOptions,
    SetupRepr, SpliceCloseRepr, TonicDeliveredRepr, WindowScales,
};
use hoststack::stack::HostStats;
use hoststack::tcp::segment::{Flags, Header};
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
    let h = Header {
        src_port: 40_000,
        dst_port: 80,
        seq: Seq(1001),
        ack: Seq(5001),
        flags: Flags::ACK,
        window: 1000,
        ..Header::default()
    };
    let mut buf = Vec::new();
    frame::build_tcp(&mut buf, B, A, 1, &h, [&[], &[]]);
    buf[frame::ETH_LEN..].to_vec()
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
fn setup_notification_is_an_unhandled_control_message_not_a_non_tcp_frame() {
    let mut net = Net::new();
    let f = setup_frame();
    assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x090A);
    assert_counted_as_unhandled(&mut net, &f, "0x090A setup");
    // Not handled yet: no connection appears.
    assert_eq!(net.a.connections(), 0);
    assert_eq!(net.a.tonic_stats().stray, 0);
}

#[test]
fn splice_close_report_is_an_unhandled_control_message() {
    let mut net = Net::new();
    let m = Message::SpliceClose(SpliceCloseRepr {
        request_id: 9,
        reason: CloseReason::Fin,
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
fn install_ack_of_a_request_other_than_a_tonic_flow_add_is_unhandled() {
    let mut net = Net::new();
    let m = Message::InstallAck(InstallAckRepr {
        request_id: 3,
        request_type: MsgType::ListenAdd,
        status: AckStatus::Ok,
    });
    assert_counted_as_unhandled(&mut net, &msg_frame(m, &[]), "listen-add ack");
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
    f[frame::ETH_LEN] ^= 0xff;
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
