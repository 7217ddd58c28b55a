//! The Incoming module of the data delivery engine (Tonic §3.2.3): the fixed stage
//! (cumulative and selective acks, window shift), the write-back of a hook's outputs, and
//! the same-cycle merge of §3.4.

use super::super::bitmap;
use super::super::module::{
    CtxPriority, HookOutput, IncomingInput, IncomingPkt, NewAckInput, NewAckOutput, SegRange,
    TonicModule, MAX_USER_CTX_WORDS, WINDOW_WORDS,
};
use super::super::{FlowId, Nanos, SegId, TonicError};
use super::view::{can_generate_rec, first_marked_in};
use super::{
    flip, split_slab_mut, Cold, CreditUpdate, DataDelivery, DdFlow, GenView, IncomingReport,
    ViewSrc, A_ANY, COLD_WORDS, M_ANY, PERSIST, SMALL_PENDING, X_ANY,
};

impl DataDelivery {
    /// Moves `wnd-start` of `f` to `to` (if ahead), clearing the ring positions it leaves;
    /// returns how many of the passed segments were not already selectively acked.
    #[inline(always)]
    fn advance_window(&mut self, f: FlowId, to: SegId) -> u32 {
        let r = &mut self.flows[f as usize];
        let to = to.min(r.next_new);
        let from = r.wnd_start;
        if to <= from {
            return 0;
        }
        let len = (to - from) as u32;
        r.wnd_start = to;
        let any = r.flags & (A_ANY | M_ANY | X_ANY);
        if any == 0 {
            return len;
        }
        self.clear_passed(f, from, len, any)
    }

    /// The bitmap side of [`advance_window`](Self::advance_window): clears the `len`
    /// positions from segment `from` in the bitmaps flagged in `any`, returns the passed
    /// segments that were not selectively acked.
    #[inline(never)]
    fn clear_passed(&mut self, f: FlowId, from: SegId, len: u32, any: u8) -> u32 {
        let head = self.pos(from);
        let (a, m, x) = self.bms_mut(f);
        let mut sacked = 0;
        let mut still = 0;
        if any & A_ANY != 0 {
            sacked = bitmap::count_range(a, head, len);
            bitmap::clear_range(a, head, len);
            still |= if bitmap::any(a) { A_ANY } else { 0 };
        }
        if any & M_ANY != 0 {
            bitmap::clear_range(m, head, len);
            still |= if bitmap::any(m) { M_ANY } else { 0 };
        }
        if any & X_ANY != 0 {
            bitmap::clear_range(x, head, len);
            still |= if bitmap::any(x) { X_ANY } else { 0 };
        }
        let rec = &mut self.flows[f as usize];
        rec.flags = rec.flags & !(A_ANY | M_ANY | X_ANY) | still;
        len - sacked
    }

    /// Marks the sent part of `range` acknowledged; returns how many bits were newly set.
    fn mark_acked(&mut self, f: FlowId, range: SegRange) -> u32 {
        let r = self.flows[f as usize];
        let (s, e) = (range.start.max(r.wnd_start), range.end.min(r.next_new));
        if s >= e {
            return 0;
        }
        let start = self.pos(s);
        let (a, m, _) = self.bms_mut(f);
        let n = bitmap::set_range(a, start, (e - s) as u32);
        let mut flags = r.flags | A_ANY;
        if flags & M_ANY != 0 {
            for (mw, aw) in m.iter_mut().zip(a.iter()) {
                *mw &= !aw;
            }
            if !bitmap::any(m) {
                flags &= !M_ANY;
            }
        }
        self.flows[f as usize].flags = flags;
        n
    }

    /// The fixed stage of Incoming (§3.2.3 stage 1): returns (old wnd-start, newly acked).
    #[inline(always)]
    fn incoming_fixed(&mut self, f: FlowId, pkt: &IncomingPkt) -> (SegId, u32) {
        let old = self.flows[f as usize].wnd_start;
        let mut newly = self.advance_window(f, pkt.cumulative_ack);
        for b in pkt.sack_blocks() {
            newly += self.mark_acked(f, *b);
        }
        if pkt.has(IncomingPkt::FLAG_RCV_WND) {
            self.flows[f as usize].rcv_wnd = pkt.rcv_wnd;
        }
        (old, newly)
    }

