//! The command table: name, arity (negative: at least that many arguments, the name
//! included), flags and key positions of each command, as Redis 7.0's `COMMAND INFO`
//! reports them.

use std::sync::OnceLock;

use super::*;

/// A handler that sees the session (connection and transaction commands).
pub(super) type Handler = fn(&mut Engine, &mut Session, &[Vec<u8>], i64, &mut Vec<u8>) -> Flow;
/// A handler of a data command: the engine, the arguments, the time, the reply.
pub(super) type Plain = fn(&mut Engine, &[Vec<u8>], i64, &mut Vec<u8>);

pub(super) const WRITE: u8 = 1;
pub(super) const READONLY: u8 = 2;
pub(super) const DENYOOM: u8 = 4;
pub(super) const FAST: u8 = 8;

/// How a command runs.
pub(super) enum Run {
    /// Through its subcommands only (CLIENT, CONFIG, OBJECT).
    Subs,
    /// With the session.
    Full(Handler),
    /// Without the session.
    Plain(Plain),
}

pub(super) struct Cmd {
    pub(super) name: &'static str,
    pub(super) arity: i32,
    pub(super) flags: u8,
    /// First key, last key, step (COMMAND INFO).
    pub(super) keys: (i32, i32, i32),
    pub(super) run: Run,
    pub(super) subs: &'static [Cmd],
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
        run: Run::Full(run),
        subs: &[],
    }
}

/// A data command on one key at argument 1.
const fn key1(name: &'static str, arity: i32, flags: u8, run: Plain) -> Cmd {
    plain(name, arity, flags, KEY1, run)
}

const fn plain(
    name: &'static str,
    arity: i32,
    flags: u8,
    keys: (i32, i32, i32),
    run: Plain,
) -> Cmd {
    Cmd {
        name,
        arity,
        flags,
        keys,
        run: Run::Plain(run),
        subs: &[],
    }
}

const fn parent(name: &'static str, arity: i32, subs: &'static [Cmd]) -> Cmd {
    Cmd {
        name,
        arity,
        flags: 0,
        keys: NOKEYS,
        run: Run::Subs,
        subs,
    }
}

const NOKEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);
const TWOKEYS: (i32, i32, i32) = (1, 2, 1);
const W: u8 = WRITE;
const WF: u8 = WRITE | FAST;
const WD: u8 = WRITE | DENYOOM;
const WDF: u8 = WRITE | DENYOOM | FAST;
const R: u8 = READONLY;
const RF: u8 = READONLY | FAST;

static CLIENT_SUBS: [Cmd; 10] = [
    cmd("unblock", -3, 0, NOKEYS, client_unblock),
    cmd("id", 2, FAST, NOKEYS, client_id),
    cmd("list", -2, 0, NOKEYS, client_list),
    cmd("info", 2, 0, NOKEYS, client_info),
    cmd("kill", -3, 0, NOKEYS, client_kill),
    cmd("no-evict", 3, 0, NOKEYS, client_no_evict),
    cmd("reply", 3, 0, NOKEYS, client_reply),
    cmd("getname", 2, FAST, NOKEYS, client_getname),
    cmd("setname", 3, FAST, NOKEYS, client_setname),
    cmd("setinfo", 4, FAST, NOKEYS, client_setinfo),
];
static CONFIG_SUBS: [Cmd; 3] = [
    cmd("get", -3, 0, NOKEYS, config_get),
    cmd("set", -4, 0, NOKEYS, config_set),
    cmd("resetstat", 2, 0, NOKEYS, config_resetstat),
];
static PUBSUB_SUBS: [Cmd; 3] = [
    cmd("channels", -2, 0, NOKEYS, pubsub_channels),
    cmd("numsub", -2, 0, NOKEYS, pubsub_numsub),
    cmd("numpat", 2, 0, NOKEYS, pubsub_numpat),
];
static MEMORY_SUBS: [Cmd; 1] = [plain("usage", -3, R, (2, 2, 1), memory_usage)];
static FUNCTION_SUBS: [Cmd; 1] = [cmd("flush", -2, W, NOKEYS, function_flush)];
static COMMAND_SUBS: [Cmd; 4] = [
    cmd("count", 2, 0, NOKEYS, command_count),
    cmd("docs", -2, 0, NOKEYS, command_docs),
    cmd("info", -2, 0, NOKEYS, command_info),
    cmd("list", -2, 0, NOKEYS, command_list),
];
static OBJECT_SUBS: [Cmd; 2] = [
    plain("encoding", 3, R, (2, 2, 1), object_encoding),
    plain("refcount", 3, R, (2, 2, 1), object_refcount),
];

/// The top-level command named `name` (any case), through a hash index built on first use.
pub(super) fn find_command(name: &[u8]) -> Option<&'static Cmd> {
    // The table is fixed, so a client cannot aim names at its buckets: no SipHash needed.
    static INDEX: OnceLock<crate::kv::idmap::IdMap<&'static [u8], usize>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    });
    let mut buf = [0u8; 24];
    let low = buf.get_mut(..name.len())?;
    low.copy_from_slice(name);
    low.make_ascii_lowercase();
    index.get(&low[..]).map(|&i| &COMMANDS[i])
}

