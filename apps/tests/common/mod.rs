//! Helpers shared by apps' integration tests.
#![allow(dead_code)]

pub mod kstats;
pub mod netns;
#[cfg(feature = "dpdk")]
pub mod node;
pub mod pattern;
pub mod proc;
#[cfg(feature = "dpdk")]
pub mod proxy_topo;
pub mod tonic_wire;
pub mod waits;
