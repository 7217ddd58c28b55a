//! The data delivery engine (Tonic §3.2, Tab. 2, App. C): which segment a flow sends next.
//!
//! Per flow it keeps the state of Tonic Table 2 (the hot part in one compact record; a few
//! colder words, the user context and the three window bitmaps, rings of 64-bit words, in
//! one slab per flow: see `Layout`) and the **active set**: flows with at least one segment
//! to generate and fewer than N generated-but-untransmitted segments (§3.1). Its event
//! processors:
//!
//! - **Incoming** ([`DataDelivery::incoming`]): the fixed stage (cumulative ack →
//!   `wnd-start = max(wnd-start, C)` and the rings shifted, selective acks → `acked`, window
//!   enforcement inputs) then the module's stage, whose outputs are applied here;
//! - **Periodic Updates** ([`DataDelivery::periodic`]): a round-robin sweep over live flows
//!   checking retransmission timers and running the module's periodic hook;
//! - **Segment Generation** ([`DataDelivery::generate`]): the first segment marked for
//!   retransmission after the head (App. C) before `highest-sent + 1`;
//! - **Segment Transmitted** ([`DataDelivery::transmitted`]): `outstanding-cnt − 1`, and the
//!   retransmission timer starts if it is not running (it runs only while segments are on
//!   the wire).
//!
//! Sets are kept exact: after any event, a live flow is in the active set iff it can generate
//! ([`DataDelivery::can_generate`]). The credit-engine side of every event is returned to the
//! caller ([`CreditUpdate`]), which forwards it (§3.3.3: "the updated parameters are
//! forwarded to the credit engine").

mod generate;
pub(crate) use generate::Direct;
mod incoming;
mod view;

use super::module::{
    FlowView, HookOutput, IncomingInput, ModuleConfig, PeriodicInput, TonicModule,
};
use super::rrset::RrSet;
use super::{FlowId, Nanos, SegId, TonicError};
use crate::sys;
use view::{flip, GenView, ViewSrc};

/// How many flows ahead of the round-robin front to prefetch.
pub(crate) const PREFETCH_AHEAD: u32 = 4;
/// Engines with at least this many flows prefetch (the state of fewer, about 300 bytes a flow
/// in both engines, stays in a core's L2 cache, where prefetching only costs instructions).
pub(crate) const PREFETCH_MIN_FLOWS: u32 = 4096;

/// Flag: the flow exists.
const LIVE: u8 = 1 << 0;
/// Flag: the last available segment (`tail − 1`) is a small one not yet delivered.
const SMALL_PENDING: u8 = 1 << 1;
/// Flag: `acked` may have a set bit (clear: it is all zero). Likewise for the others. These
/// summary bits let the loss-free path skip the bitmaps entirely.
const A_ANY: u8 = 1 << 2;
const M_ANY: u8 = 1 << 3;
const X_ANY: u8 = 1 << 4;
/// Flag: the timer in `rtx_deadline` is the persist timer, not the retransmission timer:
/// nothing is in flight and the peer's window is shut (RFC 9293 §3.8.6.1). Its expiry asks
/// for a window probe instead of a timeout. Tonic has no persist timer; without one a lost
/// window update would stall the flow for good.
const PERSIST: u8 = 1 << 5;

/// The hot per-flow record (Table 2's scalars). 64 bytes: one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct DdFlow {
    wnd_start: SegId,
    next_new: SegId,
    tail: SegId,
    rtx_deadline: Nanos,
    rtx_amount: Nanos,
    /// Byte offset of segment s is `s · mss + byte_delta` (changes when a small segment is
    /// delivered and segmentation restarts, §5).
    byte_delta: i64,
    wnd_size: u32,
    rcv_wnd: u32,
    mss: u32,
    outstanding: u8,
    flags: u8,
    small_len: u16,
}

/// The per-flow words kept at the start of a flow's slab (see [`Layout`]).
#[derive(Clone, Copy)]
enum Cold {
    /// Segments transmitted (retransmissions included).
    TotalSent = 0,
    /// The module's rate, bits/s.
    RateBps = 1,
    /// Bytes the host made available (`tonic-tail`).
    TailBytes = 2,
}

