//! RoCEv2 with DCQCN (Zhu et al., SIGCOMM '15), rate credit, go-back-N delivery (Tonic §1,
//! §6.1.1, §6.2.2).
//!
//! Reliable delivery as RoCEv2 NICs do it: the receiver acks cumulatively and answers a
//! sequence gap with a NAK carrying the expected PSN; the sender goes back to it and resends
//! everything from there (one go-back per NAKed PSN; a lost retransmission waits for the
//! RTO). A timeout does the same from `wnd-start`.
//!
//! Rate control is DCQCN's reaction point, with the floating point "approximated … using
//! integer operations" (§3.3.3): α in 1/65536 units, g = 2^-g_shift.
//! - **CNP**: `Rt = Rc; Rc = Rc·(1 − α/2); α = (1 − g)α + g`; the increase timer and the byte
//!   counter restart.
//! - **α timer** (every K): `α = (1 − g)α` if no CNP arrived in the period.
//! - **rate increase** when the timer T expires or the byte counter reaches B (counted from
//!   `total-sent`): fast recovery while both counts are below F = 5 (`Rc = (Rt + Rc)/2`),
//!   additive increase (`Rt += R_AI`) once one reaches F, hyper increase (`Rt += i·R_HAI`)
//!   once both have.
//!
//! The timers run in Periodic Updates, which this module asks to see on every sweep visit
//! (each visit first checks, against `now`, whether one of its timers or the byte counter is
//! due, and returns at once if not); new rates are forwarded to the credit engine (§3.3.3).

use super::super::module::{
    CreditScheme, FlowView, HookOutput, IncomingInput, ModuleConfig, PeriodicInput, PktType,
    TonicModule, MAX_WINDOW_SEGMENTS,
};
use super::ModuleParams;
use crate::tonic::Nanos;

/// α = 1.0.
const ALPHA_ONE: u64 = 1 << 16;
/// DCQCN's F: fast-recovery steps.
const F_STEPS: u32 = 5;

/// DCQCN reaction-point state (shared with IRN). Seven context words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RateCtl {
    /// Current rate Rc, bits/s.
    pub rc: u64,
    /// Target rate Rt, bits/s.
    pub rt: u64,
    /// α in 1/65536.
    pub alpha: u32,
    /// Rate-increase timer expiries since the last CNP (T).
    pub t_cnt: u32,
    /// Byte-counter expiries since the last CNP (BC).
    pub bc_cnt: u32,
    /// Start of the current α period.
    pub t_alpha: Nanos,
    /// Start of the current rate-increase period.
    pub t_inc: Nanos,
    /// Last CNP.
    pub last_cnp: Nanos,
    /// `total-sent` at the last byte-counter event.
    pub bc_mark: u64,
}

impl RateCtl {
    pub const WORDS: usize = 7;

    pub fn initial(p: &ModuleParams, now: Nanos) -> Self {
        RateCtl {
            rc: p.line_rate_bps,
            rt: p.line_rate_bps,
            alpha: ALPHA_ONE as u32,
            t_alpha: now,
            t_inc: now,
            ..Default::default()
        }
    }

    pub fn load(c: &[u64]) -> Self {
        RateCtl {
            rc: c[0],
            rt: c[1],
            alpha: c[2] as u32,
            t_cnt: (c[2] >> 32) as u16 as u32,
            bc_cnt: (c[2] >> 48) as u16 as u32,
            t_alpha: c[3],
            t_inc: c[4],
            last_cnp: c[5],
            bc_mark: c[6],
        }
    }

    pub fn store(&self, c: &mut [u64]) {
        c[0] = self.rc;
        c[1] = self.rt;
        c[2] = self.alpha as u64
            | (self.t_cnt.min(u16::MAX as u32) as u64) << 32
            | (self.bc_cnt.min(u16::MAX as u32) as u64) << 48;
        c[3] = self.t_alpha;
        c[4] = self.t_inc;
        c[5] = self.last_cnp;
        c[6] = self.bc_mark;
    }

    /// A CNP: cut the rate by α/2 and raise α (DCQCN RP, "rate decrease").
    pub fn on_cnp(&mut self, p: &ModuleParams, now: Nanos, total_sent: u64) {
        self.rt = self.rc;
        let cut = ((self.rc as u128 * self.alpha as u128) >> 17) as u64;
        self.rc = (self.rc - cut).max(p.min_rate_bps);
        let a = self.alpha as u64;
        self.alpha = (a - (a >> p.dcqcn_g_shift) + (ALPHA_ONE >> p.dcqcn_g_shift)) as u32;
        self.t_cnt = 0;
        self.bc_cnt = 0;
        self.t_inc = now;
        self.t_alpha = now;
        self.bc_mark = total_sent;
        self.last_cnp = now;
    }

    fn increase(&mut self, p: &ModuleParams) {
        let lo = self.t_cnt.min(self.bc_cnt);
        let hi = self.t_cnt.max(self.bc_cnt);
        if hi < F_STEPS {
            // Fast recovery: towards Rt.
        } else if lo >= F_STEPS {
            self.rt += (lo - F_STEPS + 1) as u64 * p.dcqcn_rhai_bps;
        } else {
            self.rt += p.dcqcn_rai_bps;
        }
        self.rt = self.rt.min(p.line_rate_bps);
        self.rc = ((self.rt + self.rc) / 2).min(p.line_rate_bps);
    }

