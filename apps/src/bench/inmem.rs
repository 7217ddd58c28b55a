//! The servers on the in-memory wire: the nicemu host stack (behind its emulated NIC) and
//! smoltcp (with or without its device's checksum offload). One thread steps the four parts
//! round-robin (client host, client NIC, server NIC, server host); only the server's parts
//! are timed (host, and NIC where it has one).

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use dataplane::clock::Clock;
use dataplane::cycles::rdtsc;
use dataplane::net::DropReason;
use dataplane::port::wire::{self, WireConfig, WireQueue};
use offload_api::link::LinkCounters;

use super::procstat::{self_rss_bytes, thread_cpu_ns};
use super::smol_echo::SmolEchoServer;
use super::{
    Deadline, EchoBenchOpts, LinkPerTxn, Measurement, Server, CLIENT_IP, CLIENT_MAC, PORT,
    SERVER_IP, SERVER_MAC,
};
use crate::echo::{EchoClient, EchoServer, ServerOffloads};
use crate::node::{Node, NodeSpec};
use crate::smol::{CsumOffloadStats, WireDevice};

/// Frames each queue on the path (PCIe link rings, wire rings) must hold for `conns`
/// connections: the client opens them all at once (a SYN each), and in the closed loop each
/// has one request or echo in flight plus at most a pure ACK. The host stack drops a frame
/// the link refuses (a loss, repaired only by retransmission), and the dropped SYNs of one
/// burst back off in lockstep and meet a full ring again: with 4,096 descriptors, 5,000
/// connections never all came up.
pub(super) fn ring_frames(conns: usize) -> usize {
    (2 * conns + 1024).max(4096)
}

/// A nicemu node on the wire, set up for `conns` connections of `per_conn` transactions
/// each (0: persistent).
#[allow(clippy::too_many_arguments)]
pub(super) fn node(
    name: &str,
    ip: [u8; 4],
    mac: [u8; 6],
    q: WireQueue,
    clock: &Clock,
    conns: usize,
    per_conn: u32,
    quasi: bool,
) -> Node<WireQueue> {
    let mut spec = NodeSpec::new(name, ip, 24, mac);
    if per_conn != 0 && ip == CLIENT_IP {
        // The load generator closes first and reuses its ports soon (as Linux's
        // tcp_tw_reuse lets a client): a 60 s TIME_WAIT would hold every port it has. 100 ms
        // stays above the round trip under load (with 1 ms, segments still in flight met
        // closed connections and drew RSTs).
        spec.host.tcp.time_wait_ns = 100_000_000;
    }
    spec.link.depth = ring_frames(conns);
    spec.host.tcp.nodelay = true;
    // The client's connections arrive as one burst of SYNs; the listener's half-open bound
    // (a SYN-flood guard) takes the whole burst, as one raises tcp_max_syn_backlog for
    // such a test on Linux.
    spec.host.max_syn_backlog = spec.host.max_syn_backlog.max(conns);
    // Every port but the well-known ones: up to 64,512 connections to one server port.
    spec.host.ephemeral = (1024, 65535);
    spec.host.quasi_tcb = quasi;
    Node::new(spec, q, clock)
}

/// The client side: a nicemu node running the echo load generator.
pub(super) struct Client {
    node: Node<WireQueue>,
    app: EchoClient,
    conns: usize,
    per_conn: u32,
}

impl Client {
    fn new(q: WireQueue, clock: &Clock, opts: &EchoBenchOpts) -> Result<Client, String> {
        let mut node = node(
            "client",
            CLIENT_IP,
            CLIENT_MAC,
            q,
            clock,
            opts.conns,
            opts.per_conn,
            false,
        );
        let app = EchoClient::with_per_conn(
            &mut node.host,
            SocketAddrV4::new(SERVER_IP.into(), PORT),
            opts.conns,
            opts.size,
            opts.per_conn,
        )
        .map_err(|e| format!("echo client: {e:?}"))?;
        Ok(Client {
            node,
            app,
            conns: opts.conns,
            per_conn: opts.per_conn,
        })
    }
}

