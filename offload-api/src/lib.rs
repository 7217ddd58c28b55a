//! The host ↔ NIC contract of nicemu (DESIGN.md principle 2).
//!
//! Host and NIC talk only through messages framed as Ethernet packets with special
//! EtherTypes, following AccelTCP Appendix A. This crate currently defines the EtherType
//! numbers so that the NIC pipeline can classify control frames; the message headers and
//! their parse/emit code are added by the host stack issue.
#![forbid(unsafe_code)]

pub mod tonic_abi;

/// AccelTCP App. A: NIC → host, a new connection established by a SYN-cookie handshake.
pub const ETHERTYPE_SETUP: u16 = 0x090A;
/// AccelTCP App. A: host → NIC, teardown offload carrying the remaining data.
pub const ETHERTYPE_TEARDOWN: u16 = 0x090B;
/// AccelTCP App. A: host → NIC, splice installation.
pub const ETHERTYPE_SPLICE: u16 = 0x090C;
/// AccelTCP App. A: NIC → host, splice closure report.
pub const ETHERTYPE_SPLICE_CLOSE: u16 = 0x090D;

/// True when `ethertype` is one of the host ↔ NIC control EtherTypes above. Such frames are
/// only valid on the emulated PCIe link and must never be accepted from a wire port.
pub fn is_control_ethertype(ethertype: u16) -> bool {
    (ETHERTYPE_SETUP..=ETHERTYPE_SPLICE_CLOSE).contains(&ethertype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_range_is_exactly_appendix_a() {
        for t in [0x090A, 0x090B, 0x090C, 0x090D] {
            assert!(is_control_ethertype(t));
        }
        for t in [0x0800, 0x0806, 0x0909, 0x090E, 0x86DD] {
            assert!(!is_control_ethertype(t));
        }
    }
}
