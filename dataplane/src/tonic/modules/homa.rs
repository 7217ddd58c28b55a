//! Homa (Montazeri et al., "Homa: A Receiver-Driven Low-Latency Transport Protocol Using
//! Network Priorities", SIGCOMM 2018) as a Tonic module, grant-token credit, and the
//! receiver's SRPT grant scheduler it needs.
//!
//! Sender (the module's hooks; Homa §3.2–§3.4, §3.7):
//! - A new message (flow) starts with `init_credit_bytes` of credit: its *unscheduled* bytes,
//!   RTTbytes in Homa (§3.2: "enough to cover the round-trip time"), sent at once at the
//!   unscheduled priority (`homa_unsched_prio`, by default the highest level, 7).
//! - The window (`wnd-size`) always ends at the grant offset (RTTbytes at first), so the
//!   data delivery engine never generates a segment the receiver has not allowed: the credit
//!   engine's ring (Tonic §3.1) holds only sendable segments, and the credit a RESEND adds
//!   goes to the retransmission rather than to a new segment.
//! - After that it sends only what GRANTs allow. A GRANT ([`PktType::Grant`]) carries the
//!   newly granted bytes in `grant_bytes` (the fixed credit engine adds them, Tonic §3.3.2),
//!   the absolute grant offset in `data[`[`GRANT_OFFSET_WORD`]`]`, and the *priority* the
//!   receiver assigns in `data[`[`GRANT_PRIO_WORD`]`]` (§3.4: "the receiver specifies the
//!   priority to use for the scheduled packets"), which the module hands to the engine with
//!   [`HookOutput::set_priority`]: every later packet of the flow carries it
//!   ([`TxSegment::priority`](crate::tonic::TxSegment::priority)).
//! - A RESEND ([`PktType::Nack`] with `data[`[`RESEND_END_WORD`]`]` > `nack`) asks for the
//!   segments `[nack, end)` again (§3.7: the receiver detects loss by timeout and sends
//!   RESEND); they are marked for retransmission and credit for them is added (they were
//!   granted already).
//! - Loss by timeout on the sender side too (nanoTransport's egress timer, Alg. 3): when no
//!   grant, ack or RESEND arrived for the RTO while segments are in flight, the unacknowledged
//!   transmitted segments are resent with credit for them, and the RTO backs off. A message
//!   that has sent everything granted and waits for grants has nothing in flight, so its timer
//!   is off (the engine disarms it): waiting for grants is not a loss.
//!
//! Receiver ([`GrantScheduler`], plain data, used by the testbench's `homa-grant` receiver):
//! SRPT over incoming messages (§3.4): the `overcommit` messages with the fewest remaining
//! bytes are *active*; each is kept granted RTTbytes ahead of what has arrived (so one
//! message alone can use the link), and the i-th shortest gets the i-th highest scheduled
//! priority. Messages shorter than RTTbytes never need a grant. (nanoTransport §4.4 implements
//! the same with a priority-scheduler extern: rank = remaining size, grantable = less than one
//! BDP outstanding.)
//!
//! User state: the RTO backoff count and the grant offset in segments (16 bytes).

use super::super::module::{
    CreditScheme, FlowView, HookOutput, IncomingInput, ModuleConfig, PeriodicInput, PktType,
    TonicModule, MAX_PRIORITY, MAX_WINDOW_SEGMENTS,
};
use super::ModuleParams;
use crate::tonic::{Nanos, SegId};

/// `IncomingPkt::data` word of a GRANT holding the absolute grant offset (bytes, low 32 bits;
/// Linux Homa's `homa_grant_hdr.offset`).
pub const GRANT_OFFSET_WORD: usize = 0;
/// `IncomingPkt::data` word of a GRANT holding the priority for scheduled packets (0–7;
/// `homa_grant_hdr.priority`).
pub const GRANT_PRIO_WORD: usize = 1;
/// `IncomingPkt::data` word of a RESEND (a NACK) holding one past the last segment to resend
/// (`nack` is the first).
pub const RESEND_END_WORD: usize = 2;

/// The Homa sender module.
#[derive(Clone, Copy, Debug)]
pub struct Homa {
    p: ModuleParams,
}

impl Homa {
    /// Homa with parameters `p` (`init_credit_bytes` = RTTbytes, `rto_ns`,
    /// `homa_unsched_prio`).
    pub fn new(p: ModuleParams) -> Self {
        Homa { p }
    }
}

impl TonicModule for Homa {
    fn name(&self) -> &str {
        "homa"
    }

    fn config(&self) -> ModuleConfig {
        ModuleConfig {
            credit_scheme: CreditScheme::Grant,
            user_ctx_bytes: 16,
            init_wnd_size: MAX_WINDOW_SEGMENTS,
            init_credit_bytes: self.p.init_credit_bytes,
            init_rtx_timer_ns: self.p.rto_ns,
            init_priority: self.p.homa_unsched_prio.min(MAX_PRIORITY),
            ..Default::default()
        }
    }

