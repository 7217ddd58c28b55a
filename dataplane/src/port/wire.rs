//! The in-memory wire: two ports joined by lock-free rings, with seeded impairments.
//!
//! Each direction of a wire is a set of rings, one per receiving queue. A frame sent on any
//! queue of one end is steered to a receiving queue of the other end by the Toeplitz hash
//! (as an RSS NIC would), after the sender's impairments: loss, duplication, reordering, a
//! rate limit with a bounded buffer, and a fixed delay. All randomness comes from a seed, and
//! time from a [`Clock`], so with a virtual clock a run is exactly repeatable.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam::queue::ArrayQueue;
use serde::Deserialize;

use crate::buf::{HeapBuf, PacketBuf};
use crate::clock::{Clock, SplitMix64};
use crate::port::{Port, QueueStats};
use crate::rss::{hash_frame, Reta, RssMode};

/// What one direction of a wire does to frames.
///
/// Invariant: probabilities are in [0, 1] (checked by [`Impairments::validate`]).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Impairments {
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame is held back and delivered after the next one.
    pub reorder: f64,
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Probability that one byte after the Ethernet header is flipped (a bit error the
    /// receiver's IP or TCP/UDP checksum catches).
    pub corrupt: f64,
    /// Fixed one-way delay in nanoseconds.
    pub delay_ns: u64,
    /// Rate limit in bits per second (0: unlimited). Applies per sending queue.
    pub rate_bps: u64,
    /// Bytes the rate limiter may queue before it drops (tail drop).
    pub buffer_bytes: u64,
    /// Seed of the impairment random stream.
    pub seed: u64,
    /// Drops exactly one chosen frame (tests only; not read from configurations).
    #[serde(skip)]
    pub drop_nth: Option<DropNth>,
}

/// A deterministic loss: the `nth` frame (counting from 1) of one sending queue for which
/// `matches` holds is lost (counted in [`LinkCounters::lost`]), whatever the random
/// impairments draw. Lets a test lose, say, exactly the second data segment or the FIN.
#[derive(Clone, Copy, Debug)]
pub struct DropNth {
    /// Which frames count (the whole Ethernet frame).
    pub matches: fn(&[u8]) -> bool,
    /// Which of them is lost, from 1.
    pub nth: u32,
}

impl PartialEq for DropNth {
    /// Equal when they drop the same position; the predicates are not compared (function
    /// addresses are not meaningful).
    fn eq(&self, other: &DropNth) -> bool {
        self.nth == other.nth
    }
}

impl Default for Impairments {
    fn default() -> Self {
        Impairments {
            loss: 0.0,
            reorder: 0.0,
            duplicate: 0.0,
            corrupt: 0.0,
            delay_ns: 0,
            rate_bps: 0,
            buffer_bytes: 1 << 20,
            seed: 1,
            drop_nth: None,
        }
    }
}

impl Impairments {
    /// Checks the probabilities; returns the name of the first bad field.
    pub fn validate(&self) -> Result<(), &'static str> {
        for (name, p) in [
            ("loss", self.loss),
            ("reorder", self.reorder),
            ("duplicate", self.duplicate),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(name);
            }
        }
        Ok(())
    }
}

/// Counters of one direction of a wire, shared by both ends.
///
/// Invariant: `offered + duplicated == delivered + lost + dropped_full + dropped_rate +
/// in_flight`, where in-flight frames sit in rings or in a reorder slot.
#[derive(Debug, Default)]
pub struct LinkCounters {
    /// Frames handed to the wire by the sender.
    pub offered: AtomicU64,
    /// Frames the receiver took off the wire.
    pub delivered: AtomicU64,
    /// Frames lost by the loss impairment.
    pub lost: AtomicU64,
    /// Extra copies made by the duplication impairment.
    pub duplicated: AtomicU64,
    /// Frames with a byte flipped by the corruption impairment.
    pub corrupted: AtomicU64,
    /// Frames delivered out of order by the reorder impairment.
    pub reordered: AtomicU64,
    /// Frames dropped because a receive ring was full.
    pub dropped_full: AtomicU64,
    /// Frames dropped by the rate limiter's full buffer.
    pub dropped_rate: AtomicU64,
    /// While set, the link is down: every frame offered is lost (and counted in `lost`).
    /// Lets a test lose exactly the frames sent in a chosen interval.
    pub down: std::sync::atomic::AtomicBool,
}

