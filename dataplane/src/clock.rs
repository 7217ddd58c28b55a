//! Time sources. Engines are sans-I/O and take `now` explicitly; the runtime reads it from a
//! [`Clock`], which is either the monotonic clock or a virtual clock that tests advance by hand,
//! so that in-memory topologies run deterministically.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A nanosecond clock shared by the parts of one topology.
///
/// Invariant: `now_ns()` never goes backwards.
#[derive(Clone, Debug)]
pub enum Clock {
    /// Monotonic time since the clock was made.
    Real(Instant),
    /// Virtual time, advanced only by [`Clock::advance`].
    Virtual(Arc<AtomicU64>),
}

impl Clock {
    /// A monotonic clock starting at 0 now.
    pub fn real() -> Self {
        Clock::Real(Instant::now())
    }

    /// A virtual clock starting at 0.
    pub fn virtual_clock() -> Self {
        Clock::Virtual(Arc::new(AtomicU64::new(0)))
    }

    /// Current time in nanoseconds.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::Real(origin) => origin.elapsed().as_nanos() as u64,
            Clock::Virtual(t) => t.load(Ordering::Acquire),
        }
    }

    /// Advances a virtual clock by `ns`; does nothing to a real one.
    pub fn advance(&self, ns: u64) {
        if let Clock::Virtual(t) = self {
            t.fetch_add(ns, Ordering::AcqRel);
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::real()
    }
}

/// SplitMix64: a small, fast, seedable generator for impairments and tests. Not for secrets.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with the given seed; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A uniform value in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// True with probability `p` (never for p <= 0, always for p >= 1).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_moves_only_when_told() {
        let c = Clock::virtual_clock();
        let d = c.clone();
        assert_eq!(c.now_ns(), 0);
        d.advance(5);
        assert_eq!(c.now_ns(), 5);
        let r = Clock::real();
        let a = r.now_ns();
        assert!(r.now_ns() >= a);
    }

    #[test]
    fn rng_is_seeded_and_roughly_uniform() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let hits = (0..100_000).filter(|_| a.chance(0.1)).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        assert!(!a.chance(0.0));
        assert!(a.chance(1.0));
    }
}
