//! The command engine: executes parsed requests against the keyspace and writes RESP2
//! replies (<https://redis.io/docs/reference/protocol-spec/>), with the replies and error
//! wordings of Redis 7.0 (the version Debian ships), so unmodified Redis clients and tools
//! (`redis-cli`, `redis-benchmark`, client libraries) work against it.
//!
//! The command table is in `table.rs` (names, arities, flags and key positions as Redis 7.0's
//! `COMMAND INFO` gives them); one module per command family: strings, keys, lists, hashes,
//! sets, sorted sets, transactions (MULTI/EXEC/WATCH), connection and server commands;
//! `resp3.rs` rewrites the replies of sessions that chose RESP3 with `HELLO 3`.
//! Databases: [`EngineConfig::databases`] (16 by default, as Redis), chosen per session with
//! SELECT. docs/redis-compat.md lists what is supported and what differs from Redis.

mod access;
mod admin;
mod bits;
mod blocking;
mod client;
mod config;
mod connection;
mod float;
mod hash;
mod keys;
mod keyspace;
mod list;
mod list_edit;
mod mpop;
mod multi;
mod pubsub;
mod resp3;
mod set;
mod string;
mod string_range;
mod table;
mod zset;
mod zset_ops;
mod zset_range;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use super::idmap::IdMap;

pub use pubsub::Peer;

use access::*;
use admin::*;
use bits::*;
use blocking::*;
use client::*;
use config::*;
use connection::*;
use float::*;
use hash::*;
use keys::*;
use keyspace::*;
use list::*;
use list_edit::*;
use mpop::*;
use multi::*;
use pubsub::*;
use resp3::*;
use set::*;
use string::*;
use string_range::*;
use table::*;
use zset::*;
use zset_ops::*;
use zset_range::*;

use super::resp::{self, string2ll};
use super::store::{Hash, List, Set, Store, Value, ZSet};

/// Settings of the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// `maxmemory` in bytes (0: unlimited). Commands that may grow memory are refused with
    /// `-OOM ...` while the approximate usage is above it (Redis's `noeviction` policy).
    pub maxmemory: u64,
    /// Largest string a command may build (APPEND, SETRANGE), Redis's `proto-max-bulk-len`.
    pub max_bulk_len: u64,
    /// TCP port reported by INFO and CONFIG GET.
    pub port: u16,
    /// Keys with a time to live examined per [`Engine::active_expire`] call (per database).
    pub active_expire_budget: usize,
    /// Number of databases (SELECT 0 to `databases - 1`), Redis's `databases` (16).
    pub databases: usize,
    /// Connections held at most (Redis's `maxclients`); the server refuses more.
    pub maxclients: usize,
    /// Seconds a client may stay idle before the server closes it (Redis's `timeout`; 0:
    /// never).
    pub timeout_s: u64,
    /// The default user's password (Redis's `requirepass`): while set, a new connection
    /// must AUTH before other commands.
    pub requirepass: Option<Vec<u8>>,
    /// Most bytes buffered for one connection's input (Redis's `client-query-buffer-limit`).
    pub max_query_buffer: usize,
    /// The thresholds OBJECT ENCODING reports against.
    pub encodings: Encodings,
    /// `client-output-buffer-limit`'s pubsub class: hard limit, soft limit (bytes, 0: none)
    /// and seconds over the soft limit before a subscriber is disconnected.
    pub pubsub_limit: (u64, u64, u64),
}

/// Redis 7.0's small-encoding thresholds (`hash-max-listpack-entries`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encodings {
    /// `hash-max-listpack-entries` (512: Redis 7.0's compiled-in default; its sample
    /// redis.conf says 128).
    pub hash_entries: usize,
    /// `hash-max-listpack-value` (64).
    pub hash_value: usize,
    /// `set-max-intset-entries` (512).
    pub set_intset: usize,
    /// `zset-max-listpack-entries` (128).
    pub zset_entries: usize,
    /// `zset-max-listpack-value` (64).
    pub zset_value: usize,
}

impl Default for Encodings {
    fn default() -> Self {
        Encodings {
            hash_entries: 512,
            hash_value: 64,
            set_intset: 512,
            zset_entries: 128,
            zset_value: 64,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            maxmemory: 0,
            max_bulk_len: 512 << 20,
            port: 6379,
            active_expire_budget: 20,
            databases: 16,
            maxclients: 10_000,
            timeout_s: 0,
            requirepass: None,
            max_query_buffer: 1 << 30,
            encodings: Encodings::default(),
            pubsub_limit: (32 << 20, 8 << 20, 60),
        }
    }
}

