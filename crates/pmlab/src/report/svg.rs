//! Minimal, dependency-free SVG line and grouped bar charts for the reproduction report.

use std::fmt::Write;

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart with one or more series.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Plot x on a log2 scale (for power-of-two sweeps).
    pub log2_x: bool,
    /// The lines.
    pub series: Vec<Series>,
    /// Optional horizontal reference lines (label, y), drawn dashed.
    pub references: Vec<(String, f64)>,
}

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A "nice" tick step for a range.
fn nice_step(range: f64, target_ticks: f64) -> f64 {
    let raw = (range / target_ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Horizontal grid lines and y tick labels from 0 to `y1` every `ystep`, across a plot `pw`
/// wide; `py` maps a value to its y coordinate.
fn y_grid(s: &mut String, y1: f64, ystep: f64, pw: f64, py: impl Fn(f64) -> f64) {
    let mut y = 0.0;
    while y <= y1 + ystep * 0.01 {
        let yy = py(y);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            fmt_num(y)
        );
        y += ystep;
    }
}

impl LineChart {
    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.references.iter().map(|r| r.1))
            .collect();
        let tx = |x: f64| if self.log2_x { x.max(1e-12).log2() } else { x };
        let (mut x0, mut x1) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(tx(x)), b.max(tx(x)))
            });
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let ymax = ys.iter().cloned().fold(0.0f64, f64::max);
        let ystep = nice_step(if ymax > 0.0 { ymax } else { 1.0 }, 5.0);
        let y1 = (ymax / ystep).ceil().max(1.0) * ystep;
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let px = |x: f64| LEFT + (tx(x) - x0) / (x1 - x0) * pw;
        let py = |y: f64| TOP + ph - y / y1 * ph;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" font-size="14" font-weight="bold">{}</text>"#,
            LEFT,
            esc(&self.title)
        );
        y_grid(&mut s, y1, ystep, pw, py);
        // X ticks at the data's x values (deduplicated).
        let mut xticks: Vec<f64> = xs.clone();
        xticks.sort_by(|a, b| a.partial_cmp(b).unwrap());
        xticks.dedup();
        let stride = (xticks.len() / 10).max(1);
        for x in xticks.iter().step_by(stride) {
            let xx = px(*x);
            let _ = writeln!(
                s,
                r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#999"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + ph,
                TOP + ph + 5.0,
                TOP + ph + 18.0,
                fmt_num(*x)
            );
        }
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            H - 12.0,
            esc(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            esc(&self.y_label)
        );
        for (i, (label, yv)) in self.references.iter().enumerate() {
            let yy = py(*yv);
            let c = COLORS[(i + 4) % COLORS.len()];
            let _ = writeln!(
                s,
                r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{c}" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" fill="{c}">{}</text>"#,
                LEFT + pw,
                LEFT + pw + 6.0,
                yy + 4.0,
                esc(label)
            );
        }
        for (i, ser) in self.series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let pts: Vec<String> = ser
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
                pts.join(" ")
            );
            for &(x, y) in &ser.points {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"/>"#,
                    px(x),
                    py(y)
                );
            }
            let ly = TOP + 14.0 + i as f64 * 18.0;
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT + pw + 10.0,
                LEFT + pw + 30.0,
                LEFT + pw + 35.0,
                ly + 4.0,
                esc(&ser.label)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

/// A grouped bar chart: one group per category, one bar per series in each group.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Y-axis label.
    pub y_label: String,
    /// Category names (x axis, written vertically).
    pub categories: Vec<String>,
    /// (legend label, one value per category).
    pub series: Vec<(String, Vec<f64>)>,
}

impl BarChart {
    /// Renders the chart as a standalone SVG document (wider than a line chart: one slot per
    /// category).
    pub fn to_svg(&self) -> String {
        let n = self.categories.len().max(1) as f64;
        let w = (LEFT + RIGHT + n * 36.0).max(W);
        let bottom = 110.0;
        let ph = H - TOP - bottom;
        let pw = w - LEFT - RIGHT;
        let ymax = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ystep = nice_step(if ymax > 0.0 { ymax } else { 1.0 }, 5.0);
        let y1 = (ymax / ystep).ceil().max(1.0) * ystep;
        let py = |y: f64| TOP + ph - y.clamp(0.0, y1) / y1 * ph;
        let slot = pw / n;
        let bar = slot * 0.8 / self.series.len().max(1) as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{H}" viewBox="0 0 {w} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{w}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{}</text>"#,
            esc(&self.title)
        );
        y_grid(&mut s, y1, ystep, pw, py);
        let _ = writeln!(
            s,
            r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            esc(&self.y_label)
        );
        for (i, c) in self.categories.iter().enumerate() {
            let x0 = LEFT + i as f64 * slot + slot * 0.1;
            for (k, (_, vals)) in self.series.iter().enumerate() {
                let v = vals.get(i).copied().unwrap_or(0.0);
                if !v.is_finite() {
                    continue;
                }
                let x = x0 + k as f64 * bar;
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                    py(v),
                    bar.max(1.0),
                    (TOP + ph - py(v)).max(0.0),
                    COLORS[k % COLORS.len()]
                );
            }
            let cx = LEFT + (i as f64 + 0.5) * slot;
            let cy = TOP + ph + 8.0;
            let _ = writeln!(
                s,
                r#"<text x="{cx:.1}" y="{cy:.1}" transform="rotate(60 {cx:.1} {cy:.1})">{}</text>"#,
                esc(c)
            );
        }
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
            TOP + ph,
            LEFT + pw,
            TOP + ph
        );
        for (k, (label, _)) in self.series.iter().enumerate() {
            let ly = TOP + 10.0 + k as f64 * 18.0;
            let lx = LEFT + pw + 12.0;
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                ly - 10.0,
                COLORS[k % COLORS.len()],
                lx + 18.0,
                ly,
                esc(label)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_series_points_and_escapes_text() {
        let c = LineChart {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log2_x: true,
            series: vec![Series {
                label: "s&t".into(),
                points: vec![(1.0, 1.0), (2.0, 4.0), (4.0, 3.0)],
            }],
            references: vec![("paper".into(), 5.0)],
        };
        let svg = c.to_svg();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("a &lt; b") && svg.contains("s&amp;t"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(0.9, 5.0), 0.2);
        assert_eq!(nice_step(37.0, 5.0), 10.0);
    }

    #[test]
    fn bar_chart_has_one_bar_per_value_and_a_legend() {
        let c = BarChart {
            title: "t <x>".into(),
            y_label: "y".into(),
            categories: vec!["a".into(), "b".into(), "c".into()],
            series: vec![
                ("s1".into(), vec![1.0, 2.0, 3.0]),
                ("s2".into(), vec![0.5, f64::NAN, 4.0]),
            ],
        };
        let svg = c.to_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // 5 finite bars + 2 legend swatches + the background.
        assert_eq!(svg.matches("<rect").count(), 8);
        assert!(svg.contains("t &lt;x&gt;"));
    }
}
