//! The DPDK environment (EAL): init and cleanup, port lookup, lcore registration of our own
//! threads, and the TSC clock.

use std::cell::Cell;
use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{from_rte_errno, rte_errno, strerror, DpdkError};
use crate::sys;

/// Set by the first [`Eal::init`] attempt; DPDK allows one `rte_eal_init` per process.
static ATTEMPTED: AtomicBool = AtomicBool::new(false);
/// The live EAL, if any: pools and devices take a strong reference from here.
static LIVE: Mutex<Weak<EalInner>> = Mutex::new(Weak::new());

/// The EAL's argument strings and argv array, leaked on purpose (DPDK may keep pointers
/// into them): held here so that a leak checker (LeakSanitizer, in a C program linked with
/// libmtcp) sees them as reachable rather than lost.
static KEPT_ARGS: AtomicPtr<CString> = AtomicPtr::new(std::ptr::null_mut());
static KEPT_ARGV: AtomicPtr<*mut c_char> = AtomicPtr::new(std::ptr::null_mut());

/// The initialized EAL. `rte_eal_cleanup` runs when the last reference goes (the [`Eal`]
/// handle, and every mempool and device, each hold one).
#[derive(Debug)]
pub(crate) struct EalInner {
    _private: (),
}

impl Drop for EalInner {
    fn drop(&mut self) {
        // SAFETY: this is the last reference to the EAL: every DPDK object of this crate
        // (pools, devices, queues) holds one, so none is alive any more, and mbufs cannot
        // outlive their pool (a pool with live mbufs leaks its reference instead). After this
        // no DPDK function is called again (ATTEMPTED stays set, LIVE's Weak is dead).
        let ret = unsafe { sys::rte_eal_cleanup() };
        if ret != 0 {
            tracing::warn!("rte_eal_cleanup failed: {}", strerror(ret));
        }
    }
}

/// A strong reference to the live EAL, or [`DpdkError::EalNotInitialized`].
pub(crate) fn eal_ref() -> Result<Arc<EalInner>, DpdkError> {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.upgrade().ok_or(DpdkError::EalNotInitialized)
}

/// The DPDK Environment Abstraction Layer of this process.
///
/// Invariant: at most one `Eal` is ever created per process (DPDK cannot initialize twice,
/// not even after cleanup). `rte_eal_cleanup` runs once the `Eal` and every mempool and
/// device created under it have been dropped. `Eal` is `Send + Sync`; the thread that calls
/// [`Eal::init`] becomes DPDK's main lcore.
#[derive(Debug)]
pub struct Eal {
    inner: Arc<EalInner>,
}

impl Eal {
    /// Runs `rte_eal_init` with `args` (EAL arguments such as `--no-huge`, `--vdev=net_ring0`,
    /// `-l 0`; `argv[0] = "nicemu"` is prepended).
    ///
    /// Errors: [`DpdkError::EalAlreadyInitialized`] on any call after the first (successful
    /// or not), [`DpdkError::InvalidArgument`] for an argument with a NUL byte,
    /// [`DpdkError::EalInit`] with `rte_errno` when DPDK refuses.
    pub fn init(args: &[String]) -> Result<Eal, DpdkError> {
        let mut owned = Vec::with_capacity(args.len() + 1);
        owned.push(CString::from(c"nicemu"));
        for a in args {
            owned.push(CString::new(a.as_str()).map_err(|_| {
                DpdkError::InvalidArgument(format!("EAL argument {a:?} contains a NUL byte"))
            })?);
        }
        if ATTEMPTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::EalAlreadyInitialized);
        }
        // DPDK may keep pointers into argv (and getopt permutes the array): leak both, once
        // per process.
        let owned: &'static mut [CString] = Vec::leak(owned);
        let argv: &'static mut [*mut c_char] = Vec::leak(
            owned
                .iter_mut()
                .map(|c| c.as_ptr().cast_mut())
                .chain(std::iter::once(std::ptr::null_mut()))
                .collect(),
        );
        KEPT_ARGS.store(owned.as_mut_ptr(), Ordering::Relaxed);
        KEPT_ARGV.store(argv.as_mut_ptr(), Ordering::Relaxed);
        let argc = i32::try_from(owned.len())
            .map_err(|_| DpdkError::InvalidArgument("too many EAL arguments".into()))?;
        // SAFETY: argv holds argc valid NUL-terminated strings followed by a NULL, all leaked
        // so they live for the rest of the process; ATTEMPTED guarantees this is the only
        // rte_eal_init call in the process.
        let ret = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            let errno = rte_errno();
            return Err(DpdkError::EalInit {
                errno,
                msg: strerror(errno),
            });
        }
        let inner = Arc::new(EalInner { _private: () });
        *LIVE.lock().unwrap_or_else(|p| p.into_inner()) = Arc::downgrade(&inner);
        Ok(Eal { inner })
    }

    /// The port id of the ethdev port called `name` (e.g. `"net_ring0"`, a PCI address).
    ///
    /// Errors: [`DpdkError::NoSuchPort`] listing the names of the ports that exist.
    pub fn port_by_name(&self, name: &str) -> Result<u16, DpdkError> {
        let no_such = || DpdkError::NoSuchPort {
            name: name.to_owned(),
            available: self.ports().into_iter().map(|(_, n)| n).collect(),
        };
        let Ok(c) = CString::new(name) else {
            return Err(no_such());
        };
        let mut port = 0u16;
        // SAFETY: c is a valid NUL-terminated string and port a valid out-pointer, both live
        // for the call; the EAL is alive (self).
        let ret = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut port) };
        if ret != 0 {
            return Err(no_such());
        }
        Ok(port)
    }

    /// All valid ethdev ports as `(port id, name)`, by increasing id.
    pub fn ports(&self) -> Vec<(u16, String)> {
        (0..sys::RTE_MAX_ETHPORTS as u16)
            .filter(|&p| {
                // SAFETY: a pure query on any port id; the EAL is alive (self).
                unsafe { sys::rte_eth_dev_is_valid_port(p) == 1 }
            })
            .filter_map(|p| port_name(p).map(|n| (p, n)))
            .collect()
    }

    /// A reference on the EAL for objects that must not outlive it.
    pub(crate) fn inner(&self) -> &Arc<EalInner> {
        &self.inner
    }
}

