//! SVG plots of benchmark and experiment results (the plotters crate's SVG backend): line
//! charts for sweeps, time series and CDFs, and stacked bars for CPU breakdowns in the
//! spirit of AccelTCP Table 1 and Figure 14. Every plot has a title, axes labelled with
//! their units and a legend; a plot with nothing to draw is an error, never an empty file.

use std::path::Path;

use plotters::prelude::*;

/// One named line of a [`LinePlot`].
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points in x order (NaN and infinite values are skipped).
    pub points: Vec<(f64, f64)>,
    /// Draw a marker at each point as well as the line.
    pub markers: bool,
}

impl Series {
    /// A series called `name` with `points`.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            markers: false,
        }
    }

    /// The same series with a marker on every point.
    pub fn with_markers(mut self) -> Series {
        self.markers = true;
        self
    }
}

/// A line chart: one or more series over shared axes.
#[derive(Clone, Debug, Default)]
pub struct LinePlot {
    /// Title above the chart.
    pub title: String,
    /// X axis label, with its unit (e.g. "message size (B)").
    pub x_label: String,
    /// Y axis label, with its unit.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Logarithmic x axis (sizes, connection counts).
    pub log_x: bool,
    /// The y axis starts at zero (rates, times) rather than at the smallest value.
    pub y_from_zero: bool,
}

/// A stacked bar chart: one bar per category, each split into the same components.
#[derive(Clone, Debug, Default)]
pub struct StackedBars {
    /// Title above the chart.
    pub title: String,
    /// Y axis label, with its unit (e.g. "host CPU per transaction (ns)").
    pub y_label: String,
    /// One bar each (x axis), left to right.
    pub categories: Vec<String>,
    /// Components bottom to top: a legend name and one value per category.
    pub components: Vec<(String, Vec<f64>)>,
}

/// Why a plot was not written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw.
    #[error("{0}: nothing to plot")]
    Empty(String),
    /// The drawing backend failed (the file could not be written, ...).
    #[error("{path}: {message}")]
    Draw {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

const SIZE: (u32, u32) = (900, 560);

fn draw_err(path: &Path) -> impl Fn(String) -> PlotError + '_ {
    move |message| PlotError::Draw {
        path: path.display().to_string(),
        message,
    }
}

fn finite(p: &(f64, f64), log_x: bool) -> bool {
    p.0.is_finite() && p.1.is_finite() && (!log_x || p.0 > 0.0)
}

/// Range `lo..hi` widened a little (and made non-empty).
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, hi + pad)
    }
}

impl LinePlot {
    /// Writes the chart to `path` as SVG.
    pub fn write_svg(&self, path: &Path) -> Result<(), PlotError> {
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|p| finite(p, self.log_x))
            .collect();
        if pts.is_empty() {
            return Err(PlotError::Empty(path.display().to_string()));
        }
        let (xmin, xmax) = pts
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (ymin, ymax) = pts
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        let (ylo, yhi) = if self.y_from_zero {
            let (lo, hi) = padded(ymin.min(0.0), ymax);
            (lo.max(0.0).min(ymin.min(0.0)), hi)
        } else {
            padded(ymin, ymax)
        };
        let e = draw_err(path);
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let mut b = ChartBuilder::on(&root);
        b.caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(80);
        let colors = palette();
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label.as_str())
                    .y_desc(self.y_label.as_str())
                    .axis_desc_style(("sans-serif", 16))
                    .draw()
                    .map_err(|x| e(x.to_string()))?;
                for (i, s) in self.series.iter().enumerate() {
                    let c = colors[i % colors.len()];
                    let data: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|p| finite(p, self.log_x))
                        .collect();
                    chart
                        .draw_series(LineSeries::new(data.clone(), c.stroke_width(2)))
                        .map_err(|x| e(x.to_string()))?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                        });
                    if s.markers {
                        chart
                            .draw_series(data.iter().map(|&p| Circle::new(p, 3, c.filled())))
                            .map_err(|x| e(x.to_string()))?;
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|x| e(x.to_string()))?;
            }};
        }
        if self.log_x {
            let (lo, hi) = (xmin / 1.2, xmax * 1.2);
            draw!(b
                .build_cartesian_2d((lo..hi).log_scale(), ylo..yhi)
                .map_err(|x| e(x.to_string()))?);
        } else {
            let (lo, hi) = padded(xmin, xmax);
            draw!(b
                .build_cartesian_2d(lo..hi, ylo..yhi)
                .map_err(|x| e(x.to_string()))?);
        }
        root.present().map_err(|x| e(x.to_string()))?;
        Ok(())
    }
}

