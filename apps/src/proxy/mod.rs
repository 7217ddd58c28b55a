//! `nicemu proxy`: an HTTP/1.1 layer-7 load balancer on the host stack's mTCP-style API,
//! AccelTCP's `epproxy` (§6.1.2): it reads each client's request head, picks a backend,
//! forwards the head, then splices the two connections on the NIC (`nsplice`, AccelTCP
//! §4.3, §5.1) or relays them on the host.
//!
//! - [`http`]: the bounded request-head parser and the head rewrite (RFC 9112);
//! - [`balance`]: backend choice (round robin, least connections, URI hash) and passive
//!   health;
//! - [`config`]: the `[proxy]` table of a configuration file;
//! - [`app`]: the proxy's state machine over a host context ([`Proxy`]), relaying on the
//!   host through bounded buffers (`relay`);
//! - [`stats`]: its counters ([`ProxyStats`]).

pub mod app;
pub mod balance;
pub mod config;
mod connect;
mod exchange;
pub mod framing;
pub mod http;
mod relay;
pub mod stats;

pub use app::{Proxy, ProxyStats};
pub use balance::{Balancer, Policy};
pub use config::{HeaderRule, ProxyConfig, ProxyMode};
