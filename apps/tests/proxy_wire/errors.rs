//! What the proxy answers when clients or backends misbehave (400, 408, 431, 501, 502, 504), and the connect retries that survive a lost SYN or a dead backend.

use super::*;

#[test]
fn proxy_wire_errors_and_failover() {
    // 8082 refuses (nothing listens): the proxy marks it down and uses 8080.
    let mut w = World::new(config(&[8082, 8080], false), &[8080]);
    for _ in 0..3 {
        w.clients
            .push(Client::new(&mut w.pair.a.host, vec![get("/1000")]));
    }
    w.clients.push(Client::new(
        &mut w.pair.a.host,
        vec![b"THIS IS NOT HTTP\r\n\r\n".to_vec()],
    ));
    w.clients.push(Client::new(
        &mut w.pair.a.host,
        vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()],
    ));
    w.run();
    let st = w.proxy.stats();
    for c in &w.clients[..3] {
        let rs = responses(&c.got);
        assert_eq!(rs.len(), 1, "{st}");
        assert_eq!(rs[0].0, 200, "{st}");
        check_body(&rs[0].2, 1000, 8080);
    }
    for c in &w.clients[3..] {
        let rs = responses(&c.got);
        assert_eq!(rs[0].0, 400, "{st}");
        assert!(rs[0].1.contains("Connection: close"));
    }
    // Connections that picked 8082 before its first refusal was known are refused too.
    assert!(st.backends[0].refused >= 1, "{st}");
    assert_eq!(st.backends[0].marked_down, 1, "{st}");
    assert_eq!(st.backends[1].requests, 3, "{st}");
    assert_eq!(st.errors_of(400), 2, "{st}");

    // No backend listens: 502.
    let mut w = World::new(config(&[8082, 8083], false), &[]);
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![get("/1")]));
    w.run();
    let rs = responses(&w.clients[0].got);
    let st = w.proxy.stats();
    assert_eq!(rs[0].0, 502, "{st}");
    assert_eq!(st.errors_of(502), 1, "{st}");
}

/// A client that sends nothing and one whose head stops half way both get 408 after
/// `request_timeout_ms`; the counters tell the two apart (no byte of a head arrived: the
/// request never reached the proxy's socket).
#[test]
fn proxy_wire_silent_and_cut_heads_are_408() {
    let mut cfg = config(&[8080], false);
    cfg.request_timeout_ms = 300;
    let mut w = World::new(cfg, &[8080]);
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![Vec::new()]));
    w.clients.push(Client::new(
        &mut w.pair.a.host,
        vec![b"GET / HTTP/1.1\r\nHo".to_vec()],
    ));
    w.run();
    let st = w.proxy.stats();
    for c in &w.clients {
        let rs = responses(&c.got);
        assert_eq!(rs.len(), 1, "{st}");
        assert_eq!(rs[0].0, 408, "{st}");
    }
    assert_eq!(st.errors_of(408), 2, "{st}");
    assert_eq!(st.head_timeouts_empty, 1, "{st}");
    assert!(
        st.to_string().contains("(408 with no byte of a head: 1)"),
        "{st}"
    );
}

#[test]
fn proxy_wire_head_too_large_is_431() {
    let mut cfg = config(&[8080], false);
    cfg.max_header_bytes = 1024;
    let mut w = World::new(cfg, &[8080]);
    let mut big = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    while big.len() < 3000 {
        big.extend_from_slice(b"X-Pad: 0123456789012345678901234567890123456789\r\n");
    }
    big.extend_from_slice(b"\r\n");
    w.clients.push(Client::new(&mut w.pair.a.host, vec![big]));
    w.run();
    let rs = responses(&w.clients[0].got);
    assert_eq!(rs[0].0, 431, "{}", w.proxy.stats());
}

