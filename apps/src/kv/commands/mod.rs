//! The command engine: executes parsed requests against the keyspace and writes RESP2
//! replies (<https://redis.io/docs/reference/protocol-spec/>), with the replies and error
//! wordings of Redis 7.0 (the version Debian ships), so unmodified Redis clients and tools
//! (`redis-cli`, `redis-benchmark`, client libraries) work against it.
//!
//! Commands: PING ECHO QUIT HELLO SELECT CLIENT (ID GETNAME SETNAME SETINFO) GET SET (NX XX
//! GET EX PX EXAT PXAT KEEPTTL) SETNX GETDEL DEL UNLINK EXISTS TYPE INCR INCRBY DECR DECRBY
//! MGET MSET APPEND STRLEN EXPIRE PEXPIRE EXPIREAT PEXPIREAT (NX XX GT LT) TTL PTTL PERSIST
//! LPUSH RPUSH LPOP RPOP LLEN LRANGE DBSIZE FLUSHALL FLUSHDB INFO CONFIG GET COMMAND (COUNT
//! DOCS INFO LIST). One database (db 0).

mod admin;
mod connection;
mod keys;
mod list;
mod string;

use std::collections::{BTreeMap, VecDeque};

use admin::*;
use connection::*;
use keys::*;
use list::*;
use string::*;

use super::resp::{self, string2ll};
use super::store::{Store, Value};

/// Settings of the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// `maxmemory` in bytes (0: unlimited). Commands that may grow memory are refused with
    /// `-OOM ...` while the approximate usage is above it (Redis's `noeviction` policy).
    pub maxmemory: u64,
    /// Largest string a command may build (APPEND), Redis's `proto-max-bulk-len`.
    pub max_bulk_len: u64,
    /// TCP port reported by INFO and CONFIG GET.
    pub port: u16,
    /// Keys with a time to live examined per [`Engine::active_expire`] call.
    pub active_expire_budget: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            maxmemory: 0,
            max_bulk_len: 512 << 20,
            port: 6379,
            active_expire_budget: 20,
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
}

type Handler = fn(&mut Engine, &mut Session, &[Vec<u8>], i64, &mut Vec<u8>) -> Flow;

const WRITE: u8 = 1;
const READONLY: u8 = 2;
const DENYOOM: u8 = 4;
const FAST: u8 = 8;

struct Cmd {
    name: &'static str,
    arity: i32,
    flags: u8,
    /// First key, last key, step (COMMAND INFO).
    keys: (i32, i32, i32),
    run: Option<Handler>,
    subs: &'static [Cmd],
}

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u8,
    keys: (i32, i32, i32),
    run: Handler,
) -> Cmd {
    Cmd {
        name,
        arity,
        flags,
        keys,
        run: Some(run),
        subs: &[],
    }
}

const NOKEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);

static CLIENT_SUBS: [Cmd; 4] = [
    cmd("id", 2, FAST, NOKEYS, client_id),
    cmd("getname", 2, FAST, NOKEYS, client_getname),
    cmd("setname", 3, FAST, NOKEYS, client_setname),
    cmd("setinfo", 4, FAST, NOKEYS, client_setinfo),
];
static CONFIG_SUBS: [Cmd; 1] = [cmd("get", -3, 0, NOKEYS, config_get)];
static COMMAND_SUBS: [Cmd; 4] = [
    cmd("count", 2, 0, NOKEYS, command_count),
    cmd("docs", -2, 0, NOKEYS, command_docs),
    cmd("info", -2, 0, NOKEYS, command_info),
    cmd("list", -2, 0, NOKEYS, command_list),
];

