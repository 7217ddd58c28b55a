//! `TCP_TONIC`: connections whose sender side runs in the NIC's Tonic engines (Tonic NSDI '20
//! §5, "Integrating Tonic into the Transport Layer").
//!
//! A socket with [`SockOpt::Tonic`](super::SockOpt::Tonic) set opens its connection as usual.
//! When the handshake completes, the context maps the connection to a flow id, hands the TCB's
//! sender to the NIC ([`Tcb::hand_sender_to_tonic`](crate::tcp::tcb::Tcb::hand_sender_to_tonic))
//! and registers the flow with a `TonicFlowAdd` (4-tuple, MSS, first sequence number, module
//! name) over the PCIe link. From then on:
//!
//! - the application's writes fill the send buffer as usual, and the context tells the NIC
//!   about new data with `TonicTail` messages carrying the new bytes (the DMA of the send
//!   buffer), in MSS multiples plus one final small segment (§5's `tonic-tail`);
//! - the NIC answers with `TonicDelivered` (cumulative snd.una): the context frees that
//!   send-buffer space and reports the socket writable;
//! - when the application has shut the write side and every byte is delivered, the context
//!   sends `TonicFlowRemove` and the TCB resumes its own sender to send the FIN and finish the
//!   close. A closed (aborted or failed) connection is removed from the NIC at once.
//!
//! If the NIC refuses the flow (install ack other than OK: an unknown module, a full table, no
//! Tonic on this NIC), the TCB takes its sender back and sends everything itself.
//!
//! Limits (documented in `tcp/tcb/tonic.rs`): no timestamps on these connections (window
//! scaling is negotiated; the NIC applies the peer's shift). Data the peer sends during the
//! Tonic phase is received and acknowledged by the host (the NIC writes its own snd.nxt into
//! those ACKs), but the peer's window and ACK numbers on such data segments are taken by the
//! NIC only. A listener's `TCP_TONIC` applies to the connections it accepts.

use offload_api::msg::{
    self, AckStatus, FourTuple, InstallAckRepr, Message, TonicDeliveredRepr, TonicFlowAddRepr,
    TonicFlowRemoveRepr, TonicTailRepr,
};
use offload_api::wire::EthernetFrame;

use super::{Context, Owner, TonicPhase};
use crate::frame::HostLink;
use crate::tcp::seq::Seq;
use crate::tcp::tcb::State;

/// Most data bytes one `TonicTail` message carries (rounded down to an MSS multiple), so that
/// the message fits one link buffer.
pub const TAIL_CHUNK: usize = 60_000;

/// Counters of the Tonic side of a context.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct TonicHostStats {
    /// Flows handed to the NIC (`TonicFlowAdd` sent).
    pub flows_added: u64,
    /// Flows the NIC refused (the host sent the data itself).
    pub flows_refused: u64,
    /// Flows removed (`TonicFlowRemove` sent).
    pub flows_removed: u64,
    /// `TonicTail` messages sent.
    pub tail_msgs: u64,
    /// Data bytes they carried.
    pub tail_bytes: u64,
    /// `TonicDelivered` messages taken.
    pub delivered_msgs: u64,
    /// Delivery notifications for no known flow (a malformed Tonic message counts in
    /// [`HostStats::malformed`](super::HostStats::malformed)).
    pub stray: u64,
    /// Messages the link refused (retried on the next flush).
    pub link_full: u64,
}

impl<L: HostLink> Context<L> {
    /// Counters of the Tonic side.
    pub fn tonic_stats(&self) -> &TonicHostStats {
        &self.tonic_stats
    }

    /// The NIC flow id of a connected socket whose sender the NIC runs.
    pub fn tonic_flow(&self, fd: super::Fd) -> Option<u32> {
        match self.sock(fd).ok()?.state {
            super::SockState::Conn(cid) => self.conns[cid as usize].as_ref()?.owner.tonic_flow(),
            _ => None,
        }
    }

