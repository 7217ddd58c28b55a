//! The emulated PCIe link between one host core and one NIC lcore: modelled, not free
//! (`docs/architecture.md`, "Crates and what each may depend on").
//!
//! # Shape
//!
//! [`link`] returns the two ends of one link: a [`HostEnd`] for the host core and a
//! [`NicEnd`] for the NIC lcore. Each direction is a bounded ring of descriptors of
//! [`LinkConfig::depth`] entries: host → NIC (the host's "tx") and NIC → host (the host's
//! "rx"). A descriptor carries a port index (`u16`) and a [`LinkBuf`] holding one Ethernet
//! frame of up to [`MAX_FRAME_LEN`] bytes (a 64 KB TSO packet plus the Ethernet and message
//! headers). Frames are plain packets or [`crate::msg`] messages; the link does not look
//! inside them.
//!
//! Each end is owned by one thread: every operation takes `&mut self`, nothing blocks, and a
//! ring is single-producer single-consumer in use (the ring itself is crossbeam's lock-free
//! `ArrayQueue`).
//!
//! # Topology
//!
//! A link joins exactly one host core and one NIC lcore. Many host cores × many NIC lcores
//! build one link per (host core, NIC lcore) pair — [`mesh`] does that — so every ring keeps
//! a single producer and a single consumer and no end needs a lock: a host core sends a
//! flow's packets on the link to the NIC lcore that owns the flow's port queue, and a NIC
//! lcore hands a packet to the host core that owns the flow (RSS) on that core's link.
//!
//! # DMA model ([`DmaMode`])
//!
//! Senders have two calls in both modes: [`LinkEnd::send`] takes a byte slice, and
//! [`LinkEnd::alloc`] + [`LinkEnd::send_buf`] let the sender build the frame in a link buffer.
//! What crosses is counted per direction in [`LinkCounters`]; `dma_copies` / `dma_bytes` count
//! the copies the link itself performs, one memcpy of the whole frame each:
//!
//! | call        | [`DmaMode::Copy`] (default)            | [`DmaMode::ZeroCopy`]                      |
//! |-------------|----------------------------------------|--------------------------------------------|
//! | `send`      | copied into a link buffer: 1 copy      | copied into a link buffer: 1 copy          |
//! | `send_buf`  | copied into a fresh link buffer, the given one recycled: 1 copy | the buffer itself moves: 0 copies |
//!
//! Copy mode models a NIC that DMAs every frame between host memory and its own memory:
//! every crossing costs one real copy, whatever the sender did. ZeroCopy models buffers
//! shared by both sides (the sender writes straight into memory the receiver reads); only a
//! sender that starts from its own slice pays a copy. The receiver never copies: `recv`
//! hands over the link buffer.
//!
//! # Buffers
//!
//! Each direction has a pool of buffers with a free list (a bounded lock-free queue). The
//! sender takes buffers from it ([`LinkEnd::alloc`], or inside `send`); a buffer goes back to
//! the free list of the direction it was made for (its *home*) when the receiver drops it or
//! hands it to [`LinkEnd::recycle`], whichever end or thread that happens on. A buffer that
//! crosses a second link (a NIC lcore forwarding a host frame back, zero-copy) still goes
//! home. `recycle` on the end that owns the home is the cheapest return (no reference-count
//! operation); dropping costs one uncontended `Weak::upgrade` on the dropping thread.
//!
//! A new buffer is allocated (with [`LinkConfig::buf_capacity`] bytes, growing once to the
//! largest frame it carries) only when the free list is empty, and at most
//! [`LinkConfig::max_buffers`] per direction ever exist: the steady state allocates nothing,
//! and [`LinkCounters::buffers_allocated`] shows it. When the pool is exhausted, `alloc`
//! returns `None` and `send` refuses the frame ([`LinkError::NoBuffer`]), as a NIC whose
//! mbuf pool ran dry. Buffers outliving their link are freed when dropped.
//!
//! # Refusals
//!
//! Sends never block. A frame that cannot cross is refused with `Err`, counted, and its
//! buffer recycled: ring full ([`LinkError::Full`], `full_drops`), no buffer
//! ([`LinkError::NoBuffer`], `no_buffer`), longer than [`MAX_FRAME_LEN`]
//! ([`LinkError::TooLarge`], `oversize_drops`), other end gone
//! ([`LinkError::Disconnected`], `disconnected_drops`). Callers that want to retry on `Full`
//! check [`LinkEnd::tx_space`] first or keep the frame.
//!
//! # Counters
//!
//! Each direction's counters are written only by its sender, with a relaxed load and a
//! relaxed store (no locked read-modify-write on the fast path), and read by anyone through
//! a [`LinkMonitor`] (`Send + Sync + Clone`) for periodic statistics. Each field is exact
//! at some instant; fields of one snapshot may come from instants a few packets apart while
//! the sender runs, and are exact once it is idle.

