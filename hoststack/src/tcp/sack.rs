//! The sender's SACK scoreboard (RFC 6675 §3): which bytes above SND.UNA the receiver
//! reported holding (RFC 2018 SACK blocks), and the queries SACK-based loss recovery needs:
//! IsLost (§4), the holes to retransmit (NextSeg, §4) and SACKed byte counts for the pipe
//! estimate (SetPipe, §4).
//!
//! It is a fixed array of disjoint, sorted ranges: bounded memory whatever the peer sends.
//! Blocks that are inverted, below SND.UNA or beyond SND.MAX (what was ever sent) are ignored
//! (they can only be bogus or D-SACK, which is not used). When the array is full, the
//! highest range is forgotten: losing SACK information only costs extra retransmissions.

use super::segment::SackBlock;
use super::seq::Seq;

/// Most SACKed ranges remembered.
pub const MAX_SACKED_RANGES: usize = 16;

/// DupThresh of RFC 5681 / RFC 6675.
pub const DUP_THRESH: u32 = 3;

/// One SACKed range `[left, right)`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Range {
    left: Seq,
    right: Seq,
}

/// The SACK scoreboard of one connection.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    /// Sorted, disjoint, non-adjacent ranges, all within (SND.UNA, SND.MAX].
    r: [Range; MAX_SACKED_RANGES],
    /// Valid entries of `r`.
    n: u8,
}

impl Scoreboard {
    /// An empty scoreboard.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when nothing is SACKed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of ranges held.
    #[inline]
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Forgets everything (after a retransmission timeout, RFC 2018 §8).
    #[inline]
    pub fn clear(&mut self) {
        self.n = 0;
    }

    fn ranges(&self) -> &[Range] {
        &self.r[..self.n as usize]
    }

    /// Records the SACK blocks of an ACK, `una` and `max` being SND.UNA (after this ACK) and
    /// the highest sequence number sent plus one. Returns true when a byte not SACKed before
    /// is now.
    pub fn update(&mut self, blocks: &[SackBlock], una: Seq, max: Seq) -> bool {
        let mut new_info = false;
        for b in blocks {
            if !b.left.lt(b.right) || b.right.gt(max) || b.right.le(una) || b.left.lt(una) {
                continue;
            }
            new_info |= self.insert(b.left, b.right);
        }
        new_info
    }

    /// Inserts `[l, r)`; returns true when it covered something new.
    fn insert(&mut self, l: Seq, r: Seq) -> bool {
        let n = self.n as usize;
        // First range that ends at or after l (may merge), last one that starts at or
        // before r.
        let first = self.r[..n].partition_point(|x| x.right.lt(l));
        let mut last = first;
        while last < n && self.r[last].left.le(r) {
            last += 1;
        }
        if first + 1 == last && self.r[first].left.le(l) && r.le(self.r[first].right) {
            return false; // already covered
        }
        let merged = if first == last {
            Range { left: l, right: r }
        } else {
            Range {
                left: l.min(self.r[first].left),
                right: r.max(self.r[last - 1].right),
            }
        };
        if first == last {
            if n == MAX_SACKED_RANGES {
                if first == n {
                    return false; // would be the highest: forget it right away
                }
                // Forget the highest range to make room.
                self.r.copy_within(first..n - 1, first + 1);
            } else {
                self.r.copy_within(first..n, first + 1);
                self.n += 1;
            }
        } else {
            self.r.copy_within(last..n, first + 1);
            self.n = (n - (last - first) + 1) as u8;
        }
        self.r[first] = merged;
        true
    }

    /// Drops what the cumulative ACK `una` now covers.
    pub fn advance(&mut self, una: Seq) {
        let n = self.n as usize;
        let k = self.r[..n].partition_point(|x| x.right.le(una));
        if k > 0 {
            self.r.copy_within(k..n, 0);
            self.n = (n - k) as u8;
        }
        if self.n > 0 && self.r[0].left.lt(una) {
            self.r[0].left = una;
        }
    }

