//! The Segment Generation and Segment Transmitted modules of the data delivery engine
//! (Tonic §3.1 steps 1–3 and 9, §3.2.3): which segment the front of the active set sends
//! next, and what its transmission changes.

use super::super::bitmap;
use super::super::rrset::RrSet;
use super::super::{FlowId, Nanos, SegId};
use super::view::can_generate_rec;
use super::{
    Bm, Cold, DataDelivery, DdFlow, DdParams, GenView, Generated, Layout, A_ANY, LIVE, M_ANY,
    PERSIST, SMALL_PENDING, X_ANY,
};

impl DataDelivery {
    /// Segment Generation (§3.1 steps 1–3, §3.2.3): takes the front of the active set and
    /// generates its next segment: the first one marked for retransmission after the head
    /// (if inside the window), else `highest-sent + 1`; counts it outstanding and re-inserts
    /// the flow if it can still generate. The retransmission timer is left alone: an address
    /// in the credit engine's ring is not on the wire yet (see
    /// [`transmitted`](Self::transmitted)).
    #[inline(always)]
    pub fn generate(&mut self) -> Option<Generated> {
        let f = self.active.front()?;
        Some(self.generate_front(f).0)
    }

    /// [`generate`](Self::generate) for `f`, the front of the active set; also returns
    /// whether `f` stayed in the set.
    #[inline(always)]
    fn generate_front(&mut self, f: FlowId) -> (Generated, bool) {
        let r = &self.flows[f as usize];
        debug_assert!(self.can_generate(f));
        let (seg, rtx) = if r.flags & M_ANY != 0 {
            self.take_marked(f)
        } else {
            (r.next_new, false)
        };
        let rec = &mut self.flows[f as usize];
        if !rtx {
            rec.next_new += 1;
        }
        rec.outstanding += 1;
        let len = if rec.flags & SMALL_PENDING != 0 && seg + 1 == rec.tail {
            rec.small_len as u32
        } else {
            rec.mss
        };
        // Step 3: back into the active set only if it can still generate.
        let gv = GenView {
            p: &self.p,
            lay: &self.lay,
            slab: &self.slab,
        };
        let active = gv.can_generate(f, rec);
        if active {
            self.active.rotate();
        } else {
            self.active.pop_front();
        }
        let g = Generated {
            flow: f,
            seg,
            rtx,
            len,
        };
        (g, active)
    }

    /// The segment [`generate`](Self::generate) picks for `f`, a flow with segments marked
    /// for retransmission: the first marked one after the head if it is inside the window
    /// (its mark moves to `rtx-cnt`), else `highest-sent + 1`. Returns (segment, is a
    /// retransmission).
    #[inline(never)]
    fn take_marked(&mut self, f: FlowId) -> (SegId, bool) {
        let r = &self.flows[f as usize];
        match self.first_marked(f, r) {
            Some(o) if (o as u64) < self.eff_wnd(r) => {
                let seg = r.wnd_start + o as u64;
                let p = self.pos(seg);
                let (_, m, x) = self.bms_mut(f);
                bitmap::clear(m, p);
                bitmap::set(x, p);
                let m_any = if bitmap::any(m) { M_ANY } else { 0 };
                let rec = &mut self.flows[f as usize];
                rec.flags = rec.flags & !M_ANY | m_any | X_ANY;
                (seg, true)
            }
            _ => (r.next_new, false),
        }
    }

    /// Segment Transmitted (§3.1 step 9, §3.2.3): the credit engine sent one of `f`'s
    /// addresses at `now`; `outstanding-cnt − 1` and `total-sent + 1`, the retransmission
    /// timer starts if it is not running, and `f` re-enters the active set if that
    /// re-enabled generation.
    ///
    /// The timer starts here and not at Segment Generation: Tonic decouples generation from
    /// transmission (§3.1), and an address may wait in the credit engine's ring for as long
    /// as its flow lacks credit (rate and grant schemes, §3.3). A timeout is "the absence of
    /// acknowledgments" (§3.2.3) for segments on the wire, and Table 2 defines what is
    /// tracked as sent by transmission (`highest-sent`: "the highest segment transmitted so
    /// far"; `total-sent`: "segments transmitted"), so a timer started at generation would
    /// expire while nothing is in flight. The paper does not say which module arms the
    /// timer; this follows RFC 6298 (5.1): "every time a packet containing data is
    /// sent (including a retransmission), if the timer is not running, start it".
    #[inline]
    pub fn transmitted(&mut self, f: FlowId, now: Nanos) {
        let rec = &mut self.flows[f as usize];
        if rec.flags & LIVE == 0 {
            return;
        }
        debug_assert!(rec.outstanding > 0);
        rec.outstanding = rec.outstanding.saturating_sub(1);
        // Not for a stale address (acknowledged while it waited): nothing went in flight.
        if rec.wnd_start + (rec.outstanding as u64) < rec.next_new
            && (rec.rtx_deadline == 0 || rec.flags & PERSIST != 0)
        {
            // Data in flight: the retransmission timer replaces a persist timer.
            rec.rtx_deadline = now + rec.rtx_amount;
            rec.flags &= !PERSIST;
        }
        *self.cold_mut(f, Cold::TotalSent) += 1;
        if !self.active.contains(f) {
            self.join_if_able(f);
        }
    }

