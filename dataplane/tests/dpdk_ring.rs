//! DPDK tests on virtual devices: net_ring loopback, net_memif server/client in one process,
//! net_null with a template pool, mbuf operations and API error paths.
//!
//! One EAL per process: run with `cargo nextest run -p dataplane --features dpdk` (nextest
//! runs each test in its own process). Each test uses `--no-huge --no-pci -m 256` and a
//! unique `--file-prefix`, and removes `/var/run/dpdk/<prefix>` at the end, even on failure.
//! Every loop is bounded in iterations and time.
#![cfg(feature = "dpdk")]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataplane::port::dpdk::DpdkQueue;
use dataplane::{PacketBuf, Port, QueueStats};
use nicemu_dpdk::{
    DpdkError, Eal, EthDev, Mbuf, Mempool, PortConf, Promiscuous, RssConf, PKTMBUF_HEADROOM,
    SOCKET_ID_ANY,
};

/// Data room for every pool here: frames up to 2048 bytes stay one segment.
const DATA_ROOM: u16 = 2048 + PKTMBUF_HEADROOM as u16;

/// Removes DPDK's runtime directory for our file prefix (and a temp dir, if any) on drop,
/// so that it happens even when the test panics. Declared before the `Eal` so that it is
/// dropped after it (after `rte_eal_cleanup`).
struct Cleanup {
    paths: Vec<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// EAL arguments for test `name` with the given `--vdev`s, and the cleanup guard.
fn eal_args(name: &str, vdevs: &[String]) -> (Vec<String>, Cleanup) {
    let prefix = format!("nicemu-test-{name}-{}", std::process::id());
    let mut args: Vec<String> = [
        "-l",
        "0",
        "--no-huge",
        "--no-pci",
        "-m",
        "256",
        "--log-level=warning",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--file-prefix={prefix}"));
    args.extend(vdevs.iter().map(|v| format!("--vdev={v}")));
    let cleanup = Cleanup {
        paths: vec![PathBuf::from("/var/run/dpdk").join(&prefix)],
    };
    (args, cleanup)
}

/// Deterministic pseudo-random numbers (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `count` frames of sizes in `min..=max` with random contents; each starts with its
    /// index so that a mismatch report says which frame broke.
    fn frames(&mut self, count: usize, min: usize, max: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| {
                let len = min + (self.next() as usize) % (max - min + 1);
                let mut f: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
                f[..4].copy_from_slice(&(i as u32).to_be_bytes());
                f
            })
            .collect()
    }
}

/// Sends `frames` on `tx` and receives them on `rx` (which may be the same queue), in
/// bursts, until all arrived or the bounds (iterations, 5 s) are hit. Returns the received
/// frames' bytes.
fn send_and_receive(
    tx: &mut DpdkQueue,
    mut rx: Option<&mut DpdkQueue>,
    frames: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    const MAX_ITERS: usize = 200_000;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut next = 0;
    let mut pending: Vec<Mbuf> = Vec::with_capacity(32);
    let mut inbox: Vec<Mbuf> = Vec::with_capacity(64);
    let mut got: Vec<Vec<u8>> = Vec::with_capacity(frames.len());
    for _ in 0..MAX_ITERS {
        if got.len() == frames.len() || Instant::now() > deadline {
            break;
        }
        while pending.len() < 32 && next < frames.len() {
            let mut m = tx.alloc().expect("pool exhausted");
            assert!(m.set_frame(&frames[next]), "frame {next} does not fit");
            pending.push(m);
            next += 1;
        }
        if !pending.is_empty() {
            tx.tx_burst(&mut pending);
        }
        let q = match rx.as_deref_mut() {
            Some(q) => q,
            None => &mut *tx,
        };
        inbox.clear();
        q.rx_burst(&mut inbox, 64);
        got.extend(inbox.iter().map(|m| m.data().to_vec()));
        inbox.clear();
    }
    got
}

fn assert_same_frames(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(
        got.len(),
        want.len(),
        "received {} of {} frames",
        got.len(),
        want.len()
    );
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "frame {i}: length");
        assert!(g == w, "frame {i}: contents differ");
    }
}

