//! Backend connects for the proxy, as HAProxy makes them: a connect attempt that is
//! refused or does not complete within `connect_timeout_ms` is retried up to `retries`
//! times; a refused backend is marked down and the retry goes to another one; a backend
//! that times out is tried again, and with `redispatch` the last retry goes to another
//! backend (HAProxy's `option redispatch`, its default interval: the last retry).

use hoststack::frame::HostLink;
use hoststack::stack::{SockOpt, EPOLLOUT};
use hoststack::{Context, Errno};

use super::app::{Proxy, State, MS};

impl Proxy {
    /// Picks a backend and starts a non-blocking connect for session `sid` (in state
    /// Connecting). Returns true when the session can go on (a connect is under way), false
    /// when it was answered with an error.
    pub(super) fn connect<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        now: u64,
    ) -> bool {
        for _ in 0..=self.balancer.backends().len() {
            let Some(s) = self.sessions[sid].as_mut() else {
                return false;
            };
            let State::Connecting { uri, tried, .. } = &mut s.state else {
                return false;
            };
            // Backends not tried yet first; then any that is up.
            let picked = self
                .balancer
                .pick(uri, now, *tried)
                .or_else(|_| self.balancer.pick(uri, now, 0));
            let Ok(b) = picked else {
                self.respond(ctx, sid, 502, "no backend is up", now);
                return false;
            };
            if b < 64 {
                *tried |= 1 << b;
            }
            s.backend = Some(b);
            match self.start_connect(ctx, sid, b, now) {
                Ok(()) => return true,
                Err(Errno::ConnRefused | Errno::ConnReset) => {
                    self.balancer.refused(b, now);
                    if !self.count_attempt(ctx, sid, now, 502) {
                        return false;
                    }
                }
                Err(_) => {
                    self.respond(ctx, sid, 502, "cannot connect to the backend", now);
                    return false;
                }
            }
        }
        self.respond(ctx, sid, 502, "no backend is up", now);
        false
    }

    /// A socket for session `sid` and a non-blocking connect to backend `b`, with the
    /// connect timeout armed.
    fn start_connect<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        b: usize,
        now: u64,
    ) -> Result<(), Errno> {
        let addr = self.balancer.backends()[b].addr;
        let fd = ctx.socket()?;
        let _ = ctx.set_nonblocking(fd, true);
        let _ = ctx.setsockopt(fd, SockOpt::NoDelay(true));
        if let Some(s) = self.sessions[sid].as_mut() {
            s.server = Some(fd);
            s.sreg = None;
        }
        match ctx.connect(fd, addr) {
            Ok(()) | Err(Errno::InProgress) => {
                self.set_deadline(sid, now + self.cfg.connect_timeout_ms * MS);
                self.interest(ctx, sid, true, EPOLLOUT);
                Ok(())
            }
            Err(e) => {
                self.drop_server(ctx, sid, false);
                Err(e)
            }
        }
    }

    /// The attempt of session `sid` failed (its backend is already charged): releases the
    /// backend, counts the attempt; false (and answered with `status`) when no retry is
    /// left.
    fn count_attempt<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        now: u64,
        status: u16,
    ) -> bool {
        self.drop_server(ctx, sid, true);
        let Some(s) = self.sessions[sid].as_mut() else {
            return false;
        };
        if let Some(b) = s.backend.take() {
            self.balancer.release(b);
        }
        let State::Connecting { attempts, .. } = &mut s.state else {
            return false;
        };
        *attempts += 1;
        if *attempts > self.cfg.retries {
            let why = if status == 504 {
                "the backend did not answer in time"
            } else {
                "no backend accepted the connection"
            };
            self.respond(ctx, sid, status, why, now);
            return false;
        }
        self.stats.connect_retries += 1;
        true
    }

    /// The connect of session `sid` failed after it started: refused (`timed_out` false)
    /// or not complete in time. Retries it, or answers 502 / 504 when no retry is left.
    pub(super) fn connect_failed<L: HostLink>(
        &mut self,
        ctx: &mut Context<L>,
        sid: usize,
        now: u64,
        timed_out: bool,
    ) {
        let Some(b) = self.sessions[sid].as_ref().and_then(|s| s.backend) else {
            return;
        };
        if !timed_out {
            self.balancer.refused(b, now);
            if self.count_attempt(ctx, sid, now, 502) {
                self.connect(ctx, sid, now);
            }
            return;
        }
        self.balancer.timed_out(b, now);
        let n = self.balancer.backends().len();
        if !(0..n).any(|i| self.balancer.is_up(i, now)) {
            // Passive health took the last one down: no retry, and still a timeout.
            self.respond(ctx, sid, 504, "the backend did not answer in time", now);
            return;
        }
        if !self.count_attempt(ctx, sid, now, 504) {
            return;
        }
        let Some(State::Connecting { attempts, .. }) =
            self.sessions[sid].as_ref().map(|s| &s.state)
        else {
            return;
        };
        let last = *attempts == self.cfg.retries;
        if (self.cfg.redispatch && last) || !self.balancer.is_up(b, now) {
            // To another backend (the tried mask keeps this one for last).
            self.stats.redispatches += 1;
            self.connect(ctx, sid, now);
            return;
        }
        // The same backend again.
        let _ = self.balancer.pick_index(b);
        if let Some(s) = self.sessions[sid].as_mut() {
            s.backend = Some(b);
        }
        if self.start_connect(ctx, sid, b, now).is_err() {
            self.respond(ctx, sid, 502, "cannot connect to the backend", now);
        }
    }
}
