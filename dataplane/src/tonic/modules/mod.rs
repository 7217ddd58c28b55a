//! The built-in protocol modules (Tonic Tab. 3 plus DCTCP) and what they share.
//!
//! | module | loss detection / delivery | credit |
//! |---|---|---|
//! | [`reno::Reno`] | cumulative acks, fast retransmit of one loss per window (RFC 5681) | window |
//! | [`newreno::NewReno`] | App. D's NewReno (RFC 6582): partial acks retransmit | window |
//! | [`sack::Sack`] | selective acks, RFC 6675-style loss marking and pipe | window |
//! | [`ndp::Ndp`] | NACKs of trimmed packets, timeouts; pull grants | grant |
//! | [`dcqcn::Dcqcn`] | RoCEv2 go-back-N on NAKs; DCQCN rate control in integers | rate |
//! | [`irn::Irn`] | selective retransmission, BDP window, two RTOs; DCQCN rate | rate |
//! | [`dctcp::Dctcp`] | NewReno loss recovery plus DCTCP's ECN-fraction window cuts | window |
//! | [`homa::Homa`] | RESENDs and timeouts; RTTbytes unscheduled, then SRPT grants with priorities | grant |
//!
//! Every module keeps its per-flow variables in the user context, packed into 64-bit words
//! by a small `load`/`store` pair, and uses only the hook inputs (Tonic §3.5).
//! The four window modules are one [`TcpModule`] each, differing only in their
//! [`TcpVariant`]; DCQCN and IRN share DCQCN's reaction point (`dcqcn::RateCtl`).

pub mod dcqcn;
pub mod dctcp;
pub mod homa;
pub mod irn;
pub mod ndp;
pub mod newreno;
pub mod reno;
pub mod sack;

use std::marker::PhantomData;

use super::module::{
    CreditScheme, FlowView, HookOutput, IncomingInput, IncomingPkt, ModuleConfig, NewAckInput,
    NewAckOutput, PeriodicInput, PktType, TonicModule, WindowBits, MAX_WINDOW_SEGMENTS,
};
use super::Nanos;

/// Parameters of the built-in modules (from `[tonic]` in the TOML configuration; see
/// `dataplane::config::TonicConfig`). Each module reads the ones that concern it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleParams {
    /// Initial window in segments (window modules; Tonic's `init_wnd_size`).
    pub init_wnd: u32,
    /// Base retransmission timeout (Tonic's `init_rtx_timer`; the paper's §6.2.1 runs use
    /// Linux's 200 ms minimum).
    pub rto_ns: Nanos,
    /// Duplicate acks that trigger fast retransmit (App. D `DUP_ACKS_THRESH`).
    pub dup_ack_thresh: u32,
    /// Line rate: the initial and largest rate of rate modules, in bits per second.
    pub line_rate_bps: u64,
    /// Smallest rate a rate module goes down to, in bits per second.
    pub min_rate_bps: u64,
    /// Maximum burst D of rate modules, in bytes.
    pub max_burst_bytes: u32,
    /// Credit a new NDP flow starts with (its first-RTT window), in bytes.
    pub init_credit_bytes: u32,
    /// IRN's window in segments (its BDP-based flow control).
    pub bdp_segments: u32,
    /// IRN's RTO when few segments are in flight (RTO_low).
    pub rto_low_ns: Nanos,
    /// DCQCN: α gain g = 2^-g_shift (DCQCN's g = 1/256).
    pub dcqcn_g_shift: u32,
    /// DCQCN: α update period K and rate-increase timer T, in ns (55 µs).
    pub dcqcn_timer_ns: Nanos,
    /// DCQCN: byte counter B, in bytes (10 MB).
    pub dcqcn_byte_counter: u64,
    /// DCQCN: additive increase R_AI, in bits per second (40 Mbit/s).
    pub dcqcn_rai_bps: u64,
    /// DCQCN: hyper increase R_HAI, in bits per second.
    pub dcqcn_rhai_bps: u64,
    /// DCTCP: α gain g = 2^-g_shift (DCTCP's g = 1/16).
    pub dctcp_g_shift: u32,
    /// Homa: the priority of unscheduled packets, 0–7 (Homa §3.4; the highest by default).
    /// Homa's RTTbytes is `init_credit_bytes`.
    pub homa_unsched_prio: u8,
}

impl Default for ModuleParams {
    fn default() -> Self {
        ModuleParams {
            init_wnd: 10,
            rto_ns: 200_000_000,
            dup_ack_thresh: 3,
            line_rate_bps: 100_000_000_000,
            min_rate_bps: 10_000_000,
            max_burst_bytes: 16 * 1024,
            init_credit_bytes: 16 * 1500,
            bdp_segments: 128,
            rto_low_ns: 100_000,
            dcqcn_g_shift: 8,
            dcqcn_timer_ns: 55_000,
            dcqcn_byte_counter: 10_000_000,
            dcqcn_rai_bps: 40_000_000,
            dcqcn_rhai_bps: 400_000_000,
            dctcp_g_shift: 4,
            homa_unsched_prio: 7,
        }
    }
}

