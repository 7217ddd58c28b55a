//! The exported C functions. Each converts its pointers into Rust values with the checks
//! C cannot make (null → EFAULT, negative lengths → EINVAL), runs the safe logic of
//! [`crate::ctx`] inside `catch_unwind` (a panic becomes -1 with EIO: it never unwinds into
//! C), and turns an error into -1 with `errno` set, as mTCP does.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::{IoSlice, IoSliceMut};
use std::panic::{catch_unwind, AssertUnwindSafe};

use hoststack::stack::EpollEvent;
use hoststack::stack::{SpliceEnd, SpliceReport, SpliceSide};
use offload_api::link::HostEnd;

use crate::cptr::{iovecs, read_addr, slice, slice_mut, write_addr};
use crate::ctx::{Ctx, Wait, RESUME};
use crate::err::{set_errno, E, R};
use crate::topology::{self, MtcpConf};
use crate::{handle_at, Handle};

/// Opaque to C: `typedef struct mtcp_context *mctx_t`.
#[repr(C)]
pub struct MtcpContext {
    _private: [u8; 0],
}

/// `mctx_t`.
pub type MctxT = *mut MtcpContext;

/// `struct mtcp_epoll_event`: `uint32_t events` then an 8-byte union (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MtcpEpollEvent {
    /// MTCP_EPOLL* bits.
    pub events: u32,
    /// `mtcp_epoll_data_t` as its `u64` member.
    pub data: u64,
}

/// `nsplice_meta_t` of AccelTCP's `mtcp_api.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NspliceMeta {
    /// The client's address (network byte order).
    pub ip_addr: u32,
    /// The client's port (network byte order).
    pub port: u16,
    /// The server's address (network byte order).
    pub dst_addr: u32,
    /// The server's port (network byte order).
    pub dst_port: u16,
    /// 0: both FINs; 1: RST from the client; 2: RST from the server; 3: idle timeout.
    pub close_reason: u16,
}

impl From<&SpliceReport> for NspliceMeta {
    fn from(r: &SpliceReport) -> Self {
        NspliceMeta {
            ip_addr: u32::from(*r.client.ip()).to_be(),
            port: r.client.port().to_be(),
            dst_addr: u32::from(*r.server.ip()).to_be(),
            dst_port: r.server.port().to_be(),
            close_reason: match r.end {
                SpliceEnd::Fin => 0,
                SpliceEnd::Rst(SpliceSide::Client) => 1,
                SpliceEnd::Rst(SpliceSide::Server) => 2,
                SpliceEnd::Timeout => 3,
            },
        }
    }
}

/// Runs `f`; an error sets errno and gives `fail`, as does a panic (EIO).
fn guard<T>(fail: T, f: impl FnOnce() -> R<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e);
            fail
        }
        Err(_) => {
            set_errno(E(libc::EIO));
            fail
        }
    }
}

/// Runs `f` on the context `mctx` (EBADF when it is not a live one of ours), then delivers
/// the splice callbacks and the timers that became due, outside the context's lock (so they
/// may call mtcp functions). When `f` stops with [`RESUME`] (a wait that let due timers
/// run, or a blocking pipe end that let other threads in), it runs again: the call goes on,
/// unless a signal came meanwhile (EINTR).
fn with_ctx<T>(mctx: MctxT, mut f: impl FnMut(&mut Ctx<HostEnd>) -> R<T>) -> R<T> {
    let h: &Handle = handle_at(mctx as usize).ok_or(E::BADF)?;
    let sig = crate::signal::count();
    loop {
        let nested = IN_TIMER.with(|t| t.get());
        let (r, timers) = {
            let mut g = h.ctx.lock().map_err(|_| E::BADF)?;
            let c = g.as_mut().ok_or(E::BADF)?;
            c.deliver_timers = !nested;
            let r = f(c);
            let timers = if nested {
                Vec::new()
            } else {
                c.take_due_timers()
            };
            (r, timers)
        };
        deliver_splices(h);
        run_timers(mctx, timers);
        match r {
            Err(RESUME) => {
                if crate::signal::count() != sig {
                    return Err(E::INTR);
                }
                std::thread::yield_now();
            }
            r => return r,
        }
    }
}

