//! The L7 proxy itself: a state machine per client connection, stepped from the caller's
//! poll loop over a host [`Context`] (run to completion, AccelTCP §5.2), like AccelTCP's
//! `epproxy` (§6.1.2): read the request head, choose a backend, connect, forward the head.
//!
//! What follows depends on the mode ([`ProxyMode`]):
//!
//! - `http` (the default): every request of a keep-alive connection is parsed, checked
//!   (framing, request smuggling) and rewritten (X-Forwarded-For) before it reaches the
//!   backend; its body is relayed on the host up to its framed end, then the response head
//!   is read: none in `response_timeout_ms` is a 504, a backend that closes or resets
//!   before it a 502. The pair is spliced on the NIC (`nsplice`, AccelTCP §4.3, §5.1) only
//!   for the connection's last exchange (the client's or the backend's `Connection:
//!   close`, or a response that runs until close), once the response head has arrived and
//!   the request is complete: then the NIC carries only that response's body and no later
//!   request can pass unparsed (the backend was told the connection closes, RFC 9112
//!   §9.6). The trade-off against epproxy, which splices right after the first head: a
//!   keep-alive connection that never says close is relayed on the host for all its
//!   requests, and short connections pay one host round trip for the response head
//!   before the splice; in exchange every request is checked and the proxy can answer
//!   502/504 for every request it forwarded.
//! - `tunnel`: epproxy's behaviour, chosen by name: after the first head the two
//!   connections are spliced (or relayed on the host) as an opaque tunnel, later requests
//!   go to the same backend unparsed (HAProxy's tunnel mode).
//!
//! Backend connects are retried as HAProxy does (`retries`, the last one to another
//! backend with `redispatch`). Errors the proxy answers itself (400, 408, 431, 501, 502,
//! 504, 505) are complete responses with `Connection: close`, after which the proxy
//! half-closes, discards what the client still sends for a short while (RFC 9112 §9.6: so
//! that the client reads the response before any reset) and closes.
//!
//! The same [`Proxy`] serves `nicemu proxy` on DPDK ports and the in-memory benchmarks: build
//! it with [`Proxy::new`] on a context, then call [`Proxy::step`] in the loop that runs the
//! context.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};

use hoststack::frame::HostLink;
use hoststack::stack::{
    EpollEvent, EpollOp, Shutdown, SockOpt, SpliceEnd, SpliceReport, EPOLLIN, EPOLLOUT,
};
use hoststack::{Context, Errno, Fd};

use super::balance::Balancer;
use super::config::{ProxyConfig, ProxyMode};
use super::exchange::{ExStep, Exchange};
use super::http::error_response;
use super::relay::{pump, Pipe, PumpEnd};
pub use super::stats::ProxyStats;

pub(super) const MS: u64 = 1_000_000;
/// Epoll data of the listener.
const LISTENER: u64 = u64::MAX;
/// How long the proxy keeps discarding what a client sends after an error response.
pub(super) const LINGER_NS: u64 = 2_000 * MS;
/// The most bytes discarded from such a client before closing anyway.
const LINGER_BYTES: usize = 1 << 20;
/// Connections accepted per step at most (the rest wait for the next step).
const ACCEPT_BURST: usize = 64;

/// Closure reports of spliced pairs, filled by the `nsplice` callbacks (which run inside
/// the stack's poll) and drained by [`Proxy::step`]: (backend index, report).
type SpliceInbox = Arc<Mutex<Vec<(usize, SpliceReport)>>>;

pub(super) enum State {
    /// Reading the request head.
    Head { buf: Vec<u8>, scanned: usize },
    /// Connecting to backend `backend` for the exchange `ex` (its head is rewritten);
    /// `tried`: the backends tried (bit i for backend i); `attempts`: failed attempts.
    Connecting {
        ex: Box<Exchange>,
        uri: Vec<u8>,
        tried: u64,
        attempts: u32,
    },
    /// `tunnel` mode: writing `out[off..]` to the backend.
    Forwarding { out: Vec<u8>, off: usize },
    /// `http` mode: an exchange under way on the host.
    Exchange(Box<Exchange>),
    /// Relaying on the host.
    Relay { c2s: Pipe, s2c: Pipe },
    /// An error response was sent and the write side shut: discarding what the client
    /// still sends until it closes or the deadline.
    Closing { discarded: usize },
}