    /// `k` of `f`'s outstanding addresses will never be transmitted (the credit engine
    /// dropped them from its ring): `outstanding-cnt − k`, and `f` re-enters the active set
    /// if that re-enabled generation. Nothing is counted as sent and no timer starts.
    pub fn forget_queued(&mut self, f: FlowId, k: u32) {
        let rec = &mut self.flows[f as usize];
        if rec.flags & LIVE == 0 || k == 0 {
            return;
        }
        debug_assert!(rec.outstanding as u32 >= k);
        rec.outstanding = rec.outstanding.saturating_sub(k.min(u8::MAX as u32) as u8);
        if !self.active.contains(f) {
            self.join_if_able(f);
        }
    }

    /// Puts `f`, not in the active set, into it if it can generate (out of line: most flows
    /// transmitted are still active).
    #[inline(never)]
    fn join_if_able(&mut self, f: FlowId) {
        if self.can_generate(f) {
            self.active.push_back(f);
        }
    }

    /// Segment Generation (§3.1 steps 1–3) and, at once, Segment Transmitted (step 9) of the
    /// generated segment at `now`: the engine's path for an address that goes straight out
    /// (see `TonicEngine::next_segment`). The same as [`generate`](Self::generate), then
    /// [`locate`](Self::locate) of its segment, then [`transmitted`](Self::transmitted), with
    /// the flow's record looked up once. Returns the segment, its byte offset and whether it
    /// was already acknowledged.
    #[inline(always)]
    pub(crate) fn generate_transmitted(&mut self, now: Nanos) -> Option<(Generated, u64, bool)> {
        match self.direct_parts().step(now) {
            Direct::Made(g, offset, acked) => Some((g, offset, acked)),
            Direct::Marked(f) => Some(self.generate_transmitted_marked(f, now)),
            Direct::Empty => None,
        }
    }

    /// The parts of the engine that [`DirectParts::step`] works on, borrowed once for a
    /// burst of decisions.
    #[inline(always)]
    pub(crate) fn direct_parts(&mut self) -> DirectParts<'_> {
        DirectParts {
            p: self.p,
            lay: self.lay,
            flows: &mut self.flows,
            slab: &mut self.slab,
            active: &mut self.active,
        }
    }

    /// [`generate_transmitted`](Self::generate_transmitted) of `f`, the front of the active
    /// set, when it has segments marked for retransmission.
    #[inline(never)]
    pub(crate) fn generate_transmitted_marked(
        &mut self,
        f: FlowId,
        now: Nanos,
    ) -> (Generated, u64, bool) {
        let (g, active) = self.generate_front(f);
        let seg = g.seg;
        let rec = &mut self.flows[f as usize];
        // Where it lies (`locate`).
        let acked = seg < rec.wnd_start
            || (rec.flags & A_ANY != 0 && seg < rec.next_new && {
                let words = self.lay.words;
                let at = self.lay.bits_at(f) + Bm::Acked as usize * words;
                let pos = (seg & (self.p.window as u64 - 1)) as u32;
                bitmap::get(&self.slab[at..at + words], pos)
            });
        let offset = (seg as i64 * rec.mss as i64 + rec.byte_delta) as u64;
        // Transmitted (`transmitted`: the flow is live, it was just generated).
        debug_assert!(rec.flags & LIVE != 0 && rec.outstanding > 0);
        rec.outstanding = rec.outstanding.saturating_sub(1);
        if rec.wnd_start + (rec.outstanding as u64) < rec.next_new
            && (rec.rtx_deadline == 0 || rec.flags & PERSIST != 0)
        {
            rec.rtx_deadline = now + rec.rtx_amount;
            rec.flags &= !PERSIST;
        }
        self.slab[self.lay.cold_at(f, Cold::TotalSent)] += 1;
        // A member iff it stayed in the active set at generation.
        if !active {
            self.join_if_able(f);
        }
        (g, offset, acked)
    }

    /// The segment `seg` of `f` as seen at transmit time: its byte offset and whether it was
    /// already acknowledged (a stale ring entry).
    #[inline]
    pub fn locate(&self, f: FlowId, seg: SegId) -> (u64, bool) {
        let r = &self.flows[f as usize];
        let acked = seg < r.wnd_start
            || (r.flags & A_ANY != 0
                && seg < r.next_new
                && bitmap::get(self.bm(f, Bm::Acked), self.pos(seg)));
        (self.offset_of(f, seg), acked)
    }
}

