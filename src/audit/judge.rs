//! The judge: an `Observation` compared with the pin, the lock and the price, as findings.
//!
//! Pure functions only. Each check looks at one signal — served identity, upstream, tokenizer,
//! price, fingerprint, provider lifecycle hints — and says what it saw with the numbers. A pin
//! that could not be measured gets `inconclusive`, never "ok" and never "drift".

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use crate::audit::retirement;
use crate::audit::{CallKind, CallRecord, CallResult, Observation};
use crate::audit::{first_tokens, scripts};
use crate::config::{Pin, Price, Probe};
use crate::finding::evidence::{
    BilledVsPrice, ChangedProbe, CostChanged, FingerprintChanged, InputCostPerCall,
    MaxTokensExceeded, NewScript, NoBaseline, NotFound, OverLimit, PricePerMtok, ProbeChanged,
    Retries, ScriptChanged, ServedMismatch, TokenCounts, TokenizerChanged, Unmeasured,
    UpstreamMismatch,
};
use crate::finding::reason::{Halt, Reason, Reasons, Stop};
use crate::finding::{Evidence, Finding};
use crate::lifecycle::{Lifecycle, Signal};
use crate::lock::{LockedPin, LockedPrice, LockedProbe};
use crate::provider::{ErrorClass, Reply, normalize_model_id};
use crate::retry::StopClass;
use crate::stats::drift::{DriftVerdict, ProbeSamples, Samples, compare_pin_resolving};

/// Everything the judge needs about one pin.
pub struct Case<'a> {
    pub pin: &'a Pin,
    /// The pin's probes.
    pub probes: Vec<&'a Probe>,
    pub observation: &'a Observation,
    /// The pin's entry in modelpin.lock, if any.
    pub locked: Option<&'a LockedPin>,
    /// `locked`, when it was recorded for the pin's current model: the baseline to judge against.
    pub baseline: Option<&'a LockedPin>,
    /// The pin's lifecycle as resolved for this audit; `None` when not resolved (lock time).
    pub lifecycle: Option<Lifecycle>,
    /// What the provider's models endpoint said about this model during the audit.
    pub provider_signals: Vec<Signal>,
    /// Family-wise false-alarm rate for the behaviour tests (`settings.alpha`).
    pub alpha: f64,
    /// How small an adjusted p-value the behaviour tests resolve besides `alpha`
    /// (`stats::drift::compare_pin_resolving`); `None`: `alpha`'s thresholds only.
    pub resolve: Option<f64>,
    /// The calls are real traffic, not probes: no probe baseline is needed to judge them.
    pub traffic: bool,
    /// The audit checks identity only (`check --no-probes`, the daemon's ticks between
    /// behaviour audits): one sample a probe, no behaviour test.
    pub identity_only: bool,
}

impl<'a> Case<'a> {
    #[must_use]
    pub fn new(
        pin: &'a Pin,
        probes: Vec<&'a Probe>,
        observation: &'a Observation,
        locked: Option<&'a LockedPin>,
    ) -> Case<'a> {
        Case {
            pin,
            probes,
            observation,
            locked,
            baseline: locked.filter(|l| l.model == pin.model),
            lifecycle: None,
            provider_signals: Vec::new(),
            alpha: 0.001,
            resolve: None,
            traffic: false,
            identity_only: false,
        }
    }

    /// Identity only: no behaviour test runs on the answers.
    #[must_use]
    pub fn identity_only(mut self, only: bool) -> Case<'a> {
        self.identity_only = only;
        self
    }

    /// Judged as real traffic: served identity and lifecycle against `accept` and the lock,
    /// without asking for a probe baseline.
    #[must_use]
    pub fn judged_as_traffic(mut self) -> Case<'a> {
        self.traffic = true;
        self
    }

    #[must_use]
    pub fn with_alpha(mut self, alpha: f64) -> Case<'a> {
        self.alpha = alpha;
        self
    }

    /// Behaviour tests that resolve adjusted p-values down to `resolve` too.
    #[must_use]
    pub fn resolving(mut self, resolve: Option<f64>) -> Case<'a> {
        self.resolve = resolve;
        self
    }

    #[must_use]
    pub fn with_lifecycle(
        mut self,
        lifecycle: Lifecycle,
        provider_signals: Vec<Signal>,
    ) -> Case<'a> {
        self.lifecycle = Some(lifecycle);
        self.provider_signals = provider_signals;
        self
    }
}