impl LinkCounters {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    /// A plain copy of the counters.
    pub fn snapshot(&self) -> LinkSnapshot {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LinkSnapshot {
            offered: g(&self.offered),
            delivered: g(&self.delivered),
            lost: g(&self.lost),
            duplicated: g(&self.duplicated),
            corrupted: g(&self.corrupted),
            reordered: g(&self.reordered),
            dropped_full: g(&self.dropped_full),
            dropped_rate: g(&self.dropped_rate),
        }
    }
}

/// A copy of [`LinkCounters`] at one moment.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkSnapshot {
    pub offered: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub reordered: u64,
    pub dropped_full: u64,
    pub dropped_rate: u64,
}

impl LinkSnapshot {
    /// Frames on the wire (in rings or held for reordering), from the counters' invariant.
    /// Exact only when no end is sending or receiving at the moment of the snapshot.
    pub fn in_flight(&self) -> u64 {
        (self.offered + self.duplicated)
            .saturating_sub(self.delivered + self.lost + self.dropped_full + self.dropped_rate)
    }
}

/// How to build a wire.
#[derive(Clone, Debug)]
pub struct WireConfig {
    /// Queues on each end (each end's lcores own one queue each).
    pub queues: u16,
    /// Frames each receive ring holds.
    pub ring_size: usize,
    /// Impairments of frames sent by end A (towards B).
    pub a_to_b: Impairments,
    /// Impairments of frames sent by end B (towards A).
    pub b_to_a: Impairments,
    /// How the receiving end spreads frames over its queues.
    pub rss: RssMode,
    /// MAC addresses of ends A and B.
    pub macs: [[u8; 6]; 2],
    /// The time source (use a virtual clock for deterministic tests).
    pub clock: Clock,
}

impl Default for WireConfig {
    fn default() -> Self {
        WireConfig {
            queues: 1,
            ring_size: 4096,
            a_to_b: Impairments::default(),
            b_to_a: Impairments::default(),
            rss: RssMode::Symmetric,
            macs: [[0x02, 0, 0, 0, 0, 0xa], [0x02, 0, 0, 0, 0, 0xb]],
            clock: Clock::real(),
        }
    }
}

struct Slot {
    due_ns: u64,
    buf: HeapBuf,
}

/// One direction: a ring per receiving queue plus counters.
struct Direction {
    rings: Vec<ArrayQueue<Slot>>,
    counters: Arc<LinkCounters>,
}

/// Builds a wire and returns its two ends, A and B.
pub fn wire_pair(cfg: &WireConfig) -> (WireEnd, WireEnd) {
    let queues = cfg.queues.max(1);
    let dir = || {
        Arc::new(Direction {
            rings: (0..queues)
                .map(|_| ArrayQueue::new(cfg.ring_size.max(1)))
                .collect(),
            counters: Arc::new(LinkCounters::default()),
        })
    };
    let (ab, ba) = (dir(), dir());
    let make = |side: usize, tx: &Arc<Direction>, rx: &Arc<Direction>, imp: &Impairments| WireEnd {
        mac: cfg.macs[side],
        tx_counters: tx.counters.clone(),
        rx_counters: rx.counters.clone(),
        queues: (0..queues)
            .map(|q| WireQueue {
                mac: cfg.macs[side],
                queue: q,
                tx: tx.clone(),
                rx: rx.clone(),
                imp: imp.clone(),
                rng: SplitMix64::new(
                    imp.seed ^ ((side as u64) << 32) ^ (q as u64).wrapping_mul(0x9e37_79b9),
                ),
                rss_key: cfg.rss.key().map(|k| k.to_vec()),
                reta: Reta::new(queues),
                clock: cfg.clock.clone(),
                next_free_ns: 0,
                held: None,
                pending: None,
                stats: QueueStats::default(),
                matched: 0,
            })
            .map(Some)
            .collect(),
    };
    (
        make(0, &ab, &ba, &cfg.a_to_b),
        make(1, &ba, &ab, &cfg.b_to_a),
    )
}

/// One end of a wire: a device whose queues are taken by lcores.
pub struct WireEnd {
    mac: [u8; 6],
    tx_counters: Arc<LinkCounters>,
    rx_counters: Arc<LinkCounters>,
    queues: Vec<Option<WireQueue>>,
}

