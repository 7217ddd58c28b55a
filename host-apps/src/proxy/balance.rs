//! Backend selection and passive health for the proxy: round robin, least connections, or a
//! hash of the request URI; a backend that refuses a connection is marked down for a while
//! and skipped (as HAProxy's `observe layer4` with `on-error mark-down` does).
//!
//! Failures after a connection is up count too: a connect that timed out, a forwarded
//! request without a response head in time, a backend that closed or reset before its
//! response head. [`FAIL_LIMIT`] of them in a row mark the backend down (HAProxy's
//! `observe layer7` with `error-limit`); a response head resets the run.
//!
//! Sans-I/O: the caller says what happened (a connect refused, a connection closed) and when
//! (`now`, nanoseconds); nothing here touches sockets or clocks.

use std::net::SocketAddrV4;

/// How a backend is chosen for a new client connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Each backend in turn.
    RoundRobin,
    /// The backend with the fewest open connections (ties: in turn).
    LeastConn,
    /// A hash of the request-target, so the same URI goes to the same backend while the
    /// set of backends that are up does not change.
    UriHash,
}

impl Policy {
    /// The policy named `s` (`round-robin`, `least-conn`, `uri-hash`).
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "round-robin" => Some(Policy::RoundRobin),
            "least-conn" => Some(Policy::LeastConn),
            "uri-hash" => Some(Policy::UriHash),
            _ => None,
        }
    }

    /// The policy's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round-robin",
            Policy::LeastConn => "least-conn",
            Policy::UriHash => "uri-hash",
        }
    }
}

/// Consecutive failures (connect timeouts, response timeouts, early closes) that mark a
/// backend down.
pub const FAIL_LIMIT: u32 = 3;

/// Counters and state of one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddrV4,
    /// Open connections to it (picked and not yet released).
    pub active: u64,
    /// Requests sent to it (connections that completed and carried a request).
    pub requests: u64,
    /// Connects it refused (RST to the SYN, or reset before the handshake completed).
    pub refused: u64,
    /// Connects that did not complete within the timeout.
    pub timeouts: u64,
    /// Forwarded requests without a complete response head in time (504).
    pub response_timeouts: u64,
    /// Connections it closed or reset before a complete response head (502).
    pub early_closes: u64,
    /// Failures in a row since its last response head.
    pub fails: u32,
    /// Times it was marked down.
    pub marked_down: u64,
    /// Until when it is down (ns on the caller's clock; 0: up).
    pub down_until: u64,
}

/// The backends and the policy that chooses among them.
#[derive(Clone, Debug)]
pub struct Balancer {
    backends: Vec<Backend>,
    policy: Policy,
    down_ns: u64,
    next: usize,
}

/// Why no backend could be chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoBackend {
    /// Every backend is down or was already tried for this request (502 Bad Gateway).
    AllDown,
}

impl Balancer {
    /// A balancer over `backends` with `policy`; a backend that refuses stays down for
    /// `down_ns`.
    pub fn new(backends: &[SocketAddrV4], policy: Policy, down_ns: u64) -> Balancer {
        Balancer {
            backends: backends
                .iter()
                .map(|&addr| Backend {
                    addr,
                    active: 0,
                    requests: 0,
                    refused: 0,
                    timeouts: 0,
                    response_timeouts: 0,
                    early_closes: 0,
                    fails: 0,
                    marked_down: 0,
                    down_until: 0,
                })
                .collect(),
            policy,
            down_ns,
            next: 0,
        }
    }

