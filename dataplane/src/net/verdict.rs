//! What the NIC does with a frame: one vocabulary for the NIC's own duties ([`NicStack::rx`]:
//! ARP, ICMP, checks) and for the offloads of the chain ([`Offload`]), so that the lcore loop
//! acts on one decision whichever part made it.
//!
//! [`NicStack::rx`]: super::stack::NicStack::rx
//! [`Offload`]: crate::offload::Offload

use super::parse::DropReason;

/// What the NIC stack or an offload decided about a frame (or message) it was offered.
///
/// For frames from the wire every verdict applies; the NIC stack answers only
/// [`Verdict::Pass`], [`Verdict::Consumed`], [`Verdict::Drop`] and [`Verdict::Reply`]. For
/// frames from the host ([`Offload::host_tcp`]), [`Verdict::Reply`] and [`Verdict::ToHost`]
/// both return the frame to the host over the PCIe link, and [`Verdict::Out`] sends it out
/// of another port than the host asked for. For control messages
/// ([`Offload::host_control`]) only [`Verdict::Pass`] (not mine) and [`Verdict::Consumed`]
/// (taken; any answer went out through [`OffloadIo::to_host`]) are meaningful; the others
/// count as consumed.
///
/// [`Offload::host_tcp`]: crate::offload::Offload::host_tcp
/// [`Offload::host_control`]: crate::offload::Offload::host_control
/// [`OffloadIo::to_host`]: crate::offload::OffloadIo::to_host
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not for this part: offer it to the next (the NIC stack's pass goes to the offload
    /// chain, an offload's to the next offload), then the lcore's default (hand wire frames
    /// to the host, send host frames to the wire). (Callers of the NIC stack that need the
    /// headers re-read them with [`super::parse::parse_headers`]: returning the parsed view
    /// costs store-forwarding stalls on the per-packet path.)
    Pass,
    /// The frame was used (an ARP reply learnt, a message taken, a frame dropped and counted
    /// by an offload): free the buffer.
    Consumed,
    /// The frame is malformed or refused: free the buffer. Already counted.
    Drop(DropReason),
    /// The buffer was rewritten in place (ARP reply, ICMP echo reply, an offload's answer):
    /// send it back out of the port it came in on.
    Reply,
    /// The buffer was rewritten in place: send it out of port N (a port index of the
    /// configuration, e.g. the other side of a splice).
    Out(u16),
    /// Hand the frame to the host now, without offering it to the offloads after this one.
    ToHost,
}
