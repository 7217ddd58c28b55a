//! The network namespace of the kernel-interop tests (`netns_tcp`, `netns_tonic`): one end of
//! a veth pair inside it for the kernel, the other left outside for DPDK's net_af_packet, and
//! a dead-end veth pair inside for loss filters. Removed when dropped, also on failure.

use std::process::{Command, Output};

pub fn sh(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn must(args: &[&str]) -> String {
    let out = sh(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A namespace holding one end of a veth pair (the other end stays here, for af_packet), and
/// a second veth pair inside it that leads nowhere (where the tests' loss filters send the
/// frames they drop). Dropping it deletes the namespace, which deletes both pairs.
pub struct Netns {
    pub ns: String,
    pub outer: String,
    pub inner: String,
    pub sink: String,
    pub sink_peer: String,
}

impl Netns {
    /// Names are `nmt` + `tag` (one letter, one per test of this file) + a kind letter +
    /// the process id: unique per test, at most 15 bytes, and caught by ci/cleanup.sh.
    pub fn new(tag: char) -> Netns {
        let id = std::process::id() % 100_000;
        let n = Netns {
            ns: format!("nmt{tag}{id}"),
            outer: format!("nmt{tag}o{id}"),
            inner: format!("nmt{tag}i{id}"),
            sink: format!("nmt{tag}x{id}"),
            sink_peer: format!("nmt{tag}y{id}"),
        };
        // Leftovers of an earlier run with the same process id.
        let _ = sh(&["ip", "netns", "del", &n.ns]);
        let _ = sh(&["ip", "link", "del", &n.outer]);
        must(&["ip", "netns", "add", &n.ns]);
        must(&[
            "ip", "link", "add", &n.outer, "type", "veth", "peer", "name", &n.inner,
        ]);
        must(&["ip", "link", "set", &n.inner, "netns", &n.ns]);
        n
    }

    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        ["ip", "netns", "exec", &self.ns]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    }

    /// Runs a command inside the namespace (for set-up, when no traffic is expected).
    pub fn run(&self, args: &[&str]) -> String {
        let v = self.argv(args);
        must(&v.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// No IPv6 (no stray traffic), no transmit offloads on the veth (so the kernel sends
    /// complete checksums and segments of at most one MTU), no receive checksum offload on the
    /// kernel's end (so the kernel verifies the checksums the NIC writes), addresses up, and a
    /// clsact qdisc on the kernel's end for the tests' loss filters.
    pub fn configure(&self, kernel_cidr: &str) {
        let (outer, inner) = (self.outer.as_str(), self.inner.as_str());
        let (sink, sink_peer) = (self.sink.as_str(), self.sink_peer.as_str());
        let off = |dev: &str| format!("net.ipv6.conf.{dev}.disable_ipv6=1");
        must(&["sysctl", "-qw", &off(outer)]);
        must(&["ethtool", "-K", outer, "tx", "off"]);
        must(&["ip", "link", "set", outer, "up"]);
        self.run(&[
            "ip", "link", "add", sink, "type", "veth", "peer", "name", sink_peer,
        ]);
        for dev in [inner, sink, sink_peer] {
            self.run(&["sysctl", "-qw", &off(dev)]);
        }
        self.run(&["ethtool", "-K", inner, "tx", "off", "rx", "off"]);
        self.run(&["ip", "addr", "add", kernel_cidr, "dev", inner]);
        for dev in ["lo", inner, sink, sink_peer] {
            self.run(&["ip", "link", "set", dev, "up"]);
        }
        self.run(&["tc", "qdisc", "add", "dev", inner, "clsact"]);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = sh(&["ip", "netns", "del", &self.ns]);
        let _ = sh(&["ip", "link", "del", &self.outer]);
    }
}
