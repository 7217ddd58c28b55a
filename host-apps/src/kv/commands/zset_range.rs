//! Sorted set range commands (Redis 7.0 `t_zset.c`, `zrangeGenericCommand`): ZRANGE (BYSCORE
//! BYLEX REV LIMIT WITHSCORES), ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX,
//! ZREVRANGEBYLEX, ZCOUNT, ZLEXCOUNT and ZREMRANGEBYRANK / BYSCORE / BYLEX. Ranges are
//! found by binary search over the ordered elements.

use super::*;

/// A score bound (`zslParseRange`): `(` makes it exclusive; strtod reads the rest (leading
/// blanks skipped, an empty string is 0, `inf` allowed, NaN refused).
fn score_bound(a: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match a.first() {
        Some(b'(') => (true, &a[1..]),
        _ => (false, a),
    };
    let s = std::str::from_utf8(body).ok()?.trim_start();
    let v: f64 = if s.is_empty() { 0.0 } else { s.parse().ok()? };
    (!v.is_nan()).then_some((v, ex))
}

/// A lex bound (`zslParseLexItem`): `-` / `+` (the ends), `[x` inclusive, `(x` exclusive.
#[derive(Clone, Copy)]
enum Lex<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

fn lex_bound(a: &[u8]) -> Option<Lex<'_>> {
    match a.first() {
        Some(b'+') if a.len() == 1 => Some(Lex::Max),
        Some(b'-') if a.len() == 1 => Some(Lex::Min),
        Some(b'(') => Some(Lex::Excl(&a[1..])),
        Some(b'[') => Some(Lex::Incl(&a[1..])),
        _ => None,
    }
}

/// A parsed range over the order of a sorted set.
enum Range<'a> {
    Rank(i64, i64),
    Score((f64, bool), (f64, bool)),
    Lex(Lex<'a>, Lex<'a>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

fn parse_range<'a>(
    by: By,
    min: &'a [u8],
    max: &'a [u8],
    out: &mut Vec<u8>,
) -> Result<Range<'a>, ()> {
    match by {
        By::Rank => Ok(Range::Rank(parse_i64(min, out)?, parse_i64(max, out)?)),
        By::Score => match (score_bound(min), score_bound(max)) {
            (Some(a), Some(b)) => Ok(Range::Score(a, b)),
            _ => {
                resp::error(out, b"min or max is not a float");
                Err(())
            }
        },
        By::Lex => match (lex_bound(min), lex_bound(max)) {
            (Some(a), Some(b)) => Ok(Range::Lex(a, b)),
            _ => {
                resp::error(out, b"min or max not valid string range item");
                Err(())
            }
        },
    }
}

/// The ranks `lo..hi` (ascending) the range covers in `z`, walked from the top when `rev`.
fn span(z: &ZSet, r: &Range, rev: bool) -> (usize, usize) {
    let len = z.len() as i64;
    match *r {
        Range::Rank(mut s, mut t) => {
            if s < 0 {
                s += len;
            }
            if t < 0 {
                t += len;
            }
            s = s.max(0);
            if s > t || s >= len {
                return (0, 0);
            }
            (s as usize, (t.min(len - 1) + 1) as usize)
        }
        Range::Score((min, minex), (max, maxex)) => {
            let lo = z.partition(|s, _| if minex { s <= min } else { s < min });
            let hi = z.partition(|s, _| if maxex { s < max } else { s <= max });
            (lo, hi.max(lo))
        }
        Range::Lex(min, max) if z.len() <= 128 => lex_span_small(z, min, max, rev),
        Range::Lex(min, max) => {
            let lo = match min {
                Lex::Min => 0,
                Lex::Max => z.len(),
                Lex::Incl(x) => z.partition(|_, m| m < x),
                Lex::Excl(x) => z.partition(|_, m| m <= x),
            };
            let hi = match max {
                Lex::Min => 0,
                Lex::Max => z.len(),
                Lex::Incl(x) => z.partition(|_, m| m <= x),
                Lex::Excl(x) => z.partition(|_, m| m < x),
            };
            (lo, hi.max(lo))
        }
    }
}

