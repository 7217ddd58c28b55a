//! The `nic` target: a NIC lcore and a host from the wire, with a scripted client.

use super::*;
/// What the scripted client knows of one of its connections.
#[derive(Clone, Copy, Default)]
pub(super) struct ClientConn {
    /// Our next sequence number.
    snd_nxt: u32,
    /// The server's next sequence number (what we acknowledge).
    rcv_nxt: u32,
    /// The server's last TSval (our TSecr).
    ts_recent: u32,
    /// Whether the server's SYN-ACK was seen.
    synack: bool,
}

/// The scripted client and the node under test on one in-memory wire.
pub(super) struct NicRig {
    clock: Clock,
    wire: WireQueue,
    node: Node<WireQueue>,
    echo: EchoServer,
    conns: HashMap<u16, ClientConn>,
    last_port: u16,
    ts: u32,
    /// Payload bytes the node sent the client.
    echoed: u64,
}

/// How deep a `nic` input reached (for the tests of the seeds).
#[derive(Clone, Copy, Debug, Default)]
pub struct NicRun {
    /// Connections the host accepted (passive opens).
    pub accepted: u64,
    /// Payload bytes the node sent back to the client.
    pub echoed: u64,
    /// Connections the NIC's teardown offload took over.
    pub torn_down: u64,
}

/// The default chain (splice, teardown, Tonic, SYN cookies, in that order) with a teardown
/// slab of 256 flows instead of 65,536: its timer wheel's bitmaps (one bit per flow in each
/// of 1,024 slots) are then 32 KiB rather than 8 MiB, which every input would otherwise
/// allocate and zero on its first close (most of the target's time). A script opens at most
/// a few dozen connections, so the limit is never what a run tests.
fn small_chain() -> dataplane::offload::OffloadChain<dataplane::buf::HeapBuf> {
    use dataplane::offload::{setup::SetupOffload, splice::SpliceOffload, teardown};
    let cfg = teardown::TeardownConfig {
        max_flows: 256,
        ..teardown::TeardownConfig::default()
    };
    dataplane::offload::OffloadChain::new()
        .with(Box::new(SpliceOffload::default()))
        .with(Box::new(
            teardown::TeardownOffload::new(cfg).expect("teardown config"),
        ))
        .with(Box::new(dataplane::tonic::nic::TonicNic::default()))
        .with(Box::new(SetupOffload::default()))
}

impl NicRig {
    fn new() -> NicRig {
        let clock = Clock::virtual_clock();
        clock.advance(1_000_000_000);
        let (mut ea, mut eb) = memwire::wire_pair(&WireConfig {
            queues: 1,
            ring_size: 1024,
            macs: [CLIENT_MAC, SERVER_MAC],
            clock: clock.clone(),
            ..WireConfig::default()
        });
        let wire = ea.take_queue(0).expect("queue 0");
        let qb = eb.take_queue(0).expect("queue 0");
        let mut spec = NodeSpec::new("b", SERVER_IP, 24, SERVER_MAC);
        spec.host = HostConfig::new(SERVER_IP, 0);
        let mut node = Node::new(spec, qb, &clock);
        node.nic.set_offloads(small_chain());
        let off = ServerOffloads {
            setup: true,
            teardown: true,
        };
        let echo = EchoServer::with_offloads(&mut node.host, ECHO_PORT, off).expect("listen");
        let mut rig = NicRig {
            clock,
            wire,
            node,
            echo,
            conns: HashMap::new(),
            last_port: 40_000,
            ts: 1_000,
            echoed: 0,
        };
        // The node learns the client's MAC from its ARP request (as a real peer would).
        rig.inject(&arp_request());
        rig.settle();
        rig
    }

    fn inject(&mut self, frame: &[u8]) {
        let Some(mut b) = self.wire.alloc() else {
            return;
        };
        if b.set_frame(frame) {
            let mut v = vec![b];
            self.wire.tx_burst(&mut v);
        }
    }

