//! The Tonic engine a NIC lcore drives: the data delivery engine and the credit engine wired
//! together with a protocol module (Tonic §3.1 steps 1–9, Fig. 2).
//!
//! Sans-I/O: every entry point takes flow ids, segment numbers and an explicit `now`; nothing here
//! reads a clock, touches DPDK or spawns threads. A NIC lcore uses it like this, once per poll-loop
//! iteration:
//!
//! 1. host messages: [`add_flow`](TonicEngine::add_flow), [`update_tail`](TonicEngine::update_tail)
//!    (`tonic-tail`: new data up to byte X), [`remove_flow`](TonicEngine::remove_flow);
//! 2. parsed control packets (ACK / SACK / NACK / CNP / grant):
//!    [`incoming`](TonicEngine::incoming), whose [`IncomingReport`] carries the delivery
//!    notification for the host (`acked_bytes`: free the send buffer up to here; small segment
//!    delivered);
//! 3. timers: [`periodic`](TonicEngine::periodic) (retransmission timeouts, module timers, rate
//!    timers);
//! 4. transmit: [`next_segment`](TonicEngine::next_segment) as often as the tx burst allows;
//!    each call is one scheduling decision: which flow sends, and which segment (index, byte
//!    offset, length, retransmission or new). The segment is reported transmitted to the data
//!    delivery engine inside the call (step 9). [`generate_step`](TonicEngine::generate_step),
//!    [`transmit_step`](TonicEngine::transmit_step) and
//!    [`segment_transmitted`](TonicEngine::segment_transmitted) expose the halves separately.
//!
//! Events processed through these calls are serialized, so §3.4's conflict rules become
//! ordering rules (an ack processed before the periodic sweep resets the timer, so the
//! timeout does not fire). [`cycle`](TonicEngine::cycle) instead models one hardware cycle
//! (≤ 1 incoming event, 1 periodic visit, 1 generation, 1 transmission) with the merge rules.

use std::collections::VecDeque;

use super::credit::{CeParams, CreditEngine, Sent};
use super::dd::{
    CreditUpdate, DataDelivery, DdParams, Direct, Generated, IncomingReport, PREFETCH_AHEAD,
};
use super::module::{
    CreditScheme, FlowView, IncomingPkt, ModuleConfig, TonicModule, DEFAULT_WINDOW_SEGMENTS,
};
use super::{FlowId, Nanos, SegId, TonicError};

/// Sizes of an engine (the parts of Tonic's configuration that are not the module's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineParams {
    /// Flow ids are `[0, max_flows)` (Tonic: 1024 by default, 2048 at most; here any).
    pub max_flows: u32,
    /// Window bitmap size in segments: 64, 128 (default) or 256 (Tab. 4).
    pub window_segments: u32,
    /// N: generated-but-untransmitted segment addresses per flow (§3.1), 1..=8.
    pub ring_depth: u32,
    /// Rate timers have slots of `2^timer_shift` ns (default 6: 64 ns).
    pub timer_shift: u32,
    /// The rate-timer wheel has `2^timer_slots_log2` slots (default 12).
    pub timer_slots_log2: u32,
}

impl Default for EngineParams {
    fn default() -> Self {
        EngineParams {
            max_flows: 1024,
            window_segments: DEFAULT_WINDOW_SEGMENTS,
            ring_depth: 4,
            timer_shift: 6,
            timer_slots_log2: 12,
        }
    }
}

/// One scheduling decision: the segment to transmit now (§3.1 step 7's output, the address a
/// DMA pipeline would fetch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSegment {
    /// The flow.
    pub flow: FlowId,
    /// The segment index.
    pub seg: SegId,
    /// Its byte offset in the flow's stream (from the flow's first byte).
    pub offset: u64,
    /// Its length in bytes (the MSS, or less for a final small segment).
    pub len: u32,
    /// A retransmission.
    pub rtx: bool,
    /// Network priority to stamp on the packet, 0 (lowest) to 7 (the flow's current one:
    /// [`ModuleConfig::init_priority`], then what its module set with
    /// [`HookOutput::OUT_PRIORITY`](super::module::HookOutput::OUT_PRIORITY)).
    pub priority: u8,
}

