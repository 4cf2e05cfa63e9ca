//! Evidence: one typed struct per finding code, and the message built from it.
//!
//! The judge fills these in; `Finding::from(Evidence)` is the only way to make a finding, so a
//! finding's code, severity, message and JSON evidence always agree, and a new code does not
//! compile until it has its evidence and its message. The JSON form of each struct is the
//! `evidence` object of the report contract (field names are part of it).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::finding::moved;
use crate::finding::reason::Reasons;
use crate::finding::{Code, Severity};
use crate::lifecycle::{Lifecycle, Signal, retirement_message};
use crate::stats::drift::DriftVerdict;

/// What one finding rests on; the variant decides the code.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    ServedModelMismatch(ServedMismatch),
    UpstreamMismatch(UpstreamMismatch),
    TokenizerChanged(TokenizerChanged),
    CostChanged(CostChanged),
    BehaviorDrift(Box<DriftVerdict>),
    /// `behavior_drift` raised by the evidence accumulated over a pin's audits on an audit that
    /// did not reject on its own.
    DriftAccumulated(DriftAccumulated),
    ModelNotFound(NotFound),
    RetiredStillServed(StillServed),
    DeprecationScheduled(Box<Lifecycle>),
    SunsetAnnounced(Sunset),
    FingerprintChanged(FingerprintChanged),
    MaxTokensExceeded(MaxTokensExceeded),
    ScriptChanged(ScriptChanged),
    NoBaseline(NoBaseline),
    ProbeChanged(ProbeChanged),
    Inconclusive(Unmeasured),
}

impl Evidence {
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Evidence::ServedModelMismatch(_) => Code::ServedModelMismatch,
            Evidence::UpstreamMismatch(_) => Code::UpstreamMismatch,
            Evidence::TokenizerChanged(_) => Code::TokenizerChanged,
            Evidence::CostChanged(_) => Code::CostChanged,
            Evidence::BehaviorDrift(_) | Evidence::DriftAccumulated(_) => Code::BehaviorDrift,
            Evidence::ModelNotFound(_) => Code::ModelNotFound,
            Evidence::RetiredStillServed(_) => Code::RetiredStillServed,
            Evidence::DeprecationScheduled(_) => Code::DeprecationScheduled,
            Evidence::SunsetAnnounced(_) => Code::SunsetAnnounced,
            Evidence::FingerprintChanged(_) => Code::FingerprintChanged,
            Evidence::MaxTokensExceeded(_) => Code::MaxTokensExceeded,
            Evidence::ScriptChanged(_) => Code::ScriptChanged,
            Evidence::NoBaseline(_) => Code::NoBaseline,
            Evidence::ProbeChanged(_) => Code::ProbeChanged,
            Evidence::Inconclusive(_) => Code::Inconclusive,
        }
    }

    /// The code's severity, except where the evidence changes it: a retirement further out than
    /// every `warn_before` window is worth knowing, not a warning; an inconclusive streak that
    /// alerts is a warning.
    #[must_use]
    pub fn severity(&self) -> Option<Severity> {
        match self {
            Evidence::DeprecationScheduled(life) if life.window.is_none() => Some(Severity::Info),
            // Only a third party says the date has passed: worth a warning, not a failed build.
            Evidence::RetiredStillServed(s) if s.lifecycle.secondary_only() => {
                Some(Severity::Warning)
            }
            Evidence::Inconclusive(Unmeasured::Streak { .. }) => Some(Severity::Warning),
            other => other.code().severity(),
        }
    }

    /// One sentence a user reads first.
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            Evidence::ServedModelMismatch(e) => e.message(),
            Evidence::UpstreamMismatch(e) => e.message(),
            Evidence::TokenizerChanged(e) => e.message(),
            Evidence::CostChanged(e) => e.message(),
            Evidence::BehaviorDrift(v) => drift_message(v),
            Evidence::DriftAccumulated(e) => e.message(),
            Evidence::ModelNotFound(e) => e.message(),
            Evidence::RetiredStillServed(e) => e.message(),
            Evidence::DeprecationScheduled(life) => scheduled_message(life),
            Evidence::SunsetAnnounced(e) => e.message(),
            Evidence::FingerprintChanged(e) => e.message(),
            Evidence::MaxTokensExceeded(e) => e.message(),
            Evidence::ScriptChanged(e) => e.message(),
            Evidence::NoBaseline(e) => e.message(),
            Evidence::ProbeChanged(e) => e.message(),
            Evidence::Inconclusive(e) => e.message(),
        }
    }

    /// The JSON `evidence` object.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            Evidence::ServedModelMismatch(e) => serde_json::to_value(e),
            Evidence::UpstreamMismatch(e) => serde_json::to_value(e),
            Evidence::TokenizerChanged(e) => serde_json::to_value(e),
            Evidence::CostChanged(e) => serde_json::to_value(e),
            Evidence::BehaviorDrift(e) => return drift_json(e),
            Evidence::DriftAccumulated(e) => Ok(serde_json::json!({ "accumulated": e })),
            Evidence::ModelNotFound(e) => serde_json::to_value(e),
            Evidence::RetiredStillServed(e) => serde_json::to_value(e),
            Evidence::DeprecationScheduled(e) => serde_json::to_value(e),
            Evidence::SunsetAnnounced(e) => serde_json::to_value(e),
            Evidence::FingerprintChanged(e) => serde_json::to_value(e),
            Evidence::MaxTokensExceeded(e) => serde_json::to_value(e),
            Evidence::ScriptChanged(e) => serde_json::to_value(e),
            Evidence::NoBaseline(e) => serde_json::to_value(e),
            Evidence::ProbeChanged(e) => serde_json::to_value(e),
            Evidence::Inconclusive(e) => serde_json::to_value(e),
        };
        value.unwrap_or(serde_json::Value::Null)
    }
}

