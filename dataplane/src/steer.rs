//! Steering of received frames between the NIC lcores of a port whose queues the device
//! fills by a hash nobody can predict (`net_af_packet` with `qpairs=N`: the kernel's packet
//! fanout hashes each flow with a per-boot secret, and rolls over to another socket when
//! one's ring is full).
//!
//! A connection the host opened (`connect`) lives in the host context of the lcore that
//! sent its SYN, but its replies reach whichever queue the device picks. On a physical NIC
//! the context picks a source port whose RSS hash brings the replies back (mTCP's
//! `mtcp_init_rss`); here no port choice can, so the lcores hand such frames to the owner
//! instead:
//!
//! - a context picks its ephemeral ports from its own residue class: `port % N == k`
//!   ([`Steer::owner_of_port`], the host's `FlowCore`);
//! - an lcore that would hand the host a TCP frame to a port of the ephemeral range that is
//!   another lcore's pushes it onto that lcore's inbox (a bounded lock-free queue) and rings
//!   its doorbell; the owner takes it in its next iteration and classifies it as if its own
//!   queue had received it (its offloads see it, then its host).
//!
//! Connections the host accepted are left where the device put them: their local port is a
//! listening port. A listening port may lie inside the ephemeral range (a C program on
//! libmtcp chooses its own), so the contexts register every port they listen on
//! ([`Steer::listen`], from the host stack's listen hook): frames to a registered port are
//! never steered, and no context picks it for a connection ([`Steer::connect_owner`]).
//! nicemu's servers (`echo`, `kv`, `proxy`) also keep their listening port out of their
//! contexts' range.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam::queue::ArrayQueue;
use offload_api::doorbell::Doorbell;

use crate::buf::PacketBuf;
use crate::config::Config;
use crate::lcore::NicLcore;
use crate::port::Port;

/// Frames an lcore's inbox holds; more are dropped and counted (TCP retransmits).
pub const STEER_INBOX: usize = 4096;

/// The steering state of a port's lcores: one inbox per lcore, and the ephemeral port range
/// whose residues name the owners.
///
/// Invariant: every frame in inbox `k` is an IPv4 TCP frame to a port of the range with
/// residue `k`, which was not a listening port when it was pushed; and a context connects
/// only from ports of its residue that are not listening ports
/// ([`connect_owner`](Self::connect_owner)).
pub struct Steer<B> {
    inboxes: Box<[ArrayQueue<(usize, B)>]>,
    doorbells: Box<[Option<Arc<Doorbell>>]>,
    lo: u16,
    hi: u16,
    /// One bit per port: a context listens on it (set once, never cleared: connections it
    /// accepted may outlive the listener).
    listening: Box<[AtomicU64]>,
}

