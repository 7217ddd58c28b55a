//! The timer bitmap wheel (AccelTCP §4.2, Figure 6): a million ids, concurrent updates and
//! region scans from two threads, and a property test against a `BTreeMap` model (1,100 ids
//! span three cache lines of a slot bitmap, so region borders fall inside marked lines).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use dataplane::wheel::{TimerBitmapWheel, WheelConfig};
use proptest::prelude::*;

const T: u64 = 1_000;

fn cfg(ids: usize, slots: usize, regions: usize) -> WheelConfig {
    WheelConfig {
        ids,
        slots,
        tick_ns: T,
        regions,
    }
}

#[test]
fn a_million_ids_each_fire_exactly_once_at_their_tick() {
    const IDS: usize = 1 << 20;
    const SPAN: u64 = 300;
    let w = TimerBitmapWheel::new(cfg(IDS, 64, 1), 0);
    for id in 0..IDS as u32 {
        w.arm(id, 0, (u64::from(id) * 7919 % SPAN + 1) * T);
    }
    assert_eq!(w.armed(), IDS);
    let mut count = vec![0u8; IDS];
    for tick in 1..=SPAN {
        w.advance(tick * T, |id| {
            assert_eq!(u64::from(id) * 7919 % SPAN + 1, tick, "id {id}");
            count[id as usize] += 1;
        });
    }
    assert!(count.iter().all(|&c| c == 1));
    assert_eq!((w.armed(), w.next_deadline()), (0, None));
}

/// Two threads arm and disarm interleaved ids (even / odd) that share every 64-bit word;
/// no update may be lost.
#[test]
fn concurrent_arm_disarm_on_shared_words() {
    const IDS: u32 = 256;
    let w = Arc::new(TimerBitmapWheel::new(cfg(IDS as usize, 16, 1), 0));
    let threads: Vec<_> = (0..2u32)
        .map(|parity| {
            let w = w.clone();
            thread::spawn(move || {
                let mut want: BTreeMap<u32, Option<u64>> = BTreeMap::new();
                let mut x = 0x9e37_79b9_u32 ^ parity;
                for _ in 0..200_000 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let id = (x % (IDS / 2)) * 2 + parity;
                    if x & 0x300 == 0 {
                        w.disarm(id);
                        want.insert(id, None);
                    } else {
                        let ticks = u64::from(x >> 20) % 50 + 1;
                        w.arm(id, 0, ticks * T);
                        want.insert(id, Some(ticks * T));
                    }
                }
                want
            })
        })
        .collect();
    let mut want = BTreeMap::new();
    for t in threads {
        want.extend(t.join().unwrap());
    }
    let armed: Vec<u32> = want.iter().filter_map(|(&id, d)| d.map(|_| id)).collect();
    assert_eq!(w.armed(), armed.len());
    for (&id, &d) in &want {
        assert_eq!(w.deadline(id), d, "id {id}");
    }
    let mut fired = BTreeMap::new();
    for tick in 1..=60 {
        w.advance(tick * T, |id| {
            assert_eq!(want[&id], Some(tick * T), "id {id} fired at tick {tick}");
            *fired.entry(id).or_insert(0) += 1;
        });
    }
    assert_eq!(fired.keys().copied().collect::<Vec<_>>(), armed);
    assert!(fired.values().all(|&n| n == 1));
}

/// One thread arms (from "another lcore") while the other advances the wheel: every timer
/// fires exactly once, never before its deadline.
#[test]
fn concurrent_arm_while_advancing() {
    const IDS: u32 = 4096;
    const TICKS: u64 = 3_000;
    let w = Arc::new(TimerBitmapWheel::new(cfg(IDS as usize, 32, 1), 0));
    let now = Arc::new(AtomicU64::new(0));
    let deadlines: Arc<Vec<AtomicU64>> = Arc::new((0..IDS).map(|_| AtomicU64::new(0)).collect());
    let armer = {
        let (w, now, deadlines) = (w.clone(), now.clone(), deadlines.clone());
        thread::spawn(move || {
            for id in 0..IDS {
                let t = now.load(Ordering::SeqCst);
                let after = u64::from(id % 97) * T / 3;
                deadlines[id as usize].store(t + after, Ordering::SeqCst);
                w.arm(id, t, after);
                if id % 8 == 0 {
                    thread::yield_now();
                }
            }
        })
    };
    let mut fired = vec![0u32; IDS as usize];
    for tick in 0..TICKS {
        let t = tick * T / 4;
        now.store(t, Ordering::SeqCst);
        w.advance(t, |id| {
            let d = deadlines[id as usize].load(Ordering::SeqCst);
            assert!(d <= t, "id {id} with deadline {d} fired early at {t}");
            fired[id as usize] += 1;
        });
    }
    armer.join().unwrap();
    w.advance(u64::MAX / 2, |id| fired[id as usize] += 1);
    assert!(fired.iter().all(|&n| n == 1), "{:?}", &fired[..64]);
    assert_eq!(w.armed(), 0);
}