/// Every command.
pub(super) static COMMANDS: &[Cmd] = &[
    // Connection and server.
    cmd("ping", -1, FAST, NOKEYS, ping),
    cmd("echo", 2, FAST, NOKEYS, echo),
    cmd("quit", -1, FAST, NOKEYS, quit),
    cmd("hello", -1, FAST, NOKEYS, hello),
    cmd("select", 2, FAST, NOKEYS, select),
    parent("client", -2, &CLIENT_SUBS),
    parent("config", -2, &CONFIG_SUBS),
    parent("function", -2, &FUNCTION_SUBS),
    parent("memory", -2, &MEMORY_SUBS),
    cmd("auth", -2, FAST, NOKEYS, auth),
    Cmd {
        name: "command",
        arity: -1,
        flags: 0,
        keys: NOKEYS,
        run: Run::Full(command_all),
        subs: &COMMAND_SUBS,
    },
    plain("dbsize", 1, RF, NOKEYS, dbsize),
    plain("flushall", -1, W, NOKEYS, flushall),
    plain("flushdb", -1, W, NOKEYS, flushdb),
    plain("swapdb", 3, WF, NOKEYS, swapdb),
    cmd("info", -1, 0, NOKEYS, info),
    cmd("time", 1, FAST, NOKEYS, time),
    // Publish/subscribe.
    cmd("subscribe", -2, 0, NOKEYS, subscribe),
    cmd("unsubscribe", -1, 0, NOKEYS, unsubscribe),
    cmd("psubscribe", -2, 0, NOKEYS, psubscribe),
    cmd("punsubscribe", -1, 0, NOKEYS, punsubscribe),
    cmd("publish", 3, FAST, NOKEYS, publish),
    parent("pubsub", -2, &PUBSUB_SUBS),
    // Transactions.
    cmd("multi", 1, FAST, NOKEYS, multi),
    cmd("exec", 1, 0, NOKEYS, exec),
    cmd("discard", 1, FAST, NOKEYS, discard),
    cmd("watch", -2, FAST, ALLKEYS, watch),
    cmd("unwatch", 1, FAST, NOKEYS, unwatch),
    // Strings.
    key1("get", 2, RF, get),
    key1("set", -3, WD, set),
    key1("setnx", 3, WDF, setnx),
    key1("setex", 4, WD, setex),
    key1("psetex", 4, WD, psetex),
    key1("getset", 3, WDF, getset),
    key1("getdel", 2, WF, getdel),
    key1("getex", -2, WF, getex),
    plain("mget", -2, RF, ALLKEYS, mget),
    plain("mset", -3, WD, (1, -1, 2), mset),
    plain("msetnx", -3, WD, (1, -1, 2), msetnx),
    key1("incr", 2, WDF, incr),
    key1("decr", 2, WDF, decr),
    key1("incrby", 3, WDF, incrby),
    key1("decrby", 3, WDF, decrby),
    key1("incrbyfloat", 3, WDF, incrbyfloat),
    key1("append", 3, WDF, append),
    key1("strlen", 2, RF, strlen),
    key1("getrange", 4, R, getrange),
    key1("substr", 4, R, getrange),
    key1("setrange", 4, WD, setrange),
    key1("setbit", 4, WD, setbit),
    key1("getbit", 3, RF, getbit),
    // Keys.
    plain("del", -2, W, ALLKEYS, del),
    plain("unlink", -2, WF, ALLKEYS, del),
    plain("exists", -2, RF, ALLKEYS, exists),
    plain("touch", -2, RF, ALLKEYS, exists),
    key1("type", 2, RF, type_cmd),
    key1("expire", -3, WF, expire),
    key1("pexpire", -3, WF, pexpire),
    key1("expireat", -3, WF, expireat),
    key1("pexpireat", -3, WF, pexpireat),
    key1("ttl", 2, RF, ttl),
    key1("pttl", 2, RF, pttl),
    key1("expiretime", 2, RF, expiretime),
    key1("pexpiretime", 2, RF, pexpiretime),
    key1("persist", 2, WF, persist),
    plain("keys", 2, R, NOKEYS, keys),
    plain("scan", -2, R, NOKEYS, scan),
    plain("randomkey", 1, R, NOKEYS, randomkey),
    plain("rename", 3, W, TWOKEYS, rename),
    plain("renamenx", 3, WF, TWOKEYS, renamenx),
    plain("copy", -3, WD, TWOKEYS, copy),
    key1("move", 3, WF, move_cmd),
    parent("object", -2, &OBJECT_SUBS),
    // Lists.
    key1("lpush", -3, WDF, lpush),
    key1("rpush", -3, WDF, rpush),
    key1("lpushx", -3, WDF, lpushx),
    key1("rpushx", -3, WDF, rpushx),
    key1("lpop", -2, WF, lpop),
    key1("rpop", -2, WF, rpop),
    key1("llen", 2, RF, llen),
    key1("lrange", 4, R, lrange),
    key1("lindex", 3, R, lindex),
    key1("lset", 4, WD, lset),
    key1("ltrim", 4, W, ltrim),
    key1("lrem", 4, W, lrem),
    key1("linsert", 5, WD, linsert),
    key1("lpos", -3, R, lpos),
    plain("lmove", 5, WD, TWOKEYS, lmove),
    cmd("blpop", -3, W, (1, -2, 1), blocking),
    cmd("brpop", -3, W, (1, -2, 1), blocking),
    cmd("blmove", 6, WD, TWOKEYS, blocking),
    cmd("brpoplpush", 4, WD, TWOKEYS, blocking),
    cmd("bzpopmin", -3, WF, (1, -2, 1), blocking),
    cmd("bzpopmax", -3, WF, (1, -2, 1), blocking),
    plain("lmpop", -4, W, NOKEYS, lmpop),
    cmd("blmpop", -5, W, NOKEYS, blocking),
    plain("zmpop", -4, W, NOKEYS, zmpop),
    cmd("bzmpop", -5, W, NOKEYS, blocking),
    plain("rpoplpush", 3, WD, TWOKEYS, rpoplpush),
    // Hashes.
    key1("hset", -4, WDF, hset),
    key1("hmset", -4, WDF, hmset),
    key1("hsetnx", 4, WDF, hsetnx),
    key1("hget", 3, RF, hget),
    key1("hmget", -3, RF, hmget),
    key1("hdel", -3, WF, hdel),
    key1("hgetall", 2, R, hgetall),
    key1("hkeys", 2, R, hkeys),
    key1("hvals", 2, R, hvals),
    key1("hlen", 2, RF, hlen),
    key1("hexists", 3, RF, hexists),
    key1("hstrlen", 3, RF, hstrlen),
    key1("hincrby", 4, WDF, hincrby),
    key1("hincrbyfloat", 4, WDF, hincrbyfloat),
    key1("hrandfield", -2, R, hrandfield),
    // Sets.
    key1("sadd", -3, WDF, sadd),
    key1("srem", -3, WF, srem),
    key1("smembers", 2, R, smembers),
    key1("sismember", 3, RF, sismember),
    key1("smismember", -3, RF, smismember),
    key1("scard", 2, RF, scard),
    key1("spop", -2, WF, spop),
    key1("srandmember", -2, R, srandmember),
    plain("smove", 4, WF, TWOKEYS, smove),
    plain("sinter", -2, R, ALLKEYS, sinter),
    plain("sunion", -2, R, ALLKEYS, sunion),
    plain("sdiff", -2, R, ALLKEYS, sdiff),
    plain("sinterstore", -3, WD, ALLKEYS, sinterstore),
    plain("sintercard", -3, R, NOKEYS, sintercard),
    plain("sunionstore", -3, WD, ALLKEYS, sunionstore),
    plain("sdiffstore", -3, WD, ALLKEYS, sdiffstore),
    // Sorted sets.
    key1("zadd", -4, WDF, zadd),
    key1("zincrby", 4, WDF, zincrby),
    key1("zscore", 3, RF, zscore),
    key1("zmscore", -3, RF, zmscore),
    key1("zcard", 2, RF, zcard),
    key1("zcount", 4, RF, zcount),
    key1("zlexcount", 4, RF, zlexcount),
    key1("zrank", 3, RF, zrank),
    key1("zrevrank", 3, RF, zrevrank),
    key1("zrem", -3, WF, zrem),
    key1("zrange", -4, R, zrange),
    key1("zrevrange", -4, R, zrevrange),
    key1("zrangebyscore", -4, R, zrangebyscore),
    key1("zrevrangebyscore", -4, R, zrevrangebyscore),
    key1("zrangebylex", -4, R, zrangebylex),
    key1("zrevrangebylex", -4, R, zrevrangebylex),
    key1("zpopmin", -2, WF, zpopmin),
    key1("zpopmax", -2, WF, zpopmax),
    key1("zremrangebyrank", 4, W, zremrangebyrank),
    key1("zremrangebyscore", 4, W, zremrangebyscore),
    key1("zremrangebylex", 4, W, zremrangebylex),
    plain("zunion", -3, R, NOKEYS, zunion),
    plain("zinter", -3, R, NOKEYS, zinter),
    plain("zdiff", -3, R, NOKEYS, zdiff),
    plain("zunionstore", -4, WD, KEY1, zunionstore),
    plain("zinterstore", -4, WD, KEY1, zinterstore),
    plain("zdiffstore", -4, WD, KEY1, zdiffstore),
    plain("zintercard", -3, R, NOKEYS, zintercard),
    key1("zrandmember", -2, R, zrandmember),
    plain("zrangestore", -5, WD, TWOKEYS, zrangestore),
];
