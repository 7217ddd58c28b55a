//! The `nicemu` command line: [`Cli`] and its subcommands ([`Cmd`]). Each subcommand's
//! arguments and handler live in one module:
//!
//! | subcommands | module |
//! |---|---|
//! | `run`, `fwd`, `check`, `demo` | [`nic`] (and `topo.rs`, `demo.rs`) |
//! | `proxy` | `proxy_cmd.rs` |
//! | `echo`, `loadgen`, `kv` | `hostapps.rs` (on `procs.rs`) |
//! | `bench echo`, `kv`, `proxy`, `peers`, `tonic`, `wheel` | [`bench`] |
//! | `modules`, `testbench` | [`tonic`] |
//! | `experiment` | [`experiment`] |

use clap::{Parser, Subcommand};

pub mod bench;
pub mod experiment;
pub mod nic;
pub mod tonic;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "nicemu",
    version,
    about = "A DPDK-based userspace smart-NIC offload emulator (AccelTCP offloads, Tonic transports)",
    long_about = "nicemu runs poll-mode NIC lcores on DPDK ports (or an in-memory wire) that act as a \
                  smart NIC. Arguments after `--` are passed to DPDK's EAL, e.g. \
                  `nicemu fwd -c configs/fwd-null.toml -- --no-huge --no-pci`."
)]
pub struct Cli {
    /// Log filter (tracing EnvFilter syntax, e.g. `info`, `dataplane=debug`); RUST_LOG also works.
    #[arg(long, global = true, default_value = "warn")]
    pub log: String,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Bring the NIC up on the configured ports: ARP, ICMP echo, checksum and TSO for the
    /// host; runs until Ctrl-C or --duration, then prints a summary.
    Run(nic::RunArgs),
    /// Forwarding benchmark: port 0 <-> port 1 (2 <-> 3, ...) through the full
    /// rx -> parse -> classify -> tx path; prints Mpps per port and cycles per packet.
    Fwd(nic::FwdArgs),
    /// An HTTP/1.1 layer-7 load balancer on the host stack (AccelTCP's epproxy): reads each
    /// request head, picks a backend, forwards the head, then splices the two connections on
    /// the NIC (nsplice) or, with --no-splice, relays them on the host. Runs until Ctrl-C or
    /// --duration, then prints a summary. The configuration needs a `[proxy]` table.
    Proxy(crate::proxy_cmd::ProxyArgs),
    /// An echo server on the host stack (AccelTCP's setup and teardown offloads unless
    /// --no-offload); the summary counts transactions as bytes echoed / --size.
    Echo(crate::hostapps::EchoCmd),
    /// A load generator on the host stack: echo, HTTP GET or Redis SET+GET transactions
    /// over --conns connections, a progress line every second, then transactions/s, latency
    /// percentiles and errors by kind; exits non-zero when no transaction completed or any
    /// error happened.
    Loadgen(crate::hostapps::LoadgenCmd),
    /// A Redis-compatible (RESP2) key-value server on the host stack, with AccelTCP's setup
    /// and teardown offloads unless --no-offload.
    Kv(crate::hostapps::KvCmd),
    /// Check a configuration file (syntax, keys, values, cores) without running it.
    Check(nic::CheckArgs),
    /// Run the embedded default topology: a NIC between two peers on the in-memory wire,
    /// exercising ARP, ping, forwarding, malformed frames and host transmit; prints results.
    Demo(nic::DemoArgs),
    /// Benchmarks: `bench echo` compares the host cost of a 64-byte echo on nicemu, smoltcp
    /// and the Linux kernel; `bench kv` runs the key-value server with and without the
    /// offloads; `bench tonic` measures Tonic's segment scheduling decisions per
    /// second; `bench wheel` times the timer bitmap wheel.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// List the Tonic protocol modules: built in, and loaded from shared libraries (--plugin,
    /// or `[tonic] plugins` of a configuration), with their credit scheme and per-flow state.
    Modules(tonic::ModulesArgs),
    /// Run a Tonic scenario (configs/tonic/*.toml) in virtual time: a sender engine with the
    /// scenario's module, a receiver and a bottleneck link; prints per-flow results and, with
    /// --csv, writes per-flow traces (window or rate, sequence numbers, retransmissions).
    Testbench(tonic::TestbenchArgs),
    /// Run one of the papers' transport experiments in virtual time (Tonic §6.2 and more):
    /// writes CSV traces, SVG plots and report.md into --out, prints the checks, and exits
    /// non-zero if one failed. `--list` shows them.
    Experiment(experiment::ExperimentArgs),
}

/// Runs one subcommand.
pub fn run(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Run(a) => nic::run(&a),
        Cmd::Fwd(a) => nic::fwd(&a),
        Cmd::Check(a) => nic::check(&a),
        Cmd::Demo(a) => nic::demo(&a),
        Cmd::Proxy(a) => crate::proxy_cmd::run(&a),
        Cmd::Echo(a) => crate::hostapps::echo(&a),
        Cmd::Loadgen(a) => crate::hostapps::loadgen(&a),
        Cmd::Kv(a) => crate::hostapps::kv(&a),
        Cmd::Bench(c) => bench::run(c),
        Cmd::Modules(a) => tonic::modules(a),
        Cmd::Testbench(a) => tonic::testbench(&a),
        Cmd::Experiment(a) => experiment::run(a),
    }
}