    /// The backends and their counters, in configuration order.
    pub fn backends(&self) -> &[Backend] {
        &self.backends
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Whether backend `i` is up at `now`.
    pub fn is_up(&self, i: usize, now: u64) -> bool {
        self.backends.get(i).is_some_and(|b| b.down_until <= now)
    }

    /// Chooses a backend for a request with target `uri` at `now`, skipping those down and
    /// those whose bit is set in `tried` (backends already tried for this request; bit `i`
    /// for backend `i`, the first 64 backends). Counts it as active: call
    /// [`Balancer::release`] when its connection ends.
    pub fn pick(&mut self, uri: &[u8], now: u64, tried: u64) -> Result<usize, NoBackend> {
        let n = self.backends.len();
        let usable =
            |b: &Balancer, i: usize| b.is_up(i, now) && (i >= 64 || tried & (1u64 << i) == 0);
        let chosen = match self.policy {
            Policy::RoundRobin => (0..n)
                .map(|k| (self.next + k) % n)
                .find(|&i| usable(self, i)),
            Policy::LeastConn => (0..n)
                .map(|k| (self.next + k) % n)
                .filter(|&i| usable(self, i))
                .min_by_key(|&i| self.backends[i].active),
            Policy::UriHash => {
                if n == 0 {
                    None
                } else {
                    let start = (fnv1a(uri) % n as u64) as usize;
                    (0..n).map(|k| (start + k) % n).find(|&i| usable(self, i))
                }
            }
        };
        let i = chosen.ok_or(NoBackend::AllDown)?;
        if self.policy != Policy::UriHash {
            self.next = (i + 1) % n;
        }
        self.backends[i].active += 1;
        Ok(i)
    }

    /// Counts backend `i` active again for a retry to the same backend (as
    /// [`Balancer::pick`] does for a new choice). False when there is no such backend.
    pub fn pick_index(&mut self, i: usize) -> bool {
        match self.backends.get_mut(i) {
            Some(b) => {
                b.active += 1;
                true
            }
            None => false,
        }
    }

    /// Backend `i`'s connection ended (or its connect failed): one fewer active.
    pub fn release(&mut self, i: usize) {
        if let Some(b) = self.backends.get_mut(i) {
            b.active = b.active.saturating_sub(1);
        }
    }

    /// Backend `i` refused a connection at `now`: it is down until `now + down_ns`.
    pub fn refused(&mut self, i: usize, now: u64) {
        if let Some(b) = self.backends.get_mut(i) {
            b.refused += 1;
        }
        self.mark_down(i, now);
    }

    fn mark_down(&mut self, i: usize, now: u64) {
        if let Some(b) = self.backends.get_mut(i) {
            if b.down_until <= now {
                b.marked_down += 1;
            }
            b.down_until = now.saturating_add(self.down_ns).max(1);
        }
    }

    /// One more failure in a row of backend `i` at `now`: down at [`FAIL_LIMIT`].
    fn failed(&mut self, i: usize, now: u64) {
        let Some(b) = self.backends.get_mut(i) else {
            return;
        };
        b.fails += 1;
        if b.fails >= FAIL_LIMIT {
            b.fails = 0;
            self.mark_down(i, now);
        }
    }

    /// A connect to backend `i` timed out at `now`.
    pub fn timed_out(&mut self, i: usize, now: u64) {
        if let Some(b) = self.backends.get_mut(i) {
            b.timeouts += 1;
        }
        self.failed(i, now);
    }

    /// A request forwarded to backend `i` got no response head in time (at `now`).
    pub fn response_timed_out(&mut self, i: usize, now: u64) {
        if let Some(b) = self.backends.get_mut(i) {
            b.response_timeouts += 1;
        }
        self.failed(i, now);
    }

    /// Backend `i` closed or reset a connection before its response head (at `now`).
    pub fn closed_early(&mut self, i: usize, now: u64) {
        if let Some(b) = self.backends.get_mut(i) {
            b.early_closes += 1;
        }
        self.failed(i, now);
    }

    /// Backend `i` sent a response head: its run of failures ends.
    pub fn responded(&mut self, i: usize) {
        if let Some(b) = self.backends.get_mut(i) {
            b.fails = 0;
        }
    }

    /// Backend `i` took a request.
    pub fn requested(&mut self, i: usize) {
        if let Some(b) = self.backends.get_mut(i) {
            b.requests += 1;
        }
    }
}

/// FNV-1a, 64 bits: a small, stable hash for URI affinity (not for secrets).
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(n: usize) -> Vec<SocketAddrV4> {
        (0..n)
            .map(|i| SocketAddrV4::new([10, 0, 0, 3].into(), 8080 + i as u16))
            .collect()
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn round_robin_cycles_and_skips_down() {
        let mut b = Balancer::new(&addrs(3), Policy::RoundRobin, SEC);
        let got: Vec<usize> = (0..6).map(|_| b.pick(b"/", 10, 0).unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
        b.refused(1, 10);
        assert!(!b.is_up(1, 10));
        let got: Vec<usize> = (0..4).map(|_| b.pick(b"/", 20, 0).unwrap()).collect();
        assert_eq!(got, [0, 2, 0, 2]);
        // Back up after down_ns.
        assert!(b.is_up(1, 10 + SEC));
        let got: Vec<usize> = (0..3).map(|_| b.pick(b"/", 10 + SEC, 0).unwrap()).collect();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(b.backends()[1].refused, 1);
        assert_eq!(b.backends()[1].marked_down, 1);
    }

    #[test]
    fn tried_backends_are_skipped_and_all_down_is_an_error() {
        let mut b = Balancer::new(&addrs(2), Policy::RoundRobin, SEC);
        let first = b.pick(b"/", 0, 0).unwrap();
        b.release(first);
        b.refused(first, 0);
        let second = b.pick(b"/", 0, 1 << first).unwrap();
        assert_ne!(first, second);
        b.release(second);
        b.refused(second, 0);
        assert_eq!(
            b.pick(b"/", 0, (1 << first) | (1 << second)),
            Err(NoBackend::AllDown)
        );
        assert_eq!(b.pick(b"/", 5, 0), Err(NoBackend::AllDown));
        assert!(b.pick(b"/", SEC, 0).is_ok());
        let none = Balancer::new(&[], Policy::UriHash, SEC).pick(b"/", 0, 0);
        assert_eq!(none, Err(NoBackend::AllDown));
    }

    #[test]
    fn least_conn_picks_the_least_loaded() {
        let mut b = Balancer::new(&addrs(3), Policy::LeastConn, SEC);
        let a = b.pick(b"/", 0, 0).unwrap();
        let c = b.pick(b"/", 0, 0).unwrap();
        let d = b.pick(b"/", 0, 0).unwrap();
        let mut all = [a, c, d];
        all.sort();
        assert_eq!(all, [0, 1, 2]);
        // Backend 1 finishes twice as fast: it is chosen while it has fewer.
        b.release(1);
        assert_eq!(b.pick(b"/", 0, 0).unwrap(), 1);
        // Ties go in turn: 0 and 2 have one each, 1 has two.
        let tie = b.pick(b"/", 0, 0).unwrap();
        assert_ne!(tie, 1);
        b.release(tie);
        b.release(1);
        b.release(1);
        assert_eq!(b.backends()[1].active, 0);
        assert_eq!(b.pick(b"/", 0, 0).unwrap(), 1);
        // A down backend is never chosen, even when idle.
        b.release(1);
        b.refused(1, 0);
        for _ in 0..5 {
            assert_ne!(b.pick(b"/", 1, 0).unwrap(), 1);
        }
    }

    #[test]
    fn uri_hash_is_sticky_and_falls_over() {
        let mut b = Balancer::new(&addrs(4), Policy::UriHash, SEC);
        let uris: Vec<String> = (0..32).map(|i| format!("/file{i}")).collect();
        let first: Vec<usize> = uris
            .iter()
            .map(|u| b.pick(u.as_bytes(), 0, 0).unwrap())
            .collect();
        let again: Vec<usize> = uris
            .iter()
            .map(|u| b.pick(u.as_bytes(), 0, 0).unwrap())
            .collect();
        assert_eq!(first, again);
        // Spread over more than one backend.
        assert!(first.iter().any(|&i| i != first[0]));
        // With one down, its URIs move; the others stay.
        b.refused(2, 0);
        for (u, &was) in uris.iter().zip(&first) {
            let now = b.pick(u.as_bytes(), 1, 0).unwrap();
            assert_ne!(now, 2);
            if was != 2 {
                assert_eq!(now, was, "{u}");
            }
        }
    }

    #[test]
    fn failures_in_a_row_mark_down() {
        let mut b = Balancer::new(&addrs(2), Policy::RoundRobin, SEC);
        b.timed_out(0, 0);
        b.response_timed_out(0, 0);
        b.responded(0);
        b.closed_early(0, 0);
        b.timed_out(0, 0);
        assert!(b.is_up(0, 0), "a response head ends the run");
        b.response_timed_out(0, 0);
        assert!(!b.is_up(0, 0));
        let c = &b.backends()[0];
        assert_eq!((c.timeouts, c.response_timeouts, c.early_closes), (2, 2, 1));
        assert_eq!(c.marked_down, 1);
        assert!(b.is_up(0, SEC));
    }

    #[test]
    fn policy_names() {
        for p in [Policy::RoundRobin, Policy::LeastConn, Policy::UriHash] {
            assert_eq!(Policy::parse(p.name()), Some(p));
        }
        assert_eq!(Policy::parse("random"), None);
    }
}
