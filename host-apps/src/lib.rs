//! nicemu's host applications, each a sans-I/O loop over one `hoststack::Context` (the
//! mTCP-style API): the NIC below them and the runtime around them belong to the `nicemu`
//! command (the `apps` crate), so that nothing here reaches into the dataplane.
//!
//! - [`echo`]: an epoll echo server and a persistent-connection echo load generator (the
//!   workload of AccelTCP §6 and of BENCHMARKS.md);
//! - [`kv`]: `nicemu kv`, a Redis-protocol (RESP2/RESP3) in-memory key-value server;
//! - [`proxy`]: `nicemu proxy`, an HTTP/1.1 load balancer that splices (AccelTCP §4.3) or
//!   relays the connections it balances;
//! - [`loadgen`]: `nicemu loadgen`, the echo load generator as a process;
//! - [`listener`]: the listening socket the servers open (options, offloads, epoll).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod echo;
pub mod kv;
pub mod listener;
pub mod loadgen;
pub mod proxy;
