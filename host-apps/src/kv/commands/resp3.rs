//! RESP3 replies (<https://github.com/redis/redis-specification/blob/master/protocol/RESP3.md>)
//! for sessions that said `HELLO 3`: the commands write RESP2, and this rewrites a reply into
//! the RESP3 types Redis 7.0 uses for that command: null `_` for null bulks and null arrays,
//! maps `%` (HGETALL, CONFIG GET, HELLO), sets `~` (SMEMBERS, SINTER, SUNION, SDIFF, SPOP
//! with a count), doubles `,` (ZSCORE, ZMSCORE, ZINCRBY, ZADD INCR) and member-score pairs
//! (the ZRANGE family WITHSCORES, ZPOPMIN / ZPOPMAX with a count, HRANDFIELD WITHVALUES).

use super::*;

/// A parsed RESP2 reply.
enum R {
    /// `+...`, `-...` or `:...`, the whole line.
    Line(Vec<u8>),
    Bulk(Vec<u8>),
    Null,
    Arr(Vec<R>),
}

fn parse(b: &[u8], i: &mut usize, depth: u32) -> Option<R> {
    let end = *i + b.get(*i..)?.windows(2).position(|w| w == b"\r\n")?;
    let line = &b[*i..end];
    let kind = *line.first()?;
    *i = end + 2;
    match kind {
        b'+' | b'-' | b':' => Some(R::Line(b[end - line.len()..end + 2].to_vec())),
        b'$' => {
            let n = string2ll(&line[1..])?;
            if n < 0 {
                return Some(R::Null);
            }
            let v = b.get(*i..*i + n as usize)?.to_vec();
            *i += n as usize + 2;
            Some(R::Bulk(v))
        }
        b'*' if depth < 8 => {
            let n = string2ll(&line[1..])?;
            if n < 0 {
                return Some(R::Null);
            }
            (0..n)
                .map(|_| parse(b, i, depth + 1))
                .collect::<Option<_>>()
                .map(R::Arr)
        }
        _ => None,
    }
}

fn emit(r: &R, out: &mut Vec<u8>) {
    match r {
        R::Line(l) => out.extend_from_slice(l),
        R::Bulk(v) => resp::bulk(out, v),
        R::Null => out.extend_from_slice(b"_\r\n"),
        R::Arr(items) => {
            resp::array_len(out, items.len());
            for x in items {
                emit(x, out);
            }
        }
    }
}

/// A score bulk as a RESP3 double (the same digits).
fn double(r: &R, out: &mut Vec<u8>) {
    match r {
        R::Bulk(v) => {
            out.push(b',');
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
        other => emit(other, out),
    }
}

fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    out.extend_from_slice(n.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A flat [member, value, member, value, ...] array as an array of pairs, the value a
/// double when `scores`.
fn pairs(items: &[R], scores: bool, out: &mut Vec<u8>) {
    resp::array_len(out, items.len() / 2);
    for p in items.chunks(2) {
        resp::array_len(out, 2);
        emit(&p[0], out);
        match (&p.get(1), scores) {
            (Some(x), true) => double(x, out),
            (Some(x), false) => emit(x, out),
            (None, _) => {}
        }
    }
}

/// Rewrites the RESP2 reply `out[start..]` of command `full` (lowercase, `config|get`) with
/// arguments `a` as RESP3. A reply it cannot parse is left as is.
pub(super) fn to_resp3(full: &str, a: &[Vec<u8>], out: &mut Vec<u8>, start: usize) {
    let mut i = start;
    let Some(r) = parse(out, &mut i, 0) else {
        return;
    };
    if i != out.len() {
        return;
    }
    let has = |w: &str| a.iter().skip(2).any(|x| is(x, w));
    let mut o = Vec::with_capacity(out.len() - start);
    match (&r, full) {
        (R::Arr(items), "hgetall" | "config|get" | "hello") => {
            header(&mut o, b'%', items.len() / 2);
            items.iter().for_each(|x| emit(x, &mut o));
        }
        (R::Arr(items), "smembers" | "sinter" | "sunion" | "sdiff" | "spop") => {
            header(&mut o, b'~', items.len());
            items.iter().for_each(|x| emit(x, &mut o));
        }
        (R::Bulk(_), "zscore" | "zincrby" | "zadd") => double(&r, &mut o),
        (R::Arr(items), "zmscore") => {
            resp::array_len(&mut o, items.len());
            items.iter().for_each(|x| double(x, &mut o));
        }
        (R::Arr(items), "zpopmin" | "zpopmax") if a.len() == 3 => pairs(items, true, &mut o),
        (R::Arr(items), "zpopmin" | "zpopmax") => {
            resp::array_len(&mut o, items.len());
            for (k, x) in items.iter().enumerate() {
                if k % 2 == 1 {
                    double(x, &mut o)
                } else {
                    emit(x, &mut o)
                }
            }
        }
        (R::Arr(items), "zrange" | "zrevrange" | "zrangebyscore" | "zrevrangebyscore")
            if has("withscores") =>
        {
            pairs(items, true, &mut o)
        }
        (R::Arr(items), "hrandfield") if has("withvalues") => pairs(items, false, &mut o),
        (R::Arr(items), "zrandmember") if has("withscores") => pairs(items, true, &mut o),
        (R::Arr(items), "zunion" | "zinter" | "zdiff")
            if a.iter().skip(1).any(|x| is(x, "withscores")) =>
        {
            pairs(items, true, &mut o)
        }
        // `[key, [[member, score], ...]]` with the scores as doubles.
        (R::Arr(items), "zmpop" | "bzmpop") if items.len() == 2 => {
            resp::array_len(&mut o, 2);
            emit(&items[0], &mut o);
            match &items[1] {
                R::Arr(ps) => {
                    resp::array_len(&mut o, ps.len());
                    for p in ps {
                        match p {
                            R::Arr(ms) if ms.len() == 2 => {
                                resp::array_len(&mut o, 2);
                                emit(&ms[0], &mut o);
                                double(&ms[1], &mut o);
                            }
                            x => emit(x, &mut o),
                        }
                    }
                }
                x => emit(x, &mut o),
            }
        }
        _ => emit(&r, &mut o),
    }
    out.truncate(start);
    out.extend_from_slice(&o);
}
