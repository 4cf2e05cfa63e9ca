//! Prometheus metrics, kept in memory and rendered in the text exposition format.
//!
//! Several daemons over disjoint pin sets sit behind one Prometheus, so every series carries its
//! `pin` (and `provider`, `model` where that is what it measures): the same metric names from two
//! daemons never collide. Counters end in `_total`, times are `_seconds`, and every family has
//! `HELP` and `TYPE` lines (checked by `promtool check metrics` in the tests).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::audit::judge::PinStatus;
use crate::finding::{Code, Severity};
use crate::report::PinReport;
use crate::store::AuditRecord;

/// The exact content type Prometheus expects for the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

type Labels = Vec<(&'static str, String)>;

struct Family {
    help: &'static str,
    kind: Kind,
    series: BTreeMap<Labels, f64>,
}

/// All metric families by name, in a stable order.
#[derive(Default)]
pub struct Metrics {
    families: Mutex<BTreeMap<&'static str, Family>>,
}

/// Every family the daemon exports, so a scrape shows them all from the start.
const FAMILIES: &[(&str, Kind, &str)] = &[
    (
        "modelpin_pin_status",
        Kind::Gauge,
        "1 for the pin's status after its last audit (ok, warning, drift, inconclusive).",
    ),
    (
        "modelpin_served_model_info",
        Kind::Gauge,
        "1 for each model ID that served the pin in its last audit.",
    ),
    (
        "modelpin_served_model_mismatch",
        Kind::Gauge,
        "1 when the last audit served a model the pin does not accept.",
    ),
    (
        "modelpin_findings",
        Kind::Gauge,
        "Findings of the pin's last audit, by code and severity.",
    ),
    (
        "modelpin_cost_per_request_usd",
        Kind::Gauge,
        "Mean cost of one probe call in the last audit, USD.",
    ),
    (
        "modelpin_tokens_spent_total",
        Kind::Counter,
        "Tokens spent on probe calls, by pin and direction.",
    ),
    (
        "modelpin_cost_usd_total",
        Kind::Counter,
        "Estimated USD spent on probe calls.",
    ),
    (
        "modelpin_days_to_retirement",
        Kind::Gauge,
        "Days until the pinned model's known retirement date (negative when past).",
    ),
    (
        "modelpin_audits_total",
        Kind::Counter,
        "Audits finished, by pin and result.",
    ),
    (
        "modelpin_audits_skipped_total",
        Kind::Counter,
        "Scheduled audits skipped because the pin's previous audit was still running.",
    ),
    (
        "modelpin_calls_total",
        Kind::Counter,
        "Provider calls, by provider and outcome.",
    ),
    (
        "modelpin_retries_total",
        Kind::Counter,
        "Retried provider call attempts, by provider.",
    ),
    (
        "modelpin_last_audit_timestamp_seconds",
        Kind::Gauge,
        "Unix time the pin's last audit finished.",
    ),
    (
        "modelpin_audit_duration_seconds",
        Kind::Gauge,
        "Wall time of the pin's last audit.",
    ),
    (
        "modelpin_probe_p_value",
        Kind::Gauge,
        "Adjusted p-value of each behaviour test in the pin's last audit.",
    ),
    (
        "modelpin_notifications_total",
        Kind::Counter,
        "Alert notifications, by channel and result.",
    ),
    (
        "modelpin_store_write_failures_total",
        Kind::Counter,
        "Audits that could not be written to the store.",
    ),
];

impl Metrics {
    #[must_use]
    pub fn new() -> Metrics {
        let families = FAMILIES
            .iter()
            .map(|(name, kind, help)| {
                (
                    *name,
                    Family {
                        help,
                        kind: *kind,
                        series: BTreeMap::new(),
                    },
                )
            })
            .collect();
        Metrics {
            families: Mutex::new(families),
        }
    }

    fn with<R>(&self, name: &'static str, f: impl FnOnce(&mut Family) -> R) -> R {
        let mut families = self.families.lock().expect("metrics lock");
        let family = families
            .get_mut(name)
            .unwrap_or_else(|| panic!("metric {name} is not declared"));
        f(family)
    }

    pub fn set(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        let labels = own(labels);
        self.with(name, |f| {
            f.series.insert(labels, value);
        });
    }

    pub fn add(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        let labels = own(labels);
        self.with(name, |f| *f.series.entry(labels).or_insert(0.0) += value);
    }

    /// Drops every series of `name` whose `label` equals `value` (a pin's old served models).
    pub fn clear(&self, name: &'static str, label: &'static str, value: &str) {
        self.with(name, |f| {
            f.series
                .retain(|labels, _| !labels.iter().any(|(k, v)| *k == label && v == value));
        });
    }

    /// The text exposition format.
    #[must_use]
    pub fn render(&self) -> String {
        let families = self.families.lock().expect("metrics lock");
        let mut out = String::new();
        for (name, family) in families.iter() {
            let kind = match family.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# HELP {name} {}", family.help);
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in &family.series {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    render_labels(labels),
                    render_value(*value)
                );
            }
        }
        out
    }
}

