//! Blocking pops (Redis 7.0 `t_list.c`, `t_zset.c`, `blocked.c`): BLPOP, BRPOP, BLMOVE,
//! BRPOPLPUSH, BZPOPMIN, BZPOPMAX, and CLIENT UNBLOCK.
//!
//! When every key is empty the client blocks: the engine keeps its command ([`Blocked`]) and
//! queues it on each key, first come first served. After every command the engine looks at
//! the keys clients wait on; one that now holds a value of the right type serves its queue
//! in order, each served client's reply going to its outbox (as published messages do), so
//! a pushed element reaches the longest-waiting client before the pusher's next command.
//! The timeout (seconds, a float; 0 waits for ever) ends the wait with a null array;
//! inside MULTI/EXEC the commands do not block (an empty key answers null at once); the end
//! of the connection removes the wait.

use super::*;

/// A client waiting in a blocking command.
#[derive(Clone, Debug)]
pub(super) struct Blocked {
    argv: Vec<Vec<u8>>,
    db: usize,
    proto: u8,
    /// When the wait ends (Unix ms); `None`: never.
    deadline: Option<i64>,
}

/// Waiting clients: by client and, first come first served, by (database, key).
#[derive(Debug, Default)]
pub(super) struct Waits {
    clients: IdMap<u64, Blocked>,
    keys: HashMap<(usize, Vec<u8>), std::collections::VecDeque<u64>>,
    /// Waited keys that write commands touched, in order (Redis's ready_keys list).
    signaled: Vec<(usize, Vec<u8>)>,
}

/// Redis's getTimeoutFromObjectOrReply in seconds: a float, times 1000, truncated to an
/// integer (which C's conversion makes negative when out of range). `Some(0)`: for ever.
fn parse_timeout(a: &[u8], now: i64, out: &mut Vec<u8>) -> Option<i64> {
    let s = std::str::from_utf8(a)
        .ok()
        .filter(|s| !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_whitespace()));
    let v = s
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| !v.is_nan());
    let Some(v) = v else {
        resp::error(out, b"timeout is not a float or out of range");
        return None;
    };
    let ms = v * 1000.0;
    let t = if ms >= i64::MAX as f64 || ms <= i64::MIN as f64 {
        i64::MIN
    } else {
        ms as i64
    };
    if t < 0 {
        resp::error(out, b"timeout is negative");
        return None;
    }
    if t > 0 && t > i64::MAX - now {
        resp::error(out, b"timeout is out of range");
        return None;
    }
    Some(t)
}

/// The kind of a blocking command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// BLPOP (true: head) / BRPOP.
    List(bool),
    /// BLMOVE / BRPOPLPUSH: source end, destination end.
    Move(bool, bool),
    /// BZPOPMIN (false) / BZPOPMAX (true).
    Zset(bool),
    /// BLMPOP (false) / BZMPOP (true).
    Mpop(bool),
}

fn op_of(argv: &[Vec<u8>]) -> Option<Op> {
    let n = &argv[0];
    if is(n, "blpop") {
        Some(Op::List(true))
    } else if is(n, "brpop") {
        Some(Op::List(false))
    } else if is(n, "brpoplpush") {
        Some(Op::Move(false, true))
    } else if is(n, "blmove") {
        Some(Op::Move(is(&argv[3], "left"), is(&argv[4], "left")))
    } else if is(n, "bzpopmin") {
        Some(Op::Zset(false))
    } else if is(n, "bzpopmax") {
        Some(Op::Zset(true))
    } else if is(n, "blmpop") {
        Some(Op::Mpop(false))
    } else if is(n, "bzmpop") {
        Some(Op::Mpop(true))
    } else {
        None
    }
}

/// The keys a blocking command waits on.
fn keys_of(op: Op, argv: &[Vec<u8>]) -> &[Vec<u8>] {
    match op {
        Op::Move(..) => &argv[1..2],
        Op::Mpop(z) => match parse_mpop(argv, 2, z, &mut Vec::new()) {
            Some(m) => &argv[m.keys],
            None => &[],
        },
        _ => &argv[1..argv.len() - 1],
    }
}

/// Where the timeout is: BLMPOP and BZMPOP take it first.
fn timeout_arg(op: Op, argv: &[Vec<u8>]) -> &[u8] {
    match op {
        Op::Mpop(_) => &argv[1],
        _ => &argv[argv.len() - 1],
    }
}

