//! The host ↔ NIC contract of nicemu (`docs/architecture.md`: packets are the contract, single ownership of a
//! connection, a modelled PCIe link).
//!
//! Host and NIC talk only through messages framed as Ethernet packets with special
//! EtherTypes, following AccelTCP (NSDI '20) Appendix A "Host-NIC Communication Interface":
//! the offload type is an otherwise unused EtherType and the offload's parameters sit in a
//! small header between the Ethernet header and the (optional) IP packet. Because the contract
//! is packets, the same host stack could drive a NIC emulator in another process or a real
//! SmartNIC.
//!
//! - [`msg`]: the message set (zero-copy views, high-level representations, and
//!   [`msg::classify`] for the per-packet path).
//! - [`link`]: the emulated PCIe link, descriptor rings between one host core and one NIC
//!   lcore, with a DMA cost model and counters (every crossing is copied, as DMA would,
//!   and counted).
//! - [`tonic_abi`]: the C ABI of out-of-tree Tonic protocol modules.
//! - [`wire`]: the TCP wire format, the Internet checksum and SipHash, implemented once for
//!   both sides.
//!
//! Ordinary IPv4 frames (EtherType [`ETHERTYPE_IPV4`]) cross the link unchanged: that is the
//! *plain-packet path*, used for every packet of a connection the host owns. Only offload
//! handovers and control use the EtherTypes below.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod config_error;
pub mod doorbell;
pub mod link;
pub mod msg;
pub mod splice;
pub mod syncookie;
pub mod tonic_abi;
pub mod wire;

/// Length of an Ethernet II header (destination, source, EtherType; no VLAN tag): defined in
/// [`wire::ethernet`].
pub use wire::ethernet::HEADER_LEN as ETH_HDR_LEN;
/// EtherTypes of IPv4 (RFC 894; crosses the link unchanged) and ARP (RFC 826): defined in
/// [`wire::ethernet`].
pub use wire::ethernet::{ETHERTYPE_ARP, ETHERTYPE_IPV4};
/// Length of an IPv4 header without options (RFC 791 §3.1; the only form nicemu emits):
/// defined in [`wire::ipv4`].
pub use wire::ipv4::HEADER_LEN as IPV4_HDR_LEN;
/// IP protocol numbers of ICMP (RFC 792), TCP (RFC 9293) and UDP (RFC 768): defined in
/// [`wire::ipv4`].
pub use wire::ipv4::{IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};

/// AccelTCP App. A: NIC → host, a new connection established by a SYN-cookie handshake
/// ([`msg::SetupFrame`]).
pub const ETHERTYPE_SETUP: u16 = 0x090A;
/// AccelTCP App. A: host → NIC, teardown offload carrying the remaining data
/// ([`msg::TeardownFrame`]).
pub const ETHERTYPE_TEARDOWN: u16 = 0x090B;
/// AccelTCP App. A: host → NIC, splice installation ([`msg::SpliceInstallFrame`]).
pub const ETHERTYPE_SPLICE: u16 = 0x090C;
/// AccelTCP App. A: NIC → host, splice closure report ([`msg::SpliceCloseFrame`]).
pub const ETHERTYPE_SPLICE_CLOSE: u16 = 0x090D;
/// nicemu control: the control messages AccelTCP implies but does not number (listen
/// registration, install acknowledgements, teardown counts) and the Tonic flow messages. A
/// message-type byte in the common header tells them apart ([`msg::MsgType`]).
pub const ETHERTYPE_CONTROL: u16 = 0x090E;

/// True when `ethertype` is one of the host ↔ NIC EtherTypes above (0x090A..=0x090E: the four
/// of AccelTCP App. A and nicemu control). Such frames are only valid on the emulated PCIe
/// link and must never be accepted from a wire port.
pub fn is_control_ethertype(ethertype: u16) -> bool {
    (ETHERTYPE_SETUP..=ETHERTYPE_CONTROL).contains(&ethertype)
}

/// Which way something crosses the host ↔ NIC link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host → NIC (the host's "tx" ring).
    HostToNic,
    /// NIC → host (the host's "rx" ring).
    NicToHost,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_range_is_appendix_a_plus_control() {
        for t in [0x090A, 0x090B, 0x090C, 0x090D, 0x090E] {
            assert!(is_control_ethertype(t));
        }
        for t in [0x0800, 0x0806, 0x0909, 0x090F, 0x86DD, 0x8100] {
            assert!(!is_control_ethertype(t));
        }
    }
}
