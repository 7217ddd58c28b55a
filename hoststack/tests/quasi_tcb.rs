//! AccelTCP §5.2 lazy TCB creation: connections from 0x090A setup notifications under a
//! listener with both `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` start as a quasi-TCB.
//! A single request, response and close leave as exactly one 0x090B built from the record
//! (the same frame a full TCB would have built), and anything more grows a full TCB with
//! the data delivered exactly once.

mod common;

use common::{Net, A, B};
use hoststack::frame::{self, HostLink};
use hoststack::offload_api::msg::{
    self, Message, MsgType, NegotiatedOptions, SetupRepr, TcpState, WindowScales,
};
use hoststack::stack::{EpollEvent, EpollOp, SockOpt, EPOLLIN, EPOLLOUT, EPOLLRDHUP};
use hoststack::tcp::segment::{TcpFlags, TcpHeader, TcpOptions};
use hoststack::tcp::tcb::{QuasiTcb, Tcb};
use hoststack::tcp::Seq;
use hoststack::{Errno, Fd};

const PEER_ISN: u32 = 1000;
const ISS: u32 = 5000;
const TSVAL: u32 = 3_000;
/// The TSval of the NIC's SYN-ACK (odd: NIC-made).
const SYN_ACK_TSVAL: u32 = 77;

fn net(quasi: bool) -> Net {
    let mut a = common::cfg(A);
    a.quasi_tcb = quasi;
    Net::with(a, common::cfg(B))
}

/// A listener on port 80 of host A with both offloads, non-blocking.
fn listener(net: &mut Net) -> Fd {
    let l = net.a.socket().unwrap();
    net.a.setsockopt(l, SockOpt::SetupOffload(true)).unwrap();
    net.a.setsockopt(l, SockOpt::TeardownOffload(true)).unwrap();
    net.a.set_nonblocking(l, true).unwrap();
    net.a.bind(l, common::addr(A, 80)).unwrap();
    net.a.listen(l, 16).unwrap();
    l
}

/// The IPv4 packet of a segment from B: `off` bytes after the peer's ISN + 1, with TSval
/// `TSVAL + off` echoing the SYN-ACK.
fn peer_segment(off: u32, flags: TcpFlags, data: &[u8]) -> Vec<u8> {
    let h = TcpHeader {
        src_port: 40_000,
        dst_port: 80,
        seq: Seq(PEER_ISN + 1 + off),
        ack: Seq(ISS + 1),
        flags: flags | TcpFlags::ACK,
        window: 1000,
        options: TcpOptions {
            timestamp: Some((TSVAL + off, SYN_ACK_TSVAL)),
            ..TcpOptions::default()
        },
    };
    let mut buf = Vec::new();
    frame::build_tcp(&mut buf, B, A, 1, &h, [data, &[]]);
    buf
}

/// The 0x090A of the handshake, carrying the first `request` bytes.
fn setup_frame(request: &[u8]) -> Vec<u8> {
    let m = Message::Setup(SetupRepr {
        iss: ISS,
        syn_ack_tsval: SYN_ACK_TSVAL,
        options: NegotiatedOptions {
            peer_mss: 1460,
            local_mss: 1460,
            window_scale: Some(WindowScales { peer: 7, local: 7 }),
            sack_permitted: true,
            timestamps: true,
        },
    });
    let ip = &peer_segment(0, TcpFlags::PSH, request)[frame::ETH_HDR_LEN..];
    let mut f = Vec::new();
    m.write_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], ip, &mut f)
        .unwrap();
    f
}

fn feed(net: &mut Net, f: &[u8]) {
    let now = net.a.now();
    net.a.input_frame(f, now);
}

/// Every frame host A sent since the last call.
fn sent(net: &mut Net) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| net.b.link_mut().recv().map(|(_, f)| f)).collect()
}

fn ethertype(f: &[u8]) -> u16 {
    u16::from_be_bytes([f[12], f[13]])
}

/// Accepts the queued connection, non-blocking.
fn accept(net: &mut Net, l: Fd) -> Fd {
    let (s, peer) = net.a.accept(l).expect("queued connection");
    assert_eq!(peer, common::addr(B, 40_000));
    net.a.set_nonblocking(s, true).unwrap();
    s
}

