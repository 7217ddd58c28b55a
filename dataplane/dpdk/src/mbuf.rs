//! [`Mbuf`]: one owned, single-segment DPDK packet buffer.

use std::fmt;
use std::ptr::NonNull;

use crate::sys;

/// Bytes of headroom a freshly allocated mbuf has in front of its data
/// (`RTE_PKTMBUF_HEADROOM`).
pub const PKTMBUF_HEADROOM: usize = sys::RTE_PKTMBUF_HEADROOM as usize;

/// ol_flags marking an mbuf whose data buffer may be shared with other mbufs.
const SHARED_FLAGS: u64 = sys::RTE_MBUF_F_INDIRECT | sys::RTE_MBUF_F_EXTERNAL;

/// One DPDK packet buffer (`struct rte_mbuf`), owned.
///
/// Invariant: the mbuf is a single segment (`nb_segs == 1`), its reference count is 1 and
/// its data buffer is not shared with any other mbuf, so `data_mut` hands out the only
/// access. Every way to obtain an `Mbuf` upholds this: [`crate::Mempool::alloc`] returns
/// fresh ones, and [`crate::EthQueue::rx_burst`] drops (and counts) any received mbuf that
/// is chained or shared. With a pool data room of at least 2048 + 128 bytes and rx scatter
/// off (never enabled by [`crate::EthDev`]), PMDs do not produce chains for frames up to
/// 2048 bytes; longer frames are dropped, so `data()` is always the whole frame.
///
/// `#[repr(transparent)]` over the mbuf pointer, so a `Vec<Mbuf>` is an `rte_mbuf *` array
/// for burst calls. Dropping it returns it to its pool (`rte_pktmbuf_free`). Its pool stays
/// valid while it lives (a pool dropped with live mbufs is leaked, not freed).
#[repr(transparent)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an Mbuf is exclusively owned (invariant above); freeing it from another thread is
// safe with DPDK's mp/mc pool ops.
unsafe impl Send for Mbuf {}
// SAFETY: &Mbuf only gives read access to the frame and header fields; no interior
// mutability.
unsafe impl Sync for Mbuf {}

impl Mbuf {
    /// Wraps a raw mbuf, or `None` for NULL.
    ///
    /// # Safety
    /// `m` must be NULL or a valid mbuf the caller owns and gives away, satisfying the type
    /// invariant (single segment, refcnt 1, unshared data), from a pool that stays valid.
    #[inline]
    pub(crate) unsafe fn from_raw(m: *mut sys::rte_mbuf) -> Option<Mbuf> {
        NonNull::new(m).map(Mbuf)
    }

