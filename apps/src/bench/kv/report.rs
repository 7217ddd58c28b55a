//! `nicemu bench kv`'s report: the table, the ratios, JSON and plots.

use super::*;

impl KvBenchReport {
    pub(super) fn of(&self, row: u32, s: Server) -> impl Iterator<Item = &KvMeasurement> {
        self.rounds
            .iter()
            .filter(move |m| m.per_conn == row && m.server == s)
    }

    /// Medians per row and variant, rows and variants in the order given.
    pub fn summary(&self) -> Vec<KvSummary> {
        let mut out = Vec::new();
        for &row in &self.opts.rows {
            for &s in &self.opts.servers {
                if self.of(row, s).next().is_none() {
                    continue;
                }
                let med = |f: &dyn Fn(&KvMeasurement) -> f64| {
                    median(self.of(row, s).map(f).collect()).unwrap_or(0.0)
                };
                // Median over rounds of f(this variant) ÷ f(no offload) in the same round.
                let vs = |f: &dyn Fn(&KvMeasurement) -> f64| {
                    median(
                        self.of(row, s)
                            .filter_map(|m| {
                                let base =
                                    self.of(row, Server::Nicemu).find(|b| b.round == m.round)?;
                                Some(f(m) / f(base))
                            })
                            .collect(),
                    )
                };
                out.push(KvSummary {
                    per_conn: row,
                    server: s,
                    tps: med(&KvMeasurement::tps),
                    host_ns_per_req: med(&KvMeasurement::host_ns_per_req),
                    host_idle_ns_per_req: med(&|m| m.per_txn(m.host_idle_ns)),
                    nic_ns_per_req: med(&KvMeasurement::nic_ns_per_req),
                    to_host_frames: med(&|m| m.link.to_host_packets),
                    to_nic_frames: med(&|m| m.link.to_nic_packets),
                    p50_ns: med(&|m| m.latency_at(0.5) as f64),
                    p99_ns: med(&|m| m.latency_at(0.99) as f64),
                    host_nic_ns_per_req: med(&KvMeasurement::host_nic_ns_per_req),
                    vs_no_offload: vs(&KvMeasurement::host_ns_per_req),
                    host_nic_vs_no_offload: vs(&KvMeasurement::host_nic_ns_per_req),
                    errors: self.of(row, s).map(|m| m.error_count).sum(),
                });
            }
        }
        out
    }

