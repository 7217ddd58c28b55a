//! List editing commands (Redis 7.0 `t_list.c`): LPUSHX RPUSHX LINDEX LSET LTRIM LREM
//! LINSERT LPOS LMOVE RPOPLPUSH.

use super::*;

pub(super) fn lpushx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    push(e, a, true, false, now, out)
}

pub(super) fn rpushx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    push(e, a, false, false, now, out)
}

/// A list index (negative: from the tail) as a position, if inside the list.
fn position(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { index + len as i64 } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

pub(super) fn lindex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let l = match e.read::<List>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => return resp::null(out),
        Ok(Some(l)) => l,
    };
    let Ok(i) = parse_i64(&a[2], out) else {
        return;
    };
    match position(i, l.len()) {
        Some(i) => resp::bulk(out, &l[i]),
        None => resp::null(out),
    }
}

pub(super) fn lset(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let len = match e.read::<List>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => return resp::error(out, b"no such key"),
        Ok(Some(l)) => l.len(),
    };
    let Ok(i) = parse_i64(&a[2], out) else {
        return;
    };
    let Some(i) = position(i, len) else {
        return resp::error(out, b"index out of range");
    };
    let _ = e.write::<List, _>(&a[1], now, out, false, |l| l.edit(|v| v[i] = a[3].clone()));
    ok(out);
}

pub(super) fn ltrim(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(start) = parse_i64(&a[2], out) else {
        return;
    };
    let Ok(end) = parse_i64(&a[3], out) else {
        return;
    };
    let r = e.write::<List, _>(&a[1], now, out, false, |l| {
        let len = l.len() as i64;
        let (mut s, mut t) = (start, end);
        if s < 0 {
            s += len;
        }
        if t < 0 {
            t += len;
        }
        s = s.max(0);
        l.edit(|v| {
            if s > t || s >= len {
                v.clear();
            } else {
                v.truncate((t.min(len - 1) + 1) as usize);
                v.drain(..s as usize);
            }
        })
    });
    if r.is_ok() {
        ok(out);
    }
}

pub(super) fn lrem(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(count) = parse_i64(&a[2], out) else {
        return;
    };
    let x = &a[3];
    let n = e.write_if::<List, _>(&a[1], now, out, false, |l| {
        let n = l.edit(|v| {
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs().min(usize::MAX as u64) as usize
            };
            let mut hits = Vec::new();
            let idx: Box<dyn Iterator<Item = usize>> = if count < 0 {
                Box::new((0..v.len()).rev())
            } else {
                Box::new(0..v.len())
            };
            for i in idx {
                if hits.len() == limit {
                    break;
                }
                if v[i] == *x {
                    hits.push(i);
                }
            }
            hits.sort_unstable();
            for (k, i) in hits.iter().enumerate() {
                v.remove(i - k);
            }
            hits.len()
        });
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn linsert(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let after = if is(&a[2], "after") {
        true
    } else if is(&a[2], "before") {
        false
    } else {
        return resp::error(out, SYNTAX);
    };
    let n = e.write_if::<List, _>(&a[1], now, out, false, |l| {
        let n = l.edit(|v| match v.iter().position(|x| *x == a[3]) {
            Some(i) => {
                v.insert(i + after as usize, a[4].clone());
                v.len() as i64
            }
            None => -1,
        });
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0));
    }
}

pub(super) fn lpos(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is(&a[j], "rank") && more {
            j += 1;
            match parse_i64(&a[j], out) {
                Err(()) => return,
                Ok(0) => {
                    return resp::error(
                        out,
                        b"RANK can't be zero: use 1 to start from the first match, 2 from the \
                          second ... or use negative to start from the end of the list",
                    )
                }
                Ok(r) => rank = r,
            }
        } else if (is(&a[j], "count") || is(&a[j], "maxlen")) && more {
            let c = is(&a[j], "count");
            j += 1;
            match string2ll(&a[j]) {
                Some(n) if n >= 0 && c => count = Some(n as usize),
                Some(n) if n >= 0 => maxlen = n as usize,
                _ if c => return resp::error(out, b"COUNT can't be negative"),
                _ => return resp::error(out, b"MAXLEN can't be negative"),
            }
        } else {
            return resp::error(out, SYNTAX);
        }
        j += 1;
    }
    let l = match e.read::<List>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) if count.is_some() => return resp::array_len(out, 0),
        Ok(None) => return resp::null(out),
        Ok(Some(l)) => l,
    };
    let len = l.len();
    let rev = rank < 0;
    let mut skip = rank.unsigned_abs() - 1;
    let mut found = Vec::new();
    for k in 0..len {
        if maxlen != 0 && k >= maxlen {
            break;
        }
        let i = if rev { len - 1 - k } else { k };
        if l[i] != a[2] {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        found.push(i as i64);
        if count.is_none() || count == Some(found.len()) {
            break;
        }
    }
    match count {
        Some(_) => {
            resp::array_len(out, found.len());
            for i in found {
                resp::int(out, i);
            }
        }
        None => match found.first() {
            Some(&i) => resp::int(out, i),
            None => resp::null(out),
        },
    }
}

/// LEFT / RIGHT: true for the head.
fn end(a: &[u8], out: &mut Vec<u8>) -> Result<bool, ()> {
    if is(a, "left") {
        Ok(true)
    } else if is(a, "right") {
        Ok(false)
    } else {
        resp::error(out, SYNTAX);
        Err(())
    }
}

fn lmove_generic(e: &mut Engine, a: &[Vec<u8>], from: bool, to: bool, now: i64, out: &mut Vec<u8>) {
    match e.read::<List>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => return resp::null(out),
        Ok(Some(_)) => {}
    }
    if e.read::<List>(&a[2], now, out).is_err() {
        return;
    }
    let v = if a[1] == a[2] {
        // A rotation: the list never empties, so it keeps its time to live.
        e.write::<List, _>(&a[1], now, out, false, |l| {
            let v = l.pop(from).unwrap_or_default();
            l.push(v.clone(), to);
            v
        })
    } else {
        e.write::<List, _>(&a[1], now, out, false, |l| l.pop(from).unwrap_or_default())
    };
    let Ok(Some(v)) = v else {
        return;
    };
    if a[1] != a[2] {
        let _ = e.write::<List, _>(&a[2], now, out, true, |l| l.push(v.clone(), to));
    }
    resp::bulk(out, &v);
}

pub(super) fn lmove(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(from) = end(&a[3], out) else {
        return;
    };
    let Ok(to) = end(&a[4], out) else {
        return;
    };
    lmove_generic(e, a, from, to, now, out)
}

pub(super) fn rpoplpush(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    lmove_generic(e, a, false, true, now, out)
}
