//! The load generator on the nicemu host stack, in the role of AccelTCP's msg_test and
//! mTCP's epwget: `conns` connections in a closed loop, each with one request in flight,
//! `per_conn` transactions per connection (1: a new connection per transaction, 0:
//! persistent), every response checked ([`proto`]), latency recorded in an HDR histogram,
//! errors counted by kind. It runs over any [`HostLink`], so the same code drives the
//! in-memory benchmarks and the `nicemu loadgen` process.
//!
//! Invariants: at most one request per connection is in flight; a connection whose
//! response is wrong, late or cut short is closed (aborted) and replaced, so an error never
//! leaves the generator waiting; the receive buffer of a connection is bounded by the
//! largest valid response. The first connection opens alone, the others once its handshake
//! completed or failed (`Probe`).

pub mod proto;

use std::net::SocketAddrV4;

use hdrhistogram::Histogram;
use hoststack::frame::HostLink;
use hoststack::stack::{
    EpollEvent, EpollOp, SockOpt, SockOptName, EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT,
};
use hoststack::{Context, Errno, Fd};

pub use proto::{BadResponse, Proto};

/// What to generate.
#[derive(Clone, Debug)]
pub struct LoadGenConfig {
    /// The server.
    pub server: SocketAddrV4,
    /// Connections open at once.
    pub conns: usize,
    /// Message size: the echo size, or the Redis value size (HTTP responses are what the
    /// server sends).
    pub size: usize,
    /// Transactions per connection before it is closed and replaced (0: never).
    pub per_conn: u64,
    /// Stop issuing requests after this many transactions were started (none: no limit).
    pub max_transactions: Option<u64>,
    /// The protocol.
    pub proto: Proto,
    /// A connect that has not completed after this long counts as a timeout.
    pub connect_timeout_ns: u64,
    /// A response that has not completed after this long counts as a timeout.
    pub response_timeout_ns: u64,
    /// Wait this long after a failed connection before opening its replacement.
    pub retry_ns: u64,
    /// `TCP_SETUP_OFFLOAD` and `TCP_TEARDOWN_OFFLOAD` on the client's sockets.
    pub offloads: bool,
    /// HTTP: the last request of a connection (with `per_conn` > 0) says `Connection:
    /// close` (RFC 9112 §9.6), as a client that closes after it does; the server may then
    /// end the connection after its response (and a proxy splice that last exchange).
    pub close_last: bool,
    /// The number of this generator's first connection slot among all the generators of
    /// a run (one per host context): slot numbers name the Redis keys and the payloads, so
    /// generators that share a server's keyspace must not reuse them.
    pub first_slot: usize,
}

impl LoadGenConfig {
    /// Defaults: one echo connection of 64-byte messages to `server`, persistent.
    pub fn new(server: SocketAddrV4) -> Self {
        LoadGenConfig {
            server,
            conns: 1,
            size: 64,
            per_conn: 0,
            max_transactions: None,
            proto: Proto::Echo,
            connect_timeout_ns: 3_000_000_000,
            response_timeout_ns: 10_000_000_000,
            retry_ns: 10_000_000,
            offloads: false,
            close_last: false,
            first_slot: 0,
        }
    }
}

/// Errors by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Connects refused (a RST answered the SYN).
    pub refused: u64,
    /// Connects that did not complete in time (or failed otherwise: unreachable).
    pub connect_timeout: u64,
    /// Connections reset by the server after they were up.
    pub reset: u64,
    /// Connections the server closed in the middle of a transaction.
    pub closed_early: u64,
    /// Responses that were malformed, wrong or too long.
    pub bad_response: u64,
    /// HTTP responses with a status outside 2xx.
    pub http_status: u64,
    /// Responses that did not complete in time.
    pub response_timeout: u64,
    /// Socket calls that failed (no descriptors, no ports, a short write).
    pub local: u64,
}

impl ErrorCounts {
    /// All errors.
    pub fn total(&self) -> u64 {
        self.refused
            + self.connect_timeout
            + self.reset
            + self.closed_early
            + self.bad_response
            + self.http_status
            + self.response_timeout
            + self.local
    }

