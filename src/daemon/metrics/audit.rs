//! What one stored audit sets: status and identity, findings, spend and calls, statistics and
//! lifecycle, each a few families.

use std::collections::BTreeMap;

use crate::daemon::metrics::Metrics;
use crate::daemon::metrics::labels::{
    AuditLabels, CallLabels, CallOutcome, Direction, FindingLabels, PinLabel, PinStatusLabels,
    ProbeLabels, ProviderLabel, RetirementLabels, ServedLabels, Tier, TokenLabels,
};
use crate::finding::{Code, PinStatus, Severity};
use crate::report::PinReport;
use crate::store::AuditRecord;

/// Updates every series one stored audit touches.
pub fn record(m: &Metrics, record: &AuditRecord) {
    spent(m, record);
    judged(m, record);
}

/// What the audit spent and when it ran: known as soon as it ends, whether or not the store
/// takes it.
pub fn spent(m: &Metrics, record: &AuditRecord) {
    let p = &record.pin;
    spend_and_calls(m, p);
    m.last_audit_timestamp_seconds
        .set(PinLabel::of(&p.id), record.finished_at.timestamp() as f64);
    let took = (record.finished_at - record.started_at).num_milliseconds() as f64 / 1000.0;
    m.audit_duration_seconds.set(PinLabel::of(&p.id), took);
}

/// What the audit found, as stored (in the daemon, weighed into the pin's accumulated evidence).
pub fn judged(m: &Metrics, record: &AuditRecord) {
    let p = &record.pin;
    status_and_identity(m, p);
    findings(m, p);
    m.audits_total.inc(AuditLabels {
        pin: p.id.clone(),
        result: p.status,
    });
    statistics_and_lifecycle(m, p);
}

fn status_and_identity(m: &Metrics, p: &PinReport) {
    for status in PinStatus::ALL {
        let labels = PinStatusLabels {
            pin: p.id.clone(),
            provider: p.provider.clone(),
            model: p.model.clone(),
            status,
        };
        m.pin_status
            .set(labels, if status == p.status { 1.0 } else { 0.0 });
    }
    m.served_model_info.retain(|l| l.pin != p.id);
    for served in p.served_models.keys() {
        let labels = ServedLabels {
            pin: p.id.clone(),
            provider: p.provider.clone(),
            model: p.model.clone(),
            served: served.clone(),
        };
        m.served_model_info.set(labels, 1.0);
    }
    m.served_model_mismatch
        .set(PinLabel::of(&p.id), mismatch(p));
}

/// 1 when the pin was served a model it does not accept, else 0.
pub(super) fn mismatch(p: &PinReport) -> f64 {
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
    m.findings.retain(|l| l.pin != p.id);
    let mut counts: BTreeMap<(Code, Option<Severity>), f64> = BTreeMap::new();
    for f in &p.findings {
        *counts.entry((f.code, f.severity)).or_insert(0.0) += 1.0;
    }
    for ((code, severity), n) in counts {
        let labels = FindingLabels {
            pin: p.id.clone(),
            code,
            severity,
        };
        m.findings.set(labels, n);
    }
}

fn spend_and_calls(m: &Metrics, p: &PinReport) {
    let pin = || p.id.clone();
    if let (Some(cost), true) = (p.cost_usd, p.calls.ok > 0) {
        m.cost_per_request_usd
            .set(PinLabel::of(&p.id), cost / p.calls.ok as f64);
        m.cost_usd_total.inc_by(PinLabel::of(&p.id), cost);
    }
    for (direction, tokens) in [
        (Direction::Input, p.tokens.input),
        (Direction::Output, p.tokens.output),
    ] {
        let labels = TokenLabels {
            pin: pin(),
            direction,
        };
        m.tokens_spent_total.inc_by(labels, tokens as f64);
    }
    for (outcome, calls) in [
        (CallOutcome::Ok, p.calls.ok),
        (CallOutcome::Failed, p.calls.failed),
    ] {
        let labels = CallLabels {
            provider: p.provider.clone(),
            outcome,
        };
        m.calls_total.inc_by(labels, calls as f64);
    }
    let provider = ProviderLabel {
        provider: p.provider.clone(),
    };
    m.retries_total.inc_by(provider, p.calls.retried as f64);
}

