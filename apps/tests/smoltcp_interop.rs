//! nicemu against smoltcp, an independent TCP implementation, on the in-memory wire.
//!
//! One end of the wire is a nicemu node (NIC lcore + host stack), the other a smoltcp
//! `Interface` on a [`WireDevice`]; both run on one virtual clock, so every run is
//! deterministic. The tests move 20 MB each way at once, every byte checked, with 0% and 2%
//! loss, in both roles (smoltcp client → nicemu server, nicemu client → smoltcp server), then
//! close cleanly on both sides (no RST on the wire, the smoltcp socket ends in TimeWait or
//! Closed, the nicemu connection freed after its TIME_WAIT). A third group checks how the
//! handshake options (window scaling, SACK-permitted, timestamps) interplay on the wire, and
//! that transfers work under each combination.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use apps::node::{Node, NodeSpec};
use apps::smol::{TapDir, WireDevice};
use dataplane::clock::Clock;
use dataplane::port::wire::{self, Impairments, WireConfig, WireQueue};
use hoststack::stack::SockOpt;
use hoststack::tcp::TcpConfig;
use hoststack::{Errno, Fd};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, HardwareAddress, IpAddress, IpCidr,
    IpProtocol, Ipv4Packet, TcpPacket, TcpRepr,
};

const NICEMU_IP: [u8; 4] = [10, 0, 0, 1];
const SMOL_IP: [u8; 4] = [10, 0, 0, 2];
const NICEMU_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const SMOL_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const PORT: u16 = 7000;
const SMOL_LOCAL_PORT: u16 = 49_152;
const MB20: u64 = 20 * 1000 * 1000;
/// nicemu's TIME_WAIT in these tests: shorter than the default 60 s, so that the test sees
/// the connection freed at its end, but longer than smoltcp's retransmission timeout (at least
/// 1 s, doubling): with loss, smoltcp may retransmit its FIN after nicemu's last ACK was lost,
/// and a connection already gone would answer it with a RST (which is why TIME_WAIT exists).
const TIME_WAIT_NS: u64 = 10_000_000_000;
/// Virtual time per step, and the one-way delay of the wire.
const QUANTUM_NS: u64 = 5_000;
const DELAY_NS: u64 = 100_000;

// ---- the byte streams: direction `dir` carries byte `i` = PATTERN[(i + 4099 * dir) % P] ----

const P: usize = 8191; // prime, so no segment or buffer size lines up with it

fn pattern() -> &'static [u8] {
    static T: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut s: u32 = 0x1234_5678;
        let one: Vec<u8> = (0..P)
            .map(|_| {
                s = s.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (s >> 16) as u8
            })
            .collect();
        // Two periods back to back: any run of up to P bytes is one slice.
        [one.as_slice(), one.as_slice()].concat()
    })
}

/// The part of direction `dir`'s stream at offset `at` that fits in one slice, up to `len`.
fn chunk(dir: u8, at: u64, len: usize) -> &'static [u8] {
    let off = ((at + 4099 * dir as u64) % P as u64) as usize;
    &pattern()[off..off + len.min(P)]
}

/// Fills `out` with direction `dir`'s bytes from offset `at`.
fn fill(dir: u8, mut at: u64, mut out: &mut [u8]) {
    while !out.is_empty() {
        let c = chunk(dir, at, out.len());
        out[..c.len()].copy_from_slice(c);
        at += c.len() as u64;
        out = &mut out[c.len()..];
    }
}

/// Whether `got` is direction `dir`'s bytes from offset `at`.
fn intact(dir: u8, mut at: u64, mut got: &[u8]) -> bool {
    while !got.is_empty() {
        let c = chunk(dir, at, got.len());
        if got[..c.len()] != *c {
            return false;
        }
        at += c.len() as u64;
        got = &got[c.len()..];
    }
    true
}

