//! String commands: GET, SET and its variants, MGET, MSET, INCR/DECR, APPEND, STRLEN
//! (Redis 7.0 `t_string.c`).

use super::*;

pub(super) fn get(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    // The value is written straight from the keyspace (no copy of it first).
    match e.read::<Vec<u8>>(&a[1], now, out) {
        Ok(Some(v)) => resp::bulk(out, v),
        Ok(None) => resp::null(out),
        Err(()) => {}
    }
}

#[derive(Default)]
pub(super) struct SetFlags {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    ex: bool,
    px: bool,
    exat: bool,
    pxat: bool,
}

impl SetFlags {
    fn any_expire(&self) -> bool {
        self.ex || self.px || self.exat || self.pxat
    }
}

/// Redis's getExpireMillisecondsOrReply: the absolute expiry time in ms.
pub(super) fn expire_ms(
    raw: &[u8],
    seconds: bool,
    relative: bool,
    now: i64,
    cmd: &str,
    out: &mut Vec<u8>,
) -> Result<i64, ()> {
    let mut ms = parse_i64(raw, out)?;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        expire_time_error(out, cmd);
        return Err(());
    }
    if seconds {
        ms *= 1000;
    }
    if relative {
        ms = ms.wrapping_add(now);
    }
    if ms <= 0 {
        expire_time_error(out, cmd);
        return Err(());
    }
    Ok(ms)
}

/// Redis's setGenericCommand. `ok`/`abort`: replies when set / not set (None: `+OK` /
/// null).
#[allow(clippy::too_many_arguments)]
pub(super) fn set_generic(
    e: &mut Engine,
    f: &SetFlags,
    key: &[u8],
    val: &[u8],
    expire: Option<(&[u8], bool)>,
    cmd: &str,
    now: i64,
    out: &mut Vec<u8>,
    replies: Option<(i64, i64)>,
) {
    let mut when = None;
    if let Some((raw, seconds)) = expire {
        match expire_ms(raw, seconds, f.ex || f.px, now, cmd, out) {
            Ok(ms) => when = Some(ms),
            Err(()) => return,
        }
    }
    if f.get {
        match e.get_str(key, now, out) {
            Err(()) => return,
            Ok(Some(v)) => resp::bulk(out, &v),
            Ok(None) => resp::null(out),
        }
    }
    let found = e.db.contains(key, now);
    if (f.nx && found) || (f.xx && !found) {
        if !f.get {
            match replies {
                Some((_, abort)) => resp::int(out, abort),
                None => resp::null(out),
            }
        }
        return;
    }
    e.db.set(key, Value::Str(val.to_vec()), f.keepttl);
    if let Some(ms) = when {
        e.db.set_expire(key, ms);
    }
    if !f.get {
        match replies {
            Some((ok, _)) => resp::int(out, ok),
            None => out.extend_from_slice(b"+OK\r\n"),
        }
    }
}

pub(super) fn set(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let mut f = SetFlags::default();
    let mut expire: Option<(&[u8], bool)> = None;
    let mut j = 3;
    while j < a.len() {
        let o = cstr(&a[j]);
        let next = a.get(j + 1);
        let is_o = |s: &str| o.eq_ignore_ascii_case(s.as_bytes());
        if is_o("nx") && !f.xx {
            f.nx = true;
        } else if is_o("xx") && !f.nx {
            f.xx = true;
        } else if is_o("get") {
            f.get = true;
        } else if is_o("keepttl") && !f.any_expire() {
            f.keepttl = true;
        } else if is_o("ex") && !f.keepttl && !f.exat && !f.px && !f.pxat && next.is_some() {
            f.ex = true;
            expire = next.map(|n| (&n[..], true));
            j += 1;
        } else if is_o("px") && !f.keepttl && !f.ex && !f.exat && !f.pxat && next.is_some() {
            f.px = true;
            expire = next.map(|n| (&n[..], false));
            j += 1;
        } else if is_o("exat") && !f.keepttl && !f.ex && !f.px && !f.pxat && next.is_some() {
            f.exat = true;
            expire = next.map(|n| (&n[..], true));
            j += 1;
        } else if is_o("pxat") && !f.keepttl && !f.ex && !f.exat && !f.px && next.is_some() {
            f.pxat = true;
            expire = next.map(|n| (&n[..], false));
            j += 1;
        } else {
            resp::error(out, SYNTAX);
            return;
        }
        j += 1;
    }
    set_generic(e, &f, &a[1], &a[2], expire, "set", now, out, None);
}

