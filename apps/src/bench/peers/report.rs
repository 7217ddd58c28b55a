//! What `bench peers` prints and writes: the table of every run with the ratio to the
//! reference in the same round, the medians over rounds, the JSON and the SVG plots.

use std::fmt;
use std::path::{Path, PathBuf};

use super::super::median;
use super::{PeerRow, PeersReport, Workload};
use crate::json::Json;
use crate::plot::StackedBars;

/// A latency in milliseconds for the table (`-` when the tool gives none).
pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.3}"))
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |x| format!("{x:.2}x"))
}

/// Medians over rounds of one server in one case.
#[derive(Clone, Debug)]
pub struct PeerSummary {
    /// The workload.
    pub workload: Workload,
    /// The case.
    pub case: String,
    /// The server.
    pub server: String,
    /// Requests per second.
    pub rps: f64,
    /// Latency p50, ms.
    pub p50_ms: Option<f64>,
    /// Latency p99, ms.
    pub p99_ms: Option<f64>,
    /// Latency p99.9, ms (nicemu loadgen only).
    pub p999_ms: Option<f64>,
    /// Mean latency, ms.
    pub avg_ms: Option<f64>,
    /// Server-side CPU seconds per second of run.
    pub server_cpu: f64,
    /// Client CPU seconds per second of run.
    pub client_cpu: f64,
    /// Softirq CPU seconds per second of run.
    pub softirq: f64,
    /// All CPU per request, µs.
    pub cpu_us_per_req: f64,
    /// Median over rounds of this server's req/s ÷ the reference's in the same round.
    pub vs_reference: Option<f64>,
    /// Errors over all rounds.
    pub errors: u64,
}

impl PeersReport {
    /// Row `r`'s req/s ÷ its workload's reference server's, same case and round (nicemu
    /// rows with throughput only).
    pub fn ratio(&self, r: &PeerRow) -> Option<f64> {
        if !r.nicemu || r.latency_only {
            return None;
        }
        let base = self.rows.iter().find(|b| {
            b.workload == r.workload
                && b.case == r.case
                && b.round == r.round
                && b.server == r.workload.reference()
        })?;
        Some(r.result.rps / base.result.rps.max(1e-9))
    }

    /// The (workload, case, server) triples in the order first run, servers of one case
    /// together.
    fn keys(&self) -> Vec<(Workload, String, String)> {
        let mut cases: Vec<(Workload, String)> = Vec::new();
        let mut servers: Vec<(Workload, String)> = Vec::new();
        for r in &self.rows {
            if !cases.contains(&(r.workload, r.case.clone())) {
                cases.push((r.workload, r.case.clone()));
            }
            if !servers.contains(&(r.workload, r.server.clone())) {
                servers.push((r.workload, r.server.clone()));
            }
        }
        let mut out = Vec::new();
        for (w, c) in cases {
            for (sw, s) in &servers {
                if *sw == w {
                    out.push((w, c.clone(), s.clone()));
                }
            }
        }
        out
    }

    /// Medians over rounds per workload, case and server.
    pub fn summary(&self) -> Vec<PeerSummary> {
        let mut out = Vec::new();
        for (w, case, server) in self.keys() {
            let rows: Vec<&PeerRow> = self
                .rows
                .iter()
                .filter(|r| r.workload == w && r.case == case && r.server == server)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let med = |f: &dyn Fn(&PeerRow) -> Option<f64>| {
                median(rows.iter().filter_map(|r| f(r)).collect())
            };
            let per_s = |x: f64, r: &PeerRow| Some(x / r.wall_s.max(1e-9));
            out.push(PeerSummary {
                workload: w,
                case: case.clone(),
                server: server.clone(),
                rps: med(&|r| Some(r.result.rps)).unwrap_or(0.0),
                p50_ms: med(&|r| r.result.p50_ms),
                p99_ms: med(&|r| r.result.p99_ms),
                p999_ms: med(&|r| r.result.p999_ms),
                avg_ms: med(&|r| r.result.avg_ms),
                server_cpu: med(&|r| per_s(r.server_cpu_s(), r)).unwrap_or(0.0),
                client_cpu: med(&|r| per_s(r.client_cpu_s(), r)).unwrap_or(0.0),
                softirq: med(&|r| per_s(r.softirq_s, r)).unwrap_or(0.0),
                cpu_us_per_req: med(&|r| Some(r.cpu_us_per_req())).unwrap_or(0.0),
                vs_reference: med(&|r| self.ratio(r)),
                errors: rows.iter().map(|r| r.result.errors).sum(),
            });
        }
        out
    }