/// Runs the splice callbacks whose reports are waiting (outside the context's lock).
fn deliver_splices(h: &Handle) {
    let due: Vec<(usize, SpliceReport)> = match h.pending.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(_) => Vec::new(),
    };
    for (cb, report) in due {
        let mut meta = NspliceMeta::from(&report);
        // SAFETY: `cb` is the non-null `callback_t` C passed to mtcp_splice, a
        // `void (*)(nsplice_meta_t *)`; `meta` lives across the call.
        let f: extern "C" fn(*mut NspliceMeta) = unsafe { std::mem::transmute::<usize, _>(cb) };
        f(&mut meta);
    }
}

/// Reads mTCP's configuration file and starts the NIC (see docs/c-api.md).
#[no_mangle]
pub unsafe extern "C" fn mtcp_init(config_file: *const c_char) -> c_int {
    guard(-1, || {
        if config_file.is_null() {
            eprintln!("libmtcp: mtcp_init: no configuration file (NULL)");
            return Err(E::FAULT);
        }
        // SAFETY: a non-null, NUL-terminated C string (mtcp_init's contract).
        let path = unsafe { CStr::from_ptr(config_file) }
            .to_string_lossy()
            .into_owned();
        topology::init(&path).map_err(|e| {
            eprintln!("libmtcp: {e}");
            E::INVAL
        })?;
        Ok(0)
    })
}

/// Stops every context and the NIC, releases DPDK.
#[no_mangle]
pub extern "C" fn mtcp_destroy() {
    guard((), || {
        topology::destroy();
        Ok(())
    })
}

/// Copies the settings into `*conf`.
#[no_mangle]
pub unsafe extern "C" fn mtcp_getconf(conf: *mut MtcpConf) -> c_int {
    guard(-1, || {
        if conf.is_null() {
            return Err(E::FAULT);
        }
        // SAFETY: non-null, points to the caller's struct mtcp_conf (same layout).
        unsafe { conf.write_unaligned(topology::conf()) };
        Ok(0)
    })
}

/// Replaces the settings for contexts created from now on.
#[no_mangle]
pub unsafe extern "C" fn mtcp_setconf(conf: *const MtcpConf) -> c_int {
    guard(-1, || {
        if conf.is_null() {
            return Err(E::FAULT);
        }
        // SAFETY: non-null, points to the caller's struct mtcp_conf.
        let c = unsafe { conf.read_unaligned() };
        if c.num_cores < 0 || c.max_concurrency < 0 || c.rcvbuf_size < 0 || c.sndbuf_size < 0 {
            return Err(E::INVAL);
        }
        if let Ok(mut g) = topology::CONF.lock() {
            *g = Some(c);
        }
        Ok(0)
    })
}

/// The number of online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`). mTCP's library exports it
/// (`cpu.c`) and its example programs call it without declaring another, so it is part of
/// the ABI `-lmtcp` programs link against.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn GetNumCPUs() -> c_int {
    // SAFETY: sysconf has no memory preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    c_int::try_from(n).unwrap_or(1).max(1)
}

/// Pins the calling thread to `cpu`.
#[no_mangle]
pub extern "C" fn mtcp_core_affinitize(cpu: c_int) -> c_int {
    guard(-1, || {
        let core = usize::try_from(cpu).map_err(|_| E::INVAL)?;
        dataplane::sys::pin_current_thread(core)
            .map_err(|e| E(e.raw_os_error().unwrap_or(libc::EINVAL)))?;
        Ok(0)
    })
}

