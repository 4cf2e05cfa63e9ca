//! What providers themselves say about retirement, on the wire.
//!
//! Headers on ordinary responses (`Deprecation`, `Sunset`, Mistral's
//! `x-model-deprecation-timestamp`, OpenAI's legacy body `warning`) and the models endpoints
//! (OpenAI `shutdown_date`, Mistral `deprecation`, OpenRouter `expiration_date`) are the freshest
//! lifecycle data there is, and the only data that comes from the provider itself. Each parser
//! is a pure function over the raw value; anything it does not understand is `None` (or a
//! [`SignalError`] for a body that is not the expected document), never a guess and never a panic.
//!
//! `Deprecation` (RFC 9745) dates the *deprecation*, not the shutdown: it becomes an announced
//! fact with no retirement date. `Sunset` (RFC 8594) and Mistral's timestamp are shutdown dates.

mod models_list;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::lifecycle::model_id::home_provider;
use crate::lifecycle::resolve::PinRef;
use crate::lifecycle::{Fact, Origin, Retirement, canonical_provider, dates};
use crate::provider::LifecycleHint;

pub use models_list::{mistral_models, openai_models, openrouter_models};

/// Which wire signal a [`Signal`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// `Deprecation` response header (RFC 9745 `@<unix>`, or the draft's `true` / HTTP-date).
    DeprecationHeader,
    /// `Sunset` response header (RFC 8594 HTTP-date).
    SunsetHeader,
    /// Mistral's `x-model-deprecation-timestamp` response header.
    MistralDeprecationHeader,
    /// OpenAI's legacy top-level `warning` in a 200 body.
    BodyWarning,
    /// OpenAI `GET /v1/models` (or `/v1/models/{id}`) `shutdown_date`.
    OpenAiShutdownDate,
    /// Mistral `GET /v1/models` `deprecation` (+ `deprecation_replacement_model`, `aliases`).
    MistralModelDeprecation,
    /// OpenRouter `GET /api/v1/models` `expiration_date` (+ `canonical_slug`).
    OpenRouterExpiration,
}

/// One provider statement about retirement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    pub kind: SignalKind,
    /// The IDs it is about; empty for headers, which are about the call's own model.
    pub models: Vec<String>,
    /// When the model was (or will be) deprecated, if the signal says.
    pub announced: Option<NaiveDate>,
    pub retirement: Retirement,
    pub replacement: Option<String>,
    /// What was seen, e.g. `Sunset: Wed, 11 Nov 2026 23:59:59 GMT`.
    pub source: String,
}

impl Signal {
    fn header(kind: SignalKind, name: &str, value: &str, retirement: Retirement) -> Signal {
        Signal {
            kind,
            models: Vec::new(),
            announced: None,
            retirement,
            replacement: None,
            source: format!("{name}: {}", value.trim()),
        }
    }

    /// The signal as a fact about `pin`'s provider: header signals are about `pin.model`;
    /// models-endpoint signals keep the IDs they name. `seen` is when it was observed.
    #[must_use]
    pub fn fact_for(&self, pin: &PinRef<'_>, seen: DateTime<Utc>) -> Fact {
        let models = if self.models.is_empty() {
            vec![pin.model.to_owned()]
        } else {
            self.models.clone()
        };
        Fact {
            id: None,
            origin: Origin::Provider,
            provider: home_provider(pin)
                .map_or_else(|| canonical_provider(pin.provider), str::to_owned),
            models,
            announced: self.announced,
            retirement: self.retirement,
            replacement: self.replacement.iter().cloned().collect(),
            source: self.source.clone(),
            captured: Some(seen.date_naive()),
            supersedes: Vec::new(),
            note: None,
            price: None,
            primary: None,
        }
    }
}

/// `Deprecation: @1688169599` (RFC 9745), `true` (the earlier draft), or an HTTP-date.
#[must_use]
pub fn deprecation_header(value: &str) -> Option<Signal> {
    let trimmed = value.trim();
    let announced = if trimmed.eq_ignore_ascii_case("true") {
        None
    } else if let Some(seconds) = trimmed.strip_prefix('@') {
        Some(unix_seconds(seconds)?.date_naive())
    } else {
        Some(dates::http(trimmed)?.date_naive())
    };
    let mut signal = Signal::header(
        SignalKind::DeprecationHeader,
        "Deprecation",
        value,
        Retirement::Announced,
    );
    signal.announced = announced;
    Some(signal)
}

/// An RFC 9651 sf-integer of seconds: optional `-`, 1 to 15 digits.
fn unix_seconds(digits: &str) -> Option<DateTime<Utc>> {
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || unsigned.len() > 15 || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    DateTime::from_timestamp(digits.parse().ok()?, 0)
}

/// `Sunset: Wed, 11 Nov 2026 23:59:59 GMT` (RFC 8594); an ISO date is tolerated.
#[must_use]
pub fn sunset_header(value: &str) -> Option<Signal> {
    let retirement = dates::http(value)
        .map(Retirement::At)
        .or_else(|| dates::iso(value))?;
    Some(Signal::header(
        SignalKind::SunsetHeader,
        "Sunset",
        value,
        retirement,
    ))
}

/// Mistral's `x-model-deprecation-timestamp: 2026-01-31T12:00:00Z` (ISO 8601).
#[must_use]
pub fn mistral_deprecation_header(value: &str) -> Option<Signal> {
    let retirement = dates::iso(value).or_else(|| dates::http(value).map(Retirement::At))?;
    Some(Signal::header(
        SignalKind::MistralDeprecationHeader,
        "x-model-deprecation-timestamp",
        value,
        retirement,
    ))
}

/// OpenAI's legacy body warning: "This model version is deprecated. Migrate before January 4,
/// 2024 …". A warning that does not speak of deprecation is not a lifecycle signal.
#[must_use]
pub fn body_warning(text: &str) -> Option<Signal> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("deprecat") {
        return None;
    }
    let date = lower.find("before ").and_then(|at| {
        let rest = &text[at + "before ".len()..];
        let end = rest
            .find(" to ")
            .or_else(|| rest.find('.'))
            .unwrap_or(rest.len());
        dates::english(&rest[..end])
    });
    let mut signal = Signal::header(
        SignalKind::BodyWarning,
        "warning",
        text,
        date.map_or(Retirement::Announced, Retirement::On),
    );
    signal.source = format!("body warning: {}", text.trim());
    Some(signal)
}

/// A hint the provider adapters collected, read as a signal.
#[must_use]
pub fn from_hint(hint: &LifecycleHint) -> Option<Signal> {
    match hint {
        LifecycleHint::Sunset(value) => sunset_header(value),
        LifecycleHint::Deprecation(value) => deprecation_header(value),
        LifecycleHint::ModelDeprecationTimestamp(value) => mistral_deprecation_header(value),
        LifecycleHint::BodyWarning(text) => body_warning(text),
    }
}

#[cfg(test)]
mod tests;
