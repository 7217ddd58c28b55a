//! CONFIG GET / SET / RESETSTAT (Redis 7.0 `config.c`): a table of the parameters nicemu
//! knows, with Redis's types, ranges, aliases (`hash-max-ziplist-entries` for
//! `hash-max-listpack-entries`, ...) and error wordings. The parameters that change what the
//! server does (maxmemory, maxclients, timeout, requirepass, proto-max-bulk-len,
//! client-query-buffer-limit, client-output-buffer-limit's pubsub class, the encoding
//! thresholds OBJECT ENCODING reports) are applied to [`EngineConfig`]; the others are
//! accepted, checked and stored, so that CONFIG GET reads back what was set.

use super::*;

/// How a parameter's value is checked and printed.
#[derive(Clone, Copy)]
enum Kind {
    /// `yes` / `no`.
    Bool,
    /// An integer within bounds.
    Int(i64, i64),
    /// A memory value (`1mb`, `1k`, `100`) within bounds, printed in bytes.
    Mem(u64, u64),
    /// One of the names.
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// `save`: pairs of seconds and changes.
    Save,
    /// `notify-keyspace-events`: class characters.
    Events,
    /// `client-output-buffer-limit`: class, hard, soft, seconds quadruples.
    OutputLimits,
    /// Fixed at startup.
    Immutable,
}

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
}

const fn p(name: &'static str, alias: Option<&'static str>, kind: Kind, d: &'static str) -> Param {
    Param {
        name,
        alias,
        kind,
        default: d,
    }
}

const IMAX: i64 = i32::MAX as i64;
const LMAX: i64 = i64::MAX;
const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Every parameter (values of the engine-dependent ones are filled in by [`Params::new`]).
static PARAMS: &[Param] = &[
    p("save", None, Kind::Save, ""),
    p("appendonly", None, Kind::Bool, "no"),
    p(
        "appendfsync",
        None,
        Kind::Enum(&["always", "everysec", "no"]),
        "everysec",
    ),
    p("appendfilename", None, Kind::Immutable, "appendonly.aof"),
    p("maxmemory", None, Kind::Mem(0, u64::MAX), "0"),
    p("maxmemory-policy", None, Kind::Enum(POLICIES), "noeviction"),
    p("maxmemory-samples", None, Kind::Int(1, IMAX), "5"),
    p("maxclients", None, Kind::Int(1, u32::MAX as i64), "10000"),
    p("timeout", None, Kind::Int(0, IMAX), "0"),
    p("requirepass", None, Kind::Str, ""),
    p("masterauth", None, Kind::Str, ""),
    p("masteruser", None, Kind::Str, ""),
    p("notify-keyspace-events", None, Kind::Events, ""),
    p(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        Kind::Int(0, LMAX),
        "512",
    ),
    p(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        Kind::Mem(0, LMAX as u64),
        "64",
    ),
    p("set-max-intset-entries", None, Kind::Int(0, LMAX), "512"),
    p(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        Kind::Int(0, LMAX),
        "128",
    ),
    p(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        Kind::Mem(0, LMAX as u64),
        "64",
    ),
    p(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        Kind::Int(i32::MIN as i64, IMAX),
        "-2",
    ),
    p("list-compress-depth", None, Kind::Int(0, IMAX), "0"),
    p(
        "proto-max-bulk-len",
        None,
        Kind::Mem(1 << 20, LMAX as u64),
        "536870912",
    ),
    p(
        "client-query-buffer-limit",
        None,
        Kind::Mem(1 << 20, LMAX as u64),
        "1073741824",
    ),
    p(
        "client-output-buffer-limit",
        None,
        Kind::OutputLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
    ),
    p(
        "lua-time-limit",
        Some("busy-reply-threshold"),
        Kind::Int(0, LMAX),
        "5000",
    ),
    p(
        "min-replicas-to-write",
        Some("min-slaves-to-write"),
        Kind::Int(0, IMAX),
        "0",
    ),
    p(
        "min-replicas-max-lag",
        Some("min-slaves-max-lag"),
        Kind::Int(0, IMAX),
        "10",
    ),
    p(
        "replica-read-only",
        Some("slave-read-only"),
        Kind::Bool,
        "yes",
    ),
    p(
        "replica-serve-stale-data",
        Some("slave-serve-stale-data"),
        Kind::Bool,
        "yes",
    ),
    p(
        "rdb-key-save-delay",
        None,
        Kind::Int(i32::MIN as i64, IMAX),
        "0",
    ),
    p("hz", None, Kind::Int(0, IMAX), "10"),
    p("dynamic-hz", None, Kind::Bool, "yes"),
    p("active-expire-effort", None, Kind::Int(1, 10), "1"),
    p("lazyfree-lazy-eviction", None, Kind::Bool, "no"),
    p("lazyfree-lazy-expire", None, Kind::Bool, "no"),
    p("lazyfree-lazy-server-del", None, Kind::Bool, "no"),
    p("lazyfree-lazy-user-del", None, Kind::Bool, "no"),
    p("lazyfree-lazy-user-flush", None, Kind::Bool, "no"),
    p("latency-tracking", None, Kind::Bool, "yes"),
    p(
        "slowlog-log-slower-than",
        None,
        Kind::Int(-1, LMAX),
        "10000",
    ),
    p("slowlog-max-len", None, Kind::Int(0, LMAX), "128"),
    p(
        "loglevel",
        None,
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        "notice",
    ),
    p("databases", None, Kind::Immutable, "16"),
    p("port", None, Kind::Immutable, "6379"),
];

