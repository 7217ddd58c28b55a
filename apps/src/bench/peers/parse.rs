//! Parsers for what the peer clients print: redis-benchmark's `--csv` table, `redis-cli
//! --latency --raw`'s one line, wrk's `--latency` report and `nicemu loadgen`'s summary.
//! Every parser returns an error naming what it missed instead of guessing a value.

/// What one client run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientResult {
    /// Requests (transactions) per second, as the tool computed it.
    pub rps: f64,
    /// Requests completed (0 where the tool does not say).
    pub requests: u64,
    /// Median latency, milliseconds.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile latency, milliseconds.
    pub p999_ms: Option<f64>,
    /// Mean latency, milliseconds.
    pub avg_ms: Option<f64>,
    /// Errors the tool reported (socket errors, non-2xx answers, failed transactions).
    pub errors: u64,
    /// The errors by kind, or "none".
    pub error_text: String,
}

/// One test line of redis-benchmark's `--csv` output (redis 7: `"test","rps",
/// "avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",
/// "max_latency_ms"`), for test `test` (`SET`, `GET`, ...). redis-benchmark reports no
/// errors in this table; error replies show on its standard error, checked by the caller.
pub fn redis_benchmark_csv(text: &str, test: &str) -> Result<ClientResult, String> {
    let mut header: Option<Vec<String>> = None;
    for line in text.lines() {
        let cells: Vec<String> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"').to_string())
            .collect();
        if cells.first().map(String::as_str) == Some("test") {
            header = Some(cells);
            continue;
        }
        let Some(h) = &header else { continue };
        if !cells[0].eq_ignore_ascii_case(test) {
            continue;
        }
        let col = |name: &str| -> Result<f64, String> {
            let i = h
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| format!("redis-benchmark --csv: no column {name:?}"))?;
            cells
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| format!("redis-benchmark --csv: bad {name} in {line:?}"))
        };
        return Ok(ClientResult {
            rps: col("rps")?,
            requests: 0,
            p50_ms: Some(col("p50_latency_ms")?),
            p99_ms: Some(col("p99_latency_ms")?),
            p999_ms: None,
            avg_ms: Some(col("avg_latency_ms")?),
            errors: 0,
            error_text: "none".into(),
        });
    }
    Err(format!(
        "redis-benchmark --csv: no {test} line in its output {text:?}"
    ))
}

/// `redis-cli --latency --raw`'s line: `min max avg samples` (milliseconds, then a count):
/// (average ms, samples).
pub fn redis_cli_latency(text: &str) -> Result<(f64, u64), String> {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("redis-cli --latency: no output")?;
    let f: Vec<&str> = line.split_whitespace().collect();
    match (
        f.get(2).and_then(|v| v.parse().ok()),
        f.get(3).and_then(|v| v.parse().ok()),
    ) {
        (Some(avg), Some(n)) if f.len() == 4 => Ok((avg, n)),
        _ => Err(format!(
            "redis-cli --latency: expected 'min max avg samples', got {line:?}"
        )),
    }
}

/// A wrk duration (`635.91us`, `1.08ms`, `2.00s`, `1.50m`) in milliseconds.
fn wrk_time_ms(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60e3)
    } else if let Some(n) = v.strip_suffix('h') {
        (n, 3600e3)
    } else {
        return None;
    };
    num.parse::<f64>().ok().map(|x| x * scale)
}

/// wrk's report with `--latency`: `Requests/sec:`, `N requests in ...`, the latency
/// distribution (50% and 99%; wrk prints no 99.9%), the mean of `Latency` in the thread
/// stats, `Socket errors: connect a, read b, write c, timeout d` and `Non-2xx or 3xx
/// responses: n` (both absent when zero).
pub fn wrk(text: &str) -> Result<ClientResult, String> {
    let mut r = ClientResult::default();
    let mut rps = None;
    let mut kinds = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        let f: Vec<&str> = t.split_whitespace().collect();
        if let Some(v) = t.strip_prefix("Requests/sec:") {
            rps = v.trim().parse::<f64>().ok();
        } else if f.len() >= 3 && f[1] == "requests" && f[2] == "in" {
            r.requests = f[0].parse().unwrap_or(0);
        } else if f.first() == Some(&"Latency") && f.len() >= 2 && r.avg_ms.is_none() {
            r.avg_ms = wrk_time_ms(f[1]);
        } else if f.len() == 2 && f[0] == "50%" {
            r.p50_ms = wrk_time_ms(f[1]);
        } else if f.len() == 2 && f[0] == "99%" {
            r.p99_ms = wrk_time_ms(f[1]);
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            for part in rest.split(',') {
                let mut w = part.split_whitespace();
                if let (Some(kind), Some(n)) =
                    (w.next(), w.next().and_then(|n| n.parse::<u64>().ok()))
                {
                    if n > 0 {
                        kinds.push(format!("{kind} {n}"));
                    }
                    r.errors += n;
                }
            }
        } else if let Some(n) = t.strip_prefix("Non-2xx or 3xx responses:") {
            let n: u64 = n.trim().parse().unwrap_or(1);
            kinds.push(format!("non-2xx {n}"));
            r.errors += n;
        }
    }
    r.rps = rps.ok_or_else(|| format!("wrk: no 'Requests/sec:' in its output {text:?}"))?;
    if r.p50_ms.is_none() || r.p99_ms.is_none() {
        return Err(format!(
            "wrk: no latency distribution (--latency) in its output {text:?}"
        ));
    }
    r.error_text = if kinds.is_empty() {
        "none".into()
    } else {
        kinds.join(", ")
    };
    Ok(r)
}