impl Engine {
    /// Whether key `k` of the current database holds a non-empty value `op` can take;
    /// `Err` (with the WRONGTYPE reply) when it holds another type.
    fn takes(&mut self, op: Op, k: &[u8], now: i64, out: &mut Vec<u8>) -> Result<bool, ()> {
        Ok(match op {
            Op::Zset(_) | Op::Mpop(true) => self
                .read::<ZSet>(k, now, out)?
                .is_some_and(|z| !z.is_empty()),
            _ => self
                .read::<List>(k, now, out)?
                .is_some_and(|l| !l.is_empty()),
        })
    }

    /// Serves `argv` from key `k` (non-empty, of the right type) of the current database.
    fn serve_from(&mut self, op: Op, argv: &[Vec<u8>], k: &[u8], proto: u8, now: i64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut r = Vec::new();
        let key = k.to_vec();
        match op {
            Op::Mpop(zset) => {
                if let Some(m) = parse_mpop(argv, 2, zset, &mut r) {
                    self.mpop_from(&key, &m, zset, now, &mut out);
                    if proto == 3 {
                        to_resp3(if zset { "bzmpop" } else { "blmpop" }, argv, &mut out, 0);
                    }
                }
            }
            Op::List(head) => {
                let cmd = if head { "lpop" } else { "rpop" };
                let pop = if head { lpop } else { rpop };
                pop(self, &[cmd.into(), key.clone()], now, &mut r);
                resp::array_len(&mut out, 2);
                resp::bulk(&mut out, &key);
                out.extend_from_slice(&r);
            }
            Op::Move(from, to) => {
                let end = |l: bool| {
                    if l {
                        b"left".to_vec()
                    } else {
                        b"right".to_vec()
                    }
                };
                let a = [b"lmove".to_vec(), key, argv[2].clone(), end(from), end(to)];
                lmove(self, &a, now, &mut out);
            }
            Op::Zset(max) => {
                let popped = self.write::<ZSet, _>(&key, now, &mut r, false, |z| {
                    z.take_at(if max { z.len() - 1 } else { 0 })
                });
                if let Ok(Some((score, member))) = popped {
                    resp::array_len(&mut out, 3);
                    resp::bulk(&mut out, &key);
                    resp::bulk(&mut out, &member);
                    let mut sc = Vec::new();
                    score_reply(&mut sc, score);
                    if proto == 3 {
                        // `$<n>\r\n<text>\r\n` → `,<text>\r\n`.
                        let n = sc.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
                        out.push(b',');
                        out.extend_from_slice(&sc[n..]);
                    } else {
                        out.extend_from_slice(&sc);
                    }
                }
            }
        }
        out
    }

    /// Clients waiting in blocking commands (INFO's blocked_clients).
    pub fn blocked_count(&self) -> usize {
        self.waits.clients.len()
    }

    /// Whether client `id` waits in a blocking command.
    pub fn blocked_on(&self, id: u64) -> bool {
        self.waits.clients.contains_key(&id)
    }

    /// Ends the wait of client `id` (served, timed out, unblocked or gone).
    fn unblock(&mut self, id: u64) -> Option<Blocked> {
        let b = self.waits.clients.remove(&id)?;
        let op = op_of(&b.argv)?;
        for k in keys_of(op, &b.argv) {
            let slot = (b.db, k.clone());
            if let Some(q) = self.waits.keys.get_mut(&slot) {
                q.retain(|&x| x != id);
                if q.is_empty() {
                    self.waits.keys.remove(&slot);
                }
            }
        }
        Some(b)
    }

