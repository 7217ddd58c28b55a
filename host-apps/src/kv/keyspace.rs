//! Where a [`KvServer`](super::server::KvServer)'s engine lives: its own ([`Keyspace::Own`],
//! one host context, no lock), or one engine shared by the servers of several host contexts
//! ([`SharedKeyspace`]), so that a process with N NIC lcores serves one Redis keyspace from
//! N host contexts, each holding the connections its queue received.
//!
//! Sharing keeps Redis's semantics: every command runs with the engine locked, and a
//! connection's requests between two reads run under one lock, so MULTI/EXEC, WATCH and
//! the blocking commands are as atomic as on one thread (Redis executes commands one at a
//! time). What one server's command leaves for another's connections (a PUBLISH to a
//! subscriber, the reply of a BLPOP that an LPUSH unblocked, CLIENT KILL) sits in the
//! engine's outboxes; the engine knows which server holds each connection
//! ([`Engine::set_owner`]), the command's server raises that server's *pending* flag and
//! wakes its loop, and that server delivers ([`Engine::take_dirty_of`]). A server looks at
//! the engine between commands only when its flag is up, so idle loops never take the lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::Engine;

/// Wakes one host context's loop (rings the doorbell it sleeps on).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// One engine shared by the servers `0..n` of a process.
///
/// Invariant: a server's pending flag is raised after every command that left something in
/// the outbox of one of its connections (or marked one to be closed), before the lock is
/// released, so a server that finds its flag down has nothing to deliver.
pub struct SharedKeyspace {
    engine: Mutex<Engine>,
    pending: Box<[AtomicBool]>,
    wakers: Box<[OnceLock<Waker>]>,
}

impl SharedKeyspace {
    /// `engine` shared by `servers` servers (at least one).
    pub fn new(engine: Engine, servers: usize) -> Arc<Self> {
        let n = servers.max(1);
        Arc::new(SharedKeyspace {
            engine: Mutex::new(engine),
            pending: (0..n).map(|_| AtomicBool::new(false)).collect(),
            wakers: (0..n).map(|_| OnceLock::new()).collect(),
        })
    }

    /// Sets how server `k`'s loop is woken (once; later calls are ignored). Until it is
    /// set, what others leave for `k` waits for `k`'s next iteration.
    pub fn set_waker(&self, k: usize, wake: Waker) {
        if let Some(w) = self.wakers.get(k) {
            let _ = w.set(wake);
        }
    }

    /// The engine, locked. A server that panicked while holding it left the engine as the
    /// last command did; the others go on with it.
    pub fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes server `k`'s pending flag.
    fn take_pending(&self, k: usize) -> bool {
        self.pending
            .get(k)
            .is_some_and(|p| p.swap(false, Ordering::AcqRel))
    }

    /// With the engine locked by server `me`: raises the flag of every server that has
    /// clients in the engine's dirty list, and wakes those other than `me`.
    fn notify(&self, engine: &Engine, me: usize) {
        let mask = engine.dirty_owners();
        if mask == 0 {
            return;
        }
        for (k, p) in self.pending.iter().enumerate() {
            if mask & (1u64 << (k % 64)) != 0 && !p.swap(true, Ordering::AcqRel) && k != me {
                if let Some(w) = self.wakers[k].get() {
                    w();
                }
            }
        }
    }
}

/// A server's engine: its own, or its share of a [`SharedKeyspace`] as server `k`.
pub enum Keyspace {
    /// The engine of one server.
    Own(Box<Engine>),
    /// Server `k` of a shared engine.
    Shared(Arc<SharedKeyspace>, usize),
}