use std::marker::PhantomData;
use std::mem;
use std::ops::{AddAssign, Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crossbeam::queue::ArrayQueue;
use crossbeam::utils::CachePadded;

use crate::msg::{ETH_HEADER_LEN, MAX_HEADER_LEN};
use crate::Direction;

/// Largest frame a descriptor carries: Ethernet header, room for a message header, and an
/// IPv4 packet of the largest size (a 64 KB TSO packet).
pub const MAX_FRAME_LEN: usize = ETH_HEADER_LEN + MAX_HEADER_LEN + 65_535;

/// How frames cross the link; see the [module documentation](self) for what each mode
/// counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DmaMode {
    /// Every crossing copies the frame once, as a DMA into the other side's memory would.
    #[default]
    Copy,
    /// Buffers are shared: a frame built in a link buffer crosses without a copy.
    ZeroCopy,
}

/// Parameters of one link (both directions alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkConfig {
    /// Descriptors per ring (at least 1; 0 is taken as 1).
    pub depth: usize,
    /// DMA model.
    pub dma: DmaMode,
    /// Most buffers that ever exist per direction (at least 1); `None`:
    /// `2 × depth + 64`, room for a full ring, a receiver's bursts and a sender's staging.
    pub max_buffers: Option<usize>,
    /// Initial capacity of a new buffer, bytes (a buffer grows once to the largest frame it
    /// carries and keeps that capacity).
    pub buf_capacity: usize,
}

impl Default for LinkConfig {
    /// 1024 descriptors, [`DmaMode::Copy`], default pool bound, 2 KiB buffers (a
    /// 1514-byte frame plus a message header).
    fn default() -> Self {
        LinkConfig {
            depth: 1024,
            dma: DmaMode::Copy,
            max_buffers: None,
            buf_capacity: 2048,
        }
    }
}

impl LinkConfig {
    /// The ring depth in use (`depth`, at least 1).
    pub fn ring_depth(&self) -> usize {
        self.depth.max(1)
    }

    /// The pool bound in use per direction.
    pub fn pool_bound(&self) -> usize {
        self.max_buffers
            .unwrap_or_else(|| self.ring_depth().saturating_mul(2).saturating_add(64))
            .max(1)
    }
}

/// Which (host core, NIC lcore) pair a link joins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinkId {
    /// Host core index.
    pub host: usize,
    /// NIC lcore index.
    pub nic: usize,
}

/// Why a frame was refused (it was counted and its buffer recycled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The ring toward the other end is full.
    #[error("link ring full")]
    Full,
    /// The direction's buffer pool is exhausted (every buffer is in flight or held).
    #[error("no link buffer available")]
    NoBuffer,
    /// The frame is longer than [`MAX_FRAME_LEN`].
    #[error("frame of {len} bytes exceeds the link's maximum")]
    TooLarge {
        /// The frame's length.
        len: usize,
    },
    /// The other end has been dropped.
    #[error("the other end of the link is gone")]
    Disconnected,
}

