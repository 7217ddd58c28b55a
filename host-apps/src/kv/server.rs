//! [`KvServer`]: the key-value server on the host stack's mTCP-style API, a run-to-completion
//! epoll loop (non-blocking sockets, level-triggered epoll) stepped by its caller, speaking
//! RESP2 (<https://redis.io/docs/reference/protocol-spec/>) to Redis clients.
//!
//! Each connection's memory is bounded on both sides: input by the parser's query buffer
//! limit (reads stop when it is full; a request that cannot fit ends the connection), output
//! by [`KvConfig::max_output`]: once that much is waiting to be sent, the connection stops
//! executing requests and stops reading until the client takes its replies, so a client that
//! pipelines without reading holds at most the bound plus one reply.
//!
//! The listener asks for AccelTCP's `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` by
//! default (accepted connections inherit them): key-value workloads with short connections
//! are the case the offloads are for.

use super::idmap::IdMap;

use hoststack::frame::HostLink;
use hoststack::stack::{EpollEvent, EpollOp, SockOpt, EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT};
use hoststack::{Context, Errno, Fd};

use super::keyspace::Keyspace;
use super::{Connection, Engine, EngineConfig, ProtoLimits, RunState};
use crate::listener::ServerOffloads;

/// Settings of a [`KvServer`].
#[derive(Clone, Debug)]
pub struct KvConfig {
    /// TCP port to listen on (Redis's 6379 by default).
    pub port: u16,
    /// AccelTCP offloads asked for on the listener (both on by default).
    pub offloads: ServerOffloads,
    /// Protocol limits per connection (bulk length, inline length, query buffer).
    pub limits: ProtoLimits,
    /// The engine: `maxmemory`, ...
    pub engine: EngineConfig,
    /// Reply bytes a connection may have waiting before it stops executing requests and
    /// reading (default 1 MB).
    pub max_output: usize,
    /// Bytes taken from a socket per read (Redis reads 16 KB at a time).
    pub read_chunk: usize,
    /// Connections held at most (Redis's `maxclients`); more are accepted, told
    /// `-ERR max number of clients reached` and closed.
    pub max_connections: usize,
    /// Listen backlog.
    pub backlog: usize,
}

impl Default for KvConfig {
    fn default() -> Self {
        KvConfig {
            port: 6379,
            offloads: ServerOffloads {
                setup: true,
                teardown: true,
            },
            limits: ProtoLimits::default(),
            engine: EngineConfig::default(),
            max_output: 1 << 20,
            read_chunk: 16 * 1024,
            max_connections: 10_000,
            backlog: 4096,
        }
    }
}

/// Counters of a [`KvServer`] (commands and errors by kind are in [`Engine::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed (by either side, or on errors).
    pub closed: u64,
    /// Connections refused past [`KvConfig::max_connections`].
    pub refused: u64,
    /// Request bytes read.
    pub bytes_in: u64,
    /// Reply bytes written.
    pub bytes_out: u64,
    /// Times a connection stopped reading and executing because its output was full.
    pub output_stalls: u64,
    /// Connections closed because of a socket error.
    pub socket_errors: u64,
    /// Commands this server's connections ran (the engine's count while this server held
    /// it: with an engine of its own, all of them).
    pub commands: u64,
    /// Error replies among them.
    pub error_replies: u64,
}

impl KvStats {
    /// Adds `o`'s counts (totals over the servers of a shared engine).
    pub fn add(&mut self, o: &KvStats) {
        self.accepted += o.accepted;
        self.closed += o.closed;
        self.refused += o.refused;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.output_stalls += o.output_stalls;
        self.socket_errors += o.socket_errors;
        self.commands += o.commands;
        self.error_replies += o.error_replies;
    }

    /// Adds what `e` counted since `before` (its commands and errors then).
    fn count(&mut self, e: &Engine, before: (u64, u64)) {
        self.commands += e.stats.commands_total - before.0;
        self.error_replies += e.stats.errors_total - before.1;
    }
}

/// The engine's command and error counts now (for [`KvStats::count`]).
fn counts(e: &Engine) -> (u64, u64) {
    (e.stats.commands_total, e.stats.errors_total)
}

struct Client {
    conn: Connection,
    out: Vec<u8>,
    sent: usize,
    /// The peer closed its side: finish the replies, then close.
    eof: bool,
    /// Registered epoll interest.
    interest: u32,
    /// When the client last sent something (Unix ms), for Redis's `timeout`.
    last_ms: i64,
}

impl Client {
    fn pending(&self) -> usize {
        self.out.len() - self.sent
    }
}