fn statistics_and_lifecycle(m: &Metrics, p: &PinReport) {
    if let Some(life) = &p.lifetime {
        m.behaviour_evidence
            .set(PinLabel::of(&p.id), life.statistic);
        m.behaviour_evidence_threshold
            .set(PinLabel::of(&p.id), life.threshold);
    }
    m.probe_p_value.retain(|l| l.pin != p.id);
    for t in &p.behaviour {
        let tier = Tier::of_test(t.test);
        let labels = ProbeLabels {
            pin: p.id.clone(),
            tier,
            probes: match tier {
                Tier::Probes => t.probes.join(","),
                Tier::FirstTokens => String::new(),
            },
            test: t.test.as_str().to_owned(),
        };
        m.probe_p_value
            .set(labels, t.adjusted_p.unwrap_or(t.p_value));
    }
    let retires = p.lifecycle.as_ref().and_then(|l| l.retires.as_deref());
    match retires.and_then(retirement_seconds) {
        Some(seconds) => {
            let labels = RetirementLabels {
                pin: p.id.clone(),
                model: p.model.clone(),
            };
            m.retirement_timestamp_seconds.set(labels, seconds as f64);
        }
        None => m.retirement_timestamp_seconds.retain(|l| l.pin != p.id),
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
    use super::{Metrics, retirement_seconds, statistics_and_lifecycle};
    use crate::finding::PinStatus;
    use crate::report::{BehaviourTest, PinReport};
    use crate::stats::TestKind;

    /// A first-token test's inputs are hashes that change at every lock: no label of theirs,
    /// so its series keeps one identity from lock to lock.
    #[test]
    fn first_token_tests_are_labelled_by_tier_not_by_their_inputs() {
        let m = Metrics::new();
        let tested = |test: TestKind, probes: &[&str]| BehaviourTest {
            test,
            probes: probes.iter().map(|p| (*p).to_owned()).collect(),
            p_value: 0.5,
            adjusted_p: Some(0.75),
            rejected: false,
        };
        let report = PinReport {
            id: "bot".into(),
            provider: "openai".into(),
            model: "m".into(),
            status: PinStatus::Ok,
            served_models: std::collections::BTreeMap::new(),
            upstreams: std::collections::BTreeMap::new(),
            calls: crate::report::Calls::default(),
            tokens: crate::report::Tokens::default(),
            cost_usd: None,
            lifecycle: None,
            behaviour: vec![
                tested(TestKind::PassRate, &["arith"]),
                tested(TestKind::FirstTokens, &["3f2a9c…", "77b1d0…"]),
                tested(TestKind::Sampling, &["3f2a9c…"]),
            ],
            findings: Vec::new(),
            capped: std::collections::BTreeMap::new(),
            lifetime: Some(crate::report::LifetimeEvidence {
                audits: 40,
                smallest_p: Some(0.75),
                look: None,
                conformal_p: Some(0.5),
                e_value: Some(0.64),
                statistic: 12.5,
                threshold: 876_000.0,
                since: None,
                years_to_false_alarm: 100.0,
                held_back: false,
                alarm: None,
                next_behaviour: None,
            }),
        };
        statistics_and_lifecycle(&m, &report);
        let text = m.render();
        for line in [
            "modelpin_behaviour_evidence{pin=\"bot\"} 12.5\n",
            "modelpin_behaviour_evidence_threshold{pin=\"bot\"} 876000\n",
            "modelpin_probe_p_value{pin=\"bot\",probes=\"arith\",test=\"pass_rate\",tier=\"probes\"} 0.75\n",
            "modelpin_probe_p_value{pin=\"bot\",probes=\"\",test=\"first_tokens\",tier=\"first_tokens\"} 0.75\n",
            "modelpin_probe_p_value{pin=\"bot\",probes=\"\",test=\"sampling\",tier=\"first_tokens\"} 0.75\n",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
        assert!(!text.contains("3f2a9c"), "{text}");
        assert!(
            text.contains(&format!(
                "modelpin_build_info{{version=\"{}\"}} 1\n",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
    }

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
}