#[test]
fn proxy_wire_half_close_and_reset_propagate() {
    // Half-close: the client shuts its write side after the request; the backend sees the
    // end of the requests, answers and closes; the client gets the whole response, then
    // the end of stream.
    let mut w = World::new(config(&[8080], false), &[8080]);
    let mut c = Client::new(&mut w.pair.a.host, vec![get("/5000")]);
    c.shut_after = true;
    w.clients.push(c);
    w.run();
    let c = &w.clients[0];
    let rs = responses(&c.got);
    assert_eq!(rs.len(), 1, "{}", w.proxy.stats());
    check_body(&rs[0].2, 5000, 8080);
    assert!(c.eof && c.err.is_none(), "{:?}", c.err);
    // Every connection is gone on both sides of the proxy (once TIME_WAIT is over).
    let ok = w
        .pair
        .run_until(2_000_000, 20_000, |p| p.b.host.connections() == 0);
    assert!(ok, "the proxy's connections did not close");
    assert_eq!(w.proxy.stats().active, 0);

    // Reset: the backend resets in the middle of a response; the proxy resets the client.
    let mut w = World::new(config(&[8080], false), &[8080]);
    w.backends[0].reset = true;
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![get("/200000")]));
    let World {
        pair,
        proxy,
        backends,
        clients,
    } = &mut w;
    let ok = pair.run_until(2_000_000, 20_000, |p| {
        let now = p.clock.now_ns();
        proxy.step(&mut p.b.host, now);
        backends[0].step(&mut p.a.host);
        clients[0].step(&mut p.a.host);
        clients[0].eof
    });
    assert!(ok, "{}", proxy.stats());
    assert_eq!(clients[0].err, Some(Errno::ConnReset), "{}", proxy.stats());
    assert!(responses(&clients[0].got).is_empty());
    assert_eq!(proxy.stats().relay_resets, 1, "{}", proxy.stats());
}

#[test]
fn proxy_wire_connect_timeout_is_504() {
    // 10.0.0.9 does not exist: its ARP goes unanswered and the connect never completes.
    let mut cfg = config(&[], false);
    cfg.backends = vec![SocketAddrV4::new([10, 0, 0, 9].into(), 8080)];
    cfg.connect_timeout_ms = 300;
    let mut w = World::new(cfg, &[]);
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![get("/1")]));
    let t0 = w.pair.clock.now_ns();
    w.run();
    let rs = responses(&w.clients[0].got);
    let st = w.proxy.stats();
    assert_eq!(rs[0].0, 504, "{st}");
    // Tried, retried until passive health took it down (three failures in a row).
    assert_eq!(st.backends[0].timeouts, 3, "{st}");
    assert_eq!(st.backends[0].marked_down, 1, "{st}");
    assert_eq!(st.connect_retries, 2, "{st}");
    let waited = w.pair.clock.now_ns() - t0;
    assert!(waited >= 900_000_000, "answered after {waited} ns");
}

/// The `i`-th TCP segment with only SYN set (a connect's first segment).
fn is_syn(f: &[u8]) -> bool {
    // Ethernet (14) + IPv4 without options (20): TCP flags at byte 13 of the TCP header.
    f.len() >= 54 && f[12..14] == [0x08, 0x00] && f[23] == 6 && f[14 + 20 + 13] == 0x02
}