impl StackedBars {
    /// Writes the chart to `path` as SVG.
    pub fn write_svg(&self, path: &Path) -> Result<(), PlotError> {
        let n = self.categories.len();
        let totals: Vec<f64> = (0..n)
            .map(|i| {
                self.components
                    .iter()
                    .map(|(_, v)| v.get(i).copied().filter(|x| x.is_finite()).unwrap_or(0.0))
                    .sum()
            })
            .collect();
        let top = totals.iter().copied().fold(0.0, f64::max);
        if n == 0 || self.components.is_empty() || top <= 0.0 {
            return Err(PlotError::Empty(path.display().to_string()));
        }
        let e = draw_err(path);
        // Wide enough that each bar's label fits above it.
        let width = SIZE.0.max(150 * n as u32 + 160);
        let root = SVGBackend::new(path, (width, SIZE.1)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..n as f64, 0.0..top * 1.15)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_desc("configuration")
            .y_desc(self.y_label.as_str())
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        let colors = palette();
        let mut base = vec![0.0; n];
        for (k, (name, vals)) in self.components.iter().enumerate() {
            let c = colors[k % colors.len()];
            let rects: Vec<Rectangle<(f64, f64)>> = (0..n)
                .map(|i| {
                    let v = vals
                        .get(i)
                        .copied()
                        .filter(|x| x.is_finite())
                        .unwrap_or(0.0);
                    let r = Rectangle::new(
                        [(i as f64 + 0.2, base[i]), (i as f64 + 0.8, base[i] + v)],
                        c.filled(),
                    );
                    base[i] += v;
                    r
                })
                .collect();
            chart
                .draw_series(rects)
                .map_err(|x| e(x.to_string()))?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        // Each bar's name above it (the x axis has no numbers to show).
        chart
            .draw_series(self.categories.iter().enumerate().map(|(i, c)| {
                Text::new(
                    c.clone(),
                    (i as f64 + 0.2, totals[i] + top * 0.04),
                    ("sans-serif", 14),
                )
            }))
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(x.to_string()))?;
        root.present().map_err(|x| e(x.to_string()))?;
        Ok(())
    }
}

fn palette() -> [RGBColor; 8] {
    [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("nicemu-plot-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn line_plot_has_title_axes_and_legend() {
        let p = tmp("line.svg");
        LinePlot {
            title: "echo throughput".into(),
            x_label: "message size (B)".into(),
            y_label: "transactions/s".into(),
            series: vec![
                Series::new("nicemu", vec![(64.0, 1e6), (1024.0, 8e5), (4096.0, 5e5)])
                    .with_markers(),
                Series::new(
                    "kernel",
                    vec![(64.0, 2e5), (1024.0, 1.8e5), (4096.0, 1.5e5)],
                ),
            ],
            log_x: true,
            y_from_zero: true,
        }
        .write_svg(&p)
        .unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        for want in [
            "echo throughput",
            "message size (B)",
            "transactions/s",
            "nicemu",
            "kernel",
        ] {
            assert!(svg.contains(want), "{want} missing from the SVG");
        }
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn stacked_bars_have_every_component() {
        let p = tmp("bars.svg");
        StackedBars {
            title: "host CPU per transaction".into(),
            y_label: "ns per transaction".into(),
            categories: vec!["relay".into(), "splice".into()],
            components: vec![
                ("TCP".into(), vec![900.0, 200.0]),
                ("application".into(), vec![300.0, 100.0]),
            ],
        }
        .write_svg(&p)
        .unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        for want in [
            "host CPU per transaction",
            "ns per transaction",
            "TCP",
            "application",
            "relay",
            "splice",
        ] {
            assert!(svg.contains(want), "{want} missing from the SVG");
        }
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        let p = tmp("empty.svg");
        let e = LinePlot {
            series: vec![Series::new("x", vec![(f64::NAN, 1.0)])],
            ..LinePlot::default()
        }
        .write_svg(&p);
        assert!(matches!(e, Err(PlotError::Empty(_))));
        assert!(matches!(
            StackedBars::default().write_svg(&p),
            Err(PlotError::Empty(_))
        ));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}
