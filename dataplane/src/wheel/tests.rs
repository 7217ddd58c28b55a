//! Unit tests of the timer bitmap wheel.

use super::*;

const T: u64 = 100;

fn wheel(ids: usize, slots: usize) -> TimerBitmapWheel {
    TimerBitmapWheel::new(
        WheelConfig {
            ids,
            slots,
            tick_ns: T,
            regions: 1,
        },
        0,
    )
}

fn fired(w: &TimerBitmapWheel, now: u64) -> Vec<u32> {
    let mut v = Vec::new();
    w.advance(now, |id| v.push(id));
    v.sort_unstable();
    v
}

#[test]
fn send_sync() {
    fn check<X: Send + Sync>() {}
    check::<TimerBitmapWheel>();
}

#[test]
fn defaults_follow_figure_6() {
    let c = WheelConfig::default();
    assert_eq!(
        (c.ids, c.slots, c.tick_ns, c.regions),
        (65_536, 1_024, 100_000, 1)
    );
    let w = TimerBitmapWheel::new(c.clone(), 0);
    assert_eq!(w.config(), &c);
    assert_eq!(w.next_deadline(), None);
}

#[test]
fn zero_configs_are_typed_errors() {
    let ok = WheelConfig::default();
    for (cfg, what) in [
        (
            WheelConfig {
                ids: 0,
                ..ok.clone()
            },
            "ids",
        ),
        (
            WheelConfig {
                slots: 0,
                ..ok.clone()
            },
            "slots",
        ),
        (
            WheelConfig {
                tick_ns: 0,
                ..ok.clone()
            },
            "tick_ns",
        ),
        (
            WheelConfig {
                regions: 0,
                ..ok.clone()
            },
            "regions",
        ),
    ] {
        assert_eq!(
            TimerBitmapWheel::try_new(cfg, 0).unwrap_err(),
            WheelConfigError::Zero(what)
        );
    }
    let many = WheelConfig {
        ids: 4,
        regions: 5,
        ..ok
    };
    assert!(matches!(
        TimerBitmapWheel::try_new(many, 0),
        Err(WheelConfigError::TooManyRegions { .. })
    ));
}

#[test]
#[should_panic(expected = "must not be zero")]
fn new_panics_on_zero_config() {
    TimerBitmapWheel::new(
        WheelConfig {
            slots: 0,
            ..Default::default()
        },
        0,
    );
}

#[test]
fn insert_remove_and_expire_at_the_deadline_tick() {
    let w = wheel(256, 16);
    w.arm(7, 0, 5 * T);
    assert!(w.is_armed(7) && w.armed() == 1);
    assert_eq!(w.deadline(7), Some(5 * T));
    assert_eq!(w.next_deadline(), Some(5 * T));
    assert!(fired(&w, 5 * T - 1).is_empty());
    assert_eq!(fired(&w, 5 * T), vec![7]);
    assert!(!w.is_armed(7) && w.armed() == 0);
    assert!(fired(&w, 5 * T).is_empty());
    // A deadline between ticks rounds up: never early, late by less than a tick.
    w.arm(8, 5 * T, T + 1);
    assert_eq!(w.deadline(8), Some(7 * T));
    assert!(fired(&w, 7 * T - 1).is_empty());
    assert_eq!(fired(&w, 7 * T), vec![8]);
    // Disarm.
    w.arm(9, 7 * T, 3 * T);
    w.disarm(9);
    w.disarm(9);
    assert!(!w.is_armed(9) && w.armed() == 0);
    assert!(fired(&w, 20 * T).is_empty());
}

#[test]
fn rearm_earlier_and_later() {
    let w = wheel(128, 16);
    w.arm(3, 0, 8 * T);
    w.arm(3, 0, 2 * T); // earlier
    assert_eq!(w.armed(), 1);
    assert!(fired(&w, T).is_empty());
    assert_eq!(fired(&w, 2 * T), vec![3]);
    assert!(fired(&w, 8 * T).is_empty(), "the old bit is stale");
    w.arm(4, 8 * T, 2 * T);
    w.arm(4, 8 * T, 6 * T); // later
    assert!(
        fired(&w, 13 * T).is_empty(),
        "the old bit must not fire early"
    );
    assert_eq!(fired(&w, 14 * T), vec![4]);
    // Re-armed into the same slot one revolution later.
    w.arm(5, 14 * T, T);
    w.arm(5, 14 * T, 17 * T);
    assert!(fired(&w, 30 * T).is_empty());
    assert_eq!(fired(&w, 31 * T), vec![5]);
}

#[test]
fn zero_timeout_after_the_tick_was_processed_fires_next_tick() {
    let w = wheel(64, 8);
    w.arm(1, 3 * T, 0);
    assert_eq!(fired(&w, 3 * T), vec![1]);
    w.arm(1, 3 * T, 0);
    assert!(fired(&w, 3 * T).is_empty());
    assert_eq!(fired(&w, 4 * T), vec![1]);
}

