//! Building and running the topology a configuration describes (`run`, `fwd`, `check`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dataplane::buf::HeapBuf;
use dataplane::config::{Config, Driver};
use dataplane::cycles::measure_tsc_hz;
use dataplane::lcore::{LcoreReport, Mode};
use dataplane::port::Port;
use dataplane::runtime::{build_wire, run_lcores, RunOptions};

use crate::cli::nic::CommonArgs;
use crate::report;

/// Source and destination of benchmark frames: RFC 2544's benchmarking range (198.18.0.0/15),
/// which never leaves the process (in-memory wire, net_null, net_ring).
pub const BENCH_SRC: [u8; 4] = [198, 18, 0, 1];
/// See [`BENCH_SRC`].
pub const BENCH_DST: [u8; 4] = [198, 19, 0, 1];

/// A UDP/IPv4 frame of `size` bytes (at least 60) with valid checksums, for benchmarks.
pub fn template_frame(size: usize) -> Vec<u8> {
    let payload = vec![0x5a; size.max(60) - 42];
    dataplane::frames::udp(
        [0x02, 0, 0, 0, 0, 1],
        [0x02, 0, 0, 0, 0, 2],
        BENCH_SRC,
        BENCH_DST,
        1024,
        1024,
        &payload,
    )
}

/// Ports of the splice benchmark's frames (`nicemu fwd --splice`).
const SPLICE_BENCH_PORTS: (u16, u16) = (1024, 2048);
/// Addresses of the splice benchmark's second pair (RFC 2544's range, like [`BENCH_SRC`]).
const SPLICE_BENCH_X: [u8; 4] = [198, 18, 0, 2];
/// See [`SPLICE_BENCH_X`].
const SPLICE_BENCH_Y: [u8; 4] = [198, 19, 0, 2];

/// A 66-byte TCP/IPv4 ACK with the timestamp option (RFC 7323 §3, as every segment of a
/// Linux connection carries) and valid checksums, from `BENCH_SRC:1024` to `BENCH_DST:1024`:
/// the frame of `nicemu fwd --template tcp` and `nicemu fwd --splice`.
pub fn tcp_template_frame() -> Vec<u8> {
    use offload_api::wire::tcp::{TcpFlags, TcpHeader, TcpOptions};
    use offload_api::wire::Seq;
    let h = TcpHeader {
        src_port: SPLICE_BENCH_PORTS.0,
        dst_port: SPLICE_BENCH_PORTS.0,
        seq: Seq(0x1000_0000),
        ack: Seq(0x2000_0000),
        flags: TcpFlags::ACK,
        window: 1024,
        options: TcpOptions {
            timestamp: Some((1, 2)),
            ..TcpOptions::default()
        },
    };
    dataplane::frames::tcp_with(
        [0x02, 0, 0, 0, 0, 1],
        [0x02, 0, 0, 0, 0, 2],
        BENCH_SRC,
        BENCH_DST,
        &h,
        &[],
    )
}

/// The two spliced pairs of `nicemu fwd --splice` (AccelTCP §4.3). net_null does not write
/// packet data, so a translated frame comes back from the mempool as it was sent: pair 1
/// takes the template (`BENCH_SRC:1024 → BENCH_DST:1024`, side A on port 0) out of port 1 as
/// `X:2048 → Y:2048`; pair 2 takes that back to the template's 4-tuple out of port 0. Every
/// frame is then looked up and translated, whichever state its mbuf is in. Both sides
/// negotiated SACK and timestamps with equal window scales, so the fast path is the common
/// one (addresses, ports, seq, ack, TSval/TSecr and both checksums rewritten).
pub fn splice_bench_pairs() -> Vec<offload_api::msg::SpliceInstallRepr> {
    use offload_api::msg::{FourTuple, SpliceInstallRepr, SpliceSide};
    let side = |local_ip, local_port, remote_ip, remote_port, port: u16| SpliceSide {
        tuple: FourTuple {
            local_ip,
            local_port,
            remote_ip,
            remote_port,
        },
        local_mac: [0x02, 0, 0, 0, 0, 0x10 + port as u8],
        remote_mac: [0x02, 0, 0, 0, 0, 0x20 + port as u8],
        port,
        peer_wscale: 7,
        local_wscale: 7,
        sack_permitted: true,
        timestamps: true,
    };
    let (p, q) = SPLICE_BENCH_PORTS;
    let offsets = |request_id| SpliceInstallRepr {
        request_id,
        seq_offset: 0x8000_0001,
        ack_offset: 0x7fff_ffff,
        ts_offset_ab: 1000,
        ts_offset_ba: 2000,
        ..SpliceInstallRepr::default()
    };
    vec![
        SpliceInstallRepr {
            a: side(BENCH_DST, p, BENCH_SRC, p, 0),
            b: side(SPLICE_BENCH_X, q, SPLICE_BENCH_Y, q, 1),
            ..offsets(1)
        },
        SpliceInstallRepr {
            a: side(SPLICE_BENCH_Y, q, SPLICE_BENCH_X, q, 1),
            b: side(BENCH_SRC, p, BENCH_DST, p, 0),
            ..offsets(2)
        },
    ]
}

