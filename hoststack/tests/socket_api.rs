//! The mTCP-style socket and epoll API over two host contexts joined by an in-memory link
//! (no NIC), in virtual time.

mod common;

use std::net::Ipv4Addr;

use common::*;
use hoststack::stack::{
    EpollEvent, EpollOp, Shutdown, SockOpt, SockOptName, EPOLLET, EPOLLHUP, EPOLLIN, EPOLLOUT,
    EPOLLRDHUP,
};
use hoststack::Errno;

#[test]
fn connect_accept_echo_close_with_epoll() {
    let mut net = Net::new();
    let l = listener(&mut net.a, 80);
    let ep = net.a.epoll_create().unwrap();
    net.a
        .epoll_ctl(
            ep,
            EpollOp::Add,
            l,
            EpollEvent {
                events: EPOLLIN,
                data: 1,
            },
        )
        .unwrap();
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    let cep = net.b.epoll_create().unwrap();
    net.b
        .epoll_ctl(
            cep,
            EpollOp::Add,
            c,
            EpollEvent {
                events: EPOLLOUT,
                data: 7,
            },
        )
        .unwrap();
    assert_eq!(net.b.connect(c, addr(A, 80)), Err(Errno::InProgress));
    let mut evs = [EpollEvent::default(); 8];
    let mut server = None;
    let mut client_ready = false;
    assert!(net.run_until(10_000, |n| {
        if server.is_none() && n.a.epoll_wait(ep, &mut evs, 0).unwrap() > 0 {
            assert_eq!(evs[0].data, 1);
            let (fd, peer) = n.a.accept(l).unwrap();
            assert_eq!(*peer.ip(), Ipv4Addr::from(B));
            server = Some(fd);
        }
        if !client_ready && n.b.epoll_wait(cep, &mut evs, 0).unwrap() > 0 {
            assert_eq!(evs[0].data, 7);
            assert!(evs[0].events & EPOLLOUT != 0);
            client_ready = true;
        }
        server.is_some() && client_ready
    }));
    let s = server.unwrap();
    net.a.set_nonblocking(s, true).unwrap();
    assert_eq!(net.b.getpeername(c).unwrap(), addr(A, 80));
    assert_eq!(net.a.getsockname(s).unwrap(), addr(A, 80));
    assert_eq!(net.a.getpeername(s).unwrap(), net.b.getsockname(c).unwrap());
    assert_eq!(
        net.b.getsockopt(c, SockOptName::Error).unwrap(),
        SockOpt::Error(None)
    );

    // 1 MB client → server, echoed back.
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let (mut sent, mut echoed_in, mut echoed_out) = (0, Vec::new(), 0usize);
    let mut back = Vec::new();
    let mut buf = vec![0u8; 65536];
    assert!(net.run_until(2_000_000, |n| {
        if sent < data.len() {
            if let Ok(k) = n.b.write(c, &data[sent..]) {
                sent += k;
            }
        }
        if let Ok(k) = n.a.read(s, &mut buf) {
            echoed_in.extend_from_slice(&buf[..k]);
        }
        if echoed_out < echoed_in.len() {
            if let Ok(k) = n.a.write(s, &echoed_in[echoed_out..]) {
                echoed_out += k;
            }
        }
        if let Ok(k) = n.b.read(c, &mut buf) {
            back.extend_from_slice(&buf[..k]);
        }
        back.len() == data.len()
    }));
    assert!(back == data, "echoed bytes differ");

    // Client closes: the server reads end of stream, closes too; both connections are freed.
    net.b.close(c).unwrap();
    assert!(net.run_until(100_000, |n| n.a.read(s, &mut buf) == Ok(0)));
    assert!(net.a.readiness(s) & EPOLLRDHUP != 0);
    net.a.close(s).unwrap();
    assert!(net.run_until(1_000_000, |n| n.a.connections() == 0
        && n.b.connections() == 0));
    assert_eq!(net.a.read(s, &mut buf), Err(Errno::BadF));
}

