//! Per-flow traces of the Tonic NIC path (time, cwnd, snd.una, snd.nxt, retransmissions,
//! timeouts), recorded on every ACK and timeout and written as CSV.

use super::*;

/// One point of a flow's trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TracePoint {
    /// Time (the lcore's clock), nanoseconds.
    pub t_ns: u64,
    /// Congestion window, segments (App. D's `cwnd` for the TCP-style modules: reno,
    /// newreno, sack, dctcp; `wnd-size` for the others).
    pub cwnd: u32,
    /// Slow-start threshold, segments (`u32::MAX`: none, or not a TCP-style module).
    pub ssthresh: u32,
    /// The window the module gives the engine (`wnd-size`, Table 2), segments: for SACK,
    /// `sent_out + cwnd − pipe`.
    pub wnd_size: u32,
    /// Bytes cumulatively acknowledged (snd.una − init_seq).
    pub snd_una: u64,
    /// One past the highest byte sent (snd.nxt − init_seq).
    pub snd_nxt: u64,
    /// Retransmissions so far.
    pub retransmits: u64,
    /// Retransmission timeouts so far, of the flow's engine (all flows of its module).
    pub timeouts: u64,
}

impl TonicNic {
    /// The trace of the flow the host calls `host_id` (while it exists, and after it was
    /// removed until the id is reused).
    pub fn trace(&self, host_id: u32) -> Option<&[TracePoint]> {
        let slot = *self.by_host.get(&host_id)?;
        self.flows[slot].as_ref().map(|f| f.trace.as_slice())
    }

    /// Writes the trace of flow `host_id` as CSV: `t_ns,cwnd,ssthresh,wnd_size,snd_una,
    /// snd_nxt,retransmits,timeouts` (windows in segments, sequence numbers as byte offsets
    /// from the flow's first byte, an unbounded ssthresh as -1).
    pub fn write_trace_csv(&self, host_id: u32, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "t_ns,cwnd,ssthresh,wnd_size,snd_una,snd_nxt,retransmits,timeouts"
        )?;
        for p in self.trace(host_id).unwrap_or(&[]) {
            let ss = if p.ssthresh >= 1 << 20 {
                -1
            } else {
                p.ssthresh as i64
            };
            writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                p.t_ns, p.cwnd, ss, p.wnd_size, p.snd_una, p.snd_nxt, p.retransmits, p.timeouts
            )?;
        }
        Ok(())
    }

    pub(super) fn record(f: &mut Flow, e: &TonicEngine, now: Nanos, limit: usize) {
        if f.trace.len() >= limit {
            return;
        }
        let wnd_size = e.flow_view(f.eflow).map(|v| v.wnd_size).unwrap_or(0);
        // The TCP-style window modules keep App. D's congestion state in their user context
        // (a read of the context, as a statistics interface would do, §5); for the others
        // the window the module hands the engine is the best view of it.
        let (cwnd, ssthresh) = if TCP_STATE_MODULES.contains(&e.module().name()) {
            let st = TcpState::load(e.dd().ctx(f.eflow));
            (st.cwnd, st.ss_thresh)
        } else {
            (wnd_size, u32::MAX)
        };
        f.trace.push(TracePoint {
            t_ns: now,
            cwnd,
            ssthresh,
            wnd_size,
            snd_una: f.acked,
            snd_nxt: f.hi_sent,
            retransmits: f.retransmits,
            timeouts: e.stats().timeouts,
        });
    }

    /// A timeout hit some flow of engine `ei`: a trace point for each of its flows.
    pub(super) fn note_timeouts(&mut self, ei: usize, now: Nanos) {
        let limit = self.cfg.trace_limit;
        let e = &self.engines[ei].engine;
        for f in self.flows.iter_mut().flatten() {
            if f.engine == ei && f.eflow != FlowId::MAX {
                Self::record(f, e, now, limit);
            }
        }
    }
}
