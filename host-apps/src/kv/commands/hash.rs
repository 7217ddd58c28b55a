//! Hash commands (Redis 7.0 `t_hash.c`): HSET HMSET HSETNX HGET HMGET HDEL HGETALL HKEYS
//! HVALS HLEN HEXISTS HSTRLEN HINCRBY HINCRBYFLOAT HRANDFIELD.

use super::*;

fn hset_generic(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>, name: &str) {
    if a.len() % 2 == 1 {
        arity_error(out, name);
        return;
    }
    let added = e.write::<Hash, _>(&a[1], now, out, true, |h| {
        a[2..]
            .chunks(2)
            .filter(|fv| h.insert(&fv[0], fv[1].clone()))
            .count()
    });
    match added {
        Ok(n) if name == "hset" => resp::int(out, n.unwrap_or(0) as i64),
        Ok(_) => ok(out),
        Err(()) => {}
    }
}

pub(super) fn hset(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hset_generic(e, a, now, out, "hset")
}

pub(super) fn hmset(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hset_generic(e, a, now, out, "hmset")
}

pub(super) fn hsetnx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    if h.is_some_and(|h| h.contains_key(&a[2])) {
        resp::int(out, 0);
        return;
    }
    if e.write::<Hash, _>(&a[1], now, out, true, |h| h.insert(&a[2], a[3].clone()))
        .is_ok()
    {
        resp::int(out, 1);
    }
}

pub(super) fn hget(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(h) = e.read::<Hash>(&a[1], now, out) {
        match h.and_then(|h| h.get(&a[2])) {
            Some(v) => resp::bulk(out, v),
            None => resp::null(out),
        }
    }
}

pub(super) fn hmget(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    let mut r = Vec::new();
    resp::array_len(&mut r, a.len() - 2);
    for f in &a[2..] {
        match h.and_then(|h| h.get(f)) {
            Some(v) => resp::bulk(&mut r, v),
            None => resp::null(&mut r),
        }
    }
    out.extend_from_slice(&r);
}

pub(super) fn hdel(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = e.write_if::<Hash, _>(&a[1], now, out, false, |h| {
        let n = a[2..].iter().filter(|f| h.remove(f).is_some()).count();
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

/// HGETALL / HKEYS / HVALS: fields and / or values.
fn hget_some(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>, k: bool, v: bool) {
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    let Some(h) = h else {
        resp::array_len(out, 0);
        return;
    };
    resp::array_len(out, h.len() * (k as usize + v as usize));
    for (f, x) in h.iter() {
        if k {
            resp::bulk(out, f);
        }
        if v {
            resp::bulk(out, x);
        }
    }
}

pub(super) fn hgetall(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hget_some(e, a, now, out, true, true)
}

pub(super) fn hkeys(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hget_some(e, a, now, out, true, false)
}

pub(super) fn hvals(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hget_some(e, a, now, out, false, true)
}

/// A number about the hash at `a[1]` (0 when there is no such key).
fn hash_int(
    e: &mut Engine,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
    f: fn(&Hash, &[Vec<u8>]) -> usize,
) {
    if let Ok(h) = e.read::<Hash>(&a[1], now, out) {
        resp::int(out, h.map_or(0, |h| f(h, a)) as i64);
    }
}

pub(super) fn hlen(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hash_int(e, a, now, out, |h, _| h.len())
}

pub(super) fn hexists(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hash_int(e, a, now, out, |h, a| h.contains_key(&a[2]) as usize)
}

pub(super) fn hstrlen(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    hash_int(e, a, now, out, |h, a| h.get(&a[2]).map_or(0, |v| v.len()))
}

pub(super) fn hincrby(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(by) = parse_i64(&a[3], out) else {
        return;
    };
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    let old = match h.and_then(|h| h.get(&a[2])) {
        None => 0,
        Some(v) => match string2ll(v) {
            Some(n) => n,
            None => {
                resp::error(out, b"hash value is not an integer");
                return;
            }
        },
    };
    let Some(new) = old.checked_add(by) else {
        resp::error(out, b"increment or decrement would overflow");
        return;
    };
    let s = new.to_string().into_bytes();
    if e.write::<Hash, _>(&a[1], now, out, true, |h| h.insert(&a[2], s))
        .is_ok()
    {
        resp::int(out, new);
    }
}

pub(super) fn hincrbyfloat(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(by) = parse_float(&a[3], out) else {
        return;
    };
    if by.is_infinite() {
        resp::error(out, b"value is NaN or Infinity");
        return;
    }
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    let old = match h.and_then(|h| h.get(&a[2])) {
        None => 0.0,
        Some(v) => match parse_f64(v) {
            Some(n) => n,
            None => {
                resp::error(out, b"hash value is not a float");
                return;
            }
        },
    };
    let new = old + by;
    if !new.is_finite() {
        resp::error(out, b"increment would produce NaN or Infinity");
        return;
    }
    let s = fmt_human(new).into_bytes();
    resp::bulk(out, &s);
    let _ = e.write::<Hash, _>(&a[1], now, out, true, |h| h.insert(&a[2], s));
}

/// HRANDFIELD key [count [WITHVALUES]]: distinct fields for a positive count, possibly
/// repeated ones for a negative count.
pub(super) fn hrandfield(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let with_values = a.len() == 4 && is(&a[3], "withvalues");
    if a.len() > 4 || (a.len() == 4 && !with_values) {
        resp::error(out, SYNTAX);
        return;
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match rand_count(c, with_values, out) {
            Ok(c) => Some(c),
            Err(()) => return,
        },
    };
    let Ok(h) = e.read::<Hash>(&a[1], now, out) else {
        return;
    };
    let Some(h) = h else {
        match count {
            None => resp::null(out),
            Some(_) => resp::array_len(out, 0),
        }
        return;
    };
    let fields: Vec<(&Vec<u8>, &Vec<u8>)> = h.iter().collect();
    let picks = random_picks(fields.len(), count.unwrap_or(1));
    if count.is_some() {
        resp::array_len(out, picks.len() * (1 + with_values as usize));
    }
    for i in picks {
        resp::bulk(out, fields[i].0);
        if with_values {
            resp::bulk(out, fields[i].1);
        }
    }
}

/// HRANDFIELD / ZRANDMEMBER's count (Redis 7.0: within ±LONG_MAX, and with the values at
/// least -LONG_MAX/2, whose pairs would overflow the reply length).
pub(super) fn rand_count(c: &[u8], with: bool, out: &mut Vec<u8>) -> Result<i64, ()> {
    let n = parse_i64(c, out)?;
    if n == i64::MIN {
        resp::error(
            out,
            b"value is out of range, value must between -9223372036854775807 and \
              9223372036854775807",
        );
        return Err(());
    }
    if with && n < -(i64::MAX / 2) {
        resp::error(out, b"value is out of range");
        return Err(());
    }
    Ok(n)
}

/// Indexes below `len` (> 0): `count` distinct ones (at most `len`) for `count >= 0`,
/// `-count` independent draws for a negative count.
pub(super) fn random_picks(len: usize, count: i64) -> Vec<usize> {
    if count < 0 {
        let n = count.unsigned_abs().min(1 << 24) as usize;
        return (0..n).map(|_| rand_below(len)).collect();
    }
    let n = (count as u64).min(len as u64) as usize;
    let mut idx: Vec<usize> = (0..len).collect();
    for i in 0..n {
        let j = i + rand_below(len - i);
        idx.swap(i, j);
    }
    idx.truncate(n);
    idx
}
