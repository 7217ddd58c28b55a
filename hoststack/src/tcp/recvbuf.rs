//! The receive buffer of one connection: a byte ring holding the bytes received in order and
//! not yet read, followed (at their place in the window) by out-of-order bytes waiting for a
//! hole to fill (RFC 9293 §3.10.7.4 "segment text": segments beyond RCV.NXT are held for
//! later processing).
//!
//! Out-of-order data is written straight into the ring at its offset from RCV.NXT, and a
//! small fixed array of ranges says which offsets are present (like smoltcp's assembler, with
//! its own code). The caller only ever writes inside the advertised window, which never
//! exceeds the free space, so the buffer never holds more than its capacity (SO_RCVBUF).
//! Each range remembers when it last grew, so that SACK blocks can be reported most recent
//! first (RFC 2018 §4).
//!
//! Storage is the lazy [`Ring`] (allocated on first use, grown by doubling up to the
//! capacity), as for the send buffer.

use super::ring::Ring;

/// Most out-of-order ranges (holes) remembered; a segment that would need another one is
/// dropped (the peer retransmits it).
pub const MAX_OOO_RANGES: usize = 16;

/// Out-of-order bytes `[start, end)`, offsets from RCV.NXT.
#[derive(Clone, Copy, Default, Debug)]
struct Range {
    start: u32,
    end: u32,
    /// Value of the recency counter when this range last took a segment.
    stamp: u32,
}

/// What [`RecvBuf::write`] did with a segment's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WriteOutcome {
    /// In order: this many bytes became readable (the segment's, plus any out-of-order
    /// bytes it joined to them).
    InOrder(usize),
    /// Stored out of order.
    Queued,
    /// Not stored: all out-of-order range slots are taken.
    Dropped,
}

/// Receive ring with out-of-order ranges: the ring's bytes held in order are the readable
/// ones; the out-of-order bytes sit behind them at their offsets from RCV.NXT.
pub type RecvBuf = Ring<Reassembly>;

/// The receive buffer's own state besides its ring: which out-of-order offsets are present.
#[derive(Debug)]
pub struct Reassembly {
    /// Out-of-order ranges, sorted, disjoint and not adjacent.
    ooo: [Range; MAX_OOO_RANGES],
    /// Valid entries of `ooo`.
    n_ooo: u8,
    /// Recency counter for the SACK block order.
    stamp: u32,
}

impl Reassembly {
    /// In-order bytes now end at offset `end`: joins the out-of-order ranges reached and
    /// rebases the others on the new RCV.NXT; returns the bytes that became readable.
    fn join(&mut self, end: u32) -> u32 {
        let mut adv = end;
        let mut k = 0;
        let n = self.n_ooo as usize;
        while k < n && self.ooo[k].start <= adv {
            adv = adv.max(self.ooo[k].end);
            k += 1;
        }
        self.ooo.copy_within(k..n, 0);
        self.n_ooo = (n - k) as u8;
        for r in &mut self.ooo[..n - k] {
            r.start -= adv;
            r.end -= adv;
        }
        adv
    }

    /// Records out-of-order bytes `[start, end)`, merged with the ranges they overlap or
    /// touch; false (nothing changed) when that needs a slot and none is free.
    fn insert(&mut self, start: u32, end: u32) -> bool {
        let n = self.n_ooo as usize;
        let first = self.ooo[..n].partition_point(|r| r.end < start);
        let mut last = first;
        while last < n && self.ooo[last].start <= end {
            last += 1;
        }
        if first == last && n == MAX_OOO_RANGES {
            return false;
        }
        self.stamp = self.stamp.wrapping_add(1);
        let merged = if first == last {
            Range {
                start,
                end,
                stamp: self.stamp,
            }
        } else {
            Range {
                start: start.min(self.ooo[first].start),
                end: end.max(self.ooo[last - 1].end),
                stamp: self.stamp,
            }
        };
        // Replace ooo[first..last] by `merged`.
        if first == last {
            self.ooo.copy_within(first..n, first + 1);
            self.n_ooo += 1;
        } else {
            self.ooo.copy_within(last..n, first + 1);
            self.n_ooo = (n - (last - first) + 1) as u8;
        }
        self.ooo[first] = merged;
        true
    }
}