/// Number of [`Cold`] words.
const COLD_WORDS: usize = 3;

/// Where a flow's variable-size state lies in the engine's slab: per flow, `stride` words
/// holding the three [`Cold`] words, then the user context, then the three window bitmaps
/// (`acked`, `marked-for-rtx`, `rtx-cnt`, `words` each, from word `bits`). The stride is a
/// whole number of cache lines and `base` aligns the first slab to a line, so a flow's slab
/// spans the fewest lines (two for the TCP modules with 128-segment windows): with a million
/// flows touched in no memory order, each line is a cache miss. What every decision touches
/// (the cold words and a small user context) comes first, at fixed offsets, in the first
/// line; the bitmaps, read only after losses, come last.
#[derive(Clone, Copy, Debug)]
struct Layout {
    base: usize,
    stride: usize,
    words: usize,
    /// Offset of the bitmaps in a slab: `COLD_WORDS` + the user context's words.
    bits: usize,
}

impl Layout {
    const LINE_WORDS: usize = 8;

    /// The first word of `f`'s slab.
    #[inline(always)]
    fn slab_at(&self, f: FlowId) -> usize {
        self.base + f as usize * self.stride
    }

    #[inline(always)]
    fn bits_at(&self, f: FlowId) -> usize {
        self.slab_at(f) + self.bits
    }

    #[inline(always)]
    fn cold_at(&self, f: FlowId, c: Cold) -> usize {
        self.slab_at(f) + c as usize
    }

    #[inline(always)]
    fn ctx_at(&self, f: FlowId) -> usize {
        self.slab_at(f) + COLD_WORDS
    }
}

/// A flow's slab (`stride` words) split into its cold words and the rest (user context, then
/// bitmaps).
#[inline(always)]
fn split_slab(s: &[u64]) -> (&[u64; COLD_WORDS], &[u64]) {
    s.split_first_chunk()
        .expect("a slab holds at least the cold words")
}

/// [`split_slab`], mutable.
#[inline(always)]
fn split_slab_mut(s: &mut [u64]) -> (&mut [u64; COLD_WORDS], &mut [u64]) {
    s.split_first_chunk_mut()
        .expect("a slab holds at least the cold words")
}

/// Hints the CPU to fetch what a decision reads of flow `f`: its hot record, its slab and
/// its active-set membership word.
#[inline(always)]
fn prefetch_flow(flows: &[DdFlow], slab: &[u64], lay: &Layout, active: &RrSet, f: FlowId) {
    if let Some(r) = flows.get(f as usize) {
        sys::prefetch((r as *const DdFlow).cast());
    }
    let at = lay.slab_at(f);
    for w in (at..at + lay.stride).step_by(Layout::LINE_WORDS) {
        if let Some(b) = slab.get(w) {
            sys::prefetch((b as *const u64).cast());
        }
    }
    active.prefetch_member(f);
}

/// A segment address the data delivery engine generated (§3.1 step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The flow.
    pub flow: FlowId,
    /// The segment.
    pub seg: SegId,
    /// A retransmission (from `marked-for-rtx`) rather than `highest-sent + 1`.
    pub rtx: bool,
    /// Its length in bytes.
    pub len: u32,
}

/// Parameter changes for the credit engine produced by a hook (§3.3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreditUpdate {
    /// New rate in bits per second.
    pub rate_bps: Option<u64>,
    /// Bytes of credit to add.
    pub add_credit: u32,
    /// New network priority of the flow's packets ([`HookOutput::OUT_PRIORITY`]).
    pub priority: Option<u8>,
}

/// What an incoming packet did, for the host and the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncomingReport {
    /// Segments newly acknowledged (cumulatively or selectively).
    pub newly_acked: u32,
    /// `wnd-start` after the packet (module updates included).
    pub wnd_start: SegId,
    /// Every byte below this offset is cumulatively acknowledged: the host may free its
    /// send buffer up to here (the delivery notification of §5).
    pub acked_bytes: u64,
    /// The final small segment was delivered: the host may resume segmentation (§5).
    pub small_delivered: bool,
    /// Credit-engine side of the module's outputs.
    pub credit: CreditUpdate,
}

