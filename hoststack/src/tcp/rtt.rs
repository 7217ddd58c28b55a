//! Retransmission timeout per RFC 6298: SRTT/RTTVAR from samples (Karn's rule is the
//! caller's: never sample a retransmitted segment unless timestamps disambiguate it), RTO =
//! SRTT + max(G, 4·RTTVAR) clamped to [min, max], exponential backoff on expiry.

/// RTT estimator and RTO.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    _priv: (),
}

impl RttEstimator {
    /// Before any sample the RTO is `initial_ns` (RFC 6298 §2.1: 1 s); it is always clamped to
    /// `[min_ns, max_ns]`. Clock granularity G is taken as 1 ms.
    pub fn new(initial_ns: u64, min_ns: u64, max_ns: u64) -> Self {
        let _ = (initial_ns, min_ns, max_ns);
        todo!("helper: tcp-wire")
    }
    /// Feeds one RTT measurement (RFC 6298 §2.2–2.3) and clears any backoff.
    pub fn sample(&mut self, rtt_ns: u64) {
        let _ = rtt_ns;
        todo!("helper: tcp-wire")
    }
    /// The current RTO including backoff.
    pub fn rto(&self) -> u64 {
        todo!("helper: tcp-wire")
    }
    /// Doubles the RTO after an expiry (RFC 6298 §5.5), up to the maximum.
    pub fn backoff(&mut self) {
        todo!("helper: tcp-wire")
    }
    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<u64> {
        todo!("helper: tcp-wire")
    }
}
