//! Segments whose flag combinations Linux drops, sent by a raw peer to one nicemu node (NIC
//! lcore and host stack on the in-memory wire, in virtual time): SYN+FIN, SYN+RST, and
//! segments with none of SYN, ACK and RST. They go to a listener whose SYNs the NIC answers
//! (`TCP_SETUP_OFFLOAD`, AccelTCP §4.1), to one the host answers, and into an established
//! connection. None opens a connection or draws a reply, and each is counted where it was
//! dropped: the NIC's setup offload (`bad_flags`), the host (`HostStats::bad_flags`,
//! `listener_non_syn`) or the connection (`TcbStats::no_ack`). Plain SYNs to the same
//! listeners get their SYN-ACK, so the silence is the drop and not a deaf rig.
//!
//! Linux's `tcp_rcv_state_process` drops SYN+FIN and segments without ACK in LISTEN, and
//! segments without ACK in every synchronized state (RFC 9293 §3.10.7.4); a RST to a listener
//! is ignored (§3.10.7.2).

use std::net::SocketAddrV4;

use apps::node::{pair_specs, Node, A_IP, B_IP};
use dataplane::buf::PacketBuf;
use dataplane::clock::Clock;
use dataplane::offload::setup::{SetupOffload, SetupStats};
use dataplane::port::wire::{self, WireConfig, WireQueue};
use dataplane::port::Port;
use hoststack::stack::SockOpt;
use hoststack::{Errno, Fd};
use offload_api::wire::tcp::{TcpFlags, TcpHeader, TcpOptions, TcpPacket};
use offload_api::wire::Seq;

/// The listener whose SYNs the NIC answers with cookies.
const NIC_PORT: u16 = 80;
/// The listener the host stack answers itself.
const HOST_PORT: u16 = 81;
/// A listener the host answers and whose closes the NIC finishes (`TCP_TEARDOWN_OFFLOAD`,
/// AccelTCP §4.2): TIME_WAIT is on the NIC.
const TEARDOWN_PORT: u16 = 82;
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const PEER_ISN: u32 = 1_000;

struct Rig {
    node: Node<WireQueue>,
    /// The peer's end of the wire: frames written here reach the node's NIC.
    peer: WireQueue,
    clock: Clock,
    node_mac: [u8; 6],
    /// The host-answered listeners: [`HOST_PORT`]'s, [`TEARDOWN_PORT`]'s.
    host_listeners: [Fd; 2],
}

fn rig() -> Rig {
    let (spec, _) = pair_specs();
    let clock = Clock::virtual_clock();
    clock.advance(1_000_000_000);
    let node_mac = spec.mac;
    let (mut a, mut b) = wire::wire_pair(&WireConfig {
        queues: 1,
        macs: [node_mac, PEER_MAC],
        clock: clock.clone(),
        ..WireConfig::default()
    });
    let node = Node::new(spec, a.take_queue(0).expect("queue 0"), &clock);
    let peer = b.take_queue(0).expect("queue 0");
    let mut r = Rig {
        node,
        peer,
        clock,
        node_mac,
        host_listeners: [0; 2],
    };
    let h = &mut r.node.host;
    let ports = [
        (NIC_PORT, true, false),
        (HOST_PORT, false, false),
        (TEARDOWN_PORT, false, true),
    ];
    for (k, (port, setup, teardown)) in ports.into_iter().enumerate() {
        let l = h.socket().unwrap();
        h.set_nonblocking(l, true).unwrap();
        h.setsockopt(l, SockOpt::SetupOffload(setup)).unwrap();
        h.setsockopt(l, SockOpt::TeardownOffload(teardown)).unwrap();
        h.bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), port))
            .unwrap();
        h.listen(l, 16).unwrap();
        if k > 0 {
            r.host_listeners[k - 1] = l;
        }
    }
    step(&mut r);
    assert_eq!(
        r.node.nic.offload::<SetupOffload>().unwrap().listeners(),
        1,
        "the NIC took the listen registration"
    );
    // The node learns the peer's MAC from its ARP request (RFC 826) and answers it.
    let arp = dataplane::frames::arp_request(PEER_MAC, B_IP, A_IP);
    r.peer
        .tx_burst(&mut vec![<WireQueue as Port>::Buf::from_frame(&arp)]);
    step(&mut r);
    assert_eq!(replies(&mut r).len(), 1, "ARP reply");
    r
}

/// A few NIC iterations and host polls, 10 µs of virtual time each.
fn step(r: &mut Rig) {
    for _ in 0..16 {
        r.node.step();
        r.clock.advance(10_000);
    }
}

/// Every frame the node sent to the peer since the last call.
fn replies(r: &mut Rig) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    r.peer.rx_burst(&mut v, 1024);
    v.iter().map(|b| b.data().to_vec()).collect()
}