/// Result of one Periodic Updates visit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodicVisit {
    /// The flow visited.
    pub flow: FlowId,
    /// Its retransmission timer had expired.
    pub timeout: bool,
    /// Its persist timer had expired: the peer's window is shut and nothing is in flight, so
    /// the caller should send a window probe (the timer runs again).
    pub probe: bool,
    /// The module's hook ran.
    pub hook_ran: bool,
    /// Credit-engine side of the module's outputs.
    pub credit: CreditUpdate,
}

/// Sizes of a data delivery engine.
#[derive(Clone, Copy, Debug)]
pub struct DdParams {
    /// Flow ids are `[0, max_flows)`.
    pub max_flows: u32,
    /// Bits per window bitmap: 64, 128 or 256.
    pub window: u32,
    /// N: generated-but-untransmitted segments allowed per flow (the credit engine's ring).
    pub ring_depth: u32,
}

/// The data delivery engine. See the module documentation.
pub struct DataDelivery {
    p: DdParams,
    cfg: ModuleConfig,
    ctx_words: usize,
    flows: Vec<DdFlow>,
    /// Per flow: bitmaps, cold words and user context, laid out by `lay`.
    slab: Vec<u64>,
    lay: Layout,
    active: RrSet,
    /// Live flows, densely, for the Periodic Updates sweep; `live_pos[f]` is f's index.
    live: Vec<FlowId>,
    live_pos: Vec<u32>,
    sweep: usize,
    /// Prefetch upcoming flows' state (only worth it when it does not fit in cache).
    prefetching: bool,
    /// Reused Incoming hook input; `scratch_zeroed`: its bitmaps are all zero;
    /// `scratch_ack`: its packet is `IncomingPkt::ack` but for the ack and the grant.
    scratch: Box<IncomingInput>,
    scratch_zeroed: bool,
    scratch_ack: bool,
    /// The module may decide new acks on the Incoming hook's fast path
    /// (`TonicModule::has_new_ack_fast_path`).
    new_ack_fast_path: bool,
}

/// Which of a flow's three bitmaps.
#[derive(Clone, Copy)]
enum Bm {
    Acked = 0,
    Marked = 1,
    Rtx = 2,
}

impl DataDelivery {
    /// An engine for the module configuration `cfg` (already validated).
    pub fn new(p: DdParams, cfg: ModuleConfig) -> Result<Self, TonicError> {
        if !matches!(p.window, 64 | 128 | 256) {
            return Err(TonicError::InvalidParam(format!(
                "window bitmap size {} must be 64, 128 or 256 segments",
                p.window
            )));
        }
        if p.max_flows == 0 || p.max_flows > RrSet::MAX_CAPACITY >> 1 {
            return Err(TonicError::InvalidParam(format!(
                "max_flows {} out of range",
                p.max_flows
            )));
        }
        let words = (p.window / 64) as usize;
        let ctx_words = cfg.user_ctx_words();
        let n = p.max_flows as usize;
        let stride = (COLD_WORDS + ctx_words + 3 * words).next_multiple_of(Layout::LINE_WORDS);
        let slab = sys::huge_vec(n * stride + Layout::LINE_WORDS - 1, 0u64);
        let start = slab.as_ptr() as usize;
        let lay = Layout {
            base: (start.next_multiple_of(64) - start) / 8,
            stride,
            words,
            bits: COLD_WORDS + ctx_words,
        };
        Ok(DataDelivery {
            p,
            cfg,
            ctx_words,
            flows: sys::huge_vec(n, DdFlow::default()),
            slab,
            lay,
            active: RrSet::new(p.max_flows),
            live: Vec::new(),
            live_pos: sys::huge_vec(n, u32::MAX),
            sweep: 0,
            prefetching: p.max_flows >= PREFETCH_MIN_FLOWS,
            scratch: Box::default(),
            scratch_zeroed: true,
            scratch_ack: false,
            new_ack_fast_path: false,
        })
    }

    /// Whether this engine prefetches (it holds many flows).
    #[inline]
    pub fn prefetching(&self) -> bool {
        self.prefetching
    }

