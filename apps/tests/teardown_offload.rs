//! AccelTCP's teardown offload (§4.2) end to end: two nicemu nodes (NIC lcore + host stack) on
//! the in-memory wire, in virtual time. The server on A sets `TCP_TEARDOWN_OFFLOAD`, writes a
//! response and closes; its host hands the close to A's NIC and forgets the connection; the
//! client on B (a plain host stack) reads everything and closes. Each case checks the
//! response arrives exactly once and intact, A's host dropped the connection at close and
//! never saw another segment of it, and A's NIC holds nothing at the end. The same runs with
//! one frame dropped: each data segment, the FIN, the peer's FIN, the last ACK. And the host
//! closes by itself when the data does not fit the peer's window or SO_LINGER is set.

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, A_IP, B_IP};
use dataplane::offload::teardown::{TeardownConfig, TeardownOffload};
use dataplane::offload::OffloadChain;
use dataplane::port::wire::{DropNth, Impairments};
use dataplane::tonic::nic::TonicNic;
use hoststack::stack::{Shutdown, SockOpt};
use hoststack::{Errno, Fd};

const PORT: u16 = 8080;
const MS: u64 = 1_000_000;

fn response(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Who closes first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Close {
    /// The server writes and closes at once (active close on A's NIC: FIN_WAIT_1 ...
    /// TIME_WAIT).
    ServerFirst,
    /// The client sends a request and shuts its write side; the server reads to the end,
    /// then writes and closes (CLOSE_WAIT at handover: LAST_ACK on A's NIC).
    ClientFirst,
}

struct Case {
    close: Close,
    len: usize,
    ab: Impairments,
    ba: Impairments,
    linger: Option<u32>,
    client_rcvbuf: Option<usize>,
}

impl Case {
    fn new(close: Close, len: usize) -> Case {
        Case {
            close,
            len,
            ab: Impairments::default(),
            ba: Impairments::default(),
            linger: None,
            client_rcvbuf: None,
        }
    }
}

struct Result {
    pair: Pair,
    /// A's host frames received after the close, and teardown counts among them.
    a_frames_after_close: u64,
    a_counts_after_close: u64,
}

fn pair_for(case: &Case) -> Pair {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 300 * MS;
    }
    let mut p = wire_pair(a, b, case.ab.clone(), case.ba.clone());
    // A short TIME_WAIT on A's NIC, so the test sees it end.
    let td = TeardownOffload::new(TeardownConfig {
        time_wait_ns: 500 * MS,
        ..TeardownConfig::default()
    })
    .unwrap();
    p.a.nic.set_offloads(
        OffloadChain::new()
            .with(Box::new(td))
            .with(Box::new(TonicNic::default())),
    );
    p
}

/// Runs one exchange and checks what every case must hold.
fn run(case: Case) -> Result {
    let mut p = pair_for(&case);
    let data = response(case.len);
    let l = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(l, true).unwrap();
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.a.host.listen(l, 4).unwrap();
    let c = p.b.host.socket().unwrap();
    p.b.host.set_nonblocking(c, true).unwrap();
    if let Some(n) = case.client_rcvbuf {
        p.b.host.setsockopt(c, SockOpt::RcvBuf(n)).unwrap();
    }
    assert_eq!(
        p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT)),
        Err(Errno::InProgress)
    );
    let mut server: Option<Fd> = None;
    let mut closed_at: Option<(u64, u64)> = None;
    let mut req_sent = false;
    let mut got = Vec::new();
    let mut client_eof = false;
    let mut client_closed = false;
    let mut buf = vec![0u8; 1 << 16];
    let ok = p.run_until(20_000_000, 10_000, |p| {
        // Client: (request and shutdown), read to the end, close.
        if case.close == Close::ClientFirst && !req_sent && p.b.host.write(c, b"GET").is_ok() {
            p.b.host.shutdown(c, Shutdown::Write).unwrap();
            req_sent = true;
        }
        while !client_eof && !client_closed {
            match p.b.host.read(c, &mut buf) {
                Ok(0) => client_eof = true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(Errno::Again) | Err(Errno::NotConn) => break,
                Err(e) => panic!("client read: {e:?}"),
            }
        }
        if client_eof && !client_closed {
            p.b.host.close(c).unwrap();
            client_closed = true;
        }
        // Server: accept, (read the request to its end), write, close.
        if server.is_none() {
            if let Ok((fd, peer)) = p.a.host.accept(l) {
                assert_eq!(*peer.ip(), std::net::Ipv4Addr::from(B_IP));
                p.a.host.set_nonblocking(fd, true).unwrap();
                p.a.host
                    .setsockopt(fd, SockOpt::TeardownOffload(true))
                    .unwrap();
                if let Some(t) = case.linger {
                    p.a.host.setsockopt(fd, SockOpt::Linger(Some(t))).unwrap();
                }
                server = Some(fd);
            }
        }
        if let (Some(fd), None) = (server, closed_at) {
            let ready = match case.close {
                Close::ServerFirst => true,
                Close::ClientFirst => {
                    let mut b = [0u8; 16];
                    loop {
                        match p.a.host.read(fd, &mut b) {
                            Ok(0) => break true,
                            Ok(_) => continue,
                            Err(_) => break false,
                        }
                    }
                }
            };
            if ready {
                // Write and close in the same step: every byte goes with the handover.
                assert_eq!(p.a.host.write(fd, &data), Ok(data.len()));
                let conns = p.a.host.connections();
                p.a.host.close(fd).unwrap();
                if p.a.host.stats().teardown.offloaded == 1 {
                    assert_eq!(p.a.host.connections(), conns - 1, "forgotten at close");
                }
                let s = p.a.host.stats();
                closed_at = Some((s.frames_in, s.teardown.counts));
            }
        }
        client_closed
            && closed_at.is_some()
            && p.a.teardown().engine().in_progress() == 0
            && p.a.host.connections() == 0
            && p.b.host.connections() == 0
            && p.wire_idle()
    });
    assert!(
        ok,
        "did not finish: got {} of {} bytes, eof {client_eof}, A NIC {:?}, A conns {}, B conns {}",
        got.len(),
        data.len(),
        p.a.teardown().engine().stats(),
        p.a.host.connections(),
        p.b.host.connections()
    );
    assert_eq!(got.len(), data.len(), "every byte exactly once");
    assert!(got == data, "intact");
    let (f0, c0) = closed_at.unwrap();
    let s = p.a.host.stats();
    Result {
        a_frames_after_close: s.frames_in - f0,
        a_counts_after_close: s.teardown.counts - c0,
        pair: p,
    }
}

