//! The scenario's value-range and cross-key checks ([`Scenario::check`]).

use super::Scenario;
use crate::config::ConfigError;
use crate::tonic::module::MAX_SACK_BLOCKS;
use crate::tonic::registry::Registry;

impl Scenario {
    /// Checks value ranges and cross-key rules, naming the key at fault; `file` names the
    /// source in errors. Module names are checked against `registry`.
    pub fn check(&self, file: &str, registry: &Registry) -> Result<(), ConfigError> {
        let err = |k: &str, m: String| Err(ConfigError::new(file, k, m));
        if registry.info(&self.module.name).is_none() {
            let known: Vec<_> = registry.list().map(|i| i.name.as_str()).collect();
            return err(
                "module.name",
                format!(
                    "unknown module {:?}, expected one of {}",
                    self.module.name,
                    known.join(", ")
                ),
            );
        }
        let prob = |p: f64| (0.0..1.0).contains(&p);
        let t = &self.tonic;
        let f = &self.flows;
        let l = &self.link;
        let r = &self.receiver;
        let n = &self.network;
        let rules: [(&str, bool, &str); 30] = [
            (
                "network.clock_ppm",
                n.clock_ppm <= 10_000,
                "expected at most 10000 ppm (1%)",
            ),
            (
                "link.priorities",
                (1..=8).contains(&l.priorities),
                "expected 1 to 8 priority queues",
            ),
            (
                "network.edge_rate",
                n.edge_rate.is_none_or(|r| r >= 1_000),
                "expected at least 1 Kbps",
            ),
            (
                "network.edge_buffer",
                n.edge_buffer
                    .is_none_or(|b| b >= (f.segment_size + l.header_bytes) as u64),
                "expected room for at least one full packet",
            ),
            (
                "receiver.homa_overcommit",
                (1..=8).contains(&r.homa_overcommit),
                "expected 1 to 8 messages",
            ),
            (
                "receiver.homa_sched_prio",
                r.homa_sched_prio <= 7,
                "expected a priority 0 to 7",
            ),
            (
                "duration",
                self.duration > 0,
                "expected a positive duration",
            ),
            (
                "tonic.init_wnd_size",
                t.init_wnd_size >= 1,
                "expected at least 1 segment",
            ),
            (
                "tonic.init_rtx_timer",
                t.init_rtx_timer >= 1,
                "expected a positive timeout",
            ),
            (
                "tonic.loss_prob",
                prob(t.loss_prob),
                "expected a probability in [0, 1)",
            ),
            (
                "tonic.active_flow_cnt",
                (1..=65_536).contains(&t.active_flow_cnt),
                "expected 1 to 65536 flows per sender",
            ),
            (
                "tonic.window",
                matches!(t.window, 64 | 128 | 256),
                "expected 64, 128 or 256 segments",
            ),
            (
                "tonic.ring_depth",
                (1..=8).contains(&t.ring_depth),
                "expected 1 to 8",
            ),
            ("tonic.cycle", t.cycle >= 1, "expected a positive interval"),
            (
                "tonic.rtt",
                self.rtt() >= self.forward_delay(),
                "expected at least link.delay (the reverse delay is rtt - delay)",
            ),
            (
                "flows.senders",
                (1..=4096).contains(&f.senders),
                "expected 1 to 4096 senders",
            ),
            (
                "flows.bytes",
                !(f.bytes.is_some() && f.segments.is_some()),
                "give flows.segments or flows.bytes, not both",
            ),
            (
                "flows.segments",
                f.segments != Some(0) && f.bytes != Some(0),
                "expected a non-empty flow",
            ),
            (
                "flows.segment_size",
                (1..=65_535).contains(&f.segment_size),
                "expected 1 to 65535 bytes",
            ),
            ("link.rate", l.rate >= 1_000, "expected at least 1 Kbps"),
            (
                "link.host_rate",
                self.host_rate() >= 1_000,
                "expected at least 1 Kbps",
            ),
            (
                "link.buffer",
                l.buffer >= (f.segment_size + l.header_bytes) as u64,
                "expected room for at least one full packet",
            ),
            (
                "link.header_bytes",
                (1..=1500).contains(&l.header_bytes),
                "expected 1 to 1500 bytes",
            ),
            (
                "link.loss_prob",
                prob(l.loss_prob),
                "expected a probability in [0, 1)",
            ),
            (
                "link.ecn_threshold_max",
                l.ecn_threshold_max
                    .is_none_or(|m| l.ecn_threshold.is_some_and(|k| m > k)),
                "expected above link.ecn_threshold (which must be set)",
            ),
            (
                "link.ecn_prob_max",
                l.ecn_prob_max > 0.0 && l.ecn_prob_max <= 1.0,
                "expected a probability in (0, 1]",
            ),
            (
                "receiver.ack_every",
                (1..=64).contains(&r.ack_every),
                "expected 1 to 64",
            ),
            (
                "receiver.delayed_ack_timeout",
                r.delayed_ack_timeout >= 1,
                "expected a positive timeout",
            ),
            (
                "receiver.sack_blocks",
                (1..=MAX_SACK_BLOCKS as u32).contains(&r.sack_blocks),
                "expected 1 to 4",
            ),
            (
                "trace_interval",
                self.trace_interval != Some(0),
                "expected a positive interval",
            ),
        ];
        for (key, ok, msg) in rules {
            if !ok {
                return err(key, msg.to_string());
            }
        }
        if self.flow_segments() > 1 << 30 {
            return err(
                "flows.segments",
                "expected at most 2^30 segments per flow".into(),
            );
        }
        if self.total_flows() > 1 << 20 {
            return err(
                "tonic.active_flow_cnt",
                format!(
                    "{} flows in all (senders × active_flow_cnt), expected at most 2^20",
                    self.total_flows()
                ),
            );
        }
        // The receiver keeps two bits per segment of every flow.
        if self.total_flows() as u64 * self.flow_segments() > 1 << 32 {
            return err(
                "flows.segments",
                "flows × segments exceeds 2^32: the receiver's state would not fit".into(),
            );
        }
        for (i, d) in self.drops.iter().enumerate() {
            if d.flow >= self.total_flows() {
                return err(
                    &format!("drop[{i}].flow"),
                    format!(
                        "flow {} does not exist (flows 0..{})",
                        d.flow,
                        self.total_flows()
                    ),
                );
            }
            if d.segment >= self.flow_segments() {
                return err(
                    &format!("drop[{i}].segment"),
                    format!(
                        "segment {} is beyond the flow's {}",
                        d.segment,
                        self.flow_segments()
                    ),
                );
            }
        }
        Ok(())
    }
}
