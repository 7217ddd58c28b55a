//! Phase 4 of the differential test: scripts over several connections at once (CONFIG SET /
//! GET / RESETSTAT, FUNCTION FLUSH, AUTH and requirepass, OBJECT ENCODING under changed
//! thresholds, CLIENT, publish/subscribe, blocking commands), each step's replies on every
//! connection compared byte for byte. After each step every connection gets a `PING <sync>`
//! and is read up to its reply, so what one connection's command sends to another (messages,
//! unblocked pops) is compared too.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use apps::kv::resp::encode_request;
use apps::kv::{Connection, Engine, EngineConfig};

use super::{limits, nicemu, show, split_replies, Redis, SYNC};

/// One step: the connection, the command; `None` as the command skips the comparison of
/// that step's own replies (a reply that differs by design, e.g. a client id).
pub(super) type Step<'a> = (usize, &'a [&'a str]);

/// Runs `script` on `conns` connections of `redis` and of a fresh engine; `ignore` lists the
/// commands whose replies are not compared (client ids, addresses).
pub(super) fn run_script(
    redis: &Redis,
    name: &str,
    conns: usize,
    script: &[Step],
    ignore: &[&str],
) {
    let mut engine = Engine::new(EngineConfig::default());
    // A connection opens at its first step (so it sees the settings of that moment).
    let mut rs: Vec<Option<UnixStream>> = (0..conns).map(|_| None).collect();
    let mut cs: Vec<Option<Connection>> = (0..conns).map(|_| None).collect();
    // Connections under CLIENT REPLY OFF: no sync PING (it would not be answered); what
    // arrives within a short wait is compared.
    let mut off = vec![false; conns];
    // Connections waiting in a blocking command: read without a sync PING until their
    // reply comes.
    let mut waiting = vec![false; conns];
    let mut in_multi = vec![false; conns];
    for (i, (k, cmd)) in script.iter().enumerate() {
        let reply_mode = |m: &str| {
            cmd.len() == 3
                && cmd[0].eq_ignore_ascii_case("client")
                && cmd[1].eq_ignore_ascii_case("reply")
                && cmd[2].eq_ignore_ascii_case(m)
        };
        let blocks = !in_multi[*k]
            && [
                "blpop",
                "brpop",
                "blmove",
                "brpoplpush",
                "bzpopmin",
                "bzpopmax",
                "blmpop",
                "bzmpop",
            ]
            .iter()
            .any(|b| cmd[0].eq_ignore_ascii_case(b));
        if cmd[0].eq_ignore_ascii_case("multi") {
            in_multi[*k] = true;
        } else if cmd[0].eq_ignore_ascii_case("exec") || cmd[0].eq_ignore_ascii_case("discard") {
            in_multi[*k] = false;
        }
        if reply_mode("off") {
            off[*k] = true;
        } else if reply_mode("on") {
            off[*k] = false;
        }
        if rs[*k].is_none() {
            rs[*k] = Some(redis.connect());
            cs[*k] = Some(Connection::new(&mut engine, limits()));
        }
        let bytes = encode_request(cmd);
        let skip = ignore.iter().any(|x| cmd[0].eq_ignore_ascii_case(x));
        for j in 0..conns {
            let (Some(r), Some(c)) = (rs[j].as_mut(), cs[j].as_mut()) else {
                continue;
            };
            let mut req = if j == *k { bytes.clone() } else { Vec::new() };
            let theirs = if in_multi[j] {
                // Inside MULTI a sync PING would be queued: read the one reply.
                if j != *k {
                    continue;
                }
                r.write_all(&req).expect("write to redis");
                read_n(r, 1)
            } else if (j == *k && blocks) || waiting[j] {
                // The command may block (then nothing comes back yet) or be served at once.
                r.write_all(&req).expect("write to redis");
                let got = read_for(r, Duration::from_millis(100));
                waiting[j] = got.is_empty();
                got
            } else if off[j] {
                r.write_all(&req).expect("write to redis");
                read_for(r, Duration::from_millis(200))
            } else {
                if j == *k && reply_mode("skip") {
                    // The PING after SKIP is the command whose reply is skipped.
                    req.extend_from_slice(&encode_request(&[b"PING".as_slice()]));
                }
                let sync = format!("{SYNC}{name}-{i}-{j}");
                req.extend_from_slice(&encode_request(&[b"PING".as_slice(), sync.as_bytes()]));
                let mut tail = Vec::new();
                apps::kv::resp::bulk(&mut tail, sync.as_bytes());
                r.write_all(&req).expect("write to redis");
                let expect = if j == *k { 2 } else { 1 };
                read_sync(r, &tail, expect, &format!("{name} step {i} {cmd:?}"))
            };
            let (ours, _) = nicemu(&mut engine, c, &req);
            if skip && j == *k {
                continue;
            }
            assert_eq!(
                show(&ours),
                show(&theirs),
                "{name} step {i} {cmd:?}, connection {j}"
            );
            assert_eq!(ours, theirs, "{name} step {i} {cmd:?}, connection {j}");
        }
    }
    for c in cs.into_iter().flatten() {
        c.close(&mut engine);
    }
}

/// Reads `n` whole replies.
fn read_n(s: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while apps::kv::resp::reply_len(&got).is_none() || split_replies(&got).len() < n {
        let k = s.read(&mut buf).expect("read from redis");
        assert!(k > 0, "redis closed; got {}", show(&got));
        got.extend_from_slice(&buf[..k]);
    }
    got
}

/// What arrives on `s` within `wait`.
fn read_for(s: &mut UnixStream, wait: Duration) -> Vec<u8> {
    std::thread::sleep(wait);
    s.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    s.set_nonblocking(false).unwrap();
    got
}

/// Reads until the sync PING's reply `tail`, or, on a connection that is not authenticated
/// (where the PING is refused and nothing else can arrive), `expect` replies.
fn read_sync(s: &mut UnixStream, tail: &[u8], expect: usize, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        if got.ends_with(tail) {
            return got;
        }
        if got.ends_with(b"-NOAUTH Authentication required.\r\n")
            && split_replies(&got).len() >= expect
        {
            return got;
        }
        let n = s
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("{what}: read from redis: {e}; got {}", show(&got)));
        assert!(n > 0, "redis closed; got {}", show(&got));
        got.extend_from_slice(&buf[..n]);
    }
}

