//! The targets (see the crate documentation) and their seeds.

mod frames;
mod host;
mod nic;
mod parsers;
mod seeds;
mod wire;

use frames::*;
pub use host::host_link;
pub use nic::{nic, nic_run, NicRun};
pub use parsers::{
    checksum, config, control_msg, http, kv, mtcp_conf, tcp_wire, transport_headers,
};
pub use seeds::seeds;
pub use wire::{ip_wire, splice, splice_translates};

use std::collections::HashMap;

use apps::echo::{EchoServer, ServerOffloads};
use apps::kv::{resp, Engine, EngineConfig, ProtoLimits};
use apps::node::{Node, NodeSpec};
use apps::proxy::framing::{self, Body};
use apps::proxy::http::{self, Parse};
use dataplane::clock::Clock;
use dataplane::port::wire::{self as memwire, WireConfig, WireQueue};
use dataplane::port::Port;
use dataplane::PacketBuf;
use hoststack::{Context, HostConfig};
use offload_api::link::{link, LinkConfig, NicEnd};
use offload_api::msg;
use offload_api::wire::checksum;
use offload_api::wire::tcp::{self, TcpFlags, TcpHeader, TcpOptions};
use offload_api::wire::{homa, ndp, roce, Seq};

/// The scripted client's (node A's) MAC and address in `nic`.
pub(super) const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub(super) const CLIENT_IP: [u8; 4] = [10, 0, 0, 1];
/// The node under test (an echo server on port 7).
pub(super) const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
pub(super) const SERVER_IP: [u8; 4] = [10, 0, 0, 2];
pub(super) const ECHO_PORT: u16 = 7;
/// Longest input a stateful target reads (longer inputs are cut: the work per input stays
/// bounded, so a slow input is a finding, not a long one).
pub(super) const MAX_INPUT: usize = 16 * 1024;

/// Reads a fuzz input as a stream of small decisions.
pub(super) struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    pub(super) fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    pub(super) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from(self.u16()?) << 16 | u32::from(self.u16()?))
    }
    /// Up to `n` bytes (fewer at the end of the input).
    pub(super) fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}