/// Served IDs outside `accept` (and the lock's served IDs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedMismatch {
    pub requested: String,
    pub accepted: BTreeSet<String>,
    pub served: BTreeMap<String, u64>,
    pub unexpected: BTreeMap<String, u64>,
    /// Models the provider (or a gateway) says answered in place of the requested one.
    pub fallback_models: BTreeMap<String, u64>,
    /// The names the response bodies gave when a gateway named the deployment that served.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub public_names: BTreeMap<String, u64>,
    /// Gateway deployment ids (LiteLLM `x-litellm-model-id`), shown but not compared: they
    /// change when a deployment's key rotates.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub deployment_ids: BTreeMap<String, u64>,
    /// Answers a gateway says came from a fallback step, by gateway.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub gateway_fallbacks: BTreeMap<String, u64>,
    /// Up to three request ids (or trace and span ids, for traffic) of unexpected answers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Judged from traffic spans rather than probe calls: the message counts spans.
    #[serde(skip)]
    pub from_traffic: bool,
}

impl ServedMismatch {
    fn message(&self) -> String {
        let (worst, count) = worst(&self.unexpected);
        let total: u64 = self.served.values().sum();
        let unit = if self.from_traffic { "span" } else { "call" };
        let mut message = format!(
            "served `{worst}` ({count} of {}) where the pin accepts {}",
            crate::words::count(total, unit),
            quoted_list(&self.accepted)
        );
        if !self.public_names.is_empty() {
            let names: BTreeSet<String> = self.public_names.keys().cloned().collect();
            let _ = write!(
                message,
                "; the gateway's response bodies named {}",
                quoted_list(&names)
            );
        }
        if let Some(n) = self.fallback_models.get(worst) {
            let _ = write!(
                message,
                " (a fallback, {})",
                crate::words::count(*n, "time")
            );
        }
        message
    }
}

/// OpenRouter upstream hosts outside the accepted set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpstreamMismatch {
    pub accepted: BTreeSet<String>,
    pub served: BTreeMap<String, u64>,
    pub unexpected: BTreeMap<String, u64>,
}

impl UpstreamMismatch {
    fn message(&self) -> String {
        let (worst, count) = worst(&self.unexpected);
        format!(
            "served by upstream `{worst}` ({count} of {}) where the pin accepts {}",
            crate::words::count(self.served.values().sum::<u64>(), "call"),
            quoted_list(&self.accepted)
        )
    }
}

