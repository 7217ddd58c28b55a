//! Fuzz targets of every parser and entry point that takes outside input, and their seeds.
//!
//! Each target is a function of arbitrary bytes that must never panic, hang or break an
//! invariant it checks (an assertion failure is a finding). The same functions run in two
//! places:
//! - `fuzz/` (cargo-fuzz, nightly): coverage-guided, for as long as one wants (`make fuzz`);
//! - this crate's test `smoke` (stable, part of `make test`): every seed and a few thousand
//!   deterministic mutations of them, so that a target that breaks is caught before a fuzzer
//!   runs again.
//!
//! Targets ([`TARGETS`]):
//! - `tcp_wire`: the TCP view and options codec; a segment that parses is emitted again and
//!   must parse to the same fields (differential against the emitter, RFC 9293 §3.1).
//! - `checksum`: the incremental checksum update (RFC 1624) against a full recomputation.
//! - `transport_headers`: the RoCEv2 (with ICRC), Homa and NDP parsers.
//! - `control_msg`: the host <-> NIC messages (AccelTCP App. A's 0x090A-0x090E); a message
//!   that parses is emitted again and must parse to the same message.
//! - `kv`: the RESP parser and the whole command table (one connection, one engine); every
//!   reply is well-formed RESP.
//! - `http`: the proxy's request and response head parsers and the chunked body framing; a
//!   parsed request head serialises to a head that parses to the same request.
//! - `config`: the TOML configuration and the proxy's section.
//! - `nic`: a NIC lcore with the whole offload chain and a host running an echo server
//!   with the setup and teardown offloads, driven from the wire by a scripted client whose
//!   moves (and raw frames) come from the input; every frame the node sends must pass its own
//!   IPv4 and TCP checksum and length checks, and no host <-> NIC message may leave on the
//!   wire.
//! - `host_link`: the host stack fed arbitrary frames and messages from the NIC's end of the
//!   PCIe link; everything it sends towards the NIC must parse.
//! - `ip_wire`: the Ethernet and IPv4 views and reprs; a header that parses is emitted again
//!   and must read back the same fields.
//! - `splice`: the splice translation (AccelTCP §4.3), its fixed-offset form against the
//!   general walk, with the checksums and sequence arithmetic checked.
//! - `mtcp_conf`: libmtcp's readers of mTCP's configuration, `arp.conf` and `route.conf`.

#![warn(missing_docs)]
pub mod mutate;
pub mod targets;

pub use targets::{
    checksum, config, control_msg, host_link, http, ip_wire, kv, mtcp_conf, nic, nic_run, splice,
    splice_translates, tcp_wire, transport_headers, NicRun,
};

/// A fuzz target: arbitrary bytes in, a panic on a finding.
pub type Target = fn(&[u8]);

/// Every target with its name (the cargo-fuzz target of the same name calls it).
pub const TARGETS: &[(&str, Target)] = &[
    ("tcp_wire", tcp_wire),
    ("checksum", checksum),
    ("transport_headers", transport_headers),
    ("control_msg", control_msg),
    ("kv", kv),
    ("http", http),
    ("config", config),
    ("nic", nic),
    ("host_link", host_link),
    ("ip_wire", ip_wire),
    ("splice", splice),
    ("mtcp_conf", mtcp_conf),
];

/// The seeds of target `name`: inputs built from the same emitters and shipped files the
/// tests use, so that mutation starts from inputs that reach deep (empty for an unknown
/// name).
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    targets::seeds(name)
}
