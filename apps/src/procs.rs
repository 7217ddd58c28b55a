//! The process runtime of the host applications (`nicemu proxy`, `echo`, `loadgen`, `kv`):
//! a configuration's DPDK ports and NIC lcores, one host context per NIC lcore with its
//! application, Ctrl-C / `--duration`, and the numbers for one summary.
//!
//! The configuration's ports and lcores are built as for `nicemu run`, with a host channel
//! (the emulated PCIe link) per NIC lcore. Each NIC lcore k gets a host context k running an
//! application ([`HostApp`]): on its own thread, pinned to the configuration's k-th
//! `role = "host"` lcore when there is one, or in the NIC lcore's own loop when its role is
//! `shared` (the NIC iteration, then the host's, as `apps::node` does). The host contexts
//! read the NIC lcores' clock.
//!
//! CPU accounting in the spirit of AccelTCP Table 1 (the share of a core spent in the TCP
//! stack, in packet I/O and in the application): every host-loop iteration reads the TSC
//! around the stack's poll and the application's step, and the host link ([`TimedLink`])
//! reads it around every frame it takes from or hands to the NIC. An iteration in which
//! neither the stack nor the application did anything counts as idle; otherwise its cycles
//! go to *link* (frames over the emulated PCIe link, including the copy into the link's
//! buffer), *TCP stack* (the poll minus its link cycles) and *application* (the step minus
//! its link cycles: this includes the stack work of the application's own calls, such as
//! the transmit path of `write` and the poll inside `epoll_wait`). NIC lcores report busy
//! and idle cycles themselves; a `shared` lcore's NIC cycles end with its NIC iteration, so
//! its NIC and host figures add up to the loop's time without counting any cycle twice.

use hoststack::frame::HostLink;
use hoststack::Context;
use offload_api::link::{HostEnd, LinkBuf};

/// A host link that counts the TSC cycles spent in it (frames in and out).
pub struct TimedLink {
    inner: HostEnd,
    /// Cycles spent in `recv`, `send` and `send_built` so far.
    pub cycles: u64,
}

impl TimedLink {
    /// Wraps `inner`.
    pub fn new(inner: HostEnd) -> TimedLink {
        TimedLink { inner, cycles: 0 }
    }
}

impl HostLink for TimedLink {
    type Buf = LinkBuf;

    fn recv(&mut self) -> Option<(u16, LinkBuf)> {
        let t = dataplane::cycles::rdtsc();
        let r = self.inner.recv();
        self.cycles += dataplane::cycles::rdtsc().wrapping_sub(t);
        r
    }

    fn send(&mut self, port: u16, frame: &[u8]) -> bool {
        let t = dataplane::cycles::rdtsc();
        let r = HostLink::send(&mut self.inner, port, frame);
        self.cycles += dataplane::cycles::rdtsc().wrapping_sub(t);
        r
    }

    fn send_built(
        &mut self,
        port: u16,
        scratch: &mut Vec<u8>,
        build: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        let t = dataplane::cycles::rdtsc();
        let r = self.inner.send_built(port, scratch, build);
        self.cycles += dataplane::cycles::rdtsc().wrapping_sub(t);
        r
    }

    fn tx_space(&self) -> usize {
        self.inner.tx_space()
    }

    fn tx_pending(&self) -> usize {
        self.inner.tx_pending()
    }
}

/// A host context of the runtime.
pub type HostCtx = Context<TimedLink>;

/// An application on a host context, driven by the runtime's loop.
pub trait HostApp {
    /// What it publishes while it runs and returns at the end (counters).
    type Stats: Clone + Default + Send + 'static;
    /// One round of the application; `now_ns` is the context's clock. Returns the work
    /// done (0: nothing to do).
    fn step(&mut self, ctx: &mut HostCtx, now_ns: u64) -> usize;
    /// Stops: closes what it holds (the runtime then runs the stack a little longer so the
    /// closes go out).
    fn close(&mut self, ctx: &mut HostCtx);
    /// Its counters now.
    fn stats(&self, ctx: &HostCtx) -> Self::Stats;
    /// True when it has nothing more to do (the run ends once every host's app is
    /// finished).
    fn finished(&self) -> bool {
        false
    }
    /// Takes how its context's loop is woken from another thread (the doorbell the loop
    /// sleeps on), for applications whose contexts hand each other work. Ignored by
    /// default.
    fn set_waker(&mut self, _wake: std::sync::Arc<dyn Fn() + Send + Sync>) {}
}

