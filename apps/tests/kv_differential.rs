//! Differential test of `nicemu kv` against Debian's `redis-server`: the same seeded stream of
//! requests (valid and wrong: wrong arity, wrong types, non-integers, overflows, unknown
//! commands, binary values, expiry options, inline and multibulk forms, pipelined batches,
//! protocol errors) goes to a real redis-server over a unix socket (no network needed) and to
//! the kv engine directly (sans-I/O: parser + engine), and the reply bytes must be identical.
//!
//! Tolerances: TTL and PTTL replies (the two servers read their clocks at slightly different
//! moments) are compared within a second (1 for TTL, 1000 for PTTL); replies whose order
//! Redis leaves undefined (HGETALL, SMEMBERS, SINTER, KEYS, ...) are compared as multisets.
//! Everything else is byte for byte.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apps::kv::resp::{encode_request, reply_len};

#[path = "kv_diff/admin.rs"]
mod admin;
#[path = "kv_diff/resp3.rs"]
mod resp3;
#[path = "kv_diff/types.rs"]
mod types;
use apps::kv::{unix_ms, Connection, Engine, EngineConfig, ProtoLimits, RunState};

/// A redis-server child on a unix socket in its own directory; killed and cleaned up on drop
/// (also when the test fails).
struct Redis {
    child: Child,
    dir: PathBuf,
    sock: PathBuf,
}

impl Redis {
    fn start() -> Redis {
        let dir = std::env::temp_dir().join(format!(
            "nicemu-kv-diff-{}-{}",
            std::process::id(),
            unix_ms()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sock = dir.join("redis.sock");
        let child = Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(&sock)
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                panic!(
                    "kv differential test needs Debian's redis-server on PATH \
                     (apt-get install redis-server): {e}"
                );
            }
        };
        let r = Redis { child, dir, sock };
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(&r.sock).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not open {}",
                r.sock.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        r
    }

    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).expect("connect to redis-server");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// splitmix64: a small seeded generator (the test must be reproducible).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// One generated request, with how to compare its reply.
struct Req {
    bytes: Vec<u8>,
    /// Replies it produces (0 for an empty inline line).
    replies: usize,
    /// TTL / PTTL: compare the integers within this tolerance.
    tolerance: Option<i64>,
    /// An array whose order is undefined: compare its elements, in groups of this many
    /// (2 for field-value pairs), as a multiset.
    unordered: Option<usize>,
}

/// A generated command and how to compare its reply.
struct Generated {
    args: Vec<Vec<u8>>,
    tolerance: Option<i64>,
    unordered: Option<usize>,
}

const SYNC: &str = "~~sync~~";

struct Gen {
    rng: Rng,
    now_s: i64,
    /// A MULTI was sent and no EXEC/DISCARD since: no TTL or unordered replies then (they
    /// would sit inside EXEC's array, compared byte for byte).
    multi: bool,
}

