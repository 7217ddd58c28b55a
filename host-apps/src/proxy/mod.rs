//! `nicemu proxy`: an HTTP/1.1 layer-7 load balancer on the host stack's mTCP-style API,
//! AccelTCP's `epproxy` (§6.1.2): it reads each client's request head, picks a backend,
//! forwards the head, then relays the exchange on the host or splices the two connections
//! on the NIC (`nsplice`, AccelTCP §4.3, §5.1). By default every request is parsed and
//! checked and only a connection's last exchange is spliced; `mode = "tunnel"` splices
//! after the first head as epproxy does ([`app`] has the trade-off).
//!
//! - [`http`]: the bounded request-head parser and the head rewrite (RFC 9112);
//! - [`framing`]: where bodies end (Content-Length, chunked, close) and the response head;
//! - [`balance`]: backend choice (round robin, least connections, URI hash) and passive
//!   health;
//! - [`config`]: the `[proxy]` table of a configuration file;
//! - [`app`]: the proxy's state machine over a host context ([`Proxy`]): requests relayed
//!   one exchange at a time (`request`, `exchange`), tunnels relayed through bounded buffers
//!   (`relay`), backend connects with retries (`connect`);
//! - [`stats`]: its counters ([`ProxyStats`]).

pub mod app;
pub mod balance;
pub mod config;
mod connect;
mod exchange;
pub mod framing;
pub mod http;
mod relay;
mod request;
pub mod stats;

pub use app::{Proxy, ProxyStats};
pub use balance::{Balancer, Policy};
pub use config::{HeaderRule, ProxyConfig, ProxyMode};
