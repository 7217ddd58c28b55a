//! The NIC lcore: a busy-poll, run-to-completion loop over the port queues it owns
//! (`docs/architecture.md`, "Life of a frame through an NIC lcore"): rx burst → parse →
//! classify → the offload chain → tx burst, with the cycles of each stage counted.
//!
//! One [`NicLcore`] owns one queue of every port, its own [`NicStack`] and its own
//! [`OffloadChain`], so the loop takes no locks. The loop knows no offload by name: frames
//! that pass the NIC stack's own duties (ARP, ICMP echo, validation), control messages and
//! TCP frames from the host, and the periodic poll all go to the chain, whose verdicts say
//! where each frame goes. What it reports is published every [`PUBLISH_EVERY`] iterations
//! into a shared [`LcoreReport`] so that the main thread can print periodic statistics.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use offload_api::is_control_ethertype;
use offload_api::link::{LinkBuf, NicEnd};
use offload_api::msg::{classify, FrameKind};

use crate::buf::PacketBuf;
use crate::clock::Clock;
use crate::cycles::{rdtsc, Stage, StageClock, StageCycles};
use crate::net::parse::{parse_headers, DropReason};
use crate::net::stack::{NicStack, StackCounters};
use crate::offload::splice::SpliceOffload;
use crate::offload::{
    HostTcp, Offload, OffloadChain, OffloadCtx, OffloadIo, OffloadReport, RxFrame, Verdict,
    VerdictCounts,
};
use crate::pcap::PcapWriter;
use crate::port::{Port, QueueStats};

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

/// One port queue owned by an lcore.
pub struct PortSlot<P: Port> {
    /// The queue.
    pub port: P,
    /// The port's index in the configuration (and in the [`NicStack`]).
    pub index: usize,
    /// The port's name.
    pub name: String,
    /// Slot that frames are forwarded to in [`Mode::Forward`].
    pub peer: Option<usize>,
    /// Capture of what this port sends and receives.
    pub pcap: Option<Arc<Mutex<PcapWriter>>>,
}

/// Per-port counters of one lcore.
#[derive(Clone, Debug, Default)]
pub struct PortReport {
    /// Port name.
    pub name: String,
    /// Port index.
    pub index: usize,
    /// Queue counters from the backend.
    pub queue: QueueStats,
    /// Frames `tx_burst` would not take (freed and counted; on an lcore with a host link,
    /// only those beyond [`HOST_TX_HOLD`]).
    pub tx_full_drops: u64,
}

/// What an lcore has done so far.
#[derive(Clone, Debug, Default)]
pub struct LcoreReport {
    /// Lcore name.
    pub name: String,
    /// CPU core it is pinned to.
    pub core: Option<usize>,
    /// Per-port counters.
    pub ports: Vec<PortReport>,
    /// NIC stack counters (ARP, ICMP, drops by reason, ...).
    pub stack: StackCounters,
    /// Cycles per stage, from the sampled iterations only (one in [`STAGE_SAMPLE_EVERY`]):
    /// read the shares of the stages from it, not totals.
    pub cycles: StageCycles,
    /// Cycles of every iteration that received, sent or handled anything (exact: one TSC
    /// read per iteration, charged to the iteration that ends there).
    pub busy_cycles: u64,
    /// Cycles of every iteration that found nothing to do (exact, as `busy_cycles`).
    pub idle_cycles: u64,
    /// Frames forwarded to a peer port (forward mode).
    pub forwarded: u64,
    /// Frames handed to the host.
    pub to_host: u64,
    /// Frames for the host dropped: no host channel, or it was full.
    pub to_host_dropped: u64,
    /// Frames taken from the host.
    pub from_host: u64,
    /// One report per offload on the chain, in chain order: the verdicts it returned and
    /// its own counters.
    pub offloads: Vec<OffloadReport>,
    /// Control messages from the host that no offload took, or whose header was unusable
    /// (dropped: a host ↔ NIC EtherType never goes to a wire).
    pub control_unhandled: u64,
    /// Frames an offload sent out of a port this lcore does not serve (dropped).
    pub offload_out_dropped: u64,
    /// Frames from the host for a port this lcore does not serve (the stack's counters hold
    /// the other drops: no buffer, unresolved, too large, ...).
    pub from_host_dropped: u64,
    /// Frames capture failed to write.
    pub pcap_errors: u64,
    /// Loop iterations.
    pub iterations: u64,
    /// Time the loop gave back while idle (adaptive polling, [`crate::idle`]); in a
    /// `shared` lcore, the combined loop's.
    pub idle: crate::idle::IdleStats,
}