impl Case<'_> {
    /// The probe's baseline when it is comparable (same digest), with this audit's answers to it.
    fn comparable(&self, probe: &Probe) -> Option<(&LockedProbe, Vec<&Reply>)> {
        let locked = self
            .baseline?
            .probes
            .get(&probe.id)
            .filter(|l| l.digest == probe.digest)?;
        let replies = self
            .observation
            .replies()
            .filter(|(c, _)| c.probe == probe.id)
            .map(|(_, r)| r)
            .collect();
        Some((locked, replies))
    }
}

/// All findings for one pin, in a fixed order.
#[must_use]
pub fn judge(case: &Case<'_>) -> Vec<Finding> {
    judge_with_statistics(case).0
}

/// The findings and the behaviour statistics they were drawn from (for metrics and reports).
#[must_use]
pub fn judge_with_statistics(case: &Case<'_>) -> (Vec<Finding>, Option<DriftVerdict>) {
    let (evidence, verdict) = evidence(case);
    let pin = &case.pin.id;
    (
        evidence.iter().map(|e| Finding::new(e, pin)).collect(),
        verdict,
    )
}

/// What each check found, in the report's fixed order.
fn evidence(case: &Case<'_>) -> (Vec<Evidence>, Option<DriftVerdict>) {
    let mut found = Vec::new();
    found.extend(model_not_found(case.observation).map(Evidence::ModelNotFound));
    if case.observation.replies().next().is_none() {
        if let Some(notice) = skipped_for_baseline(case) {
            found.push(Evidence::NoBaseline(notice));
            retirement::without_calls(case, &mut found);
            return (found, None);
        }
        if found.is_empty() {
            found.push(Evidence::Inconclusive(nothing_measured(case.observation)));
        }
        retirement::after_refusals(case, &mut found);
        return (found, None);
    }
    if !case.traffic {
        found.extend(baseline_notice(case).map(Evidence::NoBaseline));
    }
    found.extend(served_identity(case).map(Evidence::ServedModelMismatch));
    found.extend(upstream(case).map(Evidence::UpstreamMismatch));
    found.extend(tokenizer(case).map(Evidence::TokenizerChanged));
    found.extend(cost(case).map(Evidence::CostChanged));
    found.extend(fingerprint(case).map(Evidence::FingerprintChanged));
    found.extend(over_max_tokens(case).map(Evidence::MaxTokensExceeded));
    found.extend(script_changed(case).map(Evidence::ScriptChanged));
    let verdict = behaviour_verdict(case);
    if let Some(v) = verdict.as_ref().filter(|v| v.drift) {
        found.push(Evidence::BehaviorDrift(Box::new(v.clone())));
    }
    found.extend(unmeasured_probes(case));
    found.extend(tokens_missing(case).map(Evidence::Inconclusive));
    found.extend(logprobs_missing(case).map(Evidence::Inconclusive));
    found.extend(tokens_implausible(case.observation).map(Evidence::Inconclusive));
    found.extend(calls_missing(case.observation).map(Evidence::Inconclusive));
    retirement::after_answers(case, &mut found);
    found.extend(served_not_reported(case).map(Evidence::Inconclusive));
    (found, verdict)
}

fn model_not_found(obs: &Observation) -> Option<NotFound> {
    let refused: Vec<_> = obs
        .calls
        .iter()
        .filter_map(|c| match &c.result {
            CallResult::Rejected(r) if r.class == ErrorClass::NotFound => Some(r),
            _ => None,
        })
        .collect();
    let first = refused.first()?;
    Some(NotFound {
        status: first.status,
        code: first.code.clone(),
        error_type: first.error_type.clone(),
        provider_message: first.message.clone(),
        request_id: first.request_id.clone(),
        calls_refused: refused.len(),
        lifecycle: None,
    })
}

/// Why no call produced an answer, counted by reason.
fn nothing_measured(obs: &Observation) -> Unmeasured {
    Unmeasured::NothingAnswered {
        reasons: all_reasons(obs),
        retries: retry_evidence(obs.calls.iter()),
        lifecycle: None,
    }
}