/// Whether an incoming packet carries acknowledgment information (ACK, SACK, NACK).
pub(crate) fn is_ack(i: &IncomingInput) -> bool {
    is_ack_pkt(&i.pkt)
}

/// Whether packet `p` carries acknowledgment information (ACK, SACK, NACK).
#[inline(always)]
pub(crate) fn is_ack_pkt(p: &IncomingPkt) -> bool {
    matches!(p.pkt_type, PktType::Ack | PktType::Sack | PktType::Nack)
}

/// Largest congestion window a window module keeps (the engine clamps `wnd-size` to the
/// bitmap anyway).
const MAX_CWND: u32 = 1 << 20;

/// The congestion state TCP-style window modules share: App. D's user variables
/// `{prev_highest_ack, in_recovery, recover, in_timeout, wnd_inc_cntr, ss_thresh, dup_acks,
/// cwnd}` plus an RTO backoff count. Four context words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcpState {
    pub cwnd: u32,
    pub ss_thresh: u32,
    /// Highest segment sent when recovery (or a timeout) began.
    pub recover: u64,
    pub prev_highest_ack: u64,
    pub dup_acks: u32,
    pub wnd_inc_cntr: u32,
    pub in_recovery: bool,
    pub in_timeout: bool,
    pub backoff: u8,
}

impl TcpState {
    /// Context words used.
    pub const WORDS: usize = 4;

    /// The initial state: `cwnd = init_wnd`, `ss_thresh` unbounded.
    pub fn initial(init_wnd: u32) -> Self {
        TcpState {
            cwnd: init_wnd,
            ss_thresh: MAX_CWND,
            ..Default::default()
        }
    }

    /// Bits of context word 3 that hold `in_recovery` and `in_timeout`.
    pub const RECOVERY_BITS: u64 = 3 << 32;

    /// The first [`WORDS`](Self::WORDS) words of a context, as an array (one bounds check).
    #[inline(always)]
    pub fn words_mut(ctx: &mut [u64]) -> &mut [u64; Self::WORDS] {
        (&mut ctx[..Self::WORDS])
            .try_into()
            .expect("a slice of WORDS words")
    }

    #[inline]
    pub fn load(c: &[u64]) -> Self {
        let c: &[u64; Self::WORDS] = c[..Self::WORDS].try_into().expect("WORDS words");
        TcpState {
            cwnd: c[0] as u32,
            ss_thresh: (c[0] >> 32) as u32,
            recover: c[1],
            prev_highest_ack: c[2],
            dup_acks: c[3] as u16 as u32,
            wnd_inc_cntr: (c[3] >> 16) as u16 as u32,
            in_recovery: c[3] >> 32 & 1 == 1,
            in_timeout: c[3] >> 33 & 1 == 1,
            backoff: (c[3] >> 40) as u8,
        }
    }

    #[inline]
    pub fn store(&self, c: &mut [u64]) {
        let c = Self::words_mut(c);
        c[0] = self.cwnd as u64 | (self.ss_thresh as u64) << 32;
        c[1] = self.recover;
        c[2] = self.prev_highest_ack;
        c[3] = self.dup_acks.min(u16::MAX as u32) as u64
            | (self.wnd_inc_cntr.min(u16::MAX as u32) as u64) << 16
            | (self.in_recovery as u64) << 32
            | (self.in_timeout as u64) << 33
            | (self.backoff as u64) << 40;
    }

    /// Slow start (`+ newly_acked`) below `ss_thresh`, else congestion avoidance (+1 once
    /// `wnd_inc_cntr` reached `cwnd`, i.e. +1 per window of acks), as in App. D.
    #[inline]
    pub fn grow(&mut self, newly_acked: u32, wnd_size_in: u32) {
        let cntr_in = self.wnd_inc_cntr;
        if self.cwnd < self.ss_thresh {
            self.cwnd = (self.cwnd + newly_acked).min(MAX_CWND);
        } else if cntr_in >= self.cwnd {
            self.cwnd = (self.cwnd + 1).min(MAX_CWND);
        }
        if wnd_size_in >= self.ss_thresh {
            self.wnd_inc_cntr = if cntr_in >= wnd_size_in {
                0
            } else {
                cntr_in + 1
            };
        }
    }

