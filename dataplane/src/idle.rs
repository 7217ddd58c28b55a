//! Adaptive polling: how a poll-mode loop (a NIC lcore, a host thread, or both in one `shared`
//! loop) spends the time when it finds nothing to do.
//!
//! A loop that spins on dedicated cores answers in nanoseconds; the same loop on a machine
//! that also runs the clients, the backends and the kernel's softirq takes their CPU and turns
//! every wake-up of theirs into a scheduler time slice (milliseconds). The adaptive policy
//! follows DPDK's l3fwd-power and Shenango/Caladan's idea of giving a core back when it is not
//! needed: after an idle streak the loop steps from spinning to `sched_yield` to short sleeps
//! that grow to a bounded length, and the first iteration with work returns it to spinning.
//! The longest sleep bounds the wake-up cost a quiet loop adds to the next packet.
//!
//! [`Backoff`] is the sans-I/O policy (idle streak in, action out), unit-tested without a
//! clock; [`Backoff::after`] runs the action (spin hint, yield, or a park that a
//! [`Doorbell`] cuts short) and accounts the time slept.
//!
//! A NIC lcore whose ports can signal an arrival to a sleeping thread sleeps on them instead
//! of on a plain timer (a [`WakeSource`], as DPDK's l3fwd-power waits on Rx interrupts): the
//! first frame after a quiet spell then costs a kernel wake-up (microseconds), not the rest
//! of a sleep. `crate::wake` has the one for `net_af_packet` ports.

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use offload_api::doorbell::Doorbell;

use serde::Deserialize;

/// How the runtime's loops poll (`[runtime] poll`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollMode {
    /// Adaptive, unless every port is a physical device and the polling threads leave a CPU
    /// free: then spin. See [`PollMode::resolve`].
    #[default]
    Auto,
    /// Always spin (dedicated cores: lowest latency, a whole core each, even when idle).
    Spin,
    /// Back off when idle (shared machines, laptops, VMs, clients on the same machine).
    Adaptive,
}

impl PollMode {
    /// The mode a run uses: `Auto` becomes `Spin` only where spinning starves nobody (every
    /// port a physical NIC, so the machine is a dedicated server, and fewer polling threads
    /// than usable CPUs), `Adaptive` otherwise. The other two are kept as chosen.
    pub fn resolve(self, physical_ports_only: bool, polling_threads: usize, cpus: usize) -> Self {
        match self {
            PollMode::Auto if physical_ports_only && polling_threads < cpus => PollMode::Spin,
            PollMode::Auto => PollMode::Adaptive,
            m => m,
        }
    }

    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PollMode::Auto => "auto",
            PollMode::Spin => "spin",
            PollMode::Adaptive => "adaptive",
        }
    }
}

/// The deep sleep of a loop with a [`WakeSource`] (at least): arrivals end it at once, so it
/// bounds only how late the loop's timers (TCP retransmissions and delayed ACKs, the NIC's
/// teardown wheel) and a doorbell ring that raced with falling asleep are served.
pub const WAKE_DEEP_SLEEP: Duration = Duration::from_millis(2);

/// With a [`WakeSource`] that also hears the loop's doorbell, the sleeps of `max_sleep` in a
/// row after which sleeps grow to the deep one (instead of [`IdlePolicy::deep_after`]):
/// every arrival ends a sleep at once, so a longer sleep delays only the loop's own timers
/// (TCP's are tens of milliseconds and more), and a lightly loaded server (a PING every
/// 10 ms) wakes about ten times between requests, not fifty: measured, 3–4% of a core
/// against 14%, the same latency.
pub const WAKE_DEEP_AFTER: u32 = 5;