#[test]
fn ring_loopback_1000_frames_intact_in_order_and_counted() {
    let (args, _cleanup) = eal_args("ring", &["net_ring0".into()]);
    let eal = Eal::init(&args).expect("EAL init");
    let pool = Mempool::create("ring_pool", 4095, 256, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let port = eal.port_by_name("net_ring0").unwrap();
    let dev = EthDev::configure(&eal, port, &PortConf::default(), Arc::clone(&pool)).unwrap();
    assert_eq!(dev.name(), "net_ring0");
    let link = dev
        .wait_link_up(Duration::from_secs(2))
        .expect("net_ring link up");
    assert_eq!(dev.promiscuous(), Promiscuous::On);
    eprintln!(
        "net_ring0: link {link:?}, promiscuous {:?}, mac {:02x?}",
        dev.promiscuous(),
        dev.mac()
    );

    let frames = Rng(0x5eed_0001).frames(1000, 60, 1514);
    let total_bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    let mut q = DpdkQueue::new(&dev, 0).unwrap();
    let got = send_and_receive(&mut q, None, &frames);
    assert_same_frames(&got, &frames);

    assert_eq!(
        q.stats(),
        QueueStats {
            rx_packets: 1000,
            rx_bytes: total_bytes,
            tx_packets: 1000,
            tx_bytes: total_bytes,
            tx_dropped: 0,
        }
    );
    let st = dev.stats().unwrap();
    eprintln!("net_ring0 stats: {st:?}");
    assert_eq!(st.opackets, 1000);
    assert_eq!(st.ipackets, 1000);
    // net_ring counts packets only (its stats_get leaves the byte counters at 0): check
    // bytes when the driver reports them.
    if st.obytes != 0 || st.ibytes != 0 {
        assert_eq!(st.obytes, total_bytes);
        assert_eq!(st.ibytes, total_bytes);
    }
    let xstats = dev.xstats().unwrap();
    eprintln!("net_ring0 xstats: {xstats:?}");
    assert!(xstats
        .iter()
        .any(|(n, v)| n == "rx_good_packets" && *v == 1000));
    drop(q);
    assert_eq!(pool.in_use(), 0, "every mbuf went back to the pool");
}

#[test]
fn memif_server_and_client_in_one_process() {
    let dir = std::env::temp_dir().join(format!("nicemu-memif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("memif.sock");
    let sock = sock.display();
    let (args, mut cleanup) = eal_args(
        "memif",
        &[
            format!("net_memif0,role=server,socket={sock},socket-abstract=no,id=0"),
            format!("net_memif1,role=client,socket={sock},socket-abstract=no,id=0"),
        ],
    );
    cleanup.paths.push(dir.clone());
    let eal = Eal::init(&args).expect("EAL init with a memif server and client");
    let ports = eal.ports();
    eprintln!("ports: {ports:?}");
    let pool = Mempool::create("memif_pool", 4095, 256, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let conf = PortConf {
        rx_desc: 512,
        tx_desc: 512,
        ..PortConf::default()
    };
    let server = EthDev::configure(
        &eal,
        eal.port_by_name("net_memif0").unwrap(),
        &conf,
        Arc::clone(&pool),
    )
    .unwrap();
    let client = EthDev::configure(
        &eal,
        eal.port_by_name("net_memif1").unwrap(),
        &conf,
        Arc::clone(&pool),
    )
    .unwrap();
    server
        .wait_link_up(Duration::from_secs(5))
        .expect("memif server link up");
    client
        .wait_link_up(Duration::from_secs(5))
        .expect("memif client link up");

    let frames = Rng(0x5eed_0002).frames(500, 60, 1514);
    let mut s = DpdkQueue::new(&server, 0).unwrap();
    let mut c = DpdkQueue::new(&client, 0).unwrap();
    let got = send_and_receive(&mut c, Some(&mut s), &frames);
    assert_same_frames(&got, &frames);
    let back = Rng(0x5eed_0003).frames(200, 60, 1514);
    let got = send_and_receive(&mut s, Some(&mut c), &back);
    assert_same_frames(&got, &back);
    assert_eq!(c.stats().tx_packets, 500);
    assert_eq!(s.stats().rx_packets, 500);
    assert_eq!(c.stats().rx_packets, 200);
    let (ss, cs) = (server.stats().unwrap(), client.stats().unwrap());
    eprintln!(
        "memif: server {:?} promiscuous {:?} {ss:?}; client {cs:?}",
        server.link_status().unwrap(),
        server.promiscuous()
    );
    assert_eq!(
        (cs.opackets, ss.ipackets, ss.opackets, cs.ipackets),
        (500, 500, 200, 200)
    );
    let bytes = |fs: &[Vec<u8>]| fs.iter().map(|f| f.len() as u64).sum::<u64>();
    let (fwd, rev) = (bytes(&frames), bytes(&back));
    assert_eq!(
        (cs.obytes, ss.ibytes, ss.obytes, cs.ibytes),
        (fwd, fwd, rev, rev)
    );
    assert_eq!((c.stats().tx_bytes, s.stats().rx_bytes), (fwd, fwd));
    drop((c, s));

    // Teardown order matters with memif in one process (DPDK 22.11): closing one end makes
    // the EAL interrupt thread run the other end's disconnect (which frees its shared-memory
    // regions) while we might be closing that other end ourselves; the two race and DPDK
    // logs "EAL: Error: Invalid memory" (a double rte_free). So: close the client, wait
    // until the server saw the disconnect (link down) and give the interrupt thread time to
    // finish it, then close the server.
    let (mut client, mut server) = (client, server);
    client.stop().unwrap();
    let t = Instant::now();
    while server.link_status().unwrap().up && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    server.stop().unwrap();
}

#[test]
fn mbuf_room_is_conserved_and_out_of_room_is_refused() {
    let (args, _cleanup) = eal_args("mbufops", &[]);
    let _eal = Eal::init(&args).unwrap();
    let pool = Mempool::create("ops_pool", 63, 0, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let mut m = pool.alloc().unwrap();
    assert_eq!(m.len(), 0);
    assert_eq!(PacketBuf::headroom(&m), PKTMBUF_HEADROOM);
    let room = m.headroom() + m.len() + m.tailroom();
    assert_eq!(room, usize::from(DATA_ROOM));

    assert!(m.set_frame(&[1, 2, 3, 4]));
    m.prepend(14).unwrap().fill(9);
    assert_eq!(m.len(), 18);
    assert_eq!(
        &m.data()[..15],
        &[9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1]
    );
    assert!(m.adj(14));
    assert_eq!(m.data(), &[1, 2, 3, 4]);
    m.append(2).unwrap().copy_from_slice(&[5, 6]);
    assert_eq!(m.data(), &[1, 2, 3, 4, 5, 6]);
    assert!(m.trim(3));
    assert_eq!(m.data(), &[1, 2, 3]);
    m.data_mut()[0] = 7;
    assert_eq!(PacketBuf::data(&m), &[7, 2, 3]);
    assert_eq!(room, m.headroom() + m.len() + m.tailroom());

    // Refusals leave the frame unchanged.
    let (h, t) = (m.headroom(), m.tailroom());
    assert!(m.prepend(h + 1).is_none());
    assert!(m.append(t + 1).is_none());
    assert!(m.prepend(1 << 20).is_none());
    assert!(!m.adj(4));
    assert!(!m.trim(4));
    assert!(!m.adj(1 << 20));
    assert_eq!(m.data(), &[7, 2, 3]);
    assert_eq!((m.headroom(), m.tailroom()), (h, t));
    // Exactly all the room is fine.
    assert_eq!(m.prepend(h).map(|b| b.len()), Some(h));
    assert_eq!(m.headroom(), 0);
    assert_eq!(m.append(t).map(|b| b.len()), Some(t));
    assert_eq!(m.len(), room);
    assert!(!m.set_frame(&vec![0; room + 1]));
    assert!(m.set_frame(&[1]));
    assert_eq!(room, m.headroom() + m.len() + m.tailroom());

    // Pool accounting, bulk free.
    assert_eq!(pool.in_use(), 1);
    let mut v: Vec<Mbuf> = (0..10).map(|_| pool.alloc().unwrap()).collect();
    assert_eq!(pool.in_use(), 11);
    nicemu_dpdk::free_bulk(&mut v);
    assert!(v.is_empty());
    drop(m);
    assert_eq!(pool.in_use(), 0);
    // Exhaustion is a None, not a crash.
    let all: Vec<Mbuf> = (0..100).map_while(|_| pool.alloc()).collect();
    assert_eq!(all.len(), pool.capacity() as usize);
    assert!(pool.alloc().is_none());
}

#[test]
fn fill_template_shows_up_in_fresh_mbufs() {
    let (args, _cleanup) = eal_args("template", &[]);
    let _eal = Eal::init(&args).unwrap();
    let mut pool = Mempool::create("tpl_pool", 127, 0, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let template: Vec<u8> = (0..1514u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(pool.fill_template(&template).unwrap(), 127);
    let mut m = pool.alloc().unwrap();
    assert!(m.append(template.len()).is_some());
    assert_eq!(m.data(), &template[..]);
    // Refused while an mbuf is out, or while the Arc is shared.
    assert!(matches!(
        pool.fill_template(&template),
        Err(DpdkError::Mempool { .. })
    ));
    drop(m);
    let other = Arc::clone(&pool);
    assert!(matches!(
        pool.fill_template(&template),
        Err(DpdkError::Mempool { .. })
    ));
    drop(other);
    let too_long = vec![0u8; usize::from(DATA_ROOM)];
    assert!(matches!(
        pool.fill_template(&too_long),
        Err(DpdkError::Mempool { .. })
    ));
}

#[test]
fn net_null_rx_hands_out_template_frames() {
    let (args, _cleanup) = eal_args("null", &["net_null0,size=128".into()]);
    let eal = Eal::init(&args).unwrap();
    let mut pool = Mempool::create("null_pool", 1023, 64, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let template: Vec<u8> = (0..256u32).map(|i| i as u8 ^ 0x5a).collect();
    pool.fill_template(&template).unwrap();
    let port = eal.port_by_name("net_null0").unwrap();
    // Two rx queues with RSS requested: see what the device makes of it.
    let conf = PortConf {
        rx_queues: 2,
        tx_queues: 2,
        rss: Some(RssConf::default()),
        ..PortConf::default()
    };
    let dev = EthDev::configure(&eal, port, &conf, pool).unwrap();
    eprintln!(
        "net_null0: rss {:#x}, promiscuous {:?}, link {:?}",
        dev.rss_hash_functions(),
        dev.promiscuous(),
        dev.link_status().unwrap()
    );
    let mut q = DpdkQueue::new(&dev, 1).unwrap();
    let mut v = Vec::new();
    assert_eq!(q.rx_burst(&mut v, 32), 32);
    for m in &v {
        assert_eq!(m.data(), &template[..128]);
    }
    // net_null's tx frees what it takes.
    assert_eq!(q.tx_burst(&mut v), 32);
    assert!(v.is_empty());
    assert_eq!(q.stats().rx_bytes, 32 * 128);
    assert_eq!(q.stats().tx_bytes, 32 * 128);
}

#[test]
fn eal_init_twice_fails() {
    let (args, _cleanup) = eal_args("twice", &[]);
    let eal = Eal::init(&args).unwrap();
    assert_eq!(
        Eal::init(&args).unwrap_err(),
        DpdkError::EalAlreadyInitialized
    );
    assert!(nicemu_dpdk::tsc_hz() > 0);
    let t0 = nicemu_dpdk::rdtsc();
    assert!(nicemu_dpdk::rdtsc() >= t0);
    drop(eal);
}

#[test]
fn port_by_name_of_a_missing_port_lists_the_existing_ones() {
    let (args, _cleanup) = eal_args("names", &["net_ring0".into(), "net_null0".into()]);
    let eal = Eal::init(&args).unwrap();
    let names: Vec<String> = eal.ports().into_iter().map(|(_, n)| n).collect();
    assert!(names.contains(&"net_ring0".to_string()) && names.contains(&"net_null0".to_string()));
    let err = eal.port_by_name("net_nope7").unwrap_err();
    let msg = err.to_string();
    eprintln!("{msg}");
    match err {
        DpdkError::NoSuchPort { name, available } => {
            assert_eq!(name, "net_nope7");
            assert_eq!(available, names);
        }
        e => panic!("unexpected {e:?}"),
    }
    assert!(msg.contains("net_ring0") && msg.contains("net_null0"));
}

#[test]
fn configure_and_queue_errors_are_errors_not_crashes() {
    let (args, _cleanup) = eal_args("conferr", &["net_ring0".into()]);
    let eal = Eal::init(&args).unwrap();
    let pool = Mempool::create("conf_pool", 1023, 0, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    assert!(matches!(
        Mempool::create("conf_pool", 63, 0, DATA_ROOM, SOCKET_ID_ANY),
        Err(DpdkError::Mempool { errno: libc_eexist, .. }) if libc_eexist == 17
    ));
    let port = eal.port_by_name("net_ring0").unwrap();
    let conf = PortConf {
        rx_queues: 64,
        ..PortConf::default()
    };
    let err = EthDev::configure(&eal, port, &conf, Arc::clone(&pool)).unwrap_err();
    eprintln!("{err}");
    assert!(matches!(
        err,
        DpdkError::TooManyQueues {
            dir: "rx",
            requested: 64,
            ..
        }
    ));
    let conf = PortConf {
        tx_queues: 0,
        ..PortConf::default()
    };
    assert!(matches!(
        EthDev::configure(&eal, port, &conf, Arc::clone(&pool)),
        Err(DpdkError::Config { .. })
    ));
    assert_eq!(
        EthDev::configure(&eal, 31, &PortConf::default(), Arc::clone(&pool)).unwrap_err(),
        DpdkError::InvalidPort(31)
    );

    // A good configuration still works after the refusals. net_ring supports no RSS hash
    // function: RSS is skipped (with a warning), not an error.
    let conf = PortConf {
        rx_queues: 2,
        tx_queues: 3,
        rss: Some(RssConf::default()),
        ..PortConf::default()
    };
    let mut dev = EthDev::configure(&eal, port, &conf, Arc::clone(&pool)).unwrap();
    assert_eq!(dev.rss_hash_functions(), 0);
    assert_eq!(
        EthDev::configure(&eal, port, &conf, Arc::clone(&pool)).unwrap_err(),
        DpdkError::PortBusy(port)
    );
    assert!(matches!(
        dev.queue(3),
        Err(DpdkError::QueueOutOfRange { queue: 3, .. })
    ));
    let q2 = dev.queue(2).unwrap();
    assert!(!q2.has_rx() && q2.has_tx());
    let q0 = dev.queue(0).unwrap();
    assert!(matches!(
        dev.queue(0),
        Err(DpdkError::QueueInUse { queue: 0, .. })
    ));
    assert!(matches!(
        dev.stop(),
        Err(DpdkError::QueuesInUse { held: 2, .. })
    ));
    drop(q0);
    drop(q2);
    dev.stop().unwrap();
    dev.stop().unwrap();
    assert!(matches!(dev.queue(0), Err(DpdkError::PortStopped(_))));
    assert!(matches!(dev.stats(), Err(DpdkError::PortStopped(_))));
}

#[test]
fn registered_threads_get_an_lcore_and_a_cache() {
    let (args, _cleanup) = eal_args("threads", &[]);
    let _eal = Eal::init(&args).unwrap();
    assert_eq!(
        nicemu_dpdk::lcore_id(),
        Some(0),
        "the EAL main thread is lcore 0"
    );
    let pool = Mempool::create("thr_pool", 1023, 64, DATA_ROOM, SOCKET_ID_ANY).unwrap();
    let p = Arc::clone(&pool);
    let lcore = std::thread::spawn(move || {
        assert_eq!(nicemu_dpdk::lcore_id(), None);
        nicemu_dpdk::register_thread().unwrap();
        let id = nicemu_dpdk::lcore_id().expect("registered");
        nicemu_dpdk::register_thread().unwrap(); // idempotent
        assert_eq!(nicemu_dpdk::lcore_id(), Some(id));
        // Freed mbufs stay in this lcore's cache (counted as available, not in use).
        let v: Vec<Mbuf> = (0..32).map(|_| p.alloc().unwrap()).collect();
        drop(v);
        assert_eq!(p.in_use(), 0);
        nicemu_dpdk::unregister_thread();
        assert_eq!(nicemu_dpdk::lcore_id(), None);
        id
    })
    .join()
    .unwrap();
    assert_ne!(lcore, 0);
    // unregister_thread on the main thread keeps its lcore.
    nicemu_dpdk::unregister_thread();
    assert_eq!(nicemu_dpdk::lcore_id(), Some(0));
    // Threads that exit registered give their lcore back.
    for _ in 0..3 {
        std::thread::spawn(|| nicemu_dpdk::register_thread().unwrap())
            .join()
            .unwrap();
    }
    let again = std::thread::spawn(|| {
        nicemu_dpdk::register_thread().unwrap();
        nicemu_dpdk::lcore_id()
    })
    .join()
    .unwrap();
    assert_eq!(again, Some(lcore), "lcore ids are recycled");
    assert_eq!(pool.in_use(), 0);
}