#[test]
fn proxy_wire_silent_backend_is_504_within_the_response_timeout() {
    let mut cfg = config(&[8080], true);
    cfg.response_timeout_ms = 500;
    let mut w = World::new(cfg, &[8080]);
    w.backends[0].silent = true;
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![get_close("/1")]));
    // Fixed 1 ms steps (`run` jumps idle time to the stacks' timers, which do not know
    // the proxy's), until the client has its answer, for at most 3 s.
    let t0 = w.pair.clock.now_ns();
    let World {
        pair,
        proxy,
        backends,
        clients,
    } = &mut w;
    for _ in 0..3000 {
        let now = pair.clock.now_ns();
        proxy.step(&mut pair.b.host, now);
        backends[0].step(&mut pair.a.host);
        clients[0].step(&mut pair.a.host);
        if !responses(&clients[0].got).is_empty() {
            break;
        }
        pair.a.step();
        pair.b.step();
        pair.clock.advance(1_000_000);
    }
    let waited = w.pair.clock.now_ns() - t0;
    let st = w.proxy.stats();
    let rs = responses(&w.clients[0].got);
    assert_eq!(rs.len(), 1, "{st}");
    assert_eq!(rs[0].0, 504, "{st}");
    assert_eq!(w.backends[0].heads.len(), 1, "the request was forwarded");
    assert!(
        (500_000_000..550_000_000).contains(&waited),
        "answered after {waited} ns"
    );
    assert_eq!(st.backends[0].response_timeouts, 1, "{st}");
    assert_eq!(st.errors_of(504), 1, "{st}");
    assert_eq!(st.spliced, 0, "{st}");
}

#[test]
fn proxy_wire_backend_closing_before_its_response_is_502() {
    // Closed (FIN) after the head, and reset after the head: both 502.
    for reset in [false, true] {
        let mut w = World::new(config(&[8080], true), &[8080]);
        w.backends[0].close_early = !reset;
        w.backends[0].reset = reset;
        // A reset backend writes half of its response first: make that a part of the
        // head only (`GET /0`: a head of ~60 bytes, half of it written).
        let (st, rs) = one_client(&mut w, get("/0"));
        assert_eq!(rs.len(), 1, "reset {reset}: {st}");
        assert_eq!(rs[0].0, 502, "reset {reset}: {st}");
        assert!(rs[0].1.contains("Connection: close"));
        assert_eq!(st.backends[0].early_closes, 1, "reset {reset}: {st}");
        assert_eq!(st.errors_of(502), 1, "{st}");
    }
}

#[test]
fn proxy_wire_connect_survives_a_lost_syn() {
    // The proxy's first SYN to the backend is lost; the retransmission (1 s later, RFC
    // 6298 §2.1) still lands within the default connect timeout.
    let ba = Impairments {
        drop_nth: Some(DropNth {
            matches: is_syn,
            nth: 1,
        }),
        ..Impairments::default()
    };
    let mut w = World::with_loss(config(&[8080], false), &[8080], ba);
    let (st, rs) = one_client(&mut w, get("/100"));
    assert_eq!(rs.len(), 1, "{st}");
    assert_eq!(rs[0].0, 200, "{st}");
    check_body(&rs[0].2, 100, 8080);
    assert_eq!(
        w.pair.links[1].snapshot().lost,
        1,
        "the SYN was not dropped"
    );
}

#[test]
fn proxy_wire_dead_first_backend_is_redispatched() {
    // 10.0.0.9 does not answer (no ARP): one retry, which redispatch sends to 8080.
    let mut cfg = config(&[8080], false);
    cfg.backends
        .insert(0, SocketAddrV4::new([10, 0, 0, 9].into(), 8080));
    cfg.connect_timeout_ms = 300;
    cfg.retries = 1;
    let mut w = World::new(cfg, &[8080]);
    let (st, rs) = one_client(&mut w, get("/100"));
    assert_eq!(rs[0].0, 200, "{st}");
    check_body(&rs[0].2, 100, 8080);
    assert_eq!(st.backends[0].timeouts, 1, "{st}");
    assert_eq!((st.connect_retries, st.redispatches), (1, 1), "{st}");
    assert_eq!(st.backends[1].requests, 1, "{st}");
}

#[test]
fn proxy_wire_connect_is_refused_with_501() {
    let mut w = World::new(config(&[8080], false), &[8080]);
    w.clients.push(Client::new(
        &mut w.pair.a.host,
        vec![b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n".to_vec()],
    ));
    w.run();
    let rs = responses(&w.clients[0].got);
    assert_eq!(rs[0].0, 501, "{}", w.proxy.stats());
    assert!(w.backends[0].heads.is_empty());
}