/// The values of [`PARAMS`], index for index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Params(Vec<String>);

impl Params {
    /// The defaults, with the values `cfg` sets.
    pub(super) fn new(cfg: &EngineConfig) -> Self {
        let mut v: Vec<String> = PARAMS.iter().map(|p| p.default.to_string()).collect();
        let mut put = |n: &str, x: String| v[index(n).unwrap_or(0)] = x;
        put("maxmemory", cfg.maxmemory.to_string());
        put("maxclients", cfg.maxclients.to_string());
        put("databases", cfg.databases.to_string());
        put("port", cfg.port.to_string());
        put("proto-max-bulk-len", cfg.max_bulk_len.to_string());
        put(
            "client-query-buffer-limit",
            cfg.max_query_buffer.to_string(),
        );
        Params(v)
    }
}

fn index(name: &str) -> Option<usize> {
    PARAMS.iter().position(|p| p.name == name)
}

/// The parameter named `n` (name or alias, any case).
fn lookup_param(n: &[u8]) -> Option<usize> {
    PARAMS.iter().position(|p| {
        p.name.as_bytes().eq_ignore_ascii_case(n)
            || p.alias
                .is_some_and(|a| a.as_bytes().eq_ignore_ascii_case(n))
    })
}

/// Redis's `memtoull`: digits and an optional unit (b, k, kb, m, mb, g, gb; k = 1000,
/// kb = 1024), no sign.
pub(super) fn parse_memory(s: &[u8]) -> Option<u64> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let unit = std::str::from_utf8(&s[digits..]).ok()?.to_ascii_lowercase();
    let mul: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n: u64 = std::str::from_utf8(&s[..digits]).ok()?.parse().ok()?;
    n.checked_mul(mul)
}

/// The keyspace event classes in Redis's order (`keyspaceEventsFlagsToString`); `A` is
/// `g$lshzxetd`.
const EVENT_CLASSES: &[u8] = b"g$lshzxetd";

fn events_to_string(v: &[u8]) -> Option<String> {
    let mut set = std::collections::BTreeSet::new();
    for &c in v {
        match c {
            b'A' => set.extend(EVENT_CLASSES.iter().copied()),
            b'g' | b'$' | b'l' | b's' | b'h' | b'z' | b'x' | b'e' | b'K' | b'E' | b't' | b'm'
            | b'd' | b'n' => {
                set.insert(c);
            }
            _ => return None,
        }
    }
    let mut s = String::new();
    if EVENT_CLASSES.iter().all(|c| set.contains(c)) {
        s.push('A');
    } else {
        for &c in EVENT_CLASSES.iter().chain(b"n") {
            if set.contains(&c) {
                s.push(c as char);
            }
        }
    }
    for c in [b'K', b'E', b'm'] {
        if set.contains(&c) {
            s.push(c as char);
        }
    }
    Some(s)
}

