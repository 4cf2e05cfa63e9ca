//! One metric family: its name, HELP text and kind fixed when it is registered, its label set
//! fixed by type (after linkerd2-proxy's `prom::Family<Labels, Counter>`).
//!
//! A family cannot be fed another family's labels, a gauge has no `inc`, a counter no `set`:
//! mistakes that a family looked up by name with labels given as strings only showed in the
//! scrape. Series are kept under their rendered label pairs, so the exposition is ordered as it
//! always was (by label name, then value) whatever the label struct's field order.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::sync::Mutex;

/// A family's label set: one struct per set, its fields the labels.
pub trait Labels {
    /// Each label's name and value, in any order.
    fn pairs(&self) -> Vec<(&'static str, String)>;
}

/// How a value is written as a label value.
pub trait LabelValue {
    fn label(&self) -> String;
}

impl LabelValue for String {
    fn label(&self) -> String {
        self.clone()
    }
}

impl LabelValue for u16 {
    fn label(&self) -> String {
        self.to_string()
    }
}

/// The `TYPE` of a family: `Counter` or `Gauge`, as a type so each has only its own operations.
pub trait Kind {
    const TYPE: &'static str;
}

/// Only goes up (`inc`, `inc_by`), and is present at 0 once `declare`d.
pub enum Counter {}

/// Set to the latest value (`set`); a gauge's series can be dropped (`retain`).
pub enum Gauge {}

impl Kind for Counter {
    const TYPE: &'static str = "counter";
}

impl Kind for Gauge {
    const TYPE: &'static str = "gauge";
}

/// Label pairs sorted by name: the key a series is kept and rendered under.
type Key = Vec<(&'static str, String)>;

pub struct Family<L, K> {
    name: &'static str,
    help: &'static str,
    series: Mutex<BTreeMap<Key, (L, f64)>>,
    kind: PhantomData<K>,
}

impl<L: Labels, K: Kind> Family<L, K> {
    /// Registers the family; it is rendered (HELP and TYPE) from the first scrape on.
    #[must_use]
    pub fn new(name: &'static str, help: &'static str) -> Family<L, K> {
        Family {
            name,
            help,
            series: Mutex::new(BTreeMap::new()),
            kind: PhantomData,
        }
    }

    /// Applies `f` to the series of `labels`, created at 0 if new.
    fn update(&self, labels: L, f: impl FnOnce(&mut f64)) {
        let mut key = labels.pairs();
        key.sort();
        let mut series = self.series.lock().expect("metrics lock");
        f(&mut series.entry(key).or_insert((labels, 0.0)).1);
    }
}

impl<L: Labels> Family<L, Counter> {
    pub fn inc(&self, labels: L) {
        self.inc_by(labels, 1.0);
    }

    pub fn inc_by(&self, labels: L, by: f64) {
        self.update(labels, |value| *value += by);
    }

    /// The series at 0 unless it exists, so a rate over it works from the first scrape.
    pub fn declare(&self, labels: L) {
        self.update(labels, |_| {});
    }
}

impl<L: Labels> Family<L, Gauge> {
    pub fn set(&self, labels: L, value: f64) {
        self.update(labels, |v| *v = value);
    }

    /// The series at 0 unless it exists.
    pub fn declare(&self, labels: L) {
        self.update(labels, |_| {});
    }

    /// Drops every series whose labels `keep` refuses (a pin's old served models, say).
    pub fn retain(&self, keep: impl Fn(&L) -> bool) {
        let mut series = self.series.lock().expect("metrics lock");
        series.retain(|_, (labels, _)| keep(labels));
    }
}

/// What the exposition needs of a family, whatever its labels and kind.
pub trait Exposed {
    fn name(&self) -> &'static str;
    fn render(&self, out: &mut String);
}

impl<L: Labels, K: Kind> Exposed for Family<L, K> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn render(&self, out: &mut String) {
        let name = self.name;
        let _ = writeln!(out, "# HELP {name} {}", self.help);
        let _ = writeln!(out, "# TYPE {name} {}", K::TYPE);
        let series = self.series.lock().expect("metrics lock");
        for (key, (_, value)) in series.iter() {
            let _ = writeln!(out, "{name}{} {}", render_labels(key), render_value(*value));
        }
    }
}

fn render_labels(labels: &Key) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Label values escape backslash, double quote and newline, and show control, bidirectional
/// and invisible characters as visible escapes.
fn escape(value: &str) -> String {
    crate::text::metric_label_value(value)
}

fn render_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        }
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::render_value;

    #[test]
    fn special_values() {
        assert_eq!(render_value(f64::NAN), "NaN");
        assert_eq!(render_value(f64::INFINITY), "+Inf");
        assert_eq!(render_value(0.25), "0.25");
        assert_eq!(render_value(3.0), "3");
    }
}