/// Host-core cycles by component (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCpu {
    /// The TCP stack's poll (receive processing, timers, queued transmits).
    pub stack: u64,
    /// Frames over the host ↔ NIC link.
    pub link: u64,
    /// The application's step (with the stack calls it makes).
    pub app: u64,
    /// Iterations that found nothing to do.
    pub idle: u64,
}

impl HostCpu {
    /// All cycles.
    pub fn total(&self) -> u64 {
        self.stack + self.link + self.app + self.idle
    }

    /// Adds `o`.
    pub fn add(&mut self, o: &HostCpu) {
        self.stack += o.stack;
        self.link += o.link;
        self.app += o.app;
        self.idle += o.idle;
    }
}

/// One host context's results.
#[derive(Clone, Default)]
pub struct HostResult<S> {
    /// The application's counters.
    pub app: S,
    /// The host stack's counters.
    pub host: hoststack::stack::HostStats,
    /// The host stack's splice counters.
    pub splice: hoststack::stack::SpliceHostStats,
    /// Connections open at the end.
    pub conns: usize,
    /// TCP counters summed over its connections, open and freed (final report only: the
    /// interval snapshots leave it at zero).
    pub tcp: hoststack::tcp::tcb::TcbStats,
    /// Its core's cycles by component.
    pub cpu: HostCpu,
    /// Time its loop gave back while idle (adaptive polling; a `shared` lcore's is in the
    /// NIC lcore's report).
    pub idle: dataplane::idle::IdleStats,
}

/// The summary line of a host's TCP counters ([`HostResult::tcp`]): what was retransmitted
/// and why, and what the peers' segments looked like.
pub fn tcp_line(k: usize, t: &hoststack::tcp::tcb::TcbStats) -> String {
    format!(
        "host {k} tcp: segments in {} out {}, retransmitted {} (fast {}, sack {}, timeouts {}, tail-loss probes {}), recoveries {}, dup acks in {}, out of order in {}, out of window {}, window probes {}\n",
        t.segs_in,
        t.segs_out,
        t.retransmits,
        t.fast_retransmits,
        t.sack_retransmits,
        t.rto_expiries,
        t.tail_loss_probes,
        t.recoveries,
        t.dup_acks,
        t.ooo_segments,
        t.out_of_window,
        t.window_probes
    )
}

/// The CPU part of the summary: NIC lcores busy / idle (from their reports) and host cores
/// split into TCP stack, link, application and idle, as shares of their cycles and in
/// seconds of one core.
pub fn cpu_summary(
    nic: &[dataplane::lcore::LcoreReport],
    hosts: &[HostCpu],
    tsc_hz: u64,
) -> String {
    let pct = |part: u64, all: u64| {
        if all == 0 {
            0.0
        } else {
            100.0 * part as f64 / all as f64
        }
    };
    let secs = |c: u64| c as f64 / tsc_hz.max(1) as f64;
    let mut s = String::from("== cpu ==\n");
    let (mut busy, mut idle) = (0u64, 0u64);
    for r in nic {
        let all = r.busy_cycles + r.idle_cycles;
        busy += r.busy_cycles;
        idle += r.idle_cycles;
        s += &format!(
            "cpu nic {}: busy {:.1}% idle {:.1}% ({:.2} s)\n",
            r.name,
            pct(r.busy_cycles, all),
            pct(r.idle_cycles, all),
            secs(all)
        );
    }
    let mut sum = HostCpu::default();
    for (k, h) in hosts.iter().enumerate() {
        sum.add(h);
        s += &format!(
            "cpu host {k}: tcp stack {:.1}% link {:.1}% application {:.1}% idle {:.1}% ({:.2} s)\n",
            pct(h.stack, h.total()),
            pct(h.link, h.total()),
            pct(h.app, h.total()),
            pct(h.idle, h.total()),
            secs(h.total())
        );
    }
    let busy_host = sum.stack + sum.link + sum.app;
    s += &format!(
        "cpu total: nic busy {:.3} s idle {:.3} s; host busy {:.3} s (tcp stack {:.1}% link {:.1}% application {:.1}% of busy) idle {:.3} s\n",
        secs(busy),
        secs(idle),
        secs(busy_host),
        pct(sum.stack, busy_host),
        pct(sum.link, busy_host),
        pct(sum.app, busy_host),
        secs(sum.idle)
    );
    s
}