/// Parses `client-output-buffer-limit`'s value over `old`: the classes given are replaced.
fn output_limits(v: &[u8], old: &str) -> Result<String, &'static str> {
    let words: Vec<&[u8]> = v.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.");
    }
    let mut classes: Vec<(String, [u64; 3])> = Vec::new();
    let olds: Vec<&str> = old.split(' ').collect();
    for c in olds.chunks(4) {
        let n = |i: usize| c[i].parse().unwrap_or(0);
        classes.push((c[0].to_string(), [n(1), n(2), n(3)]));
    }
    for w in words.chunks(4) {
        let class = String::from_utf8_lossy(w[0]).to_ascii_lowercase();
        let class = match class.as_str() {
            "normal" | "pubsub" => class,
            "slave" | "replica" => "slave".into(),
            _ => return Err("Invalid client class specified in buffer limit configuration."),
        };
        let hard = parse_memory(w[1]);
        let soft = parse_memory(w[2]);
        let secs = string2ll(w[3]).filter(|&s| s >= 0);
        let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            );
        };
        if let Some(e) = classes.iter_mut().find(|(n, _)| *n == class) {
            e.1 = [hard, soft, secs as u64];
        }
    }
    Ok(classes
        .iter()
        .map(|(n, v)| format!("{n} {} {} {}", v[0], v[1], v[2]))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Checks `v` for parameter `i`; the value as CONFIG GET prints it, or the reason.
fn check(i: usize, v: &[u8], old: &str) -> Result<String, String> {
    let text = || String::from_utf8_lossy(v).into_owned();
    match PARAMS[i].kind {
        Kind::Bool => {
            if is(v, "yes") {
                Ok("yes".into())
            } else if is(v, "no") {
                Ok("no".into())
            } else {
                Err("argument must be 'yes' or 'no'".into())
            }
        }
        Kind::Int(lo, hi) => {
            let n = string2ll(v).ok_or("argument couldn't be parsed into an integer")?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            // Redis keeps hz within 1..500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ).
            Ok(if PARAMS[i].name == "hz" {
                n.clamp(1, 500).to_string()
            } else {
                n.to_string()
            })
        }
        Kind::Mem(lo, hi) => {
            let n = parse_memory(v).ok_or("argument must be a memory value")?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Enum(names) => names
            .iter()
            .find(|n| is(v, n))
            .map(|n| n.to_string())
            .ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    names.join(", ")
                )
            }),
        Kind::Str => Ok(text()),
        Kind::Save => {
            let words: Vec<&[u8]> = v.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
            let good = words.len().is_multiple_of(2)
                && words.iter().all(|w| string2ll(w).is_some_and(|n| n >= 0));
            if !good {
                return Err("Invalid save parameters".into());
            }
            Ok(words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect::<Vec<_>>()
                .join(" "))
        }
        Kind::Events => events_to_string(v)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
        Kind::OutputLimits => output_limits(v, old).map_err(str::to_string),
        Kind::Immutable => Err("can't set immutable config".into()),
    }
}

fn set_failed(out: &mut Vec<u8>, name: &[u8], why: &str) {
    let mut m = b"CONFIG SET failed (possibly related to argument '".to_vec();
    m.extend_from_slice(cstr(name));
    m.extend_from_slice(b"') - ");
    m.extend_from_slice(why.as_bytes());
    resp::error_fmt(out, &m);
}

pub(super) fn config_set(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() % 2 == 1 {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    }
    // All or nothing: every pair is checked before any is applied (Redis 7.0's multi-set).
    let mut new: Vec<(usize, String)> = Vec::new();
    for pair in a[2..].chunks(2) {
        let Some(i) = lookup_param(&pair[0]) else {
            let mut m = b"Unknown option or number of arguments for CONFIG SET - '".to_vec();
            m.extend_from_slice(cstr(&pair[0]));
            m.push(b'\'');
            resp::error_fmt(out, &m);
            return Flow::Continue;
        };
        if new.iter().any(|(j, _)| *j == i) {
            set_failed(out, &pair[0], "duplicate parameter");
            return Flow::Continue;
        }
        match check(i, &pair[1], &e.params.0[i]) {
            Ok(v) => new.push((i, v)),
            Err(why) => {
                set_failed(out, &pair[0], &why);
                return Flow::Continue;
            }
        }
    }
    for (i, v) in new {
        e.params.0[i] = v;
    }
    e.apply_params();
    ok(out);
    Flow::Continue
}