    /// Incoming: the fixed stage, then the module's stage, then its outputs applied.
    // Always inlined into the engine's `incoming` (one call per decision in the benchmark):
    // left to `#[inline]`, it stopped being inlined once `HookOutput` and `CreditUpdate`
    // grew the priority fields.
    #[inline(always)]
    pub fn incoming<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        f: FlowId,
        pkt: &IncomingPkt,
        now: Nanos,
    ) -> Result<IncomingReport, TonicError> {
        self.check(f)?;
        let (old, newly) = self.incoming_fixed(f, pkt);
        self.scratch.pkt = *pkt;
        self.scratch_ack = false;
        Ok(self.incoming_module(module, f, old, newly, now))
    }

    /// [`incoming`](Self::incoming) of the plain cumulative ack
    /// `IncomingPkt { grant_bytes, ..IncomingPkt::ack(cumulative_ack) }` (Tonic §3.2.3): the
    /// same fixed stage, hook input and outputs, without building the packet. The hook's
    /// input keeps such a packet between calls (`scratch_ack`), so that only its ack and
    /// grant are written per call.
    #[inline(always)]
    pub(crate) fn incoming_ack<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        f: FlowId,
        cumulative_ack: SegId,
        grant_bytes: u32,
        now: Nanos,
    ) -> Result<IncomingReport, TonicError> {
        self.check(f)?;
        // The fixed stage of `incoming_fixed` for a packet without selective acks or a
        // receiver window.
        let old = self.flows[f as usize].wnd_start;
        let newly = self.advance_window(f, cumulative_ack);
        if !self.scratch_ack {
            self.scratch.pkt = IncomingPkt::ack(0);
            self.scratch_ack = true;
        }
        self.scratch.pkt.cumulative_ack = cumulative_ack;
        self.scratch.pkt.grant_bytes = grant_bytes;
        Ok(self.incoming_module(module, f, old, newly, now))
    }

    /// The module's stage of Incoming and the write-back (§3.2.3 stage 2) for `f`, after the
    /// fixed stage moved `wnd-start` from `old` and acknowledged `newly` segments; the packet
    /// is already in the hook's input.
    #[inline(always)]
    fn incoming_module<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        f: FlowId,
        old: SegId,
        newly: u32,
        now: Nanos,
    ) -> IncomingReport {
        const MARKS: u32 =
            HookOutput::OUT_MARK_ACKED | HookOutput::OUT_CUM_ACK | HookOutput::OUT_MARK_RTX;
        // The flow's record and slab are looked up once, from separate borrows of the
        // engine's parts.
        let DataDelivery {
            p,
            flows,
            slab,
            lay,
            active,
            scratch,
            scratch_zeroed,
            ctx_words,
            new_ack_fast_path,
            ..
        } = self;
        let rec = &mut flows[f as usize];
        let o = lay.slab_at(f);
        if *new_ack_fast_path && rec.wnd_start > old {
            // The hook's fast path: the module decides from a few inputs (the user context
            // alone of the slab), or declines.
            let fast = NewAckInput {
                pkt: &scratch.pkt,
                newly_acked_cnt: newly,
                wnd_size: rec.wnd_size,
                old_wnd_start: old,
                new_wnd_start: rec.wnd_start,
                next_new: rec.next_new,
            };
            let c = o + COLD_WORDS;
            if let Some(d) = module.incoming_new_ack(&fast, &mut slab[c..c + *ctx_words]) {
                write_back_new_ack(rec, &d, now);
                let g = GenView { p, lay, slab };
                if g.can_generate(f, rec) != active.contains(f) {
                    flip(active, f);
                }
                let tail_bytes = || slab[lay.cold_at(f, Cold::TailBytes)];
                return report(rec, tail_bytes, newly, CreditUpdate::default());
            }
        }
        let (cold, rest) = split_slab_mut(&mut slab[o..o + lay.stride]);
        let (ctx, bits) = rest.split_at_mut(*ctx_words);
        // The hook's input is built in a scratch buffer kept between calls, so that empty
        // bitmaps need not be rewritten each time.
        let input = &mut **scratch;
        input.now = now;
        input.newly_acked_cnt = newly;
        input.old_wnd_start = old;
        input.new_wnd_start = rec.wnd_start;
        let src = ViewSrc {
            r: rec,
            cold,
            bits,
            words: lay.words,
            window: p.window,
        };
        *scratch_zeroed = src.fill(&mut input.flow, *scratch_zeroed);
        let mut out = HookOutput::default();
        module.incoming(input, ctx, &mut out);
        if out.set & MARKS != 0 {
            // Marks touch the bitmaps and the window: the general write-back.
            let credit = self.apply(f, &out, now);
            return self.finish_incoming(f, newly, credit);
        }
        // `apply` without marks, then `finish_incoming`, on the record at hand.
        let credit = write_back(rec, &mut cold[Cold::RateBps as usize], &out, now);
        let words = lay.words;
        let marked = || first_marked_in(rec, &bits[words..2 * words], p.window);
        if can_generate_rec(p, rec, marked) != active.contains(f) {
            flip(active, f);
        }
        let tail_bytes = cold[Cold::TailBytes as usize];
        report(rec, || tail_bytes, newly, credit)
    }

    /// The report after an incoming packet; handles small-segment delivery (§5).
    #[inline]
    fn finish_incoming(&mut self, f: FlowId, newly: u32, credit: CreditUpdate) -> IncomingReport {
        let tail_bytes = self.cold(f, Cold::TailBytes);
        report(&mut self.flows[f as usize], || tail_bytes, newly, credit)
    }

    /// Applies a hook's outputs to `f` (the write-back of §3.2.3) and refreshes its active
    /// membership; returns the credit-engine side.
    #[inline(always)]
    pub(super) fn apply(&mut self, f: FlowId, out: &HookOutput, now: Nanos) -> CreditUpdate {
        const MARKS: u32 =
            HookOutput::OUT_MARK_ACKED | HookOutput::OUT_CUM_ACK | HookOutput::OUT_MARK_RTX;
        if out.set & MARKS != 0 {
            self.apply_marks(f, out);
        }
        let rate = &mut self.slab[self.lay.cold_at(f, Cold::RateBps)];
        let rec = &mut self.flows[f as usize];
        let credit = write_back(rec, rate, out, now);
        // The active-set membership (`refresh`), on the record at hand.
        let g = GenView {
            p: &self.p,
            lay: &self.lay,
            slab: &self.slab,
        };
        if g.can_generate(f, rec) != self.active.contains(f) {
            flip(&mut self.active, f);
        }
        credit
    }

    /// The bitmap and window part of [`apply`](Self::apply), in this order: `mark_acked`,
    /// `cum_ack`, `mark_rtx`.
    #[inline(never)]
    fn apply_marks(&mut self, f: FlowId, out: &HookOutput) {
        if out.has(HookOutput::OUT_MARK_ACKED) {
            self.mark_acked(f, out.mark_acked);
        }
        if out.has(HookOutput::OUT_CUM_ACK) {
            self.advance_window(f, out.cum_ack);
        }
        if out.has(HookOutput::OUT_MARK_RTX) {
            self.mark_rtx(
                f,
                out.mark_rtx,
                out.has(HookOutput::OUT_MARK_RTX_FRESH_ONLY),
            );
        }
    }

    /// Marks the sent, unacknowledged segments of `range` for retransmission (only those never
    /// retransmitted if `fresh_only`).
    fn mark_rtx(&mut self, f: FlowId, range: SegRange, fresh_only: bool) {
        let r = self.flows[f as usize];
        let (s, e) = (range.start.max(r.wnd_start), range.end.min(r.next_new));
        if s >= e {
            return;
        }
        let start = self.pos(s);
        let (a, m, x) = self.bms_mut(f);
        let len = (e - s) as u32;
        if fresh_only {
            // deny = acked | rtx-cnt, word by word.
            let mut d = [0u64; WINDOW_WORDS];
            for (i, dw) in d.iter_mut().enumerate().take(a.len()) {
                *dw = a[i] | x[i];
            }
            bitmap::set_range_masked(m, start, len, None, &d[..a.len()]);
        } else {
            bitmap::set_range_masked(m, start, len, None, a);
        }
        if bitmap::any(m) {
            self.flows[f as usize].flags |= M_ANY;
        }
    }

    /// Runs the fixed Incoming stage and both hooks for a flow that an incoming packet and a
    /// Periodic Updates visit hit in the same cycle, and merges (§3.4): the timeout is
    /// discarded; the periodic hook (if it runs on every visit) sees the state from before
    /// the cycle; marks from both hooks apply; for other outputs the [`ModuleConfig`]
    /// priority hook wins where both set a field (credit adds are summed); the user context
    /// is merged by [`TonicModule::merge_user_ctx`].
    pub(crate) fn incoming_with_periodic<M: TonicModule + ?Sized>(
        &mut self,
        module: &M,
        f: FlowId,
        pkt: &IncomingPkt,
        now: Nanos,
    ) -> Result<IncomingReport, TonicError> {
        self.check(f)?;
        debug_assert_eq!(self.sweep_peek(), Some(f));
        self.sweep_next();
        let n = self.ctx_words;
        let mut before = [0u64; MAX_USER_CTX_WORDS];
        before[..n].copy_from_slice(self.ctx(f));
        let pre = self.periodic_input(f, now, false);
        let (old, newly) = self.incoming_fixed(f, pkt);
        let input = IncomingInput {
            now,
            pkt: *pkt,
            newly_acked_cnt: newly,
            old_wnd_start: old,
            new_wnd_start: self.flows[f as usize].wnd_start,
            flow: self.view(f),
        };
        let (mut ctx_i, mut ctx_p, mut merged) = (before, before, before);
        let mut out_i = HookOutput::default();
        module.incoming(&input, &mut ctx_i[..n], &mut out_i);
        let mut out_p = HookOutput::default();
        if self.cfg.periodic_every_visit {
            module.periodic(&pre, &mut ctx_p[..n], &mut out_p);
        }
        module.merge_user_ctx(&before[..n], &ctx_i[..n], &ctx_p[..n], &mut merged[..n]);
        self.ctx_mut(f).copy_from_slice(&merged[..n]);
        let incoming_first = self.cfg.ctx_priority == CtxPriority::Incoming;
        let (out, marks_only) = merge_outputs(&out_i, &out_p, incoming_first);
        self.apply(f, &marks_only, now);
        let credit = self.apply(f, &out, now);
        Ok(self.finish_incoming(f, newly, credit))
    }
}