/// One end's progress: bytes sent of its outgoing stream, bytes received (and checked) of
/// its incoming one.
#[derive(Default, Debug)]
struct Progress {
    sent: u64,
    received: u64,
    corrupt: u64,
}

/// Client-to-server and server-to-client stream ids.
const UP: u8 = 1;
const DOWN: u8 = 2;

// ---- what the tap sees on the wire ----

/// A SYN or SYN-ACK's options, as seen on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SynSeen {
    from_smoltcp: bool,
    ack: bool,
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    timestamps: bool,
}

#[derive(Default)]
struct WireLog {
    syns: Vec<SynSeen>,
    /// Every RST, described (for failure messages).
    rsts: Vec<String>,
}

/// Counters and records of TCP segments crossing the smoltcp device.
struct Watch {
    clock: Clock,
    /// Print every TCP segment (environment variable `INTEROP_TRACE` set).
    trace: bool,
    rst_from_smoltcp: AtomicU64,
    rst_from_nicemu: AtomicU64,
    /// Segments from smoltcp carrying SACK blocks.
    sack_blocks_from_smoltcp: AtomicU64,
    /// Segments from nicemu carrying SACK blocks.
    sack_blocks_from_nicemu: AtomicU64,
    log: Mutex<WireLog>,
}

impl Watch {
    fn see(&self, dir: TapDir, frame: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return;
        };
        if eth.ethertype() != EthernetProtocol::Ipv4 {
            return;
        }
        let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
            return;
        };
        if ip.next_header() != IpProtocol::Tcp {
            return;
        }
        let Ok(seg) = TcpPacket::new_checked(ip.payload()) else {
            return;
        };
        let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
        let Ok(repr) = TcpRepr::parse(&seg, &src, &dst, &ChecksumCapabilities::ignored()) else {
            return;
        };
        let from_smoltcp = dir == TapDir::Tx;
        if seg.rst() {
            let c = if from_smoltcp {
                &self.rst_from_smoltcp
            } else {
                &self.rst_from_nicemu
            };
            c.fetch_add(1, Ordering::Relaxed);
            self.log.lock().unwrap().rsts.push(format!(
                "RST from {} {}->{} seq {} ack {:?} at {} ms",
                side(from_smoltcp),
                repr.src_port,
                repr.dst_port,
                repr.seq_number,
                repr.ack_number,
                self.clock.now_ns() / 1_000_000
            ));
        }
        if repr.sack_ranges[0].is_some() {
            let c = if from_smoltcp {
                &self.sack_blocks_from_smoltcp
            } else {
                &self.sack_blocks_from_nicemu
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
        if self.trace {
            eprintln!(
                "{} us, from {}: {repr}",
                self.clock.now_ns() / 1000,
                side(from_smoltcp)
            );
        }
        if seg.syn() {
            self.log.lock().unwrap().syns.push(SynSeen {
                from_smoltcp,
                ack: seg.ack(),
                mss: repr.max_seg_size,
                window_scale: repr.window_scale,
                sack_permitted: repr.sack_permitted,
                timestamps: repr.timestamp.is_some(),
            });
        }
    }

    fn syn(&self, from_smoltcp: bool) -> SynSeen {
        self.log
            .lock()
            .unwrap()
            .syns
            .iter()
            .find(|s| s.from_smoltcp == from_smoltcp)
            .cloned()
            .unwrap_or_else(|| panic!("no SYN from {}", side(from_smoltcp)))
    }

    fn rsts(&self) -> (u64, u64) {
        (
            self.rst_from_smoltcp.load(Ordering::Relaxed),
            self.rst_from_nicemu.load(Ordering::Relaxed),
        )
    }
}

fn side(from_smoltcp: bool) -> &'static str {
    if from_smoltcp {
        "smoltcp"
    } else {
        "nicemu"
    }
}

// ---- the topology ----

/// smoltcp's TCP timestamp clock: a function pointer, so it reads a global that the rigs move
/// forward (in milliseconds of virtual time; never backwards, whichever rig moves it).
static TS_MS: AtomicU32 = AtomicU32::new(1);

