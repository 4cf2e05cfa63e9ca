//! Prometheus metrics, kept in memory and rendered in the text exposition format.
//!
//! Several daemons over disjoint pin sets sit behind one Prometheus, so every series carries its
//! `pin` (and `provider`, `model` where that is what it measures): the same metric names from two
//! daemons never collide. Counters end in `_total`, times are `_seconds`, and every family has
//! `HELP` and `TYPE` lines (checked by `promtool check metrics` in the tests).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::alert::deliver::DeliveryResult;
use crate::config::Config;
use crate::finding::{Code, PinStatus, Severity};
use crate::report::PinReport;
use crate::store::AuditRecord;

/// The exact content type Prometheus expects for the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// Every family the daemon exports. A closed set: a series can only be recorded into a family
/// that exists, and each family's help and type are one `match` away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    PinStatus,
    ServedModelInfo,
    ServedModelMismatch,
    Findings,
    CostPerRequestUsd,
    TokensSpentTotal,
    CostUsdTotal,
    RetirementTimestampSeconds,
    AuditsTotal,
    AuditsSkippedTotal,
    CallsTotal,
    RetriesTotal,
    LastAuditTimestampSeconds,
    AuditDurationSeconds,
    ProbePValue,
    NotificationsTotal,
    StoreWriteFailuresTotal,
    TrafficSpansTotal,
    TrafficSpansReceivedTotal,
    TrafficRequestsTotal,
    TrafficServedModelMismatch,
}

impl Family {
    const ALL: [Family; 21] = [
        Family::PinStatus,
        Family::ServedModelInfo,
        Family::ServedModelMismatch,
        Family::Findings,
        Family::CostPerRequestUsd,
        Family::TokensSpentTotal,
        Family::CostUsdTotal,
        Family::RetirementTimestampSeconds,
        Family::AuditsTotal,
        Family::AuditsSkippedTotal,
        Family::CallsTotal,
        Family::RetriesTotal,
        Family::LastAuditTimestampSeconds,
        Family::AuditDurationSeconds,
        Family::ProbePValue,
        Family::NotificationsTotal,
        Family::StoreWriteFailuresTotal,
        Family::TrafficSpansTotal,
        Family::TrafficSpansReceivedTotal,
        Family::TrafficRequestsTotal,
        Family::TrafficServedModelMismatch,
    ];