/// The Redis version the engine reports and whose behaviour it follows.
pub const REDIS_VERSION: &str = "7.0.15";

/// What the connection should do after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next request.
    Continue,
    /// Send what was replied so far, then close (QUIT, protocol errors, rejected input).
    Close,
}

/// Per-connection state the commands see.
#[derive(Clone, Debug)]
pub struct Session {
    /// Client id (`CLIENT ID`).
    pub id: u64,
    /// Client name (`CLIENT SETNAME`).
    pub name: Option<Vec<u8>>,
    /// Library name and version (`CLIENT SETINFO`).
    pub lib: (Option<Vec<u8>>, Option<Vec<u8>>),
    /// The selected database (SELECT).
    pub db: usize,
    /// The protocol version HELLO chose: 2 (RESP2, the default) or 3 (RESP3).
    pub proto: u8,
    /// Whether the client may run commands other than AUTH and HELLO: true from the start
    /// while no `requirepass` is set (as Redis's `c->authenticated`), else after AUTH.
    pub authenticated: bool,
    /// The open transaction (between MULTI and EXEC/DISCARD).
    multi: Option<Multi>,
    /// Watched keys: (database, key, version when watched).
    watched: Vec<(usize, Vec<u8>, u64)>,
    /// Channels subscribed, in subscription order.
    channels: Vec<Vec<u8>>,
    /// Patterns subscribed, in subscription order.
    patterns: Vec<Vec<u8>>,
    /// CLIENT REPLY: on, off, or skip the next command's reply.
    reply: ReplyMode,
}

/// CLIENT REPLY's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplyMode {
    On,
    Off,
    Skip,
    /// SKIP was the last command: the next reply is dropped.
    SkipNext,
}

impl Session {
    fn new(id: u64) -> Self {
        Session {
            id,
            name: None,
            lib: (None, None),
            db: 0,
            proto: 2,
            authenticated: true,
            multi: None,
            watched: Vec::new(),
            channels: Vec::new(),
            patterns: Vec::new(),
            reply: ReplyMode::On,
        }
    }

    /// Whether the client has subscriptions (channels or patterns).
    pub fn subscribed(&self) -> bool {
        self.subscriptions() > 0
    }

    /// Whether a transaction is open (MULTI was called).
    pub fn in_multi(&self) -> bool {
        self.multi.is_some()
    }
}

/// INFO commandstats' counters of one command.
#[derive(Clone, Copy, Debug, Default)]
struct CmdStat {
    calls: u64,
    rejected: u64,
    failed: u64,
}

/// Counters of the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Requests executed (including refused ones).
    pub commands: u64,
    /// Error replies sent.
    pub errors: u64,
    /// Error replies by code (`ERR`, `WRONGTYPE`, `OOM`, `NOPROTO`, ...), as Redis's
    /// `errorstat_*`.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Sessions opened.
    pub connections: u64,
    /// Sessions currently open.
    pub connected: u64,
    /// Connections ended by a protocol error or the query buffer limit.
    pub protocol_errors: u64,
    /// Subscribers disconnected past `client-output-buffer-limit pubsub`.
    pub output_limit_disconnects: u64,
    /// `commands` since the engine started: CONFIG RESETSTAT leaves it (what a server
    /// sharing the engine counts as its own by difference).
    pub commands_total: u64,
    /// `errors` since the engine started: CONFIG RESETSTAT leaves it.
    pub errors_total: u64,
}

/// The command of `table` named `name` (any case): a hash lookup in the top-level table
/// (every request does one), a scan of the few subcommands.
fn find<'a>(table: &'a [Cmd], name: &[u8]) -> Option<&'a Cmd> {
    if std::ptr::eq(table, COMMANDS) {
        return find_command(name);
    }
    table
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// The bytes of `a` up to its first NUL: what Redis's C-string comparisons and `%s`
/// formatting see.
fn cstr(a: &[u8]) -> &[u8] {
    match a.iter().position(|&b| b == 0) {
        Some(i) => &a[..i],
        None => a,
    }
}

/// `strcasecmp(a, s) == 0`.
fn is(a: &[u8], s: &str) -> bool {
    cstr(a).eq_ignore_ascii_case(s.as_bytes())
}

fn trunc(a: &[u8], n: usize) -> &[u8] {
    &a[..a.len().min(n)]
}

