//! AccelTCP's connection-splicing offload on the NIC (AccelTCP §4.3, Figure 7; App. A
//! "Connection splicing"; `docs/architecture.md`, "Splice offload").
//!
//! An L7 proxy that no longer needs to see a pair of connections hands both to the NIC with
//! one 0x090C splice install; from then on the NIC relays every segment of the pair by
//! rewriting its headers ([`offload_api::splice::translate`]) and sending it out of the other
//! side's port, without the host (zero DMA). The NIC follows the pair's teardown passively
//! and, once both FINs are acknowledged, a RST went through, or the pair idled out, removes
//! it and tells the host with a 0x090D closure report.
//!
//! - [`SpliceTable`]: the pairs, shared by every NIC lcore of a process (RSS may bring a
//!   pair's segments to any lcore): two entries per pair keyed by the arriving 4-tuple, in
//!   [`SHARDS`] independently locked hash maps, so that lcores rarely meet on a lock and a
//!   lookup is one multiply-hash and one probe. Made once per process
//!   ([`SharedOffloads::new`](super::SharedOffloads::new)) and handed to every lcore's
//!   [`SpliceOffload`].
//! - [`SpliceOffload`]: one lcore's view. `host_control` installs pairs and answers install
//!   acks; `wire_rx` and `host_tcp` translate; `poll` removes closed or idle pairs and sends
//!   the closure reports.
//!
//! Who reports: the lcore that installed a pair (its *owner*; the host core linked to it made
//! the `nsplice` call and keeps the pair's count). Any lcore may see the segment that closes
//! a pair; it marks the pair and pushes it onto the owner's inbox (a lock-free queue), and
//! the owner's next poll schedules the report after the linger time: after a FIN close a
//! retransmitted last FIN or ACK still gets translated; after a RST the segments the other
//! peer still had in flight reach the peer that reset, which answers them itself (without
//! the linger they would reach the host, which knows the connections no more). Idle timeouts run on the owner's
//! timer heap, re-armed lazily from the pair's last activity.
//!
//! No lock per segment: each direction's entry (its translation parameters) lives in its
//! shard, written only under that shard's lock (install, removal, the neighbour's MAC once
//! resolved); every lcore keeps a private cache of the entries it has used, and a segment
//! whose key is in that cache is translated without touching a lock. What a segment changes
//! is in the pair: per direction its byte and packet counters (each direction on its own
//! cache line; the lcore's fast path counts packets in its cache and adds them once per pair
//! and burst, a relaxed atomic add, and the high-water byte mark pays a read-modify-write
//! only when a segment extends it), and what the two directions share (FIN
//! ends and their acknowledgement, the RST side, the last activity), plain loads and stores
//! on the per-segment path. Only an install holds two shard locks, taken in index order.
//!
//! The cache's invariant (why an install ack may go out as soon as the entries are in the
//! shards): the cache holds only *positive* entries, copied under the shard's lock from an
//! entry that was in the table, and a key the cache lacks is always looked up in the shared
//! table under its lock. So once [`SpliceTable`]'s insert has returned — before the ack is
//! written — every lcore finds the pair on its next segment of it, whether its cache was
//! warm or not. Staleness can only be a removed pair: every removal bumps the table's
//! *epoch* (release) after taking the entries out, and every lookup first compares the
//! epoch (acquire; one plain load on x86) with the one its cache was filled under, clearing
//! the cache when they differ. A segment that an lcore translates concurrently with the
//! removal (it read the epoch just before the bump) is the same race as that segment
//! arriving a moment earlier; its counts may miss the closure report.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam::queue::SegQueue;
use offload_api::msg::{
    AckStatus, CloseReason, FourTuple, InstallAckRepr, Message, MsgType, SpliceCloseRepr,
    SpliceInstallRepr, SpliceSide, ETH_HEADER_LEN,
};
use offload_api::splice::{directions, translate, Dir, Side, Translated};
use offload_api::wire::tcp::TcpFlags;

use crate::buf::PacketBuf;
use crate::net::csum;
use crate::offload::{CounterSink, HostTcp, Offload, OffloadCtx, RxFrame, Verdict};

/// Number of independently locked shards of the [`SpliceTable`] (a power of two).
pub const SHARDS: usize = 64;

/// Settings of the splice table (`[offloads]` `splice_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpliceConfig {
    /// Most pairs installed at once, over all lcores; more are refused with
    /// [`AckStatus::TableFull`] (the host relays those itself).
    pub max_pairs: usize,
    /// A pair without any segment for this long is removed and reported
    /// ([`CloseReason::Timeout`]), nanoseconds.
    pub idle_timeout_ns: u64,
    /// How long a pair whose FINs were both acknowledged keeps translating (a retransmitted
    /// last FIN or ACK), nanoseconds.
    pub linger_ns: u64,
}

