//! [`TonicNic`] on the NIC lcore's offload chain ([`crate::offload`]): ACKs of Tonic flows
//! from the wire (data path step 3), the Tonic messages of the host, the host's frames of
//! Tonic flows, and Periodic Updates with transmission (steps 5 and 6).

use offload_api::msg::MsgType;

use super::{RxVerdict, TonicNic};
use crate::buf::PacketBuf;
use crate::offload::{CounterSink, HostTcp, Offload, OffloadCtx, RxFrame, Verdict};

impl<B: PacketBuf> Offload<B> for TonicNic {
    fn name(&self) -> &'static str {
        "tonic"
    }

    /// Active while some flow exists: only then do frames visit Tonic's checks.
    fn active(&self) -> bool {
        self.has_flows()
    }

    /// A pure ACK of a Tonic flow ends on the NIC; a segment that also carries data, a FIN, a
    /// SYN or a RST goes on to the host, which keeps the receive side (Tonic §5).
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let Some(t) = rx.tcp() else {
            return Verdict::Pass;
        };
        match self.rx(t.src, t.seg, cx.now) {
            RxVerdict::NotTonic => Verdict::Pass,
            RxVerdict::Consumed => Verdict::Consumed,
            RxVerdict::ToHost => Verdict::ToHost,
        }
    }

    /// Flow add, flow remove and tail updates; the install acks go back to the host.
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        if !matches!(
            msg,
            MsgType::TonicFlowAdd | MsgType::TonicFlowRemove | MsgType::TonicTail
        ) {
            return Verdict::Pass;
        }
        if let Some(reply) = self.host_message(frame, cx.stack, cx.now) {
            let mut out = std::mem::take(&mut self.scratch);
            if reply.write_frame([0; 6], [0; 6], &[], &mut out).is_ok()
                && !cx.io.to_host(port, &out)
            {
                self.stats.acks_unsent += 1;
            }
            self.scratch = out;
        }
        Verdict::Consumed
    }

    /// The host's segments of a Tonic flow carry the NIC's snd.nxt; the frame goes on.
    fn host_tcp(
        &mut self,
        _cx: &mut OffloadCtx<'_, B>,
        _port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        self.host_tcp_frame(frame, tcp);
        Verdict::Pass
    }

    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        TonicNic::poll(self, cx.now, cx.stack, cx.io);
    }

    fn next_deadline(&self) -> Option<u64> {
        TonicNic::next_deadline(self)
    }

    fn counters(&self, out: CounterSink<'_>) {
        let s = self.stats();
        let all = [
            ("flows_added", s.flows_added),
            ("flows_refused", s.flows_refused),
            ("flows_removed", s.flows_removed),
            ("tail_msgs", s.tail_msgs),
            ("tail_bytes", s.tail_bytes),
            ("tail_refused", s.tail_refused),
            ("acks_in", s.acks_in),
            ("acks_consumed", s.acks_consumed),
            ("to_host", s.to_host),
            ("data_acks", s.data_acks),
            ("bad_acks", s.bad_acks),
            ("window_updates", s.window_updates),
            ("window_probes", s.window_probes),
            ("probes_backed_off", s.probes_backed_off),
            ("segments_tx", s.segments_tx),
            ("retransmits", s.retransmits),
            ("stale_skipped", s.stale_skipped),
            ("tx_failed", s.tx_failed),
            ("timeouts", s.timeouts),
            ("delivered_msgs", s.delivered_msgs),
            ("host_frames", s.host_frames),
            ("acks_unsent", s.acks_unsent),
        ];
        for (name, v) in all {
            out(name, v);
        }
        // Scheduled addresses dropped unsent when a flow's final small segment was
        // delivered (the engines' count; see `EngineStats::voided`).
        out(
            "voided",
            self.engines.iter().map(|e| e.engine.stats().voided).sum(),
        );
    }
}
