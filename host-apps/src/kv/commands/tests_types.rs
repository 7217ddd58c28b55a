//! Unit tests of the collection types, transactions, databases, SCAN and memory accounting
//! (the byte-exact replies are checked against redis-server by tests/kv_differential.rs).

use super::tests::run;
use super::*;

const NOW: i64 = 1_700_000_000_000;

fn at(e: &mut Engine, s: &mut Session, now: i64, args: &[&[u8]]) -> Vec<u8> {
    let argv: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    let mut out = Vec::new();
    e.execute(s, &argv, now, &mut out);
    out
}

fn engine() -> (Engine, Session) {
    let mut e = Engine::new(EngineConfig::default());
    let s = e.open_session();
    (e, s)
}

fn all_dbs_recount(e: &Engine) -> usize {
    (0..e.cfg.databases).map(|i| e.store_at(i).recount()).sum()
}

#[test]
fn kv_hash_set_zset_replies() {
    let (mut e, mut s) = engine();
    let r = |e: &mut Engine, s: &mut Session, a: &[&[u8]]| run(e, s, a);
    assert_eq!(
        r(&mut e, &mut s, &[b"hset", b"h", b"a", b"1", b"b", b"2"]),
        b":2\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"hset", b"h", b"a", b"3"]), b":0\r\n");
    assert_eq!(r(&mut e, &mut s, &[b"hget", b"h", b"a"]), b"$1\r\n3\r\n");
    assert_eq!(
        r(&mut e, &mut s, &[b"hincrby", b"h", b"a", b"4"]),
        b":7\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"hincrbyfloat", b"h", b"f", b"1.5"]),
        b"$3\r\n1.5\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"hlen", b"h"]), b":3\r\n");
    assert_eq!(
        r(&mut e, &mut s, &[b"hdel", b"h", b"a", b"b", b"f"]),
        b":3\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"exists", b"h"]), b":0\r\n");

    assert_eq!(
        r(&mut e, &mut s, &[b"sadd", b"s", b"x", b"y", b"x"]),
        b":2\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"smismember", b"s", b"x", b"z"]),
        b"*2\r\n:1\r\n:0\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"sadd", b"t", b"y", b"z"]), b":2\r\n");
    assert_eq!(
        r(&mut e, &mut s, &[b"sinter", b"s", b"t"]),
        b"*1\r\n$1\r\ny\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"sdiffstore", b"d", b"s", b"t"]),
        b":1\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"smembers", b"d"]),
        b"*1\r\n$1\r\nx\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"smove", b"d", b"t", b"x"]), b":1\r\n");
    assert_eq!(r(&mut e, &mut s, &[b"type", b"d"]), b"+none\r\n");
    assert_eq!(r(&mut e, &mut s, &[b"scard", b"t"]), b":3\r\n");
    let popped = r(&mut e, &mut s, &[b"spop", b"t", b"2"]);
    assert!(popped.starts_with(b"*2\r\n"));
    assert_eq!(r(&mut e, &mut s, &[b"scard", b"t"]), b":1\r\n");
    // A negative count draws with repeats; a positive one draws distinct members.
    assert!(r(&mut e, &mut s, &[b"srandmember", b"t", b"-5"]).starts_with(b"*5\r\n"));
    assert!(r(&mut e, &mut s, &[b"srandmember", b"t", b"5"]).starts_with(b"*1\r\n"));

    assert_eq!(
        r(
            &mut e,
            &mut s,
            &[b"zadd", b"z", b"1", b"a", b"2", b"b", b"3", b"c"]
        ),
        b":3\r\n"
    );
    assert_eq!(
        r(
            &mut e,
            &mut s,
            &[b"zadd", b"z", b"gt", b"ch", b"0", b"a", b"5", b"b"]
        ),
        b":1\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"zadd", b"z", b"incr", b"0.5", b"a"]),
        b"$3\r\n1.5\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"zadd", b"z", b"nx", b"incr", b"1", b"a"]),
        b"$-1\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"zrank", b"z", b"b"]), b":2\r\n");
    assert_eq!(r(&mut e, &mut s, &[b"zrevrank", b"z", b"b"]), b":0\r\n");
    assert_eq!(
        r(&mut e, &mut s, &[b"zcount", b"z", b"(1.5", b"+inf"]),
        b":2\r\n"
    );
    assert_eq!(
        r(
            &mut e,
            &mut s,
            &[
                b"zrange",
                b"z",
                b"+inf",
                b"2",
                b"byscore",
                b"rev",
                b"withscores",
                b"limit",
                b"0",
                b"1"
            ]
        ),
        b"*2\r\n$1\r\nb\r\n$1\r\n5\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"zrangebyscore", b"z", b"-inf", b"(3"]),
        b"*1\r\n$1\r\na\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"zscore", b"z", b"c"]), b"$1\r\n3\r\n");
    assert_eq!(
        r(&mut e, &mut s, &[b"zpopmin", b"z"]),
        b"*2\r\n$1\r\na\r\n$3\r\n1.5\r\n"
    );
    assert_eq!(
        r(&mut e, &mut s, &[b"zremrangebyrank", b"z", b"0", b"-1"]),
        b":2\r\n"
    );
    assert_eq!(r(&mut e, &mut s, &[b"exists", b"z"]), b":0\r\n");
    // Every type answers the others' commands with WRONGTYPE.
    r(&mut e, &mut s, &[b"set", b"str", b"v"]);
    for c in [&b"hget"[..], b"sismember", b"zscore", b"lindex"] {
        assert_eq!(
            r(&mut e, &mut s, &[c, b"str", b"0"]),
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
    }
    assert_eq!(e.store().used_memory(), e.store().recount());
}

#[test]
fn kv_large_sorted_set_ranks_and_lex_ranges() {
    let (mut e, mut s) = engine();
    // 300 members, equal scores (lex ranges defined), past the small-set walk.
    for i in 0..300u32 {
        let m = format!("m{i:03}");
        run(&mut e, &mut s, &[b"zadd", b"z", b"0", m.as_bytes()]);
    }
    assert_eq!(
        run(&mut e, &mut s, &[b"zlexcount", b"z", b"[m100", b"(m200"]),
        b":100\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"zrank", b"z", b"m250"]), b":250\r\n");
    assert_eq!(
        run(
            &mut e,
            &mut s,
            &[
                b"zrevrangebylex",
                b"z",
                b"(m005",
                b"-",
                b"limit",
                b"1",
                b"2"
            ]
        ),
        b"*2\r\n$4\r\nm003\r\n$4\r\nm002\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"zremrangebylex", b"z", b"-", b"(m150"]),
        b":150\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"zcard", b"z"]), b":150\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"object", b"encoding", b"z"]),
        b"$8\r\nskiplist\r\n"
    );
    assert_eq!(e.store().used_memory(), e.store().recount());
}

#[test]
fn kv_multi_exec_queues_and_aborts_as_redis() {
    let (mut e, mut s) = engine();
    assert_eq!(
        run(&mut e, &mut s, &[b"exec"]),
        b"-ERR EXEC without MULTI\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"discard"]),
        b"-ERR DISCARD without MULTI\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"multi"]), b"+OK\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"multi"]),
        b"-ERR MULTI calls can not be nested\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"set", b"k", b"1"]), b"+QUEUED\r\n");
    assert_eq!(run(&mut e, &mut s, &[b"incr", b"k"]), b"+QUEUED\r\n");
    assert_eq!(run(&mut e, &mut s, &[b"lpush", b"k", b"x"]), b"+QUEUED\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"watch", b"k"]),
        b"-ERR WATCH inside MULTI is not allowed\r\n"
    );
    // Nothing ran yet.
    assert_eq!(e.store().len(), 0);
    assert_eq!(
        run(&mut e, &mut s, &[b"exec"]),
        &b"*3\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"[..]
    );
    // A command refused while queueing fails the whole transaction.
    run(&mut e, &mut s, &[b"multi"]);
    assert_eq!(run(&mut e, &mut s, &[b"incr", b"k"]), b"+QUEUED\r\n");
    assert!(run(&mut e, &mut s, &[b"nosuch"]).starts_with(b"-ERR unknown command"));
    assert_eq!(
        run(&mut e, &mut s, &[b"get"]),
        b"-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"exec"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"get", b"k"]), b"$1\r\n2\r\n");
    run(&mut e, &mut s, &[b"multi"]);
    run(&mut e, &mut s, &[b"incr", b"k"]);
    assert_eq!(run(&mut e, &mut s, &[b"discard"]), b"+OK\r\n");
    assert_eq!(run(&mut e, &mut s, &[b"get", b"k"]), b"$1\r\n2\r\n");
    assert!(!s.in_multi());
}

#[test]
fn kv_watch_sees_other_clients_and_expiry() {
    let (mut e, mut a) = engine();
    let mut b = e.open_session();
    run(&mut e, &mut a, &[b"set", b"k", b"1"]);
    // Changed by another client: EXEC answers a null array and runs nothing.
    assert_eq!(run(&mut e, &mut a, &[b"watch", b"k", b"other"]), b"+OK\r\n");
    run(&mut e, &mut b, &[b"sadd", b"other", b"m"]);
    run(&mut e, &mut a, &[b"multi"]);
    run(&mut e, &mut a, &[b"set", b"k", b"mine"]);
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*-1\r\n");
    assert_eq!(run(&mut e, &mut a, &[b"get", b"k"]), b"$1\r\n1\r\n");
    // A change that changes nothing (SREM of a non-member) does not break the watch.
    run(&mut e, &mut a, &[b"watch", b"other"]);
    run(&mut e, &mut b, &[b"srem", b"other", b"nope"]);
    run(&mut e, &mut a, &[b"multi"]);
    run(&mut e, &mut a, &[b"set", b"k", b"2"]);
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*1\r\n+OK\r\n");
    // The watches ended with EXEC: a later change is harmless.
    run(&mut e, &mut b, &[b"del", b"other"]);
    run(&mut e, &mut a, &[b"multi"]);
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*0\r\n");
    // A watched key that expires before EXEC.
    at(&mut e, &mut a, NOW, &[b"set", b"t", b"v", b"px", b"100"]);
    at(&mut e, &mut a, NOW, &[b"watch", b"t"]);
    at(&mut e, &mut a, NOW, &[b"multi"]);
    at(&mut e, &mut a, NOW, &[b"get", b"t"]);
    assert_eq!(at(&mut e, &mut a, NOW + 200, &[b"exec"]), b"*-1\r\n");
    // UNWATCH, and a watch in another database (FLUSHALL of a held key breaks it).
    run(&mut e, &mut a, &[b"watch", b"k"]);
    run(&mut e, &mut a, &[b"unwatch"]);
    run(&mut e, &mut b, &[b"set", b"k", b"3"]);
    run(&mut e, &mut a, &[b"multi"]);
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*0\r\n");
    run(&mut e, &mut a, &[b"select", b"3"]);
    run(&mut e, &mut a, &[b"set", b"w", b"1"]);
    run(&mut e, &mut a, &[b"watch", b"w"]);
    run(&mut e, &mut b, &[b"flushall"]);
    run(&mut e, &mut a, &[b"multi"]);
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*-1\r\n");
    // Closing a session drops its watches.
    run(&mut e, &mut b, &[b"watch", b"x"]);
    e.close_session(b);
    assert_eq!(e.store_at(3).version(b"x"), 0);
}

#[test]
fn kv_exec_refused_when_over_maxmemory() {
    let mut e = Engine::new(EngineConfig {
        maxmemory: 2000,
        ..EngineConfig::default()
    });
    let mut s = e.open_session();
    run(&mut e, &mut s, &[b"multi"]);
    run(&mut e, &mut s, &[b"set", b"a", &[b'x'; 3000]]);
    run(&mut e, &mut s, &[b"set", b"b", b"1"]);
    assert_eq!(run(&mut e, &mut s, &[b"exec"]), b"*2\r\n+OK\r\n+OK\r\n");
    run(&mut e, &mut s, &[b"multi"]);
    run(&mut e, &mut s, &[b"get", b"a"]);
    assert_eq!(
        run(&mut e, &mut s, &[b"sadd", b"s", b"m"]),
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"exec"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    // Collections grow memory too: refused over the limit, allowed once room is made.
    for c in [
        &[&b"hset"[..], b"h", b"f", b"v"][..],
        &[b"zadd", b"z", b"1", b"m"],
        &[b"rpush", b"l", b"x"],
    ] {
        assert!(run(&mut e, &mut s, c).starts_with(b"-OOM"));
    }
    run(&mut e, &mut s, &[b"del", b"a"]);
    assert_eq!(run(&mut e, &mut s, &[b"hset", b"h", b"f", b"v"]), b":1\r\n");
    // Memory went over between queueing and EXEC: a transaction that may grow memory is
    // refused whole.
    run(&mut e, &mut s, &[b"multi"]);
    assert_eq!(run(&mut e, &mut s, &[b"sadd", b"s", b"m"]), b"+QUEUED\r\n");
    let mut other = e.open_session();
    run(&mut e, &mut other, &[b"set", b"a", &[b'x'; 3000]]);
    assert_eq!(
        run(&mut e, &mut s, &[b"exec"]),
        &b"-EXECABORT Transaction discarded because of: OOM command not allowed when used \
           memory > 'maxmemory'.\r\n"[..]
    );
    assert_eq!(run(&mut e, &mut s, &[b"exists", b"s"]), b":0\r\n");
}

#[test]
fn kv_databases_select_swap_flush_copy() {
    let (mut e, mut s) = engine();
    run(&mut e, &mut s, &[b"set", b"a", b"0"]);
    assert_eq!(run(&mut e, &mut s, &[b"select", b"5"]), b"+OK\r\n");
    assert_eq!(run(&mut e, &mut s, &[b"get", b"a"]), b"$-1\r\n");
    run(&mut e, &mut s, &[b"sadd", b"s", b"m"]);
    assert_eq!(run(&mut e, &mut s, &[b"dbsize"]), b":1\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"copy", b"s", b"s", b"db", b"0"]),
        b":1\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"copy", b"s", b"s"]),
        b"-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"swapdb", b"0", b"5"]), b"+OK\r\n");
    // Database 5 (still selected) now holds what 0 held.
    assert_eq!(run(&mut e, &mut s, &[b"get", b"a"]), b"$1\r\n0\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"swapdb", b"0", b"x"]),
        b"-ERR invalid second DB index\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"swapdb", b"0", b"16"]),
        b"-ERR DB index is out of range\r\n"
    );
    let info = run(&mut e, &mut s, &[b"info", b"keyspace"]);
    let info = String::from_utf8_lossy(&info);
    assert!(
        info.contains("db0:keys=1,") && info.contains("db5:keys=2,"),
        "{info}"
    );
    assert_eq!(run(&mut e, &mut s, &[b"flushdb"]), b"+OK\r\n");
    assert_eq!(run(&mut e, &mut s, &[b"dbsize"]), b":0\r\n");
    assert_eq!(e.store_at(0).len(), 1);
    assert_eq!(e.used_memory(), all_dbs_recount(&e));
    assert_eq!(run(&mut e, &mut s, &[b"flushall"]), b"+OK\r\n");
    assert_eq!(e.used_memory(), 0);
}

#[test]
fn kv_scan_returns_every_key_present_throughout() {
    let (mut e, mut s) = engine();
    for i in 0..500 {
        run(&mut e, &mut s, &[b"set", format!("k{i}").as_bytes(), b"v"]);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = b"0".to_vec();
    let mut rounds = 0;
    loop {
        let out = run(
            &mut e,
            &mut s,
            &[b"scan", &cursor, b"count", b"7", b"match", b"k*"],
        );
        // *2 $<n> cursor *<m> keys...
        let parts: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
        cursor = parts[2].strip_suffix(b"\r").unwrap().to_vec();
        for p in parts[4..].iter().skip(1).step_by(2) {
            seen.insert(p.strip_suffix(b"\r").unwrap().to_vec());
        }
        // Meanwhile keys come and go: k400.. are deleted, new ones added.
        if rounds < 50 {
            run(
                &mut e,
                &mut s,
                &[b"del", format!("k{}", 400 + rounds).as_bytes()],
            );
            run(
                &mut e,
                &mut s,
                &[b"set", format!("new{rounds}").as_bytes(), b"v"],
            );
        }
        rounds += 1;
        if cursor == b"0" || rounds > 1000 {
            break;
        }
    }
    assert_eq!(cursor, b"0");
    for i in 0..400 {
        assert!(seen.contains(format!("k{i}").as_bytes()), "k{i} missed");
    }
    assert!(!seen.iter().any(|k| k.starts_with(b"new")), "MATCH filters");
    assert_eq!(
        run(&mut e, &mut s, &[b"scan", b"x"]),
        b"-ERR invalid cursor\r\n"
    );
    run(&mut e, &mut s, &[b"hset", b"h", b"f", b"v"]);
    let typed = run(
        &mut e,
        &mut s,
        &[b"scan", b"0", b"count", b"1000", b"type", b"hash"],
    );
    assert!(
        typed.ends_with(b"*1\r\n$1\r\nh\r\n"),
        "{}",
        typed.escape_ascii()
    );
}

#[test]
fn kv_collections_expire_and_account_memory() {
    let (mut e, mut s) = engine();
    at(&mut e, &mut s, NOW, &[b"hset", b"h", b"f", b"v"]);
    at(&mut e, &mut s, NOW, &[b"sadd", b"s", b"a", b"b"]);
    at(&mut e, &mut s, NOW, &[b"zadd", b"z", b"1", b"a"]);
    at(&mut e, &mut s, NOW, &[b"rpush", b"l", b"a"]);
    for k in [&b"h"[..], b"s", b"z", b"l"] {
        assert_eq!(at(&mut e, &mut s, NOW, &[b"pexpire", k, b"100"]), b":1\r\n");
    }
    // RENAME keeps the time to live; lazy expiry (a read) and active expiry both remove.
    assert_eq!(
        at(&mut e, &mut s, NOW, &[b"rename", b"h", b"h2"]),
        b"+OK\r\n"
    );
    assert_eq!(at(&mut e, &mut s, NOW, &[b"pttl", b"h2"]), b":100\r\n");
    assert_eq!(
        at(&mut e, &mut s, NOW + 100, &[b"hget", b"h2", b"f"]),
        b"$-1\r\n"
    );
    assert_eq!(e.active_expire(NOW + 100), 3);
    assert_eq!(e.store().len(), 0);
    assert_eq!(e.store().used_memory(), 0);
    // Mixed edits keep the running count equal to a recount.
    let cmds: &[&[&[u8]]] = &[
        &[b"rpush", b"l", b"a", b"bb", b"ccc", b"a"],
        &[b"lset", b"l", b"1", b"a-much-longer-value"],
        &[b"linsert", b"l", b"before", b"ccc", b"x"],
        &[b"lrem", b"l", b"0", b"a"],
        &[b"ltrim", b"l", b"0", b"1"],
        &[b"lmove", b"l", b"l2", b"left", b"right"],
        &[b"hset", b"h", b"f", b"1", b"g", b"2"],
        &[b"hincrbyfloat", b"h", b"f", b"0.25"],
        &[b"hdel", b"h", b"g"],
        &[b"sadd", b"s", b"1", b"2", b"3"],
        &[b"sunionstore", b"u", b"s", b"l2"],
        &[b"sadd", b"l3", b"q"],
        &[b"sunionstore", b"u", b"s", b"l3"],
        &[b"zadd", b"z", b"1", b"a", b"2", b"b"],
        &[b"zincrby", b"z", b"5", b"a"],
        &[b"zremrangebyscore", b"z", b"-inf", b"2"],
        &[b"setrange", b"str", b"5", b"abc"],
        &[b"append", b"str", b"de"],
        &[b"copy", b"z", b"z2"],
        &[b"getdel", b"str"],
    ];
    for c in cmds {
        at(&mut e, &mut s, NOW, c);
        assert_eq!(e.store().used_memory(), e.store().recount(), "{c:?}");
    }
    assert_eq!(
        at(&mut e, &mut s, NOW, &[b"lrange", b"l", b"0", b"-1"]),
        b"*1\r\n$1\r\nx\r\n"
    );
    assert_eq!(at(&mut e, &mut s, NOW, &[b"scard", b"u"]), b":4\r\n");
}

#[test]
fn kv_random_picks_and_encodings() {
    let (mut e, mut s) = engine();
    assert_eq!(run(&mut e, &mut s, &[b"randomkey"]), b"$-1\r\n");
    run(&mut e, &mut s, &[b"hset", b"h", b"a", b"1", b"b", b"2"]);
    for _ in 0..20 {
        let f = run(&mut e, &mut s, &[b"hrandfield", b"h"]);
        assert!(f == b"$1\r\na\r\n" || f == b"$1\r\nb\r\n");
        assert_eq!(run(&mut e, &mut s, &[b"randomkey"]), b"$1\r\nh\r\n");
    }
    let two = run(&mut e, &mut s, &[b"hrandfield", b"h", b"5", b"withvalues"]);
    assert!(two.starts_with(b"*4\r\n"));
    assert!(run(&mut e, &mut s, &[b"hrandfield", b"h", b"-7"]).starts_with(b"*7\r\n"));
    let enc = |e: &mut Engine, s: &mut Session, k: &[u8]| run(e, s, &[b"object", b"encoding", k]);
    run(&mut e, &mut s, &[b"set", b"i", b"12345"]);
    run(&mut e, &mut s, &[b"set", b"r", &[b'x'; 45]]);
    run(&mut e, &mut s, &[b"sadd", b"is", b"1", b"2"]);
    run(&mut e, &mut s, &[b"sadd", b"hs", b"a"]);
    assert_eq!(enc(&mut e, &mut s, b"i"), b"$3\r\nint\r\n");
    assert_eq!(enc(&mut e, &mut s, b"r"), b"$3\r\nraw\r\n");
    assert_eq!(enc(&mut e, &mut s, b"h"), b"$8\r\nlistpack\r\n");
    assert_eq!(enc(&mut e, &mut s, b"is"), b"$6\r\nintset\r\n");
    assert_eq!(enc(&mut e, &mut s, b"hs"), b"$9\r\nhashtable\r\n");
    assert_eq!(enc(&mut e, &mut s, b"none"), b"$-1\r\n");
}

#[test]
fn kv_resp3_after_hello_3() {
    let (mut e, mut s) = engine();
    run(&mut e, &mut s, &[b"hset", b"h", b"f", b"v"]);
    run(&mut e, &mut s, &[b"zadd", b"z", b"1.5", b"m"]);
    let hello = run(&mut e, &mut s, &[b"hello", b"3"]);
    assert!(hello.starts_with(b"%7\r\n") && s.proto == 3);
    assert_eq!(run(&mut e, &mut s, &[b"get", b"nokey"]), b"_\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"hgetall", b"h"]),
        b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"zscore", b"z", b"m"]), b",1.5\r\n");
    assert_eq!(
        run(
            &mut e,
            &mut s,
            &[b"zrange", b"z", b"0", b"-1", b"withscores"]
        ),
        b"*1\r\n*2\r\n$1\r\nm\r\n,1.5\r\n"
    );
    run(&mut e, &mut s, &[b"multi"]);
    run(&mut e, &mut s, &[b"zscore", b"z", b"m"]);
    run(&mut e, &mut s, &[b"get", b"nokey"]);
    assert_eq!(run(&mut e, &mut s, &[b"exec"]), b"*2\r\n,1.5\r\n_\r\n");
    assert!(run(&mut e, &mut s, &[b"hello", b"2"]).starts_with(b"*14\r\n"));
    assert_eq!(run(&mut e, &mut s, &[b"get", b"nokey"]), b"$-1\r\n");
}
