//! `nicemu testbench --plot`: an SVG of a testbench run's per-flow traces, beside its CSV
//! files, in the spirit of Tonic's Fig. 3a / Fig. 4 (window or rate over time) with the
//! throughput and the bottleneck queue under it.
//!
//! Three panels over virtual time (µs), one line per flow (legend: the first
//! [`LEGEND_FLOWS`] flows):
//! 1. what the credit scheme controls: the window in segments (window modules), the rate in
//!    Gbit/s (rate modules, Tonic §3.3.1), or, for receiver-driven protocols (grant tokens:
//!    NDP, Homa), the bytes acknowledged so far in KB, where SRPT shows as one message after
//!    another;
//! 2. per-flow throughput in Gbit/s: acknowledged bytes between two samples over their
//!    interval;
//! 3. the bottleneck queue in KB (all switch ports summed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dataplane::tonic::testbench::{ReceiverKind, TestbenchReport};
use plotters::prelude::*;

/// Flows named in the legend (the others are drawn but not labelled).
pub const LEGEND_FLOWS: usize = 12;

/// What the first panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Window,
    Rate,
    Progress,
}

impl Control {
    fn of(r: &TestbenchReport) -> Control {
        if r.trace.iter().any(|t| t.rate_bps > 0) {
            Control::Rate
        } else if matches!(r.receiver, ReceiverKind::NdpPull | ReceiverKind::HomaGrant) {
            Control::Progress
        } else {
            Control::Window
        }
    }

    fn label(self) -> &'static str {
        match self {
            Control::Window => "window (segments)",
            Control::Rate => "rate (Gbit/s)",
            Control::Progress => "acknowledged (KB)",
        }
    }

    fn caption(self) -> &'static str {
        match self {
            Control::Window => "Window size per flow",
            Control::Rate => "Sending rate per flow",
            Control::Progress => "Bytes acknowledged per flow (receiver-driven)",
        }
    }
}

type Series = Vec<(f64, f64)>;

/// Per-flow points of the three panels, and the queue.
struct Data {
    control: BTreeMap<u32, Series>,
    tput: BTreeMap<u32, Series>,
    queue: Series,
}

fn data(r: &TestbenchReport, c: Control) -> Data {
    let seg = r.segment_size as f64;
    let mut control: BTreeMap<u32, Series> = BTreeMap::new();
    let mut tput: BTreeMap<u32, Series> = BTreeMap::new();
    let mut last: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut queue: BTreeMap<u64, u64> = BTreeMap::new();
    for t in &r.trace {
        let us = t.time_ns as f64 / 1e3;
        let y = match c {
            Control::Window => t.wnd_size as f64,
            Control::Rate => t.rate_bps as f64 / 1e9,
            Control::Progress => t.snd_una as f64 * seg / 1e3,
        };
        control.entry(t.flow).or_default().push((us, y));
        if let Some((t0, una0)) = last.insert(t.flow, (t.time_ns, t.snd_una)) {
            if t.time_ns > t0 {
                let bits = t.snd_una.saturating_sub(una0) as f64 * seg * 8.0;
                let gbps = bits / (t.time_ns - t0) as f64;
                tput.entry(t.flow).or_default().push((us, gbps));
            }
        }
        queue.insert(t.time_ns, t.queue_bytes);
    }
    Data {
        control,
        tput,
        queue: queue
            .into_iter()
            .map(|(t, q)| (t as f64 / 1e3, q as f64 / 1e3))
            .collect(),
    }
}

fn max_y(series: &mut dyn Iterator<Item = &(f64, f64)>) -> f64 {
    let m = series.map(|p| p.1).fold(0.0, f64::max);
    if m > 0.0 {
        m * 1.1
    } else {
        1.0
    }
}

/// Writes `dir/<scenario name>.svg` for `r` and returns its path.
pub fn write_svg(r: &TestbenchReport, dir: &Path) -> Result<PathBuf, String> {
    let name = if r.name.is_empty() {
        "testbench"
    } else {
        &r.name
    };
    let path = dir.join(format!("{name}.svg"));
    draw(r, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn draw(r: &TestbenchReport, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let c = Control::of(r);
    let d = data(r, c);
    let x_max = (r.end_ns as f64 / 1e3).max(1e-3);
    let root = SVGBackend::new(path, (1100, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{}: module {}, receiver {}, {} flows",
        r.name,
        r.module,
        r.receiver.name(),
        r.flows.len()
    );
    let root = root.titled(&title, ("sans-serif", 22))?;
    let panels = root.split_evenly((3, 1));
    let color = |i: usize| Palette99::pick(i).to_rgba();
    let flow_panels: [(&str, &str, &BTreeMap<u32, Series>); 2] = [
        (c.caption(), c.label(), &d.control),
        ("Throughput per flow", "throughput (Gbit/s)", &d.tput),
    ];
    for (area, (caption, y_desc, series)) in panels.iter().zip(flow_panels) {
        let y_max = max_y(&mut series.values().flatten());
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc("virtual time (µs)")
            .y_desc(y_desc)
            .draw()?;
        for (i, (flow, pts)) in series.iter().enumerate() {
            let col = color(i);
            let s = chart.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))?;
            if i < LEGEND_FLOWS {
                s.label(format!("flow {flow}")).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2))
                });
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    let y_max = max_y(&mut d.queue.iter());
    let mut chart = ChartBuilder::on(&panels[2])
        .caption("Bottleneck queue", ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("virtual time (µs)")
        .y_desc("queued (KB)")
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            d.queue.iter().copied(),
            BLACK.stroke_width(2),
        ))?
        .label("all switch ports")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::tonic::testbench::{run_scenario, Scenario};

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nicemu-plot-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn small(module: &str) -> TestbenchReport {
        let mut s = Scenario::new(module);
        s.name = format!("{module}-plot");
        s.flows.senders = 2;
        s.flows.segments = Some(200);
        s.tonic.init_rtx_timer = 1_000_000;
        run_scenario(&s).unwrap()
    }

    #[test]
    fn svg_has_title_axes_and_legend() {
        let dir = tmp("newreno");
        let r = small("newreno");
        let p = write_svg(&r, &dir).unwrap();
        assert_eq!(p, dir.join("newreno-plot.svg"));
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for text in [
            "newreno-plot: module newreno",
            "Window size per flow",
            "window (segments)",
            "throughput (Gbit/s)",
            "virtual time (µs)",
            "queued (KB)",
            "flow 0",
            "flow 1",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rate_and_receiver_driven_modules_plot_their_variable() {
        assert_eq!(Control::of(&small("dcqcn")), Control::Rate);
        assert_eq!(Control::of(&small("homa")), Control::Progress);
        let dir = tmp("dcqcn");
        let svg = std::fs::read_to_string(write_svg(&small("dcqcn"), &dir).unwrap()).unwrap();
        assert!(svg.contains("rate (Gbit/s)"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