/// Prompt token counts of unchanged probes that moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenizerChanged {
    /// At least one.
    pub probes: Vec<TokenCounts>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenCounts {
    pub probe: String,
    pub locked: Vec<u64>,
    pub now: BTreeSet<u64>,
    /// Up to three trace and span ids of traffic calls with a count the lock does not have.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl TokenizerChanged {
    fn message(&self) -> String {
        let Some(first) = self.probes.first() else {
            return "prompt token counts changed".to_owned();
        };
        format!(
            "prompt token count of unchanged probe `{}` went from {} to {}: a different tokenizer or chat template answers",
            first.probe,
            json_list(&first.locked),
            json_list(&first.now)
        )
    }
}

/// What the price says a call should cost against what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostChanged {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billed_vs_price: Option<BilledVsPrice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_cost_per_call: Option<InputCostPerCall>,
    pub tolerance: f64,
}

/// The provider's reported cost against usage × price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BilledVsPrice {
    pub reported_usd: f64,
    pub expected_usd: f64,
    pub ratio: f64,
    pub price_per_mtok: PricePerMtok,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PricePerMtok {
    pub input: f64,
    pub output: f64,
}

/// Prompt tokens per call at the pinned input price, then and now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputCostPerCall {
    pub locked_usd: f64,
    pub now_usd: f64,
    pub change: f64,
}

impl CostChanged {
    fn message(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = &self.billed_vs_price {
            parts.push(format!(
                "the provider billed {:.2}x what the price predicts",
                b.ratio
            ));
        }
        if let Some(i) = &self.input_cost_per_call {
            parts.push(format!(
                "prompt tokens per call changed by {:+.1}%: at the pinned input price, ${} → ${} per call",
                i.change * 100.0,
                json_number(i.locked_usd),
                json_number(i.now_usd)
            ));
        }
        parts.join("; ")
    }
}

/// The provider refused the model as unknown or gone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotFound {
    pub status: u16,
    pub code: Option<String>,
    #[serde(rename = "type")]
    pub error_type: Option<String>,
    pub provider_message: String,
    pub request_id: Option<String>,
    pub calls_refused: usize,
    /// What the lifecycle data says about the model, when it was resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
}

impl NotFound {
    fn message(&self) -> String {
        let base = format!(
            "the provider says the model does not exist or is gone: {}",
            self.provider_message
        );
        match &self.lifecycle {
            Some(life) => format!("{base} ({})", retirement_message(life)),
            None => base,
        }
    }
}

/// Past its retirement and still answering, with what changed in the same audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StillServed {
    #[serde(flatten)]
    pub lifecycle: Lifecycle,
    pub reroute: Reroute,
}

/// Which signs of another model the same audit showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[allow(clippy::struct_excessive_bools)]
pub struct Reroute {
    pub served_id_changed: bool,
    pub upstream_changed: bool,
    pub tokenizer_changed: bool,
    pub price_changed: bool,
    pub behaviour_changed: bool,
}

impl Reroute {
    /// The signs, named as the message lists them.
    fn changed(self) -> Vec<&'static str> {
        [
            (self.served_id_changed, "served_id"),
            (self.upstream_changed, "upstream"),
            (self.tokenizer_changed, "tokenizer"),
            (self.price_changed, "price"),
            (self.behaviour_changed, "behaviour"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, what)| what)
        .collect()
    }
}

impl StillServed {
    fn message(&self) -> String {
        let life = &self.lifecycle;
        let changed = self.reroute.changed();
        let verdict = if changed.is_empty() {
            "no change in served ID, tokenizer or price was seen in this audit: presumed rerouted until the behaviour probes clear it".to_owned()
        } else {
            format!("rerouted: {} changed in this audit", changed.join(", "))
        };
        let source = life
            .sources
            .first()
            .map_or("the lifecycle data", |e| e.source.as_str());
        let when = match life.retirement {
            Some(crate::lifecycle::Retirement::Gone | crate::lifecycle::Retirement::Announced)
            | None => format!("is retired per {source}"),
            Some(when) => format!("was retired on {when} per {source}"),
        };
        format!("`{}` {when} and still answers; {verdict}", life.model)
    }
}

