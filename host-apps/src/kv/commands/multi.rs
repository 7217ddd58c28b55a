//! Transactions (Redis 7.0 `multi.c`, <https://redis.io/docs/interact/transactions/>):
//! MULTI queues the commands that follow (`+QUEUED`) until EXEC runs them all at once, with
//! no other client's command in between (the engine runs one command at a time), or DISCARD
//! drops them. A command refused while queueing (unknown, wrong arity, OOM) makes EXEC fail
//! with `-EXECABORT`; errors while running (WRONGTYPE, ...) are replies inside EXEC's array.
//! WATCH makes EXEC fail with a null array when a watched key changed (or expired) since.

use super::*;

/// An open transaction.
#[derive(Clone, Debug, Default)]
pub(super) struct Multi {
    queue: Vec<Vec<Vec<u8>>>,
    /// Union of the queued commands' flags.
    flags: u8,
    /// A command was refused while queueing: EXEC aborts.
    dirty: bool,
}

impl Session {
    /// Marks the open transaction, if any, as failed (Redis's `flagTransaction`).
    pub(super) fn flag_transaction(&mut self) {
        if let Some(m) = &mut self.multi {
            m.dirty = true;
        }
    }

    /// Commands queued in the open transaction (`None`: no MULTI).
    pub(super) fn queued(&self) -> Option<usize> {
        self.multi.as_ref().map(|m| m.queue.len())
    }

    /// Queues a command of the open transaction.
    pub(super) fn queue(&mut self, argv: Vec<Vec<u8>>, flags: u8) {
        if let Some(m) = &mut self.multi {
            m.queue.push(argv);
            m.flags |= flags;
        }
    }
}

impl Engine {
    /// Drops every watch of `s`.
    pub(super) fn unwatch_all(&mut self, s: &mut Session) {
        for (db, key, _) in std::mem::take(&mut s.watched) {
            self.store_mut(db).unwatch(&key);
        }
    }

    /// Whether a key `s` watches changed or expired since it was watched.
    fn watch_broken(&mut self, s: &Session, now: i64) -> bool {
        s.watched.iter().any(|(db, key, v)| {
            let st = self.store_mut(*db);
            st.get(key, now); // an expired key goes now, which counts as a change
            st.version(key) != *v
        })
    }
}

pub(super) fn multi(
    _: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if s.in_multi() {
        resp::error(out, b"MULTI calls can not be nested");
    } else {
        s.multi = Some(Multi::default());
        ok(out);
    }
    Flow::Continue
}

pub(super) fn discard(
    e: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if s.multi.take().is_none() {
        resp::error(out, b"DISCARD without MULTI");
    } else {
        e.unwatch_all(s);
        ok(out);
    }
    Flow::Continue
}

pub(super) fn exec(
    e: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let Some(m) = s.multi.take() else {
        resp::error(out, b"EXEC without MULTI");
        return Flow::Continue;
    };
    let broken = e.watch_broken(s, now);
    e.unwatch_all(s);
    if m.dirty {
        resp::error(
            out,
            b"-EXECABORT Transaction discarded because of previous errors.",
        );
    } else if broken {
        resp::null_array(out);
    } else if m.flags & DENYOOM != 0 && e.over_maxmemory() {
        let mut msg = b"-EXECABORT Transaction discarded because of: ".to_vec();
        msg.extend_from_slice(&OOM[1..]);
        resp::error(out, &msg);
    } else {
        resp::array_len(out, m.queue.len());
        let mut flow = Flow::Continue;
        e.in_exec = true;
        for argv in &m.queue {
            if e.execute(s, argv, now, out) == Flow::Close {
                flow = Flow::Close;
            }
        }
        e.in_exec = false;
        return flow;
    }
    Flow::Continue
}

pub(super) fn watch(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if s.in_multi() {
        resp::error(out, b"WATCH inside MULTI is not allowed");
        return Flow::Continue;
    }
    for k in &a[1..] {
        if s.watched.iter().any(|(d, w, _)| *d == s.db && w == k) {
            continue;
        }
        e.db.get(k, now); // a key already past its time is gone before the watch starts
        let v = e.db.watch(k);
        s.watched.push((s.db, k.clone(), v));
    }
    ok(out);
    Flow::Continue
}

pub(super) fn unwatch(
    e: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    e.unwatch_all(s);
    ok(out);
    Flow::Continue
}