/// A context for the calling thread (NULL with errno on failure).
#[no_mangle]
pub extern "C" fn mtcp_create_context(cpu: c_int) -> MctxT {
    guard(std::ptr::null_mut(), || {
        let h = topology::create_context(cpu)?;
        Ok(std::ptr::from_ref::<Handle>(h)
            .cast_mut()
            .cast::<MtcpContext>())
    })
}

/// Closes a context's sockets and releases its NIC lcore.
#[no_mangle]
pub extern "C" fn mtcp_destroy_context(mctx: MctxT) {
    guard((), || {
        handle_at(mctx as usize).ok_or(E::BADF)?.close();
        Ok(())
    })
}

/// Installs a signal handler (see mtcp_api.h); returns the previous one.
#[no_mangle]
pub extern "C" fn mtcp_register_signal(
    signum: c_int,
    handler: libc::sighandler_t,
) -> libc::sighandler_t {
    guard(libc::SIG_ERR, || crate::signal::register(signum, handler))
}

/// pipe(2): `pipeid[0]` the read end, `pipeid[1]` the write end, both blocking until
/// `mtcp_setsock_nonblock`.
#[no_mangle]
pub unsafe extern "C" fn mtcp_pipe(mctx: MctxT, pipeid: *mut c_int) -> c_int {
    guard(-1, || {
        handle_at(mctx as usize).ok_or(E::BADF)?;
        if pipeid.is_null() {
            return Err(E::FAULT);
        }
        let (r, w) = with_ctx(mctx, |c| c.pipe())?;
        // SAFETY: non-null, the caller's `int pipeid[2]`.
        unsafe {
            pipeid.write_unaligned(r);
            pipeid.add(1).write_unaligned(w);
        }
        Ok(0)
    })
}

/// mOS's timer callback: `void (*)(mctx_t, int id, int side, uint64_t events,
/// filter_arg_t *arg)`.
pub type TimerCallback = extern "C" fn(MctxT, c_int, c_int, u64, *mut c_void);

thread_local! {
    /// True while this thread runs a timer callback (timers due meanwhile wait for it).
    static IN_TIMER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs due timer callbacks `(id, callback)` of context `mctx`, outside its lock.
fn run_timers(mctx: MctxT, due: Vec<(c_int, usize)>) {
    for (id, cb) in due {
        // SAFETY: `cb` is the non-null callback C passed to mtcp_settimer, a
        // `TimerCallback`.
        let f: TimerCallback = unsafe { std::mem::transmute::<usize, TimerCallback>(cb) };
        IN_TIMER.with(|t| t.set(true));
        f(mctx, id, 0, 0, std::ptr::null_mut());
        IN_TIMER.with(|t| t.set(false));
    }
}

/// mOS's one-shot timer: `cb(mctx, id, 0, 0, NULL)` runs once after `*timeout`, on the
/// thread that runs the context (inside mtcp_epoll_wait, a blocking call, or any later
/// call), outside the context's lock: it may call mtcp functions, mtcp_settimer included.
#[no_mangle]
pub unsafe extern "C" fn mtcp_settimer(
    mctx: MctxT,
    id: c_int,
    timeout: *const libc::timeval,
    cb: Option<TimerCallback>,
) -> c_int {
    guard(-1, || {
        handle_at(mctx as usize).ok_or(E::BADF)?;
        let cb = cb.ok_or(E::INVAL)?;
        if timeout.is_null() || id < 0 {
            return Err(E::INVAL);
        }
        // SAFETY: non-null, the caller's struct timeval.
        let tv = unsafe { timeout.read_unaligned() };
        let secs = u64::try_from(tv.tv_sec).map_err(|_| E::INVAL)?;
        let us = u64::try_from(tv.tv_usec).map_err(|_| E::INVAL)?;
        let after = std::time::Duration::from_secs(secs)
            .checked_add(std::time::Duration::from_micros(us))
            .ok_or(E::INVAL)?;
        with_ctx(mctx, |c| {
            c.settimer(id, after, cb as usize);
            Ok(0)
        })
    })
}

/// getsockopt(2) for the options of docs/c-api.md.
#[no_mangle]
pub unsafe extern "C" fn mtcp_getsockopt(
    mctx: MctxT,
    sockid: c_int,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut libc::socklen_t,
) -> c_int {
    guard(-1, || {
        if optval.is_null() || optlen.is_null() {
            return Err(E::FAULT);
        }
        let v = with_ctx(mctx, |c| c.getsockopt(sockid, level, optname))?;
        // SAFETY: non-null; the caller's socklen_t.
        let room = unsafe { *optlen } as usize;
        let n = room.min(v.len());
        // SAFETY: `optval` has `room` >= `n` writable bytes (the caller's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), optval.cast::<u8>(), n);
            *optlen = n as libc::socklen_t;
        }
        Ok(0)
    })
}

