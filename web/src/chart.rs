//! Charts as SVG drawn on the server: one column per bin, lines (with a gap where a bin has no
//! value) or stacked bars, a grid with its scale, time labels, and per column a hover target
//! whose `<title>` gives the bin's numbers. No script draws them: they work offline, under the
//! dashboard's content security policy, and refresh with the page's live part.
//!
//! Each series carries its values in `data-series` / `data-values` (comma-separated, empty for
//! a gap), so a test, or a person, can read the numbers behind a line.

use std::fmt::Write as _;

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use maud::{Markup, PreEscaped, html};

/// The drawing's size in SVG units (it scales to its container's width): for half the page's
/// width, and for its whole width.
const WIDTH: f64 = 720.0;
const WIDE_WIDTH: f64 = 1440.0;
const HEIGHT: f64 = 190.0;
/// Room for the scale (left) and the time labels (bottom).
const LEFT: f64 = 52.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 22.0;

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A line per series, broken where a bin has no value.
    Lines,
    /// The series stacked in one bar per bin.
    StackedBars,
}

/// What the values measure, for the scale's labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Counts.
    Count,
    /// Seconds.
    Seconds,
}

/// One series: its key (`data-series`, and the CSS class `s-<key>` that colours it), its label
/// in the legend, and a value per bin (`None`: nothing known there).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) key: String,
    pub(crate) label: String,
    pub(crate) values: Vec<Option<f64>>,
}

/// A chart over bins of equal width.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// The element id (`chart-<id>`) and `data-chart`.
    pub(crate) id: &'static str,
    /// The caption, also the SVG's accessible name.
    pub(crate) title: String,
    pub(crate) shape: Shape,
    pub(crate) unit: Unit,
    /// Each bin's start, oldest first.
    pub(crate) bins: Vec<DateTime<Utc>>,
    /// The width of a bin.
    pub(crate) bin: TimeDelta,
    pub(crate) series: Vec<Series>,
    /// Per bin, the text shown on hover (one line per figure).
    pub(crate) tooltips: Vec<String>,
    /// Said under the chart when no series has a value.
    pub(crate) empty_note: String,
    /// Drawn for the page's whole width (else half of it).
    pub(crate) wide: bool,
}

/// A number for 0 to `max` on a scale: for counts (and durations under a second) the smallest of
/// 1, 2, 2.5, 5 times a power of ten at or above it (at least 1 for counts); for longer
/// durations a tidy one (15 s, 2 min, 30 min, 6 h, ...).
fn nice_ceiling(max: f64, unit: Unit) -> f64 {
    const TIDY_SECONDS: [f64; 19] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
        10_800.0, 21_600.0, 43_200.0, 86_400.0, 172_800.0,
    ];
    let floor = match unit {
        Unit::Count => 1.0,
        Unit::Seconds => 0.001,
    };
    let max = max.max(floor);
    if unit == Unit::Seconds
        && max > 1.0
        && let Some(tidy) = TIDY_SECONDS.into_iter().find(|r| *r >= max * (1.0 - 1e-9))
    {
        return tidy;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * magnitude >= max * (1.0 - 1e-9) {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

/// A value as the scale says it: `1,234`, `12k`, `3.5M`; `850 ms`, `12 s`, `4.5 min`, `2.1 h`.
pub(crate) fn label(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => {
            let a = v.abs();
            if a >= 1e6 {
                format!("{:.1}M", v / 1e6).replace(".0M", "M")
            } else if a >= 1e4 {
                format!("{:.0}k", v / 1e3)
            } else if a.fract() == 0.0 {
                #[allow(clippy::cast_possible_truncation)]
                crate::format::count(v as i64)
            } else {
                format!("{v:.1}")
            }
        }
        Unit::Seconds => {
            if v == 0.0 {
                "0".to_owned()
            } else if v < 1.0 {
                format!("{:.0} ms", v * 1000.0)
            } else if v < 90.0 {
                format!("{v:.1} s").replace(".0 s", " s")
            } else if v < 5400.0 {
                format!("{:.1} min", v / 60.0).replace(".0 min", " min")
            } else {
                format!("{:.1} h", v / 3600.0).replace(".0 h", " h")
            }
        }
    }
}

/// The spacing of time labels for a span: about six labels, on whole minutes or hours.
fn label_step(span: TimeDelta) -> TimeDelta {
    let target = span / 6;
    [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440]
        .into_iter()
        .map(TimeDelta::minutes)
        .find(|s| *s >= target)
        .unwrap_or(TimeDelta::days(1))
}

/// `HH:MM`, UTC.
fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M").to_string()
}