static COMMANDS: [Cmd; 46] = [
    cmd("ping", -1, FAST, NOKEYS, ping),
    cmd("echo", 2, FAST, NOKEYS, echo),
    cmd("quit", -1, FAST, NOKEYS, quit),
    cmd("hello", -1, FAST, NOKEYS, hello),
    cmd("select", 2, FAST, NOKEYS, select),
    Cmd {
        name: "client",
        arity: -2,
        flags: 0,
        keys: NOKEYS,
        run: None,
        subs: &CLIENT_SUBS,
    },
    Cmd {
        name: "config",
        arity: -2,
        flags: 0,
        keys: NOKEYS,
        run: None,
        subs: &CONFIG_SUBS,
    },
    Cmd {
        name: "command",
        arity: -1,
        flags: 0,
        keys: NOKEYS,
        run: Some(command_all),
        subs: &COMMAND_SUBS,
    },
    cmd("get", 2, READONLY | FAST, KEY1, get),
    cmd("set", -3, WRITE | DENYOOM, KEY1, set),
    cmd("setnx", 3, WRITE | DENYOOM | FAST, KEY1, setnx),
    cmd("getdel", 2, WRITE | FAST, KEY1, getdel),
    cmd("del", -2, WRITE, (1, -1, 1), del),
    cmd("unlink", -2, WRITE | FAST, (1, -1, 1), del),
    cmd("exists", -2, READONLY | FAST, (1, -1, 1), exists),
    cmd("type", 2, READONLY | FAST, KEY1, type_cmd),
    cmd("incr", 2, WRITE | DENYOOM | FAST, KEY1, incr),
    cmd("decr", 2, WRITE | DENYOOM | FAST, KEY1, decr),
    cmd("incrby", 3, WRITE | DENYOOM | FAST, KEY1, incrby),
    cmd("decrby", 3, WRITE | DENYOOM | FAST, KEY1, decrby),
    cmd("mget", -2, READONLY | FAST, (1, -1, 1), mget),
    cmd("mset", -3, WRITE | DENYOOM, (1, -1, 2), mset),
    cmd("append", 3, WRITE | DENYOOM | FAST, KEY1, append),
    cmd("strlen", 2, READONLY | FAST, KEY1, strlen),
    cmd("expire", -3, WRITE | FAST, KEY1, expire),
    cmd("pexpire", -3, WRITE | FAST, KEY1, pexpire),
    cmd("expireat", -3, WRITE | FAST, KEY1, expireat),
    cmd("pexpireat", -3, WRITE | FAST, KEY1, pexpireat),
    cmd("ttl", 2, READONLY | FAST, KEY1, ttl),
    cmd("pttl", 2, READONLY | FAST, KEY1, pttl),
    cmd("persist", 2, WRITE | FAST, KEY1, persist),
    cmd("lpush", -3, WRITE | DENYOOM | FAST, KEY1, lpush),
    cmd("rpush", -3, WRITE | DENYOOM | FAST, KEY1, rpush),
    cmd("lpop", -2, WRITE | FAST, KEY1, lpop),
    cmd("rpop", -2, WRITE | FAST, KEY1, rpop),
    cmd("llen", 2, READONLY | FAST, KEY1, llen),
    cmd("lrange", 4, READONLY, KEY1, lrange),
    cmd("dbsize", 1, READONLY | FAST, NOKEYS, dbsize),
    cmd("flushall", -1, WRITE, NOKEYS, flushall),
    cmd("flushdb", -1, WRITE, NOKEYS, flushall),
    cmd("info", -1, 0, NOKEYS, info),
    cmd("time", 1, FAST, NOKEYS, time),
    cmd("getset", 3, WRITE | DENYOOM | FAST, KEY1, getset),
    cmd("setex", 4, WRITE | DENYOOM, KEY1, setex),
    cmd("psetex", 4, WRITE | DENYOOM, KEY1, psetex),
    cmd("msetnx", -3, WRITE | DENYOOM, (1, -1, 2), msetnx),
];

fn find<'a>(table: &'a [Cmd], name: &[u8]) -> Option<&'a Cmd> {
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
const SYNTAX: &[u8] = b"syntax error";
const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.";

/// The keyspace and the commands over it. One engine serves all connections of a server
/// (run to completion: one thread).
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    db: Store,
    next_id: u64,
    start_ms: i64,
    /// Counters.
    pub stats: EngineStats,
}

