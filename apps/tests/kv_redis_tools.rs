//! Redis's own tools against the kv engine: `redis-cli` and `redis-benchmark` (Debian's
//! redis-tools, installed with redis-server) talk to the engine served over a unix socket
//! (no network needed) by a small blocking driver of [`Connection`]. This checks what the
//! tools ask on connect (COMMAND DOCS, CONFIG GET save/appendonly, CLIENT SETINFO, ...) and
//! that their workloads run without errors.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apps::kv::{unix_ms, Connection, Engine, EngineConfig, ProtoLimits, RunState};

struct Served {
    dir: PathBuf,
    sock: PathBuf,
    engine: Arc<Mutex<Engine>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn client(engine: Arc<Mutex<Engine>>, mut s: UnixStream) {
    let mut conn = Connection::new(&mut engine.lock().unwrap(), ProtoLimits::default());
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut out = Vec::new();
        let st = conn.input(&mut engine.lock().unwrap(), &buf[..n], unix_ms(), &mut out);
        if s.write_all(&out).is_err() || st == RunState::Close {
            break;
        }
    }
    conn.close(&mut engine.lock().unwrap());
}

fn serve() -> Served {
    // Tests run in parallel: a counter keeps their directories apart.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "nicemu-kv-tools-{}-{}-{n}",
        std::process::id(),
        unix_ms()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("kv.sock");
    let l = UnixListener::bind(&sock).unwrap();
    let engine = Arc::new(Mutex::new(Engine::new(EngineConfig::default())));
    let e = engine.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let e = e.clone();
            std::thread::spawn(move || client(e, s));
        }
    });
    Served { dir, sock, engine }
}

fn tool(name: &str, args: &[&str]) -> String {
    let out = Command::new(name)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs {name} (Debian's redis-tools): {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn kv_redis_cli_and_benchmark_run_against_the_engine() {
    let s = serve();
    let sock = s.sock.to_str().unwrap();
    assert_eq!(tool("redis-cli", &["-s", sock, "PING"]).trim(), "PONG");
    assert_eq!(
        tool("redis-cli", &["-s", sock, "SET", "greeting", "hello"]).trim(),
        "OK"
    );
    assert_eq!(
        tool("redis-cli", &["-s", sock, "GET", "greeting"]).trim(),
        "hello"
    );
    assert_eq!(
        tool("redis-cli", &["-s", sock, "INCRBY", "n", "41"]).trim(),
        "41"
    );
    let info = tool("redis-cli", &["-s", sock, "INFO", "keyspace"]);
    assert!(info.contains("db0:keys=2,expires=0,avg_ttl=0"), "{info}");
    // Interactive redis-cli (under a pseudo-terminal) first asks COMMAND DOCS for its help.
    let script = format!("printf 'PING\\nSET x 1\\nGET x\\nquit\\n' | TERM=dumb timeout 20 script -qec 'redis-cli -s {sock}' /dev/null");
    let repl = tool("sh", &["-c", &script]);
    eprintln!("{repl}");
    assert!(repl.contains("PONG") && repl.contains("\"1\""), "{repl}");
    let bench = tool(
        "redis-benchmark",
        &[
            "-s",
            sock,
            "-n",
            "2000",
            "-c",
            "4",
            "-P",
            "8",
            "-t",
            "ping,set,get,incr,lpush,rpop,mset",
            "-q",
        ],
    );
    eprintln!("{bench}");
    assert!(!bench.contains("WARNING"), "{bench}");
    assert!(!bench.to_lowercase().contains("error"), "{bench}");
    let e = s.engine.lock().unwrap();
    assert_eq!(e.stats.errors, 0, "{:?}", e.stats.errors_by_kind);
    assert!(e.stats.commands > 10_000);
    drop(e);
    std::thread::sleep(Duration::from_millis(10));
}

/// `redis-benchmark`'s default run (no `-t`: PING_INLINE, PING_MBULK, SET, GET, INCR, LPUSH,
/// RPUSH, LPOP, RPOP, SADD, HSET, SPOP, ZADD, ZPOPMIN, LRANGE_100..600, MSET), small, in three
/// shapes: plain, pipelined (`-P 16`) and one connection per request (`-k 0`). Each must exit
/// 0, report every test, and cause no error reply.
#[test]
fn kv_redis_benchmark_default_run_has_no_errors() {
    let s = serve();
    let sock = s.sock.to_str().unwrap();
    let tests = [
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "RPUSH",
        "LPOP",
        "RPOP",
        "SADD",
        "HSET",
        "SPOP",
        "ZADD",
        "ZPOPMIN",
        "LRANGE_100",
        "LRANGE_300",
        "LRANGE_500",
        "LRANGE_600",
        "MSET",
    ];
    for extra in [&[][..], &["-P", "16"], &["-k", "0"]] {
        let mut args = vec!["-s", sock, "-n", "2000", "-c", "20", "-q"];
        args.extend_from_slice(extra);
        let out = tool("redis-benchmark", &args);
        eprintln!("{extra:?}:\n{out}");
        assert!(!out.to_lowercase().contains("error"), "{out}");
        // Final lines (progress lines are overwritten after a carriage return).
        let done: Vec<&str> = out
            .split(['\r', '\n'])
            .map(str::trim)
            .filter(|l| l.contains("requests per second"))
            .collect();
        for t in tests {
            assert!(
                done.iter()
                    .any(|l| l.starts_with(&format!("{t}:")) || l.starts_with(&format!("{t} ("))),
                "{extra:?}: no {t} result in\n{out}"
            );
        }
    }
    let e = s.engine.lock().unwrap();
    assert_eq!(e.stats.errors, 0, "{:?}", e.stats.errors_by_kind);
    // The workloads left their keys: a hash, a list, a counter and a string (SPOP and
    // ZPOPMIN emptied the set and the sorted set, which deleted them).
    for (k, t) in [
        (&b"key:__rand_int__"[..], "string"),
        (b"myhash", "hash"),
        (b"mylist", "list"),
        (b"counter:__rand_int__", "string"),
    ] {
        let got = e.store().peek(k).map(|en| en.value.type_name());
        assert_eq!(got, Some(t), "{}", String::from_utf8_lossy(k));
    }
    for k in [&b"myset"[..], b"myzset"] {
        assert!(e.store().peek(k).is_none());
    }
}
