//! The L7 proxy (`apps::proxy::Proxy`) on the in-memory wire, in virtual time: node B runs
//! the proxy; node A runs the clients and small HTTP backends on the same host stack.
//! Requests with bodies of several sizes go through intact, a keep-alive connection's
//! requests reach the same backend, every request head gains X-Forwarded-For (a forged one
//! is replaced), a pipelined smuggling attempt is refused, a refusing backend is skipped,
//! and malformed requests, missing, silent and early-closing backends are answered with
//! 400, 501, 502 and 504. A lost SYN or a dead first backend is survived by the connect
//! retries. Splicing: the last exchange of a connection (`Connection: close`) is spliced
//! once its response head is in.

mod errors;
mod relay;

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