#[test]
fn rotation_wraps_the_slot_pointer() {
    let w = wheel(64, 4);
    for step in 0..40u64 {
        let now = step * T;
        w.arm((step % 64) as u32, now, 3 * T);
        let f = fired(&w, now);
        if step >= 3 {
            assert_eq!(f, vec![((step - 3) % 64) as u32], "step {step}");
        } else {
            assert!(f.is_empty());
        }
    }
}

#[test]
fn long_timeouts_use_rounds() {
    let w = wheel(64, 8);
    w.arm(2, 0, 100 * T); // 12.5 revolutions
    w.arm(3, 0, 8 * T); // exactly one revolution
    for t in 1..100 {
        let f = fired(&w, t * T);
        assert_eq!(f.is_empty(), t != 8, "tick {t}");
    }
    assert!(w.is_armed(2));
    assert_eq!(fired(&w, 100 * T), vec![2]);
}

#[test]
fn big_jumps_fire_each_due_id_once_and_keep_long_timers() {
    let w = wheel(256, 16);
    for id in 0..200u32 {
        w.arm(id, 0, u64::from(id) * 7 * T);
    }
    let f = fired(&w, 500 * T);
    let due: Vec<u32> = (0..200).filter(|&i| i * 7 <= 500).collect();
    assert_eq!(f, due);
    assert_eq!(w.armed(), 200 - due.len());
    assert!(fired(&w, 500 * T).is_empty());
    let f = fired(&w, 10_000 * T);
    assert_eq!(f, (72..200).collect::<Vec<_>>());
    assert_eq!(w.armed(), 0);
}

#[test]
fn ids_out_of_range_are_counted() {
    let w = wheel(100, 8);
    w.arm(100, 0, T);
    w.arm(u32::MAX, 0, T);
    w.disarm(1000);
    assert!(!w.is_armed(100) && w.deadline(100).is_none());
    assert_eq!((w.armed(), w.out_of_range()), (0, 3));
    // The last id of a non-multiple-of-64 space works.
    w.arm(99, 0, T);
    assert_eq!(fired(&w, T), vec![99]);
}

#[test]
fn next_deadline_is_never_late() {
    let w = wheel(64, 8);
    w.arm(1, 0, 50 * T);
    assert_eq!(w.next_deadline(), Some(50 * T));
    w.arm(2, 0, 20 * T);
    assert_eq!(w.next_deadline(), Some(20 * T));
    assert_eq!(fired(&w, 20 * T), vec![2]);
    let nd = w.next_deadline().unwrap();
    assert!(nd > 20 * T && nd <= 50 * T);
    w.disarm(1);
    assert_eq!(w.next_deadline(), None);
}

#[test]
fn regions_split_the_ids() {
    let w = TimerBitmapWheel::new(
        WheelConfig {
            ids: 1000,
            slots: 8,
            tick_ns: T,
            regions: 3,
        },
        0,
    );
    assert_eq!(w.region_ids(0), 0..333);
    assert_eq!(w.region_ids(1), 333..666);
    assert_eq!(w.region_ids(2), 666..1000);
    for id in 0..1000u32 {
        let r = w.region_of(id);
        assert!(w.region_ids(r).contains(&id), "id {id} region {r}");
        w.arm(id, 0, T);
    }
    // Region 1 shares words with regions 0 and 2; scanning it touches only its bits.
    let mut v = Vec::new();
    w.advance_region(1, T, |id| v.push(id));
    v.sort_unstable();
    assert_eq!(v, (333..666).collect::<Vec<_>>());
    assert_eq!(w.armed(), 667);
    let f = fired(&w, T);
    assert_eq!(f.len(), 667);
    assert!(f.iter().all(|id| !(333..666).contains(id)));
}

#[test]
fn extreme_times_do_not_overflow() {
    let w = TimerBitmapWheel::new(
        WheelConfig {
            ids: 64,
            slots: 4,
            tick_ns: 1,
            regions: 1,
        },
        u64::MAX - 10,
    );
    w.arm(1, u64::MAX - 10, u64::MAX);
    w.arm(2, u64::MAX - 10, 3);
    assert_eq!(fired(&w, u64::MAX - 7), vec![2]);
    assert_eq!(fired(&w, u64::MAX), vec![1]);
    // Past the last tick the wheel can reach: armed, never due, no overflow.
    w.arm(3, u64::MAX, u64::MAX);
    assert!(w.is_armed(3) && w.next_deadline().is_some());
    assert!(fired(&w, u64::MAX).is_empty());
    w.disarm(3);
    assert_eq!(w.armed(), 0);
}

#[test]
fn expired_callback_may_rearm() {
    let w = wheel(64, 4);
    w.arm(5, 0, T);
    let mut n = 0;
    for t in 1..=10 {
        w.advance(t * T, |id| {
            n += 1;
            w.arm(id, t * T, T);
        });
    }
    assert_eq!(n, 10);
    assert!(w.is_armed(5));
}