/// A plain cumulative acknowledgment for [`TonicEngine::incoming_acks`]: the packet
/// [`Ack::pkt`] for `flow` (an ACK with neither selective blocks nor a receiver window, as
/// most control packets of a backlogged TCP-style flow are).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// The flow.
    pub flow: FlowId,
    /// The cumulative ack: every segment below it is acknowledged (Tonic App. D
    /// `cumulative_ack`).
    pub cumulative_ack: SegId,
    /// Grant tokens in bytes carried with it (grant scheme, §3.3.2; 0 for none).
    pub grant_bytes: u32,
}

impl Ack {
    /// The packet this ack stands for: [`IncomingPkt::ack`] with [`grant_bytes`](Self::grant_bytes).
    pub fn pkt(&self) -> IncomingPkt {
        IncomingPkt {
            grant_bytes: self.grant_bytes,
            ..IncomingPkt::ack(self.cumulative_ack)
        }
    }
}

/// What one [`TonicEngine::periodic`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodicReport {
    /// Flows visited by the sweep.
    pub visited: u32,
    /// Retransmission timeouts among them.
    pub timeouts: u32,
    /// Rate timers that fired.
    pub rate_timers: u32,
    /// Persist timers that fired (window probes queued, see [`TonicEngine::pop_probe`]).
    pub probes: u32,
}

/// What one [`TonicEngine::cycle`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CycleReport {
    /// The incoming event's result, if there was one.
    pub incoming: Option<IncomingReport>,
    /// The flow the periodic sweep visited.
    pub periodic_flow: Option<FlowId>,
    /// Its retransmission timeout was handled.
    pub timeout: bool,
    /// Its expired timeout was discarded because an incoming event hit the same flow (§3.4).
    pub timeout_discarded: bool,
    /// The segment generated this cycle (flow, segment).
    pub generated: Option<(FlowId, SegId)>,
    /// The segment transmitted this cycle.
    pub tx: Option<TxSegment>,
}

/// Counters (the statistics interface §5 proposes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Segment addresses generated.
    pub generated: u64,
    /// Segments transmitted (scheduling decisions that produced a segment).
    pub transmitted: u64,
    /// Of which retransmissions.
    pub retransmitted: u64,
    /// Transmitted segments that were already acknowledged when their turn came.
    pub stale: u64,
    /// Incoming packets processed.
    pub incoming: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Timeouts discarded by the same-cycle merge rule.
    pub timeouts_discarded: u64,
    /// Rate timers fired.
    pub rate_timers: u64,
    /// Persist timers fired: window probes asked for (peer's window shut, nothing in flight).
    pub probes: u64,
    /// Addresses dropped unsent from a ring when the flow's final small segment was
    /// delivered (they named segments of the old segmentation, all acknowledged; §5).
    pub voided: u64,
}

/// A Tonic sender: the fixed data delivery and credit engines plus a protocol module `M`
/// (`dyn TonicModule` by default, so a registry or a loaded library can supply it).
pub struct TonicEngine<M: TonicModule + ?Sized = dyn TonicModule> {
    module: Box<M>,
    cfg: ModuleConfig,
    params: EngineParams,
    dd: DataDelivery,
    ce: CreditEngine,
    stats: EngineStats,
    /// When [`transmit_step`](Self::transmit_step) last transmitted (for
    /// [`segment_transmitted`](Self::segment_transmitted)).
    last_tx: Nanos,
    /// Flows whose persist timer fired, waiting for the caller to send a window probe
    /// (at most `max_flows` entries; a flow's timer fires again if its probe was lost).
    probes: VecDeque<FlowId>,
    /// Each flow's current network priority (one byte per flow id).
    prio: Vec<u8>,
}