    fn init_wnd_size(&self, flow: &FlowView) -> Option<u32> {
        Some(self.unsched_segments(flow.mss))
    }

    fn init_flow(&self, _now: Nanos, flow: &FlowView, ctx: &mut [u64]) {
        ctx[GRANTED] = self.unsched_segments(flow.mss) as u64;
    }

    fn incoming(&self, i: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        let pkt = &i.pkt;
        let mut heard = i.newly_acked_cnt > 0;
        match pkt.pkt_type {
            PktType::Grant => {
                out.set_priority(pkt.data[GRANT_PRIO_WORD].min(MAX_PRIORITY as u32) as u8);
                let end = (pkt.data[GRANT_OFFSET_WORD] as u64).div_ceil(i.flow.mss.max(1) as u64);
                ctx[GRANTED] = ctx[GRANTED].max(end);
                heard = true;
            }
            PktType::Nack => {
                let start = pkt.nack;
                let end = (pkt.data[RESEND_END_WORD] as SegId).max(start + 1);
                // Resend only what was transmitted and is not acknowledged; credit for it.
                let end = end.min(i.flow.transmitted_end());
                let start = start.max(i.flow.wnd_start);
                if end > start {
                    let n = (end - start).min(MAX_WINDOW_SEGMENTS as u64) as u32;
                    let off = (start - i.flow.wnd_start) as u32;
                    let acked =
                        i.flow.acked.count_ones_below(off + n) - i.flow.acked.count_ones_below(off);
                    out.mark_for_rtx(start, start + n as u64);
                    out.add_credit((n - acked).saturating_mul(i.flow.mss));
                }
                heard = true;
            }
            _ => {}
        }
        // The window ends at the grant offset (the window is relative to `wnd-start`).
        let wnd = ctx[GRANTED].saturating_sub(i.new_wnd_start);
        out.set_wnd_size(wnd.min(MAX_WINDOW_SEGMENTS as u64) as u32);
        if heard {
            if ctx[BACKOFF] != 0 {
                ctx[BACKOFF] = 0;
                out.set_rtx_timer_amount(self.p.rto_ns);
            }
            out.reset_rtx_timer();
        }
    }

    fn periodic(&self, i: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        if !i.timeout_expired {
            return;
        }
        let f = &i.flow;
        let sent = (f.transmitted_end() - f.wnd_start).min(MAX_WINDOW_SEGMENTS as u64) as u32;
        let unacked = sent - f.acked.count_ones_below(sent);
        out.mark_for_rtx(f.wnd_start, f.wnd_start + sent as u64);
        out.add_credit(unacked.saturating_mul(f.mss));
        ctx[BACKOFF] = (ctx[BACKOFF] + 1).min(6);
        out.set_rtx_timer_amount(self.p.rto_ns << ctx[BACKOFF]);
        out.reset_rtx_timer();
    }
}

/// User-context word: the RTO backoff count.
const BACKOFF: usize = 0;
/// User-context word: one past the last segment granted (unscheduled ones included).
const GRANTED: usize = 1;

impl Homa {
    /// Segments of RTTbytes (at least one) for segment size `mss`.
    fn unsched_segments(&self, mss: u32) -> u32 {
        self.p
            .init_credit_bytes
            .div_ceil(mss.max(1))
            .clamp(1, MAX_WINDOW_SEGMENTS)
    }
}

/// One incoming message as the receiver's grant scheduler tracks it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RxMsg {
    /// Message length, bytes.
    len: u64,
    /// Distinct bytes received.
    received: u64,
    /// Bytes granted so far (the unscheduled RTTbytes included).
    granted: u64,
    /// The message is known (its first packet arrived).
    known: bool,
}

/// A grant the scheduler decided: send `bytes` more to message `msg`, up to byte `offset`,
/// at priority `priority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The message (the testbench's global flow id).
    pub msg: u32,
    /// Newly granted bytes.
    pub bytes: u32,
    /// The new grant offset (bytes of the message the sender may have sent).
    pub offset: u64,
    /// Priority for the scheduled packets, 0–7.
    pub priority: u8,
}

/// Homa's receiver-side SRPT grant scheduler (Homa §3.4; nanoTransport §4.4). Sans-I/O: the
/// caller reports data arrivals and sends the grants it returns.
#[derive(Clone, Debug)]
pub struct GrantScheduler {
    rtt_bytes: u64,
    overcommit: usize,
    sched_top: u8,
    msgs: Vec<RxMsg>,
    order: Vec<u32>,
}

