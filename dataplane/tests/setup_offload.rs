//! The NIC's connection-setup offload (AccelTCP §4.1) on an lcore, driven from the wire and
//! the host link in virtual time: listen registration and its ack, cookie SYN-ACKs, final
//! ACKs turned into 0x090A setup notifications, what goes to the host instead (SYNs without
//! timestamps, ACKs of host-made connections, unregistered ports), and forged final ACKs
//! dropped and counted by reason.

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::clock::Clock;
use dataplane::config::Config;
use dataplane::lcore::{Mode, NicLcore};
use dataplane::offload::setup::SetupOffload;
use dataplane::offload::OffloadChain;
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, RunOptions};
use offload_api::link::HostEnd;
use offload_api::msg::{
    self, AckStatus, ListenAddRepr, ListenOptions, ListenRemoveRepr, Message, MsgType,
};
use offload_api::syncookie::{self, CookieConfig, SynCookies, MSS_TABLE};
use offload_api::wire::tcp::{self, TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::Seq;

const CFG: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "left"
ipv4 = ["192.0.2.1/24"]
[[lcore]]
core = 0
role = "nic"
"#;

const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const PEER_IP: [u8; 4] = [192, 0, 2, 10];
const NIC_IP: [u8; 4] = [192, 0, 2, 1];
const PORT: u16 = 80;
const SEC: u64 = 1_000_000_000;

struct Rig {
    lcore: NicLcore<WireQueue>,
    host: HostEnd,
    left: WireQueue,
    clock: Clock,
}

fn rig() -> Rig {
    let cfg = Config::parse(CFG, "test").unwrap();
    let opts = RunOptions {
        mode: Mode::Nic,
        pin: false,
        host_channels: true,
        ..RunOptions::default()
    };
    let clock = Clock::virtual_clock();
    clock.advance(1_000 * SEC);
    let mut topo = build_wire(&cfg, &opts, clock.clone()).unwrap();
    let left = topo.peers.get_mut("left").unwrap().take_queue(0).unwrap();
    let mut lcore = topo.lcores.remove(0);
    let cookies = SynCookies::new(CookieConfig::default(), [3; 16], 0);
    lcore.set_offloads(
        OffloadChain::new().with(Box::new(SetupOffload::with_cookies(cookies, 0x1000_0000))),
    );
    let mut r = Rig {
        lcore,
        host: topo.host.remove(0),
        left,
        clock,
    };
    register(&mut r, true);
    r
}

fn register(r: &mut Rig, add: bool) {
    let m = if add {
        Message::ListenAdd(ListenAddRepr {
            request_id: 7,
            addr: NIC_IP,
            port: PORT,
            options: ListenOptions {
                mss: 1460,
                window_scale: Some(9),
                sack_permitted: true,
                timestamps: true,
            },
        })
    } else {
        Message::ListenRemove(ListenRemoveRepr {
            request_id: 8,
            addr: NIC_IP,
            port: PORT,
        })
    };
    let mut f = Vec::new();
    m.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
    r.host.send(0, &f).unwrap();
    spin(r);
    let acks = from_host(r);
    assert_eq!(acks.len(), 1);
    let Message::InstallAck(a) = msg::parse_frame(&acks[0]).unwrap().message else {
        panic!("not an install ack");
    };
    assert_eq!(a.status, AckStatus::Ok);
    assert_eq!(
        a.request_type,
        if add {
            MsgType::ListenAdd
        } else {
            MsgType::ListenRemove
        }
    );
}

fn spin(r: &mut Rig) {
    for _ in 0..8 {
        r.lcore.poll_once();
    }
}

fn from_host(r: &mut Rig) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some((_, f)) = r.host.recv() {
        v.push(f.as_ref().to_vec());
    }
    v
}

fn from_wire(r: &mut Rig) -> Vec<Vec<u8>> {
    let mut back = Vec::new();
    r.left.rx_burst(&mut back, 1024);
    back.iter().map(|b| b.data().to_vec()).collect()
}

