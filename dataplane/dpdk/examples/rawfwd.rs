//! The floor under `nicemu fwd`: a bare loop over these bindings that moves bursts between
//! two net_null ports and does nothing else (testpmd's io mode, in Rust), on core 1.
//!
//! `cargo run --release -p nicemu-dpdk --example rawfwd [-- --huge] [-- SECONDS]`
//! Prints Mpps over both ports and TSC cycles per frame. Needs root for the EAL.

#[cfg(nicemu_dpdk_stub)]
fn main() {
    eprintln!("rawfwd: nicemu-dpdk was built without libdpdk (install libdpdk-dev)");
    std::process::exit(1);
}

#[cfg(not(nicemu_dpdk_stub))]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(nicemu_dpdk_stub))]
use std::sync::Arc;
#[cfg(not(nicemu_dpdk_stub))]
use std::time::{Duration, Instant};

#[cfg(not(nicemu_dpdk_stub))]
use nicemu_dpdk::{rdtsc, register_thread, Eal, EthDev, Mbuf, Mempool, PortConf, SOCKET_ID_ANY};

#[cfg(not(nicemu_dpdk_stub))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let huge = args.iter().any(|a| a == "--huge");
    let secs: f64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(3.0);
    let prefix = format!("nicemu-bench-rawfwd-{}", std::process::id());
    let mut eal_args: Vec<String> = [
        "--no-pci",
        "-m",
        "512",
        "-l",
        "0",
        "--no-telemetry",
        "--log-level=warning",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    eal_args.push(format!("--file-prefix={prefix}"));
    eal_args.extend([
        "--vdev=net_null0".to_string(),
        "--vdev=net_null1".to_string(),
    ]);
    if !huge {
        eal_args.push("--no-huge".into());
    }
    let eal = Eal::init(&eal_args)?;
    let mut devs = Vec::new();
    for p in 0..2u16 {
        let pool = Mempool::create(&format!("rawfwd{p}"), 16383, 256, 2176, SOCKET_ID_ANY)?;
        devs.push(EthDev::configure(&eal, p, &PortConf::default(), pool)?);
    }
    let (mut q0, mut q1) = (devs[0].queue(0)?, devs[1].queue(0)?);
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || -> Result<(u64, u64, Duration), String> {
            let _ = core_affinity_1();
            register_thread().map_err(|e| e.to_string())?;
            let (mut a, mut b): (Vec<Mbuf>, Vec<Mbuf>) =
                (Vec::with_capacity(64), Vec::with_capacity(64));
            let (mut frames, t0, c0) = (0u64, Instant::now(), rdtsc());
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..1024 {
                    frames += q0.rx_burst(&mut a, 32) as u64;
                    q1.tx_burst(&mut a);
                    a.clear(); // frees what the driver did not take
                    frames += q1.rx_burst(&mut b, 32) as u64;
                    q0.tx_burst(&mut b);
                    b.clear();
                }
            }
            Ok((frames, rdtsc() - c0, t0.elapsed()))
        })
    };
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let (frames, cycles, elapsed) = worker.join().map_err(|_| "worker panicked")??;
    println!(
        "rawfwd ({}): {:.2} Mpps over both ports, {:.1} cycles/frame",
        if huge { "hugepages" } else { "--no-huge" },
        frames as f64 / elapsed.as_secs_f64() / 1e6,
        cycles as f64 / frames.max(1) as f64
    );
    drop(devs);
    drop(eal);
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
    Ok(())
}

#[cfg(not(nicemu_dpdk_stub))]
/// Pins the calling thread to core 1 (where `nicemu fwd` and testpmd forward in the
/// benchmark), through `taskset` so that this example needs no unsafe code of its own.
fn core_affinity_1() -> std::io::Result<()> {
    let tid = std::fs::read_link("/proc/thread-self")?;
    let tid = tid
        .file_name()
        .and_then(|t| t.to_str())
        .unwrap_or("0")
        .to_string();
    std::process::Command::new("taskset")
        .args(["-p", "-c", "1", &tid])
        .output()
        .map(|_| ())
}
