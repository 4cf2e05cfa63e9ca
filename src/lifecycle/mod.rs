//! Lifecycle data: when a pinned model ID is retired, who says so, and what replaces it.
//!
//! A retired ID that still answers is presumed rerouted, so the auditor needs retirement dates it
//! can trust and cite. No single source has them: provider pages change between captures, feeds
//! (deprecations.info, LiteLLM) lag or disagree, and only some providers say anything on the wire
//! (OpenAI `shutdown_date`, Mistral `deprecation`, OpenRouter `expiration_date`, `Sunset` headers).
//! This module turns each of them into the same [`Fact`] and lets [`resolve()`] pick one date while
//! keeping every source as evidence. Everything here is pure: callers fetch the bytes, pass the
//! clock in, and get values back.

pub(crate) mod dates;
pub mod feeds;
mod model_id;
pub mod resolve;
pub mod signals;
mod table;

use std::sync::OnceLock;

use chrono::{DateTime, NaiveDate, Timelike, Utc};
use serde::Serialize;

pub(crate) use model_id::{core_of, is_dated, undated};
pub use resolve::{Lifecycle, PinRef, Stage, resolve, retirement_message};
pub use signals::Signal;

/// What one source says about one provider's model IDs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    /// Row name in modelpin's own TOML format; what other rows' `supersedes` refer to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub origin: Origin,
    /// Lowercase provider name: a modelpin kind (`openai`, `anthropic`, `gemini`, `azure`,
    /// `openrouter`) or the API it applies to (`vertex`, `deepseek`, `mistral`, `bedrock`, ...).
    pub provider: String,
    /// Model IDs and aliases as the provider spells them; a trailing `*` is a prefix.
    pub models: Vec<String>,
    pub announced: Option<NaiveDate>,
    pub retirement: Retirement,
    /// Successor IDs as the source gives them; empty when it names none.
    pub replacement: Vec<String>,
    /// URL or citation.
    pub source: String,
    /// When the source was captured or checked.
    pub captured: Option<NaiveDate>,
    /// Ids of rows this one replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Per-token list price, when the source carries one (LiteLLM, models.dev).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<TokenPrice>,
    /// The provider's own page this row was checked against, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<Primary>,
}

/// The provider's own page (deprecations page, changelog, lifecycle doc) a row agrees with, and
/// the day that page was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Primary {
    pub url: String,
    pub read: NaiveDate,
}

/// How far a source can be trusted to end a pin: only the provider's own word (its page, its
/// live answer) or the project's own (`retires_on`) may call a model retired at error level; a
/// third party's table that cites the provider is a warning at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceClass {
    Primary,
    Secondary,
}

impl Fact {
    #[must_use]
    pub fn class(&self) -> SourceClass {
        match self.origin {
            Origin::Provider | Origin::Pin => SourceClass::Primary,
            Origin::Builtin | Origin::Feed if self.primary.is_some() => SourceClass::Primary,
            Origin::Builtin | Origin::Feed => SourceClass::Secondary,
        }
    }
}

/// Where a fact came from. The pin's `retires_on` wins outright and a provider's own live answer
/// outranks any table; built-in rows and feeds rank alike (see [`resolve`](mod@resolve)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `builtin.toml`, compiled in.
    Builtin,
    /// A deprecation feed the user configured.
    Feed,
    /// A header or models-endpoint answer from the provider itself.
    Provider,
    /// The pin's own `retires_on`.
    Pin,
}

/// When a model stops being served, as precisely as the source says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Retirement {
    /// Shuts down on this day (taken as 00:00 UTC: the first moment it may fail).
    On(NaiveDate),
    /// Shuts down at this instant.
    At(DateTime<Utc>),
    /// Announced or deprecated, no date given.
    Announced,
    /// No longer served as itself, date unknown.
    Gone,
}

impl Retirement {
    /// The moment the model may stop answering, when the source gives one.
    #[must_use]
    pub fn instant(self) -> Option<DateTime<Utc>> {
        match self {
            Retirement::On(date) => Some(date.and_time(chrono::NaiveTime::MIN).and_utc()),
            Retirement::At(at) => Some(at),
            Retirement::Announced | Retirement::Gone => None,
        }
    }

    /// The UTC calendar day of the retirement, when known.
    #[must_use]
    pub fn date(self) -> Option<NaiveDate> {
        self.instant().map(|at| at.date_naive())
    }
}

impl std::fmt::Display for Retirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Retirement::On(date) => write!(f, "{date}"),
            Retirement::At(at) if at.second() == 0 => {
                write!(f, "{}", at.format("%Y-%m-%d %H:%M UTC"))
            }
            Retirement::At(at) => write!(f, "{}", at.format("%Y-%m-%d %H:%M:%S UTC")),
            Retirement::Announced => f.write_str("date not announced"),
            Retirement::Gone => f.write_str("already retired, date unknown"),
        }
    }
}

/// USD per token, as LiteLLM lists it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TokenPrice {
    pub input: Option<f64>,
    pub output: Option<f64>,
}

/// The built-in table, parsed once.
#[must_use]
pub fn builtin() -> &'static [Fact] {
    static TABLE: OnceLock<Vec<Fact>> = OnceLock::new();
    TABLE.get_or_init(|| {
        table::parse(BUILTIN_TOML, Origin::Builtin).expect("builtin.toml parses (tested)")
    })
}

const BUILTIN_TOML: &str = include_str!("builtin.toml");

/// Providers modelpin has a kind for; every other name is reached as `openai-compatible`.
pub(crate) const KIND_PROVIDERS: [&str; 5] =
    ["openai", "anthropic", "gemini", "azure", "openrouter"];

/// One spelling per provider, whatever a feed calls it (`Google Vertex`, `vertex_ai-language-models`,
/// `AWS Bedrock`, `bedrock_converse`, `together_ai`, ...).
#[must_use]
pub fn canonical_provider(raw: &str) -> String {
    let lower = raw.trim().to_ascii_lowercase();
    let contains = |needle: &str| lower.contains(needle);
    let name = if contains("vertex") {
        "vertex"
    } else if contains("bedrock") {
        "bedrock"
    } else if contains("azure") {
        "azure"
    } else if contains("openrouter") {
        "openrouter"
    } else if contains("openai") {
        "openai"
    } else if contains("google") || contains("gemini") {
        "gemini"
    } else if contains("together") {
        "together"
    } else if contains("mistral") || lower == "codestral" {
        "mistral"
    } else if lower == "x-ai" || lower == "xai" {
        "xai"
    } else {
        return lower.replace([' ', '_'], "-");
    };
    name.to_owned()
}

#[cfg(test)]
pub(crate) use crate::fixtures::read as fixture;

#[cfg(test)]
mod coverage_tests;
#[cfg(test)]
mod tests;
