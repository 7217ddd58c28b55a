//! `nicemu kv`: an in-memory key-value server that speaks the Redis protocol (RESP2, and
//! RESP3 after `HELLO 3`, <https://redis.io/docs/reference/protocol-spec/>) on the host
//! stack, so that unmodified Redis clients (`redis-cli`, `redis-benchmark`, client
//! libraries) can drive nicemu with a key-value workload, with and without AccelTCP's
//! offloads.
//!
//! - [`resp`]: the sans-I/O request parser (multibulk and inline, pipelined, bounded) and the
//!   reply encoder;
//! - [`store`]: a database: the keyspace with lazy and active expiry, memory accounting and
//!   versions of watched keys;
//! - [`types`]: the collection values (list, hash, set, sorted set) that count their bytes;
//! - [`commands`]: the command engine, word for word with Redis 7.0's replies and errors:
//!   strings, keys, lists, hashes, sets, sorted sets, 16 databases, transactions
//!   (docs/redis-compat.md lists what is supported and what differs);
//! - [`Connection`]: parser + session of one client, the unit both the TCP server and the
//!   differential test drive;
//! - [`server`]: [`server::KvServer`], the epoll server over `hoststack::Context`;
//! - [`keyspace`]: one engine shared by the servers of several host contexts.

pub mod commands;
pub mod idmap;
pub mod keyspace;
pub mod resp;
pub mod server;
pub mod store;
pub mod types;

#[cfg(test)]
mod proptests;

pub use commands::{Engine, EngineConfig, EngineStats, Flow, Session};
pub use resp::{ProtoError, ProtoLimits};

/// One client connection without I/O: bytes in, replies out.
#[derive(Debug)]
pub struct Connection {
    parser: resp::Parser,
    session: Session,
    closing: bool,
}

/// What [`Connection::run`] stopped on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Every complete request was executed; more input is needed.
    NeedInput,
    /// The output reached the given bound: send some before running again.
    OutputFull,
    /// The connection is to be closed once `out` is sent (QUIT, a protocol error).
    Close,
}

impl Connection {
    /// A connection of `engine` with protocol limits `limits`.
    pub fn new(engine: &mut Engine, limits: ProtoLimits) -> Self {
        Connection {
            parser: resp::Parser::new(limits),
            session: engine.open_session(),
            closing: false,
        }
    }

    /// The session (client id, name).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether Redis's `timeout` may close this connection when idle (not while it is
    /// subscribed to channels or blocked).
    pub fn may_time_out(&self, engine: &Engine) -> bool {
        !self.session.subscribed() && !engine.blocked_on(self.session.id)
    }

    /// Bytes buffered on the input side (bounded by [`ProtoLimits::max_query_buffer`]).
    pub fn buffered(&self) -> usize {
        self.parser.buffered()
    }

    /// How many more input bytes may be fed now.
    pub fn room(&self) -> usize {
        if self.closing {
            0
        } else {
            self.parser.room()
        }
    }

    /// Whether the connection is to be closed (after its pending output).
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// Takes received bytes. Past the query buffer limit the connection is to be closed
    /// (Redis closes such clients without a reply).
    pub fn feed(&mut self, engine: &mut Engine, data: &[u8]) -> RunState {
        if self.closing {
            return RunState::Close;
        }
        if self.parser.feed(data).is_err() {
            engine.stats.protocol_errors += 1;
            self.closing = true;
            return RunState::Close;
        }
        RunState::NeedInput
    }

    /// Executes complete requests at time `now_ms` (Unix ms), appending replies to `out`,
    /// until the input runs dry, `out` holds `max_out` bytes or more, or the connection is
    /// to close. A protocol error appends Redis's error reply and closes.
    pub fn run(
        &mut self,
        engine: &mut Engine,
        now_ms: i64,
        out: &mut Vec<u8>,
        max_out: usize,
    ) -> RunState {
        if self.closing {
            return RunState::Close;
        }
        let (bulk, qbuf) = (
            engine.config().max_bulk_len,
            engine.config().max_query_buffer,
        );
        let l = self.parser.limits();
        if l.max_bulk_len != bulk || l.max_query_buffer != qbuf {
            self.parser.set_limits(bulk, qbuf);
        }
        let id = self.session.id;
        loop {
            // Messages from other clients first: they were sent before what comes next.
            engine.drain_outbox(id, out);
            if engine.killed(id) {
                self.closing = true;
                return RunState::Close;
            }
            if out.len() >= max_out {
                return RunState::OutputFull;
            }
            // A client in a blocking command runs nothing more until it is served.
            if engine.blocked_on(id) {
                return RunState::NeedInput;
            }
            match self.parser.next_request() {
                Ok(Some(argv)) => {
                    let flow = engine.execute(&mut self.session, &argv, now_ms, out);
                    self.parser.recycle(argv);
                    if flow == Flow::Close || engine.killed(id) {
                        self.closing = true;
                        return RunState::Close;
                    }
                }
                Ok(None) => return RunState::NeedInput,
                Err(e) => {
                    engine.stats.protocol_errors += 1;
                    if let Some(r) = e.reply() {
                        engine.stats.errors += 1;
                        engine.stats.errors_total += 1;
                        *engine.stats.errors_by_kind.entry("ERR".into()).or_default() += 1;
                        out.extend_from_slice(&r);
                    }
                    self.closing = true;
                    return RunState::Close;
                }
            }
        }
    }

    /// [`Connection::feed`] then [`Connection::run`] without an output bound: every reply
    /// `data` completes goes to `out`.
    pub fn input(
        &mut self,
        engine: &mut Engine,
        data: &[u8],
        now_ms: i64,
        out: &mut Vec<u8>,
    ) -> RunState {
        if self.feed(engine, data) == RunState::Close {
            return RunState::Close;
        }
        self.run(engine, now_ms, out, usize::MAX)
    }

    /// Ends the session.
    pub fn close(self, engine: &mut Engine) {
        engine.close_session(self.session);
    }
}

/// The current Unix time in milliseconds (for drivers that run on the wall clock).
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