fn send(r: &mut Rig, sport: u16, h: TcpHeader, payload: &[u8]) {
    let nic_mac = dataplane::runtime::wire_mac(0);
    let h = TcpHeader {
        src_port: sport,
        dst_port: PORT,
        ..h
    };
    let f = dataplane::frames::tcp_with(PEER_MAC, nic_mac, PEER_IP, NIC_IP, &h, payload);
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(r);
}

fn syn(ts: Option<u32>) -> TcpHeader {
    TcpHeader {
        seq: Seq(1000),
        flags: TcpFlags::SYN,
        window: 64_240,
        options: TcpOptions {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: ts.map(|v| (v, 0)),
            ..TcpOptions::default()
        },
        ..TcpHeader::default()
    }
}

fn tcp_of(f: &[u8]) -> TcpPacket<&[u8]> {
    TcpPacket::new_checked(&f[34..]).unwrap()
}

/// Sends a SYN from `sport` and returns the SYN-ACK's (ISN, TSval).
fn handshake_start(r: &mut Rig, sport: u16) -> (u32, u32) {
    send(r, sport, syn(Some(555)), &[]);
    let out = from_wire(r);
    assert_eq!(out.len(), 1, "one SYN-ACK");
    assert!(from_host(r).is_empty(), "the host never sees the SYN");
    let t = tcp_of(&out[0]);
    assert!(t.verify_checksum(NIC_IP, PEER_IP));
    assert_eq!(t.flags(), TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(t.ack_number(), Seq(1001));
    let o = tcp::parse_options(t.options()).unwrap();
    let (tsval, tsecr) = o.timestamp.unwrap();
    assert_eq!(tsecr, 555);
    (t.seq_number().0, tsval)
}

fn final_ack(iss: u32, tsecr: u32) -> TcpHeader {
    TcpHeader {
        seq: Seq(1001),
        ack: Seq(iss.wrapping_add(1)),
        flags: TcpFlags::ACK,
        window: 502,
        options: TcpOptions {
            timestamp: Some((556, tsecr)),
            ..TcpOptions::default()
        },
        ..TcpHeader::default()
    }
}

fn counter(r: &mut Rig, name: &str) -> u64 {
    r.lcore.finish().offload("setup").unwrap().counter(name)
}

#[test]
fn syn_gets_a_cookie_syn_ack_and_the_final_ack_becomes_a_setup_notification() {
    let mut r = rig();
    let (iss, tsval) = handshake_start(&mut r, 40_000);
    // The cookie's MSS class and counter; the TSval carries the options and the NIC mark.
    assert_eq!(MSS_TABLE[((iss >> 5) & 7) as usize], 1460);
    assert!(syncookie::ts_is_nic(tsval));
    let co = syncookie::decode_ts(tsval, 1460).unwrap();
    assert_eq!((co.peer_wscale, co.sack_permitted), (Some(7), true));
    // The final ACK carries the first bytes of a request.
    send(&mut r, 40_000, final_ack(iss, tsval), b"GET /");
    assert!(from_wire(&mut r).is_empty());
    let got = from_host(&mut r);
    assert_eq!(got.len(), 1);
    let p = msg::parse_frame(&got[0]).unwrap();
    let Message::Setup(s) = p.message else {
        panic!("not a setup notification")
    };
    assert_eq!(s.iss, iss);
    assert_eq!(s.syn_ack_tsval, tsval);
    let o = s.options;
    assert_eq!((o.peer_mss, o.local_mss), (1460, 1460));
    let ws = o.window_scale.unwrap();
    assert_eq!((ws.peer, ws.local), (7, 9));
    assert!(o.sack_permitted && o.timestamps);
    // The payload is the ACK's IPv4 packet, data included.
    let t = TcpPacket::new_checked(&p.payload[20..]).unwrap();
    assert_eq!(t.payload(), b"GET /");
    assert_eq!(counter(&mut r, "cookies_sent"), 1);
    assert_eq!(counter(&mut r, "validated"), 1);
}

#[test]
fn what_the_nic_cannot_or_need_not_handle_goes_to_the_host() {
    let mut r = rig();
    // A SYN without timestamps: the options would be lost.
    send(&mut r, 40_001, syn(None), &[]);
    assert!(from_wire(&mut r).is_empty());
    assert_eq!(from_host(&mut r).len(), 1);
    assert_eq!(counter(&mut r, "syns_to_host"), 1);
    // An ACK whose TSecr is even (a connection the host set up, or any later segment).
    send(&mut r, 40_002, final_ack(1234, 0x2000), &[]);
    assert_eq!(from_host(&mut r).len(), 1);
    // Another port, and after the listener is removed, everything passes.
    register(&mut r, false);
    send(&mut r, 40_003, syn(Some(1)), &[]);
    assert!(from_wire(&mut r).is_empty());
    assert_eq!(from_host(&mut r).len(), 1);
    assert_eq!(counter(&mut r, "cookies_sent"), 0);
}

#[test]
fn forged_final_acks_are_dropped_and_counted_by_reason() {
    let mut r = rig();
    let (iss, tsval) = handshake_start(&mut r, 40_000);
    // Random ACK numbers with the NIC mark in TSecr.
    let mut x = 0x9e37_79b9u32;
    for _ in 0..500 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        send(&mut r, 40_000, final_ack(x, tsval), &[]);
    }
    // Another 4-tuple's cookie (same peer, another port).
    send(&mut r, 40_009, final_ack(iss, tsval), &[]);
    // A wrong peer ISN (the cookie binds the SYN's sequence number).
    let mut h = final_ack(iss, tsval);
    h.seq = Seq(7777);
    send(&mut r, 40_000, h, &[]);
    assert!(
        from_host(&mut r).is_empty(),
        "no forged ACK reaches the host"
    );
    assert!(from_wire(&mut r).is_empty());
    assert_eq!(counter(&mut r, "validated"), 0);
    let refused = counter(&mut r, "rejected_hash") + counter(&mut r, "rejected_expired");
    assert_eq!(refused, 502);
    // Random ACK numbers mostly carry a counter outside the window (29 of 32 values);
    // the rest, and the two genuine-looking ones, fail the hash.
    assert!(counter(&mut r, "rejected_hash") >= 2 + 20);
    assert!(counter(&mut r, "rejected_expired") >= 400);
    // The genuine cookie, past the allowed age (3 ticks of 64 s): expired.
    let expired = counter(&mut r, "rejected_expired");
    r.clock.advance(3 * 64 * SEC);
    send(&mut r, 40_000, final_ack(iss, tsval), &[]);
    assert!(from_host(&mut r).is_empty());
    assert_eq!(counter(&mut r, "rejected_expired"), expired + 1);
    // Within the age it would have been accepted: a fresh handshake checks.
    let (iss, tsval) = handshake_start(&mut r, 40_100);
    r.clock.advance(64 * SEC);
    send(&mut r, 40_100, final_ack(iss, tsval), &[]);
    assert_eq!(from_host(&mut r).len(), 1);
    assert_eq!(counter(&mut r, "validated"), 1);
}