/// A bin's span as hover text: `10:42–10:43 UTC`.
pub(crate) fn bin_span(start: DateTime<Utc>, width: TimeDelta) -> String {
    format!("{}–{} UTC", clock(start), clock(start + width))
}

/// Formats a coordinate with one decimal.
fn c(v: f64) -> String {
    format!("{v:.1}")
}

impl Chart {
    /// The largest value drawn: a series' largest value, or for stacked bars the largest stack.
    fn max(&self) -> f64 {
        let n = self.bins.len();
        match self.shape {
            Shape::Lines => self
                .series
                .iter()
                .flat_map(|s| s.values.iter().flatten().copied())
                .fold(0.0, f64::max),
            Shape::StackedBars => (0..n)
                .map(|i| {
                    self.series
                        .iter()
                        .filter_map(|s| s.values.get(i).copied().flatten())
                        .sum::<f64>()
                })
                .fold(0.0, f64::max),
        }
    }

    /// True when some series has a value.
    fn has_values(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.values.iter().any(Option::is_some))
    }

    /// The chart: a figure with its caption, the SVG and the legend.
    pub(crate) fn render(&self) -> Markup {
        let width = if self.wide { WIDE_WIDTH } else { WIDTH };
        let n = self.bins.len().max(1);
        #[allow(clippy::cast_precision_loss)]
        let column = (width - LEFT - RIGHT) / n as f64;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let top = nice_ceiling(self.max(), self.unit);
        let y = |v: f64| TOP + plot_h * (1.0 - (v / top).clamp(0.0, 1.0));
        #[allow(clippy::cast_precision_loss)]
        let x_mid = |i: usize| LEFT + column * (i as f64 + 0.5);
        #[allow(clippy::cast_precision_loss)]
        let x_left = |i: usize| LEFT + column * i as f64;
        let title_id = format!("chart-{}-title", self.id);
        let desc_id = format!("chart-{}-desc", self.id);
        let desc = self.description();
        let first = self.bins.first().copied();
        let step = label_step(self.bin * i32::try_from(n).unwrap_or(i32::MAX));
        let ticks: Vec<(usize, DateTime<Utc>)> = self
            .bins
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                let minutes = i64::from(t.hour()) * 60 + i64::from(t.minute());
                t.second() == 0 && minutes % step.num_minutes().max(1) == 0
            })
            .map(|(i, t)| (i, *t))
            .collect();
        html! {
            figure.chart.wide[self.wide] id={ "chart-" (self.id) } data-chart=(self.id)
                data-from=[first.map(|t| t.to_rfc3339())] {
                figcaption { (self.title) }
                svg viewBox={ "0 0 " (width) " " (HEIGHT) } role="img"
                    aria-labelledby={ (title_id) " " (desc_id) } {
                    title id=(title_id) { (self.title) }
                    desc id=(desc_id) { (desc) }
                    g.grid {
                        @for frac in [0.0, 0.5, 1.0] {
                            @let v = top * frac;
                            line x1=(c(LEFT)) x2=(c(width - RIGHT)) y1=(c(y(v))) y2=(c(y(v))) {}
                            text.scale x=(c(LEFT - 6.0)) y=(c(y(v) + 4.0)) text-anchor="end" { (label(v, self.unit)) }
                        }
                    }
                    g.times {
                        @for (i, t) in &ticks {
                            line.tick x1=(c(x_left(*i))) x2=(c(x_left(*i))) y1=(c(TOP + plot_h)) y2=(c(TOP + plot_h + 4.0)) {}
                            text x=(c(x_left(*i))) y=(c(HEIGHT - 6.0)) text-anchor="middle" { (clock(*t)) }
                        }
                    }
                    @match self.shape {
                        Shape::Lines => {
                            @for s in &self.series {
                                g class={ "series s-" (s.key) } data-series=(s.key) data-values=(values_attr(&s.values)) {
                                    path d=(line_path(&s.values, &x_mid, &y)) {}
                                    // A value between two gaps is a dot: a line needs two.
                                    @for (i, v) in s.values.iter().enumerate() {
                                        @if let Some(v) = v.filter(|_| isolated(&s.values, i)) {
                                            circle cx=(c(x_mid(i))) cy=(c(y(v))) r="2.2" {}
                                        }
                                    }
                                }
                            }
                        }
                        Shape::StackedBars => {
                            @for (k, s) in self.series.iter().enumerate() {
                                g class={ "series s-" (s.key) } data-series=(s.key) data-values=(values_attr(&s.values)) {
                                    @for (i, v) in s.values.iter().enumerate() {
                                        @if let Some(v) = v.filter(|v| *v > 0.0) {
                                            @let below: f64 = self.series[..k].iter().filter_map(|o| o.values.get(i).copied().flatten()).sum();
                                            rect x=(c(x_left(i) + column * 0.1)) width=(c(column * 0.8))
                                                y=(c(y(below + v))) height=(c(y(below) - y(below + v))) {}
                                        }
                                    }
                                }
                            }
                        }
                    }
                    g.hits {
                        @for (i, t) in self.bins.iter().enumerate() {
                            rect.hit x=(c(x_left(i))) y=(c(TOP)) width=(c(column)) height=(c(plot_h))
                                data-at=(t.to_rfc3339()) {
                                title { (self.tooltips.get(i).map_or("", String::as_str)) }
                            }
                        }
                    }
                }
                div.legend {
                    @for s in &self.series {
                        span class={ "key s-" (s.key) } { i {} (s.label) }
                    }
                    @if !self.has_values() {
                        span.note { (self.empty_note) }
                    }
                }
            }
        }
    }

    /// A sentence for screen readers: the span and, per series, its total or peak.
    fn description(&self) -> String {
        let mut d = match (self.bins.first(), self.bins.last()) {
            (Some(a), Some(b)) => format!(
                "From {} to {} UTC, {} bins of {} minutes.",
                clock(*a),
                clock(*b + self.bin),
                self.bins.len(),
                self.bin.num_minutes()
            ),
            _ => String::new(),
        };
        for s in &self.series {
            let known: Vec<f64> = s.values.iter().flatten().copied().collect();
            if known.is_empty() {
                let _ = write!(d, " {}: no data.", s.label);
            } else {
                let peak = known.iter().copied().fold(0.0, f64::max);
                let _ = write!(d, " {}: peak {}.", s.label, label(peak, self.unit));
            }
        }
        d
    }
}