/// The report after an incoming packet for the flow with record `rec`, whose host made
/// `tail_bytes()` available (read only when needed), that acknowledged `newly` segments: handles small-segment
/// delivery (§5: segmentation restarts at the byte after the small segment).
#[inline(always)]
fn report(
    rec: &mut DdFlow,
    tail_bytes: impl Fn() -> u64,
    newly: u32,
    credit: CreditUpdate,
) -> IncomingReport {
    let mut small_delivered = false;
    if rec.flags & SMALL_PENDING != 0 && rec.wnd_start >= rec.tail {
        rec.flags &= !SMALL_PENDING;
        rec.byte_delta = tail_bytes() as i64 - (rec.tail * rec.mss as u64) as i64;
        rec.small_len = 0;
        small_delivered = true;
    }
    // Bytes acknowledged cumulatively: the offset of `wnd-start`.
    let acked_bytes = if rec.wnd_start >= rec.tail {
        tail_bytes()
    } else {
        (rec.wnd_start as i64 * rec.mss as i64 + rec.byte_delta) as u64
    };
    IncomingReport {
        newly_acked: newly,
        wnd_start: rec.wnd_start,
        acked_bytes,
        small_delivered,
        credit,
    }
}

/// The write-back of a hook's outputs other than the marks (§3.2.3) to a flow's record `rec`
/// and its rate word `rate`; returns the credit-engine side (§3.3.3).
#[inline(always)]
fn write_back(rec: &mut DdFlow, rate: &mut u64, out: &HookOutput, now: Nanos) -> CreditUpdate {
    if out.has(HookOutput::OUT_WND_SIZE) {
        rec.wnd_size = out.wnd_size;
    }
    if out.has(HookOutput::OUT_RTX_TIMER_AMOUNT) {
        rec.rtx_amount = out.rtx_timer_amount.max(1);
    }
    if out.has(HookOutput::OUT_STOP_RTX_TIMER) {
        rec.rtx_deadline = 0;
    } else if out.has(HookOutput::OUT_RESET_RTX_TIMER) {
        rec.rtx_deadline = now + rec.rtx_amount;
    }
    settle_idle_timer(rec, now);
    let mut credit = CreditUpdate::default();
    if out.has(HookOutput::OUT_PRIORITY) {
        credit.priority = Some(out.priority);
    }
    if out.set & (HookOutput::OUT_RATE | HookOutput::OUT_ADD_CREDIT) != 0 {
        if out.has(HookOutput::OUT_RATE) {
            *rate = out.rate_bps;
            credit.rate_bps = Some(out.rate_bps);
        }
        if out.has(HookOutput::OUT_ADD_CREDIT) {
            credit.add_credit = out.add_credit;
        }
    }
    credit
}

