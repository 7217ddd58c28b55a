//! Wire formats both sides of the host ↔ NIC contract read and write, each implemented once:
//!
//! - [`ethernet`]: Ethernet II frames (RFC 894): the zero-copy [`EthernetFrame`] view with its
//!   [`ethernet::field`] byte ranges, [`EthernetRepr`], and the EtherTypes of IPv4 and ARP;
//! - [`ipv4`]: IPv4 headers (RFC 791 §3.1): the zero-copy [`Ipv4Packet`] view with its
//!   [`ipv4::field`] byte ranges, length checks and header checksum, [`Ipv4Repr`], and the
//!   protocol numbers of ICMP, TCP and UDP;
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
//! The host stack, the NIC's parser, TSO and RSS, and the NIC's offloads all use these;
//! nothing else in the workspace parses an Ethernet, IPv4 or TCP header or computes a
//! checksum.

pub mod checksum;
pub mod ethernet;
pub mod homa;
pub mod ipv4;
pub mod ndp;
pub mod roce;
pub mod seq;
pub mod siphash;
pub mod tcp;

pub use ethernet::{EthernetError, EthernetFrame, EthernetRepr};
pub use ipv4::{Ipv4Error, Ipv4Packet, Ipv4Repr};
pub use seq::Seq;
pub use tcp::{TcpError, TcpFlags, TcpHeader, TcpOptions, TcpPacket, TcpRepr};

/// The `N` bytes of `b` from `at`: one bounds check, then a copy.
///
/// # Panics
/// When `b` holds fewer than `at + N` bytes.
#[inline(always)]
pub(crate) fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    for (d, s) in a.iter_mut().zip(&b[at..at + N]) {
        *d = *s;
    }
    a
}
