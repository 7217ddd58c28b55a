//! The threaded runtime on the in-memory wire: a NIC lcore on its own thread forwards
//! frames between two wires; every frame arrives byte for byte, in order, and the lcore's
//! counters agree with the wires'.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::clock::Clock;
use dataplane::config::Config;
use dataplane::lcore::{LcoreReport, Mode};
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use dataplane::runtime::{build_wire, run_lcores, RunError, RunOptions, WireTopology};

const CFG: &str = r#"
[[port]]
name = "p0"
driver = "wire"
wire = "left"
[[port]]
name = "p1"
driver = "wire"
wire = "right"
[wire.left]
reorder = 0.0
[[lcore]]
core = 0
role = "nic"
"#;

/// A forwarding topology from `cfg_text` with its lcores running on their own threads, and
/// the far ends of the "left" and "right" wires (every queue) for the test to drive.
struct Running {
    topo: WireTopology,
    left: WireQueue,
    rights: Vec<WireQueue>,
    stop: Arc<AtomicBool>,
    runner: std::thread::JoinHandle<Result<(Vec<LcoreReport>, Duration), RunError>>,
}

fn start(cfg_text: &str) -> Running {
    let cfg = Config::parse(cfg_text, "test").unwrap();
    let opts = RunOptions {
        mode: Mode::Forward,
        duration: Some(Duration::from_secs(20)),
        pin: false,
        ..RunOptions::default()
    };
    let mut topo = build_wire(&cfg, &opts, Clock::real()).unwrap();
    let left = topo.peers.get_mut("left").unwrap().take_queue(0).unwrap();
    let right_end = topo.peers.get_mut("right").unwrap();
    let rights = (0..right_end.queue_count())
        .map(|q| right_end.take_queue(q).unwrap())
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let lcores = std::mem::take(&mut topo.lcores);
    let runner = {
        let stop = stop.clone();
        std::thread::spawn(move || run_lcores(lcores, &opts, stop, Arc::new(|| Ok(())), |_, _| {}))
    };
    Running {
        topo,
        left,
        rights,
        stop,
        runner,
    }
}

impl Running {
    /// Stops the lcores and returns their reports.
    fn finish(self) -> (WireTopology, Vec<LcoreReport>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (reports, _) = self.runner.join().unwrap().unwrap();
        (self.topo, reports)
    }
}

#[test]
fn lcore_thread_forwards_every_frame_intact_and_counts_agree() {
    let Running {
        topo,
        mut left,
        mut rights,
        stop,
        runner,
    } = start(CFG);
    let right = &mut rights[0];
    // 5,000 UDP frames of varied sizes and contents (valid: transit frames are checked).
    let sent: Vec<Vec<u8>> = (0..5_000u32)
        .map(|i| {
            let payload: Vec<u8> = (0..(i % 1400)).map(|k| (k * 7 + i) as u8).collect();
            dataplane::frames::udp(
                [2, 0, 0, 0, 0, 1],
                [2, 0, 0, 0, 0, 2],
                [192, 0, 2, 1],
                [198, 51, 100, 1],
                1000 + (i % 50) as u16,
                9,
                &payload,
            )
        })
        .collect();
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut inbox = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    for chunk in sent.chunks(64) {
        let mut batch: Vec<HeapBuf> = chunk.iter().map(|f| HeapBuf::from_frame(f)).collect();
        // A full ring (the lcore thread not scheduled yet on a busy machine) keeps what it
        // did not take in `batch`: offer it again until taken or the deadline passes.
        while !batch.is_empty() && Instant::now() < deadline {
            if left.tx_burst(&mut batch) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Keep the wire's rings from filling: drain what has arrived.
            right.rx_burst(&mut inbox, 1024);
            got.extend(inbox.drain(..).map(|b| b.data().to_vec()));
        }
        assert!(
            batch.is_empty(),
            "the wire took no frame before the deadline"
        );
    }
    while got.len() < sent.len() && Instant::now() < deadline {
        if right.rx_burst(&mut inbox, 1024) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        got.extend(inbox.drain(..).map(|b| b.data().to_vec()));
    }
    let (topo, reports) = Running {
        topo,
        left,
        rights,
        stop,
        runner,
    }
    .finish();

    assert_eq!(got.len(), sent.len(), "frames lost");
    assert!(got == sent, "frames changed or reordered");
    let r = &reports[0];
    assert_eq!(r.forwarded, 5_000);
    assert_eq!(r.ports[0].queue.rx_packets, 5_000);
    assert_eq!(r.ports[1].queue.tx_packets, 5_000);
    let bytes: u64 = sent.iter().map(|f| f.len() as u64).sum();
    assert_eq!(r.ports[0].queue.rx_bytes, bytes);
    assert_eq!(r.ports[1].queue.tx_bytes, bytes);
    let (left_link, right_link) = (&topo.links[0], &topo.links[1]);
    assert_eq!(left_link.0, "left");
    assert_eq!(
        left_link.2.snapshot().delivered,
        5_000,
        "far->nic on the left wire"
    );
    assert_eq!(
        right_link.1.snapshot().delivered,
        5_000,
        "nic->far on the right wire"
    );
    assert_eq!(r.stack.drops.total(), 0);
}

