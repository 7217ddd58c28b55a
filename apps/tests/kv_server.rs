//! `nicemu kv` on the host stack, end to end: two nicemu nodes on the in-memory wire in
//! virtual time; A runs [`KvServer`] (setup and teardown offloads on, the default), B's host
//! stack is the Redis client. Replies are checked against the sans-I/O engine fed the same
//! bytes, and for a few requests against literal RESP.

use std::net::SocketAddrV4;

use apps::kv::resp::{encode_request, reply_len};
use apps::kv::server::{KvConfig, KvServer};
use apps::kv::{Connection, Engine, EngineConfig, ProtoLimits};
use apps::node::{pair_specs, wire_pair, Pair, A_IP};
use dataplane::port::wire::Impairments;
use hoststack::{Errno, Fd};

const PORT: u16 = 6379;
const MS: u64 = 1_000_000;
/// Unix time of the virtual clock's zero.
const EPOCH_MS: i64 = 1_700_000_000_000;

fn now_ms(p: &Pair) -> i64 {
    EPOCH_MS + (p.clock.now_ns() / MS) as i64
}

fn pair() -> Pair {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 300 * MS;
    }
    wire_pair(a, b, Impairments::default(), Impairments::default())
}

/// A client connection on B: sends `out`, collects what comes back until the server closes.
struct Client {
    fd: Fd,
    out: Vec<u8>,
    sent: usize,
    got: Vec<u8>,
    eof: bool,
    reading: bool,
}

impl Client {
    fn open(p: &mut Pair, out: Vec<u8>) -> Client {
        let fd = p.b.host.socket().unwrap();
        p.b.host.set_nonblocking(fd, true).unwrap();
        assert_eq!(
            p.b.host.connect(fd, SocketAddrV4::new(A_IP.into(), PORT)),
            Err(Errno::InProgress)
        );
        Client {
            fd,
            out,
            sent: 0,
            got: Vec::new(),
            eof: false,
            reading: true,
        }
    }

    fn step(&mut self, p: &mut Pair) {
        while self.sent < self.out.len() {
            match p.b.host.write(self.fd, &self.out[self.sent..]) {
                Ok(w) if w > 0 => self.sent += w,
                _ => break,
            }
        }
        let mut buf = [0u8; 8192];
        while self.reading && !self.eof {
            match p.b.host.read(self.fd, &mut buf) {
                Ok(0) => self.eof = true,
                Ok(k) => self.got.extend_from_slice(&buf[..k]),
                Err(_) => break,
            }
        }
    }

    fn replies(&self) -> usize {
        let mut n = 0;
        let mut b = &self.got[..];
        while let Some(l) = reply_len(b) {
            n += 1;
            b = &b[l..];
        }
        n
    }
}

/// What the sans-I/O engine answers to `bytes` on a fresh keyspace.
fn reference(bytes: &[u8]) -> Vec<u8> {
    let mut e = Engine::new(EngineConfig {
        port: PORT,
        ..EngineConfig::default()
    });
    let mut c = Connection::new(&mut e, ProtoLimits::default());
    let mut out = Vec::new();
    c.input(&mut e, bytes, EPOCH_MS, &mut out);
    out
}

fn cmd(args: &[&[u8]]) -> Vec<u8> {
    encode_request(args)
}