/// setsockopt(2): SO_REUSEADDR, SO_LINGER, SO_SNDBUF, SO_RCVBUF, TCP_NODELAY and
/// AccelTCP's TCP_SETUP_OFFLOAD / TCP_TEARDOWN_OFFLOAD.
#[no_mangle]
pub unsafe extern "C" fn mtcp_setsockopt(
    mctx: MctxT,
    sockid: c_int,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: libc::socklen_t,
) -> c_int {
    guard(-1, || {
        // SAFETY: `optlen` readable bytes at `optval` (the caller's contract).
        let v = unsafe { slice(optval.cast::<c_char>(), optlen as usize) }?;
        with_ctx(mctx, |c| c.setsockopt(sockid, level, optname, v))?;
        Ok(0)
    })
}

/// O_NONBLOCK on.
#[no_mangle]
pub extern "C" fn mtcp_setsock_nonblock(mctx: MctxT, sockid: c_int) -> c_int {
    guard(-1, || with_ctx(mctx, |c| c.set_nonblock(sockid)).map(|_| 0))
}

/// ioctl(2) with FIONREAD: the bytes readable now into `*(int *)argp`.
#[no_mangle]
pub unsafe extern "C" fn mtcp_socket_ioctl(
    mctx: MctxT,
    sockid: c_int,
    request: c_int,
    argp: *mut c_void,
) -> c_int {
    guard(-1, || {
        if request as libc::c_ulong != libc::FIONREAD {
            return Err(E::INVAL);
        }
        if argp.is_null() {
            return Err(E::FAULT);
        }
        let n = with_ctx(mctx, |c| c.fionread(sockid))?;
        // SAFETY: FIONREAD's argument is an int the caller provides (non-null).
        unsafe {
            argp.cast::<c_int>()
                .write_unaligned(c_int::try_from(n).unwrap_or(c_int::MAX))
        };
        Ok(0)
    })
}

/// socket(AF_INET, SOCK_STREAM, 0).
#[no_mangle]
pub extern "C" fn mtcp_socket(mctx: MctxT, domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    guard(-1, || with_ctx(mctx, |c| c.socket(domain, ty, protocol)))
}

/// bind(2).
#[no_mangle]
pub unsafe extern "C" fn mtcp_bind(
    mctx: MctxT,
    sockid: c_int,
    addr: *const libc::sockaddr,
    addrlen: libc::socklen_t,
) -> c_int {
    guard(-1, || {
        // SAFETY: `addrlen` bytes at `addr` (checked for null and size there).
        let a = unsafe { read_addr(addr, addrlen) }?;
        with_ctx(mctx, |c| c.bind(sockid, a)).map(|_| 0)
    })
}

/// listen(2).
#[no_mangle]
pub extern "C" fn mtcp_listen(mctx: MctxT, sockid: c_int, backlog: c_int) -> c_int {
    guard(-1, || {
        with_ctx(mctx, |c| c.listen(sockid, backlog)).map(|_| 0)
    })
}