/// [`splice_bench_pairs`] moved to other ports (their side A's client port and side B's
/// ports one higher), so that no pair covers the template's 4-tuple: `nicemu fwd --splice
/// --splice-miss`, where every frame is a segment of no pair while two pairs are installed.
pub fn splice_miss_pairs() -> Vec<offload_api::msg::SpliceInstallRepr> {
    let mut pairs = splice_bench_pairs();
    for r in &mut pairs {
        for s in [&mut r.a, &mut r.b] {
            s.tuple.local_port += 1;
            s.tuple.remote_port += 1;
        }
    }
    pairs
}

/// The cores this process may use, as an error string on failure.
fn allowed() -> Result<Vec<usize>, String> {
    dataplane::sys::allowed_cores()
        .map_err(|e| format!("cannot read this process's CPU affinity: {e}"))
}

/// `nicemu check`.
pub fn check(path: &Path) -> Result<(), String> {
    let cfg = Config::load(path).map_err(|e| e.to_string())?;
    cfg.check_cores(&allowed()?).map_err(|e| e.to_string())?;
    if cfg.proxy.is_some() {
        // The [proxy] table of `nicemu proxy`, checked like the rest.
        apps::proxy::ProxyConfig::from_section(cfg.proxy.as_ref(), &cfg.source)
            .map_err(|e| e.to_string())?;
    }
    println!(
        "{}: ok ({} port(s), {} lcore(s), driver {})",
        path.display(),
        cfg.ports.len(),
        cfg.lcores.len(),
        cfg.ports[0].driver
    );
    Ok(())
}

/// Prints interval statistics: rates since the previous call.
pub struct IntervalPrinter {
    prev: Vec<report::PortTotals>,
    prev_t: Duration,
}

impl IntervalPrinter {
    pub fn new() -> Self {
        IntervalPrinter {
            prev: Vec::new(),
            prev_t: Duration::ZERO,
        }
    }
    pub fn print(&mut self, reports: &[LcoreReport], t: Duration) {
        let now = report::port_totals(reports);
        let dt = (t - self.prev_t).as_secs_f64().max(1e-9);
        let mut line = format!("[{:>7.1}s]", t.as_secs_f64());
        for (i, p) in now.iter().enumerate() {
            let (prx, ptx) = self
                .prev
                .get(i)
                .map(|q| (q.rx_packets, q.tx_packets))
                .unwrap_or((0, 0));
            line += &format!(
                " {}: rx {:.3} Mpps tx {:.3} Mpps;",
                p.name,
                (p.rx_packets - prx) as f64 / dt / 1e6,
                (p.tx_packets - ptx) as f64 / dt / 1e6
            );
        }
        println!("{line}");
        // The offloads' cumulative counters (SYN cookies, teardowns, Tonic), those that moved.
        for l in report::offloads_block(reports).lines() {
            if l.starts_with("offload ") && !l.ends_with(": idle") {
                println!("           {l}");
            }
        }
        self.prev = now;
        self.prev_t = t;
    }
}

fn options(
    args: &CommonArgs,
    cfg: &Config,
    mode: Mode,
    splice_pairs: Vec<offload_api::msg::SpliceInstallRepr>,
) -> Result<RunOptions, String> {
    let stats = crate::cli::nic::secs(
        args.stats_interval.or(Some(cfg.runtime.stats_interval_s)),
        "--stats-interval",
    )?;
    let (poll, warnings) = dataplane::runtime::polling(cfg, cfg.nic_lcores().len(), !args.no_pin);
    for w in warnings {
        eprintln!("nicemu: warning: {w}");
    }
    Ok(RunOptions {
        poll,
        mode,
        duration: crate::cli::nic::secs(args.duration, "--duration")?,
        stats_interval: stats,
        pcap: args.pcap.clone(),
        pin: !args.no_pin,
        host_channels: false,
        splice_pairs,
        ..RunOptions::default()
    })
}

fn install_ctrlc(stop: &Arc<AtomicBool>) {
    let s = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed)) {
        eprintln!("nicemu: warning: cannot install the Ctrl-C handler: {e}");
    }
}

