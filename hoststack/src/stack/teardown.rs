//! `TCP_TEARDOWN_OFFLOAD`: closes handed to the NIC (AccelTCP §4.2, App. A "Connection
//! teardown").
//!
//! When the application closes a socket with [`SockOpt::TeardownOffload`](super::SockOpt)
//! set, the context offloads the close if all of §4.2's conditions hold:
//!
//! - the connection is ESTABLISHED or CLOSE_WAIT, without unread data, and the data still to
//!   send (unacknowledged and unsent) fits the peer's window and one TSO packet (64 KB)
//!   ([`Tcb::teardown_handover`](crate::tcp::tcb::Tcb::teardown_handover));
//! - the close does not block: no SO_LINGER with a non-zero timeout ("if the application
//!   wants to confirm data delivery at close(), the host stack should handle the connection
//!   teardown by itself"); SO_LINGER with a zero timeout resets the connection as usual;
//! - the NIC's last reported number of connections being closed is under
//!   [`HostConfig::teardown_threshold`](super::HostConfig::teardown_threshold).
//!
//! It then sends one 0x090B frame (the [`TeardownRepr`] header and a TSO IPv4/TCP packet at
//! snd.una with every remaining byte and the FIN) and forgets the connection at once: its
//! slot, demux entry and descriptor are free (single ownership, AccelTCP §3). The NIC sends
//! the data and FIN, retransmits, and runs TIME_WAIT. Otherwise the TCB closes the
//! connection itself, as without the option. Each outcome is counted in
//! [`TeardownHostStats`].
//!
//! The NIC reports its count with `TeardownCount` messages ([`Context::teardown_count`]).
//!
//! A 4-tuple the NIC keeps in TIME_WAIT is free for the host: a new connection on it (a SYN
//! the host sends, or a SYN from the peer) ends that TIME_WAIT on the NIC.

use offload_api::msg::{self, TeardownCountRepr, TeardownFrame, MAX_HEADER_LEN};
use offload_api::wire::EthernetFrame;

use super::{ep_key, Context, Key, SockOpts};
use crate::frame::{self, HostLink};
use crate::tcp::segment::TcpFlags;
use crate::tcp::tcb::{Endpoints, TeardownHandover, TeardownRefusal};

/// Counters of the teardown offload on the host side.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct TeardownHostStats {
    /// Closes handed to the NIC (0x090B sent; the connection was forgotten).
    pub offloaded: u64,
    /// Refused: not ESTABLISHED or CLOSE_WAIT (or unread data, or an error).
    pub refused_state: u64,
    /// Refused: the remaining data does not fit the peer's window.
    pub refused_window: u64,
    /// Refused: the remaining data does not fit one TSO packet (64 KB).
    pub refused_size: u64,
    /// Refused: SO_LINGER with a timeout (a blocking close).
    pub refused_linger: u64,
    /// Refused: the NIC's count was at the threshold.
    pub refused_threshold: u64,
    /// Refused: the link did not take the message.
    pub refused_link: u64,
    /// `TeardownCount` messages received.
    pub counts: u64,
    /// The NIC's last reported count.
    pub nic_count: u32,
    /// Segments of a connection just handed to the NIC that reached the host anyway (they
    /// passed the NIC before it installed the handover): dropped without a RST.
    pub late_segments: u64,
}

/// How long after a handover the host still recognises the connection's segments as the
/// NIC's (they raced the 0x090B message across the link) and drops them instead of
/// answering with a RST. The race lasts one link crossing; a second is ample.
pub const HANDOVER_GRACE_NS: u64 = 1_000_000_000;
/// Most handed-over connections remembered for [`HANDOVER_GRACE_NS`] (the oldest go first).
pub const HANDOVER_MEMORY: usize = 65_536;

impl<L: HostLink> Context<L> {
    /// Counters of the teardown offload (also in [`HostStats::teardown`](super::HostStats)).
    pub fn teardown_stats(&self) -> &TeardownHostStats {
        &self.stats.teardown
    }

    /// A `TeardownCount` from the NIC: the number of connections it is closing (AccelTCP
    /// App. A), compared with the threshold at the next close.
    pub fn teardown_count(&mut self, r: TeardownCountRepr) {
        self.stats.teardown.counts += 1;
        self.stats.teardown.nic_count = r.count;
    }

    /// close() of connection `cid` with `TCP_TEARDOWN_OFFLOAD` set: hands the close to the
    /// NIC when the conditions hold (see the module documentation), frees the connection and
    /// returns true; false when the host must close it itself (the reason is counted).
    pub(super) fn teardown_offload(&mut self, cid: u32, opts: &SockOpts) -> bool {
        let now = (self.now)();
        let Some(c) = self.conns[cid as usize].as_ref() else {
            return false;
        };
        let Some(h) = admit_teardown(
            &mut self.stats.teardown,
            c.tcb.teardown_handover(now),
            opts,
            self.cfg.teardown_threshold,
        ) else {
            return false;
        };
        let ep = c.tcb.endpoints();
        // The connection leaves its slot for the send (the payload borrows its TCB).
        let Some(c) = self.conns[cid as usize].take() else {
            return false;
        };
        let sent = self.send_teardown(ep, &h, c.tcb.teardown_payload());
        self.conns[cid as usize] = Some(c);
        if !sent {
            return false;
        }
        self.free_conn(cid);
        self.remember_handover(ep_key(&ep), now);
        true
    }

