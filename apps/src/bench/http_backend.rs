//! A minimal HTTP/1.1 origin server over the host API, the back end of `nicemu bench proxy`
//! (AccelTCP §6.1.2: the back-end servers behind `epproxy`).
//!
//! Every request head (RFC 9112 §2.1: a start line and header fields up to the empty line)
//! is answered with the same fixed response: `HTTP/1.1 200 OK`, a `Content-Length` (RFC 9112
//! §6.3) and a body of the configured size. Connections are persistent (RFC 9112 §9.3):
//! requests may follow each other (or be pipelined), and the server closes only after the
//! peer's FIN, once every owed response is written. Request bodies are not expected (the
//! load generator sends GETs); a head that does not end within [`MAX_HEAD`] bytes is a bad
//! request: the connection is reset and counted.
//!
//! Responses are never copied: a connection owes a count of whole responses plus an offset
//! into the current one, written straight from the shared response bytes.

use hoststack::frame::HostLink;
use hoststack::stack::{EpollEvent, EpollOp, SockOpt, EPOLLIN, EPOLLOUT};
use hoststack::{Context, Errno, Fd};

/// Longest request head accepted, bytes (a larger one resets the connection).
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest body size the server is built for, bytes.
pub const MAX_BODY: usize = 16 << 20;
/// Epoll data of listener `i` is `LISTENER_TAG | i`.
const LISTENER_TAG: u64 = 1 << 63;

/// The server's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Request heads received.
    pub requests: u64,
    /// Responses written in full.
    pub responses: u64,
    /// Response bytes written.
    pub bytes_out: u64,
    /// Connections closed after the peer's FIN.
    pub closed: u64,
    /// Connections reset: a head over [`MAX_HEAD`], or a failed read or write.
    pub errors: u64,
}

struct Conn {
    fd: Fd,
    /// Bytes read and not yet consumed as heads.
    inbuf: Vec<u8>,
    /// Responses owed, the first of them written up to `off`.
    owed: u64,
    off: usize,
    /// The peer sent FIN: close once nothing is owed.
    eof: bool,
    /// The registered interest.
    interest: u32,
}

/// The HTTP/1.1 responder. See the module documentation.
pub struct HttpBackend {
    listeners: Vec<Fd>,
    ep: Fd,
    events: Vec<EpollEvent>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    response: Vec<u8>,
    scratch: Vec<u8>,
    stats: BackendStats,
}

/// The response every request gets: a 200 with a `body`-byte body.
pub fn response(body: usize) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n").into_bytes();
    r.extend((0..body).map(|i| b'a' + (i % 26) as u8));
    r
}

/// End of the first complete head in `b` (the index after its empty line), looking from
/// `from` on.
fn head_end(b: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    b.get(start..)?
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| start + p + 4)
}

impl HttpBackend {
    /// A server listening on each of `ports` of `ctx`'s address, answering every request
    /// with a `body`-byte body; `backlog` bounds each listener's accept queue.
    pub fn new<L: HostLink>(
        ctx: &mut Context<L>,
        ports: &[u16],
        body: usize,
        backlog: usize,
    ) -> Result<HttpBackend, Errno> {
        if ports.is_empty() || body > MAX_BODY {
            return Err(Errno::Inval);
        }
        let ep = ctx.epoll_create()?;
        let mut listeners = Vec::new();
        for (i, &port) in ports.iter().enumerate() {
            listeners.push(crate::listener::listen(
                ctx,
                ep,
                port,
                backlog.max(1),
                Default::default(),
                LISTENER_TAG | i as u64,
            )?);
        }
        Ok(HttpBackend {
            listeners,
            ep,
            events: vec![EpollEvent::default(); 512],
            conns: Vec::new(),
            free: Vec::new(),
            response: response(body),
            scratch: vec![0; 16 * 1024],
            stats: BackendStats::default(),
        })
    }

    /// The counters.
    pub fn stats(&self) -> &BackendStats {
        &self.stats
    }

    /// Length of each response (head and body), bytes.
    pub fn response_len(&self) -> usize {
        self.response.len()
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.conns.len() - self.free.len()
    }

