//! The timer bitmap wheel of AccelTCP (§4.2 "Timeout management", Figure 6): the NIC's
//! timers for teardown retransmission (RTO) and TIME_WAIT.
//!
//! The wheel has `slots` timer bitmaps, one per tick of `tick_ns`, each with one bit per flow
//! id. A flow's timer is a set bit in the bitmap of the tick at which it fires. Rotation is a
//! cursor move (the "pointer to the RTO-expired bitmap"); expiry scans the expiring bitmap's
//! 64-bit words, finds the set bits with `trailing_zeros` and clears them.
//!
//! Concurrency (§4.2: "allows concurrent updates by multiple flows as long as their flow ids
//! belong to different 32-bit words"): every update is one atomic word operation
//! (`fetch_or` to set a bit, `fetch_and` to claim bits while scanning), so NIC lcores arm and
//! disarm any flow without a lock, and only flows whose ids share a 64-bit word touch the same
//! cache line. The id space is split into `regions` (region `r` holds ids
//! `r * ids / regions .. (r + 1) * ids / regions`); each region has its own cursor, so each
//! lcore advances and scans only its own region's words (§4.2: "having multiple cores scan a
//! different bitmap region in parallel"). The whole structure is `Send + Sync`; share it
//! behind an `Arc`.
//!
//! Per-flow state is one atomic word: the tick the flow is filed at (0 when not armed). It
//! serves two purposes:
//!
//! - **Round counts.** A timeout longer than the wheel's span (`slots * tick_ns`) is filed in
//!   the slot of its deadline tick; when the scan visits that slot in an earlier revolution,
//!   the flow's remaining round count, `(filed tick - tick) / slots`, is not yet zero, so its
//!   bit is put back instead of firing (the paper's "counter in the flow state that decrements
//!   every expiration of the maximum RTO", kept as an absolute tick so that no per-revolution
//!   write is needed and a jump of `now` over many revolutions needs no catching up).
//! - **Stale bits.** Re-arming and disarming do not clear the old slot's bit; the scan ignores
//!   (and clears) a bit whose flow is no longer filed at that slot. Clearing the old bit from
//!   `arm` would race with a concurrent re-arm of the same flow into the same slot and could
//!   erase the new bit (a lost timer) unless updates took a lock; checking at scan time keeps
//!   the write-heavy path (§4.2: "RTO management is write-heavy") at two atomic read-modify-writes
//!   (three when the arm is the first in its cache line and slot, see below) and
//!   can never fire a timer early, since a flow fires only when its current filed tick is due.
//!
//! Scan cost: with a million ids a slot bitmap is 128 KB, and reading it whole every tick
//! costs tens of µs even when nothing is due. Each slot therefore also has a summary bitmap
//! with one bit per cache line (8 words, 512 ids) of its bitmap: `arm` marks the line after
//! setting the bit (a read of the summary word, which is usually already marked, plus a
//! `fetch_or` the first time), and a scan reads only marked lines, clearing each mark before
//! reading the line and marking it again if bits stay there. Unlike the per-region counter
//! that §4.2 found too expensive to update, a mark is written once per line and slot, not on
//! every update.
//!
//! Timing: tick `k` is the instant `k * tick_ns`. A timer armed for `now + after_ns` is filed
//! at the first tick at or after that instant and fires in the first `advance` whose `now`
//! reaches that tick: late by less than one tick, never early. A deadline in a tick the
//! region's cursor has already passed (for instance `after_ns == 0` right after an
//! `advance(now)` at a tick boundary) is filed at the next unprocessed tick.
//!
//! Like every engine here the wheel is sans-I/O: time is the caller's `now` in nanoseconds.

use std::ops::Range;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Bitmap words per cache line: the unit the slot summaries mark.
const LINE_WORDS: usize = 8;

/// Dimensions of a [`TimerBitmapWheel`] (AccelTCP §4.2, Figure 6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelConfig {
    /// Flow ids `0..ids` (one bit per id in every slot bitmap); at most 2^32.
    pub ids: usize,
    /// Timer bitmaps (slots); the wheel spans `slots * tick_ns` ns per revolution.
    pub slots: usize,
    /// The interval between two neighbouring bitmaps, in ns.
    pub tick_ns: u64,
    /// Regions of the id space, each with its own cursor, scanned independently.
    pub regions: usize,
}

