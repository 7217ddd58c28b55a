//! Quantities with units in testbench scenarios: durations (`"10us"`), rates (`"40Gbps"`)
//! and sizes (`"5.5MB"`). A bare integer is the base unit (ns, bit/s, bytes); a string is a
//! decimal number followed by a unit. Used through `#[serde(deserialize_with = ...)]`, so the
//! scenario structs keep plain integers.

use serde::de::{self, Deserializer, Visitor};

use crate::tonic::Nanos;

/// Kinds of quantity: the units each accepts, with their factor to the base unit.
#[derive(Clone, Copy)]
enum Kind {
    Duration,
    Rate,
    Size,
}

impl Kind {
    fn units(self) -> &'static [(&'static str, f64)] {
        match self {
            Kind::Duration => &[
                ("ns", 1.0),
                ("us", 1e3),
                ("µs", 1e3),
                ("ms", 1e6),
                ("s", 1e9),
            ],
            Kind::Rate => &[
                ("bps", 1.0),
                ("kbps", 1e3),
                ("mbps", 1e6),
                ("gbps", 1e9),
                ("tbps", 1e12),
            ],
            Kind::Size => &[
                ("b", 1.0),
                ("kb", 1e3),
                ("kib", 1024.0),
                ("mb", 1e6),
                ("mib", 1_048_576.0),
                ("gb", 1e9),
                ("gib", 1_073_741_824.0),
            ],
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Duration => "a duration: integer nanoseconds or a string like \"10us\", \"1.5ms\" (units ns, us, ms, s)",
            Kind::Rate => "a rate: integer bits per second or a string like \"40Gbps\" (units bps, Kbps, Mbps, Gbps, Tbps)",
            Kind::Size => "a size: integer bytes or a string like \"64KB\", \"5.5MB\", \"1MiB\" (units B, KB, KiB, MB, MiB, GB, GiB)",
        }
    }
}

/// Parses `text` as a quantity of `kind` in its base unit.
fn parse(kind: Kind, text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.replace('_', "").parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let factor = if unit.is_empty() {
        1.0
    } else {
        kind.units().iter().find(|(u, _)| *u == unit)?.1
    };
    let v = (num * factor).round();
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

struct QVisitor(Kind);

impl Visitor<'_> for QVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.0.expected())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v)
            .map_err(|_| E::custom(format!("{v} is negative, expected {}", self.0.expected())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        parse(self.0, v).ok_or_else(|| E::custom(format!("{v:?} is not {}", self.0.expected())))
    }
}

/// A duration in nanoseconds.
pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
    d.deserialize_any(QVisitor(Kind::Duration))
}

/// An optional duration in nanoseconds.
pub(crate) fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Nanos>, D::Error> {
    duration(d).map(Some)
}

/// A rate in bits per second.
pub(crate) fn rate<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QVisitor(Kind::Rate))
}

/// An optional rate in bits per second.
pub(crate) fn opt_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    rate(d).map(Some)
}

/// A size in bytes.
pub(crate) fn size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QVisitor(Kind::Size))
}

/// An optional size in bytes.
pub(crate) fn opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    size(d).map(Some)
}

/// Serialization time of `bytes` at `bps`, rounded up to whole nanoseconds.
pub fn wire_time(bytes: u64, bps: u64) -> Nanos {
    if bps == 0 {
        return Nanos::MAX / 4;
    }
    ((bytes as u128 * 8_000_000_000).div_ceil(bps as u128)).min(u64::MAX as u128 / 4) as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse(Kind::Duration, "10us"), Some(10_000));
        assert_eq!(parse(Kind::Duration, "1.5 ms"), Some(1_500_000));
        assert_eq!(parse(Kind::Duration, "200"), Some(200));
        assert_eq!(parse(Kind::Rate, "40Gbps"), Some(40_000_000_000));
        assert_eq!(parse(Kind::Rate, "2.5gbps"), Some(2_500_000_000));
        assert_eq!(parse(Kind::Size, "5.5MB"), Some(5_500_000));
        assert_eq!(parse(Kind::Size, "1KiB"), Some(1024));
        assert_eq!(parse(Kind::Size, "1_000"), Some(1000));
        assert_eq!(parse(Kind::Duration, "10 parsecs"), None);
        assert_eq!(parse(Kind::Rate, "-1Gbps"), None);
        assert_eq!(parse(Kind::Size, ""), None);
    }

    #[test]
    fn wire_time_rounds_up() {
        assert_eq!(wire_time(1000, 10_000_000_000), 800);
        assert_eq!(wire_time(1, 3_000_000_000), 3);
        assert_eq!(wire_time(1064, 40_000_000_000), 213);
    }
}