/// [`write_back`] of the hook's fast-path decision `d` (outputs `wnd-size`, a timer restart
/// and maybe a timer period, no marks, no credit), as [`NewAckOutput::to_hook_output`].
#[inline(always)]
fn write_back_new_ack(rec: &mut DdFlow, d: &NewAckOutput, now: Nanos) {
    rec.wnd_size = d.wnd_size;
    if let Some(ns) = d.rtx_timer_amount {
        rec.rtx_amount = ns.max(1);
    }
    rec.rtx_deadline = now + rec.rtx_amount;
    settle_idle_timer(rec, now);
}

/// After a write-back: with nothing in flight (`wnd-start` has reached
/// `FlowView::transmitted_end`: what is not acknowledged still waits in the credit engine's
/// ring) there is no retransmission timer (RFC 6298 5.2); it starts again when the next
/// segment is transmitted. With the peer's window shut, the persist timer runs instead (RFC
/// 9293 §3.8.6.1), started if it was not running, so that a lost window update cannot stall
/// the flow.
#[inline(always)]
fn settle_idle_timer(rec: &mut DdFlow, now: Nanos) {
    if rec.wnd_start + rec.outstanding as u64 >= rec.next_new {
        if rec.rcv_wnd == 0 {
            if rec.flags & PERSIST == 0 {
                rec.rtx_deadline = now + rec.rtx_amount;
                rec.flags |= PERSIST;
            }
        } else {
            rec.rtx_deadline = 0;
            rec.flags &= !PERSIST;
        }
    }
}

