//! Tonic segment-scheduling throughput on one core with 1,024, 65,536 and 1,048,576 active
//! flows (see `dataplane::tonic::bench`; BENCHMARKS.md records the figures).
//!
//! ```text
//! cargo run --release -p dataplane --example tonic_bench [-- SECONDS [MODULE...]]
//! ```
//!
//! Defaults: 1 second per run, module `newreno`. Each flow count runs twice: the receiver
//! acking every segment (one incoming event per decision, like Tonic's hardware cycle), then
//! every second segment (delayed acks). Tonic's hardware: one decision per 10 ns (100 M/s)
//! for at most 2,048 flows. Goals: ≥ 20 M/s at 1,024 flows, ≥ 10 M/s at 1M flows.

use dataplane::tonic::bench::{bench_decisions_with, BenchOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args
        .next()
        .map(|s| s.parse().expect("SECONDS must be a number"))
        .unwrap_or(1.0);
    let mut modules: Vec<String> = args.collect();
    if modules.is_empty() {
        modules.push("newreno".to_string());
    }
    println!("Tonic scheduling decisions per second, one core, {seconds} s per run");
    println!("(a decision = generate + transmit, plus the ack it triggers and one periodic visit)");
    for m in &modules {
        for flows in [1 << 10, 1 << 16, 1 << 20] {
            for ack_every in [1, 2] {
                let opts = BenchOptions {
                    ack_every,
                    ..BenchOptions::default()
                };
                match bench_decisions_with(flows, seconds, m, opts) {
                    Ok(r) => println!("{r}"),
                    Err(e) => {
                        eprintln!("tonic_bench: {e}");
                        std::process::exit(2);
                    }
                }
            }
        }
    }
}
