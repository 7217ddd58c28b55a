//! The network namespace of the kernel-interop tests (`netns_tcp`, `netns_tonic`): the one
//! of [`dataplane::netns`] (one end of a veth pair inside it for the kernel, the other left
//! outside for DPDK's net_af_packet), plus a dead-end veth pair inside for loss filters.
//! Removed when dropped, also on failure.

use std::ops::Deref;

use dataplane::netns::{self, test_name};

/// A [`netns::Netns`] (which it dereferences to) with a second veth pair inside it that leads
/// nowhere (where the tests' loss filters send the frames they drop). Dropping it deletes
/// the namespace, which deletes both pairs.
pub struct Netns {
    net: netns::Netns,
    sink: String,
    sink_peer: String,
}

impl Netns {
    /// Names are [`test_name`]s with `tag` (one letter, one per test of this file); the
    /// dead-end pair's kinds are `x` and `y`. Leftovers of an earlier run with the same
    /// process id are deleted first.
    pub fn new(tag: &str) -> Netns {
        Netns {
            net: netns::Netns::for_test(tag).unwrap_or_else(|e| panic!("{e}")),
            sink: test_name(tag, "x"),
            sink_peer: test_name(tag, "y"),
        }
    }

    /// The dead-end veth end inside the namespace, where loss filters redirect what they
    /// drop.
    pub fn sink(&self) -> &str {
        &self.sink
    }

    /// [`netns::Netns::configure`] (IPv6 off, no transmit offloads on the veth, the kernel's
    /// address, links up), then: no receive checksum offload on the kernel's end (so the
    /// kernel verifies the checksums the NIC writes), the dead-end pair (IPv6 off, up), and
    /// a clsact qdisc on the kernel's end for the tests' loss filters.
    pub fn configure(&self, kernel_cidr: &str) {
        let net = &self.net;
        net.configure(kernel_cidr).unwrap_or_else(|e| panic!("{e}"));
        let (inner, sink, sink_peer) = (net.inner(), self.sink.as_str(), self.sink_peer.as_str());
        net.must(&["ethtool", "-K", inner, "rx", "off"]);
        net.must(&[
            "ip", "link", "add", sink, "type", "veth", "peer", "name", sink_peer,
        ]);
        for dev in [sink, sink_peer] {
            net.disable_ipv6(dev).unwrap_or_else(|e| panic!("{e}"));
            net.must(&["ip", "link", "set", dev, "up"]);
        }
        net.must(&["tc", "qdisc", "add", "dev", inner, "clsact"]);
    }
}

impl Deref for Netns {
    type Target = netns::Netns;

    fn deref(&self) -> &netns::Netns {
        &self.net
    }
}