    fn name(self) -> &'static str {
        match self {
            Family::PinStatus => "modelpin_pin_status",
            Family::ServedModelInfo => "modelpin_served_model_info",
            Family::ServedModelMismatch => "modelpin_served_model_mismatch",
            Family::Findings => "modelpin_findings",
            Family::CostPerRequestUsd => "modelpin_cost_per_request_usd",
            Family::TokensSpentTotal => "modelpin_tokens_spent_total",
            Family::CostUsdTotal => "modelpin_cost_usd_total",
            Family::RetirementTimestampSeconds => "modelpin_retirement_timestamp_seconds",
            Family::AuditsTotal => "modelpin_audits_total",
            Family::AuditsSkippedTotal => "modelpin_audits_skipped_total",
            Family::CallsTotal => "modelpin_calls_total",
            Family::RetriesTotal => "modelpin_retries_total",
            Family::LastAuditTimestampSeconds => "modelpin_last_audit_timestamp_seconds",
            Family::AuditDurationSeconds => "modelpin_audit_duration_seconds",
            Family::ProbePValue => "modelpin_probe_p_value",
            Family::NotificationsTotal => "modelpin_notifications_total",
            Family::StoreWriteFailuresTotal => "modelpin_store_write_failures_total",
            Family::TrafficSpansTotal => "modelpin_traffic_spans_total",
            Family::TrafficSpansReceivedTotal => "modelpin_traffic_spans_received_total",
            Family::TrafficRequestsTotal => "modelpin_traffic_requests_total",
            Family::TrafficServedModelMismatch => "modelpin_traffic_served_model_mismatch",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Family::TokensSpentTotal
            | Family::CostUsdTotal
            | Family::AuditsTotal
            | Family::AuditsSkippedTotal
            | Family::CallsTotal
            | Family::RetriesTotal
            | Family::NotificationsTotal
            | Family::StoreWriteFailuresTotal
            | Family::TrafficSpansTotal
            | Family::TrafficSpansReceivedTotal
            | Family::TrafficRequestsTotal => Kind::Counter,
            Family::PinStatus
            | Family::ServedModelInfo
            | Family::ServedModelMismatch
            | Family::Findings
            | Family::CostPerRequestUsd
            | Family::RetirementTimestampSeconds
            | Family::LastAuditTimestampSeconds
            | Family::AuditDurationSeconds
            | Family::ProbePValue
            | Family::TrafficServedModelMismatch => Kind::Gauge,
        }
    }

    fn help(self) -> &'static str {
        match self {
            Family::PinStatus => {
                "1 for the pin's status after its last audit (ok, warning, drift, inconclusive)."
            }
            Family::ServedModelInfo => "1 for each model ID that served the pin in its last audit.",
            Family::ServedModelMismatch => {
                "1 when the last audit served a model the pin does not accept."
            }
            Family::Findings => "Findings of the pin's last audit, by code and severity.",
            Family::CostPerRequestUsd => "Mean cost of one probe call in the last audit, USD.",
            Family::TokensSpentTotal => "Tokens spent on probe calls, by pin and direction.",
            Family::CostUsdTotal => "Estimated USD spent on probe calls.",
            Family::RetirementTimestampSeconds => {
                "Unix time of the pinned model's known retirement; days left: (this - time()) / 86400."
            }
            Family::AuditsTotal => "Audits finished, by pin and result.",
            Family::AuditsSkippedTotal => {
                "Scheduled audits skipped because the pin's previous audit was still running."
            }
            Family::CallsTotal => "Provider calls, by provider and outcome.",
            Family::RetriesTotal => "Retried provider call attempts, by provider.",
            Family::LastAuditTimestampSeconds => "Unix time the pin's last audit finished.",
            Family::AuditDurationSeconds => "Wall time of the pin's last audit.",
            Family::ProbePValue => {
                "Adjusted p-value of each behaviour test in the pin's last audit."
            }
            Family::NotificationsTotal => "Alert notifications, by channel and result.",
            Family::StoreWriteFailuresTotal => {
                "Failed attempts to write an audit to the store (each audit is retried until stored)."
            }
            Family::TrafficSpansTotal => {
                "GenAI spans received on /v1/traces that matched the pin, by served model."
            }
            Family::TrafficSpansReceivedTotal => {
                "Spans received on /v1/traces, by result (matched, unmatched, not_genai, rejected)."
            }
            Family::TrafficRequestsTotal => "Requests to /v1/traces, by HTTP status.",
            Family::TrafficServedModelMismatch => {
                "1 when the pin's last traffic verdict saw a model the pin does not accept."
            }
        }
    }
}