    /// The raw pointer, still owned by `self`.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut sys::rte_mbuf {
        self.0.as_ptr()
    }

    #[inline]
    fn raw(&self) -> &sys::rte_mbuf {
        // SAFETY: the pointer is a valid mbuf owned by self (type invariant).
        unsafe { self.0.as_ref() }
    }

    /// Quick check of the type invariant for a received mbuf: zero exactly when it is a
    /// single segment with refcnt 1 whose data buffer is not attached from elsewhere; non-zero
    /// does not prove sharing (see [`Mbuf::is_exclusive_slow`]). Built from two loads
    /// (`refcnt` and `nb_segs` are adjacent 16-bit fields) with no branch, for OR-ing over a
    /// whole burst.
    #[inline(always)]
    pub(crate) fn not_plain_bits(&self) -> u64 {
        let m = self.raw();
        let segs_refs = u32::from(m.refcnt) | (u32::from(m.nb_segs) << 16);
        u64::from(segs_refs ^ 0x0001_0001) | (m.ol_flags & SHARED_FLAGS)
    }

    /// Full check of the type invariant (also accepts an unshared external buffer).
    pub(crate) fn is_exclusive_slow(&self) -> bool {
        // SAFETY: a read-only inspection of a valid mbuf.
        unsafe { sys::shim_pktmbuf_is_exclusive(self.as_ptr()) == 1 }
    }

    /// Frame length in bytes (`data_len`).
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.raw().data_len)
    }

    /// True for an empty frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw().data_len == 0
    }

    /// The frame bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        let m = self.raw();
        // SAFETY: for a valid single-segment mbuf, [buf_addr + data_off, + data_len) lies
        // inside its buffer; self owns it exclusively, so no one writes it while borrowed.
        unsafe {
            std::slice::from_raw_parts(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        }
    }

    /// The frame bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let (off, len) = (
            usize::from(self.raw().data_off),
            usize::from(self.raw().data_len),
        );
        let base = self.raw().buf_addr.cast::<u8>();
        // SAFETY: as in data(); &mut self guarantees unique access, and the buffer is not
        // shared with any other mbuf (type invariant).
        unsafe { std::slice::from_raw_parts_mut(base.add(off), len) }
    }

    /// Free bytes in front of the frame.
    #[inline]
    pub fn headroom(&self) -> usize {
        usize::from(self.raw().data_off)
    }

    /// Free bytes behind the frame.
    #[inline]
    pub fn tailroom(&self) -> usize {
        let m = self.raw();
        usize::from(m.buf_len) - usize::from(m.data_off) - usize::from(m.data_len)
    }

    /// Grows the frame by `n` bytes at the front (`rte_pktmbuf_prepend`) and returns them
    /// (content unspecified), or `None` (frame unchanged) when the headroom is too small.
    pub fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        let len = u16::try_from(n).ok()?;
        // SAFETY: valid, exclusively owned mbuf; DPDK checks the headroom and returns NULL
        // (changing nothing) when it is too small.
        let p = unsafe { sys::shim_pktmbuf_prepend(self.as_ptr(), len) };
        if p.is_null() {
            return None;
        }
        // SAFETY: p points at the n new bytes at the frame's front, inside the buffer; the
        // borrow of self keeps them exclusive.
        Some(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), n) })
    }

    /// Removes `n` bytes from the front (`rte_pktmbuf_adj`); false (frame unchanged) when
    /// `n > len()`.
    pub fn adj(&mut self, n: usize) -> bool {
        let Ok(len) = u16::try_from(n) else {
            return false;
        };
        // SAFETY: valid, exclusively owned mbuf; DPDK refuses (NULL) when len > data_len.
        !unsafe { sys::shim_pktmbuf_adj(self.as_ptr(), len) }.is_null()
    }

    /// Grows the frame by `n` bytes at the back (`rte_pktmbuf_append`) and returns them
    /// (content unspecified), or `None` (frame unchanged) when the tailroom is too small.
    pub fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        let len = u16::try_from(n).ok()?;
        // SAFETY: valid, exclusively owned single-segment mbuf; DPDK checks the tailroom
        // and returns NULL (changing nothing) when it is too small.
        let p = unsafe { sys::shim_pktmbuf_append(self.as_ptr(), len) };
        if p.is_null() {
            return None;
        }
        // SAFETY: p points at the n new bytes at the frame's end, inside the buffer; the
        // borrow of self keeps them exclusive.
        Some(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), n) })
    }

    /// Removes `n` bytes from the back (`rte_pktmbuf_trim`); false (frame unchanged) when
    /// `n > len()`.
    pub fn trim(&mut self, n: usize) -> bool {
        let Ok(len) = u16::try_from(n) else {
            return false;
        };
        // SAFETY: valid, exclusively owned single-segment mbuf; DPDK refuses (-1) when
        // len > data_len.
        unsafe { sys::shim_pktmbuf_trim(self.as_ptr(), len) == 0 }
    }

    /// The port the frame was received on (as set by the PMD; unspecified for mbufs not
    /// received from a port).
    #[inline]
    pub fn port(&self) -> u16 {
        self.raw().port
    }

    /// The RSS hash the device computed for this frame, if it reported one.
    #[inline]
    pub fn rss_hash(&self) -> Option<u32> {
        let m = self.raw();
        if m.ol_flags & u64::from(sys::RTE_MBUF_F_RX_RSS_HASH) == 0 {
            return None;
        }
        // SAFETY: with RTE_MBUF_F_RX_RSS_HASH set the PMD stored the hash in hash.rss; any
        // bit pattern is a valid u32 anyway.
        Some(unsafe { m.__bindgen_anon_2.hash.rss })
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: self owns the mbuf; after this it is never used again.
        unsafe { sys::shim_pktmbuf_free(self.as_ptr()) }
    }
}

impl fmt::Debug for Mbuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mbuf")
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .field("tailroom", &self.tailroom())
            .finish()
    }
}

/// Frees every mbuf in `pkts` with one `rte_pktmbuf_free_bulk` call (cheaper than dropping
/// them one by one) and leaves `pkts` empty, keeping its capacity.
pub fn free_bulk(pkts: &mut Vec<Mbuf>) {
    if pkts.is_empty() {
        return;
    }
    let n = u32::try_from(pkts.len()).unwrap_or(u32::MAX) as usize;
    // SAFETY: the first n elements are owned, valid mbufs laid out as `rte_mbuf *`
    // (repr(transparent)); DPDK frees them all.
    unsafe { sys::rte_pktmbuf_free_bulk(pkts.as_mut_ptr().cast::<*mut sys::rte_mbuf>(), n as u32) };
    // The first n are freed: forget them without running Drop; the rest (never any in
    // practice) drop normally.
    pkts.drain(..n).for_each(std::mem::forget);
    pkts.clear();
}
