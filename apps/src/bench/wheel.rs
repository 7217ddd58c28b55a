//! `nicemu bench wheel`: the timer bitmap wheel (AccelTCP §4.2, Figure 6) against the Tonic
//! rate timers' hashed wheel of index-linked lists (Tonic §3.3.2), side by side in one run,
//! on the same id space, slot count, tick and id order.
//!
//! Figures: ns per arm (id not armed), per re-arm (id armed at another tick, the RTO pattern
//! of §4.2: every transmission registers a new RTO), per disarm, and per expiry scan of one
//! slot (empty, and with `k` ids expiring). Single thread; the median of several repetitions.
//! The linked-list wheel is single-owner (`&mut`); its updates are also timed behind an
//! uncontended mutex, the least a list shared by lcores without flow-core affinity needs.
//! With `threads > 1`, arm, re-arm and disarm also run from that many threads at once on one
//! shared wheel (each thread a slice of the random id order, so threads share bitmap words),
//! the bitmap wheel lock-free and the list behind its (then contended) mutex.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Instant;

use dataplane::tonic::timer::HashedTimerWheel as ListWheel;
use dataplane::wheel::{TimerBitmapWheel, WheelConfig};

/// Settings of the wheel benchmark.
#[derive(Clone, Debug)]
pub struct WheelBenchOpts {
    /// Registered flow ids (the id space of both wheels).
    pub ids: usize,
    /// Slots of both wheels (a power of two, for the linked-list wheel).
    pub slots: usize,
    /// Slot width is 2^tick_shift ns for both (the linked-list wheel's granularity).
    pub tick_shift: u32,
    /// Repetitions; the report gives the median.
    pub reps: usize,
    /// Expiring ids per slot for the scan figures.
    pub expiring: Vec<usize>,
    /// Threads for the concurrent update figures (arm, re-arm, disarm of the shared wheel
    /// from this many threads at once); 1: none.
    pub threads: usize,
}

impl Default for WheelBenchOpts {
    fn default() -> Self {
        WheelBenchOpts {
            ids: 1 << 20,
            slots: 1024,
            tick_shift: 17, // 131 µs, near Figure 6's 100 µs
            reps: 5,
            expiring: vec![1, 64, 1024, 16_384],
            threads: 1,
        }
    }
}

/// splitmix64: a seeded, reproducible id order and deadlines.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn permutation(&mut self, n: usize) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            v.swap(i, (self.next() % (i as u64 + 1)) as usize);
        }
        v
    }
}