impl Default for SpliceConfig {
    /// 65,536 pairs, 60 s idle timeout, 1 s linger.
    fn default() -> Self {
        SpliceConfig {
            max_pairs: 65_536,
            idle_timeout_ns: 60_000_000_000,
            linger_ns: 1_000_000_000,
        }
    }
}

/// A table key: an arriving 4-tuple (source IP and port, destination IP and port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    ips: u64,
    ports: u32,
}

impl Key {
    fn new(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Key {
        Key {
            ips: (u64::from(u32::from_be_bytes(src)) << 32) | u64::from(u32::from_be_bytes(dst)),
            ports: (u32::from(sport) << 16) | u32::from(dport),
        }
    }

    fn of(d: &Dir) -> Key {
        let (s, sp, t, tp) = d.in_key();
        Key::new(s, sp, t, tp)
    }

    /// A 64-bit mix of the key (multiply-xorshift, as FxHash/wyhash do): good high and low
    /// bits, no SipHash on the per-packet path (the keys are not attacker-chosen beyond what
    /// the host accepted as connections).
    #[inline(always)]
    fn hash(self) -> u64 {
        let x = self.ips ^ (u64::from(self.ports)).rotate_left(29);
        let h = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }

    #[inline(always)]
    fn shard(self) -> usize {
        (self.hash() >> 40) as usize & (SHARDS - 1)
    }
}

impl std::hash::Hash for Key {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(Key::hash(*self));
    }
}

/// Passes the key's own mix through (it already is a good hash).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// One direction of a pair in its shard (and, copied, in an lcore's cache): how its segments
/// are translated.
#[derive(Clone, Debug)]
struct Entry {
    /// The translation (its `dst_mac` is filled in place once resolved).
    dir: Dir,
    /// The side segments of this direction arrive on.
    side: Side,
    /// Where this direction's relayed bytes start, in its arriving sequence space (the
    /// install's `a_start` / `b_start`).
    start: u32,
    /// In an lcore's cache: segments translated and not yet added to the pair's count (the
    /// lcore's fast path adds them once per burst, [`SpliceOffload::flush_counts`]); 0 in
    /// the table.
    unflushed: u64,
    pair: Arc<Pair>,
}

/// The traffic counters of one direction of a pair, alone on a cache line: the lcores that
/// RSS gives the two directions do not write each other's line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct DirCount {
    /// Bytes relayed, each once: one past the highest payload byte seen, as an offset from
    /// the direction's start (retransmissions, and bytes before the start that the host
    /// already took, do not count twice).
    high: AtomicU64,
    /// Segments translated.
    packets: AtomicU64,
}

type Shard = HashMap<Key, Entry, BuildHasherDefault<KeyHasher>>;

/// No FIN seen (FIN ends are 32-bit, so this value never is one).
const NO_FIN: u64 = u64::MAX;

/// One spliced pair: what both directions share, and its owner's inbox.
///
/// Invariant: `fin_acked[i]` implies `fin_end[i] != NO_FIN`; `closing` is set once, by the
/// segment that completed the FIN/FIN close or the first RST; `reported` is set once, by the
/// owner.
#[derive(Debug)]
struct Pair {
    request_id: u32,
    /// The port the host tagged the install with (the report goes back tagged so).
    host_port: u16,
    a: FourTuple,
    b: FourTuple,
    /// `[A's arriving key, B's arriving key]`.
    keys: [Key; 2],
    /// `[a_start, b_start]` of the install.
    starts: [u32; 2],
    /// The owner lcore's inbox (closures seen by any lcore).
    inbox: Arc<SegQueue<Arc<Pair>>>,
    /// Per direction (index of the arriving side): the end of its FIN in its arriving
    /// sequence space, or [`NO_FIN`] (AccelTCP §4.3 "Tracking teardown state").
    fin_end: [AtomicU64; 2],
    /// Per direction: the other direction acknowledged that FIN.
    fin_acked: [AtomicBool; 2],
    /// The side whose peer sent the first RST ([`Side::code`]), 0 without.
    rst: AtomicU8,
    /// Both FINs acknowledged or a RST: the owner was told.
    closing: AtomicBool,
    /// When the FIN/FIN close completed (0: not yet; set before `closing`).
    closed_at: AtomicU64,
    /// Time of the latest segment.
    last_activity: AtomicU64,
    /// The owner made the closure report.
    reported: AtomicBool,
    /// Per direction (index of the arriving side): bytes and segments.
    counts: [DirCount; 2],
}

