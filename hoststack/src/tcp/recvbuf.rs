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
//! Storage is lazy and grows by doubling up to the capacity, as for the send buffer.

/// Most out-of-order ranges (holes) remembered; a segment that would need another one is
/// dropped (the peer retransmits it).
pub const MAX_OOO_RANGES: usize = 16;

/// Smallest storage allocated on first use.
const MIN_ALLOC: usize = 2048;

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

/// Receive ring with out-of-order ranges.
#[derive(Debug)]
pub struct RecvBuf {
    /// Ring storage; its length is the current ring size (0 until first use).
    buf: Vec<u8>,
    /// Largest size the ring may grow to.
    cap: usize,
    /// Index of the first readable byte.
    head: usize,
    /// Readable (in-order) bytes.
    len: usize,
    /// Out-of-order ranges, sorted, disjoint and not adjacent.
    ooo: [Range; MAX_OOO_RANGES],
    /// Valid entries of `ooo`.
    n_ooo: u8,
    /// Recency counter for the SACK block order.
    stamp: u32,
}

impl RecvBuf {
    /// An empty buffer of capacity `cap` bytes; allocates nothing.
    pub fn new(cap: usize) -> Self {
        RecvBuf {
            buf: Vec::new(),
            cap: cap.min(u32::MAX as usize / 2),
            head: 0,
            len: 0,
            ooo: [Range::default(); MAX_OOO_RANGES],
            n_ooo: 0,
            stamp: 0,
        }
    }

    /// Readable bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is readable.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The configured capacity.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Space after the readable bytes: the most the receive window may cover.
    #[inline]
    pub fn free(&self) -> usize {
        self.cap - self.len
    }

    /// Bytes of storage currently allocated (≤ capacity).
    #[inline]
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// True when out-of-order data is held.
    #[inline]
    pub fn has_ooo(&self) -> bool {
        self.n_ooo != 0
    }

    /// Number of out-of-order ranges held.
    #[inline]
    pub fn ooo_ranges(&self) -> usize {
        self.n_ooo as usize
    }

    /// Grows the ring (linearising the readable bytes and the window behind them) so that
    /// `need` bytes from the head fit.
    fn grow(&mut self, need: usize) {
        let size = need.max(self.buf.len() * 2).max(MIN_ALLOC).min(self.cap);
        let mut nb = vec![0u8; size];
        let old = self.buf.len();
        if old > 0 {
            // Everything the old ring holds, in logical order from the head.
            let first = old - self.head;
            nb[..first].copy_from_slice(&self.buf[self.head..]);
            nb[first..old].copy_from_slice(&self.buf[..self.head]);
        }
        self.buf = nb;
        self.head = 0;
    }

    /// Copies `data` to logical offset `pos` from the head (the ring must be big enough).
    fn put(&mut self, pos: usize, data: &[u8]) {
        let size = self.buf.len();
        let mut at = self.head + pos;
        if at >= size {
            at -= size;
        }
        let first = data.len().min(size - at);
        self.buf[at..at + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
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
        let off32 = off as u32;
        if off == 0 {
            self.ensure(self.len + data.len());
            self.put(self.len, data);
            // Join the out-of-order ranges now reached.
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
            self.len += adv as usize;
            return WriteOutcome::InOrder(adv as usize);
        }
        // Out of order: merge with the ranges it overlaps or touches.
        let n = self.n_ooo as usize;
        let first = self.ooo[..n].partition_point(|r| r.end < off32);
        let mut last = first;
        while last < n && self.ooo[last].start <= end {
            last += 1;
        }
        if first == last && n == MAX_OOO_RANGES {
            return WriteOutcome::Dropped;
        }
        self.stamp = self.stamp.wrapping_add(1);
        let merged = if first == last {
            Range {
                start: off32,
                end,
                stamp: self.stamp,
            }
        } else {
            Range {
                start: off32.min(self.ooo[first].start),
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
        self.ensure(self.len + end as usize);
        self.put(self.len + off, data);
        WriteOutcome::Queued
    }

    /// Makes sure storage holds `need` bytes from the head.
    #[inline]
    fn ensure(&mut self, need: usize) {
        if need > self.buf.len() {
            self.grow(need);
        }
    }

    /// The out-of-order ranges as `(start, end)` offsets from RCV.NXT, most recently
    /// extended first (RFC 2018 §4), at most `out.len()`; returns how many were written.
    pub fn sack_ranges(&self, out: &mut [(u32, u32)]) -> usize {
        let n = self.n_ooo as usize;
        let mut taken = 0u32; // bit i: ooo[i] already reported
        let mut k = 0;
        while k < out.len() && k < n {
            let mut best = usize::MAX;
            let mut best_age = u32::MAX;
            for (i, r) in self.ooo[..n].iter().enumerate() {
                let age = self.stamp.wrapping_sub(r.stamp);
                if taken & (1 << i) == 0 && age < best_age {
                    best = i;
                    best_age = age;
                }
            }
            taken |= 1 << best;
            out[k] = (self.ooo[best].start, self.ooo[best].end);
            k += 1;
        }
        k
    }

    /// The end of the highest out-of-order range (offset from RCV.NXT), 0 when none.
    pub fn ooo_end(&self) -> u32 {
        if self.n_ooo == 0 {
            0
        } else {
            self.ooo[self.n_ooo as usize - 1].end
        }
    }

    /// The readable bytes, as two slices.
    pub fn peek(&self) -> (&[u8], &[u8]) {
        if self.len == 0 {
            return (&[], &[]);
        }
        let size = self.buf.len();
        let first = self.len.min(size - self.head);
        (
            &self.buf[self.head..self.head + first],
            &self.buf[..self.len - first],
        )
    }

    /// Drops `n` readable bytes (clamped to what is readable).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        self.head += n;
        if self.head >= self.buf.len() {
            self.head -= self.buf.len();
        }
        if self.len == 0 && self.n_ooo == 0 {
            self.head = 0;
        }
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
        self.buf = Vec::new();
        self.head = 0;
        self.len = 0;
        self.n_ooo = 0;
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