impl LcoreReport {
    /// The report of the offload called `name`, if the chain has one.
    pub fn offload(&self, name: &str) -> Option<&OffloadReport> {
        self.offloads.iter().find(|o| o.name == name)
    }

    /// Frames received on all ports.
    pub fn rx_packets(&self) -> u64 {
        self.ports.iter().map(|p| p.queue.rx_packets).sum()
    }
    /// Frames sent on all ports.
    pub fn tx_packets(&self) -> u64 {
        self.ports.iter().map(|p| p.queue.tx_packets).sum()
    }
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
    slots: Vec<PortSlot<P>>,
    stack: NicStack<P::Buf>,
    mode: Mode,
    burst: usize,
    clock: Clock,
    host: Option<NicEnd>,
    report: LcoreReport,
    published: Arc<Mutex<LcoreReport>>,
    /// Frames received this iteration, per slot.
    rx: Vec<Vec<P::Buf>>,
    /// What the stack decided for each frame of the current rx burst.
    verdicts: Vec<Verdict>,
    tx: Vec<Vec<P::Buf>>,
    /// Frames at the front of each `tx` queue held from an earlier iteration (already
    /// captured).
    tx_held: Vec<usize>,
    /// The offloads, in order (empty: the NIC does only its L2/L3 duties).
    chain: OffloadChain<P::Buf>,
    /// The frames of a burst that the splice fast path left to the general path.
    keep: Vec<P::Buf>,
    /// The splice fast path's verdicts, added to the splice offload's in reports (the
    /// chain never sees those frames).
    splice_fast: VerdictCounts,
    /// TSC at the start of the last iteration (0 before the first).
    last_start: u64,
    /// Whether the last iteration did anything.
    last_busy: bool,
    /// What [`Self::run`] does between idle iterations.
    backoff: crate::idle::Backoff,
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
            tx: (0..n).map(|_| Vec::with_capacity(burst * 4)).collect(),
            tx_held: vec![0; n],
            rx: (0..n).map(|_| Vec::with_capacity(burst)).collect(),
            verdicts: vec![Verdict::Pass; burst.max(1)],
            slots,
            stack,
            mode,
            burst: burst.max(1),
            clock,
            host,
            chain: OffloadChain::new(),
            keep: Vec::with_capacity(burst.max(1)),
            splice_fast: VerdictCounts::default(),
            last_start: 0,
            last_busy: false,
            backoff: crate::idle::Backoff::new(
                crate::idle::PollMode::Spin,
                crate::idle::IdlePolicy::default(),
            ),
        }
    }

    /// How [`Self::run`] polls: `mode` (resolved; `Auto` spins) with `policy`. An adaptive
    /// lcore with a host link sleeps on the link's doorbell, so the host's frames wake it.
    pub fn set_polling(&mut self, mode: crate::idle::PollMode, policy: crate::idle::IdlePolicy) {
        let mut b = crate::idle::Backoff::new(mode, policy);
        if let Some(h) = &self.host {
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
        self.host.as_ref().map(|h| h.rx_doorbell())
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
        for s in &self.slots {
            if let Some(p) = &s.pcap {
                if let Ok(mut w) = p.lock() {
                    let _ = w.flush();
                }
            }
        }
        self.publish();
        self.report.clone()
    }

    fn publish(&mut self) {
        self.report.idle = self.backoff.stats;
        self.report.stack = *self.stack.counters();
        self.chain.report(&mut self.report.offloads);
        if let Some(r) = self.report.offloads.iter_mut().find(|o| o.name == "splice") {
            r.verdicts.wire_out += self.splice_fast.wire_out;
            r.verdicts.wire_consumed += self.splice_fast.wire_consumed;
        }
        for (r, s) in self.report.ports.iter_mut().zip(&self.slots) {
            r.queue = s.port.stats();
        }
        if let Ok(mut p) = self.published.lock() {
            p.clone_from(&self.report);
        }
    }

    fn capture(pcap: &Option<Arc<Mutex<PcapWriter>>>, errors: &mut u64, frame: &[u8]) {
        if let Some(p) = pcap {
            let ts = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let ok = match p.lock() {
                Ok(mut w) => w.write(ts, frame).is_ok(),
                Err(_) => false,
            };
            if !ok {
                *errors += 1;
            }
        }
    }

    /// Runs the stack over the frames received on slot `i` and moves each where it goes.
    /// `now` is read from the clock on first need (a burst that is all transit needs none).
    #[inline(always)]
    fn classify(&mut self, i: usize, now: &mut Option<u64>) {
        let index = self.slots[i].index;
        let peer = self.slots[i].peer;
        let mut rx = std::mem::take(&mut self.rx[i]);
        let n = rx.len();
        if let (Mode::Io, Some(p)) = (self.mode, peer) {
            self.report.forwarded += n as u64;
            self.tx[p].append(&mut rx);
            self.rx[i] = rx;
            return;
        }

        if self.slots[i].pcap.is_some() {
            for buf in &rx {
                Self::capture(
                    &self.slots[i].pcap,
                    &mut self.report.pcap_errors,
                    buf.data(),
                );
            }
        }
        let fwd = match (self.mode, peer) {
            (Mode::Forward, Some(p)) if p != i => Some(p),
            _ => None,
        };
        // Segments of spliced pairs leave right away, without the general parse, the
        // stack's checks and the chain (AccelTCP §4.3); the rest of the burst goes on below
        // exactly as without splicing.
        if self.mode == Mode::Nic
            && self
                .chain
                .get::<SpliceOffload>()
                .is_some_and(|s| !s.table().is_empty())
        {
            let now = *now.get_or_insert_with(|| self.clock.now_ns());
            let NicLcore {
                slots,
                tx,
                host,
                stack,
                chain,
                report,
                keep,
                splice_fast,
                ..
            } = self;
            splice_burst(
                chain,
                stack,
                LcoreIo { slots, tx, host },
                report,
                splice_fast,
                now,
                &mut rx,
                keep,
            );
            if rx.is_empty() {
                self.rx[i] = rx;
                return;
            }
        }
        let n = rx.len();
        // Decide every frame first: transit frames in one tight pass; a burst that is all
        // transit (the forwarding common case) then moves to the peer's tx queue in one
        // append, with no clock read and no per-frame verdicts.
        let transit = self.stack.transit_mask(index, &rx);
        if let (Some(p), Some(t)) = (fwd, transit) {
            if (1..=64).contains(&n) && t == u64::MAX >> (64 - n) {
                self.report.forwarded += n as u64;
                self.tx[p].append(&mut rx);
                self.rx[i] = rx;
                return;
            }
        }
        let now = *now.get_or_insert_with(|| self.clock.now_ns());
        let all_pass = match transit {
            Some(t) => self
                .stack
                .rx_burst_rest(index, &mut rx, now, &mut self.verdicts, t),
            None => self.stack.rx_burst(index, &mut rx, now, &mut self.verdicts),
        };
        match fwd {
            Some(p) if all_pass => {
                self.report.forwarded += n as u64;
                self.tx[p].append(&mut rx);
            }
            _ => {
                let NicLcore {
                    slots,
                    tx,
                    host,
                    stack,
                    chain,
                    report,
                    verdicts,
                    ..
                } = self;
                for (k, mut buf) in rx.drain(..).enumerate() {
                    // The NIC stack's verdict; what it passes goes to forwarding or to the
                    // offload chain (data path step 3), when some offload has state that
                    // traffic can hit (out of line, so that the loop stays small while every
                    // offload is idle).
                    let v = match verdicts.get(k).copied() {
                        Some(Verdict::Pass) => {
                            if let Some(p) = fwd {
                                report.forwarded += 1;
                                tx[p].push(buf);
                                continue;
                            }
                            if chain.any_active() {
                                offer_wire_frame(
                                    chain, stack, slots, tx, host, now, index, &mut buf,
                                )
                            } else {
                                Verdict::Pass
                            }
                        }
                        Some(v) => v,
                        None => Verdict::Drop(DropReason::Unsupported),
                    };
                    match v {
                        Verdict::Pass | Verdict::ToHost => {
                            let sent = host
                                .as_mut()
                                .is_some_and(|h| h.send(index as u16, buf.data()).is_ok());
                            if sent {
                                report.to_host += 1
                            } else {
                                report.to_host_dropped += 1
                            }
                        }
                        Verdict::Consumed | Verdict::Drop(_) => {}
                        Verdict::Reply => tx[i].push(buf),
                        Verdict::Out(p) => match slots.iter().position(|s| s.index == p as usize) {
                            Some(j) => tx[j].push(buf),
                            None => report.offload_out_dropped += 1,
                        },
                    }
                }
            }
        }
        self.rx[i] = rx;
    }

    /// One iteration of the loop; returns the number of frames received.
    pub fn poll_once(&mut self) -> usize {
        let t0 = rdtsc();
        self.charge_last_iteration(t0);
        self.report.iterations += 1;
        let mut clock = Marks {
            clock: StageClock::start_at(t0),
            on: self.report.iterations.is_multiple_of(STAGE_SAMPLE_EVERY),
            busy: false,
        };
        let mut received = 0;
        for (slot, rx) in self.slots.iter_mut().zip(self.rx.iter_mut()) {
            received += slot.port.rx_burst(rx, self.burst);
        }
        let mut now_ns = None;
        if received > 0 {
            clock.mark(&mut self.report.cycles, Stage::Rx);
            for i in 0..self.slots.len() {
                if !self.rx[i].is_empty() {
                    self.classify(i, &mut now_ns);
                }
            }
            clock.mark(&mut self.report.cycles, Stage::Classify);
        }

        if self.host.is_some() {
            let mut took = 0;
            // Frames from the host wait in the link while the ports' transmit queues still
            // hold what they would not take last iteration (see HOST_TX_HOLD): the host's
            // stack then holds its segments back too, instead of the NIC dropping them.
            // What this iteration's receive added (replies of the NIC or its offloads) does
            // not count: a busy receive side never shuts the host out.
            let held: usize = self.tx_held.iter().sum();
            let limit = if held == 0 { self.burst } else { 0 };
            while took < limit {
                let Some((mut port, mut frame)) = self.host.as_mut().and_then(|h| h.recv()) else {
                    break;
                };
                took += 1;
                self.report.from_host += 1;
                let NicLcore {
                    slots,
                    tx,
                    host,
                    stack,
                    chain,
                    report,
                    clock: lclock,
                    ..
                } = self;
                // One EtherType compare on the common path (a host TCP frame, every offload
                // idle); the message header is checked only for control frames.
                let control = frame
                    .get(12..14)
                    .is_some_and(|t| is_control_ethertype(u16::from_be_bytes([t[0], t[1]])));
                if control || chain.any_active() {
                    let now = *now_ns.get_or_insert_with(|| lclock.now_ns());
                    match offer_host_frame(
                        chain, stack, slots, tx, host, report, now, port, &mut frame,
                    ) {
                        Some(out) => port = out,
                        None => {
                            if let Some(h) = host.as_mut() {
                                h.recycle(frame);
                            }
                            continue;
                        }
                    }
                }
                let port = port as usize;
                let Some(slot) = self.slots.iter().position(|s| s.index == port) else {
                    self.report.from_host_dropped += 1;
                    continue;
                };
                let now = *now_ns.get_or_insert_with(|| self.clock.now_ns());
                let port_q = &mut self.slots[slot].port;
                let mut alloc = || port_q.alloc();
                let _ = self
                    .stack
                    .host_tx_frame(port, &frame, now, &mut alloc, &mut self.tx[slot]);
                if let Some(h) = self.host.as_mut() {
                    h.recycle(frame);
                }
            }
            if took > 0 {
                clock.mark(&mut self.report.cycles, Stage::HostTx);
            }
        }

        // Stack housekeeping whenever an address is being resolved: ARP requests and retries,
        // and host frames whose neighbour was just learnt.
        if self.stack.has_pending() {
            let now = now_ns.unwrap_or_else(|| self.clock.now_ns());
            let before: usize = self.tx.iter().map(Vec::len).sum();
            for (i, slot) in self.slots.iter_mut().enumerate() {
                let port_q = &mut slot.port;
                let mut alloc = || port_q.alloc();
                self.stack
                    .poll_tx(slot.index, now, &mut alloc, &mut self.tx[i]);
            }
            if self.tx.iter().map(Vec::len).sum::<usize>() != before {
                clock.mark(&mut self.report.cycles, Stage::Timers);
            }
        }

        // Offloads: timers, transmission, notifications to the host (steps 5 and 6).
        if self.chain.any_active() {
            let now = now_ns.unwrap_or_else(|| self.clock.now_ns());
            let NicLcore {
                slots,
                tx,
                chain,
                stack,
                host,
                ..
            } = self;
            let before: usize = tx.iter().map(Vec::len).sum();
            LcoreIo { slots, tx, host }.with_ctx(stack, now, |cx| chain.poll(cx));
            if self.tx.iter().map(Vec::len).sum::<usize>() != before {
                clock.mark(&mut self.report.cycles, Stage::Timers);
            }
        }

        let mut sent_any = false;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let q = &mut self.tx[i];
            if q.is_empty() {
                continue;
            }
            sent_any = true;
            if slot.pcap.is_some() {
                for b in q.iter().skip(self.tx_held[i]) {
                    Self::capture(&slot.pcap, &mut self.report.pcap_errors, b.data());
                }
            }
            slot.port.tx_burst(q);
            // With a host link, what the port would not take waits for the next iteration
            // (a driver's queue in front of a full ring), up to HOST_TX_HOLD frames; without
            // one (forwarding), or beyond that, it is dropped and counted.
            let keep = if self.host.is_some() { HOST_TX_HOLD } else { 0 };
            if q.len() > keep {
                self.report.ports[i].tx_full_drops += (q.len() - keep) as u64;
                q.truncate(keep);
            }
            self.tx_held[i] = q.len();
        }
        if sent_any {
            clock.mark(&mut self.report.cycles, Stage::Tx);
        } else if received == 0 {
            clock.mark(&mut self.report.cycles, Stage::Idle);
        }
        self.last_busy = clock.busy;
        received
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

/// The splice fast path over one received burst ([`SpliceOffload::wire_fast`]): frames of
/// spliced pairs are translated and queued to their out port (or dropped and counted);
/// `rx` keeps the others, in order, for the general path (`keep` is scratch space, left
/// empty). Out of line: it runs only while the splice table has pairs.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn splice_burst<P: Port>(
    chain: &mut OffloadChain<P::Buf>,
    stack: &mut NicStack<P::Buf>,
    io: LcoreIo<'_, P>,
    report: &mut LcoreReport,
    counts: &mut VerdictCounts,
    now: u64,
    rx: &mut Vec<P::Buf>,
    keep: &mut Vec<P::Buf>,
) {
    let Some(sp) = chain.get_mut::<SpliceOffload>() else {
        return;
    };
    let LcoreIo { slots, tx, host } = io;
    keep.clear();
    for mut buf in rx.drain(..) {
        let io = LcoreIo {
            slots: &mut *slots,
            tx: &mut *tx,
            host: &mut *host,
        };
        match io.with_ctx(stack, now, |cx| sp.wire_fast(cx, buf.data_mut())) {
            None => keep.push(buf),
            Some(Verdict::Out(p)) => {
                counts.wire_out += 1;
                match slots.iter().position(|s| s.index == usize::from(p)) {
                    Some(j) => tx[j].push(buf),
                    None => report.offload_out_dropped += 1,
                }
            }
            Some(_) => counts.wire_consumed += 1,
        }
    }
    sp.flush_counts();
    std::mem::swap(rx, keep);
}

