//! Models endpoints that carry retirement dates: OpenAI, Mistral, OpenRouter.
//!
//! Each reads a list (`{"data": [...]}`), a bare array, or one model object (`GET
//! /v1/models/{id}`) and returns a signal per model that has a date; models without one, and
//! entries whose date does not parse, are left out.

use serde_json::Value;

use crate::lifecycle::signals::{Signal, SignalKind};
use crate::lifecycle::{Retirement, dates};

/// A models-endpoint body that is not a models document.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error("the models response is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the models response has no model entries")]
    Shape,
}

/// OpenAI `GET /v1/models` or `/v1/models/{id}`: `shutdown_date` is `YYYY-MM-DD` or `null`.
pub fn openai_models(body: &[u8]) -> Result<Vec<Signal>, SignalError> {
    models(body, |entry| {
        Some(signal(
            SignalKind::OpenAiShutdownDate,
            vec![id(entry, "id")?],
            date(entry, "shutdown_date")?,
            "OpenAI GET /v1/models shutdown_date",
        ))
    })
}

/// Mistral `GET /v1/models`: `deprecation` (ISO 8601), `deprecation_replacement_model`,
/// `aliases[]` (the aliases retire with the model).
pub fn mistral_models(body: &[u8]) -> Result<Vec<Signal>, SignalError> {
    models(body, |entry| {
        let mut ids = vec![id(entry, "id")?];
        let aliases = entry.get("aliases").and_then(Value::as_array);
        ids.extend(
            aliases
                .into_iter()
                .flatten()
                .filter_map(|a| clean_id(a.as_str()?)),
        );
        let mut signal = signal(
            SignalKind::MistralModelDeprecation,
            ids,
            date(entry, "deprecation")?,
            "Mistral GET /v1/models deprecation",
        );
        signal.replacement = entry
            .get("deprecation_replacement_model")
            .and_then(Value::as_str)
            .and_then(clean_id);
        Some(signal)
    })
}

/// OpenRouter `GET /api/v1/models`: `expiration_date`; the `canonical_slug` (the ID responses
/// report) expires with the slug.
pub fn openrouter_models(body: &[u8]) -> Result<Vec<Signal>, SignalError> {
    models(body, |entry| {
        let mut ids = vec![id(entry, "id")?];
        if let Some(slug) = id(entry, "canonical_slug").filter(|slug| !ids.contains(slug)) {
            ids.push(slug);
        }
        Some(signal(
            SignalKind::OpenRouterExpiration,
            ids,
            date(entry, "expiration_date")?,
            "OpenRouter GET /api/v1/models expiration_date",
        ))
    })
}

fn models(
    body: &[u8],
    read: impl Fn(&Value) -> Option<Signal>,
) -> Result<Vec<Signal>, SignalError> {
    let value: Value = serde_json::from_slice(body)?;
    let entries: Vec<&Value> = match &value {
        Value::Array(list) => list.iter().collect(),
        Value::Object(map) => match map.get("data") {
            Some(Value::Array(list)) => list.iter().collect(),
            _ if map.contains_key("id") => vec![&value],
            _ => return Err(SignalError::Shape),
        },
        _ => return Err(SignalError::Shape),
    };
    Ok(entries.into_iter().filter_map(read).collect())
}

fn signal(kind: SignalKind, models: Vec<String>, retirement: Retirement, source: &str) -> Signal {
    Signal {
        kind,
        models,
        announced: None,
        retirement,
        replacement: None,
        source: source.to_owned(),
    }
}

fn id(entry: &Value, key: &str) -> Option<String> {
    clean_id(entry.get(key)?.as_str()?)
}

fn clean_id(raw: &str) -> Option<String> {
    let id = raw.trim();
    (!id.is_empty() && id.len() <= 256 && !id.contains(char::is_whitespace)).then(|| id.to_owned())
}

fn date(entry: &Value, key: &str) -> Option<Retirement> {
    dates::iso(entry.get(key)?.as_str()?)
}