impl<M: TonicModule + ?Sized> TonicEngine<M> {
    /// An engine running `module`; its configuration is validated (Tab. 4 state limit, etc.).
    pub fn new(module: Box<M>, params: EngineParams) -> Result<Self, TonicError> {
        let cfg = module.config();
        cfg.validate(module.name())?;
        let mut dd = DataDelivery::new(
            DdParams {
                max_flows: params.max_flows,
                window: params.window_segments,
                ring_depth: params.ring_depth,
            },
            cfg,
        )?;
        dd.set_new_ack_fast_path(module.has_new_ack_fast_path());
        let ce = CreditEngine::new(
            CeParams {
                max_flows: params.max_flows,
                ring_depth: params.ring_depth,
                timer_shift: params.timer_shift,
                timer_slots_log2: params.timer_slots_log2,
            },
            cfg.credit_scheme,
            cfg.max_burst_bytes,
            cfg.init_credit_bytes,
            cfg.init_rate_bps,
        )?;
        Ok(TonicEngine {
            module,
            cfg,
            params,
            dd,
            ce,
            stats: EngineStats::default(),
            last_tx: 0,
            probes: VecDeque::new(),
            prio: vec![cfg.init_priority; params.max_flows as usize],
        })
    }

    /// The module.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The module's configuration.
    pub fn config(&self) -> &ModuleConfig {
        &self.cfg
    }

    /// The engine's sizes.
    pub fn params(&self) -> &EngineParams {
        &self.params
    }

    /// The next flow that needs a window probe: its persist timer fired while the peer's
    /// window was shut and nothing was in flight (RFC 9293 §3.8.6.1). The caller sends the
    /// peer a segment that makes it answer with its current window (for TCP, an ACK with
    /// sequence number `snd.una − 1` and no data); the answer, through
    /// [`incoming`](Self::incoming), reopens the flow.
    pub fn pop_probe(&mut self) -> Option<FlowId> {
        self.probes.pop_front()
    }

    fn note_probe(&mut self, f: FlowId) {
        self.stats.probes += 1;
        if self.probes.len() < self.params.max_flows as usize {
            self.probes.push_back(f);
        }
    }

    /// The counters.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// The data delivery engine (read-only: sets, state).
    pub fn dd(&self) -> &DataDelivery {
        &self.dd
    }

    /// The credit engine (read-only: rings, credit, ready set).
    pub fn ce(&self) -> &CreditEngine {
        &self.ce
    }

    /// Adds flow `f` with segment size `mss` (a connection handed to Tonic, §2.1, §5).
    pub fn add_flow(&mut self, f: FlowId, mss: u32, now: Nanos) -> Result<(), TonicError> {
        self.dd.add_flow(&*self.module, f, mss, now)?;
        if let Err(e) = self.ce.add_flow(f, mss, now) {
            self.dd.remove_flow(f)?;
            return Err(e);
        }
        if let Some(p) = self.prio.get_mut(f as usize) {
            *p = self.cfg.init_priority;
        }
        Ok(())
    }

    /// Removes flow `f` (connection closed or handed back).
    pub fn remove_flow(&mut self, f: FlowId) -> Result<(), TonicError> {
        self.dd.remove_flow(f)?;
        self.ce.remove_flow(f);
        Ok(())
    }

    /// `tonic-tail`: the host has data for `f` up to byte `tail_bytes` (see
    /// [`DataDelivery::update_tail`] for the segmentation contract of §5).
    pub fn update_tail(&mut self, f: FlowId, tail_bytes: u64) -> Result<(), TonicError> {
        self.dd.update_tail(f, tail_bytes)
    }

    /// Segment boundary for byte `byte` of `f` (see [`DataDelivery::byte_to_seg`]): how a
    /// byte-stream transport (TCP) maps its ack numbers and SACK edges to segment ids.
    pub fn byte_to_seg(&self, f: FlowId, byte: u64, round_up: bool) -> Result<SegId, TonicError> {
        if !self.dd.is_live(f) {
            return Err(TonicError::NoSuchFlow(f));
        }
        Ok(self.dd.byte_to_seg(f, byte, round_up))
    }

