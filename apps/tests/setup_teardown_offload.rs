//! AccelTCP's connection setup and teardown offloads together (§4.1, §4.2), end to end: two
//! nicemu nodes on the in-memory wire, in virtual time. A's echo server listens with
//! `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` (accepted sockets inherit them); B's plain
//! host stack opens short connections, one 64-byte request each, reads the echo and closes.
//! Every echo must arrive intact and exactly once; A's host must never handle a SYN (every
//! connection it holds came from a 0x090A setup notification) nor a FIN (every close went to
//! the NIC), and A's NIC must hold nothing once TIME_WAIT is over. Then the same with one
//! frame dropped: the SYN-ACK, the final ACK, the first request segment.

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, A_IP};
use dataplane::offload::setup::SetupOffload;
use dataplane::port::wire::{DropNth, Impairments};
use hoststack::stack::SockOpt;
use hoststack::{Errno, Fd};

const PORT: u16 = 7;
const MS: u64 = 1_000_000;

fn request(i: usize) -> [u8; 64] {
    let mut r = [0u8; 64];
    for (k, b) in r.iter_mut().enumerate() {
        *b = (i * 31 + k * 7) as u8;
    }
    r
}

fn tcp_flags(f: &[u8]) -> Option<u8> {
    (f.len() >= 54 && f[12..14] == [0x08, 0x00] && f[23] == 6).then(|| f[47])
}

fn tcp_payload_len(f: &[u8]) -> usize {
    let ihl = ((f[14] & 0xf) as usize) * 4;
    let total = u16::from_be_bytes([f[16], f[17]]) as usize;
    let doff = ((f[14 + ihl + 12] >> 4) as usize) * 4;
    total.saturating_sub(ihl + doff)
}

fn is_syn_ack(f: &[u8]) -> bool {
    tcp_flags(f) == Some(0x12)
}

fn is_pure_ack(f: &[u8]) -> bool {
    tcp_flags(f) == Some(0x10) && tcp_payload_len(f) == 0
}

fn is_data(f: &[u8]) -> bool {
    tcp_flags(f).is_some_and(|fl| fl & 0x07 == 0) && tcp_payload_len(f) > 0
}

struct Outcome {
    pair: Pair,
    echoes: usize,
}

/// `n` short connections, one after another, B → A; `ab`/`ba` impair the wire.
fn run(n: usize, ab: Impairments, ba: Impairments) -> Outcome {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 300 * MS;
    }
    let mut p = wire_pair(a, b, ab, ba);
    let l = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(l, true).unwrap();
    p.a.host.setsockopt(l, SockOpt::SetupOffload(true)).unwrap();
    p.a.host
        .setsockopt(l, SockOpt::TeardownOffload(true))
        .unwrap();
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.a.host.listen(l, 64).unwrap();

    let mut done = 0usize;
    let mut client: Option<(Fd, usize, Vec<u8>, bool)> = None; // fd, index, got, sent
    let mut servers: Vec<(Fd, Vec<u8>)> = Vec::new();
    let mut buf = [0u8; 256];
    let ok = p.run_until(5_000_000, 20_000, |p| {
        // Server: accept, read the 64-byte request, echo it, close.
        while let Ok((fd, _)) = p.a.host.accept(l) {
            p.a.host.set_nonblocking(fd, true).unwrap();
            servers.push((fd, Vec::new()));
        }
        servers.retain_mut(|(fd, got)| {
            match p.a.host.read(*fd, &mut buf) {
                Ok(k) if k > 0 => got.extend_from_slice(&buf[..k]),
                _ => {}
            }
            if got.len() >= 64 {
                assert_eq!(p.a.host.write(*fd, got), Ok(got.len()));
                p.a.host.close(*fd).unwrap();
                return false;
            }
            true
        });
        // Client: one connection at a time.
        if client.is_none() && done < n {
            let c = p.b.host.socket().unwrap();
            p.b.host.set_nonblocking(c, true).unwrap();
            assert_eq!(
                p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT)),
                Err(Errno::InProgress)
            );
            client = Some((c, done, Vec::new(), false));
        }
        if let Some((c, i, got, sent)) = client.as_mut() {
            if !*sent && p.b.host.write(*c, &request(*i)).is_ok() {
                *sent = true;
            }
            loop {
                match p.b.host.read(*c, &mut buf) {
                    Ok(0) => {
                        assert_eq!(got.as_slice(), &request(*i)[..], "echo {i}");
                        p.b.host.close(*c).unwrap();
                        done += 1;
                        client = None;
                        break;
                    }
                    Ok(k) => got.extend_from_slice(&buf[..k]),
                    Err(_) => break,
                }
            }
        }
        // Finished when every echo arrived and A's NIC has let every connection go.
        done == n && p.a.teardown().engine().in_progress() == 0
    });
    assert!(
        ok,
        "only {done} of {n} echoes; NIC teardowns in progress {}",
        p.a.teardown().engine().in_progress()
    );
    Outcome {
        pair: p,
        echoes: done,
    }
}

fn check_offloaded(o: &Outcome, n: usize) {
    let a = &o.pair.a;
    assert_eq!(o.echoes, n);
    let setup = a.nic.offload::<SetupOffload>().unwrap().stats();
    let host = a.host.stats();
    let hs = a.host.setup_stats();
    // Every connection A's host holds came from the NIC's cookies: it handled no SYN.
    assert_eq!(hs.nic_setups, n as u64, "{hs:?}");
    assert_eq!(host.passive_opens, n as u64);
    assert_eq!(host.listener_non_syn, 0);
    assert_eq!(host.syn_dropped, 0);
    assert!(setup.validated >= n as u64);
    assert_eq!(setup.rejected_hash + setup.rejected_expired, 0);
    // Every close went to the NIC; A's host holds nothing.
    assert_eq!(host.teardown.offloaded, n as u64, "{:?}", host.teardown);
    assert_eq!(a.host.connections(), 0);
    assert_eq!(host.rst_sent, 0);
    let td = a.teardown().engine();
    assert_eq!(td.in_progress(), 0);
    assert_eq!(td.stats().completed, n as u64);
    // B saw no reset.
    assert_eq!(o.pair.b.host.stats().rst_sent, 0);
}

