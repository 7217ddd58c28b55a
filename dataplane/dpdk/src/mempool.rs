//! Packet-buffer pools (`rte_pktmbuf_pool_create`).

use std::ffi::{c_uint, c_void, CString};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::eal::{eal_ref, EalInner};
use crate::error::{rte_errno, strerror, DpdkError};
use crate::mbuf::{Mbuf, PKTMBUF_HEADROOM};
use crate::sys;

/// "Any NUMA socket", for [`Mempool::create`]'s `socket_id`.
pub const SOCKET_ID_ANY: i32 = sys::SOCKET_ID_ANY;

/// A pool of packet buffers ([`Mbuf`]s) in DPDK memory.
///
/// Invariant: the pool stays valid while any `Arc<Mempool>` exists (devices and queues using
/// it hold one). `Mempool` is `Send + Sync`: DPDK's default pool ops are multi-producer /
/// multi-consumer safe, and per-lcore caches are only used by the one thread owning that
/// lcore id. On drop of the last `Arc` the pool is freed with `rte_mempool_free`, unless
/// some of its mbufs are still alive: then it is leaked (with a warning) so they stay valid.
#[derive(Debug)]
pub struct Mempool {
    ptr: NonNull<sys::rte_mempool>,
    name: String,
    data_room: u16,
    eal: Arc<EalInner>,
}

// SAFETY: the pool is a DPDK object usable from any thread (mp/mc-safe ring ops; per-lcore
// caches are keyed by the calling thread's unique lcore id). `Mempool` only reads immutable
// fields from Rust.
unsafe impl Send for Mempool {}
// SAFETY: see Send; every &self method is thread-safe in DPDK.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n_mbufs` packet buffers with a per-lcore cache of `cache_size`
    /// (0 for none; at most 512 and at most `n_mbufs / 1.5`), `data_room_size` bytes of
    /// buffer each *including* the [`PKTMBUF_HEADROOM`] (use at least 2048 + 128 so that
    /// received frames up to 2048 bytes are always one segment), on NUMA socket `socket_id`
    /// ([`SOCKET_ID_ANY`] for any).
    ///
    /// Errors: [`DpdkError::EalNotInitialized`]; [`DpdkError::Mempool`] when the name is
    /// taken (`EEXIST`: names are unique per process), too long, or memory is short.
    pub fn create(
        name: &str,
        n_mbufs: u32,
        cache_size: u32,
        data_room_size: u16,
        socket_id: i32,
    ) -> Result<Arc<Mempool>, DpdkError> {
        let eal = eal_ref()?;
        let err = |errno: i32, msg: String| DpdkError::Mempool {
            name: name.to_owned(),
            errno,
            msg,
        };
        let c =
            CString::new(name).map_err(|_| err(libc::EINVAL, "name contains a NUL byte".into()))?;
        // SAFETY: c is a valid NUL-terminated string for the call; the EAL is alive (eal).
        let mp = unsafe {
            sys::rte_pktmbuf_pool_create(
                c.as_ptr(),
                n_mbufs,
                cache_size,
                0,
                data_room_size,
                socket_id,
            )
        };
        let Some(ptr) = NonNull::new(mp) else {
            let errno = rte_errno();
            let msg = if errno == libc::EEXIST {
                "a mempool with this name already exists (names must be unique)".to_owned()
            } else {
                format!("rte_pktmbuf_pool_create failed: {}", strerror(errno))
            };
            return Err(err(errno, msg));
        };
        Ok(Arc::new(Mempool {
            ptr,
            name: name.to_owned(),
            data_room: data_room_size,
            eal,
        }))
    }

    /// Takes one buffer: empty (length 0), [`PKTMBUF_HEADROOM`] bytes of headroom, or `None`
    /// when the pool is exhausted.
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: the pool is valid (self); rte_pktmbuf_alloc returns a reset, single-segment
        // mbuf with refcnt 1 owned by the caller, or NULL.
        unsafe { Mbuf::from_raw(sys::shim_pktmbuf_alloc(self.ptr.as_ptr())) }
    }

    /// Writes `frame` into the data area of every mbuf of the pool, at the default headroom
    /// offset (where a freshly allocated mbuf's data starts), using `rte_mempool_obj_iter`.
    /// A PMD that hands out pool mbufs without writing their data (net_null in its default,
    /// non-copy mode) then produces real frames, for benchmarks. Returns how many mbufs were
    /// written.
    ///
    /// Takes `&mut Arc<Self>` so that nobody else can allocate concurrently: call it right
    /// after [`Mempool::create`], before giving the pool to a device.
    ///
    /// Errors: [`DpdkError::Mempool`] when the `Arc` is shared, when some mbufs of the pool
    /// are alive, or when `frame` does not fit in `data_room_size - headroom`.
    pub fn fill_template(self: &mut Arc<Self>, frame: &[u8]) -> Result<u32, DpdkError> {
        let name = self.name.clone();
        let err = |msg: String| DpdkError::Mempool {
            name: name.clone(),
            errno: libc::EBUSY,
            msg,
        };
        if Arc::get_mut(self).is_none() {
            return Err(err(
                "fill_template needs the only reference to the pool".into()
            ));
        }
        let in_use = self.in_use();
        if in_use != 0 {
            return Err(err(format!(
                "fill_template needs all mbufs free, {in_use} are in use"
            )));
        }
        let room = usize::from(self.data_room).saturating_sub(PKTMBUF_HEADROOM);
        if frame.len() > room {
            return Err(DpdkError::Mempool {
                name,
                errno: libc::EINVAL,
                msg: format!(
                    "template of {} bytes exceeds the {room}-byte data room",
                    frame.len()
                ),
            });
        }
        let mut ctx = Template { frame, written: 0 };
        // SAFETY: the pool is valid; no other Arc exists and no mbuf is out, so nothing reads
        // or writes any mbuf concurrently; the callback only writes inside each mbuf's own
        // buffer; ctx outlives the call.
        unsafe {
            sys::rte_mempool_obj_iter(
                self.ptr.as_ptr(),
                Some(write_template),
                (&raw mut ctx).cast::<c_void>(),
            )
        };
        Ok(ctx.written)
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Buffer size of each mbuf, headroom included.
    pub fn data_room_size(&self) -> u16 {
        self.data_room
    }

    /// Number of mbufs in the pool.
    pub fn capacity(&self) -> u32 {
        // SAFETY: `size` is set at creation and never changes.
        unsafe { (*self.ptr.as_ptr()).size }
    }

    /// Mbufs currently free (in the pool or in per-lcore caches). A snapshot: racy while
    /// other threads allocate or free.
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is valid; a read-only query.
        unsafe { sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Mbufs currently allocated (held by the application or a device). A snapshot.
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is valid; a read-only query.
        unsafe { sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// The raw pool, for queue setup and allocation.
    pub(crate) fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.ptr.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        let in_use = self.in_use();
        if in_use != 0 {
            tracing::warn!(
                pool = %self.name,
                in_use,
                "mempool dropped with mbufs still alive: leaking it (and keeping the EAL up) \
                 so they stay valid"
            );
            std::mem::forget(Arc::clone(&self.eal));
            return;
        }
        // SAFETY: last reference to the pool, no mbuf of it is alive (checked above; no
        // device holds it either, since devices hold an Arc), so nothing uses it any more.
        unsafe { sys::rte_mempool_free(self.ptr.as_ptr()) };
    }
}

/// State passed to [`write_template`].
struct Template<'a> {
    frame: &'a [u8],
    written: u32,
}

