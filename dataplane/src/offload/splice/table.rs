//! The splice table: the pairs shared by every NIC lcore of a process, keyed by the
//! arriving 4-tuple in an index that lcores read without a lock and writers change under
//! one of [`SHARDS`] locks, and each pair's state (AccelTCP §4.3).

use super::rcu::RcuIndex;
use super::*;

/// The hash bits that pick an entry's bucket (and so its shard) start here: above the
/// lcore cache's slot bits and the presence filter's.
const BUCKET_SHIFT: u32 = 40;

/// A table key: an arriving 4-tuple (source IP and port, destination IP and port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) ips: u64,
    pub(super) ports: u32,
}

impl Key {
    pub(super) fn new(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Key {
        Key {
            ips: (u64::from(u32::from_be_bytes(src)) << 32) | u64::from(u32::from_be_bytes(dst)),
            ports: (u32::from(sport) << 16) | u32::from(dport),
        }
    }

    pub(super) fn of(d: &Dir) -> Key {
        let (s, sp, t, tp) = d.in_key();
        Key::new(s, sp, t, tp)
    }

    /// A 64-bit mix of the key (multiply-xorshift, as FxHash/wyhash do): good high and low
    /// bits, no SipHash on the per-packet path (the keys are not attacker-chosen beyond what
    /// the host accepted as connections).
    #[inline(always)]
    pub(super) fn hash(self) -> u64 {
        let x = self.ips ^ (u64::from(self.ports)).rotate_left(29);
        let h = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }

    /// The shard whose lock a change of this key's entry takes (its bucket's).
    #[inline(always)]
    pub(super) fn shard(self) -> usize {
        (self.hash() >> BUCKET_SHIFT) as usize & (SHARDS - 1)
    }

    /// The key's slot in a presence filter of `slots` counts (a power of two): hash bits
    /// above those the lcore cache's slot uses.
    #[inline(always)]
    pub(super) fn filter_slot(self, slots: usize) -> usize {
        (self.hash() >> 9) as usize & (slots - 1)
    }
}

/// Slots of the presence filter of a table for `max_pairs` pairs: four per pair (two keys
/// each, so at a full table about 39% of the slots are taken and a segment of no pair skips
/// the lock six times in ten; with 1,000 of 65,536 pairs installed, 99 times in 100), a
/// power of two from 4,096 to 2^24 (64 MiB of counts at most).
fn filter_slots(max_pairs: usize) -> usize {
    max_pairs
        .saturating_mul(4)
        .clamp(1 << 12, 1 << 24)
        .next_power_of_two()
}

/// Buckets of the index of a table for `max_pairs` pairs: one per key (two per pair), a
/// power of two from 1,024 to 2^21 (16 MiB of heads; a larger table has longer chains).
fn index_buckets(max_pairs: usize) -> usize {
    max_pairs
        .saturating_mul(2)
        .clamp(1 << 10, 1 << 21)
        .next_power_of_two()
}

/// One direction of a pair in its shard (and, copied, in an lcore's cache): how its segments
/// are translated.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    /// The translation (its `dst_mac` is filled in place once resolved).
    pub(super) dir: Dir,
    /// The side segments of this direction arrive on.
    pub(super) side: Side,
    /// Where this direction's relayed bytes start, in its arriving sequence space (the
    /// install's `a_start` / `b_start`).
    pub(super) start: u32,
    /// In an lcore's cache: segments translated and not yet added to the pair's count (the
    /// lcore's fast path adds them once per burst, [`SpliceOffload::flush_counts`]); 0 in
    /// the table.
    pub(super) unflushed: u64,
    pub(super) pair: Arc<Pair>,
}

/// The traffic counters of one direction of a pair, alone on a cache line: the lcores that
/// RSS gives the two directions do not write each other's line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct DirCount {
    /// Bytes relayed, each once: one past the highest payload byte seen, as an offset from
    /// the direction's start (retransmissions, and bytes before the start that the host
    /// already took, do not count twice).
    pub(super) high: AtomicU64,
    /// Segments translated.
    pub(super) packets: AtomicU64,
}

