//! `[[pin]]`: what each pinned model is expected to be, with its defaults filled in.

use std::collections::HashMap;

use chrono::NaiveDate;
use toml::Spanned;
use toml::value::Datetime;

use super::check::{Check, Reported};
use super::diagnostic::{backticked, suggest};
use super::probes::Probes;
use super::providers::Known;
use super::raw::{RawPin, RawPrice, Str};
use super::{Pin, Price};
use crate::provider::ProviderKind;
use crate::provider::modality::Modality;

pub(crate) const DEFAULT_SAMPLES: u32 = 10;
pub(crate) const DEFAULT_COST_TOLERANCE: f64 = 0.02;

/// What a pin may refer to.
pub(crate) struct Refs<'a> {
    pub providers: &'a Known,
    pub alerts: &'a [String],
}

pub(crate) fn pins(
    check: &mut Check,
    raw: Vec<Spanned<RawPin>>,
    refs: &Refs,
    probes: &mut Probes,
) -> Vec<Pin> {
    // Spans, not formatted locations: turning a span into line:column scans the file, which made
    // loading quadratic in the number of pins; only a duplicate needs it.
    let mut seen: HashMap<String, std::ops::Range<usize>> = HashMap::new();
    let mut out = Vec::new();
    for pin in raw {
        let pin = pin.into_inner();
        let id = &pin.id;
        if let Some(first) = seen.get(id.get_ref()) {
            let first = check.src.location(first.clone());
            check
                .error(id.span(), format!("duplicate pin id `{}`", id.get_ref()))
                .note(format!("first defined at {first}"));
        } else {
            seen.insert(id.get_ref().clone(), id.span());
        }
        out.extend(one(check, &pin, refs, probes));
    }
    out
}

fn one(check: &mut Check, raw: &RawPin, refs: &Refs, probes: &mut Probes) -> Option<Pin> {
    let id = check.identifier(&raw.id, "id", "pin id");
    let model = check.label(&raw.model, "model", crate::text::MAX_ID_CHARS);
    let kind = provider_kind(check, &raw.provider, refs.providers);
    let deployment = kind.map(|k| deployment(check, raw, k));
    let upstream = kind.and_then(|k| upstream(check, raw, k));
    let accept = accept(check, raw);
    let probe_ids = probe_ids(check, raw, probes);
    let samples = match &raw.samples {
        Some(s) => check
            .at_least_one(s, "samples")
            .and_then(|n| within_max_samples(check, s, n, &PROBE_SAMPLES)),
        None => Some(DEFAULT_SAMPLES),
    };
    let first_token_samples = match &raw.first_token_samples {
        Some(s) => check
            .at_least_one(s, "first_token_samples")
            .and_then(|n| within_max_samples(check, s, n, &FIRST_TOKEN_SAMPLES)),
        None => Some(DEFAULT_FIRST_TOKEN_SAMPLES),
    };
    let price = match &raw.price {
        Some(p) => price(check, p).map(Some),
        None => Some(None),
    };
    let cost_tolerance = match &raw.cost_tolerance {
        Some(c) => check.non_negative(c, "cost_tolerance"),
        None => Some(DEFAULT_COST_TOLERANCE),
    };
    let retires_on = match &raw.retires_on {
        Some(d) => retires_on(check, d).map(Some),
        None => Some(None),
    };
    let schedule = match &raw.schedule {
        Some(s) => check.schedule(s).map(Some),
        None => Some(None),
    };
    let alerts = alert_names(
        check,
        raw.alerts.as_deref().unwrap_or_default(),
        refs.alerts,
    );
    let model = model?;
    chat_only(check, raw, &model)?;
    Some(Pin {
        id: id?,
        provider: raw.provider.get_ref().clone(),
        kind: kind?,
        deployment: deployment?.ok()?.unwrap_or_else(|| model.clone()),
        accept: accept.ok()?.unwrap_or_else(|| vec![model.clone()]),
        model,
        probes: probe_ids,
        samples: samples?,
        price: price?,
        cost_tolerance: cost_tolerance?,
        upstream: upstream?,
        retires_on: retires_on?,
        schedule: schedule?,
        alerts: alerts?,
        first_tokens: raw.first_tokens.unwrap_or(true),
        first_token_samples: first_token_samples?,
    })
}

