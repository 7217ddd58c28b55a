//! Echo over the host API: a run-to-completion epoll server, and a client that keeps N
//! connections each with one request of `size` bytes outstanding: persistent, or closed and
//! reopened after a number of transactions (short-lived connections, AccelTCP §6.1 and
//! Table 3). The server can ask for AccelTCP's setup and teardown offloads.

use std::net::SocketAddrV4;

use hoststack::frame::HostLink;
use hoststack::stack::{EpollEvent, EpollOp, SockOpt, EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT};
use hoststack::{Context, Errno, Fd};

/// An epoll echo server: accepts every connection and writes back what it reads.
pub struct EchoServer {
    listener: Fd,
    ep: Fd,
    events: Vec<EpollEvent>,
    buf: Vec<u8>,
    /// Bytes echoed.
    pub bytes: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed (by the peer, or on error).
    pub closed: u64,
    /// Close each connection right after echoing what one read returned (the server ends
    /// short connections: AccelTCP §5.2's "closes the connection after a single write").
    close_after_reply: bool,
}

const LISTENER: u64 = u64::MAX;

pub use crate::listener::ServerOffloads;

impl EchoServer {
    /// Listens on `port` of `ctx`.
    pub fn new<L: HostLink>(ctx: &mut Context<L>, port: u16) -> Result<Self, Errno> {
        Self::with_offloads(ctx, port, ServerOffloads::default())
    }

    /// Listens on `port` of `ctx` with the AccelTCP offloads `off`.
    pub fn with_offloads<L: HostLink>(
        ctx: &mut Context<L>,
        port: u16,
        off: ServerOffloads,
    ) -> Result<Self, Errno> {
        let ep = ctx.epoll_create()?;
        let listener = crate::listener::listen(ctx, ep, port, 4096, off, LISTENER)?;
        Ok(EchoServer {
            listener,
            ep,
            events: vec![EpollEvent::default(); 512],
            buf: vec![0; 16384],
            bytes: 0,
            accepted: 0,
            closed: 0,
            close_after_reply: false,
        })
    }

    /// Makes the server close each connection right after its first echo (for clients
    /// that send one request per connection).
    pub fn close_after_reply(mut self, on: bool) -> Self {
        self.close_after_reply = on;
        self
    }

    /// One round: `epoll_wait` (which runs the stack), then serve every ready socket.
    /// Returns the number of events handled.
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) -> usize {
        let n = match ctx.epoll_wait(self.ep, &mut self.events, 0) {
            Ok(n) => n,
            Err(_) => return 0,
        };
        for i in 0..n {
            let ev = self.events[i];
            if ev.data == LISTENER {
                while let Ok((fd, _)) = ctx.accept(self.listener) {
                    self.accepted += 1;
                    let _ = ctx.set_nonblocking(fd, true);
                    let _ = ctx.epoll_ctl(
                        self.ep,
                        EpollOp::Add,
                        fd,
                        EpollEvent {
                            events: EPOLLIN,
                            data: fd as u64,
                        },
                    );
                }
                continue;
            }
            let fd = ev.data as Fd;
            if ev.events & (EPOLLERR | EPOLLHUP) != 0 && ev.events & EPOLLIN == 0 {
                self.close(ctx, fd);
                continue;
            }
            loop {
                match ctx.read(fd, &mut self.buf) {
                    Ok(0) => {
                        self.close(ctx, fd);
                        break;
                    }
                    Ok(k) => {
                        // Echo everything; with a send buffer larger than any request, a
                        // short write only happens when the peer stops reading.
                        let mut off = 0;
                        while off < k {
                            match ctx.write(fd, &self.buf[off..k]) {
                                Ok(w) => off += w,
                                Err(_) => break,
                            }
                        }
                        self.bytes += off as u64;
                        if self.close_after_reply {
                            self.close(ctx, fd);
                            break;
                        }
                        if k < self.buf.len() {
                            break;
                        }
                    }
                    Err(Errno::Again) => break,
                    Err(_) => {
                        self.close(ctx, fd);
                        break;
                    }
                }
            }
        }
        n
    }

    fn close<L: HostLink>(&mut self, ctx: &mut Context<L>, fd: Fd) {
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
        if ctx.close(fd).is_ok() {
            self.closed += 1;
        }
    }
}

/// Echo load generator: `conns` connections, each sending one `size`-byte request and waiting
/// for the whole echo before the next (a transaction). Persistent, or (with
/// [`EchoClient::with_per_conn`]) closed after `per_conn` transactions and replaced at once by
/// a new connection, as AccelTCP §6.1's non-persistent clients do.
pub struct EchoClient {
    ep: Fd,
    server: SocketAddrV4,
    per_conn: u32,
    /// Connections closed after their transactions and reopened.
    pub reconnects: u64,
    conns: Vec<ClientConn>,
    events: Vec<EpollEvent>,
    size: usize,
    buf: Vec<u8>,
    req: Vec<u8>,
    /// Transactions completed.
    pub transactions: u64,
    /// Connections that failed.
    pub failed: u64,
    /// Echoed bytes that differed from what was sent.
    pub corrupt: u64,
}

struct ClientConn {
    fd: Fd,
    connected: bool,
    got: usize,
    seq: u8,
    /// Transactions on this connection.
    done: u32,
}