const LISTENER: u64 = u64::MAX;
/// What a connection past [`KvConfig::max_connections`] is told before it is closed.
pub const MAX_CLIENTS_REPLY: &[u8] = b"-ERR max number of clients reached\r\n";
/// Active expiry runs at most this often (Redis's default `hz` 10).
const EXPIRE_PERIOD_MS: i64 = 100;

/// The key-value server: a listener, an epoll instance and the engine, stepped from the
/// caller's poll loop with [`KvServer::step`].
pub struct KvServer {
    cfg: KvConfig,
    listener: Fd,
    ep: Fd,
    events: Vec<EpollEvent>,
    buf: Vec<u8>,
    clients: IdMap<Fd, Client>,
    /// Client id → descriptor, to deliver what the engine left in outboxes.
    ids: IdMap<u64, Fd>,
    keyspace: Keyspace,
    last_expire: i64,
    /// When blocked clients' timeouts were last checked (Unix ms; a shared engine is
    /// locked for it at most once per millisecond).
    last_blocked: i64,
    /// Counters.
    pub stats: KvStats,
}

impl KvServer {
    /// Listens on `cfg.port` of `ctx` (with the offloads of `cfg.offloads`), with an engine
    /// of its own.
    pub fn new<L: HostLink>(ctx: &mut Context<L>, cfg: KvConfig) -> Result<Self, Errno> {
        let engine = Engine::new(Self::engine_config(&cfg));
        Self::with_keyspace(ctx, cfg, Keyspace::Own(Box::new(engine)))
    }

    /// The engine settings `cfg` gives (port, limits, `maxclients`): for an engine that
    /// several servers share ([`super::keyspace::SharedKeyspace`]).
    pub fn engine_config(cfg: &KvConfig) -> EngineConfig {
        let mut ecfg = cfg.engine.clone();
        ecfg.port = cfg.port;
        ecfg.max_bulk_len = cfg.limits.max_bulk_len;
        ecfg.max_query_buffer = cfg.limits.max_query_buffer;
        ecfg.maxclients = cfg.max_connections;
        ecfg
    }

    /// Listens on `cfg.port` of `ctx` (with the offloads of `cfg.offloads`), serving
    /// `keyspace` (one of several servers of a shared engine: see
    /// [`super::keyspace`]; `cfg.engine` is then the shared engine's business).
    pub fn with_keyspace<L: HostLink>(
        ctx: &mut Context<L>,
        cfg: KvConfig,
        keyspace: Keyspace,
    ) -> Result<Self, Errno> {
        let ep = ctx.epoll_create()?;
        let listener =
            crate::listener::listen(ctx, ep, cfg.port, cfg.backlog, cfg.offloads, LISTENER)?;
        Ok(KvServer {
            listener,
            ep,
            events: vec![EpollEvent::default(); 512],
            buf: vec![0; cfg.read_chunk.max(1)],
            clients: IdMap::default(),
            ids: IdMap::default(),
            keyspace,
            last_expire: i64::MIN,
            last_blocked: i64::MIN,
            stats: KvStats::default(),
            cfg,
        })
    }

    /// Reads the engine: keyspace, command and error counters (shared by every server of a
    /// [`super::keyspace::SharedKeyspace`], and then locked while `f` runs).
    pub fn inspect<R>(&self, f: impl FnOnce(&Engine) -> R) -> R {
        self.keyspace.read(f)
    }

    /// This server's index among those sharing its engine (0 with an engine of its own).
    pub fn index(&self) -> usize {
        self.keyspace.index()
    }

    /// The settings.
    pub fn config(&self) -> &KvConfig {
        &self.cfg
    }

    /// Connections held now.
    pub fn connections(&self) -> usize {
        self.clients.len()
    }

    /// Bytes buffered for connection `fd`: (unparsed input, unsent output); for tests that
    /// check the bounds.
    pub fn buffered(&self, fd: Fd) -> Option<(usize, usize)> {
        self.clients
            .get(&fd)
            .map(|c| (c.conn.buffered(), c.pending()))
    }

    /// The descriptors of the connections held.
    pub fn fds(&self) -> Vec<Fd> {
        self.clients.keys().copied().collect()
    }

