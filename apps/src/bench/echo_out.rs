//! What `nicemu bench echo` writes besides its table: `--json` (every window and the
//! medians, per message size) and the SVG plots of `--plot-dir`: host CPU per transaction
//! and transactions per second across message sizes for each server (AccelTCP Table 3's rows,
//! Figure 11's sweep), and CPU per transaction split into host and NIC parts for each
//! configuration (in the spirit of Table 1 and Figure 14).

use std::path::{Path, PathBuf};

use super::kv::link_json;
use super::{median, EchoBenchReport, Measurement, Server};
use crate::json::Json;
use crate::plot::{LinePlot, Series, StackedBars};

/// The directory plots go to when none is given: `target/nicemu-bench/<bench>` when the
/// current directory has a `target/` (a checkout), else `nicemu-bench/<bench>`.
pub fn default_plot_dir(bench: &str) -> PathBuf {
    let base = if Path::new("target").is_dir() {
        PathBuf::from("target").join("nicemu-bench")
    } else {
        PathBuf::from("nicemu-bench")
    };
    base.join(bench)
}

fn measurement_json(m: &Measurement) -> Json {
    let t = m.transactions.max(1) as f64;
    Json::obj()
        .with("server", m.server.name())
        .with("round", m.round + 1)
        .with("transactions", m.transactions)
        .with("wall_s", m.wall_s)
        .with("txn_per_s", m.tps())
        .with("host_ns_per_txn", m.host_ns_per_txn())
        .with("host_idle_ns_per_txn", m.host_idle_ns.map(|v| v / t))
        .with("process_ns_per_txn", m.process_ns_per_txn())
        .with("nic_ns_per_txn", m.nic_ns_per_txn())
        .with("host_nic_ns_per_txn", m.host_nic_ns_per_txn())
        .with("link", m.link.as_ref().map_or(Json::Null, link_json))
        .with("note", m.note.clone())
}

/// `nicemu bench echo`'s results over a sweep of message sizes (one report per size) as
/// JSON.
pub fn echo_json(reports: &[EchoBenchReport]) -> Json {
    let Some(first) = reports.first() else {
        return Json::obj()
            .with("bench", "echo")
            .with("sizes", Json::Arr(vec![]));
    };
    let o = &first.opts;
    let sizes: Vec<Json> = reports
        .iter()
        .map(|r| {
            let summary: Vec<Json> = r
                .summary()
                .iter()
                .map(|s| {
                    Json::obj()
                        .with("server", s.server.name())
                        .with("txn_per_s", s.tps)
                        .with("host_ns_per_txn", s.host_ns_per_txn)
                        .with("process_ns_per_txn", s.process_ns_per_txn)
                        .with("nic_ns_per_txn", s.nic_ns_per_txn)
                        .with("host_nic_ns_per_txn", s.host_nic_ns_per_txn)
                        .with("host_vs_nicemu", s.vs_nicemu)
                        .with("process_vs_nicemu", s.process_vs_nicemu)
                        .with("host_nic_vs_nicemu", s.host_nic_vs_nicemu)
                        .with("process_vs_nicemu_host_nic", s.process_vs_nicemu_host_nic)
                })
                .collect();
            Json::obj()
                .with("size", r.opts.size)
                .with(
                    "skipped",
                    Json::Arr(
                        r.skipped
                            .iter()
                            .map(|(s, why)| {
                                Json::obj()
                                    .with("server", s.name())
                                    .with("reason", why.as_str())
                            })
                            .collect(),
                    ),
                )
                .with(
                    "windows",
                    Json::Arr(r.rounds.iter().map(measurement_json).collect()),
                )
                .with("summary", Json::Arr(summary))
        })
        .collect();
    Json::obj()
        .with("bench", "echo")
        .with("conns", o.conns)
        .with("per_conn", o.per_conn)
        .with("server_closes", o.server_closes)
        .with("seconds", o.seconds)
        .with("rounds", o.rounds)
        .with("warmup_seconds", o.warmup_seconds)
        .with("tsc_hz", first.tsc_hz)
        .with(
            "servers",
            o.servers.iter().map(|s| s.name()).collect::<Vec<_>>(),
        )
        .with("sizes", Json::Arr(sizes))
}