/// Two threads each scan their own region (AccelTCP §4.2) concurrently.
#[test]
fn regions_scanned_from_two_threads() {
    const IDS: usize = 1 << 16;
    const SPAN: u64 = 200;
    let w = Arc::new(TimerBitmapWheel::new(cfg(IDS, 64, 2), 0));
    for id in 0..IDS as u32 {
        w.arm(id, 0, (u64::from(id) % SPAN + 1) * T);
    }
    let threads: Vec<_> = (0..2)
        .map(|region| {
            let w = w.clone();
            thread::spawn(move || {
                let mut got = Vec::new();
                for tick in 1..=SPAN + 5 {
                    w.advance_region(region, tick * T, |id| {
                        assert_eq!(u64::from(id) % SPAN + 1, tick);
                        got.push(id);
                    });
                }
                (region, got)
            })
        })
        .collect();
    for t in threads {
        let (region, mut got) = t.join().unwrap();
        got.sort_unstable();
        let want: Vec<u32> = w.region_ids(region).collect();
        assert_eq!(got, want, "region {region}");
    }
    assert_eq!(w.armed(), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Arm { id: u32, dt: u64, after: u64 },
    Disarm { id: u32 },
    Advance { dt: u64 },
}

fn op(ids: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..ids + 2, 0..3 * T, 0..40 * T).prop_map(|(id, dt, after)| Op::Arm { id, dt, after }),
        1 => (0..ids + 2).prop_map(|id| Op::Disarm { id }),
        3 => prop_oneof![0..3 * T, 0..200 * T].prop_map(|dt| Op::Advance { dt }),
    ]
}

/// The reference: a map from id to the tick it fires at, and the next unprocessed tick.
struct Model {
    ids: u32,
    filed: BTreeMap<u32, u64>,
    cursor: u64,
}

impl Model {
    fn arm(&mut self, id: u32, now: u64, after: u64) {
        if id < self.ids {
            let tick = (now + after).div_ceil(T).max(self.cursor);
            self.filed.insert(id, tick);
        }
    }

    fn advance(&mut self, now: u64) -> Vec<u32> {
        let target = now / T;
        if target < self.cursor {
            return Vec::new();
        }
        self.cursor = target + 1;
        let due: Vec<u32> = self
            .filed
            .iter()
            .filter(|(_, &t)| t <= target)
            .map(|(&id, _)| id)
            .collect();
        for id in &due {
            self.filed.remove(id);
        }
        due
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn wheel_matches_a_btreemap_model(
        (ids, ops) in prop_oneof![Just(64u32), Just(130), Just(200), Just(1100)]
            .prop_flat_map(|ids| (Just(ids), prop::collection::vec(op(ids), 1..200))),
        slots in 1usize..10,
        regions in 1usize..4,
        start in 0..5 * T,
    ) {
        let w = TimerBitmapWheel::new(cfg(ids as usize, slots, regions), start);
        let mut m = Model { ids, filed: BTreeMap::new(), cursor: start / T };
        let mut now = start;
        for op in ops {
            match op {
                Op::Arm { id, dt, after } => {
                    now += dt;
                    w.arm(id, now, after);
                    m.arm(id, now, after);
                }
                Op::Disarm { id } => {
                    w.disarm(id);
                    m.filed.remove(&id);
                }
                Op::Advance { dt } => {
                    now += dt;
                    let mut got = Vec::new();
                    w.advance(now, |id| got.push(id));
                    got.sort_unstable();
                    prop_assert_eq!(got, m.advance(now), "advance to {}", now);
                }
            }
            prop_assert_eq!(w.armed(), m.filed.len());
            if let Some(&min) = m.filed.values().min() {
                let nd = w.next_deadline().unwrap();
                prop_assert!(nd <= min * T, "next_deadline {} after {}", nd, min * T);
            } else {
                prop_assert_eq!(w.next_deadline(), None);
            }
        }
        for id in 0..ids + 2 {
            prop_assert_eq!(w.deadline(id), m.filed.get(&id).map(|t| t * T));
        }
    }
}
