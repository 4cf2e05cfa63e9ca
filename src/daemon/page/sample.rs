//! A made-up fleet for measuring the status page: `n` pins with a full strip of audits each, a
//! third drifting (a served model swap, a cost change), a third warned of a retirement, a third
//! ok. Findings carry the messages and actions real audits write. Used by the page-weight test
//! and `bench/status_page`; the daemon never calls it.

use std::collections::BTreeMap;

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};

use crate::daemon::page::{Mark, PinView, STRIP_AUDITS};
use crate::finding::evidence::{CostChanged, InputCostPerCall, ServedMismatch};
use crate::finding::{Evidence, Finding, PinStatus};
use crate::lifecycle::{Fact, Lifecycle, Origin, PinRef, Retirement, resolve};
use crate::provider::ProviderKind;
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
    let findings = findings(&id, &model, &served, status, now);
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
                stage: crate::lifecycle::Stage::Scheduled,
                retires: Some("2027-01-15".into()),
                days_left: Some(45),
                replacement: vec!["acme-pro-2027-01-01".into()],
            }),
            behaviour: vec![BehaviourTest {
                test: crate::stats::TestKind::PassRate,
                probes: vec!["arith".into()],
                p_value: 0.42,
                adjusted_p: Some(0.84),
                rejected: false,
            }],
            findings,
            capped: std::collections::BTreeMap::new(),
            lifetime: None,
        },
    };
    PinView {
        id,
        provider: "acme".into(),
        model: model.clone(),
        latest: Some(latest),
        marks,
        locked: Some(vec![model]),
        aside: None,
    }
}

fn findings(
    id: &str,
    model: &str,
    served: &str,
    status: PinStatus,
    now: DateTime<Utc>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if status == PinStatus::Drift {
        out.push(Evidence::ServedModelMismatch(ServedMismatch {
            requested: model.to_owned(),
            accepted: BTreeSet::from([model.to_owned()]),
            served: BTreeMap::from([(served.to_owned(), 10)]),
            unexpected: BTreeMap::from([(served.to_owned(), 10)]),
            fallback_models: BTreeMap::new(),
            public_names: BTreeMap::new(),
            deployment_ids: BTreeMap::new(),
            gateway_fallbacks: BTreeMap::new(),
            examples: Vec::new(),
            from_traffic: false,
        }));
        out.push(Evidence::CostChanged(CostChanged {
            billed_vs_price: None,
            input_cost_per_call: Some(InputCostPerCall {
                locked_usd: 0.000_516,
                now_usd: 0.000_299,
                change: -0.42,
            }),
            tolerance: 0.02,
        }));
    }
    if status == PinStatus::Warning {
        out.push(Evidence::DeprecationScheduled(Box::new(retirement(
            model, now,
        ))));
    }
    out.iter().map(|e| Finding::new(e, id)).collect()
}

/// The pin's model as the built-in table would list it: retiring in 45 days, with a successor.
fn retirement(model: &str, now: DateTime<Utc>) -> Lifecycle {
    let fact = Fact {
        id: None,
        origin: Origin::Builtin,
        provider: "acme".into(),
        models: vec![model.to_owned()],
        announced: None,
        retirement: Retirement::On((now + Duration::days(45)).date_naive()),
        replacement: vec!["acme-pro-2027-01-01".into()],
        source: "the built-in table".into(),
        captured: None,
        supersedes: Vec::new(),
        note: None,
        price: None,
        primary: None,
    };
    let pin = PinRef {
        kind: ProviderKind::OpenAiCompatible,
        provider: "acme",
        model,
        accept: &[],
        retires_on: None,
    };
    let windows = [std::time::Duration::from_secs(90 * 86_400)];
    resolve(&pin, [&fact], now, &windows)
}