/// The TCP flags of every reply, for failure messages and checks.
fn reply_flags(frames: &[Vec<u8>]) -> Vec<TcpFlags> {
    frames
        .iter()
        .filter_map(|f| TcpPacket::new_checked(f.get(34..)?).ok().map(|t| t.flags()))
        .collect()
}

/// A segment from the peer's port `sport` to `dport` with `flags`, the timestamp option
/// (which the NIC needs to answer a SYN) and `payload`; steps the node.
fn send(r: &mut Rig, sport: u16, dport: u16, flags: TcpFlags, ack: u32, payload: &[u8]) {
    let seq = if flags.has(TcpFlags::SYN) {
        PEER_ISN
    } else {
        PEER_ISN + 1
    };
    send_at(r, (sport, dport), flags, (seq, ack), 5_000, payload);
}

/// [`send`] with the sequence and acknowledgement numbers `(seq, ack)` and TSval `tsval`.
fn send_at(
    r: &mut Rig,
    (sport, dport): (u16, u16),
    flags: TcpFlags,
    (seq, ack): (u32, u32),
    tsval: u32,
    payload: &[u8],
) {
    let syn = flags.has(TcpFlags::SYN);
    let h = TcpHeader {
        src_port: sport,
        dst_port: dport,
        seq: Seq(seq),
        ack: Seq(ack),
        flags,
        window: 64_240,
        options: TcpOptions {
            mss: syn.then_some(1460),
            sack_permitted: syn,
            timestamp: Some((tsval, 0)),
            ..TcpOptions::default()
        },
    };
    let f = dataplane::frames::tcp_with(PEER_MAC, r.node_mac, B_IP, A_IP, &h, payload);
    r.peer
        .tx_burst(&mut vec![<WireQueue as Port>::Buf::from_frame(&f)]);
    step(r);
}

/// Sends a segment with `flags` and `payload` to each listener (from ports `sport` and
/// `sport + 1`) and checks that neither drew a reply.
fn dropped_by_both_listeners(r: &mut Rig, sport: u16, flags: TcpFlags, payload: &[u8]) {
    send(r, sport, NIC_PORT, flags, 0, payload);
    send(r, sport + 1, HOST_PORT, flags, 0, payload);
    let out = replies(r);
    assert!(
        out.is_empty(),
        "replies to {flags:?}: {:?}",
        reply_flags(&out)
    );
}

fn nic_stats(r: &Rig) -> SetupStats {
    *r.node.nic.offload::<SetupOffload>().unwrap().stats()
}

#[test]
fn syn_fin_opens_nothing_and_draws_no_syn_ack() {
    let mut r = rig();
    dropped_by_both_listeners(&mut r, 40_000, TcpFlags::SYN | TcpFlags::FIN, &[]);
    let nic = nic_stats(&r);
    assert_eq!((nic.bad_flags, nic.syns, nic.cookies_sent), (1, 0, 0));
    let hs = *r.node.host.stats();
    assert_eq!((hs.bad_flags, hs.passive_opens), (1, 0));

    // The same listeners answer a plain SYN.
    send(&mut r, 40_002, NIC_PORT, TcpFlags::SYN, 0, &[]);
    send(&mut r, 40_003, HOST_PORT, TcpFlags::SYN, 0, &[]);
    let out = replies(&mut r);
    assert_eq!(
        reply_flags(&out),
        vec![TcpFlags::SYN | TcpFlags::ACK; 2],
        "a SYN-ACK from the NIC, then one from the host"
    );
    assert_eq!(nic_stats(&r).cookies_sent, 1);
    assert_eq!(r.node.host.stats().passive_opens, 1);
}

#[test]
fn syn_rst_to_a_listener_is_dropped_and_counted() {
    let mut r = rig();
    dropped_by_both_listeners(&mut r, 40_000, TcpFlags::SYN | TcpFlags::RST, &[]);
    // The NIC leaves RSTs to the host (one may reset a connection it knows nothing of);
    // the host's listener drops both.
    let nic = nic_stats(&r);
    assert_eq!((nic.bad_flags, nic.syns), (0, 0));
    let hs = *r.node.host.stats();
    assert_eq!((hs.bad_flags, hs.passive_opens, hs.rst_sent), (2, 0, 0));
}