    /// Retransmission timeout (RFC 5681 §3.1, RFC 6298 §5.5–5.7): `ss_thresh =
    /// max(FlightSize/2, 2)`, `cwnd = 1`, every unacknowledged segment marked lost (go-back-N
    /// under the one-segment window, as the fixed engine never retransmits beyond the window),
    /// recovery left, `recover` = highest sent, the timer backed off and restarted.
    pub fn on_timeout(&mut self, rto_ns: Nanos, i: &PeriodicInput, out: &mut HookOutput) {
        let f = &i.flow;
        let sent_out = f.sent_out();
        if sent_out == 0 {
            return;
        }
        let flight = sent_out.min(u32::MAX as u64) as u32;
        self.ss_thresh = (flight / 2).max(2);
        self.cwnd = 1;
        self.dup_acks = 0;
        self.wnd_inc_cntr = 0;
        self.in_recovery = false;
        self.in_timeout = true;
        self.recover = f.next_new - 1;
        out.mark_for_rtx(f.wnd_start, f.transmitted_end());
        out.set_wnd_size(1);
        self.backoff = (self.backoff + 1).min(6);
        out.set_rtx_timer_amount(rto_ns << self.backoff);
        out.reset_rtx_timer();
    }

    /// A new ack outside recovery on the packed words `c` (the Incoming hook's fast path,
    /// [`TonicModule::incoming_new_ack`]):
    /// [`grow`](Self::grow) by `newly_acked` (`wnd_size_in` the window before the hook),
    /// then no duplicate acks, recovery and timeout left, the backoff ended and the timer
    /// restarted ([`progress`](Self::progress)); the window becomes `cwnd`. Writes words 0
    /// and 3 exactly as [`load`](Self::load), those changes and [`store`](Self::store)
    /// would, and leaves `recover` and `prev_highest_ack` (words 1 and 2) alone.
    #[inline(always)]
    pub fn new_ack_words(
        rto_ns: Nanos,
        c: &mut [u64; Self::WORDS],
        newly_acked: u32,
        wnd_size_in: u32,
    ) -> NewAckOutput {
        let w3 = c[3];
        let mut s = TcpState {
            cwnd: c[0] as u32,
            ss_thresh: (c[0] >> 32) as u32,
            wnd_inc_cntr: (w3 >> 16) as u16 as u32,
            ..TcpState::default()
        };
        s.grow(newly_acked, wnd_size_in);
        let backoff = (w3 >> 40) as u8;
        c[0] = s.cwnd as u64 | (s.ss_thresh as u64) << 32;
        // dup_acks 0, not in recovery or timeout, backoff 0 (see `store`).
        c[3] = (s.wnd_inc_cntr.min(u16::MAX as u32) as u64) << 16;
        NewAckOutput {
            wnd_size: clamp_wnd(s.cwnd as u64),
            rtx_timer_amount: (backoff != 0).then_some(rto_ns),
        }
    }

    /// After an ack that made progress outside recovery: the RTO backoff ends (RFC 6298 §5.7
    /// without an RTT estimator: back to the base RTO).
    #[inline]
    pub fn progress(&mut self, rto_ns: Nanos, out: &mut HookOutput) {
        if self.backoff != 0 {
            self.backoff = 0;
            out.set_rtx_timer_amount(rto_ns);
        }
        out.reset_rtx_timer();
    }
}

/// What a TCP-style window module (Reno, NewReno, SACK, DCTCP) does its own way: its name,
/// its context size, a new flow's context and the Incoming hook (loss detection and recovery,
/// the window). The rest is the same for all of them and lives in [`TcpModule`].
pub trait TcpVariant: Send + Sync {
    /// The registry name (e.g. `reno`).
    const NAME: &'static str;

    /// Context words per flow: the four words of the shared TCP congestion state (the
    /// default) plus any the variant keeps after them.
    const WORDS: usize = TcpState::WORDS;

    /// Sets up a new flow's context (`ctx` holds [`WORDS`](Self::WORDS) words). Default: the
    /// shared TCP state with `cwnd = init_wnd` and `ss_thresh` unbounded.
    fn init_flow(p: &ModuleParams, ctx: &mut [u64]) {
        TcpState::initial(p.init_wnd).store(ctx);
    }

    /// The Incoming hook ([`TonicModule::incoming`]) under parameters `p`. Its one caller is
    /// [`TcpModule`]'s hook; implementations are `#[inline(always)]` so that the hook costs
    /// no extra call.
    fn incoming(p: &ModuleParams, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput);

    /// Whether the variant implements [`incoming_new_ack`](Self::incoming_new_ack)
    /// ([`TonicModule::has_new_ack_fast_path`]).
    const NEW_ACK_FAST_PATH: bool = false;

    /// The fast path of the Incoming hook ([`TonicModule::incoming_new_ack`], whose
    /// invariant it keeps) under parameters `p`. Default: none (`None`).
    #[inline(always)]
    fn incoming_new_ack(
        p: &ModuleParams,
        i: &NewAckInput<'_>,
        ctx: &mut [u64],
    ) -> Option<NewAckOutput> {
        let _ = (p, i, ctx);
        None
    }
}

