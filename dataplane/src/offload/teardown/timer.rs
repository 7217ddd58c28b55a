//! The timer source of the teardown engine: one timer per flow id, for its retransmission
//! timeout, its FIN_WAIT_2 limit or its TIME_WAIT, on the timer bitmap wheel
//! ([`crate::wheel::TimerBitmapWheel`], AccelTCP §4.2 "Timeout management", Figure 6: "AccelTCP
//! supports the TIME_WAIT state, but it shares the same mechanism as RTO management for the
//! timer").
//!
//! The engine uses the wheel only through this wrapper, which builds the wheel on the first
//! arm: its bitmaps (`slots × max_flows` bits, 8 MB with the defaults) cost nothing on an
//! lcore that never takes a teardown.

use crate::wheel::{TimerBitmapWheel, WheelConfig, WheelConfigError};

/// One timer per flow id `0..cfg.ids`, built on first use.
#[derive(Debug)]
pub(crate) struct FlowTimers {
    cfg: WheelConfig,
    wheel: Option<TimerBitmapWheel>,
}

impl FlowTimers {
    /// Timers of the wheel `cfg` (checked now; the bitmaps are allocated on the first arm).
    pub(crate) fn new(cfg: WheelConfig) -> Result<FlowTimers, WheelConfigError> {
        if cfg.ids as u64 > 1 << 32 {
            return Err(WheelConfigError::TooManyIds(cfg.ids));
        }
        // A one-id probe checks the other dimensions without allocating the bitmaps.
        TimerBitmapWheel::try_new(
            WheelConfig {
                ids: 1,
                regions: 1,
                ..cfg.clone()
            },
            0,
        )?;
        Ok(FlowTimers { cfg, wheel: None })
    }

    /// (Re)arms `id` to expire `after_ns` after `now` (never early, late by less than one
    /// tick). Ids out of range are ignored.
    pub(crate) fn arm(&mut self, id: u32, now: u64, after_ns: u64) {
        let cfg = &self.cfg;
        self.wheel
            .get_or_insert_with(|| TimerBitmapWheel::new(cfg.clone(), now))
            .arm(id, now, after_ns);
    }

    /// Turns `id`'s timer off.
    pub(crate) fn disarm(&mut self, id: u32) {
        if let Some(w) = &self.wheel {
            w.disarm(id);
        }
    }

    /// True while `id`'s timer is armed.
    pub(crate) fn is_armed(&self, id: u32) -> bool {
        self.wheel.as_ref().is_some_and(|w| w.is_armed(id))
    }

    /// Calls `expired` with every id due at `now`, disarmed first (it may re-arm).
    pub(crate) fn advance(&mut self, now: u64, expired: impl FnMut(u32)) {
        if let Some(w) = &self.wheel {
            w.advance(now, expired);
        }
    }

    /// When a timer may next expire: the wheel's bound, never late, possibly early by up to
    /// the time to the next tick.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.wheel
            .as_ref()
            .and_then(TimerBitmapWheel::next_deadline)
    }

    /// Number of armed ids.
    pub(crate) fn armed(&self) -> usize {
        self.wheel.as_ref().map_or(0, TimerBitmapWheel::armed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_wheel_arm_rearm_disarm_advance() {
        let mut t = FlowTimers::new(WheelConfig {
            ids: 4,
            slots: 16,
            tick_ns: 1,
            regions: 1,
        })
        .unwrap();
        assert!(t.wheel.is_none());
        t.disarm(1);
        t.advance(5, |_| panic!("nothing armed"));
        t.arm(1, 0, 10);
        t.arm(2, 0, 5);
        t.arm(1, 0, 20);
        t.arm(9, 0, 1); // out of range: ignored
        assert_eq!(t.armed(), 2);
        let mut got = Vec::new();
        t.advance(15, |id| got.push(id));
        assert_eq!(got, [2]);
        t.disarm(1);
        assert_eq!(t.armed(), 0);
        assert!(!t.is_armed(1));
        assert_eq!(t.next_deadline(), None);
        assert!(FlowTimers::new(WheelConfig {
            tick_ns: 0,
            ..WheelConfig::default()
        })
        .is_err());
    }
}