    /// Whether [`on_periodic`](Self::on_periodic) has anything to do at `now` for the state
    /// stored in `ctx`: the α period or the rate-increase period K has ended, or the byte
    /// counter has reached B. Reads three context words and nothing else, so that the
    /// Periodic Updates hook, which this module asks to see on every sweep visit, costs
    /// almost nothing between its timers (when it is false, `on_periodic` would change
    /// nothing).
    #[inline(always)]
    pub fn due(p: &ModuleParams, ctx: &[u64], f: &FlowView, now: Nanos) -> bool {
        let k = p.dcqcn_timer_ns.max(1);
        let (t_alpha, t_inc, bc_mark) = (ctx[3], ctx[4], ctx[6]);
        now >= t_alpha.min(t_inc) + k
            || f.total_sent.wrapping_sub(bc_mark) * f.mss as u64 >= p.dcqcn_byte_counter
    }

    /// The α timer, the rate-increase timer and the byte counter up to `now`. Returns whether
    /// the rate changed.
    pub fn on_periodic(&mut self, p: &ModuleParams, f: &FlowView, now: Nanos) -> bool {
        let k = p.dcqcn_timer_ns.max(1);
        // α decays once per CNP-free period K (bounded catch-up after a long gap).
        let mut n = 0;
        while now >= self.t_alpha + k && n < 64 {
            if self.last_cnp < self.t_alpha || self.last_cnp == 0 {
                let a = self.alpha as u64;
                self.alpha = (a - (a >> p.dcqcn_g_shift)) as u32;
            }
            self.t_alpha += k;
            n += 1;
        }
        if now >= self.t_alpha + k {
            self.t_alpha = now;
        }
        let before = self.rc;
        if now >= self.t_inc + k {
            self.t_inc = now;
            self.t_cnt += 1;
            self.increase(p);
        }
        let sent_bytes = (f.total_sent - self.bc_mark) * f.mss as u64;
        if sent_bytes >= p.dcqcn_byte_counter {
            self.bc_mark = f.total_sent;
            self.bc_cnt += 1;
            self.increase(p);
        }
        self.rc != before
    }

    /// The Incoming hook's answer to a CNP, on the state stored in `ctx`:
    /// [`on_cnp`](Self::on_cnp), and the new rate forwarded to the credit engine (§3.3.3).
    #[inline(always)]
    pub fn incoming_cnp(
        p: &ModuleParams,
        i: &IncomingInput,
        ctx: &mut [u64],
        out: &mut HookOutput,
    ) {
        let mut r = RateCtl::load(ctx);
        r.on_cnp(p, i.now, i.flow.total_sent);
        r.store(ctx);
        out.set_rate(r.rc);
    }

    /// The Periodic Updates hook's rate part, on the state stored in `ctx`: when
    /// [`due`](Self::due), [`on_periodic`](Self::on_periodic), and a changed rate forwarded to
    /// the credit engine (§3.3.3). Most sweep visits fall between DCQCN's timers: nothing to
    /// load, compute or store.
    #[inline(always)]
    pub fn periodic(p: &ModuleParams, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        if RateCtl::due(p, ctx, &i.flow, i.now) {
            let mut r = RateCtl::load(ctx);
            if r.on_periodic(p, &i.flow, i.now) {
                out.set_rate(r.rc);
            }
            r.store(ctx);
        }
    }
}

/// Go-back-N context: the last NAKed PSN handled. One word after the [`RateCtl`] words.
const LAST_NAK: usize = RateCtl::WORDS;

/// The RoCEv2/DCQCN module.
#[derive(Clone, Copy, Debug)]
pub struct Dcqcn {
    p: ModuleParams,
}

impl Dcqcn {
    /// DCQCN with parameters `p` (line rate, minimum rate, burst, `dcqcn_*`, `rto_ns`).
    pub fn new(p: ModuleParams) -> Self {
        Dcqcn { p }
    }
}

/// Rate-module configuration shared by DCQCN and IRN.
pub(crate) fn rate_config(p: &ModuleParams, words: usize, wnd: u32) -> ModuleConfig {
    ModuleConfig {
        credit_scheme: CreditScheme::Rate,
        periodic_every_visit: true,
        user_ctx_bytes: (words * 8) as u32,
        init_wnd_size: wnd,
        init_rate_bps: p.line_rate_bps,
        max_burst_bytes: p.max_burst_bytes,
        init_credit_bytes: p.max_burst_bytes,
        init_rtx_timer_ns: p.rto_ns,
        ..Default::default()
    }
}

impl TonicModule for Dcqcn {
    fn name(&self) -> &str {
        "dcqcn"
    }

    fn config(&self) -> ModuleConfig {
        rate_config(&self.p, RateCtl::WORDS + 1, MAX_WINDOW_SEGMENTS)
    }

