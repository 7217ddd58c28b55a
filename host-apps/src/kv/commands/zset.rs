//! Sorted set commands (Redis 7.0 `t_zset.c`): ZADD (NX XX GT LT CH INCR) ZINCRBY ZSCORE
//! ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZRANK ZREVRANK ZREM ZPOPMIN ZPOPMAX. The range commands
//! are in `zset_range.rs`.

use super::*;

const NAN_SCORE: &[u8] = b"resulting score is not a number (NaN)";

#[derive(Default)]
struct ZaddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one ZADD element did (Redis's `zsetAdd` out flags).
enum Added {
    New(f64),
    Updated(f64),
    Same(f64),
    Nop,
    Nan,
}

/// Redis's `zsetAdd`: applies one score-member pair under the flags.
fn zset_add(z: &mut ZSet, f: &ZaddFlags, mut score: f64, m: &[u8]) -> Added {
    match z.score(m) {
        Some(cur) => {
            if f.nx {
                return Added::Nop;
            }
            if f.incr {
                score += cur;
                if score.is_nan() {
                    return Added::Nan;
                }
            }
            if (f.lt && score >= cur) || (f.gt && score <= cur) {
                return Added::Nop;
            }
            if score != cur {
                z.insert(m, score);
                Added::Updated(score)
            } else {
                Added::Same(score)
            }
        }
        None if !f.xx => {
            z.insert(m, score);
            Added::New(score)
        }
        None => Added::Nop,
    }
}

fn zadd_generic(e: &mut Engine, a: &[Vec<u8>], mut f: ZaddFlags, now: i64, out: &mut Vec<u8>) {
    let mut i = 2;
    if !f.incr {
        while i < a.len() {
            let o = &a[i];
            if is(o, "nx") {
                f.nx = true;
            } else if is(o, "xx") {
                f.xx = true;
            } else if is(o, "ch") {
                f.ch = true;
            } else if is(o, "incr") {
                f.incr = true;
            } else if is(o, "gt") {
                f.gt = true;
            } else if is(o, "lt") {
                f.lt = true;
            } else {
                break;
            }
            i += 1;
        }
    }
    let pairs = &a[i..];
    if pairs.is_empty() || pairs.len() % 2 == 1 {
        resp::error(out, SYNTAX);
        return;
    }
    if f.nx && f.xx {
        resp::error(
            out,
            b"XX and NX options at the same time are not compatible",
        );
        return;
    }
    if ((f.gt || f.lt) && f.nx) || (f.gt && f.lt) {
        resp::error(
            out,
            b"GT, LT, and/or NX options at the same time are not compatible",
        );
        return;
    }
    if f.incr && pairs.len() > 2 {
        resp::error(out, b"INCR option supports a single increment-element pair");
        return;
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        match parse_float(&p[0], out) {
            Ok(s) => scores.push(s),
            Err(()) => return,
        }
    }
    let Ok(cur) = e.read::<ZSet>(&a[1], now, out) else {
        return;
    };
    let (mut added, mut updated, mut last) = (0, 0, None);
    if cur.is_some() || !f.xx {
        let res = e.write_if::<ZSet, _>(&a[1], now, out, true, |z| {
            for (p, &s) in pairs.chunks(2).zip(&scores) {
                match zset_add(z, &f, s, &p[1]) {
                    Added::New(x) => {
                        added += 1;
                        last = Some(x);
                    }
                    Added::Updated(x) => {
                        updated += 1;
                        last = Some(x);
                    }
                    Added::Same(x) => last = Some(x),
                    Added::Nop => {}
                    Added::Nan => return (false, added + updated > 0),
                }
            }
            (true, added + updated > 0)
        });
        if res == Ok(Some(false)) {
            resp::error(out, NAN_SCORE);
            return;
        }
    }
    if f.incr {
        match last {
            Some(x) => score_reply(out, x),
            None => resp::null(out),
        }
    } else {
        resp::int(out, if f.ch { added + updated } else { added });
    }
}

pub(super) fn zadd(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zadd_generic(e, a, ZaddFlags::default(), now, out)
}

pub(super) fn zincrby(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let f = ZaddFlags {
        incr: true,
        ..ZaddFlags::default()
    };
    zadd_generic(e, a, f, now, out)
}

pub(super) fn zscore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(z) = e.read::<ZSet>(&a[1], now, out) {
        match z.and_then(|z| z.score(&a[2])) {
            Some(s) => score_reply(out, s),
            None => resp::null(out),
        }
    }
}

pub(super) fn zmscore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(z) = e.read::<ZSet>(&a[1], now, out) {
        let mut r = Vec::new();
        resp::array_len(&mut r, a.len() - 2);
        for m in &a[2..] {
            match z.and_then(|z| z.score(m)) {
                Some(s) => score_reply(&mut r, s),
                None => resp::null(&mut r),
            }
        }
        out.extend_from_slice(&r);
    }
}

pub(super) fn zcard(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(z) = e.read::<ZSet>(&a[1], now, out) {
        resp::int(out, z.map_or(0, |z| z.len()) as i64);
    }
}

fn zrank_generic(e: &mut Engine, a: &[Vec<u8>], rev: bool, now: i64, out: &mut Vec<u8>) {
    if let Ok(z) = e.read::<ZSet>(&a[1], now, out) {
        match z.and_then(|z| Some((z.rank(&a[2])?, z.len()))) {
            Some((r, n)) => resp::int(out, if rev { n - 1 - r } else { r } as i64),
            None => resp::null(out),
        }
    }
}

pub(super) fn zrank(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrank_generic(e, a, false, now, out)
}

pub(super) fn zrevrank(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrank_generic(e, a, true, now, out)
}

pub(super) fn zrem(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = e.write_if::<ZSet, _>(&a[1], now, out, false, |z| {
        let n = a[2..].iter().filter(|m| z.remove(m)).count();
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

fn zpop(e: &mut Engine, a: &[Vec<u8>], max: bool, now: i64, out: &mut Vec<u8>) {
    if a.len() > 3 {
        resp::error(out, SYNTAX);
        return;
    }
    let mut count = 1;
    if let Some(c) = a.get(2) {
        match parse_count(c, out) {
            Ok(c) => count = c,
            Err(()) => return,
        }
    }
    // The type is checked before a count of 0 is answered.
    if e.read::<ZSet>(&a[1], now, out).is_err() {
        return;
    }
    let popped = e.write::<ZSet, _>(&a[1], now, out, false, |z| {
        let n = count.min(z.len());
        (0..n)
            .map(|_| z.take_at(if max { z.len() - 1 } else { 0 }))
            .collect::<Vec<_>>()
    });
    if let Ok(p) = popped {
        let p = p.unwrap_or_default();
        resp::array_len(out, 2 * p.len());
        for (s, m) in p {
            resp::bulk(out, &m);
            score_reply(out, s);
        }
    }
}

pub(super) fn zpopmin(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zpop(e, a, false, now, out)
}

pub(super) fn zpopmax(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zpop(e, a, true, now, out)
}
