//! Unit tests of CONFIG SET's effects, AUTH / requirepass, CLIENT and the server-side
//! parameters the engine hands to the server.
use super::tests::run;
use super::*;

#[test]
fn kv_config_set_changes_behaviour() {
    let mut e = Engine::new(EngineConfig::default());
    let mut s = e.open_session();
    assert_eq!(
        run(
            &mut e,
            &mut s,
            &[b"config", b"set", b"maxmemory", b"1", b"maxclients", b"7"]
        ),
        b"+OK\r\n"
    );
    assert_eq!((e.config().maxmemory, e.config().maxclients), (1, 7));
    run(&mut e, &mut s, &[b"set", b"a", b"1"]);
    assert_eq!(
        run(&mut e, &mut s, &[b"set", b"b", b"1"]),
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    );
    // A failing pair leaves every parameter as it was.
    assert!(run(
        &mut e,
        &mut s,
        &[b"config", b"set", b"maxmemory", b"0", b"timeout", b"x"]
    )
    .starts_with(b"-ERR CONFIG SET failed (possibly related to argument 'timeout')"));
    assert_eq!(e.config().maxmemory, 1);
    run(
        &mut e,
        &mut s,
        &[b"config", b"set", b"maxmemory", b"0", b"timeout", b"5"],
    );
    assert_eq!((e.config().maxmemory, e.config().timeout_s), (0, 5));
    run(
        &mut e,
        &mut s,
        &[b"config", b"set", b"proto-max-bulk-len", b"2mb"],
    );
    assert_eq!(e.config().max_bulk_len, 2 << 20);
    run(
        &mut e,
        &mut s,
        &[b"config", b"set", b"zset-max-ziplist-entries", b"1"],
    );
    run(&mut e, &mut s, &[b"zadd", b"z", b"1", b"a", b"2", b"b"]);
    assert_eq!(
        run(&mut e, &mut s, &[b"object", b"encoding", b"z"]),
        b"$8\r\nskiplist\r\n"
    );
    run(
        &mut e,
        &mut s,
        &[
            b"config",
            b"set",
            b"client-output-buffer-limit",
            b"pubsub 1mb 2k 3",
        ],
    );
    assert_eq!(e.config().pubsub_limit, (1 << 20, 2000, 3));
}

#[test]
fn kv_proto_max_bulk_len_reaches_the_parser() {
    let mut e = Engine::new(EngineConfig::default());
    let mut c = crate::kv::Connection::new(&mut e, crate::kv::ProtoLimits::default());
    let mut out = Vec::new();
    c.input(
        &mut e,
        b"CONFIG SET proto-max-bulk-len 1048576\r\n",
        0,
        &mut out,
    );
    assert_eq!(out, b"+OK\r\n");
    out.clear();
    let st = c.input(&mut e, b"*2\r\n$4\r\nECHO\r\n$1048577\r\n", 0, &mut out);
    assert_eq!(st, crate::kv::RunState::Close);
    assert_eq!(out, b"-ERR Protocol error: invalid bulk length\r\n");
}

