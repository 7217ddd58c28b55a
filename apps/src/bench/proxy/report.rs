//! `nicemu bench proxy`'s report: the table, the ratios against AccelTCP Table 2, the
//! goals, JSON and plots.

use super::*;

pub(super) fn per_conn_label(n: u64) -> String {
    if n == 0 {
        "persistent".into()
    } else {
        n.to_string()
    }
}

pub(super) fn per_conn_x(n: u64) -> f64 {
    if n == 0 {
        PERSISTENT_X
    } else {
        n as f64
    }
}

pub(super) fn ratio_text(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}x"),
        Some(_) => "inf".into(),
        None => "-".into(),
    }
}

impl ProxyBenchReport {
    fn of(&self, mode: RelayMode, size: usize, per_conn: u64) -> impl Iterator<Item = &ProxyPoint> {
        self.points
            .iter()
            .filter(move |p| p.mode == mode && p.size == size && p.per_conn == per_conn)
    }

    /// Median over rounds of `f` for one configuration and mode.
    pub fn median_of(
        &self,
        mode: RelayMode,
        size: usize,
        per_conn: u64,
        f: impl Fn(&ProxyPoint) -> f64,
    ) -> Option<f64> {
        median(self.of(mode, size, per_conn).map(f).collect())
    }

    /// Median over rounds of relay's `f` ÷ splice's `f` in the same round (infinite when
    /// the splice's is zero).
    pub fn ratio(&self, size: usize, per_conn: u64, f: impl Fn(&ProxyPoint) -> f64) -> Option<f64> {
        let v: Vec<f64> = self
            .of(RelayMode::Relay, size, per_conn)
            .filter_map(|r| {
                let s = self
                    .of(RelayMode::Splice, size, per_conn)
                    .find(|s| s.round == r.round)?;
                let (a, b) = (f(r), f(s));
                Some(if b > 0.0 { a / b } else { f64::INFINITY })
            })
            .collect();
        median(v)
    }

    /// The host-cost ratio relay ÷ splice for one configuration.
    pub fn host_ratio(&self, size: usize, per_conn: u64) -> Option<f64> {
        self.ratio(size, per_conn, ProxyPoint::host_ns_per_txn)
    }

    /// The ratio relay ÷ splice of host + NIC lcore time per transaction (the NIC's work
    /// counted with the host's) for one configuration.
    pub fn host_nic_ratio(&self, size: usize, per_conn: u64) -> Option<f64> {
        self.ratio(size, per_conn, ProxyPoint::host_nic_ns_per_txn)
    }

