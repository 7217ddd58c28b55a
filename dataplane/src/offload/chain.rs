//! [`OffloadChain`]: the ordered offloads of one NIC lcore, which offers each frame to them
//! in order and counts every verdict per offload.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use offload_api::msg::MsgType;

use crate::buf::PacketBuf;

use super::{
    count_wire, BurstVerdicts, HostTcp, Offload, OffloadCtx, OffloadReport, RxFrame, Verdict,
    VerdictCounts,
};

struct Slot<B: PacketBuf> {
    offload: Box<dyn Offload<B>>,
    verdicts: VerdictCounts,
}

/// The ordered offloads of one NIC lcore (AccelTCP §4 order: splice, teardown, Tonic, SYN
/// cookies; whatever passes goes to the host).
///
/// Invariant: `any_active` is true exactly when some offload reported [`Offload::active`]
/// after its last hook call; `shared` holds the [`Offload::shared_activity`] counters, which
/// other lcores may raise at any time.
pub struct OffloadChain<B: PacketBuf> {
    slots: Vec<Slot<B>>,
    any_active: bool,
    shared: Vec<Arc<AtomicUsize>>,
    /// The slots whose offload has a burst hook ([`Offload::has_wire_burst`]), in order.
    burst: Vec<usize>,
}

impl<B: PacketBuf> Default for OffloadChain<B> {
    fn default() -> Self {
        OffloadChain {
            slots: Vec::new(),
            any_active: false,
            shared: Vec::new(),
            burst: Vec::new(),
        }
    }
}

impl<B: PacketBuf> OffloadChain<B> {
    /// An empty chain: every wire frame goes to the host, every host frame to the wire.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `offload` at the end of the chain (it sees what the earlier ones pass).
    pub fn push(&mut self, offload: Box<dyn Offload<B>>) {
        self.any_active |= offload.active();
        self.shared.extend(offload.shared_activity());
        if offload.has_wire_burst() {
            self.burst.push(self.slots.len());
        }
        self.slots.push(Slot {
            offload,
            verdicts: VerdictCounts::default(),
        });
    }

    /// Builder form of [`OffloadChain::push`].
    pub fn with(mut self, offload: Box<dyn Offload<B>>) -> Self {
        self.push(offload);
        self
    }

    /// Number of offloads.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True without offloads.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// True while some offload is active (or a shared one may have become active on another
    /// lcore): only then do frames visit the chain.
    #[inline(always)]
    pub fn any_active(&self) -> bool {
        self.any_active || self.shared.iter().any(|c| c.load(Ordering::Relaxed) != 0)
    }

    fn refresh(&mut self) {
        self.any_active = self.slots.iter().any(|s| s.offload.active());
    }

    /// The first offload of type `T`, for reading its state (tests, reports).
    pub fn get<T: Offload<B>>(&self) -> Option<&T> {
        self.slots.iter().find_map(|s| {
            let any: &dyn Any = s.offload.as_ref();
            any.downcast_ref::<T>()
        })
    }

    /// The first offload of type `T`, writable (configuration between runs, tests).
    pub fn get_mut<T: Offload<B>>(&mut self) -> Option<&mut T> {
        let r = self.slots.iter_mut().find_map(|s| {
            let any: &mut dyn Any = s.offload.as_mut();
            any.downcast_mut::<T>()
        });
        self.any_active = true; // the caller may change what is active; re-read next time
        r
    }

    /// True while some offload with a burst hook is active: only then does the lcore offer
    /// its bursts to [`OffloadChain::wire_burst`].
    #[inline(always)]
    pub fn wants_burst(&self) -> bool {
        self.burst.iter().any(|&i| self.slots[i].offload.active())
    }

    /// Offers a burst of wire frames from port `port`, before the NIC stack's checks, to the
    /// active offloads with a burst hook, in order; each decides frames in `verdicts` (a
    /// frame one decides is not offered to later ones), counted for it as
    /// [`OffloadChain::wire_rx`] counts. Returns whether any frame was decided.
    #[inline]
    pub fn wire_burst(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: usize,
        frames: &mut [B],
        verdicts: &mut BurstVerdicts<'_>,
    ) -> bool {
        for &i in &self.burst {
            let s = &mut self.slots[i];
            if !s.offload.active() {
                continue;
            }
            s.offload.wire_burst(cx, port, frames, verdicts);
            s.verdicts.add(&verdicts.take_counts());
        }
        self.refresh();
        verdicts.decided() > 0
    }

    /// Offers a wire frame to the active offloads in order; returns the first verdict that
    /// is not [`Verdict::Pass`] (or `Pass` when all passed).
    pub fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        self.first_taker(true, |o| o.wire_rx(cx, rx), count_wire)
    }

    /// Offers a control message from the host to every offload in order until one takes it;
    /// `Pass` when none did (the lcore counts it as unhandled).
    pub fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        self.first_taker(
            false,
            |o| o.host_control(cx, port, msg, frame),
            |c, _| c.control += 1,
        )
    }

    /// Offers an IPv4/TCP frame from the host to the active offloads in order; returns the
    /// first verdict that is not [`Verdict::Pass`].
    pub fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        self.first_taker(
            true,
            |o| o.host_tcp(cx, port, frame, tcp),
            |c, _| c.host_taken += 1,
        )
    }

    /// Calls `hook` on the offloads in order (only the active ones when `active_only`) until
    /// one returns something other than [`Verdict::Pass`], counts that verdict for it with
    /// `count`, refreshes the activity flag, and returns the verdict (`Pass` when all passed).
    #[inline]
    fn first_taker(
        &mut self,
        active_only: bool,
        mut hook: impl FnMut(&mut dyn Offload<B>) -> Verdict,
        count: impl Fn(&mut VerdictCounts, Verdict),
    ) -> Verdict {
        let mut verdict = Verdict::Pass;
        for s in &mut self.slots {
            if active_only && !s.offload.active() {
                continue;
            }
            verdict = hook(s.offload.as_mut());
            if verdict != Verdict::Pass {
                count(&mut s.verdicts, verdict);
                break;
            }
        }
        self.refresh();
        verdict
    }

    /// Periodic work of every active offload.
    pub fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        for s in &mut self.slots {
            if s.offload.active() {
                s.offload.poll(cx);
            }
        }
        self.refresh();
    }

    /// The earliest deadline of any offload.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|s| s.offload.next_deadline())
            .min()
    }

    /// Writes one report per offload into `out`, reusing its allocations.
    pub fn report(&self, out: &mut Vec<OffloadReport>) {
        out.truncate(self.slots.len());
        while out.len() < self.slots.len() {
            out.push(OffloadReport::default());
        }
        for (r, s) in out.iter_mut().zip(&self.slots) {
            r.name = s.offload.name();
            r.verdicts = s.verdicts;
            r.counters.clear();
            s.offload.counters(&mut |n, v| r.counters.push((n, v)));
        }
    }
}