fn gte_min(m: &[u8], min: Lex) -> bool {
    match min {
        Lex::Min => true,
        Lex::Max => false,
        Lex::Incl(x) => m >= x,
        Lex::Excl(x) => m > x,
    }
}

fn lte_max(m: &[u8], max: Lex) -> bool {
    match max {
        Lex::Min => false,
        Lex::Max => true,
        Lex::Incl(x) => m <= x,
        Lex::Excl(x) => m < x,
    }
}

/// A lex range over a small sorted set as Redis walks its listpack (`zzlFirstInLexRange`,
/// `zzlLastInLexRange`): from the head (the tail when `rev`) to the first member inside the
/// bound, then on while inside the other. Lex ranges assume equal scores; with mixed scores
/// the result depends on this walk, which this reproduces.
fn lex_span_small(z: &ZSet, min: Lex, max: Lex, rev: bool) -> (usize, usize) {
    let o = z.order();
    let n = o.len();
    let empty_range = match (min, max) {
        (Lex::Max, _) | (_, Lex::Min) => true,
        (Lex::Incl(a) | Lex::Excl(a), Lex::Incl(b) | Lex::Excl(b)) => {
            a > b || (a == b && !(matches!(min, Lex::Incl(_)) && matches!(max, Lex::Incl(_))))
        }
        _ => false,
    };
    if n == 0 || empty_range || !gte_min(&o[n - 1].1, min) || !lte_max(&o[0].1, max) {
        return (0, 0);
    }
    if rev {
        let Some(hi) = (0..n).rev().find(|&i| lte_max(&o[i].1, max)) else {
            return (0, 0);
        };
        if !gte_min(&o[hi].1, min) {
            return (0, 0);
        }
        let lo = (0..hi)
            .rev()
            .find(|&i| !gte_min(&o[i].1, min))
            .map_or(0, |i| i + 1);
        (lo, hi + 1)
    } else {
        let Some(lo) = (0..n).find(|&i| gte_min(&o[i].1, min)) else {
            return (0, 0);
        };
        if !lte_max(&o[lo].1, max) {
            return (0, 0);
        }
        let hi = (lo + 1..n).find(|&i| !lte_max(&o[i].1, max)).unwrap_or(n);
        (lo, hi)
    }
}