    fn init_flow(&self, now: Nanos, _flow: &FlowView, ctx: &mut [u64]) {
        RateCtl::initial(&self.p, now).store(ctx);
        ctx[LAST_NAK] = u64::MAX;
    }

    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        let f = &i.flow;
        match i.pkt.pkt_type {
            PktType::Cnp => RateCtl::incoming_cnp(&self.p, i, ctx, out),
            PktType::Nack => {
                // Go back to the expected PSN, once per NAKed PSN.
                let psn = i.pkt.nack.max(f.wnd_start);
                if ctx[LAST_NAK] != psn {
                    ctx[LAST_NAK] = psn;
                    out.mark_for_rtx(psn, f.transmitted_end());
                }
                out.reset_rtx_timer();
            }
            _ => {
                if i.newly_acked_cnt > 0 {
                    out.reset_rtx_timer();
                }
            }
        }
    }

    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        RateCtl::periodic(&self.p, i, ctx, out);
        if i.timeout_expired {
            out.mark_for_rtx(i.flow.wnd_start, i.flow.transmitted_end());
            ctx[LAST_NAK] = i.flow.wnd_start;
            out.reset_rtx_timer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain_ids, engine};
    use super::*;
    use crate::tonic::module::IncomingPkt;

    fn p() -> ModuleParams {
        ModuleParams {
            line_rate_bps: 40_000_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn cnp_cuts_by_alpha_half_and_recovers() {
        let p = p();
        let mut r = RateCtl::initial(&p, 0);
        r.on_cnp(&p, 10, 0);
        // α = 1: Rc halves; α stays 1 (1 − g + g).
        assert_eq!((r.rt, r.rc), (40_000_000_000, 20_000_000_000));
        assert_eq!(r.alpha as u64, ALPHA_ONE);
        let v = FlowView {
            mss: 1000,
            ..Default::default()
        };
        // Five timer periods of fast recovery: Rc halves the distance to Rt each time.
        let mut rates = vec![];
        for k in 1..=5 {
            assert!(r.on_periodic(&p, &v, 10 + k * 55_000));
            rates.push(r.rc);
        }
        assert_eq!(rates[0], 30_000_000_000);
        assert_eq!(rates[1], 35_000_000_000);
        assert!(r.alpha < ALPHA_ONE as u32, "α decays without CNPs");
        // Then additive increase moves Rt.
        r.on_periodic(&p, &v, 10 + 6 * 55_000);
        assert_eq!(r.rt, 40_000_000_000, "capped at line rate");
    }

    /// `due` is false exactly when `on_periodic` would change nothing, so the hook may skip
    /// it: the α and rate-increase periods (K = 55 µs) and the byte counter B.
    #[test]
    fn periodic_work_only_when_a_timer_or_the_byte_counter_is_due() {
        let p = p();
        let k = p.dcqcn_timer_ns;
        let mut r = RateCtl::initial(&p, 1000);
        r.on_cnp(&p, 2000, 0);
        let mut ctx = [0u64; RateCtl::WORDS];
        r.store(&mut ctx);
        let mut v = FlowView {
            mss: 1000,
            ..Default::default()
        };
        for now in [2000, 2000 + k / 2, 2000 + k - 1] {
            assert!(!RateCtl::due(&p, &ctx, &v, now));
            let mut r2 = RateCtl::load(&ctx);
            assert!(!r2.on_periodic(&p, &v, now));
            assert_eq!(r2, r, "nothing to do at {now}");
        }
        assert!(RateCtl::due(&p, &ctx, &v, 2000 + k));
        v.total_sent = p.dcqcn_byte_counter / 1000 - 1;
        assert!(!RateCtl::due(&p, &ctx, &v, 2000));
        v.total_sent += 1;
        assert!(RateCtl::due(&p, &ctx, &v, 2000), "byte counter reached");
        let mut r2 = RateCtl::load(&ctx);
        assert!(r2.on_periodic(&p, &v, 2000));
    }

    #[test]
    fn nak_goes_back_n_once() {
        let mut e = engine(Box::new(Dcqcn::new(p())), 1000);
        let sent = drain_ids(&mut e, 0);
        assert!(sent.len() >= 8, "burst credit: {sent:?}");
        e.incoming(0, &IncomingPkt::nack(3, 3), 10).unwrap();
        e.incoming(0, &IncomingPkt::nack(3, 3), 11).unwrap();
        let again: Vec<_> = (0..100)
            .filter_map(|k| e.next_segment(1_000_000 + k * 1000))
            .map(|t| t.seg)
            .collect();
        let n = sent.len() as u64;
        // What the rings already held goes first (at most N = 4), then everything from 3.
        let start = again.iter().position(|&s| s == 3).unwrap();
        assert!(
            start <= 4 && again[..start].iter().all(|&s| s >= n),
            "{again:?}"
        );
        let back = &again[start..start + (n - 3) as usize];
        assert_eq!(back, &(3..n).collect::<Vec<_>>()[..]);
        assert_eq!(e.stats().retransmitted, n - 3, "one go-back for two NAKs");
    }
}