/// The median over rounds of `f` for server `s` in report `r`.
fn med(r: &EchoBenchReport, s: Server, f: &dyn Fn(&Measurement) -> Option<f64>) -> Option<f64> {
    median(
        r.rounds
            .iter()
            .filter(|m| m.server == s)
            .filter_map(f)
            .collect(),
    )
}

fn workload(reports: &[EchoBenchReport]) -> String {
    let o = &reports[0].opts;
    let kind = match o.per_conn {
        0 => "persistent".to_string(),
        1 if o.server_closes => "1 txn/conn, server closes".into(),
        1 => "1 txn/conn".into(),
        n => format!("{n} txn/conn"),
    };
    format!("{} connections, {kind}", o.conns)
}

/// Writes the echo plots for a sweep (one report per message size) into `dir` (created);
/// returns the files written.
pub fn echo_plots(reports: &[EchoBenchReport], dir: &Path) -> Result<Vec<PathBuf>, String> {
    if reports.is_empty() {
        return Err("no results to plot".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let servers = &reports[0].opts.servers;
    let what = workload(reports);
    let sweep = |f: &dyn Fn(&Measurement) -> Option<f64>| -> Vec<Series> {
        servers
            .iter()
            .map(|&s| {
                Series::new(
                    s.name(),
                    reports
                        .iter()
                        .filter_map(|r| Some((r.opts.size as f64, med(r, s, f)?)))
                        .collect(),
                )
                .with_markers()
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let mut files = Vec::new();
    let host = dir.join("echo-host-ns-per-txn.svg");
    LinePlot {
        title: format!("bench echo: host CPU per transaction ({what})"),
        x_label: "message size (B)".into(),
        y_label: "host CPU per transaction (ns)".into(),
        series: sweep(&|m| Some(m.host_ns_per_txn())),
        log_x: true,
        y_from_zero: true,
    }
    .write_svg(&host)
    .map_err(|e| e.to_string())?;
    files.push(host);
    let tps = dir.join("echo-throughput.svg");
    LinePlot {
        title: format!("bench echo: transactions per second ({what})"),
        x_label: "message size (B)".into(),
        y_label: "transactions per second (1/s)".into(),
        series: sweep(&|m| Some(m.tps())),
        log_x: true,
        y_from_zero: true,
    }
    .write_svg(&tps)
    .map_err(|e| e.to_string())?;
    files.push(tps);
    // CPU per transaction by part, one bar per (size, server).
    let mut categories = Vec::new();
    let mut parts: [Vec<f64>; 4] = Default::default();
    for r in reports {
        for &s in servers {
            if !r.rounds.iter().any(|m| m.server == s) {
                continue;
            }
            let per = |v: Option<f64>, m: &Measurement| v.map(|x| x / m.transactions.max(1) as f64);
            let total = med(r, s, &|m| Some(m.host_ns_per_txn())).unwrap_or(0.0);
            let idle = med(r, s, &|m| per(m.host_idle_ns, m)).unwrap_or(0.0);
            let process = med(r, s, &|m| m.process_ns_per_txn());
            let nic = med(r, s, &Measurement::nic_ns_per_txn).unwrap_or(0.0);
            // Kernel: the process (stack + app in syscalls) and the client core's softirq.
            let (busy, softirq) = match process {
                Some(p) => (p, (total - p).max(0.0)),
                None => ((total - idle).max(0.0), 0.0),
            };
            categories.push(format!("{} {}B", s.name(), r.opts.size));
            parts[0].push(busy);
            parts[1].push(idle);
            parts[2].push(softirq);
            parts[3].push(nic);
        }
    }
    let names = [
        "host: TCP stack + app (busy polls; kernel: server process)",
        "host: idle polls",
        "host: kernel softirq (request receive path)",
        "NIC: nicemu's NIC lcore, smoltcp-csum-offload's device checksums (not host cost)",
    ];
    let components = names
        .iter()
        .zip(parts)
        .filter(|(_, v)| v.iter().any(|&x| x > 0.0))
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let cpu = dir.join("echo-cpu-breakdown.svg");
    StackedBars {
        title: format!("bench echo: CPU per transaction by part ({what})"),
        y_label: "CPU time per transaction (ns)".into(),
        categories,
        components,
    }
    .write_svg(&cpu)
    .map_err(|e| e.to_string())?;
    files.push(cpu);
    Ok(files)
}