    /// Sends one 0x090B frame: `h`'s message header and its TSO packet with `payload` (App.
    /// A). False (counted) when the link does not take it.
    pub(super) fn send_teardown(
        &mut self,
        ep: Endpoints,
        h: &TeardownHandover,
        payload: [&[u8]; 2],
    ) -> bool {
        self.ip_id = self.ip_id.wrapping_add(1);
        let id = self.ip_id;
        let hl = h.repr.buffer_len();
        let sent = self
            .link
            .send_built(self.cfg.port, &mut self.scratch, &mut |buf| {
                // The TSO packet as a plain frame, then the 0x090B header slid in after the
                // Ethernet header (App. A: the EtherType changes and the header goes in front
                // of the IP packet).
                frame::build_tcp(buf, ep.local_ip, ep.remote_ip, id, &h.header, payload);
                let eth = msg::ETH_HEADER_LEN;
                buf.splice(eth..eth, std::iter::repeat_n(0u8, hl));
                EthernetFrame::new_unchecked(&mut buf[..])
                    .set_ethertype(msg::MsgType::Teardown.ethertype());
                h.repr
                    .emit(&mut TeardownFrame::new_unchecked(&mut buf[eth..eth + hl]));
            });
        debug_assert!(hl <= MAX_HEADER_LEN);
        if !sent {
            self.stats.link_full += 1;
            self.stats.teardown.refused_link += 1;
            return false;
        }
        self.stats.frames_out += 1;
        self.stats.teardown.offloaded += 1;
        true
    }

    /// Remembers a connection handed to the NIC for [`HANDOVER_GRACE_NS`].
    pub(super) fn remember_handover(&mut self, k: Key, now: u64) {
        self.expire_handovers(now);
        if self.handed_over_q.len() >= HANDOVER_MEMORY {
            if let Some((_, old)) = self.handed_over_q.pop_front() {
                self.handed_over.remove(&old);
            }
        }
        let until = now + HANDOVER_GRACE_NS;
        self.handed_over.insert(k, until);
        self.handed_over_q.push_back((until, k));
    }

    fn expire_handovers(&mut self, now: u64) {
        while let Some(&(until, k)) = self.handed_over_q.front() {
            if until > now {
                break;
            }
            self.handed_over_q.pop_front();
            if self.handed_over.get(&k) == Some(&until) {
                self.handed_over.remove(&k);
            }
        }
    }

    /// True (and counted) when `seg`, which matched no connection, belongs to one handed to
    /// the NIC a moment ago and is neither a SYN nor a RST: it passed the NIC before the
    /// handover was installed (single ownership, AccelTCP §3: the NIC owns it now), so the
    /// host drops it instead of resetting the NIC's connection. A lost ACK or FIN is repaired
    /// by the peer. (A RST to no connection is ignored anyway, RFC 9293 §3.10.7.1.)
    pub(super) fn late_for_handover(&mut self, k: Key, flags: TcpFlags, now: u64) -> bool {
        if flags.has(TcpFlags::SYN) || flags.has(TcpFlags::RST) || self.handed_over.is_empty() {
            return false;
        }
        self.expire_handovers(now);
        if self.handed_over.contains_key(&k) {
            self.stats.teardown.late_segments += 1;
            return true;
        }
        false
    }
}

/// AccelTCP §4.2's conditions on a close, for a full TCB's or a quasi-TCB's handover:
/// `handover` says whether the connection's state and data allow it; beyond that no blocking
/// close (SO_LINGER with a timeout) and the NIC's count of teardowns under `threshold`. The
/// handover when all hold; otherwise none, with the reason counted in `st`.
pub(super) fn admit_teardown(
    st: &mut TeardownHostStats,
    handover: Result<TeardownHandover, TeardownRefusal>,
    opts: &SockOpts,
    threshold: u32,
) -> Option<TeardownHandover> {
    let h = match handover {
        Ok(h) => h,
        Err(TeardownRefusal::Window) => {
            st.refused_window += 1;
            return None;
        }
        Err(TeardownRefusal::TooLarge) => {
            st.refused_size += 1;
            return None;
        }
        Err(TeardownRefusal::State | TeardownRefusal::UnreadData) => {
            st.refused_state += 1;
            return None;
        }
    };
    if opts.linger.is_some_and(|t| t > 0) {
        st.refused_linger += 1;
        return None;
    }
    if st.nic_count >= threshold {
        st.refused_threshold += 1;
        return None;
    }
    Some(h)
}
