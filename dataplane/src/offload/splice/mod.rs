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
//!   a chained hash index that lookups read without a lock (read-copy-update with epoch
//!   reclamation, `rcu`) and installs and removals change under one of [`SHARDS`] locks,
//!   so a lookup is one multiply-hash and a short chain walk. Made once per process
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
//! the linger they would reach the host, which knows the connections no more). A new
//! connection's SYN on a lingering pair's 4-tuple ends the pair at once
//! (`SpliceOffload::reopen`). Idle timeouts run on the owner's timer heap, re-armed lazily
//! from the pair's last activity.
//!
//! No lock on the read path: each direction's entry (its translation parameters) is linked
//! into the index by an install and unlinked by a removal, each under its shard's lock, and
//! never changed while linked (the neighbour's MAC, once an lcore resolved it, sits beside
//! it in an atomic word). A lookup pins the epoch and walks the key's chain, no store to a
//! shared line. Every lcore also keeps a private cache of the entries it has used
//! (direct-mapped: a hit is one index and one key compare), and a segment whose key is in
//! that cache is translated without even that walk. What a segment changes is in the pair: per
//! direction its byte and packet counters (each direction on its own cache line; the
//! lcore's fast path counts packets in its cache and adds them once per pair and burst, a
//! relaxed atomic add, and the high-water byte mark pays a read-modify-write
//! only when a segment extends it), and what the two directions share (FIN
//! ends and their acknowledgement, the RST side, the last activity), plain loads and stores
//! on the per-segment path. Only an install holds two shard locks, taken in index order.
//!
//! A segment of no pair (most of a proxy's traffic while pairs are installed) misses the
//! cache, and the table's *presence filter* answers it: one count per slot of the keys in
//! the table that hash there (a counting Bloom filter with one hash), read with one atomic
//! load. Only a key whose slot is taken (by it, or by a colliding key) is looked up in the
//! index.
//!
//! The cache's invariant (why an install ack may go out as soon as the entries are in the
//! index): the cache holds only *positive* entries, copied from an entry that was linked in
//! the index, and a key the cache lacks is always looked up in the index unless the filter
//! shows it absent; the filter counts a key in
//! before its entry enters the shard and out after it left. So once [`SpliceTable`]'s
//! insert has returned — before the ack is written — every lcore finds the pair on its next
//! segment of it, whether its cache was warm or not. Staleness can only be a removed pair: every removal bumps the table's
//! *epoch* (release) after unlinking the entries, and every lookup first compares the
//! epoch (acquire; one plain load on x86) with the one its cache was filled under, clearing
//! the cache when they differ; a lookup after that acquire no longer finds the unlinked
//! entries (the unlink happened before the bump). A segment that an lcore translates concurrently with the
//! removal (it read the epoch just before the bump) is the same race as that segment
//! arriving a moment earlier; its counts may miss the closure report.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam::queue::SegQueue;
use offload_api::msg::{
    AckStatus, CloseReason, FourTuple, InstallAckRepr, Message, MsgType, SpliceCloseRepr,
    SpliceInstallRepr, SpliceSide, ETH_HEADER_LEN,
};
use offload_api::splice::{directions, translate, translate_established, Dir, Side, Translated};
use offload_api::wire::tcp::TcpFlags;

use crate::buf::PacketBuf;
use crate::net::csum;
use crate::offload::{BurstVerdicts, CounterSink, HostTcp, Offload, OffloadCtx, RxFrame, Verdict};

mod hooks;
mod rcu;
mod table;
use table::*;
pub use table::{SpliceTable, CACHE_SLOTS};