    /// Runs the node until it is idle (bounded), checking and learning from what it sends.
    fn settle(&mut self) {
        let mut out = Vec::new();
        for _ in 0..64 {
            self.clock.advance(10_000);
            let w = self.node.step() + self.echo.step(&mut self.node.host);
            out.clear();
            self.wire.rx_burst(&mut out, 64);
            let got = out.len();
            for b in out.drain(..) {
                let f = b.data().to_vec();
                check_wire_frame(&f);
                self.learn(&f);
            }
            if w == 0 && got == 0 {
                break;
            }
        }
    }

    /// Tracks the server's side of each client connection from its segments.
    fn learn(&mut self, f: &[u8]) {
        if f.len() < 34 + 20 || f[12..14] != [0x08, 0x00] || f[14 + 9] != 6 {
            return;
        }
        let ihl = usize::from(f[14] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
        let Some(seg) = f.get(14 + ihl..14 + total) else {
            return;
        };
        let Ok(r) = tcp::parse(seg) else { return };
        self.echoed += r.payload.len() as u64;
        let c = self.conns.entry(r.dst_port).or_default();
        if r.flags.has(TcpFlags::SYN) && r.flags.has(TcpFlags::ACK) {
            c.synack = true;
            c.rcv_nxt = r.seq.0.wrapping_add(1);
        } else if r.flags.has(TcpFlags::RST) {
            return;
        } else {
            let end = r.seq.0.wrapping_add(r.seg_len());
            if end.wrapping_sub(c.rcv_nxt) as i32 > 0 {
                c.rcv_nxt = end;
            }
        }
        if let Some((tsval, _)) = r.options.timestamp {
            c.ts_recent = tsval;
        }
    }

    /// A segment from the client's `port` with `flags` and `payload` (our sequence numbers
    /// and acknowledgement as tracked).
    fn segment(&mut self, port: u16, flags: u8, window: u16, payload: &[u8]) {
        self.ts = self.ts.wrapping_add(7);
        let c = self.conns.get(&port).copied().unwrap_or_default();
        let h = TcpHeader {
            src_port: port,
            dst_port: ECHO_PORT,
            seq: Seq(c.snd_nxt),
            ack: Seq(c.rcv_nxt),
            flags: TcpFlags(flags),
            window,
            options: TcpOptions {
                timestamp: Some((self.ts, c.ts_recent)),
                ..TcpOptions::default()
            },
        };
        let seg = tcp_bytes(&h, payload);
        let f = ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), &seg);
        self.inject(&f);
        let len =
            payload.len() as u32 + u32::from(flags & 0x01 != 0) + u32::from(flags & 0x02 != 0);
        if flags & 0x04 == 0 {
            let e = self.conns.entry(port).or_default();
            e.snd_nxt = e.snd_nxt.wrapping_add(len);
        }
    }

    /// One move of the script; false at the end of the input.
    fn step(&mut self, b: &mut Bytes<'_>) -> bool {
        let Some(op) = b.u8() else { return false };
        match op % 8 {
            // Raw bytes onto the wire.
            0 => {
                let n = usize::from(b.u8().unwrap_or(0)) * 6;
                let f = b.take(n).to_vec();
                self.inject(&f);
            }
            // A well-formed IPv4 frame carrying arbitrary TCP bytes (valid checksums).
            1 => {
                let n = usize::from(b.u8().unwrap_or(0));
                let seg = b.take(n).to_vec();
                let f = ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), &seg);
                self.inject(&f);
            }
            // A SYN with options, from a new or an earlier port.
            2 => {
                let sel = b.u8().unwrap_or(0);
                let port = if sel & 0x80 != 0 {
                    self.last_port = self.last_port.wrapping_add(1).max(1024);
                    self.last_port
                } else {
                    40_000 + u16::from(sel & 0x0f)
                };
                let isn = b.u32().unwrap_or(1);
                self.conns.insert(
                    port,
                    ClientConn {
                        snd_nxt: isn,
                        ..ClientConn::default()
                    },
                );
                self.ts = self.ts.wrapping_add(7);
                let opts = TcpOptions {
                    mss: (sel & 0x10 == 0).then_some(1460),
                    window_scale: (sel & 0x20 == 0).then_some(sel & 0x0f),
                    sack_permitted: sel & 0x40 == 0,
                    timestamp: (sel & 0x08 == 0 || sel & 0x80 != 0).then_some((self.ts, 0)),
                    ..TcpOptions::default()
                };
                let h = TcpHeader {
                    src_port: port,
                    dst_port: ECHO_PORT,
                    seq: Seq(isn),
                    ack: Seq(0),
                    flags: TcpFlags::SYN,
                    window: 65_535,
                    options: opts,
                };
                let seg = tcp_bytes(&h, &[]);
                let f = ip_tcp_frame((CLIENT_MAC, CLIENT_IP), (SERVER_MAC, SERVER_IP), &seg);
                self.inject(&f);
                self.conns.entry(port).or_default().snd_nxt = isn.wrapping_add(1);
            }
            // The handshake's ACK, or data, on a known connection.
            3 | 4 => {
                let Some(port) = self.pick(b) else {
                    return true;
                };
                let flags = if op % 8 == 3 {
                    0x10
                } else {
                    0x10 | (b.u8().unwrap_or(0) & 0x0d) // ACK plus FIN/RST/PSH
                };
                let n = usize::from(b.u8().unwrap_or(0));
                let payload = b.take(n).to_vec();
                self.segment(port, flags, 65_535, &payload);
            }
            // A segment with fuzzed flags and window on a known connection.
            5 => {
                let Some(port) = self.pick(b) else {
                    return true;
                };
                let flags = b.u8().unwrap_or(0);
                let window = b.u16().unwrap_or(0);
                let n = usize::from(b.u8().unwrap_or(0) & 0x3f);
                let payload = b.take(n).to_vec();
                self.segment(port, flags, window, &payload);
            }
            // Time passes: retransmissions, TIME_WAIT, cookie rotation.
            6 => {
                let ms = u64::from(b.u8().unwrap_or(0)) * 20;
                self.clock.advance(ms * 1_000_000);
            }
            // ARP.
            _ => {
                let mut f = arp_request();
                if b.u8().unwrap_or(0) & 1 == 1 {
                    f[21] = 2; // a reply nobody asked for
                }
                self.inject(&f);
            }
        }
        self.settle();
        true
    }

    /// One of the client's connections (by an input byte), if any.
    fn pick(&mut self, b: &mut Bytes<'_>) -> Option<u16> {
        if self.conns.is_empty() {
            return None;
        }
        let mut ports: Vec<u16> = self.conns.keys().copied().collect();
        ports.sort_unstable();
        Some(ports[usize::from(b.u8().unwrap_or(0)) % ports.len()])
    }
}

