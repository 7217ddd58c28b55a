//! The emulated smart NIC of nicemu.
//!
//! Poll-mode NIC lcores own port queues and run a run-to-completion pipeline over each burst:
//! rx → parse → classify → handlers → tx (`docs/architecture.md`, "Life of a frame through an
//! NIC lcore"). Everything protocol-related is sans-I/O: plain Rust over byte slices and an
//! explicit `now`, tested without DPDK.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod buf;
pub mod clock;
pub mod config;
pub mod cycles;
pub mod frames;
pub mod idle;
pub mod lcore;
pub mod net;
pub mod netns;
pub mod offload;
pub mod pcap;
pub mod port;
pub mod rss;
pub mod runtime;
#[cfg(feature = "dpdk")]
pub mod runtime_dpdk;
pub mod steer;
pub mod sys;
pub mod tonic;
#[cfg(target_os = "linux")]
pub mod wake;
pub mod wheel;

pub use buf::{HeapBuf, PacketBuf};
pub use port::{Port, QueueStats};
