//! Retransmission timeout per RFC 6298: SRTT/RTTVAR from samples (Karn's rule is the
//! caller's: never sample a retransmitted segment unless timestamps disambiguate it), RTO =
//! SRTT + max(G, 4·RTTVAR) clamped to [min, max], exponential backoff on expiry.

/// Clock granularity G of RFC 6298 §2 (1 ms).
pub const CLOCK_GRANULARITY_NS: u64 = 1_000_000;

/// RTT estimator and RTO.
///
/// Invariant: `min_ns <= rto() <= max_ns` (when the bounds are inverted, `max_ns` wins). All
/// arithmetic is in integer nanoseconds; the smoothing divisions round down.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// SRTT, once a sample was taken.
    srtt: Option<u64>,
    /// RTTVAR (meaningful once `srtt` is set).
    rttvar: u64,
    /// RTO from the estimate (or the initial value), clamped, without backoff.
    base_rto: u64,
    /// RTO including backoff, clamped.
    rto: u64,
    /// Lower RTO bound.
    min_ns: u64,
    /// Upper RTO bound.
    max_ns: u64,
    /// Number of backoffs since the last sample.
    backoffs: u32,
}

impl RttEstimator {
    /// Before any sample the RTO is `initial_ns` (RFC 6298 §2.1: 1 s); it is always clamped to
    /// `[min_ns, max_ns]`. Clock granularity G is taken as 1 ms.
    pub fn new(initial_ns: u64, min_ns: u64, max_ns: u64) -> Self {
        let base_rto = clamp(initial_ns, min_ns, max_ns);
        RttEstimator {
            srtt: None,
            rttvar: 0,
            base_rto,
            rto: base_rto,
            min_ns,
            max_ns,
            backoffs: 0,
        }
    }

    /// Feeds one RTT measurement (RFC 6298 §2.2–2.3) and clears any backoff.
    ///
    /// First sample R: SRTT = R, RTTVAR = R/2. Later ones: RTTVAR = 3/4·RTTVAR + 1/4·|SRTT − R|
    /// (with the old SRTT), then SRTT = 7/8·SRTT + 1/8·R. Then RTO = SRTT + max(G, 4·RTTVAR),
    /// clamped (§2.4, §2.5).
    pub fn sample(&mut self, rtt_ns: u64) {
        let r = rtt_ns;
        let (srtt, rttvar) = match self.srtt {
            None => (r, r / 2),
            Some(srtt) => {
                let diff = srtt.abs_diff(r);
                // u128 intermediates: exact and overflow-free for any u64 input.
                let rttvar = ((3 * self.rttvar as u128 + diff as u128) / 4) as u64;
                let srtt = ((7 * srtt as u128 + r as u128) / 8) as u64;
                (srtt, rttvar)
            }
        };
        self.srtt = Some(srtt);
        self.rttvar = rttvar;
        let rto = srtt.saturating_add(CLOCK_GRANULARITY_NS.max(rttvar.saturating_mul(4)));
        self.base_rto = clamp(rto, self.min_ns, self.max_ns);
        self.rto = self.base_rto;
        self.backoffs = 0;
    }

    /// The current RTO including backoff.
    #[inline]
    pub fn rto(&self) -> u64 {
        self.rto
    }

    /// Doubles the RTO after an expiry (RFC 6298 §5.5), up to the maximum.
    ///
    /// The backed-off value stays until the next [`sample`](Self::sample) (§5.7 leaves it to
    /// the caller to discard the estimate when the SYN timed out).
    pub fn backoff(&mut self) {
        self.rto = clamp(self.rto.saturating_mul(2), self.min_ns, self.max_ns);
        self.backoffs = self.backoffs.saturating_add(1);
    }

    /// Smoothed RTT, if sampled.
    #[inline]
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// RTT variation, if sampled (RFC 6298 RTTVAR).
    #[inline]
    pub fn rttvar(&self) -> Option<u64> {
        self.srtt.map(|_| self.rttvar)
    }

    /// The RTO without backoff: from the estimate, or the initial value before any sample.
    #[inline]
    pub fn base_rto(&self) -> u64 {
        self.base_rto
    }

    /// How many times [`backoff`](Self::backoff) was called since the last sample (for
    /// retry limits such as `tcp_retries2`).
    #[inline]
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }
}