    /// The report as JSON: settings, every window and the summary.
    pub fn json(&self) -> Json {
        let o = &self.opts;
        let rounds: Vec<Json> = self
            .rounds
            .iter()
            .map(|m| {
                Json::obj()
                    .with("row", row_name(m.per_conn))
                    .with("per_conn", m.per_conn)
                    .with("server", m.server.name())
                    .with("round", m.round + 1)
                    .with("transactions", m.transactions)
                    .with("wall_s", m.wall_s)
                    .with("txn_per_s", m.tps())
                    .with("host_ns_per_req", m.host_ns_per_req())
                    .with("host_idle_ns_per_req", m.per_txn(m.host_idle_ns))
                    .with("nic_ns_per_req", m.nic_ns_per_req())
                    .with("host_nic_ns_per_req", m.host_nic_ns_per_req())
                    .with("link", link_json(&m.link))
                    .with(
                        "latency_ns",
                        Json::Arr(
                            m.latency
                                .iter()
                                .map(|&(q, v)| Json::obj().with("quantile", q).with("ns", v))
                                .collect(),
                        ),
                    )
                    .with("errors", m.error_count)
                    .with("errors_by_kind", m.errors.as_str())
                    .with("note", m.note.as_str())
            })
            .collect();
        let summary: Vec<Json> = self
            .summary()
            .iter()
            .map(|s| {
                Json::obj()
                    .with("row", row_name(s.per_conn))
                    .with("per_conn", s.per_conn)
                    .with("server", s.server.name())
                    .with("txn_per_s", s.tps)
                    .with("host_ns_per_req", s.host_ns_per_req)
                    .with("host_idle_ns_per_req", s.host_idle_ns_per_req)
                    .with("nic_ns_per_req", s.nic_ns_per_req)
                    .with("host_nic_ns_per_req", s.host_nic_ns_per_req)
                    .with("link_frames_to_host_per_req", s.to_host_frames)
                    .with("link_frames_to_nic_per_req", s.to_nic_frames)
                    .with("latency_p50_ns", s.p50_ns)
                    .with("latency_p99_ns", s.p99_ns)
                    .with("host_vs_no_offload", s.vs_no_offload)
                    .with("host_nic_vs_no_offload", s.host_nic_vs_no_offload)
                    .with("errors", s.errors)
            })
            .collect();
        Json::obj()
            .with("bench", "kv")
            .with(
                "workload",
                "Redis SET/GET alternating per connection (RESP2), every reply checked",
            )
            .with("conns", o.conns)
            .with("value_size", o.size)
            .with("seconds", o.seconds)
            .with("rounds", o.rounds)
            .with("warmup_seconds", o.warmup_seconds)
            .with("tsc_hz", self.tsc_hz)
            .with(
                "servers",
                o.servers.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .with("per_conn_rows", o.rows.clone())
            .with("windows", Json::Arr(rounds))
            .with("summary", Json::Arr(summary))
    }

    /// Writes the plots into `dir` (created): the server's CPU per request by part, requests
    /// per second, and the latency CDFs. Returns the files written.
    pub fn plots(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let sum = self.summary();
        let cat = |s: &KvSummary| format!("{}, {}", row_name(s.per_conn), short(s.server));
        let categories: Vec<String> = sum.iter().map(cat).collect();
        let what = format!(
            "{} connections, {}-byte values",
            self.opts.conns, self.opts.size
        );
        let mut files = Vec::new();
        let cpu = dir.join("kv-cpu-per-request.svg");
        StackedBars {
            title: format!("bench kv: server CPU per request by part ({what})"),
            y_label: "CPU time per request (ns)".into(),
            categories: categories.clone(),
            components: vec![
                (
                    "server host: TCP stack + KV app (busy polls)".into(),
                    sum.iter()
                        .map(|s| s.host_ns_per_req - s.host_idle_ns_per_req)
                        .collect(),
                ),
                (
                    "server host: idle polls".into(),
                    sum.iter().map(|s| s.host_idle_ns_per_req).collect(),
                ),
                (
                    "server NIC lcore (emulated NIC)".into(),
                    sum.iter().map(|s| s.nic_ns_per_req).collect(),
                ),
            ],
        }
        .write_svg(&cpu)
        .map_err(|e| e.to_string())?;
        files.push(cpu);
        let tps = dir.join("kv-throughput.svg");
        StackedBars {
            title: format!("bench kv: requests per second, whole single-core loop ({what})"),
            y_label: "requests per second (1/s)".into(),
            categories,
            components: vec![(
                "requests/s (median over rounds)".into(),
                sum.iter().map(|s| s.tps).collect(),
            )],
        }
        .write_svg(&tps)
        .map_err(|e| e.to_string())?;
        files.push(tps);
        // The latency CDF of each variant's last round.
        let mut series = Vec::new();
        for s in &sum {
            if let Some(m) = self.of(s.per_conn, s.server).last() {
                series.push(Series::new(
                    cat(s),
                    m.latency
                        .iter()
                        .map(|&(q, v)| (v as f64 / 1e3, q))
                        .collect(),
                ));
            }
        }
        let lat = dir.join("kv-latency-cdf.svg");
        LinePlot {
            title: format!("bench kv: request latency CDF, last round ({what})"),
            x_label: "latency, request written to reply checked (µs)".into(),
            y_label: "fraction of requests (quantile)".into(),
            series,
            log_x: true,
            y_from_zero: true,
        }
        .write_svg(&lat)
        .map_err(|e| e.to_string())?;
        files.push(lat);
        Ok(files)
    }
}

/// A short variant name for plot labels.
fn short(s: Server) -> &'static str {
    match s {
        Server::Nicemu => "no offload",
        Server::NicemuSetup => "+setup",
        Server::NicemuOffload => "+teardown",
        Server::NicemuQuasi => "+quasi-TCB",
        Server::Smoltcp => "smoltcp",
        Server::SmoltcpCsumOffload => "smoltcp, checksum offload",
        Server::Kernel => "kernel",
    }
}