/// A snapshot of one direction's counters. Summable across links ([`Self::add`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinkCounters {
    /// Frames that crossed (entered the ring).
    pub packets: u64,
    /// Bytes of those frames.
    pub bytes: u64,
    /// Copies the link performed (one per frame copied; see the DMA model).
    pub dma_copies: u64,
    /// Bytes copied.
    pub dma_bytes: u64,
    /// Frames refused because the ring was full.
    pub full_drops: u64,
    /// Frames refused, and `alloc` calls failed, because the pool was exhausted.
    pub no_buffer: u64,
    /// Frames refused for exceeding [`MAX_FRAME_LEN`].
    pub oversize_drops: u64,
    /// Frames refused because the other end was gone.
    pub disconnected_drops: u64,
    /// Buffers allocated so far for this direction (constant in the steady state).
    pub buffers_allocated: u64,
}

impl LinkCounters {
    /// Adds `other` field by field (wrapping), for totals over links.
    pub fn add(&mut self, other: &LinkCounters) {
        self.packets = self.packets.wrapping_add(other.packets);
        self.bytes = self.bytes.wrapping_add(other.bytes);
        self.dma_copies = self.dma_copies.wrapping_add(other.dma_copies);
        self.dma_bytes = self.dma_bytes.wrapping_add(other.dma_bytes);
        self.full_drops = self.full_drops.wrapping_add(other.full_drops);
        self.no_buffer = self.no_buffer.wrapping_add(other.no_buffer);
        self.oversize_drops = self.oversize_drops.wrapping_add(other.oversize_drops);
        self.disconnected_drops = self
            .disconnected_drops
            .wrapping_add(other.disconnected_drops);
        self.buffers_allocated = self.buffers_allocated.wrapping_add(other.buffers_allocated);
    }

    /// What happened between the snapshot `earlier` and this one (field by field, wrapping).
    pub fn delta(&self, earlier: &LinkCounters) -> LinkCounters {
        LinkCounters {
            packets: self.packets.wrapping_sub(earlier.packets),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
            dma_copies: self.dma_copies.wrapping_sub(earlier.dma_copies),
            dma_bytes: self.dma_bytes.wrapping_sub(earlier.dma_bytes),
            full_drops: self.full_drops.wrapping_sub(earlier.full_drops),
            no_buffer: self.no_buffer.wrapping_sub(earlier.no_buffer),
            oversize_drops: self.oversize_drops.wrapping_sub(earlier.oversize_drops),
            disconnected_drops: self
                .disconnected_drops
                .wrapping_sub(earlier.disconnected_drops),
            buffers_allocated: self
                .buffers_allocated
                .wrapping_sub(earlier.buffers_allocated),
        }
    }
}

impl AddAssign for LinkCounters {
    fn add_assign(&mut self, other: LinkCounters) {
        self.add(&other);
    }
}

/// The live counters of one direction: written by its sender only (relaxed load + store),
/// read by anyone.
#[derive(Default)]
struct Counters {
    packets: AtomicU64,
    bytes: AtomicU64,
    dma_copies: AtomicU64,
    dma_bytes: AtomicU64,
    full_drops: AtomicU64,
    no_buffer: AtomicU64,
    oversize_drops: AtomicU64,
    disconnected_drops: AtomicU64,
    buffers_allocated: AtomicU64,
}

