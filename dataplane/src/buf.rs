//! Packet buffers: contiguous frame bytes with headroom in front and tailroom behind.
//!
//! Two implementations exist: [`HeapBuf`] (heap memory, used by the in-memory wire and unit
//! tests) and, with the `dpdk` feature, `nicemu_dpdk::Mbuf` (a DPDK mbuf). Pipeline code is
//! generic over [`PacketBuf`] so it runs unchanged on both.

/// Bytes of headroom a fresh buffer reserves in front of the frame, as DPDK's
/// `RTE_PKTMBUF_HEADROOM` does, so that headers can be prepended without copying.
pub const DEFAULT_HEADROOM: usize = 128;
/// Data room of a fresh [`HeapBuf`] (headroom included), like a default DPDK mbuf.
pub const DEFAULT_BUF_SIZE: usize = 2048 + DEFAULT_HEADROOM;

/// A packet buffer.
///
/// Invariant: `headroom() + len() + tailroom()` is constant for the life of the buffer;
/// the operations below only move the frame's start and end within that room.
pub trait PacketBuf: Send + Sized + 'static {
    /// The frame bytes.
    fn data(&self) -> &[u8];
    /// The frame bytes, writable.
    fn data_mut(&mut self) -> &mut [u8];
    /// Free bytes in front of the frame.
    fn headroom(&self) -> usize;
    /// Free bytes behind the frame.
    fn tailroom(&self) -> usize;
    /// Grows the frame by `n` bytes at the front and returns them, or `None` (frame unchanged)
    /// when the headroom is too small.
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]>;
    /// Removes `n` bytes from the front; false (frame unchanged) when `n > len()`.
    fn adj(&mut self, n: usize) -> bool;
    /// Grows the frame by `n` bytes at the back and returns them, or `None` (frame unchanged)
    /// when the tailroom is too small. The new bytes' content is unspecified.
    fn append(&mut self, n: usize) -> Option<&mut [u8]>;
    /// Removes `n` bytes from the back; false (frame unchanged) when `n > len()`.
    fn trim(&mut self, n: usize) -> bool;

    /// Frame length in bytes.
    fn len(&self) -> usize {
        self.data().len()
    }
    /// True for an empty frame.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Replaces the frame with `bytes`; false (frame unchanged) when they do not fit in
    /// `len() + tailroom()`.
    fn set_frame(&mut self, bytes: &[u8]) -> bool {
        let len = self.len();
        if bytes.len() > len + self.tailroom() {
            return false;
        }
        if bytes.len() >= len {
            self.append(bytes.len() - len);
        } else {
            self.trim(len - bytes.len());
        }
        self.data_mut().copy_from_slice(bytes);
        true
    }
}

/// A heap-backed [`PacketBuf`].
#[derive(Clone, Debug)]
pub struct HeapBuf {
    room: Box<[u8]>,
    start: usize,
    end: usize,
}

impl HeapBuf {
    /// An empty buffer of `size` bytes of room with `headroom` reserved in front.
    /// `headroom` is clamped to `size`.
    pub fn with_room(size: usize, headroom: usize) -> Self {
        let start = headroom.min(size);
        HeapBuf {
            room: vec![0u8; size].into_boxed_slice(),
            start,
            end: start,
        }
    }

    /// An empty buffer with the default room and headroom.
    pub fn new() -> Self {
        Self::with_room(DEFAULT_BUF_SIZE, DEFAULT_HEADROOM)
    }

    /// A buffer holding a copy of `frame`, with the default headroom and at least the
    /// default room.
    pub fn from_frame(frame: &[u8]) -> Self {
        let size = DEFAULT_BUF_SIZE.max(DEFAULT_HEADROOM + frame.len());
        let mut b = Self::with_room(size, DEFAULT_HEADROOM);
        b.room[b.start..b.start + frame.len()].copy_from_slice(frame);
        b.end = b.start + frame.len();
        b
    }
}

impl Default for HeapBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl PacketBuf for HeapBuf {
    fn data(&self) -> &[u8] {
        &self.room[self.start..self.end]
    }
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.room[self.start..self.end]
    }
    fn headroom(&self) -> usize {
        self.start
    }
    fn tailroom(&self) -> usize {
        self.room.len() - self.end
    }
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.start {
            return None;
        }
        self.start -= n;
        Some(&mut self.room[self.start..self.start + n])
    }
    fn adj(&mut self, n: usize) -> bool {
        if n > self.end - self.start {
            return false;
        }
        self.start += n;
        true
    }
    fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let old = self.end;
        self.end += n;
        Some(&mut self.room[old..self.end])
    }
    fn trim(&mut self, n: usize) -> bool {
        if n > self.end - self.start {
            return false;
        }
        self.end -= n;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_conserved() {
        let mut b = HeapBuf::from_frame(&[1, 2, 3, 4]);
        let room = b.headroom() + b.len() + b.tailroom();
        b.prepend(14).unwrap().fill(9);
        assert_eq!(
            &b.data()[..15],
            &[9; 14].iter().chain(&[1]).copied().collect::<Vec<_>>()[..]
        );
        assert!(b.adj(14));
        assert_eq!(b.data(), &[1, 2, 3, 4]);
        b.append(2).unwrap().copy_from_slice(&[5, 6]);
        assert_eq!(b.data(), &[1, 2, 3, 4, 5, 6]);
        assert!(b.trim(3));
        assert_eq!(b.data(), &[1, 2, 3]);
        assert_eq!(room, b.headroom() + b.len() + b.tailroom());
    }

    #[test]
    fn out_of_room_is_refused_not_panicked() {
        let mut b = HeapBuf::with_room(16, 4);
        assert!(b.prepend(5).is_none());
        assert!(b.append(13).is_none());
        assert!(!b.adj(1));
        assert!(!b.trim(1));
        assert!(b.set_frame(&[7; 12]));
        assert!(!b.set_frame(&[7; 13]));
        assert_eq!(b.len(), 12);
        assert!(b.set_frame(&[1, 2]));
        assert_eq!(b.data(), &[1, 2]);
    }
}