/// An entry in the table's index: the key, the entry, and the out side's neighbour MAC once
/// some lcore resolved it (`0` until then; the MAC in the low 48 bits and bit 48 set), so
/// that every lcore's next copy has it without a lock.
pub(super) struct Indexed {
    key: Key,
    entry: Entry,
    mac: AtomicU64,
}

const MAC_KNOWN: u64 = 1 << 48;

fn mac_word(m: [u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&m);
    u64::from_le_bytes(b) | MAC_KNOWN
}

fn mac_of(w: u64) -> [u8; 6] {
    let b = w.to_le_bytes();
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}

/// No FIN seen (FIN ends are 32-bit, so this value never is one).
pub(super) const NO_FIN: u64 = u64::MAX;

/// One spliced pair: what both directions share, and its owner's inbox.
///
/// Invariant: `fin_acked[i]` implies `fin_end[i] != NO_FIN`; `closing` is set once, by the
/// segment that completed the FIN/FIN close or the first RST; `reported` is set once, by the
/// owner.
#[derive(Debug)]
pub(super) struct Pair {
    pub(super) request_id: u32,
    /// The port the host tagged the install with (the report goes back tagged so).
    pub(super) host_port: u16,
    pub(super) a: FourTuple,
    pub(super) b: FourTuple,
    /// `[A's arriving key, B's arriving key]`.
    pub(super) keys: [Key; 2],
    /// `[a_start, b_start]` of the install.
    pub(super) starts: [u32; 2],
    /// The owner lcore's inbox (closures seen by any lcore).
    pub(super) inbox: Arc<SegQueue<Arc<Pair>>>,
    /// Per direction (index of the arriving side): the end of its FIN in its arriving
    /// sequence space, or [`NO_FIN`] (AccelTCP §4.3 "Tracking teardown state").
    pub(super) fin_end: [AtomicU64; 2],
    /// Per direction: the other direction acknowledged that FIN.
    pub(super) fin_acked: [AtomicBool; 2],
    /// The side whose peer sent the first RST ([`Side::code`]), 0 without.
    pub(super) rst: AtomicU8,
    /// Both FINs acknowledged or a RST: the owner was told.
    pub(super) closing: AtomicBool,
    /// When the FIN/FIN close completed (0: not yet; set before `closing`).
    pub(super) closed_at: AtomicU64,
    /// Time of a recent segment: within [`ACTIVITY_GRANULARITY_NS`] of the latest.
    pub(super) last_activity: AtomicU64,
    /// The owner made the closure report.
    pub(super) reported: AtomicBool,
    /// Another lcore saw a new connection's SYN on the lingering pair: the owner reports
    /// it at once instead of after the linger.
    pub(super) end_now: AtomicBool,
    /// Per direction (index of the arriving side): bytes and segments.
    pub(super) counts: [DirCount; 2],
}

/// How stale a pair's `last_activity` may be: the idle timeout (seconds by default) ends at
/// most this much early.
pub(super) const ACTIVITY_GRANULARITY_NS: u64 = 1_000_000;

impl Pair {
    pub(super) fn new(
        r: &SpliceInstallRepr,
        host_port: u16,
        keys: [Key; 2],
        inbox: Arc<SegQueue<Arc<Pair>>>,
        now: u64,
    ) -> Pair {
        Pair {
            request_id: r.request_id,
            host_port,
            a: r.a.tuple,
            b: r.b.tuple,
            keys,
            starts: [r.a_start, r.b_start],
            inbox,
            fin_end: [AtomicU64::new(NO_FIN), AtomicU64::new(NO_FIN)],
            fin_acked: [AtomicBool::new(false), AtomicBool::new(false)],
            rst: AtomicU8::new(0),
            closing: AtomicBool::new(false),
            closed_at: AtomicU64::new(0),
            last_activity: AtomicU64::new(now),
            reported: AtomicBool::new(false),
            end_now: AtomicBool::new(false),
            counts: [DirCount::default(), DirCount::default()],
        }
    }

