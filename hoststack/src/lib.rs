//! The host side of nicemu: an mTCP-style userspace TCP stack that applications link.
//!
//! It talks to NIC lcores only through [`offload_api`] messages (`docs/architecture.md`, "Packets are the contract").
//! - [`tcp`]: the sans-I/O TCP engine (RFC 9293);
//! - [`frame`]: Ethernet/IPv4 framing of the plain-packet path and the [`frame::HostLink`]
//!   trait the stack sends and receives through;
//! - [`stack`]: per-core contexts with the mTCP socket and epoll API;
//! - [`Errno`]: errno-like errors of that API.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use offload_api;

pub mod errno;
pub mod frame;
pub mod memlink;
pub mod stack;
pub mod tcp;

pub use errno::Errno;
pub use stack::{Context, Fd, HostConfig};
