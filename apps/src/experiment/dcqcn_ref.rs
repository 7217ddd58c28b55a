//! A reference DCQCN reaction point (sender), written from the DCQCN paper's equations
//! (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015, §3.1
//! "RP algorithm") in floating point, separately from the Tonic module
//! (`dataplane::tonic::modules::dcqcn`, which approximates them in integers, Tonic §3.3.3).
//!
//! It is open-loop: it is driven by a given CNP sequence (the times at which one flow's
//! sender received CNPs in a testbench run), not by a network model of its own, so that the
//! rate traces of the module and of the reference differ only by the reaction point's
//! arithmetic and timer handling:
//!
//! - **rate decrease** on a CNP: `R_T = R_C`, `R_C = R_C·(1 − α/2)`, `α = (1 − g)·α + g`; the
//!   rate-increase timer, the byte counter and both stage counts restart;
//! - **α update**: `α = (1 − g)·α` at the end of every period K without a CNP;
//! - **rate increase** when the timer T expires or the byte counter has counted B bytes sent
//!   (at the current rate `R_C`): fast recovery `R_C = (R_T + R_C)/2` while both counts are
//!   below F = 5; additive increase `R_T = R_T + R_AI` first once one count reaches F; hyper
//!   increase `R_T = R_T + i·R_HAI` once both have (`i = min(T, BC) − F + 1`), each followed
//!   by `R_C = (R_T + R_C)/2`; rates stay between the minimum rate and the line rate.

/// DCQCN's parameters (the paper's defaults as the testbench's `ModuleParams` hold them).
#[derive(Clone, Copy, Debug)]
pub struct RefParams {
    /// Line rate (largest `R_C`, `R_T`), bit/s.
    pub line_bps: f64,
    /// Smallest `R_C`, bit/s.
    pub min_bps: f64,
    /// g.
    pub g: f64,
    /// K (α period) and T (rate-increase timer), ns.
    pub timer_ns: f64,
    /// B, bytes.
    pub byte_counter: f64,
    /// R_AI, bit/s.
    pub rai_bps: f64,
    /// R_HAI, bit/s.
    pub rhai_bps: f64,
}

/// F: fast-recovery steps.
const F: u32 = 5;

/// The reference sender's state.
#[derive(Clone, Copy, Debug)]
pub struct RefSender {
    p: RefParams,
    /// Current rate R_C, bit/s.
    pub rc: f64,
    /// Target rate R_T, bit/s.
    pub rt: f64,
    /// α.
    pub alpha: f64,
    t_cnt: u32,
    bc_cnt: u32,
    /// Virtual time the state is at, ns.
    now: f64,
    /// End of the current α period.
    alpha_due: f64,
    /// Expiry of the rate-increase timer.
    inc_due: f64,
    /// Bytes counted since the byte counter last fired.
    bytes: f64,
    /// Whether a CNP arrived in the current α period.
    cnp_in_period: bool,
    /// ∫ R_C dt since the start, bits: what the rate allowed the flow to send.
    pub allowed_bits: f64,
}

impl RefSender {
    /// A flow starting at `start_ns` at line rate with α = 1.
    pub fn new(p: RefParams, start_ns: f64) -> Self {
        RefSender {
            p,
            rc: p.line_bps,
            rt: p.line_bps,
            alpha: 1.0,
            t_cnt: 0,
            bc_cnt: 0,
            now: start_ns,
            alpha_due: start_ns + p.timer_ns,
            inc_due: start_ns + p.timer_ns,
            bytes: 0.0,
            cnp_in_period: false,
            allowed_bits: 0.0,
        }
    }

