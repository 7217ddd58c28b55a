//! Pointer and length conversions of the C boundary: each checks what C cannot promise
//! (null pointers → EFAULT, impossible lengths → EINVAL) before making a Rust value; the
//! caller (an exported function of [`crate::ffi`]) vouches for the rest of C's contract.

use std::ffi::{c_char, c_int};
use std::net::{Ipv4Addr, SocketAddrV4};

use crate::err::{E, R};

/// A C buffer as a slice (null with length 0 is an empty one).
pub(crate) unsafe fn slice_mut<'a>(p: *mut c_char, len: usize) -> R<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(E::FAULT);
    }
    isize::try_from(len).map_err(|_| E::INVAL)?;
    // SAFETY: the caller passes `len` writable bytes at the non-null `p` (the C call's
    // contract), not aliased during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// A C buffer as a read-only slice.
pub(crate) unsafe fn slice<'a>(p: *const c_char, len: usize) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(E::FAULT);
    }
    isize::try_from(len).map_err(|_| E::INVAL)?;
    // SAFETY: the caller passes `len` readable bytes at the non-null `p`.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `iovcnt` iovecs at `iov` (Linux's limit: 1024).
pub(crate) unsafe fn iovecs<'a>(iov: *const libc::iovec, n: c_int) -> R<&'a [libc::iovec]> {
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= 1024)
        .ok_or(E::INVAL)?;
    if n == 0 {
        return Ok(&[]);
    }
    if iov.is_null() {
        return Err(E::FAULT);
    }
    // SAFETY: the caller passes `n` iovecs at the non-null `iov`.
    Ok(unsafe { std::slice::from_raw_parts(iov, n) })
}

/// A `struct sockaddr_in` from C (AF_INET only).
pub(crate) unsafe fn read_addr(
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> R<SocketAddrV4> {
    if addr.is_null() {
        return Err(E::FAULT);
    }
    if (len as usize) < std::mem::size_of::<libc::sockaddr_in>() {
        return Err(E::INVAL);
    }
    // SAFETY: non-null and at least sizeof(sockaddr_in) bytes, as `len` says; read
    // unaligned since C may pass any sockaddr storage.
    let sin = unsafe { std::ptr::read_unaligned(addr.cast::<libc::sockaddr_in>()) };
    if i32::from(sin.sin_family) != libc::AF_INET {
        return Err(E::AFNOSUPPORT);
    }
    Ok(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
        u16::from_be(sin.sin_port),
    ))
}

/// Writes `a` as a `struct sockaddr_in` into `addr` (truncated to `*len`, which then says
/// the full size), as accept(2) and getsockname(2) do; both null: nothing to write.
pub(crate) unsafe fn write_addr(
    a: SocketAddrV4,
    addr: *mut libc::sockaddr,
    len: *mut libc::socklen_t,
) -> R<()> {
    if addr.is_null() && len.is_null() {
        return Ok(());
    }
    if addr.is_null() || len.is_null() {
        return Err(E::FAULT);
    }
    // SAFETY: a zeroed sockaddr_in is valid.
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_port = a.port().to_be();
    sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
    let full = std::mem::size_of::<libc::sockaddr_in>();
    // SAFETY: `len` is non-null and points to the caller's socklen_t.
    let room = unsafe { *len } as usize;
    let n = room.min(full);
    // SAFETY: `addr` has `room` >= `n` writable bytes (the caller's contract); `sin` has
    // `full` >= `n`.
    unsafe {
        std::ptr::copy_nonoverlapping((&raw const sin).cast::<u8>(), addr.cast::<u8>(), n);
        *len = full as libc::socklen_t;
    }
    Ok(())
}