fn read_all(net: &mut Net, s: Fd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 7];
    loop {
        match net.a.read(s, &mut buf) {
            Ok(0) | Err(Errno::Again) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e:?}"),
        }
    }
}

/// One transaction: the request in the 0x090A (and `more` segments), accept, read, respond,
/// close; returns the frames host A sent.
fn transaction(quasi: bool, more: &[Vec<u8>]) -> (Net, Vec<Vec<u8>>) {
    let mut net = net(quasi);
    let l = listener(&mut net);
    sent(&mut net); // the listen registration
    feed(&mut net, &setup_frame(b"GET /"));
    for f in more {
        feed(&mut net, f);
    }
    let s = accept(&mut net, l);
    assert!(!read_all(&mut net, s).is_empty());
    assert_eq!(net.a.write(s, b"200 OK"), Ok(6));
    net.a.close(s).unwrap();
    let frames = sent(&mut net);
    (net, frames)
}

/// A context with quasi-TCBs on, its listener, and the socket of a NIC-made connection whose
/// completing ACK carried `request` (the listener's registration already taken off the link).
fn quasi_with(request: &[u8]) -> (Net, Fd) {
    let mut net = net(true);
    let l = listener(&mut net);
    sent(&mut net);
    feed(&mut net, &setup_frame(request));
    let s = accept(&mut net, l);
    (net, s)
}

#[test]
fn request_response_close_is_one_teardown_frame_from_the_quasi_tcb() {
    let (net, frames) = transaction(true, &[]);
    assert_eq!(frames.len(), 1, "one 0x090B and nothing else");
    let f = &frames[0];
    assert_eq!(ethertype(f), MsgType::Teardown.ethertype());
    let p = msg::parse_frame(f).unwrap();
    let Message::Teardown(r) = p.message else {
        panic!("not a teardown: {:?}", p.message)
    };
    assert_eq!(r.state, TcpState::FinWait1);
    assert_eq!(r.snd_una, ISS + 1);
    assert_eq!(r.rcv_nxt, PEER_ISN + 1 + 5);
    let tf = frame::parse_ipv4_tcp(p.payload).unwrap();
    let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
    assert_eq!(seg.seq, Seq(ISS + 1));
    assert_eq!(seg.ack, Seq(PEER_ISN + 6));
    assert!(seg.flags.has(TcpFlags::FIN));
    assert_eq!(seg.payload, b"200 OK");
    let q = net.a.quasi_stats();
    assert_eq!((q.created, q.closed_offloaded, q.upgraded()), (1, 1, 0));
    assert_eq!(net.a.stats().teardown.offloaded, 1);
    assert_eq!(net.a.connections(), 0);
}

/// The 0x090B from the quasi-TCB is byte for byte the one a full TCB builds, with data after
/// the first segment too. After the peer's FIN (LAST_ACK) the full TCB has acknowledged the
/// FIN at once, which moved its advertised window; the quasi-TCB leaves that ACK to the
/// 0x090B (or to its delayed-ACK time), so only the receive window differs.
#[test]
fn quasi_handover_equals_the_full_tcb_handover() {
    let cases: [Vec<Vec<u8>>; 2] = [vec![], vec![peer_segment(5, TcpFlags::PSH, b" /x")]];
    for more in cases {
        let (q_net, q) = transaction(true, &more);
        let (f_net, f) = transaction(false, &more);
        assert_eq!(q_net.a.quasi_stats().upgraded(), 0);
        assert_eq!(q_net.a.quasi_stats().closed_offloaded, 1);
        assert_eq!(f_net.a.quasi_stats().created, 0);
        assert_eq!(
            q,
            f,
            "quasi and full handovers differ ({} more)",
            more.len()
        );
        assert_eq!(q.len(), 1);
    }
    let more = [
        peer_segment(5, TcpFlags::PSH, b" /x"),
        peer_segment(8, TcpFlags::FIN, b""),
    ];
    let (_, q) = transaction(true, &more);
    let (_, f) = transaction(false, &more);
    assert_eq!(q.len(), 1);
    assert_eq!(f.len(), 2, "the full TCB's ACK of the FIN, then the 0x090B");
    let parse = |fr: &[u8]| {
        let p = msg::parse_frame(fr).unwrap();
        let Message::Teardown(mut r) = p.message else {
            panic!("not a teardown")
        };
        r.rcv_wnd = 0;
        let tf = frame::parse_ipv4_tcp(p.payload).unwrap();
        let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
        (r, seg.seq, seg.ack, seg.flags.0, seg.payload.to_vec())
    };
    assert_eq!(parse(&q[0]), parse(&f[1]));
    // The LAST_ACK case.
    let (_, q) = transaction(
        true,
        &[
            peer_segment(5, TcpFlags::PSH, b" /x"),
            peer_segment(8, TcpFlags::FIN, b""),
        ],
    );
    let Message::Teardown(r) = msg::parse_frame(&q[0]).unwrap().message else {
        panic!("not a teardown")
    };
    assert_eq!(r.state, TcpState::LastAck);
    assert_eq!(r.rcv_nxt, PEER_ISN + 1 + 8 + 1);
}

