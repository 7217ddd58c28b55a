//! The timing variation real hosts have, for the testbench's senders: transmit jitter,
//! NIC clock offsets and random flow start times. All default to off, and off is exactly
//! the deterministic model (no random draw, the same event times).
//!
//! Why: with every host sending back to back at exactly the bottleneck's rate and no
//! jitter, a drop-tail queue that fills up frees each slot at a fixed phase relative to
//! every host's arrivals, so the same host's packets find it full every time and that
//! host's flows are locked out: the *traffic phase effect* of Floyd and Jacobson ("On
//! traffic phase effects in packet-switched gateways", Internetworking: Research and
//! Experience 3(3), 1992). Their remedy, and what real networks have anyway, is randomness
//! in when packets reach the gateway: a random delay of up to one bottleneck service time
//! per packet removes the effect. The knobs:
//!
//! - **Transmit jitter** (`network.tx_jitter` = J): each data packet reaches the switch's
//!   buffer a random delay after its sender's NIC finished serializing it, uniform in
//!   `[0, J]` whole nanoseconds (the variable latency of a real host's transmit path:
//!   DMA, PHY, scheduling). It delays packets without slowing the NIC, so a host still
//!   sends at its line rate; a host's packets still arrive in the order it sent them (a
//!   packet whose draw would pass its predecessor arrives with it instead).
//! - **Clock offset** (`network.clock_ppm` = P): each sender NIC's clock runs off nominal
//!   by a random offset uniform in `[−P, +P]` ppm (IEEE 802.3 allows ±100 ppm for the
//!   transmit clock), so its rate is `host_rate · (1 + offset)`. Serialization times are
//!   then exact over the run (the cumulative bits' time rounded to whole ns) instead of
//!   rounded up per packet, so offsets far below a nanosecond per packet accumulate.
//! - **Start window** (`flows.start_window` = W): each flow starts a random delay uniform
//!   in `[0, W)` after its `k · start_interval`.
//!
//! Draws come from their own SplitMix64 streams (one per host for the clock offset and
//! the jitter, one for the start times), seeded from `network.variation_seed` (default
//! the scenario's `seed`): turning variation on does not shift the link's or the NIC's
//! random drops, a host's k-th packet gets the same jitter whatever the other hosts do,
//! and one seed gives one run. `nicemu experiment`'s host-stack network (`tcbnet`) uses
//! the same [`HostNic`] and [`Variation::start_offsets`], so both implementations of a
//! comparison see the same clocks, jitter sequence per host and start times.

use super::rng::SplitMix64;
use super::units::wire_time;
use crate::tonic::Nanos;

/// Stream tags: the start times' stream and the hosts' streams never share a seed.
const TAG_START: u64 = 0x7374_6172_7421_0001;
const TAG_HOST: u64 = 0x686f_7374_6e69_6302;

/// The variation settings of a run (see the module documentation). `Variation::default()`
/// is off: no jitter, exact nominal clocks, flows at their scheduled starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Variation {
    /// Largest extra delay of a data packet between its sender's NIC and the switch, ns.
    pub tx_jitter: Nanos,
    /// Largest NIC clock offset from nominal, parts per million.
    pub clock_ppm: u32,
    /// Flows start up to this long after their scheduled start, ns (exclusive bound).
    pub start_window: Nanos,
    /// Seed of every draw above.
    pub seed: u64,
}

/// A generator for stream `index` of kind `tag`, from `seed`: SplitMix64's output of a
/// mixed key, so that neighbouring seeds and indices give unrelated streams.
fn stream(seed: u64, tag: u64, index: u64) -> SplitMix64 {
    let mut m = SplitMix64::new(seed ^ tag ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03));
    SplitMix64::new(m.next_u64())
}

/// A uniform integer in `[0, n]` (modulo bias below 2^-40 for the ranges used here).
fn upto(rng: &mut SplitMix64, n: u64) -> u64 {
    if n == u64::MAX {
        rng.next_u64()
    } else {
        rng.next_u64() % (n + 1)
    }
}

