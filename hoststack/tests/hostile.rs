//! Hostile input to an established connection (RFC 9293 §3.10.7.4, RFC 5961): segments outside the
//! window, invalid option lengths, RSTs with wrong sequence numbers (RFC 5961), SYNs on an
//! open connection and random garbage. Nothing crashes, memory stays within the configured
//! buffers, and the connection keeps carrying data correctly.

mod common;

use common::*;
use hoststack::frame;
use hoststack::tcp::segment::{self, TcpFlags, TcpHeader};
use hoststack::tcp::Seq;
use hoststack::Errno;

/// The (seq, ack) the client last sent towards the server: the server's RCV.NXT and SND.NXT
/// as the client knows them (after the client's last segment).
fn client_numbers(net: &Net) -> (Seq, Seq) {
    let f = frame::parse_tcp(&net.b.link().last_sent).expect("client sent a TCP frame");
    let s = segment::parse(f.tcp).unwrap();
    (s.seq + s.payload.len() as u32, s.ack)
}

/// A frame from the client's address and port to the server's, with `h`'s other fields.
fn forged(net: &Net, c: i32, h: TcpHeader, payload: &[u8]) -> Vec<u8> {
    let local = net.b.getsockname(c).unwrap();
    let remote = net.b.getpeername(c).unwrap();
    let h = TcpHeader {
        src_port: local.port(),
        dst_port: remote.port(),
        ..h
    };
    let mut f = Vec::new();
    frame::build_tcp(&mut f, B, A, 1, &h, [payload, &[]]);
    f
}

/// Sends `msg` client → server and checks it arrives intact.
fn still_works(net: &mut Net, c: i32, s: i32, msg: &[u8]) {
    let mut sent = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    assert!(net.run_until(200_000, |n| {
        if sent < msg.len() {
            if let Ok(k) = n.b.write(c, &msg[sent..]) {
                sent += k;
            }
        }
        if let Ok(k) = n.a.read(s, &mut buf) {
            got.extend_from_slice(&buf[..k]);
        }
        got.len() >= msg.len()
    }));
    assert_eq!(got, msg);
}

#[test]
fn out_of_window_segments_are_dropped_and_acked() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 100);
    still_works(&mut net, c, s, b"first");
    let (seq, ack) = client_numbers(&net);
    let before = *net.a.tcb(s).unwrap().stats();
    // Far beyond the window, and far before it (old duplicates), with data.
    for off in [
        50_000_000u32,
        1 << 31,
        (-1_000_000i32) as u32,
        (-70_000i32) as u32,
    ] {
        let h = TcpHeader {
            seq: seq + off,
            ack,
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 1000,
            ..Default::default()
        };
        let f = forged(&net, c, h, &[0xee; 500]);
        net.a.link_mut().inject(&f);
    }
    // An ACK for data never sent.
    let h = TcpHeader {
        seq,
        ack: ack + 1_000_000,
        flags: TcpFlags::ACK,
        window: 1000,
        ..Default::default()
    };
    let f = forged(&net, c, h, &[]);
    net.a.link_mut().inject(&f);
    net.a.poll();
    let after = *net.a.tcb(s).unwrap().stats();
    assert!(after.out_of_window >= before.out_of_window + 4, "{after:?}");
    assert_eq!(
        net.a.tcb(s).unwrap().recv_available(),
        0,
        "no forged byte delivered"
    );
    still_works(&mut net, c, s, b"second message after the junk");
}

#[test]
fn invalid_options_are_counted_and_ignored() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 101);
    let (seq, ack) = client_numbers(&net);
    let h = TcpHeader {
        seq,
        ack,
        flags: TcpFlags::ACK,
        window: 1000,
        ..Default::default()
    };
    let good = forged(&net, c, h, b"xyz");
    let tcp_at = frame::ETH_HDR_LEN + frame::IPV4_HDR_LEN;
    // Rewrite the header to data offset 6 with one bad option (kind 2, length 0 / 1 / 7).
    for (kind, len) in [(2u8, 0u8), (8, 1), (2, 7), (5, 3)] {
        let mut f = good[..tcp_at + 20].to_vec();
        f[tcp_at + 12] = 6 << 4;
        f.extend_from_slice(&[kind, len, 0, 0]);
        f.extend_from_slice(b"xyz");
        let total = (f.len() - frame::ETH_HDR_LEN) as u16;
        f[frame::ETH_HDR_LEN + 2..frame::ETH_HDR_LEN + 4].copy_from_slice(&total.to_be_bytes());
        net.a.link_mut().inject(&f);
    }
    let before = net.a.stats().malformed;
    net.a.poll();
    assert_eq!(net.a.stats().malformed, before + 4);
    assert_eq!(net.a.tcb(s).unwrap().recv_available(), 0);
    still_works(&mut net, c, s, b"fine");
}