/// The thresholds of the adaptive policy.
///
/// Invariant (checked by the configuration): `min_sleep <= max_sleep`, both non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Idle iterations spent spinning (with a CPU pause hint) before yielding.
    ///
    /// Kept short: a spinning loop holds its CPU even when a thread it just woke (a
    /// co-located client reading the reply, a backend) waits to run there, because the
    /// scheduler places a woken thread on the CPU whose softirq woke it and does not preempt
    /// the spinner for it. A yield hands the CPU over at once and, with nobody waiting, costs
    /// one system call, so a loaded loop polls as often as before.
    pub spin_iterations: u32,
    /// Idle iterations after those that yield the CPU (`sched_yield`) before sleeping.
    pub yield_iterations: u32,
    /// The first sleep; each further idle sleep doubles it.
    pub min_sleep: Duration,
    /// The longest sleep of a loop that was busy lately: what a quiet spell of a loaded
    /// server adds to the next packet's latency.
    pub max_sleep: Duration,
    /// After this many sleeps of `max_sleep` in a row (a loop idle for a while), sleeps
    /// grow to `deep_sleep`: an idle server's wake-ups, and so its CPU, fall by that ratio.
    pub deep_after: u32,
    /// The sleep of a loop idle for long (at least `max_sleep`): the most an idle server
    /// adds to its first packet.
    pub deep_sleep: Duration,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            // 512 spins (measured: 0.3–0.4 ms of a 2-core machine's shared loop) left a
            // PING's client waiting behind the loop that had just answered it.
            spin_iterations: 16,
            // Yields keep a loop that just answered a request awake for the next one of a
            // request-response client (one PING after another: 64 yields ended before it
            // came, and waking from the sleep made the round trip 88 µs at p50 instead of
            // 37–53 with 128), while costing little at a light load (a PING every 1 ms: 20%
            // of a core instead of 17%; 256 took 31%).
            yield_iterations: 128,
            min_sleep: Duration::from_micros(8),
            max_sleep: Duration::from_micros(200),
            deep_after: 100,
            deep_sleep: Duration::from_micros(500),
        }
    }
}

/// What an idle loop does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleAction {
    /// Poll again at once (after a CPU pause hint when the iteration was idle).
    Spin,
    /// Give the CPU to another runnable thread, then poll again.
    Yield,
    /// Sleep up to this long (a doorbell may end it sooner), then poll again.
    Sleep(Duration),
}

/// Time an adaptive loop did not poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleStats {
    /// Nanoseconds spent in sleeps (measured, wake-up latency included).
    pub slept_ns: u64,
    /// Sleeps taken.
    pub sleeps: u64,
    /// Sleeps a doorbell or an arriving frame ended early.
    pub woken: u64,
    /// `sched_yield` calls.
    pub yields: u64,
}

impl IdleStats {
    /// Adds `o`.
    pub fn add(&mut self, o: &IdleStats) {
        self.slept_ns += o.slept_ns;
        self.sleeps += o.sleeps;
        self.woken += o.woken;
        self.yields += o.yields;
    }
}

/// Something a sleeping loop waits on besides its timeout and its [`Doorbell`]: its ports'
/// arrivals (a kernel file descriptor that becomes readable when a frame comes in).
///
/// Invariant: `wait` returns no later than `d` (plus the OS's wake-up latency), and returns
/// `true` only when something (an arrival, or `bell`) ended it early; an arrival that came
/// after the previous `wait` returned is never missed (it ends the next `wait` at once).
pub trait WakeSource: Send {
    /// Sleeps up to `d`, or until a frame arrives on one of the source's ports or `bell`
    /// rings. Returns whether it was woken early.
    fn wait(&mut self, d: Duration, bell: Option<&Doorbell>) -> bool;

    /// Whether a ring of the loop's doorbell ends [`wait`](Self::wait) at once (rather
    /// than at its timeout).
    fn hears_doorbell(&self) -> bool {
        false
    }
}