    /// One past the highest SACKed byte, if any.
    #[inline]
    pub fn high(&self) -> Option<Seq> {
        self.ranges().last().map(|x| x.right)
    }

    /// True when `s` is SACKed.
    pub fn is_sacked(&self, s: Seq) -> bool {
        self.ranges().iter().any(|x| s.in_range(x.left, x.right))
    }

    /// If `s` lies in a SACKed range, the end of that range; else `s`.
    pub fn skip_sacked(&self, s: Seq) -> Seq {
        for x in self.ranges() {
            if s.in_range(x.left, x.right) {
                return x.right;
            }
        }
        s
    }

    /// The first byte at or after `from` (and below `max`) that is not SACKed, with the end of
    /// its hole (the next SACKed range, or `max`).
    pub fn next_hole(&self, from: Seq, max: Seq) -> Option<(Seq, Seq)> {
        let mut s = from;
        for x in self.ranges() {
            if x.right.le(s) {
                continue;
            }
            if x.left.le(s) {
                s = x.right;
                continue;
            }
            // x starts above s: [s, x.left) is a hole.
            return s.lt(max).then_some((s, x.left.min(max)));
        }
        s.lt(max).then_some((s, max))
    }

    /// SACKed bytes within `[a, b)`.
    pub fn sacked_in(&self, a: Seq, b: Seq) -> u32 {
        let mut sum = 0u32;
        for x in self.ranges() {
            let l = x.left.max(a);
            let r = x.right.min(b);
            if l.lt(r) {
                sum += (r - l) as u32;
            }
        }
        sum
    }

    /// RFC 6675 IsLost as a boundary: every unSACKed byte below the returned sequence number
    /// is lost (at least [`DUP_THRESH`] SACKed segments, or more than (DupThresh − 1)·SMSS
    /// SACKed bytes, lie above it), none above it is. `None` when nothing is lost.
    pub fn lost_edge(&self, smss: u32) -> Option<Seq> {
        let smss = smss.max(1);
        let mut segs = 0u32;
        let mut bytes = 0u32;
        for x in self.ranges().iter().rev() {
            let len = (x.right - x.left) as u32;
            bytes = bytes.saturating_add(len);
            segs = segs.saturating_add(len.div_ceil(smss));
            if segs >= DUP_THRESH || bytes > (DUP_THRESH - 1) * smss {
                return Some(x.left);
            }
        }
        None
    }