    /// The report as JSON: settings, every run and the medians.
    pub fn json(&self) -> Json {
        let o = &self.opts;
        let runs: Vec<Json> = self
            .rows
            .iter()
            .map(|r| {
                let cpu: Vec<Json> = r
                    .cpu
                    .iter()
                    .map(|c| {
                        Json::obj()
                            .with("process", c.name.as_str())
                            .with("server_side", c.server_side)
                            .with("cpu_s", c.seconds)
                    })
                    .collect();
                Json::obj()
                    .with("workload", r.workload.name())
                    .with("case", r.case.as_str())
                    .with("server", r.server.as_str())
                    .with("nicemu", r.nicemu)
                    .with("latency_only", r.latency_only)
                    .with("round", r.round + 1)
                    .with("req_per_s", r.result.rps)
                    .with("requests", r.requests())
                    .with("wall_s", r.wall_s)
                    .with("latency_p50_ms", r.result.p50_ms)
                    .with("latency_p99_ms", r.result.p99_ms)
                    .with("latency_p999_ms", r.result.p999_ms)
                    .with("latency_avg_ms", r.result.avg_ms)
                    .with("errors", r.result.errors)
                    .with("errors_by_kind", r.result.error_text.as_str())
                    .with("cpu", Json::Arr(cpu))
                    .with("server_cpu_s", r.server_cpu_s())
                    .with("client_cpu_s", r.client_cpu_s())
                    .with("softirq_s", r.softirq_s)
                    .with("cpu_us_per_req", r.cpu_us_per_req())
                    .with("vs_reference", self.ratio(r))
                    .with("server_errors_at_exit", r.server_note.as_str())
            })
            .collect();
        let summary: Vec<Json> = self
            .summary()
            .iter()
            .map(|s| {
                Json::obj()
                    .with("workload", s.workload.name())
                    .with("case", s.case.as_str())
                    .with("server", s.server.as_str())
                    .with("req_per_s", s.rps)
                    .with("latency_p50_ms", s.p50_ms)
                    .with("latency_p99_ms", s.p99_ms)
                    .with("latency_p999_ms", s.p999_ms)
                    .with("latency_avg_ms", s.avg_ms)
                    .with("server_cpu_per_s", s.server_cpu)
                    .with("client_cpu_per_s", s.client_cpu)
                    .with("softirq_per_s", s.softirq)
                    .with("cpu_us_per_req", s.cpu_us_per_req)
                    .with("vs_reference", s.vs_reference)
                    .with("errors", s.errors)
            })
            .collect();
        Json::obj()
            .with("bench", "peers")
            .with(
                "workloads",
                o.only.iter().map(|w| w.name()).collect::<Vec<_>>(),
            )
            .with("rounds", o.rounds)
            .with("seconds", o.seconds)
            .with("requests", o.requests)
            .with("conns", o.conns)
            .with("runs", Json::Arr(runs))
            .with("summary", Json::Arr(summary))
    }

    /// Writes two plots per workload into `dir` (created): requests per second and CPU per
    /// request by part, medians over rounds. Returns the files written.
    pub fn plots(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let sum = self.summary();
        let mut files = Vec::new();
        for &w in &self.opts.only {
            let s: Vec<&PeerSummary> = sum
                .iter()
                .filter(|s| s.workload == w && !s.case.contains("--latency"))
                .collect();
            if s.is_empty() {
                continue;
            }
            let categories: Vec<String> = s
                .iter()
                .map(|s| format!("{}, {}", s.case, s.server))
                .collect();
            let tps = dir.join(format!("peers-{}-throughput.svg", w.name()));
            StackedBars {
                title: format!("bench peers {}: requests per second (median)", w.name()),
                y_label: "requests per second (1/s)".into(),
                categories: categories.clone(),
                components: vec![("req/s".into(), s.iter().map(|s| s.rps).collect())],
            }
            .write_svg(&tps)
            .map_err(|e| e.to_string())?;
            files.push(tps);
            let cpu = dir.join(format!("peers-{}-cpu-per-request.svg", w.name()));
            let part = |f: &dyn Fn(&PeerSummary) -> f64| -> Vec<f64> {
                s.iter().map(|x| f(x) * 1e6 / x.rps.max(1e-9)).collect()
            };
            StackedBars {
                title: format!("bench peers {}: CPU per request by part (median)", w.name()),
                y_label: "CPU time per request (µs)".into(),
                categories,
                components: vec![
                    ("server processes".into(), part(&|x| x.server_cpu)),
                    ("client".into(), part(&|x| x.client_cpu)),
                    ("softirq (all CPUs)".into(), part(&|x| x.softirq)),
                ],
            }
            .write_svg(&cpu)
            .map_err(|e| e.to_string())?;
            files.push(cpu);
        }
        Ok(files)
    }
}

