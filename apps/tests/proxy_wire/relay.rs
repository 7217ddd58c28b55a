//! What the proxy relays and splices: bodies of several sizes, keep-alive, X-Forwarded-For, pipelined and framed requests.

use super::*;

fn sizes_and_keep_alive(splice: bool) {
    let mut w = World::new(config(&[8080, 8081], splice), &[8080, 8081]);
    let sizes = [0usize, 1, 100_000, 1_000_000];
    // One keep-alive connection with every size, and one connection per size.
    w.clients.push(Client::new(
        &mut w.pair.a.host,
        sizes.iter().map(|s| get(&format!("/{s}"))).collect(),
    ));
    for s in sizes {
        w.clients.push(Client::new(
            &mut w.pair.a.host,
            vec![get_close(&format!("/{s}"))],
        ));
    }
    w.run();
    let st = w.proxy.stats();
    for c in &w.clients {
        let rs = responses(&c.got);
        assert_eq!(rs.len(), c.requests.len(), "{st}");
        // Tunnel mode: every response of one connection comes from one backend.
        let port = |h: &str| -> u16 {
            h.lines()
                .find_map(|l| l.strip_prefix("X-Backend: "))
                .and_then(|p| p.parse().ok())
                .expect("X-Backend")
        };
        let first = port(&rs[0].1);
        for ((status, head, body), req) in rs.iter().zip(&c.requests) {
            assert_eq!(*status, 200);
            assert_eq!(port(head), first, "keep-alive went to another backend");
            let size: usize = String::from_utf8_lossy(req)
                .split_whitespace()
                .nth(1)
                .unwrap()
                .trim_start_matches('/')
                .parse()
                .unwrap();
            check_body(body, size, first);
        }
    }
    // Both backends took connections (round robin). Every head, the keep-alive
    // connection's later ones too, gained X-Forwarded-For.
    assert!(w.backends.iter().all(|b| !b.heads.is_empty()), "{st}");
    let heads: Vec<&String> = w.backends.iter().flat_map(|b| &b.heads).collect();
    let xff = heads
        .iter()
        .filter(|h| h.contains("\r\nX-Forwarded-For: 10.0.0.1\r\n"))
        .count();
    assert_eq!(heads.len(), 8, "{st}");
    assert_eq!(xff, 8, "{heads:?}");
    assert_eq!(st.requests, 8, "{st}");
    assert_eq!(st.errors.len(), 0, "{st}");
    // The close clients' connections ended after their response.
    for c in &w.clients[1..] {
        assert!(c.eof && c.err.is_none(), "{:?} {st}", c.err);
    }
    assert_eq!(
        st.relayed, 0,
        "http mode relays per exchange, not as a tunnel: {st}"
    );
    // Every exchange ended on the host or on the NIC.
    assert_eq!(st.exchanges + st.spliced, 8, "{st}");
    if splice {
        // The close exchanges whose body was still to come when the response head was
        // in went to the NIC: the 100 kB and 1 MB ones (the small bodies came with their
        // head). The keep-alive connection stayed on the host.
        assert_eq!(st.spliced, 2, "{st}");
        assert_eq!(st.splice_refused, 0, "{st}");
        assert_eq!(st.closes_honoured, 2, "{st}");
    } else {
        assert_eq!(st.spliced + st.splice_refused, 0, "{st}");
        assert_eq!(st.closes_honoured, 4, "{st}");
    }
}

#[test]
fn proxy_wire_relays_bodies_and_keep_alive() {
    sizes_and_keep_alive(false);
}

#[test]
fn proxy_wire_splice_mode_serves_the_same() {
    sizes_and_keep_alive(true);
}

