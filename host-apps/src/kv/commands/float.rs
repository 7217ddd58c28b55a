//! Floating-point arguments and replies as Redis 7.0 reads and writes them: `string2d`
//! (strtod, the whole argument, no leading blank, no NaN, no overflow) for scores, and the
//! two output forms: `%.17g` for scores (`addReplyDouble`) and the human form of
//! INCRBYFLOAT / HINCRBYFLOAT (no exponent, no trailing zeros).

use super::*;

/// Redis's `string2d` (and `string2ld` for the increments): a float without leading blanks
/// or trailing bytes; NaN and values out of range are refused. Hexadecimal floats, which
/// strtod takes, are not read.
pub(super) fn parse_f64(a: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(a).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    let body = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if v.is_infinite() && !body.starts_with("inf") {
        return None; // ERANGE overflow
    }
    let mantissa = body.split('e').next().unwrap_or("");
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return None; // ERANGE underflow
    }
    Some(v)
}

/// [`parse_f64`] with Redis's reply on failure.
pub(super) fn parse_float(a: &[u8], out: &mut Vec<u8>) -> Result<f64, ()> {
    parse_f64(a).ok_or_else(|| resp::error(out, NOT_FLOAT))
}

/// C's `printf("%.17g", d)` for a finite `d`.
pub(super) fn fmt_g17(d: f64) -> String {
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{d:.16e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&x) {
        let sign = if x < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), x.abs())
    } else {
        trim(&format!("{:.*}", (16 - x) as usize, d))
    }
}

/// A score reply (`addReplyDouble` in RESP2): a bulk string, `inf` / `-inf` for infinities.
pub(super) fn score_reply(out: &mut Vec<u8>, d: f64) {
    if d.is_infinite() {
        resp::bulk(out, if d > 0.0 { b"inf" } else { b"-inf" });
    } else {
        resp::bulk(out, fmt_g17(d).as_bytes());
    }
}

/// The human form INCRBYFLOAT stores and replies (Redis's `ld2string(LD_STR_HUMAN)`): no
/// exponent, no trailing zeros, `-0` as `0`. Redis computes in `long double` and prints 17
/// decimals; this computes in `f64` and prints the shortest form that reads back the same,
/// which agrees for the sums of short decimals but may differ in the last digits.
pub(super) fn fmt_human(d: f64) -> String {
    if d == 0.0 {
        return "0".into();
    }
    if d.abs() >= 9007199254740992.0 {
        // Past 2^53 every f64 is an integer: its exact digits, as `%.17Lf` prints them.
        return format!("{d:.0}");
    }
    format!("{d}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_float_parse_and_format_as_redis() {
        for (s, want) in [
            ("1.5", Some(1.5)),
            ("-inf", Some(f64::NEG_INFINITY)),
            ("+Inf", Some(f64::INFINITY)),
            ("1e3", Some(1000.0)),
            ("nan", None),
            (" 1", None),
            ("1 ", None),
            ("", None),
            ("1e400", None),
            ("1e-400", None),
            ("0e5", Some(0.0)),
            ("abc", None),
        ] {
            assert_eq!(parse_f64(s.as_bytes()), want, "{s}");
        }
        for (d, want) in [
            (1.1, "1.1000000000000001"),
            (0.5, "0.5"),
            (3.0, "3"),
            (-2.25, "-2.25"),
            (1e17, "1e+17"),
            (1e16, "10000000000000000"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (123456789.125, "123456789.125"),
        ] {
            assert_eq!(fmt_g17(d), want);
        }
        assert_eq!(fmt_human(10.5 + 0.1), "10.6");
        assert_eq!(fmt_human(3.0), "3");
        assert_eq!(fmt_human(-0.0), "0");
        assert_eq!(fmt_human(1e20), "100000000000000000000");
        assert_eq!(fmt_human(9223372036854775807.0), "9223372036854775808");
    }
}
