//! Small helpers the experiments share: writing files into the output directory (and
//! listing them in the report), SVG plots, thinning long traces for plotting, CDFs.

use std::path::{Path, PathBuf};

use super::Check;
use crate::plot::LinePlot;

/// Writes `text` to `out/name` and lists the file.
pub fn write(out: &Path, name: &str, text: &str, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let p = out.join(name);
    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    files.push(p);
    Ok(())
}

/// Draws `plot` to `out/name` (SVG) and lists the file.
pub fn svg(
    out: &Path,
    name: &str,
    plot: &LinePlot,
    files: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let p = out.join(name);
    plot.write_svg(&p).map_err(|e| e.to_string())?;
    files.push(p);
    Ok(())
}

/// A check.
pub fn check(what: impl Into<String>, ok: bool) -> Check {
    Check {
        what: what.into(),
        ok,
    }
}

/// At most about `max` points of a time series, keeping its shape: the series is cut into
/// buckets and each keeps its lowest and highest point, in time order (sharp drops such as
/// a window halving survive).
pub fn envelope(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let buckets = (max / 2).max(1);
    if points.len() <= max {
        return points.to_vec();
    }
    let per = points.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(2 * buckets + 1);
    for chunk in points.chunks(per) {
        let lo = chunk
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map(|(i, _)| i)
            .unwrap_or(0);
        let hi = chunk
            .iter()
            .enumerate()
            .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map(|(i, _)| i)
            .unwrap_or(0);
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(chunk[a]);
        if b != a {
            out.push(chunk[b]);
        }
    }
    out
}

/// Every `k`-th point, so that at most about `max` remain (the last one kept).
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let k = points.len().div_ceil(max.max(1)).max(1);
    let mut v: Vec<_> = points.iter().copied().step_by(k).collect();
    if let (Some(l), Some(&last)) = (v.last(), points.last()) {
        if *l != last {
            v.push(last);
        }
    }
    v
}

/// The empirical CDF of `values`: (value, fraction ≤ value), sorted.
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// The `q`-quantile (0..=1) of `values` (nearest rank); 0 when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Markdown for a check list.
pub fn checks_md(checks: &[Check]) -> String {
    let mut s = String::from("## Checks\n\n");
    for c in checks {
        s.push_str(&format!(
            "- {} {}\n",
            if c.ok { "[ok]" } else { "[FAILED]" },
            c.what
        ));
    }
    s
}
