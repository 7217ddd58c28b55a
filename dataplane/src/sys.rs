//! Thin, documented OS wrappers: CPU pinning, the cores this process may run on, prefetch
//! hints, huge-page-backed tables, and whether libdpdk is installed.
//!
//! This is one of the few places outside the DPDK FFI crate allowed `unsafe`: each block calls
//! one libc function on memory we own.
#![allow(unsafe_code)]

use std::io;

/// The CPU ids this process may run on (its affinity mask), ascending.
///
/// Invariant: never empty on success; every id is `< libc::CPU_SETSIZE`.
pub fn allowed_cores() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: we pass the set's true size and a valid pointer to it; pid 0 = this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut cores = Vec::new();
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: cpu < CPU_SETSIZE, the bound CPU_ISSET requires.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            cores.push(cpu);
        }
    }
    Ok(cores)
}

/// The cores the process could use before anything narrowed its threads' affinity (see
/// [`note_process_cores`]).
static PROCESS_CORES: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

/// Notes the calling thread's affinity mask as the process's cores, once (later calls keep
/// the first note). Call it before DPDK's `rte_eal_init`, which pins the thread that calls
/// it to the main lcore's core: every thread spawned after inherits that one core, so an
/// unpinned lcore or host thread would share it with the main lcore instead of running
/// wherever the scheduler finds room.
pub fn note_process_cores() {
    if PROCESS_CORES.get().is_none() {
        if let Ok(c) = allowed_cores() {
            let _ = PROCESS_CORES.set(c);
        }
    }
}

/// The cores noted by [`note_process_cores`], or the calling thread's mask
/// ([`allowed_cores`]) when none were noted.
pub fn process_cores() -> io::Result<Vec<usize>> {
    match PROCESS_CORES.get() {
        Some(c) => Ok(c.clone()),
        None => allowed_cores(),
    }
}

/// Sets the calling thread's affinity to `cores` (each `< CPU_SETSIZE`, at least one).
fn set_current_affinity(cores: &[usize]) -> io::Result<()> {
    if cores.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no core to run on",
        ));
    }
    // SAFETY: as above, a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &core in cores {
        if core >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("core {core} is out of range"),
            ));
        }
        // SAFETY: core < CPU_SETSIZE was checked just above.
        unsafe { libc::CPU_SET(core, &mut set) };
    }
    // SAFETY: valid pointer and size; pid 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread to CPU `core`.
///
/// Fails (without changing the thread's affinity) when `core` is out of range or not in the
/// process's affinity mask.
pub fn pin_current_thread(core: usize) -> io::Result<()> {
    set_current_affinity(&[core])
}

/// Lets the calling thread run on every one of the process's cores ([`process_cores`]),
/// undoing an affinity inherited from a pinned thread.
pub fn unpin_current_thread() -> io::Result<()> {
    set_current_affinity(&process_cores()?)
}

/// Places the calling thread (named `who` in messages): pinned to `core` when given
/// ([`pin_or_warn`]), else free to run on any of the process's cores (best effort).
pub fn place_current_thread(core: Option<usize>, who: &str) {
    match core {
        Some(core) => pin_or_warn(core, who),
        None => {
            let _ = unpin_current_thread();
        }
    }
}

/// Pins the calling thread (named `who` in the message) to CPU `core`; when that fails,
/// prints a one-line warning naming the fix and lets the thread run unpinned.
pub fn pin_or_warn(core: usize, who: &str) {
    if let Err(e) = pin_current_thread(core) {
        let usable = allowed_cores()
            .map(|c| format_core_list(&c))
            .unwrap_or_else(|_| "?".into());
        eprintln!(
            "nicemu: warning: cannot pin {who} to core {core} ({e}); it runs unpinned: \
             choose [[lcore]] cores among the usable ones ({usable})"
        );
    }
}

