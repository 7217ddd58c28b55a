//! Sorted-set algebra and sampling (Redis 7.0 `t_zset.c`): ZUNION, ZINTER, ZDIFF, their
//! STORE forms, ZINTERCARD (zunionInterDiffGenericCommand: sets count as sorted sets whose
//! scores are 1; WEIGHTS multiply, AGGREGATE SUM / MIN / MAX combine, a NaN sum is 0), and
//! ZRANDMEMBER.

use std::collections::HashMap as Map;

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggr {
    Sum,
    Min,
    Max,
}

/// What the command is: the operation, where numkeys is, store / card-only forms.
struct Form {
    op: SetOp,
    numkeys_at: usize,
    store: bool,
    card: bool,
    name: &'static str,
}

/// The members and scores of key `k` (a sorted set, or a set with scores 1); `Err` after
/// WRONGTYPE.
fn source(
    e: &mut Engine,
    k: &[u8],
    now: i64,
    out: &mut Vec<u8>,
) -> Result<Vec<(f64, Vec<u8>)>, ()> {
    match e.db.get(k, now).map(|en| &en.value) {
        None => Ok(Vec::new()),
        Some(Value::ZSet(z)) => Ok(z.order().iter().cloned().collect()),
        Some(Value::Set(s)) => Ok(s.iter().map(|m| (1.0, m.clone())).collect()),
        Some(_) => {
            resp::error(out, WRONGTYPE);
            Err(())
        }
    }
}