/// The name of port `port`, or `None` when it has none (invalid port).
pub(crate) fn port_name(port: u16) -> Option<String> {
    let mut buf = [0 as c_char; sys::RTE_ETH_NAME_MAX_LEN as usize];
    // SAFETY: buf has the RTE_ETH_NAME_MAX_LEN bytes the function may write (NUL included).
    let ret = unsafe { sys::rte_eth_dev_get_name_by_port(port, buf.as_mut_ptr()) };
    if ret != 0 {
        return None;
    }
    // SAFETY: on success DPDK wrote a NUL-terminated string into buf.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// The TSC frequency in Hz as measured by the EAL (0 before [`Eal::init`]).
pub fn tsc_hz() -> u64 {
    // SAFETY: reads a value the EAL computed at init (0 before); no preconditions.
    unsafe { sys::rte_get_tsc_hz() }
}

/// The CPU's time-stamp counter (`rte_rdtsc`); not serializing. Usable without an EAL.
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: executes rdtsc; no preconditions.
    unsafe { sys::shim_rdtsc() }
}

/// The calling thread's lcore id, or `None` when it has none (not the EAL main thread, not
/// registered with [`register_thread`]).
pub fn lcore_id() -> Option<u32> {
    // SAFETY: reads a thread-local; no preconditions.
    let id = unsafe { sys::shim_lcore_id() };
    (id != sys::shim_consts::SHIM_LCORE_ID_ANY as u32).then_some(id)
}

thread_local! {
    /// Whether this thread was registered by [`register_thread`] (so that unregistering never
    /// touches the EAL main thread's lcore).
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
    /// Unregisters at thread exit if the thread forgot to.
    static AUTO_UNREGISTER: AutoUnregister = const { AutoUnregister };
}

/// Thread-exit hook: unregisters a still-registered thread.
struct AutoUnregister;

impl Drop for AutoUnregister {
    fn drop(&mut self) {
        unregister_thread();
    }
}

/// Registers the calling (non-EAL) thread with DPDK (`rte_thread_register`), giving it an
/// lcore id and with it per-lcore mempool caches: without one, every mbuf alloc and free
/// goes to the pool's shared ring, which is much slower.
///
/// Invariant: a thread is registered at most once; calling this on a thread that already
/// has an lcore id (the EAL main thread, or registered before) does nothing. The lcore is
/// released by [`unregister_thread`] or automatically at thread exit.
///
/// Errors: [`DpdkError::EalNotInitialized`]; a [`DpdkError::Call`] when DPDK refuses (all
/// `RTE_MAX_LCORE` ids in use, or multi-process in use: registering threads disables
/// DPDK's multi-process support, so secondary processes can no longer attach).
pub fn register_thread() -> Result<(), DpdkError> {
    let _eal = eal_ref()?;
    if lcore_id().is_some() {
        return Ok(());
    }
    // SAFETY: the EAL is initialized and alive (_eal held across the call); the calling
    // thread has no lcore yet.
    let ret = unsafe { sys::rte_thread_register() };
    if ret != 0 {
        return Err(from_rte_errno("rte_thread_register"));
    }
    REGISTERED.with(|r| r.set(true));
    // Make sure the thread-exit hook exists (first access initializes it).
    AUTO_UNREGISTER.with(|_| ());
    Ok(())
}

/// Releases the calling thread's lcore id taken by [`register_thread`]; does nothing on a
/// thread that did not register (the EAL main thread keeps its lcore), or once the EAL is
/// gone.
pub fn unregister_thread() {
    let was = REGISTERED.try_with(|r| r.replace(false)).unwrap_or(false);
    if !was {
        return;
    }
    let Ok(_eal) = eal_ref() else { return };
    // SAFETY: this thread was registered by rte_thread_register and the EAL is alive (held
    // across the call).
    unsafe { sys::rte_thread_unregister() };
}