#[test]
fn proxy_wire_pipelined_requests_are_each_checked() {
    // One client sends three requests at once: the second and third carry a forged
    // X-Forwarded-For, the third both Transfer-Encoding and Content-Length (the classic
    // smuggling pair, RFC 9112 §6.3 (3)) with a hidden request in its body.
    for splice in [false, true] {
        let mut w = World::new(config(&[8080], splice), &[8080]);
        let pipeline = [
            get("/10"),
            b"GET /20 HTTP/1.1\r\nHost: test\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n".to_vec(),
            b"POST /30 HTTP/1.1\r\nHost: test\r\nX-Forwarded-For: 6.6.6.6\r\n\
              Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n\
              0\r\n\r\nGET /40 HTTP/1.1\r\nHost: test\r\n\r\n"
                .to_vec(),
        ]
        .concat();
        let mut c = Client::new(&mut w.pair.a.host, vec![pipeline]);
        c.want = 3;
        w.clients.push(c);
        w.run();
        let st = w.proxy.stats();
        let rs = responses(&w.clients[0].got);
        let statuses: Vec<u16> = rs.iter().map(|r| r.0).collect();
        assert_eq!(statuses, [200, 200, 400], "{st}");
        check_body(&rs[0].2, 10, 8080);
        check_body(&rs[1].2, 20, 8080);
        assert!(w.clients[0].eof, "the connection ends after the 400");
        let heads = &w.backends[0].heads;
        assert_eq!(
            heads.len(),
            2,
            "the smuggling request reached the backend: {heads:?}"
        );
        for h in heads {
            assert!(h.contains("\r\nX-Forwarded-For: 10.0.0.1\r\n"), "{h}");
            assert!(
                !h.contains("6.6.6.6"),
                "a forged X-Forwarded-For went through: {h}"
            );
        }
        assert_eq!(st.errors_of(400), 1, "{st}");
        assert_eq!(st.requests, 2, "{st}");
    }
}

#[test]
fn proxy_wire_request_bodies_are_framed() {
    // A POST whose body comes in two writes, then a GET on the same connection: the body
    // goes through whole, and the GET after it is parsed (it gains X-Forwarded-For).
    let mut w = World::new(config(&[8080], true), &[8080]);
    let body = vec![b'b'; 30_000];
    let mut post = b"POST /3 HTTP/1.1\r\nHost: test\r\nContent-Length: 30000\r\n\r\n".to_vec();
    post.extend_from_slice(&body[..100]);
    let mut c = Client::new(
        &mut w.pair.a.host,
        vec![post, body[100..].to_vec(), get_close("/5")],
    );
    // The rest of the body goes without waiting for a response.
    c.want = 2;
    c.no_wait = true;
    w.clients.push(c);
    w.run();
    let st = w.proxy.stats();
    let rs = responses(&w.clients[0].got);
    assert_eq!(rs.len(), 2, "{st}");
    check_body(&rs[0].2, 3, 8080);
    check_body(&rs[1].2, 5, 8080);
    let heads = &w.backends[0].heads;
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(
        heads
            .iter()
            .all(|h| h.contains("X-Forwarded-For: 10.0.0.1")),
        "{heads:?}"
    );
    assert_eq!(w.backends[0].bodies, body);
    assert_eq!(st.requests, 2, "{st}");
}

#[test]
fn proxy_wire_append_rule_keeps_the_chain() {
    let mut cfg = config(&[8080], false);
    cfg.add_header_rule = apps::proxy::HeaderRule::Append;
    let mut w = World::new(cfg, &[8080]);
    let req = b"GET /1 HTTP/1.1\r\nHost: test\r\nX-Forwarded-For: 192.0.2.9\r\n\r\n".to_vec();
    w.clients
        .push(Client::new(&mut w.pair.a.host, vec![get("/1"), req]));
    w.run();
    let heads = &w.backends[0].heads;
    assert_eq!(heads.len(), 2);
    assert!(
        heads[0].contains("\r\nX-Forwarded-For: 10.0.0.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].contains("\r\nX-Forwarded-For: 192.0.2.9, 10.0.0.1\r\n"),
        "{}",
        heads[1]
    );
}