/// Adds `by` to a counter that only the calling thread writes.
fn bump(c: &AtomicU64, by: u64) {
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

impl Counters {
    fn snapshot(&self) -> LinkCounters {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LinkCounters {
            packets: r(&self.packets),
            bytes: r(&self.bytes),
            dma_copies: r(&self.dma_copies),
            dma_bytes: r(&self.dma_bytes),
            full_drops: r(&self.full_drops),
            no_buffer: r(&self.no_buffer),
            oversize_drops: r(&self.oversize_drops),
            disconnected_drops: r(&self.disconnected_drops),
            buffers_allocated: r(&self.buffers_allocated),
        }
    }
}

/// A buffer on a free list, with the way home it keeps for life.
struct Slot {
    data: Vec<u8>,
    home: Weak<Dir>,
}

/// One descriptor: a port index and a frame.
struct Desc {
    port: u16,
    buf: LinkBuf,
}

/// One direction of a link: its ring, its buffer pool, its counters.
struct Dir {
    ring: ArrayQueue<Desc>,
    free: ArrayQueue<Slot>,
    counters: CachePadded<Counters>,
    /// Ends holding this direction (2 while both ends live).
    ends: AtomicUsize,
    /// Rung after each push: wakes the receiving end if it sleeps on it.
    bell: Arc<crate::doorbell::Doorbell>,
}

impl Dir {
    fn new(cfg: &LinkConfig) -> Arc<Dir> {
        Arc::new(Dir {
            ring: ArrayQueue::new(cfg.ring_depth()),
            // Never overflows: at most `pool_bound` buffers have this home.
            free: ArrayQueue::new(cfg.pool_bound()),
            counters: CachePadded::new(Counters::default()),
            ends: AtomicUsize::new(2),
            bell: crate::doorbell::Doorbell::new(),
        })
    }

    fn give_back(&self, slot: Slot) {
        // A full free list cannot happen (see `new`); the buffer would just be freed.
        let _ = self.free.push(slot);
    }
}

/// A link buffer holding one frame: derefs to the frame bytes. Returns to its direction's
/// free list when dropped (or through [`LinkEnd::recycle`]), so buffers are reused without
/// allocation. `Send`: it may be dropped on any thread.
pub struct LinkBuf {
    data: Vec<u8>,
    home: Weak<Dir>,
}

impl LinkBuf {
    /// Bytes the buffer holds without growing.
    pub fn capacity(&self) -> usize {
        self.data.capacity()
    }

    /// Empties the frame (capacity kept).
    pub fn clear(&mut self) {
        self.data.clear();
    }

    /// Appends bytes to the frame.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }

    /// Sets the frame length to `len`, filling new bytes with zeros (then write the frame
    /// through `DerefMut`).
    pub fn resize(&mut self, len: usize) {
        self.data.resize(len, 0);
    }

    /// Shortens the frame to `len` bytes (no effect if it is shorter).
    pub fn truncate(&mut self, len: usize) {
        self.data.truncate(len);
    }

    /// The underlying vector, e.g. for [`Message::write_frame`](crate::msg::Message::write_frame).
    /// Replacing it with a smaller-capacity vector only costs a later regrowth.
    pub fn as_vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }

    /// Whether the buffer's home is `dir`.
    fn is_home(&self, dir: &Arc<Dir>) -> bool {
        std::ptr::eq(self.home.as_ptr(), Arc::as_ptr(dir))
    }

    /// Takes the contents out, leaving a buffer whose drop does nothing.
    fn into_slot(mut self) -> Slot {
        Slot {
            data: mem::take(&mut self.data),
            home: mem::replace(&mut self.home, Weak::new()),
        }
    }
}

impl Deref for LinkBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data
    }
}

impl DerefMut for LinkBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl AsRef<[u8]> for LinkBuf {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl AsMut<[u8]> for LinkBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl core::fmt::Debug for LinkBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LinkBuf")
            .field("len", &self.data.len())
            .field("capacity", &self.data.capacity())
            .finish()
    }
}

impl Drop for LinkBuf {
    fn drop(&mut self) {
        if let Some(dir) = self.home.upgrade() {
            dir.give_back(Slot {
                data: mem::take(&mut self.data),
                home: mem::replace(&mut self.home, Weak::new()),
            });
        }
    }
}

/// Returns `buf` to `dir`'s free list without touching reference counts when `dir` is its
/// home; otherwise drops it (it goes to its own home).
fn reclaim(dir: &Arc<Dir>, buf: LinkBuf) -> Option<LinkBuf> {
    if buf.is_home(dir) {
        dir.give_back(buf.into_slot());
        None
    } else {
        Some(buf)
    }
}

/// The sending half of an end: the direction it feeds and its pool bookkeeping.
struct TxHalf {
    dir: Arc<Dir>,
    dma: DmaMode,
    buf_capacity: usize,
    max_buffers: usize,
    allocated: usize,
}

impl TxHalf {
    fn counters(&self) -> &Counters {
        &self.dir.counters
    }

