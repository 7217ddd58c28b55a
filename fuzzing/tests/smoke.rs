//! Every fuzz target on its seeds and on deterministic mutations of them (stable Rust, part
//! of `make test`): a target that panics on inputs near its seeds fails here before a
//! fuzzer runs again. `make fuzz` runs the same targets under libFuzzer for real.

use std::time::{Duration, Instant};

use nicemu_fuzzing::mutate::{mutate, Rng};
use nicemu_fuzzing::{seeds, TARGETS};

/// Mutations per target, and the time after which a target stops early (a debug build on a
/// shared 2-core machine: the stateful targets take about a millisecond an input).
const MUTATIONS: usize = 3_000;
const BUDGET: Duration = Duration::from_secs(20);

fn smoke(name: &str) {
    let target = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no target {name}"));
    let seeds = seeds(name);
    assert!(!seeds.is_empty(), "{name} has no seeds");
    for s in &seeds {
        target(s);
    }
    let mut rng = Rng::new(0x5eed ^ name.len() as u64);
    let started = Instant::now();
    let mut ran = 0;
    for k in 0..MUTATIONS {
        let a = &seeds[k % seeds.len()];
        let b = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, a, b);
        let r = std::panic::catch_unwind(|| target(&input));
        if r.is_err() {
            panic!(
                "{name}: a finding on mutation {k}; input ({} bytes): {input:?}",
                input.len()
            );
        }
        ran += 1;
        if started.elapsed() > BUDGET {
            break;
        }
    }
    assert!(ran >= 100, "{name}: only {ran} mutations in {BUDGET:?}");
    println!(
        "{name}: {} seeds, {ran} mutations in {:?}",
        seeds.len(),
        started.elapsed()
    );
}

#[test]
fn every_target_has_a_smoke_test() {
    let here = include_str!("smoke.rs");
    for (name, _) in TARGETS {
        assert!(
            here.contains(&format!("fn {name}() {{")),
            "target {name} has no smoke test in this file"
        );
    }
}

#[test]
fn tcp_wire() {
    smoke("tcp_wire");
}

#[test]
fn checksum() {
    smoke("checksum");
}

#[test]
fn transport_headers() {
    smoke("transport_headers");
}

#[test]
fn control_msg() {
    smoke("control_msg");
}

#[test]
fn kv() {
    smoke("kv");
}

#[test]
fn http() {
    smoke("http");
}

#[test]
fn config() {
    smoke("config");
}

#[test]
fn nic() {
    smoke("nic");
}

#[test]
fn host_link() {
    smoke("host_link");
}

/// The `nic` seeds reach the depths the mutations start from: a connection accepted
/// through the SYN-cookie handshake, bytes echoed, the close handed to the NIC.
#[test]
fn nic_seeds_reach_the_echo_server_and_the_teardown_offload() {
    let first = &seeds("nic")[0];
    let run = nicemu_fuzzing::nic_run(first);
    assert!(run.accepted >= 1, "{run:?}");
    assert!(run.echoed >= 10, "{run:?}");
    assert!(run.torn_down >= 1, "{run:?}");
}

#[test]
fn ip_wire() {
    smoke("ip_wire");
}

#[test]
fn splice() {
    smoke("splice");
}

/// The `splice` seeds are translated in both directions (the checks after the translation
/// run), and the ones with a broken checksum are translated too.
#[test]
fn splice_seeds_are_translated() {
    let seeds = nicemu_fuzzing::seeds("splice");
    for s in &seeds {
        // Selector bit 1 (tuple not aimed) is clear in every seed.
        assert!(
            nicemu_fuzzing::splice_translates(s),
            "seed with selector {:#x} was refused",
            s[0]
        );
    }
}

#[test]
fn mtcp_conf() {
    smoke("mtcp_conf");
}
