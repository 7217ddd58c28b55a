//! A smoltcp echo server: one smoltcp `Interface` on a wire queue with one TCP socket per
//! expected connection, all listening on the same port (smoltcp hands a SYN to the first
//! listening socket), each re-listening once its connection is over. After every
//! `Interface::poll` that saw traffic, every socket's received bytes are written back.
//! The device is a [`WireDevice`], with or without its checksum offload.

use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};

use crate::smol::{CsumOffloadStats, WireDevice};

/// The smoltcp echo server of the benchmark.
pub struct SmolEchoServer {
    iface: Interface,
    dev: WireDevice,
    sockets: SocketSet<'static>,
    handles: Vec<SocketHandle>,
    port: u16,
    buf: Vec<u8>,
    /// Some socket still holds received bytes it could not echo yet (send buffer full).
    backlog: bool,
    /// Bytes echoed.
    pub bytes: u64,
}

impl SmolEchoServer {
    /// A server at `ip`/`prefix` with MAC `mac` on the device `dev`, with `sockets` sockets
    /// of `buffer` bytes of receive and of send buffer each, listening on `port`.
    pub fn new(
        mut dev: WireDevice,
        mac: [u8; 6],
        (ip, prefix): ([u8; 4], u8),
        port: u16,
        sockets: usize,
        buffer: usize,
        now: Instant,
    ) -> Result<Self, String> {
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        cfg.random_seed = 0x5eed;
        let mut iface = Interface::new(cfg, &mut dev, now);
        let mut err = None;
        iface.update_ip_addrs(|a| {
            if a.push(IpCidr::new(
                IpAddress::v4(ip[0], ip[1], ip[2], ip[3]),
                prefix,
            ))
            .is_err()
            {
                err = Some("smoltcp: no room for the address".to_string());
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        let mut set = SocketSet::new(Vec::with_capacity(sockets));
        let mut handles = Vec::with_capacity(sockets);
        for _ in 0..sockets {
            let mut s = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0u8; buffer]),
                tcp::SocketBuffer::new(vec![0u8; buffer]),
            );
            // Echo replies go out at once (as TCP_NODELAY on the other servers).
            s.set_nagle_enabled(false);
            s.listen(port).map_err(|e| format!("smoltcp listen: {e}"))?;
            handles.push(set.add(s));
        }
        Ok(SmolEchoServer {
            iface,
            dev,
            sockets: set,
            handles,
            port,
            buf: vec![0u8; buffer.max(64)],
            backlog: false,
            bytes: 0,
        })
    }

    /// One round: `Interface::poll` (receive everything queued, send everything due), then,
    /// if anything happened, echo what every socket received and re-listen closed sockets.
    pub fn step(&mut self, now: Instant) {
        let r = self.iface.poll(now, &mut self.dev, &mut self.sockets);
        if r == PollResult::None && !self.backlog {
            return;
        }
        self.backlog = false;
        for &h in &self.handles {
            let s = self.sockets.get_mut::<tcp::Socket>(h);
            if s.can_recv() {
                let room = s.send_capacity() - s.send_queue();
                let n = room.min(self.buf.len());
                if let Ok(k) = s.recv_slice(&mut self.buf[..n]) {
                    // Cannot fail short: `k` is at most the free room.
                    if let Ok(w) = s.send_slice(&self.buf[..k]) {
                        self.bytes += w as u64;
                    }
                }
                if s.can_recv() {
                    self.backlog = true;
                }
            }
            match s.state() {
                tcp::State::CloseWait => s.close(),
                tcp::State::Closed => {
                    let _ = s.listen(self.port);
                }
                _ => {}
            }
        }
    }

    /// Frames the interface received and sent so far.
    pub fn frames(&self) -> u64 {
        self.dev.frames()
    }

    /// Frames the interface sent so far.
    pub fn frames_sent(&self) -> u64 {
        self.dev.tx_frames
    }

    /// What the device's checksum offload did so far; none without it.
    pub fn csum_offload(&self) -> Option<CsumOffloadStats> {
        self.dev.csum_offload()
    }
}
