//! Multi-precision rates and the rate-limiter arithmetic of the credit engine (Tonic §3.3.1,
//! §3.3.2, §4, App. B).
//!
//! A flow with rate R and maximum burst D has credit `min(R·(t − t0) + c0, D)` at time t,
//! where c0 is its credit at t0, the time of the last update (§3.3.1). When it has a segment
//! but lacks C bytes of credit, it will have enough after `T = ⌈C/R⌉` time units, so a
//! per-flow timer is set for T (§3.3.2).
//!
//! R must be an integer (no floating-point division in the fast path), which trades range for
//! precision (App. B): bytes per nanosecond cannot express rates under 8 Gbit/s, bytes per
//! microsecond makes T coarse for fast flows. As in App. B, a flow keeps several
//! representations R_0 … R_{K−1}, R_k in bytes per `2^(3k)` ns, and the most precise usable
//! one is picked whenever the rate changes ([`MultiRate::select`]): the finest time unit
//! whose integer R_k still has at least [`RATE_MIN_MANTISSA`] (a truncation error under
//! 1/128). The paper gives neither K nor the units; these are ours.

use super::Nanos;

/// Number of representations K.
pub const RATE_REPS: usize = 10;

/// Representation k counts bytes per `2^(RATE_UNIT_SHIFT·k)` ns.
pub const RATE_UNIT_SHIFT: u32 = 3;

/// Smallest mantissa a representation needs to be picked (rate error < 1/128).
pub const RATE_MIN_MANTISSA: u32 = 128;

/// A rate in all K representations (App. B's R_1 … R_k).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MultiRate {
    /// `reps[k]` = ⌊rate in bytes per `2^(3k)` ns⌋, saturated at `u32::MAX`.
    pub reps: [u32; RATE_REPS],
}

impl MultiRate {
    /// The representations of `bps` bits per second.
    pub fn from_bps(bps: u64) -> Self {
        let mut reps = [0u32; RATE_REPS];
        for (k, r) in reps.iter_mut().enumerate() {
            // bytes per 2^(3k) ns = bps / 8 / 1e9 · 2^(3k)
            let v = ((bps as u128) << (RATE_UNIT_SHIFT as usize * k)) / 8_000_000_000;
            *r = v.min(u32::MAX as u128) as u32;
        }
        MultiRate { reps }
    }

    /// The most precise representation for computing T: the smallest k (finest unit) with
    /// `R_k >= RATE_MIN_MANTISSA`, else the coarsest one.
    pub fn select(&self) -> RateRep {
        let k = self
            .reps
            .iter()
            .position(|&r| r >= RATE_MIN_MANTISSA)
            .unwrap_or(RATE_REPS - 1);
        RateRep {
            exp: k as u8,
            mant: self.reps[k],
        }
    }
}

/// One chosen representation: `mant` bytes per `2^(3·exp)` ns. Zero mantissa: no credit ever
/// accrues (rate 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateRep {
    /// k: the unit is `2^(RATE_UNIT_SHIFT·k)` ns.
    pub exp: u8,
    /// R_k: bytes per unit.
    pub mant: u32,
}

impl RateRep {
    /// The representation `MultiRate::from_bps(bps).select()`.
    pub fn from_bps(bps: u64) -> Self {
        MultiRate::from_bps(bps).select()
    }

    /// Bit shift of the time unit.
    #[inline]
    pub fn shift(&self) -> u32 {
        RATE_UNIT_SHIFT * self.exp as u32
    }

    /// The time unit in ns.
    #[inline]
    pub fn unit_ns(&self) -> Nanos {
        1 << self.shift()
    }

    /// Whole bytes of credit earned in `dt` ns: ⌊dt · R_k / unit⌋ (the (T1 − T0)·R term).
    #[inline]
    pub fn bytes_in(&self, dt: Nanos) -> u64 {
        ((dt as u128 * self.mant as u128) >> self.shift()).min(u64::MAX as u128) as u64
    }

    /// T = ⌈C/R_k⌉ units until `deficit` bytes are earned, in ns; `None` at rate 0.
    #[inline]
    pub fn wait_ns(&self, deficit: u64) -> Option<Nanos> {
        if self.mant == 0 {
            return None;
        }
        let units = deficit.div_ceil(self.mant as u64);
        Some(units.saturating_mul(self.unit_ns()))
    }

    /// The represented rate in bits per second (after truncation).
    pub fn bps(&self) -> u64 {
        ((self.mant as u128 * 8_000_000_000) >> self.shift()) as u64
    }
}

/// Rate-limiter credit of one flow: `min(R·(t − t0) + c0, D)` (§3.3.1).
///
/// Invariant: `credit <= burst` after every [`settle`](Self::settle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateCredit {
    /// c0: credit in bytes at `t0`.
    pub credit: i64,
    /// t0: time of the last update.
    pub t0: Nanos,
}