impl ClientPart for Client {
    fn step(&mut self) {
        self.app.step(&mut self.node.host);
        self.node.nic.poll_once();
    }

    fn warmed(&self) -> bool {
        super::warmed(&self.app, self.conns, self.per_conn)
    }

    fn transactions(&self) -> u64 {
        self.app.transactions
    }

    fn progress(&self) -> String {
        format!(
            "only {} of {} connections established\nclient host: {:?}",
            self.app.connected(),
            self.conns,
            self.node.host.stats()
        )
    }

    fn check(&self) -> Result<(), String> {
        if self.app.failed + self.app.corrupt > 0 {
            return Err(format!(
                "client saw {} failed connections and {} corrupted echoes",
                self.app.failed, self.app.corrupt
            ));
        }
        Ok(())
    }
}

/// The client side of a round, as the driver sees it.
pub(super) trait ClientPart {
    /// One round of the client (its host and its NIC).
    fn step(&mut self);
    /// The load is fully up: the measured window may start.
    fn warmed(&self) -> bool;
    /// Transactions completed so far.
    fn transactions(&self) -> u64;
    /// Why the load is not up yet, for a failure report.
    fn progress(&self) -> String;
    /// An error if the client saw a failure (checked at the end of the window).
    fn check(&self) -> Result<(), String>;
    /// The measured window starts now.
    fn mark(&mut self) {}
}

/// How long a round runs, and the flag that stops it early.
pub(super) struct Timing<'a> {
    /// Seconds of traffic before the window, once the load is up.
    pub warmup_s: f64,
    /// Seconds of the measured window.
    pub seconds: f64,
    /// Set to stop early (Ctrl-C).
    pub stop: &'a AtomicBool,
}

impl Timing<'_> {
    fn check_stop(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            Err("interrupted".into())
        } else {
            Ok(())
        }
    }
}

pub(super) fn wire(clock: &Clock, conns: usize) -> (WireQueue, WireQueue) {
    let (mut a, mut b) = wire::wire_pair(&WireConfig {
        queues: 1,
        ring_size: ring_frames(conns).max(16384),
        macs: [CLIENT_MAC, SERVER_MAC],
        clock: clock.clone(),
        ..WireConfig::default()
    });
    (
        a.take_queue(0).expect("queue 0"),
        b.take_queue(0).expect("queue 0"),
    )
}

/// The server side of a round, as the driver sees it.
pub(super) trait ServerPart {
    /// One round of the server; returns the TSC cycles spent on the host and on the NIC,
    /// and whether the host had anything to do.
    fn step(&mut self) -> (u64, u64, bool);
    /// The measured window starts now.
    fn mark(&mut self) {}
    /// The server's counters, for a failure report.
    fn counters(&self) -> String {
        String::new()
    }
}