/// CONFIG, FUNCTION FLUSH, AUTH, OBJECT ENCODING thresholds.
pub(super) fn phase(redis: &Redis) {
    let config: &[Step] = &[
        (0, &["CONFIG", "SET", "maxmemory", "abc"]),
        (0, &["CONFIG", "SET", "foo", "1"]),
        (0, &["CONFIG", "SET", "maxmemory"]),
        (0, &["CONFIG", "SET", "maxmemory", "1", "foo"]),
        (0, &["CONFIG", "SET", "maxmemory", "10", "maxmemory", "20"]),
        (0, &["CONFIG", "SET", "maxmemory", "1mb"]),
        (0, &["CONFIG", "GET", "maxmemory"]),
        (0, &["CONFIG", "SET", "maxmemory", "1k"]),
        (0, &["CONFIG", "GET", "MAXMEMORY"]),
        (0, &["CONFIG", "SET", "maxmemory", "-1"]),
        (0, &["CONFIG", "SET", "maxmemory", "0"]),
        (0, &["CONFIG", "SET", "timeout", "-1"]),
        (0, &["CONFIG", "SET", "timeout", "abc"]),
        (0, &["CONFIG", "SET", "timeout", "0"]),
        (0, &["CONFIG", "SET", "appendonly", "maybe"]),
        (0, &["CONFIG", "SET", "maxclients", "0"]),
        (0, &["CONFIG", "GET", "maxclients"]),
        (0, &["CONFIG", "SET", "databases", "3"]),
        (0, &["CONFIG", "SET", "maxmemory-policy", "foo"]),
        (0, &["CONFIG", "SET", "proto-max-bulk-len", "100"]),
        (0, &["CONFIG", "GET", "proto-max-bulk-len"]),
        (0, &["CONFIG", "SET", "save", "abc"]),
        (0, &["CONFIG", "SET", "save", "900 1"]),
        (0, &["CONFIG", "GET", "save"]),
        (0, &["CONFIG", "SET", "save", ""]),
        (0, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
        (0, &["CONFIG", "GET", "notify-keyspace-events"]),
        (
            0,
            &["CONFIG", "SET", "notify-keyspace-events", "$lshzxeKEgtmdn"],
        ),
        (0, &["CONFIG", "GET", "notify-keyspace-events"]),
        (0, &["CONFIG", "SET", "notify-keyspace-events", "Z"]),
        (0, &["CONFIG", "SET", "notify-keyspace-events", ""]),
        (0, &["CONFIG", "SET", "hz", "1000"]),
        (0, &["CONFIG", "GET", "hz"]),
        (0, &["CONFIG", "SET", "hz", "10"]),
        (0, &["CONFIG", "SET", "rdb-key-save-delay", "-5"]),
        (0, &["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        (0, &["CONFIG", "SET", "list-max-ziplist-size", "-10"]),
        (0, &["CONFIG", "GET", "list-max-ziplist-size"]),
        (0, &["CONFIG", "SET", "list-max-ziplist-size", "-2"]),
        (
            0,
            &["CONFIG", "SET", "client-output-buffer-limit", "foo 1 1 1"],
        ),
        (
            0,
            &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1 1"],
        ),
        (
            0,
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 0 0",
            ],
        ),
        (0, &["CONFIG", "GET", "client-output-buffer-limit"]),
        (
            0,
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 32mb 8mb 60",
            ],
        ),
        (0, &["CONFIG", "GET", "hash-max-ziplist-entries"]),
        (0, &["CONFIG", "SET", "hash-max-ziplist-entries", "abc"]),
        (0, &["CONFIG", "SET", "hash-max-listpack-value", "-5"]),
        (0, &["CONFIG", "SET", "zset-max-ziplist-entries", "1"]),
        (0, &["CONFIG", "SET", "hash-max-ziplist-entries", "2"]),
        (0, &["CONFIG", "SET", "set-max-intset-entries", "2"]),
        (0, &["ZADD", "cz", "1", "a"]),
        (0, &["OBJECT", "ENCODING", "cz"]),
        (0, &["ZADD", "cz", "2", "b"]),
        (0, &["OBJECT", "ENCODING", "cz"]),
        (0, &["HSET", "ch", "a", "1", "b", "2"]),
        (0, &["OBJECT", "ENCODING", "ch"]),
        (0, &["HSET", "ch", "c", "3"]),
        (0, &["OBJECT", "ENCODING", "ch"]),
        (0, &["SADD", "cs", "1", "2", "3"]),
        (0, &["OBJECT", "ENCODING", "cs"]),
        (0, &["CONFIG", "SET", "zset-max-ziplist-entries", "128"]),
        (0, &["CONFIG", "SET", "hash-max-ziplist-entries", "128"]),
        (0, &["CONFIG", "SET", "set-max-intset-entries", "512"]),
        (0, &["CONFIG", "RESETSTAT", "x"]),
        (0, &["CONFIG", "RESETSTAT"]),
        (0, &["FUNCTION", "FLUSH"]),
        (0, &["FUNCTION", "FLUSH", "async"]),
        (0, &["FUNCTION", "FLUSH", "x"]),
        (0, &["FLUSHALL"]),
        (0, &["ZADD", "za", "1", "a", "2", "b", "3", "c"]),
        (0, &["ZADD", "zb", "1", "b", "2", "c", "3", "d"]),
        (0, &["SADD", "sc", "a", "c", "e"]),
        (0, &["SET", "str", "x"]),
        (0, &["ZUNION", "0", "za"]),
        (0, &["ZUNION", "x", "za"]),
        (0, &["ZUNION", "3", "za"]),
        (0, &["ZUNION", "2", "za", "str"]),
        (0, &["ZUNION", "3", "za", "zb", "sc", "WITHSCORES"]),
        (0, &["ZUNION", "2", "za", "zb", "WEIGHTS", "2", "x"]),
        (
            0,
            &[
                "ZUNION",
                "2",
                "za",
                "zb",
                "WEIGHTS",
                "2",
                "3",
                "AGGREGATE",
                "MAX",
                "WITHSCORES",
            ],
        ),
        (0, &["ZUNION", "2", "za", "zb", "AGGREGATE", "foo"]),
        (
            0,
            &["ZINTER", "2", "za", "zb", "AGGREGATE", "MIN", "WITHSCORES"],
        ),
        (0, &["ZINTER", "3", "za", "zb", "sc", "WITHSCORES"]),
        (0, &["ZDIFF", "2", "za", "zb", "WITHSCORES"]),
        (0, &["ZDIFF", "2", "za", "zb", "WEIGHTS", "1", "1"]),
        (
            0,
            &[
                "ZUNIONSTORE",
                "zd",
                "2",
                "za",
                "zb",
                "WEIGHTS",
                "inf",
                "-inf",
            ],
        ),
        (0, &["ZRANGE", "zd", "0", "-1", "WITHSCORES"]),
        (0, &["ZINTERSTORE", "zd", "2", "za", "nokey"]),
        (0, &["EXISTS", "zd"]),
        (0, &["ZDIFFSTORE", "zd", "1", "za", "WITHSCORES"]),
        (0, &["ZDIFFSTORE", "zd", "1", "za"]),
        (0, &["ZINTERCARD", "2", "za", "zb"]),
        (0, &["ZINTERCARD", "2", "za", "zb", "LIMIT", "1"]),
        (0, &["ZINTERCARD", "2", "za", "zb", "LIMIT", "-1"]),
        (0, &["ZINTERCARD", "2", "za", "zb", "WITHSCORES"]),
        (0, &["ZINTERCARD", "0", "za"]),
        (0, &["ZRANGESTORE", "zr", "za", "0", "-1"]),
        (0, &["ZRANGE", "zr", "0", "-1", "WITHSCORES"]),
        (
            0,
            &[
                "ZRANGESTORE",
                "zr",
                "za",
                "(1",
                "+inf",
                "BYSCORE",
                "LIMIT",
                "0",
                "1",
            ],
        ),
        (0, &["ZRANGE", "zr", "0", "-1", "WITHSCORES"]),
        (0, &["ZRANGESTORE", "zr", "za", "[c", "-", "BYLEX", "REV"]),
        (0, &["ZRANGE", "zr", "0", "-1", "WITHSCORES"]),
        (0, &["ZRANGESTORE", "zr", "za", "0", "-1", "WITHSCORES"]),
        (
            0,
            &["ZRANGESTORE", "zr", "za", "0", "-1", "LIMIT", "0", "1"],
        ),
        (0, &["ZRANGESTORE", "zr", "str", "0", "-1"]),
        (0, &["ZRANGESTORE", "zr", "nokey", "0", "-1"]),
        (0, &["EXISTS", "zr"]),
        (0, &["ZRANGESTORE", "zr", "za", "5", "9"]),
        (0, &["ZRANDMEMBER", "nokey"]),
        (0, &["ZRANDMEMBER", "nokey", "3"]),
        (0, &["ZRANDMEMBER", "za", "0"]),
        (0, &["ZRANDMEMBER", "za", "1", "foo"]),
        (0, &["ZRANDMEMBER", "str"]),
        (
            0,
            &["ZRANDMEMBER", "za", "-9223372036854770000", "WITHSCORES"],
        ),
        (0, &["ZRANDMEMBER", "za", "-9223372036854775808"]),
        (
            0,
            &["ZRANDMEMBER", "za", "-4611686018427387904", "WITHSCORES"],
        ),
        (0, &["HSET", "hr", "a", "1"]),
        (
            0,
            &["HRANDFIELD", "hr", "-9223372036854770000", "WITHVALUES"],
        ),
        (0, &["HRANDFIELD", "hr", "-9223372036854775808"]),
        (0, &["MOVE", "str", "x"]),
        (0, &["MOVE", "str", "99"]),
        (0, &["MOVE", "str", "0"]),
        (0, &["MOVE", "nokey", "1"]),
        (0, &["SETEX", "mv", "100", "v"]),
        (0, &["MOVE", "mv", "1"]),
        (0, &["EXISTS", "mv"]),
        (0, &["SELECT", "1"]),
        (0, &["TTL", "mv"]),
        (0, &["SET", "mv2", "x"]),
        (0, &["SELECT", "0"]),
        (0, &["SET", "mv2", "y"]),
        (0, &["MOVE", "mv2", "1"]),
        (0, &["SET", "n", "123"]),
        (0, &["OBJECT", "REFCOUNT", "n"]),
        (0, &["OBJECT", "REFCOUNT", "str"]),
        (0, &["OBJECT", "REFCOUNT", "za"]),
        (0, &["OBJECT", "REFCOUNT", "nokey"]),
        (0, &["MEMORY", "USAGE", "nokey"]),
        (0, &["MEMORY", "USAGE", "str", "SAMPLES", "x"]),
        (0, &["MEMORY", "USAGE", "str", "FOO"]),
        (0, &["FLUSHALL"]),
    ];
    run_script(redis, "config", 1, config, &[]);

    let auth: &[Step] = &[
        (0, &["AUTH", "foo"]),
        (0, &["AUTH", "a", "b", "c"]),
        (0, &["AUTH", "default", "x"]),
        (0, &["AUTH", "x", "y"]),
        (0, &["CONFIG", "SET", "requirepass", "foo"]),
        // Connection 0 authenticated before the password was set: it stays so.
        (0, &["SET", "k", "v"]),
        (1, &["PING"]),
        (1, &["GET", "k"]),
        (1, &["HELLO", "3"]),
        (1, &["HELLO", "2", "AUTH", "default", "bar"]),
        (1, &["HELLO", "2", "AUTH", "bob", "foo"]),
        (1, &["AUTH", "bar"]),
        (1, &["AUTH", "x", "y"]),
        (1, &["AUTH", "a", "b", "c"]),
        (1, &["MULTI"]),
        (1, &["GET", "x"]),
        (1, &["DISCARD"]),
        (1, &["AUTH", "foo"]),
        (1, &["GET", "k"]),
        (1, &["AUTH", "bar"]),
        (1, &["GET", "k"]),
        (1, &["AUTH", "default", "foo"]),
        (1, &["CONFIG", "SET", "requirepass", ""]),
        (1, &["AUTH", "foo"]),
        (1, &["AUTH", "default", "anything"]),
        (1, &["FLUSHALL"]),
    ];
    run_script(redis, "auth", 2, auth, &[]);

    let pubsub: &[Step] = &[
        (0, &["SUBSCRIBE", "a", "b", "a"]),
        (1, &["PUBLISH", "a", "hello"]),
        (1, &["PUBLISH", "c", "nobody"]),
        (0, &["GET", "x"]),
        (0, &["PING"]),
        (0, &["PING", "z"]),
        (0, &["WATCH", "x"]),
        (0, &["PSUBSCRIBE", "a*", "b?"]),
        (1, &["PUBLISH", "a", "twice"]),
        (1, &["PUBSUB", "NUMSUB", "a", "b", "zz"]),
        (1, &["PUBSUB", "NUMPAT"]),
        (1, &["PUBSUB", "NUMPAT", "x"]),
        (1, &["PUBSUB", "CHANNELS", "a*"]),
        (1, &["PUBSUB", "CHANNELS", "a", "b"]),
        (1, &["PUBSUB"]),
        (1, &["PUBLISH", "a"]),
        (1, &["SUBSCRIBE"]),
        (2, &["HELLO", "3"]),
        (2, &["SUBSCRIBE", "a"]),
        (2, &["GET", "x"]),
        (2, &["PING"]),
        (2, &["PUBLISH", "a", "self"]),
        (2, &["PSUBSCRIBE", "*"]),
        (1, &["PUBLISH", "b", "bin\x00ary"]),
        (2, &["UNSUBSCRIBE"]),
        (2, &["PUNSUBSCRIBE"]),
        (2, &["UNSUBSCRIBE"]),
        (0, &["UNSUBSCRIBE", "b", "nosuch"]),
        (0, &["PUNSUBSCRIBE", "b?"]),
        (1, &["PUBLISH", "a", "again"]),
        (0, &["UNSUBSCRIBE", "a"]),
        (0, &["PUNSUBSCRIBE"]),
        (0, &["GET", "x"]),
        (0, &["PING"]),
        (0, &["UNSUBSCRIBE"]),
        (0, &["PUNSUBSCRIBE", "x", "y"]),
        (1, &["CLIENT", "REPLY", "x"]),
        // As Redis's test: a RESP3 client (a RESP2 subscriber could not turn replies on).
        (2, &["CLIENT", "REPLY", "OFF"]),
        (2, &["PING"]),
        (2, &["SUBSCRIBE", "r"]),
        (0, &["PUBLISH", "r", "off"]),
        (2, &["CLIENT", "REPLY", "ON"]),
        (2, &["UNSUBSCRIBE"]),
        (1, &["CLIENT", "REPLY", "SKIP"]),
        (1, &["PING", "skipped"]),
        (1, &["PING", "shown"]),
        (1, &["CLIENT", "NO-EVICT", "on"]),
        (1, &["CLIENT", "NO-EVICT", "x"]),
        (1, &["CLIENT", "KILL", "1.2.3.4:5"]),
        (1, &["CLIENT", "KILL", "ID", "9999"]),
        (1, &["CLIENT", "KILL", "ADDR", "1.2.3.4:5"]),
        (1, &["CLIENT", "KILL", "foo", "bar"]),
        (1, &["CLIENT", "KILL", "ID", "x"]),
        (1, &["CLIENT", "KILL", "SKIPME", "maybe"]),
        (1, &["CLIENT", "KILL", "TYPE", "foo"]),
        (1, &["CLIENT", "LIST", "TYPE", "foo"]),
        (1, &["CLIENT", "LIST", "ID", "x"]),
        (1, &["CLIENT", "LIST", "x"]),
        (1, &["CLIENT", "LIST", "ID", "99999"]),
    ];
    run_script(redis, "pubsub", 3, pubsub, &["HELLO"]);

    let blocking: &[Step] = &[
        (0, &["BLPOP", "bl", "-1"]),
        (0, &["BLPOP", "bl", "x"]),
        (0, &["BLPOP", "bl", "100000000000000000"]),
        (0, &["BLPOP", "bl", "inf"]),
        (0, &["BLMOVE", "bl", "b2", "LEFT", "UP", "0"]),
        (0, &["SET", "s", "x"]),
        (0, &["BLPOP", "s", "0"]),
        (0, &["BLPOP", "nokey", "s", "0"]),
        (0, &["RPUSH", "l1", "a", "b"]),
        (0, &["BLPOP", "nokey", "l1", "0"]),
        (0, &["BRPOP", "nokey", "l1", "0"]),
        (0, &["BZPOPMIN", "z", "s", "0"]),
        (0, &["ZADD", "z", "1.5", "m", "2", "n", "inf", "o"]),
        (0, &["BZPOPMAX", "z", "0"]),
        (0, &["BZPOPMIN", "z", "0"]),
        (0, &["MULTI"]),
        (0, &["BLPOP", "empty", "0"]),
        (0, &["BLMOVE", "empty", "x", "LEFT", "LEFT", "0"]),
        (0, &["BZPOPMIN", "empty", "0"]),
        (0, &["BRPOPLPUSH", "empty", "x", "0"]),
        (0, &["EXEC"]),
        // Two clients wait on the same key: the first one is served first.
        (1, &["BLPOP", "q", "q2", "0"]),
        (2, &["BRPOP", "q", "0"]),
        (0, &["RPUSH", "q", "one"]),
        (0, &["RPUSH", "q", "two", "three"]),
        (0, &["LRANGE", "q", "0", "-1"]),
        (1, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]),
        (2, &["BLPOP", "dst", "0"]),
        // The move's push serves the second waiter.
        (0, &["LPUSH", "src", "x"]),
        (0, &["EXISTS", "src", "dst"]),
        (1, &["BZPOPMIN", "zq", "0"]),
        (0, &["ZADD", "zq", "3", "c"]),
        (2, &["HELLO", "3"]),
        (2, &["BZPOPMAX", "zq", "zq2", "0"]),
        (0, &["ZADD", "zq2", "4.5", "d", "5", "e"]),
        (1, &["BLPOP", "gone", "0"]),
        (0, &["CLIENT", "UNBLOCK", "x"]),
        (0, &["CLIENT", "UNBLOCK", "1", "foo"]),
        (0, &["CLIENT", "UNBLOCK", "99999"]),
        (0, &["RPUSH", "gone", "v"]),
        (0, &["LLEN", "gone"]),
        (0, &["SINTERCARD", "0", "a"]),
        (0, &["SINTERCARD", "x", "a"]),
        (0, &["SINTERCARD", "2", "a"]),
        (0, &["SINTERCARD", "1", "a", "LIMIT", "-1"]),
        (0, &["SINTERCARD", "1", "a", "FOO", "1"]),
        (0, &["SINTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "2"]),
        (0, &["SINTERCARD", "2", "nokey", "s"]),
        (0, &["SADD", "s1", "a", "b", "c"]),
        (0, &["SADD", "s2", "b", "c", "d"]),
        (0, &["SINTERCARD", "2", "s1", "s2"]),
        (0, &["SINTERCARD", "2", "s1", "s2", "LIMIT", "1"]),
        (0, &["SINTERCARD", "2", "s1", "s2", "LIMIT", "0"]),
        (0, &["SINTERCARD", "2", "s1", "nokey"]),
        (0, &["LMPOP", "0", "a", "LEFT"]),
        (0, &["LMPOP", "x", "a", "LEFT"]),
        (0, &["LMPOP", "2", "a", "LEFT"]),
        (0, &["LMPOP", "1", "a", "UP"]),
        (0, &["LMPOP", "1", "a", "LEFT", "COUNT", "0"]),
        (0, &["LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "2"]),
        (0, &["LMPOP", "1", "a", "LEFT", "foo"]),
        (0, &["LMPOP", "2", "nokey", "s", "LEFT"]),
        (0, &["RPUSH", "ml", "1", "2", "3"]),
        (0, &["LMPOP", "2", "nokey", "ml", "RIGHT", "COUNT", "2"]),
        (0, &["LMPOP", "1", "nokey", "LEFT"]),
        (0, &["ZMPOP", "1", "z", "LEFT"]),
        (0, &["ZADD", "mz", "1", "a", "2.5", "b", "3", "c"]),
        (0, &["ZMPOP", "2", "nokey", "mz", "MAX", "COUNT", "10"]),
        (0, &["ZMPOP", "1", "nokey", "MIN"]),
        (0, &["BLMPOP", "x", "1", "a", "LEFT"]),
        (0, &["BLMPOP", "0", "1", "a", "UP"]),
        (0, &["BLMPOP", "-1", "1", "a", "LEFT"]),
        (0, &["BZMPOP", "0", "0", "a", "MIN"]),
        (1, &["BLMPOP", "0", "2", "e1", "e2", "LEFT", "COUNT", "2"]),
        (2, &["BZMPOP", "0", "1", "ez", "MIN", "COUNT", "2"]),
        (0, &["RPUSH", "e2", "x", "y", "z"]),
        (0, &["ZADD", "ez", "1", "m", "2", "n", "3", "o"]),
        (0, &["MULTI"]),
        (0, &["BLMPOP", "0", "1", "empty", "LEFT"]),
        (0, &["BZMPOP", "0", "1", "empty", "MAX"]),
        (0, &["EXEC"]),
        (0, &["FLUSHALL"]),
    ];
    run_script(redis, "blocking", 3, blocking, &["HELLO"]);
}