impl RateCredit {
    /// The credit at `now` without changing state.
    #[inline]
    pub fn at(&self, rate: RateRep, burst: i64, now: Nanos) -> i64 {
        let gained = rate.bytes_in(now.saturating_sub(self.t0));
        (self
            .credit
            .saturating_add(gained.min(i64::MAX as u64) as i64))
        .min(burst)
    }

    /// Brings the credit up to `now` (c0 ← credit(now), t0 ← now).
    #[inline]
    pub fn settle(&mut self, rate: RateRep, burst: i64, now: Nanos) {
        if now > self.t0 {
            self.credit = self.at(rate, burst, now);
            self.t0 = now;
        }
    }

    /// Spends `bytes` at `now` after settling: the App. B update (T1 − T0)·R − S.
    #[inline]
    pub fn spend(&mut self, rate: RateRep, burst: i64, now: Nanos, bytes: u32) {
        self.settle(rate, burst, now);
        self.credit -= bytes as i64;
    }

    /// How long from `now` until the credit reaches `need` bytes: 0 if it already has;
    /// `None` if it never will (rate 0, or `need` above the burst D).
    #[inline]
    pub fn wait_for(&self, rate: RateRep, burst: i64, now: Nanos, need: u32) -> Option<Nanos> {
        let c = self.at(rate, burst, now);
        if c >= need as i64 {
            return Some(0);
        }
        if need as i64 > burst {
            return None;
        }
        let deficit = (need as i64 - c) as u64;
        // Credit accrues from t0, so part of the current unit may already count; waiting a
        // whole T from now is the paper's conservative choice (the flow "definitely has
        // enough credit" on expiry).
        rate.wait_ns(deficit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn representations_cover_1mbps_to_400gbps() {
        // 20 Gbit/s = 2.5 B/ns: R_0 = 2 is useless, R_2 = 160 B per 64 ns is exact.
        let m = MultiRate::from_bps(20_000_000_000);
        assert_eq!(&m.reps[..4], &[2, 20, 160, 1280]);
        assert_eq!(m.select(), RateRep { exp: 2, mant: 160 });
        // 1 Mbit/s = 125 kB/s: only a ~2 ms unit is precise (R_7 = 262).
        let r = RateRep::from_bps(1_000_000);
        assert_eq!((r.exp, r.mant), (7, 262));
        assert!(r.bps().abs_diff(1_000_000) * 100 < 1_000_000);
        for bps in [
            1_000_000u64,
            10_000_000,
            1_000_000_000,
            25_000_000_000,
            400_000_000_000,
        ] {
            let r = RateRep::from_bps(bps);
            assert!(r.mant >= RATE_MIN_MANTISSA, "{bps}");
            assert!(r.bps().abs_diff(bps) * 128 <= bps, "{bps}: {}", r.bps());
        }
        assert_eq!(RateRep::from_bps(0).wait_ns(1), None);
    }

    /// App. B's example, in our units: a 20 Gbit/s flow short of 1500 B waits
    /// ⌈1500 / 160⌉ = 10 units of 64 ns = 640 ns (exact: 600 ns), not a thousand cycles.
    #[test]
    fn timer_is_ceil_c_over_r() {
        let r = RateRep::from_bps(20_000_000_000);
        assert_eq!(r.wait_ns(1500), Some(640));
        assert_eq!(r.wait_ns(160), Some(64));
        assert_eq!(r.wait_ns(161), Some(128));
        assert_eq!(r.bytes_in(640), 1600);
    }

    #[test]
    fn credit_is_min_of_accrual_and_burst() {
        let r = RateRep::from_bps(8_000_000_000); // 1 B/ns = R_3: 512 B per 512 ns
        assert_eq!((r.exp, r.mant), (3, 512));
        assert_eq!(r.bytes_in(1000), 1000);
        let mut c = RateCredit { credit: 0, t0: 0 };
        assert_eq!(c.at(r, 3000, 500), 500);
        assert_eq!(c.at(r, 3000, 1_000_000), 3000, "capped at D");
        c.spend(r, 3000, 2000, 1500);
        assert_eq!((c.credit, c.t0), (500, 2000));
        // Short 1000 B: T = ⌈1000 / 512⌉ units of 512 ns.
        assert_eq!(c.wait_for(r, 3000, 2000, 1500), Some(1024));
        assert_eq!(c.wait_for(r, 3000, 3000, 1500), Some(0));
        assert_eq!(
            c.wait_for(r, 1000, 2000, 1500),
            None,
            "a segment above D never fits"
        );
    }
}