/// `nicemu run` and `nicemu fwd`; `splice_pairs`: pairs installed before the start, for
/// `nicemu fwd --splice` (the lcores run as NIC lcores with [`splice_bench_pairs`]
/// installed, so every frame is translated rather than forwarded; with `--splice-miss`,
/// [`splice_miss_pairs`], so every frame misses the table).
pub fn run(
    args: &CommonArgs,
    mode: Mode,
    template: Option<Vec<u8>>,
    frame_size: usize,
    splice_pairs: Vec<offload_api::msg::SpliceInstallRepr>,
) -> Result<(), String> {
    let cfg = Config::load(&args.config).map_err(|e| e.to_string())?;
    cfg.check_cores(&allowed()?).map_err(|e| e.to_string())?;
    let opts = options(args, &cfg, mode, splice_pairs)?;
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(&stop);
    match cfg.ports[0].driver {
        Driver::Wire => run_wire(&cfg, &opts, stop, mode, frame_size),
        Driver::Dpdk => run_dpdk(&cfg, &opts, stop, args, template),
    }
}

#[cfg(feature = "dpdk")]
fn run_dpdk(
    cfg: &Config,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
    args: &CommonArgs,
    template: Option<Vec<u8>>,
) -> Result<(), String> {
    crate::dpdk::run(cfg, opts, stop, &args.eal, args.xstats, template)
}

#[cfg(not(feature = "dpdk"))]
fn run_dpdk(
    cfg: &Config,
    _: &RunOptions,
    _: Arc<AtomicBool>,
    _: &CommonArgs,
    _: Option<Vec<u8>>,
) -> Result<(), String> {
    Err(format!(
        "{}: port[0].driver: \"dpdk\" needs a nicemu built with DPDK support (cargo build --features dpdk; `make demo` and `make test` do)",
        cfg.source
    ))
}

fn run_wire(
    cfg: &Config,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
    mode: Mode,
    frame_size: usize,
) -> Result<(), String> {
    let clock = dataplane::clock::Clock::real();
    let mut topo = build_wire(cfg, opts, clock).map_err(|e| e.to_string())?;
    let tsc_hz = measure_tsc_hz(Duration::from_millis(50));
    // In forward mode a generator drives the far end of every wire named by one port: it
    // sends on the far ends of even ports and drains all far ends.
    let gen = if mode != Mode::Nic && !topo.peers.is_empty() {
        let mut queues = Vec::new();
        for (name, end) in topo.peers.iter_mut() {
            let send = cfg
                .ports
                .iter()
                .position(|p| p.wire.as_deref() == Some(name))
                .is_some_and(|i| i % 2 == 0);
            for q in 0..end.queue_count() {
                if let Some(queue) = end.take_queue(q) {
                    queues.push((send && q == 0, queue));
                }
            }
        }
        let frame = template_frame(frame_size);
        let stop = stop.clone();
        Some(std::thread::spawn(move || generator(queues, frame, &stop)))
    } else {
        None
    };
    let mut printer = IntervalPrinter::new();
    let lcores = std::mem::take(&mut topo.lcores);
    let result = run_lcores(lcores, opts, stop.clone(), Arc::new(|| Ok(())), |r, t| {
        printer.print(r, t)
    });
    stop.store(true, Ordering::Relaxed);
    let gen_sent = gen.map(|g| g.join().unwrap_or(0));
    let (reports, elapsed) = result.map_err(|e| e.to_string())?;
    print!("{}", report::summary(&reports, elapsed, tsc_hz));
    if let Some(sent) = gen_sent {
        println!("generator: sent {sent} frames of {frame_size} bytes");
    }
    for (name, out, back) in &topo.links {
        println!(
            "wire {name}: nic->far {}; far->nic {}",
            report::link(&out.snapshot()),
            report::link(&back.snapshot())
        );
    }
    Ok(())
}

/// Sends `frame` as fast as the wire takes it on the queues marked for sending, and drains
/// every queue, until `stop`. Returns frames sent.
fn generator(
    mut queues: Vec<(bool, dataplane::port::wire::WireQueue)>,
    frame: Vec<u8>,
    stop: &AtomicBool,
) -> u64 {
    let mut sent = 0u64;
    let mut batch: Vec<HeapBuf> = Vec::with_capacity(32);
    let mut sink = Vec::with_capacity(256);
    while !stop.load(Ordering::Relaxed) {
        for (send, q) in queues.iter_mut() {
            if *send {
                batch.extend((0..32).map(|_| HeapBuf::from_frame(&frame)));
                sent += q.tx_burst(&mut batch) as u64;
                batch.clear();
            }
            q.rx_burst(&mut sink, 256);
            sink.clear();
        }
    }
    sent
}