/// The idle policy of one loop: feed it each iteration's outcome, it says what to do.
///
/// Invariant: with mode [`PollMode::Spin`] (or `Auto` unresolved) it only ever answers
/// [`IdleAction::Spin`]; an iteration with work always resets the streak and answers `Spin`.
#[derive(Debug)]
pub struct Backoff {
    adaptive: bool,
    policy: IdlePolicy,
    streak: u32,
    next_sleep: Duration,
    /// Sleeps of `max_sleep` in a row.
    at_max: u32,
    doorbell: Option<Arc<Doorbell>>,
    wake: Option<Box<dyn WakeSource>>,
    /// What the loop did not poll.
    pub stats: IdleStats,
}

impl std::fmt::Debug for dyn WakeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WakeSource")
    }
}

impl Backoff {
    /// A policy for a loop polling in `mode` (resolved: `Auto` spins).
    pub fn new(mode: PollMode, policy: IdlePolicy) -> Self {
        Backoff {
            adaptive: mode == PollMode::Adaptive,
            policy,
            streak: 0,
            next_sleep: policy.min_sleep,
            at_max: 0,
            doorbell: None,
            wake: None,
            stats: IdleStats::default(),
        }
    }

    /// Sleeps on `w` (and on the doorbell, if any) instead of a plain timer. An arrival
    /// ends a sleep at once, so the short first sleeps of the ladder (which bound what a
    /// timed sleep adds to the next frame) are skipped: sleeps start at `max_sleep`, which
    /// then bounds only how late the loop's own timers run, and a long-idle loop sleeps
    /// [`WAKE_DEEP_SLEEP`] at a time (fewer wake-ups, so less CPU while idle). When nothing
    /// else can need the loop sooner (no doorbell, or `w` hears it), deep sleeps start after
    /// [`WAKE_DEEP_AFTER`] sleeps of `max_sleep`.
    pub fn set_wake(&mut self, w: Box<dyn WakeSource>) {
        if self.doorbell.is_none() || w.hears_doorbell() {
            self.policy.deep_after = self.policy.deep_after.min(WAKE_DEEP_AFTER);
        }
        self.wake = Some(w);
        self.policy.deep_sleep = self.policy.deep_sleep.max(WAKE_DEEP_SLEEP);
        self.restart();
    }

    /// The doorbell this loop's sleeps listen to, if any.
    pub fn doorbell(&self) -> Option<&Arc<Doorbell>> {
        self.doorbell.as_ref()
    }

    /// Whether this loop backs off at all.
    pub fn adaptive(&self) -> bool {
        self.adaptive
    }

    /// Lets `bell` end this loop's sleeps early; the loop's thread registers itself on it at
    /// its first sleep.
    pub fn with_doorbell(mut self, bell: Arc<Doorbell>) -> Self {
        self.doorbell = Some(bell);
        self
    }

    /// The action after an iteration that did `busy` work (sans I/O).
    pub fn next(&mut self, busy: bool) -> IdleAction {
        if busy || !self.adaptive {
            self.restart();
            return IdleAction::Spin;
        }
        self.streak = self.streak.saturating_add(1);
        let p = &self.policy;
        if self.streak <= p.spin_iterations {
            IdleAction::Spin
        } else if self.streak <= p.spin_iterations.saturating_add(p.yield_iterations) {
            IdleAction::Yield
        } else {
            let d = self.next_sleep;
            if d >= p.max_sleep {
                self.at_max = self.at_max.saturating_add(1);
                if self.at_max > p.deep_after {
                    return IdleAction::Sleep(p.deep_sleep.max(p.max_sleep));
                }
            }
            self.next_sleep = (d * 2).min(p.max_sleep);
            IdleAction::Sleep(d)
        }
    }

    /// Back to the bottom of the ladder (work was found, or is on its way).
    fn restart(&mut self) {
        self.streak = 0;
        self.at_max = 0;
        self.next_sleep = if self.wake.is_some() {
            self.policy.max_sleep
        } else {
            self.policy.min_sleep
        };
    }