/// Probes whose answers were longer than their `max_tokens`.
/// Letters of a script no baseline answer used, in this audit's probe answers. The baseline's
/// scripts are those of its probe answers and first tokens; this audit's first tokens are not
/// read: one token sampled from a wide distribution can come from its far tail.
fn script_changed(case: &Case<'_>) -> Option<ScriptChanged> {
    let locked = case.baseline?;
    if case.traffic {
        return None;
    }
    let tier_tokens = locked
        .first_tokens
        .iter()
        .flat_map(|t| t.inputs.values())
        .flat_map(|i| &i.tokens);
    let outputs = locked.probes.values().flat_map(|p| &p.outputs);
    let baseline = scripts::scripts(outputs.clone().chain(tier_tokens).map(String::as_str));
    let current = || {
        case.observation
            .replies()
            .filter(|(c, _)| c.kind == CallKind::Probe)
            .map(|(_, r)| r.text.as_str())
    };
    let answers = scripts::answers_outside(&baseline, current());
    let read = current().count() as u64;
    let rate = scripts::unseen_rate(outputs.map(String::as_str));
    let p_value = scripts::surprise(answers, read, rate);
    // Noise of the unchanged model's own (a stray letter now and then) is not a finding: only
    // more answers in unseen scripts than the baseline's own rate of them explains at `alpha`.
    if answers == 0 || p_value >= case.alpha {
        return None;
    }
    let new = scripts::new_scripts(&baseline, current());
    Some(ScriptChanged {
        answers,
        of: read,
        baseline_rate: rate,
        p_value,
        baseline: baseline.iter().map(|s| (*s).to_owned()).collect(),
        new: new
            .into_iter()
            .map(|(script, (answers, characters))| NewScript {
                script: script.to_owned(),
                answers,
                characters,
            })
            .collect(),
    })
}

fn over_max_tokens(case: &Case<'_>) -> Option<MaxTokensExceeded> {
    // A span's completion count may include tokens the application asked for beyond the probe.
    if case.traffic {
        return None;
    }
    let over = |is: &dyn Fn(&CallRecord) -> bool, name: &str, max_tokens: u32| {
        let over: Vec<u64> = case
            .observation
            .replies()
            .filter(|(c, _)| is(c))
            .filter_map(|(_, r)| r.usage.output)
            .filter(|n| *n > u64::from(max_tokens))
            .collect();
        Some(OverLimit {
            probe: name.to_owned(),
            max_tokens,
            completion_tokens: *over.iter().max()?,
            answers: over.len() as u64,
        })
    };
    let mut probes: Vec<OverLimit> = case
        .probes
        .iter()
        .filter_map(|probe| {
            over(
                &|c| c.kind == CallKind::Probe && c.probe == probe.id,
                &probe.id,
                probe.max_tokens,
            )
        })
        .collect();
    // The first-token tier's one-token calls are judged alike: a provider that answers them
    // at length spends hundreds of times the plan.
    probes.extend(over(
        &|c| c.kind == CallKind::Tier,
        "first-token tier",
        crate::audit::first_tokens::TIER_MAX_TOKENS,
    ));
    (!probes.is_empty()).then_some(MaxTokensExceeded { probes })
}

/// Planned calls that were not answered (interrupted, over budget or spend cap, failed): the
/// pin's other checks still run on what was answered, but the pin cannot be ok.
fn calls_missing(obs: &Observation) -> Option<Unmeasured> {
    let answered = obs.replies().count() as u64;
    if obs.unanswered() == 0 || answered == 0 {
        return None;
    }
    let in_flight = obs
        .calls
        .iter()
        .filter(|c| matches!(c.result, CallResult::Cancelled(_)))
        .count() as u64;
    let never = obs.not_started.cancelled();
    Some(Unmeasured::CallsMissing {
        planned: obs.planned,
        answered,
        cancelled: in_flight + never,
        reasons: all_reasons(obs),
    })
}

/// Why calls of the pin ended without an answer, started or not.
fn all_reasons(obs: &Observation) -> Reasons {
    let mut reasons = failure_reasons(obs.calls.iter());
    reasons.extend(&obs.not_started);
    reasons
}

/// Traffic whose spans never say which model answered measures nothing about the pin's
/// identity: inconclusive, never ok.
fn served_not_reported(case: &Case<'_>) -> Option<Unmeasured> {
    let spans = case.observation.replies().count() as u64;
    let named = case
        .observation
        .replies()
        .any(|(_, r)| r.served_model.is_some());
    (case.traffic && !named).then_some(Unmeasured::ServedNotReported { spans })
}

