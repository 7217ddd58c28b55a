//! List commands (Redis 7.0 `t_list.c`): LPUSH RPUSH LPOP RPOP LLEN LRANGE; the editing
//! commands are in `list_edit.rs`.

use super::*;

/// LPUSH / RPUSH / LPUSHX / RPUSHX: `create` is false for the X forms.
pub(super) fn push(
    e: &mut Engine,
    a: &[Vec<u8>],
    head: bool,
    create: bool,
    now: i64,
    out: &mut Vec<u8>,
) {
    let n = e.write::<List, _>(&a[1], now, out, create, |l| {
        for x in &a[2..] {
            l.push(x.clone(), head);
        }
        l.len()
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn lpush(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    push(e, a, true, true, now, out)
}

pub(super) fn rpush(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    push(e, a, false, true, now, out)
}

pub(super) fn pop(e: &mut Engine, a: &[Vec<u8>], head: bool, now: i64, out: &mut Vec<u8>) {
    let has_count = a.len() == 3;
    let mut count = 0i64;
    if a.len() > 3 {
        arity_error(out, if head { "lpop" } else { "rpop" });
        return;
    } else if has_count {
        // Redis's getPositiveLongFromObjectOrReply: one message for both failures.
        match string2ll(&a[2]) {
            Some(c) if c >= 0 => count = c,
            _ => {
                resp::error(out, b"value is out of range, must be positive");
                return;
            }
        }
    }
    match e.check_type_list(&a[1], now, out) {
        Err(()) => return,
        Ok(false) => {
            if has_count {
                resp::null_array(out);
            } else {
                resp::null(out);
            }
            return;
        }
        Ok(true) => {}
    }
    if has_count && count == 0 {
        resp::array_len(out, 0);
        return;
    }
    let mut r = Vec::new();
    let _ = e.write::<List, _>(&a[1], now, out, false, |l| {
        let take = if has_count {
            (count as usize).min(l.len())
        } else {
            1
        };
        if has_count {
            resp::array_len(&mut r, take);
        }
        for _ in 0..take {
            resp::bulk(&mut r, &l.pop(head).unwrap_or_default());
        }
    });
    out.extend_from_slice(&r);
}

pub(super) fn lpop(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    pop(e, a, true, now, out)
}

pub(super) fn rpop(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    pop(e, a, false, now, out)
}

pub(super) fn llen(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match e.db.get(&a[1], now).map(|e| &e.value) {
        None => resp::int(out, 0),
        Some(Value::List(l)) => resp::int(out, l.len() as i64),
        Some(_) => resp::error(out, WRONGTYPE),
    }
}

pub(super) fn lrange(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(mut start) = parse_i64(&a[2], out) else {
        return;
    };
    let Ok(mut end) = parse_i64(&a[3], out) else {
        return;
    };
    let l = match e.db.get(&a[1], now).map(|e| &e.value) {
        None => {
            resp::array_len(out, 0);
            return;
        }
        Some(Value::List(l)) => l,
        Some(_) => {
            resp::error(out, WRONGTYPE);
            return;
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
        return;
    }
    if end >= len {
        end = len - 1;
    }
    resp::array_len(out, (end - start + 1) as usize);
    for x in l.range(start as usize..=end as usize) {
        resp::bulk(out, x);
    }
}