fn generic(e: &mut Engine, a: &[Vec<u8>], f: Form, now: i64, out: &mut Vec<u8>) {
    let Ok(n) = parse_i64(&a[f.numkeys_at], out) else {
        return;
    };
    if n < 1 {
        let m = format!("at least 1 input key is needed for '{}' command", f.name);
        return resp::error_fmt(out, m.as_bytes());
    }
    let first = f.numkeys_at + 1;
    if n as u64 > (a.len() - first) as u64 {
        return resp::error(out, SYNTAX);
    }
    let n = n as usize;
    let mut srcs = Vec::with_capacity(n);
    for k in &a[first..first + n] {
        match source(e, k, now, out) {
            Ok(s) => srcs.push(s),
            Err(()) => return,
        }
    }
    let mut weights = vec![1.0f64; n];
    let mut aggr = Aggr::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = first + n;
    while j < a.len() {
        let left = a.len() - j;
        let opt = &a[j];
        if f.op != SetOp::Diff && !f.card && left > n && is(opt, "weights") {
            for (i, w) in a[j + 1..j + 1 + n].iter().enumerate() {
                match parse_f64(w) {
                    Some(x) => weights[i] = x,
                    None => return resp::error(out, b"weight value is not a float"),
                }
            }
            j += 1 + n;
        } else if f.op != SetOp::Diff && !f.card && left >= 2 && is(opt, "aggregate") {
            let v = &a[j + 1];
            aggr = if is(v, "sum") {
                Aggr::Sum
            } else if is(v, "min") {
                Aggr::Min
            } else if is(v, "max") {
                Aggr::Max
            } else {
                return resp::error(out, SYNTAX);
            };
            j += 2;
        } else if !f.store && !f.card && is(opt, "withscores") {
            withscores = true;
            j += 1;
        } else if f.card && left >= 2 && is(opt, "limit") {
            match string2ll(&a[j + 1]) {
                Some(l) if l >= 0 => limit = l as usize,
                _ => return resp::error(out, b"LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return resp::error(out, SYNTAX);
        }
    }
    let weighted = |s: f64, w: f64| {
        let x = s * w;
        if x.is_nan() {
            0.0
        } else {
            x
        }
    };
    let combine = |acc: f64, x: f64| match aggr {
        Aggr::Sum => {
            let y = acc + x;
            if y.is_nan() {
                0.0
            } else {
                y
            }
        }
        Aggr::Min => acc.min(x),
        Aggr::Max => acc.max(x),
    };
    let mut result: Vec<(f64, Vec<u8>)> = Vec::new();
    match f.op {
        SetOp::Union => {
            let mut acc: Map<Vec<u8>, f64> = Map::new();
            let mut order: Vec<Vec<u8>> = Vec::new();
            for (i, s) in srcs.iter().enumerate() {
                for (sc, m) in s {
                    let x = weighted(*sc, weights[i]);
                    match acc.get_mut(m) {
                        Some(v) => *v = combine(*v, x),
                        None => {
                            acc.insert(m.clone(), x);
                            order.push(m.clone());
                        }
                    }
                }
            }
            result = order.into_iter().map(|m| (acc[&m], m)).collect();
        }
        SetOp::Inter => {
            let others: Vec<Map<&[u8], f64>> = srcs[1..]
                .iter()
                .map(|s| s.iter().map(|(sc, m)| (&m[..], *sc)).collect())
                .collect();
            'm: for (sc, m) in &srcs[0] {
                let mut v = weighted(*sc, weights[0]);
                for (i, o) in others.iter().enumerate() {
                    match o.get(&m[..]) {
                        Some(x) => v = combine(v, weighted(*x, weights[i + 1])),
                        None => continue 'm,
                    }
                }
                result.push((v, m.clone()));
                if f.card && limit > 0 && result.len() >= limit {
                    break;
                }
            }
        }
        SetOp::Diff => {
            let others: Vec<Map<&[u8], f64>> = srcs[1..]
                .iter()
                .map(|s| s.iter().map(|(sc, m)| (&m[..], *sc)).collect())
                .collect();
            for (sc, m) in &srcs[0] {
                if !others.iter().any(|o| o.contains_key(&m[..])) {
                    result.push((*sc, m.clone()));
                }
            }
        }
    }
    if f.card {
        return resp::int(out, result.len() as i64);
    }
    result.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
    if f.store {
        let n = result.len();
        if n == 0 {
            e.db.remove(&a[1]);
        } else {
            let mut z = ZSet::default();
            for (s, m) in &result {
                z.insert(m, *s);
            }
            e.db.set(&a[1], Value::ZSet(z), false);
        }
        return resp::int(out, n as i64);
    }
    resp::array_len(out, result.len() * (1 + withscores as usize));
    for (s, m) in &result {
        resp::bulk(out, m);
        if withscores {
            score_reply(out, *s);
        }
    }
}

macro_rules! form {
    ($fn:ident, $op:expr, $at:expr, $store:expr, $card:expr, $name:expr) => {
        pub(super) fn $fn(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
            let f = Form {
                op: $op,
                numkeys_at: $at,
                store: $store,
                card: $card,
                name: $name,
            };
            generic(e, a, f, now, out)
        }
    };
}

form!(zunion, SetOp::Union, 1, false, false, "zunion");
form!(zinter, SetOp::Inter, 1, false, false, "zinter");
form!(zdiff, SetOp::Diff, 1, false, false, "zdiff");
form!(zunionstore, SetOp::Union, 2, true, false, "zunionstore");
form!(zinterstore, SetOp::Inter, 2, true, false, "zinterstore");
form!(zdiffstore, SetOp::Diff, 2, true, false, "zdiffstore");
form!(zintercard, SetOp::Inter, 1, false, true, "zintercard");

/// ZRANDMEMBER key [count [WITHSCORES]] (as HRANDFIELD: distinct members for a positive
/// count, independent draws for a negative one).
pub(super) fn zrandmember(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let with = a.len() == 4 && is(&a[3], "withscores");
    if a.len() > 4 || (a.len() == 4 && !with) {
        return resp::error(out, SYNTAX);
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match rand_count(c, with, out) {
            Ok(c) => Some(c),
            Err(()) => return,
        },
    };
    let Ok(z) = e.read::<ZSet>(&a[1], now, out) else {
        return;
    };
    let Some(z) = z else {
        match count {
            None => resp::null(out),
            Some(_) => resp::array_len(out, 0),
        }
        return;
    };
    let items: Vec<&(f64, Vec<u8>)> = z.order().iter().collect();
    let picks = random_picks(items.len(), count.unwrap_or(1));
    if count.is_some() {
        resp::array_len(out, picks.len() * (1 + with as usize));
    }
    let mut r = Vec::new();
    for i in picks {
        resp::bulk(&mut r, &items[i].1);
        if with {
            score_reply(&mut r, items[i].0);
        }
    }
    out.extend_from_slice(&r);
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]: ZRANGE's
/// selection (its parsing and errors; WITHSCORES is a syntax error here) stored in `dst` with
/// the members' scores; the number stored, `dst` deleted when none.
pub(super) fn zrangestore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if a[5..].iter().any(|x| is(x, "withscores")) {
        return resp::error(out, SYNTAX);
    }
    let mut argv = vec![b"zrange".to_vec()];
    argv.extend_from_slice(&a[2..]);
    let mut r = Vec::new();
    zrange(e, &argv, now, &mut r);
    if r.first() != Some(&b'*') {
        out.extend_from_slice(&r);
        return;
    }
    // `*N` then N bulk strings.
    let mut members = Vec::new();
    let mut i = r
        .iter()
        .position(|&b| b == b'\n')
        .map_or(r.len(), |p| p + 1);
    while i < r.len() {
        let nl = i + r[i..].iter().position(|&b| b == b'\n').unwrap_or(0);
        let len: usize = std::str::from_utf8(&r[i + 1..nl - 1])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        members.push(r[nl + 1..nl + 1 + len].to_vec());
        i = nl + 1 + len + 2;
    }
    let mut z = ZSet::default();
    if let Ok(Some(src)) = e.read::<ZSet>(&a[2], now, &mut Vec::new()) {
        for m in &members {
            if let Some(s) = src.score(m) {
                z.insert(m, s);
            }
        }
    }
    let n = z.len();
    if n == 0 {
        e.db.remove(&a[1]);
    } else {
        e.db.set(&a[1], Value::ZSet(z), false);
    }
    resp::int(out, n as i64);
}