    fn send_msg(&mut self, m: &Message, data: [&[u8]; 2]) -> bool {
        let port = self.cfg.port;
        let Context {
            link,
            scratch,
            tonic_stats,
            ..
        } = self;
        let ok = link.send_built(port, scratch, &mut |buf| write_msg(m, data, buf));
        if !ok {
            tonic_stats.link_full += 1;
        }
        ok
    }

    /// Tonic work of connection `cid` before its TCB transmits: the handover once it is
    /// established.
    pub(super) fn tonic_before_transmit(&mut self, cid: u32) {
        let Some(c) = self.conns[cid as usize].as_mut() else {
            return;
        };
        let Owner::Tonic(t) = c.owner else { return };
        if t.phase != TonicPhase::Pending || c.tcb.state() != State::Established {
            return;
        }
        let Some(h) = c.tcb.hand_sender_to_tonic() else {
            // Not possible (options negotiated, data in flight): the host keeps the sender.
            c.owner.set_tonic_phase(TonicPhase::Over);
            return;
        };
        let ep = c.tcb.endpoints();
        let flow = match self.free_flow_ids.pop() {
            Some(f) => f,
            None => {
                self.next_flow_id += 1;
                self.next_flow_id - 1
            }
        };
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let req = self.next_request_id;
        let add = Message::TonicFlowAdd(TonicFlowAddRepr {
            request_id: req,
            flow_id: flow,
            tuple: FourTuple {
                local_ip: ep.local_ip,
                local_port: ep.local_port,
                remote_ip: ep.remote_ip,
                remote_port: ep.remote_port,
            },
            // The NIC fills both from its interface and ARP table (as for every host frame).
            local_mac: [0; 6],
            remote_mac: [0; 6],
            port: self.cfg.port,
            mss: h.mss,
            init_seq: h.init_seq.0,
            init_cwnd: 0,
            init_rate_bps: 0,
            init_credit: 0,
            snd_wscale: h.snd_wscale,
            module: t.module,
        });
        if !self.send_msg(&add, [&[], &[]]) {
            // No room on the link: the host keeps the sender for this connection.
            let c = self.conns[cid as usize].as_mut().expect("live conn");
            c.tcb.resume_sender();
            c.owner.set_tonic_phase(TonicPhase::Over);
            self.free_flow_ids.push(flow);
            return;
        }
        self.tonic_stats.flows_added += 1;
        self.tonic_flows.insert(flow, cid);
        let c = self.conns[cid as usize].as_mut().expect("live conn");
        c.owner
            .set_tonic_phase(TonicPhase::Active { flow, request: req });
    }

    /// Tonic work of connection `cid` after its TCB transmitted: new data to the NIC
    /// (`TonicTail`), and the end of the Tonic phase (`TonicFlowRemove`, the TCB resumes for
    /// its FIN). Returns true when the connection must transmit again (it resumed).
    pub(super) fn tonic_after_transmit(&mut self, cid: u32, now: u64) -> bool {
        let Some(c) = self.conns[cid as usize].as_ref() else {
            return false;
        };
        let Some(flow) = c.owner.tonic_flow() else {
            return false;
        };
        let closed = c.tcb.state() == State::Closed;
        if !closed {
            loop {
                let c = self.conns[cid as usize].as_mut().expect("live conn");
                let Some(len) = c.tcb.tonic_tail_due(now, TAIL_CHUNK) else {
                    break;
                };
                let port = self.cfg.port;
                let Context {
                    link,
                    scratch,
                    conns,
                    tonic_stats,
                    ..
                } = self;
                let tcb = &conns[cid as usize].as_ref().expect("live conn").tcb;
                let (tail, data) = tcb.tonic_tail_data(len);
                let m = Message::TonicTail(TonicTailRepr {
                    flow_id: flow,
                    tail: tail.0,
                    data_len: len,
                });
                if !link.send_built(port, scratch, &mut |buf| write_msg(&m, data, buf)) {
                    tonic_stats.link_full += 1;
                    break;
                }
                tonic_stats.tail_msgs += 1;
                tonic_stats.tail_bytes += len as u64;
                conns[cid as usize]
                    .as_mut()
                    .expect("live conn")
                    .tcb
                    .tonic_tail_sent(len);
            }
        }
        let c = self.conns[cid as usize].as_ref().expect("live conn");
        if !(closed || c.tcb.tonic_sender_done()) {
            return false;
        }
        let rm = Message::TonicFlowRemove(TonicFlowRemoveRepr {
            request_id: self.next_request_id.wrapping_add(1),
            flow_id: flow,
        });
        if !self.send_msg(&rm, [&[], &[]]) {
            return false;
        }
        self.next_request_id = self.next_request_id.wrapping_add(1);
        self.tonic_stats.flows_removed += 1;
        self.release_flow(cid, flow);
        let c = self.conns[cid as usize].as_mut().expect("live conn");
        c.tcb.resume_sender();
        !closed
    }

