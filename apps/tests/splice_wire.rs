//! AccelTCP connection splicing (§4.3) end to end on the in-memory wire, in virtual time:
//! node A is an L7 proxy, node B holds both the client and the server. A's proxy reads the
//! start of the client's request, connects to the server, forwards what it read and calls
//! `nsplice`; from then on A's NIC relays the two connections. Every byte must arrive intact
//! both ways, with loss and reordering too; after the install no frame of the pair reaches
//! A's host; the closure report counts what the peers counted; a RST from either end reaches
//! the other; a full splice table leaves the pair with A's host, which relays it.

use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};

use apps::node::{pair_specs, wire_pair, Pair, A_IP, B_IP};
use dataplane::port::wire::Impairments;
use hoststack::stack::{SockOpt, SpliceEnd, SpliceReport, SpliceSide, EPOLLIN, EPOLLOUT};
use hoststack::{Errno, Fd};

const PROXY_PORT: u16 = 80;
const SERVER_PORT: u16 = 8080;
/// Bytes of the request the proxy reads before splicing (a request head).
const HEAD: usize = 100;

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 13) as u8 ^ salt)
        .collect()
}

fn listen(ctx: &mut hoststack::Context<hoststack::offload_api::link::HostEnd>, port: u16) -> Fd {
    let l = ctx.socket().unwrap();
    ctx.set_nonblocking(l, true).unwrap();
    ctx.bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), port))
        .unwrap();
    ctx.listen(l, 64).unwrap();
    l
}

type Reports = Arc<Mutex<Vec<SpliceReport>>>;

/// The pair after the splice: client and server sockets on B, and A's splice reports.
struct Spliced {
    p: Pair,
    client: Fd,
    server: Fd,
    reports: Reports,
    /// What the server has received so far (the head, then the rest).
    at_server: Vec<u8>,
    /// The client's first bytes (the head the proxy read, then more).
    request: Vec<u8>,
    /// A's host frames_in when the NIC acknowledged the install.
    host_frames_at_install: u64,
}

/// Sets the topology up and splices; `request` is what the client sends first (at least
/// `HEAD` bytes).
fn splice(ab: Impairments, ba: Impairments, max_pairs: Option<usize>, request: &[u8]) -> Spliced {
    let (a, b) = pair_specs();
    let mut p = wire_pair(a, b, ab, ba);
    if let Some(n) = max_pairs {
        use dataplane::offload::splice::{SpliceConfig, SpliceOffload, SpliceTable};
        use dataplane::offload::{setup::SetupOffload, teardown::TeardownOffload, OffloadChain};
        let table = SpliceTable::new(SpliceConfig {
            max_pairs: n,
            ..SpliceConfig::default()
        });
        p.a.nic.set_offloads(
            OffloadChain::new()
                .with(Box::new(SpliceOffload::new(table)))
                .with(Box::new(TeardownOffload::default()))
                .with(Box::new(dataplane::tonic::nic::TonicNic::default()))
                .with(Box::new(SetupOffload::default())),
        );
    }
    let lp = listen(&mut p.a.host, PROXY_PORT);
    let ls = listen(&mut p.b.host, SERVER_PORT);
    let client = p.b.host.socket().unwrap();
    p.b.host.set_nonblocking(client, true).unwrap();
    assert_eq!(
        p.b.host
            .connect(client, SocketAddrV4::new(A_IP.into(), PROXY_PORT)),
        Err(Errno::InProgress)
    );
    let mut sent = 0;
    let mut proxy_c = None;
    let mut head = Vec::new();
    let mut upstream = None;
    let mut server = None;
    let reports: Reports = Arc::default();
    let r2 = reports.clone();
    let mut cb = Some(
        Box::new(move |r: &SpliceReport| r2.lock().unwrap().push(*r))
            as hoststack::stack::SpliceCallback,
    );
    let mut at_server = Vec::new();
    let mut buf = vec![0u8; 65536];
    let ok = p.run_until(2_000_000, 10_000, |p| {
        if sent < request.len() && p.b.host.readiness(client) & EPOLLOUT != 0 {
            if let Ok(n) = p.b.host.write(client, &request[sent..]) {
                sent += n;
            }
        }
        if proxy_c.is_none() {
            proxy_c = p.a.host.accept(lp).ok().map(|x| x.0);
            if let Some(c) = proxy_c {
                p.a.host.set_nonblocking(c, true).unwrap();
            }
        }
        if let Some(c) = proxy_c {
            if head.len() < HEAD {
                if let Ok(n) = p.a.host.read(c, &mut buf[..HEAD - head.len()]) {
                    head.extend_from_slice(&buf[..n]);
                }
            }
            if head.len() == HEAD && upstream.is_none() {
                let u = p.a.host.socket().unwrap();
                p.a.host.set_nonblocking(u, true).unwrap();
                let _ =
                    p.a.host
                        .connect(u, SocketAddrV4::new(B_IP.into(), SERVER_PORT));
                upstream = Some((u, false));
            }
        }
        if let Some((u, ref mut forwarded)) = upstream {
            if !*forwarded && p.a.host.readiness(u) & EPOLLOUT != 0 {
                assert_eq!(p.a.host.write(u, &head), Ok(HEAD));
                *forwarded = true;
                let cb = cb.take().unwrap();
                p.a.host.nsplice(proxy_c.unwrap(), u, cb).unwrap();
            }
        }
        if server.is_none() {
            server = p.b.host.accept(ls).ok().map(|x| x.0);
            if let Some(s) = server {
                p.b.host.set_nonblocking(s, true).unwrap();
            }
        }
        if let Some(s) = server {
            while let Ok(n) = p.b.host.read(s, &mut buf) {
                if n == 0 {
                    break;
                }
                at_server.extend_from_slice(&buf[..n]);
            }
        }
        sent == request.len()
            && p.a.host.splice_stats().installed + p.a.host.splice_stats().refused == 1
    });
    assert!(ok, "no splice: {:?}", p.a.host.splice_stats());
    let host_frames_at_install = p.a.host.stats().frames_in;
    Spliced {
        p,
        client,
        server: server.expect("server accepted"),
        reports,
        at_server,
        request: request.to_vec(),
        host_frames_at_install,
    }
}

