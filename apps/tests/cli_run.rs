//! The nicemu command end to end on the in-memory wire: Ctrl-C stops a run with a summary,
//! --pcap writes a capture tshark reads, the demo's checks pass, and --help covers the options.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::proc::Proc;
use common::waits;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nicemu"))
}

fn config() -> String {
    format!("{}/../configs/fwd-wire.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn ctrl_c_stops_the_run_and_prints_the_summary() {
    let mut cmd = bin();
    cmd.args([
        "fwd",
        "-c",
        &config(),
        "--no-pin",
        "--stats-interval",
        "0.2",
    ]);
    let mut run = Proc::spawn_command("nicemu fwd", cmd);
    // Ready once the first periodic statistics line is out: the Ctrl-C handler is installed
    // before the lcores start, and the lcores print it only while they run.
    let running = waits::wait_for(Duration::from_secs(20), || {
        run.drain();
        run.out.iter().any(|l| l.contains("p0: rx")) || run.exited().is_some()
    });
    assert!(
        running && run.status.is_none(),
        "no periodic statistics: {}",
        run.describe()
    );
    // kill(1) sends SIGINT, as a terminal does on Ctrl-C.
    run.interrupt();
    let start = Instant::now();
    let stopped = waits::wait_for(Duration::from_secs(10), || run.exited().is_some());
    assert!(
        stopped,
        "did not stop within {:?} of SIGINT",
        start.elapsed()
    );
    let status = run.status.expect("exited");
    let stderr = run.stderr();
    assert!(status.success(), "{stderr}");
    let text = run.stdout();
    assert!(text.contains("== nicemu summary"), "{text}");
    assert!(text.contains("cycles/pkt"), "{text}");
    // The generator's frames were forwarded p0 -> p1.
    let fwd: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("nic: forwarded "))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.parse().ok())
        .expect("forwarded count");
    assert!(fwd > 1000, "{text}");
}

#[test]
fn pcap_capture_is_readable_by_tshark() {
    let file = std::env::temp_dir().join(format!("nicemu-cli-{}.pcap", std::process::id()));
    let out = bin()
        .args([
            "fwd",
            "-c",
            &config(),
            "--no-pin",
            "-d",
            "0.3",
            "--frame-size",
            "100",
        ])
        .arg("--pcap")
        .arg(format!("p1={}", file.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = Command::new("tshark")
        .args([
            "-r",
            file.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.len",
            "-e",
            "udp.dstport",
            "-c",
            "50",
        ])
        .output()
        .expect("tshark (install it: apt-get install tshark)");
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let lines: Vec<String> = String::from_utf8_lossy(&t.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 50, "{lines:?}");
    assert!(lines.iter().all(|l| l == "100\t1024"), "{lines:?}");
    let _ = std::fs::remove_file(file);
}

#[test]
fn demo_checks_pass() {
    let out = bin().args(["demo", "--frames", "3000"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 7 NIC checks and 4 host-stack checks.
    assert_eq!(text.matches("[ok]").count(), 11, "{text}");
    assert!(text.contains("10 MB each way arrived intact"), "{text}");
    assert!(
        text.contains("short connections with the setup and teardown offloads"),
        "{text}"
    );
    assert!(!text.contains("FAILED"));
    assert!(text.contains("drops: 5 total"), "{text}");
}

#[test]
fn help_describes_every_subcommand_and_option() {
    let top = String::from_utf8_lossy(&bin().arg("--help").output().unwrap().stdout).into_owned();
    for sub in [
        "run",
        "fwd",
        "check",
        "demo",
        "bench",
        "modules",
        "testbench",
    ] {
        assert!(top.contains(sub), "{top}");
    }
    let fwd = String::from_utf8_lossy(&bin().args(["fwd", "--help"]).output().unwrap().stdout)
        .into_owned();
    for opt in [
        "--config",
        "--duration",
        "--stats-interval",
        "--pcap",
        "--no-pin",
        "--template",
        "--frame-size",
        "EAL",
    ] {
        assert!(fwd.contains(opt), "fwd --help lacks {opt}:\n{fwd}");
    }
}

/// Eight test binaries of this workspace (every test against a real peer in a network
/// namespace among them) are compiled only with the `dpdk` feature: a test run without it,
/// on a machine where libdpdk is installed, would drop them without a word. This test makes
/// that run fail instead. Where libdpdk is missing (`pkg-config --exists libdpdk` fails)
/// the feature cannot be built, and the run without it is the right one.
#[test]
fn dpdk_tests_are_built_where_libdpdk_is_installed() {
    assert!(
        cfg!(feature = "dpdk") || !dataplane::sys::libdpdk_installed(),
        "libdpdk is installed but the tests were built without the `dpdk` feature, so the \
         DPDK and network-namespace test binaries were left out: run \
         `cargo nextest run --workspace --features dpdk` (or `make test`)"
    );
}
