//! Keyspace commands over names and databases (Redis 7.0 `db.c`, `object.c`): KEYS, SCAN
//! (MATCH COUNT TYPE), RANDOMKEY, RENAME, RENAMENX, COPY (DB REPLACE), OBJECT ENCODING,
//! FLUSHDB, SWAPDB.

use super::*;

pub(super) fn keys(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let all = a[1] == b"*";
    let found: Vec<&Vec<u8>> =
        e.db.keys()
            .filter(|k| !e.db.is_expired(k, now) && (all || glob_match(&a[1], k, false)))
            .collect();
    bulks(out, found.len(), found);
}

pub(super) fn scan(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let cursor = match std::str::from_utf8(&a[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(c) if !a[1].starts_with(b"+") => c,
        _ => return resp::error(out, b"invalid cursor"),
    };
    let (mut count, mut pat, mut ty) = (10usize, None, None);
    let mut i = 2;
    while i < a.len() {
        let two = a.len() - i >= 2;
        if is(&a[i], "count") && two {
            match parse_i64(&a[i + 1], out) {
                Err(()) => return,
                Ok(c) if c < 1 => return resp::error(out, SYNTAX),
                Ok(c) => count = c.min(1 << 20) as usize,
            }
        } else if is(&a[i], "match") && two {
            pat = (a[i + 1] != b"*").then_some(&a[i + 1]);
        } else if is(&a[i], "type") && two {
            ty = Some(&a[i + 1]);
        } else {
            return resp::error(out, SYNTAX);
        }
        i += 2;
    }
    let (next, visited) = e.db.scan(cursor, count);
    let mut found = Vec::new();
    for k in visited {
        if pat.is_some_and(|p| !glob_match(p, &k, false)) {
            continue;
        }
        let Some(en) = e.db.get(&k, now) else {
            continue;
        };
        if ty.is_some_and(|t| !is(t, en.value.type_name())) {
            continue;
        }
        found.push(k);
    }
    resp::array_len(out, 2);
    resp::bulk(out, next.to_string().as_bytes());
    bulks(out, found.len(), &found);
}

pub(super) fn randomkey(e: &mut Engine, _: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    // Keys past their time are deleted as they are drawn; bounded like Redis's tries.
    for _ in 0..100 {
        if e.db.is_empty() {
            break;
        }
        let k = e.db.key_at(rand_below(e.db.len())).to_vec();
        if e.db.contains(&k, now) {
            return resp::bulk(out, &k);
        }
    }
    resp::null(out)
}

fn rename_generic(e: &mut Engine, a: &[Vec<u8>], nx: bool, now: i64, out: &mut Vec<u8>) {
    if !e.db.contains(&a[1], now) {
        return resp::error(out, b"no such key");
    }
    if a[1] == a[2] {
        return if nx { resp::int(out, 0) } else { ok(out) };
    }
    if e.db.contains(&a[2], now) {
        if nx {
            return resp::int(out, 0);
        }
        e.db.remove(&a[2]);
    }
    if let Some(en) = e.db.take(&a[1]) {
        e.db.set(&a[2], en.value, false);
        if let Some(t) = en.expire_at {
            e.db.set_expire(&a[2], t);
        }
    }
    if nx {
        resp::int(out, 1)
    } else {
        ok(out)
    }
}

pub(super) fn rename(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    rename_generic(e, a, false, now, out)
}

pub(super) fn renamenx(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    rename_generic(e, a, true, now, out)
}

/// A database index argument (`getIntFromObjectOrReply` then the range check).
fn db_index(e: &Engine, a: &[u8], not_int: &[u8], out: &mut Vec<u8>) -> Result<usize, ()> {
    match string2ll(a) {
        Some(i) if i < i32::MIN as i64 || i > i32::MAX as i64 => {
            resp::error(out, not_int);
            Err(())
        }
        Some(i) if i < 0 || i as usize >= e.cfg.databases => {
            resp::error(out, b"DB index is out of range");
            Err(())
        }
        Some(i) => Ok(i as usize),
        None => {
            resp::error(out, not_int);
            Err(())
        }
    }
}

pub(super) fn copy(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let (src_db, mut dst_db, mut replace) = (e.cur, e.cur, false);
    let mut j = 3;
    while j < a.len() {
        if is(&a[j], "replace") {
            replace = true;
        } else if is(&a[j], "db") && j + 1 < a.len() {
            match db_index(e, &a[j + 1], NOT_INTEGER, out) {
                Ok(d) => dst_db = d,
                Err(()) => return,
            }
            j += 1;
        } else {
            return resp::error(out, SYNTAX);
        }
        j += 1;
    }
    if src_db == dst_db && a[1] == a[2] {
        return resp::error(out, b"source and destination objects are the same");
    }
    let Some(en) = e.db.get(&a[1], now).cloned() else {
        return resp::int(out, 0);
    };
    let dst = e.store_mut(dst_db);
    if dst.contains(&a[2], now) {
        if !replace {
            return resp::int(out, 0);
        }
        dst.remove(&a[2]);
    }
    dst.set(&a[2], en.value, false);
    if let Some(t) = en.expire_at {
        dst.set_expire(&a[2], t);
    }
    resp::int(out, 1);
}

/// The encoding OBJECT ENCODING names, from Redis 7.0's thresholds as CONFIG sets them
/// (`*-max-listpack-entries` 128, `*-max-listpack-value` 64, `set-max-intset-entries` 512,
/// embstr up to 44 bytes). Redis converts one way (a hash grown past the thresholds stays a
/// hashtable when it shrinks); this derives the name from the current contents.
fn encoding(v: &Value, t: &Encodings) -> &'static str {
    fn small(n: usize, max: usize, mut lens: impl Iterator<Item = usize>, vmax: usize) -> bool {
        n <= max && lens.all(|l| l <= vmax)
    }
    match v {
        Value::Str(s) if s.len() <= 20 && string2ll(s).is_some() => "int",
        Value::Str(s) if s.len() <= 44 => "embstr",
        Value::Str(_) => "raw",
        Value::List(_) => "quicklist",
        Value::Hash(h)
            if small(
                h.len(),
                t.hash_entries,
                h.iter().flat_map(|(f, x)| [f.len(), x.len()]),
                t.hash_value,
            ) =>
        {
            "listpack"
        }
        Value::Hash(_) => "hashtable",
        Value::Set(s) if s.len() <= t.set_intset && s.iter().all(|m| string2ll(m).is_some()) => {
            "intset"
        }
        Value::Set(_) => "hashtable",
        Value::ZSet(z)
            if small(
                z.len(),
                t.zset_entries,
                z.order().iter().map(|(_, m)| m.len()),
                t.zset_value,
            ) =>
        {
            "listpack"
        }
        Value::ZSet(_) => "skiplist",
    }
}

