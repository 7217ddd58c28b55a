//! Publish/subscribe (Redis 7.0 `pubsub.c`): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
//! PUNSUBSCRIBE, PUBLISH, PUBSUB CHANNELS / NUMSUB / NUMPAT.
//!
//! The engine stays sans-I/O: a message for another connection goes to that client's outbox
//! in the engine ([`Peer::outbox`]), which its connection drains before its next request and
//! the server drains as soon as the publishing command has run ([`Engine::take_dirty`]).
//! Outboxes are bounded as Redis bounds a subscriber's output (`client-output-buffer-limit
//! pubsub 32mb 8mb 60`): past the hard limit, or over the soft limit for longer than its
//! seconds, the subscriber is marked to be disconnected and gets nothing more.
//!
//! Replies: RESP2 arrays (`*3 subscribe <channel> <count>`, `*3 message <channel>
//! <payload>`, `*4 pmessage <pattern> <channel> <payload>`), RESP3 push types (`>3`, `>4`), as
//! Redis 7.0 writes them; a RESP2 client with subscriptions may only run (P)SUBSCRIBE,
//! (P)UNSUBSCRIBE, PING, QUIT and RESET, and its PING answers `*2 pong <arg>`.

use super::*;

/// What the engine keeps of each connection for the others: the messages waiting for it and
/// what CLIENT LIST shows.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// Pushes (messages, replies of unblocked commands) waiting for the connection.
    pub(super) outbox: Vec<u8>,
    /// The protocol of the connection (messages are RESP2 arrays or RESP3 pushes).
    pub(super) proto: u8,
    /// Since when the outbox has been over the soft limit (Unix ms).
    pub(super) soft_since: Option<i64>,
    /// To be disconnected (output limit, CLIENT KILL).
    pub(super) killed: bool,
    /// Peer and local address, descriptor (CLIENT LIST's addr, laddr, fd).
    pub(super) addr: String,
    pub(super) laddr: String,
    pub(super) fd: i64,
    /// When the connection was opened and last ran a command (Unix ms).
    pub(super) created_ms: i64,
    pub(super) last_ms: i64,
    /// The last command's full name (`client|list`).
    pub(super) cmd: String,
    /// Selected database, name, channels and patterns subscribed, queued commands (-1: no
    /// MULTI), CLIENT NO-EVICT.
    pub(super) db: usize,
    pub(super) name: Option<Vec<u8>>,
    pub(super) sub: usize,
    pub(super) psub: usize,
    pub(super) multi: i64,
    pub(super) no_evict: bool,
    /// The server (host context) that holds the connection and delivers its pushes, when
    /// several share the engine ([`Engine::set_owner`]); 0 otherwise.
    pub(super) owner: usize,
}

/// Channel and pattern subscriptions of all clients.
#[derive(Debug, Default)]
pub(super) struct PubSub {
    /// Channel → subscribers in subscription order.
    channels: HashMap<Vec<u8>, Vec<u64>>,
    /// Pattern → subscribers, patterns in first-subscription order.
    patterns: Vec<(Vec<u8>, Vec<u64>)>,
}