/// The client's ARP request for the server's address.
pub(super) fn arp_request() -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].fill(0xff);
    f[6..12].copy_from_slice(&CLIENT_MAC);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[22..28].copy_from_slice(&CLIENT_MAC);
    f[28..32].copy_from_slice(&CLIENT_IP);
    f[38..42].copy_from_slice(&SERVER_IP);
    f
}

/// A NIC lcore with the whole offload chain and a host echo server with the setup and
/// teardown offloads, driven from the wire by a scripted client (see [`NicRig::step`]).
pub fn nic(data: &[u8]) {
    nic_run(data);
}

/// [`nic`], answering how deep the input reached.
pub fn nic_run(data: &[u8]) -> NicRun {
    let data = &data[..data.len().min(MAX_INPUT)];
    let mut rig = NicRig::new();
    let mut b = Bytes(data);
    for _ in 0..4096 {
        if !rig.step(&mut b) {
            break;
        }
    }
    // Let every timer run out: retransmissions end, TIME_WAIT and the teardown wheel drain.
    for _ in 0..8 {
        rig.clock.advance(30_000_000_000);
        rig.settle();
    }
    NicRun {
        accepted: rig.node.host.stats().passive_opens,
        echoed: rig.echoed,
        torn_down: rig.node.teardown().engine().stats().offloaded,
    }
}