/// Number of independently locked shards of the [`SpliceTable`]'s writers (a power of two;
/// lookups take no lock).
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
    /// Lingering pairs (both FINs acknowledged, or a RST) ended early because a new
    /// connection's SYN arrived on one of their 4-tuples (RFC 9293 §3.10.7.4: a SYN may
    /// open a new incarnation of a connection in TIME-WAIT; RFC 6191).
    pub reopened: u64,
    /// Of those SYNs, the ones dropped rather than passed to the host: the pair's report
    /// could not go first (another lcore owns the pair, or the host link was full). The
    /// peer retransmits its SYN; by then the pair is gone.
    pub reopen_syn_dropped: u64,
    /// Closure reports sent to the host.
    pub reports_sent: u64,
    /// Install acks or reports the link did not take (reports are retried).
    pub send_failed: u64,
    /// Segments missing from this lcore's cache that were looked up in the shared table
    /// (a chain walk, no lock): the first of a pair on this lcore, and segments of no pair
    /// that the table's presence filter could not rule out. The other segments of no pair
    /// ended at the filter.
    pub table_lookups: u64,
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
    /// Dropped: a new connection's SYN on a lingering pair whose report could not go to
    /// the host before it ([`SpliceStats::reopen_syn_dropped`]).
    SynHeld,
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
    /// Cache slots whose entries have unflushed counts (a slot may appear twice, when its
    /// entry was evicted and flushed and another took the slot; the second flush finds
    /// nothing to add).
    dirty: Vec<usize>,
    /// The time of the burst or segment in hand (the activity `flush_counts` notes).
    now: u64,
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
            now: 0,
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

    /// The slot of an lcore's entry cache that a segment from `src:sport` to `dst:dport`
    /// takes (below [`CACHE_SLOTS`]): for tests that make entries evict each other.
    pub fn cache_slot(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> usize {
        Cache::slot(&Key::new(src, sport, dst, dport))
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
    /// `batch` (the burst fast path, [`SpliceOffload::wire_fast`]): count the segment in
    /// `e.unflushed` (an lcore's cached entry) rather than in the pair, except when it
    /// closes the pair (the owner may report right away); and translate without the header
    /// checks that path has made.
    #[inline(always)]
    fn process(
        stats: &mut SpliceStats,
        now: u64,
        e: &mut Entry,
        frame: &mut [u8],
        l4_off: usize,
        batch: bool,
    ) -> Outcome {
        // The fast path (`batch`) has checked the Ethernet and IPv4 headers at the fixed
        // offsets and found `e` by the frame's own 4-tuple: the established shape needs
        // only its TCP checks.
        let established = if batch {
            translate_established(frame, &e.dir)
        } else {
            None
        };
        let t: Translated = match established {
            Some(t) => t,
            None => match translate(frame, l4_off, &e.dir) {
                Ok(t) => t,
                Err(_) => {
                    stats.malformed += 1;
                    return Outcome::Malformed;
                }
            },
        };
        if t.ts_stripped | t.ts_missing | t.sack_stripped {
            stats.ts_stripped += u64::from(t.ts_stripped);
            stats.ts_missing += u64::from(t.ts_missing);
            stats.sack_stripped += u64::from(t.sack_stripped);
        }
        let closed = Self::account(stats, now, e, &t, batch);
        Outcome::Out {
            port: t.out_port,
            // A RST is forwarded; the entries go after the linger (AccelTCP §4.3: "if it
            // is reset by any peer, the NIC stack removes the forwarding rule entries").
            closed,
        }
    }

    /// Counts translated segment `t` of entry `e` and follows the pair's teardown; true
    /// when it closed the pair. `batch`: as [`SpliceOffload::process`].
    #[inline(always)]
    fn account(
        stats: &mut SpliceStats,
        now: u64,
        e: &mut Entry,
        t: &Translated,
        batch: bool,
    ) -> bool {
        // The segment's end as an offset from `start`, modulo 2³².
        let end = t.seq_in.wrapping_add(t.payload_len).wrapping_sub(e.start);
        if batch {
            // Counted, and the pair's activity noted, once per burst (`flush_counts`; the
            // burst's frames share one `now`), or now if it closed the pair. Only data
            // moves the byte count (a bare ACK skips the pair's counters altogether).
            e.unflushed += 1;
            if t.payload_len > 0 {
                e.pair.count(e.side, end, t.payload_len, 0);
            }
            let closed = e.pair.observe(e.side, t, now);
            if closed {
                Self::flush_entry(stats, e, now);
            }
            return closed;
        }
        Self::count_translated(stats, e.side, 1);
        e.pair.touch(now);
        e.pair.count(e.side, end, t.payload_len, 1);
        e.pair.observe(e.side, t, now)
    }

    #[inline(always)]
    fn count_translated(stats: &mut SpliceStats, side: Side, n: u64) {
        match side {
            Side::A => stats.translated_ab += n,
            Side::B => stats.translated_ba += n,
        }
    }

    /// Adds cached entry `e`'s unflushed segments to its pair and to this lcore's counts,
    /// and notes the pair's activity at `now`.
    #[inline(always)]
    fn flush_entry(stats: &mut SpliceStats, e: &mut Entry, now: u64) {
        let n = std::mem::take(&mut e.unflushed);
        if n > 0 {
            e.pair.count(e.side, 0, 0, n);
            Self::count_translated(stats, e.side, n);
            e.pair.touch(now);
        }
    }

    /// Offers a segment with arriving 4-tuple `k` to the table: from this lcore's cache
    /// when it holds `k`, else from the shared table (no lock either; the entry is then
    /// cached once its out MAC is known). `from_host`: without the out side's MAC,
    /// send with a zero MAC for the host path to resolve rather than drop (wire frames).
    #[inline(always)]
    fn offer<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        k: Key,
        frame: &mut [u8],
        l4_off: usize,
        from_host: bool,
        batch: bool,
    ) -> Option<Outcome> {
        if !batch {
            self.now = cx.now;
            self.sync_cache();
        }
        // A new connection's SYN on a lingering pair's 4-tuple ends the pair (checked on the
        // entry the one lookup below finds).
        let syn = is_bare_syn(frame, l4_off);
        let now = cx.now;
        let (out, closed) = match self.cache.get_mut(&k) {
            Some(e) => {
                if syn && e.pair.closing.load(Ordering::Acquire) {
                    let p = e.pair.clone();
                    return self.reopen(cx, p);
                }
                let o = Self::process(&mut self.stats, now, e, frame, l4_off, batch);
                if e.unflushed == 1 {
                    self.dirty.push(Cache::slot(&k));
                }
                (
                    o,
                    matches!(o, Outcome::Out { closed: true, .. }).then(|| e.pair.clone()),
                )
            }
            None => {
                // A segment of no pair, the common case, ends at the presence filter.
                if !self.table.may_contain(k) {
                    return None;
                }
                self.stats.table_lookups += 1;
                let stack = &mut *cx.stack;
                let e = self.table.fetch(k, |d| {
                    stack.arp_lookup(usize::from(d.out_port), d.out_dst_ip, now)
                })?;
                if syn && e.pair.closing.load(Ordering::Acquire) {
                    return self.reopen(cx, e.pair);
                }
                if e.dir.dst_mac() == [0; 6] && !from_host {
                    cx.stack
                        .resolve(usize::from(e.dir.out_port), e.dir.out_dst_ip, now);
                    self.stats.arp_miss += 1;
                    return Some(Outcome::ArpMiss);
                }
                let mut e = e;
                let o = Self::process(&mut self.stats, now, &mut e, frame, l4_off, false);
                let closed = matches!(o, Outcome::Out { closed: true, .. }).then(|| e.pair.clone());
                if e.dir.dst_mac() != [0; 6] {
                    // An evicted entry's unflushed counts go to its pair now.
                    if let Some(mut old) = self.cache.insert(k, e) {
                        Self::flush_entry(&mut self.stats, &mut old, now);
                    }
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

    /// A new connection's SYN arrived on a 4-tuple of lingering pair `p`: the old
    /// incarnation is over (its peer closed it, or it was reset), and a peer may reuse a
    /// 4-tuple as soon as its own side is closed (RFC 9293 §3.10.7.4 for TIME-WAIT; RFC
    /// 6191). Translating the SYN would splice the new connection into the old pair without
    /// the proxy, and the linger's end would then cut it. So the pair ends now:
    /// - on the owner lcore, its report goes to the host at once and the SYN follows it on
    ///   the same link (`None`: the general path takes it), so the host has forgotten the
    ///   old pair when the SYN arrives and takes it as a new connection;
    /// - on another lcore, the owner is told to report at once and the SYN is dropped and
    ///   counted; the peer's retransmission finds the pair gone.
    fn reopen<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        p: Arc<Pair>,
    ) -> Option<Outcome> {
        self.stats.reopened += 1;
        // Counts this lcore's cache still holds for the pair belong in its report.
        self.flush_counts();
        for k in p.keys {
            self.cache.remove(&k);
        }
        if Arc::ptr_eq(&p.inbox, &self.inbox) {
            let reason = if p.rst.load(Ordering::Acquire) != 0 {
                CloseReason::Rst
            } else {
                CloseReason::Fin
            };
            self.close(&p, reason);
            self.flush_reports(cx);
            if self.pending.is_empty() {
                return None;
            }
        } else {
            p.end_now.store(true, Ordering::Release);
            p.inbox.push(p.clone());
        }
        self.stats.reopen_syn_dropped += 1;
        Some(Outcome::SynHeld)
    }

    /// Clears this lcore's cache when the table removed entries since it was filled (see
    /// the module documentation). Once per burst on the fast path ([`Offload::wire_burst`]),
    /// once per segment elsewhere: a removal during a burst takes effect at the next, as one
    /// concurrent with a segment's translation does.
    #[inline(always)]
    fn sync_cache(&mut self) {
        let epoch = self.table.epoch.load(Ordering::Acquire);
        if epoch != self.cache_epoch {
            self.flush_counts();
            self.cache.clear();
            self.cache_epoch = epoch;
        }
    }

    /// Adds the segments [`SpliceOffload::wire_fast`] counted in this lcore's cache to their
    /// pairs and to this lcore's counters, and notes the pairs' activity: one atomic add
    /// per pair and burst instead of one per segment. The burst hook calls it after each
    /// burst, so a pair's count lags by at most the burst in flight (as a segment
    /// translated concurrently with the pair's removal does).
    fn flush_counts(&mut self) {
        for i in self.dirty.drain(..) {
            if let Some(e) = self.cache.at_mut(i) {
                Self::flush_entry(&mut self.stats, e, self.now);
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
    ///
    /// Runs within a burst ([`Offload::wire_burst`]), after the burst's `sync_cache`.
    #[inline(always)]
    fn wire_fast<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        frame: &mut [u8],
        last: &mut (Key, usize),
    ) -> Verdict {
        use offload_api::wire::ipv4::{Ipv4Packet, HEADER_LEN as IPV4_HDR_LEN};
        use offload_api::wire::TcpPacket;
        // One length check (Ethernet, IPv4 without options, the TCP ports); the views below
        // read at constant offsets inside it.
        let Some(h) = frame.first_chunk::<{ ETH_HEADER_LEN + IPV4_HDR_LEN + 4 }>() else {
            return Verdict::Pass;
        };
        // EtherType IPv4, version 4 with a 20-byte header, no fragment, protocol TCP, as two
        // words: bytes 12..16 hold the EtherType (0x0800) and the version and header length
        // (0x45; the type of service is masked off), bytes 20..24 the flags and fragment
        // offset (MF and the offset must be 0, DF may be set; RFC 791 §3.1), the TTL
        // (masked off) and the protocol (6).
        let word = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        if word(12) & 0xffff_ff00 != 0x0800_4500 || word(20) & 0x3fff_00ff != 0x0000_0006 {
            return Verdict::Pass;
        }
        let ip = Ipv4Packet::new_unchecked(&h[ETH_HEADER_LEN..]);
        let tcp = TcpPacket::new_unchecked(&h[ETH_HEADER_LEN + IPV4_HDR_LEN..]);
        let k = Key::new(ip.src_addr(), tcp.src_port(), ip.dst_addr(), tcp.dst_port());
        // The common case inline: a cached pair's segment of the established shape (at
        // least the 66 bytes of Ethernet, IPv4 and TCP with timestamps, which
        // `translate_established` needs too; not a SYN, which may have to end a lingering
        // pair first).
        if frame.len() >= FAST_L4 + 32 && !is_bare_syn(frame, FAST_L4) {
            match self.cache.get_mut_after(&k, last) {
                Some(e) => {
                    if let Some(t) = translate_established(frame, &e.dir) {
                        // The first segment of the burst on this entry: its count is
                        // flushed after the burst.
                        if e.unflushed == 0 {
                            self.dirty.push(last.1);
                        }
                        if Self::account(&mut self.stats, cx.now, e, &t, true) {
                            e.pair.inbox.push(e.pair.clone());
                        }
                        return Verdict::Out(t.out_port);
                    }
                }
                // A segment of no pair, the common case among misses, ends at the
                // presence filter here too.
                None if !self.table.may_contain(k) => return Verdict::Pass,
                None => {}
            }
        }
        self.wire_slow(cx, frame, k)
    }

    /// [`SpliceOffload::wire_fast`] for a segment the inline path did not take (not cached,
    /// another shape, a bare SYN): the general offer. Out of line, so that the inline path
    /// keeps its registers.
    #[inline(never)]
    fn wire_slow<B: PacketBuf>(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        frame: &mut [u8],
        k: Key,
    ) -> Verdict {
        match self.offer(cx, k, frame, FAST_L4, false, true) {
            None => Verdict::Pass,
            Some(Outcome::Out { port, .. }) => Verdict::Out(port),
            Some(Outcome::Malformed | Outcome::ArpMiss | Outcome::SynHeld) => Verdict::Consumed,
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

/// Where the fast path finds the TCP header: after Ethernet and an IPv4 header without
/// options.
const FAST_L4: usize = ETH_HEADER_LEN + offload_api::wire::ipv4::HEADER_LEN;

/// True when the TCP segment at `l4_off` of `frame` is a bare SYN (no ACK, no RST): a
/// connection's first segment.
#[inline(always)]
fn is_bare_syn(frame: &[u8], l4_off: usize) -> bool {
    let mask = (TcpFlags::SYN | TcpFlags::ACK | TcpFlags::RST).0;
    frame
        .get(l4_off + 13)
        .is_some_and(|&f| f & mask == TcpFlags::SYN.0)
}

#[cfg(test)]
mod tests;