impl WireEnd {
    /// Takes queue `q` (each queue can be taken once).
    pub fn take_queue(&mut self, q: u16) -> Option<WireQueue> {
        self.queues.get_mut(q as usize)?.take()
    }
    /// Number of queues.
    pub fn queue_count(&self) -> u16 {
        self.queues.len() as u16
    }
    /// This end's MAC.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }
    /// Counters of the direction this end sends on.
    pub fn tx_link(&self) -> Arc<LinkCounters> {
        self.tx_counters.clone()
    }
    /// Counters of the direction this end receives on.
    pub fn rx_link(&self) -> Arc<LinkCounters> {
        self.rx_counters.clone()
    }
}

/// One queue of a wire end; implements [`Port`].
pub struct WireQueue {
    mac: [u8; 6],
    queue: u16,
    tx: Arc<Direction>,
    rx: Arc<Direction>,
    imp: Impairments,
    rng: SplitMix64,
    rss_key: Option<Vec<u8>>,
    reta: Reta,
    clock: Clock,
    next_free_ns: u64,
    held: Option<HeapBuf>,
    pending: Option<Slot>,
    stats: QueueStats,
    /// Frames that matched [`Impairments::drop_nth`] so far.
    matched: u32,
}

impl WireQueue {
    /// This queue's index on its end.
    pub fn queue_id(&self) -> u16 {
        self.queue
    }

    /// Puts one frame on the wire after the rate limiter and delay.
    fn launch(&mut self, buf: HeapBuf, now: u64) {
        let c = &self.tx.counters;
        let mut due = now;
        if self.imp.rate_bps > 0 {
            let ser_ns = (buf.len() as u128 * 8 * 1_000_000_000 / self.imp.rate_bps as u128) as u64;
            let start = self.next_free_ns.max(now);
            let backlog_ns = start - now;
            let buffer_ns = (self.imp.buffer_bytes as u128 * 8 * 1_000_000_000
                / self.imp.rate_bps as u128) as u64;
            if backlog_ns > buffer_ns {
                LinkCounters::bump(&c.dropped_rate);
                self.stats.tx_dropped += 1;
                return;
            }
            self.next_free_ns = start + ser_ns;
            due = self.next_free_ns;
        }
        due += self.imp.delay_ns;
        let q = match &self.rss_key {
            Some(key) => self.reta.queue(hash_frame(key, buf.data())),
            None => 0,
        } as usize;
        let ring = &self.tx.rings[q.min(self.tx.rings.len() - 1)];
        if ring.push(Slot { due_ns: due, buf }).is_err() {
            LinkCounters::bump(&c.dropped_full);
            self.stats.tx_dropped += 1;
        }
    }

    /// Impairs one frame and launches what survives.
    fn send_one(&mut self, mut buf: HeapBuf, now: u64) {
        LinkCounters::bump(&self.tx.counters.offered);
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += buf.len() as u64;
        // Draw first, so that a down interval does not shift the seeded loss stream.
        let mut lost = self.rng.chance(self.imp.loss);
        if let Some(d) = self.imp.drop_nth {
            if (d.matches)(buf.data()) {
                self.matched += 1;
                lost |= self.matched == d.nth;
            }
        }
        if lost || self.tx.counters.down.load(Ordering::Relaxed) {
            LinkCounters::bump(&self.tx.counters.lost);
            return;
        }
        if self.imp.corrupt > 0.0 && buf.len() > 14 && self.rng.chance(self.imp.corrupt) {
            let d = buf.data_mut();
            let at = 14 + (self.rng.next_u64() % (d.len() - 14) as u64) as usize;
            d[at] ^= 1 << (self.rng.next_u64() % 8);
            LinkCounters::bump(&self.tx.counters.corrupted);
        }
        let dup = self.rng.chance(self.imp.duplicate).then(|| buf.clone());
        if let Some(held) = self.held.take() {
            // The held frame goes out after this one: that is the reordering.
            self.launch(buf, now);
            self.launch(held, now);
            LinkCounters::bump(&self.tx.counters.reordered);
        } else if self.rng.chance(self.imp.reorder) {
            self.held = Some(buf);
        } else {
            self.launch(buf, now);
        }
        if let Some(d) = dup {
            LinkCounters::bump(&self.tx.counters.duplicated);
            self.launch(d, now);
        }
    }

    /// Releases a frame held for reordering when no later frame came to overtake it.
    fn flush_held(&mut self, now: u64) {
        if let Some(held) = self.held.take() {
            self.launch(held, now);
        }
    }
}