/// accept(2); `addr` and `addrlen` may both be NULL.
#[no_mangle]
pub unsafe extern "C" fn mtcp_accept(
    mctx: MctxT,
    sockid: c_int,
    addr: *mut libc::sockaddr,
    addrlen: *mut libc::socklen_t,
) -> c_int {
    guard(-1, || {
        if addr.is_null() != addrlen.is_null() {
            return Err(E::FAULT);
        }
        let (fd, peer) = with_ctx(mctx, |c| c.accept(sockid))?;
        // SAFETY: the caller's sockaddr buffer of `*addrlen` bytes, or both null.
        unsafe { write_addr(peer, addr, addrlen) }?;
        Ok(fd)
    })
}

/// A no-op returning 0: nicemu picks source ports whose replies come back to the
/// connecting context by itself (from the NIC's RSS key; virtual devices steer by queue).
#[no_mangle]
pub extern "C" fn mtcp_init_rss(
    mctx: MctxT,
    _saddr_base: libc::in_addr_t,
    num_addr: c_int,
    _daddr: libc::in_addr_t,
    _dport: libc::in_addr_t,
) -> c_int {
    guard(-1, || {
        handle_at(mctx as usize).ok_or(E::BADF)?;
        if num_addr <= 0 {
            return Err(E::INVAL);
        }
        Ok(0)
    })
}

/// connect(2): EINPROGRESS when non-blocking.
#[no_mangle]
pub unsafe extern "C" fn mtcp_connect(
    mctx: MctxT,
    sockid: c_int,
    addr: *const libc::sockaddr,
    addrlen: libc::socklen_t,
) -> c_int {
    guard(-1, || {
        // SAFETY: as in mtcp_bind.
        let a = unsafe { read_addr(addr, addrlen) }?;
        with_ctx(mctx, |c| c.connect(sockid, a)).map(|_| 0)
    })
}

/// close(2), for sockets and epoll descriptors.
#[no_mangle]
pub extern "C" fn mtcp_close(mctx: MctxT, sockid: c_int) -> c_int {
    guard(-1, || with_ctx(mctx, |c| c.close(sockid)).map(|_| 0))
}

/// shutdown(2).
#[no_mangle]
pub extern "C" fn mtcp_shutdown(mctx: MctxT, sockid: c_int, how: c_int) -> c_int {
    guard(-1, || {
        with_ctx(mctx, |c| c.shutdown(sockid, how)).map(|_| 0)
    })
}

/// Closes with a RST (nicemu's addition).
#[no_mangle]
pub extern "C" fn mtcp_abort(mctx: MctxT, sockid: c_int) -> c_int {
    guard(-1, || with_ctx(mctx, |c| c.abort(sockid)).map(|_| 0))
}

/// getsockname(2).
#[no_mangle]
pub unsafe extern "C" fn mtcp_getsockname(
    mctx: MctxT,
    sockid: c_int,
    addr: *mut libc::sockaddr,
    addrlen: *mut libc::socklen_t,
) -> c_int {
    // SAFETY: the caller's contract of getsockname(2), passed on.
    unsafe { name_out(mctx, sockid, addr, addrlen, Ctx::getsockname) }
}

/// getpeername(2).
#[no_mangle]
pub unsafe extern "C" fn mtcp_getpeername(
    mctx: MctxT,
    sockid: c_int,
    addr: *mut libc::sockaddr,
    addrlen: *mut libc::socklen_t,
) -> c_int {
    // SAFETY: the caller's contract of getpeername(2), passed on.
    unsafe { name_out(mctx, sockid, addr, addrlen, Ctx::getpeername) }
}

