//! LMPOP / ZMPOP and their blocking forms BLMPOP / BZMPOP (Redis 7.0 `t_list.c`
//! lmpopGenericCommand, `t_zset.c` zmpopGenericCommand): pop up to COUNT elements from the
//! first non-empty key of a list; the reply is `[key, elements]` (ZMPOP's elements are
//! `[member, score]` pairs), a null array when every key is empty.

use super::*;

/// A parsed (B)LMPOP / (B)ZMPOP: the keys, the end (true: LEFT / MIN), the count.
pub(super) struct Mpop {
    pub(super) keys: std::ops::Range<usize>,
    pub(super) left: bool,
    pub(super) count: usize,
}

/// Parses the arguments from `numkeys` at index `at` (1 for LMPOP, 2 for BLMPOP); `zset`
/// chooses MIN|MAX over LEFT|RIGHT. `None`: the error was written.
pub(super) fn parse_mpop(a: &[Vec<u8>], at: usize, zset: bool, out: &mut Vec<u8>) -> Option<Mpop> {
    let numkeys = match string2ll(&a[at]) {
        Some(n) if n >= 1 => n as usize,
        _ => {
            resp::error(out, b"numkeys should be greater than 0");
            return None;
        }
    };
    let where_at = at.saturating_add(numkeys).saturating_add(1);
    if where_at >= a.len() {
        resp::error(out, SYNTAX);
        return None;
    }
    let w = &a[where_at];
    let left = match (
        zset,
        is(w, "left") || is(w, "min"),
        is(w, "right") || is(w, "max"),
    ) {
        (false, _, _) if is(w, "left") => true,
        (false, _, _) if is(w, "right") => false,
        (true, _, _) if is(w, "min") => true,
        (true, _, _) if is(w, "max") => false,
        _ => {
            resp::error(out, SYNTAX);
            return None;
        }
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && is(&a[j], "count") && j + 1 < a.len() {
            match string2ll(&a[j + 1]) {
                Some(c) if c >= 1 => count = Some(c as usize),
                _ => {
                    resp::error(out, b"count should be greater than 0");
                    return None;
                }
            }
            j += 2;
        } else {
            resp::error(out, SYNTAX);
            return None;
        }
    }
    Some(Mpop {
        keys: at + 1..at + 1 + numkeys,
        left,
        count: count.unwrap_or(1),
    })
}

impl Engine {
    /// Pops from `key` (non-empty, of the right type) of the current database, writing
    /// `[key, elements]` in RESP2.
    pub(super) fn mpop_from(
        &mut self,
        key: &[u8],
        m: &Mpop,
        zset: bool,
        now: i64,
        out: &mut Vec<u8>,
    ) {
        let mut r = Vec::new();
        if zset {
            let popped = self.write::<ZSet, _>(key, now, &mut r, false, |z| {
                let n = m.count.min(z.len());
                (0..n)
                    .map(|_| z.take_at(if m.left { 0 } else { z.len() - 1 }))
                    .collect::<Vec<_>>()
            });
            let p = popped.ok().flatten().unwrap_or_default();
            resp::array_len(out, 2);
            resp::bulk(out, key);
            resp::array_len(out, p.len());
            for (s, member) in p {
                resp::array_len(out, 2);
                resp::bulk(out, &member);
                score_reply(out, s);
            }
        } else {
            let popped = self.write::<List, _>(key, now, &mut r, false, |l| {
                let n = m.count.min(l.len());
                (0..n)
                    .map(|_| l.pop(m.left).unwrap_or_default())
                    .collect::<Vec<_>>()
            });
            let p = popped.ok().flatten().unwrap_or_default();
            resp::array_len(out, 2);
            resp::bulk(out, key);
            resp::array_len(out, p.len());
            for v in p {
                resp::bulk(out, &v);
            }
        }
    }

    /// The first key of `keys` with elements: `Ok(None)` when all are empty, `Err` after a
    /// WRONGTYPE reply.
    pub(super) fn first_filled(
        &mut self,
        a: &[Vec<u8>],
        m: &Mpop,
        zset: bool,
        now: i64,
        out: &mut Vec<u8>,
    ) -> Result<Option<usize>, ()> {
        for i in m.keys.clone() {
            let filled = if zset {
                self.read::<ZSet>(&a[i], now, out)?
                    .is_some_and(|z| !z.is_empty())
            } else {
                self.read::<List>(&a[i], now, out)?
                    .is_some_and(|l| !l.is_empty())
            };
            if filled {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

fn mpop(e: &mut Engine, a: &[Vec<u8>], zset: bool, now: i64, out: &mut Vec<u8>) {
    let Some(m) = parse_mpop(a, 1, zset, out) else {
        return;
    };
    match e.first_filled(a, &m, zset, now, out) {
        Err(()) => {}
        Ok(None) => resp::null_array(out),
        Ok(Some(i)) => {
            let key = a[i].clone();
            e.mpop_from(&key, &m, zset, now, out);
        }
    }
}

pub(super) fn lmpop(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    mpop(e, a, false, now, out)
}

pub(super) fn zmpop(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    mpop(e, a, true, now, out)
}