pub(in crate::bench) fn link_json(l: &LinkPerTxn) -> Json {
    Json::obj()
        .with("to_host_packets", l.to_host_packets)
        .with("to_host_bytes", l.to_host_bytes)
        .with("to_nic_packets", l.to_nic_packets)
        .with("to_nic_bytes", l.to_nic_bytes)
        .with("dma_copies", l.dma_copies)
}

impl fmt::Display for KvBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        writeln!(
            f,
            "kv benchmark: KvServer (RESP2) and a Redis load generator (SET/GET alternating, \
             {}-byte values, replies checked) on the in-memory wire, {} connections in \
             flight, {} round(s) of {} s per variant and row (order rotates), TSC {:.3} GHz",
            o.size,
            o.conns,
            o.rounds,
            o.seconds,
            self.tsc_hz as f64 / 1e9
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<11} {:<6} {:<15} {:>10} {:>10} {:>9} {:>11} {:>9} {:>8} {:>8}  detail",
            "row",
            "round",
            "server",
            "req/s",
            "host ns",
            "NIC ns",
            "host+NIC ns",
            "frames",
            "p50 us",
            "p99 us"
        )?;
        for m in &self.rounds {
            writeln!(
                f,
                "{:<11} {:<6} {:<15} {:>10.0} {:>10.0} {:>9.0} {:>11.0} {:>9.2} {:>8.1} {:>8.1}  errors {}; {}",
                row_name(m.per_conn),
                m.round + 1,
                m.server.name(),
                m.tps(),
                m.host_ns_per_req(),
                m.nic_ns_per_req(),
                m.host_nic_ns_per_req(),
                m.link_frames(),
                m.latency_at(0.5) as f64 / 1e3,
                m.latency_at(0.99) as f64 / 1e3,
                m.errors,
                m.note
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "summary (medians over rounds; host = server host ns per request; host+NIC = the \
             same plus the server's NIC lcore; vs = ÷ the no-offload variant's in the same \
             round, host ÷ host and host+NIC ÷ host+NIC; frames = PCIe link frames per \
             request, NIC->host + host->NIC):"
        )?;
        writeln!(
            f,
            "{:<11} {:<15} {:>10} {:>10} {:>8} {:>9} {:>11} {:>12} {:>12} {:>8} {:>8} {:>7}",
            "row",
            "server",
            "req/s",
            "host ns",
            "vs",
            "NIC ns",
            "host+NIC ns",
            "vs host+NIC",
            "frames",
            "p50 us",
            "p99 us",
            "errors"
        )?;
        let x = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}x"));
        for s in self.summary() {
            writeln!(
                f,
                "{:<11} {:<15} {:>10.0} {:>10.0} {:>8} {:>9.0} {:>11.0} {:>12} {:>12} {:>8.1} {:>8.1} {:>7}",
                row_name(s.per_conn),
                s.server.name(),
                s.tps,
                s.host_ns_per_req,
                x(s.vs_no_offload),
                s.nic_ns_per_req,
                s.host_nic_ns_per_req,
                x(s.host_nic_vs_no_offload),
                format!("{:.2}+{:.2}", s.to_host_frames, s.to_nic_frames),
                s.p50_ns / 1e3,
                s.p99_ns / 1e3,
                s.errors
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "host ns: TSC time inside the server's KvServer::step (epoll_wait runs the stack: \
             link rx, TCP, timers, link tx; then RESP parsing, the store, replies), idle polls \
             included, scaled by the thread's on-CPU share; NIC ns: the server's NIC lcore \
             (parse, checksums, ARP, the link, the offload engines), measured the same way; \
             host+NIC: both. The host-only ratio is AccelTCP's metric (§6.2: host cycles \
             saved); the host+NIC one shows what moved to the NIC. req/s is the whole \
             single-threaded loop (client, both NICs, server)."
        )?;
        Ok(())
    }
}