#[test]
fn kv_server_answers_pipelined_requests_over_the_host_stack() {
    let mut p = pair();
    let mut server = KvServer::new(&mut p.a.host, KvConfig::default()).unwrap();
    // 600 requests in one burst: strings of up to 20 KB (many segments), counters, lists,
    // errors, an inline request; then QUIT.
    let mut req = Vec::new();
    let mut n = 0;
    for i in 0..100u32 {
        let big = vec![b'a' + (i % 26) as u8; (i as usize * 211) % 20_000];
        let k = format!("key{}", i % 17);
        req.extend(cmd(&[b"SET", k.as_bytes(), &big]));
        req.extend(cmd(&[b"GET", k.as_bytes()]));
        req.extend(cmd(&[b"INCRBY", b"counter", i.to_string().as_bytes()]));
        req.extend(cmd(&[b"RPUSH", b"list", k.as_bytes()]));
        req.extend(cmd(&[b"GET", b"list"]));
        req.extend_from_slice(b"EXISTS key1 key2 nokey\r\n");
        n += 6;
    }
    req.extend(cmd(&[b"LRANGE", b"list", b"0", b"4"]));
    req.extend(cmd(&[b"QUIT"]));
    n += 2;
    let want = reference(&req);
    let mut c = Client::open(&mut p, req);
    let ok = p.run_until(2_000_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        c.step(p);
        c.eof
    });
    assert!(ok, "got {} of {n} replies", c.replies());
    assert_eq!(c.replies(), n);
    assert_eq!(c.got.len(), want.len());
    assert!(c.got == want, "replies differ from the engine's");
    assert!(c.got.ends_with(b"+OK\r\n"));
    let st = server.inspect(|e| e.stats.clone());
    assert_eq!(st.commands, n as u64);
    assert_eq!(st.errors_by_kind.get("WRONGTYPE"), Some(&100));
    assert_eq!(server.stats.accepted, 1);
    p.b.host.close(c.fd).unwrap();
    assert!(p.run_until(1_000_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        server.connections() == 0
    }));
    assert_eq!(server.stats.closed, 1);
}

/// One request per connection (SET then QUIT, the server closes first) with the setup and
/// teardown offloads on: every connection comes from the NIC's SYN cookies and every close
/// goes to the NIC; then connections that the client closes right after its reply.
#[test]
fn kv_server_one_request_per_connection_with_offloads() {
    let mut p = pair();
    let mut server = KvServer::new(&mut p.a.host, KvConfig::default()).unwrap();
    let n = 30;
    for client_closes in [false, true] {
        let mut done = 0;
        let mut cur: Option<Client> = None;
        let ok = p.run_until(10_000_000, 20_000, |p| {
            let now = now_ms(p);
            server.step(&mut p.a.host, now);
            if cur.is_none() && done < n {
                let k = format!("conn{}-{done}", client_closes as u8);
                let mut req = cmd(&[b"SET", k.as_bytes(), b"v"]);
                if !client_closes {
                    req.extend(cmd(&[b"QUIT"]));
                }
                cur = Some(Client::open(p, req));
            }
            if let Some(c) = cur.as_mut() {
                c.step(p);
                let expect: &[u8] = if client_closes {
                    b"+OK\r\n"
                } else {
                    b"+OK\r\n+OK\r\n"
                };
                let finished = if client_closes {
                    c.got.len() >= expect.len()
                } else {
                    c.eof
                };
                if finished {
                    assert_eq!(c.got, expect, "connection {done}");
                    p.b.host.close(c.fd).unwrap();
                    cur = None;
                    done += 1;
                }
            }
            done == n && server.connections() == 0 && p.a.teardown().engine().in_progress() == 0
        });
        assert!(ok, "{done} of {n} (client closes: {client_closes})");
    }
    let hs = p.a.host.setup_stats();
    assert_eq!(hs.nic_setups, 2 * n as u64, "{hs:?}");
    let host = p.a.host.stats();
    assert_eq!(host.listener_non_syn, 0);
    eprintln!(
        "host teardown {:?}; server {:?}",
        host.teardown, server.stats
    );
    // Every close went to the NIC: the server's own (QUIT) and those after the client's.
    assert_eq!(host.teardown.offloaded, 2 * n as u64, "{:?}", host.teardown);
    assert_eq!(server.stats.accepted, 2 * n as u64);
    assert_eq!(server.stats.closed, 2 * n as u64);
    assert_eq!(server.inspect(|e| e.store().len()), 2 * n);
    assert_eq!(server.inspect(|e| e.stats.errors), 0);
    assert_eq!(p.a.host.connections(), 0);
}