/// Moves `c2s` from client to server and `s2c` back, checking both; then both close.
fn transfer(s: &mut Spliced, c2s: &[u8], s2c: &[u8], steps: u64) {
    let (client, server) = (s.client, s.server);
    let (mut sent_c, mut sent_s) = (0, 0);
    let mut at_client = Vec::new();
    let mut at_server = std::mem::take(&mut s.at_server);
    let want_server = s.request.len() + c2s.len();
    let mut buf = vec![0u8; 65536];
    let ok = s.p.run_until(steps, 10_000, |p| {
        if sent_c < c2s.len() {
            if let Ok(n) = p.b.host.write(client, &c2s[sent_c..]) {
                sent_c += n;
            }
        }
        if sent_s < s2c.len() {
            if let Ok(n) = p.b.host.write(server, &s2c[sent_s..]) {
                sent_s += n;
            }
        }
        while let Ok(n) = p.b.host.read(server, &mut buf) {
            if n == 0 {
                break;
            }
            at_server.extend_from_slice(&buf[..n]);
        }
        while let Ok(n) = p.b.host.read(client, &mut buf) {
            if n == 0 {
                break;
            }
            at_client.extend_from_slice(&buf[..n]);
        }
        at_server.len() >= want_server && at_client.len() >= s2c.len()
    });
    assert!(
        ok,
        "transfer stalled: server has {} of {want_server}, client {} of {}",
        at_server.len(),
        at_client.len(),
        s2c.len()
    );
    assert!(
        at_server[..s.request.len()] == s.request[..],
        "the request differs at the server"
    );
    assert!(
        at_server[s.request.len()..] == *c2s,
        "client → server bytes differ"
    );
    assert!(at_client == *s2c, "server → client bytes differ");
    s.at_server = at_server;
}

/// Both ends close; returns the closure report.
fn close_both(s: &mut Spliced) -> SpliceReport {
    let (client, server) = (s.client, s.server);
    s.p.b.host.close(client).unwrap();
    let mut server_closed = false;
    let reports = s.reports.clone();
    let ok = s.p.run_until(3_000_000, 10_000, |p| {
        if !server_closed
            && p.b.host.readiness(server) & EPOLLIN != 0
            && p.b.host.read(server, &mut [0u8; 64]) == Ok(0)
        {
            p.b.host.close(server).unwrap();
            server_closed = true;
        }
        !reports.lock().unwrap().is_empty()
    });
    assert!(ok, "no closure report");
    let r = reports.lock().unwrap()[0];
    r
}

