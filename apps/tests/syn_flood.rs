//! A SYN flood in memory, two nicemu nodes in virtual time: node B's host pushes spoofed SYNs
//! (random sources, no handshake ever completed) at A's listener, 4 M SYNs/s of virtual
//! time, while B's own client keeps opening short connections to the same listener.
//!
//! B's client reads a 4-byte answer and closes first; A's server then closes.
//!
//! - With `TCP_SETUP_OFFLOAD` (AccelTCP §4.1) A's NIC answers every SYN with a cookie and
//!   keeps nothing: A's host never sees a flood SYN, and every legitimate connection
//!   completes during the flood.
//! - Without it, A's host answers with its own SYN cookies once its SYN queue is full
//!   (RFC 4987 §3.6): the listener stays open for the legitimate client and the host holds
//!   no more than its SYN queue of half-open connections (memory flat).

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, A_IP};
use dataplane::offload::setup::SetupOffload;
use dataplane::port::wire::Impairments;
use hoststack::stack::SockOpt;
use hoststack::tcp::segment::{TcpFlags, TcpHeader, TcpOptions};
use hoststack::tcp::Seq;
use hoststack::{Errno, Fd};

const PORT: u16 = 80;
const LEGIT: usize = 50;
const BACKLOG: usize = 128;
/// Spoofed SYNs sent before the test ends.
const FLOOD: u64 = 200_000;

/// A spoofed SYN (with timestamps, as Linux sends them) from a random source to A.
fn flood_syn(x: u32, i: u32) -> Vec<u8> {
    let h = TcpHeader {
        src_port: 1024 + (i % 60_000) as u16,
        dst_port: PORT,
        seq: Seq(x),
        flags: TcpFlags::SYN,
        window: 64_240,
        options: TcpOptions {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: Some((x, 0)),
            ..TcpOptions::default()
        },
        ..Default::default()
    };
    let mut f = Vec::new();
    let src = [198, 18, (x >> 8) as u8, x as u8];
    hoststack::frame::build_tcp(&mut f, src, A_IP, 0, &h, [&[], &[]]);
    // B's NIC sends a zero destination MAC after ARP resolution of A.
    f
}

struct Flood {
    pair: Pair,
    sent: u64,
    legit: usize,
    peak_conns: usize,
}

fn run(offload: bool) -> Flood {
    let (mut a, b) = pair_specs();
    a.host.max_syn_backlog = BACKLOG;
    let mut p = wire_pair(a, b, Impairments::default(), Impairments::default());
    let l = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(l, true).unwrap();
    if offload {
        p.a.host.setsockopt(l, SockOpt::SetupOffload(true)).unwrap();
    }
    p.a.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.a.host.listen(l, 1024).unwrap();

    let mut x: u32 = 0x1234_5678;
    let mut sent = 0u64;
    let mut done = 0usize;
    let mut peak_conns = 0usize;
    let mut client: Option<(Fd, bool)> = None;
    let mut buf = [0u8; 64];
    let mut sbuf = [0u8; 64];
    let mut servers: Vec<Fd> = Vec::new();
    let ok = p.run_until(1_000_000, 2_000, |p| {
        // The flood: 8 spoofed SYNs every 2 µs of virtual time (4 M SYNs/s, about a
        // fifth of what 40 GbE carries in minimum-size frames), leaving room on B's link
        // for its own client.
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if p.b
                .host
                .link_mut()
                .send(0, &flood_syn(x, sent as u32))
                .is_err()
            {
                break;
            }
            sent += 1;
        }
        // A's server: accept, answer 4 bytes, close once the client has (the client closes
        // first, so TIME_WAIT stays on B and A's connection count shows only what the
        // flood costs).
        while let Ok((fd, _)) = p.a.host.accept(l) {
            p.a.host.set_nonblocking(fd, true).unwrap();
            let _ = p.a.host.write(fd, b"pong");
            servers.push(fd);
        }
        servers.retain(|&fd| {
            if p.a.host.read(fd, &mut sbuf) == Ok(0) {
                p.a.host.close(fd).unwrap();
                return false;
            }
            true
        });
        peak_conns = peak_conns.max(p.a.host.connections());
        // B's client: one connection at a time, reads the 4 bytes and closes.
        if client.is_none() {
            let c = p.b.host.socket().unwrap();
            p.b.host.set_nonblocking(c, true).unwrap();
            assert_eq!(
                p.b.host.connect(c, SocketAddrV4::new(A_IP.into(), PORT)),
                Err(Errno::InProgress)
            );
            client = Some((c, false));
        }
        if let Some((c, got)) = client.as_mut() {
            if p.b.host.read(*c, &mut buf) == Ok(4) {
                *got = true;
                p.b.host.close(*c).unwrap();
                client = None;
                done += 1;
            }
        }
        done >= LEGIT && sent >= FLOOD
    });
    assert!(
        ok,
        "{done} legitimate connections, {sent} flood SYNs: wanted {LEGIT} during {FLOOD}"
    );
    eprintln!(
        "offload {offload}: {sent} flood SYNs, {done} legitimate connections, peak {peak_conns} \
         connections on A's host, virtual {:.1} ms",
        (p.clock.now_ns() - 1_000_000_000) as f64 / 1e6
    );
    Flood {
        pair: p,
        sent,
        legit: done,
        peak_conns,
    }
}

#[test]
fn with_the_setup_offload_the_host_never_sees_a_flood_syn() {
    let f = run(true);
    let a = &f.pair.a;
    let nic = a.nic.offload::<SetupOffload>().unwrap().stats();
    let hs = a.host.setup_stats();
    // Every legitimate connection came through the NIC's cookies; no SYN reached the host.
    let legit = f.legit as u64;
    assert!(
        hs.nic_setups >= legit && hs.nic_setups <= legit + 1,
        "{hs:?}"
    );
    assert_eq!(a.host.stats().passive_opens, hs.nic_setups);
    assert_eq!(hs.cookies_sent, 0);
    assert_eq!(a.host.stats().syn_dropped, 0);
    // The NIC answered the flood (all but what was still on the wire at the end).
    assert!(nic.cookies_sent >= f.sent * 9 / 10, "{nic:?} of {}", f.sent);
    // A's host frames: the legitimate connections' only, nothing per flood SYN.
    assert!(a.host.stats().frames_in < 20 * legit + 10);
    assert!(
        f.peak_conns <= 2,
        "A's host held {} connections",
        f.peak_conns
    );
}

#[test]
fn without_it_the_hosts_own_cookies_keep_the_listener_open_with_flat_memory() {
    let f = run(false);
    let a = &f.pair.a;
    let hs = a.host.setup_stats();
    assert!(hs.cookies_sent > f.sent / 2, "{hs:?} of {}", f.sent);
    // The legitimate connections made it, most through a cookie: the flood keeps the queue
    // full.
    assert!(
        hs.cookies_validated >= f.legit as u64 / 2,
        "{hs:?}: legitimate connections did not come through cookies"
    );
    // Half-open connections stay within the SYN queue: memory is flat however long the
    // flood lasts.
    assert!(
        f.peak_conns <= BACKLOG + 2,
        "A's host held {} connections",
        f.peak_conns
    );
}