impl Gen {
    fn key(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0 => b"bin\x00\r\nkey".to_vec(),
            1 => b"list".to_vec(),
            2 => b"num".to_vec(),
            _ => format!("k{}", self.rng.below(8)).into_bytes(),
        }
    }

    fn value(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=2 => self.int_str().into_bytes(),
            3 => Vec::new(),
            4 => {
                let n = self.rng.below(40000) as usize;
                (0..n).map(|_| self.rng.next() as u8).collect()
            }
            _ => {
                let n = self.rng.below(24) as usize;
                (0..n).map(|_| self.rng.next() as u8).collect()
            }
        }
    }

    fn int_str(&mut self) -> String {
        match self.rng.below(12) {
            0 => i64::MAX.to_string(),
            1 => i64::MIN.to_string(),
            2 => (i64::MAX - 1).to_string(),
            3 => "9223372036854775808".into(),
            4 => "-0".into(),
            5 => "01".into(),
            6 => " 1".into(),
            7 => "1.5".into(),
            8 => "abc".into(),
            _ => (self.rng.below(2000) as i64 - 1000).to_string(),
        }
    }

    fn name(&mut self, n: &str) -> Vec<u8> {
        match self.rng.below(3) {
            0 => n.to_ascii_uppercase().into_bytes(),
            1 => n
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect::<String>()
                .into_bytes(),
            _ => n.as_bytes().to_vec(),
        }
    }

    fn ttl_opt(&mut self) -> Vec<Vec<u8>> {
        let b = |s: &str| s.as_bytes().to_vec();
        match self.rng.below(14) {
            0 => vec![
                b("EX"),
                (100_000 + self.rng.below(1000)).to_string().into_bytes(),
            ],
            1 => vec![
                b("PX"),
                (100_000_000 + self.rng.below(1000))
                    .to_string()
                    .into_bytes(),
            ],
            2 => vec![b("EXAT"), (self.now_s + 100_000).to_string().into_bytes()],
            3 => vec![
                b("PXAT"),
                ((self.now_s + 100_000) * 1000).to_string().into_bytes(),
            ],
            4 => vec![b("EX"), b("0")],
            5 => vec![b("PX"), b("-5")],
            6 => vec![b("EX"), b("x")],
            7 => vec![b("EX"), b("9223372036854775")],
            8 => vec![b("EX"), b("9223372036854776")],
            9 => vec![b("KEEPTTL")],
            10 => vec![b("NX")],
            11 => vec![b("XX")],
            12 => vec![b("GET")],
            _ => vec![b("BOGUS")],
        }
    }

    fn expire_arg(&mut self, cmd: &str) -> Vec<u8> {
        let at = cmd.ends_with("at");
        let ms = cmd.starts_with('p');
        let v: i64 = match self.rng.below(8) {
            0 => -1,
            1 => 0,
            2 => i64::MAX,
            3 => i64::MAX / 1000 + 1,
            _ => {
                let secs =
                    if at { self.now_s + 200_000 } else { 200_000 } + self.rng.below(1000) as i64;
                if ms {
                    secs * 1000
                } else {
                    secs
                }
            }
        };
        if self.rng.chance(5) {
            return b"soon".to_vec();
        }
        v.to_string().into_bytes()
    }

    /// A request: 60% from the typed families (kv_diff/types.rs), the rest below.
    fn command(&mut self) -> Generated {
        if self.rng.chance(60) {
            return self.typed_command();
        }
        let (args, tolerance) = self.basic_command();
        Generated {
            args,
            tolerance,
            unordered: None,
        }
    }

    /// A string / key / list / connection command, and the tolerance of a TTL reply.
    fn basic_command(&mut self) -> (Vec<Vec<u8>>, Option<i64>) {
        let b = |s: &str| s.as_bytes().to_vec();
        let mut ttl = None;
        let which = self.rng.below(40);
        let mut a: Vec<Vec<u8>> = match which {
            0..=3 => {
                let mut v = vec![self.name("set"), self.key(), self.value()];
                for _ in 0..self.rng.below(3) {
                    v.extend(self.ttl_opt());
                }
                v
            }
            4..=6 => vec![self.name("get"), self.key()],
            7 => {
                let mut v = vec![self.name("mget")];
                for _ in 0..1 + self.rng.below(4) {
                    v.push(self.key());
                }
                v
            }
            8 => {
                let mut v = vec![self.name("mset")];
                for _ in 0..1 + self.rng.below(5) {
                    v.push(self.key());
                    if self.rng.chance(90) {
                        v.push(self.value());
                    }
                }
                v
            }
            9 => {
                let mut v = vec![self.name("del")];
                for _ in 0..1 + self.rng.below(3) {
                    v.push(self.key());
                }
                v
            }
            10 => {
                let mut v = vec![self.name("exists")];
                for _ in 0..1 + self.rng.below(3) {
                    v.push(self.key());
                }
                v
            }
            11 => vec![self.name("incr"), self.key()],
            12 => vec![self.name("decr"), self.key()],
            13 => vec![self.name("incrby"), self.key(), self.int_str().into_bytes()],
            14 => vec![self.name("decrby"), self.key(), self.int_str().into_bytes()],
            15 => vec![self.name("append"), self.key(), self.value()],
            16 => vec![self.name("strlen"), self.key()],
            17 | 18 => {
                let c = self
                    .rng
                    .pick(&["expire", "pexpire", "expireat", "pexpireat"]);
                let mut v = vec![self.name(c), self.key(), self.expire_arg(c)];
                for _ in 0..self.rng.below(3) {
                    v.push(b(self.rng.pick(&["NX", "XX", "GT", "LT", "nope"])));
                }
                v
            }
            19 | 20 => {
                let c = self.rng.pick(&["ttl", "pttl", "expiretime", "pexpiretime"]);
                ttl = Some(if c.starts_with('p') { 1000 } else { 1 });
                vec![self.name(c), self.key()]
            }
            21 => vec![self.name("persist"), self.key()],
            22 => vec![self.name("type"), self.key()],
            23 | 24 => {
                let mut v = vec![
                    {
                        let c = self.rng.pick(&["lpush", "rpush"]);
                        self.name(c)
                    },
                    self.key(),
                ];
                for _ in 0..1 + self.rng.below(3) {
                    v.push(self.value());
                }
                v
            }
            25 => {
                let mut v = vec![
                    {
                        let c = self.rng.pick(&["lpop", "rpop"]);
                        self.name(c)
                    },
                    self.key(),
                ];
                if self.rng.chance(50) {
                    v.push(b(self.rng.pick(&["0", "1", "3", "-1", "x"])));
                }
                v
            }
            26 => vec![self.name("llen"), self.key()],
            27 => vec![
                self.name("lrange"),
                self.key(),
                b(self.rng.pick(&["0", "-1", "1", "-2", "5", "x"])),
                b(self.rng.pick(&["0", "-1", "1", "-2", "100", "y"])),
            ],
            28 => {
                let c = self.rng.pick(&["setnx", "getset", "getdel"]);
                let mut v = vec![self.name(c), self.key()];
                if c != "getdel" {
                    v.push(self.value());
                }
                v
            }
            29 => {
                let c = self.rng.pick(&["setex", "psetex"]);
                let t = if c == "setex" { "100000" } else { "100000000" };
                let t = if self.rng.chance(30) { "-3" } else { t };
                vec![self.name(c), self.key(), b(t), self.value()]
            }
            30 => vec![self.name("dbsize")],
            31 => {
                let mut v = vec![self.name("ping")];
                if self.rng.chance(50) {
                    v.push(self.value());
                }
                v
            }
            32 => vec![self.name("echo"), self.value()],
            33 => vec![
                self.name("select"),
                b(self.rng.pick(&["0", "1", "-1", "x", "99999999999"])),
            ],
            34 => {
                // Unknown commands, some with long or binary arguments.
                let mut v = vec![b(self.rng.pick(&["foo", "nosuchcmd", "GETT", "x"]))];
                for _ in 0..self.rng.below(5) {
                    let n = self.rng.below(70) as usize;
                    v.push((0..n).map(|_| self.rng.next() as u8).collect());
                }
                v
            }
            35 => vec![
                self.name("config"),
                self.name("get"),
                b(self.rng.pick(&[
                    "save",
                    "appendonly",
                    "SAVE",
                    "maxmemory",
                    "nosuch",
                    "appendonl?",
                ])),
            ],
            36 => match self.rng.below(4) {
                0 => vec![
                    self.name("client"),
                    self.name("setname"),
                    b(self.rng.pick(&["me", "bad name", ""])),
                ],
                1 => vec![self.name("client"), self.name("getname")],
                2 => vec![self.name("client"), b("nope")],
                _ => vec![self.name("client")],
            },
            37 => {
                let c = self.rng.pick(&["flushdb", "flushall"]);
                let mut v = vec![self.name(c)];
                if self.rng.chance(50) {
                    v.push(b(self.rng.pick(&["sync", "ASYNC", "now"])));
                }
                v
            }
            38 => vec![
                self.name("msetnx"),
                self.key(),
                self.value(),
                self.key(),
                self.value(),
            ],
            // Not HELLO 2/3 nor a bare HELLO: the reply carries the client id, which differs
            // (RESP3 sessions are phase 3's).
            _ => vec![self.name("hello"), b(self.rng.pick(&["4", "1", "x", "-2"]))],
        };
        let hello = which >= 39;
        // Wrong arity now and then: drop or add an argument.
        if ttl.is_none() && !hello && a.len() > 1 && self.rng.chance(4) {
            a.pop();
        } else if ttl.is_none() && !hello && self.rng.chance(3) {
            a.push(b("extra"));
        }
        (a, ttl)
    }

    fn request(&mut self) -> Req {
        if self.rng.chance(2) {
            return Req {
                bytes: b"\r\n".to_vec(),
                replies: 0,
                tolerance: None,
                unordered: None,
            };
        }
        let mut g = self.command();
        // Inside a transaction, replies land in EXEC's array: keep them exact.
        while self.multi && (g.tolerance.is_some() || g.unordered.is_some()) {
            g = self.command();
        }
        let args = g.args;
        let line = inline(&args);
        // Inline lines stay well under Redis's 64 KB inline limit (a longer one would be
        // refused or not depending on how the server's reads split it).
        let bytes = if self.rng.chance(25) && line.len() < 8192 {
            line
        } else {
            encode_request(&args)
        };
        Req {
            bytes,
            replies: 1,
            tolerance: g.tolerance,
            unordered: g.unordered,
        }
    }
}