    /// A cleared buffer from the free list, or a new one within the pool bound.
    fn take_buf(&mut self) -> Option<LinkBuf> {
        if let Some(Slot { mut data, home }) = self.dir.free.pop() {
            data.clear();
            return Some(LinkBuf { data, home });
        }
        if self.allocated >= self.max_buffers {
            bump(&self.counters().no_buffer, 1);
            return None;
        }
        self.allocated += 1;
        bump(&self.counters().buffers_allocated, 1);
        Some(LinkBuf {
            data: Vec::with_capacity(self.buf_capacity),
            home: Arc::downgrade(&self.dir),
        })
    }

    /// The refusals that do not depend on a buffer, counted.
    fn admit(&self, len: usize) -> Result<(), LinkError> {
        let c = self.counters();
        if len > MAX_FRAME_LEN {
            bump(&c.oversize_drops, 1);
            return Err(LinkError::TooLarge { len });
        }
        if self.dir.ends.load(Ordering::Relaxed) < 2 {
            bump(&c.disconnected_drops, 1);
            return Err(LinkError::Disconnected);
        }
        if self.dir.ring.is_full() {
            bump(&c.full_drops, 1);
            return Err(LinkError::Full);
        }
        Ok(())
    }

    /// A link buffer holding a copy of `frame`, counted as one DMA copy.
    fn copy_in(&mut self, frame: &[u8]) -> Result<LinkBuf, LinkError> {
        let mut buf = self.take_buf().ok_or(LinkError::NoBuffer)?;
        buf.data.extend_from_slice(frame);
        let c = self.counters();
        bump(&c.dma_copies, 1);
        bump(&c.dma_bytes, frame.len() as u64);
        Ok(buf)
    }

    fn push(&mut self, port: u16, buf: LinkBuf) -> Result<(), LinkError> {
        let len = buf.len() as u64;
        match self.dir.ring.push(Desc { port, buf }) {
            Ok(()) => {
                let c = self.counters();
                bump(&c.packets, 1);
                bump(&c.bytes, len);
                self.dir.bell.ring();
                Ok(())
            }
            Err(desc) => {
                // Not reached with a single producer (admit saw room); kept total.
                bump(&self.counters().full_drops, 1);
                if let Some(b) = reclaim(&self.dir, desc.buf) {
                    drop(b);
                }
                Err(LinkError::Full)
            }
        }
    }
}