impl Variation {
    /// Whether any knob is on.
    pub fn is_on(&self) -> bool {
        self.tx_jitter > 0 || self.clock_ppm > 0 || self.start_window > 0
    }

    /// Each of `flows` flows' delay after its scheduled start, uniform in
    /// `[0, start_window)` ns; all zero (and nothing drawn) when the window is 0.
    pub fn start_offsets(&self, flows: u32) -> Vec<Nanos> {
        if self.start_window == 0 {
            return vec![0; flows as usize];
        }
        let mut rng = stream(self.seed, TAG_START, 0);
        (0..flows)
            .map(|_| upto(&mut rng, self.start_window - 1))
            .collect()
    }
}

/// One sender host's NIC under a [`Variation`]: how long it takes to serialize a packet
/// and when the packet reaches the switch.
///
/// Invariants: with the variation off, [`HostNic::serialize`] is
/// `wire_time(bytes, host_rate).max(1)` and [`HostNic::arrival`] returns its argument;
/// every arrival is within `[done, done + tx_jitter]` of its `done` and no earlier than
/// the host's previous arrival.
#[derive(Clone, Debug)]
pub struct HostNic {
    /// The rate the NIC's clock gives it, bit/s.
    rate_bps: u64,
    /// Its offset from nominal, parts per billion.
    offset_ppb: i64,
    /// Exact cumulative timing (a clock offset is set).
    exact: bool,
    /// Bits serialized so far (exact timing).
    bits: u128,
    jitter: Nanos,
    rng: SplitMix64,
    last_arrival: Nanos,
}

impl HostNic {
    /// Host `host`'s NIC at nominal rate `host_rate` bit/s: draws its clock offset (when
    /// `clock_ppm > 0`) from the host's own stream.
    pub fn new(v: &Variation, host: u32, host_rate: u64) -> Self {
        let mut rng = stream(v.seed, TAG_HOST, host as u64);
        let (offset_ppb, rate_bps) = if v.clock_ppm > 0 {
            let span = v.clock_ppm as u64 * 1000;
            let off = upto(&mut rng, 2 * span) as i64 - span as i64;
            let r = host_rate as i128 + host_rate as i128 * off as i128 / 1_000_000_000;
            (off, r.max(1) as u64)
        } else {
            (0, host_rate)
        };
        HostNic {
            rate_bps,
            offset_ppb,
            exact: v.clock_ppm > 0,
            bits: 0,
            jitter: v.tx_jitter,
            rng,
            last_arrival: 0,
        }
    }

    /// The NIC's actual rate, bit/s.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Its clock's offset from nominal, parts per billion.
    pub fn offset_ppb(&self) -> i64 {
        self.offset_ppb
    }

    /// Nanoseconds to serialize a packet of `bytes` (at least 1). With a clock offset,
    /// the difference of the cumulative serialization times (each rounded up to whole ns)
    /// before and after it, so the run's total is exact to 1 ns.
    pub fn serialize(&mut self, bytes: u64) -> Nanos {
        if !self.exact {
            return wire_time(bytes, self.rate_bps).max(1);
        }
        let t = |bits: u128| (bits * 1_000_000_000).div_ceil(self.rate_bps as u128);
        let before = t(self.bits);
        self.bits += bytes as u128 * 8;
        ((t(self.bits) - before) as Nanos).max(1)
    }