const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INTEGER: &[u8] = b"value is not an integer or out of range";
const NOT_FLOAT: &[u8] = b"value is not a valid float";
const SYNTAX: &[u8] = b"syntax error";
const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.";
const OUT_OF_RANGE_POSITIVE: &[u8] = b"value is out of range, must be positive";

/// The keyspace and the commands over it. One engine serves all connections of a server,
/// or of several servers through `keyspace::SharedKeyspace`; either way commands run to
/// completion, one at a time.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    /// The database of the session being served (index `cur`).
    db: Store,
    /// All databases; slot `cur` is an empty stand-in while its store is in `db`.
    dbs: Vec<Store>,
    cur: usize,
    /// EXEC is running its queue (memory was checked once, for the whole transaction).
    in_exec: bool,
    next_id: u64,
    start_ms: i64,
    /// CONFIG's parameters.
    params: Params,
    /// What the engine keeps of each open connection (outbox, CLIENT LIST's fields).
    peers: IdMap<u64, Peer>,
    /// Subscriptions.
    pubsub: PubSub,
    /// Clients with pushes waiting or to be closed (see [`Engine::take_dirty`]).
    dirty: Vec<u64>,
    /// Clients waiting in blocking commands.
    waits: Waits,
    /// Calls per command (INFO commandstats), keyed by the command's table entry.
    cmdstats: IdMap<usize, (String, CmdStat)>,
    /// Counters.
    pub stats: EngineStats,
}