impl Engine {
    /// The value of parameter `name` (a name in [`PARAMS`]).
    pub(super) fn param(&self, name: &str) -> &str {
        index(name).map(|i| self.params.0[i].as_str()).unwrap_or("")
    }

    /// Copies the parameters that change behaviour into the settings.
    fn apply_params(&mut self) {
        let num = |e: &Engine, n: &str| e.param(n).parse::<u64>().unwrap_or(0);
        self.cfg.maxmemory = num(self, "maxmemory");
        self.cfg.maxclients = num(self, "maxclients") as usize;
        self.cfg.timeout_s = num(self, "timeout");
        self.cfg.max_bulk_len = num(self, "proto-max-bulk-len");
        self.cfg.max_query_buffer = num(self, "client-query-buffer-limit") as usize;
        let pass = self.param("requirepass");
        self.cfg.requirepass = (!pass.is_empty()).then(|| pass.as_bytes().to_vec());
        self.cfg.encodings = Encodings {
            hash_entries: num(self, "hash-max-listpack-entries") as usize,
            hash_value: num(self, "hash-max-listpack-value") as usize,
            set_intset: num(self, "set-max-intset-entries") as usize,
            zset_entries: num(self, "zset-max-listpack-entries") as usize,
            zset_value: num(self, "zset-max-listpack-value") as usize,
        };
        let limits = self.param("client-output-buffer-limit").to_string();
        let words: Vec<&str> = limits.split(' ').collect();
        if let Some(c) = words.chunks(4).find(|c| c[0] == "pubsub") {
            let n = |i: usize| c[i].parse::<u64>().unwrap_or(0);
            self.cfg.pubsub_limit = (n(1), n(2), n(3));
        }
    }
}

pub(super) fn config_get(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    // (name as matched, index); each parameter once (by index), under the name given.
    let mut found: Vec<(String, usize)> = Vec::new();
    for pat in &a[2..] {
        let pat = cstr(pat);
        if !pat.iter().any(|b| matches!(b, b'[' | b'*' | b'?')) {
            if let Some(i) = lookup_param(pat) {
                if !found
                    .iter()
                    .any(|(n, _)| n.as_bytes().eq_ignore_ascii_case(pat))
                {
                    let name = String::from_utf8_lossy(pat).into_owned();
                    found.push((name, i));
                }
            }
            continue;
        }
        for (i, p) in PARAMS.iter().enumerate() {
            for n in std::iter::once(p.name).chain(p.alias) {
                if glob(pat, n.as_bytes()) && !found.iter().any(|(f, _)| f == n) {
                    found.push((n.to_string(), i));
                }
            }
        }
    }
    resp::array_len(out, found.len() * 2);
    for (n, i) in found {
        resp::bulk(out, n.as_bytes());
        resp::bulk(out, e.params.0[i].as_bytes());
    }
    Flow::Continue
}

/// CONFIG RESETSTAT: the counters INFO stats reports start again from zero.
pub(super) fn config_resetstat(
    e: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    e.stats.commands = 0;
    e.stats.errors = 0;
    e.stats.errors_by_kind.clear();
    e.stats.connections = 0;
    e.stats.protocol_errors = 0;
    e.cmdstats.clear();
    for i in 0..e.dbs.len() {
        e.store_mut(i).expired_keys = 0;
    }
    ok(out);
    Flow::Continue
}

/// FUNCTION FLUSH [ASYNC|SYNC]: nicemu has no functions (FUNCTION LOAD is an unknown
/// subcommand), so there is nothing to flush and +OK is the truthful reply.
pub(super) fn function_flush(
    _: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 3 || (a.len() == 3 && !is(&a[2], "sync") && !is(&a[2], "async")) {
        resp::error(out, b"FUNCTION FLUSH only supports SYNC|ASYNC option");
    } else {
        ok(out);
    }
    Flow::Continue
}
