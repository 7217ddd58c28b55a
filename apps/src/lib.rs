//! The `nicemu` command's library: the in-process topologies, benchmarks and experiments
//! that run nicemu's host applications (the `host-apps` crate, re-exported here as
//! [`echo`], [`kv`], [`proxy`], [`loadgen`] and [`listener`]) on NIC lcores.
//!
//! - [`node`]: a whole nicemu node in one thread (NIC lcore + host context, the "shared" lcore
//!   role), for deterministic tests and benchmarks on the in-memory wire;
//! - [`smol`]: smoltcp on the in-memory wire, as an interop peer and a baseline;
//! - [`bench`]: `nicemu bench echo` (host cost per transaction: nicemu, smoltcp, kernel) and
//!   `nicemu bench kv` (the key-value server with and without the offloads);
//! - [`json`]: the JSON the benchmarks' `--json` writes;
//! - [`tonic_cmd`]: `nicemu modules`, `nicemu testbench`, `nicemu bench tonic`;
//! - [`tonic_plot`]: the SVG of `nicemu testbench --plot`.

#![warn(missing_docs)]
// `unsafe` only in the two documented libc wrappers of `bench` (the kernel baseline server
// and thread CPU time), each allowed where it is declared.
#![deny(unsafe_code)]
pub use host_apps::{echo, kv, listener, loadgen, proxy};

pub mod bench;
pub mod experiment;
pub mod json;
pub mod node;
pub mod plot;
pub mod smol;
pub mod tonic_cmd;
pub mod tonic_plot;