#[test]
fn errors_are_errno_values() {
    let mut net = Net::new();
    let s = net.a.socket().unwrap();
    assert_eq!(
        net.a.bind(s, addr([192, 0, 2, 9], 1)),
        Err(Errno::AddrNotAvail)
    );
    net.a.bind(s, addr(A, 81)).unwrap();
    assert_eq!(net.a.bind(s, addr(A, 82)), Err(Errno::Inval));
    let s2 = net.a.socket().unwrap();
    assert_eq!(net.a.bind(s2, addr(A, 81)), Err(Errno::AddrInUse));
    net.a.setsockopt(s2, SockOpt::ReuseAddr(true)).unwrap();
    net.a.setsockopt(s, SockOpt::ReuseAddr(true)).unwrap();
    net.a.bind(s2, addr(A, 81)).unwrap();
    net.a.listen(s, 4).unwrap();
    assert_eq!(net.a.listen(s2, 4), Err(Errno::AddrInUse));
    let mut b = [0u8; 4];
    assert_eq!(net.a.read(s, &mut b), Err(Errno::NotConn));
    assert_eq!(net.a.write(s, &b), Err(Errno::NotConn));
    assert_eq!(net.a.read(999, &mut b), Err(Errno::BadF));
    assert_eq!(net.a.read(-1, &mut b), Err(Errno::BadF));
    let ep = net.a.epoll_create().unwrap();
    assert_eq!(net.a.read(ep, &mut b), Err(Errno::NotSock));
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 0,
    };
    net.a.epoll_ctl(ep, EpollOp::Add, s, ev).unwrap();
    assert_eq!(net.a.epoll_ctl(ep, EpollOp::Add, s, ev), Err(Errno::Exist));
    assert_eq!(net.a.epoll_ctl(ep, EpollOp::Del, s2, ev), Err(Errno::NoEnt));
    assert_eq!(net.a.epoll_ctl(s, EpollOp::Add, s2, ev), Err(Errno::Inval));
    assert_eq!(net.a.setsockopt(s, SockOpt::SndBuf(1)), Err(Errno::Inval));
    net.a.setsockopt(s, SockOpt::SetupOffload(true)).unwrap();
    assert_eq!(
        net.a.getsockopt(s, SockOptName::SetupOffload).unwrap(),
        SockOpt::SetupOffload(true)
    );
    assert_eq!(Errno::ConnRefused.code(), 111);

    // Connecting to a port nobody listens on: RST → ECONNREFUSED through SO_ERROR.
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    assert_eq!(net.b.connect(c, addr(A, 9)), Err(Errno::InProgress));
    assert_eq!(net.b.connect(c, addr(A, 9)), Err(Errno::Already));
    assert!(net.run_until(10_000, |n| n.b.readiness(c) & EPOLLHUP != 0));
    assert_eq!(
        net.b.getsockopt(c, SockOptName::Error).unwrap(),
        SockOpt::Error(Some(Errno::ConnRefused))
    );
    assert_eq!(
        net.b.getsockopt(c, SockOptName::Error).unwrap(),
        SockOpt::Error(None)
    );
    assert!(net.a.stats().rst_sent >= 1);
}