#[test]
fn listen_table_is_bounded_and_refuses_beyond_it() {
    let mut r = rig(); // port 80 registered
    let max = dataplane::offload::setup::MAX_LISTENERS;
    let mut statuses = Vec::new();
    for i in 0..max as u16 {
        let m = Message::ListenAdd(ListenAddRepr {
            request_id: 100 + i as u32,
            addr: NIC_IP,
            port: 1000 + i,
            options: ListenOptions {
                mss: 1460,
                window_scale: None,
                sack_permitted: false,
                timestamps: true,
            },
        });
        let mut f = Vec::new();
        m.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
        r.host.send(0, &f).unwrap();
        spin(&mut r);
        for a in from_host(&mut r) {
            if let Message::InstallAck(a) = msg::parse_frame(&a).unwrap().message {
                statuses.push(a.status);
            }
        }
    }
    // Port 80 took one entry: all but the last registration fit.
    assert_eq!(statuses.len(), max);
    assert!(statuses[..max - 1].iter().all(|s| *s == AckStatus::Ok));
    assert_eq!(statuses[max - 1], AckStatus::TableFull);
    assert_eq!(counter(&mut r, "listeners"), max as u64);
    // The refused port's SYNs go to the host; a registered one still gets its cookie.
    let nic_mac = dataplane::runtime::wire_mac(0);
    let h = TcpHeader {
        src_port: 40_000,
        dst_port: 1000 + max as u16 - 1,
        ..syn(Some(1))
    };
    let f = dataplane::frames::tcp_with(PEER_MAC, nic_mac, PEER_IP, NIC_IP, &h, &[]);
    r.left.tx_burst(&mut vec![HeapBuf::from_frame(&f)]);
    spin(&mut r);
    assert_eq!(from_host(&mut r).len(), 1);
    assert!(from_wire(&mut r).is_empty());
    handshake_start(&mut r, 40_001);
}