/// getsockname and getpeername: `name` of `sockid` into the caller's `addr` of `*addrlen`
/// bytes (EFAULT when either pointer is null).
///
/// # Safety
/// `addr` points to `*addrlen` writable bytes and `addrlen` to a writable `socklen_t`, or
/// either is null.
unsafe fn name_out(
    mctx: MctxT,
    sockid: c_int,
    addr: *mut libc::sockaddr,
    addrlen: *mut libc::socklen_t,
    name: fn(&mut Ctx<HostEnd>, c_int) -> R<std::net::SocketAddrV4>,
) -> c_int {
    guard(-1, || {
        if addr.is_null() || addrlen.is_null() {
            return Err(E::FAULT);
        }
        let a = with_ctx(mctx, |c| name(c, sockid))?;
        // SAFETY: the caller's sockaddr buffer of `*addrlen` bytes (both non-null).
        unsafe { write_addr(a, addr, addrlen) }?;
        Ok(0)
    })
}

/// read(2): 0 at end of stream.
#[no_mangle]
pub unsafe extern "C" fn mtcp_read(
    mctx: MctxT,
    sockid: c_int,
    buf: *mut c_char,
    len: usize,
) -> isize {
    // SAFETY: the caller's contract of read(2), which is recv(2)'s with no flags.
    unsafe { mtcp_recv(mctx, sockid, buf, len, 0) }
}

/// recv(2) with flags 0 or MSG_PEEK.
#[no_mangle]
pub unsafe extern "C" fn mtcp_recv(
    mctx: MctxT,
    sockid: c_int,
    buf: *mut c_char,
    len: usize,
    flags: c_int,
) -> isize {
    guard(-1, || {
        // SAFETY: `len` writable bytes at `buf` (the caller's contract).
        let b = unsafe { slice_mut(buf, len) }?;
        match flags {
            0 => with_ctx(mctx, |c| c.read(sockid, b)),
            libc::MSG_PEEK => with_ctx(mctx, |c| c.peek(sockid, b)),
            _ => Err(E::INVAL),
        }
        .map(|n| n as isize)
    })
}

/// readv(2).
#[no_mangle]
pub unsafe extern "C" fn mtcp_readv(
    mctx: MctxT,
    sockid: c_int,
    iov: *const libc::iovec,
    iovcnt: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: `iovcnt` iovecs at `iov`.
        let v = unsafe { iovecs(iov, iovcnt) }?;
        let mut bufs = Vec::with_capacity(v.len());
        for e in v {
            // SAFETY: each iovec names `iov_len` writable bytes of the caller's.
            bufs.push(IoSliceMut::new(unsafe {
                slice_mut(e.iov_base.cast(), e.iov_len)
            }?));
        }
        let n = with_ctx(mctx, |c| c.readv(sockid, &mut bufs))?;
        Ok(c_int::try_from(n).unwrap_or(c_int::MAX))
    })
}

/// write(2): the bytes queued.
#[no_mangle]
pub unsafe extern "C" fn mtcp_write(
    mctx: MctxT,
    sockid: c_int,
    buf: *const c_char,
    len: usize,
) -> isize {
    guard(-1, || {
        // SAFETY: `len` readable bytes at `buf`.
        let b = unsafe { slice(buf, len) }?;
        with_ctx(mctx, |c| c.write(sockid, b)).map(|n| n as isize)
    })
}

/// writev(2).
#[no_mangle]
pub unsafe extern "C" fn mtcp_writev(
    mctx: MctxT,
    sockid: c_int,
    iov: *const libc::iovec,
    iovcnt: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: `iovcnt` iovecs at `iov`.
        let v = unsafe { iovecs(iov, iovcnt) }?;
        let mut bufs = Vec::with_capacity(v.len());
        for e in v {
            // SAFETY: each iovec names `iov_len` readable bytes of the caller's.
            bufs.push(IoSlice::new(unsafe {
                slice(e.iov_base.cast_const().cast(), e.iov_len)
            }?));
        }
        let n = with_ctx(mctx, |c| c.writev(sockid, &bufs))?;
        Ok(c_int::try_from(n).unwrap_or(c_int::MAX))
    })
}