#[test]
fn write_without_close_grows_a_tcb_and_sends_a_segment() {
    let (mut net, s) = quasi_with(b"GET /");
    assert!(net.a.tcb(s).is_none(), "still a quasi-TCB");
    assert_eq!(read_all(&mut net, s), b"GET /");
    assert_eq!(net.a.write(s, b"200 OK"), Ok(6));
    net.a.poll();
    assert_eq!(net.a.quasi_stats().upgraded_write, 1);
    let frames = sent(&mut net);
    assert_eq!(frames.len(), 1);
    let tf = frame::parse_tcp(&frames[0]).expect("a TCP segment");
    let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
    assert_eq!(seg.seq, Seq(ISS + 1));
    assert_eq!(seg.ack, Seq(PEER_ISN + 6));
    assert_eq!(seg.payload, b"200 OK");
    assert!(!seg.flags.has(TcpFlags::FIN));
    let t = net.a.tcb(s).expect("a full TCB now");
    assert_eq!(t.state(), hoststack::tcp::tcb::State::Established);
    assert_eq!(t.window_scales(), (7, 7));
    // The peer acknowledges; the close then goes to the NIC from the full TCB.
    feed(
        &mut net,
        &peer_segment(5, TcpFlags(0), b"").to_vec().with_ack(ISS + 7),
    );
    net.a.close(s).unwrap();
    assert_eq!(net.a.stats().teardown.offloaded, 1);
    assert_eq!(net.a.quasi_stats().closed_offloaded, 0);
    assert_eq!(net.a.connections(), 0);
}

/// Rewrites the ACK number of a built frame (and its checksum, by rebuilding).
trait WithAck {
    fn with_ack(self, ack: u32) -> Vec<u8>;
}

impl WithAck for Vec<u8> {
    fn with_ack(self, ack: u32) -> Vec<u8> {
        let tf = frame::parse_tcp(&self).unwrap();
        let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
        let h = TcpHeader {
            src_port: seg.src_port,
            dst_port: seg.dst_port,
            seq: seg.seq,
            ack: Seq(ack),
            flags: seg.flags,
            window: seg.window,
            options: TcpOptions {
                timestamp: seg.options.timestamp,
                ..TcpOptions::default()
            },
        };
        let mut buf = Vec::new();
        frame::build_tcp(&mut buf, B, A, 1, &h, [seg.payload, &[]]);
        buf
    }
}

#[test]
fn in_order_data_and_fin_stay_on_the_quasi_path_and_are_read_once() {
    let (mut net, s) = quasi_with(b"ab");
    assert_eq!(read_all(&mut net, s), b"ab");
    feed(&mut net, &peer_segment(2, TcpFlags::PSH, b"cd"));
    feed(&mut net, &peer_segment(4, TcpFlags::FIN, b""));
    assert_eq!(read_all(&mut net, s), b"cd");
    let mut b = [0u8; 4];
    assert_eq!(net.a.read(s, &mut b), Ok(0), "end of stream");
    assert_eq!(net.a.quasi_stats().upgraded(), 0);
    assert!(sent(&mut net).is_empty(), "nothing acknowledged yet");
    net.a.write(s, b"ok").unwrap();
    net.a.close(s).unwrap();
    let frames = sent(&mut net);
    assert_eq!(frames.len(), 1);
    let Message::Teardown(r) = msg::parse_frame(&frames[0]).unwrap().message else {
        panic!("not a teardown")
    };
    assert_eq!(r.state, TcpState::LastAck);
    assert_eq!(r.rcv_nxt, PEER_ISN + 1 + 4 + 1);
}

