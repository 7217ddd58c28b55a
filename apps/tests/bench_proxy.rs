//! `nicemu bench proxy` in miniature (a smoke test, nothing here is timed): a tiny sweep of
//! both modes completes with zero errors, both modes report transactions, the splice mode
//! really splices (and the relay mode never does), and the report, JSON and plots come out.

use apps::bench::{proxy, ProxyBenchOpts, RelayMode};

#[test]
fn bench_proxy_tiny_sweep_has_no_errors() {
    let opts = ProxyBenchOpts {
        conns: 8,
        sizes: vec![64, 1500],
        per_conn: vec![1, 8, 0],
        seconds: 0.1,
        warmup_seconds: 0.0,
        ..ProxyBenchOpts::default()
    };
    let r = proxy(&opts).unwrap();
    assert_eq!(r.points.len(), 2 * 3 * 2);
    for p in &r.points {
        assert_eq!(p.errors, 0, "{:?}", p);
        assert!(p.transactions > 0, "{:?}", p);
        match p.mode {
            RelayMode::Splice => {
                assert!(!p.detail.contains("spliced 0 "), "{}", p.detail);
                assert!(p.detail.contains("relayed 0 "), "{}", p.detail);
            }
            RelayMode::Relay => {
                assert!(p.detail.contains("spliced 0 "), "{}", p.detail);
                assert!(!p.detail.contains("relayed 0 "), "{}", p.detail);
            }
        }
    }
    for mode in [RelayMode::Splice, RelayMode::Relay] {
        assert!(r.points.iter().any(|p| p.mode == mode));
    }
    let text = r.to_string();
    assert!(text.contains("goals:"), "{text}");
    // Host only and host + NIC side by side, in the table, the goals and the JSON.
    assert!(
        text.contains("h+N x") && text.contains("host+NIC ns"),
        "{text}"
    );
    assert!(text.contains("host + NIC: "), "{text}");
    for p in &r.points {
        assert!(p.host_nic_ns_per_txn() >= p.host_ns_per_txn(), "{p:?}");
    }
    let json = r.to_json();
    assert!(json.contains("\"benchmark\": \"proxy\""));
    assert!(json.contains("\"host_nic_ns_relay_over_splice\""), "{json}");
    let dir = std::env::temp_dir().join(format!("nicemu-bench-proxy-it-{}", std::process::id()));
    let files = r.write_plots(&dir).unwrap();
    assert_eq!(files.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}
