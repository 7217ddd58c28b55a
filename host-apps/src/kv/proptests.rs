//! Property tests: arbitrary input never panics the parser or the engine, the parser's
//! memory stays within its limits, and how input is split into reads does not change what
//! is parsed.

use proptest::prelude::*;

use super::resp::{self, Parser, ProtoError, ProtoLimits};
use super::{Connection, Engine, EngineConfig, RunState};

fn small_limits() -> ProtoLimits {
    ProtoLimits {
        max_bulk_len: 64,
        max_inline_len: 48,
        max_multibulk_len: 8,
        max_query_buffer: 256,
    }
}

/// Bytes rich in protocol characters.
fn proto_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(b"*$\r\n-0123456789 \"'\\x\0aPING".to_vec()),
            1 => any::<u8>(),
        ],
        0..200,
    )
}

/// Feeds `chunks` one after the other, taking requests after each; checks the bounds.
fn parse_chunked(chunks: &[Vec<u8>], lim: ProtoLimits) -> (Vec<resp::Args>, Option<ProtoError>) {
    let mut p = Parser::new(lim);
    let mut got = Vec::new();
    for c in chunks {
        if let Err(e) = p.feed(c) {
            return (got, Some(e));
        }
        assert!(p.buffered() <= lim.max_query_buffer);
        loop {
            match p.next_request() {
                Ok(Some(a)) => {
                    assert!(!a.is_empty());
                    // A request never holds more than the connection may buffer (an
                    // inline line that arrives whole may exceed the inline limit, as in
                    // Redis, which checks that limit only while the line end is missing).
                    let bytes: usize = a.iter().map(|x| x.len()).sum();
                    assert!(bytes <= lim.max_query_buffer);
                    got.push(a);
                }
                Ok(None) => break,
                Err(e) => return (got, Some(e)),
            }
            assert!(p.buffered() <= lim.max_query_buffer);
        }
    }
    (got, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn kv_parser_never_panics_and_stays_bounded(chunks in prop::collection::vec(proto_bytes(), 1..8)) {
        let (_, err) = parse_chunked(&chunks, small_limits());
        if let Some(e) = err {
            // Every error is final and answered (or closed) the Redis way.
            if e != ProtoError::QueryBufferLimit {
                let r = e.reply().unwrap();
                prop_assert!(r.starts_with(b"-ERR Protocol error: "));
                prop_assert!(r.ends_with(b"\r\n"));
                prop_assert_eq!(r.iter().filter(|&&b| b == b'\n').count(), 1);
            }
        }
    }

    #[test]
    fn kv_parser_result_does_not_depend_on_read_sizes(
        data in proto_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        // Without length limits in play, splitting the stream anywhere parses the same.
        let lim = ProtoLimits { max_inline_len: 1 << 20, ..ProtoLimits::default() };
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
        at.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for a in at {
            chunks.push(data[prev..a].to_vec());
            prev = a;
        }
        chunks.push(data[prev..].to_vec());
        let whole = parse_chunked(std::slice::from_ref(&data), lim);
        let split = parse_chunked(&chunks, lim);
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn kv_engine_never_panics_and_replies_well_formed(
        reqs in prop::collection::vec(
            (
                prop::sample::select(vec![
                    "get", "set", "del", "exists", "incr", "decrby", "incrby", "mget", "mset",
                    "append", "strlen", "expire", "pexpireat", "ttl", "pttl", "persist", "lpush",
                    "rpop", "lrange", "llen", "type", "select", "hello", "client", "config",
                    "command", "info", "ping", "echo", "flushall", "getset", "msetnx", "setex", "nope",
                ]),
                prop::collection::vec(
                    prop_oneof![
                        prop::sample::select(vec![
                            "k", "l", "EX", "PX", "NX", "XX", "GET", "KEEPTTL", "EXAT", "PXAT", "GT",
                            "LT", "0", "-1", "1", "9223372036854775807", "-9223372036854775808",
                            "setname", "getname", "id", "docs", "count", "info", "save", "*",
                        ]).prop_map(|s| s.as_bytes().to_vec()),
                        prop::collection::vec(any::<u8>(), 0..12),
                    ],
                    0..6,
                ),
            ),
            1..40,
        ),
        maxmemory in prop::sample::select(vec![0u64, 300, 5000]),
    ) {
        let mut e = Engine::new(EngineConfig { maxmemory, ..EngineConfig::default() });
        let mut c = Connection::new(&mut e, ProtoLimits::default());
        let mut now = 1_700_000_000_000i64;
        for (name, args) in reqs {
            let mut argv = vec![name.as_bytes().to_vec()];
            argv.extend(args);
            let mut out = Vec::new();
            let st = c.input(&mut e, &resp::encode_request(&argv), now, &mut out);
            if st == RunState::Close {
                break;
            }
            // Exactly one well-formed reply per request.
            prop_assert_eq!(resp::reply_len(&out), Some(out.len()), "{:?}", String::from_utf8_lossy(&out));
            now += 997;
            e.active_expire(now);
        }
        prop_assert_eq!(e.store().used_memory() == 0, e.store().is_empty());
    }
}