/// Probes whose baseline has prompt token counts while this audit's answers have none: the
/// tokenizer and cost checks would otherwise pass by having nothing to compare.
fn tokens_missing(case: &Case<'_>) -> Option<Unmeasured> {
    let (mut probes, mut answers, mut without) = (Vec::new(), 0, 0);
    for probe in &case.probes {
        let Some((locked, replies)) = case.comparable(probe) else {
            continue;
        };
        let missing = replies.iter().filter(|r| r.usage.input.is_none()).count() as u64;
        if !locked.prompt_tokens.is_empty() && missing > 0 {
            probes.push(probe.id.clone());
            answers += replies.len() as u64;
            without += missing;
        }
    }
    (!probes.is_empty()).then_some(Unmeasured::TokensMissing {
        probes,
        answers,
        without_prompt_tokens: without,
    })
}

/// Answers whose usage held a count no call can have: their tokens and cost are unknown, and
/// the pin cannot be ok on them (the count is absent from `usage`, never 0).
fn tokens_implausible(obs: &Observation) -> Option<Unmeasured> {
    let of = obs.replies().count() as u64;
    let mut counts = obs.replies().filter_map(|(_, r)| r.usage.implausible);
    let first = counts.next()?;
    Some(Unmeasured::TokensImplausible {
        answers: 1 + counts.count() as u64,
        of,
        field: first.field.to_owned(),
        value: first.value,
        bound: crate::provider::MAX_TOKEN_COUNT,
    })
}

/// Each failed call's final outcome, in the provider's own words, counted.
fn failure_reasons<'a>(calls: impl Iterator<Item = &'a CallRecord>) -> Reasons {
    let mut reasons = Reasons::default();
    for call in calls {
        // Why retrying stopped adds to the outcome unless a single attempt met a terminal answer.
        let stopped = call
            .stopped
            .as_ref()
            .filter(|s| !matches!(s.class, StopClass::Terminal) || call.attempts > 1)
            .map(|s| Stop {
                class: s.class,
                reason: s.reason.clone(),
            });
        let reason = match &call.result {
            CallResult::Reply(_) => continue,
            CallResult::Rejected(r) => Reason::Refused {
                class: r.class,
                status: r.status,
                message: r.message.clone(),
                stopped,
            },
            CallResult::Unparseable(why) => Reason::Unparseable {
                why: why.clone(),
                stopped,
            },
            CallResult::Failed(f) => Reason::NoAnswer {
                kind: f.kind,
                message: f.message.clone(),
                stopped,
            },
            CallResult::Skipped(why) => Reason::Skipped(why.clone()),
            CallResult::Cancelled(why) => Reason::Cancelled(why.clone()),
        };
        reasons.add(reason, 1);
    }
    reasons
}

/// Attempts and waits behind the failures: what the retry layer did before giving up.
fn retry_evidence<'a>(calls: impl Iterator<Item = &'a CallRecord>) -> Retries {
    let (mut attempts, mut retried, mut waited) = (0u64, 0u64, Duration::ZERO);
    let mut stops: BTreeMap<String, u64> = BTreeMap::new();
    for call in calls {
        attempts += u64::from(call.attempts);
        retried += u64::from(call.attempts.saturating_sub(1));
        waited += call.waits.iter().sum::<Duration>();
        if let Some(stopped) = &call.stopped {
            let class = serde_json::to_value(stopped.class).ok();
            let name = class.as_ref().and_then(|c| c.as_str()).unwrap_or("unknown");
            *stops.entry(name.to_owned()).or_insert(0) += 1;
        }
    }
    Retries {
        attempts,
        retries: retried,
        waited_ms: waited.as_millis() as u64,
        stopped: stops,
    }
}

/// A pin whose calls were not made because it has no baseline: the notice, with the count.
fn skipped_for_baseline(case: &Case<'_>) -> Option<NoBaseline> {
    let skipped = case
        .observation
        .not_started
        .iter()
        .filter(|(r, _)| matches!(r, Reason::Skipped(Halt::NoBaseline)))
        .map(|(_, n)| n)
        .sum::<u64>();
    let mut notice = baseline_notice(case).filter(|_| skipped > 0)?;
    notice.calls_not_made = Some(skipped);
    Some(notice)
}

fn baseline_notice(case: &Case<'_>) -> Option<NoBaseline> {
    if case.baseline.is_some() {
        return None;
    }
    Some(NoBaseline {
        locked_model: case.locked.map(|l| l.model.clone()),
        calls_not_made: None,
        pin: case.pin.id.clone(),
        model: case.pin.model.clone(),
    })
}