#[test]
fn level_and_edge_triggered() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 90);
    let ep = net.a.epoll_create().unwrap();
    net.a
        .epoll_ctl(
            ep,
            EpollOp::Add,
            s,
            EpollEvent {
                events: EPOLLIN,
                data: 1,
            },
        )
        .unwrap();
    let mut evs = [EpollEvent::default(); 4];
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 0);
    net.b.write(c, b"hello").unwrap();
    assert!(net.run_until(10_000, |n| n.a.readiness(s) & EPOLLIN != 0));
    // Level-triggered: reported on every wait while unread.
    for _ in 0..3 {
        assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 1);
        assert_eq!(evs[0].events & EPOLLIN, EPOLLIN);
    }
    // Edge-triggered: once, then again only after new data.
    net.a
        .epoll_ctl(
            ep,
            EpollOp::Mod,
            s,
            EpollEvent {
                events: EPOLLIN | EPOLLET,
                data: 2,
            },
        )
        .unwrap();
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 1);
    assert_eq!(evs[0].data, 2);
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 0);
    net.b.write(c, b" world").unwrap();
    assert!(net.run_until(10_000, |n| n.a.tcb(s).unwrap().recv_available() == 11));
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 1);
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 0);
    let mut b = [0u8; 32];
    assert_eq!(net.a.read(s, &mut b).unwrap(), 11);
    assert_eq!(&b[..11], b"hello world");
    assert_eq!(net.a.read(s, &mut b), Err(Errno::Again));
    // After the read nothing is ready; deleting the registration stops reports.
    net.a
        .epoll_ctl(ep, EpollOp::Del, s, EpollEvent::default())
        .unwrap();
    net.b.write(c, b"!").unwrap();
    assert!(net.run_until(10_000, |n| n.a.readiness(s) & EPOLLIN != 0));
    assert_eq!(net.a.epoll_wait(ep, &mut evs, 0).unwrap(), 0);
}

#[test]
fn linger_zero_resets_and_shutdown_half_closes() {
    let mut net = Net::new();
    let (c, s) = connected(&mut net, 91);
    // Half close: the client shuts its write side, the server reads EOF and still sends.
    net.b.shutdown(c, Shutdown::Write).unwrap();
    let mut b = [0u8; 16];
    assert!(net.run_until(10_000, |n| n.a.read(s, &mut b) == Ok(0)));
    assert_eq!(net.a.write(s, b"late").unwrap(), 4);
    assert!(net.run_until(10_000, |n| n.b.read(c, &mut b) == Ok(4)));
    assert_eq!(&b[..4], b"late");
    assert_eq!(net.b.write(c, b"x"), Err(Errno::Pipe));

    let (c2, s2) = connected(&mut net, 92);
    net.a.setsockopt(s2, SockOpt::Linger(Some(0))).unwrap();
    net.a.close(s2).unwrap();
    assert!(net.run_until(10_000, |n| n.b.read(c2, &mut b) == Err(Errno::ConnReset)));
}

#[test]
fn syn_flood_is_bounded_and_established_connections_keep_working() {
    syn_flood(false);
}

#[test]
fn syn_flood_with_cookies_keeps_the_listener_open_and_memory_flat() {
    syn_flood(true);
}