impl Default for WheelConfig {
    /// 64k ids (8 KB per bitmap, as in §4.2), 1,024 slots of 100 µs (Figure 6), one region.
    fn default() -> Self {
        WheelConfig {
            ids: 65_536,
            slots: 1_024,
            tick_ns: 100_000,
            regions: 1,
        }
    }
}

/// Why a [`WheelConfig`] cannot make a wheel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WheelConfigError {
    /// `ids`, `slots`, `tick_ns` or `regions` is zero.
    #[error("timer wheel: {0} must not be zero")]
    Zero(&'static str),
    /// More than 2^32 ids (ids are `u32`).
    #[error("timer wheel: {0} ids exceed the u32 id space")]
    TooManyIds(usize),
    /// More regions than ids.
    #[error("timer wheel: {regions} regions for only {ids} ids")]
    TooManyRegions {
        /// The configured regions.
        regions: usize,
        /// The configured ids.
        ids: usize,
    },
    /// The bitmaps would not fit the address space.
    #[error("timer wheel: {slots} slots of {ids} ids do not fit in memory")]
    TooLarge {
        /// The configured slots.
        slots: usize,
        /// The configured ids.
        ids: usize,
    },
}

/// One region's cursor and counters, alone on its cache line so that lcores scanning
/// different regions do not share lines.
#[derive(Debug)]
#[repr(align(64))]
struct Region {
    /// The next tick to process: every tick below it has been scanned.
    cursor: AtomicU64,
    /// A lower bound of the filed ticks of the region's armed ids (`u64::MAX`: none armed
    /// since the wheel was made).
    hint: AtomicU64,
    /// Armed ids in the region (may be transiently off by the updates in flight).
    armed: AtomicI64,
    /// First id of the region.
    start: u32,
    /// One past the last id of the region.
    end: u32,
}

/// The timer bitmap wheel (AccelTCP §4.2, Figure 6): one-shot timers for flow ids
/// `0..cfg.ids`, armed, disarmed and advanced through `&self` from any number of threads.
#[derive(Debug)]
pub struct TimerBitmapWheel {
    cfg: WheelConfig,
    /// 64-bit words per slot bitmap.
    words: usize,
    /// `slots * words` bitmap words, slot-major.
    bits: Vec<AtomicU64>,
    /// Summary words per slot: one bit per cache line (8 words) of the slot's bitmap.
    summary_words: usize,
    /// `slots * summary_words` words: a set bit marks a line that may hold set bits, so a
    /// scan reads only those lines (an empty slot costs a few words, not the whole bitmap).
    summary: Vec<AtomicU64>,
    /// Per id: the filed tick plus one; 0 = not armed.
    filed: Vec<AtomicU64>,
    regions: Vec<Region>,
    /// Calls naming an id `>= cfg.ids`.
    out_of_range: AtomicU64,
}