/// Merges two hook outputs of one cycle (§3.4): returns (merged, the other hook's marks). The
/// prioritized output wins every field both set, credit adds are summed, and the
/// non-prioritized hook's retransmission marks are returned to be applied as well.
fn merge_outputs(a: &HookOutput, b: &HookOutput, a_first: bool) -> (HookOutput, HookOutput) {
    let (hi, lo) = if a_first { (a, b) } else { (b, a) };
    let mut m = *hi;
    let take = |m: &mut HookOutput, bit: u32, f: &dyn Fn(&mut HookOutput)| {
        if !hi.has(bit) && lo.has(bit) {
            f(m);
            m.set |= bit;
        }
    };
    take(&mut m, HookOutput::OUT_MARK_ACKED, &|m| {
        m.mark_acked = lo.mark_acked
    });
    take(&mut m, HookOutput::OUT_CUM_ACK, &|m| m.cum_ack = lo.cum_ack);
    take(&mut m, HookOutput::OUT_WND_SIZE, &|m| {
        m.wnd_size = lo.wnd_size
    });
    take(&mut m, HookOutput::OUT_RATE, &|m| m.rate_bps = lo.rate_bps);
    take(&mut m, HookOutput::OUT_PRIORITY, &|m| {
        m.priority = lo.priority
    });
    take(&mut m, HookOutput::OUT_RTX_TIMER_AMOUNT, &|m| {
        m.rtx_timer_amount = lo.rtx_timer_amount
    });
    if !hi.has(HookOutput::OUT_STOP_RTX_TIMER) && !hi.has(HookOutput::OUT_RESET_RTX_TIMER) {
        m.set |= lo.set & (HookOutput::OUT_STOP_RTX_TIMER | HookOutput::OUT_RESET_RTX_TIMER);
    }
    if lo.has(HookOutput::OUT_ADD_CREDIT) {
        m.add_credit = m.add_credit.saturating_add(lo.add_credit);
        m.set |= HookOutput::OUT_ADD_CREDIT;
    }
    let marks = HookOutput {
        set: lo.set & (HookOutput::OUT_MARK_RTX | HookOutput::OUT_MARK_RTX_FRESH_ONLY),
        mark_rtx: lo.mark_rtx,
        ..Default::default()
    };
    (m, marks)
}