    /// The module's view of `f`'s state (Table 2).
    pub fn flow_view(&self, f: FlowId) -> Result<FlowView, TonicError> {
        if !self.dd.is_live(f) {
            return Err(TonicError::NoSuchFlow(f));
        }
        Ok(self.dd.view(f))
    }

    #[inline]
    fn forward_credit(&mut self, f: FlowId, c: CreditUpdate, now: Nanos) {
        if let Some(bps) = c.rate_bps {
            self.ce.set_rate(f, bps, now);
        }
        if c.add_credit > 0 {
            self.ce.add_credit(f, c.add_credit, now);
        }
        if let (Some(p), Some(slot)) = (c.priority, self.prio.get_mut(f as usize)) {
            *slot = p;
        }
    }

    /// The network priority `f`'s packets go out with now (0 for an unknown flow).
    pub fn priority(&self, f: FlowId) -> u8 {
        self.prio.get(f as usize).copied().unwrap_or(0)
    }

    /// An incoming control packet for `f` (ACK / SACK / NACK / CNP / grant): the fixed Incoming
    /// stage, the module's stage, grant tokens to the credit engine (§3.3.2), parameter
    /// updates forwarded to it (§3.3.3).
    // Always inlined: the per-decision hot path (an ACK per decision); left to the
    // compiler's `#[inline]` it stopped being inlined once the priority bookkeeping grew
    // `forward_credit`, and cost 13% more instructions per decision.
    #[inline(always)]
    pub fn incoming(
        &mut self,
        f: FlowId,
        pkt: &IncomingPkt,
        now: Nanos,
    ) -> Result<IncomingReport, TonicError> {
        let rep = self.dd.incoming(&*self.module, f, pkt, now)?;
        self.after_incoming(f, pkt, &rep, now);
        Ok(rep)
    }

    #[inline(always)]
    fn after_incoming(&mut self, f: FlowId, pkt: &IncomingPkt, rep: &IncomingReport, now: Nanos) {
        self.stats.incoming += 1;
        if pkt.grant_bytes > 0 && self.cfg.credit_scheme == CreditScheme::Grant {
            self.ce.add_credit(f, pkt.grant_bytes, now);
        }
        self.forward_credit(f, rep.credit, now);
        if rep.small_delivered {
            self.void_ring(f);
        }
    }

    /// After `f`'s final small segment was delivered: every address still in its ring names
    /// an acknowledged segment (all are below `tail`, and `wnd-start` reached it), and
    /// segmentation restarts at the next byte (§5), so those ids no longer map to the bytes
    /// they were generated for. They are dropped unsent. Left in the ring, the next small
    /// segment would also change the length the credit engine charges for the stale small
    /// one at its head, breaking the ready-to-tx invariant (§3.1) in the grant and rate
    /// schemes.
    #[cold]
    fn void_ring(&mut self, f: FlowId) {
        let k = self.ce.clear_ring(f);
        self.dd.forget_queued(f, k);
        self.stats.voided += k as u64;
    }

    /// A burst of plain cumulative acks at `now` (a NIC's receive burst): for each `acks[i]`,
    /// in order, exactly what [`incoming`](Self::incoming) of [`Ack::pkt`] does (the fixed
    /// Incoming stage, the module's hook, grant tokens and parameter updates to the credit
    /// engine, §3.2.3, §3.3.2–3), and `report(i, result)` with its result. Cheaper than
    /// separate calls: no packet is built or copied into the hook's input, and the counters
    /// and the credit scheme are read once per burst.
    #[inline]
    pub fn incoming_acks(
        &mut self,
        acks: &[Ack],
        now: Nanos,
        mut report: impl FnMut(usize, Result<IncomingReport, TonicError>),
    ) {
        let grant = self.cfg.credit_scheme == CreditScheme::Grant;
        let mut done = 0u64;
        for (i, a) in acks.iter().enumerate() {
            let r =
                self.dd
                    .incoming_ack(&*self.module, a.flow, a.cumulative_ack, a.grant_bytes, now);
            if let Ok(rep) = &r {
                done += 1;
                if a.grant_bytes > 0 && grant {
                    self.ce.add_credit(a.flow, a.grant_bytes, now);
                }
                self.forward_credit(a.flow, rep.credit, now);
                if rep.small_delivered {
                    self.void_ring(a.flow);
                }
            }
            report(i, r);
        }
        self.stats.incoming += done;
    }

