//! Cycle accounting with the CPU's time-stamp counter: per-core cycles split into NIC stages,
//! in the style of AccelTCP Table 1 / Figure 14.
//!
//! Reads are taken once per stage per burst, never per packet, so accounting costs a few
//! cycles per burst.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

/// Reads the time-stamp counter (cycles). On non-x86 targets, nanoseconds since an arbitrary
/// origin, so that ratios stay meaningful.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86_64; it only reads a counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Measures the counter's frequency against the monotonic clock over `window`.
pub fn measure_tsc_hz(window: Duration) -> u64 {
    let t0 = Instant::now();
    let c0 = rdtsc();
    while t0.elapsed() < window {
        std::hint::spin_loop();
    }
    let c1 = rdtsc();
    let ns = t0.elapsed().as_nanos().max(1);
    ((c1.wrapping_sub(c0) as u128) * 1_000_000_000 / ns) as u64
}

/// The pipeline stages whose cycles are counted (`docs/architecture.md`, "Life of a frame
/// through an NIC lcore").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Stage {
    /// `rx_burst` calls that returned frames.
    Rx = 0,
    /// Parse, classify and the NIC's own handlers (ARP, ICMP, ...).
    Classify,
    /// Frames from the host: checksum fill, software TSO, ARP resolution.
    HostTx,
    /// Timers and stack housekeeping (ARP retries).
    Timers,
    /// `tx_burst` calls and freeing what could not be sent.
    Tx,
    /// Polls that found nothing to do.
    Idle,
}

impl Stage {
    /// All stages, in reporting order.
    pub const ALL: [Stage; 6] = [
        Stage::Rx,
        Stage::Classify,
        Stage::HostTx,
        Stage::Timers,
        Stage::Tx,
        Stage::Idle,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Rx => "rx",
            Stage::Classify => "classify",
            Stage::HostTx => "host_tx",
            Stage::Timers => "timers",
            Stage::Tx => "tx",
            Stage::Idle => "idle",
        }
    }
}

/// Cycles spent per stage by one lcore.
///
/// Invariant: each field only grows; the sum is the lcore's accounted busy-poll time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCycles {
    cycles: [u64; 6],
}

impl StageCycles {
    /// Adds `cycles` to `stage`.
    #[inline(always)]
    pub fn add(&mut self, stage: Stage, cycles: u64) {
        self.cycles[stage as usize] += cycles;
    }
    /// Cycles counted for `stage`.
    pub fn get(&self, stage: Stage) -> u64 {
        self.cycles[stage as usize]
    }
    /// Cycles of all stages but `Idle`.
    pub fn busy(&self) -> u64 {
        self.cycles.iter().sum::<u64>() - self.get(Stage::Idle)
    }
    /// Cycles of all stages.
    pub fn total(&self) -> u64 {
        self.cycles.iter().sum()
    }
    /// Adds every stage of `other` into `self`.
    pub fn merge(&mut self, other: &StageCycles) {
        for (a, b) in self.cycles.iter_mut().zip(other.cycles.iter()) {
            *a += b;
        }
    }
}

/// A stopwatch that charges the cycles since the last mark to a stage.
pub struct StageClock {
    last: u64,
}

impl StageClock {
    /// Starts at the current counter value.
    #[inline(always)]
    pub fn start() -> Self {
        StageClock { last: rdtsc() }
    }
    /// Starts at `tsc`, a counter value just read.
    #[inline(always)]
    pub fn start_at(tsc: u64) -> Self {
        StageClock { last: tsc }
    }
    /// Charges the cycles since the previous mark to `stage`; returns the current counter.
    #[inline(always)]
    pub fn mark(&mut self, acc: &mut StageCycles, stage: Stage) -> u64 {
        let now = rdtsc();
        acc.add(stage, now.wrapping_sub(self.last));
        self.last = now;
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_and_frequency_is_plausible() {
        let a = rdtsc();
        let hz = measure_tsc_hz(Duration::from_millis(20));
        assert!(rdtsc() > a);
        // Any real machine counts between 100 MHz and 10 GHz.
        assert!((100_000_000..10_000_000_000).contains(&hz), "{hz}");
    }

    #[test]
    fn stages_accumulate() {
        let mut acc = StageCycles::default();
        let mut clock = StageClock::start();
        std::hint::black_box((0..1000).sum::<u64>());
        clock.mark(&mut acc, Stage::Rx);
        clock.mark(&mut acc, Stage::Idle);
        assert!(acc.get(Stage::Rx) > 0);
        assert_eq!(acc.total(), acc.busy() + acc.get(Stage::Idle));
        let mut sum = StageCycles::default();
        sum.merge(&acc);
        sum.merge(&acc);
        assert_eq!(sum.get(Stage::Rx), 2 * acc.get(Stage::Rx));
    }
}
