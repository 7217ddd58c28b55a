//! The byte ring under both buffers of a connection ([`SendBuf`], [`RecvBuf`]).
//!
//! Storage is lazy (AccelTCP §5.2's "lazy TCB"): nothing is allocated until the first write,
//! and the ring then grows by doubling up to the configured capacity (SO_SNDBUF, SO_RCVBUF),
//! so connections that carry little data stay small. Growth is the only allocation; writing
//! within the current size, reading and consuming never allocate.
//!
//! [`SendBuf`]: super::sendbuf::SendBuf
//! [`RecvBuf`]: super::recvbuf::RecvBuf

/// Smallest storage allocated on first use.
pub(super) const MIN_ALLOC: usize = 2048;

/// A byte ring of bounded capacity, allocated on first use; `T` is what the buffer built on
/// it keeps besides (the receive buffer's out-of-order ranges, nothing for the send buffer).
///
/// The ring holds [`Ring::len`] bytes in order from its head (logical offsets `0..len`). The
/// buffer on top may keep more bytes at higher offsets, up to the allocated size (the receive
/// buffer's out-of-order data): the ring carries them along when it grows.
///
/// Invariants: `len <= allocated() <= capacity()`; `head < allocated()`, or `head == 0` while
/// nothing is allocated; logical offset `i` lives at index `(head + i) % allocated()`, and
/// growing keeps every byte of the old storage at its logical offset.
#[derive(Debug)]
pub struct Ring<T> {
    /// Ring storage; its length is the current ring size (0 until first use).
    buf: Vec<u8>,
    /// Largest size the ring may grow to.
    cap: usize,
    /// Index of logical offset 0.
    head: usize,
    /// Bytes held in order from the head.
    len: usize,
    /// The buffer's own state (the ring never looks at it).
    pub(super) state: T,
}

impl<T> Ring<T> {
    /// An empty ring that may grow to `cap` bytes, with the buffer's `state`; allocates
    /// nothing.
    pub(super) fn with_state(cap: usize, state: T) -> Self {
        Ring {
            buf: Vec::new(),
            cap,
            head: 0,
            len: 0,
            state,
        }
    }

    /// Bytes held in order from the head: for the send buffer, unacknowledged plus unsent;
    /// for the receive buffer, the readable ones.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no bytes are held in order.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The configured capacity.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Room after the bytes held: what the send buffer still accepts, what the receive
    /// window may cover.
    #[inline]
    pub fn free(&self) -> usize {
        self.cap - self.len
    }

    /// Bytes of storage currently allocated (≤ capacity).
    #[inline]
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// Makes sure the storage holds `need` (≤ capacity) bytes from the head.
    #[inline]
    pub(super) fn reserve(&mut self, need: usize) {
        if need > self.buf.len() {
            self.grow(need);
        }
    }

    /// Grows the storage to at least `need` bytes: double the old size, at least
    /// [`MIN_ALLOC`], at most the capacity. The whole old ring is linearised from the head,
    /// so every byte keeps its logical offset.
    fn grow(&mut self, need: usize) {
        let size = need.max(self.buf.len() * 2).max(MIN_ALLOC).min(self.cap);
        let mut nb = vec![0u8; size];
        let old = self.buf.len();
        let (a, b) = self.view(0, old);
        nb[..a.len()].copy_from_slice(a);
        nb[a.len()..old].copy_from_slice(b);
        self.buf = nb;
        self.head = 0;
    }

    /// Copies `data` to logical offset `off` (the storage must hold `off + data.len()` bytes:
    /// [`Ring::reserve`] first).
    pub(super) fn put(&mut self, off: usize, data: &[u8]) {
        let size = self.buf.len();
        let mut at = self.head + off;
        if at >= size {
            at -= size;
        }
        let first = data.len().min(size - at);
        self.buf[at..at + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
    }

    /// The `n` bytes put right after the held ones are held now (`len + n` ≤ allocated).
    #[inline]
    pub(super) fn commit(&mut self, n: usize) {
        debug_assert!(self.len + n <= self.buf.len());
        self.len += n;
    }

    /// The `n` bytes at logical offset `off` (`off + n` ≤ allocated), as two slices: the
    /// second is non-empty only when the range wraps.
    pub(super) fn view(&self, off: usize, n: usize) -> (&[u8], &[u8]) {
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

    /// Drops `n` bytes (clamped to the length) from the front. When none are left and
    /// `rewind` (the buffer keeps no bytes past them either), the head goes back to the start
    /// of the storage.
    pub(super) fn pop_front(&mut self, n: usize, rewind: bool) {
        let n = n.min(self.len);
        self.len -= n;
        self.head += n;
        if self.head >= self.buf.len() {
            self.head -= self.buf.len();
        }
        if self.len == 0 && rewind {
            self.head = 0;
        }
    }

    /// Empties the ring and frees its storage (as new; the buffer's state is left alone).
    pub(super) fn clear(&mut self) {
        self.buf = Vec::new();
        self.head = 0;
        self.len = 0;
    }
}