#[test]
fn segments_without_syn_ack_or_rst_are_dropped_by_listeners_and_connections() {
    let mut r = rig();
    for (k, flags) in [TcpFlags::FIN, TcpFlags::PSH, TcpFlags(0)]
        .into_iter()
        .enumerate()
    {
        dropped_by_both_listeners(&mut r, 41_000 + 2 * k as u16, flags, b"data");
    }
    assert_eq!(nic_stats(&r).bad_flags, 3, "dropped on the NIC");
    let hs = *r.node.host.stats();
    assert_eq!(
        (hs.listener_non_syn, hs.rst_sent),
        (3, 0),
        "dropped by the host"
    );

    // An established connection (the host's listener) drops data without ACK, then takes
    // the same bytes with ACK.
    send(&mut r, 43_000, HOST_PORT, TcpFlags::SYN, 0, &[]);
    let out = replies(&mut r);
    let syn_ack = TcpPacket::new_checked(&out[0][34..]).unwrap();
    assert_eq!(syn_ack.flags(), TcpFlags::SYN | TcpFlags::ACK);
    let ack = syn_ack.seq_number().0.wrapping_add(1);
    send(&mut r, 43_000, HOST_PORT, TcpFlags::ACK, ack, &[]);
    let (fd, _) = r.node.host.accept(r.host_listeners[0]).expect("accepted");
    r.node.host.set_nonblocking(fd, true).unwrap();
    send(&mut r, 43_000, HOST_PORT, TcpFlags::PSH, ack, b"lost");
    let mut buf = [0u8; 16];
    assert_eq!(
        r.node.host.read(fd, &mut buf),
        Err(Errno::Again),
        "nothing readable"
    );
    assert_eq!(r.node.host.tcb(fd).unwrap().stats().no_ack, 1);
    assert!(
        replies(&mut r).is_empty(),
        "no reply to a segment without ACK"
    );
    send(
        &mut r,
        43_000,
        HOST_PORT,
        TcpFlags::PSH | TcpFlags::ACK,
        ack,
        b"kept",
    );
    assert_eq!(r.node.host.read(fd, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"kept");
}

#[test]
fn syn_fin_does_not_end_time_wait_on_the_host() {
    syn_fin_in_time_wait(HOST_PORT);
}

#[test]
fn syn_fin_does_not_end_time_wait_on_the_nic() {
    syn_fin_in_time_wait(TEARDOWN_PORT);
}

/// A connection to `port` that the node closes first, so that it ends in TIME_WAIT (on the
/// host, or on the NIC for [`TEARDOWN_PORT`]); then a SYN+FIN and a SYN of the 4-tuple.
fn syn_fin_in_time_wait(port: u16) {
    let on_nic = port == TEARDOWN_PORT;
    let mut r = rig();
    let sport = 44_000;
    send(&mut r, sport, port, TcpFlags::SYN, 0, &[]);
    let out = replies(&mut r);
    let iss = TcpPacket::new_checked(&out[0][34..])
        .unwrap()
        .seq_number()
        .0;
    send(&mut r, sport, port, TcpFlags::ACK, iss + 1, &[]);
    let (fd, _) = r
        .node
        .host
        .accept(r.host_listeners[on_nic as usize])
        .expect("accepted");
    // The host closes first, so it is the side that ends in TIME_WAIT.
    r.node.host.close(fd).unwrap();
    step(&mut r);
    assert_eq!(
        reply_flags(&replies(&mut r)),
        vec![TcpFlags::FIN | TcpFlags::ACK]
    );
    send(
        &mut r,
        sport,
        port,
        TcpFlags::FIN | TcpFlags::ACK,
        iss + 2,
        &[],
    );
    assert_eq!(reply_flags(&replies(&mut r)), vec![TcpFlags::ACK]);

    // A SYN+FIN that a SYN with its numbers would reincarnate (RFC 6191: newer timestamp,
    // higher sequence number): TIME_WAIT stays, the listener never sees it, no SYN-ACK.
    let next = (PEER_ISN + 100_000, 0);
    let tuple = (sport, port);
    let nic_reused = |r: &Rig| r.node.teardown().engine().stats().tw_reused;
    send_at(
        &mut r,
        tuple,
        TcpFlags::SYN | TcpFlags::FIN,
        next,
        6_000,
        &[],
    );
    let out = replies(&mut r);
    assert!(
        !reply_flags(&out).contains(&(TcpFlags::SYN | TcpFlags::ACK)),
        "{:?}",
        reply_flags(&out)
    );
    let hs = *r.node.host.stats();
    assert_eq!(
        (hs.time_wait_reused, nic_reused(&r), hs.passive_opens),
        (0, 0, 1)
    );
    // The same SYN without FIN starts the new incarnation.
    send_at(&mut r, tuple, TcpFlags::SYN, next, 6_000, &[]);
    assert_eq!(
        reply_flags(&replies(&mut r)),
        vec![TcpFlags::SYN | TcpFlags::ACK]
    );
    let hs = *r.node.host.stats();
    let reused = (hs.time_wait_reused, nic_reused(&r));
    assert_eq!(reused, if on_nic { (0, 1) } else { (1, 0) });
    assert_eq!(hs.passive_opens, 2);
}