/// AccelTCP's splice (§4.3): the NIC relays `sock_from` (to the client) and `sock_to` (to
/// the server) to each other; `cb` runs once with the pair's metadata when it ends.
#[no_mangle]
pub extern "C" fn mtcp_splice(
    mctx: MctxT,
    sock_from: c_int,
    sock_to: c_int,
    cb: Option<extern "C" fn(*mut NspliceMeta)>,
) -> c_int {
    guard(-1, || {
        let cb = cb.ok_or(E::FAULT)? as usize;
        with_ctx(mctx, |c| c.splice(sock_from, sock_to, cb)).map(|_| 0)
    })
}

/// epoll_create(2).
#[no_mangle]
pub extern "C" fn mtcp_epoll_create(mctx: MctxT, size: c_int) -> c_int {
    guard(-1, || with_ctx(mctx, |c| c.epoll_create(size)))
}

/// epoll_create1(2): flags must be 0.
#[no_mangle]
pub extern "C" fn mtcp_epoll_create1(mctx: MctxT, flags: c_int) -> c_int {
    guard(-1, || {
        if flags != 0 {
            return Err(E::INVAL);
        }
        with_ctx(mctx, |c| c.epoll_create(1))
    })
}

/// epoll_ctl(2) with MTCP_EPOLL_CTL_{ADD,DEL,MOD}.
#[no_mangle]
pub unsafe extern "C" fn mtcp_epoll_ctl(
    mctx: MctxT,
    epid: c_int,
    op: c_int,
    sockid: c_int,
    event: *mut MtcpEpollEvent,
) -> c_int {
    guard(-1, || {
        let ev = (!event.is_null()).then(|| {
            // SAFETY: non-null, the caller's struct mtcp_epoll_event.
            let e = unsafe { event.read_unaligned() };
            EpollEvent {
                events: e.events,
                data: e.data,
            }
        });
        with_ctx(mctx, |c| c.epoll_ctl(epid, op, sockid, ev)).map(|_| 0)
    })
}

/// epoll_wait(2): events into `events[..maxevents]`; timeout in ms (-1: none).
#[no_mangle]
pub unsafe extern "C" fn mtcp_epoll_wait(
    mctx: MctxT,
    epid: c_int,
    events: *mut MtcpEpollEvent,
    maxevents: c_int,
    timeout: c_int,
) -> c_int {
    guard(-1, || {
        let max = usize::try_from(maxevents)
            .ok()
            .filter(|m| *m > 0)
            .ok_or(E::INVAL)?;
        if events.is_null() {
            return Err(E::FAULT);
        }
        let max = max.min(65_536);
        let wait = Wait::new(timeout);
        let n = with_ctx(mctx, |c| {
            let evs = c.epoll_wait_buffered(epid, max, &wait)?;
            for (i, e) in evs.iter().enumerate() {
                let ev = MtcpEpollEvent {
                    events: e.events,
                    data: e.data,
                };
                // SAFETY: `events` has `maxevents` >= `max` > i entries (the caller's
                // contract).
                unsafe { events.add(i).write_unaligned(ev) };
            }
            Ok(evs.len())
        })?;
        Ok(n as c_int)
    })
}

