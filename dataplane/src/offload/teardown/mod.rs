//! AccelTCP's connection-teardown offload on the NIC lcore's offload chain (AccelTCP §4.2,
//! App. A "Connection teardown"; `docs/architecture.md`, "Adding an offload").
//!
//! The host hands a closing connection over with one 0x090B message: the connection's state
//! and a TSO packet with every byte still to send. [`TeardownOffload`] takes it in
//! [`Offload::host_control`], and from then on owns the connection (AccelTCP §3, single
//! ownership): [`engine::TeardownEngine`] sends the data and the FIN, takes the peer's
//! segments of the connection in [`Offload::wire_rx`] (they never reach the host again), and
//! drives retransmission timeouts and TIME_WAIT from [`Offload::poll`] with one timer per
//! flow ([`timer`]). Whenever the number of connections being closed changed, one
//! [`TeardownCountRepr`] per poll tells the host (App. A: "The NIC stack notifies the host
//! stack of the number of connections being closed on NIC"), which compares it with its
//! threshold before offloading the next close.

pub mod engine;
#[cfg(test)]
mod tests;
mod timer;

use offload_api::msg::{Message, MsgType, TeardownCountRepr};
use offload_api::wire::{EthernetFrame, Ipv4Packet};
use offload_api::IPV4_HDR_LEN;

pub use engine::{
    FlowState, RxOutcome, TeardownConfig, TeardownEngine, TeardownError, TeardownStats,
};

use crate::buf::PacketBuf;
use crate::offload::{CounterSink, HostTcp, Offload, OffloadCtx, RxFrame, Verdict};
use crate::wheel::WheelConfigError;

/// The teardown offload of one NIC lcore: the engine plus the count reports to the host.
#[derive(Debug)]
pub struct TeardownOffload {
    engine: TeardownEngine,
    /// The count the host last received.
    reported: usize,
    /// The port the host's last teardown message was tagged with (reports go there).
    host_port: u16,
    /// Handovers whose peer had no ARP entry (sent to the broadcast address meanwhile).
    arp_miss: u64,
    scratch: Vec<u8>,
    msg: Vec<u8>,
}

impl Default for TeardownOffload {
    /// The offload with [`TeardownConfig::default`].
    fn default() -> Self {
        match TeardownOffload::new(TeardownConfig::default()) {
            Ok(t) => t,
            Err(e) => unreachable!("the default teardown config is valid: {e}"),
        }
    }
}

impl TeardownOffload {
    /// An idle teardown offload; fails when the timer wheel's dimensions are unusable.
    pub fn new(cfg: TeardownConfig) -> Result<TeardownOffload, WheelConfigError> {
        Ok(TeardownOffload {
            engine: TeardownEngine::new(cfg)?,
            reported: 0,
            host_port: 0,
            arp_miss: 0,
            scratch: Vec::new(),
            msg: Vec::new(),
        })
    }

    /// The engine (its flows and counters).
    pub fn engine(&self) -> &TeardownEngine {
        &self.engine
    }

    /// Sends the number of teardowns in progress to the host when it changed since the last
    /// report (at most once per call).
    fn report_count<B: PacketBuf>(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let n = self.engine.in_progress();
        if !self.engine.config().count_report || n == self.reported {
            return;
        }
        let m = Message::TeardownCount(TeardownCountRepr {
            count: n.min(u32::MAX as usize) as u32,
        });
        if m.write_frame([0; 6], [0; 6], &[], &mut self.scratch)
            .is_ok()
            && cx.io.to_host(self.host_port, &self.scratch)
        {
            self.reported = n;
            self.engine.count_report_sent();
        }
    }
}

impl TeardownOffload {
    /// The host does not know Ethernet addresses: a zero source becomes the port's MAC, a
    /// zero destination the peer's from the ARP table (App. A: the segments go out with the
    /// frame's addresses). Without an ARP entry the NIC starts resolving and the segments go
    /// to the broadcast address until a retransmission.
    fn fill_macs<B: PacketBuf>(&mut self, cx: &mut OffloadCtx<'_, B>, port: u16, f: &mut [u8]) {
        let eth = offload_api::msg::ETH_HEADER_LEN;
        let Some(&[hi, lo]) = f.get(eth + 2..eth + 4) else {
            return;
        };
        let hl = u16::from_be_bytes([hi, lo]) as usize;
        let Some(ip) = f.get(eth + hl..eth + hl + IPV4_HDR_LEN) else {
            return;
        };
        let remote = Ipv4Packet::new_unchecked(ip).dst_addr();
        let p = port as usize;
        let mut f = EthernetFrame::new_unchecked(f);
        if f.src_addr() == [0; 6] {
            f.set_src_addr(cx.stack.iface(p).mac);
        }
        if f.dst_addr() == [0; 6] {
            let mac = match cx.stack.arp_lookup(p, remote, cx.now) {
                Some(m) => m,
                None => {
                    self.arp_miss += 1;
                    cx.stack.resolve(p, remote, cx.now);
                    [0xff; 6]
                }
            };
            f.set_dst_addr(mac);
        }
    }
}