impl TimerBitmapWheel {
    /// A wheel of `cfg` whose cursor starts at the tick of `now`.
    ///
    /// # Panics
    ///
    /// When [`try_new`](Self::try_new) fails: a zero-sized config, more than 2^32 ids, more
    /// regions than ids, or bitmaps larger than the address space.
    pub fn new(cfg: WheelConfig, now: u64) -> TimerBitmapWheel {
        match TimerBitmapWheel::try_new(cfg, now) {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`new`](Self::new), with a typed error instead of a panic.
    pub fn try_new(cfg: WheelConfig, now: u64) -> Result<TimerBitmapWheel, WheelConfigError> {
        for (name, v) in [
            ("ids", cfg.ids as u64),
            ("slots", cfg.slots as u64),
            ("tick_ns", cfg.tick_ns),
            ("regions", cfg.regions as u64),
        ] {
            if v == 0 {
                return Err(WheelConfigError::Zero(name));
            }
        }
        if cfg.ids as u64 > 1 << 32 {
            return Err(WheelConfigError::TooManyIds(cfg.ids));
        }
        if cfg.regions > cfg.ids {
            return Err(WheelConfigError::TooManyRegions {
                regions: cfg.regions,
                ids: cfg.ids,
            });
        }
        let words = cfg.ids.div_ceil(64);
        let total = words
            .checked_mul(cfg.slots)
            .filter(|t| t.checked_mul(8).is_some_and(|b| b <= isize::MAX as usize))
            .ok_or(WheelConfigError::TooLarge {
                slots: cfg.slots,
                ids: cfg.ids,
            })?;
        let summary_words = words.div_ceil(LINE_WORDS).div_ceil(64);
        let cursor = now / cfg.tick_ns;
        let regions = (0..cfg.regions)
            .map(|r| Region {
                cursor: AtomicU64::new(cursor),
                hint: AtomicU64::new(u64::MAX),
                armed: AtomicI64::new(0),
                start: region_bound(r, cfg.ids, cfg.regions),
                end: region_bound(r + 1, cfg.ids, cfg.regions),
            })
            .collect();
        Ok(TimerBitmapWheel {
            words,
            bits: crate::sys::huge_vec_with(total, || AtomicU64::new(0)),
            summary_words,
            summary: (0..cfg.slots * summary_words)
                .map(|_| AtomicU64::new(0))
                .collect(),
            filed: crate::sys::huge_vec_with(cfg.ids, || AtomicU64::new(0)),
            regions,
            out_of_range: AtomicU64::new(0),
            cfg,
        })
    }

    /// The wheel's dimensions.
    pub fn config(&self) -> &WheelConfig {
        &self.cfg
    }

    /// The region holding `id` (`id < cfg.ids`).
    #[inline]
    pub fn region_of(&self, id: u32) -> usize {
        if self.cfg.regions == 1 {
            return 0;
        }
        // The r with r * ids / regions <= id < (r + 1) * ids / regions (floors).
        ((id as u64 + 1) * self.cfg.regions as u64 - 1) as usize / self.cfg.ids
    }

    /// The ids of region `region` (`region < cfg.regions`).
    pub fn region_ids(&self, region: usize) -> Range<u32> {
        let r = &self.regions[region];
        r.start..r.end
    }

    /// Arms (or re-arms, replacing the earlier deadline) flow `id`'s timer to fire at the
    /// first tick at or after `now + after_ns` (or at the region's next unprocessed tick if
    /// that one has already been scanned). Ids `>= cfg.ids` are ignored and counted
    /// ([`out_of_range`](Self::out_of_range)).
    ///
    /// Lock-free: one atomic swap of the flow's filed tick and one `fetch_or` on the bitmap
    /// word (AccelTCP §4.2). The old slot's bit, if any, is left to the scan, which ignores it.
    pub fn arm(&self, id: u32, now: u64, after_ns: u64) {
        let Some(filed) = self.filed.get(id as usize) else {
            self.out_of_range.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let reg = &self.regions[self.region_of(id)];
        let due = now.saturating_add(after_ns).div_ceil(self.cfg.tick_ns);
        let mut tick = due.max(reg.cursor.load(Ordering::SeqCst)).min(u64::MAX - 2);
        // Start the bitmap word's cache miss now: the atomic swap below waits for its own
        // miss, and the two would otherwise run one after the other.
        let slot = (tick % self.cfg.slots as u64) as usize;
        crate::sys::prefetch(self.bits[slot * self.words + id as usize / 64].as_ptr() as *const u8);
        if filed.swap(tick + 1, Ordering::SeqCst) == 0 {
            reg.armed.fetch_add(1, Ordering::SeqCst);
        }
        loop {
            let slot = (tick % self.cfg.slots as u64) as usize;
            self.bits[slot * self.words + id as usize / 64]
                .fetch_or(1 << (id % 64), Ordering::SeqCst);
            // Mark the word's cache line in the slot's summary (after the bit: see
            // `scan_slot`); usually already marked, then a read of a shared line.
            let line = id as usize / 64 / LINE_WORDS;
            let summary = &self.summary[slot * self.summary_words + line / 64];
            if summary.load(Ordering::SeqCst) & (1 << (line % 64)) == 0 {
                summary.fetch_or(1 << (line % 64), Ordering::SeqCst);
            }
            if reg.hint.load(Ordering::SeqCst) > tick {
                reg.hint.fetch_min(tick, Ordering::SeqCst);
            }
            // A scan of this region that started after our cursor read may have passed the
            // slot before our bit landed; it publishes its cursor before scanning, so seeing
            // the old cursor here means it will see the bit. Otherwise re-file at the new
            // cursor, unless the flow fired or changed meanwhile.
            let cursor = reg.cursor.load(Ordering::SeqCst);
            if cursor <= tick {
                return;
            }
            if filed
                .compare_exchange(tick + 1, cursor + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return;
            }
            tick = cursor;
        }
    }

    /// Disarms `id` (no-op when not armed or out of range; out of range is counted).
    pub fn disarm(&self, id: u32) {
        let Some(filed) = self.filed.get(id as usize) else {
            self.out_of_range.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if filed.swap(0, Ordering::SeqCst) != 0 {
            self.regions[self.region_of(id)]
                .armed
                .fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether `id` is armed (false when out of range).
    pub fn is_armed(&self, id: u32) -> bool {
        self.filed
            .get(id as usize)
            .is_some_and(|f| f.load(Ordering::Relaxed) != 0)
    }

    /// The tick time (ns) at which `id`'s timer fires, if armed.
    pub fn deadline(&self, id: u32) -> Option<u64> {
        let f = self.filed.get(id as usize)?.load(Ordering::Relaxed);
        (f != 0).then(|| (f - 1).saturating_mul(self.cfg.tick_ns))
    }

    /// Advances the whole wheel (every region) to `now`, calling `expired(id)` once for every
    /// armed id whose deadline is `<= now`, after disarming it (so `expired` may re-arm it).
    /// Calling it again with the same `now` fires nothing; a jump of `now` over any number of
    /// revolutions fires every due id exactly once and keeps later timers.
    pub fn advance(&self, now: u64, mut expired: impl FnMut(u32)) {
        for r in 0..self.regions.len() {
            self.advance_region(r, now, &mut expired);
        }
    }

    /// [`advance`](Self::advance) for region `region` only (ids
    /// `region * ids / regions .. (region + 1) * ids / regions`), with its own cursor: NIC
    /// lcores scan their regions independently and concurrently (AccelTCP §4.2). One thread
    /// at a time should advance a given region; a second one concurrently never makes an id
    /// fire twice but may make the first one miss a long timer's round.
    ///
    /// # Panics
    ///
    /// When `region >= cfg.regions`.
    pub fn advance_region(&self, region: usize, now: u64, mut expired: impl FnMut(u32)) {
        let reg = &self.regions[region];
        // Room for `target + 1` (the cursor) and the filed tick plus one.
        let target = (now / self.cfg.tick_ns).min(u64::MAX - 2);
        if reg.cursor.load(Ordering::Relaxed) > target {
            return;
        }
        // Publish the cursor before scanning (see `arm`): an arm that reads the old cursor
        // sets its bit before we scan that word, or notices the move and re-files.
        let first = reg.cursor.fetch_max(target + 1, Ordering::SeqCst);
        if first > target {
            return;
        }
        // An empty region needs no scan (stale bits wait for a later one). An arm racing with
        // this check either counted itself before our cursor move or re-files after it.
        if reg.armed.load(Ordering::SeqCst) > 0 {
            let slots = self.cfg.slots as u64;
            // A jump over a whole revolution or more visits each slot once.
            let from = first.max((target + 1).saturating_sub(slots));
            for tick in from..=target {
                self.scan_slot(reg, (tick % slots) as usize, target, &mut expired);
            }
        }
        // Every id still armed in this region is filed after `target`.
        reg.hint.fetch_max(target + 1, Ordering::SeqCst);
    }

    /// Scans one slot bitmap over `reg`'s words: fires the ids filed at a tick `<= target`,
    /// puts back those filed in a later round and drops stale bits. Only the cache lines the
    /// slot's summary marks are read.
    fn scan_slot(&self, reg: &Region, slot: usize, target: u64, expired: &mut impl FnMut(u32)) {
        if reg.start == reg.end {
            return;
        }
        let (w0, w1) = (reg.start as usize / 64, (reg.end as usize - 1) / 64);
        let (l0, l1) = (w0 / LINE_WORDS, w1 / LINE_WORDS);
        for si in l0 / 64..=l1 / 64 {
            let mut lmask = u64::MAX;
            if si == l0 / 64 {
                lmask &= u64::MAX << (l0 % 64);
            }
            if si == l1 / 64 && l1 % 64 != 63 {
                lmask &= u64::MAX >> (63 - l1 % 64);
            }
            let summary = &self.summary[slot * self.summary_words + si];
            let mut lines = summary.load(Ordering::SeqCst) & lmask;
            if lines == 0 {
                continue;
            }
            // Clear before reading the words: an arm that sets a bit after our read of its
            // word finds the summary bit clear and sets it again.
            summary.fetch_and(!lines, Ordering::SeqCst);
            while lines != 0 {
                let lb = lines.trailing_zeros();
                lines &= lines - 1;
                let line = si * 64 + lb as usize;
                let (first, last) = (line * LINE_WORDS, line * LINE_WORDS + LINE_WORDS - 1);
                // Words of the line in a neighbouring region: their bits keep the line marked.
                let mut busy = (first..w0)
                    .chain(w1 + 1..=last.min(self.words - 1))
                    .any(|w| self.bits[slot * self.words + w].load(Ordering::SeqCst) != 0);
                for w in first.max(w0)..=last.min(w1) {
                    busy |= self.scan_word(reg, slot, w, target, expired);
                }
                // Bits left in the line (long timers, other regions' ids): keep it marked.
                if busy {
                    summary.fetch_or(1 << lb, Ordering::SeqCst);
                }
            }
        }
    }

    /// Scans word `w` of `slot` (the part of it in `reg`); returns whether bits are left in
    /// it (kept long timers, or other regions' bits).
    fn scan_word(
        &self,
        reg: &Region,
        slot: usize,
        w: usize,
        target: u64,
        expired: &mut impl FnMut(u32),
    ) -> bool {
        let mut mask = u64::MAX;
        if w == reg.start as usize / 64 {
            mask &= u64::MAX << (reg.start % 64);
        }
        if w == (reg.end as usize - 1) / 64 && !reg.end.is_multiple_of(64) {
            mask &= u64::MAX >> (64 - reg.end % 64);
        }
        let word = &self.bits[slot * self.words + w];
        let seen = word.load(Ordering::SeqCst);
        if seen & mask == 0 {
            return seen != 0;
        }
        let old = word.fetch_and(!mask, Ordering::SeqCst);
        let mut claimed = old & mask;
        let mut keep = 0u64;
        while claimed != 0 {
            let b = claimed.trailing_zeros();
            claimed &= claimed - 1;
            let id = (w * 64) as u32 + b;
            let filed = &self.filed[id as usize];
            let mut v = filed.load(Ordering::SeqCst);
            loop {
                // Not armed, or re-armed into another slot: a stale bit.
                if v == 0 || (v - 1) % self.cfg.slots as u64 != slot as u64 {
                    break;
                }
                // Its round count is not yet zero: keep it for a later revolution.
                if v - 1 > target {
                    keep |= 1 << b;
                    break;
                }
                match filed.compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => {
                        reg.armed.fetch_sub(1, Ordering::SeqCst);
                        expired(id);
                        break;
                    }
                    Err(now_v) => v = now_v,
                }
            }
        }
        if keep != 0 {
            word.fetch_or(keep, Ordering::SeqCst);
        }
        keep != 0 || old & !mask != 0
    }

    /// Earliest tick time (ns) at which some armed id may fire; `None` when nothing is armed.
    /// Conservative: it may be early (down to the next unprocessed tick), never late.
    pub fn next_deadline(&self) -> Option<u64> {
        self.regions
            .iter()
            .filter(|r| r.armed.load(Ordering::Relaxed) > 0)
            .map(|r| {
                let tick = r
                    .hint
                    .load(Ordering::SeqCst)
                    .max(r.cursor.load(Ordering::SeqCst));
                tick.saturating_mul(self.cfg.tick_ns)
            })
            .min()
    }

    /// Number of armed ids (occupancy, for counters).
    pub fn armed(&self) -> usize {
        let n: i64 = self
            .regions
            .iter()
            .map(|r| r.armed.load(Ordering::Relaxed))
            .sum();
        n.max(0) as usize
    }

    /// Calls that named an id `>= cfg.ids` (ignored).
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range.load(Ordering::Relaxed)
    }
}

/// `r * ids / regions`, the first id of region `r` (`ids` for `r == regions`).
fn region_bound(r: usize, ids: usize, regions: usize) -> u32 {
    ((r as u128 * ids as u128) / regions as u128) as u32
}

#[cfg(test)]
mod tests;
