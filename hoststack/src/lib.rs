//! The host side of nicemu: an mTCP-style userspace TCP stack that applications link.
//!
//! It talks to NIC lcores only through [`offload_api`] messages. The stack itself is built by
//! the host stack issue; this crate exists now so the workspace has the shape DESIGN.md gives.
#![forbid(unsafe_code)]

pub use offload_api;