/// The close went to A's NIC: the host counted it, never got another segment of the
/// connection (only teardown counts), and the NIC finished it.
fn assert_offloaded(r: &Result) {
    let s = r.pair.a.host.stats();
    assert_eq!(s.teardown.offloaded, 1);
    assert_eq!(
        r.a_frames_after_close, r.a_counts_after_close,
        "A's host saw a segment of the offloaded connection"
    );
    assert_eq!(s.rst_sent, 0);
    let e = r.pair.a.teardown().engine();
    assert_eq!(e.stats().offloaded, 1);
    assert_eq!(e.stats().completed, 1, "{:?}", e.stats());
    assert_eq!(e.stats().gave_up + e.stats().peer_rst, 0);
    assert_eq!(e.in_progress(), 0);
    assert_eq!(e.timers_armed(), 0);
    assert_eq!(s.teardown.nic_count, 0, "the last count reported is 0");
    assert_eq!(r.pair.b.host.stats().rst_sent, 0);
}

fn from(frame: &[u8], ip: [u8; 4]) -> bool {
    frame.len() >= 54 && frame[12..14] == [0x08, 0x00] && frame[23] == 6 && frame[26..30] == ip
}

fn tcp_payload_len(f: &[u8]) -> usize {
    let total = u16::from_be_bytes([f[16], f[17]]) as usize;
    let thl = ((f[14 + 20 + 12] >> 4) as usize) * 4;
    total.saturating_sub(20 + thl)
}

fn flags(f: &[u8]) -> u8 {
    f[14 + 20 + 13]
}

fn a_data(f: &[u8]) -> bool {
    from(f, A_IP) && tcp_payload_len(f) > 0
}

fn a_fin(f: &[u8]) -> bool {
    from(f, A_IP) && flags(f) & 0x01 != 0
}

fn b_fin(f: &[u8]) -> bool {
    from(f, B_IP) && flags(f) & 0x01 != 0
}

fn a_pure_ack(f: &[u8]) -> bool {
    from(f, A_IP) && flags(f) == 0x10 && tcp_payload_len(f) == 0
}

fn drop(matches: fn(&[u8]) -> bool, nth: u32) -> Impairments {
    Impairments {
        drop_nth: Some(DropNth { matches, nth }),
        ..Impairments::default()
    }
}

#[test]
fn server_closes_first_nic_runs_time_wait() {
    let r = run(Case::new(Close::ServerFirst, 5000));
    assert_offloaded(&r);
    let e = r.pair.a.teardown().engine().stats();
    assert_eq!(e.time_wait, 1);
    assert_eq!(e.retransmits_rto + e.retransmits_fast, 0);
    assert!(
        r.pair.a.host.stats().teardown.counts >= 2,
        "count up, then 0"
    );
}

