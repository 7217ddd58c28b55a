//! The send buffer of one connection: a byte ring holding the send sequence space from
//! SND.UNA to the last byte the application queued (RFC 9293 §3.3.1, Figure 3): bytes sent
//! and not yet acknowledged, then bytes not yet sent.
//!
//! Storage is the lazy [`Ring`]: nothing is allocated until the first [`SendBuf::write`],
//! and the ring then grows by doubling up to the configured capacity (SO_SNDBUF). Growth is
//! the only allocation; the per-segment paths ([`SendBuf::write`] within the current size,
//! [`SendBuf::slices`], [`SendBuf::consume`]) never allocate.

use super::ring::Ring;

/// A byte ring of bounded capacity holding SND.UNA onwards (the oldest byte at its head).
pub type SendBuf = Ring<()>;

impl SendBuf {
    /// An empty buffer that may hold up to `cap` bytes; allocates nothing.
    pub fn new(cap: usize) -> Self {
        Ring::with_state(cap, ())
    }

    /// Appends as much of `data` as fits; returns the number of bytes taken.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        if n == 0 {
            return 0;
        }
        self.reserve(self.len() + n);
        self.put(self.len(), &data[..n]);
        self.commit(n);
        n
    }

    /// Drops `n` bytes from the front (they were acknowledged); `n` is clamped to the length.
    pub fn consume(&mut self, n: usize) {
        self.pop_front(n, true);
    }

    /// The `n` bytes starting `off` bytes after the front, as two slices (the second one
    /// non-empty only when the range wraps). The range is clamped to what is held.
    pub fn slices(&self, off: usize, n: usize) -> (&[u8], &[u8]) {
        let off = off.min(self.len());
        let n = n.min(self.len() - off);
        self.view(off, n)
    }

    /// Empties the buffer and frees its storage.
    pub fn release(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::ring::MIN_ALLOC;
    use super::*;
    use proptest::prelude::*;

    fn collect(b: &SendBuf, off: usize, n: usize) -> Vec<u8> {
        let (x, y) = b.slices(off, n);
        let mut v = x.to_vec();
        v.extend_from_slice(y);
        v
    }

    #[test]
    fn lazy_and_bounded() {
        let mut b = SendBuf::new(5000);
        assert_eq!(b.allocated(), 0);
        assert_eq!(b.write(&[1; 100]), 100);
        assert_eq!(b.allocated(), MIN_ALLOC);
        assert_eq!(b.write(&[2; 6000]), 4900);
        assert_eq!(b.allocated(), 5000);
        assert_eq!(b.free(), 0);
        assert_eq!(b.write(&[3]), 0);
        b.release();
        assert_eq!(b.allocated(), 0);
        assert!(b.is_empty());
    }

    #[test]
    fn wraps_and_grows_keeping_order() {
        let mut b = SendBuf::new(10_000);
        let data: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        b.write(&data[..2000]);
        b.consume(1500);
        b.write(&data[2000..3000]); // wraps inside the 2048-byte ring, then grows
        assert_eq!(collect(&b, 0, 1500), data[1500..3000].to_vec());
        assert_eq!(collect(&b, 100, 10), data[1600..1610].to_vec());
    }

    proptest! {
        #[test]
        fn matches_model(ops in proptest::collection::vec((0u8..3, 0usize..3000), 1..60)) {
            let mut b = SendBuf::new(4096);
            let mut model: std::collections::VecDeque<u8> = Default::default();
            let mut k = 0u8;
            for (op, n) in ops {
                match op {
                    0 => {
                        let data: Vec<u8> = (0..n).map(|_| { k = k.wrapping_add(1); k }).collect();
                        let took = b.write(&data);
                        prop_assert_eq!(took, n.min(4096 - model.len()));
                        model.extend(&data[..took]);
                    }
                    1 => {
                        b.consume(n);
                        for _ in 0..n.min(model.len()) { model.pop_front(); }
                    }
                    _ => {
                        let off = n % (model.len() + 1);
                        let got = collect(&b, off, 700);
                        let want: Vec<u8> = model.iter().skip(off).take(700).copied().collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(b.len(), model.len());
                prop_assert!(b.allocated() <= 4096);
            }
        }
    }
}
