//! Errors of the socket API as errno-like values: callers match on the variant, and
//! [`Errno::code`] gives the Linux errno number for C-style callers.

use crate::tcp::tcb::TcpError;

/// An errno-like socket API error.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, thiserror::Error)]
pub enum Errno {
    /// The operation would block (EAGAIN / EWOULDBLOCK).
    #[error("resource temporarily unavailable (EAGAIN)")]
    Again,
    /// Not an open descriptor (EBADF).
    #[error("bad descriptor (EBADF)")]
    BadF,
    /// Invalid argument or invalid in this state (EINVAL).
    #[error("invalid argument (EINVAL)")]
    Inval,
    /// The address is in use (EADDRINUSE).
    #[error("address in use (EADDRINUSE)")]
    AddrInUse,
    /// The address is not ours, or no ephemeral port is left (EADDRNOTAVAIL).
    #[error("address not available (EADDRNOTAVAIL)")]
    AddrNotAvail,
    /// The peer refused the connection (ECONNREFUSED).
    #[error("connection refused (ECONNREFUSED)")]
    ConnRefused,
    /// The peer reset the connection (ECONNRESET).
    #[error("connection reset by peer (ECONNRESET)")]
    ConnReset,
    /// The connection timed out (ETIMEDOUT).
    #[error("connection timed out (ETIMEDOUT)")]
    TimedOut,
    /// The socket is not connected (ENOTCONN).
    #[error("not connected (ENOTCONN)")]
    NotConn,
    /// The socket is already connected (EISCONN).
    #[error("already connected (EISCONN)")]
    IsConn,
    /// A non-blocking connect has started (EINPROGRESS).
    #[error("operation in progress (EINPROGRESS)")]
    InProgress,
    /// A connect is already under way (EALREADY).
    #[error("operation already in progress (EALREADY)")]
    Already,
    /// Writing to a socket whose write side is shut (EPIPE).
    #[error("broken pipe (EPIPE)")]
    Pipe,
    /// Too many open descriptors (EMFILE).
    #[error("too many open sockets (EMFILE)")]
    MFile,
    /// The descriptor is not a socket (ENOTSOCK), e.g. an epoll descriptor.
    #[error("not a socket (ENOTSOCK)")]
    NotSock,
    /// The operation is not supported on this socket (EOPNOTSUPP).
    #[error("operation not supported (EOPNOTSUPP)")]
    OpNotSupp,
    /// The option is not known at this level (ENOPROTOOPT).
    #[error("protocol option not available (ENOPROTOOPT)")]
    NoProtoOpt,
    /// epoll_ctl: the descriptor is already registered (EEXIST).
    #[error("already registered (EEXIST)")]
    Exist,
    /// epoll_ctl: the descriptor is not registered (ENOENT).
    #[error("not registered (ENOENT)")]
    NoEnt,
}

impl Errno {
    /// The Linux errno number.
    pub fn code(self) -> i32 {
        match self {
            Errno::Again => 11,
            Errno::BadF => 9,
            Errno::Inval => 22,
            Errno::AddrInUse => 98,
            Errno::AddrNotAvail => 99,
            Errno::ConnRefused => 111,
            Errno::ConnReset => 104,
            Errno::TimedOut => 110,
            Errno::NotConn => 107,
            Errno::IsConn => 106,
            Errno::InProgress => 115,
            Errno::Already => 114,
            Errno::Pipe => 32,
            Errno::MFile => 24,
            Errno::NotSock => 88,
            Errno::OpNotSupp => 95,
            Errno::NoProtoOpt => 92,
            Errno::Exist => 17,
            Errno::NoEnt => 2,
        }
    }
}

impl From<TcpError> for Errno {
    fn from(e: TcpError) -> Errno {
        match e {
            TcpError::Refused => Errno::ConnRefused,
            TcpError::Reset => Errno::ConnReset,
            TcpError::TimedOut => Errno::TimedOut,
            TcpError::WriteClosed => Errno::Pipe,
            TcpError::NotConnected => Errno::NotConn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_errors_map_to_their_errno() {
        assert_eq!(Errno::from(TcpError::Refused).code(), 111);
        assert_eq!(Errno::from(TcpError::Reset).code(), 104);
        assert_eq!(Errno::from(TcpError::TimedOut).code(), 110);
        assert_eq!(Errno::from(TcpError::WriteClosed).code(), 32);
        assert_eq!(Errno::from(TcpError::NotConnected).code(), 107);
    }
}