/// 5,000 spoofed SYNs into a listener whose SYN queue holds 64. Without SYN cookies the
/// excess is dropped; with them (RFC 4987 §3.6) each gets a stateless SYN-ACK, the host holds
/// no more connections than without, and a real client still connects to the flooded
/// listener during the flood.
fn syn_flood(cookies: bool) {
    let mut ca = cfg(A);
    ca.syn_cookies = cookies;
    ca.max_syn_backlog = 64;
    ca.tcp.syn_retries = 1;
    let mut net = Net::with(ca, cfg(B));
    let (c, s) = connected(&mut net, 93);
    let _flooded = listener(&mut net.a, 94);
    // 5,000 SYNs from random spoofed sources, never completed.
    let mut x: u32 = 12345;
    for i in 0..5_000u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let src = [198, 18, (x >> 8) as u8, x as u8];
        let h = hoststack::tcp::segment::TcpHeader {
            src_port: 1024 + (i % 60000) as u16,
            dst_port: 94,
            seq: hoststack::tcp::Seq(x),
            flags: hoststack::tcp::segment::TcpFlags::SYN,
            window: 65535,
            ..Default::default()
        };
        let mut f = Vec::new();
        hoststack::frame::build_tcp(&mut f, src, A, 0, &h, [&[], &[]]);
        net.a.link_mut().inject(&f);
        if i % 100 == 0 {
            net.a.poll();
            assert!(net.a.connections() <= 64 + 1, "half-open not bounded");
        }
    }
    assert!(net.run_until(1000, |n| n.a.link().pending() == 0));
    if cookies {
        assert_eq!(net.a.stats().syn_dropped, 0);
        assert!(net.a.setup_stats().cookies_sent >= 5_000 - 64);
        // The flooded listener still takes a real client, through a cookie.
        let c2 = net.b.socket().unwrap();
        net.b.set_nonblocking(c2, true).unwrap();
        let _ = net.b.connect(c2, addr(A, 94));
        net.a.set_nonblocking(_flooded, true).unwrap();
        let mut acc = None;
        assert!(net.run_until(10_000, |n| {
            acc = n.a.accept(_flooded).ok();
            acc.is_some()
        }));
        assert_eq!(net.a.setup_stats().cookies_validated, 1);
        let (s2, _) = acc.unwrap();
        net.a.set_nonblocking(s2, true).unwrap();
        net.b.write(c2, b"through the flood").unwrap();
        let mut b = [0u8; 32];
        assert!(net.run_until(100_000, |n| n.a.read(s2, &mut b) == Ok(17)));
        assert_eq!(&b[..17], b"through the flood");
        net.a.close(s2).unwrap();
        net.b.close(c2).unwrap();
    } else {
        assert!(net.a.stats().syn_dropped >= 5_000 - 64);
    }
    assert!(net.a.connections() <= 64 + 2);
    // The established connection still works.
    net.b.write(c, b"ping").unwrap();
    let mut b = [0u8; 8];
    assert!(net.run_until(100_000, |n| n.a.read(s, &mut b) == Ok(4)));
    // The half-open ones time out and are freed.
    assert!(net.run_until(200_000, |n| n.a.connections() == 1));
}

#[test]
fn connect_to_a_silent_peer_times_out_and_epoll_reports_it() {
    let mut cb = cfg(B);
    cb.tcp.syn_retries = 2;
    let mut net = Net::with(cfg(A), cb);
    // Everything B sends is lost: A never answers.
    net.b.link_mut().drop_if = Some(Box::new(|_| true));
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    let ep = net.b.epoll_create().unwrap();
    net.b
        .epoll_ctl(
            ep,
            EpollOp::Add,
            c,
            EpollEvent {
                events: EPOLLOUT,
                data: 5,
            },
        )
        .unwrap();
    assert_eq!(net.b.connect(c, addr(A, 7)), Err(Errno::InProgress));
    let mut evs = [EpollEvent::default(); 4];
    let mut got = 0;
    assert!(net.run_until(100_000, |n| {
        got = n.b.epoll_wait(ep, &mut evs, 0).unwrap();
        got > 0
    }));
    assert_eq!(evs[0].data, 5);
    assert!(evs[0].events & EPOLLHUP != 0, "{:#x}", evs[0].events);
    assert_eq!(
        net.b.getsockopt(c, SockOptName::Error).unwrap(),
        SockOpt::Error(Some(Errno::TimedOut))
    );
    // SYN at 0 s, retries at 1 s and 3 s, failure at 7 s (1 s initial RTO, doubling).
    let t = net.clock.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (6_000_000_000..9_000_000_000).contains(&(t - 1_000_000_000)),
        "{t}"
    );
}