/// A peer that sends more than one segment before the host's first reaches it (pipelined or
/// long requests) echoes the SYN-ACK's TSval in all of them, but only the first carries the
/// sequence number the cookie binds: the later ones go to the host as ordinary segments of
/// the connection it now has, and only for a connection whose cookie checked.
#[test]
fn later_segments_echoing_the_syn_ack_reach_the_host_once_the_cookie_checked() {
    use dataplane::offload::setup::RECENT_NS;
    let mut r = rig();
    let (iss, tsval) = handshake_start(&mut r, 40_000);
    send(&mut r, 40_000, final_ack(iss, tsval), b"SET a 1\r\n");
    let got = from_host(&mut r);
    assert_eq!(got.len(), 1);
    assert!(matches!(
        msg::parse_frame(&got[0]).unwrap().message,
        Message::Setup(_)
    ));
    // The next segment, 9 bytes on: an ordinary frame, its payload intact.
    let later = |iss: u32, seq: u32| TcpHeader {
        seq: Seq(seq),
        ..final_ack(iss, tsval)
    };
    send(&mut r, 40_000, later(iss, 1010), b"GET a\r\n");
    let got = from_host(&mut r);
    assert_eq!(got.len(), 1);
    assert_eq!(
        &got[0][12..14],
        &[0x08, 0x00],
        "an IPv4 frame, not a message"
    );
    assert_eq!(tcp_of(&got[0]).payload(), b"GET a\r\n");
    assert_eq!(tcp_of(&got[0]).seq_number(), Seq(1010));
    assert_eq!(counter(&mut r, "later_segments"), 1);
    assert_eq!(counter(&mut r, "validated"), 1);
    // A retransmission of the first segment checks again: another setup notification,
    // which the host feeds to the connection it has.
    send(&mut r, 40_000, later(iss, 1001), b"SET a 1\r\n");
    assert_eq!(from_host(&mut r).len(), 1);
    assert_eq!(counter(&mut r, "validated"), 2);

    // The same segment on a 4-tuple whose cookie never checked, or with another ISS, or
    // a sequence number before the peer's first: dropped, as a forged ACK is.
    let (iss2, _) = handshake_start(&mut r, 40_001);
    send(&mut r, 40_001, later(iss2, 1010), b"GET a\r\n");
    send(&mut r, 40_000, later(iss ^ 0x100, 1010), b"GET a\r\n");
    send(&mut r, 40_000, later(iss, 999), b"GET a\r\n");
    assert!(from_host(&mut r).is_empty());
    assert_eq!(counter(&mut r, "later_segments"), 1);
    assert_eq!(counter(&mut r, "rejected_hash"), 3);

    // Remembered for RECENT_NS only.
    r.clock.advance(RECENT_NS);
    send(&mut r, 40_000, later(iss, 1017), b"DEL a\r\n");
    assert!(from_host(&mut r).is_empty());
    assert_eq!(counter(&mut r, "later_segments"), 1);
}
