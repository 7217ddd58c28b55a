//! One run of the stack ([`Context::poll`]) and what it drives: the timer heap, the dirty
//! list, and the flush that transmits what each dirty connection has to send and frees
//! finished orphans.

use super::{quasi, Context, SockState, FLUSH_ROOM};
use crate::frame::HostLink;

impl<L: HostLink> Context<L> {
    /// One run of the stack: flush what the application queued, take up to `rx_burst` frames
    /// from the NIC, fire due timers, flush again. Returns frames received plus timers fired.
    pub fn poll(&mut self) -> usize {
        let now = (self.now)();
        self.flush(now);
        let mut work = self.rx(now);
        work += self.fire_timers(now);
        self.splice_progress(now);
        self.flush(now);
        work
    }

    /// Time of the earliest pending timer, if any (for callers that sleep in virtual time).
    pub fn next_timer(&self) -> Option<u64> {
        self.timers.peek().map(|r| r.0 .0)
    }

    fn fire_timers(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some(&std::cmp::Reverse((t, cid))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if cid & quasi::QUASI != 0 {
                fired += self.quasi_timer(cid & !quasi::QUASI, t, now);
                continue;
            }
            if let Some(c) = self.conns.get_mut(cid as usize).and_then(|c| c.as_mut()) {
                if c.timer_at == t {
                    c.timer_at = u64::MAX;
                    fired += 1;
                    self.stats.timer_fires += 1;
                    if !c.dirty {
                        c.dirty = true;
                        self.dirty.push_back(cid);
                    }
                }
            }
        }
        fired
    }

    pub(super) fn mark_dirty(&mut self, cid: u32) {
        if let Some(c) = self.conns[cid as usize].as_mut() {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push_back(cid);
            }
        }
    }

    /// Sends what every dirty connection has to send, reschedules its timer, frees finished
    /// orphans. While the link has no free descriptor the rest stay dirty, in order, for the
    /// next flush: a full link holds segments back (as a driver's queue does when the NIC's
    /// ring is full) instead of losing them, so a burst larger than the link (a SYN per
    /// connection of a load generator, one echo per connection of a server) goes out as the
    /// NIC drains it rather than waiting for retransmission timeouts.
    ///
    /// A connection's transmit may emit several frames (an ACK and data, a retransmission):
    /// the next one starts only while [`FLUSH_ROOM`] descriptors are free, or, so that a
    /// smaller link still makes progress, when it is the first of this flush.
    pub(super) fn flush(&mut self, now: u64) {
        self.quasi_flush(now);
        let mut first = true;
        while !self.dirty.is_empty() {
            let room = self.link.tx_space();
            if room == 0 || (room < FLUSH_ROOM && !first) {
                break;
            }
            first = false;
            if let Some(cid) = self.dirty.pop_front() {
                self.transmit(cid, now);
            }
        }
    }

    pub(super) fn transmit(&mut self, cid: u32, now: u64) {
        let tonic = self.conns[cid as usize]
            .as_ref()
            .is_some_and(|c| c.owner.tonic_live());
        if tonic {
            self.tonic_before_transmit(cid);
        }
        let Context {
            conns,
            link,
            scratch,
            ip_id,
            stats,
            cfg,
            ..
        } = self;
        let Some(c) = conns[cid as usize].as_mut() else {
            return;
        };
        c.dirty = false;
        let ep = c.tcb.endpoints();
        let port = cfg.port;
        // No more data segments than the link has free descriptors (less the control
        // segments one call may add): what does not fit stays in the send buffer, not
        // lost on a full link, and the connection is flushed again (below).
        let budget = link.tx_space().saturating_sub(FLUSH_ROOM).max(1);
        let emitted = c.tcb.poll_transmit_budget(now, budget, &mut |o| {
            *ip_id = ip_id.wrapping_add(1);
            let id = *ip_id;
            let sent = link.send_built(port, scratch, &mut |buf| {
                crate::frame::build_tcp(buf, ep.local_ip, ep.remote_ip, id, &o.header, o.payload);
            });
            if sent {
                stats.frames_out += 1;
            } else {
                stats.link_full += 1;
            }
        });
        if tonic && self.tonic_after_transmit(cid, now) {
            // The NIC gave the sender back: the FIN goes out on the next pass.
            self.mark_dirty(cid);
        }
        if emitted >= budget {
            // The budget, not the windows, may have stopped it: more to send.
            self.mark_dirty(cid);
        }
        let Context { conns, timers, .. } = self;
        let Some(c) = conns[cid as usize].as_mut() else {
            return;
        };
        if let Some(t) = c.tcb.poll_at() {
            if t < c.timer_at {
                c.timer_at = t;
                timers.push(std::cmp::Reverse((t, cid)));
            }
        }
        // Timer work (a connection that timed out, a connect that failed) raises events too.
        let ev = c.tcb.take_events();
        let notify_fd = if ev != Default::default() { c.fd } else { None };
        let closed = c.tcb.state() == crate::tcp::tcb::State::Closed;
        let mut failed_half_open = None;
        if closed && c.half_open {
            // A half-open connection that timed out or was reset: off the listener's count.
            c.half_open = false;
            failed_half_open = c.listener.take();
        }
        let free = c.fd.is_none() && c.listener.is_none() && c.tcb.is_finished();
        if let Some(lfd) = failed_half_open {
            if let Ok(s) = self.sock_mut(lfd) {
                if let SockState::Listening(l) = &mut s.state {
                    l.half_open -= 1;
                }
            }
        }
        if let Some(fd) = notify_fd {
            self.notify(fd);
        }
        if free {
            self.free_conn(cid);
        }
    }
}