pub(super) fn object_encoding(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let t = e.cfg.encodings;
    match e.db.get(&a[2], now) {
        Some(en) => resp::bulk(out, encoding(&en.value, &t).as_bytes()),
        None => resp::null(out),
    }
}

/// FLUSHDB / FLUSHALL's optional argument.
pub(super) fn flush_arg_ok(a: &[Vec<u8>], out: &mut Vec<u8>) -> bool {
    let good = a.len() == 1 || (a.len() == 2 && (is(&a[1], "sync") || is(&a[1], "async")));
    if !good {
        resp::error(out, SYNTAX);
    }
    good
}

pub(super) fn flushdb(e: &mut Engine, a: &[Vec<u8>], _: i64, out: &mut Vec<u8>) {
    if flush_arg_ok(a, out) {
        e.db.clear();
        ok(out);
    }
}

pub(super) fn swapdb(e: &mut Engine, a: &[Vec<u8>], _: i64, out: &mut Vec<u8>) {
    let Ok(x) = db_index(e, &a[1], b"invalid first DB index", out) else {
        return;
    };
    let Ok(y) = db_index(e, &a[2], b"invalid second DB index", out) else {
        return;
    };
    if x != y {
        // Both as plain slots: put the current database back first.
        let cur = e.cur;
        std::mem::swap(&mut e.db, &mut e.dbs[cur]);
        let (lo, hi) = (x.min(y), x.max(y));
        let (l, r) = e.dbs.split_at_mut(hi);
        l[lo].swap_data(&mut r[0]);
        std::mem::swap(&mut e.db, &mut e.dbs[cur]);
    }
    ok(out);
}

/// MEMORY USAGE key [SAMPLES count]: the bytes nicemu accounts for the key (its own
/// approximation, see docs/redis-compat.md), a null for a missing key.
pub(super) fn memory_usage(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let mut j = 3;
    while j < a.len() {
        if is(&a[j], "samples") && j + 1 < a.len() {
            if parse_i64(&a[j + 1], out).is_err() {
                return;
            }
            j += 2;
        } else {
            return resp::error(out, SYNTAX);
        }
    }
    match e.db.get(&a[2], now) {
        Some(en) => resp::int(out, crate::kv::store::cost(&a[2], &en.value) as i64),
        None => resp::null(out),
    }
}

/// MOVE key db (Redis 7.0 moveCommand): 1 when moved with its time to live, 0 when the key
/// is missing or already in the target database.
pub(super) fn move_cmd(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let dst_db = match string2ll(&a[2]) {
        Some(n) if (i32::MIN as i64..=i32::MAX as i64).contains(&n) => n,
        _ => return resp::error(out, NOT_INTEGER),
    };
    if dst_db < 0 || dst_db as usize >= e.dbs.len() {
        return resp::error(out, b"DB index is out of range");
    }
    let dst_db = dst_db as usize;
    if dst_db == e.cur {
        return resp::error(out, b"source and destination objects are the same");
    }
    if !e.db.contains(&a[1], now) || e.store_mut(dst_db).contains(&a[1], now) {
        return resp::int(out, 0);
    }
    let Some(en) = e.db.take(&a[1]) else {
        return resp::int(out, 0);
    };
    let dst = e.store_mut(dst_db);
    dst.set(&a[1], en.value, false);
    if let Some(t) = en.expire_at {
        dst.set_expire(&a[1], t);
    }
    resp::int(out, 1);
}

/// OBJECT REFCOUNT key: 1, or INT_MAX for the integers 0..9999 Redis keeps as shared
/// objects (OBJ_SHARED_INTEGERS, with the default noeviction policy).
pub(super) fn object_refcount(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    match e.db.get(&a[2], now).map(|en| &en.value) {
        None => resp::null(out),
        Some(Value::Str(s))
            if s.len() <= 20 && string2ll(s).is_some_and(|n| (0..10000).contains(&n)) =>
        {
            resp::int(out, i32::MAX as i64)
        }
        Some(_) => resp::int(out, 1),
    }
}