    /// Notes activity at `now` (the idle timeout counts from the last).
    #[inline(always)]
    pub(super) fn touch(&self, now: u64) {
        // A store only when the time moved on by the granularity: the two directions of a
        // busy pair, on two lcores, then share the line read-only between updates.
        if now.saturating_sub(self.last_activity.load(Ordering::Relaxed)) >= ACTIVITY_GRANULARITY_NS
        {
            self.last_activity.store(now, Ordering::Relaxed);
        }
    }

    /// Follows the teardown with the translated segment `t` of direction `side`, which
    /// arrived at `now` (the caller notes the activity, [`Pair::touch`]); true when it
    /// closed the pair (the second FIN acknowledged, or the first RST).
    #[inline(always)]
    pub(super) fn observe(&self, side: Side, t: &Translated, now: u64) -> bool {
        // Nearly every segment: neither RST nor FIN, and no FIN from the other side yet to
        // acknowledge.
        if !t.flags.has(TcpFlags::RST)
            && !t.flags.has(TcpFlags::FIN)
            && self.fin_end[side.other().index()].load(Ordering::Relaxed) == NO_FIN
        {
            return false;
        }
        // The fields the teardown reads, as values (a reference would keep the whole
        // result in memory on the common path too).
        self.observe_teardown(side, t.flags, t.seq_in, t.payload_len, t.ack_out, now)
    }

    /// [`Pair::observe`] for a RST, a FIN, or a segment after the other side's FIN, from
    /// the segment's flags, arriving sequence number, payload length and leaving
    /// acknowledgement number.
    #[inline(never)]
    fn observe_teardown(
        &self,
        side: Side,
        flags: TcpFlags,
        seq_in: u32,
        payload_len: u32,
        ack_out: u32,
        now: u64,
    ) -> bool {
        let t = Translated {
            flags,
            seq_in,
            seq_out: 0,
            ack_in: 0,
            ack_out,
            payload_len,
            out_port: 0,
            sack_stripped: false,
            ts_stripped: false,
            ts_missing: false,
        };
        let (i, o) = (side.index(), side.other().index());
        if t.flags.has(TcpFlags::RST) {
            if self
                .rst
                .compare_exchange(0, side.code(), Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return false;
            }
            // The linger starts (segments still in flight from the other peer are
            // translated to the peer that reset, which answers them itself).
            let _ =
                self.closed_at
                    .compare_exchange(0, now.max(1), Ordering::AcqRel, Ordering::Relaxed);
            return !self.closing.swap(true, Ordering::AcqRel);
        }
        if let Some(end) = t.fin_end() {
            // A retransmitted FIN has the same end; the first stays.
            let _ = self.fin_end[i].compare_exchange(
                NO_FIN,
                u64::from(end),
                Ordering::SeqCst,
                Ordering::Relaxed,
            );
        }
        let end = self.fin_end[o].load(Ordering::Relaxed);
        if end == NO_FIN || !t.acknowledges(end as u32) || self.fin_acked[o].load(Ordering::Relaxed)
        {
            return false;
        }
        self.fin_acked[o].store(true, Ordering::SeqCst);
        // Both flags are stored and read SeqCst: of two lcores setting them at once, at
        // least one sees both.
        if !self.fin_acked[i].load(Ordering::SeqCst) {
            return false;
        }
        // Before `closing`: whoever sees `closing` sees the time too (0 means unset).
        let _ = self
            .closed_at
            .compare_exchange(0, now.max(1), Ordering::AcqRel, Ordering::Relaxed);
        !self.closing.swap(true, Ordering::AcqRel)
    }