impl fmt::Display for PeersReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        writeln!(
            f,
            "bench peers: {} round(s), {} client connections, redis-benchmark -n {}, wrk and \
             loadgen {} s",
            o.rounds, o.conns, o.requests, o.seconds
        )?;
        let head = format!(
            "{:<5} {:<16} {:<13} {:>5} {:>10} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7}",
            "work", "case", "server", "round", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "avg ms", "errs",
            "srv s", "cli s", "irq s", "cpu us/r", "vs ref"
        );
        writeln!(f, "\nevery run (CPU seconds over the run: server-side processes, client, softirq of all CPUs):")?;
        writeln!(f, "{head}")?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<5} {:<16} {:<13} {:>5} {:>10.0} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7.2} {:>7.2} {:>7.2} {:>8.1} {:>7}",
                r.workload.name(),
                r.case,
                r.server,
                r.round + 1,
                r.result.rps,
                ms(r.result.p50_ms),
                ms(r.result.p99_ms),
                ms(r.result.p999_ms),
                ms(r.result.avg_ms),
                r.result.errors,
                r.server_cpu_s(),
                r.client_cpu_s(),
                r.softirq_s,
                r.cpu_us_per_req(),
                ratio_text(self.ratio(r))
            )?;
        }
        writeln!(
            f,
            "\nmedians over rounds (CPU as cores busy: CPU seconds per second of run; vs ref: \
             median of the per-round ratios to redis-server, haproxy, kernel-epoll):"
        )?;
        writeln!(
            f,
            "{:<5} {:<16} {:<13} {:>10} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7}",
            "work",
            "case",
            "server",
            "req/s",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "avg ms",
            "errs",
            "srv",
            "cli",
            "irq",
            "cpu us/r",
            "vs ref"
        )?;
        for s in self.summary() {
            writeln!(
                f,
                "{:<5} {:<16} {:<13} {:>10.0} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7.2} {:>7.2} {:>7.2} {:>8.1} {:>7}",
                s.workload.name(),
                s.case,
                s.server,
                s.rps,
                ms(s.p50_ms),
                ms(s.p99_ms),
                ms(s.p999_ms),
                ms(s.avg_ms),
                s.errors,
                s.server_cpu,
                s.client_cpu,
                s.softirq,
                s.cpu_us_per_req,
                ratio_text(s.vs_reference)
            )?;
        }
        writeln!(
            f,
            "\nreq/s, p50 and p99 are the clients' own figures (redis-benchmark --csv, wrk \
             --latency, nicemu loadgen); 'PING --latency' is redis-cli --latency (a PING every \
             10 ms: req/s is the sampling rate, avg its mean latency)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClientResult, PeersOpts, ProcCpu};
    use super::*;

    fn row(server: &str, nicemu: bool, round: u32, rps: f64) -> PeerRow {
        PeerRow {
            workload: Workload::Kv,
            case: "SET".into(),
            server: server.into(),
            nicemu,
            latency_only: false,
            round,
            result: ClientResult {
                rps,
                requests: 1000,
                p50_ms: Some(1.0),
                ..ClientResult::default()
            },
            wall_s: 2.0,
            cpu: vec![
                ProcCpu {
                    name: "srv".into(),
                    server_side: true,
                    seconds: 0.5,
                },
                ProcCpu {
                    name: "cli".into(),
                    server_side: false,
                    seconds: 0.25,
                },
            ],
            softirq_s: 0.25,
            server_note: String::new(),
        }
    }

    #[test]
    fn ratios_are_per_round_and_summaries_medians() {
        let r = PeersReport {
            opts: PeersOpts {
                only: vec![Workload::Kv],
                ..PeersOpts::default()
            },
            rows: vec![
                row("nicemu", true, 0, 1000.0),
                row("redis-server", false, 0, 4000.0),
                row("redis-server", false, 1, 2000.0),
                row("nicemu", true, 1, 1000.0),
            ],
        };
        assert_eq!(r.ratio(&r.rows[0]), Some(0.25));
        assert_eq!(r.ratio(&r.rows[1]), None);
        assert_eq!(r.ratio(&r.rows[3]), Some(0.5));
        let s = r.summary();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].server, "nicemu");
        assert_eq!(s[0].vs_reference, Some(0.375));
        assert_eq!(s[1].rps, 3000.0);
        // (0.5 + 0.25 + 0.25) s over 1000 requests.
        assert!((s[0].cpu_us_per_req - 1000.0).abs() < 1e-9);
        assert_eq!(s[0].server_cpu, 0.25);
        let text = r.to_string();
        assert!(text.contains("0.25x") && text.contains("0.38x"), "{text}");
        let j = crate::json::parse(&r.json().pretty()).unwrap();
        assert_eq!(
            j.get("runs").and_then(Json::as_array).map(<[Json]>::len),
            Some(4)
        );
        let dir = std::env::temp_dir().join(format!("nicemu-peers-plots-{}", std::process::id()));
        let files = r.plots(&dir).unwrap();
        assert_eq!(files.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