    /// Periodic Updates for up to `budget` flows of the sweep (§3.2.3: the hardware visits one
    /// flow per cycle; an lcore passes how many it can afford), plus the credit engine's rate
    /// timers.
    pub fn periodic(&mut self, now: Nanos, budget: u32) -> PeriodicReport {
        let mut rep = PeriodicReport::default();
        let mut left = budget.min(self.dd.live_flows() as u32);
        while left > 0 {
            let quiet = self.dd.sweep_skip_quiet(now, left);
            rep.visited += quiet;
            left -= quiet;
            if left == 0 {
                break;
            }
            let Some(v) = self.dd.periodic(&*self.module, now) else {
                break;
            };
            left -= 1;
            rep.visited += 1;
            if v.timeout {
                rep.timeouts += 1;
            }
            if v.probe {
                rep.probes += 1;
                self.note_probe(v.flow);
            }
            self.forward_credit(v.flow, v.credit, now);
        }
        rep.rate_timers = self.ce.advance_timers(now) as u32;
        self.stats.timeouts += rep.timeouts as u64;
        self.stats.rate_timers += rep.rate_timers as u64;
        rep
    }

    /// Segment Generation (§3.1 steps 1–5): one active flow generates one segment address,
    /// which enters its ring in the credit engine. Returns what was generated.
    #[inline]
    pub fn generate_step(&mut self, now: Nanos) -> Option<(FlowId, SegId)> {
        if self.dd.prefetching() {
            if let Some(n) = self.dd.active_ahead(PREFETCH_AHEAD) {
                self.prefetch_flow(n);
            }
        }
        let g = self.dd.generate()?;
        self.ce.enqueue(&g, now);
        self.stats.generated += 1;
        Some((g.flow, g.seg))
    }

    /// Hints the CPU to fetch the state of flow `f` in both engines: round robin knows which
    /// flows come next, and with many flows in no memory order each is a cache miss.
    #[inline(always)]
    fn prefetch_flow(&self, f: FlowId) {
        self.dd.prefetch(f);
        self.ce.prefetch(f);
    }

    /// Transmit (§3.1 steps 6–8): one ready flow sends the address at the head of its ring,
    /// after the rate timers due at `now` have fired (counted in
    /// [`EngineStats::rate_timers`]). The data delivery engine is *not* told yet: call
    /// [`segment_transmitted`](Self::segment_transmitted) (step 9).
    #[inline]
    pub fn transmit_step(&mut self, now: Nanos) -> Option<TxSegment> {
        self.stats.rate_timers += self.ce.advance_timers(now) as u64;
        if self.dd.prefetching() {
            if let Some(n) = self.ce.ready_ahead(PREFETCH_AHEAD) {
                self.prefetch_flow(n);
            }
        }
        let s: Sent = self.ce.transmit(now)?;
        self.last_tx = now;
        let seg = s.seg(self.dd.wnd_start(s.flow));
        let (offset, stale) = self.dd.locate(s.flow, seg);
        self.stats.transmitted += 1;
        self.stats.retransmitted += s.rtx as u64;
        self.stats.stale += stale as u64;
        Some(TxSegment {
            flow: s.flow,
            seg,
            offset,
            len: s.len,
            rtx: s.rtx,
            priority: self.priority(s.flow),
        })
    }

    /// Segment Transmitted (§3.1 step 9) at the time of the last
    /// [`transmit_step`](Self::transmit_step): `f`'s outstanding count drops, its
    /// retransmission timer starts if it is not running, and it may re-enter the active set.
    #[inline]
    pub fn segment_transmitted(&mut self, f: FlowId) {
        self.dd.transmitted(f, self.last_tx);
    }