impl RecvBuf {
    /// An empty buffer of capacity `cap` bytes; allocates nothing.
    pub fn new(cap: usize) -> Self {
        let ooo = Reassembly {
            ooo: [Range::default(); MAX_OOO_RANGES],
            n_ooo: 0,
            stamp: 0,
        };
        Ring::with_state(cap.min(u32::MAX as usize / 2), ooo)
    }

    /// True when out-of-order data is held.
    #[inline]
    pub fn has_ooo(&self) -> bool {
        self.state.n_ooo != 0
    }

    /// Number of out-of-order ranges held.
    #[inline]
    pub fn ooo_ranges(&self) -> usize {
        self.state.n_ooo as usize
    }

    /// Stores `data`, which starts `off` bytes after RCV.NXT. Bytes past the free space are
    /// ignored (the caller trims to the window first).
    pub fn write(&mut self, off: usize, data: &[u8]) -> WriteOutcome {
        let free = self.free();
        if off >= free {
            return WriteOutcome::Dropped;
        }
        let data = &data[..data.len().min(free - off)];
        if data.is_empty() {
            return if off == 0 {
                WriteOutcome::InOrder(0)
            } else {
                WriteOutcome::Queued
            };
        }
        let end = (off + data.len()) as u32;
        if off == 0 {
            self.reserve(self.len() + data.len());
            self.put(self.len(), data);
            let adv = self.state.join(end) as usize;
            self.commit(adv);
            return WriteOutcome::InOrder(adv);
        }
        if !self.state.insert(off as u32, end) {
            return WriteOutcome::Dropped;
        }
        self.reserve(self.len() + end as usize);
        self.put(self.len() + off, data);
        WriteOutcome::Queued
    }

    /// The out-of-order ranges as `(start, end)` offsets from RCV.NXT, most recently
    /// extended first (RFC 2018 §4), at most `out.len()`; returns how many were written.
    pub fn sack_ranges(&self, out: &mut [(u32, u32)]) -> usize {
        let s = &self.state;
        let n = s.n_ooo as usize;
        let mut taken = 0u32; // bit i: ooo[i] already reported
        let mut k = 0;
        while k < out.len() && k < n {
            let mut best = usize::MAX;
            let mut best_age = u32::MAX;
            for (i, r) in s.ooo[..n].iter().enumerate() {
                let age = s.stamp.wrapping_sub(r.stamp);
                if taken & (1 << i) == 0 && age < best_age {
                    best = i;
                    best_age = age;
                }
            }
            taken |= 1 << best;
            out[k] = (s.ooo[best].start, s.ooo[best].end);
            k += 1;
        }
        k
    }

    /// The end of the highest out-of-order range (offset from RCV.NXT), 0 when none.
    pub fn ooo_end(&self) -> u32 {
        match self.state.n_ooo {
            0 => 0,
            n => self.state.ooo[n as usize - 1].end,
        }
    }

    /// The readable bytes, as two slices.
    pub fn peek(&self) -> (&[u8], &[u8]) {
        self.view(0, self.len())
    }

    /// Drops `n` readable bytes (clamped to what is readable).
    pub fn consume(&mut self, n: usize) {
        self.pop_front(n, self.state.n_ooo == 0);
    }

