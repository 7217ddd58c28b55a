//! The quick versions of `dcqcn-convergence`, `dcqcn-200` (Tonic §6.2.2) and `incast`
//! (nanoTransport §5.2) hold their checks.

use apps::experiment::{find, ExpOptions, ExpReport};

fn run(name: &str) -> ExpReport {
    let out = std::env::temp_dir().join(format!("nicemu-exp-{name}-{}", std::process::id()));
    let f = find(name).unwrap_or_else(|| panic!("{name} is registered"));
    let r = f(&ExpOptions {
        out: out.clone(),
        quick: true,
        seed: 1,
    })
    .unwrap();
    eprintln!("{}", r.markdown);
    for c in &r.checks {
        assert!(c.ok, "{name}: {}", c.what);
    }
    assert!(!r.checks.is_empty());
    assert!(r.files.iter().all(|p| p.exists()));
    assert!(r.data_segments > 0);
    let _ = std::fs::remove_dir_all(out);
    r
}

#[test]
fn dcqcn_convergence_quick() {
    let r = run("dcqcn-convergence");
    assert_eq!(r.checks.len(), 2);
}

/// The 0.5% bound on the spread, and that the spread is noise rather than a per-flow bias.
#[test]
fn dcqcn_200_quick() {
    let r = run("dcqcn-200");
    assert_eq!(r.checks.len(), 2);
}

#[test]
fn incast_quick() {
    let r = run("incast");
    assert_eq!(r.checks.len(), 3);
}

/// The default (paper-sized) versions, from a release build:
/// `cargo test --release -p apps --test experiments_dcqcn -- --ignored --nocapture`.
/// `dcqcn-200` runs 3 s of virtual time (about a minute of wall time): its spread is
/// DCQCN's per-flow noise, falling as 1/√T, and one second leaves it near 0.6%, above the
/// 0.5% bound.
#[test]
#[ignore]
fn full_versions() {
    for name in ["dcqcn-convergence", "dcqcn-200", "incast"] {
        let out = std::env::temp_dir().join(format!("nicemu-exp-full-{name}"));
        let t = std::time::Instant::now();
        let r = find(name).unwrap()(&ExpOptions {
            out: out.clone(),
            quick: false,
            seed: 1,
        })
        .unwrap();
        eprintln!(
            "{}\n{name}: {:.1} s wall, files in {}",
            r.markdown,
            t.elapsed().as_secs_f64(),
            out.display()
        );
        for c in &r.checks {
            assert!(c.ok, "{name}: {}", c.what);
        }
    }
}

/// This process's user + system CPU time in seconds (Linux `/proc/self/stat`).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// The testbench's speed on `configs/tonic/newreno-200.toml` (BENCHMARKS.md, "Testbench
/// speed"): `cargo test --release -p apps --test experiments_dcqcn -- --ignored testbench_speed --nocapture`.
#[test]
#[ignore]
fn testbench_speed() {
    use dataplane::tonic::testbench::{load_scenario, run_scenario};
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/tonic/newreno-200.toml");
    let s = load_scenario(p).unwrap();
    let (t, c) = (std::time::Instant::now(), cpu_seconds());
    let r = run_scenario(&s).unwrap();
    let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
    let segs: u64 = r.flows.iter().map(|f| f.transmitted).sum();
    eprintln!(
        "newreno-200: {segs} data segments, {} acks, {wall:.2} s wall, {cpu:.2} s CPU: {:.3} M segments per wall second, {:.3} M per CPU second",
        r.receiver_stats.acks,
        segs as f64 / wall / 1e6,
        segs as f64 / cpu / 1e6
    );
}