type Labels = Vec<(&'static str, String)>;

/// Every series of every family, in a stable order.
pub struct Metrics {
    series: Mutex<BTreeMap<Family, BTreeMap<Labels, f64>>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

/// Results a call is counted under in `modelpin_calls_total`.
const CALL_OUTCOMES: [&str; 2] = ["ok", "failed"];
/// Results of `modelpin_traffic_spans_received_total`.
const SPAN_RESULTS: [&str; 4] = ["matched", "unmatched", "not_genai", "rejected"];
/// Statuses of `modelpin_traffic_requests_total` present from the first scrape.
const TRAFFIC_STATUSES: [&str; 2] = ["200", "429"];
/// Directions of `modelpin_tokens_spent_total`.
const DIRECTIONS: [&str; 2] = ["input", "output"];

impl Metrics {
    #[must_use]
    pub fn new() -> Metrics {
        let series = Family::ALL
            .iter()
            .map(|family| (*family, BTreeMap::new()))
            .collect();
        let metrics = Metrics {
            series: Mutex::new(series),
        };
        metrics.add(Family::StoreWriteFailuresTotal, &[], 0.0);
        for result in SPAN_RESULTS {
            metrics.add(
                Family::TrafficSpansReceivedTotal,
                &[("result", result)],
                0.0,
            );
        }
        for status in TRAFFIC_STATUSES {
            metrics.add(Family::TrafficRequestsTotal, &[("status", status)], 0.0);
        }
        metrics
    }

    /// Counters at 0 for every label the config makes known (pins, providers, channels), so a
    /// rate over them works from the first scrape; existing counts are kept.
    pub fn declare(&self, config: &Config) {
        for pin in &config.pins {
            let id = pin.id.as_str();
            self.add(Family::AuditsSkippedTotal, &[("pin", id)], 0.0);
            for status in PinStatus::ALL {
                self.add(
                    Family::AuditsTotal,
                    &[("pin", id), ("result", status.as_str())],
                    0.0,
                );
            }
            for direction in DIRECTIONS {
                self.add(
                    Family::TokensSpentTotal,
                    &[("pin", id), ("direction", direction)],
                    0.0,
                );
            }
            self.add(Family::CostUsdTotal, &[("pin", id)], 0.0);
        }
        for provider in &config.providers {
            let name = provider.name.as_str();
            for outcome in CALL_OUTCOMES {
                self.add(
                    Family::CallsTotal,
                    &[("provider", name), ("outcome", outcome)],
                    0.0,
                );
            }
            self.add(Family::RetriesTotal, &[("provider", name)], 0.0);
        }
        for channel in &config.alerts {
            for result in DeliveryResult::ALL {
                self.add(
                    Family::NotificationsTotal,
                    &[("channel", &channel.name), ("result", result.as_str())],
                    0.0,
                );
            }
        }
    }

    /// A scheduled audit was skipped: the pin's previous one still ran.
    pub fn audit_skipped(&self, pin: &str) {
        self.add(Family::AuditsSkippedTotal, &[("pin", pin)], 1.0);
    }

    /// An audit could not be written to the store.
    pub fn store_write_failed(&self) {
        self.add(Family::StoreWriteFailuresTotal, &[], 1.0);
    }

    /// One request to `/v1/traces`, by the status it was answered with.
    pub fn traffic_request(&self, status: u16) {
        self.add(
            Family::TrafficRequestsTotal,
            &[("status", &status.to_string())],
            1.0,
        );
    }

    /// The spans of one request: matched ones per (pin, served label), and all by result.
    pub fn traffic_spans(
        &self,
        served: &BTreeMap<(String, String), u64>,
        results: [(&'static str, u64); 4],
    ) {
        let mut all = self.series.lock().expect("metrics lock");
        let spans = all.entry(Family::TrafficSpansTotal).or_default();
        for ((pin, label), n) in served {
            let labels = own(&[("pin", pin), ("served", label)]);
            *spans.entry(labels).or_insert(0.0) += *n as f64;
        }
        let received = all.entry(Family::TrafficSpansReceivedTotal).or_default();
        for (result, n) in results {
            *received.entry(own(&[("result", result)])).or_insert(0.0) += n as f64;
        }
    }

    /// A pin's traffic verdict.
    pub fn traffic_verdict(&self, p: &PinReport) {
        self.set(
            Family::TrafficServedModelMismatch,
            &[("pin", &p.id)],
            mismatch(p),
        );
    }

    /// One delivery attempt of a notification.
    pub fn notification(&self, channel: &str, result: DeliveryResult) {
        self.add(
            Family::NotificationsTotal,
            &[("channel", channel), ("result", result.as_str())],
            1.0,
        );
    }

    fn with<R>(&self, family: Family, f: impl FnOnce(&mut BTreeMap<Labels, f64>) -> R) -> R {
        let mut all = self.series.lock().expect("metrics lock");
        f(all.entry(family).or_default())
    }

    fn set(&self, family: Family, labels: &[(&'static str, &str)], value: f64) {
        let labels = own(labels);
        self.with(family, |series| {
            series.insert(labels, value);
        });
    }

    fn add(&self, family: Family, labels: &[(&'static str, &str)], value: f64) {
        let labels = own(labels);
        self.with(family, |series| {
            *series.entry(labels).or_insert(0.0) += value;
        });
    }

    /// Drops every series of `family` whose `label` equals `value` (a pin's old served models).
    fn clear(&self, family: Family, label: &'static str, value: &str) {
        self.with(family, |series| {
            series.retain(|labels, _| !labels.iter().any(|(k, v)| *k == label && v == value));
        });
    }

    /// The text exposition format.
    #[must_use]
    pub fn render(&self) -> String {
        let all = self.series.lock().expect("metrics lock");
        let mut families: Vec<(&Family, &BTreeMap<Labels, f64>)> = all.iter().collect();
        families.sort_by_key(|(family, _)| family.name());
        let mut out = String::new();
        for (family, series) in families {
            let name = family.name();
            let kind = match family.kind() {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# HELP {name} {}", family.help());
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in series {
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

/// Updates every series one stored audit touches.
pub fn record(m: &Metrics, record: &AuditRecord) {
    let p = &record.pin;
    status_and_identity(m, p);
    findings(m, p);
    spend_and_calls(m, p);
    statistics_and_lifecycle(m, p);
    m.set(
        Family::LastAuditTimestampSeconds,
        &[("pin", &p.id)],
        record.finished_at.timestamp() as f64,
    );
    let took = (record.finished_at - record.started_at).num_milliseconds() as f64 / 1000.0;
    m.set(Family::AuditDurationSeconds, &[("pin", &p.id)], took);
}

fn status_and_identity(m: &Metrics, p: &PinReport) {
    let base = [
        ("pin", p.id.as_str()),
        ("provider", p.provider.as_str()),
        ("model", p.model.as_str()),
    ];
    for status in PinStatus::ALL {
        let mut labels = base.to_vec();
        labels.push(("status", status.as_str()));
        m.set(
            Family::PinStatus,
            &labels,
            if status == p.status { 1.0 } else { 0.0 },
        );
    }
    m.clear(Family::ServedModelInfo, "pin", &p.id);
    for served in p.served_models.keys() {
        let mut labels = base.to_vec();
        labels.push(("served", served.as_str()));
        m.set(Family::ServedModelInfo, &labels, 1.0);
    }
    m.set(Family::ServedModelMismatch, &[("pin", &p.id)], mismatch(p));
}

/// 1 when the pin was served a model it does not accept, else 0.
fn mismatch(p: &PinReport) -> f64 {
    if p.findings
        .iter()
        .any(|f| f.code == Code::ServedModelMismatch)
    {
        1.0
    } else {
        0.0
    }
}

fn findings(m: &Metrics, p: &PinReport) {
    m.clear(Family::Findings, "pin", &p.id);
    let mut counts: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for f in &p.findings {
        let severity = f.severity.map_or("none", Severity::as_str);
        *counts.entry((f.code.as_str(), severity)).or_insert(0.0) += 1.0;
    }
    for ((code, severity), n) in counts {
        m.set(
            Family::Findings,
            &[("pin", &p.id), ("code", code), ("severity", severity)],
            n,
        );
    }
}

fn spend_and_calls(m: &Metrics, p: &PinReport) {
    if let (Some(cost), true) = (p.cost_usd, p.calls.ok > 0) {
        m.set(
            Family::CostPerRequestUsd,
            &[("pin", &p.id)],
            cost / p.calls.ok as f64,
        );
        m.add(Family::CostUsdTotal, &[("pin", &p.id)], cost);
    }
    m.add(
        Family::TokensSpentTotal,
        &[("pin", &p.id), ("direction", "input")],
        p.tokens.input as f64,
    );
    m.add(
        Family::TokensSpentTotal,
        &[("pin", &p.id), ("direction", "output")],
        p.tokens.output as f64,
    );
    m.add(
        Family::AuditsTotal,
        &[("pin", &p.id), ("result", p.status.as_str())],
        1.0,
    );
    m.add(
        Family::CallsTotal,
        &[("provider", &p.provider), ("outcome", "ok")],
        p.calls.ok as f64,
    );
    m.add(
        Family::CallsTotal,
        &[("provider", &p.provider), ("outcome", "failed")],
        p.calls.failed as f64,
    );
    m.add(
        Family::RetriesTotal,
        &[("provider", &p.provider)],
        p.calls.retried as f64,
    );
}

fn statistics_and_lifecycle(m: &Metrics, p: &PinReport) {
    m.clear(Family::ProbePValue, "pin", &p.id);
    for t in &p.behaviour {
        let probes = t.probes.join(",");
        let labels = [
            ("pin", p.id.as_str()),
            ("probes", probes.as_str()),
            ("test", t.test.as_str()),
        ];
        m.set(
            Family::ProbePValue,
            &labels,
            t.adjusted_p.unwrap_or(t.p_value),
        );
    }
    let retires = p.lifecycle.as_ref().and_then(|l| l.retires.as_deref());
    match retires.and_then(retirement_seconds) {
        Some(seconds) => m.set(
            Family::RetirementTimestampSeconds,
            &[("pin", &p.id), ("model", &p.model)],
            seconds as f64,
        ),
        None => m.clear(Family::RetirementTimestampSeconds, "pin", &p.id),
    }
}

/// A retirement as Unix seconds: an RFC 3339 instant, or a date taken as its start in UTC.
fn retirement_seconds(text: &str) -> Option<i64> {
    if let Ok(instant) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(instant.timestamp());
    }
    let day = chrono::NaiveDate::parse_from_str(text.get(..10)?, "%Y-%m-%d").ok()?;
    Some(day.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retirement_dates_and_instants_become_unix_seconds() {
        let cases = [
            ("2026-10-20", Some(1_792_454_400)),
            ("2026-10-20T12:00:00Z", Some(1_792_497_600)),
            ("2026-10-20T12:00:00+02:00", Some(1_792_490_400)),
            ("soon", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(retirement_seconds(text), want, "{text}");
        }
    }

    #[test]
    fn renders_help_type_and_escaped_labels() {
        let m = Metrics::new();
        m.add(Family::AuditsTotal, &[("pin", "a"), ("result", "ok")], 1.0);
        m.add(Family::AuditsTotal, &[("result", "ok"), ("pin", "a")], 1.0);
        m.set(
            Family::ServedModelInfo,
            &[("pin", "we\"ird\\\n"), ("served", "x")],
            1.0,
        );
        let text = m.render();
        assert!(text.contains("# HELP modelpin_audits_total Audits finished, by pin and result.\n# TYPE modelpin_audits_total counter\nmodelpin_audits_total{pin=\"a\",result=\"ok\"} 2\n"), "{text}");
        assert!(
            text.contains(r#"modelpin_served_model_info{pin="we\"ird\\\n",served="x"} 1"#),
            "{text}"
        );
        m.clear(Family::ServedModelInfo, "served", "x");
        assert!(!m.render().contains("served=\"x\""));
    }

    #[test]
    fn every_family_has_help_and_type_from_the_first_scrape() {
        let text = Metrics::new().render();
        for family in Family::ALL {
            assert!(
                text.contains(&format!("# HELP {} ", family.name())),
                "{text}"
            );
            assert!(
                text.contains(&format!("# TYPE {} ", family.name())),
                "{text}"
            );
        }
        assert!(
            text.contains("modelpin_store_write_failures_total 0\n"),
            "{text}"
        );
    }

    #[test]
    fn declared_counters_start_at_zero_and_keep_their_counts() {
        let m = Metrics::new();
        let config = crate::config::tests_support::minimal_config();
        m.declare(&config);
        m.audit_skipped(&config.pins[0].id);
        m.declare(&config);
        let text = m.render();
        let pin = &config.pins[0].id;
        assert!(
            text.contains(&format!(
                "modelpin_audits_skipped_total{{pin=\"{pin}\"}} 1\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "modelpin_audits_total{{pin=\"{pin}\",result=\"drift\"}} 0\n"
            )),
            "{text}"
        );
        let provider = &config.providers[0].name;
        assert!(
            text.contains(&format!(
                "modelpin_calls_total{{outcome=\"failed\",provider=\"{provider}\"}} 0\n"
            )),
            "{text}"
        );
    }

    #[test]
    fn special_values() {
        assert_eq!(render_value(f64::NAN), "NaN");
        assert_eq!(render_value(f64::INFINITY), "+Inf");
        assert_eq!(render_value(0.25), "0.25");
        assert_eq!(render_value(3.0), "3");
    }
}
