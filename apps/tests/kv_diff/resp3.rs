//! Phase 3 of the differential test: a RESP3 session (HELLO 3) on both servers, the same
//! commands, replies in RESP3's types (nulls, maps, sets, doubles, member-score pairs)
//! compared byte for byte.

use std::io::Write;

use apps::kv::resp::encode_request;
use apps::kv::{Connection, Engine};

use super::{limits, nicemu, read_until, show, Redis, SYNC};

/// Runs the RESP3 script against `redis` and `engine`.
pub(super) fn phase(redis: &Redis, engine: &mut Engine) {
    // The client id in HELLO's reply differs between the servers: HELLO is sent without
    // comparing its bytes.
    let script: &[&[&str]] = &[
        &["SET", "r3s", "v"],
        &["GET", "r3none"],
        &["MGET", "r3s", "r3none"],
        &["SADD", "r3set", "a"],
        &["SMEMBERS", "r3set"],
        &["SMEMBERS", "r3none"],
        &["SINTER", "r3set", "r3none"],
        &["SUNION", "r3set"],
        &["SRANDMEMBER", "r3set", "3"],
        &["HSET", "r3h", "f", "v"],
        &["HGETALL", "r3h"],
        &["HGETALL", "r3none"],
        &["HRANDFIELD", "r3h", "1", "WITHVALUES"],
        &["ZADD", "r3z", "1.5", "a", "2", "b", "inf", "c", "1.1", "d"],
        &["ZSCORE", "r3z", "d"],
        &["ZSCORE", "r3z", "c"],
        &["ZMSCORE", "r3z", "a", "nope"],
        &["ZINCRBY", "r3z", "1", "a"],
        &["ZADD", "r3z", "INCR", "1", "a"],
        &["ZADD", "r3z", "NX", "INCR", "1", "a"],
        &["ZRANGE", "r3z", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "r3z", "0", "-1"],
        &[
            "ZREVRANGEBYSCORE",
            "r3z",
            "+inf",
            "-inf",
            "WITHSCORES",
            "LIMIT",
            "1",
            "2",
        ],
        &["ZPOPMIN", "r3z"],
        &["ZPOPMAX", "r3z", "2"],
        &["ZPOPMIN", "r3none", "2"],
        &["LPOP", "r3none", "2"],
        &["CONFIG", "GET", "save"],
        &["INCRBYFLOAT", "r3f", "1.5"],
        &["WATCH", "r3s"],
        &["SET", "r3s", "changed"],
        &["MULTI"],
        &["GET", "r3s"],
        &["EXEC"],
        &["MULTI"],
        &["GET", "r3none"],
        &["ZSCORE", "r3z", "d"],
        &["HGETALL", "r3h"],
        &["EXEC"],
        &["SPOP", "r3set", "5"],
        &["GET", "r3wrong", "extra"],
        &["ZSCORE", "r3h", "x"],
    ];
    let mut rs = redis.connect();
    let mut c = Connection::new(engine, limits());
    let hello = encode_request(&[b"HELLO".as_slice(), b"3"]);
    rs.write_all(&hello).expect("write to redis");
    let theirs = read_until(&mut rs, b"*0\r\n");
    let (ours, _) = nicemu(engine, &mut c, &hello);
    assert!(theirs.starts_with(b"%7\r\n") && ours.starts_with(b"%7\r\n"));
    assert_eq!(theirs.len(), ours.len(), "{}", show(&ours));
    let mut bytes = Vec::new();
    for (i, cmd) in script.iter().enumerate() {
        bytes.extend(encode_request(cmd));
        // Inside MULTI the sync PING would be queued: send the transaction whole.
        if cmd[0] == "MULTI" || (bytes.starts_with(b"*1\r\n$5\r\nMULTI") && cmd[0] != "EXEC") {
            continue;
        }
        let sync = format!("{SYNC}r3-{i}");
        bytes.extend_from_slice(&encode_request(&[b"PING".as_slice(), sync.as_bytes()]));
        let mut tail = Vec::new();
        apps::kv::resp::bulk(&mut tail, sync.as_bytes());
        rs.write_all(&bytes).expect("write to redis");
        let theirs = read_until(&mut rs, &tail);
        let (ours, _) = nicemu(engine, &mut c, &bytes);
        assert_eq!(show(&ours), show(&theirs), "RESP3 {cmd:?}");
        bytes.clear();
    }
}