/// `v` limited to `[lo, hi]`; `hi` wins if `lo > hi` (never panics, unlike `u64::clamp`).
#[inline]
fn clamp(v: u64, lo: u64, hi: u64) -> u64 {
    v.max(lo).min(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    fn rfc() -> RttEstimator {
        RttEstimator::new(S, S, 60 * S)
    }

    #[test]
    fn initial_rto_before_samples() {
        let e = rfc();
        assert_eq!(e.rto(), S);
        assert_eq!(e.srtt(), None);
        assert_eq!(e.rttvar(), None);
        // Initial value clamped.
        assert_eq!(RttEstimator::new(10 * MS, 200 * MS, 60 * S).rto(), 200 * MS);
        assert_eq!(RttEstimator::new(90 * S, 200 * MS, 60 * S).rto(), 60 * S);
        // Inverted bounds do not panic: the maximum wins.
        assert_eq!(RttEstimator::new(S, 2 * S, S).rto(), S);
    }

    #[test]
    fn first_sample() {
        // Linux-like bounds so the formula is visible: R = 100 ms -> SRTT 100, RTTVAR 50,
        // RTO = 100 + max(1, 200) = 300 ms.
        let mut e = RttEstimator::new(S, 10 * MS, 60 * S);
        e.sample(100 * MS);
        assert_eq!(e.srtt(), Some(100 * MS));
        assert_eq!(e.rttvar(), Some(50 * MS));
        assert_eq!(e.rto(), 300 * MS);
        // RFC bounds: the same sample gives RTO rounded up to 1 s (§2.4).
        let mut e = rfc();
        e.sample(100 * MS);
        assert_eq!(e.rto(), S);
    }

    #[test]
    fn second_and_third_samples() {
        let mut e = RttEstimator::new(S, MS, 60 * S);
        e.sample(100 * MS); // SRTT 100, RTTVAR 50
        e.sample(200 * MS);
        // RTTVAR = 3/4·50 + 1/4·|100 − 200| = 37.5 + 25 = 62.5 ms
        // SRTT = 7/8·100 + 1/8·200 = 87.5 + 25 = 112.5 ms
        assert_eq!(e.rttvar(), Some(62_500_000));
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rto(), 112_500_000 + 250 * MS);
        e.sample(112_500_000);
        // Sample equal to SRTT: RTTVAR shrinks by 1/4, SRTT unchanged.
        assert_eq!(e.rttvar(), Some(46_875_000));
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rto(), 112_500_000 + 187_500_000);
    }

    #[test]
    fn granularity_floor() {
        // Constant tiny RTTs drive RTTVAR towards 0; RTO keeps G = 1 ms above SRTT.
        let mut e = RttEstimator::new(S, 0, 60 * S);
        for _ in 0..200 {
            e.sample(20_000); // 20 µs
        }
        assert_eq!(e.srtt(), Some(20_000));
        assert!(e.rttvar().unwrap() < 1_000);
        assert_eq!(e.rto(), 20_000 + MS);
    }

    #[test]
    fn backoff_doubles_to_max_and_sample_clears_it() {
        let mut e = RttEstimator::new(S, 200 * MS, 10 * S);
        assert_eq!(e.rto(), S);
        e.backoff();
        assert_eq!(e.rto(), 2 * S);
        e.backoff();
        e.backoff();
        assert_eq!(e.rto(), 8 * S);
        e.backoff();
        assert_eq!(e.rto(), 10 * S);
        e.backoff();
        assert_eq!(e.rto(), 10 * S);
        assert_eq!(e.backoffs(), 5);
        assert_eq!(e.base_rto(), S);
        e.sample(100 * MS);
        assert_eq!(e.backoffs(), 0);
        assert_eq!(e.rto(), 300 * MS);
        // Backoff is from the current estimate.
        e.backoff();
        assert_eq!(e.rto(), 600 * MS);
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let mut e = RttEstimator::new(u64::MAX, 0, u64::MAX);
        assert_eq!(e.rto(), u64::MAX);
        e.backoff();
        assert_eq!(e.rto(), u64::MAX);
        e.sample(u64::MAX);
        e.sample(0);
        e.sample(u64::MAX);
        assert_eq!(e.rto(), u64::MAX);
    }

    proptest! {
        #[test]
        fn rto_always_within_bounds(
            min in 0u64..2 * S,
            span in 0u64..120 * S,
            init in 0u64..10 * S,
            ops in proptest::collection::vec(proptest::option::of(0u64..5 * S), 0..40),
        ) {
            let max = min + span;
            let mut e = RttEstimator::new(init, min, max);
            for op in ops {
                match op {
                    Some(r) => {
                        e.sample(r);
                        let srtt = e.srtt().unwrap();
                        let var = e.rttvar().unwrap();
                        let want = (srtt + MS.max(4 * var)).clamp(min, max);
                        prop_assert_eq!(e.rto(), want);
                    }
                    None => {
                        let before = e.rto();
                        e.backoff();
                        prop_assert_eq!(e.rto(), (2 * before).min(max));
                    }
                }
                prop_assert!(e.rto() >= min && e.rto() <= max);
            }
        }

        #[test]
        fn constant_rtt_converges(first in 0u64..10 * S, r in 0u64..10 * S) {
            // SRTT converges geometrically (7/8 per sample); integer rounding down leaves it
            // at most 7 ns below R.
            let mut e = RttEstimator::new(S, 0, u64::MAX);
            e.sample(first);
            for _ in 0..250 {
                e.sample(r);
            }
            let srtt = e.srtt().unwrap();
            prop_assert!(srtt <= r.max(first) && srtt.abs_diff(r) <= 7, "srtt {} r {}", srtt, r);
        }
    }
}