#[test]
fn short_connections_never_reach_the_host_stack_for_setup_or_teardown() {
    let o = run(200, Impairments::default(), Impairments::default());
    check_offloaded(&o, 200);
}

fn drop_one(from_b: bool, matches: fn(&[u8]) -> bool, nth: u32) -> Outcome {
    let d = Impairments {
        drop_nth: Some(DropNth { matches, nth }),
        ..Impairments::default()
    };
    let (ab, ba) = if from_b {
        (Impairments::default(), d)
    } else {
        (d, Impairments::default())
    };
    let o = run(3, ab, ba);
    let lost: u64 = o.pair.links.iter().map(|l| l.snapshot().lost).sum();
    assert_eq!(lost, 1, "exactly one frame was dropped");
    o
}

#[test]
fn lost_syn_ack_is_recovered_by_the_clients_syn_retransmission() {
    let o = drop_one(false, is_syn_ack, 2);
    check_offloaded(&o, 3);
    let s = o.pair.a.nic.offload::<SetupOffload>().unwrap().stats();
    assert_eq!(s.cookies_sent, 4);
}

#[test]
fn lost_final_ack_is_recovered_from_the_request_that_echoes_the_cookie() {
    // B's first pure ACK is the first connection's final ACK; its request then carries the
    // cookie (TSecr still echoes the NIC's SYN-ACK) and completes the setup on the NIC.
    let o = drop_one(true, is_pure_ack, 1);
    check_offloaded(&o, 3);
    let s = o.pair.a.nic.offload::<SetupOffload>().unwrap().stats();
    assert_eq!(s.cookies_sent, 3);
}

#[test]
fn lost_first_request_segment_is_delivered_once_after_retransmission() {
    let o = drop_one(true, is_data, 2);
    check_offloaded(&o, 3);
}

/// A client that reuses its port while A's host holds the old connection in TIME_WAIT (A
/// closed first, without the teardown offload): the NIC's cookie handshake for the new
/// connection ends the old one on A's host (RFC 6191) instead of feeding it the new ACK.
#[test]
fn new_connection_on_a_tuple_in_time_wait_replaces_it() {
    let (a, b) = pair_specs();
    let mut p = wire_pair(a, b, Impairments::default(), Impairments::default());
    let l = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(l, true).unwrap();
    p.a.host.setsockopt(l, SockOpt::SetupOffload(true)).unwrap();
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.a.host.listen(l, 4).unwrap();
    for round in 0..2u8 {
        let c = p.b.host.socket().unwrap();
        p.b.host.set_nonblocking(c, true).unwrap();
        p.b.host
            .bind(c, SocketAddrV4::new([0, 0, 0, 0].into(), 40_000))
            .unwrap();
        assert_eq!(
            p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT)),
            Err(Errno::InProgress)
        );
        let mut server = None;
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        let ok = p.run_until(2_000_000, 10_000, |p| {
            if server.is_none() {
                if let Ok((fd, _)) = p.a.host.accept(l) {
                    p.a.host.set_nonblocking(fd, true).unwrap();
                    assert_eq!(p.a.host.write(fd, &[round; 10]), Ok(10));
                    p.a.host.close(fd).unwrap(); // A closes first: TIME_WAIT on A's host
                    server = Some(fd);
                }
            }
            match p.b.host.read(c, &mut buf) {
                Ok(0) => {
                    p.b.host.close(c).unwrap();
                    return true;
                }
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(_) => {}
            }
            false
        });
        assert!(ok, "round {round}");
        assert_eq!(got, vec![round; 10]);
        // Let B's close finish; A keeps its TIME_WAIT (60 s).
        assert!(p.run_until(200_000, 10_000, |p| p.b.host.connections() == 0));
        assert_eq!(
            p.a.host.connections(),
            1,
            "A holds the connection in TIME_WAIT"
        );
    }
    let hs = p.a.host.setup_stats();
    assert_eq!(hs.nic_setups, 2);
    assert_eq!(hs.time_wait_reused, 1);
}

/// AccelTCP §5.2: with both offloads every connection starts as a quasi-TCB; a request,
/// its echo and the close in the same step leave straight from the record, so the host
/// never builds a full TCB.
#[test]
fn short_connections_live_and_die_as_quasi_tcbs() {
    let o = run(200, Impairments::default(), Impairments::default());
    check_offloaded(&o, 200);
    let q = o.pair.a.host.quasi_stats();
    assert_eq!(q.created, 200, "{q:?}");
    assert_eq!(q.closed_offloaded, 200, "{q:?}");
    assert_eq!(q.upgraded(), 0, "{q:?}");
    assert_eq!(q.live, 0);
}

/// A lost request segment makes the client retransmit: whatever path the connection took
/// (quasi or grown), every echo is intact and every close still goes to the NIC.
#[test]
fn lost_request_with_quasi_tcbs_is_counted_and_echoed_once() {
    let o = drop_one(true, is_data, 2);
    check_offloaded(&o, 3);
    let q = o.pair.a.host.quasi_stats();
    assert_eq!(q.created, 3, "{q:?}");
    assert_eq!(q.closed_offloaded + q.upgraded(), 3, "{q:?}");
}