/// The header of a RESP2 array or a RESP3 push of `n` elements.
fn push_header(out: &mut Vec<u8>, proto: u8, n: usize) {
    out.push(if proto == 3 { b'>' } else { b'*' });
    out.extend_from_slice(n.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `subscribe <channel> <count>` and its kin; `None` as the channel is a null.
fn confirm(out: &mut Vec<u8>, proto: u8, kind: &[u8], ch: Option<&[u8]>, count: usize) {
    push_header(out, proto, 3);
    resp::bulk(out, kind);
    match ch {
        Some(c) => resp::bulk(out, c),
        None if proto == 3 => out.extend_from_slice(b"_\r\n"),
        None => resp::null(out),
    }
    resp::int(out, count as i64);
}

impl Session {
    /// Channels plus patterns subscribed (Redis's clientSubscriptionsCount).
    pub(super) fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
}

impl Engine {
    /// Appends `msg` to client `id`'s outbox under the pubsub output limits at `now`.
    pub(super) fn push_to(&mut self, id: u64, msg: &[u8], now: i64) {
        let (hard, soft, secs) = self.cfg.pubsub_limit;
        let Some(p) = self.peers.get_mut(&id) else {
            return;
        };
        if p.killed {
            return;
        }
        p.outbox.extend_from_slice(msg);
        let len = p.outbox.len() as u64;
        let over_soft = soft > 0 && len > soft;
        if !over_soft {
            p.soft_since = None;
        }
        let since = if over_soft {
            *p.soft_since.get_or_insert(now)
        } else {
            now
        };
        if (hard > 0 && len > hard) || (over_soft && now - since > secs as i64 * 1000) {
            // Redis's closeClientOnOutputBufferLimitReached: dropped, closed asynchronously.
            p.killed = true;
            p.outbox = Vec::new();
            self.stats.output_limit_disconnects += 1;
        }
        self.dirty.push(id);
    }

    /// The clients that have pushes waiting or are to be closed since the last call: the
    /// server serves or closes them.
    pub fn take_dirty(&mut self) -> Vec<u64> {
        let mut v = std::mem::take(&mut self.dirty);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// [`Engine::take_dirty`] for the server `owner` of several that share the engine: the
    /// clients it holds (and those already gone, which it skips); the others' stay for them.
    pub fn take_dirty_of(&mut self, owner: usize) -> Vec<u64> {
        let peers = &self.peers;
        let mine = |id: &u64| peers.get(id).is_none_or(|p| p.owner == owner);
        let mut v: Vec<u64> = self.dirty.iter().copied().filter(mine).collect();
        if v.len() == self.dirty.len() {
            self.dirty.clear();
        } else {
            self.dirty.retain(|id| !mine(id));
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The servers that have clients in [`Engine::take_dirty`]'s list, as a bit mask (bit
    /// `owner % 64`): those a server sharing the engine must wake after a command.
    pub fn dirty_owners(&self) -> u64 {
        self.dirty.iter().fold(0, |m, id| {
            m | self.peers.get(id).map_or(0, |p| 1u64 << (p.owner % 64))
        })
    }

    /// Notes that client `id` is held by server `owner` (see [`Engine::take_dirty_of`]).
    pub fn set_owner(&mut self, id: u64, owner: usize) {
        if let Some(p) = self.peers.get_mut(&id) {
            p.owner = owner;
        }
    }

    /// Whether client `id` is to be disconnected (output limit, CLIENT KILL).
    pub fn killed(&self, id: u64) -> bool {
        self.peers.get(&id).is_some_and(|p| p.killed)
    }

    /// Moves client `id`'s waiting pushes to `out`.
    pub fn drain_outbox(&mut self, id: u64, out: &mut Vec<u8>) {
        if let Some(p) = self.peers.get_mut(&id) {
            if !p.outbox.is_empty() {
                out.append(&mut p.outbox);
                p.soft_since = None;
            }
        }
    }

    /// Removes every subscription of `s` (the connection ends).
    pub(super) fn unsubscribe_all(&mut self, s: &mut Session) {
        for ch in std::mem::take(&mut s.channels) {
            self.pubsub_remove_channel(&ch, s.id);
        }
        for pat in std::mem::take(&mut s.patterns) {
            self.pubsub_remove_pattern(&pat, s.id);
        }
    }

    fn pubsub_remove_channel(&mut self, ch: &[u8], id: u64) {
        if let Some(v) = self.pubsub.channels.get_mut(ch) {
            v.retain(|&x| x != id);
            if v.is_empty() {
                self.pubsub.channels.remove(ch);
            }
        }
    }

    fn pubsub_remove_pattern(&mut self, pat: &[u8], id: u64) {
        if let Some(i) = self.pubsub.patterns.iter().position(|(p, _)| p == pat) {
            let v = &mut self.pubsub.patterns[i].1;
            v.retain(|&x| x != id);
            if v.is_empty() {
                self.pubsub.patterns.remove(i);
            }
        }
    }

    fn sync_subs(&mut self, s: &Session) {
        if let Some(p) = self.peers.get_mut(&s.id) {
            p.sub = s.channels.len();
            p.psub = s.patterns.len();
        }
    }
}

/// Channels (`SUBSCRIBE`) or patterns (`PSUBSCRIBE`): the two kinds of subscription, which
/// Redis keeps in two tables and confirms under two names.
#[derive(Clone, Copy)]
enum Kind {
    Channel,
    Pattern,
}

impl Kind {
    fn of(self, s: &mut Session) -> &mut Vec<Vec<u8>> {
        match self {
            Kind::Channel => &mut s.channels,
            Kind::Pattern => &mut s.patterns,
        }
    }

    fn names(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel => (b"subscribe", b"unsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
        }
    }
}

fn sub(e: &mut Engine, s: &mut Session, a: &[Vec<u8>], out: &mut Vec<u8>, k: Kind) -> Flow {
    for name in &a[1..] {
        if !k.of(s).contains(name) {
            k.of(s).push(name.clone());
            match k {
                Kind::Channel => e
                    .pubsub
                    .channels
                    .entry(name.clone())
                    .or_default()
                    .push(s.id),
                Kind::Pattern => match e.pubsub.patterns.iter_mut().find(|(p, _)| p == name) {
                    Some((_, v)) => v.push(s.id),
                    None => e.pubsub.patterns.push((name.clone(), vec![s.id])),
                },
            }
        }
        confirm(out, s.proto, k.names().0, Some(name), s.subscriptions());
    }
    e.sync_subs(s);
    Flow::Continue
}

fn unsub(e: &mut Engine, s: &mut Session, a: &[Vec<u8>], out: &mut Vec<u8>, k: Kind) -> Flow {
    // Without arguments: every one, in subscription order (Redis walks its dict).
    let names: Vec<Vec<u8>> = if a.len() == 1 {
        k.of(s).clone()
    } else {
        a[1..].to_vec()
    };
    if names.is_empty() {
        confirm(out, s.proto, k.names().1, None, s.subscriptions());
    }
    for name in names {
        if let Some(i) = k.of(s).iter().position(|c| *c == name) {
            k.of(s).remove(i);
            match k {
                Kind::Channel => e.pubsub_remove_channel(&name, s.id),
                Kind::Pattern => e.pubsub_remove_pattern(&name, s.id),
            }
        }
        confirm(out, s.proto, k.names().1, Some(&name), s.subscriptions());
    }
    e.sync_subs(s);
    Flow::Continue
}

pub(super) fn subscribe(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    sub(e, s, a, out, Kind::Channel)
}

pub(super) fn psubscribe(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    sub(e, s, a, out, Kind::Pattern)
}

pub(super) fn unsubscribe(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    unsub(e, s, a, out, Kind::Channel)
}

pub(super) fn punsubscribe(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    unsub(e, s, a, out, Kind::Pattern)
}

impl Engine {
    /// Sends `msg` on `ch` to its subscribers (channel subscribers first, then pattern
    /// subscribers pattern by pattern, as Redis's pubsubPublishMessage); the number of
    /// deliveries. Messages to `me` go to `out` (before the command's own reply).
    pub(super) fn publish_message(
        &mut self,
        me: u64,
        ch: &[u8],
        msg: &[u8],
        now: i64,
        out: &mut Vec<u8>,
    ) -> usize {
        let mut n = 0;
        let mut targets: Vec<(u64, Option<usize>)> = Vec::new();
        if let Some(v) = self.pubsub.channels.get(ch) {
            targets.extend(v.iter().map(|&id| (id, None)));
        }
        for (i, (pat, v)) in self.pubsub.patterns.iter().enumerate() {
            if glob_match(pat, ch, false) {
                targets.extend(v.iter().map(|&id| (id, Some(i))));
            }
        }
        for (id, pat) in targets {
            let proto = self.peers.get(&id).map(|p| p.proto).unwrap_or(2);
            let mut m = Vec::with_capacity(msg.len() + ch.len() + 48);
            match pat {
                None => {
                    push_header(&mut m, proto, 3);
                    resp::bulk(&mut m, b"message");
                }
                Some(i) => {
                    push_header(&mut m, proto, 4);
                    resp::bulk(&mut m, b"pmessage");
                    resp::bulk(&mut m, &self.pubsub.patterns[i].0);
                }
            }
            resp::bulk(&mut m, ch);
            resp::bulk(&mut m, msg);
            if id == me {
                out.extend_from_slice(&m);
            } else {
                self.push_to(id, &m, now);
            }
            n += 1;
        }
        n
    }
}

pub(super) fn publish(
    e: &mut Engine,
    s: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let n = e.publish_message(s.id, &a[1], &a[2], now, out);
    resp::int(out, n as i64);
    Flow::Continue
}

pub(super) fn pubsub_channels(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    if a.len() > 3 {
        resp::error(
            out,
            b"unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.",
        );
        return Flow::Continue;
    }
    let names: Vec<&Vec<u8>> = e
        .pubsub
        .channels
        .keys()
        .filter(|c| a.len() == 2 || glob_match(&a[2], c, false))
        .collect();
    resp::array_len(out, names.len());
    for n in names {
        resp::bulk(out, n);
    }
    Flow::Continue
}

pub(super) fn pubsub_numsub(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::array_len(out, (a.len() - 2) * 2);
    for ch in &a[2..] {
        resp::bulk(out, ch);
        resp::int(
            out,
            e.pubsub.channels.get(ch).map(|v| v.len()).unwrap_or(0) as i64,
        );
    }
    Flow::Continue
}

pub(super) fn pubsub_numpat(
    e: &mut Engine,
    _: &mut Session,
    _: &[Vec<u8>],
    _: i64,
    out: &mut Vec<u8>,
) -> Flow {
    resp::int(out, e.pubsub.patterns.len() as i64);
    Flow::Continue
}