/// Redis's `zrangeGenericCommand`: `first` is the index of the key; `by`/`rev` are preset
/// by the legacy commands (None: ZRANGE, which takes BYSCORE / BYLEX / REV).
fn zrange_generic(
    e: &mut Engine,
    a: &[Vec<u8>],
    by: Option<By>,
    rev: Option<bool>,
    now: i64,
    out: &mut Vec<u8>,
) {
    let (mut by_opt, mut rev_opt) = (by, rev);
    let (mut withscores, mut limit) = (false, None);
    let mut j = 4;
    while j < a.len() {
        let left = a.len() - j - 1;
        if is(&a[j], "withscores") {
            withscores = true;
        } else if is(&a[j], "limit") && left >= 2 {
            let Ok(off) = parse_i64(&a[j + 1], out) else {
                return;
            };
            let Ok(cnt) = parse_i64(&a[j + 2], out) else {
                return;
            };
            limit = Some((off, cnt));
            j += 2;
        } else if rev_opt.is_none() && is(&a[j], "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && is(&a[j], "bylex") {
            by_opt = Some(By::Lex);
        } else if by_opt.is_none() && is(&a[j], "byscore") {
            by_opt = Some(By::Score);
        } else {
            resp::error(out, SYNTAX);
            return;
        }
        j += 1;
    }
    let rev = rev_opt.unwrap_or(false);
    let by = by_opt.unwrap_or(By::Rank);
    // LIMIT with a count of -1 is no limit, and allowed anywhere.
    if limit.is_some_and(|(_, c)| c != -1) && by == By::Rank {
        resp::error(
            out,
            b"syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
        return;
    }
    if withscores && by == By::Lex {
        resp::error(
            out,
            b"syntax error, WITHSCORES not supported in combination with BYLEX",
        );
        return;
    }
    let (min, max) = if rev && by != By::Rank {
        (&a[3], &a[2])
    } else {
        (&a[2], &a[3])
    };
    let Ok(range) = parse_range(by, min, max, out) else {
        return;
    };
    let z = match e.read::<ZSet>(&a[1], now, out) {
        Err(()) => return,
        Ok(None) => {
            resp::array_len(out, 0);
            return;
        }
        Ok(Some(z)) => z,
    };
    let (lo, hi) = match range {
        // Ranks count from the top: map them onto ascending positions.
        Range::Rank(..) if rev => {
            let (l, h) = span(z, &range, false);
            (z.len() - h, z.len() - l)
        }
        _ => span(z, &range, rev),
    };
    let mut picked: Vec<&(f64, Vec<u8>)> = if rev {
        z.order().range(lo..hi).rev().collect()
    } else {
        z.order().range(lo..hi).collect()
    };
    if let Some((off, cnt)) = limit.filter(|_| by != By::Rank) {
        if off < 0 {
            picked.clear();
        } else {
            let off = (off as u64).min(picked.len() as u64) as usize;
            picked.drain(..off);
            if cnt >= 0 {
                picked.truncate((cnt as u64).min(picked.len() as u64) as usize);
            }
        }
    }
    resp::array_len(out, picked.len() * (1 + withscores as usize));
    for (s, m) in picked {
        resp::bulk(out, m);
        if withscores {
            score_reply(out, *s);
        }
    }
}

pub(super) fn zrange(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, None, None, now, out)
}

pub(super) fn zrevrange(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, Some(By::Rank), Some(true), now, out)
}

pub(super) fn zrangebyscore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, Some(By::Score), Some(false), now, out)
}

pub(super) fn zrevrangebyscore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, Some(By::Score), Some(true), now, out)
}

pub(super) fn zrangebylex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, Some(By::Lex), Some(false), now, out)
}

pub(super) fn zrevrangebylex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zrange_generic(e, a, Some(By::Lex), Some(true), now, out)
}

/// ZCOUNT / ZLEXCOUNT: the range is checked before the key.
fn zcount_generic(e: &mut Engine, a: &[Vec<u8>], by: By, now: i64, out: &mut Vec<u8>) {
    let Ok(range) = parse_range(by, &a[2], &a[3], out) else {
        return;
    };
    if let Ok(z) = e.read::<ZSet>(&a[1], now, out) {
        let (lo, hi) = z.map_or((0, 0), |z| span(z, &range, false));
        resp::int(out, (hi - lo) as i64);
    }
}

pub(super) fn zcount(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zcount_generic(e, a, By::Score, now, out)
}

pub(super) fn zlexcount(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zcount_generic(e, a, By::Lex, now, out)
}

fn zremrange(e: &mut Engine, a: &[Vec<u8>], by: By, now: i64, out: &mut Vec<u8>) {
    let Ok(range) = parse_range(by, &a[2], &a[3], out) else {
        return;
    };
    let n = e.write_if::<ZSet, _>(&a[1], now, out, false, |z| {
        let (lo, hi) = span(z, &range, false);
        let n = z.remove_ranks(lo, hi);
        (n, n > 0)
    });
    if let Ok(n) = n {
        resp::int(out, n.unwrap_or(0) as i64);
    }
}

pub(super) fn zremrangebyrank(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zremrange(e, a, By::Rank, now, out)
}

pub(super) fn zremrangebyscore(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zremrange(e, a, By::Score, now, out)
}

pub(super) fn zremrangebylex(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    zremrange(e, a, By::Lex, now, out)
}