/// Offers a wire frame that passed the NIC stack to the offload chain, with its headers
/// parsed once for all offloads (data path step 3). Out of line: it runs only while some
/// offload is active.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn offer_wire_frame<P: Port>(
    chain: &mut OffloadChain<P::Buf>,
    stack: &mut NicStack<P::Buf>,
    slots: &mut [PortSlot<P>],
    tx: &mut [Vec<P::Buf>],
    host: &mut Option<NicEnd>,
    now: u64,
    port: usize,
    buf: &mut P::Buf,
) -> Verdict {
    let Ok(hdr) = parse_headers(buf.data()) else {
        return Verdict::Pass;
    };
    let mut f = RxFrame {
        port,
        buf,
        hdr: &hdr,
    };
    LcoreIo { slots, tx, host }.with_ctx(stack, now, |cx| chain.wire_rx(cx, &mut f))
}

/// Offers a frame from the host to the offload chain: a control message (by type) to the
/// offload that takes it, an IPv4/TCP frame to the active offloads. Returns the port the frame
/// goes out of (the one the host named unless an offload redirected it), or `None` when it
/// ends here (taken, returned to the host, or a control message: those never reach a wire;
/// one nobody took is counted). Out of line: it runs only for control messages and while some
/// offload is active.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn offer_host_frame<P: Port>(
    chain: &mut OffloadChain<P::Buf>,
    stack: &mut NicStack<P::Buf>,
    slots: &mut [PortSlot<P>],
    tx: &mut [Vec<P::Buf>],
    host: &mut Option<NicEnd>,
    report: &mut LcoreReport,
    now: u64,
    port: u16,
    frame: &mut LinkBuf,
) -> Option<u16> {
    let kind = classify(frame);
    let control = matches!(kind, FrameKind::Control(_) | FrameKind::BadControl(_));
    let v = match kind {
        FrameKind::Control(ty) => LcoreIo { slots, tx, host }
            .with_ctx(stack, now, |cx| chain.host_control(cx, port, ty, frame)),
        FrameKind::BadControl(_) => Verdict::Pass,
        _ => match HostTcp::find(frame) {
            Some(t) => LcoreIo { slots, tx, host }.with_ctx(stack, now, |cx| {
                chain.host_tcp(cx, port, frame.as_vec_mut(), t)
            }),
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
            if let Some(h) = host.as_mut() {
                let _ = h.send(port, frame);
            }
            None
        }
    }
}

