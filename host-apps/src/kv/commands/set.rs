//! Set commands (Redis 7.0 `t_set.c`): SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SMOVE SINTER SUNION SDIFF and the *STORE forms.

use super::*;

pub(super) fn sadd(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = e.write_if::<Set, _>(&a[1], now, out, true, |s| {
        let n = a[2..].iter().filter(|m| s.insert(m)).count();
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn srem(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = e.write_if::<Set, _>(&a[1], now, out, false, |s| {
        let n = a[2..].iter().filter(|m| s.remove(m)).count();
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn smembers(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match e.read::<Set>(&a[1], now, out) {
        Ok(Some(s)) => bulks(out, s.len(), s.iter()),
        Ok(None) => resp::array_len(out, 0),
        Err(()) => {}
    }
}

pub(super) fn sismember(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(s) = e.read::<Set>(&a[1], now, out) {
        resp::int(out, s.is_some_and(|s| s.contains(&a[2])) as i64);
    }
}

pub(super) fn smismember(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(s) = e.read::<Set>(&a[1], now, out) {
        let mut r = Vec::new();
        resp::array_len(&mut r, a.len() - 2);
        for m in &a[2..] {
            resp::int(&mut r, s.is_some_and(|s| s.contains(m)) as i64);
        }
        out.extend_from_slice(&r);
    }
}

pub(super) fn scard(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(s) = e.read::<Set>(&a[1], now, out) {
        resp::int(out, s.map_or(0, |s| s.len()) as i64);
    }
}

pub(super) fn spop(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if a.len() > 3 {
        resp::error(out, SYNTAX);
        return;
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match parse_count(c, out) {
            Ok(c) => Some(c),
            Err(()) => return,
        },
    };
    let popped = e.write::<Set, _>(&a[1], now, out, false, |s| {
        let n = count.unwrap_or(1).min(s.len());
        (0..n)
            .map(|_| s.take_at(rand_below(s.len())))
            .collect::<Vec<_>>()
    });
    match (popped, count) {
        (Err(()), _) => {}
        (Ok(None), None) => resp::null(out),
        (Ok(Some(p)), None) => resp::bulk(out, &p[0]),
        (Ok(p), Some(_)) => {
            let p = p.unwrap_or_default();
            bulks(out, p.len(), &p);
        }
    }
}

pub(super) fn srandmember(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if a.len() > 3 {
        resp::error(out, SYNTAX);
        return;
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match parse_i64(c, out) {
            Ok(i64::MIN) => {
                resp::error_fmt(
                    out,
                    format!(
                        "value is out of range, value must between {} and {}",
                        -i64::MAX,
                        i64::MAX
                    )
                    .as_bytes(),
                );
                return;
            }
            Ok(c) => Some(c),
            Err(()) => return,
        },
    };
    let Ok(s) = e.read::<Set>(&a[1], now, out) else {
        return;
    };
    match (s, count) {
        (None, None) => resp::null(out),
        (None, Some(_)) => resp::array_len(out, 0),
        (Some(s), None) => resp::bulk(out, s.at(rand_below(s.len()))),
        (Some(s), Some(c)) => {
            let picks = random_picks(s.len(), c);
            resp::array_len(out, picks.len());
            for i in picks {
                resp::bulk(out, s.at(i));
            }
        }
    }
}

pub(super) fn smove(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(src) = e.read::<Set>(&a[1], now, out) else {
        return;
    };
    let Some(src) = src else {
        resp::int(out, 0);
        return;
    };
    let member = src.contains(&a[3]);
    let Ok(dst) = e.read::<Set>(&a[2], now, out) else {
        return;
    };
    let in_dst = dst.is_some_and(|d| d.contains(&a[3]));
    if a[1] == a[2] || !member {
        resp::int(out, member as i64);
        return;
    }
    let _ = e.write::<Set, _>(&a[1], now, out, false, |s| s.remove(&a[3]));
    // As Redis's smoveCommand: a member already in the destination leaves it untouched (a
    // WATCH on it is not triggered).
    if !in_dst {
        let _ = e.write::<Set, _>(&a[2], now, out, true, |s| s.insert(&a[3]));
    }
    resp::int(out, 1);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The sets at `keys` combined by `op`; `Err` after a WRONGTYPE reply (every key is checked
/// before anything is computed).
fn combine(
    e: &mut Engine,
    keys: &[Vec<u8>],
    op: Op,
    now: i64,
    out: &mut Vec<u8>,
) -> Result<Set, ()> {
    let sets = e.read_all::<Set>(keys, now, out)?;
    let mut it = sets.into_iter();
    let first = it.next().flatten().unwrap_or_default();
    Ok(match op {
        Op::Union => {
            let mut r = first;
            for s in it.flatten() {
                for m in s.iter() {
                    r.insert(m);
                }
            }
            r
        }
        Op::Inter => {
            let rest: Vec<Option<Set>> = it.collect();
            if rest.iter().any(|s| s.is_none()) {
                return Ok(Set::default());
            }
            let rest: Vec<Set> = rest.into_iter().flatten().collect();
            first
                .iter()
                .filter(|m| rest.iter().all(|s| s.contains(m)))
                .cloned()
                .collect()
        }
        Op::Diff => {
            let rest: Vec<Set> = it.flatten().collect();
            first
                .iter()
                .filter(|m| !rest.iter().any(|s| s.contains(m)))
                .cloned()
                .collect()
        }
    })
}

fn set_op(e: &mut Engine, a: &[Vec<u8>], op: Op, now: i64, out: &mut Vec<u8>) {
    if let Ok(r) = combine(e, &a[1..], op, now, out) {
        bulks(out, r.len(), r.iter());
    }
}

fn set_op_store(e: &mut Engine, a: &[Vec<u8>], op: Op, now: i64, out: &mut Vec<u8>) {
    let Ok(r) = combine(e, &a[2..], op, now, out) else {
        return;
    };
    let n = r.len();
    if n == 0 {
        e.db.remove(&a[1]);
    } else {
        e.db.set(&a[1], Value::Set(r), false);
    }
    resp::int(out, n as i64);
}

pub(super) fn sinter(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op(e, a, Op::Inter, now, out)
}

pub(super) fn sunion(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op(e, a, Op::Union, now, out)
}

pub(super) fn sdiff(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op(e, a, Op::Diff, now, out)
}

pub(super) fn sinterstore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op_store(e, a, Op::Inter, now, out)
}

pub(super) fn sunionstore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op_store(e, a, Op::Union, now, out)
}

pub(super) fn sdiffstore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    set_op_store(e, a, Op::Diff, now, out)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit] (Redis 7.0): the size of the intersection,
/// at most `limit` (0: no limit).
pub(super) fn sintercard(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let n = match string2ll(&a[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return resp::error(out, b"numkeys should be greater than 0"),
    };
    if n > a.len() - 2 {
        return resp::error(out, b"Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    let mut j = 2 + n;
    while j < a.len() {
        if is(&a[j], "limit") && j + 1 < a.len() {
            match string2ll(&a[j + 1]) {
                Some(l) if l >= 0 => limit = l as usize,
                _ => return resp::error(out, b"LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return resp::error(out, SYNTAX);
        }
    }
    // SINTER over the keys, then its element count.
    let mut argv = vec![b"sinter".to_vec()];
    argv.extend_from_slice(&a[2..2 + n]);
    let mut r = Vec::new();
    set_op(e, &argv, Op::Inter, now, &mut r);
    if r.first() != Some(&b'*') {
        out.extend_from_slice(&r);
        return;
    }
    let end = r.iter().position(|&b| b == b'\r').unwrap_or(1);
    let card: usize = std::str::from_utf8(&r[1..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    resp::int(out, if limit > 0 { card.min(limit) } else { card } as i64);
}