    /// Accounts `packets` translated segments of direction `side` (0: counted later, in a
    /// batch), the last of which ends `end` bytes after the direction's start (modulo 2³²;
    /// one that ends at or before the start reads as negative and does not count) and
    /// carries `payload` bytes.
    #[inline(always)]
    pub(super) fn count(&self, side: Side, end: u32, payload: u32, packets: u64) {
        let c = &self.counts[side.index()];
        if packets > 0 {
            c.packets.fetch_add(packets, Ordering::Relaxed);
        }
        if payload > 0 && (end as i32) > 0 {
            let end = u64::from(end);
            // Only a segment that extends the direction pays for the read-modify-write.
            if end > c.high.load(Ordering::Relaxed) {
                c.high.fetch_max(end, Ordering::Relaxed);
            }
        }
    }

    /// Per direction, (bytes, packets).
    pub(super) fn totals(&self) -> [(u64, u64); 2] {
        self.counts.each_ref().map(|c| {
            (
                c.high.load(Ordering::Relaxed),
                c.packets.load(Ordering::Relaxed),
            )
        })
    }
}

/// The splice table of a process: every pair's two entries, shared by all NIC lcores.
///
/// Invariant: `len` counts pairs whose entries are (being) in the table, at most
/// `cfg.max_pairs`; a key maps to at most one pair.
pub struct SpliceTable {
    /// The entries by key: lookups take no lock; installs and removals take the lock of
    /// each key's shard ([`Key::shard`]), so a key's presence is decided under one lock.
    pub(super) index: RcuIndex<Indexed>,
    /// Shared with every lcore's chain ([`Offload::shared_activity`]).
    pub(super) len: Arc<AtomicUsize>,
    /// Bumped (release) after every removal: lcores' caches filled under an older value are
    /// cleared before their next lookup (see the module documentation).
    pub(super) epoch: AtomicU64,
    /// Presence counts: slot [`Key::filter_slot`] counts the keys in the table that map to
    /// it (a counting Bloom filter with one hash). A key whose count is 0 is in no shard, so
    /// the lookup of a segment that belongs to no pair, the common case while pairs are
    /// installed, ends here without a lock. Raised before a key enters its shard and
    /// lowered after it left (sequentially consistent), so a count of 0 never hides a key
    /// that an insert which has returned put there.
    pub(super) filter: Box<[AtomicU32]>,
    pub(super) cfg: SpliceConfig,
}

