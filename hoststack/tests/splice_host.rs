//! `nsplice` on the host side (AccelTCP §4.3), against a peer host that plays the client and
//! the server and a link with no NIC in between: nothing answers the 0x090C install, so the
//! host relays the pair itself after the install timeout. The bytes the proxy had not read,
//! the bytes that arrive while the pair drains, FIN and RST all reach the other side, and the
//! callback reports how the pair ended.

mod common;

use std::sync::{Arc, Mutex};

use common::{addr, listener, Net, A, B};
use hoststack::frame::HostLink;
use hoststack::memlink::MemLink;
use hoststack::offload_api::msg::{self, Message};
use hoststack::stack::{SpliceEnd, SpliceReport, SpliceSide, EPOLLOUT};
use hoststack::{Context, Errno, Fd};

/// Proxy A with a client connection (B → A:80) and a server connection (A → B:8080).
/// Returns (client fd on B, proxy's client-side fd, proxy's server-side fd, server fd on B).
fn proxy_pair(net: &mut Net) -> (Fd, Fd, Fd, Fd) {
    let la = listener(&mut net.a, 80);
    let lb = listener(&mut net.b, 8080);
    let client = net.b.socket().unwrap();
    net.b.set_nonblocking(client, true).unwrap();
    assert_eq!(net.b.connect(client, addr(A, 80)), Err(Errno::InProgress));
    let up = net.a.socket().unwrap();
    net.a.set_nonblocking(up, true).unwrap();
    assert_eq!(net.a.connect(up, addr(B, 8080)), Err(Errno::InProgress));
    let (mut pc, mut srv) = (None, None);
    assert!(net.run_until(10_000, |n| {
        if pc.is_none() {
            pc = n.a.accept(la).ok().map(|x| x.0);
        }
        if srv.is_none() {
            srv = n.b.accept(lb).ok().map(|x| x.0);
        }
        pc.is_some()
            && srv.is_some()
            && n.b.readiness(client) & EPOLLOUT != 0
            && n.a.readiness(up) & EPOLLOUT != 0
    }));
    let (pc, srv) = (pc.unwrap(), srv.unwrap());
    net.a.set_nonblocking(pc, true).unwrap();
    net.b.set_nonblocking(srv, true).unwrap();
    (client, pc, up, srv)
}

fn read_all(ctx: &mut Context<MemLink>, fd: Fd, out: &mut Vec<u8>) -> Result<usize, Errno> {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        match ctx.read(fd, &mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                total += n;
            }
            Err(Errno::Again) => return Ok(total),
            Err(e) => return Err(e),
        }
    }
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ salt).collect()
}

type Reports = Arc<Mutex<Vec<SpliceReport>>>;

fn recorder() -> (Reports, hoststack::stack::SpliceCallback) {
    let r: Reports = Arc::default();
    let r2 = r.clone();
    (r, Box::new(move |rep| r2.lock().unwrap().push(*rep)))
}

#[test]
fn refusals_leave_the_sockets_with_the_application() {
    let mut net = Net::new();
    let (_client, pc, up, _srv) = proxy_pair(&mut net);
    let (_, cb) = recorder();
    assert_eq!(net.a.nsplice(pc, pc, cb), Err(Errno::Inval));
    let (_, cb) = recorder();
    assert_eq!(net.a.nsplice(pc, 999, cb), Err(Errno::BadF));
    let fresh = net.a.socket().unwrap();
    let (_, cb) = recorder();
    assert_eq!(net.a.nsplice(pc, fresh, cb), Err(Errno::NotConn));
    // Both still usable.
    assert_eq!(net.a.write(up, b"x"), Ok(1));
    assert_eq!(net.a.write(pc, b"y"), Ok(1));
    assert_eq!(net.a.splices_active(), 0);
}

