//! Errors as C sees them: an errno value, set in the calling thread's `errno` when an
//! exported call returns -1 (mTCP's convention, after POSIX sockets).

use hoststack::Errno;

/// An errno value to report to C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct E(pub i32);

impl E {
    /// A null or unusable pointer argument.
    pub const FAULT: E = E(libc::EFAULT);
    /// An invalid argument.
    pub const INVAL: E = E(libc::EINVAL);
    /// A bad descriptor (or a context that is not one).
    pub const BADF: E = E(libc::EBADF);
    /// A blocking call interrupted by a signal.
    pub const INTR: E = E(libc::EINTR);
    /// Not supported by nicemu.
    pub const OPNOTSUPP: E = E(libc::EOPNOTSUPP);
    /// Only AF_INET.
    pub const AFNOSUPPORT: E = E(libc::EAFNOSUPPORT);
    /// Only SOCK_STREAM / TCP.
    pub const PROTONOSUPPORT: E = E(libc::EPROTONOSUPPORT);
    /// The option is not known at this level.
    pub const NOPROTOOPT: E = E(libc::ENOPROTOOPT);
    /// Not connected.
    pub const NOTCONN: E = E(libc::ENOTCONN);
    /// mtcp_init has not run (or the library was destroyed).
    pub const NOTINIT: E = E(libc::ENODEV);
}

impl From<Errno> for E {
    fn from(e: Errno) -> E {
        E(e.code())
    }
}

/// A call's result on the Rust side.
pub type R<T> = Result<T, E>;

/// Sets the calling thread's C `errno`.
pub fn set_errno(e: E) {
    // SAFETY: __errno_location returns a valid pointer to the calling thread's errno for
    // the thread's whole life (glibc, musl); writing an int there is what C's `errno = e`
    // does.
    unsafe { *libc::__errno_location() = e.0 };
}

/// The calling thread's C `errno` (for tests).
pub fn errno() -> i32 {
    // SAFETY: as in set_errno; a read.
    unsafe { *libc::__errno_location() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_errors_map_to_linux_errno_values() {
        let cases = [
            (Errno::Again, libc::EAGAIN),
            (Errno::BadF, libc::EBADF),
            (Errno::Inval, libc::EINVAL),
            (Errno::NotConn, libc::ENOTCONN),
            (Errno::InProgress, libc::EINPROGRESS),
            (Errno::Already, libc::EALREADY),
            (Errno::IsConn, libc::EISCONN),
            (Errno::ConnRefused, libc::ECONNREFUSED),
            (Errno::ConnReset, libc::ECONNRESET),
            (Errno::TimedOut, libc::ETIMEDOUT),
            (Errno::AddrInUse, libc::EADDRINUSE),
            (Errno::AddrNotAvail, libc::EADDRNOTAVAIL),
            (Errno::Pipe, libc::EPIPE),
            (Errno::MFile, libc::EMFILE),
            (Errno::NotSock, libc::ENOTSOCK),
            (Errno::OpNotSupp, libc::EOPNOTSUPP),
            (Errno::NoProtoOpt, libc::ENOPROTOOPT),
            (Errno::Exist, libc::EEXIST),
            (Errno::NoEnt, libc::ENOENT),
        ];
        for (e, code) in cases {
            assert_eq!(E::from(e), E(code), "{e:?}");
        }
    }

    #[test]
    fn set_errno_is_what_c_reads() {
        set_errno(E::INTR);
        assert_eq!(errno(), libc::EINTR);
        set_errno(E::from(Errno::Again));
        assert_eq!(errno(), libc::EAGAIN);
    }
}