fn smol_tsval() -> u32 {
    TS_MS.load(Ordering::Relaxed)
}

/// How the smoltcp side is set up.
#[derive(Clone, Copy)]
struct SmolSetup {
    timestamps: bool,
    rx_buffer: usize,
    tx_buffer: usize,
}

impl Default for SmolSetup {
    fn default() -> Self {
        SmolSetup {
            timestamps: true,
            rx_buffer: 1 << 20,
            tx_buffer: 256 * 1024,
        }
    }
}

/// A nicemu node and a smoltcp interface on the two ends of one wire.
struct Rig {
    node: Node<WireQueue>,
    iface: Interface,
    dev: WireDevice,
    sockets: SocketSet<'static>,
    clock: Clock,
    watch: Arc<Watch>,
}

fn loss(p: f64, seed: u64) -> Impairments {
    Impairments {
        loss: p,
        delay_ns: DELAY_NS,
        seed,
        ..Impairments::default()
    }
}

impl Rig {
    /// `loss_pct` applies to both directions; `tcp` adjusts nicemu's TCP defaults.
    fn new(loss_p: f64, seed: u64, tcp: impl FnOnce(&mut TcpConfig)) -> Rig {
        let clock = Clock::virtual_clock();
        clock.advance(1_000_000_000);
        let (mut ea, mut eb) = wire::wire_pair(&WireConfig {
            queues: 1,
            ring_size: 8192,
            a_to_b: loss(loss_p, seed),
            b_to_a: loss(loss_p, seed.wrapping_mul(31).wrapping_add(7)),
            macs: [NICEMU_MAC, SMOL_MAC],
            clock: clock.clone(),
            ..WireConfig::default()
        });
        let mut spec = NodeSpec::new("nicemu", NICEMU_IP, 24, NICEMU_MAC);
        spec.host.tcp.time_wait_ns = TIME_WAIT_NS;
        spec.host.tcp.recv_buffer = 1 << 20;
        spec.host.tcp.send_buffer = 1 << 20;
        tcp(&mut spec.host.tcp);
        let node = Node::new(spec, ea.take_queue(0).expect("queue 0"), &clock);
        let mut dev = WireDevice::new(eb.take_queue(0).expect("queue 0"));
        let watch = Arc::new(Watch {
            clock: clock.clone(),
            trace: std::env::var_os("INTEROP_TRACE").is_some(),
            rst_from_smoltcp: AtomicU64::new(0),
            rst_from_nicemu: AtomicU64::new(0),
            sack_blocks_from_smoltcp: AtomicU64::new(0),
            sack_blocks_from_nicemu: AtomicU64::new(0),
            log: Mutex::default(),
        });
        let w = watch.clone();
        dev.set_tap(Box::new(move |dir, frame| w.see(dir, frame)));
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(SMOL_MAC)));
        cfg.random_seed = seed;
        let mut iface = Interface::new(cfg, &mut dev, Self::instant(&clock));
        iface.update_ip_addrs(|a| {
            a.push(IpCidr::new(IpAddress::v4(10, 0, 0, 2), 24))
                .expect("one address");
        });
        Rig {
            node,
            iface,
            dev,
            sockets: SocketSet::new(Vec::new()),
            clock,
            watch,
        }
    }

    fn instant(clock: &Clock) -> Instant {
        Instant::from_micros((clock.now_ns() / 1000) as i64)
    }

    /// A smoltcp TCP socket set up as `s` says.
    fn smol_socket(&mut self, s: SmolSetup) -> SocketHandle {
        let mut sock = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0u8; s.rx_buffer]),
            tcp::SocketBuffer::new(vec![0u8; s.tx_buffer]),
        );
        if s.timestamps {
            sock.set_tsval_generator(Some(smol_tsval));
        }
        self.sockets.add(sock)
    }

    fn smol(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket>(h)
    }

    /// One step of both ends; returns the work done (frames and timers).
    fn step(&mut self) -> usize {
        let mut work = self.node.step();
        let now = self.clock.now_ns();
        TS_MS.fetch_max((now / 1_000_000) as u32, Ordering::Relaxed);
        let before = self.dev.frames();
        self.iface
            .poll(Self::instant(&self.clock), &mut self.dev, &mut self.sockets);
        work += (self.dev.frames() - before) as usize;
        work
    }

    /// Steps until `done`, at most `max_steps`; virtual time moves `QUANTUM_NS` per step and
    /// jumps to the next timer of either end after 64 idle steps. Returns whether `done` held.
    fn run_until(&mut self, max_steps: u64, mut done: impl FnMut(&mut Rig) -> bool) -> bool {
        let mut idle = 0u32;
        for _ in 0..max_steps {
            if done(self) {
                return true;
            }
            if self.step() == 0 {
                idle += 1;
            } else {
                idle = 0;
            }
            let now = self.clock.now_ns();
            let smol_at = self
                .iface
                .poll_at(Self::instant(&self.clock), &self.sockets)
                .map(|t| t.total_micros().max(0) as u64 * 1000);
            let next = [self.node.host.next_timer(), smol_at]
                .into_iter()
                .flatten()
                .filter(|&t| t > now)
                .min();
            match next {
                Some(t) if idle > 64 => {
                    self.clock.advance(t - now);
                    idle = 0;
                }
                _ => self.clock.advance(QUANTUM_NS),
            }
        }
        done(self)
    }
}