impl Drop for TxHalf {
    fn drop(&mut self) {
        self.dir.ends.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The receiving half of an end.
struct RxHalf {
    dir: Arc<Dir>,
}

impl Drop for RxHalf {
    fn drop(&mut self) {
        self.dir.ends.fetch_sub(1, Ordering::Relaxed);
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Host {}
    impl Sealed for super::Nic {}
}

/// Which side of a link an end is on ([`Host`] or [`Nic`]).
pub trait Side: sealed::Sealed {
    /// The direction this side sends in.
    const SENDS: Direction;
}

/// Marker: the host core's side.
#[derive(Debug)]
pub enum Host {}
/// Marker: the NIC lcore's side.
#[derive(Debug)]
pub enum Nic {}

impl Side for Host {
    const SENDS: Direction = Direction::HostToNic;
}
impl Side for Nic {
    const SENDS: Direction = Direction::NicToHost;
}

/// One end of a link, owned by one thread. [`HostEnd`] sends host → NIC and receives
/// NIC → host; [`NicEnd`] the reverse. Dropping an end disconnects the link.
pub struct LinkEnd<S: Side> {
    id: LinkId,
    tx: TxHalf,
    rx: RxHalf,
    side: PhantomData<S>,
}

/// The host core's end of a link: sends on the host → NIC ring ("tx"), receives from the
/// NIC → host ring ("rx").
pub type HostEnd = LinkEnd<Host>;
/// The NIC lcore's end of a link: receives from the host → NIC ring, sends on the
/// NIC → host ring.
pub type NicEnd = LinkEnd<Nic>;

impl<S: Side> LinkEnd<S> {
    /// The (host core, NIC lcore) pair this link joins.
    pub fn id(&self) -> LinkId {
        self.id
    }

    /// The direction this end sends in.
    pub fn sends(&self) -> Direction {
        S::SENDS
    }

    /// The link's DMA mode.
    pub fn dma_mode(&self) -> DmaMode {
        self.tx.dma
    }

    /// A cleared link buffer of this end's sending direction, to build a frame in and pass
    /// to [`Self::send_buf`]; `None` (counted in `no_buffer`) when the pool is exhausted.
    pub fn alloc(&mut self) -> Option<LinkBuf> {
        self.tx.take_buf()
    }

    /// Sends `frame` out of NIC port `port` (host → NIC) or as received on it (NIC → host):
    /// copies it into a link buffer (one DMA copy in either mode) and puts it on the ring.
    /// Refused frames are counted ([module documentation](self)). Never blocks.
    pub fn send(&mut self, port: u16, frame: &[u8]) -> Result<(), LinkError> {
        self.tx.admit(frame.len())?;
        let buf = self.tx.copy_in(frame)?;
        self.tx.push(port, buf)
    }

    /// Sends the frame in `buf` (from [`Self::alloc`], or received on any link): in
    /// [`DmaMode::ZeroCopy`] the buffer itself crosses; in [`DmaMode::Copy`] the frame is
    /// copied into a fresh link buffer (one DMA copy) and `buf` recycled. Refused frames are
    /// counted and `buf` recycled. Never blocks.
    pub fn send_buf(&mut self, port: u16, buf: LinkBuf) -> Result<(), LinkError> {
        self.tx.admit(buf.len())?;
        let buf = match self.tx.dma {
            DmaMode::ZeroCopy => buf,
            DmaMode::Copy => {
                let copy = self.tx.copy_in(&buf);
                self.recycle(buf);
                copy?
            }
        };
        self.tx.push(port, buf)
    }

    /// The doorbell the other end rings after each frame it sends here: a receiver that
    /// sleeps when idle parks on it ([`crate::doorbell`]).
    pub fn rx_doorbell(&self) -> Arc<crate::doorbell::Doorbell> {
        self.rx.dir.bell.clone()
    }

    /// Free descriptors on the sending ring: that many sends in a row cannot be refused for
    /// `Full`.
    pub fn tx_space(&self) -> usize {
        self.tx.dir.ring.capacity() - self.tx.dir.ring.len()
    }

    /// The next frame from the other end with its port index, or `None` when the ring is
    /// empty. Drop the buffer (or [`Self::recycle`] it) when done.
    pub fn recv(&mut self) -> Option<(u16, LinkBuf)> {
        self.rx.dir.ring.pop().map(|d| (d.port, d.buf))
    }

    /// Appends up to `max` frames to `out` (which keeps its capacity between calls) and
    /// returns how many.
    pub fn recv_burst(&mut self, out: &mut Vec<(u16, LinkBuf)>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(d) = self.rx.dir.ring.pop() else {
                break;
            };
            out.push((d.port, d.buf));
            n += 1;
        }
        n
    }

    /// Frames sent from this end that the other end has not taken yet.
    pub fn tx_pending(&self) -> usize {
        self.tx.dir.ring.len()
    }

    /// Frames waiting on the receiving ring.
    pub fn rx_pending(&self) -> usize {
        self.rx.dir.ring.len()
    }

    /// Returns `buf` to its pool: the cheapest way when its home is one of this link's
    /// directions (no reference counting); otherwise the same as dropping it.
    pub fn recycle(&mut self, buf: LinkBuf) {
        if let Some(buf) = reclaim(&self.rx.dir, buf) {
            if let Some(buf) = reclaim(&self.tx.dir, buf) {
                drop(buf);
            }
        }
    }

    /// Whether the other end still exists.
    pub fn is_connected(&self) -> bool {
        self.tx.dir.ends.load(Ordering::Relaxed) == 2
            && self.rx.dir.ends.load(Ordering::Relaxed) == 2
    }

    /// Counters of the direction this end sends in.
    pub fn tx_counters(&self) -> LinkCounters {
        self.tx.dir.counters.snapshot()
    }

    /// Counters of the direction this end receives from.
    pub fn rx_counters(&self) -> LinkCounters {
        self.rx.dir.counters.snapshot()
    }

    /// A handle for reading this link's counters from another thread.
    pub fn monitor(&self) -> LinkMonitor {
        let (host_to_nic, nic_to_host) = match S::SENDS {
            Direction::HostToNic => (&self.tx.dir, &self.rx.dir),
            Direction::NicToHost => (&self.rx.dir, &self.tx.dir),
        };
        LinkMonitor {
            id: self.id,
            host_to_nic: Arc::clone(host_to_nic),
            nic_to_host: Arc::clone(nic_to_host),
        }
    }
}

impl<S: Side> core::fmt::Debug for LinkEnd<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LinkEnd")
            .field("id", &self.id)
            .field("sends", &S::SENDS)
            .field("dma", &self.tx.dma)
            .finish()
    }
}

