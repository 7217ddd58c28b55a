//! CLIENT LIST / INFO / KILL / NO-EVICT / REPLY (Redis 7.0 `networking.c`), and the
//! bookkeeping after each command that they and CLIENT REPLY need.

use super::*;

impl Engine {
    /// Notes the address, local address and descriptor of client `id`, and when it
    /// connected (CLIENT LIST's addr, laddr, fd, age).
    pub fn set_peer_addr(&mut self, id: u64, addr: String, laddr: String, fd: i64, now_ms: i64) {
        if let Some(p) = self.peers.get_mut(&id) {
            p.addr = addr;
            p.laddr = laddr;
            p.fd = fd;
            p.created_ms = now_ms;
            p.last_ms = now_ms;
        }
    }

    /// After each command: CLIENT REPLY OFF / SKIP drop the reply (not subscription
    /// confirmations, which Redis 7.0 pushes regardless), and CLIENT LIST's view of the
    /// client is brought up to date.
    pub(super) fn after_command(
        &mut self,
        sess: &mut Session,
        argv: &[Vec<u8>],
        now: i64,
        out: &mut Vec<u8>,
        start: usize,
    ) {
        let name = &argv[0];
        let pushes = is(name, "subscribe")
            || is(name, "unsubscribe")
            || is(name, "psubscribe")
            || is(name, "punsubscribe");
        match sess.reply {
            ReplyMode::On => {}
            ReplyMode::Off => {
                if !pushes {
                    out.truncate(start);
                }
            }
            // The SKIP itself: the next reply goes.
            ReplyMode::Skip => sess.reply = ReplyMode::SkipNext,
            ReplyMode::SkipNext => {
                if !pushes {
                    out.truncate(start);
                }
                sess.reply = ReplyMode::On;
            }
        }
        if let Some(p) = self.peers.get_mut(&sess.id) {
            p.last_ms = now;
            p.db = sess.db;
            p.proto = sess.proto;
            p.multi = sess.queued().map(|n| n as i64).unwrap_or(-1);
            if p.name != sess.name {
                p.name.clone_from(&sess.name);
            }
        }
    }

    /// CLIENT LIST's line of client `id`.
    fn client_line(&self, id: u64, now: i64) -> String {
        let Some(p) = self.peers.get(&id) else {
            return String::new();
        };
        let mut flags = String::new();
        if p.sub + p.psub > 0 {
            flags.push('P');
        }
        if p.multi >= 0 {
            flags.push('x');
        }
        if self.blocked_on(id) {
            flags.push('b');
        }
        if p.no_evict {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={id} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={} \
             psub={} ssub=0 multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 \
             obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user=default redir=-1 resp={}\n",
            p.addr,
            p.laddr,
            p.fd,
            String::from_utf8_lossy(p.name.as_deref().unwrap_or(b"")),
            (now - p.created_ms).max(0) / 1000,
            (now - p.last_ms).max(0) / 1000,
            p.db,
            p.sub,
            p.psub,
            p.multi,
            p.outbox.len(),
            p.outbox.len(),
            if p.cmd.is_empty() { "NULL" } else { &p.cmd },
            p.proto,
        )
    }