fn served_identity(case: &Case<'_>) -> Option<ServedMismatch> {
    let mut accepted: BTreeSet<String> = case
        .pin
        .accept
        .iter()
        .map(|m| normalize_model_id(m))
        .collect();
    if let Some(base) = case.baseline {
        accepted.extend(base.served_models.keys().map(|m| normalize_model_id(m)));
    }
    let served = served_counts(case.observation);
    let mut unexpected: BTreeMap<String, u64> = served
        .iter()
        .filter(|(id, _)| !accepted.contains(*id))
        .map(|(id, n)| (id.clone(), *n))
        .collect();
    // A model the provider says answered in place of the served one (Anthropic's fallback
    // iterations) is unexpected even when the top-level ID is accepted.
    for (_, reply) in case.observation.replies() {
        if let Some(fallback) = &reply.fallback_model
            && reply.served_model.as_ref() != Some(fallback)
        {
            *unexpected.entry(normalize_model_id(fallback)).or_insert(0) += 1;
        }
    }
    if unexpected.is_empty() {
        return None;
    }
    let examples = case
        .observation
        .replies()
        .filter(|(_, r)| {
            r.served_model
                .as_deref()
                .is_some_and(|m| unexpected.contains_key(&normalize_model_id(m)))
        })
        .filter_map(|(_, r)| r.request_id.clone())
        .take(3)
        .collect();
    Some(ServedMismatch {
        from_traffic: case.traffic,
        requested: case.pin.model.clone(),
        accepted,
        served,
        unexpected,
        fallback_models: fallback_counts(case.observation),
        public_names: count(case.observation.replies().filter_map(|(_, r)| {
            r.gateway
                .as_ref()?
                .public_model
                .as_deref()
                .map(normalize_model_id)
        })),
        deployment_ids: count(
            case.observation
                .replies()
                .filter_map(|(_, r)| r.gateway.as_ref()?.deployment_id.clone()),
        ),
        gateway_fallbacks: count(case.observation.replies().filter_map(|(_, r)| {
            let g = r.gateway.as_ref()?;
            (g.fallbacks > 0).then(|| g.name.to_owned())
        })),
        examples,
    })
}

/// Served IDs, normalised, with counts; replies that named no model are not counted.
#[must_use]
pub fn served_counts(obs: &Observation) -> BTreeMap<String, u64> {
    count(
        obs.replies()
            .filter_map(|(_, r)| r.served_model.as_deref().map(normalize_model_id)),
    )
}

fn fallback_counts(obs: &Observation) -> BTreeMap<String, u64> {
    count(
        obs.replies()
            .filter_map(|(_, r)| r.fallback_model.as_deref().map(normalize_model_id)),
    )
}

#[must_use]
pub fn upstream_counts(obs: &Observation) -> BTreeMap<String, u64> {
    count(obs.replies().filter_map(|(_, r)| r.upstream.clone()))
}

fn count(items: impl Iterator<Item = String>) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_insert(0) += 1;
    }
    counts
}

fn upstream(case: &Case<'_>) -> Option<UpstreamMismatch> {
    let accepted: BTreeSet<String> = if case.pin.upstream.is_empty() {
        case.baseline?.upstreams.keys().cloned().collect()
    } else {
        case.pin.upstream.iter().cloned().collect()
    };
    if accepted.is_empty() {
        return None;
    }
    let seen = upstream_counts(case.observation);
    let unexpected: BTreeMap<String, u64> = seen
        .iter()
        .filter(|(u, _)| !accepted.contains(*u))
        .map(|(u, n)| (u.clone(), *n))
        .collect();
    if unexpected.is_empty() {
        return None;
    }
    Some(UpstreamMismatch {
        accepted,
        served: seen,
        unexpected,
    })
}

/// Prompt token counts per probe seen now, for probes whose baseline is comparable.
fn comparable_prompt_tokens(case: &Case<'_>) -> Vec<(String, Vec<u64>, BTreeSet<u64>)> {
    case.probes
        .iter()
        .filter_map(|probe| {
            let (locked, replies) = case.comparable(probe)?;
            let now: BTreeSet<u64> = replies.iter().filter_map(|r| r.usage.input).collect();
            (!now.is_empty()).then(|| (probe.id.clone(), locked.prompt_tokens.clone(), now))
        })
        .collect()
}