/// Reads a link's counters from any thread (periodic statistics). Keeps the link's rings
/// and pools alive while it exists.
#[derive(Clone)]
pub struct LinkMonitor {
    id: LinkId,
    host_to_nic: Arc<Dir>,
    nic_to_host: Arc<Dir>,
}

impl LinkMonitor {
    /// The (host core, NIC lcore) pair.
    pub fn id(&self) -> LinkId {
        self.id
    }

    /// Counters of the host → NIC direction.
    pub fn host_to_nic(&self) -> LinkCounters {
        self.host_to_nic.counters.snapshot()
    }

    /// Counters of the NIC → host direction.
    pub fn nic_to_host(&self) -> LinkCounters {
        self.nic_to_host.counters.snapshot()
    }
}

impl core::fmt::Debug for LinkMonitor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LinkMonitor").field("id", &self.id).finish()
    }
}

/// A new link between host core 0 and NIC lcore 0 ([`LinkId::default`]).
pub fn link(cfg: &LinkConfig) -> (HostEnd, NicEnd) {
    link_with_id(cfg, LinkId::default())
}

/// A new link labelled `id`.
pub fn link_with_id(cfg: &LinkConfig, id: LinkId) -> (HostEnd, NicEnd) {
    let h2n = Dir::new(cfg);
    let n2h = Dir::new(cfg);
    let tx = |dir: &Arc<Dir>| TxHalf {
        dir: Arc::clone(dir),
        dma: cfg.dma,
        buf_capacity: cfg.buf_capacity.min(MAX_FRAME_LEN),
        max_buffers: cfg.pool_bound(),
        allocated: 0,
    };
    let host = LinkEnd {
        id,
        tx: tx(&h2n),
        rx: RxHalf {
            dir: Arc::clone(&n2h),
        },
        side: PhantomData,
    };
    let nic = LinkEnd {
        id,
        tx: tx(&n2h),
        rx: RxHalf { dir: h2n },
        side: PhantomData,
    };
    (host, nic)
}

/// One link per (host core, NIC lcore) pair: returns `host_ends[h][n]` and
/// `nic_ends[n][h]`, the two ends of the link between host core `h` and NIC lcore `n`
/// (labelled `LinkId { host: h, nic: n }`). Each host core takes its row, each NIC lcore
/// its row.
pub fn mesh(hosts: usize, nics: usize, cfg: &LinkConfig) -> (Vec<Vec<HostEnd>>, Vec<Vec<NicEnd>>) {
    let mut host_ends: Vec<Vec<HostEnd>> = (0..hosts).map(|_| Vec::with_capacity(nics)).collect();
    let mut nic_ends: Vec<Vec<NicEnd>> = (0..nics).map(|_| Vec::with_capacity(hosts)).collect();
    for (h, row) in host_ends.iter_mut().enumerate() {
        for (n, nic_row) in nic_ends.iter_mut().enumerate() {
            let (he, ne) = link_with_id(cfg, LinkId { host: h, nic: n });
            row.push(he);
            nic_row.push(ne);
        }
    }
    (host_ends, nic_ends)
}