    /// `name=count` for every non-zero kind, or "none".
    pub fn describe(&self) -> String {
        let kinds = [
            ("refused", self.refused),
            ("connect_timeout", self.connect_timeout),
            ("reset", self.reset),
            ("closed_early", self.closed_early),
            ("bad_response", self.bad_response),
            ("http_status", self.http_status),
            ("response_timeout", self.response_timeout),
            ("local", self.local),
        ];
        let v: Vec<String> = kinds
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(" ")
        }
    }
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Transactions completed and checked.
    pub transactions: u64,
    /// Transactions started (requests written).
    pub started: u64,
    /// Connections opened (connect called).
    pub connects: u64,
    /// Connections whose handshake completed.
    pub established: u64,
    /// Request bytes written.
    pub bytes_out: u64,
    /// Response bytes read.
    pub bytes_in: u64,
    /// Errors by kind.
    pub errors: ErrorCounts,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No socket; open one at `at`.
    Idle { at: u64 },
    /// connect() called at `since`.
    Connecting { since: u64 },
    /// Request written at `since`, response not yet whole.
    Waiting { since: u64 },
    /// Nothing more to do (the transaction budget is spent).
    Done,
}

struct Slot {
    fd: Option<Fd>,
    phase: Phase,
    /// Transactions completed on this connection.
    done_here: u64,
    /// Transactions this connection may start (its share of the budget).
    claim: u64,
    /// Transactions completed on this slot (numbers the payloads).
    txn: u64,
    got: Vec<u8>,
}

/// The load generator. See the module documentation.
pub struct LoadGen {
    cfg: LoadGenConfig,
    ep: Fd,
    slots: Vec<Slot>,
    events: Vec<EpollEvent>,
    buf: Vec<u8>,
    req: Vec<u8>,
    stats: LoadStats,
    latency: Histogram<u64>,
    /// Largest valid response: bounds a connection's receive buffer.
    max_response: usize,
    /// Next slot whose timers are checked (a few per step).
    sweep: usize,
    /// Transactions promised to open connections plus those already done on closed ones:
    /// a connection opens only while the budget has room for it.
    claimed: u64,
    /// The first connection opens alone (see [`Probe`]).
    probe: Probe,
}

/// Before any other connection opens, one connection (the probe) goes first, until its
/// handshake completes or fails. Its SYN makes the NIC resolve the server's (or gateway's)
/// address; a burst of SYNs from every connection at once would find the address
/// unresolved, and the NIC holds only a few frames per address while it resolves (as
/// Linux's `unres_qlen`): the rest would be dropped, and their retransmissions, one second
/// later, wait behind the whole closed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    /// Not opened yet: the next due slot opens it.
    Pending,
    /// Open, handshake not finished: no other connection opens.
    InFlight,
    /// Established or failed: every connection opens.
    Done,
}