#[test]
fn rst_and_syn_follow_rfc5961() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 102);
    still_works(&mut net, c, s, b"hello");
    let (seq, ack) = client_numbers(&net);
    let rst = |off: u32| TcpHeader {
        seq: seq + off,
        ack,
        flags: TcpFlags::RST,
        ..Default::default()
    };
    // In the window but not exact: challenge ACK, connection stays.
    let before = *net.a.tcb(s).unwrap().stats();
    let f = forged(&net, c, rst(1000), &[]);
    net.a.link_mut().inject(&f);
    // Outside the window: ignored.
    let f = forged(&net, c, rst(100_000_000), &[]);
    net.a.link_mut().inject(&f);
    // SYN on the open connection: challenge ACK (RFC 5961 §4).
    let syn = TcpHeader {
        seq: seq + 12345,
        flags: TcpFlags::SYN,
        window: 1000,
        ..Default::default()
    };
    let f = forged(&net, c, syn, &[]);
    net.a.link_mut().inject(&f);
    net.a.poll();
    let after = *net.a.tcb(s).unwrap().stats();
    assert!(
        after.challenge_acks >= before.challenge_acks + 2,
        "{after:?}"
    );
    assert!(after.rst_ignored > before.rst_ignored);
    assert_eq!(net.a.tcb(s).unwrap().error(), None);
    still_works(&mut net, c, s, b"still here");
    // The exact RST resets it.
    let (seq, ack) = client_numbers(&net);
    let f = forged(
        &net,
        c,
        TcpHeader {
            seq,
            ack,
            flags: TcpFlags::RST,
            ..Default::default()
        },
        &[],
    );
    net.a.link_mut().inject(&f);
    net.a.poll();
    let mut b = [0u8; 4];
    assert_eq!(net.a.read(s, &mut b), Err(Errno::ConnReset));
}

#[test]
fn random_garbage_never_breaks_the_stack() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 103);
    let (seq, ack) = client_numbers(&net);
    let h = TcpHeader {
        seq,
        ack,
        flags: TcpFlags::ACK,
        window: 1000,
        ..Default::default()
    };
    let base = forged(&net, c, h, b"payload!");
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20_000 {
        let mut f = base.clone();
        match i % 3 {
            0 => {
                // Mutate a few bytes of the IP/TCP headers.
                for _ in 0..(1 + rnd() % 4) {
                    let at = frame::ETH_HDR_LEN + (rnd() as usize % (f.len() - frame::ETH_HDR_LEN));
                    f[at] = rnd() as u8;
                }
            }
            1 => {
                let n = (rnd() % f.len() as u64) as usize;
                f.truncate(n);
            }
            _ => {
                let n = 14 + (rnd() % 100) as usize;
                f = (0..n).map(|_| rnd() as u8).collect();
            }
        }
        net.a.link_mut().inject(&f);
        if i % 64 == 0 {
            net.a.poll();
        }
    }
    assert!(net.run_until(100_000, |n| n.a.link().pending() == 0));
    // Whatever the garbage did (a mutated port can make a SYN to the listener, a mutated
    // flag byte an exact RST), the server holds no more connections than its half-open bound
    // allows, and a fresh transfer on a new connection works.
    let bound = net.a.config().max_syn_backlog + 2;
    assert!(net.a.connections() <= bound, "{}", net.a.connections());
    assert!(net.a.stats().malformed > 1000);
    let (c2, s2) = connected(&mut net, 104);
    still_works(&mut net, c2, s2, b"new connection after garbage");
    let _ = (c, s);
}
