//! The alert state machine, pure: one audit's findings plus the stored alert state in, the new
//! state and the notifications to send out.
//!
//! Error and warning findings fire on the first audit that has them (a channel only hears about
//! the severities its `min_severity` admits); `inconclusive` fires only after
//! `INCONCLUSIVE_STREAK` consecutive inconclusive audits. While firing, an alert is repeated to a
//! channel every `repeat` (Alertmanager is re-pushed on every audit, since it expires alerts that
//! are not refreshed); when an audit no longer finds it, it resolves, and channels that heard of
//! it get the resolution if `send_resolved`. Per channel, all of one pin's changes in one audit
//! make one notification.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::alert::{AlertCode, AlertItem, AlertStatus, Notification};
use crate::config::{AlertChannel, AlertKind};
use crate::finding::evidence::Unmeasured;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::store::AuditRecord;

/// Consecutive inconclusive audits before `inconclusive` fires.
pub const INCONCLUSIVE_STREAK: u32 = 3;

pub use crate::store::alerts::{AlertState, PinAlerts};

/// The stable identity of (pin, code): the same across restarts and daemons.
#[must_use]
pub fn fingerprint(pin: &str, code: &str) -> String {
    let digest = crate::lock::digest(format!("{pin}\0{code}").as_bytes());
    digest["sha256:".len().."sha256:".len() + 16].to_owned()
}

/// What one audit changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub state: PinAlerts,
    pub notifications: Vec<Notification>,
}

/// Runs one audit through the state machine for the channels this pin routes to.
#[must_use]
pub fn step(
    before: &PinAlerts,
    record: &AuditRecord,
    channels: &[&AlertChannel],
    now: DateTime<Utc>,
) -> Step {
    let pin = &record.pin;
    let streak = if pin.status == crate::finding::PinStatus::Inconclusive {
        before.inconclusive_streak + 1
    } else {
        0
    };
    let current = alerting_findings(&pin.id, &pin.findings, streak);
    let mut firing: BTreeMap<AlertCode, AlertState> = BTreeMap::new();
    let mut new: BTreeSet<AlertCode> = BTreeSet::new();
    for (code, finding) in &current {
        let state = if let Some(known) = before.firing.get(code) {
            known.clone()
        } else {
            new.insert(code.clone());
            AlertState {
                fingerprint: fingerprint(&record.alert_subject(), code.as_str()),
                pin: pin.id.clone(),
                code: code.clone(),
                severity: finding.severity,
                starts_at: now,
                message: String::new(),
                evidence: Value::Null,
                action: None,
                notified: BTreeMap::new(),
            }
        };
        let state = AlertState {
            severity: finding.severity,
            message: finding.message.clone(),
            evidence: finding.evidence.clone(),
            action: finding.action.clone(),
            ..state
        };
        firing.insert(code.clone(), state);
    }
    let resolved: Vec<&AlertState> = before
        .firing
        .values()
        .filter(|s| !current.contains_key(&s.code))
        .collect();
    let mut notifications = Vec::new();
    for channel in channels {
        let mut items = Vec::new();
        for state in firing.values_mut() {
            let due = new.contains(&state.code) || repeat_due(state, channel, now);
            if admits(channel, state.severity) && due {
                items.push(item(state, AlertStatus::Firing, None));
                state.notified.insert(channel.name.clone(), now);
            }
        }
        if channel.send_resolved {
            for state in resolved
                .iter()
                .filter(|s| s.notified.contains_key(&channel.name))
            {
                items.push(item(state, AlertStatus::Resolved, Some(now)));
            }
        }
        if !items.is_empty() {
            notifications.push(notification(record, channel, items, now));
        }
    }
    Step {
        state: PinAlerts {
            firing,
            inconclusive_streak: streak,
            accumulated: before.accumulated.clone(),
        },
        notifications,
    }
}

/// The findings that alert, by code: everything with a severity, and `inconclusive` once the
/// streak is long enough.
fn alerting_findings(pin: &str, findings: &[Finding], streak: u32) -> BTreeMap<AlertCode, Finding> {
    let mut out = BTreeMap::new();
    for f in findings {
        if f.code.is_unmeasured() {
            continue;
        }
        out.entry(AlertCode::Finding(f.code))
            .or_insert_with(|| f.clone());
    }
    if streak >= INCONCLUSIVE_STREAK {
        let first = findings.iter().find(|f| f.code.is_unmeasured());
        let streak = Unmeasured::Streak {
            consecutive: streak,
            latest: first.map(|f| f.evidence.clone()),
            latest_message: first.map(|f| f.message.clone()),
            latest_action: first.and_then(|f| f.action.clone()),
        };
        let finding = Finding::new(&Evidence::Inconclusive(streak), pin);
        out.insert(AlertCode::Finding(Code::Inconclusive), finding);
    }
    out
}