    /// The ids of the open clients, oldest first.
    fn client_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.peers.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

pub(super) fn client_list(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let mut ids = e.client_ids();
    if a.len() == 4 && is(&a[2], "type") {
        let t = &a[3];
        if is(t, "pubsub") {
            ids.retain(|id| e.peers.get(id).is_some_and(|p| p.sub + p.psub > 0));
        } else if is(t, "normal") {
            ids.retain(|id| e.peers.get(id).is_some_and(|p| p.sub + p.psub == 0));
        } else if is(t, "master") || is(t, "replica") || is(t, "slave") {
            ids.clear();
        } else {
            let mut m = b"Unknown client type '".to_vec();
            m.extend_from_slice(cstr(t));
            m.push(b'\'');
            resp::error_fmt(out, &m);
            return Flow::Continue;
        }
    } else if a.len() >= 4 && is(&a[2], "id") {
        let mut wanted = Vec::new();
        for x in &a[3..] {
            match string2ll(x) {
                Some(n) if n > 0 => wanted.push(n as u64),
                _ => {
                    resp::error(out, b"Invalid client ID");
                    return Flow::Continue;
                }
            }
        }
        ids.retain(|id| wanted.contains(id));
    } else if a.len() != 2 {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    }
    let s: String = ids.iter().map(|&id| e.client_line(id, now)).collect();
    resp::bulk(out, s.as_bytes());
    Flow::Continue
}

pub(super) fn client_info(
    e: &mut Engine,
    s: &mut Session,
    _: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::bulk(out, e.client_line(s.id, now).as_bytes());
    Flow::Continue
}

/// CLIENT KILL addr (old form: one client or `-ERR No such client`) and CLIENT KILL
/// <filter> <value> ... (ID, ADDR, LADDR, TYPE, SKIPME; the number killed).
pub(super) fn client_kill(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let mut ids = e.client_ids();
    if a.len() == 3 {
        let addr = String::from_utf8_lossy(&a[2]).into_owned();
        ids.retain(|id| e.peers.get(id).is_some_and(|p| p.addr == addr));
        match ids.first() {
            Some(&id) => {
                e.kill(id);
                ok(out);
            }
            None => resp::error(out, b"No such client"),
        }
        return Flow::Continue;
    }
    if a.len() % 2 == 1 {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    }
    let mut skipme = true;
    for pair in a[2..].chunks(2) {
        let (k, v) = (&pair[0], &pair[1]);
        if is(k, "id") {
            match string2ll(v) {
                Some(n) if n > 0 => ids.retain(|&id| id == n as u64),
                _ => {
                    resp::error(out, b"client-id should be greater than 0");
                    return Flow::Continue;
                }
            }
        } else if is(k, "addr") || is(k, "laddr") {
            let want = String::from_utf8_lossy(v).into_owned();
            let local = is(k, "laddr");
            ids.retain(|id| {
                e.peers.get(id).is_some_and(|p| {
                    if local {
                        p.laddr == want
                    } else {
                        p.addr == want
                    }
                })
            });
        } else if is(k, "type") {
            if is(v, "pubsub") {
                ids.retain(|id| e.peers.get(id).is_some_and(|p| p.sub + p.psub > 0));
            } else if is(v, "normal") {
                ids.retain(|id| e.peers.get(id).is_some_and(|p| p.sub + p.psub == 0));
            } else if is(v, "master") || is(v, "replica") || is(v, "slave") {
                ids.clear();
            } else {
                let mut m = b"Unknown client type '".to_vec();
                m.extend_from_slice(cstr(v));
                m.push(b'\'');
                resp::error_fmt(out, &m);
                return Flow::Continue;
            }
        } else if is(k, "skipme") {
            if is(v, "yes") {
                skipme = true;
            } else if is(v, "no") {
                skipme = false;
            } else {
                resp::error(out, SYNTAX);
                return Flow::Continue;
            }
        } else if is(k, "user") {
            if !is(v, "default") {
                let mut m = b"No such user '".to_vec();
                m.extend_from_slice(cstr(v));
                m.push(b'\'');
                resp::error_fmt(out, &m);
                return Flow::Continue;
            }
        } else {
            resp::error(out, SYNTAX);
            return Flow::Continue;
        }
    }
    if skipme {
        ids.retain(|&id| id != s.id);
    }
    for &id in &ids {
        e.kill(id);
    }
    resp::int(out, ids.len() as i64);
    Flow::Continue
}

impl Engine {
    /// Marks client `id` to be disconnected (the server closes it after this command).
    fn kill(&mut self, id: u64) {
        if let Some(p) = self.peers.get_mut(&id) {
            p.killed = true;
            p.outbox = Vec::new();
            self.dirty.push(id);
        }
    }
}

pub(super) fn client_no_evict(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let on = if is(&a[2], "on") {
        true
    } else if is(&a[2], "off") {
        false
    } else {
        resp::error(out, SYNTAX);
        return Flow::Continue;
    };
    if let Some(p) = e.peers.get_mut(&s.id) {
        p.no_evict = on;
    }
    ok(out);
    Flow::Continue
}

pub(super) fn client_reply(
    _: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if is(&a[2], "on") {
        s.reply = ReplyMode::On;
        ok(out);
    } else if is(&a[2], "off") {
        s.reply = ReplyMode::Off;
    } else if is(&a[2], "skip") {
        if s.reply == ReplyMode::On {
            s.reply = ReplyMode::Skip;
        }
    } else {
        resp::error(out, SYNTAX);
    }
    Flow::Continue
}