fn scheduled_message(life: &Lifecycle) -> String {
    let message = retirement_message(life);
    match life.days_left {
        Some(days) => format!(
            "{message} ({} left)",
            crate::words::count(days.unsigned_abs(), "day")
        ),
        None => message,
    }
}

/// End-of-life statements the provider made during the audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sunset {
    /// At least one, sorted by source.
    pub signals: Vec<Signal>,
}

impl Sunset {
    fn message(&self) -> String {
        let Some(first) = self.signals.first() else {
            return "the provider announces an end of life".to_owned();
        };
        let date = first
            .retirement
            .date()
            .map_or_else(String::new, |d| format!(" (retirement {d})"));
        format!(
            "the provider announces an end of life: {}{date}",
            first.source
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FingerprintChanged {
    pub locked: Vec<String>,
    pub new: BTreeSet<String>,
}

impl FingerprintChanged {
    fn message(&self) -> String {
        let first = self.new.iter().next().map_or("", String::as_str);
        format!("system_fingerprint `{first}` was not seen when the baseline was locked")
    }
}

/// Answers written in a script none of the baseline's answers used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptChanged {
    /// This audit's answers with a letter of a script the baseline never used, of `of` read.
    pub answers: u64,
    pub of: u64,
    /// How often the baseline's own answers showed a script no other baseline answer did: the
    /// rate at which the unchanged model strays into an unseen script.
    pub baseline_rate: f64,
    /// The chance of `answers` or more of `of` at that rate; under the pin's alpha.
    pub p_value: f64,
    /// The scripts the baseline's answers used.
    pub baseline: Vec<String>,
    /// At least one.
    pub new: Vec<NewScript>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewScript {
    pub script: String,
    /// Answers of this audit with a letter of it.
    pub answers: u64,
    /// Some of its letters as they came.
    pub characters: String,
}

impl ScriptChanged {
    fn message(&self) -> String {
        let new: Vec<String> = self
            .new
            .iter()
            .map(|n| {
                format!(
                    "{} in {} answer{}",
                    n.script,
                    n.answers,
                    if n.answers == 1 { "" } else { "s" }
                )
            })
            .collect();
        let baseline = if self.baseline.is_empty() {
            "no script at all".to_owned()
        } else {
            self.baseline.join(", ")
        };
        format!(
            "{} of {} answers are written in a script the baseline never used: {} (the baseline's answers used {baseline}; its own stray rate of {:.1} % explains this with chance {:.1e})",
            self.answers,
            self.of,
            new.join("; "),
            self.baseline_rate * 100.0,
            self.p_value
        )
    }
}

/// Answers longer than the probe's `max_tokens`: the provider ignored the limit, so spend can
/// pass the plan's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxTokensExceeded {
    /// At least one.
    pub probes: Vec<OverLimit>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverLimit {
    pub probe: String,
    pub max_tokens: u32,
    /// The longest answer, in completion tokens.
    pub completion_tokens: u64,
    /// Answers over the limit.
    pub answers: u64,
}

impl MaxTokensExceeded {
    fn message(&self) -> String {
        let Some(first) = self.probes.first() else {
            return "answers were longer than max_tokens".to_owned();
        };
        format!(
            "the provider ignored max_tokens: probe `{}` asked for at most {} completion tokens and got up to {} ({} answer{}); spend can pass the plan's estimate",
            first.probe,
            first.max_tokens,
            first.completion_tokens,
            first.answers,
            if first.answers == 1 { "" } else { "s" }
        )
    }
}

/// The lock has nothing comparable for the pin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoBaseline {
    pub locked_model: Option<String>,
    /// Planned calls not made for want of a baseline (`check` spends nothing it cannot compare).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_not_made: Option<u64>,
    #[serde(skip)]
    pub pin: String,
    #[serde(skip)]
    pub model: String,
}

impl NoBaseline {
    fn message(&self) -> String {
        let skipped = match self.calls_not_made {
            Some(n) => {
                format!("nothing to compare with, so none of its {n} planned calls were made")
            }
            None => "tokenizer, price and behaviour checks skipped".to_owned(),
        };
        match &self.locked_model {
            Some(old) => format!(
                "modelpin.lock was recorded for model `{old}`, the pin now asks for `{}` ({skipped}): run `modelpin lock --pin {}`",
                self.model, self.pin
            ),
            None => format!(
                "no baseline in modelpin.lock for this pin: {skipped}; run `modelpin lock --pin {}`",
                self.pin
            ),
        }
    }
}

/// Probes whose definition differs from the one the baseline was recorded with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeChanged {
    /// At least one.
    pub probes: Vec<ChangedProbe>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedProbe {
    pub probe: String,
    pub locked_digest: Option<String>,
    pub digest: String,
}

impl ProbeChanged {
    fn message(&self) -> String {
        let first = self.probes.first().map_or("", |p| p.probe.as_str());
        format!(
            "probe `{first}` is not in the baseline as it is now: not comparable until `modelpin lock` records it"
        )
    }
}

/// Why something could not be measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Unmeasured {
    /// No call of the pin was answered.
    NothingAnswered {
        reasons: Reasons,
        retries: Retries,
        /// Set when a retired model answers only quota errors (a masked retirement).
        #[serde(skip_serializing_if = "Option::is_none")]
        lifecycle: Option<Lifecycle>,
    },
    /// No call of one probe was answered.
    Probe {
        probe: String,
        reasons: Reasons,
        retries: Retries,
    },
    /// Some planned calls were answered, others not: no verdict of ok on part of the plan.
    CallsMissing {
        planned: u64,
        answered: u64,
        cancelled: u64,
        reasons: Reasons,
    },
    /// The answers lacked what a check needs (token counts for the tokenizer and cost checks).
    TokensMissing {
        probes: Vec<String>,
        answers: u64,
        without_prompt_tokens: u64,
    },
    /// Answers whose usage held a token count past `provider::MAX_TOKEN_COUNT`: their tokens
    /// and cost are unmeasured, never read as 0.
    TokensImplausible {
        answers: u64,
        of: u64,
        field: String,
        value: f64,
        bound: u64,
    },
    /// Traffic whose spans did not say which model answered: the served identity is unmeasured.
    ServedNotReported { spans: u64 },
    /// The lock's first-token calls came with logprobs; this audit's came without (or with too
    /// few tokens to test, or with logprobs that are no distribution): the logprob and sampling
    /// tests could not measure.
    LogprobsMissing {
        calls: u64,
        with_logprobs: u64,
        /// Calls whose logprobs were no distribution, by reason.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        inconsistent: BTreeMap<String, u64>,
    },
    /// Several audits in a row measured nothing (what the alert says).
    Streak {
        consecutive: u32,
        latest: Option<serde_json::Value>,
        #[serde(skip)]
        latest_message: Option<String>,
        /// What the latest audit said to do (its findings are stored, no longer typed).
        #[serde(skip)]
        latest_action: Option<String>,
    },
}

/// What the retry layer did before giving up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[allow(clippy::struct_field_names)] // `retries` is the key reports have always carried
pub struct Retries {
    pub attempts: u64,
    pub retries: u64,
    pub waited_ms: u64,
    pub stopped: BTreeMap<String, u64>,
}

impl Unmeasured {
    fn message(&self) -> String {
        match self {
            Unmeasured::NothingAnswered {
                lifecycle: Some(life),
                ..
            } => format!(
                "possible retirement masked by quota: every call was refused for quota, and {}",
                retirement_message(life)
            ),
            Unmeasured::NothingAnswered { reasons, .. } => {
                let first = reasons
                    .headline()
                    .unwrap_or_else(|| "no calls were made".to_owned());
                match reasons.breaker() {
                    Some((provider, calls)) => format!(
                        "no call succeeded: {first}; then the circuit breaker for provider `{provider}` opened, so {} not made",
                        if calls == 1 {
                            "1 call was".to_owned()
                        } else {
                            format!("{calls} calls were")
                        }
                    ),
                    None => format!("no call succeeded: {first}"),
                }
            }
            Unmeasured::Probe { probe, .. } => format!("probe `{probe}`: no call succeeded"),
            Unmeasured::CallsMissing {
                planned,
                answered,
                cancelled,
                reasons,
            } => {
                let first = reasons
                    .sorted()
                    .into_iter()
                    .next()
                    .map(|(text, _, _)| text)
                    .unwrap_or_default();
                format!(
                    "{} of {planned} planned calls were not answered ({cancelled} cancelled), so this is no all-clear: {first}",
                    planned - answered
                )
            }
            Unmeasured::TokensMissing {
                probes,
                answers,
                without_prompt_tokens,
            } => format!(
                "{without_prompt_tokens} of {answers} answers carried no usable prompt token count (missing, negative, fractional or absurd) on probe{} {}: the tokenizer and cost checks could not measure",
                if probes.len() == 1 { "" } else { "s" },
                probes
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unmeasured::TokensImplausible {
                answers,
                of,
                field,
                value,
                bound,
            } => format!(
                "{answers} of {of} answers reported a token count no call can have (`{field}` = {value}, above {bound}, ten times the largest context window offered): their tokens and cost are unmeasured, and the spend cap could not count them"
            ),
            Unmeasured::LogprobsMissing {
                calls,
                with_logprobs,
                inconsistent,
            } if inconsistent.is_empty() => format!(
                "the provider reported logprobs at the lock, but {} of {calls} first-token calls came without them: the logprob and sampling tests could not measure (the provider's API or serving stack changed)",
                calls - with_logprobs
            ),
            Unmeasured::LogprobsMissing {
                calls,
                with_logprobs,
                inconsistent,
            } => format!(
                "{} of {calls} first-token calls came without logprobs and {} with logprobs that are no distribution ({}): the logprob and sampling tests could not measure (the provider's serving stack reports something other than probabilities)",
                calls - with_logprobs,
                inconsistent.values().sum::<u64>(),
                inconsistent
                    .iter()
                    .map(|(why, n)| format!("{why}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unmeasured::ServedNotReported { spans } => format!(
                "none of {spans} span{} named the model that answered (`gen_ai.response.model` or `llm.model_name`): the served model was not measured",
                if *spans == 1 { "" } else { "s" }
            ),
            Unmeasured::Streak {
                consecutive,
                latest_message,
                ..
            } => format!(
                "no measurement for {consecutive} consecutive audits: {}",
                latest_message.as_deref().unwrap_or("calls failed")
            ),
        }
    }
}

/// The behaviour evidence accumulated since the lock, where it alarmed (`alert::lifetime`): the
/// `accumulated` object of a daemon's `behavior_drift`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftAccumulated {
    /// `first_audit` (the first audit after the lock rejected on its own at `alpha`),
    /// `early_audit` (one of the next 71 did, at `alpha / 8`), `later_audit` (a later one did, at
    /// the later audits' level) or `accumulated`.
    pub cause: &'static str,
    /// Audits weighed since the lock when it alarmed, and now.
    pub audits_at_alarm: u64,
    pub audits: u64,
    pub alarm_at: chrono::DateTime<chrono::Utc>,
    /// The Shiryaev–Roberts statistic now, and its threshold.
    pub statistic: f64,
    pub threshold: f64,
    /// Since when the statistic has stayed at 1 or above.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Mean years to a false alarm at this schedule once the early audits are past, at least.
    pub years_to_false_alarm: f64,
    /// The level of the alarming audit's own look, when it was the cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub look: Option<f64>,
}

impl DriftAccumulated {
    /// The sentence for an alarm the audit at hand did not raise on its own.
    #[must_use]
    pub fn message(&self) -> String {
        let since = self
            .since
            .map(|s| format!(", building since {}", s.format("%Y-%m-%d %H:%M UTC")))
            .unwrap_or_default();
        match self.cause {
            "first_audit" => format!(
                "the answers changed: the first audit after the lock rejected on its own ({} since; re-lock once confirmed)",
                crate::words::count(self.audits, "audit")
            ),
            "early_audit" => format!(
                "the answers changed: audit {} after the lock rejected on its own at alpha/8, as the first 72 after a lock do ({} since; re-lock once confirmed)",
                self.audits_at_alarm,
                crate::words::count(self.audits, "audit")
            ),
            "later_audit" => format!(
                "the answers changed: audit {} after the lock rejected on its own at the later audits' level{} ({} since; re-lock once confirmed)",
                self.audits_at_alarm,
                self.look.map(|l| format!(", {l:.1e}")).unwrap_or_default(),
                crate::words::count(self.audits, "audit")
            ),
            _ => format!(
                "the answers changed gradually: the evidence of {} since the lock reached {:.3e} at {}{since}, past its threshold {:.3e} (with each audit's own look, a false alarm comes once in {:.0} years on average)",
                crate::words::count(self.audits_at_alarm, "audit"),
                self.statistic,
                self.alarm_at.format("%Y-%m-%d %H:%M UTC"),
                self.threshold,
                self.years_to_false_alarm
            ),
        }
    }

    /// The clause added to an audit's own `behavior_drift` message.
    #[must_use]
    pub fn clause(&self) -> String {
        match self.cause {
            "first_audit" | "early_audit" | "later_audit" => format!(
                "; alarmed since audit {} after the lock ({})",
                self.audits_at_alarm,
                self.alarm_at.format("%Y-%m-%d %H:%M UTC")
            ),
            _ => format!(
                "; evidence of {} since the lock: {:.3e}, threshold {:.3e}{}",
                crate::words::count(self.audits, "audit"),
                self.statistic,
                self.threshold,
                self.since
                    .map(|s| format!(", building since {}", s.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The headline: what the first rejected test saw move, which test it was and how sure.
fn drift_message(verdict: &DriftVerdict) -> String {
    let mut rejected = verdict.tests.iter().filter(|t| t.rejected);
    let Some(first) = rejected.next() else {
        return "the answers changed".to_owned();
    };
    let what = moved::line(first).unwrap_or_else(|| moved::fallback(first));
    let more = match rejected.count() {
        0 => String::new(),
        n => format!(
            "; {n} more {} rejected",
            crate::words::noun(n as u64, "test")
        ),
    };
    format!(
        "the answers changed: {what} ({}; p = {:.2e} after Holm, alpha {}{more})",
        test_name(first.result.test),
        first.adjusted_p.unwrap_or(first.result.p_value),
        verdict.alpha
    )
}

/// The verdict as evidence, with `what_moved`: one line per rejected test, then the tests that
/// did not reject but moved most (`moved::lines`).
fn drift_json(verdict: &DriftVerdict) -> serde_json::Value {
    let mut value = serde_json::to_value(verdict).unwrap_or(serde_json::Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.insert(
            moved::WHAT_MOVED.to_owned(),
            serde_json::Value::from(moved::lines(verdict)),
        );
    }
    value
}

fn test_name(kind: crate::stats::TestKind) -> &'static str {
    match kind {
        crate::stats::TestKind::PassRate => "the pass rate dropped",
        crate::stats::TestKind::Answers => "the distribution of answers shifted",
        crate::stats::TestKind::Length => "completion lengths shifted",
        crate::stats::TestKind::Mmd => "the answer texts differ",
        crate::stats::TestKind::FirstTokens => {
            "the first tokens on border inputs shifted, so the serving stack changed: weights, quantization, kernels or sampling"
        }
        crate::stats::TestKind::Logprobs => {
            "the reported first-token probabilities moved beyond the provider's own spread, so the serving stack changed: weights, quantization or kernels"
        }
        crate::stats::TestKind::Sampling => {
            "the provider samples its reported probabilities differently from how it did at the lock, so its sampling changed: temperature, top_p or top_k"
        }
    }
}

/// The most frequent entry (the last of equals, in key order).
fn worst(counts: &BTreeMap<String, u64>) -> (&str, u64) {
    counts.iter().fold(
        ("", 0),
        |best, (id, n)| if *n >= best.1 { (id, *n) } else { best },
    )
}

fn quoted_list(items: &BTreeSet<String>) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A list as JSON writes it (`[12,13]`), as earlier messages showed token counts.
fn json_list<T: Serialize>(items: T) -> String {
    serde_json::to_string(&items).unwrap_or_default()
}

/// A number as JSON writes it.
fn json_number(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}