impl Engine {
    /// An empty keyspace with settings `cfg`.
    pub fn new(mut cfg: EngineConfig) -> Self {
        cfg.databases = cfg.databases.max(1);
        let params = Params::new(&cfg);
        Engine {
            params,
            peers: IdMap::default(),
            pubsub: PubSub::default(),
            dirty: Vec::new(),
            waits: Waits::default(),
            cmdstats: IdMap::default(),
            dbs: (0..cfg.databases).map(|_| Store::new()).collect(),
            cfg,
            db: Store::new(),
            cur: 0,
            in_exec: false,
            next_id: 1,
            start_ms: 0,
            stats: EngineStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Database 0.
    pub fn store(&self) -> &Store {
        self.store_at(0)
    }

    /// Database `i` (`i < databases`).
    pub fn store_at(&self, i: usize) -> &Store {
        if i == self.cur {
            &self.db
        } else {
            &self.dbs[i]
        }
    }

    fn store_mut(&mut self, i: usize) -> &mut Store {
        if i == self.cur {
            &mut self.db
        } else {
            &mut self.dbs[i]
        }
    }

    /// Makes database `i` the current one (`db`).
    fn select_db(&mut self, i: usize) {
        if i != self.cur && i < self.dbs.len() {
            std::mem::swap(&mut self.db, &mut self.dbs[self.cur]);
            std::mem::swap(&mut self.db, &mut self.dbs[i]);
            self.cur = i;
        }
    }

    /// Approximate bytes used by all databases.
    pub fn used_memory(&self) -> usize {
        self.db.used_memory() + self.dbs.iter().map(|d| d.used_memory()).sum::<usize>()
    }

    /// A new session (a client connection).
    pub fn open_session(&mut self) -> Session {
        let id = self.next_id;
        self.next_id += 1;
        self.stats.connections += 1;
        self.stats.connected += 1;
        let mut s = Session::new(id);
        s.authenticated = self.cfg.requirepass.is_none();
        self.peers.insert(
            id,
            Peer {
                proto: 2,
                multi: -1,
                fd: -1,
                created_ms: self.start_ms,
                last_ms: self.start_ms,
                ..Peer::default()
            },
        );
        s
    }

    /// A session ends (its watches go).
    pub fn close_session(&mut self, mut s: Session) {
        self.unwatch_all(&mut s);
        self.unsubscribe_all(&mut s);
        self.forget_blocked(s.id);
        self.peers.remove(&s.id);
        self.stats.connected = self.stats.connected.saturating_sub(1);
    }

    /// Notes the server's start time (Unix ms) for INFO's uptime.
    pub fn set_start(&mut self, now_ms: i64) {
        self.start_ms = now_ms;
    }

    /// One step of active expiry (Redis's `activeExpireCycle`) over every database: call it
    /// periodically. Returns the keys deleted.
    pub fn active_expire(&mut self, now_ms: i64) -> usize {
        let budget = self.cfg.active_expire_budget;
        let mut n = self.db.active_expire(now_ms, budget);
        for d in &mut self.dbs {
            n += d.active_expire(now_ms, budget);
        }
        n
    }

    /// Executes one request `argv` (non-empty) for `sess` at time `now_ms` (Unix ms), appending
    /// the reply to `out`.
    pub fn execute(
        &mut self,
        sess: &mut Session,
        argv: &[Vec<u8>],
        now_ms: i64,
        out: &mut Vec<u8>,
    ) -> Flow {
        let start = out.len();
        let flow = self.dispatch(sess, argv, now_ms, out);
        self.stats.commands += 1;
        self.stats.commands_total += 1;
        self.after_command(sess, argv, now_ms, out, start);
        // As Redis's handleClientsBlockedOnKeys: after a whole command, EXEC included, not
        // between the commands of a transaction.
        if !self.in_exec {
            self.serve_blocked(now_ms);
        }
        if out.get(start) == Some(&b'-') {
            self.stats.errors += 1;
            self.stats.errors_total += 1;
            let rest = &out[start + 1..];
            let code = rest
                .iter()
                .take(32)
                .position(|&b| b == b' ')
                .map(|i| String::from_utf8_lossy(&rest[..i]).into_owned())
                .unwrap_or_else(|| "ERR".into());
            *self.stats.errors_by_kind.entry(code).or_default() += 1;
        }
        flow
    }

    /// The command `argv` names, with its full name (`config|get`); writes the unknown
    /// command / subcommand / arity error and returns `None` when there is none.
    fn lookup(argv: &[Vec<u8>], out: &mut Vec<u8>) -> Option<(&'static Cmd, Cow<'static, str>)> {
        let name = argv.first()?;
        let base = find(COMMANDS, name);
        let (c, full) = match base {
            Some(b) if argv.len() == 1 || b.subs.is_empty() => (b, Cow::Borrowed(b.name)),
            Some(b) => match find(b.subs, &argv[1]) {
                Some(s) => (s, Cow::Owned(format!("{}|{}", b.name, s.name))),
                None => {
                    let mut m = b"unknown subcommand '".to_vec();
                    m.extend_from_slice(trunc(cstr(&argv[1]), 128));
                    m.extend_from_slice(b"'. Try ");
                    m.extend(cstr(name).iter().map(|b| b.to_ascii_uppercase()));
                    m.extend_from_slice(b" HELP.");
                    error_mapped(out, &m);
                    return None;
                }
            },
            None => {
                let mut args = Vec::new();
                for a in &argv[1..] {
                    if args.len() >= 128 {
                        break;
                    }
                    let room = 128 - args.len();
                    args.push(b'\'');
                    args.extend_from_slice(trunc(cstr(a), room));
                    args.extend_from_slice(b"' ");
                }
                let mut m = b"unknown command '".to_vec();
                m.extend_from_slice(trunc(cstr(name), 128));
                m.extend_from_slice(b"', with args beginning with: ");
                m.extend_from_slice(&args);
                error_mapped(out, &m);
                return None;
            }
        };
        let n = argv.len() as i32;
        if (c.arity > 0 && c.arity != n) || n < -c.arity || matches!(c.run, Run::Subs) {
            arity_error(out, &full);
            return None;
        }
        Some((c, full))
    }

    /// Signals the keys a write command names (its key positions; LMPOP-style commands and
    /// the STORE forms by their destination or keys) to the waiting clients.
    fn signal_written(&mut self, c: &Cmd, argv: &[Vec<u8>], db: usize) {
        let (first, last, step) = c.keys;
        if first <= 0 {
            // Keys after a numkeys argument, or none: every argument may be a key.
            self.signal_keys(db, argv[1..].iter());
            return;
        }
        let n = argv.len() as i32;
        let last = if last < 0 { n + last } else { last.min(n - 1) };
        let keys = (first..=last)
            .step_by(step.max(1) as usize)
            .filter_map(|i| argv.get(i as usize));
        self.signal_keys(db, keys);
    }

    /// A command refused before it ran (NOAUTH, OOM, pubsub context): INFO commandstats'
    /// rejected_calls.
    fn count_rejected(&mut self, key: usize, full: &str) {
        self.cmdstats
            .entry(key)
            .or_insert_with(|| (full.to_string(), CmdStat::default()))
            .1
            .rejected += 1;
    }

    fn over_maxmemory(&self) -> bool {
        self.cfg.maxmemory > 0 && self.used_memory() as u64 > self.cfg.maxmemory
    }

    fn dispatch(
        &mut self,
        sess: &mut Session,
        argv: &[Vec<u8>],
        now: i64,
        out: &mut Vec<u8>,
    ) -> Flow {
        let Some(name) = argv.first() else {
            return Flow::Continue;
        };
        // Cross-protocol scripting guard (Redis's securityWarningCommand): an HTTP request
        // is not answered.
        if is(name, "host:") || is(name, "post") {
            return Flow::Close;
        }
        // A command refused before it runs makes an open transaction fail at EXEC (Redis's
        // flagTransaction).
        let Some((c, full)) = Self::lookup(argv, out) else {
            sess.flag_transaction();
            return Flow::Continue;
        };
        if let Some(p) = self.peers.get_mut(&sess.id) {
            p.cmd.clear();
            p.cmd.push_str(&full);
        }
        let stat_key = c as *const Cmd as usize;
        // Redis's processCommand: without authentication only AUTH, HELLO and QUIT run.
        if !sess.authenticated && !matches!(c.name, "auth" | "hello" | "quit") {
            resp::error(out, b"-NOAUTH Authentication required.");
            sess.flag_transaction();
            self.count_rejected(stat_key, &full);
            return Flow::Continue;
        }
        if c.flags & DENYOOM != 0 && !self.in_exec && self.over_maxmemory() {
            resp::error(out, OOM);
            sess.flag_transaction();
            self.count_rejected(stat_key, &full);
            return Flow::Continue;
        }
        // Redis 7.0: a RESP2 client with subscriptions only runs these.
        if sess.proto == 2
            && sess.subscriptions() > 0
            && !matches!(
                c.name,
                "ping" | "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "quit"
            )
        {
            resp::error_fmt(
                out,
                format!(
                    "Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / \
                     QUIT / RESET are allowed in this context"
                )
                .as_bytes(),
            );
            sess.flag_transaction();
            self.count_rejected(stat_key, &full);
            return Flow::Continue;
        }
        if sess.in_multi()
            && !matches!(
                full.as_ref(),
                "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
            )
        {
            sess.queue(argv.to_vec(), c.flags);
            out.extend_from_slice(b"+QUEUED\r\n");
            return Flow::Continue;
        }
        self.select_db(sess.db);
        let start = out.len();
        let flow = match c.run {
            Run::Full(run) => run(self, sess, argv, now, out),
            Run::Plain(run) => {
                run(self, argv, now, out);
                Flow::Continue
            }
            Run::Subs => Flow::Continue,
        };
        if c.flags & WRITE != 0 && self.blocked_count() > 0 {
            self.signal_written(c, argv, sess.db);
        }
        let st = &mut self
            .cmdstats
            .entry(stat_key)
            .or_insert_with(|| (full.to_string(), CmdStat::default()))
            .1;
        st.calls += 1;
        if out.get(start) == Some(&b'-') {
            st.failed += 1;
        }
        // EXEC's elements were converted as they ran; its own null is converted here.
        let pushes = matches!(
            c.name,
            "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe"
        );
        if sess.proto == 3 && !pushes && (full != "exec" || out[start..] == *b"*-1\r\n") {
            to_resp3(&full, argv, out, start);
        }
        flow
    }

    /// The live value of `key`, or a WRONGTYPE reply when it is not a string. `Ok(None)`:
    /// no such key.
    fn get_str(&mut self, key: &[u8], now: i64, out: &mut Vec<u8>) -> Result<Option<Vec<u8>>, ()> {
        Ok(self.read::<Vec<u8>>(key, now, out)?.cloned())
    }

    fn check_type_list(&mut self, key: &[u8], now: i64, out: &mut Vec<u8>) -> Result<bool, ()> {
        Ok(self.read::<List>(key, now, out)?.is_some())
    }
}

fn error_mapped(out: &mut Vec<u8>, m: &[u8]) {
    let clean: Vec<u8> = m
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect();
    resp::error(out, &clean);
}

fn arity_error(out: &mut Vec<u8>, full: &str) {
    resp::error_fmt(
        out,
        format!("wrong number of arguments for '{full}' command").as_bytes(),
    );
}

fn expire_time_error(out: &mut Vec<u8>, cmd: &str) {
    resp::error_fmt(
        out,
        format!("invalid expire time in '{cmd}' command").as_bytes(),
    );
}

fn parse_i64(a: &[u8], out: &mut Vec<u8>) -> Result<i64, ()> {
    string2ll(a).ok_or_else(|| resp::error(out, NOT_INTEGER))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_admin;
#[cfg(test)]
mod tests_types;