impl Port for WireQueue {
    type Buf = HeapBuf;

    fn rx_burst(&mut self, out: &mut Vec<HeapBuf>, max: usize) -> usize {
        let now = self.clock.now_ns();
        self.flush_held(now);
        let ring = &self.rx.rings[self.queue as usize];
        let mut n = 0;
        while n < max {
            let slot = match self.pending.take().or_else(|| ring.pop()) {
                Some(s) => s,
                None => break,
            };
            if slot.due_ns > now {
                self.pending = Some(slot);
                break;
            }
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += slot.buf.len() as u64;
            out.push(slot.buf);
            n += 1;
        }
        if n > 0 {
            self.rx
                .counters
                .delivered
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    fn tx_burst(&mut self, pkts: &mut Vec<HeapBuf>) -> usize {
        let now = self.clock.now_ns();
        let n = pkts.len();
        for buf in pkts.drain(..) {
            self.send_one(buf, now);
        }
        n
    }

    fn alloc(&mut self) -> Option<HeapBuf> {
        Some(HeapBuf::new())
    }

    fn mac(&self) -> [u8; 6] {
        self.mac
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP/IPv4 frame carrying `id` in its payload, with ports varying by `flow`.
    fn frame(id: u32, flow: u16, len: usize) -> HeapBuf {
        let mut f = vec![0u8; len.max(46)];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&(1000 + flow).to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f[42..46].copy_from_slice(&id.to_be_bytes());
        HeapBuf::from_frame(&f)
    }

    fn id_of(b: &HeapBuf) -> u32 {
        u32::from_be_bytes(b.data()[42..46].try_into().unwrap())
    }

    fn recv_all(q: &mut WireQueue) -> Vec<HeapBuf> {
        let mut out = Vec::new();
        for _ in 0..10_000 {
            if q.rx_burst(&mut out, 32) == 0 {
                break;
            }
        }
        out
    }

    #[test]
    fn clean_wire_delivers_everything_in_order_intact() {
        let (mut a, mut b) = wire_pair(&WireConfig::default());
        let (mut qa, mut qb) = (a.take_queue(0).unwrap(), b.take_queue(0).unwrap());
        let sent: Vec<HeapBuf> = (0..1000)
            .map(|i| frame(i, 0, 60 + (i as usize % 1400)))
            .collect();
        let mut batch = sent.clone();
        assert_eq!(qa.tx_burst(&mut batch), 1000);
        assert!(batch.is_empty());
        let got = recv_all(&mut qb);
        assert_eq!(got.len(), 1000);
        for (s, g) in sent.iter().zip(&got) {
            assert_eq!(s.data(), g.data());
        }
        assert_eq!(qa.stats().tx_packets, 1000);
        assert_eq!(qb.stats().rx_packets, 1000);
        assert_eq!(qa.stats().tx_bytes, qb.stats().rx_bytes);
        let link = a.tx_link().snapshot();
        assert_eq!((link.offered, link.delivered, link.lost), (1000, 1000, 0));
        assert!(a.take_queue(0).is_none(), "a queue is taken once");
    }

    fn impaired(imp: Impairments, n: u32) -> (Vec<u32>, LinkSnapshot) {
        let cfg = WireConfig {
            a_to_b: imp,
            ..WireConfig::default()
        };
        let (mut a, mut b) = wire_pair(&cfg);
        let (mut qa, mut qb) = (a.take_queue(0).unwrap(), b.take_queue(0).unwrap());
        let mut got = Vec::new();
        for i in 0..n {
            let mut one = vec![frame(i, 0, 100)];
            qa.tx_burst(&mut one);
            got.extend(recv_all(&mut qb).iter().map(id_of));
        }
        got.extend(recv_all(&mut qb).iter().map(id_of));
        (got, a.tx_link().snapshot())
    }

    #[test]
    fn loss_is_seeded_close_to_the_rate_and_counted() {
        let imp = Impairments {
            loss: 0.1,
            seed: 42,
            ..Default::default()
        };
        let (got, link) = impaired(imp.clone(), 10_000);
        let (again, _) = impaired(imp, 10_000);
        assert_eq!(got, again, "same seed, same losses");
        assert!((800..1200).contains(&link.lost), "{}", link.lost);
        assert_eq!(got.len() as u64, 10_000 - link.lost);
        assert_eq!(link.delivered, got.len() as u64);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn duplication_and_reordering_are_counted_and_lose_nothing() {
        let imp = Impairments {
            duplicate: 0.05,
            reorder: 0.05,
            seed: 3,
            ..Default::default()
        };
        let (got, link) = impaired(imp, 5_000);
        assert_eq!(got.len() as u64, 5_000 + link.duplicated);
        assert!(link.duplicated > 150 && link.reordered > 150, "{link:?}");
        let mut uniq = got.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), 5_000, "every frame arrives at least once");
        assert!(
            got.windows(2).any(|w| w[0] > w[1]),
            "some frames arrive out of order"
        );
    }

    #[test]
    fn delay_and_rate_follow_the_virtual_clock() {
        let clock = Clock::virtual_clock();
        let cfg = WireConfig {
            a_to_b: Impairments {
                delay_ns: 1_000_000,
                rate_bps: 8_000_000, // 1 byte per microsecond
                buffer_bytes: 10_000,
                ..Default::default()
            },
            clock: clock.clone(),
            ..WireConfig::default()
        };
        let (mut a, mut b) = wire_pair(&cfg);
        let (mut qa, mut qb) = (a.take_queue(0).unwrap(), b.take_queue(0).unwrap());
        // 20 frames of 1000 bytes: each takes 1 ms to serialize; the buffer holds ~10.
        let mut batch: Vec<HeapBuf> = (0..20).map(|i| frame(i, 0, 1000)).collect();
        qa.tx_burst(&mut batch);
        let link = a.tx_link().snapshot();
        assert!(
            link.dropped_rate >= 8 && link.dropped_rate <= 10,
            "{link:?}"
        );
        let sent = 20 - link.dropped_rate;
        let mut out = Vec::new();
        clock.advance(1_999_999); // first frame due at 1 ms serialization + 1 ms delay
        assert_eq!(qb.rx_burst(&mut out, 64), 0);
        clock.advance(1);
        assert_eq!(qb.rx_burst(&mut out, 64), 1);
        clock.advance(1_000_000);
        assert_eq!(qb.rx_burst(&mut out, 64), 1);
        clock.advance(100_000_000);
        assert_eq!(qb.rx_burst(&mut out, 64) as u64, sent - 2);
    }

    #[test]
    fn rss_spreads_flows_over_queues_and_keeps_each_flow_on_one() {
        let cfg = WireConfig {
            queues: 4,
            ..WireConfig::default()
        };
        let (mut a, mut b) = wire_pair(&cfg);
        let mut qa = a.take_queue(0).unwrap();
        let mut qbs: Vec<WireQueue> = (0..4).map(|q| b.take_queue(q).unwrap()).collect();
        let mut batch: Vec<HeapBuf> = (0..400).map(|i| frame(i, (i % 40) as u16, 64)).collect();
        qa.tx_burst(&mut batch);
        let mut flow_queue = std::collections::HashMap::new();
        let mut total = 0;
        for (qi, q) in qbs.iter_mut().enumerate() {
            let got = recv_all(q);
            assert!(!got.is_empty(), "queue {qi} got no flow");
            total += got.len();
            for g in got {
                let flow = u16::from_be_bytes([g.data()[34], g.data()[35]]);
                assert_eq!(*flow_queue.entry(flow).or_insert(qi), qi);
            }
        }
        assert_eq!(total, 400);
    }

    #[test]
    fn full_ring_drops_and_counts() {
        let cfg = WireConfig {
            ring_size: 8,
            ..WireConfig::default()
        };
        let (mut a, mut b) = wire_pair(&cfg);
        let (mut qa, mut qb) = (a.take_queue(0).unwrap(), b.take_queue(0).unwrap());
        let mut batch: Vec<HeapBuf> = (0..20).map(|i| frame(i, 0, 64)).collect();
        qa.tx_burst(&mut batch);
        assert_eq!(recv_all(&mut qb).len(), 8);
        assert_eq!(a.tx_link().snapshot().dropped_full, 12);
        assert_eq!(qa.stats().tx_dropped, 12);
    }

    #[test]
    fn bad_probabilities_are_named() {
        let imp = Impairments {
            duplicate: 1.5,
            ..Default::default()
        };
        assert_eq!(imp.validate(), Err("duplicate"));
        assert_eq!(Impairments::default().validate(), Ok(()));
    }
}
