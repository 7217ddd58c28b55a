//! The bottleneck link of the testbench: the switch's egress port towards the receiver.
//!
//! - **Rate**: one packet serialized at a time, `(payload + header) · 8 / rate`.
//! - **Buffer**: a FIFO of data packets with a byte limit and tail drop, or, with trimming,
//!   NDP's behaviour (Handley et al., SIGCOMM '17): a packet that does not fit loses its
//!   payload and its header joins a separate priority queue, served before data.
//! - **ECN**: an arriving data packet is marked CE when more than K bytes wait (DCTCP's step
//!   marking), or with RED's linear probability between K and Kmax (DCQCN's switch). With
//!   `ecn_on_dequeue` the same rule is applied when a packet leaves the queue, to the bytes
//!   still queued behind it, as the switch of DCQCN's NS3 simulator does (the one Tonic §6.2.2
//!   compares against, from Zhu et al., CoNEXT '16): the mark then reaches the receiver without
//!   first waiting out the queue it reports.
//! - **Strict priorities** (Homa, Montazeri et al. SIGCOMM 2018 §3.4): up to 8 data queues
//!   sharing the buffer; a packet of priority p waits in queue min(p, priorities − 1) and a
//!   queue is served only when every higher one is empty (trimmed headers come first of all).
//! - **Random loss** on the wire, drawn when a packet finishes serialization (so lost
//!   packets used the link).
//!
//! Sans-I/O: the simulator calls [`Link::enqueue`] and [`Link::finish`] and schedules the
//! returned service times.

use std::collections::VecDeque;

use super::rng::SplitMix64;
use super::units::wire_time;
use crate::tonic::{Nanos, SegId};

/// A data packet (or a trimmed header) on its way to the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Global flow id.
    pub flow: u32,
    /// Segment index.
    pub seg: SegId,
    /// Payload bytes (0 once trimmed).
    pub len: u32,
    /// A retransmission.
    pub rtx: bool,
    /// ECN congestion experienced.
    pub ce: bool,
    /// Trimmed: only the header is left.
    pub trimmed: bool,
    /// Network priority, 0 (lowest) to 7 (highest).
    pub prio: u8,
}

/// Counters of the bottleneck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets that arrived at the buffer.
    pub arrived: u64,
    /// Packets serialized onto the link (lost ones included).
    pub sent: u64,
    /// Tail drops (buffer full, no trimming or no header room).
    pub dropped: u64,
    /// Packets trimmed to their header.
    pub trimmed: u64,
    /// Packets marked CE.
    pub ecn_marked: u64,
    /// Random losses on the wire.
    pub lost: u64,
    /// Largest number of data bytes queued.
    pub max_queue_bytes: u64,
}

/// What became of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    /// The link was idle: it starts serializing now and is done after this many ns.
    Started(Nanos),
    /// Waiting in a queue.
    Queued,
    /// Trimmed and queued as a header.
    Trimmed,
    /// Dropped.
    Dropped,
}

/// Link settings.
#[derive(Clone, Copy, Debug)]
pub struct LinkParams {
    /// Bits per second.
    pub rate_bps: u64,
    /// Data buffer in bytes.
    pub buffer: u64,
    /// Header queue in bytes.
    pub header_buffer: u64,
    /// Header bytes per packet.
    pub header_bytes: u32,
    /// Trim instead of dropping.
    pub trim: bool,
    /// ECN marking threshold K (Kmin), bytes.
    pub ecn_k: Option<u64>,
    /// RED's Kmax, bytes.
    pub ecn_kmax: Option<u64>,
    /// RED's Pmax.
    pub ecn_pmax: f64,
    /// Mark when a data packet leaves the queue (starts serialization), judged by the bytes
    /// queued behind it, instead of when it arrives.
    pub ecn_on_dequeue: bool,
    /// Random loss probability.
    pub loss_prob: f64,
    /// Strict-priority data queues, 1 to 8.
    pub priorities: u8,
}

/// The bottleneck. See the module documentation.
#[derive(Debug)]
pub struct Link {
    p: LinkParams,
    /// Data queues, lowest priority first.
    data: Vec<VecDeque<Packet>>,
    headers: VecDeque<Packet>,
    data_bytes: u64,
    header_bytes: u64,
    in_service: Option<Packet>,
    stats: LinkStats,
}