    /// RFC 6675 SetPipe over `[una, max)`: unSACKed bytes not lost (at or above `lost_edge`),
    /// plus unSACKed bytes already retransmitted (below `rxt_next`).
    pub fn pipe(&self, una: Seq, max: Seq, lost_edge: Option<Seq>, rxt_next: Seq) -> u32 {
        let mut p = 0u32;
        let a = match lost_edge {
            Some(e) => e.max(una).min(max),
            None => una,
        };
        if a.lt(max) {
            p += ((max - a) as u32).saturating_sub(self.sacked_in(a, max));
        }
        let r = rxt_next.min(max);
        if una.lt(r) {
            p += ((r - una) as u32).saturating_sub(self.sacked_in(una, r));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(l: u32, r: u32) -> SackBlock {
        SackBlock {
            left: Seq(l),
            right: Seq(r),
        }
    }

    #[test]
    fn merge_and_holes() {
        let mut s = Scoreboard::new();
        let una = Seq(1000);
        let max = Seq(20_000);
        assert!(s.update(&[b(3000, 4000), b(6000, 7000)], una, max));
        assert!(!s.update(&[b(3000, 4000)], una, max));
        assert!(s.update(&[b(4000, 5000)], una, max)); // adjacent: merges
        assert_eq!(s.len(), 2);
        assert_eq!(s.next_hole(una, max), Some((Seq(1000), Seq(3000))));
        assert_eq!(s.next_hole(Seq(3500), max), Some((Seq(5000), Seq(6000))));
        assert_eq!(s.next_hole(Seq(6500), max), Some((Seq(7000), max)));
        assert_eq!(s.sacked_in(una, max), 3000);
        assert_eq!(s.high(), Some(Seq(7000)));
        assert!(s.is_sacked(Seq(4999)) && !s.is_sacked(Seq(5000)));
        s.advance(Seq(3500));
        assert_eq!(s.sacked_in(Seq(0), max), 2500);
        s.advance(Seq(8000));
        assert!(s.is_empty());
    }

    #[test]
    fn bogus_blocks_ignored() {
        let mut s = Scoreboard::new();
        let una = Seq(1000);
        let max = Seq(5000);
        assert!(!s.update(
            &[
                b(4000, 3000),
                b(500, 900),
                b(4000, 6000),
                b(900, 1500),
                b(1000, 1000)
            ],
            una,
            max
        ));
        assert!(s.is_empty());
        // Wrap-around sequence numbers.
        let una = Seq(u32::MAX - 100);
        assert!(s.update(&[b(u32::MAX - 50, 20)], una, Seq(1000)));
        assert_eq!(s.sacked_in(una, Seq(1000)), 71);
    }

    #[test]
    fn is_lost_and_pipe() {
        let smss = 100;
        let mut s = Scoreboard::new();
        let una = Seq(0);
        let max = Seq(1000);
        // Segments of 100 bytes, 0 and 300 lost, the others SACKed up to 600.
        s.update(&[b(100, 300)], una, max);
        assert_eq!(s.lost_edge(smss), None);
        s.update(&[b(400, 600)], una, max);
        // Above 300: 2 segments; above 0: 4 segments => 0..100 lost, 300 not yet.
        assert_eq!(s.lost_edge(smss), Some(Seq(100)));
        s.update(&[b(600, 700)], una, max);
        assert_eq!(s.lost_edge(smss), Some(Seq(400)));
        // pipe: unsacked not lost in [400, 1000) = 300 (700..1000); nothing retransmitted.
        assert_eq!(s.pipe(una, max, s.lost_edge(smss), una), 300);
        // After retransmitting 0..100 and 300..400.
        assert_eq!(s.pipe(una, max, s.lost_edge(smss), Seq(400)), 500);
    }

    #[test]
    fn bounded() {
        let mut s = Scoreboard::new();
        for i in 0..100u32 {
            s.update(&[b(1000 + i * 20, 1010 + i * 20)], Seq(0), Seq(1_000_000));
            assert!(s.len() <= MAX_SACKED_RANGES);
        }
        assert_eq!(s.len(), MAX_SACKED_RANGES);
        assert_eq!(s.high(), Some(Seq(1010 + 15 * 20)));
    }

    proptest! {
        #[test]
        fn matches_bitmap_model(blocks in proptest::collection::vec((0u32..2000, 0u32..300), 0..40), una in 0u32..500) {
            let mut s = Scoreboard::new();
            let base = u32::MAX - 1000; // exercise wrap-around
            let max = 2000u32;
            let mut model = [false; 2000];
            let mut exact = true; // the scoreboard never had to forget a range
            for (l, len) in blocks {
                let r = l + len;
                if s.len() == MAX_SACKED_RANGES {
                    exact = false;
                }
                s.update(&[b(base.wrapping_add(l), base.wrapping_add(r))], Seq(base.wrapping_add(una)), Seq(base.wrapping_add(max)));
                if len > 0 && r <= max && l >= una {
                    for m in model.iter_mut().take(r as usize).skip(l as usize) { *m = true; }
                }
                prop_assert!(s.len() <= MAX_SACKED_RANGES);
                if exact {
                    for (i, &m) in model.iter().enumerate() {
                        prop_assert_eq!(s.is_sacked(Seq(base.wrapping_add(i as u32))), m);
                    }
                }
            }
        }
    }
}