    fn release_flow(&mut self, cid: u32, flow: u32) {
        if self.tonic_flows.get(&flow) == Some(&cid) {
            self.tonic_flows.remove(&flow);
            self.free_flow_ids.push(flow);
        }
        if let Some(c) = self.conns[cid as usize].as_mut() {
            c.owner.set_tonic_phase(TonicPhase::Over);
        }
    }

    /// A connection is being freed: forget its flow id (the NIC was told when it closed).
    pub(super) fn tonic_forget(&mut self, cid: u32) {
        let flow = self.conns[cid as usize]
            .as_ref()
            .and_then(|c| c.owner.tonic_flow());
        if let Some(f) = flow {
            self.release_flow(cid, f);
        }
    }

    /// A delivery notification from the NIC (`TonicDelivered`): the flow's snd.una moved;
    /// the TCB frees that send-buffer space and the socket becomes writable.
    pub(super) fn tonic_delivered(&mut self, d: TonicDeliveredRepr) {
        self.tonic_stats.delivered_msgs += 1;
        let Some(&cid) = self.tonic_flows.get(&d.flow_id) else {
            self.tonic_stats.stray += 1;
            return;
        };
        let Some(c) = self.conns[cid as usize].as_mut() else {
            return;
        };
        let ev = c.tcb.tonic_delivered(Seq(d.delivered));
        let fd = c.fd;
        self.mark_dirty(cid);
        if let (Some(fd), true) = (fd, ev.writable) {
            self.notify(fd);
        }
    }

    /// The NIC's answer to a `TonicFlowAdd` (`a.request_type` is `TonicFlowAdd`). A refusal
    /// gives the sender back to the TCB, which sends the data itself from snd.una. An ack
    /// for no active flow is ignored.
    pub(super) fn tonic_install_ack(&mut self, a: InstallAckRepr) {
        let found = self.tonic_flows.iter().find_map(|(&flow, &cid)| {
            let Owner::Tonic(t) = self.conns[cid as usize].as_ref()?.owner else {
                return None;
            };
            let TonicPhase::Active { request, .. } = t.phase else {
                return None;
            };
            (request == a.request_id).then_some((flow, cid))
        });
        let Some((flow, cid)) = found else {
            return;
        };
        if a.status != AckStatus::Ok {
            // Refused: the host sends the data itself, from snd.una.
            self.tonic_stats.flows_refused += 1;
            self.release_flow(cid, flow);
            if let Some(c) = self.conns[cid as usize].as_mut() {
                c.tcb.resume_sender();
            }
            self.mark_dirty(cid);
        }
    }
}

/// Writes message `m` with the payload `data` (two slices) as a whole frame into `out`: the
/// NIC fills the MACs of host frames, so both are zero here.
fn write_msg(m: &Message, data: [&[u8]; 2], out: &mut Vec<u8>) {
    let len = data[0].len() + data[1].len();
    out.clear();
    let need = m.frame_len(len);
    out.resize(need - len, 0);
    EthernetFrame::new_unchecked(&mut out[..]).set_ethertype(m.msg_type().ethertype());
    if m.emit(&mut out[msg::ETH_HEADER_LEN..]).is_err() {
        out.clear();
        return;
    }
    out.extend_from_slice(data[0]);
    out.extend_from_slice(data[1]);
}
