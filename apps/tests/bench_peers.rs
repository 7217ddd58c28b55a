//! `nicemu bench peers` in miniature (a smoke test, nothing here is timed): one round of
//! the kv workload with few requests (`nicemu kv` and redis-server, redis-benchmark and
//! redis-cli) and of the proxy workload with one-second wrk runs (`nicemu proxy` splicing
//! and relaying, HAProxy, nginx), run as the command users run. Every run reports requests
//! per second and no error, and nicemu and its reference both have a row for every case.
//!
//! The command builds its own namespaces and veth pair and removes them, its processes and
//! DPDK runtime directories when it ends (also on failure). Needs root, iproute2, ethtool,
//! redis-server, redis-tools, wrk, haproxy, nginx and curl; a missing tool fails the test
//! with the package to install. At most two busy-polling threads run at once (the nicemu
//! server's NIC lcore and host thread); the clients are the kernel's.
#![cfg(feature = "dpdk")]

use std::path::Path;
use std::process::Command;

use apps::json::{parse, Json};

/// Fails with the package to install when `tool` is not on the PATH.
fn require(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    assert!(
        found,
        "this test needs {tool}: install the {package} package (ci/install-deps.sh)"
    );
}

fn num(v: &Json, key: &str) -> f64 {
    v.get(key)
        .and_then(Json::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {v:?}"))
}

fn text<'a>(v: &'a Json, key: &str) -> &'a str {
    v.get(key)
        .and_then(Json::as_str)
        .unwrap_or_else(|| panic!("{key} missing in {v:?}"))
}

#[test]
fn bench_peers_one_round_of_kv_and_proxy() {
    for (tool, package) in [
        ("redis-server", "redis-server"),
        ("redis-benchmark", "redis-tools"),
        ("redis-cli", "redis-tools"),
        ("wrk", "wrk"),
        ("haproxy", "haproxy"),
        ("nginx", "nginx"),
        ("curl", "curl"),
    ] {
        require(tool, package);
    }
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let json = std::env::temp_dir().join(format!("nicemu-bench-peers-{}.json", std::process::id()));
    // Bounded inside: every client run and every wait for a server has a limit.
    let child = Command::new(env!("CARGO_BIN_EXE_nicemu"))
        .args(["bench", "peers"])
        .args(["--only", "kv,proxy", "--rounds", "1", "--requests", "2000"])
        .args(["--seconds", "1", "--no-plots", "--config-dir"])
        .arg(&configs)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running nicemu bench peers");
    let pid = child.id() % 100_000;
    let out = child.wait_with_output().expect("nicemu bench peers output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench peers failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let text_json = std::fs::read_to_string(&json).expect("the JSON file");
    let _ = std::fs::remove_file(&json);
    let v = parse(&text_json).expect("valid JSON");
    let runs = v.get("runs").and_then(Json::as_array).expect("runs");
    for r in runs {
        assert!(num(r, "req_per_s") > 0.0, "{r:?}");
        assert_eq!(num(r, "errors"), 0.0, "{r:?}");
        let cpu = r.get("cpu").and_then(Json::as_array).expect("cpu");
        assert!(cpu.len() >= 2, "server and client CPU: {r:?}");
    }
    let has = |w: &str, case: &str, server: &str| {
        runs.iter().any(|r| {
            text(r, "workload") == w && text(r, "case") == case && text(r, "server") == server
        })
    };
    for case in [
        "SET",
        "GET",
        "SET -k 0",
        "GET -k 0",
        "SET -P 16",
        "GET -P 16",
        "PING --latency",
    ] {
        assert!(has("kv", case, "nicemu"), "kv {case} nicemu\n{stdout}");
        assert!(has("kv", case, "redis-server"), "kv {case} redis\n{stdout}");
    }
    for case in ["64 B", "64 KB"] {
        for server in ["nicemu", "nicemu-relay", "haproxy", "nginx"] {
            assert!(
                has("proxy", case, server),
                "proxy {case} {server}\n{stdout}"
            );
        }
    }
    // nicemu's rows carry the ratio to the reference of the same round.
    for r in runs {
        let ratio = r.get("vs_reference").and_then(Json::as_f64);
        let wants = text(r, "server").starts_with("nicemu") && text(r, "case") != "PING --latency";
        assert_eq!(ratio.is_some(), wants, "{r:?}");
    }
    assert!(stdout.contains("medians over rounds"), "{stdout}");
    // Nothing left behind: the namespaces carry the bench's process id.
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    for side in ["c", "s"] {
        let name = format!("nmbp{pid}{side}");
        assert!(
            !ns.split_whitespace().any(|w| w == name),
            "namespace {name} left: {ns}"
        );
    }
}