impl GrantScheduler {
    /// A scheduler for messages `0..msgs`, granting `rtt_bytes` ahead to at most `overcommit`
    /// messages at once (Homa's degree of overcommitment), at priorities `sched_top`,
    /// `sched_top − 1`, … (shortest remaining first).
    pub fn new(msgs: u32, rtt_bytes: u64, overcommit: u32, sched_top: u8) -> Self {
        GrantScheduler {
            rtt_bytes: rtt_bytes.max(1),
            overcommit: overcommit.clamp(1, 8) as usize,
            sched_top: sched_top.min(MAX_PRIORITY),
            msgs: vec![RxMsg::default(); msgs as usize],
            order: Vec::new(),
        }
    }

    /// Bytes granted to `msg` so far (0 for an unknown one).
    pub fn granted(&self, msg: u32) -> u64 {
        self.msgs.get(msg as usize).map_or(0, |m| m.granted)
    }

    /// `bytes` new bytes of message `msg` (length `len`) arrived; grants decided now are
    /// appended to `out` (none for an unknown message id).
    pub fn on_data(&mut self, msg: u32, len: u64, bytes: u64, out: &mut Vec<Grant>) {
        let rtt = self.rtt_bytes;
        let Some(m) = self.msgs.get_mut(msg as usize) else {
            return;
        };
        if !m.known {
            // The first packet: the sender sent RTTbytes unscheduled (Homa §3.2).
            *m = RxMsg {
                len,
                received: 0,
                granted: len.min(rtt),
                known: true,
            };
        }
        m.received = (m.received + bytes).min(m.len);
        self.schedule(out);
    }