impl Pair {
    fn new(
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
            counts: [DirCount::default(), DirCount::default()],
        }
    }

    /// Accounts the translated segment `t` of direction `side` at `now`; true when it closed
    /// the pair (the second FIN acknowledged, or the first RST).
    #[inline]
    fn observe(&self, side: Side, t: &Translated, now: u64) -> bool {
        self.last_activity.store(now, Ordering::Relaxed);
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
    fn count(&self, side: Side, end: u32, payload: u32, packets: u64) {
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
    fn totals(&self) -> [(u64, u64); 2] {
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
#[derive(Debug)]
pub struct SpliceTable {
    shards: Box<[Mutex<Shard>]>,
    /// Shared with every lcore's chain ([`Offload::shared_activity`]).
    len: Arc<AtomicUsize>,
    /// Bumped (release) after every removal: lcores' caches filled under an older value are
    /// cleared before their next lookup (see the module documentation).
    epoch: AtomicU64,
    cfg: SpliceConfig,
}

impl SpliceTable {
    /// An empty table.
    pub fn new(cfg: SpliceConfig) -> Arc<SpliceTable> {
        Arc::new(SpliceTable {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            len: Arc::new(AtomicUsize::new(0)),
            epoch: AtomicU64::new(0),
            cfg,
        })
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

    fn shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when a segment from `src:sport` to `dst:dport` belongs to an installed pair.
    pub fn contains(&self, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> bool {
        let k = Key::new(src, sport, dst, dport);
        self.shard(k.shard()).contains_key(&k)
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
    fn insert(&self, p: &Arc<Pair>, dirs: (Dir, Dir)) -> AckStatus {
        let [k0, k1] = p.keys;
        let (s0, s1) = (k0.shard(), k1.shard());
        if self.len.fetch_add(1, Ordering::AcqRel) >= self.cfg.max_pairs {
            self.len.fetch_sub(1, Ordering::AcqRel);
            return AckStatus::TableFull;
        }
        let [e0, e1] = [(Side::A, dirs.0), (Side::B, dirs.1)].map(|(side, dir)| Entry {
            dir,
            side,
            start: p.starts[side.index()],
            unflushed: 0,
            pair: p.clone(),
        });
        let status = if s0 == s1 {
            let mut g = self.shard(s0);
            if g.contains_key(&k0) || g.contains_key(&k1) {
                AckStatus::Exists
            } else {
                g.insert(k0, e0);
                g.insert(k1, e1);
                AckStatus::Ok
            }
        } else {
            let (lo, hi) = (s0.min(s1), s0.max(s1));
            let mut gl = self.shard(lo);
            let mut gh = self.shard(hi);
            let (g0, g1) = if s0 < s1 {
                (&mut gl, &mut gh)
            } else {
                (&mut gh, &mut gl)
            };
            if g0.contains_key(&k0) || g1.contains_key(&k1) {
                AckStatus::Exists
            } else {
                g0.insert(k0, e0);
                g1.insert(k1, e1);
                AckStatus::Ok
            }
        };
        if status != AckStatus::Ok {
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
        status
    }

    /// Removes both entries of `p` (only those that still belong to `p`), then bumps the
    /// epoch so that no lcore's cache keeps them.
    fn remove(&self, p: &Arc<Pair>) {
        let mut gone = false;
        for k in p.keys {
            let e = {
                let mut g = self.shard(k.shard());
                match g.get(&k) {
                    Some(e) if Arc::ptr_eq(&e.pair, p) => g.remove(&k),
                    _ => None,
                }
            };
            gone |= e.is_some();
        }
        if gone {
            self.epoch.fetch_add(1, Ordering::Release);
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// A copy of the entry of `k`, under its shard's lock; its `dst_mac`, when still zero,
    /// is filled from `mac` (and so for every lcore) when that finds one.
    #[inline(never)]
    fn fetch(&self, k: Key, mac: impl FnOnce(&Dir) -> Option<[u8; 6]>) -> Option<Entry> {
        let mut g = self.shard(k.shard());
        let e = g.get_mut(&k)?;
        if e.dir.dst_mac == [0; 6] {
            if let Some(m) = mac(&e.dir) {
                e.dir.dst_mac = m;
            }
        }
        Some(e.clone())
    }
}

/// An lcore's cache of table entries (positive only; see the module documentation).
type Cache = HashMap<Key, Entry, BuildHasherDefault<KeyHasher>>;

/// Counters of one lcore's splice offload (`active_pairs` is the process-wide table size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpliceStats {
    /// Pairs installed by this lcore.
    pub installs: u64,
    /// Installs refused: table full.
    pub refused_full: u64,
    /// Installs refused: a 4-tuple already spliced.
    pub refused_exists: u64,
    /// Installs refused: bad fields (window scale, ports, identical tuples), or a message
    /// that did not parse.
    pub refused_invalid: u64,
    /// Segments translated A → B (wire and host).
    pub translated_ab: u64,
    /// Segments translated B → A (wire and host).
    pub translated_ba: u64,
    /// Of those, segments from the host (`host_tcp` and install payloads).
    pub from_host: u64,
    /// Pairs closed by FIN/FIN (reported by this lcore).
    pub closed_fin: u64,
    /// Pairs closed by a RST (reported by this lcore).
    pub closed_rst: u64,
    /// Pairs removed after the idle timeout (reported by this lcore).
    pub closed_idle: u64,
    /// Segments of a pair that did not translate (malformed headers or options): dropped.
    pub malformed: u64,
    /// Segments dropped because the out side's neighbour MAC is not known yet (resolution
    /// started; TCP retransmits).
    pub arp_miss: u64,
    /// Segments that left with a timestamp option made NOPs (out side without timestamps).
    pub ts_stripped: u64,
    /// Segments that left without timestamps towards a side that has them (RFC 7323 §3.2).
    pub ts_missing: u64,
    /// Segments that left with a SACK option made NOPs.
    pub sack_stripped: u64,
    /// Closure reports sent to the host.
    pub reports_sent: u64,
    /// Install acks or reports the link did not take (reports are retried).
    pub send_failed: u64,
}

/// A timer of the owner: re-check pair `pair` at `at`.
struct Timer {
    at: u64,
    seq: u64,
    pair: Arc<Pair>,
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

/// What happened to a segment offered to a pair.
#[derive(Clone, Copy)]
enum Outcome {
    /// Translated: send out of this port. `closed`: it closed the pair (tell the owner).
    Out { port: u16, closed: bool },
    /// Dropped: malformed.
    Malformed,
    /// Dropped: out MAC unknown.
    ArpMiss,
}

/// One NIC lcore's splice offload over the process's [`SpliceTable`] (AccelTCP §4.3).
pub struct SpliceOffload {
    table: Arc<SpliceTable>,
    inbox: Arc<SegQueue<Arc<Pair>>>,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    /// Pairs this lcore installed and has not reported yet (their timers may outlive them:
    /// a reported pair's timer is dropped when it comes due, or all at once when this
    /// reaches 0).
    owned: usize,
    /// Reports not yet taken by the link: (port, report).
    pending: VecDeque<(u16, SpliceCloseRepr)>,
    stats: SpliceStats,
    scratch: Vec<u8>,
    /// Entries this lcore has used, valid while the table's epoch is `cache_epoch`.
    cache: Cache,
    cache_epoch: u64,
    /// Keys of cached entries with unflushed counts.
    dirty: Vec<Key>,
}

impl std::fmt::Debug for SpliceOffload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpliceOffload")
            .field("pairs", &self.table.len())
            .field("owned_timers", &self.timers.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl Default for SpliceOffload {
    /// An offload over a table of its own with [`SpliceConfig::default`] (one-lcore nodes).
    fn default() -> Self {
        SpliceOffload::new(SpliceTable::new(SpliceConfig::default()))
    }
}

/// The result of an install, before the ack.
type InstallResult = Result<Arc<Pair>, AckStatus>;

impl SpliceOffload {
    /// An lcore's offload over the shared `table`.
    pub fn new(table: Arc<SpliceTable>) -> SpliceOffload {
        SpliceOffload {
            table,
            inbox: Arc::new(SegQueue::new()),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            owned: 0,
            pending: VecDeque::new(),
            stats: SpliceStats::default(),
            scratch: Vec::with_capacity(128),
            cache: Cache::default(),
            cache_epoch: 0,
            dirty: Vec::new(),
        }
    }

    /// The shared table.
    pub fn table(&self) -> &Arc<SpliceTable> {
        &self.table
    }

    /// This lcore's counters.
    pub fn stats(&self) -> &SpliceStats {
        &self.stats
    }

    fn arm(&mut self, at: u64, pair: Arc<Pair>) {
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            at,
            seq: self.timer_seq,
            pair,
        }));
    }

    /// Fills a side's zero MACs: ours from the port, the peer's from the ARP table (starting
    /// resolution on a miss; the first segments then wait for it).
    fn fill_macs<B: PacketBuf>(cx: &mut OffloadCtx<'_, B>, s: &mut SpliceSide) {
        let p = usize::from(s.port);
        if s.local_mac == [0; 6] {
            s.local_mac = cx.stack.iface(p).mac;
        }
        if s.remote_mac == [0; 6] {
            match cx.stack.arp_lookup(p, s.tuple.remote_ip, cx.now) {
                Some(m) => s.remote_mac = m,
                None => cx.stack.resolve(p, s.tuple.remote_ip, cx.now),
            }
        }
    }

    fn install<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        mut r: SpliceInstallRepr,
    ) -> InstallResult {
        let ports = cx.stack.ports();
        let ka = Key::new(
            r.a.tuple.remote_ip,
            r.a.tuple.remote_port,
            r.a.tuple.local_ip,
            r.a.tuple.local_port,
        );
        let kb = Key::new(
            r.b.tuple.remote_ip,
            r.b.tuple.remote_port,
            r.b.tuple.local_ip,
            r.b.tuple.local_port,
        );
        if usize::from(r.a.port) >= ports || usize::from(r.b.port) >= ports || ka == kb {
            return Err(AckStatus::Invalid);
        }
        Self::fill_macs(cx, &mut r.a);
        Self::fill_macs(cx, &mut r.b);
        let (ab, ba) = directions(&r);
        let keys = [Key::of(&ab), Key::of(&ba)];
        let pair = Arc::new(Pair::new(&r, port, keys, self.inbox.clone(), cx.now));
        match self.table.insert(&pair, (ab, ba)) {
            AckStatus::Ok => Ok(pair),
            s => Err(s),
        }
    }

    fn ack<B: PacketBuf>(&mut self, cx: &mut OffloadCtx<'_, B>, port: u16, id: u32, s: AckStatus) {
        let m = Message::InstallAck(InstallAckRepr {
            request_id: id,
            request_type: MsgType::SpliceInstall,
            status: s,
        });
        if m.write_frame([0; 6], [0; 6], &[], &mut self.scratch)
            .is_err()
            || !cx.io.to_host(port, &self.scratch)
        {
            self.stats.send_failed += 1;
        }
    }

    /// Translates the segment in `frame` (TCP at `l4_off`) with entry `e` (its out MAC
    /// resolved, or left zero for the host path to fill) and follows the pair's state.
    /// `batch`: count the segment in `e.unflushed` (an lcore's cached entry) rather than in
    /// the pair, except when it closes the pair (the owner may report right away).
    #[inline(always)]
    fn process(
        stats: &mut SpliceStats,
        now: u64,
        e: &mut Entry,
        frame: &mut [u8],
        l4_off: usize,
        batch: bool,
    ) -> Outcome {
        let t: Translated = match translate(frame, l4_off, &e.dir) {
            Ok(t) => t,
            Err(_) => {
                stats.malformed += 1;
                return Outcome::Malformed;
            }
        };
        match e.side {
            Side::A => stats.translated_ab += 1,
            Side::B => stats.translated_ba += 1,
        }
        if t.ts_stripped | t.ts_missing | t.sack_stripped {
            stats.ts_stripped += u64::from(t.ts_stripped);
            stats.ts_missing += u64::from(t.ts_missing);
            stats.sack_stripped += u64::from(t.sack_stripped);
        }
        // The segment's end as an offset from `start`, modulo 2³².
        let end = t.seq_in.wrapping_add(t.payload_len).wrapping_sub(e.start);
        let packets = if batch {
            e.unflushed += 1;
            0
        } else {
            1
        };
        e.pair.count(e.side, end, t.payload_len, packets);
        let closed = e.pair.observe(e.side, &t, now);
        if closed && e.unflushed > 0 {
            e.pair.count(e.side, 0, 0, std::mem::take(&mut e.unflushed));
        }
        Outcome::Out {
            port: t.out_port,
            // A RST is forwarded; the entries go after the linger (AccelTCP §4.3: "if it
            // is reset by any peer, the NIC stack removes the forwarding rule entries").
            closed,
        }
    }

    /// Offers a segment with arriving 4-tuple `k` to the table: from this lcore's cache
    /// when it holds `k` (no lock), else from the shared table (one shard lock; the entry
    /// is then cached once its out MAC is known). `from_host`: without the out side's MAC,
    /// send with a zero MAC for the host path to resolve rather than drop (wire frames).
    #[inline]
    fn offer<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        k: Key,
        frame: &mut [u8],
        l4_off: usize,
        from_host: bool,
        batch: bool,
    ) -> Option<Outcome> {
        let epoch = self.table.epoch.load(Ordering::Acquire);
        if epoch != self.cache_epoch {
            self.flush_counts();
            self.cache.clear();
            self.cache_epoch = epoch;
        }
        let now = cx.now;
        let (out, closed) = match self.cache.get_mut(&k) {
            Some(e) => {
                let o = Self::process(&mut self.stats, now, e, frame, l4_off, batch);
                if e.unflushed == 1 {
                    self.dirty.push(k);
                }
                (
                    o,
                    matches!(o, Outcome::Out { closed: true, .. }).then(|| e.pair.clone()),
                )
            }
            None => {
                let stack = &mut *cx.stack;
                let e = self.table.fetch(k, |d| {
                    stack.arp_lookup(usize::from(d.out_port), d.out_dst_ip, now)
                })?;
                if e.dir.dst_mac == [0; 6] && !from_host {
                    cx.stack
                        .resolve(usize::from(e.dir.out_port), e.dir.out_dst_ip, now);
                    self.stats.arp_miss += 1;
                    return Some(Outcome::ArpMiss);
                }
                let mut e = e;
                let o = Self::process(&mut self.stats, now, &mut e, frame, l4_off, false);
                let closed = matches!(o, Outcome::Out { closed: true, .. }).then(|| e.pair.clone());
                if e.dir.dst_mac != [0; 6] {
                    self.cache.insert(k, e);
                }
                (o, closed)
            }
        };
        if let Some(p) = closed {
            p.inbox.push(p.clone());
        }
        if from_host && matches!(out, Outcome::Out { .. }) {
            self.stats.from_host += 1;
        }
        Some(out)
    }

    /// Adds the segments [`SpliceOffload::wire_fast`] counted in this lcore's cache to their
    /// pairs: one atomic add per pair and burst instead of one per segment. The lcore calls
    /// it after each burst, so a pair's count lags by at most the burst in flight (as a
    /// segment translated concurrently with the pair's removal does).
    pub fn flush_counts(&mut self) {
        for k in self.dirty.drain(..) {
            if let Some(e) = self.cache.get_mut(&k) {
                let n = std::mem::take(&mut e.unflushed);
                if n > 0 {
                    e.pair.count(e.side, 0, 0, n);
                }
            }
        }
    }

    /// The splice fast path of a NIC lcore (AccelTCP §4.3): a wire frame that is IPv4
    /// without options, not a fragment, TCP, to a spliced 4-tuple — recognised by reading
    /// its headers at fixed offsets, without the NIC stack's parse — is translated in place.
    /// `None`: not such a frame, or no pair's (unchanged; it takes the lcore's general
    /// path, as every frame did before this path existed).
    /// `Some(Verdict::Out(port))`: send it out of `port`; `Some(Verdict::Consumed)`: dropped
    /// and counted (malformed, or the out side's MAC unknown).
    ///
    /// The segment's checksums are not verified here, unlike on the general receive path:
    /// the translation updates both checksums differentially (RFC 1624 eqn. 3; AccelTCP
    /// Figure 8), which adds the same one's-complement change to a wrong checksum as to a
    /// right one, so a corrupt segment leaves exactly as corrupt as it arrived and the
    /// receiving peer's TCP drops it (RFC 9293 §3.1: "a segment with an invalid checksum is
    /// discarded"). Verifying would only move that drop from the peer to the NIC; it is why
    /// AccelTCP's NIC relays spliced segments without touching their payload (§4.3).
    #[inline]
    pub fn wire_fast<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        frame: &mut [u8],
    ) -> Option<Verdict> {
        let h = frame.get(..ETH_HEADER_LEN + 24)?;
        // EtherType IPv4, version 4 with a 20-byte header, no fragment, protocol TCP.
        if h[12..15] != [0x08, 0x00, 0x45] || h[20] & 0x3f != 0 || h[21] != 0 || h[23] != 6 {
            return None;
        }
        let k = Key::new(
            [h[26], h[27], h[28], h[29]],
            u16::from_be_bytes([h[34], h[35]]),
            [h[30], h[31], h[32], h[33]],
            u16::from_be_bytes([h[36], h[37]]),
        );
        match self.offer(cx, k, frame, ETH_HEADER_LEN + 20, false, true)? {
            Outcome::Out { port, .. } => Some(Verdict::Out(port)),
            Outcome::Malformed | Outcome::ArpMiss => Some(Verdict::Consumed),
        }
    }

    /// The optional packet after an install's header: a segment of either connection that
    /// the host kept. A peer's segment (arriving 4-tuple) is translated; the host's own
    /// segment on a side goes out as is. Checksums are filled in full: the host leaves them
    /// to the NIC.
    fn install_payload<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        r: &SpliceInstallRepr,
        payload: &[u8],
    ) {
        let mut f = std::mem::take(&mut self.scratch);
        f.clear();
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&offload_api::ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(payload);
        let Some(t) = HostTcp::find(&f) else {
            self.stats.malformed += 1;
            self.scratch = f;
            return;
        };
        let ports = f.get(t.l4_off..t.l4_off + 4).map(|b| {
            (
                u16::from_be_bytes([b[0], b[1]]),
                u16::from_be_bytes([b[2], b[3]]),
            )
        });
        let Some((sport, dport)) = ports else {
            self.stats.malformed += 1;
            self.scratch = f;
            return;
        };
        let k = Key::new(t.src, sport, t.dst, dport);
        let out = match self.offer(cx, k, &mut f, t.l4_off, true, false) {
            Some(Outcome::Out { port, .. }) => Some(port),
            Some(_) => None,
            None => {
                // The host's own segment on one side: its source is our local address there.
                let own = |s: &SpliceSide| {
                    let u = s.tuple;
                    (u.local_ip, u.local_port, u.remote_ip, u.remote_port)
                        == (t.src, sport, t.dst, dport)
                };
                let side = [r.a, r.b].into_iter().find(own);
                match side {
                    Some(mut s) => {
                        Self::fill_macs(cx, &mut s);
                        let dst = if s.remote_mac == [0; 6] {
                            self.stats.arp_miss += 1;
                            [0xff; 6]
                        } else {
                            s.remote_mac
                        };
                        f[0..6].copy_from_slice(&dst);
                        f[6..12].copy_from_slice(&s.local_mac);
                        Some(s.port)
                    }
                    None => {
                        self.stats.malformed += 1;
                        None
                    }
                }
            }
        };
        if let Some(port) = out {
            if f[0..6] == [0; 6] {
                f[0..6].copy_from_slice(&[0xff; 6]);
            }
            if csum::fill_checksums(&mut f).is_err() || !cx.io.to_port(port, &f) {
                self.stats.send_failed += 1;
            }
        }
        self.scratch = f;
    }

    /// Removes `p` (if still there) and queues its report, once.
    fn close(&mut self, p: &Arc<Pair>, reason: CloseReason) {
        if p.reported.swap(true, Ordering::AcqRel) {
            return;
        }
        self.table.remove(p);
        self.owned = self.owned.saturating_sub(1);
        if self.owned == 0 {
            self.timers.clear();
        }
        match reason {
            CloseReason::Fin => self.stats.closed_fin += 1,
            CloseReason::Rst => self.stats.closed_rst += 1,
            CloseReason::Timeout => self.stats.closed_idle += 1,
        }
        let [(bytes_ab, packets_ab), (bytes_ba, packets_ba)] = p.totals();
        self.pending.push_back((
            p.host_port,
            SpliceCloseRepr {
                request_id: p.request_id,
                reason,
                rst_side: p.rst.load(Ordering::Acquire),
                a: p.a,
                b: p.b,
                bytes_ab,
                bytes_ba,
                packets_ab,
                packets_ba,
            },
        ));
    }

    /// Sends queued reports while the link takes them.
    fn flush_reports<B: PacketBuf>(&mut self, cx: &mut OffloadCtx<'_, B>) {
        while let Some(&(port, r)) = self.pending.front() {
            let m = Message::SpliceClose(r);
            if m.write_frame([0; 6], [0; 6], &[], &mut self.scratch)
                .is_err()
                || !cx.io.to_host(port, &self.scratch)
            {
                self.stats.send_failed += 1;
                return;
            }
            self.pending.pop_front();
            self.stats.reports_sent += 1;
        }
    }
}

impl<B: PacketBuf> Offload<B> for SpliceOffload {
    fn name(&self) -> &'static str {
        "splice"
    }

    /// Active while any lcore's pair is installed, or this lcore owns pairs or has reports
    /// to send.
    #[inline]
    fn active(&self) -> bool {
        !self.table.is_empty() || self.owned > 0 || !self.pending.is_empty()
    }

    /// Segments of a spliced pair are translated and leave by the other side's port; a
    /// segment that does not translate is dropped and counted.
    #[inline]
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let Some(t) = rx.tcp() else {
            return Verdict::Pass;
        };
        let Some(p) = t.seg.get(0..4) else {
            return Verdict::Pass;
        };
        let k = Key::new(
            t.src,
            u16::from_be_bytes([p[0], p[1]]),
            t.dst,
            u16::from_be_bytes([p[2], p[3]]),
        );
        let l4_off = t.l4_off;
        match self.offer(cx, k, rx.buf.data_mut(), l4_off, false, false) {
            None => Verdict::Pass,
            Some(Outcome::Out { port, .. }) => Verdict::Out(port),
            Some(Outcome::Malformed | Outcome::ArpMiss) => Verdict::Consumed,
        }
    }

    /// Splice installs (0x090C), answered with an install ack tagged with the install's
    /// port (as the closure report will be). The install's optional packet goes out only
    /// when the install succeeded; otherwise the host still owns both connections.
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        if msg != MsgType::SpliceInstall {
            return Verdict::Pass;
        }
        let parsed = offload_api::msg::parse_frame(frame);
        let (r, payload) = match parsed {
            Ok(p) => match p.message {
                Message::SpliceInstall(r) => (r, p.payload),
                _ => return Verdict::Consumed,
            },
            Err(_) => {
                self.stats.refused_invalid += 1;
                // The request id, when the header is long enough to hold one.
                if let Some(b) = frame.get(ETH_HEADER_LEN + 4..ETH_HEADER_LEN + 8) {
                    let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    self.ack(cx, port, id, AckStatus::Invalid);
                }
                return Verdict::Consumed;
            }
        };
        let status = match self.install(cx, port, r) {
            Ok(pair) => {
                self.stats.installs += 1;
                self.owned += 1;
                let at = cx.now.saturating_add(self.table.cfg.idle_timeout_ns);
                self.arm(at, pair);
                AckStatus::Ok
            }
            Err(s) => {
                match s {
                    AckStatus::TableFull => self.stats.refused_full += 1,
                    AckStatus::Exists => self.stats.refused_exists += 1,
                    _ => self.stats.refused_invalid += 1,
                }
                s
            }
        };
        self.ack(cx, port, r.request_id, status);
        if status == AckStatus::Ok && !payload.is_empty() {
            self.install_payload(cx, &r, payload);
        }
        Verdict::Consumed
    }

    /// Segments the host kept during the handover (a pair's arriving 4-tuple) are translated
    /// and leave by the other side's port; the lcore then fills their checksums (and
    /// segments them) as for any host frame.
    fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        _port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        let Some(p) = frame.get(tcp.l4_off..tcp.l4_off + 4) else {
            return Verdict::Pass;
        };
        let k = Key::new(
            tcp.src,
            u16::from_be_bytes([p[0], p[1]]),
            tcp.dst,
            u16::from_be_bytes([p[2], p[3]]),
        );
        match self.offer(cx, k, frame, tcp.l4_off, true, false) {
            None => Verdict::Pass,
            Some(Outcome::Out { port, .. }) => Verdict::Out(port),
            Some(Outcome::Malformed | Outcome::ArpMiss) => Verdict::Consumed,
        }
    }

    /// Closures other lcores saw, due linger ends and idle checks, then the reports.
    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let linger = self.table.cfg.linger_ns;
        let idle = self.table.cfg.idle_timeout_ns;
        while let Some(p) = self.inbox.pop() {
            let at = p.closed_at.load(Ordering::Acquire);
            self.arm(at.saturating_add(linger), p);
        }
        while self.timers.peek().is_some_and(|t| t.0.at <= cx.now) {
            let Some(Reverse(t)) = self.timers.pop() else {
                break;
            };
            let p = t.pair;
            if p.reported.load(Ordering::Acquire) {
                continue;
            }
            if p.closing.load(Ordering::Acquire) {
                let due = p.closed_at.load(Ordering::Acquire).saturating_add(linger);
                if due <= cx.now {
                    let reason = if p.rst.load(Ordering::Acquire) != 0 {
                        CloseReason::Rst
                    } else {
                        CloseReason::Fin
                    };
                    self.close(&p, reason);
                } else {
                    self.arm(due, p);
                }
            } else {
                let due = p.last_activity.load(Ordering::Relaxed).saturating_add(idle);
                if due <= cx.now {
                    self.close(&p, CloseReason::Timeout);
                } else {
                    self.arm(due, p);
                }
            }
        }
        self.flush_reports(cx);
    }

    /// The table's pair count: another lcore's install makes this one translate too.
    fn shared_activity(&self) -> Option<Arc<AtomicUsize>> {
        Some(self.table.len.clone())
    }

    /// Now while closures or reports wait; else the earliest timer.
    fn next_deadline(&self) -> Option<u64> {
        if !self.inbox.is_empty() || !self.pending.is_empty() {
            return Some(0);
        }
        self.timers.peek().map(|t| t.0.at)
    }

    fn counters(&self, out: CounterSink<'_>) {
        let s = &self.stats;
        let all = [
            ("active_pairs", self.table.len() as u64),
            ("installs", s.installs),
            ("refused_full", s.refused_full),
            ("refused_exists", s.refused_exists),
            ("refused_invalid", s.refused_invalid),
            ("translated_ab", s.translated_ab),
            ("translated_ba", s.translated_ba),
            ("from_host", s.from_host),
            ("closed_fin", s.closed_fin),
            ("closed_rst", s.closed_rst),
            ("closed_idle", s.closed_idle),
            ("malformed", s.malformed),
            ("arp_miss", s.arp_miss),
            ("ts_stripped", s.ts_stripped),
            ("ts_missing", s.ts_missing),
            ("sack_stripped", s.sack_stripped),
            ("reports_sent", s.reports_sent),
            ("send_failed", s.send_failed),
        ];
        for (n, v) in all {
            out(n, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_shards() {
        let mut seen = [0usize; SHARDS];
        for i in 0..4096u32 {
            let k = Key::new([10, 0, 0, 1], 40_000 + (i as u16), [10, 0, 0, 2], 80);
            seen[k.shard()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
    }
}