/// An accepted socket inherits its listener's options, as on Linux (its connection was built
/// from them): getsockopt on it reports the listener's buffer sizes, TCP_NODELAY and
/// SO_LINGER, not the defaults.
#[test]
fn accepted_sockets_inherit_the_listeners_options() {
    let mut net = Net::new();
    let l = net.a.socket().unwrap();
    for o in [
        SockOpt::SndBuf(96 * 1024),
        SockOpt::RcvBuf(80 * 1024),
        SockOpt::NoDelay(true),
        SockOpt::Linger(Some(3)),
    ] {
        net.a.setsockopt(l, o).unwrap();
    }
    net.a.bind(l, addr(A, 81)).unwrap();
    net.a.listen(l, 4).unwrap();
    net.a.set_nonblocking(l, true).unwrap();
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    assert_eq!(net.b.connect(c, addr(A, 81)), Err(Errno::InProgress));
    let mut server = None;
    assert!(net.run_until(10_000, |n| {
        server = server.or_else(|| n.a.accept(l).ok().map(|(fd, _)| fd));
        server.is_some()
    }));
    let s = server.unwrap();
    for (name, want) in [
        (SockOptName::SndBuf, SockOpt::SndBuf(96 * 1024)),
        (SockOptName::RcvBuf, SockOpt::RcvBuf(80 * 1024)),
        (SockOptName::NoDelay, SockOpt::NoDelay(true)),
        (SockOptName::Linger, SockOpt::Linger(Some(3))),
    ] {
        assert_eq!(net.a.getsockopt(s, name), Ok(want), "{name:?}");
    }
    // A socket that was not accepted keeps the defaults.
    let fresh = net.a.socket().unwrap();
    assert_ne!(
        net.a.getsockopt(fresh, SockOptName::SndBuf),
        Ok(SockOpt::SndBuf(96 * 1024))
    );
}

/// A client that reuses its port while the server holds the old connection in TIME_WAIT
/// (the server closed first): the new SYN, with a newer timestamp, ends the TIME_WAIT
/// connection and the listener takes it (RFC 6191), instead of the old connection answering
/// with an ACK and the client's SYN going nowhere.
#[test]
fn syn_reusing_a_tuple_in_time_wait_starts_a_new_connection() {
    let mut net = Net::new();
    let l = listener(&mut net.a, 95);
    for round in 0..2u8 {
        let c = net.b.socket().unwrap();
        net.b.set_nonblocking(c, true).unwrap();
        net.b.bind(c, addr([0; 4], 40_123)).unwrap();
        assert_eq!(net.b.connect(c, addr(A, 95)), Err(Errno::InProgress));
        let mut s = None;
        assert!(
            net.run_until(100_000, |n| {
                if s.is_none() {
                    s = n.a.accept(l).ok().map(|(fd, _)| fd);
                }
                s.is_some()
            }),
            "round {round}: the server did not accept"
        );
        let s = s.unwrap();
        net.a.set_nonblocking(s, true).unwrap();
        assert_eq!(net.a.write(s, &[round; 5]), Ok(5));
        net.a.close(s).unwrap(); // the server closes first: TIME_WAIT on A
        let mut buf = [0u8; 16];
        let mut got = Vec::new();
        assert!(net.run_until(100_000, |n| match n.b.read(c, &mut buf) {
            Ok(0) => true,
            Ok(k) => {
                got.extend_from_slice(&buf[..k]);
                false
            }
            Err(_) => false,
        }));
        assert_eq!(got, vec![round; 5]);
        net.b.close(c).unwrap();
        assert!(net.run_until(100_000, |n| n.b.connections() == 0));
        assert_eq!(
            net.a.connections(),
            1,
            "A holds the old connection in TIME_WAIT"
        );
    }
    assert_eq!(net.a.stats().time_wait_reused, 1);
}

/// By default the most recently freed descriptor is handed out again first.
#[test]
fn descriptors_are_reused_most_recent_first_by_default() {
    let mut net = Net::new();
    let fds: Vec<_> = (0..4).map(|_| net.a.socket().unwrap()).collect();
    net.a.close(fds[1]).unwrap();
    net.a.close(fds[2]).unwrap();
    assert_eq!(net.a.socket().unwrap(), fds[2]);
    assert_eq!(net.a.socket().unwrap(), fds[1]);
    let fresh = net.a.socket().unwrap();
    assert!(fds.iter().all(|&f| f < fresh), "{fresh} vs {fds:?}");
}