fn tokenizer(case: &Case<'_>) -> Option<TokenizerChanged> {
    let probes: Vec<TokenCounts> = comparable_prompt_tokens(case)
        .into_iter()
        .filter(|(_, then, now)| now.iter().any(|n| !then.contains(n)))
        .map(|(probe, locked, now)| TokenCounts {
            examples: moved_examples(case, &probe, &locked),
            probe,
            locked,
            now,
        })
        .collect();
    (!probes.is_empty()).then_some(TokenizerChanged { probes })
}

/// For traffic, up to three trace and span ids of calls whose prompt count left the lock's.
fn moved_examples(case: &Case<'_>, probe: &str, locked: &[u64]) -> Vec<String> {
    if !case.traffic {
        return Vec::new();
    }
    case.observation
        .replies()
        .filter(|(c, r)| c.probe == probe && r.usage.input.is_some_and(|n| !locked.contains(&n)))
        .filter_map(|(_, r)| r.request_id.clone())
        .take(3)
        .collect()
}

/// The per-token price to judge and count cost against: the pin's list price, else the price
/// recorded in its lock entry.
#[must_use]
pub fn reference_price(pin: &Pin, locked: Option<&LockedPin>) -> Option<Price> {
    pin.price.or_else(|| {
        locked?
            .effective_price
            .map(|LockedPrice { input, output, .. }| Price {
                input,
                output,
                cached_input: input,
            })
    })
}

/// Expected USD for a reply's usage at `price`; `None` when the provider gave no token counts.
#[must_use]
pub fn expected_cost(reply: &Reply, price: &Price) -> Option<f64> {
    let input = reply.usage.input? as f64;
    let output = reply.usage.output? as f64;
    let cached = (reply.usage.cached_input.unwrap_or(0) as f64).min(input);
    Some(
        ((input - cached) * price.input + cached * price.cached_input + output * price.output)
            / 1e6,
    )
}

fn cost(case: &Case<'_>) -> Option<CostChanged> {
    let price = reference_price(case.pin, case.baseline)?;
    let tolerance = case.pin.cost_tolerance;
    let (reported, expected) = case
        .observation
        .replies()
        .filter_map(|(_, r)| Some((r.reported_cost_usd?, expected_cost(r, &price)?)))
        .fold((0.0, 0.0), |(a, b), (r, e)| (a + r, b + e));
    let billed_vs_price =
        (expected > 0.0 && (reported / expected - 1.0).abs() > tolerance).then(|| BilledVsPrice {
            reported_usd: round6(reported),
            expected_usd: round6(expected),
            ratio: round4(reported / expected),
            price_per_mtok: PricePerMtok {
                input: price.input,
                output: price.output,
            },
        });
    let (then, now) = comparable_prompt_tokens(case)
        .iter()
        .filter_map(|(_, then, now)| {
            Some((
                median(then)?,
                median(&now.iter().copied().collect::<Vec<_>>())?,
            ))
        })
        .fold((0.0, 0.0), |(a, b), (t, n)| (a + t, b + n));
    let input_cost_per_call =
        (then > 0.0 && (now / then - 1.0).abs() > tolerance).then(|| InputCostPerCall {
            locked_usd: round6(then * price.input / 1e6),
            now_usd: round6(now * price.input / 1e6),
            change: round4(now / then - 1.0),
        });
    if billed_vs_price.is_none() && input_cost_per_call.is_none() {
        return None;
    }
    Some(CostChanged {
        billed_vs_price,
        input_cost_per_call,
        tolerance,
    })
}

fn median(values: &[u64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2] as f64),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0),
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn fingerprint(case: &Case<'_>) -> Option<FingerprintChanged> {
    let base = case.baseline?;
    if base.system_fingerprints.is_empty() {
        return None;
    }
    let new: BTreeSet<String> = case
        .observation
        .replies()
        .filter_map(|(_, r)| r.system_fingerprint.clone())
        .filter(|fp| !base.system_fingerprints.contains(fp))
        .collect();
    if new.is_empty() {
        return None;
    }
    Some(FingerprintChanged {
        locked: base.system_fingerprints.clone(),
        new,
    })
}

