//! What `nsplice` reads from a connection before handing it to the NIC (AccelTCP §4.3,
//! App. A "Connection splicing": the offsets between the two connections' sequence spaces).

use super::{State, Tcb};
use crate::tcp::seq::Seq;

/// A connection's sequence and option state at the moment of a splice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpliceView {
    /// SND.NXT (RFC 9293 §3.3.1): the next byte the peer will see from us.
    pub snd_nxt: Seq,
    /// RCV.NXT: the next byte we expect from the peer.
    pub rcv_nxt: Seq,
    /// Every byte we queued was sent and acknowledged, and no FIN is queued.
    pub send_drained: bool,
    /// The receive side holds out-of-order data (a hole the peer still has to fill).
    pub recv_holes: bool,
    /// Timestamps in use (RFC 7323 §3).
    pub timestamps: bool,
    /// SACK in use (RFC 2018).
    pub sack: bool,
    /// The shift of the peer's window fields (RFC 7323 §2.3).
    pub peer_wscale: u8,
    /// The shift of the window fields we send.
    pub local_wscale: u8,
    /// TS.Recent: the peer's latest TSval (RFC 7323 §4.3).
    pub ts_recent: u32,
    /// Our timestamp clock now: no TSval we sent is later than this.
    pub ts_now: u32,
    /// The MSS we advertised: the largest payload the peer sends us.
    pub local_mss: u32,
    /// The peer's MSS: the largest payload it accepts.
    pub peer_mss: u32,
}

impl Tcb {
    /// The connection's splice state at `now`, when it is ESTABLISHED (the only state a
    /// splice takes: both directions open, AccelTCP §4.3); `None` otherwise.
    pub fn splice_view(&self, now: u64) -> Option<SpliceView> {
        if self.state != State::Established || self.error.is_some() {
            return None;
        }
        Some(SpliceView {
            snd_nxt: self.snd.nxt,
            rcv_nxt: self.rcv.nxt,
            send_drained: self.sbuf.is_empty()
                && self.snd.una == self.snd.nxt
                && self.snd.nxt == self.snd.end
                && !self.flags.fin_queued,
            recv_holes: self.rbuf.has_ooo(),
            timestamps: self.opt.ts_ok,
            sack: self.opt.sack_ok,
            peer_wscale: self.opt.snd_wscale,
            local_wscale: self.opt.rcv_wscale,
            ts_recent: self.opt.ts_recent,
            ts_now: self.ts_now(now),
            local_mss: u32::from(self.cfg.mss),
            peer_mss: self.opt.eff_mss,
        })
    }
}