#[test]
fn client_closes_first_nic_runs_last_ack() {
    let r = run(Case::new(Close::ClientFirst, 5000));
    assert_offloaded(&r);
    assert_eq!(r.pair.a.teardown().engine().stats().time_wait, 0);
}

#[test]
fn each_lost_data_segment_is_retransmitted() {
    // 5000 bytes: four segments, the last with the FIN.
    for close in [Close::ServerFirst, Close::ClientFirst] {
        for nth in 1..=4 {
            let mut case = Case::new(close, 5000);
            case.ab = drop(a_data, nth);
            let r = run(case);
            assert_eq!(r.pair.links[0].snapshot().lost, 1, "{close:?} #{nth}");
            assert_offloaded(&r);
            let e = r.pair.a.teardown().engine().stats();
            assert!(
                e.retransmits_rto + e.retransmits_fast >= 1,
                "{close:?} #{nth}: {e:?}"
            );
        }
    }
}

#[test]
fn lost_fin_is_retransmitted() {
    for close in [Close::ServerFirst, Close::ClientFirst] {
        let mut case = Case::new(close, 300);
        case.ab = drop(a_fin, 1);
        let r = run(case);
        assert_eq!(r.pair.links[0].snapshot().lost, 1);
        assert_offloaded(&r);
        assert!(r.pair.a.teardown().engine().stats().retransmits_rto >= 1);
    }
}

#[test]
fn lost_peer_fin_is_retransmitted_by_the_peer() {
    // Server first: the client's FIN reaches the NIC in FIN_WAIT_2 on its retransmission.
    let mut case = Case::new(Close::ServerFirst, 300);
    case.ba = drop(b_fin, 1);
    let r = run(case);
    assert_eq!(r.pair.links[1].snapshot().lost, 1);
    assert_offloaded(&r);
    assert_eq!(r.pair.a.teardown().engine().stats().time_wait, 1);
    // Client first: its FIN is lost before the server's host sees it; the host gets the
    // retransmission and then offloads from CLOSE_WAIT.
    let mut case = Case::new(Close::ClientFirst, 300);
    case.ba = drop(b_fin, 1);
    let r = run(case);
    assert_eq!(r.pair.links[1].snapshot().lost, 1);
    assert_offloaded(&r);
}

#[test]
fn lost_last_ack_the_nic_acks_the_retransmitted_fin_in_time_wait() {
    let mut case = Case::new(Close::ServerFirst, 300);
    // A's first pure ACK is the NIC's ACK of the client's FIN.
    case.ab = drop(a_pure_ack, 1);
    let r = run(case);
    assert_eq!(r.pair.links[0].snapshot().lost, 1);
    assert_offloaded(&r);
    let e = r.pair.a.teardown().engine().stats();
    assert_eq!(e.dup_fin_acked, 1, "{e:?}");
    assert_eq!(e.time_wait, 1);
}

#[test]
fn data_beyond_the_peer_window_host_closes_itself() {
    let mut case = Case::new(Close::ServerFirst, 20_000);
    case.client_rcvbuf = Some(4096);
    let r = run(case);
    let s = r.pair.a.host.stats();
    assert_eq!(s.teardown.offloaded, 0);
    assert_eq!(s.teardown.refused_window, 1);
    assert_eq!(r.pair.a.teardown().engine().stats().offloaded, 0);
}

#[test]
fn linger_with_a_timeout_host_closes_itself() {
    let mut case = Case::new(Close::ServerFirst, 3000);
    case.linger = Some(5);
    let r = run(case);
    let s = r.pair.a.host.stats();
    assert_eq!(s.teardown.offloaded, 0);
    assert_eq!(s.teardown.refused_linger, 1);
    assert_eq!(r.pair.a.teardown().engine().stats().offloaded, 0);
}

#[test]
fn threshold_reached_host_closes_itself() {
    let (mut a, b) = pair_specs();
    a.host.teardown_threshold = 0;
    let mut p = wire_pair(a, b, Impairments::default(), Impairments::default());
    let l = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(l, true).unwrap();
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.a.host.listen(l, 4).unwrap();
    let c = p.b.host.socket().unwrap();
    p.b.host.set_nonblocking(c, true).unwrap();
    let _ = p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT));
    let mut done = false;
    assert!(p.run_until(1_000_000, 10_000, |p| {
        if !done {
            if let Ok((fd, _)) = p.a.host.accept(l) {
                p.a.host
                    .setsockopt(fd, SockOpt::TeardownOffload(true))
                    .unwrap();
                p.a.host.write(fd, b"hi").unwrap();
                p.a.host.close(fd).unwrap();
                done = true;
            }
        }
        done
    }));
    assert_eq!(p.a.host.stats().teardown.refused_threshold, 1);
}