    /// The goals of BENCHMARKS.md: host relay costs at least 3x the splice per transaction
    /// at 8 transactions per connection, and more as connections get longer (128, then
    /// persistent). Judged on the host only (AccelTCP's metric, Table 2: host CPU); each
    /// goal's text gives the host + NIC ratios beside.
    pub fn goals(&self) -> Vec<Goal> {
        let mut out = Vec::new();
        for &size in &self.opts.sizes {
            let r8 = self.host_ratio(size, 8);
            out.push(Goal {
                what: format!(
                    "{size} B: host relay >= 3x splice per transaction at 8 transactions per \
                     connection (host only: {}; host + NIC: {})",
                    ratio_text(r8),
                    ratio_text(self.host_nic_ratio(size, 8))
                ),
                met: r8.map(|r| r >= 3.0),
            });
            let chain = |f: &dyn Fn(u64) -> Option<f64>| -> Vec<(u64, f64)> {
                [8, 128, 0]
                    .into_iter()
                    .filter_map(|n| Some((n, f(n)?)))
                    .collect()
            };
            let text = |c: &[(u64, f64)]| -> String {
                c.iter()
                    .map(|(n, r)| format!("{}: {}", per_conn_label(*n), ratio_text(Some(*r))))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let host = chain(&|n| self.host_ratio(size, n));
            let host_nic = chain(&|n| self.host_nic_ratio(size, n));
            out.push(Goal {
                what: format!(
                    "{size} B: the ratio grows as connections get longer (host only: {}; \
                     host + NIC: {})",
                    text(&host),
                    text(&host_nic)
                ),
                met: (host.len() >= 2).then(|| host.windows(2).all(|w| w[1].1 > w[0].1)),
            });
        }
        out
    }

    /// Medians over rounds of the proxy host's busy time per client connection opened in
    /// the window, as (total, stack, proxy) nanoseconds, and of the PCIe frames per
    /// connection (both directions): where the per-connection work goes. None for
    /// persistent connections (none opened in the window) or a missing point.
    pub fn per_connection(
        &self,
        mode: RelayMode,
        size: usize,
        per_conn: u64,
    ) -> Option<(f64, f64, f64, f64)> {
        if per_conn == 0 {
            return None;
        }
        let per = |f: &dyn Fn(&ProxyPoint) -> f64| {
            median(
                self.of(mode, size, per_conn)
                    .filter(|p| p.connections > 0)
                    .map(|p| f(p) / p.connections as f64)
                    .collect(),
            )
        };
        Some((
            per(&|p| p.host_stack_ns + p.host_app_ns)?,
            per(&|p| p.host_stack_ns)?,
            per(&|p| p.host_app_ns)?,
            per(&|p| p.frames_per_txn() * p.transactions as f64)?,
        ))
    }

    /// The report as JSON (settings, every window, the ratios and the goals).
    pub fn to_json(&self) -> String {
        let o = &self.opts;
        // Three decimals are plenty for nanoseconds and ratios; not finite: null.
        let r3 = |x: f64| Json::Num((x * 1000.0).round() / 1000.0);
        let opt = |r: Option<f64>| r.map_or(Json::Null, r3);
        let points: Vec<Json> = self
            .points
            .iter()
            .map(|p| {
                let l = &p.link;
                Json::obj()
                    .with("mode", p.mode.name())
                    .with("size", p.size)
                    .with("per_conn", p.per_conn)
                    .with("round", p.round)
                    .with("transactions", p.transactions)
                    .with("connections", p.connections)
                    .with("wall_s", r3(p.wall_s))
                    .with("txn_per_s", r3(p.tps()))
                    .with("host_ns_per_txn", r3(p.host_ns_per_txn()))
                    .with("host_stack_ns_per_txn", r3(p.per_txn(p.host_stack_ns)))
                    .with("host_app_ns_per_txn", r3(p.per_txn(p.host_app_ns)))
                    .with("host_idle_ns_per_txn", r3(p.per_txn(p.host_idle_ns)))
                    .with("host_all_ns_per_txn", r3(p.host_all_ns_per_txn()))
                    .with("nic_ns_per_txn", r3(p.nic_ns_per_txn()))
                    .with("host_nic_ns_per_txn", r3(p.host_nic_ns_per_txn()))
                    .with("nic_idle_ns_per_txn", r3(p.per_txn(p.nic_idle_ns)))
                    .with("host_ns_per_conn", opt(p.host_ns_per_conn()))
                    .with("on_cpu", r3(p.on_cpu))
                    .with("pcie_to_host_packets_per_txn", r3(l.to_host_packets))
                    .with("pcie_to_host_bytes_per_txn", r3(l.to_host_bytes))
                    .with("pcie_to_nic_packets_per_txn", r3(l.to_nic_packets))
                    .with("pcie_to_nic_bytes_per_txn", r3(l.to_nic_bytes))
                    .with("dma_copies_per_txn", r3(l.dma_copies))
                    .with("errors", p.errors)
                    .with("detail", p.detail.as_str())
            })
            .collect();
        let mut ratios = Vec::new();
        for &size in &o.sizes {
            for &n in &o.per_conn {
                ratios.push(
                    Json::obj()
                        .with("size", size)
                        .with("per_conn", n)
                        .with("host_ns_relay_over_splice", opt(self.host_ratio(size, n)))
                        .with(
                            "host_nic_ns_relay_over_splice",
                            opt(self.host_nic_ratio(size, n)),
                        )
                        .with(
                            "frames_relay_over_splice",
                            opt(self.ratio(size, n, ProxyPoint::frames_per_txn)),
                        )
                        .with(
                            "tps_relay_over_splice",
                            opt(self.ratio(size, n, ProxyPoint::tps)),
                        ),
                );
            }
        }
        let goals: Vec<Json> = self
            .goals()
            .iter()
            .map(|g| Json::obj().with("goal", g.what.as_str()).with("met", g.met))
            .collect();
        Json::obj()
            .with("benchmark", "proxy")
            .with("conns", o.conns)
            .with("sizes", o.sizes.clone())
            .with("per_conn", o.per_conn.clone())
            .with(
                "modes",
                o.modes
                    .iter()
                    .map(|m| Json::from(m.name()))
                    .collect::<Vec<_>>(),
            )
            .with("backends", o.backends)
            .with("seconds", r3(o.seconds))
            .with("warmup_seconds", r3(o.warmup_seconds))
            .with("rounds", o.rounds)
            .with("proxy_mode", if o.http { "http" } else { "tunnel" })
            .with("tsc_hz", self.tsc_hz)
            .with("points", points)
            .with("ratios", ratios)
            .with("goals", goals)
            .pretty()
    }

    /// Writes the SVG plots into `dir` (made if missing) and returns their paths: host ns
    /// per transaction and transactions per second over transactions per connection (lines:
    /// mode × size; AccelTCP Figure 13's axes), and per size a stacked bar of the proxy
    /// node's CPU per transaction (host stack, proxy, NIC lcore; busy rounds).
    pub fn write_plots(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut written = Vec::new();
        let mut per_conn = self.opts.per_conn.clone();
        per_conn.sort_by_key(|&n| if n == 0 { u64::MAX } else { n });
        let lines = |f: &dyn Fn(&ProxyPoint) -> f64| -> Vec<Series> {
            let mut v = Vec::new();
            for &mode in &self.opts.modes {
                for &size in &self.opts.sizes {
                    let pts = per_conn
                        .iter()
                        .filter_map(|&n| Some((per_conn_x(n), self.median_of(mode, size, n, f)?)))
                        .collect();
                    v.push(Series::new(format!("{} {size} B", mode.name()), pts).with_markers());
                }
            }
            v
        };
        let x_label =
            format!("transactions per connection (log; persistent plotted at {PERSISTENT_X})");
        let host = LinePlot {
            title: "L7 proxy: proxy host CPU per transaction (busy rounds)".into(),
            x_label: x_label.clone(),
            y_label: "host CPU per transaction (ns)".into(),
            series: lines(&ProxyPoint::host_ns_per_txn),
            log_x: true,
            y_from_zero: true,
        };
        let path = dir.join("proxy_host_ns.svg");
        host.write_svg(&path).map_err(|e| e.to_string())?;
        written.push(path);
        let tps = LinePlot {
            title: "L7 proxy: transactions per second (whole emulation loop, one core)".into(),
            x_label,
            y_label: "transactions per second (txn/s)".into(),
            series: lines(&ProxyPoint::tps),
            log_x: true,
            y_from_zero: true,
        };
        let path = dir.join("proxy_tps.svg");
        tps.write_svg(&path).map_err(|e| e.to_string())?;
        written.push(path);
        for &size in &self.opts.sizes {
            let mut categories = Vec::new();
            let mut comps: [Vec<f64>; 3] = Default::default();
            for &n in &per_conn {
                for &mode in &self.opts.modes {
                    let m = |f: &dyn Fn(&ProxyPoint) -> f64| {
                        self.median_of(mode, size, n, f).unwrap_or(0.0)
                    };
                    categories.push(format!(
                        "{} {}",
                        mode.name(),
                        if n == 0 {
                            "pers.".to_string()
                        } else {
                            format!("n={n}")
                        }
                    ));
                    comps[0].push(m(&|p| p.per_txn(p.host_stack_ns)));
                    comps[1].push(m(&|p| p.per_txn(p.host_app_ns)));
                    comps[2].push(m(&ProxyPoint::nic_ns_per_txn));
                }
            }
            let [a, b, c] = comps;
            let bars = StackedBars {
                title: format!(
                    "L7 proxy node CPU per transaction, {size} B messages (n = txn/connection)"
                ),
                y_label: "CPU per transaction, busy rounds (ns)".into(),
                categories,
                components: vec![
                    ("host: TCP stack (Context::poll)".into(), a),
                    ("host: proxy (Proxy::step, socket calls)".into(), b),
                    ("NIC lcore (splice offload, NIC stack)".into(), c),
                ],
            };
            let path = dir.join(format!("proxy_cpu_split_{size}B.svg"));
            bars.write_svg(&path).map_err(|e| e.to_string())?;
            written.push(path);
        }
        Ok(written)
    }
}

impl fmt::Display for ProxyBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        writeln!(
            f,
            "proxy benchmark (AccelTCP Table 2 / Figures 12-13): {} client connections in \
             flight through nicemu's L7 proxy ({} mode) to {} back end(s), {} round(s) of {} s \
             per configuration and mode (after {} s of warm-up), TSC {:.3} GHz",
            o.conns,
            if o.http { "http" } else { "tunnel" },
            o.backends,
            o.rounds,
            o.seconds,
            o.warmup_seconds,
            self.tsc_hz as f64 / 1e9
        )?;
        let heads: Vec<String> = self
            .response_heads
            .iter()
            .map(|(s, h)| format!("{h} B for {s} B"))
            .collect();
        writeln!(
            f,
            "transaction = one {}-byte `GET /` head and its 200 response; message = the \
             response body (Content-Length bytes); the response head adds {}",
            self.request_len,
            heads.join(", ")
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:>6} {:>10} {:<6} {:>5} {:>10} {:>9} {:>8} {:>9} {:>9} {:>8} {:>11} {:>9} {:>9} {:>6}",
            "size",
            "txn/conn",
            "mode",
            "round",
            "txn/s",
            "host ns",
            "stack",
            "proxy",
            "+idle ns",
            "NIC ns",
            "host+NIC ns",
            "PCIe->h",
            "PCIe->n",
            "errors"
        )?;
        for p in &self.points {
            writeln!(
                f,
                "{:>6} {:>10} {:<6} {:>5} {:>10.0} {:>9.0} {:>8.0} {:>9.0} {:>9.0} {:>8.0} {:>11.0} {:>9.2} {:>9.2} {:>6}",
                p.size,
                per_conn_label(p.per_conn),
                p.mode.name(),
                p.round + 1,
                p.tps(),
                p.host_ns_per_txn(),
                p.per_txn(p.host_stack_ns),
                p.per_txn(p.host_app_ns),
                p.per_txn(p.host_idle_ns),
                p.nic_ns_per_txn(),
                p.host_nic_ns_per_txn(),
                p.link.to_host_packets,
                p.link.to_nic_packets,
                p.errors
            )?;
        }
        writeln!(
            f,
            "(per transaction: host ns = proxy host, busy rounds = stack + proxy; +idle ns = \
             the host's idle polls, not in host ns; NIC ns = proxy NIC lcore, busy rounds; \
             host+NIC ns = host ns + NIC ns; PCIe->h / ->n = frames NIC->host / host->NIC on \
             the proxy's link)"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "summary (medians over rounds; ratios relay / splice in the same round; ns = host \
             ns per transaction, h+N ns = host + NIC lcore ns per transaction, both busy \
             rounds; host x is the paper's metric, h+N x counts the NIC's work too):"
        )?;
        writeln!(
            f,
            "{:>6} {:>10} {:>10} {:>10} {:>8} {:>12} {:>12} {:>8} {:>12} {:>12} {:>9} {:>8}",
            "size",
            "txn/conn",
            "splice ns",
            "relay ns",
            "host x",
            "splice h+N",
            "relay h+N",
            "h+N x",
            "splice txn/s",
            "relay txn/s",
            "frames x",
            "NIC x"
        )?;
        for &size in &o.sizes {
            for &n in &o.per_conn {
                let m = |mode, g: &dyn Fn(&ProxyPoint) -> f64| {
                    self.median_of(mode, size, n, g)
                        .map_or("-".into(), |v| format!("{v:.0}"))
                };
                writeln!(
                    f,
                    "{:>6} {:>10} {:>10} {:>10} {:>8} {:>12} {:>12} {:>8} {:>12} {:>12} {:>9} {:>8}",
                    size,
                    per_conn_label(n),
                    m(RelayMode::Splice, &ProxyPoint::host_ns_per_txn),
                    m(RelayMode::Relay, &ProxyPoint::host_ns_per_txn),
                    ratio_text(self.host_ratio(size, n)),
                    m(RelayMode::Splice, &ProxyPoint::host_nic_ns_per_txn),
                    m(RelayMode::Relay, &ProxyPoint::host_nic_ns_per_txn),
                    ratio_text(self.host_nic_ratio(size, n)),
                    m(RelayMode::Splice, &ProxyPoint::tps),
                    m(RelayMode::Relay, &ProxyPoint::tps),
                    ratio_text(self.ratio(size, n, ProxyPoint::frames_per_txn)),
                    ratio_text(self.ratio(size, n, ProxyPoint::nic_ns_per_txn)),
                )?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "proxy host busy time per client connection opened in the window (stack + proxy) \
             and PCIe frames per connection:"
        )?;
        for &size in &o.sizes {
            for &mode in &o.modes {
                for &n in &o.per_conn {
                    if let Some((t, st, app, fr)) = self.per_connection(mode, size, n) {
                        writeln!(
                            f,
                            "  {:<6} {size:>5} B n={n:<4}: {t:>8.0} ns ({st:.0} + {app:.0}), \
                             {fr:.1} frames",
                            mode.name()
                        )?;
                    }
                }
            }
        }
        writeln!(f)?;
        writeln!(f, "counters per run:")?;
        for p in &self.points {
            writeln!(
                f,
                "  {} {} B n={} round {}: {}",
                p.mode.name(),
                p.size,
                per_conn_label(p.per_conn),
                p.round + 1,
                p.detail
            )?;
        }
        writeln!(f)?;
        writeln!(f, "goals:")?;
        for g in self.goals() {
            let verdict = match g.met {
                Some(true) => "MET",
                Some(false) => "NOT MET",
                None => "not measured",
            };
            writeln!(f, "  {}: {verdict}", g.what)?;
        }
        Ok(())
    }
}