    /// Notes that a write command touched `keys` of database `db`: waiters on them are
    /// served in that order (Redis serves the keys in the order they were signaled).
    pub(super) fn signal_keys<'a>(&mut self, db: usize, keys: impl Iterator<Item = &'a Vec<u8>>) {
        if self.waits.clients.is_empty() {
            return;
        }
        for k in keys {
            let slot = (db, k.clone());
            if self.waits.keys.contains_key(&slot) && !self.waits.signaled.contains(&slot) {
                self.waits.signaled.push(slot);
            }
        }
    }

    /// The end of client `id`'s connection.
    pub(super) fn forget_blocked(&mut self, id: u64) {
        self.unblock(id);
    }

    /// Serves the waiting clients whose keys now hold values (Redis's
    /// handleClientsBlockedOnKeys), until no wait can be served.
    pub(super) fn serve_blocked(&mut self, now: i64) {
        if self.waits.clients.is_empty() {
            return;
        }
        let back = self.cur;
        let mut progress = true;
        while progress {
            progress = false;
            // The signaled keys first, in order; then any other waited key that holds
            // something (SWAPDB, RENAME and the like fill keys too).
            let mut slots = std::mem::take(&mut self.waits.signaled);
            let mut rest: Vec<(usize, Vec<u8>)> = self
                .waits
                .keys
                .keys()
                .filter(|k| !slots.contains(k))
                .cloned()
                .collect();
            rest.sort();
            slots.extend(rest);
            for (db, key) in slots {
                self.select_db(db);
                while let Some(&id) = self
                    .waits
                    .keys
                    .get(&(db, key.clone()))
                    .and_then(|q| q.front())
                {
                    let Some(b) = self.waits.clients.get(&id) else {
                        break;
                    };
                    let Some(op) = op_of(&b.argv) else {
                        break;
                    };
                    let mut sink = Vec::new();
                    if self.takes(op, &key, now, &mut sink) != Ok(true) {
                        break;
                    }
                    let Some(b) = self.unblock(id) else {
                        break;
                    };
                    let reply = self.serve_from(op, &b.argv, &key, b.proto, now);
                    self.push_to(id, &reply, now);
                    progress = true;
                }
            }
        }
        self.select_db(back);
    }

    /// Ends the waits whose timeout passed at `now` with Redis's null reply. Call it
    /// periodically.
    pub fn expire_blocked(&mut self, now: i64) {
        if self.waits.clients.is_empty() {
            return;
        }
        let due: Vec<u64> = self
            .waits
            .clients
            .iter()
            .filter(|(_, b)| b.deadline.is_some_and(|d| d <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            if let Some(b) = self.unblock(id) {
                let null: &[u8] = if b.proto == 3 { b"_\r\n" } else { b"*-1\r\n" };
                self.push_to(id, null, now);
            }
        }
    }
}

/// BLPOP / BRPOP / BZPOPMIN / BZPOPMAX key [key ...] timeout, BLMOVE, BRPOPLPUSH.
pub(super) fn blocking(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let Some(op) = op_of(a) else {
        return Flow::Continue;
    };
    if let Op::Mpop(zset) = op {
        if parse_mpop(a, 2, zset, out).is_none() {
            return Flow::Continue;
        }
    }
    if is(&a[0], "blmove") {
        for w in &a[3..5] {
            if !is(w, "left") && !is(w, "right") {
                resp::error(out, SYNTAX);
                return Flow::Continue;
            }
        }
    }
    let Some(timeout) = parse_timeout(timeout_arg(op, a), now, out) else {
        return Flow::Continue;
    };
    for k in keys_of(op, a) {
        match e.takes(op, k, now, out) {
            Err(()) => return Flow::Continue,
            Ok(true) => {
                let r = e.serve_from(op, a, k, s.proto, now);
                out.extend_from_slice(&r);
                return Flow::Continue;
            }
            Ok(false) => {}
        }
    }
    // Inside MULTI/EXEC nothing blocks: an empty key is a null reply (BLMOVE's a null bulk,
    // as Redis's blmoveGenericCommand under CLIENT_DENY_BLOCKING).
    if e.in_exec {
        match op {
            Op::Move(..) => resp::null(out),
            _ => resp::null_array(out),
        }
        return Flow::Continue;
    }
    for k in keys_of(op, a) {
        let q = e.waits.keys.entry((s.db, k.clone())).or_default();
        if !q.contains(&s.id) {
            q.push_back(s.id);
        }
    }
    e.waits.clients.insert(
        s.id,
        Blocked {
            argv: a.to_vec(),
            db: s.db,
            proto: s.proto,
            deadline: (timeout > 0).then(|| now + timeout),
        },
    );
    Flow::Continue
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR].
pub(super) fn client_unblock(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 4 {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    }
    let Ok(id) = parse_i64(&a[2], out) else {
        return Flow::Continue;
    };
    let error = match a.get(3) {
        None => false,
        Some(r) if is(r, "timeout") => false,
        Some(r) if is(r, "error") => true,
        Some(_) => {
            resp::error(out, b"CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
            return Flow::Continue;
        }
    };
    match e.unblock(id as u64) {
        Some(b) => {
            let reply: &[u8] = if error {
                b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
            } else if b.proto == 3 {
                b"_\r\n"
            } else {
                b"*-1\r\n"
            };
            e.push_to(id as u64, reply, now);
            resp::int(out, 1);
        }
        None => resp::int(out, 0),
    }
    Flow::Continue
}
