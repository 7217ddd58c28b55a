//! List commands (Redis 7.0 `t_list.c`): the second value type, which makes `-WRONGTYPE`
//! reachable as in Redis.

use super::*;

pub(super) fn push(e: &mut Engine, a: &[Vec<u8>], head: bool, now: i64, out: &mut Vec<u8>) -> Flow {
    let Ok(exists) = e.check_type_list(&a[1], now, out) else {
        return Flow::Continue;
    };
    if !exists {
        e.db.set(&a[1], Value::List(VecDeque::new()), false);
    }
    let n = e.db.modify(&a[1], now, |v| match v {
        Value::List(l) => {
            for x in &a[2..] {
                if head {
                    l.push_front(x.clone());
                } else {
                    l.push_back(x.clone());
                }
            }
            l.len()
        }
        _ => 0,
    });
    resp::int(out, n.unwrap_or(0) as i64);
    Flow::Continue
}

pub(super) fn lpush(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    push(e, a, true, now, out)
}

pub(super) fn rpush(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    push(e, a, false, now, out)
}

pub(super) fn pop(e: &mut Engine, a: &[Vec<u8>], head: bool, now: i64, out: &mut Vec<u8>) -> Flow {
    let has_count = a.len() == 3;
    let mut count = 0i64;
    if a.len() > 3 {
        arity_error(out, if head { "lpop" } else { "rpop" });
        return Flow::Continue;
    } else if has_count {
        // Redis's getPositiveLongFromObjectOrReply: one message for both failures.
        match string2ll(&a[2]) {
            Some(c) if c >= 0 => count = c,
            _ => {
                resp::error(out, b"value is out of range, must be positive");
                return Flow::Continue;
            }
        }
    }
    match e.check_type_list(&a[1], now, out) {
        Err(()) => return Flow::Continue,
        Ok(false) => {
            if has_count {
                resp::null_array(out);
            } else {
                resp::null(out);
            }
            return Flow::Continue;
        }
        Ok(true) => {}
    }
    if has_count && count == 0 {
        resp::array_len(out, 0);
        return Flow::Continue;
    }
    e.db.modify(&a[1], now, |v| {
        if let Value::List(l) = v {
            let take = if has_count {
                (count as usize).min(l.len())
            } else {
                1
            };
            if has_count {
                resp::array_len(out, take);
            }
            for _ in 0..take {
                let x = if head { l.pop_front() } else { l.pop_back() };
                resp::bulk(out, &x.unwrap_or_default());
            }
        }
    });
    Flow::Continue
}

pub(super) fn lpop(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    pop(e, a, true, now, out)
}

pub(super) fn rpop(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    pop(e, a, false, now, out)
}

pub(super) fn llen(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    match e.db.get(&a[1], now).map(|e| &e.value) {
        None => resp::int(out, 0),
        Some(Value::List(l)) => resp::int(out, l.len() as i64),
        Some(_) => resp::error(out, WRONGTYPE),
    }
    Flow::Continue
}

pub(super) fn lrange(
    e: &mut Engine,
    _: &mut Session,
    a: &[Vec<u8>],
    now: i64,
    out: &mut Vec<u8>,
) -> Flow {
    let Ok(mut start) = parse_i64(&a[2], out) else {
        return Flow::Continue;
    };
    let Ok(mut end) = parse_i64(&a[3], out) else {
        return Flow::Continue;
    };
    let l = match e.db.get(&a[1], now).map(|e| &e.value) {
        None => {
            resp::array_len(out, 0);
            return Flow::Continue;
        }
        Some(Value::List(l)) => l,
        Some(_) => {
            resp::error(out, WRONGTYPE);
            return Flow::Continue;
        }
    };
    let len = l.len() as i64;
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        resp::array_len(out, 0);
        return Flow::Continue;
    }
    if end >= len {
        end = len - 1;
    }
    resp::array_len(out, (end - start + 1) as usize);
    for x in l.range(start as usize..=end as usize) {
        resp::bulk(out, x);
    }
    Flow::Continue
}