/// Forward mode parses and drops a malformed frame; io mode (the testpmd-like control) moves
/// it without looking.
#[test]
fn io_mode_forwards_without_parsing_forward_mode_drops_malformed() {
    let cfg = Config::parse(CFG, "test").unwrap();
    let mut bad = dataplane::frames::udp(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [192, 0, 2, 1],
        [198, 51, 100, 1],
        1,
        2,
        b"x",
    );
    bad[24] ^= 0xff; // IPv4 header checksum
    for (mode, expect) in [(Mode::Forward, 0usize), (Mode::Io, 1)] {
        let opts = RunOptions {
            mode,
            pin: false,
            ..RunOptions::default()
        };
        let mut topo = build_wire(&cfg, &opts, Clock::real()).unwrap();
        let mut left = topo.peers.get_mut("left").unwrap().take_queue(0).unwrap();
        let mut right = topo.peers.get_mut("right").unwrap().take_queue(0).unwrap();
        let mut nic = topo.lcores.remove(0);
        left.tx_burst(&mut vec![HeapBuf::from_frame(&bad)]);
        for _ in 0..4 {
            nic.poll_once();
        }
        let mut got = Vec::new();
        right.rx_burst(&mut got, 8);
        assert_eq!(got.len(), expect, "{mode:?}");
        let drops = nic.stack().counters().drops.total();
        assert_eq!(drops, 1 - expect as u64, "{mode:?}");
    }
}

/// Two NIC lcores: RSS on the wire spreads flows over both, each flow stays on one lcore (so
/// its frames stay in order), and nothing is lost.
#[test]
fn lcore_threads_rss_spreads_flows_and_keeps_each_in_order() {
    let two = CFG.replace(
        "[[lcore]]\ncore = 0\nrole = \"nic\"",
        "[[lcore]]\ncore = 0\nrole = \"nic\"\n[[lcore]]\ncore = 1\nrole = \"nic\"",
    );
    assert_eq!(Config::parse(&two, "test").unwrap().nic_lcores().len(), 2);
    let Running {
        topo,
        mut left,
        mut rights,
        stop,
        runner,
    } = start(&two);
    assert_eq!(rights.len(), 2);
    let flows = 40u16;
    let per_flow = 100u32;
    let mut batch = Vec::new();
    for seq in 0..per_flow {
        for flow in 0..flows {
            let mut payload = seq.to_be_bytes().to_vec();
            payload.extend_from_slice(&[flow as u8; 20]);
            batch.push(HeapBuf::from_frame(&dataplane::frames::udp(
                [2, 0, 0, 0, 0, 1],
                [2, 0, 0, 0, 0, 2],
                [192, 0, 2, 1],
                [198, 51, 100, 1],
                2000 + flow,
                9,
                &payload,
            )));
        }
        left.tx_burst(&mut batch);
        std::thread::sleep(Duration::from_micros(200));
    }
    let total = (flows as usize) * per_flow as usize;
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut inbox = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < total && Instant::now() < deadline {
        let mut n = 0;
        for r in rights.iter_mut() {
            n += r.rx_burst(&mut inbox, 1024);
            got.extend(inbox.drain(..).map(|b| b.data().to_vec()));
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let (_, reports) = Running {
        topo,
        left,
        rights,
        stop,
        runner,
    }
    .finish();
    assert_eq!(got.len(), total, "frames lost");
    // Both lcores carried traffic, and together all of it.
    let per_lcore: Vec<u64> = reports.iter().map(|r| r.forwarded).collect();
    assert!(
        per_lcore.iter().all(|&n| n > 0),
        "RSS left an lcore idle: {per_lcore:?}"
    );
    assert_eq!(per_lcore.iter().sum::<u64>(), total as u64);
    // Per flow, sequence numbers arrive in order.
    let mut next = vec![0u32; flows as usize];
    for f in &got {
        let flow = (u16::from_be_bytes([f[34], f[35]]) - 2000) as usize;
        let seq = u32::from_be_bytes([f[42], f[43], f[44], f[45]]);
        assert_eq!(seq, next[flow], "flow {flow} reordered");
        next[flow] += 1;
    }
}