// ---- moving the streams ----

/// Writes what fits of `tx_dir` and reads (checking) what arrived of `rx_dir` on a nicemu
/// socket.
fn pump_nicemu(
    ctx: &mut hoststack::Context<offload_api::link::HostEnd>,
    fd: Fd,
    (tx_dir, rx_dir): (u8, u8),
    total: u64,
    p: &mut Progress,
    buf: &mut [u8],
) {
    while p.sent < total {
        let n = ((total - p.sent) as usize).min(buf.len());
        fill(tx_dir, p.sent, &mut buf[..n]);
        match ctx.write(fd, &buf[..n]) {
            Ok(k) => p.sent += k as u64,
            Err(Errno::Again) => break,
            Err(e) => panic!("nicemu write: {e:?}"),
        }
    }
    loop {
        match ctx.read(fd, buf) {
            Ok(0) | Err(Errno::Again) => break,
            Ok(k) => {
                if !intact(rx_dir, p.received, &buf[..k]) {
                    p.corrupt += 1;
                }
                p.received += k as u64;
            }
            Err(e) => panic!("nicemu read: {e:?}"),
        }
    }
}

/// The same on a smoltcp socket.
fn pump_smol(s: &mut tcp::Socket<'_>, (tx_dir, rx_dir): (u8, u8), total: u64, p: &mut Progress) {
    while p.sent < total && s.can_send() {
        let at = p.sent;
        let n = s
            .send(|b| {
                let n = ((total - at) as usize).min(b.len());
                fill(tx_dir, at, &mut b[..n]);
                (n, n)
            })
            .expect("smoltcp send");
        if n == 0 {
            break;
        }
        p.sent += n as u64;
    }
    while s.can_recv() {
        let at = p.received;
        let (n, ok) = s
            .recv(|b| (b.len(), (b.len(), intact(rx_dir, at, b))))
            .expect("smoltcp recv");
        if n == 0 {
            break;
        }
        if !ok {
            p.corrupt += 1;
        }
        p.received += n as u64;
    }
}

/// Who plays which role.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Roles {
    /// smoltcp connects to a nicemu listener.
    SmolClient,
    /// nicemu connects to a smoltcp listener.
    NicemuClient,
}

