//! `nicemu bench proxy`'s unit tests.

use super::*;

#[test]
fn modes_parse() {
    assert_eq!(
        parse_modes("splice, relay,splice").unwrap(),
        vec![RelayMode::Splice, RelayMode::Relay]
    );
    assert!(parse_modes("").is_err());
    assert!(parse_modes("splice,kernel").is_err());
}

#[test]
fn bad_settings_are_errors() {
    let ok = ProxyBenchOpts::default();
    assert!(ok.validate().is_ok());
    for bad in [
        ProxyBenchOpts {
            conns: 0,
            ..ok.clone()
        },
        ProxyBenchOpts {
            sizes: vec![],
            ..ok.clone()
        },
        ProxyBenchOpts {
            sizes: vec![MAX_BODY + 1],
            ..ok.clone()
        },
        ProxyBenchOpts {
            seconds: f64::NAN,
            ..ok.clone()
        },
        ProxyBenchOpts {
            warmup_seconds: -1.0,
            ..ok.clone()
        },
        ProxyBenchOpts {
            backends: 0,
            ..ok.clone()
        },
        ProxyBenchOpts {
            per_conn: vec![],
            ..ok.clone()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

fn point(mode: RelayMode, per_conn: u64, round: u32, host_ns: f64) -> ProxyPoint {
    ProxyPoint {
        mode,
        size: 64,
        per_conn,
        round,
        transactions: 1000,
        connections: 10,
        wall_s: 1.0,
        host_stack_ns: host_ns / 2.0,
        host_app_ns: host_ns / 2.0,
        host_idle_ns: 0.0,
        nic_ns: 1000.0,
        nic_idle_ns: 0.0,
        on_cpu: 1.0,
        link: LinkPerTxn::default(),
        errors: 0,
        detail: "a \"quoted\"\nline".into(),
    }
}

#[test]
fn ratios_goals_json_and_plots() {
    let opts = ProxyBenchOpts {
        sizes: vec![64],
        rounds: 2,
        ..ProxyBenchOpts::default()
    };
    let mut points = Vec::new();
    for round in 0..2 {
        for (n, s, r) in [
            (1, 10e6, 15e6),
            (8, 2e6, 8e6),
            (128, 1e6, 8e6),
            (0, 0.0, 7e6),
        ] {
            points.push(point(RelayMode::Splice, n, round, s));
            points.push(point(RelayMode::Relay, n, round, r));
        }
    }
    let report = ProxyBenchReport {
        opts,
        tsc_hz: 1,
        points,
        request_len: 59,
        response_heads: vec![(64, 39)],
    };
    assert_eq!(report.host_ratio(64, 8), Some(4.0));
    assert_eq!(report.host_ratio(64, 0), Some(f64::INFINITY));
    // Host + NIC: every point's NIC lcore spent 1 ns per transaction.
    assert_eq!(report.host_nic_ratio(64, 8), Some(8001.0 / 2001.0));
    assert_eq!(report.host_nic_ratio(64, 0), Some(7001.0));
    let goals = report.goals();
    assert_eq!(goals.len(), 2);
    assert!(
        goals[0]
            .what
            .contains("(host only: 4.00x; host + NIC: 4.00x)"),
        "{goals:?}"
    );
    assert!(
        goals[1]
            .what
            .contains("host + NIC: 8: 4.00x, 128: 7.99x, persistent: 7001.00x"),
        "{goals:?}"
    );
    assert!(goals.iter().all(|g| g.met == Some(true)), "{goals:?}");
    // 10 connections per window: 1000 transactions at 10 µs busy each is 1 ms per
    // connection; none for persistent connections.
    let (t, st, app, _) = report.per_connection(RelayMode::Splice, 64, 1).unwrap();
    assert_eq!((t, st, app), (1e6, 5e5, 5e5));
    assert_eq!(report.per_connection(RelayMode::Relay, 64, 0), None);
    let json = report.to_json();
    assert!(json.contains("\"host_ns_relay_over_splice\": 4,"), "{json}");
    assert!(
        json.contains("\"host_nic_ns_relay_over_splice\": 3.999,"),
        "{json}"
    );
    assert!(json.contains("a \\\"quoted\\\"\\nline"));
    assert!(json.contains("\"host_ns_relay_over_splice\": null"));
    let text = report.to_string();
    assert!(text.contains("MET") && !text.contains("NOT MET"), "{text}");
    let dir = std::env::temp_dir().join(format!("nicemu-bench-proxy-{}", std::process::id()));
    let files = report.write_plots(&dir).unwrap();
    assert_eq!(files.len(), 3);
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        assert!(svg.contains("<svg"), "{}", f.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_is_valid_and_rounded() {
    let report = ProxyBenchReport {
        opts: ProxyBenchOpts::default(),
        tsc_hz: 1,
        points: Vec::new(),
        request_len: 0,
        response_heads: Vec::new(),
    };
    let v = crate::json::parse(&report.to_json()).unwrap();
    assert_eq!(v.get("benchmark").and_then(Json::as_str), Some("proxy"));
    assert_eq!(v.get("proxy_mode").and_then(Json::as_str), Some("tunnel"));
    assert_eq!(v.get("seconds").and_then(Json::as_f64), Some(1.0));
}
