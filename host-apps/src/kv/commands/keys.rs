//! Keyspace commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, EXPIRE and friends, TTL, PTTL,
//! PERSIST, DBSIZE, FLUSHALL (Redis 7.0 `db.c`, `expire.c`).

use super::*;

pub(super) fn del(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let mut n = 0;
    for k in &a[1..] {
        if e.db.contains(k, now) && e.db.remove(k) {
            n += 1;
        }
    }
    resp::int(out, n);
}

pub(super) fn exists(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = a[1..].iter().filter(|k| e.db.contains(k, now)).count();
    resp::int(out, n as i64);
}

pub(super) fn type_cmd(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let t = e.db.get(&a[1], now).map_or("none", |e| e.value.type_name());
    resp::simple(out, t.as_bytes());
}

/// Redis's expireGenericCommand; `base`: `now` for relative forms, 0 for the `*AT` ones.
pub(super) fn expire_generic(
    e: &mut Engine,
    a: &[Vec<u8>],
    base: i64,
    seconds: bool,
    now: i64,
    out: &mut Vec<u8>,
) {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for o in &a[3..] {
        if is(o, "nx") {
            nx = true;
        } else if is(o, "xx") {
            xx = true;
        } else if is(o, "gt") {
            gt = true;
        } else if is(o, "lt") {
            lt = true;
        } else {
            let mut m = b"Unsupported option ".to_vec();
            m.extend_from_slice(cstr(o));
            resp::error_fmt(out, &m);
            return;
        }
    }
    if nx && (xx || gt || lt) {
        resp::error(
            out,
            b"NX and XX, GT or LT options at the same time are not compatible",
        );
        return;
    }
    if gt && lt {
        resp::error(
            out,
            b"GT and LT options at the same time are not compatible",
        );
        return;
    }
    let Ok(mut when) = parse_i64(&a[2], out) else {
        return;
    };
    let name = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            expire_time_error(out, &name);
            return;
        }
        when *= 1000;
    }
    if when > i64::MAX - base {
        expire_time_error(out, &name);
        return;
    }
    when += base;
    let cur = match e.db.get(&a[1], now) {
        None => {
            resp::int(out, 0);
            return;
        }
        Some(en) => en.expire_at,
    };
    let refuse = (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && cur.is_none_or(|c| when <= c))
        || (lt && cur.is_some_and(|c| when >= c));
    if refuse {
        resp::int(out, 0);
        return;
    }
    if when <= now {
        e.db.remove(&a[1]);
    } else {
        e.db.set_expire(&a[1], when);
    }
    resp::int(out, 1);
}

pub(super) fn expire(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    expire_generic(e, a, now, true, now, out)
}

pub(super) fn pexpire(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    expire_generic(e, a, now, false, now, out)
}

pub(super) fn expireat(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    expire_generic(e, a, 0, true, now, out)
}

pub(super) fn pexpireat(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    expire_generic(e, a, 0, false, now, out)
}

pub(super) fn ttl_generic(e: &mut Engine, key: &[u8], ms: bool, now: i64, out: &mut Vec<u8>) {
    ttl_or_time(e, key, ms, false, now, out)
}

/// Redis's ttlGenericCommand: the time left (TTL, PTTL) or the expiry time itself (EXPIRETIME,
/// PEXPIRETIME, `abs`), in seconds rounded or in milliseconds.
fn ttl_or_time(e: &mut Engine, key: &[u8], ms: bool, abs: bool, now: i64, out: &mut Vec<u8>) {
    match e.db.get(key, now) {
        None => resp::int(out, -2),
        Some(en) => match en.expire_at {
            None => resp::int(out, -1),
            Some(t) => {
                let left = if abs { t } else { t.wrapping_sub(now) }.max(0);
                // Rounded to seconds without overflow: for an expiry within 500 ms of
                // i64::MAX, redis-server 7.0.15 (as Debian builds it) answers EXPIRETIME with
                // the exact 9223372036854776, not a wrapped negative.
                resp::int(
                    out,
                    if ms {
                        left
                    } else {
                        ((i128::from(left) + 500) / 1000) as i64
                    },
                );
            }
        },
    }
}

pub(super) fn ttl(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    ttl_generic(e, &a[1], false, now, out)
}

pub(super) fn pttl(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    ttl_generic(e, &a[1], true, now, out)
}

pub(super) fn expiretime(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    ttl_or_time(e, &a[1], false, true, now, out)
}

pub(super) fn pexpiretime(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    ttl_or_time(e, &a[1], true, true, now, out)
}

pub(super) fn persist(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = e.db.contains(&a[1], now) && e.db.persist(&a[1]);
    resp::int(out, n as i64);
}

pub(super) fn dbsize(e: &mut Engine, _: &[Vec<u8>], _: i64, out: &mut Vec<u8>) {
    resp::int(out, e.db.len() as i64);
}

pub(super) fn flushall(e: &mut Engine, a: &[Vec<u8>], _: i64, out: &mut Vec<u8>) {
    if flush_arg_ok(a, out) {
        e.db.clear();
        for d in &mut e.dbs {
            d.clear();
        }
        ok(out);
    }
}