/// A model that is not a chat model (embedding, audio, image, video, moderation) cannot answer
/// chat probes or the first-token tier, so no pin can audit it: its lifecycle is what `scan`
/// reports wherever the code names it.
fn chat_only(check: &mut Check, raw: &RawPin, model: &str) -> Option<()> {
    let Some(kind) = Modality::non_chat(model) else {
        return Some(());
    };
    check
        .error(
            raw.model.span(),
            format!("`{model}` is {kind}; modelpin's probes and first-token tier are chat calls"),
        )
        .help(
            "remove this pin: `modelpin scan` reports the lifecycle of this ID (retired, retiring, its replacement) wherever the code names it, which is all modelpin can watch for it",
        );
    None
}

/// The kind of the named provider; `None` (quietly) when that provider's own table was invalid.
fn provider_kind(check: &mut Check, name: &Str, known: &Known) -> Option<ProviderKind> {
    if let Some((_, kind)) = known.iter().find(|(n, _)| n == name.get_ref()) {
        return *kind;
    }
    let names = known.iter().map(|(n, _)| n.as_str());
    let d = check.error(
        name.span(),
        format!("unknown provider `{}`", name.get_ref()),
    );
    if known.is_empty() {
        d.note("no [providers.NAME] tables are defined");
    } else {
        d.note(format!("known providers: {}", backticked(names.clone())));
    }
    if let Some(near) = suggest(name.get_ref(), names) {
        d.help(format!("did you mean `{near}`?"));
    }
    None
}

/// `Ok(None)`: use the model. Only Azure addresses deployments.
fn deployment(
    check: &mut Check,
    raw: &RawPin,
    kind: ProviderKind,
) -> Result<Option<String>, Reported> {
    match &raw.deployment {
        None => Ok(None),
        Some(d) if kind == ProviderKind::Azure => {
            check.non_empty(d, "deployment").map(Some).ok_or(Reported)
        }
        Some(d) => {
            only_for(check, d.span(), "deployment", ProviderKind::Azure, kind);
            Err(Reported)
        }
    }
}

fn upstream(check: &mut Check, raw: &RawPin, kind: ProviderKind) -> Option<Vec<String>> {
    match &raw.upstream {
        None => Some(Vec::new()),
        Some(u) if kind == ProviderKind::OpenRouter => strings(check, u.get_ref(), "upstream"),
        Some(u) => {
            only_for(check, u.span(), "upstream", ProviderKind::OpenRouter, kind);
            None
        }
    }
}

fn only_for(
    check: &mut Check,
    span: std::ops::Range<usize>,
    key: &str,
    wanted: ProviderKind,
    kind: ProviderKind,
) {
    check.error(
        span,
        format!("`{key}` only applies to kind `{wanted}`, not `{kind}`"),
    );
}

/// Border inputs the first-token tier keeps per pin (`audit::first_tokens` finds them).
pub(crate) const FIRST_TOKEN_INPUTS: usize = 8;
/// One-token calls per border input per audit when the pin sets no `first_token_samples`.
pub(crate) const DEFAULT_FIRST_TOKEN_SAMPLES: u32 = 32;

/// Samples per probe per audit, at most: the same bound as `lock --samples`. Far above any
/// useful baseline (30 per probe is a good start), far below a plan that would exhaust the machine.
pub(crate) const MAX_SAMPLES: u32 = 10_000;

/// A per-audit sample count's key, what it counts per, and the hint when it is too large.
struct SampleKey {
    key: &'static str,
    per: &'static str,
    help: &'static str,
}

const PROBE_SAMPLES: SampleKey = SampleKey {
    key: "samples",
    per: "per probe",
    help: "30 samples per probe detect most behaviour changes (a lock asks 4 × as many); `modelpin lock` warns when a baseline is too small",
};

const FIRST_TOKEN_SAMPLES: SampleKey = SampleKey {
    key: "first_token_samples",
    per: "per border input",
    help: "on a real model, the default 32 per border input caught a requantization without logprobs, and 16 a lowered temperature with them (BENCHMARKS.md, \"Detection on a real model\")",
};