    /// Runs the action for an iteration that did `busy` work: nothing after work, a pause
    /// hint, a yield or a sleep after idle ones. Returns whether it slept.
    #[inline]
    pub fn after(&mut self, busy: bool) -> bool {
        match self.next(busy) {
            IdleAction::Spin => {
                if !busy {
                    std::hint::spin_loop();
                }
                false
            }
            IdleAction::Yield => {
                self.stats.yields += 1;
                std::thread::yield_now();
                false
            }
            IdleAction::Sleep(d) => {
                let t0 = Instant::now();
                let rung = match (&mut self.wake, &self.doorbell) {
                    (Some(w), Some(bell)) => bell.sleep_with(d, |d| w.wait(d, Some(bell))),
                    (Some(w), None) => w.wait(d, None),
                    (None, Some(bell)) => bell.sleep(d),
                    (None, None) => {
                        std::thread::sleep(d);
                        false
                    }
                };
                self.stats.slept_ns += t0.elapsed().as_nanos() as u64;
                self.stats.sleeps += 1;
                if rung {
                    // Work is waiting: the next iteration will find it and reset the streak;
                    // until then, poll without sleeping.
                    self.stats.woken += 1;
                    self.restart();
                }
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> IdlePolicy {
        IdlePolicy {
            spin_iterations: 3,
            yield_iterations: 2,
            min_sleep: Duration::from_micros(10),
            max_sleep: Duration::from_micros(35),
            deep_after: 2,
            deep_sleep: Duration::from_micros(90),
        }
    }

    #[test]
    fn spin_mode_never_backs_off() {
        let mut b = Backoff::new(PollMode::Spin, policy());
        for _ in 0..10_000 {
            assert_eq!(b.next(false), IdleAction::Spin);
        }
        assert!(!b.adaptive());
    }

    #[test]
    fn an_idle_streak_steps_from_spin_to_yield_to_growing_bounded_sleeps_then_deep_ones() {
        let mut b = Backoff::new(PollMode::Adaptive, policy());
        let got: Vec<IdleAction> = (0..10).map(|_| b.next(false)).collect();
        let us = |n| IdleAction::Sleep(Duration::from_micros(n));
        assert_eq!(
            got,
            vec![
                IdleAction::Spin,
                IdleAction::Spin,
                IdleAction::Spin,
                IdleAction::Yield,
                IdleAction::Yield,
                us(10),
                us(20),
                us(35),
                us(35),
                us(90),
            ]
        );
        assert_eq!(b.next(false), us(90));
        // Work brings it back to the bottom, deep sleep forgotten.
        assert_eq!(b.next(true), IdleAction::Spin);
        for _ in 0..5 {
            b.next(false);
        }
        assert_eq!(b.next(false), us(10));
    }

    #[test]
    fn work_returns_to_spinning_and_restarts_the_ladder() {
        let mut b = Backoff::new(PollMode::Adaptive, policy());
        for _ in 0..8 {
            b.next(false);
        }
        assert_eq!(b.next(true), IdleAction::Spin);
        for _ in 0..5 {
            assert_ne!(b.next(false), IdleAction::Sleep(Duration::from_micros(35)));
        }
        assert_eq!(b.next(false), IdleAction::Sleep(Duration::from_micros(10)));
    }

    #[derive(Debug)]
    struct FakeWake(Vec<Duration>);

    impl WakeSource for FakeWake {
        fn wait(&mut self, d: Duration, _bell: Option<&Doorbell>) -> bool {
            self.0.push(d);
            false
        }
    }

    #[test]
    fn a_loop_with_a_wake_source_skips_the_short_sleeps() {
        let mut b = Backoff::new(PollMode::Adaptive, policy());
        b.set_wake(Box::new(FakeWake(Vec::new())));
        let sleeps: Vec<IdleAction> = (0..8)
            .map(|_| b.next(false))
            .filter(|a| matches!(a, IdleAction::Sleep(_)))
            .collect();
        let us = |n| IdleAction::Sleep(Duration::from_micros(n));
        assert_eq!(
            sleeps,
            vec![us(35), us(35), IdleAction::Sleep(WAKE_DEEP_SLEEP)]
        );
        // Work, then idle again: back to max_sleep, not min_sleep.
        assert_eq!(b.next(true), IdleAction::Spin);
        let first = (0..6).map(|_| b.next(false)).last().unwrap();
        assert_eq!(first, us(35));
        // The sleep runs on the wake source.
        assert!(b.after(false));
    }

    /// A wake source that hears the doorbell.
    #[derive(Debug)]
    struct BellWake;

    impl WakeSource for BellWake {
        fn wait(&mut self, _d: Duration, _bell: Option<&Doorbell>) -> bool {
            false
        }
        fn hears_doorbell(&self) -> bool {
            true
        }
    }

    /// The sleeps of `max_sleep` before the first deep one, with the default thresholds.
    fn max_sleeps_before_deep(b: &mut Backoff) -> usize {
        let max = IdleAction::Sleep(IdlePolicy::default().max_sleep);
        let ladder: Vec<IdleAction> = (0..1_000).map(|_| b.next(false)).collect();
        let deep = ladder
            .iter()
            .position(|a| *a == IdleAction::Sleep(WAKE_DEEP_SLEEP))
            .expect("a deep sleep");
        ladder[..deep].iter().filter(|a| **a == max).count()
    }

    #[test]
    fn deep_sleeps_come_sooner_only_when_every_arrival_ends_a_sleep() {
        let bell = Doorbell::new();
        let new = || Backoff::new(PollMode::Adaptive, IdlePolicy::default());
        // No doorbell: the ports' arrivals are all there is to hear.
        let mut b = new();
        b.set_wake(Box::new(FakeWake(Vec::new())));
        assert_eq!(max_sleeps_before_deep(&mut b), WAKE_DEEP_AFTER as usize);
        // A doorbell the wake source hears too.
        let mut b = new().with_doorbell(bell.clone());
        b.set_wake(Box::new(BellWake));
        assert_eq!(max_sleeps_before_deep(&mut b), WAKE_DEEP_AFTER as usize);
        // A doorbell the wake source does not hear: the host's frames wait for a sleep's
        // end, so the policy's own threshold stays.
        let mut b = new().with_doorbell(bell);
        b.set_wake(Box::new(FakeWake(Vec::new())));
        assert_eq!(
            max_sleeps_before_deep(&mut b),
            IdlePolicy::default().deep_after as usize
        );
    }

    #[test]
    fn auto_spins_only_on_physical_ports_with_a_cpu_to_spare() {
        use PollMode::*;
        assert_eq!(Auto.resolve(true, 2, 16), Spin);
        assert_eq!(Auto.resolve(true, 2, 2), Adaptive);
        assert_eq!(Auto.resolve(false, 1, 16), Adaptive);
        assert_eq!(Spin.resolve(false, 4, 2), Spin);
        assert_eq!(Adaptive.resolve(true, 1, 16), Adaptive);
    }

    #[test]
    fn sleeps_are_counted_and_a_doorbell_ends_one_early() {
        let bell = Doorbell::new();
        let long = IdlePolicy {
            spin_iterations: 0,
            yield_iterations: 0,
            min_sleep: Duration::from_secs(5),
            max_sleep: Duration::from_secs(5),
            ..IdlePolicy::default()
        };
        let mut b = Backoff::new(PollMode::Adaptive, long).with_doorbell(bell.clone());
        let ringer = {
            let bell = bell.clone();
            std::thread::spawn(move || {
                // Rings until the sleeper has been seen asleep and woken (bounded).
                for _ in 0..5_000 {
                    if bell.is_sleeping() {
                        bell.ring();
                        return true;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                false
            })
        };
        let t0 = Instant::now();
        assert!(b.after(false));
        assert!(ringer.join().unwrap(), "the sleeper never went to sleep");
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "the doorbell did not end the 5 s sleep"
        );
        assert_eq!(b.stats.sleeps, 1);
        assert_eq!(b.stats.woken, 1);
        assert!(b.stats.slept_ns > 0);
    }
}