/// One figure for both structures: ns per operation, median over the repetitions.
#[derive(Default)]
struct Row {
    label: String,
    unit: &'static str,
    bitmap: Vec<f64>,
    list: Vec<f64>,
    /// The linked-list wheel behind an (uncontended) mutex, as sharing it between lcores
    /// without flow-core affinity needs (§4.2); updates only.
    locked: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ns_per(start: Instant, n: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / n.max(1) as f64
}

/// Runs `f` over `threads` slices of `ids` (with their deadlines) at once; ns per id of the
/// whole (wall time over all ids: the inverse of the aggregate rate).
fn parallel(threads: usize, ids: &[u32], afters: &[u64], f: impl Fn(u32, u64) + Sync) -> f64 {
    let per = ids.len().div_ceil(threads);
    let t = Instant::now();
    std::thread::scope(|s| {
        for (c, a) in ids.chunks(per).zip(afters.chunks(per)) {
            let f = &f;
            s.spawn(move || {
                for (&id, &after) in c.iter().zip(a) {
                    f(id, after);
                }
            });
        }
    });
    ns_per(t, ids.len())
}

/// Runs the benchmark and returns its report.
pub fn wheel(o: &WheelBenchOpts) -> Result<String, String> {
    if !(64..=1 << 26).contains(&o.ids) {
        return Err(format!("--ids {}: expected 64..=67108864", o.ids));
    }
    if !o.slots.is_power_of_two() || !(2..=1 << 16).contains(&o.slots) {
        return Err(format!(
            "--slots {}: expected a power of two in 2..=65536",
            o.slots
        ));
    }
    if !(1..=64).contains(&o.threads) {
        return Err(format!("--threads {}: expected 1..=64", o.threads));
    }
    if !(1..=30).contains(&o.tick_shift) || o.reps == 0 {
        return Err("tick shift must be in 1..=30 and reps at least 1".into());
    }
    let tick = 1u64 << o.tick_shift;
    let slots = o.slots as u64;
    let cfg = WheelConfig {
        ids: o.ids,
        slots: o.slots,
        tick_ns: tick,
        regions: 1,
    };
    let mut rng = Rng(0x5eed);
    let order = rng.permutation(o.ids);
    // Deadlines spread over the wheel's span, 1..slots ticks ahead.
    let afters: Vec<u64> = (0..o.ids)
        .map(|_| (rng.next() % (slots - 1) + 1) * tick)
        .collect();
    let afters2: Vec<u64> = (0..o.ids)
        .map(|_| (rng.next() % (slots - 1) + 1) * tick)
        .collect();

    let mut arm = Row {
        label: "arm (id not armed)".into(),
        unit: "ns/op",
        ..Default::default()
    };
    let mut rearm = Row {
        label: "re-arm (armed at another tick)".into(),
        unit: "ns/op",
        ..Default::default()
    };
    let mut disarm = Row {
        label: "disarm".into(),
        unit: "ns/op",
        ..Default::default()
    };
    let mut empty = Row {
        label: "expiry scan, empty slot".into(),
        unit: "ns/slot",
        ..Default::default()
    };
    let mut scans: Vec<Row> = o
        .expiring
        .iter()
        .map(|k| Row {
            label: format!("expiry scan, {k} expiring"),
            unit: "ns/slot",
            ..Default::default()
        })
        .collect();
    let mut stale = Row {
        label: "expiry scan, 1024 stale bits".into(),
        unit: "ns/slot",
        ..Default::default()
    };

    let mut par: Vec<Row> = if o.threads > 1 {
        ["arm", "re-arm", "disarm"]
            .iter()
            .map(|op| Row {
                label: format!("{op}, {} threads at once", o.threads),
                unit: "ns/op",
                ..Default::default()
            })
            .collect()
    } else {
        Vec::new()
    };

    for _ in 0..o.reps {
        if o.threads > 1 {
            // Concurrent updates: the bitmap wheel as is, the list behind its mutex.
            let w = TimerBitmapWheel::new(cfg.clone(), 0);
            par[0]
                .bitmap
                .push(parallel(o.threads, &order, &afters, |id, a| {
                    w.arm(id, 0, a)
                }));
            par[1]
                .bitmap
                .push(parallel(o.threads, &order, &afters2, |id, a| {
                    w.arm(id, 0, a)
                }));
            par[2]
                .bitmap
                .push(parallel(o.threads, &order, &afters, |id, _| w.disarm(id)));
            drop(w);
            let w = Mutex::new(ListWheel::new(
                o.ids as u32,
                o.tick_shift,
                o.slots.trailing_zeros(),
            ));
            let lock = || w.lock().unwrap_or_else(|e| e.into_inner());
            par[0]
                .locked
                .push(parallel(o.threads, &order, &afters, |id, a| {
                    lock().arm(id, a)
                }));
            par[1]
                .locked
                .push(parallel(o.threads, &order, &afters2, |id, a| {
                    lock().arm(id, a)
                }));
            par[2]
                .locked
                .push(parallel(o.threads, &order, &afters, |id, _| {
                    lock().cancel(id);
                }));
        }
        // Updates. Both wheels start at time 0 and stay there.
        {
            let w = TimerBitmapWheel::new(cfg.clone(), 0);
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters) {
                w.arm(id, 0, a);
            }
            arm.bitmap.push(ns_per(t, o.ids));
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters2) {
                w.arm(id, 0, a);
            }
            rearm.bitmap.push(ns_per(t, o.ids));
            let t = Instant::now();
            for &id in &order {
                w.disarm(id);
            }
            disarm.bitmap.push(ns_per(t, o.ids));
            black_box(w.armed());
        }
        {
            let mut w = ListWheel::new(o.ids as u32, o.tick_shift, o.slots.trailing_zeros());
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters) {
                w.arm(id, a);
            }
            arm.list.push(ns_per(t, o.ids));
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters2) {
                w.arm(id, a);
            }
            rearm.list.push(ns_per(t, o.ids));
            let t = Instant::now();
            for &id in &order {
                w.cancel(id);
            }
            disarm.list.push(ns_per(t, o.ids));
            black_box(w.armed());
        }
        {
            let w = Mutex::new(ListWheel::new(
                o.ids as u32,
                o.tick_shift,
                o.slots.trailing_zeros(),
            ));
            let lock = || w.lock().unwrap_or_else(|e| e.into_inner());
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters) {
                lock().arm(id, a);
            }
            arm.locked.push(ns_per(t, o.ids));
            let t = Instant::now();
            for (&id, &a) in order.iter().zip(&afters2) {
                lock().arm(id, a);
            }
            rearm.locked.push(ns_per(t, o.ids));
            let t = Instant::now();
            for &id in &order {
                lock().cancel(id);
            }
            disarm.locked.push(ns_per(t, o.ids));
            black_box(lock().armed());
        }

        // Scans: fresh wheels; one id armed many revolutions ahead keeps both from taking
        // their "nothing armed" shortcut.
        let w = TimerBitmapWheel::new(cfg.clone(), 0);
        let mut lw = ListWheel::new(o.ids as u32, o.tick_shift, o.slots.trailing_zeros());
        let far = order[0];
        w.arm(far, 0, 1_000 * slots * tick);
        lw.arm(far, 1_000 * slots * tick);
        let mut now_tick = 0u64;
        // Empty slots: a run of ticks with nothing due.
        let n = (o.slots / 2) as u64;
        let t = Instant::now();
        for i in 1..=n {
            w.advance((now_tick + i) * tick, |id| {
                black_box(id);
            });
        }
        empty.bitmap.push(ns_per(t, n as usize));
        let t = Instant::now();
        for i in 1..=n {
            lw.advance((now_tick + i) * tick, |id| {
                black_box(id);
            });
        }
        empty.list.push(ns_per(t, n as usize));
        now_tick += n;

        // k ids due at each of the next R ticks (distinct ids), then one advance per tick.
        for (row, &k) in scans.iter_mut().zip(&o.expiring) {
            let r = ((o.ids - 1) / k).clamp(1, 8);
            let ids = &order[1..1 + (r * k).min(o.ids - 1)];
            for (i, chunk) in ids.chunks(k).enumerate() {
                let due = now_tick + 1 + i as u64;
                for &id in chunk {
                    w.arm(id, now_tick * tick, (due - now_tick) * tick);
                    lw.arm(id, due * tick);
                }
            }
            let mut fired = 0usize;
            let t = Instant::now();
            for i in 1..=r as u64 {
                w.advance((now_tick + i) * tick, |id| {
                    fired += 1;
                    black_box(id);
                });
            }
            row.bitmap.push(ns_per(t, r));
            let t = Instant::now();
            for i in 1..=r as u64 {
                lw.advance((now_tick + i) * tick, |id| {
                    fired += 1;
                    black_box(id);
                });
            }
            row.list.push(ns_per(t, r));
            if fired != 2 * ids.len() {
                return Err(format!(
                    "{k} per slot: {fired} fired, expected {}",
                    2 * ids.len()
                ));
            }
            now_tick += r as u64;
        }

        // Stale bits (the bitmap wheel's deferred cost of re-arming): 1024 ids re-armed away
        // from the next tick's slot, which the scan then cleans.
        let ids = &order[1..1025.min(o.ids)];
        for &id in ids {
            w.arm(id, now_tick * tick, tick);
            w.arm(id, now_tick * tick, 3 * tick);
            lw.arm(id, (now_tick + 1) * tick);
            lw.arm(id, (now_tick + 3) * tick);
        }
        let t = Instant::now();
        w.advance((now_tick + 1) * tick, |id| {
            black_box(id);
        });
        stale.bitmap.push(ns_per(t, 1));
        let t = Instant::now();
        lw.advance((now_tick + 1) * tick, |id| {
            black_box(id);
        });
        stale.list.push(ns_per(t, 1));
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Timer wheels: {} ids, {} slots of {} ns, median of {} runs; one thread except the last rows",
        o.ids, o.slots, tick, o.reps
    );
    let _ = writeln!(
        out,
        "bitmap = timer bitmap wheel (AccelTCP §4.2); list = Tonic rate-timer wheel (index-linked lists)"
    );
    let _ = writeln!(
        out,
        "{:<34} {:>16} {:>10} {:>12} {:>12}",
        "operation", "bitmap", "list", "list/bitmap", "list+mutex"
    );
    let rows = [&mut arm, &mut rearm, &mut disarm, &mut empty]
        .into_iter()
        .chain(scans.iter_mut())
        .chain([&mut stale])
        .chain(par.iter_mut());
    for row in rows {
        let (b, l) = (median(&mut row.bitmap), median(&mut row.list));
        let (l_text, ratio) = if row.list.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            (format!("{l:.1}"), format!("{:.2}x", l / b))
        };
        let locked = if row.locked.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", median(&mut row.locked))
        };
        let _ = writeln!(
            out,
            "{:<34} {:>16} {:>10} {:>12} {:>12}",
            row.label,
            format!("{b:.1} {}", row.unit),
            l_text,
            ratio,
            locked
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small run end to end (nothing here is timed): every figure is there and the scans
    /// fired what they armed.
    #[test]
    fn small_wheel_bench_runs() {
        let o = WheelBenchOpts {
            ids: 4096,
            slots: 64,
            reps: 1,
            expiring: vec![1, 64],
            threads: 2,
            ..WheelBenchOpts::default()
        };
        let r = wheel(&o).unwrap();
        for row in [
            "arm (id not armed)",
            "64 expiring",
            "1024 stale bits",
            "disarm, 2 threads",
        ] {
            assert!(r.contains(row), "{row} missing from\n{r}");
        }
        assert!(wheel(&WheelBenchOpts { slots: 100, ..o }).is_err());
    }
}