fn within_max_samples(
    check: &mut Check,
    value: &toml::Spanned<u32>,
    n: u32,
    what: &SampleKey,
) -> Option<u32> {
    if n <= MAX_SAMPLES {
        return Some(n);
    }
    check
        .error(
            value.span(),
            format!(
                "`{}` is {n}; at most {MAX_SAMPLES} {} per audit",
                what.key, what.per
            ),
        )
        .help(what.help);
    None
}

/// `Ok(None)`: default to `[model]`.
fn accept(check: &mut Check, raw: &RawPin) -> Result<Option<Vec<String>>, Reported> {
    let Some(accept) = &raw.accept else {
        return Ok(None);
    };
    if accept.get_ref().is_empty() {
        check
            .error(
                accept.span(),
                "`accept` is empty, so no served model would count",
            )
            .help("leave it out to accept `model` (and what `modelpin lock` records)");
        return Err(Reported);
    }
    strings(check, accept.get_ref(), "accept")
        .map(Some)
        .ok_or(Reported)
}

/// Most entries in `accept` or `upstream`: a pin is served under a handful of names, and every
/// entry is compared with every served ID of every audit.
pub(crate) const MAX_LIST_ENTRIES: usize = 1000;

fn strings(check: &mut Check, values: &[Str], what: &str) -> Option<Vec<String>> {
    if let Some(first_over) = values.get(MAX_LIST_ENTRIES) {
        check
            .error(
                first_over.span(),
                format!(
                    "`{what}` has {} entries, more than {MAX_LIST_ENTRIES}",
                    values.len()
                ),
            )
            .help("list the names the model is really served under; a pin's `accept` is a few IDs");
        return None;
    }
    let checked: Vec<Option<String>> = values.iter().map(|v| check.non_empty(v, what)).collect();
    checked.into_iter().collect()
}

/// Probe ids from every pattern, sorted and deduplicated.
fn probe_ids(check: &mut Check, raw: &RawPin, probes: &mut Probes) -> Vec<String> {
    let mut ids: Vec<String> = raw
        .probes
        .iter()
        .flatten()
        .flat_map(|pattern| probes.resolve(check, pattern))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn price(check: &mut Check, raw: &RawPrice) -> Option<Price> {
    let input = check.non_negative(&raw.input, "price.input");
    let output = check.non_negative(&raw.output, "price.output");
    let cached_input = match &raw.cached_input {
        Some(c) => check.non_negative(c, "price.cached_input"),
        None => input,
    };
    Some(Price {
        input: input?,
        output: output?,
        cached_input: cached_input?,
    })
}

fn retires_on(check: &mut Check, value: &Spanned<Datetime>) -> Option<NaiveDate> {
    let dt = value.get_ref();
    let date = match (dt.date, dt.time, dt.offset) {
        (Some(d), None, None) => {
            NaiveDate::from_ymd_opt(i32::from(d.year), u32::from(d.month), u32::from(d.day))
        }
        _ => None,
    };
    if date.is_none() {
        check
            .error(value.span(), "`retires_on` must be a date")
            .help("write a bare TOML date, like `retires_on = 2026-10-20`");
    }
    date
}

fn alert_names(check: &mut Check, raw: &[Str], channels: &[String]) -> Option<Vec<String>> {
    let mut ok = true;
    for name in raw {
        if channels.contains(name.get_ref()) {
            continue;
        }
        ok = false;
        let d = check.error(
            name.span(),
            format!("unknown alert channel `{}`", name.get_ref()),
        );
        if channels.is_empty() {
            d.note("no [alerts.NAME] tables are defined");
        } else {
            d.note(format!(
                "known channels: {}",
                backticked(channels.iter().map(String::as_str))
            ));
        }
        if let Some(near) = suggest(name.get_ref(), channels.iter().map(String::as_str)) {
            d.help(format!("did you mean `{near}`?"));
        }
    }
    ok.then(|| raw.iter().map(|n| n.get_ref().clone()).collect())
}
