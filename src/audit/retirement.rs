//! Lifecycle findings: a retirement ahead, a provider announcing one, and the case users get
//! hurt by — the date has passed and the ID keeps answering, presumably served by another model.
//!
//! Once a pin's retirement date has passed, every answer is a presumed reroute: the finding says
//! whether the served ID, the tokenizer, the price or the behaviour changed in the same audit, so
//! a reader sees at once whether the reroute is visible or still masked.

use serde_json::{Value, json};

use crate::audit::CallResult;
use crate::audit::judge::Case;
use crate::finding::{Code, Finding, Severity};
use crate::lifecycle::signals::from_hint;
use crate::lifecycle::{Lifecycle, Retirement, Signal, Stage, retirement_message};
use crate::provider::ErrorClass;

/// Codes whose presence in the same audit shows the retired ID is served by something else.
const REROUTE_SIGNS: [(Code, &str); 5] = [
    (Code::ServedModelMismatch, "served_id"),
    (Code::UpstreamMismatch, "upstream"),
    (Code::TokenizerChanged, "tokenizer"),
    (Code::CostChanged, "price"),
    (Code::BehaviorDrift, "behaviour"),
];

/// Findings for a pin whose calls were answered.
pub fn after_answers(case: &Case<'_>, findings: &mut Vec<Finding>) {
    findings.extend(sunset(case));
    let Some(life) = &case.lifecycle else { return };
    match life.stage {
        Stage::Retired => findings.push(still_served(life, findings)),
        Stage::Scheduled | Stage::Deprecated => findings.push(scheduled(life)),
        Stage::NoRecord => {}
    }
}

/// Enriches a refusal: "retired on DATE per SOURCE" versus "unknown model"; a retired model that
/// only answers quota errors is reported as a possible retirement masked by quota.
pub fn after_refusals(case: &Case<'_>, findings: &mut [Finding]) {
    let Some(life) = &case.lifecycle else { return };
    for finding in findings.iter_mut() {
        match finding.code {
            Code::ModelNotFound => {
                let detail = retirement_message(life);
                finding.message = format!("{} ({detail})", finding.message);
                insert(&mut finding.evidence, "lifecycle", lifecycle_evidence(life));
            }
            Code::Inconclusive if life.is_retired() && only_quota(case) => {
                finding.message = format!(
                    "possible retirement masked by quota: every call was refused for quota, and {}",
                    retirement_message(life)
                );
                insert(&mut finding.evidence, "lifecycle", lifecycle_evidence(life));
            }
            _ => {}
        }
    }
}

fn only_quota(case: &Case<'_>) -> bool {
    let mut refused = case
        .observation
        .calls
        .iter()
        .filter(|c| !matches!(c.result, CallResult::Skipped(_)));
    refused.all(|c| matches!(&c.result, CallResult::Rejected(r) if r.class == ErrorClass::Quota))
}

fn insert(evidence: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = evidence {
        map.insert(key.to_owned(), value);
    }
}

fn lifecycle_evidence(life: &Lifecycle) -> Value {
    serde_json::to_value(life).unwrap_or(Value::Null)
}

fn still_served(life: &Lifecycle, findings: &[Finding]) -> Finding {
    let changed: Vec<&str> = REROUTE_SIGNS
        .iter()
        .filter(|(code, _)| findings.iter().any(|f| f.code == *code))
        .map(|(_, what)| *what)
        .collect();
    let when = retired_when(life);
    let verdict = if changed.is_empty() {
        "no change in served ID, tokenizer or price was seen in this audit: presumed rerouted until the behaviour probes clear it".to_owned()
    } else {
        format!("rerouted: {} changed in this audit", changed.join(", "))
    };
    let mut evidence = lifecycle_evidence(life);
    insert(
        &mut evidence,
        "reroute",
        json!({
            "served_id_changed": changed.contains(&"served_id"),
            "upstream_changed": changed.contains(&"upstream"),
            "tokenizer_changed": changed.contains(&"tokenizer"),
            "price_changed": changed.contains(&"price"),
            "behaviour_changed": changed.contains(&"behaviour"),
        }),
    );
    Finding::new(
        Code::RetiredStillServed,
        format!("`{}` {when} and still answers; {verdict}", life.model),
        evidence,
    )
}

fn retired_when(life: &Lifecycle) -> String {
    let source = life
        .sources
        .first()
        .map_or("the lifecycle data", |e| e.source.as_str());
    match life.retirement {
        Some(Retirement::Gone | Retirement::Announced) | None => format!("is retired per {source}"),
        Some(when) => format!("was retired on {when} per {source}"),
    }
}

fn scheduled(life: &Lifecycle) -> Finding {
    let mut finding = Finding::new(
        Code::DeprecationScheduled,
        retirement_message(life),
        lifecycle_evidence(life),
    );
    let mut message = finding.message.clone();
    if let Some(days) = life.days_left {
        message = format!("{message} ({days} days left)");
    }
    if life.window.is_none() {
        // Further out than every `warn_before` window (or no date): worth knowing, not a warning.
        finding.severity = Some(Severity::Info);
    }
    finding.message = message;
    finding
}

/// Provider-side statements seen in this audit: response headers and body warnings on the
/// pin's own calls, and its models endpoint naming a date.
fn sunset(case: &Case<'_>) -> Option<Finding> {
    let mut signals: Vec<Signal> = case
        .observation
        .replies()
        .flat_map(|(_, r)| r.lifecycle.iter())
        .filter_map(from_hint)
        .collect();
    signals.extend(
        case.provider_signals
            .iter()
            .filter(|s| s.retirement.instant().is_some())
            .cloned(),
    );
    signals.sort_by(|a, b| a.source.cmp(&b.source));
    signals.dedup_by(|a, b| a.source == b.source);
    let first = signals.first()?;
    let date = first
        .retirement
        .date()
        .map_or_else(String::new, |d| format!(" (retirement {d})"));
    Some(Finding::new(
        Code::SunsetAnnounced,
        format!(
            "the provider announces an end of life: {}{date}",
            first.source
        ),
        json!({ "signals": signals }),
    ))
}