/// A client that pipelines GETs of a large value without reading: the server's output for
/// it stays bounded (it stops executing and reading), and once the client reads, every reply
/// arrives intact.
#[test]
fn kv_server_bounds_a_client_that_does_not_read() {
    let mut p = pair();
    let cfg = KvConfig {
        max_output: 256 * 1024,
        ..KvConfig::default()
    };
    let max_out = cfg.max_output;
    let max_in = cfg.limits.max_query_buffer;
    let mut server = KvServer::new(&mut p.a.host, cfg).unwrap();
    let value = vec![b'x'; 50_000];
    let mut req = cmd(&[b"SET", b"big", &value]);
    let gets = 400;
    for _ in 0..gets {
        req.extend(cmd(&[b"GET", b"big"]));
    }
    let mut c = Client::open(&mut p, req);
    c.reading = false;
    let mut worst = (0, 0);
    // Run a while without reading: the client's receive window fills, then the server's
    // send buffer, then its output buffer stops at the bound.
    p.run_until(300_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        c.step(p);
        for fd in server.fds() {
            let (i, o) = server.buffered(fd).unwrap();
            worst = (worst.0.max(i), worst.1.max(o));
        }
        false
    });
    assert!(worst.1 > 0, "the output never backed up");
    assert!(
        worst.1 <= max_out + value.len() + 64,
        "output grew to {}",
        worst.1
    );
    assert!(worst.0 <= max_in);
    assert!(server.stats.output_stalls > 0);
    let executed = server.inspect(|e| e.stats.commands);
    eprintln!(
        "not reading: worst input {} B, output {} B, {executed} of {} requests ran, {:?}",
        worst.0,
        worst.1,
        gets + 1,
        server.stats
    );
    assert!(
        executed < gets as u64,
        "all {executed} requests ran without the client reading"
    );
    // Now read everything.
    c.reading = true;
    let ok = p.run_until(5_000_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        c.step(p);
        c.replies() == gets + 1
    });
    assert!(ok, "got {} replies", c.replies());
    let mut one = Vec::new();
    apps::kv::resp::bulk(&mut one, &value);
    let mut want = b"+OK\r\n".to_vec();
    for _ in 0..gets {
        want.extend_from_slice(&one);
    }
    assert!(c.got == want, "replies corrupted");
}

/// A protocol error gets Redis's error reply, then the server closes the connection.
#[test]
fn kv_server_closes_after_a_protocol_error() {
    let mut p = pair();
    let mut server = KvServer::new(&mut p.a.host, KvConfig::default()).unwrap();
    let mut c = Client::open(&mut p, b"PING\r\n*1\r\n$x\r\nPING\r\n".to_vec());
    assert!(serve_until_eof(&mut p, &mut server, &mut c));
    assert_eq!(
        c.got,
        b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    );
    assert_eq!(server.inspect(|e| e.stats.protocol_errors), 1);
}

/// CONFIG RESETSTAT in the middle of a pipelined batch restarts INFO's counters, while the
/// server's own count of its connections' commands goes on (it counts by difference: a
/// counter that went back to zero under it used to underflow).
#[test]
fn kv_server_counts_its_commands_across_a_resetstat() {
    let mut p = pair();
    let mut server = KvServer::new(&mut p.a.host, KvConfig::default()).unwrap();
    let mut req = Vec::new();
    for _ in 0..3 {
        req.extend(cmd(&[b"INCR", b"n"]));
    }
    req.extend(cmd(&[b"GET"]));
    req.extend(cmd(&[b"CONFIG", b"RESETSTAT"]));
    req.extend(cmd(&[b"INCR", b"n"]));
    req.extend(cmd(&[b"QUIT"]));
    let mut c = Client::open(&mut p, req);
    assert!(serve_until_eof(&mut p, &mut server, &mut c));
    assert_eq!(c.replies(), 7, "{:?}", String::from_utf8_lossy(&c.got));
    assert_eq!(server.stats.commands, 7, "{:?}", server.stats);
    assert_eq!(server.stats.error_replies, 1, "{:?}", server.stats);
    // INFO's counters restarted at RESETSTAT: it, the INCR and the QUIT.
    assert_eq!(server.inspect(|e| e.stats.commands), 3);
    assert_eq!(server.inspect(|e| e.stats.errors), 0);
}