/// What one exchange ended with.
struct Exchange {
    nicemu_fd: Fd,
    smol: SocketHandle,
    listener: Option<Fd>,
    retransmits: u64,
    negotiated: (bool, bool, bool),
    window_scales: (u8, u8),
}

/// Connects as `roles` says, then moves `total` bytes each way at once (client → server on
/// stream UP, server → client on DOWN), checking every byte at both ends.
fn exchange(rig: &mut Rig, roles: Roles, smol_setup: SmolSetup, total: u64) -> Exchange {
    let h = rig.smol_socket(smol_setup);
    let mut listener = None;
    let mut nicemu_fd = None;
    match roles {
        Roles::SmolClient => {
            let ctx = &mut rig.node.host;
            let l = ctx.socket().unwrap();
            ctx.set_nonblocking(l, true).unwrap();
            ctx.bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
                .unwrap();
            ctx.listen(l, 16).unwrap();
            listener = Some(l);
            let cx = rig.iface.context();
            rig.sockets
                .get_mut::<tcp::Socket>(h)
                .connect(cx, (IpAddress::v4(10, 0, 0, 1), PORT), SMOL_LOCAL_PORT)
                .expect("smoltcp connect");
        }
        Roles::NicemuClient => {
            rig.smol(h).listen(PORT).expect("smoltcp listen");
            let ctx = &mut rig.node.host;
            let fd = ctx.socket().unwrap();
            ctx.set_nonblocking(fd, true).unwrap();
            ctx.setsockopt(fd, SockOpt::NoDelay(true)).unwrap();
            assert_eq!(
                ctx.connect(fd, SocketAddrV4::new(SMOL_IP.into(), PORT)),
                Err(Errno::InProgress)
            );
            nicemu_fd = Some(fd);
        }
    }
    // The nicemu end sends DOWN when it is the server and UP when it is the client.
    let (nicemu_dirs, smol_dirs) = match roles {
        Roles::SmolClient => ((DOWN, UP), (UP, DOWN)),
        Roles::NicemuClient => ((UP, DOWN), (DOWN, UP)),
    };
    let (mut pn, mut ps) = (Progress::default(), Progress::default());
    let mut buf = vec![0u8; 64 * 1024];
    let ok = rig.run_until(400_000_000, |r| {
        if nicemu_fd.is_none() {
            if let Some(l) = listener {
                if let Ok((fd, _)) = r.node.host.accept(l) {
                    r.node.host.set_nonblocking(fd, true).unwrap();
                    nicemu_fd = Some(fd);
                }
            }
        }
        let Some(fd) = nicemu_fd else { return false };
        let established = r
            .node
            .host
            .tcb(fd)
            .is_some_and(|t| t.state() == hoststack::tcp::tcb::State::Established);
        if established || pn.sent > 0 {
            pump_nicemu(&mut r.node.host, fd, nicemu_dirs, total, &mut pn, &mut buf);
        }
        let s = r.sockets.get_mut::<tcp::Socket>(h);
        if s.may_send() || s.may_recv() {
            pump_smol(s, smol_dirs, total, &mut ps);
        }
        pn.received == total && ps.received == total
    });
    assert!(
        ok,
        "{roles:?}: transfer stalled: nicemu {pn:?}, smoltcp {ps:?} ({:?})",
        rig.smol(h).state()
    );
    assert_eq!((pn.corrupt, ps.corrupt), (0, 0), "corrupted bytes");
    assert_eq!((pn.sent, ps.sent), (total, total));
    let fd = nicemu_fd.unwrap();
    let tcb = rig.node.host.tcb(fd).expect("connected socket");
    Exchange {
        nicemu_fd: fd,
        smol: h,
        listener,
        retransmits: tcb.stats().retransmits,
        negotiated: tcb.negotiated(),
        window_scales: tcb.window_scales(),
    }
}