#[test]
fn spliced_pair_relays_both_ways_on_the_nic() {
    let request = pattern(HEAD + 1000, 1);
    let mut s = splice(
        Impairments::default(),
        Impairments::default(),
        None,
        &request,
    );
    assert_eq!(s.p.a.host.splice_stats().installed, 1);
    let c2s = pattern(300_000, 2);
    let s2c = pattern(2_000_000, 3);
    transfer(&mut s, &c2s, &s2c, 3_000_000);
    // After the install nothing of the pair crossed to A's host.
    let crossed = s.p.a.host.stats().frames_in - s.host_frames_at_install;
    assert_eq!(crossed, 0, "frames of the spliced pair reached the host");
    let r = close_both(&mut s);
    assert_eq!(r.end, SpliceEnd::Fin);
    assert!(r.on_nic);
    assert_eq!(r.server, SocketAddrV4::new(B_IP.into(), SERVER_PORT));
    // The report counts the bytes after the splice point: the rest of the request and the
    // client's later bytes one way, the whole response the other.
    assert_eq!(r.bytes_c2s, (request.len() - HEAD + c2s.len()) as u64);
    assert_eq!(r.bytes_s2c, s2c.len() as u64);
    assert_eq!(s.p.a.host.splices_active(), 0);
    // Only the closure report crossed after the install.
    assert_eq!(s.p.a.host.stats().frames_in - s.host_frames_at_install, 1);
}

#[test]
fn spliced_pair_survives_loss_and_reordering() {
    let imp = |seed| Impairments {
        loss: 0.05,
        reorder: 0.02,
        seed,
        ..Impairments::default()
    };
    let request = pattern(HEAD + 10, 4);
    let mut s = splice(imp(11), imp(12), None, &request);
    let c2s = pattern(200_000, 5);
    let s2c = pattern(1_000_000, 6);
    transfer(&mut s, &c2s, &s2c, 20_000_000);
    let r = close_both(&mut s);
    assert_eq!(r.end, SpliceEnd::Fin);
    assert_eq!(r.bytes_s2c, s2c.len() as u64);
}

fn reset_from(side: SpliceSide) {
    let request = pattern(HEAD, 7);
    let mut s = splice(
        Impairments::default(),
        Impairments::default(),
        None,
        &request,
    );
    transfer(&mut s, b"ping", b"pong", 1_000_000);
    let (closer, other) = match side {
        SpliceSide::Client => (s.client, s.server),
        SpliceSide::Server => (s.server, s.client),
    };
    s.p.b
        .host
        .setsockopt(closer, SockOpt::Linger(Some(0)))
        .unwrap();
    s.p.b.host.close(closer).unwrap();
    let mut res = Ok(0);
    let reports = s.reports.clone();
    assert!(
        s.p.run_until(1_000_000, 10_000, |p| {
            if res == Ok(0) || res == Err(Errno::Again) {
                res = p.b.host.read(other, &mut [0u8; 16]);
            }
            res == Err(Errno::ConnReset) && !reports.lock().unwrap().is_empty()
        }),
        "other end saw {res:?}"
    );
    assert_eq!(s.reports.lock().unwrap()[0].end, SpliceEnd::Rst(side));
}

#[test]
fn client_reset_reaches_the_server() {
    reset_from(SpliceSide::Client);
}

#[test]
fn server_reset_reaches_the_client() {
    reset_from(SpliceSide::Server);
}

#[test]
fn full_table_leaves_the_pair_with_the_host() {
    let request = pattern(HEAD + 50, 8);
    let mut s = splice(
        Impairments::default(),
        Impairments::default(),
        Some(0),
        &request,
    );
    assert_eq!(s.p.a.host.splice_stats().refused, 1);
    let c2s = pattern(100_000, 9);
    let s2c = pattern(500_000, 10);
    transfer(&mut s, &c2s, &s2c, 3_000_000);
    let r = close_both(&mut s);
    assert_eq!(r.end, SpliceEnd::Fin);
    assert!(!r.on_nic);
    assert_eq!(r.bytes_s2c, s2c.len() as u64);
}