    /// Whether the engine tries the module's Incoming fast path
    /// (`TonicModule::incoming_new_ack`) on new acks; set from
    /// `TonicModule::has_new_ack_fast_path` when the engine is built.
    pub(crate) fn set_new_ack_fast_path(&mut self, on: bool) {
        self.new_ack_fast_path = on;
    }

    /// Hints the CPU to fetch `f`'s hot record and bitmaps (round robin knows which flows
    /// come next; with many flows their state is not in cache).
    #[inline(always)]
    pub fn prefetch(&self, f: FlowId) {
        prefetch_flow(&self.flows, &self.slab, &self.lay, &self.active, f);
    }

    /// The active flow Segment Generation serves `k` steps from now, if nothing changes (see
    /// [`RrSet::ahead`]).
    #[inline]
    pub fn active_ahead(&self, k: u32) -> Option<FlowId> {
        self.active.ahead(k)
    }

    /// The engine's sizes.
    pub fn params(&self) -> DdParams {
        self.p
    }

    /// Number of live flows.
    pub fn live_flows(&self) -> usize {
        self.live.len()
    }

    /// The active set (§3.1).
    pub fn active_set(&self) -> &RrSet {
        &self.active
    }

    /// Whether `f` exists.
    #[inline]
    pub fn is_live(&self, f: FlowId) -> bool {
        (f as usize) < self.flows.len() && self.flows[f as usize].flags & LIVE != 0
    }

    #[inline]
    fn check(&self, f: FlowId) -> Result<(), TonicError> {
        if (f as usize) >= self.flows.len() {
            return Err(TonicError::FlowOutOfRange(f, self.p.max_flows));
        }
        if !self.is_live(f) {
            return Err(TonicError::NoSuchFlow(f));
        }
        Ok(())
    }

    #[inline]
    fn bm(&self, f: FlowId, b: Bm) -> &[u64] {
        let w = self.lay.words;
        let o = self.lay.bits_at(f) + b as usize * w;
        &self.slab[o..o + w]
    }

    /// All three bitmaps of `f`: (acked, marked, rtx).
    #[inline]
    fn bms_mut(&mut self, f: FlowId) -> (&mut [u64], &mut [u64], &mut [u64]) {
        let o = self.lay.bits_at(f);
        let w = self.lay.words;
        let (a, rest) = self.slab[o..o + 3 * w].split_at_mut(w);
        let (m, r) = rest.split_at_mut(w);
        (a, m, r)
    }

    /// The user context of `f`.
    pub fn ctx(&self, f: FlowId) -> &[u64] {
        let o = self.lay.ctx_at(f);
        &self.slab[o..o + self.ctx_words]
    }

    /// One of `f`'s cold words.
    #[inline(always)]
    fn cold(&self, f: FlowId, c: Cold) -> u64 {
        self.slab[self.lay.cold_at(f, c)]
    }

    #[inline(always)]
    fn cold_mut(&mut self, f: FlowId, c: Cold) -> &mut u64 {
        &mut self.slab[self.lay.cold_at(f, c)]
    }

    /// Overwrites the user context of `f` (tests).
    #[cfg(test)]
    pub(crate) fn set_ctx(&mut self, f: FlowId, words: &[u64]) {
        self.ctx_mut(f).copy_from_slice(words);
    }

    fn ctx_mut(&mut self, f: FlowId) -> &mut [u64] {
        let o = self.lay.ctx_at(f);
        &mut self.slab[o..o + self.ctx_words]
    }

    #[inline]
    fn pos(&self, s: SegId) -> u32 {
        (s & (self.p.window as u64 - 1)) as u32
    }

    /// The window a new segment must stay within: min(wnd-size, rcv_wnd, bitmap size).
    #[inline(always)]
    fn eff_wnd(&self, r: &DdFlow) -> u64 {
        r.wnd_size.min(r.rcv_wnd).min(self.p.window) as u64
    }

    /// Offset from `wnd-start` of the first segment marked for retransmission (App. C's
    /// find-first-set after the head), if any.
    #[inline(always)]
    fn first_marked(&self, f: FlowId, r: &DdFlow) -> Option<u32> {
        self.gen_view().first_marked(f, r)
    }