/// The CPU part of a host application's summary ([`cpu_summary`]) followed by its polling
/// line ([`idle_summary`]).
#[cfg(feature = "dpdk")]
pub fn outcome_cpu_lines<S>(out: &Outcome<S>) -> String {
    let cpu: Vec<_> = out.hosts.iter().map(|h| h.cpu).collect();
    let idle: Vec<_> = out.hosts.iter().map(|h| h.idle).collect();
    cpu_summary(&out.nic, &cpu, out.tsc_hz) + &idle_summary(out.poll, &out.nic, &idle, out.elapsed)
}

/// The polling line of the summary: the mode, and for each loop that backed off the time it
/// slept (as a share of the run), its sleeps and how many of them a doorbell cut short.
pub fn idle_summary(
    poll: dataplane::idle::PollMode,
    nic: &[dataplane::lcore::LcoreReport],
    hosts: &[dataplane::idle::IdleStats],
    elapsed: std::time::Duration,
) -> String {
    let mut s = format!("polling: {}", poll.as_str());
    let run = elapsed.as_secs_f64().max(1e-9);
    let named = nic.iter().map(|r| (r.name.clone(), r.idle)).chain(
        hosts
            .iter()
            .enumerate()
            .map(|(k, i)| (format!("host{k}"), *i)),
    );
    for (name, i) in named.filter(|(_, i)| i.sleeps > 0 || i.yields > 0) {
        let slept = i.slept_ns as f64 / 1e9;
        s += &format!(
            "; {name} slept {slept:.3} s ({:.1}%, {} sleeps, {} woken early, {} yields)",
            100.0 * slept / run,
            i.sleeps,
            i.woken,
            i.yields
        );
    }
    s.push('\n');
    s
}

/// Seconds from the command line: none, 0 (none) or a positive number.
/// The largest part of the ephemeral port range `range` (inclusive) that holds none of
/// `listening`, the server's listening ports; `range` itself when none is inside it.
///
/// A server's outgoing connections must not take its own listening port, and with several
/// lcores on a `net_af_packet` port every frame to a port of the range goes to the context
/// of that port's residue (`dataplane::steer`), which would take an accepted connection's
/// segments away from the context that holds it (answered with RSTs).
pub fn ephemeral_without(range: (u16, u16), listening: &[u16]) -> (u16, u16) {
    let mut parts = vec![range];
    for &p in listening {
        parts = parts
            .into_iter()
            .flat_map(|(lo, hi)| {
                if p < lo || p > hi {
                    vec![(lo, hi)]
                } else {
                    let mut v = Vec::new();
                    if p > lo {
                        v.push((lo, p - 1));
                    }
                    if p < hi {
                        v.push((p + 1, hi));
                    }
                    v
                }
            })
            .collect();
    }
    // The largest part (the lowest of equals); the whole range only when nothing is left.
    parts
        .into_iter()
        .rev()
        .max_by_key(|&(lo, hi)| hi - lo)
        .unwrap_or(range)
}

/// Applies [`ephemeral_without`] to a context's settings, and says so (once per process)
/// when the range shrank.
pub fn exclude_listening(hc: &mut hoststack::HostConfig, listening: &[u16]) {
    let r = ephemeral_without(hc.ephemeral, listening);
    if r != hc.ephemeral {
        static SAID: std::sync::Once = std::sync::Once::new();
        let before = hc.ephemeral;
        let inside: Vec<String> = listening
            .iter()
            .filter(|&&p| (before.0..=before.1).contains(&p))
            .map(|p| p.to_string())
            .collect();
        SAID.call_once(|| {
            println!(
                "nicemu: ephemeral ports {}-{} (not {}-{}: listening port {} is inside it)",
                r.0,
                r.1,
                before.0,
                before.1,
                inside.join(", ")
            )
        });
        hc.ephemeral = r;
    }
}

