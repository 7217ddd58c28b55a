//! Basic NIC duties on IPv4/Ethernet: parsing and validation, ARP, ICMP echo, checksum fill
//! and software TSO for host-originated packets.
//!
//! - [`mod@parse`]: validation of wire frames into [`Parsed`] or a [`DropReason`].
//! - [`csum`]: the Internet checksum (RFC 1071, RFC 1624) and checksum fill.
//! - [`arp`]: ARP bodies and the translation table (RFC 826).
//! - [`icmp`]: ICMP echo replies (RFC 792).
//! - [`tso`]: software TCP segmentation.
//! - [`stack`]: [`NicStack`], the per-lcore combination of the above.
//!
//! All of it is sans-I/O (`docs/architecture.md`): byte slices, [`crate::buf::PacketBuf`]s and
//! an explicit `now_ns`.

pub mod arp;
pub mod csum;
pub mod icmp;
pub mod parse;
pub mod stack;
pub mod tso;
pub mod verdict;

pub use csum::fill_checksums;
pub use parse::{parse, parse_headers, verify_l4_checksum, DropCounters, DropReason, Parsed, L3};
pub use stack::{IfaceConfig, L4Checksum, NicStack, StackConfig, StackCounters};
pub use verdict::Verdict;
