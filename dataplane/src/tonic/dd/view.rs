//! Read-only views of a flow's state in the data delivery engine: the module's
//! [`FlowView`] (Table 2 with window-relative bitmaps, §3.5) and the active-set predicate
//! (§3.1), built from separate borrows of the engine's parts so that they can be used while
//! other parts (the user context, the record) are being updated.

use super::super::bitmap;
use super::super::module::FlowView;
use super::super::rrset::RrSet;
use super::super::FlowId;
use super::{Bm, Cold, DdFlow, DdParams, Layout, A_ANY, COLD_WORDS, LIVE, M_ANY, X_ANY};

/// Moves `f` into `set` if it is not a member, out of it if it is.
#[inline(never)]
pub(super) fn flip(set: &mut RrSet, f: FlowId) {
    if !set.push_back(f) {
        set.remove(f);
    }
}

/// What the active-set predicate reads besides a flow's hot record (a separate borrow from
/// the records, so that it can be evaluated on a record being updated).
pub(super) struct GenView<'a> {
    pub(super) p: &'a DdParams,
    pub(super) lay: &'a Layout,
    pub(super) slab: &'a Vec<u64>,
}

impl GenView<'_> {
    /// [`DataDelivery::first_marked`](super::DataDelivery::first_marked) of flow `f` with record `r`.
    #[inline(always)]
    pub(super) fn first_marked(&self, f: FlowId, r: &DdFlow) -> Option<u32> {
        if r.flags & M_ANY == 0 {
            return None;
        }
        let words = self.lay.words;
        let at = self.lay.bits_at(f) + Bm::Marked as usize * words;
        first_marked_in(r, &self.slab[at..at + words], self.p.window)
    }

    /// [`DataDelivery::can_generate`](super::DataDelivery::can_generate) of flow `f` with record `r`.
    #[inline(always)]
    pub(super) fn can_generate(&self, f: FlowId, r: &DdFlow) -> bool {
        can_generate_rec(self.p, r, || self.first_marked(f, r))
    }
}

/// The first segment marked for retransmission after the head of the flow with record `r`
/// whose `marked-for-rtx` ring of `window` bits is `marked`, as an offset from `wnd-start`
/// (App. C's find-first-set after the head).
#[inline(always)]
pub(super) fn first_marked_in(r: &DdFlow, marked: &[u64], window: u32) -> Option<u32> {
    let head = (r.wnd_start & (window as u64 - 1)) as u32;
    bitmap::find_first_after(marked, window, head).map(|p| (p + window - head) & (window - 1))
}

/// The active-set predicate (§3.1) on a flow's record `r`: live, fewer than N outstanding,
/// and new data or a segment marked for retransmission inside the window; `first_marked`
/// gives the latter's offset from `wnd-start` (called only when `r` has marks, so that the
/// loss-free path touches no bitmap).
#[inline(always)]
pub(super) fn can_generate_rec(
    p: &DdParams,
    r: &DdFlow,
    first_marked: impl FnOnce() -> Option<u32>,
) -> bool {
    if r.flags & LIVE == 0 || (r.outstanding as u32) >= p.ring_depth {
        return false;
    }
    let wnd = r.wnd_size.min(r.rcv_wnd).min(p.window) as u64;
    (r.next_new < r.tail && r.next_new < r.wnd_start + wnd)
        || (r.flags & M_ANY != 0 && first_marked().is_some_and(|o| (o as u64) < wnd))
}

/// What a [`FlowView`] of one flow is built from: its hot record and the read-only parts of
/// its slab (separate borrows from the engine, so that the view can be written into the
/// engine's own scratch input while the user context is lent to the module).
pub(super) struct ViewSrc<'a> {
    pub(super) r: &'a DdFlow,
    pub(super) cold: &'a [u64; COLD_WORDS],
    /// The three bitmaps (and possibly padding after them).
    pub(super) bits: &'a [u64],
    pub(super) words: usize,
    pub(super) window: u32,
}

impl ViewSrc<'_> {
    /// Writes the module's view of the flow into `v`, whose bitmaps are all zero if `zeroed`
    /// (they are then left alone where the flow's are empty); returns whether `v`'s bitmaps
    /// are all zero afterwards.
    #[inline(always)]
    pub(super) fn fill(&self, v: &mut FlowView, zeroed: bool) -> bool {
        let r = self.r;
        v.wnd_start = r.wnd_start;
        v.next_new = r.next_new;
        v.tail = r.tail;
        v.total_sent = self.cold[Cold::TotalSent as usize];
        v.rtx_timer_amount = r.rtx_amount;
        v.rtx_deadline = r.rtx_deadline;
        v.rate_bps = self.cold[Cold::RateBps as usize];
        v.wnd_size = r.wnd_size;
        v.rcv_wnd = r.rcv_wnd;
        v.window_capacity = self.window;
        v.outstanding_cnt = r.outstanding as u32;
        v.mss = r.mss;
        if r.flags & (A_ANY | M_ANY | X_ANY) == 0 {
            if !zeroed {
                v.acked = Default::default();
                v.marked_for_rtx = Default::default();
                v.rtx_cnt = Default::default();
            }
            v.is_idle = r.next_new >= r.tail;
            return true;
        }
        fill_bitmaps(r, self.bits, self.words, self.window, v);
        false
    }
}

/// The bitmap part of [`ViewSrc::fill`] for a flow `r` with a bitmap that may be set; `bits`
/// holds its three bitmaps of `words` words each.
#[inline(never)]
fn fill_bitmaps(r: &DdFlow, bits: &[u64], words: usize, window: u32, v: &mut FlowView) {
    let head = (r.wnd_start & (window as u64 - 1)) as u32;
    let rot = |b: Bm, flag: u8| {
        if r.flags & flag == 0 {
            Default::default()
        } else {
            let at = b as usize * words;
            bitmap::rotate_to_head(&bits[at..at + words], head)
        }
    };
    v.acked = rot(Bm::Acked, A_ANY);
    v.marked_for_rtx = rot(Bm::Marked, M_ANY);
    v.rtx_cnt = rot(Bm::Rtx, X_ANY);
    v.is_idle = v.marked_for_rtx.is_empty() && r.next_new >= r.tail;
}
