//! Congestion control behind a trait, so other algorithms can be added.
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
///
/// Invariant: `smss <= cwnd` and `2·smss <= ssthresh` once a loss was signalled (initially
/// ssthresh is `u32::MAX`, i.e. unbounded slow start). All arithmetic saturates.
#[derive(Clone, Debug)]
pub struct NewReno {
    /// Sender MSS (at least 1).
    smss: u32,
    /// Congestion window.
    cwnd: u32,
    /// Slow-start threshold.
    ssthresh: u32,
    /// RFC 3465 `bytes_acked` in congestion avoidance.
    bytes_acked: u32,
}

impl NewReno {
    /// A new instance for a connection with sender MSS `smss`.
    ///
    /// cwnd = IW = min(10·SMSS, max(2·SMSS, 14600)) (RFC 6928 §2), ssthresh = `u32::MAX`
    /// (RFC 5681 §3.1: arbitrarily high). An `smss` of 0 is taken as 1.
    pub fn new(smss: u32) -> Self {
        let smss = smss.max(1);
        NewReno {
            smss,
            cwnd: initial_window(smss),
            ssthresh: u32::MAX,
            bytes_acked: 0,
        }
    }

    /// The sender MSS this instance was built for.
    pub fn smss(&self) -> u32 {
        self.smss
    }

    /// ssthresh after a loss (RFC 5681 eq. (4)): max(FlightSize/2, 2·SMSS).
    #[inline]
    fn loss_ssthresh(&self, flight: u32) -> u32 {
        (flight / 2).max(self.smss.saturating_mul(2))
    }
}

