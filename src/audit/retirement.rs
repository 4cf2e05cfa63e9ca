//! Lifecycle findings: a retirement ahead, a provider announcing one, and the case users get
//! hurt by — the date has passed and the ID keeps answering, presumably served by another model.
//!
//! Once a pin's retirement date has passed, every answer is a presumed reroute: the finding says
//! whether the served ID, the tokenizer, the price or the behaviour changed in the same audit, so
//! a reader sees at once whether the reroute is visible or still masked.

use crate::audit::CallResult;
use crate::audit::judge::Case;
use crate::finding::Code;
use crate::finding::Evidence;
use crate::finding::evidence::{Reroute, StillServed, Sunset, Unmeasured};
use crate::lifecycle::signals::from_hint;
use crate::lifecycle::{Lifecycle, Signal, Stage};
use crate::provider::ErrorClass;

/// Findings for a pin whose calls were answered.
pub fn after_answers(case: &Case<'_>, found: &mut Vec<Evidence>) {
    found.extend(sunset(case).map(Evidence::SunsetAnnounced));
    let Some(life) = &case.lifecycle else { return };
    match life.stage {
        Stage::Retired => {
            let still = still_served(life, found);
            found.push(Evidence::RetiredStillServed(still));
        }
        Stage::Scheduled | Stage::Deprecated => {
            found.push(Evidence::DeprecationScheduled(Box::new(life.clone())));
        }
        Stage::NoRecord => {}
    }
}

/// Findings for a pin whose calls were not made (no baseline to compare with): what the
/// lifecycle data and the provider's models endpoint say, which needs no call. Whether a retired
/// ID still answers is unknown, so a passed date is reported as the retirement it is.
pub fn without_calls(case: &Case<'_>, found: &mut Vec<Evidence>) {
    found.extend(sunset(case).map(Evidence::SunsetAnnounced));
    let Some(life) = &case.lifecycle else { return };
    match life.stage {
        Stage::Retired | Stage::Scheduled | Stage::Deprecated => {
            found.push(Evidence::DeprecationScheduled(Box::new(life.clone())));
        }
        Stage::NoRecord => {}
    }
}

/// Enriches a refusal: "retired on DATE per SOURCE" versus "unknown model"; a retired model that
/// only answers quota errors is reported as a possible retirement masked by quota.
pub fn after_refusals(case: &Case<'_>, found: &mut [Evidence]) {
    let Some(life) = &case.lifecycle else { return };
    for evidence in found.iter_mut() {
        match evidence {
            Evidence::ModelNotFound(not_found) => not_found.lifecycle = Some(life.clone()),
            Evidence::Inconclusive(Unmeasured::NothingAnswered { lifecycle, .. })
                if life.is_retired() && only_quota(case) =>
            {
                *lifecycle = Some(life.clone());
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

fn still_served(life: &Lifecycle, found: &[Evidence]) -> StillServed {
    let seen = |code: Code| found.iter().any(|e| e.code() == code);
    StillServed {
        lifecycle: life.clone(),
        reroute: Reroute {
            served_id_changed: seen(Code::ServedModelMismatch),
            upstream_changed: seen(Code::UpstreamMismatch),
            tokenizer_changed: seen(Code::TokenizerChanged),
            price_changed: seen(Code::CostChanged),
            behaviour_changed: seen(Code::BehaviorDrift),
        },
    }
}

/// Provider-side statements seen in this audit: response headers and body warnings on the
/// pin's own calls, and its models endpoint naming a date.
fn sunset(case: &Case<'_>) -> Option<Sunset> {
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
    (!signals.is_empty()).then_some(Sunset { signals })
}