impl<B: PacketBuf> Steer<B> {
    /// Steering among `doorbells.len()` lcores (at least one) over ephemeral ports
    /// `lo..=hi`; lcore `k`'s doorbell, when it has one, is rung for each frame pushed to it
    /// so that a sleeping lcore wakes.
    pub fn new(doorbells: Vec<Option<Arc<Doorbell>>>, (lo, hi): (u16, u16)) -> Arc<Self> {
        let n = doorbells.len().max(1);
        Arc::new(Steer {
            inboxes: (0..n).map(|_| ArrayQueue::new(STEER_INBOX)).collect(),
            doorbells: doorbells.into_boxed_slice(),
            lo,
            hi,
            listening: (0..1 << 10).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Registers `port` as a listening port of some context: from now on frames to it stay
    /// on the lcore the device gave them (as an accepted connection's must), and
    /// [`connect_owner`](Self::connect_owner) gives it to no context. Idempotent; lock-free
    /// (the frame path reads the bit with one acquire load).
    ///
    /// A context registers before it can answer the port's first SYN. A connection some
    /// context opened from `port` before it was registered loses its steering (its replies
    /// stay where they arrive), as a program that listens on a port it is already
    /// connected from has asked for.
    pub fn listen(&self, port: u16) {
        self.listening[usize::from(port >> 6)].fetch_or(1 << (port & 63), Ordering::Release);
    }

    /// Whether `port` was registered by [`listen`](Self::listen).
    #[inline]
    pub fn is_listening(&self, port: u16) -> bool {
        self.listening[usize::from(port >> 6)].load(Ordering::Acquire) & 1 << (port & 63) != 0
    }

    /// The lcore whose host context owns local port `port`: `port % N` inside the
    /// ephemeral range, `None` outside it and for a listening port.
    #[inline]
    pub fn owner_of_port(&self, port: u16) -> Option<usize> {
        ((self.lo..=self.hi).contains(&port) && !self.is_listening(port))
            .then(|| usize::from(port) % self.inboxes.len())
    }

    /// The context that may use local port `port` for a connection (the host stack's
    /// `FlowCore`): its [`owner_of_port`](Self::owner_of_port), and `usize::MAX`, which is
    /// no context, for a port whose replies would not be steered (outside the range, or
    /// listening).
    #[inline]
    pub fn connect_owner(&self, port: u16) -> usize {
        self.owner_of_port(port).unwrap_or(usize::MAX)
    }

    /// The lcore that owns `frame`'s connection, for an IPv4 TCP frame (not a fragment
    /// after the first) whose destination port is in the ephemeral range; `None` for any
    /// other frame (it stays where it arrived).
    #[inline]
    pub fn owner(&self, frame: &[u8]) -> Option<usize> {
        const ETH: usize = 14;
        if frame.get(12..14)? != [0x08, 0x00] {
            return None;
        }
        let ip = frame.get(ETH..ETH + 20)?;
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        // Version 4, TCP, fragment offset 0 (a later fragment has no ports).
        if ip[0] >> 4 != 4 || ip[9] != 6 || u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0 {
            return None;
        }
        let d = frame.get(ETH + ihl + 2..ETH + ihl + 4)?;
        self.owner_of_port(u16::from_be_bytes([d[0], d[1]]))
    }

    /// Hands `buf`, received on port `port`, to lcore `to` (waking it); gives it back when
    /// that lcore's inbox is full.
    pub fn push(&self, to: usize, port: usize, buf: B) -> Result<(), B> {
        let Some(q) = self.inboxes.get(to) else {
            return Err(buf);
        };
        q.push((port, buf)).map_err(|(_, b)| b)?;
        if let Some(Some(d)) = self.doorbells.get(to) {
            d.ring();
        }
        Ok(())
    }

    /// The next frame handed to lcore `me`, with the port it was received on.
    pub fn pop(&self, me: usize) -> Option<(usize, B)> {
        self.inboxes.get(me)?.pop()
    }

    /// Whether lcore `me`'s inbox is empty.
    pub fn is_empty(&self, me: usize) -> bool {
        self.inboxes.get(me).is_none_or(|q| q.is_empty())
    }
}

/// Steering for `lcores` (lcore k serves host context k) when the configuration needs it:
/// several lcores on a `net_af_packet` port ([`PortConfig::is_af_packet`]); every lcore
/// joins it, and the contexts' port picker follows [`Steer::owner_of_port`] over `ephemeral`,
/// their ephemeral range. `None` (and the lcores untouched) otherwise.
///
/// [`PortConfig::is_af_packet`]: crate::config::PortConfig::is_af_packet
pub fn for_config<P: Port>(
    cfg: &Config,
    lcores: &mut [NicLcore<P>],
    ephemeral: (u16, u16),
) -> Option<Arc<Steer<P::Buf>>> {
    if lcores.len() < 2 || !cfg.ports.iter().any(|p| p.is_af_packet()) {
        return None;
    }
    let st = Steer::new(lcores.iter().map(|l| l.doorbell()).collect(), ephemeral);
    for (k, l) in lcores.iter_mut().enumerate() {
        l.set_steer(st.clone(), k);
    }
    Some(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::HeapBuf;
    use offload_api::wire::tcp::{TcpFlags, TcpHeader};

    fn tcp(dst_port: u16) -> Vec<u8> {
        let h = TcpHeader {
            src_port: 7,
            dst_port,
            flags: TcpFlags::ACK,
            ..TcpHeader::default()
        };
        crate::frames::tcp_with([2; 6], [4; 6], [10, 0, 0, 2], [10, 0, 0, 1], &h, b"x")
    }

    #[test]
    fn owners_are_the_residues_of_ephemeral_ports_only() {
        let s: Arc<Steer<HeapBuf>> = Steer::new(vec![None, None], (32768, 60999));
        assert_eq!(s.owner(&tcp(40_000)), Some(0));
        assert_eq!(s.owner(&tcp(40_001)), Some(1));
        assert_eq!(s.owner(&tcp(60_999)), Some(1));
        // A listening port, and the ends of the range.
        assert_eq!(s.owner(&tcp(80)), None);
        assert_eq!(s.owner(&tcp(32_767)), None);
        assert_eq!(s.owner(&tcp(61_000)), None);
        // Not TCP, not IPv4, a later fragment, truncated.
        let mut udp = tcp(40_001);
        udp[23] = 17;
        assert_eq!(s.owner(&udp), None);
        let mut arp = tcp(40_001);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(s.owner(&arp), None);
        let mut frag = tcp(40_001);
        frag[20..22].copy_from_slice(&[0x00, 0x10]);
        assert_eq!(s.owner(&frag), None);
        assert_eq!(s.owner(&tcp(40_001)[..36]), None);
        // IPv4 options move the ports: still found.
        let f = tcp(40_001);
        let mut opt = f[..34].to_vec();
        opt[14] = 0x46;
        opt.extend_from_slice(&[1, 1, 1, 0]);
        opt.extend_from_slice(&f[34..]);
        assert_eq!(s.owner(&opt), Some(1));
    }

    #[test]
    fn a_listening_port_inside_the_range_is_steered_nowhere_and_connected_from_nowhere() {
        let s: Arc<Steer<HeapBuf>> = Steer::new(vec![None, None], (32768, 60999));
        assert_eq!(s.owner(&tcp(40_001)), Some(1));
        assert_eq!(s.connect_owner(40_001), 1);
        assert!(!s.is_listening(40_001));
        s.listen(40_001);
        s.listen(40_001);
        assert!(s.is_listening(40_001));
        assert_eq!(s.owner(&tcp(40_001)), None);
        assert_eq!(s.connect_owner(40_001), usize::MAX);
        // Its neighbours in the bitmap word, and the ends of the port space, are untouched.
        for p in [40_000, 40_002, 40_001 ^ 63] {
            assert_eq!(s.connect_owner(p), usize::from(p) % 2, "{p}");
        }
        s.listen(0);
        s.listen(u16::MAX);
        assert!(s.is_listening(0) && s.is_listening(u16::MAX) && !s.is_listening(1));
        // Outside the range: steered nowhere, and no context connects from it.
        assert_eq!(s.connect_owner(80), usize::MAX);
    }

    #[test]
    fn an_inbox_holds_what_it_was_given_and_refuses_beyond_its_bound() {
        let bell = Doorbell::new();
        let s: Arc<Steer<HeapBuf>> = Steer::new(vec![None, Some(bell.clone())], (32768, 60999));
        assert!(s.is_empty(1));
        for i in 0..STEER_INBOX {
            assert!(s.push(1, i % 3, HeapBuf::from_frame(&tcp(40_001))).is_ok());
        }
        assert!(s.push(1, 0, HeapBuf::from_frame(&tcp(40_001))).is_err());
        assert!(s.push(5, 0, HeapBuf::from_frame(&tcp(40_001))).is_err());
        assert!(s.is_empty(0));
        let (port, b) = s.pop(1).unwrap();
        assert_eq!((port, b.data()), (0, &tcp(40_001)[..]));
        let mut n = 1;
        while s.pop(1).is_some() {
            n += 1;
        }
        assert_eq!(n, STEER_INBOX);
    }
}