pub(super) fn setnx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let f = SetFlags {
        nx: true,
        ..SetFlags::default()
    };
    set_generic(e, &f, &a[1], &a[2], None, "setnx", now, out, Some((1, 0)));
}

pub(super) fn setex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let f = SetFlags {
        ex: true,
        ..SetFlags::default()
    };
    set_generic(
        e,
        &f,
        &a[1],
        &a[3],
        Some((&a[2], true)),
        "setex",
        now,
        out,
        None,
    );
}

pub(super) fn psetex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let f = SetFlags {
        px: true,
        ..SetFlags::default()
    };
    set_generic(
        e,
        &f,
        &a[1],
        &a[3],
        Some((&a[2], false)),
        "psetex",
        now,
        out,
        None,
    );
}

pub(super) fn getset(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match e.get_str(&a[1], now, out) {
        Err(()) => {}
        Ok(v) => {
            match v {
                Some(v) => resp::bulk(out, &v),
                None => resp::null(out),
            }
            e.db.set(&a[1], Value::Str(a[2].clone()), false);
        }
    }
}

pub(super) fn getdel(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match e.get_str(&a[1], now, out) {
        Err(()) => {}
        Ok(None) => resp::null(out),
        Ok(Some(v)) => {
            resp::bulk(out, &v);
            e.db.remove(&a[1]);
        }
    }
}

pub(super) fn mget(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    resp::array_len(out, a.len() - 1);
    for k in &a[1..] {
        match e.db.get(k, now).map(|e| &e.value) {
            Some(Value::Str(s)) => resp::bulk(out, s),
            _ => resp::null(out),
        }
    }
}

pub(super) fn mset(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    mset_generic(e, a, now, out, false)
}

pub(super) fn msetnx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    mset_generic(e, a, now, out, true)
}

pub(super) fn mset_generic(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>, nx: bool) {
    if a.len().is_multiple_of(2) {
        arity_error(out, if nx { "msetnx" } else { "mset" });
        return;
    }
    if nx && a[1..].chunks(2).any(|kv| e.db.contains(&kv[0], now)) {
        resp::int(out, 0);
        return;
    }
    for kv in a[1..].chunks(2) {
        e.db.set(&kv[0], Value::Str(kv[1].clone()), false);
    }
    if nx {
        resp::int(out, 1);
    } else {
        out.extend_from_slice(b"+OK\r\n");
    }
}

pub(super) fn incr_decr(e: &mut Engine, key: &[u8], by: i64, now: i64, out: &mut Vec<u8>) {
    let Ok(cur) = e.get_str(key, now, out) else {
        return;
    };
    let old = match cur {
        None => 0,
        Some(v) => match string2ll(&v) {
            Some(n) => n,
            None => {
                resp::error(out, NOT_INTEGER);
                return;
            }
        },
    };
    let Some(new) = old.checked_add(by) else {
        resp::error(out, b"increment or decrement would overflow");
        return;
    };
    let s = new.to_string().into_bytes();
    if e.db
        .modify(key, now, |v| *v = Value::Str(s.clone()))
        .is_none()
    {
        e.db.set(key, Value::Str(s), false);
    }
    resp::int(out, new);
}

pub(super) fn incr(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    incr_decr(e, &a[1], 1, now, out)
}

pub(super) fn decr(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    incr_decr(e, &a[1], -1, now, out)
}

pub(super) fn incrby(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(by) = parse_i64(&a[2], out) {
        incr_decr(e, &a[1], by, now, out)
    }
}

pub(super) fn decrby(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match parse_i64(&a[2], out) {
        Ok(i64::MIN) => {
            resp::error(out, b"decrement would overflow");
        }
        Ok(by) => incr_decr(e, &a[1], -by, now, out),
        Err(()) => {}
    }
}

pub(super) fn append(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(cur) = e.get_str(&a[1], now, out) else {
        return;
    };
    match cur {
        None => {
            e.db.set(&a[1], Value::Str(a[2].clone()), false);
            resp::int(out, a[2].len() as i64);
        }
        Some(v) => {
            let total = v.len() as u64 + a[2].len() as u64;
            if total > e.cfg.max_bulk_len {
                resp::error(
                    out,
                    b"string exceeds maximum allowed size (proto-max-bulk-len)",
                );
                return;
            }
            let add = &a[2];
            e.db.modify(&a[1], now, |v| {
                if let Value::Str(s) = v {
                    s.extend_from_slice(add);
                }
            });
            resp::int(out, total as i64);
        }
    }
}

pub(super) fn strlen(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    if let Ok(v) = e.get_str(&a[1], now, out) {
        resp::int(out, v.map_or(0, |v| v.len() as i64));
    }
}