    fn increase(&mut self) {
        let (lo, hi) = (self.t_cnt.min(self.bc_cnt), self.t_cnt.max(self.bc_cnt));
        if hi < F {
            // fast recovery
        } else if lo >= F {
            self.rt += (lo - F + 1) as f64 * self.p.rhai_bps;
        } else {
            self.rt += self.p.rai_bps;
        }
        self.rt = self.rt.min(self.p.line_bps);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.p.line_bps);
    }

    /// Runs the timers and the byte counter up to `t` (ns), in time order.
    pub fn advance(&mut self, t: f64) {
        loop {
            let bc_due = if self.rc > 0.0 {
                self.now + (self.p.byte_counter - self.bytes) * 8.0 * 1e9 / self.rc
            } else {
                f64::INFINITY
            };
            let next = self.alpha_due.min(self.inc_due).min(bc_due);
            if next > t {
                break;
            }
            self.accrue(next);
            if next == self.alpha_due {
                if !self.cnp_in_period {
                    self.alpha *= 1.0 - self.p.g;
                }
                self.cnp_in_period = false;
                self.alpha_due += self.p.timer_ns;
            } else if next == self.inc_due {
                self.t_cnt += 1;
                self.inc_due += self.p.timer_ns;
                self.increase();
            } else {
                self.bytes = 0.0;
                self.bc_cnt += 1;
                self.increase();
            }
        }
        self.accrue(t);
    }

    /// Moves the state's clock to `t` at the current rate: the byte counter and the
    /// integral of R_C.
    fn accrue(&mut self, t: f64) {
        let bits = self.rc * (t - self.now) / 1e9;
        self.bytes += bits / 8.0;
        self.allowed_bits += bits;
        self.now = t;
    }

    /// A CNP at `t` (ns): the rate decrease.
    pub fn cnp(&mut self, t: f64) {
        self.advance(t);
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.p.min_bps);
        self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        self.t_cnt = 0;
        self.bc_cnt = 0;
        self.bytes = 0.0;
        self.inc_due = t + self.p.timer_ns;
        self.alpha_due = t + self.p.timer_ns;
        self.cnp_in_period = true;
    }
}

/// The reference rate (bit/s) at each of `sample_times` (ns, ascending) of a flow starting at
/// `start_ns` that receives CNPs at `cnps` (ns, ascending). Samples before the start are the
/// line rate.
pub fn rate_trace(p: RefParams, start_ns: f64, cnps: &[f64], sample_times: &[f64]) -> Vec<f64> {
    let mut s = RefSender::new(p, start_ns);
    let mut c = cnps.iter().copied().peekable();
    let mut out = Vec::with_capacity(sample_times.len());
    for &t in sample_times {
        if t < start_ns {
            out.push(p.line_bps);
            continue;
        }
        while let Some(&ct) = c.peek() {
            if ct > t {
                break;
            }
            s.cnp(ct);
            c.next();
        }
        s.advance(t);
        out.push(s.rc);
    }
    out
}

/// The time average of R_C (bit/s) over `[start_ns, end_ns]` of a flow starting at
/// `start_ns` that receives CNPs at `cnps` (ns, ascending): the throughput the reaction point
/// alone would give it.
pub fn mean_rate(p: RefParams, start_ns: f64, cnps: &[f64], end_ns: f64) -> f64 {
    let mut s = RefSender::new(p, start_ns);
    for &t in cnps.iter().take_while(|&&t| t <= end_ns) {
        s.cnp(t);
    }
    s.advance(end_ns);
    s.allowed_bits / (end_ns - start_ns).max(1.0) * 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> RefParams {
        RefParams {
            line_bps: 40e9,
            min_bps: 10e6,
            g: 1.0 / 256.0,
            timer_ns: 55_000.0,
            byte_counter: 10e6,
            rai_bps: 40e6,
            rhai_bps: 400e6,
        }
    }

    #[test]
    fn cnp_halves_at_alpha_one_then_fast_recovery() {
        let mut s = RefSender::new(p(), 0.0);
        s.cnp(10.0);
        assert_eq!((s.rt, s.rc), (40e9, 20e9));
        s.advance(10.0 + 55_000.0);
        assert_eq!(s.rc, 30e9);
        s.advance(10.0 + 110_000.0);
        assert_eq!(s.rc, 35e9);
        assert!(s.alpha < 1.0);
    }

    /// One CNP at 10 ns halves R_C, and the timer's first expiry raises it to 30 Gb/s: the
    /// average over [0, 110,010 ns] weighs 40 Gb/s for 10 ns, 20 for 55 µs and 30 for 55 µs.
    #[test]
    fn mean_rate_integrates_r_c() {
        let end = 10.0 + 110_000.0;
        let want = (40e9 * 10.0 + 20e9 * 55_000.0 + 30e9 * 55_000.0) / end;
        let got = mean_rate(p(), 0.0, &[10.0], end);
        assert!((got - want).abs() < 1.0, "{got} vs {want}");
        assert_eq!(mean_rate(p(), 0.0, &[], 1e6), 40e9);
    }
}
