//! The L7 proxy (`apps::proxy::Proxy`) on the in-memory wire, in virtual time: node B runs
//! the proxy; node A runs the clients and small HTTP backends on the same host stack.
//! Requests with bodies of several sizes go through intact, a keep-alive connection's
//! requests reach the same backend, every request head gains X-Forwarded-For (a forged one
//! is replaced), a pipelined smuggling attempt is refused, a refusing backend is skipped,
//! and malformed requests, missing, silent and early-closing backends are answered with
//! 400, 501, 502 and 504. A lost SYN or a dead first backend is survived by the connect
//! retries. Splicing: the last exchange of a connection (`Connection: close`) is spliced
//! once its response head is in.

use std::net::{Ipv4Addr, SocketAddrV4};

use apps::node::{pair_specs, wire_pair, Pair, A_IP, B_IP};
use apps::proxy::{Policy, Proxy, ProxyConfig, ProxyStats};
use dataplane::port::wire::{DropNth, Impairments};
use hoststack::frame::HostLink;
use hoststack::stack::{Shutdown, SockOpt};
use hoststack::{Context, Errno, Fd};

const PROXY_PORT: u16 = 80;

/// A backend connection: socket, bytes read, response bytes still to send, close when
/// sent, request body bytes still to come.
type Conn = (Fd, Vec<u8>, Vec<u8>, bool, usize);

/// A tiny HTTP/1.1 backend on node A: answers `GET /N` with N bytes of a pattern (byte i is
/// `(i * 7 + port) as u8`) and an `X-Backend` header naming its port; records each head.
struct Backend {
    listener: Fd,
    port: u16,
    conns: Vec<Conn>,
    /// The request body bytes received, all connections in turn.
    bodies: Vec<u8>,
    heads: Vec<String>,
    /// After a request, write part of the response, then reset the connection (SO_LINGER
    /// 0 + close) [`RESET_STEPS`] steps later.
    reset: bool,
    /// Connections to reset and the steps until then.
    resets: Vec<(Fd, u32)>,
    /// Read requests, never answer.
    silent: bool,
    /// After a request head, close (FIN) without answering.
    close_early: bool,
}

/// Backend steps between a resetting backend's last write and its reset.
const RESET_STEPS: u32 = 50;

fn body_byte(i: usize, port: u16) -> u8 {
    (i.wrapping_mul(7) as u8).wrapping_add(port as u8)
}

impl Backend {
    fn new<L: HostLink>(ctx: &mut Context<L>, port: u16) -> Backend {
        let l = ctx.socket().unwrap();
        ctx.set_nonblocking(l, true).unwrap();
        ctx.bind(l, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port))
            .unwrap();
        ctx.listen(l, 64).unwrap();
        Backend {
            listener: l,
            port,
            conns: Vec::new(),
            heads: Vec::new(),
            bodies: Vec::new(),
            reset: false,
            resets: Vec::new(),
            silent: false,
            close_early: false,
        }
    }

    fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        self.resets.retain_mut(|(fd, steps)| {
            *steps -= 1;
            if *steps == 0 {
                let _ = ctx.setsockopt(*fd, SockOpt::Linger(Some(0)));
                let _ = ctx.close(*fd);
            }
            *steps > 0
        });
        while let Ok((fd, _)) = ctx.accept(self.listener) {
            ctx.set_nonblocking(fd, true).unwrap();
            self.conns.push((fd, Vec::new(), Vec::new(), false, 0));
        }
        let mut buf = [0u8; 4096];
        let (port, reset) = (self.port, self.reset);
        let (silent, close_early) = (self.silent, self.close_early);
        self.conns
            .retain_mut(|(fd, inbuf, pending, close_after, body_left)| loop {
                match ctx.read(*fd, &mut buf) {
                    Ok(0) => {
                        // End of the requests: what is still to send goes before the FIN.
                        let _ = ctx.write(*fd, pending);
                        let _ = ctx.close(*fd);
                        return false;
                    }
                    Ok(n) => {
                        inbuf.extend_from_slice(&buf[..n]);
                        loop {
                            // The body of the last request (Content-Length only) is kept.
                            let k = (*body_left).min(inbuf.len());
                            self.bodies.extend(inbuf.drain(..k));
                            *body_left -= k;
                            if *body_left > 0 {
                                break;
                            }
                            let Some(end) = inbuf.windows(4).position(|w| w == b"\r\n\r\n") else {
                                break;
                            };
                            let head = String::from_utf8_lossy(&inbuf[..end + 4]).into_owned();
                            inbuf.drain(..end + 4);
                            *body_left = content_length(&head);
                            let size: usize = head
                                .split_whitespace()
                                .nth(1)
                                .and_then(|t| t.trim_start_matches('/').parse().ok())
                                .unwrap_or(0);
                            if silent {
                                self.heads.push(head);
                                continue;
                            }
                            // RFC 9112 §9.6: close after the response to a close request.
                            *close_after |= head.to_ascii_lowercase().contains("connection: close");
                            self.heads.push(head);
                            if close_early {
                                let _ = ctx.close(*fd);
                                return false;
                            }
                            let mut resp = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nX-Backend: {port}\r\n\r\n"
                        )
                            .into_bytes();
                            resp.extend((0..size).map(|i| body_byte(i, port)));
                            // Large bodies fit the send buffer only in part: the rest waits in
                            // `pending`.
                            pending.extend(resp);
                            if reset {
                                // The reset follows a little later, so that what was written
                                // is read before it (a RST discards unread data).
                                let _ = ctx.write(*fd, &pending[..pending.len() / 2]);
                                self.resets.push((*fd, RESET_STEPS));
                                return false;
                            }
                        }
                    }
                    Err(Errno::Again) => {
                        while !pending.is_empty() {
                            match ctx.write(*fd, pending) {
                                Ok(n) => {
                                    pending.drain(..n);
                                }
                                Err(_) => break,
                            }
                        }
                        if *close_after && pending.is_empty() {
                            let _ = ctx.close(*fd);
                            return false;
                        }
                        return true;
                    }
                    Err(_) => {
                        let _ = ctx.close(*fd);
                        return false;
                    }
                }
            });
    }
}

