//! Judging real traffic: GenAI spans from OpenTelemetry, matched to pins and judged by the same
//! identity and lifecycle rules as probe calls, at no probe cost.
//!
//! A pin matches the spans whose requested model is the pin's model and whose provider (when
//! the span names one) is the pin's provider kind, so a pins.toml that works for `check` works
//! for traffic unchanged. Each matched span becomes an answered call of the pin; the judge then
//! compares served IDs with `accept` and the lock, and a retired ID still answering is
//! `retired_still_served`. A gateway deployment a span names (LiteLLM's `hidden_params` or
//! `litellm.provider.model`) is the served identity and its API base the upstream, as the
//! gateway's response headers are for probes.
//!
//! Prompt token counts only mean something for a prompt the lock knows: a span whose
//! `modelpin.probe.digest` is the locked digest of one of the pin's probes counts as an answer to
//! that probe, so the tokenizer and per-call input cost checks compare it with the lock. Other
//! probe checks (behaviour, `max_tokens`) are left to probes: spans carry no answer text.

pub mod budget;
pub mod json;
pub mod otlp;
pub mod proto;
pub mod spans;
pub mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::audit::judge::Case;
use crate::audit::lifecycle::{Facts, ProviderSignals, pin_lifecycle};
use crate::audit::{CallKind, CallRecord, CallResult, Observation, verdict};
use crate::config::{Config, Pin, Probe};
use crate::lock::{LoadedLock, LockedPin};
use crate::provider::gateway::{self, Gateway};
use crate::provider::{ProviderKind, Reply, Usage, normalize_model_id};
use crate::report::{PinReport, Report};
use spans::{Deployment, GenAiSpan};

/// The report over the pins that had traffic, and what did not match any pin.
pub struct Judged {
    pub report: Report,
    /// GenAI spans that matched no pin.
    pub unmatched: u64,
    /// (requested model, provider) of the spans that matched no pin, with counts, most seen
    /// first; `None` where the span did not say. Bounded by the spans read.
    pub unmatched_pairs: Vec<(Unmatched, u64)>,
}

/// What a span that matched no pin asked for, and of whom.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unmatched {
    pub requested: Option<String>,
    pub provider: Option<String>,
}

/// Judges `spans` against the config's pins and the lock.
#[must_use]
pub fn judge(
    config: &Config,
    lock: Option<&LoadedLock>,
    spans: &[GenAiSpan],
    facts: &Facts,
    strict: bool,
) -> Judged {
    let started_at = verdict::now();
    let mut by_pin: BTreeMap<&str, Vec<&GenAiSpan>> = BTreeMap::new();
    let mut unmatched = 0;
    let mut pairs: BTreeMap<Unmatched, u64> = BTreeMap::new();
    for span in spans {
        if let Some(pin) = pin_for(config, span) {
            by_pin.entry(pin.id.as_str()).or_default().push(span);
        } else {
            unmatched += 1;
            let pair = Unmatched {
                requested: span.requested.clone(),
                provider: span.provider.clone(),
            };
            *pairs.entry(pair).or_insert(0) += 1;
        }
    }
    let mut unmatched_pairs: Vec<(Unmatched, u64)> = pairs.into_iter().collect();
    unmatched_pairs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let reports = config
        .pins
        .iter()
        .filter_map(|pin| {
            Some(pin_report(
                config,
                lock,
                pin,
                by_pin.get(pin.id.as_str())?,
                facts,
            ))
        })
        .collect();
    let report = verdict::report(config, lock, started_at, reports, strict);
    Judged {
        report,
        unmatched,
        unmatched_pairs,
    }
}

/// The pin a span counts for: the first whose model it asked for, from the pin's provider kind
/// (or a name `[traffic] provider_names` adds), within the `[traffic]` allow-lists.
#[must_use]
pub fn pin_for<'c>(config: &'c Config, span: &GenAiSpan) -> Option<&'c Pin> {
    let traffic = &config.traffic;
    let allowed = |list: &[String], value: Option<&String>| {
        list.is_empty() || value.is_some_and(|v| list.contains(v))
    };
    if !allowed(&traffic.services, span.service.as_ref())
        || !allowed(&traffic.server_addresses, span.server_address.as_ref())
    {
        return None;
    }
    let asked = normalize_model_id(span.requested.as_deref()?);
    let provider = span.provider.as_deref().map(str::to_ascii_lowercase);
    config.pins.iter().find(|pin| {
        normalize_model_id(&pin.model) == asked
            && provider.as_deref().is_none_or(|p| {
                provider_names(pin).contains(&p) || traffic.provider_names.iter().any(|n| n == p)
            })
    })
}

