//! TCP sequence numbers: 32-bit values compared modulo 2^32 (RFC 9293 §3.4).
//!
//! Invariant: comparisons are only meaningful between numbers less than 2^31 apart, which
//! TCP guarantees for any two numbers inside one window.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A TCP sequence (or acknowledgement) number with wrap-around arithmetic.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Seq(pub u32);

impl Seq {
    /// `self < other` modulo 2^32.
    #[inline]
    pub fn lt(self, other: Seq) -> bool {
        (self.0.wrapping_sub(other.0) as i32) < 0
    }
    /// `self <= other` modulo 2^32.
    #[inline]
    pub fn le(self, other: Seq) -> bool {
        (self.0.wrapping_sub(other.0) as i32) <= 0
    }
    /// `self > other` modulo 2^32.
    #[inline]
    pub fn gt(self, other: Seq) -> bool {
        other.lt(self)
    }
    /// `self >= other` modulo 2^32.
    #[inline]
    pub fn ge(self, other: Seq) -> bool {
        other.le(self)
    }
    /// The later of two numbers.
    #[inline]
    pub fn max(self, other: Seq) -> Seq {
        if self.lt(other) {
            other
        } else {
            self
        }
    }
    /// The earlier of two numbers.
    #[inline]
    pub fn min(self, other: Seq) -> Seq {
        if self.lt(other) {
            self
        } else {
            other
        }
    }
    /// True when `lo <= self < hi` modulo 2^32.
    #[inline]
    pub fn in_range(self, lo: Seq, hi: Seq) -> bool {
        lo.le(self) && self.lt(hi)
    }
}

impl Add<u32> for Seq {
    type Output = Seq;
    #[inline]
    fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }
}

impl AddAssign<u32> for Seq {
    #[inline]
    fn add_assign(&mut self, n: u32) {
        self.0 = self.0.wrapping_add(n);
    }
}

impl Sub<Seq> for Seq {
    /// Signed distance `self - other`.
    type Output = i32;
    #[inline]
    fn sub(self, other: Seq) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
}

impl fmt::Debug for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq({})", self.0)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wraps() {
        let a = Seq(u32::MAX - 5);
        let b = a + 10;
        assert_eq!(b, Seq(4));
        assert!(a.lt(b));
        assert!(b.gt(a));
        assert_eq!(b - a, 10);
        assert_eq!(a - b, -10);
        assert!(Seq(7).in_range(Seq(u32::MAX), Seq(8)));
        assert!(!Seq(8).in_range(Seq(u32::MAX), Seq(8)));
    }

    proptest! {
        #[test]
        fn order_matches_distance(x: u32, d in 1u32..(1 << 31)) {
            let a = Seq(x);
            let b = a + d;
            prop_assert!(a.lt(b) && a.le(b) && b.gt(a) && b.ge(a));
            prop_assert!(!b.lt(a));
            prop_assert_eq!(b - a, d as i32);
            prop_assert_eq!(a.max(b), b);
            prop_assert_eq!(a.min(b), a);
        }
    }
}
