//! Congestion control behind a trait, so other algorithms can be added (issue 3, point 4).
//!
//! The trait is only the window arithmetic (RFC 5681); loss detection and recovery
//! (NewReno's recover point and partial ACKs, RFC 6582; SACK-based loss recovery) live in the
//! TCB, which tells the algorithm what happened.

/// A congestion control algorithm for one connection. All quantities are bytes.
pub trait CongestionControl: Send + std::fmt::Debug {
    /// The algorithm's name (for stats and `TCP_CONGESTION`-style queries).
    fn name(&self) -> &'static str;
    /// Congestion window.
    fn cwnd(&self) -> u32;
    /// Slow-start threshold.
    fn ssthresh(&self) -> u32;
    /// New data acknowledged outside loss recovery: grow the window (slow start or congestion
    /// avoidance; appropriate byte counting, RFC 3465, with L = 2·SMSS).
    fn on_ack(&mut self, acked: u32, now_ns: u64);
    /// Loss detected by duplicate ACKs or SACK: entering fast recovery with `flight` bytes
    /// outstanding. Sets ssthresh = max(flight/2, 2·SMSS) and cwnd = ssthresh (the TCB adds
    /// any inflation it wants; RFC 5681 §3.2, RFC 6582 §3.2 step 2).
    fn on_loss(&mut self, flight: u32, now_ns: u64);
    /// Fast recovery ended by a full ACK (RFC 6582 §3.2 step 3: cwnd = min(ssthresh,
    /// max(flight, SMSS) + SMSS), `flight` being what is outstanding after the ACK).
    fn on_recovery_exit(&mut self, flight: u32, now_ns: u64);
    /// Retransmission timeout: ssthresh = max(flight/2, 2·SMSS), cwnd = 1 SMSS (RFC 5681
    /// §3.1, the loss window).
    fn on_rto(&mut self, flight: u32, now_ns: u64);
    /// Sets the window directly (used for RFC 6582 partial-ACK deflation and after idle).
    fn set_cwnd(&mut self, cwnd: u32);
}

/// Reno/NewReno window arithmetic (RFC 5681 with RFC 3465 ABC). Initial window per RFC 6928
/// (min(10·SMSS, max(2·SMSS, 14600))).
#[derive(Clone, Debug)]
pub struct NewReno {
    _priv: (),
}

impl NewReno {
    /// A new instance for a connection with sender MSS `smss`.
    pub fn new(smss: u32) -> Self {
        let _ = smss;
        todo!("helper: tcp-wire")
    }
}

/// Which congestion control a connection uses (a config value; extend with new algorithms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CcAlgorithm {
    /// Reno/NewReno window arithmetic.
    #[default]
    NewReno,
}

impl CcAlgorithm {
    /// A fresh instance for a connection with sender MSS `smss`.
    pub fn build(self, smss: u32) -> Box<dyn CongestionControl> {
        match self {
            CcAlgorithm::NewReno => Box::new(NewReno::new(smss)),
        }
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }
    fn cwnd(&self) -> u32 {
        todo!("helper: tcp-wire")
    }
    fn ssthresh(&self) -> u32 {
        todo!("helper: tcp-wire")
    }
    fn on_ack(&mut self, acked: u32, now_ns: u64) {
        let _ = (acked, now_ns);
        todo!("helper: tcp-wire")
    }
    fn on_loss(&mut self, flight: u32, now_ns: u64) {
        let _ = (flight, now_ns);
        todo!("helper: tcp-wire")
    }
    fn on_recovery_exit(&mut self, flight: u32, now_ns: u64) {
        let _ = (flight, now_ns);
        todo!("helper: tcp-wire")
    }
    fn on_rto(&mut self, flight: u32, now_ns: u64) {
        let _ = (flight, now_ns);
        todo!("helper: tcp-wire")
    }
    fn set_cwnd(&mut self, cwnd: u32) {
        let _ = cwnd;
        todo!("helper: tcp-wire")
    }
}