pub fn secs(v: Option<f64>, what: &str) -> Result<Option<std::time::Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => {
            Ok((s > 0.0).then(|| std::time::Duration::from_secs_f64(s)))
        }
        Some(s) => Err(format!(
            "{what}: expected a number of seconds >= 0, got {s}"
        )),
    }
}

/// Checks what every host application needs of a configuration: DPDK ports, an address on
/// port 0, cores this process may use.
pub fn check_config(cfg: &dataplane::config::Config, what: &str) -> Result<(), String> {
    let allowed = dataplane::sys::allowed_cores()
        .map_err(|e| format!("cannot read this process's CPU affinity: {e}"))?;
    cfg.check_cores(&allowed).map_err(|e| e.to_string())?;
    if cfg.ports.is_empty() || cfg.ports[0].driver != dataplane::config::Driver::Dpdk {
        return Err(format!(
            "{}: port[0].driver: nicemu {what} runs on DPDK ports (driver \"dpdk\"); in-memory wires have no peers",
            cfg.source
        ));
    }
    if cfg.ports[0].ipv4.is_empty() {
        return Err(format!(
            "{}: port[0].ipv4: nicemu {what} needs an address",
            cfg.source
        ));
    }
    Ok(())
}

/// Set once Ctrl-C (SIGINT) has asked the process to stop.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A stop flag set by Ctrl-C. The run's own end (duration, count) sets the returned flag
/// too; [`interrupted`] tells the two apart.
pub fn ctrl_c_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
        s.store(true, std::sync::atomic::Ordering::Relaxed)
    }) {
        eprintln!("nicemu: warning: cannot install the Ctrl-C handler: {e}");
    }
    stop
}

/// Whether Ctrl-C stopped the process (its figures then cover the run until that moment).
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(feature = "dpdk")]
pub use dpdk_run::{run, Outcome, RunSpec};

#[cfg(feature = "dpdk")]
mod dpdk_run {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use dataplane::config::{Config, Role};
    use dataplane::cycles::rdtsc;
    use dataplane::idle::{Backoff, IdlePolicy, PollMode};
    use dataplane::lcore::{LcoreReport, Mode, NicLcore};
    use dataplane::port::dpdk::DpdkQueue;
    use dataplane::runtime::{run_lcores, RunOptions};
    use dataplane::runtime_dpdk::{build_dpdk, eal_args, file_prefix, remove_runtime_dir};
    use hoststack::{Context, HostConfig};
    use offload_api::link::HostEnd;

    use super::{HostApp, HostCpu, HostCtx, HostResult, TimedLink};