/// True when the value at `i` has no value beside it.
fn isolated(values: &[Option<f64>], i: usize) -> bool {
    let known = |j: Option<usize>| j.and_then(|j| values.get(j)).is_some_and(Option::is_some);
    !known(i.checked_sub(1)) && !known(Some(i + 1))
}

/// Values as `data-values`: comma-separated, empty where there is none.
fn values_attr(values: &[Option<f64>]) -> String {
    values
        .iter()
        .map(|v| v.map_or_else(String::new, |v| format!("{v}")))
        .collect::<Vec<_>>()
        .join(",")
}

/// An SVG path through the values, with a new subpath after each gap.
fn line_path(
    values: &[Option<f64>],
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) -> PreEscaped<String> {
    let mut d = String::new();
    let mut pen_down = false;
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => {
                let _ = write!(
                    d,
                    "{}{} {} ",
                    if pen_down { "L" } else { "M" },
                    c(x(i)),
                    c(y(*v))
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    // Coordinates and letters only: nothing to escape.
    PreEscaped(d.trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(shape: Shape, values: Vec<Vec<Option<f64>>>) -> Chart {
        let start: DateTime<Utc> = "2026-05-02T10:00:00Z".parse().unwrap();
        let n = values[0].len();
        Chart {
            id: "t",
            title: "Test <chart>".into(),
            shape,
            unit: Unit::Count,
            bins: (0..n)
                .map(|i| start + TimeDelta::minutes(i64::try_from(i).unwrap()))
                .collect(),
            bin: TimeDelta::minutes(1),
            series: values
                .into_iter()
                .enumerate()
                .map(|(k, values)| Series {
                    key: format!("k{k}"),
                    label: format!("series {k}"),
                    values,
                })
                .collect(),
            tooltips: (0..n).map(|i| format!("bin {i} & more")).collect(),
            empty_note: "nothing yet".into(),
            wide: false,
        }
    }

    #[test]
    fn scales_round_up_to_nice_numbers() {
        assert_eq!(nice_ceiling(0.0, Unit::Count), 1.0);
        assert_eq!(nice_ceiling(7.0, Unit::Count), 10.0);
        assert_eq!(nice_ceiling(11.0, Unit::Count), 20.0);
        assert_eq!(nice_ceiling(240.0, Unit::Count), 250.0);
        assert_eq!(nice_ceiling(0.3, Unit::Seconds), 0.5);
        assert_eq!(nice_ceiling(700.0, Unit::Seconds), 900.0);
        assert_eq!(nice_ceiling(1.5, Unit::Seconds), 2.0);
        assert_eq!(label(12_000.0, Unit::Count), "12k");
        assert_eq!(label(1_234.0, Unit::Count), "1,234");
        assert_eq!(label(0.25, Unit::Seconds), "250 ms");
        assert_eq!(label(600.0, Unit::Seconds), "10 min");
        assert_eq!(label(450.0, Unit::Seconds), "7.5 min");
    }

    #[test]
    fn lines_break_at_gaps_and_carry_their_values() {
        let svg = chart(
            Shape::Lines,
            vec![vec![Some(1.0), Some(2.0), None, Some(4.0)]],
        )
        .render()
        .into_string();
        assert!(
            svg.contains(r#"data-series="k0" data-values="1,2,,4""#),
            "{svg}"
        );
        // Two subpaths: the gap lifts the pen.
        let d = svg
            .split(" d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(d.matches('M').count(), 2, "{d}");
        assert_eq!(d.matches('L').count(), 1, "{d}");
        // Only the lone value is a dot.
        assert_eq!(svg.matches("<circle").count(), 1);
        // Text is escaped; each column has its hover title.
        assert!(svg.contains("Test &lt;chart&gt;"));
        assert!(svg.contains("<title>bin 3 &amp; more</title>"));
        assert!(!svg.contains("nothing yet"));
    }

    #[test]
    fn stacked_bars_stack_and_an_empty_chart_says_so() {
        let svg = chart(
            Shape::StackedBars,
            vec![vec![Some(2.0), None], vec![Some(3.0), None]],
        )
        .render()
        .into_string();
        // The stack of 5 fills the scale (nice ceiling 5): the second bar starts where the first
        // ends.
        assert!(svg.contains(r#"data-values="2,""#));
        assert_eq!(svg.matches("<rect x=").count(), 2, "{svg}");
        let empty = chart(Shape::Lines, vec![vec![None, None]])
            .render()
            .into_string();
        assert!(empty.contains("nothing yet"));
        assert!(empty.contains("series 0: no data."));
    }
}