/// The value after `key` in `line` (`... key VALUE ...`), as a number.
fn after(line: &str, key: &str) -> Option<f64> {
    let mut w = line.split_whitespace();
    while let Some(x) = w.next() {
        if x == key {
            return w.next()?.trim_start_matches('(').parse().ok();
        }
    }
    None
}

/// `nicemu loadgen`'s summary lines: `loadgen: transactions N in S s (R/s), ...`,
/// `loadgen: latency p50 X us p90 .. p99 .. p99.9 .. max ..` and `loadgen: errors N (...)`.
pub fn loadgen(text: &str) -> Result<ClientResult, String> {
    let mut r = ClientResult::default();
    let (mut seen_tx, mut seen_lat, mut seen_err) = (false, false, false);
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("loadgen: ") else {
            continue;
        };
        if rest.starts_with("transactions ") {
            let n = after(rest, "transactions");
            let secs = after(rest, "in");
            if let (Some(n), Some(s)) = (n, secs) {
                r.requests = n as u64;
                r.rps = n / s.max(1e-9);
                seen_tx = true;
            }
        } else if rest.starts_with("latency ") {
            let ms = |k: &str| after(rest, k).map(|us| us / 1e3);
            r.p50_ms = ms("p50");
            r.p99_ms = ms("p99");
            r.p999_ms = ms("p99.9");
            seen_lat = r.p50_ms.is_some();
        } else if rest.starts_with("errors ") {
            r.errors = after(rest, "errors").unwrap_or(0.0) as u64;
            r.error_text = rest
                .split_once('(')
                .map(|(_, t)| t.trim_end_matches(')').to_string())
                .unwrap_or_default();
            seen_err = true;
        }
    }
    if !(seen_tx && seen_lat && seen_err) {
        return Err(format!(
            "nicemu loadgen: no summary (transactions, latency, errors) in its output {text:?}"
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_benchmark_csv_lines() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\
                   \"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"SET\",\"181818.19\",\"1.506\",\"0.328\",\"1.103\",\"2.847\",\"6.927\",\"6.959\"\n\
                   \"GET\",\"499999.97\",\"0.956\",\"0.144\",\"0.855\",\"1.727\",\"1.767\",\"1.775\"\n";
        let s = redis_benchmark_csv(out, "SET").unwrap();
        assert_eq!(s.rps, 181818.19);
        assert_eq!(s.p50_ms, Some(1.103));
        assert_eq!(s.p99_ms, Some(6.927));
        assert_eq!(s.avg_ms, Some(1.506));
        let g = redis_benchmark_csv(out, "get").unwrap();
        assert_eq!(g.rps, 499999.97);
        assert!(redis_benchmark_csv(out, "INCR").is_err());
        assert!(redis_benchmark_csv("\"SET\",\"1\"\n", "SET").is_err());
        assert!(redis_benchmark_csv("", "SET").is_err());
    }

    #[test]
    fn redis_cli_latency_line() {
        assert_eq!(redis_cli_latency("0 4 0.27 98\n").unwrap(), (0.27, 98));
        assert!(redis_cli_latency("").is_err());
        assert!(redis_cli_latency("min: 0, max: 4, avg: 0.27 (98 samples)").is_err());
    }

    const WRK: &str = "Running 2s test @ http://192.0.2.1/64
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.21ms  402.10us   9.87ms   88.02%
    Req/Sec    41.12k     2.01k   44.00k    80.00%
  Latency Distribution
     50%  635.91us
     75%  712.00us
     90%    1.08ms
     99%    2.06ms
  82925 requests in 2.00s, 17.17MB read
Requests/sec:  41462.50
Transfer/sec:      8.58MB
";

    #[test]
    fn wrk_report() {
        let r = wrk(WRK).unwrap();
        assert_eq!(r.rps, 41462.5);
        assert_eq!(r.requests, 82925);
        assert!((r.p50_ms.unwrap() - 0.63591).abs() < 1e-9);
        assert_eq!(r.p99_ms, Some(2.06));
        assert_eq!(r.avg_ms, Some(1.21));
        assert_eq!((r.errors, r.error_text.as_str()), (0, "none"));
        let bad = WRK.replace(
            "Requests/sec",
            "  Socket errors: connect 0, read 3, write 0, timeout 2\n  Non-2xx or 3xx responses: 7\nRequests/sec",
        );
        let r = wrk(&bad).unwrap();
        assert_eq!(r.errors, 12);
        assert_eq!(r.error_text, "read 3, timeout 2, non-2xx 7");
        assert!(wrk(&WRK.replace("     50%  635.91us\n", "")).is_err());
        assert!(wrk("unable to connect to 192.0.2.1:80 Connection refused").is_err());
        assert_eq!(wrk_time_ms("2.00s"), Some(2000.0));
        assert_eq!(wrk_time_ms("1.5m"), Some(90_000.0));
        assert_eq!(wrk_time_ms("12"), None);
    }

    #[test]
    fn loadgen_summary() {
        let out = "[    1.0 s] loadgen: transactions 10 (10/s), connections open 50 ...\n\
                   loadgen: transactions 123456 in 2.00 s (61728/s), connects 50 established 50, bytes out 1 in 1\n\
                   loadgen: latency p50 750.5 us p90 900.0 us p99 1200.0 us p99.9 3000.0 us max 5000.0 us\n\
                   loadgen: errors 0 (none)\n";
        let r = loadgen(out).unwrap();
        assert_eq!(r.requests, 123456);
        assert_eq!(r.rps, 61728.0);
        assert_eq!(r.p50_ms, Some(0.7505));
        assert_eq!(r.p99_ms, Some(1.2));
        assert_eq!(r.p999_ms, Some(3.0));
        assert_eq!((r.errors, r.error_text.as_str()), (0, "none"));
        assert!(loadgen("loadgen: errors 0 (none)\n").is_err());
    }
}