    /// Grants to the `overcommit` shortest-remaining incomplete messages that have less than
    /// RTTbytes granted beyond what arrived.
    fn schedule(&mut self, out: &mut Vec<Grant>) {
        self.order.clear();
        self.order.extend(
            self.msgs
                .iter()
                .enumerate()
                .filter(|(_, m)| m.known && m.granted < m.len)
                .map(|(i, _)| i as u32),
        );
        let msgs = &self.msgs;
        self.order.sort_by_key(|&i| {
            let m = &msgs[i as usize];
            (m.len - m.received, i)
        });
        for (rank, &i) in self.order.iter().take(self.overcommit).enumerate() {
            let m = &mut self.msgs[i as usize];
            let target = (m.received + self.rtt_bytes).min(m.len);
            if target > m.granted {
                let bytes = (target - m.granted).min(u32::MAX as u64) as u32;
                m.granted += bytes as u64;
                out.push(Grant {
                    msg: i,
                    bytes,
                    offset: m.granted,
                    priority: self.sched_top.saturating_sub(rank as u8),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{drain, drain_ids, engine_with};
    use super::*;
    use crate::tonic::module::{IncomingPkt, SegRange};
    use crate::tonic::EngineParams;

    fn homa() -> crate::tonic::TonicEngine {
        let m = Homa::new(ModuleParams {
            init_credit_bytes: 3000,
            rto_ns: 10_000,
            homa_unsched_prio: 7,
            ..Default::default()
        });
        let p = EngineParams {
            ring_depth: 1,
            ..Default::default()
        };
        engine_with(Box::new(m), 10, p)
    }

    fn grant(bytes: u32, offset: u32, prio: u32) -> IncomingPkt {
        let mut g = IncomingPkt::grant(bytes);
        g.data[GRANT_OFFSET_WORD] = offset;
        g.data[GRANT_PRIO_WORD] = prio;
        g
    }

    /// RTTbytes go out unscheduled at the highest priority; then only granted bytes, at the
    /// priority the grant names.
    #[test]
    fn unscheduled_then_granted_with_priority() {
        let mut e = homa();
        let tx = drain(&mut e, 0);
        assert_eq!(tx.iter().map(|t| t.seg).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(tx.iter().all(|t| t.priority == 7), "unscheduled priority");
        assert!(drain_ids(&mut e, 1).is_empty(), "no grant, nothing more");
        let v = e.flow_view(0).unwrap();
        assert_eq!(v.wnd_size, 3, "the window ends at RTTbytes");
        assert_eq!(e.ce().ring_len(0), 0, "nothing ungranted waits in the ring");
        // An ack alone moves wnd-start, not the window's end.
        e.incoming(0, &IncomingPkt::ack(2), 1).unwrap();
        assert_eq!(e.flow_view(0).unwrap().wnd_size, 1);
        assert!(drain_ids(&mut e, 1).is_empty());
        e.incoming(0, &grant(2000, 5000, 3), 2).unwrap();
        assert_eq!(e.flow_view(0).unwrap().wnd_size, 3, "segments 2, 3, 4");
        let tx = drain(&mut e, 2);
        assert_eq!(tx.iter().map(|t| t.seg).collect::<Vec<_>>(), vec![3, 4]);
        assert!(tx.iter().all(|t| t.priority == 3), "granted priority");
        // An out-of-range priority is clamped to 7.
        e.incoming(0, &grant(1000, 6000, 99), 3).unwrap();
        assert_eq!(drain(&mut e, 3)[0].priority, 7);
    }

    /// A RESEND marks the named range (only transmitted, unacknowledged segments) and adds
    /// credit for it; the retransmissions go at once (the window keeps ungranted segment 3
    /// out of the credit engine's ring).
    #[test]
    fn resend_retransmits_range_with_credit() {
        let mut e = homa();
        drain(&mut e, 0);
        // Segment 1 acked selectively; RESEND [0, 3): 0 and 2 again, 2000 B of credit.
        e.incoming(0, &IncomingPkt::sack(0, &[SegRange::new(1, 2)]), 1)
            .unwrap();
        let mut r = IncomingPkt::nack(0, 0);
        r.data[RESEND_END_WORD] = 3;
        e.incoming(0, &r, 2).unwrap();
        let segs = |tx: Vec<crate::tonic::TxSegment>| -> Vec<_> {
            tx.iter().map(|t| (t.seg, t.rtx)).collect()
        };
        assert_eq!(segs(drain(&mut e, 2)), vec![(0, true), (2, true)]);
        assert_eq!(e.stats().retransmitted, 2);
        e.incoming(0, &grant(1000, 4000, 6), 3).unwrap();
        assert_eq!(segs(drain(&mut e, 3)), vec![(3, false)]);
        // A RESEND of acknowledged or never-sent segments does nothing.
        let mut r = IncomingPkt::nack(0, 1);
        r.data[RESEND_END_WORD] = 2;
        e.incoming(0, &r, 4).unwrap();
        let mut r = IncomingPkt::nack(0, 50);
        r.data[RESEND_END_WORD] = 60;
        e.incoming(0, &r, 4).unwrap();
        assert!(drain(&mut e, 4).is_empty());
    }

    /// A timeout with segments in flight resends the unacknowledged ones with credit; with
    /// everything acknowledged (waiting for grants) no timer runs.
    #[test]
    fn timeout_only_with_data_in_flight() {
        let mut e = homa();
        drain(&mut e, 0);
        e.incoming(0, &IncomingPkt::sack(0, &[SegRange::new(1, 2)]), 1)
            .unwrap();
        let d = e.flow_view(0).unwrap().rtx_deadline;
        assert!(d > 0);
        let rep = e.periodic(d, 1);
        assert_eq!(rep.timeouts, 1);
        // Credit for 0 and 2, resent at once.
        assert_eq!(drain_ids(&mut e, d), vec![0, 2]);
        // Everything transmitted acknowledged: the flow waits for grants, timer off.
        e.incoming(0, &IncomingPkt::ack(3), d + 1).unwrap();
        assert_eq!(e.flow_view(0).unwrap().rtx_deadline, 0);
        assert_eq!(e.periodic(d + 1_000_000, 1).timeouts, 0);
    }

    /// SRPT: the shortest remaining message gets the grants and the highest scheduled
    /// priority; at most `overcommit` messages are granted; short messages need none.
    #[test]
    fn scheduler_grants_shortest_remaining_first() {
        let mut s = GrantScheduler::new(4, 10_000, 2, 6);
        let mut g = vec![];
        s.on_data(3, 5_000, 1000, &mut g);
        assert!(g.is_empty(), "shorter than RTTbytes: no grant");
        s.on_data(0, 100_000, 1000, &mut g);
        assert_eq!(
            g,
            vec![Grant {
                msg: 0,
                bytes: 1000,
                offset: 11_000,
                priority: 6
            }]
        );
        g.clear();
        s.on_data(1, 50_000, 1000, &mut g);
        // 1 is now the shortest remaining: rank 0 (priority 6); 0 is rank 1 (nothing owed).
        assert_eq!(g[0].msg, 1);
        assert_eq!(g[0].priority, 6);
        g.clear();
        s.on_data(2, 30_000, 1000, &mut g);
        // 2 < 1 < 0: 2 and 1 active; 0 gets nothing.
        assert!(g.iter().all(|x| x.msg != 0));
        assert_eq!(
            g[0],
            Grant {
                msg: 2,
                bytes: 1000,
                offset: 11_000,
                priority: 6
            }
        );
        g.clear();
        s.on_data(0, 100_000, 1000, &mut g);
        assert!(g.is_empty(), "0 is outside the overcommitted set");
        assert_eq!(s.granted(0), 11_000);
        s.on_data(9, 1, 1, &mut g);
        assert!(g.is_empty(), "unknown id ignored");
    }
}