    /// One round: `epoll_wait` (which runs the stack), accept, read heads, write what is
    /// owed, close finished connections. Returns the events handled.
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) -> usize {
        let n = ctx.epoll_wait(self.ep, &mut self.events, 0).unwrap_or(0);
        for i in 0..n {
            let e = self.events[i];
            if e.data & LISTENER_TAG != 0 {
                let l = (e.data & !LISTENER_TAG) as usize;
                if let Some(&fd) = self.listeners.get(l) {
                    self.accept(ctx, fd);
                }
            } else {
                self.serve(ctx, e.data as usize);
            }
        }
        n
    }

    fn accept<L: HostLink>(&mut self, ctx: &mut Context<L>, listener: Fd) {
        while let Ok((fd, _)) = ctx.accept(listener) {
            self.stats.accepted += 1;
            let _ = ctx.set_nonblocking(fd, true);
            let _ = ctx.setsockopt(fd, SockOpt::NoDelay(true));
            let c = Conn {
                fd,
                inbuf: Vec::new(),
                owed: 0,
                off: 0,
                eof: false,
                interest: EPOLLIN,
            };
            let k = match self.free.pop() {
                Some(k) => {
                    self.conns[k] = Some(c);
                    k
                }
                None => {
                    self.conns.push(Some(c));
                    self.conns.len() - 1
                }
            };
            let reg = ctx.epoll_ctl(
                self.ep,
                EpollOp::Add,
                fd,
                EpollEvent {
                    events: EPOLLIN,
                    data: k as u64,
                },
            );
            if reg.is_err() {
                self.drop_conn(ctx, k, true);
                continue;
            }
            // A request may have come with the handshake.
            self.serve(ctx, k);
        }
    }

    /// Reads, answers and writes for connection `k` until it would block.
    fn serve<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize) {
        let Some(c) = self.conns.get_mut(k).and_then(|c| c.as_mut()) else {
            return;
        };
        let fd = c.fd;
        // Read everything there is and count the complete heads.
        while !c.eof {
            match ctx.read(fd, &mut self.scratch) {
                Ok(0) => c.eof = true,
                Ok(n) => {
                    let scanned = c.inbuf.len();
                    c.inbuf.extend_from_slice(&self.scratch[..n]);
                    let mut consumed = 0;
                    let mut from = scanned;
                    while let Some(end) = head_end(&c.inbuf, from) {
                        self.stats.requests += 1;
                        c.owed += 1;
                        consumed = end;
                        from = end;
                    }
                    c.inbuf.drain(..consumed);
                    if c.inbuf.len() > MAX_HEAD {
                        return self.drop_conn(ctx, k, true);
                    }
                }
                Err(Errno::Again) => break,
                Err(_) => return self.drop_conn(ctx, k, true),
            }
        }
        // Write what is owed.
        while c.owed > 0 {
            match ctx.write(fd, &self.response[c.off..]) {
                Ok(n) if n > 0 => {
                    self.stats.bytes_out += n as u64;
                    c.off += n;
                    if c.off == self.response.len() {
                        c.off = 0;
                        c.owed -= 1;
                        self.stats.responses += 1;
                    }
                }
                Ok(_) | Err(Errno::Again) => break,
                Err(_) => return self.drop_conn(ctx, k, true),
            }
        }
        if c.eof && c.owed == 0 {
            self.stats.closed += 1;
            return self.drop_conn(ctx, k, false);
        }
        let want = if c.owed > 0 {
            EPOLLIN | EPOLLOUT
        } else {
            EPOLLIN
        };
        if want != c.interest {
            c.interest = want;
            let _ = ctx.epoll_ctl(
                self.ep,
                EpollOp::Mod,
                fd,
                EpollEvent {
                    events: want,
                    data: k as u64,
                },
            );
        }
    }

    /// Closes connection `k` (reset when `abort`: SO_LINGER 0) and frees its slot.
    fn drop_conn<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, abort: bool) {
        let Some(c) = self.conns.get_mut(k).and_then(|c| c.take()) else {
            return;
        };
        if abort {
            self.stats.errors += 1;
            let _ = ctx.setsockopt(c.fd, SockOpt::Linger(Some(0)));
        }
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, c.fd, EpollEvent::default());
        let _ = ctx.close(c.fd);
        self.free.push(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_found_across_reads() {
        let b = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\n\r\n";
        let first = head_end(b, 0).unwrap();
        assert_eq!(&b[first - 4..first], b"\r\n\r\n");
        assert_eq!(head_end(b, first), Some(b.len()));
        // The terminator split over two reads: scanning from the old end still finds it.
        let part = &b[..first - 2];
        assert_eq!(head_end(part, 0), None);
        assert_eq!(head_end(b, part.len()), Some(first));
        assert_eq!(head_end(b"", 0), None);
        assert_eq!(head_end(b"\r\n", 100), None);
    }

    #[test]
    fn the_response_is_framed_by_its_length() {
        let r = response(1500);
        let end = head_end(&r, 0).unwrap();
        assert!(r.starts_with(b"HTTP/1.1 200 OK\r\nContent-Length: 1500\r\n"));
        assert_eq!(r.len() - end, 1500);
        assert_eq!(response(0).len(), head_end(&response(0), 0).unwrap());
    }
}