pub(super) struct Session {
    gen: u64,
    pub(super) client: Fd,
    pub(super) peer: SocketAddrV4,
    pub(super) server: Option<Fd>,
    /// The backend whose active count this session holds.
    pub(super) backend: Option<usize>,
    pub(super) state: State,
    /// The current state's deadline (0: none).
    deadline: u64,
    creg: Option<u32>,
    pub(super) sreg: Option<u32>,
}

/// An HTTP/1.1 load balancer over a host stack. See the module documentation.
pub struct Proxy {
    pub(super) cfg: ProxyConfig,
    listener: Fd,
    ep: Fd,
    events: Vec<EpollEvent>,
    pub(super) sessions: Vec<Option<Session>>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<(u64, usize, u64)>>,
    next_gen: u64,
    pub(super) balancer: Balancer,
    pub(super) stats: ProxyStats,
    inbox: SpliceInbox,
    pub(super) scratch: Vec<u8>,
    listening: bool,
}

fn ev(events: u32, data: u64) -> EpollEvent {
    EpollEvent { events, data }
}

impl Proxy {
    /// A proxy listening on `cfg.listen` of `ctx`'s address.
    pub fn new<L: HostLink>(ctx: &mut Context<L>, cfg: ProxyConfig) -> Result<Proxy, Errno> {
        let ep = ctx.epoll_create()?;
        let listener =
            crate::listener::listen(ctx, ep, cfg.listen, 4096, Default::default(), LISTENER)?;
        let balancer = Balancer::new(&cfg.backends, cfg.policy, cfg.down_ms * MS);
        Ok(Proxy {
            listener,
            ep,
            events: vec![EpollEvent::default(); 256],
            sessions: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            next_gen: 1,
            balancer,
            stats: ProxyStats::default(),
            inbox: Arc::new(Mutex::new(Vec::new())),
            scratch: vec![0; cfg.max_header_bytes],
            listening: true,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }

    /// A snapshot of the counters (with the backends').
    pub fn stats(&self) -> ProxyStats {
        let mut s = self.stats.clone();
        s.backends = self.balancer.backends().to_vec();
        s
    }

    /// Spliced pairs not yet reported closed.
    pub fn splices_open(&self) -> u64 {
        self.stats.spliced.saturating_sub(self.stats.splice_closed)
    }

    /// One round at `now` (ns, the context's clock): `epoll_wait` (which runs the stack),
    /// accept, advance every connection with an event, fire the proxy's timeouts, and
    /// account the closure reports of spliced pairs. Returns the work done (events and
    /// timeouts).
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>, now: u64) -> usize {
        let n = ctx.epoll_wait(self.ep, &mut self.events, 0).unwrap_or(0);
        for i in 0..n {
            let e = self.events[i];
            if e.data == LISTENER {
                self.accept(ctx, now);
            } else {
                self.advance(ctx, (e.data >> 1) as usize, now);
            }
        }
        let fired = self.fire_timers(ctx, now);
        self.drain_reports();
        if !self.listening && (self.stats.active as usize) < self.cfg.max_clients {
            self.listening = true;
            let _ = ctx.epoll_ctl(self.ep, EpollOp::Mod, self.listener, ev(EPOLLIN, LISTENER));
            self.accept(ctx, now);
        }
        n + fired
    }

    /// Closes the listener and every connection the proxy holds (spliced pairs belong to
    /// the stack and are left alone).
    pub fn close<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        for sid in 0..self.sessions.len() {
            if self.sessions[sid].is_some() {
                self.finish(ctx, sid, true);
            }
        }
        let _ = ctx.close(self.listener);
        let _ = ctx.close(self.ep);
        self.drain_reports();
    }