/// In mTCP's order every number below `max_fds` is used once before any is reused, then
/// the one freed longest ago; the bound still holds.
#[test]
fn descriptors_cycle_in_mtcps_order() {
    let mut ca = cfg(A);
    ca.fd_reuse = hoststack::stack::FdReuse::Cycle;
    ca.max_fds = 6;
    let mut net = Net::with(ca, cfg(B));
    let fds: Vec<_> = (0..4).map(|_| net.a.socket().unwrap()).collect();
    net.a.close(fds[1]).unwrap();
    net.a.close(fds[2]).unwrap();
    // Two numbers never used yet come first, although two are free.
    let a = net.a.socket().unwrap();
    let b = net.a.socket().unwrap();
    assert!(
        !fds.contains(&a) && !fds.contains(&b) && a != b,
        "{a} {b} {fds:?}"
    );
    // The table is at max_fds: now the one freed longest ago, then the next.
    assert_eq!(net.a.socket().unwrap(), fds[1]);
    net.a.close(a).unwrap();
    assert_eq!(net.a.socket().unwrap(), fds[2]);
    assert_eq!(net.a.socket().unwrap(), a);
    assert_eq!(net.a.socket(), Err(Errno::MFile));
}

/// With no TIME_WAIT (mTCP's default `tcp_timewait = 0`) the side that closes first still
/// acknowledges the peer's FIN before it forgets the connection: the peer leaves LAST_ACK
/// at once, without retransmitting its FIN or meeting a reset.
#[test]
fn zero_time_wait_still_acknowledges_the_last_fin() {
    let (mut ca, mut cb) = (cfg(A), cfg(B));
    ca.tcp.time_wait_ns = 0;
    cb.tcp.time_wait_ns = 0;
    let mut net = Net::with(ca, cb);
    let (c, s) = connected(&mut net, 93);
    net.a.close(s).unwrap();
    let mut b = [0u8; 16];
    assert!(net.run_until(10_000, |n| n.b.read(c, &mut b) == Ok(0)));
    net.b.close(c).unwrap();
    assert!(net.run_until(10_000, |n| n.a.connections() == 0 && n.b.connections() == 0));
    let tb = net.b.tcp_totals();
    assert_eq!(tb.retransmits, 0, "{tb:?}");
    assert_eq!(net.a.stats().rst_sent, 0);
    assert_eq!(net.b.stats().rst_sent, 0);
}

/// The listen hook hears every listener's port once, when it starts listening (an
/// implicit bind's port too; a second listen on the same socket only changes its backlog);
/// a flow map that gives a port to no core keeps `connect` off it.
#[test]
fn the_listen_hook_hears_each_listening_port_and_the_flow_map_keeps_connects_off_them() {
    use std::sync::{Arc, Mutex};
    let heard = Arc::new(Mutex::new(Vec::new()));
    let mut ca = cfg(A);
    let h = heard.clone();
    ca.on_listen = Some(Arc::new(move |p| h.lock().unwrap().push(p)));
    // Connections from B may use only ports the map gives B's core (0): even ones but
    // 40_000, as a NIC that steers by port would for a port someone listens on.
    let mut cb = cfg(B);
    cb.ephemeral = (39_998, 40_003);
    cb.flow_core = Some(Arc::new(|ep: &hoststack::tcp::tcb::Endpoints| {
        if ep.local_port == 40_000 || ep.local_port % 2 == 1 {
            usize::MAX
        } else {
            0
        }
    }));
    let mut net = Net::with(ca, cb);
    let l = net.a.socket().unwrap();
    net.a.bind(l, addr(A, 40_000)).unwrap();
    net.a.listen(l, 4).unwrap();
    net.a.listen(l, 8).unwrap();
    let l3 = net.a.socket().unwrap();
    net.a.listen(l3, 4).unwrap();
    let implicit = net.a.getsockname(l3).unwrap().port();
    assert_eq!(*heard.lock().unwrap(), vec![40_000, implicit]);
    // B's connects take 39_998 and 40_002, then there is no port left.
    let mut ports = Vec::new();
    for _ in 0..3 {
        let c = net.b.socket().unwrap();
        net.b.set_nonblocking(c, true).unwrap();
        match net.b.connect(c, addr(A, 40_000)) {
            Ok(()) | Err(Errno::InProgress) => ports.push(net.b.getsockname(c).unwrap().port()),
            Err(e) => assert_eq!(e, Errno::AddrNotAvail),
        }
    }
    ports.sort();
    assert_eq!(ports, vec![39_998, 40_002]);
}