fn unmeasured_probes(case: &Case<'_>) -> Vec<Evidence> {
    let mut found = Vec::new();
    let mut changed = Vec::new();
    for probe in &case.probes {
        let calls = || {
            case.observation
                .calls
                .iter()
                .filter(|c| c.probe == probe.id)
        };
        // A probe whose calls were all cut short (interrupt, budget, spend cap) is the pin's
        // one note about missing calls, not a note of its own.
        let halted = calls().all(|c| matches!(c.result, CallResult::Cancelled(_)));
        if !halted && !calls().any(|c| matches!(c.result, CallResult::Reply(_))) {
            found.push(Evidence::Inconclusive(Unmeasured::Probe {
                probe: probe.id.clone(),
                reasons: failure_reasons(calls()),
                retries: retry_evidence(calls()),
            }));
        }
        if let Some(base) = case.baseline {
            let locked_digest = base.probes.get(&probe.id).map(|l| &l.digest);
            if locked_digest != Some(&probe.digest) {
                changed.push(ChangedProbe {
                    probe: probe.id.clone(),
                    locked_digest: locked_digest.cloned(),
                    digest: probe.digest.clone(),
                });
            }
        }
    }
    if !changed.is_empty() {
        found.push(Evidence::ProbeChanged(ProbeChanged { probes: changed }));
    }
    found
}

/// Logprobs the lock's tier had and this audit's tier calls lack or report as no distribution:
/// more than `UNUSABLE_SHARE` of the calls without usable ones leaves the logprob and sampling
/// tests short of what they claim to watch.
fn logprobs_missing(case: &Case<'_>) -> Option<Unmeasured> {
    let tier = case.baseline?.first_tokens.as_ref()?;
    if tier.top_logprobs == 0 {
        return None;
    }
    let counts = first_tokens::Testimonies::of(
        case.observation
            .replies()
            .filter(|(c, _)| c.kind == CallKind::Tier)
            .map(|(_, r)| r),
        tier.top_logprobs,
    );
    counts.short().then(|| Unmeasured::LogprobsMissing {
        calls: counts.calls,
        with_logprobs: counts.usable + counts.flawed.values().sum::<u64>(),
        inconsistent: counts
            .flawed
            .iter()
            .map(|(flaw, n)| (flaw.as_str().to_owned(), *n))
            .collect(),
    })
}

/// The behaviour statistics over every comparable probe: the baseline's outputs and completion
/// lengths against this audit's, Holm-corrected across all of the pin's tests at `alpha`.
#[must_use]
pub fn behaviour_verdict(case: &Case<'_>) -> Option<DriftVerdict> {
    // Spans carry token counts, not answers: there is no text to compare. An identity-only
    // audit was not planned to measure behaviour (one sample a probe would be a weak look at
    // `alpha` on every tick, outside the daemon's accumulated evidence).
    if case.traffic || case.identity_only {
        return None;
    }
    let probes: Vec<ProbeSamples> = case
        .probes
        .iter()
        .filter_map(|probe| {
            let (locked, replies) = case.comparable(probe)?;
            if replies.is_empty() {
                return None;
            }
            Some(ProbeSamples {
                probe_id: probe.id.clone(),
                compare: probe.compare,
                expect: probe.expect.clone(),
                normalize: probe.normalize.clone(),
                baseline: Samples {
                    outputs: locked.outputs.clone(),
                    lengths: locked.completion_tokens.clone(),
                },
                current: Samples {
                    outputs: replies.iter().map(|r| r.text.clone()).collect(),
                    lengths: replies.iter().filter_map(|r| r.usage.output).collect(),
                },
            })
        })
        .collect();
    let tier = case
        .baseline
        .and_then(|b| b.first_tokens.as_ref())
        .filter(|_| {
            case.observation
                .replies()
                .any(|(c, _)| c.kind == CallKind::Tier)
        });
    if probes.is_empty() && tier.is_none() {
        return None;
    }
    let seed = behaviour_seed(case);
    Some(compare_pin_resolving(
        &probes,
        |budget| {
            tier.map_or_else(Vec::new, |t| {
                first_tokens::tests(t, case.observation, budget, seed)
            })
        },
        case.alpha,
        case.resolve,
        seed,
    ))
}

/// A seed derived from the pin and what this audit saw: the same inputs give the same
/// permutations (and the same report), and the seed is in the evidence to replay it.
fn behaviour_seed(case: &Case<'_>) -> u64 {
    let mut text = case.pin.id.clone();
    for (_, reply) in case.observation.replies() {
        text.push('\0');
        text.push_str(&reply.text);
    }
    let digest = crate::lock::digest(text.as_bytes());
    u64::from_str_radix(&digest["sha256:".len().."sha256:".len() + 16], 16).unwrap_or(0)
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