/// Names of the event bits, for logs (a static buffer per thread, as mTCP's is static).
#[no_mangle]
pub extern "C" fn EventToString(event: u32) -> *mut c_char {
    thread_local! {
        static BUF: std::cell::RefCell<[u8; 128]> = const { std::cell::RefCell::new([0; 128]) };
    }
    let names = [
        (0x001, "IN"),
        (0x002, "PRI"),
        (0x004, "OUT"),
        (0x008, "ERR"),
        (0x010, "HUP"),
        (0x2000, "RDHUP"),
        (1 << 30, "ONESHOT"),
        (1 << 31, "ET"),
    ];
    let mut s = String::new();
    for (bit, n) in names {
        if event & bit != 0 {
            if !s.is_empty() {
                s.push('|');
            }
            s.push_str(n);
        }
    }
    if s.is_empty() {
        s.push_str("NONE");
    }
    BUF.with(|b| {
        let mut b = b.borrow_mut();
        let n = s.len().min(b.len() - 1);
        b[..n].copy_from_slice(&s.as_bytes()[..n]);
        b[n] = 0;
        b.as_mut_ptr().cast::<c_char>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts_match_mtcp() {
        assert_eq!(std::mem::size_of::<MtcpConf>(), 7 * 4);
        assert_eq!(std::mem::size_of::<MtcpEpollEvent>(), 16);
        assert_eq!(std::mem::offset_of!(MtcpEpollEvent, data), 8);
        assert_eq!(std::mem::size_of::<NspliceMeta>(), 16);
        assert_eq!(std::mem::offset_of!(NspliceMeta, dst_addr), 8);
        assert_eq!(std::mem::offset_of!(NspliceMeta, close_reason), 14);
    }

    #[test]
    fn calls_without_a_context_fail_with_ebadf_and_null_pointers_with_efault() {
        let bogus = 0x1000 as MctxT;
        assert_eq!(mtcp_socket(bogus, libc::AF_INET, libc::SOCK_STREAM, 0), -1);
        assert_eq!(crate::err::errno(), libc::EBADF);
        assert_eq!(
            mtcp_socket(std::ptr::null_mut(), libc::AF_INET, libc::SOCK_STREAM, 0),
            -1
        );
        assert_eq!(crate::err::errno(), libc::EBADF);
        // SAFETY: null pointers are what this test passes; the functions must refuse them.
        unsafe {
            assert_eq!(mtcp_init(std::ptr::null()), -1);
            assert_eq!(crate::err::errno(), libc::EFAULT);
            assert_eq!(mtcp_read(bogus, 3, std::ptr::null_mut(), 10), -1);
            assert_eq!(crate::err::errno(), libc::EFAULT);
            assert_eq!(mtcp_getconf(std::ptr::null_mut()), -1);
            assert_eq!(crate::err::errno(), libc::EFAULT);
            assert_eq!(mtcp_bind(bogus, 3, std::ptr::null(), 16), -1);
            assert_eq!(crate::err::errno(), libc::EFAULT);
        }
        // SAFETY: as above.
        unsafe {
            assert_eq!(mtcp_pipe(bogus, std::ptr::null_mut()), -1);
            assert_eq!(crate::err::errno(), libc::EBADF);
            let tv = libc::timeval {
                tv_sec: 1,
                tv_usec: 0,
            };
            assert_eq!(mtcp_settimer(bogus, 1, &tv, None), -1);
            assert_eq!(crate::err::errno(), libc::EBADF);
        }
    }

    #[test]
    fn splice_metadata_is_in_network_byte_order() {
        let r = SpliceReport {
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:80".parse().unwrap(),
            bytes_c2s: 0,
            bytes_s2c: 0,
            host_bytes_c2s: 0,
            host_bytes_s2c: 0,
            packets_c2s: 0,
            packets_s2c: 0,
            end: SpliceEnd::Rst(SpliceSide::Server),
            on_nic: true,
        };
        let m = NspliceMeta::from(&r);
        assert_eq!(m.ip_addr.to_ne_bytes(), [10, 0, 0, 1]);
        assert_eq!(u16::from_be(m.port), 40000);
        assert_eq!(m.dst_addr.to_ne_bytes(), [10, 0, 0, 2]);
        assert_eq!(u16::from_be(m.dst_port), 80);
        assert_eq!(m.close_reason, 2);
    }

    #[test]
    fn event_names() {
        // SAFETY: EventToString returns a NUL-terminated thread-local buffer.
        let s = unsafe { CStr::from_ptr(EventToString(0x001 | 0x004 | (1 << 31))) };
        assert_eq!(s.to_str().unwrap(), "IN|OUT|ET");
    }
}