impl Link {
    /// An idle link.
    pub fn new(p: LinkParams) -> Self {
        Link {
            data: vec![VecDeque::new(); p.priorities.clamp(1, 8) as usize],
            p,
            headers: VecDeque::new(),
            data_bytes: 0,
            header_bytes: 0,
            in_service: None,
            stats: LinkStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Data bytes waiting (the packet being serialized excluded).
    pub fn queued_bytes(&self) -> u64 {
        self.data_bytes
    }

    fn wire_bytes(&self, pkt: &Packet) -> u64 {
        pkt.len as u64 + self.p.header_bytes as u64
    }

    fn service(&self, pkt: &Packet) -> Nanos {
        wire_time(self.wire_bytes(pkt), self.p.rate_bps).max(1)
    }

    /// Whether a data packet is marked, given the bytes queued now (before it on arrival,
    /// behind it on departure with `ecn_on_dequeue`).
    fn mark(&self, rng: &mut SplitMix64) -> bool {
        let Some(k) = self.p.ecn_k else {
            return false;
        };
        let q = self.data_bytes;
        match self.p.ecn_kmax {
            None => q > k,
            Some(kmax) if q >= kmax => true,
            Some(_) if q <= k => false,
            Some(kmax) => {
                let p = self.p.ecn_pmax * (q - k) as f64 / (kmax - k) as f64;
                rng.chance(p)
            }
        }
    }

    /// A packet arrives from a sender.
    pub fn enqueue(&mut self, mut pkt: Packet, rng: &mut SplitMix64) -> Enqueued {
        self.stats.arrived += 1;
        let size = self.wire_bytes(&pkt);
        if self.data_bytes + size > self.p.buffer {
            let hdr = self.p.header_bytes as u64;
            if !self.p.trim || self.header_bytes + hdr > self.p.header_buffer {
                self.stats.dropped += 1;
                return Enqueued::Dropped;
            }
            pkt.len = 0;
            pkt.trimmed = true;
            self.stats.trimmed += 1;
            if self.in_service.is_none() {
                self.in_service = Some(pkt);
                self.stats.sent += 1;
                return Enqueued::Started(self.service(&pkt));
            }
            self.header_bytes += hdr;
            self.headers.push_back(pkt);
            return Enqueued::Trimmed;
        }
        if !self.p.ecn_on_dequeue && self.mark(rng) {
            pkt.ce = true;
            self.stats.ecn_marked += 1;
        }
        if self.in_service.is_none() {
            self.in_service = Some(pkt);
            self.stats.sent += 1;
            return Enqueued::Started(self.service(&pkt));
        }
        self.data_bytes += size;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.data_bytes);
        let q = (pkt.prio as usize).min(self.data.len() - 1);
        self.data[q].push_back(pkt);
        Enqueued::Queued
    }

    /// The packet in service is fully serialized: returns it unless the wire lost it, and the
    /// service time of the next packet if one starts.
    pub fn finish(&mut self, rng: &mut SplitMix64) -> (Option<Packet>, Option<Nanos>) {
        let done = self.in_service.take();
        let done = done.filter(|_| {
            let lost = rng.chance(self.p.loss_prob);
            self.stats.lost += lost as u64;
            !lost
        });
        let next = if let Some(h) = self.headers.pop_front() {
            self.header_bytes -= self.p.header_bytes as u64;
            Some(h)
        } else if let Some(mut d) = self.data.iter_mut().rev().find_map(|q| q.pop_front()) {
            self.data_bytes -= self.wire_bytes(&d);
            if self.p.ecn_on_dequeue && self.mark(rng) {
                d.ce = true;
                self.stats.ecn_marked += 1;
            }
            Some(d)
        } else {
            None
        };
        let t = next.map(|n| {
            self.in_service = Some(n);
            self.stats.sent += 1;
            self.service(&n)
        });
        (done, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> LinkParams {
        LinkParams {
            rate_bps: 8_000_000_000,
            buffer: 3000,
            header_buffer: 128,
            header_bytes: 64,
            trim: false,
            ecn_k: Some(1000),
            ecn_kmax: None,
            ecn_pmax: 1.0,
            ecn_on_dequeue: false,
            loss_prob: 0.0,
            priorities: 1,
        }
    }

    fn pkt(seg: u64) -> Packet {
        Packet {
            flow: 0,
            seg,
            len: 936,
            rtx: false,
            ce: false,
            trimmed: false,
            prio: 0,
        }
    }

    #[test]
    fn strict_priority_queues() {
        let mut rng = SplitMix64::new(1);
        let mut l = Link::new(LinkParams {
            priorities: 8,
            ecn_k: None,
            buffer: 10_000,
            ..params()
        });
        let p = |seg, prio| Packet { prio, ..pkt(seg) };
        assert!(matches!(l.enqueue(p(0, 0), &mut rng), Enqueued::Started(_)));
        for (seg, prio) in [(1, 0), (2, 3), (3, 7), (4, 3), (5, 9)] {
            assert_eq!(l.enqueue(p(seg, prio), &mut rng), Enqueued::Queued);
        }
        let mut out = vec![];
        while let (Some(p), _) = l.finish(&mut rng) {
            out.push(p.seg);
        }
        // 9 is clamped to the top queue (7), behind 3; equal priorities stay FIFO.
        assert_eq!(out, vec![0, 3, 5, 2, 4, 1]);
        // One queue: plain FIFO whatever the priority.
        let mut l = Link::new(LinkParams {
            ecn_k: None,
            buffer: 10_000,
            ..params()
        });
        for (seg, prio) in [(0, 0), (1, 0), (2, 7)] {
            l.enqueue(p(seg, prio), &mut rng);
        }
        let mut out = vec![];
        while let (Some(p), _) = l.finish(&mut rng) {
            out.push(p.seg);
        }
        assert_eq!(out, vec![0, 1, 2]);
    }

    #[test]
    fn fifo_tail_drop_and_ecn_marking() {
        let mut rng = SplitMix64::new(1);
        let mut l = Link::new(params());
        assert_eq!(l.enqueue(pkt(0), &mut rng), Enqueued::Started(1000));
        assert_eq!(l.enqueue(pkt(1), &mut rng), Enqueued::Queued);
        assert_eq!(l.enqueue(pkt(2), &mut rng), Enqueued::Queued);
        assert_eq!(l.enqueue(pkt(3), &mut rng), Enqueued::Queued);
        assert_eq!(l.enqueue(pkt(4), &mut rng), Enqueued::Dropped);
        let mut out = vec![];
        while let (Some(p), _) = l.finish(&mut rng) {
            out.push((p.seg, p.ce));
        }
        // 1 arrived to an empty queue, 2 behind 1000 B (not above K), 3 behind 2000 B.
        assert_eq!(out, vec![(0, false), (1, false), (2, false), (3, true)]);
        assert_eq!((l.stats().dropped, l.stats().ecn_marked), (1, 1));
    }

    /// Marking on departure judges the bytes queued behind the leaving packet: the same
    /// backlog as in `fifo_tail_drop_and_ecn_marking` marks the first packet to leave while it
    /// lasts, not the last to arrive.
    #[test]
    fn ecn_on_dequeue_marks_the_head() {
        let mut rng = SplitMix64::new(1);
        let mut l = Link::new(LinkParams {
            ecn_on_dequeue: true,
            ..params()
        });
        for s in 0..5 {
            l.enqueue(pkt(s), &mut rng);
        }
        assert_eq!(l.stats().ecn_marked, 0, "nothing is marked on arrival");
        let mut out = vec![];
        while let (Some(p), _) = l.finish(&mut rng) {
            out.push((p.seg, p.ce));
        }
        // 1 leaves with 2000 B behind it (above K), 2 with 1000 B, 3 with none.
        assert_eq!(out, vec![(0, false), (1, true), (2, false), (3, false)]);
        assert_eq!((l.stats().dropped, l.stats().ecn_marked), (1, 1));
    }

    #[test]
    fn trimmed_headers_jump_the_queue() {
        let mut rng = SplitMix64::new(1);
        let mut l = Link::new(LinkParams {
            trim: true,
            ecn_k: None,
            ..params()
        });
        for s in 0..4 {
            l.enqueue(pkt(s), &mut rng);
        }
        assert_eq!(l.enqueue(pkt(4), &mut rng), Enqueued::Trimmed);
        assert_eq!(l.enqueue(pkt(5), &mut rng), Enqueued::Trimmed);
        assert_eq!(
            l.enqueue(pkt(6), &mut rng),
            Enqueued::Dropped,
            "header room"
        );
        let (p, t) = l.finish(&mut rng);
        assert_eq!(p.unwrap().seg, 0);
        assert_eq!(t, Some(64), "a header: 64 B at 1 B/ns");
        let (p, _) = l.finish(&mut rng);
        assert!(p.unwrap().trimmed);
        let (p, _) = l.finish(&mut rng);
        assert_eq!(p.unwrap().seg, 5);
        let (p, _) = l.finish(&mut rng);
        assert_eq!(p.unwrap().seg, 1);
    }
}