    /// [`segment_transmitted`](Self::segment_transmitted) with the signal arriving at `now`
    /// (when it lags the transmission): the retransmission timer of `f` starts from `now`
    /// (see [`DataDelivery::transmitted`]).
    #[inline]
    pub fn segment_transmitted_at(&mut self, f: FlowId, now: Nanos) {
        self.dd.transmitted(f, now);
    }

    /// One scheduling decision: generates a segment if some flow can (step 1–5), then
    /// transmits one (steps 6–9). When no flow has an address ready but some can generate,
    /// generation continues until one becomes ready (bounded by the active flows). In the
    /// window scheme with no address ready, the one generated goes straight out, past the
    /// ready-to-tx set (the same result, cheaper).
    #[inline(always)]
    pub fn next_segment(&mut self, now: Nanos) -> Option<TxSegment> {
        if self.cfg.credit_scheme == CreditScheme::Window && self.ce.ready_set().is_empty() {
            return self.next_segment_direct(now);
        }
        self.generate_step(now);
        let mut tries = self.dd.active_set().len();
        while self.ce.ready_set().is_empty() && tries > 0 {
            self.generate_step(now)?;
            tries -= 1;
        }
        let tx = self.transmit_step(now)?;
        self.dd.transmitted(tx.flow, now);
        Some(tx)
    }

    /// Up to `out.len()` scheduling decisions at `now` (a tx burst), written to the front of
    /// `out`; returns how many were made. The same decisions, in the same order and leaving
    /// the same state, as that many [`next_segment`](Self::next_segment) calls at `now`,
    /// stopping after the first one that finds nothing to send (each is Tonic §3.1 steps
    /// 1–9). In the window scheme with nothing ready (every decision of a backlogged window
    /// flow) the burst's per-call work is done once: the rate-timer clock, the counters, the
    /// engine's flags.
    pub fn next_segments(&mut self, now: Nanos, out: &mut [TxSegment]) -> usize {
        let Some((first, rest)) = out.split_first_mut() else {
            return 0;
        };
        let Some(tx) = self.next_segment(now) else {
            return 0;
        };
        *first = tx;
        let mut n = 1;
        if self.cfg.credit_scheme == CreditScheme::Window {
            let (made, stopped) = self.next_segments_direct(now, rest);
            n += made;
            if stopped {
                return n;
            }
        }
        for slot in &mut out[n..] {
            let Some(tx) = self.next_segment(now) else {
                break;
            };
            *slot = tx;
            n += 1;
        }
        n
    }

    /// The direct path of [`next_segment`](Self::next_segment) (window scheme, ready-to-tx
    /// empty) repeated into `out` after a first decision at the same `now`, while
    /// ready-to-tx stays empty; returns how many it made and whether it stopped because no
    /// flow could send (as `next_segment` returning `None`). After a decision at `now` the
    /// rate-timer wheel's clock is past `now`, so the `advance_timers(now)` of the decisions
    /// that follow would fire nothing and change nothing: it is left out, and the counters
    /// are added once.
    #[inline(always)]
    fn next_segments_direct(&mut self, now: Nanos, out: &mut [TxSegment]) -> (usize, bool) {
        // The direct path never adds to ready-to-tx, so it stays as it is now.
        if !self.ce.ready_set().is_empty() {
            return (0, false);
        }
        let d = direct_burst(&mut self.dd, &self.ce, &self.prio, now, out);
        let st = &mut self.stats;
        st.generated += d.made as u64;
        st.transmitted += d.made as u64;
        st.retransmitted += d.rtx;
        st.stale += d.stale;
        (d.made, d.stopped)
    }