/// Closes both ends and waits until smoltcp's socket is in TimeWait or Closed and nicemu has
/// freed the connection (its TIME_WAIT included); no RST may cross the wire.
fn close_cleanly(rig: &mut Rig, x: &Exchange) {
    rig.node.host.close(x.nicemu_fd).unwrap();
    if let Some(l) = x.listener {
        rig.node.host.close(l).unwrap();
    }
    rig.smol(x.smol).close();
    let h = x.smol;
    let closed = rig.run_until(50_000_000, |r| {
        let st = r.sockets.get_mut::<tcp::Socket>(h).state();
        r.node.host.connections() == 0 && matches!(st, tcp::State::TimeWait | tcp::State::Closed)
    });
    let st = rig.smol(h).state();
    assert!(
        closed,
        "close did not finish: nicemu holds {} connection(s), smoltcp is in {st:?}",
        rig.node.host.connections()
    );
    assert_eq!(
        rig.watch.rsts(),
        (0, 0),
        "RSTs (from smoltcp, from nicemu): {:?}",
        rig.watch.log.lock().unwrap().rsts
    );
    assert_eq!(rig.node.host.stats().rst_sent, 0);
}

fn transfer_and_close(roles: Roles, loss_p: f64, seed: u64) {
    let t0 = std::time::Instant::now();
    let mut rig = Rig::new(loss_p, seed, |_| {});
    let x = exchange(&mut rig, roles, SmolSetup::default(), MB20);
    if loss_p > 0.0 {
        assert!(x.retransmits > 0, "loss but no nicemu retransmission");
    } else {
        assert_eq!(x.retransmits, 0);
    }
    assert_eq!(x.negotiated, (true, true, true));
    close_cleanly(&mut rig, &x);
    eprintln!(
        "{roles:?}, {:.0}% loss: 20 MB each way intact, nicemu retransmitted {} segments, \
         smoltcp sent {} SACK-carrying segments; closed cleanly; {:.1} s virtual, {:.2} s wall",
        loss_p * 100.0,
        x.retransmits,
        rig.watch.sack_blocks_from_smoltcp.load(Ordering::Relaxed),
        rig.clock.now_ns() as f64 / 1e9,
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn smoltcp_client_nicemu_server_20mb_each_way_clean() {
    transfer_and_close(Roles::SmolClient, 0.0, 1);
}

#[test]
fn smoltcp_client_nicemu_server_20mb_each_way_2pct_loss() {
    transfer_and_close(Roles::SmolClient, 0.02, 2);
}

#[test]
fn nicemu_client_smoltcp_server_20mb_each_way_clean() {
    transfer_and_close(Roles::NicemuClient, 0.0, 3);
}

#[test]
fn nicemu_client_smoltcp_server_20mb_each_way_2pct_loss() {
    transfer_and_close(Roles::NicemuClient, 0.02, 4);
}

// ---- option negotiation ----

/// Transfers 1 MB each way with 2% loss in `roles` under the given settings, closes, and
/// returns what was negotiated and the SYNs both sides sent.
fn negotiate(
    roles: Roles,
    smol: SmolSetup,
    tcp: impl FnOnce(&mut TcpConfig),
    seed: u64,
) -> (Exchange, SynSeen, SynSeen, Arc<Watch>) {
    let mut rig = Rig::new(0.02, seed, tcp);
    let x = exchange(&mut rig, roles, smol, 1_000_000);
    close_cleanly(&mut rig, &x);
    let (s, n) = (rig.watch.syn(true), rig.watch.syn(false));
    (x, s, n, rig.watch.clone())
}

#[test]
fn options_all_on_both_roles() {
    for (roles, seed) in [(Roles::SmolClient, 10), (Roles::NicemuClient, 11)] {
        let (x, smol_syn, nicemu_syn, watch) = negotiate(roles, SmolSetup::default(), |_| {}, seed);
        // smoltcp offers window scaling sized to its 1 MiB receive buffer (shift 5), SACK and
        // (with a tsval generator) timestamps; nicemu offers shift 7, SACK and timestamps.
        assert_eq!(smol_syn.window_scale, Some(5), "{smol_syn:?}");
        assert!(
            smol_syn.sack_permitted && smol_syn.timestamps,
            "{smol_syn:?}"
        );
        assert_eq!(nicemu_syn.window_scale, Some(7), "{nicemu_syn:?}");
        assert!(nicemu_syn.sack_permitted && nicemu_syn.timestamps);
        assert_eq!(smol_syn.ack, roles == Roles::NicemuClient);
        assert_eq!(nicemu_syn.ack, roles == Roles::SmolClient);
        assert_eq!(nicemu_syn.mss, Some(1460));
        assert_eq!(x.negotiated, (true, true, true));
        assert_eq!(x.window_scales, (7, 5), "(ours, peer's)");
        // smoltcp acknowledges out-of-order data with SACK blocks, and nicemu sends them too.
        assert!(watch.sack_blocks_from_smoltcp.load(Ordering::Relaxed) > 0);
        assert!(watch.sack_blocks_from_nicemu.load(Ordering::Relaxed) > 0);
    }
}

#[test]
fn options_smoltcp_without_timestamps() {
    let smol = SmolSetup {
        timestamps: false,
        ..SmolSetup::default()
    };
    for (roles, seed) in [(Roles::SmolClient, 20), (Roles::NicemuClient, 21)] {
        let (x, smol_syn, nicemu_syn, _) = negotiate(roles, smol, |_| {}, seed);
        assert!(!smol_syn.timestamps);
        // As server, nicemu must not answer with timestamps the client did not offer.
        if roles == Roles::SmolClient {
            assert!(!nicemu_syn.timestamps, "{nicemu_syn:?}");
        }
        assert_eq!(x.negotiated, (true, true, false));
    }
}

#[test]
fn options_nicemu_without_sack_and_timestamps() {
    for (roles, seed) in [(Roles::SmolClient, 30), (Roles::NicemuClient, 31)] {
        let (x, smol_syn, nicemu_syn, watch) = negotiate(
            roles,
            SmolSetup::default(),
            |t| {
                t.sack = false;
                t.timestamps = false;
            },
            seed,
        );
        assert!(!nicemu_syn.sack_permitted && !nicemu_syn.timestamps);
        if roles == Roles::NicemuClient {
            // smoltcp's SYN-ACK answers only what nicemu offered.
            assert!(
                !smol_syn.sack_permitted && !smol_syn.timestamps,
                "{smol_syn:?}"
            );
        }
        assert_eq!(x.negotiated, (true, false, false));
        // Without SACK-permitted from nicemu, smoltcp sends no SACK blocks, and vice versa.
        assert_eq!(watch.sack_blocks_from_smoltcp.load(Ordering::Relaxed), 0);
        assert_eq!(watch.sack_blocks_from_nicemu.load(Ordering::Relaxed), 0);
    }
}

#[test]
fn options_small_smoltcp_window_and_no_nicemu_scaling() {
    // smoltcp with a 16 KiB receive buffer offers shift 0; nicemu with window_scale 0 offers
    // shift 0 too: windows are then plain 16-bit values, and nicemu's 1 MiB buffer is clamped
    // to 65,535 bytes of advertised window.
    let smol = SmolSetup {
        rx_buffer: 16 * 1024,
        tx_buffer: 16 * 1024,
        ..SmolSetup::default()
    };
    for (roles, seed) in [(Roles::SmolClient, 40), (Roles::NicemuClient, 41)] {
        let (x, smol_syn, nicemu_syn, _) = negotiate(roles, smol, |t| t.window_scale = 0, seed);
        assert_eq!(smol_syn.window_scale, Some(0), "{smol_syn:?}");
        assert_eq!(nicemu_syn.window_scale, Some(0), "{nicemu_syn:?}");
        assert_eq!(x.window_scales, (0, 0));
        assert_eq!(x.negotiated, (true, true, true));
    }
}