/// Runs the client and `server` through the warm-up and the measured window: one thread
/// steps the client (host, NIC) and the server (NIC, host) round-robin and sums the TSC
/// cycles the server reports for its host and NIC parts inside the window.
pub(super) fn drive(
    t: &Timing<'_>,
    client: &mut dyn ClientPart,
    server: &mut dyn ServerPart,
) -> Result<Window, String> {
    let warm = Deadline::after(t.warmup_s);
    let limit = Deadline::after(t.warmup_s + 30.0);
    let mut i = 0u64;
    loop {
        client.step();
        server.step();
        i += 1;
        if i.is_multiple_of(256) {
            t.check_stop()?;
            if client.warmed() && warm.passed() {
                break;
            }
            if limit.passed() {
                return Err(format!(
                    "load not up after {:.0} s: {}\nserver: {}",
                    t.warmup_s + 30.0,
                    client.progress(),
                    server.counters()
                ));
            }
        }
    }
    server.mark();
    client.mark();
    let tx0 = client.transactions();
    let cpu0 = thread_cpu_ns();
    let t0 = Instant::now();
    let end = Deadline::after(t.seconds);
    let (mut host, mut nic, mut idle) = (0u64, 0u64, 0u64);
    loop {
        client.step();
        let (h, n, busy) = server.step();
        host += h;
        nic += n;
        if !busy {
            idle += h;
        }
        i += 1;
        if i.is_multiple_of(64) && end.passed() {
            break;
        }
        if i.is_multiple_of(65_536) {
            t.check_stop()?;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let on_cpu = ((thread_cpu_ns() - cpu0) as f64 / 1e9 / wall).min(1.0);
    let transactions = client.transactions() - tx0;
    client.check()?;
    Ok(Window {
        transactions,
        wall,
        host_cycles: host,
        nic_cycles: nic,
        idle_cycles: idle,
        on_cpu,
    })
}

/// What a measured window produced.
pub(super) struct Window {
    /// Transactions the client completed in the window.
    pub transactions: u64,
    /// Length of the window, seconds.
    pub wall: f64,
    /// TSC cycles in the server's host part.
    pub host_cycles: u64,
    /// TSC cycles in the server's NIC part.
    pub nic_cycles: u64,
    /// Host cycles of server rounds that found nothing to do (included in `host_cycles`).
    pub idle_cycles: u64,
    /// Fraction of the window the thread was on a CPU (others share the machine).
    pub on_cpu: f64,
}

impl Window {
    /// The on-CPU fraction and the idle share, for the report.
    pub(super) fn note(&self) -> String {
        format!(
            "on CPU {:.0}% of the window, {:.0}% of host time in idle polls",
            self.on_cpu * 100.0,
            self.idle_cycles as f64 * 100.0 / self.host_cycles.max(1) as f64
        )
    }

    /// Nanoseconds of `cycles` measured in the window, less the share of the time the thread
    /// was preempted (assumed spread evenly over the loop, so each part's TSC time is scaled
    /// by the on-CPU fraction).
    pub(super) fn ns(&self, cycles: u64, tsc_hz: u64) -> f64 {
        cycles as f64 * 1e9 / tsc_hz.max(1) as f64 * self.on_cpu.max(0.0)
    }
}

/// The nicemu server: NIC lcore + host context + `EchoServer`.
struct NicemuServer {
    node: Node<WireQueue>,
    app: EchoServer,
    /// Link counters (NIC → host, host → NIC) when the window started.
    link0: (LinkCounters, LinkCounters),
    /// Resident bytes when the window started (every connection up).
    rss1: Option<u64>,
}

impl ServerPart for NicemuServer {
    fn step(&mut self) -> (u64, u64, bool) {
        let t0 = rdtsc();
        self.node.nic.poll_once();
        let t1 = rdtsc();
        let events = self.app.step(&mut self.node.host);
        let t2 = rdtsc();
        (t2.wrapping_sub(t1), t1.wrapping_sub(t0), events > 0)
    }

    fn counters(&self) -> String {
        format!("host {:?}", self.node.host.stats())
    }

    fn mark(&mut self) {
        self.rss1 = self_rss_bytes();
        let l = self.node.host.link();
        self.link0 = (l.rx_counters(), l.tx_counters());
    }
}

fn timing(opts: &EchoBenchOpts) -> Timing<'_> {
    Timing {
        warmup_s: opts.warmup_seconds,
        seconds: opts.seconds,
        stop: &opts.stop,
    }
}

/// One round with the nicemu server.
pub(super) fn nicemu(
    opts: &EchoBenchOpts,
    round: u32,
    tsc_hz: u64,
    server: Server,
) -> Result<Measurement, String> {
    let offloads = ServerOffloads {
        setup: matches!(
            server,
            Server::NicemuSetup | Server::NicemuOffload | Server::NicemuQuasi
        ),
        teardown: matches!(server, Server::NicemuOffload | Server::NicemuQuasi),
    };
    let clock = Clock::real();
    let rss0 = self_rss_bytes();
    let (qc, qs) = wire(&clock, opts.conns);
    let mut client = Client::new(qc, &clock, opts)?;
    let quasi = server == Server::NicemuQuasi;
    let mut node = node(
        "server",
        SERVER_IP,
        SERVER_MAC,
        qs,
        &clock,
        opts.conns,
        opts.per_conn,
        quasi,
    );
    let app = EchoServer::with_offloads(&mut node.host, PORT, offloads)
        .map_err(|e| format!("echo server: {e:?}"))?
        .close_after_reply(opts.server_closes);
    let mut srv = NicemuServer {
        node,
        app,
        link0: Default::default(),
        rss1: None,
    };
    let w = drive(&timing(opts), &mut client, &mut srv)?;
    let mut note = w.note();
    if let (Some(a), Some(b)) = (rss0, srv.rss1) {
        // Both nodes (hosts, NICs, links, wire) once every connection is up.
        let per_conn = b.saturating_sub(a) as f64 / opts.conns as f64;
        note += &format!(
            "; memory {:.1} KiB per connection (client + server nodes, links, wire)",
            per_conn / 1024.0
        );
    }
    if opts.per_conn != 0 {
        // What the server's host and NIC did with the connections, over the whole round.
        let h = srv.node.host.stats();
        let hs = srv.node.host.setup_stats();
        note += &format!(
            "; server host: passive opens {}, NIC setups {} (dups {}, dropped {}), \
             teardowns offloaded {} (late segments {}), RSTs sent {}, SYNs dropped {}, \
             link full {}",
            h.passive_opens,
            hs.nic_setups,
            hs.nic_setup_dups,
            hs.nic_setup_dropped,
            h.teardown.offloaded,
            h.teardown.late_segments,
            h.rst_sent,
            h.syn_dropped,
            h.link_full
        );
        let q = srv.node.host.quasi_stats();
        note += &format!(
            "; quasi-TCBs (AccelTCP §5.2): created {}, closed straight to the NIC {}, \
             grown {} (write {}, segment {}, data {}, ACK timer {}, API {})",
            q.created,
            q.closed_offloaded,
            q.upgraded(),
            q.upgraded_write,
            q.upgraded_segment,
            q.upgraded_data,
            q.upgraded_ack_timer,
            q.upgraded_api
        );
        if let Some(o) = srv
            .node
            .nic
            .offload::<dataplane::offload::setup::SetupOffload>()
        {
            let s = o.stats();
            note += &format!(
                "; server NIC: cookies sent {}, validated {}, refused {}, send failed {}",
                s.cookies_sent,
                s.validated,
                s.rejected_hash + s.rejected_expired + s.rejected_rotated + s.rejected_options,
                s.send_failed
            );
        }
    }
    let l = srv.node.host.link();
    let rx = l.rx_counters().delta(&srv.link0.0);
    let tx = l.tx_counters().delta(&srv.link0.1);
    let t = w.transactions.max(1) as f64;
    Ok(Measurement {
        server,
        round,
        transactions: w.transactions,
        wall_s: w.wall,
        host_ns: w.ns(w.host_cycles, tsc_hz),
        host_idle_ns: Some(w.ns(w.idle_cycles, tsc_hz)),
        host_ns_process: None,
        nic_ns: Some(w.ns(w.nic_cycles, tsc_hz)),
        link: Some(LinkPerTxn {
            to_host_packets: rx.packets as f64 / t,
            to_host_bytes: rx.bytes as f64 / t,
            to_nic_packets: tx.packets as f64 / t,
            to_nic_bytes: tx.bytes as f64 / t,
            dma_copies: (rx.dma_copies + tx.dma_copies) as f64 / t,
        }),
        note: Some(note),
    })
}

/// The smoltcp server and its clock.
struct SmolServer {
    srv: SmolEchoServer,
    clock: Clock,
}

fn smol_now(c: &Clock) -> smoltcp::time::Instant {
    smoltcp::time::Instant::from_micros((c.now_ns() / 1000) as i64)
}

impl ServerPart for SmolServer {
    /// The host part is the time inside `SmolEchoServer::step` less what its device spent on
    /// checksums (the device runs inside `Interface::poll`); that is the NIC part.
    fn step(&mut self) -> (u64, u64, bool) {
        let f0 = self.srv.frames();
        let c0 = self.srv.csum_offload().map_or(0, |c| c.cycles);
        let t0 = rdtsc();
        self.srv.step(smol_now(&self.clock));
        let t = rdtsc().wrapping_sub(t0);
        let nic = self.srv.csum_offload().map_or(0, |c| c.cycles) - c0;
        (t.saturating_sub(nic), nic, self.srv.frames() != f0)
    }
}

/// What the smoltcp server's device did over a whole round (warm-up included): frames sent,
/// and, with the checksum offload, its counters.
#[derive(Clone, Copy, Debug)]
pub(super) struct SmolDevice {
    /// Frames the interface sent.
    pub frames_sent: u64,
    /// The checksum offload's counters (smoltcp-csum-offload only).
    pub csum: Option<CsumOffloadStats>,
}

/// One round with a smoltcp server (`server`: smoltcp, or smoltcp-csum-offload with the
/// device's checksum offload) on the same wire and the same client.
pub(super) fn smoltcp(
    opts: &EchoBenchOpts,
    round: u32,
    tsc_hz: u64,
    server: Server,
) -> Result<(Measurement, SmolDevice), String> {
    let clock = Clock::real();
    let (qc, qs) = wire(&clock, opts.conns);
    let mut client = Client::new(qc, &clock, opts)?;
    let offload = server == Server::SmoltcpCsumOffload;
    let dev = if offload {
        WireDevice::with_csum_offload(qs)
    } else {
        WireDevice::new(qs)
    };
    let srv = SmolEchoServer::new(
        dev,
        SERVER_MAC,
        (SERVER_IP, 24),
        PORT,
        opts.conns + 16,
        SMOL_BUFFER,
        smol_now(&clock),
    )?;
    let mut srv = SmolServer { srv, clock };
    let w = drive(&timing(opts), &mut client, &mut srv)?;
    let dev = SmolDevice {
        frames_sent: srv.srv.frames_sent(),
        csum: srv.srv.csum_offload(),
    };
    let mut note = w.note();
    if let Some(c) = &dev.csum {
        note += &format!(
            "; device checksum offload over the round: verified {}, bad (dropped) {}, \
             filled {} of {} frames sent (nothing to fill in {})",
            c.rx_verified, c.rx_bad, c.tx_filled, dev.frames_sent, c.tx_other
        );
    }
    // The client's NIC verifies every checksum it receives; none may have failed.
    let drops = client.node.nic.stack().counters().drops;
    let bad = drops.get(DropReason::BadIpChecksum) + drops.get(DropReason::BadL4Checksum);
    if bad > 0 {
        return Err(format!(
            "the client's NIC dropped {bad} frames from the server for bad checksums"
        ));
    }
    Ok((
        Measurement {
            server,
            round,
            transactions: w.transactions,
            wall_s: w.wall,
            host_ns: w.ns(w.host_cycles, tsc_hz),
            host_idle_ns: Some(w.ns(w.idle_cycles, tsc_hz)),
            host_ns_process: None,
            nic_ns: offload.then(|| w.ns(w.nic_cycles, tsc_hz)),
            link: None,
            note: Some(note),
        },
        dev,
    ))
}

/// Receive and send buffer of each smoltcp socket (the requests are small; 4 KiB each way
/// keeps 1,024 sockets' buffers within 8 MiB).
const SMOL_BUFFER: usize = 4096;