/// The RFC 6928 initial window for sender MSS `smss`: min(10·SMSS, max(2·SMSS, 14600)).
pub fn initial_window(smss: u32) -> u32 {
    smss.saturating_mul(10)
        .min(smss.saturating_mul(2).max(14_600))
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
        self.cwnd
    }

    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// Slow start while cwnd < ssthresh: cwnd += min(acked, 2·SMSS), not past ssthresh (the
    /// rest of that ACK is not counted). Otherwise congestion avoidance: `bytes_acked +=
    /// acked`; once it reaches cwnd, it drops by cwnd and cwnd grows by one SMSS (RFC 3465
    /// §2.1), so about one SMSS per window of acknowledged data.
    fn on_ack(&mut self, acked: u32, _now_ns: u64) {
        if acked == 0 {
            return;
        }
        if self.cwnd < self.ssthresh {
            let limit = self.smss.saturating_mul(2);
            self.cwnd = self
                .cwnd
                .saturating_add(acked.min(limit))
                .min(self.ssthresh);
            return;
        }
        self.bytes_acked = self.bytes_acked.saturating_add(acked);
        if self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.smss);
        }
    }

    fn on_loss(&mut self, flight: u32, _now_ns: u64) {
        self.ssthresh = self.loss_ssthresh(flight);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
    }

    fn on_recovery_exit(&mut self, flight: u32, _now_ns: u64) {
        let deflated = flight.max(self.smss).saturating_add(self.smss);
        self.cwnd = self.ssthresh.min(deflated).max(self.smss);
        self.bytes_acked = 0;
    }

    fn on_rto(&mut self, flight: u32, _now_ns: u64) {
        self.ssthresh = self.loss_ssthresh(flight);
        self.cwnd = self.smss;
        self.bytes_acked = 0;
    }

    /// Sets cwnd (at least one SMSS) and restarts the congestion-avoidance byte count.
    fn set_cwnd(&mut self, cwnd: u32) {
        self.cwnd = cwnd.max(self.smss);
        self.bytes_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MSS: u32 = 1460;

    /// Acknowledges one window segment by segment, as a receiver ACKing every segment would.
    fn ack_window_per_segment(cc: &mut dyn CongestionControl) {
        let mut left = cc.cwnd();
        while left > 0 {
            let n = left.min(MSS);
            cc.on_ack(n, 0);
            left -= n;
        }
    }

    #[test]
    fn initial_window_rfc6928() {
        assert_eq!(initial_window(1460), 14_600);
        assert_eq!(initial_window(536), 5_360);
        assert_eq!(initial_window(9000), 18_000);
        assert_eq!(initial_window(1), 10);
        assert_eq!(initial_window(u32::MAX), u32::MAX);
        let cc = NewReno::new(MSS);
        assert_eq!(cc.cwnd(), 14_600);
        assert_eq!(cc.ssthresh(), u32::MAX);
        assert_eq!(cc.name(), "newreno");
        assert_eq!(NewReno::new(0).cwnd(), 10);
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut cc = NewReno::new(MSS);
        for round in 0..5 {
            let before = cc.cwnd();
            ack_window_per_segment(&mut cc);
            assert_eq!(cc.cwnd(), 2 * before, "round {round}");
        }
        assert_eq!(cc.cwnd(), 14_600 << 5);
    }

    #[test]
    fn slow_start_abc_limit_is_two_smss() {
        let mut cc = NewReno::new(MSS);
        // A stretch ACK of 10 segments grows cwnd by only L = 2 SMSS.
        cc.on_ack(10 * MSS, 0);
        assert_eq!(cc.cwnd(), 14_600 + 2 * MSS);
        // Delayed ACKs (2 segments each) still double the window per RTT.
        let mut cc = NewReno::new(MSS);
        let mut left = cc.cwnd();
        while left > 0 {
            let n = left.min(2 * MSS);
            cc.on_ack(n, 0);
            left -= n;
        }
        assert_eq!(cc.cwnd(), 2 * 14_600);
        cc.on_ack(0, 0);
        assert_eq!(cc.cwnd(), 2 * 14_600);
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut cc = NewReno::new(MSS);
        cc.on_rto(20 * MSS, 0);
        assert_eq!(cc.ssthresh(), 10 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        let mut acks = 0;
        while cc.cwnd() < cc.ssthresh() {
            cc.on_ack(MSS, 0);
            acks += 1;
        }
        // 9 ACKs of 1 SMSS take cwnd from 1 to 10 SMSS, exactly ssthresh.
        assert_eq!(acks, 9);
        assert_eq!(cc.cwnd(), 10 * MSS);
        // A 2-SMSS ACK right below ssthresh does not overshoot it.
        let mut cc = NewReno::new(MSS);
        cc.on_rto(7 * MSS, 0); // ssthresh 3.5 SMSS
        cc.on_ack(2 * MSS, 0);
        cc.on_ack(2 * MSS, 0);
        assert_eq!(cc.cwnd(), 7 * MSS / 2);
    }

    #[test]
    fn congestion_avoidance_one_smss_per_window() {
        let mut cc = NewReno::new(MSS);
        cc.on_loss(40 * MSS, 0);
        assert_eq!(cc.ssthresh(), 20 * MSS);
        assert_eq!(cc.cwnd(), 20 * MSS);
        for round in 0..10 {
            let before = cc.cwnd();
            ack_window_per_segment(&mut cc);
            assert_eq!(cc.cwnd(), before + MSS, "round {round}");
        }
        // Less than a window acknowledged: no growth yet.
        let before = cc.cwnd();
        cc.on_ack(before - 1, 0);
        assert_eq!(cc.cwnd(), before);
        cc.on_ack(1, 0);
        assert_eq!(cc.cwnd(), before + MSS);
    }

    #[test]
    fn loss_and_recovery_exit() {
        let mut cc = NewReno::new(MSS);
        for _ in 0..3 {
            ack_window_per_segment(&mut cc);
        }
        let flight = cc.cwnd(); // 116,800
        cc.on_loss(flight, 0);
        assert_eq!(cc.ssthresh(), flight / 2);
        assert_eq!(cc.cwnd(), flight / 2);
        // Full ACK with little outstanding: min(ssthresh, max(flight, SMSS) + SMSS).
        cc.on_recovery_exit(3 * MSS, 0);
        assert_eq!(cc.cwnd(), 4 * MSS);
        cc.set_cwnd(flight / 2);
        cc.on_recovery_exit(0, 0);
        assert_eq!(cc.cwnd(), 2 * MSS);
        // Lots still outstanding: capped at ssthresh.
        cc.on_recovery_exit(flight, 0);
        assert_eq!(cc.cwnd(), flight / 2);
        // Small flight: ssthresh floor of 2 SMSS.
        cc.on_loss(MSS, 0);
        assert_eq!(cc.ssthresh(), 2 * MSS);
        assert_eq!(cc.cwnd(), 2 * MSS);
    }

    #[test]
    fn rto_resets_to_one_smss() {
        let mut cc = NewReno::new(MSS);
        cc.on_rto(100_000, 0);
        assert_eq!(cc.ssthresh(), 50_000);
        assert_eq!(cc.cwnd(), MSS);
        cc.on_rto(0, 0);
        assert_eq!(cc.ssthresh(), 2 * MSS);
        assert_eq!(cc.cwnd(), MSS);
    }

    #[test]
    fn set_cwnd_floor_and_build() {
        let mut cc = CcAlgorithm::NewReno.build(MSS);
        cc.set_cwnd(0);
        assert_eq!(cc.cwnd(), MSS);
        cc.set_cwnd(50_000);
        assert_eq!(cc.cwnd(), 50_000);
        assert_eq!(cc.name(), "newreno");
    }

    #[test]
    fn saturates_near_u32_max() {
        let mut cc = NewReno::new(MSS);
        cc.set_cwnd(u32::MAX - 10);
        cc.on_ack(u32::MAX, 0);
        assert_eq!(cc.cwnd(), u32::MAX);
        cc.on_loss(u32::MAX, 0);
        // One SMSS per ACK at most; the leftover byte count carries to the next ACK
        // (RFC 3465 §2.1).
        cc.on_ack(u32::MAX, 0);
        assert_eq!(cc.cwnd(), u32::MAX / 2 + MSS);
        cc.on_ack(u32::MAX, 0);
        assert_eq!(cc.cwnd(), u32::MAX / 2 + 2 * MSS);
        cc.on_recovery_exit(u32::MAX, 0);
        assert_eq!(cc.cwnd(), u32::MAX / 2);
    }

    #[derive(Clone, Debug)]
    enum Event {
        Ack(u32),
        Loss(u32),
        Exit(u32),
        Rto(u32),
        Set(u32),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            4 => any::<u32>().prop_map(|n| Event::Ack(n % 100_000)),
            1 => any::<u32>().prop_map(Event::Loss),
            1 => any::<u32>().prop_map(Event::Exit),
            1 => any::<u32>().prop_map(Event::Rto),
            1 => any::<u32>().prop_map(Event::Set),
        ]
    }

    proptest! {
        #[test]
        fn invariants_hold(smss in 1u32..10_000, events in proptest::collection::vec(event(), 0..200)) {
            let mut cc = NewReno::new(smss);
            let mut lost = false;
            for ev in events {
                let before = cc.cwnd();
                match ev {
                    Event::Ack(n) => {
                        cc.on_ack(n, 0);
                        prop_assert!(cc.cwnd() >= before);
                        let step = if before < cc.ssthresh() { 2 * smss } else { smss };
                        prop_assert!(cc.cwnd() - before <= step);
                    }
                    Event::Loss(f) => { cc.on_loss(f, 0); lost = true; }
                    Event::Exit(f) => cc.on_recovery_exit(f, 0),
                    Event::Rto(f) => { cc.on_rto(f, 0); lost = true; }
                    Event::Set(c) => cc.set_cwnd(c),
                }
                prop_assert!(cc.cwnd() >= smss);
                if lost {
                    prop_assert!(cc.ssthresh() >= 2 * smss);
                }
            }
        }
    }
}