/// Steps the server and `c` until the server closes `c`'s connection.
fn serve_until_eof(p: &mut Pair, server: &mut KvServer, c: &mut Client) -> bool {
    p.run_until(2_000_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        c.step(p);
        c.eof
    })
}

/// Past `maxclients`, a new connection is told Redis's error and closed; the connections
/// held keep being served, and a slot freed is usable again.
#[test]
fn kv_server_refuses_past_max_clients_with_redis_error() {
    let mut p = pair();
    let cfg = KvConfig {
        max_connections: 2,
        ..KvConfig::default()
    };
    let mut server = KvServer::new(&mut p.a.host, cfg).unwrap();
    let mut held: Vec<Client> = (0..2)
        .map(|_| Client::open(&mut p, b"PING\r\n".to_vec()))
        .collect();
    assert!(p.run_until(2_000_000, 20_000, |p| {
        let now = now_ms(p);
        server.step(&mut p.a.host, now);
        held.iter_mut().for_each(|c| c.step(p));
        held.iter().all(|c| c.got == b"+PONG\r\n")
    }));
    // The extra client sends nothing: the error comes unasked, as from Redis.
    let mut extra = Client::open(&mut p, Vec::new());
    assert!(serve_until_eof(&mut p, &mut server, &mut extra));
    assert_eq!(extra.got, b"-ERR max number of clients reached\r\n");
    assert_eq!(server.stats.refused, 1, "{:?}", server.stats);
    assert_eq!(server.connections(), 2);
    // The held ones still work; closing one makes room for a new client.
    held[0].out.extend_from_slice(b"QUIT\r\n");
    assert!(serve_until_eof(&mut p, &mut server, &mut held[0]));
    assert_eq!(held[0].got, b"+PONG\r\n+OK\r\n");
    let mut next = Client::open(&mut p, b"PING\r\nQUIT\r\n".to_vec());
    assert!(serve_until_eof(&mut p, &mut server, &mut next));
    assert_eq!(next.got, b"+PONG\r\n+OK\r\n");
    assert_eq!(server.stats.refused, 1, "{:?}", server.stats);
}

/// Steps two nodes (each pair in its own virtual time) with their servers and clients
/// until `done`, at most `steps` rounds.
fn run_two(
    (p1, p2): (&mut Pair, &mut Pair),
    (s1, s2): (&mut KvServer, &mut KvServer),
    xs: &mut [Client],
    ys: &mut [Client],
    steps: usize,
    done: impl Fn(&[Client], &[Client]) -> bool,
) -> bool {
    for _ in 0..steps {
        p1.run_until(1, 20_000, |p| {
            let now = now_ms(p);
            s1.step(&mut p.a.host, now);
            xs.iter_mut().for_each(|c| c.step(p));
            false
        });
        p2.run_until(1, 20_000, |p| {
            let now = now_ms(p);
            s2.step(&mut p.a.host, now);
            ys.iter_mut().for_each(|c| c.step(p));
            false
        });
        if done(xs, ys) {
            return true;
        }
    }
    false
}

fn has(c: &Client, want: &[u8]) -> bool {
    c.got.windows(want.len()).any(|w| w == want)
}