    /// Copies readable bytes into `out` and drops them; returns how many.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let (a, b) = self.peek();
        let n1 = a.len().min(out.len());
        out[..n1].copy_from_slice(&a[..n1]);
        let n2 = b.len().min(out.len() - n1);
        out[n1..n1 + n2].copy_from_slice(&b[..n2]);
        self.consume(n1 + n2);
        n1 + n2
    }

    /// Empties the buffer (readable and out-of-order bytes) and frees its storage.
    pub fn release(&mut self) {
        self.clear();
        self.state.n_ooo = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn readable(b: &RecvBuf) -> Vec<u8> {
        let (x, y) = b.peek();
        let mut v = x.to_vec();
        v.extend_from_slice(y);
        v
    }

    #[test]
    fn in_order_and_holes() {
        let mut b = RecvBuf::new(10_000);
        assert_eq!(b.allocated(), 0);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(b.write(1000, &data[1000..2000]), WriteOutcome::Queued);
        assert_eq!(b.write(3000, &data[3000..4000]), WriteOutcome::Queued);
        assert_eq!(b.write(2000, &data[2000..2500]), WriteOutcome::Queued);
        let mut r = [(0, 0); 4];
        assert_eq!(b.sack_ranges(&mut r), 2);
        assert_eq!(r[0], (1000, 2500)); // most recent first
        assert_eq!(r[1], (3000, 4000));
        assert_eq!(b.write(0, &data[..1000]), WriteOutcome::InOrder(2500));
        assert_eq!(b.ooo_ranges(), 1);
        assert_eq!(b.ooo_end(), 1500);
        assert_eq!(b.write(0, &data[2500..3000]), WriteOutcome::InOrder(1500));
        assert!(!b.has_ooo());
        assert_eq!(readable(&b), data[..4000].to_vec());
        let mut out = vec![0; 100];
        assert_eq!(b.read(&mut out), 100);
        assert_eq!(out, data[..100].to_vec());
    }

    #[test]
    fn range_slots_are_bounded() {
        let mut b = RecvBuf::new(100_000);
        for i in 0..MAX_OOO_RANGES {
            assert_eq!(b.write(10 + i * 20, &[1; 5]), WriteOutcome::Queued);
        }
        assert_eq!(b.write(5000, &[1; 5]), WriteOutcome::Dropped);
        // Extending an existing range still works.
        assert_eq!(b.write(15, &[1; 5]), WriteOutcome::Queued);
        assert_eq!(b.ooo_ranges(), MAX_OOO_RANGES);
        assert_eq!(b.write(99_999, &[1; 5]), WriteOutcome::Dropped);
    }

    proptest! {
        #[test]
        fn reassembles_any_arrival_order(
            segs in proptest::collection::vec((0usize..6000, 1usize..900), 1..80),
            reads in proptest::collection::vec(0usize..2000, 1..80),
        ) {
            let stream: Vec<u8> = (0..20_000u32).map(|i| (i ^ (i >> 8)) as u8).collect();
            let cap = 4096;
            let mut b = RecvBuf::new(cap);
            let mut nxt = 0usize; // stream offset of RCV.NXT
            let mut got = Vec::new();
            for (i, (start, len)) in segs.into_iter().enumerate() {
                let start = nxt + start % 5000;
                let end = (start + len).min(stream.len());
                if start >= end { continue; }
                let off = start - nxt;
                let room = b.free();
                if off >= room { continue; }
                let end = end.min(nxt + room);
                match b.write(off, &stream[start..end]) {
                    WriteOutcome::InOrder(n) => { prop_assert_eq!(off, 0); nxt += n; }
                    WriteOutcome::Queued | WriteOutcome::Dropped => prop_assert!(off > 0),
                }
                prop_assert!(b.allocated() <= cap);
                prop_assert!(b.len() + b.ooo_end() as usize <= cap);
                let r = reads[i % reads.len()];
                let mut out = vec![0; r];
                let n = b.read(&mut out);
                got.extend_from_slice(&out[..n]);
            }
            let (x, y) = b.peek();
            got.extend_from_slice(x);
            got.extend_from_slice(y);
            prop_assert_eq!(&got[..], &stream[..got.len()]);
            prop_assert_eq!(got.len(), nxt);
        }
    }
}
