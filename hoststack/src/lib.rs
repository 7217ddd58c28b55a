//! The host side of nicemu: an mTCP-style userspace TCP stack that applications link.
//!
//! It talks to NIC lcores only through [`offload_api`] messages (DESIGN.md principle 2).
//! - [`tcp`]: the sans-I/O TCP engine.
#![forbid(unsafe_code)]

pub use offload_api;

pub mod tcp;