#[test]
fn out_of_order_data_grows_a_tcb_and_is_delivered_once() {
    let (mut net, s) = quasi_with(b"ab");
    assert_eq!(read_all(&mut net, s), b"ab");
    feed(&mut net, &peer_segment(4, TcpFlags::PSH, b"ef"));
    assert_eq!(net.a.quasi_stats().upgraded_segment, 1);
    assert!(net.a.tcb(s).is_some());
    // The TCB answers the hole with a duplicate ACK at once.
    net.a.poll();
    let frames = sent(&mut net);
    assert!(!frames.is_empty());
    let seg_ack = {
        let tf = frame::parse_tcp(&frames[0]).unwrap();
        hoststack::tcp::segment::parse(tf.tcp).unwrap().ack
    };
    assert_eq!(seg_ack, Seq(PEER_ISN + 3));
    feed(&mut net, &peer_segment(2, TcpFlags::PSH, b"cd"));
    assert_eq!(read_all(&mut net, s), b"cdef");
    // A retransmission of what was read is not delivered again.
    feed(&mut net, &peer_segment(0, TcpFlags::PSH, b"ab"));
    assert!(read_all(&mut net, s).is_empty());
}

#[test]
fn unacknowledged_data_grows_a_tcb_after_a_delayed_ack_time() {
    let (mut net, s) = quasi_with(b"GET /");
    net.a.poll();
    assert!(sent(&mut net).is_empty());
    let delack = net.a.config().tcp.delayed_ack_ns;
    net.clock
        .fetch_add(delack + 1, std::sync::atomic::Ordering::Relaxed);
    net.a.poll();
    assert_eq!(net.a.quasi_stats().upgraded_ack_timer, 1);
    let frames = sent(&mut net);
    assert_eq!(frames.len(), 1, "the TCB's ACK");
    let tf = frame::parse_tcp(&frames[0]).unwrap();
    let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
    assert_eq!(seg.ack, Seq(PEER_ISN + 6));
    assert!(seg.payload.is_empty());
    // The bytes are still there to read, once.
    assert_eq!(read_all(&mut net, s), b"GET /");
}

#[test]
fn epoll_readiness_of_a_quasi_connection() {
    let mut net = net(true);
    let l = listener(&mut net);
    let ep = net.a.epoll_create().unwrap();
    let reg = |events, fd: Fd| EpollEvent {
        events,
        data: fd as u64,
    };
    net.a
        .epoll_ctl(ep, EpollOp::Add, l, reg(EPOLLIN, l))
        .unwrap();
    feed(&mut net, &setup_frame(b"GET /"));
    let mut evs = [EpollEvent::default(); 4];
    let n = net.a.epoll_wait(ep, &mut evs, 0).unwrap();
    assert_eq!(n, 1);
    assert_eq!(evs[0].data, l as u64);
    let s = accept(&mut net, l);
    assert_eq!(net.a.readiness(s), EPOLLIN | EPOLLOUT);
    net.a
        .epoll_ctl(ep, EpollOp::Add, s, reg(EPOLLIN | EPOLLRDHUP, s))
        .unwrap();
    assert_eq!(read_all(&mut net, s), b"GET /");
    assert_eq!(net.a.readiness(s), EPOLLOUT);
    feed(&mut net, &peer_segment(5, TcpFlags::FIN, b""));
    assert_eq!(net.a.readiness(s), EPOLLIN | EPOLLRDHUP | EPOLLOUT);
    let n = net.a.epoll_wait(ep, &mut evs, 0).unwrap();
    assert!(evs[..n]
        .iter()
        .any(|e| e.data == s as u64 && e.events & EPOLLIN != 0));
    assert_eq!(net.a.quasi_stats().upgraded(), 0);
}

#[test]
fn quasi_tcb_is_far_smaller_than_a_tcb() {
    let q = std::mem::size_of::<QuasiTcb>();
    let t = std::mem::size_of::<Tcb>();
    println!("QuasiTcb {q} bytes, Tcb {t} bytes");
    assert!(q <= 72, "QuasiTcb is {q} bytes");
    assert!(q * 10 < t, "QuasiTcb {q} vs Tcb {t}");
}