impl Engine {
    /// An empty keyspace with settings `cfg`.
    pub fn new(cfg: EngineConfig) -> Self {
        Engine {
            cfg,
            db: Store::new(),
            next_id: 1,
            start_ms: 0,
            stats: EngineStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The keyspace.
    pub fn store(&self) -> &Store {
        &self.db
    }

    /// A new session (a client connection).
    pub fn open_session(&mut self) -> Session {
        let id = self.next_id;
        self.next_id += 1;
        self.stats.connections += 1;
        self.stats.connected += 1;
        Session {
            id,
            name: None,
            lib: (None, None),
        }
    }

    /// A session ends.
    pub fn close_session(&mut self, _s: Session) {
        self.stats.connected = self.stats.connected.saturating_sub(1);
    }

    /// Notes the server's start time (Unix ms) for INFO's uptime.
    pub fn set_start(&mut self, now_ms: i64) {
        self.start_ms = now_ms;
    }

    /// One step of active expiry (Redis's `activeExpireCycle`): call it periodically.
    pub fn active_expire(&mut self, now_ms: i64) -> usize {
        self.db.active_expire(now_ms, self.cfg.active_expire_budget)
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
        if out.get(start) == Some(&b'-') {
            self.stats.errors += 1;
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
        let base = find(&COMMANDS, name);
        let (c, full) = match base {
            Some(b) if argv.len() == 1 || b.subs.is_empty() => (b, b.name.to_string()),
            Some(b) => match find(b.subs, &argv[1]) {
                Some(s) => (s, format!("{}|{}", b.name, s.name)),
                None => {
                    let mut m = b"unknown subcommand '".to_vec();
                    m.extend_from_slice(trunc(cstr(&argv[1]), 128));
                    m.extend_from_slice(b"'. Try ");
                    m.extend(cstr(name).iter().map(|b| b.to_ascii_uppercase()));
                    m.extend_from_slice(b" HELP.");
                    error_mapped(out, &m);
                    return Flow::Continue;
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
                return Flow::Continue;
            }
        };
        let n = argv.len() as i32;
        if (c.arity > 0 && c.arity != n) || n < -c.arity {
            arity_error(out, &full);
            return Flow::Continue;
        }
        if c.flags & DENYOOM != 0
            && self.cfg.maxmemory > 0
            && self.db.used_memory() as u64 > self.cfg.maxmemory
        {
            resp::error(out, OOM);
            return Flow::Continue;
        }
        match c.run {
            Some(run) => run(self, sess, argv, now, out),
            None => {
                arity_error(out, &full);
                Flow::Continue
            }
        }
    }

    /// The live value of `key`, or a WRONGTYPE reply when it is not a string. `Ok(None)`:
    /// no such key.
    fn get_str(&mut self, key: &[u8], now: i64, out: &mut Vec<u8>) -> Result<Option<Vec<u8>>, ()> {
        match self.db.get(key, now) {
            None => Ok(None),
            Some(e) => match &e.value {
                Value::Str(s) => Ok(Some(s.clone())),
                _ => {
                    resp::error(out, WRONGTYPE);
                    Err(())
                }
            },
        }
    }

    fn check_type_list(&mut self, key: &[u8], now: i64, out: &mut Vec<u8>) -> Result<bool, ()> {
        match self.db.get(key, now) {
            None => Ok(false),
            Some(e) if matches!(e.value, Value::List(_)) => Ok(true),
            Some(_) => {
                resp::error(out, WRONGTYPE);
                Err(())
            }
        }
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
mod tests {
    use super::*;

    fn run(e: &mut Engine, s: &mut Session, args: &[&[u8]]) -> Vec<u8> {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        let mut out = Vec::new();
        e.execute(s, &argv, 1_700_000_000_000, &mut out);
        out
    }

    #[test]
    fn kv_errors_word_for_word() {
        let mut e = Engine::new(EngineConfig::default());
        let mut s = e.open_session();
        let cases: &[(&[&[u8]], &[u8])] = &[
            (
                &[b"foo", b"a", b"b"],
                b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n",
            ),
            (
                &[b"foo"],
                b"-ERR unknown command 'foo', with args beginning with: \r\n",
            ),
            (
                &[b"get"],
                b"-ERR wrong number of arguments for 'get' command\r\n",
            ),
            (
                &[b"client", b"nope"],
                b"-ERR unknown subcommand 'nope'. Try CLIENT HELP.\r\n",
            ),
            (
                &[b"config", b"get"],
                b"-ERR wrong number of arguments for 'config|get' command\r\n",
            ),
            (
                &[b"client"],
                b"-ERR wrong number of arguments for 'client' command\r\n",
            ),
            (
                &[b"set", b"k", b"v", b"ex", b"0"],
                b"-ERR invalid expire time in 'set' command\r\n",
            ),
            (
                &[b"set", b"k", b"v", b"nx", b"xx"],
                b"-ERR syntax error\r\n",
            ),
            (
                &[b"incrby", b"k", b"x"],
                b"-ERR value is not an integer or out of range\r\n",
            ),
            (&[b"select", b"1"], b"-ERR DB index is out of range\r\n"),
            (
                &[b"hello", b"3"],
                b"-NOPROTO unsupported protocol version\r\n",
            ),
            (
                &[b"mset", b"a"],
                b"-ERR wrong number of arguments for 'mset' command\r\n",
            ),
        ];
        for (args, want) in cases {
            assert_eq!(
                String::from_utf8_lossy(&run(&mut e, &mut s, args)),
                String::from_utf8_lossy(want)
            );
        }
        run(&mut e, &mut s, &[b"rpush", b"l", b"x"]);
        assert_eq!(
            run(&mut e, &mut s, &[b"get", b"l"]),
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
        run(&mut e, &mut s, &[b"set", b"n", b"9223372036854775807"]);
        assert_eq!(
            run(&mut e, &mut s, &[b"incr", b"n"]),
            b"-ERR increment or decrement would overflow\r\n"
        );
        assert_eq!(e.stats.errors_by_kind.get("WRONGTYPE"), Some(&1));
        assert_eq!(e.stats.errors_by_kind.get("NOPROTO"), Some(&1));
    }

    #[test]
    fn kv_set_options_and_ttl() {
        let mut e = Engine::new(EngineConfig::default());
        let mut s = e.open_session();
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"k", b"v", b"EX", b"100"]),
            b"+OK\r\n"
        );
        assert_eq!(run(&mut e, &mut s, &[b"ttl", b"k"]), b":100\r\n");
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"k", b"w", b"keepttl", b"get"]),
            b"$1\r\nv\r\n"
        );
        assert_eq!(run(&mut e, &mut s, &[b"pttl", b"k"]), b":100000\r\n");
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"k", b"x", b"nx"]),
            b"$-1\r\n"
        );
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"k", b"x", b"xx"]),
            b"+OK\r\n"
        );
        assert_eq!(run(&mut e, &mut s, &[b"ttl", b"k"]), b":-1\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"ttl", b"nokey"]), b":-2\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"dbsize"]), b":1\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"expire", b"k", b"-1"]), b":1\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"dbsize"]), b":0\r\n");
        assert_eq!(
            run(&mut e, &mut s, &[b"config", b"get", b"save"]),
            b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn kv_maxmemory_refuses_writes() {
        let mut e = Engine::new(EngineConfig {
            maxmemory: 1000,
            ..EngineConfig::default()
        });
        let mut s = e.open_session();
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"a", &[b'x'; 2000]]),
            b"+OK\r\n"
        );
        assert_eq!(
            run(&mut e, &mut s, &[b"set", b"b", b"1"]),
            b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
        );
        assert_eq!(run(&mut e, &mut s, &[b"get", b"b"]), b"$-1\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"del", b"a"]), b":1\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"set", b"b", b"1"]), b"+OK\r\n");
    }

    #[test]
    fn kv_glob() {
        assert!(glob(b"max*", b"maxmemory"));
        assert!(glob(b"*", b"save"));
        assert!(glob(b"s?ve", b"save"));
        assert!(glob(b"[a-s]ave", b"save"));
        assert!(!glob(b"[^s]ave", b"save"));
        assert!(!glob(b"x*", b"save"));
    }
}