impl LoadGen {
    /// A generator for `cfg` on `ctx` (connections open on the first [`LoadGen::step`]).
    pub fn new<L: HostLink>(ctx: &mut Context<L>, cfg: LoadGenConfig) -> Result<Self, Errno> {
        let ep = ctx.epoll_create()?;
        let now = ctx.now();
        let slots = (0..cfg.conns)
            .map(|_| Slot {
                fd: None,
                phase: Phase::Idle { at: now },
                done_here: 0,
                claim: 0,
                txn: 0,
                got: Vec::new(),
            })
            .collect();
        let max_response = match cfg.proto {
            Proto::Echo => cfg.size,
            Proto::Redis => cfg.size + 64,
            Proto::Http { .. } => usize::MAX,
        };
        Ok(LoadGen {
            ep,
            slots,
            events: vec![EpollEvent::default(); 1024],
            buf: vec![0; 65536],
            req: Vec::new(),
            stats: LoadStats::default(),
            latency: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds"),
            max_response,
            sweep: 0,
            claimed: 0,
            probe: Probe::Pending,
            cfg,
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> &LoadStats {
        &self.stats
    }

    /// Latency of completed transactions, nanoseconds.
    pub fn latency(&self) -> &Histogram<u64> {
        &self.latency
    }

    /// The configuration.
    pub fn config(&self) -> &LoadGenConfig {
        &self.cfg
    }

    /// True once every transaction of the budget is done and no connection is open.
    pub fn finished(&self) -> bool {
        self.cfg.max_transactions.is_some()
            && self.budget_left() == 0
            && self.slots.iter().all(|s| s.fd.is_none())
    }

    /// Transactions not yet claimed by a connection (u64::MAX without a budget).
    fn budget_left(&self) -> u64 {
        self.cfg
            .max_transactions
            .map_or(u64::MAX, |m| m.saturating_sub(self.claimed))
    }

    /// Latency percentiles `(p50, p90, p99, p99.9, max)` in nanoseconds (all 0 before the
    /// first transaction); monotonic by construction.
    pub fn percentiles(&self) -> [u64; 5] {
        let h = &self.latency;
        if h.is_empty() {
            return [0; 5];
        }
        [
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max(),
        ]
    }

    /// One round: open due connections, handle ready sockets, check timeouts. Returns the
    /// events handled.
    pub fn step<L: HostLink>(&mut self, ctx: &mut Context<L>) -> usize {
        let now = ctx.now();
        let mut work = 0;
        // Timers and due opens: a bounded sweep per step keeps a step O(1) in the number of
        // connections while every slot is still visited every few steps.
        let n = self.slots.len();
        for _ in 0..n.min(256) {
            let k = self.sweep;
            self.sweep = if self.sweep + 1 >= n {
                0
            } else {
                self.sweep + 1
            };
            match self.slots[k].phase {
                Phase::Idle { at } if at <= now && self.slots[k].fd.is_none() => {
                    if self.budget_left() == 0 {
                        self.slots[k].phase = Phase::Done;
                    } else if self.probe != Probe::InFlight {
                        self.open(ctx, k, now);
                        if self.probe == Probe::Pending && self.slots[k].fd.is_some() {
                            self.probe = Probe::InFlight;
                        }
                        work += 1;
                    }
                }
                Phase::Connecting { since } if now - since > self.cfg.connect_timeout_ns => {
                    self.stats.errors.connect_timeout += 1;
                    self.fail(ctx, k, now);
                }
                Phase::Waiting { since } if now - since > self.cfg.response_timeout_ns => {
                    self.stats.errors.response_timeout += 1;
                    self.fail(ctx, k, now);
                }
                _ => {}
            }
        }
        let ready = match ctx.epoll_wait(self.ep, &mut self.events, 0) {
            Ok(r) => r,
            Err(_) => return work,
        };
        for i in 0..ready {
            let ev = self.events[i];
            let k = ev.data as usize;
            let Some(fd) = self.slots.get(k).and_then(|s| s.fd) else {
                continue;
            };
            self.ready(ctx, k, fd, ev.events, now);
        }
        work + ready
    }

    fn open<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, now: u64) {
        let fd = match ctx.socket() {
            Ok(fd) => fd,
            Err(_) => {
                self.stats.errors.local += 1;
                self.slots[k].phase = Phase::Idle {
                    at: now + self.cfg.retry_ns,
                };
                return;
            }
        };
        let _ = ctx.set_nonblocking(fd, true);
        let _ = ctx.setsockopt(fd, SockOpt::NoDelay(true));
        if self.cfg.offloads {
            let _ = ctx.setsockopt(fd, SockOpt::SetupOffload(true));
            let _ = ctx.setsockopt(fd, SockOpt::TeardownOffload(true));
        }
        self.stats.connects += 1;
        let per = if self.cfg.per_conn == 0 {
            // Persistent connections share what is left evenly.
            match self.cfg.max_transactions {
                Some(_) => self.budget_left().div_ceil(self.slots.len() as u64).max(1),
                None => u64::MAX,
            }
        } else {
            self.cfg.per_conn
        };
        let claim = per.min(self.budget_left());
        if self.cfg.max_transactions.is_some() {
            self.claimed += claim;
        }
        self.slots[k].claim = claim;
        match ctx.connect(fd, self.cfg.server) {
            Err(Errno::InProgress) | Ok(()) => {}
            Err(_) => {
                self.stats.errors.local += 1;
                let _ = ctx.close(fd);
                self.slots[k].phase = Phase::Idle {
                    at: now + self.cfg.retry_ns,
                };
                return;
            }
        }
        let reg = ctx.epoll_ctl(
            self.ep,
            EpollOp::Add,
            fd,
            EpollEvent {
                events: EPOLLIN | EPOLLOUT,
                data: k as u64,
            },
        );
        if reg.is_err() {
            self.stats.errors.local += 1;
        }
        let s = &mut self.slots[k];
        s.fd = Some(fd);
        s.phase = Phase::Connecting { since: now };
        s.done_here = 0;
        s.got.clear();
    }

    /// Closes slot `k`'s connection; `abort` resets it (SO_LINGER 0) instead of a FIN. The
    /// part of its claim it did not use goes back to the budget.
    fn close_slot<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, abort: bool) {
        let s = &mut self.slots[k];
        if self.cfg.max_transactions.is_some() {
            self.claimed -= s.claim.saturating_sub(s.done_here);
        }
        s.claim = 0;
        if let Some(fd) = self.slots[k].fd.take() {
            let _ = ctx.epoll_ctl(self.ep, EpollOp::Del, fd, EpollEvent::default());
            if abort {
                let _ = ctx.setsockopt(fd, SockOpt::Linger(Some(0)));
            }
            let _ = ctx.close(fd);
        }
        self.slots[k].got.clear();
    }

    /// A failed connection: aborted, and replaced after `retry_ns`.
    fn fail<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, now: u64) {
        self.probe = Probe::Done;
        self.close_slot(ctx, k, true);
        self.slots[k].phase = Phase::Idle {
            at: now + self.cfg.retry_ns,
        };
    }