    fn accept<L: HostLink>(&mut self, ctx: &mut Context<L>, now: u64) {
        for _ in 0..ACCEPT_BURST {
            if self.stats.active as usize >= self.cfg.max_clients {
                // Stop listening for readiness until a connection ends; the rest wait in the
                // backlog.
                self.listening = false;
                let _ = ctx.epoll_ctl(self.ep, EpollOp::Mod, self.listener, ev(0, LISTENER));
                return;
            }
            let Ok((fd, peer)) = ctx.accept(self.listener) else {
                return;
            };
            self.stats.accepted += 1;
            self.stats.active += 1;
            let _ = ctx.set_nonblocking(fd, true);
            let _ = ctx.setsockopt(fd, SockOpt::NoDelay(true));
            let gen = self.next_gen;
            self.next_gen += 1;
            let s = Session {
                gen,
                client: fd,
                peer,
                server: None,
                backend: None,
                state: State::Head {
                    buf: Vec::new(),
                    scanned: 0,
                },
                deadline: 0,
                creg: None,
                sreg: None,
            };
            let sid = match self.free.pop() {
                Some(i) => {
                    self.sessions[i] = Some(s);
                    i
                }
                None => {
                    self.sessions.push(Some(s));
                    self.sessions.len() - 1
                }
            };
            self.set_deadline(sid, now + self.cfg.request_timeout_ms * MS);
            // Data may have come with the handshake: look at once.
            self.advance(ctx, sid, now);
        }
    }

    pub(super) fn set_deadline(&mut self, sid: usize, at: u64) {
        if let Some(s) = self.sessions[sid].as_mut() {
            s.deadline = at;
            if at != 0 {
                self.timers.push(Reverse((at, sid, s.gen)));
            }
        }
    }

    fn fire_timers<L: HostLink>(&mut self, ctx: &mut Context<L>, now: u64) -> usize {
        let mut fired = 0;
        while let Some(&Reverse((at, sid, gen))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(s) = self.sessions.get(sid).and_then(|s| s.as_ref()) else {
                continue;
            };
            if s.gen != gen || s.deadline != at {
                continue; // stale: the session moved on or was replaced
            }
            fired += 1;
            match &s.state {
                // An idle keep-alive connection just ends (RFC 9112 §9.5).
                State::Head { buf, .. } if buf.is_empty() && s.server.is_some() => {
                    self.finish(ctx, sid, false)
                }
                State::Head { buf, .. } => {
                    if buf.is_empty() {
                        self.stats.head_timeouts_empty += 1;
                    }
                    self.respond(ctx, sid, 408, "no complete request head in time", now)
                }
                State::Connecting { .. } => self.connect_failed(ctx, sid, now, true),
                State::Exchange(ex) if ex.resp.is_none() => {
                    if let Some(b) = s.backend {
                        self.balancer.response_timed_out(b, now);
                    }
                    self.respond(ctx, sid, 504, "the backend did not answer in time", now)
                }
                _ => self.finish(ctx, sid, false),
            }
        }
        fired
    }

