//! The send buffer of one connection: a byte ring holding the send sequence space from
//! SND.UNA to the last byte the application queued (RFC 9293 §3.3.1, Figure 3): bytes sent
//! and not yet acknowledged, then bytes not yet sent.
//!
//! Storage is lazy (AccelTCP §5.2's "lazy TCB"): nothing is allocated until the first
//! [`SendBuf::write`], and the ring then grows by doubling up to the configured capacity
//! (SO_SNDBUF), so connections that carry little data stay small. Growth is the only
//! allocation; the per-segment paths ([`SendBuf::write`] within the current size,
//! [`SendBuf::slices`], [`SendBuf::consume`]) never allocate.

/// Smallest storage allocated on first use.
const MIN_ALLOC: usize = 2048;

/// A byte ring of bounded capacity.
#[derive(Debug)]
pub struct SendBuf {
    /// Ring storage; its length is the current ring size (0 until first use).
    buf: Vec<u8>,
    /// Largest size the ring may grow to.
    cap: usize,
    /// Index of the oldest byte (SND.UNA).
    head: usize,
    /// Bytes held.
    len: usize,
}

impl SendBuf {
    /// An empty buffer that may hold up to `cap` bytes; allocates nothing.
    pub fn new(cap: usize) -> Self {
        SendBuf {
            buf: Vec::new(),
            cap,
            head: 0,
            len: 0,
        }
    }

    /// Bytes held (unacknowledged plus unsent).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The configured capacity.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes that [`SendBuf::write`] would still accept.
    #[inline]
    pub fn free(&self) -> usize {
        self.cap - self.len
    }

    /// Bytes of storage currently allocated (≤ capacity).
    #[inline]
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// Grows the ring (linearising it) so that it can hold `need` bytes.
    fn grow(&mut self, need: usize) {
        let size = need.max(self.buf.len() * 2).max(MIN_ALLOC).min(self.cap);
        let mut nb = vec![0u8; size];
        let (a, b) = self.slices(0, self.len);
        nb[..a.len()].copy_from_slice(a);
        nb[a.len()..a.len() + b.len()].copy_from_slice(b);
        self.buf = nb;
        self.head = 0;
    }

    /// Appends as much of `data` as fits; returns the number of bytes taken.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        if n == 0 {
            return 0;
        }
        if self.len + n > self.buf.len() {
            self.grow(self.len + n);
        }
        let size = self.buf.len();
        let mut tail = self.head + self.len;
        if tail >= size {
            tail -= size;
        }
        let first = n.min(size - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        self.buf[..n - first].copy_from_slice(&data[first..n]);
        self.len += n;
        n
    }

    /// Drops `n` bytes from the front (they were acknowledged); `n` is clamped to the length.
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        if self.len == 0 {
            self.head = 0;
        } else {
            self.head += n;
            if self.head >= self.buf.len() {
                self.head -= self.buf.len();
            }
        }
    }

    /// The `n` bytes starting `off` bytes after the front, as two slices (the second one
    /// non-empty only when the range wraps). The range is clamped to what is held.
    pub fn slices(&self, off: usize, n: usize) -> (&[u8], &[u8]) {
        let off = off.min(self.len);
        let n = n.min(self.len - off);
        if n == 0 {
            return (&[], &[]);
        }
        let size = self.buf.len();
        let mut start = self.head + off;
        if start >= size {
            start -= size;
        }
        let first = n.min(size - start);
        (&self.buf[start..start + first], &self.buf[..n - first])
    }

    /// Empties the buffer and frees its storage.
    pub fn release(&mut self) {
        self.buf = Vec::new();
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
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