fn own(labels: &[(&'static str, &str)]) -> Labels {
    let mut owned: Labels = labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    owned.sort();
    owned
}

fn render_labels(labels: &Labels) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Label values escape backslash, double quote and newline.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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

/// Updates every series one stored audit touches.
pub fn record(m: &Metrics, record: &AuditRecord) {
    let p = &record.pin;
    status_and_identity(m, p);
    findings(m, p);
    spend_and_calls(m, p);
    statistics_and_lifecycle(m, p);
    m.set(
        "modelpin_last_audit_timestamp_seconds",
        &[("pin", &p.id)],
        record.finished_at.timestamp() as f64,
    );
    let took = (record.finished_at - record.started_at).num_milliseconds() as f64 / 1000.0;
    m.set("modelpin_audit_duration_seconds", &[("pin", &p.id)], took);
}

fn status_and_identity(m: &Metrics, p: &PinReport) {
    let base = [
        ("pin", p.id.as_str()),
        ("provider", p.provider.as_str()),
        ("model", p.model.as_str()),
    ];
    for status in [
        PinStatus::Ok,
        PinStatus::Warning,
        PinStatus::Drift,
        PinStatus::Inconclusive,
    ] {
        let mut labels = base.to_vec();
        labels.push(("status", status.as_str()));
        m.set(
            "modelpin_pin_status",
            &labels,
            if status == p.status { 1.0 } else { 0.0 },
        );
    }
    m.clear("modelpin_served_model_info", "pin", &p.id);
    for served in p.served_models.keys() {
        let mut labels = base.to_vec();
        labels.push(("served", served.as_str()));
        m.set("modelpin_served_model_info", &labels, 1.0);
    }
    let mismatch = p
        .findings
        .iter()
        .any(|f| f.code == Code::ServedModelMismatch);
    m.set(
        "modelpin_served_model_mismatch",
        &[("pin", &p.id)],
        if mismatch { 1.0 } else { 0.0 },
    );
}

fn findings(m: &Metrics, p: &PinReport) {
    m.clear("modelpin_findings", "pin", &p.id);
    let mut counts: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for f in &p.findings {
        let severity = f.severity.map_or("none", Severity::as_str);
        *counts.entry((f.code.as_str(), severity)).or_insert(0.0) += 1.0;
    }
    for ((code, severity), n) in counts {
        m.set(
            "modelpin_findings",
            &[("pin", &p.id), ("code", code), ("severity", severity)],
            n,
        );
    }
}

fn spend_and_calls(m: &Metrics, p: &PinReport) {
    if let (Some(cost), true) = (p.cost_usd, p.calls.ok > 0) {
        m.set(
            "modelpin_cost_per_request_usd",
            &[("pin", &p.id)],
            cost / p.calls.ok as f64,
        );
        m.add("modelpin_cost_usd_total", &[("pin", &p.id)], cost);
    }
    m.add(
        "modelpin_tokens_spent_total",
        &[("pin", &p.id), ("direction", "input")],
        p.tokens.input as f64,
    );
    m.add(
        "modelpin_tokens_spent_total",
        &[("pin", &p.id), ("direction", "output")],
        p.tokens.output as f64,
    );
    m.add(
        "modelpin_audits_total",
        &[("pin", &p.id), ("result", p.status.as_str())],
        1.0,
    );
    m.add(
        "modelpin_calls_total",
        &[("provider", &p.provider), ("outcome", "ok")],
        p.calls.ok as f64,
    );
    m.add(
        "modelpin_calls_total",
        &[("provider", &p.provider), ("outcome", "failed")],
        p.calls.failed as f64,
    );
    m.add(
        "modelpin_retries_total",
        &[("provider", &p.provider)],
        p.calls.retried as f64,
    );
}

fn statistics_and_lifecycle(m: &Metrics, p: &PinReport) {
    m.clear("modelpin_probe_p_value", "pin", &p.id);
    for t in &p.behaviour {
        let probes = t.probes.join(",");
        let labels = [
            ("pin", p.id.as_str()),
            ("probes", probes.as_str()),
            ("test", t.test.as_str()),
        ];
        m.set(
            "modelpin_probe_p_value",
            &labels,
            t.adjusted_p.unwrap_or(t.p_value),
        );
    }
    match p.lifecycle.as_ref().and_then(|l| l.days_left) {
        Some(days) => m.set(
            "modelpin_days_to_retirement",
            &[("pin", &p.id), ("model", &p.model)],
            days as f64,
        ),
        None => m.clear("modelpin_days_to_retirement", "pin", &p.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_help_type_and_escaped_labels() {
        let m = Metrics::new();
        m.add(
            "modelpin_audits_total",
            &[("pin", "a"), ("result", "ok")],
            1.0,
        );
        m.add(
            "modelpin_audits_total",
            &[("result", "ok"), ("pin", "a")],
            1.0,
        );
        m.set(
            "modelpin_served_model_info",
            &[("pin", "we\"ird\\\n"), ("served", "x")],
            1.0,
        );
        let text = m.render();
        assert!(text.contains("# HELP modelpin_audits_total Audits finished, by pin and result.\n# TYPE modelpin_audits_total counter\nmodelpin_audits_total{pin=\"a\",result=\"ok\"} 2\n"), "{text}");
        assert!(
            text.contains(r#"modelpin_served_model_info{pin="we\"ird\\\n",served="x"} 1"#),
            "{text}"
        );
        m.clear("modelpin_served_model_info", "served", "x");
        assert!(!m.render().contains("served=\"x\""));
    }

    #[test]
    fn special_values() {
        assert_eq!(render_value(f64::NAN), "NaN");
        assert_eq!(render_value(f64::INFINITY), "+Inf");
        assert_eq!(render_value(0.25), "0.25");
        assert_eq!(render_value(3.0), "3");
    }
}
