//! The NIC lcore: a busy-poll, run-to-completion loop over the port queues it owns
//! (`docs/architecture.md`, "Life of a frame through an NIC lcore"): rx burst → parse →
//! classify → the offload chain → tx burst, with the cycles of each stage counted.
//!
//! One [`NicLcore`] owns one queue of every port, its own [`NicStack`] and its own
//! [`OffloadChain`], so the loop takes no locks. The loop knows no offload by name: a burst
//! first meets the chain's fast paths ([`crate::offload::Offload::wire_burst`]); frames that
//! pass the NIC stack's own duties (ARP, ICMP echo, validation), control messages and TCP
//! frames from the host, and the periodic poll all go to the chain, whose verdicts say where
//! each frame goes. What it reports is published every [`PUBLISH_EVERY`] iterations into a
//! shared [`LcoreReport`] so that the main thread can print periodic statistics.
//!
//! One iteration ([`NicLcore::poll_once`]) is a sequence of named steps, each a short method
//! over the lcore's [`LcorePorts`] (ports, transmit queues, host link), its stack and chain:
//!
//! | step | what it does | stage counted |
//! |---|---|---|
//! | `rx` | one receive burst from every port queue | `Rx` |
//! | `classify` | per port: capture, the chain's burst fast paths, the NIC stack's checks, then each frame's verdict (forward, the chain's `wire_rx`, host, reply, out) | `Classify` |
//! | `host_rx` | frames and control messages from the host link, through the chain, to the stack's transmit path (checksums, TSO, ARP) | `HostTx` |
//! | `timers` | the stack's pending resolutions and the chain's `poll` (retransmissions, notifications) | `Timers` |
//! | `tx` | one transmit burst per port queue ([`LcorePorts`]) | `Tx` |

mod io;
mod report;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use offload_api::is_control_ethertype;
use offload_api::link::{LinkBuf, NicEnd};
use offload_api::msg::{classify, FrameKind};

use crate::buf::PacketBuf;
use crate::clock::Clock;
use crate::cycles::{rdtsc, Stage, StageClock, StageCycles};
use crate::net::parse::{parse_headers, DropReason};
use crate::net::stack::NicStack;
use crate::offload::{BurstVerdicts, HostTcp, Offload, OffloadChain, OffloadCtx, RxFrame, Verdict};
use crate::port::Port;
use crate::steer::Steer;

pub use io::PortSlot;
use io::{capture, LcorePorts};
pub use report::{cycles_per_packet, LcoreReport, PortReport};

/// Loop iterations between publications of the report and checks of the stop flag.
pub const PUBLISH_EVERY: u64 = 1024;

/// One loop iteration in this many marks the end of each stage with a TSC read, for
/// [`LcoreReport::cycles`]; the others read the TSC once, at their start, which is all that
/// the exact busy and idle totals need. A TSC read costs tens of cycles in a VM, and a mark
/// on every stage of every iteration cost about 2 cycles per frame in `nicemu fwd`.
pub const STAGE_SAMPLE_EVERY: u64 = 16;

/// Most frames a port's transmit queue holds for the next iteration when `tx_burst` did not
/// take them all, on an lcore with a host link (the queue of a driver in front of a full
/// ring); the lcore takes no frames from the host while any are held. More are dropped and
/// counted in [`PortReport::tx_full_drops`], as every leftover is on lcores without a host.
pub const HOST_TX_HOLD: usize = 4096;

/// What an lcore does with frames that are not for the NIC's own duties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Hand them to the host (through the host channel; counted and dropped when none).
    Nic,
    /// Send them out of the paired port (port 0 ↔ 1, 2 ↔ 3, ...) after parsing and
    /// classifying every frame.
    Forward,
    /// Send every frame out of the paired port without looking at it, as testpmd's io mode
    /// does: a control for measuring what the loop and the port layer cost on their own.
    Io,
}

/// The settings of one NIC lcore.
pub struct LcoreSetup {
    /// Name in reports and thread names.
    pub name: String,
    /// CPU core to pin to.
    pub core: Option<usize>,
    /// What to do with frames not for the NIC itself.
    pub mode: Mode,
    /// Frames per rx burst.
    pub burst: usize,
    /// Time source.
    pub clock: Clock,
    /// The NIC end of the emulated PCIe link to the host core (modelled: every
    /// crossing is a copy, counted).
    pub host: Option<NicEnd>,
}

