//! The verdict: one pin's observation — from probe calls or from traffic spans — judged against
//! the pin, its lock entry and its lifecycle, as the pin's report.
//!
//! Probe audits (`audit::run`) and traffic (`traffic`) both end here, so a pin is judged, counted
//! and priced the same way whatever the calls were; `report/` only holds the result and renders
//! it. As ripgrep builds its `HiArgs` once and the printers only consume them.

use chrono::Utc;

use crate::audit::judge::{Case, expected_cost, judge_with_statistics, reference_price};
use crate::audit::judge::{served_counts, upstream_counts};
use crate::audit::{CallResult, Observation};
use crate::config::Config;
use crate::finding::PinStatus;
use crate::lifecycle::{Lifecycle, Stage};
use crate::lock::LoadedLock;
use crate::report::{BehaviourTest, Calls, LifecycleSummary, PinReport, Report, Tokens};
use crate::stats::drift::DriftVerdict;

/// The pin's report for `case`: its findings (each with what to do), its calls, tokens and cost,
/// where its model stands, and every behaviour test that ran.
#[must_use]
pub fn pin_report(case: &Case<'_>) -> PinReport {
    let (findings, verdict) = judge_with_statistics(case);
    let obs = case.observation;
    let (calls, tokens) = tally(obs);
    PinReport {
        id: case.pin.id.clone(),
        provider: case.pin.provider.clone(),
        model: case.pin.model.clone(),
        status: PinStatus::of(&findings),
        served_models: served_counts(obs),
        upstreams: upstream_counts(obs),
        calls,
        tokens,
        cost_usd: cost(case),
        lifecycle: case.lifecycle.as_ref().and_then(summary),
        behaviour: verdict.as_ref().map(behaviour).unwrap_or_default(),
        findings,
        capped: std::collections::BTreeMap::new(),
        lifetime: None,
    }
}

/// The whole report over `pins` (in config order), with the inputs' digests.
#[must_use]
pub fn report(
    config: &Config,
    lock: Option<&LoadedLock>,
    started_at: String,
    pins: Vec<PinReport>,
    strict: bool,
) -> Report {
    let mut report = Report::new(
        config.digest.clone(),
        lock.map(|l| l.digest.clone()),
        started_at,
        now(),
        pins,
        strict,
    );
    report.lock_config_digest = lock.map(|l| l.lock.config_digest.clone());
    report
}

/// Now, as the report's timestamps write it.
#[must_use]
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Calls sent (answered or not, with their retries) and the tokens the answers used.
fn tally(obs: &Observation) -> (Calls, Tokens) {
    let mut calls = Calls::default();
    let mut tokens = Tokens::default();
    for call in obs.calls.iter().filter(|c| c.attempts > 0) {
        calls.sent += 1;
        calls.retried += u64::from(call.attempts - 1);
        match &call.result {
            CallResult::Reply(r) => {
                calls.ok += 1;
                tokens.input = tokens.input.saturating_add(r.usage.input.unwrap_or(0));
                tokens.output = tokens.output.saturating_add(r.usage.output.unwrap_or(0));
            }
            _ => calls.failed += 1,
        }
    }
    (calls, tokens)
}

/// What the answers cost: the provider's own figure where it reports one, else usage × the
/// reference price; `None` when no answer could be priced.
fn cost(case: &Case<'_>) -> Option<f64> {
    let price = reference_price(case.pin, case.locked);
    let mut total = 0.0;
    // A priced pin that sent no call cost $0, not an unknown amount.
    let mut known = price.is_some() && case.observation.calls.iter().all(|c| c.attempts == 0);
    for (_, reply) in case.observation.replies() {
        let cost = reply
            .reported_cost_usd
            .or_else(|| expected_cost(reply, price.as_ref()?));
        if let Some(c) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            total += c;
            known = true;
        }
    }
    known.then_some((total * 1e8).round() / 1e8)
}

fn behaviour(verdict: &DriftVerdict) -> Vec<BehaviourTest> {
    verdict
        .tests
        .iter()
        .map(|t| BehaviourTest {
            test: t.result.test,
            probes: t.probes.clone(),
            p_value: t.result.p_value,
            adjusted_p: t.adjusted_p,
            rejected: t.rejected,
        })
        .collect()
}

fn summary(life: &Lifecycle) -> Option<LifecycleSummary> {
    (life.stage != Stage::NoRecord).then(|| LifecycleSummary {
        stage: life.stage,
        retires: life.retirement.map(|r| r.to_string()),
        days_left: life.days_left,
        replacement: life.replacement.clone(),
    })
}
