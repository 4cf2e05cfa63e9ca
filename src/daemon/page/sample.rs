//! A made-up fleet for measuring the status page: `n` pins with a full strip of audits each, a
//! third drifting (a served model swap, a cost change), a third warned of a retirement, a third
//! ok. Findings carry the messages and actions real audits write. Used by the page-weight test
//! and `bench/status_page`; the daemon never calls it.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::daemon::page::{Mark, PinView, STRIP_AUDITS};
use crate::finding::{Code, Finding, PinStatus, Severity};
use crate::report::{BehaviourTest, Calls, LifecycleSummary, PinReport, Tokens};
use crate::store::AuditRecord;

/// `n` pins as the overview would gather them, audited hourly up to `now`.
#[must_use]
pub fn fleet(n: usize, now: DateTime<Utc>) -> Vec<PinView> {
    (0..n).map(|i| pin(i, now)).collect()
}

fn pin(i: usize, now: DateTime<Utc>) -> PinView {
    let id = format!("service-{i:03}-summariser");
    let model = format!("acme-pro-2026-{:02}-01", 1 + i % 12);
    let status = match i % 3 {
        0 => PinStatus::Drift,
        1 => PinStatus::Warning,
        _ => PinStatus::Ok,
    };
    let marks: Vec<Mark> = (0..STRIP_AUDITS)
        .map(|k| Mark {
            // Pins are audited a few seconds apart within each hour.
            started_at: now - Duration::hours(i64::try_from(STRIP_AUDITS - k).unwrap_or(0))
                + Duration::milliseconds(i64::try_from(i * 2311).unwrap_or(0)),
            status: if k + 5 >= STRIP_AUDITS {
                status
            } else {
                PinStatus::Ok
            },
            traffic: false,
        })
        .collect();
    let served = if status == PinStatus::Drift {
        format!("acme-flash-2026-{:02}-15", 1 + i % 12)
    } else {
        model.clone()
    };
    let findings = findings(&id, &model, &served, status);
    let latest = AuditRecord {
        audit_id: format!("{:013x}-{:08x}", now.timestamp_millis(), i * 7919),
        started_at: marks.last().map_or(now, |m| m.started_at),
        finished_at: now,
        config_digest: "sha256:0".into(),
        lock_digest: None,
        source: None,
        pin: PinReport {
            id: id.clone(),
            provider: "acme".into(),
            model: model.clone(),
            status,
            served_models: BTreeMap::from([(served, 10)]),
            upstreams: BTreeMap::new(),
            calls: Calls {
                sent: 10,
                ok: 10,
                retried: 0,
                failed: 0,
            },
            tokens: Tokens {
                input: 230,
                output: 40,
            },
            cost_usd: Some(0.000_688),
            lifecycle: (status == PinStatus::Warning).then(|| LifecycleSummary {
                stage: "scheduled".into(),
                retires: Some("2027-01-15".into()),
                days_left: Some(45),
                replacement: vec!["acme-pro-2027-01-01".into()],
            }),
            behaviour: vec![BehaviourTest {
                test: "fisher_exact".into(),
                probes: vec!["arith".into()],
                p_value: 0.42,
                adjusted_p: Some(0.84),
                rejected: false,
            }],
            findings,
        },
    };
    PinView {
        id,
        provider: "acme".into(),
        model: model.clone(),
        latest: Some(latest),
        marks,
        locked: Some(vec![model]),
    }
}

fn findings(id: &str, model: &str, served: &str, status: PinStatus) -> Vec<Finding> {
    let mut out = Vec::new();
    if status == PinStatus::Drift {
        out.push(finding(
            Code::ServedModelMismatch,
            format!("served `{served}` (10 of 10 calls) where the pin accepts `{model}`"),
            json!({ "unexpected": { served: 10 } }),
        ));
        out.push(finding(
            Code::CostChanged,
            "effective price per token is 0.000002990 USD, 42.0% below the locked 0.000005160 USD (tolerance 2%)".into(),
            json!({}),
        ));
    }
    if status == PinStatus::Warning {
        out.push(finding(
            Code::DeprecationScheduled,
            format!("`{model}` retires on 2027-01-15 per the built-in table; replacement `acme-pro-2027-01-01` (45 days left)"),
            json!({ "replacement": ["acme-pro-2027-01-01"] }),
        ));
    }
    for f in &mut out {
        f.action = Some(crate::finding::action::action(f, id));
    }
    out
}

fn finding(code: Code, message: String, evidence: serde_json::Value) -> Finding {
    Finding {
        code,
        severity: code.severity().or(Some(Severity::Warning)),
        message,
        evidence,
        action: None,
    }
}