    /// One round at time `now_ms` (Unix milliseconds: the clock of EXPIRE, TTL, SET EX,
    /// ...): `epoll_wait` (which runs the stack), accept, read, execute, write; and active
    /// expiry every 100 ms. Returns the number of events handled.
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>, now_ms: i64) -> usize {
        // With a shared engine, server 0 keeps the engine's clock and its active expiry.
        let first = self.keyspace.index() == 0;
        if self.last_expire == i64::MIN {
            if first {
                self.keyspace.with(|e| e.set_start(now_ms));
            }
            self.last_expire = now_ms;
        }
        if now_ms - self.last_expire >= EXPIRE_PERIOD_MS {
            self.last_expire = now_ms;
            if first {
                self.keyspace.with(|e| e.active_expire(now_ms));
            }
            self.close_idle(ctx, now_ms);
        }
        // Timeouts are in milliseconds: once per millisecond sees them all.
        if now_ms != self.last_blocked {
            self.last_blocked = now_ms;
            self.keyspace.with(|e| e.expire_blocked(now_ms));
        }
        let n = match ctx.epoll_wait(self.ep, &mut self.events, 0) {
            Ok(n) => n,
            Err(_) => return 0,
        };
        for i in 0..n {
            let ev = self.events[i];
            if ev.data == LISTENER {
                self.accept(ctx, now_ms);
                continue;
            }
            let fd = ev.data as Fd;
            if !self.clients.contains_key(&fd) {
                continue;
            }
            if ev.events & EPOLLERR != 0 {
                self.stats.socket_errors += 1;
                self.close(ctx, fd);
                continue;
            }
            self.serve(ctx, fd, ev.events & (EPOLLIN | EPOLLHUP) != 0, now_ms);
            self.deliver(ctx, now_ms);
        }
        self.deliver(ctx, now_ms);
        n
    }

    /// Serves the clients the engine left something for (published messages, replies of
    /// unblocked commands) or marked to be closed (CLIENT KILL, output limits), until none
    /// is left (serving one may publish to others).
    fn deliver<L: HostLink>(&mut self, ctx: &mut Context<L>, now_ms: i64) {
        for _ in 0..64 {
            if !self.keyspace.take_pending() {
                return;
            }
            let dirty = self.keyspace.take_dirty();
            if dirty.is_empty() {
                return;
            }
            for id in dirty {
                let Some(&fd) = self.ids.get(&id) else {
                    continue;
                };
                if self.keyspace.with(|e| e.killed(id)) {
                    self.close(ctx, fd);
                } else {
                    self.serve(ctx, fd, false, now_ms);
                }
            }
        }
    }

    fn accept<L: HostLink>(&mut self, ctx: &mut Context<L>, now_ms: i64) {
        while let Ok((fd, peer)) = ctx.accept(self.listener) {
            self.stats.accepted += 1;
            // Every server's connections count (they share the engine's `maxclients`).
            let full = self
                .keyspace
                .with(|e| e.stats.connected >= e.config().maxclients as u64);
            if full {
                // Redis's acceptCommonHandler: one error line, best effort, then close.
                self.stats.refused += 1;
                let _ = ctx.write(fd, MAX_CLIENTS_REPLY);
                let _ = ctx.close(fd);
                self.stats.closed += 1;
                continue;
            }
            let _ = ctx.set_nonblocking(fd, true);
            let _ = ctx.setsockopt(fd, SockOpt::NoDelay(true));
            let reg = ctx.epoll_ctl(
                self.ep,
                EpollOp::Add,
                fd,
                EpollEvent {
                    events: EPOLLIN,
                    data: fd as u64,
                },
            );
            if reg.is_err() {
                let _ = ctx.close(fd);
                self.stats.closed += 1;
                continue;
            }
            let local = ctx
                .getsockname(fd)
                .map(|a| a.to_string())
                .unwrap_or_default();
            let (limits, owner) = (self.cfg.limits, self.keyspace.index());
            let conn = self.keyspace.with(|e| {
                let conn = Connection::new(e, limits);
                let id = conn.session().id;
                e.set_peer_addr(id, peer.to_string(), local, fd as i64, now_ms);
                e.set_owner(id, owner);
                conn
            });
            let id = conn.session().id;
            self.ids.insert(id, fd);
            self.clients.insert(
                fd,
                Client {
                    conn,
                    out: Vec::new(),
                    sent: 0,
                    eof: false,
                    interest: EPOLLIN,
                    last_ms: now_ms,
                },
            );
        }
    }

    /// Reads (when `readable`), executes, writes, and updates the epoll interest of `fd`.
    fn serve<L: HostLink>(&mut self, ctx: &mut Context<L>, fd: Fd, readable: bool, now: i64) {
        let max_out = self.cfg.max_output;
        let ks = &mut self.keyspace;
        let Some(c) = self.clients.get_mut(&fd) else {
            return;
        };
        let mut failed = false;
        // Flush first: room in the output lets held requests run.
        if flush(ctx, fd, c, &mut self.stats).is_err() {
            failed = true;
        }
        if !failed && !c.conn.closing() {
            // Requests already buffered (held back by a full output).
            // `out` still holds the sent prefix: bound what is waiting, not the buffer.
            let stats = &mut self.stats;
            let mut state = ks.with(|e| {
                let b = counts(e);
                let r = c.conn.run(e, now, &mut c.out, c.sent + max_out);
                stats.count(e, b);
                r
            });
            while readable
                && state == RunState::NeedInput
                && !c.eof
                && c.pending() < max_out
                && c.conn.room() > 0
            {
                let want = self.buf.len().min(c.conn.room());
                match ctx.read(fd, &mut self.buf[..want]) {
                    Ok(0) => c.eof = true,
                    Ok(k) => {
                        c.last_ms = now;
                        self.stats.bytes_in += k as u64;
                        let (data, stats) = (&self.buf[..k], &mut self.stats);
                        state = ks.with(|e| {
                            let b = counts(e);
                            let r = match c.conn.feed(e, data) {
                                RunState::Close => RunState::Close,
                                _ => c.conn.run(e, now, &mut c.out, c.sent + max_out),
                            };
                            stats.count(e, b);
                            r
                        });
                        if c.pending() >= max_out && flush(ctx, fd, c, &mut self.stats).is_err() {
                            failed = true;
                            break;
                        }
                        if k < want {
                            break;
                        }
                    }
                    Err(Errno::Again) => break,
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
        }
        if !failed && flush(ctx, fd, c, &mut self.stats).is_err() {
            failed = true;
        }
        let done = c.pending() == 0 && (c.conn.closing() || c.eof);
        // A request that cannot complete within the query buffer limit: Redis closes such
        // clients.
        let starved = !c.conn.closing() && c.conn.room() == 0;
        if failed || done || starved {
            if failed {
                self.stats.socket_errors += 1;
            }
            self.close(ctx, fd);
            return;
        }
        // Interest: output waiting → EPOLLOUT; room for more output and not at the end of
        // the input → EPOLLIN. A closing connection only waits to send.
        let mut want = 0;
        if c.pending() > 0 {
            want |= EPOLLOUT;
        }
        if c.pending() < max_out && !c.eof && !c.conn.closing() && c.conn.room() > 0 {
            want |= EPOLLIN;
        }
        if want & EPOLLIN == 0 && c.interest & EPOLLIN != 0 && c.pending() >= max_out {
            self.stats.output_stalls += 1;
        }
        if want != c.interest {
            c.interest = want;
            let _ = ctx.epoll_ctl(
                self.ep,
                EpollOp::Mod,
                fd,
                EpollEvent {
                    events: want,
                    data: fd as u64,
                },
            );
        }
    }

    /// Closes the clients idle for longer than Redis's `timeout` (CONFIG SET timeout), as
    /// Redis's clientsCronHandleTimeout: not those subscribed or blocked.
    fn close_idle<L: HostLink>(&mut self, ctx: &mut Context<L>, now_ms: i64) {
        let clients = &self.clients;
        let idle: Vec<Fd> = self.keyspace.with(|e| {
            let t = e.config().timeout_s;
            if t == 0 {
                return Vec::new();
            }
            clients
                .iter()
                .filter(|(_, c)| now_ms - c.last_ms > t as i64 * 1000 && c.conn.may_time_out(e))
                .map(|(&fd, _)| fd)
                .collect()
        });
        for fd in idle {
            self.close(ctx, fd);
        }
    }

    fn close<L: HostLink>(&mut self, ctx: &mut Context<L>, fd: Fd) {
        let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
        let _ = ctx.close(fd);
        if let Some(c) = self.clients.remove(&fd) {
            self.ids.remove(&c.conn.session().id);
            self.keyspace.with(|e| c.conn.close(e));
            self.stats.closed += 1;
        }
    }

    /// Closes every connection and the listener.
    pub fn shutdown<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        for fd in self.fds() {
            self.close(ctx, fd);
        }
        let _ = ctx.close(self.listener);
        let _ = ctx.close(self.ep);
    }
}

/// Writes what `c` has waiting; `Err` on a socket error.
fn flush<L: HostLink>(
    ctx: &mut Context<L>,
    fd: Fd,
    c: &mut Client,
    stats: &mut KvStats,
) -> Result<(), Errno> {
    while c.pending() > 0 {
        match ctx.write(fd, &c.out[c.sent..]) {
            Ok(0) | Err(Errno::Again) => break,
            Ok(w) => {
                c.sent += w;
                stats.bytes_out += w as u64;
            }
            Err(e) => return Err(e),
        }
    }
    if c.sent == c.out.len() {
        c.out.clear();
        c.sent = 0;
    } else if c.sent > 64 * 1024 && c.sent >= c.out.len() / 2 {
        c.out.drain(..c.sent);
        c.sent = 0;
    }
    Ok(())
}