    /// When a packet the NIC finished at `done` reaches the switch: `done` plus a uniform
    /// draw in `[0, tx_jitter]`, but no earlier than the previous packet's arrival (order
    /// kept). Draws nothing when `tx_jitter` is 0.
    pub fn arrival(&mut self, done: Nanos) -> Nanos {
        if self.jitter == 0 {
            return done;
        }
        let t = (done + upto(&mut self.rng, self.jitter)).max(self.last_arrival);
        self.last_arrival = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G10: u64 = 10_000_000_000;

    #[test]
    fn off_is_the_deterministic_model() {
        let v = Variation::default();
        assert!(!v.is_on());
        let mut n = HostNic::new(&v, 3, G10);
        for (b, done) in [(1064, 5), (64, 900), (1, 901)] {
            assert_eq!(n.serialize(b), wire_time(b, G10).max(1));
            assert_eq!(n.arrival(done), done);
        }
        assert_eq!(v.start_offsets(4), vec![0; 4]);
    }

    #[test]
    fn jitter_is_bounded_ordered_and_spread() {
        let v = Variation {
            tx_jitter: 852,
            seed: 9,
            ..Variation::default()
        };
        let mut n = HostNic::new(&v, 0, G10);
        let (mut prev, mut sum, mut lo, mut hi) = (0, 0u64, u64::MAX, 0);
        for k in 0..10_000u64 {
            // Back to back, and sometimes closer than the jitter (64-byte packets).
            let done = k * 400;
            let a = n.arrival(done);
            assert!((done..=done + 852).contains(&a), "{k}: {a}");
            assert!(a >= prev, "order kept");
            prev = a;
            let d = a - done;
            sum += d;
            lo = lo.min(d);
            hi = hi.max(d);
        }
        // Spread over the whole range, mean well above 0 (the order clamp raises it).
        assert!(lo <= 5 && hi >= 840, "{lo}..{hi}");
        assert!(sum / 10_000 > 300, "mean {}", sum / 10_000);
    }

    #[test]
    fn deterministic_per_seed_and_independent_per_host() {
        let v = Variation {
            tx_jitter: 1000,
            clock_ppm: 100,
            start_window: 1_000_000,
            seed: 5,
        };
        let draws = |v: &Variation, host| {
            let mut n = HostNic::new(v, host, G10);
            let d: Vec<Nanos> = (0..50u64).map(|k| n.arrival(k * 2000) - k * 2000).collect();
            (n.offset_ppb(), d)
        };
        assert_eq!(draws(&v, 0), draws(&v, 0));
        assert_ne!(draws(&v, 0), draws(&v, 1));
        let w = Variation { seed: 6, ..v };
        assert_ne!(draws(&v, 0), draws(&w, 0));
        assert_eq!(v.start_offsets(100), v.start_offsets(100));
        assert_ne!(v.start_offsets(100), w.start_offsets(100));
        // A flow's offset does not depend on how many flows there are.
        assert_eq!(v.start_offsets(10)[..], v.start_offsets(100)[..10]);
        let s = v.start_offsets(1000);
        assert!(s.iter().all(|&t| t < 1_000_000));
        assert!(*s.iter().max().unwrap() > 900_000 && *s.iter().min().unwrap() < 100_000);
    }

    #[test]
    fn clock_offsets_are_bounded_and_exact_over_a_run() {
        let v = Variation {
            clock_ppm: 100,
            seed: 1,
            ..Variation::default()
        };
        let mut offs = Vec::new();
        for h in 0..200 {
            let mut n = HostNic::new(&v, h, G10);
            let off = n.offset_ppb();
            assert!((-100_000..=100_000).contains(&off), "{off}");
            assert_eq!(n.rate_bps() as i64, G10 as i64 + off * 10);
            offs.push(off);
            // 100,000 packets of 1064 bytes: the total is the exact time to 1 ns.
            let total: u64 = (0..100_000).map(|_| n.serialize(1064)).sum();
            let exact = 100_000u128 * 1064 * 8 * 1_000_000_000 / n.rate_bps() as u128;
            assert!(total as u128 - exact <= 1, "{total} vs {exact}");
        }
        assert!(offs.iter().any(|&o| o > 50_000) && offs.iter().any(|&o| o < -50_000));
    }
}