    fn send<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, fd: Fd, now: u64) {
        if self.slots[k].done_here >= self.slots[k].claim {
            let left = self.budget_left();
            if self.cfg.per_conn == 0 && left > 0 {
                // A persistent connection takes another share of what is left.
                let more = left.div_ceil(self.slots.len() as u64).max(1);
                self.claimed += more;
                self.slots[k].claim += more;
            } else {
                self.close_slot(ctx, k, false);
                self.slots[k].phase = Phase::Idle { at: now };
                return;
            }
        }
        let last = self.cfg.close_last
            && self.cfg.per_conn != 0
            && self.slots[k].done_here + 1 >= self.cfg.per_conn;
        proto::request(
            &self.cfg.proto,
            self.cfg.size,
            self.cfg.first_slot + k,
            self.slots[k].txn,
            last,
            &mut self.req,
        );
        match ctx.write(fd, &self.req) {
            Ok(n) if n == self.req.len() => {
                self.stats.started += 1;
                self.stats.bytes_out += n as u64;
                self.slots[k].phase = Phase::Waiting { since: now };
            }
            _ => {
                // The send buffer takes a whole request at once (requests are small next to
                // it); anything else is a local failure.
                self.stats.errors.local += 1;
                self.fail(ctx, k, now);
            }
        }
    }

    fn ready<L: HostLink>(&mut self, ctx: &mut Context<L>, k: usize, fd: Fd, ev: u32, now: u64) {
        match self.slots[k].phase {
            Phase::Connecting { .. } => {
                if ev & (EPOLLERR | EPOLLHUP) != 0 {
                    match ctx.getsockopt(fd, SockOptName::Error) {
                        Ok(SockOpt::Error(Some(Errno::ConnRefused))) => {
                            self.stats.errors.refused += 1
                        }
                        Ok(SockOpt::Error(Some(Errno::ConnReset))) => self.stats.errors.reset += 1,
                        _ => self.stats.errors.connect_timeout += 1,
                    }
                    self.fail(ctx, k, now);
                    return;
                }
                if ev & EPOLLOUT == 0 {
                    return;
                }
                self.stats.established += 1;
                self.probe = Probe::Done;
                let _ = ctx.epoll_ctl(
                    self.ep,
                    EpollOp::Mod,
                    fd,
                    EpollEvent {
                        events: EPOLLIN,
                        data: k as u64,
                    },
                );
                self.send(ctx, k, fd, now);
            }
            Phase::Waiting { since } => self.receive(ctx, k, fd, since, now),
            Phase::Idle { .. } | Phase::Done => {
                // A connection between transactions: only an error or EOF can arrive.
                let _ = ctx.read(fd, &mut self.buf);
            }
        }
    }

    fn receive<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        k: usize,
        fd: Fd,
        since: u64,
        now: u64,
    ) {
        // End of stream right after a whole response (a server that closes after it, as
        // one answering `Connection: close` does) completes the transaction; before one, it
        // is an error.
        let mut eof = false;
        loop {
            match ctx.read(fd, &mut self.buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    self.stats.bytes_in += n as u64;
                    let s = &mut self.slots[k];
                    if s.got.len() + n > self.max_response.saturating_add(1) {
                        self.stats.errors.bad_response += 1;
                        self.fail(ctx, k, now);
                        return;
                    }
                    s.got.extend_from_slice(&self.buf[..n]);
                }
                Err(Errno::Again) => break,
                Err(Errno::ConnReset) => {
                    self.stats.errors.reset += 1;
                    self.fail(ctx, k, now);
                    return;
                }
                Err(_) => {
                    self.stats.errors.closed_early += 1;
                    self.fail(ctx, k, now);
                    return;
                }
            }
        }
        let s = &self.slots[k];
        let slot = self.cfg.first_slot + k;
        match proto::response(&self.cfg.proto, self.cfg.size, slot, s.txn, &s.got) {
            Ok(None) => {
                if eof {
                    self.stats.errors.closed_early += 1;
                    self.fail(ctx, k, now);
                }
            }
            Ok(Some(len)) => {
                if len != s.got.len() {
                    // Bytes beyond the response: the server answered what was not asked.
                    self.stats.errors.bad_response += 1;
                    self.fail(ctx, k, now);
                    return;
                }
                let _ = self.latency.record((now - since).max(1));
                self.stats.transactions += 1;
                let s = &mut self.slots[k];
                s.got.clear();
                s.txn += 1;
                s.done_here += 1;
                if eof || (self.cfg.per_conn != 0 && s.done_here >= self.cfg.per_conn) {
                    // The client closes first (TIME_WAIT stays on its side), or closes
                    // what the server ended; a replacement opens.
                    self.close_slot(ctx, k, false);
                    self.slots[k].phase = Phase::Idle { at: now };
                } else {
                    self.send(ctx, k, fd, now);
                }
            }
            Err(e) => {
                match e {
                    BadResponse::Status(_) => self.stats.errors.http_status += 1,
                    _ => self.stats.errors.bad_response += 1,
                }
                self.fail(ctx, k, now);
            }
        }
    }

    /// Closes every connection (FIN).
    pub fn close<L: HostLink>(&mut self, ctx: &mut Context<L>) {
        for k in 0..self.slots.len() {
            self.close_slot(ctx, k, false);
            self.slots[k].phase = Phase::Done;
        }
    }

    /// One line of totals: transactions, errors by kind and latency percentiles.
    pub fn summary(&self, secs: f64) -> String {
        let [p50, p90, p99, p999, max] = self.percentiles();
        let us = |v: u64| v as f64 / 1e3;
        format!(
            "transactions {} ({:.0}/s), connects {}, errors {} ({}), latency p50 {:.1} us p90 {:.1} us p99 {:.1} us p99.9 {:.1} us max {:.1} us",
            self.stats.transactions,
            self.stats.transactions as f64 / secs.max(1e-9),
            self.stats.connects,
            self.stats.errors.total(),
            self.stats.errors.describe(),
            us(p50),
            us(p90),
            us(p99),
            us(p999),
            us(max),
        )
    }
}