#[test]
fn kv_requirepass_and_auth() {
    let mut e = Engine::new(EngineConfig::default());
    let mut old = e.open_session();
    run(
        &mut e,
        &mut old,
        &[b"config", b"set", b"requirepass", b"pw"],
    );
    let mut s = e.open_session();
    assert_eq!(
        run(&mut e, &mut s, &[b"get", b"k"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    // Sessions that were open before the password keep running commands, as in Redis.
    assert_eq!(run(&mut e, &mut old, &[b"get", b"k"]), b"$-1\r\n");
    assert_eq!(
        run(&mut e, &mut s, &[b"auth", b"nope"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"auth", b"default", b"pw"]),
        b"+OK\r\n"
    );
    assert_eq!(run(&mut e, &mut s, &[b"get", b"k"]), b"$-1\r\n");
    let mut h = e.open_session();
    let r = run(
        &mut e,
        &mut h,
        &[b"hello", b"3", b"auth", b"default", b"pw"],
    );
    assert!(r.starts_with(b"%7\r\n"), "{}", r.escape_ascii());
}

#[test]
fn kv_pubsub_outbox_is_bounded() {
    let mut e = Engine::new(EngineConfig::default());
    let mut sub = e.open_session();
    let mut publ = e.open_session();
    run(&mut e, &mut sub, &[b"subscribe", b"ch"]);
    run(
        &mut e,
        &mut publ,
        &[
            b"config",
            b"set",
            b"client-output-buffer-limit",
            b"pubsub 1000 0 0",
        ],
    );
    assert_eq!(
        run(&mut e, &mut publ, &[b"publish", b"ch", b"x"]),
        b":1\r\n"
    );
    assert_eq!(e.take_dirty(), vec![sub.id]);
    let mut got = Vec::new();
    e.drain_outbox(sub.id, &mut got);
    assert_eq!(got, b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n");
    // The subscriber does not read: past the hard limit it is cut off.
    for _ in 0..40 {
        run(&mut e, &mut publ, &[b"publish", b"ch", &[b'y'; 30]]);
    }
    assert!(e.killed(sub.id));
    assert_eq!(e.stats.output_limit_disconnects, 1);
    let mut got = Vec::new();
    e.drain_outbox(sub.id, &mut got);
    assert!(got.is_empty());
    e.close_session(sub);
    assert_eq!(
        run(&mut e, &mut publ, &[b"publish", b"ch", b"x"]),
        b":0\r\n"
    );
}

#[test]
fn kv_client_kill_marks_the_client() {
    let mut e = Engine::new(EngineConfig::default());
    let mut a = e.open_session();
    let b = e.open_session();
    e.set_peer_addr(b.id, "192.0.2.2:4000".into(), "192.0.2.1:6379".into(), 9, 0);
    assert_eq!(
        run(
            &mut e,
            &mut a,
            &[b"client", b"kill", b"addr", b"192.0.2.2:4000"]
        ),
        b":1\r\n"
    );
    assert!(e.killed(b.id) && !e.killed(a.id));
    let list = run(
        &mut e,
        &mut a,
        &[b"client", b"list", b"id", b.id.to_string().as_bytes()],
    );
    assert!(
        String::from_utf8_lossy(&list).contains("addr=192.0.2.2:4000 laddr=192.0.2.1:6379 fd=9"),
        "{}",
        list.escape_ascii()
    );
}

#[test]
fn kv_blocking_pop_waits_times_out_and_unblocks() {
    let mut e = Engine::new(EngineConfig::default());
    let mut a = e.open_session();
    let mut b = e.open_session();
    let t0 = 1_700_000_000_000;
    let mut out = Vec::new();
    let argv = |v: &[&[u8]]| v.iter().map(|x| x.to_vec()).collect::<Vec<_>>();
    e.execute(&mut a, &argv(&[b"blpop", b"k", b"0.5"]), t0, &mut out);
    assert!(out.is_empty() && e.blocked_on(a.id));
    // Not yet due.
    e.expire_blocked(t0 + 499);
    assert!(e.blocked_on(a.id));
    e.expire_blocked(t0 + 500);
    assert!(!e.blocked_on(a.id));
    e.drain_outbox(a.id, &mut out);
    assert_eq!(out, b"*-1\r\n");
    // Timeout 0 waits for ever; CLIENT UNBLOCK ... ERROR ends it with an error.
    out.clear();
    e.execute(&mut a, &argv(&[b"brpop", b"k", b"0"]), t0, &mut out);
    e.expire_blocked(i64::MAX);
    assert!(e.blocked_on(a.id));
    let id = a.id.to_string();
    assert_eq!(
        run(
            &mut e,
            &mut b,
            &[b"client", b"unblock", id.as_bytes(), b"error"]
        ),
        b":1\r\n"
    );
    e.drain_outbox(a.id, &mut out);
    assert_eq!(out, b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
    // A push serves the waiter before the pusher's next command sees the list.
    out.clear();
    e.execute(&mut a, &argv(&[b"blpop", b"k", b"0"]), t0, &mut out);
    assert_eq!(run(&mut e, &mut b, &[b"rpush", b"k", b"v"]), b":1\r\n");
    assert_eq!(run(&mut e, &mut b, &[b"llen", b"k"]), b":0\r\n");
    e.drain_outbox(a.id, &mut out);
    assert_eq!(out, b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n");
    // The end of the connection ends the wait.
    e.execute(&mut a, &argv(&[b"blpop", b"k", b"0"]), t0, &mut out);
    let id = a.id;
    e.close_session(a);
    assert!(!e.blocked_on(id));
    assert_eq!(run(&mut e, &mut b, &[b"rpush", b"k", b"v"]), b":1\r\n");
    assert_eq!(run(&mut e, &mut b, &[b"llen", b"k"]), b":1\r\n");
}

#[test]
fn kv_info_sections_and_commandstats() {
    let mut e = Engine::new(EngineConfig::default());
    let mut s = e.open_session();
    run(&mut e, &mut s, &[b"set", b"k", b"v"]);
    run(&mut e, &mut s, &[b"incr", b"k"]);
    let text = |r: Vec<u8>| String::from_utf8_lossy(&r).into_owned();
    let default = text(run(&mut e, &mut s, &[b"info"]));
    assert!(default.contains("used_cpu_user:") && default.contains("role:master"));
    assert!(!default.contains("cmdstat_"));
    let all = text(run(&mut e, &mut s, &[b"info", b"commandSTATS"]));
    assert!(all.contains("cmdstat_set:calls=1,"), "{all}");
    assert!(all.contains(
        "cmdstat_incr:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1"
    ));
    assert!(!all.contains("used_memory"));
    run(&mut e, &mut s, &[b"config", b"resetstat"]);
    let after = text(run(&mut e, &mut s, &[b"info", b"commandstats"]));
    assert!(!after.contains("cmdstat_set"), "{after}");
}

#[test]
fn kv_smove_of_a_member_already_there_leaves_watchers_alone() {
    let mut e = Engine::new(EngineConfig::default());
    let mut a = e.open_session();
    let mut b = e.open_session();
    run(&mut e, &mut a, &[b"sadd", b"src", b"a", b"b"]);
    run(&mut e, &mut a, &[b"sadd", b"dst", b"a"]);
    run(&mut e, &mut a, &[b"watch", b"dst"]);
    run(&mut e, &mut a, &[b"multi"]);
    run(&mut e, &mut a, &[b"sadd", b"dst", b"c"]);
    assert_eq!(
        run(&mut e, &mut b, &[b"smove", b"src", b"dst", b"a"]),
        b":1\r\n"
    );
    assert_eq!(run(&mut e, &mut a, &[b"exec"]), b"*1\r\n:1\r\n");
    assert_eq!(run(&mut e, &mut a, &[b"scard", b"dst"]), b":2\r\n");
    assert_eq!(run(&mut e, &mut a, &[b"scard", b"src"]), b":1\r\n");
}