/// Sets the calling thread's timer slack (how late the kernel may end its sleeps, 50 µs
/// by default) to `ns`, so that an idle loop's short sleeps end close to their length.
/// Best effort: a failure leaves the default.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Formats a core list compactly, e.g. `[0,1,2,5]` → `"0-2,5"`, for error messages.
pub fn format_core_list(cores: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let start = cores[i];
        let mut end = start;
        while i + 1 < cores.len() && cores[i + 1] == end + 1 {
            i += 1;
            end = cores[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Hints the CPU to bring the cache line at `p` into all cache levels (x86 `PREFETCHT0`);
/// a no-op elsewhere. Never faults, whatever `p` points to: prefetches of invalid addresses
/// are dropped by the hardware, which is why this wrapper is safe.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint with no architectural effect and cannot fault; SSE is part
    // of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Tables smaller than this stay on ordinary pages (they fit a few TLB entries anyway).
pub const HUGE_TABLE_MIN_BYTES: usize = 4 << 20;

/// A vector of `n` copies of `value`, whose memory is advised for transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`) before it is first written, when it is at least
/// [`HUGE_TABLE_MIN_BYTES`] long. Per-flow tables of a million flows touched in no memory
/// order would otherwise take a TLB miss (a page walk) on almost every access. The advice is
/// best effort: where THP is off or `madvise` fails, the vector is the same, on 4 KiB pages.
pub fn huge_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = huge_capacity(n);
    v.resize(n, value);
    v
}

/// Like [`huge_vec`], for element types that are not `Clone` (atomics): `n` values of
/// `make()`.
pub fn huge_vec_with<T>(n: usize, make: impl FnMut() -> T) -> Vec<T> {
    let mut v = huge_capacity(n);
    v.extend(std::iter::repeat_with(make).take(n));
    v
}

/// An empty vector with capacity `n`, advised for transparent huge pages as [`huge_vec`]
/// describes.
fn huge_capacity<T>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_TABLE_MIN_BYTES {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let lo = start.next_multiple_of(HUGE);
        let hi = (start + bytes) & !(HUGE - 1);
        if hi > lo {
            // SAFETY: [lo, hi) lies inside the allocation `v` owns (capacity n, not yet
            // written); MADV_HUGEPAGE only changes how the kernel backs the range, never its
            // contents or mapping, and an error leaves the range as it was.
            let _ = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

/// True when libdpdk's development files are installed (`pkg-config --exists libdpdk`
/// succeeds), i.e. when this workspace can be built with its `dpdk` feature. False also when
/// pkg-config itself is missing.
pub fn libdpdk_installed() -> bool {
    std::process::Command::new("pkg-config")
        .args(["--exists", "libdpdk"])
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread spawned by a pinned thread inherits its one core; `unpin_current_thread`
    /// gives it back every core noted for the process.
    #[test]
    fn an_unpinned_thread_gets_the_noted_cores_back_from_a_pinned_parent() {
        note_process_cores();
        let all = process_cores().unwrap();
        let first = all[0];
        let got = std::thread::spawn(move || {
            pin_current_thread(first).unwrap();
            std::thread::spawn(|| {
                let inherited = allowed_cores().unwrap();
                unpin_current_thread().unwrap();
                (inherited, allowed_cores().unwrap())
            })
            .join()
            .unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(got, (vec![first], all));
    }

    #[test]
    fn this_process_has_cores_and_can_pin_to_the_first() {
        let cores = allowed_cores().unwrap();
        assert!(!cores.is_empty());
        let handle = std::thread::spawn(move || pin_current_thread(cores[0]));
        handle.join().unwrap().unwrap();
    }

    #[test]
    fn pinning_to_a_missing_core_fails() {
        assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
    }

    #[test]
    fn core_list_format() {
        assert_eq!(format_core_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_core_list(&[]), "");
    }

    #[test]
    fn huge_vecs_hold_their_values_at_every_size() {
        for n in [0usize, 1, 1000, (HUGE_TABLE_MIN_BYTES / 8) * 3 + 5] {
            let v = huge_vec(n, 0xabu64);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 0xab));
        }
    }
}