impl EchoClient {
    /// Opens `conns` connections to `server` (non-blocking; they complete as the stack runs).
    pub fn new<L: HostLink>(
        ctx: &mut Context<L>,
        server: SocketAddrV4,
        conns: usize,
        size: usize,
    ) -> Result<Self, Errno> {
        Self::with_per_conn(ctx, server, conns, size, 0)
    }

    /// Like [`EchoClient::new`], but each connection is closed after `per_conn` transactions
    /// (0: never) and a new one opened in its place; the client closes first, so TIME_WAIT
    /// stays on its side.
    pub fn with_per_conn<L: HostLink>(
        ctx: &mut Context<L>,
        server: SocketAddrV4,
        conns: usize,
        size: usize,
        per_conn: u32,
    ) -> Result<Self, Errno> {
        let ep = ctx.epoll_create()?;
        let mut v = Vec::with_capacity(conns);
        for i in 0..conns {
            let fd = Self::open(ctx, ep, server, i)?;
            v.push(ClientConn {
                fd,
                connected: false,
                got: 0,
                seq: i as u8,
                done: 0,
            });
        }
        Ok(EchoClient {
            ep,
            server,
            per_conn,
            reconnects: 0,
            conns: v,
            events: vec![EpollEvent::default(); 1024],
            size: size.max(1),
            buf: vec![0; 65536],
            req: Vec::with_capacity(size.max(1)),
            transactions: 0,
            failed: 0,
            corrupt: 0,
        })
    }

    /// A new non-blocking connection to `server` for slot `k`, registered with `ep`.
    fn open<L: HostLink>(
        ctx: &mut Context<L>,
        ep: Fd,
        server: SocketAddrV4,
        k: usize,
    ) -> Result<Fd, Errno> {
        let fd = ctx.socket()?;
        ctx.set_nonblocking(fd, true)?;
        ctx.setsockopt(fd, SockOpt::NoDelay(true))?;
        match ctx.connect(fd, server) {
            Err(Errno::InProgress) | Ok(()) => {}
            Err(e) => {
                let _ = ctx.close(fd);
                return Err(e);
            }
        }
        ctx.epoll_ctl(
            ep,
            EpollOp::Add,
            fd,
            EpollEvent {
                events: EPOLLIN | EPOLLOUT,
                data: k as u64,
            },
        )?;
        Ok(fd)
    }

    /// Closes slot `k`'s connection after its transactions and opens the next one.
    fn reconnect<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize) {
        let old = self.conns[k].fd;
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, old, EpollEvent::default());
        let _ = ctx.close(old);
        match Self::open(ctx, self.ep, self.server, k) {
            Ok(fd) => {
                let c = &mut self.conns[k];
                c.fd = fd;
                c.connected = false;
                c.got = 0;
                c.done = 0;
                self.reconnects += 1;
            }
            Err(_) => self.failed += 1,
        }
    }

    /// Connections whose handshake completed.
    pub fn connected(&self) -> usize {
        self.conns.iter().filter(|c| c.connected).count()
    }

    /// Writes connection `k`'s next request (`size` bytes counting up from its sequence
    /// byte), reusing one buffer; counts a failure when it does not fit at once.
    fn send_request<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize) {
        let seq = self.conns[k].seq;
        self.req.clear();
        self.req
            .extend((0..self.size).map(|i| seq.wrapping_add(i as u8)));
        if ctx.write(self.conns[k].fd, &self.req) != Ok(self.req.len()) {
            self.failed += 1;
        }
    }

    /// One round: `epoll_wait`, then read echoes and send the next requests.
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) -> usize {
        let n = match ctx.epoll_wait(self.ep, &mut self.events, 0) {
            Ok(n) => n,
            Err(_) => return 0,
        };
        for i in 0..n {
            let ev = self.events[i];
            let k = ev.data as usize;
            let fd = self.conns[k].fd;
            if ev.events & EPOLLERR != 0 {
                self.failed += 1;
                let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
                continue;
            }
            if !self.conns[k].connected {
                if ev.events & EPOLLOUT == 0 {
                    continue;
                }
                self.conns[k].connected = true;
                let _ = ctx.epoll_ctl(
                    self.ep,
                    EpollOp::Mod,
                    fd,
                    EpollEvent {
                        events: EPOLLIN,
                        data: k as u64,
                    },
                );
                self.send_request(ctx, k);
                continue;
            }
            while let Ok(r) = ctx.read(fd, &mut self.buf) {
                if r == 0 {
                    self.failed += 1;
                    let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
                    break;
                }
                let c = &mut self.conns[k];
                for (j, b) in self.buf[..r].iter().enumerate() {
                    if *b != c.seq.wrapping_add((c.got + j) as u8) {
                        self.corrupt += 1;
                        break;
                    }
                }
                c.got += r;
                if c.got >= self.size {
                    c.got = 0;
                    c.seq = c.seq.wrapping_add(1);
                    c.done += 1;
                    self.transactions += 1;
                    if self.per_conn != 0 && c.done >= self.per_conn {
                        self.reconnect(ctx, k);
                        break;
                    }
                    self.send_request(ctx, k);
                }
            }
        }
        n
    }

    /// Closes every connection.
    pub fn close<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        for c in &self.conns {
            let _ = ctx.close(c.fd);
        }
    }
}