/// Two servers on two host contexts (two nodes here, clients on each) sharing one engine
/// (`SharedKeyspace`), as `nicemu kv` runs with several NIC lcores: a key set through one is
/// read through the other, a PUBLISH through one reaches a subscriber on the other, an RPUSH
/// through one answers a BLPOP blocked on the other, and the other's loop is woken for each
/// push it must deliver.
#[test]
fn kv_servers_of_two_contexts_share_one_keyspace() {
    use apps::kv::keyspace::{Keyspace, SharedKeyspace};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let (mut p1, mut p2) = (pair(), pair());
    let cfg = KvConfig::default();
    let shared = SharedKeyspace::new(Engine::new(KvServer::engine_config(&cfg)), 2);
    let wakes = Arc::new(AtomicUsize::new(0));
    let w = wakes.clone();
    shared.set_waker(
        1,
        Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let ks = |k| Keyspace::Shared(shared.clone(), k);
    let mut s1 = KvServer::with_keyspace(&mut p1.a.host, cfg.clone(), ks(0)).unwrap();
    let mut s2 = KvServer::with_keyspace(&mut p2.a.host, cfg, ks(1)).unwrap();
    let mut xs = [
        Client::open(&mut p1, Vec::new()),
        Client::open(&mut p1, Vec::new()),
    ];
    let mut ys = [
        Client::open(&mut p2, Vec::new()),
        Client::open(&mut p2, Vec::new()),
    ];
    let text = |c: &Client| String::from_utf8_lossy(&c.got).to_string();
    macro_rules! run {
        ($steps:expr, $done:expr) => {
            run_two(
                (&mut p1, &mut p2),
                (&mut s1, &mut s2),
                &mut xs,
                &mut ys,
                $steps,
                $done,
            )
        };
    }

    // A key set on one context is the other's.
    xs[0].out.extend(cmd(&[b"SET", b"k", b"shared-value"]));
    assert!(run!(200_000, |x, _| has(&x[0], b"+OK\r\n")));
    ys[0].out.extend(cmd(&[b"GET", b"k"]));
    assert!(
        run!(200_000, |_, y| has(&y[0], b"$12\r\nshared-value\r\n")),
        "{}",
        text(&ys[0])
    );

    // PUBLISH on context 0 reaches the subscribers on both contexts (each delivers its
    // own), and wakes context 1.
    ys[0].got.clear();
    ys[0].out.extend(cmd(&[b"SUBSCRIBE", b"ch"]));
    xs[1].out.extend(cmd(&[b"SUBSCRIBE", b"ch"]));
    assert!(run!(200_000, |x, y| y[0].replies() == 1 && x[1].replies() == 1));
    xs[0].got.clear();
    let before = wakes.load(Ordering::Relaxed);
    xs[0].out.extend(cmd(&[b"PUBLISH", b"ch", b"hello"]));
    let msg: &[u8] = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n";
    assert!(
        run!(200_000, |x, y| has(&x[0], b":2\r\n")
            && has(&y[0], msg)
            && has(&x[1], msg)),
        "x {} y {}",
        text(&xs[0]),
        text(&ys[0])
    );
    assert!(
        wakes.load(Ordering::Relaxed) > before,
        "context 1 was not woken"
    );

    // A BLPOP on context 1 blocks (nothing comes back for 2,000 rounds) until an RPUSH on
    // context 0 answers it.
    ys[1].out.extend(cmd(&[b"BLPOP", b"q", b"0"]));
    assert!(
        !run!(2_000, |_, y| !y[1].got.is_empty()),
        "{}",
        text(&ys[1])
    );
    xs[0].got.clear();
    xs[0].out.extend(cmd(&[b"RPUSH", b"q", b"item"]));
    assert!(
        run!(200_000, |x, y| has(&x[0], b":1\r\n")
            && has(&y[1], b"*2\r\n$1\r\nq\r\n$4\r\nitem\r\n")),
        "y {}",
        text(&ys[1])
    );
    // Every command counted once, by the server whose client sent it.
    assert_eq!(s1.stats.commands, 4, "{:?}", s1.stats);
    assert_eq!(s2.stats.commands, 3, "{:?}", s2.stats);
    assert_eq!(shared.lock().stats.commands, 7);
    assert_eq!(shared.lock().stats.connected, 4);
    assert_eq!((s1.connections(), s2.connections()), (2, 2));
}