fn repeat_due(state: &AlertState, channel: &AlertChannel, now: DateTime<Utc>) -> bool {
    if matches!(channel.kind, AlertKind::Alertmanager { .. }) {
        return true;
    }
    match state.notified.get(&channel.name) {
        None => true,
        Some(last) => (now - *last).to_std().unwrap_or(Duration::ZERO) >= channel.repeat,
    }
}

fn admits(channel: &AlertChannel, severity: Option<Severity>) -> bool {
    severity.unwrap_or(Severity::Warning) >= channel.min_severity
}

fn item(state: &AlertState, status: AlertStatus, ends_at: Option<DateTime<Utc>>) -> AlertItem {
    AlertItem {
        fingerprint: state.fingerprint.clone(),
        code: state.code.clone(),
        severity: state.severity,
        status,
        message: state.message.clone(),
        evidence: state.evidence.clone(),
        action: state.action.clone(),
        starts_at: state.starts_at,
        ends_at,
    }
}

fn notification(
    record: &AuditRecord,
    channel: &AlertChannel,
    alerts: Vec<AlertItem>,
    now: DateTime<Utc>,
) -> Notification {
    let status = if alerts.iter().any(|a| a.status == AlertStatus::Firing) {
        AlertStatus::Firing
    } else {
        AlertStatus::Resolved
    };
    Notification {
        id: Notification::new_id(now),
        channel: channel.name.clone(),
        pin: record.pin.id.clone(),
        provider: record.pin.provider.clone(),
        model: record.pin.model.clone(),
        status,
        alerts,
        created_at: now,
        test: false,
        audit_id: Some(record.audit_id.clone()),
        source: record.source,
        url: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::PinStatus;
    use crate::report::{Calls, PinReport, Tokens};
    use serde_json::json;

    fn channel(name: &str, repeat_secs: u64, min: Severity, kind: AlertKind) -> AlertChannel {
        AlertChannel {
            name: name.into(),
            kind,
            send_resolved: true,
            repeat: Duration::from_secs(repeat_secs),
            min_severity: min,
        }
    }

    fn hook() -> AlertKind {
        AlertKind::Webhook {
            url: "https://example.com/h".into(),
            secret_env: None,
            signing_key: None,
        }
    }

    fn record(status: PinStatus, codes: &[Code]) -> AuditRecord {
        let t = DateTime::from_timestamp(0, 0).unwrap();
        AuditRecord {
            audit_id: "a".into(),
            started_at: t,
            finished_at: t,
            config_digest: "c".into(),
            lock_digest: None,
            source: None,
            pin: PinReport {
                id: "bot".into(),
                provider: "openai".into(),
                model: "m".into(),
                status,
                served_models: BTreeMap::new(),
                upstreams: BTreeMap::new(),
                calls: Calls::default(),
                tokens: Tokens::default(),
                cost_usd: None,
                lifecycle: None,
                behaviour: Vec::new(),
                findings: codes
                    .iter()
                    .map(|c| Finding {
                        code: *c,
                        severity: c.severity(),
                        message: c.as_str().to_owned(),
                        evidence: json!({}),
                        action: None,
                    })
                    .collect(),
                capped: std::collections::BTreeMap::new(),
                lifetime: None,
            },
        }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    fn codes(step: &Step, channel: &str) -> Vec<(String, AlertStatus)> {
        step.notifications
            .iter()
            .filter(|n| n.channel == channel)
            .flat_map(|n| n.alerts.iter().map(|a| (a.code.to_string(), a.status)))
            .collect()
    }

    #[test]
    fn fires_once_repeats_after_the_interval_and_resolves() {
        let ch = channel("ops", 60, Severity::Warning, hook());
        let drift = record(
            PinStatus::Drift,
            &[Code::ServedModelMismatch, Code::TokenizerChanged],
        );
        let s1 = step(&PinAlerts::default(), &drift, &[&ch], at(0));
        assert_eq!(
            s1.notifications.len(),
            1,
            "one notification groups the pin's changes"
        );
        assert_eq!(codes(&s1, "ops").len(), 2);
        let s2 = step(&s1.state, &drift, &[&ch], at(30));
        assert!(s2.notifications.is_empty(), "no repeat before `repeat`");
        let s3 = step(&s2.state, &drift, &[&ch], at(61));
        assert_eq!(codes(&s3, "ops").len(), 2, "repeated after 60 s");
        assert_eq!(
            s3.state.firing[&AlertCode::Finding(Code::ServedModelMismatch)].starts_at,
            at(0),
            "same alert, same start"
        );
        let ok = record(PinStatus::Ok, &[]);
        let s4 = step(&s3.state, &ok, &[&ch], at(70));
        assert_eq!(
            codes(&s4, "ops"),
            vec![
                ("served_model_mismatch".into(), AlertStatus::Resolved),
                ("tokenizer_changed".into(), AlertStatus::Resolved)
            ]
        );
        assert_eq!(s4.notifications[0].status, AlertStatus::Resolved);
        assert!(s4.state.firing.is_empty());
        let s5 = step(&s4.state, &ok, &[&ch], at(80));
        assert!(s5.notifications.is_empty(), "resolved once");
    }

    #[test]
    fn a_new_code_on_a_firing_pin_is_sent_at_once_with_only_what_is_due() {
        let ch = channel("ops", 3600, Severity::Warning, hook());
        let s1 = step(
            &PinAlerts::default(),
            &record(PinStatus::Drift, &[Code::ServedModelMismatch]),
            &[&ch],
            at(0),
        );
        let s2 = step(
            &s1.state,
            &record(
                PinStatus::Drift,
                &[Code::ServedModelMismatch, Code::CostChanged],
            ),
            &[&ch],
            at(10),
        );
        assert_eq!(
            codes(&s2, "ops"),
            vec![("cost_changed".into(), AlertStatus::Firing)]
        );
    }

    #[test]
    fn min_severity_filters_and_send_resolved_only_to_channels_that_heard() {
        let errors_only = channel("pager", 60, Severity::Error, hook());
        let all = channel("log", 60, Severity::Info, hook());
        let warn = record(PinStatus::Warning, &[Code::DeprecationScheduled]);
        let s1 = step(&PinAlerts::default(), &warn, &[&errors_only, &all], at(0));
        assert!(codes(&s1, "pager").is_empty());
        assert_eq!(codes(&s1, "log").len(), 1);
        let s2 = step(
            &s1.state,
            &record(PinStatus::Ok, &[]),
            &[&errors_only, &all],
            at(5),
        );
        assert!(
            codes(&s2, "pager").is_empty(),
            "never heard of it, so no resolution"
        );
        assert_eq!(
            codes(&s2, "log"),
            vec![("deprecation_scheduled".into(), AlertStatus::Resolved)]
        );
    }

    #[test]
    fn inconclusive_fires_only_after_three_in_a_row() {
        let ch = channel("ops", 60, Severity::Warning, hook());
        let inc = record(PinStatus::Inconclusive, &[Code::Inconclusive]);
        let mut state = PinAlerts::default();
        for i in 0..2 {
            let s = step(&state, &inc, &[&ch], at(i));
            assert!(s.notifications.is_empty(), "audit {i}");
            state = s.state;
        }
        let s3 = step(&state, &inc, &[&ch], at(3));
        assert_eq!(
            codes(&s3, "ops"),
            vec![("inconclusive".into(), AlertStatus::Firing)]
        );
        let reset = step(
            &PinAlerts {
                inconclusive_streak: 2,
                ..PinAlerts::default()
            },
            &record(PinStatus::Ok, &[]),
            &[&ch],
            at(4),
        );
        assert_eq!(reset.state.inconclusive_streak, 0);
    }

    #[test]
    fn alertmanager_is_re_pushed_every_audit_while_firing() {
        let am = channel(
            "am",
            3600,
            Severity::Warning,
            AlertKind::Alertmanager {
                url: "http://127.0.0.1:9093".into(),
            },
        );
        let drift = record(PinStatus::Drift, &[Code::ServedModelMismatch]);
        let s1 = step(&PinAlerts::default(), &drift, &[&am], at(0));
        let s2 = step(&s1.state, &drift, &[&am], at(5));
        assert_eq!(codes(&s2, "am").len(), 1);
    }

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        assert_eq!(fingerprint("a", "x"), fingerprint("a", "x"));
        assert_ne!(fingerprint("a", "x"), fingerprint("a", "y"));
        assert_ne!(fingerprint("ab", "x"), fingerprint("a", "bx"));
        assert_eq!(fingerprint("a", "x").len(), 16);
    }
}