impl std::fmt::Debug for SpliceTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpliceTable")
            .field("pairs", &self.len())
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl SpliceTable {
    /// An empty table.
    pub fn new(cfg: SpliceConfig) -> Arc<SpliceTable> {
        Arc::new(SpliceTable {
            index: RcuIndex::new(index_buckets(cfg.max_pairs), SHARDS, BUCKET_SHIFT),
            len: Arc::new(AtomicUsize::new(0)),
            epoch: AtomicU64::new(0),
            filter: (0..filter_slots(cfg.max_pairs))
                .map(|_| AtomicU32::new(0))
                .collect(),
            cfg,
        })
    }

    /// False when no installed pair has key `k` (no lock: one load of its presence count);
    /// true when one may have it (then look it up).
    #[inline(always)]
    pub(super) fn may_contain(&self, k: Key) -> bool {
        self.filter[k.filter_slot(self.filter.len())].load(Ordering::SeqCst) != 0
    }

    /// Counts keys `ks` into the presence filter (`up`) or out of it.
    fn filter_count(&self, ks: &[Key], up: bool) {
        for k in ks {
            let c = &self.filter[k.filter_slot(self.filter.len())];
            if up {
                c.fetch_add(1, Ordering::SeqCst);
            } else {
                c.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Its settings.
    pub fn config(&self) -> SpliceConfig {
        self.cfg
    }

    /// Pairs installed.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// True without pairs.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when a segment from `src:sport` to `dst:dport` belongs to an installed pair
    /// (no lock).
    pub fn contains(&self, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> bool {
        let k = Key::new(src, sport, dst, dport);
        self.may_contain(k)
            && self
                .index
                .read(k.hash(), |e| (e.key == k).then_some(()))
                .is_some()
    }

    /// Installs pair `r` owned by no lcore (benchmarks: `nicemu fwd --splice`): it never
    /// times out and is never reported; its MACs must be given (no ARP here). `Ok`,
    /// `TableFull`, `Exists`, or `Invalid` when both sides arrive with the same 4-tuple.
    pub fn install_unowned(&self, r: &SpliceInstallRepr, now: u64) -> AckStatus {
        let (ab, ba) = directions(r);
        let keys = [Key::of(&ab), Key::of(&ba)];
        if keys[0] == keys[1] {
            return AckStatus::Invalid;
        }
        let pair = Arc::new(Pair::new(r, 0, keys, Arc::new(SegQueue::new()), now));
        self.insert(&pair, (ab, ba))
    }

    /// Inserts the entries of `p` with its directions `dirs` (A → B, B → A): `Exists` when
    /// either key is taken, `TableFull` at capacity.
    pub(super) fn insert(&self, p: &Arc<Pair>, dirs: (Dir, Dir)) -> AckStatus {
        let [k0, k1] = p.keys;
        let (s0, s1) = (k0.shard(), k1.shard());
        if self.len.fetch_add(1, Ordering::AcqRel) >= self.cfg.max_pairs {
            self.len.fetch_sub(1, Ordering::AcqRel);
            return AckStatus::TableFull;
        }
        // Counted in before either entry can be found (see `filter`).
        self.filter_count(&p.keys, true);
        let [e0, e1] = [(Side::A, dirs.0), (Side::B, dirs.1)].map(|(side, dir)| Indexed {
            key: p.keys[side.index()],
            mac: AtomicU64::new(0),
            entry: Entry {
                dir,
                side,
                start: p.starts[side.index()],
                unflushed: 0,
                pair: p.clone(),
            },
        });
        let has = |w: &super::rcu::Writer<'_, Indexed>, k: Key| w.any(k.hash(), |e| e.key == k);
        let status = if s0 == s1 {
            let mut w = self.index.lock(s0);
            if has(&w, k0) || has(&w, k1) {
                AckStatus::Exists
            } else {
                w.insert(k0.hash(), e0);
                w.insert(k1.hash(), e1);
                AckStatus::Ok
            }
        } else {
            // Two locks, taken in index order.
            let (lo, hi) = (s0.min(s1), s0.max(s1));
            let wl = self.index.lock(lo);
            let wh = self.index.lock(hi);
            let (mut w0, mut w1) = if s0 < s1 { (wl, wh) } else { (wh, wl) };
            if has(&w0, k0) || has(&w1, k1) {
                AckStatus::Exists
            } else {
                w0.insert(k0.hash(), e0);
                w1.insert(k1.hash(), e1);
                AckStatus::Ok
            }
        };
        if status != AckStatus::Ok {
            self.filter_count(&p.keys, false);
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
        status
    }

    /// Removes both entries of `p` (only those that still belong to `p`), then bumps the
    /// epoch so that no lcore's cache keeps them.
    pub(super) fn remove(&self, p: &Arc<Pair>) {
        let mut gone = false;
        for k in p.keys {
            let removed = self
                .index
                .lock(k.shard())
                .remove(k.hash(), |e| e.key == k && Arc::ptr_eq(&e.entry.pair, p));
            // Counted out once the entry has left the index (see `filter`).
            if removed {
                self.filter_count(&[k], false);
            }
            gone |= removed;
        }
        if gone {
            self.epoch.fetch_add(1, Ordering::Release);
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// A copy of the entry of `k`, read without a lock; its `dst_mac`, when the install
    /// left it zero, is the one an lcore already resolved for the entry, or else what `mac`
    /// finds (then kept for every lcore). Callers ask [`may_contain`](Self::may_contain)
    /// first.
    #[inline(never)]
    pub(super) fn fetch(&self, k: Key, mac: impl FnOnce(&Dir) -> Option<[u8; 6]>) -> Option<Entry> {
        let mut mac = Some(mac);
        self.index.read(k.hash(), |x| {
            if x.key != k {
                return None;
            }
            let mut e = x.entry.clone();
            if e.dir.dst_mac() == [0; 6] {
                let w = x.mac.load(Ordering::Acquire);
                if w & MAC_KNOWN != 0 {
                    e.dir.set_dst_mac(mac_of(w));
                } else if let Some(m) = mac.take().and_then(|f| f(&e.dir)) {
                    x.mac.store(mac_word(m), Ordering::Release);
                    e.dir.set_dst_mac(m);
                }
            }
            Some(e)
        })
    }
}

/// Slots of an lcore's cache of splice table entries (a power of two; direct-mapped).
pub const CACHE_SLOTS: usize = 512;

/// An lcore's cache of table entries (positive only; see the module documentation):
/// direct-mapped, a key in the slot its hash picks, so that a hit is one index and one
/// compare (no probe sequence). A key whose slot another key holds evicts it (the evicted
/// entry goes back to its owner, which adds its unflushed counts to the pair); a miss is
/// looked up in the table, so a collision costs speed, never a wrong translation.
pub(super) struct Cache {
    slots: Box<[Option<(Key, Entry)>; CACHE_SLOTS]>,
    /// Indices of the filled slots (cleared together).
    used: Vec<usize>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            slots: Box::new(std::array::from_fn(|_| None)),
            used: Vec::new(),
        }
    }
}

impl Cache {
    #[inline(always)]
    pub(super) fn slot(k: &Key) -> usize {
        k.hash() as usize & (CACHE_SLOTS - 1)
    }

    /// The entry of `k`, if cached.
    #[inline(always)]
    pub(super) fn get_mut(&mut self, k: &Key) -> Option<&mut Entry> {
        match &mut self.slots[Self::slot(k)] {
            Some((key, e)) if key == k => Some(e),
            _ => None,
        }
    }

    /// [`Cache::get_mut`] for a run of segments: `last` holds the key and slot of the
    /// previous lookup, so a segment of the same 4-tuple as the one before it (a burst from
    /// one flow, the common case) skips the hash. The slot's own key is still compared, so
    /// a stale `last` only costs the hash. Afterwards `last` holds `k` and its slot.
    #[inline(always)]
    pub(super) fn get_mut_after(&mut self, k: &Key, last: &mut (Key, usize)) -> Option<&mut Entry> {
        let i = if last.0 == *k {
            // Always a slot index (the mask only spares the bounds check).
            last.1 & (CACHE_SLOTS - 1)
        } else {
            let i = Self::slot(k);
            *last = (*k, i);
            i
        };
        match &mut self.slots[i] {
            Some((key, e)) if key == k => Some(e),
            _ => None,
        }
    }

    /// The entry in slot `i` (below [`CACHE_SLOTS`]), whatever its key.
    #[inline(always)]
    pub(super) fn at_mut(&mut self, i: usize) -> Option<&mut Entry> {
        self.slots.get_mut(i)?.as_mut().map(|(_, e)| e)
    }

    /// Caches `e` for `k`; returns the entry it evicted (another key's, or `k`'s own).
    pub(super) fn insert(&mut self, k: Key, e: Entry) -> Option<Entry> {
        let i = Self::slot(&k);
        let old = self.slots[i].replace((k, e));
        if old.is_none() {
            self.used.push(i);
        }
        old.map(|(_, e)| e)
    }

    /// Takes `k`'s entry out, if cached.
    pub(super) fn remove(&mut self, k: &Key) -> Option<Entry> {
        let slot = &mut self.slots[Self::slot(k)];
        match slot {
            Some((key, _)) if key == k => slot.take().map(|(_, e)| e),
            _ => None,
        }
    }

    /// Empties every slot.
    pub(super) fn clear(&mut self) {
        for i in self.used.drain(..) {
            self.slots[i] = None;
        }
    }
}

/// A timer of the owner: re-check pair `pair` at `at`.
pub(super) struct Timer {
    pub(super) at: u64,
    pub(super) seq: u64,
    pub(super) pair: Arc<Pair>,
}

impl PartialEq for Timer {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timer {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}