/// `rte_mempool_obj_iter` callback: copies the template into one mbuf.
unsafe extern "C" fn write_template(
    _mp: *mut sys::rte_mempool,
    opaque: *mut c_void,
    obj: *mut c_void,
    _idx: c_uint,
) {
    // SAFETY: opaque is the &mut Template passed by fill_template, alive and not otherwise
    // accessed during the iteration.
    let ctx = unsafe { &mut *opaque.cast::<Template<'_>>() };
    let m = obj.cast::<sys::rte_mbuf>();
    // SAFETY: in a pktmbuf pool every object is an rte_mbuf initialized by rte_pktmbuf_init
    // (buf_addr, buf_len set); nobody else accesses it now (see fill_template).
    let (buf, buf_len) = unsafe { ((*m).buf_addr.cast::<u8>(), usize::from((*m).buf_len)) };
    let off = PKTMBUF_HEADROOM.min(buf_len);
    if buf.is_null() || off + ctx.frame.len() > buf_len {
        return;
    }
    // SAFETY: [buf + off, buf + off + len) lies inside the mbuf's own buffer (checked above)
    // and cannot overlap the template, which lives in Rust memory.
    unsafe { std::ptr::copy_nonoverlapping(ctx.frame.as_ptr(), buf.add(off), ctx.frame.len()) };
    ctx.written += 1;
}