/// A NIC lcore's state. Build one per NIC lcore, then call [`NicLcore::run`] on its thread.
pub struct NicLcore<P: Port> {
    name: String,
    core: Option<usize>,
    /// The port queues, their transmit queues and the host link.
    ports: LcorePorts<P>,
    stack: NicStack<P::Buf>,
    mode: Mode,
    burst: usize,
    clock: Clock,
    report: LcoreReport,
    published: Arc<Mutex<LcoreReport>>,
    /// Frames received this iteration, per slot.
    rx: Vec<Vec<P::Buf>>,
    /// One verdict per frame of the burst being classified (the chain's fast paths', then
    /// the stack's).
    verdicts: Vec<Verdict>,
    /// The offloads, in order (empty: the NIC does only its L2/L3 duties).
    chain: OffloadChain<P::Buf>,
    /// The frames of a burst that the fast paths left to the general path.
    keep: Vec<P::Buf>,
    /// TSC at the start of the last iteration (0 before the first).
    last_start: u64,
    /// Whether the last iteration did anything.
    last_busy: bool,
    /// What [`Self::run`] does between idle iterations.
    backoff: crate::idle::Backoff,
    /// The port's steering among lcores and this lcore's index in it, when the device
    /// spreads flows by a hash the host cannot aim at ([`crate::steer`]).
    steer: Option<(Arc<Steer<P::Buf>>, usize)>,
    /// Per slot: how many frames at the end of `rx` other lcores steered here this
    /// iteration (captured already where they arrived).
    steered: Vec<usize>,
}

/// The time of one iteration, read from the clock on first need (a burst that is all
/// transit needs none).
#[derive(Default)]
struct Now(Option<u64>);

impl Now {
    #[inline(always)]
    fn get(&mut self, clock: &Clock) -> u64 {
        *self.0.get_or_insert_with(|| clock.now_ns())
    }
}