    /// [`next_segment`](Self::next_segment) in the window scheme with ready-to-tx empty:
    /// every window flow with an address in its ring is ready, so the address generated now
    /// is the only one and goes straight out ([`CreditEngine::pass_through`],
    /// [`DataDelivery::generate_transmitted`]). The same steps as the general path, without
    /// the ready-to-tx set operations (and without prefetching the one flow it would hold,
    /// which generation just touched); the two engines' parts touch disjoint state, so their
    /// order does not matter.
    #[inline(always)]
    fn next_segment_direct(&mut self, now: Nanos) -> Option<TxSegment> {
        if self.dd.prefetching() {
            if let Some(n) = self.dd.active_ahead(PREFETCH_AHEAD) {
                self.prefetch_flow(n);
            }
        }
        let d = self.dd.generate_transmitted(now);
        // The window scheme arms no rate timer, but the wheel's clock moves as in
        // `transmit_step`.
        self.stats.rate_timers += self.ce.advance_timers(now) as u64;
        let (g, offset, stale) = d?;
        self.stats.generated += 1;
        let s = self.ce.pass_through(&g);
        self.last_tx = now;
        self.stats.transmitted += 1;
        self.stats.retransmitted += s.rtx as u64;
        self.stats.stale += stale as u64;
        // `Sent::seg` against `wnd-start` gives back `g.seg`: it lies in the window.
        debug_assert_eq!(s.seg(self.dd.wnd_start(g.flow)), g.seg);
        Some(direct_tx(&self.prio, &g, offset, &s))
    }

    /// One hardware cycle (§3.4): at most one incoming event, one Periodic Updates visit, one
    /// generation and one transmission. If the incoming event and the periodic visit hit the
    /// same flow, the timeout is discarded and both hooks' outputs are merged; a generation
    /// and a transmission of the same flow cancel out on `outstanding-cnt`.
    pub fn cycle(
        &mut self,
        now: Nanos,
        incoming: Option<(FlowId, IncomingPkt)>,
    ) -> Result<CycleReport, TonicError> {
        let mut rep = CycleReport::default();
        let swept = self.dd.sweep_peek();
        match incoming {
            Some((f, pkt)) if swept == Some(f) => {
                let view = self.dd.view(f);
                let expired = view.rtx_deadline != 0 && now >= view.rtx_deadline;
                let r = self
                    .dd
                    .incoming_with_periodic(&*self.module, f, &pkt, now)?;
                self.after_incoming(f, &pkt, &r, now);
                rep.incoming = Some(r);
                rep.periodic_flow = Some(f);
                rep.timeout_discarded = expired;
                self.stats.timeouts_discarded += expired as u64;
            }
            other => {
                if let Some((f, pkt)) = other {
                    rep.incoming = Some(self.incoming(f, &pkt, now)?);
                }
                if let Some(v) = self.dd.periodic(&*self.module, now) {
                    rep.periodic_flow = Some(v.flow);
                    rep.timeout = v.timeout;
                    self.stats.timeouts += v.timeout as u64;
                    if v.probe {
                        self.note_probe(v.flow);
                    }
                    self.forward_credit(v.flow, v.credit, now);
                }
            }
        }
        rep.generated = self.generate_step(now);
        rep.tx = self.transmit_step(now);
        if let Some(tx) = rep.tx {
            self.dd.transmitted(tx.flow, now);
        }
        Ok(rep)
    }

    /// Overwrites `f`'s user context (tests).
    #[cfg(test)]
    pub(crate) fn test_set_ctx(&mut self, f: FlowId, words: &[u64]) {
        self.dd.set_ctx(f, words);
    }

