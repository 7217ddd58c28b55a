//! Wire formats both sides of the host ↔ NIC contract read and write, each implemented once:
//!
//! - [`tcp`]: TCP segments (RFC 9293 §3.1): the zero-copy [`TcpPacket`] view with its
//!   [`tcp::field`] byte ranges, and [`TcpRepr`] / [`TcpHeader`] with option parse and emit
//!   (MSS, window scale, SACK-permitted, SACK blocks, timestamps);
//! - [`seq`]: TCP sequence numbers with wrap-around comparisons (RFC 9293 §3.4);
//! - [`checksum`]: the Internet checksum (RFC 1071) with incremental update (RFC 1624);
//! - [`siphash`]: SipHash-2-4, the keyed hash of RFC 6528 ISNs and of SYN cookies;
//! - [`homa`]: Homa's packets (DATA, GRANT, RESEND, BUSY, ACK, ...) as Linux Homa lays them
//!   out;
//! - [`ndp`]: NDP's data, header-only (trimmed), ACK, NACK and PULL packets;
//! - [`roce`]: RoCEv2's BTH, AETH, CNP and ICRC (InfiniBand Annex A17).
//!
//! The host stack, the NIC's parser and TSO, and the NIC's offloads all use these; nothing
//! else in the workspace parses a TCP header or computes a checksum.

pub mod checksum;
pub mod homa;
pub mod ndp;
pub mod roce;
pub mod seq;
pub mod siphash;
pub mod tcp;

pub use seq::Seq;
pub use tcp::{TcpError, TcpFlags, TcpHeader, TcpOptions, TcpPacket, TcpRepr};
