//! Per-request handling of the proxy in `http` mode (and the first request in `tunnel`
//! mode): a request head is read and parsed, refused when it must be (CONNECT, malformed
//! framing), rewritten (X-Forwarded-For by the configured rule) and turned into an
//! [`Exchange`]; when the exchange ends, the connection goes on to its next request or
//! closes (RFC 9112 §9.6). See [`super::app`] for the whole state machine.

use hoststack::frame::HostLink;
use hoststack::stack::{Shutdown, EPOLLIN};
use hoststack::{Context, Errno};

use super::app::{Proxy, State, LINGER_NS, MS};
use super::config::{HeaderRule, ProxyMode};
use super::exchange::Exchange;
use super::framing::Body;
use super::http::{parse_head_from, Parse, RequestHead};

impl Proxy {
    /// Reads and parses a request head for session `sid` (in state Head); on a complete
    /// one, starts its exchange. True when the session moved on and can be advanced again.
    pub(super) fn read_head<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        now: u64,
    ) -> bool {
        let Some(s) = self.sessions[sid].as_mut() else {
            return false;
        };
        let client = s.client;
        // A backend kept from the last exchange: a close (or stray bytes) from it means a
        // new connection for the next request.
        if let Some(server) = s.server {
            if !matches!(ctx.read(server, &mut self.scratch), Err(Errno::Again)) {
                self.drop_backend(ctx, sid);
            }
        }
        let Some(s) = self.sessions[sid].as_mut() else {
            return false;
        };
        let State::Head { buf, scanned } = &mut s.state else {
            return false;
        };
        let room = self.cfg.max_header_bytes.saturating_sub(buf.len());
        let mut got = false;
        if room > 0 {
            match ctx.read(client, &mut self.scratch[..room]) {
                Ok(0) => {
                    if !buf.is_empty() || s.server.is_none() {
                        self.stats.client_gone += 1;
                    }
                    self.finish(ctx, sid, false);
                    return false;
                }
                Ok(n) => {
                    buf.extend_from_slice(&self.scratch[..n]);
                    got = true;
                }
                Err(Errno::Again) => {}
                Err(_) => {
                    self.stats.client_gone += 1;
                    self.finish(ctx, sid, true);
                    return false;
                }
            }
        }
        let parsed = parse_head_from(buf, *scanned, self.cfg.max_header_bytes);
        *scanned = buf.len();
        let head = match parsed {
            Parse::Partial => {
                self.interest(ctx, sid, false, EPOLLIN);
                self.interest(ctx, sid, true, EPOLLIN);
                return got; // more may be there
            }
            Parse::Error(e) => {
                self.respond(ctx, sid, e.status(), e.reason(), now);
                return false;
            }
            Parse::Complete(head) => head,
        };
        if head.method == "CONNECT" {
            // RFC 9110 §9.3.6: a proxy that does not tunnel for clients refuses CONNECT.
            self.respond(ctx, sid, 501, "CONNECT is not supported", now);
            return false;
        }
        let ip = s.peer.ip().to_string();
        let buf = std::mem::take(buf);
        let ex = match self.build_exchange(&head, buf, &ip) {
            Ok(ex) => ex,
            Err(()) => {
                self.respond(ctx, sid, 400, "malformed request body", now);
                return false;
            }
        };
        if self.cfg.mode == ProxyMode::Http {
            self.stats.head_bytes += ex.to_server.len() as u64;
        }
        let s = self.sessions[sid].as_mut().expect("open");
        // Nothing more is read from the client until the request goes.
        if s.server.is_some() {
            s.state = State::Exchange(Box::new(ex));
            self.exchange_started(sid, now);
            return true;
        }
        s.state = State::Connecting {
            ex: Box::new(ex),
            uri: head.target.into_bytes(),
            tried: 0,
            attempts: 0,
        };
        self.interest(ctx, sid, false, 0);
        self.connect(ctx, sid, now)
    }

    /// The exchange for request `head`, whose bytes start `buf` (the client's bytes so
    /// far): the head rewritten, the body bytes that came with it, the rest kept.
    fn build_exchange(&self, head: &RequestHead, buf: Vec<u8>, ip: &str) -> Result<Exchange, ()> {
        let mut out = match (&self.cfg.add_header, self.cfg.add_header_rule) {
            (Some(name), HeaderRule::Replace) => head.rewrite_replacing(name, ip),
            (Some(name), HeaderRule::Append) => head.rewrite(name, ip),
            (None, _) => buf[..head.head_len].to_vec(),
        };
        let rest = &buf[head.head_len..];
        if self.cfg.mode == ProxyMode::Tunnel {
            // Opaque after the head: everything goes.
            out.extend_from_slice(rest);
            return Ok(Exchange::new(out, Body::Done, Vec::new(), false, false));
        }
        let mut body = if head.chunked {
            Body::chunked()
        } else {
            Body::length(head.content_length.unwrap_or(0))
        };
        let k = body.feed(rest).map_err(|_| ())?;
        out.extend_from_slice(&rest[..k]);
        Ok(Exchange::new(
            out,
            body,
            rest[k..].to_vec(),
            head.method == "HEAD",
            !head.keep_alive,
        ))
    }

    /// Session `sid`'s request is on its way to the backend: count it, and wait for the
    /// response head at most `response_timeout_ms` (`http` mode).
    pub(super) fn exchange_started(&mut self, sid: usize, now: u64) {
        self.stats.requests += 1;
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        if let Some(b) = s.backend {
            self.balancer.requested(b);
        }
        let at = match s.state {
            State::Exchange(_) => now + self.cfg.response_timeout_ms * MS,
            _ => 0,
        };
        self.set_deadline(sid, at);
    }

    /// Session `sid`'s exchange is complete: the next request, or the end.
    pub(super) fn exchange_done<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        now: u64,
    ) {
        let Some(s) = self.sessions[sid].as_mut() else {
            return;
        };
        let State::Exchange(ex) = std::mem::replace(&mut s.state, State::Closing { discarded: 0 })
        else {
            return;
        };
        self.stats.exchanges += 1;
        self.stats.relayed_c2s += ex.bytes_c2s;
        self.stats.relayed_s2c += ex.bytes_s2c;
        if ex.last() {
            // RFC 9112 §9.6: the response was the last; close after it.
            self.stats.closes_honoured += 1;
            let client = s.client;
            self.drop_backend(ctx, sid);
            let _ = ctx.shutdown(client, Shutdown::Write);
            self.set_deadline(sid, now + LINGER_NS);
            self.interest(ctx, sid, false, EPOLLIN);
            return;
        }
        let spoiled = ex.server_spoiled;
        s.state = State::Head {
            buf: ex.leftover,
            scanned: 0,
        };
        if spoiled {
            self.drop_backend(ctx, sid);
        }
        self.set_deadline(sid, now + self.cfg.request_timeout_ms * MS);
    }

    /// Closes session `sid`'s backend connection and releases the backend.
    pub(super) fn drop_backend<L: HostLink>(&mut self, ctx: &mut Context<L>, sid: usize) {
        self.drop_server(ctx, sid, false);
        if let Some(b) = self.sessions[sid].as_mut().and_then(|s| s.backend.take()) {
            self.balancer.release(b);
        }
    }
}
