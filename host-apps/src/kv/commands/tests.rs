//! Unit tests of the command engine: error wordings, SET options, maxmemory, glob.
use super::*;

pub(super) fn run(e: &mut Engine, s: &mut Session, args: &[&[u8]]) -> Vec<u8> {
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
        (&[b"select", b"16"], b"-ERR DB index is out of range\r\n"),
        (
            &[b"hello", b"4"],
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

#[test]
fn kv_glob_nested_stars_stay_fast() {
    // Redis's skipLongerMatches: without it this pattern takes exponential time.
    let key = [b'a'; 40];
    let pat = b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
    let t = std::time::Instant::now();
    assert!(!glob_match(pat, &key, false));
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    assert!(glob_match(b"a*a*b", b"aaab", false));
    assert!(glob_match(b"*b*c", b"abxc", false));
}

#[test]
fn expiretime_near_the_largest_expiry_is_rounded_without_overflow() {
    let mut e = Engine::new(EngineConfig::default());
    let mut s = e.open_session();
    run(&mut e, &mut s, &[b"set", b"k", b"v"]);
    assert_eq!(
        run(
            &mut e,
            &mut s,
            &[b"pexpireat", b"k", b"9223372036854775807"]
        ),
        b":1\r\n"
    );
    // redis-server 7.0.15 answers the exact rounding, not a wrapped negative.
    assert_eq!(
        run(&mut e, &mut s, &[b"expiretime", b"k"]),
        b":9223372036854776\r\n"
    );
    assert_eq!(
        run(&mut e, &mut s, &[b"pexpiretime", b"k"]),
        b":9223372036854775807\r\n"
    );
}