/// The lcore's ports and PCIe link as the offloads see them ([`OffloadIo`]).
struct LcoreIo<'a, P: Port> {
    slots: &'a mut [PortSlot<P>],
    tx: &'a mut [Vec<P::Buf>],
    host: &'a mut Option<NicEnd>,
}

impl<P: Port> LcoreIo<'_, P> {
    /// Runs `f` with the hooks' context over this I/O and `stack` at time `now`.
    #[inline]
    fn with_ctx<R>(
        mut self,
        stack: &mut NicStack<P::Buf>,
        now: u64,
        f: impl FnOnce(&mut OffloadCtx<'_, P::Buf>) -> R,
    ) -> R {
        f(&mut OffloadCtx {
            now,
            stack,
            io: &mut self,
        })
    }
}

impl<P: Port> OffloadIo for LcoreIo<'_, P> {
    fn to_port(&mut self, port: u16, frame: &[u8]) -> bool {
        let Some(i) = self.slots.iter().position(|s| s.index == port as usize) else {
            return false;
        };
        let Some(mut b) = self.slots[i].port.alloc() else {
            return false;
        };
        let ok = b.set_frame(frame);
        if ok {
            self.tx[i].push(b);
        }
        ok
    }

    fn to_host(&mut self, port: u16, frame: &[u8]) -> bool {
        self.host
            .as_mut()
            .is_some_and(|h| h.send(port, frame).is_ok())
    }
}

/// Cycles per packet: busy cycles over frames received (0 when none).
pub fn cycles_per_packet(r: &LcoreReport) -> f64 {
    let pkts = r.rx_packets();
    if pkts == 0 {
        0.0
    } else {
        r.busy_cycles as f64 / pkts as f64
    }
}
