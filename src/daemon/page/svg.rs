//! The page's pictures as inline SVG: a strip of the models served, and small line charts. Each is `role="img"` with a `<title>` that says in words what it shows, and colours
//! come from CSS classes so both colour schemes apply. Numbers are written with one decimal at
//! most, which is finer than a pixel at these sizes.

use std::fmt::Write as _;

use crate::daemon::page::Mark;
use crate::daemon::page::html::esc;
use crate::finding::PinStatus;

/// Width of one audit in a strip, gap included.
const MARK_STEP: usize = 8;
const MARK_WIDTH: usize = 6;
const STRIP_HEIGHT: usize = 18;

/// Size of a chart's drawing area, in its own units (scaled by CSS to the column).
const CHART_W: f64 = 300.0;
const CHART_H: f64 = 60.0;
const PAD: f64 = 4.0;

/// The CSS class that colours a status.
#[must_use]
pub fn status_class(status: PinStatus) -> &'static str {
    match status {
        PinStatus::Ok => "k",
        PinStatus::Warning => "w",
        PinStatus::Inconclusive => "i",
        PinStatus::Drift => "d",
    }
}

/// "Last 30 audits: 28 ok, 2 drift; latest drift" — the strip in words.
#[must_use]
pub fn strip_summary(marks: &[Mark]) -> String {
    let Some(last) = marks.last() else {
        return "No audits stored yet".to_owned();
    };
    let counts: Vec<String> = PinStatus::ALL
        .iter()
        .map(|s| (s, marks.iter().filter(|m| m.status == *s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    let audits = if marks.len() == 1 { "audit" } else { "audits" };
    format!(
        "Last {} {audits}: {}; latest {}",
        marks.len(),
        counts.join(", "),
        last.status.as_str()
    )
}

/// How a chart maps values to height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// From the smallest value to the largest.
    Linear,
    /// p-values on a log scale, `p = 1` (no sign of drift) at the top down to `1e-8` at the
    /// bottom, with a dashed line at the given alpha and the drift side below it shaded.
    PValue { alpha: f64 },
    /// Accumulated evidence on a log scale, 1 or less at the top down to ten times the
    /// threshold at the bottom, with a dashed line at the threshold and the alarm side below it
    /// shaded.
    Evidence { threshold: f64 },
}

impl Scale {
    /// Where the dashed line goes, if anywhere.
    fn marker(self) -> Option<f64> {
        match self {
            Scale::Linear => None,
            Scale::PValue { alpha } => Some(alpha),
            Scale::Evidence { threshold } => Some(threshold),
        }
    }
}

/// A small line chart of `values` (oldest first; `None` where an audit has no value), described
/// in words by `title`.
#[must_use]
pub fn chart(title: &str, values: &[Option<f64>], scale: Scale) -> String {
    let mut out = format!(
        "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 {CHART_W} {CHART_H}\" preserveAspectRatio=\"none\"><title>{}</title><rect class=\"frame\" width=\"{CHART_W}\" height=\"{CHART_H}\"/>",
        esc(title)
    );
    let y = y_of(values, scale);
    if let Some(marker) = scale.marker() {
        let line = y(marker);
        let _ = write!(
            out,
            "<rect class=\"zone\" y=\"{line:.1}\" width=\"{CHART_W}\" height=\"{:.1}\"/><line class=\"alpha\" x1=\"0\" x2=\"{CHART_W}\" y1=\"{line:.1}\" y2=\"{line:.1}\"/>",
            CHART_H - line
        );
    }
    let step = if values.len() > 1 {
        (CHART_W - 2.0 * PAD) / (values.len() - 1) as f64
    } else {
        0.0
    };
    for run in runs(values) {
        let points: Vec<String> = run
            .iter()
            .map(|(i, v)| format!("{:.1},{:.1}", PAD + *i as f64 * step, y(*v)))
            .collect();
        if let [only] = points.as_slice() {
            let (cx, cy) = only.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                out,
                "<circle class=\"dot\" cx=\"{cx}\" cy=\"{cy}\" r=\"2\"/>"
            );
        } else {
            let _ = write!(
                out,
                "<polyline class=\"line\" points=\"{}\"/>",
                points.join(" ")
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The vertical position of a value, for the values' range or the p-value scale.
fn y_of(values: &[Option<f64>], scale: Scale) -> Box<dyn Fn(f64) -> f64> {
    let span = CHART_H - 2.0 * PAD;
    match scale {
        Scale::Linear => {
            let finite = values.iter().flatten().copied().filter(|v| v.is_finite());
            let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
            let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
            if hi > lo {
                Box::new(move |v| CHART_H - PAD - ((v - lo) / (hi - lo)).clamp(0.0, 1.0) * span)
            } else {
                // A constant series is a level line across the middle.
                Box::new(move |_| CHART_H / 2.0)
            }
        }
        // Smaller p is further down: the drift side of the alpha line is below it.
        Scale::PValue { .. } => Box::new(move |p| {
            let depth = (-p.max(1e-300).log10()).clamp(0.0, 8.0) / 8.0;
            PAD + depth * span
        }),
        Scale::Evidence { threshold } => {
            let bottom = (threshold.max(10.0) * 10.0).log10();
            Box::new(move |v| {
                let depth = (v.max(1.0).log10() / bottom).clamp(0.0, 1.0);
                PAD + depth * span
            })
        }
    }
}

/// Consecutive runs of present, finite values, with their positions.
fn runs(values: &[Option<f64>]) -> Vec<Vec<(usize, f64)>> {
    let mut runs = vec![Vec::new()];
    for (i, v) in values.iter().enumerate() {
        match v.filter(|v| v.is_finite()) {
            Some(v) => runs.last_mut().map_or((), |r| r.push((i, v))),
            None => runs.push(Vec::new()),
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// A strip of audits coloured by the model each one was mostly served: `served[i]` is the index
/// of that model in the legend (`None` when nothing answered).
#[must_use]
pub fn served_strip(title: &str, served: &[Option<usize>]) -> String {
    let width = (served.len() * MARK_STEP).max(MARK_STEP);
    let mut out = format!(
        "<svg class=\"sstrip\" role=\"img\" width=\"{width}\" height=\"{STRIP_HEIGHT}\" viewBox=\"0 0 {width} {STRIP_HEIGHT}\"><title>{}</title>",
        esc(title)
    );
    for (i, model) in served.iter().enumerate() {
        if let Some(model) = model {
            let _ = write!(
                out,
                "<rect x=\"{}\" width=\"{MARK_WIDTH}\" height=\"{STRIP_HEIGHT}\" class=\"{}\"/>",
                i * MARK_STEP,
                model_class(*model)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Colour classes for served models, in legend order; the last is every model after them.
pub const MODEL_CLASSES: [&str; 6] = ["m0", "m1", "m2", "m3", "m4", "m5"];

#[must_use]
pub fn model_class(index: usize) -> &'static str {
    MODEL_CLASSES[index.min(MODEL_CLASSES.len() - 1)]
}

/// A legend swatch in a model's colour.
#[must_use]
pub fn swatch(index: usize) -> String {
    format!(
        "<svg class=\"sw\" width=\"10\" height=\"10\" aria-hidden=\"true\"><rect width=\"10\" height=\"10\" class=\"{}\"/></svg>",
        model_class(index)
    )
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::{Scale, chart, runs, strip_summary};
    use crate::daemon::page::Mark;
    use crate::finding::PinStatus;

    fn mark(at: i64, status: PinStatus) -> Mark {
        Mark {
            started_at: DateTime::from_timestamp(at, 0).unwrap(),
            status,
            traffic: false,
        }
    }

    #[test]
    fn a_strip_says_in_words_what_it_shows() {
        let marks = [
            mark(1_800_000_000, PinStatus::Ok),
            mark(1_800_003_600, PinStatus::Drift),
        ];
        assert_eq!(
            strip_summary(&marks),
            "Last 2 audits: 1 ok, 1 drift; latest drift"
        );
        assert_eq!(strip_summary(&marks[..1]), "Last 1 audit: 1 ok; latest ok");
        assert_eq!(strip_summary(&[]), "No audits stored yet");
    }

    /// The y of the dashed alpha line and of each plotted point, read back from the SVG.
    fn alpha_and_points(svg: &str) -> (f64, Vec<(f64, f64)>) {
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[at..].split('"').next().unwrap().parse().unwrap()
        };
        let line = svg.split("<line ").nth(1).unwrap();
        assert!(line.contains("class=\"alpha\""), "{svg}");
        let alpha = attr(line, "y1");
        let mut points = Vec::new();
        for poly in svg.split("<polyline ").skip(1) {
            let list = poly
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            for pair in list.split(' ') {
                let (x, y) = pair.split_once(',').unwrap();
                points.push((x.parse().unwrap(), y.parse().unwrap()));
            }
        }
        for dot in svg.split("<circle ").skip(1) {
            points.push((attr(dot, "cx"), attr(dot, "cy")));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        (alpha, points)
    }

    #[test]
    fn a_p_value_below_alpha_is_drawn_on_the_drift_side_of_the_line_the_caption_names() {
        let alpha = 0.001;
        let ps = [1.0, 0.2, 0.0011, 0.0009, 1e-6, 1e-12];
        let values: Vec<Option<f64>> = ps.iter().copied().map(Some).collect();
        let svg = chart("p", &values, Scale::PValue { alpha });
        let (line, points) = alpha_and_points(&svg);
        assert_eq!(points.len(), ps.len(), "{svg}");
        // SVG y grows downwards: "below the dashed line" is a larger y.
        for (p, (_, y)) in ps.iter().zip(&points) {
            if *p < alpha {
                assert!(
                    *y > line,
                    "p = {p} drawn at y {y}, not below the alpha line at {line}"
                );
            } else {
                assert!(
                    *y < line,
                    "p = {p} drawn at y {y}, not above the alpha line at {line}"
                );
            }
        }
        // A healthy p = 1 sits at the top; smaller p goes further down.
        assert!(points.windows(2).all(|w| w[0].1 <= w[1].1), "{points:?}");
        // The shaded drift zone starts at the line and covers what is below it.
        let zone = svg.split("<rect class=\"zone\" ").nth(1).unwrap();
        let zone_y: f64 = zone
            .split("y=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((zone_y - line).abs() < 1e-9, "{svg}");
        // A lone value is a dot, on the same side.
        let (line, dot) = alpha_and_points(&chart("p", &[Some(0.0001)], Scale::PValue { alpha }));
        assert!(dot[0].1 > line);
    }

    #[test]
    fn charts_break_at_missing_values_and_survive_odd_numbers() {
        assert_eq!(runs(&[Some(1.0), None, Some(2.0), Some(f64::NAN)]).len(), 2);
        let svg = chart(
            "cost <per> call",
            &[Some(1.0), Some(1.0), None, Some(f64::INFINITY), Some(0.0)],
            Scale::Linear,
        );
        assert!(
            svg.contains("<title>cost &lt;per&gt; call</title>"),
            "{svg}"
        );
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("<circle"), "a lone value is a dot: {svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let p = chart("p", &[Some(0.0), Some(1.0)], Scale::PValue { alpha: 0.001 });
        let e = chart(
            "e",
            &[Some(0.0), Some(1e300), Some(f64::INFINITY)],
            Scale::Evidence { threshold: 0.0 },
        );
        assert!(!e.contains("NaN") && !e.contains("inf"), "{e}");
        assert!(p.contains("class=\"alpha\""), "{p}");
        assert!(!chart("empty", &[], Scale::Linear).contains("NaN"));
    }
}