impl<P: Port> NicLcore<P> {
    /// An lcore over `slots` (one queue of each port), with its own `stack`.
    pub fn new(setup: LcoreSetup, slots: Vec<PortSlot<P>>, stack: NicStack<P::Buf>) -> Self {
        let LcoreSetup {
            name,
            core,
            mode,
            burst,
            clock,
            host,
        } = setup;
        let burst = burst.max(1);
        let report = LcoreReport {
            name: name.clone(),
            core,
            ports: slots
                .iter()
                .map(|s| PortReport {
                    name: s.name.clone(),
                    index: s.index,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let n = slots.len();
        NicLcore {
            name,
            core,
            published: Arc::new(Mutex::new(report.clone())),
            report,
            rx: (0..n).map(|_| Vec::with_capacity(burst)).collect(),
            verdicts: vec![Verdict::Pass; burst],
            ports: LcorePorts::new(slots, host, burst),
            stack,
            mode,
            burst,
            clock,
            chain: OffloadChain::new(),
            keep: Vec::with_capacity(burst),
            last_start: 0,
            last_busy: false,
            backoff: crate::idle::Backoff::new(
                crate::idle::PollMode::Spin,
                crate::idle::IdlePolicy::default(),
            ),
            steer: None,
            steered: vec![0; n],
        }
    }

    /// Joins the lcores of `steer` as lcore `me`: frames for the host that belong to
    /// another lcore's connections go to it, and what the others hand this lcore is
    /// received in its next iteration ([`crate::steer`]).
    pub fn set_steer(&mut self, steer: Arc<Steer<P::Buf>>, me: usize) {
        self.steer = Some((steer, me));
    }

    /// How [`Self::run`] polls: `mode` (resolved; `Auto` spins) with `policy`. An adaptive
    /// lcore with a host link sleeps on the link's doorbell, so the host's frames wake it.
    pub fn set_polling(&mut self, mode: crate::idle::PollMode, policy: crate::idle::IdlePolicy) {
        let mut b = crate::idle::Backoff::new(mode, policy);
        if let Some(h) = &self.ports.host {
            b = b.with_doorbell(h.rx_doorbell());
        }
        self.backoff = b;
    }

    /// Makes the lcore's idle sleeps end when `w` sees an arrival (its ports' wake-up
    /// source, see [`crate::idle::WakeSource`]); no effect on a spinning lcore. The host
    /// link's doorbell ([`Self::doorbell`]) still ends them: `w` must listen to it.
    pub fn set_wake(&mut self, w: Box<dyn crate::idle::WakeSource>) {
        if self.backoff.adaptive() {
            self.backoff.set_wake(w);
        }
    }

    /// The doorbell of the host link, which the host rings when it hands the lcore a frame.
    pub fn doorbell(&self) -> Option<Arc<crate::idle::Doorbell>> {
        self.ports.host.as_ref().map(|h| h.rx_doorbell())
    }

    /// The idle policy, for a loop that drives [`Self::poll_once`] itself (a `shared`
    /// lcore runs the host's iteration too and backs off on both); its statistics are
    /// published in the report's `idle`.
    pub fn backoff_mut(&mut self) -> &mut crate::idle::Backoff {
        &mut self.backoff
    }

    /// Whether the last [`Self::poll_once`] did anything (received, sent, handled a host
    /// frame or a timer): the busy signal of a loop's idle policy.
    pub fn was_busy(&self) -> bool {
        self.last_busy
    }

    /// Installs the offload chain (replacing the current one, empty at first).
    pub fn set_offloads(&mut self, chain: OffloadChain<P::Buf>) {
        self.chain = chain;
    }

    /// The offload chain.
    pub fn offloads(&self) -> &OffloadChain<P::Buf> {
        &self.chain
    }

    /// The offload chain, writable.
    pub fn offloads_mut(&mut self) -> &mut OffloadChain<P::Buf> {
        &mut self.chain
    }

    /// The first offload of type `T` on the chain (its state and counters).
    pub fn offload<T: Offload<P::Buf>>(&self) -> Option<&T> {
        self.chain.get()
    }

    /// The earliest deadline of any offload (for callers that jump in virtual time).
    pub fn next_deadline(&self) -> Option<u64> {
        self.chain.next_deadline()
    }

    /// The shared report the loop publishes into.
    pub fn report_handle(&self) -> Arc<Mutex<LcoreReport>> {
        self.published.clone()
    }

    /// The lcore's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The core to pin to.
    pub fn core(&self) -> Option<usize> {
        self.core
    }

    /// The lcore's time source (the `now` its stack sees).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The NIC stack (for tests: ARP table, counters).
    pub fn stack(&self) -> &NicStack<P::Buf> {
        &self.stack
    }

    /// The NIC stack, writable (for tests and the runtime: e.g. `resolve`).
    pub fn stack_mut(&mut self) -> &mut NicStack<P::Buf> {
        &mut self.stack
    }

    /// Runs until `stop` is set or `max_iterations` (if any) have run; returns the final
    /// report. Checks `stop` every [`PUBLISH_EVERY`] iterations and after each idle sleep;
    /// between idle iterations it does what [`Self::set_polling`] chose (spin by default).
    pub fn run(&mut self, stop: &AtomicBool, max_iterations: Option<u64>) -> LcoreReport {
        let limit = max_iterations.unwrap_or(u64::MAX);
        while self.report.iterations < limit {
            self.poll_once();
            let slept = self.backoff.after(self.last_busy);
            if self.report.iterations.is_multiple_of(PUBLISH_EVERY) {
                self.publish();
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            } else if slept && stop.load(Ordering::Relaxed) {
                // A sleeping loop runs few iterations: it checks at each sleep.
                break;
            }
        }
        self.finish()
    }

    /// Flushes captures and returns the final report (also published).
    pub fn finish(&mut self) -> LcoreReport {
        self.charge_last_iteration(rdtsc());
        self.ports.flush_captures();
        self.publish();
        self.report.clone()
    }

    fn publish(&mut self) {
        self.report.idle = self.backoff.stats;
        self.report.stack = *self.stack.counters();
        self.chain.report(&mut self.report.offloads);
        for (r, s) in self.report.ports.iter_mut().zip(&self.ports.slots) {
            r.queue = s.port.stats();
        }
        if let Ok(mut p) = self.published.lock() {
            p.clone_from(&self.report);
        }
    }

    /// One iteration of the loop (the steps of the module documentation); returns the
    /// number of frames received.
    pub fn poll_once(&mut self) -> usize {
        let t0 = rdtsc();
        self.charge_last_iteration(t0);
        self.report.iterations += 1;
        let mut marks = Marks {
            clock: StageClock::start_at(t0),
            on: self.report.iterations.is_multiple_of(STAGE_SAMPLE_EVERY),
            busy: false,
        };
        let mut now = Now::default();
        let received = self.rx_step();
        if received > 0 {
            marks.mark(&mut self.report.cycles, Stage::Rx);
            for i in 0..self.ports.slots.len() {
                if !self.rx[i].is_empty() {
                    self.classify(i, &mut now);
                }
            }
            marks.mark(&mut self.report.cycles, Stage::Classify);
        }
        if self.ports.host.is_some() && self.host_rx(&mut now) > 0 {
            marks.mark(&mut self.report.cycles, Stage::HostTx);
        }
        if self.timers(&mut now) {
            marks.mark(&mut self.report.cycles, Stage::Timers);
        }
        if self.ports.tx(&mut self.report) {
            marks.mark(&mut self.report.cycles, Stage::Tx);
        } else if received == 0 {
            marks.mark(&mut self.report.cycles, Stage::Idle);
        }
        self.last_busy = marks.busy;
        received
    }

    /// Step `rx`: one receive burst from every port queue, then up to a burst of the frames
    /// other lcores steered here, each with the frames of the port it arrived on.
    #[inline(always)]
    fn rx_step(&mut self) -> usize {
        let mut received = 0;
        for (slot, rx) in self.ports.slots.iter_mut().zip(self.rx.iter_mut()) {
            received += slot.port.rx_burst(rx, self.burst);
        }
        if let Some((st, me)) = &self.steer {
            if !st.is_empty(*me) {
                received += self.steered_rx();
            }
        }
        received
    }

    /// Takes up to a burst of the frames other lcores steered to this one into the receive
    /// vectors of their ports. Out of line: it runs only when some are waiting.
    #[inline(never)]
    fn steered_rx(&mut self) -> usize {
        let Some((st, me)) = &self.steer else {
            return 0;
        };
        let mut took = 0;
        while took < self.burst {
            let Some((port, buf)) = st.pop(*me) else {
                break;
            };
            took += 1;
            self.report.steered_in += 1;
            match self.ports.slot_of(port) {
                Some(i) => {
                    self.rx[i].push(buf);
                    self.steered[i] += 1;
                }
                None => self.report.steer_dropped += 1,
            }
        }
        took
    }

    /// Hands `buf`, a frame for the host received on port `index`, to the lcore that owns
    /// its connection when that is another one; gives it back otherwise.
    #[inline(always)]
    fn steer_away(&mut self, index: usize, buf: P::Buf) -> Option<P::Buf> {
        let Some((st, me)) = &self.steer else {
            return Some(buf);
        };
        match st.owner(buf.data()) {
            Some(o) if o != *me => {
                match st.push(o, index, buf) {
                    Ok(()) => self.report.steered_out += 1,
                    Err(_) => self.report.steer_dropped += 1,
                }
                None
            }
            _ => Some(buf),
        }
    }

    /// Step `classify` for the frames received on slot `i`: captured, offered to the
    /// chain's fast paths, checked by the NIC stack, and each moved where its verdict says.
    #[inline(always)]
    fn classify(&mut self, i: usize, now: &mut Now) {
        let mut rx = std::mem::take(&mut self.rx[i]);
        // Steered frames were captured on the lcore they arrived at.
        let steered = std::mem::take(&mut self.steered[i]);
        let peer = self.ports.slots[i].peer;
        if let (Mode::Io, Some(p)) = (self.mode, peer) {
            self.report.forwarded += rx.len() as u64;
            self.ports.tx[p].append(&mut rx);
            self.rx[i] = rx;
            return;
        }
        if self.ports.slots[i].pcap.is_some() {
            let slot = &self.ports.slots[i];
            for buf in &rx[..rx.len() - steered] {
                capture(&slot.pcap, &mut self.report.pcap_errors, buf.data());
            }
        }
        if self.mode == Mode::Nic && self.chain.wants_burst() {
            self.fast_paths(i, &mut rx, now.get(&self.clock));
        }
        if !rx.is_empty() {
            let fwd = match (self.mode, peer) {
                (Mode::Forward, Some(p)) if p != i => Some(p),
                _ => None,
            };
            self.stack_checks(i, fwd, &mut rx, now);
        }
        self.rx[i] = rx;
    }

    /// The chain's burst hooks over the frames of slot `i`: the frames a hook decides leave
    /// here, without the general parse, the stack's checks and the per-frame chain. `rx`
    /// keeps the frames no hook took, in order. Out of line: it runs only while an offload
    /// with a burst hook is active.
    #[inline(never)]
    fn fast_paths(&mut self, i: usize, rx: &mut Vec<P::Buf>, now: u64) {
        let n = rx.len();
        if self.verdicts.len() < n {
            self.verdicts.resize(n, Verdict::Pass);
        }
        self.verdicts[..n].fill(Verdict::Pass);
        let mut verdicts = BurstVerdicts::new(&mut self.verdicts[..n]);
        let port = self.ports.slots[i].index;
        let mut cx = OffloadCtx {
            now,
            stack: &mut self.stack,
            io: &mut self.ports,
        };
        if !self.chain.wire_burst(&mut cx, port, rx, &mut verdicts) {
            return;
        }
        // Every frame to one port: the burst moves in one append.
        if let Some(j) = verdicts
            .all_out()
            .and_then(|p| self.ports.slot_of(usize::from(p)))
        {
            self.ports.tx[j].append(rx);
            return;
        }
        self.keep.clear();
        // The slot of the last `Out` port: a burst's frames mostly leave by one port.
        let mut out: Option<(u16, usize)> = None;
        for (buf, &v) in rx.drain(..).zip(self.verdicts.iter()) {
            match v {
                Verdict::Pass => self.keep.push(buf),
                Verdict::Out(p) => {
                    let j = match out {
                        Some((q, j)) if q == p => Some(j),
                        _ => self.ports.slot_of(usize::from(p)),
                    };
                    match j {
                        Some(j) => {
                            out = Some((p, j));
                            self.ports.tx[j].push(buf);
                        }
                        None => self.report.offload_out_dropped += 1,
                    }
                }
                _ => self.ports.deliver(&mut self.report, i, buf, v),
            }
        }
        std::mem::swap(rx, &mut self.keep);
    }

    /// The NIC stack's checks over the frames of slot `i`, then each frame where its
    /// verdict says: what the stack passes goes to the paired port `fwd` (forwarding), or
    /// to the chain's `wire_rx` while some offload is active, or to the host.
    #[inline(always)]
    fn stack_checks(&mut self, i: usize, fwd: Option<usize>, rx: &mut Vec<P::Buf>, now: &mut Now) {
        let index = self.ports.slots[i].index;
        let n = rx.len();
        // Decide every frame first: transit frames in one tight pass; a burst that is all
        // transit (the forwarding common case) then moves to the peer's tx queue in one
        // append, with no clock read and no per-frame verdicts.
        let transit = self.stack.transit_mask(index, rx);
        if let (Some(p), Some(t)) = (fwd, transit) {
            if (1..=64).contains(&n) && t == u64::MAX >> (64 - n) {
                self.report.forwarded += n as u64;
                self.ports.tx[p].append(rx);
                return;
            }
        }
        if self.verdicts.len() < n {
            self.verdicts.resize(n, Verdict::Pass);
        }
        let now = now.get(&self.clock);
        let all_pass = match transit {
            Some(t) => self
                .stack
                .rx_burst_rest(index, rx, now, &mut self.verdicts, t),
            None => self.stack.rx_burst(index, rx, now, &mut self.verdicts),
        };
        if let (Some(p), true) = (fwd, all_pass) {
            self.report.forwarded += n as u64;
            self.ports.tx[p].append(rx);
            return;
        }
        for (k, mut buf) in rx.drain(..).enumerate() {
            let v = match self.verdicts.get(k).copied() {
                Some(Verdict::Pass) => {
                    if let Some(p) = fwd {
                        self.report.forwarded += 1;
                        self.ports.tx[p].push(buf);
                        continue;
                    }
                    // Data path step 3: the chain, when some offload has state that traffic
                    // can hit (out of line, so that the loop stays small while every offload
                    // is idle).
                    if self.chain.any_active() {
                        let cx = OffloadCtx {
                            now,
                            stack: &mut self.stack,
                            io: &mut self.ports,
                        };
                        offer_wire_frame(cx, &mut self.chain, index, &mut buf)
                    } else {
                        Verdict::Pass
                    }
                }
                Some(v) => v,
                None => Verdict::Drop(DropReason::Unsupported),
            };
            let buf = match v {
                Verdict::Pass | Verdict::ToHost if self.steer.is_some() => {
                    match self.steer_away(index, buf) {
                        Some(b) => b,
                        None => continue,
                    }
                }
                _ => buf,
            };
            self.ports.deliver(&mut self.report, i, buf, v);
        }
    }

    /// Step `host_rx`: up to a burst of frames from the host link. Control messages, and
    /// TCP frames while some offload is active, go to the chain first; what goes on to a
    /// wire gets the stack's transmit path. Returns the number taken.
    ///
    /// Frames from the host wait in the link while the ports' transmit queues still hold what
    /// they would not take last iteration (see [`HOST_TX_HOLD`]): the host's stack then holds
    /// its segments back too, instead of the NIC dropping them. What this iteration's receive
    /// added (replies of the NIC or its offloads) does not count: a busy receive side never
    /// shuts the host out.
    fn host_rx(&mut self, now: &mut Now) -> usize {
        let held: usize = self.ports.tx_held.iter().sum();
        let limit = if held == 0 { self.burst } else { 0 };
        let mut took = 0;
        while took < limit {
            let Some((port, mut frame)) = self.ports.host.as_mut().and_then(|h| h.recv()) else {
                break;
            };
            took += 1;
            self.report.from_host += 1;
            // One EtherType compare on the common path (a host TCP frame, every offload
            // idle); the message header is checked only for control frames.
            let control = frame
                .get(12..14)
                .is_some_and(|t| is_control_ethertype(u16::from_be_bytes([t[0], t[1]])));
            let out = if control || self.chain.any_active() {
                offer_host_frame(
                    OffloadCtx {
                        now: now.get(&self.clock),
                        stack: &mut self.stack,
                        io: &mut self.ports,
                    },
                    &mut self.chain,
                    &mut self.report,
                    port,
                    &mut frame,
                )
            } else {
                Some(port)
            };
            if let Some(port) = out {
                self.host_to_wire(usize::from(port), &frame, now.get(&self.clock));
            }
            if let Some(h) = self.ports.host.as_mut() {
                h.recycle(frame);
            }
        }
        took
    }

    /// A host frame for port `port` through the stack's transmit path (checksums, TSO, the
    /// neighbour's MAC) onto that port's transmit queue.
    #[inline(always)]
    fn host_to_wire(&mut self, port: usize, frame: &[u8], now: u64) {
        let Some(slot) = self.ports.slot_of(port) else {
            self.report.from_host_dropped += 1;
            return;
        };
        let LcorePorts { slots, tx, .. } = &mut self.ports;
        let port_q = &mut slots[slot].port;
        let mut alloc = || port_q.alloc();
        let _ = self
            .stack
            .host_tx_frame(port, frame, now, &mut alloc, &mut tx[slot]);
    }

    /// Step `timers`: the stack's housekeeping whenever an address is being resolved (ARP
    /// requests and retries, host frames whose neighbour was just learnt), and the chain's
    /// periodic work (timers, transmission, notifications to the host: data path steps 5 and
    /// 6). Returns whether either queued a frame.
    #[inline(always)]
    fn timers(&mut self, now: &mut Now) -> bool {
        let stack_pending = self.stack.has_pending();
        let chain_active = self.chain.any_active();
        if !stack_pending && !chain_active {
            return false;
        }
        let now = now.get(&self.clock);
        let before = self.ports.queued();
        if stack_pending {
            let LcorePorts { slots, tx, .. } = &mut self.ports;
            for (i, slot) in slots.iter_mut().enumerate() {
                let port_q = &mut slot.port;
                let mut alloc = || port_q.alloc();
                self.stack.poll_tx(slot.index, now, &mut alloc, &mut tx[i]);
            }
        }
        if chain_active {
            self.chain.poll(&mut OffloadCtx {
                now,
                stack: &mut self.stack,
                io: &mut self.ports,
            });
        }
        self.ports.queued() != before
    }

    /// Ends the current iteration's time. A loop that does other work between iterations
    /// (a `shared` lcore runs the host stack's iteration there) calls this right after
    /// [`Self::poll_once`], so that the busy and idle cycles are the NIC's own and the other
    /// work's time is not charged to the NIC; the next `poll_once` starts a new iteration.
    pub fn end_iteration(&mut self) {
        self.charge_last_iteration(rdtsc());
        self.last_start = 0;
    }

    /// Charges the cycles from the previous iteration's start to `now` to busy or idle.
    #[inline(always)]
    fn charge_last_iteration(&mut self, now: u64) {
        if self.last_start != 0 {
            let d = now.wrapping_sub(self.last_start);
            if self.last_busy {
                self.report.busy_cycles += d;
            } else {
                self.report.idle_cycles += d;
            }
        }
        self.last_start = now;
    }
}

/// The stage marks of one loop iteration: TSC reads only when `on` (a sampled iteration,
/// see [`STAGE_SAMPLE_EVERY`]); `busy` records whether any stage but `Idle` was marked.
struct Marks {
    clock: StageClock,
    on: bool,
    busy: bool,
}

impl Marks {
    #[inline(always)]
    fn mark(&mut self, acc: &mut StageCycles, stage: Stage) {
        self.busy |= stage != Stage::Idle;
        if self.on {
            self.clock.mark(acc, stage);
        }
    }
}

/// Offers a wire frame that passed the NIC stack, arrived on port `port`, to the offload
/// chain, with its headers parsed once for all offloads (data path step 3). Out of line: it
/// runs only while some offload is active.
#[inline(never)]
fn offer_wire_frame<B: PacketBuf>(
    mut cx: OffloadCtx<'_, B>,
    chain: &mut OffloadChain<B>,
    port: usize,
    buf: &mut B,
) -> Verdict {
    let Ok(hdr) = parse_headers(buf.data()) else {
        return Verdict::Pass;
    };
    let mut f = RxFrame {
        port,
        buf,
        hdr: &hdr,
    };
    chain.wire_rx(&mut cx, &mut f)
}

/// Offers a frame from the host to the offload chain: a control message (by type) to the
/// offload that takes it, an IPv4/TCP frame to the active offloads. Returns the port the frame
/// goes out of (the one the host named unless an offload redirected it), or `None` when it
/// ends here (taken, returned to the host, or a control message: those never reach a wire;
/// one nobody took is counted in `report`). Out of line: it runs only for control messages
/// and while some offload is active.
#[inline(never)]
fn offer_host_frame<B: PacketBuf>(
    mut cx: OffloadCtx<'_, B>,
    chain: &mut OffloadChain<B>,
    report: &mut LcoreReport,
    port: u16,
    frame: &mut LinkBuf,
) -> Option<u16> {
    let kind = classify(frame);
    let control = matches!(kind, FrameKind::Control(_) | FrameKind::BadControl(_));
    let v = match kind {
        FrameKind::Control(ty) => chain.host_control(&mut cx, port, ty, frame),
        FrameKind::BadControl(_) => Verdict::Pass,
        _ => match HostTcp::find(frame) {
            Some(t) => chain.host_tcp(&mut cx, port, frame.as_vec_mut(), t),
            None => Verdict::Pass,
        },
    };
    match (control, v) {
        (true, Verdict::Pass) => {
            report.control_unhandled += 1;
            None
        }
        (true, _) | (false, Verdict::Consumed | Verdict::Drop(_)) => None,
        (false, Verdict::Pass) => Some(port),
        (false, Verdict::Out(p)) => Some(p),
        (false, Verdict::Reply | Verdict::ToHost) => {
            let _ = cx.io.to_host(port, frame);
            None
        }
    }
}