    fn drain_reports(&mut self) {
        let reports = match self.inbox.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => return,
        };
        for (backend, r) in reports {
            self.balancer.release(backend);
            let st = &mut self.stats;
            st.splice_closed += 1;
            st.splice_on_nic += u64::from(r.on_nic);
            st.splice_reset += u64::from(!matches!(r.end, SpliceEnd::Fin));
            st.splice_bytes_c2s += r.bytes_c2s;
            st.splice_bytes_s2c += r.bytes_s2c;
        }
    }

    /// Registers `fd` of session `sid` (`server` side or not) for `want`, changing the
    /// registration only when it differs.
    pub(super) fn interest<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        server: bool,
        want: u32,
    ) {
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        let (fd, reg) = if server {
            match s.server {
                Some(fd) => (fd, &mut s.sreg),
                None => return,
            }
        } else {
            (s.client, &mut s.creg)
        };
        if *reg == Some(want) {
            return;
        }
        let op = if reg.is_some() {
            EpollOp::Mod
        } else {
            EpollOp::Add
        };
        let data = ((sid as u64) << 1) | u64::from(server);
        if ctx.epoll_ctl(self.ep, op, fd, ev(want, data)).is_ok() {
            *reg = Some(want);
        }
    }

    /// Runs session `sid` as far as it can go after an event on one of its sockets.
    pub(super) fn advance<L: HostLink>(&mut self, ctx: &mut Context<L>, sid: usize, now: u64) {
        // Bounded: each round either changes state or stops.
        for _ in 0..8 {
            let Some(s) = self.sessions.get_mut(sid).and_then(|s| s.as_mut()) else {
                return;
            };
            let client = s.client;
            match &mut s.state {
                State::Head { .. } => {
                    if !self.read_head(ctx, sid, now) {
                        return;
                    }
                }
                State::Connecting { ex, .. } => {
                    let Some(server) = s.server else { return };
                    match ctx.write(server, &ex.to_server) {
                        Ok(n) => {
                            let State::Connecting { mut ex, .. } =
                                std::mem::replace(&mut s.state, State::Closing { discarded: 0 })
                            else {
                                unreachable!("matched above")
                            };
                            ex.wrote(n);
                            if self.cfg.mode == ProxyMode::Tunnel {
                                s.state = State::Forwarding {
                                    out: std::mem::take(&mut ex.to_server),
                                    off: n,
                                };
                                s.deadline = 0;
                            } else {
                                s.state = State::Exchange(ex);
                            }
                            self.exchange_started(sid, now);
                        }
                        Err(Errno::Again) => return,
                        Err(Errno::ConnRefused | Errno::ConnReset) => {
                            self.connect_failed(ctx, sid, now, false)
                        }
                        Err(Errno::TimedOut) => self.connect_failed(ctx, sid, now, true),
                        Err(_) => {
                            return self.respond(
                                ctx,
                                sid,
                                502,
                                "the backend connection failed",
                                now,
                            )
                        }
                    }
                }
                State::Forwarding { out, off } => {
                    let Some(server) = s.server else { return };
                    while *off < out.len() {
                        match ctx.write(server, &out[*off..]) {
                            Ok(n) if n > 0 => *off += n,
                            Ok(_) | Err(Errno::Again) => {
                                return self.interest(ctx, sid, true, EPOLLOUT);
                            }
                            Err(_) => {
                                return self.respond(
                                    ctx,
                                    sid,
                                    502,
                                    "the backend connection failed",
                                    now,
                                )
                            }
                        }
                    }
                    self.stats.head_bytes += out.len() as u64;
                    self.forwarded(ctx, sid);
                    return;
                }
                State::Exchange(ex) => {
                    let Some(server) = s.server else { return };
                    let had_head = ex.resp.is_some();
                    let step = ex.pump(
                        ctx,
                        (client, server),
                        &mut self.scratch,
                        self.cfg.max_header_bytes,
                        self.cfg.relay_buffer,
                    );
                    if !had_head && ex.resp.is_some() {
                        s.deadline = 0;
                        if let Some(b) = s.backend {
                            self.balancer.responded(b);
                        }
                    }
                    match step {
                        ExStep::Wait { client, server } => {
                            if self.cfg.splice && !ex.splice_refused && ex.last() && ex.spliceable()
                            {
                                // The last exchange, its response head read: the NIC
                                // carries the body (see the module documentation).
                                ex.splice_refused = true;
                                if self.try_splice(ctx, sid) {
                                    return;
                                }
                            }
                            self.interest(ctx, sid, false, client);
                            self.interest(ctx, sid, true, server);
                            return;
                        }
                        ExStep::Done => self.exchange_done(ctx, sid, now),
                        ExStep::NoResponse => {
                            if let Some(b) = s.backend {
                                self.balancer.closed_early(b, now);
                            }
                            return self.respond(
                                ctx,
                                sid,
                                502,
                                "the backend closed before its response",
                                now,
                            );
                        }
                        ExStep::BadResponse => {
                            return self.respond(ctx, sid, 502, "malformed response", now)
                        }
                        ExStep::BadRequest => {
                            return self.respond(ctx, sid, 400, "malformed request body", now)
                        }
                        ExStep::Broken => {
                            self.stats.relay_resets += 1;
                            return self.finish(ctx, sid, true);
                        }
                    }
                }
                State::Relay { c2s, s2c } => {
                    let Some(server) = s.server else { return };
                    let a = pump(ctx, client, server, c2s);
                    let b = pump(ctx, server, client, s2c);
                    if matches!(a, PumpEnd::Failed) || matches!(b, PumpEnd::Failed) {
                        // A reset on one side: reset the other (SO_LINGER 0 + close), so its
                        // peer sees a RST too.
                        self.stats.relay_resets += 1;
                        return self.finish(ctx, sid, true);
                    }
                    if c2s.shut && s2c.shut {
                        return self.finish(ctx, sid, false);
                    }
                    let cw = (u32::from(!c2s.eof && c2s.room()) * EPOLLIN)
                        | (u32::from(s2c.pending()) * EPOLLOUT);
                    let sw = (u32::from(!s2c.eof && s2c.room()) * EPOLLIN)
                        | (u32::from(c2s.pending()) * EPOLLOUT);
                    self.interest(ctx, sid, false, cw);
                    self.interest(ctx, sid, true, sw);
                    return;
                }
                State::Closing { discarded } => loop {
                    if *discarded >= LINGER_BYTES {
                        return self.finish(ctx, sid, false);
                    }
                    match ctx.read(client, &mut self.scratch) {
                        Ok(0) => return self.finish(ctx, sid, false),
                        Ok(n) => *discarded += n,
                        Err(Errno::Again) => return,
                        Err(_) => return self.finish(ctx, sid, false),
                    }
                },
            }
        }
    }

    /// `tunnel` mode: the head and early body are written: splice the pair, or relay it on
    /// the host.
    fn forwarded<L: HostLink>(&mut self, ctx: &mut Context<L>, sid: usize) {
        if self.cfg.splice && self.try_splice(ctx, sid) {
            return;
        }
        self.stats.relayed += 1;
        let cap = self.cfg.relay_buffer;
        if let Some(s) = self.sessions[sid].as_mut() {
            s.state = State::Relay {
                c2s: Pipe::new(cap),
                s2c: Pipe::new(cap),
            };
            s.deadline = 0;
        }
        self.advance(ctx, sid, 0);
    }

    /// Hands session `sid`'s pair to the NIC (`nsplice`). True when it was taken: the
    /// session is gone and the backend stays counted active until the closure report.
    fn try_splice<L: HostLink>(&mut self, ctx: &mut Context<L>, sid: usize) -> bool {
        let Some(s) = self.sessions[sid].as_mut() else {
            return false;
        };
        let Some(server) = s.server else {
            return false;
        };
        let client = s.client;
        // The stack takes both descriptors: drop our registrations first.
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, client, EpollEvent::default());
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, server, EpollEvent::default());
        s.creg = None;
        s.sreg = None;
        let backend = s.backend.unwrap_or(usize::MAX);
        let inbox = self.inbox.clone();
        let cb = Box::new(move |r: &SpliceReport| {
            if let Ok(mut v) = inbox.lock() {
                v.push((backend, *r));
            }
        });
        match ctx.nsplice(client, server, cb) {
            Ok(()) => {
                self.stats.spliced += 1;
                // The stack owns both sockets now (AccelTCP §5.1): forget them.
                self.release_session(sid);
                true
            }
            Err(_) => {
                self.stats.splice_refused += 1;
                false
            }
        }
    }

    /// Answers session `sid` with an error response and moves it to Closing.
    pub(super) fn respond<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        status: u16,
        detail: &str,
        now: u64,
    ) {
        *self.stats.errors.entry(status).or_default() += 1;
        self.drop_server(ctx, sid, true);
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        if let Some(b) = s.backend.take() {
            self.balancer.release(b);
        }
        let client = s.client;
        s.state = State::Closing { discarded: 0 };
        let _ = ctx.write(client, &error_response(status, detail));
        let _ = ctx.shutdown(client, Shutdown::Write);
        self.set_deadline(sid, now + LINGER_NS);
        self.interest(ctx, sid, false, EPOLLIN);
        self.advance(ctx, sid, now);
    }

    /// Closes session `sid`'s backend socket (with a RST when `abort`).
    pub(super) fn drop_server<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        abort: bool,
    ) {
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        if let Some(fd) = s.server.take() {
            if s.sreg.take().is_some() {
                let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
            }
            if abort {
                let _ = ctx.setsockopt(fd, SockOpt::Linger(Some(0)));
            }
            let _ = ctx.close(fd);
        }
    }

    /// Ends session `sid`: closes both sockets (resetting them when `abort`: SO_LINGER 0).
    pub(super) fn finish<L: HostLink>(&mut self, ctx: &mut Context<L>, sid: usize, abort: bool) {
        self.drop_server(ctx, sid, abort);
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        if let Some(b) = s.backend.take() {
            self.balancer.release(b);
        }
        let client = s.client;
        if s.creg.take().is_some() {
            let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, client, EpollEvent::default());
        }
        if abort {
            let _ = ctx.setsockopt(client, SockOpt::Linger(Some(0)));
        }
        let _ = ctx.close(client);
        self.release_session(sid);
    }

    /// Frees session `sid`'s slot (its sockets are closed or belong to the stack).
    fn release_session(&mut self, sid: usize) {
        if let Some(s) = self.sessions[sid].take() {
            self.stats.account(&s.state);
            self.free.push(sid);
            self.stats.active = self.stats.active.saturating_sub(1);
        }
    }
}