/// What [`DirectParts::step`] did.
pub(crate) enum Direct {
    /// A segment generated and transmitted: the segment, its byte offset and whether it was
    /// already acknowledged (as [`DataDelivery::generate_transmitted`] returns them).
    Made(Generated, u64, bool),
    /// The front of the active set, this flow, has segments marked for retransmission:
    /// nothing was done (the marked path needs the whole engine).
    Marked(FlowId),
    /// The active set is empty.
    Empty,
}

/// The data delivery engine's parts that the direct decision path reads and writes, as
/// separate borrows with the sizes copied: within a burst of decisions the compiler keeps
/// the tables' addresses and the sizes in registers, where through `&mut DataDelivery` it
/// reloads them after every write to a flow's record (it cannot tell that the record is
/// not the engine).
pub(crate) struct DirectParts<'a> {
    p: DdParams,
    lay: Layout,
    flows: &'a mut [DdFlow],
    slab: &'a mut [u64],
    active: &'a mut RrSet,
}

impl DirectParts<'_> {
    /// [`DataDelivery::generate_transmitted`] of the front of the active set when it has no
    /// segment marked for retransmission, so that the one generated is `highest-sent + 1`:
    /// the flow's record and slab are looked up once, and the set operations come last (they
    /// touch no flow state).
    #[inline(always)]
    pub(crate) fn step(&mut self, now: Nanos) -> Direct {
        let Some(f) = self.active.front() else {
            return Direct::Empty;
        };
        let (p, lay) = (&self.p, &self.lay);
        let rec = &mut self.flows[f as usize];
        if rec.flags & M_ANY != 0 {
            return Direct::Marked(f);
        }
        debug_assert!(rec.flags & LIVE != 0);
        let seg = rec.next_new;
        rec.next_new = seg + 1;
        let len = if rec.flags & SMALL_PENDING != 0 && seg + 1 == rec.tail {
            rec.small_len as u32
        } else {
            rec.mss
        };
        // Generation counts it outstanding and decides whether the flow stays active
        // (step 3; no marks, so no bitmap is read); transmission takes it back at once.
        let out0 = rec.outstanding;
        rec.outstanding = out0 + 1;
        let stays = can_generate_rec(p, rec, || None);
        rec.outstanding = out0;
        // Where it lies (`locate`).
        let offset = (seg as i64 * rec.mss as i64 + rec.byte_delta) as u64;
        let acked = seg < rec.wnd_start
            || (rec.flags & A_ANY != 0 && seg < rec.next_new && {
                let words = lay.words;
                let at = lay.bits_at(f) + Bm::Acked as usize * words;
                let pos = (seg & (p.window as u64 - 1)) as u32;
                bitmap::get(&self.slab[at..at + words], pos)
            });
        // Transmitted (`transmitted`).
        if rec.wnd_start + (rec.outstanding as u64) < rec.next_new
            && (rec.rtx_deadline == 0 || rec.flags & PERSIST != 0)
        {
            rec.rtx_deadline = now + rec.rtx_amount;
            rec.flags &= !PERSIST;
        }
        self.slab[lay.cold_at(f, Cold::TotalSent)] += 1;
        if stays {
            self.active.rotate();
        } else {
            // It left the active set at generation and rejoins if it can generate again.
            self.active.pop_front();
            if can_generate_rec(p, rec, || None) {
                self.active.push_back(f);
            }
        }
        let g = Generated {
            flow: f,
            seg,
            rtx: false,
            len,
        };
        Direct::Made(g, offset, acked)
    }

    /// Hints the CPU to fetch the state of the flow round robin takes `k` decisions from
    /// now (as [`DataDelivery::prefetch`] of [`DataDelivery::active_ahead`]); returns it.
    #[inline(always)]
    pub(crate) fn prefetch_ahead(&self, k: u32) -> Option<FlowId> {
        let f = self.active.ahead(k)?;
        super::prefetch_flow(self.flows, self.slab, &self.lay, self.active, f);
        Some(f)
    }
}
