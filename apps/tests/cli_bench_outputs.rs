//! `nicemu bench kv` and `nicemu bench echo` end to end, tiny and on the in-memory wire: the
//! tables print, `--json` writes a file that parses with the fields the documentation names,
//! and `--plot-dir` gets SVGs with a title, unit-labelled axes and a legend. Nothing here is
//! timed (benchmarks are programs, the numbers are not checked).

use std::path::{Path, PathBuf};
use std::process::Command;

use apps::json::{parse, Json};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nicemu"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nicemu-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap();
    parse(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// The SVG exists and carries every string of `want` (title, axis labels, legend entries).
fn svg(path: &Path, want: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text.starts_with("<svg"), "{}", path.display());
    for w in want {
        assert!(text.contains(w), "{} lacks {w:?}", path.display());
    }
}

#[test]
fn bench_kv_writes_table_json_and_plots() {
    let dir = scratch("bench-kv");
    let file = dir.join("kv.json");
    let plots = dir.join("plots");
    let text = run(&[
        "bench",
        "kv",
        "--conns",
        "16",
        "--seconds",
        "0.1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--servers",
        "nicemu,nicemu-offload",
        "--json",
        file.to_str().unwrap(),
        "--plot-dir",
        plots.to_str().unwrap(),
    ]);
    assert!(text.contains("summary"), "{text}");
    assert!(
        text.contains("host+NIC ns") && text.contains("vs host+NIC"),
        "{text}"
    );
    assert!(
        text.contains(&format!("plots written to {}", plots.display())),
        "{text}"
    );
    let j = json(&file);
    assert_eq!(j.get("bench").and_then(Json::as_str), Some("kv"));
    let summary = j.get("summary").and_then(Json::as_array).unwrap();
    // Two rows (one request per connection, persistent) of two variants.
    assert_eq!(summary.len(), 4, "{j}");
    for s in summary {
        for key in [
            "txn_per_s",
            "host_ns_per_req",
            "nic_ns_per_req",
            "host_nic_ns_per_req",
            "link_frames_to_host_per_req",
            "latency_p50_ns",
            "latency_p99_ns",
        ] {
            assert!(s.get(key).and_then(Json::as_f64).is_some(), "{key}: {s}");
        }
        // Both ratios against the no-offload variant: host only, and host + NIC.
        for key in ["host_vs_no_offload", "host_nic_vs_no_offload"] {
            assert!(s.get(key).and_then(Json::as_f64).is_some(), "{key}: {s}");
        }
        // Every reply was checked; none was wrong and no connection failed.
        assert_eq!(s.get("errors").and_then(Json::as_f64), Some(0.0), "{s}");
    }
    let listed = j.get("plots").and_then(Json::as_array).unwrap();
    assert_eq!(listed.len(), 3);
    svg(
        &plots.join("kv-cpu-per-request.svg"),
        &[
            "bench kv: server CPU per request",
            "CPU time per request (ns)",
            "configuration",
            "server NIC lcore",
            "1 req/conn, +teardown",
        ],
    );
    svg(
        &plots.join("kv-throughput.svg"),
        &["requests per second (1/s)", "persistent, no offload"],
    );
    svg(
        &plots.join("kv-latency-cdf.svg"),
        &[
            "request latency CDF",
            "(µs)",
            "fraction of requests (quantile)",
        ],
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_echo_sweeps_sizes_and_writes_json_and_plots() {
    let dir = scratch("bench-echo");
    let file = dir.join("echo.json");
    let plots = dir.join("plots");
    let text = run(&[
        "bench",
        "echo",
        "--conns",
        "16",
        "--per-conn",
        "1",
        "--sizes",
        "64,256",
        "--seconds",
        "0.1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--servers",
        "nicemu,nicemu-quasi",
        "--json",
        file.to_str().unwrap(),
        "--plot-dir",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(text.matches("echo benchmark:").count(), 2, "{text}");
    // The goal is judged on host only, with host + NIC beside it.
    assert_eq!(text.matches("on host + NIC:").count(), 2, "{text}");
    assert!(text.contains("vs nicemu (host+NIC)"), "{text}");
    let j = json(&file);
    assert_eq!(j.get("bench").and_then(Json::as_str), Some("echo"));
    let sizes = j.get("sizes").and_then(Json::as_array).unwrap();
    assert_eq!(sizes.len(), 2);
    for (s, want) in sizes.iter().zip([64.0, 256.0]) {
        assert_eq!(s.get("size").and_then(Json::as_f64), Some(want));
        let windows = s.get("windows").and_then(Json::as_array).unwrap();
        assert_eq!(windows.len(), 2);
        for w in windows {
            assert!(w.get("host_ns_per_txn").and_then(Json::as_f64).is_some());
            assert!(w.get("nic_ns_per_txn").and_then(Json::as_f64).is_some());
            assert!(w
                .get("host_nic_ns_per_txn")
                .and_then(Json::as_f64)
                .is_some());
            assert!(w
                .get("link")
                .and_then(|l| l.get("to_host_packets"))
                .is_some());
        }
        // Both rows have a NIC part; both ratios are against nicemu's in the same round.
        let summary = s.get("summary").and_then(Json::as_array).unwrap();
        assert_eq!(summary.len(), 2);
        for row in summary {
            for key in [
                "host_ns_per_txn",
                "nic_ns_per_txn",
                "host_nic_ns_per_txn",
                "host_vs_nicemu",
                "host_nic_vs_nicemu",
            ] {
                assert!(
                    row.get(key).and_then(Json::as_f64).is_some(),
                    "{key}: {row}"
                );
            }
        }
    }
    svg(
        &plots.join("echo-host-ns-per-txn.svg"),
        &[
            "bench echo: host CPU per transaction",
            "message size (B)",
            "host CPU per transaction (ns)",
            "nicemu-quasi",
        ],
    );
    svg(
        &plots.join("echo-throughput.svg"),
        &["transactions per second (1/s)", "message size (B)"],
    );
    svg(
        &plots.join("echo-cpu-breakdown.svg"),
        &[
            "CPU per transaction by part",
            "CPU time per transaction (ns)",
            "NIC lcore",
            "nicemu-quasi 256B",
        ],
    );
    let _ = std::fs::remove_dir_all(dir);
}