/// The install goes out with the offsets App. A defines; unanswered, the host relays the
/// pair: unread bytes, later bytes both ways, FIN from both sides.
#[test]
fn unanswered_install_falls_back_to_a_host_relay() {
    let mut net = Net::new();
    let (client, pc, up, srv) = proxy_pair(&mut net);
    // The client's request reaches the proxy; the proxy reads only its first 10 bytes and
    // forwards them, as a proxy reading a request head would.
    let request = pattern(3000, 1);
    assert_eq!(net.b.write(client, &request), Ok(3000));
    assert!(
        net.run_until(10_000, |n| n.a.readiness(pc) & hoststack::stack::EPOLLIN
            != 0)
    );
    let mut head = [0u8; 10];
    assert_eq!(net.a.read(pc, &mut head), Ok(10));
    assert_eq!(net.a.write(up, &head), Ok(10));
    let (reports, cb) = recorder();
    net.a.nsplice(pc, up, cb).unwrap();
    // The descriptors belong to the stack now.
    assert_eq!(net.a.write(pc, b"x"), Err(Errno::BadF));
    assert_eq!(net.a.splices_active(), 1);
    // The install message: its offsets tie the two sequence spaces.
    let mut got_srv = Vec::new();
    assert!(net.run_until(200_000, |n| {
        read_all(&mut n.b, srv, &mut got_srv).unwrap();
        got_srv.len() >= 3000
    }));
    assert_eq!(got_srv, request, "unread bytes reach the server");
    let st = net.a.splice_stats();
    assert_eq!(st.requested, 1);
    assert_eq!(st.install_timeouts, 1, "{st:?}");
    // The server answers; the response reaches the client through the host relay.
    let response = pattern(200_000, 2);
    let mut sent = 0;
    let mut got_cli = Vec::new();
    assert!(net.run_until(2_000_000, |n| {
        if sent < response.len() {
            if let Ok(k) = n.b.write(srv, &response[sent..]) {
                sent += k;
            }
        }
        read_all(&mut n.b, client, &mut got_cli).unwrap();
        got_cli.len() >= response.len()
    }));
    assert_eq!(got_cli, response);
    // Both close: the pair ends with FIN.
    net.b.close(client).unwrap();
    let mut eof = false;
    assert!(net.run_until(200_000, |n| {
        let mut sink = Vec::new();
        if !eof && n.b.read(srv, &mut [0u8; 16]) == Ok(0) {
            eof = true;
            n.b.close(srv).unwrap();
        }
        let _ = read_all(&mut n.b, srv, &mut sink);
        !reports.lock().unwrap().is_empty()
    }));
    let r = reports.lock().unwrap()[0];
    assert_eq!(r.end, SpliceEnd::Fin);
    assert!(!r.on_nic);
    assert_eq!(r.client, addr(B, r.client.port()));
    assert_eq!(r.server, addr(B, 8080));
    assert_eq!(r.bytes_c2s, 2990, "the unread bytes the host relayed");
    assert_eq!(r.bytes_s2c, 200_000);
    assert_eq!(net.a.splices_active(), 0);
}

/// A RST from the server reaches the client as a reset.
#[test]
fn server_reset_reaches_the_client() {
    let mut net = Net::new();
    let (client, pc, up, srv) = proxy_pair(&mut net);
    let (reports, cb) = recorder();
    net.a.nsplice(pc, up, cb).unwrap();
    // Past the install timeout: the host relays.
    assert!(net.run_until(200_000, |n| n.a.splice_stats().install_timeouts == 1));
    net.b
        .setsockopt(srv, hoststack::stack::SockOpt::Linger(Some(0)))
        .unwrap();
    net.b.close(srv).unwrap();
    let mut res = Ok(0);
    assert!(net.run_until(200_000, |n| {
        res = n.b.read(client, &mut [0u8; 16]);
        res != Err(Errno::Again)
    }));
    assert_eq!(res, Err(Errno::ConnReset));
    assert!(net.run_until(10_000, |_| !reports.lock().unwrap().is_empty()));
    assert_eq!(
        reports.lock().unwrap()[0].end,
        SpliceEnd::Rst(SpliceSide::Server)
    );
}

/// The install message itself: type, both 4-tuples and the offsets of App. A.
#[test]
fn install_message_carries_the_offsets() {
    let mut net = Net::new();
    let (_client, pc, up, _srv) = proxy_pair(&mut net);
    let now = net.a.now();
    let va = net.a.tcb(pc).unwrap().splice_view(now).unwrap();
    let vb = net.a.tcb(up).unwrap().splice_view(now).unwrap();
    let (_r, cb) = recorder();
    net.a.nsplice(pc, up, cb).unwrap();
    // The install went out at once (both send buffers were empty): find it on B's side.
    let mut found = None;
    for _ in 0..64 {
        let Some((_, f)) = net.b.link_mut().recv() else {
            break;
        };
        let f: &[u8] = f.as_ref();
        if let Ok(p) = msg::parse_frame(f) {
            if let Message::SpliceInstall(r) = p.message {
                found = Some(r);
            }
        }
    }
    let r = found.expect("a 0x090C went out");
    assert_eq!(r.a.tuple.local_port, 80);
    assert_eq!(r.b.tuple.remote_port, 8080);
    assert_eq!(r.a.tuple.remote_ip, B);
    assert!(r.a.timestamps && r.b.timestamps && r.a.sack_permitted);
    assert_eq!(r.seq_offset, vb.snd_nxt.0.wrapping_sub(va.rcv_nxt.0));
    assert_eq!(r.ack_offset, vb.rcv_nxt.0.wrapping_sub(va.snd_nxt.0));
    // TSvals from the client move to at least the proxy's clock on the server side.
    assert_eq!(r.ts_offset_ab, vb.ts_now.wrapping_sub(va.ts_recent));
}