/// The inline form of `args`: plain tokens as they are, others double-quoted with escapes.
fn inline(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        let plain = !a.is_empty()
            && a.iter()
                .all(|&c| c.is_ascii_graphic() && c != b'"' && c != b'\'');
        if plain {
            out.extend_from_slice(a);
        } else {
            out.push(b'"');
            for &c in a {
                match c {
                    b'"' | b'\\' => {
                        out.push(b'\\');
                        out.push(c);
                    }
                    0x20..=0x7e => out.push(c),
                    _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
                }
            }
            out.push(b'"');
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The nicemu side: feeds `bytes` in 16 KB reads (as redis-server reads) and collects replies.
fn nicemu(engine: &mut Engine, conn: &mut Connection, bytes: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    if bytes.is_empty() {
        // Nothing to send: what other clients left for this one is still delivered.
        let closed = conn.input(engine, b"", unix_ms(), &mut out) == RunState::Close;
        return (out, closed);
    }
    for chunk in bytes.chunks(16 * 1024) {
        if conn.input(engine, chunk, unix_ms(), &mut out) == RunState::Close {
            return (out, true);
        }
    }
    (out, false)
}

fn split_replies(mut b: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let n = reply_len(b)
            .unwrap_or_else(|| panic!("malformed reply stream: {:?}", String::from_utf8_lossy(b)));
        v.push(&b[..n]);
        b = &b[n..];
    }
    v
}

fn show(b: &[u8]) -> String {
    b[..b.len().min(300)].escape_ascii().to_string()
}

/// Reads from redis until the buffer ends with `tail`.
fn read_until(s: &mut UnixStream, tail: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while !got.ends_with(tail) {
        match s.read(&mut buf) {
            Ok(0) => panic!("redis closed the connection; got {}", show(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("reading from redis: {e}; got so far {}", show(&got)),
        }
    }
    got
}

fn read_to_end(s: &mut UnixStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("reading from redis: {e}; got so far {}", show(&got)),
        }
    }
}

fn limits() -> ProtoLimits {
    // Redis's compiled-in inline limit (PROTO_INLINE_MAX_SIZE), so both refuse the same lines.
    ProtoLimits {
        max_inline_len: 64 * 1024,
        ..ProtoLimits::default()
    }
}

/// The elements of an array reply in groups of `group`, sorted (a reply that is not an
/// array stays whole).
fn elements(reply: &[u8], group: usize) -> Vec<Vec<u8>> {
    let Some(rest) = reply.strip_prefix(b"*") else {
        return vec![reply.to_vec()];
    };
    let end = rest.windows(2).position(|w| w == b"\r\n").unwrap_or(0);
    let n: usize = String::from_utf8_lossy(&rest[..end]).parse().unwrap_or(0);
    let mut items = Vec::new();
    let mut b = &rest[end + 2..];
    for _ in 0..n {
        let l = reply_len(b).unwrap_or(b.len());
        items.push(b[..l].to_vec());
        b = &b[l..];
    }
    let mut groups: Vec<Vec<u8>> = items.chunks(group.max(1)).map(|c| c.concat()).collect();
    groups.sort();
    groups
}

fn compare(reqs: &[Req], ours: &[u8], theirs: &[u8], batch: usize) {
    if ours == theirs {
        return;
    }
    let a = split_replies(ours);
    let b = split_replies(theirs);
    let mut tol = Vec::new();
    for r in reqs {
        for _ in 0..r.replies {
            tol.push(r.tolerance);
        }
    }
    tol.push(None); // the sync PING
    assert_eq!(a.len(), b.len(), "batch {batch}: reply counts differ");
    assert_eq!(a.len(), tol.len(), "batch {batch}: reply count vs requests");
    let mut k = 0;
    for (ri, r) in reqs.iter().enumerate() {
        for _ in 0..r.replies {
            let (x, y) = (a[k], b[k]);
            if x != y {
                let close = match (r.tolerance, x.first(), y.first()) {
                    _ if r.unordered.is_some() => {
                        let g = r.unordered.unwrap_or(1);
                        elements(x, g) == elements(y, g)
                    }
                    (Some(t), Some(b':'), Some(b':')) => {
                        let p = |v: &[u8]| -> i64 {
                            String::from_utf8_lossy(&v[1..v.len() - 2]).parse().unwrap()
                        };
                        let (p, q) = (p(x), p(y));
                        // -1 (no expiry) and -2 (no key) must match exactly.
                        ![-1, -2].contains(&p)
                            && ![-1, -2].contains(&q)
                            && (p as i128 - q as i128).abs() <= t as i128
                    }
                    _ => false,
                };
                assert!(
                    close,
                    "batch {batch}, request {ri} {}\nnicemu: {}\nredis:  {}",
                    show(&r.bytes),
                    show(x),
                    show(y)
                );
            }
            k += 1;
        }
    }
}

#[test]
fn kv_differential_against_redis_server() {
    let redis = Redis::start();
    let mut engine = Engine::new(EngineConfig::default());
    let mut gen = Gen {
        // A fixed seed; KV_DIFF_SEED explores others (a failure prints the batch to replay).
        rng: Rng(std::env::var("KV_DIFF_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x6b76_2d64_6966_6631)),
        now_s: unix_ms() / 1000,
        multi: false,
    };

    // Phase 1: pipelined batches on one connection.
    let mut rs = redis.connect();
    let mut conn = Connection::new(&mut engine, limits());
    let mut total = 0;
    for batch in 0..2000 {
        let n = 1 + gen.rng.below(if batch % 10 == 0 { 60 } else { 12 }) as usize;
        let mut reqs: Vec<Req> = (0..n).map(|_| gen.request()).collect();
        total += n;
        // Every batch ends outside a transaction, so the sync PING is answered.
        reqs.push(Req {
            bytes: encode_request(&[b"DISCARD"]),
            replies: 1,
            tolerance: None,
            unordered: None,
        });
        gen.multi = false;
        let mut bytes: Vec<u8> = reqs.iter().flat_map(|r| r.bytes.iter().copied()).collect();
        let sync = format!("{SYNC}{batch}");
        bytes.extend_from_slice(&encode_request(&[b"PING".as_slice(), sync.as_bytes()]));
        let mut tail = Vec::new();
        apps::kv::resp::bulk(&mut tail, sync.as_bytes());

        rs.write_all(&bytes).expect("write to redis");
        let theirs = read_until(&mut rs, &tail);
        let (ours, closed) = nicemu(&mut engine, &mut conn, &bytes);
        assert!(!closed, "batch {batch}: nicemu closed the connection");
        compare(&reqs, &ours, &theirs, batch);
    }
    assert!(total > 15000, "only {total} requests");
    let st = engine.stats.clone();
    eprintln!(
        "phase 1: {total} requests, {} commands, errors {:?}",
        st.commands, st.errors_by_kind
    );
    // The stream must exercise the error paths it is meant to.
    for kind in ["ERR", "WRONGTYPE"] {
        assert!(
            st.errors_by_kind.get(kind).copied().unwrap_or(0) >= 20,
            "few {kind} errors: {st:?}"
        );
    }

    // Phase 2: protocol errors and connection ends, one fresh connection each: the bytes
    // go out, the write side is shut, and everything until the close must match.
    let mut cases: Vec<Vec<u8>> = vec![
        b"*x\r\n".to_vec(),
        b"*1\r\nx\r\n".to_vec(),
        b"*2\r\n$3\r\nGET\r\n\r\n".to_vec(),
        b"*1\r\n$-1\r\n".to_vec(),
        b"*1\r\n$600000000\r\n".to_vec(),
        b"*1\r\n$01\r\nx\r\n".to_vec(),
        b"*3000000000\r\n".to_vec(),
        b"*-3\r\nPING\r\n".to_vec(),
        b"PING\r\nSET k \"unbalanced\r\nPING\r\n".to_vec(),
        b"SET k \"a\"b\r\n".to_vec(),
        b"SET k 'a'b\r\n".to_vec(),
        b"ECHO \"\\x41\\n\\q\" 'it\\'s'\r\n".to_vec(),
        b"PING\r\nQUIT\r\nPING\r\n".to_vec(),
        b"*1\r$4\rXPINGzz*1\r\n$4\r\nPING\r\n".to_vec(),
        b"PI\x00NG\r\nPING\r\n".to_vec(),
        b"PING\nPING\r\n  ECHO   a\tb  \r\n".to_vec(),
        [b"ECHO ".as_slice(), &vec![b'a'; 100 * 1024], b"\r\n"].concat(),
        [b"*".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
        [b"*1\r\n$".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
        b"*2\r\n$4\r\nECHO\r\n$3\r\nabc".to_vec(),
    ];
    for _ in 0..40 {
        // Random junk after a valid request.
        let n = 1 + gen.rng.below(60) as usize;
        let mut c = b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n".to_vec();
        let first = gen.rng.pick(b"*$E\"");
        c.push(first);
        c.extend((0..n).map(|_| {
            gen.rng.pick(&[
                b'*', b'$', b'\r', b'\n', b'1', b'-', b'"', b'\'', b' ', b'x', 0u8, b'\\',
            ])
        }));
        cases.push(c);
    }
    for (i, case) in cases.iter().enumerate() {
        let mut s = redis.connect();
        s.write_all(case).expect("write to redis");
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let theirs = read_to_end(&mut s);
        let mut c = Connection::new(&mut engine, limits());
        let (ours, _) = nicemu(&mut engine, &mut c, case);
        assert_eq!(
            show(&ours),
            show(&theirs),
            "protocol case {i}: {}",
            show(case)
        );
        assert_eq!(ours, theirs, "protocol case {i}");
    }
    eprintln!(
        "phase 2: {} cases, {} closed by protocol errors",
        cases.len(),
        engine.stats.protocol_errors
    );
    assert!(engine.stats.protocol_errors >= 15);

    // Phase 3: a RESP3 session.
    resp3::phase(&redis, &mut engine);

    // Phase 4: scripts over several connections (CONFIG, AUTH, ...).
    admin::phase(&redis);
}