#[test]
fn listener_without_teardown_offload_builds_full_tcbs() {
    let mut net = net(true);
    let l = listener(&mut net);
    net.a
        .setsockopt(l, SockOpt::TeardownOffload(false))
        .unwrap();
    feed(&mut net, &setup_frame(b"GET /"));
    let s = accept(&mut net, l);
    assert!(net.a.tcb(s).is_some());
    assert_eq!(net.a.quasi_stats().created, 0);
}

/// Turning `TCP_TEARDOWN_OFFLOAD` off on the accepted socket makes the host close the
/// connection itself: the record grows and the TCB sends the response and FIN.
#[test]
fn close_without_teardown_offload_grows_and_closes_on_the_host() {
    let (mut net, s) = quasi_with(b"GET /");
    assert_eq!(read_all(&mut net, s), b"GET /");
    net.a
        .setsockopt(s, SockOpt::TeardownOffload(false))
        .unwrap();
    net.a.write(s, b"200 OK").unwrap();
    net.a.close(s).unwrap();
    net.a.poll();
    assert_eq!(net.a.quasi_stats().closed_offloaded, 0);
    assert_eq!(net.a.quasi_stats().upgraded_api, 1);
    assert_eq!(net.a.stats().teardown.offloaded, 0);
    let frames = sent(&mut net);
    let last = frames.last().expect("the response and FIN");
    let tf = frame::parse_tcp(last).expect("a TCP segment");
    let seg = hoststack::tcp::segment::parse(tf.tcp).unwrap();
    assert!(seg.flags.has(TcpFlags::FIN));
    let data: Vec<u8> = frames
        .iter()
        .filter_map(|f| frame::parse_tcp(f).ok())
        .flat_map(|tf| {
            hoststack::tcp::segment::parse(tf.tcp)
                .unwrap()
                .payload
                .to_vec()
        })
        .collect();
    assert_eq!(data, b"200 OK");
}

/// More data than the record keeps (two MSS: a TCB would acknowledge at once) grows a TCB
/// that takes the segment; every byte is read once.
#[test]
fn data_beyond_the_record_bound_grows_a_tcb() {
    let (mut net, s) = quasi_with(b"ab");
    let big = vec![7u8; 3000];
    feed(&mut net, &peer_segment(2, TcpFlags::PSH, &big));
    assert_eq!(net.a.quasi_stats().upgraded_data, 1);
    let got = read_all(&mut net, s);
    assert_eq!(got.len(), 3002);
    assert_eq!(&got[..2], b"ab");
    assert!(got[2..].iter().all(|&b| b == 7));
}

/// A RST from the peer grows a TCB, which the RST resets: the read reports it.
#[test]
fn reset_grows_a_tcb_that_is_reset() {
    let (mut net, s) = quasi_with(b"ab");
    feed(&mut net, &peer_segment(2, TcpFlags::RST, b""));
    assert_eq!(net.a.quasi_stats().upgraded_segment, 1);
    assert_eq!(net.a.quasi_stats().live, 0);
    let mut b = [0u8; 8];
    let r = net.a.read(s, &mut b);
    assert!(matches!(r, Ok(2) | Err(Errno::ConnReset)), "{r:?}");
}

/// The delayed-ACK timer of a record closed from its slot does not make the next record in
/// that slot grow early; the next record's own timer does.
#[test]
fn a_freed_records_timer_does_not_grow_the_next_one() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut net = net(true);
    let l = listener(&mut net);
    let delack = net.a.config().tcp.delayed_ack_ns;
    feed(&mut net, &setup_frame(b"GET /"));
    let s = accept(&mut net, l);
    assert_eq!(read_all(&mut net, s), b"GET /");
    net.a.write(s, b"200 OK").unwrap();
    net.a.close(s).unwrap();
    assert_eq!(net.a.quasi_stats().closed_offloaded, 1);
    net.clock.fetch_add(delack / 2, Relaxed);
    feed(&mut net, &setup_frame(b"GET /"));
    let _s2 = accept(&mut net, l);
    net.clock.fetch_add(delack / 2 + 1, Relaxed);
    net.a.poll();
    assert_eq!(net.a.quasi_stats().upgraded_ack_timer, 0);
    assert_eq!(net.a.quasi_stats().live, 1);
    net.clock.fetch_add(delack / 2, Relaxed);
    net.a.poll();
    assert_eq!(net.a.quasi_stats().upgraded_ack_timer, 1);
}
