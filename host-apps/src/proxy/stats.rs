//! The proxy's counters and their summary lines.

use std::collections::BTreeMap;
use std::fmt;

use super::app::State;
use super::balance::Backend;

/// The proxy's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Client connections open now.
    pub active: u64,
    /// Request heads forwarded to a backend.
    pub requests: u64,
    /// Responses the proxy made itself, by status (400, 408, 431, 501, 502, 504, 505).
    pub errors: BTreeMap<u16, u64>,
    /// Clients that closed or reset before their head was complete.
    pub client_gone: u64,
    /// Of the 408s: clients from which not one byte of a head had arrived (the request never
    /// reached the proxy's socket, as opposed to a head cut short).
    pub head_timeouts_empty: u64,
    /// Connection pairs handed to `nsplice` (AccelTCP §4.3).
    pub spliced: u64,
    /// Pairs `nsplice` refused, relayed on the host instead.
    pub splice_refused: u64,
    /// Spliced pairs whose closure was reported (AccelTCP App. A, 0x090D).
    pub splice_closed: u64,
    /// Of those: pairs the NIC relayed (the rest the host relayed for a NIC that was full).
    pub splice_on_nic: u64,
    /// Of those: pairs that ended with a reset, or idle.
    pub splice_reset: u64,
    /// Spliced pairs' bytes client → server after the splice, from closure reports.
    pub splice_bytes_c2s: u64,
    /// Spliced pairs' bytes server → client after the splice, from closure reports.
    pub splice_bytes_s2c: u64,
    /// Pairs relayed on the host.
    pub relayed: u64,
    /// Exchanges (request and response) the host relayed to their end in `http` mode.
    pub exchanges: u64,
    /// Bytes the host relayed client → server: after the first head in a tunnel, the
    /// heads and bodies of the exchanges in `http` mode.
    pub relayed_c2s: u64,
    /// Bytes the host relayed server → client (tunnels, and responses in `http` mode).
    pub relayed_s2c: u64,
    /// Relayed pairs ended by a reset of one side (the other side was reset too).
    pub relay_resets: u64,
    /// Backend connect attempts after a failed one (HAProxy's `retries`).
    pub connect_retries: u64,
    /// Of those: attempts sent to another backend (`redispatch`).
    pub redispatches: u64,
    /// Exchanges that ended the client connection (`Connection: close` on either side).
    pub closes_honoured: u64,
    /// Head bytes (rewritten) and early body bytes written to backends.
    pub head_bytes: u64,
    /// The backends, their counters and state.
    pub backends: Vec<Backend>,
}

impl ProxyStats {
    /// Adds the bytes a session relayed in `state` (a tunnel, or an unfinished exchange)
    /// as it ends.
    pub(super) fn account(&mut self, state: &State) {
        let (c2s, s2c) = match state {
            State::Relay { c2s, s2c } => (c2s.bytes, s2c.bytes),
            State::Exchange(ex) => (ex.bytes_c2s, ex.bytes_s2c),
            _ => return,
        };
        self.relayed_c2s += c2s;
        self.relayed_s2c += s2c;
    }

    /// Responses with `status` the proxy made itself.
    pub fn errors_of(&self, status: u16) -> u64 {
        self.errors.get(&status).copied().unwrap_or(0)
    }
}

impl fmt::Display for ProxyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "proxy: accepted {} active {} requests {} client gone {}",
            self.accepted, self.active, self.requests, self.client_gone
        )?;
        let errs: Vec<String> = self
            .errors
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        writeln!(
            f,
            "proxy: errors {}{}",
            if errs.is_empty() {
                "none".to_string()
            } else {
                errs.join(", ")
            },
            if self.head_timeouts_empty > 0 {
                format!(
                    " (408 with no byte of a head: {})",
                    self.head_timeouts_empty
                )
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "proxy: spliced pairs {} (refused {}), closed {} (on NIC {}, reset or idle {}), bytes c2s {} s2c {}",
            self.spliced,
            self.splice_refused,
            self.splice_closed,
            self.splice_on_nic,
            self.splice_reset,
            self.splice_bytes_c2s,
            self.splice_bytes_s2c
        )?;
        writeln!(
            f,
            "proxy: relayed pairs {} exchanges {} bytes c2s {} s2c {} resets {}; head bytes {}",
            self.relayed,
            self.exchanges,
            self.relayed_c2s,
            self.relayed_s2c,
            self.relay_resets,
            self.head_bytes
        )?;
        writeln!(
            f,
            "proxy: connect retries {} redispatched {}; closes honoured {}",
            self.connect_retries, self.redispatches, self.closes_honoured
        )?;
        for b in &self.backends {
            writeln!(
                f,
                "proxy: backend {} requests {} active {} refused {} connect timeouts {} response timeouts {} closed early {} marked down {}",
                b.addr,
                b.requests,
                b.active,
                b.refused,
                b.timeouts,
                b.response_timeouts,
                b.early_closes,
                b.marked_down
            )?;
        }
        Ok(())
    }
}