/// A TCP-style window module: variant `V`'s Incoming hook plus what every such module
/// shares, namely the window-scheme configuration (initial window `init_wnd`, base RTO
/// `rto_ns`; Tonic's `init_wnd_size` and `init_rtx_timer`) and the Periodic Updates hook,
/// which handles retransmission timeouts only (RFC 5681 §3.1, RFC 6298 §5.5–5.7: window of
/// one, everything unacknowledged marked, the timer backed off).
#[derive(Clone, Copy, Debug)]
pub struct TcpModule<V> {
    p: ModuleParams,
    variant: PhantomData<V>,
}

impl<V: TcpVariant> TcpModule<V> {
    /// The module with parameters `p` (`init_wnd`, `rto_ns`, `dup_ack_thresh`, and whatever
    /// else the variant reads).
    pub fn new(p: ModuleParams) -> Self {
        TcpModule {
            p,
            variant: PhantomData,
        }
    }
}

impl<V: TcpVariant> TonicModule for TcpModule<V> {
    fn name(&self) -> &str {
        V::NAME
    }

    fn config(&self) -> ModuleConfig {
        ModuleConfig {
            credit_scheme: CreditScheme::Window,
            user_ctx_bytes: (V::WORDS * 8) as u32,
            init_wnd_size: self.p.init_wnd,
            init_rtx_timer_ns: self.p.rto_ns,
            ..Default::default()
        }
    }

    fn init_flow(&self, _now: Nanos, _flow: &FlowView, ctx: &mut [u64]) {
        V::init_flow(&self.p, ctx);
    }

    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        V::incoming(&self.p, i, ctx, out);
    }

    fn incoming_new_ack(&self, i: &NewAckInput<'_>, ctx: &mut [u64]) -> Option<NewAckOutput> {
        V::incoming_new_ack(&self.p, i, ctx)
    }

    fn has_new_ack_fast_path(&self) -> bool {
        V::NEW_ACK_FAST_PATH
    }

    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        if i.timeout_expired {
            let mut s = TcpState::load(ctx);
            s.on_timeout(self.p.rto_ns, i, out);
            s.store(ctx);
        }
    }
}

/// The window offset of the `k`-th highest set bit among the first `n` (k ≥ 1).
pub(crate) fn kth_highest(bits: &WindowBits, n: u32, k: u32) -> Option<u32> {
    let mut b = *bits;
    // Keep only the first n bits.
    for (w, word) in b.words.iter_mut().enumerate() {
        let lo = w as u32 * 64;
        if n <= lo {
            *word = 0;
        } else if n - lo < 64 {
            *word &= (1u64 << (n - lo)) - 1;
        }
    }
    let mut found = None;
    for _ in 0..k {
        let top = b.last_set()?;
        b.words[(top / 64) as usize] &= !(1u64 << (top % 64));
        found = Some(top);
    }
    found
}

/// `min(w, MAX_WINDOW_SEGMENTS)`: the App. D `wnd_size_out` clamp.
pub(crate) fn clamp_wnd(w: u64) -> u32 {
    w.min(MAX_WINDOW_SEGMENTS as u64) as u32
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Driving a module through a real engine in tests.
    use super::super::engine::{EngineParams, TonicEngine};
    use super::super::module::{IncomingPkt, TonicModule};
    use super::super::{FlowId, Nanos, SegId, TxSegment};

    /// An engine with one flow (id 0, MSS 1000) holding `segments` segments of data.
    pub fn engine(m: Box<dyn TonicModule>, segments: u64) -> TonicEngine {
        engine_with(m, segments, EngineParams::default())
    }

    /// [`engine`] with engine parameters `p`.
    pub fn engine_with(m: Box<dyn TonicModule>, segments: u64, p: EngineParams) -> TonicEngine {
        let mut e = TonicEngine::new(m, p).unwrap();
        e.add_flow(0, 1000, 0).unwrap();
        e.update_tail(0, segments * 1000).unwrap();
        e
    }

    /// All segments the engine sends at `now` (until it stops).
    pub fn drain(e: &mut TonicEngine, now: Nanos) -> Vec<TxSegment> {
        std::iter::from_fn(|| e.next_segment(now))
            .take(10_000)
            .collect()
    }

    /// Segment ids of `drain`.
    pub fn drain_ids(e: &mut TonicEngine, now: Nanos) -> Vec<SegId> {
        drain(e, now).iter().map(|t| t.seg).collect()
    }

    /// Feeds a cumulative ack of `cum` to flow `f`.
    pub fn ack(e: &mut TonicEngine, f: FlowId, cum: SegId, now: Nanos) {
        e.incoming(f, &IncomingPkt::ack(cum), now).unwrap();
    }
}
