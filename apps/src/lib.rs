//! Applications built on nicemu's host API, and the in-process topologies that run them.
//!
//! - [`echo`]: an epoll echo server and a persistent-connection echo load generator over the
//!   mTCP-style API (the workload of AccelTCP §6 and of BENCHMARKS.md);
//! - [`kv`]: `nicemu kv`, a Redis-protocol (RESP2) in-memory key-value server on the host
//!   API;
//! - [`node`]: a whole nicemu node in one thread (NIC lcore + host context, the "shared" lcore
//!   role), for deterministic tests and benchmarks on the in-memory wire;
//! - [`smol`]: smoltcp on the in-memory wire, as an interop peer and a baseline;
//! - [`proxy`]: `nicemu proxy`, an HTTP/1.1 load balancer that splices (AccelTCP §4.3) or
//!   relays the connections it balances;
//! - [`bench`]: `nicemu bench echo` (host cost per transaction: nicemu, smoltcp, kernel) and
//!   `nicemu bench kv` (the key-value server with and without the offloads);
//! - [`json`]: the JSON the benchmarks' `--json` writes;
//! - [`listener`]: the listening socket the servers open (options, offloads, epoll);
//! - [`tonic_cmd`]: `nicemu modules`, `nicemu testbench`, `nicemu bench tonic`;
//! - [`tonic_plot`]: the SVG of `nicemu testbench --plot`.

#![warn(missing_docs)]
pub mod bench;
pub mod echo;
pub mod experiment;
pub mod json;
pub mod kv;
pub mod listener;
pub mod loadgen;
pub mod node;
pub mod plot;
pub mod proxy;
pub mod smol;
pub mod tonic_cmd;
pub mod tonic_plot;