    /// Whether `f` may generate a segment now: live, fewer than N outstanding, and either a
    /// segment marked for retransmission or new data, inside the window (§3.1, §3.2.3). In
    /// the window scheme "the flow cannot send bytes beyond i+W" (§3.3.1), retransmissions
    /// included. This is the active-set membership predicate.
    #[inline(always)]
    pub fn can_generate(&self, f: FlowId) -> bool {
        self.gen_view().can_generate(f, &self.flows[f as usize])
    }

    #[inline(always)]
    fn gen_view(&self) -> GenView<'_> {
        GenView {
            p: &self.p,
            lay: &self.lay,
            slab: &self.slab,
        }
    }

    /// Puts `f` in or out of the active set according to [`can_generate`](Self::can_generate).
    #[inline(always)]
    fn refresh(&mut self, f: FlowId) {
        // The same as push_back / remove, with the set operations out of line: usually the
        // membership is already right.
        if self.can_generate(f) != self.active.contains(f) {
            self.flip(f);
        }
    }

    /// Moves `f` into the active set if it is not a member, out of it if it is.
    #[inline(never)]
    fn flip(&mut self, f: FlowId) {
        flip(&mut self.active, f);
    }

    /// Adds flow `f` with segment size `mss` (the connection parameters of §2.1, §5) and
    /// initializes its user context through the module.
    pub fn add_flow<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        f: FlowId,
        mss: u32,
        now: Nanos,
    ) -> Result<(), TonicError> {
        if (f as usize) >= self.flows.len() {
            return Err(TonicError::FlowOutOfRange(f, self.p.max_flows));
        }
        if self.is_live(f) {
            return Err(TonicError::FlowExists(f));
        }
        if mss == 0 || mss > u16::MAX as u32 {
            return Err(TonicError::InvalidParam(format!(
                "flow {f}: mss {mss} must be in 1..=65535"
            )));
        }
        self.flows[f as usize] = DdFlow {
            rtx_amount: self.cfg.init_rtx_timer_ns,
            wnd_size: self.cfg.init_wnd_size,
            rcv_wnd: u32::MAX,
            mss,
            flags: LIVE,
            ..Default::default()
        };
        let o = self.lay.slab_at(f);
        self.slab[o..o + self.lay.stride].fill(0);
        *self.cold_mut(f, Cold::RateBps) = self.cfg.init_rate_bps;
        let view = self.view(f);
        if let Some(w) = module.init_wnd_size(&view) {
            self.flows[f as usize].wnd_size = w;
        }
        module.init_flow(now, &view, self.ctx_mut(f));
        self.live_pos[f as usize] = self.live.len() as u32;
        self.live.push(f);
        Ok(())
    }

    /// Removes flow `f` (connection closed, §2.1).
    pub fn remove_flow(&mut self, f: FlowId) -> Result<(), TonicError> {
        self.check(f)?;
        self.active.remove(f);
        self.flows[f as usize].flags = 0;
        let i = self.live_pos[f as usize] as usize;
        self.live.swap_remove(i);
        if let Some(&moved) = self.live.get(i) {
            self.live_pos[moved as usize] = i as u32;
        }
        self.live_pos[f as usize] = u32::MAX;
        Ok(())
    }

    /// The host made data available up to byte `tail_bytes` of the flow (`tonic-tail`, §5).
    ///
    /// Bytes beyond the previous tail become full segments, and a remainder shorter than the
    /// MSS becomes one final *small* segment. Until that small segment is delivered the tail
    /// cannot move ([`TonicError::SmallSegmentPending`]): "Tonic requires all segments, except
    /// for the last one in a burst, to be of equal size" (§5).
    pub fn update_tail(&mut self, f: FlowId, tail_bytes: u64) -> Result<(), TonicError> {
        self.check(f)?;
        let (cold_tail, r) = (self.cold(f, Cold::TailBytes), self.flows[f as usize]);
        if tail_bytes == cold_tail {
            return Ok(());
        }
        if r.flags & SMALL_PENDING != 0 {
            return Err(TonicError::SmallSegmentPending(f));
        }
        if tail_bytes < cold_tail {
            return Err(TonicError::TailBackwards {
                flow: f,
                old: cold_tail,
                new: tail_bytes,
            });
        }
        let add = tail_bytes - cold_tail;
        let mss = r.mss as u64;
        let rec = &mut self.flows[f as usize];
        rec.tail += add / mss;
        let rem = add % mss;
        if rem > 0 {
            rec.tail += 1;
            rec.small_len = rem as u16;
            rec.flags |= SMALL_PENDING;
        }
        *self.cold_mut(f, Cold::TailBytes) = tail_bytes;
        self.refresh(f);
        Ok(())
    }

    /// The byte offset of segment `s` of `f`.
    #[inline]
    pub fn offset_of(&self, f: FlowId, s: SegId) -> u64 {
        let r = &self.flows[f as usize];
        (s as i64 * r.mss as i64 + r.byte_delta) as u64
    }

    /// The segment boundary at or below (`round_up`: at or above) byte `byte` of `f`'s
    /// stream, for turning byte-based acks (TCP's ack number and SACK edges) into segment
    /// ids: a cumulative ack of byte X acknowledges the segments below `byte_to_seg(X,
    /// false)`, a SACK block `[L, R)` covers `[byte_to_seg(L, true), byte_to_seg(R, false))`.
    /// Exact for bytes at or after `wnd-start` (older bytes map to `wnd-start` or below);
    /// `tail_bytes` maps to `tail`.
    pub fn byte_to_seg(&self, f: FlowId, byte: u64, round_up: bool) -> SegId {
        let r = &self.flows[f as usize];
        let tail_bytes = self.cold(f, Cold::TailBytes);
        if byte >= tail_bytes {
            return r.tail;
        }
        let rel = byte as i64 - r.byte_delta;
        if rel <= 0 {
            return 0;
        }
        let mss = r.mss as u64;
        let rel = rel as u64;
        let s = if round_up {
            rel.div_ceil(mss)
        } else {
            rel / mss
        };
        s.min(r.tail)
    }

    /// The module's view of `f` (Table 2 with window-relative bitmaps).
    #[inline(always)]
    pub fn view(&self, f: FlowId) -> FlowView {
        let mut v = FlowView::default();
        let o = self.lay.slab_at(f);
        let (cold, rest) = split_slab(&self.slab[o..o + self.lay.stride]);
        ViewSrc {
            r: &self.flows[f as usize],
            cold,
            bits: &rest[self.ctx_words..],
            words: self.lay.words,
            window: self.p.window,
        }
        .fill(&mut v, true);
        v
    }

    /// The flow the next Periodic Updates visit will examine.
    pub fn sweep_peek(&self) -> Option<FlowId> {
        if self.live.is_empty() {
            return None;
        }
        Some(
            self.live[if self.sweep >= self.live.len() {
                0
            } else {
                self.sweep
            }],
        )
    }

    /// Moves the sweep past the flow [`sweep_peek`](Self::sweep_peek) returns.
    fn sweep_next(&mut self) -> Option<FlowId> {
        if self.live.is_empty() {
            return None;
        }
        if self.sweep >= self.live.len() {
            self.sweep = 0;
        }
        let f = self.live[self.sweep];
        self.sweep += 1;
        Some(f)
    }

    /// Moves the Periodic Updates sweep past up to `max` flows that need no hook call (timer
    /// not expired, and the module does not ask for every visit), stopping before the first
    /// one that does; returns how many it passed. Equivalent to that many
    /// [`periodic`](Self::periodic) visits, without building their inputs.
    #[inline]
    pub fn sweep_skip_quiet(&mut self, now: Nanos, max: u32) -> u32 {
        if self.cfg.periodic_every_visit || self.live.is_empty() {
            return 0;
        }
        let len = self.live.len();
        let (mut n, mut sweep) = (0, self.sweep);
        while n < max {
            if sweep >= len {
                sweep = 0;
            }
            // The flows up to the end of `live` or of the budget, whichever comes first.
            let end = len.min(sweep + (max - n) as usize);
            let due = self.live[sweep..end].iter().position(|&f| {
                let d = self.flows[f as usize].rtx_deadline;
                d != 0 && now >= d
            });
            if let Some(k) = due {
                sweep += k;
                n += k as u32;
                break;
            }
            n += (end - sweep) as u32;
            sweep = end;
        }
        self.sweep = sweep;
        n
    }

    /// One Periodic Updates visit (§3.2.3): the next live flow in sweep order; its timeout is
    /// checked and, if it expired (or the module asks for every visit), the module's periodic
    /// hook runs and its outputs are applied.
    pub fn periodic<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        now: Nanos,
    ) -> Option<PeriodicVisit> {
        let f = self.sweep_next()?;
        let rec = &mut self.flows[f as usize];
        let d = rec.rtx_deadline;
        let mut expired = d != 0 && now >= d;
        let probe = expired && rec.flags & PERSIST != 0;
        if probe {
            // Not a loss: no module timeout; the timer runs again for the next probe.
            rec.rtx_deadline = now + rec.rtx_amount;
            expired = false;
        }
        let mut visit = PeriodicVisit {
            flow: f,
            timeout: expired,
            probe,
            ..Default::default()
        };
        if !expired && !self.cfg.periodic_every_visit {
            return Some(visit);
        }
        if expired {
            self.flows[f as usize].rtx_deadline = 0;
        }
        let (input, mut out) = (self.periodic_input(f, now, expired), HookOutput::default());
        module.periodic(&input, self.ctx_mut(f), &mut out);
        visit.hook_ran = true;
        visit.credit = self.apply(f, &out, now);
        Some(visit)
    }

    fn periodic_input(&self, f: FlowId, now: Nanos, expired: bool) -> PeriodicInput {
        PeriodicInput {
            now,
            timeout_expired: expired,
            flow: self.view(f),
        }
    }

    /// `wnd-start` of `f` (to rebuild full segment ids from ring entries).
    #[inline]
    pub fn wnd_start(&self, f: FlowId) -> SegId {
        self.flows[f as usize].wnd_start
    }

    /// `outstanding-cnt` of `f`.
    pub fn outstanding(&self, f: FlowId) -> u32 {
        self.flows[f as usize].outstanding as u32
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// Every flow's slab starts on a cache line, spans whole lines, and its bitmaps, cold
    /// words and user context neither overlap each other nor another flow's.
    #[test]
    fn slabs_are_line_aligned_and_disjoint() {
        for (window, ctx_bytes) in [(64, 8), (128, 32), (128, 56), (256, 56)] {
            let cfg = ModuleConfig {
                user_ctx_bytes: ctx_bytes,
                ..ModuleConfig::default()
            };
            let p = DdParams {
                max_flows: 5,
                window,
                ring_depth: 4,
            };
            let mut dd = DataDelivery::new(p, cfg).unwrap();
            assert_eq!(dd.lay.stride % Layout::LINE_WORDS, 0);
            let first = dd.slab[dd.lay.slab_at(0)..].as_ptr() as usize;
            assert_eq!(first % 64, 0, "window {window}, ctx {ctx_bytes} B");
            let words = dd.lay.words;
            for f in 0..5u32 {
                let v = |k: u64| (f as u64) << 32 | k;
                let (a, m, r) = dd.bms_mut(f);
                a.fill(v(1));
                m.fill(v(2));
                r.fill(v(3));
                *dd.cold_mut(f, Cold::TotalSent) = v(4);
                *dd.cold_mut(f, Cold::RateBps) = v(5);
                *dd.cold_mut(f, Cold::TailBytes) = v(6);
                let n = dd.ctx_words;
                dd.set_ctx(f, &vec![v(7); n]);
            }
            for f in 0..5u32 {
                let v = |k: u64| (f as u64) << 32 | k;
                assert_eq!(dd.bm(f, Bm::Acked), vec![v(1); words]);
                assert_eq!(dd.bm(f, Bm::Marked), vec![v(2); words]);
                assert_eq!(dd.bm(f, Bm::Rtx), vec![v(3); words]);
                assert_eq!(dd.cold(f, Cold::TotalSent), v(4));
                assert_eq!(dd.cold(f, Cold::RateBps), v(5));
                assert_eq!(dd.cold(f, Cold::TailBytes), v(6));
                assert!(dd.ctx(f).iter().all(|&x| x == v(7)));
            }
        }
    }
}