/// With a flow map, `bind` to port 0 leaves the choice to `connect` (Linux's
/// `IP_BIND_ADDRESS_NO_PORT`): the port then is one the map gives this core, where a port
/// picked at `bind` could belong to another core's queue. `listen` after such a bind picks
/// any free port; without a flow map `bind` picks at once, as Linux does.
#[test]
fn bind_to_port_zero_under_a_flow_map_picks_the_port_at_connect_among_this_cores() {
    use std::sync::Arc;
    let mut cb = cfg(B);
    cb.ephemeral = (40_000, 40_009);
    // Only 40_007 reaches B's core (0).
    cb.flow_core = Some(Arc::new(
        |ep: &hoststack::tcp::tcb::Endpoints| {
            if ep.local_port == 40_007 {
                0
            } else {
                1
            }
        },
    ));
    let mut net = Net::with(cfg(A), cb);
    let l = listener(&mut net.a, 80);
    let c = net.b.socket().unwrap();
    net.b.set_nonblocking(c, true).unwrap();
    net.b
        .bind(c, std::net::SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .unwrap();
    assert_eq!(net.b.getsockname(c).unwrap().port(), 0);
    match net.b.connect(c, addr(A, 80)) {
        Ok(()) | Err(Errno::InProgress) => {}
        Err(e) => panic!("connect: {e:?}"),
    }
    assert_eq!(net.b.getsockname(c).unwrap().port(), 40_007);
    let mut accepted = None;
    assert!(net.run_until(10_000, |n| {
        if accepted.is_none() {
            accepted = n.a.accept(l).ok();
        }
        accepted.is_some()
    }));
    let (a_fd, peer) = accepted.unwrap();
    assert_eq!(peer.port(), 40_007);
    net.a.set_nonblocking(a_fd, true).unwrap();
    assert_eq!(net.b.write(c, b"hi"), Ok(2));
    let mut buf = [0u8; 8];
    let mut got = 0;
    assert!(net.run_until(10_000, |n| {
        if let Ok(k) = n.a.read(a_fd, &mut buf) {
            got += k;
        }
        got == 2
    }));
    // A second such socket finds 40_007 taken for that remote: no port is left.
    let c2 = net.b.socket().unwrap();
    net.b.set_nonblocking(c2, true).unwrap();
    net.b
        .bind(c2, std::net::SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .unwrap();
    assert_eq!(net.b.connect(c2, addr(A, 80)), Err(Errno::AddrNotAvail));
    // bind(0) then listen: a real port, reported after listen.
    let l2 = net.b.socket().unwrap();
    net.b
        .bind(l2, std::net::SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .unwrap();
    net.b.listen(l2, 4).unwrap();
    let p = net.b.getsockname(l2).unwrap().port();
    assert!((40_000..=40_009).contains(&p) && p != 40_007, "{p}");
    net.b.close(l2).unwrap();
    // No flow map: bind(0) picks at once.
    let s = net.a.socket().unwrap();
    net.a
        .bind(s, std::net::SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .unwrap();
    assert_ne!(net.a.getsockname(s).unwrap().port(), 0);
}