impl Keyspace {
    /// Runs `f` on the engine (locked when shared; other servers that `f`'s commands left
    /// something for are woken before the lock is released).
    #[inline]
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Engine) -> R) -> R {
        match self {
            Keyspace::Own(e) => f(e),
            Keyspace::Shared(s, k) => {
                let mut e = s.lock();
                let r = f(&mut e);
                s.notify(&e, *k);
                r
            }
        }
    }

    /// Runs `f` on the engine for reading (locked while it runs, when shared).
    pub fn read<R>(&self, f: impl FnOnce(&Engine) -> R) -> R {
        match self {
            Keyspace::Own(e) => f(e),
            Keyspace::Shared(s, _) => f(&s.lock()),
        }
    }

    /// This server's index among those sharing the engine (0 for its own).
    pub fn index(&self) -> usize {
        match self {
            Keyspace::Own(_) => 0,
            Keyspace::Shared(_, k) => *k,
        }
    }

    /// Whether a command (this server's or another's) may have left something for this
    /// server since the last call (always true for an engine of its own, which
    /// [`Engine::take_dirty`] answers cheaply).
    pub fn take_pending(&self) -> bool {
        match self {
            Keyspace::Own(_) => true,
            Keyspace::Shared(s, k) => s.take_pending(*k),
        }
    }

    /// The clients of this server with pushes waiting or to be closed.
    pub fn take_dirty(&mut self) -> Vec<u64> {
        match self {
            Keyspace::Own(e) => e.take_dirty(),
            Keyspace::Shared(s, k) => {
                let mut e = s.lock();
                let v = e.take_dirty_of(*k);
                s.notify(&e, *k);
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::kv::resp::encode_request;
    use crate::kv::{Connection, EngineConfig, ProtoLimits};

    fn engine() -> Engine {
        Engine::new(EngineConfig::default())
    }

    /// A command that leaves a push for another server's client raises and wakes that
    /// server only, and the push is that server's to take.
    #[test]
    fn a_push_for_another_server_raises_and_wakes_only_that_one() {
        let shared = SharedKeyspace::new(engine(), 3);
        let rung: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        for (k, r) in rung.iter().enumerate() {
            let r = r.clone();
            shared.set_waker(k, Arc::new(move || _ = r.fetch_add(1, Ordering::Relaxed)));
        }
        let mut ks: Vec<Keyspace> = (0..3)
            .map(|k| Keyspace::Shared(shared.clone(), k))
            .collect();
        let (mut sub, mut publ) = ks[2].with(|e| {
            let sub = Connection::new(e, ProtoLimits::default());
            e.set_owner(sub.session().id, 2);
            (sub, Connection::new(e, ProtoLimits::default()))
        });
        let mut out = Vec::new();
        ks[2].with(|e| sub.input(e, &encode_request(&[&b"SUBSCRIBE"[..], b"c"]), 0, &mut out));
        // Server 0 publishes: server 2 is raised and woken, servers 0 and 1 are not.
        ks[0].with(|e| {
            publ.input(
                e,
                &encode_request(&[&b"PUBLISH"[..], b"c", b"m"]),
                0,
                &mut out,
            )
        });
        let counts: Vec<usize> = rung.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        assert_eq!(counts, [0, 0, 1]);
        assert!(!ks[1].take_pending());
        assert!(ks[2].take_pending());
        assert!(!ks[2].take_pending(), "the flag is taken once");
        assert_eq!(ks[1].take_dirty(), Vec::<u64>::new());
        assert_eq!(ks[2].take_dirty(), vec![sub.session().id]);
    }

    /// 200,000 SET and GET commands (16 per call, as `lock_cost` sends them) on one
    /// engine, for an instruction count per command that the machine's noise does not move:
    /// `valgrind --tool=callgrind <the host-apps test binary> kv::keyspace::tests::engine_commands --ignored`,
    /// then the inclusive count of this function over 200,000.
    #[test]
    #[ignore = "a measurement; run by hand under callgrind (see the doc comment)"]
    fn engine_commands() {
        let mut e = engine();
        let mut c = Connection::new(&mut e, ProtoLimits::default());
        let mut req = Vec::new();
        for i in 0..8 {
            let k = format!("key:{i}");
            req.extend(encode_request(&[
                &b"SET"[..],
                k.as_bytes(),
                b"0123456789abcdef",
            ]));
            req.extend(encode_request(&[&b"GET"[..], k.as_bytes()]));
        }
        let mut out = Vec::new();
        for _ in 0..200_000 / 16 {
            out.clear();
            c.input(&mut e, &req, 0, &mut out);
        }
        assert_eq!(e.stats.commands, 200_000);
    }

    /// Commands per second through `threads` threads, each with its own connection
    /// pipelining SET and GET on keys of its own, 16 requests per lock: with one engine per
    /// thread and with one engine shared by all (the lock and the engine's cache lines
    /// moving between cores). A measurement, not a check:
    /// `cargo test --release -p host-apps --lib kv::keyspace::tests::lock_cost -- --ignored --nocapture`
    #[test]
    #[ignore = "a measurement; run by hand (see the doc comment)"]
    fn lock_cost() {
        const BATCH: usize = 16;
        let run = |threads: usize, shared: bool| -> f64 {
            let one = SharedKeyspace::new(engine(), threads);
            let stop = Arc::new(AtomicBool::new(false));
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let mut ks = if shared {
                        Keyspace::Shared(one.clone(), t)
                    } else {
                        Keyspace::Own(Box::new(engine()))
                    };
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        let mut c = ks.with(|e| Connection::new(e, ProtoLimits::default()));
                        let mut req = Vec::new();
                        for i in 0..BATCH / 2 {
                            let k = format!("t{t}:key:{i}");
                            req.extend(encode_request(&[
                                &b"SET"[..],
                                k.as_bytes(),
                                b"0123456789abcdef",
                            ]));
                            req.extend(encode_request(&[&b"GET"[..], k.as_bytes()]));
                        }
                        let (mut out, mut n) = (Vec::new(), 0u64);
                        while !stop.load(Ordering::Relaxed) {
                            out.clear();
                            ks.with(|e| c.input(e, &req, 0, &mut out));
                            n += BATCH as u64;
                        }
                        n
                    })
                })
                .collect();
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_secs(2));
            stop.store(true, Ordering::Relaxed);
            let n: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            n as f64 / t0.elapsed().as_secs_f64()
        };
        for threads in [1, 2] {
            let own = run(threads, false);
            let shared = run(threads, true);
            println!(
                "threads {threads}: own engines {:.2} M commands/s, one shared engine {:.2} M/s ({:.2}x)",
                own / 1e6,
                shared / 1e6,
                shared / own
            );
        }
    }
}
