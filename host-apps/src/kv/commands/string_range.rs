//! More string commands (Redis 7.0 `t_string.c`): GETRANGE (SUBSTR), SETRANGE, INCRBYFLOAT,
//! GETEX.

use super::*;

pub(super) fn getrange(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(mut start) = parse_i64(&a[2], out) else {
        return;
    };
    let Ok(mut end) = parse_i64(&a[3], out) else {
        return;
    };
    let s = match e.read::<Vec<u8>>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => return resp::bulk(out, b""),
        Ok(Some(s)) => s,
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return resp::bulk(out, b"");
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0).min(len - 1);
    if start > end || len == 0 {
        resp::bulk(out, b"");
    } else {
        resp::bulk(out, &s[start as usize..=end as usize]);
    }
}

fn too_long(e: &Engine, offset: i64, len: usize, out: &mut Vec<u8>) -> bool {
    let long = offset as u64 + len as u64 > e.cfg.max_bulk_len;
    if long {
        resp::error(
            out,
            b"string exceeds maximum allowed size (proto-max-bulk-len)",
        );
    }
    long
}

pub(super) fn setrange(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(offset) = parse_i64(&a[2], out) else {
        return;
    };
    if offset < 0 {
        return resp::error(out, b"offset is out of range");
    }
    let v = &a[3];
    let cur = match e.read::<Vec<u8>>(&a[1], now, out) {
        Err(()) => return,
        Ok(cur) => cur.map(|s| s.len()),
    };
    if v.is_empty() {
        return resp::int(out, cur.unwrap_or(0) as i64);
    }
    if too_long(e, offset, v.len(), out) {
        return;
    }
    let off = offset as usize;
    let n = e.write::<Vec<u8>, _>(&a[1], now, out, true, |s| {
        if s.len() < off + v.len() {
            s.resize(off + v.len(), 0);
        }
        s[off..off + v.len()].copy_from_slice(v);
        s.len()
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn incrbyfloat(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(cur) = e.read::<Vec<u8>>(&a[1], now, out) else {
        return;
    };
    let old = match cur {
        None => 0.0,
        Some(s) => match parse_float(s, out) {
            Ok(x) => x,
            Err(()) => return,
        },
    };
    let Ok(by) = parse_float(&a[2], out) else {
        return;
    };
    let new = old + by;
    if !new.is_finite() {
        return resp::error(out, b"increment would produce NaN or Infinity");
    }
    let s = fmt_human(new).into_bytes();
    resp::bulk(out, &s);
    let _ = e.write::<Vec<u8>, _>(&a[1], now, out, true, |v| *v = s);
}

pub(super) fn getex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    // The expiry options: name, in seconds, relative to now.
    const OPTS: [(&str, bool, bool); 4] = [
        ("ex", true, true),
        ("px", false, true),
        ("exat", true, false),
        ("pxat", false, false),
    ];
    let mut chosen: Option<usize> = None;
    let mut expire: Option<(&[u8], bool, bool)> = None;
    let mut persist = false;
    let mut j = 2;
    while j < a.len() {
        let k = OPTS.iter().position(|(n, _, _)| is(&a[j], n));
        match (k, a.get(j + 1)) {
            // The same option may repeat (the last wins); two different ones may not.
            (Some(k), Some(v)) if !persist && chosen.is_none_or(|c| c == k) => {
                chosen = Some(k);
                expire = Some((v, OPTS[k].1, OPTS[k].2));
                j += 1;
            }
            (None, _) if is(&a[j], "persist") && chosen.is_none() => persist = true,
            _ => return resp::error(out, SYNTAX),
        }
        j += 1;
    }
    let v = match e.read::<Vec<u8>>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => return resp::null(out),
        Ok(Some(v)) => v.clone(),
    };
    // The key and its type first, then the expiry time, as Redis 7.0 checks them.
    let mut when = None;
    if let Some((raw, secs, rel)) = expire {
        match expire_ms(raw, secs, rel, now, "getex", out) {
            Ok(ms) => when = Some(ms),
            Err(()) => return,
        }
    }
    resp::bulk(out, &v);
    match when {
        Some(ms) if ms <= now => {
            e.db.remove(&a[1]);
        }
        Some(ms) => e.db.set_expire(&a[1], ms),
        None if persist => {
            e.db.persist(&a[1]);
        }
        None => {}
    }
}