/// A client connection on node A sending `requests` in turn and collecting the responses.
struct Client {
    fd: Fd,
    requests: Vec<Vec<u8>>,
    sent: usize,
    /// Bytes of `requests[sent]` already written.
    off: usize,
    got: Vec<u8>,
    eof: bool,
    /// The error a read returned, if one did.
    err: Option<Errno>,
    /// Shut the write side after the last request (half-close).
    shut_after: bool,
    /// Responses expected (one per request unless several requests go in one write).
    want: usize,
    /// Send every write at once, without waiting for responses.
    no_wait: bool,
}

impl Client {
    fn new<L: HostLink>(ctx: &mut Context<L>, requests: Vec<Vec<u8>>) -> Client {
        let fd = ctx.socket().unwrap();
        ctx.set_nonblocking(fd, true).unwrap();
        let _ = ctx.connect(fd, SocketAddrV4::new(B_IP.into(), PROXY_PORT));
        Client {
            fd,
            sent: 0,
            off: 0,
            got: Vec::new(),
            eof: false,
            err: None,
            shut_after: false,
            want: requests.len(),
            no_wait: false,
            requests,
        }
    }

    fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        // Send the next request once the previous response is complete.
        while self.sent < self.requests.len()
            && (self.no_wait || responses(&self.got).len() == self.sent)
        {
            let r = &self.requests[self.sent][self.off..];
            match ctx.write(self.fd, r) {
                Ok(n) if n == r.len() => {
                    self.sent += 1;
                    self.off = 0;
                    if self.shut_after && self.sent == self.requests.len() {
                        ctx.shutdown(self.fd, Shutdown::Write).unwrap();
                    }
                }
                Ok(n) => {
                    self.off += n;
                    break;
                }
                Err(_) => break,
            }
        }
        let mut buf = [0u8; 8192];
        loop {
            match ctx.read(self.fd, &mut buf) {
                Ok(0) => {
                    self.eof = true;
                    return;
                }
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(Errno::Again) => return,
                Err(e) => {
                    self.err = Some(e);
                    self.eof = true;
                    return;
                }
            }
        }
    }
}

/// The Content-Length of a message head (0 without one).
fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// The complete responses in `b`: (status, headers text, body).
fn responses(mut b: &[u8]) -> Vec<(u16, String, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&b[..end]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let len = content_length(&head);
        if b.len() < end + 4 + len {
            break;
        }
        out.push((status, head, b[end + 4..end + 4 + len].to_vec()));
        b = &b[end + 4 + len..];
    }
    out
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes()
}

fn get_close(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").into_bytes()
}

fn config(backends: &[u16], splice: bool) -> ProxyConfig {
    ProxyConfig {
        listen: PROXY_PORT,
        backends: backends
            .iter()
            .map(|&p| SocketAddrV4::new(A_IP.into(), p))
            .collect(),
        policy: Policy::RoundRobin,
        add_header: Some("X-Forwarded-For".into()),
        splice,
        ..ProxyConfig::default()
    }
}

struct World {
    pair: Pair,
    proxy: Proxy,
    backends: Vec<Backend>,
    clients: Vec<Client>,
}

impl World {
    fn new(cfg: ProxyConfig, listening: &[u16]) -> World {
        World::with_loss(cfg, listening, Impairments::default())
    }

    /// A world whose frames from the proxy's node to the other go through `ba`.
    fn with_loss(cfg: ProxyConfig, listening: &[u16], ba: Impairments) -> World {
        let (a, b) = pair_specs();
        let mut pair = wire_pair(a, b, Impairments::default(), ba);
        let proxy = Proxy::new(&mut pair.b.host, cfg).unwrap();
        let backends = listening
            .iter()
            .map(|&p| Backend::new(&mut pair.a.host, p))
            .collect();
        World {
            pair,
            proxy,
            backends,
            clients: Vec::new(),
        }
    }

    /// Runs until every client has all its responses (or EOF), bounded.
    fn run(&mut self) {
        let World {
            pair,
            proxy,
            backends,
            clients,
        } = self;
        let ok = pair.run_until(2_000_000, 20_000, |p| {
            let now = p.clock.now_ns();
            proxy.step(&mut p.b.host, now);
            for b in backends.iter_mut() {
                b.step(&mut p.a.host);
            }
            for c in clients.iter_mut() {
                c.step(&mut p.a.host);
            }
            clients
                .iter()
                .all(|c| c.eof || responses(&c.got).len() == c.want)
        });
        assert!(ok, "clients did not finish: {}", proxy.stats());
    }
}

/// Runs one client with request `req` in `w`: the proxy's counters and the responses.
fn one_client(w: &mut World, req: Vec<u8>) -> (ProxyStats, Vec<(u16, String, Vec<u8>)>) {
    w.clients.push(Client::new(&mut w.pair.a.host, vec![req]));
    w.run();
    let rs = responses(&w.clients.last().expect("pushed").got);
    (w.proxy.stats(), rs)
}

fn check_body(body: &[u8], size: usize, port: u16) {
    assert_eq!(body.len(), size);
    if let Some(i) = (0..size).find(|&i| body[i] != body_byte(i, port)) {
        panic!("body of {size} bytes from backend {port} differs at {i}");
    }
}

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
