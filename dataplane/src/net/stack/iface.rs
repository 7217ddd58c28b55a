//! The configuration of one port's interface ([`IfaceConfig`]): its MAC, addresses, MTU,
//! on-link prefixes and static neighbours, and the subnet arithmetic of next-hop resolution.

/// Configuration of one port's interface.
///
/// Invariant: `mtu` is the IP MTU (Ethernet payload), not counting the 14-byte Ethernet header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfaceConfig {
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// The port's IPv4 addresses with their prefix lengths (0..=32).
    pub ipv4: Vec<([u8; 4], u8)>,
    /// IP MTU; 1500 by default (RFC 894).
    pub mtu: u16,
    /// More IPv4 prefixes on the port's link besides the subnets of `ipv4` (mTCP's
    /// `route.conf`): their addresses are resolved with ARP, as the subnets' are.
    pub on_link: Vec<([u8; 4], u8)>,
    /// Static neighbours (mTCP's `arp.conf`) as `(address, prefix length, MAC)`, longest
    /// prefix first: the first whose prefix holds the destination gives its MAC, before the
    /// ARP table and whatever the address's subnet; never expire, never asked for.
    pub neighbours: Vec<([u8; 4], u8, [u8; 6])>,
}

impl IfaceConfig {
    /// An interface with `mac`, `ipv4` and the default MTU of 1500.
    pub fn new(mac: [u8; 6], ipv4: Vec<([u8; 4], u8)>) -> Self {
        IfaceConfig {
            mac,
            ipv4,
            mtu: 1500,
            on_link: Vec::new(),
            neighbours: Vec::new(),
        }
    }

    /// True when `ip` is on the port's link: on one of its subnets or in one of its
    /// `on_link` prefixes.
    #[inline]
    pub fn is_on_link(&self, ip: [u8; 4]) -> bool {
        self.subnet_addr(ip).is_some() || self.on_link.iter().any(|(a, p)| same_subnet(*a, ip, *p))
    }

    /// True when `ip` is one of this interface's addresses.
    #[inline]
    pub fn has_ip(&self, ip: [u8; 4]) -> bool {
        self.ipv4.iter().any(|(a, _)| *a == ip)
    }

    /// The interface address whose subnet contains `ip`, if any.
    #[inline]
    pub fn subnet_addr(&self, ip: [u8; 4]) -> Option<[u8; 4]> {
        self.ipv4
            .iter()
            .find(|(a, p)| same_subnet(*a, ip, *p))
            .map(|(a, _)| *a)
    }

    /// True when `ip` is the directed broadcast address of one of the interface's subnets
    /// (prefixes shorter than /31 only, RFC 3021).
    #[inline]
    pub(super) fn is_subnet_broadcast(&self, ip: [u8; 4]) -> bool {
        self.ipv4.iter().any(|(a, p)| {
            *p < 31 && same_subnet(*a, ip, *p) && (u32::from_be_bytes(ip) | mask(*p)) == u32::MAX
        })
    }
}

impl Default for IfaceConfig {
    fn default() -> Self {
        IfaceConfig::new([0; 6], Vec::new())
    }
}

#[inline]
fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p if p >= 32 => u32::MAX,
        p => u32::MAX << (32 - p as u32),
    }
}

#[inline]
pub(super) fn same_subnet(a: [u8; 4], b: [u8; 4], prefix: u8) -> bool {
    let m = mask(prefix);
    u32::from_be_bytes(a) & m == u32::from_be_bytes(b) & m
}

/// What [`super::NicStack::iface`] answers for a port out of range.
pub(super) static NO_IFACE: IfaceConfig = IfaceConfig {
    mac: [0; 6],
    ipv4: Vec::new(),
    mtu: 1500,
    on_link: Vec::new(),
    neighbours: Vec::new(),
};