    /// What [`run`] runs.
    pub struct RunSpec<'a> {
        /// Stop after this long (none: on Ctrl-C, or when every app is finished).
        pub duration: Option<Duration>,
        /// Call the progress callback this often.
        pub stats_interval: Option<Duration>,
        /// Pin threads to their configured cores.
        pub pin: bool,
        /// EAL arguments after `--`.
        pub eal: &'a [String],
        /// Before starting, wait up to this long for every port's link to be up (a client
        /// on net_memif waits for its server); a port still down then gets a warning.
        pub wait_link: Option<Duration>,
        /// Printed on standard output once every host context's application is set up:
        /// the ports are started and the listeners bound, so a peer that waits for this
        /// line (a client on net_memif, a test) finds the server there.
        pub ready: Option<String>,
    }

    /// What [`run`] returns.
    pub struct Outcome<S> {
        /// The NIC lcores' reports.
        pub nic: Vec<LcoreReport>,
        /// One per host context, in NIC lcore order.
        pub hosts: Vec<HostResult<S>>,
        /// Wall time of the run.
        pub elapsed: Duration,
        /// TSC ticks per second.
        pub tsc_hz: u64,
        /// How the loops polled ([`dataplane::runtime::polling`]).
        pub poll: PollMode,
    }

    /// Removes DPDK's runtime directory when dropped (after the EAL is gone).
    struct RuntimeDir(String);
    impl Drop for RuntimeDir {
        fn drop(&mut self) {
            remove_runtime_dir(&self.0);
        }
    }

    /// The state of one host loop: context, app, cycle split, published snapshot.
    struct HostLoop<A: HostApp> {
        ctx: HostCtx,
        app: A,
        cpu: HostCpu,
        clock: dataplane::clock::Clock,
        snap: Arc<Mutex<HostResult<A::Stats>>>,
        finished: bool,
        /// The idle policy of a host-only thread (a shared lcore uses the NIC lcore's).
        backoff: dataplane::idle::Backoff,
    }

    /// What a host loop asks of the NIC lcore it shares a thread with.
    #[derive(Clone, Copy)]
    enum NicCall {
        /// Run one NIC iteration: answers whether it did anything.
        Poll,
        /// Publish the NIC lcore's report.
        Publish,
        /// The combined iteration did `busy` work: back off on the NIC lcore's policy;
        /// answers whether it slept.
        Idle { busy: bool },
    }

    impl<A: HostApp> HostLoop<A> {
        /// One iteration of the stack and the app, its cycles accounted; whether it did
        /// anything.
        fn iterate(&mut self) -> bool {
            let t0 = rdtsc();
            let l0 = self.ctx.link().cycles;
            let w1 = self.ctx.poll();
            let t1 = rdtsc();
            let l1 = self.ctx.link().cycles;
            let w2 = self.app.step(&mut self.ctx, self.clock.now_ns());
            let t2 = rdtsc();
            let l2 = self.ctx.link().cycles;
            if w1 + w2 == 0 {
                self.cpu.idle += t2.wrapping_sub(t0);
            } else {
                self.cpu.link += l2.wrapping_sub(l0);
                self.cpu.stack += t1.wrapping_sub(t0).saturating_sub(l1.wrapping_sub(l0));
                self.cpu.app += t2.wrapping_sub(t1).saturating_sub(l2.wrapping_sub(l1));
            }
            w1 + w2 > 0
        }

        fn publish(&self, last: bool) {
            if let Ok(mut s) = self.snap.lock() {
                if last {
                    s.tcp = self.ctx.tcp_totals();
                }
                s.app = self.app.stats(&self.ctx);
                s.host = *self.ctx.stats();
                s.splice = self.ctx.splice_stats();
                s.conns = self.ctx.connections();
                s.cpu = self.cpu;
                s.idle = self.backoff.stats;
            }
        }

        /// Runs until `stop`, then winds down; `nic` is the shared lcore's side (`None`
        /// from it: no NIC lcore on this thread).
        fn run(
            &mut self,
            stop: &AtomicBool,
            done: &AtomicUsize,
            hosts: usize,
            nic: &mut dyn FnMut(NicCall) -> Option<bool>,
        ) {
            let mut last = Instant::now();
            let mut iterations = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let nic_busy = nic(NicCall::Poll).unwrap_or(false);
                let busy = self.iterate() | nic_busy;
                if nic(NicCall::Idle { busy }).is_none() {
                    self.backoff.after(busy);
                }
                iterations = iterations.wrapping_add(1);
                // A clock read every iteration cost about 7% of a busy kv server's samples.
                if iterations.is_multiple_of(64) && last.elapsed() >= Duration::from_millis(100) {
                    last = Instant::now();
                    self.publish(false);
                    nic(NicCall::Publish);
                    if !self.finished && self.app.finished() {
                        self.finished = true;
                        if done.fetch_add(1, Ordering::Relaxed) + 1 >= hosts {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            self.app.close(&mut self.ctx);
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                self.ctx.poll();
                nic(NicCall::Poll);
            }
            self.publish(true);
        }
    }

    /// Runs `make`'s application on a host context per NIC lcore of `cfg` until Ctrl-C
    /// (`stop`), the spec's duration, or every application is finished; `host_cfg` adjusts
    /// each context's settings (it gets the defaults: the port's first address, core k, the
    /// RSS flow map); `progress` is called every `stats_interval` with the NIC reports, the
    /// hosts' snapshots and the time since the start.
    pub fn run<A, M, H>(
        cfg: &Config,
        spec: &RunSpec,
        stop: Arc<AtomicBool>,
        host_cfg: H,
        make: M,
        mut progress: impl FnMut(&[LcoreReport], &[HostResult<A::Stats>], Duration),
    ) -> Result<Outcome<A::Stats>, String>
    where
        A: HostApp + 'static,
        M: Fn(usize, &mut HostCtx) -> Result<A, String> + Send + Sync + 'static,
        H: Fn(usize, &mut HostConfig) + Send + Sync + 'static,
    {
        // Every NIC lcore has a host: on its own thread, or in the same loop (shared).
        let threads = cfg
            .nic_lcores()
            .iter()
            .map(|l| if l.role == Role::Shared { 1 } else { 2 })
            .sum();
        let (poll, warnings) = dataplane::runtime::polling(cfg, threads, spec.pin);
        for w in warnings {
            eprintln!("nicemu: warning: {w}");
        }
        let idle = cfg.runtime.idle_policy();
        let opts = RunOptions {
            mode: Mode::Nic,
            duration: spec.duration,
            stats_interval: spec.stats_interval,
            pin: spec.pin,
            host_channels: true,
            poll,
            ..RunOptions::default()
        };
        // Declared first, so dropped last: after the topology and its EAL. DPDK takes the
        // last --file-prefix (one after `--` overrides the configuration's).
        let eal = eal_args(cfg, spec.eal);
        let _runtime_dir = RuntimeDir(file_prefix(&eal));
        let mut topo = build_dpdk(cfg, &opts, spec.eal, None).map_err(|e| e.to_string())?;
        if let Some(limit) = spec.wait_link {
            for (p, d) in cfg.ports.iter().zip(&topo.devs) {
                if let Err(e) = d.wait_link_up(limit) {
                    eprintln!(
                        "nicemu: warning: port {}: link not up after {limit:?}: {e}",
                        p.name
                    );
                }
            }
        }
        let ip = cfg.ports[0].ipv4[0].0;
        let roles: Vec<Role> = cfg.nic_lcores().iter().map(|l| l.role).collect();
        let host_cores: Vec<usize> = cfg
            .lcores
            .iter()
            .filter(|l| l.role == Role::Host)
            .map(|l| l.core)
            .collect();
        let queues = roles.len();
        // Which host core a flow's replies reach: with RSS on a device that hashes (a
        // physical NIC), the Toeplitz queue of the reversed tuple, and `connect` picks
        // source ports for it (mTCP's `mtcp_init_rss`). net_memif pairs client queue i with
        // server queue i, so any source port works (no map); net_af_packet is steered
        // (below).
        let hashes = cfg.ports[0].rss.key().is_some() && cfg.ports[0].is_physical();
        // net_af_packet with several queue pairs: the kernel's fanout hashes each flow with
        // a secret, so no source port can aim replies at a queue; the lcores hand frames of
        // each other's outgoing connections over instead, by the residue of the local port
        // (`dataplane::steer`), and each context picks ports of its own residue.
        let steer = (!hashes)
            .then(|| {
                let mut probe = HostConfig::new(ip, 0);
                host_cfg(0, &mut probe);
                dataplane::steer::for_config(cfg, &mut topo.lcores, probe.ephemeral)
            })
            .flatten();
        // Steered: the contexts' listening ports are registered, so that their connections
        // stay where they arrive and no context connects from them.
        let on_listen: Option<hoststack::stack::ListenHook> = steer
            .clone()
            .map(|st| Arc::new(move |port: u16| st.listen(port)) as hoststack::stack::ListenHook);
        let flow_core: Option<hoststack::stack::FlowCore> = if queues > 1 && hashes {
            Some(apps::node::rss_flow_core(cfg.ports[0].rss, queues as u16))
        } else {
            steer.map(|st| -> hoststack::stack::FlowCore {
                Arc::new(move |ep: &hoststack::tcp::tcb::Endpoints| st.connect_owner(ep.local_port))
            })
        };
        let host_cfg = Arc::new(host_cfg);
        let make = Arc::new(make);
        let mk_cfg = {
            let host_cfg = host_cfg.clone();
            move |k: usize| {
                let mut hc = HostConfig::new(ip, 0);
                hc.core = k;
                hc.flow_core = flow_core.clone();
                hc.on_listen = on_listen.clone();
                host_cfg(k, &mut hc);
                hc
            }
        };

        let lcores = std::mem::take(&mut topo.lcores);
        let hosts = std::mem::take(&mut topo.host);
        let nhosts = hosts.len();
        let done = Arc::new(AtomicUsize::new(0));
        // Host contexts whose application is set up (`spec.ready` is printed at nhosts).
        let made = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let mut nic_only: Vec<NicLcore<DpdkQueue>> = Vec::new();
        let mut shared_reports = Vec::new();
        let mut snaps: Vec<Arc<Mutex<HostResult<A::Stats>>>> = Vec::new();
        type HostJoin = std::thread::JoinHandle<Result<Option<LcoreReport>, String>>;
        let mut threads: Vec<HostJoin> = Vec::new();
        let mut next_host_core = host_cores.iter();

        fn host_loop<A: HostApp>(
            hc: HostConfig,
            end: HostEnd,
            clock: dataplane::clock::Clock,
            k: usize,
            make: &dyn Fn(usize, &mut HostCtx) -> Result<A, String>,
            snap: Arc<Mutex<HostResult<A::Stats>>>,
            poll: (PollMode, IdlePolicy),
        ) -> Result<HostLoop<A>, String> {
            let c = clock.clone();
            // The NIC lcore rings the link's doorbell after each frame it hands over.
            let backoff = Backoff::new(poll.0, poll.1).with_doorbell(end.rx_doorbell());
            let mut ctx = Context::new(hc, TimedLink::new(end), Arc::new(move || c.now_ns()));
            let app = make(k, &mut ctx)?;
            Ok(HostLoop {
                ctx,
                app,
                cpu: HostCpu::default(),
                clock,
                snap,
                finished: false,
                backoff,
            })
        }

        for (k, (lcore, end)) in lcores.into_iter().zip(hosts).enumerate() {
            let snap = Arc::new(Mutex::new(HostResult::<A::Stats>::default()));
            snaps.push(snap.clone());
            let (stop, hc, make, done) = (stop.clone(), mk_cfg(k), make.clone(), done.clone());
            let made = made.clone();
            let clock = lcore.clock().clone();
            let pin = opts.pin;
            let shared = roles[k] == Role::Shared;
            let core = if shared {
                shared_reports.push(lcore.report_handle());
                lcore.core()
            } else {
                next_host_core.next().copied()
            };
            // The doorbell this context's loop sleeps on: the host link's towards the NIC in
            // a shared loop (the lcore's), the one towards the host on a host thread.
            let bell = if shared {
                lcore.doorbell()
            } else {
                Some(end.rx_doorbell())
            };
            let mut nic_lcore = if shared {
                Some(lcore)
            } else {
                nic_only.push(lcore);
                None
            };
            let t = std::thread::Builder::new()
                .name(format!("{}{k}", if shared { "shared" } else { "host" }))
                .spawn(move || -> Result<Option<LcoreReport>, String> {
                    let r = (|| {
                        dataplane::sys::place_current_thread(
                            core.filter(|_| pin),
                            &format!("host thread {k}"),
                        );
                        dataplane::sys::set_timer_slack_ns(1_000);
                        if nic_lcore.is_some() {
                            dataplane::runtime_dpdk::thread_init()()?;
                        }
                        let mut h = host_loop(hc, end, clock, k, &*make, snap, (poll, idle))?;
                        if let Some(b) = bell {
                            h.app.set_waker(Arc::new(move || b.ring()));
                        }
                        made.fetch_add(1, Ordering::Relaxed);
                        let mut nic = |call: NicCall| {
                            let l = nic_lcore.as_mut()?;
                            Some(match call {
                                NicCall::Poll => {
                                    l.poll_once();
                                    // The host's iteration comes next: not the NIC's time.
                                    l.end_iteration();
                                    l.was_busy()
                                }
                                NicCall::Publish => {
                                    // Publishes the lcore's report (run_lcores does this
                                    // for the lcores it runs).
                                    l.finish();
                                    l.end_iteration();
                                    false
                                }
                                NicCall::Idle { busy } => l.backoff_mut().after(busy),
                            })
                        };
                        h.run(&stop, &done, nhosts, &mut nic);
                        Ok(nic_lcore.as_mut().map(|l| l.finish()))
                    })();
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
                .map_err(|e| format!("cannot start a host thread: {e}"))?;
            threads.push(t);
        }

        // The NIC lcores stop after the host loops have wound down (closed their
        // connections and polled on for a moment), so that what the hosts send last (FINs,
        // teardown messages) still leaves the ports. A conductor thread ends the run: on
        // Ctrl-C or an error (`stop`), every app finished (the host loops set `stop`), or the
        // duration.
        let nic_stop = Arc::new(AtomicBool::new(false));
        let conductor = {
            let (stop, nic_stop, duration) = (stop.clone(), nic_stop.clone(), spec.duration);
            let mut ready = spec.ready.clone();
            std::thread::Builder::new()
                .name("conductor".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed)
                        && duration.is_none_or(|d| start.elapsed() < d)
                    {
                        if made.load(Ordering::Relaxed) >= nhosts {
                            if let Some(line) = ready.take() {
                                println!("{line}");
                            }
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    stop.store(true, Ordering::Relaxed);
                    let joined: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
                    nic_stop.store(true, Ordering::Relaxed);
                    joined
                })
                .map_err(|e| format!("cannot start the conductor thread: {e}"))?
        };
        let opts = RunOptions {
            duration: None,
            ..opts
        };
        let snaps_print = snaps.clone();
        let result = run_lcores(
            nic_only,
            &opts,
            nic_stop.clone(),
            dataplane::runtime_dpdk::thread_init(),
            |r, t| {
                let mut all = r.to_vec();
                all.extend(
                    shared_reports
                        .iter()
                        .filter_map(|h| h.lock().ok().map(|r| r.clone())),
                );
                let hosts: Vec<HostResult<A::Stats>> = snaps_print
                    .iter()
                    .map(|s| s.lock().map(|s| s.clone()).unwrap_or_default())
                    .collect();
                progress(&all, &hosts, t);
            },
        );
        // A NIC lcore that failed ends run_lcores early: the hosts stop too.
        stop.store(true, Ordering::Relaxed);
        let joined = conductor
            .join()
            .map_err(|_| "the conductor thread panicked".to_string())?;
        let mut reports = Vec::new();
        let mut first_err = None;
        for j in joined {
            match j {
                Ok(Ok(Some(r))) => reports.push(r),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("a host thread panicked".to_string());
                }
            }
        }
        let elapsed = start.elapsed();
        let (nic_reports, _) = result.map_err(|e| e.to_string())?;
        if let Some(e) = first_err {
            return Err(e);
        }
        reports.extend(nic_reports);
        let tsc_hz = match dataplane::runtime_dpdk::tsc_hz() {
            0 => dataplane::cycles::measure_tsc_hz(Duration::from_millis(50)),
            hz => hz,
        };
        let hosts = snaps
            .iter()
            .map(|s| s.lock().map(|s| s.clone()).unwrap_or_default())
            .collect();
        Ok(Outcome {
            nic: reports,
            hosts,
            elapsed,
            tsc_hz,
            poll,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ephemeral_without;

    #[test]
    fn the_listening_ports_leave_the_ephemeral_range() {
        let r = (32768, 60999);
        // Outside: the range as it is.
        assert_eq!(ephemeral_without(r, &[80, 6379]), r);
        // Inside: the larger side.
        assert_eq!(ephemeral_without(r, &[50000]), (32768, 49999));
        assert_eq!(ephemeral_without(r, &[40000]), (40001, 60999));
        // At the ends, and several.
        assert_eq!(ephemeral_without(r, &[32768]), (32769, 60999));
        assert_eq!(ephemeral_without(r, &[60999]), (32768, 60998));
        assert_eq!(ephemeral_without(r, &[40000, 50000]), (50001, 60999));
        // Nothing left: the range unchanged (the caller has nothing better).
        assert_eq!(ephemeral_without((5, 5), &[5]), (5, 5));
        assert_eq!(ephemeral_without((5, 6), &[5]), (6, 6));
    }
}
