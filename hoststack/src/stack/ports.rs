//! Local addresses and ephemeral ports for bind and connect: a port free for the remote
//! (and, with a flow map, one whose replies reach this core), rotating over the context's
//! addresses when it has several.

use super::{key, Context};
use crate::frame::HostLink;
use crate::tcp::tcb::Endpoints;
use crate::Errno;

impl<L: HostLink> Context<L> {
    /// A local address and port for a connection to `remote_ip:remote_port` when the
    /// context has several addresses ([`super::HostConfig::extra_ips`]): the addresses take
    /// turns, and on each any ephemeral port not already connected to that remote will do
    /// (as Linux's `IP_BIND_ADDRESS_NO_PORT`); on the primary address the port must also be
    /// unbound. With a flow map, only ports whose replies reach this core.
    pub(super) fn pick_local(
        &mut self,
        remote_ip: [u8; 4],
        remote_port: u16,
    ) -> Result<([u8; 4], u16), Errno> {
        let n = self.cfg.extra_ips.len() + 1;
        let (lo, hi) = self.cfg.ephemeral;
        let span = (hi as u32).saturating_sub(lo as u32) + 1;
        for _ in 0..n {
            let i = self.next_local_ip % n;
            self.next_local_ip = (i + 1) % n;
            if i == 0 {
                if let Ok(p) = self.pick_port(Some((remote_ip, remote_port))) {
                    *self.bound.entry(p).or_insert(0) += 1;
                    return Ok((self.cfg.ip, p));
                }
                continue;
            }
            let ip = self.cfg.extra_ips[i - 1];
            let mut p = self.next_ephemeral.clamp(lo, hi);
            for _ in 0..span {
                let cand = p;
                p = if p >= hi { lo } else { p + 1 };
                if self.tuple_taken(key(remote_ip, remote_port, ip, cand)) {
                    continue;
                }
                if let Some(map) = &self.cfg.flow_core {
                    let ep = Endpoints {
                        local_ip: ip,
                        local_port: cand,
                        remote_ip,
                        remote_port,
                    };
                    if map(&ep) != self.cfg.core {
                        continue;
                    }
                }
                self.next_ephemeral = p;
                return Ok((ip, cand));
            }
        }
        Err(Errno::AddrNotAvail)
    }

    /// Whether a connection with demux key `k` exists here, or is a pair the NIC splices
    /// (from its install ack to its closure report, AccelTCP §4.3): a new connection on
    /// such a 4-tuple would have its segments translated as the pair's.
    pub(super) fn tuple_taken(&self, k: super::Key) -> bool {
        self.demux.contains_key(&k)
            || (!self.splice_keys.is_empty() && self.splice_keys.contains_key(&k))
    }

    /// An ephemeral port: free for `remote` (or entirely free when none) and, with a flow
    /// map, one whose replies reach this core (mTCP's `mtcp_init_rss`).
    pub(super) fn pick_port(&mut self, remote: Option<([u8; 4], u16)>) -> Result<u16, Errno> {
        let (lo, hi) = self.cfg.ephemeral;
        let span = (hi as u32).saturating_sub(lo as u32) + 1;
        let mut p = self.next_ephemeral.clamp(lo, hi);
        for _ in 0..span {
            let cand = p;
            p = if p >= hi { lo } else { p + 1 };
            let free = match remote {
                Some((rip, rport)) => {
                    !self.tuple_taken(key(rip, rport, self.cfg.ip, cand))
                        && !self.listeners.contains_key(&cand)
                        && !self.bound.contains_key(&cand)
                }
                None => !self.bound.contains_key(&cand) && !self.listeners.contains_key(&cand),
            };
            if !free {
                continue;
            }
            if let (Some(map), Some((rip, rport))) = (&self.cfg.flow_core, remote) {
                let ep = Endpoints {
                    local_ip: self.cfg.ip,
                    local_port: cand,
                    remote_ip: rip,
                    remote_port: rport,
                };
                if map(&ep) != self.cfg.core {
                    continue;
                }
            }
            self.next_ephemeral = p;
            return Ok(cand);
        }
        Err(Errno::AddrNotAvail)
    }
}