/// One pin's verdict over its spans, by the probe rules that apply to answered calls.
#[must_use]
pub fn pin_report(
    config: &Config,
    lock: Option<&LoadedLock>,
    pin: &Pin,
    spans: &[&GenAiSpan],
    facts: &Facts,
) -> PinReport {
    let locked = lock.and_then(|l| l.lock.pins.get(&pin.id));
    let probes = fingerprinted(
        config.probes_of(pin),
        locked.filter(|l| l.model == pin.model),
    );
    let calls: Vec<CallRecord> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| call(i, s, &probes))
        .collect();
    // Only the probes some span answered: the others were not asked in this traffic.
    let probes = probes
        .into_iter()
        .filter(|p| calls.iter().any(|c| c.probe == p.id))
        .collect();
    let obs = Observation::complete(&pin.id, calls);
    let life = pin_lifecycle(config, pin, &obs, &ProviderSignals::default(), facts);
    let case = Case::new(pin, probes, &obs, locked)
        .with_lifecycle(life, Vec::new())
        .with_alpha(config.settings.alpha)
        .judged_as_traffic();
    verdict::pin_report(&case)
}

/// The pin's probes a span can be held against: those whose digest the lock recorded for the
/// pin's current model, unchanged since. A span names one by that digest.
fn fingerprinted<'c>(probes: Vec<&'c Probe>, baseline: Option<&LockedPin>) -> Vec<&'c Probe> {
    let Some(baseline) = baseline else {
        return Vec::new();
    };
    probes
        .into_iter()
        .filter(|p| {
            baseline
                .probes
                .get(&p.id)
                .is_some_and(|l| l.digest == p.digest)
        })
        .collect()
}

/// A span as an answered call; its trace and span ids stand where a request id would. A span
/// with a known probe digest and a prompt token count answers that probe; any other, `traffic`.
fn call(index: usize, span: &GenAiSpan, probes: &[&Probe]) -> CallRecord {
    let probe = probes
        .iter()
        .find(|p| span.input_tokens.is_some() && span.probe_digest.as_ref() == Some(&p.digest))
        .map_or("traffic", |p| p.id.as_str());
    let reply = Reply {
        served_model: span.served.as_deref().map(normalize_model_id),
        usage: Usage {
            input: span.input_tokens,
            output: span.output_tokens,
            ..Usage::default()
        },
        request_id: Some(format!("trace {} span {}", span.trace_id, span.span_id)),
        ..Reply::default()
    };
    CallRecord {
        probe: probe.to_owned(),
        kind: CallKind::Probe,
        sample: u32::try_from(index).unwrap_or(u32::MAX),
        result: CallResult::Reply(match &span.deployment {
            Some(d) => gateway::apply(reply, litellm(d)),
            None => reply,
        }),
        latency: Duration::ZERO,
        attempts: 1,
        waits: Vec::new(),
        stopped: None,
    }
}

/// LiteLLM's deployment as its response headers would have named it on a probe call.
fn litellm(deployment: &Deployment) -> Gateway {
    Gateway {
        name: "litellm",
        deployment: deployment.model.clone(),
        deployment_id: deployment.id.clone(),
        api_base: deployment.api_base.clone(),
        ..Gateway::default()
    }
}

/// The provider names instrumentations write for a pin's kind: GenAI conventions'
/// `gen_ai.provider.name` (and the older `gen_ai.system`) and OpenInference's `llm.provider`.
fn provider_names(pin: &Pin) -> &'static [&'static str] {
    match pin.kind {
        // An OpenAI-compatible endpoint is usually called through the OpenAI SDK.
        ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => &["openai"],
        ProviderKind::Anthropic => &["anthropic"],
        ProviderKind::Gemini => &[
            "gcp.gemini",
            "gcp.gen_ai",
            "gcp.vertex_ai",
            "vertex_ai",
            "gemini",
            "google",
        ],
        ProviderKind::Azure => &["azure.ai.openai", "az.ai.openai", "azure"],
        ProviderKind::OpenRouter => &["openrouter", "openai"],
    }
}

#[cfg(test)]
mod tests;