    /// Checks the set invariants of §3.1 for every flow (O(flows), for tests and the
    /// testbench): a flow is in the active set iff it can generate (a segment to send, fewer
    /// than N outstanding); outstanding = ring occupancy ≤ N; ready-to-tx iff a non-empty ring
    /// and credit (see [`CreditEngine::check_invariants`]).
    ///
    /// Read-only: checking never changes a run. In particular it does not fire due rate
    /// timers (a rate flow whose timer is due but not yet fired is waiting legitimately; the
    /// next [`transmit_step`](Self::transmit_step) or [`periodic`](Self::periodic) fires
    /// and counts it).
    pub fn check_invariants(&self, now: Nanos) -> Result<(), String> {
        for f in 0..self.params.max_flows {
            if !self.dd.is_live(f) {
                if self.dd.active_set().contains(f) {
                    return Err(format!("dead flow {f} is active"));
                }
                continue;
            }
            let active = self.dd.active_set().contains(f);
            if active != self.dd.can_generate(f) {
                return Err(format!(
                    "flow {f}: in active set = {active}, can generate = {}",
                    !active
                ));
            }
            let (out, ring) = (self.dd.outstanding(f), self.ce.ring_len(f));
            if out != ring || out > self.params.ring_depth {
                return Err(format!(
                    "flow {f}: outstanding {out}, ring {ring}, N {}",
                    self.params.ring_depth
                ));
            }
            let v = self.dd.view(f);
            if v.next_new > v.wnd_start + v.window_capacity as u64 {
                return Err(format!("flow {f}: sent beyond the bitmap window"));
            }
        }
        self.ce.check_invariants(now)
    }
}

/// What [`direct_burst`] did.
struct DirectBurst {
    made: usize,
    stopped: bool,
    rtx: u64,
    stale: u64,
}

/// The direct path's decisions into `out` (see `TonicEngine::next_segments_direct`): each
/// one generated by `dd` and passed through `ce` at once. Out of line, with the engine's
/// parts as separate borrows: the compiler then knows that writing a flow's record does not
/// change the sets' positions or the tables' addresses, and keeps those in registers for
/// the whole burst instead of reloading them for every decision.
#[inline(never)]
fn direct_burst(
    dd: &mut DataDelivery,
    ce: &CreditEngine,
    prio: &[u8],
    now: Nanos,
    out: &mut [TxSegment],
) -> DirectBurst {
    let prefetching = dd.prefetching();
    let mut d = DirectBurst {
        made: 0,
        stopped: false,
        rtx: 0,
        stale: 0,
    };
    while d.made < out.len() {
        // Decisions on the engine's parts until a flow with marks comes to the front.
        let mut parts = dd.direct_parts();
        let mut marked = None;
        for slot in &mut out[d.made..] {
            if prefetching {
                if let Some(k) = parts.prefetch_ahead(PREFETCH_AHEAD) {
                    ce.prefetch(k);
                }
            }
            let (g, offset, st) = match parts.step(now) {
                Direct::Made(g, offset, st) => (g, offset, st),
                Direct::Marked(f) => {
                    marked = Some(f);
                    break;
                }
                Direct::Empty => {
                    d.stopped = true;
                    return d;
                }
            };
            *slot = burst_tx(ce, prio, &g, offset, st, &mut d);
        }
        let Some(f) = marked else {
            break;
        };
        // The marked flow's decision, on the whole engine.
        let (g, offset, st) = dd.generate_transmitted_marked(f, now);
        let at = d.made;
        out[at] = burst_tx(ce, prio, &g, offset, st, &mut d);
    }
    d
}

/// The decision of [`direct_burst`] for generated address `g` at ring `offset` (already
/// acknowledged if `stale`), passed through `ce`; counted in `d`.
#[inline(always)]
fn burst_tx(
    ce: &CreditEngine,
    prio: &[u8],
    g: &Generated,
    offset: u64,
    stale: bool,
    d: &mut DirectBurst,
) -> TxSegment {
    let s = ce.pass_through(g);
    d.rtx += s.rtx as u64;
    d.stale += stale as u64;
    d.made += 1;
    direct_tx(prio, g, offset, &s)
}

/// The decision of the direct path: generated address `g` at ring `offset`, passed
/// through the credit engine as `s`, at the flow's priority in `prio`.
#[inline(always)]
fn direct_tx(prio: &[u8], g: &Generated, offset: u64, s: &Sent) -> TxSegment {
    TxSegment {
        flow: g.flow,
        seg: g.seg,
        offset,
        len: s.len,
        rtx: s.rtx,
        priority: prio.get(g.flow as usize).copied().unwrap_or(0),
    }
}