/// While the NIC relays a pair, its 4-tuples are the NIC's: the host gives no new
/// connection a local port that would make one of them again (the NIC would translate its
/// segments as the pair's), and the port is free again after the pair's closure report.
#[test]
fn a_pairs_ports_are_not_reused_until_its_closure_report() {
    use hoststack::offload_api::msg::{
        AckStatus, CloseReason, InstallAckRepr, MsgType, SpliceCloseRepr,
    };
    let mut ca = common::cfg(A);
    ca.ephemeral = (40_000, 40_001);
    let mut net = Net::with(ca, common::cfg(B));
    let (_client, pc, up, _srv) = proxy_pair(&mut net);
    let spliced = net.a.getsockname(up).unwrap().port();
    let (_r, cb) = recorder();
    net.a.nsplice(pc, up, cb).unwrap();
    // Take the install off the link and answer it as the NIC would.
    let mut install = None;
    for _ in 0..64 {
        let Some((_, f)) = net.b.link_mut().recv() else {
            break;
        };
        if let Ok(p) = msg::parse_frame(f.as_ref()) {
            if let Message::SpliceInstall(r) = p.message {
                install = Some(r);
            }
        }
    }
    let install = install.expect("a 0x090C went out");
    let to_a = |net: &mut Net, m: Message| {
        let mut f = Vec::new();
        m.write_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &[], &mut f)
            .unwrap();
        let now = net.a.now();
        net.a.input_frame(&f, now);
    };
    to_a(
        &mut net,
        Message::InstallAck(InstallAckRepr {
            request_id: install.request_id,
            request_type: MsgType::SpliceInstall,
            status: AckStatus::Ok,
        }),
    );
    assert_eq!(net.a.splice_stats().installed, 1);
    let connect = |net: &mut Net| {
        let s = net.a.socket().unwrap();
        net.a.set_nonblocking(s, true).unwrap();
        let r = net.a.connect(s, addr(B, 8080));
        (r, net.a.getsockname(s).ok().map(|a| a.port()))
    };
    // The range's other port is free; the spliced one is not.
    let (r, first) = connect(&mut net);
    assert_eq!(r, Err(Errno::InProgress));
    assert_ne!(first, Some(spliced));
    assert_eq!(connect(&mut net).0, Err(Errno::AddrNotAvail));
    // The pair ends on the NIC: its port can be used again.
    to_a(
        &mut net,
        Message::SpliceClose(SpliceCloseRepr {
            request_id: install.request_id,
            reason: CloseReason::Fin,
            rst_side: 0,
            a: install.a.tuple,
            b: install.b.tuple,
            bytes_ab: 0,
            bytes_ba: 0,
            packets_ab: 0,
            packets_ba: 0,
        }),
    );
    assert_eq!(net.a.splices_active(), 0);
    assert_eq!(connect(&mut net), (Err(Errno::InProgress), Some(spliced)));
}

/// The drain waits for TCP's own retransmissions: a head that needs four tries to reach the
/// server still gets there. The proxy's SYN to the server was lost and, without timestamps
/// to time the retransmitted one (Karn's rule), the connection starts at a backed-off RTO of
/// 2 s, so the head goes at 0, 2, 6 and 14 s (RFC 6298 §5.5), past 10 s.
#[test]
fn a_head_that_needs_four_tries_still_drains() {
    let mut ca = common::cfg(A);
    ca.tcp.timestamps = false;
    let mut net = Net::with(ca, common::cfg(B));
    // (SYNs lost, data segments lost) towards the server's port.
    let lost = Arc::new(Mutex::new((0u32, 0u32)));
    let l2 = lost.clone();
    net.a.link_mut().drop_if = Some(Box::new(move |f: &[u8]| {
        // Ethernet (14) and an IPv4 header without options (20), then TCP.
        let tcp = &f[34..];
        if u16::from_be_bytes([tcp[2], tcp[3]]) != 8080 {
            return false;
        }
        let ip_len = u16::from_be_bytes([f[16], f[17]]) as usize;
        let payload = ip_len - 20 - usize::from(tcp[12] >> 4) * 4;
        let mut l = l2.lock().unwrap();
        if tcp[13] & 0x02 != 0 && l.0 == 0 {
            l.0 += 1;
            return true;
        }
        if payload > 0 && l.1 < 3 {
            l.1 += 1;
            return true;
        }
        false
    }));
    let (client, pc, up, srv) = proxy_pair(&mut net);
    let head = pattern(100, 7);
    assert_eq!(net.b.write(client, &head), Ok(100));
    let mut got = Vec::new();
    assert!(net.run_until(100_000, |n| {
        read_all(&mut n.a, pc, &mut got).unwrap();
        got.len() == 100
    }));
    assert_eq!(net.a.write(up, &got), Ok(100));
    let (reports, cb) = recorder();
    net.a.nsplice(pc, up, cb).unwrap();
    let start = net.clock.load(std::sync::atomic::Ordering::Relaxed);
    let mut at_server = Vec::new();
    assert!(
        net.run_until(3_000_000, |n| {
            read_all(&mut n.b, srv, &mut at_server).unwrap();
            at_server.len() >= 100 || !reports.lock().unwrap().is_empty()
        }),
        "neither the head nor a report"
    );
    let took = net.clock.load(std::sync::atomic::Ordering::Relaxed) - start;
    assert_eq!(*lost.lock().unwrap(), (1, 3));
    assert!(
        reports.lock().unwrap().is_empty(),
        "{:?}",
        reports.lock().unwrap()
    );
    assert_eq!(at_server, head);
    assert!(
        took > 12_000_000_000,
        "the fourth try, at about 14 s: {took} ns"
    );
}