impl<B: PacketBuf> Offload<B> for TeardownOffload {
    fn name(&self) -> &'static str {
        "teardown"
    }

    /// Active while a connection is being closed, or a changed count is still to be
    /// reported.
    fn active(&self) -> bool {
        self.engine.in_progress() > 0
            || (self.engine.config().count_report && self.engine.in_progress() != self.reported)
    }

    /// Segments of the connections being closed end here; everything else passes.
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let Some(t) = rx.tcp() else {
            return Verdict::Pass;
        };
        let (src, dst, seg) = (t.src, t.dst, t.seg);
        let io = &mut *cx.io;
        match self
            .engine
            .rx(src, dst, seg, cx.now, &mut |p, f| io.to_port(p, f))
        {
            RxOutcome::NotMine => Verdict::Pass,
            RxOutcome::Consumed => Verdict::Consumed,
        }
    }

    /// Teardown offloads (0x090B); a refused one is counted ([`TeardownStats`]).
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        if msg != MsgType::Teardown {
            return Verdict::Pass;
        }
        self.host_port = port;
        let mut f = std::mem::take(&mut self.msg);
        f.clear();
        f.extend_from_slice(frame);
        self.fill_macs(cx, port, &mut f);
        let io = &mut *cx.io;
        let _ = self
            .engine
            .offload(port, &f, cx.now, &mut |p, f| io.to_port(p, f));
        self.msg = f;
        Verdict::Consumed
    }

    /// A SYN the host opens on a 4-tuple still in TIME_WAIT here ends that TIME_WAIT.
    fn host_tcp(
        &mut self,
        _cx: &mut OffloadCtx<'_, B>,
        _port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        use offload_api::wire::tcp::{TcpFlags, TcpPacket};
        let Some(t) = frame.get(tcp.l4_off..tcp.l4_off + tcp.l4_len) else {
            return Verdict::Pass;
        };
        if let Ok(t) = TcpPacket::new_checked(t) {
            let f = t.flags();
            if f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK) {
                self.engine
                    .host_syn(tcp.src, tcp.dst, t.src_port(), t.dst_port());
            }
        }
        Verdict::Pass
    }

    /// Due retransmission timeouts and TIME_WAIT ends, then the count report.
    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let io = &mut *cx.io;
        self.engine.advance(cx.now, &mut |p, f| io.to_port(p, f));
        self.report_count(cx);
    }

    fn next_deadline(&self) -> Option<u64> {
        self.engine.next_deadline()
    }

    fn counters(&self, out: CounterSink<'_>) {
        let s = self.engine.stats();
        let all = [
            ("offloaded", s.offloaded),
            ("refused_full", s.refused_full),
            ("refused_bad", s.refused_bad),
            ("in_progress", self.engine.in_progress() as u64),
            ("wheel_armed", self.engine.timers_armed() as u64),
            ("retransmits_rto", s.retransmits_rto),
            ("retransmits_fast", s.retransmits_fast),
            ("time_wait", s.time_wait),
            ("completed", s.completed),
            ("peer_rst", s.peer_rst),
            ("gave_up", s.gave_up),
            ("fin_wait2_timeouts", s.fin_wait2_timeouts),
            ("tw_reused", s.tw_reused),
            ("segments_tx", s.segments_tx),
            ("tx_failed", s.tx_failed),
            ("peer_data", s.peer_data),
            ("dup_fin_acked", s.dup_fin_acked),
            ("count_reports", s.count_reports),
            ("bad_checksum", s.bad_checksum),
            ("bad_options", s.bad_options),
            ("unacceptable", s.unacceptable),
            ("bad_ack", s.bad_ack),
            ("no_ack", s.no_ack),
            ("bad_syn", s.bad_syn),
            ("bad_rst", s.bad_rst),
            ("out_of_order", s.out_of_order),
            ("arp_miss", self.arp_miss),
        ];
        for (name, v) in all {
            out(name, v);
        }
    }
}
